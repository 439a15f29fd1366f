"""OpenAI Agents SDK route: a bathroom remodelling quote builder with a tile-estimating agent used as a tool."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents import Agent, function_tool
from trajdebug.testing import Reply, tool_call

from .common import Case, conversation, oa_model, oa_run, register
from .kit import active

NAME = "bathroom-quote-builder"
ROUTE = "openai_agents"
DOMAIN = "bathroom remodelling quotes"
SHAPE = "Agents SDK: survey, tile estimator agent-as-tool (catalogue tool), material prices, labour rates, LLM-computed quote, submit_quote"
MAIN = "[bath-main] You build bathroom remodelling quotes from surveys, prices and labour rates."
TILES = "[bath-tiles] You estimate tiles for a bathroom from its areas and the chosen tile."

JOBS = {
    "BR-4401": {"customer": "Hughes", "region": "north-west", "wall_m2": 18.5, "floor_m2": 5.2, "tile": "TL-MET-300", "suite": "standard", "days": 6},
    "BR-4402": {"customer": "Adeyemi", "region": "midlands", "wall_m2": 22.0, "floor_m2": 6.8, "tile": "TL-SUB-100", "suite": "walk-in shower", "days": 8},
    "BR-4403": {"customer": "Kowalski", "region": "north-west", "wall_m2": 14.2, "floor_m2": 4.1, "tile": "TL-HEX-200", "suite": "standard", "days": 5},
    "BR-4404": {"customer": "Fraser", "region": "scotland", "wall_m2": 25.4, "floor_m2": 7.5, "tile": "TL-MET-300", "suite": "freestanding bath", "days": 9},
    "BR-4405": {"customer": "O'Neill", "region": "midlands", "wall_m2": 16.8, "floor_m2": 4.9, "tile": "TL-SUB-100", "suite": "standard", "days": 6},
    "BR-4406": {"customer": "Patel", "region": "south-east", "wall_m2": 20.1, "floor_m2": 6.0, "tile": "TL-HEX-200", "suite": "walk-in shower", "days": 7},
}
INPUTS = {k: k for k in JOBS}
REF_INPUTS = ["BR-4403", "BR-4404", "BR-4405", "BR-4406"]
CATALOGUE = {"TL-MET-300": 38.0, "TL-SUB-100": 24.5, "TL-HEX-200": 41.0}
SUITES = {"standard": 640.0, "walk-in shower": 1180.0, "freestanding bath": 1520.0}
DAY_RATE = {"north-west": 210.0, "midlands": 200.0, "scotland": 220.0, "south-east": 260.0}
TRADES = {"standard": "bathroom_fitter", "freestanding bath": "bathroom_fitter", "walk-in shower": "wetroom_fitter"}


def _main_policy(msgs: list[dict[str, Any]]) -> Any:
    user, done = conversation(msgs)
    job = user.split()[-1]
    got = {n: r for n, _, r in done}
    if "get_room_survey" not in got:
        return Reply(tool_calls=(tool_call("get_room_survey", {"job": job}),))
    s = got["get_room_survey"]
    if "tile_estimator" not in got:
        return Reply(tool_calls=(tool_call("tile_estimator", {"input": f"job {job}: walls {s['wall_m2']} m2, floor {s['floor_m2']} m2, tile {s['tile']}"}),))
    if "get_material_prices" not in got:
        return Reply(tool_calls=(tool_call("get_material_prices", {"region": s["region"], "suite": s["suite"]}),))
    if "get_labour_rates" not in got:
        trade = TRADES[s["suite"]]
        if active("bath_routing"):
            trade = "general_builder"
        return Reply(tool_calls=(tool_call("get_labour_rates", {"region": s["region"], "trade": trade}),))
    if "submit_quote" not in got:
        tiles = json.loads(got["tile_estimator"]) if isinstance(got["tile_estimator"], str) else got["tile_estimator"]
        prices, labour = got["get_material_prices"], got["get_labour_rates"]
        area = round(s["wall_m2"] + s["floor_m2"], 1)
        if active("bath_unit"):
            area = round(area * 10.764, 1)
        lines = [{"item": "tiles", "sku": tiles["sku"], "qty_m2": tiles["m2"], "gbp": round(tiles["m2"] * tiles["price_per_m2"], 2)},
                 {"item": "suite", "sku": prices["suite_sku"], "gbp": prices["suite_gbp"]},
                 {"item": "labour", "trade": labour["trade"], "gbp": round(labour["day_rate"] * s["days"], 2)}]
        args = {"job": job, "area_m2": area, "lines": json.dumps(lines), "price_list": prices["price_list"],
                "total_gbp": round(sum(l["gbp"] for l in lines), 2)}
        if active("bath_hallucinated"):
            args["discount_code"] = "SPRING15"
        return Reply(tool_calls=(tool_call("submit_quote", args),))
    return f"Quote {got['submit_quote']['quote']} sent to the customer."


def _tile_policy(msgs: list[dict[str, Any]]) -> Any:
    user, done = conversation(msgs)
    if not done:
        tile = user.split("tile ")[-1].strip()
        if active("bath_entity"):
            tile = "TL-MET-300" if tile != "TL-MET-300" else "TL-HEX-200"
        return Reply(tool_calls=(tool_call("tile_catalogue", {"sku": tile}),))
    cat = done[0][2]
    walls = float(user.split("walls ")[1].split()[0])
    floor = float(user.split("floor ")[1].split()[0])
    m2 = round((walls + floor) * 1.1, 1)
    return json.dumps({"sku": cat["sku"], "m2": m2, "price_per_m2": cat["price_per_m2"], "waste_allowance": "10%"})


register("[bath-main]", _main_policy)
register("[bath-tiles]", _tile_policy)


@function_tool
def get_room_survey(job: str) -> str:
    """The surveyor's measurements and the customer's choices for a job."""
    return json.dumps(dict(JOBS[job], job=job))


@function_tool
def tile_catalogue(sku: str) -> str:
    """A tile's catalogue entry."""
    return json.dumps({"sku": sku, "price_per_m2": CATALOGUE[sku], "box_m2": 1.08})


@function_tool
def get_material_prices(region: str, suite: str) -> str:
    """Merchant prices for a sanitaryware suite in a region."""
    price_list = "2027-Q1"
    gbp = SUITES[suite]
    if active("bath_stale"):
        price_list, gbp = "2025-Q3", round(gbp * 0.88, 2)
    return json.dumps({"suite_sku": "SU-" + suite.upper().replace(" ", "-"), "suite_gbp": gbp, "price_list": price_list, "region": region})


@function_tool
def get_labour_rates(region: str, trade: str) -> str:
    """Day rate for a trade in a region."""
    rate = DAY_RATE[region] * (1.15 if trade == "wetroom_fitter" else 1.0) * (0.8 if trade == "general_builder" else 1.0)
    return json.dumps({"region": region, "trade": trade, "day_rate": round(rate, 2)})


@function_tool(failure_error_function=None)
def submit_quote(job: str, area_m2: float, lines: str, price_list: str, total_gbp: float, discount_code: str = "") -> str:
    """Submit the quote to the customer portal."""
    j = JOBS[job]
    rows = json.loads(lines)
    if discount_code:
        raise RuntimeError(f'HTTP 422 {{"error": "unknown_discount_code", "code": "{discount_code}"}}')
    if price_list != "2027-Q1":
        raise RuntimeError(f'HTTP 409 {{"error": "price_list_expired", "price_list": "{price_list}"}}')
    measured = round(j["wall_m2"] + j["floor_m2"], 1)
    if abs(area_m2 - measured) > 0.5:
        raise RuntimeError(f"quote check: area {area_m2} m2 does not match the survey's {measured} m2")
    tile = next(r for r in rows if r["item"] == "tiles")
    if tile["sku"] != j["tile"]:
        raise RuntimeError(f"quote check: tile {tile['sku']} is not the customer's chosen {j['tile']}")
    labour = next(r for r in rows if r["item"] == "labour")
    if labour["trade"] not in ("bathroom_fitter", "wetroom_fitter"):
        raise RuntimeError(f"quote check: trade {labour['trade']} is not certified for sanitaryware and tiling (Part P/G)")
    return json.dumps({"quote": f"Q-{job}", "total_gbp": total_gbp})


def record(job: str, path: Path) -> None:
    model = oa_model()
    tiles = Agent(name="tile_estimator", instructions=TILES, tools=[tile_catalogue], model=model)
    main = Agent(name="quote_builder", instructions=MAIN, model=model,
                 tools=[get_room_survey, tiles.as_tool(tool_name="tile_estimator", tool_description="Estimate tiles for a job."),
                        get_material_prices, get_labour_rates, submit_quote])
    oa_run(main, f"Prepare the remodelling quote for job {job}", path, NAME, f"bathroom quote {job}")


CASES = [
    Case("bath_01", "bath_unit", "unit_error", "BR-4401", "generation gpt-4o-mini", 7, "llm",
         "submit_quote", "The quote model states the tiled area in square feet in a field the portal reads as square metres."),
    Case("bath_02", "bath_hallucinated", "hallucinated_value", "BR-4402", "generation gpt-4o-mini", 7, "llm",
         "submit_quote", "The quote model adds a discount code SPRING15 that nothing in the job offered."),
    Case("bath_03", "bath_entity", "subagent_wrong_entity", "BR-4401", "generation gpt-4o-mini", 3, "llm",
         "submit_quote", "The tile estimator agent looks up another tile than the one in the survey it was given."),
    Case("bath_04", "bath_routing", "wrong_routing", "BR-4402", "generation gpt-4o-mini", 6, "llm",
         "submit_quote", "The quote model sends the labour rate request to the general builder trade instead of the wet room fitter."),
    Case("bath_05", "bath_stale", "stale_data", "BR-4401", "get_material_prices", 1, "tool",
         "submit_quote", "The merchant price tool answers the expired 2025-Q3 price list."),
]
