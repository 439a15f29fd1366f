"""Cruise shore excursions (OpenAI Agents SDK): a triage agent hands off to a planner, which reads the
itinerary, lists tours, asks a port specialist (an agent used as a tool) and books the excursion."""

from __future__ import annotations

import json
from pathlib import Path

from agents import Agent, ModelSettings, UserError, function_tool, set_trace_processors
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .common import Case, first_user, history, oa_model, oa_run, system_text
from .kit import active

AGENT = "shore_excursions"
ROUTE = "openai_agents"
DOMAIN = "cruise shore excursions"
SYSTEM = "[cruise] shore excursions desk"

TOURS = [
    {"code": "T3", "title": "Fortress climb", "start": "08:30", "end": "11:30", "access": "stairs", "rating": 4.8},
    {"code": "T1", "title": "Old town walk", "start": "09:00", "end": "12:00", "access": "stairs", "rating": 4.6},
    {"code": "T4", "title": "Vineyard tasting", "start": "13:00", "end": "17:30", "access": "partial", "rating": 4.9},
    {"code": "T2", "title": "Bay boat cruise", "start": "09:30", "end": "13:00", "access": "step-free", "rating": 4.4},
    {"code": "T5", "title": "Coastal coach tour", "start": "10:00", "end": "14:30", "access": "step-free",
     "rating": 4.2},
]
PORTS = {"Kotor": "KOT", "Santorini": "JTR", "Piraeus": "PIR", "Valletta": "MLA", "Corfu": "CFU", "Split": "SPU",
         "Mykonos": "JMK", "Dubrovnik": "DBV"}
PICKUP = {"Kotor": "Tender jetty B", "Santorini": "Old Port tender pier", "Piraeus": "Gate E1",
          "Valletta": "Pinto Wharf coach bay", "Corfu": "Terminal coach park", "Split": "Riva coach stop",
          "Mykonos": "Tourlos bus stop", "Dubrovnik": "Gruz coach park"}
BOOKINGS = {
    "CR-88120": {"guest": "Ana Ruiz", "cabin": "7142", "mobility": "wheelchair", "ports": [
        ("Dubrovnik", "2027-06-13", "18:00"), ("Kotor", "2027-06-14", "17:00")]},
    "CR-88305": {"guest": "Tom Okafor", "cabin": "9021", "mobility": "none", "ports": [
        ("Piraeus", "2027-07-02", "19:00"), ("Santorini", "2027-07-03", "17:00")]},
    "CR-88410": {"guest": "Lena Berg", "cabin": "5110", "mobility": "none", "ports": [
        ("Valletta", "2027-05-20", "18:30")]},
    "CR-88477": {"guest": "Raj Patel", "cabin": "8233", "mobility": "walker", "ports": [
        ("Split", "2027-06-01", "19:00"), ("Corfu", "2027-06-02", "16:00")]},
    "CR-88502": {"guest": "Mia Chen", "cabin": "6020", "mobility": "none", "ports": [
        ("Split", "2027-08-11", "18:00")]},
    "CR-88590": {"guest": "Olu Adeyemi", "cabin": "7300", "mobility": "none", "ports": [
        ("Dubrovnik", "2027-09-04", "17:30"), ("Mykonos", "2027-09-06", "16:30")]},
}
INPUTS = {
    "kotor": "Booking CR-88120: please arrange a shore excursion for Ana Ruiz in Kotor on 2027-06-14. "
             "She uses a wheelchair.",
    "santorini": "Booking CR-88305: Tom Okafor wants the best rated excursion in Santorini on 2027-07-03.",
    "valletta": "Booking CR-88410: one excursion for Lena Berg in Valletta on 2027-05-20.",
    "corfu": "Booking CR-88477: Raj Patel walks with a walker; an excursion in Corfu on 2027-06-02 please.",
    "split": "Booking CR-88502: Mia Chen would like an excursion in Split on 2027-08-11.",
    "mykonos": "Booking CR-88590: Olu Adeyemi, Mykonos on 2027-09-06, any good excursion.",
}
REFS = ["valletta", "corfu", "split", "mykonos"]

CASES = [
    Case("se_route", AGENT, "wrong_routing", "generation desk-model", 1, "book_excursion",
         "triage handed a wheelchair user to the standard planner instead of the access planner", "kotor"),
    Case("se_trunc", AGENT, "truncated_result", "list_excursions", 1, "book_excursion",
         "list_excursions cut the list after three tours, hiding every step-free option", "kotor"),
    Case("se_hal", AGENT, "hallucinated_value", "generation desk-model", 7, "book_excursion",
         "the planner booked with a meeting time the tour list never gave", "santorini"),
    Case("se_sub", AGENT, "subagent_wrong_entity", "generation desk-model", 4, "book_excursion",
         "the planner asked the port specialist about the previous port, and booked its pickup point",
         "santorini"),
    Case("se_plan", AGENT, "plan_error", "generation desk-model", 2, "book_excursion",
         "the planner skipped the itinerary and assumed an 18:00 all-aboard, choosing a tour that returns late",
         "santorini"),
]


class ShoreBookingError(Exception):
    pass


def _mins(t: str) -> int:
    return int(t[:2]) * 60 + int(t[3:])


@function_tool
def get_itinerary(booking: str) -> str:
    """The guest record and port calls of a cruise booking."""
    b = BOOKINGS[booking]
    return json.dumps({"booking": booking, "guest": b["guest"], "cabin": b["cabin"], "mobility": b["mobility"],
                       "ports": [{"port": p, "date": d, "all_aboard": a} for p, d, a in b["ports"]]})


@function_tool
def list_excursions(port: str, date: str) -> str:
    """Excursions on sale for a port call."""
    tours = [{**t, "code": f"{PORTS[port]}-{t['code']}"} for t in TOURS]
    if active("se_trunc"):
        tours = tours[:3]
    return json.dumps({"port": port, "date": date, "tours": tours})


@function_tool
def port_notes(port: str) -> str:
    """Operational notes for a port: pickup point, tendering."""
    return json.dumps({"port": port, "pickup_point": PICKUP[port], "tender": port in ("Kotor", "Santorini")})


@function_tool(failure_error_function=None)
def book_excursion(booking: str, tour_code: str, date: str, meeting_time: str, pickup_point: str) -> str:
    """Book an excursion for the guest of a booking."""
    b = BOOKINGS[booking]
    port, _, all_aboard = next(p for p in b["ports"] if p[1] == date)
    tour = next((t for t in TOURS if f"{PORTS[port]}-{t['code']}" == tour_code), None)
    if tour is None:
        raise ShoreBookingError(f"HTTP 404 excursions API: no tour {tour_code} in {port} on {date}")
    if meeting_time != tour["start"]:
        raise ShoreBookingError(f"HTTP 422 excursions API: meeting time {meeting_time} does not match the "
                                f"{tour_code} departure at {tour['start']}")
    if pickup_point != PICKUP[port]:
        raise ShoreBookingError(f"HTTP 422 excursions API: pickup point '{pickup_point}' is not served in {port}")
    if _mins(tour["end"]) > _mins(all_aboard) - 30:
        raise ShoreBookingError(f"HTTP 422 excursions API: {tour_code} returns {tour['end']}, less than 30 min "
                                f"before all-aboard {all_aboard}")
    if b["mobility"] == "wheelchair" and tour["access"] != "step-free":
        raise ShoreBookingError(f"HTTP 422 excursions API: {tour_code} is '{tour['access']}'; guest {b['guest']} "
                                "requires step-free access")
    if b["mobility"] == "walker" and tour["access"] == "stairs":
        raise ShoreBookingError(f"HTTP 422 excursions API: {tour_code} has stairs; guest {b['guest']} uses a walker")
    return json.dumps({"confirmation": f"EX-{booking[3:]}-{tour_code}", "status": "booked"})


def _pick(tours: list[dict], all_aboard: str, access: bool) -> dict:
    fits = [t for t in tours if _mins(t["end"]) <= _mins(all_aboard) - 30]
    if access:
        for level in ("step-free", "partial"):
            pool = [t for t in fits if t["access"] == level]
            if pool:
                return max(pool, key=lambda t: t["rating"])
        return fits[0]
    return max(fits, key=lambda t: t["rating"])


def policy(body: dict) -> Reply | str:
    sys = system_text(body)
    ask = first_user(body)
    done = history(body)
    names = [n for n, _, _ in done]
    if "Shore Triage" in sys:
        needs = any(w in ask for w in ("wheelchair", "walker"))
        if active("se_route"):
            needs = "walker" in ask
        return Reply(tool_calls=(tool_call("transfer_to_access_planner" if needs else "transfer_to_excursion_planner",
                                           {}),))
    if "Port Specialist" in sys:
        if "port_notes" not in names:
            port = ask.split("port of ")[1].split(" ")[0].strip(".")
            return Reply(tool_calls=(tool_call("port_notes", {"port": port}),))
        return json.loads(done[-1][2])["pickup_point"]
    access = "step-free" in sys
    booking = ask.split(":")[0].split()[-1]
    date = ask.split(" on ")[1][:10]
    results = {n: r for n, _, r in done}
    if "get_itinerary" not in names and "list_excursions" not in names:
        if active("se_plan"):
            port = next(p for p in PORTS if p in ask)
            return Reply(text="Itinerary not needed: all-aboard is 18:00 on port days.",
                         tool_calls=(tool_call("list_excursions", {"port": port, "date": date}),))
        return Reply(tool_calls=(tool_call("get_itinerary", {"booking": booking}),))
    if "list_excursions" not in names:
        itin = json.loads(results["get_itinerary"])
        port = next(p["port"] for p in itin["ports"] if p["date"] == date)
        return Reply(tool_calls=(tool_call("list_excursions", {"port": port, "date": date}),))
    tours = json.loads(results["list_excursions"])
    if "port_specialist" not in names:
        port = tours["port"]
        if active("se_sub"):
            itin = json.loads(results["get_itinerary"])
            port = itin["ports"][0]["port"]
        return Reply(tool_calls=(tool_call("port_specialist", {"input": f"Pickup point at the port of {port}."}),))
    if "book_excursion" not in names:
        if "get_itinerary" in results:
            itin = json.loads(results["get_itinerary"])
            all_aboard = next(p["all_aboard"] for p in itin["ports"] if p["date"] == date)
        else:
            all_aboard = "18:00"
        tour = _pick(tours["tours"], all_aboard, access)
        meeting = tour["start"]
        if active("se_hal"):
            meeting = "08:00"
        return Reply(tool_calls=(tool_call("book_excursion", {
            "booking": booking, "tour_code": tour["code"], "date": date, "meeting_time": meeting,
            "pickup_point": results["port_specialist"].strip()}),))
    conf = json.loads(results["book_excursion"])
    return f"Booked: {conf['confirmation']}."


def build(client: object) -> Agent:
    model = oa_model(client)
    settings = ModelSettings(parallel_tool_calls=False)
    specialist = Agent(name="Port Specialist", instructions=f"{SYSTEM}. Port Specialist: answer with the pickup point.",
                       tools=[port_notes], model=model, model_settings=settings)
    tools = [get_itinerary, list_excursions,
             specialist.as_tool(tool_name="port_specialist", tool_description="Ask the port specialist."),
             book_excursion]
    std = Agent(name="Excursion Planner", instructions=f"{SYSTEM}. Excursion Planner: book the best rated tour.",
                tools=tools, model=model, model_settings=settings)
    acc = Agent(name="Access Planner", instructions=f"{SYSTEM}. Access Planner: step-free tours first.",
                tools=tools, model=model, model_settings=settings)
    return Agent(name="Shore Triage", instructions=f"{SYSTEM}. Shore Triage: route the guest.",
                 handoffs=[std, acc], model=model, model_settings=settings)


def record(key: str, out: Path, base_url: str) -> None:
    proc = TrajdebugProcessor(path=str(out), name="shore-excursion-desk", task=INPUTS[key])
    set_trace_processors([proc])
    try:
        oa_run(build, INPUTS[key], base_url, "shore-excursion-desk")
    except UserError as exc:
        if not isinstance(exc.__cause__, ShoreBookingError):
            raise
