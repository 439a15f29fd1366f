"""Bowling alley lane desk (LangGraph): reads a group booking, routes league or casual, finds lanes, allocates, reserves."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

from .common import Case, role_and_payload
from .kit import active
from .lg_common import FencedJsonParser, chat_model

NAME = "lane-desk"
ROUTE = "langgraph"
DOMAIN = "bowling alley lanes"
SHAPE = "StateGraph: intake (llm|parser) -> route (llm) -> [league_check] -> find_lanes (llm tool call) -> prices (tool|parser) -> allocate loop -> shoes -> quote (llm) -> confirm (tool)"

REQUESTS = {
    "party14": "Birthday party for Jo, 14 bowlers (9 kids), Saturday 2026-12-12 at 15:00, 2 games, bumpers for the kids.",
    "league": "Thursday Strikers league night, team card L-220, 14 bowlers, 2026-12-10 at 19:00, 3 games.",
    "office20": "Office social, 20 bowlers, Friday 2026-12-11 at 18:00, 2 games.",
    "family5": "Family of 5, Sunday 2026-12-13 at 11:00, 1 game, bumpers please.",
    "league2": "Pin Pals league, card L-310, 18 bowlers, 2026-12-10 at 20:00, 3 games.",
    "students9": "Student society, 9 bowlers, 2026-12-11 at 21:00, 2 games.",
}
LANES_TOTAL = 24
PRICE_PER_GAME = {"casual": "6.50", "league": "4.75"}

CASES = [
    Case("ze_bowling_1", "bowl_args", "wrong_tool_args", "party14", ("ChatOpenAI", 3), ("reserve_lanes", 1),
         "The lane-finding model call asks the lane tool for 2 lanes when the party needs 3, so the allocation overbooks a lane at reservation time."),
    Case("ze_bowling_2", "bowl_page", "truncated_result", "office20", ("list_free_lanes", 1), ("reserve_lanes", 1),
         "The lane listing returns only its first page, so the allocator reuses a lane and the reservation is refused."),
    Case("ze_bowling_3", "bowl_price", "format_drift", "office20", ("get_lane_prices", 1), ("reserve_lanes", 1),
         "The price service starts answering decimal commas, the price parser reads 6,50 as 650, and the deposit hold is refused."),
    Case("ze_bowling_4", "bowl_route", "wrong_routing", "party14", ("ChatOpenAI", 2), ("reserve_lanes", 1),
         "The router sends a birthday party down the league path, so the reservation asks for a league card the party does not have."),
    Case("ze_bowling_5", "bowl_groups", "off_by_one", "league", ("allocate", 1), ("reserve_lanes", 1),
         "The allocator computes the number of groups with floor division, so one lane gets more bowlers than the lane limit."),
]
REF_INPUTS = ["office20", "family5", "league2", "students9"]


class Rejected(RuntimeError):
    pass


def policy(request: Any) -> Any:
    role, p = role_and_payload(request)
    if role == "intake":
        t = p["request"]
        size = int(next(w for w in t.replace(",", " ").split() if w.isdigit() and 2 < int(w) < 100))
        date = next(w for w in t.replace(",", " ").split() if w.startswith("2026-"))
        start = t.split(" at ")[1][:5]
        games = int(t.split(" game")[0].split()[-1])
        card = next((w.strip(",.") for w in t.split() if w.startswith("L-")), None)
        return "```json\n" + json.dumps({"bowlers": size, "date": date, "start": start, "games": games, "bumpers": "bumpers" in t, "league_card": card}) + "\n```"
    if role == "router":
        route = "league" if p.get("league_card") else "casual"
        if active("bowl_route"):
            route = "league"
        return json.dumps({"route": route})
    if role == "lanes":
        need = math.ceil(p["bowlers"] / 6)
        if active("bowl_args"):
            need = p["bowlers"] // 6
        return Reply(tool_calls=(tool_call("list_free_lanes", {"date": p["date"], "start": p["start"], "count": need}),))
    if role == "quote":
        return f"Quote: {p['lanes']} lanes, {p['games']} games, total {p['total']:.2f} GBP, deposit {p['deposit']:.2f} GBP."
    return "{}"


@tool
def lookup_league(card: str) -> dict:
    """Look up a league team card."""
    return {"card": card, "valid": card in ("L-220", "L-310"), "rate": "league"}


@tool
def list_free_lanes(date: str, start: str, count: int) -> dict:
    """List free lanes at a date and start time, at least `count` of them."""
    if count * 6 < 0:
        raise Rejected("count must be positive")
    free = [n for n in range(1, LANES_TOTAL + 1) if (n + len(date) + int(start[:2])) % 3 != 0]
    page = free[: max(count, 1)]
    if active("bowl_page"):
        page = page[:2]
    return {"date": date, "start": start, "lanes": page, "requested": count}


@tool
def get_lane_prices(rate: str) -> str:
    """The price list for a rate, as the price service's CSV text."""
    price = PRICE_PER_GAME[rate]
    if active("bowl_price"):
        price = price.replace(".", ",")
    return f"rate,per_game_per_bowler,shoes\n{rate},{price},2.00"


class PriceParser(BaseOutputParser[dict]):
    def parse(self, text: str) -> dict:
        row = text.splitlines()[1].split(",", 1)
        rest = row[1].replace(",", "", row[1].count(",") - 1) if row[1].count(",") > 1 else row[1]
        game, shoes = rest.split(",")
        return {"rate": row[0], "per_game": float(game), "shoes": float(shoes)}


@tool
def rent_shoes(bowlers: int, kids: bool) -> dict:
    """Reserve shoe pairs for the group."""
    return {"pairs": bowlers, "kids_sizes": kids}


@tool
def reserve_lanes(booking: dict) -> dict:
    """Reserve lanes; the lane system validates the booking."""
    seen: dict[int, int] = {}
    for g in booking["groups"]:
        seen[g["lane"]] = seen.get(g["lane"], 0) + g["bowlers"]
    for lane, n in sorted(seen.items()):
        if n > 6:
            raise Rejected(f"lane system 409: lane {lane} would hold {n} bowlers (max 6 per lane)")
    if booking["rate"] == "league" and not booking.get("league_card"):
        raise Rejected("lane system 403: league rate requires a league card id")
    if booking["deposit"] > 500:
        raise Rejected(f"payments 402: deposit hold {booking['deposit']:.2f} GBP exceeds the card hold limit of 500.00 GBP")
    return {"reservation": f"R-{booking['date'][5:].replace('-', '')}-{booking['groups'][0]['lane']}", "lanes": sorted(seen)}


class S(TypedDict, total=False):
    request: str
    intake: dict
    route: str
    league: dict
    lanes: dict
    prices: dict
    groups: list
    shoes: dict
    quote: str
    reservation: dict


def _ask(role: str, payload: Any, config: RunnableConfig, **kw: Any) -> Any:
    llm = chat_model("lane-llm", **kw)
    msgs = [SystemMessage(f"ROLE: {role}\nYou work the front desk of a bowling alley."), HumanMessage(json.dumps(payload, sort_keys=True))]
    return llm, msgs


def intake(state: S, config: RunnableConfig) -> S:
    llm, msgs = _ask("intake", {"request": state["request"]}, config)
    return {"intake": (llm | FencedJsonParser()).invoke(msgs, config)}


def route(state: S, config: RunnableConfig) -> S:
    llm, msgs = _ask("router", state["intake"], config)
    return {"route": json.loads(llm.invoke(msgs, config).content)["route"]}


def league_check(state: S, config: RunnableConfig) -> S:
    return {"league": lookup_league.invoke({"card": state["intake"].get("league_card") or ""}, config)}


def find_lanes(state: S, config: RunnableConfig) -> S:
    llm, msgs = _ask("lanes", state["intake"], config)
    msg = llm.bind_tools([list_free_lanes]).invoke(msgs, config)
    call = msg.tool_calls[0]
    return {"lanes": list_free_lanes.invoke(call["args"], config)}


def prices(state: S, config: RunnableConfig) -> S:
    rate = "league" if state["route"] == "league" else "casual"
    return {"prices": (get_lane_prices | PriceParser()).invoke({"rate": rate}, config)}


def allocate(state: S) -> S:
    groups = list(state.get("groups", []))
    n = state["intake"]["bowlers"]
    k = math.ceil(n / 6)
    if active("bowl_groups"):
        k = n // 6
    placed = sum(g["bowlers"] for g in groups)
    lanes = state["lanes"]["lanes"]
    size = min(math.ceil(n / k), n - placed)
    groups.append({"lane": lanes[len(groups) % len(lanes)], "bowlers": size})
    return {"groups": groups}


def more_groups(state: S) -> str:
    placed = sum(g["bowlers"] for g in state["groups"])
    return "allocate" if placed < state["intake"]["bowlers"] else "shoes"


def shoes(state: S, config: RunnableConfig) -> S:
    return {"shoes": rent_shoes.invoke({"bowlers": state["intake"]["bowlers"], "kids": state["intake"]["bumpers"]}, config)}


def quote(state: S, config: RunnableConfig) -> S:
    it, pr = state["intake"], state["prices"]
    total = it["bowlers"] * (it["games"] * pr["per_game"] + pr["shoes"])
    llm, msgs = _ask("quote", {"lanes": len(state["groups"]), "games": it["games"], "total": total, "deposit": round(total * 0.5, 2)}, config)
    return {"quote": llm.invoke(msgs, config).content}


def confirm(state: S, config: RunnableConfig) -> S:
    it, pr = state["intake"], state["prices"]
    total = it["bowlers"] * (it["games"] * pr["per_game"] + pr["shoes"])
    booking = {"date": it["date"], "start": it["start"], "groups": state["groups"], "rate": pr["rate"],
               "league_card": it.get("league_card"), "deposit": round(total * 0.5, 2)}
    return {"reservation": reserve_lanes.invoke({"booking": booking}, config)}


def build() -> Any:
    g = StateGraph(S)
    for fn in (intake, route, league_check, find_lanes, prices, allocate, shoes, quote, confirm):
        g.add_node(fn.__name__, fn)
    g.set_entry_point("intake")
    g.add_edge("intake", "route")
    g.add_conditional_edges("route", lambda s: "league_check" if s["route"] == "league" else "find_lanes", ["league_check", "find_lanes"])
    g.add_edge("league_check", "find_lanes")
    g.add_edge("find_lanes", "prices")
    g.add_edge("prices", "allocate")
    g.add_conditional_edges("allocate", more_groups, ["allocate", "shoes"])
    g.add_edge("shoes", "quote")
    g.add_edge("quote", "confirm")
    g.add_edge("confirm", END)
    return g.compile()


def record(main_input: str, path: Path) -> None:
    tracer = TrajdebugTracer(path=str(path), name=NAME, task="reserve lanes for a group")
    try:
        build().invoke({"request": REQUESTS[main_input]}, config={"callbacks": [tracer], "recursion_limit": 60})
    except Rejected:
        pass
