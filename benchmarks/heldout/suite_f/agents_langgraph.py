"""Agents built with LangGraph, recorded with trajdebug's LangChain tracer (`TrajdebugTracer`)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from trajdebug.testing import Reply, tool_call

from .common import BRAINS, Agent, Case, Model, active


def _llm() -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(base_url=Model.base_url, api_key="not-needed", model=Model.name, max_retries=0,
                      temperature=0)


def _record(graph: Any, agent: str, task: str, state: dict[str, Any], path: Path) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=str(path), name=agent, task=task)
    try:
        graph.invoke(state, config={"callbacks": [tracer]})
    except ValueError:
        pass


# ======================================================================================
# meal-prep-planner: catering orders for a community kitchen
# ======================================================================================

RECIPES: dict[str, list[tuple[str, float, str]]] = {  # per serving: ingredient, amount, unit
    "mushroom risotto": [("arborio rice", 90, "g"), ("chestnut mushrooms", 120, "g"),
                         ("vegetable stock", 250, "ml"), ("white wine", 25, "ml"), ("shallots", 30, "g"),
                         ("butter", 15, "g"), ("parmesan", 20, "g")],
    "chickpea curry": [("chickpeas, tinned", 120, "g"), ("coconut milk", 80, "ml"), ("chopped tomatoes", 100, "g"),
                       ("onions", 60, "g"), ("basmati rice", 75, "g"), ("curry paste", 15, "g")],
    "lentil shepherd's pie": [("green lentils", 70, "g"), ("potatoes", 250, "g"), ("carrots", 60, "g"),
                              ("vegetable stock", 150, "ml"), ("onions", 50, "g"), ("cheddar", 20, "g")],
    "tomato soup": [("chopped tomatoes", 200, "g"), ("vegetable stock", 200, "ml"), ("onions", 40, "g"),
                    ("cream", 20, "ml"), ("bread rolls", 1, "pc")],
}
PACKS = {"g": 1000, "ml": 1000, "pc": 6}  # purchase units: 1 kg, 1 l, a bag of 6
PRICES = {  # store -> price per pack (EUR)
    "bio-markt": {"default": 3.10, "parmesan": 21.0, "cheddar": 11.0, "butter": 8.8, "white wine": 6.5,
                  "chestnut mushrooms": 7.4},
    "discount-24": {"default": 1.60, "parmesan": 12.9, "cheddar": 6.9, "butter": 5.2, "white wine": 3.5,
                    "chestnut mushrooms": 4.2},
}
DEFAULT_STORE = "bio-markt"


def _scaled(recipe: str, servings: int) -> list[tuple[str, float, str]]:
    return [(n, round(a * servings, 1), u) for n, a, u in RECIPES[recipe]]


def _recipe_text(recipe: str, servings: int) -> str:
    def amount(a: float) -> str:
        return f"{a:g}"

    return f"{recipe} x{servings}\n" + "\n".join(f"{n}: {amount(a)} {u}" for n, a, u in _scaled(recipe, servings))


@tool
def get_recipe(recipe: str, servings: int) -> str:
    """Ingredient list of a recipe scaled to a number of servings, one 'name: amount unit' per line."""
    text = _recipe_text(recipe, servings)
    if active("meal.truncated"):
        text = text[:150]  # the recipe API's response body is cut at a byte limit
    return text


@tool
def to_purchase_units(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Round each ingredient up to whole packs (1 kg, 1 l, bags of 6)."""
    out = []
    for it in items:
        size = PACKS[it["unit"]]
        if active("meal.units") and it["unit"] == "ml":
            size = 100  # litres taken as decilitres
        out.append({"item": it["name"], "packs": math.ceil(it["amount"] / size)})
    return out


def _price(store: str, packs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    table = PRICES[store]
    return [{**p, "price": round(p["packs"] * table.get(p["item"], table["default"]), 2)} for p in packs]


@tool
def price_items(packs: list[dict[str, Any]], store: str) -> dict[str, Any]:
    """Price the packs at a store."""
    used = DEFAULT_STORE if active("meal.store") else store
    lines = _price(used, packs)
    return {"store": used, "lines": lines, "total": round(sum(x["price"] for x in lines), 2)}


@tool
def place_order(recipe: str, servings: int, store: str, lines: list[dict[str, Any]], quoted: float,
                budget: float) -> dict[str, Any]:
    """Place the order with the store (it checks headcount, completeness, price and budget)."""
    needed = {n for n, _, _ in RECIPES[recipe]}
    have = {x["item"] for x in lines}
    if needed - have:
        raise ValueError(f"order for {recipe} is missing {', '.join(sorted(needed - have))}")
    for n, a, u in _scaled(recipe, servings):
        got = next(x["packs"] for x in lines if x["item"] == n) * PACKS[u]
        if got < a:
            raise ValueError(f"order covers {got:g} {u} of {n}; {servings} servings need {a:g} {u}")
    actual = round(sum(x["price"] for x in _price(store, lines)), 2)
    if abs(actual - quoted) > 0.01:
        raise ValueError(f"{store} prices the order at {actual:.2f} EUR, quoted {quoted:.2f} EUR")
    if actual > budget:
        raise ValueError(f"order total {actual:.2f} EUR exceeds the budget of {budget:.2f} EUR")
    return {"store": store, "total": actual, "status": "placed"}


class MealState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    request: dict[str, Any]
    items: list[dict[str, Any]]
    packs: list[dict[str, Any]]
    quote: dict[str, Any]
    order: dict[str, Any]


def _meal_brain(request: Any, msgs: list[dict[str, Any]]) -> Any:
    user = next(m for m in msgs if m["role"] == "user")["content"]
    servings = int(re.search(r"for (\d+)", user).group(1))
    if active("meal.args"):
        servings = int(re.search(r"on the (\d+)", user).group(1))  # the date read as the headcount
    recipe = re.search(r": ([a-z' ]+?),", user).group(1)
    return Reply(tool_calls=(tool_call("get_recipe", {"recipe": recipe, "servings": servings}),))


BRAINS["meal_planner"] = _meal_brain


def build_meal_graph() -> Any:
    llm = _llm().bind_tools([get_recipe])

    def plan(state: MealState) -> dict[str, Any]:
        return {"messages": [llm.invoke(state["messages"])]}

    def shopping_list(state: MealState) -> dict[str, Any]:
        text = state["messages"][-1].content
        items = []
        for line in text.splitlines()[1:]:
            m = re.fullmatch(r"(.+): ([\d.]+) (g|ml|pc)", line.strip())
            if m:
                items.append({"name": m.group(1), "amount": float(m.group(2)), "unit": m.group(3)})
        return {"items": items}

    def buy_units(state: MealState) -> dict[str, Any]:
        return {"packs": to_purchase_units.invoke({"items": state["items"]})}

    def quote(state: MealState) -> dict[str, Any]:
        return {"quote": price_items.invoke({"packs": state["packs"], "store": state["request"]["store"]})}

    def order(state: MealState) -> dict[str, Any]:
        req, q = state["request"], state["quote"]
        call = next(m for m in state["messages"] if getattr(m, "tool_calls", None)).tool_calls[0]["args"]
        return {"order": place_order.invoke({"recipe": call["recipe"], "servings": req["headcount"],
                                             "store": req["store"], "lines": q["lines"], "quoted": q["total"],
                                             "budget": req["budget"]})}

    g = StateGraph(MealState)
    g.add_node("plan", plan)
    g.add_node("tools", ToolNode([get_recipe]))
    g.add_node("shopping_list", shopping_list)
    g.add_node("buy_units", buy_units)
    g.add_node("quote", quote)
    g.add_node("order", order)
    g.add_edge(START, "plan")
    g.add_edge("plan", "tools")
    g.add_edge("tools", "shopping_list")
    g.add_edge("shopping_list", "buy_units")
    g.add_edge("buy_units", "quote")
    g.add_edge("quote", "order")
    g.add_edge("order", END)
    return g.compile()


_GRAPHS: dict[str, Any] = {}


def record_meal(inp: dict[str, Any], path: Path) -> None:
    graph = _GRAPHS.setdefault("meal", build_meal_graph())
    text = (f"Dinner for {inp['headcount']} on the {inp['day']}th: {inp['recipe']}, from {inp['store']}, "
            f"budget {inp['budget']} EUR")
    state = {"messages": [SystemMessage("[meal_planner] Plan the kitchen order. Fetch the recipe scaled to "
                                        "the headcount."), HumanMessage(text)],
             "request": {"headcount": inp["headcount"], "store": inp["store"], "budget": inp["budget"]}}
    _record(graph, "meal-prep-planner", text, state, path)


def _meal_marker_units(recipe: str, n: int) -> str:
    ml = next(a for name, a, u in _scaled(recipe, n) if name == "vegetable stock")
    return json.dumps({"item": "vegetable stock", "packs": math.ceil(ml / 100)})[1:-1]


def _meal_marker_truncated(recipe: str, n: int) -> str:
    return _recipe_text(recipe, n)[:150].splitlines()[-1] + "\n"


MEAL_AGENT = Agent(
    name="meal-prep-planner", route="langgraph", domain="catering / kitchen orders", ext="jsonl",
    description="a model fetches the scaled recipe through a tool call; nodes build the shopping list, round to "
                "packs, price at the chosen store and place the order",
    ref_inputs=[
        {"headcount": 12, "day": 9, "recipe": "chickpea curry", "store": "discount-24", "budget": 60},
        {"headcount": 8, "day": 14, "recipe": "tomato soup", "store": "bio-markt", "budget": 40},
        {"headcount": 20, "day": 3, "recipe": "lentil shepherd's pie", "store": "discount-24", "budget": 90},
        {"headcount": 6, "day": 21, "recipe": "mushroom risotto", "store": "bio-markt", "budget": 80},
    ],
    record=record_meal,
    cases=[
        Case("meal_servings_from_date", "meal-prep-planner",
             {"headcount": 10, "day": 4, "recipe": "mushroom risotto", "store": "discount-24", "budget": 60},
             "wrong_tool_args", "meal.args", "ChatOpenAI", "llm", '"servings": 4',
             "the model calls get_recipe with servings=4 (the day of the month) instead of the headcount 10"),
        Case("meal_stock_litres", "meal-prep-planner",
             {"headcount": 16, "day": 11, "recipe": "tomato soup", "store": "discount-24", "budget": 45},
             "unit_error", "meal.units", "to_purchase_units", "tool", _meal_marker_units("tomato soup", 16),
             "to_purchase_units sizes a 1 l pack as 100 ml, ordering ten times the stock"),
        Case("meal_price_wrong_store", "meal-prep-planner",
             {"headcount": 14, "day": 17, "recipe": "chickpea curry", "store": "discount-24", "budget": 70},
             "tool_ignores_arg", "meal.store", "price_items", "tool", '"store": "bio-markt"',
             "price_items ignores its store argument and quotes the default store's prices"),
        Case("meal_recipe_cut", "meal-prep-planner",
             {"headcount": 9, "day": 25, "recipe": "mushroom risotto", "store": "discount-24", "budget": 60},
             "truncated_result", "meal.truncated", "get_recipe", "tool",
             _meal_marker_truncated("mushroom risotto", 9),
             "the recipe API cuts its answer at 150 bytes, dropping the last ingredients"),
    ],
)

AGENTS = [MEAL_AGENT]
