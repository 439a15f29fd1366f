"""Sauna and spa bookings (openai_agents route): a concierge agent uses a treatment-planner agent as a tool and books a session."""
from __future__ import annotations

import asyncio
import json

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from trajdebug.integrations.openai_agents import TrajdebugProcessor

from .kit import active

AGENT = "spa-concierge"
ROUTE = "openai_agents"

GUESTS = {"G-12": {"name": "A. Lindqvist", "medical": "pregnancy", "tier": "gold"},
          "G-17": {"name": "R. Okafor", "medical": "", "tier": "silver"},
          "G-21": {"name": "M. Brandt", "medical": "", "tier": "silver"},
          "G-33": {"name": "T. Haines", "medical": "hypertension", "tier": "gold"},
          "G-40": {"name": "S. Ito", "medical": "", "tier": "bronze"},
          "G-45": {"name": "L. Moreau", "medical": "", "tier": "gold"}}
NOTES = {"G-12": ["likes eucalyptus infusion", "prefers bio sauna at 60 C"],
         "G-17": ["prefers Finnish sauna at 95 C"], "G-21": ["prefers Finnish sauna at 85 C"],
         "G-33": ["prefers bio sauna at 55 C"], "G-40": ["prefers bio sauna at 65 C"],
         "G-45": ["prefers Finnish sauna at 90 C", "deep tissue massage"]}
SLOTS = ["09:00", "10:30", "12:00", "13:30", "15:00", "16:30", "17:15", "18:00", "19:30"]
PRICES = {"sauna": 35.0, "massage": 50.0}
INPUTS = {
    "main": {"guest": "G-12", "date": "2026-12-18", "window": ["17:00", "20:00"], "prior_guest": "G-17"},
    "ref1": {"guest": "G-21", "date": "2026-12-18", "window": ["09:00", "12:00"], "prior_guest": "G-12"},
    "ref2": {"guest": "G-33", "date": "2026-12-19", "window": ["13:00", "16:00"], "prior_guest": "G-21"},
    "ref3": {"guest": "G-40", "date": "2026-12-19", "window": ["16:00", "19:00"], "prior_guest": "G-33"},
    "ref4": {"guest": "G-45", "date": "2026-12-20", "window": ["10:00", "14:00"], "prior_guest": "G-40"},
}

FAULTS = {
    "sauna_sub": dict(kind="subagent_wrong_entity", root=("generation gpt-4o-mini", 4), failure=("book_session", 1),
                      hops=3, description="the concierge model asks the treatment planner about the previous "
                                          "guest, so the plan booked names another guest."),
    "sauna_trunc": dict(kind="truncated_result", root=("check_availability", 1), failure=("book_session", 1), hops=2,
                        description="check_availability returns only the first page of slots, so the concierge "
                                    "books a slot outside the guest's window."),
    "sauna_ctx": dict(kind="context_pollution", root=("recall_notes", 1), failure=("book_session", 1), hops=4,
                      description="recall_notes mixes in the previous guest's notes, so the planner schedules a "
                                  "95 C sauna that the medical rule forbids."),
    "sauna_plan": dict(kind="plan_error", root=("generation gpt-4o-mini", 6), failure=("book_session", 1), hops=3,
                       description="the planner model puts the massage before the heat session, and the booking "
                                   "system refuses the sequence."),
    "sauna_drift": dict(kind="format_drift", root=("price_booking", 1), failure=("book_session", 1), hops=2,
                        description="price_booking returns the amount as a localised string, and the booking API "
                                    "rejects the amount field."),
}


def _outs(messages):
    out = []
    for m in messages:
        if m.get("role") == "tool":
            try:
                out.append(json.loads(m["content"]))
            except (ValueError, TypeError):
                out.append({"text": m.get("content")})
    return out


def _m(t):
    h, m = t.split(":")
    return int(h) * 60 + int(m)


def policy(messages, tools):
    system = messages[0]["content"]
    user = next(m["content"] for m in messages if m.get("role") == "user")
    req = json.loads(user)
    outs = _outs(messages)
    if system.startswith("Treatment planner"):
        if not outs:
            return [("therapist_roster", {"date": req["date"]})]
        temp = 60
        for note in req["notes"]:
            if "sauna at" in note:
                temp = int(note.split("sauna at ")[1].split(" ")[0])
        slot = req["slot"]
        after = f"{(_m(slot) + 45) // 60:02d}:{(_m(slot) + 45) % 60:02d}"
        plan = [{"treatment": "sauna", "temp_c": temp, "at": slot},
                {"treatment": "massage", "therapist": outs[0]["therapists"][0], "at": after}]
        if active("sauna_plan"):
            plan = [{**plan[1], "at": slot}, {**plan[0], "at": after}]
        return json.dumps({"guest": req["guest"], "plan": plan})
    n = len(outs)
    if n == 0:
        return [("member_lookup", {"guest": req["guest"]})]
    if n == 1:
        return [("recall_notes", {"guest": req["guest"]})]
    if n == 2:
        return [("check_availability", {"date": req["date"]})]
    lo, hi = (_m(x) for x in req["window"])
    free = outs[2]["slots"]
    slot = next((s for s in free if lo <= _m(s) <= hi - 60), free[-1])
    if n == 3:
        guest = req["prior_guest"] if active("sauna_sub") else req["guest"]
        ask = {"guest": guest, "date": req["date"], "slot": slot, "notes": outs[1]["notes"]}
        return [("treatment_planner", {"input": json.dumps(ask)})]
    plan = outs[3]
    if n == 4:
        return [("price_booking", {"treatments": [p["treatment"] for p in plan["plan"]], "tier": outs[0]["tier"]})]
    if n == 5:
        return [("book_session", {"guest": req["guest"], "date": req["date"], "slot": slot,
                                  "plan_json": json.dumps(plan), "amount": str(outs[4]["amount"])})]
    return "Booked."


@function_tool
def member_lookup(guest: str) -> str:
    """Look up a spa member's profile."""
    return json.dumps({"guest": guest, **GUESTS[guest]})


_PREV = {"guest": None}


@function_tool
def recall_notes(guest: str) -> str:
    """Recall the concierge's notes about a guest."""
    notes = list(NOTES[guest])
    if active("sauna_ctx"):
        notes += NOTES["G-17"]
    return json.dumps({"guest": guest, "notes": notes})


@function_tool
def check_availability(date: str) -> str:
    """Free session slots on a date."""
    free = SLOTS[:4] if active("sauna_trunc") else SLOTS
    return json.dumps({"date": date, "slots": free})


@function_tool
def therapist_roster(date: str) -> str:
    """Therapists on shift on a date."""
    return json.dumps({"date": date, "therapists": ["Ingrid", "Paavo"]})


@function_tool
def price_booking(treatments: list[str], tier: str) -> str:
    """Price a list of treatments for a membership tier."""
    total = sum(PRICES[t] for t in treatments) * (0.85 if tier == "gold" else 1.0)
    amount = f"EUR {total:.2f}".replace(".", ",") if active("sauna_drift") else round(total, 2)
    return json.dumps({"amount": amount, "currency": "EUR"})


class BookingRejected(Exception):
    pass


@function_tool(failure_error_function=None)
def book_session(guest: str, date: str, slot: str, plan_json: str, amount: str) -> str:
    """Book the spa session."""
    plan = json.loads(plan_json)
    try:
        value = float(amount)
    except ValueError:
        raise BookingRejected(f'HTTP 400 {{"field": "amount", "error": "expected a number, got {amount!r}"}}') from None
    req = next(v for v in INPUTS.values() if v["guest"] == guest and v["date"] == date)
    if plan["guest"] != guest:
        raise BookingRejected(f'HTTP 409 {{"error": "treatment plan is for guest {plan["guest"]}, booking is for {guest}"}}')
    lo, hi = req["window"]
    if not (_m(lo) <= _m(slot) <= _m(hi) - 60):
        raise BookingRejected(f'HTTP 422 {{"error": "slot {slot} outside requested window {lo}-{hi}"}}')
    first = plan["plan"][0]
    if first["treatment"] != "sauna":
        raise BookingRejected(f'HTTP 422 {{"error": "{first["treatment"]} at {first["at"]} precedes the heat session; '
                              f'heat must come first"}}')
    if GUESTS[guest]["medical"] and first["temp_c"] > 70:
        raise BookingRejected(f'HTTP 422 {{"error": "heat session at {first["temp_c"]} C not permitted for guest '
                              f'{guest} with a medical flag; maximum 70 C"}}')
    return json.dumps({"booking": f"SPA-{guest[2:]}-{slot.replace(':', '')}", "amount": value})


def record(base_url: str, inp: dict, path: str) -> None:
    client = AsyncOpenAI(base_url=base_url, api_key="sk-local-test", max_retries=0)
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    planner = Agent(name="treatment_planner_agent", model=model, tools=[therapist_roster],
                    instructions="Treatment planner: build the guest's sauna and massage sequence.")
    concierge = Agent(
        name="spa_concierge", model=model,
        instructions="Spa concierge: look up the guest, plan treatments, price and book the session.",
        tools=[member_lookup, recall_notes, check_availability,
               planner.as_tool(tool_name="treatment_planner", tool_description="Plan a guest's treatments."),
               price_booking, book_session])
    set_trace_processors([TrajdebugProcessor(path=path, name=AGENT, task=f"spa booking for {inp['guest']}")])
    try:
        asyncio.run(Runner.run(concierge, json.dumps(inp), max_turns=14, run_config=RunConfig(workflow_name=AGENT)))
    except Exception:
        pass
