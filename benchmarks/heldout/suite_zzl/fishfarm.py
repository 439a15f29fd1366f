"""Fish farm weekly feed scheduler (langgraph route)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import TypedDict

import kit
from harness import CheckFailed, chat_policy, record_graph
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph


NAME = "fishfarm-feed-planner"
ROUTE = "langgraph"
DOMAIN = "a fish farm's feed scheduling"
SHAPE = ("StateGraph: pen registry tool -> biomass node -> week planning node -> per-pen planner sub-graph "
         "(water temperature tool, feed-table tool, LLM ration draft, parse) run for every pen -> silo tool + "
         "LLM order note + order submission tool -> crew-board tool -> validator")

REGISTRY = {
    "Loch Creran": {"main_species": "salmon", "pens": [
        {"pen_id": "P-12", "species": "salmon", "count": 42000, "avg_weight_g": 1850},
        {"pen_id": "P-30", "species": "salmon", "count": 38000, "avg_weight_g": 2400},
        {"pen_id": "P-21", "species": "trout", "count": 30000, "avg_weight_g": 950}]},
    "Sound of Mull": {"main_species": "salmon", "pens": [
        {"pen_id": "M-04", "species": "salmon", "count": 51000, "avg_weight_g": 1200},
        {"pen_id": "M-07", "species": "salmon", "count": 47000, "avg_weight_g": 3100},
        {"pen_id": "M-11", "species": "trout", "count": 26000, "avg_weight_g": 700}]},
    "Kyle Rhea": {"main_species": "trout", "pens": [
        {"pen_id": "K-01", "species": "trout", "count": 33000, "avg_weight_g": 1100},
        {"pen_id": "K-10", "species": "trout", "count": 29000, "avg_weight_g": 1600},
        {"pen_id": "K-14", "species": "salmon", "count": 24000, "avg_weight_g": 2100}]},
}
# today's logger readings and the cached readings of the week before
LOGGER = {"P-12": 8.1, "P-21": 7.6, "P-30": 8.4, "M-04": 9.2, "M-07": 9.6, "M-11": 11.3, "K-01": 10.4,
          "K-10": 10.9, "K-14": 11.6}
LAST_WEEK = {"P-12": 10.6, "P-21": 10.2, "P-30": 11.0, "M-04": 11.8, "M-07": 12.1, "M-11": 12.9, "K-01": 12.2,
             "K-10": 12.6, "K-14": 13.0}
FEED_TABLE = {"salmon": [(8.0, 0.55), (10.0, 0.8), (12.0, 1.05), (99.0, 1.3)],
              "trout": [(8.0, 0.9), (10.0, 1.3), (12.0, 1.7), (99.0, 2.0)]}
SILO = {"Loch Creran": 9000.0, "Sound of Mull": 12000.0, "Kyle Rhea": 7000.0}

INPUTS = [
    {"site": "Loch Creran", "week_start": "2027-02-08"},
    {"site": "Sound of Mull", "week_start": "2027-02-08"},
    {"site": "Kyle Rhea", "week_start": "2027-02-15"},
    {"site": "Loch Creran", "week_start": "2027-02-22"},
    {"site": "Sound of Mull", "week_start": "2027-03-01"},
    {"site": "Kyle Rhea", "week_start": "2027-03-08"},
    {"site": "Loch Creran", "week_start": "2027-03-15"},
]

CASES = [
    {"id": "zzl_fishfarm_1", "input": 1, "kind": "stale_data", "root": ("water_temp", 3),
     "failure": ("validate_schedule", 1),
     "description": "The water temperature tool answers pen M-11 from last week's cache (12.9 C instead of the "
                    "logger's 11.3 C), so its ration uses the warmer band."},
    {"id": "zzl_fishfarm_2", "input": 0, "kind": "wrong_tool_args", "root": ("feed_table_lookup", 3),
     "failure": ("validate_schedule", 1),
     "description": "The rate lookup for trout pen P-21 is called with the site's main species (salmon), so the "
                    "pen gets the salmon feeding rate."},
    {"id": "zzl_fishfarm_3", "input": 3, "kind": "subagent_wrong_entity", "root": ("draft_ration_model", 3),
     "failure": ("validate_schedule", 1),
     "description": "The pen planner asked about pen P-21 drafts the ration for pen P-12, so P-12 is scheduled "
                    "twice and P-21 not at all."},
    {"id": "zzl_fishfarm_4", "input": 2, "kind": "swallowed_error", "root": ("submit_feed_order", 1),
     "failure": ("validate_schedule", 1),
     "description": "The order submission catches the supplier's rejection and reports the order as queued with "
                    "no order id."},
    {"id": "zzl_fishfarm_5", "input": 5, "kind": "off_by_one", "root": ("plan_week", 1),
     "failure": ("validate_schedule", 1),
     "description": "The week planner builds its dates with range(1, 7), so the feeding week has six days."},
]


def _rate(species: str, temp: float) -> float:
    return next(r for t, r in FEED_TABLE[species] if temp <= t)


class FarmState(TypedDict, total=False):
    site: str
    week_start: str
    main_species: str
    pens: list
    biomass: dict
    days: list
    rations: list
    silo: dict
    order: dict
    board: dict


class PenState(TypedDict, total=False):
    site: str
    main_species: str
    pen: dict
    biomass_kg: float
    temp: dict
    rate: dict
    draft: str
    ration: dict
    roster: list


def _brain(inp: dict):
    def answer(system: str, user: str, messages: list[dict]):
        if system.startswith("Draft the daily ration"):
            data = json.loads(user)
            pen = data["pen_id"]
            if kit.on("zzl_fishfarm_3") and pen == "P-21":
                pen = "P-12"
            kg = round(data["biomass_kg"] * data["rate_pct"] / 100.0, 1)
            if pen != data["pen_id"]:
                other = next(p for p in data["roster"] if p["pen_id"] == pen)
                kg = round(other["count"] * other["avg_weight_g"] / 1000.0 * data["rate_pct"] / 100.0, 1)
            return (f"Ration for pen {pen}: {kg} kg/day in 3 meals.\n"
                    + json.dumps({"pen_id": pen, "daily_kg": kg, "meals": 3, "temp_c": data["temp_c"],
                                  "rate_pct": data["rate_pct"]}))
        if system.startswith("Write the feed order"):
            data = json.loads(user)
            return f"Please deliver {data['kg']} kg of grower pellets to {data['site']} for the week of {data['week']}."
        return "OK"

    return chat_policy(answer)


@tool
def read_pen_registry(site: str) -> dict:
    """Pens of a site with stock counts and average weights."""
    reg = REGISTRY[site]
    return {"site": site, "main_species": reg["main_species"], "pens": [dict(p) for p in reg["pens"]]}


@tool
def water_temp(pen_id: str) -> dict:
    """Current water temperature at a pen from the site's loggers."""
    temp = LOGGER[pen_id]
    if kit.on("zzl_fishfarm_1") and pen_id == "M-11":
        temp = LAST_WEEK[pen_id]
    return {"pen_id": pen_id, "temp_c": temp}


@tool
def feed_table_lookup(species: str, temp_c: float) -> dict:
    """Daily feeding rate (% of biomass) for a species at a water temperature."""
    return {"species": species, "temp_c": temp_c, "rate_pct": _rate(species, temp_c)}


@tool
def silo_level(site: str) -> dict:
    """Feed in the site's silos, kg."""
    return {"site": site, "kg": SILO[site]}


@tool
def submit_feed_order(site: str, kg: float, week: str) -> dict:
    """Place the week's pellet order with the feed mill."""
    try:
        if kit.on("zzl_fishfarm_4"):
            raise ConnectionError("feed mill rejected the order: account review")
        return {"order_id": f"FO-{site[:3].upper()}-{week.replace('-', '')}", "status": "confirmed", "kg": kg}
    except ConnectionError:
        return {"order_id": None, "status": "queued", "kg": kg}


@tool
def post_to_crew_board(site: str, rations: list) -> dict:
    """Publish the feeding plan on the site crew's board."""
    return {"site": site, "posted": len(rations)}


def build(llm):
    ration_llm = llm.with_config(run_name="draft_ration_model")
    order_llm = llm.with_config(run_name="order_note_model")

    def read_temp(state: PenState) -> dict:
        return {"temp": water_temp.invoke({"pen_id": state["pen"]["pen_id"]})}

    def lookup_rate(state: PenState) -> dict:
        species = state["main_species"] if kit.on("zzl_fishfarm_2") else state["pen"]["species"]
        return {"rate": feed_table_lookup.invoke({"species": species, "temp_c": state["temp"]["temp_c"]})}

    def draft_ration(state: PenState) -> dict:
        msg = ration_llm.invoke([
            SystemMessage("Draft the daily ration for the pen, as JSON after one line of text."),
            HumanMessage(json.dumps({"pen_id": state["pen"]["pen_id"], "biomass_kg": state["biomass_kg"],
                                     "temp_c": state["temp"]["temp_c"], "rate_pct": state["rate"]["rate_pct"],
                                     "roster": state["roster"]}))])
        return {"draft": msg.content}

    def parse_ration(state: PenState) -> dict:
        text = state["draft"]
        return {"ration": json.loads(text[text.index("{"):])}

    sub = StateGraph(PenState)
    for n, f in [("read_temp", read_temp), ("lookup_rate", lookup_rate), ("draft_ration", draft_ration),
                 ("parse_ration", parse_ration)]:
        sub.add_node(n, f)
    sub.add_edge(START, "read_temp")
    sub.add_edge("read_temp", "lookup_rate")
    sub.add_edge("lookup_rate", "draft_ration")
    sub.add_edge("draft_ration", "parse_ration")
    sub.add_edge("parse_ration", END)
    pen_planner = sub.compile().with_config(run_name="pen_planner")

    def load_site(state: FarmState) -> dict:
        reg = read_pen_registry.invoke({"site": state["site"]})
        return {"pens": reg["pens"], "main_species": reg["main_species"]}

    def compute_biomass(state: FarmState) -> dict:
        return {"biomass": {p["pen_id"]: round(p["count"] * p["avg_weight_g"] / 1000.0, 1) for p in state["pens"]}}

    def plan_week(state: FarmState) -> dict:
        start = dt.date.fromisoformat(state["week_start"])
        span = range(1, 7) if kit.on("zzl_fishfarm_5") else range(7)
        return {"days": [(start + dt.timedelta(days=i)).isoformat() for i in span]}

    def plan_pens(state: FarmState) -> dict:
        rations = []
        for pen in state["pens"]:
            out = pen_planner.invoke({"site": state["site"], "main_species": state["main_species"], "pen": pen,
                                      "biomass_kg": state["biomass"][pen["pen_id"]], "roster": state["pens"]})
            rations.append(out["ration"])
        return {"rations": rations}

    def order_feed(state: FarmState) -> dict:
        silo = silo_level.invoke({"site": state["site"]})
        week_kg = round(sum(r["daily_kg"] for r in state["rations"]) * len(state["days"]), 1)
        kg = max(0.0, round(week_kg - silo["kg"] * 0.5, 1))
        order_llm.invoke([SystemMessage("Write the feed order note for the mill."),
                          HumanMessage(json.dumps({"site": state["site"], "kg": kg, "week": state["week_start"]}))])
        order = submit_feed_order.invoke({"site": state["site"], "kg": kg, "week": state["week_start"]})
        return {"silo": silo, "order": order}

    def publish(state: FarmState) -> dict:
        return {"board": post_to_crew_board.invoke({"site": state["site"], "rations": state["rations"]})}

    def validate_schedule(state: FarmState) -> dict:
        days = state["days"]
        if len(days) != 7:
            raise CheckFailed(f"plan covers {len(days)} days ({days[0]}..{days[-1]}), the feeding week has 7")
        got = [r["pen_id"] for r in state["rations"]]
        for p in state["pens"]:
            if got.count(p["pen_id"]) != 1:
                raise CheckFailed(f"pen {p['pen_id']} has {got.count(p['pen_id'])} rations in the plan {got}")
        for p in state["pens"]:
            r = next(x for x in state["rations"] if x["pen_id"] == p["pen_id"])
            if abs(r["temp_c"] - LOGGER[p["pen_id"]]) > 0.5:
                raise CheckFailed(f"pen {p['pen_id']} ration assumes {r['temp_c']} C, the logger reads "
                                  f"{LOGGER[p['pen_id']]} C")
            want = _rate(p["species"], LOGGER[p["pen_id"]])
            if abs(r["rate_pct"] - want) > 1e-9:
                raise CheckFailed(f"pen {p['pen_id']} ({p['species']}) fed at {r['rate_pct']}% of biomass, "
                                  f"the feed table gives {want}% at {LOGGER[p['pen_id']]} C")
        if not state["order"].get("order_id"):
            raise CheckFailed(f"feed order for {state['order']['kg']} kg has no order id "
                              f"(status {state['order']['status']})")
        return {}

    g = StateGraph(FarmState)
    for n, f in [("load_site", load_site), ("compute_biomass", compute_biomass), ("plan_week", plan_week),
                 ("plan_pens", plan_pens), ("order_feed", order_feed), ("publish", publish),
                 ("validate_schedule", validate_schedule)]:
        g.add_node(n, f)
    g.add_edge(START, "load_site")
    g.add_edge("load_site", "compute_biomass")
    g.add_edge("compute_biomass", "plan_week")
    g.add_edge("plan_week", "plan_pens")
    g.add_edge("plan_pens", "order_feed")
    g.add_edge("order_feed", "publish")
    g.add_edge("publish", "validate_schedule")
    g.add_edge("validate_schedule", END)
    return g.compile()


def record(server, inp: dict, path: Path) -> None:
    server.use(_brain(inp))
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    record_graph(build(llm), {"site": inp["site"], "week_start": inp["week_start"]}, NAME,
                 f"feed plan for {inp['site']} from {inp['week_start']}", path)
