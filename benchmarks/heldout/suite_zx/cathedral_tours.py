"""Cathedral guided tours: books a guided group tour for a visitor request (LangGraph)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from . import kit
from .common import Case, base_url, run_graph

AGENT, ROUTE, DOMAIN = "cathedral_tours", "langgraph", "cathedral guided tours"
RUN_NAME, MODEL = "cathedral-tour-desk", "tour-desk-4"
SHAPE = "extract (llm+parser) -> plan slots (llm) -> tour search (retriever) -> loop: availability (tool) -> guide sub-graph (roster tool, shortlist) -> rates (tool) -> quote -> book: guide pick (llm), create booking (tool)"

TOURS = [
    {"id": "HIG-1", "title": "Highlights of the Nave and Quire", "tags": "architecture glass nave quire", "steps": 0, "minutes": 60, "rate": 12.0},
    {"id": "TWR-1", "title": "Tower Climb and Bells", "tags": "tower bells architecture views", "steps": 312, "minutes": 90, "rate": 15.0},
    {"id": "CRY-2", "title": "Crypt and Treasury", "tags": "crypt treasury relics silver", "steps": 24, "minutes": 75, "rate": 14.0},
    {"id": "ROF-1", "title": "Roof Walk", "tags": "roof views masons", "steps": 180, "minutes": 80, "rate": 16.0},
    {"id": "CLO-1", "title": "Cloisters and Chapter House", "tags": "cloisters chapter house garden bells", "steps": 0, "minutes": 50, "rate": 10.0},
]
GUIDES = [{"id": "G-101", "lang": "en", "shift": ["09:00", "13:00"]}, {"id": "G-204", "lang": "it", "shift": ["13:00", "18:00"]},
          {"id": "G-311", "lang": "de", "shift": ["12:00", "18:00"]}, {"id": "G-156", "lang": "fr", "shift": ["09:00", "15:00"]},
          {"id": "G-120", "lang": "en", "shift": ["12:00", "18:00"]}, {"id": "G-322", "lang": "es", "shift": ["09:00", "17:00"]}]
EVENSONG = "17:00"

INPUTS = {
    "bologna": "Group of 19 from Bologna, Italian-speaking guide please, on 2027-05-06. Two wheelchair users, so step-free only. Keen on architecture and the bells.",
    "munich": "Party of 24 from Munich, German-speaking guide, on 2027-05-08. No access needs. Interested in the crypt and treasury.",
    "lyon": "School group of 31 from Lyon, French-speaking guide, on 2027-05-11. No access needs. The roof and the views, please.",
    "leeds": "Group of 12 from Leeds, English-speaking guide, on 2027-05-12. One visitor uses a walker, step-free only. Stained glass and the quire.",
    "seville": "Party of 16 from Seville, Spanish-speaking guide, on 2027-05-13. No access needs. Crypt and silver.",
    "york": "Group of 9 from York, English-speaking guide, on 2027-05-14. Step-free only. Cloisters and garden.",
}
REFS = ["lyon", "leeds", "seville", "york"]

CASES = [
    Case("zx_cath_1", "cath.guide_pick", "hallucinated_value", "munich", ("ChatOpenAI", 3, "llm"),
         ("create_booking", 1), "The booking model assigns guide G-317, who is on no roster."),
    Case("zx_cath_2", "cath.access_filter", "wrong_retrieval", "bologna", ("tour_search", 1, "retrieval"),
         ("create_booking", 1), "The tour search drops the step-free filter and ranks the tower climb first for a group with wheelchair users."),
    Case("zx_cath_3", "cath.slot_language", "tool_ignores_argument", "bologna", ("check_availability", 1, "tool"),
         ("create_booking", 1), "check_availability ignores the language and reports the morning slot free because an English guide is on shift."),
    Case("zx_cath_4", "cath.slot_plan", "plan_error", "munich", ("ChatOpenAI", 2, "llm"),
         ("create_booking", 1), "The slot planner proposes only a late-afternoon slot whose tour runs into Choral Evensong."),
    Case("zx_cath_5", "cath.free_places", "off_by_one", "munich", ("compute_quote", 1, "other"),
         ("create_booking", 1), "compute_quote grants one free leader place too many (size // 10 + 1)."),
]


def _mins(t: str) -> int:
    h, m = t.split(":")
    return int(h) * 60 + int(m)


def _on_shift(g: dict, t: str, minutes: int) -> bool:
    return _mins(g["shift"][0]) <= _mins(t) and _mins(t) + minutes <= _mins(g["shift"][1])


def policy(messages: list[dict]) -> str:
    system, user = messages[0]["content"], messages[-1]["content"]
    if system.startswith("Extract"):
        lang = {"Italian": "it", "German": "de", "French": "fr", "English": "en", "Spanish": "es"}
        return json.dumps({"group_size": int(re.search(r"of (\d+)", user).group(1)),
                           "date": re.search(r"\d{4}-\d\d-\d\d", user).group(), "language": lang[re.search(r"(\w+)-speaking", user).group(1)],
                           "step_free": "step-free only" in user, "interests": user.split(". ")[-1].rstrip(".")})
    if system.startswith("Plan"):
        return json.dumps({"slots": ["16:30"] if kit.active("cath.slot_plan") else ["10:00", "14:00"]})
    roster = json.loads(user.split("ROSTER:", 1)[1].split("\n")[0])
    pick = "G-317" if kit.active("cath.guide_pick") else roster[0]["id"]
    return json.dumps({"guide": pick, "reason": "speaks the group's language and is on shift"})


class TourSearch(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        step_free = "step_free=True" in query
        words = set(re.findall(r"[a-z]+", query.lower()))
        pool = [t for t in TOURS if not step_free or t["steps"] == 0 or kit.active("cath.access_filter")]
        pool.sort(key=lambda t: (-len(words & set(t["tags"].split())), t["id"]))
        return [Document(page_content=json.dumps(t), metadata={"id": t["id"]}) for t in pool[:3]]


@tool
def check_availability(tour: str, date: str, time: str, language: str) -> str:
    """Whether a guided slot is free, with the guides on shift for it."""
    minutes = next(t["minutes"] for t in TOURS if t["id"] == tour)
    on = [g["id"] for g in GUIDES if _on_shift(g, time, minutes) and (g["lang"] == language or kit.active("cath.slot_language"))]
    return json.dumps({"tour": tour, "date": date, "time": time, "available": bool(on), "guides_on_shift": on})


@tool
def get_guide_roster(date: str, language: str) -> str:
    """The guides rostered on a date who speak a language."""
    return json.dumps([g for g in GUIDES if g["lang"] == language])


@tool
def get_rates(tour: str) -> str:
    """The group tariff of a tour."""
    t = next(t for t in TOURS if t["id"] == tour)
    return json.dumps({"tour": tour, "per_person_gbp": t["rate"], "free_leader_per": 10})


@tool
def create_booking(tour: str, date: str, time: str, guide: str, group_size: int, chargeable: int, total_gbp: float,
                   step_free: bool, language: str) -> str:
    """Create the booking in the cathedral's visitor system."""
    t = next(x for x in TOURS if x["id"] == tour)
    if step_free and t["steps"]:
        raise ValueError(f"HTTP 422: tour {tour} ({t['steps']} steps) cannot be booked for a party needing step-free access")
    g = next((x for x in GUIDES if x["id"] == guide), None)
    if g is None:
        raise ValueError(f"HTTP 404: guide {guide} not on the roster for {date}")
    if g["lang"] != language or not _on_shift(g, time, t["minutes"]):
        raise ValueError(f"HTTP 409: guide {guide} ({g['lang']}) is not on shift for {time}-{t['minutes']} min on {date}; "
                         f"shift {g['shift'][0]}-{g['shift'][1]}")
    if _mins(time) + t["minutes"] > _mins(EVENSONG) >= _mins(time):
        raise ValueError(f"HTTP 409: tour {tour} at {time} ({t['minutes']} min) overlaps Choral Evensong at {EVENSONG} on {date}")
    expected = group_size - group_size // 10
    if chargeable != expected or abs(total_gbp - expected * t["rate"]) > 0.005:
        raise ValueError(f"HTTP 422: quote {chargeable} x {t['rate']:.2f} GBP = {total_gbp:.2f} GBP for a party of "
                         f"{group_size} does not match the tariff")
    return json.dumps({"booking": f"CT-{date.replace('-', '')}-{tour}", "status": "confirmed"})


class State(TypedDict, total=False):
    text: str
    request: dict
    slots: list
    tours: list
    tour: dict
    slot_idx: int
    slot: str
    roster: list
    rates: dict
    quote: dict
    booking: str


class GuideState(TypedDict, total=False):
    request: dict
    slot: str
    roster: list
    guide: str


def build(llm: ChatOpenAI) -> Any:
    parser = JsonOutputParser()

    def extract_request(s: State) -> dict:
        msg = llm.invoke([("system", "Extract the booking request as JSON."), ("user", s["text"])])
        return {"request": parser.invoke(msg)}

    def plan_slots(s: State) -> dict:
        msg = llm.invoke([("system", "Plan which tour start times to try, as JSON."),
                          ("user", f"Request: {json.dumps(s['request'])}. Services: Choral Evensong daily {EVENSONG}.")])
        return {"slots": json.loads(msg.content)["slots"], "slot_idx": 0}

    def find_tours(s: State) -> dict:
        r = s["request"]
        docs = TourSearch().invoke(f"{r['interests']} step_free={r['step_free']}", config={"run_name": "tour_search"})
        return {"tours": [json.loads(d.page_content) for d in docs]}

    def try_slot(s: State) -> dict:
        tour, slot = s["tours"][0], s["slots"][s["slot_idx"]]
        a = json.loads(check_availability.invoke({"tour": tour["id"], "date": s["request"]["date"], "time": slot,
                                                   "language": s["request"]["language"]}))
        return {"tour": tour, "slot": slot if a["available"] else "", "slot_idx": s["slot_idx"] + 1}

    def fetch_roster(s: GuideState) -> dict:
        return {"roster": json.loads(get_guide_roster.invoke({"date": s["request"]["date"], "language": s["request"]["language"]}))}

    def shortlist(s: GuideState) -> dict:
        return {"roster": [g for g in s["roster"] if g["lang"] == s["request"]["language"]]}

    sub = StateGraph(GuideState)
    sub.add_node("fetch_roster", fetch_roster)
    sub.add_node("shortlist", shortlist)
    sub.add_edge(START, "fetch_roster")
    sub.add_edge("fetch_roster", "shortlist")
    sub.add_edge("shortlist", END)

    def price(s: State) -> dict:
        return {"rates": json.loads(get_rates.invoke({"tour": s["tour"]["id"]}))}

    def compute_quote(s: State) -> dict:
        size = s["request"]["group_size"]
        free = size // s["rates"]["free_leader_per"] + (1 if kit.active("cath.free_places") else 0)
        return {"quote": {"chargeable": size - free, "total_gbp": round((size - free) * s["rates"]["per_person_gbp"], 2)}}

    def book(s: State) -> dict:
        r = s["request"]
        msg = llm.invoke([("system", "Assign a guide from the roster and confirm the booking; answer JSON."),
                          ("user", f"ROSTER: {json.dumps(s['roster'])}\nSlot {s['slot']} on {r['date']}, tour {s['tour']['id']}")])
        guide = json.loads(msg.content)["guide"]
        return {"booking": create_booking.invoke({"tour": s["tour"]["id"], "date": r["date"], "time": s["slot"], "guide": guide,
                                                  "group_size": r["group_size"], "chargeable": s["quote"]["chargeable"],
                                                  "total_gbp": s["quote"]["total_gbp"], "step_free": r["step_free"],
                                                  "language": r["language"]})}

    g = StateGraph(State)
    for name, fn in [("extract_request", extract_request), ("plan_slots", plan_slots), ("find_tours", find_tours),
                     ("try_slot", try_slot), ("price", price), ("compute_quote", compute_quote), ("book", book)]:
        g.add_node(name, fn)
    g.add_node("guide_desk", sub.compile())
    g.add_edge(START, "extract_request")
    g.add_edge("extract_request", "plan_slots")
    g.add_edge("plan_slots", "find_tours")
    g.add_edge("find_tours", "try_slot")
    g.add_conditional_edges("try_slot", lambda s: "guide_desk" if s["slot"] or s["slot_idx"] >= len(s["slots"]) else "try_slot")
    g.add_edge("guide_desk", "price")
    g.add_edge("price", "compute_quote")
    g.add_edge("compute_quote", "book")
    g.add_edge("book", END)
    return g.compile()


def record(key: str, path: Path) -> None:
    llm = ChatOpenAI(base_url=base_url(), api_key="not-needed", model=MODEL, max_retries=0)
    run_graph(build(llm), {"text": INPUTS[key]}, path, RUN_NAME, f"book a guided tour: {INPUTS[key][:60]}")
