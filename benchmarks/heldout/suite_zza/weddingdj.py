"""Wedding DJ bookings (OpenAI Agents SDK): booking desk triage agent with hand-offs to a wedding specialist or a corporate events agent."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .kit import active

AGENT = "dj-booking-desk"
ROUTE = "openai_agents"
DOMAIN = "wedding DJ bookings"
SHAPE = "Agents SDK: triage agent -> hand-off (wedding specialist | corporate events) -> email thread, calendar, venue rules, quote, LLM timeline, booking contract tool"

ENQUIRIES = {
    "A": {"enquiry": "EQ-118", "kind": "wedding", "couple": "Ana Ruiz and Joss Hale", "date": "2027-06-12", "venue": "Hartwell Barn", "dj": "Marlo", "hours": 5},
    "B": {"enquiry": "EQ-124", "kind": "wedding", "couple": "Mei Tan and Ravi Shah", "date": "2027-08-21", "venue": "Old Boathouse", "dj": "Kez", "hours": 6},
    "C": {"enquiry": "EQ-127", "kind": "wedding", "couple": "Dee Obi and Cal Frost", "date": "2027-06-26", "venue": "Hartwell Barn", "dj": "Marlo", "hours": 5},
    "R1": {"enquiry": "EQ-101", "kind": "wedding", "couple": "Lou Park and Sam Bright", "date": "2027-05-01", "venue": "Hartwell Barn", "dj": "Kez", "hours": 4},
    "R2": {"enquiry": "EQ-105", "kind": "corporate", "couple": "Finch Legal", "date": "2027-03-19", "venue": "Guild Hall", "dj": "Marlo", "hours": 3},
    "R3": {"enquiry": "EQ-109", "kind": "wedding", "couple": "Ola Ade and Tim Roe", "date": "2027-09-04", "venue": "Old Boathouse", "dj": "Marlo", "hours": 5},
    "R4": {"enquiry": "EQ-112", "kind": "wedding", "couple": "Kit Moss and Bea Lund", "date": "2027-07-17", "venue": "Guild Hall", "dj": "Kez", "hours": 4},
}
INPUTS = ENQUIRIES
REFS = ["R1", "R2", "R3", "R4"]
VENUES = {"Hartwell Barn": {"curfew": "23:00", "max_db": 96}, "Old Boathouse": {"curfew": "23:30", "max_db": 92}, "Guild Hall": {"curfew": "00:00", "max_db": 100}}
LIVE_BOOKINGS = {("Marlo", "2027-06-26"): "WD-5521"}
RATE = {"WED-CEREMONY": 270.0, "CORP-STD": 220.0}


def _enq(eid: str) -> dict:
    return next(v for v in ENQUIRIES.values() if v["enquiry"] == eid)


@function_tool
def fetch_email_thread(enquiry: str) -> str:
    """The enquiry's email thread, oldest message first."""
    e = _enq(enquiry)
    msgs = [f"From {e['couple']}: we'd love a DJ on date: {e['date']} at {e['venue']} for {e['hours']} hours."]
    if active("weddingdj_05"):
        msgs.append("Fwd from Nia Cole and Ben Ivo: could Marlo also play our party, date: 2027-07-03, Guild Hall?")
    return "\n".join(msgs)


@function_tool
def check_availability(dj: str, date: str) -> str:
    """Whether a DJ is free on a date."""
    held = LIVE_BOOKINGS.get((dj, date))
    if active("weddingdj_03"):
        return json.dumps({"dj": dj, "date": date, "available": True, "as_of": "2026-11-20"})
    return json.dumps({"dj": dj, "date": date, "available": held is None, "as_of": "2026-12-05"})


@function_tool
def venue_rules(venue: str) -> str:
    """A venue's music curfew and sound limit."""
    return json.dumps({"venue": venue, **VENUES[venue]})


@function_tool
def quote_package(package: str, hours: int) -> str:
    """Price a DJ package for a number of hours."""
    total = RATE[package] * hours
    if active("weddingdj_01"):
        return f"PACKAGE {package} HOURS {hours} TOTAL " + f"{total:,.2f}".replace(",", "X").replace(".", ",").replace("X", ".") + " GBP"
    return f"PACKAGE {package} HOURS {hours} TOTAL GBP {total:,.2f}"


@function_tool(failure_error_function=None)
def confirm_booking(enquiry: str, dj: str, date: str, package: str, start: str, end: str, total: float, deposit: float) -> str:
    """Send the booking contract and take the deposit."""
    e = _enq(enquiry)
    if date != e["date"]:
        raise RuntimeError(f"contract service 422: event date {date} does not match enquiry {enquiry} ({e['date']})")
    if (dj, date) in LIVE_BOOKINGS:
        raise RuntimeError(f"calendar 409: DJ {dj} already holds {date} (booking {LIVE_BOOKINGS[(dj, date)]})")
    if e["kind"] == "wedding" and package != "WED-CEREMONY":
        raise RuntimeError(f"contract service 422: wedding enquiry {enquiry} needs the ceremony package, got {package}")
    curfew = VENUES[e["venue"]]["curfew"]
    if curfew != "00:00" and end > curfew:
        raise RuntimeError(f"venue policy 422: music end {end} is after the {curfew} curfew at {e['venue']}")
    if abs(deposit - round(total * 0.3, 2)) > 0.01 or total < 100:
        raise RuntimeError(f"payments 422: deposit {deposit} GBP is not 30% of contract total {total} GBP")
    return json.dumps({"contract": f"C-{enquiry}", "status": "sent"})


def _called(msgs: list) -> dict:
    """Tool name -> its result text, for the tools called so far."""
    names = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
    return {names.get(m.get("tool_call_id"), "?"): m.get("content") for m in msgs if m.get("role") == "tool"}


def policy(request: Any) -> Any:
    msgs = (request.body or {}).get("messages") or []
    system = " ".join(str(m.get("content")) for m in msgs if m.get("role") == "system")
    user = " ".join(str(m.get("content")) for m in msgs if m.get("role") == "user")
    eid = re.search(r"(EQ-\d+)", user).group(1)
    e = _enq(eid)
    done = _called(msgs)
    if "booking desk" in system:
        target = "wedding_specialist" if "wedding" in user else "corporate_events"
        if active("weddingdj_02"):
            target = "corporate_events"
        return Reply(tool_calls=(tool_call(f"transfer_to_{target}", {}),))
    wedding = "wedding specialist" in system
    if "fetch_email_thread" not in done:
        return Reply(tool_calls=(tool_call("fetch_email_thread", {"enquiry": eid}),))
    date = re.findall(r"date: (\d{4}-\d\d-\d\d)", done["fetch_email_thread"])[-1]
    if "check_availability" not in done:
        return Reply(tool_calls=(tool_call("check_availability", {"dj": e["dj"], "date": date}),))
    if not json.loads(done["check_availability"])["available"]:
        return f"{e['dj']} is not free on {date}."
    package = "WED-CEREMONY" if wedding else "CORP-STD"
    if wedding and "venue_rules" not in done:
        return Reply(tool_calls=(tool_call("venue_rules", {"venue": e["venue"]}),))
    if "quote_package" not in done:
        return Reply(tool_calls=(tool_call("quote_package", {"package": package, "hours": e["hours"]}),))
    if "confirm_booking" not in done:
        raw = re.search(r"TOTAL (?:GBP )?([0-9.,]+)", done["quote_package"]).group(1)
        total = float(raw.replace(",", ""))
        start_h = 18 if e["hours"] <= 5 else 17
        if wedding:
            curfew = json.loads(done["venue_rules"])["curfew"]
            start_h = min(start_h, int(curfew[:2]) - e["hours"]) if curfew != "00:00" else start_h
            if active("weddingdj_04"):
                start_h += 1
        end = f"{start_h + e['hours']:02d}:{'30' if (wedding and json.loads(done['venue_rules'])['curfew'].endswith('30')) else '00'}"
        return Reply(tool_calls=(tool_call("confirm_booking", {
            "enquiry": eid, "dj": e["dj"], "date": date, "package": package, "start": f"{start_h:02d}:00", "end": end,
            "total": total, "deposit": round(total * 0.3, 2)}),))
    return f"Contract sent for {eid}."


def record(key: str, path: Path, base_url: str) -> None:
    inp = INPUTS[key]
    model = OpenAIChatCompletionsModel(model="fake-model", openai_client=AsyncOpenAI(base_url=base_url, api_key="sk-local-test", max_retries=0))
    wedding = Agent(name="wedding_specialist", model=model, instructions="You are the wedding specialist: plan and contract wedding DJ sets.",
                    tools=[fetch_email_thread, check_availability, venue_rules, quote_package, confirm_booking])
    corporate = Agent(name="corporate_events", model=model, instructions="You are the corporate events agent: contract DJ sets for company events.",
                      tools=[fetch_email_thread, check_availability, quote_package, confirm_booking])
    desk = Agent(name="booking_desk", model=model, instructions="You are the booking desk: hand each enquiry to the right agent.",
                 handoffs=[wedding, corporate])
    proc = TrajdebugProcessor(path=str(path), name=AGENT, task=f"book DJ for enquiry {inp['enquiry']}")
    set_trace_processors([proc])
    text = f"Enquiry {inp['enquiry']}: {inp['kind']} for {inp['couple']}, please book."
    try:
        Runner.run_sync(desk, text, run_config=RunConfig(workflow_name=AGENT), max_turns=14)
    except Exception as exc:  # noqa: BLE001 - the processor records the run's failure
        if "422" not in str(exc) and "409" not in str(exc):
            raise


CASES = [
    dict(case="weddingdj_01", fault_kind="format_drift", input="A", root=("quote_package", 1, "tool"), failure=("confirm_booking", 1),
         description="The pricing service switches to a European number format, the total is read as 1.35 GBP and the payments check rejects the deposit."),
    dict(case="weddingdj_02", fault_kind="wrong_routing", input="B", root=("generation fake-model", 1, "llm"), failure=("confirm_booking", 1),
         description="The booking desk hands a wedding enquiry to the corporate events agent, which contracts the corporate package the contract service refuses for a wedding."),
    dict(case="weddingdj_03", fault_kind="stale_data", input="C", root=("check_availability", 1, "tool"), failure=("confirm_booking", 1),
         description="The availability tool answers from a two-week-old calendar snapshot and reports the DJ free on a date another booking already holds."),
    dict(case="weddingdj_04", fault_kind="plan_error", input="B", root=("generation fake-model", 6, "llm"), failure=("confirm_booking", 1),
         description="The specialist model plans the set to start an hour late, so the music runs past the venue curfew."),
    dict(case="weddingdj_05", fault_kind="context_pollution", input="A", root=("fetch_email_thread", 1, "tool"), failure=("confirm_booking", 1),
         description="The email thread tool includes a forwarded enquiry from another couple, and the specialist books that couple's date."),
]
