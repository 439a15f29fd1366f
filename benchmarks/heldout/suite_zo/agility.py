"""Dog agility trials (openai_agents route): the trial secretary hands a class to its ring manager, who builds
and publishes the running order."""

from __future__ import annotations

import json
from pathlib import Path

from agents import Agent, function_tool
from trajdebug.testing import Reply, tool_call

from .common import Case, agents_model, last_user_text, run_agents, system_text, tool_results
from .kit import active

AGENT = "agility-trial-secretary"
ROUTE = "openai_agents"
EXT = "jsonl"
BASE_URL = ""

DOGS = ["Pepper", "Bramble", "Skye", "Moss", "Tilly", "Juno", "Fern", "Rocket", "Nell", "Biscuit", "Ziggy", "Wren",
        "Otto", "Luna", "Bonnie", "Flint", "Hazel", "Kip", "Maple", "Sable"]
HANDLERS = ["J. Price", "A. Okafor", "S. Lindqvist", "R. Patel", "C. Moreau", "D. Evans", "H. Tanaka", "L. Byrne",
            "M. Costa", "P. Nowak"]


def _entries(class_id: str, n: int, seed: int) -> list[dict]:
    out = []
    for i in range(n):
        height = 280 + ((i * 7 + seed * 5) % 12) * 28
        out.append({"entry": i + 1, "dog": DOGS[(i * 3 + seed) % len(DOGS)] + f"-{class_id[-2:]}{i + 1:02d}",
                    "handler": HANDLERS[(i * 3 + seed) % len(HANDLERS)],
                    "height_mm": height})
    return out


CLASSES = {
    "AG-G4": _entries("AG-G4", 14, 1), "JP-G3": _entries("JP-G3", 12, 2), "AG-G2": _entries("AG-G2", 9, 3),
    "JP-G5": _entries("JP-G5", 11, 4), "AG-G7": _entries("AG-G7", 8, 5), "JP-G1": _entries("JP-G1", 10, 6),
}
WITHDRAWN = {"AG-G4": {3}, "JP-G3": {7}, "AG-G2": set(), "JP-G5": {2}, "AG-G7": set(), "JP-G1": {9}}
INPUTS = {
    "ag_g4": {"trial": "Westmoor Open", "date": "2026-06-20", "class_id": "AG-G4"},
    "jp_g3": {"trial": "Westmoor Open", "date": "2026-06-20", "class_id": "JP-G3"},
    "ref_ag_g2": {"trial": "Westmoor Open", "date": "2026-06-20", "class_id": "AG-G2"},
    "ref_jp_g5": {"trial": "Westmoor Open", "date": "2026-06-21", "class_id": "JP-G5"},
    "ref_ag_g7": {"trial": "Westmoor Open", "date": "2026-06-21", "class_id": "AG-G7"},
    "ref_jp_g1": {"trial": "Westmoor Open", "date": "2026-06-21", "class_id": "JP-G1"},
}
MIN_GAP = 3
PAGE = 10


def uka_category(mm: int) -> str:
    return "Micro" if mm <= 350 else "Midi" if mm <= 430 else "Standard" if mm <= 500 else "Large"


def kc_category(mm: int) -> str:
    return "Small" if mm <= 350 else "Medium" if mm <= 430 else "Intermediate" if mm <= 500 else "Large"


class PublishRefused(Exception):
    """The show processor refused the running order."""


# ---------------------------------------------------------------- tools


@function_tool
def fetch_entries(class_id: str) -> str:
    """Paid entries for a class (all pages)."""
    rows = [dict(e) for e in CLASSES[class_id]]
    if active("agility.tr_entries"):
        rows = rows[:PAGE]
    return json.dumps({"class_id": class_id, "entries": rows})


@function_tool
def get_height_cards(dogs: list[str], scheme: str) -> str:
    """Measured heights and the height category of each dog under a scheme ('UKA' or 'KC')."""
    by_dog = {e["dog"]: e["height_mm"] for rows in CLASSES.values() for e in rows}
    cat = kc_category if active("agility.tia_scheme") or scheme == "KC" else uka_category
    return json.dumps({"scheme": scheme, "cards": [{"dog": d, "height_mm": by_dog[d], "category": cat(by_dog[d])} for d in dogs]})


@function_tool
def fetch_trial_notes(class_id: str) -> str:
    """Secretary's notes for a class: withdrawals and reserves."""
    withdrawn = [e["dog"] for e in CLASSES[class_id] if e["entry"] in WITHDRAWN[class_id]]
    other = next(c for c in CLASSES if c != class_id and c[:2] == class_id[:2])
    return json.dumps({"class_id": class_id, "withdrawn": withdrawn,
                       "notes": [f"Reserve list: {CLASSES[other][0]['dog']} (handler {CLASSES[other][0]['handler']}) "
                                 f"asked to run if a place opens in {other}."]})


@function_tool
def space_handlers(order_json: str, min_gap: int) -> str:
    """Reorder so a handler's dogs are at least min_gap runs apart, keeping the order otherwise."""
    order = json.loads(order_json)
    need = min_gap - 1 if active("agility.obo_gap") else min_gap
    left, out, last = list(order), [], {}
    while left:
        pick = next((r for r in left if len(out) - last.get(r["handler"], -99) >= need), left[0])
        left.remove(pick)
        last[pick["handler"]] = len(out)
        out.append(pick)
    return json.dumps({"order": [{**r, "run": i + 1} for i, r in enumerate(out)]})


def _validate(ring: str, kinds: str, class_id: str, order: list[dict]) -> None:
    errs = []
    if not class_id.startswith(kinds):
        raise PublishRefused(f"show processor 403: ring {ring} publishes {kinds} classes only; {class_id} runs in another ring")
    expected = {e["dog"]: e for e in CLASSES[class_id] if e["entry"] not in WITHDRAWN[class_id]}
    listed = [r["dog"] for r in order]
    for d in listed:
        if d not in expected:
            errs.append(f"{d} has no paid entry in {class_id}")
    missing = sorted(set(expected) - set(listed))
    if missing:
        errs.append(f"{len(missing)} paid entries missing from the running order ({', '.join(missing[:3])}...)")
    for r in order:
        if r["dog"] in expected and r["category"] != uka_category(expected[r["dog"]]["height_mm"]):
            errs.append(f"{r['dog']} listed {r['category']}; UKA card {expected[r['dog']]['height_mm']} mm is {uka_category(expected[r['dog']]['height_mm'])}")
    seen: dict[str, int] = {}
    for i, r in enumerate(order):
        if r["handler"] in seen and i - seen[r["handler"]] < MIN_GAP:
            errs.append(f"handler {r['handler']} runs at {seen[r['handler']] + 1} and {i + 1}; minimum gap is {MIN_GAP}")
        seen[r["handler"]] = i
    if errs:
        raise PublishRefused(f"show processor 422 for {class_id}: " + "; ".join(errs[:4]))


@function_tool(failure_error_function=None)
def publish_agility_order(class_id: str, order_json: str) -> str:
    """Publish a ring 1 (agility) running order to the show processor."""
    order = json.loads(order_json)
    _validate("1", "AG", class_id, order)
    return json.dumps({"published": class_id, "runs": len(order), "ring": 1})


@function_tool(failure_error_function=None)
def publish_jumping_order(class_id: str, order_json: str) -> str:
    """Publish a ring 2 (jumping) running order to the show processor."""
    order = json.loads(order_json)
    _validate("2", "JP", class_id, order)
    return json.dumps({"published": class_id, "runs": len(order), "ring": 2})


# ---------------------------------------------------------------- the scripted model

ORDER_OF = {"Micro": 0, "Midi": 1, "Standard": 2, "Large": 3, "Small": 0, "Medium": 1, "Intermediate": 2}


def policy(request):
    sys_t, user = system_text(request), last_user_text(request)
    done = tool_results(request)
    names = [n for n, _, _ in done]
    ask = json.loads(user.split("TRIAL:", 1)[1])
    cid = ask["class_id"]
    if "trial secretary" in sys_t:
        ring = "agility" if cid.startswith("AG") else "jumping"
        if active("agility.wr_handoff"):
            ring = "agility"
        return Reply(tool_calls=(tool_call(f"transfer_to_{ring}_ring_manager", {}),))
    publish = "publish_agility_order" if "ring 1" in sys_t else "publish_jumping_order"
    if publish in names:
        return Reply(text=f"Running order for {cid} published.")
    if "fetch_entries" not in names:
        return Reply(tool_calls=(tool_call("fetch_entries", {"class_id": cid}),))
    entries = json.loads(done[names.index("fetch_entries")][2])["entries"]
    if "fetch_trial_notes" not in names:
        return Reply(tool_calls=(tool_call("fetch_trial_notes", {"class_id": cid}),))
    notes = json.loads(done[names.index("fetch_trial_notes")][2])
    if "get_height_cards" not in names:
        return Reply(tool_calls=(tool_call("get_height_cards", {"dogs": [e["dog"] for e in entries], "scheme": "UKA"}),))
    cards = {c["dog"]: c["category"] for c in json.loads(done[names.index("get_height_cards")][2])["cards"]}
    if "space_handlers" not in names:
        runners = [e for e in entries if e["dog"] not in notes["withdrawn"]]
        order = sorted(({"dog": e["dog"], "handler": e["handler"], "category": cards[e["dog"]], "entry": e["entry"]}
                        for e in runners), key=lambda r: (ORDER_OF[r["category"]], r["entry"]))
        return Reply(tool_calls=(tool_call("space_handlers", {"order_json": json.dumps(order), "min_gap": MIN_GAP}),))
    order = json.loads(done[names.index("space_handlers")][2])["order"]
    if active("agility.cp_reserve"):
        line = notes["notes"][0]
        dog = line.split("Reserve list: ", 1)[1].split(" (")[0]
        handler = line.split("(handler ", 1)[1].split(")")[0]
        order = order + [{"dog": dog, "handler": handler, "category": "Large", "entry": 99, "run": len(order) + 1}]
    return Reply(tool_calls=(tool_call(publish, {"class_id": cid, "order_json": json.dumps(order)}),))


def build():
    model = agents_model(BASE_URL)
    shared = [fetch_entries, fetch_trial_notes, get_height_cards, space_handlers]
    ring1 = Agent(name="agility_ring_manager", model=model, tools=shared + [publish_agility_order],
                  instructions="You manage ring 1 (agility classes): build the running order from entries, notes and "
                               "UKA height cards, space handlers, and publish it.")
    ring2 = Agent(name="jumping_ring_manager", model=model, tools=shared + [publish_jumping_order],
                  instructions="You manage ring 2 (jumping classes): build the running order from entries, notes and "
                               "UKA height cards, space handlers, and publish it.")
    return Agent(name="trial_secretary", model=model, handoffs=[ring1, ring2],
                 instructions="You are the trial secretary: hand each class to the manager of its ring.")


def record(key: str, path: Path) -> None:
    ask = INPUTS[key]
    run_agents(build(), "TRIAL:" + json.dumps(ask), path, AGENT, f"running order for {ask['class_id']} at {ask['trial']}",
               PublishRefused)


REFS = ["ref_ag_g2", "ref_jp_g5", "ref_ag_g7", "ref_jp_g1"]


def _c(n, kind, fid, key, root, occ, failure, desc):
    return Case(f"zo_agility_{n}", AGENT, ROUTE, kind, fid, key, root, occ, failure, 1, desc)


CASES = [
    _c(1, "wrong_routing", "agility.wr_handoff", "jp_g3", "generation fake-model", 1, "publish_agility_order",
       "the trial secretary hands the jumping class JP-G3 to the agility ring manager."),
    _c(2, "context_pollution", "agility.cp_reserve", "ag_g4", "generation fake-model", 6, "publish_agility_order",
       "the ring manager reads the reserve note about a dog of another class and appends it to the running order."),
    _c(3, "tool_ignores_argument", "agility.tia_scheme", "jp_g3", "get_height_cards", 1, "publish_jumping_order",
       "get_height_cards ignores scheme='UKA' and returns KC height categories."),
    _c(4, "truncated_result", "agility.tr_entries", "ag_g4", "fetch_entries", 1, "publish_agility_order",
       "fetch_entries returns only the first page of ten entries with no sign that more exist."),
    _c(5, "off_by_one", "agility.obo_gap", "jp_g3", "space_handlers", 1, "publish_jumping_order",
       "space_handlers accepts a gap of min_gap - 1, leaving a handler two runs apart."),
]
