"""Seaplane charter desk (recording SDK): extract the request, weather, aircraft fit, fuel, pilot sub-agent, book."""

from __future__ import annotations

import json
import re
from pathlib import Path

import trajdebug

from .common import Case, chat, last_user
from .kit import active

AGENT, ROUTE, DOMAIN = "seaplane-charter", "sdk", "seaplane charter"
SHAPE = "extract -> weather -> aircraft search + per-aircraft spec/fit loop -> choose -> fuel -> pilot sub-agent -> manifest -> book"

INPUTS = {
    "harbour6": {"ref": "SC-4410", "text": "Charter for 4 adults and 2 children from Vancouver Harbour to Tofino on 2026-07-14, 140 kg luggage", "leg_km": 210},
    "lake3": {"ref": "SC-4417", "text": "Charter for 2 adults and 1 child from Seattle Lake Union to Friday Harbor on 2026-07-18, 45 kg luggage", "leg_km": 130},
    "r1": {"ref": "SC-4420", "text": "Charter for 3 adults and 0 children from Nanaimo to Vancouver Harbour on 2026-07-02, 60 kg luggage", "leg_km": 60},
    "r2": {"ref": "SC-4421", "text": "Charter for 8 adults and 0 children from Vancouver Harbour to Whistler Green Lake on 2026-07-05, 200 kg luggage", "leg_km": 120},
    "r3": {"ref": "SC-4425", "text": "Charter for 2 adults and 2 children from Victoria Inner Harbour to Salt Spring on 2026-07-09, 80 kg luggage", "leg_km": 55},
    "r4": {"ref": "SC-4431", "text": "Charter for 5 adults and 0 children from Tofino to Hot Springs Cove on 2026-07-21, 90 kg luggage", "leg_km": 45},
}
REFS = ["r1", "r2", "r3", "r4"]

FLEET = [
    {"tail": "C-FDHB", "type": "DHC-2 Beaver", "seats": 6, "rate_per_hr": 1450, "burn_lph": 80},
    {"tail": "C-GQKO", "type": "DHC-3 Otter", "seats": 10, "rate_per_hr": 2100, "burn_lph": 135},
    {"tail": "C-FCVR", "type": "Cessna 208 Caravan", "seats": 13, "rate_per_hr": 2600, "burn_lph": 170},
]
PILOTS = [{"id": "P-102", "name": "R. Okafor", "ratings": ["DHC-2", "DHC-3"]},
          {"id": "P-117", "name": "M. Lindqvist", "ratings": ["DHC-3", "C208"]},
          {"id": "P-124", "name": "A. Tremblay", "ratings": ["DHC-2", "C208"]}]
DUTY = {"P-102": 31.5, "P-117": 12.0, "P-124": 44.0}

CASES = [
    Case("seaplane-1", "unit_error", "compute_fuel", 1, "book_charter", 1, "harbour6",
         "The fuel step converts the block fuel to US gallons while the booking expects litres, so the fuel uplift falls below the reserve."),
    Case("seaplane-2", "lossy_parsing", "parse_request", 1, "book_charter", 1, "lake3",
         "The request parser keeps only the adults and drops the children from the party size."),
    Case("seaplane-3", "hallucinated_value", "pick_pilot", 1, "book_charter", 1, "harbour6",
         "The pilot-picking model names a pilot id that is not on the roster it was shown."),
    Case("seaplane-4", "stale_data", "check_weather", 1, "book_charter", 1, "lake3",
         "The weather tool serves a cached briefing issued two days before the flight instead of a current one."),
    Case("seaplane-5", "off_by_one", "fits_payload", 1, "book_charter", 1, "harbour6",
         "The seat check compares seats with passengers alone, forgetting the pilot's seat, so a full Beaver passes."),
]


def policy(request):
    p = last_user(request)
    if p.startswith("EXTRACT"):
        m = re.search(r"(\d+) adults and (\d+) child(?:ren)? from (.+?) to (.+?) on (\S+), (\d+) kg", p)
        a, c, o, d, date, kg = m.groups()
        return json.dumps({"adults": int(a), "children": int(c), "origin": o, "destination": d, "date": date, "luggage_kg": int(kg)})
    if p.startswith("CHOOSE"):
        fits = json.loads(p.split("\n", 1)[1])
        best = min(fits, key=lambda f: f["rate_per_hr"])
        return json.dumps({"tail": best["tail"], "reason": f"lowest hourly rate among {len(fits)} that fit"})
    if p.startswith("PILOT"):
        data = json.loads(p.split("\n", 1)[1])
        ok = [x for x in data["roster"] if data["type_code"] in x["ratings"]]
        pick = ok[0]["id"] if ok else data["roster"][0]["id"]
        if active("seaplane-3"):
            pick = "P-131"
        return json.dumps({"pilot": pick})
    return "{}"


@trajdebug.step(kind="llm")
def extract_request(base_url: str, text: str) -> str:
    return chat(base_url, "EXTRACT the charter request as JSON\n" + text)


@trajdebug.step(kind="parse")
def parse_request(raw: str) -> dict:
    d = json.loads(raw)
    party = d["adults"] if active("seaplane-2") else d["adults"] + d["children"]
    return {"party": party, "origin": d["origin"], "destination": d["destination"], "date": d["date"], "luggage_kg": d["luggage_kg"]}


@trajdebug.step(kind="tool")
def check_weather(route: dict) -> dict:
    issued = "2026-07-12T06:00Z" if active("seaplane-4") else route["date"] + "T05:30Z"
    return {"route": f"{route['origin']} - {route['destination']}", "issued": issued, "ceiling_ft": 2500, "wind_kt": 12, "vfr": True}


@trajdebug.step(kind="retrieval")
def search_aircraft(query: dict) -> list[dict]:
    return [{"tail": a["tail"], "type": a["type"]} for a in FLEET]


@trajdebug.step(kind="tool")
def get_aircraft_specs(tail: str) -> dict:
    return dict(next(a for a in FLEET if a["tail"] == tail))


@trajdebug.step(kind="condition")
def fits_payload(spec: dict, req: dict) -> dict:
    need = req["party"] if active("seaplane-5") else req["party"] + 1
    return {"tail": spec["tail"], "fits": spec["seats"] >= need, "seats": spec["seats"], "rate_per_hr": spec["rate_per_hr"]}


@trajdebug.step(kind="llm")
def choose_aircraft(base_url: str, fits: list[dict]) -> str:
    return chat(base_url, "CHOOSE the aircraft\n" + json.dumps(fits))


@trajdebug.step(kind="state")
def save_quote_context(choice: dict, spec: dict) -> None:
    trajdebug.current_run().state["quote"] = {"tail": choice["tail"], "burn_lph": spec["burn_lph"], "type": spec["type"]}


@trajdebug.step(kind="tool")
def fuel_price(airport: str) -> dict:
    return {"airport": airport, "jet_a_per_litre": 1.92, "avgas_per_litre": 2.41}


@trajdebug.step(kind="other")
def compute_fuel(quote: dict, leg_km: int) -> dict:
    hours = round(leg_km / 180 * 2 + 0.75, 2)  # there and back plus 45 min reserve
    litres = round(hours * quote["burn_lph"], 1)
    if active("seaplane-1"):
        return {"block_hours": hours, "fuel": round(litres / 3.785, 1), "unit": "L"}
    return {"block_hours": hours, "fuel": litres, "unit": "L"}


@trajdebug.step(kind="tool")
def list_pilots(base: str) -> list[dict]:
    return [dict(p) for p in PILOTS]


@trajdebug.step(kind="llm")
def pick_pilot(base_url: str, roster: list[dict], type_code: str) -> str:
    return chat(base_url, "PILOT pick a rated pilot\n" + json.dumps({"roster": roster, "type_code": type_code}))


@trajdebug.step(kind="tool")
def check_duty_hours(pilot: str) -> dict:
    return {"pilot": pilot, "hours_last_7d": DUTY.get(pilot), "limit": 60}


@trajdebug.step(kind="agent")
def pilot_roster_agent(base_url: str, quote: dict) -> dict:
    roster = list_pilots("YVR")
    code = {"DHC-2 Beaver": "DHC-2", "DHC-3 Otter": "DHC-3", "Cessna 208 Caravan": "C208"}[quote["type"]]
    pick = json.loads(pick_pilot(base_url, roster, code))
    duty = check_duty_hours(pick["pilot"])
    return {"pilot": pick["pilot"], "duty": duty}


@trajdebug.step(kind="other")
def build_manifest(req: dict, quote: dict, fuel: dict, crew: dict, weather: dict) -> dict:
    return {"tail": quote["tail"], "passengers": req["party"], "luggage_kg": req["luggage_kg"], "fuel_l": fuel["fuel"],
            "block_hours": fuel["block_hours"], "pilot": crew["pilot"], "weather_issued": weather["issued"], "date": req["date"]}


class BookingRejected(Exception):
    pass


@trajdebug.step(kind="tool")
def book_charter(ref: str, manifest: dict, held_seats: int) -> dict:
    spec = next(a for a in FLEET if a["tail"] == manifest["tail"])
    if manifest["passengers"] != held_seats:
        raise BookingRejected(f"409 Conflict: manifest for {ref} lists {manifest['passengers']} passengers, reservation holds {held_seats} seats")
    if manifest["passengers"] + 1 > spec["seats"]:
        raise BookingRejected(f"422 Unprocessable: {manifest['tail']} has {spec['seats']} seats; {manifest['passengers']} passengers plus 1 pilot do not fit")
    if manifest["pilot"] not in DUTY:
        raise BookingRejected(f"422 Unprocessable: pilot {manifest['pilot']} is not on the operator roster")
    minimum = round((manifest["block_hours"]) * spec["burn_lph"] * 0.9, 1)
    if manifest["fuel_l"] < minimum:
        raise BookingRejected(f"422 Unprocessable: fuel uplift {manifest['fuel_l']} L below the planned minimum {minimum} L for {manifest['tail']}")
    if not manifest["weather_issued"].startswith(manifest["date"]):
        raise BookingRejected(f"412 Precondition Failed: weather briefing issued {manifest['weather_issued']} is not for flight date {manifest['date']}")
    return {"booking": f"BK-{ref[3:]}", "status": "confirmed", "tail": manifest["tail"]}


def record(inp: dict, path: Path, base_url: str) -> None:
    try:
        with trajdebug.run(AGENT, task=inp["text"], path=str(path)) as run:
            with trajdebug.step("charter_request", kind="input") as s:
                s.output = {"ref": inp["ref"], "text": inp["text"]}
            req = parse_request(extract_request(base_url, inp["text"]))
            held = int(re.search(r"(\d+) adults", inp["text"]).group(1)) + int(re.search(r"(\d+) child", inp["text"]).group(1))
            weather = check_weather(req)
            cands = search_aircraft({"origin": req["origin"], "party": req["party"]})
            fits = []
            for c in cands:
                spec = get_aircraft_specs(c["tail"])
                f = fits_payload(spec, req)
                if f["fits"]:
                    fits.append(f)
            choice = json.loads(choose_aircraft(base_url, fits))
            save_quote_context(choice, get_aircraft_specs(choice["tail"]))
            quote = run.state["quote"]
            fuel_price(req["origin"])
            fuel = compute_fuel(quote, inp["leg_km"])
            crew = pilot_roster_agent(base_url, quote)
            manifest = build_manifest(req, quote, fuel, crew, weather)
            with trajdebug.step("confirm_booking", kind="output") as s:
                s.output = book_charter(inp["ref"], manifest, held)
    except BookingRejected:
        pass
