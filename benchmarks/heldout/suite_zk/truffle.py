"""Truffle hunt and harvest listing (LangGraph StateGraph + ChatOpenAI + trajdebug tracer)."""

from __future__ import annotations

import json
import operator
import re
from pathlib import Path
from typing import Annotated, TypedDict

from langchain_core.output_parsers import JsonOutputParser
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case
from .kit import active

AGENT, ROUTE, DOMAIN = "truffle-hunt-ledger", "langgraph", "truffle hunting"
SHAPE = "intake, forecast tool, LLM plot plan + JSON parser, dog assignment, hunt loop over plots, LLM grading, buyer routing, listing"

INPUTS = {
    "alba_white": "Hunt licence TL-2231, region Alba, species Tuber magnatum, date 2026-11-02, dogs Lola and Brio",
    "perigord_black": "Hunt licence TL-4410, region Perigord, species Tuber melanosporum, date 2027-01-15, dogs Fifi and Rex",
    "molise_white": "Hunt licence TL-5120, region Molise, species Tuber magnatum, date 2026-10-20, dogs Nina and Taro",
    "lot_black": "Hunt licence TL-6003, region Lot, species Tuber melanosporum, date 2027-02-01, dogs Bijou and Max",
    "umbria_summer": "Hunt licence TL-7281, region Umbria, species Tuber aestivum, date 2026-07-10, dogs Gina and Zeno",
    "istria_white": "Hunt licence TL-8840, region Istria, species Tuber magnatum, date 2026-11-12, dogs Pepa and Ugo",
}
REFS = ["molise_white", "lot_black", "umbria_summer", "istria_white"]

CASES = [
    Case("zk_truf_1", "tool_ignores_argument", ("market_prices", 1), ("auction_listing", 1), "perigord_black",
         "market_prices ignores the grade it is given and quotes the extra-grade band, so the listing price is out of band."),
    Case("zk_truf_2", "format_drift", ("grade_truffles", 1), ("auction_listing", 1), "alba_white",
         "grade_truffles starts giving weights in grams, which the lot totals read as kilograms."),
    Case("zk_truf_3", "wrong_routing", ("route_buyer", 1), ("auction_listing", 1), "alba_white",
         "route_buyer sends a white-truffle lot to the local market channel, which only lists black and summer truffles."),
    Case("zk_truf_4", "truncated_result", ("dig_log", 2), ("auction_listing", 1), "perigord_black",
         "dig_log returns only the first page of the second plot's finds, so the lot misses tagged truffles."),
    Case("zk_truf_5", "plan_error", ("plot_planner", 1), ("auction_listing", 1), "alba_white",
         "plot_planner plans a plot that lies outside the hunt licence, and the listing's provenance check refuses it."),
]

PLOTS = {"TL-2231": ["P-1", "P-2", "P-4"], "TL-4410": ["Q-3", "Q-5", "Q-6"], "TL-5120": ["M-1", "M-2", "M-7"],
         "TL-6003": ["L-2", "L-3", "L-8"], "TL-7281": ["U-1", "U-5", "U-6"], "TL-8840": ["I-2", "I-3", "I-9"]}
BANDS = {"extra": (1200, 4500), "I": (700, 1400), "II": (380, 690)}


def _finds(plot: str) -> list:
    seed = sum(map(ord, plot))
    return [{"tag": f"{plot}-T{i + 1}", "grams": 18 + (seed * (i + 3)) % 40, "shape": ["round", "lobed"][i % 2]}
            for i in range(2 + seed % 3)]


def policy(req) -> str:
    msgs = req.body["messages"]
    prompt = msgs[-1]["content"]
    if prompt.startswith("Plan the plots"):
        lic = re.search(r"TL-\d+", prompt).group(0)
        plots = list(PLOTS[lic])
        if active("zk_truf_5"):
            plots[-1] = "P-9"
        return json.dumps({"plots": plots, "order": "north to south"})
    if prompt.startswith("Grade these finds"):
        finds = json.loads(prompt.split("\n", 1)[1])
        grams = sum(f["grams"] for f in finds)
        grade = "extra" if grams > 400 else "I" if grams > 200 else "II"
        weight = f"{grams} g" if active("zk_truf_2") else f"{grams / 1000:.3f} kg"
        return json.dumps({"grade": grade, "weight": weight, "count": len(finds)})
    return "ok"


@tool
def soil_forecast(region: str, date: str) -> dict:
    """Soil moisture and temperature forecast for a region and date."""
    return {"region": region, "date": date, "moisture_pct": 31, "soil_temp_c": 7.5}


@tool
def dig_log(plot: str, dog: str) -> dict:
    """Finds tagged by the handler on one plot."""
    finds = _finds(plot)
    if plot in ("Q-5", "P-2") and active("zk_truf_4"):
        finds = finds[:1]
    return {"plot": plot, "dog": dog, "finds": finds}


@tool
def scale_reading(lot_id: str, tags: list[str]) -> dict:
    """Certified scale weight of a lot."""
    grams = sum(f["grams"] for p in PLOTS.values() for pl in p for f in _finds(pl) if f["tag"] in tags)
    return {"lot": lot_id, "kg": round(grams / 1000, 3)}


@tool
def market_prices(species: str, grade: str) -> dict:
    """Price band in EUR/kg for a species and grade."""
    g = "extra" if active("zk_truf_1") else grade
    lo, hi = BANDS[g]
    if species == "Tuber magnatum":
        lo, hi = lo * 3, hi * 3
    return {"species": species, "grade": g, "low": lo, "high": hi}


@tool
def auction_listing(listing: dict) -> dict:
    """Create the listing on the truffle exchange."""
    lic = listing["licence"]
    for p in listing["plots"]:
        if p not in PLOTS[lic]:
            raise ValueError(f"422 Unprocessable Entity: provenance plot {p} is not covered by licence {lic}")
    if listing["channel"] == "local" and listing["species"] == "Tuber magnatum":
        raise ValueError("422 Unprocessable Entity: channel 'local' accepts Tuber melanosporum and Tuber aestivum only")
    if abs(listing["declared_kg"] - listing["certified_kg"]) > 0.01:
        raise ValueError(f"409 Conflict: declared weight {listing['declared_kg']} kg differs from certified "
                         f"scale weight {listing['certified_kg']} kg")
    if listing["tag_count"] != len(listing["tags"]):
        raise ValueError(f"409 Conflict: lot declares {listing['tag_count']} truffles, harvest register has "
                         f"{len(listing['tags'])} tags for the plots")
    g = listing["grade"]
    lo, hi = BANDS[g]
    if listing["species"] == "Tuber magnatum":
        lo, hi = lo * 3, hi * 3
    if not lo <= listing["price_eur_kg"] <= hi:
        raise ValueError(f"422 Unprocessable Entity: price {listing['price_eur_kg']} EUR/kg is outside the "
                         f"grade {g} band {lo}-{hi}")
    return {"listing": "TX-" + lic[3:], "status": "open"}


class Hunt(TypedDict, total=False):
    request: str
    licence: str
    species: str
    region: str
    date: str
    dogs: list
    forecast: dict
    plots: list
    assignments: list
    cursor: int
    finds: Annotated[list, operator.add]
    grading: dict
    declared_kg: float
    certified: dict
    channel: str
    listing: dict


def build(llm):
    parser = JsonOutputParser()

    def intake(s: Hunt) -> dict:
        m = re.search(r"licence (TL-\d+), region (\w+), species ([\w ]+), date ([\d-]+), dogs (\w+) and (\w+)",
                      s["request"])
        return {"licence": m.group(1), "region": m.group(2), "species": m.group(3), "date": m.group(4),
                "dogs": [m.group(5), m.group(6)], "cursor": 0}

    def forecast(s: Hunt) -> dict:
        return {"forecast": soil_forecast.invoke({"region": s["region"], "date": s["date"]})}

    def plan(s: Hunt) -> dict:
        chain = llm.with_config(run_name="plot_planner") | parser.with_config(run_name="parse_plots")
        out = chain.invoke(f"Plan the plots for licence {s['licence']} given {json.dumps(s['forecast'])}")
        return {"plots": out["plots"]}

    def assign_dogs(s: Hunt) -> dict:
        return {"assignments": [{"plot": p, "dog": s["dogs"][i % 2]} for i, p in enumerate(s["plots"])]}

    def hunt(s: Hunt) -> dict:
        a = s["assignments"][s["cursor"]]
        log = dig_log.invoke({"plot": a["plot"], "dog": a["dog"]})
        return {"finds": log["finds"], "cursor": s["cursor"] + 1}

    def more(s: Hunt) -> str:
        return "hunt" if s["cursor"] < len(s["assignments"]) else "grade"

    def grade(s: Hunt) -> dict:
        chain = llm.with_config(run_name="grade_truffles") | parser.with_config(run_name="parse_grading")
        g = chain.invoke("Grade these finds\n" + json.dumps(s["finds"]))
        return {"grading": g}

    def lot_totals(s: Hunt) -> dict:
        value, unit = s["grading"]["weight"].split()
        return {"declared_kg": round(float(value), 3)}

    def weigh(s: Hunt) -> dict:
        tags = [f["tag"] for f in s["finds"]]
        return {"certified": scale_reading.invoke({"lot_id": "LOT-" + s["licence"][3:], "tags": tags})}

    def route_buyer(s: Hunt) -> dict:
        channel = "export" if s["species"] == "Tuber magnatum" else "local"
        if active("zk_truf_3"):
            channel = "local"
        return {"channel": channel}

    def list_lot(s: Hunt) -> dict:
        band = market_prices.invoke({"species": s["species"], "grade": s["grading"]["grade"]})
        tags = [f["tag"] for p in s["plots"] for f in _finds(p)] if all(
            p in sum(PLOTS.values(), []) for p in s["plots"]) else [f["tag"] for f in s["finds"]]
        listing = {"licence": s["licence"], "species": s["species"], "plots": s["plots"], "channel": s["channel"],
                   "grade": s["grading"]["grade"], "declared_kg": s["declared_kg"],
                   "certified_kg": s["certified"]["kg"], "tag_count": s["grading"]["count"], "tags": tags,
                   "price_eur_kg": round((band["low"] + band["high"]) / 2)}
        return {"listing": auction_listing.invoke({"listing": listing})}

    g = StateGraph(Hunt)
    for name, fn in [("intake", intake), ("forecast", forecast), ("plan_plots", plan), ("assign_dogs", assign_dogs),
                     ("hunt", hunt), ("grade", grade), ("lot_totals", lot_totals), ("weigh", weigh),
                     ("route_buyer", route_buyer), ("list_lot", list_lot)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "forecast")
    g.add_edge("forecast", "plan_plots")
    g.add_edge("plan_plots", "assign_dogs")
    g.add_edge("assign_dogs", "hunt")
    g.add_conditional_edges("hunt", more, ["hunt", "grade"])
    g.add_edge("grade", "lot_totals")
    g.add_edge("lot_totals", "weigh")
    g.add_edge("weigh", "route_buyer")
    g.add_edge("route_buyer", "list_lot")
    g.add_edge("list_lot", END)
    return g.compile()


def record(server, inp: str, out: Path) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=str(out), name=AGENT, task=INPUTS[inp])
    build(llm).invoke({"request": INPUTS[inp], "finds": []}, config={"callbacks": [tracer], "recursion_limit": 60})
