"""Organic fertiliser mill (LangGraph): analyse raw-material lots in a lab sub-graph, check silos in a loop,
formulate a blend with the model and release the batch ticket to the mill controller."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, json_policy
from .kit import active

AGENT = "fertiliser-mill-batcher"
ROUTE = "langgraph"
DOMAIN = "organic fertiliser mill"
SHAPE = "intake, lab sub-graph (sheet tool + parser per lot), lot register, silo check loop, batch scaling, model formulation, ticket release to the mill controller"

LOTS = {
    "poultry_manure": ("L-5501", {"N": 4.3, "P2O5": 3.1, "K2O": 2.6}, "B1", 30000),
    "bone_meal": ("L-5520", {"N": 4.1, "P2O5": 20.5, "K2O": 0.3}, "B3", 1850),
    "feather_meal": ("L-5534", {"N": 12.7, "P2O5": 0.4, "K2O": 0.2}, "B4", 5200),
    "seaweed_meal": ("L-5547", {"N": 1.6, "P2O5": 0.3, "K2O": 9.8}, "B5", 3900),
    "vinasse": ("L-5560", {"N": 3.4, "P2O5": 0.6, "K2O": 7.7}, "B6", 2600),
}
INPUTS = {
    "A": {"order": "FM-3301", "tonnes": 12.0, "recipe": {"poultry_manure": 0.55, "bone_meal": 0.2, "feather_meal": 0.15, "seaweed_meal": 0.1}},
    "B": {"order": "FM-3307", "tonnes": 9.0, "recipe": {"poultry_manure": 0.5, "feather_meal": 0.2, "vinasse": 0.2, "bone_meal": 0.1}},
}
REFS = [
    {"order": "FM-3288", "tonnes": 6.0, "recipe": {"poultry_manure": 0.6, "seaweed_meal": 0.25, "feather_meal": 0.15}},
    {"order": "FM-3290", "tonnes": 10.0, "recipe": {"poultry_manure": 0.7, "vinasse": 0.2, "bone_meal": 0.1}},
    {"order": "FM-3295", "tonnes": 8.0, "recipe": {"poultry_manure": 0.45, "feather_meal": 0.3, "seaweed_meal": 0.25}},
    {"order": "FM-3299", "tonnes": 14.0, "recipe": {"poultry_manure": 0.6, "bone_meal": 0.15, "vinasse": 0.15, "feather_meal": 0.1}},
]
CASES = [
    Case("zs_fertiliser_1", "fert.silo", "swallowed_error", "A", "check_silo_stock", 2, "tool", "release_batch", 1,
         "The silo check for bone meal hits a sensor timeout, catches it and answers a default full level instead."),
    Case("zs_fertiliser_2", "fert.parse", "lossy_parsing", "B", "LabSheetParser", 1, "parse", "release_batch", 1,
         "The lab sheet parser keeps only the whole-number part of each nutrient percentage."),
    Case("zs_fertiliser_3", "fert.scale", "unit_error", "A", "scale_batch", 1, "other", "release_batch", 1,
         "Tonnes are turned into kilograms with a factor of one hundred."),
    Case("zs_fertiliser_4", "fert.lots", "bad_memory_write", "B", "register_lots", 1, "other", "release_batch", 1,
         "The lot register writes each material against the lot of the material before it."),
    Case("zs_fertiliser_5", "fert.declare", "hallucinated_value", "A", "ChatOpenAI", 1, "llm", "release_batch", 1,
         "The formulation model declares the order's target nitrogen instead of the one its blend gives."),
]


def _sheet(material: str) -> str:
    lot, a, _, _ = LOTS[material]
    moist = 6.0 + len(material) / 10
    return (f"Lot {lot} {material.replace('_', ' ')} | N {a['N']} % | P2O5 {a['P2O5']} % | K2O {a['K2O']} % | "
            f"moisture {moist:.1f} %")


def _formulate(p: dict) -> dict:
    total = p["batch_kg"]
    lines = {m: round(share * total, 1) for m, share in p["recipe"].items()}
    filler = max(p["recipe"], key=lambda m: p["recipe"][m])
    for m, kg in list(lines.items()):
        if m != filler and kg > p["stock_kg"][m]:
            lines[filler] = round(lines[filler] + kg - p["stock_kg"][m], 1)
            lines[m] = p["stock_kg"][m]
    declared = {k: round(sum(lines[m] * p["analysis"][m][k] for m in lines) / total, 2) for k in ("N", "P2O5", "K2O")}
    if active("fert.declare"):
        declared["N"] = 6.0
    return {"lines": lines, "declared": declared}


policy = json_policy({"formulate": _formulate})


@tool
def fetch_lab_sheet(material: str) -> str:
    """The lab's latest analysis sheet for the lot of a raw material in the intake store."""
    return _sheet(material)


@tool
def check_silo_stock(material: str) -> str:
    """Level of the silo holding a raw material, in kg, from the silo load cells."""
    lot, _, silo, kg = LOTS[material]
    if material == "bone_meal" and active("fert.silo"):
        try:
            raise TimeoutError(f"load cell gateway for silo {silo} did not answer within 5 s")
        except TimeoutError:
            kg = 25000
    return json.dumps({"material": material, "silo": silo, "kg": kg})


def mill_controller(ticket: dict) -> str:
    """The mill controller's batch-ticket endpoint."""
    total = round(sum(line["kg"] for line in ticket["lines"]), 1)
    if abs(total - ticket["ordered_t"] * 1000) > 5:
        raise RuntimeError(f"mill controller rejected {ticket['order']}: ticket totals {total:,.1f} kg but the order is "
                           f"for {ticket['ordered_t']} t")
    for line in ticket["lines"]:
        lot, _, silo, kg = LOTS[line["material"]]
        if line["lot"] != lot:
            raise RuntimeError(f"mill controller rejected {ticket['order']}: lot {line['lot']} is not registered as "
                               f"{line['material']} in the intake log")
        if line["kg"] > kg:
            raise RuntimeError(f"mill controller rejected {ticket['order']}: silo {silo} ({line['material']}) holds "
                               f"{kg:,} kg, the ticket draws {line['kg']:,.1f} kg")
    for k in ("N", "P2O5", "K2O"):
        real = sum(line["kg"] * LOTS[line["material"]][1][k] for line in ticket["lines"]) / total
        if abs(real - ticket["declared"][k]) > 0.15:
            raise RuntimeError(f"mill controller rejected {ticket['order']}: declared {k} {ticket['declared'][k]} % "
                               f"differs from the {real:.2f} % of the lots drawn (tolerance 0.15)")
    return json.dumps({"status": "released", "batch": f"B-{ticket['order']}"})


class LabSheetParser(BaseOutputParser[dict]):
    def parse(self, text: str) -> dict:
        num = r"(\d+)[.\d]*" if active("fert.parse") else r"(\d+(?:\.\d+)?)"
        lot = re.search(r"Lot (L-\d+)", text).group(1)
        values = {k: float(re.search(rf"{re.escape(k)} {num} %", text).group(1)) for k in ("N", "P2O5", "K2O", "moisture")}
        return {"lot": lot, **values}


class MillState(TypedDict, total=False):
    order: dict
    analysis: dict
    lots: dict
    pending: list
    stock_kg: dict
    batch_kg: float
    blend: dict
    ticket: dict
    result: str


class LabState(TypedDict, total=False):
    materials: list
    sheets: dict
    analysis: dict


def build(llm: ChatOpenAI) -> Any:
    parser = LabSheetParser()

    def fetch_sheets(state: LabState) -> dict:
        return {"sheets": {m: fetch_lab_sheet.invoke({"material": m}) for m in state["materials"]}}

    def read_sheets(state: LabState) -> dict:
        return {"analysis": {m: parser.invoke(text) for m, text in state["sheets"].items()}}

    lab = StateGraph(LabState)
    lab.add_node("fetch_sheets", fetch_sheets)
    lab.add_node("read_sheets", read_sheets)
    lab.add_edge(START, "fetch_sheets")
    lab.add_edge("fetch_sheets", "read_sheets")
    lab.add_edge("read_sheets", END)
    lab_graph = lab.compile()

    def intake(state: MillState) -> dict:
        return {"order": dict(state["order"]), "pending": list(state["order"]["recipe"]), "stock_kg": {}}

    def lab_analysis(state: MillState) -> dict:
        out = lab_graph.invoke({"materials": list(state["order"]["recipe"])}, config={"run_name": "lab_analyst"})
        return {"analysis": out["analysis"]}

    def register_lots(state: MillState) -> dict:
        mats = list(state["analysis"])
        lots = {}
        for i, m in enumerate(mats):
            src = mats[i - 1] if active("fert.lots") and i > 0 else m
            lots[m] = state["analysis"][src]["lot"]
        return {"lots": lots}

    def check_stock(state: MillState) -> dict:
        material, rest = state["pending"][0], state["pending"][1:]
        level = json.loads(check_silo_stock.invoke({"material": material}))
        return {"pending": rest, "stock_kg": {**state["stock_kg"], material: level["kg"]}}

    def more_silos(state: MillState) -> str:
        return "check_stock" if state["pending"] else "scale_batch"

    def scale_batch(state: MillState) -> dict:
        factor = 100 if active("fert.scale") else 1000
        return {"batch_kg": state["order"]["tonnes"] * factor}

    def formulate(state: MillState) -> dict:
        analysis = {m: {k: a[k] for k in ("N", "P2O5", "K2O")} for m, a in state["analysis"].items()}
        reply = llm.invoke([SystemMessage("You are the mill's blend formulator. TASK=formulate. Answer with JSON only."),
                            HumanMessage(json.dumps({"recipe": state["order"]["recipe"], "batch_kg": state["batch_kg"],
                                                     "stock_kg": state["stock_kg"], "analysis": analysis}, sort_keys=True))])
        return {"blend": json.loads(reply.content)}

    def release_batch(state: MillState) -> dict:
        lines = [{"material": m, "lot": state["lots"][m], "kg": kg} for m, kg in state["blend"]["lines"].items()]
        ticket = {"order": state["order"]["order"], "ordered_t": state["order"]["tonnes"], "lines": lines,
                  "declared": state["blend"]["declared"]}
        return {"ticket": ticket, "result": mill_controller(ticket)}

    g = StateGraph(MillState)
    for name, fn in [("intake", intake), ("lab_analysis", lab_analysis), ("register_lots", register_lots),
                     ("check_stock", check_stock), ("scale_batch", scale_batch), ("formulate", formulate),
                     ("release_batch", release_batch)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "lab_analysis")
    g.add_edge("lab_analysis", "register_lots")
    g.add_edge("register_lots", "check_stock")
    g.add_conditional_edges("check_stock", more_silos, ["check_stock", "scale_batch"])
    g.add_edge("scale_batch", "formulate")
    g.add_edge("formulate", "release_batch")
    g.add_edge("release_batch", END)
    return g.compile()


def record(inp: dict, dest: Path, server: Any) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=str(dest), name=AGENT, task=f"blend and release order {inp['order']}")
    try:
        build(llm).invoke({"order": inp}, config={"callbacks": [tracer], "run_name": AGENT})
    except RuntimeError:
        pass
