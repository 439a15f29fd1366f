"""Snow-plough routing (sdk route): plans plough routes for a storm and dispatches them to the depot."""
from __future__ import annotations

import json

import trajdebug
from openai import OpenAI

from . import fakellm
from .kit import active

AGENT = "snow-plough-router"
ROUTE = "sdk"

FORECASTS = {
    "S-14": "snowfall 6 in over 10 h; low -4 C; warning amber",
    "S-15": "snowfall 3 in over 6 h; low -2 C; warning yellow",
    "S-16": "snowfall 9 in over 14 h; low -7 C; warning amber",
    "S-17": "snowfall 2 in over 4 h; low -1 C; warning yellow",
    "S-18": "snowfall 5 in over 8 h; low -3 C; warning amber",
}
FLEET = {
    "North": [{"id": "P1", "blade": "wide", "range_km": 40}, {"id": "P2", "blade": "wide", "range_km": 40},
              {"id": "P3", "blade": "narrow", "range_km": 30}, {"id": "P4", "blade": "narrow", "range_km": 30}],
    "South": [{"id": "P5", "blade": "wide", "range_km": 45}, {"id": "P6", "blade": "narrow", "range_km": 30},
              {"id": "P8", "blade": "wide", "range_km": 45}, {"id": "P9", "blade": "narrow", "range_km": 35}],
}
STREETS = {
    "Elm": {"km": 22.0, "streets": ["Elm Rd", "Elm Close", "Mill Lane"]},
    "Birch": {"km": 18.5, "streets": ["Birch Ave", "Station Rd"]},
    "Birchwood": {"km": 31.0, "streets": ["Birchwood Way", "Quarry Hill", "Top Lane"]},
    "Cedar": {"km": 25.0, "streets": ["Cedar St", "Market Sq"]},
    "Dock": {"km": 12.0, "streets": ["Dock Rd", "Wharf St"]},
    "Ash": {"km": 20.0, "streets": ["Ash Grove", "School Lane"]},
    "Oak": {"km": 16.0, "streets": ["Oak Rd", "Church St"]},
    "Pine": {"km": 27.0, "streets": ["Pine Ridge", "Hill Top"]},
}
WARNINGS = {k: v.rsplit("warning ", 1)[1] for k, v in FORECASTS.items()}

INPUTS = {
    "main": {"storm": "S-14", "depot": "North", "districts": ["Elm", "Birch", "Cedar", "Dock"]},
    "ref1": {"storm": "S-15", "depot": "South", "districts": ["Ash", "Oak", "Pine"]},
    "ref2": {"storm": "S-16", "depot": "North", "districts": ["Cedar", "Oak", "Dock", "Ash"]},
    "ref3": {"storm": "S-17", "depot": "South", "districts": ["Elm", "Pine"]},
    "ref4": {"storm": "S-18", "depot": "North", "districts": ["Birch", "Ash", "Elm"]},
}

FAULTS = {
    "snow_unit": dict(kind="unit_error", root=("parse_forecast", 1), failure=("dispatch_routes", 1), hops=2,
                      description="parse_forecast reads the snowfall in inches as centimetres, so the salt plan "
                                  "is classed light and the depot rejects it under an amber warning."),
    "snow_obo": dict(kind="off_by_one", root=("parse_priority", 1), failure=("dispatch_routes", 1), hops=3,
                     description="parse_priority slices the district order one short, so the last district "
                                 "never gets a route and dispatch finds it uncovered."),
    "snow_mem": dict(kind="bad_memory_write", root=("remember_fleet", 1), failure=("dispatch_routes", 1), hops=4,
                     description="remember_fleet keys the fleet by blade type, collapsing ploughs, so one plough "
                                 "is given two districts and exceeds its shift range at dispatch."),
    "snow_hall": dict(kind="hallucinated_value", root=("choose_plough", 3), failure=("dispatch_routes", 1), hops=2,
                      description="the third choose_plough answer names plough P7, which is not in the depot "
                                  "fleet, and dispatch rejects the unknown plough."),
    "snow_retr": dict(kind="wrong_retrieval", root=("lookup_streets", 3), failure=("dispatch_routes", 1), hops=3,
                      description="the third lookup_streets returns the streets of Birchwood for Birch, so the "
                                  "dispatched route lists streets outside the district."),
}


def policy(messages, tools):
    system = messages[0]["content"]
    user = fakellm.last_user(messages)
    if "priority" in system:
        req = json.loads(user)
        order = sorted(req["districts"], key=lambda d: -STREETS[d]["km"])
        return json.dumps({"order": order, "reason": "longest routes first"})
    req = json.loads(user)
    free = [p for p in req["free_ploughs"]]
    if active("snow_hall") and req["call"] == 3:
        return json.dumps({"plough": "P7", "note": "wide blade suits the hills"})
    best = sorted(free, key=lambda p: (-p["range_km"], p["id"]))[0]
    return json.dumps({"plough": best["id"], "note": f"{best['blade']} blade, {best['range_km']} km range"})


def run_agent(client: OpenAI, inp: dict, path: str) -> None:
    def chat(system, user):
        r = client.chat.completions.create(model="gpt-4o-mini", messages=[
            {"role": "system", "content": system}, {"role": "user", "content": user}])
        return r.choices[0].message.content

    @trajdebug.step(kind="input")
    def read_storm_ticket(ticket: dict) -> dict:
        return dict(ticket)

    @trajdebug.step(kind="tool")
    def fetch_forecast(storm: str) -> str:
        return FORECASTS[storm]

    @trajdebug.step(kind="parse")
    def parse_forecast(text: str) -> dict:
        parts = dict(p.strip().split(" ", 1) for p in text.split(";"))
        amount, unit = parts["snowfall"].split(" ")[:2]
        cm = float(amount) * 2.54 if unit == "in" else float(amount)
        if active("snow_unit"):
            cm = float(amount)
        hours = float(parts["snowfall"].split(" over ")[1].split(" ")[0])
        return {"snow_cm": round(cm, 1), "hours": hours, "low_c": float(parts["low"].split(" ")[0]),
                "warning": parts["warning"]}

    @trajdebug.step(kind="tool")
    def load_fleet(depot: str) -> list:
        return [dict(p) for p in FLEET[depot]]

    @trajdebug.step(kind="state")
    def remember_fleet(fleet: list) -> dict:
        key = "blade" if active("snow_mem") else "id"
        table = {p[key]: p for p in fleet}
        trajdebug.current_run().state["fleet"] = table
        return table

    @trajdebug.step(kind="llm")
    def plan_priority(request: dict) -> str:
        return chat("You set district priority for plough routing.", json.dumps(request))

    @trajdebug.step(kind="parse")
    def parse_priority(text: str) -> list:
        order = json.loads(text)["order"]
        return order[:-1] if active("snow_obo") else order[:]

    @trajdebug.step(kind="retrieval")
    def lookup_streets(district: str, call: int) -> dict:
        name = district
        if active("snow_retr") and call == 3:
            name = next(k for k in STREETS if k.startswith(district) and k != district)
        return {"district": district, **STREETS[name]}

    @trajdebug.step(kind="llm")
    def choose_plough(request: dict) -> str:
        return chat("You choose one plough for a district route.", json.dumps(request))

    @trajdebug.step(kind="state")
    def record_route(district: str, streets: dict, answer: str) -> dict:
        run = trajdebug.current_run()
        plough = json.loads(answer)["plough"]
        route = {"district": district, "plough": plough, "km": streets["km"], "streets": streets["streets"]}
        run.state[f"route:{district}"] = route
        used = run.state.setdefault("used_km", {})
        used[plough] = used.get(plough, 0) + streets["km"]
        return route

    @trajdebug.step(kind="other")
    def compute_salt(forecast: dict, routes: list) -> dict:
        klass = "heavy" if forecast["snow_cm"] >= 10 else "light"
        rate = 0.04 if klass == "heavy" else 0.02
        return {"treatment_class": klass, "salt_t": round(sum(r["km"] for r in routes) * rate, 2)}

    @trajdebug.step(kind="tool")
    def dispatch_routes(storm: str, depot: str, districts: list, routes: list, salt: dict) -> dict:
        fleet = {p["id"]: p for p in FLEET[depot]}
        if WARNINGS[storm] == "amber" and salt["treatment_class"] != "heavy":
            raise RuntimeError(f'HTTP 422 {{"error": "treatment_class {salt["treatment_class"]} not permitted '
                               f'under amber warning", "storm": "{storm}"}}')
        covered = {r["district"] for r in routes}
        for d in districts:
            if d not in covered:
                raise RuntimeError(f'HTTP 422 {{"error": "district {d} has no route", "storm": "{storm}"}}')
        km = {}
        for r in routes:
            if r["plough"] not in fleet:
                raise RuntimeError(f'HTTP 404 {{"error": "plough {r["plough"]} not found at depot {depot}"}}')
            expected = set(STREETS[r["district"]]["streets"])
            extra = [s for s in r["streets"] if s not in expected]
            if extra:
                raise RuntimeError(f'HTTP 422 {{"error": "route for {r["district"]} lists streets outside the '
                                   f'district: {", ".join(extra)}"}}')
            km[r["plough"]] = km.get(r["plough"], 0) + r["km"]
        for pid, total in km.items():
            if total > fleet[pid]["range_km"]:
                raise RuntimeError(f'HTTP 409 {{"error": "plough {pid} assigned {total:.1f} km, shift range '
                                   f'{fleet[pid]["range_km"]} km"}}')
        return {"status": "dispatched", "routes": len(routes)}

    with trajdebug.run(AGENT, task=f"route ploughs for storm {inp['storm']}", path=path) as run:
        ticket = read_storm_ticket(inp)
        forecast = parse_forecast(fetch_forecast(ticket["storm"]))
        fleet = load_fleet(ticket["depot"])
        remember_fleet(fleet)
        order = parse_priority(plan_priority({"storm": ticket["storm"], "districts": ticket["districts"],
                                              "forecast": forecast}))
        routes = []
        for i, district in enumerate(order, start=1):
            streets = lookup_streets(district, i)
            with trajdebug.step("free_ploughs", kind="other") as s:
                table = run.state["fleet"]
                used = run.state.get("used_km", {})
                free = [p for p in table.values() if used.get(p["id"], 0) + streets["km"] <= p["range_km"]]
                free = free or list(table.values())
                s.output = free
            answer = choose_plough({"call": i, "district": district, "km": streets["km"], "free_ploughs": free})
            routes.append(record_route(district, streets, answer))
        salt = compute_salt(forecast, routes)
        dispatch_routes(ticket["storm"], ticket["depot"], ticket["districts"], routes, salt)


def record(base_url: str, inp: dict, path: str) -> None:
    client = OpenAI(base_url=base_url, api_key="sk-local-test", max_retries=0)
    try:
        run_agent(client, inp, path)
    except RuntimeError:
        pass
