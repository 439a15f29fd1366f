"""Coffee roastery batch planner (route: sdk): fetch a roast day's wholesale orders, expand blends into
green-bean needs, keep stock cover in run.state, plan batches, draft a roaster schedule with a scripted
model, check it, pick greens, roast, pack and hand the parcels to the courier."""

from __future__ import annotations

import json
import math

import trajdebug

from . import kit


NAME = "roastery-batch-planner"
ROUTE = "sdk"
DOMAIN = "coffee roastery"
SHAPE = "order fetch, per-blend recipe and batch loop, per-origin stock loop writing run.state, alternates on shortage, scripted scheduling model, own hour and packing checks, warehouse/roaster/courier tools"

RECIPES = {
    "House Espresso": {"Brazil Cerrado": 0.6, "Colombia Huila": 0.4},
    "Filter No.2": {"Ethiopia Sidamo": 0.7, "Kenya Nyeri": 0.3},
    "Swiss Water Decaf": {"Colombia Decaf": 1.0},
}
ALTERNATES = {"Colombia Huila": "Colombia Narino", "Kenya Nyeri": "Rwanda Huye"}
STOCK = {  # origin -> (main warehouse kg, bonded warehouse kg, not yet cleared)
    "Brazil Cerrado": (420.0, 0.0), "Colombia Huila": (30.0, 140.0), "Colombia Narino": (210.0, 0.0),
    "Ethiopia Sidamo": (260.0, 60.0), "Kenya Nyeri": (85.0, 0.0), "Rwanda Huye": (120.0, 0.0), "Colombia Decaf": (310.0, 0.0),
}
PROFILES = {"House Espresso": (212, 226, 13.5), "Filter No.2": (198, 211, 10.5), "Swiss Water Decaf": (190, 209, 11.0)}
BATCH_KG, BATCH_MIN, SHIFT_MIN = 12.0, 25, 480
CUSTOMERS = ["Bramble Cafe", "Duck & Waffle Deli", "Haarlem Bakery", "Kiosk 9", "Little Lark", "Moss Street Canteen",
             "North Pier Books", "Pedal Cycles Cafe", "Quayside Hotel", "Ruby's Diner"]
BLENDS = list(RECIPES)

INPUTS = {"d1": 1, "d2": 2, "d3": 3, "d4": 4, "d5": 5, "r1": 6, "r2": 7, "r3": 8, "r4": 9}
REFS = ["r1", "r2", "r3", "r4"]

CASES = {
    "coffee_orders": ("coffee.orders", "truncated_result", "d1", "fetch_orders"),
    "coffee_cover": ("coffee.cover", "bad_memory_write", "d2", "record_cover"),
    "coffee_profile": ("coffee.profile", "swallowed_error", "d3", "fetch_roast_profile"),
    "coffee_notes": ("coffee.notes", "context_pollution", "d4", "fetch_shift_notes"),
    "coffee_batches": ("coffee.batches", "off_by_one", "d5", "plan_batches"),
}


class Rejected(RuntimeError):
    pass


Rejected.__module__ = "roastery_ops"


def _orders(day: int) -> list[dict]:
    out = []
    for i in range(8):
        blend = BLENDS[(i + day) % 3] if i < 6 else BLENDS[i % 2]
        kg = 30.0 + 5 * ((i * 7 + day * 3) % 4)
        if day == 2 and blend == "House Espresso":
            kg += 20.0
        out.append({"order": f"WS-{day}{i + 1:02d}", "customer": CUSTOMERS[(i + day) % len(CUSTOMERS)], "blend": blend, "kg": kg})
    return out


@trajdebug.step(kind="input")
def read_request(day: int) -> dict:
    return {"roast_date": f"2026-12-{day + 6:02d}", "site": "Canal Wharf roastery"}


@trajdebug.step(kind="tool")
def fetch_orders(roast_date: str, day: int) -> dict:
    lines = _orders(day)
    if kit.active("coffee.orders"):
        lines = lines[:5]  # the shop API's default page size
        kit.mark('"count": 5')
    return {"roast_date": roast_date, "lines": lines, "count": len(lines)}


@trajdebug.step(kind="other")
def blend_totals(orders: dict) -> dict:
    tot: dict[str, float] = {}
    for ln in orders["lines"]:
        tot[ln["blend"]] = tot.get(ln["blend"], 0.0) + ln["kg"]
    return tot


@trajdebug.step(kind="tool")
def lookup_recipe(blend: str) -> dict:
    return {"blend": blend, "components": RECIPES[blend], "shrinkage": 0.15}


@trajdebug.step(kind="other")
def plan_batches(blend: str, roasted_kg: float) -> dict:
    n = math.ceil(roasted_kg / BATCH_KG)
    if kit.active("coffee.batches") and blend == "Filter No.2":
        n = int(roasted_kg // BATCH_KG)  # the last part-batch is dropped
        kit.mark(f'"planned_kg": {round(n * BATCH_KG, 1)}')
    return {"blend": blend, "batches": n, "planned_kg": round(n * BATCH_KG, 1)}


@trajdebug.step(kind="tool")
def check_green_stock(origin: str) -> dict:
    main, bonded = STOCK[origin]
    return {"origin": origin, "lots": [{"lot": f"L-{700 + len(origin)}", "warehouse": "main", "kg": main},
                                       {"lot": f"L-{800 + len(origin)}", "warehouse": "bonded", "kg": bonded, "customs_cleared": False}]}


@trajdebug.step(kind="state")
def record_cover(stock: dict) -> dict:
    usable = sum(lot["kg"] for lot in stock["lots"] if lot["warehouse"] == "main")
    if kit.active("coffee.cover") and stock["origin"] == "Colombia Huila":
        usable = sum(lot["kg"] for lot in stock["lots"])  # bonded lot counted as usable
        kit.mark(f"{usable}")
    trajdebug.current_run().state[f"cover:{stock['origin']}"] = usable
    return {"origin": stock["origin"], "usable_kg": usable}


@trajdebug.step(kind="condition")
def choose_greens(needs: dict) -> dict:
    state = trajdebug.current_run().state
    picks = {}
    for origin, kg in needs.items():
        if state[f"cover:{origin}"] >= kg:
            picks[origin] = kg
        else:
            alt = ALTERNATES[origin]
            picks[alt] = picks.get(alt, 0.0) + kg
    return {"picks": {k: round(v, 1) for k, v in picks.items()}}


@trajdebug.step(kind="tool")
def fetch_roast_profile(blend: str) -> dict:
    try:
        if kit.active("coffee.profile") and blend == "Filter No.2":
            raise ConnectionError("profile service: connection reset")
        charge, drop, minutes = PROFILES[blend]
    except ConnectionError:
        charge, drop, minutes = 0, 0, 0.0
        kit.mark('"charge_c": 0')
    return {"blend": blend, "charge_c": charge, "drop_c": drop, "minutes": minutes}


@trajdebug.step(kind="tool")
def fetch_shift_notes(roast_date: str) -> dict:
    notes = [{"site": "Canal Wharf", "note": "Chaff collector emptied; afterburner checked."},
             {"site": "Canal Wharf", "note": "Two roasters on shift: R1 and R2."}]
    if kit.active("coffee.notes"):
        notes.append({"site": "Tannery Yard", "note": "R1 down for burner service, do not schedule."})
        kit.mark("burner service")
    return {"roast_date": roast_date, "notes": notes}


@trajdebug.step(kind="llm")
def draft_schedule(messages: list[dict]) -> dict:
    facts = json.loads(messages[-1]["content"])
    roasters = ["R1", "R2"]
    if any("R1 down" in n["note"] for n in facts["notes"]):
        roasters = ["R2"]
    slots = {r: [] for r in roasters}
    i = 0
    for b in facts["batches"]:
        for _ in range(b["batches"]):
            slots[roasters[i % len(roasters)]].append(b["blend"])
            i += 1
    return {"role": "assistant", "content": json.dumps({"roasters": slots})}


@trajdebug.step(kind="parse")
def parse_schedule(reply: dict) -> dict:
    return json.loads(reply["content"])


@trajdebug.step(kind="condition")
def check_roaster_hours(schedule: dict) -> dict:
    hours = {r: len(b) * BATCH_MIN for r, b in schedule["roasters"].items()}
    for r, m in hours.items():
        if m > SHIFT_MIN:
            raise Rejected(f"schedule puts {m} min of roasting on {r}; the shift is {SHIFT_MIN} min")
    return {"minutes": hours}


@trajdebug.step(kind="tool")
def pick_greens(picks: dict) -> dict:
    for origin, kg in picks["picks"].items():
        if kg > STOCK[origin][0]:
            raise Rejected(f"warehouse: pick of {kg} kg {origin} refused, {STOCK[origin][0]} kg on hand in main store")
    return {"picked": picks["picks"], "pick_list": "PL-" + str(len(picks["picks"]))}


@trajdebug.step(kind="tool")
def roast_batches(blend: str, batches: int, profile: dict) -> dict:
    if not 180 <= profile["charge_c"] <= 230:
        raise Rejected(f"roaster controller: charge temperature {profile['charge_c']} °C outside 180-230 °C, batch not started")
    return {"blend": blend, "roasted_kg": round(batches * BATCH_KG * 0.85 / 0.85, 1), "batches": batches}


@trajdebug.step(kind="condition")
def pack_orders(orders: dict, roasted: dict) -> dict:
    for blend, kg in roasted.items():
        need = sum(ln["kg"] for ln in orders["lines"] if ln["blend"] == blend)
        if kg < need:
            raise Rejected(f"packing: {kg} kg of {blend} roasted for {need} kg on order")
    return {"parcels": len(orders["lines"])}


@trajdebug.step(kind="tool")
def book_courier(roast_date: str, parcels: int, day: int) -> dict:
    booked = len(_orders(day))
    if parcels != booked:
        raise Rejected(f"courier API 422: manifest declares {parcels} parcels, {booked} collections are booked for {roast_date}")
    return {"manifest": f"CM-{roast_date[-2:]}{parcels}", "collections": booked}


@trajdebug.step(kind="output")
def summary(plan: dict, manifest: dict) -> str:
    return f"{sum(len(v) for v in plan['roasters'].values())} batches roasted, manifest {manifest['manifest']}"


def run_agent(day: int) -> None:
    req = read_request(day)
    orders = fetch_orders(req["roast_date"], day)
    totals = blend_totals(orders)
    needs: dict[str, float] = {}
    batches = []
    for blend, kg in totals.items():
        recipe = lookup_recipe(blend)
        b = plan_batches(blend, kg)
        batches.append(b)
        for origin, share in recipe["components"].items():
            needs[origin] = needs.get(origin, 0.0) + b["planned_kg"] * share / (1 - recipe["shrinkage"])
    for origin in needs:
        record_cover(check_green_stock(origin))
    picks = choose_greens(needs)
    profiles = {blend: fetch_roast_profile(blend) for blend in totals}
    notes = fetch_shift_notes(req["roast_date"])
    messages = [{"role": "system", "content": "You schedule roast batches across the roasters on shift. Answer with JSON."},
                {"role": "user", "content": json.dumps({"batches": batches, "notes": notes["notes"]})}]
    schedule = parse_schedule(draft_schedule(messages))
    check_roaster_hours(schedule)
    pick_greens(picks)
    roasted = {}
    for b in batches:
        r = roast_batches(b["blend"], b["batches"], profiles[b["blend"]])
        roasted[b["blend"]] = r["roasted_kg"]
    packed = pack_orders(orders, roasted)
    manifest = book_courier(req["roast_date"], packed["parcels"], day)
    summary(schedule, manifest)


def record(key: str, out: str) -> None:
    day = INPUTS[key]
    try:
        with trajdebug.run(NAME, task=f"roast day {day + 6} December", path=out):
            run_agent(day)
    except Rejected:
        pass
