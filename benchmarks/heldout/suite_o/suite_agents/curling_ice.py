"""Curling-rink ice preparation for a bonspiel day (recorded with trajdebug's own SDK).

Arena climate and dew point, the dehumidifier, the fixtures and the draw, per-sheet ice forecasts and
thickness, a scripted model summarising the plant status (parsed back), the brine schedule, a scripted
model planning the crew's task order, the ice crew's tasks per sheet, the pre-game inspection, the checks,
and publishing the draw to the league.
"""

from __future__ import annotations

import json
import math

from benchmarks.heldout.suite_o import kit

import trajdebug


NAME = "curling-ice"
ROUTE = "sdk"
DOMAIN = "curling-rink ice preparation"
SHAPE = "input, climate tool, dew-point code, dehumidifier tool, fixtures tool, draw; per sheet (3-5) a container of 3 leaves; llm summary + parse; brine tool; llm task plan; crew task tools per sheet and task; inspections; check; publish"

_ARENA: dict[str, object] = {}  # the physical arena (not visible to the agent)

INPUTS = {
    "perth": {
        "club": "Perth Granite CC",
        "date": "2026-01-17",
        "hour": 9,
        "sheets": ["A", "B", "C", "D"],
        "air_c": 7.0,
        "rh": 64,
        "ice": {
            "A": (-4.6, -7.9, 31.0),
            "B": (-4.4, -7.6, 31.2),
            "C": (-4.7, -8.1, 30.8),
            "D": (-4.5, -7.7, 31.4),
        },
        "games": 8,
    },
    "oban": {
        "club": "Oban Stones",
        "date": "2026-01-24",
        "hour": 10,
        "sheets": ["A", "B", "C"],
        "air_c": 8.5,
        "rh": 58,
        "ice": {"A": (-4.3, -7.2, 31.1), "B": (-4.5, -7.5, 30.9), "C": (-4.6, -7.4, 30.6)},
        "games": 6,
    },
    "kinross": {
        "club": "Kinross Rink",
        "date": "2026-02-07",
        "hour": 9,
        "sheets": ["A", "B", "C", "D", "E"],
        "air_c": 6.0,
        "rh": 70,
        "ice": {
            "A": (-4.5, -7.8, 31.3),
            "B": (-4.4, -7.9, 30.7),
            "C": (-4.6, -8.0, 31.0),
            "D": (-4.5, -7.6, 30.5),
            "E": (-4.7, -7.7, 31.2),
        },
        "games": 10,
    },
    "dunkeld": {
        "club": "Dunkeld Curling",
        "date": "2026-02-14",
        "hour": 11,
        "sheets": ["A", "B", "C", "D"],
        "air_c": 9.0,
        "rh": 49,
        "ice": {
            "A": (-4.4, -7.1, 30.9),
            "B": (-4.6, -7.3, 31.4),
            "C": (-4.5, -7.0, 31.1),
            "D": (-4.3, -7.4, 30.8),
        },
        "games": 8,
    },
    "forfar": {
        "club": "Forfar Ice",
        "date": "2026-02-21",
        "hour": 9,
        "sheets": ["A", "B", "C"],
        "air_c": 7.5,
        "rh": 61,
        "ice": {"A": (-4.6, -7.9, 30.6), "B": (-4.5, -8.2, 31.0), "C": (-4.4, -7.8, 31.3)},
        "games": 6,
    },
    "elgin": {
        "club": "Elgin Sheets",
        "date": "2026-02-28",
        "hour": 10,
        "sheets": ["A", "B", "C", "D"],
        "air_c": 8.0,
        "rh": 66,
        "ice": {
            "A": (-4.5, -7.5, 31.2),
            "B": (-4.6, -7.7, 30.9),
            "C": (-4.4, -7.9, 31.5),
            "D": (-4.5, -7.6, 31.0),
        },
        "games": 8,
    },
}

FAULTS = [
    {
        "id": "curl.climate_cache",
        "kind": "stale_data",
        "input": "perth",
        "root": "fetch_arena_climate",
        "marker": "2026-01-16T21:40",
        "note": "the climate service answers from last night's cached reading",
    },
    {
        "id": "curl.fixtures_page",
        "kind": "truncated_result",
        "input": "elgin",
        "root": "fetch_fixtures",
        "marker": "page=2",
        "note": "the fixtures service returns only its first page",
    },
    {
        "id": "curl.forecast_hour",
        "kind": "tool_ignores_argument",
        "input": "oban",
        "root": "fetch_ice_forecast",
        "marker": "T06:00",
        "note": "the ice forecast ignores the hour asked for and answers for 06:00",
    },
    {
        "id": "curl.summary_thickness",
        "kind": "hallucinated_value",
        "input": "forfar",
        "root": "summarize_plant_status",
        "marker": "36.5",
        "note": "the model's plant summary states a thickness for sheet B that no reading holds",
    },
    {
        "id": "curl.task_order",
        "kind": "plan_error",
        "input": "dunkeld",
        "root": "plan_crew_tasks",
        "marker": "pebble>scrape",
        "note": "the model plans the pebble before the scrape",
    },
]


def task(inp: dict) -> str:
    return f"Prepare {len(inp['sheets'])} sheets at {inp['club']} for the {inp['date']} bonspiel ({inp['hour']:02d}:00 draw)"


@trajdebug.step(kind="input")
def read_event_request(request: dict) -> dict:
    return {k: request[k] for k in ("club", "date", "hour", "sheets")}


@trajdebug.step(kind="tool")
def fetch_arena_climate(club: str, date: str) -> dict:
    inp = _ARENA["inp"]
    if kit.active("curl.climate_cache"):
        return {"club": club, "observed_at": "2026-01-16T21:40", "air_c": 6.5, "rh_pct": 38}
    return {"club": club, "observed_at": f"{date}T05:50", "air_c": inp["air_c"], "rh_pct": inp["rh"]}


@trajdebug.step(kind="other")
def compute_dew_point(climate: dict) -> dict:
    a, b = 17.62, 243.12
    g = math.log(climate["rh_pct"] / 100) + a * climate["air_c"] / (b + climate["air_c"])
    return {"dew_point_c": round(b * g / (a - g), 1), "ice_target_c": -4.5}


@trajdebug.step(kind="tool")
def schedule_dehumidifier(dew: dict, hour: int) -> dict:
    on = dew["dew_point_c"] > dew["ice_target_c"] - 2.0
    _ARENA["dehumidifier"] = on
    return {"unit": "DH-1", "running": on, "from": f"{hour - 3:02d}:00"}


@trajdebug.step(kind="tool")
def fetch_fixtures(club: str, date: str) -> dict:
    n = _ARENA["inp"]["games"]
    games = [{"game": f"G{i}", "teams": [f"T{2 * i - 1}", f"T{2 * i}"]} for i in range(1, n + 1)]
    if kit.active("curl.fixtures_page"):
        return {"club": club, "date": date, "games": games[:6], "next": "page=2"}
    return {"club": club, "date": date, "games": games, "next": None}


@trajdebug.step(kind="other")
def build_draw(fixtures: dict, sheets: list[str], hour: int) -> list[dict]:
    draw = []
    for i, g in enumerate(fixtures["games"]):
        draw.append(
            {
                "game": g["game"],
                "sheet": sheets[i % len(sheets)],
                "start": f"{hour + 2 * (i // len(sheets)):02d}:00",
            }
        )
    return draw


@trajdebug.step(kind="tool")
def fetch_ice_forecast(sheet: str, date: str, hour: int) -> dict:
    now, early, _ = _ARENA["inp"]["ice"][sheet]
    if kit.active("curl.forecast_hour"):
        hour, now = 6, early
    return {"sheet": sheet, "valid_at": f"{date}T{hour:02d}:00", "ice_c": now}


@trajdebug.step(kind="tool")
def read_ice_thickness(sheet: str) -> dict:
    return {"sheet": sheet, "thickness_mm": _ARENA["inp"]["ice"][sheet][2]}


@trajdebug.step(kind="other")
def compute_brine_setpoint(forecast: dict, target_c: float) -> dict:
    return {"sheet": forecast["sheet"], "brine_c": round(-7.5 + (target_c - forecast["ice_c"]), 1)}


@trajdebug.step(kind="llm")
def summarize_plant_status(messages: list[dict]) -> dict:
    facts = json.loads(messages[-1]["content"])
    rows = []
    for sheet, f in facts.items():
        thickness = f["thickness_mm"]
        if sheet == "B" and kit.active("curl.summary_thickness"):
            thickness = 36.5
        rows.append(f"Sheet {sheet}: brine {f['brine_c']} C, ice {thickness} mm")
    return {"role": "assistant", "content": "Plant status\n" + "\n".join(rows)}


@trajdebug.step(kind="parse")
def parse_plant_summary(text: str) -> dict:
    out = {}
    for line in text.splitlines()[1:]:
        sheet = line.split(":")[0].split()[1]
        brine = float(line.split("brine ")[1].split()[0])
        ice = float(line.split("ice ")[1].split()[0])
        out[sheet] = {"brine_c": brine, "thickness_mm": ice}
    return out


@trajdebug.step(kind="tool")
def commit_plant_schedule(plan: dict) -> dict:
    for sheet, p in plan.items():
        if not -9.0 <= p["brine_c"] <= -5.0:
            raise RuntimeError(
                f"plant controller: E-217 sheet {sheet} setpoint {p['brine_c']} C outside compressor band"
            )
    return {"accepted": sorted(plan), "controller": "PC-2"}


@trajdebug.step(kind="llm")
def plan_crew_tasks(messages: list[dict]) -> dict:
    order = "pebble>scrape>nip" if kit.active("curl.task_order") else "scrape>pebble>nip"
    return {"role": "assistant", "content": json.dumps({"sequence": order, "crew": 2})}


@trajdebug.step(kind="tool")
def run_ice_task(sheet: str, action: str, cut_mm: float | None = None) -> dict:
    done = _ARENA.setdefault("done", {}).setdefault(sheet, [])
    if action == "scrape" and (cut_mm is None or cut_mm > 1.5 or cut_mm < 0):
        raise RuntimeError(
            f"scraper: cut of {cut_mm} mm refused on sheet {sheet} (blade limit 1.5 mm per pass)"
        )
    done.append(action)
    return {"sheet": sheet, "action": action, "status": "done"}


@trajdebug.step(kind="tool")
def measure_pebble(sheet: str) -> dict:
    done = _ARENA["done"][sheet]
    ok = "pebble" in done and done.index("pebble") > done.index("scrape")
    return {"sheet": sheet, "pebble_mm": 1.1 if ok else 0.0}


@trajdebug.step(kind="tool")
def inspect_frost(sheets: list[str]) -> dict:
    frost = not _ARENA.get("dehumidifier") and _ARENA["true_dew"] > -4.5 - 2.0
    return dict.fromkeys(sheets, "frost" if frost else "clear")


@trajdebug.step(kind="condition")
def check_sheets_ready(pebble: dict, frost: dict) -> str:
    for sheet, p in pebble.items():
        if p["pebble_mm"] < 0.8:
            raise RuntimeError(
                f"pre-game inspection: sheet {sheet} pebble {p['pebble_mm']} mm, below 0.8 mm; draw delayed"
            )
        if frost[sheet] != "clear":
            raise RuntimeError(
                f"pre-game inspection: sheet {sheet} shows hoar frost on the pebble; draw delayed"
            )
    return "ready"


@trajdebug.step(kind="tool")
def publish_draw(club: str, date: str, draw: list[dict]) -> dict:
    expected = _ARENA["inp"]["games"]
    if len(draw) != expected:
        raise RuntimeError(
            f"league portal: 422 draw for {club} on {date} does not cover the registered fixtures"
        )
    return {"published": True, "games": len(draw)}


def run(inp: dict) -> None:
    _ARENA.clear()
    _ARENA["inp"] = inp
    a, b = 17.62, 243.12
    g = math.log(inp["rh"] / 100) + a * inp["air_c"] / (b + inp["air_c"])
    _ARENA["true_dew"] = b * g / (a - g)
    req = read_event_request(inp)
    climate = fetch_arena_climate(req["club"], req["date"])
    dew = compute_dew_point(climate)
    schedule_dehumidifier(dew, req["hour"])
    fixtures = fetch_fixtures(req["club"], req["date"])
    draw = build_draw(fixtures, req["sheets"], req["hour"])
    facts = {}
    for sheet in req["sheets"]:
        with trajdebug.step("prepare_sheet", kind="agent", input={"sheet": sheet}):
            forecast = fetch_ice_forecast(sheet, req["date"], req["hour"])
            thick = read_ice_thickness(sheet)
            brine = compute_brine_setpoint(forecast, dew["ice_target_c"])
            facts[sheet] = {"brine_c": brine["brine_c"], "thickness_mm": thick["thickness_mm"]}
    summary = summarize_plant_status(
        [
            {"role": "system", "content": "Summarise the ice plant status, one line per sheet."},
            {"role": "user", "content": json.dumps(facts)},
        ]
    )
    plant = parse_plant_summary(summary["content"])
    commit_plant_schedule(plant)
    plan = plan_crew_tasks(
        [
            {"role": "system", "content": "Plan the ice crew's task order for the morning. Answer JSON."},
            {
                "role": "user",
                "content": json.dumps({"sheets": req["sheets"], "tasks": ["scrape", "pebble", "nip"]}),
            },
        ]
    )
    order = json.loads(plan["content"])["sequence"].split(">")
    for sheet in req["sheets"]:
        with trajdebug.step("crew_sheet", kind="agent", input={"sheet": sheet}):
            for action in order:
                cut = round(plant[sheet]["thickness_mm"] - 30.0, 1) if action == "scrape" else None
                run_ice_task(sheet, action, cut)
    pebble = {s: measure_pebble(s) for s in req["sheets"]}
    frost = inspect_frost(req["sheets"])
    check_sheets_ready(pebble, frost)
    publish_draw(req["club"], req["date"], draw)
