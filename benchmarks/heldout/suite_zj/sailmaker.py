"""Sailmaker loft (LangGraph with a cloth-planning subgraph): read the customer's measurements, check them against the rig plan, plan cloth and panels in a sub-agent, cut ticket."""

from __future__ import annotations

import json
import math
from typing import TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from . import common, kit

NAME = "sailmaker-loft"
ROUTE = "langgraph"
DOMAIN = "sailmaker loft"
EXT = "jsonl"
DESK = "sailmaker"
SHAPE = "StateGraph: boat lookup -> measurements (llm + parse) -> order memory -> cloth brief -> cloth_planner subgraph (cloth llm, panel count, cut loop) -> submit (rig unit conversion, cut ticket)"

BOATS = {
    "H-204": {"class": "Contessa 32", "units": "m", "P": 11.6, "E": 4.1, "displacement_kg": 4300},
    "H-118": {"class": "Folkboat", "units": "m", "P": 8.1, "E": 3.3, "displacement_kg": 1930},
    "H-330": {"class": "J/24", "units": "ft", "P": 28.0, "E": 10.0, "displacement_kg": 1400},
    "H-412": {"class": "Hallberg-Rassy 36", "units": "m", "P": 12.4, "E": 4.3, "displacement_kg": 7400},
    "H-057": {"class": "Dragon", "units": "m", "P": 9.0, "E": 3.2, "displacement_kg": 1700},
    "H-261": {"class": "Sadler 26", "units": "ft", "P": 29.5, "E": 10.5, "displacement_kg": 2400},
}
CLOTH = [(2000, "Dacron 5.2 oz"), (5000, "Dacron 7.4 oz"), (10_000, "Dacron 9.0 oz")]
CLOTH_WIDTH_M = 1.5
FLEET_PREVIOUS = {"H-204": "H-118", "H-261": "H-057", "H-118": "H-204", "H-330": "H-057", "H-412": "H-204", "H-057": "H-118"}

INPUTS = {
    "A": {"order": "SL-901", "hull": "H-204", "text": "New mainsail for my Contessa: luff 11.2 m, leech 11.9 m, foot 3.95 m."},
    "B": {"order": "SL-914", "hull": "H-261", "text": "Main for the Sadler please - luff 8.75 m, leech 9.2 m, foot 3.05 m."},
    "R1": {"order": "SL-880", "hull": "H-118", "text": "Folkboat main: luff 7.9 m, leech 8.3 m, foot 3.2 m."},
    "R2": {"order": "SL-884", "hull": "H-330", "text": "J/24 main, luff 8.4 m, leech 8.9 m, foot 2.95 m."},
    "R3": {"order": "SL-889", "hull": "H-412", "text": "Cruising main: luff 12.1 m, leech 12.8 m, foot 4.2 m."},
    "R4": {"order": "SL-893", "hull": "H-057", "text": "Dragon main: luff 8.8 m, leech 9.3 m, foot 3.1 m."},
}
REFS = ["R1", "R2", "R3", "R4"]

CASES = [
    common.Case("zj-sailmaker-01", "unit_error", "A", "convert_rig_units", 1, "submit_cut_ticket", 1,
                "The rig conversion multiplies a rig plan already in metres by the feet-to-metres factor, so the stored mast height is far too short for the luff."),
    common.Case("zj-sailmaker-02", "subagent_wrong_entity", "A", "brief_cloth", 1, "submit_cut_ticket", 1,
                "The cloth sub-agent is briefed with the previous hull in the fleet list, so it picks cloth for a much lighter boat."),
    common.Case("zj-sailmaker-03", "lossy_parsing", "B", "parse_measurements", 1, "submit_cut_ticket", 1,
                "The measurement parser keeps only the integer part of each length, so the ticket's luff and foot lose their decimals."),
    common.Case("zj-sailmaker-04", "off_by_one", "B", "count_panels", 1, "submit_cut_ticket", 1,
                "The panel count subtracts one from the number of cloth widths the luff needs, so the cut loop leaves a panel short."),
    common.Case("zj-sailmaker-05", "bad_memory_write", "A", "remember_order", 1, "submit_cut_ticket", 1,
                "The order memory records the foot length of the loft's previous order instead of this one's, and the ticket is cut from memory."),
]

_LAST_FOOT = {"value": 3.3}


class Loft(TypedDict, total=False):
    order: dict
    boat: dict
    measured: dict
    memory: dict
    cloth_hull: str
    cloth: str
    panels: int
    cut: list
    cursor: int


class ClothState(TypedDict, total=False):
    cloth_hull: str
    memory: dict
    cloth: str
    panels: int
    cut: list
    cursor: int


def _model(run_name: str):
    return ChatOpenAI(model="gpt-4o-mini", base_url=common.server().base_url, api_key="sk-test-local", max_retries=0,
                      temperature=0).with_config(run_name=run_name)


@tool
def lookup_boat(hull: str) -> dict:
    """Read the boat and its rig plan from the loft's register."""
    return {"hull": hull, **BOATS[hull]}


@tool
def cut_panel(order: str, panel: int, cloth: str) -> dict:
    """Send one panel to the plotter."""
    return {"order": order, "panel": panel, "cloth": cloth, "plotted": True}


@tool
def submit_cut_ticket(ticket: dict) -> dict:
    """Submit the cut ticket to the loft floor."""
    boat = BOATS[ticket["hull"]]
    m = ticket["measured"]
    errs = []
    for key in ("luff", "leech", "foot"):
        if abs(m[key] - ticket["customer"][key]) > 0.01:
            errs.append(f"{key} {m[key]} m differs from the customer's {ticket['customer'][key]} m")
    if m["luff"] > ticket["rig"]["P"]:
        errs.append(f"luff {m['luff']} m exceeds mast P {ticket['rig']['P']} m")
    cloth = next(c for limit, c in CLOTH if boat["displacement_kg"] <= limit)
    if ticket["cloth"] != cloth:
        errs.append(f"cloth {ticket['cloth']} does not suit {ticket['hull']} at {boat['displacement_kg']} kg (needs {cloth})")
    need = math.ceil(m["luff"] / CLOTH_WIDTH_M)
    if len(ticket["cut"]) != need:
        errs.append(f"{len(ticket['cut'])} panels cut, luff {m['luff']} m at {CLOTH_WIDTH_M} m cloth needs {need}")
    if errs:
        raise ValueError("cut ticket refused: " + "; ".join(errs))
    return {"ticket": ticket["order"], "queued": True}


def _parse_measurements(data: dict) -> dict:
    out = {}
    for key in ("luff", "leech", "foot"):
        value = str(data[key])
        out[key] = float(value.split(".")[0]) if kit.active("sailmaker.lossy_parsing") else float(value)
    return out


def _convert(boat: dict) -> dict:
    factor = 0.3048 if (boat["units"] == "ft" or kit.active("sailmaker.unit_error")) else 1.0
    return {"P": round(boat["P"] * factor, 2), "E": round(boat["E"] * factor, 2), "units": "m"}


def _count(luff: float) -> int:
    n = math.ceil(luff / CLOTH_WIDTH_M)
    return n - 1 if kit.active("sailmaker.off_by_one") else n


def intake(state: Loft) -> Loft:
    return {"boat": lookup_boat.invoke({"hull": state["order"]["hull"]})}


def read_measurements(state: Loft) -> Loft:
    msg = _model("measure_model").invoke([SystemMessage(f"[desk:{DESK}] Extract luff, leech and foot in metres. Answer JSON."),
                                          HumanMessage(state["order"]["text"])])
    raw = JsonOutputParser().with_config(run_name="read_json").invoke(msg)
    return {"measured": RunnableLambda(_parse_measurements).with_config(run_name="parse_measurements").invoke(raw)}


def remember_order(state: Loft) -> Loft:
    m = dict(state["measured"])
    if kit.active("sailmaker.bad_memory_write"):
        m["foot"] = _LAST_FOOT["value"]
    _LAST_FOOT["value"] = state["measured"]["foot"]
    return {"memory": {"order": state["order"]["order"], "hull": state["order"]["hull"], "measured": m}}


def brief_cloth(state: Loft) -> Loft:
    hull = state["order"]["hull"]
    if kit.active("sailmaker.subagent_wrong_entity"):
        hull = FLEET_PREVIOUS[hull]
    return {"cloth_hull": hull}


def pick_cloth(state: ClothState) -> ClothState:
    boat = lookup_boat.invoke({"hull": state["cloth_hull"]})
    msg = _model("cloth_model").invoke([SystemMessage(f"[desk:{DESK}] Choose the sailcloth for this boat. Answer JSON {{cloth}}."),
                                        HumanMessage(json.dumps(boat))])
    return {"cloth": JsonOutputParser().with_config(run_name="read_cloth").invoke(msg)["cloth"]}


def plan_panels(state: ClothState) -> ClothState:
    n = RunnableLambda(_count).with_config(run_name="count_panels").invoke(state["memory"]["measured"]["luff"])
    return {"panels": n, "cut": [], "cursor": 0}


def cut_next(state: ClothState) -> ClothState:
    i = state["cursor"]
    res = cut_panel.invoke({"order": state["memory"]["order"], "panel": i + 1, "cloth": state["cloth"]})
    return {"cut": state["cut"] + [res], "cursor": i + 1}


def more(state: ClothState) -> str:
    return "cut_next" if state["cursor"] < state["panels"] else END


def cloth_planner():
    g = StateGraph(ClothState)
    g.add_node("pick_cloth", pick_cloth)
    g.add_node("plan_panels", plan_panels)
    g.add_node("cut_next", cut_next)
    g.add_edge(START, "pick_cloth")
    g.add_edge("pick_cloth", "plan_panels")
    g.add_conditional_edges("plan_panels", more, ["cut_next", END])
    g.add_conditional_edges("cut_next", more, ["cut_next", END])
    return g.compile()


def submit(state: Loft) -> Loft:
    mem = state["memory"]
    rig = RunnableLambda(_convert).with_config(run_name="convert_rig_units").invoke(state["boat"])
    ticket = {"order": mem["order"], "hull": state["order"]["hull"], "measured": mem["measured"], "rig": rig,
              "cloth": state["cloth"], "cut": state["cut"], "customer": _customer(state["order"]["text"])}
    submit_cut_ticket.invoke({"ticket": ticket})
    return {}


def _customer(text: str) -> dict:
    import re

    return {k: float(re.search(rf"{k} ([\d.]+) m", text).group(1)) for k in ("luff", "leech", "foot")}


def build():
    g = StateGraph(Loft)
    g.add_node("intake", intake)
    g.add_node("read_measurements", read_measurements)
    g.add_node("remember_order", remember_order)
    g.add_node("brief_cloth", brief_cloth)
    g.add_node("cloth_planner", cloth_planner())
    g.add_node("submit", submit)
    order = ["intake", "read_measurements", "remember_order", "brief_cloth", "cloth_planner", "submit"]
    g.add_edge(START, order[0])
    for a, b in zip(order, order[1:]):
        g.add_edge(a, b)
    g.add_edge(order[-1], END)
    return g.compile()


@common.policy(DESK)
def _policy(messages: list[dict]) -> str:
    import re

    system, user = messages[0]["content"].lower(), messages[-1]["content"]
    if "extract" in system:
        return json.dumps({k: re.search(rf"{k} ([\d.]+) m", user).group(1) for k in ("luff", "leech", "foot")})
    boat = json.loads(user)
    return json.dumps({"cloth": next(c for limit, c in CLOTH if boat["displacement_kg"] <= limit)})


def run_once(inp: dict, path) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"cut sail order {inp['order']}")
    build().invoke({"order": inp}, config={"callbacks": [tracer], "recursion_limit": 80})
