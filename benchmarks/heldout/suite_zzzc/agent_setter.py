"""Crux Yard bouldering gym: the weekly route-setting reset (trajdebug recording API).

Shape: a planning model call, then a loop over wall sections, and in each section a loop over new
problems (model draft, parse, state write), a per-section load check, tags, a grade-spread validator,
a hold reservation against the store room, and a final board publish.  ~30-45 steps.
"""

from __future__ import annotations

import json

import trajdebug

from suite_common import complete, last_user, payload_after, system_of

NAME = "crux-yard-setting"
ROUTE = "sdk"
DOMAIN = "bouldering gym route setting"
SHAPE = "plan model -> nested loops section x problem (draft model, parse, run.state write) -> load check, tags, spread validator, reservation tool, board"

# switches: each read at exactly one place
PLAN_SKIPS_BAND = False
VOLUME_WEIGHT_POUNDS = False
TAG_FROM_MAX = False
COLOUR_FROM_PREVIOUS = False
DRAFT_INVENTS_SET = False

WALLS = {
    "cave": [("cave-left", 45, 180.0), ("cave-roof", 60, 140.0), ("cave-lip", 30, 200.0)],
    "slab": [("slab-low", -5, 260.0), ("slab-high", -10, 240.0), ("slab-arete", 0, 220.0)],
    "comp": [("comp-a", 20, 220.0), ("comp-b", 35, 200.0), ("comp-c", 10, 240.0), ("comp-d", 25, 210.0)],
    "kids": [("kids-low", 0, 300.0), ("kids-tree", 10, 280.0)],
    "board": [("board-40", 40, 160.0), ("board-25", 25, 190.0), ("board-55", 55, 150.0)],
}
HOLD_SETS = {
    "HS-11": ("yellow", 22), "HS-12": ("blue", 18), "HS-14": ("black", 25), "HS-17": ("red", 20),
    "HS-21": ("green", 24), "HS-23": ("purple", 16), "HS-25": ("white", 30), "HS-28": ("orange", 19),
}
VOLUMES = {  # section -> volumes bolted on it (kg)
    "cave-left": [38.0, 22.5], "cave-roof": [41.0, 30.0], "cave-lip": [25.0], "slab-low": [60.0, 44.0],
    "slab-high": [52.0], "slab-arete": [35.0, 35.0], "comp-a": [48.0, 31.0], "comp-b": [55.0],
    "comp-c": [28.0, 62.0], "comp-d": [40.0], "kids-low": [70.0, 45.0], "kids-tree": [66.0],
    "board-40": [18.0], "board-25": [22.0, 14.0], "board-55": [12.0],
}
ACTIVE_TAGS = {"cave": 140, "slab": 212, "comp": 305, "kids": 77, "board": 411}
BANDS = ["V0-V1", "V2", "V3-V4", "V5", "V6+"]
COLOURS = ["yellow", "blue", "black", "red", "green", "purple", "white", "orange"]

INPUTS = [
    {"wall": "cave", "week": "2026-W50", "problems_per_section": 2},
    {"wall": "slab", "week": "2026-W50", "problems_per_section": 2},
    {"wall": "comp", "week": "2026-W51", "problems_per_section": 2},
    {"wall": "kids", "week": "2026-W51", "problems_per_section": 3},
    {"wall": "board", "week": "2026-W52", "problems_per_section": 2},
]

CASES = [
    {"id": "zzzc-setter-plan", "input": 2, "switch": "PLAN_SKIPS_BAND", "fault_kind": "plan_error",
     "root": {"name": "plan_reset", "occurrence": 1, "kind": "llm"},
     "failure": {"name": "grade_spread_check", "occurrence": 1},
     "description": "The reset plan gives every comp section a target in V0-V1, V2, V5 or V6+ and none in V3-V4, so the week's board has no mid-grade problem."},
    {"id": "zzzc-setter-weight", "input": 0, "switch": "VOLUME_WEIGHT_POUNDS", "fault_kind": "unit_error",
     "root": {"name": "pick_hold_sets", "occurrence": 2, "kind": "tool"},
     "failure": {"name": "check_wall_load", "occurrence": 2},
     "description": "The store-room lookup for cave-roof reports its volumes' weights in pounds under the weight_kg field, so the roof reads as overloaded."},
    {"id": "zzzc-setter-tags", "input": 4, "switch": "TAG_FROM_MAX", "fault_kind": "off_by_one",
     "root": {"name": "assign_tags", "occurrence": 1, "kind": "other"},
     "failure": {"name": "publish_board", "occurrence": 1},
     "description": "Tag numbering for the board wall starts at the highest tag already on the wall instead of the next one, so the first new problem reuses tag 411."},
    {"id": "zzzc-setter-colour", "input": 3, "switch": "COLOUR_FROM_PREVIOUS", "fault_kind": "bad_memory_write",
     "root": {"name": "record_problem", "occurrence": 3, "kind": "state"},
     "failure": {"name": "publish_board", "occurrence": 1},
     "description": "The third problem on kids-low is saved to the run state with the hold colour of the problem drafted before it, giving the section two problems of one colour."},
    {"id": "zzzc-setter-holdset", "input": 1, "switch": "DRAFT_INVENTS_SET", "fault_kind": "hallucinated_value",
     "root": {"name": "draft_problem", "occurrence": 4, "kind": "llm"},
     "failure": {"name": "reserve_holds", "occurrence": 1},
     "description": "The draft for the second slab-high problem names hold set HS-19, which is not among the sets the store room offered, and the reservation later refuses it."},
]


# ---------------------------------------------------------------- the fake model's behaviour
def policy(request):
    system = system_of(request)
    prompt = last_user(request)
    if system.startswith("You plan the weekly reset"):
        sections = payload_after(prompt, "Sections:")
        per = payload_after(prompt, "Problems per section:")
        ascents = payload_after(prompt, "Ascents last 28 days:")
        bands = list(BANDS)
        if PLAN_SKIPS_BAND and len(sections) == 4:
            bands = ["V0-V1", "V2", "V5", "V6+"]
        targets, k = {}, 0
        for sec in sections:
            targets[sec["section"]] = [bands[(k + j) % len(bands)] for j in range(per)]
            k += per
        strip = sorted(ascents, key=lambda a: (a["ascents"], a["tag"]))[: max(1, len(sections))]
        return json.dumps({"strip": [a["tag"] for a in strip], "targets": targets})
    if system.startswith("You draft one boulder problem"):
        ask = payload_after(prompt, "Brief:")
        sets = payload_after(prompt, "Hold sets available:")
        taken = set(ask["colours_taken"])
        free = [s for s in sets if s["colour"] not in taken]
        pick = free[(len(ask["colours_taken"]) + len(ask["section"])) % len(free)]
        hold_set = pick["id"]
        if DRAFT_INVENTS_SET and ask["section"] == "slab-high" and ask["colours_taken"]:
            hold_set = "HS-19"
        moves = {"V0-V1": 5, "V2": 6, "V3-V4": 7, "V5": 8, "V6+": 9}[ask["grade"]]
        return (f"Problem for {ask['section']} at {ask['grade']}:\n"
                f"hold_set: {hold_set}\ncolour: {pick['colour']}\nmoves: {moves}\n"
                f"start: matched on the low jug\nnote: keep the feet honest")
    return "I can only help with route setting."


# ---------------------------------------------------------------- steps
SERVER = None


@trajdebug.step(kind="input")
def reset_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="tool")
def fetch_wall_sections(wall: str) -> list[dict]:
    return [{"section": n, "angle_deg": a, "load_limit_kg": lim} for n, a, lim in WALLS[wall]]


@trajdebug.step(kind="retrieval")
def fetch_ascent_log(wall: str, days: int) -> list[dict]:
    base = ACTIVE_TAGS[wall]
    return [{"tag": base - i, "ascents": (base * (i + 3)) % 37 + i, "days_up": days + 7 * i} for i in range(6)]


@trajdebug.step(kind="llm")
def plan_reset(messages: list[dict]) -> str:
    return complete(SERVER, messages)


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> dict:
    plan = json.loads(text)
    return {"strip": list(plan["strip"]), "targets": {k: list(v) for k, v in plan["targets"].items()}}


@trajdebug.step(kind="tool")
def pick_hold_sets(section: str, angle_deg: int) -> dict:
    ids = sorted(HOLD_SETS)
    offset = (angle_deg // 5 + len(section)) % len(ids)
    sets = [{"id": i, "colour": HOLD_SETS[i][0], "holds": HOLD_SETS[i][1]} for i in (ids[offset:] + ids[:offset])[:6]]
    weights = list(VOLUMES[section])
    if VOLUME_WEIGHT_POUNDS and section == "cave-roof":
        weights = [round(w * 2.20462, 1) for w in weights]
    return {"section": section, "sets": sets, "volumes": [{"weight_kg": w} for w in weights]}


@trajdebug.step(kind="llm")
def draft_problem(messages: list[dict]) -> str:
    return complete(SERVER, messages)


@trajdebug.step(kind="parse")
def parse_problem(text: str) -> dict:
    fields = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("Problem for"):
            key, value = line.split(":", 1)
            fields[key.strip()] = value.strip()
    return {"hold_set": fields["hold_set"], "colour": fields["colour"], "moves": int(fields["moves"])}


@trajdebug.step(kind="state")
def record_problem(section: str, grade: str, problem: dict) -> dict:
    state = trajdebug.current_run().state
    saved = state.setdefault("drafts", [])
    entry = {"section": section, "grade": grade, **problem}
    if COLOUR_FROM_PREVIOUS and saved and saved[-1]["section"] == section and len(saved) == 2:
        entry["colour"] = saved[-1]["colour"]
    state[f"problem:{section}:{grade}"] = entry
    saved.append(entry)
    return entry


@trajdebug.step(kind="condition")
def check_wall_load(section: str, limit_kg: float, hold_sets: dict) -> dict:
    total = sum(v["weight_kg"] for v in hold_sets["volumes"])
    if total > limit_kg:
        raise ValueError(f"{section}: volumes weigh {total:.1f} kg, above the {limit_kg:.0f} kg the panel is rated for")
    return {"section": section, "volume_kg": total, "limit_kg": limit_kg}


@trajdebug.step(kind="other")
def assign_tags(wall: str, drafts: list[dict]) -> list[dict]:
    highest = ACTIVE_TAGS[wall]
    first = highest if TAG_FROM_MAX else highest + 1
    return [{**d, "tag": first + i} for i, d in enumerate(drafts)]


@trajdebug.step(kind="condition")
def grade_spread_check(tagged: list[dict]) -> dict:
    counts = {band: sum(1 for p in tagged if p["grade"] == band) for band in BANDS}
    missing = [band for band, n in counts.items() if n == 0 and len(tagged) >= len(BANDS)]
    if missing:
        raise ValueError(f"grade spread: no new problem in {', '.join(missing)} ({counts})")
    return counts


@trajdebug.step(kind="tool")
def reserve_holds(week: str, tagged: list[dict]) -> dict:
    booked = {}
    for p in tagged:
        if p["hold_set"] not in HOLD_SETS:
            raise LookupError(f"store room: hold set {p['hold_set']} is not on the shelf list (tag {p['tag']})")
        booked[p["hold_set"]] = booked.get(p["hold_set"], 0) + 1
    return {"week": week, "booked": booked}


@trajdebug.step(kind="output")
def publish_board(wall: str, tagged: list[dict], on_wall: list[int]) -> str:
    tags = [p["tag"] for p in tagged]
    clash = sorted(set(tags) & set(on_wall)) or sorted({t for t in tags if tags.count(t) > 1})
    assert not clash, f"tag {clash[0]} is already on the {wall} wall"
    for p in tagged:
        same = [q["tag"] for q in tagged if q["section"] == p["section"] and q["colour"] == p["colour"]]
        assert len(same) == 1, f"{p['section']}: tags {same} are both {p['colour']}"
    return "\n".join(f"#{p['tag']} {p['section']} {p['grade']} {p['colour']}" for p in tagged)


def run_once(server, inp: dict, path: str) -> None:
    global SERVER
    SERVER = server
    try:
        with trajdebug.run(NAME, task=f"reset the {inp['wall']} wall for {inp['week']}", path=path) as run:
            req = reset_request(inp)
            sections = fetch_wall_sections(req["wall"])
            log = fetch_ascent_log(req["wall"], 28)
            text = plan_reset([
                {"role": "system", "content": "You plan the weekly reset of a bouldering wall: which problems to strip and which grades to set."},
                {"role": "user", "content": f"Wall: {req['wall']}\nSections: {json.dumps(sections)}\n"
                                            f"Problems per section: {req['problems_per_section']}\nAscents last 28 days: {json.dumps(log)}"},
            ])
            plan = parse_plan(text)
            by_name = {s["section"]: s for s in sections}
            for sec_name, grades in plan["targets"].items():
                sec = by_name[sec_name]
                sets = pick_hold_sets(sec_name, sec["angle_deg"])
                for grade in grades:
                    taken = [d["colour"] for d in run.state.get("drafts", []) if d["section"] == sec_name]
                    brief = {"section": sec_name, "grade": grade, "angle_deg": sec["angle_deg"], "colours_taken": taken}
                    draft = draft_problem([
                        {"role": "system", "content": "You draft one boulder problem from the hold sets on offer."},
                        {"role": "user", "content": f"Brief: {json.dumps(brief)}\nHold sets available: {json.dumps(sets['sets'])}"},
                    ])
                    record_problem(sec_name, grade, parse_problem(draft))
                check_wall_load(sec_name, sec["load_limit_kg"], sets)
            drafts = list(run.state["drafts"])
            tagged = assign_tags(req["wall"], drafts)
            grade_spread_check(tagged)
            reserve_holds(req["week"], tagged)
            publish_board(req["wall"], tagged, [ACTIVE_TAGS[req["wall"]] - i for i in range(6)])
    except (ValueError, LookupError, AssertionError):
        pass
