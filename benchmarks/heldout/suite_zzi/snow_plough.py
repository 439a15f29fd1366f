"""Snow plough routing: a highway authority's overnight winter-service agent (LangGraph route: a real
StateGraph with ChatOpenAI pointed at the fake model server, recorded with trajdebug's LangChain
tracer).

For a district and a night the graph reads the road-weather forecast, has the model triage the
treatment, routes to fitting plough blades or salting only, loads the treatment network, has the
model plan the vehicle routes, computes each route's salt, checks depot stock (ordering transfers
where short), dispatches the vehicles, has the model write the duty officer's briefing and checks
the plan against the winter service policy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

import kit
from _shared import Case, first_json, messages, system_text, user_text
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer


AGENT = "plough-routing"
ROUTE = "langgraph"
DOMAIN = "snow plough routing"
EXT = "jsonl"
SHAPE = (
    "forecast tool (RunnableRetry) -> model triage -> routing fn (ploughs / salting only) -> fleet tool -> network catalogue -> "
    "model route plan -> salt per route (tool per route) -> depot stock (tool per depot, transfers) -> dispatch "
    "(tool per vehicle) -> model briefing -> validator node"
)

LANE_WIDTH_M = 3.65
CATALOG_PAGE = 20


def _net(prefix_list: list[tuple[str, int, int, float, str]]) -> list[dict]:
    return [
        {"id": sid, "priority": p, "lanes": lanes, "length_km": km, "depot": depot}
        for sid, p, lanes, km, depot in prefix_list
    ]


NETWORK = {
    "Cherwell": _net(
        [
            ("M40-J9", 1, 4, 6.2, "Kidlington"),
            ("A34-01", 1, 4, 8.4, "Kidlington"),
            ("A4260-01", 1, 2, 7.1, "Kidlington"),
            ("A4095-01", 2, 2, 9.3, "Kidlington"),
            ("B4027-01", 2, 2, 5.6, "Kidlington"),
            ("B4100-01", 2, 2, 6.8, "Kidlington"),
            ("KID-R01", 3, 2, 3.1, "Kidlington"),
            ("KID-R02", 3, 2, 2.7, "Kidlington"),
            ("A41-01", 1, 2, 9.9, "Bicester"),
            ("A4421-01", 1, 2, 6.4, "Bicester"),
            ("B4030-01", 2, 2, 7.2, "Bicester"),
            ("BIC-R01", 3, 2, 3.4, "Bicester"),
        ]
    ),
    "Oxford City": _net(
        [
            ("A40-01", 1, 4, 5.2, "Cowley"),
            ("A40-02", 1, 4, 4.8, "Cowley"),
            ("A4142-01", 1, 4, 6.1, "Cowley"),
            ("A4158-01", 1, 2, 3.9, "Cowley"),
            ("A420-01", 1, 2, 4.4, "Cowley"),
            ("B480-01", 2, 2, 4.7, "Cowley"),
            ("B4495-01", 2, 2, 6.3, "Cowley"),
            ("B4150-01", 2, 2, 3.6, "Cowley"),
            ("BUS-01", 2, 2, 2.9, "Cowley"),
            ("BUS-02", 2, 2, 3.3, "Cowley"),
            ("BUS-03", 2, 2, 2.4, "Cowley"),
            ("OXC-R01", 3, 2, 1.8, "Cowley"),
            ("OXC-R02", 3, 2, 2.2, "Cowley"),
            ("OXC-R03", 3, 2, 1.6, "Cowley"),
            ("OXC-R04", 3, 2, 2.5, "Cowley"),
            ("OXC-R05", 3, 2, 1.9, "Cowley"),
            ("OXC-R06", 3, 2, 2.1, "Cowley"),
            ("OXC-R07", 3, 2, 1.4, "Cowley"),
            ("OXC-R08", 3, 2, 2.0, "Cowley"),
            ("OXC-R09", 3, 2, 1.7, "Cowley"),
            ("A44-01", 1, 2, 3.8, "Cowley"),
            ("A4144-01", 1, 2, 2.9, "Cowley"),
            ("A4165-01", 1, 2, 3.1, "Cowley"),
            ("B4044-01", 2, 2, 2.6, "Cowley"),
        ]
    ),
    "Vale": _net(
        [
            ("A338-01", 1, 2, 11.2, "Drayton"),
            ("A417-01", 1, 2, 9.6, "Drayton"),
            ("A415-01", 1, 2, 8.1, "Drayton"),
            ("B4017-01", 2, 2, 7.4, "Drayton"),
            ("B4016-01", 2, 2, 6.2, "Drayton"),
            ("VAL-R01", 3, 2, 3.8, "Drayton"),
            ("VAL-R02", 3, 2, 2.9, "Drayton"),
            ("A420-05", 1, 2, 12.3, "Faringdon"),
            ("B4508-01", 2, 2, 6.6, "Faringdon"),
            ("FAR-R01", 3, 2, 2.4, "Faringdon"),
        ]
    ),
    "South Oxon": _net(
        [
            ("A4074-01", 1, 2, 10.4, "Didcot"),
            ("A4130-01", 1, 2, 8.8, "Didcot"),
            ("B4009-01", 2, 2, 7.9, "Didcot"),
            ("B4016-05", 2, 2, 5.1, "Didcot"),
            ("DID-R01", 3, 2, 2.6, "Didcot"),
            ("DID-R02", 3, 2, 3.0, "Didcot"),
            ("A329-01", 1, 2, 9.2, "Henley"),
            ("A4155-01", 1, 2, 7.7, "Henley"),
            ("B480-05", 2, 2, 8.3, "Henley"),
            ("HEN-R01", 3, 2, 2.2, "Henley"),
        ]
    ),
    "West Oxon": _net(
        [
            ("A40-10", 1, 2, 13.1, "Witney"),
            ("A4095-10", 1, 2, 9.4, "Witney"),
            ("B4022-01", 2, 2, 8.2, "Witney"),
            ("B4047-01", 2, 2, 6.9, "Witney"),
            ("WIT-R01", 3, 2, 2.8, "Witney"),
            ("A44-10", 1, 2, 10.6, "Chipping Norton"),
            ("A361-01", 1, 2, 8.9, "Chipping Norton"),
            ("B4026-01", 2, 2, 5.7, "Chipping Norton"),
        ]
    ),
}
FLEET = {
    "Kidlington": [("GR-11", 9.0), ("GR-12", 9.0)],
    "Bicester": [("GR-14", 8.0)],
    "Cowley": [("GR-01", 9.0), ("GR-02", 9.0), ("GR-03", 8.0)],
    "Drayton": [("GR-21", 10.0), ("GR-22", 9.0)],
    "Faringdon": [("GR-24", 8.0)],
    "Didcot": [("GR-31", 9.0), ("GR-32", 8.0)],
    "Henley": [("GR-34", 9.0)],
    "Witney": [("GR-41", 9.0), ("GR-42", 9.0)],
    "Chipping Norton": [("GR-44", 8.0)],
}
STOCK = {
    "Kidlington": 64.0,
    "Bicester": 2.5,
    "Cowley": 480.0,
    "Drayton": 120.0,
    "Faringdon": 40.0,
    "Didcot": 95.0,
    "Henley": 6.0,
    "Witney": 150.0,
    "Chipping Norton": 55.0,
}
MAIN_DEPOT = "Cowley"

ALERTS: dict[str, dict[str, Any]] = {
    "WS-1201": {
        "district": "Oxford City",
        "night": "2025-01-08",
        "road_min_c": -3.5,
        "snow_cm": 0.0,
        "ice_from": "23:00",
    },
    "WS-1202": {
        "district": "Cherwell",
        "night": "2025-01-09",
        "road_min_c": -2.0,
        "snow_cm": 1.0,
        "ice_from": "01:00",
    },
    "WS-1203": {
        "district": "Vale",
        "night": "2025-01-09",
        "road_min_c": -4.0,
        "snow_cm": 7.0,
        "ice_from": "22:00",
    },
    "WS-1204": {
        "district": "South Oxon",
        "night": "2025-01-10",
        "road_min_c": -1.5,
        "snow_cm": 0.0,
        "ice_from": "02:00",
    },
    "WS-1205": {
        "district": "West Oxon",
        "night": "2025-01-10",
        "road_min_c": -5.0,
        "snow_cm": 9.0,
        "ice_from": "21:00",
    },
    "WS-1206": {
        "district": "Cherwell",
        "night": "2025-01-12",
        "road_min_c": -1.0,
        "snow_cm": 0.0,
        "ice_from": "03:00",
    },
    "WS-1207": {
        "district": "Vale",
        "night": "2025-01-13",
        "road_min_c": -2.5,
        "snow_cm": 0.0,
        "ice_from": "00:00",
    },
    "WS-1208": {
        "district": "South Oxon",
        "night": "2025-01-14",
        "road_min_c": -6.0,
        "snow_cm": 6.0,
        "ice_from": "20:00",
    },
    "WS-1209": {
        "district": "West Oxon",
        "night": "2025-01-15",
        "road_min_c": -0.5,
        "snow_cm": 0.0,
        "ice_from": "04:00",
    },
}

CASES = [
    Case(
        "zzi-plough-1",
        "plough.catalog_limit",
        "WS-1201",
        "truncated_result",
        ("segment_catalog", 1, "tool"),
        ("validate_plan", 1),
        "The network catalogue answers with its first 20 segments and no continuation, so four Oxford City "
        "priority-1 and -2 segments never reach the route plan.",
    ),
    Case(
        "zzi-plough-2",
        "plough.stock_param",
        "WS-1202",
        "tool_ignores_argument",
        ("salt_stock", 1, "tool"),
        ("validate_plan", 1),
        "The depot stock tool ignores its depot argument and answers Cowley's 480 t for Bicester, so no salt "
        "transfer is ordered for a Bicester route that needs more than the 2.5 t there.",
    ),
    Case(
        "zzi-plough-3",
        "plough.route_order",
        "WS-1204",
        "plan_error",
        ("ChatOpenAI", 2, "llm"),
        ("validate_plan", 1),
        "The model's route plan sends GR-31 round its Didcot route in reverse, so the B4009 (priority 2) is "
        "treated before the A4074 (priority 1).",
    ),
    Case(
        "zzi-plough-4",
        "plough.branch_match",
        "WS-1203",
        "wrong_routing",
        ("treatment_route", 1, "other"),
        ("validate_plan", 1),
        "The treatment router compares the action to 'plough' exactly, so the model's 'plough_and_salt' for "
        "7 cm of snow goes down the salting-only branch and no blades are fitted.",
    ),
    Case(
        "zzi-plough-5",
        "plough.cab_ack",
        "WS-1205",
        "swallowed_error",
        ("dispatch_vehicle", 1, "tool"),
        ("validate_plan", 1),
        "The dispatch tool catches GR-44's in-cab unit refusing the connection and reports the route as sent "
        "with no acknowledgement, and the run goes on as if it were dispatched.",
    ),
]
REFERENCE_INPUTS = ["WS-1206", "WS-1207", "WS-1208", "WS-1209"]


class PlanRejected(ValueError):
    """The plan breaks the winter service policy."""


def _salt_t(length_km: float, lanes: int, spread: float) -> float:
    return length_km * 1000 * LANE_WIDTH_M * lanes * spread / 1e6


# -- tools ---------------------------------------------------------------------------------------------------


_forecast_calls = {"n": 0, "flaky": False}


@tool
def road_weather(district: str, night: str) -> dict:
    """Road-weather forecast for a district and night (road surface minimum, snowfall, ice onset)."""
    _forecast_calls["n"] += 1
    if _forecast_calls["flaky"] and _forecast_calls["n"] == 1:
        raise ConnectionError("road weather API: read timed out (15 s)")
    a = next(v for v in ALERTS.values() if v["district"] == district and v["night"] == night)
    return {
        "district": district,
        "night": night,
        "road_surface_min_c": a["road_min_c"],
        "snowfall_cm": a["snow_cm"],
        "ice_risk_from": a["ice_from"],
        "source": "Vaisala route forecast 16:00 issue",
    }


@tool
def fleet_status(district: str, blades: bool) -> list:
    """Available gritters for a district's depots; blades=True fits plough blades."""
    depots = sorted({s["depot"] for s in NETWORK[district]})
    return [
        {"vehicle": v, "depot": d, "hopper_t": cap, "plough": blades} for d in depots for v, cap in FLEET[d]
    ]


@tool
def segment_catalog(district: str) -> dict:
    """The district's winter treatment network (segments with priority, lanes and length)."""
    segs = NETWORK[district]
    if kit.on("plough.catalog_limit"):
        segs = segs[:CATALOG_PAGE]
    return {"district": district, "segments": segs, "count": len(segs)}


@tool
def salt_calc(vehicle: str, segments: list, spread_g_m2: float) -> dict:
    """Salt needed for a route: segments as [{id, length_km, lanes}]."""
    tonnes = sum(_salt_t(s["length_km"], s["lanes"], spread_g_m2) for s in segments)
    return {
        "vehicle": vehicle,
        "km": round(sum(s["length_km"] for s in segments), 1),
        "tonnes": round(tonnes, 2),
    }


@tool
def salt_stock(depot: str) -> dict:
    """Salt in stock at a depot (tonnes)."""
    site = MAIN_DEPOT if kit.on("plough.stock_param") else depot
    return {"depot": site, "tonnes": STOCK[site], "barn_capacity_t": 500.0 if site == MAIN_DEPOT else 150.0}


@tool
def order_transfer(from_depot: str, to_depot: str, tonnes: float) -> dict:
    """Order a salt transfer between depots before the run."""
    return {
        "transfer": f"TR-{to_depot[:3].upper()}-{int(tonnes * 10)}",
        "from": from_depot,
        "to": to_depot,
        "tonnes": tonnes,
    }


def _cab_send(vehicle: str, route: list) -> str:
    if kit.on("plough.cab_ack") and vehicle == "GR-44":
        raise ConnectionRefusedError(
            f"in-cab unit {vehicle}: connection refused (telematics gateway 10.4.2.44:7001)"
        )
    return f"ACK-{vehicle}-{len(route):02d}"


@tool
def dispatch_vehicle(vehicle: str, route: list, tonnes: float, start: str) -> dict:
    """Send a route to a gritter's in-cab unit and collect the driver's acknowledgement."""
    try:
        ack = _cab_send(vehicle, route)
    except ConnectionError:
        ack = None
    return {
        "vehicle": vehicle,
        "segments": len(route),
        "load_t": tonnes,
        "start": start,
        "status": "sent",
        "ack": ack,
    }


# -- the graph -------------------------------------------------------------------------------------------------


class Plan(TypedDict, total=False):
    alert: dict
    forecast: dict
    treatment: dict
    vehicles: list
    network: list
    routes: list
    loads: list
    depots: list
    dispatches: list
    briefing: str


SYS_TRIAGE = (
    "You are the winter duty officer's assistant. From the road-weather forecast decide the treatment. Answer "
    'JSON: {"action": "precautionary_salt" | "plough_and_salt", "spread_g_m2", "start_by", "network": '
    '"P1-P2" | "P1-P3"}. Snowfall of 5 cm or more needs ploughing; start 2 hours before the ice risk.'
)
SYS_PLAN = (
    "Plan gritter routes. Each vehicle serves segments of its own depot and must treat priority 1 first, then "
    '2, then 3. Keep each load within the hopper. Answer JSON: {"routes": [{"vehicle", "depot", '
    '"segments": [ids in treatment order]}]}.'
)
SYS_BRIEF = (
    "Write the duty officer's briefing for tonight's plan below in three sentences. State the start time."
)


def build(llm: ChatOpenAI):
    def fetch_forecast(state: Plan) -> dict:
        a = state["alert"]
        fetch = road_weather.with_retry(
            retry_if_exception_type=(ConnectionError,), stop_after_attempt=3, wait_exponential_jitter=False
        )
        return {"forecast": fetch.invoke({"district": a["district"], "night": a["night"]})}

    def triage_alert(state: Plan) -> dict:
        reply = llm.invoke([SystemMessage(SYS_TRIAGE), HumanMessage(json.dumps(state["forecast"]))])
        return {"treatment": first_json(reply.content)}

    def treatment_route(state: Plan) -> str:
        action = state["treatment"]["action"]
        plough = action == "plough" if kit.on("plough.branch_match") else action.startswith("plough")
        return "assign_ploughs" if plough else "salting_only"

    def assign_ploughs(state: Plan) -> dict:
        return {"vehicles": fleet_status.invoke({"district": state["alert"]["district"], "blades": True})}

    def salting_only(state: Plan) -> dict:
        return {"vehicles": fleet_status.invoke({"district": state["alert"]["district"], "blades": False})}

    def load_network(state: Plan) -> dict:
        found = segment_catalog.invoke({"district": state["alert"]["district"]})
        top = 3 if state["treatment"]["network"] == "P1-P3" else 2
        return {"network": [s for s in found["segments"] if s["priority"] <= top]}

    def plan_routes(state: Plan) -> dict:
        payload = {
            "spread_g_m2": state["treatment"]["spread_g_m2"],
            "vehicles": state["vehicles"],
            "segments": state["network"],
        }
        reply = llm.invoke([SystemMessage(SYS_PLAN), HumanMessage(json.dumps(payload))])
        return {"routes": first_json(reply.content)["routes"]}

    def salt_loads(state: Plan) -> dict:
        by_id = {s["id"]: s for s in state["network"]}
        loads = []
        for r in state["routes"]:
            segs = [
                {"id": i, "length_km": by_id[i]["length_km"], "lanes": by_id[i]["lanes"]}
                for i in r["segments"]
            ]
            got = salt_calc.invoke(
                {"vehicle": r["vehicle"], "segments": segs, "spread_g_m2": state["treatment"]["spread_g_m2"]}
            )
            loads.append({**got, "depot": r["depot"]})
        return {"loads": loads}

    def check_depots(state: Plan) -> dict:
        depots = []
        for depot in sorted({ld["depot"] for ld in state["loads"]}):
            stock = salt_stock.invoke({"depot": depot})
            draw = round(sum(ld["tonnes"] for ld in state["loads"] if ld["depot"] == depot), 2)
            entry = {"depot": depot, "stock_t": stock["tonnes"], "draw_t": draw, "transfer": None}
            if stock["tonnes"] < draw:
                need = round(draw - stock["tonnes"] + 5.0, 1)
                entry["transfer"] = order_transfer.invoke(
                    {"from_depot": MAIN_DEPOT, "to_depot": depot, "tonnes": need}
                )
            depots.append(entry)
        return {"depots": depots}

    def dispatch(state: Plan) -> dict:
        start = state["treatment"]["start_by"]
        out = []
        for r, ld in zip(state["routes"], state["loads"]):
            out.append(
                dispatch_vehicle.invoke(
                    {"vehicle": r["vehicle"], "route": r["segments"], "tonnes": ld["tonnes"], "start": start}
                )
            )
        return {"dispatches": out}

    def write_briefing(state: Plan) -> dict:
        brief = {
            "district": state["alert"]["district"],
            "night": state["alert"]["night"],
            "action": state["treatment"]["action"],
            "start_by": state["treatment"]["start_by"],
            "vehicles": [d["vehicle"] for d in state["dispatches"]],
            "salt_t": round(sum(ld["tonnes"] for ld in state["loads"]), 1),
        }
        reply = llm.invoke([SystemMessage(SYS_BRIEF), HumanMessage(json.dumps(brief))])
        return {"briefing": reply.content}

    def validate_plan(state: Plan) -> dict:
        alert, treatment = state["alert"], state["treatment"]
        district = alert["district"]
        top = 3 if treatment["action"] == "plough_and_salt" else 2
        planned = {i for r in state["routes"] for i in r["segments"]}
        for s in NETWORK[district]:
            if s["priority"] <= top and s["id"] not in planned:
                raise PlanRejected(f"priority {s['priority']} segment {s['id']} ({district}) is on no route")
        by_id = {s["id"]: s for s in NETWORK[district]}
        for r in state["routes"]:
            prios = [by_id[i]["priority"] for i in r["segments"]]
            if prios != sorted(prios):
                late = next(i for i, seg in enumerate(r["segments"]) if by_id[seg]["priority"] == 1)
                raise PlanRejected(
                    f"{r['vehicle']} treats {r['segments'][late]} (priority 1) at position {late + 1}, "
                    f"after lower-priority segments"
                )
        hopper = {v["vehicle"]: v["hopper_t"] for v in state["vehicles"]}
        for ld in state["loads"]:
            if ld["tonnes"] > hopper[ld["vehicle"]]:
                raise PlanRejected(
                    f"{ld['vehicle']} load {ld['tonnes']} t exceeds its {hopper[ld['vehicle']]} t hopper"
                )
        for d in state["depots"]:
            moved = d["transfer"]["tonnes"] if d["transfer"] else 0.0
            if STOCK[d["depot"]] + moved < d["draw_t"]:
                raise PlanRejected(
                    f"{d['depot']} depot holds {STOCK[d['depot']]} t + {moved} t transferred, routes "
                    f"draw {d['draw_t']} t"
                )
        if alert["snow_cm"] >= 5 and not all(v["plough"] for v in state["vehicles"]):
            raise PlanRejected(
                f"{alert['snow_cm']} cm of snow forecast for {district} but the gritters go out "
                f"without plough blades"
            )
        for d in state["dispatches"]:
            if not d["ack"]:
                raise PlanRejected(
                    f"{d['vehicle']} has no driver acknowledgement for its route (status {d['status']})"
                )
        if treatment["start_by"] not in state["briefing"]:
            raise PlanRejected(f"briefing does not state the start time {treatment['start_by']}")
        return {}

    g = StateGraph(Plan)
    for name, fn in [
        ("fetch_forecast", fetch_forecast),
        ("triage_alert", triage_alert),
        ("assign_ploughs", assign_ploughs),
        ("salting_only", salting_only),
        ("load_network", load_network),
        ("plan_routes", plan_routes),
        ("salt_loads", salt_loads),
        ("check_depots", check_depots),
        ("dispatch", dispatch),
        ("write_briefing", write_briefing),
        ("validate_plan", validate_plan),
    ]:
        g.add_node(name, fn)
    g.add_edge(START, "fetch_forecast")
    g.add_edge("fetch_forecast", "triage_alert")
    g.add_conditional_edges("triage_alert", treatment_route, ["assign_ploughs", "salting_only"])
    g.add_edge("assign_ploughs", "load_network")
    g.add_edge("salting_only", "load_network")
    g.add_edge("load_network", "plan_routes")
    g.add_edge("plan_routes", "salt_loads")
    g.add_edge("salt_loads", "check_depots")
    g.add_edge("check_depots", "dispatch")
    g.add_edge("dispatch", "write_briefing")
    g.add_edge("write_briefing", "validate_plan")
    g.add_edge("validate_plan", END)
    return g.compile()


# -- the fake model -------------------------------------------------------------------------------------------


def _minus_2h(hhmm: str) -> str:
    h, m = map(int, hhmm.split(":"))
    return f"{(h - 2) % 24:02d}:{m:02d}"


def brain(key: str):
    def policy(request):
        msgs = messages(request)
        system, user = system_text(msgs), user_text(msgs)
        if system == SYS_TRIAGE:
            f = first_json(user)
            if f["snowfall_cm"] >= 5:
                return json.dumps(
                    {
                        "action": "plough_and_salt",
                        "spread_g_m2": 40,
                        "start_by": _minus_2h(f["ice_risk_from"]),
                        "network": "P1-P3",
                    }
                )
            spread = 20 if f["road_surface_min_c"] <= -2 else 10
            return json.dumps(
                {
                    "action": "precautionary_salt",
                    "spread_g_m2": spread,
                    "start_by": _minus_2h(f["ice_risk_from"]),
                    "network": "P1-P2",
                }
            )
        if system == SYS_PLAN:
            data = first_json(user)
            routes = []
            for depot in sorted({v["depot"] for v in data["vehicles"]}):
                vans = [v["vehicle"] for v in data["vehicles"] if v["depot"] == depot]
                segs = sorted(
                    (s for s in data["segments"] if s["depot"] == depot),
                    key=lambda s: (s["priority"], s["id"]),
                )
                for k, van in enumerate(vans):
                    mine = [s["id"] for s in segs[k :: len(vans)]]
                    if kit.on("plough.route_order") and van == "GR-31":
                        mine = mine[::-1]
                    routes.append({"vehicle": van, "depot": depot, "segments": mine})
            return json.dumps({"routes": routes})
        if system == SYS_BRIEF:
            b = first_json(user)
            return (
                f"{b['district']}, night of {b['night']}: {b['action'].replace('_', ' ')} across the network. "
                f"{len(b['vehicles'])} gritters ({', '.join(b['vehicles'])}) leave depots at {b['start_by']} with "
                f"{b['salt_t']} t of salt between them. Report completion of priority 1 routes to control."
            )
        raise ValueError(f"unexpected prompt: {system[:60]}")

    return policy


# -- one run ---------------------------------------------------------------------------------------------------


def record(key: str, out: Path, server: Any) -> None:
    """Run the graph once on alert `key`, recording into the JSONL file `out`."""
    server.use(brain(key))
    _forecast_calls.update(n=0, flaky=key in ("WS-1202", "WS-1205", "WS-1207"))
    llm = ChatOpenAI(
        base_url=server.base_url, api_key="not-needed", model="gpt-4o-mini", temperature=0, max_retries=0
    )
    graph = build(llm)
    a = ALERTS[key]
    tracer = TrajdebugTracer(
        path=out, name=AGENT, task=f"winter service plan {key}: {a['district']} {a['night']}"
    )
    try:
        graph.invoke(
            {"alert": {"ref": key, **{k: a[k] for k in ("district", "night")}, "snow_cm": a["snow_cm"]}},
            config={"callbacks": [tracer]},
        )
    except PlanRejected:
        pass
