"""Pet groomer's appointment agent (langgraph route): a StateGraph with a planner sub-graph and a pricing loop."""
from __future__ import annotations

import json
import operator
from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

import common
import kit

NAME = "pet-groomer-appointments"
ROUTE = "langgraph"
DOMAIN = "a pet groomer's appointments"
SHAPE = "StateGraph: intake LLM, parse, profile + visit-history tools, context node, service router, groom-planner sub-graph (duration LLM, roster tool, per-service pricing loop), slot search tool, slot-choice LLM, hold tool, confirmation LLM, validator node"
EXT = "jsonl"

PETS = {
    "Biscuit": {"breed": "cockapoo", "kg": 14, "coat": "matted", "household": "H-9", "age": 4},
    "Juno": {"breed": "border terrier", "kg": 7, "coat": "wiry", "household": "H-3", "age": 6},
    "Pepper": {"breed": "shih tzu", "kg": 6, "coat": "long", "household": "H-5", "age": 9},
    "Otis": {"breed": "labrador", "kg": 31, "coat": "short", "household": "H-9", "age": 2},
    "Mabel": {"breed": "cocker spaniel", "kg": 13, "coat": "long", "household": "H-5", "age": 5},
    "Ziggy": {"breed": "schnauzer", "kg": 9, "coat": "wiry", "household": "H-7", "age": 3},
    "Nala": {"breed": "samoyed", "kg": 22, "coat": "double", "household": "H-8", "age": 7},
    "Rolo": {"breed": "dachshund", "kg": 8, "coat": "short", "household": "H-3", "age": 11},
    "Tilly": {"breed": "bichon frise", "kg": 5, "coat": "matted", "household": "H-7", "age": 8},
}
SERVICE_FOR_COAT = {"matted": "full_groom", "wiry": "hand_strip", "long": "full_groom", "short": "bath_tidy", "double": "deshed"}
EXTRAS = {"full_groom": ["dematting", "nail_trim"], "hand_strip": ["nail_trim", "ear_clean"], "bath_tidy": ["nail_trim"],
          "deshed": ["undercoat_rake", "nail_trim"]}
PRICE = {"full_groom": 55.0, "hand_strip": 62.0, "bath_tidy": 30.0, "deshed": 58.0, "dematting": 15.0, "nail_trim": 8.0,
         "ear_clean": 6.0, "undercoat_rake": 12.0}
MINUTES = {"full_groom": 120, "hand_strip": 110, "bath_tidy": 50, "deshed": 100}
ROSTER = [
    {"groomer": "Dani", "skills": ["bath_tidy", "full_groom", "deshed"]},
    {"groomer": "Priya", "skills": ["bath_tidy", "full_groom", "hand_strip", "deshed"]},
    {"groomer": "Sam", "skills": ["bath_tidy", "hand_strip"]},
]
VISITS = {
    "Biscuit": "Nervous with dryers; use towel dry.", "Otis": "Pulls on lead; two handlers for the bath.",
    "Juno": "Calm on the table.", "Rolo": "Sore back: no lifting by the rear.", "Pepper": "Eye stains; gentle wipes.",
    "Mabel": "Ear wax; check both ears.", "Ziggy": "Likes treats.", "Nala": "Blows coat in spring.", "Tilly": "Snaps at feet.",
}


def _r(pet, day, part):
    return {"request": f"Hi, can I book {pet} in on {day} {part}? Usual groom please.", "pet": pet, "day": day, "part": part}


INPUTS = {
    "R-1": _r("Biscuit", "2026-11-14", "morning"),
    "R-2": _r("Juno", "2026-11-14", "morning"),
    "R-3": _r("Pepper", "2026-11-15", "morning"),
    "R-4": _r("Otis", "2026-11-16", "afternoon"),
    "R-5": _r("Mabel", "2026-11-17", "morning"),
    "R-6": _r("Ziggy", "2026-11-18", "afternoon"),
    "R-7": _r("Nala", "2026-11-19", "morning"),
    "R-8": _r("Rolo", "2026-11-20", "afternoon"),
    "R-9": _r("Tilly", "2026-11-21", "morning"),
}
REFS = ["R-6", "R-7", "R-8", "R-9"]

CASES = [
    dict(case="zzv_groom_01", fault_kind="wrong_routing", input="R-1", root=("route_service", 1), failure=("validate_booking", 1),
         description="The service router sends a matted cockapoo to the quick bath-and-tidy planner, so the booking has no dematting and too short a slot."),
    dict(case="zzv_groom_02", fault_kind="tool_ignores_argument", input="R-2", root=("groomer_roster", 1), failure=("validate_booking", 1),
         description="The roster tool ignores the skill it is asked for and returns the first groomer on shift, who cannot hand-strip a border terrier."),
    dict(case="zzv_groom_03", fault_kind="truncated_result", input="R-3", root=("slot_search", 1), failure=("validate_booking", 1),
         description="The slot search returns only the last page of the day's free slots (afternoon), so a morning request is booked at 14:00."),
    dict(case="zzv_groom_04", fault_kind="context_pollution", input="R-4", root=("build_context", 1), failure=("validate_booking", 1),
         description="The context node folds the notes of every pet in the household into the prompt, and the confirmation names Biscuit instead of Otis."),
    dict(case="zzv_groom_05", fault_kind="format_drift", input="R-5", root=("ChatOpenAI", 3), failure=("validate_booking", 1),
         description="The slot-choice model answers the time as '9:30am' instead of the 24-hour 'HH:MM' the booking book holds."),
]

LLM = None


def brain(request):
    prompt = common.last_user(request)
    data = common.payload(prompt)
    if prompt.startswith("Extract the booking"):
        inp = next(v for v in INPUTS.values() if v["request"] == data["message"])
        return json.dumps({"pet": inp["pet"], "day": inp["day"], "part_of_day": inp["part"]})
    if prompt.startswith("Estimate the grooming time"):
        return str(MINUTES[data["service"]] + (10 if data["kg"] > 20 else 0))
    if prompt.startswith("Choose a slot"):
        want = [s for s in data["slots"] if (s < "12:00") == (data["part_of_day"] == "morning")]
        pick = (want or data["slots"])[0]
        if kit.on("zzv_groom_05"):
            h, m = pick.split(":")
            pick = f"{int(h) % 12 or 12}:{m}{'am' if int(h) < 12 else 'pm'}"
        return json.dumps({"time": pick})
    if prompt.startswith("Write the confirmation"):
        name = data["notes"][-1]["pet"]
        return f"All set! {name} is booked on {data['day']} at {data['time']} with {data['groomer']}. Total EUR {data['total']:.2f}."
    return "Sorry?"


def ask(task, data):
    msg = f"{task}\n{json.dumps(data, sort_keys=True)}"
    return LLM.invoke([SystemMessage("You are the booking assistant of Wag & Tidy grooming."), HumanMessage(msg)]).content


@tool
def pet_profile(pet: str) -> dict:
    """The pet's breed, weight and coat."""
    return {"pet": pet, **PETS[pet]}


@tool
def visit_history(household: str) -> list:
    """Notes of the last visits of the household's pets."""
    return [{"pet": p, "note": VISITS[p]} for p, v in PETS.items() if v["household"] == household]


@tool
def groomer_roster(day: str, skill: str) -> dict:
    """Groomers on shift on a day who hold a skill."""
    on_shift = ROSTER if day[-1] in "02468" else ROSTER[::-1]
    if kit.on("zzv_groom_02"):
        return on_shift[0]
    return next(g for g in on_shift if skill in g["skills"])


@tool
def price_lookup(service: str, kg: int) -> dict:
    """Price of one service for a pet's weight."""
    return {"service": service, "price": PRICE[service] + (10.0 if kg > 20 and service in MINUTES else 0.0)}


@tool
def slot_search(day: str, minutes: int) -> list:
    """Free slots on a day long enough for the groom."""
    slots = ["09:00", "09:30", "10:00", "13:00", "14:00", "15:30"] if minutes <= 110 else ["09:30", "10:00", "13:30", "14:00"]
    if kit.on("zzv_groom_03"):
        return slots[-2:]
    return slots


@tool
def hold_slot(day: str, time: str, groomer: str, minutes: int) -> dict:
    """Pencil a slot in the book."""
    return {"booking": f"B-{day[5:7]}{day[8:]}-{time.replace(':', '')}", "day": day, "time": time, "groomer": groomer, "minutes": minutes}


class Plan(TypedDict, total=False):
    service: str
    kg: int
    day: str
    minutes: int
    groomer: dict
    todo: list
    priced: Annotated[list, operator.add]


class Booking(TypedDict, total=False):
    message: str
    extracted: str
    request: dict
    profile: dict
    history: list
    notes: list
    service: str
    minutes: int
    groomer: dict
    priced: list
    slots: list
    time: str
    hold: dict
    confirmation: str


def estimate(state: Plan) -> dict:
    return {"minutes": int(ask("Estimate the grooming time in minutes.", {"service": state["service"], "kg": state["kg"]})),
            "todo": [state["service"]] + EXTRAS[state["service"]]}


def assign_groomer(state: Plan) -> dict:
    return {"groomer": groomer_roster.invoke({"day": state["day"], "skill": state["service"]})}


def price_next(state: Plan) -> dict:
    done = len(state.get("priced", []))
    return {"priced": [price_lookup.invoke({"service": state["todo"][done], "kg": state["kg"]})]}


def more_to_price(state: Plan) -> str:
    return "price_next" if len(state.get("priced", [])) < len(state["todo"]) else END


def planner_graph():
    g = StateGraph(Plan)
    g.add_node("estimate", estimate)
    g.add_node("assign_groomer", assign_groomer)
    g.add_node("price_next", price_next)
    g.add_edge(START, "estimate")
    g.add_edge("estimate", "assign_groomer")
    g.add_edge("assign_groomer", "price_next")
    g.add_conditional_edges("price_next", more_to_price, ["price_next", END])
    return g.compile()


PLANNER = None


def intake(state: Booking) -> dict:
    return {"extracted": ask("Extract the booking request as JSON.", {"message": state["message"]})}


def parse_request(state: Booking) -> dict:
    return {"request": json.loads(state["extracted"])}


def load_profile(state: Booking) -> dict:
    prof = pet_profile.invoke({"pet": state["request"]["pet"]})
    return {"profile": prof, "history": visit_history.invoke({"household": prof["household"]})}


def build_context(state: Booking) -> dict:
    pet = state["request"]["pet"]
    notes = [h for h in state["history"] if h["pet"] == pet]
    if kit.on("zzv_groom_04"):
        notes = [h for h in state["history"] if h["pet"] == pet] + [h for h in state["history"] if h["pet"] != pet]
    return {"notes": notes}


def route_service(state: Booking) -> str:
    service = SERVICE_FOR_COAT[state["profile"]["coat"]]
    if kit.on("zzv_groom_01"):
        return "quick_planner"
    return "quick_planner" if service == "bath_tidy" else "groom_planner"


def groom_planner(state: Booking) -> dict:
    prof = state["profile"]
    out = PLANNER.invoke({"service": SERVICE_FOR_COAT[prof["coat"]], "kg": prof["kg"], "day": state["request"]["day"]})
    return {"service": out["service"], "minutes": out["minutes"], "groomer": out["groomer"], "priced": out["priced"]}


def quick_planner(state: Booking) -> dict:
    prof = state["profile"]
    g = groomer_roster.invoke({"day": state["request"]["day"], "skill": "bath_tidy"})
    priced = [price_lookup.invoke({"service": s, "kg": prof["kg"]}) for s in ["bath_tidy"] + EXTRAS["bath_tidy"]]
    return {"service": "bath_tidy", "minutes": MINUTES["bath_tidy"], "groomer": g, "priced": priced}


def find_slot(state: Booking) -> dict:
    return {"slots": slot_search.invoke({"day": state["request"]["day"], "minutes": state["minutes"]})}


def choose_slot(state: Booking) -> dict:
    raw = ask("Choose a slot for the request.", {"slots": state["slots"], "part_of_day": state["request"]["part_of_day"]})
    return {"time": json.loads(raw)["time"]}


def hold(state: Booking) -> dict:
    return {"hold": hold_slot.invoke({"day": state["request"]["day"], "time": state["time"], "groomer": state["groomer"]["groomer"],
                                       "minutes": state["minutes"]})}


def confirm(state: Booking) -> dict:
    total = sum(p["price"] for p in state["priced"])
    return {"confirmation": ask("Write the confirmation text.", {"notes": state["notes"], "day": state["request"]["day"],
                                                                 "time": state["hold"]["time"], "groomer": state["groomer"]["groomer"], "total": total})}


def validate_booking(state: Booking) -> dict:
    req, prof, hold_ = state["request"], state["profile"], state["hold"]
    need = SERVICE_FOR_COAT[prof["coat"]]
    if state["service"] != need:
        raise ValueError(f"{req['pet']} has a {prof['coat']} coat: {need} required, booked {state['service']} ({state['minutes']} min)")
    if need not in state["groomer"]["skills"]:
        raise ValueError(f"{state['groomer']['groomer']} does not hold {need} for {req['pet']}")
    t = hold_["time"]
    if len(t) != 5 or t[2] != ":" or not t.replace(":", "").isdigit():
        raise ValueError(f"booking {hold_['booking']}: time {t!r} is not HH:MM")
    if (t < "12:00") != (req["part_of_day"] == "morning"):
        raise ValueError(f"booking {hold_['booking']}: {t} for a {req['part_of_day']} request")
    if req["pet"] not in state["confirmation"] or any(p != req["pet"] and p in state["confirmation"] for p in PETS):
        raise ValueError(f"confirmation for {req['pet']} reads: {state['confirmation']}")
    return {}


def graph():
    g = StateGraph(Booking)
    for fn in (intake, parse_request, load_profile, build_context, groom_planner, quick_planner, find_slot, choose_slot, hold,
               confirm, validate_booking):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "parse_request")
    g.add_edge("parse_request", "load_profile")
    g.add_edge("load_profile", "build_context")
    g.add_conditional_edges("build_context", route_service, ["groom_planner", "quick_planner"])
    g.add_edge("groom_planner", "find_slot")
    g.add_edge("quick_planner", "find_slot")
    g.add_edge("find_slot", "choose_slot")
    g.add_edge("choose_slot", "hold")
    g.add_edge("hold", "confirm")
    g.add_edge("confirm", "validate_booking")
    g.add_edge("validate_booking", END)
    return g.compile()


def record(server, key: str, out: str) -> None:
    global LLM, PLANNER
    from trajdebug.integrations.langchain import TrajdebugTracer

    server.use(brain)
    LLM = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
    PLANNER = planner_graph().with_config(run_name="groom_plan")
    tracer = TrajdebugTracer(path=out, name=NAME, task=f"book grooming request {key}")
    try:
        graph().invoke({"message": INPUTS[key]["request"]}, config={"callbacks": [tracer], "run_name": NAME})
    except ValueError:
        pass
