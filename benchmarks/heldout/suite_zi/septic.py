"""Septic tank pumping (langgraph route): locate the tank, read its history, estimate, route to a truck class, schedule, dispatch."""
from __future__ import annotations

import datetime as dt
import json
from typing import TypedDict

from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, last_user
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "septic-dispatch", "langgraph", "septic tank pumping", "jsonl"
SHAPE = "intake (llm + parse) -> tank register -> service history -> estimate (llm + litres) -> route_job (choose_truck_class) -> small truck | tanker -> dispatch (calendar, slot, dispatch)"

TANKS = {
    "14 Fern Lane": {"tank": "T-880", "capacity_gal": 1500, "register": "2026-05"},
    "2 Mill Road": {"tank": "T-412", "capacity_gal": 750, "register": "2026-02"},
    "77 Old Quarry Way": {"tank": "T-903", "capacity_gal": 1200, "register": "2026-07"},
    "9 Birch Close": {"tank": "T-220", "capacity_gal": 500, "register": "2025-11"},
    "31 Hollow Bend": {"tank": "T-655", "capacity_gal": 1000, "register": "2026-03"},
}
HISTORY = {
    "T-880": [{"date": "2026-06-02", "note": "routine pump-out"}, {"date": "2025-06-11", "note": "baffle repair pending"},
              {"date": "2024-05-30", "note": "routine pump-out"}],
    "T-412": [{"date": "2026-01-15", "note": "routine pump-out"}, {"date": "2025-01-20", "note": "routine pump-out"}],
    "T-903": [{"date": "2026-03-03", "note": "routine pump-out"}, {"date": "2025-09-19", "note": "riser lid replaced"},
              {"date": "2024-02-07", "note": "baffle repair pending"}],
    "T-220": [{"date": "2025-10-01", "note": "routine pump-out"}],
    "T-655": [{"date": "2026-04-12", "note": "routine pump-out"}, {"date": "2025-04-02", "note": "routine pump-out"}],
}
TRUCK_LITRES = {"small_truck": 4000, "tanker": 11000}
GAL_L = 3.785

INPUTS = {
    "fern": {"address": "14 Fern Lane", "requested": "2026-12-07", "pump_by": "2026-12-09"},
    "quarry": {"address": "77 Old Quarry Way", "requested": "2026-12-10", "pump_by": "2026-12-12"},
}
REFS = [
    {"address": "2 Mill Road", "requested": "2026-12-08", "pump_by": "2026-12-11"},
    {"address": "9 Birch Close", "requested": "2026-12-09", "pump_by": "2026-12-10"},
    {"address": "31 Hollow Bend", "requested": "2026-12-07", "pump_by": "2026-12-12"},
    {"address": "14 Fern Lane", "requested": "2026-12-14", "pump_by": "2026-12-18"},
]

CASES = [
    Case("septic_register", "stale_data", "fern", "lookup_tank_register", 1, "tool", "dispatch_crew", 1,
         "The tank register lookup serves a cached entry from before the tank was enlarged, so the job is sized for the old tank."),
    Case("septic_history", "truncated_result", "fern", "service_history", 1, "tool", "dispatch_crew", 1,
         "The service history comes back with only the latest visit, hiding an open baffle repair."),
    Case("septic_litres", "unit_error", "fern", "to_litres", 1, "other", "dispatch_crew", 1,
         "The volume conversion treats gallons as litres, so the job looks small enough for the small truck."),
    Case("septic_route", "wrong_routing", "quarry", "choose_truck_class", 1, "other", "dispatch_crew", 1,
         "The router sends a 4,500-litre job to the small-truck branch although the volume needs the tanker."),
    Case("septic_slot", "off_by_one", "quarry", "pick_slot", 1, "other", "dispatch_crew", 1,
         "The slot picker counts the pump-by date as exclusive plus one and picks a slot a day after it."),
]


def policy(req):
    system, user = last_user(req)
    data = json.loads(user)
    if system.startswith("You read pumping"):
        return json.dumps({"address": data["address"], "requested": data["requested"], "pump_by": data["pump_by"]})
    if system.startswith("You estimate"):
        return json.dumps({"pump_gal": data["capacity_gal"], "repair_crew": any("repair pending" in h["note"] for h in data["history"])})
    return "ok"


@tool
def lookup_tank_register(address: str) -> dict:
    """The county tank register entry for an address."""
    rec = dict(TANKS[address])
    if active("septic_register"):
        rec.update(capacity_gal=1000, register="2024-09")
    return rec


@tool
def service_history(tank: str, limit: int) -> list:
    """Service visits for a tank, newest first."""
    visits = HISTORY[tank][:limit]
    return visits[:1] if active("septic_history") else visits


@tool
def reserve_truck(truck_class: str, litres: float) -> dict:
    """Reserve a truck of a class."""
    return {"truck": {"small_truck": "V-2", "tanker": "V-9"}[truck_class], "class": truck_class, "tank_l": TRUCK_LITRES[truck_class]}


@tool
def crew_calendar(start: str, end: str) -> list:
    """Free crew days between two dates (inclusive)."""
    d0, d1 = dt.date.fromisoformat(start), dt.date.fromisoformat(end) + dt.timedelta(days=2)
    return [(d0 + dt.timedelta(days=k)).isoformat() for k in range((d1 - d0).days + 1)]


@tool
def dispatch_crew(job: dict) -> dict:
    """Dispatch a pumping crew; the county manifest rules are checked first."""
    reg = TANKS[job["address"]]
    need_l = round(reg["capacity_gal"] * GAL_L)
    errs = []
    if job["pump_gal"] < reg["capacity_gal"]:
        errs.append(f"manifest volume {job['pump_gal']} gal is below the registered capacity of {job['tank']} ({reg['capacity_gal']} gal)")
    if need_l > job["truck"]["tank_l"]:
        errs.append(f"truck {job['truck']['truck']} holds {job['truck']['tank_l']} L, the tank needs {need_l} L")
    if any("repair pending" in h["note"] for h in HISTORY[job["tank"]]) and not job["repair_crew"]:
        errs.append(f"tank {job['tank']} has an open baffle repair on record; a repair crew must be attached")
    if job["slot"] > job["pump_by"]:
        errs.append(f"slot {job['slot']} is after the pump-by date {job['pump_by']}")
    if errs:
        raise RuntimeError("HTTP 409 from county dispatch: " + "; ".join(errs))
    return {"dispatch": f"D-{job['tank'][2:]}-{job['slot'][-2:]}", "status": "scheduled"}


class S(TypedDict, total=False):
    request: dict
    job: dict
    tank: dict
    history: list
    estimate: dict
    route: str
    truck: dict
    result: dict


def build(llm):
    parse_job = RunnableLambda(lambda text: json.loads(text), name="parse_job")
    to_litres = RunnableLambda(lambda e: dict(e, pump_l=round(e["pump_gal"] * (1.0 if active("septic_litres") else GAL_L))), name="to_litres")

    def pick(args: dict) -> str:
        days = args["days"]
        pump_by = args["pump_by"]
        ok = [d for d in days if d <= pump_by and d >= args["requested"]]
        if active("septic_slot"):
            return days[days.index(ok[-1]) + 1]
        return ok[0] if len(ok) == 1 else ok[-1]
    pick_slot = RunnableLambda(pick, name="pick_slot")

    def intake(state: S, config) -> dict:
        msg = llm.invoke([("system", "You read pumping requests. Answer JSON."), ("user", json.dumps(state["request"], sort_keys=True))], config)
        return {"job": parse_job.invoke(msg.content, config)}

    def locate_tank(state: S, config) -> dict:
        return {"tank": lookup_tank_register.invoke({"address": state["job"]["address"]}, config)}

    def history(state: S, config) -> dict:
        return {"history": service_history.invoke({"tank": state["tank"]["tank"], "limit": 5}, config)}

    def estimate(state: S, config) -> dict:
        msg = llm.invoke([("system", "You estimate pump-out volumes. Answer JSON."),
                          ("user", json.dumps({"capacity_gal": state["tank"]["capacity_gal"], "history": state["history"]}, sort_keys=True))], config)
        return {"estimate": to_litres.invoke(json.loads(msg.content), config)}

    def choose(est: dict) -> str:
        route = "small_truck" if est["pump_l"] <= TRUCK_LITRES["small_truck"] else "tanker"
        return "small_truck" if active("septic_route") else route
    choose_truck_class = RunnableLambda(choose, name="choose_truck_class")

    def route_job(state: S, config) -> dict:
        return {"route": choose_truck_class.invoke(state["estimate"], config)}

    def small_truck(state: S, config) -> dict:
        return {"truck": reserve_truck.invoke({"truck_class": "small_truck", "litres": state["estimate"]["pump_l"]}, config)}

    def tanker(state: S, config) -> dict:
        return {"truck": reserve_truck.invoke({"truck_class": "tanker", "litres": state["estimate"]["pump_l"]}, config)}

    def dispatch(state: S, config) -> dict:
        j = state["job"]
        days = crew_calendar.invoke({"start": j["requested"], "end": j["pump_by"]}, config)
        slot = pick_slot.invoke({"days": days, "pump_by": j["pump_by"], "requested": j["requested"]}, config)
        job = {"address": j["address"], "tank": state["tank"]["tank"], "pump_gal": state["estimate"]["pump_gal"],
               "repair_crew": state["estimate"]["repair_crew"], "truck": state["truck"], "slot": slot, "pump_by": j["pump_by"]}
        return {"result": dispatch_crew.invoke({"job": job}, config)}

    g = StateGraph(S)
    for name, fn in [("intake", intake), ("locate_tank", locate_tank), ("history", history), ("estimate", estimate),
                     ("route_job", route_job), ("small_truck", small_truck), ("tanker", tanker), ("dispatch", dispatch)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    for a, b in [("intake", "locate_tank"), ("locate_tank", "history"), ("history", "estimate"), ("estimate", "route_job")]:
        g.add_edge(a, b)
    g.add_conditional_edges("route_job", lambda s: s["route"], {"small_truck": "small_truck", "tanker": "tanker"})
    g.add_edge("small_truck", "dispatch")
    g.add_edge("tanker", "dispatch")
    g.add_edge("dispatch", END)
    return g.compile()


def record(server, inp, path):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"pump the tank at {inp['address']}")
    try:
        build(llm).invoke({"request": inp}, config={"callbacks": [tracer]})
    except Exception:
        pass
