"""Rickshaw tours (otlp): a dispatcher plans a heritage route, permits its lane, staffs it through a fleet sub-agent and dispatches."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from .common import Case, last_user, register_policy
from .kit import active
from .otlputil import Tracing

AGENT, ROUTE, DOMAIN, EXT = "rickshaw_tour_dispatch", "otlp", "rickshaw tours", "json"
SHAPE = "parse -> LLM route plan -> stop info per stop -> duration -> rickshaw count -> lane router -> lane permit -> fleet sub-agent (roster, LLM choice, assignment memory, vehicle confirm) -> LLM manifest -> dispatch"

STOPS = {"Old Town Square": (10, True), "Astronomical Clock": (15, True), "Charles Bridge": (20, False), "Kampa Island": (15, True),
         "Castle Steps": (10, False), "Strahov Library": (20, True), "Petrin Gardens": (15, True), "Jewish Quarter": (15, True)}
LANES = {"cobbled_heritage_lane": {"minutes": 25, "step_free": False}, "riverside_path": {"minutes": 35, "step_free": True}}
FLEET = {"RK-01": True, "RK-02": False, "RK-03": True, "RK-04": False, "RK-05": False, "RK-06": True, "RK-07": False, "RK-08": False}
ROSTER = {
    "2026-05-02": [("D-11", "RK-02", "RK-02"), ("D-12", "RK-01", "RK-04"), ("D-15", "RK-05", "RK-05"), ("D-16", "RK-03", "RK-07")],
    "2026-05-03": [("D-14", "RK-06", "RK-06"), ("D-17", "RK-08", "RK-08"), ("D-18", "RK-04", "RK-04")],
    "2026-05-09": [("D-11", "RK-03", "RK-07"), ("D-13", "RK-02", "RK-02"), ("D-19", "RK-05", "RK-05")],
    "2026-05-10": [("D-14", "RK-06", "RK-06"), ("D-20", "RK-04", "RK-04")],
    "2026-05-16": [("D-12", "RK-01", "RK-04"), ("D-13", "RK-02", "RK-02"), ("D-15", "RK-05", "RK-05")],
    "2026-05-23": [("D-16", "RK-03", "RK-07"), ("D-18", "RK-04", "RK-04"), ("D-19", "RK-06", "RK-06"), ("D-20", "RK-08", "RK-08")],
}
INPUTS = {
    "old_town": "Heritage tour: 5 riders, 2026-05-02 10:00, start Old Town Square, 90 minutes, 2 step-free",
    "castle": "Heritage tour: 3 riders, 2026-05-09 14:00, start Castle Steps, 60 minutes, 1 step-free",
    "r1": "Heritage tour: 4 riders, 2026-05-16 09:30, start Jewish Quarter, 90 minutes, 0 step-free",
    "r2": "Heritage tour: 6 riders, 2026-05-23 11:00, start Kampa Island, 120 minutes, 3 step-free",
    "r3": "Heritage tour: 2 riders, 2026-05-10 16:00, start Petrin Gardens, 60 minutes, 0 step-free",
    "r4": "Heritage tour: 3 riders, 2026-05-03 13:15, start Strahov Library, 90 minutes, 1 step-free",
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    Case("zu_rick_01", "rick.lane_router", "wrong_routing", "old_town", "select_lane", 1, "other", "request_lane_permit", 1,
         "The lane router picks the fastest lane without regard to step-free riders, and the city permit API refuses cobbles for them."),
    Case("zu_rick_02", "rick.pickup_time", "hallucinated_value", "castle", "compose_manifest", 1, "llm", "dispatch_tour", 1,
         "The manifest model writes a pickup time that appears nowhere in the booking."),
    Case("zu_rick_03", "rick.rickshaw_count", "off_by_one", "old_town", "compute_rickshaws", 1, "other", "dispatch_tour", 1,
         "The rickshaw count floors riders over two seats, leaving an odd rider without a seat."),
    Case("zu_rick_04", "rick.home_vehicle", "bad_memory_write", "old_town", "write_assignments", 1, "other", "confirm_vehicles", 1,
         "The assignment memory records each driver's home vehicle instead of the ramp rickshaw chosen for the step-free riders."),
    Case("zu_rick_05", "rick.roster_date", "subagent_wrong_entity", "castle", "list_drivers", 1, "tool", "dispatch_tour", 1,
         "The fleet sub-agent reads the next day's roster, so the drivers it assigns are not on shift on the tour date."),
]


def _policy(body: dict) -> str:
    system = body["messages"][0]["content"]
    data = json.loads(last_user(body))
    if "Plan" in system:
        start = data["start"]
        names = sorted(STOPS)
        i = names.index(start)
        stops, total = [start], STOPS[start][0]
        j = i
        while total < data["minutes"] - 45 and len(stops) < 4:
            j = (j + 1) % len(names)
            stops.append(names[j])
            total += STOPS[names[j]][0]
        return json.dumps({"stops": stops})
    if "Choose" in system:
        need, ramps = data["rickshaws"], data["ramp_needed"]
        pool = sorted(data["roster"], key=lambda r: (not FLEET[r["vehicle"]], r["driver"]))
        return json.dumps({"assign": [{"driver": r["driver"], "vehicle": r["vehicle"]} for r in pool[:need]], "ramps": ramps})
    pickup = "09:45" if active("rick.pickup_time") else data["time"]
    return json.dumps({"date": data["date"], "pickup": pickup, "start": data["stops"][0], "stops": data["stops"], "riders": data["riders"],
                       "rickshaws": len(data["assign"]), "drivers": [a["driver"] for a in data["assign"]], "lane": data["lane"]})


register_policy("rickshaw", _policy)


def _run(t: Tracing, text: str) -> None:
    with t.span("rickshaw_dispatch", "AGENT", text) as root:
        with t.span("parse_request", "CHAIN", text) as sp:
            m = re.match(r"Heritage tour: (\d+) riders, (\S+) (\S+), start (.+?), (\d+) minutes, (\d+) step-free", text)
            req = t.out(sp, {"riders": int(m.group(1)), "date": m.group(2), "time": m.group(3), "start": m.group(4),
                             "minutes": int(m.group(5)), "step_free": int(m.group(6))})
        plan = json.loads(t.llm("plan_route", "[rickshaw] Plan the tour stops; answer JSON.",
                                {"start": req["start"], "minutes": req["minutes"], "catalogue": sorted(STOPS)}))
        infos = []
        for stop in plan["stops"]:
            with t.span("get_stop_info", "TOOL", {"stop": stop}, **{"tool.name": "get_stop_info"}) as sp:
                dwell, flat = STOPS[stop]
                infos.append(t.out(sp, {"stop": stop, "dwell_min": dwell, "step_free_access": flat}))
        with t.span("compute_duration", "CHAIN", infos) as sp:
            dwell = t.out(sp, {"dwell_min": sum(i["dwell_min"] for i in infos)})
        with t.span("compute_rickshaws", "CHAIN", {"riders": req["riders"], "seats_per_rickshaw": 2}) as sp:
            n = req["riders"] // 2 if active("rick.rickshaw_count") else math.ceil(req["riders"] / 2)
            count = t.out(sp, {"rickshaws": n, "ramp_needed": math.ceil(req["step_free"] / 2)})
        with t.span("select_lane", "CHAIN", {"step_free": req["step_free"], "lanes": LANES, "dwell": dwell}) as sp:
            if req["step_free"] and not active("rick.lane_router"):
                lane = "riverside_path"
            else:
                lane = min(LANES, key=lambda k: LANES[k]["minutes"])
            t.out(sp, {"lane": lane})
        with t.span("request_lane_permit", "TOOL", {"lane": lane, "date": req["date"], "step_free_riders": req["step_free"]},
                    **{"tool.name": "request_lane_permit"}) as sp:
            if req["step_free"] and not LANES[lane]["step_free"]:
                raise ValueError(f"City permits API 403: lane {lane} has steps and cobbles; not permitted for {req['step_free']} step-free riders")
            permit = t.out(sp, {"permit": f"LP-{req['date'].replace('-', '')}-{lane[:3].upper()}"})
        with t.span("fleet_dispatcher", "AGENT", {"date": req["date"], **count}, **{"agent.name": "fleet_dispatcher"}):
            day = req["date"]
            if active("rick.roster_date"):
                day = day[:8] + f"{int(day[8:]) + 1:02d}"
            with t.span("list_drivers", "TOOL", {"date": day}, **{"tool.name": "list_drivers"}) as sp:
                roster = t.out(sp, [{"driver": d, "vehicle": v, "home_vehicle": h} for d, v, h in ROSTER[day]])
            choice = json.loads(t.llm("choose_drivers", "[rickshaw] Choose drivers and vehicles; answer JSON.",
                                      {"roster": roster, **count}))
            with t.span("write_assignments", "CHAIN", choice) as sp:
                homes = {r["driver"]: r["home_vehicle"] for r in roster}
                memo = [{"driver": a["driver"], "vehicle": homes[a["driver"]] if active("rick.home_vehicle") else a["vehicle"]}
                        for a in choice["assign"]]
                t.out(sp, {"assignments": memo})
            with t.span("confirm_vehicles", "TOOL", {"assignments": memo, "ramp_needed": count["ramp_needed"]},
                        **{"tool.name": "confirm_vehicles"}) as sp:
                ramps = sum(FLEET[a["vehicle"]] for a in memo)
                if ramps < count["ramp_needed"]:
                    raise ValueError(f"Fleet API 409: {count['ramp_needed']} ramp rickshaw(s) required, assignment "
                                     f"{[a['vehicle'] for a in memo]} has {ramps}")
                t.out(sp, {"confirmed": [a["vehicle"] for a in memo]})
        manifest = json.loads(t.llm("compose_manifest", "[rickshaw] Compose the dispatch manifest as JSON.",
                                    {"date": req["date"], "time": req["time"], "stops": plan["stops"], "riders": req["riders"],
                                     "assign": memo, "lane": lane, "permit": permit["permit"]}))
        with t.span("dispatch_tour", "TOOL", manifest, **{"tool.name": "dispatch_tour"}) as sp:
            if manifest["pickup"] != req["time"]:
                raise ValueError(f"Dispatch API 422: pickup {manifest['pickup']} does not match booked start {req['time']} at {manifest['start']}")
            if manifest["riders"] > 2 * manifest["rickshaws"]:
                raise ValueError(f"Dispatch API 422: {manifest['riders']} riders exceed {manifest['rickshaws']} rickshaws "
                                 f"({2 * manifest['rickshaws']} seats)")
            on_shift = {d for d, _, _ in ROSTER[manifest["date"]]}
            off = [d for d in manifest["drivers"] if d not in on_shift]
            if off:
                raise ValueError(f"Dispatch API 409: driver(s) {', '.join(off)} not on shift {manifest['date']}")
            t.out(sp, {"status": "dispatched", "tour": f"TR-{manifest['date']}-{manifest['pickup']}"})
        t.out(root, "dispatched")


def record(key: str, path: Path) -> None:
    t = Tracing(AGENT, f"{path.parent.name}/{path.name}/{key}")
    try:
        _run(t, INPUTS[key])
    except ValueError:
        pass
    t.write(path)
