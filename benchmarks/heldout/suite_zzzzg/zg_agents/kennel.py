"""kennel-boarding-desk: a dog-boarding kennel's booking desk (the OpenAI Agents SDK).

An owner's boarding request goes to the intake agent, which looks the dogs up and searches free kennel
runs (parallel tool calls), then hands off to the care planner.  The care planner reads each dog's vet
record, asks the medication nurse (an agent run as a tool, with its own tools) for any dog on
medication, puts the medication on the board, writes the feeding plan, and hands off to the booking
clerk, who books a run for each dog.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from .common import loads_any, system_text, tool_results, user_texts


NAME = "kennel-boarding-desk"
ROUTE = "openai_agents"
DOMAIN = "dog-boarding kennel: runs, vet records, medication and feeding"
SHAPE = "Agents SDK: intake agent (parallel tool calls) -> hand-off -> care planner (vet records, a nurse agent run as a tool with its own tools, medication board, feeding) -> hand-off -> booking clerk"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


DOGS = {
    "D-112": {"name": "Max", "owner": "Okafor", "breed": "labrador", "kg": 32.0, "food": "Orijen adult", "grams": 210},
    "D-118": {"name": "Max", "owner": "Fenwick", "breed": "whippet", "kg": 14.0, "food": "Lily's Kitchen", "grams": 120},
    "D-120": {"name": "Bruno", "owner": "Lindqvist", "breed": "mastiff", "kg": 41.0, "food": "Royal Canin giant", "grams": 420},
    "D-131": {"name": "Pepper", "owner": "Haddad", "breed": "beagle", "kg": 12.0, "food": "Hill's light", "grams": 95},
    "D-140": {"name": "Biscuit", "owner": "Brennan", "breed": "spaniel", "kg": 14.0, "food": "Acana", "grams": 110},
    "D-141": {"name": "Juno", "owner": "Brennan", "breed": "collie", "kg": 19.0, "food": "Acana", "grams": 150},
    "D-150": {"name": "Miso", "owner": "Sato", "breed": "shiba", "kg": 10.0, "food": "Ziwi peak", "grams": 80},
}
VET = {
    "D-112": {"kennel_cough_until": "2026-02-01", "rabies_until": "2027-01-10", "meds": [{"drug": "Apoquel", "dose_mg": 16, "times_per_day": 1}]},
    "D-118": {"kennel_cough_until": "2025-12-12", "rabies_until": "2026-11-02", "meds": [{"drug": "Metacam", "dose_mg": 1.5, "times_per_day": 1}]},
    "D-120": {"kennel_cough_until": "2026-04-20", "rabies_until": "2027-03-01", "meds": []},
    "D-131": {"kennel_cough_until": "2026-01-15", "rabies_until": "2026-10-30", "meds": [{"drug": "Carprofen", "dose_mg": 50, "times_per_day": 2}]},
    "D-140": {"kennel_cough_until": "2026-03-03", "rabies_until": "2027-02-14", "meds": []},
    "D-141": {"kennel_cough_until": "2026-05-09", "rabies_until": "2027-05-09", "meds": []},
    "D-150": {"kennel_cough_until": "2026-06-30", "rabies_until": "2027-06-30", "meds": []},
}
RUNS = {  # run -> (size, max kg, bookings [start, end))
    "S-1": ("small", 15, [("2025-09-08", "2025-09-12")]), "S-2": ("small", 15, [("2025-09-01", "2025-09-10")]),
    "S-3": ("small", 15, []), "M-1": ("medium", 25, [("2025-09-11", "2025-09-20")]), "M-2": ("medium", 25, []),
    "M-3": ("medium", 25, []), "L-1": ("large", 45, [("2025-09-09", "2025-09-13")]), "L-2": ("large", 45, []),
}
SIZE_OF = lambda kg: "small" if kg <= 15 else ("medium" if kg <= 25 else "large")  # noqa: E731

INPUTS = [
    {"booking_id": "BB-0903", "owner": "Okafor", "phone": "07700 900112", "dogs": ["Max"],
     "start": "2025-09-03", "end": "2025-09-07"},
    {"booking_id": "BB-0910", "owner": "Lindqvist", "phone": "07700 900245", "dogs": ["Bruno"],
     "start": "2025-09-10", "end": "2025-09-14"},
    {"booking_id": "BB-0905", "owner": "Haddad", "phone": "07700 900318", "dogs": ["Pepper"],
     "start": "2025-09-05", "end": "2025-09-08"},
    {"booking_id": "BB-0912", "owner": "Brennan", "phone": "07700 900477", "dogs": ["Biscuit", "Juno"],
     "start": "2025-09-12", "end": "2025-09-15"},
    {"booking_id": "BB-0906", "owner": "Sato", "phone": "07700 900533", "dogs": ["Miso"],
     "start": "2025-09-06", "end": "2025-09-09"},
]
BOOKING_OWNER = {i["booking_id"]: i["owner"] for i in INPUTS}

CASES = [
    {"id": "kennel_1", "switch": "nurse_pick", "input": 0, "kind": "subagent_wrong_entity",
     "root": ("response", 7), "failure": ("med_schedule", 1),
     "description": "the medication nurse, asked about Max of owner Okafor, takes the first Max the register "
                    "lists (D-118, owner Fenwick) and reports his Metacam; the medication board refuses a dog "
                    "that is not on booking BB-0903."},
    {"id": "kennel_2", "switch": "run_size", "input": 1, "kind": "tool_ignores_argument",
     "root": ("kennel_runs", 1), "failure": ("book_run", 1),
     "description": "kennel_runs ignores the size argument and lists the free small runs for the 41 kg mastiff; "
                    "booking run S-2 refuses a dog over its 15 kg limit."},
    {"id": "kennel_3", "switch": "dose", "input": 2, "kind": "hallucinated_value",
     "root": ("response", 9), "failure": ("med_schedule", 1),
     "description": "the care planner puts Carprofen 75 mg on the medication board although the nurse and "
                    "the vet record say 50 mg, and the board refuses a dose off the prescription."},
    {"id": "kennel_4", "switch": "vet_timeout", "input": 3, "kind": "swallowed_error",
     "root": ("vet_record", 2), "failure": ("book_run", 2),
     "description": "the vet portal times out for Juno and vet_record answers an empty record instead of "
                    "raising; the booking clerk then finds no kennel-cough vaccination on file."},
    {"id": "kennel_5", "switch": "search_end", "input": 4, "kind": "wrong_tool_args",
     "root": ("response", 2), "failure": ("book_run", 1),
     "description": "the intake model searches runs up to 2025-09-08 (the last night) instead of the "
                    "collection day 2025-09-09, so S-1 looks free and booking it collides with its stay from 09-08."},
]


# --------------------------------------------------------------------------- the model's behaviour

def _request(text: str) -> dict:
    return json.loads(re.search(r"\{.*\}", text, re.S).group(0))


def brain(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    system = system_text(request)
    results = tool_results(request)
    got = lambda name: [r for n, r in results if n == name]  # noqa: E731
    if system.startswith("You are the intake desk"):
        req = _request(user_texts(request)[0])
        dogs = got("lookup_dog")
        if not dogs:
            return Reply(tool_calls=tuple(tool_call("lookup_dog", {"owner": req["owner"], "dog_name": d})
                                          for d in req["dogs"]))
        if not got("kennel_runs"):
            end = req["end"]
            if _on("search_end"):
                end = f"{end[:8]}{int(end[8:]) - 1:02d}"
            return Reply(tool_calls=tuple(tool_call("kennel_runs", {"size": SIZE_OF(d["kg"]), "start": req["start"],
                                                                    "end": end}) for d in dogs))
        return Reply(tool_calls=(tool_call("transfer_to_care_planner", {}),))
    if system.startswith("You are the care planner"):
        req = _request(user_texts(request)[0])
        dogs = got("lookup_dog")
        vets = got("vet_record")
        if not vets:
            return Reply(tool_calls=tuple(tool_call("vet_record", {"dog_id": d["dog_id"]}) for d in dogs))
        on_meds = [v for v in vets if v["meds"]]
        nurse = [loads_any(r) for r in got("medication_nurse")]
        if on_meds and not nurse:
            calls = []
            for v in on_meds:
                dog = next(d for d in dogs if d["dog_id"] == v["dog_id"])
                calls.append(tool_call("medication_nurse", {"input": f"Medication for {dog['name']} of owner "
                                                                      f"{req['owner']}, booking {req['booking_id']}"}))
            return Reply(tool_calls=tuple(calls))
        if nurse and not got("med_schedule"):
            calls = []
            for n in nurse:
                dose = n["dose_mg"] * 1.5 if _on("dose") else n["dose_mg"]
                calls.append(tool_call("med_schedule", {"booking_id": req["booking_id"], "dog_id": n["dog_id"],
                                                        "drug": n["drug"], "dose_mg": dose,
                                                        "times_per_day": n["times_per_day"]}))
            return Reply(tool_calls=tuple(calls))
        if not got("feeding_plan"):
            return Reply(tool_calls=tuple(tool_call("feeding_plan", {"dog_id": d["dog_id"], "food": d["food"],
                                                                     "grams_per_meal": d["grams"], "meals": 2})
                                          for d in dogs))
        return Reply(tool_calls=(tool_call("transfer_to_booking_clerk", {}),))
    if system.startswith("You are the kennel's medication nurse"):
        ask = user_texts(request)[-1]
        name, owner = re.search(r"for (\w+) of owner (\w+)", ask).groups()
        found = got("find_dog")
        if not found:
            return Reply(tool_calls=(tool_call("find_dog", {"name": name}),))
        presc = got("prescription")
        if not presc:
            cands = found[0]["dogs"]
            pick = cands[0] if _on("nurse_pick") else next(c for c in cands if c["owner"] == owner)
            return Reply(tool_calls=(tool_call("prescription", {"dog_id": pick["dog_id"]}),))
        p = presc[0]
        m = p["meds"][0]
        return json.dumps({"dog_id": p["dog_id"], "name": p["name"], "drug": m["drug"], "dose_mg": m["dose_mg"],
                           "times_per_day": m["times_per_day"], "note": "give with food"})
    if system.startswith("You are the booking clerk"):
        req = _request(user_texts(request)[0])
        dogs = got("lookup_dog")
        runs = got("kennel_runs")
        vets = {v["dog_id"]: v for v in got("vet_record")}
        booked = got("book_run")
        if len(booked) < len(dogs):
            d = dogs[len(booked)]
            taken = {b["run_id"] for b in booked}
            free = next(r for r in runs if r["size"] == SIZE_OF(d["kg"]))
            run_id = next(x for x in free["free"] if x not in taken)
            return Reply(tool_calls=(tool_call("book_run", {"run_id": run_id, "dog_id": d["dog_id"],
                                                            "start": req["start"], "end": req["end"],
                                                            "kennel_cough_until": vets[d["dog_id"]].get("kennel_cough_until")}),))
        return "Booked: " + ", ".join(f"{b['dog']} in run {b['run_id']}" for b in booked) + "."
    return "How can I help?"


# --------------------------------------------------------------------------- the agents

def _agents(model: Any) -> Any:
    from agents import Agent, function_tool

    @function_tool(failure_error_function=None)
    def lookup_dog(owner: str, dog_name: str) -> dict:
        """Find an owner's dog in the kennel's register."""
        dog_id = next(k for k, d in DOGS.items() if d["owner"] == owner and d["name"] == dog_name)
        return {"dog_id": dog_id, **DOGS[dog_id]}

    @function_tool(failure_error_function=None)
    def kennel_runs(size: str, start: str, end: str) -> dict:
        """Free kennel runs of a size for a stay [start, end)."""
        wanted = "small" if _on("run_size") else size  # the search endpoint's size filter
        free = [r for r, (s, _, booked) in RUNS.items() if s == wanted
                and all(end <= b0 or start >= b1 for b0, b1 in booked)]
        return {"size": size, "start": start, "end": end, "free": free}

    @function_tool(failure_error_function=None)
    def vet_record(dog_id: str) -> dict:
        """Vaccinations and medication from the vet portal."""
        try:
            if _on("vet_timeout") and dog_id == "D-141":
                raise TimeoutError("vet portal did not answer in 5 s")
            record = dict(VET[dog_id])
        except TimeoutError:
            record = {"meds": []}
        return {"dog_id": dog_id, **record}

    @function_tool(failure_error_function=None)
    def find_dog(name: str) -> dict:
        """Dogs of that name in the register."""
        found = [{"dog_id": k, "owner": d["owner"], "breed": d["breed"]} for k, d in DOGS.items() if d["name"] == name]
        return {"name": name, "dogs": sorted(found, key=lambda d: d["owner"])}

    @function_tool(failure_error_function=None)
    def prescription(dog_id: str) -> dict:
        """A dog's current prescription."""
        return {"dog_id": dog_id, "name": DOGS[dog_id]["name"], "meds": VET[dog_id]["meds"]}

    @function_tool(failure_error_function=None)
    def med_schedule(booking_id: str, dog_id: str, drug: str, dose_mg: float, times_per_day: int) -> dict:
        """Put a dog's medication on the kennel's medication board."""
        dog = DOGS[dog_id]
        if dog["owner"] != BOOKING_OWNER[booking_id]:
            raise ValueError(f"dog {dog_id} ({dog['name']}, owner {dog['owner']}) is not on booking {booking_id} "
                             f"(owner {BOOKING_OWNER[booking_id]})")
        presc = next((m for m in VET[dog_id]["meds"] if m["drug"] == drug), None)
        if presc is None or presc["dose_mg"] != dose_mg or presc["times_per_day"] != times_per_day:
            raise ValueError(f"{dog['name']}'s prescription is {presc['drug']} {presc['dose_mg']} mg "
                             f"{presc['times_per_day']}x daily; {dose_mg} mg was requested")
        return {"board": f"MED-{booking_id}-{dog_id}", "drug": drug, "dose_mg": dose_mg, "times_per_day": times_per_day}

    @function_tool(failure_error_function=None)
    def feeding_plan(dog_id: str, food: str, grams_per_meal: int, meals: int) -> dict:
        """Write the kitchen's feeding label for a dog."""
        return {"dog_id": dog_id, "label": f"{DOGS[dog_id]['name']}: {food}, {grams_per_meal} g x {meals}"}

    @function_tool(failure_error_function=None)
    def book_run(run_id: str, dog_id: str, start: str, end: str, kennel_cough_until: str | None = None) -> dict:
        """Book a kennel run for a dog's stay."""
        size, max_kg, booked = RUNS[run_id]
        dog = DOGS[dog_id]
        if dog["kg"] > max_kg:
            raise ValueError(f"run {run_id} is for dogs up to {max_kg} kg; {dog['name']} weighs {dog['kg']:.0f} kg")
        for b0, b1 in booked:
            if start < b1 and end > b0:
                raise ValueError(f"run {run_id} is booked from {b0} to {b1}; stay {start} to {end} overlaps")
        if not kennel_cough_until or kennel_cough_until < end:
            raise ValueError(f"no valid kennel-cough vaccination on file for {dog['name']} ({dog_id})")
        return {"run_id": run_id, "dog_id": dog_id, "dog": dog["name"], "start": start, "end": end}

    nurse = Agent(name="medication_nurse", model=model,
                  instructions="You are the kennel's medication nurse. Find the dog, read its prescription, "
                               "answer JSON with dog_id, drug, dose_mg, times_per_day.",
                  tools=[find_dog, prescription])
    clerk = Agent(name="booking_clerk", model=model,
                  instructions="You are the booking clerk. Book one run per dog, one at a time.", tools=[book_run])
    planner = Agent(name="care_planner", model=model,
                    instructions="You are the care planner. Read vet records, ask the nurse about medication, "
                                 "fill the medication board and feeding plans, then hand off to the booking clerk.",
                    tools=[vet_record, nurse.as_tool(tool_name="medication_nurse",
                                                     tool_description="Ask the medication nurse about a dog's medication."),
                           med_schedule, feeding_plan],
                    handoffs=[clerk])
    intake = Agent(name="intake", model=model,
                   instructions="You are the intake desk of Barkley Boarding. Look up the dogs, search free runs, "
                                "then hand off to the care planner.",
                   tools=[lookup_dog, kennel_runs], handoffs=[planner])
    return intake


_LOOP: Any = None
_CLIENT: Any = None


def record(inp: dict, path: str, server: Any) -> None:
    global _LOOP, _CLIENT
    from agents import RunConfig, Runner, set_default_openai_api, set_default_openai_client
    from agents.tracing import set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    if _LOOP is None:
        _LOOP = asyncio.new_event_loop()
    if _CLIENT is None or str(_CLIENT.base_url).rstrip("/") != server.base_url.rstrip("/"):
        _CLIENT = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(_CLIENT)
    set_default_openai_api("responses")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"boarding {inp['booking_id']}")])
    intake = _agents(server.model)
    message = "Boarding request " + json.dumps(inp)
    try:
        _LOOP.run_until_complete(Runner.run(intake, message, max_turns=20, run_config=RunConfig(workflow_name=NAME)))
    except Exception:  # noqa: BLE001 - the trace records the failure
        pass
    finally:
        set_trace_processors([])
