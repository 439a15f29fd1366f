"""Lighthouse service visits (route sdk): a keeper's planning agent recorded with trajdebug's own SDK."""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout.suite_q import kit
from benchmarks.heldout.suite_q.kit import Agent, Case

import trajdebug


NAME = "lighthouse-service"

STATIONS = {
    "Skerrymor": {"tank_capacity_l": 1500, "lamp": "MBI-1000", "pedestal": "P3", "gauge_l": 1000.0, "panels": 8},
    "Carn Dubh": {"tank_capacity_l": 1200, "lamp": "HQI-400", "pedestal": "P1", "gauge_l": 700.0, "panels": 6},
    "Rosnabrae": {"tank_capacity_l": 2000, "lamp": "MBI-1000", "pedestal": "P3", "gauge_l": 1500.0, "panels": 12},
    "Eilean Ban": {"tank_capacity_l": 900, "lamp": "LED-250", "pedestal": "P2", "gauge_l": 450.0, "panels": 4},
    "Stroma Point": {"tank_capacity_l": 1800, "lamp": "HQI-400", "pedestal": "P1", "gauge_l": 1100.0, "panels": 10},
    "Noss Head": {"tank_capacity_l": 1600, "lamp": "LED-250", "pedestal": "P2", "gauge_l": 800.0, "panels": 7},
    "Muckle Flugga": {"tank_capacity_l": 2200, "lamp": "MBI-1000", "pedestal": "P3", "gauge_l": 1900.0, "panels": 16},
}
KITS = {("MBI-1000", "P3"), ("HQI-400", "P1"), ("LED-250", "P2")}
TIDES = {"Skerrymor": "06:40", "Carn Dubh": "09:15", "Rosnabrae": "11:05", "Eilean Ban": "07:50",
         "Stroma Point": "13:20", "Noss Head": "10:35", "Muckle Flugga": "08:10"}


class ServiceRefused(RuntimeError):
    pass


ServiceRefused.__module__ = "lighthouse.clients"


def order_text(station: str, budget: str, date: str) -> str:
    return (f"Work order for {station} light: annual lamp service, lens panels inspection, "
            f"fuel top-up. Visit budget {budget}. Requested visit date {date}.")


@trajdebug.step(kind="parse")
def parse_order(text: str) -> dict:
    station = text.split("Work order for ")[1].split(" light:")[0]
    raw = text.split("Visit budget ")[1].split(". Requested")[0]
    digits = raw.replace("GBP ", "")
    if kit.active("lh_lossy"):
        # continental reading of the separator
        budget = float(digits.split(".")[0].replace(",", "."))
    else:
        budget = float(digits.replace(",", ""))
    date = text.split("Requested visit date ")[1].rstrip(".")
    return {"station": station, "budget_gbp": budget, "visit_date": date}


@trajdebug.step(kind="tool")
def load_station_profile(station: str) -> dict:
    p = STATIONS[station]
    return {"station": station, "tank_capacity_l": p["tank_capacity_l"], "lamp": p["lamp"],
            "pedestal": p["pedestal"], "panels": p["panels"]}


@trajdebug.step(kind="state")
def remember_station(profile: dict) -> dict:
    lamp = profile["lamp"]
    if kit.active("lh_memory"):
        lamp = "LED-250" if profile["lamp"] != "LED-250" else "HQI-400"
    entry = {"station": profile["station"], "lamp_fitted": lamp, "pedestal_type": profile["pedestal"]}
    trajdebug.current_run().state["station"] = entry
    return entry


@trajdebug.step(kind="tool")
def fetch_tides(station: str, date: str) -> dict:
    try:
        if kit.active("lh_swallow"):
            raise TimeoutError("tide service did not answer within 5 s")
        return {"station": station, "date": date, "slack_water": TIDES[station], "source": "tide-tables"}
    except TimeoutError:
        return {"station": station, "date": date, "slack_water": "00:00", "source": "tide-tables"}


_CALLS = {"forecast": 0}


@trajdebug.step(kind="tool")
def sea_forecast(station: str, date: str) -> dict:
    _CALLS["forecast"] += 1
    if _CALLS["forecast"] == 1:
        raise ConnectionError("met service: 503 Service Unavailable")
    return {"station": station, "date": date, "swell_m": round(0.8 + len(station) % 4 * 0.3, 1), "wind_bf": 4}


@trajdebug.step(kind="other")
def plan_inspection(profile: dict) -> dict:
    n = profile["panels"]
    start = 0 if kit.active("lh_offbyone") else 1
    ids = [f"P-{i:02d}" for i in range(start, start + n)]
    return {"panels": ids, "count": len(ids)}


@trajdebug.step(kind="tool")
def inspect_panel(station: str, panel: str) -> dict:
    k = int(panel.split("-")[1])
    clarity = round(0.97 - 0.013 * ((k * 7 + len(station)) % 5), 3)
    return {"panel": panel, "clarity": clarity, "cracks": (k + len(station)) % 9 == 0}


@trajdebug.step(kind="state")
def record_panel(reading: dict) -> None:
    trajdebug.current_run().state.setdefault("panels", []).append(reading)


@trajdebug.step(kind="tool")
def read_tank_gauge(station: str) -> dict:
    level = STATIONS[station]["gauge_l"]
    if kit.active("lh_unit"):
        return {"station": station, "level_litres": round(level / 3.78541, 1)}  # the gauge's US gallons
    return {"station": station, "level_litres": level}


@trajdebug.step(kind="other")
def fuel_needed(profile: dict, gauge: dict) -> dict:
    return {"order_litres": round(profile["tank_capacity_l"] - gauge["level_litres"], 1)}


@trajdebug.step(kind="tool")
def order_fuel(station: str, order: dict) -> dict:
    headroom = STATIONS[station]["tank_capacity_l"] - STATIONS[station]["gauge_l"]
    if order["order_litres"] > headroom + 5:
        raise ServiceRefused(
            f"Fuel supplier: delivery of {order['order_litres']} l refused, telemetry for {station} "
            f"reports {headroom:.0f} l of headroom")
    return {"delivery": f"FD-{len(station) * 37}", "litres": order["order_litres"]}


@trajdebug.step(kind="tool")
def order_parts() -> dict:
    st = trajdebug.current_run().state["station"]
    truth = STATIONS[st["station"]]
    if (st["lamp_fitted"], st["pedestal_type"]) not in KITS:
        raise ServiceRefused(f"Parts desk: no service kit for {st['lamp_fitted']} on pedestal {st['pedestal_type']}")
    if st["lamp_fitted"] != truth["lamp"]:
        raise ServiceRefused(f"Parts desk: asset register lists a different lamp at {st['station']}, order held")
    return {"kit": f"SK-{st['lamp_fitted']}-{st['pedestal_type']}", "status": "reserved"}


@trajdebug.step(kind="llm")
def draft_keeper_note(messages: list[dict]) -> dict:
    user = messages[-1]["content"]
    return {"role": "assistant", "content": f"Note for the relief keeper: {user}"}


@trajdebug.step(kind="tool")
def book_boat(station: str, date: str, tides: dict) -> dict:
    hh = int(tides["slack_water"].split(":")[0])
    if hh < 5 or hh > 18:
        raise ServiceRefused(f"Harbour office: landing request for {station} on {date} declined, "
                             "no night landings at unlit jetties")
    return {"boat": "MV Pharos", "depart": tides["slack_water"]}


@trajdebug.step(kind="tool")
def file_report(station: str) -> dict:
    panels = trajdebug.current_run().state["panels"]
    registered = {f"P-{i:02d}" for i in range(1, STATIONS[station]["panels"] + 1)}
    got = {p["panel"] for p in panels}
    if got != registered:
        raise ServiceRefused(f"Lights board portal: report for {station} rejected (HTTP 422: panel set "
                             "does not match asset register)")
    return {"report": f"LB-{station[:3].upper()}-{len(panels)}", "accepted": True}


@trajdebug.step(kind="tool")
def approve_budget(order: dict, fuel: dict) -> dict:
    cost = 180.0 + fuel["litres"] * 0.92
    if order["budget_gbp"] < cost:
        raise ServiceRefused(f"Finance: visit cost GBP {cost:.2f} exceeds approved budget, approval withheld")
    return {"approved": True, "cost_gbp": round(cost, 2)}


@trajdebug.step(kind="output")
def summary(report: dict, approval: dict, boat: dict) -> str:
    return f"Visit booked on {boat['boat']} at {boat['depart']}; report {report['report']}; cost GBP {approval['cost_gbp']}"


def agent(inp: dict, path: Path) -> None:
    station, budget, date = inp["station"], inp["budget"], inp["date"]
    try:
        with trajdebug.run(NAME, path=str(path), task=f"plan the service visit to {station}"):
            with trajdebug.step("work_order", kind="input") as s:
                s.output = order_text(station, budget, date)
            order = parse_order(s.output)
            profile = load_station_profile(order["station"])
            remember_station(profile)
            tides = fetch_tides(order["station"], order["visit_date"])
            _CALLS["forecast"] = 0
            for _attempt in range(3):
                try:
                    sea_forecast(order["station"], order["visit_date"])
                    break
                except ConnectionError:
                    continue
            plan = plan_inspection(profile)
            for panel in plan["panels"]:
                reading = inspect_panel(order["station"], panel)
                record_panel(reading)
            gauge = read_tank_gauge(order["station"])
            need = fuel_needed(profile, gauge)
            fuel = order_fuel(order["station"], need)
            parts = order_parts()
            draft_keeper_note([{"role": "system", "content": "Write a short note for the relief keeper."},
                               {"role": "user", "content": f"Kit {parts['kit']} reserved, fuel {fuel['delivery']}."}])
            boat = book_boat(order["station"], order["visit_date"], tides)
            report = file_report(order["station"])
            approval = approve_budget(order, fuel)
            summary(report, approval, boat)
    except ServiceRefused:
        pass


def _inp(station, budget, date):
    return {"station": station, "budget": budget, "date": date}


CASES = [
    Case("lighthouse_lossy", NAME, "sdk", "lossy_parsing", "lh_lossy",
         _inp("Rosnabrae", "GBP 1,500.00", "2027-01-14"), "parse_order", "1.5"),
    Case("lighthouse_memory", NAME, "sdk", "bad_memory_write", "lh_memory",
         _inp("Skerrymor", "GBP 1,400.00", "2027-01-09"), "remember_station", "LED-250"),
    Case("lighthouse_swallow", NAME, "sdk", "swallowed_error", "lh_swallow",
         _inp("Stroma Point", "GBP 1,500.00", "2027-02-02"), "fetch_tides", "00:00"),
    Case("lighthouse_offbyone", NAME, "sdk", "off_by_one", "lh_offbyone",
         _inp("Carn Dubh", "GBP 1,100.00", "2027-01-21"), "plan_inspection", "P-00"),
    Case("lighthouse_unit", NAME, "sdk", "unit_error", "lh_unit",
         _inp("Muckle Flugga", "GBP 1,300.00", "2027-03-03"), "read_tank_gauge", "501.9"),
]
REFS = [_inp("Eilean Ban", "GBP 900.00", "2027-01-05"), _inp("Noss Head", "GBP 1,200.00", "2027-02-11"),
        _inp("Skerrymor", "GBP 1,600.00", "2027-03-17"), _inp("Carn Dubh", "GBP 1,000.00", "2027-04-08")]

AGENT = Agent(NAME, "sdk", "jsonl", agent, CASES, REFS)
