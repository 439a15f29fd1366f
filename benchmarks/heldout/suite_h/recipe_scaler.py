"""Recipe scaling for catering (route: otlp): scale an event menu's recipes, buy what is missing, label.

The openai client is instrumented by OpenInference and every step is an OpenTelemetry span, exported
as OTLP JSON.  Per dish: retrieve the recipe, have a model list its ingredient lines, parse them,
scale to the event's servings, convert to grams, check the batch's yield against the menu card and
keep the batch in the kitchen's memory.  Then read the pantry (the inventory API is retried), build
the purchase list from memory, order from the supplier, check that stock covers every batch, check
the allergen labels and print the prep sheet.
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path
from typing import Any

from benchmarks.heldout.suite_h._common import Agent, Fault, ModelReplyError, Otlp, active, last_user
from openai import OpenAI


NAME = "recipe-scaler"
GRAMS = {"g": 1, "kg": 1000, "ml": 1, "l": 1000}
PIECE_G = {"lemons": 120, "eggs": 60, "onions": 150}
PRICE_EUR_KG = {"arborio rice": 3.2, "mushrooms": 9.5, "vegetable stock": 0.8, "parmesan": 24.0, "butter": 11.0,
                "carrots": 1.4, "olive oil": 8.5, "thyme": 30.0, "honey": 12.0, "gluten-free flour": 4.8,
                "wheat flour": 1.1, "sugar": 1.3, "lemons": 2.9, "eggs": 4.5, "pumpkin": 1.8, "onions": 1.5,
                "cream": 5.2, "beef": 16.0, "red wine": 7.0, "apples": 2.2, "oats": 2.6, "dark chocolate": 14.0}

# title -> (base servings, ingredient lines, tags)
RECIPES: dict[str, tuple[int, list[str], list[str]]] = {
    "mushroom risotto": (10, ["1 kg arborio rice", "600 g mushrooms", "2 l vegetable stock", "150 g parmesan",
                              "100 g butter"], ["vegetarian", "gluten-free"]),
    "roast carrots": (10, ["1 1/2 kg carrots", "50 ml olive oil", "20 g thyme", "30 g honey"], ["vegan"]),
    "lemon tart (gluten-free)": (8, ["300 g gluten-free flour", "150 g butter", "200 g sugar", "4 lemons",
                                     "6 eggs"], ["gluten-free", "dessert"]),
    "lemon tart": (8, ["300 g wheat flour", "150 g butter", "200 g sugar", "4 lemons", "6 eggs"], ["dessert"]),
    "pumpkin soup": (12, ["2 1/2 kg pumpkin", "3 onions", "1 l vegetable stock", "200 ml cream"], ["gluten-free"]),
    "beef stew": (10, ["2 kg beef", "500 ml red wine", "4 onions", "1/2 l vegetable stock"], []),
    "apple crumble": (8, ["1 kg apples", "200 g oats", "150 g butter", "120 g sugar"], ["dessert"]),
    "chocolate mousse": (10, ["400 g dark chocolate", "8 eggs", "300 ml cream", "80 g sugar"],
                         ["gluten-free", "dessert"]),
}
PANTRY_G = {"arborio rice": 4000, "vegetable stock": 20000, "butter": 1500, "olive oil": 2000, "sugar": 5000,
            "eggs": 3000, "onions": 3000, "thyme": 100, "honey": 500, "oats": 1000}


class SupplierRejected(RuntimeError):
    """The supplier's ordering API refused an order."""


class KitchenCheckFailed(RuntimeError):
    """One of the kitchen's own production checks failed."""


class InventoryUnavailable(RuntimeError):
    """The inventory API answered 503."""


for _cls in (SupplierRejected, KitchenCheckFailed, InventoryUnavailable):
    _cls.__module__ = "kitchen.errors"  # how the kitchen's service names them in its traces


def _base_grams(title: str) -> float:
    total = 0.0
    for line in RECIPES[title][1]:
        qty, unit, name = _split(line, exact=True)
        total += qty * (GRAMS[unit] if unit in GRAMS else PIECE_G[name])
    return total


def _split(line: str, exact: bool) -> tuple[float, str, str]:
    m = re.match(r"((?:\d+ )?\d+(?:/\d+)?) (?:(g|kg|ml|l) )?(.+)", line)
    assert m is not None, line
    words = m.group(1).split()
    qty = float(sum(Fraction(w) for w in words)) if exact else float(Fraction(words[0]))
    return qty, m.group(2) or "pcs", m.group(3)


def find_recipe(dish: str) -> list[dict[str, Any]]:
    title = dish
    if active("recipe-tart-variant") and dish == "lemon tart (gluten-free)":
        title = "lemon tart"  # the recipe index ranks the plain tart first for this query
    servings, lines, tags = RECIPES[title]
    return [{"title": title, "base_servings": servings, "text": "\n".join(lines), "tags": tags}]


def parse_ingredients(text: str) -> list[dict[str, Any]]:
    rows = []
    for line in text.strip().splitlines():
        qty, unit, name = _split(line.strip(), exact=not active("recipe-mixed-fraction"))
        rows.append({"qty": qty, "unit": unit, "name": name})
    return rows


def scale_recipe(rows: list[dict[str, Any]], base: int, servings: int) -> list[dict[str, Any]]:
    return [{**r, "qty": round(r["qty"] * servings / base, 3)} for r in rows]


def convert_units(rows: list[dict[str, Any]]) -> dict[str, float]:
    factors = {**GRAMS, "ml": 1000} if active("recipe-ml-factor") else GRAMS
    return {r["name"]: round(r["qty"] * (factors[r["unit"]] if r["unit"] in factors else PIECE_G[r["name"]]), 1)
            for r in rows}


def yield_check(dish: str, grams: dict[str, float], servings: int) -> dict[str, Any]:
    expected = _base_grams(dish) / RECIPES[dish][0] * servings  # the menu card's portion weight
    total = sum(grams.values())
    if abs(total - expected) > 0.05 * expected:
        raise KitchenCheckFailed(f"{dish}: scaled batch weighs {total / 1000:.2f} kg, the menu card needs "
                                 f"{expected / 1000:.2f} kg for {servings} portions")
    return {"dish": dish, "batch_kg": round(total / 1000, 2), "portions": servings}


def remember_batch(memory: dict[str, Any], dish: str, grams: dict[str, float], base: dict[str, float]) -> dict[str, Any]:
    stored = dict(base if active("recipe-memory-base") and dish == "lemon tart (gluten-free)" else grams)
    memory[dish] = stored
    return {"dish": dish, "grams": stored}


def check_pantry(attempt: int) -> dict[str, Any]:
    if attempt == 1:
        raise InventoryUnavailable("inventory API 503: replica catching up")
    if active("recipe-pantry-v2"):
        return {"items": [{"item": k, "stock": f"{v / 1000:g} kg"} for k, v in PANTRY_G.items()]}
    return {"items": [{"item": k, "qty_g": v} for k, v in PANTRY_G.items()]}


def build_purchase_list(memory: dict[str, Any], pantry: dict[str, Any]) -> list[dict[str, Any]]:
    need: dict[str, float] = {}
    for grams in memory.values():
        for name, g in grams.items():
            need[name] = need.get(name, 0.0) + g
    stock = {row["item"]: float(row.get("qty_g", 0)) for row in pantry["items"]}
    return [{"item": n, "grams": round(g - stock.get(n, 0.0), 1)} for n, g in sorted(need.items()) if g > stock.get(n, 0.0)]


def submit_supplier_order(lines: list[dict[str, Any]], limit: float) -> dict[str, Any]:
    value = round(sum(line["grams"] / 1000 * PRICE_EUR_KG[line["item"]] for line in lines), 2)
    if value > limit:
        raise SupplierRejected(f"order value {value:.2f} EUR exceeds the event's purchasing limit {limit:.2f} EUR")
    return {"order": "SO-55120", "lines": len(lines), "value_eur": value}


def coverage_check(plans: dict[str, dict[str, float]], lines: list[dict[str, Any]]) -> dict[str, Any]:
    bought = {line["item"]: line["grams"] for line in lines}
    need: dict[str, float] = {}
    for grams in plans.values():
        for name, g in grams.items():
            need[name] = need.get(name, 0.0) + g
    for name, g in sorted(need.items()):
        have = PANTRY_G.get(name, 0) + bought.get(name, 0.0)
        if have + 0.5 < g:
            raise KitchenCheckFailed(f"{name}: stock after delivery {have / 1000:.2f} kg, the batches need {g / 1000:.2f} kg")
    return {"covered": len(need)}


def label_check(menu: list[dict[str, Any]], recipes: dict[str, list[str]]) -> dict[str, Any]:
    for item in menu:
        if "gluten-free" in item.get("labels", []) and any("wheat" in n for n in recipes[item["dish"]]):
            raise KitchenCheckFailed(f"{item['dish']} is labelled gluten-free but its batch contains wheat flour")
    return {"labels": "ok"}


def load_event(item: dict[str, Any]) -> dict[str, Any]:
    return {"event": item["event"], "servings": item["servings"], "menu": item["menu"], "kitchen": "central"}


def cook(client: OpenAI, item: dict[str, Any]) -> None:
    ot = Otlp.get()
    ot.step("load_event", "TOOL", {"event": item["event"]}, lambda: load_event(item))
    memory: dict[str, Any] = {}
    plans: dict[str, dict[str, float]] = {}
    servings = item["servings"]
    for course in item["menu"]:
        dish = course["dish"]
        [doc] = ot.step("find_recipe", "RETRIEVER", {"query": dish}, lambda dish=dish: find_recipe(dish))
        reply = client.chat.completions.create(model="fake-model", messages=[
            {"role": "system", "content": "List a recipe's ingredient lines, one per line, as 'qty unit name'."},
            {"role": "user", "content": f"Ingredients of {doc['title']}:\n{doc['text']}"}])
        text = reply.choices[0].message.content or ""
        rows = ot.step("parse_ingredients", "CHAIN", text, lambda text=text: parse_ingredients(text))
        base = convert_units(rows)
        scaled = ot.step("scale_recipe", "CHAIN", {"servings": servings, "base": doc["base_servings"]},
                         lambda rows=rows, doc=doc: scale_recipe(rows, doc["base_servings"], servings))
        grams = ot.step("convert_units", "CHAIN", scaled, lambda scaled=scaled: convert_units(scaled))
        plans[dish] = grams
        ot.step("yield_check", "GUARDRAIL", grams, lambda dish=dish, grams=grams: yield_check(dish, grams, servings))
        ot.step("remember_batch", "CHAIN", {"dish": dish},
                lambda dish=dish, grams=grams, base=base: remember_batch(memory, dish, grams, base))
    pantry: dict[str, Any] = {}
    for attempt in (1, 2, 3):
        try:
            pantry = ot.step("check_pantry", "TOOL", {"attempt": attempt}, lambda attempt=attempt: check_pantry(attempt))
            break
        except InventoryUnavailable:
            continue
    lines = ot.step("build_purchase_list", "CHAIN", {"dishes": sorted(memory)}, lambda: build_purchase_list(memory, pantry))
    ot.step("submit_supplier_order", "TOOL", lines, lambda: submit_supplier_order(lines, item["limit"]))
    ot.step("coverage_check", "GUARDRAIL", {"dishes": sorted(plans)}, lambda: coverage_check(plans, lines))
    ot.step("label_check", "GUARDRAIL", item["menu"], lambda: label_check(item["menu"], {d: list(g) for d, g in plans.items()}))
    ot.step("print_prep_sheet", "TOOL", {"event": item["event"]}, lambda: {"sheet": f"PREP-{item['event']}", "dishes": len(plans)})


def policy(request: Any) -> str:
    prompt = last_user(request)
    if prompt.startswith("Ingredients of"):
        return "\n".join(line.strip() for line in prompt.splitlines()[1:])
    raise ModelReplyError(prompt)


def record(server: Any, item: dict[str, Any], path: Path) -> None:
    server.use(policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    task = f"scale the menu of event {item['event']} to {item['servings']} servings"
    Otlp.get().record(NAME, path, task, lambda: cook(client, item))
    client.close()


def _menu(*dishes: str, gluten_free: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    return [{"dish": d, "labels": ["gluten-free"] if d in gluten_free else []} for d in dishes]


AGENT = Agent(
    name=NAME,
    route="otlp",
    domain="recipe scaling",
    record=record,
    failing={"event": "GALA-120", "servings": 120, "limit": 280.0,
             "menu": _menu("mushroom risotto", "roast carrots", "lemon tart (gluten-free)",
                           gluten_free=("lemon tart (gluten-free)",))},
    references=(
        {"event": "WED-80", "servings": 80, "limit": 400.0,
         "menu": _menu("pumpkin soup", "beef stew", "apple crumble")},
        {"event": "CONF-60", "servings": 60, "limit": 400.0,
         "menu": _menu("mushroom risotto", "chocolate mousse", gluten_free=("chocolate mousse",))},
        {"event": "LUNCH-40", "servings": 40, "limit": 400.0,
         "menu": _menu("roast carrots", "beef stew", "lemon tart")},
        {"event": "GALA-90", "servings": 90, "limit": 400.0,
         "menu": _menu("pumpkin soup", "mushroom risotto", "lemon tart (gluten-free)",
                       gluten_free=("lemon tart (gluten-free)",))},
    ),
    faults=(
        Fault("recipe-mixed-fraction", "lossy_parsing", "parse_ingredients", '"name": "carrots", "qty": 1.0,',
              "yield_check",
              "parse_ingredients reads the mixed number \"1 1/2 kg\" as 1 kg, so the scaled carrot batch is a "
              "third short of the menu card's yield."),
        Fault("recipe-pantry-v2", "format_drift", "check_pantry", '"stock": "', "submit_supplier_order",
              "The inventory API reports stock as text (\"1.5 kg\") instead of qty_g, so the purchase list counts "
              "no stock and the supplier order exceeds the purchasing limit."),
        Fault("recipe-memory-base", "bad_memory_write", "remember_batch", '"butter": 150.0', "coverage_check",
              "remember_batch stores the dessert's unscaled base quantities in the kitchen memory, so too little "
              "is bought and the coverage check fails."),
        Fault("recipe-tart-variant", "wrong_retrieval", "find_recipe", '"title": "lemon tart"', "label_check",
              "find_recipe returns the plain lemon tart instead of its gluten-free variant, so a dish labelled "
              "gluten-free is made with wheat flour."),
        Fault("recipe-ml-factor", "unit_error", "convert_units", '"olive oil": 600000.0', "yield_check",
              "convert_units converts millilitres with the litre factor, so 600 ml of olive oil weigh 600 kg and "
              "the carrot batch fails its yield check."),
    ),
)
