"""Archery range lane bookings (sdk route): a club asks for lanes; the agent plans, reads bows, assigns lanes, books."""
from __future__ import annotations

import json
import math

from .common import Case, last_user, run_sdk
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "archery-lanes", "sdk", "archery range lane bookings", "jsonl"
SHAPE = "plan (llm) -> per archer: member card, parse draw weight, roster write -> free lanes -> assign -> safety officer sub-agent -> price -> rate card -> book"

MEMBERS = {
    "M-101": {"name": "Ines Varga", "bow": "recurve, draw 34 lb", "status": "active"},
    "M-102": {"name": "Tomas Reyes", "bow": "compound, draw 22 kg", "status": "active"},
    "M-103": {"name": "Aiko Brandt", "bow": "longbow, draw 45 lb", "status": "active"},
    "M-104": {"name": "Pavel Orlov", "bow": "recurve, draw 17 kg", "status": "active"},
    "M-105": {"name": "Maeve Quinn", "bow": "barebow, draw 30 lb", "status": "active"},
    "M-106": {"name": "Olu Adeyemi", "bow": "compound, draw 55 lb", "status": "active"},
    "M-107": {"name": "Sanne Vos", "bow": "recurve, draw 26 lb", "status": "active"},
}
LANE_MAX_LB = {n: (40 if n <= 6 else 60) for n in range(1, 13)}
FREE = {"sat-am": [2, 3, 4, 7, 8, 9, 10], "sat-pm": [1, 5, 6, 8, 11, 12], "sun-am": [3, 4, 5, 9, 10]}
RATE_CARD = {"version": "2026-04", "per_lane_hour": 14.0}
PROMOS = {"JUNIORS5": 5.0}

INPUTS = {
    "sat": {"club": "Riverside Bowmen", "slot": "sat-am", "hours": 2, "archers": ["M-101", "M-102", "M-103", "M-104", "M-105"], "promo": None},
    "sun": {"club": "Oak Hollow Archers", "slot": "sun-am", "hours": 3, "archers": ["M-106", "M-107", "M-102", "M-101"], "promo": "JUNIORS5"},
}
REFS = [
    {"club": "Northgate Field", "slot": "sat-pm", "hours": 1, "archers": ["M-105", "M-107", "M-101"], "promo": None},
    {"club": "Kestrel Club", "slot": "sat-am", "hours": 2, "archers": ["M-103", "M-106"], "promo": "JUNIORS5"},
    {"club": "Millbrook Youth", "slot": "sun-am", "hours": 2, "archers": ["M-104", "M-107", "M-105", "M-103", "M-101", "M-102"], "promo": None},
    {"club": "Harbour Longbows", "slot": "sat-pm", "hours": 3, "archers": ["M-103", "M-101"], "promo": None},
]

CASES = [
    Case("archery_unit", "unit_error", "sat", "parse_draw_weight", 2, "parse", "book_lanes", 1,
         "The draw-weight parser keeps a kilogram figure as pounds, so a 48 lb compound is put on a 40 lb lane."),
    Case("archery_roster", "bad_memory_write", "sat", "remember_archer", 3, "state", "book_lanes", 1,
         "The roster write for the third archer stores the previous archer's member id, duplicating a member on the booking."),
    Case("archery_lanes", "off_by_one", "sat", "assign_lanes", 1, "condition", "book_lanes", 1,
         "Lane assignment starts one slot past the free list, putting archers on a lane that is not free."),
    Case("archery_promo", "hallucinated_value", "sun", "plan_session", 1, "llm", "book_lanes", 1,
         "The session planner states a promo code the request never mentioned, and the price uses it."),
    Case("archery_rates", "stale_data", "sun", "fetch_rate_card", 1, "tool", "book_lanes", 1,
         "The rate card service returns last season's card, which the booking API no longer accepts."),
]


def policy(req):
    system, user = last_user(req)
    data = json.loads(user)
    if system.startswith("You plan archery"):
        promo = data.get("promo")
        if active("archery_promo"):
            promo = "CLUBNIGHT15"
        return json.dumps({"lanes": math.ceil(len(data["archers"]) / 2), "ends_per_hour": 6, "promo": promo})
    if system.startswith("You are the range safety"):
        heavy = [a for a in data["archers"] if a["draw_lb"] > LANE_MAX_LB[data["lane"]]]
        return "hold" if heavy else "clear"
    return "ok"


def _parse_draw(text: str) -> dict:
    bow, draw = [p.strip() for p in text.split(",")]
    _, value, unit = draw.split()
    lb = float(value) * (2.20462 if unit == "kg" and not active("archery_unit") else 1.0)
    return {"bow": bow, "draw_lb": round(lb, 1)}


def _book(payload: dict) -> dict:
    errs = []
    ids = [a["member"] for a in payload["archers"]]
    per_lane = {a["lane"]: [b["member"] for b in payload["archers"] if b["lane"] == a["lane"]] for a in payload["archers"]}
    errs += [f"lane {k} has {len(v)} archers assigned; the maximum is 2" for k, v in sorted(per_lane.items()) if len(v) > 2]
    if len(set(ids)) != len(ids):
        errs.append(f"member {sorted(i for i in ids if ids.count(i) > 1)[0]} appears more than once on the booking")
    for a in payload["archers"]:
        value, unit = MEMBERS[a["member"]]["bow"].split()[-2:]
        lb = round(float(value) * (2.20462 if unit == "kg" else 1.0), 1)
        if a["lane"] not in FREE[payload["slot"]]:
            errs.append(f"lane {a['lane']} is not free in slot {payload['slot']}")
        elif lb > LANE_MAX_LB[a["lane"]]:
            errs.append(f"lane {a['lane']} is limited to {LANE_MAX_LB[a['lane']]} lb draw; member {a['member']} is registered at {lb} lb")
    if payload["rate_card"] != RATE_CARD["version"]:
        errs.append(f"rate card {payload['rate_card']} is not current (current {RATE_CARD['version']})")
    if payload["promo"] and payload["promo"] not in PROMOS:
        errs.append(f"unknown promo code {payload['promo']}")
    if errs:
        raise RuntimeError("HTTP 422 from range-booking API: " + "; ".join(errs))
    return {"booking": f"RB-{1000 + len(payload['club']) * 37}", "status": "confirmed"}


def flow(ctx, inp):
    req = ctx.step("read_request", "input", inp, lambda: dict(inp))
    plan = json.loads(ctx.llm("plan_session", "You plan archery range sessions. Answer JSON.",
                              {"archers": req["archers"], "hours": req["hours"], "promo": req["promo"]}))
    roster: list = []
    prev = None
    for mid in req["archers"]:
        card = ctx.step("fetch_member_card", "tool", {"member": mid}, lambda: dict(MEMBERS[mid], member=mid))
        draw = ctx.step("parse_draw_weight", "parse", {"text": card["bow"]}, lambda: _parse_draw(card["bow"]))

        def write():
            who = prev if (active("archery_roster") and len(roster) == 2) else mid
            roster.append({"member": who, **draw})
            return {"roster_size": len(roster), "last": roster[-1]}
        ctx.step("remember_archer", "state", {"member": mid, "draw": draw}, write)
        prev = mid
    free = ctx.step("query_free_lanes", "tool", {"slot": req["slot"]}, lambda: list(FREE[req["slot"]]))

    def assign():
        out, used = [], {}
        for a in roster:
            pool = [lane for lane in free if (LANE_MAX_LB[lane] > 40) == (a["draw_lb"] > 40)]
            for lane in pool:
                full = used.get(lane, 0) > 2 if active("archery_lanes") else used.get(lane, 0) >= 2
                if not full:
                    break
            used[lane] = used.get(lane, 0) + 1
            out.append({"member": a["member"], "lane": lane, "draw_lb": a["draw_lb"]})
        return out
    lanes = ctx.step("assign_lanes", "condition", {"roster": roster, "free": free}, assign)
    with ctx.agent("safety_officer", {"lanes": sorted({a["lane"] for a in lanes})}):
        for lane in sorted({a["lane"] for a in lanes}):
            ctx.llm("review_lane", "You are the range safety officer. Answer clear or hold.",
                    {"lane": lane, "archers": [a for a in lanes if a["lane"] == lane]})
    n_lanes = len({a["lane"] for a in lanes})
    price = ctx.step("price_session", "other", {"lanes": n_lanes, "hours": req["hours"], "promo": plan["promo"]},
                     lambda: {"subtotal": n_lanes * req["hours"] * RATE_CARD["per_lane_hour"],
                              "discount": PROMOS.get(plan["promo"] or "", 0.0), "promo": plan["promo"]})
    card = ctx.step("fetch_rate_card", "tool", {"club": req["club"]},
                    lambda: {"version": "2025-10", "per_lane_hour": 12.0} if active("archery_rates") else dict(RATE_CARD))
    payload = {"club": req["club"], "slot": req["slot"], "archers": lanes, "rate_card": card["version"],
               "total": price["subtotal"] - price["discount"], "promo": price["promo"]}
    return ctx.step("book_lanes", "tool", payload, lambda: _book(payload))


def record(server, inp, path):
    run_sdk(AGENT, flow, server, inp, path, task=f"book lanes for {inp['club']} ({inp['slot']})")
