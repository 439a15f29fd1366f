"""Tennis court bookings: a LangGraph StateGraph that books a court for a member's request (langgraph)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

from .common import last_user_json
from .kit import active

NAME = "tennis-court-bookings"
ROUTE = "langgraph"
DOMAIN = "tennis court bookings"
SHAPE = "StateGraph: context -> LLM extract -> LLM plan -> check_court loop (availability tool + slot parser) -> price (rate card) -> hold -> book"

SUNSET = "19:30"
INPUTS = {
    "doubles_eve": {"member": "M-2231", "text": "Court for doubles on 2026-05-14 at 19:00 for 90 minutes, clay please. Guests: Ana, Ben, Kofi."},
    "singles_noon": {"member": "M-1180", "text": "Singles on 2026-05-16 at 12:00, 60 minutes, clay if possible. Guest: Lena."},
    "r1": {"member": "M-3001", "text": "Doubles on 2026-05-11 at 08:00 for 60 minutes, hard court. Guests: Ravi, Tom, Yuki."},
    "r2": {"member": "M-3002", "text": "Singles on 2026-05-12 at 20:00 for 60 minutes, hard court. Guest: Ola."},
    "r3": {"member": "M-3003", "text": "Doubles on 2026-05-13 at 17:00 for 90 minutes, clay please. Guests: Iris, Joe, Max."},
    "r4": {"member": "M-3004", "text": "Singles on 2026-05-15 at 10:00 for 90 minutes, clay please. Guest: Pia."},
}
REFS = ["r1", "r2", "r3", "r4"]
CASES = [
    {"id": "zd_tennis_hold", "kind": "wrong_tool_args", "input": "doubles_eve", "root": "hold", "occ": 1,
     "failure": "create_booking", "description": "the hold node passes the court's previous slot start to hold_slot, so the hold does not cover the requested time and the booking API refuses it."},
    {"id": "zd_tennis_end", "kind": "off_by_one", "input": "singles_noon", "root": "book", "occ": 1,
     "failure": "create_booking", "description": "the book node counts the end slot inclusively and asks for one 30-minute slot more than was held, which the booking API rejects."},
    {"id": "zd_tennis_plan", "kind": "plan_error", "input": "doubles_eve", "root": "plan_search", "occ": 1,
     "failure": "create_booking", "description": "plan_search plans an evening doubles search without floodlights, so a court without lights is held and the booking API refuses a start after sunset there."},
    {"id": "zd_tennis_context", "kind": "context_pollution", "input": "doubles_eve", "root": "gather_context", "occ": 1,
     "failure": "create_booking", "description": "gather_context pastes the member's old singles thread into the request context, the extractor reads two players from it, and the booking API finds guests beyond the player count."},
    {"id": "zd_tennis_rates", "kind": "truncated_result", "input": "singles_noon", "root": "rate_card", "occ": 1,
     "failure": "create_booking", "description": "rate_card returns only the first rows of the rate table, missing the weekend row, so the fee is priced at the weekday rate and the booking API refuses the fee."},
]

COURTS = {"C1": {"surface": "clay", "lights": False}, "C2": {"surface": "clay", "lights": True},
          "C3": {"surface": "hard", "lights": True}, "C4": {"surface": "clay", "lights": True},
          "C5": {"surface": "hard", "lights": False}}
BOOKED = {("C2", "2026-05-14"): ["19:00", "19:30"], ("C1", "2026-05-16"): ["12:00"]}
RATES = [{"day": "weekday", "surface": "clay", "per_30": 9.0}, {"day": "weekday", "surface": "hard", "per_30": 7.0},
         {"day": "weekend", "surface": "clay", "per_30": 12.0}, {"day": "weekend", "surface": "hard", "per_30": 10.0}]
WEEKEND = {"2026-05-16", "2026-05-17"}


def _slots(start: str, minutes: int) -> list[str]:
    h, m = map(int, start.split(":"))
    out = []
    for i in range(minutes // 30):
        t = h * 60 + m + 30 * i
        out.append(f"{t // 60:02d}:{t % 60:02d}")
    return out


def policy(req):
    ask = last_user_json(req)
    if ask.get("ask") == "extract":
        text = ask["text"]
        import re
        date = re.search(r"\d{4}-\d\d-\d\d", text).group(0)
        start = re.search(r"at (\d\d:\d\d)", text).group(1)
        minutes = int(re.search(r"(\d+) minutes", text).group(1))
        players = 4 if "oubles" in text else 2
        if any("singles" in h.lower() for h in ask.get("history", [])):
            players = 2
        guests = [g.strip(" .") for g in text.split("Guest")[1].split(":")[1].split(",")]
        surface = "clay" if "clay" in text else "hard"
        return json.dumps({"date": date, "start": start, "minutes": minutes, "players": players, "surface": surface, "guests": guests})
    if ask.get("ask") == "plan":
        r = ask["request"]
        needs_lights = r["start"] >= "18:00" or _slots(r["start"], r["minutes"])[-1] >= SUNSET
        if active("zd_tennis_plan"):
            needs_lights = False
        courts = [c for c, v in COURTS.items() if v["surface"] == r["surface"] and (v["lights"] or not needs_lights)]
        return json.dumps({"candidates": courts, "needs_lights": needs_lights})
    return json.dumps({})


@tool
def member_threads(member: str) -> list[str]:
    """Recent messages of a member with the front desk."""
    return [f"{member}: thanks for the singles court last week, we were just the two of us",
            f"{member}: could you keep the racket I left behind?"]


@tool
def court_availability(court: str, date: str) -> dict:
    """Booked half-hour slots of a court on a date."""
    return {"court": court, "date": date, "booked": BOOKED.get((court, date), []), "open": "07:00", "close": "22:00"}


@tool
def rate_card(surface: str) -> list[dict]:
    """The club's rate table rows for a surface."""
    rows = [r for r in RATES if r["surface"] == surface]
    return rows[:1] if active("zd_tennis_rates") else rows


@tool
def hold_slot(court: str, date: str, start: str, minutes: int) -> dict:
    """Hold a court for a few minutes while the booking is written."""
    return {"hold_id": f"H-{court}-{date[-2:]}{start[:2]}", "court": court, "date": date, "start": start, "minutes": minutes}


@tool
def create_booking(member: str, hold_id: str, court: str, date: str, start: str, minutes: int, players: int, guests: list[str], fee: float) -> dict:
    """Write the booking (the club API validates it)."""
    held = HOLDS.get(hold_id)
    if held is None or held["start"] != start:
        raise ValueError(f"409 Conflict: hold {hold_id} does not cover {date} {start}")
    if minutes != held["minutes"]:
        raise ValueError(f"409 Conflict: booking asks {minutes} min but hold {hold_id} covers {held['minutes']} min")
    slots = _slots(start, minutes)
    if slots[-1] >= SUNSET and not COURTS[court]["lights"] or start >= SUNSET and not COURTS[court]["lights"]:
        raise ValueError(f"422 Unprocessable: court {court} has no floodlights for play after {SUNSET}")
    if len(guests) + 1 > players:
        raise ValueError(f"422 Unprocessable: {len(guests)} guests listed for a {players}-player booking")
    day = "weekend" if date in WEEKEND else "weekday"
    per = next(r["per_30"] for r in RATES if r["day"] == day and r["surface"] == COURTS[court]["surface"])
    if abs(fee - per * len(slots)) > 0.01:
        raise ValueError(f"402 Payment: fee {fee:.2f} does not match the {day} tariff {per * len(slots):.2f}")
    return {"booking": f"B-{hold_id[2:]}", "status": "confirmed"}


HOLDS: dict[str, dict] = {}


class S(TypedDict, total=False):
    member: str
    text: str
    history: list
    request: dict
    plan: dict
    idx: int
    court: str
    fee: float
    hold: dict
    result: dict


def build(base_url: str):
    from langchain_openai import ChatOpenAI
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=base_url, api_key="sk-local-test", max_retries=0)
    extract_llm = llm.with_config(run_name="extract_request")
    plan_llm = llm.with_config(run_name="plan_search")
    parse_slots = RunnableLambda(lambda d: {"court": d["court"], "taken": set(d["booked"])}, name="parse_slots")

    def gather_context(s: S) -> dict:
        notes = member_threads.invoke({"member": s["member"]})
        keep = notes if active("zd_tennis_context") else [n for n in notes if "racket" in n]
        return {"history": keep}

    def extract(s: S) -> dict:
        msg = extract_llm.invoke([SystemMessage("Extract the booking request as JSON."),
                                  HumanMessage(json.dumps({"ask": "extract", "text": s["text"], "history": s["history"]}))])
        return {"request": json.loads(msg.content)}

    def plan(s: S) -> dict:
        msg = plan_llm.invoke([SystemMessage("Plan which courts to try, as JSON."),
                               HumanMessage(json.dumps({"ask": "plan", "request": s["request"]}))])
        return {"plan": json.loads(msg.content), "idx": 0}

    def check_court(s: S) -> dict:
        court = s["plan"]["candidates"][s["idx"]]
        avail = court_availability.invoke({"court": court, "date": s["request"]["date"]})
        parsed = parse_slots.invoke(avail)
        want = set(_slots(s["request"]["start"], s["request"]["minutes"]))
        if want & parsed["taken"]:
            return {"idx": s["idx"] + 1}
        return {"court": court}

    def price(s: S) -> dict:
        rows = rate_card.invoke({"surface": s["request"]["surface"]})
        day = "weekend" if s["request"]["date"] in WEEKEND else "weekday"
        row = next((r for r in rows if r["day"] == day), rows[0])
        return {"fee": row["per_30"] * (s["request"]["minutes"] // 30)}

    def hold(s: S) -> dict:
        r = s["request"]
        start = r["start"]
        if active("zd_tennis_hold"):
            h, m = map(int, start.split(":"))
            start = f"{(h * 60 + m - 30) // 60:02d}:{(h * 60 + m - 30) % 60:02d}"
        held = hold_slot.invoke({"court": s["court"], "date": r["date"], "start": start, "minutes": r["minutes"]})
        HOLDS[held["hold_id"]] = held
        return {"hold": held}

    def book(s: S) -> dict:
        r = s["request"]
        n = len(_slots(r["start"], r["minutes"])) + (1 if active("zd_tennis_end") else 0)
        res = create_booking.invoke({"member": s["member"], "hold_id": s["hold"]["hold_id"], "court": s["court"],
                                     "date": r["date"], "start": r["start"], "minutes": n * 30,
                                     "players": r["players"], "guests": r["guests"], "fee": s["fee"]})
        return {"result": res}

    g = StateGraph(S)
    for name, fn in [("gather_context", gather_context), ("extract", extract), ("plan", plan),
                     ("check_court", check_court), ("price", price), ("hold", hold), ("book", book)]:
        g.add_node(name, fn)
    g.add_edge(START, "gather_context")
    g.add_edge("gather_context", "extract")
    g.add_edge("extract", "plan")
    g.add_edge("plan", "check_court")
    g.add_conditional_edges("check_court", lambda s: "price" if s.get("court") else "check_court", ["price", "check_court"])
    g.add_edge("price", "hold")
    g.add_edge("hold", "book")
    g.add_edge("book", END)
    return g.compile()


_GRAPHS: dict[str, Any] = {}


def record(inp: dict, path: Path, base_url: str) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer
    graph = _GRAPHS.get(base_url) or _GRAPHS.setdefault(base_url, build(base_url))
    HOLDS.clear()
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"book a court for {inp['member']}")
    try:
        graph.invoke({"member": inp["member"], "text": inp["text"]}, config={"callbacks": [tracer]})
    except ValueError:
        pass
