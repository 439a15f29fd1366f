"""Fishing licence office (OpenAI Agents SDK): reception hands off to a licensing desk, which reads the case notes,
records a plan, asks an eligibility sub-agent (agent as tool), checks the catch return, dates the licence and issues it."""

from __future__ import annotations

import asyncio
import json
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool, set_trace_processors

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .common import Case, agents_model, conversation
from .kit import active

AGENT = "fishing-licence-office"
ROUTE = "openai_agents"
DOMAIN = "fishing licence office"
SHAPE = "reception -> hand-off -> salmon or coarse desk: notes, plan, eligibility sub-agent (as tool, own lookup), catch return, expiry, issue"

ANGLERS = {
    "A-20417": {"name": "Glyn Morgan", "dob": "1958-05-19", "returns": {"2025": "CR-25-88120"}},
    "A-20471": {"name": "Gwen Morgan", "dob": "1990-11-02", "returns": {}},
    "A-31102": {"name": "Ruth Ellis", "dob": "1995-02-14", "returns": {"2025": "CR-25-90344"}},
    "A-31120": {"name": "Rhys Ellis", "dob": "1950-07-30", "returns": {}},
    "A-40055": {"name": "Dan Carver", "dob": "2011-09-09", "returns": {}},
    "A-40550": {"name": "Ola Berg", "dob": "1972-03-03", "returns": {"2025": "CR-25-81002"}},
    "A-51200": {"name": "Ken Sato", "dob": "1959-12-01", "returns": {"2025": "CR-25-70911"}},
    "A-61234": {"name": "Ivy Hart", "dob": "1984-06-21", "returns": {}},
}
INPUTS = {
    "A": {"application": "APP-7710", "angler_id": "A-20417", "species": "salmon", "rods": 2, "start": "2026-03-01", "renewal": True},
    "B": {"application": "APP-7724", "angler_id": "A-31102", "species": "sea trout", "rods": 2, "start": "2026-04-01", "renewal": True},
}
REFS = [
    {"application": "APP-7650", "angler_id": "A-40055", "species": "coarse", "rods": 3, "start": "2026-02-10", "renewal": False},
    {"application": "APP-7655", "angler_id": "A-40550", "species": "salmon", "rods": 1, "start": "2026-03-15", "renewal": True},
    {"application": "APP-7690", "angler_id": "A-51200", "species": "sea trout", "rods": 2, "start": "2026-05-01", "renewal": True},
    {"application": "APP-7702", "angler_id": "A-61234", "species": "coarse", "rods": 2, "start": "2026-01-20", "renewal": False},
]
CASES = [
    Case("zs_fishing_1", "fish.route", "wrong_routing", "A", "generation fake-model", 1, "llm", "issue_licence", 1,
         "Reception hands a salmon application to the coarse desk, which issues a licence that does not cover salmon."),
    Case("zs_fishing_2", "fish.angler", "subagent_wrong_entity", "B", "generation fake-model", 5, "llm", "issue_licence", 1,
         "The eligibility sub-agent looks up an angler with transposed id digits and returns that angler's concession."),
    Case("zs_fishing_3", "fish.expiry", "off_by_one", "A", "compute_expiry", 1, "tool", "issue_licence", 1,
         "The expiry calculation returns the anniversary of the start date rather than the day before it."),
    Case("zs_fishing_4", "fish.notes", "context_pollution", "B", "load_case_notes", 1, "tool", "issue_licence", 1,
         "The case notes bring in the previous caller's notes, and the desk takes its rod count from them."),
    Case("zs_fishing_5", "fish.plan", "plan_error", "A", "generation fake-model", 3, "llm", "issue_licence", 1,
         "The desk's recorded plan leaves out the catch return check that a salmon renewal needs."),
]


def _concession(dob: str, on: str) -> str:
    b, d = date.fromisoformat(dob), date.fromisoformat(on)
    age = d.year - b.year - ((d.month, d.day) < (b.month, b.day))
    return "senior" if age >= 66 else "junior" if age < 17 else "none"


def policy(request: Any) -> Any:
    task, user, res = conversation(request)
    if task == "reception":
        req = json.loads(user)
        salmon = req["species"] in ("salmon", "sea trout")
        if active("fish.route"):
            salmon = not salmon
        return Reply(tool_calls=(tool_call("transfer_to_salmon_desk" if salmon else "transfer_to_coarse_desk", {}),))
    if task == "eligibility":
        q = json.loads(user)
        if "lookup_angler" not in res:
            aid = q["angler_id"]
            if active("fish.angler"):
                aid = aid[:-2] + aid[-1] + aid[-2]
            return Reply(tool_calls=(tool_call("lookup_angler", {"angler_id": aid}),))
        rec = res["lookup_angler"]
        return json.dumps({"angler_id": rec["angler_id"], "concession": _concession(rec["dob"], q["start"])})
    req = json.loads(user)
    salmon = task == "salmon_desk"
    if "load_case_notes" not in res:
        return Reply(tool_calls=(tool_call("load_case_notes", {"application": req["application"]}),))
    if "record_plan" not in res:
        steps = ["eligibility", "expiry", "issue"]
        if salmon and req["renewal"] and not active("fish.plan"):
            steps.insert(1, "catch_return")
        return Reply(tool_calls=(tool_call("record_plan", {"steps": steps}),))
    plan = res["record_plan"]["steps"]
    if "eligibility_checker" not in res:
        return Reply(tool_calls=(tool_call("eligibility_checker", {"input": json.dumps({"angler_id": req["angler_id"],
                                                                                        "start": req["start"]})}),))
    if "catch_return" in plan and "check_catch_return" not in res:
        return Reply(tool_calls=(tool_call("check_catch_return", {"angler_id": req["angler_id"], "season": "2025"}),))
    if "compute_expiry" not in res:
        return Reply(tool_calls=(tool_call("compute_expiry", {"start": req["start"], "months": 12}),))
    if "issue_licence" not in res:
        rods = req["rods"]
        for note in res["load_case_notes"]["notes"]:
            if "rods:" in note:
                rods = int(note.split("rods:")[1].split()[0])
        elig = res["eligibility_checker"]
        elig = json.loads(elig) if isinstance(elig, str) else elig
        return Reply(tool_calls=(tool_call("issue_licence", {
            "application": req["application"], "angler_id": req["angler_id"],
            "licence_type": "SALMON-SEATROUT" if salmon else "COARSE-TROUT", "rods": rods, "start": req["start"],
            "expiry": res["compute_expiry"]["expiry"], "concession": elig["concession"],
            "catch_return_ref": (res.get("check_catch_return") or {}).get("reference", "")}),))
    return f"Issued {res['issue_licence']['licence']}."


@function_tool
def load_case_notes(application: str) -> str:
    """Notes the office holds on an application."""
    req = next(r for r in [*INPUTS.values(), *REFS] if r["application"] == application)
    notes = [f"{application}: caller confirmed address by phone", f"{application}: rods: {req['rods']} requested"]
    if active("fish.notes"):
        notes.append("APP-7719: rods: 3 requested, wants a coarse top-up")
    return json.dumps({"application": application, "notes": notes})


@function_tool
def record_plan(steps: list[str]) -> str:
    """Record the desk's plan for the application."""
    return json.dumps({"steps": steps, "recorded": True})


@function_tool
def lookup_angler(angler_id: str) -> str:
    """The angler register entry for an angler id."""
    a = ANGLERS[angler_id]
    return json.dumps({"angler_id": angler_id, "name": a["name"], "dob": a["dob"]})


@function_tool
def check_catch_return(angler_id: str, season: str) -> str:
    """Whether the angler filed the catch return of a season."""
    ref = ANGLERS[angler_id]["returns"].get(season, "")
    return json.dumps({"angler_id": angler_id, "season": season, "filed": bool(ref), "reference": ref})


@function_tool
def compute_expiry(start: str, months: int) -> str:
    """Last valid day of a licence of a number of months from its start."""
    d = date.fromisoformat(start)
    end = date(d.year + months // 12, d.month, d.day)
    if not active("fish.expiry"):
        end -= timedelta(days=1)
    return json.dumps({"start": start, "expiry": end.isoformat()})


def _issue(application: str, angler_id: str, licence_type: str, rods: int, start: str, expiry: str, concession: str,
           catch_return_ref: str) -> str:
    req = next(r for r in [*INPUTS.values(), *REFS] if r["application"] == application)
    if req["species"] in ("salmon", "sea trout") and licence_type != "SALMON-SEATROUT":
        raise RuntimeError(f"licensing API 422: licence type {licence_type} does not cover {req['species']} "
                           f"(application {application})")
    limit = 2 if licence_type == "SALMON-SEATROUT" else 3
    if rods > limit:
        raise RuntimeError(f"licensing API 422: {rods} rods exceeds the limit of {limit} for a {licence_type} licence")
    last = date(int(start[:4]) + 1, int(start[5:7]), int(start[8:])) - timedelta(days=1)
    if expiry != last.isoformat():
        raise RuntimeError(f"licensing API 422: expiry {expiry} does not match the 12-month term from {start} "
                           f"(last valid day {last.isoformat()})")
    due = _concession(ANGLERS[angler_id]["dob"], start)
    if concession != due:
        raise RuntimeError(f"licensing API 422: concession {concession} refused for {angler_id} (register: {due})")
    if licence_type == "SALMON-SEATROUT" and req["renewal"] and not catch_return_ref:
        raise RuntimeError(f"licensing API 409: renewal for {angler_id} needs the 2025 catch return reference")
    return json.dumps({"licence": f"LIC-{application}-{licence_type}", "expiry": expiry})


issue_licence = function_tool(_issue, name_override="issue_licence", failure_error_function=None)


def _agents(model: Any) -> Agent:
    checker = Agent(name="eligibility_agent", instructions="TASK=eligibility. Look the angler up and state the concession.",
                    model=model, tools=[lookup_angler])
    tools = [load_case_notes, record_plan,
             checker.as_tool(tool_name="eligibility_checker", tool_description="Concession an angler is entitled to."),
             check_catch_return, compute_expiry, issue_licence]
    salmon = Agent(name="salmon_desk", instructions="TASK=salmon_desk. Issue salmon and sea trout rod licences.",
                   model=model, tools=tools)
    coarse = Agent(name="coarse_desk", instructions="TASK=coarse_desk. Issue coarse and non-migratory trout licences.",
                   model=model, tools=tools)
    return Agent(name="reception", instructions="TASK=reception. Send each application to the right desk.",
                 model=model, handoffs=[salmon, coarse])


def record(inp: dict, dest: Path, server: Any) -> None:
    proc = TrajdebugProcessor(path=str(dest), name=AGENT, task=f"licence application {inp['application']}")
    set_trace_processors([proc])

    async def go() -> None:
        model, client = agents_model(server)
        try:
            await Runner.run(_agents(model), json.dumps(inp, sort_keys=True), run_config=RunConfig(workflow_name=AGENT))
        finally:
            await client.close()

    try:
        asyncio.run(go())
    except Exception as exc:  # noqa: BLE001 - the licensing API's refusal ends the run
        if "licensing API" not in str(exc):
            raise
