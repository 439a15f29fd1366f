"""Hammam Nour: the booking desk, a LangGraph StateGraph with ChatOpenAI (recorded by TrajdebugTracer).

Shape: intake model + JSON parse inside the node, a conditional router (solo / group), a slot lookup
tool, price and guest-note tools, an itinerary model, then room holds, a card deposit and a final
confirmation node.  State lives in the graph's state.  ~14-20 steps.
"""

from __future__ import annotations

import json
from typing import TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from suite_common import last_user, payload_after, system_of

NAME = "hammam-nour-desk"
ROUTE = "langgraph"
DOMAIN = "hammam bookings"
SHAPE = "graph: intake(model+parse) -> router (solo or group) -> slots tool -> prices tool -> notes tool -> itinerary model -> hold tool -> deposit tool -> confirm"

GROUP_TO_SOLO = False
KEEP_FIRST_TREATMENT = False
SLOTS_IGNORE_DATE = False
LAST_SEASON_TARIFF = False
NOTES_OF_PREVIOUS_GUEST = False

TREATMENTS = {"steam": 25, "kese scrub": 30, "savon noir wrap": 35, "foam massage": 45, "rhassoul mask": 28, "argan massage": 60}
ROOMS = {"solo": ["hararet-1", "hararet-2"], "group": ["sicaklik"]}
BOOKED = {("2026-12-12", "10:00"): ["hararet-1"], ("2026-12-12", "15:00"): ["sicaklik"], ("2026-12-13", "11:00"): ["hararet-2"],
          ("2026-12-06", "10:00"): [], ("2026-12-06", "11:00"): ["hararet-1"], ("2026-12-06", "15:00"): ["hararet-1", "hararet-2"]}
NOTES = {
    "Amira Haddad": [{"guest": "Amira Haddad", "note": "prefers a female therapist", "start": "10:00"}],
    "Jonas Berg": [{"guest": "Jonas Berg", "note": "first visit", "start": "14:00"}],
    "Leila Farouk": [{"guest": "Leila Farouk", "note": "hen party lead", "start": "15:00"}],
    "Tomas Ruiz": [{"guest": "Tomas Ruiz", "note": "knee injury, no hot stone", "start": "11:00"}],
    "Nadia Chen": [{"guest": "Nadia Chen", "note": "returning guest", "start": "15:00"}],
}
INPUTS = [
    "Hi, Amira Haddad here. One person on 2026-12-12 at 10:00, steam and kese scrub please. Deposit 11 EUR paid.",
    "Jonas Berg, just me, 2026-12-13 at 14:00: steam, foam massage and rhassoul mask. I paid 19.60 EUR deposit.",
    "Leila Farouk booking for 6 of us on 2026-12-12 at 15:00? No wait, make it 2026-12-13 at 15:00. Steam and savon noir wrap each. Deposit 72 EUR.",
    "Tomas Ruiz, 1 person, 2026-12-13 at 11:00, kese scrub and argan massage. Deposit 18 EUR sent.",
    "Nadia Chen and a friend, 2 people, 2026-12-12 at 15:00, steam and foam massage both. Deposit 28 EUR.",
]
CASES = [
    {"id": "zzzc-hammam-route", "input": 2, "switch": "GROUP_TO_SOLO", "fault_kind": "wrong_routing",
     "root": {"name": "route_party", "occurrence": 1},
     "failure": {"name": "hold_rooms", "occurrence": 1},
     "description": "The desk's router sends Leila Farouk's party of six down the solo path, so only single hararet rooms are looked up for a group."},
    {"id": "zzzc-hammam-treatments", "input": 1, "switch": "KEEP_FIRST_TREATMENT", "fault_kind": "lossy_parsing",
     "root": {"name": "intake", "occurrence": 1},
     "failure": {"name": "take_deposit", "occurrence": 1},
     "description": "Intake parses the model's list of treatments but keeps only the first, steam, so Jonas Berg's booking is priced at 25 EUR against a 19.60 EUR deposit."},
    {"id": "zzzc-hammam-slots", "input": 3, "switch": "SLOTS_IGNORE_DATE", "fault_kind": "tool_ignores_argument",
     "root": {"name": "check_rooms", "occurrence": 1},
     "failure": {"name": "hold_rooms", "occurrence": 1},
     "description": "The room lookup answers for today, 2026-12-06, whatever date it is asked, and offers hararet-2, which is taken on 2026-12-13 at 11:00."},
    {"id": "zzzc-hammam-tariff", "input": 0, "switch": "LAST_SEASON_TARIFF", "fault_kind": "stale_data",
     "root": {"name": "price_list", "occurrence": 1},
     "failure": {"name": "take_deposit", "occurrence": 1},
     "description": "The price lookup serves the 2025 winter tariff T-2025W, which the card terminal no longer accepts for a December 2026 booking."},
    {"id": "zzzc-hammam-notes", "input": 4, "switch": "NOTES_OF_PREVIOUS_GUEST", "fault_kind": "context_pollution",
     "root": {"name": "guest_notes", "occurrence": 1},
     "failure": {"name": "confirm", "occurrence": 1},
     "description": "The guest-note lookup for Nadia Chen returns Tomas Ruiz's note with its 11:00 start, and the itinerary built from it starts outside Nadia's 15:00 slot."},
]


# ---------------------------------------------------------------- the fake model's behaviour
def policy(request):
    system = system_of(request)
    text = last_user(request)
    if system.startswith("Extract the booking"):
        import re

        guest = re.match(r"(?:Hi, )?([A-Z][a-z]+ [A-Z][a-z]+)", text).group(1)
        dates = re.findall(r"(\d{4}-\d{2}-\d{2}) at (\d{2}:\d{2})", text)
        party = re.search(r"(\d+) (?:of us|people|person)", text)
        party = int(party.group(1)) if party else (2 if "and a friend" in text else 1)
        treatments = [t for t in TREATMENTS if t in text.lower()]
        deposit = float(re.search(r"([\d.]+) EUR", text).group(1))
        return json.dumps({"guest": guest, "party": party, "date": dates[-1][0], "time": dates[-1][1],
                           "treatments": treatments, "deposit_eur": deposit})
    if system.startswith("Write the visit itinerary"):
        booking = payload_after(text, "Booking:")
        notes = payload_after(text, "Guest notes:")
        start = notes[0]["start"] if notes else booking["time"]
        h, m = map(int, start.split(":"))
        steps = []
        for i, t in enumerate(booking["treatments"]):
            steps.append({"at": f"{h + i:02d}:{m:02d}", "treatment": t})
        return json.dumps({"guest": booking["guest"], "itinerary": steps})
    return "Sorry, I handle hammam bookings only."


# ---------------------------------------------------------------- tools
@tool
def check_rooms(date: str, time: str, party: int) -> dict:
    """Free treatment rooms at a date and time for a party size."""
    asked = "2026-12-06" if SLOTS_IGNORE_DATE else date
    kind = "group" if party > 2 else "solo"
    taken = BOOKED.get((asked, time), [])
    return {"date": date, "time": time, "free": [r for r in ROOMS[kind] if r not in taken]}


@tool
def price_list(date: str) -> dict:
    """The hammam's tariff in force on a date."""
    if LAST_SEASON_TARIFF:
        return {"tariff": "T-2025W", "prices": {k: v - 3 for k, v in TREATMENTS.items()}}
    return {"tariff": "T-2026W", "prices": dict(TREATMENTS)}


@tool
def guest_notes(guest: str) -> list:
    """Notes kept on a guest from earlier visits."""
    if NOTES_OF_PREVIOUS_GUEST:
        return NOTES["Tomas Ruiz"] + NOTES[guest]
    return NOTES[guest]


@tool
def hold_rooms(date: str, time: str, rooms: list, party: int) -> dict:
    """Put a hold on rooms in the room book."""
    taken = BOOKED.get((date, time), [])
    clash = [r for r in rooms if r in taken]
    if clash:
        raise RuntimeError(f"room book: {clash[0]} already held on {date} at {time}")
    seats = sum(6 if r in ROOMS["group"] else 1 for r in rooms)
    if seats < party:
        raise RuntimeError(f"room book: {seats} seat(s) in {rooms} for a party of {party}")
    return {"held": rooms, "date": date, "time": time}


@tool
def take_deposit(tariff: str, total_eur: float, deposit_eur: float) -> dict:
    """Match the guest's deposit against the booking's total on the card terminal."""
    if tariff != "T-2026W":
        raise ValueError(f"card terminal: tariff {tariff} is not valid for bookings after 2026-09-30")
    if abs(deposit_eur - round(0.2 * total_eur, 2)) > 0.01:
        raise ValueError(f"card terminal: deposit {deposit_eur:.2f} EUR is not 20% of {total_eur:.2f} EUR")
    return {"captured": deposit_eur, "balance_due": round(total_eur - deposit_eur, 2)}


# ---------------------------------------------------------------- graph
class Desk(TypedDict, total=False):
    request: str
    booking: dict
    rooms: dict
    tariff: dict
    notes: list
    itinerary: dict
    held: dict
    payment: dict


def build(llm):
    def intake(state: Desk) -> dict:
        reply = llm.invoke([SystemMessage("Extract the booking as JSON: guest, party, date, time, treatments, deposit_eur."),
                            HumanMessage(state["request"])])
        booking = json.loads(reply.content)
        if KEEP_FIRST_TREATMENT:
            booking["treatments"] = booking["treatments"][:1]
        return {"booking": booking}

    def route_party(state: Desk) -> str:
        if GROUP_TO_SOLO:
            return "solo_slots"
        return "group_slots" if state["booking"]["party"] > 2 else "solo_slots"

    def solo_slots(state: Desk) -> dict:
        b = state["booking"]
        found = check_rooms.invoke({"date": b["date"], "time": b["time"], "party": 1})
        return {"rooms": {"kind": "solo", "free": found["free"][: max(1, b["party"])]}}

    def group_slots(state: Desk) -> dict:
        b = state["booking"]
        found = check_rooms.invoke({"date": b["date"], "time": b["time"], "party": b["party"]})
        return {"rooms": {"kind": "group", "free": found["free"][:1]}}

    def prices(state: Desk) -> dict:
        return {"tariff": price_list.invoke({"date": state["booking"]["date"]})}

    def notes(state: Desk) -> dict:
        return {"notes": guest_notes.invoke({"guest": state["booking"]["guest"]})}

    def itinerary(state: Desk) -> dict:
        reply = llm.invoke([SystemMessage("Write the visit itinerary as JSON from the booking and the guest notes."),
                            HumanMessage(f"Booking: {json.dumps(state['booking'])}\nGuest notes: {json.dumps(state['notes'])}")])
        return {"itinerary": json.loads(reply.content)}

    def hold(state: Desk) -> dict:
        b = state["booking"]
        return {"held": hold_rooms.invoke({"date": b["date"], "time": b["time"], "rooms": state["rooms"]["free"], "party": b["party"]})}

    def deposit(state: Desk) -> dict:
        b, t = state["booking"], state["tariff"]
        total = sum(t["prices"][x] for x in b["treatments"]) * b["party"]
        return {"payment": take_deposit.invoke({"tariff": t["tariff"], "total_eur": float(total), "deposit_eur": b["deposit_eur"]})}

    def confirm(state: Desk) -> dict:
        b, plan = state["booking"], state["itinerary"]
        first = plan["itinerary"][0]["at"]
        if first < b["time"] or plan["guest"] != b["guest"]:
            raise ValueError(f"itinerary for {plan['guest']} starts at {first}, outside the booked {b['date']} {b['time']} slot")
        return {"itinerary": {**plan, "confirmed": True}}

    g = StateGraph(Desk)
    for name, fn in [("intake", intake), ("solo_slots", solo_slots), ("group_slots", group_slots), ("prices", prices),
                     ("notes", notes), ("itinerary", itinerary), ("hold", hold), ("deposit", deposit), ("confirm", confirm)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_conditional_edges("intake", route_party, ["solo_slots", "group_slots"])
    g.add_edge("solo_slots", "prices")
    g.add_edge("group_slots", "prices")
    for a, b in [("prices", "notes"), ("notes", "itinerary"), ("itinerary", "hold"), ("hold", "deposit"), ("deposit", "confirm")]:
        g.add_edge(a, b)
    g.add_edge("confirm", END)
    return g.compile()


_GRAPH = {}


def run_once(server, inp: str, path: str) -> None:
    key = server.base_url
    if key not in _GRAPH:
        llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
        _GRAPH.clear()
        _GRAPH[key] = build(llm)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp)
    try:
        _GRAPH[key].invoke({"request": inp}, config={"callbacks": [tracer]})
    except (ValueError, RuntimeError):
        pass
