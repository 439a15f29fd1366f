"""A sundial maker's commissions: one OpenAI Agents SDK agent on Chat Completions with function tools, one
turn of three parallel tool calls, and the engraver's booking tool that checks the design before cutting.

Shape: Runner.run -> model -> site_coordinates -> model -> gnomon_angle + hour_lines + longitude_correction
(parallel) -> model -> stone_quote -> model -> book_engraving -> model (final commission, structured output).
About 16-18 steps.
"""

from __future__ import annotations

import ast
import asyncio
import json
import math

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from pydantic import BaseModel

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call


NAME = "sundial-commissions"
SHORT = "sundial"
ROUTE = "openai_agents"
DOMAIN = "sundial maker's commissions"
SHAPE = "single Agents SDK agent, 4 model turns, parallel tool turn, booking tool that checks the design; 16-18 steps"

CORRECTION_IN_SECONDS = False
DESIGN_ROUNDS_GNOMON = False
HOURS_DEFAULT_DAY = False
QUOTE_DEFAULT_STONE = False
PLAN_SKIPS_LONGITUDE = False
SWITCHES = [
    "CORRECTION_IN_SECONDS",
    "DESIGN_ROUNDS_GNOMON",
    "HOURS_DEFAULT_DAY",
    "QUOTE_DEFAULT_STONE",
    "PLAN_SKIPS_LONGITUDE",
]

PLACES = {
    "Bodnant Garden, Conwy": (53.2185, -3.8026),
    "St Mary's churchyard, Whitby": (54.4886, -0.6076),
    "Trinity College quad, Dublin": (53.3438, -6.2546),
    "Villa garden, Lucca": (43.8430, 10.5027),
    "Roof terrace, Rotterdam": (51.9225, 4.4792),
}
ZONE_MERIDIAN = {"Conwy": 0.0, "Whitby": 0.0, "Dublin": 0.0, "Lucca": 15.0, "Rotterdam": 15.0}
STONE_RATE = {"slate": 4.2, "bronze": 11.5, "portland stone": 5.6, "granite": 7.9}

INPUTS = [
    {"place": "Bodnant Garden, Conwy", "material": "slate", "diameter_cm": 45, "hours": [6, 18]},
    {
        "place": "St Mary's churchyard, Whitby",
        "material": "portland stone",
        "diameter_cm": 60,
        "hours": [5, 20],
    },
    {"place": "Trinity College quad, Dublin", "material": "bronze", "diameter_cm": 40, "hours": [6, 18]},
    {"place": "Villa garden, Lucca", "material": "granite", "diameter_cm": 55, "hours": [6, 19]},
    {"place": "Roof terrace, Rotterdam", "material": "bronze", "diameter_cm": 35, "hours": [7, 17]},
]

CASES = [
    {
        "input": 2,
        "switch": "CORRECTION_IN_SECONDS",
        "fault_kind": "unit_error",
        "root": ("longitude_correction", 1, "tool"),
        "failure": ("book_engraving", 1),
        "description": "The longitude correction tool answered in seconds (1500) where the design reads minutes.",
    },
    {
        "input": 0,
        "switch": "DESIGN_ROUNDS_GNOMON",
        "fault_kind": "hallucinated_value",
        "root": ("generation fake-model", 4, "llm"),
        "failure": ("book_engraving", 1),
        "description": "The model put a gnomon angle of 52.5 degrees into the design, a figure none of its tool "
        "results gave (gnomon_angle said 53.22).",
    },
    {
        "input": 1,
        "switch": "HOURS_DEFAULT_DAY",
        "fault_kind": "wrong_tool_args",
        "root": ("generation fake-model", 2, "llm"),
        "failure": ("book_engraving", 1),
        "description": "The model called hour_lines for 06:00-18:00 instead of the 05:00-20:00 the commission asks.",
    },
    {
        "input": 4,
        "switch": "QUOTE_DEFAULT_STONE",
        "fault_kind": "tool_ignores_argument",
        "root": ("stone_quote", 1, "tool"),
        "failure": ("book_engraving", 1),
        "description": "The stone quote tool ignored the material and priced the dial in slate instead of bronze.",
    },
    {
        "input": 3,
        "switch": "PLAN_SKIPS_LONGITUDE",
        "fault_kind": "plan_error",
        "root": ("generation fake-model", 2, "llm"),
        "failure": ("book_engraving", 1),
        "description": "The model planned the design without a longitude correction and set the noon offset to 0 "
        "for a site 4.5 degrees west of its zone meridian.",
    },
]


class Commission(BaseModel):
    place: str
    material: str
    gnomon_angle: float
    hour_lines: int
    noon_offset_min: float
    price_eur: float
    booking: str


@function_tool(failure_error_function=None)
def site_coordinates(place: str) -> dict:
    """Latitude and longitude of the sundial's site."""
    lat, lon = PLACES[place]
    town = place.split(", ")[-1]
    return {"place": place, "latitude": lat, "longitude": lon, "zone_meridian": ZONE_MERIDIAN[town]}


@function_tool(failure_error_function=None)
def gnomon_angle(latitude: float) -> dict:
    """Angle of the gnomon's style above the dial plate."""
    return {"gnomon_angle": round(latitude, 2)}


@function_tool(failure_error_function=None)
def hour_lines(latitude: float, first_hour: int, last_hour: int) -> dict:
    """Angles of the hour lines of a horizontal dial."""
    phi = math.radians(latitude)
    lines = {
        h: round(math.degrees(math.atan(math.sin(phi) * math.tan(math.radians(15 * (h - 12))))), 2)
        for h in range(first_hour, last_hour + 1)
    }
    return {"first": first_hour, "last": last_hour, "angles": lines}


@function_tool(failure_error_function=None)
def longitude_correction(longitude: float, zone_meridian: float) -> dict:
    """How far local noon falls from clock noon, from the longitude."""
    minutes = round((zone_meridian - longitude) * 4, 1)
    if CORRECTION_IN_SECONDS:
        return {"correction": round(minutes * 60)}
    return {"correction": minutes}


@function_tool(failure_error_function=None)
def stone_quote(material: str, diameter_cm: int) -> dict:
    """Price of the dial plate in a material."""
    used = "slate" if QUOTE_DEFAULT_STONE else material
    return {
        "material": used,
        "diameter_cm": diameter_cm,
        "price_eur": round(STONE_RATE[used] * diameter_cm**2 / 10, 2),
    }


class Design(BaseModel):
    place: str
    material: str
    latitude: float
    longitude: float
    zone_meridian: float
    gnomon_angle: float
    hour_lines: int
    hours: list[int]
    noon_offset_min: float
    quote_material: str
    price_eur: float


@function_tool(failure_error_function=None)
def book_engraving(design: Design) -> dict:
    """Book the engraver; the engraver checks the design before cutting."""
    c = design.model_dump()
    if abs(c["gnomon_angle"] - c["latitude"]) > 0.1:
        raise ValueError(f"gnomon angle {c['gnomon_angle']} does not match site latitude {c['latitude']}")
    expected = abs(c["zone_meridian"] - c["longitude"]) * 4
    if abs(abs(c["noon_offset_min"]) - expected) > 1.0:
        raise ValueError(
            f"noon offset {c['noon_offset_min']} min does not fit longitude {c['longitude']} "
            f"(zone meridian {c['zone_meridian']})"
        )
    if c["quote_material"] != c["material"]:
        raise ValueError(f"stone quote is for {c['quote_material']}, the commission is {c['material']}")
    wanted = c["hours"][1] - c["hours"][0] + 1
    if c["hour_lines"] != wanted:
        raise ValueError(
            f"design has {c['hour_lines']} hour lines, the commission asks for {wanted} "
            f"({c['hours'][0]:02d}:00-{c['hours'][1]:02d}:00)"
        )
    return {"booking": f"ENG-{int(c['latitude'] * 100)}", "cut_on": "2026-07-02"}


def _results(messages):
    names = {}
    for m in messages:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
    out = {}
    for m in messages:
        if m.get("role") == "tool":
            out[names[m["tool_call_id"]]] = ast.literal_eval(m["content"])
    return out


def policy(request):
    messages = request.body.get("messages") or []
    job = json.loads(next(m["content"] for m in messages if m["role"] == "user"))
    got = _results(messages)
    if "site_coordinates" not in got:
        return Reply(tool_calls=(tool_call("site_coordinates", {"place": job["place"]}),))
    site = got["site_coordinates"]
    if "gnomon_angle" not in got:
        hours = [6, 18] if HOURS_DEFAULT_DAY else job["hours"]
        calls = [
            tool_call("gnomon_angle", {"latitude": site["latitude"]}),
            tool_call(
                "hour_lines", {"latitude": site["latitude"], "first_hour": hours[0], "last_hour": hours[1]}
            ),
        ]
        if not PLAN_SKIPS_LONGITUDE:
            calls.append(
                tool_call(
                    "longitude_correction",
                    {"longitude": site["longitude"], "zone_meridian": site["zone_meridian"]},
                )
            )
        return Reply(tool_calls=tuple(calls))
    if "stone_quote" not in got:
        return Reply(
            tool_calls=(
                tool_call("stone_quote", {"material": job["material"], "diameter_cm": job["diameter_cm"]}),
            )
        )
    if "book_engraving" not in got:
        angle = 52.5 if DESIGN_ROUNDS_GNOMON else got["gnomon_angle"]["gnomon_angle"]
        offset = got["longitude_correction"]["correction"] if "longitude_correction" in got else 0
        design = {
            "place": job["place"],
            "material": job["material"],
            "latitude": site["latitude"],
            "longitude": site["longitude"],
            "zone_meridian": site["zone_meridian"],
            "gnomon_angle": angle,
            "hour_lines": len(got["hour_lines"]["angles"]),
            "hours": job["hours"],
            "noon_offset_min": offset,
            "quote_material": got["stone_quote"]["material"],
            "price_eur": got["stone_quote"]["price_eur"],
        }
        return Reply(tool_calls=(tool_call("book_engraving", {"design": design}),))
    q, b = got["stone_quote"], got["book_engraving"]
    return json.dumps(
        {
            "place": job["place"],
            "material": q["material"],
            "gnomon_angle": got["gnomon_angle"]["gnomon_angle"],
            "hour_lines": len(got["hour_lines"]["angles"]),
            "noon_offset_min": got["longitude_correction"]["correction"],
            "price_eur": q["price_eur"],
            "booking": b["booking"],
        }
    )


async def _go(start, server):
    llm = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(llm, use_for_tracing=False)
    try:
        return await start()
    finally:
        await llm.close()


def record(inp, path, server):
    set_default_openai_api("chat_completions")
    processor = TrajdebugProcessor(path=path, name=NAME, task=f"sundial for {inp['place']}")
    set_trace_processors([processor])
    agent = Agent(
        name="dial_designer",
        model="fake-model",
        output_type=Commission,
        instructions="Design a horizontal sundial for the commission, check it with the engraver, book it.",
        tools=[site_coordinates, gnomon_angle, hour_lines, longitude_correction, stone_quote, book_engraving],
    )
    try:
        asyncio.run(
            _go(lambda: Runner.run(agent, json.dumps(inp), run_config=RunConfig(workflow_name=NAME)), server)
        )
    except Exception:  # noqa: BLE001
        pass
    finally:
        set_trace_processors([])
