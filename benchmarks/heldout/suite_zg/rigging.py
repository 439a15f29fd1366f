"""Concert stage rigging planner: a LangGraph StateGraph with ChatOpenAI, traced with TrajdebugTracer."""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .kit import active

AGENT = "stage-rigging"
ROUTE = "langgraph"
DOMAIN = "concert stage rigging"
SHAPE = "intake -> venue points (tool) -> weighing sub-graph (loop, tool per item) -> route flown/ground (LLM) -> hang plan (LLM) -> assign points -> hoist certs (tool) -> submit rig plot"
EXT = "jsonl"

ITEMS = {
    "truss-US": 410.0, "truss-DS": 385.0, "truss-MID": 300.0, "LED-wall": 1320.0, "PA-left": 640.0,
    "PA-right": 640.0, "lights-A": 210.0, "lights-B": 190.0, "sub-array": 880.0,
}
VENUES = {
    "Harbour Arena": {"points": [{"id": f"P{i}", "swl_kg": 1000} for i in range(1, 13)], "floor_kg_m2": 500, "roof": "steel"},
    "Old Corn Hall": {"points": [{"id": f"H{i}", "swl_kg": 500} for i in range(1, 9)], "floor_kg_m2": 1500, "roof": "timber"},
}
HOISTS = [f"M-{i:02d}" for i in range(1, 15)]
INPUTS = {
    "a": {"show": "RIG-771", "venue": "Harbour Arena", "items": ["truss-US", "truss-DS", "LED-wall", "PA-left", "PA-right", "lights-A"]},
    "b": {"show": "RIG-802", "venue": "Harbour Arena", "items": ["truss-US", "truss-MID", "PA-left", "PA-right", "sub-array"]},
    "r1": {"show": "RIG-700", "venue": "Old Corn Hall", "items": ["truss-US", "lights-A", "lights-B"]},
    "r2": {"show": "RIG-715", "venue": "Harbour Arena", "items": ["truss-DS", "LED-wall", "lights-B"]},
    "r3": {"show": "RIG-733", "venue": "Harbour Arena", "items": ["PA-left", "PA-right", "truss-MID", "lights-A"]},
    "r4": {"show": "RIG-750", "venue": "Old Corn Hall", "items": ["truss-DS", "lights-B"]},
}
REFS = ["r1", "r2", "r3", "r4"]


def policy(request):
    msgs = request.body["messages"]
    task = msgs[0]["content"].split(":", 1)[0]
    data = json.loads(msgs[-1]["content"])
    if task == "ROUTE":
        choice = "flown" if data["roof"] == "steel" else "ground_support"
        if active("rig-2"):
            choice = "ground_support"
        return json.dumps({"mode": choice})
    if task == "PLAN":
        hangs = []
        for name, kg in data["loads"].items():
            motors = 2 if kg > 400 else 1
            if name == "LED-wall":
                motors = 3 if kg > 900 else 2
            hangs.append({"item": name, "motors": motors, "kg": kg})
        if active("rig-4"):
            hangs = [h if h["item"] != "PA-right" else {**h, "motors": 0} for h in hangs]
        return json.dumps({"hangs": hangs})
    return "{}"


class RigState(TypedDict, total=False):
    show: str
    venue: str
    items: list
    points: list
    loads: Annotated[dict, operator.or_]
    queue: list
    mode: str
    hangs: list
    assignment: list
    certs: list


@tool
def get_rigging_points(venue: str) -> str:
    """Rigging points and floor rating of a venue."""
    return json.dumps(VENUES[venue])


@tool
def weigh_item(item: str) -> str:
    """Manufacturer weight of an item, in kilograms."""
    kg = ITEMS[item]
    if item == "LED-wall" and active("rig-1"):
        return json.dumps({"item": item, "weight": round(kg / 2.2046, 1), "unit": "kg"})
    return json.dumps({"item": item, "weight": kg, "unit": "kg"})


@tool
def list_hoist_certs(hoists: list[str]) -> str:
    """Inspection certificates of chain hoists."""
    certs = [{"hoist": h, "cert": f"LOLER-26-{h[2:]}", "valid_to": "2027-01-31"} for h in hoists]
    if active("rig-3"):
        certs = certs[:8]
    return json.dumps(certs)


def record(server, inp: dict, out: Path) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="local", model=server.model, max_retries=0)

    def ask(system: str, payload: dict, config: RunnableConfig) -> dict:
        msg = llm.invoke([SystemMessage(system), HumanMessage(json.dumps(payload))], config=config)
        return json.loads(msg.content)

    def intake(state: RigState) -> dict:
        return {"queue": list(state["items"]), "loads": {}}

    def survey_venue(state: RigState, config: RunnableConfig) -> dict:
        venue = json.loads(get_rigging_points.invoke({"venue": state["venue"]}, config=config))
        return {"points": venue["points"]}

    def weigh_next(state: RigState, config: RunnableConfig) -> dict:
        item, rest = state["queue"][0], state["queue"][1:]
        got = json.loads(weigh_item.invoke({"item": item}, config=config))
        return {"queue": rest, "loads": {item: got["weight"]}}

    def choose_mode(state: RigState, config: RunnableConfig) -> dict:
        venue = VENUES[state["venue"]]
        mode = ask("ROUTE: flown rig or ground support?", {"roof": venue["roof"], "floor_kg_m2": venue["floor_kg_m2"],
                                                             "total_kg": sum(state["loads"].values())}, config)
        return {"mode": mode["mode"]}

    def plan_hangs(state: RigState, config: RunnableConfig) -> dict:
        plan = ask("PLAN: motors per hang", {"loads": state["loads"], "mode": state["mode"]}, config)
        return {"hangs": plan["hangs"]}

    def assign_points(state: RigState) -> dict:
        points = [p["id"] for p in state["points"]]
        assignment, k = [], 0
        for h in state["hangs"]:
            for _ in range(h["motors"]):
                assignment.append({"item": h["item"], "point": points[k], "hoist": HOISTS[k],
                                   "kg": round(h["kg"] / h["motors"], 1)})
                k += 1
        if active("rig-5"):
            assignment = assignment[:-1]
        return {"assignment": assignment}

    def fetch_certs(state: RigState, config: RunnableConfig) -> dict:
        hoists = [a["hoist"] for a in state["assignment"]]
        return {"certs": json.loads(list_hoist_certs.invoke({"hoists": hoists}, config=config))}

    def submit_rig_plot(state: RigState) -> dict:
        venue = VENUES[state["venue"]]
        if state["mode"] == "ground_support":
            total = sum(ITEMS[i] for i in state["items"])
            if total / 40 > venue["floor_kg_m2"] or venue["roof"] == "steel" and total > 2000:
                raise ValueError(f"rig plot {state['show']} rejected: ground support towers would put {total:.0f} kg "
                                 f"on a deck rated {venue['floor_kg_m2']} kg/m2")
        certified = {c["hoist"] for c in state["certs"]}
        for a in state["assignment"]:
            if a["hoist"] not in certified:
                raise ValueError(f"rig plot {state['show']} rejected: hoist {a['hoist']} at {a['point']} has no "
                                 "inspection certificate")
        swl = {p["id"]: p["swl_kg"] for p in state["points"]}
        for item in state["items"]:
            hung = [a for a in state["assignment"] if a["item"] == item]
            if not hung:
                raise ValueError(f"rig plot {state['show']} rejected: {item} is not hung from any point")
            if abs(sum(a["kg"] for a in hung) - ITEMS[item]) > 1.0:
                raise ValueError(f"rig plot {state['show']} rejected: {item} hangs {sum(a['kg'] for a in hung):.1f} kg "
                                 f"on its points but weighs {ITEMS[item]:.1f} kg")
            for a in hung:
                if a["kg"] > swl[a["point"]]:
                    raise ValueError(f"rig plot {state['show']} rejected: point {a['point']} would carry {a['kg']} kg, "
                                     f"safe working load {swl[a['point']]} kg")
        return {}

    def more_to_weigh(s: RigState) -> str:
        return "weigh_next" if s["queue"] else END

    weigh = StateGraph(RigState)  # the weighing desk: a sub-graph looping over the items
    weigh.add_node("weigh_next", weigh_next)
    weigh.add_edge(START, "weigh_next")
    weigh.add_conditional_edges("weigh_next", more_to_weigh)

    g = StateGraph(RigState)
    for name, fn in [("intake", intake), ("survey_venue", survey_venue), ("weigh_desk", weigh.compile()),
                     ("choose_mode", choose_mode), ("plan_hangs", plan_hangs), ("assign_points", assign_points),
                     ("fetch_certs", fetch_certs), ("submit_rig_plot", submit_rig_plot)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "survey_venue")
    g.add_edge("survey_venue", "weigh_desk")
    g.add_edge("weigh_desk", "choose_mode")
    g.add_edge("choose_mode", "plan_hangs")
    g.add_edge("plan_hangs", "assign_points")
    g.add_edge("assign_points", "fetch_certs")
    g.add_edge("fetch_certs", "submit_rig_plot")
    g.add_edge("submit_rig_plot", END)
    tracer = TrajdebugTracer(path=str(out), name=AGENT, task=f"rig plot for show {inp['show']}")
    g.compile().invoke({"show": inp["show"], "venue": inp["venue"], "items": inp["items"]},
                       config={"callbacks": [tracer], "recursion_limit": 60})


CASES_SPEC = [
    ("rig-1", "unit_error", "a", "weigh_item", "LED-wall", "submit_rig_plot",
     "The weight lookup divides the LED wall's kilograms by 2.2046 as if they were pounds, so the hang plan carries too little load."),
    ("rig-2", "wrong_routing", "b", "ChatOpenAI", "ground_support", "submit_rig_plot",
     "The mode router sends a steel-roof arena show to ground support, which the deck rating cannot carry."),
    ("rig-3", "truncated_result", "a", "list_hoist_certs", "LOLER-26-08", "submit_rig_plot",
     "The certificate lookup returns only the first eight hoists' certificates, so later hoists look uncertified."),
    ("rig-4", "plan_error", "a", "ChatOpenAI", '\\"motors\\": 0', "submit_rig_plot",
     "The hang plan gives PA-right zero motors, so it is never hung."),
    ("rig-5", "off_by_one", "b", "assign_points", "hoist", "submit_rig_plot",
     "The point assignment drops its last motor, leaving the sub-array's load short on its points."),
]
