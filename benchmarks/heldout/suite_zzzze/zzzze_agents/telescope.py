"""A service-mode night planner for a 2.1-m telescope: read tonight's queue, moon and seeing forecast,
get each candidate target's ephemeris and instrument overheads (parallel tool calls), ask the calibration
planner sub-agent for the twilight calibrations, and commit the night plan to the observatory scheduler,
which checks every block.

Route: the OpenAI Agents SDK (Responses API against the fake model) with trajdebug's tracing processor, JSONL.
"""

from __future__ import annotations

import asyncio
import json
import math
from datetime import date, timedelta

from pydantic import BaseModel

from .common import RT, json_block, last_user, read_value, system_text, tool_exchanges, user_texts

NAME = "telescope-night-planner"
ROUTE = "openai_agents"
DOMAIN = "observatory service-mode queue scheduling (astronomy)"
SHAPE = (
    "planner agent: parallel queue/moon/seeing tools -> plan text + parallel ephemeris and instrument-setup "
    "tools for every candidate -> calibration planner agent-as-tool (own turns: standard-star tool, JSON) -> "
    "commit tool (the scheduler's checks; raises) -> final answer"
)
SWITCH: str | None = None

SITE_LAT, SITE_LON = 37.22, -2.55
MIN_ALT = 30.0
CATALOGUE_EPOCH = date(2026, 1, 1)  # the ephemeris service's default night
OVERHEAD_MIN = {"imaging": 10, "spectroscopy": 25}
GRADE_ORDER = {"A": 0, "B": 1, "C": 2}
MOON_LIMIT = {"dark": 50, "grey": 80, "any": 100}

TARGETS = {
    "NGC 2903": ("09h32m10s", "+21d30m"), "M 51": ("13h29m53s", "+47d12m"), "NGC 4565": ("12h36m21s", "+25d59m"),
    "M 81": ("09h55m33s", "+69d04m"), "M 101": ("14h03m13s", "+54d21m"), "NGC 3628": ("11h20m17s", "+13d35m"),
    "M 67": ("08h51m18s", "+11d49m"), "NGC 2261": ("06h39m10s", "+08d44m"), "NGC 2683": ("08h52m41s", "+33d25m"),
    "NGC 5907": ("15h15m54s", "+56d19m"), "NGC 4725": ("12h50m27s", "+25d30m"), "NGC 2392": ("07h29m11s", "+20d55m"),
    "AT 2026cxd": ("11h52m08s", "+36d54m"), "SN 2026bkq": ("10h18m41s", "+41d25m"),
}


def _p(pid, target, mode, hours, grade, seeing_max=2.0, moon="any", too=False, coords=True):
    ra, dec = TARGETS[target] if coords else (None, None)
    return {"id": pid, "target": target, "ra": ra, "dec": dec, "mode": mode, "hours": hours, "grade": grade,
            "constraints": {"seeing_max": seeing_max, "moon": moon, "min_altitude_deg": MIN_ALT},
            "too": too, **({"note": "alert position: resolve the target by name"} if not coords else {})}


NIGHTS = {
    "2026-02-11": {"moon": 21, "seeing": 1.0, "queue": [
        _p("P110-03", "NGC 2903", "imaging", 1.5, "A", seeing_max=1.2),
        _p("P111-08", "M 51", "spectroscopy", 2.0, "A"),
        _p("P112-07", "NGC 3628", "imaging", 1.0, "B"),
        _p("P114-02", "AT 2026cxd", "spectroscopy", 1.0, "B", too=True)]},
    "2026-02-12": {"moon": 30, "seeing": 1.4, "queue": [
        _p("P110-05", "NGC 2683", "imaging", 1.5, "A", seeing_max=0.8),
        _p("P113-01", "M 81", "spectroscopy", 2.0, "A"),
        _p("P112-09", "NGC 4565", "imaging", 1.5, "B"),
        _p("P115-04", "M 101", "spectroscopy", 1.5, "B")]},
    "2026-02-18": {"moon": 4, "seeing": 1.1, "queue": [
        _p("P116-02", "NGC 2261", "spectroscopy", 2.0, "A"),
        _p("P110-11", "M 67", "imaging", 1.5, "A"),
        _p("P113-06", "NGC 4565", "imaging", 2.0, "B"),
        _p("P117-01", "M 101", "spectroscopy", 1.5, "B")]},
    "2026-02-20": {"moon": 12, "seeing": 0.9, "queue": [
        _p("P111-09", "M 51", "imaging", 1.5, "A", moon="grey"),
        _p("P114-05", "SN 2026bkq", "spectroscopy", 1.0, "B", too=True, coords=False),
        _p("P118-03", "NGC 4725", "imaging", 1.5, "B"),
        _p("P112-11", "NGC 2392", "spectroscopy", 1.0, "C")]},
    "2026-02-24": {"moon": 62, "seeing": 1.0, "queue": [
        _p("P109-11", "NGC 5907", "imaging", 1.5, "A", moon="dark"),
        _p("P113-08", "NGC 2903", "spectroscopy", 2.0, "A", moon="grey"),
        _p("P118-05", "M 51", "imaging", 1.5, "B"),
        _p("P112-12", "M 67", "spectroscopy", 1.0, "B", moon="grey")]},
}
DUSK, DAWN = "19:10", "05:55"
INPUTS = {n: {"task": f"service-mode night plan for {n}", "night": n} for n in NIGHTS}


def _calls(name):
    return lambda s: any(c.get("name") == name for c in (s.output or {}).get("tool_calls") or [])


CASES = [
    {"n": 1, "input": "2026-02-11", "kind": "plan_error", "root": ("response", _calls("target_ephemeris")),
     "failure": ("commit_night_plan", 1),
     "description": "The planner's plan for the night keeps only grade-A programmes and the B-graded P112-07, "
                    "leaving out the activated target-of-opportunity P114-02 that must be observed tonight.",
     "what": "plan drops the activated ToO"},
    {"n": 2, "input": "2026-02-12", "kind": "stale_data", "root": ("seeing_forecast", 1),
     "failure": ("commit_night_plan", 1),
     "description": "The seeing forecast tool answers from its cache with the previous night's forecast "
                    "(0.7 arcsec, issued 2026-02-11) instead of tonight's 1.4 arcsec.",
     "what": "yesterday's seeing forecast served from cache"},
    {"n": 3, "input": "2026-02-18", "kind": "tool_ignores_argument", "root": ("target_ephemeris", 1),
     "failure": ("commit_night_plan", 1),
     "description": "The ephemeris tool ignores the night it is given and computes rise, transit and set for "
                    "its default night of 2026-01-01, about three hours off for 2026-02-18.",
     "what": "ephemeris computed for 2026-01-01, not the night asked"},
    {"n": 4, "input": "2026-02-20", "kind": "hallucinated_value", "root": ("response", _calls("commit_night_plan")),
     "failure": ("commit_night_plan", 1),
     "description": "When committing, the planner fills the position of SN 2026bkq with coordinates of its own "
                    "(09h55m33s +69d03m) instead of the 10h18m41s +41d25m the ephemeris tool returned.",
     "what": "ToO coordinates made up in the commit"},
    {"n": 5, "input": "2026-02-24", "kind": "unit_error", "root": ("moon_info", 1),
     "failure": ("commit_night_plan", 1),
     "description": "The moon tool reports tonight's illumination as the fraction 0.62 where its callers expect "
                    "a percentage, so the moon looks dark enough for the dark-time programme P109-11.",
     "what": "illumination 0.62 (fraction) read as percent"},
]

# ---------------------------------------------------------------- astronomy


def _hm_to_min(t: str) -> int:
    """HH:MM UT -> minutes after 12:00 UT."""
    h, m = (int(x) for x in t.split(":"))
    return ((h - 12) % 24) * 60 + m


def _min_to_hm(m: float) -> str:
    m = int(round(m)) % 1440
    t = (m + 720) % 1440
    return f"{t // 60:02d}:{t % 60:02d}"


def _ra_deg(ra: str) -> float:
    return 15 * (float(ra[0:2]) + float(ra[3:5]) / 60 + float(ra[6:8]) / 3600)


def _dec_deg(dec: str) -> float:
    return (-1 if dec[0] == "-" else 1) * (float(dec[1:3]) + float(dec[4:6]) / 60)


def _window(ra: str, dec: str, night: date) -> tuple[float, float, float]:
    dj = (night - date(2000, 1, 1)).days
    lst_noon = (280.46061837 + 360.98564736629 * dj) % 360 + SITE_LON
    transit = ((_ra_deg(ra) - lst_noon) % 360) / 360.98564736629 * 24 * 60
    phi, de = math.radians(SITE_LAT), math.radians(_dec_deg(dec))
    c = (math.sin(math.radians(MIN_ALT)) - math.sin(phi) * math.sin(de)) / (math.cos(phi) * math.cos(de))
    half = 720.0 if c <= -1 else 0.0 if c >= 1 else math.degrees(math.acos(c)) / 15 * 60 / 1.0027379
    return transit - half, transit, transit + half


# ---------------------------------------------------------------- tools


def list_queue(night: str) -> list:
    """The service-mode queue for a night: programmes, targets, modes, hours, grades and constraints."""
    return [dict(p, constraints=dict(p["constraints"])) for p in NIGHTS[night]["queue"]]


def moon_info(night: str) -> dict:
    """The moon on a night: illumination (percent of the disc lit)."""
    pct = NIGHTS[night]["moon"]
    return {"night": night, "illumination": round(pct / 100, 2) if SWITCH == "zze_telescope_5" else pct}


def seeing_forecast(night: str) -> dict:
    """The site's seeing forecast (arcsec, median over the night)."""
    if SWITCH == "zze_telescope_2":
        prev = (date.fromisoformat(night) - timedelta(days=1)).isoformat()
        return {"night": prev, "issued": f"{prev}T14:00Z", "seeing_arcsec": 0.7}
    return {"night": night, "issued": f"{night}T14:00Z", "seeing_arcsec": NIGHTS[night]["seeing"]}


def target_ephemeris(target: str, night: str) -> dict:
    """Position and the times (UT) a target rises above and sets below 30 degrees altitude on a night."""
    ra, dec = TARGETS[target]
    when = CATALOGUE_EPOCH if SWITCH == "zze_telescope_3" else date.fromisoformat(night)
    rise, transit, set_ = _window(ra, dec, when)
    return {"target": target, "ra": ra, "dec": dec, "rises": _min_to_hm(rise), "transits": _min_to_hm(transit),
            "sets": _min_to_hm(set_)}


def instrument_setup(programme: str, mode: str) -> dict:
    """Instrument configuration and overhead (minutes) for a programme's mode."""
    return {"programme": programme, "mode": mode, "overhead_min": OVERHEAD_MIN[mode],
            "config": "CCD 2x2 binning, filters from the phase-2 file" if mode == "imaging" else
            "long slit 1.5 arcsec, grism R1000"}


def standard_stars(night: str) -> list:
    """Spectrophotometric standard stars well placed at dusk and dawn."""
    return [{"star": "HR 1544", "when": "dusk"}, {"star": "Feige 34", "when": "dawn"}]


class Block(BaseModel):
    programme: str
    target: str
    start: str
    end: str
    ra: str
    dec: str


def commit_night_plan(night: str, blocks: list[Block]) -> dict:
    """Commit the night plan to the observatory scheduler (it checks every block)."""
    d = date.fromisoformat(night)
    queue = {p["id"]: p for p in NIGHTS[night]["queue"]}
    science = [b for b in blocks if b.programme != "CAL"]
    done = {b.programme for b in science}
    for p in queue.values():
        if p["too"] and p["id"] not in done:
            raise ValueError(f"{night}: target-of-opportunity {p['id']} ({p['target']}) is activated for this night "
                             f"and must be scheduled")
    for b in science:
        ra, dec = TARGETS[queue[b.programme]["target"]]
        if abs(_ra_deg(b.ra) - _ra_deg(ra)) > 0.05 or abs(_dec_deg(b.dec) - _dec_deg(dec)) > 0.05:
            raise ValueError(f"{night}: block {b.programme} points at {b.ra} {b.dec}, not at {b.target} ({ra} {dec})")
    for b in science:
        c = queue[b.programme]["constraints"]
        if NIGHTS[night]["seeing"] > c["seeing_max"]:
            raise ValueError(f"{night}: {b.programme} needs seeing of {c['seeing_max']} arcsec or better; tonight's "
                             f"forecast is {NIGHTS[night]['seeing']} arcsec")
        if NIGHTS[night]["moon"] > MOON_LIMIT[c["moon"]]:
            raise ValueError(f"{night}: {b.programme} needs {c['moon']} time (moon at most {MOON_LIMIT[c['moon']]}%) "
                             f"but the moon is {NIGHTS[night]['moon']}% illuminated")
    for b in science:
        rise, _, set_ = _window(*TARGETS[b.target], d)
        s, e = _hm_to_min(b.start), _hm_to_min(b.end)
        if s < rise - 5 or e > set_ + 5:
            raise ValueError(f"{night}: block {b.programme} {b.start}-{b.end} UT leaves the time {b.target} is above "
                             f"{MIN_ALT:.0f} degrees ({_min_to_hm(rise)}-{_min_to_hm(set_)} UT)")
        if s < _hm_to_min(DUSK) or e > _hm_to_min(DAWN):
            raise ValueError(f"{night}: block {b.programme} {b.start}-{b.end} UT is outside the dark hours")
    spans = sorted((_hm_to_min(b.start), _hm_to_min(b.end), b.programme) for b in science)
    for (s0, e0, p0), (s1, e1, p1) in zip(spans, spans[1:]):
        if s1 < e0:
            raise ValueError(f"{night}: blocks {p0} and {p1} overlap")
    return {"night": night, "committed": len(blocks), "plan_id": f"NP-{night.replace('-', '')}"}


# ---------------------------------------------------------------- the model


def _schedule(queue, ephem, setup, dusk, dawn):
    blocks, placed = [], []
    for p in queue:
        e = ephem[p["target"]]
        dur = p["hours"] * 60 + setup[p["id"]]["overhead_min"]
        lo, hi = max(_hm_to_min(e["rises"]), _hm_to_min(dusk)), min(_hm_to_min(e["sets"]), _hm_to_min(dawn))
        if hi - lo < dur:
            continue
        ideal = min(max(_hm_to_min(e["transits"]) - dur / 2, lo), hi - dur)
        options = [ideal] + [b[1] for b in placed] + [b[0] - dur for b in placed]
        ok = [s for s in options if lo <= s <= hi - dur and all(s + dur <= b0 or s >= b1 for b0, b1 in placed)]
        if not ok:
            continue
        start = min(ok, key=lambda s: abs(s - ideal))
        placed.append((start, start + dur))
        blocks.append({"programme": p["id"], "target": p["target"], "start": _min_to_hm(start),
                       "end": _min_to_hm(start + dur), "ra": e["ra"], "dec": e["dec"]})
    return blocks


def brain(request):
    from trajdebug.testing import Reply, tool_call

    inst = system_text(request)
    seen = tool_exchanges(request)
    got: dict = {}
    for name, args, out in seen:
        got.setdefault(name, []).append((args, read_value(out)))

    if inst.startswith("You plan the calibrations"):
        night = last_user(request).split("night of ", 1)[1][:10]
        if "standard_stars" not in got:
            return Reply(tool_calls=(tool_call("standard_stars", {"night": night}),))
        stars = got["standard_stars"][0][1]
        return json.dumps({"blocks": [
            {"programme": "CAL", "target": "evening twilight flats", "start": "18:40", "end": "19:05", "ra": "", "dec": ""},
            {"programme": "CAL", "target": stars[0]["star"], "start": "19:05", "end": "19:10", "ra": "", "dec": ""},
            {"programme": "CAL", "target": "morning twilight flats", "start": "06:00", "end": "06:20", "ra": "", "dec": ""}]})

    night = next(t for t in user_texts(request) if t.startswith("Plan the night of"))[18:28]
    if "list_queue" not in got:
        return Reply(tool_calls=(tool_call("list_queue", {"night": night}), tool_call("moon_info", {"night": night}),
                                 tool_call("seeing_forecast", {"night": night})))
    queue = got["list_queue"][0][1]
    moon = got["moon_info"][0][1]["illumination"]
    seeing = got["seeing_forecast"][0][1]["seeing_arcsec"]
    candidates = [p for p in queue if seeing <= p["constraints"]["seeing_max"]
                  and moon <= MOON_LIMIT[p["constraints"]["moon"]]]
    candidates.sort(key=lambda p: (0 if p["too"] else 1, GRADE_ORDER[p["grade"]]))
    if SWITCH == "zze_telescope_1":
        candidates = [p for p in candidates if p["grade"] == "A"] + \
                     [p for p in candidates if p["grade"] != "A" and not p["too"]]
    if "target_ephemeris" not in got:
        calls = []
        for p in candidates:
            calls.append(tool_call("target_ephemeris", {"target": p["target"], "night": night}))
            calls.append(tool_call("instrument_setup", {"programme": p["id"], "mode": p["mode"]}))
        plan = "; ".join(f"{p['id']} {p['target']} ({p['grade']}{', ToO' if p['too'] else ''})" for p in candidates)
        return Reply(text=f"Plan for {night}, in priority order: {plan}.", tool_calls=tuple(calls))
    if "ask_calibration_planner" not in got:
        modes = sorted({p["mode"] for p in candidates})
        return Reply(tool_calls=(tool_call("ask_calibration_planner", {
            "input": f"Calibrations for the night of {night}; modes in use: {', '.join(modes)}."}),))
    if "commit_night_plan" not in got:
        ephem = {a["target"]: out for a, out in got["target_ephemeris"]}
        setup = {a["programme"]: out for a, out in got["instrument_setup"]}
        planned = [p for p in candidates if p["target"] in ephem]
        blocks = _schedule(planned, ephem, setup, DUSK, DAWN)
        for b in blocks:
            if b["target"] == "SN 2026bkq" and SWITCH == "zze_telescope_4":
                b["ra"], b["dec"] = "09h55m33s", "+69d03m"
        cal = got["ask_calibration_planner"][0][1]
        cal = cal if isinstance(cal, dict) else json_block(cal)
        return Reply(tool_calls=(tool_call("commit_night_plan", {"night": night,
                                                                 "blocks": cal["blocks"][:2] + blocks + cal["blocks"][2:]}),))
    res = got["commit_night_plan"][0][1]
    return f"Night plan {res['plan_id']} committed with {res['committed']} blocks."


# ---------------------------------------------------------------- the agents

_AGENT: dict = {}


def setup() -> None:
    from agents import Agent, function_tool

    calib = Agent(name="calibration_planner", model=RT.model, tools=[function_tool(standard_stars)],
                  instructions="You plan the calibrations of a night (twilight flats, a standard star) and answer "
                               "with JSON blocks.")
    _AGENT["planner"] = Agent(
        name="night_planner", model=RT.model,
        instructions="You plan a service-mode night. Read the queue, the moon and the seeing forecast, get the "
                     "ephemeris and instrument overhead of every programme you plan to observe, ask the calibration "
                     "planner for the calibrations, and commit the night plan. Activated targets of opportunity are "
                     "mandatory.",
        tools=[function_tool(list_queue), function_tool(moon_info), function_tool(seeing_forecast),
               function_tool(target_ephemeris), function_tool(instrument_setup),
               calib.as_tool(tool_name="ask_calibration_planner",
                             tool_description="Ask the calibration planner for a night's calibration blocks."),
               function_tool(commit_night_plan, failure_error_function=None)])


def teardown() -> None:
    from agents.tracing import set_trace_processors

    set_trace_processors([])


async def _run(night: str, path: str) -> None:
    from agents import RunConfig, Runner, set_default_openai_api, set_default_openai_client
    from agents.tracing import set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    client = AsyncOpenAI(base_url=RT.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client)
    set_default_openai_api("responses")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=INPUTS[night]["task"])])
    try:
        await Runner.run(_AGENT["planner"], f"Plan the night of {night} from the service queue.",
                         run_config=RunConfig(workflow_name=NAME), max_turns=10)
    except Exception:  # the scheduler's refusal, raised by Runner.run; the trace records it
        pass
    await client.close()


def execute(key: str, path: str) -> None:
    asyncio.run(_run(INPUTS[key]["night"], path))
