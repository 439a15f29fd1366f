"""coastguard-drift-planner: a maritime rescue coordination centre agent turns a last-known position
into a drift datum (tidal stream + leeway, hour by hour), a search plan and vessel tasking."""
from __future__ import annotations

import json
import math
import re

import trajdebug

from .common import client, last_user, system_text

NAME = "coastguard-drift-planner"
ROUTE = "sdk"
DOMAIN = "maritime rescue coordination: drift datum, search pattern and vessel tasking"
SHAPE = "input -> position parser -> current + wind tools -> llm search plan -> hourly drift loop -> area -> AIS vessel tool -> llm tasking per vessel -> state -> llm brief -> MRCC submit check"
SWITCH = None

CURRENTS = {  # tidal stream forecast cycles per area: set (deg true), rate (kn)
    "Plymouth Sound": {"current": {"issued": "2025-06-14T06:00Z", "set_deg": 80, "rate_kn": 0.9},
                        "previous": {"issued": "2025-06-13T18:00Z", "set_deg": 260, "rate_kn": 0.7}},
    "Start Bay": {"current": {"issued": "2025-06-14T06:00Z", "set_deg": 45, "rate_kn": 1.2},
                  "previous": {"issued": "2025-06-13T18:00Z", "set_deg": 225, "rate_kn": 1.0}},
    "Lyme Bay": {"current": {"issued": "2025-06-14T06:00Z", "set_deg": 100, "rate_kn": 0.6},
                 "previous": {"issued": "2025-06-13T18:00Z", "set_deg": 280, "rate_kn": 0.5}},
}
WIND = {"Plymouth Sound": (240, 14), "Start Bay": (200, 18), "Lyme Bay": (270, 10)}
LEEWAY = {"person in water": 0.011, "liferaft": 0.035, "kayak": 0.025, "dinghy": 0.03}
SPACING = {"person in water": 0.5, "kayak": 1.0, "dinghy": 1.5, "liferaft": 2.0}
VESSELS = {
    "Plymouth Sound": ["RNLB 17-24 Plymouth", "Pilot Cutter Tamar", "FV Girl Rachael", "MV Armorique", "HMS Tyne", "Yacht Calypso", "FV Our Boys", "Tug SD Bounty", "RNLI D-class Looe"],
    "Start Bay": ["RNLB 14-19 Salcombe", "FV Provider", "Yacht Moana", "MV Celtic Star", "RNLI D-class Torbay", "FV Sea Harvester"],
    "Lyme Bay": ["RNLB 16-07 Exmouth", "FV Adventure", "Yacht Blue Heron", "MV Baltic Sky", "RNLI B-class Lyme Regis", "FV Two Sisters", "Survey Vessel Explorer"],
}
INPUTS = [
    {"task": "PIW off Rame Head, 3 h", "alert": "MAYDAY relay: person in water, last seen 50°18.6'N 004°13.2'W, Plymouth Sound, 3 hours ago"},
    {"task": "capsized kayak Start Point, 4 h", "alert": "PAN PAN: kayak capsized, last seen 50°13.0'N 003°38.4'W, Start Bay, 4 hours ago"},
    {"task": "dinghy adrift Lyme Regis, 5 h", "alert": "PAN PAN: dinghy adrift with 2 aboard, last seen 50°41.5'N 002°56.0'W, Lyme Bay, 5 hours ago"},
    {"task": "liferaft sighting Eddystone, 6 h", "alert": "MAYDAY relay: liferaft sighted, last seen 50°10.8'N 004°15.6'W, Plymouth Sound, 6 hours ago"},
    {"task": "PIW from yacht off Berry Head, 3 h", "alert": "MAYDAY: person in water from yacht, last seen 50°23.9'N 003°28.7'W, Start Bay, 3 hours ago"},
]
CASES = [
    {"id": "zq_drift_1", "input": 1, "fault_kind": "stale_data", "root": ("get_currents", 1), "root_kind": "tool",
     "failure": ("submit_plan", 1),
     "description": "The tidal stream tool answers the previous forecast cycle (issued 18:00 the day before, set 225) so the drifted datum goes south-west and the MRCC check finds it miles from its own."},
    {"id": "zq_drift_2", "input": 2, "fault_kind": "off_by_one", "root": ("drift_schedule", 1), "root_kind": "other",
     "failure": ("submit_plan", 1),
     "description": "The drift schedule lists hours 1 to 4 for a dinghy adrift 5 hours, so the datum is one hour of drift short."},
    {"id": "zq_drift_3", "input": 4, "fault_kind": "plan_error", "root": ("plan_search", 1), "root_kind": "llm",
     "failure": ("submit_plan", 1),
     "description": "The planning model picks a 2.0 nm track spacing for a person in the water (a liferaft's spacing), which the MRCC check refuses above 0.5 nm."},
    {"id": "zq_drift_4", "input": 0, "fault_kind": "truncated_result", "root": ("list_vessels", 1), "root_kind": "tool",
     "failure": ("submit_plan", 1),
     "description": "The AIS query returns only its first page of five vessels, so the Plymouth all-weather lifeboat is never tasked and the MRCC check flags it."},
    {"id": "zq_drift_5", "input": 3, "fault_kind": "swallowed_error", "root": ("get_wind", 1), "root_kind": "tool",
     "failure": ("submit_plan", 1),
     "description": "The wind service errors and get_wind answers calm (0 kn) instead, so the liferaft gets no leeway over 6 hours and the datum falls short of the MRCC's."},
]


def brain(request):
    sys_ = system_text(request)
    user = last_user(request)
    if "search plan" in sys_:
        info = json.loads(user)
        obj = info["object"]
        spacing = SPACING[obj]
        if SWITCH == "zq_drift_3":
            spacing = 2.0
        return json.dumps({"object": obj, "leeway_factor": LEEWAY[obj], "pattern": "expanding square" if obj == "person in water" else "parallel track",
                           "track_spacing_nm": spacing, "legs": 8})
    if "task vessels" in sys_:
        v = json.loads(user)
        role = "search unit" if v["name"].startswith(("RNLB", "RNLI", "HMS", "Pilot")) else "lookout"
        return json.dumps({"vessel": v["name"], "role": role})
    if "brief" in sys_:
        p = json.loads(user)
        return (f"Search {p['pattern']} centred {p['datum']['lat']:.3f}N {abs(p['datum']['lon']):.3f}W, spacing {p['track_spacing_nm']} nm; "
                f"{len(p['tasking'])} vessels tasked.")
    return "Noted."


def _move(lat, lon, deg, nm):
    return lat + nm * math.cos(math.radians(deg)) / 60, lon + nm * math.sin(math.radians(deg)) / (60 * math.cos(math.radians(lat)))


def _datum(lat, lon, area, obj, hours):
    cur = CURRENTS[area]["current"]
    wdir, wkn = WIND[area]
    for _ in range(hours):
        lat, lon = _move(lat, lon, cur["set_deg"], cur["rate_kn"])
        lat, lon = _move(lat, lon, (wdir + 180) % 360, wkn * LEEWAY[obj])
    return lat, lon


def record(inp, server, path):
    llm = client(server)

    def chat(messages):
        return llm.chat.completions.create(model=server.model, messages=messages).choices[0].message.content

    @trajdebug.step(kind="input")
    def receive_alert(alert: str) -> str:
        return alert

    @trajdebug.step(kind="parse")
    def parse_alert(alert: str) -> dict:
        m = re.search(r"(\d+)°([\d.]+)'N (\d+)°([\d.]+)'W, ([A-Za-z ]+), (\d+) hours", alert)
        obj = next(o for o in ("person in water", "liferaft", "kayak", "dinghy") if o in alert)
        return {"lat": int(m.group(1)) + float(m.group(2)) / 60, "lon": -(int(m.group(3)) + float(m.group(4)) / 60),
                "area": m.group(5), "hours": int(m.group(6)), "object": obj}

    @trajdebug.step(kind="tool")
    def get_currents(area: str) -> dict:
        cycle = "previous" if SWITCH == "zq_drift_1" else "current"  # the 06:00 cycle not yet on the mirror
        return {"area": area, **CURRENTS[area][cycle]}

    @trajdebug.step(kind="tool")
    def get_wind(area: str) -> dict:
        try:
            if SWITCH == "zq_drift_5":
                raise ConnectionError("met service returned HTTP 503")
            wdir, wkn = WIND[area]
        except ConnectionError:
            wdir, wkn = 0, 0.0
        return {"area": area, "from_deg": wdir, "speed_kn": wkn}

    @trajdebug.step(kind="llm")
    def plan_search(messages: list) -> str:
        return chat(messages)

    @trajdebug.step(kind="parse")
    def parse_plan(text: str) -> dict:
        return json.loads(text)

    @trajdebug.step(kind="other")
    def drift_schedule(hours: int) -> list:
        last = hours if SWITCH == "zq_drift_2" else hours + 1
        return [f"T+{h}h" for h in range(1, last)]

    @trajdebug.step(kind="other")
    def drift_hour(pos: dict, currents: dict, wind: dict, leeway: float, stamp: str) -> dict:
        lat, lon = _move(pos["lat"], pos["lon"], currents["set_deg"], currents["rate_kn"])
        lat, lon = _move(lat, lon, (wind["from_deg"] + 180) % 360, wind["speed_kn"] * leeway)
        return {"lat": lat, "lon": lon, "at": stamp}

    @trajdebug.step(kind="other")
    def search_area(datum: dict, plan: dict) -> dict:
        half = plan["track_spacing_nm"] * plan["legs"] / 2
        return {"datum": datum, "half_side_nm": half, "pattern": plan["pattern"], "track_spacing_nm": plan["track_spacing_nm"]}

    @trajdebug.step(kind="tool")
    def list_vessels(area: str, radius_nm: float) -> list:
        rows = [{"name": n, "dist_nm": 9.0 if n.startswith("RNLB") else round(1.5 + 1.1 * i, 1)} for i, n in enumerate(VESSELS[area])]
        rows.sort(key=lambda r: ("RNLB" not in r["name"], r["dist_nm"]))
        rows = [r for r in rows if r["dist_nm"] <= radius_nm]
        if SWITCH == "zq_drift_4":
            rows = sorted(rows, key=lambda r: r["dist_nm"])[:5]  # first page of the AIS query
        return rows

    @trajdebug.step(kind="llm")
    def task_vessel(messages: list) -> str:
        return chat(messages)

    @trajdebug.step(kind="tool")
    def submit_plan(area: dict, tasking: list, alert: dict) -> dict:
        lat, lon = _datum(alert["lat"], alert["lon"], alert["area"], alert["object"], alert["hours"])
        d = math.hypot((area["datum"]["lat"] - lat) * 60, (area["datum"]["lon"] - lon) * 60 * math.cos(math.radians(lat)))
        if d > 0.5:
            raise ValueError(f"MRCC refused plan: datum {area['datum']['lat']:.3f}N {abs(area['datum']['lon']):.3f}W is {d:.1f} nm from SARIS datum {lat:.3f}N {abs(lon):.3f}W")
        if area["track_spacing_nm"] > SPACING[alert["object"]]:
            raise ValueError(f"MRCC refused plan: track spacing {area['track_spacing_nm']} nm exceeds {SPACING[alert['object']]} nm for a {alert['object']}")
        lifeboat = next(n for n in VESSELS[alert["area"]] if n.startswith("RNLB"))
        if lifeboat not in {t["vessel"] for t in tasking}:
            raise ValueError(f"MRCC refused plan: all-weather lifeboat {lifeboat} in range but not tasked")
        return {"status": "accepted", "units": len(tasking)}

    with trajdebug.run(NAME, task=inp["task"], path=str(path)) as run:
        alert = parse_alert(receive_alert(inp["alert"]))
        currents = get_currents(alert["area"])
        wind = get_wind(alert["area"])
        plan = parse_plan(plan_search([{"role": "system", "content": "You draft the search plan as JSON."},
                                       {"role": "user", "content": json.dumps({"object": alert["object"], "hours": alert["hours"], "wind": wind})}]))
        pos = {"lat": alert["lat"], "lon": alert["lon"], "at": "T+0h"}
        for stamp in drift_schedule(alert["hours"]):
            pos = drift_hour(pos, currents, wind, plan["leeway_factor"], stamp)
        area = search_area(pos, plan)
        vessels = list_vessels(alert["area"], 12.0)
        tasking = []
        for v in vessels:
            tasking.append(json.loads(task_vessel([{"role": "system", "content": "You task vessels for the search: search unit or lookout."},
                                                  {"role": "user", "content": json.dumps(v)}])))
        with trajdebug.step("record_tasking", kind="state", input=tasking):
            run.state["tasking"] = tasking
        with trajdebug.step("brief_crews", kind="llm", input={"plan": area, "tasking": tasking}) as s:
            s.output = chat([{"role": "system", "content": "You brief the crews."},
                             {"role": "user", "content": json.dumps({**area, "tasking": tasking})}])
        submit_plan(area, tasking, alert)
