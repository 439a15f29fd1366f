"""E-bike hire shop (openai_agents route, Responses API): group hire with bike search, battery checks, route sub-agent, contract."""
from __future__ import annotations

import ast
import json

from agents import Agent, function_tool

import _rt
import kit

NAME, ROUTE, DOMAIN = "ebike-hire-shop", "openai_agents", "an e-bike hire shop"
SHAPE = "Agent + Runner (Responses API): bike search, parallel battery checks, route-advisor sub-agent (as tool), customer file, pricing, rider form, contract, validator tool"

ROUTES = {"Lakeside Loop": 38, "Lakeside Loop Short": 22, "Vineyard Climb": 36, "Vineyard Climb Lite": 30,
          "River Path": 26, "River Path Extended": 40, "Forest Ridge": 34, "Forest Ridge Lite": 28}
RATE = {"trekking": 39.0, "mountain": 49.0, "cargo": 55.0}


def _bikes(i: int) -> list[dict]:
    out = []
    for k in range(10):
        out.append({"bike": f"EB-{300 + i * 10 + k}", "type": ["trekking", "mountain"][(i + k) % 2],
                    "battery_wh": [500, 625, 750][(i + k) % 3], "health": round(0.95 - 0.01 * k, 2)})
    return out


def _input(i: int) -> dict:
    names = ["Ana Ruiz", "Bo Lind", "Chidi Eze", "Dana O'Neil", "Eli Marsh", "Fay Wong", "Gus Petit", "Hana Sato"]
    riders = [names[(i + k) % 8] for k in range(3 + i % 2)]
    return {"customer": f"C-{880 + i}", "type": ["trekking", "mountain"][i % 2], "days": 2 + i % 3,
            "route": list(ROUTES)[(2 * i) % 8], "riders": riders, "date": f"2025-07-{3 + i:02d}"}


INPUTS = [_input(i) for i in range(5)]
CASES = [
    {"id": "eb_c1", "input": 0, "fault_kind": "tool_ignores_argument", "root": "price_hire", "occ": 1, "failure": "validate_contract",
     "description": "price_hire ignores the days argument and prices a single day of hire."},
    {"id": "eb_c2", "input": 1, "fault_kind": "wrong_retrieval", "root": "get_route", "occ": 1, "failure": "validate_contract",
     "description": "get_route returns the short variant of the requested route, so the contract insures a shorter distance than the ride."},
    {"id": "eb_c3", "input": 2, "fault_kind": "swallowed_error", "root": "check_battery", "occ": 3, "failure": "validate_contract",
     "description": "check_battery catches a failed battery read and reports full health, so a worn battery goes out on hire."},
    {"id": "eb_c4", "input": 3, "fault_kind": "lossy_parsing", "root": "add_riders", "occ": 1, "failure": "validate_contract",
     "description": "add_riders splits the rider form on apostrophes as well as commas, turning one rider into two and dropping her waiver match."},
    {"id": "eb_c5", "input": 4, "fault_kind": "context_pollution", "root": "get_customer", "occ": 1, "failure": "validate_contract",
     "description": "get_customer lists another customer's reservation first in the file, and the model prices the hire for that reservation's days."},
]

_CUR: dict = {}


def _route_km(name: str) -> int:
    return ROUTES[name]


@function_tool
def get_customer(customer: str) -> dict:
    """Customer file: deposit on file and open reservations."""
    inp = _CUR["inp"]
    reservations = [{"customer": customer, "start": inp["date"], "days": inp["days"], "riders": len(inp["riders"])}]
    if kit.on("eb_c5"):
        reservations.insert(0, {"customer": "C-870", "start": inp["date"], "days": inp["days"] + 2, "riders": 2})
    return {"customer": customer, "deposit_on_file": True, "reservations": reservations}


@function_tool
def search_bikes(bike_type: str, count: int, date: str) -> list:
    """Free bikes of a type on a date."""
    return [b for b in _bikes(int(_CUR["inp"]["customer"][-1])) if b["type"] == bike_type][:count]


@function_tool
def check_battery(bike: str) -> dict:
    """Battery health from the bike's BMS."""
    b = next(x for x in _bikes(int(_CUR["inp"]["customer"][-1])) if x["bike"] == bike)
    health = b["health"]
    n = _CUR["batt"] = _CUR.get("batt", 0) + 1
    if n == 3 and kit.on("eb_c3"):
        try:
            raise ConnectionError("BMS read timed out")
        except ConnectionError:
            health = 1.0
        _CUR["worn"] = bike
    return {"bike": bike, "health": health, "battery_wh": b["battery_wh"]}


@function_tool
def price_hire(bikes: list[str], days: int, bike_type: str) -> dict:
    """Hire price for bikes over a number of days."""
    d = 1 if kit.on("eb_c1") else days
    return {"bikes": len(bikes), "days": days, "total": round(RATE[bike_type] * len(bikes) * d, 2)}


@function_tool
def get_route(name: str) -> dict:
    """Look up a route by name: distance and climb."""
    key = name
    if kit.on("eb_c2"):
        key = next(k for k in ROUTES if k.startswith(name) and k != name)
    return {"route": key, "km": ROUTES[key]}


@function_tool
def add_riders(form: str) -> list:
    """Read the group's rider form (names separated by commas)."""
    parts = form.replace("'", ",").split(",") if kit.on("eb_c4") else form.split(",")
    return [p.strip() for p in parts if p.strip()]


@function_tool
def create_contract(customer: str, bikes: list[str], riders: list[str], total: float, route: str, route_km: int) -> dict:
    """Create the hire contract (the declared distance goes on the insurance cover)."""
    _CUR["contract"] = {"customer": customer, "bikes": bikes, "riders": riders, "total": total, "route": route, "km": route_km}
    return {"contract": f"HC-{customer[-3:]}", "status": "draft"}


@function_tool(failure_error_function=None)
def validate_contract(contract: str) -> dict:
    """Check the contract against the shop's hire rules."""
    c, inp = _CUR["contract"], _CUR["inp"]
    fleet = {b["bike"]: b for b in _bikes(int(inp["customer"][-1]))}
    if len(c["bikes"]) != len(inp["riders"]):
        raise ValueError(f"{contract}: {len(c['bikes'])} bikes for {len(inp['riders'])} riders")
    for b in c["bikes"]:
        if fleet[b]["type"] != inp["type"]:
            raise ValueError(f"{contract}: {b} is a {fleet[b]['type']} bike, the customer booked {inp['type']}")
        if b == _CUR.get("worn") or fleet[b]["health"] < 0.85:
            raise ValueError(f"{contract}: {b} battery health below the 85% hire minimum")
        if fleet[b]["battery_wh"] / 12 < _route_km(inp["route"]):
            raise ValueError(f"{contract}: {b} ({fleet[b]['battery_wh']} Wh) cannot ride {inp['route']} ({_route_km(inp['route'])} km)")
    if c["km"] != _route_km(inp["route"]):
        raise ValueError(f"{contract}: insured distance {c['km']} km, {inp['route']} is {_route_km(inp['route'])} km")
    if sorted(c["riders"]) != sorted(inp["riders"]):
        raise ValueError(f"{contract}: riders {c['riders']} do not match the signed waivers {inp['riders']}")
    due = round(RATE[inp["type"]] * len(inp["riders"]) * inp["days"], 2)
    if abs(c["total"] - due) > 0.01:
        raise ValueError(f"{contract}: total {c['total']} EUR, {len(inp['riders'])} bikes x {inp['days']} days gives {due} EUR")
    return {"contract": contract, "valid": True}


def _outputs(request) -> list:
    out = []
    for item in request.body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            try:
                out.append(ast.literal_eval(item["output"]))
            except (ValueError, SyntaxError):
                out.append(item["output"])
    return out


def _user(request) -> str:
    inp = request.body.get("input")
    if isinstance(inp, str):
        return inp
    for item in inp or []:
        if isinstance(item, dict) and item.get("role") == "user":
            c = item.get("content")
            return c if isinstance(c, str) else " ".join(p.get("text", "") for p in c)
    return ""


def _policy(inp: dict):
    def brain(request):
        from trajdebug.testing import Reply, tool_call
        res = _outputs(request)
        if str(request.body.get("instructions") or "").startswith("You advise on routes"):
            ask = json.loads(_user(request))
            if not res:
                return Reply(tool_calls=(tool_call("get_route", {"name": ask["route"]}),))
            km = res[0]["km"]
            ok = [b["bike"] for b in ask["bikes"] if b["battery_wh"] / 12 >= km]
            return json.dumps({"route": res[0]["route"], "km": km, "bikes_ok": ok})
        n = len(res)
        if n == 0:
            return Reply(tool_calls=(tool_call("search_bikes", {"bike_type": inp["type"], "count": len(inp["riders"]) + 1, "date": inp["date"]}),))
        bikes = res[0]
        if n == 1:
            return Reply(tool_calls=tuple(tool_call("check_battery", {"bike": b["bike"]}) for b in bikes))
        checks = res[1:1 + len(bikes)]
        good = [c for c in checks if c["health"] >= 0.85][:len(inp["riders"])]
        ids = [c["bike"] for c in good]
        rest = res[1 + len(bikes):]
        if not rest:
            ask = {"route": inp["route"], "bikes": [{"bike": c["bike"], "battery_wh": c["battery_wh"]} for c in good]}
            return Reply(tool_calls=(tool_call("route_advisor", {"input": json.dumps(ask)}),))
        if len(rest) == 1:
            return Reply(tool_calls=(tool_call("get_customer", {"customer": inp["customer"]}),))
        if len(rest) == 2:
            days = rest[1]["reservations"][0]["days"]
            return Reply(tool_calls=(tool_call("price_hire", {"bikes": ids, "days": days, "bike_type": inp["type"]}),))
        if len(rest) == 3:
            return Reply(tool_calls=(tool_call("add_riders", {"form": ", ".join(inp["riders"])}),))
        if len(rest) == 4:
            advice = json.loads(rest[0]) if isinstance(rest[0], str) else rest[0]
            chosen = [b for b in ids if b in advice["bikes_ok"]]
            return Reply(tool_calls=(tool_call("create_contract", {"customer": inp["customer"], "bikes": chosen, "riders": rest[3],
                                                                   "total": rest[2]["total"], "route": inp["route"],
                                                                   "route_km": advice["km"]}),))
        if len(rest) == 5:
            return Reply(tool_calls=(tool_call("validate_contract", {"contract": rest[4]["contract"]}),))
        return f"Contract {rest[4]['contract']} ready for {inp['customer']}."
    return brain


def _agent(model: str) -> Agent:
    advisor = Agent(name="route-advisor", instructions="You advise on routes: check each bike's range against the route.",
                    model=model, tools=[get_route])
    return Agent(name="hire-desk", instructions="You run group e-bike hires. Use the tools.", model=model,
                 tools=[get_customer, search_bikes, check_battery, price_hire,
                        advisor.as_tool(tool_name="route_advisor", tool_description="Check bikes against a route."),
                        add_riders, create_contract, validate_contract])


def record(inp: dict, path: str) -> None:
    _CUR.clear()
    _CUR["inp"] = inp
    _rt.SERVER.use(_policy(inp))
    _rt.oa_run(_agent(_rt.SERVER.model), f"Group hire for {inp['customer']}: {len(inp['riders'])} riders, {inp['days']} days, {inp['route']}.",
               NAME, f"group hire for {inp['customer']}", path, api="responses")
