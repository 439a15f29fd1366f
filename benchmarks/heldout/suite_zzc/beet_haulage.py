"""Sugar beet harvest logistics: clamp survey, tare parsing, lorry planning loop, factory slot booking (langgraph)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, brain, last_user
from .kit import active

NAME = "beet-haulage-planner"
ROUTE = "langgraph"
DOMAIN = "sugar beet harvest logistics"
SHAPE = "clamp survey tool, sample tare parse, LLM lorry plan, loading loop, haulage quote and factory slot booking"

INPUTS = {
    "hol": {"farm": "Holme Fen", "clamps": ["C1", "C2", "C3"], "factory": "Wissington", "day": "2026-10-14"},
    "bur": {"farm": "Burnt Fen", "clamps": ["C4", "C5"], "factory": "Cantley", "day": "2026-10-15"},
    "r1": {"farm": "Ten Mile Bank", "clamps": ["C2", "C5"], "factory": "Wissington", "day": "2026-10-16"},
    "r2": {"farm": "Feltwell", "clamps": ["C1", "C4", "C5"], "factory": "Bury", "day": "2026-10-17"},
    "r3": {"farm": "Southery", "clamps": ["C3"], "factory": "Cantley", "day": "2026-10-18"},
    "r4": {"farm": "Hockwold", "clamps": ["C2", "C3", "C4"], "factory": "Bury", "day": "2026-10-19"},
}
REFS = ["r1", "r2", "r3", "r4"]
CLAMP_T = {"C1": 118.0, "C2": 96.5, "C3": 140.0, "C4": 74.0, "C5": 102.0}
RATE = {"Wissington": 6.10, "Cantley": 7.40, "Bury": 5.85}

CASES = [
    Case("beet_quote_ignores_factory", "bh1", "tool_ignores_argument", "hol", ("quote_haulage", 1, "tool"),
         ("book_factory_slot", 1),
         "The haulage quote tool prices every load at its default factory rate whatever factory it is asked for."),
    Case("beet_clamp_kg", "bh2", "unit_error", "bur", ("sum_clamps", 1, "other"),
         ("book_factory_slot", 1),
         "sum_clamps adds the clamp survey in kilograms as if tonnes, so the tonnage booked is a thousand times too large."),
    Case("beet_loads_rounding", "bh3", "off_by_one", "hol", ("size_fleet", 1, "other"),
         ("book_factory_slot", 1),
         "size_fleet floors the lorry count instead of rounding up, leaving the last part load without a lorry."),
    Case("beet_old_survey", "bh4", "stale_data", "bur", ("survey_clamp", 2, "tool"),
         ("book_factory_slot", 1),
         "The clamp survey for C5 comes from last week's cached survey, before part of the clamp was lifted."),
    Case("beet_tare_parse", "bh5", "lossy_parsing", "hol", ("read_tare_sample", 1, "other"),
         ("book_factory_slot", 1),
         "read_tare_sample drops the decimal of the dirt tare percentage, so clean tonnage is overstated."),
]


@brain("beet")
def _brain(body: dict) -> str:
    req = json.loads(last_user(body))
    if req["ask"] == "plan":
        return json.dumps({"lorry_t": 29.0, "order": sorted(req["clamps"], key=lambda c: -req["tonnes"][c])})
    if req["ask"] == "check":
        return json.dumps({"ok": True, "note": f"{req['loads']} loads for {req['clean_t']} t clean"})
    return "{}"


def _ask(llm, payload, config) -> dict:
    m = llm.invoke([SystemMessage("[agent:beet] You plan beet haulage. Answer JSON."),
                    HumanMessage(json.dumps(payload))], config=config)
    return json.loads(m.content)


@tool
def survey_clamp(clamp: str, day: str) -> dict:
    """Latest drone survey of a beet clamp."""
    t = CLAMP_T[clamp]
    when = day
    if active("bh4") and clamp == "C5":
        t, when = t + 41.0, "2026-10-08"
    return {"clamp": clamp, "kg": t * 1000.0, "surveyed": when}


@tool
def tare_lab(farm: str) -> str:
    """Dirt tare sample result from the factory lab."""
    return f"farm={farm};dirt_tare=7.8%;sugar=17.2%"


@tool
def quote_haulage(factory: str, tonnes: float, loads: int) -> dict:
    """Quote haulage to a factory."""
    rate = RATE.get(factory, 5.85)
    if active("bh1"):
        rate = 5.85
    return {"factory": factory, "rate_per_t": rate, "cost": round(rate * tonnes, 2), "loads": loads}


@tool
def book_factory_slot(booking: dict) -> dict:
    """Book an intake slot at the sugar factory."""
    errs = []
    if booking["clean_t"] > 29.0 * booking["loads"]:
        errs.append(f"{booking['clean_t']} t clean exceeds {booking['loads']} loads of 29 t")
    if booking["clean_t"] > 2000:
        errs.append(f"{booking['clean_t']} t exceeds the farm's daily contract allowance of 2000 t")
    if abs(booking["quote"]["rate_per_t"] - RATE[booking["factory"]]) > 1e-9:
        errs.append(f"haulage rate {booking['quote']['rate_per_t']} is not the {booking['factory']} contract rate")
    if booking["surveys_from"] != booking["day"]:
        errs.append(f"clamp survey dated {booking['surveys_from']} is older than lifting day {booking['day']}")
    if abs(booking["clean_t"] - booking["expected_clean_t"]) > 0.5:
        errs.append(f"clean tonnage {booking['clean_t']} disagrees with weighbridge estimate {booking['expected_clean_t']}")
    if errs:
        raise ValueError("Intake scheduling 409 Conflict: " + "; ".join(errs))
    return {"slot": f"{booking['factory']}-{booking['day']}-07:40", "loads": booking["loads"]}


class Haul(TypedDict, total=False):
    req: dict
    todo: list
    surveys: dict
    tare_text: str
    tare_pct: float
    gross_t: float
    clean_t: float
    plan: dict
    loads: int
    slot: dict


def build(llm):
    def survey(state: Haul, config) -> dict:
        c = state["todo"][0]
        s = survey_clamp.invoke({"clamp": c, "day": state["req"]["day"]}, config=config)
        return {"surveys": {**state.get("surveys", {}), c: s}, "todo": state["todo"][1:]}

    def more(state: Haul) -> str:
        return "survey" if state["todo"] else "sum_clamps"

    def sum_clamps(state: Haul) -> dict:
        kg = sum(s["kg"] for s in state["surveys"].values())
        gross = kg / 1000.0
        if active("bh2"):
            gross = kg
        return {"gross_t": round(gross, 1)}

    def fetch_tare(state: Haul, config) -> dict:
        return {"tare_text": tare_lab.invoke({"farm": state["req"]["farm"]}, config=config)}

    def read_tare_sample(state: Haul) -> dict:
        text = state["tare_text"]
        fields = dict(kv.split("=") for kv in text.split(";"))
        raw = fields["dirt_tare"].rstrip("%")
        pct = float(raw)
        if active("bh5"):
            pct = float(raw.split(".")[0])
        return {"tare_pct": pct}

    def net_off_tare(state: Haul) -> dict:
        return {"clean_t": round(state["gross_t"] * (1 - state["tare_pct"] / 100.0), 1)}

    def plan_lorries(state: Haul, config) -> dict:
        tonnes = {c: s["kg"] / 1000.0 for c, s in state["surveys"].items()}
        return {"plan": _ask(llm, {"ask": "plan", "clamps": list(state["surveys"]), "tonnes": tonnes}, config)}

    def size_fleet(state: Haul) -> dict:
        loads = math.ceil(state["clean_t"] / state["plan"]["lorry_t"])
        if active("bh3"):
            loads = int(state["clean_t"] // state["plan"]["lorry_t"])
        return {"loads": loads}

    def book(state: Haul, config) -> dict:
        r = state["req"]
        _ask(llm, {"ask": "check", "loads": state["loads"], "clean_t": state["clean_t"]}, config)
        q = quote_haulage.invoke({"factory": r["factory"], "tonnes": state["clean_t"], "loads": state["loads"]},
                                 config=config)
        oldest = min(s["surveyed"] for s in state["surveys"].values())
        true_clean = round(sum(CLAMP_T[c] for c in r["clamps"]) * (1 - 0.078), 1)
        slot = book_factory_slot.invoke({"booking": {
            "factory": r["factory"], "day": r["day"], "clean_t": state["clean_t"], "loads": state["loads"],
            "quote": q, "surveys_from": oldest, "expected_clean_t": true_clean}}, config=config)
        return {"slot": slot}

    g = StateGraph(Haul)
    for n, f in [("survey", survey), ("sum_clamps", sum_clamps), ("fetch_tare", fetch_tare), ("read_tare_sample", read_tare_sample),
                 ("net_off_tare", net_off_tare), ("plan_lorries", plan_lorries), ("size_fleet", size_fleet),
                 ("book", book)]:
        g.add_node(n, f)
    g.add_edge(START, "survey")
    g.add_conditional_edges("survey", more, ["survey", "sum_clamps"])
    g.add_edge("sum_clamps", "fetch_tare")
    g.add_edge("fetch_tare", "read_tare_sample")
    g.add_edge("read_tare_sample", "net_off_tare")
    g.add_edge("net_off_tare", "plan_lorries")
    g.add_edge("plan_lorries", "size_fleet")
    g.add_edge("size_fleet", "book")
    g.add_edge("book", END)
    return g.compile()


def record(inp: dict, path: Path, server) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"haul beet from {inp['farm']} on {inp['day']}")
    try:
        build(llm).invoke({"req": inp, "todo": list(inp["clamps"])}, config={"callbacks": [tracer]})
    except ValueError:
        pass
