"""Damask weaving mill: trajdebug's recording API, one sub-agent per piece, loom bookings kept in run.state, parallel warp orders."""
from __future__ import annotations

import json
import math

import trajdebug
from suite_common import chat, last_user

RUN_NAME = "damask-mill-planner"
ROUTE = "sdk"
DOMAIN = "damask weaving mill"
SHAPE = "sub-agent per piece (pattern retrieval, loom memory read, repeat plan llm, parse, yarn tool, loom booking state write), warp orders in parallel threads, weave schedule, final inspection assertion; 30-60 steps"
SWITCH = None

PATTERNS = {
    "Tudor Rose": {"pattern": "Tudor Rose", "repeat_cm": 64.0, "ends_per_cm": 48, "colours": ["ivory", "old gold", "claret"]},
    "Pomegranate": {"pattern": "Pomegranate", "repeat_cm": 53.0, "ends_per_cm": 56, "colours": ["crimson", "ivory", "sage"]},
    "Acanthus": {"pattern": "Acanthus", "repeat_cm": 71.0, "ends_per_cm": 44, "colours": ["ivory", "dove grey"]},
    "Strawberry Thief": {"pattern": "Strawberry Thief", "repeat_cm": 45.5, "ends_per_cm": 60, "colours": ["indigo", "madder", "weld", "ivory"]},
    "Bird and Vine": {"pattern": "Bird and Vine", "repeat_cm": 38.0, "ends_per_cm": 52, "colours": ["sage", "ivory", "old gold"]},
}
LOOMS = ["Jacquard 1", "Jacquard 2", "Jacquard 3", "Jacquard 4", "Jacquard 5"]
GRAMS_PER_END_METRE = 0.09
INPUTS = [
    {"order": "DM-2201", "client": "Hardwick Hall", "pieces": [("Tudor Rose", 340, 137), ("Acanthus", 500, 140), ("Pomegranate", 220, 137)]},
    {"order": "DM-2202", "client": "Liberty stores", "pieces": [("Strawberry Thief", 800, 140), ("Bird and Vine", 410, 137), ("Tudor Rose", 260, 137), ("Acanthus", 300, 140)]},
    {"order": "DM-2203", "client": "The Vyne", "pieces": [("Pomegranate", 600, 140), ("Pomegranate", 180, 137), ("Bird and Vine", 240, 137)]},
    {"order": "DM-2204", "client": "Osterley Park", "pieces": [("Acanthus", 720, 140), ("Strawberry Thief", 350, 137), ("Tudor Rose", 510, 140), ("Bird and Vine", 150, 137), ("Pomegranate", 270, 137)]},
    {"order": "DM-2205", "client": "Mrs Charteris", "pieces": [("Bird and Vine", 330, 137), ("Tudor Rose", 420, 140)]},
]
CASES = [
    dict(id="zzzp_damask_01", input=1, switch="a", fault_kind="subagent_wrong_entity", root=("plan_piece", 3, "agent"),
         failure=("final_inspection", 1), description="The planner for the third piece of DM-2202 (Tudor Rose) plans the second piece's pattern, Bird and Vine, instead."),
    dict(id="zzzp_damask_02", input=3, switch="b", fault_kind="plan_error", root=("draft_repeat_plan", 1, "llm"),
         failure=("final_inspection", 1), description="The repeat plan for the first piece of DM-2204 rounds 720 cm of Acanthus down to 10 repeats, 710 cm, one repeat short."),
    dict(id="zzzp_damask_03", input=0, switch="c", fault_kind="bad_memory_write", root=("book_loom", 1, "state"),
         failure=("final_inspection", 1), description="Booking the first piece writes the loom booking under Jacquard 2 while the piece is on Jacquard 1, so the next piece is put on Jacquard 1 as well."),
    dict(id="zzzp_damask_04", input=4, switch="d", fault_kind="truncated_result", root=("pattern_lookup", 2, "retrieval"),
         failure=("final_inspection", 1), description="The pattern record for Tudor Rose comes back with only its first two colours, dropping claret, so no claret warp is ordered."),
    dict(id="zzzp_damask_05", input=2, switch="e", fault_kind="swallowed_error", root=("order_warp", 2, "tool"), root_input={"colour": "ivory"},
         failure=("final_inspection", 1), description="The warp order for ivory meets a supplier timeout and reports 0 kg ordered as if it had gone through."),
]


def policy(request):
    req = json.loads(last_user(request))
    repeats = math.ceil(req["length_cm"] / req["repeat_cm"])
    if SWITCH == "b" and req["pattern"] == "Acanthus" and req["length_cm"] == 720:
        repeats = math.floor(req["length_cm"] / req["repeat_cm"])
    return json.dumps({"repeats": repeats, "warp_ends": int(req["width_cm"] * req["ends_per_cm"]), "loom": req["free_looms"][0]})


@trajdebug.step(kind="input")
def take_order(order: dict) -> dict:
    return {"order": order["order"], "client": order["client"],
            "pieces": [{"n": i + 1, "pattern": p, "length_cm": l, "width_cm": w} for i, (p, l, w) in enumerate(order["pieces"])]}


@trajdebug.step(kind="retrieval")
def pattern_lookup(pattern: str) -> dict:
    rec = json.loads(json.dumps(PATTERNS[pattern]))
    if SWITCH == "d" and pattern == "Tudor Rose":
        rec["colours"] = rec["colours"][:2]
    return rec


@trajdebug.step(kind="tool")
def recall_loom_notes() -> dict:
    st = trajdebug.current_run().state
    return {loom: st.get(f"loom:{loom}") for loom in LOOMS}


@trajdebug.step(kind="llm")
def draft_repeat_plan(piece: dict, pattern: dict, free_looms: list) -> dict:
    ask = {"pattern": pattern["pattern"], "length_cm": piece["length_cm"], "width_cm": piece["width_cm"],
           "repeat_cm": pattern["repeat_cm"], "ends_per_cm": pattern["ends_per_cm"], "free_looms": free_looms}
    return chat(_SERVER["base_url"], "mill-model", [{"role": "system", "content": "Plan the repeats, warp ends and loom for a damask piece. Answer JSON."},
                                         {"role": "user", "content": json.dumps(ask)}])


@trajdebug.step(kind="parse")
def read_repeat_plan(message: dict) -> dict:
    return json.loads(message["content"])


@trajdebug.step(kind="tool")
def yarn_requirement(pattern: dict, plan: dict, piece: dict) -> dict:
    metres = plan["repeats"] * pattern["repeat_cm"] / 100 + 1.5  # loom waste
    per_colour = plan["warp_ends"] * metres * GRAMS_PER_END_METRE / 1000 / len(pattern["colours"])
    return {c: round(per_colour, 2) for c in pattern["colours"]}


@trajdebug.step(kind="state")
def book_loom(piece: dict, loom: str) -> dict:
    key = loom
    if SWITCH == "c" and piece["n"] == 1:
        key = LOOMS[(LOOMS.index(loom) + 1) % len(LOOMS)]
    trajdebug.current_run().state[f"loom:{key}"] = {"piece": piece["n"], "pattern": piece["pattern"]}
    return {"piece": piece["n"], "loom": loom}


@trajdebug.step(kind="agent")
def plan_piece(piece: dict, order: dict) -> dict:
    pattern_name = piece["pattern"]
    if SWITCH == "a" and piece["n"] == 3:
        pattern_name = order["pieces"][piece["n"] - 2]["pattern"]
    pattern = pattern_lookup(pattern_name)
    notes = recall_loom_notes()
    free = [l for l in LOOMS if notes[l] is None]
    plan = read_repeat_plan(draft_repeat_plan(piece, pattern, free))
    yarn = yarn_requirement(pattern, plan, piece)
    booking = book_loom(piece, plan["loom"])
    return {"piece": piece["n"], "pattern": pattern["pattern"], "repeats": plan["repeats"], "repeat_cm": pattern["repeat_cm"],
            "warp_ends": plan["warp_ends"], "loom": booking["loom"], "yarn": yarn}


@trajdebug.step(kind="tool")
def order_warp(colour: str, kg: float) -> dict:
    if SWITCH == "e" and colour == "ivory":
        try:
            raise TimeoutError("yarn supplier did not confirm within 30 s")
        except TimeoutError:
            return {"colour": colour, "kg_ordered": 0.0, "status": "sent"}
    return {"colour": colour, "kg_ordered": round(kg + 0.5, 1), "status": "confirmed"}


@trajdebug.step(kind="other")
def weave_schedule(plans: list) -> list:
    return [{"loom": p["loom"], "piece": p["piece"], "days": math.ceil(p["repeats"] * p["repeat_cm"] / 90)} for p in plans]


@trajdebug.step(kind="output")
def final_inspection(order: dict, plans: list, warp: list, schedule: list) -> str:
    ordered = {w["colour"]: w["kg_ordered"] for w in warp}
    for piece, plan in zip(order["pieces"], plans):
        assert plan["pattern"] == piece["pattern"], f"piece {piece['n']}: planned {plan['pattern']}, ordered {piece['pattern']}"
        length = plan["repeats"] * plan["repeat_cm"]
        assert length >= piece["length_cm"], f"piece {piece['n']}: {length:.0f} cm woven, {piece['length_cm']} cm ordered"
        for colour in PATTERNS[piece["pattern"]]["colours"]:
            assert ordered.get(colour, 0) > 0, f"no {colour} warp ordered for piece {piece['n']} ({piece['pattern']})"
    looms = [s["loom"] for s in schedule]
    assert len(set(looms)) == len(looms), f"loom double-booked: {looms}"
    return f"{order['order']}: {len(plans)} pieces planned on {', '.join(looms)}"


_SERVER: dict = {}


def record(server, inp: dict, path: str) -> None:
    _SERVER["base_url"] = server.base_url
    try:
        with trajdebug.run(RUN_NAME, path=path, task=f"damask order {inp['order']}"):
            order = take_order(inp)
            plans = [plan_piece(piece, order) for piece in order["pieces"]]
            need: dict = {}
            for p in plans:
                for c, kg in p["yarn"].items():
                    need[c] = round(need.get(c, 0) + kg, 2)
            with trajdebug.ContextThreadPoolExecutor(max_workers=3) as pool:
                warp = list(pool.map(lambda c: order_warp(c, need[c]), sorted(need)))
            schedule = weave_schedule(plans)
            final_inspection(order, plans, warp, schedule)
    except Exception:
        pass
    trajdebug.flush()
