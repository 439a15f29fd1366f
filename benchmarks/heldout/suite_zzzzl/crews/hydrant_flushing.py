"""hydrant-flushing: a water network crew's unidirectional mains-flushing planner (trajdebug SDK).

A flushing sequence opens one hydrant per leg with the leg's valves shut, fast enough to scour the
main (0.9 m/s) without pulling the zone below 20 m of residual head. The agent restores the crew's
session notes, lets the model call the network tools (zone pressure and valve status in parallel, then
every leg's hydrant flow test in parallel), parses the plan, works out velocity and head loss per leg,
has a notice sub-agent write to the affected customers, tells the control room (a flaky gateway,
retried) and issues the work order.
"""

from __future__ import annotations

import json
import math
from typing import Any

import trajdebug

from ._common import Env, as_assistant_message, assistant_calls, chat_step, first_json, fn_tool, system_of, \
    tool_results

NAME = "hydrant-flushing"
ROUTE = "sdk"
DOMAIN = "water distribution crew: unidirectional mains flushing, valves, hydrant flow tests, customer notices"
SHAPE = ("input, sequence retrieval, session-memory state step, model tool loop with ids (parallel calls), "
         "plan parser, per-leg hydraulics, velocity check, run.state write, notice sub-agent (LLM tool loop "
         "+ retrieval), retried gateway tool, work-order tool")

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


def _leg(n, main, dia, length, c, valves, hydrant):
    return {"leg": n, "main": main, "diameter_mm": dia, "length_m": length, "hw_c": c,
            "close_valves": valves, "hydrant": hydrant}


SEQUENCES: dict[str, dict[str, Any]] = {
    "UDF-N3-B": {"zone": "PZ-N3", "properties": 87, "streets": ["Mill Road", "Orchard Rise", "Kestrel Close"],
                 "legs": [_leg(1, "M-4410", 150, 380, 110, ["V-1021", "V-1022"], "HY-3381"),
                          _leg(2, "M-4412", 150, 260, 100, ["V-1025"], "HY-3394"),
                          _leg(3, "M-4415", 100, 190, 90, ["V-1027", "V-1028"], "HY-4402")]},
    "UDF-E1-A": {"zone": "PZ-E1", "properties": 64, "streets": ["Quarry Lane", "Beacon Way"],
                 "legs": [_leg(1, "M-6120", 150, 300, 110, ["V-2210"], "HY-6604"),
                          _leg(2, "M-6124", 150, 240, 105, ["V-2214", "V-2215"], "HY-6613"),
                          _leg(3, "M-6127", 100, 210, 95, ["V-2219"], "HY-6650")]},
    "UDF-N2-C": {"zone": "PZ-N2", "properties": 118, "streets": ["Fellside", "Hawthorn Drive", "Station Road"],
                 "legs": [_leg(1, "M-3301", 150, 560, 110, ["V-1410", "V-1411"], "HY-2901"),
                          _leg(2, "M-3305", 150, 310, 100, ["V-1415"], "HY-2917"),
                          _leg(3, "M-3309", 100, 150, 100, ["V-1418"], "HY-2930")]},
    "UDF-W4-A": {"zone": "PZ-W4", "properties": 142, "streets": ["Long Acre", "Wharf Street", "Chapel Row"],
                 "legs": [_leg(1, "M-8801", 150, 500, 120, ["V-3301"], "HY-5501"),
                          _leg(2, "M-8803", 150, 360, 110, ["V-3305", "V-3306"], "HY-5506"),
                          _leg(3, "M-8806", 100, 220, 95, ["V-3309"], "HY-5512"),
                          _leg(4, "M-8808", 100, 280, 100, ["V-3312"], "HY-5520")]},
    "UDF-S2-B": {"zone": "PZ-S2", "properties": 53, "streets": ["Brook View", "Tanner's Yard"],
                 "legs": [_leg(1, "M-2240", 150, 330, 110, ["V-0810"], "HY-1702"),
                          _leg(2, "M-2243", 100, 200, 90, ["V-0814", "V-0815"], "HY-1711"),
                          _leg(3, "M-2246", 150, 260, 115, ["V-0819"], "HY-1725")]},
}
ZONE_PROPERTIES = {"PZ-N3": 412, "PZ-E1": 298, "PZ-N2": 505, "PZ-W4": 377, "PZ-S2": 231}
ZONE_LIVE = {"PZ-N3": 52.0, "PZ-E1": 46.0, "PZ-N2": 31.0, "PZ-W4": 58.0, "PZ-S2": 41.0}
ZONE_DESIGN = {"PZ-N3": 55.0, "PZ-E1": 48.0, "PZ-N2": 47.0, "PZ-W4": 60.0, "PZ-S2": 44.0}

# Hydrant flow-test register: flow and the unit the test rig wrote it in.
HYDRANTS = {
    "HY-3381": ("PZ-N3", 28, "l/s", "2024-05-14"), "HY-3394": ("PZ-N3", 31, "l/s", "2024-05-14"),
    "HY-4402": ("PZ-N3", 960, "l/min", "2025-06-02"),
    "HY-6604": ("PZ-E1", 24, "l/s", "2024-07-09"), "HY-6613": ("PZ-E1", 27, "l/s", "2024-07-09"),
    "HY-6631": ("PZ-E1", 8, "l/s", "2023-03-21"), "HY-6650": ("PZ-E1", 14, "l/s", "2024-07-10"),
    "HY-2901": ("PZ-N2", 26, "l/s", "2024-09-17"), "HY-2917": ("PZ-N2", 24, "l/s", "2024-09-17"),
    "HY-2930": ("PZ-N2", 13, "l/s", "2024-09-18"),
    "HY-5501": ("PZ-W4", 30, "l/s", "2025-01-28"), "HY-5506": ("PZ-W4", 26, "l/s", "2025-01-28"),
    "HY-5512": ("PZ-W4", 15, "l/s", "2025-01-29"), "HY-5520": ("PZ-W4", 12, "l/s", "2025-01-29"),
    "HY-2207": ("PZ-S1", 18, "l/s", "2024-11-05"),
    "HY-1702": ("PZ-S2", 25, "l/s", "2024-04-23"), "HY-1711": ("PZ-S2", 12, "l/s", "2024-04-23"),
    "HY-1725": ("PZ-S2", 29, "l/s", "2024-04-24"),
}

INPUTS = [
    {"sequence": "UDF-N3-B", "date": "2025-10-14", "crew": "NW1"},
    {"sequence": "UDF-E1-A", "date": "2025-10-15", "crew": "NW3"},
    {"sequence": "UDF-N2-C", "date": "2025-10-16", "crew": "NW1"},
    {"sequence": "UDF-W4-A", "date": "2025-10-21", "crew": "NW2"},
    {"sequence": "UDF-S2-B", "date": "2025-10-22", "crew": "NW3"},
]

# The crews' own standing notes, and the transcript each crew's chat kept from its last job.
CREW_NOTES = {"NW1": "NW1 carries Type-B hydrant keys and a 63 mm standpipe.",
              "NW2": "NW2 van has the 80 mm standpipe and a turbidity meter.",
              "NW3": "NW3: two operatives, valve key 1.2 m."}
LAST_JOB = {"NW2": [
    {"role": "user", "content": "Job UDF-S1-A on 2025-10-07: leg 3 HY-5517 seized at the last visit, "
                                "open HY-2207 instead for leg 3."},
    {"role": "assistant", "content": "Noted: leg 3 runs from HY-2207."}]}

CASES = [
    {"id": "hydrant_flow_per_minute", "input": 0, "switch": "flow_unit", "fault_kind": "unit_error",
     "root": ("get_hydrant_flow", 3), "failure": ("issue_work_order", 1),
     "description": "get_hydrant_flow passes on HY-4402's test flow of 960 l/min as 960 l/s, so leg 3 is planned "
                    "at 960 l/s and the work-order check finds the residual head far below 20 m."},
    {"id": "hydrant_transposed_id", "input": 1, "switch": "transposed_id", "fault_kind": "wrong_tool_args",
     "root": ("planner_turn", 2), "failure": ("check_scour_velocity", 1),
     "description": "the planner asks get_hydrant_flow for HY-6631 instead of leg 2's HY-6613, takes that small "
                    "hydrant's 8 l/s for leg 2 and the scour check finds 0.45 m/s, below 0.9 m/s."},
    {"id": "hydrant_scada_default", "input": 2, "switch": "scada_timeout", "fault_kind": "swallowed_error",
     "root": ("get_zone_pressure", 1), "failure": ("issue_work_order", 1),
     "description": "get_zone_pressure catches a SCADA timeout and answers PZ-N2's design head of 47 m instead of "
                    "the live 31 m, so the legs run at full flow and leg 1's residual at the live head is 19.1 m."},
    {"id": "hydrant_old_transcript", "input": 3, "switch": "crew_keyed_session", "fault_kind": "context_pollution",
     "root": ("restore_session", 1), "failure": ("issue_work_order", 1),
     "description": "restore_session brings back crew NW2's chat from job UDF-S1-A, whose note to open HY-2207 "
                    "for leg 3 the planner follows, and the work order refuses a hydrant of zone PZ-S1."},
    {"id": "hydrant_notice_zone", "input": 4, "switch": "notice_by_zone", "fault_kind": "subagent_wrong_entity",
     "root": ("draft_customer_notice", 1), "failure": ("issue_work_order", 1),
     "description": "the notice sub-agent looks up the customers of the whole zone PZ-S2 (231 properties) instead "
                    "of sequence UDF-S2-B (53), and the work order refuses the notice."},
]


# -- hydraulics ---------------------------------------------------------------------------------------

def hazen_williams(length_m: float, flow_lps: float, c: float, diameter_mm: float) -> float:
    q, d = flow_lps / 1000, diameter_mm / 1000
    return 10.67 * length_m * q ** 1.852 / (c ** 1.852 * d ** 4.87)


def velocity(flow_lps: float, diameter_mm: float) -> float:
    d = diameter_mm / 1000
    return (flow_lps / 1000) / (math.pi * d * d / 4)


# -- the model --------------------------------------------------------------------------------------

def _planner_answer(request: Any) -> Any:
    msgs = request.body["messages"]
    job = json.loads(msgs[-1]["content"]) if msgs[-1]["role"] == "user" else None
    if job is None:
        job = next(json.loads(m["content"]) for m in reversed(msgs)
                   if m["role"] == "user" and m["content"].startswith("{"))
    results = tool_results(request)
    calls = assistant_calls(request)
    legs = job["legs"]
    # notes from the conversation so far ("open HY-xxxx instead for leg n")
    swaps = {}
    for m in msgs:
        if m["role"] == "user" and "instead for leg" in (m.get("content") or ""):
            text = m["content"]
            hy = text.split("open ")[1].split(" ")[0]
            swaps[int(text.rsplit("leg ", 1)[1].rstrip("."))] = hy
    hydrant_for = {leg["leg"]: swaps.get(leg["leg"], leg["hydrant"]) for leg in legs}
    if not results:
        valves = [v for leg in legs for v in leg["close_valves"]]
        return _reply([("get_zone_pressure", {"zone": job["zone"]}), ("get_valve_status", {"valves": valves})])
    if not any(c["name"] == "get_hydrant_flow" for c in calls):
        asks = []
        for leg in legs:
            hy = hydrant_for[leg["leg"]]
            if _on("transposed_id") and hy == "HY-6613":
                hy = "HY-6631"
            asks.append(("get_hydrant_flow", {"hydrant": hy}))
        return _reply(asks)
    by_id = {r["tool_call_id"]: r["content"] for r in results}
    pressure = next(by_id[c["id"]] for c in calls if c["name"] == "get_zone_pressure")
    flows = [by_id[c["id"]] for c in calls if c["name"] == "get_hydrant_flow"]
    factor = 1.0 if pressure["static_head_m"] >= 40 else 0.7
    plan = {"sequence": job["sequence"], "static_head_m": pressure["static_head_m"], "legs": []}
    for leg, flow in zip(legs, flows):
        plan["legs"].append({"leg": leg["leg"], "hydrant": hydrant_for[leg["leg"]],
                             "close_valves": leg["close_valves"],
                             "target_flow_lps": round(flow["flow_lps"] * factor, 1)})
    return ("Flushing plan (legs in order, flows at %d%% of the flow test):\n" % round(factor * 100)
            + json.dumps(plan))


def _reply(calls):
    from trajdebug.testing import Reply, tool_call

    return Reply(tool_calls=tuple(tool_call(n, a) for n, a in calls))


def _notice_answer(request: Any) -> Any:
    msgs = request.body["messages"]
    brief = json.loads(msgs[1]["content"])
    results = tool_results(request)
    if not results:
        if _on("notice_by_zone"):
            return _reply([("lookup_affected_properties", {"zone": brief["zone"]})])
        return _reply([("lookup_affected_properties", {"sequence": brief["sequence"]})])
    found = results[0]["content"]
    streets = ", ".join(found["streets"])
    return (f"Dear customer, we are flushing the water mains in {streets} on {brief['date']} between 09:00 and "
            f"15:00. Your water may look discoloured for a short time; run the cold tap until it clears. "
            f"This notice goes to {found['properties']} properties.")


def brain(request: Any) -> Any:
    system = system_of(request)
    if system.startswith("You plan mains flushing"):
        return _planner_answer(request)
    if system.startswith("You write customer notices"):
        return _notice_answer(request)
    raise ValueError("unexpected prompt")


# -- tools and steps ----------------------------------------------------------------------------------

@trajdebug.step(kind="input")
def receive_job(job: dict) -> dict:
    return dict(job)


@trajdebug.step(kind="retrieval")
def load_flushing_sequence(sequence: str) -> dict:
    s = SEQUENCES[sequence]
    return {"sequence": sequence, "zone": s["zone"], "streets": list(s["streets"]),
            "legs": [dict(leg) for leg in s["legs"]]}


@trajdebug.step(kind="state")
def restore_session(crew: str, sequence: str) -> list[dict]:
    """The crew's chat memory for this job: its standing notes (and, keyed by crew, its last job)."""
    state = trajdebug.current_run().state
    memory = [{"role": "user", "content": CREW_NOTES[crew]}]
    if _on("crew_keyed_session"):
        memory += [dict(m) for m in LAST_JOB.get(crew, [])]
    state["session"] = memory
    return memory


def _scada_read(zone: str) -> float:
    if _on("scada_timeout"):
        raise TimeoutError(f"SCADA historian did not answer for {zone}")
    return ZONE_LIVE[zone]


def get_zone_pressure(zone: str, when: str) -> dict:
    try:
        head = _scada_read(zone)
    except TimeoutError:
        head = ZONE_DESIGN[zone]
    return {"zone": zone, "static_head_m": head, "read_at": when}


def get_valve_status(valves: list[str]) -> list[dict]:
    return [{"valve": v, "status": "open", "operable": True, "turns_to_close": 18 + int(v[-2:]) % 9} for v in valves]


def get_hydrant_flow(hydrant: str) -> dict:
    zone, flow, unit, tested = HYDRANTS[hydrant]
    if unit == "l/min" and not _on("flow_unit"):
        flow = round(flow / 60, 1)
    return {"hydrant": hydrant, "zone": zone, "flow_lps": flow, "tested": tested}


PLANNER_TOOLS = [
    fn_tool("get_zone_pressure", "Live static head of a pressure zone (SCADA).", {"zone": {"type": "string"}}),
    fn_tool("get_valve_status", "Status of network valves.", {"valves": {"type": "array", "items": {"type": "string"}}}),
    fn_tool("get_hydrant_flow", "Latest flow test of a hydrant.", {"hydrant": {"type": "string"}}),
]


@trajdebug.step(kind="parse")
def parse_leg_plan(answer: dict) -> dict:
    plan = first_json(answer["content"])
    for leg in plan["legs"]:
        leg["target_flow_lps"] = float(leg["target_flow_lps"])
    return plan


@trajdebug.step(kind="other")
def estimate_leg_hydraulics(leg: dict, plan_leg: dict, static_head_m: float) -> dict:
    q = plan_leg["target_flow_lps"]
    loss = hazen_williams(leg["length_m"], q, leg["hw_c"], leg["diameter_mm"])
    return {"leg": leg["leg"], "velocity_ms": round(velocity(q, leg["diameter_mm"]), 2),
            "head_loss_m": round(loss, 1), "residual_head_m": round(static_head_m - loss, 1)}


@trajdebug.step(kind="condition")
def check_scour_velocity(hydraulics: list[dict]) -> str:
    for h in hydraulics:
        if h["velocity_ms"] < 0.9:
            raise ValueError(f"leg {h['leg']}: {h['velocity_ms']} m/s is below the 0.9 m/s scour velocity")
    return "all legs scour"


@trajdebug.step(kind="state")
def store_plan(plan: dict, hydraulics: list[dict]) -> dict:
    record = {"sequence": plan["sequence"], "legs": plan["legs"], "hydraulics": hydraulics}
    trajdebug.current_run().state["plan"] = record
    return record


_ENV: dict[str, Env] = {}


@trajdebug.step(kind="agent")
def draft_customer_notice(brief: dict) -> dict:
    env = _ENV["env"]
    msgs = [{"role": "system", "content": "You write customer notices for mains flushing. Look up the affected "
                                          "properties first, then write a short notice."},
            {"role": "user", "content": json.dumps(brief)}]
    tools = [fn_tool("lookup_affected_properties", "Properties supplied by a flushing sequence or a zone.",
                     {"sequence": {"type": "string"}, "zone": {"type": "string"}}, required=[])]
    found = None
    while True:
        out = chat_step(env, "notice_writer", msgs, tools)
        if not out["tool_calls"]:
            break
        msgs.append(as_assistant_message(out))
        for call in out["tool_calls"]:
            with trajdebug.step("lookup_affected_properties", kind="retrieval", input=call["arguments"]) as t:
                t.output = found = lookup_affected_properties(**call["arguments"])
            msgs.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(found)})
    return {"sequence": brief["sequence"], "properties": found["properties"], "text": out["content"]}


def lookup_affected_properties(sequence: str | None = None, zone: str | None = None) -> dict:
    if sequence:
        s = SEQUENCES[sequence]
        return {"sequence": sequence, "properties": s["properties"], "streets": s["streets"]}
    streets = sorted({st for s in SEQUENCES.values() if s["zone"] == zone for st in s["streets"]})
    return {"zone": zone, "properties": ZONE_PROPERTIES[zone], "streets": streets}


_GATEWAY = {"calls": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def notify_control_room(zone: str, sequence: str, date: str) -> dict:
    _GATEWAY["calls"] += 1
    if zone in ("PZ-E1", "PZ-W4") and _GATEWAY["calls"] == 1:
        raise ConnectionError("control room gateway did not answer")
    return {"zone": zone, "sequence": sequence, "date": date, "acknowledged": True}


@trajdebug.step(kind="tool")
def issue_work_order(job: dict, notice: dict, ack: dict) -> dict:
    plan = trajdebug.current_run().state["plan"]
    seq = SEQUENCES[job["sequence"]]
    zone = seq["zone"]
    for leg in plan["legs"]:
        hz = HYDRANTS[leg["hydrant"]][0]
        if hz != zone:
            raise ValueError(f"work order refused: leg {leg['leg']} hydrant {leg['hydrant']} is in zone {hz}, "
                             f"not {zone}")
    live = ZONE_LIVE[zone]
    for leg, planned in zip(seq["legs"], plan["legs"]):
        loss = hazen_williams(leg["length_m"], planned["target_flow_lps"], leg["hw_c"], leg["diameter_mm"])
        if live - loss < 20:
            raise ValueError(f"work order refused: leg {leg['leg']} at {planned['target_flow_lps']} l/s leaves "
                             f"{live - loss:.1f} m residual head at the live {live} m, below 20 m")
    if notice["properties"] != seq["properties"]:
        raise ValueError(f"work order refused: the notice covers {notice['properties']} properties, sequence "
                         f"{job['sequence']} supplies {seq['properties']}")
    return {"work_order": "WO-" + job["sequence"][4:] + "-" + job["date"][5:].replace("-", ""),
            "crew": job["crew"], "legs": len(plan["legs"]), "notice_properties": notice["properties"]}


# -- the agent ----------------------------------------------------------------------------------------

PLANNER_SYSTEM = ("You plan mains flushing legs. Read the zone's static head and the valves, then every leg's "
                  "hydrant flow test. Run each leg at its test flow when the static head is 40 m or more, else "
                  "at 70% of it. Answer with the plan as JSON.")


def run(inp: dict, path: str, env: Env) -> None:
    _GATEWAY["calls"] = 0
    _ENV["env"] = env
    task = f"flushing {inp['sequence']} on {inp['date']}"
    with trajdebug.run(NAME, task=task, path=path) as r:
        job = receive_job(inp)
        seq = load_flushing_sequence(job["sequence"])
        memory = restore_session(job["crew"], job["sequence"])
        tools = {"get_zone_pressure": lambda zone: get_zone_pressure(zone, job["date"] + "T06:10"),
                 "get_valve_status": get_valve_status, "get_hydrant_flow": get_hydrant_flow}
        with trajdebug.step("flush_planner", kind="agent", input={"job": job, "sequence": seq}) as planner:
            msgs = [{"role": "system", "content": PLANNER_SYSTEM}, *memory,
                    {"role": "user", "content": json.dumps({**seq, "date": job["date"]})}]
            while True:
                out = chat_step(env, "planner_turn", msgs, PLANNER_TOOLS)
                if not out["tool_calls"]:
                    break
                msgs.append(as_assistant_message(out))
                for call in out["tool_calls"]:
                    with trajdebug.step(call["name"], kind="tool", input=call["arguments"]) as t:
                        t.output = tools[call["name"]](**call["arguments"])
                    msgs.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(t.output)})
            planner.output = out
        plan = parse_leg_plan(out)
        hydraulics = [estimate_leg_hydraulics(leg, pl, plan["static_head_m"])
                      for leg, pl in zip(seq["legs"], plan["legs"])]
        check_scour_velocity(hydraulics)
        store_plan(plan, hydraulics)
        notice = draft_customer_notice({"sequence": job["sequence"], "zone": seq["zone"], "date": job["date"],
                                             "streets": seq["streets"]})
        ack = notify_control_room(seq["zone"], job["sequence"], job["date"])
        issue_work_order(job, notice, ack)
        r.state["done"] = True
