"""Kelp farm harvest planner (route: sdk): sample every longline, estimate the wet biomass, pick a
low-water window, plan sailings for the farm's vessel, book harbour, vessel and receiving site."""

from __future__ import annotations

import json
import math

import trajdebug

from . import kit


NAME = "kelp-harvest-planner"
ROUTE = "sdk"
DOMAIN = "kelp farm harvest"
SHAPE = "per-line sampling loop with a retried sensor read, run.state for biomass and vessel, a scripted planner model, three bookings, own manifest check"

FARMS = {
    "Skerry Bay": {"prefix": "SB", "lines": 6, "base_density": 4100},
    "Inchmara": {"prefix": "IM", "lines": 5, "base_density": 3650},
    "Carrow Sound": {"prefix": "CS", "lines": 7, "base_density": 4420},
    "Dunmore Reach": {"prefix": "DR", "lines": 4, "base_density": 3900},
    "Lochan Ruadh": {"prefix": "LR", "lines": 6, "base_density": 3300},
}
VESSELS = {"MV Tangle": 12.0, "Sea Dray": 9.5, "Brannock": 38.5, "Kittiwake": 3.5}
PLANTS = ["PLT-2 Oban dewatering", "PLT-4 Mallaig drying", "PLT-5 Ullapool blanching"]

INPUTS = {
    "k1": {"farm": "Skerry Bay", "date": "2026-05-14", "vessel": "MV Tangle"},
    "k2": {"farm": "Inchmara", "date": "2026-05-21", "vessel": "Sea Dray"},
    "k3": {"farm": "Carrow Sound", "date": "2026-06-02", "vessel": "MV Tangle"},
    "k4": {"farm": "Dunmore Reach", "date": "2026-06-09", "vessel": "Sea Dray"},
    "k5": {"farm": "Lochan Ruadh", "date": "2026-06-16", "vessel": "Kittiwake"},
    "r1": {"farm": "Skerry Bay", "date": "2026-04-30", "vessel": "Sea Dray"},
    "r2": {"farm": "Inchmara", "date": "2026-05-07", "vessel": "MV Tangle"},
    "r3": {"farm": "Carrow Sound", "date": "2026-05-28", "vessel": "Sea Dray"},
    "r4": {"farm": "Dunmore Reach", "date": "2026-06-23", "vessel": "MV Tangle"},
}
REFS = ["r1", "r2", "r3", "r4"]

# case -> (switch, fault kind, input, root step name)
CASES = {
    "kelp_units": ("kelp.units", "unit_error", "k1", "estimate_biomass"),
    "kelp_tides": ("kelp.tides", "stale_data", "k2", "fetch_tide_table"),
    "kelp_manifest": ("kelp.manifest", "off_by_one", "k3", "plan_sampling"),
    "kelp_site": ("kelp.site", "hallucinated_value", "k4", "draft_plan"),
    "kelp_vessel": ("kelp.vessel", "bad_memory_write", "k5", "remember_vessel"),
}


class Refused(RuntimeError):
    pass


Refused.__module__ = "harvest_ops"


def _day(date: str) -> int:
    return int(date[-2:])


def _tides(date: str) -> dict:
    d = _day(date)
    low = (5 * 60 + 10 + d * 50) % (24 * 60)
    low = max(low, 4 * 60) if low < 4 * 60 else low
    if low > 19 * 60:
        low -= 12 * 60 + 25
    start, end = low - 100, low + 100
    fmt = lambda m: f"{m // 60:02d}:{m % 60:02d}"  # noqa: E731
    return {"low_water": fmt(low), "windows": [{"start": fmt(start), "end": fmt(end)}]}


@trajdebug.step(kind="input")
def read_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="tool")
def fetch_line_registry(farm: str) -> list[dict]:
    f = FARMS[farm]
    return [
        {"line": f"{f['prefix']}-{i + 1:02d}", "length_m": 180 + 20 * ((i * 3) % 5), "species": "Saccharina latissima", "status": "active"}
        for i in range(f["lines"])
    ]


@trajdebug.step(kind="parse")
def plan_sampling(registry: list[dict]) -> dict:
    lines = [r["line"] for r in registry if r["status"] == "active"]
    n = len(lines)
    if kit.active("kelp.manifest"):
        n = len(lines) - 1
        kit.mark(f"{lines[0]} to {lines[n - 1]}")
    chosen = lines[:n]
    span = f"{chosen[0]} to {chosen[-1]}"
    return {"order": chosen, "span": span, "lines_planned": len(chosen)}


def sample_density(line: str, attempt: int, farm: str) -> dict:
    with trajdebug.step("sample_density", kind="tool", input={"line": line, "attempt": attempt}) as s:
        if attempt == 1 and line.endswith("-02"):
            s.error("sensor buoy did not answer within 8 s")
            s.output = None
            return {}
        base = FARMS[farm]["base_density"]
        k = int(line[-2:])
        s.output = {"line": line, "blade_g_per_m": base + 137 * k - 40 * (k % 3), "depth_m": 2.5}
        return s.output


@trajdebug.step(kind="other")
def estimate_biomass(sample: dict, length_m: int) -> dict:
    kg = round(sample["blade_g_per_m"] * length_m / 1000, 1)
    if kit.active("kelp.units") and sample["line"].endswith("-03"):
        kg = round(sample["blade_g_per_m"] * length_m, 1)  # grams read as kilograms
        kit.mark(kg)
    return {"line": sample["line"], "wet_kg": kg}


@trajdebug.step(kind="state")
def record_biomass(estimate: dict) -> dict:
    trajdebug.current_run().state[f"biomass:{estimate['line']}"] = estimate["wet_kg"]
    return {"stored": estimate["line"], "wet_kg": estimate["wet_kg"]}


@trajdebug.step(kind="tool")
def fetch_tide_table(station: str, date: str) -> dict:
    table_date = date
    if kit.active("kelp.tides"):
        table_date = f"{date[:-2]}{_day(date) - 1:02d}"  # yesterday's cached table
        kit.mark(table_date)
    return {"station": station, "date": table_date, **_tides(table_date)}


@trajdebug.step(kind="condition")
def choose_window(table: dict) -> dict:
    w = table["windows"][0]
    return {"start": w["start"], "end": w["end"], "low_water": table["low_water"]}


@trajdebug.step(kind="tool")
def load_vessel_profile(vessel: str) -> dict:
    return {"vessel": vessel, "hold_t": VESSELS[vessel], "crew": 3, "fleet": sorted(VESSELS)}


@trajdebug.step(kind="state")
def remember_vessel(profile: dict) -> dict:
    hold = profile["hold_t"]
    if kit.active("kelp.vessel"):
        hold = max(VESSELS.values())  # the fleet's largest hold kept under this vessel
        kit.mark(f"{hold}")
    entry = {"vessel": profile["vessel"], "hold_t": hold}
    trajdebug.current_run().state["vessel"] = entry
    return entry


@trajdebug.step(kind="other")
def total_biomass(lines: list[str]) -> dict:
    state = trajdebug.current_run().state
    kg = sum(state[f"biomass:{ln}"] for ln in lines)
    return {"lines": len(lines), "wet_t": round(kg / 1000, 2)}


@trajdebug.step(kind="llm")
def draft_plan(messages: list[dict]) -> dict:
    facts = json.loads(messages[-1]["content"])
    trips = math.ceil(facts["wet_t"] / facts["hold_t"])
    site = PLANTS[facts["wet_t"].__int__() % len(PLANTS)].split()[0]
    if kit.active("kelp.site"):
        site = "PLT-7"
        kit.mark(site)
    plan = {"sailings": trips, "per_sailing_t": round(facts["wet_t"] / trips, 2), "receiving_site": site,
            "window": facts["window"], "note": "harvest from the outer lines first"}
    return {"role": "assistant", "content": json.dumps(plan)}


@trajdebug.step(kind="parse")
def parse_plan(reply: dict) -> dict:
    return json.loads(reply["content"])


@trajdebug.step(kind="condition")
def check_sailings(plan: dict, window: dict) -> dict:
    h = lambda t: int(t[:2]) * 60 + int(t[3:])  # noqa: E731
    minutes = h(window["end"]) - h(window["start"])
    possible = max(1, minutes // 70)
    if plan["sailings"] > possible:
        raise Refused(f"harvest needs {plan['sailings']} sailings but the {window['start']}-{window['end']} window allows {possible}")
    return {"sailings": plan["sailings"], "possible": possible}


@trajdebug.step(kind="tool")
def book_harbour_slot(date: str, window: dict) -> dict:
    real = _tides(date)["windows"][0]
    if (window["start"], window["end"]) != (real["start"], real["end"]):
        raise Refused(f"harbour office: slot {window['start']}-{window['end']} on {date} is outside the published low-water working hours")
    return {"slot": f"{date} {window['start']}", "berth": "B3"}


@trajdebug.step(kind="tool")
def book_vessel(vessel: str, per_sailing_t: float, sailings: int) -> dict:
    if per_sailing_t > VESSELS[vessel]:
        raise Refused(f"vessel operator: {vessel} cannot take {per_sailing_t} t per sailing (certificate limit {VESSELS[vessel]} t)")
    return {"vessel": vessel, "sailings": sailings, "confirmation": f"VB-{sailings}{int(per_sailing_t * 10)}"}


@trajdebug.step(kind="tool")
def book_receiving_site(site: str, wet_t: float) -> dict:
    known = [p.split()[0] for p in PLANTS]
    if site not in known:
        raise Refused(f"receiving-site API 404: no site with code {site}")
    return {"site": site, "accepted_t": wet_t}


@trajdebug.step(kind="condition")
def reconcile_manifest(manifest_lines: list[str], registry: list[dict]) -> dict:
    active = [r["line"] for r in registry if r["status"] == "active"]
    if len(manifest_lines) != len(active):
        raise Refused(f"manifest lists {len(manifest_lines)} lines but the farm register has {len(active)} active lines; landing declaration rejected")
    return {"lines": len(active), "ok": True}


@trajdebug.step(kind="output")
def summary(plan: dict, bookings: dict) -> str:
    return f"{plan['sailings']} sailings to {plan['receiving_site']}, slot {bookings['slot']}"


def run_agent(request: dict) -> None:
    req = read_request(request)
    registry = fetch_line_registry(req["farm"])
    sampling = plan_sampling(registry)
    lengths = {r["line"]: r["length_m"] for r in registry}
    for line in sampling["order"]:
        sample: dict = {}
        for attempt in (1, 2):
            sample = sample_density(line, attempt, req["farm"])
            if sample:
                break
        est = estimate_biomass(sample, lengths[line])
        record_biomass(est)
    table = fetch_tide_table("Oban", req["date"])
    window = choose_window(table)
    remember_vessel(load_vessel_profile(req["vessel"]))
    totals = total_biomass(sampling["order"])
    with trajdebug.step("planning_facts", kind="other") as s:
        vessel = trajdebug.current_run().state["vessel"]
        facts = {"wet_t": totals["wet_t"], "hold_t": vessel["hold_t"], "window": window, "sites": PLANTS}
        s.output = facts
    messages = [
        {"role": "system", "content": "You plan kelp harvest sailings. Answer with JSON."},
        {"role": "user", "content": json.dumps(facts)},
    ]
    plan = parse_plan(draft_plan(messages))
    check_sailings(plan, window)
    slot = book_harbour_slot(req["date"], window)
    book_vessel(req["vessel"], plan["per_sailing_t"], plan["sailings"])
    book_receiving_site(plan["receiving_site"], totals["wet_t"])
    reconcile_manifest(sampling["order"], registry)
    summary(plan, slot)


def record(key: str, out: str) -> None:
    request = INPUTS[key]
    try:
        with trajdebug.run(NAME, task=f"plan the {request['farm']} harvest on {request['date']}", path=out):
            run_agent(request)
    except Refused:
        pass
