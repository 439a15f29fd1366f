"""Catamaran charter (sdk): a short booking pipeline with a crew sub-agent and the booking kept in run.state."""
import json
import re

import trajdebug
from openai import OpenAI

NAME, ROUTE, DOMAIN = "catamaran-charter-desk", "sdk", "catamaran charter"
SHAPE = "input -> extraction (llm) -> parse -> fleet + forecast tools -> crew sub-agent (roster tool + llm) -> price -> state write -> itinerary -> confirmation (llm) -> contract tool"
ON: set = set()

FLEET = {"40ft": [{"boat": "Sea Breeze", "berths": 8, "rate_eur": 1150}, {"boat": "Sea Breeze II", "berths": 8, "rate_eur": 1150}],
         "45ft": [{"boat": "Halcyon", "berths": 10, "rate_eur": 1490}],
         "38ft": [{"boat": "Petrel", "berths": 6, "rate_eur": 890}]}
ROSTER = [{"skipper": "Ines Vidal", "endorsed": ["Sea Breeze", "Petrel"]},
          {"skipper": "Tom Okafor", "endorsed": ["Sea Breeze II", "Halcyon"]},
          {"skipper": "Mara Lund", "endorsed": ["Halcyon", "Petrel"]}]
INPUTS = [
    {"message": "Hi, we are 6 adults wanting a 40ft cat from 2027-06-12 for 7 nights, with skipper please."},
    {"message": "Family of 4 plus 2 kids, 38ft is fine, 5 nights from 2027-07-03, skipper wanted."},
    {"message": "Group of 9 divers, 45ft, 2027-08-20 for 6 nights. We need a skipper."},
    {"message": "Two couples, 4 guests, 40ft catamaran, 2027-05-30, 4 nights, skipper yes."},
    {"message": "8 of us, 45ft please, 2027-09-14 for 3 nights, skipper included."},
]
CASES = [
    {"id": "zzzm-06", "input": 0, "switch": "guest_count", "kind": "hallucinated_value",
     "root": ("extract_booking", 1, "llm"), "failure": ("check_fleet", 1),
     "description": "The extraction model states 12 guests for a message that says 6 adults."},
    {"id": "zzzm-07", "input": 2, "switch": "forecast_timeout", "kind": "swallowed_error",
     "root": ("fetch_marine_forecast", 1, "tool"), "failure": ("plan_itinerary", 1),
     "description": "The forecast service timed out and the tool returned an empty list of days as if the forecast were simply blank."},
    {"id": "zzzm-08", "input": 3, "switch": "skipper_pick", "kind": "subagent_wrong_entity",
     "root": ("brief_skipper", 1, "llm"), "failure": ("file_charter_contract", 1),
     "description": "Inside the crew desk the model picks the skipper endorsed for the sister boat Sea Breeze II instead of Sea Breeze."},
    {"id": "zzzm-09", "input": 1, "switch": "rate_card", "kind": "stale_data",
     "root": ("check_fleet", 1, "tool"), "failure": ("file_charter_contract", 1),
     "description": "The fleet check answers from last season's cached rate card (2026) instead of the 2027 one."},
    {"id": "zzzm-10", "input": 4, "switch": "parse_skipper", "kind": "lossy_parsing",
     "root": ("parse_booking", 1, "parse"), "failure": ("file_charter_contract", 1),
     "description": "The booking parser keeps only the known numeric and date fields and loses the skipper request."},
]
_client = {}


def policy(request):
    msgs = request.body["messages"]
    sysmsg, prompt = msgs[0]["content"], msgs[-1]["content"]
    if sysmsg.startswith("Extract"):
        guests = sum(int(n) for n in re.findall(r"(\d+) (?:adults|divers|guests|of us|plus)", prompt)) or 4
        if "kids" in prompt:
            guests = 6
        if "Two couples" in prompt:
            guests = 4
        if "guest_count" in ON:
            guests = 12
        size = re.search(r"(\d\dft)", prompt).group(1)
        start = re.search(r"(\d{4}-\d\d-\d\d)", prompt).group(1)
        nights = int(re.search(r"(\d+) nights", prompt).group(1))
        return json.dumps({"guests": guests, "size": size, "start": start, "nights": nights,
                           "skipper": "skipper" in prompt.lower(), "notes": ""})
    if sysmsg.startswith("Choose"):
        data = json.loads(prompt)
        boat = data["boat"]
        if "skipper_pick" in ON:
            boat = boat + " II"
        pick = next(r for r in data["roster"] if boat in r["endorsed"])
        return json.dumps({"skipper": pick["skipper"], "boat": data["boat"], "brief": "Meet at pontoon C, 09:00."})
    if sysmsg.startswith("Write"):
        b = json.loads(prompt)
        return f"Confirmed: {b['boat']} from {b['start']} for {b['nights']} nights, {b['guests']} guests, total EUR {b['total_eur']}."
    return "I can only help with charter bookings."


def chat(system, user):
    r = _client["c"].chat.completions.create(model="charter-assistant", messages=[
        {"role": "system", "content": system}, {"role": "user", "content": user}])
    return r.choices[0].message.content


@trajdebug.step(kind="input")
def receive_request(message: str) -> str:
    return message


@trajdebug.step(kind="llm")
def extract_booking(messages: list) -> str:
    return chat(messages[0]["content"], messages[1]["content"])


@trajdebug.step(kind="parse")
def parse_booking(text: str) -> dict:
    raw = json.loads(text)
    keep = ("guests", "size", "start", "nights") if "parse_skipper" in ON else ("guests", "size", "start", "nights", "skipper")
    return {k: raw[k] for k in keep}


@trajdebug.step(kind="tool")
def check_fleet(size: str, guests: int, start: str) -> dict:
    boats = [b for b in FLEET[size] if b["berths"] >= guests]
    if not boats:
        raise LookupError(f"no {size} catamaran free from {start} with {guests} berths")
    card = "2026" if "rate_card" in ON else "2027"
    return dict(boats[0], rate_card=card, size=size)


@trajdebug.step(kind="tool")
def fetch_marine_forecast(start: str, nights: int) -> dict:
    try:
        if "forecast_timeout" in ON:
            raise TimeoutError("forecast service did not answer in 5 s")
        days = [{"day": i + 1, "wind_kn": 9 + (i * 3) % 8, "swell_m": 0.6 + (i % 3) * 0.3} for i in range(nights)]
    except TimeoutError:
        days = []
    return {"area": "Cyclades", "from": start, "days": days}


@trajdebug.step(kind="tool")
def read_skipper_roster(boat: str) -> list:
    return [dict(r) for r in ROSTER]


@trajdebug.step(kind="llm")
def brief_skipper(messages: list) -> str:
    return chat(messages[0]["content"], messages[1]["content"])


@trajdebug.step(kind="other")
def price_charter(boat: dict, nights: int) -> dict:
    return {"boat": boat["boat"], "nights": nights, "rate_eur": boat["rate_eur"], "rate_card": boat["rate_card"],
            "total_eur": boat["rate_eur"] * nights}


@trajdebug.step(kind="state")
def remember_booking(booking: dict, boat: dict, price: dict, crew: dict) -> None:
    trajdebug.current_run().state["booking"] = {**booking, "boat": boat["boat"], "total_eur": price["total_eur"],
                                                 "rate_card": price["rate_card"], "crew": crew}


@trajdebug.step(kind="other")
def plan_itinerary(forecast: dict) -> list:
    booking = trajdebug.current_run().state["booking"]
    legs = []
    for n in range(1, booking["nights"] + 1):
        day = next((d for d in forecast["days"] if d["day"] == n), None)
        if day is None:
            raise LookupError(f"no forecast for night {n}: itinerary cannot be planned")
        legs.append({"night": n, "anchorage": "sheltered" if day["wind_kn"] > 14 else "open bay"})
    return legs


@trajdebug.step(kind="llm")
def write_confirmation(messages: list) -> str:
    return chat(messages[0]["content"], messages[1]["content"])


@trajdebug.step(kind="tool")
def file_charter_contract(confirmation: str) -> dict:
    b = trajdebug.current_run().state["booking"]
    if b["rate_card"] != "2027":
        raise ValueError(f"contract office rejects rate card {b['rate_card']}: 2027 season bookings only")
    if not b.get("skipper"):
        raise ValueError("bareboat contract needs a licence holder on the guest list, none given")
    crew = b["crew"]
    endorsed = next(r["endorsed"] for r in ROSTER if r["skipper"] == crew["skipper"])
    if b["boat"] not in endorsed:
        raise ValueError(f"{crew['skipper']} is not endorsed to skipper {b['boat']}")
    return {"contract": f"CC-{b['start']}-{b['boat'][:3].upper()}", "status": "filed"}


def run_one(inp, path, server):
    _client["c"] = OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    try:
        with trajdebug.run(NAME, task=inp["message"], path=path):
            msg = receive_request(inp["message"])
            text = extract_booking([{"role": "system", "content": "Extract the charter request as JSON."},
                                    {"role": "user", "content": msg}])
            booking = parse_booking(text)
            boat = check_fleet(booking["size"], booking["guests"], booking["start"])
            forecast = fetch_marine_forecast(booking["start"], booking["nights"])
            crew = {}
            if booking.get("skipper"):
                with trajdebug.step("crew_desk", kind="agent", input={"boat": boat["boat"]}) as desk:
                    roster = read_skipper_roster(boat["boat"])
                    crew = json.loads(brief_skipper([{"role": "system", "content": "Choose the skipper endorsed for the boat."},
                                                     {"role": "user", "content": json.dumps({"boat": boat["boat"], "roster": roster})}]))
                    desk.output = crew
            price = price_charter(boat, booking["nights"])
            remember_booking(booking, boat, price, crew)
            plan_itinerary(forecast)
            conf = write_confirmation([{"role": "system", "content": "Write a short confirmation."},
                                       {"role": "user", "content": json.dumps({**booking, "boat": boat["boat"], "total_eur": price["total_eur"]})}])
            file_charter_contract(conf)
    except Exception:
        pass
