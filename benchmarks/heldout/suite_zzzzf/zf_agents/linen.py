"""linen-route: a commercial laundry's daily van route for restaurant and hotel accounts (LangGraph, JSONL).

A LangGraph StateGraph: intake, the route's accounts (tool), their contract pars (tool per account, with an
archive fallback), a planner model that calls stock tools in parallel through a ToolNode and then writes a
text route sheet, a route-sheet parser, delivery windows (tool per stop), a load computation with a
conditional edge choosing one or two trips, loading-dock booking and the customer confirmation tool.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from ._common import Env, last_user, system_text, tool_results

NAME = "linen-route"
ROUTE = "langgraph"
DOMAIN = "commercial laundry: restaurant and hotel linen van route"
SHAPE = "StateGraph: intake, accounts tool, per-account contract tool with archive fallback, planner LLM + ToolNode (parallel stock calls) loop, text route-sheet parser, per-stop window tool, load node + conditional edge (one/two trips), dock booking tool, confirmation tool"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


PER_BAG = {"napkins": 100, "tablecloths": 20, "aprons": 25, "towels": 40}
VAN_BAGS = {"V1": 60, "V2": 60, "V3": 45}

ACCOUNTS: dict[str, dict[str, Any]] = {
    "ACC-118": {"name": "Bistro Nord", "par": {"napkins": 600, "tablecloths": 80, "aprons": 30},
                "windows": {"weekday": "06:30-10:00", "Sat": "06:30-10:00"}},
    "ACC-204": {"name": "Quay Hotel", "par": {"napkins": 900, "tablecloths": 120, "towels": 400},
                "windows": {"weekday": "06:00-11:00", "Sat": "06:00-11:00"}},
    "ACC-233": {"name": "Harbour Grill", "par": {"napkins": 500, "tablecloths": 60, "aprons": 40},
                "windows": {"weekday": "07:00-10:30", "Sat": "07:00-10:30"}},
    "ACC-240": {"name": "Saltbox Cafe", "par": {"napkins": 300, "aprons": 20},
                "windows": {"weekday": "06:30-09:30", "Sat": "07:30-09:30"}},
    "ACC-301": {"name": "Casa Lumi", "par": {"napkins": 500, "tablecloths": 70, "aprons": 25},
                "windows": {"weekday": "07:00-11:00", "Sat": "07:00-11:00"}},
    "ACC-312": {"name": "Pane e Vino", "par": {"napkins": 400, "tablecloths": 60, "aprons": 20},
                "windows": {"weekday": "07:00-10:30", "Sat": "10:00-12:00"}},
    "ACC-318": {"name": "The Cellar Door", "par": {"napkins": 350, "tablecloths": 50},
                "windows": {"weekday": "06:30-10:00", "Sat": "06:30-10:00"}},
    "ACC-305": {"name": "Riverside Inn", "par": {"napkins": 700, "tablecloths": 90, "towels": 300},
                "windows": {"weekday": "06:00-11:00", "Sat": "06:00-11:00"}},
    "ACC-311": {"name": "Marina Bar", "par": {"napkins": 400, "aprons": 30},
                "windows": {"weekday": "07:00-11:00", "Sat": "07:00-11:00"}},
    "ACC-322": {"name": "Tide & Thyme", "par": {"napkins": 450, "tablecloths": 60, "aprons": 25},
                "windows": {"weekday": "06:30-10:30", "Sat": "06:30-10:30"}},
    "ACC-402": {"name": "Platform 9 Diner", "par": {"napkins": 2000, "aprons": 40},
                "windows": {"weekday": "06:00-10:00", "Sat": "06:00-10:00"}},
    "ACC-407": {"name": "Signal Box Bar", "par": {"napkins": 300, "aprons": 20},
                "windows": {"weekday": "07:00-11:00", "Sat": "07:00-11:00"}},
    "ACC-415": {"name": "Grand Central Hotel", "par": {"napkins": 1500, "tablecloths": 160, "towels": 600},
                "windows": {"weekday": "06:00-11:00", "Sat": "06:00-11:00"}},
    "ACC-502": {"name": "Moorland Tea Rooms", "par": {"napkins": 300, "tablecloths": 40},
                "windows": {"weekday": "07:00-10:30", "Sat": "07:00-10:30"}},
    "ACC-506": {"name": "Upland Lodge", "par": {"napkins": 800, "tablecloths": 100, "towels": 500},
                "windows": {"weekday": "06:00-10:30", "Sat": "06:00-10:30"}},
    "ACC-511": {"name": "The Drovers Arms", "par": {"napkins": 500, "tablecloths": 60, "aprons": 30},
                "windows": {"weekday": "06:30-10:00", "Sat": "06:30-10:00"}},
}

ROUTES = {
    "R3 Harbourside": ["ACC-118", "ACC-204", "ACC-233", "ACC-240"],
    "R1 Old Town": ["ACC-301", "ACC-312", "ACC-318"],
    "R5 Riverside": ["ACC-305", "ACC-311", "ACC-322"],
    "R2 Station Quarter": ["ACC-402", "ACC-407", "ACC-415"],
    "R4 Uplands": ["ACC-502", "ACC-506", "ACC-511"],
}

RENEWING = {"ACC-311"}  # contract being renewed: the contracts service times out on it

# clean stock on the shelf this morning, and soiled bags waiting for pickup
STOCK: dict[str, dict[str, Any]] = {
    "ACC-118": {"clean": {"napkins": 150, "tablecloths": 20, "aprons": 10}, "soiled_bags": 14},
    "ACC-204": {"clean": {"napkins": 500, "tablecloths": 30, "towels": 160}, "soiled_bags": 0},
    "ACC-233": {"clean": {"napkins": 200, "tablecloths": 25, "aprons": 15}, "soiled_bags": 9},
    "ACC-240": {"clean": {"napkins": 100, "aprons": 5}, "soiled_bags": 4},
    "ACC-301": {"clean": {"napkins": 150, "tablecloths": 30, "aprons": 5}, "soiled_bags": 8},
    "ACC-312": {"clean": {"napkins": 100, "tablecloths": 20, "aprons": 5}, "soiled_bags": 7},
    "ACC-318": {"clean": {"napkins": 150, "tablecloths": 10}, "soiled_bags": 5},
    "ACC-305": {"clean": {"napkins": 300, "tablecloths": 40, "towels": 100}, "soiled_bags": 11},
    "ACC-311": {"clean": {"napkins": 40, "aprons": 10}, "soiled_bags": 3},
    "ACC-322": {"clean": {"napkins": 150, "tablecloths": 20, "aprons": 10}, "soiled_bags": 6},
    "ACC-402": {"clean": {"napkins": 700, "aprons": 15}, "soiled_bags": 10},
    "ACC-407": {"clean": {"napkins": 120, "aprons": 8}, "soiled_bags": 3},
    "ACC-415": {"clean": {"napkins": 600, "tablecloths": 80, "towels": 400}, "soiled_bags": 12},
    "ACC-502": {"clean": {"napkins": 100, "tablecloths": 10}, "soiled_bags": 4},
    "ACC-506": {"clean": {"napkins": 200, "tablecloths": 20, "towels": 100}, "soiled_bags": 16},
    "ACC-511": {"clean": {"napkins": 100, "tablecloths": 20, "aprons": 5}, "soiled_bags": 15},
}

INPUTS: list[dict[str, Any]] = [
    {"request_id": "RT-0611-R3", "route": "R3 Harbourside", "date": "2025-06-11", "day": "Wed", "van": "V2"},
    {"request_id": "RT-0614-R1", "route": "R1 Old Town", "date": "2025-06-14", "day": "Sat", "van": "V1"},
    {"request_id": "RT-0612-R5", "route": "R5 Riverside", "date": "2025-06-12", "day": "Thu", "van": "V3"},
    {"request_id": "RT-0610-R2", "route": "R2 Station Quarter", "date": "2025-06-10", "day": "Tue", "van": "V1"},
    {"request_id": "RT-0613-R4", "route": "R4 Uplands", "date": "2025-06-13", "day": "Fri", "van": "V2"},
]


def _mins(t: str) -> int:
    h, m = t.split(":")
    return int(h) * 60 + int(m)


def _hhmm(m: int) -> str:
    return f"{m // 60:02d}:{m % 60:02d}"


# --- tools ----------------------------------------------------------------------------------------------


@tool
def route_accounts(route: str, day: str) -> list:
    """The accounts served on a route, with their names."""
    return [{"account": a, "name": ACCOUNTS[a]["name"]} for a in ROUTES[route]]


@tool
def contract_pars(account: str) -> dict:
    """The par levels in an account's linen contract."""
    if account in RENEWING:
        raise TimeoutError(f"contracts service: read timed out after 5.0 s ({account})")
    return {"account": account, "par": dict(ACCOUNTS[account]["par"]), "source": "contracts"}


@tool
def contract_archive(account: str) -> dict:
    """The par levels of an account's last signed contract (archive copy)."""
    return {"account": account, "par": dict(ACCOUNTS[account]["par"]), "source": "archive 2024-11"}


@tool
def soiled_counts(account: str, day: str) -> dict:
    """Soiled linen bags waiting for pickup at an account."""
    return {"account": account, "day": day, "soiled_bags": STOCK[account]["soiled_bags"]}


@tool
def clean_stock(account: str) -> dict:
    """Clean linen on the account's shelf this morning, by item."""
    return {"account": account, "clean": dict(STOCK[account]["clean"])}


@tool
def delivery_window(account: str, day: str) -> dict:
    """The delivery window of an account on a given day."""
    windows = ACCOUNTS[account]["windows"]
    key = "Sat" if day == "Sat" else "weekday"
    if _on("window_day"):
        key = "weekday"
    return {"account": account, "day": day, "window": windows[key]}


@tool
def book_loading_dock(van: str, depart: str, trip: int) -> dict:
    """Book a loading-dock slot at the laundry for a van's departure."""
    return {"van": van, "trip": trip, "dock": "D2" if trip == 1 else "D1", "slot": depart, "status": "booked"}


@tool
def confirm_deliveries(route: str, day: str, van: str, stops: list) -> dict:
    """Send the day's route to the customer portal; the portal refuses a route it cannot honour."""
    key = "Sat" if day == "Sat" else "weekday"
    by_acct = {s["account"]: s for s in stops}
    for acct in ROUTES[route]:
        a, st = ACCOUNTS[acct], STOCK[acct]
        stop = by_acct.get(acct)
        if st["soiled_bags"] and (stop is None or stop["pickup_bags"] < st["soiled_bags"]):
            raise ValueError(f"{acct} {a['name']}: {st['soiled_bags']} soiled bags waiting and no pickup on {route}")
        for item, par in a["par"].items():
            have = st["clean"].get(item, 0) + (stop or {}).get("deliver", {}).get(item, 0)
            if have < 0.9 * par:
                got = (stop or {}).get("deliver", {}).get(item, 0)
                raise ValueError(f"{acct} {a['name']}: {item} {st['clean'].get(item, 0)} clean + {got} delivered "
                                 f"is under the par of {par:,}")
        if stop is not None:
            lo, hi = a["windows"][key].split("-")
            if not _mins(lo) <= _mins(stop["eta"]) <= _mins(hi):
                raise ValueError(f"{acct} {a['name']} takes deliveries {lo}-{hi} on {day}: ETA {stop['eta']} refused")
    return {"route": route, "stops": len(stops), "status": "confirmed"}


PLANNER_TOOLS = [soiled_counts, clean_stock]


# --- the graph ------------------------------------------------------------------------------------------


class State(MessagesState):
    request: dict
    accounts: list
    pars: dict
    sheet: list
    windows: dict
    loads: dict
    trips: list
    result: dict


def intake(state: State) -> dict:
    req = json.loads(state["messages"][0].content)
    return {"request": req}


def load_accounts(state: State) -> dict:
    req = state["request"]
    return {"accounts": route_accounts.invoke({"route": req["route"], "day": req["day"]})}


def load_pars(state: State) -> dict:
    pars = {}
    for a in state["accounts"]:
        try:
            got = contract_pars.invoke({"account": a["account"]})
        except TimeoutError:
            if _on("pars_timeout"):
                got = {"account": a["account"], "par": {}, "source": "contracts"}
            else:
                got = contract_archive.invoke({"account": a["account"]})
        pars[a["account"]] = got["par"]
    return {"pars": pars}


PLANNER_PROMPT = (
    "You plan a linen van route. First call soiled_counts and clean_stock for every account (all at once). "
    "Then write the route sheet, one line per stop: 'STOP n | ACCOUNT NAME | pickup B bags | deliver ITEM QTY; "
    "ITEM QTY'. Deliver each item up to its par."
)


def _planner_node(llm: Any):
    def planner(state: State) -> dict:
        msgs = list(state["messages"])
        if len(msgs) == 1:
            req = state["request"]
            msgs = [
                SystemMessage(PLANNER_PROMPT),
                HumanMessage(f"Route: {req['route']} on {req['day']} {req['date']}\nAccounts and pars: "
                             + json.dumps([{**a, "par": state["pars"][a["account"]]} for a in state["accounts"]])),
            ]
            return {"messages": msgs[1:] + [llm.invoke(msgs)]}
        return {"messages": [llm.invoke([SystemMessage(PLANNER_PROMPT)] + msgs[1:])]}

    return planner


def after_planner(state: State) -> str:
    last = state["messages"][-1]
    return "tools" if getattr(last, "tool_calls", None) else "parse_sheet"


def _parse_sheet_text(text: str) -> list:
    qty = r"([a-z]+) (\d+)" if _on("qty_pattern") else r"([a-z]+) ([\d,]+)"
    stops = []
    for line in text.splitlines():
        if not line.startswith("STOP"):
            continue
        parts = [p.strip() for p in line.split("|")]
        acct = parts[1].split()[0]
        pickup = int(re.search(r"\d+", parts[2]).group(0))
        deliver = {}
        if len(parts) > 3 and parts[3].startswith("deliver"):
            for chunk in parts[3].removeprefix("deliver").split(";"):
                m = re.search(qty, chunk.strip())
                if m:
                    deliver[m.group(1)] = int(m.group(2).replace(",", ""))
        stops.append({"account": acct, "pickup_bags": pickup, "deliver": deliver})
    return stops


route_sheet_parser = RunnableLambda(_parse_sheet_text).with_config(run_name="RouteSheetParser")


def parse_sheet(state: State) -> dict:
    return {"sheet": route_sheet_parser.invoke(state["messages"][-1].content)}


def windows(state: State) -> dict:
    day = state["request"]["day"]
    out = {}
    for stop in state["sheet"]:
        out[stop["account"]] = delivery_window.invoke({"account": stop["account"], "day": day})["window"]
    return {"windows": out}


def compute_loads(state: State) -> dict:
    out_bags = sum(math.ceil(q / PER_BAG[i]) for s in state["sheet"] for i, q in s["deliver"].items())
    in_bags = sum(s["pickup_bags"] for s in state["sheet"])
    return {"loads": {"clean_out": out_bags, "soiled_in": in_bags, "van_bags": VAN_BAGS[state["request"]["van"]]}}


def choose_trips(state: State) -> str:
    loads = state["loads"]
    peak = loads["clean_out"] + loads["soiled_in"] if _on("trip_rule") else max(loads["clean_out"], loads["soiled_in"])
    return "two_trips" if peak > loads["van_bags"] else "one_trip"


def _sequence(stops: list, wins: dict, depart: str) -> list:
    t = _mins(depart)
    out = []
    for s in sorted(stops, key=lambda s: (_mins(wins[s["account"]].split("-")[0]), s["account"])):
        t = max(t + 25, _mins(wins[s["account"]].split("-")[0]))
        out.append({**s, "eta": _hhmm(t)})
    return out


def one_trip(state: State) -> dict:
    return {"trips": [{"trip": 1, "depart": "06:30", "stops": _sequence(state["sheet"], state["windows"], "06:30")}]}


def two_trips(state: State) -> dict:
    ordered = sorted(state["sheet"], key=lambda s: _mins(state["windows"][s["account"]].split("-")[0]))
    half = (len(ordered) + 1) // 2
    return {"trips": [
        {"trip": 1, "depart": "06:30", "stops": _sequence(ordered[:half], state["windows"], "06:30")},
        {"trip": 2, "depart": "10:30", "stops": _sequence(ordered[half:], state["windows"], "10:30")},
    ]}


def book_dock(state: State) -> dict:
    van = state["request"]["van"]
    for t in state["trips"]:
        book_loading_dock.invoke({"van": van, "depart": t["depart"], "trip": t["trip"]})
    return {}


def confirm(state: State) -> dict:
    req = state["request"]
    stops = [s for t in state["trips"] for s in t["stops"]]
    return {"result": confirm_deliveries.invoke({"route": req["route"], "day": req["day"], "van": req["van"], "stops": stops})}


_graphs: dict[str, Any] = {}


def _graph(env: Env) -> Any:
    if env.base_url in _graphs:
        return _graphs[env.base_url]
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(base_url=env.base_url, api_key="not-needed", model=env.model, max_retries=0, temperature=0)
    g = StateGraph(State)
    g.add_node("intake", intake)
    g.add_node("load_accounts", load_accounts)
    g.add_node("load_pars", load_pars)
    g.add_node("planner", _planner_node(llm.bind_tools(PLANNER_TOOLS)))
    g.add_node("tools", ToolNode(PLANNER_TOOLS))
    g.add_node("parse_sheet", parse_sheet)
    g.add_node("windows", windows)
    g.add_node("compute_loads", compute_loads)
    g.add_node("one_trip", one_trip)
    g.add_node("two_trips", two_trips)
    g.add_node("book_dock", book_dock)
    g.add_node("confirm", confirm)
    g.add_edge(START, "intake")
    g.add_edge("intake", "load_accounts")
    g.add_edge("load_accounts", "load_pars")
    g.add_edge("load_pars", "planner")
    g.add_conditional_edges("planner", after_planner, {"tools": "tools", "parse_sheet": "parse_sheet"})
    g.add_edge("tools", "planner")
    g.add_edge("parse_sheet", "windows")
    g.add_edge("windows", "compute_loads")
    g.add_conditional_edges("compute_loads", choose_trips, {"one_trip": "one_trip", "two_trips": "two_trips"})
    g.add_edge("one_trip", "book_dock")
    g.add_edge("two_trips", "book_dock")
    g.add_edge("book_dock", "confirm")
    g.add_edge("confirm", END)
    _graphs[env.base_url] = g.compile()
    return _graphs[env.base_url]


def run(inp: dict, out: Path, env: Env) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=str(out), name=NAME, task=f"linen route {inp['route']} {inp['date']}")
    _graph(env).invoke({"messages": [HumanMessage(json.dumps(inp))]},
                       config={"callbacks": [tracer], "configurable": {"thread_id": inp["request_id"]}})


# --- the model ------------------------------------------------------------------------------------------


def _fmt(n: int) -> str:
    return f"{n:,}"


def brain(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    system = system_text(request)
    if system.startswith("You plan a linen van route"):
        user = last_user(request)
        accounts = json.loads(user.split("Accounts and pars: ", 1)[1])
        day = user.split(" on ", 1)[1].split()[0]
        results = tool_results(request)
        if not results:
            calls = []
            for a in accounts:
                calls.append(tool_call("soiled_counts", {"account": a["account"], "day": day}))
                calls.append(tool_call("clean_stock", {"account": a["account"]}))
            return Reply(tool_calls=tuple(calls))
        soiled: dict[str, int] = {}
        clean: dict[str, dict] = {}
        for name, text in results:
            v = json.loads(text)
            if name == "soiled_counts":
                soiled[v["account"]] = v["soiled_bags"]
            elif name == "clean_stock":
                clean[v["account"]] = v["clean"]
        lines = []
        for a in accounts:
            acct = a["account"]
            if _on("pickup_only_plan") and soiled[acct] == 0:
                continue
            deliver = []
            for item, par in a["par"].items():
                qty = max(0, par - clean[acct].get(item, 0))
                if qty:
                    deliver.append(f"{item} {_fmt(qty)}")
            line = f"STOP {len(lines) + 1} | {acct} {a['name']} | pickup {soiled[acct]} bags"
            if deliver:
                line += " | deliver " + "; ".join(deliver)
            lines.append(line)
        return "Route sheet:\n" + "\n".join(lines) + "\nAll accounts covered."
    return "I plan linen routes only."
