"""Community fridge network (mutual aid): a volunteer's restock shift across the fridges of one zone.

Route: sdk (trajdebug's own recorder, JSONL). Shape: input, roster retrieval, donor pick-ups (a loop over donor
APIs inside it), a loop over fridges (sensor tool, parser, run.state write), a prompt built from state, a
planning model call, a plan parser, a drop-off loop, the county temperature log, a group post, a final manifest check.
"""

from __future__ import annotations

import json

import trajdebug

from _common import chat, last_user_json, system_of

NAME = "fridge-restock"
ROUTE = "sdk"
DOMAIN = "mutual-aid community fridge network: restock shift"
SHAPE = "input, retrieval, donor-API tool (a loop inside), per-fridge tool/parse/state loop, llm plan, parser, tool loop, final check"
SWITCH = None

REGISTRY = {
    "CF-01": {"site": "Alder St laundromat", "zone": "north", "capacity_kg": 60, "open": True},
    "CF-02": {"site": "Birch Ave church porch", "zone": "north", "capacity_kg": 45, "open": True},
    "CF-03": {"site": "Cedar Sq library steps", "zone": "north", "capacity_kg": 50, "open": True},
    "CF-04": {"site": "Dock Rd youth centre", "zone": "south", "capacity_kg": 55, "open": True},
    "CF-05": {"site": "Elm Ct corner shop", "zone": "south", "capacity_kg": 40, "open": True},
    "CF-06": {"site": "Fir Ln bus depot", "zone": "east", "capacity_kg": 50, "open": True},
    "CF-07": {"site": "Gorse Way clinic yard", "zone": "east", "capacity_kg": 35, "open": True},
    "CF-08": {"site": "Hazel Rd mosque gate", "zone": "east", "capacity_kg": 60, "open": True},
    "CF-09": {"site": "Ivy St barber", "zone": "south", "capacity_kg": 30, "open": False,
              "closed_note": "host withdrew on 2025-05-30"},
    "CF-10": {"site": "Juniper Pl tenants hall", "zone": "west", "capacity_kg": 45, "open": True},
    "CF-11": {"site": "Kestrel Rd allotment gate", "zone": "west", "capacity_kg": 40, "open": True},
}
ROSTER_SNAPSHOT = {  # what the roster cache held at its last refresh
    "as_of": "2025-05-12",
    "south": ["CF-04", "CF-05", "CF-09"],
}
SENSORS = {
    "CF-01": {"reading": 3.1, "unit": "C", "fill_pct": 22}, "CF-02": {"reading": 4.0, "unit": "C", "fill_pct": 55},
    "CF-03": {"reading": 38.5, "unit": "F", "fill_pct": 30}, "CF-04": {"reading": 2.6, "unit": "C", "fill_pct": 10},
    "CF-05": {"reading": 4.4, "unit": "C", "fill_pct": 48}, "CF-06": {"reading": 3.9, "unit": "C", "fill_pct": 35},
    "CF-07": {"reading": 39.9, "unit": "F", "fill_pct": 18}, "CF-08": {"reading": 4.8, "unit": "C", "fill_pct": 64},
    "CF-09": {"reading": 5.2, "unit": "C", "fill_pct": 0}, "CF-10": {"reading": 3.3, "unit": "C", "fill_pct": 41},
    "CF-11": {"reading": 2.9, "unit": "C", "fill_pct": 27},
}
DONORS = {
    "Oduya Greengrocer": [{"item": "spinach bags", "kg": 6, "chilled": True}, {"item": "apples", "kg": 9, "chilled": False}],
    "Lark Bakery": [{"item": "sourdough loaves", "kg": 7, "chilled": False}],
    "Brightside Dairy": [{"item": "yoghurt pots", "kg": 8, "chilled": True}, {"item": "milk 1l", "kg": 10, "chilled": True}],
    "Mill St Co-op": [{"item": "rice 1kg", "kg": 12, "chilled": False}, {"item": "tinned beans", "kg": 6, "chilled": False}],
    "Patel Cash&Carry": [{"item": "paneer", "kg": 4, "chilled": True}, {"item": "chapati packs", "kg": 5, "chilled": False}],
}

INPUTS = [
    {"task": "Saturday restock, north zone, volunteer Dana", "volunteer": "Dana", "zone": "north", "shift": "2025-06-14 AM",
     "donors": ["Oduya Greengrocer", "Lark Bakery"]},
    {"task": "Saturday restock, south zone, volunteer Kofi", "volunteer": "Kofi", "zone": "south", "shift": "2025-06-14 AM",
     "donors": ["Brightside Dairy", "Mill St Co-op"]},
    {"task": "Sunday restock, east zone, volunteer Mirela", "volunteer": "Mirela", "zone": "east", "shift": "2025-06-15 PM",
     "donors": ["Patel Cash&Carry", "Lark Bakery", "Mill St Co-op"]},
    {"task": "Sunday restock, west zone, volunteer Sam", "volunteer": "Sam", "zone": "west", "shift": "2025-06-15 AM",
     "donors": ["Oduya Greengrocer", "Brightside Dairy"]},
    {"task": "Monday restock, east zone, volunteer Hana", "volunteer": "Hana", "zone": "east", "shift": "2025-06-16 PM",
     "donors": ["Brightside Dairy", "Oduya Greengrocer", "Lark Bakery"]},
]

CASES = [
    {"id": "fridge_restock-1", "input": 0, "kind": "unit_error",
     "root": ("normalize_reading", 3, "parse"), "failure": ("submit_temp_log", 1),
     "what": "CF-03's sensor reports 38.5 F; the reading is normalised as 38.5 C",
     "description": "The reading normaliser took the library-steps fridge's 38.5 Fahrenheit sensor value as Celsius, "
                    "so the county temperature log rejects a 38.5 C entry at the end of the shift."},
    {"id": "fridge_restock-2", "input": 1, "kind": "stale_data",
     "root": ("fetch_roster", 1, "retrieval"), "failure": ("drop_off", 1),
     "what": "the roster came from the 2025-05-12 cache, still listing CF-09 whose host withdrew on 2025-05-30",
     "description": "The south-zone roster was served from the May 12 cache, which still lists the Ivy St fridge "
                    "whose host withdrew, so the plan sends food there and the drop-off is refused."},
    {"id": "fridge_restock-3", "input": 2, "kind": "hallucinated_value",
     "root": ("plan_drops", 1, "llm"), "failure": ("drop_off", 1),
     "what": "the plan names fridge CF-17 for the Gorse Way stop; no such fridge exists",
     "description": "The planning model gave the Gorse Way clinic-yard stop the fridge id CF-17, which is in no "
                    "roster, and the drop-off tool cannot find that fridge."},
    {"id": "fridge_restock-4", "input": 3, "kind": "bad_memory_write",
     "root": ("record_status", 2, "state"), "failure": ("submit_temp_log", 1),
     "what": "CF-11's status is written under status:CF-10, replacing CF-10's entry",
     "description": "The status recorder stored the Kestrel Rd fridge's reading under the Juniper Pl key, so the "
                    "shift's temperature log has no entry for one fridge and the county log refuses it."},
    {"id": "fridge_restock-5", "input": 4, "kind": "swallowed_error",
     "root": ("fetch_pickups", 1, "tool"), "failure": ("reconcile_manifest", 1),
     "what": "Oduya Greengrocer's pick-up call timed out and was skipped, returning two donors' items as complete",
     "description": "The pick-up fetcher skipped a donor whose API timed out and returned the rest as if complete, "
                    "so the closing manifest check finds 15 kg of donations unaccounted for."},
]


# ---- tools and steps ------------------------------------------------------------------------------

@trajdebug.step(kind="input")
def read_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="retrieval")
def fetch_roster(zone: str) -> dict:
    live = [fid for fid, f in REGISTRY.items() if f["zone"] == zone and f["open"]]
    if SWITCH == "fridge_restock-2":  # the cache answered before the live registry refresh
        return {"zone": zone, "as_of": ROSTER_SNAPSHOT["as_of"], "fridges": list(ROSTER_SNAPSHOT[zone])}
    return {"zone": zone, "as_of": "2025-06-13", "fridges": live}


def _donor_api(donor: str, attempt: int) -> list[dict]:
    if SWITCH == "fridge_restock-5" and donor == "Oduya Greengrocer":
        raise TimeoutError(f"pickup API for {donor} timed out after 5s")
    return [dict(x, donor=donor) for x in DONORS[donor]]


@trajdebug.step(kind="tool")
def fetch_pickups(donors: list[str]) -> list[dict]:
    items: list[dict] = []
    for donor in donors:
        try:
            items += _donor_api(donor, 1)
        except TimeoutError:
            continue  # the van goes anyway; the donor can be asked again later
    return items


@trajdebug.step(kind="tool")
def read_sensor(fridge_id: str) -> dict:
    return dict(SENSORS[fridge_id], fridge=fridge_id, at="2025-06-14T07:40")


@trajdebug.step(kind="parse")
def normalize_reading(raw: dict) -> dict:
    temp = raw["reading"]
    if raw.get("unit") == "F" and SWITCH != "fridge_restock-1":
        temp = round((temp - 32) * 5 / 9, 1)
    return {"fridge": raw["fridge"], "temp_c": temp, "fill_pct": raw["fill_pct"], "at": raw["at"]}


@trajdebug.step(kind="state")
def record_status(fridge_id: str, status: dict, previous: str | None) -> str:
    key = f"status:{fridge_id}"
    if SWITCH == "fridge_restock-4" and previous:
        key = f"status:{previous}"  # the key of the loop's previous fridge
    trajdebug.current_run().state[key] = status
    return key


@trajdebug.step(kind="other")
def compose_brief(request: dict, roster: dict, pickups: list[dict]) -> list[dict]:
    state = trajdebug.current_run().state
    statuses = [state[f"status:{fid}"] for fid in roster["fridges"] if f"status:{fid}" in state]
    sites = {fid: REGISTRY[fid]["site"] for fid in roster["fridges"]}
    return [
        {"role": "system", "content": "You plan a community-fridge restock. Put chilled items only in fridges at "
                                      "5 C or below, fill the emptiest first. Answer JSON {\"stops\": [...]}."},
        {"role": "user", "content": json.dumps({"shift": request["shift"], "sites": sites, "statuses": statuses,
                                                "pickups": pickups})},
    ]


@trajdebug.step(kind="llm")
def plan_drops(messages: list[dict]) -> dict:
    return chat(messages)


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> list[dict]:
    return json.loads(text)["stops"]


@trajdebug.step(kind="tool")
def drop_off(fridge_id: str, items: list[str], volunteer: str) -> dict:
    fridge = REGISTRY.get(fridge_id)
    if fridge is None:
        raise LookupError(f"no fridge {fridge_id} in the network registry")
    if not fridge["open"]:
        raise RuntimeError(f"{fridge_id} ({fridge['site']}) is closed: {fridge['closed_note']}")
    return {"fridge": fridge_id, "logged_items": len(items), "by": volunteer}


@trajdebug.step(kind="tool")
def submit_temp_log(shift: str, fridges: list[str], entries: list[dict]) -> dict:
    have = {e["fridge"] for e in entries}
    missing = [f for f in fridges if f not in have]
    if missing:
        raise ValueError(f"temperature log for {shift} incomplete: no reading for {', '.join(missing)}")
    for e in entries:
        if not -10 <= e["temp_c"] <= 25:
            raise ValueError(f"{e['fridge']}: {e['temp_c']} C is outside the logger range -10..25 C")
    return {"accepted": len(entries), "shift": shift}


@trajdebug.step(kind="tool")
def post_update(channel: str, text: str) -> dict:
    return {"channel": channel, "posted": True, "chars": len(text)}


@trajdebug.step(kind="condition")
def reconcile_manifest(donors: list[str], delivered: list[str]) -> dict:
    expected = {f"{d}: {x['item']}": x["kg"] for d in donors for x in DONORS[d]}  # the donors' signed manifests
    missing = [k for k in expected if k.split(": ", 1)[1] not in delivered]
    if missing:
        kg = sum(expected[k] for k in missing)
        raise AssertionError(f"manifest lists {len(expected)} donated items; {len(missing)} ({kg} kg) were not "
                             f"delivered: {', '.join(missing)}")
    return {"items": len(expected), "delivered": len(delivered)}


def execute(inp: dict, out_path: str) -> None:
    try:
        with trajdebug.run(NAME, task=inp["task"], path=out_path):
            req = read_request(inp)
            roster = fetch_roster(req["zone"])
            pickups = fetch_pickups(req["donors"])
            previous = None
            for fid in roster["fridges"]:
                raw = read_sensor(fid)
                status = normalize_reading(raw)
                record_status(fid, status, previous)
                previous = fid
            messages = compose_brief(req, roster, pickups)
            answer = plan_drops(messages)
            stops = parse_plan(answer["content"])
            delivered: list[str] = []
            for stop in stops:
                drop_off(stop["fridge"], stop["items"], req["volunteer"])
                delivered += stop["items"]
            with trajdebug.step("gather_log_entries", kind="state") as g:
                state = trajdebug.current_run().state
                g.output = [state[k] for k in sorted(state) if k.startswith("status:")]
            submit_temp_log(req["shift"], roster["fridges"], g.output)
            post_update("#fridge-volunteers", f"{req['zone']} restocked by {req['volunteer']}: "
                                              f"{len(delivered)} items in {len(stops)} fridges")
            reconcile_manifest(req["donors"], delivered)
    except (LookupError, RuntimeError, ValueError, AssertionError):
        pass


# ---- the model --------------------------------------------------------------------------------------

def brain(request):
    if "community-fridge restock" not in system_of(request):
        return "I can only plan fridge restocks."
    brief = last_user_json(request)
    statuses = sorted(brief["statuses"], key=lambda s: s["fill_pct"])
    cold = [s["fridge"] for s in statuses if s["temp_c"] <= 5]
    stops: dict[str, list[str]] = {s["fridge"]: [] for s in statuses}
    for k, item in enumerate(brief["pickups"]):
        if item["chilled"]:
            target = cold[k % len(cold)] if cold else None
        else:
            target = statuses[k % len(statuses)]["fridge"]
        if target is not None:
            stops[target].append(item["item"])
    plan = []
    for fid, items in stops.items():
        if not items:
            continue
        name = fid
        if brief["sites"].get(fid, "").startswith("Gorse Way") and SWITCH == "fridge_restock-3":
            name = "CF-17"
        plan.append({"fridge": name, "site": brief["sites"].get(fid), "items": items})
    return json.dumps({"stops": plan})
