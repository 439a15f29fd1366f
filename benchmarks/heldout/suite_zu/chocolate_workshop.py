"""Chocolate workshop (openai_agents): a front desk hands off to a workshop planner that sources and books a session."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agents import Agent, function_tool, handoff
from agents.exceptions import AgentsException

from .common import Case, register_policy
from .kit import active
from .agutil import model, run

AGENT, ROUTE, DOMAIN, EXT = "chocolate_workshop_desk", "openai_agents", "chocolate workshop", "jsonl"
SHAPE = "front desk (account lookup) -> hand-off -> planner loop: recipe -> scale -> studio availability (re-check on busy) -> pantry -> order -> LLM session plan -> book"

RECIPES = {
    "truffles": {"code": "TRF-12", "min_hours": 4, "per_guest_g": [("dark couverture", 400), ("double cream", 120), ("butter", 30),
                 ("cocoa powder", 25), ("invert sugar", 15), ("vanilla pod", 1), ("sea salt", 2)]},
    "bars": {"code": "BAR-04", "min_hours": 3, "per_guest_g": [("milk couverture", 350), ("hazelnuts", 60), ("cocoa butter", 20),
             ("freeze-dried raspberry", 10), ("sea salt", 2)]},
    "bonbons": {"code": "BON-09", "min_hours": 5, "per_guest_g": [("dark couverture", 300), ("cocoa butter", 25), ("passion fruit puree", 60),
                ("glucose", 20), ("colour powder", 2), ("butter", 15)]},
}
BUSY = {("tempering lab", "2026-03-07"), ("tempering lab", "2026-04-11"), ("main kitchen", "2026-03-21")}
INPUTS = {
    "truffles": "Account ACC-77: 12 guests, truffles workshop, 2026-03-07, tempering lab",
    "bars": "Account ACC-81: 8 guests, bars workshop, 2026-03-14, tempering lab",
    "r1": "Account ACC-90: 6 guests, bonbons workshop, 2026-03-21, tempering lab",
    "r2": "Account ACC-93: 10 guests, bars workshop, 2026-03-28, main kitchen",
    "r3": "Account ACC-95: 4 guests, truffles workshop, 2026-04-04, tempering lab",
    "r4": "Account ACC-98: 9 guests, bonbons workshop, 2026-04-11, tempering lab",
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    Case("zu_choc_01", "choc.scale_units", "unit_error", "truffles", "scale_recipe", 1, "tool", "book_workshop", 1,
         "The scaling service returns kilograms in the grams field, so every ingredient line is a thousandth of what is needed."),
    Case("zu_choc_02", "choc.room_ignored", "tool_ignores_argument", "truffles", "check_studio_availability", 1, "tool", "book_workshop", 1,
         "The availability check ignores the room argument and answers for the main kitchen, so a busy tempering lab looks free."),
    Case("zu_choc_03", "choc.session_hours", "plan_error", "bars", "generation gpt-4o-mini", 7, "llm", "book_workshop", 1,
         "The planner schedules a session shorter than the recipe's minimum working time."),
    Case("zu_choc_04", "choc.order_lines", "swallowed_error", "bars", "order_ingredients", 1, "tool", "book_workshop", 1,
         "The ordering tool catches a supplier stock error and returns the order without the cocoa butter line."),
    Case("zu_choc_05", "choc.recipe_page", "truncated_result", "truffles", "get_recipe", 1, "tool", "book_workshop", 1,
         "The recipe service returns only the first five ingredient lines of the recipe."),
]


def _calls(msgs: list[dict]) -> list[tuple[str, Any, Any]]:
    names = {}
    out = []
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = (tc["function"]["name"], json.loads(tc["function"]["arguments"] or "{}"))
        if m.get("role") == "tool":
            name, args = names.get(m.get("tool_call_id"), ("?", {}))
            try:
                content = json.loads(m["content"])
            except (json.JSONDecodeError, TypeError):
                content = m["content"]
            out.append((name, args, content))
    return out


def _policy(body: dict) -> Any:
    from trajdebug.testing import Reply, tool_call

    msgs = body["messages"]
    system = msgs[0]["content"]
    user = next(m["content"] for m in msgs if m.get("role") == "user")
    m = re.match(r"Account (\S+): (\d+) guests, (\w+) workshop, (\S+), (.+)$", user)
    acc, guests, product, date, room = m.group(1), int(m.group(2)), m.group(3), m.group(4), m.group(5)
    done = _calls(msgs)
    seen = {n: c for n, _, c in done}
    if system.startswith("[chocdesk]"):
        if "lookup_account" not in seen:
            return Reply(tool_calls=(tool_call("lookup_account", {"account": acc}),))
        return Reply(tool_calls=(tool_call("transfer_to_workshop_planner", {}),))
    if "get_recipe" not in seen:
        return Reply(tool_calls=(tool_call("get_recipe", {"product": product}),))
    if "scale_recipe" not in seen:
        return Reply(tool_calls=(tool_call("scale_recipe", {"recipe_code": seen["get_recipe"]["code"], "guests": guests,
                                                             "lines": json.dumps(seen["get_recipe"]["ingredients"])}),))
    checks = [(a, c) for n, a, c in done if n == "check_studio_availability"]
    if not checks or not checks[-1][1]["free"]:
        day = date if not checks else checks[-1][1]["next_free"]
        return Reply(tool_calls=(tool_call("check_studio_availability", {"date": day, "room": room}),))
    if "order_ingredients" not in seen:
        return Reply(tool_calls=(tool_call("order_ingredients", {"account": acc, "lines": json.dumps(seen["scale_recipe"]["lines"])}),))
    if "book_workshop" not in seen:
        hours = seen["get_recipe"]["min_hours"]
        if active("choc.session_hours"):
            hours -= 1  # dip and set in parallel
        return Reply(tool_calls=(tool_call("book_workshop", {"account": acc, "recipe_code": seen["get_recipe"]["code"], "guests": guests,
                                                             "date": checks[-1][0]["date"], "room": room, "hours": hours,
                                                             "order_id": seen["order_ingredients"]["order"]}),))
    return f"Booked: {seen['book_workshop']}"


register_policy("chocdesk", _policy)
register_policy("chocplan", _policy)


@function_tool
def lookup_account(account: str) -> str:
    """The customer account."""
    return json.dumps({"account": account, "status": "active", "invoice_terms": "30 days"})


@function_tool
def get_recipe(product: str) -> str:
    """The workshop recipe with per-guest quantities."""
    r = RECIPES[product]
    lines = [{"item": i, "grams": g} for i, g in r["per_guest_g"]]
    if active("choc.recipe_page"):
        lines = lines[:5]
    return json.dumps({"code": r["code"], "min_hours": r["min_hours"], "ingredients": lines})


@function_tool
def scale_recipe(recipe_code: str, guests: int, lines: str) -> str:
    """Scale per-guest lines to a session."""
    div = 1000 if active("choc.scale_units") else 1
    return json.dumps({"recipe_code": recipe_code, "lines": [{"item": x["item"], "grams": round(x["grams"] * guests / div, 3)}
                                                            for x in json.loads(lines)]})


@function_tool
def check_studio_availability(date: str, room: str) -> str:
    """Whether a studio room is free on a date (and the next free date)."""
    asked = "main kitchen" if active("choc.room_ignored") else room
    free = (asked, date) not in BUSY
    nxt = date[:8] + f"{int(date[8:]) + 7:02d}"
    return json.dumps({"date": date, "room": room, "free": free, "next_free": None if free else nxt})


@function_tool
def order_ingredients(account: str, lines: str) -> str:
    """Order the scaled ingredient lines from the supplier."""
    rows = json.loads(lines)
    placed = []
    for row in rows:
        try:
            if row["item"] == "cocoa butter" and active("choc.order_lines"):
                raise LookupError("cocoa butter: supplier stock 0")
            placed.append(row)
        except LookupError:
            continue
    order = f"ORD-{account[4:]}-{len(rows)}"
    ORDERS[order] = placed
    return json.dumps({"order": order, "lines": placed})


ORDERS: dict[str, list] = {}


@function_tool(failure_error_function=None)
def book_workshop(account: str, recipe_code: str, guests: int, date: str, room: str, hours: int, order_id: str) -> str:
    """Book the workshop session."""
    if (room, date) in BUSY:
        raise ValueError(f"409 Conflict: {room} is booked on {date}")
    recipe = next(r for r in RECIPES.values() if r["code"] == recipe_code)
    if hours < recipe["min_hours"]:
        raise ValueError(f"422 Unprocessable: session of {hours} h shorter than {recipe_code} minimum of {recipe['min_hours']} h")
    lines = {x["item"]: x["grams"] for x in ORDERS[order_id]}
    missing = [i for i, _ in recipe["per_guest_g"] if i not in lines]
    if missing:
        raise ValueError(f"422 Unprocessable: order {order_id} lacks {', '.join(missing)} required by {recipe_code}")
    for item, g in recipe["per_guest_g"]:
        if lines[item] + 1e-6 < g * guests:
            raise ValueError(f"422 Unprocessable: order {order_id} covers {lines[item]} g of {item}, {guests} guests need {g * guests} g")
    return json.dumps({"booking": f"WS-{account[4:]}-{date}", "room": room, "hours": hours})


_AGENT = None


def _build():
    planner = Agent(name="workshop_planner", instructions="[chocplan] Plan and book the chocolate workshop.", model=model(),
                    tools=[get_recipe, scale_recipe, check_studio_availability, order_ingredients, book_workshop])
    return Agent(name="front_desk", instructions="[chocdesk] Check the account, then hand off to the planner.", model=model(),
                 tools=[lookup_account], handoffs=[handoff(planner)])


def record(key: str, path: Path) -> None:
    global _AGENT
    _AGENT = _AGENT or _build()
    ORDERS.clear()
    run(_AGENT, INPUTS[key], path, AGENT, (ValueError, AgentsException))
