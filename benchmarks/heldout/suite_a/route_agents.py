"""Route 2: OpenAI Agents SDK agents (tools, handoffs, agents as tools) on the fake server through
``OpenAIChatCompletionsModel``, recorded with ``trajdebug.integrations.openai_agents.TrajdebugProcessor``.

Three agents:

* ``hotel_concierge`` - a front desk that hands off to a changes desk or a cancellations desk.
* ``leave_desk``      - an HR assistant that books leave, asking a payroll specialist sub-agent about pay.
* ``claims_adjuster`` - rental-car damage claims: intake hands off to an adjuster with notes memory and a
  vehicle-history sub-agent.

Every request is wrapped in the caller's own ``trace`` and ``custom_span("handle_request")``, which
records the exception when one escapes ``Runner.run`` (see the README: without it the recorded run
reads as a success).
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents import Agent, RunContextWrapper, Runner, custom_span, function_tool, trace
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.tracing import SpanError, set_trace_processors
from fakellm import (
    FakeModelServer,
    Reply,
    call_args,
    called,
    find,
    last_result,
    system_text,
    user_text,
)
from harness import AgentSpec, Case
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor


FAULTS: set[str] = set()
MAIN_MODEL = "gpt-4.1-mini"
SUB_MODEL = "gpt-4.1-nano"
GEN = f"generation {MAIN_MODEL}"
SUBGEN = f"generation {SUB_MODEL}"


def _set_faults(fault: str | None) -> None:
    FAULTS.clear()
    if fault:
        FAULTS.add(fault)


def _models(server: FakeModelServer) -> tuple[OpenAIChatCompletionsModel, OpenAIChatCompletionsModel]:
    client = AsyncOpenAI(base_url=server.base_url, api_key="sk-fake-local", max_retries=0, timeout=10)
    return (
        OpenAIChatCompletionsModel(model=MAIN_MODEL, openai_client=client),
        OpenAIChatCompletionsModel(model=SUB_MODEL, openai_client=client),
    )


def _run(
    workflow: str, build: Any, server: FakeModelServer, text: str, out: Path, key: str, context: Any = None
) -> Any:
    processor = TrajdebugProcessor(path=out)
    set_trace_processors([processor])
    trace_id = "trace_" + uuid.uuid5(uuid.NAMESPACE_URL, f"suite-a/{key}").hex

    async def go() -> Any:
        entry = build(*_models(server))
        with (
            trace(workflow, trace_id=trace_id, metadata={"case": key.split("/")[0]}),
            custom_span("handle_request", data={"request": text}) as span,
        ):
            try:
                result = await Runner.run(entry, text, context=context, max_turns=14)
            except Exception as exc:
                span.set_error(
                    SpanError(message=f"{type(exc).__name__}: {exc}", data={"agent_workflow": workflow})
                )
                raise
            return result.final_output

    try:
        return asyncio.run(go())
    finally:
        set_trace_processors([])


def _agent_of(body: dict[str, Any]) -> str:
    return find(r"\[(\w+)\]", system_text(body), "") or ""


# =====================================================================================
# hotel_concierge
# =====================================================================================

RESERVATIONS: dict[str, dict[str, Any]] = {
    "HA-55102": {
        "guest": "Mila Novak",
        "hotel_id": "ALDER-ZRH",
        "checkin": "2025-10-12",
        "nights": 3,
        "guests": 2,
        "rate_plan": "NR-SAVER",
        "total": 690.0,
        "block": ("2025-10-13", "2025-10-18"),
    },
    "HA-55117": {
        "guest": "Jon Reyes",
        "hotel_id": "ALDER-ZRH",
        "checkin": "2025-10-20",
        "nights": 2,
        "guests": 1,
        "rate_plan": "FLEX",
        "total": 520.0,
        "block": None,
    },
    "KB-20931": {
        "guest": "Ada Lin",
        "hotel_id": "KAI-BCN",
        "checkin": "2025-11-02",
        "nights": 4,
        "guests": 2,
        "rate_plan": "FLEX",
        "total": 880.0,
        "block": None,
    },
    "KB-20944": {
        "guest": "Tomas Roy",
        "hotel_id": "KAI-BCN",
        "checkin": "2025-11-05",
        "nights": 2,
        "guests": 2,
        "rate_plan": "NR-SAVER",
        "total": 360.0,
        "block": None,
    },
    "SP-88012": {
        "guest": "Hana Sato",
        "hotel_id": "SPREE-BER",
        "checkin": "2025-12-01",
        "nights": 3,
        "guests": 1,
        "rate_plan": "FLEX",
        "total": 495.0,
        "block": ("2025-11-30", "2025-12-06"),
    },
    "SP-88020": {
        "guest": "Leo Marsh",
        "hotel_id": "SPREE-BER",
        "checkin": "2025-12-03",
        "nights": 1,
        "guests": 2,
        "rate_plan": "FLEX",
        "total": 175.0,
        "block": None,
    },
    "HA-55130": {
        "guest": "Ravi Iyer",
        "hotel_id": "ALDER-ZRH",
        "checkin": "2025-10-14",
        "nights": 2,
        "guests": 1,
        "rate_plan": "NR-SAVER",
        "total": 410.0,
        "block": ("2025-10-13", "2025-10-18"),
    },
    "KB-20950": {
        "guest": "Eva Kunz",
        "hotel_id": "KAI-BCN",
        "checkin": "2025-11-10",
        "nights": 3,
        "guests": 3,
        "rate_plan": "FLEX",
        "total": 720.0,
        "block": None,
    },
}
RATE_CODES = {
    "ALDER-ZRH": ("BAR-OCT-B", 235.0),
    "KAI-BCN": ("BAR-NOV-A", 215.0),
    "SPREE-BER": ("BAR-DEC-A", 160.0),
}
CACHED_RATE_CODES = {
    "ALDER-ZRH": ("BAR-OCT-A", 219.0),
    "KAI-BCN": ("BAR-OCT-C", 199.0),
    "SPREE-BER": ("BAR-NOV-B", 149.0),
}
MONTHS = {
    m: i
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1
    )
}


class ReservationRejected(RuntimeError):
    pass


@function_tool(failure_error_function=None)
def get_reservation(reservation_id: str) -> str:
    """Look up a hotel reservation by id."""
    r = RESERVATIONS[reservation_id]
    return json.dumps({"reservation_id": reservation_id, **{k: v for k, v in r.items() if k != "block"}})


@function_tool(failure_error_function=None)
def search_availability(hotel_id: str, checkin: str, nights: int, guests: int) -> str:
    """Rooms and rate codes available at a hotel for a stay."""
    code, nightly = (CACHED_RATE_CODES if "rate_cache_stale" in FAULTS else RATE_CODES)[hotel_id]
    return json.dumps(
        {
            "hotel_id": hotel_id,
            "offers": [
                {
                    "rate_code": code,
                    "nightly": nightly,
                    "checkin": checkin,
                    "nights": nights,
                    "guests": guests,
                    "room": "double",
                }
            ],
        }
    )


@function_tool(failure_error_function=None)
def modify_reservation(reservation_id: str, checkin: str, nights: int, rate_code: str) -> str:
    """Move a reservation to new dates on a rate code."""
    r = RESERVATIONS[reservation_id]
    live_code, nightly = RATE_CODES[r["hotel_id"]]
    if rate_code != live_code:
        raise ReservationRejected(
            f"PMS refused {reservation_id}: rate code {rate_code} is no longer sellable (current {live_code})"
        )
    if r["block"]:
        lo, hi = r["block"]
        if not lo <= checkin <= hi:
            raise ReservationRejected(
                f"{reservation_id} belongs to group block {lo}..{hi}; cannot move arrival to {checkin}"
            )
    return json.dumps(
        {
            "reservation_id": reservation_id,
            "checkin": checkin,
            "nights": nights,
            "total": nightly * nights,
            "status": "modified",
        }
    )


@function_tool(failure_error_function=None)
def issue_refund(reservation_id: str, amount: float) -> str:
    """Cancel a reservation and refund the guest."""
    r = RESERVATIONS[reservation_id]
    if r["rate_plan"].startswith("NR"):
        raise ReservationRejected(
            f"{reservation_id} is on non-refundable plan {r['rate_plan']}; refund of {amount:.2f} EUR refused"
        )
    return json.dumps({"reservation_id": reservation_id, "refunded": amount, "status": "cancelled"})


def concierge_policy(body: dict[str, Any]) -> Reply:
    who = _agent_of(body)
    req = next((m.get("content") for m in body["messages"] if m.get("role") == "user"), "")
    res_id = find(r"\b([A-Z]{2}-\d{5})\b", req, flags=0)
    done = called(body)
    if who == "front_desk":
        cancel = bool(re.search(r"cancel|refund", req, re.I))
        if "concierge_misrouted" in FAULTS:
            cancel = not cancel
        return Reply(calls=[("transfer_to_cancellations" if cancel else "transfer_to_stay_changes", {})])
    if who == "stay_changes":
        if "get_reservation" not in done:
            return Reply(calls=[("get_reservation", {"reservation_id": res_id})])
        r = last_result(body, "get_reservation")
        if "search_availability" not in done:
            m = re.search(r"(\d{1,2}) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\w*", req)
            day, mon = int(m.group(1)), MONTHS[m.group(2).lower()]  # type: ignore[union-attr]
            if "checkin_day_dropped" in FAULTS and day >= 10:
                day = day % 10  # "14 Oct" read as the 4th
            nights = int(find(r"(\d+) nights?", req, str(r["nights"])))  # type: ignore[arg-type]
            return Reply(
                calls=[
                    (
                        "search_availability",
                        {
                            "hotel_id": r["hotel_id"],
                            "checkin": f"2025-{mon:02d}-{day:02d}",
                            "nights": nights,
                            "guests": r["guests"],
                        },
                    )
                ]
            )
        if "modify_reservation" not in done:
            offer = last_result(body, "search_availability")["offers"][0]
            return Reply(
                calls=[
                    (
                        "modify_reservation",
                        {
                            "reservation_id": res_id,
                            "checkin": offer["checkin"],
                            "nights": offer["nights"],
                            "rate_code": offer["rate_code"],
                        },
                    )
                ]
            )
        m = last_result(body, "modify_reservation")
        return Reply(
            text=f"Done: {res_id} now arrives {m['checkin']} for {m['nights']} nights, total {m['total']:.2f} EUR."
        )
    if who == "cancellations":
        if "get_reservation" not in done:
            return Reply(calls=[("get_reservation", {"reservation_id": res_id})])
        r = last_result(body, "get_reservation")
        if "issue_refund" not in done:
            return Reply(calls=[("issue_refund", {"reservation_id": res_id, "amount": r["total"]})])
        return Reply(text=f"{res_id} is cancelled and {r['total']:.2f} EUR refunded.")
    raise ValueError(f"unknown agent {who!r}")


def build_concierge(main: Any, sub: Any) -> Agent:
    changes = Agent(
        name="stay_changes",
        model=main,
        instructions="[stay_changes] You change reservation dates. Look up the reservation, check availability, then modify it.",
        tools=[get_reservation, search_availability, modify_reservation],
    )
    cancels = Agent(
        name="cancellations",
        model=main,
        instructions="[cancellations] You cancel reservations and refund guests.",
        tools=[get_reservation, issue_refund],
    )
    return Agent(
        name="front_desk",
        model=main,
        instructions="[front_desk] Route the guest to the right desk.",
        handoffs=[changes, cancels],
    )


def concierge_agent(server: FakeModelServer) -> AgentSpec:
    def run(inp: dict[str, Any], fault: str | None, out: Path, key: str) -> None:
        _set_faults(fault)
        server.use(concierge_policy)
        _run("hotel_concierge", build_concierge, server, inp["text"], out, key)

    passing = [
        {"text": "Hi, reservation HA-55117 - please move my arrival to 22 Oct, still 2 nights."},
        {"text": "I need to cancel KB-20931 and get my money back, thanks."},
        {"text": "Could you shift SP-88012 so that I arrive on 2 Dec? Same 3 nights."},
        {"text": "Please cancel booking SP-88020, plans changed. Refund to the card please."},
        {"text": "KB-20950: we'd like to arrive 12 Nov instead and stay 3 nights."},
        {"text": "Refund request for KB-20950 - the event was cancelled."},
    ]
    cases = [
        Case(
            "concierge_misrouted",
            {
                "text": "Reservation HA-55102: can you shift my stay to start on 14 Oct instead, same 3 nights?"
            },
            "concierge_misrouted",
            "wrong_routing",
            "The front desk hands a date change to the cancellations desk; it looks the stay up and tries to refund a "
            "non-refundable reservation, which the PMS refuses.",
            [(GEN, 1), ("handoff front_desk -> cancellations", 1), (GEN, 3), ("issue_refund", 1)],
            "llm",
            "transfer_to_cancellations",
        ),
        Case(
            "checkin_day_dropped",
            {"text": "For HA-55130 please move arrival to 15 Oct, 2 nights as before."},
            "checkin_day_dropped",
            "wrong_tool_args",
            "The changes desk reads '15 Oct' as the 5th when calling search_availability; the offer echoes that date, "
            "the model books it and the PMS refuses a move outside the group block.",
            [(GEN, 3), ("search_availability", 1), (GEN, 4), ("modify_reservation", 1)],
            "llm",
            "2025-10-05",
        ),
        Case(
            "rate_cache_stale",
            {"text": "KB-20944 - arriving a day later please, on 6 Nov, for 2 nights."},
            "rate_cache_stale",
            "stale_data",
            "search_availability answers from last month's rate cache (code BAR-OCT-C); the model modifies the "
            "reservation on that code and the PMS refuses the expired rate.",
            [("search_availability", 1), (GEN, 4), ("modify_reservation", 1)],
            "tool",
        ),
    ]
    return AgentSpec("hotel_concierge", "openai_agents", "hotel reservations", "jsonl", run, passing, cases)


# =====================================================================================
# leave_desk
# =====================================================================================

STAFF = {
    "E-2210": {"name": "Chris Young", "annual": 78000.0, "balance": 2.0, "cached_balance": 7.0},
    "E-2201": {"name": "Christine Young", "annual": 104000.0, "balance": 11.0, "cached_balance": 11.0},
    "E-3105": {"name": "Priya Raman", "annual": 91000.0, "balance": 14.0, "cached_balance": 14.0},
    "E-3150": {"name": "Paul Ramos", "annual": 66300.0, "balance": 4.0, "cached_balance": 4.0},
    "E-4012": {"name": "Dana Whitfield", "annual": 120900.0, "balance": 15.0, "cached_balance": 15.0},
    "E-4077": {"name": "Sean Okoro", "annual": 57200.0, "balance": 6.0, "cached_balance": 6.0},
    "E-5120": {"name": "Lucia Ferri", "annual": 83200.0, "balance": 12.0, "cached_balance": 12.0},
    "E-5121": {"name": "Lucas Ferris", "annual": 70200.0, "balance": 3.0, "cached_balance": 3.0},
}
TICKETS = {
    "T-4411": {"employee": "E-2210", "start": "2025-11-03", "end": "2025-11-07"},
    "T-4420": {"employee": "E-3105", "start": "2025-11-10", "end": "2025-11-14"},
    "T-4433": {"employee": "E-2210", "start": "2025-12-15", "end": "2025-12-19"},
    "T-4502": {"employee": "E-4012", "start": "2025-11-17", "end": "2025-11-21"},
    "T-4510": {"employee": "E-4077", "start": "2025-11-24", "end": "2025-11-26"},
    "T-4518": {"employee": "E-5121", "start": "2025-12-01", "end": "2025-12-05"},
    "T-4525": {"employee": "E-5120", "start": "2025-12-08", "end": "2025-12-10"},
    "T-4530": {"employee": "E-3150", "start": "2025-12-22", "end": "2025-12-24"},
    "T-4541": {"employee": "E-3105", "start": "2026-01-05", "end": "2026-01-08"},
}
HOLIDAYS = {"2025-11-27", "2025-12-25"}


class HrisRejected(RuntimeError):
    pass


def _workdays(start: str, end: str) -> int:
    from datetime import date, timedelta

    d, e = date.fromisoformat(start), date.fromisoformat(end)
    n = 0
    while d <= e:
        if d.weekday() < 5 and d.isoformat() not in HOLIDAYS:
            n += 1
        d += timedelta(days=1)
    return n


@function_tool(failure_error_function=None)
def get_leave_balance(employee_id: str) -> str:
    """Remaining paid leave days of an employee."""
    s = STAFF[employee_id]
    bal = s["cached_balance"] if "balance_cache_stale" in FAULTS else s["balance"]
    return json.dumps({"employee_id": employee_id, "paid_days_left": bal, "as_of": "2025-10-31"})


@function_tool(failure_error_function=None)
def count_workdays(start: str, end: str) -> str:
    """Working days between two dates (inclusive), excluding weekends and public holidays."""
    return json.dumps({"start": start, "end": end, "workdays": _workdays(start, end)})


@function_tool(failure_error_function=None)
def find_pay_record(name: str) -> str:
    """Payroll records whose name matches (fuzzy)."""
    key = name.lower().split()
    hits = [
        {"employee_id": eid, "name": s["name"], "daily_rate": round(s["annual"] / 260, 2)}
        for eid, s in STAFF.items()
        if all(k[:4] in s["name"].lower() for k in key)
    ]
    hits.sort(key=lambda h: h["employee_id"])
    return json.dumps({"matches": hits})


@function_tool(failure_error_function=None)
def submit_leave(
    ticket_id: str,
    employee_id: str,
    start: str,
    end: str,
    days: int,
    leave_type: str,
    daily_deduction: float = 0.0,
) -> str:
    """File an approved leave ticket in the HRIS (paid or unpaid)."""
    t = TICKETS[ticket_id]
    if (t["start"], t["end"]) != (start, end) or t["employee"] != employee_id:
        raise HrisRejected(
            f"{ticket_id}: filing {employee_id} {start}..{end} does not match the approved request {t['employee']} {t['start']}..{t['end']}"
        )
    s = STAFF[employee_id]
    if leave_type == "paid" and days > s["balance"]:
        raise HrisRejected(f"{employee_id} has {s['balance']:g} paid days left; cannot book {days}")
    if leave_type == "unpaid":
        expected = round(s["annual"] / 260, 2)
        if abs(daily_deduction - expected) > 0.01:
            raise HrisRejected(
                f"payroll engine computes a daily deduction of {expected:.2f} for {employee_id}, request says {daily_deduction:.2f}"
            )
    return json.dumps({"ticket_id": ticket_id, "status": "filed", "days": days, "type": leave_type})


def leave_policy(body: dict[str, Any]) -> Reply:
    who = _agent_of(body)
    req = (
        user_text(body)
        if who == "payroll_specialist"
        else next((m.get("content") for m in body["messages"] if m.get("role") == "user"), "")
    )
    done = called(body)
    if who == "payroll_specialist":
        eid = find(r"\b(E-\d{4})\b", req, flags=0)
        name = find(r"for ([A-Z][a-z]+ [A-Z][a-z]+)", req, flags=0)
        if "find_pay_record" not in done:
            return Reply(calls=[("find_pay_record", {"name": name})])
        matches = last_result(body, "find_pay_record")["matches"]
        pick = (
            matches[0]
            if "payroll_wrong_person" in FAULTS
            else next(m for m in matches if m["employee_id"] == eid)
        )
        return Reply(
            text=f"{pick['name']} ({pick['employee_id']}): daily rate {pick['daily_rate']:.2f} USD, deducted per unpaid day."
        )
    if who == "hr_assistant":
        ticket = find(r"\b(T-\d{4})\b", req, flags=0)
        eid = find(r"\b(E-\d{4})\b", req, flags=0)
        name = find(r"([A-Z][a-z]+ [A-Z][a-z]+) \(E-", req, flags=0)
        unpaid = bool(re.search(r"unpaid", req, re.I))
        if "count_workdays" not in done:
            m = re.search(r"from (\d{1,2})(?: (\w+))? (?:to|until) (\d{1,2}) (\w+) (\d{4})", req)
            d1, mon1, d2, mon2, year = m.groups()  # type: ignore[union-attr]
            mon1 = mon1 or mon2
            if "end_day_misread" in FAULTS:
                d2 = str(int(d2) + 10)
            start = f"{year}-{MONTHS[mon1[:3].lower()]:02d}-{int(d1):02d}"
            end = f"{year}-{MONTHS[mon2[:3].lower()]:02d}-{int(d2):02d}"
            calls = [("count_workdays", {"start": start, "end": end})]
            if unpaid:
                calls.append(
                    (
                        "payroll_specialist",
                        {"input": f"What is the daily pay rate for {name}, employee {eid}?"},
                    )
                )
            else:
                calls.append(("get_leave_balance", {"employee_id": eid}))
            return Reply(calls=calls)
        if "submit_leave" not in done:
            span = call_args(body, "count_workdays")[-1]
            days = last_result(body, "count_workdays")["workdays"]
            if unpaid:
                answer = last_result(body, "payroll_specialist")
                rate = float(re.search(r"daily rate ([\d.]+)", str(answer)).group(1))  # type: ignore[union-attr]
                return Reply(
                    calls=[
                        (
                            "submit_leave",
                            {
                                "ticket_id": ticket,
                                "employee_id": eid,
                                "start": span["start"],
                                "end": span["end"],
                                "days": days,
                                "leave_type": "unpaid",
                                "daily_deduction": rate,
                            },
                        )
                    ]
                )
            bal = last_result(body, "get_leave_balance")["paid_days_left"]
            kind = "paid" if bal >= days else "unpaid"
            if kind == "unpaid":
                return Reply(text=f"{name} only has {bal:g} paid days; please confirm unpaid leave first.")
            return Reply(
                calls=[
                    (
                        "submit_leave",
                        {
                            "ticket_id": ticket,
                            "employee_id": eid,
                            "start": span["start"],
                            "end": span["end"],
                            "days": days,
                            "leave_type": "paid",
                        },
                    )
                ]
            )
        return Reply(text=f"Filed {ticket} for {name}.")
    raise ValueError(f"unknown agent {who!r}")


def build_leave(main: Any, sub: Any) -> Agent:
    payroll = Agent(
        name="payroll_specialist",
        model=sub,
        instructions="[payroll_specialist] Answer pay questions from payroll records.",
        tools=[find_pay_record],
    )
    return Agent(
        name="hr_assistant",
        model=main,
        instructions="[hr_assistant] File approved leave tickets in the HRIS.",
        tools=[
            count_workdays,
            get_leave_balance,
            payroll.as_tool(
                tool_name="payroll_specialist",
                tool_description="Ask the payroll specialist about an employee's pay.",
            ),
            submit_leave,
        ],
    )


def leave_agent(server: FakeModelServer) -> AgentSpec:
    def run(inp: dict[str, Any], fault: str | None, out: Path, key: str) -> None:
        _set_faults(fault)
        server.use(leave_policy)
        _run("leave_desk", build_leave, server, inp["text"], out, key)

    passing = [
        {"text": "Ticket T-4502: Dana Whitfield (E-4012) approved for leave from 17 to 21 November 2025."},
        {"text": "Please file T-4510 for Sean Okoro (E-4077): unpaid leave from 24 to 26 November 2025."},
        {"text": "T-4525 - Lucia Ferri (E-5120), time off from 8 to 10 December 2025, manager approved."},
        {"text": "Ticket T-4530, Paul Ramos (E-3150) wants leave from 22 to 24 December 2025."},
        {"text": "File T-4518: Lucas Ferris (E-5121), unpaid leave from 1 to 5 December 2025."},
        {"text": "T-4541 for Priya Raman (E-3105): leave from 5 to 8 January 2026 approved."},
    ]
    cases = [
        Case(
            "end_day_misread",
            {
                "text": "Ticket T-4420: Priya Raman (E-3105) is approved for leave from 10 to 14 November 2025."
            },
            "end_day_misread",
            "wrong_tool_args",
            "The assistant reads the end date as 24 November when counting workdays; the next turn files the ticket "
            "with the dates of its earlier call and the HRIS refuses a span that differs from the approved request.",
            [(GEN, 1), ("count_workdays", 1), (GEN, 2), ("submit_leave", 1)],
            "llm",
            "2025-11-24",
        ),
        Case(
            "balance_cache_stale",
            {"text": "Ticket T-4411: Chris Young (E-2210) approved for leave from 3 to 7 November 2025."},
            "balance_cache_stale",
            "stale_data",
            "get_leave_balance serves a cached balance of 7 days (2 really left); the assistant books 5 paid days and "
            "the HRIS rejects the paid booking.",
            [("get_leave_balance", 1), (GEN, 2), ("submit_leave", 1)],
            "tool",
        ),
        Case(
            "payroll_wrong_person",
            {"text": "Ticket T-4433: Chris Young (E-2210) takes unpaid leave from 15 to 19 December 2025."},
            "payroll_wrong_person",
            "wrong_entity_subagent",
            "The payroll specialist sub-agent picks the first fuzzy match, Christine Young, and reports her daily rate; "
            "the assistant files the unpaid leave with that deduction and the payroll engine rejects it.",
            [(SUBGEN, 2), ("payroll_specialist", 1), (GEN, 2), ("submit_leave", 1)],
            "llm",
            "Christine Young",
        ),
    ]
    return AgentSpec("leave_desk", "openai_agents", "HR (leave management)", "jsonl", run, passing, cases)


# =====================================================================================
# claims_adjuster
# =====================================================================================

RENTALS: dict[str, dict[str, Any]] = {
    "RA-7741": {
        "plate": "KA-MR 482",
        "odometer_out": 18250,
        "allowance_mi": 700,
        "rate_per_mi": 0.35,
        "photo": "P-7741",
        "telematics_mi": 1183,
        "preexisting": ["rear bumper scratch"],
        "cluster": "km",
    },
    "RA-7750": {
        "plate": "B-QT 1093",
        "odometer_out": 40210,
        "allowance_mi": 1000,
        "rate_per_mi": 0.30,
        "photo": "P-7750",
        "telematics_mi": 842,
        "preexisting": [],
        "cluster": "mi",
    },
    "RA-7762": {
        "plate": "M-LX 5570",
        "odometer_out": 9020,
        "allowance_mi": 500,
        "rate_per_mi": 0.40,
        "photo": "P-7762",
        "telematics_mi": 910,
        "preexisting": ["left mirror crack"],
        "cluster": "km",
    },
    "RA-7788": {
        "plate": "HH-AZ 318",
        "odometer_out": 61200,
        "allowance_mi": 800,
        "rate_per_mi": 0.25,
        "photo": "P-7788",
        "telematics_mi": 655,
        "preexisting": ["windshield chip"],
        "cluster": "mi",
    },
    "RA-7790": {
        "plate": "F-KE 2201",
        "odometer_out": 12900,
        "allowance_mi": 600,
        "rate_per_mi": 0.35,
        "photo": "P-7790",
        "telematics_mi": 1020,
        "preexisting": ["rear bumper scratch"],
        "cluster": "mi",
    },
    "RA-7802": {
        "plate": "S-PW 7731",
        "odometer_out": 33010,
        "allowance_mi": 900,
        "rate_per_mi": 0.30,
        "photo": "P-7802",
        "telematics_mi": 1240,
        "preexisting": [],
        "cluster": "mi",
    },
    "RA-7815": {
        "plate": "KA-MR 480",
        "odometer_out": 27400,
        "allowance_mi": 700,
        "rate_per_mi": 0.35,
        "photo": "P-7815",
        "telematics_mi": 530,
        "preexisting": [],
        "cluster": "mi",
    },
    "RA-7821": {
        "plate": "D-RN 6604",
        "odometer_out": 15480,
        "allowance_mi": 750,
        "rate_per_mi": 0.30,
        "photo": "P-7821",
        "telematics_mi": 980,
        "preexisting": ["hubcap missing"],
        "cluster": "km",
    },
}
KM_PER_MI = 1.609344
DAMAGE_PRICES = {
    "rear bumper scratch": 380.0,
    "front bumper dent": 640.0,
    "left mirror crack": 210.0,
    "windshield chip": 150.0,
    "door ding": 180.0,
    "hubcap missing": 90.0,
}


class SettlementRejected(RuntimeError):
    pass


@dataclass
class ClaimCtx:
    notes: dict[str, Any] = field(default_factory=dict)


@function_tool(failure_error_function=None)
def get_rental(agreement_id: str) -> str:
    """Rental agreement: plate, odometer at checkout (miles), mileage allowance and rate, return photo id."""
    r = RENTALS[agreement_id]
    return json.dumps(
        {
            "agreement_id": agreement_id,
            "plate": r["plate"],
            "odometer_out_mi": r["odometer_out"],
            "allowance_mi": r["allowance_mi"],
            "rate_per_mi": r["rate_per_mi"],
            "return_photo": r["photo"],
        }
    )


@function_tool(failure_error_function=None)
def read_odometer_photo(photo_id: str) -> str:
    """OCR of the dashboard photo taken at return; the reading in miles."""
    r = next(x for x in RENTALS.values() if x["photo"] == photo_id)
    miles_in = r["odometer_out"] + r["telematics_mi"]
    shown = round(miles_in * KM_PER_MI) if r["cluster"] == "km" else miles_in
    reading = (
        shown if ("km_cluster_unconverted" in FAULTS or r["cluster"] == "mi") else round(shown / KM_PER_MI)
    )
    return json.dumps({"photo_id": photo_id, "odometer_mi": reading, "ocr_confidence": 0.97})


@function_tool(failure_error_function=None)
def compute_mileage_charge(agreement_id: str, odometer_in_mi: int) -> str:
    """Excess-mileage charge for a returned car."""
    r = RENTALS[agreement_id]
    driven = odometer_in_mi - r["odometer_out"]
    excess = max(0, driven - r["allowance_mi"])
    return json.dumps(
        {"driven_mi": driven, "excess_mi": excess, "charge": round(excess * r["rate_per_mi"], 2)}
    )


@function_tool(failure_error_function=None)
def fleet_lookup(plate: str) -> str:
    """Find a fleet vehicle by plate and return its damage history."""
    norm = plate.replace(" ", "").upper()
    if "plate_fuzzy_match" in FAULTS:
        norm = norm[:-1]  # "tolerant" match on a prefix, first hit wins
        hit = next(
            r
            for r in sorted(RENTALS.values(), key=lambda x: x["plate"])
            if r["plate"].replace(" ", "").startswith(norm)
        )
    else:
        hit = next(r for r in RENTALS.values() if r["plate"].replace(" ", "") == norm)
    return json.dumps({"plate": hit["plate"], "damage_history": hit["preexisting"]})


@function_tool(failure_error_function=None)
def save_case_note(ctx: RunContextWrapper[ClaimCtx], key: str, value: str) -> str:
    """Save a note on the claim file."""
    if "notes_overwrite" in FAULTS:
        ctx.context.notes = {key: value}  # replaces the file instead of adding to it
    else:
        ctx.context.notes[key] = value
    return json.dumps({"saved": key})


@function_tool(failure_error_function=None)
def get_case_notes(ctx: RunContextWrapper[ClaimCtx]) -> str:
    """All notes on the claim file."""
    return json.dumps(ctx.context.notes)


@function_tool(failure_error_function=None)
def settle_claim(agreement_id: str, mileage_charge: float, damage_items: list[str]) -> str:
    """Bill the renter for excess mileage and new damage."""
    r = RENTALS[agreement_id]
    expected = round(max(0, r["telematics_mi"] - r["allowance_mi"]) * r["rate_per_mi"], 2)
    if abs(mileage_charge - expected) > 0.01:
        raise SettlementRejected(
            f"{agreement_id}: mileage charge {mileage_charge:.2f} disagrees with telematics ({r['telematics_mi']} mi driven -> {expected:.2f})"
        )
    old = [d for d in damage_items if d in r["preexisting"]]
    if old:
        raise SettlementRejected(
            f"{agreement_id}: {old} already on the checkout inspection; renter cannot be billed for it"
        )
    total = mileage_charge + sum(DAMAGE_PRICES[d] for d in damage_items)
    return json.dumps({"agreement_id": agreement_id, "billed": round(total, 2), "status": "settled"})


def claims_policy(body: dict[str, Any]) -> Reply:
    who = _agent_of(body)
    done = called(body)
    first_user = next((m.get("content") for m in body["messages"] if m.get("role") == "user"), "")
    if who == "intake":
        if "get_rental" not in done:
            return Reply(
                calls=[("get_rental", {"agreement_id": find(r"\b(RA-\d{4})\b", first_user, flags=0)})]
            )
        return Reply(calls=[("transfer_to_adjuster", {})])
    if who == "vehicle_history":
        if "fleet_lookup" not in done:
            return Reply(
                calls=[
                    (
                        "fleet_lookup",
                        {"plate": find(r"plate ([A-Z]{1,2}-[A-Z]{2} \d{3,4})", user_text(body), flags=0)},
                    )
                ]
            )
        h = last_result(body, "fleet_lookup")
        hist = ", ".join(h["damage_history"]) or "none"
        return Reply(text=f"Vehicle {h['plate']}: prior damage on file: {hist}.")
    if who == "adjuster":
        rental = last_result(body, "get_rental")
        reported = [d for d in DAMAGE_PRICES if d in first_user.lower()]
        if "read_odometer_photo" not in done:
            return Reply(calls=[("read_odometer_photo", {"photo_id": rental["return_photo"]})])
        if "compute_mileage_charge" not in done:
            return Reply(
                calls=[
                    (
                        "compute_mileage_charge",
                        {
                            "agreement_id": rental["agreement_id"],
                            "odometer_in_mi": last_result(body, "read_odometer_photo")["odometer_mi"],
                        },
                    )
                ]
            )
        if "vehicle_history" not in done:
            return Reply(calls=[("vehicle_history", {"input": f"Prior damage for plate {rental['plate']}?"})])
        saves = call_args(body, "save_case_note")
        if not saves:
            answer = str(last_result(body, "vehicle_history"))
            prior = [d for d in DAMAGE_PRICES if d in answer]
            return Reply(
                calls=[("save_case_note", {"key": "preexisting", "value": "; ".join(prior) or "none"})]
            )
        if len(saves) == 1:
            return Reply(calls=[("save_case_note", {"key": "reported", "value": "; ".join(reported)})])
        if "get_case_notes" not in done:
            return Reply(calls=[("get_case_notes", {})])
        if "settle_claim" not in done:
            notes = last_result(body, "get_case_notes")
            prior = notes.get("preexisting", "none").split("; ")
            new = [d for d in notes.get("reported", "").split("; ") if d and d not in prior]
            return Reply(
                calls=[
                    (
                        "settle_claim",
                        {
                            "agreement_id": rental["agreement_id"],
                            "mileage_charge": last_result(body, "compute_mileage_charge")["charge"],
                            "damage_items": new,
                        },
                    )
                ]
            )
        return Reply(
            text=f"Settled {rental['agreement_id']}: billed {last_result(body, 'settle_claim')['billed']:.2f} EUR."
        )
    raise ValueError(f"unknown agent {who!r}")


def build_claims(main: Any, sub: Any) -> Agent:
    history = Agent(
        name="vehicle_history",
        model=sub,
        instructions="[vehicle_history] Report a fleet vehicle's prior damage.",
        tools=[fleet_lookup],
    )
    adjuster = Agent(
        name="adjuster",
        model=main,
        instructions="[adjuster] Settle the return: mileage, then damage net of prior damage; keep notes on the file.",
        tools=[
            read_odometer_photo,
            compute_mileage_charge,
            history.as_tool(
                tool_name="vehicle_history",
                tool_description="Ask the fleet desk for a vehicle's prior damage.",
            ),
            save_case_note,
            get_case_notes,
            settle_claim,
        ],
    )
    return Agent(
        name="intake",
        model=main,
        instructions="[intake] Open the claim and pass it to an adjuster.",
        tools=[get_rental],
        handoffs=[adjuster],
    )


def claims_agent(server: FakeModelServer) -> AgentSpec:
    def run(inp: dict[str, Any], fault: str | None, out: Path, key: str) -> None:
        _set_faults(fault)
        server.use(claims_policy)
        _run("claims_adjuster", build_claims, server, inp["text"], out, key, context=ClaimCtx())

    passing = [
        {"text": "Return of RA-7750 today, customer reports a door ding on the passenger side."},
        {"text": "RA-7788 came back; inspector noted a front bumper dent."},
        {"text": "Closing RA-7802: no new damage, just check the mileage."},
        {"text": "RA-7815 returned with a door ding and a front bumper dent."},
        {"text": "RA-7790 back at the branch, front bumper dent reported by staff."},
        {"text": "Return RA-7821, a door ding was found at check-in."},
    ]
    cases = [
        Case(
            "km_cluster_unconverted",
            {"text": "RA-7762 returned at Munich airport; staff found a door ding."},
            "km_cluster_unconverted",
            "unit_scale",
            "read_odometer_photo returns the kilometre reading of a metric cluster as miles; the excess-mileage charge "
            "is computed from it and settlement rejects it against telematics.",
            [
                ("read_odometer_photo", 1),
                (GEN, 4),
                ("compute_mileage_charge", 1),
                (GEN, 9),
                ("settle_claim", 1),
            ],
            "tool",
        ),
        Case(
            "notes_overwrite",
            {"text": "RA-7790 returned; customer admits a rear bumper scratch and a door ding."},
            "notes_overwrite",
            "bad_memory_write",
            "save_case_note replaces the claim file instead of adding to it; the second note wipes the prior-damage "
            "note, so the already-known bumper scratch is billed and settlement refuses it.",
            [("save_case_note", 2), ("get_case_notes", 1), (GEN, 9), ("settle_claim", 1)],
            "tool",
        ),
        Case(
            "plate_fuzzy_match",
            {"text": "RA-7741 is back; there's a rear bumper scratch and a front bumper dent."},
            "plate_fuzzy_match",
            "wrong_entity_subagent",
            "The vehicle-history sub-agent's fleet_lookup matches plate 'KA-MR 48' by prefix and returns KA-MR 480's "
            "clean history; the adjuster bills the known bumper scratch and settlement refuses it.",
            [
                ("fleet_lookup", 1),
                (SUBGEN, 2),
                ("vehicle_history", 1),
                (GEN, 6),
                ("save_case_note", 1),
                ("get_case_notes", 1),
                (GEN, 9),
                ("settle_claim", 1),
            ],
            "tool",
        ),
    ]
    return AgentSpec(
        "claims_adjuster", "openai_agents", "car rental damage claims", "jsonl", run, passing, cases
    )


def agents(server: FakeModelServer) -> list[AgentSpec]:
    return [concierge_agent(server), leave_agent(server), claims_agent(server)]
