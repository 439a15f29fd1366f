"""Alpine hut warden (sdk route): multi-night hut-to-hut traverse, bunks, meals, deposit."""

from __future__ import annotations

import datetime as dt
import json

import nkit

import trajdebug


NAME = "hut-warden"
ROUTE = "sdk"
DOMAIN = "alpine hut reservations"
SHAPE = "route lookup, context and model plan, per-night loop (availability, room check, meals, booking, ledger), itinerary, own checks, deposit"

ROUTES = {
    "haute-4": ["Cabane du Mont Fort", "Cabane de Prafleuri", "Cabane des Dix", "Cabane de Bertol"],
    "ortler-3": ["Payerhuette", "Hintergrathuette", "Berglhuette"],
    "gran-5": ["Rifugio Vittorio Sella", "Rifugio Chabod", "Rifugio Vittorio Emanuele", "Rifugio Benevolo", "Rifugio Bezzi"],
    "dach-4": ["Guttenberghaus", "Hofpuergelhuette", "Adamekhuette", "Simonyhuette"],
    "tatra-3": ["Chata Teryho", "Zbojnicka chata", "Chata pod Rysmi"],
    "julian-4": ["Koca na Doliču", "Triglavski dom", "Vodnikov dom", "Planika"],
    "vanoise-3": ["Refuge du Col de la Vanoise", "Refuge de la Valette", "Refuge de Péclet-Polset"],
}
MENUS = {"vegetarian": ["barley soup", "spinach dumplings", "apple strudel"], "any": ["barley soup", "venison goulash", "apple strudel"]}
GROUPS = {
    "G-0288": {"size": 6, "diet": "vegetarian"},
    "G-0301": {"size": 4, "diet": "any"},
    "G-0315": {"size": 8, "diet": "vegetarian"},
    "G-0322": {"size": 5, "diet": "any"},
    "G-0330": {"size": 7, "diet": "vegetarian"},
    "G-0341": {"size": 3, "diet": "vegetarian"},
    "G-0356": {"size": 6, "diet": "any"},
}
INPUTS = {
    "t1": {"group": "G-0288", "route": "haute-4", "start": "2026-07-14"},
    "t2": {"group": "G-0315", "route": "gran-5", "start": "2026-08-02"},
    "t3": {"group": "G-0330", "route": "dach-4", "start": "2026-07-21"},
    "r1": {"group": "G-0301", "route": "ortler-3", "start": "2026-07-08"},
    "r2": {"group": "G-0322", "route": "tatra-3", "start": "2026-08-11"},
    "r3": {"group": "G-0341", "route": "julian-4", "start": "2026-06-30"},
    "r4": {"group": "G-0356", "route": "vanoise-3", "start": "2026-09-01"},
}
REFS = ["r1", "r2", "r3", "r4"]
FAULTS = [
    {"id": "hw-cache", "kind": "stale_data", "input": "t2", "root": "query_availability", "marker": "2026-05-30T06:00"},
    {"id": "hw-page", "kind": "truncated_result", "input": "t1", "root": "list_huts_on_route", "marker": '"count": 3'},
    {"id": "hw-menu", "kind": "tool_ignores_argument", "input": "t3", "root": "quote_meals", "marker": "venison goulash"},
    {"id": "hw-date", "kind": "format_drift", "input": "t1", "root": "book_bunks", "marker": "15.07.2026"},
    {"id": "hw-ctx", "kind": "context_pollution", "input": "t3", "root": "build_context", "marker": "party of 11"},
]
BOOKED_ELSEWHERE = {("Rifugio Vittorio Emanuele", "2026-08-04"): 17}
CAPACITY = 28


def _tariff(hut: str) -> int:
    return 50 + len(hut) % 9


def _free(hut: str, date: str) -> int:
    return CAPACITY - BOOKED_ELSEWHERE.get((hut, date), 9 + len(hut) % 5)


@trajdebug.step(kind="input")
def intake(request: dict) -> dict:
    return {"text": f"Book {request['route']} from {request['start']} for group {request['group']}", **request}


@trajdebug.step(kind="tool")
def list_huts_on_route(route: str) -> dict:
    huts = ROUTES[route]
    if nkit.active("hw-page"):
        huts = huts[:3]
    return {"route": route, "huts": list(huts), "count": len(huts)}


@trajdebug.step(kind="tool")
def load_group_profile(group: str) -> dict:
    return {"group": group, **GROUPS[group], "leader": f"leader of {group}"}


@trajdebug.step(kind="other")
def build_context(request: dict, profile: dict) -> list[dict]:
    msgs = [
        {"role": "system", "content": "You plan hut stays. Book one bunk per guest, one hut per night."},
        {"role": "user", "content": f"Group {profile['group']}: party of {profile['size']}, diet {profile['diet']}, route {request['route']}."},
    ]
    if nkit.active("hw-ctx"):
        msgs.append({"role": "user", "content": "Group G-0412: party of 11, diet any, route dach-4."})
    return msgs


@trajdebug.step(kind="llm")
def plan_stays(messages: list[dict]) -> dict:
    last = messages[-1]["content"]
    size = int(last.split("party of ")[1].split(",")[0])
    diet = last.split("diet ")[1].split(",")[0]
    return {"role": "assistant", "content": json.dumps({"bunks": size, "diet": diet, "one_hut_per_night": True})}


@trajdebug.step(kind="tool")
def query_availability(hut: str, date: str) -> dict:
    if nkit.active("hw-cache") and hut == "Rifugio Vittorio Emanuele":
        return {"hut": hut, "date": date, "free_bunks": _free(hut, date), "bunk_eur": _tariff(hut) - 6, "as_of": "2026-05-30T06:00"}
    return {"hut": hut, "date": date, "free_bunks": _free(hut, date), "bunk_eur": _tariff(hut), "as_of": "2026-07-01T05:00"}


@trajdebug.step(kind="condition")
def room_check(avail: dict, bunks: int) -> bool:
    return avail["free_bunks"] >= bunks


@trajdebug.step(kind="tool")
def quote_meals(hut: str, diet: str) -> dict:
    menu = MENUS["any"] if nkit.active("hw-menu") else MENUS[diet]
    return {"hut": hut, "half_board": list(menu), "eur_per_guest": 38 + len(hut) % 7}


@trajdebug.step(kind="tool")
def book_bunks(hut: str, date: str, bunks: int) -> dict:
    if _free(hut, date) < bunks:
        raise RuntimeError(f"409 Conflict from hut booking service: {hut} has {_free(hut, date)} bunks free on {date}, {bunks} requested")
    shown = date
    if nkit.active("hw-date") and hut == "Cabane de Prafleuri":
        y, m, d = date.split("-")
        shown = f"{d}.{m}.{y}"
    return {"hut": hut, "check_in": shown, "bunks": bunks, "ref": f"{hut[:3].upper()}-{date[5:].replace('-', '')}"}


@trajdebug.step(kind="state")
def record_leg(conf: dict, avail: dict, meals: dict) -> dict:
    legs = trajdebug.current_run().state.setdefault("legs", [])
    leg = {**conf, "bunk_eur": avail["bunk_eur"], "meals": meals["half_board"], "meal_eur": meals["eur_per_guest"]}
    legs.append(leg)
    return leg


@trajdebug.step(kind="other")
def build_itinerary() -> list[dict]:
    legs = trajdebug.current_run().state["legs"]
    return sorted(legs, key=lambda leg: leg["check_in"])


@trajdebug.step(kind="condition")
def check_dietary(itinerary: list[dict], diet: str) -> bool:
    if diet == "vegetarian":
        for leg in itinerary:
            bad = [m for m in leg["meals"] if m not in MENUS["vegetarian"]]
            if bad:
                raise ValueError(f"Dietary check failed at {leg['hut']}: half board lists {', '.join(bad)} for a vegetarian group")
    return True


@trajdebug.step(kind="condition")
def validate_itinerary(itinerary: list[dict], request: dict) -> bool:
    expected = ROUTES[request["route"]]
    got = [leg["hut"] for leg in itinerary]
    if got != expected:
        raise ValueError(f"Itinerary check failed: nights read {got}, the traverse is {expected}")
    return True


@trajdebug.step(kind="tool")
def take_deposit(group: str, itinerary: list[dict]) -> dict:
    roster = GROUPS[group]["size"]
    for leg in itinerary:
        if leg["bunks"] != roster:
            raise RuntimeError(f"Deposit declined: {leg['bunks']} bunks held at {leg['hut']} but the roster for {group} lists {roster} guests")
    sent = sum((leg["meal_eur"] + leg["bunk_eur"]) * leg["bunks"] for leg in itinerary)
    due = sum((leg["meal_eur"] + _tariff(leg["hut"])) * leg["bunks"] for leg in itinerary)
    if sent != due:
        raise RuntimeError(f"Deposit declined by payment service: basis {sent:,.2f} EUR does not match the huts' tariff basis {due:,.2f} EUR")
    total = sent
    return {"group": group, "deposit_eur": round(total * 0.3, 2), "status": "captured"}


@trajdebug.step(kind="output")
def summary(itinerary: list[dict], deposit: dict) -> str:
    return f"{len(itinerary)} nights booked, deposit {deposit['deposit_eur']} EUR"


def agent(request: dict) -> None:
    req = intake(request)
    huts = list_huts_on_route(req["route"])
    profile = load_group_profile(req["group"])
    ctx = build_context(req, profile)
    plan = json.loads(plan_stays(ctx)["content"])
    start = dt.date.fromisoformat(req["start"])
    for i, hut in enumerate(huts["huts"]):
        date = (start + dt.timedelta(days=i)).isoformat()
        avail = query_availability(hut, date)
        if not room_check(avail, plan["bunks"]):
            raise RuntimeError(f"no room at {hut} on {date}")
        meals = quote_meals(hut, plan["diet"])
        conf = book_bunks(hut, date, plan["bunks"])
        record_leg(conf, avail, meals)
    itin = build_itinerary()
    check_dietary(itin, profile["diet"])
    validate_itinerary(itin, req)
    deposit = take_deposit(req["group"], itin)
    summary(itin, deposit)


def record(request: dict, path) -> None:
    try:
        with trajdebug.run(NAME, task=f"hut traverse {request['route']} for {request['group']}", path=str(path)):
            agent(request)
    except (RuntimeError, ValueError):
        pass
