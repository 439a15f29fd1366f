"""Llama trekking farm: books guided llama walks (sdk route: trajdebug decorators and step blocks, JSONL)."""

from __future__ import annotations

import json
import math
import re

import kit
from common import ask, chat_brain, client_for

import trajdebug

NAME, ROUTE, DOMAIN = "llama-walks", "sdk", "a llama trekking farm's walks"
SHAPE = "extract+parse, catalog retrieval (retried), state, route-planner sub-agent (llm, parse, leg loop), roster loop, pricing, confirmation llm, validator"

WALKS = {
    "Ridge": {"distance_km": 8.0, "min_age": 10, "price_pp": 45.0},
    "Meadow": {"distance_km": 4.5, "min_age": 5, "price_pp": 30.0},
    "Moorland": {"distance_km": 11.0, "min_age": 14, "price_pp": 60.0},
}
LEGS = {  # surveyed leg lengths in km
    ("Farm", "Beacon"): 2.6, ("Beacon", "Ridge Cairn"): 2.9, ("Ridge Cairn", "Farm"): 2.5,
    ("Farm", "Millpond"): 1.5, ("Millpond", "Orchard"): 1.4, ("Orchard", "Farm"): 1.6,
    ("Farm", "High Tor"): 3.5, ("High Tor", "Bog Bridge"): 4.0, ("Bog Bridge", "Farm"): 3.5,
}
ROUTES = {"Ridge": ["Farm", "Beacon", "Ridge Cairn", "Farm"], "Meadow": ["Farm", "Millpond", "Orchard", "Farm"],
          "Moorland": ["Farm", "High Tor", "Bog Bridge", "Farm"]}
ROSTER = ["Dolly", "Pablo", "Biscuit", "Nutmeg", "Inca", "Rocco"]
REQUESTS = {
    "LW-101": {"walk": "Ridge", "date": "2026-05-14", "ages": [41, 39, 12, 10]},
    "LW-102": {"walk": "Meadow", "date": "2026-05-16", "ages": [35, 33, 7, 5, 68]},
    "LW-103": {"walk": "Moorland", "date": "2026-05-20", "ages": [28, 30, 27]},
    "LW-104": {"walk": "Ridge", "date": "2026-06-02", "ages": [55, 52, 19, 16, 44, 47]},
    "LW-105": {"walk": "Meadow", "date": "2026-06-05", "ages": [61, 60]},
}
INPUTS = [
    "Request LW-101: Hi, four of us (ages 41, 39, 12 and 10) would love the Ridge walk on 14 May 2026.",
    "Request LW-102: Family group for the Meadow walk, 16 May 2026: grandad 68, us two (35, 33), kids 7 and 5.",
    "Request LW-103: Three friends (28, 30, 27) for the Moorland trek on 20 May 2026 please.",
    "Request LW-104: Work team of six, ages 55, 52, 19, 16, 44, 47, Ridge walk 2 June 2026.",
    "Request LW-105: A couple (61 and 60), Meadow walk on 5 June 2026, anniversary treat.",
]
CASES = [
    {"case": "zzp_llama_1", "input": 0, "kind": "unit_error", "root": ("measure_leg", 1),
     "failure": ("validate_walk_booking", 1),
     "description": "The leg survey tool answers the first Ridge leg in miles while the route total adds it as km."},
    {"case": "zzp_llama_2", "input": 1, "kind": "off_by_one", "root": ("assign_llamas", 1),
     "failure": ("validate_walk_booking", 1),
     "description": "Llama assignment floors walkers/2 instead of rounding up, one llama short for five walkers."},
    {"case": "zzp_llama_3", "input": 3, "kind": "bad_memory_write", "root": ("remember_booking", 1),
     "failure": ("validate_walk_booking", 1),
     "description": "The booking memory stores only the adult walkers, so the price read from it later undercounts the party."},
    {"case": "zzp_llama_4", "input": 2, "kind": "stale_data", "root": ("fetch_weather", 1),
     "failure": ("validate_walk_booking", 1),
     "description": "The forecast tool serves last week's cached forecast for the trek, not the walk date's."},
    {"case": "zzp_llama_5", "input": 4, "kind": "plan_error", "root": ("draft_route", 1),
     "failure": ("validate_walk_booking", 1),
     "description": "The route planner's model plans the Meadow walk without the leg back to the farm."},
]


def _brain(text: str):
    ref = re.search(r"LW-\d+", text).group(0)
    return ref, REQUESTS[ref]


def _extract(text: str) -> str:
    ref, req = _brain(text)
    return json.dumps({"ref": ref, "walk": req["walk"], "date": req["date"], "ages": req["ages"]})


def _route(text: str) -> str:
    walk = json.loads(text)["walk"]
    stops = ROUTES[walk]
    legs = [{"from": a, "to": b} for a, b in zip(stops, stops[1:])]
    if kit.on("zzp_llama_5"):
        legs = legs[:-1]
    return json.dumps({"walk": walk, "legs": legs})


def _confirm(text: str) -> str:
    b = json.loads(text)
    return (f"Dear walkers, your {b['walk']} llama walk on {b['date']} is confirmed for {b['walkers']} people "
            f"with {', '.join(b['llamas'])}. Total due: GBP {b['total']:.2f}.")


BRAIN = chat_brain({"Extract": _extract, "Plan": _route, "Write": _confirm})


@trajdebug.step(kind="input")
def read_request(text: str) -> str:
    return text


def _llm(client, system, user):
    return ask(client, "fake-model", system, user)


@trajdebug.step(kind="parse")
def parse_booking(answer: str) -> dict:
    data = json.loads(answer)
    return {"ref": data["ref"], "walk": data["walk"], "date": data["date"], "ages": [int(a) for a in data["ages"]]}


_ATTEMPTS = {"catalog": 0}


@trajdebug.retry(attempts=3, on=(TimeoutError,))
@trajdebug.step(kind="retrieval")
def fetch_walk(walk: str) -> dict:
    _ATTEMPTS["catalog"] += 1
    if _ATTEMPTS["catalog"] == 1:  # the walk catalog's first request of the day times out
        raise TimeoutError("walk catalog did not answer within 3 s")
    return {"walk": walk, **WALKS[walk]}


@trajdebug.step(kind="state")
def remember_booking(booking: dict, walk: dict) -> dict:
    walkers = len(booking["ages"])
    if kit.on("zzp_llama_3"):
        walkers = sum(1 for age in booking["ages"] if age >= 18)
    memo = {"ref": booking["ref"], "walk": booking["walk"], "date": booking["date"], "walkers": walkers,
            "price_pp": walk["price_pp"]}
    trajdebug.current_run().state["booking"] = memo
    return memo


@trajdebug.step(kind="tool")
def fetch_weather(date: str) -> dict:
    forecast_for = date
    if kit.on("zzp_llama_4"):
        y, m, d = (int(x) for x in date.split("-"))
        forecast_for = f"{y:04d}-{m:02d}-{d - 7:02d}"  # served from the forecast cache
    return {"date": forecast_for, "wind_mph": 14, "rain_mm": 1.2, "warning": None}


@trajdebug.step(kind="condition")
def weather_ok(forecast: dict) -> bool:
    return forecast["warning"] is None and forecast["wind_mph"] < 35


@trajdebug.step(kind="parse")
def parse_route(answer: str) -> list:
    return json.loads(answer)["legs"]


@trajdebug.step(kind="tool")
def measure_leg(leg: dict) -> dict:
    km = LEGS[(leg["from"], leg["to"])]
    if kit.on("zzp_llama_1") and leg["from"] == "Farm":
        return {"from": leg["from"], "to": leg["to"], "distance": round(km / 1.609, 2)}  # survey API in miles
    return {"from": leg["from"], "to": leg["to"], "distance": km}


@trajdebug.step(kind="other")
def total_route(measured: list) -> dict:
    return {"stops": [m["from"] for m in measured] + [measured[-1]["to"]],
            "distance_km": round(sum(m["distance"] for m in measured), 2)}


@trajdebug.step(kind="tool")
def fetch_llama_roster(date: str) -> list:
    return [{"name": n, "working": n != "Inca"} for n in ROSTER]


@trajdebug.step(kind="tool")
def check_llama(name: str) -> dict:
    return {"name": name, "fit": name not in ("Rocco",), "last_vet": "2026-04-02"}


@trajdebug.step(kind="other")
def assign_llamas(fit: list, walkers: int) -> list:
    needed = math.ceil(walkers / 2)
    if kit.on("zzp_llama_2"):
        needed = walkers // 2
    chosen = [f["name"] for f in fit][:needed]
    trajdebug.current_run().state["llamas"] = chosen
    return chosen


@trajdebug.step(kind="other")
def price_walk() -> dict:
    memo = trajdebug.current_run().state["booking"]
    return {"ref": memo["ref"], "walkers": memo["walkers"], "total": round(memo["walkers"] * memo["price_pp"], 2)}


@trajdebug.step(kind="condition")
def validate_walk_booking(booking: dict, walk: dict, route: dict, forecast: dict, llamas: list, price: dict,
                          letter: str) -> str:
    walkers = len(booking["ages"])
    if route["stops"][0] != "Farm" or route["stops"][-1] != "Farm":
        raise ValueError(f"route {' > '.join(route['stops'])} does not return to the farm")
    if abs(route["distance_km"] - walk["distance_km"]) > 0.1 * walk["distance_km"]:
        raise ValueError(f"planned route is {route['distance_km']} km, the {walk['walk']} walk is "
                         f"{walk['distance_km']} km")
    if forecast["date"] != booking["date"]:
        raise ValueError(f"weather clearance dated {forecast['date']} for a walk on {booking['date']}")
    if len(llamas) < math.ceil(walkers / 2):
        raise ValueError(f"{len(llamas)} llamas for {walkers} walkers (one llama per two walkers)")
    if abs(price["total"] - walkers * walk["price_pp"]) > 0.01:
        raise ValueError(f"total GBP {price['total']:.2f} does not match {walkers} walkers at "
                         f"GBP {walk['price_pp']:.2f}")
    if any(age < walk["min_age"] for age in booking["ages"]):
        raise ValueError(f"a walker is under the minimum age of {walk['min_age']}")
    return "ok"


def record(server, inp: str, path: str) -> None:
    server.use(BRAIN)
    client = client_for(server)
    _ATTEMPTS["catalog"] = 0
    try:
        with trajdebug.run(NAME, path=path, task=inp[:60]):
            text = read_request(inp)
            with trajdebug.step("extract_booking", kind="llm", input={"messages": [
                    {"role": "system", "content": "Extract: the booking as JSON (ref, walk, date, ages)."},
                    {"role": "user", "content": text}]}) as s:
                s.output = _llm(client, "Extract: the booking as JSON (ref, walk, date, ages).", text)
            booking = parse_booking(s.output)
            walk = fetch_walk(booking["walk"])
            remember_booking(booking, walk)
            roster = fetch_llama_roster(booking["date"])
            fit = []
            for llama in roster:
                if llama["working"]:
                    result = check_llama(llama["name"])
                    if result["fit"]:
                        fit.append(result)
            llamas = assign_llamas(fit, trajdebug.current_run().state["booking"]["walkers"])
            with trajdebug.step("route_planner", kind="agent", input=walk):
                ask_route = json.dumps({"walk": walk["walk"], "distance_km": walk["distance_km"]})
                with trajdebug.step("draft_route", kind="llm", input={"messages": [
                        {"role": "system", "content": "Plan: the legs of the walk, starting and ending at the farm."},
                        {"role": "user", "content": ask_route}]}) as r:
                    r.output = _llm(client, "Plan: the legs of the walk, starting and ending at the farm.", ask_route)
                legs = parse_route(r.output)
                measured = [measure_leg(leg) for leg in legs]
                route = total_route(measured)
            forecast = fetch_weather(booking["date"])
            if not weather_ok(forecast):
                raise ValueError(f"walk on {booking['date']} cancelled for weather")
            price = price_walk()
            facts = json.dumps({"walk": booking["walk"], "date": booking["date"], "walkers": price["walkers"],
                                "llamas": llamas, "total": price["total"]})
            with trajdebug.step("draft_confirmation", kind="llm", input={"messages": [
                    {"role": "system", "content": "Write: a short confirmation letter."},
                    {"role": "user", "content": facts}]}) as c:
                c.output = _llm(client, "Write: a short confirmation letter.", facts)
            validate_walk_booking(booking, walk, route, forecast, llamas, price, c.output)
    except ValueError:
        pass

