"""Cricket pitch maintenance planner (OpenTelemetry + OpenInference spans, imported from OTLP/JSON)."""
from __future__ import annotations

import json

from .kit import active
from .routes import read_op

NAME = "pitch-prep-planner"
ROUTE = "otlp"
DOMAIN = "cricket pitch maintenance"
SHAPE = "fixture -> forecast -> per-day probe/parse/task loop -> height rule -> briefing -> mowing LLM -> covers sub-agent -> prep log (state) -> water volume -> certificate"
SYSTEM = "You are the head groundsman's planning assistant. Answer in JSON only."

STATIONS = {"Taunton": "03853", "Hove": "03882", "Worcester": "03522", "Chelmsford": "03684", "Canterbury": "03797"}
STRIP_AREA_M2 = 61.4   # 20.12 m x 3.05 m
STRIP_AREA_FT2 = 661.0
BOWSER_L = 1200
OUT_OF_SERVICE = {"RC-4"}


class CertificateRejected(Exception):
    pass


Rejected = CertificateRejected


def _fx(ground, strip, fmt, date, readings, rain):
    return {"ground": ground, "strip": strip, "format": fmt, "match_date": date, "readings": readings, "rain_mm": rain}


INPUTS = {
    "taunton": _fx("Taunton", "Strip 7", "T20", "2026-06-19", [14.2, 16.0, 17.5], [0.0, 3.5, 0.4]),
    "worcester": _fx("Worcester", "Strip 4", "four-day", "2026-07-02", [13.8, 15.1, 18.2], [4.1, 0.0, 2.6]),
    "r1": _fx("Hove", "Strip 2", "T20", "2026-06-05", [15.5, 16.8, 18.0], [0.0, 0.0, 0.0]),
    "r2": _fx("Chelmsford", "Strip 9", "one-day", "2026-06-11", [14.6, 15.9, 17.1], [2.8, 0.2, 0.0]),
    "r3": _fx("Canterbury", "Strip 5", "four-day", "2026-07-15", [16.1, 17.0, 18.4], [0.0, 3.3, 0.0]),
    "r4": _fx("Taunton", "Strip 11", "one-day", "2026-08-01", [13.9, 15.7, 16.9], [0.5, 0.0, 2.2]),
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    dict(id="zb_pitch_1", fault="cp1", kind="format_drift", input="taunton", root=("read_soil_probe", 2),
         failure=("submit_pitch_certificate", 1),
         description="The soil probe's second reading arrives as a volumetric fraction rather than a percentage, and the plan overwaters the strip."),
    dict(id="zb_pitch_2", fault="cp2", kind="tool_ignores_argument", input="worcester", root=("fetch_weather_forecast", 1),
         failure=("submit_pitch_certificate", 1),
         description="The forecast service ignores the ground argument and answers with its default ground's station."),
    dict(id="zb_pitch_3", fault="cp3", kind="unit_error", input="taunton", root=("compute_water_volume", 1),
         failure=("submit_pitch_certificate", 1),
         description="The water volume multiplies millimetres by the strip area in square feet, ten times the litres needed."),
    dict(id="zb_pitch_4", fault="cp4", kind="context_pollution", input="taunton", root=("assemble_briefing", 1),
         failure=("submit_pitch_certificate", 1),
         description="The briefing pulls another strip's four-day note into the mowing prompt, and the model cuts to that height."),
    dict(id="zb_pitch_5", fault="cp5", kind="stale_data", input="worcester", root=("check_cover_inventory", 1),
         failure=("submit_pitch_certificate", 1),
         description="The cover inventory is last month's cached list, which still shows a cover since withdrawn for repair."),
]


def task(inp: dict) -> str:
    return f"prepare {inp['strip']} at {inp['ground']} for the {inp['format']} match on {inp['match_date']}"


def _forecast(ground: str, days: int, rain: list) -> dict:
    station_ground = "Hove" if active("cp2") else ground
    return {"ground": station_ground, "station": STATIONS[station_ground], "days": days,
            "rain_mm": rain if station_ground == ground else [0.0] * days}


def _probe(inp: dict):
    calls = {"n": 0}

    def read(strip: str, day: int) -> str:
        calls["n"] += 1
        v = inp["readings"][day - 1]
        if calls["n"] == 2 and active("cp1"):
            return f"PROBE {strip} D{day} vwc={v / 100:.3f} clegg=71"
        return f"PROBE {strip} D{day} vwc={v:.1f}% clegg=71"
    return read


def _parse_probe(text: str) -> dict:
    fields = dict(p.split("=") for p in text.split() if "=" in p)
    day = next(t for t in text.split() if t[0] == "D" and t[1:].isdigit())
    return {"day": int(day[1:]),
            "moisture_pct": float(fields["vwc"].rstrip("%")), "clegg": int(fields["clegg"])}


def _height_rules(query: str) -> list:
    fmt = query.split(" for ")[-1]
    table = {"T20": 4.0, "one-day": 5.0, "four-day": 6.0}
    return [{"rule": f"ECB pitch guidance: {fmt} cut height", "height_mm": table[fmt], "tolerance_mm": 1.0}]


def _briefing(strip: str, rule: dict, log: list) -> dict:
    notes = [n for n in log if n["strip"] == strip]
    if active("cp4"):
        notes = log
    return {"strip": strip, "rule_height_mm": rule["height_mm"], "notes": [n["text"] for n in notes]}


PREP_LOG = [
    {"strip": "Strip 3", "text": "Strip 3: county four-day next week, cut to 8 mm and leave the grass on."},
    {"strip": "Strip 7", "text": "Strip 7: scarified in April, ends firm."},
    {"strip": "Strip 4", "text": "Strip 4: bowlers' footholds repaired."},
    {"strip": "Strip 11", "text": "Strip 11: good pace last fixture."},
]


def _inventory(ground: str) -> list:
    if active("cp5"):
        return [{"cover": "RC-4", "type": "roll-on", "listed": "2026-05-01"}, {"cover": "RC-1", "type": "roll-on", "listed": "2026-05-01"},
                {"cover": "SH-2", "type": "sheet", "listed": "2026-05-01"}]
    return [{"cover": "RC-1", "type": "roll-on", "listed": "2026-06-30"}, {"cover": "RC-2", "type": "roll-on", "listed": "2026-06-30"},
            {"cover": "SH-2", "type": "sheet", "listed": "2026-06-30"}]


def _parse_cover_plan(answer: dict) -> list:
    return [c.strip() for c in answer["covers"].split(",") if c.strip()]


def _water_volume(tasks: list) -> dict:
    area = STRIP_AREA_FT2 if active("cp3") else STRIP_AREA_M2
    mm = sum(t["water_mm"] for t in tasks)
    return {"water_mm": round(mm, 1), "litres": round(mm * area)}


def _certificate(ground: str, strip: str, fmt: str, station: str, grass_mm: float, rule: dict, readings: list,
                 water: dict, covers: list, rain: list) -> dict:
    if station != STATIONS[ground]:
        raise CertificateRejected(f"422 Unprocessable Entity: forecast station {station} is not the station registered "
                                  f"for {ground} ({STATIONS[ground]})")
    for c in covers:
        if c in OUT_OF_SERVICE:
            raise CertificateRejected(f"409 Conflict: cover {c} is out of service since 2026-05-02 and cannot be scheduled")
    if sum(1 for r in rain if r > 2.0) > len(covers):
        raise CertificateRejected(f"422 Unprocessable Entity: {sum(1 for r in rain if r > 2.0)} wet days forecast, "
                                  f"{len(covers)} covers scheduled")
    if abs(grass_mm - rule["height_mm"]) > rule["tolerance_mm"]:
        raise CertificateRejected(f"422 Unprocessable Entity: grass height {grass_mm} mm outside "
                                  f"{rule['height_mm'] - 1:.0f}-{rule['height_mm'] + 1:.0f} mm for {fmt}")
    if water["litres"] > BOWSER_L:
        raise CertificateRejected(f"422 Unprocessable Entity: water volume {water['litres']:,} l exceeds bowser capacity "
                                  f"{BOWSER_L:,} l")
    predicted = readings[-1] + 0.9 * water["water_mm"] - 1.2 * len(readings)
    if not 14.0 <= predicted <= 22.0:
        raise CertificateRejected(f"422 Unprocessable Entity: predicted match-day moisture {predicted:.1f}% outside "
                                  "14-22% band")
    return {"status": 201, "certificate": f"PC-{ground[:3].upper()}-{strip.split()[-1]}"}


def policy(request):
    op, p = read_op(request)
    if op == "decide_day_task":
        m = p["probe"]["moisture_pct"]
        if m < 15.0:
            return json.dumps({"task": "water", "water_mm": round((17.0 - m) / 0.9, 1), "roller_passes": 1})
        return json.dumps({"task": "roll", "water_mm": 0.0, "roller_passes": 3 if m > 17 else 2})
    if op == "plan_mowing":
        h = p["rule_height_mm"]
        for n in p["notes"]:
            if "cut to" in n:
                h = float(n.split("cut to ")[1].split()[0])
        return json.dumps({"grass_mm": h, "passes": 2, "direction": "end to end"})
    if op == "plan_covers":
        wet = sum(1 for r in p["rain_mm"] if r > 2.0)
        covers = [c["cover"] for c in p["inventory"] if c["type"] == "roll-on"][: max(wet, 1)]
        return json.dumps({"covers": ", ".join(covers), "wet_days": wet})
    raise ValueError(op)


def flow(h, inp: dict) -> dict:
    fx = h.step("read_fixture", "input", lambda fixture: fixture,
                fixture={k: inp[k] for k in ("ground", "strip", "format", "match_date")})
    fc = h.tool("fetch_weather_forecast", {"ground": fx["ground"], "days": 3, "rain": inp["rain_mm"]}, _forecast)
    read = _probe(inp)
    tasks, readings = [], []
    for day in (1, 2, 3):
        text = h.tool("read_soil_probe", {"strip": fx["strip"], "day": day}, read)
        probe = h.step("parse_probe_reading", "parse", _parse_probe, text=text)
        readings.append(probe["moisture_pct"])
        tasks.append(h.llm("decide_day_task", {"day": day, "probe": probe, "rain_mm": fc["rain_mm"][day - 1]}, SYSTEM))
    rule = h.retrieve("lookup_grass_height_rule", f"cut height for {fx['format']}", _height_rules)[0]
    briefing = h.step("assemble_briefing", "other", _briefing, strip=fx["strip"], rule=rule, log=PREP_LOG)
    mow = h.llm("plan_mowing", briefing, SYSTEM)
    with h.sub("covers_crew", ground=fx["ground"]) as box:
        inv = h.tool("check_cover_inventory", {"ground": fx["ground"]}, _inventory)
        plan = h.llm("plan_covers", {"inventory": inv, "rain_mm": fc["rain_mm"]}, SYSTEM)
        covers = h.step("parse_cover_plan", "parse", _parse_cover_plan, answer=plan)
        box["result"] = covers
    h.remember("remember_prep_log", "prep_log", lambda tasks, mow: {"tasks": tasks, "mow": mow}, tasks=tasks, mow=mow)
    water = h.step("compute_water_volume", "other", _water_volume, tasks=h.recall("prep_log")["tasks"])
    return h.tool("submit_pitch_certificate", {"ground": fx["ground"], "strip": fx["strip"], "fmt": fx["format"],
                                               "station": fc["station"], "grass_mm": mow["grass_mm"], "rule": rule,
                                               "readings": readings, "water": water, "covers": covers,
                                               "rain": inp["rain_mm"]}, _certificate)
