"""Quilting guild (sdk route): register a show's quilt entries, lay out the hanging racks, book the hall."""

from __future__ import annotations

import json
from pathlib import Path

import trajdebug

from .common import Case, chat_completion, last_user_text, system_text
from .kit import active

AGENT = "quilt-show-registrar"
ROUTE = "sdk"
EXT = "jsonl"
BASE_URL = ""

QUILTS = {
    "Q-3301": {"maker": "M-11", "title": "Harbour Lights", "w": 72, "h": 80, "technique": "pieced", "notes": "hand quilted"},
    "Q-3302": {"maker": "M-14", "title": "Wren", "w": 18, "h": 20, "technique": "pieced", "notes": "entered as a miniature"},
    "Q-3303": {"maker": "M-02", "title": "Tectonic Sketch", "w": 60, "h": 66, "technique": "improv", "notes": "hand dyed"},
    "Q-3304": {"maker": "M-07", "title": "Kestrel", "w": 66, "h": 52, "technique": "thread painting", "notes": "framed edge"},
    "Q-3305": {"maker": "M-11", "title": "Log Cabin Nine", "w": 58, "h": 90, "technique": "pieced", "notes": "tall drop"},
    "Q-3306": {"maker": "M-20", "title": "Saltmarsh", "w": 40, "h": 44, "technique": "raw-edge applique", "notes": ""},
    "Q-3307": {"maker": "M-05", "title": "Orange Peel", "w": 62, "h": 70, "technique": "improv", "notes": ""},
    "Q-3308": {"maker": "M-09", "title": "Tiny Stars", "w": 22, "h": 22, "technique": "paper piecing", "notes": "entered as a miniature"},
    "Q-3309": {"maker": "M-03", "title": "Delectable Mountains", "w": 64, "h": 76, "technique": "pieced", "notes": ""},
    "Q-3310": {"maker": "M-14", "title": "Night Garden", "w": 50, "h": 60, "technique": "thread painting", "notes": ""},
    "Q-3311": {"maker": "M-07", "title": "Improv Blues", "w": 56, "h": 58, "technique": "improv", "notes": ""},
    "Q-3312": {"maker": "M-02", "title": "Grandmother's Flower Garden", "w": 80, "h": 88, "technique": "pieced", "notes": ""},
}

INPUTS = {
    "spring": {"show": "SHOW-2026-SPR", "date": "2026-05-16", "hall": "Corn Exchange",
               "entries": ["Q-3301", "Q-3302", "Q-3303", "Q-3304", "Q-3305", "Q-3306"]},
    "autumn": {"show": "SHOW-2026-AUT", "date": "2026-10-03", "hall": "Corn Exchange",
               "entries": ["Q-3307", "Q-3308", "Q-3309", "Q-3310", "Q-3311", "Q-3302"]},
    "ref_a": {"show": "SHOW-2026-A", "date": "2026-06-06", "hall": "Corn Exchange",
              "entries": ["Q-3301", "Q-3303", "Q-3306", "Q-3308"]},
    "ref_b": {"show": "SHOW-2026-B", "date": "2026-07-11", "hall": "Corn Exchange",
              "entries": ["Q-3309", "Q-3310", "Q-3304", "Q-3302", "Q-3311"]},
    "ref_c": {"show": "SHOW-2026-C", "date": "2026-08-22", "hall": "Corn Exchange",
              "entries": ["Q-3307", "Q-3306", "Q-3301"]},
    "ref_d": {"show": "SHOW-2026-D", "date": "2026-09-12", "hall": "Corn Exchange",
              "entries": ["Q-3303", "Q-3304", "Q-3308", "Q-3309", "Q-3305"]},
}

HALL_RACKS = [{"rack": r, "length_in": 200, "height_in": 84} for r in "ABCDE"]
GAP_IN = 6


class HallBookingError(Exception):
    """The hall's booking API refused the hanging plan."""


def policy(request):
    sys_t, user = system_text(request), last_user_text(request)
    if "classify a quilt" in sys_t:
        if "miniature" in user.lower():
            return "CATEGORY: Miniature"
        q = json.loads(user.split("QUILT:", 1)[1].split("\n", 1)[0])
        if max(q["w"], q["h"]) <= 24:
            return "CATEGORY: Miniature"
        if q["technique"] in ("thread painting", "raw-edge applique"):
            return "CATEGORY: Art"
        if q["technique"] == "improv":
            return "CATEGORY: Modern"
        return "CATEGORY: Traditional"
    if "plan the hall layout" in sys_t:
        data = json.loads(user.split("DATA:", 1)[1])
        cats = sorted(data["categories"], key=lambda c: -data["categories"][c])
        if active("quilting.pe_layout"):
            cats = [c for c in cats if c != "Miniature"]
        return "LAYOUT: " + "; ".join(f"{c}={i + 1}" for i, c in enumerate(cats))
    if "catalogue" in sys_t:
        data = json.loads(user.split("ENTRIES:", 1)[1])
        return "\n".join(f"{e['no']}. {e['title']} ({e['category']})" for e in data)
    return "Sorry?"


@trajdebug.step(kind="input")
def receive_entries(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="tool")
def fetch_member_roster(show: str) -> dict:
    return {"show": show, "paid": ["M-02", "M-03", "M-05", "M-07", "M-09", "M-11", "M-14", "M-20"]}


@trajdebug.step(kind="tool")
def fetch_quilt_record(quilt_id: str) -> dict:
    return {"id": quilt_id, **QUILTS[quilt_id]}


@trajdebug.step(kind="llm")
def classify_quilt(quilt: dict, notes_so_far: list[str]) -> str:
    facts = {k: quilt[k] for k in ("id", "w", "h", "technique")}
    prompt = "QUILT:" + json.dumps(facts) + "\nMAKER NOTES: " + quilt["notes"]
    if active("quilting.cp_notes"):
        prompt += "\nNOTES SO FAR: " + " | ".join(notes_so_far)
    text, usage = chat_completion(BASE_URL, "You classify a quilt into one show category.", prompt)
    trajdebug.current_step().usage(model="fake-model", **usage)
    return text


@trajdebug.step(kind="state")
def note_entry(quilt: dict, category_text: str, member_paid: bool) -> dict:
    entry = {"id": quilt["id"], "title": quilt["title"], "w": quilt["w"], "h": quilt["h"],
             "category": category_text.split("CATEGORY:", 1)[1].strip(), "paid": member_paid}
    trajdebug.current_run().state[f"entry:{quilt['id']}"] = entry
    return entry


@trajdebug.step(kind="tool")
def fetch_show_rules(show: str) -> dict:
    if active("quilting.sd_rules"):
        return {"revision": "2025-03", "max_drop_in": 96, "miniature_max_in": 24, "gap_in": GAP_IN}
    return {"revision": "2026-02", "max_drop_in": 84, "miniature_max_in": 24, "gap_in": GAP_IN}


@trajdebug.step(kind="tool")
def load_rack_inventory(hall: str, date: str) -> dict:
    try:
        if active("quilting.se_racks"):
            raise ConnectionError("hall inventory API: 503 Service Unavailable")
        return {"hall": hall, "date": date, "racks": [dict(r) for r in HALL_RACKS]}
    except ConnectionError:
        return {"hall": hall, "date": date, "racks": [{"rack": r, "length_in": 240, "height_in": 84} for r in "ABCDE"]}


@trajdebug.step(kind="llm")
def plan_layout(entries: list[dict], racks: dict) -> str:
    cats: dict[str, int] = {}
    for e in entries:
        cats[e["category"]] = cats.get(e["category"], 0) + 1
    text, usage = chat_completion(BASE_URL, "You plan the hall layout: one wall per category.",
                                  "DATA:" + json.dumps({"categories": cats, "racks": [r["rack"] for r in racks["racks"]]}))
    trajdebug.current_step().usage(model="fake-model", **usage)
    return text


@trajdebug.step(kind="parse")
def parse_layout(text: str) -> dict:
    body = text.split("LAYOUT:", 1)[1]
    return {k.strip(): int(v) for k, v in (part.split("=") for part in body.split(";"))}


@trajdebug.step(kind="other")
def assign_positions(entries: list[dict], walls: dict, racks: dict, rules: dict) -> list[dict]:
    rack_list = racks["racks"]
    used = {r["rack"]: [] for r in rack_list}
    plan = []
    for e in sorted(entries, key=lambda e: (walls.get(e["category"], 99), -e["w"])):
        if e["category"] not in walls:
            plan.append({**e, "rack": None, "display": "unplaced"})
            continue
        if e["h"] > rules["max_drop_in"] or e["category"] == "Miniature":
            plan.append({**e, "rack": None, "display": "table"})
            continue
        for r in rack_list:
            hung = used[r["rack"]]
            n = len(hung) + 1
            gaps = n if active("quilting.obo_gaps") else n + 1
            if sum(hung) + e["w"] + rules["gap_in"] * gaps <= r["length_in"]:
                hung.append(e["w"])
                plan.append({**e, "rack": r["rack"], "display": "rack"})
                break
        else:
            plan.append({**e, "rack": None, "display": "unplaced"})
    return plan


@trajdebug.step(kind="llm")
def draft_catalogue(entries: list[dict]) -> str:
    text, usage = chat_completion(BASE_URL, "You write the show catalogue list.", "ENTRIES:" + json.dumps(entries))
    trajdebug.current_step().usage(model="fake-model", **usage)
    return text


@trajdebug.step(kind="other")
def count_catalogue_pages(text: str) -> int:
    return max(1, -(-len(text.splitlines()) // 20))


@trajdebug.step(kind="agent")
def catalogue_desk(entries: list[dict]) -> dict:
    numbered = [{"no": i + 1, "title": e["title"], "category": e["category"]} for i, e in enumerate(entries)]
    text = draft_catalogue(numbered)
    return {"entries": numbered, "pages": count_catalogue_pages(text)}


@trajdebug.step(kind="tool")
def book_hanging_plan(show: dict, plan: list[dict], catalogue: dict) -> dict:
    errors = []
    per_rack: dict[str, list[int]] = {}
    for e in plan:
        if e["display"] == "unplaced":
            errors.append(f"entry {e['id']} ({e['category']}) has no display position")
        elif e["display"] == "table":
            if e["category"] == "Miniature" and max(e["w"], e["h"]) > 24:
                errors.append(f"entry {e['id']} listed as Miniature measures {e['w']}x{e['h']} in (max 24 in)")
        else:
            per_rack.setdefault(e["rack"], []).append(e["w"])
            if e["h"] > 84:
                errors.append(f"entry {e['id']} drops {e['h']} in on rack {e['rack']}; rack height is 84 in")
    for rack, widths in sorted(per_rack.items()):
        need = sum(widths) + GAP_IN * (len(widths) + 1)
        if need > 200:
            errors.append(f"rack {rack} needs {need} in ({sum(widths)} in of quilts and {len(widths) + 1} gaps of {GAP_IN} in); racks are 200 in")
    if errors:
        raise HallBookingError(f"Corn Exchange bookings: 409 Conflict for {show['show']} on {show['date']}: " + "; ".join(errors))
    return {"booking": f"BK-{show['show']}", "racks": sorted(per_rack), "catalogue_pages": catalogue["pages"]}


def register(request: dict) -> dict:
    req = receive_entries(request)
    roster = fetch_member_roster(req["show"])
    entries, notes = [], []
    for qid in req["entries"]:
        quilt = fetch_quilt_record(qid)
        label = classify_quilt(quilt, list(notes))
        entries.append(note_entry(quilt, label, quilt["maker"] in roster["paid"]))
        notes.append(f"{qid}: {quilt['notes'] or 'no notes'}")
    rules = fetch_show_rules(req["show"])
    racks = load_rack_inventory(req["hall"], req["date"])
    catalogue = catalogue_desk(entries)
    walls = parse_layout(plan_layout(entries, racks))
    plan = assign_positions(entries, walls, racks, rules)
    return book_hanging_plan(req, plan, catalogue)


def record(key: str, path: Path) -> None:
    request = INPUTS[key]
    try:
        with trajdebug.run(AGENT, path=str(path), task=f"hang {len(request['entries'])} quilts for {request['show']}"):
            register(request)
    except HallBookingError:
        pass


REFS = ["ref_a", "ref_b", "ref_c", "ref_d"]


def _c(n, kind, fid, key, root, occ, desc):
    return Case(f"zo_quilting_{n}", AGENT, ROUTE, kind, fid, key, root, occ, "book_hanging_plan", 1, desc)


CASES = [
    _c(1, "off_by_one", "quilting.obo_gaps", "autumn", "assign_positions", 1,
       "assign_positions counts one gap per quilt instead of one more than the quilts, overfilling a rack by 6 in."),
    _c(2, "swallowed_error", "quilting.se_racks", "spring", "load_rack_inventory", 1,
       "load_rack_inventory hides a 503 from the hall API and returns a default inventory of 240 in racks."),
    _c(3, "stale_data", "quilting.sd_rules", "spring", "fetch_show_rules", 1,
       "fetch_show_rules serves the 2025 rulebook with a 96 in maximum drop, so a 90 in quilt goes on an 84 in rack."),
    _c(4, "plan_error", "quilting.pe_layout", "autumn", "plan_layout", 1,
       "the layout model plans walls for every category but Miniature, so the miniature entries get no position."),
    _c(5, "context_pollution", "quilting.cp_notes", "spring", "classify_quilt", 3,
       "classify_quilt adds the earlier entries' notes to the prompt and the model files a 60x66 in quilt as Miniature."),
]
