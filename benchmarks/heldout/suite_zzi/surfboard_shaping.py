"""Surfboard shaping workshop: a custom-board order agent (OpenAI Agents SDK route: `Agent` + `Runner` +
function tools against the fake server's Responses endpoint, recorded with trajdebug's tracing
processor).

The order agent reads the order and the rider's profile, gets the volume target from the shop's
guide, fetches the shape template, has a design sub-agent (run as a tool, with a volume calculator)
size the board, looks up the glassing schedule, finds and reserves a blank, writes the CNC cut file,
books a shaping slot and finalizes the build sheet through a tool that checks it against the
workshop's rules.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import kit
from _shared import Case, messages, money, system_text, tool_outputs, user_text
from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool, set_trace_processors
from agents.exceptions import UserError
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call


AGENT = "board-orders"
ROUTE = "openai_agents"
DOMAIN = "surfboard shaping workshop"
EXT = "jsonl"
SHAPE = (
    "Agent+Runner (Responses API): get_order -> rider_profile -> volume_guide -> shape_template -> design "
    "sub-agent (as_tool: volume_calc, model dims) -> glassing_schedule -> blank_search -> reserve_blank -> "
    "cnc_cut_file -> shaper_calendar (re-asked after a transient error) -> finalize_order (validator tool)"
)
MODEL = "gpt-4o-mini"

FACTOR = {"beginner": 0.60, "intermediate": 0.42, "advanced": 0.38, "expert": 0.35}
FAMILY = {"shortboard": 1.0, "step-up": 1.05, "fish": 1.10, "mid-length": 1.30, "longboard": 1.75}
TEMPLATES = {
    "Performance Thruster": {
        "family": "shortboard",
        "fins": "thruster (FCS II)",
        "width_ratio": 0.256,
        "coef": 0.545,
    },
    "Step-Up Pin": {"family": "step-up", "fins": "thruster (Futures)", "width_ratio": 0.245, "coef": 0.540},
    "Quad Fish": {"family": "fish", "fins": "quad (FCS II)", "width_ratio": 0.295, "coef": 0.570},
    "Retro Fish": {"family": "fish", "fins": "twin keel (glass-on)", "width_ratio": 0.300, "coef": 0.575},
    "Egg Mid": {"family": "mid-length", "fins": "2+1 (box + FCS II)", "width_ratio": 0.255, "coef": 0.560},
    "Noserider": {"family": "longboard", "fins": "single (10in box)", "width_ratio": 0.205, "coef": 0.585},
}
BLANKS = [
    {"blank": "US Blanks 6'4\" R", "length_in": 76, "foam": "PU", "in_stock": True, "eta": None},
    {"blank": "US Blanks 6'8\" F", "length_in": 80, "foam": "PU", "in_stock": True, "eta": None},
    {"blank": "Arctic Foam 6'2\" EPS", "length_in": 74, "foam": "EPS", "in_stock": True, "eta": None},
    {
        "blank": "Arctic Foam 6'6\" EPS",
        "length_in": 78,
        "foam": "EPS",
        "in_stock": False,
        "eta": "2025-04-14",
    },
    {"blank": "US Blanks 7'6\" M", "length_in": 90, "foam": "PU", "in_stock": True, "eta": None},
    {"blank": "US Blanks 8'2\" M", "length_in": 98, "foam": "PU", "in_stock": False, "eta": "2025-04-10"},
    {"blank": "US Blanks 9'6\" L", "length_in": 114, "foam": "PU", "in_stock": True, "eta": None},
    {"blank": "Arctic Foam 5'10\" EPS", "length_in": 70, "foam": "EPS", "in_stock": True, "eta": None},
]
SLOTS = ["2025-04-02", "2025-04-07", "2025-04-09", "2025-04-15", "2025-04-22", "2025-04-28"]
CURE_DAYS = 12
BASE_PRICE = {"shortboard": 640.0, "step-up": 680.0, "fish": 660.0, "mid-length": 760.0, "longboard": 980.0}

ORDERS: dict[str, dict[str, Any]] = {
    "SO-881": {
        "customer": "Jake Morrow",
        "country": "US",
        "weight": 176,
        "unit": "lb",
        "ability": "intermediate",
        "template": "Performance Thruster",
        "length_in": 74,
        "resin": "PU",
        "deadline": "2025-05-02",
        "message": "Hey! Looking for a 6'2\" everyday thruster for Cornwall beach breaks. Clear finish please.",
    },
    "SO-882": {
        "customer": "Ana Ferreira",
        "country": "PT",
        "weight": 61,
        "unit": "kg",
        "ability": "advanced",
        "template": "Step-Up Pin",
        "length_in": 76,
        "resin": "PU",
        "deadline": "2025-05-09",
        "message": "Hi, I need a 6'4\" step-up for bigger winter days at Thurso. Pinline in teal.",
        "previous": "6'8\" x 20 1/2 x 2 3/4 egg, 38.5 L, single fin",
    },
    "SO-883": {
        "customer": "Tom Hale",
        "country": "UK",
        "weight": 96,
        "unit": "kg",
        "ability": "intermediate",
        "template": "Egg Mid",
        "length_in": 88,
        "resin": "PU",
        "deadline": "2025-05-16",
        "message": "Morning - after a 7'4\" egg for mellow days, 2+1 setup. Resin tint olive if possible.",
    },
    "SO-884": {
        "customer": "Priya Nair",
        "country": "UK",
        "weight": 68,
        "unit": "kg",
        "ability": "intermediate",
        "template": "Retro Fish",
        "length_in": 68,
        "resin": "epoxy",
        "deadline": "2025-05-09",
        "message": "Could you shape me a 5'8\" retro fish? Twin keels, epoxy please, for summer slop.",
    },
    "SO-885": {
        "customer": "Luca Bianchi",
        "country": "IT",
        "weight": 74,
        "unit": "kg",
        "ability": "advanced",
        "template": "Retro Fish",
        "length_in": 70,
        "resin": "epoxy",
        "deadline": "2025-05-23",
        "message": "Ciao, a 5'10\" twin keel fish on an EPS blank, epoxy glass. Small logo on the deck.",
    },
    "SO-886": {
        "customer": "Megan O'Dwyer",
        "country": "IE",
        "weight": 58,
        "unit": "kg",
        "ability": "beginner",
        "template": "Egg Mid",
        "length_in": 84,
        "resin": "PU",
        "deadline": "2025-05-30",
        "message": "Hello, first custom board! 7'0\" egg, something forgiving. Nothing fancy.",
    },
    "SO-887": {
        "customer": "Kai Roberts",
        "country": "US",
        "weight": 82,
        "unit": "kg",
        "ability": "expert",
        "template": "Performance Thruster",
        "length_in": 72,
        "resin": "epoxy",
        "deadline": "2025-05-09",
        "message": "6'0\" performance thruster, EPS/epoxy, FCS II boxes. Standard glassing is fine.",
    },
    "SO-888": {
        "customer": "Sofia Lindgren",
        "country": "SE",
        "weight": 64,
        "unit": "kg",
        "ability": "intermediate",
        "template": "Noserider",
        "length_in": 110,
        "resin": "PU",
        "deadline": "2025-05-30",
        "message": "Looking for a 9'2\" noserider for small days. Volan tint on the deck.",
    },
    "SO-889": {
        "customer": "Harry Osei",
        "country": "UK",
        "weight": 92,
        "unit": "kg",
        "ability": "advanced",
        "template": "Step-Up Pin",
        "length_in": 78,
        "resin": "PU",
        "deadline": "2025-05-16",
        "message": "Need a 6'6\" step-up pin for Porthleven. Extra glass on the deck please, I'm heavy on boards.",
    },
}

CASES = [
    Case(
        "zzi-board-1",
        "board.weight_units",
        "SO-881",
        "unit_error",
        ("response", 3, "llm"),
        ("finalize_order", 1),
        "The order model passes the rider's 176 (pounds, per the profile's unit field) to the volume guide as "
        "kilograms, so the board is designed for a 176 kg rider.",
    ),
    Case(
        "zzi-board-2",
        "board.quoted_thread",
        "SO-882",
        "context_pollution",
        ("get_order", 1, "tool"),
        ("finalize_order", 1),
        "The order tool returns the customer's message with the quoted thread of her previous order "
        "(a 38.5 L egg), and the model sizes the step-up to that volume instead of the guide's target.",
    ),
    Case(
        "zzi-board-3",
        "board.skip_glassing",
        "SO-883",
        "plan_error",
        ("response", 8, "llm"),
        ("finalize_order", 1),
        "After the design the order model goes straight to the blank search and never looks up the glassing "
        "schedule, so a 96 kg rider's board is built with the template's light 4+4 oz deck.",
    ),
    Case(
        "zzi-board-4",
        "board.fraction_dims",
        "SO-884",
        "format_drift",
        ("response", 7, "llm"),
        ("finalize_order", 1),
        "The design sub-agent answers its width and thickness as fractions ('20 1/2') instead of decimals, "
        "and the CNC cut file's number reader keeps only the whole inches.",
    ),
    Case(
        "zzi-board-5",
        "board.template_match",
        "SO-885",
        "wrong_retrieval",
        ("shape_template", 1, "tool"),
        ("finalize_order", 1),
        "The template library's name match returns the Quad Fish template for 'Retro Fish', so the build "
        "sheet carries quad FCS II boxes on a twin-keel order.",
    ),
]
REFERENCE_INPUTS = ["SO-886", "SO-887", "SO-888", "SO-889"]


class OrderRejected(ValueError):
    """The build sheet breaks one of the workshop's rules."""


def _kg(order: dict) -> float:
    return round(order["weight"] * 0.4536, 1) if order["unit"] == "lb" else float(order["weight"])


def _target(weight_kg: float, ability: str, family: str) -> float:
    return round(weight_kg * FACTOR[ability] * FAMILY[family], 1)


def _glassing(weight_kg: float, resin: str) -> str:
    heavy = weight_kg >= 90
    deck = "6+4 oz deck" if heavy else "4+4 oz deck"
    return f"{deck}, 4 oz bottom ({'epoxy' if resin == 'epoxy' else 'polyester'})"


def _inches(text: Any) -> float:
    """Exact inches from '19.25', '19 1/4' or 19.25."""
    s = str(text).strip().rstrip('"')
    if " " in s:
        whole, frac = s.split(" ", 1)
        return float(int(whole) + Fraction(frac))
    return float(Fraction(s)) if "/" in s else float(s)


def _litres(length: float, width: float, thickness: float, coef: float) -> float:
    return round(length * width * thickness * 16.387 / 1000 * coef, 1)


# -- tools --------------------------------------------------------------------------------------------------


@function_tool
def get_order(order_id: str) -> str:
    """A custom board order: customer, the form's choices and the customer's message."""
    o = ORDERS[order_id]
    text = o["message"]
    if kit.on("board.quoted_thread") and o.get("previous"):
        text += (
            f"\n\nOn 12 Mar 2024, {o['customer']} wrote:\n> Thanks for last year's board, it goes great. "
            f"For the record: {o['previous']}.\n> Cheers"
        )
    return json.dumps(
        {
            "order_id": order_id,
            "customer": o["customer"],
            "country": o["country"],
            "form": {
                "template": o["template"],
                "length_in": o["length_in"],
                "resin": o["resin"],
                "deadline": o["deadline"],
            },
            "message": text,
        }
    )


@function_tool
def rider_profile(order_id: str) -> str:
    """The rider's profile from the order form: weight (with its unit) and ability."""
    o = ORDERS[order_id]
    return json.dumps(
        {"customer": o["customer"], "weight": o["weight"], "weight_unit": o["unit"], "ability": o["ability"]}
    )


@function_tool
def volume_guide(weight_kg: float, ability: str, family: str) -> str:
    """The shop's volume guide: target litres for a rider weight (kg), ability and board family."""
    return json.dumps(
        {
            "weight_kg": weight_kg,
            "ability": ability,
            "family": family,
            "target_l": _target(weight_kg, ability, family),
            "tolerance_l": 1.5,
        }
    )


@function_tool
def shape_template(model: str) -> str:
    """Fetch a shape template from the library by model name."""
    names = list(TEMPLATES)
    if kit.on("board.template_match"):
        name = next(n for n in names if n.lower().split()[-1] == model.lower().split()[-1])
    else:
        name = next(n for n in names if n.lower() == model.lower())
    t = TEMPLATES[name]
    return json.dumps({"template": name, **t, "default_glassing": "4+4 oz deck, 4 oz bottom"})


@function_tool
def volume_calc(length_in: float, width_in: float, thickness_in: float, coef: float) -> str:
    """Board volume in litres from length, width, thickness (inches) and the template's coefficient."""
    return json.dumps({"volume_l": _litres(length_in, width_in, thickness_in, coef)})


@function_tool
def glassing_schedule(weight_kg: float, resin: str) -> str:
    """The glassing schedule for a rider weight and resin system."""
    return json.dumps({"schedule": _glassing(weight_kg, resin)})


@function_tool
def blank_search(min_length_in: int, foam: str) -> str:
    """Blanks in stock or on order, at least min_length_in long, of the given foam (PU or EPS)."""
    found = sorted(
        (b for b in BLANKS if b["length_in"] >= min_length_in and b["foam"] == foam),
        key=lambda b: b["length_in"],
    )
    return json.dumps({"blanks": found})


@function_tool
def reserve_blank(blank: str, order_id: str) -> str:
    """Reserve a blank for an order."""
    b = next(x for x in BLANKS if x["blank"] == blank)
    return json.dumps({"reserved": blank, "order_id": order_id, "ready": b["eta"] or "2025-04-01"})


@function_tool
def cnc_cut_file(template: str, length_in: str, width_in: str, thickness_in: str) -> str:
    """Write the CNC cut file for the shaping machine (dimensions in inches)."""

    def num(v: str) -> float:
        head = v.strip().rstrip('"').split(" ")[0]
        return float(Fraction(head)) if "/" in head else float(head)

    dims = {"length_in": num(length_in), "width_in": num(width_in), "thickness_in": num(thickness_in)}
    return json.dumps({"file": f"{template.replace(' ', '_').lower()}_{int(dims['length_in'])}.s3dx", **dims})


_calendar_calls = {"n": 0, "flaky": False}


@function_tool
def shaper_calendar(after: str) -> str:
    """The first free shaping slot on or after a date."""
    _calendar_calls["n"] += 1
    if _calendar_calls["flaky"] and _calendar_calls["n"] == 1:
        raise ConnectionError("workshop calendar (Google Calendar API): 503 backend error")
    return json.dumps({"slot": next(s for s in SLOTS if s >= after), "shaper": "Dan K."})


def _check(sheet: dict) -> None:
    o = ORDERS[sheet["order_id"]]
    t = TEMPLATES[o["template"]]
    if sheet["fins"] != t["fins"]:
        raise OrderRejected(f"order is a {o['template']} with {t['fins']}; build sheet has {sheet['fins']}")
    target = _target(_kg(o), o["ability"], t["family"])
    if abs(sheet["volume_l"] - target) > 1.5:
        raise OrderRejected(
            f"build sheet volume {sheet['volume_l']} L; guide target for a {_kg(o)} kg "
            f"{o['ability']} rider is {target} L (+/- 1.5)"
        )
    need = _glassing(_kg(o), o["resin"])
    if sheet["glassing"] != need:
        raise OrderRejected(f"glassing '{sheet['glassing']}' for a {_kg(o)} kg rider; schedule says '{need}'")
    dims = {k: _inches(sheet[k]) for k in ("length_in", "width_in", "thickness_in")}
    for k, v in dims.items():
        if abs(sheet["cnc"][k] - v) > 0.01:
            raise OrderRejected(f"CNC file {k} {sheet['cnc'][k]:.2f} in, build sheet {sheet[k]} in")
    blank = next(b for b in BLANKS if b["blank"] == sheet["blank"])
    if blank["length_in"] < dims["length_in"] + 2:
        raise OrderRejected(f"blank {blank['blank']} too short for a {dims['length_in']:.0f} in board")
    if blank["foam"] == "EPS" and o["resin"] != "epoxy":
        raise OrderRejected(f"EPS blank {blank['blank']} with {o['resin']} resin")
    if blank["eta"] and sheet["shaping"] < blank["eta"]:
        raise OrderRejected(f"shaping {sheet['shaping']} before the blank arrives ({blank['eta']})")
    if sheet["delivery"] > o["deadline"]:
        raise OrderRejected(f"delivery {sheet['delivery']} after the customer's deadline {o['deadline']}")


@function_tool(failure_error_function=None)
def finalize_order(build_sheet_json: str) -> str:
    """Finalize the build sheet (JSON); it is checked against the workshop's rules."""
    sheet = json.loads(build_sheet_json)
    _check(sheet)
    return json.dumps({"final": True, "job": f"JOB-{sheet['order_id']}", "price": sheet["price"]})


# -- the fake model --------------------------------------------------------------------------------------------

DESIGN_INSTRUCTIONS = (
    "You size a surfboard for a target volume on a template. Check a starting outline with volume_calc, then "
    "answer JSON: {length_in, width_in, thickness_in, volume_l} hitting the target."
)
MAIN_INSTRUCTIONS = (
    "You turn custom surfboard orders into build sheets. Read the order and rider profile, get the volume target, "
    "fetch the template, have board_designer size the board, look up the glassing schedule, find and reserve a "
    "blank, write the CNC cut file, book a shaping slot and finalize the order."
)
_NUM = r"\d+(?:\.\d+)?"
_DESIGN = re.compile(
    rf"template (?P<tpl>[A-Za-z -]+?), (?P<len>\d+) in long, target (?P<vol>{_NUM}) L, "
    rf"width ratio (?P<ratio>{_NUM}), coefficient (?P<coef>{_NUM})"
)


def _fraction(x: float) -> str:
    whole = int(x)
    sixteenths = round((x - whole) * 16)
    if sixteenths == 0:
        return str(whole)
    f = Fraction(sixteenths, 16)
    return f"{whole} {f.numerator}/{f.denominator}"


def _design_turn(msgs: list[dict]) -> Any:
    m = _DESIGN.search(user_text(msgs))
    length, target, ratio, coef = int(m["len"]), float(m["vol"]), float(m["ratio"]), float(m["coef"])
    width = round(length * ratio * 4) / 4
    outs = dict(tool_outputs(msgs))
    if "volume_calc" not in outs:
        return Reply(
            tool_calls=(
                tool_call(
                    "volume_calc", {"length_in": length, "width_in": width, "thickness_in": 2.5, "coef": coef}
                ),
            )
        )
    thickness = round(2.5 * target / outs["volume_calc"]["volume_l"] * 16) / 16
    volume = _litres(length, width, thickness, coef)
    if kit.on("board.fraction_dims"):
        return json.dumps(
            {
                "length_in": length,
                "width_in": _fraction(width),
                "thickness_in": _fraction(thickness),
                "volume_l": volume,
            }
        )
    return json.dumps({"length_in": length, "width_in": width, "thickness_in": thickness, "volume_l": volume})


def _main_turn(msgs: list[dict]) -> Any:
    order_id = re.search(r"SO-\d+", user_text(msgs)).group(0)
    got = {n: o for n, o in tool_outputs(msgs) if isinstance(o, dict)}  # a failed call is asked again

    def call(name: str, args: dict) -> Reply:
        return Reply(tool_calls=(tool_call(name, args),))

    if "get_order" not in got:
        return call("get_order", {"order_id": order_id})
    order = got["get_order"]
    form = order["form"]
    if "rider_profile" not in got:
        return call("rider_profile", {"order_id": order_id})
    rider = got["rider_profile"]
    if "volume_guide" not in got:
        weight = (
            rider["weight"]
            if kit.on("board.weight_units")
            else (round(rider["weight"] * 0.4536, 1) if rider["weight_unit"] == "lb" else rider["weight"])
        )
        family = TEMPLATES[form["template"]]["family"]
        return call("volume_guide", {"weight_kg": weight, "ability": rider["ability"], "family": family})
    guide = got["volume_guide"]
    if "shape_template" not in got:
        return call("shape_template", {"model": form["template"]})
    tpl = got["shape_template"]
    if "board_designer" not in got:
        target = guide["target_l"]
        quoted = re.search(r"([\d.]+) L", order["message"])
        if quoted:  # the customer's own volume figure in the message
            target = float(quoted.group(1))
        brief = (
            f"Size template {tpl['template']}, {form['length_in']} in long, target {target} L, "
            f"width ratio {tpl['width_ratio']}, coefficient {tpl['coef']}."
        )
        return call("board_designer", {"input": brief})
    design = got["board_designer"]
    skip_glassing = kit.on("board.skip_glassing")
    if "glassing_schedule" not in got and not skip_glassing:
        return call("glassing_schedule", {"weight_kg": guide["weight_kg"], "resin": form["resin"]})
    foam = "EPS" if form["resin"] == "epoxy" else "PU"
    if "blank_search" not in got:
        return call("blank_search", {"min_length_in": int(form["length_in"]) + 2, "foam": foam})
    blanks = got["blank_search"]["blanks"]
    if "reserve_blank" not in got:
        return call("reserve_blank", {"blank": blanks[0]["blank"], "order_id": order_id})
    reserved = got["reserve_blank"]
    if "cnc_cut_file" not in got:
        return call(
            "cnc_cut_file",
            {
                "template": tpl["template"],
                "length_in": str(design["length_in"]),
                "width_in": str(design["width_in"]),
                "thickness_in": str(design["thickness_in"]),
            },
        )
    if "shaper_calendar" not in got:
        return call("shaper_calendar", {"after": reserved["ready"]})
    slot = got["shaper_calendar"]["slot"]
    if "finalize_order" not in got:
        glassing = (
            got["glassing_schedule"]["schedule"]
            if "glassing_schedule" in got
            else f"{tpl['default_glassing']} ({'epoxy' if form['resin'] == 'epoxy' else 'polyester'})"
        )
        delivery = (dt.date.fromisoformat(slot) + dt.timedelta(days=CURE_DAYS)).isoformat()
        price = BASE_PRICE[tpl["family"]] + (45.0 if form["resin"] == "epoxy" else 0.0)
        sheet = {
            "order_id": order_id,
            "customer": order["customer"],
            "template": tpl["template"],
            "fins": tpl["fins"],
            "length_in": design["length_in"],
            "width_in": design["width_in"],
            "thickness_in": design["thickness_in"],
            "volume_l": design["volume_l"],
            "glassing": glassing,
            "resin": form["resin"],
            "blank": reserved["reserved"],
            "cnc": {k: got["cnc_cut_file"][k] for k in ("length_in", "width_in", "thickness_in")},
            "shaping": slot,
            "delivery": delivery,
            "price": price,
        }
        return call("finalize_order", {"build_sheet_json": json.dumps(sheet)})
    done = got["finalize_order"]
    return f"Order {order_id} is in the build queue as {done['job']} (£{money(done['price'])})."


def policy(request):
    msgs = messages(request)
    system = system_text(msgs)
    if system.startswith("You size a surfboard"):
        return _design_turn(msgs)
    if system.startswith("You turn custom surfboard orders"):
        return _main_turn(msgs)
    raise ValueError(f"unexpected prompt: {system[:60]}")


# -- one run ------------------------------------------------------------------------------------------------------


def record(order_id: str, out: Path, server: Any) -> None:
    """Run the order agent once on `order_id`, recording into the JSONL file `out`."""
    server.use(policy)
    _calendar_calls.update(n=0, flaky=order_id in ("SO-882", "SO-886", "SO-889"))
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIResponsesModel(model=MODEL, openai_client=client)
    designer = Agent(
        name="board_designer_agent", instructions=DESIGN_INSTRUCTIONS, model=model, tools=[volume_calc]
    )
    agent = Agent(
        name="order_desk",
        instructions=MAIN_INSTRUCTIONS,
        model=model,
        tools=[
            get_order,
            rider_profile,
            volume_guide,
            shape_template,
            designer.as_tool(
                tool_name="board_designer",
                tool_description="Size the board: give the template, length, target volume, width ratio "
                "and coefficient.",
            ),
            glassing_schedule,
            blank_search,
            reserve_blank,
            cnc_cut_file,
            shaper_calendar,
            finalize_order,
        ],
    )
    processor = TrajdebugProcessor(path=out, name=AGENT, task=f"build sheet for order {order_id}")
    set_trace_processors([processor])
    try:
        Runner.run_sync(
            agent,
            f"New order {order_id} from {ORDERS[order_id]['customer']}: prepare the build sheet.",
            max_turns=20,
            run_config=RunConfig(workflow_name=AGENT),
        )
    except UserError as exc:  # the finalize tool's rejection ends the run
        if not isinstance(exc.__cause__, OrderRejected):
            raise
