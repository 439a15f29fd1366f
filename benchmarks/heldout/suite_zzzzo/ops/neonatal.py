"""Neonatal transport service: dispatching a team for a sick newborn (route: otlp).

Traced with the OpenTelemetry SDK and OpenInference attributes (the OpenAI client instrumented by
openinference-instrumentation-openai), exported as OTLP JSON. The dispatcher opens a case, has the model extract
the referral call, parses it, triages the transfer, and sends a cot-finder sub-agent (its own span, its own
model calls and cot-bureau tool) to find a receiving unit, plans the route, and asks the unit to accept the
baby. It plans the trip with the model, works out the oxygen the journey needs, checks the vehicle and the crew
roster in parallel, confirms the baby's details with the referring unit, and runs the pre-departure
check before the team leaves.
"""

from __future__ import annotations

import contextvars
import json
import math
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .common import dumps, otlp_chat, otlp_run, oi_attrs, set_output, system_text, tool_spec, traced
from trajdebug.testing import Reply, tool_call

NAME = "neonatal-transport-dispatch"
ROUTE = "otlp"
DOMAIN = "neonatal transport service: dispatch a team and vehicle to move a sick newborn to a receiving unit"
SHAPE = (
    "OTel/OpenInference: agent span; case tool, extraction model call, referral parser, triage step, "
    "cot-finder sub-agent span (model call with a tool call, cot-bureau tool, model call), route tool, "
    "acceptance tool, trip-planning model call, oxygen calculation, parallel vehicle and crew tools, referrer "
    "confirmation tool, pre-departure check; 17 steps per passing run"
)

SWITCH: str | None = None


def _case(key: str) -> bool:
    """The one place the case switch is read."""
    return SWITCH == key


DIRECTORY = [
    {"code": "RI-SCBU", "hospital": "Royal Infirmary", "unit": "SCBU", "level": 1, "surgical": False},
    {"code": "RI-NICU", "hospital": "Royal Infirmary", "unit": "NICU", "level": 3, "surgical": False},
    {"code": "SJ-NICU", "hospital": "St James's", "unit": "NICU", "level": 3, "surgical": True},
    {"code": "BR-NICU", "hospital": "Bradford Royal", "unit": "NICU", "level": 3, "surgical": False},
    {"code": "CD-LNU", "hospital": "Calderdale", "unit": "LNU", "level": 2, "surgical": False},
]
FREE_COTS = {"RI-SCBU": 3, "RI-NICU": 1, "SJ-NICU": 2, "BR-NICU": 1, "CD-LNU": 2}
MINUTES = {
    ("Airedale General", "SJ-NICU"): 48,
    ("Airedale General", "BR-NICU"): 31,
    ("Airedale General", "RI-NICU"): 52,
    ("Harrogate District", "SJ-NICU"): 41,
    ("Harrogate District", "BR-NICU"): 47,
    ("Harrogate District", "RI-NICU"): 39,
    ("Scarborough General", "SJ-NICU"): 118,
    ("Scarborough General", "BR-NICU"): 131,
    ("Scarborough General", "RI-NICU"): 116,
    ("Dewsbury District", "SJ-NICU"): 29,
    ("Dewsbury District", "BR-NICU"): 27,
    ("Dewsbury District", "RI-NICU"): 33,
    ("Pontefract", "SJ-NICU"): 36,
    ("Pontefract", "BR-NICU"): 44,
    ("Pontefract", "RI-NICU"): 30,
    ("Airedale General", "RI-SCBU"): 52,
    ("Harrogate District", "RI-SCBU"): 39,
    ("Scarborough General", "RI-SCBU"): 116,
    ("Dewsbury District", "RI-SCBU"): 33,
    ("Pontefract", "RI-SCBU"): 30,
    ("Airedale General", "CD-LNU"): 38,
    ("Harrogate District", "CD-LNU"): 58,
    ("Scarborough General", "CD-LNU"): 139,
    ("Dewsbury District", "CD-LNU"): 21,
    ("Pontefract", "CD-LNU"): 35,
}
SURGICAL = ("gastroschisis", "volvulus", "malrotation", "perforation", "oesophageal atresia")
TIME_CRITICAL = ("volvulus", "malrotation", "duct-dependent", "cooling")
REFERRER_WEIGHTS = {"REF-6101": 2.6, "REF-6102": 3.3, "REF-6103": 1.2, "REF-6104": 2.9, "REF-6105": 1.6}
CYLINDER_L = 460

INPUTS = [
    {
        "id": "yusuf",
        "task": "neonatal transfer REF-6101: baby of Amina Yusuf, Airedale General SCBU",
        "referral": {
            "ref": "REF-6101",
            "from": "Airedale General",
            "received": "2025-04-02T09:12",
            "call": "Airedale SCBU calling about baby of Amina Yusuf, born 08:05 at 36+2 weeks, 2.6 kg, "
            "antenatally diagnosed gastroschisis, bowel covered in a bag, on 2 L/min nasal cannula "
            "oxygen, not ventilated, sats 96%. Needs transfer to a surgical centre.",
        },
    },
    {
        "id": "brennan",
        "task": "neonatal transfer REF-6102: baby of Chloe Brennan, Harrogate District",
        "referral": {
            "ref": "REF-6102",
            "from": "Harrogate District",
            "received": "2025-04-03T14:40",
            "call": "Harrogate postnatal ward: baby of Chloe Brennan, 2 days old, term, 3.3 kg, bilious "
            "vomiting since 12:00, abdomen soft, suspected malrotation with volvulus. In air, sats 98%, "
            "not ventilated. Surgeons at the receiving centre are aware.",
        },
    },
    {
        "id": "marin",
        "task": "neonatal transfer REF-6103: baby of Sofia Marin, Scarborough General",
        "referral": {
            "ref": "REF-6103",
            "from": "Scarborough General",
            "received": "2025-04-04T02:15",
            "call": "Scarborough SCBU: baby of Sofia Marin, born 23:50 at 29+1 weeks, 1.2 kg, respiratory "
            "distress syndrome, intubated and ventilated, FiO2 0.45 after surfactant, oxygen flow "
            "6 L/min on the transport ventilator. Needs intensive care.",
        },
    },
    {
        "id": "cole",
        "task": "neonatal transfer REF-6104: baby of Hannah Cole, Dewsbury District",
        "referral": {
            "ref": "REF-6104",
            "from": "Dewsbury District",
            "received": "2025-04-05T11:20",
            "call": "Dewsbury delivery suite: baby of Hannah Cole, born 09:58 at term after a prolonged "
            "second stage, not yet weighed, Apgars 2 and 5, meets criteria for therapeutic cooling, "
            "passive cooling started, ventilated, FiO2 0.30, 4 L/min.",
        },
    },
    {
        "id": "price",
        "task": "neonatal transfer REF-6105: baby of Megan Price, Pontefract",
        "referral": {
            "ref": "REF-6105",
            "from": "Pontefract",
            "received": "2025-04-06T19:05",
            "call": "Pontefract special care: baby of Megan Price, 31+4 weeks, 1.6 kg, worsening respiratory "
            "distress, now intubated and ventilated, FiO2 0.40, 5 L/min. Needs a level 3 cot.",
        },
    },
]

CASES = [
    {
        "case": "transport_last_diagnosis",
        "input": "yusuf",
        "switch": "last_diagnosis_only",
        "fault_kind": "lossy_parsing",
        "root": ("parse_referral", 1),
        "failure": ("accept_transfer", 1),
        "description": "The referral parser flattened the diagnosis list to its last entry ('preterm 36+2 weeks'), "
        "dropping gastroschisis; the baby is triaged as non-surgical, a medical NICU is found and its "
        "acceptance refuses a surgical referral.",
    },
    {
        "case": "transport_triage_by_support",
        "input": "brennan",
        "switch": "triage_by_respiratory_support",
        "fault_kind": "wrong_routing",
        "root": ("triage", 1),
        "failure": ("predeparture_check", 1),
        "description": "Triage routed the referral by respiratory support only (self-ventilating, in air: high "
        "dependency, standard response) instead of by diagnosis; suspected volvulus is time-critical "
        "and the pre-departure check stops a standard-priority dispatch.",
    },
    {
        "case": "transport_standard_kit_oxygen",
        "input": "marin",
        "switch": "standard_kit_oxygen",
        "fault_kind": "plan_error",
        "root": ("ChatCompletion", 4),
        "failure": ("predeparture_check", 1),
        "description": "The trip plan took the standard kit of two CD cylinders instead of planning oxygen for the "
        "116-minute journey at 6 L/min with a 100% reserve; the oxygen calculation shows 920 L carried "
        "against 1,392 L needed and the pre-departure check stops the team.",
    },
    {
        "case": "transport_term_weight",
        "input": "cole",
        "switch": "typical_term_weight",
        "fault_kind": "hallucinated_value",
        "root": ("ChatCompletion", 1),
        "failure": ("predeparture_check", 1),
        "description": "The referral said the baby was not yet weighed, but the extraction model filled in 3.4 kg; "
        "the transfer record carries it to the end, where the referring unit's weight of 2.9 kg "
        "contradicts it.",
    },
    {
        "case": "transport_hospital_not_unit",
        "input": "price",
        "switch": "hospital_name_lookup",
        "fault_kind": "subagent_wrong_entity",
        "root": ("cot_finder", 1),
        "failure": ("accept_transfer", 1),
        "description": "The cot-finder sub-agent mapped its model's choice (Royal Infirmary NICU) to a unit code by "
        "hospital name alone and returned RI-SCBU, the same hospital's special care unit; that unit "
        "refuses a ventilated 31-week baby.",
    },
]


# --- tools and steps -------------------------------------------------------------------------------


def parse_referral(text: str, ref: str, referring: str) -> dict:
    data = json.loads(text)
    diagnoses = data.pop("diagnoses")
    diagnosis = diagnoses[-1] if _case("last_diagnosis_only") else "; ".join(diagnoses)
    return {"ref": ref, "from": referring, **data, "diagnosis": diagnosis}


def triage(referral: dict) -> dict:
    text = referral["diagnosis"].lower()
    surgical = any(s in text for s in SURGICAL)
    if _case("triage_by_respiratory_support"):
        category = "intensive care" if referral["ventilated"] else "high dependency"
        priority = "standard"
    elif any(s in text for s in TIME_CRITICAL):
        category, priority = "time-critical", "time_critical"
    else:
        category = "intensive care" if referral["ventilated"] else "high dependency"
        priority = "standard"
    return {
        "category": category,
        "priority": priority,
        "surgical": surgical,
        "min_level": 3 if referral["ventilated"] or surgical or referral["gestation_weeks"] < 32 else 2,
    }


def cot_bureau(min_level: int, surgical: bool, referring: str) -> dict:
    units = [
        u
        for u in DIRECTORY
        if u["level"] >= min_level and (u["surgical"] or not surgical) and FREE_COTS[u["code"]] > 0
    ]
    return {
        "units": [
            {
                "hospital": u["hospital"],
                "unit": u["unit"],
                "level": u["level"],
                "surgical": u["surgical"],
                "free_cots": FREE_COTS[u["code"]],
                "minutes_from_referrer": MINUTES[(referring, u["code"])],
            }
            for u in units
        ]
    }


def open_case(ref: str, referring: str, received: str) -> dict:
    return {
        "case_no": f"NTS-{received[:10].replace('-', '')}-{ref[-3:]}",
        "ref": ref,
        "referring": referring,
        "status": "open",
    }


def accept_transfer(unit_code: str, ref: str, eta_min: int, case_no: str) -> dict:
    unit = next(u for u in DIRECTORY if u["code"] == unit_code)
    referral = next(i["referral"] for i in INPUTS if i["referral"]["ref"] == ref)
    call = referral["call"].lower()
    if any(s in call for s in SURGICAL) and not unit["surgical"]:
        raise ValueError(
            f"{unit_code} declines {ref}: no neonatal surgical service, and the referral "
            f"({referral['from']}) describes a surgical condition"
        )
    if ("ventilated" in call and "not ventilated" not in call) and unit["level"] < 3:
        raise ValueError(
            f"{unit_code} declines {ref}: a level {unit['level']} unit cannot take a ventilated baby"
        )
    return {
        "unit_code": unit_code,
        "ref": ref,
        "case_no": case_no,
        "accepted": True,
        "expected_in_min": eta_min,
        "cot": f"{unit_code}-cot-{FREE_COTS[unit_code]}",
    }


def route_planner(origin: str, unit_code: str, priority: str) -> dict:
    minutes = MINUTES[(origin, unit_code)]
    if priority == "time_critical":
        minutes = round(minutes * 0.8)
    return {
        "from": origin,
        "to": unit_code,
        "minutes": minutes,
        "mode": "road",
        "response": "blue-light" if priority == "time_critical" else "standard",
    }


def gas_calc(flow_l_min: float, minutes: int, cylinders: int) -> dict:
    needed = math.ceil(flow_l_min * minutes * 2)
    return {"needed_l": needed, "carried_l": cylinders * CYLINDER_L, "reserve_factor": 2}


def vehicle_status(vehicle: str) -> dict:
    return {"vehicle": vehicle, "incubator_battery_min": 240, "oxygen_bay_cylinders": 6, "status": "ready"}


def crew_roster(grade: str) -> dict:
    return {
        "grade": grade,
        "crew": ["ANNP R. Holt", "Nurse K. Obi"] if grade == "ANNP" else ["Nurse K. Obi"],
        "available_from": "now",
    }


def confirm_with_referrer(ref: str) -> dict:
    return {
        "ref": ref,
        "weight_kg": REFERRER_WEIGHTS[ref],
        "confirmed_by": "nurse in charge",
        "lines": "UVC, UAC",
    }


def predeparture_check(record: dict, triage_result: dict, trip: dict, gas: dict, referrer: dict) -> dict:
    referral = next(i["referral"] for i in INPUTS if i["referral"]["ref"] == record["ref"])
    call = referral["call"].lower()
    if any(s in call for s in TIME_CRITICAL) and trip["priority"] != "time_critical":
        raise ValueError(
            f"pre-departure: {record['ref']} is a time-critical transfer ("
            f"{next(s for s in TIME_CRITICAL if s in call)}) but dispatched as {trip['priority']} "
            f"(ETA {trip['minutes']} min against a 60 min target)"
        )
    if gas["carried_l"] < gas["needed_l"]:
        raise ValueError(
            f"pre-departure: oxygen carried {gas['carried_l']} L; {gas['needed_l']} L needed for "
            f"{trip['minutes']} min at {record['oxygen_l_min']} L/min with a 100% reserve"
        )
    weight = record["weight_kg"]
    if weight is not None and abs(weight - referrer["weight_kg"]) > 0.1 * referrer["weight_kg"]:
        raise ValueError(
            f"pre-departure: transfer record weight {weight} kg; the referring unit weighed the baby "
            f"at {referrer['weight_kg']} kg"
        )
    return {"ref": record["ref"], "cleared": True, "depart": "now"}


INTAKE_SYSTEM = (
    "You take referral calls for the neonatal transport service. Extract JSON: baby, gestation_weeks "
    "(number), weight_kg (number, null when not given), diagnoses (list), ventilated (bool), "
    "oxygen_l_min (number)."
)
FINDER_SYSTEM = (
    'You find a cot for a neonatal transfer with cot_bureau, then answer JSON {"hospital", '
    '"unit", "reason"} for the nearest suitable unit with a free cot.'
)
PLAN_SYSTEM = (
    "You plan the transport trip: vehicle, crew grade and oxygen. Carry CD cylinders (460 L) for the "
    'journey at the baby\'s flow with a 100% reserve. Answer JSON {"vehicle", "crew_grade", '
    '"cylinders", "priority"}.'
)
BUREAU_TOOL = tool_spec(
    "cot_bureau",
    "Units with free cots.",
    {"min_level": {"type": "integer"}, "surgical": {"type": "boolean"}, "referring": {"type": "string"}},
)


def cot_finder(tracer: Any, client: Any, model: str, need: dict) -> dict:
    """The cot-finder sub-agent: its model searches the cot bureau and names a unit; it returns the unit."""
    with tracer.start_as_current_span(
        "cot_finder", attributes=oi_attrs("AGENT", need, agent__name="cot_finder")
    ) as sp:
        messages = [{"role": "system", "content": FINDER_SYSTEM}, {"role": "user", "content": dumps(need)}]
        msg = otlp_chat(client, model, messages, tools=[BUREAU_TOOL])
        call = msg["tool_calls"][0]
        args = json.loads(call["function"]["arguments"])
        found = traced(tracer, "cot_bureau", "TOOL", cot_bureau, args, tool__id=call["id"])
        messages += [msg, {"role": "tool", "tool_call_id": call["id"], "content": dumps(found)}]
        choice = json.loads(otlp_chat(client, model, messages, tools=[BUREAU_TOOL])["content"])
        if _case("hospital_name_lookup"):
            unit = next(u for u in DIRECTORY if u["hospital"] == choice["hospital"])
        else:
            unit = next(
                u for u in DIRECTORY if u["hospital"] == choice["hospital"] and u["unit"] == choice["unit"]
            )
        return set_output(
            sp,
            {
                "unit_code": unit["code"],
                "name": f"{unit['hospital']} {unit['unit']}",
                "level": unit["level"],
                "reason": choice["reason"],
            },
        )


def agent(referral: dict, task: str, tracer: Any, client: Any, model: str) -> dict:
    with tracer.start_as_current_span(
        NAME, attributes=oi_attrs("AGENT", referral, metadata=json.dumps({"task": task}), agent__name=NAME)
    ) as top:
        case = traced(
            tracer,
            "open_case",
            "TOOL",
            open_case,
            {"ref": referral["ref"], "referring": referral["from"], "received": referral["received"]},
        )
        extracted = otlp_chat(
            client,
            model,
            [{"role": "system", "content": INTAKE_SYSTEM}, {"role": "user", "content": referral["call"]}],
        )
        record = traced(
            tracer,
            "parse_referral",
            "CHAIN",
            parse_referral,
            {"text": extracted["content"], "ref": referral["ref"], "referring": referral["from"]},
        )
        tri = traced(tracer, "triage", "CHAIN", triage, {"referral": record})
        unit = cot_finder(
            tracer,
            client,
            model,
            {
                "ref": record["ref"],
                "min_level": tri["min_level"],
                "surgical": tri["surgical"],
                "referring": referral["from"],
            },
        )
        route = traced(
            tracer,
            "route_planner",
            "TOOL",
            route_planner,
            {"origin": referral["from"], "unit_code": unit["unit_code"], "priority": tri["priority"]},
        )
        traced(
            tracer,
            "accept_transfer",
            "TOOL",
            accept_transfer,
            {
                "unit_code": unit["unit_code"],
                "ref": record["ref"],
                "eta_min": route["minutes"],
                "case_no": case["case_no"],
            },
        )
        plan = json.loads(
            otlp_chat(
                client,
                model,
                [
                    {"role": "system", "content": PLAN_SYSTEM},
                    {"role": "user", "content": dumps({"referral": record, "triage": tri, "route": route})},
                ],
            )["content"]
        )
        gas = traced(
            tracer,
            "gas_calc",
            "CHAIN",
            gas_calc,
            {
                "flow_l_min": record["oxygen_l_min"],
                "minutes": route["minutes"],
                "cylinders": plan["cylinders"],
            },
        )
        with ThreadPoolExecutor(max_workers=2) as pool:
            jobs = [
                pool.submit(
                    contextvars.copy_context().run,
                    traced,
                    tracer,
                    "vehicle_status",
                    "TOOL",
                    vehicle_status,
                    {"vehicle": plan["vehicle"]},
                ),
                pool.submit(
                    contextvars.copy_context().run,
                    traced,
                    tracer,
                    "crew_roster",
                    "TOOL",
                    crew_roster,
                    {"grade": plan["crew_grade"]},
                ),
            ]
            [j.result() for j in jobs]
        referrer = traced(
            tracer, "confirm_with_referrer", "TOOL", confirm_with_referrer, {"ref": record["ref"]}
        )
        trip = {"priority": plan["priority"], "minutes": route["minutes"], "vehicle": plan["vehicle"]}
        cleared = traced(
            tracer,
            "predeparture_check",
            "EVALUATOR",
            predeparture_check,
            {"record": record, "triage_result": tri, "trip": trip, "gas": gas, "referrer": referrer},
        )
        return set_output(top, {"unit": unit, "trip": trip, "cleared": cleared})


def record(inp: dict, path: str, ctx: Any) -> None:
    with otlp_run(NAME, path) as tracer:
        try:
            agent(inp["referral"], inp["task"], tracer, ctx.client, ctx.model)
        except ValueError:
            pass


# --- the model --------------------------------------------------------------------------------


def _extract(call: str) -> dict:
    low = call.lower()
    ga = re.search(r"(\d\d)\+(\d) weeks", call)
    gestation = int(ga.group(1)) + int(ga.group(2)) / 7 if ga else 40.0
    weight = re.search(r"(\d\.\d) kg", call)
    diagnoses = [
        d
        for d in (
            "antenatally diagnosed gastroschisis",
            "suspected malrotation with volvulus",
            "respiratory distress syndrome",
            "meets criteria for therapeutic cooling",
            "worsening respiratory distress",
        )
        if d in low
    ]
    diagnoses.append(f"preterm {ga.group(0)}" if ga and gestation < 37 else "term")
    flow = re.search(r"(\d+) L/min", call)
    value = float(weight.group(1)) if weight else None
    if value is None and _case("typical_term_weight"):
        value = 3.4
    return {
        "baby": re.search(r"baby of ([A-Z][a-z]+ [A-Z][a-z]+)", call).group(1),
        "gestation_weeks": round(gestation, 1),
        "weight_kg": value,
        "diagnoses": diagnoses,
        "ventilated": "ventilated" in low and "not ventilated" not in low,
        "oxygen_l_min": float(flow.group(1)) if flow else 0.0,
    }


def brain(request: Any) -> Any:
    system = system_text(request)
    msgs = request.body["messages"]
    if system == INTAKE_SYSTEM:
        return json.dumps(_extract(msgs[-1]["content"]))
    if system == FINDER_SYSTEM:
        need = json.loads(msgs[1]["content"])
        if msgs[-1]["role"] != "tool":
            return Reply(
                tool_calls=(
                    tool_call(
                        "cot_bureau",
                        {
                            "min_level": need["min_level"],
                            "surgical": need["surgical"],
                            "referring": need["referring"],
                        },
                    ),
                )
            )
        units = sorted(json.loads(msgs[-1]["content"])["units"], key=lambda u: u["minutes_from_referrer"])
        best = units[0]
        return json.dumps(
            {
                "hospital": best["hospital"],
                "unit": best["unit"],
                "reason": f"nearest level {best['level']} unit with a free cot "
                f"({best['minutes_from_referrer']} min)",
            }
        )
    if system == PLAN_SYSTEM:
        data = json.loads(msgs[-1]["content"])
        flow, minutes = data["referral"]["oxygen_l_min"], data["route"]["minutes"]
        cylinders = max(1, math.ceil(flow * minutes * 2 / CYLINDER_L))
        if _case("standard_kit_oxygen"):
            cylinders = 2
        return json.dumps(
            {
                "vehicle": "NT-2 (road incubator)",
                "crew_grade": "ANNP" if data["referral"]["ventilated"] else "nurse",
                "cylinders": cylinders,
                "priority": data["triage"]["priority"],
            }
        )
    return "I cannot help with that."
