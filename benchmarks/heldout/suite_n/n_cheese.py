"""Cheese cave affinage (langgraph route): per-lot loop of recipe retrieval, sensors, a model router, actions, cave log."""

from __future__ import annotations

import datetime as dt
import json
import operator
from typing import Annotated, Any, TypedDict

import nkit
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer


NAME = "cheese-cave"
ROUTE = "langgraph"
DOMAIN = "cheese cave affinage"
SHAPE = "lot loop: recipe retriever, sensor tool, age node, model router to turn/brine/mist/ready tools, cave-log node; dispatch and audit"

TODAY = dt.date(2026, 7, 2)
RECIPES = {
    "alpine": {"title": "Alpine washed-curd wheel", "min_age_days": 120, "humidity_floor": 90, "brine": True},
    "tomme": {"title": "Tomme de montagne", "min_age_days": 60, "humidity_floor": 88, "brine": True},
    "bloomy": {"title": "Bloomy-rind round", "min_age_days": 21, "humidity_floor": 92, "brine": False},
    "alpine-young": {"title": "Young alpine fruitiere wheel", "min_age_days": 45, "humidity_floor": 90, "brine": True},
    "blue": {"title": "Blue-veined drum", "min_age_days": 75, "humidity_floor": 93, "brine": True},
}
# lot: (style, bay, make date, live humidity, brined)
CAVES = {
    "cave-a": [("L-311", "alpine", "bay-1", "2026-02-10", 93, True), ("L-312", "bloomy", "bay-2", "2026-06-01", 95, False),
               ("L-313", "alpine", "bay-1", "2026-03-05", 92, True), ("L-314", "tomme", "bay-3", "2026-04-20", 90, True)],
    "cave-b": [("L-321", "blue", "bay-4", "2026-03-20", 95, True), ("L-322", "alpine", "bay-1", "2026-04-02", 91, True),
               ("L-323", "bloomy", "bay-2", "2026-06-15", 94, False), ("L-324", "tomme", "bay-3", "2026-05-20", 86, True),
               ("L-325", "alpine", "bay-5", "2026-01-15", 92, True)],
    "cave-c": [("L-331", "tomme", "bay-3", "2026-04-01", 89, True), ("L-332", "alpine", "bay-1", "2026-04-20", 93, True),
               ("L-333", "bloomy", "bay-2", "2026-06-05", 95, False)],
    "cave-d": [("L-341", "alpine", "bay-1", "2026-02-01", 94, True), ("L-342", "blue", "bay-4", "2026-05-01", 96, False)],
    "cave-e": [("L-351", "bloomy", "bay-2", "2026-06-20", 96, False), ("L-352", "tomme", "bay-3", "2026-03-10", 91, True),
               ("L-353", "alpine", "bay-5", "2026-05-05", 92, True)],
    "cave-f": [("L-361", "blue", "bay-4", "2026-04-10", 95, True), ("L-362", "alpine", "bay-1", "2026-03-01", 91, True),
               ("L-363", "tomme", "bay-3", "2026-05-25", 90, True), ("L-364", "bloomy", "bay-2", "2026-06-10", 94, False)],
    "cave-g": [("L-371", "alpine", "bay-5", "2026-02-20", 92, True), ("L-372", "bloomy", "bay-2", "2026-06-25", 95, False),
               ("L-373", "blue", "bay-4", "2026-03-01", 94, True)],
}
INPUTS = {c: {"cave": c} for c in CAVES}
REFS = ["cave-d", "cave-e", "cave-f", "cave-g"]
FAULTS = [
    {"id": "cc-recipe", "kind": "wrong_retrieval", "input": "cave-b", "root": "RecipeRetriever", "marker": "Young alpine fruitiere"},
    {"id": "cc-route", "kind": "wrong_routing", "input": "cave-a", "root": "ChatOpenAI", "marker": "ACTION: brine lot L-313"},
    {"id": "cc-log", "kind": "bad_memory_write", "input": "cave-c", "root": "log", "marker": '"action": "ready", "age_days": 73'},
    {"id": "cc-age", "kind": "off_by_one", "input": "cave-a", "root": "age", "marker": '"age_days": 120'},
    {"id": "cc-humid", "kind": "stale_data", "input": "cave-b", "root": "read_cave_sensor", "marker": "2026-06-30T22:00"},
]
_LOTS: dict[str, dict] = {}
_LIVE: dict[str, int] = {}


def _lot(row: tuple) -> dict:
    lot, style, bay, made, _, brined = row
    return {"lot": lot, "style": style, "bay": bay, "made": made, "brined": brined}


class RecipeRetriever(BaseRetriever):
    """Affinage recipes by cheese style."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        style = query.split("style ")[1].split()[0]
        if nkit.active("cc-recipe") and "L-322" in query:
            style = "alpine-young"
        r = RECIPES[style]
        text = f"{r['title']}: ripen at least {r['min_age_days']} days; keep humidity at or above {r['humidity_floor']}%; brine {'once after moulding' if r['brine'] else 'never'}."
        return [Document(page_content=text, metadata={"style": style, **r})]


@tool
def list_lots(cave: str) -> str:
    """Lots ripening in a cave."""
    return json.dumps([_lot(r) for r in CAVES[cave]])


@tool
def read_cave_sensor(bay: str) -> str:
    """Humidity reading of a bay."""
    if nkit.active("cc-humid") and bay == "bay-3":
        return json.dumps({"bay": bay, "humidity_pct": 91, "read_at": "2026-06-30T22:00"})
    return json.dumps({"bay": bay, "humidity_pct": _LIVE[bay], "read_at": "2026-07-02T06:00"})


@tool
def turn_wheels(lot: str) -> str:
    """Turn and brush the wheels of a lot."""
    return json.dumps({"lot": lot, "turned": True})


@tool
def brine_bath(lot: str) -> str:
    """Send a lot to the brine station."""
    info = _LOTS[lot]
    if info["brined"]:
        raise RuntimeError(f"Brine station refused lot {lot}: already brined after moulding on {info['made']}, a second bath is not scheduled")
    return json.dumps({"lot": lot, "brined": True})


@tool
def mist_bay(bay: str) -> str:
    """Run the misting cycle in a bay."""
    return json.dumps({"bay": bay, "misted": True})


@tool
def stage_for_dispatch(lot: str) -> str:
    """Move a lot to the dispatch rack."""
    return json.dumps({"lot": lot, "rack": "D1"})


@tool
def ship_lots(lots: list[str]) -> str:
    """Hand ready lots to the distributor."""
    for lot in lots:
        info = _LOTS[lot]
        age = (TODAY - dt.date.fromisoformat(info["made"])).days
        need = RECIPES[info["style"]]["min_age_days"]
        if age < need:
            raise RuntimeError(f"Distributor rejected lot {lot}: {age} days in cave, its {info['style']} spec requires {need}")
    return json.dumps({"shipped": lots, "manifest": f"MF-{len(lots)}"})


@tool
def cave_audit(misted_bays: list[str]) -> str:
    """End-of-round audit against live humidity."""
    for lot, info in _LOTS.items():
        floor = RECIPES[info["style"]]["humidity_floor"]
        if _LIVE[info["bay"]] < floor and info["bay"] not in misted_bays:
            raise RuntimeError(f"Cave audit failed: {info['bay']} reads {_LIVE[info['bay']]}% (floor {floor}% for lot {lot}) and no misting cycle ran")
    return json.dumps({"audit": "pass"})


class State(TypedDict):
    cave: str
    lots: list
    i: int
    recipe: dict
    reading: dict
    action: str
    log: Annotated[list, operator.add]


def make_graph(llm: ChatOpenAI):
    retriever = RecipeRetriever()

    def load(state: State) -> dict:
        return {"lots": json.loads(list_lots.invoke({"cave": state["cave"]})), "i": 0}

    def recipe(state: State) -> dict:
        lot = state["lots"][state["i"]]
        [doc] = retriever.invoke(f"recipe for style {lot['style']} lot {lot['lot']}")
        return {"recipe": {"text": doc.page_content, **doc.metadata}}

    def sensors(state: State) -> dict:
        lot = state["lots"][state["i"]]
        return {"reading": json.loads(read_cave_sensor.invoke({"bay": lot["bay"]}))}

    def age(state: State) -> dict:
        lot = state["lots"][state["i"]]
        days = (TODAY - dt.date.fromisoformat(lot["made"])).days
        if nkit.active("cc-age"):
            days += 1
        return {"reading": {**state["reading"], "age_days": days}}

    def decide(state: State) -> dict:
        lot = state["lots"][state["i"]]
        msg = llm.invoke([
            SystemMessage("You are the affineur. Answer: ACTION: <turn|brine|mist|ready> lot <id>"),
            HumanMessage(f"Recipe: {state['recipe']['text']}\nLot: {json.dumps(lot)}\nReading: {json.dumps(state['reading'])}"),
        ])
        return {"action": msg.content.split()[1]}

    def act(name: str, fn: Any, key: str):
        def node(state: State) -> dict:
            lot = state["lots"][state["i"]]
            fn.invoke({key: lot[key]})
            return {}
        node.__name__ = name
        return node

    def log(state: State) -> dict:
        lot = state["lots"][state["i"]]
        entry = {"lot": lot["lot"], "bay": lot["bay"], "action": state["action"], "age_days": state["reading"]["age_days"]}
        if nkit.active("cc-log") and state["i"] > 0 and state["log"][-1]["action"] == "ready":
            entry["action"] = "ready"
        return {"log": [entry], "i": state["i"] + 1}

    def dispatch(state: State) -> dict:
        ready = [e["lot"] for e in state["log"] if e["action"] == "ready"]
        return {"reading": json.loads(ship_lots.invoke({"lots": ready}))}

    def audit(state: State) -> dict:
        misted = [e["bay"] for e in state["log"] if e["action"] == "mist"]
        return {"reading": json.loads(cave_audit.invoke({"misted_bays": misted}))}

    g = StateGraph(State)
    for name, fn in (("load", load), ("recipe", recipe), ("sensors", sensors), ("age", age), ("decide", decide), ("log", log),
                     ("dispatch", dispatch), ("audit", audit)):
        g.add_node(name, fn)
    acts = {"turn": act("turn", turn_wheels, "lot"), "brine": act("brine", brine_bath, "lot"),
            "mist": act("mist", mist_bay, "bay"), "ready": act("ready", stage_for_dispatch, "lot")}
    for name, fn in acts.items():
        g.add_node(name, fn)
        g.add_edge(name, "log")
    g.add_edge(START, "load")
    g.add_edge("load", "recipe")
    g.add_edge("recipe", "sensors")
    g.add_edge("sensors", "age")
    g.add_edge("age", "decide")
    g.add_conditional_edges("decide", lambda s: s["action"], {k: k for k in acts})
    g.add_conditional_edges("log", lambda s: "recipe" if s["i"] < len(s["lots"]) else "dispatch", {"recipe": "recipe", "dispatch": "dispatch"})
    g.add_edge("dispatch", "audit")
    g.add_edge("audit", END)
    return g.compile()


def policy(request) -> Any:
    text = request.body["messages"][-1]["content"]
    lines = dict(line.split(": ", 1) for line in text.split("\n"))
    lot = json.loads(lines["Lot"])
    reading = json.loads(lines["Reading"])
    recipe = lines["Recipe"]
    min_age = int(recipe.split("at least ")[1].split()[0])
    floor = int(recipe.split("at or above ")[1].split("%")[0])
    brine = "brine never" not in recipe
    if reading["humidity_pct"] < floor:
        action = "mist"
    elif reading["age_days"] >= min_age:
        action = "ready"
    elif brine and not lot["brined"]:
        action = "brine"
    else:
        action = "turn"
    if nkit.active("cc-route") and lot["lot"] == "L-313":
        action = "brine"
    return f"ACTION: {action} lot {lot['lot']}"


def record(inp: dict, path) -> None:
    server = nkit.SERVER
    server.use(policy)
    _LOTS.clear()
    _LIVE.clear()
    for row in CAVES[inp["cave"]]:
        _LOTS[row[0]] = _lot(row)
        _LIVE[row[2]] = row[4]
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"affinage round in {inp['cave']}")
    try:
        make_graph(llm).invoke({"cave": inp["cave"], "log": []}, config={"callbacks": [tracer], "recursion_limit": 200})
    except RuntimeError:
        pass
