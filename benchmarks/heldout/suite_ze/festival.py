"""Film festival submissions desk (OpenAI Agents SDK): triage hands off to a programmer, who checks screener, rules and rights, then submits."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents import Agent, RunContextWrapper, function_tool
from trajdebug.testing import Reply, tool_call

from .common import Case
from .kit import active
from .oa_common import history, model, run_recorded

NAME = "festival-submissions"
ROUTE = "openai_agents"
DOMAIN = "film festival submissions"
SHAPE = "triage agent -> hand-off to shorts/features programmer -> screener, rules, rights sub-agent (as tool), memory note, fee -> submit_entry"

SUBMISSIONS = {
    "saltmarsh": "Submission: film F-7741 'Low Water', 38 min, produced by Kestrel Films, distributed by Northlight Distribution, sent 2026-11-20.",
    "orbit": "Submission: film F-8120 'Quiet Orbit', 96 min, produced by Hollow Pine Pictures, distributed by Meridian Sales, sent 2026-11-02.",
    "ember": "Submission: film F-6605 'Ember Road', 14 min, produced by Kestrel Films, distributed by Kestrel Films, sent 2026-10-15.",
    "tide": "Submission: film F-9012 'Tide Clock', 88 min, produced by Bluefin Studio, distributed by Meridian Sales, sent 2026-11-28.",
    "paper": "Submission: film F-5530 'Paper Lanterns', 22 min, produced by Moth & Lamp, distributed by Northlight Distribution, sent 2026-11-05.",
    "atlas": "Submission: film F-4418 'Atlas of Rain', 104 min, produced by Hollow Pine Pictures, distributed by Hollow Pine Pictures, sent 2026-10-30.",
}
SCREENERS = {
    "F-7741": {"runtime_min": 38, "holder": "Kestrel Films", "prior_screenings": ["Tallinn Black Nights 2026"], "credits": ["dir. Aino Kask", "dop. Marek Pold", "ed. Liis Tamm"], "format": "DCP"},
    "F-8120": {"runtime_min": 96, "holder": "Hollow Pine Pictures", "prior_screenings": [], "credits": ["dir. Ruth Amos", "dop. Ben Ode"], "format": "DCP"},
    "F-6605": {"runtime_min": 14, "holder": "Kestrel Films", "prior_screenings": [], "credits": ["dir. Aino Kask"], "format": "ProRes"},
    "F-9012": {"runtime_min": 88, "holder": "Bluefin Studio", "prior_screenings": ["Busan 2026"], "credits": ["dir. Min-ji Park"], "format": "DCP"},
    "F-5530": {"runtime_min": 22, "holder": "Moth & Lamp", "prior_screenings": [], "credits": ["dir. Tom Reyes"], "format": "ProRes"},
    "F-4418": {"runtime_min": 104, "holder": "Hollow Pine Pictures", "prior_screenings": [], "credits": ["dir. Ruth Amos"], "format": "DCP"},
}
RIGHTS = {"Kestrel Films": "Kestrel Films", "Northlight Distribution": "Northlight Distribution", "Hollow Pine Pictures": "Hollow Pine Pictures",
          "Meridian Sales": "Meridian Sales", "Bluefin Studio": "Bluefin Studio", "Moth & Lamp": "Moth & Lamp"}
FEES = {"short": {"early": 25.0, "regular": 40.0}, "feature": {"early": 60.0, "regular": 85.0}}

CASES = [
    Case("ze_festival_1", "fest_route", "wrong_routing", "saltmarsh", ("generation triage_model", 1), ("submit_entry", 1),
         "The triage model hands a 38-minute short to the features programmer, and the entry fails the feature runtime rule."),
    Case("ze_festival_2", "fest_rights", "subagent_wrong_entity", "saltmarsh", ("generation rights_model", 1), ("submit_entry", 1),
         "The rights sub-agent looks up the distributor instead of the producing company, so the entry names a rights holder the screener does not."),
    Case("ze_festival_3", "fest_premiere", "hallucinated_value", "orbit", ("generation programmer_model", 6), ("submit_entry", 1),
         "The programmer model states a world premiere date in the entry that no tool returned, and the entry's premiere check refuses it."),
    Case("ze_festival_4", "fest_cut", "truncated_result", "saltmarsh", ("fetch_screener", 1), ("submit_entry", 1),
         "The screener service's answer is cut before its prior screenings, so the programmer claims a world premiere for a film already screened."),
    Case("ze_festival_5", "fest_note", "bad_memory_write", "orbit", ("remember_note", 1), ("submit_entry", 1),
         "The memory note files the rights holder under the distributor's name, and the entry reads that note back as the holder."),
]
REF_INPUTS = ["ember", "tide", "paper", "atlas"]


class EntryRejected(RuntimeError):
    pass


@dataclass
class Desk:
    notes: dict = field(default_factory=dict)


def _fields(text: str) -> dict:
    m = re.search(r"film (F-\d+) '([^']+)', (\d+) min, produced by ([^,]+), distributed by ([^,]+), sent (\S+)\.", text)
    assert m
    return {"film": m[1], "title": m[2], "runtime": int(m[3]), "producer": m[4], "distributor": m[5], "sent": m[6]}


def policy(request: Any) -> Any:
    role, user, done = history(request)
    if role == "triage":
        if done:
            return "Handed over."
        f = _fields(user)
        target = "transfer_to_shorts_programmer" if f["runtime"] < 40 else "transfer_to_features_programmer"
        if active("fest_route"):
            target = "transfer_to_features_programmer"
        return Reply(tool_calls=(tool_call(target, {}),))
    if role == "rights":
        if done:
            return json.dumps({"holder": done[-1][2]["holder"], "company": done[-1][1]["company"]})
        company = json.loads(user)["company"] if user.startswith("{") else user.split("company:")[-1].strip()
        if active("fest_rights"):
            company = json.loads(user)["distributor"]
        return Reply(tool_calls=(tool_call("lookup_rights_holder", {"company": company}),))
    if role in ("shorts", "features"):
        f = _fields(user)
        names = [d[0] for d in done]
        category = "short" if role == "shorts" else "feature"
        if "fetch_screener" not in names:
            return Reply(tool_calls=(tool_call("fetch_screener", {"film_id": f["film"]}),))
        if "check_rules" not in names:
            return Reply(tool_calls=(tool_call("check_rules", {"category": category}),))
        if "rights_checker" not in names:
            return Reply(tool_calls=(tool_call("rights_checker", {"input": json.dumps({"company": f["producer"], "distributor": f["distributor"], "film": f["film"]})}),))
        rights = json.loads(next(r for n, _, r in done if n == "rights_checker")) if isinstance(next(r for n, _, r in done if n == "rights_checker"), str) else next(r for n, _, r in done if n == "rights_checker")
        if "remember_note" not in names:
            return Reply(tool_calls=(tool_call("remember_note", {"film_id": f["film"], "key": "rights_holder", "value": rights["holder"], "distributor": f["distributor"]}),))
        if "calc_fee" not in names:
            return Reply(tool_calls=(tool_call("calc_fee", {"category": category, "sent": f["sent"]}),))
        if "submit_entry" not in names:
            scr = next(r for n, _, r in done if n == "fetch_screener")
            if isinstance(scr, str):
                prior = re.findall(r'"prior_screenings": \[([^\]]*)\]', scr)
                runtime = int(re.search(r'"runtime_min": (\d+)', scr)[1])
                prior_list = [x.strip(' "') for x in prior[0].split(",")] if prior and prior[0] else []
            else:
                runtime, prior_list = scr["runtime_min"], scr["prior_screenings"]
            premiere = "world" if not prior_list else "international"
            premiere_date = None
            if active("fest_premiere"):
                premiere_date = "2026-09-14"
            fee = next(r for n, _, r in done if n == "calc_fee")
            return Reply(tool_calls=(tool_call("submit_entry", {"film_id": f["film"], "category": category, "runtime_min": runtime, "premiere": premiere,
                                                                 "premiere_date": premiere_date, "fee_eur": fee["fee_eur"]}),))
        return f"Entry filed for {f['title']}."
    return "ok"


@function_tool
def fetch_screener(film_id: str) -> str:
    """Fetch the screener record of a film (runtime, rights holder, prior screenings, credits)."""
    rec = {"film_id": film_id, "runtime_min": SCREENERS[film_id]["runtime_min"], "format": SCREENERS[film_id]["format"],
           "credits": SCREENERS[film_id]["credits"], "holder": SCREENERS[film_id]["holder"], "prior_screenings": SCREENERS[film_id]["prior_screenings"]}
    text = json.dumps(rec)
    if active("fest_cut"):
        text = text[: text.index('"prior_screenings"')]
    return text


@function_tool
def check_rules(category: str) -> dict:
    """Festival rules for a category."""
    return {"category": category, "runtime_min": 0 if category == "short" else 60, "runtime_max": 40 if category == "short" else 240, "premiere": "regional or higher"}


@function_tool
def lookup_rights_holder(company: str) -> dict:
    """Registry lookup: the rights holder of record for a company."""
    return {"company": company, "holder": RIGHTS[company], "registry": "EU-AV"}


@function_tool
def remember_note(ctx: RunContextWrapper[Desk], film_id: str, key: str, value: str, distributor: str) -> str:
    """Store a note about a film in the desk's memory."""
    stored = value
    if active("fest_note"):
        stored = distributor
    ctx.context.notes[(film_id, key)] = stored
    return f"noted {key} for {film_id}"


@function_tool
def calc_fee(category: str, sent: str) -> dict:
    """Submission fee for a category and sending date."""
    band = "early" if sent <= "2026-11-15" else "regular"
    return {"category": category, "band": band, "fee_eur": FEES[category][band]}


def _submit(ctx: RunContextWrapper[Desk], film_id: str, category: str, runtime_min: int, premiere: str, premiere_date: str | None, fee_eur: float) -> str:
    scr = SCREENERS[film_id]
    holder = ctx.context.notes.get((film_id, "rights_holder"))
    if category == "feature" and runtime_min < 60:
        raise EntryRejected(f"submissions API 422: category 'feature' needs a runtime of 60 min or more, film {film_id} runs {runtime_min} min")
    if holder != scr["holder"]:
        raise EntryRejected(f"submissions API 409: rights holder '{holder}' does not match the screener's holder of record '{scr['holder']}'")
    if premiere == "world" and scr["prior_screenings"]:
        raise EntryRejected(f"submissions API 422: premiere status 'world' conflicts with prior screening at {scr['prior_screenings'][0]}")
    if premiere_date is not None:
        raise EntryRejected(f"submissions API 422: premiere_date {premiere_date} given for a film with no recorded premiere")
    return json.dumps({"entry": f"E-{film_id[2:]}", "category": category, "fee_eur": fee_eur, "status": "received"})


@function_tool(failure_error_function=None)
def submit_entry(ctx: RunContextWrapper[Desk], film_id: str, category: str, runtime_min: int, premiere: str, premiere_date: str | None, fee_eur: float) -> str:
    """Submit the entry to the festival's submissions API."""
    return _submit(ctx, film_id, category, runtime_min, premiere, premiere_date, fee_eur)


def build() -> Agent:
    rights = Agent(name="rights_agent", instructions="ROLE: rights\nFind the rights holder of record for the producing company.", model=model("rights_model"), tools=[lookup_rights_holder])
    tools = [fetch_screener, check_rules, rights.as_tool("rights_checker", "Find the rights holder of record for a film's producing company."), remember_note, calc_fee, submit_entry]
    shorts = Agent(name="shorts programmer", instructions="ROLE: shorts\nYou program the shorts section.", model=model("programmer_model"), tools=tools)
    features = Agent(name="features programmer", instructions="ROLE: features\nYou program the features section.", model=model("programmer_model"), tools=tools)
    return Agent(name="triage", instructions="ROLE: triage\nRoute each submission to the right programmer.", model=model("triage_model"), handoffs=[shorts, features])


def record(main_input: str, path: Path) -> None:
    run_recorded(build(), SUBMISSIONS[main_input], path, NAME, "file a festival submission", context=Desk())
