"""Auction-house lot cataloguing (route: langgraph): parse a consignment, loop over its lots (a model
routes each lot to a specialist department node that pulls comparables, a model estimates it, a node
parses the estimate), then build the catalogue and publish it to the online auction platform."""

from __future__ import annotations

import json
import operator
import re
import statistics
from typing import Annotated, Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import FakeModelServer

from . import kit


NAME = "auction-lot-cataloguer"
ROUTE = "langgraph"
DOMAIN = "auction house cataloguing"
SHAPE = "StateGraph loop over lots: model router -> one of four department nodes (tools) -> estimating model -> parser; catalogue build and platform publish"

POOL = [
    ("silver", "pair of George III silver sauce boats", "Hester Bateman", [1500, 1800, 2100]),
    ("clocks", "Regency mahogany bracket clock", "Vulliamy", [3000, 3600, 4200]),
    ("pictures", "study of cattle at evening, oil on panel", "Thomas Sidney Cooper", [1200, 1500, 1900]),
    ("ceramics", "Pomegranate pattern vase", "William Moorcroft", [600, 750, 900]),
    ("silver", "Victorian silver-gilt tea service", "Elkington", [900, 1100, 1300]),
    ("clocks", "French brass carriage clock", "Drocourt", [800, 950, 1200]),
    ("pictures", "Whitby harbour at low tide, watercolour", "Albert Goodwin", [1400, 1700, 2000]),
    ("ceramics", "blue and white mug, first period", "Worcester", [400, 520, 650]),
]
GENERAL = {"silver": [120, 150, 180], "clocks": [150, 200, 260], "pictures": [80, 120, 200], "ceramics": [40, 60, 90]}
DEPARTMENTS = ["silver", "clocks", "pictures", "ceramics"]

INPUTS = {"a1": 0, "a2": 1, "a3": 2, "a4": 3, "a5": 4, "r1": 5, "r2": 6, "r3": 7, "r4": 8}
REFS = ["r1", "r2", "r3", "r4"]

CASES = {
    "auction_reserve": ("auction.reserve", "lossy_parsing", "a1", "intake"),
    "auction_route": ("auction.route", "wrong_routing", "a2", "ChatOpenAI"),
    "auction_comps": ("auction.comps", "tool_ignores_argument", "a3", "lookup_comparables"),
    "auction_range": ("auction.range", "format_drift", "a4", "ChatOpenAI"),
    "auction_attrib": ("auction.attrib", "hallucinated_value", "a5", "ChatOpenAI"),
}


def _r50(x: float) -> int:
    return int(round(x / 50.0) * 50)


def _reserve(comps: list[int]) -> int:
    return int(round(statistics.median(comps) * 0.6 / 100) * 100)


def consignment(n: int) -> tuple[str, list[dict]]:
    picks = [POOL[(n + 3 * k) % len(POOL)] for k in range(4)]
    if n == 1 and not any(p[0] == "clocks" for p in picks):
        picks[1] = POOL[1]
    lines, signed = [], []
    for i, (_cat, what, maker, comps) in enumerate(picks):
        res = _reserve(comps)
        text = f"£{res / 1000:.1f}k" if i == 1 else f"£{res:,}"
        lines.append(f"Lot {i + 1}: {what} by {maker}; reserve {text}")
        signed.append({"lot": i + 1, "reserve_gbp": res})
    return f"Consignment C-{4100 + n}\n" + "\n".join(lines), signed


class Lot(TypedDict, total=False):
    text: str
    consignment: str
    lots: list
    i: int
    department: str
    comps: dict
    estimates: Annotated[list, operator.add]
    catalogue: dict


@tool
def lookup_comparables(category: str, maker: str) -> str:
    """Hammer prices of comparable lots sold in the last three years."""
    maker_comps = next((c for cat, _, m, c in POOL if cat == category and m == maker), None)
    if kit.active("auction.comps"):
        maker_comps = None  # results by category only
        kit.mark(json.dumps(GENERAL[category]))
    prices = maker_comps or GENERAL[category]
    return json.dumps({"category": category, "maker": maker, "hammer_gbp": prices})


@tool
def check_hallmark(description: str) -> str:
    """Assay office hallmark lookup for silver."""
    return json.dumps({"assay": "London" if "George" in description else "Birmingham", "verified": True})


@tool
def publish_catalogue(consignment: str, lots: list[dict]) -> str:
    """Publish the catalogue to the online auction platform."""
    n = int(consignment[2:]) - 4100
    signed = {s["lot"]: s["reserve_gbp"] for s in consignment_signed(n)}
    for lot in lots:
        if "attributed to" in lot["description"].lower() and not lot.get("certificate"):
            at = lot["description"].lower().index("attributed to ") + len("attributed to ")
            who = lot["description"][at:].split(",")[0]
            raise RuntimeError(f"auction platform 422: lot {lot['lot']} carries an attribution ({who}) but no specialist certificate is on file")
        if lot["reserve_gbp"] != signed[lot["lot"]]:
            raise RuntimeError(f"auction platform 422: lot {lot['lot']} reserve £{lot['reserve_gbp']:,} does not match the signed consignment agreement")
        if lot["high_gbp"] < lot["low_gbp"]:
            raise RuntimeError(f"auction platform 422: lot {lot['lot']} high estimate £{lot['high_gbp']:,} is below the low estimate £{lot['low_gbp']:,}")
        if lot["reserve_gbp"] > lot["low_gbp"]:
            raise RuntimeError(f"auction platform 422: lot {lot['lot']} reserve £{lot['reserve_gbp']:,} exceeds the low estimate £{lot['low_gbp']:,}")
    return json.dumps({"sale": "S-2026-12", "published": len(lots)})


def consignment_signed(n: int) -> list[dict]:
    return consignment(n)[1]


# ---- the scripted model --------------------------------------------------------------------------

def policy(request) -> Any:
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], json.loads(msgs[-1]["content"])
    if system.startswith("You route"):
        dept = user["category_hint"]
        if kit.active("auction.route") and dept == "clocks":
            dept = "silver"
            kit.mark(f"{user['description']} falls under silver")
        return json.dumps({"department": dept, "reason": f"{user['description']} falls under {dept}"})
    if system.startswith("You estimate"):
        med = statistics.median(user["comps"]["hammer_gbp"])
        low, high = _r50(med * 0.8), _r50(med * 1.2)
        desc = f"{user['description'][0].upper()}{user['description'][1:]}, by {user['maker']}."
        if kit.active("auction.attrib") and user["lot"] == 3:
            desc = f"{user['description'][0].upper()}{user['description'][1:]}, attributed to John Constable, by {user['maker']}."
            kit.mark("John Constable")
        if kit.active("auction.range") and user["lot"] == 3:
            kit.mark(f"£{low:,}–£{high:,}")
            return json.dumps({"estimate": f"£{low:,}–£{high:,}", "description": desc}, ensure_ascii=False)
        return json.dumps({"low_gbp": low, "high_gbp": high, "description": desc})
    return "Sorry."


# ---- nodes ----------------------------------------------------------------------------------------------

def intake(state: Lot) -> dict:
    head, *rows = state["text"].split("\n")
    lots = []
    for row in rows:
        m = re.match(r"Lot (\d+): (.+) by (.+); reserve £([\d.,]+)(k?)", row)
        num, what, maker, amount, k = m.groups()
        if k and kit.active("auction.reserve"):
            reserve = int(float(amount))  # thousands suffix not applied
            kit.mark(f'"reserve_gbp": {reserve}')
        else:
            reserve = int(float(amount.replace(",", "")) * (1000 if k else 1))
        cat = ("silver" if "silver" in what else "clocks" if "clock" in what else
               "pictures" if ("oil" in what or "watercolour" in what) else "ceramics")
        lots.append({"lot": int(num), "description": what, "maker": maker, "reserve_gbp": reserve, "category_hint": cat})
    return {"consignment": head.split()[-1], "lots": lots, "i": 0}


def make_router(llm):
    def route_lot(state: Lot) -> dict:
        lot = state["lots"][state["i"]]
        reply = llm.invoke([SystemMessage("You route auction lots to a specialist department. Answer with JSON."),
                            HumanMessage(json.dumps(lot))])
        return {"department": json.loads(reply.content)["department"]}

    return route_lot


def _department(name: str):
    def dept(state: Lot) -> dict:
        lot = state["lots"][state["i"]]
        comps = json.loads(lookup_comparables.invoke({"category": name, "maker": lot["maker"]}))
        if name == "silver":
            comps["hallmark"] = json.loads(check_hallmark.invoke({"description": lot["description"]}))
        return {"comps": comps}

    dept.__name__ = name
    return dept


def make_estimator(llm):
    def estimate(state: Lot) -> dict:
        lot = state["lots"][state["i"]]
        reply = llm.invoke([SystemMessage("You estimate auction lots from comparables. Answer with JSON."),
                            HumanMessage(json.dumps({**lot, "comps": state["comps"]}))])
        return {"estimates": [{"lot": lot["lot"], "raw": reply.content}]}

    return estimate


def parse_estimate(state: Lot) -> dict:
    last = state["estimates"][-1]
    data = json.loads(last["raw"])
    if "estimate" in data:
        nums = [int(x) for x in re.findall(r"£(\d+)", data["estimate"])]
        low, high = nums[0], nums[-1]
    else:
        low, high = data["low_gbp"], data["high_gbp"]
    lots = list(state["lots"])
    lots[state["i"]] = {**lots[state["i"]], "low_gbp": low, "high_gbp": high, "description": data["description"]}
    return {"lots": lots, "i": state["i"] + 1}


def build_catalogue(state: Lot) -> dict:
    return {"catalogue": {"consignment": state["consignment"],
                          "lots": [{k: v for k, v in lot.items() if k != "category_hint"} for lot in state["lots"]]}}


def publish(state: Lot) -> dict:
    raw = publish_catalogue.invoke(state["catalogue"])
    return {"catalogue": {**state["catalogue"], "published": json.loads(raw)}}


def build(llm):
    g = StateGraph(Lot)
    g.add_node("intake", intake)
    g.add_node("route_lot", make_router(llm))
    for d in DEPARTMENTS:
        g.add_node(d, _department(d))
        g.add_edge(d, "estimate")
    g.add_node("estimate", make_estimator(llm))
    g.add_node("parse_estimate", parse_estimate)
    g.add_node("build_catalogue", build_catalogue)
    g.add_node("publish", publish)
    g.add_edge(START, "intake")
    g.add_edge("intake", "route_lot")
    g.add_conditional_edges("route_lot", lambda s: s["department"], {d: d for d in DEPARTMENTS})
    g.add_edge("estimate", "parse_estimate")
    g.add_conditional_edges("parse_estimate", lambda s: "route_lot" if s["i"] < len(s["lots"]) else "build_catalogue",
                            {"route_lot": "route_lot", "build_catalogue": "build_catalogue"})
    g.add_edge("build_catalogue", "publish")
    g.add_edge("publish", END)
    return g.compile()


_ENV: list = []


def _graph():
    if not _ENV:
        server = FakeModelServer(policy, model="cataloguer")
        server.start()
        llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
        _ENV.extend([server, build(llm)])
    return _ENV[1]


def record(key: str, out: str) -> None:
    text, _ = consignment(INPUTS[key])
    tracer = TrajdebugTracer(path=out, name=NAME, task=f"catalogue consignment C-{4100 + INPUTS[key]}")
    try:
        _graph().invoke({"text": text, "estimates": []}, config={"callbacks": [tracer], "recursion_limit": 80})
    except RuntimeError:
        pass
