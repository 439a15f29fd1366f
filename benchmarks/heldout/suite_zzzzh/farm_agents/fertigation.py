"""Greenhouse fertigation planner: reads the drain sensors of a glasshouse, fetches the nutrient recipe of
the crop stage, asks an agronomist model (with lab and history tools) for the dose plan, picks the water
source, programs the dosing unit zone by zone and verifies the mixed solution (LangGraph StateGraph)."""
from __future__ import annotations

import json
import re
from typing import Annotated, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser, JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableParallel
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

from ._common import system, tool_results, user

NAME = "fertigation-planner"
ROUTE = "langgraph"
DOMAIN = "greenhouse vegetable fertigation"
SHAPE = "parallel sensor tools (RunnableParallel), retriever + custom parser, agronomist model with parallel tool calls (ToolNode loop), JSON parser, routing function, per-zone loop (tool node + log node), verification tools"
SWITCH = None


def active(case: str) -> bool:
    return SWITCH == case


INPUTS = [
    {"house": "GH-2", "crop": "tomato", "stage": "fruit set", "zones": ["Z1", "Z2", "Z3"], "date": "2025-06-11"},
    {"house": "GH-5", "crop": "cucumber", "stage": "harvest", "zones": ["Z1", "Z2"], "date": "2025-06-11"},
    {"house": "GH-1", "crop": "sweet pepper", "stage": "flowering", "zones": ["Z1", "Z2", "Z3", "Z4"], "date": "2025-06-11"},
    {"house": "GH-7", "crop": "strawberry", "stage": "fruiting", "zones": ["Z1", "Z2"], "date": "2025-06-12"},
    {"house": "GH-3", "crop": "tomato", "stage": "vegetative", "zones": ["Z1", "Z2", "Z3"], "date": "2025-06-12"},
]

CASES = [
    {"id": "zzzzh-fert-1", "input": 1, "kind": "unit_error", "root": ("read_drain_ec", 1), "root_kind": "tool",
     "failure": "program_dosing_unit",
     "what": "The drain EC probe of GH-5 answers in microsiemens (2710 uS/cm) where the plan expects mS/cm, so the EC setpoint the agronomist derives is far below zero and the dosing unit refuses it."},
    {"id": "zzzzh-fert-2", "input": 0, "kind": "stale_data", "root": ("get_water_analysis", 1), "root_kind": "tool",
     "failure": "verify_mix",
     "what": "The lab portal returns the March 2024 analysis of the GH-2 borehole (bicarbonate 2.1 mmol/L) instead of the May 2025 one (4.4 mmol/L), so too little acid is dosed and the mixed solution reads pH 6.92."},
    {"id": "zzzzh-fert-3", "input": 2, "kind": "truncated_result", "root": ("RecipeLibrary", 1), "root_kind": "retrieval",
     "failure": "verify_mix",
     "what": "The recipe library returns the sweet pepper recipe cut after 22 characters, so calcium reads 19 ppm (of 190) and magnesium and iron are missing, and the mix check finds calcium far below its floor."},
    {"id": "zzzzh-fert-4", "input": 4, "kind": "bad_memory_write", "root": ("log_zone", 2), "root_kind": "other",
     "failure": "reconcile_water_meter",
     "what": "The zone log records the planned litres of Z2 instead of the litres the valve reported delivered, so the day's log disagrees with the water meter."},
    {"id": "zzzzh-fert-5", "input": 3, "kind": "wrong_routing", "root": ("choose_source", 1), "root_kind": "other",
     "failure": "verify_mix",
     "what": "The source router sends GH-7 to drain-water recirculation on its EC alone, ignoring the drain sodium of 8.4 mmol/L, and the mixed solution fails the sodium limit."},
]

DRAIN = {"GH-2": (3.4, 5.9, 3.1), "GH-5": (2.71, 6.0, 2.2), "GH-1": (3.0, 5.8, 4.0), "GH-7": (1.6, 6.1, 8.4), "GH-3": (2.9, 5.9, 2.9)}
WATER = {"GH-2": {"sampled": "2025-05-20", "bicarbonate_mmol": 4.4, "na_mmol": 1.1},
         "GH-5": {"sampled": "2025-05-20", "bicarbonate_mmol": 3.2, "na_mmol": 0.9},
         "GH-1": {"sampled": "2025-05-21", "bicarbonate_mmol": 2.8, "na_mmol": 1.0},
         "GH-7": {"sampled": "2025-05-22", "bicarbonate_mmol": 1.9, "na_mmol": 0.7},
         "GH-3": {"sampled": "2025-05-20", "bicarbonate_mmol": 4.4, "na_mmol": 1.1}}
WATER_2024 = {"GH-2": {"sampled": "2024-03-14", "bicarbonate_mmol": 2.1, "na_mmol": 1.0}}
RECIPES = {
    "tomato fruit set": "N=230;P=45;K=380;Ca=210;Mg=60;S=90;Fe=1.5", "cucumber harvest": "N=250;P=40;K=330;Ca=180;Mg=45;S=70;Fe=1.4",
    "sweet pepper flowering": "N=210;P=50;K=340;Ca=190;Mg=60;S=80;Fe=1.5", "strawberry fruiting": "N=160;P=45;K=280;Ca=140;Mg=45;S=60;Fe=1.2",
    "tomato vegetative": "N=200;P=55;K=300;Ca=200;Mg=55;S=85;Fe=1.5"}
TARGET_EC = {"tomato": 3.5, "cucumber": 2.8, "sweet pepper": 3.0, "strawberry": 1.8}
LITRES = {"Z1": 4200, "Z2": 3900, "Z3": 4100, "Z4": 3600}


@tool
def read_drain_ec(house: str) -> dict:
    """Drain EC of a glasshouse, mS/cm."""
    ec = DRAIN[house][0]
    if active("zzzzh-fert-1"):
        ec = round(ec * 1000)  # this probe was swapped in May
    return {"house": house, "drain_ec": ec}


@tool
def read_drain_ph(house: str) -> dict:
    """Drain pH of a glasshouse."""
    return {"house": house, "drain_ph": DRAIN[house][1]}


@tool
def read_drain_sodium(house: str) -> dict:
    """Drain sodium, mmol/L."""
    return {"house": house, "drain_na_mmol": DRAIN[house][2]}


@tool
def get_water_analysis(house: str) -> dict:
    """Latest source water analysis of a glasshouse's borehole."""
    rec = WATER[house]
    if active("zzzzh-fert-2"):
        rec = WATER_2024[house]
    return {"house": house, **rec}


@tool
def get_zone_history(house: str) -> dict:
    """Litres per zone over the last week."""
    return {"house": house, "avg_litres": {z: v - 150 for z, v in LITRES.items()}}


@tool
def program_dosing_unit(house: str, zone: str, ec_setpoint: float, acid_ml_per_m3: float, litres: int) -> dict:
    """Program one zone of the dosing unit."""
    if not 0.5 <= ec_setpoint <= 6.0:
        raise ValueError(f"dosing unit {house}: EC setpoint {ec_setpoint} mS/cm outside 0.5-6.0")
    return {"house": house, "zone": zone, "delivered_litres": litres - 180, "ec_setpoint": ec_setpoint}


@tool
def verify_mix(house: str, source: str, acid_ml_per_m3: float, recipe: dict) -> dict:
    """Sample the mixed solution in the day tank."""
    bic = WATER[house]["bicarbonate_mmol"]
    ph = round(5.8 + max(0.0, bic - acid_ml_per_m3 / 61) * 0.4, 2)
    if ph > 6.2:
        raise ValueError(f"day tank {house}: mixed solution pH {ph}, target 5.5-6.2")
    if recipe.get("Ca", 0) < 120:
        raise ValueError(f"day tank {house}: calcium {recipe.get('Ca', 0)} ppm below the 120 ppm floor")
    na = DRAIN[house][2] if source == "recirculate" else WATER[house]["na_mmol"]
    if na > 6.0:
        raise ValueError(f"day tank {house}: sodium {na} mmol/L above the 6.0 mmol/L limit")
    return {"house": house, "ph": ph, "ca_ppm": recipe["Ca"], "na_mmol": na}


@tool
def reconcile_water_meter(house: str, logged: dict) -> dict:
    """Compare the zone log with the house water meter."""
    meter = sum(LITRES[z] - 180 for z in logged)
    total = sum(logged.values())
    if abs(meter - total) > 50:
        raise ValueError(f"water meter {house}: {meter} L delivered, zone log says {total} L")
    return {"house": house, "meter_litres": meter}


class RecipeLibrary(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        text = RECIPES[query]
        if active("zzzzh-fert-3"):
            text = text[:22]  # the library's preview field
        return [Document(page_content=text, metadata={"recipe": query})]


class RecipeParser(BaseOutputParser[dict]):
    def parse(self, text: str) -> dict:
        out = {}
        for part in text.split(";"):
            if "=" in part:
                k, v = part.split("=", 1)
                if re.fullmatch(r"[\d.]+", v):
                    out[k] = float(v) if "." in v else int(v)
        return out


class State(TypedDict, total=False):
    request: dict
    sensors: dict
    recipe: dict
    messages: Annotated[list, add_messages]
    plan: dict
    source: str
    pending: list
    delivered: dict
    log: dict
    check: dict


def build(llm):
    tools = [get_water_analysis, get_zone_history]
    agro = llm.bind_tools(tools)
    sensors = RunnableParallel(ec=read_drain_ec, ph=read_drain_ph, na=read_drain_sodium)
    retriever, rparser, jparser = RecipeLibrary(), RecipeParser(), JsonOutputParser()

    def read_sensors(state: State) -> dict:
        got = sensors.invoke({"house": state["request"]["house"]})
        return {"sensors": {**got["ec"], **got["ph"], **got["na"]}}

    def fetch_recipe(state: State) -> dict:
        r = state["request"]
        docs = retriever.invoke(f"{r['crop']} {r['stage']}")
        return {"recipe": rparser.invoke(docs[0].page_content)}

    def agronomist(state: State) -> dict:
        if state.get("messages"):
            return {"messages": [agro.invoke(state["messages"])]}
        r = state["request"]
        msgs = [SystemMessage("You are the greenhouse agronomist. Check the water analysis, then answer the dose plan as JSON."),
                HumanMessage(json.dumps({"request": r, "sensors": state["sensors"], "recipe": state["recipe"], "target_ec": TARGET_EC[r["crop"]]}))]
        return {"messages": [*msgs, agro.invoke(msgs)]}

    def after_agronomist(state: State) -> str:
        return "agronomist_tools" if state["messages"][-1].tool_calls else "parse_dose"

    def parse_dose(state: State) -> dict:
        plan = jparser.invoke(state["messages"][-1])
        return {"plan": plan, "pending": list(state["request"]["zones"]), "delivered": {}, "log": {}}

    def choose_source(state: State) -> str:
        s = state["sensors"]
        if active("zzzzh-fert-5"):
            return "recirculate" if s["drain_ec"] <= 2.0 else "fresh_water"
        return "recirculate" if s["drain_ec"] <= 2.0 and s["drain_na_mmol"] <= 6.0 else "fresh_water"

    def recirculate(state: State) -> dict:
        return {"source": "recirculate"}

    def fresh_water(state: State) -> dict:
        return {"source": "fresh_water"}

    def dose_zone(state: State) -> dict:
        zone, plan = state["pending"][0], state["plan"]
        out = program_dosing_unit.invoke({"house": state["request"]["house"], "zone": zone, "ec_setpoint": plan["ec_setpoint"],
                                          "acid_ml_per_m3": plan["acid_ml_per_m3"], "litres": plan["litres_per_zone"][zone]})
        return {"delivered": {**state["delivered"], zone: out["delivered_litres"]}}

    def log_zone(state: State) -> dict:
        zone = state["pending"][0]
        litres = state["delivered"][zone]
        if active("zzzzh-fert-4") and zone == "Z2":
            litres = state["plan"]["litres_per_zone"][zone]
        return {"log": {**state["log"], zone: litres}, "pending": state["pending"][1:]}

    def next_zone(state: State) -> str:
        return "dose_zone" if state["pending"] else "check_mix"

    def check_mix(state: State) -> dict:
        r, plan = state["request"], state["plan"]
        out = verify_mix.invoke({"house": r["house"], "source": state["source"], "acid_ml_per_m3": plan["acid_ml_per_m3"], "recipe": plan["recipe"]})
        rec = reconcile_water_meter.invoke({"house": r["house"], "logged": state["log"]})
        return {"check": {**out, **rec}}

    g = StateGraph(State)
    for name, fn in [("read_sensors", read_sensors), ("fetch_recipe", fetch_recipe), ("agronomist", agronomist),
                     ("agronomist_tools", ToolNode(tools, handle_tool_errors=False)), ("parse_dose", parse_dose),
                     ("recirculate", recirculate), ("fresh_water", fresh_water), ("dose_zone", dose_zone),
                     ("log_zone", log_zone), ("check_mix", check_mix)]:
        g.add_node(name, fn)
    g.add_edge(START, "read_sensors")
    g.add_edge("read_sensors", "fetch_recipe")
    g.add_edge("fetch_recipe", "agronomist")
    g.add_conditional_edges("agronomist", after_agronomist, ["agronomist_tools", "parse_dose"])
    g.add_edge("agronomist_tools", "agronomist")
    g.add_conditional_edges("parse_dose", choose_source, ["recirculate", "fresh_water"])
    g.add_edge("recirculate", "dose_zone")
    g.add_edge("fresh_water", "dose_zone")
    g.add_edge("dose_zone", "log_zone")
    g.add_conditional_edges("log_zone", next_zone, ["dose_zone", "check_mix"])
    g.add_edge("check_mix", END)
    return g.compile()


def brain(request):
    if not system(request).startswith("You are the greenhouse agronomist"):
        return "I cannot help with that."
    ask = json.loads(user(request))
    house = ask["request"]["house"]
    done = dict(tool_results(request))
    if not done:
        return Reply(tool_calls=(tool_call("get_water_analysis", {"house": house}), tool_call("get_zone_history", {"house": house})))
    water, hist = done["get_water_analysis"], done["get_zone_history"]
    target, drain = ask["target_ec"], ask["sensors"]["drain_ec"]
    plan = {"ec_setpoint": round(target + (target - drain) * 0.5, 2),
            "acid_ml_per_m3": round(water["bicarbonate_mmol"] * 61 - 30, 1),
            "litres_per_zone": {z: LITRES[z] for z in ask["request"]["zones"]},
            "recipe": ask["recipe"],
            "note": f"water sampled {water['sampled']}; zones at {', '.join(str(hist['avg_litres'][z]) for z in ask['request']['zones'])} L last week"}
    return json.dumps(plan)


def record(inp: dict, path, server) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"fertigation plan {inp['house']} {inp['date']}")
    try:
        build(llm).invoke({"request": inp}, config={"callbacks": [tracer], "recursion_limit": 60})
    except Exception:
        pass
