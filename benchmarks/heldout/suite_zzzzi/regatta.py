"""Rowing regatta: seeding, lightweight weigh-in and lane draw for the heats of one event (route: sdk)."""

from __future__ import annotations

import json
import math

import trajdebug

from _common import chat_step, last_user, system_of

NAME = "regatta-lane-draw"
ROUTE = "sdk"
SWITCH = None

RULES = {
    "LM": {"category": "lightweight men", "crew_avg_max_kg": 70.0, "single_max_kg": 72.5},
    "LW": {"category": "lightweight women", "crew_avg_max_kg": 57.0, "single_max_kg": 59.0},
}
LANES = 6
LANE_ORDER = [3, 4, 2, 5, 1, 6]  # seeds take the centre lanes first
CURRENT_LIST = "2025-R2"

RANKINGS = {
    "2025-R2": {"Leander": 912, "Tideway Scullers": 880, "Molesey": 845, "London RC": 801, "Durham ARC": 790,
                "Oxford Brookes": 955, "Nottingham RC": 760, "Agecroft": 702, "Clydesdale": 690, "Tees RC": 655,
                "Globe": 640, "Marlow": 770, "Reading RC": 720, "Cambridge 99": 735, "Sudbury": 610},
    "2024-R4": {"Leander": 930, "Tideway Scullers": 850, "Molesey": 870, "London RC": 815, "Durham ARC": 760,
                "Oxford Brookes": 940, "Nottingham RC": 780, "Agecroft": 690, "Clydesdale": 705, "Tees RC": 640,
                "Globe": 650, "Marlow": 755, "Reading RC": 730, "Cambridge 99": 720, "Sudbury": 600},
}

INPUTS = [
    {"task": "heats draw, LM2x, Nottingham lightweight regatta", "event": "LM2x", "seats": 2,
     "crews": [["LEA", "Leander"], ["TSS", "Tideway Scullers"], ["MOL", "Molesey"], ["LRC", "London RC"],
               ["DUR", "Durham ARC"], ["OBU", "Oxford Brookes"], ["NOT", "Nottingham RC"], ["AGE", "Agecroft"]]},
    {"task": "heats draw, LW1x, Nottingham lightweight regatta", "event": "LW1x", "seats": 1,
     "crews": [["CLY", "Clydesdale"], ["TEE", "Tees RC"], ["GLO", "Globe"], ["MAR", "Marlow"],
               ["REA", "Reading RC"], ["C99", "Cambridge 99"], ["SUD", "Sudbury"]]},
    {"task": "heats draw, LM4-, Nottingham lightweight regatta", "event": "LM4-", "seats": 4,
     "crews": [["LEA-A", "Leander"], ["LEA-B", "Leander"], ["OBU", "Oxford Brookes"], ["MOL", "Molesey"],
               ["MAR", "Marlow"], ["NOT", "Nottingham RC"], ["TSS", "Tideway Scullers"]]},
    {"task": "heats draw, LW2x, Nottingham lightweight regatta", "event": "LW2x", "seats": 2,
     "crews": [["GLO", "Globe"], ["REA", "Reading RC"], ["DUR", "Durham ARC"], ["C99", "Cambridge 99"],
               ["AGE", "Agecroft"], ["LRC", "London RC"], ["CLY", "Clydesdale"], ["TEE", "Tees RC"],
               ["SUD", "Sudbury"], ["MAR", "Marlow"], ["NOT", "Nottingham RC"]]},
    {"task": "heats draw, LM1x, Nottingham lightweight regatta", "event": "LM1x", "seats": 1,
     "crews": [["TSS", "Tideway Scullers"], ["LRC", "London RC"], ["MAR", "Marlow"], ["OBU", "Oxford Brookes"],
               ["NOT", "Nottingham RC"], ["REA", "Reading RC"]]},
]

CASES = [
    {"id": "regatta_scale_pounds", "input": 0, "switch": "scale_pounds", "fault_kind": "unit_error",
     "root": ("fetch_weighin", 3, "tool"), "failure": ("check_lightweight", 1),
     "description": "the boathouse scale for Molesey reports its crew's weights in pounds under a kg label, "
                    "so the lightweight check later sees a 150 kg average"},
    {"id": "regatta_lane_shift", "input": 3, "switch": "lane_shift", "fault_kind": "off_by_one",
     "root": ("draw_lanes", 2, "tool"), "failure": ("validate_draw", 1),
     "description": "the lane draw service numbers the second heat's lanes one higher (2 to 7) on a six-lane "
                    "course, and the draw validation rejects lane 7"},
    {"id": "regatta_one_heat", "input": 1, "switch": "one_heat", "fault_kind": "plan_error",
     "root": ("plan_draw", 1, "llm"), "failure": ("validate_draw", 1),
     "description": "the planner puts all seven scullers in one heat on a six-lane course; the draw "
                    "validation finds seven boats for six lanes"},
    {"id": "regatta_old_ranking", "input": 4, "switch": "old_ranking", "fault_kind": "stale_data",
     "root": ("fetch_rankings", 1, "tool"), "failure": ("publish_draw", 1),
     "description": "the ranking service answers with last season's list 2024-R4, the crews are seeded from "
                    "it and the federation rejects the published draw"},
    {"id": "regatta_seed_book_by_club", "input": 2, "switch": "seed_book_by_club", "fault_kind": "bad_memory_write",
     "root": ("record_seeds", 1, "state"), "failure": ("validate_draw", 1),
     "description": "the seed book is keyed by club, so Leander's B crew overwrites its A crew and one "
                    "entered crew is missing from the draw"},
]


def brain(request):
    system = system_of(request)
    user = last_user(request)
    if "draw planner" in system:
        req = json.loads(user)
        heats = math.ceil(req["crews"] / req["lanes"])
        if SWITCH == "one_heat":
            heats = 1
        progression = "1st and 2nd of each heat to the A final, rest to the repechage" if heats > 1 else \
            "straight final"
        return json.dumps({"heats": heats, "seeding": "ranking, snake order", "progression": progression})
    if "race notices" in system:
        req = json.loads(user)
        lines = [f"Heat {h['heat']}: " + ", ".join(f"lane {c['lane']} {c['crew']}" for c in h["crews"])
                 for h in req["heats"]]
        return f"{req['event']} heats draw. " + " | ".join(lines) + ". Weigh-in closes 2 h before the first heat."
    return "Noted."


def _weights(crew_id: str, seats: int, cat: str) -> list[float]:
    base = 68.2 if cat == "LM" else 55.0
    return [round(base + ((sum(map(ord, crew_id)) * (i + 3)) % 17) / 10.0, 1) for i in range(seats)]


@trajdebug.step(kind="input")
def receive_entries(request: dict) -> dict:
    return {"event": request["event"], "seats": request["seats"],
            "crews": [{"crew": c, "club": club} for c, club in request["crews"]]}


@trajdebug.step(kind="retrieval")
def fetch_event_rules(event: str) -> dict:
    return {"event": event, "lanes": LANES, **RULES[event[:2]]}


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> dict:
    plan = json.loads(text)
    return {"heats": int(plan["heats"]), "seeding": plan["seeding"], "progression": plan["progression"]}


@trajdebug.step(kind="tool")
def fetch_weighin(crew: str, event: str, seats: int) -> dict:
    weights = _weights(crew, seats, event[:2])
    if SWITCH == "scale_pounds" and crew == "MOL":
        weights = [round(w * 2.20462, 1) for w in weights]
    return {"crew": crew, "event": event, "unit": "kg", "weights": weights, "scale": "boathouse 2"}


@trajdebug.step(kind="tool")
def fetch_rankings(event: str, list_id: str) -> dict:
    served = "2024-R4" if SWITCH == "old_ranking" else list_id
    return {"list": served, "event_class": event, "points": dict(RANKINGS[served])}


@trajdebug.step(kind="other")
def seed_crews(crews: list[dict], rankings: dict) -> dict:
    ordered = sorted(crews, key=lambda c: -rankings["points"][c["club"]])
    return {"list": rankings["list"], "order": [{"crew": c["crew"], "club": c["club"], "seed": i + 1}
                                                for i, c in enumerate(ordered)]}


@trajdebug.step(kind="state")
def record_seeds(seeding: dict) -> int:
    book = {}
    for row in seeding["order"]:
        key = row["club"] if SWITCH == "seed_book_by_club" else row["crew"]
        book[key] = {"crew": row["crew"], "seed": row["seed"]}
    state = trajdebug.current_run().state
    state["seed_book"] = book
    state["ranking_list"] = seeding["list"]
    return len(book)


@trajdebug.step(kind="condition")
def check_lightweight(weighins: list[dict], rules: dict) -> dict:
    for w in weighins:
        avg = round(sum(w["weights"]) / len(w["weights"]), 2)
        if avg > rules["crew_avg_max_kg"]:
            raise ValueError(f"crew {w['crew']}: average {avg} kg above the {rules['crew_avg_max_kg']} kg "
                             f"{rules['category']} limit")
        if max(w["weights"]) > rules["single_max_kg"]:
            raise ValueError(f"crew {w['crew']}: a rower at {max(w['weights'])} kg above {rules['single_max_kg']} kg")
    return {"eligible": [w["crew"] for w in weighins]}


@trajdebug.step(kind="other")
def assign_heats(plan: dict) -> list[dict]:
    book = trajdebug.current_run().state["seed_book"]
    seeded = sorted(book.values(), key=lambda r: r["seed"])
    heats = [{"heat": i + 1, "crews": []} for i in range(plan["heats"])]
    for i, row in enumerate(seeded):  # snake order: 1-2-2-1 ...
        lap, pos = divmod(i, plan["heats"])
        idx = pos if lap % 2 == 0 else plan["heats"] - 1 - pos
        heats[idx]["crews"].append(row["crew"])
    return heats


@trajdebug.step(kind="tool")
def draw_lanes(event: str, heat: int, crews: list[str], lanes: int) -> dict:
    order = list(LANE_ORDER) + [7, 8, 9]
    if SWITCH == "lane_shift" and heat == 2:
        order = [n + 1 for n in order]
    return {"event": event, "heat": heat, "crews": [{"crew": c, "lane": order[i]} for i, c in enumerate(crews)]}


@trajdebug.step(kind="condition")
def validate_draw(draw: list[dict], crews: list[dict], rules: dict) -> str:
    placed = [c["crew"] for h in draw for c in h["crews"]]
    for h in draw:
        if len(h["crews"]) > rules["lanes"]:
            raise ValueError(f"heat {h['heat']} holds {len(h['crews'])} crews, the course has {rules['lanes']} lanes")
        for c in h["crews"]:
            if not 1 <= c["lane"] <= rules["lanes"]:
                raise ValueError(f"heat {h['heat']}: crew {c['crew']} drawn in lane {c['lane']}, "
                                 f"course lanes are 1-{rules['lanes']}")
    missing = [c["crew"] for c in crews if c["crew"] not in placed]
    if missing:
        raise ValueError(f"entered crews absent from the draw: {', '.join(missing)}")
    return "draw valid"


@trajdebug.step(kind="tool")
def publish_draw(event: str, draw: list[dict], ranking_list: str) -> dict:
    if ranking_list != CURRENT_LIST:
        raise PermissionError(f"federation results API: draw for {event} seeded from ranking list {ranking_list}; "
                              f"list {CURRENT_LIST} is in force")
    return {"event": event, "published": True, "heats": len(draw)}


def record(inp: dict, out: str, client, model: str) -> None:
    with trajdebug.run(NAME, task=inp["task"], path=out) as run:
        entries = receive_entries(inp)
        rules = fetch_event_rules(entries["event"])
        plan_msg = chat_step(client, model, "plan_draw", [
            {"role": "system", "content": "You are the regatta draw planner. Answer JSON: heats, seeding, progression."},
            {"role": "user", "content": json.dumps({"event": entries["event"], "crews": len(entries["crews"]),
                                                    "lanes": rules["lanes"]})}])
        plan = parse_plan(plan_msg["content"])
        weighins = [fetch_weighin(c["crew"], entries["event"], entries["seats"]) for c in entries["crews"]]
        rankings = fetch_rankings(entries["event"], CURRENT_LIST)
        seeding = seed_crews(entries["crews"], rankings)
        record_seeds(seeding)
        check_lightweight(weighins, rules)
        heats = assign_heats(plan)
        draw = [draw_lanes(entries["event"], h["heat"], h["crews"], rules["lanes"]) for h in heats]
        notice = chat_step(client, model, "write_notice", [
            {"role": "system", "content": "You write race notices for the regatta office."},
            {"role": "user", "content": json.dumps({"event": entries["event"], "heats": draw})}])
        validate_draw(draw, entries["crews"], rules)
        with trajdebug.step("read_ranking_list", kind="other") as s:
            s.output = run.state["ranking_list"]
        publish_draw(entries["event"], draw, s.output)
        with trajdebug.step("post_notice", kind="output", input=notice) as s:
            s.output = {"posted": True, "text": notice["content"]}
