"""Farmers' market stall allocation (route: sdk): trajdebug's own run/step decorators and run.state."""
from __future__ import annotations

from contextlib import contextmanager

import trajdebug
from trajdebug.testing import deterministic

from benchmarks.heldout.suite_x import kit

ROUTE = "sdk"
NAME = "market-stall-allocator"

# id: (name, category, frontage, power, fee_eur, hygiene rating or None)
TRADERS = {
    "T-11": ("Hollow Oak Bakery", "bakery", "3.0m", "no", "45.00", 5),
    "T-12": ("Firepit Flatbreads", "hot food", "3.0m", "yes", "60.00", 4),
    "T-13": ("Brackenridge Apples", "produce", "4.0m", "no", "35.00", None),
    "T-14": ("Loom & Larch", "craft", "3.5m", "no", "30.00", None),
    "T-15": ("Quayside Oysters", "hot food", "3.0m", "yes", "60.00", 1),
    "T-16": ("Smokehouse Ribs", "hot food", "3.5m", "yes", "65.00", 5),
    "T-17": ("Greenacre Veg Box", "produce", "3.0m", "no", "35.00", None),
    "T-18": ("Wicker & Willow", "craft", "3.0m", "no", "30.00", None),
    "T-19": ("Cheddar Lane Dairy", "bakery", "3.0m", "yes", "45.00", 5),
}
PITCHES = {  # zone -> [(pitch, width_m, power)]
    "food-hot": [("H1", 4.0, True), ("H2", 3.5, True), ("H3", 3.5, True)],
    "food": [("F1", 3.0, False), ("F2", 3.5, False), ("F3", 3.0, True)],
    "produce": [("P1", 4.0, False), ("P2", 4.0, False), ("P3", 3.0, False)],
    "craft": [("C1", 3.0, False), ("C2", 3.5, False), ("C3", 4.0, False), ("C4", 3.0, False)],
}
ZONE_OF = {p: z for z, ps in PITCHES.items() for p, _, _ in ps}


def _req(market, date, ids):
    return {"market": market, "date": date, "applications": ids}


REFS = [
    _req("Harbour Square", "2026-12-05", ["T-11", "T-13", "T-18", "T-12"]),
    _req("Harbour Square", "2026-12-12", ["T-17", "T-14", "T-19", "T-16"]),
    _req("Old Tannery Yard", "2026-12-06", ["T-12", "T-15", "T-13", "T-11", "T-18"]),
    _req("Old Tannery Yard", "2026-12-13", ["T-19", "T-16", "T-17"]),
]
CASES = [
    dict(case="market_lossy_parsing", fault_kind="lossy_parsing", fault_id="market.frontage",
         input=_req("Harbour Square", "2026-12-19", ["T-13", "T-14", "T-18", "T-11"]),
         root="parse_application", marker='"T-14", "frontage_m": 3,'),
    dict(case="market_bad_memory_write", fault_kind="bad_memory_write", fault_id="market.power_memo",
         input=_req("Old Tannery Yard", "2026-12-20", ["T-11", "T-19", "T-13", "T-18"]),
         root="remember_trader", marker='"T-19", "power": false'),
    dict(case="market_swallowed_error", fault_kind="swallowed_error", fault_id="market.hygiene_outage",
         input=_req("Harbour Square", "2026-12-26", ["T-16", "T-15", "T-13", "T-14", "T-11"]),
         root="screen_hygiene", marker='"T-15", "rating": 5'),
    dict(case="market_unit_error", fault_kind="unit_error", fault_id="market.cents",
         input=_req("Old Tannery Yard", "2026-12-27", ["T-17", "T-19", "T-14"]),
         root="price_stalls", marker='"amount_cents": 35,'),
    dict(case="market_wrong_routing", fault_kind="wrong_routing", fault_id="market.zone_rule",
         input=_req("Harbour Square", "2027-01-02", ["T-13", "T-12", "T-18", "T-11", "T-17"]),
         root="route_zone", marker='"T-12", "zone": "food"}'),
]


@contextmanager
def session():
    yield None


@trajdebug.step(kind="input")
def read_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="tool")
def fetch_site_plan(market: str) -> dict:
    return {"market": market, "zones": {z: [{"pitch": p, "width_m": w, "power": pw} for p, w, pw in ps]
                                         for z, ps in PITCHES.items()}}


@trajdebug.step(kind="tool")
def fetch_application(trader: str) -> str:
    name, cat, front, power, fee, _ = TRADERS[trader]
    return f"{trader}|{name}|{cat}|frontage={front}|power={power}|fee={fee}"


@trajdebug.step(kind="parse")
def parse_application(line: str) -> dict:
    tid, name, cat, *fields = line.split("|")
    kv = dict(f.split("=", 1) for f in fields)
    raw = kv["frontage"].rstrip("m")
    frontage = int(raw.split(".")[0]) if kit.active("market.frontage") else float(raw)
    return {"trader": tid, "frontage_m": frontage, "name": name, "category": cat,
            "power": kv["power"] == "yes", "fee_eur": kv["fee"]}


@trajdebug.step(kind="tool")
def check_hygiene(trader: str) -> dict:
    if kit.active("market.hygiene_outage") and trader == "T-15":
        return {"trader": trader, "status": 503, "error": "rating service unavailable"}
    return {"trader": trader, "status": 200, "rating": TRADERS[trader][5]}


@trajdebug.step(kind="parse")
def screen_hygiene(payload: dict) -> dict:
    rating = payload.get("rating", 5)
    return {"trader": payload["trader"], "rating": rating, "eligible": rating >= 3}


@trajdebug.step(kind="state")
def remember_trader(app: dict, previous: dict | None) -> dict:
    power = app["power"]
    if kit.active("market.power_memo") and previous is not None:
        power = previous["power"]
    entry = {"trader": app["trader"], "power": power, "frontage_m": app["frontage_m"], "category": app["category"]}
    trajdebug.current_run().state[f"trader:{app['trader']}"] = entry
    return entry


@trajdebug.step(kind="condition")
def route_zone(trader: str) -> dict:
    cat = trajdebug.current_run().state[f"trader:{trader}"]["category"]
    if kit.active("market.zone_rule"):
        rules = [("food", "food"), ("bakery", "food"), ("hot", "food-hot"), ("produce", "produce")]
    else:
        rules = [("hot", "food-hot"), ("bakery", "food"), ("produce", "produce")]
    zone = next((z for key, z in rules if key in cat), "craft")
    return {"trader": trader, "zone": zone}


@trajdebug.step(kind="other")
def allocate_pitches(zones: list[dict], plan: dict) -> list[dict]:
    state = trajdebug.current_run().state
    taken, out = set(), []
    for z in zones:
        need = state[f"trader:{z['trader']}"]
        free = [p for p in plan["zones"][z["zone"]] if p["pitch"] not in taken
                and p["width_m"] >= need["frontage_m"] and (p["power"] or not need["power"])]
        if not free:
            out.append({"trader": z["trader"], "pitch": None})
            continue
        taken.add(free[0]["pitch"])
        out.append({"trader": z["trader"], "pitch": free[0]["pitch"]})
    return out


@trajdebug.step(kind="other")
def price_stalls(apps: list[dict]) -> list[dict]:
    out = []
    for a in apps:
        euros = float(a["fee_eur"])
        cents = int(euros) if kit.active("market.cents") else round(euros * 100)
        out.append({"trader": a["trader"], "amount_cents": cents, "currency": "EUR"})
    return out


@trajdebug.step(kind="tool")
def reserve_pitch(market: str, date: str, trader: str, pitch: str) -> dict:
    _, cat, front, power, _, rating = TRADERS[trader]
    width, has_power = next((w, pw) for p, w, pw in PITCHES[ZONE_OF[pitch]] if p == pitch)
    if "hot" in cat and ZONE_OF[pitch] != "food-hot":
        raise PermissionError(f"market office 403: {trader} cooks on site; pitch {pitch} is outside the hot-food area")
    if rating is not None and rating < 3:
        raise PermissionError(f"market office 403: {trader} holds food hygiene rating {rating}; food pitches need 3+")
    if float(front.rstrip("m")) > width:
        raise ValueError(f"market office 409: {trader} declared {front} frontage; pitch {pitch} is {width} m")
    if power == "yes" and not has_power:
        raise ValueError(f"market office 409: pitch {pitch} has no power hook-up; {trader} requires one")
    return {"trader": trader, "pitch": pitch, "ref": f"{market[:3].upper()}-{date}-{pitch}"}


@trajdebug.step(kind="tool")
def take_deposit(trader: str, charge: dict) -> dict:
    expected = round(float(TRADERS[trader][4]) * 100)
    if charge["amount_cents"] != expected:
        raise ValueError(f"payments API 422: amount {charge['amount_cents']} does not match invoice "
                         f"INV-{trader[2:]} ({expected} EUR cents)")
    return {"trader": trader, "paid_cents": expected, "receipt": f"RC-{trader[2:]}"}


@trajdebug.step(kind="condition")
def check_layout(bookings: list[dict]) -> dict:
    pitches = [b["pitch"] for b in bookings]
    if len(set(pitches)) != len(pitches):
        raise ValueError("layout check: a pitch is booked twice")
    return {"ok": True, "booked": len(pitches)}


@trajdebug.step(kind="output")
def publish_layout(market: str, date: str, bookings: list[dict], waitlist: list[str]) -> str:
    return f"{market} {date}: " + ", ".join(f"{b['trader']}@{b['pitch']}" for b in bookings) + f"; waitlist {waitlist}"


def record(_sess, path, request) -> None:
    try:
        with deterministic(), trajdebug.run(NAME, path=str(path), task=f"allocate stalls at {request['market']} on {request['date']}"):
            req = read_request(request)
            plan = fetch_site_plan(req["market"])
            apps, previous, waitlist = [], None, []
            for tid in req["applications"]:
                with trajdebug.step("vet_application", kind="agent", input={"trader": tid}):
                    app = parse_application(fetch_application(tid))
                    if "food" in app["category"] or app["category"] == "bakery":
                        screen = screen_hygiene(check_hygiene(tid))
                        if not screen["eligible"]:
                            waitlist.append(tid)
                            continue
                    remember_trader(app, previous)
                    previous = app
                    apps.append(app)
            zones = [route_zone(a["trader"]) for a in apps]
            slots = allocate_pitches(zones, plan)
            charges = {c["trader"]: c for c in price_stalls(apps)}
            bookings = []
            for slot in slots:
                if slot["pitch"] is None:
                    waitlist.append(slot["trader"])
                    continue
                with trajdebug.step("confirm_stall", kind="agent", input=slot):
                    bookings.append(reserve_pitch(req["market"], req["date"], slot["trader"], slot["pitch"]))
                    take_deposit(slot["trader"], charges[slot["trader"]])
            check_layout(bookings)
            publish_layout(req["market"], req["date"], bookings, waitlist)
    except (ValueError, PermissionError):
        pass
