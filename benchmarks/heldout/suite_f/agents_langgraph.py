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



# ======================================================================================
# flight-rebooking: an airline disruption desk
# ======================================================================================

BOOKINGS = {
    "PNR-Q7K2LM": {"passenger": "Mara Olsen", "flight": "LH 1830", "date": "2026-12-03", "from": "MUC",
                   "to": "LIS", "latest_arrival": "18:00"},
    "PNR-B4XW9T": {"passenger": "Jonas Pereira", "flight": "LH 1832", "date": "2026-12-04", "from": "MUC",
                   "to": "LIS", "latest_arrival": "20:00"},
    "PNR-H2ND5R": {"passenger": "Aiko Tanaka", "flight": "LH 2480", "date": "2026-12-05", "from": "FRA",
                   "to": "OPO", "latest_arrival": "17:00"},
    "PNR-T9PC3E": {"passenger": "Lena Brandt", "flight": "LH 1190", "date": "2026-12-06", "from": "FRA",
                   "to": "BCN", "latest_arrival": "15:00"},
    "PNR-K8FV2A": {"passenger": "Tomas Ruiz", "flight": "LH 1840", "date": "2026-12-07", "from": "MUC",
                   "to": "LIS", "latest_arrival": "19:00"},
    "PNR-M3ZQ7D": {"passenger": "Priya Nair", "flight": "LH 2490", "date": "2026-12-08", "from": "FRA",
                   "to": "OPO", "latest_arrival": "21:00"},
    "PNR-W5JH1S": {"passenger": "Elif Kaya", "flight": "LH 1196", "date": "2026-12-09", "from": "FRA",
                   "to": "BCN", "latest_arrival": "23:00"},
    "PNR-C6LT4G": {"passenger": "Noah Fischer", "flight": "LH 1832", "date": "2026-12-04", "from": "MUC",
                   "to": "LIS", "latest_arrival": "13:00"},
}
TIERS = {"Lena Brandt": "gold", "Noah Fischer": "gold"}
STATUS = {"LH 1830": ("DELAYED", 40), "LH 1832": ("CANCELLED", None), "LH 2480": ("CANCELLED", None),
          "LH 1190": ("CANCELLED", None), "LH 1840": ("DELAYED", 25), "LH 2490": ("CANCELLED", None),
          "LH 1196": ("CANCELLED", None)}
OPTIONS = {  # (from, to, date) -> flight, carrier, dep, arr, live seats
    ("MUC", "LIS", "2026-12-03"): [("LH 1834", "LH", "13:20", "16:05", 5)],
    ("MUC", "LIS", "2026-12-04"): [("TP 555", "TP", "08:00", "10:45", 2), ("LH 1834", "LH", "09:10", "11:55", 0),
                                   ("LH 1836", "LH", "13:20", "16:05", 4), ("LH 1838", "LH", "19:30", "22:15", 9)],
    ("FRA", "OPO", "2026-12-05"): [("LH 2482", "LH", "07:00", "09:25", 0), ("LH 2484", "LH", "12:40", "15:05", 3),
                                   ("LH 2486", "LH", "18:00", "20:25", 5)],
    ("FRA", "BCN", "2026-12-06"): [("IB 3211", "IB", "08:15", "10:20", 4), ("LH 1192", "LH", "16:30", "18:45", 6),
                                   ("LH 1194", "LH", "20:10", "22:25", 8)],
    ("FRA", "OPO", "2026-12-08"): [("LH 2492", "LH", "10:00", "12:25", 6), ("LH 2494", "LH", "15:00", "17:25", 2)],
    ("FRA", "BCN", "2026-12-09"): [("LH 1198", "LH", "11:00", "13:15", 3)],
}
STALE_SEATS = {"LH 2482": 2}  # this morning's cached search still shows seats on the first flight


class LoyaltyUnavailable(Exception):
    pass


@tool
def get_booking(pnr: str) -> dict[str, Any]:
    """The booking behind a record locator."""
    return {"pnr": pnr, **BOOKINGS[pnr]}


def _loyalty_api(passenger: str) -> str:
    if active("fly.loyalty"):
        raise LoyaltyUnavailable("loyalty: 503 Service Unavailable")
    return TIERS.get(passenger, "none")


@tool
def loyalty_status(passenger: str) -> dict[str, Any]:
    """The passenger's frequent-flyer tier."""
    try:
        tier = _loyalty_api(passenger)
    except LoyaltyUnavailable:
        tier = "none"
    return {"passenger": passenger, "tier": tier}


@tool
def flight_status(flight: str, date: str) -> dict[str, Any]:
    """Operational status of a flight."""
    status, delay = STATUS[flight]
    return {"flight": flight, "date": date, "status": status, "delay_min": delay}


@tool
def find_alternatives(origin: str, dest: str, date: str, include_partners: bool) -> dict[str, Any]:
    """Bookable alternatives on a route and date."""
    stale = active("fly.stale")
    opts = []
    for f, carrier, dep, arr, seats in OPTIONS.get((origin, dest, date), []):
        if carrier != "LH" and not include_partners:
            continue
        opts.append({"flight": f, "dep": dep, "arr": arr, "seats": STALE_SEATS.get(f, seats) if stale else seats})
    as_of = "2026-12-02T06:05Z" if stale else "2026-12-02T09:42Z"
    return {"route": f"{origin}-{dest}", "date": date, "as_of": as_of, "options": opts}


@tool
def confirm_rebooking(pnr: str, flight: str) -> dict[str, Any]:
    """Rebook a passenger; the reservation system checks eligibility, seats and arrival."""
    b = BOOKINGS[pnr]
    status, delay = STATUS[b["flight"]]
    if status != "CANCELLED":
        raise ValueError(f"{pnr}: {b['flight']} operates ({status.lower()} {delay} min); involuntary rebooking "
                         "not permitted")
    row = next(o for o in OPTIONS[(b["from"], b["to"], b["date"])] if o[0] == flight)
    if row[1] != "LH" and TIERS.get(b["passenger"]) != "gold":
        raise ValueError(f"{pnr}: partner flight {flight} needs gold status")
    if row[4] <= 0:
        raise ValueError(f"{pnr}: {flight} is sold out")
    if row[3] > b["latest_arrival"]:
        raise ValueError(f"{pnr}: {flight} arrives {row[3]}, after the passenger's latest arrival "
                         f"{b['latest_arrival']}")
    return {"pnr": pnr, "flight": flight, "status": "rebooked"}


@tool
def send_notice(pnr: str, text: str) -> dict[str, Any]:
    """Send the passenger a message."""
    return {"pnr": pnr, "sent": True}


@tool
def issue_refund(pnr: str) -> dict[str, Any]:
    """Refund a cancelled booking."""
    if STATUS[BOOKINGS[pnr]["flight"]][0] != "CANCELLED":
        raise ValueError(f"{pnr}: flight operates; not refundable")
    return {"pnr": pnr, "refund": "issued"}


def _triage_brain(request: Any, msgs: list[dict[str, Any]]) -> str:
    data = json.loads(msgs[-1]["content"])
    st = data["status"]
    if st["status"] == "CANCELLED":
        path = "refund" if "refund" in data["message"].lower() else "rebook"
    else:
        path = "wait"
        if active("fly.route"):
            path = "rebook"  # "my flight is late, I will miss my meeting" read as a rebooking request
    return json.dumps({"path": path})


def _choose_brain(request: Any, msgs: list[dict[str, Any]]) -> str:
    data = json.loads(msgs[-1]["content"])
    opts = data["options"]
    fits = [i for i, o in enumerate(opts) if o["seats"] > 0 and o["arr"] <= data["latest_arrival"]]
    pool = fits or [i for i, o in enumerate(opts) if o["seats"] > 0]
    best = min(pool, key=lambda i: opts[i]["arr"])
    return f"Option {best + 1}: {opts[best]['flight']} arrives {opts[best]['arr']}."


BRAINS["rebook_triage"] = _triage_brain
BRAINS["rebook_choose"] = _choose_brain


class FlyState(TypedDict, total=False):
    pnr: str
    message: str
    booking: dict[str, Any]
    tier: str
    status: dict[str, Any]
    path: str
    search: dict[str, Any]
    choice_text: str
    selected: dict[str, Any]
    result: dict[str, Any]


def build_fly_graph() -> Any:
    llm = _llm()

    def load(state: FlyState) -> dict[str, Any]:
        b = get_booking.invoke({"pnr": state["pnr"]})
        tier = loyalty_status.invoke({"passenger": b["passenger"]})
        st = flight_status.invoke({"flight": b["flight"], "date": b["date"]})
        return {"booking": b, "tier": tier["tier"], "status": st}

    def triage(state: FlyState) -> dict[str, Any]:
        reply = llm.invoke([SystemMessage("[rebook_triage] Decide: rebook, wait or refund. Answer JSON "
                                          "{\"path\": ...}."),
                            HumanMessage(json.dumps({"status": state["status"], "message": state["message"]}))])
        return {"path": json.loads(reply.content)["path"]}

    def search(state: FlyState) -> dict[str, Any]:
        b = state["booking"]
        return {"search": find_alternatives.invoke({"origin": b["from"], "dest": b["to"], "date": b["date"],
                                                    "include_partners": state["tier"] == "gold"})}

    def choose(state: FlyState) -> dict[str, Any]:
        reply = llm.invoke([SystemMessage("[rebook_choose] Pick the best option for the passenger. Answer "
                                          "'Option N: ...'."),
                            HumanMessage(json.dumps({"options": state["search"]["options"],
                                                     "latest_arrival": state["booking"]["latest_arrival"]}))])
        return {"choice_text": reply.content}

    def pick_option(state: FlyState) -> dict[str, Any]:
        n = int(re.match(r"Option (\d+)", state["choice_text"]).group(1))
        opts = state["search"]["options"]
        chosen = opts[n] if active("fly.index") else opts[n - 1]  # the model's options are numbered from 1
        return {"selected": {"flight": chosen["flight"], "arr": chosen["arr"]}}

    def confirm(state: FlyState) -> dict[str, Any]:
        return {"result": confirm_rebooking.invoke({"pnr": state["pnr"], "flight": state["selected"]["flight"]})}

    def notify(state: FlyState) -> dict[str, Any]:
        return {"result": send_notice.invoke({"pnr": state["pnr"], "text": "Your flight is delayed; please "
                                              "check the new departure time."})}

    def refund(state: FlyState) -> dict[str, Any]:
        return {"result": issue_refund.invoke({"pnr": state["pnr"]})}

    g = StateGraph(FlyState)
    for name, fn in [("load", load), ("triage", triage), ("search", search), ("choose", choose),
                     ("pick_option", pick_option), ("confirm", confirm), ("notify", notify), ("refund", refund)]:
        g.add_node(name, fn)
    g.add_edge(START, "load")
    g.add_edge("load", "triage")
    g.add_conditional_edges("triage", lambda s: {"rebook": "search", "wait": "notify", "refund": "refund"}[s["path"]])
    g.add_edge("search", "choose")
    g.add_edge("choose", "pick_option")
    g.add_edge("pick_option", "confirm")
    for end in ("confirm", "notify", "refund"):
        g.add_edge(end, END)
    return g.compile()


def record_fly(inp: dict[str, Any], path: Path) -> None:
    graph = _GRAPHS.setdefault("fly", build_fly_graph())
    _record(graph, "flight-rebooking", f"{inp['pnr']}: {inp['message']}",
            {"pnr": inp["pnr"], "message": inp["message"]}, path)


FLY_AGENT = Agent(
    name="flight-rebooking", route="langgraph", domain="airline disruption desk", ext="jsonl",
    description="loads booking, loyalty tier and flight status; a model routes to rebook / wait / refund; "
                "the rebook branch searches alternatives, a model picks one, the reservation system confirms",
    ref_inputs=[
        {"pnr": "PNR-K8FV2A", "message": "Is my flight on time?"},
        {"pnr": "PNR-M3ZQ7D", "message": "My flight was cancelled, please get me there today."},
        {"pnr": "PNR-W5JH1S", "message": "Cancelled again. I just want a refund."},
        {"pnr": "PNR-C6LT4G", "message": "Flight cancelled - I need to be in Lisbon by lunchtime."},
    ],
    record=record_fly,
    cases=[
        Case("fly_delay_routed_to_rebook", "flight-rebooking",
             {"pnr": "PNR-Q7K2LM", "message": "My flight is late and I will miss my 18:00 meeting!"},
             "wrong_routing", "fly.route", "ChatOpenAI", "llm", '"path": "rebook"',
             "the triage model routes a 40-minute delay to the rebooking branch"),
        Case("fly_option_index", "flight-rebooking",
             {"pnr": "PNR-B4XW9T", "message": "They cancelled LH 1832. Rebook me please."},
             "off_by_one", "fly.index", "pick_option", "other", '"selected": {"flight": "LH 1838"',
             "pick_option indexes the model's 1-based 'Option 2' as a 0-based index"),
        Case("fly_cached_seats", "flight-rebooking",
             {"pnr": "PNR-H2ND5R", "message": "My Porto flight is cancelled, what now?"},
             "stale_data", "fly.stale", "find_alternatives", "tool", '"as_of": "2026-12-02T06:05Z"',
             "find_alternatives serves this morning's cached search, showing seats on a sold-out flight"),
        Case("fly_loyalty_default", "flight-rebooking",
             {"pnr": "PNR-T9PC3E", "message": "Cancelled! I must be in Barcelona before 15:00."},
             "swallowed_error", "fly.loyalty", "loyalty_status", "tool", '"tier": "none"',
             "the loyalty API fails and loyalty_status silently reports tier 'none', hiding partner flights"),
    ],
)



# ======================================================================================
# claims-assessor: travel-insurance claims, with a fraud-screening subgraph
# ======================================================================================

import operator  # noqa: E402

from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402


CLAIM_FX = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17, "JPY": 0.0062, "CNY": 0.128}
PLANS = {  # plan -> category sublimits (EUR), deductible
    "TRV-BASIC": ({"baggage delay": 300, "medical": 1000, "trip delay": 400}, 50),
    "TRV-FAMILY": ({"baggage delay": 600, "medical": 3000, "trip delay": 800}, 50),
    "TRV-PREMIUM": ({"baggage delay": 1000, "medical": 5000, "trip delay": 1500}, 0),
}
CLAIMS = {  # traveller, policy holder, plan, category, receipts as printed
    "CLM-801": ("Kenji Mori", "Kenji Mori", "TRV-BASIC", "baggage delay", ["¥18,400", "¥9,600"]),
    "CLM-802": ("Ana Berg", "Ana Berg", "TRV-BASIC", "medical", ["EUR 1,850.00"]),
    "CLM-803": ("Lukas Berg", "Ana Berg", "TRV-FAMILY", "baggage delay", ["EUR 140.00", "EUR 62.50"]),
    "CLM-804": ("Sam Carter", "Sam Carter", "TRV-BASIC", "trip delay", ["$120.00", "$85.00"]),
    "CLM-811": ("Ines Vidal", "Ines Vidal", "TRV-BASIC", "baggage delay", ["EUR 96.00", "EUR 44.00"]),
    "CLM-812": ("Tom Reid", "Clara Reid", "TRV-FAMILY", "medical", ["£640.00"]),
    "CLM-813": ("Priya Shah", "Priya Shah", "TRV-PREMIUM", "trip delay", ["$310.00"]),
    "CLM-814": ("Ola Nilsen", "Ola Nilsen", "TRV-BASIC", "medical", ["EUR 420.00"]),
}
OPEN_CLAIMS = {"Lukas Berg": 3, "Ola Nilsen": 4, "Ana Berg": 0}
WRONG_PLAN = {"TRV-BASIC": "TRV-PREMIUM"}
_CCY = {"¥": "JPY", "$": "USD", "£": "GBP", "EUR": "EUR"}


def _amount(text: str) -> float:
    return float(re.sub(r"[^\d.]", "", text))


def _ccy(text: str) -> str:
    return next(c for sym, c in _CCY.items() if text.startswith(sym))


def _claim_truth(cid: str) -> tuple[float, float, int]:
    trav, _, plan, cat, receipts = CLAIMS[cid]
    documented = round(sum(_amount(r) for r in receipts) * CLAIM_FX[_ccy(receipts[0])], 2)
    limits, ded = PLANS[plan]
    return documented, round(min(documented, limits[cat]) - ded, 2), OPEN_CLAIMS.get(trav, 0)


@tool
def get_claim(claim_id: str) -> dict[str, Any]:
    """The claim as filed."""
    trav, holder, plan, cat, receipts = CLAIMS[claim_id]
    return {"claim_id": claim_id, "traveller": trav, "policy_holder": holder, "policy": plan, "category": cat,
            "receipts": receipts}


@tool
def prior_claims(name: str) -> dict[str, Any]:
    """Open claims of a person across all policies."""
    return {"name": name, "open_claims": OPEN_CLAIMS.get(name, 0)}


@tool
def claim_fx(currency: str) -> dict[str, Any]:
    """Today's claims-settlement exchange rate to EUR."""
    return {"currency": currency, "to_eur": CLAIM_FX[currency]}


@tool
def settle_claim(claim_id: str, total_eur: float) -> dict[str, Any]:
    """Pay a claim; the payment system audits it against the documents and the policy."""
    documented, _due, open_claims = _claim_truth(claim_id)
    trav, _, plan, cat, _ = CLAIMS[claim_id]
    if open_claims >= 3:
        raise ValueError(f"{claim_id}: {trav} has {open_claims} open claims; auto-settlement blocked")
    limits, ded = PLANS[plan]
    if total_eur > documented - ded + 0.01:
        raise ValueError(f"{claim_id}: settlement {total_eur:.2f} EUR exceeds the documented loss "
                         f"({documented:.2f} EUR less {ded} EUR deductible)")
    if total_eur > limits[cat] - ded + 0.01:
        raise ValueError(f"{claim_id}: settlement {total_eur:.2f} EUR exceeds the {cat} sublimit of {plan} "
                         f"({limits[cat]} EUR)")
    return {"claim_id": claim_id, "paid_eur": total_eur, "status": "paid"}


@tool
def queue_for_review(claim_id: str, reason: str) -> dict[str, Any]:
    """Send a claim to a human adjuster."""
    return {"claim_id": claim_id, "queue": "special investigations", "reason": reason}


def _policy_text(plan: str) -> str:
    limits, ded = PLANS[plan]
    rows = "; ".join(f"{k}: up to EUR {v}" for k, v in limits.items())
    return f"Policy wording {plan} (2026 edition). Sublimits per claim - {rows}. Deductible: EUR {ded} per claim."


class PolicyRetriever(BaseRetriever):
    """Policy wordings by plan code."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        plan = re.search(r"TRV-[A-Z]+", query).group(0)
        if active("claim.policy"):
            plan = WRONG_PLAN.get(plan, plan)  # the index returns the better-matching premium wording
        return [Document(page_content=_policy_text(plan), metadata={"doc_id": f"{plan}-2026"})]


def _claim_extract_brain(request: Any, msgs: list[dict[str, Any]]) -> str:
    claim = json.loads(msgs[-1]["content"])
    ccy = _ccy(claim["receipts"][0])
    if active("claim.currency") and ccy == "JPY":
        ccy = "CNY"  # the yen sign read as yuan
    return json.dumps({"currency": ccy, "receipts": [_amount(r) for r in claim["receipts"]]})


def _claim_fraud_brain(request: Any, msgs: list[dict[str, Any]]) -> str:
    data = json.loads(msgs[-1]["content"])
    verdict = "review" if data["open_claims"] >= 3 else "clear"
    return json.dumps({"subject": data["name"], "verdict": verdict})


BRAINS["claim_extract"] = _claim_extract_brain
BRAINS["claim_fraud"] = _claim_fraud_brain


class FraudState(TypedDict, total=False):
    fraud_subject: str
    fraud_history: dict[str, Any]
    fraud: dict[str, Any]


class ClaimState(TypedDict, total=False):
    claim_id: str
    claim: dict[str, Any]
    extracted: dict[str, Any]
    policy: dict[str, Any]
    fraud_subject: str
    fraud: dict[str, Any]
    fx: dict[str, Any]
    payouts: Annotated[list[dict[str, Any]], operator.add]
    result: dict[str, Any]


def build_claim_graph() -> Any:
    llm = _llm()
    retriever = PolicyRetriever()

    def lookup(state: FraudState) -> dict[str, Any]:
        return {"fraud_history": prior_claims.invoke({"name": state["fraud_subject"]})}

    def judge(state: FraudState) -> dict[str, Any]:
        reply = llm.invoke([SystemMessage("[claim_fraud] Screen the person; answer JSON {subject, verdict}."),
                            HumanMessage(json.dumps(state["fraud_history"]))])
        return {"fraud": json.loads(reply.content)}

    sub = StateGraph(FraudState)
    sub.add_node("lookup", lookup)
    sub.add_node("judge", judge)
    sub.add_edge(START, "lookup")
    sub.add_edge("lookup", "judge")
    sub.add_edge("judge", END)
    fraud_screen = sub.compile()

    def intake(state: ClaimState) -> dict[str, Any]:
        return {"claim": get_claim.invoke({"claim_id": state["claim_id"]})}

    def extract(state: ClaimState) -> dict[str, Any]:
        reply = llm.invoke([SystemMessage("[claim_extract] Extract the receipts' currency (ISO code) and amounts "
                                          "as JSON."), HumanMessage(json.dumps(state["claim"]))])
        return {"extracted": json.loads(reply.content)}

    def policy(state: ClaimState) -> dict[str, Any]:
        docs = retriever.invoke(f"policy wording {state['claim']['policy']}")
        text = docs[0].page_content
        cat = state["claim"]["category"]
        limit = int(re.search(rf"{cat}: up to EUR (\d+)", text).group(1))
        ded = int(re.search(r"Deductible: EUR (\d+)", text).group(1))
        return {"policy": {"doc": docs[0].metadata["doc_id"], "sublimit_eur": limit, "deductible_eur": ded}}

    def delegate(state: ClaimState) -> dict[str, Any]:
        c = state["claim"]
        subject = c["policy_holder"] if active("claim.subject") else c["traveller"]
        return {"fraud_subject": subject}

    def fx(state: ClaimState) -> dict[str, Any]:
        return {"fx": claim_fx.invoke({"currency": state["extracted"]["currency"]})}

    def assess_receipts(state: ClaimState) -> dict[str, Any]:
        rate = state["fx"]["to_eur"]
        return {"payouts": [{"item": f"receipt {i + 1}", "eur": round(a * rate, 2)}
                            for i, a in enumerate(state["extracted"]["receipts"])]}

    def add_deductible(state: ClaimState) -> dict[str, Any]:
        item = {"item": "deductible", "eur": -state["policy"]["deductible_eur"]}
        if active("claim.state"):
            return {"payouts": [*state["payouts"], item]}  # the whole list returned to an additive reducer
        return {"payouts": [item]}

    def settle(state: ClaimState) -> dict[str, Any]:
        receipts = sum(x["eur"] for x in state["payouts"] if x["item"].startswith("receipt"))
        other = sum(x["eur"] for x in state["payouts"] if not x["item"].startswith("receipt"))
        total = round(min(receipts, state["policy"]["sublimit_eur"]) + other, 2)
        return {"result": settle_claim.invoke({"claim_id": state["claim_id"], "total_eur": total})}

    def review(state: ClaimState) -> dict[str, Any]:
        return {"result": queue_for_review.invoke({"claim_id": state["claim_id"],
                                                   "reason": f"{state['fraud']['subject']}: open claims"})}

    g = StateGraph(ClaimState)
    for name, fn in [("intake", intake), ("extract", extract), ("policy", policy), ("delegate", delegate),
                     ("fraud_screen", fraud_screen), ("fx", fx), ("assess_receipts", assess_receipts),
                     ("add_deductible", add_deductible), ("settle", settle), ("review", review)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "extract")
    g.add_edge("extract", "policy")
    g.add_edge("policy", "delegate")
    g.add_edge("delegate", "fraud_screen")
    g.add_conditional_edges("fraud_screen", lambda s: "review" if s["fraud"]["verdict"] == "review" else "fx")
    g.add_edge("fx", "assess_receipts")
    g.add_edge("assess_receipts", "add_deductible")
    g.add_edge("add_deductible", "settle")
    g.add_edge("settle", END)
    g.add_edge("review", END)
    return g.compile()


def record_claim(inp: dict[str, Any], path: Path) -> None:
    graph = _GRAPHS.setdefault("claim", build_claim_graph())
    _record(graph, "claims-assessor", f"assess and settle {inp['claim_id']}", {"claim_id": inp["claim_id"]}, path)


CLAIM_AGENT = Agent(
    name="claims-assessor", route="langgraph", domain="travel insurance claims", ext="jsonl",
    description="reads the claim, a model extracts currency and amounts, a retriever finds the policy wording, a "
                "fraud-screening subgraph checks the claimant, nodes convert and assess, the claim is settled",
    ref_inputs=[{"claim_id": c} for c in ("CLM-811", "CLM-812", "CLM-813", "CLM-814")],
    record=record_claim,
    cases=[
        Case("claim_yen_as_yuan", "claims-assessor", {"claim_id": "CLM-801"}, "currency_mixup", "claim.currency",
             "ChatOpenAI", "llm", '"currency": "CNY"',
             "the model reads the ¥ receipts as Chinese yuan instead of Japanese yen"),
        Case("claim_premium_wording", "claims-assessor", {"claim_id": "CLM-802"}, "wrong_retrieval",
             "claim.policy", "PolicyRetriever", "retrieval", "TRV-PREMIUM-2026",
             "the policy retriever returns the premium plan's wording for a basic-plan claim"),
        Case("claim_screen_policy_holder", "claims-assessor", {"claim_id": "CLM-803"}, "wrong_entity_subagent",
             "claim.subject", "delegate", "other", '"fraud_subject": "Ana Berg"',
             "the fraud-screening subgraph is sent the policy holder instead of the travelling claimant"),
        Case("claim_payouts_duplicated", "claims-assessor", {"claim_id": "CLM-804"}, "bad_state_write",
             "claim.state", "add_deductible", "other", '"item": "receipt 1"',
             "add_deductible returns the whole payouts list to an additive reducer, duplicating the receipts"),
    ],
)

AGENTS = [MEAL_AGENT, FLY_AGENT, CLAIM_AGENT]
