"""Cheesemonger's maturing room (sdk route): picks wheels for a wholesale order.

Shape: probe read with a retry, a per-wheel loop (ledger tool, model rind assessment, parser, state write
into run.state), a forecast over the state, a selection, and a final release check that raises.
"""
from __future__ import annotations

import datetime as dt
import json

from openai import OpenAI

import trajdebug
from suite_common import last_user

NAME = "affinage-room"
ROUTE = "sdk"
DOMAIN = "a cheesemonger's maturing room"
SHAPE = "probe read with retry, loop over 6 wheels (ledger tool, model rind assessment, parser, run.state write), forecast, selection, final release check; 28-31 steps"
SWITCH = None

BASE_DAYS = {"tomme": 90, "alpine": 150, "washed-rind": 60}
MIN_SALE_KG = {"tomme": 4.2, "alpine": 8.0, "washed-rind": 1.2}

LEDGER = {
    # wheel: (style, made, kg at make, kg now, rind)
    "T-211": ("tomme", "2026-08-20", 5.6, 5.15, "sound"),
    "T-212": ("tomme", "2026-08-22", 5.4, 4.98, "sound"),
    "T-215": ("tomme", "2026-09-01", 5.5, 5.09, "sound"),
    "T-219": ("tomme", "2026-10-28", 5.7, 5.52, "sound"),
    "T-220": ("tomme", "2026-11-10", 5.5, 5.41, "tacky"),
    "T-222": ("tomme", "2026-09-05", 5.3, 4.93, "sound"),
    "A-031": ("alpine", "2026-06-02", 10.2, 9.45, "sound"),
    "A-033": ("alpine", "2026-06-10", 10.0, 9.31, "sound"),
    "A-034": ("alpine", "2026-09-15", 10.4, 10.02, "sound"),
    "A-036": ("alpine", "2026-07-01", 9.9, 9.20, "sound"),
    "A-037": ("alpine", "2026-10-20", 10.1, 9.93, "sound"),
    "A-038": ("alpine", "2026-06-20", 10.3, 9.60, "sound"),
    "W-501": ("washed-rind", "2026-10-20", 1.45, 1.31, "sticky"),
    "W-502": ("washed-rind", "2026-10-22", 1.42, 1.30, "sound"),
    "W-503": ("washed-rind", "2026-11-25", 1.50, 1.46, "sticky"),
    "W-504": ("washed-rind", "2026-10-25", 1.40, 1.28, "sound"),
    "W-505": ("washed-rind", "2026-11-28", 1.44, 1.41, "sound"),
    "W-506": ("washed-rind", "2026-10-18", 1.47, 1.33, "sound"),
}
PROBES = {"A": (11.0, 93), "B": (12.5, 95), "C": (9.5, 91), "D": (11.5, 94)}

INPUTS = [
    {"order": "Harwood Deli", "cave": "A", "style": "tomme", "qty": 4, "release_by": "2026-12-18",
     "wheels": ["T-211", "T-212", "T-215", "T-219", "T-220", "T-222"]},
    {"order": "Marlow Fine Foods", "cave": "C", "style": "alpine", "qty": 4, "release_by": "2026-12-20",
     "wheels": ["A-031", "A-033", "A-034", "A-036", "A-037", "A-038"]},
    {"order": "The Larder at Kew", "cave": "B", "style": "washed-rind", "qty": 4, "release_by": "2026-12-22",
     "wheels": ["W-501", "W-502", "W-503", "W-504", "W-505", "W-506"]},
    {"order": "Sefton Market Hall", "cave": "D", "style": "tomme", "qty": 4, "release_by": "2026-12-15",
     "wheels": ["T-222", "T-219", "T-211", "T-215", "T-212", "T-220"]},
    {"order": "Brindle & Co", "cave": "B", "style": "washed-rind", "qty": 4, "release_by": "2026-12-21",
     "wheels": ["W-506", "W-505", "W-504", "W-503", "W-502", "W-501"]},
]

CASES = [
    {"id": "zzz-aff-1", "switch": "probe_f", "input": 0, "kind": "unit_error",
     "root": ("read_cave_probe", 1), "failure": ("ripeness_forecast", 1),
     "description": "The cave probe reports the air temperature in degrees Fahrenheit under the Celsius field, so the forecast sees a 51.8 degree cave."},
    {"id": "zzz-aff-2", "switch": "select_shift", "input": 1, "kind": "off_by_one",
     "root": ("select_wheels", 1), "failure": ("confirm_release", 1),
     "description": "Selection takes the wheels ranked second to fifth instead of first to fourth, leaving out the ripest wheel and taking one that is not ready."},
    {"id": "zzz-aff-3", "switch": "rind_loss", "input": 2, "kind": "hallucinated_value",
     "root": ("rind_assessment", 4), "failure": ("confirm_release", 1),
     "description": "The rind assessment for W-504 states a 31 percent moisture loss that no ledger weight supports, so its release weight falls under the minimum."},
    {"id": "zzz-aff-4", "switch": "ledger_default", "input": 3, "kind": "swallowed_error",
     "root": ("wheel_record", 3), "failure": ("confirm_release", 1),
     "description": "The ledger lookup for T-211 hits a missing column, and the tool returns a fresh-wheel record made today instead of reporting it."},
    {"id": "zzz-aff-5", "switch": "log_made", "input": 4, "kind": "bad_memory_write",
     "root": ("log_turning", 3), "failure": ("confirm_release", 1),
     "description": "The turning log for W-504 stores its last-turned date as the make date, so the forecast treats a ripe wheel as five days old."},
]

_client = None
_gateway = {"calls": 0}


def _today(inp):
    return dt.date(2026, 12, 6)


def policy(request):
    text = last_user(request)
    rec = json.loads(text.split("WHEEL:", 1)[1])
    loss = round(100 * (rec["kg_at_make"] - rec["kg_now"]) / rec["kg_at_make"], 1)
    if SWITCH == "rind_loss" and rec["wheel"] == "W-504":
        loss = 31.0
    grade = {"sound": "A", "tacky": "B", "sticky": "B"}[rec["rind"]]
    return json.dumps({"wheel": rec["wheel"], "grade": grade, "moisture_loss_pct": loss,
                       "note": f"rind {rec['rind']}, {loss}% lost since make"})


@trajdebug.step(kind="input")
def take_order(order: dict) -> dict:
    return dict(order)


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def read_cave_probe(cave: str) -> dict:
    _gateway["calls"] += 1
    if cave == "C" and _gateway["calls"] == 1:
        raise ConnectionError("probe gateway for cave C did not answer")
    temp, rh = PROBES[cave]
    reading = {"cave": cave, "air_temp_c": temp, "rh_pct": rh, "probe": f"CP-{cave}1"}
    if SWITCH == "probe_f":
        reading["air_temp_c"] = round(temp * 9 / 5 + 32, 1)
    return reading


@trajdebug.step(kind="parse")
def cave_conditions(reading: dict) -> dict:
    return {"cave": reading["cave"], "temp_c": float(reading["air_temp_c"]), "humidity": reading["rh_pct"] / 100}


@trajdebug.step(kind="tool")
def wheel_record(wheel: str) -> dict:
    try:
        style, made, kg0, kg, rind = LEDGER[wheel]
        if SWITCH == "ledger_default" and wheel == "T-211":
            raise KeyError("made_on")
        return {"wheel": wheel, "style": style, "made": made, "kg_at_make": kg0, "kg_now": kg, "rind": rind,
                "last_turned": "2026-12-01"}
    except KeyError:
        return {"wheel": wheel, "style": "tomme", "made": "2026-12-06", "kg_at_make": 5.5, "kg_now": 5.5,
                "rind": "sound", "last_turned": "2026-12-06"}


@trajdebug.step(kind="llm")
def rind_assessment(record: dict) -> str:
    reply = _client.chat.completions.create(
        model="fake-model", temperature=0,
        messages=[{"role": "system", "content": "You grade cheese rinds for the maturing room. Answer JSON."},
                  {"role": "user", "content": "Assess this wheel. WHEEL:" + json.dumps(record)}])
    trajdebug.current_step().usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                                   completion_tokens=reply.usage.completion_tokens)
    return reply.choices[0].message.content


@trajdebug.step(kind="parse")
def parse_rind_note(text: str) -> dict:
    note = json.loads(text)
    return {"wheel": note["wheel"], "grade": note["grade"], "loss_pct": float(note["moisture_loss_pct"])}


@trajdebug.step(kind="state")
def log_turning(record: dict, note: dict) -> dict:
    entry = {"wheel": record["wheel"], "made": record["made"], "kg_at_make": record["kg_at_make"],
             "grade": note["grade"], "loss_pct": note["loss_pct"], "turned": "2026-12-06"}
    if SWITCH == "log_made" and record["wheel"] == "W-504":
        entry["made"] = record["last_turned"]
    trajdebug.current_run().state[f"wheel:{record['wheel']}"] = entry
    return entry


@trajdebug.step(kind="other")
def ripeness_forecast(wheels: list, conditions: dict, style: str) -> list:
    temp = conditions["temp_c"]
    if not 4.0 <= temp <= 16.0:
        raise ValueError(f"cave temperature {temp} C is outside the maturing model's range 4-16 C")
    rate = 1 + 0.08 * (temp - 11.0)
    state = trajdebug.current_run().state
    out = []
    for w in wheels:
        e = state[f"wheel:{w}"]
        made = dt.date.fromisoformat(e["made"])
        ready = made + dt.timedelta(days=round(BASE_DAYS[style] / rate))
        # the graded loss so far, and about one percent more before the wheel leaves the room
        kg_release = round(e["kg_at_make"] * (1 - e["loss_pct"] / 100) * 0.99, 2)
        out.append({"wheel": w, "ready": ready.isoformat(), "kg_at_release": kg_release, "grade": e["grade"]})
    return out


@trajdebug.step(kind="condition")
def select_wheels(forecast: list, qty: int) -> list:
    ranked = sorted(forecast, key=lambda f: (f["ready"], f["wheel"]))
    if SWITCH == "select_shift":
        return ranked[1:qty + 1]
    return ranked[:qty]


@trajdebug.step(kind="output")
def confirm_release(order: dict, chosen: list) -> dict:
    for c in chosen:
        if c["ready"] > order["release_by"]:
            raise AssertionError(f"{c['wheel']} is ready {c['ready']}, after the release date {order['release_by']} for {order['order']}")
        if c["kg_at_release"] < MIN_SALE_KG[order["style"]]:
            raise AssertionError(f"{c['wheel']} would weigh {c['kg_at_release']} kg at release, under the {MIN_SALE_KG[order['style']]} kg minimum")
    return {"order": order["order"], "release": [c["wheel"] for c in chosen], "on": order["release_by"]}


def record(inp, path, server):
    global _client
    _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _gateway["calls"] = 0
    with trajdebug.run(NAME, path=path, task=f"release {inp['qty']} {inp['style']} wheels for {inp['order']}") as run:
        order = take_order(inp)
        cond = cave_conditions(read_cave_probe(order["cave"]))
        for w in order["wheels"]:
            rec = wheel_record(w)
            note = parse_rind_note(rind_assessment(rec))
            log_turning(rec, note)
        forecast = ripeness_forecast(order["wheels"], cond, order["style"])
        chosen = select_wheels(forecast, order["qty"])
        confirm_release(order, chosen)
