"""Bellringers' guild rota: a LangGraph StateGraph with ChatOpenAI, a conditional branch and a loop over towers."""
from __future__ import annotations

import json
import operator
from typing import Annotated, TypedDict

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

RUN_NAME = "guild-rota-planner"
ROUTE = "langgraph"
DOMAIN = "bellringers' guild rota"
SHAPE = "StateGraph: intake, availability tool, plan (ChatOpenAI), parse, conditional method branch, bell numbering, loop of per-tower band tool calls, rota check node"
SWITCH = None

RINGERS = {
    "Agnes Pell": ("conversant", []), "Bram Hollis": ("conversant", ["2026-12-13"]), "Cora Vane": ("learner", []),
    "Dunstan Reeve": ("conversant", []), "Edith Lark": ("conversant", ["2026-12-20"]), "Fen Morrow": ("learner", ["2026-12-27"]),
    "Gideon Ash": ("conversant", []), "Hester Coyle": ("conversant", ["2027-01-03"]), "Ivo Brant": ("conversant", []),
    "Jude Tamsin": ("learner", []), "Kit Farrow": ("conversant", ["2026-12-13", "2026-12-20"]), "Lettice Orme": ("conversant", []),
    "Mabel Quint": ("conversant", []), "Ned Sorrel": ("conversant", ["2027-01-10"]), "Olive Pask": ("learner", []),
    "Piers Rudd": ("conversant", []),
}
TOWERS = {"St Mary Redcliffe": 6, "All Saints Wyke": 5, "St Botolph Hale": 8, "Holy Trinity Ness": 6}
INPUTS = [
    {"sunday": "2026-12-13", "towers": ["St Mary Redcliffe", "All Saints Wyke"]},
    {"sunday": "2026-12-20", "towers": ["St Botolph Hale", "All Saints Wyke"]},
    {"sunday": "2026-12-27", "towers": ["Holy Trinity Ness", "St Mary Redcliffe"]},
    {"sunday": "2027-01-03", "towers": ["All Saints Wyke", "Holy Trinity Ness"]},
    {"sunday": "2027-01-10", "towers": ["St Botolph Hale", "All Saints Wyke"]},
]
CASES = [
    dict(id="zzzp_bell_01", input=2, switch="a", fault_kind="wrong_routing", root=("pick_method", 1, "other"),
         failure=("check_rota", 1), description="The branch sends a band holding learners to method ringing instead of call changes."),
    dict(id="zzzp_bell_02", input=1, switch="b", fault_kind="plan_error", root=("ChatOpenAI", 1, "llm"),
         failure=("check_rota", 1), description="The drafted plan gives St Botolph Hale seven ringers for its eight bells."),
    dict(id="zzzp_bell_03", input=0, switch="c", fault_kind="off_by_one", root=("number_bells", 1, "other"),
         failure=("tower_band", 1), description="Bells are numbered from 0 to n-1 rather than 1 to n, so the treble becomes bell 0."),
    dict(id="zzzp_bell_04", input=3, switch="d", fault_kind="tool_ignores_argument", root=("ringer_availability", 1, "tool"),
         failure=("check_rota", 1), description="The availability lookup ignores the date it is given and answers for the guild's next practice night, keeping Hester Coyle on the list though she is away on 3 January."),
    dict(id="zzzp_bell_05", input=4, switch="e", fault_kind="bad_memory_write", root=("assign_tower", 2, "agent"),
         failure=("check_rota", 1), description="The second tower's band is written into the rota under the first tower's name, so St Botolph Hale ends with two bands and All Saints Wyke with none."),
]


def policy(request):
    msgs = request.body["messages"]
    payload = json.loads(msgs[-1]["content"])
    used: set = set()
    plan = {}
    for t in payload["towers"]:
        n = TOWERS[t]
        if SWITCH == "b" and n == 8:
            n = 7
        band = [r for r in payload["available"] if r not in used][:n]
        used.update(band)
        plan[t] = band
    return json.dumps({"plan": plan})


@tool
def ringer_availability(sunday: str) -> list:
    """Ringers of the guild free to ring on the given Sunday."""
    day = sunday
    if SWITCH == "d":
        day = "2026-12-09"
    return [name for name, (_, away) in RINGERS.items() if day not in away]


@tool
def tower_band(tower: str, bells: list, ringers: list) -> dict:
    """Put the ringers on the bells of one tower, treble first."""
    if min(bells) < 1:
        raise ValueError(f"{tower} has no bell {min(bells)}: bells are numbered from the treble, 1 to {TOWERS[tower]}")
    return {"tower": tower, "band": {str(b): r for b, r in zip(bells, ringers)}}


class Rota(TypedDict, total=False):
    sunday: str
    towers: list
    available: list
    plan: dict
    method: str
    bells: dict
    idx: int
    rota: dict


def build(llm):
    def intake(state: Rota) -> dict:
        return {"idx": 0, "rota": {}}

    def fetch_availability(state: Rota) -> dict:
        return {"available": ringer_availability.invoke({"sunday": state["sunday"]})}

    def draft_plan(state: Rota) -> dict:
        msg = llm.invoke([("system", "You are the guild's rota secretary. Answer with JSON {\"plan\": {tower: [ringers]}}."),
                          ("user", json.dumps({"sunday": state["sunday"], "towers": state["towers"], "available": state["available"]}))])
        return {"plan": json.loads(msg.content)["plan"]}

    def pick_method(state: Rota) -> str:
        bands = [r for t in state["towers"] for r in state["plan"][t]]
        all_conversant = all(RINGERS[r][0] == "conversant" for r in bands)
        if SWITCH == "a":
            all_conversant = True
        return "method_ringing" if all_conversant else "call_changes"

    def method_ringing(state: Rota) -> dict:
        return {"method": "Plain Bob Doubles"}

    def call_changes(state: Rota) -> dict:
        return {"method": "call changes"}

    def number_bells(state: Rota) -> dict:
        start = 0 if SWITCH == "c" else 1
        return {"bells": {t: list(range(start, start + TOWERS[t])) for t in state["towers"]}}

    def assign_tower(state: Rota) -> dict:
        i = state["idx"]
        t = state["towers"][i]
        got = tower_band.invoke({"tower": t, "bells": state["bells"][t], "ringers": state["plan"][t]})
        rota = dict(state["rota"])
        key = state["towers"][i - 1] if (SWITCH == "e" and i > 0) else t
        rota[key] = rota.get(key, []) + [got["band"]] if key in rota else [got["band"]]
        return {"rota": rota, "idx": i + 1}

    def more_towers(state: Rota) -> str:
        return "assign_tower" if state["idx"] < len(state["towers"]) else "check_rota"

    def check_rota(state: Rota) -> dict:
        seen = {}
        for t in state["towers"]:
            bands = state["rota"].get(t, [])
            if len(bands) != 1:
                raise ValueError(f"{t}: {len(bands)} bands on the rota for {state['sunday']}")
            band = bands[0]
            for b in range(1, TOWERS[t] + 1):
                if str(b) not in band:
                    raise ValueError(f"{t}: bell {b} has no ringer on {state['sunday']}")
            for r in band.values():
                if state["sunday"] in RINGERS[r][1]:
                    raise ValueError(f"{r} is away on {state['sunday']} but rostered at {t}")
                if r in seen:
                    raise ValueError(f"{r} rostered at both {seen[r]} and {t}")
                seen[r] = t
                if state["method"] != "call changes" and RINGERS[r][0] == "learner":
                    raise ValueError(f"{t}: {r} is a learner and cannot ring {state['method']}")
        return {"rota": state["rota"]}

    g = StateGraph(Rota)
    for fn in (intake, fetch_availability, draft_plan, method_ringing, call_changes, number_bells, assign_tower, check_rota):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "fetch_availability")
    g.add_edge("fetch_availability", "draft_plan")
    g.add_conditional_edges("draft_plan", pick_method, ["method_ringing", "call_changes"])
    g.add_edge("method_ringing", "number_bells")
    g.add_edge("call_changes", "number_bells")
    g.add_edge("number_bells", "assign_tower")
    g.add_conditional_edges("assign_tower", more_towers, ["assign_tower", "check_rota"])
    g.add_edge("check_rota", END)
    return g.compile()


def record(server, inp: dict, path: str) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="rota-model", max_retries=0)
    tracer = TrajdebugTracer(path=path, name=RUN_NAME, task=f"rota for {inp['sunday']}")
    try:
        build(llm).invoke(dict(inp), config={"callbacks": [tracer]})
    except Exception:
        pass
