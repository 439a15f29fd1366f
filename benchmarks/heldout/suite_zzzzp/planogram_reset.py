"""planogram-reset: resets one shelf bay of a convenience store to a new planogram (langgraph)."""
from __future__ import annotations

import json
import operator
import re
from typing import Annotated, TypedDict

from langchain_core.output_parsers import BaseOutputParser, JsonOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from common import server, system_of, user_of
from trajdebug.integrations.langchain import TrajdebugTracer

NAME, ROUTE = "planogram-reset", "langgraph"
DOMAIN = "convenience store back room: resetting a shelf bay to a new planogram version, facings and shelf-edge labels"
SHAPE = "StateGraph: load node with two tools, planning chain (prompt | model | JSON parser), a per-shelf loop node (dimension tool + text parser) with a conditional loop router, label chain + print tool, verify"
SWITCH = None


def _on(case):
    return SWITCH == case


WIDTH = {"CHP-SALT": 120, "CHP-BBQ": 120, "CHP-VIN": 120, "NUT-MIX": 90, "NUT-CASH": 90, "BAR-CHOC": 60, "BAR-NUT": 60,
         "GUM-MINT": 40, "GUM-FRT": 40, "CRK-CHS": 110, "PRZ-SALT": 100, "POP-SWT": 130, "JRK-BEEF": 80, "SED-SUN": 70}
PRICE = {"CHP-SALT": 1.99, "CHP-BBQ": 1.99, "CHP-VIN": 2.09, "NUT-MIX": 3.49, "NUT-CASH": 3.99, "BAR-CHOC": 1.29,
         "BAR-NUT": 1.39, "GUM-MINT": 0.99, "GUM-FRT": 0.99, "CRK-CHS": 2.49, "PRZ-SALT": 2.29, "POP-SWT": 2.79,
         "JRK-BEEF": 5.49, "SED-SUN": 1.89}
# bay -> version -> shelves (bottom first): list of (sku, facings)
PLANOGRAMS = {
    "B-04": {"v7": [[("CHP-SALT", 3), ("CHP-BBQ", 3), ("CHP-VIN", 2)], [("NUT-MIX", 4), ("NUT-CASH", 3)],
                    [("BAR-CHOC", 6), ("BAR-NUT", 5)], [("GUM-MINT", 8), ("GUM-FRT", 6)]],
             "v6": [[("CHP-SALT", 4), ("CHP-BBQ", 4)], [("NUT-MIX", 5), ("NUT-CASH", 3)],
                    [("BAR-CHOC", 6), ("BAR-NUT", 5)], [("GUM-MINT", 8), ("GUM-FRT", 6)]]},
    "B-05": {"v7": [[("CRK-CHS", 4), ("PRZ-SALT", 4)], [("POP-SWT", 3), ("CHP-VIN", 3)], [("JRK-BEEF", 5), ("SED-SUN", 5)]]},
    "B-06": {"v7": [[("POP-SWT", 4), ("CHP-SALT", 3)], [("NUT-CASH", 5), ("NUT-MIX", 4)], [("BAR-NUT", 6), ("BAR-CHOC", 6)],
                    [("GUM-FRT", 8), ("GUM-MINT", 8)]]},
    "B-07": {"v7": [[("CRK-CHS", 5), ("CHP-BBQ", 4)], [("JRK-BEEF", 6), ("NUT-MIX", 5)], [("SED-SUN", 6), ("BAR-CHOC", 6)]]},
    "B-08": {"v7": [[("PRZ-SALT", 5), ("POP-SWT", 4)], [("CHP-SALT", 4), ("CHP-VIN", 4)], [("NUT-CASH", 6), ("BAR-NUT", 6)],
                    [("GUM-MINT", 10), ("GUM-FRT", 10)]]},
}
SHELF_MM = {"B-04": 1219, "B-05": 1219, "B-06": 1219, "B-07": 1219, "B-08": 1219}
PLANOGRAM_CACHE = {"B-04": "v6"}

INPUTS = [
    {"task": "reset bay B-04 to v7", "bay": "B-04", "version": "v7"},
    {"task": "reset bay B-05 to v7", "bay": "B-05", "version": "v7"},
    {"task": "reset bay B-06 to v7", "bay": "B-06", "version": "v7"},
    {"task": "reset bay B-07 to v7", "bay": "B-07", "version": "v7"},
    {"task": "reset bay B-08 to v7", "bay": "B-08", "version": "v7"},
]

CASES = [
    {"id": "zzzzp_pr_cached_version", "input": 0, "fault_kind": "stale_data",
     "root": ("get_planogram", 1, "tool"), "failure": ("verify", 1),
     "description": "get_planogram answers the store's cached v6 layout of bay B-04 instead of v7, so CHP-VIN is never placed and the compliance check against v7 fails."},
    {"id": "zzzzp_pr_merge_shelves", "input": 1, "fault_kind": "plan_error",
     "root": ("ChatOpenAI", 1, "llm"), "failure": ("verify", 1),
     "description": "the planning model merges shelves 2 and 3 of bay B-05 into one step to save a trip, so four SKUs are placed on one 1219 mm shelf and the verify step finds it overfilled."},
    {"id": "zzzzp_pr_width_digits", "input": 2, "fault_kind": "lossy_parsing",
     "root": ("ShelfDimParser", 3, "parse"), "failure": ("verify", 1),
     "description": "ShelfDimParser reads the shelf width with a three-digit pattern, so 'W 1219 mm' becomes 121 mm on shelf 3 and the verify step finds that shelf overfilled."},
    {"id": "zzzzp_pr_promo_price", "input": 3, "fault_kind": "hallucinated_value",
     "root": ("ChatOpenAI", 2, "llm"), "failure": ("print_labels", 1),
     "description": "the label model writes 4.99 for JRK-BEEF, a price that is in none of its inputs (the price file says 5.49), and the label printer's price check refuses the batch."},
    {"id": "zzzzp_pr_last_shelf", "input": 4, "fault_kind": "off_by_one",
     "root": ("more_shelves", 3, "other"), "failure": ("verify", 1),
     "description": "the loop router more_shelves stops at len(shelves) - 1, so the top shelf of bay B-08 (the gum) is never placed and verify finds GUM-MINT missing."},
]

PLANNER = "Plan the reset of a shelf bay: answer JSON {steps: [{shelf, skus: [[sku, facings], ...]}]} in the order to work, bottom shelf first."
LABELLER = "Write shelf-edge labels: answer JSON {labels: [{sku, price}]} using the price file given."


def brain(request):
    sysmsg = system_of(request)
    if sysmsg.startswith("Plan the reset"):
        data = json.loads(user_of(request))
        steps = [{"shelf": i + 1, "skus": shelf} for i, shelf in enumerate(data["shelves"])]
        if _on("zzzzp_pr_merge_shelves") and len(steps) >= 3:
            steps = [steps[0], {"shelf": 2, "skus": steps[1]["skus"] + steps[2]["skus"]}] + steps[3:]
        return json.dumps({"steps": steps})
    if sysmsg.startswith("Write shelf-edge labels"):
        data = json.loads(user_of(request))
        labels = [{"sku": s, "price": p} for s, p in data["prices"].items()]
        for lab in labels:
            if lab["sku"] == "JRK-BEEF" and _on("zzzzp_pr_promo_price"):
                lab["price"] = 4.99
        return json.dumps({"labels": labels})
    return "OK"


@tool
def get_planogram(bay: str, version: str) -> str:
    """The planogram of a bay: shelves bottom first, each a list of [sku, facings]."""
    got = PLANOGRAM_CACHE.get(bay, version) if _on("zzzzp_pr_cached_version") else version
    return json.dumps({"bay": bay, "version": version, "shelves": PLANOGRAMS[bay][got]})


@tool
def get_backroom_stock(skus: list[str]) -> str:
    """Units of each SKU in the back room."""
    return json.dumps({s: 24 + len(s) for s in skus})


@tool
def shelf_dimensions(bay: str, shelf: int) -> str:
    """The measured size of one shelf, as printed on the fixture tag."""
    return f"bay {bay} shelf {shelf}: W {SHELF_MM[bay]} mm / D 406 mm / H 300 mm"


@tool
def print_labels(bay: str, labels: list[dict]) -> str:
    """Send a batch of shelf-edge labels to the label printer."""
    for lab in labels:
        if abs(PRICE[lab["sku"]] - float(lab["price"])) > 0.001:
            raise ValueError(f"label printer: {lab['sku']} label price {lab['price']} does not match price file {PRICE[lab['sku']]}")
    return json.dumps({"bay": bay, "printed": len(labels), "job": f"LBL-{bay}"})


class ShelfDimParser(BaseOutputParser[dict]):
    """Reads a fixture tag's text into millimetres."""

    def parse(self, text: str) -> dict:
        pattern = r"W (\d{3})" if _on("zzzzp_pr_width_digits") and "shelf 3" in text else r"W (\d+)"
        depth = re.search(r"D (\d+)", text)
        return {"width_mm": int(re.search(pattern, text)[1]), "depth_mm": int(depth[1])}


class Reset(TypedDict, total=False):
    bay: str
    version: str
    planogram: dict
    stock: dict
    steps: list
    idx: int
    placed: Annotated[list, operator.add]
    labels: list
    printed: dict


def _esc(text):
    return text.replace("{", "{{").replace("}", "}}")


def build(llm):
    planner = ChatPromptTemplate.from_messages([("system", _esc(PLANNER)), ("human", "{payload}")]) | llm | JsonOutputParser()
    labeller = ChatPromptTemplate.from_messages([("system", _esc(LABELLER)), ("human", "{payload}")]) | llm | JsonOutputParser()
    dims = ShelfDimParser()

    def load_reset(state: Reset) -> dict:
        pog = json.loads(get_planogram.invoke({"bay": state["bay"], "version": state["version"]}))
        skus = [s for shelf in pog["shelves"] for s, _ in shelf]
        stock = json.loads(get_backroom_stock.invoke({"skus": skus}))
        return {"planogram": pog, "stock": stock}

    def plan(state: Reset) -> dict:
        out = planner.invoke({"payload": json.dumps({"bay": state["bay"], "shelves": state["planogram"]["shelves"]})})
        return {"steps": out["steps"], "idx": 0}

    def place_shelf(state: Reset) -> dict:
        step = state["steps"][state["idx"]]
        size = dims.invoke(shelf_dimensions.invoke({"bay": state["bay"], "shelf": step["shelf"]}))
        used = sum(WIDTH[s] * f for s, f in step["skus"])
        return {"placed": [{"shelf": step["shelf"], "skus": step["skus"], "used_mm": used, "width_mm": size["width_mm"]}],
                "idx": state["idx"] + 1}

    def more_shelves(state: Reset) -> str:
        last = len(state["steps"]) - 1 if _on("zzzzp_pr_last_shelf") else len(state["steps"])
        return "place_shelf" if state["idx"] < last else "labels"

    def labels(state: Reset) -> dict:
        skus = [s for p in state["placed"] for s, _ in p["skus"]]
        out = labeller.invoke({"payload": json.dumps({"bay": state["bay"], "prices": {s: PRICE[s] for s in skus}})})
        printed = json.loads(print_labels.invoke({"bay": state["bay"], "labels": out["labels"]}))
        return {"labels": out["labels"], "printed": printed}

    def verify(state: Reset) -> dict:
        target = PLANOGRAMS[state["bay"]][state["version"]]
        placed = {s for p in state["placed"] for s, _ in p["skus"]}
        for shelf in target:
            for sku, _ in shelf:
                if sku not in placed:
                    raise ValueError(f"{sku} of planogram {state['version']} bay {state['bay']} was not placed")
        for p in state["placed"]:
            if p["used_mm"] > p["width_mm"]:
                raise ValueError(f"shelf {p['shelf']} of bay {state['bay']} overfilled: {p['used_mm']} mm on {p['width_mm']} mm")
        return {"printed": {**state["printed"], "verified": True}}

    g = StateGraph(Reset)
    for name, fn in (("load_reset", load_reset), ("plan", plan), ("place_shelf", place_shelf), ("labels", labels), ("verify", verify)):
        g.add_node(name, fn)
    g.add_edge(START, "load_reset")
    g.add_edge("load_reset", "plan")
    g.add_edge("plan", "place_shelf")
    g.add_conditional_edges("place_shelf", more_shelves, {"place_shelf": "place_shelf", "labels": "labels"})
    g.add_edge("labels", "verify")
    g.add_edge("verify", END)
    return g.compile()


_GRAPH = {}


def graph():
    key = server().base_url
    if key not in _GRAPH:
        llm = ChatOpenAI(model=server().model, base_url=key, api_key="not-needed", max_retries=0)
        _GRAPH.clear()
        _GRAPH[key] = build(llm)
    return _GRAPH[key]


def run(inp: dict, path: str) -> None:
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["task"])
    graph().invoke({"bay": inp["bay"], "version": inp["version"]}, config={"callbacks": [tracer]})
