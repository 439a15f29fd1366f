"""Medical-device plant: ISO 14644-1 requalification of a cleanroom (particle counts at the sampling
locations the standard requires) and its certificate.

Route: the OpenAI Agents SDK (Chat Completions model) recorded by trajdebug's tracing processor. A lead
agent reads the room and the particle counter in parallel, gets the sampling plan and hands off to a counts
analyst (or, for an excursion, to a recovery analyst); the analyst reads every location's counts with
parallel tool calls, computes the class and issues the certificate, whose tool validates and raises.
"""

from __future__ import annotations

import ast
import json

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool

from common import rnd
from trajdebug.testing import Reply, tool_call

RUN_NAME = "cleanroom-requalification"
ROUTE = "openai_agents"
OPENAI_API = "chat_completions"
DOMAIN = "medical-device manufacturing: ISO 14644-1 cleanroom requalification"
SHAPE = "Agents SDK: lead agent (2 parallel tools, plan tool, hand-off), analyst agent (N parallel count tools, compute tool, certificate tool that validates); recovery agent on the other branch"
SWITCH = None

TABLE_A1 = [(2, 1), (4, 2), (6, 3), (8, 4), (10, 5), (24, 6), (28, 7), (32, 8), (36, 9), (52, 10), (56, 11), (64, 12)]
LIMITS = {"ISO 7": (352000, 2930), "ISO 8": (3520000, 29300)}
ROOMS = {
    "CR-1": {"use": "insert moulding", "class": "ISO 7", "area_m2": 30.0, "counter": "PC-0412"},
    "CR-2": {"use": "catheter assembly", "class": "ISO 7", "area_m2": 45.0, "counter": "PC-0412"},
    "CR-3": {"use": "blister packaging", "class": "ISO 8", "area_m2": 20.0, "counter": "PC-0577"},
    "CR-4": {"use": "tubing extrusion", "class": "ISO 7", "area_m2": 34.0, "counter": "PC-0577"},
    "CR-5": {"use": "gowning", "class": "ISO 8", "area_m2": 12.0, "counter": "PC-0412"},
}
INSTRUMENTS = {"PC-0412": "2026-08-30", "PC-0577": "2026-05-12"}
WINDOW = ("2026-03-02", "2026-03-06")

INPUTS = [{"task": f"ISO 14644-1 requalification of {r} ({v['use']}, {v['class']})", "room": r} for r, v in ROOMS.items()]

CASES = [
    {"id": "clean_location_table", "input": 3, "kind": "off_by_one",
     "root": ("sampling_plan", 1, "tool"), "failure": ("issue_certificate", 1),
     "what": "the table lookup for 34 m2 returns the row above: 8 locations instead of 9",
     "description": "The sampling plan read the row of Table A.1 one above the room's area, planning 8 locations for 34 m2 where 9 are required, and the certificate is refused."},
    {"id": "clean_cached_upload", "input": 1, "kind": "stale_data",
     "root": ("get_particle_counts", 4, "tool"), "failure": ("issue_certificate", 1),
     "what": "location L4's counts come from the counter's cached upload of the last requalification (2025-09-11)",
     "description": "The counts of location L4 were served from the counter's cached upload of the previous requalification in September 2025, which the certificate refuses as outside this week's window."},
    {"id": "clean_download_crc", "input": 0, "kind": "swallowed_error",
     "root": ("get_particle_counts", 7, "tool"), "failure": ("issue_certificate", 1),
     "what": "a CRC error downloading L7 is caught and zero counts are answered",
     "description": "Downloading location L7's samples failed its checksum and the tool answered zero counts instead of the error, which the certificate's zero-count check rejects."},
    {"id": "clean_recovery_handoff", "input": 2, "kind": "wrong_routing",
     "root": ("generation fake-model", 3, "llm"), "failure": ("open_excursion", 1),
     "what": "the lead hands off to the recovery analyst instead of the counts analyst",
     "description": "The lead agent handed a routine requalification to the excursion recovery analyst instead of the counts analyst, which then tries to open an excursion the quality system has no basis for."},
    {"id": "clean_counter_serial", "input": 4, "kind": "hallucinated_value",
     "root": ("generation fake-model", 6, "llm"), "failure": ("issue_certificate", 1),
     "what": "the analyst names particle counter PC-0421 on the certificate; the counter used is PC-0412",
     "description": "The analyst filled the certificate with particle counter PC-0421, a serial no tool returned (the counter used is PC-0412), and the instrument check refuses it."},
]


def _switch(case_id: str) -> bool:
    return SWITCH == case_id


# ----------------------------------------------------------------------------------------------- the model
def _results(msgs) -> list:
    out = []
    for m in msgs:
        if m.get("role") == "tool":
            try:
                out.append(ast.literal_eval(m["content"]))
            except (ValueError, SyntaxError):
                out.append(m["content"])
    return out


def brain(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    req = json.loads(next(m["content"] for m in msgs if m["role"] == "user"))
    room = req["room"]
    res = _results(msgs)
    if system.startswith("You lead"):
        if not res:
            return Reply(tool_calls=(tool_call("get_room", {"room": room}), tool_call("get_counter", {"room": room})))
        if len(res) == 2:
            return Reply(tool_calls=(tool_call("sampling_plan", {"area_m2": res[0]["area_m2"]}),))
        target = "transfer_to_recovery_analyst" if SWITCH == "clean_recovery_handoff" else "transfer_to_counts_analyst"
        return Reply(tool_calls=(tool_call(target, {}),))
    if system.startswith("You open"):
        return Reply(tool_calls=(tool_call("open_excursion", {"room": room, "reason": "requalification counts"}),)) if not any(
            isinstance(r, dict) and "excursion" in r for r in res) else "Excursion handled."
    # counts analyst: res holds the lead's results and the hand-off's answer first
    roomrec, counter, plan = res[0], res[1], res[2]
    mine = [r for r in res[4:] if isinstance(r, dict)]
    counts = [r for r in mine if "location" in r]
    if not counts:
        return Reply(tool_calls=tuple(tool_call("get_particle_counts", {"room": room, "location": loc}) for loc in plan["locations"]))
    cls = [r for r in mine if "class_achieved" in r]
    if not cls:
        return Reply(tool_calls=(tool_call("compute_class", {"counts": [[c["location"], c["per_m3_0_5um"], c["per_m3_5um"]] for c in counts],
                                                             "target": roomrec["class"]}),))
    certs = [r for r in mine if "certificate" in r]
    if not certs:
        serial = counter["counter"]
        if SWITCH == "clean_counter_serial":
            serial = serial[:-2] + serial[-1] + serial[-2]
        return Reply(tool_calls=(tool_call("issue_certificate", {
            "room": room, "iso_class": cls[0]["class_achieved"], "locations": len(counts), "counter": serial,
            "sample_dates": sorted({c["date"] for c in counts}), "min_0_5um": min(c["per_m3_0_5um"] for c in counts)}),))
    return f"{room} requalified as {cls[0]['class_achieved']}: certificate {certs[0]['certificate']}."


# ----------------------------------------------------------------------------------------------- tools
@function_tool
def get_room(room: str) -> dict:
    """Cleanroom record: use, design class, floor area."""
    return {"room": room, **{k: v for k, v in ROOMS[room].items() if k != "counter"}}


@function_tool
def get_counter(room: str) -> dict:
    """The particle counter assigned to a room's requalification and its calibration due date."""
    c = ROOMS[room]["counter"]
    return {"counter": c, "calibration_due": INSTRUMENTS[c], "flow_lpm": 28.3}


@function_tool
def sampling_plan(area_m2: float) -> dict:
    """Number of sampling locations for a floor area (ISO 14644-1 Table A.1)."""
    idx = next(i for i, (a, _) in enumerate(TABLE_A1) if area_m2 <= a)
    if _switch("clean_location_table"):
        idx -= 1
    n = TABLE_A1[idx][1]
    return {"area_m2": area_m2, "locations": [f"L{i}" for i in range(1, n + 1)], "samples_per_location": 1, "volume_l": 28.3}


@function_tool
def get_particle_counts(room: str, location: str) -> dict:
    """Particle counts of one sampling location, per cubic metre, from the counter's upload."""
    lim05, lim5 = LIMITS[ROOMS[room]["class"]]
    date = WINDOW[0] if int(location[1:]) <= 5 else "2026-03-03"
    c05 = int(lim05 * (0.25 + 0.4 * rnd(room, location, "05")))
    c5 = int(lim5 * (0.15 + 0.4 * rnd(room, location, "5")))
    if _switch("clean_cached_upload") and location == "L4":
        date, c05, c5 = "2025-09-11", int(c05 * 0.8), int(c5 * 0.9)
    if location == "L7" and _switch("clean_download_crc"):
        try:
            raise IOError(f"counter download for {room}/{location}: CRC mismatch in sample block 2")
        except IOError:
            c05, c5 = 0, 0
    return {"room": room, "location": location, "date": date, "per_m3_0_5um": c05, "per_m3_5um": c5}


@function_tool
def compute_class(counts: list[list[str | int]], target: str) -> dict:
    """Classify a room from its locations' counts against the ISO 14644-1 class limits."""
    lim05, lim5 = LIMITS[target]
    worst05 = max(int(c[1]) for c in counts)
    worst5 = max(int(c[2]) for c in counts)
    ok = worst05 <= lim05 and worst5 <= lim5
    return {"class_achieved": target if ok else "not classified", "max_0_5um": worst05, "max_5um": worst5, "locations": len(counts)}


@function_tool(failure_error_function=None)
def issue_certificate(room: str, iso_class: str, locations: int, counter: str, sample_dates: list[str], min_0_5um: int) -> dict:
    """Issue the requalification certificate of a cleanroom."""
    area = ROOMS[room]["area_m2"]
    need = next(n for a, n in TABLE_A1 if area <= a)
    if locations < need:
        raise ValueError(f"certificate refused: {area} m2 requires {need} sampling locations (ISO 14644-1 Table A.1), {locations} reported")
    if counter not in INSTRUMENTS:
        raise ValueError(f"certificate refused: particle counter {counter} not in the instrument register")
    for d in sample_dates:
        if not WINDOW[0] <= d <= WINDOW[1]:
            raise ValueError(f"certificate refused: counts dated {d} outside the requalification window {WINDOW[0]}..{WINDOW[1]}")
    if min_0_5um <= 0:
        raise ValueError(f"certificate refused: a location reports 0 particles/m3 at 0.5 um; zero-count check failed for {room}")
    return {"certificate": f"CQ-{room}-2603", "room": room, "class": iso_class}


@function_tool(failure_error_function=None)
def open_excursion(room: str, reason: str) -> dict:
    """Open an environmental excursion record for a room."""
    raise ValueError(f"EXC-404: no out-of-limit count on record for {room} since 2026-02-01; excursion not opened")


def _agent(env) -> Agent:
    model = OpenAIChatCompletionsModel(model=env.model, openai_client=env.async_client)
    counts = Agent(name="counts_analyst", model=model, tools=[get_particle_counts, compute_class, issue_certificate],
                   instructions="You analyse particle counts: read every sampling location, classify the room, issue the certificate.")
    recovery = Agent(name="recovery_analyst", model=model, tools=[open_excursion],
                     instructions="You open excursion records for rooms whose counts exceed their class and plan the recovery.")
    return Agent(name="requalification_lead", model=model, tools=[get_room, get_counter, sampling_plan], handoffs=[counts, recovery],
                 instructions="You lead cleanroom requalifications: read the room and its counter, get the sampling plan, hand off.")


async def execute(inp: dict, env, run) -> None:
    await Runner.run(_agent(env), json.dumps({"room": inp["room"]}), run_config=RunConfig(workflow_name=RUN_NAME))
