"""Hedge laying contractor: surveys a farm's hedges, plans the laying, prices stakes and binders through a
materials subgraph and files the claim with the county hedgerow scheme (LangGraph + ChatOpenAI)."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import ApiError, Case, last_user_json
from .kit import active

NAME = "hedge-claims"
ROUTE = "langgraph"
DOMAIN = "hedge laying"
SHAPE = "intake -> surveyor model <-> tools (survey, crew dates) loop -> planner model -> schedule -> materials subgraph (price tool, count) -> file scheme claim"

INPUTS: dict[str, dict[str, Any]] = {
    "combe": {"agreement": "AG-DV-3107", "farm": "Combe Barton", "county": "Devon", "hedges": ["H1", "H2", "H3"], "style": "Devon"},
    "elmlane": {"agreement": "AG-DV-3122", "farm": "Elm Lane Farm", "county": "Devon", "hedges": ["E1", "E2"], "style": "Devon"},
    "longacre": {"agreement": "AG-SO-2011", "farm": "Long Acre", "county": "Somerset", "hedges": ["L1", "L2"], "style": "Somerset"},
    "ridgeway": {"agreement": "AG-DV-3140", "farm": "Ridgeway", "county": "Devon", "hedges": ["R1"], "style": "Devon"},
    "millbrook": {"agreement": "AG-SO-2019", "farm": "Millbrook", "county": "Somerset", "hedges": ["M1", "M2", "M3"], "style": "Somerset"},
    "holt": {"agreement": "AG-DV-3151", "farm": "Holt End", "county": "Devon", "hedges": ["T1", "T2"], "style": "Devon"},
}
MAIN = ("combe", "elmlane")
REFS = ("longacre", "ridgeway", "millbrook", "holt")

CASES = [
    Case("hls-1", "plan_error", "combe", ("ChatOpenAI", 4), ("file_scheme_claim", 1),
         "The planner lays only the hedges longer than 40 m, so the claim leaves out a hedge the agreement requires."),
    Case("hls-2", "tool_ignores_argument", "elmlane", ("get_material_prices", 1), ("file_scheme_claim", 1),
         "The supplier price tool ignores the county it is given and answers the national list, so the binder rate is over the county cap."),
    Case("hls-3", "stale_data", "combe", ("fetch_hedge_survey", 1), ("file_scheme_claim", 1),
         "The survey tool answers from its 2019 cache, so a hedge is claimed at its old length."),
    Case("hls-4", "off_by_one", "elmlane", ("count_materials", 1), ("file_scheme_claim", 1),
         "Stakes are counted as length over spacing without the closing stake, one short per hedge."),
    Case("hls-5", "format_drift", "combe", ("crew_availability", 1), ("file_scheme_claim", 1),
         "The crew calendar starts answering day-first dates, which the scheduler reads month-first, moving the work into the nesting season."),
]

SURVEY_2026 = {"H1": 64.0, "H2": 38.5, "H3": 52.0, "E1": 71.5, "E2": 45.0, "L1": 58.0, "L2": 41.5, "R1": 90.0,
               "M1": 44.0, "M2": 62.5, "M3": 47.0, "T1": 55.0, "T2": 66.0}
SURVEY_2019 = {**SURVEY_2026, "H1": 49.0}
PRICES = {"national": {"stake": 0.95, "binder_m": 0.42}, "Devon": {"stake": 0.80, "binder_m": 0.31},
          "Somerset": {"stake": 0.85, "binder_m": 0.33}}
CAPS = {"Devon": {"stake": 0.90, "binder_m": 0.35}, "Somerset": {"stake": 0.90, "binder_m": 0.35}}
SPACING = {"Devon": 0.5, "Somerset": 0.6}
CREW_DATES = ["2027-11-08", "2027-11-15", "2027-12-06", "2028-01-10"]


def _tool_msgs(body: dict) -> dict[str, str]:
    out = {}
    for m in body.get("messages", []):
        if m.get("role") == "tool":
            out[m.get("name") or m.get("tool_call_id", "")] = m.get("content")
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                out.setdefault("_asked_" + c["function"]["name"], "1")
    return out


def policy(req: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    body = req.body
    if body.get("tools"):
        seen = _tool_msgs(body)
        p = last_user_json(body)
        if "_asked_fetch_hedge_survey" not in seen:
            return Reply(tool_calls=(tool_call("fetch_hedge_survey", {"hedges": p["hedges"], "county": p["county"]}),))
        if "_asked_crew_availability" not in seen:
            return Reply(tool_calls=(tool_call("crew_availability", {"county": p["county"], "season": "2027-28"}),))
        return "Survey and crew calendar gathered."
    p = last_user_json(body)
    if p.get("task") == "plan":
        lay = [h for h, m in p["survey"].items()]
        if active("hls-1"):
            lay = [h for h, m in p["survey"].items() if m > 40]
        return json.dumps({"lay": lay, "style": p["style"], "window": "November to February", "crew": 3})
    return "{}"


@tool
def fetch_hedge_survey(hedges: list[str], county: str) -> str:
    """Surveyed lengths (metres) of the named hedges, from the county hedgerow register."""
    src = SURVEY_2019 if active("hls-3") else SURVEY_2026
    year = 2019 if src is SURVEY_2019 else 2026
    return json.dumps({"county": county, "surveyed": year, "lengths_m": {h: src[h] for h in hedges}})


@tool
def crew_availability(county: str, season: str) -> str:
    """Dates the laying crew is free in the county this season."""
    dates = list(CREW_DATES)
    if active("hls-5"):
        dates = [dt.date.fromisoformat(d).strftime("%d/%m/%Y") for d in dates]
    return json.dumps({"county": county, "season": season, "free": dates})


@tool
def get_material_prices(county: str, items: list[str]) -> str:
    """Supplier prices for hazel stakes and binders delivered in the county."""
    region = "national" if active("hls-2") else county
    return json.dumps({"county": county, "prices": {i: PRICES[region][i] for i in items}, "currency": "GBP"})


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    request: dict
    survey: dict
    crew_dates: list
    plan: dict
    schedule: list
    prices: dict
    materials: list
    claim: dict


def make_graph(base_url: str):
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=base_url, api_key="sk-test", temperature=0, max_retries=0)
    tools = [fetch_hedge_survey, crew_availability]
    surveyor_llm = llm.bind_tools(tools)

    def intake(state: State) -> dict:
        r = state["request"]
        ask = {"task": "survey", "agreement": r["agreement"], "hedges": r["hedges"], "county": r["county"]}
        return {"messages": [SystemMessage("You survey hedges for laying claims."), HumanMessage(json.dumps(ask))]}

    def surveyor(state: State) -> dict:
        return {"messages": [surveyor_llm.invoke(state["messages"])]}

    def after_surveyor(state: State) -> str:
        return "tools" if state["messages"][-1].tool_calls else "collect"

    def collect(state: State) -> dict:
        out: dict = {}
        for m in state["messages"]:
            if getattr(m, "name", None) == "fetch_hedge_survey":
                out["survey"] = json.loads(m.content)["lengths_m"]
            if getattr(m, "name", None) == "crew_availability":
                out["crew_dates"] = json.loads(m.content)["free"]
        return out

    def planner(state: State) -> dict:
        r = state["request"]
        msg = llm.invoke([SystemMessage("You plan hedge laying work."),
                          HumanMessage(json.dumps({"task": "plan", "survey": state["survey"], "style": r["style"]}))])
        return {"plan": json.loads(msg.content)}

    def schedule(state: State) -> dict:
        days = []
        for d in state["crew_dates"]:
            if "/" in d:
                m, dd, y = d.split("/")
                d = f"{y}-{int(m):02d}-{int(dd):02d}"
            days.append(d)
        plan = state["plan"]
        per_day = math.ceil(len(plan["lay"]) / 2)
        return {"schedule": [{"date": days[i // per_day], "hedge": h} for i, h in enumerate(plan["lay"])]}

    def price_materials(state: State) -> dict:
        r = state["request"]
        raw = get_material_prices.invoke({"county": r["county"], "items": ["stake", "binder_m"]})
        return {"prices": json.loads(raw)["prices"]}

    def count_materials(state: State) -> dict:
        sp = SPACING[state["request"]["style"]]
        rows = []
        for h in state["plan"]["lay"]:
            length = state["survey"][h]
            stakes = int(length / sp) if active("hls-4") else int(length / sp) + 1
            rows.append({"hedge": h, "length_m": length, "stakes": stakes, "binder_m": round(length * 2, 1)})
        return {"materials": rows}

    sub = StateGraph(State)
    sub.add_node("price_materials", price_materials)
    sub.add_node("count_materials", count_materials)
    sub.add_edge(START, "price_materials")
    sub.add_edge("price_materials", "count_materials")
    sub.add_edge("count_materials", END)
    materials = sub.compile()

    def file_scheme_claim(state: State) -> dict:
        r = state["request"]
        caps = CAPS[r["county"]]
        laid = {m["hedge"] for m in state["materials"]}
        missing = [h for h in r["hedges"] if h not in laid]
        if missing:
            raise ApiError(422, {"error": "incomplete_claim", "detail": f"agreement {r['agreement']} requires hedges {r['hedges']}; claim covers {sorted(laid)}"})
        for row in state["materials"]:
            if abs(row["length_m"] - SURVEY_2026[row["hedge"]]) > 0.5:
                raise ApiError(422, {"error": "length_mismatch", "detail": f"hedge {row['hedge']} claimed at {row['length_m']} m; the register records {SURVEY_2026[row['hedge']]} m"})
            need = int(row["length_m"] / SPACING[r["style"]]) + 1
            if row["stakes"] != need:
                raise ApiError(422, {"error": "stake_count", "detail": f"hedge {row['hedge']}: {row['stakes']} stakes claimed, {need} required at {SPACING[r['style']]} m spacing"})
        for item, price in state["prices"].items():
            if price > caps[item]:
                raise ApiError(422, {"error": "rate_cap", "detail": f"{item} rate {price:.2f} GBP exceeds the {r['county']} cap of {caps[item]:.2f} GBP"})
        for s in state["schedule"]:
            month = int(s["date"][5:7])
            if 3 <= month <= 8:
                raise ApiError(422, {"error": "nesting_season", "detail": f"work on {s['hedge']} dated {s['date']} falls between 1 March and 31 August"})
        total = sum(row["stakes"] * state["prices"]["stake"] + row["binder_m"] * state["prices"]["binder_m"] for row in state["materials"])
        return {"claim": {"agreement": r["agreement"], "status": "lodged", "materials_gbp": round(total, 2)}}

    g = StateGraph(State)
    g.add_node("intake", intake)
    g.add_node("surveyor", surveyor)
    g.add_node("tools", ToolNode(tools))
    g.add_node("collect", collect)
    g.add_node("planner", planner)
    g.add_node("schedule", schedule)
    g.add_node("materials", materials)
    g.add_node("file_scheme_claim", file_scheme_claim)
    g.add_edge(START, "intake")
    g.add_edge("intake", "surveyor")
    g.add_conditional_edges("surveyor", after_surveyor, {"tools": "tools", "collect": "collect"})
    g.add_edge("tools", "surveyor")
    g.add_edge("collect", "planner")
    g.add_edge("planner", "schedule")
    g.add_edge("schedule", "materials")
    g.add_edge("materials", "file_scheme_claim")
    g.add_edge("file_scheme_claim", END)
    return g.compile()


def record(inp_id: str, out: Path, base_url: str) -> None:
    graph = make_graph(base_url)
    req = INPUTS[inp_id]
    tracer = TrajdebugTracer(path=str(out), name=NAME, task=f"hedge laying claim {req['agreement']}")
    try:
        graph.invoke({"request": req}, config={"callbacks": [tracer], "run_name": NAME})
    except ApiError:
        pass
