"""Canal lock scheduling (langgraph route): plans a boat's passage through a flight of locks and books windows."""
from __future__ import annotations

import json
import operator
from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

from . import fakellm
from .kit import active

AGENT = "canal-lock-scheduler"
ROUTE = "langgraph"
TODAY = "2026-12-04"

DEPTH = {"L1": "1.85 m", "L2": "1.62 m", "L3": "1.74 m", "L4": "1.91 m", "L5": "1.58 m"}
STOPPAGES = {"2026-12-12": [{"notice": "NS-88", "lock": "L2", "from": "09:00", "to": "11:00"}],
             "2026-12-15": [{"notice": "NS-91", "lock": "L4", "from": "13:00", "to": "15:00"}]}


def slots(lock, date):
    base = 8 * 60 + (int(lock[1:]) * 10) + (int(date[-2:]) % 3) * 5
    return [f"{(base + 40 * k) // 60:02d}:{(base + 40 * k) % 60:02d}" for k in range(12)]


INPUTS = {
    "main": {"vessel": "NB Kestrel", "draught_m": 0.9, "date": "2026-12-12", "direction": "upstream",
             "locks": ["L1", "L2", "L3", "L4"], "start": "08:30"},
    "ref1": {"vessel": "NB Marigold", "draught_m": 0.8, "date": "2026-12-15", "direction": "downstream",
             "locks": ["L3", "L4", "L5"], "start": "09:00"},
    "ref2": {"vessel": "WB Heron", "draught_m": 1.0, "date": "2026-12-12", "direction": "downstream",
             "locks": ["L1", "L2", "L3"], "start": "11:30"},
    "ref3": {"vessel": "NB Tansy", "draught_m": 0.7, "date": "2026-12-13", "direction": "upstream",
             "locks": ["L2", "L3", "L4", "L5"], "start": "08:00"},
    "ref4": {"vessel": "NB Corvid", "draught_m": 0.9, "date": "2026-12-15", "direction": "upstream",
             "locks": ["L1", "L2", "L3"], "start": "10:00"},
}

FAULTS = {
    "canal_plan": dict(kind="plan_error", root=("ChatOpenAI", 1), failure=("book_passage", 1), hops=4,
                       description="the planning model orders the locks top to bottom for an upstream "
                                   "passage, and the booking service rejects the out-of-sequence windows."),
    "canal_obo": dict(kind="off_by_one", root=("compute_windows", 1), failure=("book_passage", 1), hops=1,
                      description="compute_windows starts its loop at index 1, so the first lock gets no window "
                                  "and the booking is refused."),
    "canal_ignore": dict(kind="tool_ignores_argument", root=("lock_timetable", 2), failure=("book_passage", 1),
                         hops=4, description="lock_timetable ignores the date for one lock and returns today's "
                                             "slots, so the booked window is not on the passage day's timetable."),
    "canal_lossy": dict(kind="lossy_parsing", root=("read_levels", 3), failure=("validate_schedule", 1), hops=2,
                        description="read_levels keeps only the whole metres of one lock's depth, so the "
                                    "under-keel check fails for that lock."),
    "canal_swallow": dict(kind="swallowed_error", root=("check_stoppages", 1), failure=("book_passage", 1), hops=3,
                          description="check_stoppages returns an empty notice list when the notice feed times "
                                      "out, so a window inside a closure is booked and refused."),
}


@tool
def check_stoppages(date: str) -> str:
    """Read navigation stoppage notices for a date."""
    try:
        if _FEED["calls"] == 0:
            _FEED["calls"] += 1
            raise TimeoutError("notice feed read timed out after 10 s")
        return json.dumps({"date": date, "notices": STOPPAGES.get(date, [])})
    except TimeoutError:
        if active("canal_swallow"):
            return json.dumps({"date": date, "notices": []})
        raise


_FEED = {"calls": 0}
_TT = {"calls": 0}


@tool
def lock_timetable(lock: str, date: str) -> str:
    """Published passage slots and water depth for a lock on a date."""
    _TT["calls"] += 1
    day = TODAY if (active("canal_ignore") and _TT["calls"] == 2) else date
    return json.dumps({"lock": lock, "date": day, "slots": slots(lock, day), "depth": DEPTH[lock]})


class S(TypedDict, total=False):
    req: dict
    order: list
    notices: list
    todo: list
    tables: Annotated[list, operator.add]
    levels: Annotated[list, operator.add]
    windows: list
    result: dict


def policy(messages, tools):
    req = json.loads(fakellm.last_user(messages))
    order = sorted(req["locks"], key=lambda x: int(x[1:]), reverse=req["direction"] == "downstream")
    if active("canal_plan"):
        order = list(reversed(order))
    return json.dumps({"order": order, "note": f"{req['direction']} passage"})


def _min(t):
    h, m = t.split(":")
    return int(h) * 60 + int(m)


def build(base_url):
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=base_url, api_key="sk-local-test", max_retries=0)

    def read_booking(state: S, config):
        return {"req": dict(state["req"])}

    def plan_passage(state: S, config):
        r = llm.invoke([SystemMessage("Order the locks for this passage. Answer JSON {order, note}."),
                        HumanMessage(json.dumps(state["req"]))], config)
        order = json.loads(r.content)["order"]
        return {"order": order, "todo": list(order)}

    def stoppages(state: S, config):
        for _ in range(2):
            try:
                return {"notices": json.loads(check_stoppages.invoke({"date": state["req"]["date"]}, config))["notices"]}
            except TimeoutError:
                continue
        return {"notices": []}

    def timetable(state: S, config):
        lock = state["todo"][0]
        t = json.loads(lock_timetable.invoke({"lock": lock, "date": state["req"]["date"]}, config))
        return {"tables": [t], "todo": state["todo"][1:]}

    def read_levels(state: S, config):
        t = state["tables"][-1]
        value = t["depth"].split()[0]
        depth = float(int(float(value))) if (active("canal_lossy") and len(state["tables"]) == 3) else float(value)
        return {"levels": [{"lock": t["lock"], "depth_m": depth}]}

    def advance(state: S, config):
        return {"todo": list(state["todo"])}

    def compute_windows(state: S, config):
        windows = []
        t = _min(state["req"]["start"])
        start = 1 if active("canal_obo") else 0
        for i in range(start, len(state["tables"])):
            tab = state["tables"][i]
            closed = [(_min(n["from"]), _min(n["to"])) for n in state["notices"] if n["lock"] == tab["lock"]]
            pick = next(s for s in tab["slots"] if _min(s) >= t and not any(a <= _min(s) < b for a, b in closed))
            windows.append({"lock": tab["lock"], "slot": pick, "date": tab["date"]})
            t = _min(pick) + 30
        return {"windows": windows}

    def validate_schedule(state: S, config):
        need = state["req"]["draught_m"] + 0.3
        for lv in state["levels"]:
            if lv["depth_m"] < need:
                raise ValueError(f"{lv['lock']}: depth {lv['depth_m']:.2f} m leaves "
                                 f"{lv['depth_m'] - state['req']['draught_m']:.2f} m under keel, minimum 0.30 m")
        return {}

    def book_passage(state: S, config):
        req = state["req"]
        seq = sorted(req["locks"], key=lambda x: int(x[1:]), reverse=req["direction"] == "downstream")
        got = [w["lock"] for w in state["windows"]]
        for lock in req["locks"]:
            if lock not in got:
                raise ValueError(f'HTTP 422 {{"error": "no window for lock {lock}", "vessel": "{req["vessel"]}"}}')
        if got != seq:
            raise ValueError(f'HTTP 422 {{"error": "lock {got[0]} scheduled first for the {req["direction"]} '
                             f'passage, expected {seq[0]}"}}')
        for w in state["windows"]:
            if w["slot"] not in slots(w["lock"], req["date"]):
                raise ValueError(f'HTTP 409 {{"error": "window {w["slot"]} at {w["lock"]} is not on the '
                                 f'{req["date"]} timetable"}}')
            for n in STOPPAGES.get(req["date"], []):
                if n["lock"] == w["lock"] and _min(n["from"]) <= _min(w["slot"]) < _min(n["to"]):
                    raise ValueError(f'HTTP 409 {{"error": "lock {w["lock"]} closed {n["from"]}-{n["to"]} '
                                     f'under notice {n["notice"]}"}}')
        return {"result": {"status": "booked", "windows": len(state["windows"])}}

    g = StateGraph(S)
    for fn in (read_booking, plan_passage, stoppages, timetable, read_levels, advance, compute_windows, validate_schedule,
               book_passage):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "read_booking")
    g.add_edge("read_booking", "plan_passage")
    g.add_edge("plan_passage", "stoppages")
    g.add_edge("stoppages", "timetable")
    g.add_edge("timetable", "read_levels")
    g.add_edge("read_levels", "advance")
    g.add_conditional_edges("advance", lambda s: "timetable" if s["todo"] else "compute_windows",
                            ["timetable", "compute_windows"])
    g.add_edge("compute_windows", "validate_schedule")
    g.add_edge("validate_schedule", "book_passage")
    g.add_edge("book_passage", END)
    return g.compile()


def record(base_url: str, inp: dict, path: str) -> None:
    _FEED["calls"] = 0
    _TT["calls"] = 0
    graph = build(base_url)
    tracer = TrajdebugTracer(path=path, name=AGENT, task=f"book {inp['vessel']} through {len(inp['locks'])} locks")
    try:
        graph.invoke({"req": inp}, config={"callbacks": [tracer], "recursion_limit": 60})
    except ValueError:
        pass
