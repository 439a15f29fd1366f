"""Crane hire (recording SDK): read a hire request, plan the lifts, pick a crane, quote and book it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import trajdebug

from . import common
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "crane-hire-desk", "sdk", "crane hire", "jsonl"

REQUESTS = {
    "H-220": "Site BS2 0PT. Lift three rooftop AC units, each 5.8 t, at radius 22 m. One day. PO limit 9000 GBP.",
    "H-221": "Site CF10 5AL. Lift two steel trusses, each 4.6 t, at radius 18 m. One day. PO limit 6000 GBP.",
    "H-222": "Site BA1 1LT. Lift one generator, 3.2 t, at radius 14 m. One day. PO limit 4000 GBP.",
    "H-223": "Site GL1 2EH. Lift four precast panels, each 5.5 t, at radius 16 m. One day. PO limit 8000 GBP.",
    "H-224": "Site SN1 1QF. Lift two water tanks, each 2.4 t, at radius 25 m. One day. PO limit 5000 GBP.",
    "H-225": "Site TA1 3NQ. Lift one boiler, 6.1 t, at radius 12 m. One day. PO limit 4000 GBP.",
}
REFS = ["H-222", "H-223", "H-224", "H-225"]
CHART = {  # rated capacity (t) at radius (m)
    "LTM 1050": {12: 11.5, 14: 10.0, 16: 8.7, 18: 7.6, 22: 6.1, 25: 5.2},
    "LTM 1090": {12: 22.0, 14: 19.5, 16: 17.0, 18: 15.1, 22: 12.2, 25: 10.6},
    "LTM 1030": {12: 6.8, 14: 5.6, 16: 4.7, 18: 4.0, 22: 3.0, 25: 2.4},
}
TARIFF = {"LTM 1030": 1150.0, "LTM 1050": 1450.0, "LTM 1090": 1890.0}


@common.handler("crane:extract")
def _extract(msgs, tools):
    text = common.last_user(msgs)
    m = re.search(r"Lift (\w+) (.+?), (?:each )?([\d.]+) t, at radius (\d+) m", text)
    count = {"one": 1, "two": 2, "three": 3, "four": 4}[m.group(1)]
    po = re.search(r"PO limit (\d+)", text).group(1)
    site = text.split()[1] + " " + text.split()[2].rstrip(".")
    return f"site: {site}\nloads: {count} x {m.group(2)}\nweight: {m.group(3)} t\nradius: {m.group(4)} m\ndays: 1\npo_limit: {po} GBP"


@common.handler("crane:lifts")
def _lifts(msgs, tools):
    req = json.loads(common.last_user(msgs))
    n = req["count"] - 1 if active("crane_lift_plan") and req["count"] > 1 else req["count"]
    return json.dumps([{"lift": i + 1, "load": f"{req['load']} {i + 1}", "weight_t": req["weight_t"], "radius_m": req["radius_m"]} for i in range(n)])


@common.handler("crane:quote")
def _quote(msgs, tools):
    d = json.loads(common.last_user(msgs))
    rate = 1250.0 if active("crane_quote_rate") else d["rate"]["day_rate_gbp"]
    return json.dumps({"crane": d["crane"], "day_rate_gbp": rate, "days": d["rate"]["days"], "total_gbp": rate * d["rate"]["days"] + d["rate"]["mobilisation_gbp"]})


@trajdebug.step(kind="input")
def receive_request(hire_id: str) -> dict:
    return {"hire_id": hire_id, "text": REQUESTS[hire_id]}


@trajdebug.step(kind="llm")
def extract_requirements(text: str) -> str:
    return common.chat("[crane:extract] Extract the lift requirements.", text)


@trajdebug.step(kind="parse")
def parse_requirements(text: str) -> dict:
    f = dict(line.split(": ", 1) for line in text.splitlines())
    w = f["weight"].split()[0]
    weight = float(w.split(".")[0]) if active("crane_weight_parse") else float(w)
    load = f["loads"].split(" x ", 1)
    return {"site": f["site"], "count": int(load[0]), "load": load[1], "weight_t": weight,
            "radius_m": int(f["radius"].split()[0]), "days": int(f["days"]), "po_limit": float(f["po_limit"].split()[0])}


@trajdebug.step(kind="llm")
def plan_lifts(req: dict) -> str:
    return common.chat("[crane:lifts] Plan each lift as JSON.", json.dumps(req))


@trajdebug.step(kind="parse")
def parse_lifts(text: str) -> list:
    return json.loads(text)


@trajdebug.step(kind="retrieval")
def load_chart(crane: str, radius_m: int) -> dict:
    return {"crane": crane, "radius_m": radius_m, "capacity_t": CHART[crane][radius_m]}


@trajdebug.step(kind="condition")
def fits(chart: dict, weight_t: float) -> bool:
    return chart["capacity_t"] >= weight_t * 1.1


@trajdebug.step(kind="state")
def remember_lift(lift: dict, crane: str, capacity_t: float) -> None:
    mem = trajdebug.current_run().state.setdefault("lifts", [])
    cap = capacity_t
    if active("crane_memory_cap") and not mem:
        cap = CHART["LTM 1090"][lift["radius_m"]]  # the first lift is remembered with the chart of the larger crane
    mem.append({"lift": lift["lift"], "crane": crane, "capacity_t": cap})


@trajdebug.step(kind="agent")
def size_crane(lifts: list) -> str:
    for crane in ("LTM 1030", "LTM 1050", "LTM 1090"):
        ok = True
        for lift in lifts:
            chart = load_chart(crane, lift["radius_m"])
            if not fits(chart, lift["weight_t"]):
                ok = False
                break
        if ok:
            return crane
    return "LTM 1090"


@trajdebug.step(kind="tool")
def fetch_ground_bearing(site: str) -> dict:
    return {"site": site, "bearing_kpa": 180 + len(site) * 3, "survey_ref": f"SS-{site.replace(' ', '')}"}


@trajdebug.step(kind="tool")
def fetch_access_route(site: str) -> dict:
    return {"site": site, "max_axle_t": 12, "route_ok": True}


@trajdebug.step(kind="agent")
def site_survey(site: str) -> dict:
    return {"ground": fetch_ground_bearing(site), "access": fetch_access_route(site)}


@trajdebug.step(kind="other")
def build_rate_query(crane: str, req: dict) -> dict:
    days = 8 if active("crane_rate_args") else req["days"]  # a working day of 8 hours, sent as the day count
    return {"crane": crane, "days": days, "site": req["site"]}


@trajdebug.step(kind="tool")
def get_rate(query: dict) -> dict:
    return {"crane": query["crane"], "day_rate_gbp": TARIFF[query["crane"]], "days": query["days"], "mobilisation_gbp": 350.0}


@trajdebug.step(kind="llm")
def compose_quote(crane: str, rate: dict) -> str:
    return common.chat("[crane:quote] Write the quote as JSON.", json.dumps({"crane": crane, "rate": rate}))


class BookingRefused(Exception):
    pass


@trajdebug.step(kind="tool")
def book_crane(hire: dict, req: dict, lifts: list, crane: str, quote_json: str, survey: dict) -> dict:
    quote = json.loads(quote_json)
    original = REQUESTS[hire["hire_id"]]
    count = {"one": 1, "two": 2, "three": 3, "four": 4}[original.split("Lift ")[1].split()[0]]
    if len(lifts) != count:
        raise BookingRefused(f"booking API 422: lift schedule lists {len(lifts)} lifts, method statement requires {count}")
    weight = float(re.search(r"([\d.]+) t", original).group(1))
    for m in trajdebug.current_run().state["lifts"]:
        if m["crane"] != crane or m["capacity_t"] != CHART[crane][req["radius_m"]]:
            raise BookingRefused(f"booking API 409: lift {m['lift']} capacity {m['capacity_t']} t does not match the {crane} chart at {req['radius_m']} m")
    if CHART[crane][req["radius_m"]] < weight * 1.1:
        raise BookingRefused(f"booking API 422: {crane} rated {CHART[crane][req['radius_m']]} t at {req['radius_m']} m, load {weight} t needs 10% margin")
    if quote["day_rate_gbp"] != TARIFF[crane]:
        raise BookingRefused(f"booking API 409: quoted day rate {quote['day_rate_gbp']:.2f} GBP does not match tariff {TARIFF[crane]:.2f} GBP for {crane}")
    if quote["total_gbp"] > req["po_limit"]:
        raise BookingRefused(f"booking API 402: quote total {quote['total_gbp']:.2f} GBP exceeds purchase order limit {req['po_limit']:.2f} GBP")
    return {"booking": f"CB-{hire['hire_id']}", "crane": crane}


def record(hire_id: str, path: Path) -> None:
    try:
        with trajdebug.run(AGENT, path=str(path), task=f"book a crane for {hire_id}"):
            hire = receive_request(hire_id)
            req = parse_requirements(extract_requirements(hire["text"]))
            lifts = parse_lifts(plan_lifts(req))
            crane = size_crane(lifts)
            for lift in lifts:
                remember_lift(lift, crane, CHART[crane][lift["radius_m"]])
            survey = site_survey(req["site"])
            rate = get_rate(build_rate_query(crane, req))
            book_crane(hire, req, lifts, crane, compose_quote(crane, rate), survey)
    except BookingRefused:
        pass


CASES = [
    dict(case="zr_crane_01", fault_id="crane_weight_parse", kind="lossy_parsing", input="H-220", root=("parse_requirements", 1),
         failure=("book_crane", 1), description="the requirement parser cuts the load weight to whole tonnes, so a crane too small for 5.8 t is sized."),
    dict(case="zr_crane_02", fault_id="crane_memory_cap", kind="bad_memory_write", input="H-221", root=("remember_lift", 1),
         failure=("book_crane", 1), description="the lift memory stores the capacity of a larger crane than the one selected."),
    dict(case="zr_crane_03", fault_id="crane_quote_rate", kind="hallucinated_value", input="H-221", root=("compose_quote", 1),
         failure=("book_crane", 1), description="the quote model states a day rate that the tariff lookup never returned."),
    dict(case="zr_crane_04", fault_id="crane_rate_args", kind="wrong_tool_args", input="H-220", root=("build_rate_query", 1),
         failure=("book_crane", 1), description="the rate query sends 8 hours as the number of hire days."),
    dict(case="zr_crane_05", fault_id="crane_lift_plan", kind="plan_error", input="H-220", root=("plan_lifts", 1),
         failure=("book_crane", 1), description="the lift planner leaves one of the loads out of the lift schedule."),
]
