"""Piano moving dispatch (openai_agents route): a dispatcher with tools, parallel stair surveys, a piano
specialist sub-agent (as_tool), and a hand-off to a booking clerk who reserves a truck and confirms."""

from __future__ import annotations

import json

from agentkit import first_user, history, run_agent
from agents import Agent, ModelSettings, function_tool, handoff
from kit import Case, active

from trajdebug.testing import Reply, tool_call


AGENT = "piano-move-dispatch"
ROUTE = "openai_agents"
DOMAIN = "piano moving company dispatch"
SHAPE = "dispatcher: job lookup -> 2 parallel stair surveys -> specialist sub-agent (specs + handling rules) -> crew roster -> quote -> hand-off to clerk: truck reservation -> confirmation"

SPECS = {
    "Steinway Model B": {"kg": 345, "length_cm": 211, "category": "grand"},
    "Bechstein A": {"kg": 300, "length_cm": 192, "category": "grand"},
    "Yamaha U3": {"kg": 235, "length_cm": 131, "category": "upright"},
    "Steinway Model D": {"kg": 480, "length_cm": 274, "category": "concert grand"},
    "Kawai K-300": {"kg": 227, "length_cm": 128, "category": "upright"},
}
STAIRS = {"8 Quay St": [14, 17, 15, 12], "3 Elm Ct": [12], "41 Mill Rd": [], "17 Vane Sq": [16, 16],
          "2 Rook Ln": [11, 9], "60 Ash Wk": [13], "5 Cope Rd": [10, 10, 10]}
JOBS = {
    "PM-501": {"piano": "Steinway Model B", "pickup": "3 Elm Ct", "dropoff": "8 Quay St", "date": "2026-12-11", "created": "2026-12-01", "km": 9},
    "PM-502": {"piano": "Yamaha U3", "pickup": "41 Mill Rd", "dropoff": "17 Vane Sq", "date": "2026-12-12", "created": "2026-11-30", "km": 4},
    "PM-503": {"piano": "Kawai K-300", "pickup": "2 Rook Ln", "dropoff": "41 Mill Rd", "date": "2026-12-14", "created": "2026-11-28", "km": 6},
    "PM-504": {"piano": "Bechstein A", "pickup": "60 Ash Wk", "dropoff": "3 Elm Ct", "date": "2026-12-15", "created": "2026-12-02", "km": 12},
    "PM-505": {"piano": "Yamaha U3", "pickup": "5 Cope Rd", "dropoff": "60 Ash Wk", "date": "2026-12-16", "created": "2026-12-03", "km": 3},
    "PM-506": {"piano": "Steinway Model B", "pickup": "17 Vane Sq", "dropoff": "2 Rook Ln", "date": "2026-12-17", "created": "2026-12-03", "km": 7},
}
INPUTS = {k: k for k in JOBS}
REFS = ["PM-503", "PM-504", "PM-505", "PM-506"]
CASES = [
    Case("piano.entity", "subagent_wrong_entity", "generation fake-model", "Model D", "PM-501"),
    Case("piano.args", "wrong_tool_args", "generation fake-model", "2026-12-01", "PM-501"),
    Case("piano.roster", "tool_ignores_argument", "crew_roster", "C-2-11", "PM-501"),
    Case("piano.quote", "hallucinated_value", "generation fake-model", "Q-10000", "PM-502"),
    Case("piano.survey", "truncated_result", "stair_survey", '"total_steps": 31', "PM-501"),
]
QUOTES: dict = {}


@function_tool
def lookup_job(job_id: str) -> str:
    """The job card: piano, addresses, move date."""
    return json.dumps({"job": job_id, **JOBS[job_id]})


@function_tool
def stair_survey(address: str) -> str:
    """Stair flights at an address (surveyor's app)."""
    flights = STAIRS[address]
    if active("piano.survey") and address == "8 Quay St":
        flights = flights[:2]  # the app's first page only
    return json.dumps({"address": address, "flights": flights, "total_steps": sum(flights)})


@function_tool
def piano_specs(model: str) -> str:
    """Manufacturer specs for a piano model."""
    return json.dumps({"model": model, **SPECS[model]})


@function_tool
def handling_rules(category: str, kg: int) -> str:
    """Company handling rules for a piano category and weight."""
    crew = 4 if kg > 300 or "grand" in category else 2
    return json.dumps({"category": category, "crew_needed": crew, "skid_board": "grand" in category})


@function_tool
def crew_roster(date: str, crew_size: int) -> str:
    """Reserve a moving crew of a given size on a date."""
    size = 2 if active("piano.roster") else crew_size
    return json.dumps({"crew_id": f"C-{size}-{date[-2:]}", "members": size, "date": date})


@function_tool
def quote_move(job_id: str, kg: int, total_steps: int, km: int) -> str:
    """Price the move."""
    qid = f"Q-{job_id[-3:]}{total_steps:02d}"
    QUOTES[qid] = {"job": job_id, "steps": total_steps, "kg": kg}
    return json.dumps({"quote_id": qid, "price_eur": 180 + km * 4 + total_steps * 3 + kg // 2})


@function_tool
def reserve_truck(date: str, kg: int) -> str:
    """Reserve a truck with a tail lift."""
    return json.dumps({"truck": "T-3" if kg > 260 else "T-1", "date": date, "tail_lift_kg": 500})


@function_tool(failure_error_function=None)
def confirm_booking(job_id: str, quote_id: str, crew_id: str, truck_date: str, declared_kg: int) -> str:
    """Confirm the booking with the customer and the operations system."""
    job = JOBS[job_id]
    q = QUOTES.get(quote_id)
    if q is None or q["job"] != job_id:
        raise LookupError(f"operations: no quote {quote_id} on file for {job_id}")
    if truck_date != job["date"]:
        raise ValueError(f"operations: truck held for {truck_date}, move is booked for {job['date']}")
    steps = sum(STAIRS[job["pickup"]]) + sum(STAIRS[job["dropoff"]])
    if q["steps"] != steps:
        raise ValueError(f"operations: building register lists {steps} steps across both addresses, quote {quote_id} prices {q['steps']}")
    if declared_kg != SPECS[job["piano"]]["kg"]:
        raise ValueError(f"insurer: declared weight {declared_kg} kg does not match the inventory record for {job_id}")
    need = 4 if SPECS[job["piano"]]["kg"] > 300 or "grand" in SPECS[job["piano"]]["category"] else 2
    if int(crew_id.split("-")[1]) < need:
        raise ValueError(f"insurer: crew {crew_id} is below the {need} movers required for this instrument")
    return json.dumps({"booking": f"BKG-{job_id}", "status": "confirmed"})


def brain(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    res, _calls = history(msgs)
    if system.startswith("You are the piano specialist"):
        if "piano_specs" not in res:
            asked = first_user(msgs).get("piano") if msgs[1]["content"].startswith("{") else msgs[1]["content"]
            if active("piano.entity"):
                asked = asked.rsplit(" ", 1)[0] + " D"
            return Reply(tool_calls=(tool_call("piano_specs", {"model": asked}),))
        spec = res["piano_specs"][0]
        if "handling_rules" not in res:
            return Reply(tool_calls=(tool_call("handling_rules", {"category": spec["category"], "kg": spec["kg"]}),))
        return json.dumps({**spec, "crew_needed": res["handling_rules"][0]["crew_needed"]})
    req = first_user(msgs)
    job_id = req["job"]
    if system.startswith("You are the booking clerk"):
        job = res["lookup_job"][0]
        if "reserve_truck" not in res:
            date = job["created"] if active("piano.args") else job["date"]
            return Reply(tool_calls=(tool_call("reserve_truck", {"date": date, "kg": _spec(res)["kg"]}),))
        if "confirm_booking" not in res:
            qid = "Q-10000" if active("piano.quote") else res["quote_move"][0]["quote_id"]
            return Reply(tool_calls=(tool_call("confirm_booking", {
                "job_id": job_id, "quote_id": qid, "crew_id": res["crew_roster"][0]["crew_id"],
                "truck_date": res["reserve_truck"][0]["date"], "declared_kg": _spec(res)["kg"]}),))
        return f"Booked {job_id}: {res['confirm_booking'][0]['booking']}."
    if "lookup_job" not in res:
        return Reply(tool_calls=(tool_call("lookup_job", {"job_id": job_id}),))
    job = res["lookup_job"][0]
    if "stair_survey" not in res:
        return Reply(tool_calls=(tool_call("stair_survey", {"address": job["pickup"]}),
                                 tool_call("stair_survey", {"address": job["dropoff"]})))
    if "piano_specialist" not in res:
        return Reply(tool_calls=(tool_call("piano_specialist", {"input": job["piano"]}),))
    spec = _spec(res)
    if "crew_roster" not in res:
        return Reply(tool_calls=(tool_call("crew_roster", {"date": job["date"], "crew_size": spec["crew_needed"]}),))
    if "quote_move" not in res:
        steps = sum(s["total_steps"] for s in res["stair_survey"])
        return Reply(tool_calls=(tool_call("quote_move", {"job_id": job_id, "kg": spec["kg"], "total_steps": steps, "km": job["km"]}),))
    return Reply(tool_calls=(tool_call("transfer_to_booking_clerk", {}),))


def _spec(res: dict) -> dict:
    out = res["piano_specialist"][0]
    return out if isinstance(out, dict) else json.loads(out)


def record(inp: str, path, server) -> None:
    server.use(brain)
    QUOTES.clear()
    run_agent(build, server, json.dumps({"job": inp}), path, AGENT, f"dispatch piano move {inp}")


def build(model):
    settings = ModelSettings(parallel_tool_calls=True)
    specialist = Agent(name="piano_specialist", model=model, tools=[piano_specs, handling_rules],
                       instructions="You are the piano specialist: look up the model's specs and handling rules; answer in JSON.")
    clerk = Agent(name="booking_clerk", model=model, tools=[reserve_truck, confirm_booking],
                  instructions="You are the booking clerk: reserve a truck for the move date and confirm the booking.")
    dispatcher = Agent(
        name="dispatcher", model=model, model_settings=settings, handoffs=[handoff(clerk)],
        instructions="You dispatch piano moves: read the job, survey both addresses, ask the specialist, roster a crew, quote, then hand off to the clerk.",
        tools=[lookup_job, stair_survey,
               specialist.as_tool(tool_name="piano_specialist", tool_description="Specs and handling for a piano model."),
               crew_roster, quote_move])
    return dispatcher
