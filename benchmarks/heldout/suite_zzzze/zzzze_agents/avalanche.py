"""A regional avalanche warning service's morning bulletin for one micro-region: zone facts, station
observations and observer reports (in parallel), a snowpack analyst sub-agent, the weather forecast for
the elevation band, then a hand-off to the desk that covers the zone, which publishes the bulletin
through the service's checked publishing tool.

Route: the OpenAI Agents SDK (Responses API against the fake model) with trajdebug's tracing processor,
JSONL. The previous day's bulletin is loaded in a custom span of the same trace.
"""

from __future__ import annotations

import asyncio
import json

from .common import RT, json_block, last_user, read_value, system_text, tool_exchanges, user_texts

NAME = "avalanche-bulletin"
ROUTE = "openai_agents"
DOMAIN = "avalanche warning service (snow and avalanche forecasting)"
SHAPE = (
    "custom span (previous bulletin) -> desk agent: zone tool -> parallel station + observer tools -> "
    "snowpack analyst agent-as-tool (own turns: tests tool, JSON answer) -> forecast tool -> hand-off to one "
    "of two regional desks -> publish tool (validates, raises) -> final answer"
)
SWITCH: str | None = None

ZONES = {
    "Val Sesvenna": {"desk": "north", "station": "SES2", "nearby": ["SES2 (Val Sesvenna)", "MOR1 (Val Mora)"]},
    "Albula North": {"desk": "north", "station": "ALB2", "nearby": ["ALB2 (Albula North)", "BER1 (Bergun)"]},
    "Bernina South": {"desk": "north", "station": "BEV2", "nearby": ["BEV2 (Bernina South)", "LAG1 (Lagalb)"]},
    "Silvretta West": {"desk": "north", "station": "SIL3", "nearby": ["SIL3 (Silvretta West)", "FLU1 (Fluela)"]},
    "Piz Lad": {"desk": "north", "station": "LAD1", "nearby": ["LAD1 (Piz Lad)", "SCU2 (Scuol)"]},
    "Val Mora": {"desk": "north", "station": "MOR1", "nearby": ["MOR1 (Val Mora)"]},
    "Mesolcina": {"desk": "south", "station": "SBE2", "nearby": ["SBE2 (San Bernardino)"]},
    "Bregaglia South": {"desk": "south", "station": "VIC1", "nearby": ["VIC1 (Vicosoprano)"]},
}
DESK_AREAS = {d: sorted(z for z, v in ZONES.items() if v["desk"] == d) for d in ("north", "south")}
# station -> new snow (cm) over 24 h and 72 h, wind (km/h)
STATIONS = {
    "SES2": (14, 38, 25), "ALB2": (22, 64, 30), "BEV2": (8, 26, 45), "SIL3": (5, 18, 20), "LAD1": (11, 33, 15),
    "MOR1": (12, 35, 25),
}
TESTS = {  # zone -> stability tests on file
    "Val Sesvenna": [{"site": "Sesvenna hut, N 2650 m", "test": "ECTP 14", "layer": "depth hoar at 45 cm"}],
    "Val Mora": [{"site": "Alp Mora, NE 2300 m", "test": "ECTN 22", "layer": "none"}],
    "Albula North": [{"site": "Alp Weissenstein, NW 2400 m", "test": "ECTN 19", "layer": "none"}],
    "Bernina South": [{"site": "Alp Grum, E 2200 m", "test": "ECTX", "layer": "none"}],
    "Silvretta West": [{"site": "Vereina, N 2500 m", "test": "ECTP 21", "layer": "faceted crust at 60 cm"}],
    "Piz Lad": [{"site": "Val d'Uina, NE 2350 m", "test": "ECTN 25", "layer": "none"}],
}
REPORTS = {  # zone -> observer reports this morning
    "Val Sesvenna": ["Sesvenna: shooting cracks on north slopes near 2600 m, no avalanches seen"],
    "Albula North": ["Albula: several small slab releases, skier-triggered, NW 2300-2500 m"],
    "Bernina South": ["Bernina: wind-drifted snow on east ridges, cornices growing"],
    "Silvretta West": ["Silvretta: quiet, old wind slabs stubborn, no glide cracks"],
    "Piz Lad": ["Piz Lad: calm, settled snowpack, no signs of instability"],
}
FORECAST = {  # zone -> band -> (temperature at noon, precipitation)
    "Val Sesvenna": {"above 2200 m": (-9, "none"), "below 1600 m": (-1, "none")},
    "Albula North": {"above 2200 m": (-11, "snow"), "below 1600 m": (-3, "snow")},
    "Bernina South": {"above 2200 m": (-8, "none"), "below 1600 m": (0, "none")},
    "Silvretta West": {"above 2200 m": (-6, "none"), "below 1600 m": (1, "none")},
    "Piz Lad": {"above 2200 m": (-7, "snow"), "below 1600 m": (2, "rain")},
}
YESTERDAY = {  # the bulletins issued yesterday, in the order they were issued
    "Val Sesvenna": {"zone": "Val Sesvenna", "danger_level": 2, "problems": ["new snow"]},
    "Albula North": {"zone": "Albula North", "danger_level": 3, "problems": ["new snow", "wind slab"]},
    "Bernina South": {"zone": "Bernina South", "danger_level": 2, "problems": ["wind slab"]},
    "Piz Lad": {"zone": "Piz Lad", "danger_level": 1, "problems": []},
    "Silvretta West": {"zone": "Silvretta West", "danger_level": 2, "problems": ["persistent weak layer"]},
    "Mesolcina": {"zone": "Mesolcina", "danger_level": 3, "problems": ["gliding snow", "wet snow"]},
}
ISSUE_ORDER = list(YESTERDAY)

INPUTS = {z: {"task": f"morning avalanche bulletin for {z}", "zone": z}
          for z in ("Val Sesvenna", "Albula North", "Bernina South", "Silvretta West", "Piz Lad")}


def _calls(name):
    return lambda s: any(c.get("name") == name for c in (s.output or {}).get("tool_calls") or [])


CASES = [
    {"n": 1, "input": "Val Sesvenna", "kind": "subagent_wrong_entity",
     "root": ("response", lambda s: s.agent == "snowpack_analyst" and _calls("snowpack_tests")(s)),
     "failure": ("publish_bulletin", 1),
     "description": "The snowpack analyst sub-agent, asked about Val Sesvenna, pulls the stability tests of "
                    "Val Mora (the region of the second station it was given) and reports no weak layer.",
     "what": "analyst looks up Val Mora's tests for Val Sesvenna"},
    {"n": 2, "input": "Albula North", "kind": "wrong_tool_args",
     "root": ("response", _calls("station_observations")),
     "failure": ("publish_bulletin", 1),
     "description": "The desk model asks station ALB2 for 24 hours of observations instead of the 72 hours the "
                    "bulletin is based on, and sees 22 cm of new snow instead of 64 cm.",
     "what": "hours=24 instead of 72"},
    {"n": 3, "input": "Silvretta West", "kind": "context_pollution", "root": ("load_previous_bulletin", 1),
     "failure": ("publish_bulletin", 1),
     "description": "The previous-bulletin loader hands the model the last bulletin the desk issued (Mesolcina, "
                    "with gliding snow) instead of Silvretta West's, and the model carries its problems over.",
     "what": "yesterday's bulletin of another zone in the context"},
    {"n": 4, "input": "Piz Lad", "kind": "tool_ignores_argument", "root": ("weather_forecast", 1),
     "failure": ("publish_bulletin", 1),
     "description": "The forecast tool ignores the elevation band it is asked for and returns the valley "
                    "forecast (+2 C, rain) for the band above 2200 m.",
     "what": "forecast for below 1600 m returned for above 2200 m"},
    {"n": 5, "input": "Bernina South", "kind": "wrong_routing",
     "root": ("response", _calls("transfer_to_south_desk")),
     "failure": ("publish_bulletin", 1),
     "description": "The desk model hands Bernina South to the south desk because of the word South in its "
                    "name, although the zone facts it read say the north desk covers it.",
     "what": "hand-off to the south desk for a north-desk zone"},
]

# ---------------------------------------------------------------- tools (plain functions; wrapped in setup)


def zone_info(zone: str) -> dict:
    """Facts about a warning zone: the desk that covers it and its stations."""
    z = ZONES[zone]
    return {"zone": zone, "desk": z["desk"], "station": z["station"], "stations_nearby": z["nearby"],
            "elevation_bands": ["above 2200 m", "1600-2200 m", "below 1600 m"]}


def station_observations(station: str, hours: int) -> dict:
    """New snow, wind and temperature at an automatic station over the last `hours` hours (24, 48 or 72)."""
    n24, n72, wind = STATIONS[station]
    new = n24 if hours <= 24 else (n24 + n72) // 2 if hours <= 48 else n72
    return {"station": station, "hours": hours, "new_snow_cm": new, "wind_kmh": wind}


def observer_reports(zone: str) -> list:
    """This morning's observer reports for a zone."""
    return list(REPORTS.get(zone, []))


def snowpack_tests(zone: str) -> list:
    """Stability tests (extended column tests) on file for a zone this week."""
    return list(TESTS.get(zone, []))


def weather_forecast(zone: str, elevation_band: str) -> dict:
    """Today's forecast for a zone at one elevation band."""
    band = "below 1600 m" if SWITCH == "zze_avalanche_4" else elevation_band
    temp, precip = FORECAST[zone][band]
    return {"zone": zone, "elevation_band": elevation_band, "temp_noon_c": temp, "precipitation": precip}


def make_publish(desk: str):
    def publish_bulletin(zone: str, danger_level: int, problems: list[str], elevation_band: str,
                         summary: str) -> dict:
        """Publish the bulletin of a zone (the service checks it against its own records first)."""
        if zone not in DESK_AREAS[desk]:
            raise ValueError(f"zone {zone} is not in the {desk} desk's warning area ({', '.join(DESK_AREAS[desk])})")
        for t in TESTS.get(zone, []):
            if t["test"].startswith("ECTP") and "persistent weak layer" not in problems:
                raise ValueError(f"{zone}: test {t['test']} at {t['site']} shows a propagating weak layer "
                                 f"({t['layer']}) but no persistent weak layer problem is listed")
        n72 = STATIONS[ZONES[zone]["station"]][1]
        if n72 >= 50 and danger_level < 3:
            raise ValueError(f"{zone}: {n72} cm of new snow in 72 h at {ZONES[zone]['station']} requires danger "
                             f"level 3 or higher, bulletin says {danger_level}")
        if "gliding snow" in problems and not any("glide crack" in r and "no glide" not in r
                                                 for r in REPORTS.get(zone, [])):
            raise ValueError(f"{zone}: gliding snow is listed but no glide cracks are reported in the zone")
        if "wet snow" in problems:
            temp, precip = FORECAST[zone][elevation_band]
            if temp < 0 and precip != "rain":
                raise ValueError(f"{zone}: wet snow listed {elevation_band} but the forecast there is {temp} C "
                                 f"with {precip} precipitation")
        return {"published": True, "zone": zone, "danger_level": danger_level, "desk": desk}

    return publish_bulletin


# ---------------------------------------------------------------- the model


def brain(request):
    inst = system_text(request)
    seen = tool_exchanges(request)
    got = {name: (args, read_value(out)) for name, args, out in seen}
    from trajdebug.testing import Reply, tool_call

    if inst.startswith("You are the snowpack analyst"):
        ask = last_user(request)
        zone = ask.split("Assess the snowpack in ", 1)[1].split(".", 1)[0]
        if "snowpack_tests" not in got:
            if SWITCH == "zze_avalanche_1":
                stations = ask.split("Stations nearby: ", 1)[1]
                zone = stations.rsplit("(", 1)[1].split(")")[0]
            return Reply(tool_calls=(tool_call("snowpack_tests", {"zone": zone}),))
        tests = got["snowpack_tests"][1]
        pwl = [t for t in tests if t["test"].startswith("ECTP")]
        return json.dumps({"zone": zone, "persistent_weak_layer": bool(pwl),
                           "weak_layer": pwl[0]["layer"] if pwl else None,
                           "stability": "poor" if pwl else "fair", "tests": [t["test"] for t in tests]})

    texts = user_texts(request)
    zone = next(t for t in texts if t.startswith("Issue today's bulletin")).split(" for ", 1)[1].rstrip(".")
    prev = next((json_block(t) for t in texts if t.startswith("Yesterday's bulletin")), None)
    if inst.startswith("You are the bulletin desk"):
        if "zone_info" not in got:
            return Reply(tool_calls=(tool_call("zone_info", {"zone": zone}),))
        info = got["zone_info"][1]
        if "station_observations" not in got:
            hours = 24 if SWITCH == "zze_avalanche_2" else 72
            return Reply(tool_calls=(tool_call("station_observations", {"station": info["station"], "hours": hours}),
                                     tool_call("observer_reports", {"zone": zone})))
        if "ask_snowpack_analyst" not in got:
            return Reply(tool_calls=(tool_call("ask_snowpack_analyst", {
                "input": f"Assess the snowpack in {zone}. Stations nearby: {', '.join(info['stations_nearby'])}"}),))
        if "weather_forecast" not in got:
            return Reply(tool_calls=(tool_call("weather_forecast", {"zone": zone, "elevation_band": "above 2200 m"}),))
        desk = info["desk"]
        if SWITCH == "zze_avalanche_5" and " South" in zone:
            desk = "south"
        return Reply(text=f"Handing {zone} to the {desk} desk.", tool_calls=(tool_call(f"transfer_to_{desk}_desk", {}),))

    if inst.startswith("You are the ") and "desk" in inst:
        if "publish_bulletin" in got:
            pub = got["publish_bulletin"][1]
            return f"Bulletin for {pub['zone']} published: danger level {pub['danger_level']}."
        obs = got["station_observations"][1]
        analyst = got["ask_snowpack_analyst"][1]
        if isinstance(analyst, str):
            analyst = json_block(analyst)
        fc = got["weather_forecast"][1]
        reports = got["observer_reports"][1]
        new = obs["new_snow_cm"]
        level = 1 if new < 20 else 2 if new < 50 else 3
        problems = []
        if new >= 30:
            problems.append("new snow")
        if obs["wind_kmh"] >= 40 or any("wind" in r for r in reports):
            problems.append("wind slab")
        if analyst["persistent_weak_layer"]:
            problems.append("persistent weak layer")
            if analyst["stability"] == "poor":
                level = min(4, level + 1)
        if fc["temp_noon_c"] >= 0 or fc["precipitation"] == "rain":
            problems.append("wet snow")
        if any("glide crack" in r and "no glide" not in r for r in reports):
            problems.append("gliding snow")
        if prev:
            level = max(level, prev["danger_level"] - 1)
            for p in prev["problems"]:
                if p in ("persistent weak layer", "gliding snow") and p not in problems:
                    problems.append(p)
        return Reply(tool_calls=(tool_call("publish_bulletin", {
            "zone": zone, "danger_level": level, "problems": problems, "elevation_band": fc["elevation_band"],
            "summary": f"Danger level {level} {fc['elevation_band']}: {', '.join(problems) or 'no distinct problem'}."}),))
    return "I only write avalanche bulletins."


# ---------------------------------------------------------------- the agents

_AGENT: dict = {}


def setup() -> None:
    from agents import Agent, function_tool

    tools = {fn.__name__: function_tool(fn) for fn in (zone_info, station_observations, observer_reports,
                                                        snowpack_tests, weather_forecast)}
    analyst = Agent(name="snowpack_analyst", model=RT.model, tools=[tools["snowpack_tests"]],
                    instructions="You are the snowpack analyst. Look up the stability tests of the zone you are asked "
                                 "about and answer with JSON: zone, persistent_weak_layer, weak_layer, stability.")
    desks = {}
    for desk in ("north", "south"):
        desks[desk] = Agent(
            name=f"{desk}_desk", model=RT.model, handoff_description=f"The {desk} desk: publishes bulletins of its zones.",
            instructions=f"You are the {desk} desk of the avalanche warning service. Publish the bulletin of the zone "
                         f"handed to you from the observations in the conversation, then confirm in one sentence.",
            tools=[function_tool(make_publish(desk), failure_error_function=None)])
    _AGENT["desk"] = Agent(
        name="bulletin_desk", model=RT.model,
        instructions="You are the bulletin desk of the avalanche warning service. Gather the zone facts, the station "
                     "observations of the last 72 hours, observer reports, the snowpack analyst's view and the "
                     "forecast for the band above 2200 m, then hand the zone to the desk that covers it.",
        tools=[tools["zone_info"], tools["station_observations"], tools["observer_reports"],
               analyst.as_tool(tool_name="ask_snowpack_analyst",
                               tool_description="Ask the snowpack analyst about the stability of a zone."),
               tools["weather_forecast"]],
        handoffs=[desks["north"], desks["south"]])


def teardown() -> None:
    from agents.tracing import set_trace_processors

    set_trace_processors([])


async def _run(zone: str, path: str) -> None:
    from agents import RunConfig, Runner, custom_span, set_default_openai_api, set_default_openai_client, trace
    from agents.tracing import set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    client = AsyncOpenAI(base_url=RT.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client)
    set_default_openai_api("responses")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=INPUTS[zone]["task"])])
    with trace(NAME):
        with custom_span("load_previous_bulletin", data={"zone": zone}) as span:
            if SWITCH == "zze_avalanche_3":
                prev = YESTERDAY[ISSUE_ORDER[-1]]  # the desk's last issued bulletin
            else:
                prev = YESTERDAY.get(zone)
            span.span_data.data["bulletin"] = prev
        items = []
        if prev:
            items.append({"role": "user", "content": "Yesterday's bulletin, for continuity: " + json.dumps(prev)})
        items.append({"role": "user", "content": f"Issue today's bulletin for {zone}."})
        try:
            await Runner.run(_AGENT["desk"], items, run_config=RunConfig(workflow_name=NAME), max_turns=12)
        except Exception:  # Runner.run re-raises the publishing tool's error; the trace records it
            pass
    await client.close()


def execute(key: str, path: str) -> None:
    asyncio.run(_run(INPUTS[key]["zone"], path))
