"""Canal boat hire: takes a holiday booking through to a confirmed hire (langgraph route: StateGraph + ChatOpenAI,
recorded with trajdebug's LangChain tracer, JSONL)."""

from __future__ import annotations

import json
import re
from typing import Any, TypedDict

import kit
from common import chat_brain
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

NAME, ROUTE, DOMAIN = "canal-boat-hire", "langgraph", "a canal boat hire's bookings"
SHAPE = "intake chain (prompt, llm, JSON parser), fleet retriever + hold tool (retried), crew routing (conditional edge), cruise-planning sub-graph (llm, segment tool loop, day schedule), tariff tool, confirmation llm, validator node"

FLEET = [
    {"boat": "Kingfisher", "base": "Hillmorton", "berths": 6}, {"boat": "Kingfisher II", "base": "Braunston", "berths": 4},
    {"boat": "Heron", "base": "Hillmorton", "berths": 4}, {"boat": "Otter", "base": "Braunston", "berths": 8},
    {"boat": "Dabchick", "base": "Stoke Bruerne", "berths": 2}, {"boat": "Moorhen", "base": "Stoke Bruerne", "berths": 6},
    {"boat": "Wagtail", "base": "Braunston", "berths": 4},
]
SEGMENTS = {  # (from, to) -> (cruising hours, locks)
    ("Hillmorton", "Braunston"): (3.5, 3), ("Braunston", "Napton"): (4.0, 0), ("Napton", "Hillmorton"): (5.5, 3),
    ("Napton", "Fenny Compton"): (3.0, 9), ("Fenny Compton", "Napton"): (3.0, 9), ("Napton", "Braunston"): (4.0, 0),
    ("Stoke Bruerne", "Cosgrove"): (4.0, 7), ("Cosgrove", "Wolverton"): (2.5, 1), ("Wolverton", "Stoke Bruerne"): (5.0, 8),
    ("Hillmorton", "Rugby"): (2.0, 0), ("Rugby", "Hillmorton"): (2.0, 0), ("Braunston", "Hillmorton"): (3.5, 3),
    ("Rugby", "Braunston"): (5.5, 3),
}
PLANS = {
    ("Hillmorton", 3): ["Hillmorton", "Braunston", "Napton", "Hillmorton"],
    ("Braunston", 4): ["Braunston", "Napton", "Fenny Compton", "Napton", "Braunston"],
    ("Stoke Bruerne", 3): ["Stoke Bruerne", "Cosgrove", "Wolverton", "Stoke Bruerne"],
    ("Hillmorton", 2): ["Hillmorton", "Rugby", "Hillmorton"],
    ("Braunston", 3): ["Braunston", "Hillmorton", "Rugby", "Braunston"],
}
RATES = {2: 95.0, 4: 120.0, 6: 150.0, 8: 185.0}  # per night by berths
PEAK_MONTHS = {"07": 1.25, "08": 1.25}
BOOKINGS = {
    "CB-301": {"base": "Hillmorton", "party": 5, "start": "2026-07-04", "nights": 3, "experience": "experienced"},
    "CB-302": {"base": "Braunston", "party": 4, "start": "2026-05-09", "nights": 4, "experience": "first time"},
    "CB-303": {"base": "Stoke Bruerne", "party": 2, "start": "2026-06-13", "nights": 3, "experience": "some"},
    "CB-304": {"base": "Hillmorton", "party": 3, "start": "2026-09-05", "nights": 2, "experience": "experienced"},
    "CB-305": {"base": "Braunston", "party": 6, "start": "2026-08-15", "nights": 3, "experience": "some"},
}
INPUTS = [
    "Booking CB-301: five of us, boating for years, from Hillmorton on 4 July 2026 for 3 nights.",
    "Booking CB-302: family of four, our first time on a narrowboat, Braunston, 9 May 2026, 4 nights.",
    "Booking CB-303: two people, done a day boat before, Stoke Bruerne 13 June 2026, 3 nights.",
    "Booking CB-304: three experienced boaters, Hillmorton, 5 September 2026, 2 nights.",
    "Booking CB-305: six friends, a couple have hired before, Braunston 15 August 2026 for 3 nights.",
]
CASES = [
    {"case": "zzp_canal_1", "input": 0, "kind": "wrong_retrieval", "root": ("FleetRetriever", 1),
     "failure": ("validate_booking", 1),
     "description": "The fleet search ranks Kingfisher II (a 4-berth Braunston boat) first for a party of five at Hillmorton."},
    {"case": "zzp_canal_2", "input": 1, "kind": "wrong_routing", "root": ("route_by_experience", 1),
     "failure": ("validate_booking", 1),
     "description": "The crew router treats 'first time' as experienced and sends the family to the plain handover, skipping the lock briefing."},
    {"case": "zzp_canal_3", "input": 2, "kind": "off_by_one", "root": ("schedule_days", 1),
     "failure": ("validate_booking", 1),
     "description": "The day scheduler loops over range(1, nights) and packs the last two segments into one 7.5-hour day."},
    {"case": "zzp_canal_4", "input": 3, "kind": "format_drift", "root": ("ChatOpenAI", 2),
     "failure": ("validate_booking", 1),
     "description": "The route model answers its segments under 'legs' instead of 'segments', so the planner reads an empty route."},
    {"case": "zzp_canal_5", "input": 4, "kind": "swallowed_error", "root": ("tariff_lookup", 1),
     "failure": ("validate_booking", 1),
     "description": "The tariff tool catches the season service's timeout and prices an August hire at the standard season rate."},
]


# -- the scripted model ---------------------------------------------------------------------------------

def _extract(text: str) -> str:
    ref = re.search(r"CB-\d+", text).group(0)
    return json.dumps({"ref": ref, **BOOKINGS[ref]})


def _route(text: str) -> str:
    ask = json.loads(text)
    stops = PLANS[(ask["base"], ask["nights"])]
    segs = [{"from": a, "to": b} for a, b in zip(stops, stops[1:])]
    key = "legs" if kit.on("zzp_canal_4") else "segments"
    return json.dumps({key: segs, "turning_point": stops[len(stops) // 2]})


def _confirm(text: str) -> str:
    f = json.loads(text)
    return f"Your narrowboat {f['boat']} is booked from {f['base']} on {f['start']} for {f['nights']} nights. Total GBP {f['total']:.2f}."


BRAIN = chat_brain({"Extract": _extract, "Route": _route, "Confirm": _confirm})


# -- tools ----------------------------------------------------------------------------------------------

class FleetRetriever(BaseRetriever):
    """Boats of the fleet for a query like 'boats at Hillmorton for 5'."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        base, party = re.match(r"boats at (.+) for (\d+)", query).groups()
        party = int(party)
        if kit.on("zzp_canal_1"):  # similarity over the boat listings
            ranked = sorted(FLEET, key=lambda b: (b["boat"] != "Kingfisher II", abs(b["berths"] - party)))[:3]
        else:
            ranked = sorted((b for b in FLEET if b["base"] == base and b["berths"] >= party), key=lambda b: b["berths"])
        return [Document(page_content=f"{b['boat']}: {b['berths']} berths, based at {b['base']}", metadata=b)
                for b in ranked]


_ATTEMPTS = {"hold": 0}


@tool
def hold_boat(boat: str, start: str, nights: int) -> dict:
    """Hold a boat for the hire dates."""
    _ATTEMPTS["hold"] += 1
    if _ATTEMPTS["hold"] == 1:
        raise TimeoutError("fleet booking system busy, try again")
    return {"boat": boat, "start": start, "nights": nights, "hold": f"H-{boat[:3].upper()}-{start[5:7]}{start[8:]}"}


@tool
def book_instructor(boat: str, start: str) -> str:
    """Book an instructor for a lock briefing at the handover."""
    return f"lock briefing booked on {boat} at 13:00 on {start}"


@tool
def send_handover_video(boat: str) -> str:
    """Send the self-guided handover video."""
    return f"handover video sent for {boat}"


@tool
def segment_info(frm: str, to: str) -> dict:
    """Cruising hours and locks of one canal segment."""
    hours, locks = SEGMENTS[(frm, to)]
    return {"from": frm, "to": to, "hours": hours, "locks": locks}


def _season_service(month: str) -> float:
    if kit.on("zzp_canal_5"):
        raise TimeoutError("season service did not answer within 2 s")
    return PEAK_MONTHS.get(month, 1.0)


@tool
def tariff_lookup(berths: int, start: str) -> dict:
    """Nightly rate of a boat size and the season factor for the start date."""
    try:
        factor = _season_service(start[5:7])
    except Exception:
        factor = 1.0
    return {"nightly": RATES[berths], "season_factor": factor, "season": "peak" if factor > 1 else "standard"}


# -- the graph ------------------------------------------------------------------------------------------

class Hire(TypedDict, total=False):
    request: str
    booking: dict
    boat: dict
    hold: dict
    crew_plan: str
    route: dict
    segments: list
    days: list
    price: dict
    letter: str


def build(llm: ChatOpenAI):
    intake_chain = ChatPromptTemplate.from_messages(
        [("system", "Extract: the hire booking as JSON."), ("user", "{request}")]) | llm | JsonOutputParser()
    retriever = FleetRetriever()

    def intake(state: Hire) -> dict:
        return {"booking": intake_chain.invoke({"request": state["request"]})}

    def find_boat(state: Hire) -> dict:
        b = state["booking"]
        docs = retriever.invoke(f"boats at {b['base']} for {b['party']}")
        boat = docs[0].metadata
        hold = hold_boat.with_retry(retry_if_exception_type=(TimeoutError,), stop_after_attempt=3,
                                    wait_exponential_jitter=False).invoke({"boat": boat["boat"], "start": b["start"], "nights": b["nights"]})
        return {"boat": boat, "hold": hold}

    def crew_check(state: Hire) -> dict:
        return {}

    def route_by_experience(state: Hire) -> str:
        exp = state["booking"]["experience"]
        novice = ("none",) if kit.on("zzp_canal_2") else ("none", "first time")
        return "lock_briefing" if exp in novice else "handover"

    def lock_briefing(state: Hire) -> dict:
        return {"crew_plan": book_instructor.invoke({"boat": state["boat"]["boat"], "start": state["booking"]["start"]})}

    def handover(state: Hire) -> dict:
        return {"crew_plan": send_handover_video.invoke({"boat": state["boat"]["boat"]})}

    def propose_route(state: Hire) -> dict:
        b = state["booking"]
        answer = llm.invoke([("system", "Route: a round trip as JSON segments."),
                             ("user", json.dumps({"base": b["base"], "nights": b["nights"]}))])
        data = json.loads(answer.content)
        return {"route": {"segments": data.get("segments", []), "turning_point": data.get("turning_point")}}

    def segment_details(state: Hire) -> dict:
        return {"segments": [segment_info.invoke({"frm": s["from"], "to": s["to"]}) for s in state["route"]["segments"]]}

    def schedule_days(state: Hire) -> dict:
        nights = state["booking"]["nights"]
        day_numbers = list(range(1, nights)) if kit.on("zzp_canal_3") else list(range(1, nights + 1))
        days = [{"day": d, "segments": [], "hours": 0.0} for d in day_numbers]
        for i, seg in enumerate(state["segments"]):
            day = days[min(i, len(days) - 1)]
            day["segments"].append(f"{seg['from']} > {seg['to']}")
            day["hours"] += seg["hours"]
        return {"days": days}

    sub = StateGraph(Hire)
    sub.add_node("propose_route", propose_route)
    sub.add_node("segment_details", segment_details)
    sub.add_node("schedule_days", schedule_days)
    sub.add_edge(START, "propose_route")
    sub.add_edge("propose_route", "segment_details")
    sub.add_edge("segment_details", "schedule_days")
    sub.add_edge("schedule_days", END)
    cruise = sub.compile()

    def price_hire(state: Hire) -> dict:
        b, boat = state["booking"], state["boat"]
        t = tariff_lookup.invoke({"berths": boat["berths"], "start": b["start"]})
        total = round(t["nightly"] * b["nights"] * t["season_factor"], 2)
        return {"price": {"nightly": t["nightly"], "season": t["season"], "nights": b["nights"], "total": total}}

    def compose_confirmation(state: Hire) -> dict:
        b = state["booking"]
        facts = json.dumps({"boat": state["boat"]["boat"], "base": b["base"], "start": b["start"],
                            "nights": b["nights"], "total": state["price"]["total"]})
        return {"letter": llm.invoke([("system", "Confirm: write the hire confirmation."), ("user", facts)]).content}

    def validate_booking(state: Hire) -> dict:
        b, boat, price = state["booking"], state["boat"], state["price"]
        if boat["base"] != b["base"] or boat["berths"] < b["party"]:
            raise ValueError(f"{boat['boat']} ({boat['berths']} berths, {boat['base']}) cannot take {b['party']} "
                             f"from {b['base']}")
        if b["experience"] in ("none", "first time") and "lock briefing" not in state.get("crew_plan", ""):
            raise ValueError(f"crew with experience '{b['experience']}' has no lock briefing booked")
        segs = state["segments"]
        if not segs or segs[0]["from"] != b["base"] or segs[-1]["to"] != b["base"]:
            raise ValueError(f"cruise plan of {len(segs)} segments is not a round trip from {b['base']}")
        for day in state["days"]:
            if day["hours"] > 6.0:
                raise ValueError(f"day {day['day']} has {day['hours']} cruising hours, the limit is 6")
        if len(state["days"]) != b["nights"]:
            raise ValueError(f"cruise plan has {len(state['days'])} cruising days for {b['nights']} nights")
        peak = b["start"][5:7] in PEAK_MONTHS
        if peak != (price["season"] == "peak"):
            raise ValueError(f"hire starting {b['start']} priced at the {price['season']} season")
        expected = round(RATES[boat["berths"]] * b["nights"] * PEAK_MONTHS.get(b["start"][5:7], 1.0), 2)
        if abs(price["total"] - expected) > 0.01:
            raise ValueError(f"hire total GBP {price['total']:.2f}, tariff gives GBP {expected:.2f}")
        return {}

    g = StateGraph(Hire)
    for name, fn in [("intake", intake), ("find_boat", find_boat), ("crew_check", crew_check),
                     ("lock_briefing", lock_briefing), ("handover", handover), ("plan_cruise", cruise),
                     ("price_hire", price_hire), ("compose_confirmation", compose_confirmation),
                     ("validate_booking", validate_booking)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "find_boat")
    g.add_edge("find_boat", "crew_check")
    g.add_conditional_edges("crew_check", route_by_experience, ["lock_briefing", "handover"])
    g.add_edge("lock_briefing", "plan_cruise")
    g.add_edge("handover", "plan_cruise")
    g.add_edge("plan_cruise", "price_hire")
    g.add_edge("price_hire", "compose_confirmation")
    g.add_edge("compose_confirmation", "validate_booking")
    g.add_edge("validate_booking", END)
    return g.compile()


def record(server, inp: str, path: str) -> None:
    server.use(BRAIN)
    _ATTEMPTS["hold"] = 0
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp[:60])
    try:
        build(llm).invoke({"request": inp}, config={"callbacks": [tracer]})
    except ValueError:
        pass
