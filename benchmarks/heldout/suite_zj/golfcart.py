"""Golf cart rental (OpenAI Agents SDK): a front desk agent hands off to the fleet agent or the events agent, which read the request, the course rules, the carts and their batteries, then book."""

from __future__ import annotations

import json

from agents import Agent, function_tool

from . import common, kit

NAME = "golfcart-rental"
ROUTE = "openai_agents"
DOMAIN = "golf cart rental"
EXT = "jsonl"
DESK = "golfcart"
SHAPE = "Agents SDK: front_desk -> hand-off (fleet_desk | events_desk); fleet_desk loops over request, rules, carts, per-cart battery, then book_carts"

REQUESTS = {
    "GR-310": {"request": "GR-310", "party": 4, "date": "2026-05-02", "tee": "09:10", "course": "North", "holes": 18, "kind": "round"},
    "GR-322": {"request": "GR-322", "party": 2, "date": "2026-05-03", "tee": "14:40", "course": "South", "holes": 18, "kind": "round"},
    "GR-301": {"request": "GR-301", "party": 2, "date": "2026-05-01", "tee": "08:00", "course": "South", "holes": 9, "kind": "round"},
    "GR-304": {"request": "GR-304", "party": 4, "date": "2026-05-01", "tee": "11:30", "course": "South", "holes": 18, "kind": "round"},
    "GR-307": {"request": "GR-307", "party": 6, "date": "2026-05-02", "tee": "07:40", "course": "South", "holes": 18, "kind": "round"},
    "GR-309": {"request": "GR-309", "party": 2, "date": "2026-05-02", "tee": "16:20", "course": "North", "holes": 9, "kind": "round"},
}
RULES_TODAY = {"North": {"course": "North", "path_only": True, "updated": "2026-05-01T18:00"},
               "South": {"course": "South", "path_only": False, "updated": "2026-05-01T18:00"}}
RULES_CACHED = {"North": {"course": "North", "path_only": False, "updated": "2026-04-24T07:00"},
                "South": {"course": "South", "path_only": False, "updated": "2026-04-24T07:00"}}
CARTS = [
    {"cart": "C-2", "seats": 2, "path_kit": True}, {"cart": "C-3", "seats": 2, "path_kit": False},
    {"cart": "C-5", "seats": 4, "path_kit": False}, {"cart": "C-7", "seats": 4, "path_kit": True},
    {"cart": "C-8", "seats": 2, "path_kit": True}, {"cart": "C-9", "seats": 4, "path_kit": True},
    {"cart": "C-11", "seats": 4, "path_kit": True},
]
CHARGE = {"C-2": 88, "C-3": 91, "C-5": 95, "C-7": 22, "C-8": 76, "C-9": 84, "C-11": 90}
RATE = {9: 18.0, 18: 32.0}

INPUTS = {"A": "GR-310", "B": "GR-322", "R1": "GR-301", "R2": "GR-304", "R3": "GR-307", "R4": "GR-309"}
REFS = ["R1", "R2", "R3", "R4"]

GEN = "generation gpt-4o-mini"
CASES = [
    common.Case("zj-golfcart-01", "hallucinated_value", "B", GEN, 12, "book_carts", 1,
                "The fleet model books at a cart rate of 28.00 per cart that no rate card holds, and the booking API rejects the total.", "28.0"),
    common.Case("zj-golfcart-02", "wrong_tool_args", "A", GEN, 4, "book_carts", 1,
                "The fleet model asks the cart list for the day before the tee date, so it books a cart that is already taken on the day.", "2026-05-01"),
    common.Case("zj-golfcart-03", "wrong_routing", "A", GEN, 1, "book_carts", 1,
                "The front desk hands a plain round to the events desk, which books without checking batteries or course rules.", "transfer_to_events_desk"),
    common.Case("zj-golfcart-04", "swallowed_error", "A", "battery_status", 1, "book_carts", 1,
                "The battery tool swallows the telemetry timeout and reports a full charge for a cart at 22 percent."),
    common.Case("zj-golfcart-05", "stale_data", "A", "course_rules", 1, "book_carts", 1,
                "The course rules come from last week's cached bulletin without the path-only restriction, so carts without a path kit are booked."),
]
BOOKED = {"2026-05-02": {"C-9"}, "2026-05-01": {"C-2"}}


@function_tool
def get_request(request_id: str) -> dict:
    """Read a cart rental request."""
    return dict(REQUESTS[request_id])


@function_tool
def course_rules(course: str) -> dict:
    """Today's cart rules for a course."""
    return dict((RULES_CACHED if kit.active("golfcart.stale_data") else RULES_TODAY)[course])


@function_tool
def list_carts(date: str, seats: int) -> list:
    """Carts free on a date with at least `seats` seats."""
    return [dict(c) for c in CARTS if c["seats"] >= seats and c["cart"] not in BOOKED.get(date, set())]


class TelemetryTimeout(Exception):
    pass


def _telemetry(cart: str) -> int:
    if cart == "C-7" and kit.active("golfcart.swallowed_error"):
        raise TelemetryTimeout("telemetry gateway timed out")
    return CHARGE[cart]


@function_tool
def battery_status(cart: str) -> dict:
    """Battery charge of one cart."""
    try:
        pct = _telemetry(cart)
    except TelemetryTimeout:
        pct = 100
    return {"cart": cart, "charge_pct": pct}


@function_tool(failure_error_function=None)
def book_carts(request_id: str, carts: list[str], rate_per_cart: float, total: float) -> dict:
    """Book carts for a request (the booking API validates the booking)."""
    req = REQUESTS[request_id]
    rules = RULES_TODAY[req["course"]]
    by_id = {c["cart"]: c for c in CARTS}
    errs = []
    seats = sum(by_id[c]["seats"] for c in carts if c in by_id)
    if seats < req["party"]:
        errs.append(f"carts {carts} seat {seats}, party is {req['party']}")
    for c in carts:
        if c in BOOKED.get(req["date"], set()):
            errs.append(f"cart {c} is already booked on {req['date']}")
        if rules["path_only"] and not by_id[c]["path_kit"]:
            errs.append(f"{req['course']} is path-only today and cart {c} has no path kit")
        if req["holes"] == 18 and CHARGE[c] < 60:
            errs.append(f"cart {c} charge {CHARGE[c]}% is below the 60% minimum for 18 holes")
    if rate_per_cart != RATE[req["holes"]] or abs(total - rate_per_cart * len(carts)) > 0.01:
        errs.append(f"rate {rate_per_cart:.2f} x {len(carts)} = {total:.2f} does not match the {req['holes']}-hole rate card {RATE[req['holes']]:.2f}")
    if errs:
        raise ValueError("booking API 422: " + json.dumps({"request": request_id, "errors": errs}))
    return {"booking": f"BK-{request_id[3:]}", "carts": carts, "total": total}


def _fleet_policy(messages: list[dict]):
    rid = _request_id(messages)
    req = common.tool_json(messages, "get_request")
    if req is None:
        return common.reply(("get_request", {"request_id": rid}))
    rules = common.tool_json(messages, "course_rules")
    if rules is None:
        return common.reply(("course_rules", {"course": req["course"]}))
    carts = common.tool_json(messages, "list_carts")
    if carts is None:
        date = "2026-05-01" if kit.active("golfcart.wrong_tool_args") else req["date"]
        return common.reply(("list_carts", {"date": date, "seats": min(4, req["party"])}))
    usable = [c for c in carts if c["path_kit"] or not rules["path_only"]]
    checked = {m["cart"]: m["charge_pct"] for m in _all_tool_json(messages, "battery_status")}
    for c in usable:
        if c["cart"] not in checked:
            return common.reply(("battery_status", {"cart": c["cart"]}))
    chosen, seats = [], 0
    for c in usable:
        if seats >= req["party"]:
            break
        if req["holes"] == 9 or checked[c["cart"]] >= 60:
            chosen.append(c["cart"])
            seats += c["seats"]
    if common.tool_json(messages, "book_carts") is None:
        rate = RATE[req["holes"]]
        if kit.active("golfcart.hallucinated_value"):
            rate = 28.0
        return common.reply(("book_carts", {"request_id": rid, "carts": chosen, "rate_per_cart": rate, "total": rate * len(chosen)}))
    return f"Booked {', '.join(chosen)} for {rid}."


def _events_policy(messages: list[dict]):
    rid = _request_id(messages)
    req = common.tool_json(messages, "get_request")
    if req is None:
        return common.reply(("get_request", {"request_id": rid}))
    carts = common.tool_json(messages, "list_carts")
    if carts is None:
        return common.reply(("list_carts", {"date": req["date"], "seats": 4}))
    if common.tool_json(messages, "book_carts") is None:
        chosen, seats = [], 0
        for c in carts:
            if seats < req["party"]:
                chosen.append(c["cart"])
                seats += c["seats"]
        rate = RATE[req["holes"]]
        return common.reply(("book_carts", {"request_id": rid, "carts": chosen, "rate_per_cart": rate, "total": rate * len(chosen)}))
    return f"Event carts booked for {rid}."


def _request_id(messages: list[dict]) -> str:
    import re

    for m in messages:
        if m.get("role") == "user":
            return re.search(r"GR-\d+", m["content"]).group(0)
    raise ValueError("no request id")


def _all_tool_json(messages: list[dict], name: str) -> list:
    ids = {c["id"]: c["function"]["name"] for m in messages for c in (m.get("tool_calls") or [])}
    return [common.decode(m["content"]) for m in messages if m.get("role") == "tool" and ids.get(m.get("tool_call_id")) == name]


@common.policy(DESK)
def _policy(messages: list[dict]):
    system = messages[0]["content"]
    if "front desk" in system:
        events = kit.active("golfcart.wrong_routing")
        return common.reply(("transfer_to_events_desk" if events else "transfer_to_fleet_desk", {}))
    if "events desk" in system:
        return _events_policy(messages)
    return _fleet_policy(messages)


def build() -> Agent:
    model = common.agents_model()
    fleet = Agent(name="fleet_desk", model=model, tools=[get_request, course_rules, list_carts, battery_status, book_carts],
                  instructions=f"[desk:{DESK}] You are the fleet desk: book carts for a round after checking course rules and batteries.")
    events = Agent(name="events_desk", model=model, tools=[get_request, list_carts, book_carts],
                   instructions=f"[desk:{DESK}] You are the events desk: book carts for tournaments and group outings.")
    return Agent(name="front_desk", model=model, handoffs=[fleet, events],
                 instructions=f"[desk:{DESK}] You are the front desk: hand a request to the fleet desk (rounds) or the events desk (tournaments).")


def run_once(inp: str, path) -> None:
    common.agents_run(NAME, f"rent carts for {inp}", path, build(), f"Please handle cart request {inp}")
