"""Limousine hire bookings (openai_agents route, Chat Completions): itinerary, fleet, quotes, chauffeur sub-agent, confirmation."""
from __future__ import annotations

import ast
import json

from agents import Agent, function_tool

import _rt
import kit

NAME, ROUTE, DOMAIN = "limo-hire-desk", "openai_agents", "a limousine hire's bookings"
SHAPE = "Agent + Runner: request lookup, itinerary, per-leg fleet check and quote, chauffeur sub-agent (as tool), confirmation, validator tool"

FLEET = [{"vehicle": "Sedan S-1", "seats": 3, "rate": 65}, {"vehicle": "Stretch L-8", "seats": 8, "rate": 120},
         {"vehicle": "Party bus P-14", "seats": 14, "rate": 180}]
CHAUFFEURS = {"Sedan S-1": "Marco Bell", "Stretch L-8": "Ines Kroll", "Party bus P-14": "Otto Fane"}


def _input(i: int) -> dict:
    kinds = ["wedding", "airport transfer", "prom night", "corporate roadshow", "stag party"]
    legs = []
    for k in range(3):
        pax = [2, 7, 12, 3, 6][(i + k) % 5]
        legs.append({"leg": k + 1, "from": ["Hotel Astor", "St Mary's", "Lake House", "Airport T2"][(i + k) % 4],
                     "to": ["Lake House", "Airport T2", "Hotel Astor", "Town Hall"][(i + 2 * k) % 4],
                     "pax": pax, "wait_h": [0, 2, 3][(i + k) % 3], "drive_h": 1 + (i + k) % 2})
    return {"ref": f"LM-{2401 + i}", "event": kinds[i], "date": f"2025-06-{12 + i:02d}", "client": f"client {i + 1}", "legs": legs}


INPUTS = [_input(i) for i in range(5)]
CASES = [
    {"id": "lm_c1", "input": 0, "fault_kind": "wrong_tool_args", "root": "generation fake-model", "occ": 5, "failure": "validate_booking",
     "description": "The desk model calls check_fleet for leg 2 with leg 1's passenger count, so a sedan is chosen for seven guests."},
    {"id": "lm_c2", "input": 1, "fault_kind": "hallucinated_value", "root": "generation fake-model", "occ": 12, "failure": "validate_booking",
     "description": "The desk model confirms the booking with a total price that none of the quotes add up to."},
    {"id": "lm_c3", "input": 2, "fault_kind": "subagent_wrong_entity", "root": "generation fake-model", "occ": 10, "failure": "validate_booking",
     "description": "The chauffeur sub-agent looks up the first vehicle's driver again in place of the second vehicle it was asked about."},
    {"id": "lm_c4", "input": 3, "fault_kind": "truncated_result", "root": "get_request", "occ": 1, "failure": "validate_booking",
     "description": "get_request returns only the first two legs of the request, so the return leg is never booked."},
    {"id": "lm_c5", "input": 4, "fault_kind": "plan_error", "root": "generation fake-model", "occ": 2, "failure": "validate_booking",
     "description": "The itinerary the model saves leaves out the waiting time of the second leg, so that leg is quoted short."},
]

_CUR: dict = {}


@function_tool
def get_request(ref: str) -> dict:
    """The client's hire request: event, date and legs."""
    req = json.loads(json.dumps(_CUR["inp"]))
    if kit.on("lm_c4"):
        req["legs"] = req["legs"][:2]
    return req


@function_tool
def save_itinerary(ref: str, legs_json: str) -> dict:
    """Save the planned legs, a JSON list of {leg, pax, hours}, for the booking."""
    legs = json.loads(legs_json)
    _CUR["itinerary"] = legs
    return {"ref": ref, "saved_legs": len(legs)}


@function_tool
def check_fleet(date: str, leg: int, passengers: int) -> dict:
    """The smallest free vehicle that seats the passengers."""
    v = next(f for f in FLEET if f["seats"] >= passengers)
    return {"leg": leg, "vehicle": v["vehicle"], "seats": v["seats"], "rate": v["rate"]}


@function_tool
def quote_leg(leg: int, vehicle: str, hours: int) -> dict:
    """Price one leg: hourly rate times hours."""
    rate = next(f["rate"] for f in FLEET if f["vehicle"] == vehicle)
    q = {"leg": leg, "vehicle": vehicle, "hours": hours, "price": rate * hours}
    _CUR.setdefault("quotes", {})[leg] = q
    return q


@function_tool
def find_chauffeur(date: str, vehicle: str) -> dict:
    """The chauffeur licensed and free for this vehicle on the date."""
    return {"date": date, "vehicle": vehicle, "chauffeur": CHAUFFEURS[vehicle]}


@function_tool
def confirm_booking(ref: str, total: float, chauffeurs: list[str]) -> dict:
    """Confirm the booking with the client."""
    _CUR["confirmed"] = {"ref": ref, "total": total, "chauffeurs": chauffeurs}
    return {"ref": ref, "status": "confirmed", "total": total}


@function_tool(failure_error_function=None)
def validate_booking(ref: str) -> dict:
    """Check the confirmed booking against the hire rules."""
    req, quotes, conf = _CUR["inp"], _CUR.get("quotes", {}), _CUR["confirmed"]
    for leg in req["legs"]:
        q = quotes.get(leg["leg"])
        if q is None:
            raise ValueError(f"{ref}: leg {leg['leg']} ({leg['from']} to {leg['to']}) has no vehicle booked")
        seats = next(f["seats"] for f in FLEET if f["vehicle"] == q["vehicle"])
        if seats < leg["pax"]:
            raise ValueError(f"{ref}: leg {leg['leg']} carries {leg['pax']} guests in {q['vehicle']} ({seats} seats)")
        if q["hours"] < leg["drive_h"] + leg["wait_h"]:
            raise ValueError(f"{ref}: leg {leg['leg']} quoted for {q['hours']} h, drive and wait take {leg['drive_h'] + leg['wait_h']} h")
    total = sum(q["price"] for q in quotes.values())
    if abs(conf["total"] - total) > 0.01:
        raise ValueError(f"{ref}: confirmed total {conf['total']} differs from the quoted legs' {total}")
    want = sorted({CHAUFFEURS[q["vehicle"]] for q in quotes.values()})
    if sorted(set(conf["chauffeurs"])) != want:
        raise ValueError(f"{ref}: chauffeurs {conf['chauffeurs']} do not drive the booked vehicles {want}")
    return {"ref": ref, "valid": True}


def _results(request) -> list:
    out = []
    for m in request.body.get("messages") or []:
        if isinstance(m, dict) and m.get("role") == "tool":
            try:
                out.append(ast.literal_eval(m["content"]))
            except (ValueError, SyntaxError):
                out.append(m["content"])
    return out


def _system(request) -> str:
    m = (request.body.get("messages") or [{}])[0]
    return str(m.get("content") or "")


def _policy(inp: dict):
    def brain(request):
        from trajdebug.testing import Reply, tool_call
        res = _results(request)
        if _system(request).startswith("You find chauffeurs"):
            ask = json.loads(_rt.last_user(request))
            if not res:
                calls = []
                for n, v in enumerate(ask["vehicles"]):
                    if kit.on("lm_c3") and n == 1:
                        v = ask["vehicles"][0]
                    calls.append(tool_call("find_chauffeur", {"date": ask["date"], "vehicle": v}))
                return Reply(tool_calls=tuple(calls))
            return "Chauffeurs: " + ", ".join(r["chauffeur"] for r in res)
        if not res:
            return Reply(tool_calls=(tool_call("get_request", {"ref": inp["ref"]}),))
        req = res[0]
        legs = req["legs"]
        if len(res) == 1:
            plan = [{"leg": l["leg"], "pax": l["pax"], "hours": l["drive_h"] + l["wait_h"]} for l in legs]
            if kit.on("lm_c5"):
                plan[1]["hours"] = legs[1]["drive_h"]
            return Reply(tool_calls=(tool_call("save_itinerary", {"ref": inp["ref"], "legs_json": json.dumps(plan)}),))
        plan = {p["leg"]: p for p in legs}
        saved = _CUR.get("itinerary") or []
        hours = {p["leg"]: p["hours"] for p in saved}
        done = res[2:]
        k = len(done) // 2
        if k < len(legs):
            leg = legs[k]
            if len(done) % 2 == 0:
                pax = leg["pax"]
                if kit.on("lm_c1") and k == 1:
                    pax = legs[0]["pax"]
                return Reply(tool_calls=(tool_call("check_fleet", {"date": req["date"], "leg": leg["leg"], "passengers": pax}),))
            v = done[-1]["vehicle"]
            return Reply(tool_calls=(tool_call("quote_leg", {"leg": leg["leg"], "vehicle": v, "hours": hours[leg["leg"]]}),))
        rest = done[2 * len(legs):]
        vehicles = sorted({q["vehicle"] for q in done[1:2 * len(legs):2]})
        if not rest:
            ask = {"date": req["date"], "vehicles": vehicles}
            return Reply(tool_calls=(tool_call("chauffeur_desk", {"input": json.dumps(ask)}),))
        if len(rest) == 1:
            total = sum(q["price"] for q in done[1:2 * len(legs):2])
            if kit.on("lm_c2"):
                total = total + 95
            names = rest[0].split(": ", 1)[1].split(", ")
            return Reply(tool_calls=(tool_call("confirm_booking", {"ref": inp["ref"], "total": total, "chauffeurs": names}),))
        if len(rest) == 2:
            return Reply(tool_calls=(tool_call("validate_booking", {"ref": inp["ref"]}),))
        return f"Booking {inp['ref']} confirmed for {inp['event']} on {inp['date']}."
    return brain


def _agent(model: str) -> Agent:
    desk = Agent(name="chauffeur-desk", instructions="You find chauffeurs for booked vehicles.", model=model,
                 tools=[find_chauffeur])
    return Agent(name="limo-desk", instructions="You book limousine hires. Use the tools, one at a time.", model=model,
                 tools=[get_request, save_itinerary, check_fleet, quote_leg,
                        desk.as_tool(tool_name="chauffeur_desk", tool_description="Find the chauffeur for a vehicle and date."),
                        confirm_booking, validate_booking])


def record(inp: dict, path: str) -> None:
    _CUR.clear()
    _CUR["inp"] = inp
    _rt.SERVER.use(_policy(inp))
    _rt.oa_run(_agent(_rt.SERVER.model), f"Please book {inp['ref']}: {inp['event']} on {inp['date']}.", NAME,
               f"book {inp['ref']} ({inp['event']})", path, api="chat_completions")
