"""OpenAI Agents SDK route: a motorway tow-truck dispatcher: triage agent hands off to light or heavy recovery."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents import Agent, function_tool
from trajdebug.testing import Reply, tool_call

from .common import Case, conversation, oa_model, oa_run, register
from .kit import active

NAME = "tow-dispatch-desk"
ROUTE = "openai_agents"
DOMAIN = "tow truck dispatch"
SHAPE = "Agents SDK: triage agent (incident, geocode) hands off to light/heavy recovery agent (find trucks, ETA loop, dispatch)"
TRIAGE = "[tow-triage] You triage breakdown calls and hand off to the right recovery desk."
LIGHT = "[tow-light] You dispatch light recovery trucks (up to 3.5 t)."
HEAVY = "[tow-heavy] You dispatch heavy recovery trucks (over 3.5 t)."

CALLS = {
    "CALL-881": {"incident": "INC-70881", "vehicle": "Luton box van", "gross_t": 7.5, "where": "M6 J14 northbound hard shoulder", "lat": 52.8301, "lon": -2.1402, "zone": "M6-C"},
    "CALL-882": {"incident": "INC-70882", "vehicle": "Ford Focus", "gross_t": 1.4, "where": "A38 Lichfield southbound layby", "lat": 52.6612, "lon": -1.8203, "zone": "A38-S"},
    "CALL-883": {"incident": "INC-70883", "vehicle": "Skoda Octavia", "gross_t": 1.5, "where": "M6 J15 southbound slip", "lat": 52.9811, "lon": -2.2310, "zone": "M6-C"},
    "CALL-884": {"incident": "INC-70884", "vehicle": "Iveco Daily 7t", "gross_t": 7.0, "where": "A38 Burton northbound", "lat": 52.7905, "lon": -1.6418, "zone": "A38-S"},
    "CALL-885": {"incident": "INC-70885", "vehicle": "VW Golf", "gross_t": 1.3, "where": "M6 J13 northbound", "lat": 52.7650, "lon": -2.1001, "zone": "M6-C"},
    "CALL-886": {"incident": "INC-70886", "vehicle": "Mercedes Sprinter 5t", "gross_t": 5.0, "where": "M6 J16 southbound", "lat": 53.0560, "lon": -2.2870, "zone": "M6-C"},
}
INPUTS = {k: k for k in CALLS}
REF_INPUTS = ["CALL-883", "CALL-884", "CALL-885", "CALL-886"]
TRUCKS = {
    ("M6-C", "light"): [("TT-11", 14), ("TT-04", 26), ("TT-19", 41)],
    ("M6-C", "heavy"): [("HV-02", 18), ("HV-07", 44)],
    ("A38-S", "light"): [("TT-21", 12), ("TT-23", 29)],
    ("A38-S", "heavy"): [("HV-05", 22), ("HV-09", 37)],
}
RATING = {"light": 3.5, "heavy": 44.0}
CLOSED = {"INC-70880", "INC-70879"}


def _triage_policy(msgs: list[dict[str, Any]]) -> Any:
    user, done = conversation(msgs)
    got = {n: r for n, _, r in done}
    call = user.split()[1]
    if "get_incident" not in got:
        return Reply(tool_calls=(tool_call("get_incident", {"call_id": call}),))
    inc = got["get_incident"]
    if "geocode_location" not in got and not active("tow_plan_error"):
        return Reply(tool_calls=(tool_call("geocode_location", {"text": inc["where"]}),))
    desk = "heavy_recovery" if inc["gross_t"] > 3.5 else "light_recovery"
    if active("tow_routing"):
        desk = "light_recovery"
    return Reply(tool_calls=(tool_call(f"transfer_to_{desk}", {}),))


def _desk_policy(cls: str) -> Any:
    def policy(msgs: list[dict[str, Any]]) -> Any:
        _, done = conversation(msgs)
        got = {n: r for n, _, r in done}
        inc = got["get_incident"]
        geo = got.get("geocode_location") or {"lat": inc["where"], "lon": inc["where"], "zone": inc["where"]}
        if "find_trucks" not in got:
            return Reply(tool_calls=(tool_call("find_trucks", {"zone": geo["zone"], "truck_class": cls}),))
        etas = [r for n, _, r in done if n == "truck_eta"]
        trucks = got["find_trucks"]["trucks"]
        if len(etas) < min(2, len(trucks)):
            t = trucks[len(etas)]
            return Reply(tool_calls=(tool_call("truck_eta", {"truck_id": t, "lat": geo["lat"], "lon": geo["lon"]}),))
        if "dispatch_truck" not in got:
            best = min(etas, key=lambda r: (r.get("eta_min", 0), r["truck_id"]))
            incident = inc["incident"]
            if active("tow_entity"):
                incident = inc["previous_incident"]
            return Reply(tool_calls=(tool_call("dispatch_truck", {"incident_id": incident, "truck_id": best["truck_id"], "truck_class": cls,
                                                                   "eta_min": best.get("eta_min", 0), "lat": geo["lat"], "lon": geo["lon"]}),))
        return f"Dispatched {got['dispatch_truck']['job']}."
    return policy


register("[tow-triage]", _triage_policy)
register("[tow-light]", _desk_policy("light"))
register("[tow-heavy]", _desk_policy("heavy"))


@function_tool
def get_incident(call_id: str) -> str:
    """The control room's record of a breakdown call."""
    c = CALLS[call_id]
    prev = f"INC-{int(c['incident'][4:]) - 1}"
    return json.dumps({"incident": c["incident"], "vehicle": c["vehicle"], "gross_t": c["gross_t"], "where": c["where"], "previous_incident": prev})


@function_tool
def geocode_location(text: str) -> str:
    """Coordinates and patrol zone for a location description."""
    c = next(v for v in CALLS.values() if v["where"] == text)
    return json.dumps({"lat": c["lat"], "lon": c["lon"], "zone": c["zone"]})


@function_tool
def find_trucks(zone: str, truck_class: str) -> str:
    """Available recovery trucks in a zone, nearest first."""
    rows = [t for t, _ in TRUCKS.get((zone, truck_class)) or TRUCKS[("M6-C", truck_class)]]  # unknown zone: the default patrol
    start = 0
    if active("tow_off_by_one"):
        start = 1
    return json.dumps({"zone": zone, "trucks": rows[start:start + 3]})


def _eta(truck_id: str) -> int:
    return next(m for rows in TRUCKS.values() for t, m in rows if t == truck_id)


@function_tool
def truck_eta(truck_id: str, lat: Any, lon: Any) -> str:
    """Live ETA of a truck to a point."""
    if active("tow_format_drift") and truck_id == "TT-04":
        return json.dumps({"truck_id": truck_id, "eta": f"PT{_eta(truck_id)}M"})
    return json.dumps({"truck_id": truck_id, "eta_min": _eta(truck_id)})


@function_tool(failure_error_function=None)
def dispatch_truck(incident_id: str, truck_id: str, truck_class: str, eta_min: int, lat: Any, lon: Any) -> str:
    """Dispatch a truck to an incident."""
    if not isinstance(lat, (int, float)):
        raise RuntimeError(f'HTTP 400 {{"error": "invalid_coordinates", "lat": {json.dumps(lat)}}}')
    if incident_id in CLOSED or incident_id not in {c["incident"] for c in CALLS.values()}:
        raise RuntimeError(f'HTTP 409 {{"error": "incident_closed", "incident_id": "{incident_id}"}}')
    c = next(v for v in CALLS.values() if v["incident"] == incident_id)
    if c["gross_t"] > RATING[truck_class]:
        raise RuntimeError(f'HTTP 422 {{"error": "truck_underrated", "truck_id": "{truck_id}", "rated_t": {RATING[truck_class]}, "vehicle_t": {c["gross_t"]}}}')
    real = _eta(truck_id)
    if real > 25:
        raise RuntimeError(f"dispatch check: {truck_id} ETA {real} min breaches the 25 min motorway target for {incident_id}")
    return json.dumps({"job": f"JOB-{incident_id[4:]}-{truck_id}", "eta_min": real})


def record(call: str, path: Path) -> None:
    model = oa_model()
    tools = [find_trucks, truck_eta, dispatch_truck]
    light = Agent(name="light_recovery", instructions=LIGHT, tools=tools, model=model)
    heavy = Agent(name="heavy_recovery", instructions=HEAVY, tools=tools, model=model)
    triage = Agent(name="triage", instructions=TRIAGE, tools=[get_incident, geocode_location], handoffs=[light, heavy], model=model)
    oa_run(triage, f"Call {call} needs recovery", path, NAME, f"dispatch recovery for {call}")


CASES = [
    Case("tow_01", "tow_routing", "wrong_routing", "CALL-881", "generation gpt-4o-mini", 3, "llm",
         "dispatch_truck", "The triage model hands a 7.5 t van to the light recovery desk."),
    Case("tow_02", "tow_entity", "subagent_wrong_entity", "CALL-882", "generation gpt-4o-mini", 7, "llm",
         "dispatch_truck", "The recovery desk dispatches against the previous incident number from the call record instead of this call's."),
    Case("tow_03", "tow_off_by_one", "off_by_one", "CALL-882", "find_trucks", 1, "tool",
         "dispatch_truck", "The truck search starts its page at 1 and leaves out the nearest truck."),
    Case("tow_04", "tow_format_drift", "format_drift", "CALL-883", "truck_eta", 2, "tool",
         "dispatch_truck", "The ETA service answers one truck's ETA as an ISO duration string instead of minutes."),
    Case("tow_05", "tow_plan_error", "plan_error", "CALL-881", "generation gpt-4o-mini", 2, "llm",
         "dispatch_truck", "The triage model hands off before geocoding the location, so the desk works from the free-text place."),
]
