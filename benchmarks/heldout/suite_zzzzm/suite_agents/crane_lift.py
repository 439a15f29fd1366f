"""Tower-crane lift planner: turns a day's pick list into a checked lift plan (trajdebug's own recorder).

The planner parses the pick list (weights in t, kg or lb), fetches the crane's load chart for its
current jib, asks the model for a pick sequence and a rigging set per pick, then for every pick looks
the rigging up in the yard register, reads the chart's capacity at the working radius, classifies
the lift and keeps it in the run's lift sequence; picks with a large sail area get a wind window from
the hourly gust forecast.  The model drafts the plan and the lift supervisor's check approves it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import trajdebug
from openai import OpenAI

from suite_agents._common import dumps, last_user, system_of


NAME = "tc-lift-planner"
ROUTE = "sdk"
DOMAIN = "tower-crane lift planning on a high-rise site"
SHAPE = "parse -> chart retrieval -> model plan -> loop over picks (rigging lookup, chart capacity, classify, sequence memory, wind window) with a retried forecast tool -> model draft -> supervisor check"

SWITCH: str | None = None


def switched(name: str) -> bool:
    """Whether the case ``name`` is on (the only place SWITCH is read)."""
    return SWITCH == name


# -- the site's data ------------------------------------------------------------------------------

CHARTS = {
    # crane -> the chart of its current configuration (radius m, capacity kg)
    ("TC-1", "55m"): {"revision": "2025-09-18", "jib_m": 55, "rows": [[20, 10000], [25, 8400], [30, 6900], [35, 5800], [40, 4900], [45, 4200], [50, 3650], [55, 3200]]},
    ("TC-2", "60m"): {"revision": "2026-02-20", "jib_m": 60, "rows": [[20, 12000], [25, 9800], [30, 8000], [35, 6700], [40, 5600], [45, 4800], [50, 4150], [55, 3600], [60, 3150]]},
    ("TC-2", "50m"): {"revision": "2025-11-04", "jib_m": 50, "rows": [[20, 12500], [25, 10300], [30, 8500], [35, 7200], [40, 6100], [45, 5300], [50, 4600]]},
}
CRANE_CONFIG = {"TC-1": "55m", "TC-2": "60m"}  # TC-2's jib was extended from 50 m on 2026-02-20
HOOK_BLOCK_KG = 150

RIGGING = {
    "RS-2L-3T": {"type": "2-leg chain sling", "wll_kg": 3200, "weight_kg": 45},
    "RS-4L-8T": {"type": "4-leg chain sling", "wll_kg": 8000, "weight_kg": 120},
    "SB-6T": {"type": "spreader beam 6 m", "wll_kg": 6000, "weight_kg": 380},
    "SB-10T": {"type": "spreader beam 8 m", "wll_kg": 10000, "weight_kg": 610},
    "FT-FORK-3T": {"type": "formwork table fork", "wll_kg": 3000, "weight_kg": 290},
    "MB-4T": {"type": "module lifting frame", "wll_kg": 4000, "weight_kg": 260},
}

FORECASTS = {
    # station, date -> gusts m/s by hour from 06:00
    ("WX-HARBOUR", "2026-03-12"): [6.1, 6.8, 7.4, 8.2, 8.6, 8.9, 9.8, 11.2, 12.0, 10.4, 8.1, 7.0],
    ("WX-HARBOUR", "2026-03-13"): [9.4, 8.8, 8.1, 7.6, 7.9, 8.4, 8.7, 9.6, 10.9, 12.6, 13.1, 11.0],
    ("WX-HARBOUR", "2026-03-16"): [5.2, 5.9, 6.6, 7.1, 7.8, 8.3, 8.8, 9.2, 9.9, 10.6, 9.7, 8.4],
    ("WX-HARBOUR", "2026-03-17"): [7.7, 7.2, 6.9, 7.5, 8.0, 8.6, 8.9, 9.3, 10.2, 11.8, 12.4, 10.1],
    ("WX-HARBOUR", "2026-03-18"): [10.2, 9.6, 8.4, 7.9, 7.1, 6.8, 7.3, 8.1, 8.8, 9.4, 9.9, 10.8],
}
_flaky = {"left": 0}

INPUTS = [
    {
        "key": "tb-l12", "task": "lift plan TC-2, Tower B level 12 precast and plant, 2026-03-12",
        "crane": "TC-2", "date": "2026-03-12", "station": "WX-HARBOUR", "forecast_timeouts": 0,
        "picks": [
            {"id": "P-01", "item": "precast stair flight", "weight": "3.2 t", "pick_m": 18.0, "set_m": 34.0, "sail_m2": 4, "zone": "B-core"},
            {"id": "P-02", "item": "balcony slab", "weight": "4,150 kg", "pick_m": 18.0, "set_m": 41.0, "sail_m2": 9, "zone": "B-east"},
            {"id": "P-03", "item": "rooftop AHU", "weight": "4,850 lbs", "pick_m": 22.0, "set_m": 47.0, "sail_m2": 6, "zone": "B-east"},
            {"id": "P-04", "item": "rebar cage", "weight": "1.6 t", "pick_m": 15.0, "set_m": 38.0, "sail_m2": 3, "zone": "B-core"},
        ],
    },
    {
        "key": "tb-roof", "task": "lift plan TC-2, Tower B roof plant, 2026-03-13",
        "crane": "TC-2", "date": "2026-03-13", "station": "WX-HARBOUR", "forecast_timeouts": 1,
        "picks": [
            {"id": "P-01", "item": "cooling tower module", "weight": "3.1 t", "pick_m": 24.0, "set_m": 55.0, "sail_m2": 8, "zone": "B-roof"},
            {"id": "P-02", "item": "roof plant steel frame", "weight": "2,250 kg", "pick_m": 24.0, "set_m": 44.0, "sail_m2": 5, "zone": "B-roof"},
            {"id": "P-03", "item": "generator skid", "weight": "2.9 t", "pick_m": 20.0, "set_m": 36.0, "sail_m2": 4, "zone": "B-roof"},
            {"id": "P-04", "item": "cable drum", "weight": "980 kg", "pick_m": 20.0, "set_m": 30.0, "sail_m2": 2, "zone": "B-roof"},
        ],
    },
    {
        "key": "ta-l08", "task": "lift plan TC-1, Tower A level 8 facade panels, 2026-03-16",
        "crane": "TC-1", "date": "2026-03-16", "station": "WX-HARBOUR", "forecast_timeouts": 0,
        "picks": [
            {"id": "P-01", "item": "facade panel FP-08-03", "weight": "2.4 t", "pick_m": 16.0, "set_m": 39.0, "sail_m2": 14, "zone": "A-north"},
            {"id": "P-02", "item": "facade panel FP-08-04", "weight": "2.4 t", "pick_m": 16.0, "set_m": 42.0, "sail_m2": 14, "zone": "A-north"},
            {"id": "P-03", "item": "steel lintel bundle", "weight": "1,100 kg", "pick_m": 16.0, "set_m": 33.0, "sail_m2": 2, "zone": "A-north"},
            {"id": "P-04", "item": "mortar silo", "weight": "2.0 t", "pick_m": 14.0, "set_m": 26.0, "sail_m2": 5, "zone": "A-west"},
        ],
    },
    {
        "key": "ta-l09", "task": "lift plan TC-1, Tower A level 9 slab and formwork, 2026-03-17",
        "crane": "TC-1", "date": "2026-03-17", "station": "WX-HARBOUR", "forecast_timeouts": 1,
        "picks": [
            {"id": "P-01", "item": "formwork table FT-9A", "weight": "1.8 t", "pick_m": 20.0, "set_m": 37.0, "sail_m2": 6, "zone": "A-south"},
            {"id": "P-02", "item": "hollowcore plank HC-12", "weight": "3.6 t", "pick_m": 16.0, "set_m": 41.0, "sail_m2": 7, "zone": "A-south"},
            {"id": "P-03", "item": "rebar bundle T16", "weight": "2,000 kg", "pick_m": 16.0, "set_m": 35.0, "sail_m2": 2, "zone": "A-south"},
            {"id": "P-04", "item": "formwork table FT-9B", "weight": "1.8 t", "pick_m": 20.0, "set_m": 43.0, "sail_m2": 6, "zone": "A-south"},
        ],
    },
    {
        "key": "pod-core", "task": "lift plan TC-1, podium core walls and stairs, 2026-03-18",
        "crane": "TC-1", "date": "2026-03-18", "station": "WX-HARBOUR", "forecast_timeouts": 0,
        "picks": [
            {"id": "P-01", "item": "wall shutter WS-1", "weight": "2.2 t", "pick_m": 12.0, "set_m": 24.0, "sail_m2": 9, "zone": "core-1"},
            {"id": "P-02", "item": "stair flight SF-2", "weight": "2.8 t", "pick_m": 12.0, "set_m": 27.0, "sail_m2": 4, "zone": "core-1"},
            {"id": "P-03", "item": "wall shutter WS-3", "weight": "2.2 t", "pick_m": 12.0, "set_m": 31.0, "sail_m2": 9, "zone": "core-2"},
            {"id": "P-04", "item": "stair flight SF-4", "weight": "2.8 t", "pick_m": 12.0, "set_m": 33.0, "sail_m2": 4, "zone": "core-2"},
            {"id": "P-05", "item": "landing slab LS-4", "weight": "1,900 kg", "pick_m": 12.0, "set_m": 35.0, "sail_m2": 5, "zone": "core-2"},
        ],
    },
]

CASES = [
    {
        "case": "zzzzm_crane_lb_weight", "input": "tb-l12", "switch": "lb_suffix", "fault_kind": "unit_error",
        "root": {"name": "parse_pick_list", "occurrence": 1, "kind": "parse"},
        "failure": {"name": "approve_plan", "occurrence": 1},
        "description": "The pick-list parser no longer recognises the 'lbs' suffix and keeps the AHU's 4,850 lbs as 4,850 kg, so the supervisor's check finds P-03 over the chart capacity at 47 m.",
    },
    {
        "case": "zzzzm_crane_old_chart", "input": "tb-roof", "switch": "chart_cache", "fault_kind": "stale_data",
        "root": {"name": "fetch_load_chart", "occurrence": 1, "kind": "retrieval"},
        "failure": {"name": "capacity_at_radius", "occurrence": 4},
        "description": "The load chart comes from a cache keyed by crane only and is TC-2's 50 m jib chart of 2025-11-04, not the 60 m chart in force since the jib extension, so the 55 m set radius of the cooling tower module is off the chart.",
    },
    {
        "case": "zzzzm_crane_window_hour", "input": "ta-l08", "switch": "window_end", "fault_kind": "off_by_one",
        "root": {"name": "wind_window", "occurrence": 1, "kind": "condition"},
        "failure": {"name": "approve_plan", "occurrence": 1},
        "description": "The wind window for facade panel P-01 is closed one hour late and takes in 13:00, whose 9.2 m/s gust is over the 9.0 m/s limit for a 14 m2 panel.",
    },
    {
        "case": "zzzzm_crane_spreader", "input": "ta-l09", "switch": "spreader_id", "fault_kind": "hallucinated_value",
        "root": {"name": "plan_sequence", "occurrence": 1, "kind": "llm"},
        "failure": {"name": "rigging_lookup", "occurrence": 3},
        "description": "The model's plan rigs the 3.6 t hollowcore plank with a spreader SB-8T that is not in the yard register it was given, and the rigging lookup fails on it.",
    },
    {
        "case": "zzzzm_crane_zone_reset", "input": "pod-core", "switch": "zone_reset", "fault_kind": "bad_memory_write",
        "root": {"name": "remember_pick", "occurrence": 3, "kind": "state"},
        "failure": {"name": "approve_plan", "occurrence": 1},
        "description": "When the sequence moves on to zone core-2 the memory write replaces the lift sequence instead of adding to it, dropping P-01 and P-02, and the supervisor's check finds the sequence short of the pick list.",
    },
]


class LiftPlanRejected(Exception):
    pass


_client: OpenAI | None = None
_model = "fake-model"


def setup(env: dict) -> None:
    global _client, _model
    _client = OpenAI(base_url=env["server"].base_url, api_key="not-needed", max_retries=0)
    _model = env["server"].model


# -- steps ----------------------------------------------------------------------------------------

_UNITS = {"t": 1000.0, "kg": 1.0, "lb": 0.45359237, "lbs": 0.45359237}


@trajdebug.step(kind="input")
def lift_request(request: dict) -> dict:
    return request


@trajdebug.step(kind="parse")
def parse_pick_list(picks: list[dict]) -> list[dict]:
    pattern = r"^([\d.,]+)\s*(t|kg|lb)$" if switched("lb_suffix") else r"^([\d.,]+)\s*(t|kg|lbs?)$"
    out = []
    for p in picks:
        m = re.match(pattern, p["weight"].strip())
        if m:
            kg = float(m.group(1).replace(",", "")) * _UNITS[m.group(2)]
        else:  # a bare number: the yard writes kilograms
            kg = float(re.sub(r"[^\d.]", "", p["weight"]))
        out.append({"id": p["id"], "item": p["item"], "weight_kg": round(kg), "pick_m": p["pick_m"],
                    "set_m": p["set_m"], "sail_m2": p["sail_m2"], "zone": p["zone"]})
    return out


@trajdebug.step(kind="retrieval")
def fetch_load_chart(crane: str) -> dict:
    config = "50m" if (crane == "TC-2" and switched("chart_cache")) else CRANE_CONFIG[crane]
    chart = CHARTS[(crane, config)]
    return {"crane": crane, "jib_m": chart["jib_m"], "revision": chart["revision"], "rows": chart["rows"]}


@trajdebug.step(kind="llm")
def plan_sequence(messages: list[dict]) -> dict:
    reply = _client.chat.completions.create(model=_model, messages=messages, response_format={"type": "json_object"})
    return reply.choices[0].message.model_dump(exclude_none=True)


@trajdebug.step(kind="parse")
def read_plan(message: dict, picks: list[dict]) -> list[dict]:
    plan = json.loads(message["content"])
    by_id = {p["id"]: p for p in picks}
    return [{**by_id[pid], "rigging": plan["rigging"][pid]} for pid in plan["sequence"]]


@trajdebug.retry(attempts=3, on=(TimeoutError,))
@trajdebug.step(kind="tool")
def wind_forecast(station: str, date: str) -> dict:
    if _flaky["left"] > 0:
        _flaky["left"] -= 1
        raise TimeoutError(f"forecast service {station} did not answer within 5 s")
    gusts = FORECASTS[(station, date)]
    return {"station": station, "date": date, "hours": [f"{6 + i:02d}:00" for i in range(len(gusts))], "gust_ms": gusts}


@trajdebug.step(kind="tool")
def rigging_lookup(set_id: str) -> dict:
    if set_id not in RIGGING:
        raise LookupError(f"rigging set {set_id} is not in the yard register")
    return {"set": set_id, **RIGGING[set_id]}


@trajdebug.step(kind="tool")
def capacity_at_radius(chart: dict, radius_m: float) -> dict:
    rows = chart["rows"]
    if radius_m > rows[-1][0]:
        raise ValueError(f"radius {radius_m} m is beyond the {chart['crane']} chart (max {rows[-1][0]} m, jib {chart['jib_m']} m)")
    if radius_m <= rows[0][0]:
        return {"radius_m": radius_m, "capacity_kg": rows[0][1]}
    for (r0, c0), (r1, c1) in zip(rows, rows[1:]):
        if r0 <= radius_m <= r1:
            return {"radius_m": radius_m, "capacity_kg": round(c0 + (c1 - c0) * (radius_m - r0) / (r1 - r0))}
    raise AssertionError("unreachable")


@trajdebug.step(kind="condition")
def classify_lift(pick: dict, gross_kg: int, capacity: dict) -> str:
    util = gross_kg / capacity["capacity_kg"]
    return "critical" if util > 0.75 or pick["sail_m2"] >= 10 else "routine"


@trajdebug.step(kind="state")
def remember_pick(pick: dict, gross_kg: int, capacity: dict, category: str) -> dict:
    state = trajdebug.current_run().state
    seq = list(state.get("sequence", []))
    record = {"pick": pick["id"], "zone": pick["zone"], "gross_kg": gross_kg, "radius_m": capacity["radius_m"],
              "capacity_kg": capacity["capacity_kg"], "category": category}
    if seq and seq[-1]["zone"] != pick["zone"] and switched("zone_reset"):
        seq = [record]  # a new zone starts its own group
    else:
        seq.append(record)
    state["sequence"] = seq
    return record


@trajdebug.step(kind="condition")
def wind_window(pick: dict, forecast: dict) -> dict:
    limit = 9.0 if pick["sail_m2"] >= 10 else 14.0
    gusts = forecast["gust_ms"]
    best, start = (0, 0), None
    for i, g in enumerate(gusts + [99.0]):
        if g <= limit and start is None:
            start = i
        elif g > limit and start is not None:
            if i - start > best[1] - best[0]:
                best = (start, i)
            start = None
    end = best[1] + 1 if switched("window_end") else best[1]
    return {"pick": pick["id"], "limit_ms": limit, "from": forecast["hours"][best[0]],
            "until": forecast["hours"][end - 1], "hours": forecast["hours"][best[0]:end]}


@trajdebug.step(kind="llm")
def draft_lift_plan(messages: list[dict]) -> str:
    reply = _client.chat.completions.create(model=_model, messages=messages)
    return reply.choices[0].message.content


@trajdebug.step(kind="condition")
def approve_plan(picks: list[dict], windows: list[dict], forecast: dict, draft: str) -> dict:
    seq = trajdebug.current_run().state.get("sequence", [])
    have = {r["pick"] for r in seq}
    missing = [p["id"] for p in picks if p["id"] not in have]
    if missing:
        raise LiftPlanRejected(f"lift sequence holds {len(seq)} of {len(picks)} picks; {', '.join(missing)} not sequenced")
    for r in seq:
        if r["gross_kg"] > r["capacity_kg"]:
            raise LiftPlanRejected(
                f"{r['pick']} gross {r['gross_kg']:,} kg exceeds {r['capacity_kg']:,} kg chart capacity at {r['radius_m']} m")
    gust_at = dict(zip(forecast["hours"], forecast["gust_ms"]))
    for w in windows:
        over = [h for h in w["hours"] if gust_at[h] > w["limit_ms"]]
        if over:
            raise LiftPlanRejected(
                f"{w['pick']} window {w['from']}-{w['until']} includes {over[0]} with gust {gust_at[over[0]]} m/s over the {w['limit_ms']} m/s limit")
    return {"approved": True, "picks": len(seq), "critical": sum(r["category"] == "critical" for r in seq)}


# -- the agent ------------------------------------------------------------------------------------

PLANNER_SYSTEM = (
    "You are a lift planner for tower cranes. Given the pick list and the rigging sets in the yard register, "
    "answer JSON {\"sequence\": [pick ids in lift order], \"rigging\": {pick id: rigging set id}, \"notes\": str}. "
    "Lift from the shortest set radius outwards. Use only rigging sets from the register."
)
DRAFT_SYSTEM = "You write the lift plan summary for the crane supervisor: one line per pick, then the wind windows."


def record(inp: dict, dest: Path, env: dict) -> None:
    _flaky["left"] = inp["forecast_timeouts"]
    try:
        with trajdebug.run(NAME, task=inp["task"], path=str(dest), metadata={"crane": inp["crane"]}) as run:
            run.state["sequence"] = []
            req = lift_request({"crane": inp["crane"], "date": inp["date"], "picks": inp["picks"]})
            picks = parse_pick_list(req["picks"])
            chart = fetch_load_chart(req["crane"])
            register = [{"set": k, **v} for k, v in RIGGING.items()]
            plan_msg = plan_sequence([
                {"role": "system", "content": PLANNER_SYSTEM},
                {"role": "user", "content": dumps({"crane": inp["crane"], "picks": picks, "rigging_register": register})},
            ])
            sequence = read_plan(plan_msg, picks)
            forecast = wind_forecast(inp["station"], inp["date"])
            windows = []
            for pick in sequence:
                rig = rigging_lookup(pick["rigging"])
                gross = pick["weight_kg"] + rig["weight_kg"] + HOOK_BLOCK_KG
                cap = capacity_at_radius(chart, max(pick["pick_m"], pick["set_m"]))
                category = classify_lift(pick, gross, cap)
                remember_pick(pick, gross, cap, category)
                if pick["sail_m2"] >= 8:
                    windows.append(wind_window(pick, forecast))
            draft = draft_lift_plan([
                {"role": "system", "content": DRAFT_SYSTEM},
                {"role": "user", "content": dumps({"sequence": run.state["sequence"], "windows": windows})},
            ])
            approve_plan(picks, windows, forecast, draft)
    except (LiftPlanRejected, LookupError, ValueError):
        pass


# -- the model ------------------------------------------------------------------------------------

def _rigging_for(pick: dict) -> str:
    item, kg = pick["item"], pick["weight_kg"]
    if "formwork table" in item:
        return "FT-FORK-3T"
    if any(w in item for w in ("panel", "slab", "plank", "flight", "shutter")):
        if "plank" in item and switched("spreader_id"):
            return "SB-8T"
        return "SB-6T" if kg <= 5400 else "SB-10T"
    if any(w in item for w in ("module", "AHU", "skid", "frame")):
        return "MB-4T" if kg <= 3600 else "RS-4L-8T"
    return "RS-2L-3T" if kg <= 2900 else "RS-4L-8T"


def brain(request) -> str:
    messages = request.body["messages"]
    system = system_of(messages)
    data = json.loads(last_user(messages))
    if system == PLANNER_SYSTEM:
        picks = sorted(data["picks"], key=lambda p: (p["set_m"], p["id"]))
        return json.dumps({
            "sequence": [p["id"] for p in picks],
            "rigging": {p["id"]: _rigging_for(p) for p in data["picks"]},
            "notes": f"{len(picks)} picks on {data['crane']}, lifted from the shortest set radius outwards.",
        })
    lines = [f"{r['pick']}: {r['gross_kg']:,} kg at {r['radius_m']} m ({r['category']}, chart {r['capacity_kg']:,} kg)"
             for r in data["sequence"]]
    lines += [f"{w['pick']}: lift between {w['from']} and {w['until']} (gust limit {w['limit_ms']} m/s)" for w in data["windows"]]
    return "Lift plan\n" + "\n".join(lines)
