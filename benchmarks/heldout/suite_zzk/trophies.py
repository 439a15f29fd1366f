"""Trophy engraving: an order desk agent for an engraving shop (route: openai_agents, Chat Completions).

An Agents SDK agent takes an engraving order: it fetches the order and the trophy's spec, the
team roster (CSV) and parses it, has a proofreader sub-agent (an agent run as a tool, with a
club register tool) check the header plate, lays out the plate, prices the job and runs the
shop's job check, which raises when the job ticket breaks the shop's rules.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import common
import kit
from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from openai import AsyncOpenAI


NAME = "trophy-engraving-desk"
ROUTE = "openai_agents"
DOMAIN = "trophy engraving"
SHAPE = (
    "Agents SDK (Chat Completions): clerk agent, ten turns; tools for order, trophy spec, roster CSV, roster "
    "parser, plate layout, pricing, job check (fatal); proofreader sub-agent as a tool (club register tool)"
)

TROPHIES = {
    "TR-SH-300": {
        "name": "Walnut shield 300 mm",
        "plate_width_mm": 80,
        "plate_height_mm": 25,
        "max_lines": 3,
    },
    "TR-CUP-450": {"name": "Silver cup 450 mm", "plate_width_mm": 60, "plate_height_mm": 20, "max_lines": 3},
    "TR-PL-250": {
        "name": "Acrylic plaque 250 mm",
        "plate_width_mm": 100,
        "plate_height_mm": 30,
        "max_lines": 4,
    },
}
CLUBS = {  # the county FA's club register
    "AVA": "Ashby Vale Athletic Football Club",
    "KRN": "Kirkby Rangers Netball Club",
    "HWH": "Harewood Hornets Hockey Club",
    "SBR": "Saltburn Rowing Club",
    "TCC": "Thornley Colliery Cricket Club",
    "MLF": "Millfield Ladies Football Club",
    "BRB": "Brampton Bowls Club",
    "WSJ": "Westoe Juniors Rugby Club",
    "CGC": "Calder Gymnastics Club",
}
REGISTER_WIDTH = 24  # the register export's name column


def _roster(names: list[str]) -> str:
    rows = ["name,number"]
    for i, n in enumerate(names, start=1):
        rows.append(f'"{n}",{i}' if "," in n else f"{n},{i}")
    return "\n".join(rows)


def _order(order_id: str, club: str, sku: str, award: str, season: str, names: list[str]) -> dict[str, Any]:
    return {
        "order_id": order_id,
        "club_code": club,
        "club": CLUBS[club],
        "sku": sku,
        "award": award,
        "season": season,
        "plates": len(names),
        "roster_ref": f"RS-{order_id[-4:]}",
        "roster": _roster(names),
    }


INPUTS: dict[str, dict[str, Any]] = {
    "ashby": _order(
        "EN-7301",
        "AVA",
        "TR-SH-300",
        "League Champions",
        "2024/25",
        [
            "Daniel Okafor",
            "Sam Reid",
            "Liam Patel",
            "Josh Carter",
            "Ben Ashworth",
            "Kieran Doyle",
            "Tom Hayes",
            "Ryan Mills",
            "Alfie Dunn",
            "Max Turner",
        ],
    ),
    "kirkby": _order(
        "EN-7304",
        "KRN",
        "TR-CUP-450",
        "Cup Winners",
        "2024/25",
        [
            "Ellie Shaw",
            "Grace Nwosu",
            "O'Neill, Aoife",
            "Maya Hughes",
            "Chloe Benson",
            "Jess Rowe",
            "Priya Das",
        ],
    ),
    "harewood": _order(
        "EN-7310",
        "HWH",
        "TR-SH-300",
        "Division One Winners",
        "2024/25",
        [
            "Freya Lund",
            "Isla Grant",
            "Zara Ali",
            "Poppy Lane",
            "Ruby Frost",
            "Hannah Cole",
            "Megan Price",
            "Lucy Ward",
        ],
    ),
    "saltburn": _order(
        "EN-7312",
        "SBR",
        "TR-PL-250",
        "Head of the River",
        "2025",
        [
            "Jack Storey",
            "Owen Pike",
            "Callum Reeve",
            "Ethan Moss",
            "Noah Quinn",
            "Leo Hart",
            "Adam Fenwick",
            "Finn Marsh",
        ],
    ),
    "thornley": _order(
        "EN-7315",
        "TCC",
        "TR-SH-300",
        "League Champions",
        "2025",
        [
            "Harry Wood",
            "Jacob Lee",
            "Oscar Bell",
            "George Hunt",
            "Charlie Fox",
            "Ali Khan",
            "Luke Nash",
            "Matt Dean",
            "Will Boyd",
            "Sid Rao",
            "Dev Shah",
        ],
    ),
    "millfield": _order(
        "EN-7290",
        "MLF",
        "TR-CUP-450",
        "County Cup",
        "2024/25",
        ["Amy Cross", "Beth Kerr", "Cara Lowe", "Dana Moore", "Evie Nash", "Fern Ochoa"],
    ),
    "brampton": _order(
        "EN-7293",
        "BRB",
        "TR-PL-250",
        "Fours Champions",
        "2025",
        ["Ken Booth", "Alan Pryce", "Mary Stoker", "Joan Tate"],
    ),
    "westoe": _order(
        "EN-7296",
        "WSJ",
        "TR-SH-300",
        "Under 14 League",
        "2024/25",
        [
            "Kai Dobson",
            "Reece Grey",
            "Tyler Hume",
            "Jay Irwin",
            "Cole Jarvis",
            "Dean Kemp",
            "Evan Lamb",
            "Finlay Moor",
            "Zac Nolan",
        ],
    ),
    "calder": _order(
        "EN-7298",
        "CGC",
        "TR-CUP-450",
        "Regional Team Gold",
        "2025",
        ["Holly Park", "Sofia Rossi", "Mia Chen", "Lily Hart", "Ava Kaur"],
    ),
}
REFS = ["millfield", "brampton", "westoe", "calder"]

CASES = [
    {
        "id": "trophies-roster",
        "input": "kirkby",
        "kind": "lossy_parsing",
        "root": ("parse_roster", 1),
        "failure": ("check_job", 1),
        "description": "parse_roster splits the CSV on every comma and skips rows that then have three fields, "
        'dropping the quoted "O\'Neill, Aoife", so 6 names are engraved for 7 plates.',
    },
    {
        "id": "trophies-season",
        "input": "harewood",
        "kind": "hallucinated_value",
        "root": ("generation fake-model", 5),
        "failure": ("check_job", 1),
        "description": "When it composes the header plate for the proofreader, the clerk model writes the season as "
        "2023/24; the order says 2024/25.",
    },
    {
        "id": "trophies-width",
        "input": "saltburn",
        "kind": "wrong_tool_args",
        "root": ("generation fake-model", 8),
        "failure": ("check_job", 1),
        "description": "The clerk model calls layout_plate with the plaque's plate height (30 mm) as plate_width_mm "
        "instead of its width (100 mm).",
    },
    {
        "id": "trophies-club",
        "input": "ashby",
        "kind": "truncated_result",
        "root": ("club_register", 1),
        "failure": ("check_job", 1),
        "description": "The club register answers with the name cut to its 24-character export column, and the "
        "proofreader puts 'Ashby Vale Athletic Foot' on the header plate.",
    },
    {
        "id": "trophies-lines",
        "input": "thornley",
        "kind": "off_by_one",
        "root": ("layout_plate", 1),
        "failure": ("check_job", 1),
        "description": "layout_plate keeps lines[:max_lines - 1], so the 3-line header loses its season line on a "
        "3-line plate.",
    },
]


# -- the scripted model -----------------------------------------------------------------------------------------


def _clerk(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    calls = common.tool_calls_made(request)
    results = dict(zip([c[0] for c in calls], common.tool_results(request), strict=False))
    done = [c[0] for c in calls]
    order_id = common.last_user(request).split("order ")[1].split()[0].rstrip(".")
    if "get_order" not in done:
        return Reply(tool_calls=(tool_call("get_order", {"order_id": order_id}),))
    order = results["get_order"]
    if "trophy_spec" not in done:
        return Reply(tool_calls=(tool_call("trophy_spec", {"sku": order["sku"]}),))
    if "get_roster" not in done:
        return Reply(tool_calls=(tool_call("get_roster", {"roster_ref": order["roster_ref"]}),))
    if "parse_roster" not in done:
        return Reply(tool_calls=(tool_call("parse_roster", {"csv_text": results["get_roster"]["csv"]}),))
    if "proofread_plate" not in done:
        season = order["season"]
        if kit.on("trophies-season"):
            start = int(season[:4]) - 1
            season = f"{start}/{str(start + 1)[2:]}"
        header = [order["club"], order["award"], season]
        return Reply(
            tool_calls=(
                tool_call(
                    "proofread_plate",
                    {"input": json.dumps({"club_code": order["club_code"], "lines": header})},
                ),
            )
        )
    spec = results["trophy_spec"]
    if "layout_plate" not in done:
        lines = common.loads(results["proofread_plate"])["lines"]
        width = spec["plate_width_mm"]
        if kit.on("trophies-width"):
            width = spec["plate_height_mm"]
        return Reply(
            tool_calls=(
                tool_call(
                    "layout_plate", {"order_id": order["order_id"], "lines": lines, "plate_width_mm": width}
                ),
            )
        )
    names = results["parse_roster"]["names"]
    if "price_job" not in done:
        chars = sum(len(n) for n in names) + sum(len(x) for x in results["layout_plate"]["lines"])
        return Reply(
            tool_calls=(
                tool_call(
                    "price_job",
                    {"order_id": order["order_id"], "plates": len(names) + 1, "characters": chars},
                ),
            )
        )
    if "check_job" not in done:
        return Reply(tool_calls=(tool_call("check_job", {"order_id": order["order_id"]}),))
    return (
        f"Order {order['order_id']} is ready for the engraver: {len(names)} name plates and a header plate, "
        f"GBP {results['price_job']['total_gbp']:.2f}."
    )


def _proofreader(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    calls = common.tool_calls_made(request)
    text = json.loads(common.last_user(request))
    if not calls:
        return Reply(tool_calls=(tool_call("club_register", {"club_code": text["club_code"]}),))
    official = common.tool_results(request)[-1]["name"]
    lines = [official, *text["lines"][1:]]
    return json.dumps({"lines": lines, "changes": [] if official == text["lines"][0] else ["club name"]})


def brain(request: Any) -> Any:
    system = common.system_text(request)
    if system.startswith("You proofread"):
        return _proofreader(request)
    return _clerk(request)


# -- tools ----------------------------------------------------------------------------------------------------

TICKET: dict[str, Any] = {}


def _this_order(order_id: str) -> dict[str, Any]:
    return next(o for o in INPUTS.values() if o["order_id"] == order_id)


@function_tool
def get_order(order_id: str) -> str:
    """Fetch an engraving order."""
    o = _this_order(order_id)
    TICKET["order_id"] = order_id
    return json.dumps(
        {k: o[k] for k in ("order_id", "club_code", "club", "sku", "award", "season", "plates", "roster_ref")}
    )


@function_tool
def trophy_spec(sku: str) -> str:
    """The trophy's engraving plate specification."""
    return json.dumps({"sku": sku, **TROPHIES[sku]})


@function_tool
def get_roster(roster_ref: str) -> str:
    """The team roster uploaded by the club, as CSV."""
    o = next(o for o in INPUTS.values() if o["roster_ref"] == roster_ref)
    return json.dumps({"roster_ref": roster_ref, "csv": o["roster"]})


@function_tool
def parse_roster(csv_text: str) -> str:
    """Parse a roster CSV into the names to engrave."""
    import csv
    import io

    names = []
    if kit.on("trophies-roster"):
        for line in csv_text.splitlines()[1:]:
            parts = line.split(",")
            if len(parts) != 2:
                continue
            names.append(parts[0])
    else:
        names = [row["name"] for row in csv.DictReader(io.StringIO(csv_text))]
    names = [" ".join(reversed(n.split(", "))) if ", " in n else n for n in names]
    TICKET["names"] = names
    return json.dumps({"names": names, "count": len(names)})


@function_tool
def club_register(club_code: str) -> str:
    """The county FA register's entry for a club."""
    name = CLUBS[club_code]
    if kit.on("trophies-club"):
        name = name[:REGISTER_WIDTH]
    return json.dumps({"club_code": club_code, "name": name, "status": "affiliated"})


@function_tool
def layout_plate(order_id: str, lines: list[str], plate_width_mm: int) -> str:
    """Lay out the header plate's text lines for a plate width."""
    spec = TROPHIES[_this_order(order_id)["sku"]]
    keep = spec["max_lines"] - 1 if kit.on("trophies-lines") else spec["max_lines"]
    kept = lines[:keep]
    longest = max(len(x) for x in kept)
    font_pt = min(14, round(plate_width_mm * 2.6 / max(longest, 1), 1))
    TICKET["layout"] = {"lines": kept, "plate_width_mm": plate_width_mm, "font_pt": font_pt}
    return json.dumps({"lines": kept, "font_pt": font_pt, "fits": font_pt >= 5})


@function_tool
def price_job(order_id: str, plates: int, characters: int) -> str:
    """Price an engraving job."""
    total = round(6.50 + 2.20 * plates + 0.12 * characters, 2)
    TICKET["price"] = {"plates": plates, "characters": characters, "total_gbp": total}
    return json.dumps({"order_id": order_id, "total_gbp": total})


@function_tool(failure_error_function=None)
def check_job(order_id: str) -> str:
    """Check the job ticket against the shop's rules before it goes to the engraver."""
    order, spec = _this_order(order_id), TROPHIES[_this_order(order_id)["sku"]]
    names, layout = TICKET["names"], TICKET["layout"]
    if len(names) != order["plates"]:
        raise ValueError(
            f"order {order_id} is for {order['plates']} name plates; the ticket has {len(names)} names"
        )
    if len(layout["lines"]) != 3:
        raise ValueError(
            f"order {order_id}: header plate has {len(layout['lines'])} lines "
            f"({' / '.join(layout['lines'])}); it needs club, award and season"
        )
    club, _award, season = layout["lines"]
    if club != order["club"]:
        raise ValueError(
            f"order {order_id}: header plate names '{club}'; the order's club is '{order['club']}'"
        )
    if season != order["season"]:
        raise ValueError(
            f"order {order_id}: header plate says season {season}; the order is for {order['season']}"
        )
    if layout["plate_width_mm"] != spec["plate_width_mm"]:
        raise ValueError(
            f"order {order_id}: plate laid out for {layout['plate_width_mm']} mm; {order['sku']} "
            f"plates are {spec['plate_width_mm']} mm wide"
        )
    return json.dumps({"order_id": order_id, "status": "released to engraver"})


def build(client: AsyncOpenAI) -> Agent:
    model = OpenAIChatCompletionsModel(model=common.MODEL, openai_client=client)
    proofreader = Agent(
        name="proofreader",
        model=model,
        tools=[club_register],
        instructions="You proofread engraving text against the club register and answer with the corrected lines.",
        model_settings=ModelSettings(temperature=0),
    )
    return Agent(
        name="engraving_clerk",
        model=model,
        model_settings=ModelSettings(temperature=0),
        instructions="You prepare trophy engraving jobs: read the order, the trophy and the roster, get the header "
        "plate proofread, lay it out, price the job and check it before release.",
        tools=[
            get_order,
            trophy_spec,
            get_roster,
            parse_roster,
            proofreader.as_tool(tool_name="proofread_plate", tool_description="Proofread plate text."),
            layout_plate,
            price_job,
            check_job,
        ],
    )


def record(server: Any, key: str, path: Path) -> None:
    from agents import set_trace_processors
    from agents.exceptions import UserError

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    server.use(brain)
    TICKET.clear()
    order = INPUTS[key]
    set_trace_processors(
        [TrajdebugProcessor(path=str(path), name=NAME, task=f"engrave order {order['order_id']}")]
    )

    async def serve() -> None:
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        try:
            await Runner.run(
                build(client),
                f"Please prepare order {order['order_id']} for engraving.",
                max_turns=14,
                run_config=RunConfig(workflow_name=NAME),
            )
        finally:
            await client.close()

    try:
        asyncio.run(serve())
    except UserError:
        pass
