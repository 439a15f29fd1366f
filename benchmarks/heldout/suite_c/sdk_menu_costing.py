"""menu_costing: plate costing for a restaurant group's menu revision (recorded with the trajdebug
SDK; a ``dish_coster`` sub-agent per dish; unit costs memoised in ``run.state`` across dishes).

load_menu -> per dish: cost_dish (agent: find_recipe_card -> pick_recipe (llm) -> get_recipe -> per
ingredient: recall_unit_cost from the run's memo, or supplier_price -> parse_price_sheet ->
remember_unit_cost; plate_cost) -> menu_price_check (the finance rule: food cost 18-38 % of the menu price).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness import FAULT, AgentSpec, Case

import trajdebug


SHEETS = {
    "double cream": "Double cream | 12 x 1 L case | GBP 38.40",
    "beef chuck": "Beef chuck, diced | 1 x 5 kg bag | GBP 54.50",
    "beef cheek": "Beef cheek, trimmed | 1 x 2 kg pack | GBP 37.80",
    "red wine": "Cooking red wine | 6 x 0.75 L case | GBP 27.00",
    "shallots": "Banana shallots | 1 x 10 kg sack | GBP 18.50",
    "butter": "Unsalted butter | 1 x 10 kg block | GBP 86.00",
    "flour": "Plain flour T55 | 1 x 25 kg sack | GBP 21.40",
    "liquid egg": "Free-range liquid egg | 1 x 10 kg tub | GBP 35.00",
    "caster sugar": "Caster sugar | 1 x 25 kg sack | GBP 24.00",
    "vanilla pods": "Madagascan vanilla pods | 1 x 0.1 kg pack | GBP 42.00",
    "salmon": "Salmon fillet, skin on | 1 x 5 kg box | GBP 89.50",
    "smoked haddock": "Undyed smoked haddock | 1 x 3 kg pack | GBP 47.40",
    "wagyu striploin": "Wagyu striploin A4 | 1 x 5 kg loin | GBP 1,150.00",
    "sirloin": "Sirloin steak, 28-day aged | 1 x 4 kg pack | GBP 96.00",
    "potatoes": "Maris Piper potatoes | 1 x 25 kg sack | GBP 13.75",
    "bramley apples": "Bramley apples | 1 x 12 kg box | GBP 19.20",
}

RECIPES = {
    "R-101": {"title": "Beef bourguignon (bistro)", "lines": [("beef chuck", 0.22), ("red wine", 0.15), ("shallots", 0.05), ("butter", 0.02)]},
    "R-117": {"title": "Beef cheek bourguignon (tasting menu)", "lines": [("beef cheek", 0.35), ("red wine", 0.25), ("shallots", 0.06), ("butter", 0.04), ("double cream", 0.03)]},
    "R-204": {"title": "Salmon with beurre blanc", "lines": [("salmon", 0.18), ("butter", 0.05), ("shallots", 0.02), ("double cream", 0.04)]},
    "R-305": {"title": "Creme brulee", "lines": [("double cream", 0.12), ("liquid egg", 0.06), ("caster sugar", 0.03), ("vanilla pods", 0.004)]},
    "R-412": {"title": "Wagyu striploin, shallot butter", "lines": [("wagyu striploin", 0.18), ("butter", 0.02), ("shallots", 0.03), ("red wine", 0.05)]},
    "R-518": {"title": "Tarte Tatin", "lines": [("flour", 0.07), ("butter", 0.08), ("bramley apples", 0.3), ("caster sugar", 0.06), ("double cream", 0.06)]},
    "R-623": {"title": "Steak frites", "lines": [("sirloin", 0.22), ("potatoes", 0.3), ("butter", 0.03)]},
    "R-731": {"title": "Fish pie", "lines": [("salmon", 0.1), ("smoked haddock", 0.08), ("potatoes", 0.25), ("double cream", 0.06), ("butter", 0.03)]},
}
MENU = {
    "Beef bourguignon": 18.00, "Salmon with beurre blanc": 19.00, "Creme brulee": 8.00, "Wagyu striploin": 115.00,
    "Tarte Tatin": 7.00, "Steak frites": 21.00, "Fish pie": 16.00,
}
FOOD_COST_BAND = (18.0, 38.0)


class CostingRejected(Exception):
    """Finance rejected the menu costing."""


# -- the scripted model ---------------------------------------------------------------------------------


def fake_llm_pick(dish: str, cards: list[dict[str, Any]]) -> str:
    FAULT.llm_tick()
    exact = [c for c in cards if c["title"].lower().startswith(dish.lower())]
    pick = exact[0] if exact else cards[0]
    if FAULT.on("picks_first_recipe_card") and cards[0] is not pick:
        pick = cards[0]
        FAULT.fire_llm(pick["recipe_id"])
    return f"{pick['recipe_id']} — {pick['title']} is the card for this dish."


# -- steps -----------------------------------------------------------------------------------------------------


@trajdebug.step(kind="tool")
def load_menu(revision: str, dishes: list[str]) -> list[dict[str, Any]]:
    return [{"dish": d, "menu_price": MENU[d]} for d in dishes]


@trajdebug.step(kind="retrieval")
def find_recipe_card(dish: str) -> list[dict[str, Any]]:
    words = set(dish.lower().split())
    cards = [{"recipe_id": rid, "title": r["title"]} for rid, r in RECIPES.items() if words & set(r["title"].lower().split())]
    return sorted(cards, key=lambda c: c["recipe_id"], reverse=True)


@trajdebug.step(kind="llm")
def pick_recipe(dish: str, cards: list[dict[str, Any]]) -> str:
    return fake_llm_pick(dish, cards)


@trajdebug.step(kind="tool")
def get_recipe(recipe_id: str) -> dict[str, Any]:
    r = RECIPES[recipe_id]
    return {"recipe_id": recipe_id, "title": r["title"], "lines": [{"ingredient": i, "qty": q} for i, q in r["lines"]]}


@trajdebug.step(kind="tool")
def supplier_price(ingredient: str) -> str:
    return SHEETS[ingredient]


@trajdebug.step(kind="parse")
def parse_price_sheet(sheet: str) -> dict[str, Any]:
    FAULT.tick("parse_price_sheet")
    name, pack, price = [p.strip() for p in sheet.split("|")]
    count, size, unit = re.fullmatch(r"(\d+) x ([\d.]+) (kg|L) \w+", pack).groups()
    money = price.split()[-1]
    value = float(money.replace(",", ""))
    if FAULT.on("sheet_price_stops_at_comma") and "," in money:
        value = float(money.split(",")[0])  # "1,150.00" -> 1.0
        FAULT.fire_tool("parse_price_sheet", f'"pack_price": {value}', kind="parse")
    return {"item": name, "pack_count": int(count), "pack_size": float(size), "unit": unit, "pack_price": value}


@trajdebug.step(kind="state")
def remember_unit_cost(ingredient: str, sheet: dict[str, Any]) -> float:
    """Memoise the cost per kg / L for the rest of the menu run."""
    FAULT.tick("remember_unit_cost")
    per_unit = sheet["pack_price"] / (sheet["pack_count"] * sheet["pack_size"])
    if FAULT.on("memo_ignores_case_count") and sheet["pack_count"] > 1:
        per_unit = sheet["pack_price"] / sheet["pack_size"]  # price per bottle/carton, not per litre
        if not FAULT.fired:
            FAULT.fire_tool("remember_unit_cost", round(per_unit, 4), kind="state")
    per_unit = round(per_unit, 4)
    trajdebug.current_run().state[f"unit_cost:{ingredient}"] = per_unit
    return per_unit


@trajdebug.step(kind="state")
def recall_unit_cost(ingredient: str) -> float | None:
    state = trajdebug.current_run().state
    key = f"unit_cost:{ingredient}"
    return state.get(key)


@trajdebug.step(kind="tool")
def plate_cost(recipe: dict[str, Any], unit_costs: dict[str, float]) -> dict[str, Any]:
    lines = [{"ingredient": ln["ingredient"], "qty": ln["qty"], "cost": round(ln["qty"] * unit_costs[ln["ingredient"]], 3)}
             for ln in recipe["lines"]]
    return {"recipe_id": recipe["recipe_id"], "lines": lines, "plate_cost": round(sum(ln["cost"] for ln in lines), 2)}


@trajdebug.step(kind="agent", agent="dish_coster")
def cost_dish(dish: str) -> dict[str, Any]:
    cards = find_recipe_card(dish)
    answer = pick_recipe(dish, cards)
    recipe = get_recipe(answer.split()[0])
    unit_costs: dict[str, float] = {}
    for line in recipe["lines"]:
        name = line["ingredient"]
        known = recall_unit_cost(name)
        if known is not None:
            unit_costs[name] = known
            continue
        sheet = parse_price_sheet(supplier_price(name))
        unit_costs[name] = sheet["pack_price"] / (sheet["pack_count"] * sheet["pack_size"])
        remember_unit_cost(name, sheet)
    costed = plate_cost(recipe, unit_costs)
    return {"dish": dish, **costed}


@trajdebug.step(kind="tool")
def menu_price_check(menu: list[dict[str, Any]], costings: list[dict[str, Any]]) -> dict[str, Any]:
    lo, hi = FOOD_COST_BAND
    out = []
    for item, c in zip(menu, costings):
        pct = c["plate_cost"] / item["menu_price"] * 100
        if not lo <= pct <= hi:
            raise CostingRejected(
                f"{item['dish']}: plate cost £{c['plate_cost']:.2f} is {pct:.1f}% of the £{item['menu_price']:.2f} menu price "
                f"(finance accepts {lo:g}-{hi:g}%); costing sent back to the kitchen"
            )
        out.append({"dish": item["dish"], "food_cost_pct": round(pct, 1)})
    return {"approved": True, "dishes": out}


def execute(inp: dict[str, Any], path: Path, key: str) -> str:
    with trajdebug.run("menu_costing", path=path, task=f"cost menu revision {inp['revision']}", agent="menu_costing",
                       metadata={"suite": "heldout-c", "site": inp.get("site", "Clerkenwell")}) as run:
        menu = load_menu(inp["revision"], inp["dishes"])
        costings = [cost_dish(item["dish"]) for item in menu]
        menu_price_check(menu, costings)
    return run.run_id


SPEC = AgentSpec(
    name="menu_costing",
    route="sdk",
    domain="restaurant menu costing",
    summary="trajdebug SDK: load_menu -> per dish cost_dish sub-agent (find_recipe_card, pick_recipe (llm), get_recipe, "
            "recall_unit_cost / supplier_price -> parse_price_sheet -> remember_unit_cost (run.state), plate_cost) -> menu_price_check",
    execute=execute,
    passing=[
        {"revision": "spring-26a", "dishes": ["Beef bourguignon", "Salmon with beurre blanc", "Creme brulee"]},
        {"revision": "spring-26b", "dishes": ["Tarte Tatin", "Steak frites", "Fish pie"]},
        {"revision": "spring-26c", "dishes": ["Salmon with beurre blanc", "Fish pie", "Tarte Tatin"]},
        {"revision": "spring-26d", "dishes": ["Wagyu striploin", "Creme brulee", "Steak frites"]},
        {"revision": "spring-26e", "dishes": ["Beef bourguignon", "Tarte Tatin", "Fish pie"], "site": "Hove"},
    ],
    cases=[
        Case(
            slug="tasting_menu_card_for_bistro_dish",
            input={"revision": "summer-26a", "dishes": ["Beef bourguignon", "Steak frites", "Creme brulee"]},
            fault="picks_first_recipe_card",
            fault_kind="subagent_wrong_entity",
            description="Inside the dish_coster sub-agent, pick_recipe's model takes the first card found for 'Beef "
                        "bourguignon', the tasting-menu beef-cheek version (R-117), so the sub-agent returns the costing "
                        "of another dish; finance rejects a 48 % food cost for the bistro plate.",
            failure="menu_price_check",
            path=["get_recipe", "plate_cost", "menu_price_check"],
        ),
        Case(
            slug="memo_stores_price_per_carton",
            input={"revision": "summer-26b", "dishes": ["Salmon with beurre blanc", "Steak frites", "Creme brulee"]},
            fault="memo_ignores_case_count",
            fault_kind="bad_memory_write",
            description="remember_unit_cost divides a case price by the carton size but not by the number of cartons, "
                        "so double cream is memoised at £38.40/L instead of £3.20/L. The salmon dish was costed from the "
                        "sheet, but the crème brûlée reads the memo and finance rejects its food cost.",
            failure="menu_price_check",
            path=["recall_unit_cost", "plate_cost", "menu_price_check"],
        ),
        Case(
            slug="wagyu_price_cut_at_comma",
            input={"revision": "summer-26c", "dishes": ["Steak frites", "Wagyu striploin", "Fish pie"]},
            fault="sheet_price_stops_at_comma",
            fault_kind="lossy_parsing",
            description="parse_price_sheet splits 'GBP 1,150.00' at the thousands separator and keeps 1.0 for a 5 kg "
                        "wagyu loin; the plate cost falls to a few pence and finance rejects a 0.5 % food cost.",
            failure="menu_price_check",
            path=["plate_cost", "menu_price_check"],
        ),
    ],
)
