"""Horse-drawn carriage hire: a hire desk hands each enquiry to the wedding desk or the heritage tours
desk; the desk reads the customer's notes, picks a carriage from the catalogue, has the welfare officer
(an agent used as a tool) choose a rested pair of horses and confirms the hire (OpenAI Agents SDK)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, UserError, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor

from .common import ApiError, Case, last_user_json
from .kit import active

NAME = "carriage-hire-desk"
ROUTE = "openai_agents"
DOMAIN = "horse-drawn carriage hire"
SHAPE = "hire desk -> hand-off to wedding or tours desk: customer notes, carriage catalogue, leg timings, welfare-officer agent-as-tool (roster), confirm hire"

INPUTS: dict[str, dict[str, Any]] = {
    "frome": {"hire": "CH-7102", "customer": "Harper & Lowe", "occasion": "wedding", "date": "2027-06-12", "passengers": 4,
              "pickup": "Holy Trinity, Frome", "venue": "Orchardleigh House"},
    "bath": {"hire": "CH-7115", "customer": "D. Adebayo", "occasion": "wedding", "date": "2027-06-19", "passengers": 2,
             "pickup": "St Swithin's, Walcot", "venue": "The Assembly Rooms"},
    "wells": {"hire": "CH-7120", "customer": "P. Novak", "occasion": "wedding", "date": "2027-07-03", "passengers": 2,
              "pickup": "St Cuthbert's, Wells", "venue": "Bishop's Palace"},
    "glaston": {"hire": "CH-7126", "customer": "Avalon History Society", "occasion": "heritage tour", "date": "2027-07-10", "passengers": 8,
                "pickup": "Market Cross, Glastonbury", "venue": "Chalice Well"},
    "bruton": {"hire": "CH-7131", "customer": "G. Fairweather", "occasion": "wedding", "date": "2027-07-17", "passengers": 4,
               "pickup": "St Mary's, Bruton", "venue": "Hauser Farm"},
    "shepton": {"hire": "CH-7139", "customer": "L. Osei", "occasion": "wedding", "date": "2027-07-24", "passengers": 2,
                "pickup": "SS Peter & Paul, Shepton Mallet", "venue": "Charlton House"},
}
MAIN = ("frome", "bath")
REFS = ("wells", "glaston", "bruton", "shepton")

G = "generation gpt-4o-mini"
CASES = [
    Case("chd-1", "wrong_routing", "bath", (G, 1), ("confirm_hire", 1),
         "The hire desk hands a wedding enquiry to the heritage tours desk, which confirms a tour wagonette for a ceremony."),
    Case("chd-2", "plan_error", "frome", (G, 7), ("confirm_hire", 1),
         "The wedding desk plans a photo detour into the itinerary, putting the pair in harness past the working limit."),
    Case("chd-3", "context_pollution", "frome", ("customer_notes", 1), ("confirm_hire", 1),
         "The notes service appends another customer's pickup note, and the desk books that pickup."),
    Case("chd-4", "swallowed_error", "bath", ("horse_roster", 1), ("confirm_hire", 1),
         "The roster tool catches the stable system's timeout and answers the whole stable as rested, so a resting horse is booked."),
    Case("chd-5", "truncated_result", "frome", ("carriage_catalog", 1), ("confirm_hire", 1),
         "The catalogue answers its first page only, without the landau, so a two-seat carriage is booked for four passengers."),
]

CATALOG = [
    {"carriage": "Brougham", "seats": 2, "class": "ceremonial"},
    {"carriage": "Vis-a-vis", "seats": 2, "class": "ceremonial"},
    {"carriage": "Landau", "seats": 4, "class": "ceremonial"},
    {"carriage": "Glass coach", "seats": 4, "class": "ceremonial"},
    {"carriage": "Wagonette", "seats": 10, "class": "tour"},
]
STABLE = ["Bramble", "Jet", "Clover", "Duke", "Pepper", "Sable"]
RESTING = {"2027-06-12": ["Bramble", "Jet"], "2027-06-19": ["Bramble", "Clover"], "2027-07-03": ["Pepper"], "2027-07-10": [],
           "2027-07-17": ["Sable"], "2027-07-24": ["Jet"]}
LEG_MIN = {"pickup": 35, "ceremony wait": 60, "photos at Vallis Vale": 85, "to reception": 40, "tour circuit": 90}
NOTES = {"Harper & Lowe": ["Bride arriving from Holy Trinity, Frome", "Ivory ribbons on the carriage"],
         "D. Adebayo": ["Pickup at St Swithin's, Walcot", "Grey horses preferred"]}


def _calls(body: dict) -> list[tuple[str, dict, str | None]]:
    results = {m.get("tool_call_id"): m.get("content") for m in body["messages"] if m.get("role") == "tool"}
    return [(c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"), results.get(c["id"]))
            for m in body["messages"] for c in (m.get("tool_calls") or [])]


def _request(body: dict) -> dict:
    for m in body["messages"]:
        if m.get("role") == "user":
            try:
                return json.loads(m["content"] if isinstance(m["content"], str) else m["content"][0]["text"])
            except (ValueError, KeyError, TypeError):
                continue
    return {}


def policy(req: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    body = req.body
    system = body["messages"][0].get("content", "")
    calls = _calls(body)
    done = [c[0] for c in calls]
    r = _request(body)
    if "hire desk" in system:
        target = "transfer_to_wedding_desk" if r["occasion"] == "wedding" else "transfer_to_tours_desk"
        if active("chd-1"):
            target = "transfer_to_tours_desk"
        if not any(d.startswith("transfer_to_") for d in done):
            return Reply(tool_calls=(tool_call(target, {}),))
        return "Passed on."
    if "welfare officer" in system:
        p = last_user_json(body)
        if "horse_roster" not in done:
            return Reply(tool_calls=(tool_call("horse_roster", {"date": p["date"]}),))
        rested = json.loads(next(c[2] for c in calls if c[0] == "horse_roster"))["rested"]
        return json.dumps({"pair": rested[:2], "date": p["date"]})
    tours = "tours desk" in system
    if "customer_notes" not in done:
        return Reply(tool_calls=(tool_call("customer_notes", {"customer": r["customer"]}),))
    if "carriage_catalog" not in done:
        return Reply(tool_calls=(tool_call("carriage_catalog", {"occasion": "tour" if tours else "ceremonial"}),))
    if "welfare_officer" not in done:
        return Reply(tool_calls=(tool_call("welfare_officer", {"input": json.dumps({"date": r["date"], "hire": r["hire"]})}),))
    if "confirm_hire" not in done:
        notes = json.loads(next(c[2] for c in calls if c[0] == "customer_notes"))["notes"]
        pickup = r["pickup"]
        for n in notes:
            if n.startswith("Pickup at "):
                pickup = n[len("Pickup at "):]
        cars = json.loads(next(c[2] for c in calls if c[0] == "carriage_catalog"))["carriages"]
        car = next((c for c in cars if c["seats"] >= r["passengers"]), cars[0])
        pair = json.loads(next(c[2] for c in calls if c[0] == "welfare_officer"))["pair"]
        legs = ["tour circuit"] if tours else ["pickup", "ceremony wait", "to reception"]
        if active("chd-2"):
            legs = ["pickup", "ceremony wait", "photos at Vallis Vale", "to reception"]
        return Reply(tool_calls=(tool_call("confirm_hire", {"hire": r["hire"], "date": r["date"], "carriage": car["carriage"],
                                                            "pickup": pickup, "horses": pair, "legs": legs, "passengers": r["passengers"]}),))
    return "Hire confirmed."


_shared_notes_cache: list[str] = ["Pickup at St Cuthbert's, Wells"]


@function_tool
def customer_notes(customer: str) -> str:
    """The customer's notes from the booking system."""
    notes = list(NOTES.get(customer, []))
    if active("chd-3"):
        notes += _shared_notes_cache  # the last lookup's lines were left in the buffer
    return json.dumps({"customer": customer, "notes": notes})


@function_tool
def carriage_catalog(occasion: str) -> str:
    """Carriages offered for an occasion class."""
    rows = [c for c in CATALOG if c["class"] == occasion]
    if active("chd-5"):
        rows = rows[:2]
    return json.dumps({"occasion": occasion, "carriages": rows})


@function_tool
def horse_roster(date: str) -> str:
    """Horses rested and fit to work on a date."""
    try:
        if active("chd-4"):
            raise TimeoutError("stable system did not answer")
        resting = RESTING[date]
    except TimeoutError:
        resting = []
    return json.dumps({"date": date, "rested": [h for h in STABLE if h not in resting]})


@function_tool(failure_error_function=None)
def confirm_hire(hire: str, date: str, carriage: str, pickup: str, horses: list[str], legs: list[str], passengers: int) -> str:
    """Confirm the hire in the carriage company's booking system."""
    req = next(v for v in INPUTS.values() if v["hire"] == hire)
    car = next(c for c in CATALOG if c["carriage"] == carriage)
    if req["occasion"] == "wedding" and car["class"] != "ceremonial":
        raise ApiError(422, {"error": "licence_class", "detail": f"{carriage} is licensed for tours; hire {hire} is a wedding"})
    if car["seats"] < passengers:
        raise ApiError(422, {"error": "capacity", "detail": f"{carriage} seats {car['seats']}; hire {hire} lists {passengers} passengers"})
    if pickup != req["pickup"]:
        raise ApiError(409, {"error": "pickup_mismatch", "detail": f"pickup '{pickup}' does not match the contract pickup '{req['pickup']}'"})
    for h in horses:
        if h in RESTING[date]:
            raise ApiError(409, {"error": "horse_resting", "detail": f"{h} is on a rest day on {date}"})
    minutes = sum(LEG_MIN[x] for x in legs)
    if minutes > 180:
        raise ApiError(422, {"error": "working_limit", "detail": f"itinerary puts the pair in harness for {minutes} min; the limit is 180 min"})
    return json.dumps({"confirmed": hire, "carriage": carriage, "horses": horses})


def record(inp_id: str, out: Path, base_url: str) -> None:
    r = INPUTS[inp_id]
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0))
    officer = Agent(name="welfare_officer", instructions="You are the stable's welfare officer: pick a rested pair for the date.",
                    tools=[horse_roster], model=model)
    officer_tool = officer.as_tool(tool_name="welfare_officer", tool_description="Choose a rested pair of horses for a date.")
    wedding = Agent(name="wedding_desk", instructions="You are the wedding desk: book ceremonial carriages for weddings.",
                    tools=[customer_notes, carriage_catalog, officer_tool, confirm_hire], model=model)
    tours = Agent(name="tours_desk", instructions="You are the heritage tours desk: book tour carriages.",
                  tools=[customer_notes, carriage_catalog, officer_tool, confirm_hire], model=model)
    desk = Agent(name="hire_desk", instructions="You are the hire desk: pass each enquiry to the right desk.", handoffs=[wedding, tours], model=model)
    proc = TrajdebugProcessor(path=str(out), name=NAME, task=f"book carriage hire {r['hire']}")
    set_trace_processors([proc])
    try:
        Runner.run_sync(desk, json.dumps(r), run_config=RunConfig(workflow_name=NAME), max_turns=20)
    except UserError as exc:
        if not isinstance(exc.__cause__, ApiError):
            raise
    finally:
        set_trace_processors([])
