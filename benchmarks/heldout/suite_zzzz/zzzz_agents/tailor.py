"""Tailoring shop alterations (openai_agents route): a ticket -> triage agent (garment record and the
customer's session notes, in parallel) -> hand-off to the trouser or the jacket tailor (measurements and
calendar in parallel, pricing, work order)."""

from __future__ import annotations

import re
from datetime import date, timedelta
from pathlib import Path

from agents import Agent, function_tool

from trajdebug.testing import Reply, tool_call

from ._sdk import calls_and_outputs, first_user, run_workflow


NAME = "tailor-alterations"
ROUTE = "openai_agents"
DOMAIN = "tailoring shop, alteration tickets"
SHAPE = "Agents SDK: triage agent with parallel tool calls, hand-off to one of two specialist agents, each with parallel lookups, pricing and a work-order tool that validates"
SWITCH = None


def _switched(name: str) -> bool:
    return SWITCH == name


INPUTS = [
    {"task": "ticket A-501", "message": "Ticket A-501: customer K-12 would like the hem of the trousers taken up. Fitting by 2026-04-10."},
    {"task": "ticket A-502", "message": "Ticket A-502: customer K-40 wants the jacket sleeves shortened. Fitting by 2026-04-14."},
    {"task": "ticket A-503", "message": "Ticket A-503: customer K-33 asks for the trousers of the morning suit to be taken up. Fitting by 2026-04-17."},
    {"task": "ticket A-504", "message": "Ticket A-504: customer K-12 wants the overcoat sleeves shortened. Fitting by 2026-04-22."},
    {"task": "ticket A-505", "message": "Ticket A-505: customer K-27, pleated skirt, hem to be taken up. Fitting by 2026-04-09."},
]

GARMENTS = {
    "A-501": {"garment": "wool trousers", "fabric": "worsted wool", "customer": "K-12", "work": "hem", "desk": "trouser"},
    "A-502": {"garment": "linen jacket", "fabric": "linen", "customer": "K-40", "work": "sleeve", "desk": "jacket"},
    "A-503": {"garment": "morning suit trousers", "fabric": "striped cashmere", "customer": "K-33", "work": "hem", "desk": "trouser"},
    "A-504": {"garment": "overcoat", "fabric": "melton wool", "customer": "K-12", "work": "sleeve", "desk": "jacket"},
    "A-505": {"garment": "pleated skirt", "fabric": "crepe", "customer": "K-27", "work": "hem", "desk": "trouser"},
}
MEASURES = {  # (customer, work) -> (current length cm, wanted length cm)
    ("K-12", "hem"): (84.0, 80.5), ("K-40", "sleeve"): (65.0, 62.0), ("K-33", "hem"): (86.0, 82.0),
    ("K-12", "sleeve"): (67.5, 64.0), ("K-27", "hem"): (70.0, 64.0),
}
PRICES = {("hem", "wool trousers"): 18.0, ("hem", "morning suit trousers"): 26.0, ("hem", "pleated skirt"): 32.0,
          ("sleeve", "linen jacket"): 35.0, ("sleeve", "overcoat"): 48.0}
NOTES = {"K-12": ["prefers a light break on trousers"], "K-40": ["K-40: sleeve to show 1 cm of shirt cuff"],
         "K-33": ["wedding on 2026-04-25"], "K-27": ["pleats must stay pressed"]}
TAILORS = {"trouser": "Ana", "jacket": "Bernard"}
CLOSED = {6}  # Sunday


# ---- model -------------------------------------------------------------------------------------------

def brain(request):
    instructions = request.body.get("instructions") or ""
    done = calls_and_outputs(request)
    got = {n: o for n, _, o in done}
    text = first_user(request)
    ticket = re.search(r"A-\d+", text).group(0)
    wanted = re.search(r"\d{4}-\d{2}-\d{2}", text).group(0)
    if instructions.startswith("You triage"):
        if "garment_record" not in got:
            customer = re.search(r"K-\d+", text).group(0)
            return Reply(tool_calls=(tool_call("garment_record", {"ticket_id": ticket}), tool_call("session_notes", {"customer_id": customer})))
        garment = got["garment_record"]["garment"]
        desk = "jacket" if any(w in garment for w in ("jacket", "coat")) else "trouser"
        if _switched("suit-word") and "suit" in garment:
            desk = "jacket"
        return Reply(tool_calls=(tool_call(f"transfer_to_{desk}_tailor", {}),))
    record = got["garment_record"]
    notes = got["session_notes"]["notes"]
    desk = "jacket" if instructions.startswith("You are the jacket") else "trouser"
    work = "sleeve" if desk == "jacket" else "hem"
    if "customer_measurements" not in got:
        return Reply(tool_calls=(tool_call("customer_measurements", {"customer_id": record["customer"], "work": work}),
                                 tool_call("tailor_calendar", {"tailor": TAILORS[desk], "until": wanted})))
    m = got["customer_measurements"]
    amount = round(m["current_cm"] - m["wanted_cm"], 1)
    for note in notes:  # a note that names a length for this work overrides the measurement
        hit = re.match(r"(K-\d+): (\w+) to be (\d+(?:\.\d)?) cm", note)
        if hit and hit.group(2) == work:
            amount = round(m["current_cm"] - float(hit.group(3)), 1)
    if "price_alteration" not in got:
        return Reply(tool_calls=(tool_call("price_alteration", {"work": work, "garment": record["garment"], "amount_cm": amount}),))
    if "create_work_order" not in got:
        day = got["tailor_calendar"]["free_days"][-1]
        return Reply(tool_calls=(tool_call("create_work_order", {"ticket_id": ticket, "desk": desk, "work": work, "amount_cm": amount,
                                                                 "price_eur": got["price_alteration"]["price_eur"], "fitting": day}),))
    order = got["create_work_order"]
    return f"Work order {order['order']} created: {work} by {amount} cm, fitting {order['fitting']} with {TAILORS[desk]}."


# ---- tools -------------------------------------------------------------------------------------------

@function_tool
def garment_record(ticket_id: str) -> dict:
    """The garment and customer behind an alteration ticket."""
    g = GARMENTS[ticket_id]
    return {"ticket": ticket_id, "garment": g["garment"], "fabric": g["fabric"], "customer": g["customer"]}


@function_tool
def session_notes(customer_id: str) -> dict:
    """Notes the counter staff keep per customer."""
    notes = list(NOTES[customer_id])
    if _switched("shared-notes"):
        notes.append("K-40: sleeve to be 60.5 cm")
    return {"customer": customer_id, "notes": notes}


@function_tool
def customer_measurements(customer_id: str, work: str) -> dict:
    """The customer's measured current and wanted lengths for a piece of work."""
    try:
        if _switched("measure-gap"):
            raise KeyError((customer_id, work))
        current, wanted = MEASURES[(customer_id, work)]
    except KeyError:
        current, wanted = (84.0, 81.0) if work == "hem" else (66.0, 64.0)
    return {"customer": customer_id, "work": work, "current_cm": current, "wanted_cm": wanted}


@function_tool
def tailor_calendar(tailor: str, until: str) -> dict:
    """The tailor's free fitting days from tomorrow up to a date."""
    end = date.fromisoformat(until)
    start = end - timedelta(days=6)
    days = [start + timedelta(days=i) for i in range((end - start).days + (2 if _switched("calendar-end") else 1))]
    return {"tailor": tailor, "free_days": [d.isoformat() for d in days if d.weekday() not in CLOSED]}


@function_tool
def price_alteration(work: str, garment: str, amount_cm: float) -> dict:
    """List price of a piece of work on a garment."""
    key = (work, garment)
    if _switched("price-garment"):
        key = next(k for k in PRICES if k[0] == work)
    price = PRICES.get(key, {"hem": 20.0, "sleeve": 38.0}[work])  # the standard rate for a garment not on the list
    return {"work": work, "garment": garment, "amount_cm": amount_cm, "price_eur": price}


@function_tool(failure_error_function=None)
def create_work_order(ticket_id: str, desk: str, work: str, amount_cm: float, price_eur: float, fitting: str) -> dict:
    """Create the work order in the workroom system."""
    g = GARMENTS[ticket_id]
    if desk != g["desk"] or work != g["work"]:
        raise ValueError(f"workroom: {ticket_id} is a {g['work']} on {g['garment']}, not a {work} job for the {desk} desk")
    current, wanted = MEASURES[(g["customer"], work)]
    if abs(amount_cm - (current - wanted)) > 0.25:
        raise ValueError(f"workroom: {ticket_id} measured {current} -> {wanted} cm, the order takes up {amount_cm} cm")
    if price_eur != PRICES[(work, g["garment"])]:
        raise ValueError(f"workroom: {ticket_id} priced {price_eur:.2f} EUR, the list price for {work} on {g['garment']} is {PRICES[(work, g['garment'])]:.2f} EUR")
    wanted_by = date.fromisoformat(re.search(r"\d{4}-\d{2}-\d{2}", next(i["message"] for i in INPUTS if i["task"].endswith(ticket_id))).group(0))
    if date.fromisoformat(fitting) > wanted_by:
        raise ValueError(f"workroom: fitting {fitting} is after the customer's date {wanted_by}")
    return {"order": f"WO-{ticket_id[2:]}", "fitting": fitting}


def agent(model: str) -> Agent:
    common = [customer_measurements, tailor_calendar, price_alteration, create_work_order]
    trousers = Agent(name="trouser_tailor", model=model, tools=common,
                     instructions="You are the trouser tailor: measure, find a fitting day, price, create the work order.")
    jackets = Agent(name="jacket_tailor", model=model, tools=common,
                    instructions="You are the jacket tailor: measure, find a fitting day, price, create the work order.")
    return Agent(name="triage", model=model, tools=[garment_record, session_notes], handoffs=[trousers, jackets],
                 instructions="You triage alteration tickets: read the garment and the notes, hand off to the right tailor.")


def record(inp: dict, out: Path, ctx) -> None:
    run_workflow(agent(ctx.model), inp["message"], NAME, inp["task"], out, ctx)


CASES = [
    {"id": "tailor_1", "input": 2, "switch": "suit-word", "kind": "wrong_routing",
     "root": ("response", 2), "failure": ("create_work_order", 1),
     "description": "The triage model hands the morning-suit trousers to the jacket tailor because of the word suit, and the workroom refuses a sleeve job on trousers."},
    {"id": "tailor_2", "input": 0, "switch": "calendar-end", "kind": "off_by_one",
     "root": ("tailor_calendar", 1), "failure": ("create_work_order", 1),
     "description": "The tailor's calendar lists free days one past the date it was asked for, the tailor books that last day, and the workroom refuses a fitting after the customer's date."},
    {"id": "tailor_3", "input": 3, "switch": "price-garment", "kind": "tool_ignores_argument",
     "root": ("price_alteration", 1), "failure": ("create_work_order", 1),
     "description": "The price lookup ignores the garment and answers the linen-jacket sleeve price for an overcoat, and the workroom refuses the price."},
    {"id": "tailor_4", "input": 1, "switch": "shared-notes", "kind": "context_pollution",
     "root": ("session_notes", 1), "failure": ("create_work_order", 1),
     "description": "The counter notes carry a sleeve length written for another garment of the same customer, the tailor takes it over the measurement, and the workroom refuses the length."},
    {"id": "tailor_5", "input": 4, "switch": "measure-gap", "kind": "swallowed_error",
     "root": ("customer_measurements", 1), "failure": ("create_work_order", 1),
     "description": "The measurement lookup swallows a failed read and answers stock lengths, so the skirt hem comes out 3 cm instead of 6 and the workroom refuses the order."},
]
