"""Bouncy castle hire: books an inflatable for a garden party (openai_agents route, Chat Completions).

Shape: an Agents SDK agent whose model calls one function tool per turn: site survey, garden parsing,
availability, wind forecast, power check, a safety-officer sub-agent run as a tool (castle spec, anchoring
rules), a price quote (a transient error the model retries), the booking, then the validator tool.
"""

from __future__ import annotations

import asyncio
import json
import re

import kit
from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    function_tool,
    set_trace_processors,
)
from common import result_json, system_text, tool_history, user_text
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call


NAME = "bouncy-castle-booker"
ROUTE = "openai_agents"
DOMAIN = "bouncy castle hire"
SHAPE = "Agents SDK agent, one tool per turn: survey, garden parse, availability, wind, power, safety sub-agent (as tool: spec, anchoring), quote (retried), booking, validator tool"

CASTLES = {
    "Jungle Jumper": {
        "footprint_m": [5.5, 4.6],
        "max_users": 10,
        "ages": [4, 10],
        "anchor_points": 6,
        "price_gbp": 95,
    },
    "Jungle Jumper Junior": {
        "footprint_m": [4.0, 3.7],
        "max_users": 14,
        "ages": [2, 6],
        "anchor_points": 4,
        "price_gbp": 75,
    },
    "Pirate Ship Slide": {
        "footprint_m": [7.3, 4.3],
        "max_users": 8,
        "ages": [5, 12],
        "anchor_points": 8,
        "price_gbp": 140,
    },
    "Princess Palace": {
        "footprint_m": [4.6, 4.6],
        "max_users": 8,
        "ages": [3, 10],
        "anchor_points": 6,
        "price_gbp": 90,
    },
    "Assault Course 40ft": {
        "footprint_m": [12.2, 3.0],
        "max_users": 6,
        "ages": [6, 16],
        "anchor_points": 10,
        "price_gbp": 180,
    },
}
BOOKED = {
    "Jungle Jumper": ["2026-06-20"],
    "Pirate Ship Slide": ["2026-06-13", "2026-07-25"],
    "Princess Palace": ["2026-07-04"],
    "Assault Course 40ft": ["2026-08-08"],
}
GUST_LIMIT_MPH = 24
CLEARANCE_M = 1.2

# ref: survey text, structured survey sheet, postcode, forecast gusts by date (mph)
SITES = {
    "BC-2301": (
        "Rear garden 10m x 7m, level lawn. Outdoor socket by the back door.",
        10.0,
        7.0,
        "grass",
        True,
        "LS6 2AB",
    ),
    "BC-2302": (
        "Back garden 9m x 7m, artificial turf. The turf is laid over concrete. Outdoor socket on the garage.",
        9.0,
        7.0,
        "hard",
        True,
        "HG1 4PQ",
    ),
    "BC-2303": (
        "Side lawn 12m x 8m, slight slope at the gate end. Outdoor socket in the summerhouse.",
        12.0,
        8.0,
        "grass",
        True,
        "YO31 7EZ",
    ),
    "BC-2304": (
        "Garden 8m x 6.5m, artificial turf over concrete. Outdoor socket next to the shed.",
        8.0,
        6.5,
        "hard",
        True,
        "BD9 5JA",
    ),
    "BC-2305": (
        "Paddock 20m x 15m, rough grass, no buildings nearby.",
        20.0,
        15.0,
        "grass",
        False,
        "DL8 3LS",
    ),
    "BC-2306": (
        "Garden 11m x 8m, lawn, with a 2m paved patio by the house. Outdoor socket by the patio doors.",
        9.0,
        8.0,
        "grass",
        True,
        "S10 2TN",
    ),
    "BC-2307": (
        "School field 30m x 25m, grass. Sockets in the sports hall.",
        30.0,
        25.0,
        "grass",
        True,
        "WF1 3QX",
    ),
    "BC-2308": (
        "Courtyard 9m x 9m, block paving. Outdoor socket in the porch.",
        9.0,
        9.0,
        "hard",
        True,
        "HX1 2PP",
    ),
    "BC-2309": (
        "Lawn 10m x 9m, level. Outdoor socket by the kitchen door.",
        10.0,
        9.0,
        "grass",
        True,
        "LS17 6DH",
    ),
}
FORECAST = {
    "2026-05-30": 12,
    "2026-06-06": 31,
    "2026-06-13": 14,
    "2026-06-20": 11,
    "2026-06-27": 16,
    "2026-07-04": 9,
    "2026-07-11": 19,
    "2026-07-18": 13,
    "2026-07-25": 17,
    "2026-05-16": 27,
    "2026-05-23": 10,
}


def _enquiry(ref, castle, date, received, kids, ages):
    return {"ref": ref, "castle": castle, "date": date, "received": received, "kids": kids, "ages": ages}


ENQUIRIES = {
    "BC-2301": _enquiry("BC-2301", "Pirate Ship Slide", "2026-06-06", "2026-05-23", 8, [6, 9]),
    "BC-2302": _enquiry("BC-2302", "Princess Palace", "2026-06-27", "2026-06-01", 8, [5, 8]),
    "BC-2303": _enquiry("BC-2303", "Jungle Jumper", "2026-06-20", "2026-05-30", 9, [4, 7]),
    "BC-2304": _enquiry("BC-2304", "Jungle Jumper", "2026-06-13", "2026-05-16", 12, [5, 8]),
    "BC-2305": _enquiry("BC-2305", "Assault Course 40ft", "2026-07-11", "2026-06-20", 6, [8, 12]),
    "BC-2306": _enquiry("BC-2306", "Princess Palace", "2026-06-13", "2026-05-20", 8, [4, 7]),
    "BC-2307": _enquiry("BC-2307", "Assault Course 40ft", "2026-07-18", "2026-06-29", 6, [9, 14]),
    "BC-2308": _enquiry("BC-2308", "Princess Palace", "2026-05-30", "2026-05-09", 7, [3, 6]),
    "BC-2309": _enquiry("BC-2309", "Jungle Jumper", "2026-07-25", "2026-07-01", 10, [5, 9]),
}
INPUTS = dict(ENQUIRIES)
REFS = ["BC-2306", "BC-2307", "BC-2308", "BC-2309"]
CASES = [
    {
        "id": "bouncy_c1",
        "kind": "wrong_tool_args",
        "input": "BC-2301",
        "root": ("generation fake-model", 4),
        "failure": "validate_booking",
        "description": "The model asks the wind forecast for the day the enquiry arrived (2026-05-23, 10 mph gusts) instead of the party date, when gusts of 31 mph are forecast.",
    },
    {
        "id": "bouncy_c2",
        "kind": "tool_ignores_argument",
        "input": "BC-2303",
        "root": ("castle_availability", 1),
        "failure": "validate_booking",
        "description": "The availability tool ignores the date it is given and answers from the castle's status today, so the Jungle Jumper already booked on 2026-06-20 is booked again.",
    },
    {
        "id": "bouncy_c3",
        "kind": "subagent_wrong_entity",
        "input": "BC-2304",
        "root": ("generation fake-model", 7),
        "failure": "validate_booking",
        "description": "The safety-officer sub-agent looks up the Jungle Jumper Junior (14 users) instead of the Jungle Jumper (10 users), so 12 children are planned on the castle at once.",
    },
    {
        "id": "bouncy_c4",
        "kind": "lossy_parsing",
        "input": "BC-2302",
        "root": ("parse_garden", 1),
        "failure": "validate_booking",
        "description": "The garden parser reads the surface from the survey's first sentence only ('artificial turf') and drops 'laid over concrete', so the castle is to be anchored with stakes on concrete.",
    },
    {
        "id": "bouncy_c5",
        "kind": "swallowed_error",
        "input": "BC-2305",
        "root": ("power_check", 1),
        "failure": "validate_booking",
        "description": "The power check's lookup fails and the tool answers its default (an outdoor socket on site), so no generator is booked for a paddock with no power.",
    },
]

STORE: dict[str, dict] = {}
_CALLS = {"quote": 0}


@function_tool
def get_site_survey(ref: str) -> str:
    """The site survey the customer filled in for an enquiry."""
    text, *_rest, postcode = SITES[ref]
    return json.dumps({"ref": ref, "postcode": postcode, "survey": text})


@function_tool
def parse_garden(survey: str) -> str:
    """Usable garden size and surface from a site survey's text."""
    m = re.search(r"(\d+(?:\.\d+)?)m x (\d+(?:\.\d+)?)m", survey)
    length, width = float(m.group(1)), float(m.group(2))
    usable = length
    patio = re.search(r"(\d+(?:\.\d+)?)m paved", survey)
    if patio:
        usable = length - float(patio.group(1))
    described = survey.split(". ")[0] if kit.on("bouncy_c4") else survey
    surface = "hard" if re.search(r"concrete|paving|tarmac", described) else "grass"
    return json.dumps({"length_m": length, "width_m": width, "usable_length_m": usable, "surface": surface})


@function_tool
def castle_availability(castle: str, date: str) -> str:
    """Whether a castle is free on a date."""
    day = "2026-05-01" if kit.on("bouncy_c2") else date
    return json.dumps({"castle": castle, "date": date, "available": day not in BOOKED.get(castle, [])})


@function_tool
def wind_forecast(postcode: str, date: str) -> str:
    """Forecast maximum gust for a postcode on a date, in mph."""
    return json.dumps({"postcode": postcode, "date": date, "max_gust_mph": FORECAST.get(date, 15)})


def _socket_lookup(ref: str) -> bool:
    if kit.on("bouncy_c5"):
        raise LookupError(f"site power register has no row for {ref}")
    return SITES[ref][4]


@function_tool
def power_check(ref: str) -> str:
    """Whether the site has an outdoor socket for the blower."""
    try:
        socket = _socket_lookup(ref)
    except LookupError:
        socket = True
    return json.dumps({"ref": ref, "outdoor_socket": socket})


@function_tool
def castle_spec(name: str) -> str:
    """The manufacturer's spec of a castle in the fleet."""
    return json.dumps({"name": name, **CASTLES[name]})


@function_tool
def anchoring_rules(surface: str) -> str:
    """How a castle must be anchored on a surface."""
    if surface == "hard":
        return json.dumps({"surface": surface, "method": "sandbags, 2 x 25 kg per anchor point"})
    return json.dumps({"surface": surface, "method": "steel stakes 380 mm, one per anchor point"})


@function_tool
def price_quote(castle: str, date: str, hours: int, generator: bool) -> str:
    """Hire price for a castle."""
    _CALLS["quote"] += 1
    if _CALLS["quote"] == 1:
        raise ConnectionError("pricing service unavailable (503)")
    base = CASTLES[castle]["price_gbp"] + max(0, hours - 4) * 15
    return json.dumps(
        {
            "castle": castle,
            "date": date,
            "hire_gbp": base,
            "generator_gbp": 45 if generator else 0,
            "delivery_gbp": 20,
            "total_gbp": base + (45 if generator else 0) + 20,
        }
    )


@function_tool
def create_booking(
    ref: str,
    castle: str,
    date: str,
    usable_length_m: float,
    width_m: float,
    surface: str,
    anchoring: str,
    children_per_session: int,
    max_gust_mph: int,
    generator: bool,
    total_gbp: float,
) -> str:
    """Write the booking."""
    STORE[ref] = {
        "ref": ref,
        "castle": castle,
        "date": date,
        "usable_length_m": usable_length_m,
        "width_m": width_m,
        "surface": surface,
        "anchoring": anchoring,
        "children_per_session": children_per_session,
        "max_gust_mph": max_gust_mph,
        "generator": generator,
        "total_gbp": total_gbp,
    }
    return json.dumps({"ref": ref, "status": "provisional"})


@function_tool(failure_error_function=None)
def validate_booking(ref: str) -> str:
    """Check a provisional booking against the hire rules before it is confirmed."""
    b = STORE[ref]
    c = CASTLES[b["castle"]]
    _text, usable, _width, _surface, socket, _pc = SITES[ref]
    if b["date"] in BOOKED.get(b["castle"], []):
        raise ValueError(f"{b['castle']} is already out on hire on {b['date']}")
    gust = FORECAST.get(b["date"], 15)
    if gust > GUST_LIMIT_MPH:
        raise ValueError(f"gusts of {gust} mph forecast on {b['date']}, above the {GUST_LIMIT_MPH} mph limit")
    need = c["footprint_m"][0] + 2 * CLEARANCE_M
    if need > usable:
        raise ValueError(
            f"{b['castle']} needs {need:.1f} m with clearance, the site has {usable:.1f} m of lawn"
        )
    if _surface == "hard" and "stake" in b["anchoring"]:
        raise ValueError(f"site {ref} is hard standing; '{b['anchoring']}' cannot anchor there")
    if not socket and not b["generator"]:
        raise ValueError(f"site {ref} has no outdoor socket and no generator is booked")
    if b["children_per_session"] > c["max_users"]:
        raise ValueError(
            f"{b['children_per_session']} children per session on the {b['castle']}, which takes {c['max_users']}"
        )
    return json.dumps({"ref": ref, "status": "confirmed"})


MAIN_INSTRUCTIONS = (
    "You are the booking desk of a bouncy castle hire company. For an enquiry: read the site survey, "
    "parse the garden, check the castle is free, check the wind forecast for the party date, check "
    "power, ask the safety officer, get a quote, create the booking, then validate it."
)
SAFETY_INSTRUCTIONS = (
    "You are the safety officer of a bouncy castle hire company. Look up the castle's spec and the "
    "anchoring rules for the surface, then answer JSON {castle, footprint_m, max_users, ages, anchoring}."
)
ORDER = [
    "get_site_survey",
    "parse_garden",
    "castle_availability",
    "wind_forecast",
    "power_check",
    "safety_officer",
    "price_quote",
    "create_booking",
    "validate_booking",
]


def _done(history):
    return {n: result_json(r) for n, _a, r in history if not r.startswith("An error occurred")}


def main_policy(enq: dict):
    def policy(request):
        hist = tool_history(request)
        done = _done(hist)
        nxt = next((n for n in ORDER if n not in done), None)
        survey = done.get("get_site_survey", {})
        garden = done.get("parse_garden", {})
        if nxt == "get_site_survey":
            return Reply(tool_calls=(tool_call(nxt, {"ref": enq["ref"]}),))
        if nxt == "parse_garden":
            return Reply(tool_calls=(tool_call(nxt, {"survey": survey["survey"]}),))
        if nxt == "castle_availability":
            return Reply(tool_calls=(tool_call(nxt, {"castle": enq["castle"], "date": enq["date"]}),))
        if nxt == "wind_forecast":
            date = enq["received"] if kit.on("bouncy_c1") else enq["date"]
            return Reply(tool_calls=(tool_call(nxt, {"postcode": survey["postcode"], "date": date}),))
        if nxt == "power_check":
            return Reply(tool_calls=(tool_call(nxt, {"ref": enq["ref"]}),))
        if nxt == "safety_officer":
            text = (
                f"Castle: {enq['castle']}. Children: {enq['kids']} aged {enq['ages'][0]}-{enq['ages'][1]}. "
                f"Surface: {garden['surface']}. Usable lawn: {garden['usable_length_m']} m x {garden['width_m']} m."
            )
            return Reply(tool_calls=(tool_call(nxt, {"input": text}),))
        power = done.get("power_check", {})
        if nxt == "price_quote":
            return Reply(
                tool_calls=(
                    tool_call(
                        nxt,
                        {
                            "castle": enq["castle"],
                            "date": enq["date"],
                            "hours": 4,
                            "generator": not power["outdoor_socket"],
                        },
                    ),
                )
            )
        if nxt == "create_booking":
            safety = done["safety_officer"]
            wind = done["wind_forecast"]
            fits = safety["footprint_m"][0] + 2 * CLEARANCE_M <= garden["usable_length_m"]
            if (
                not done["castle_availability"]["available"]
                or wind["max_gust_mph"] > GUST_LIMIT_MPH
                or not fits
            ):
                return "I am sorry, we cannot take this booking."
            args = {
                "ref": enq["ref"],
                "castle": enq["castle"],
                "date": enq["date"],
                "usable_length_m": garden["usable_length_m"],
                "width_m": garden["width_m"],
                "surface": garden["surface"],
                "anchoring": safety["anchoring"],
                "children_per_session": min(enq["kids"], safety["max_users"]),
                "max_gust_mph": wind["max_gust_mph"],
                "generator": not power["outdoor_socket"],
                "total_gbp": done["price_quote"]["total_gbp"],
            }
            return Reply(tool_calls=(tool_call(nxt, args),))
        if nxt == "validate_booking":
            return Reply(tool_calls=(tool_call(nxt, {"ref": enq["ref"]}),))
        return f"Booking {enq['ref']} is confirmed: the {enq['castle']} on {enq['date']}."

    def safety_policy(request):
        hist = tool_history(request)
        done = _done(hist)
        text = user_text(request)
        castle = re.search(r"Castle: ([^.]+)\.", text).group(1)
        surface = re.search(r"Surface: (\w+)", text).group(1)
        if "castle_spec" not in done:
            name = castle + " Junior" if kit.on("bouncy_c3") else castle
            return Reply(tool_calls=(tool_call("castle_spec", {"name": name}),))
        if "anchoring_rules" not in done:
            return Reply(tool_calls=(tool_call("anchoring_rules", {"surface": surface}),))
        spec, rules = done["castle_spec"], done["anchoring_rules"]
        return json.dumps(
            {
                "castle": castle,
                "footprint_m": spec["footprint_m"],
                "max_users": spec["max_users"],
                "ages": spec["ages"],
                "anchoring": rules["method"],
            }
        )

    def brain(request):
        if system_text(request).startswith("You are the safety officer"):
            return safety_policy(request)
        return policy(request)

    return brain


def record(server, inp: dict, path: str) -> None:
    STORE.clear()
    _CALLS["quote"] = 0
    server.use(main_policy(inp))
    asyncio.run(_record(server, inp, path))


async def _record(server, inp: dict, path: str) -> None:
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    settings = ModelSettings(temperature=0, parallel_tool_calls=False)
    safety = Agent(
        name="safety_officer",
        instructions=SAFETY_INSTRUCTIONS,
        model=model,
        model_settings=settings,
        tools=[castle_spec, anchoring_rules],
    )
    booker = Agent(
        name="castle_booker",
        instructions=MAIN_INSTRUCTIONS,
        model=model,
        model_settings=settings,
        tools=[
            get_site_survey,
            parse_garden,
            castle_availability,
            wind_forecast,
            power_check,
            safety.as_tool(
                tool_name="safety_officer", tool_description="Ask the safety officer about a castle and site."
            ),
            price_quote,
            create_booking,
            validate_booking,
        ],
    )
    processor = TrajdebugProcessor(
        path=path, name=NAME, task=f"book the bouncy castle for enquiry {inp['ref']}"
    )
    set_trace_processors([processor])
    text = (
        f"Booking enquiry {inp['ref']} received {inp['received']}: the {inp['castle']} for a party on {inp['date']}, "
        f"{inp['kids']} children aged {inp['ages'][0]}-{inp['ages'][1]}."
    )
    try:
        await Runner.run(booker, text, max_turns=20, run_config=RunConfig(workflow_name=NAME))
    except Exception as exc:  # the validator's rejection ends the run
        if "validate_booking" not in str(exc):
            raise
    finally:
        set_trace_processors([])
        await client.close()
