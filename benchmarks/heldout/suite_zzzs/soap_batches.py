"""A soapmaker's batches: a linear LangGraph StateGraph (model + JSON parser, three tools, plain nodes),
state kept in the graph's state, a safety validator node before the label."""
from __future__ import annotations

import json
from typing import Any, TypedDict

import httpx
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from suite_common import all_text, last_user

RUN_NAME = "soap-batch-planner"
ROUTE = "langgraph"
DOMAIN = "soapmaker's batches"
SHAPE = ("~18 steps, one straight line of 10 graph nodes: order, batch notes, model + JSON parser formula, SAP "
         "tool, lye tool, fragrance tool, water plan, cure plan, safety validator, model label")

SWITCHES = ["WATER_OUNCES", "LYE_POTASSIUM", "OLD_SAP_SHEET", "NOTES_ALL_LINES", "FRAGRANCE_DEFAULT"]
WATER_OUNCES = LYE_POTASSIUM = OLD_SAP_SHEET = NOTES_ALL_LINES = FRAGRANCE_DEFAULT = False

INPUTS = [
    {"batch": "SB-501", "product": "castile bar", "batch_g": 2000, "fragrance": "lavender", "line": "bars"},
    {"batch": "SB-502", "product": "oatmeal bar", "batch_g": 3000, "fragrance": "cinnamon leaf", "line": "bars"},
    {"batch": "SB-503", "product": "coconut sea-salt bar", "batch_g": 1500, "fragrance": "grapefruit", "line": "bars"},
    {"batch": "SB-504", "product": "shea butter bar", "batch_g": 2500, "fragrance": "clove bud", "line": "bars"},
    {"batch": "SB-505", "product": "charcoal bar", "batch_g": 1800, "fragrance": "tea tree", "line": "bars"},
]
OIL_SHARES = {
    "castile bar": {"olive": 1.0},
    "oatmeal bar": {"olive": 0.5, "coconut": 0.25, "shea": 0.25},
    "coconut sea-salt bar": {"coconut": 0.8, "olive": 0.2},
    "shea butter bar": {"shea": 0.35, "olive": 0.4, "coconut": 0.25},
    "charcoal bar": {"olive": 0.45, "coconut": 0.3, "castor": 0.05, "shea": 0.2},
}
NOTES = {
    "bars": "Bar line: superfat 5%, water 33% of oils, cure 6 weeks.",
    "liquid": "Liquid line: superfat 15% for a clear paste, dilute 1:2 after cooking.",
}
SAP_NAOH = {"olive": 0.135, "coconut": 0.183, "shea": 0.128, "castor": 0.128}
SAP_OLD = {"olive": 0.095, "coconut": 0.183, "shea": 0.128, "castor": 0.128}
IFRA_MAX_PCT = {"lavender": 3.0, "cinnamon leaf": 0.6, "grapefruit": 2.8, "clove bud": 0.5, "tea tree": 1.5}


def policy(request):
    prompt = last_user(request)
    if prompt.startswith("Formulate batch"):
        order = json.loads(prompt.split("\n", 1)[1])
        superfat = 15 if "Liquid line" in all_text(request) else 5
        oils_g = round(order["batch_g"] / 1.45)
        oils = {k: round(oils_g * v) for k, v in OIL_SHARES[order["product"]].items()}
        return json.dumps({"oils_g": oils, "superfat_pct": superfat, "lye": "NaOH", "fragrance": order["fragrance"]})
    if prompt.startswith("Write the label"):
        d = json.loads(prompt.split("\n", 1)[1])
        return f"{d['product'].title()} - saponified oils of {', '.join(d['oils'])}; scented with {d['fragrance']}. Cured {d['cure_weeks']} weeks."
    return "ok"


class Batch(TypedDict, total=False):
    order: dict
    notes: list
    formula: dict
    sap: dict
    lye: dict
    fragrance: dict
    water: dict
    cure: dict
    checked: dict
    label: str


@tool
def sap_values(oils: list[str]) -> dict:
    """Saponification values (g NaOH per g oil) for the oils named."""
    table = SAP_OLD if OLD_SAP_SHEET else SAP_NAOH
    return {o: table[o] for o in oils}


@tool
def lye_calculator(oils_g: dict, sap: dict, superfat_pct: float, lye: str) -> dict:
    """Grams of lye for the oils, after the superfat discount."""
    need = sum(oils_g[o] * sap[o] for o in oils_g)
    if lye == "KOH":
        need = need * 1.403
    return {"lye": lye, "lye_g": round(need * (1 - superfat_pct / 100), 1), "full_need_g": round(need, 1)}


@tool
def fragrance_limits(fragrance: str, batch_g: float) -> dict:
    """The house's dosing for a fragrance oil in a batch of the given weight."""
    name = "lavender" if FRAGRANCE_DEFAULT else fragrance
    pct = {"lavender": 3.0, "cinnamon leaf": 0.5, "grapefruit": 2.5, "clove bud": 0.5, "tea tree": 1.5}[name]
    return {"fragrance": fragrance, "dose_pct": pct, "dose_g": round(batch_g * pct / 100, 1)}


_GRAPHS: dict = {}


def build(server):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0,
                     http_client=httpx.Client(verify=False), http_async_client=httpx.AsyncClient(verify=False))
    parser = JsonOutputParser()

    def take_order(state: Batch) -> dict:
        return {"order": dict(state["order"])}

    def batch_notes(state: Batch) -> dict:
        line = state["order"]["line"]
        notes = [NOTES[line]]
        if NOTES_ALL_LINES:
            notes = [NOTES[line], NOTES["liquid"]]
        return {"notes": notes}

    def draft_formula(state: Batch) -> dict:
        msgs = [SystemMessage("You formulate cold-process soap. House notes:\n" + "\n".join(state["notes"])),
                HumanMessage("Formulate batch:\n" + json.dumps(state["order"]))]
        return {"formula": (llm | parser).invoke(msgs)}

    def sap_lookup(state: Batch) -> dict:
        return {"sap": sap_values.invoke({"oils": sorted(state["formula"]["oils_g"])})}

    def lye_calc(state: Batch) -> dict:
        f = state["formula"]
        lye = "KOH" if LYE_POTASSIUM else f["lye"]
        return {"lye": lye_calculator.invoke({"oils_g": f["oils_g"], "sap": state["sap"], "superfat_pct": f["superfat_pct"], "lye": lye})}

    def fragrance_dose(state: Batch) -> dict:
        o = state["order"]
        return {"fragrance": fragrance_limits.invoke({"fragrance": o["fragrance"], "batch_g": o["batch_g"]})}

    def water_plan(state: Batch) -> dict:
        oils_total = sum(state["formula"]["oils_g"].values())
        water = oils_total * 0.33
        if WATER_OUNCES:
            water = water / 28.35
        return {"water": {"water_g": round(water, 1), "oils_g": oils_total}}

    def cure_plan(state: Batch) -> dict:
        return {"cure": {"weeks": 6 if state["order"]["line"] == "bars" else 2, "rack": "R" + state["order"]["batch"][-1]}}

    def safety_check(state: Batch) -> dict:
        o, f, lye, water, fr = state["order"], state["formula"], state["lye"], state["water"], state["fragrance"]
        if not 0 <= f["superfat_pct"] <= 8:
            raise ValueError(f"{o['batch']}: superfat {f['superfat_pct']}% is outside the bar range 0-8%")
        full = sum(f["oils_g"][k] * SAP_NAOH[k] for k in f["oils_g"])
        discount = 1 - lye["lye_g"] / full
        if not 0.0 <= discount <= 0.08:
            raise ValueError(f"{o['batch']}: {lye['lye_g']} g lye leaves {discount * 100:.1f}% of the oils unsaponified (bar range 0-8%)")
        conc = lye["lye_g"] / (lye["lye_g"] + water["water_g"])
        if not 0.25 <= conc <= 0.40:
            raise ValueError(f"{o['batch']}: lye solution at {conc * 100:.0f}% (safe range 25-40%)")
        if fr["dose_pct"] > IFRA_MAX_PCT[o["fragrance"]]:
            raise ValueError(f"{o['batch']}: {o['fragrance']} at {fr['dose_pct']}% is over the IFRA limit of {IFRA_MAX_PCT[o['fragrance']]}%")
        return {"checked": {"lye_concentration": round(conc, 3), "superfat": round(discount, 3)}}

    def write_label(state: Batch) -> dict:
        d = {"product": state["order"]["product"], "oils": sorted(state["formula"]["oils_g"]),
             "fragrance": state["order"]["fragrance"], "cure_weeks": state["cure"]["weeks"]}
        return {"label": llm.invoke([HumanMessage("Write the label:\n" + json.dumps(d))]).content}

    g = StateGraph(Batch)
    order = [take_order, batch_notes, draft_formula, sap_lookup, lye_calc, fragrance_dose, water_plan, cure_plan, safety_check, write_label]
    prev = START
    for fn in order:
        g.add_node(fn.__name__, fn)
        g.add_edge(prev, fn.__name__)
        prev = fn.__name__
    g.add_edge(prev, END)
    return g.compile()


def record(inp, path, server):
    server.use(policy)
    if _GRAPHS.get("url") != server.base_url:
        _GRAPHS.update(url=server.base_url, graph=build(server))
    graph = _GRAPHS["graph"]
    tracer = TrajdebugTracer(path=path, name=RUN_NAME, task=f"soap batch {inp['batch']}")
    try:
        graph.invoke({"order": inp}, config={"callbacks": [tracer]})
    except ValueError:
        pass


CASES = [
    {"id": "zzzs-soap-01", "input": 0, "switch": "WATER_OUNCES", "fault_kind": "unit_error",
     "root": {"name": "water_plan", "occurrence": 1, "kind": "other"}, "failure": {"name": "safety_check", "occurrence": 1},
     "description": "The water plan divides the water by 28.35 as if converting to ounces but keeps the water_g field, so SB-501 gets 16.1 g of water for 1379 g of oils."},
    {"id": "zzzs-soap-02", "input": 2, "switch": "LYE_POTASSIUM", "fault_kind": "wrong_tool_args",
     "root": {"name": "lye_calc", "occurrence": 1, "kind": "agent"}, "failure": {"name": "safety_check", "occurrence": 1},
     "description": "The lye node calls the lye calculator with lye 'KOH' for a bar formula that names NaOH, so the lye weight comes out 1.4 times too heavy."},
    {"id": "zzzs-soap-03", "input": 3, "switch": "OLD_SAP_SHEET", "fault_kind": "stale_data",
     "root": {"name": "sap_values", "occurrence": 1, "kind": "tool"}, "failure": {"name": "safety_check", "occurrence": 1},
     "description": "The SAP table answers olive oil at 0.095 from a superseded supplier sheet instead of 0.135, so too little lye is weighed."},
    {"id": "zzzs-soap-04", "input": 1, "switch": "NOTES_ALL_LINES", "fault_kind": "context_pollution",
     "root": {"name": "batch_notes", "occurrence": 1, "kind": "other"}, "failure": {"name": "safety_check", "occurrence": 1},
     "description": "The batch notes for a bar batch also carry the liquid-soap line's note (superfat 15%), which the formula then follows."},
    {"id": "zzzs-soap-05", "input": 4, "switch": "FRAGRANCE_DEFAULT", "fault_kind": "tool_ignores_argument",
     "root": {"name": "fragrance_limits", "occurrence": 1, "kind": "tool"}, "failure": {"name": "safety_check", "occurrence": 1},
     "description": "The fragrance dosing tool ignores the fragrance it is given and doses tea tree at lavender's 3%."},
]
