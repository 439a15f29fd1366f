"""An apprenticeship training provider's gateway desk: checks an apprentice is ready for end-point assessment.

Route: the OpenAI Agents SDK (Chat Completions model on the fake server), traced by trajdebug's tracing
processor (JSONL). Shape: a triage agent (apprentice lookup) hands off to a level-2 or level-3 gateway
specialist; the specialist fetches four things in parallel (off-the-job log, requirement, functional skills,
portfolio), records a gateway plan, works through it (employer declaration), then books the assessment or a
progress review.
"""

from __future__ import annotations

import re

from agents import Agent, function_tool
from trajdebug.testing import Reply, tool_call

from . import common

NAME = "apprenticeship-gateway-desk"
ROUTE = "openai_agents"
DOMAIN = "apprenticeship training provider: end-point assessment gateway"
SHAPE = "Agents SDK: triage agent with hand-offs to two specialists, 4 parallel tool calls, plan tool, plan execution, booking"
SWITCH = None

APPRENTICES = {
    "A-301": {"name": "Chloe Adams", "standard": "ST0070", "level": 3, "weekly_hours": 37.5, "weeks": 60, "otj": 482},
    "A-302": {"name": "Ben Harris", "standard": "ST0072", "level": 2, "weekly_hours": 30, "weeks": 52, "otj": 340},
    "A-303": {"name": "Priya Das", "standard": "ST0070", "level": 3, "weekly_hours": 37.5, "weeks": 56, "otj": 405},
    "A-304": {"name": "Sam Wright", "standard": "ST0072", "level": 2, "weekly_hours": 35, "weeks": 52, "otj": 390},
    "A-305": {"name": "Nia Roberts", "standard": "ST0070", "level": 3, "weekly_hours": 30, "weeks": 60, "otj": 410},
}
STANDARDS = {2: "ST0072", 3: "ST0070"}
KSBS = [f"KSB-{i:02d}" for i in range(1, 13)]

INPUTS = [
    {"request_id": "gw-71", "text": "Is apprentice A-301 ready for gateway? If so book the EPA."},
    {"request_id": "gw-72", "text": "Please run the gateway checks for A-302 and book end-point assessment if ready."},
    {"request_id": "gw-73", "text": "Gateway review for A-303 please; book the EPA when everything is in place."},
    {"request_id": "gw-74", "text": "Can you take A-304 through gateway and book their assessment?"},
    {"request_id": "gw-75", "text": "A-305 has finished the practical period: check gateway readiness and book the EPA."},
]

CASES = [
    {"id": "F1", "input": 0, "fault_kind": "truncated_result",
     "root": ("list_portfolio_evidence", 1), "failure": ("book_epa", 1),
     "description": "The portfolio listing returned its first page only (8 of Chloe Adams's 12 evidence items) with "
                    "no next-page marker, so the booking submitted 8 KSBs and the assessment organisation refused it."},
    {"id": "F2", "input": 2, "fault_kind": "tool_ignores_argument",
     "root": ("otj_requirement", 1), "failure": ("book_epa", 1),
     "description": "The off-the-job requirement tool ignored weekly_hours=37.5 and used 30, giving a 336-hour "
                    "minimum, so 405 hours looked enough and the assessment organisation refused the 420-hour shortfall."},
    {"id": "F3", "input": 4, "fault_kind": "plan_error",
     "root": ("generation fake-model", 4), "failure": ("book_epa", 1),
     "description": "The specialist's gateway plan for Nia Roberts left out the employer declaration, so no "
                    "declaration was requested and the booking was refused for want of it."},
    {"id": "F4", "input": 3, "fault_kind": "wrong_routing",
     "root": ("generation fake-model", 2), "failure": ("book_epa", 1),
     "description": "Triage handed Sam Wright, a level-2 apprentice on ST0072, to the level-3 gateway specialist, "
                    "which booked the assessment under ST0070 and the assessment organisation refused it."},
    {"id": "F5", "input": 1, "fault_kind": "swallowed_error",
     "root": ("get_functional_skills", 1), "failure": ("book_epa", 1),
     "description": "The functional-skills lookup timed out and the tool returned an empty result instead of an "
                    "error, so the booking went ahead without maths and English evidence and was refused."},
]


def brain(request):
    system = common.system_text(request)
    log = common.tool_log(request)
    user = common.user_text(request)
    aid = re.search(r"A-\d{3}", user).group(0)
    if system.startswith("You triage"):
        app = common.result_of(log, "get_apprentice")
        if app is None:
            return Reply(tool_calls=(tool_call("get_apprentice", {"apprentice_id": aid}),))
        level = app["level"]
        if SWITCH == "F4":
            level = 3
        return Reply(tool_calls=(tool_call(f"transfer_to_level{level}_gateway", {}),))
    level = 2 if "level 2" in system else 3
    app = common.result_of(log, "get_apprentice")
    otj = common.result_of(log, "get_otj_log")
    if otj is None:
        return Reply(tool_calls=(
            tool_call("get_otj_log", {"apprentice_id": aid}),
            tool_call("otj_requirement", {"weekly_hours": app["weekly_hours"], "weeks": app["weeks"]}),
            tool_call("get_functional_skills", {"apprentice_id": aid}),
            tool_call("list_portfolio_evidence", {"apprentice_id": aid}),
        ))
    need = common.result_of(log, "otj_requirement")
    hours = sum(e["hours"] for e in otj["entries"])
    if hours < need["minimum_hours"]:
        if common.result_of(log, "schedule_progress_review") is None:
            return Reply(tool_calls=(tool_call("schedule_progress_review", {
                "apprentice_id": aid, "reason": f"off-the-job hours {hours} below {need['minimum_hours']}"}),))
        return f"{app['name']} is not ready for gateway: {hours} of {need['minimum_hours']} off-the-job hours."
    plan = common.result_of(log, "record_gateway_plan")
    if plan is None:
        steps = ["check_otj", "check_functional_skills", "check_portfolio", "employer_declaration", "book_epa"]
        if SWITCH == "F3":
            steps.remove("employer_declaration")
        return Reply(tool_calls=(tool_call("record_gateway_plan", {"apprentice_id": aid, "steps": steps}),))
    decl = common.result_of(log, "request_employer_declaration")
    if "employer_declaration" in plan["steps"] and decl is None:
        return Reply(tool_calls=(tool_call("request_employer_declaration", {"apprentice_id": aid}),))
    booking = common.result_of(log, "book_epa")
    if booking is None:
        skills = common.result_of(log, "get_functional_skills")
        evidence = common.result_of(log, "list_portfolio_evidence")
        return Reply(tool_calls=(tool_call("book_epa", {
            "apprentice_id": aid, "standard": STANDARDS[level], "otj_hours": hours,
            "functional_skills": [r["subject"] for r in skills["results"]],
            "portfolio": [e["ksb"] for e in evidence["items"]],
            "employer_declaration": decl["ref"] if decl else ""}),))
    return f"EPA booked for {app['name']}: {booking['reference']} on {booking['window']}."


@function_tool(failure_error_function=None)
def get_apprentice(apprentice_id: str) -> dict:
    """The apprentice's record: standard, level, contracted hours, planned weeks."""
    a = APPRENTICES[apprentice_id]
    return {"apprentice_id": apprentice_id, **{k: v for k, v in a.items() if k != "otj"}}


@function_tool(failure_error_function=None)
def get_otj_log(apprentice_id: str) -> dict:
    """Off-the-job training log entries."""
    total = APPRENTICES[apprentice_id]["otj"]
    weeks = APPRENTICES[apprentice_id]["weeks"]
    entries, left = [], total
    for w in range(1, weeks + 1, 4):
        h = min(left, round(total / (weeks / 4) + 0.5))
        if h <= 0:
            break
        entries.append({"weeks": f"{w}-{min(w + 3, weeks)}", "hours": h})
        left -= h
    if left > 0:
        entries[-1]["hours"] += left
    return {"apprentice_id": apprentice_id, "entries": entries}


@function_tool(failure_error_function=None)
def otj_requirement(weekly_hours: float, weeks: int) -> dict:
    """Minimum off-the-job hours: 20% of contracted hours over the practical period."""
    if SWITCH == "F2":
        weekly_hours = 30.0  # the calculator's default contract
    return {"weekly_hours": weekly_hours, "weeks": weeks, "minimum_hours": round(0.2 * weekly_hours * weeks)}


def _awarding_body(apprentice_id: str) -> list:
    if SWITCH == "F5":
        raise TimeoutError("awarding body results service did not answer in 10 s")
    return [{"subject": "maths", "level": 2, "result": "pass"}, {"subject": "english", "level": 2, "result": "pass"}]


@function_tool(failure_error_function=None)
def get_functional_skills(apprentice_id: str) -> dict:
    """Functional skills maths and English results."""
    try:
        results = _awarding_body(apprentice_id)
    except Exception:
        results = []
    return {"apprentice_id": apprentice_id, "results": results}


@function_tool(failure_error_function=None)
def list_portfolio_evidence(apprentice_id: str) -> dict:
    """Portfolio evidence items mapped to the standard's KSBs."""
    items = [{"ksb": k, "evidence": f"{apprentice_id}/{k.lower()}.pdf"} for k in KSBS]
    if SWITCH == "F1":
        return {"apprentice_id": apprentice_id, "items": items[:8]}
    return {"apprentice_id": apprentice_id, "items": items}


@function_tool(failure_error_function=None)
def record_gateway_plan(apprentice_id: str, steps: list[str]) -> dict:
    """Record the gateway checklist for this apprentice."""
    return {"apprentice_id": apprentice_id, "steps": steps}


@function_tool(failure_error_function=None)
def request_employer_declaration(apprentice_id: str) -> dict:
    """Ask the employer to sign the gateway declaration."""
    return {"apprentice_id": apprentice_id, "ref": f"DEC-{apprentice_id[2:]}-25", "signed_by": "line manager"}


@function_tool(failure_error_function=None)
def schedule_progress_review(apprentice_id: str, reason: str) -> dict:
    """Book a progress review instead of gateway."""
    return {"apprentice_id": apprentice_id, "review": "2025-07-08", "reason": reason}


@function_tool(failure_error_function=None)
def book_epa(apprentice_id: str, standard: str, otj_hours: int, functional_skills: list[str], portfolio: list[str],
             employer_declaration: str) -> dict:
    """Book end-point assessment with the assessment organisation."""
    a = APPRENTICES[apprentice_id]
    if standard != a["standard"]:
        raise ValueError(f"{apprentice_id} is registered on {a['standard']}, the booking asks for {standard}")
    minimum = round(0.2 * a["weekly_hours"] * a["weeks"])
    if otj_hours < minimum:
        raise ValueError(f"{apprentice_id}: {otj_hours} off-the-job hours declared, the minimum is {minimum}")
    if sorted(functional_skills) != ["english", "maths"]:
        raise ValueError(f"{apprentice_id}: maths and English level 2 evidence required, got {functional_skills}")
    if len(portfolio) != len(KSBS):
        raise ValueError(f"{apprentice_id}: portfolio maps {len(portfolio)} of {len(KSBS)} KSBs")
    if not employer_declaration:
        raise ValueError(f"{apprentice_id}: employer gateway declaration missing")
    return {"reference": f"EPA-{apprentice_id[2:]}-{standard[-3:]}", "window": "2025-07-14 to 2025-08-29"}


def build() -> Agent:
    model = common.agents_model()
    shared = [get_otj_log, otj_requirement, get_functional_skills, list_portfolio_evidence, record_gateway_plan,
              request_employer_declaration, schedule_progress_review, book_epa]
    l2 = Agent(name="level2_gateway", model=model, tools=shared,
               instructions="You are the level 2 gateway specialist. Check readiness, plan the gateway, then book.")
    l3 = Agent(name="level3_gateway", model=model, tools=shared,
               instructions="You are the level 3 gateway specialist. Check readiness, plan the gateway, then book.")
    return Agent(name="gateway_triage", model=model, tools=[get_apprentice], handoffs=[l2, l3],
                 instructions="You triage gateway requests: look the apprentice up, then hand off by level.")


def record(inp: dict, path: str) -> None:
    common.run_agents_sdk(build(), inp["text"], path, NAME, inp["text"], {"request_id": inp["request_id"]})
