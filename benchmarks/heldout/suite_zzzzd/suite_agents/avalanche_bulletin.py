"""avalanche-bulletin: a regional avalanche warning service's morning bulletin (OpenAI Agents SDK).

The duty forecaster agent gathers the evidence in one turn of parallel tool calls (the automatic
weather stations of the region, the snowpack tests, the incident reports, the team's notes), has the
danger-rater agent (run as a tool; it reads the EAWS matrix through a tool) rate the danger, and
publishes the bulletin, which the publishing system checks against the station network and the
observation database.  Recorded by TrajdebugProcessor.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .common import Case

RUN_NAME = "avalanche-bulletin"
ROUTE = "openai_agents"
DOMAIN = "avalanche warning service: daily danger rating and bulletin per region"
SHAPE = "lead agent: one turn of 6 parallel tool calls (3 weather stations, snowpack tests, incidents, team notes) -> danger-rater agent as tool (EAWS matrix tool, rating) -> publish tool"

SWITCH: str | None = None


def _on(tag: str) -> bool:
    return SWITCH == tag  # the one place SWITCH is read


# region -> stations (name, elevation) low to high, and the places of its gazetteer
REGIONS: dict[str, dict[str, Any]] = {
    "Stubai Alps": {"stations": [("Neustift", 990), ("Mutterbergalm", 1720), ("Eisgrat", 2880)],
                    "places": ["Neustift", "Mutterbergalm", "Eisgrat", "Ranalt", "Franz-Senn-Hütte", "Fulpmes"]},
    "Ötztal Alps": {"stations": [("Obergurgl", 1940), ("Gaislachkogl", 3040), ("Brunnenkogel", 3440)],
                    "places": ["Obergurgl", "Sölden", "Vent", "Gaislachkogl", "Brunnenkogel", "Pitztal glacier"]},
    "Silvretta": {"stations": [("Galtür", 1580), ("Idalp", 2310), ("Piz Buin", 3050)],
                  "places": ["Galtür", "Ischgl", "Idalp", "Jamtal", "Piz Buin"]},
    "Karwendel": {"stations": [("Scharnitz", 960), ("Seegrube", 1905), ("Hafelekar", 2270)],
                  "places": ["Scharnitz", "Seegrube", "Hafelekar", "Hinterriß", "Gleirschtal"]},
    "Zillertal Alps": {"stations": [("Ginzling", 1000), ("Tuxer Joch", 2310), ("Hintertux", 3250)],
                       "places": ["Ginzling", "Mayrhofen", "Tuxer Joch", "Hintertux", "Zillergrund"]},
}

# (region, date) -> station readings (24 h), tests, incidents, notes
DAYS: dict[tuple[str, str], dict[str, Any]] = {
    ("Stubai Alps", "2024-12-14"): {
        "weather": {"Neustift": (8, 15, "W", -2.1), "Mutterbergalm": (22, 30, "W", -6.4), "Eisgrat": (34, 62, "NW", -13.8)},
        "tests": [("2024-12-13", "Franz-Senn-Hütte", "ECTN 14", "2450 m N"), ("2024-12-12", "Eisgrat", "ECTX", "2900 m NE")],
        "incidents": [],
        "notes": "Stubai: drifting at ridge level all afternoon, fresh slabs behind ridges above 2400 m (Ranalt team)."},
    ("Ötztal Alps", "2024-12-14"): {
        "weather": {"Obergurgl": (12, 20, "W", -7.0), "Gaislachkogl": (18, 38, "NW", -12.2), "Brunnenkogel": (19, 72, "NW", -16.5)},
        "tests": [("2024-12-13", "Vent", "ECTN 18", "2600 m NE")],
        "incidents": [("2024-12-13", "Sölden", "natural slab, size 3, NE 2750 m, no persons involved")],
        "notes": "Ötztal: natural slab size 3 below Gaislachkogl (Sölden) yesterday; shooting cracks near Vent."},
    ("Silvretta", "2024-12-15"): {
        "weather": {"Galtür": (2, 25, "S", -4.0), "Idalp": (4, 48, "S", -8.1), "Piz Buin": (11, 66, "S", -14.0)},
        "tests": [("2024-12-14", "Jamtal", "ECTX", "2500 m N"), ("2024-12-13", "Idalp", "ECTN 22", "2300 m NW"),
                  ("2024-12-05", "Jamtal", "ECTP 12", "2650 m N"), ("2024-12-03", "Ischgl", "ECTP 15", "2400 m NE")],
        "incidents": [],
        "notes": "Silvretta: old snow well bonded after the warm spell, small wind slabs in gullies above 2400 m."},
    ("Karwendel", "2024-12-15"): {
        "weather": {"Scharnitz": (28, 12, "N", -3.2), "Seegrube": (41, 35, "N", -7.5), "Hafelekar": (44, 58, "NW", -9.9)},
        "tests": [("2024-12-14", "Hinterriß", "ECTN 11", "1800 m N")],
        "incidents": [("2024-12-14", "Seegrube", "skier-triggered loose snow, size 1, N 1900 m")],
        "notes": "Karwendel: 40 cm of new snow, loose-snow releases from steep gullies, slabs forming on lee slopes."},
    ("Zillertal Alps", "2024-12-16"): {
        "weather": {"Ginzling": (9, 10, "N", -2.8), "Tuxer Joch": (21, 28, "NW", -8.6), "Hintertux": (36, 40, "NW", -15.1)},
        "tests": [("2024-12-15", "Zillergrund", "ECTN 16", "2200 m NE")],
        "incidents": [],
        "notes": "Zillertal: steady snowfall above 2000 m overnight, visibility poor, no observations from the glacier."},
}
# What the team's notes database holds for a date, across regions.
NOTES_BY_DATE: dict[str, list[tuple[str, str]]] = {}
for (_r, _d), _day in DAYS.items():
    NOTES_BY_DATE.setdefault(_d, []).append((_r, _day["notes"]))

INPUTS: list[dict[str, Any]] = [
    {"task": f"avalanche bulletin {r}, {d}", "region": r, "date": d}
    for r, d in [("Stubai Alps", "2024-12-14"), ("Ötztal Alps", "2024-12-14"), ("Silvretta", "2024-12-15"),
                 ("Karwendel", "2024-12-15"), ("Zillertal Alps", "2024-12-16")]
]

CASES = [
    Case("av1", 0, "notes-by-date", "context_pollution", ("team_notes", 1), ("publish_bulletin", 1),
         "The team-notes tool returned every region's notes for the date, and the Ötztal note about a natural slab "
         "below Gaislachkogl went into the Stubai bulletin's summary, which the publishing system refused."),
    Case("av2", 3, "sublevel", "format_drift", ("response", 4), ("publish_bulletin", 1),
         "The danger-rater agent answered the Karwendel level as '3+' (the service's internal sub-level notation) "
         "instead of a danger level, and the publish call failed its schema."),
    Case("av3", 1, "skip-summit", "plan_error", ("response", 1), ("publish_bulletin", 1),
         "The forecaster's first turn left Brunnenkogel, the region's summit station, out of its weather calls, so "
         "the 72 km/h wind there never reached the rating and the bulletin lacked the wind-slab problem."),
    Case("av4", 2, "days-window", "tool_ignores_argument", ("snowpack_observations", 1), ("publish_bulletin", 1),
         "The snowpack tool ignored days=3 and returned two weeks of tests, so the rating took up a persistent weak "
         "layer from tests ten days old, which the publishing system refused as evidence."),
    Case("av5", 4, "station-503", "swallowed_error", ("station_weather", 3), ("publish_bulletin", 1),
         "The Hintertux station's API answered 503 and the weather tool returned zeros instead of an error, so the "
         "36 cm of new snow there never reached the rating and the bulletin lacked the new-snow problem."),
]

# --------------------------------------------------------------------------------------------------
# Tools.
# --------------------------------------------------------------------------------------------------

_ctx: dict[str, Any] = {}


class StationOffline(RuntimeError):
    pass


def _station_api(region: str, station: str) -> tuple[int, int, str, float]:
    if _on("station-503") and station == REGIONS[region]["stations"][-1][0]:
        raise StationOffline(f"HTTP 503 from the station network for {station}")
    return DAYS[(region, _ctx["date"])]["weather"][station]


@function_tool
def station_weather(region: str, station: str, hours: int = 24) -> dict:
    """New snow, peak wind and air temperature of an automatic weather station over the last hours."""
    try:
        snow, wind, direction, temp = _station_api(region, station)
    except StationOffline:
        snow, wind, direction, temp = 0, 0, "-", 0.0
    elev = dict(REGIONS[region]["stations"])[station]
    return {"station": station, "elevation_m": elev, "hours": hours, "new_snow_cm": snow, "max_wind_kmh": wind,
            "wind_dir": direction, "air_temp_c": temp}


def _days_before(date: str, other: str) -> int:
    return int(date[8:10]) - int(other[8:10])


@function_tool
def snowpack_observations(region: str, days: int = 3) -> list[dict]:
    """Stability tests observed in a region over the last days."""
    window = 14 if _on("days-window") else days
    tests = DAYS[(region, _ctx["date"])]["tests"]
    return [{"date": d, "place": p, "test": t, "slope": s} for d, p, t, s in tests if _days_before(_ctx["date"], d) <= window]


@function_tool
def incident_reports(region: str, since: str) -> list[dict]:
    """Avalanche incidents and observed avalanches reported in a region since a date."""
    return [{"date": d, "place": p, "report": t} for d, p, t in DAYS[(region, _ctx["date"])]["incidents"] if d >= since]


@function_tool
def team_notes(region: str, date: str) -> list[dict]:
    """The observer team's notes for a region and day."""
    rows = NOTES_BY_DATE.get(date, [])
    if not _on("notes-by-date"):
        rows = [(r, n) for r, n in rows if r == region]
    return [{"date": date, "note": n} for _r, n in rows]


EAWS = {("poor", "some", 2): 3, ("poor", "some", 3): 3, ("poor", "many", 3): 4, ("fair", "some", 2): 2,
        ("fair", "a few", 2): 2, ("good", "a few", 1): 1, ("poor", "a few", 2): 2, ("fair", "some", 3): 3}


@function_tool
def eaws_matrix(stability: str, frequency: str, size: int) -> dict:
    """The EAWS matrix: danger level for a snowpack stability, a frequency of weak spots and an avalanche size."""
    level = EAWS.get((stability, frequency, size), 2)
    return {"stability": stability, "frequency": frequency, "size": size, "danger_level": level}


@function_tool(failure_error_function=None)
def publish_bulletin(region: str, date: str, danger_level: int, problems: list[str], elevation: str, summary: str) -> dict:
    """Publish the region's avalanche bulletin (checked against the station network and the observation database)."""
    if not 1 <= danger_level <= 5:
        raise ValueError(f"{region}: danger level {danger_level} is not on the 1-5 scale")
    day = DAYS[(region, date)]
    for station, (snow, wind, _d, _t) in day["weather"].items():
        if snow >= 30 and "new snow" not in problems:
            raise ValueError(f"{region}: {snow} cm of new snow in 24 h at {station}; the bulletin lists no new-snow problem")
        if wind >= 50 and snow >= 10 and "wind slab" not in problems:
            raise ValueError(f"{region}: wind {wind} km/h with {snow} cm new snow at {station}; the bulletin lists no "
                             f"wind-slab problem")
    if "persistent weak layers" in problems:
        recent = [t for t in day["tests"] if t[2].startswith("ECTP") and _days_before(date, t[0]) <= 3]
        if not recent:
            old = [f"{t[2]} of {t[0]}" for t in day["tests"] if t[2].startswith("ECTP")]
            raise ValueError(f"{region}: the persistent-weak-layer problem rests on {', '.join(old)}, outside the 72 h "
                             f"observation window")
    gazetteer = {p for r in REGIONS.values() for p in r["places"]}
    for place in sorted(gazetteer):
        if place in summary and place not in REGIONS[region]["places"]:
            owner = next(r for r, v in REGIONS.items() if place in v["places"])
            raise ValueError(f"{region}: the summary cites {place}, which lies in the {owner}")
    return {"region": region, "date": date, "danger_level": danger_level, "status": "published",
            "url": f"https://lawinen.report/bulletin/{date}"}


# --------------------------------------------------------------------------------------------------
# The model's side (Responses API requests from the Agents SDK).
# --------------------------------------------------------------------------------------------------


def _outputs(items: list[Any]) -> dict[str, list[Any]]:
    calls = {i["call_id"]: i["name"] for i in items if isinstance(i, dict) and i.get("type") == "function_call"}
    out: dict[str, list[Any]] = {}
    for i in items:
        if isinstance(i, dict) and i.get("type") == "function_call_output":
            try:
                value = ast.literal_eval(i["output"])
            except (ValueError, SyntaxError):
                value = i["output"]
            out.setdefault(calls.get(i["call_id"], "?"), []).append(value)
    return out


def _user_text(items: list[Any]) -> str:
    for i in items:
        if isinstance(i, dict) and i.get("role") == "user":
            c = i.get("content")
            return c if isinstance(c, str) else " ".join(p.get("text", "") for p in c)
    return ""


def _rate(evidence: dict) -> dict:
    """The danger rater's reading of the evidence: problems, then stability, frequency and size."""
    problems = []
    snow = max((w["new_snow_cm"] for w in evidence["weather"]), default=0)
    windy = [w for w in evidence["weather"] if w["max_wind_kmh"] >= 50 and w["new_snow_cm"] >= 10]
    if snow >= 30:
        problems.append("new snow")
    if windy or (snow >= 20 and any(w["max_wind_kmh"] >= 35 for w in evidence["weather"])):
        problems.append("wind slab")
    if any(t["test"].startswith("ECTP") for t in evidence["tests"]):
        problems.append("persistent weak layers")
    if not problems:
        problems.append("no distinct problem")
    stability = "poor" if ("new snow" in problems or windy) else ("fair" if len(problems) > 0 else "good")
    frequency = "some" if snow >= 20 or "persistent weak layers" in problems else "a few"
    size = 3 if any("size 3" in i["report"] for i in evidence["incidents"]) or snow >= 40 else 2
    return {"problems": problems, "stability": stability, "frequency": frequency, "size": size}


def brain(request: Any) -> Any:
    body = request.body
    instructions = body.get("instructions") or ""
    items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
    out = _outputs(items)
    user = _user_text(items)
    if instructions.startswith("You rate avalanche danger"):
        evidence = json.loads(user[user.index("{"):])
        r = _rate(evidence)
        if "eaws_matrix" not in out:
            return Reply(tool_calls=(tool_call("eaws_matrix", {"stability": r["stability"], "frequency": r["frequency"],
                                                               "size": r["size"]}),))
        level = out["eaws_matrix"][0]["danger_level"]
        shown: Any = f"{level}+" if _on("sublevel") else level
        low = min(w["elevation_m"] for w in evidence["weather"] if w["new_snow_cm"] >= 15) if any(
            w["new_snow_cm"] >= 15 for w in evidence["weather"]) else 2200
        return json.dumps({"danger_level": shown, "problems": r["problems"], "elevation": f"above {low // 100 * 100} m"})
    # the duty forecaster
    m = re.search(r"bulletin for (.+) on (\d{4}-\d\d-\d\d)", user)
    region, date = m.group(1), m.group(2)
    if not out:
        stations = [s for s, _e in REGIONS[region]["stations"]]
        if _on("skip-summit"):
            stations = stations[:-1]
        since = f"{date[:8]}{int(date[8:]) - 1:02d}"
        return Reply(tool_calls=tuple(tool_call("station_weather", {"region": region, "station": s, "hours": 24}) for s in stations) + (
            tool_call("snowpack_observations", {"region": region, "days": 3}),
            tool_call("incident_reports", {"region": region, "since": since}),
            tool_call("team_notes", {"region": region, "date": date})))
    if "danger_rater" not in out:
        evidence = {"region": region, "date": date, "weather": out.get("station_weather", []),
                    "tests": out["snowpack_observations"][0], "incidents": out["incident_reports"][0],
                    "notes": [n["note"] for n in out["team_notes"][0]]}
        return Reply(tool_calls=(tool_call("danger_rater", {"input": "Rate the danger from this evidence: " + json.dumps(evidence, ensure_ascii=False)}),))
    rating = out["danger_rater"][0]
    rating = json.loads(rating) if isinstance(rating, str) else rating
    if "publish_bulletin" not in out:
        notes = [n["note"] for n in out["team_notes"][0]]
        observed = " ".join(n.split(": ", 1)[1] for n in notes)
        summary = (f"Danger level {rating['danger_level']} {rating['elevation']}: {', '.join(rating['problems'])}. "
                   f"Observations: {observed}")
        return Reply(tool_calls=(tool_call("publish_bulletin", {"region": region, "date": date,
                                                                "danger_level": rating["danger_level"],
                                                                "problems": rating["problems"],
                                                                "elevation": rating["elevation"], "summary": summary}),))
    return f"Bulletin for {region} on {date} published: level {rating['danger_level']}, {', '.join(rating['problems'])}."


# --------------------------------------------------------------------------------------------------
# The agents.
# --------------------------------------------------------------------------------------------------

_lead: Agent | None = None
_base_url = ""


def setup(server: Any) -> None:
    global _lead, _base_url
    _base_url = server.base_url
    set_default_openai_api("responses")
    m = server.model
    rater = Agent(name="danger_rater", model=m, tools=[eaws_matrix],
                  instructions="You rate avalanche danger with the EAWS matrix and answer JSON: danger_level, problems, elevation.")
    _lead = Agent(name="duty_forecaster", model=m,
                  instructions="You are the duty avalanche forecaster: gather the evidence, have it rated, publish the bulletin.",
                  tools=[station_weather, snowpack_observations, incident_reports, team_notes,
                         rater.as_tool(tool_name="danger_rater", tool_description="Rate the avalanche danger from the evidence."),
                         publish_bulletin])


def teardown() -> None:
    global _lead
    set_trace_processors([])
    _lead = None


async def _forecast(inp: dict) -> None:
    client = AsyncOpenAI(base_url=_base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client, use_for_tracing=False)
    try:
        await Runner.run(_lead, f"Write the avalanche bulletin for {inp['region']} on {inp['date']}.",
                         run_config=RunConfig(workflow_name=RUN_NAME), max_turns=8)
    finally:
        await client.close()


def run_once(inp: dict, path: Path) -> None:
    _ctx.clear()
    _ctx["date"] = inp["date"]
    processor = TrajdebugProcessor(path=str(path), name=RUN_NAME, task=inp["task"])
    set_trace_processors([processor])
    try:
        asyncio.run(_forecast(inp))
    except Exception:  # noqa: BLE001 - the trace records it; the generator checks the outcome
        pass
    finally:
        set_trace_processors([])
