"""Agent 1 (sdk route): newsprint recycling collections, planned for one depot week.

Shape: request -> site register (text) -> parse -> per site: fill sensor (retried), load estimate,
state write -> model plans the route -> load-checker sub-agent reads the state back -> mill calendar
-> model picks a tipping slot -> mill booking -> site notices -> council manifest submission.
"""

from __future__ import annotations

import json

import trajdebug

from . import kit
from .common import Fault

AGENT = "newsprint_collections"
ROUTE = "sdk"
EXT = "jsonl"
RUN_NAME = "newsprint-collections"
DOMAIN = "Newsprint recycling collections"
SHAPE = "per-site loop with retried sensor, state writes read by a load-checker sub-agent, 2 model steps, mill booking, council manifest"

FLEET = {"T-4": 5200, "T-7": 7500, "T-11": 9800}
SIZES = (120, 240, 360, 660, 1100)
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat")
DENSITY = 0.05  # kg of loose newsprint per litre


class ApiRefused(RuntimeError):
    pass


ApiRefused.__module__ = "haulage.api"


def site_row(site: str) -> dict:
    s = kit.seed(site)
    return {
        "site": site,
        "bins": 2 + s % 6,
        "capacity": "1,100" if s % 2 else "660",
        "day": DAYS[s % 5],
        "contact": f"warden{s % 97}@parish.example",
    }


def fill_pct(site: str) -> int:
    return 35 + kit.seed(site, "fill") % 55


def kg_as_percent(site: str) -> float:
    r = site_row(site)
    cap = 1100 if r["capacity"] == "1,100" else 660
    return round(r["bins"] * cap * fill_pct(site) * DENSITY, 1)


_flaky: dict[str, int] = {}


@trajdebug.step(kind="input")
def take_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="tool")
def load_site_register(depot: str, sites: list[str]) -> str:
    lines = ["site;bins;capacity_l;day;contact"]
    for site in sites:
        r = site_row(site)
        lines.append(f"{r['site']};{r['bins']};{r['capacity']};{r['day']};{r['contact']}")
    return "\n".join(lines)


@trajdebug.step(kind="parse")
def parse_register(text: str) -> list[dict]:
    rows = []
    header, *body = text.splitlines()
    for line in body:
        site, bins, cap, day, contact = line.split(";")
        if kit.active("nw_lossy_parsing"):
            capacity = int(float(cap.replace(",", ".")))
        else:
            capacity = int(cap.replace(",", ""))
        rows.append({"site": site, "bins": int(bins), "capacity_l": capacity, "day": day, "contact": contact})
    return rows


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def read_fill_level(site: str) -> dict:
    if kit.seed(site, "link") % 3 == 0 and _flaky.get(site, 0) == 0:
        _flaky[site] = 1
        raise ConnectionError(f"sensor gateway for {site} did not answer")
    return {"site": site, "fill_pct": fill_pct(site), "read_at": "06:00"}


@trajdebug.step(kind="other")
def estimate_kg(row: dict, reading: dict, index: int) -> dict:
    fill = reading["fill_pct"] / 100
    if index == 2 and kit.active("nw_unit_error"):
        fill = reading["fill_pct"]
    kg = round(row["bins"] * row["capacity_l"] * fill * DENSITY, 1)
    return {"site": row["site"], "kg": kg}


@trajdebug.step(kind="state")
def record_load(row: dict, estimate: dict, index: int) -> dict:
    day = row["day"]
    if index == 3 and kit.active("nw_bad_memory_write"):
        day = "Sun"
    entry = {"site": row["site"], "kg": estimate["kg"], "pickup_day": day, "bins": row["bins"],
             "capacity_l": row["capacity_l"]}
    trajdebug.current_run().state[f"load:{row['site']}"] = entry
    return entry


def _planner_policy(messages: list[dict]) -> str:
    ask = json.loads(messages[-1]["content"])
    order = sorted(ask["sites"], key=lambda s: (DAYS.index(ask["days"][s]) if ask["days"][s] in DAYS else 9, s))
    vehicle = ask["requested_vehicle"]
    if kit.active("nw_hallucinated_value"):
        vehicle = "T-19"
    return json.dumps({"order": order, "vehicle": vehicle, "note": "tip after the last pickup"})


@trajdebug.step(kind="llm")
def plan_route(messages: list[dict]) -> dict:
    return {"role": "assistant", "content": _planner_policy(messages)}


@trajdebug.step(kind="parse")
def parse_plan(reply: dict) -> dict:
    return json.loads(reply["content"])


@trajdebug.step(kind="other")
def tally_site(site: str) -> dict:
    entry = trajdebug.current_run().state[f"load:{site}"]
    return {"site": site, "kg": entry["kg"]}


@trajdebug.step(kind="condition")
def verify_truck_capacity(tallies: list[dict], vehicle: str) -> dict:
    total = round(sum(t["kg"] for t in tallies), 1)
    limit = FLEET[vehicle]
    if total > limit:
        raise ValueError(f"planned payload {total:,.1f} kg exceeds the {limit:,} kg limit of {vehicle}")
    return {"total_kg": total, "limit_kg": limit, "ok": True}


@trajdebug.step(kind="agent")
def load_checker(sites: list[str], vehicle: str) -> dict:
    tallies = [tally_site(s) for s in sites]
    return verify_truck_capacity(tallies, vehicle)


def _week_dates(week: str) -> list[str]:
    n = int(week.split("W")[1])
    # ISO week 49 of 2026 starts on Monday 2026-11-30
    base = 30 + (n - 49) * 7
    out = []
    for d in range(6):
        day = base + d
        out.append(f"2026-11-{day:02d}" if day <= 30 else f"2026-12-{day - 30:02d}")
    return out


@trajdebug.step(kind="tool")
def fetch_mill_calendar(mill: str, week: str) -> dict:
    shown = week
    if kit.active("nw_stale_data"):
        shown = f"2026-W{int(week.split('W')[1]) - 1}"
    dates = _week_dates(shown)
    return {"mill": mill, "week": shown, "slots": [f"{d}T{h}:00" for d in dates[2:5] for h in ("09", "13")]}


@trajdebug.step(kind="llm")
def choose_tipping_slot(messages: list[dict]) -> dict:
    ask = json.loads(messages[-1]["content"])
    return {"role": "assistant", "content": json.dumps({"slot": ask["slots"][1]})}


@trajdebug.step(kind="tool")
def book_tipping_slot(mill: str, week: str, slot: str, vehicle: str) -> dict:
    if vehicle not in FLEET:
        raise ApiRefused(f"mill gate API 403: vehicle {vehicle} is not registered to this haulier")
    if slot[:10] not in _week_dates(week):
        raise ApiRefused(f"mill booking API 409: slot {slot} is not bookable for {week}")
    return {"booking": f"MB-{kit.seed(mill, slot) % 9000 + 1000}", "slot": slot}


@trajdebug.step(kind="tool")
def notify_site(contact: str, day: str) -> dict:
    return {"to": contact, "sent": True, "text": f"Collection on {day}"}


@trajdebug.step(kind="tool")
def submit_manifest(manifest: dict) -> dict:
    for line in manifest["lines"]:
        if line["capacity_l"] not in SIZES:
            raise ApiRefused(
                f"council waste portal 422: container size {line['capacity_l']} l at {line['site']} is not a registered size"
            )
        if line["pickup_day"] not in DAYS:
            raise ApiRefused(f"council waste portal 422: {line['site']} pickup on {line['pickup_day']} is outside depot hours")
    return {"manifest": f"CW-{kit.seed(manifest['depot'], manifest['week']) % 90000 + 10000}", "accepted": True}


@trajdebug.step(kind="output")
def summarize(plan: dict, booking: dict, receipt: dict) -> str:
    return f"Route {' > '.join(plan['order'])} on {plan['vehicle']}, tipping {booking['slot']}, manifest {receipt['manifest']}"


def run_once(inp: dict, path: str) -> None:
    _flaky.clear()
    try:
        with trajdebug.run(RUN_NAME, path=path, task=f"plan newsprint collections for {inp['depot']} {inp['week']}") as run:
            req = take_request(inp)
            rows = parse_register(load_site_register(req["depot"], req["sites"]))
            for i, row in enumerate(rows):
                reading = read_fill_level(row["site"])
                est = estimate_kg(row, reading, i)
                record_load(row, est, i)
            days = {s: run.state[f"load:{s}"]["pickup_day"] for s in req["sites"]}
            ask = {"sites": req["sites"], "days": days, "requested_vehicle": req["vehicle"], "fleet": sorted(FLEET)}
            plan = parse_plan(plan_route([
                {"role": "system", "content": "You plan newsprint collection rounds. Answer JSON: order, vehicle."},
                {"role": "user", "content": json.dumps(ask)},
            ]))
            load_checker(plan["order"], req["vehicle"])
            cal = fetch_mill_calendar(req["mill"], req["week"])
            pick = json.loads(choose_tipping_slot([
                {"role": "system", "content": "Pick a tipping slot at the mill after the round. Answer JSON: slot."},
                {"role": "user", "content": json.dumps({"slots": cal["slots"]})},
            ])["content"])
            booking = book_tipping_slot(req["mill"], req["week"], pick["slot"], plan["vehicle"])
            lines = []
            for s in plan["order"]:
                with trajdebug.step("read_load", kind="other") as st:
                    e = dict(run.state[f"load:{s}"])
                    st.output = e
                notify_site(site_row(s)["contact"], e["pickup_day"])
                lines.append(e)
            receipt = submit_manifest({"depot": req["depot"], "week": req["week"], "vehicle": plan["vehicle"], "lines": lines})
            summarize(plan, booking, receipt)
    except (ApiRefused, ValueError):
        pass


def _req(depot: str, n: int, week: str = "2026-W49", vehicle: str = "T-11") -> dict:
    sites = [f"S-{kit.seed(depot, i) % 900 + 100}" for i in range(n)]
    return {"depot": depot, "week": week, "mill": "Riverside Mill", "vehicle": vehicle, "sites": sites}


def _lossy_site(inp: dict) -> str:
    return next(s for s in inp["sites"] if site_row(s)["capacity"] == "1,100")


_IN = {
    "lossy": _req("Marsh Lane", 5),
    "unit": _req("Northgate", 5),
    "memory": _req("Quarry Road", 6),
    "halluc": _req("Wexley", 5, vehicle="T-7"),
    "calendar": _req("Upton Vale", 4, week="2026-W50"),
}

FAULTS = [
    Fault("newsprint_1", "nw_lossy_parsing", "lossy_parsing", "parse_register", '"capacity_l": 1,', _IN["lossy"]),
    Fault("newsprint_2", "nw_unit_error", "unit_error", "estimate_kg",
          f'"kg": {kg_as_percent(_IN["unit"]["sites"][2])}', _IN["unit"]),
    Fault("newsprint_3", "nw_bad_memory_write", "bad_memory_write", "record_load", '"pickup_day": "Sun"', _IN["memory"]),
    Fault("newsprint_4", "nw_hallucinated_value", "hallucinated_value", "plan_route", "T-19", _IN["halluc"]),
    Fault("newsprint_5", "nw_stale_data", "stale_data", "fetch_mill_calendar", "2026-W49", _IN["calendar"]),
]

REFS = [_req("Oakfield", 4), _req("Pendle Cross", 5, week="2026-W50"), _req("Sandown", 6, vehicle="T-7"),
        _req("Yarrow Bank", 3)]
