"""Water meter reading routes (LangGraph): gather due meters, pick a reading mode, order the stops,
arrange keyholder access in a sub-graph, estimate the walk and submit the route to dispatch."""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, user_json
from .kit import active

AGENT = "meter_routes"
ROUTE = "langgraph"
DOMAIN = "water meter reading routes"
SYSTEM = "[meter-routes] You plan meter reading rounds for a water utility. Reply with JSON only."


def _meters(prefix: str, n: int, manual: int, keyholders: tuple[int, ...]) -> list[dict]:
    return [{"id": f"{prefix}-{101 + i}", "street": f"{['Elm', 'Quay', 'Mill', 'Park'][i % 4]} St {2 + 3 * i}",
             "x": (i * 37) % 11, "y": (i * 53) % 7, "type": "manual" if i < manual else "AMR",
             "access": "keyholder" if i in keyholders else "open"} for i in range(n)]


INPUTS = {
    "north": {"district": "D-North", "date": "2027-03-02", "reader": "R-14", "shift_min": 420,
              "meters": _meters("MN", 11, 9, (2, 7))},
    "harbour": {"district": "D-Harbour", "date": "2027-03-03", "reader": "R-09", "shift_min": 420,
                "meters": _meters("MH", 9, 9, (4,))},
    "east": {"district": "D-East", "date": "2027-03-02", "reader": "R-21", "shift_min": 420,
             "meters": _meters("ME", 7, 7, (1,))},
    "west": {"district": "D-West", "date": "2027-03-04", "reader": "R-03", "shift_min": 420,
             "meters": _meters("MW", 10, 2, (5, 6))},
    "south": {"district": "D-South", "date": "2027-03-05", "reader": "R-17", "shift_min": 420,
              "meters": _meters("MS", 8, 8, ())},
    "mills": {"district": "D-Mills", "date": "2027-03-05", "reader": "R-11", "shift_min": 420,
              "meters": _meters("MM", 12, 3, (0,))},
}
REFS = ["east", "west", "south", "mills"]
PAGE = 8
CURRENT = {"district": None}

CASES = [
    Case("mr_trunc", AGENT, "truncated_result", "list_due_meters", 1, "submit_route",
         "list_due_meters returned its first page only and the planner never asked for the rest", "north"),
    Case("mr_obo", AGENT, "off_by_one", "parse_route", 1, "submit_route",
         "parse_route started its loop at the second stop, dropping the first meter", "north"),
    Case("mr_mode", AGENT, "wrong_routing", "choose_mode", 1, "submit_route",
         "the mode router sent a district of manual meters to the drive-by radio round", "north"),
    Case("mr_args", AGENT, "wrong_tool_args", "travel_matrix", 1, "submit_route",
         "travel_matrix was called with mode drive for a walking round, so the duration is far too low",
         "harbour"),
    Case("mr_fmt", AGENT, "format_drift", "ChatOpenAI", 1, "submit_route",
         "the planner answered stops as objects instead of meter ids and parsing kept none of the ids", "harbour"),
]


class DispatchError(Exception):
    pass


def policy(body: dict) -> str:
    ask = user_json(body)
    if ask.get("ask") == "order":
        stops = sorted(ask["meters"], key=lambda m: (m["x"], m["y"]))
        if active("mr_fmt"):
            return json.dumps({"route": [{"meter": m["id"], "seq": i + 1} for i, m in enumerate(stops)]})
        return json.dumps({"route": [m["id"] for m in stops], "mode": ask["mode"]})
    if ask.get("ask") == "key_note":
        return json.dumps({"message": f"Reader {ask['reader']} will call for the key to {ask['meter']} "
                                      f"on {ask['date']} between 09:00 and 12:00."})
    return "{}"


@tool
def list_due_meters(district: str, date: str, page: int = 1) -> dict:
    """Meters due for reading in a district on a date (paged)."""
    meters = next(v["meters"] for v in INPUTS.values() if v["district"] == district)
    start = (page - 1) * PAGE
    chunk = meters[start:start + PAGE]
    return {"district": district, "page": page, "meters": chunk, "has_more": start + PAGE < len(meters)}


@tool
def travel_matrix(stops: list, mode: str) -> dict:
    """Minutes to cover the stops in order, walking or driving."""
    per_leg = {"walk": 34, "drive": 12, "radio": 4}[mode]
    return {"mode": mode, "legs": max(len(stops) - 1, 0), "minutes": per_leg * max(len(stops) - 1, 0) + 6 * len(stops)}


@tool
def request_key(meter: str, street: str) -> dict:
    """Ask the keyholder register for access to a meter."""
    return {"meter": meter, "keyholder": f"KH-{sum(map(ord, street)) % 900 + 100}", "granted": True}


@tool
def submit_route(route: dict) -> dict:
    """Submit the day's round to the dispatch system."""
    district = next(v for v in INPUTS.values() if v["district"] == route["district"])
    due = [m["id"] for m in district["meters"]]
    stops = [s for s in route["stops"] if s]
    if len(stops) < len(route["stops"]):
        raise DispatchError(f"HTTP 422 dispatch: {len(route['stops']) - len(stops)} stops carry no meter id")
    missing = [m for m in due if m not in stops]
    if missing:
        raise DispatchError(f"HTTP 422 dispatch: route covers {len(stops)} of {len(due)} meters due in "
                            f"{route['district']}; missing {', '.join(missing)}")
    manual = [m["id"] for m in district["meters"] if m["type"] == "manual"]
    if route["mode"] == "radio" and manual:
        raise DispatchError(f"HTTP 422 dispatch: {len(manual)} manual meters cannot be read on a drive-by radio round")
    legs = len(stops) - 1
    expected = (34 if route["mode"] == "walk" else 4) * legs + 6 * len(stops)
    if abs(route["minutes"] - expected) > 0.15 * expected:
        raise DispatchError(f"HTTP 422 dispatch: declared duration {route['minutes']} min differs from the "
                            f"dispatch estimate of {expected} min for {route['district']}")
    return {"round": f"RD-{route['district'][2:].upper()}-{route['date'][-2:]}", "stops": len(stops)}


class RouteState(TypedDict, total=False):
    request: dict
    meters: list
    mode: str
    plan_text: str
    stops: list
    keys: Annotated[list, operator.add]
    minutes: int
    receipt: dict


class KeyState(TypedDict, total=False):
    request: dict
    pending: list
    keys: Annotated[list, operator.add]


def build(llm: ChatOpenAI) -> Any:
    def fetch_work_orders(state: RouteState) -> dict:
        req = state["request"]
        meters, page = [], 1
        while True:
            res = list_due_meters.invoke({"district": req["district"], "date": req["date"], "page": page})
            meters += res["meters"]
            if not res["has_more"] or active("mr_trunc"):
                break
            page += 1
        return {"meters": meters}

    def choose_mode(state: RouteState) -> str:
        manual = sum(m["type"] == "manual" for m in state["meters"])
        if active("mr_mode"):
            return "radio" if manual < len(state["meters"]) else "walk"
        return "radio" if manual == 0 else "walk"

    def set_walk(state: RouteState) -> dict:
        return {"mode": "walk"}

    def set_radio(state: RouteState) -> dict:
        return {"mode": "radio"}

    def classify(state: RouteState) -> dict:
        return {}

    def plan_route(state: RouteState) -> dict:
        ask = {"ask": "order", "mode": state["mode"], "meters": state["meters"]}
        msg = llm.invoke([SystemMessage(SYSTEM), HumanMessage(json.dumps(ask))])
        return {"plan_text": msg.content}

    def parse_route(state: RouteState) -> dict:
        data = json.loads(state["plan_text"])
        raw = data["route"]
        first = 1 if active("mr_obo") else 0
        stops = []
        for i in range(first, len(raw)):
            item = raw[i]
            stops.append(item if isinstance(item, str) else item.get("id"))
        return {"stops": stops}

    def key_next(state: KeyState) -> dict:
        meter = state["pending"][0]
        grant = request_key.invoke({"meter": meter["id"], "street": meter["street"]})
        ask = {"ask": "key_note", "reader": state["request"]["reader"], "meter": meter["id"],
               "date": state["request"]["date"]}
        note = llm.invoke([SystemMessage(SYSTEM), HumanMessage(json.dumps(ask))])
        return {"pending": state["pending"][1:], "keys": [{**grant, "note": json.loads(note.content)["message"]}]}

    def more_keys(state: KeyState) -> str:
        return "key_next" if state["pending"] else END

    kg = StateGraph(KeyState)
    kg.add_node("key_next", key_next)
    kg.add_conditional_edges(START, more_keys, {"key_next": "key_next", END: END})
    kg.add_conditional_edges("key_next", more_keys, {"key_next": "key_next", END: END})
    keys_agent = kg.compile()

    def arrange_access(state: RouteState) -> dict:
        wanted = [m for m in state["meters"] if m["access"] == "keyholder" and m["id"] in state["stops"]]
        out = keys_agent.invoke({"request": state["request"], "pending": wanted, "keys": []})
        return {"keys": out["keys"]}

    def estimate_time(state: RouteState) -> dict:
        mode = state["mode"]
        if mode == "walk" and active("mr_args"):
            mode = "drive"
        res = travel_matrix.invoke({"stops": state["stops"], "mode": mode})
        return {"minutes": res["minutes"]}

    def submit(state: RouteState) -> dict:
        req = state["request"]
        route = {"district": req["district"], "date": req["date"], "reader": req["reader"], "mode": state["mode"],
                 "stops": state["stops"], "minutes": state["minutes"], "keys": [k["meter"] for k in state["keys"]]}
        return {"receipt": submit_route.invoke({"route": route})}

    g = StateGraph(RouteState)
    for name, fn in [("fetch_work_orders", fetch_work_orders), ("classify", classify), ("set_walk", set_walk),
                     ("set_radio", set_radio), ("plan_route", plan_route), ("parse_route", parse_route),
                     ("arrange_access", arrange_access), ("estimate_time", estimate_time), ("submit", submit)]:
        g.add_node(name, fn)
    g.add_edge(START, "fetch_work_orders")
    g.add_edge("fetch_work_orders", "classify")
    g.add_conditional_edges("classify", choose_mode, {"walk": "set_walk", "radio": "set_radio"})
    g.add_edge("set_walk", "plan_route")
    g.add_edge("set_radio", "plan_route")
    g.add_edge("plan_route", "parse_route")
    g.add_edge("parse_route", "arrange_access")
    g.add_edge("arrange_access", "estimate_time")
    g.add_edge("estimate_time", "submit")
    g.add_edge("submit", END)
    return g.compile()


def record(key: str, out: Path, base_url: str) -> None:
    llm = ChatOpenAI(base_url=base_url, api_key="local", model="desk-model", max_retries=0, temperature=0)
    graph = build(llm)
    req = {k: v for k, v in INPUTS[key].items() if k != "meters"}
    tracer = TrajdebugTracer(path=str(out), name="meter-route-planner", task=f"reading round {req['district']}")
    try:
        graph.invoke({"request": req, "keys": []}, config={"callbacks": [tracer]})
    except DispatchError:
        pass
