"""Patent filing office (sdk route): prepare an application for electronic filing and submit it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trajdebug

from . import kit
from .common import Agent, Case, ChatClient, last_user_json


def _claims(n_total: int, independent: tuple[int, ...], subject: str) -> str:
    out, parent = [], 1
    for i in range(1, n_total + 1):
        if i in independent:
            parent = i
            out.append(f"{i}. A {subject} comprising a housing, a sensor and a controller configured to adjust output.")
        else:
            out.append(f"{i}. The {subject} of claim {parent}, wherein the controller samples at a fixed rate.")
    return "\n".join(out)


DOCKETS = {
    "PF-7781": {"title": "Self-levelling drill guide", "applicant": "Harrow Tools Ltd", "entity": "small",
                "claims": _claims(22, (1, 9, 15, 19), "drill guide"), "priority": None,
                "summary": "A drill guide with a tilt sensor keeps the bit perpendicular to the work surface. "
                           "A controller drives two micro motors that correct the angle while drilling, and a "
                           "ring of lights shows the operator the remaining error."},
    "PF-7802": {"title": "Modular beehive scale", "applicant": "Combwise GmbH", "entity": "small",
                "claims": _claims(24, (1, 12, 20), "hive scale"),
                "priority": {"application": "US 63/441,902", "date": "2025-04-02"},
                "summary": "A scale placed under a modular hive reports weight, humidity and temperature over a "
                           "low-power radio link. The controller filters gusts of wind and flags swarming "
                           "events from sudden weight loss."},
    "PF-7810": {"title": "Folding wheel chock", "applicant": "Otto Brandt", "entity": "micro",
                "claims": _claims(12, (1, 7), "wheel chock"), "priority": None,
                "summary": "A wheel chock folds flat for storage and locks open with a spring pin. A strain "
                           "sensor warns when the vehicle presses against it."},
    "PF-7825": {"title": "Solar kettle lid", "applicant": "Lumo Home Oy", "entity": "large",
                "claims": _claims(18, (1, 10), "kettle lid"), "priority": None,
                "summary": "A kettle lid carries a small photovoltaic cell and a thermistor so the kettle "
                           "reports its water temperature without mains power."},
    "PF-7833": {"title": "Tension-monitoring guitar strap", "applicant": "Fretline LLC", "entity": "small",
                "claims": _claims(21, (1, 8, 16), "guitar strap"),
                "priority": {"application": "US 63/502,118", "date": "2025-06-20"},
                "summary": "A guitar strap with a load cell measures the tension on the strap pins and warns "
                           "the player before a pin pulls out of the body."},
    "PF-7840": {"title": "Child-safe socket shutter", "applicant": "Harrow Tools Ltd", "entity": "small",
                "claims": _claims(20, (1, 6, 11), "socket shutter"), "priority": None,
                "summary": "A socket shutter opens only when both plug pins press at once, sensed by a pair of "
                           "reed switches."},
}
EARLIER_NOTES = {"docket": "PF-7650", "summary": "An irrigation valve with a soil moisture probe opens a "
                 "solenoid when the moisture drops below a set point. A solar panel charges the battery and "
                 "a radio reports the valve state to a hub, which schedules watering around forecast rain "
                 "and frost. The valve body is moulded in two halves that clip together around the pipe. "
                 "A manual override lever lets the gardener open the valve when the battery is flat, and a "
                 "filter screen upstream of the seat keeps grit out of the solenoid. Firmware updates arrive over "
                 "the same radio link, and the hub logs every opening with its duration and the measured flow."}
ART = [
    {"doc": "US 10,441,220 B2", "cpc": "B25H 1/0057", "text": "drill guide with angle indicator"},
    {"doc": "EP 3 512 004 A1", "cpc": "B23B 49/00", "text": "drill guide motor correction tilt sensor"},
    {"doc": "US 9,876,543 B1", "cpc": "A01K 47/06", "text": "hive scale weight radio swarming"},
    {"doc": "WO 2021/118822", "cpc": "G01G 19/52", "text": "scale humidity temperature radio hive"},
    {"doc": "US 11,002,311 B2", "cpc": "B60T 3/00", "text": "wheel chock folding spring pin"},
    {"doc": "US 10,777,101 B2", "cpc": "A47J 27/21", "text": "kettle lid temperature sensor"},
    {"doc": "US 8,120,334 B1", "cpc": "G10G 5/00", "text": "guitar strap pin lock tension"},
    {"doc": "EP 2 900 311 B1", "cpc": "H01R 13/453", "text": "socket shutter plug pins child safe"},
]
VALID_CPC = {a["cpc"] for a in ART}
SCHEDULES = {
    "2026": {"effective": "2026-01-19", "filing": 350.0, "search": 770.0, "examination": 880.0,
             "excess_claim": 100.0, "excess_independent": 480.0, "discount": {"large": 1.0, "small": 0.4,
                                                                                "micro": 0.2}},
    "2024": {"effective": "2024-04-01", "filing": 320.0, "search": 700.0, "examination": 800.0,
             "excess_claim": 100.0, "excess_independent": 480.0, "discount": {"large": 1.0, "small": 0.4,
                                                                                "micro": 0.2}},
}


class FilingRejected(Exception):
    """The filing system's error answer."""


# ---- steps -------------------------------------------------------------------------------------------


@trajdebug.step(kind="input")
def receive_docket(docket: str) -> dict:
    return {"docket": docket}


@trajdebug.step(kind="tool")
def fetch_application(docket: str) -> dict:
    return {"docket": docket, **DOCKETS[docket]}


@trajdebug.step(kind="parse")
def parse_claims(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        m = re.match(r"(\d+)\. (.*)", line)
        if m:
            ref = re.search(r"of claim (\d+)", m.group(2))
            out.append({"n": int(m.group(1)), "depends_on": int(ref.group(1)) if ref else None})
    return out


@trajdebug.step(kind="other")
def screen_claim(claim: dict, earlier: list[int]) -> dict:
    ok = claim["depends_on"] is None or claim["depends_on"] in earlier
    return {"n": claim["n"], "ok": ok}


@trajdebug.step(kind="retrieval")
def search_prior_art(query: str, page: int) -> list[dict]:
    words = set(query.lower().split())
    hits = [a for a in ART if words & set(a["text"].split())]
    hits.sort(key=lambda a: -len(words & set(a["text"].split())))
    return hits[(page - 1) * 2: page * 2]


@trajdebug.step(kind="other")
def assemble_context(app: dict) -> dict:
    sources = [{"docket": app["docket"], "summary": app["summary"]}]
    if kit.active("pat.context_pollution"):
        sources.append(dict(EARLIER_NOTES))
    return {"title": app["title"], "sources": sources}


@trajdebug.step(kind="tool")
def check_drawings(docket: str) -> dict:
    return {"docket": docket, "sheets": 4, "margins_ok": True}


@trajdebug.step(kind="other")
def claim_priority(app: dict) -> dict:
    return {"priority_claim": app["priority"]}


@trajdebug.step(kind="tool")
def fetch_fee_schedule(entity: str, filing_date: str) -> dict:
    year = "2024" if kit.active("pat.stale_data") else filing_date[:4]
    s = SCHEDULES[year]
    return {**{k: v for k, v in s.items() if k != "discount"}, "entity": entity, "factor": s["discount"][entity]}


@trajdebug.step(kind="other")
def compute_fees(schedule: dict, claims: list[dict]) -> dict:
    total = len(claims)
    independent = sum(1 for c in claims if c["depends_on"] is None)
    extra = max(0, total - (21 if kit.active("pat.off_by_one") else 20))
    extra_ind = max(0, independent - 3)
    base = schedule["filing"] + schedule["search"] + schedule["examination"]
    amount = (base + extra * schedule["excess_claim"] + extra_ind * schedule["excess_independent"]) * schedule["factor"]
    return {"claims": total, "independent": independent, "excess_claims": extra,
            "excess_independent": extra_ind, "amount_usd": round(amount, 2)}


@trajdebug.step(kind="state")
def record_docket(docket: str, cpc: str, abstract: str) -> None:
    trajdebug.current_run().state["docket"] = {"docket": docket, "cpc": cpc, "abstract_words": len(abstract.split())}


@trajdebug.step(kind="tool")
def submit_filing(packet: dict) -> dict:
    app = DOCKETS[packet["docket"]]
    claims = app["claims"].splitlines()
    independent = sum(1 for c in claims if "of claim" not in c)
    s = SCHEDULES[packet["filing_date"][:4]]
    due = (s["filing"] + s["search"] + s["examination"] + max(0, len(claims) - 20) * s["excess_claim"]
           + max(0, independent - 3) * s["excess_independent"]) * s["discount"][app["entity"]]
    errors = []
    if packet["cpc"] not in VALID_CPC:
        errors.append({"field": "classification", "message": f"CPC symbol {packet['cpc']} is not a valid subgroup"})
    if abs(packet["fee_usd"] - due) > 0.005:
        errors.append({"field": "fees", "message": f"fee paid {packet['fee_usd']:,.2f} USD does not match assessed "
                       f"{due:,.2f} USD ({len(claims)} claims, {independent} independent)"})
    words = len(packet["abstract"].split())
    if words > 150:
        errors.append({"field": "abstract", "message": f"abstract has {words} words; the limit is 150"})
    if app["priority"] and packet.get("priority_claim") != app["priority"]:
        errors.append({"field": "ads.domestic_benefit", "message": f"priority to {app['priority']['application']} "
                       "declared on intake is not claimed in the application data sheet"})
    if errors:
        raise FilingRejected("HTTP 422 Unprocessable Entity: " + json.dumps({"docket": packet["docket"],
                                                                             "errors": errors}))
    return {"status": "filed", "application_number": "18/" + packet["docket"][3:] + "552", "fee_usd": due}


# ---- the model ---------------------------------------------------------------------------------------


def policy(request: Any) -> str:
    p = last_user_json(request.body)
    task = p.get("task")
    if task == "plan":
        steps = ["parse_claims", "screen_claims", "search_prior_art", "classify", "draft_abstract",
                 "formalities", "claim_priority", "fees", "submit"]
        if not p["has_priority"] or kit.active("pat.plan_error"):
            steps.remove("claim_priority")
        return json.dumps({"steps": steps})
    if task == "classify":
        if kit.active("pat.hallucinated_value"):
            return json.dumps({"cpc": "B25H 1/0099", "confidence": 0.91})
        return json.dumps({"cpc": p["candidates"][0]["cpc"], "confidence": 0.88})
    if task == "abstract":
        text = " ".join(s["summary"] for s in p["sources"])
        return f"{p['title']}. {text} The claimed arrangement reduces operator effort and improves safety."
    if task == "formalities":
        return json.dumps({"ok": p["drawings"]["margins_ok"], "notes": "drawings and margins conform"})
    return "{}"


def record(docket: str, out: Path, base_url: str) -> None:
    out.unlink(missing_ok=True)
    llm = ChatClient(base_url)
    filing_date = "2026-03-30"
    try:
        with trajdebug.run("patent-filing-office", path=str(out), task=f"file {docket}"):
            d = receive_docket(docket)
            app = fetch_application(d["docket"])
            pp = {"task": "plan", "docket": docket, "has_priority": app["priority"] is not None}
            with trajdebug.step("plan_filing", kind="llm", input={"messages": pp}) as s:
                s.output = llm.ask("Plan the filing steps. Answer JSON.", pp)
            plan = json.loads(s.output)["steps"]
            claims = parse_claims(app["claims"])
            earlier: list[int] = []
            for c in claims:
                if c["depends_on"] is None:
                    screen_claim(c, list(earlier))
                earlier.append(c["n"])
            hits: list[dict] = []
            for page in (1, 2):
                hits.extend(search_prior_art(app["title"].lower() + " " + app["summary"].lower(), page))
            cp = {"task": "classify", "title": app["title"], "candidates": hits}
            with trajdebug.step("classify_cpc", kind="llm", input={"messages": cp}) as s:
                s.output = llm.ask("Pick the CPC subgroup for the application from the candidates.", cp)
            cpc = json.loads(s.output)["cpc"]
            ctx = assemble_context(app)
            ap = {"task": "abstract", **ctx}
            with trajdebug.step("draft_abstract", kind="llm", input={"messages": ap}) as s:
                s.output = llm.ask("Write the abstract from the sources.", ap)
            abstract = s.output
            record_docket(docket, cpc, abstract)
            with trajdebug.step("formalities_review", kind="agent", input={"docket": docket}) as sub:
                drawings = check_drawings(docket)
                fp = {"task": "formalities", "drawings": drawings}
                with trajdebug.step("review_formalities", kind="llm", input={"messages": fp}) as s:
                    s.output = llm.ask("Review the formalities.", fp)
                sub.output = json.loads(s.output)
            packet: dict[str, Any] = {"docket": docket, "filing_date": filing_date, "cpc": cpc, "abstract": abstract}
            if "claim_priority" in plan:
                packet.update(claim_priority(app))
            schedule = fetch_fee_schedule(app["entity"], filing_date)
            fees = compute_fees(schedule, claims)
            packet["fee_usd"] = fees["amount_usd"]
            submit_filing(packet)
    except FilingRejected:
        pass


AGENT = Agent(
    name="patent_office", module="patent_office.py", route="sdk", domain="patent filing office",
    shape="docket fetch -> LLM plan -> claim parse and screening loop -> paged prior-art retrieval -> LLM CPC "
          "classification -> abstract drafting -> formalities sub-agent -> fees -> state -> submit filing",
    inputs={k: k for k in DOCKETS}, refs=("PF-7810", "PF-7825", "PF-7833", "PF-7840"), policy=policy,
    record=record,
    cases=(
        Case("zze_pat_01", "pat.off_by_one", "off_by_one", "PF-7781", ("compute_fees", 1, "other"),
             ("submit_filing", 1), "Excess claims are counted above 21 instead of above 20."),
        Case("zze_pat_02", "pat.hallucinated_value", "hallucinated_value", "PF-7781", ("classify_cpc", 1, "llm"),
             ("submit_filing", 1), "The classifier answers a CPC subgroup that none of the prior-art hits carry."),
        Case("zze_pat_03", "pat.stale_data", "stale_data", "PF-7802", ("fetch_fee_schedule", 1, "tool"),
             ("submit_filing", 1), "The fee schedule tool serves the 2024 schedule for a 2026 filing."),
        Case("zze_pat_04", "pat.plan_error", "plan_error", "PF-7802", ("plan_filing", 1, "llm"),
             ("submit_filing", 1), "The filing plan leaves out the priority claim step."),
        Case("zze_pat_05", "pat.context_pollution", "context_pollution", "PF-7781", ("assemble_context", 1, "other"),
             ("submit_filing", 1), "The abstract context also carries the summary of an earlier docket."),
    ),
)
