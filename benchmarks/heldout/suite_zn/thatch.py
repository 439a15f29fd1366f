"""Thatched-roof repair planner (LangGraph + ChatOpenAI + TrajdebugTracer): a survey note becomes a quote."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool

from . import common
from .common import Case
from .kit import active

NAME = "thatch-repair-planner"
ROUTE = "langgraph"
DOMAIN = "thatched-roof repairs"
SHAPE = "intake (llm) -> read_job -> guidance retriever -> plan_work (llm) -> estimate_materials -> source_reed (tool) -> schedule_crew (tool loop) -> weather (tool) -> build_quote -> finalise: letter (llm) + submit_quote (tool)"
MODEL = "thatch-planner-1"

INPUTS = [
    {"job": "TH-301", "area": [46, "m2"], "material": "water reed", "ridge": "block-cut sedge", "listed": "LB-1187",
     "window": ["2025-03-03", "2025-03-28"], "start": "2025-03-10", "grade": "Norfolk water reed grade A",
     "busy_weeks": 2},
    {"job": "TH-318", "area": [560, "sq ft"], "material": "water reed", "ridge": "flush sedge", "listed": None,
     "window": ["2025-04-07", "2025-05-02"], "start": "2025-04-14", "grade": "standard", "busy_weeks": 1},
    {"job": "TH-322", "area": [38, "m2"], "material": "long straw", "ridge": "wrap-over straw", "listed": None,
     "window": ["2025-05-05", "2025-05-30"], "start": "2025-05-12", "grade": "standard", "busy_weeks": 0},
    {"job": "TH-327", "area": [420, "sq ft"], "material": "water reed", "ridge": "block-cut sedge", "listed": "LB-2240",
     "window": ["2025-06-02", "2025-06-27"], "start": "2025-06-09", "grade": "Norfolk water reed grade A",
     "busy_weeks": 1},
    {"job": "TH-333", "area": [52, "m2"], "material": "long straw", "ridge": "flush straw", "listed": "LB-0931",
     "window": ["2025-07-07", "2025-08-01"], "start": "2025-07-14", "grade": "standard", "busy_weeks": 2},
    {"job": "TH-340", "area": [30, "m2"], "material": "water reed", "ridge": "flush sedge", "listed": None,
     "window": ["2025-08-04", "2025-08-29"], "start": "2025-08-11", "grade": "standard", "busy_weeks": 0},
]

CASES = [
    Case("zn_thatch_1", "plan_error", 0, "ChatOpenAI", 2, "submit_quote",
         "the work plan from the model leaves out the ridge stage although the job asks for a new ridge."),
    Case("zn_thatch_2", "wrong_retrieval", 0, "GuidanceRetriever", 1, "submit_quote",
         "the guidance retriever queries without the thatch material and returns the long-straw note for a water-reed roof, so the coat is too thin."),
    Case("zn_thatch_3", "unit_error", 1, "estimate_materials", 1, "quote_reed",
         "estimate_materials takes a roof area given in square feet as square metres, so the bundle count is ten times too high."),
    Case("zn_thatch_4", "format_drift", 0, "ChatOpenAI", 1, "submit_quote",
         "the intake model answers the preferred start as DD/MM/YYYY instead of ISO, and read_job reads it month first."),
    Case("zn_thatch_5", "tool_ignores_argument", 0, "quote_reed", 1, "submit_quote",
         "quote_reed ignores the grade argument and quotes standard reed for a listed roof that needs grade A."),
]

GUIDANCE = [
    {"id": "G-WR", "material": "water reed", "text": "Water reed: new coat of 350 mm minimum, laid at 45 degrees or steeper; ridge renewed every 10-15 years.", "coat_mm": 350},
    {"id": "G-LS", "material": "long straw", "text": "Long straw: coat of 300 mm, spar coat over existing base; ridge renewed with each coat.", "coat_mm": 300},
    {"id": "G-GEN", "material": "any", "text": "All thatch: check fire retardant barrier and chimney clearance of 2.3 m.", "coat_mm": None},
]
STOCK_BUNDLES = 900
MIN_COAT = {"water reed": 350, "long straw": 300}


def _by_job(text: str) -> dict:
    return next(i for i in INPUTS if i["job"] in text)


class GuidanceRetriever(BaseRetriever):
    """Conservation guidance notes, searched by material."""

    def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> list[Document]:
        words = set(query.lower().split())
        scored = sorted(GUIDANCE, key=lambda g: (-len(words & set(g["material"].split())), g["id"]))
        if "material" not in query and "coat" in words:
            scored = sorted(GUIDANCE, key=lambda g: (g["coat_mm"] is None, g["coat_mm"] or 0))
        return [Document(page_content=g["text"], metadata={"id": g["id"], "coat_mm": g["coat_mm"]}) for g in scored[:2]]


@common.policy(MODEL)
def _policy(body: dict) -> str:
    system = body["messages"][0]["content"]
    user = common.first_user(body)
    if "survey" in system:
        inp = _by_job(user)
        start = inp["start"]
        if active("zn_thatch_4"):
            start = datetime.fromisoformat(start).strftime("%d/%m/%Y")
        return json.dumps({"job": inp["job"], "roof_area": f"{inp['area'][0]} {inp['area'][1]}",
                           "material": inp["material"], "ridge": inp["ridge"], "listed_building": inp["listed"],
                           "client_window": inp["window"], "preferred_start": start, "reed_grade": inp["grade"]})
    data = common.data_block(body)
    if "plan" in system:
        stages = ["strip weathered coat", "repair fixings", "lay new coat", "dress and trim", "ridge"]
        if active("zn_thatch_1"):
            stages = stages[:-1]
        coat = next(d["coat_mm"] for d in data["guidance"] if d["coat_mm"])
        return json.dumps({"stages": stages, "coat_mm": coat, "ridge_type": data["job"]["ridge"]})
    return (f"Dear client, please find our quotation {data['quote_id']} for job {data['job']}: "
            f"{data['total']:.2f} GBP, crew from {data['start']}.")


@tool
def quote_reed(bundles: int, grade: str, region: str) -> str:
    """Ask the reed merchant for price and availability of a number of bundles of a grade."""
    if bundles > STOCK_BUNDLES:
        raise ValueError(f"HTTP 409 Conflict: {{\"message\": \"{bundles} bundles requested exceeds stock of "
                         f"{STOCK_BUNDLES} at Broads Reed Merchants ({region})\"}}")
    given = "standard" if active("zn_thatch_5") else grade
    price = 4.8 if given == "standard" else 6.2
    return json.dumps({"bundles": bundles, "grade": given, "price_per_bundle": price, "delivery_days": 10})


@tool
def check_crew(week_start: str) -> str:
    """Whether the thatching crew is free in the week starting on a date."""
    return json.dumps({"week_start": week_start, "free": _crew_free(week_start)})


_busy: dict[str, int] = {}


def _crew_free(week_start: str) -> bool:
    if _busy.get("left", 0) <= 0:
        return True
    _busy["left"] -= 1
    return False


@tool
def weather_outlook(week_start: str) -> str:
    """Rain days forecast for a week."""
    d = date.fromisoformat(week_start)
    return json.dumps({"week_start": week_start, "rain_days": (d.day * 3) % 4})


@tool
def submit_quote(quote: str) -> str:
    """Submit the quote to the estimating system (checks it against the job record)."""
    q = json.loads(quote)
    inp = next(i for i in INPUTS if i["job"] == q["job"])
    lo, hi = inp["window"]
    if not lo <= q["start"] <= hi:
        raise ValueError(f"HTTP 422: {{\"message\": \"crew start {q['start']} is outside the client window {lo} to {hi}\"}}")
    if "ridge" not in q["stages"]:
        raise ValueError(f"HTTP 422: {{\"message\": \"quote {q['quote_id']} has no ridge line but job {q['job']} "
                         f"specifies a {inp['ridge']} ridge\"}}")
    if q["coat_mm"] < MIN_COAT[inp["material"]]:
        raise ValueError(f"HTTP 422: {{\"message\": \"coat thickness {q['coat_mm']} mm is below the "
                         f"{MIN_COAT[inp['material']]} mm minimum for {inp['material']}\"}}")
    if inp["listed"] and q["reed_grade"] != inp["grade"]:
        raise ValueError(f"HTTP 422: {{\"message\": \"reed grade '{q['reed_grade']}' does not meet consent "
                         f"{inp['listed']} condition '{inp['grade']}'\"}}")
    return json.dumps({"status": "submitted", "quote_id": q["quote_id"]})


class State(TypedDict, total=False):
    request: str
    job: dict
    guidance: list
    plan: dict
    materials: dict
    supply: dict
    crew_week: str
    weather: list
    quote: dict
    letter: str
    result: str


def _build(llm: Any) -> Any:
    from langgraph.graph import END, START, StateGraph

    def intake(state: State) -> dict:
        msg = llm.invoke([("system", "You read thatch survey notes and answer JSON."), ("user", state["request"])])
        return {"job": json.loads(msg.content)}

    def read_job(state: State) -> dict:
        raw = state["job"]
        num, unit = raw["roof_area"].split(" ", 1)
        start = raw["preferred_start"]
        if "/" in start:
            start = datetime.strptime(start, "%m/%d/%Y").date().isoformat()
        return {"job": {**raw, "area_value": float(num), "area_unit": unit, "preferred_start": start}}

    def retrieve_guidance(state: State) -> dict:
        query = f"coat guidance material {state['job']['material']}"
        if active("zn_thatch_2"):
            query = "coat thickness guidance"
        docs = GuidanceRetriever().invoke(query)
        return {"guidance": [{"id": d.metadata["id"], "text": d.page_content, "coat_mm": d.metadata["coat_mm"]} for d in docs]}

    def plan_work(state: State) -> dict:
        data = {"job": state["job"], "guidance": state["guidance"]}
        msg = llm.invoke([("system", "You plan thatch repair work as JSON."), ("user", f"DATA:{json.dumps(data)}")])
        return {"plan": json.loads(msg.content)}

    def estimate_materials(state: State) -> dict:
        job = state["job"]
        area_m2 = job["area_value"]
        if job["area_unit"] == "sq ft" and not active("zn_thatch_3"):
            area_m2 = area_m2 * 0.0929
        bundles = int(area_m2 * state["plan"]["coat_mm"] / 350 * 9 + 0.999)
        return {"materials": {"area_m2": round(area_m2, 1), "bundles": bundles}}

    def source_reed(state: State) -> dict:
        out = quote_reed.invoke({"bundles": state["materials"]["bundles"], "grade": state["job"]["reed_grade"],
                                 "region": "Norfolk"})
        return {"supply": json.loads(out)}

    def schedule_crew(state: State) -> dict:
        week = date.fromisoformat(state["job"]["preferred_start"])
        inp = _by_job(state["request"])
        _busy["left"] = inp["busy_weeks"]
        for _ in range(6):
            if json.loads(check_crew.invoke({"week_start": week.isoformat()}))["free"]:
                break
            week += timedelta(days=7)
        return {"crew_week": week.isoformat()}

    def weather(state: State) -> dict:
        w = json.loads(weather_outlook.invoke({"week_start": state["crew_week"]}))
        return {"weather": [w]}

    def build_quote(state: State) -> dict:
        m, s, p = state["materials"], state["supply"], state["plan"]
        labour = 38.0 * m["area_m2"]
        total = round(m["bundles"] * s["price_per_bundle"] + labour + (650 if "ridge" in p["stages"] else 0), 2)
        return {"quote": {"quote_id": f"Q-{state['job']['job']}", "job": state["job"]["job"], "stages": p["stages"],
                          "coat_mm": p["coat_mm"], "reed_grade": s["grade"], "bundles": m["bundles"],
                          "start": state["crew_week"], "total": total}}

    def finalise(state: State) -> dict:
        q = state["quote"]
        data = {"quote_id": q["quote_id"], "job": q["job"], "total": q["total"], "start": q["start"]}
        letter = llm.invoke([("system", "You write covering letters for quotes."), ("user", f"DATA:{json.dumps(data)}")])
        return {"letter": letter.content, "result": submit_quote.invoke({"quote": json.dumps(q)})}

    g = StateGraph(State)
    nodes = [intake, read_job, retrieve_guidance, plan_work, estimate_materials, source_reed, schedule_crew, weather,
             build_quote, finalise]
    for fn in nodes:
        g.add_node(fn.__name__, fn)
    g.add_edge(START, nodes[0].__name__)
    for a, b in zip(nodes, nodes[1:]):
        g.add_edge(a.__name__, b.__name__)
    g.add_edge(nodes[-1].__name__, END)
    return g.compile()


def record(path: Path, inp: dict) -> None:
    from langchain_openai import ChatOpenAI

    from trajdebug.integrations.langchain import TrajdebugTracer

    llm = ChatOpenAI(model=MODEL, base_url=common.base_url(), api_key="sk-local-test", max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"quote thatch job {inp['job']}")
    request = (f"Survey note for job {inp['job']}: roof of {inp['area'][0]} {inp['area'][1]} in {inp['material']}, "
               f"ridge {inp['ridge']}, listed building {inp['listed'] or 'no'}; client available "
               f"{inp['window'][0]} to {inp['window'][1]}, would like us to start {inp['start']}; reed {inp['grade']}.")
    _build(llm).invoke({"request": request}, config={"callbacks": [tracer], "run_name": NAME})
