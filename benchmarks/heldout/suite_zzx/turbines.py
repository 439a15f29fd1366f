"""Wind farm turbine maintenance planner (recording SDK route).

Reads a maintenance request for a farm, has the model order the turbines, pulls SCADA readings per turbine,
has the model assess each, stores findings in run.state, reserves parts, runs a crew-scheduling sub-agent
and validates the work order against the farm's maintenance rules.
"""
import json

import trajdebug

import kit
from common import chat_brain, loose_json
from sdk_common import ask

NAME = "turbine-maintenance"
ROUTE = "sdk"
DOMAIN = "wind farm turbine maintenance"
SHAPE = "plan (llm) -> per turbine: SCADA tool (retried), assess (llm), parse, state write -> alarms, parts -> crew sub-agent (weather tool, roster llm, parse) -> compile -> validate"
EXT = "jsonl"

SCADA = {  # vibration mm/s, gearbox C, hours since service
    "T01": (2.1, 61.0, 4100), "T02": (5.2, 70.5, 5200), "T03": (7.9, 78.0, 6900), "T04": (1.4, 58.5, 2300),
    "T05": (4.8, 66.0, 3900), "T06": (8.3, 81.5, 7100), "T07": (3.0, 63.0, 3100), "T08": (6.1, 74.0, 6100),
    "T09": (1.9, 60.0, 1800), "T10": (7.4, 79.5, 6600), "T11": (2.7, 62.5, 2900), "T12": (5.6, 71.0, 5600),
}
PARTS = {"P1": ["main bearing kit", "gearbox oil 200 l"], "P2": ["vibration sensor", "gearbox oil 200 l"],
         "P3": ["filter set"]}
STOCK = {"main bearing kit": 3, "gearbox oil 200 l": 12, "vibration sensor": 6, "filter set": 20}
CREWS = {"Moray Ridge": "crew MR-2", "Kintyre Bank": "crew KB-1", "Solway Flats": "crew SF-4"}
WIND = [9.0, 13.5, 8.0, 11.0, 14.0, 7.5, 10.0, 12.5, 6.5, 9.5]

INPUTS = {
    "req-4101": {"farm": "Moray Ridge", "turbines": ["T03", "T01", "T05", "T08", "T11"], "window": [2, 6]},
    "req-4102": {"farm": "Kintyre Bank", "turbines": ["T06", "T02", "T04", "T09", "T12"], "window": [0, 4]},
    "req-4103": {"farm": "Solway Flats", "turbines": ["T10", "T07", "T01", "T02", "T05"], "window": [3, 7]},
    "req-4104": {"farm": "Moray Ridge", "turbines": ["T12", "T03", "T09", "T06", "T07"], "window": [1, 5]},
    "req-4105": {"farm": "Kintyre Bank", "turbines": ["T08", "T11", "T10", "T04", "T02"], "window": [4, 8]},
    "req-4106": {"farm": "Solway Flats", "turbines": ["T01", "T06", "T05", "T03", "T09"], "window": [2, 6]},
}

CASES = [
    dict(id="zzx-turbine-01", input="req-4101", kind="unit_error", root=("fetch_scada", 2),
         failure=("validate_workorder", 1),
         line="the SCADA reader returns T08's vibration in in/s while labelling it mm/s"),
    dict(id="zzx-turbine-02", input="req-4102", kind="plan_error", root=("plan_work", 1),
         failure=("validate_workorder", 1),
         line="the model's work plan leaves the last requested turbine out"),
    dict(id="zzx-turbine-03", input="req-4103", kind="swallowed_error", root=("reserve_parts", 1),
         failure=("validate_workorder", 1),
         line="the parts depot times out on one part; the tool skips it and returns the rest"),
    dict(id="zzx-turbine-04", input="req-4104", kind="subagent_wrong_entity", root=("draft_roster", 1),
         failure=("validate_workorder", 1),
         line="the crew sub-agent's roster books the crew of another farm"),
    dict(id="zzx-turbine-05", input="req-4105", kind="off_by_one", root=("check_weather", 1),
         failure=("validate_workorder", 1),
         line="the forecast tool returns the days of the window shifted one day later"),
]


def _priority(vib):
    return "P1" if vib > 7.1 else "P2" if vib > 4.5 else "P3"


def _brain(handlers_state):
    def plan(p):
        order = sorted(p["turbines"], key=lambda t: -p["hours"][t])
        if kit.on("zzx-turbine-02"):
            order = order[:-1]
        return {"order": order, "note": "highest running hours first"}

    def assess(p):
        pr = _priority(p["vibration_mm_s"])
        return {"turbine": p["turbine"], "priority": pr, "action": {"P1": "stop and replace bearing",
                "P2": "inspect on next visit", "P3": "monitor"}[pr], "parts": PARTS[pr]}

    def roster(p):
        days = [d for d in p["forecast"] if d["wind_m_s"] <= 12.0]
        day = days[-1]["day"] if p["urgent"] else days[0]["day"]
        farm = p["farm"]
        if kit.on("zzx-turbine-04"):
            farm = sorted(CREWS)[(sorted(CREWS).index(farm) + 1) % len(CREWS)]
        return {"crew": CREWS[farm], "day": day, "jobs": p["jobs"]}

    return chat_brain({"plan": plan, "assess": assess, "roster": roster})


def brain():
    return _brain({})


@trajdebug.step(kind="input")
def read_request(req_id: str, req: dict) -> dict:
    return {"request": req_id, **req}


@trajdebug.step(kind="parse")
def parse_plan(answer: str) -> dict:
    return loose_json(answer)


_ATTEMPTS = {}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def fetch_scada(turbine: str) -> dict:
    _ATTEMPTS[turbine] = _ATTEMPTS.get(turbine, 0) + 1
    if turbine in ("T05", "T12", "T06") and _ATTEMPTS[turbine] == 1:
        raise ConnectionError(f"SCADA gateway did not answer for {turbine}")
    vib, temp, hours = SCADA[turbine]
    if kit.on("zzx-turbine-01") and turbine == "T08":
        vib = round(vib / 25.4, 3)
    return {"turbine": turbine, "vibration_mm_s": vib, "gearbox_c": temp, "hours_since_service": hours}


@trajdebug.step(kind="parse")
def parse_assessment(answer: str) -> dict:
    return loose_json(answer)


@trajdebug.step(kind="state")
def record_finding(reading: dict, finding: dict) -> dict:
    merged = {**finding, "vibration_mm_s": reading["vibration_mm_s"], "gearbox_c": reading["gearbox_c"]}
    trajdebug.current_run().state[f"finding:{finding['turbine']}"] = merged
    return merged


@trajdebug.step(kind="tool")
def fetch_alarms(turbines: list) -> dict:
    return {t: ("vibration" if SCADA[t][0] > 4.5 else "none") for t in turbines}


@trajdebug.step(kind="tool")
def reserve_parts(needed: dict) -> list:
    out = []
    for i, (part, qty) in enumerate(sorted(needed.items())):
        try:
            if kit.on("zzx-turbine-03") and i == 1:
                raise TimeoutError("depot stock service timed out")
            out.append({"part": part, "qty": qty, "depot": "Inverness", "in_stock": STOCK[part]})
        except TimeoutError:
            continue
    return out


@trajdebug.step(kind="tool")
def check_weather(farm: str, window: list) -> list:
    start, end = window
    if kit.on("zzx-turbine-05"):
        start, end = start + 1, end + 1
    return [{"day": f"2026-04-{10 + d:02d}", "wind_m_s": WIND[d]} for d in range(start, end + 1)]


@trajdebug.step(kind="parse")
def parse_roster(answer: str) -> dict:
    return loose_json(answer)


@trajdebug.step(kind="other")
def compile_workorder(req: dict, alarms: dict, parts: list, roster: dict) -> dict:
    state = trajdebug.current_run().state
    findings = [state[f"finding:{t}"] for t in req["turbines"] if f"finding:{t}" in state]
    return {"farm": req["farm"], "findings": findings, "alarms": alarms, "parts": parts, "roster": roster,
            "window": [f"2026-04-{10 + d:02d}" for d in req["window"]]}


@trajdebug.step(kind="condition")
def validate_workorder(req: dict, order: dict) -> str:
    seen = {f["turbine"] for f in order["findings"]}
    for t in req["turbines"]:
        if t not in seen:
            raise ValueError(f"work order for {req['farm']} has no finding for requested turbine {t}")
    for f in order["findings"]:
        if order["alarms"][f["turbine"]] == "vibration" and f["priority"] == "P3":
            raise ValueError(f"{f['turbine']} has an active vibration alarm but is only P3 "
                             f"({f['vibration_mm_s']} mm/s)")
    needed = sorted({p for f in order["findings"] for p in f["parts"]})
    reserved = {p["part"] for p in order["parts"]}
    for p in needed:
        if p not in reserved:
            raise ValueError(f"part '{p}' is needed by the work order but not reserved")
    if order["roster"]["crew"] != CREWS[req["farm"]]:
        raise ValueError(f"{order['roster']['crew']} is not based at {req['farm']} ({CREWS[req['farm']]})")
    lo, hi = order["window"]
    if not lo <= order["roster"]["day"] <= hi:
        raise ValueError(f"crew day {order['roster']['day']} is outside the window {lo}..{hi}")
    return "approved"


SYSTEM = "You are the maintenance planner of a wind farm operator. Answer with JSON only."


def record(req_id, path, server):
    _ATTEMPTS.clear()
    req = INPUTS[req_id]
    with trajdebug.run(NAME, path=path, task=f"maintenance plan {req_id} for {req['farm']}"):
        request = read_request(req_id, req)
        hours = {t: SCADA[t][2] for t in request["turbines"]}
        plan = parse_plan(ask(server, "plan_work", SYSTEM, "plan", "Order the turbines for this visit.",
                              {"farm": request["farm"], "turbines": request["turbines"], "hours": hours}))
        needed = {}
        for t in plan["order"]:
            reading = fetch_scada(t)
            finding = parse_assessment(ask(server, "assess_turbine", SYSTEM, "assess",
                                           "Assess this turbine and pick a priority.", reading))
            merged = record_finding(reading, finding)
            for p in merged["parts"]:
                needed[p] = needed.get(p, 0) + 1
        alarms = fetch_alarms(request["turbines"])
        parts = reserve_parts(needed)
        urgent = any(trajdebug.current_run().state[f"finding:{t}"]["priority"] == "P1" for t in plan["order"])
        with trajdebug.step("crew_scheduler", kind="agent", input={"farm": request["farm"]}) as crew:
            forecast = check_weather(request["farm"], request["window"])
            roster = parse_roster(ask(server, "draft_roster", SYSTEM, "roster", "Book a crew day.",
                                      {"farm": request["farm"], "forecast": forecast, "urgent": urgent,
                                       "jobs": plan["order"]}))
            crew.output = roster
        order = compile_workorder(request, alarms, parts, roster)
        validate_workorder(request, order)
