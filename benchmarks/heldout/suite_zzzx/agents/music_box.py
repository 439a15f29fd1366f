"""Music-box maker's movements (langgraph route): a model with bound tools in a ToolNode loop (parallel calls),
an arranger sub-graph that pins the tune bar by bar, and a cylinder-cutting tool that checks the result."""
from __future__ import annotations

import json
from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "musicbox-movements"
ROUTE = "langgraph"
DOMAIN = "a music-box maker's movements"
SHAPE = "model with bound tools looping through a ToolNode (parallel lookups), arranger sub-graph (score tool, loop pinning each bar), cylinder tool check"
SWITCH = None

INPUTS = [
    {"order": "MB-40", "tune": "Greensleeves", "movement": "18-note", "engraving": "For Ada"},
    {"order": "MB-41", "tune": "Clair de Lune", "movement": "30-note", "engraving": "Juni 1998"},
    {"order": "MB-42", "tune": "Edelweiss", "movement": "18-note", "engraving": "Oma"},
    {"order": "MB-43", "tune": "Swan Lake", "movement": "30-note", "engraving": "R & T"},
    {"order": "MB-44", "tune": "Moon River", "movement": "30-note", "engraving": "Holly"},
]
TUNES = {
    "Greensleeves": {"id": "T-114", "key": "A minor", "root": 69, "bars": 16, "beats": 3, "tempo": 96, "shape": [0, 3, 5, 7, 8, 7, 5, 2]},
    "Clair de Lune": {"id": "T-208", "key": "D flat", "root": 61, "bars": 24, "beats": 3, "tempo": 66, "shape": [8, 5, 8, 5, 3, 5, 3, 0]},
    "Edelweiss": {"id": "T-331", "key": "C", "root": 60, "bars": 16, "beats": 3, "tempo": 100, "shape": [4, 7, 14, 12, 7, 5, 4, 2]},
    "Swan Lake": {"id": "T-412", "key": "B minor", "root": 59, "bars": 32, "beats": 4, "tempo": 120, "shape": [7, 0, 2, 3, 5, 3, 0, 3]},
    "Moon River": {"id": "T-509", "key": "C", "root": 60, "bars": 32, "beats": 3, "tempo": 92, "shape": [7, 14, 12, 11, 9, 7, 5, 7]},
}
MOVEMENTS = {"18-note": {"low": 60, "high": 84, "seconds": 40}, "30-note": {"low": 53, "high": 84, "seconds": 70}}


@tool
def tune_library(title: str) -> dict:
    """The house arrangement of a tune: id, key, tonic, bars, beats per bar and marked tempo."""
    t = dict(TUNES[title])
    if SWITCH == "archive-copy" and title == "Clair de Lune":
        t.update({"key": "E", "root": 76, "revised": "2019"})
    t.pop("shape")
    return t | {"title": title}


@tool
def movement_spec(movement: str) -> dict:
    """Comb range (MIDI notes) and cylinder playing time of a movement."""
    return dict(MOVEMENTS[movement]) | {"movement": movement}


@tool
def score_bars(tune_id: str) -> list:
    """The arrangement's bars, each a list of (note, beats)."""
    title = next(k for k, v in TUNES.items() if v["id"] == tune_id)
    t = TUNES[title]
    bars = []
    for i in range(t["bars"]):
        step = t["shape"][i % len(t["shape"])]
        last = i == t["bars"] - 1
        notes = [[t["root"] if last else t["root"] + step, t["beats"]]] if last else \
            [[t["root"] + step, 1]] + [[t["root"] + t["shape"][(i + j) % 8], 1] for j in range(1, t["beats"])]
        bars.append({"bar": i + 1, "notes": notes})
    if SWITCH == "page" and tune_id == "T-412":
        bars = bars[:24]
    return bars


@tool
def pin_bar(bar: dict, low: int, high: int) -> dict:
    """Place the pins of one bar on the cylinder; notes outside the comb are folded by an octave."""
    pins = []
    for note, beats in bar["notes"]:
        n = note
        while n > high + 12:
            n -= 12
        pins.append({"tooth": n - low, "beats": beats})
    return {"bar": bar["bar"], "pins": pins}


@tool
def cut_cylinder(order: str, pins: list, teeth: int, seconds: int, tempo: int, tonic_tooth: int, first_tooth: int) -> dict:
    """Cut the brass cylinder; refuses a layout that cannot play."""
    flat = [p for bar in pins for p in bar["pins"]]
    bad = [p["tooth"] for p in flat if not 0 <= p["tooth"] < teeth]
    if bad:
        raise ValueError(f"{order}: pins on teeth {sorted(set(bad))[:4]} but the comb has {teeth} teeth")
    beats = sum(p["beats"] for p in flat)
    played = beats * 60 / tempo
    if played > seconds:
        raise ValueError(f"{order}: {beats} beats at {tempo} bpm play {played:.1f} s on a {seconds} s cylinder")
    if flat[0]["tooth"] != first_tooth:
        raise ValueError(f"{order}: cylinder opens on tooth {flat[0]['tooth']}, the tune opens on tooth {first_tooth}")
    if flat[-1]["tooth"] != tonic_tooth:
        raise ValueError(f"{order}: last pin on tooth {flat[-1]['tooth']} does not close on the tonic (tooth {tonic_tooth})")
    return {"order": order, "pins": len(flat), "seconds": round(played, 1)}


class Arr(TypedDict, total=False):
    tune_id: str
    low: int
    high: int
    bars: list
    pinned: list


def fetch_score(state, config):
    return {"bars": score_bars.invoke({"tune_id": state["tune_id"]}, config=config)}


def pin_all(state, config):
    bars = state["bars"]
    start = 1 if SWITCH == "from-one" else 0
    return {"pinned": [pin_bar.invoke({"bar": b, "low": state["low"], "high": state["high"]}, config=config)
                       for b in bars[start:]]}


def arranger_graph():
    g = StateGraph(Arr)
    g.add_node("fetch_score", fetch_score)
    g.add_node("pin_all", pin_all)
    g.add_edge(START, "fetch_score")
    g.add_edge("fetch_score", "pin_all")
    g.add_edge("pin_all", END)
    return g.compile(name="arranger")


class Box(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    request: dict
    arrangement: dict
    pinned: list
    cut: dict


def brain(request):
    from trajdebug.testing import Reply, tool_call
    msgs = request.body["messages"]
    req = json.loads(msgs[1]["content"])
    results = [json.loads(m["content"]) for m in msgs if m["role"] == "tool"]
    if not results:
        return Reply(tool_calls=(tool_call("tune_library", {"title": req["tune"]}),
                                 tool_call("movement_spec", {"movement": req["movement"]})))
    tune = next(r for r in results if "title" in r)
    tempo = tune["tempo"]
    if SWITCH == "tempo" and req["order"] == "MB-44":
        tempo = 60
    return json.dumps({"tune_id": tune["id"], "key": tune["key"], "root": tune["root"], "tempo": tempo,
                       "note": f"{tune['title']} in {tune['key']}"})


def build(server):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tools = [tune_library, movement_spec]
    bound = llm.bind_tools(tools)
    arranger = arranger_graph()

    def intake(state):
        return {"messages": [SystemMessage("You arrange tunes for music-box movements. Look up the tune and the movement, then answer with JSON."),
                             HumanMessage(json.dumps(state["request"]))]}

    def composer(state):
        return {"messages": [bound.invoke(state["messages"])]}

    def settle(state):
        arrangement = json.loads(state["messages"][-1].content)
        spec = next(json.loads(m.content) for m in state["messages"] if getattr(m, "name", None) == "movement_spec")
        return {"arrangement": arrangement | {"low": spec["low"], "high": spec["high"], "seconds": spec["seconds"]}}

    def arrange(state, config):
        a = state["arrangement"]
        tune_id = a["tune_id"]
        if SWITCH == "b-side" and state["request"]["order"] == "MB-42":
            tune_id = TUNES["Greensleeves"]["id"]
        out = arranger.invoke({"tune_id": tune_id, "low": a["low"], "high": a["high"]}, config=config)
        return {"pinned": out["pinned"]}

    def cut(state, config):
        a = state["arrangement"]
        first = TUNES[state["request"]["tune"]]
        first_tooth = a["root"] + first["shape"][0] - a["low"]
        while first_tooth > a["high"] - a["low"] + 12:
            first_tooth -= 12
        res = cut_cylinder.invoke({"order": state["request"]["order"], "pins": state["pinned"],
                                   "teeth": a["high"] - a["low"] + 1, "seconds": a["seconds"], "tempo": a["tempo"],
                                   "tonic_tooth": a["root"] - a["low"], "first_tooth": first_tooth}, config=config)
        return {"cut": res}

    g = StateGraph(Box)
    g.add_node("intake", intake)
    g.add_node("composer", composer)
    g.add_node("tools", ToolNode(tools))
    g.add_node("settle", settle)
    g.add_node("arrange", arrange)
    g.add_node("cut", cut)
    g.add_edge(START, "intake")
    g.add_edge("intake", "composer")
    g.add_conditional_edges("composer", tools_condition, {"tools": "tools", END: "settle"})
    g.add_edge("tools", "composer")
    g.add_edge("settle", "arrange")
    g.add_edge("arrange", "cut")
    g.add_edge("cut", END)
    return g.compile()


def record(inp, path, server):
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"movement {inp['order']}: {inp['tune']} on {inp['movement']}")
    build(server).invoke({"request": dict(inp)}, config={"callbacks": [tracer]})


CASES = [
    {"id": "box-archive-arrangement", "input": 1, "switch": "archive-copy", "kind": "stale_data",
     "root": ("tune_library", 1), "failure": ("cut_cylinder", 1),
     "description": "The tune library answers Clair de Lune with its 2019 arrangement in E, a key the current arrangement and the 30-note comb do not use."},
    {"id": "box-first-bar", "input": 0, "switch": "from-one", "kind": "off_by_one",
     "root": ("pin_all", 1), "failure": ("cut_cylinder", 1),
     "description": "Pinning starts at the second bar (index 1), so the cylinder never plays the tune's opening bar."},
    {"id": "box-other-tune", "input": 2, "switch": "b-side", "kind": "subagent_wrong_entity",
     "root": ("arrange", 1), "failure": ("cut_cylinder", 1),
     "description": "The arranger sub-graph is handed Greensleeves' tune id T-114 for the Edelweiss order, so it pins the other tune."},
    {"id": "box-swan-bars", "input": 3, "switch": "page", "kind": "truncated_result",
     "root": ("score_bars", 1), "failure": ("cut_cylinder", 1),
     "description": "The score tool returns only the first 24 of Swan Lake's 32 bars, so the pinned tune stops short of its closing tonic."},
    {"id": "box-tempo", "input": 4, "switch": "tempo", "kind": "hallucinated_value",
     "root": ("ChatOpenAI", 2), "failure": ("cut_cylinder", 1),
     "description": "The composing model settles on 60 bpm for Moon River, a tempo the library's 92 bpm marking does not give."},
]
