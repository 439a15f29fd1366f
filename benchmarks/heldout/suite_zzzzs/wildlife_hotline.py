"""Volunteer wildlife-rescue hotline: a triage agent hands injured-animal calls to a bird or mammal desk, which
finds a rehabilitator, asks a transport sub-agent to book a volunteer driver, and opens the rescue case.

Route: openai_agents (the real OpenAI Agents SDK against the fake server, Responses API, recorded by trajdebug's
tracing processor, JSONL). Shape: triage agent with tools and hand-offs, desk agents with parallel tool calls, an
agent used as a tool (transport coordinator with its own tools), a case-opening tool that validates and raises.
"""

from __future__ import annotations

import ast
import json

from agents import Agent, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors

import _common
from _common import responses_input, responses_instructions, responses_outputs, responses_user_text
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "wildlife-hotline"
ROUTE = "openai_agents"
DOMAIN = "volunteer wildlife-rescue hotline (injured animal calls)"
SHAPE = "triage agent (tools, hand-offs) -> desk agent (parallel tools, agent-as-tool sub-agent with tools) -> validating tool"
SWITCH = None

CALLS = {
    "WL-0412": {"caller": "Maureen Tate", "found_at": "CA11 7QT", "home": "CA11 7QT", "form": "F-8812",
                "description": "swan tangled in fishing line on the riverbank, can't lift one wing",
                "waiting": ["WL-0409 (heron, also CA11, caller Ed Lamb)"]},
    "WL-0413": {"caller": "Priya Nair", "found_at": "CA11 8PL", "home": "CA11 8PL", "form": "F-8813",
                "description": "tiny brown furry thing flying round the kitchen, now clinging to the curtain",
                "waiting": []},
    "WL-0414": {"caller": "Gordon Hale", "found_at": "LA9 6BD", "home": "LA9 6BD", "form": "F-8814",
                "description": "young hedgehog out in the daytime in November, wobbly", "waiting": []},
    "WL-0415": {"caller": "Sian Roberts", "found_at": "LA9 4HE", "home": "CA11 9DS", "form": "F-8815",
                "description": "fox cub with bald patches near the depot where I work, very thin",
                "waiting": ["WL-0411 (badger, LA9, caller Tom Ure)"]},
    "WL-0416": {"caller": "Ade Okafor", "found_at": "LA9 5RZ", "home": "LA9 5RZ", "form": "F-8816",
                "description": "tawny owl hit by a car on the A6, sitting in the verge, eyes open", "waiting": []},
}
FORMS = {"F-8812": "not weighed", "F-8813": "not weighed", "F-8814": "0.9 lb", "F-8815": "2.6 kg",
         "F-8816": "not weighed"}
SPECIES = [("swan", "mute swan", "bird"), ("owl", "tawny owl", "bird"), ("flying", "pipistrelle bat", "mammal"),
           ("hedgehog", "hedgehog", "mammal"), ("fox", "red fox", "mammal")]
REHABBERS = {
    "RH-01": {"name": "Eden Valley Wildlife Rescue", "area": "CA11", "groups": ["mammal"], "overwinter": False},
    "RH-02": {"name": "Solway Bird Hospital", "area": "CA11", "groups": ["bird"], "overwinter": False},
    "RH-03": {"name": "Kent Valley Owl Centre", "area": "LA9", "groups": ["bird"], "overwinter": False},
    "RH-04": {"name": "Lune Hedgehog Haven", "area": "LA9", "groups": ["mammal"], "overwinter": True},
    "RH-05": {"name": "Penrith Fox and Badger Care", "area": "CA11", "groups": ["mammal"], "overwinter": False},
    "RH-06": {"name": "Burneside Mammal Rescue", "area": "LA9", "groups": ["mammal"], "overwinter": False},
}
DRIVERS = {"CA11": ["D-21 Jim Birks", "D-24 Ann Rowe"], "LA9": ["D-31 Bea Lund", "D-33 Raf Cole"]}
BOOKINGS: dict[str, dict] = {}


def _miles(a: str, b: str) -> int:
    a, b = a.split()[0], b.split()[0]
    return 6 if a == b else 41


def _grams(entry: str) -> int | None:
    if entry == "not weighed":
        return None
    value, unit = entry.split()
    return round(float(value) * {"g": 1, "kg": 1000, "lb": 453.6}[unit])


INPUTS = [{"task": f"hotline call {ref}: {c['description']}", "call": ref} for ref, c in CALLS.items()]

CASES = [
    {"id": "wildlife_hotline-1", "input": 0, "kind": "subagent_wrong_entity",
     "root": ("generation fake-model", 7, "llm"), "failure": ("open_case", 1),
     "what": "the transport coordinator booked driver D-21 for WL-0409, the heron waiting in the same area",
     "description": "The transport sub-agent booked the volunteer driver for the other call waiting in CA11, the "
                    "heron WL-0409, so opening the swan's case finds no transport booked for it."},
    {"id": "wildlife_hotline-2", "input": 1, "kind": "wrong_routing",
     "root": ("generation fake-model", 3, "llm"), "failure": ("open_case", 1),
     "what": "triage handed a pipistrelle bat to the bird desk because the caller said it was flying",
     "description": "The triage model handed the bat call to the bird desk on the word flying although the species "
                    "check said mammal, so the case is opened with a bird hospital that does not admit bats."},
    {"id": "wildlife_hotline-3", "input": 2, "kind": "unit_error",
     "root": ("intake_form", 1, "tool"), "failure": ("open_case", 1),
     "what": "the intake form's '0.9 lb' is returned as 900 g (should be 408 g)",
     "description": "The intake-form tool turned the caller's 0.9 lb into 900 g, so the desk plans an assess-and-"
                    "release for a 408 g autumn juvenile hedgehog and the case rules refuse it."},
    {"id": "wildlife_hotline-4", "input": 3, "kind": "wrong_tool_args",
     "root": ("generation fake-model", 4, "llm"), "failure": ("open_case", 1),
     "what": "the mammal desk searched rehabilitators near the caller's home CA11 9DS, not where the fox was found",
     "description": "The mammal desk called the rehabilitator search with the caller's home postcode instead of "
                    "the LA9 site where the fox cub was found, so the chosen centre is 41 miles away."},
    {"id": "wildlife_hotline-5", "input": 4, "kind": "hallucinated_value",
     "root": ("generation fake-model", 5, "llm"), "failure": ("open_case", 1),
     "what": "the bird desk asked for transport to RH-11, an id no search returned",
     "description": "The bird desk asked the transport coordinator to take the owl to rehabilitator RH-11, an id "
                    "that no search returned, and opening the case finds no such rehabilitator."},
]


@function_tool
def lookup_call(call_ref: str) -> dict:
    """The hotline's record of a call: caller, where the animal was found, the caller's form."""
    c = CALLS[call_ref]
    return {"call_ref": call_ref, "caller": c["caller"], "found_at": c["found_at"], "caller_home": c["home"],
            "form_id": c["form"], "description": c["description"]}


@function_tool
def identify_species(description: str) -> dict:
    """Best match of a caller's description in the species guide."""
    for word, species, group in SPECIES:
        if word in description:
            return {"species": species, "group": group}
    return {"species": "unknown", "group": "unknown"}


@function_tool
def intake_form(form_id: str) -> dict:
    """The caller's online intake form (weight, behaviour)."""
    entry = FORMS[form_id]
    grams = _grams(entry)
    if SWITCH == "wildlife_hotline-3" and entry.endswith(" lb"):
        grams = round(float(entry.split()[0]) * 1000)
    return {"form_id": form_id, "weight_g": grams, "season": "November"}


@function_tool
def find_bird_rehabber(postcode: str) -> list:
    """Bird hospitals, nearest first."""
    rows = [dict(id=k, name=v["name"], miles=_miles(postcode, v["area"] + " 1AA")) for k, v in REHABBERS.items()
            if "bird" in v["groups"]]
    return sorted(rows, key=lambda r: r["miles"])


@function_tool
def find_mammal_rehabber(postcode: str, needs_overwinter: bool) -> list:
    """Mammal rehabilitators, nearest first."""
    rows = [dict(id=k, name=v["name"], miles=_miles(postcode, v["area"] + " 1AA")) for k, v in REHABBERS.items()
            if "mammal" in v["groups"] and (v["overwinter"] or not needs_overwinter)]
    return sorted(rows, key=lambda r: r["miles"])


@function_tool
def list_drivers(postcode: str) -> list:
    """Volunteer drivers on shift for an area."""
    return DRIVERS[postcode.split()[0]]


@function_tool
def book_driver(driver: str, call_ref: str, pickup: str, rehabber_id: str) -> dict:
    """Book a volunteer driver for a pickup."""
    BOOKINGS[call_ref] = {"driver": driver, "pickup": pickup, "rehabber": rehabber_id}
    return {"booked": driver, "call_ref": call_ref, "rehabber_id": rehabber_id}


@function_tool(failure_error_function=None)
def open_case(call_ref: str, species: str, rehabber_id: str, plan: str) -> dict:
    """Open the rescue case once a rehabilitator and transport are arranged."""
    call = CALLS[call_ref]
    r = REHABBERS.get(rehabber_id)
    if r is None:
        raise ValueError(f"{rehabber_id} is not a registered rehabilitator")
    group = next((g for _, s, g in SPECIES if s == species), "unknown")
    if group not in r["groups"]:
        raise ValueError(f"{r['name']} ({rehabber_id}) does not admit {species}")
    miles = _miles(call["found_at"], r["area"] + " 1AA")
    if miles > 30:
        raise ValueError(f"{r['name']} is {miles} miles from where the animal was found ({call['found_at']}); "
                         f"the limit is 30")
    booking = BOOKINGS.get(call_ref)
    if booking is None:
        raise ValueError(f"no transport booked for {call_ref}; bookings held: {sorted(BOOKINGS)}")
    grams = _grams(FORMS[call["form"]])
    if species == "hedgehog" and grams is not None and grams < 450 and plan != "overwinter":
        raise ValueError(f"{call_ref}: a {grams} g juvenile hedgehog in November needs an overwintering place, "
                         f"not '{plan}'")
    return {"case": f"C-{call_ref[3:]}", "rehabber": r["name"], "driver": booking["driver"]}


def build():
    model = _common.MODEL
    transport = Agent(name="transport_coordinator", model=model, tools=[list_drivers, book_driver],
                      instructions="Transport coordinator: book one volunteer driver for the pickup you are given.")
    transport_tool = transport.as_tool(tool_name="transport_coordinator",
                                       tool_description="Book a volunteer driver to take an animal to a rehabilitator.")
    bird = Agent(name="bird_desk", model=model, instructions="Bird desk: arrange care for an injured bird.",
                 tools=[intake_form, find_bird_rehabber, transport_tool, open_case])
    mammal = Agent(name="mammal_desk", model=model, instructions="Mammal desk: arrange care for an injured mammal.",
                   tools=[intake_form, find_mammal_rehabber, transport_tool, open_case])
    return Agent(name="hotline_triage", model=model, tools=[lookup_call, identify_species], handoffs=[bird, mammal],
                 instructions="Triage wildlife hotline calls: look the call up, identify the species, hand over to "
                              "the right desk.")


_triage = None


def execute(inp: dict, out_path: str) -> None:
    global _triage
    _common.agents_sdk_setup()
    if _triage is None:
        _triage = build()
    BOOKINGS.clear()
    set_trace_processors([TrajdebugProcessor(path=out_path, name=NAME, task=inp["task"])])
    try:
        _common.agents_loop().run_until_complete(Runner.run(
            _triage, f"New call {inp['call']}: please handle it.", run_config=RunConfig(workflow_name=NAME)))
    except Exception:  # noqa: BLE001 - the run failed; the trace says how
        pass
    finally:
        set_trace_processors([])


def _outs(request) -> dict:
    out = {}
    for name, text in responses_outputs(request):
        try:
            out[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            out[name] = text
    return out


def brain(request):
    instr = responses_instructions(request)
    outs = _outs(request)
    if instr.startswith("Triage"):
        ref = responses_user_text(request).split()[2].rstrip(":")
        if "lookup_call" not in outs:
            return Reply(tool_calls=(tool_call("lookup_call", {"call_ref": ref}),))
        if "identify_species" not in outs:
            return Reply(tool_calls=(tool_call("identify_species",
                                               {"description": outs["lookup_call"]["description"]}),))
        group = outs["identify_species"]["group"]
        if SWITCH == "wildlife_hotline-2" and "flying" in outs["lookup_call"]["description"]:
            group = "bird"
        return Reply(tool_calls=(tool_call(f"transfer_to_{group}_desk", {}),))
    if instr.startswith("Transport"):
        req = json.loads(responses_user_text(request))
        if "list_drivers" not in outs:
            return Reply(tool_calls=(tool_call("list_drivers", {"postcode": req["pickup"]}),))
        if "book_driver" not in outs:
            ref = req["call_ref"]
            if SWITCH == "wildlife_hotline-1" and req["also_waiting"]:
                ref = req["also_waiting"][0].split()[0]
            return Reply(tool_calls=(tool_call("book_driver", {"driver": outs["list_drivers"][0], "call_ref": ref,
                                                               "pickup": req["pickup"],
                                                               "rehabber_id": req["rehabber_id"]}),))
        b = outs["book_driver"]
        return f"Booked {b['booked']} for {b['call_ref']} to {b['rehabber_id']}."
    if instr.startswith(("Bird desk", "Mammal desk")):
        call, sp = outs["lookup_call"], outs["identify_species"]
        finder = "find_bird_rehabber" if instr.startswith("Bird") else "find_mammal_rehabber"
        if "intake_form" not in outs:
            where = call["found_at"]
            if SWITCH == "wildlife_hotline-4":
                where = call["caller_home"]
            args = {"postcode": where}
            if finder == "find_mammal_rehabber":
                args["needs_overwinter"] = sp["species"] == "hedgehog"
            return Reply(tool_calls=(tool_call("intake_form", {"form_id": call["form_id"]}), tool_call(finder, args)))
        grams = outs["intake_form"]["weight_g"]
        plan = "overwinter" if sp["species"] == "hedgehog" and grams is not None and grams < 450 else "assess and release"
        rehabber = outs[finder][0]["id"]
        if "transport_coordinator" not in outs:
            rid = rehabber
            if SWITCH == "wildlife_hotline-5":
                rid = "RH-11"
            waiting = CALLS[call["call_ref"]]["waiting"]
            return Reply(tool_calls=(tool_call("transport_coordinator", {"input": json.dumps(
                {"call_ref": call["call_ref"], "pickup": call["found_at"], "rehabber_id": rid,
                 "also_waiting": waiting})}),))
        if "open_case" not in outs:
            booked = outs["transport_coordinator"]
            rid = booked.split(" to ")[-1].rstrip(".") if isinstance(booked, str) else rehabber
            return Reply(tool_calls=(tool_call("open_case", {"call_ref": call["call_ref"], "species": sp["species"],
                                                             "rehabber_id": rid, "plan": plan}),))
        return f"Case {outs['open_case']['case']} opened with {outs['open_case']['rehabber']}."
    return "Unknown request."


_ = responses_input
