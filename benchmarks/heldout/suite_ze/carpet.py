"""Carpet cleaning dispatcher (LangGraph): reads a job, pulls the floor plan, sizes rooms, treats stains, books a crew, submits a work order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, role_and_payload
from .kit import active
from .lg_common import chat_model

NAME = "carpet-dispatch"
ROUTE = "langgraph"
DOMAIN = "carpet cleaning jobs"
SHAPE = "StateGraph: intake (llm|parser) -> floor plan (retriever) -> measure (tool) -> stain loop (tool per stain) -> crew (tool) -> schedule (llm) -> finalize (price tool, submit tool)"

JOBS = {
    "elm": {"customer": "CU-514", "text": "Mrs Patel, 14 Elm Road. Rooms: lounge, hall, stairs. Carpet: wool blend. Stains: red wine, coffee. Date: 2026-12-14."},
    "flat3": {"customer": "CU-733", "text": "J. Berg, Flat 3 Quay House. Rooms: bedroom, lounge, conservatory. Carpet: nylon. Stains: pet urine. Date: 2026-12-15."},
    "oak": {"customer": "CU-120", "text": "Oak Dental reception. Rooms: reception, corridor. Carpet: polypropylene. Stains: coffee. Date: 2026-12-16."},
    "mill": {"customer": "CU-245", "text": "R. Osei, 2 Mill Lane. Rooms: lounge, dining. Carpet: wool. Stains: candle wax. Date: 2026-12-14."},
    "park": {"customer": "CU-388", "text": "Park Flats 9. Rooms: bedroom, hall. Carpet: nylon. Stains: ink, coffee. Date: 2026-12-17."},
    "lime": {"customer": "CU-601", "text": "T. Ng, 5 Lime Court. Rooms: lounge. Carpet: wool blend. Stains: mud. Date: 2026-12-15."},
}
PLANS = {
    "CU-514": {"lounge": 24.0, "hall": 8.5, "stairs": 6.0},
    "CU-733": {"bedroom": 14.0, "lounge": 20.0, "conservatory": 12.5},
    "CU-120": {"reception": 30.0, "corridor": 18.0},
    "CU-245": {"lounge": 22.0, "dining": 15.0},
    "CU-388": {"bedroom": 12.0, "hall": 7.0},
    "CU-601": {"lounge": 19.0},
}
FIBRE = {"CU-514": "wool blend", "CU-733": "nylon", "CU-120": "polypropylene", "CU-245": "wool", "CU-388": "nylon", "CU-601": "wool blend"}
TREAT = {"red wine": "oxidiser", "coffee": "tannin spotter", "pet urine": "enzyme digester", "candle wax": "heat transfer", "ink": "solvent spotter", "mud": "dry soil extraction"}
RATE = {"nylon": 3.2, "polypropylene": 3.0, "wool": 4.6, "wool blend": 4.1}
CREWS = {"2026-12-14": ["C-2", "C-5"], "2026-12-15": ["C-1", "C-5"], "2026-12-16": ["C-3"], "2026-12-17": ["C-2"]}
TODAY = "2026-12-04"
CREWS[TODAY] = ["C-4"]

CASES = [
    Case("ze_carpet_1", "carpet_sqft", "unit_error", "elm", ("get_room_sizes", 1), ("submit_work_order", 1),
         "The room-size tool answers square feet in the square-metre field, so the job's duration goes past the single-visit limit."),
    Case("ze_carpet_2", "carpet_plan", "stale_data", "flat3", ("FloorPlanRetriever", 1), ("submit_work_order", 1),
         "The floor plan search returns the 2019 survey from before the conservatory was built, so the work order misses a room the customer ordered."),
    Case("ze_carpet_3", "carpet_fibre", "lossy_parsing", "elm", ("IntakeParser", 1), ("submit_work_order", 1),
         "The intake parser drops the carpet fibre and defaults to nylon, so an alkaline pre-spray is planned on wool blend."),
    Case("ze_carpet_4", "carpet_stain", "swallowed_error", "elm", ("lookup_stain", 2), ("submit_work_order", 1),
         "A stain lookup's 404 is caught inside the tool and returned as an empty treatment list, so a stain in the order has no treatment line."),
    Case("ze_carpet_5", "carpet_price", "tool_ignores_argument", "elm", ("price_job", 1), ("submit_work_order", 1),
         "The pricing tool ignores its fibre argument and prices every job at the nylon rate, and the work order's rate check refuses the quote."),
]
REF_INPUTS = ["oak", "mill", "park", "lime"]


class Refused(RuntimeError):
    pass


def policy(request: Any) -> Any:
    role, p = role_and_payload(request)
    if role == "intake":
        fields = dict(line.split(": ", 1) for line in p["text"].replace(". ", ".\n").splitlines() if ": " in line)
        out = {k.lower(): v.rstrip(".") for k, v in fields.items()}
        return "Job sheet:\n" + "\n".join(f"{k}={v}" for k, v in sorted(out.items()))
    if role == "schedule":
        crews = p["crews"]
        return json.dumps({"crew": crews[0], "start": "08:30" if p["hours"] > 3 else "13:00"})
    return "{}"


class IntakeParser(BaseOutputParser[dict]):
    def parse(self, text: str) -> dict:
        kv = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        fibre = kv.get("carpet", "nylon")
        if active("carpet_fibre"):
            fibre = "nylon"
        return {"rooms": [r.strip() for r in kv["rooms"].split(",")], "fibre": fibre,
                "stains": [s.strip() for s in kv["stains"].split(",")], "date": kv["date"]}


class FloorPlanRetriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        plan = dict(PLANS[query])
        survey = "2024-03"
        if active("carpet_plan"):
            plan.pop("conservatory", None)
            survey = "2019-06"
        return [Document(page_content=json.dumps(plan), metadata={"customer": query, "survey": survey})]


@tool
def get_room_sizes(customer: str, rooms: list[str], plan: str) -> dict:
    """Measured carpet area per room, in square metres."""
    areas = json.loads(plan)
    factor = 10.7639 if active("carpet_sqft") else 1.0
    return {"unit": "m2", "areas": {r: round(areas[r] * factor, 1) for r in rooms if r in areas}}


@tool
def lookup_stain(stain: str, fibre: str) -> dict:
    """Treatment for a stain on a fibre."""
    try:
        if active("carpet_stain") and stain == "coffee":
            raise LookupError(f"stain catalogue 404: no entry for {stain!r}")
        chem = TREAT[stain]
    except LookupError:
        return {"stain": stain, "treatments": []}
    pre = "neutral pre-spray" if "wool" in fibre else "alkaline pre-spray"
    return {"stain": stain, "treatments": [pre, chem]}


@tool
def crew_availability(date: str) -> dict:
    """Crews free on a date."""
    return {"date": date, "crews": CREWS[date]}


@tool
def price_job(area_m2: float, fibre: str) -> dict:
    """Price a job from its total area and carpet fibre."""
    rate = RATE["nylon" if active("carpet_price") else fibre]
    return {"rate_per_m2": rate, "total": round(area_m2 * rate, 2)}


@tool
def submit_work_order(order: dict) -> dict:
    """Submit the work order; the operations API validates it."""
    cust = order["customer"]
    missing = [r for r in order["ordered_rooms"] if r not in order["areas"]]
    if missing:
        raise Refused(f"work-orders 422: rooms {missing} were ordered but have no area line")
    hours = sum(order["areas"].values()) / 12.0
    if hours > 6:
        raise Refused(f"work-orders 422: estimated {hours:.1f} h exceeds the single-visit limit of 6 h")
    for line in order["treatments"]:
        if not line["treatments"]:
            raise Refused(f"work-orders 422: stain {line['stain']!r} has no treatment line")
        if "wool" in FIBRE[cust] and "alkaline pre-spray" in line["treatments"]:
            raise Refused(f"work-orders 422: 'alkaline pre-spray' is not approved for {FIBRE[cust]} carpet")
    if order["crew"] not in CREWS[order["date"]]:
        raise Refused(f"work-orders 409: crew {order['crew']} is not rostered on {order['date']}")
    expected = RATE[FIBRE[cust]]
    if abs(order["price"]["rate_per_m2"] - expected) > 1e-9:
        raise Refused(f"work-orders 422: rate {order['price']['rate_per_m2']:.2f}/m2 does not match the {FIBRE[cust]} rate card {expected:.2f}/m2")
    return {"work_order": f"WO-{cust[3:]}-{order['date'][8:]}", "crew": order["crew"]}


class S(TypedDict, total=False):
    customer: str
    text: str
    job: dict
    plan: str
    areas: dict
    pending: list
    treatments: list
    crews: dict
    slot: dict
    result: dict


def _msgs(role: str, payload: Any) -> list:
    return [SystemMessage(f"ROLE: {role}\nYou dispatch carpet cleaning crews."), HumanMessage(json.dumps(payload, sort_keys=True))]


def intake(state: S, config: RunnableConfig) -> S:
    job = (chat_model("carpet-llm") | IntakeParser()).invoke(_msgs("intake", {"text": state["text"]}), config)
    return {"job": job, "pending": list(job["stains"]), "treatments": []}


def floor_plan(state: S, config: RunnableConfig) -> S:
    docs = FloorPlanRetriever().invoke(state["customer"], config)
    return {"plan": docs[0].page_content}


def measure(state: S, config: RunnableConfig) -> S:
    res = get_room_sizes.invoke({"customer": state["customer"], "rooms": state["job"]["rooms"], "plan": state["plan"]}, config)
    return {"areas": res["areas"]}


def stains(state: S, config: RunnableConfig) -> S:
    stain, rest = state["pending"][0], state["pending"][1:]
    line = lookup_stain.invoke({"stain": stain, "fibre": state["job"]["fibre"]}, config)
    return {"pending": rest, "treatments": state["treatments"] + [line]}


def crew(state: S, config: RunnableConfig) -> S:
    return {"crews": crew_availability.invoke({"date": state["job"]["date"]}, config)}


def schedule(state: S, config: RunnableConfig) -> S:
    hours = round(sum(state["areas"].values()) / 12.0, 1)
    msg = chat_model("carpet-llm").invoke(_msgs("schedule", {"crews": state["crews"]["crews"], "hours": hours, "date": state["job"]["date"]}), config)
    return {"slot": json.loads(msg.content)}


def finalize(state: S, config: RunnableConfig) -> S:
    price = price_job.invoke({"area_m2": round(sum(state["areas"].values()), 1), "fibre": state["job"]["fibre"]}, config)
    order = {"customer": state["customer"], "ordered_rooms": state["job"]["rooms"], "areas": state["areas"], "treatments": state["treatments"],
             "crew": state["slot"]["crew"], "date": state["job"]["date"], "price": price}
    return {"result": submit_work_order.invoke({"order": order}, config)}


def build() -> Any:
    g = StateGraph(S)
    for fn in (intake, floor_plan, measure, stains, crew, schedule, finalize):
        g.add_node(fn.__name__, fn)
    g.set_entry_point("intake")
    g.add_edge("intake", "floor_plan")
    g.add_edge("floor_plan", "measure")
    g.add_edge("measure", "stains")
    g.add_conditional_edges("stains", lambda s: "stains" if s["pending"] else "crew", ["stains", "crew"])
    g.add_edge("crew", "schedule")
    g.add_edge("schedule", "finalize")
    g.add_edge("finalize", END)
    return g.compile()


def record(main_input: str, path: Path) -> None:
    job = JOBS[main_input]
    tracer = TrajdebugTracer(path=str(path), name=NAME, task="dispatch a carpet cleaning job")
    try:
        build().invoke({"customer": job["customer"], "text": job["text"]}, config={"callbacks": [tracer], "recursion_limit": 40})
    except Refused:
        pass
