"""reefer-yard-monitor: reefer containers discharged at a container terminal, taken into the reefer stacks.

Route: trajdebug's own recorder (`trajdebug.run`, decorated steps, `with trajdebug.step`, `run.state`), JSONL.
Shape: an input step, a discharge-list tool, a plug-availability tool, a planning model call and its parser,
then a loop over the units (an enclosing step each: booking tool, controller-log tool with a retry, log parser,
cold-chain check, plug router, yard-plan memory write), a handling-notes retriever, a second model call for the
monitoring rounds and its parser, a final plan check and the terminal operating system's publish call.
"""

from __future__ import annotations

import json
from typing import Any

import trajdebug
from trajdebug.testing import FakeModelServer

from ._kit import dumps, system_text, text_of

NAME = "reefer-yard-monitor"
ROUTE = "sdk"
DOMAIN = "container terminal reefer stack: discharged reefer units checked and plugged in"
SHAPE = "input, 2 tools, llm + parse, loop of enclosing steps (tool, tool with retry, parse, check, router, state write), retrieval, llm + parse, final check, publish tool"

SWITCH: str | None = None


def _on(case: str) -> bool:
    return SWITCH == case


# ----------------------------------------------------------------------------------------------- data

CALLS = [
    {
        "vessel": "MSC ARICA", "voyage": "NA412R", "berth": "K5", "berthed_at": "2025-03-11T04:30Z",
        "free": {"R2": {"free": 8, "first_free": 11, "ca": False}, "R3": {"free": 5, "first_free": 3, "ca": False},
                 "R5": {"free": 3, "first_free": 17, "ca": True}},
        "units": [
            ("MEDU9083114", "MSC-7712041", "frozen beef", -18.0, "ThermoKing MP-4000", "C", None),
            ("CXRU1468820", "MSC-7712055", "bananas", 13.3, "Daikin LXE10E", "C", None),
            ("TRIU8871052", "MSC-7712063", "avocados", 5.5, "StarCool SCI-CA", "C", "CA"),
            ("SZLU9120457", "MSC-7712070", "chilled pork", -1.0, "Carrier ML3", "F", None),
        ],
    },
    {
        "vessel": "MAERSK KOLKATA", "voyage": "310W", "berth": "K2", "berthed_at": "2025-03-12T22:10Z",
        "free": {"R1": {"free": 6, "first_free": 4, "ca": False}, "R3": {"free": 4, "first_free": 9, "ca": False},
                 "R5": {"free": 2, "first_free": 21, "ca": True}, "R6": {"free": 3, "first_free": 2, "ca": False}},
        "units": [
            ("MNBU3047712", "MAEU-2290301", "table grapes", -0.5, "Carrier ML3", "F", None),
            ("MNBU0318840", "MAEU-2290306", "pharmaceuticals", 5.0, "StarCool SCI", "C", None),
            ("MSWU1003297", "MAEU-2290309", "frozen shrimp", -20.0, "ThermoKing MP-4000", "C", None),
            ("SUDU6230418", "MAEU-2290314", "apples", 1.0, "Daikin LXE10E-CA", "C", "CA"),
            ("MNBU4129633", "MAEU-2290322", "chocolate", 14.0, "Carrier ML3", "C", None),
        ],
    },
    {
        "vessel": "CMA CGM LITANI", "voyage": "0FLN5W", "berth": "K4", "berthed_at": "2025-03-14T07:05Z",
        "free": {"R2": {"free": 5, "first_free": 2, "ca": False}, "R4": {"free": 6, "first_free": 14, "ca": False},
                 "R5": {"free": 4, "first_free": 6, "ca": True}},
        "units": [
            ("CGMU5530982", "CMA-LIT-88014", "ice cream", -25.0, "ThermoKing MP-4000", "C", None),
            ("TGHU9944120", "CMA-LIT-88021", "bananas", 13.3, "Daikin LXE10E", "C", None),
            ("CMAU7741030", "CMA-LIT-88030", "chilled lamb", -1.5, "Carrier ML3", "F", None),
            ("TRLU1862274", "CMA-LIT-88033", "avocados", 5.0, "StarCool SCI-CA", "C", "CA"),
        ],
    },
    {
        "vessel": "SANTOS EXPRESS", "voyage": "2510E", "berth": "K1", "berthed_at": "2025-03-15T13:40Z",
        "free": {"R3": {"free": 7, "first_free": 5, "ca": False}, "R6": {"free": 4, "first_free": 12, "ca": False},
                 "R5": {"free": 2, "first_free": 9, "ca": True}},
        "units": [
            ("HLXU8802145", "HLCU-5510873", "frozen chicken", -18.0, "ThermoKing MP-4000", "C", None),
            ("HLBU9057731", "HLCU-5510880", "kiwifruit", 0.0, "Daikin LXE10E", "C", None),
            ("CPSU5120668", "HLCU-5510884", "mangoes", 10.0, "Carrier ML3", "F", None),
            ("HLXU6630912", "HLCU-5510891", "pharmaceuticals", 5.0, "StarCool SCI", "C", None),
        ],
    },
    {
        "vessel": "ONE HARMONY", "voyage": "045W", "berth": "K3", "berthed_at": "2025-03-17T02:50Z",
        "free": {"R1": {"free": 3, "first_free": 15, "ca": False}, "R2": {"free": 9, "first_free": 1, "ca": False},
                 "R5": {"free": 3, "first_free": 12, "ca": True}},
        "units": [
            ("ONEU5518830", "ONEY-TYO-30417", "frozen tuna", -35.0, "ThermoKing MP-4000", "C", None),
            ("TCLU1290543", "ONEY-TYO-30422", "blueberries", -0.5, "Carrier ML3", "F", None),
            ("SEGU9002114", "ONEY-TYO-30428", "avocados", 5.5, "Daikin LXE10E-CA", "C", "CA"),
            ("ONEU6639275", "ONEY-TYO-30431", "cheese", 4.0, "ThermoKing MP-4000", "C", None),
        ],
    },
]

INPUTS = [
    {"task": f"reefer intake {c['vessel']} {c['voyage']} at berth {c['berth']}",
     "request": {"vessel": c["vessel"], "voyage": c["voyage"], "berth": c["berth"], "terminal": "CT-North"}}
    for c in CALLS
]

CASES = [
    {"id": "reefer_fahrenheit_log", "input": 0, "switch": "fahrenheit", "fault_kind": "unit_error",
     "root": {"name": "parse_controller_log", "match": "ID=SZLU9120457"}, "root_kind": "parse", "failure": "check_cold_chain",
     "description": "parse_controller_log read the Carrier unit SZLU9120457's log, which reports in Fahrenheit, "
                    "as Celsius, so its set point 30.2 was checked against the booked -1.0 C."},
    {"id": "reefer_cached_reading", "input": 2, "switch": "cached_reading", "fault_kind": "stale_data",
     "root": {"name": "read_controller_log", "match": "{\"container\": \"TGHU9944120\""}, "root_kind": "tool", "failure": "publish_yard_plan",
     "description": "read_controller_log returned the gateway's cached log of TGHU9944120 from 2025-03-12, "
                    "taken before the vessel berthed, which the terminal system rejected when the plan was published."},
    {"id": "reefer_slot_under_booking", "input": 1, "switch": "slot_key", "fault_kind": "bad_memory_write",
     "root": {"name": "record_yard_slot", "match": "{\"container\": \"SUDU6230418\""}, "root_kind": "state", "failure": "validate_yard_plan",
     "description": "record_yard_slot stored the plug of SUDU6230418 under its booking number MAEU-2290314, "
                    "so the yard plan had no plug for the container when it was validated."},
    {"id": "reefer_ca_unit_routed", "input": 4, "switch": "ca_route", "fault_kind": "wrong_routing",
     "root": {"name": "assign_plug", "match": "{\"unit\": {\"container\": \"SEGU9002114\""}, "root_kind": "condition", "failure": "validate_yard_plan",
     "description": "assign_plug sent the controlled-atmosphere unit SEGU9002114 to standard block R2 instead of the "
                    "CA block R5."},
    {"id": "reefer_plan_extra_block", "input": 3, "switch": "plan_block", "fault_kind": "hallucinated_value",
     "root": {"name": "plan_intake", "occurrence": 1}, "root_kind": "llm", "failure": "publish_yard_plan",
     "description": "plan_intake put the first units into block R4 with 3 plugs, a block the availability list did "
                    "not offer, and the terminal system refused the plugs there at publish."},
]


def _call(request: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in CALLS if c["vessel"] == request["vessel"])


def _log_time(call: dict[str, Any], i: int) -> str:
    day, clock = call["berthed_at"][:10], call["berthed_at"][11:16]
    h, m = int(clock[:2]), int(clock[3:]) + 52 + 4 * i
    h, m = h + m // 60, m % 60
    return f"{day}T{h:02d}:{m:02d}Z"


def _f(c: float) -> float:
    return round(c * 9 / 5 + 32, 1)


# ----------------------------------------------------------------------------------------------- tools

_client: Any = None
_model = "fake-model"
_gateway_calls: dict[str, int] = {}


@trajdebug.step(kind="input")
def take_discharge_request(request: dict[str, Any]) -> dict[str, Any]:
    return {"vessel": request["vessel"].upper(), "voyage": request["voyage"], "berth": request["berth"],
            "terminal": request.get("terminal", "CT-North")}


@trajdebug.step(kind="tool")
def fetch_discharge_list(vessel: str, voyage: str) -> dict[str, Any]:
    call = next(c for c in CALLS if c["vessel"] == vessel and c["voyage"] == voyage)
    return {"vessel": vessel, "voyage": voyage, "berthed_at": call["berthed_at"],
            "reefers": [{"container": u[0], "booking": u[1], "iso": "45R1", "service": u[6] or "standard"}
                        for u in call["units"]]}


@trajdebug.step(kind="tool")
def yard_plug_availability(terminal: str, vessel: str) -> dict[str, Any]:
    call = next(c for c in CALLS if c["vessel"] == vessel)
    return {"terminal": terminal, "blocks": {k: dict(v) for k, v in call["free"].items()}}


def _chat(messages: list[dict[str, Any]]) -> dict[str, Any]:
    reply = _client.chat.completions.create(model=_model, messages=messages, temperature=0)
    trajdebug.current_step().usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                                   completion_tokens=reply.usage.completion_tokens)
    return reply.choices[0].message.model_dump(exclude_none=True)


@trajdebug.step(kind="llm")
def plan_intake(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return _chat(messages)


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> dict[str, Any]:
    body = text[text.index("{"): text.rindex("}") + 1]
    plan = json.loads(body)
    return {"blocks": [{"block": b["block"], "plugs": int(b["plugs"])} for b in plan["blocks"]],
            "ca_block": {"block": plan["ca_block"]["block"], "plugs": int(plan["ca_block"]["plugs"])},
            "sequence": list(plan.get("sequence", []))}


@trajdebug.step(kind="tool")
def lookup_booking(booking: str) -> dict[str, Any]:
    for call in CALLS:
        for c, b, commodity, sp, ctrl, _unit, service in call["units"]:
            if b == booking:
                vent = 25 if commodity == "bananas" else (0 if sp < -5 else 15)
                out = {"booking": b, "container": c, "commodity": commodity, "set_point_c": sp,
                       "vent_cbm_h": vent, "controller": ctrl, "atmosphere": "CA" if service else "air"}
                if service:
                    out.update({"o2_pct": 5.0, "co2_pct": 7.0 if "avocado" in commodity else 2.0})
                return out
    raise KeyError(booking)


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def read_controller_log(container: str, berthed_at: str) -> str:
    _gateway_calls[container] = _gateway_calls.get(container, 0) + 1
    if container == "MNBU0318840" and _gateway_calls[container] == 1:
        raise ConnectionError("reefer gateway RG-07 did not answer within 5 s")
    call = next(c for c in CALLS if any(u[0] == container for u in c["units"]))
    i, unit = next((i, u) for i, u in enumerate(call["units"]) if u[0] == container)
    sp = unit[3]
    sup, ret = round(sp - 0.3 - 0.1 * i, 1), round(sp + 0.6 + 0.1 * i, 1)
    ts = _log_time(call, i)
    if container == "TGHU9944120" and _on("cached_reading"):
        # the gateway answers from its cache when the unit has not reported since it was unplugged aboard
        ts, sup, ret = "2025-03-12T18:20Z", round(sp - 0.2, 1), round(sp + 0.9, 1)
    if unit[5] == "F":
        sp, sup, ret = _f(sp), _f(sup), _f(ret)
    alarms = "none" if i % 3 else "AL20 cleared"
    return (f"CTRL={unit[4]} | ID={container} | TS={ts} | UNIT={unit[5]} | SP={sp:.1f} | SUP={sup:.1f} | "
            f"RET={ret:.1f} | ALARMS={alarms}")


@trajdebug.step(kind="parse")
def parse_controller_log(log: str) -> dict[str, Any]:
    fields = dict(part.strip().split("=", 1) for part in log.split("|"))
    values = {k: float(fields[k]) for k in ("SP", "SUP", "RET")}
    if fields.get("UNIT") == "F" and not _on("fahrenheit"):
        values = {k: round((v - 32) * 5 / 9, 1) for k, v in values.items()}
    return {"container": fields["ID"], "controller": fields["CTRL"], "taken_at": fields["TS"],
            "set_point_c": values["SP"], "supply_c": values["SUP"], "return_c": values["RET"],
            "alarms": [] if fields["ALARMS"] == "none" else [fields["ALARMS"]]}


@trajdebug.step(kind="condition")
def check_cold_chain(booking: dict[str, Any], reading: dict[str, Any]) -> dict[str, Any]:
    if abs(reading["set_point_c"] - booking["set_point_c"]) > 0.3:
        raise ValueError(f"controller set point {reading['set_point_c']:.1f} C on {booking['container']} does not "
                         f"match the booked {booking['set_point_c']:.1f} C ({booking['commodity']})")
    limit = 2.0 if booking["set_point_c"] < -5 else 1.0
    deviation = round(reading["supply_c"] - reading["set_point_c"], 1)
    if abs(deviation) > limit:
        raise ValueError(f"supply air on {booking['container']} is {deviation:+.1f} C off the set point")
    return {"container": booking["container"], "status": "in range", "supply_deviation_c": deviation}


@trajdebug.step(kind="condition")
def assign_plug(unit: dict[str, Any], plan: dict[str, Any], blocks: dict[str, Any]) -> dict[str, Any]:
    used = trajdebug.current_run().state.get("used_plugs", {})
    ca_unit = unit["service"] == "CA"
    if _on("ca_route") and unit["container"] == "SEGU9002114":
        ca_unit = unit["iso"] != "45R1"  # the CA flag read from the ISO type, which is 45R1 for CA units too
    if ca_unit:
        choice = plan["ca_block"]["block"]
    else:
        choice = next((b["block"] for b in plan["blocks"] if used.get(b["block"], 0) < b["plugs"]), None)
        if choice is None:  # reservations used up: overflow to the standard block with the most plugs left
            left = {k: v["free"] - used.get(k, 0) for k, v in blocks.items() if not v["ca"]}
            choice = max(left, key=lambda k: left[k])
    first = blocks.get(choice, {}).get("first_free", 1)
    return {"container": unit["container"], "block": choice, "plug": f"{choice}-{first + used.get(choice, 0):02d}"}


@trajdebug.step(kind="state")
def record_yard_slot(container: str, booking: str, slot: dict[str, Any], reading: dict[str, Any]) -> dict[str, Any]:
    state = trajdebug.current_run().state
    key = booking if _on("slot_key") and container == "SUDU6230418" else container
    entry = {"plug": slot["plug"], "block": slot["block"], "reading_at": reading["taken_at"]}
    plan = dict(state.get("yard_plan", {}))
    plan[key] = entry
    state["yard_plan"] = plan
    used = dict(state.get("used_plugs", {}))
    used[slot["block"]] = used.get(slot["block"], 0) + 1
    state["used_plugs"] = used
    return {"key": key, **entry}


NOTES = {
    "bananas": "Ventilation 25 m3/h; check for ripening (ethylene) at every round; pulp 13-14 C.",
    "avocados": "Controlled atmosphere: verify O2 and CO2 readings every round; keep the gas line connected.",
    "apples": "Controlled atmosphere: verify O2 and CO2; low-O2 alarm needs the CA technician.",
    "pharmaceuticals": "GDP lane: log every reading; any excursion outside 2-8 C is reported to the shipper.",
    "frozen": "Frozen cargo: supply within 2 C of set point; defrost cycles are normal.",
    "chilled": "Chilled meat: supply within 1 C; no top-icing.",
    "default": "Check set point, supply and return air at every round.",
}


@trajdebug.step(kind="retrieval")
def retrieve_handling_notes(commodities: list[str]) -> list[dict[str, Any]]:
    docs = []
    for c in sorted(set(commodities)):
        key = next((k for k in NOTES if k in c), "default")
        docs.append({"commodity": c, "note": NOTES[key], "score": 0.91 if key != "default" else 0.42})
    return docs


@trajdebug.step(kind="llm")
def draft_monitoring_rounds(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return _chat(messages)


@trajdebug.step(kind="parse")
def parse_rounds(text: str) -> dict[str, Any]:
    rounds = json.loads(text[text.index("{"): text.rindex("}") + 1])
    return {"rounds": [{"block": r["block"], "every_h": int(r["every_h"]), "units": list(r["units"])}
                       for r in rounds["rounds"]]}


@trajdebug.step(kind="condition")
def validate_yard_plan(discharge: dict[str, Any], blocks: dict[str, Any], rounds: dict[str, Any]) -> dict[str, Any]:
    plan = trajdebug.current_run().state.get("yard_plan", {})
    for unit in discharge["reefers"]:
        slot = plan.get(unit["container"])
        if slot is None:
            raise LookupError(f"{unit['container']} has no plug in the yard plan")
        if unit["service"] == "CA" and not blocks.get(slot["block"], {}).get("ca", False):
            raise ValueError(f"controlled-atmosphere unit {unit['container']} is planned in {slot['block']}, "
                             f"which has no CA service")
    plugs = [s["plug"] for s in plan.values()]
    if len(set(plugs)) != len(plugs):
        raise ValueError("two units share a plug")
    covered = {u for r in rounds["rounds"] for u in r["units"]}
    missing = [u["container"] for u in discharge["reefers"] if u["container"] not in covered]
    return {"units": len(plan), "blocks": sorted({s["block"] for s in plan.values()}), "unmonitored": missing}


@trajdebug.step(kind="tool")
def publish_yard_plan(terminal: str, vessel: str, berthed_at: str, plan: dict[str, Any]) -> dict[str, Any]:
    call = next(c for c in CALLS if c["vessel"] == vessel)
    taken = {}
    for container, slot in plan.items():
        block = call["free"].get(slot["block"])
        if block is None:
            raise RuntimeError(f"TOS 409: block {slot['block']} has no free reefer plugs; cannot place {container} "
                               f"at {slot['plug']}")
        n = int(slot["plug"].split("-")[1])
        if not block["first_free"] <= n < block["first_free"] + block["free"] or slot["plug"] in taken:
            raise RuntimeError(f"TOS 409: plug {slot['plug']} is occupied")
        if slot["reading_at"] < berthed_at:
            raise RuntimeError(f"TOS 422: last controller reading of {container} ({slot['reading_at']}) predates "
                               f"berthing at {berthed_at}; unit status unknown since discharge")
        taken[slot["plug"]] = container
    return {"status": "published", "plan_id": f"YP-{vessel[:3]}-{len(plan):02d}{berthed_at[8:10]}",
            "plugs": len(taken)}


# ----------------------------------------------------------------------------------------------- the agent


def run_agent(inp: dict[str, Any]) -> None:
    request = take_discharge_request(inp["request"])
    discharge = fetch_discharge_list(request["vessel"], request["voyage"])
    availability = yard_plug_availability(request["terminal"], request["vessel"])
    planner = [
        {"role": "system", "content": "ROLE reefer-intake-planner. Reserve reefer plugs for the discharged units: "
                                      "answer JSON {blocks: [{block, plugs}], ca_block: {block, plugs}, sequence}. "
                                      "Use only blocks with free plugs; CA units go to a CA block."},
        {"role": "user", "content": dumps({"vessel": discharge["vessel"], "units": discharge["reefers"],
                                           "free_plugs": availability["blocks"]})},
    ]
    answer = plan_intake(planner)
    plan = parse_plan(answer["content"])
    readings = []
    for unit in discharge["reefers"]:
        with trajdebug.step("intake_unit", kind="agent", input=unit) as s:
            booking = lookup_booking(unit["booking"])
            log = read_controller_log(unit["container"], discharge["berthed_at"])
            reading = parse_controller_log(log)
            check = check_cold_chain(booking, reading)
            slot = assign_plug(unit, plan, availability["blocks"])
            record_yard_slot(unit["container"], unit["booking"], slot, reading)
            readings.append({"container": unit["container"], "commodity": booking["commodity"],
                             "block": slot["block"], "atmosphere": booking["atmosphere"]})
            s.output = {"plug": slot["plug"], "cold_chain": check["status"]}
    notes = retrieve_handling_notes([r["commodity"] for r in readings])
    monitor = [
        {"role": "system", "content": "ROLE reefer-monitoring. Draft monitoring rounds per block: JSON "
                                      "{rounds: [{block, every_h, units}]}. CA and pharmaceutical units every 4 h, "
                                      "others every 6 h."},
        {"role": "user", "content": dumps({"units": readings, "notes": notes})},
    ]
    rounds_answer = draft_monitoring_rounds(monitor)
    rounds = parse_rounds(rounds_answer["content"])
    validate_yard_plan(discharge, availability["blocks"], rounds)
    publish_yard_plan(request["terminal"], request["vessel"], discharge["berthed_at"],
                      trajdebug.current_run().state["yard_plan"])


def record(inp: dict[str, Any], path: str, server: FakeModelServer) -> None:
    global _client, _model
    from openai import OpenAI

    _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _model = server.model
    _gateway_calls.clear()
    try:
        with trajdebug.run(NAME, task=inp["task"], path=path):
            run_agent(inp)
    except Exception:
        pass


# ----------------------------------------------------------------------------------------------- the model


def brain(request: Any) -> str:
    messages = request.body["messages"]
    role = system_text(messages)
    data = json.loads(text_of(messages[-1]))
    if role.startswith("ROLE reefer-intake-planner"):
        units = data["units"]
        free = data["free_plugs"]
        std = [u for u in units if u["service"] != "CA"]
        ca = [u for u in units if u["service"] == "CA"]
        blocks = []
        left = len(std)
        for name, info in sorted(free.items(), key=lambda kv: -kv[1]["free"]):
            if info["ca"] or left <= 0:
                continue
            take = min(left, info["free"])
            blocks.append({"block": name, "plugs": take})
            left -= take
        if _on("plan_block"):
            blocks = [{"block": "R4", "plugs": 3}, {"block": blocks[0]["block"], "plugs": len(std)}]
        ca_name = next((n for n, i in free.items() if i["ca"]), "R5")
        plan = {"blocks": blocks, "ca_block": {"block": ca_name, "plugs": len(ca)},
                "sequence": [u["container"] for u in units]}
        return f"Plug reservation for {data['vessel']}:\n```json\n{json.dumps(plan)}\n```"
    if role.startswith("ROLE reefer-monitoring"):
        by_block: dict[str, list[str]] = {}
        hours: dict[str, int] = {}
        for u in data["units"]:
            by_block.setdefault(u["block"], []).append(u["container"])
            fast = u["atmosphere"] == "CA" or "pharma" in u["commodity"]
            hours[u["block"]] = min(hours.get(u["block"], 6), 4 if fast else 6)
        rounds = [{"block": b, "every_h": hours[b], "units": us} for b, us in sorted(by_block.items())]
        return json.dumps({"rounds": rounds})
    return "I can only plan reefer intake."
