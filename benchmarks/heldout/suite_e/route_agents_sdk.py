"""Route 2: OpenAI Agents SDK agents (handoffs, agents as tools, run context) on OpenAIChatCompletionsModel
against the scripted model server, recorded by TrajdebugProcessor."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents import Agent as SdkAgent
from agents import (
    OpenAIChatCompletionsModel,
    RunConfig,
    RunContextWrapper,
    Runner,
    function_tool,
    set_trace_processors,
)
from agents.exceptions import AgentsException
from common import Agent, Case
from fakellm import ScriptedModel, Turn, call, first_user, last_result, say, system_text
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor


FAULT: str | None = None
_SERVER: ScriptedModel | None = None
MODEL = "gpt-4o-mini"


def on(name: str) -> bool:
    return FAULT == name


def server() -> ScriptedModel:
    global _SERVER
    if _SERVER is None:
        _SERVER = ScriptedModel().__enter__()
    return _SERVER


def run_agent(build: Any, name: str, task: str, prompt: str, brain: Any, fault: str | None, path: Path, context: Any = None) -> None:
    global FAULT
    FAULT = fault
    server().brain = brain
    set_trace_processors([TrajdebugProcessor(path=str(path), name=name, task=task)])

    async def go() -> None:
        client = AsyncOpenAI(base_url=server().base_url, api_key="sk-suite-e-placeholder", max_retries=0)
        model = OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
        try:
            await Runner.run(build(model), prompt, context=context, max_turns=20,
                             run_config=RunConfig(workflow_name=name, tracing_disabled=False))
        except (AgentsException, ValueError, RuntimeError):
            pass
        finally:
            await client.close()

    try:
        asyncio.run(go())
    finally:
        FAULT = None
        set_trace_processors([])


def strict(fn: Any) -> Any:
    """A tool whose exception ends the run (the SDK re-raises instead of telling the model)."""
    return function_tool(fn, failure_error_function=None)


# =====================================================================================
# B1  E-commerce fraud review: triage hands off to the chargeback or account-takeover desk
# =====================================================================================

ORDERS = {
    "ORD-88120": {"customer": "C-5530", "captured_minor": 18400, "currency": "GBP", "items": "wireless earbuds"},
    "ORD-81820": {"customer": "C-1174", "captured_minor": 6250, "currency": "GBP", "items": "phone case x2"},
    "ORD-90431": {"customer": "C-6021", "captured_minor": 45999, "currency": "EUR", "items": "espresso machine"},
    "ORD-90877": {"customer": "C-6188", "captured_minor": 12900, "currency": "USD", "items": "running shoes"},
    "ORD-91002": {"customer": "C-7004", "captured_minor": 8900, "currency": "USD", "items": "desk lamp"},
    "ORD-91346": {"customer": "C-7311", "captured_minor": 239900, "currency": "EUR", "items": "e-bike battery"},
    "ORD-77015": {"customer": "C-4402", "captured_minor": 3150, "currency": "GBP", "items": "novel, hardback"},
}
CASES = {
    "FR-2291": {"customer": "C-5530", "order": "ORD-88120", "story": "card chargeback filed: item not received, tracking shows a failed delivery"},
    "FR-2294": {"customer": "C-6021", "order": "ORD-90431", "story": "chargeback: customer says the machine arrived broken"},
    "FR-2297": {"customer": "C-6188", "order": "ORD-90877", "story": "password reset from an unrecognized device, then this order to a new address"},
    "FR-2301": {"customer": "C-7004", "order": "ORD-91002", "story": "chargeback: customer says they cancelled before shipping"},
    "FR-2305": {"customer": "C-7311", "order": "ORD-91346", "story": "unrecognized login from a new country followed by an address change"},
    "FR-2310": {"customer": "C-4402", "order": "ORD-77015", "story": "card chargeback, buyer claims a duplicate charge"},
    "FR-2312": {"customer": "C-5530", "order": "ORD-88120", "story": "second chargeback notice on the same earbuds order, item not received"},
}
LOGINS = {"C-6188": [{"device": "new Android", "country": "RO", "password_reset": True}],
          "C-7311": [{"device": "unknown Windows", "country": "VN", "password_reset": False}]}


@function_tool
def get_order(order_id: str) -> dict:
    """Order header: customer, items, currency."""
    o = ORDERS[order_id]
    return {"order_id": order_id, "customer": o["customer"], "items": o["items"], "currency": o["currency"]}


@function_tool
def payment_capture(order_id: str) -> dict:
    """Amount captured on the card for an order, in the order's currency."""
    o = ORDERS[order_id]
    amount = o["captured_minor"] if on("minor_units") else o["captured_minor"] / 100
    return {"order_id": order_id, "captured": amount, "currency": o["currency"], "status": "settled"}


def issue_refund(case_id: str, order_id: str, amount: float, currency: str) -> str:
    """Refund a card payment against a fraud case."""
    case, order = CASES[case_id], ORDERS[order_id]
    if order["customer"] != case["customer"]:
        raise ValueError(f"Refund blocked: {order_id} was placed by {order['customer']}, case {case_id} is for {case['customer']}")
    if amount > order["captured_minor"] / 100 + 0.001:
        raise ValueError(f"PSP declined refund of {amount:,.2f} {currency} on {order_id}: only "
                         f"{order['captured_minor'] / 100:,.2f} was captured")
    return f"refund RF-{order_id[-5:]} accepted for {amount:.2f} {currency}"


@function_tool
def login_events(customer_id: str) -> dict:
    """Recent sign-ins and credential changes for a customer account."""
    return {"customer_id": customer_id, "suspicious": LOGINS.get(customer_id, []), "window_days": 30}


def lock_account(case_id: str, customer_id: str, reason: str) -> str:
    """Freeze a customer account for a suspected takeover."""
    if not LOGINS.get(customer_id):
        raise RuntimeError(f"Identity service refused to lock {customer_id} ({case_id}): no takeover signal in the last 30 days")
    return f"{customer_id} locked; reset link sent to the verified phone"


def fraud_brain(body: dict) -> Turn:
    sys, ask = system_text(body), first_user(body)
    case_id = re.search(r"Case (FR-\d+)", ask).group(1)
    if sys.startswith("You are fraud-review triage"):
        takeover = "unrecognized" in ask or "password reset" in ask
        if on("route_takeover") and "chargeback" in ask:
            takeover = True
        return call("transfer_to_takeover_desk" if takeover else "transfer_to_chargeback_desk")
    customer = re.search(r"customer (C-\d+)", ask).group(1)
    if sys.startswith("You are the account takeover desk"):
        if last_result(body, "login_events") is None:
            return call("login_events", customer_id=customer)
        if last_result(body, "lock_account") is None:
            return call("lock_account", case_id=case_id, customer_id=customer, reason="signals consistent with account takeover")
        return say(f"{customer} locked pending verification.")
    order_id = re.search(r"order (ORD-\d+)", ask).group(1)
    order = last_result(body, "get_order")
    if order is None:
        if on("order_transpose"):
            order_id = order_id[:5] + order_id[6] + order_id[5] + order_id[7:]
        return call("get_order", order_id=order_id)
    cap = last_result(body, "payment_capture")
    if cap is None:
        return call("payment_capture", order_id=order["order_id"])
    if last_result(body, "issue_refund") is None:
        return call("issue_refund", case_id=case_id, order_id=order["order_id"], amount=cap["captured"], currency=cap["currency"])
    return say(f"Chargeback accepted; refunded {cap['captured']} {cap['currency']}.")


def build_fraud(model: Any) -> Any:
    chargeback = SdkAgent(name="chargeback_desk", model=model,
                          instructions="You are the chargeback desk. Verify the order and the captured amount, then refund it in full.",
                          tools=[get_order, payment_capture, strict(issue_refund)])
    takeover = SdkAgent(name="takeover_desk", model=model,
                        instructions="You are the account takeover desk. Check recent logins, then lock compromised accounts.",
                        tools=[login_events, strict(lock_account)])
    return SdkAgent(name="fraud_triage", model=model, handoffs=[chargeback, takeover],
                    instructions="You are fraud-review triage. Send chargebacks and disputes to the chargeback desk; send "
                                 "suspected account takeovers to the takeover desk.")


def record_fraud(case_id: str, fault: str | None, path: Path) -> None:
    c = CASES[case_id]
    prompt = f"Case {case_id}: customer {c['customer']}, order {c['order']}. {c['story']}."
    run_agent(build_fraud, "fraud-review-desk", f"resolve {case_id}", prompt, fraud_brain, fault, path)


FRAUD = Agent(
    "fraud-review-desk", "agents_sdk", "e-commerce fraud review", "jsonl", record_fraud,
    passing=["FR-2294", "FR-2297", "FR-2301", "FR-2305", "FR-2310"],
    cases=[
        Case("e-fraud-misrouted", "route_takeover", "wrong_routing", "FR-2291",
             "The triage model hands a plain item-not-received chargeback to the account-takeover desk; that desk "
             "checks logins and tries to lock the account, which the identity service refuses.",
             "generation gpt-4o-mini", "llm", "transfer_to_takeover_desk", "lock_account", 4),
        Case("e-fraud-order-transposed", "order_transpose", "wrong_tool_args", "FR-2312",
             "The chargeback desk's model looks up ORD-81820 instead of ORD-88120; the capture and refund are "
             "made against another customer's order and the refund is blocked.",
             "generation gpt-4o-mini", "llm", "ORD-81820", "issue_refund", 4),
        Case("e-fraud-minor-units", "minor_units", "unit_error", "FR-2291",
             "payment_capture reports the captured amount in minor units (18400) as if it were pounds; the model "
             "refunds that figure and the payment processor declines it.",
             "payment_capture", "tool", "18400", "issue_refund", 2),
    ],
)


# =====================================================================================
# B2  Clinical trial screening: a coordinator with a chart-review sub-agent (agent as tool)
# =====================================================================================

PATIENTS = {
    "0048812": {"name": "Maria Lopez", "dob": "1949-02-11", "sex": "F", "creatinine_mg_dl": 0.9, "alt_u_l": 41},
    "0051207": {"name": "Maria Lopez", "dob": "1981-06-30", "sex": "F", "creatinine_mg_dl": 0.8, "alt_u_l": 36},
    "0032001": {"name": "Henry Adeyemi", "dob": "1966-09-02", "sex": "M", "creatinine_mg_dl": 1.1, "alt_u_l": 150},
    "0032450": {"name": "Ruth Castell", "dob": "1958-12-19", "sex": "F", "creatinine_mg_dl": 0.9, "alt_u_l": 110},
    "0040123": {"name": "Samir Haddad", "dob": "1972-04-05", "sex": "M", "creatinine_mg_dl": 1.0, "alt_u_l": 28},
    "0040990": {"name": "Elena Petrova", "dob": "1975-07-21", "sex": "F", "creatinine_mg_dl": 0.7, "alt_u_l": 45},
    "0041777": {"name": "Tom Becker", "dob": "1952-03-14", "sex": "M", "creatinine_mg_dl": 2.4, "alt_u_l": 30},
    "0043310": {"name": "Aiko Mori", "dob": "1969-10-08", "sex": "F", "creatinine_mg_dl": 0.9, "alt_u_l": 52},
    "0044002": {"name": "Luis Ferreira", "dob": "1961-01-27", "sex": "M", "creatinine_mg_dl": 1.2, "alt_u_l": 95},
}
REFERRALS = {
    "REF-301": "0051207", "REF-302": "0032001", "REF-303": "0032450", "REF-304": "0040123", "REF-305": "0040990",
    "REF-306": "0041777", "REF-307": "0043310", "REF-308": "0044002",
}
PROTOCOL = {"A3": {"version": "A3", "egfr_min": 45, "alt_max_u_l": 100}, "A2": {"version": "A2", "egfr_min": 45, "alt_max_u_l": 120}}


def egfr(creatinine: float, age: int, sex: str) -> float:
    k, a = (0.7, -0.241) if sex == "F" else (0.9, -0.302)
    value = 142 * min(creatinine / k, 1) ** a * max(creatinine / k, 1) ** -1.2 * 0.9938 ** age * (1.012 if sex == "F" else 1)
    return round(value, 1)


@function_tool
def protocol_criteria(trial_id: str) -> dict:
    """Current inclusion limits for a trial protocol."""
    return {"trial_id": trial_id, **PROTOCOL["A2" if on("stale_protocol") else "A3"]}


@function_tool
def find_patient(name: str, dob: str) -> dict:
    """Search the EHR master index by name and date of birth; returns candidate charts."""
    hits = [{"mrn": m, "name": p["name"], "dob": p["dob"]} for m, p in PATIENTS.items() if p["name"] == name]
    return {"query": {"name": name, "dob": dob}, "candidates": hits}


@function_tool
def patient_labs(mrn: str) -> dict:
    """Latest chemistry panel for a chart: creatinine (mg/dL), ALT (U/L), age, sex."""
    p = PATIENTS[mrn]
    alt = round(p["alt_u_l"] / 60, 2) if on("alt_si") else p["alt_u_l"]  # SI feed (ukat/L) passed through unconverted
    return {"mrn": mrn, "creatinine_mg_dl": p["creatinine_mg_dl"], "alt_u_l": alt, "age": 2024 - int(p["dob"][:4]), "sex": p["sex"]}


@function_tool
def compute_egfr(creatinine_mg_dl: float, age: int, sex: str) -> dict:
    """CKD-EPI 2021 eGFR from serum creatinine."""
    return {"egfr": egfr(creatinine_mg_dl, age, sex), "units": "mL/min/1.73m2"}


def enroll_patient(trial_id: str, referral_id: str, mrn: str, egfr_value: float, alt_u_l: float, protocol_version: str) -> str:
    """Randomize an eligible patient into the trial."""
    expected = REFERRALS[referral_id]
    if mrn != expected:
        p, q = PATIENTS[mrn], PATIENTS[expected]
        raise ValueError(f"IRT: chart {mrn} (DOB {p['dob']}) is not the referred patient (DOB {q['dob']}); randomization halted")
    p = PATIENTS[mrn]
    true_egfr = egfr(p["creatinine_mg_dl"], 2024 - int(p["dob"][:4]), p["sex"])
    crit = PROTOCOL["A3"]
    if p["alt_u_l"] > crit["alt_max_u_l"]:
        raise ValueError(f"IRT eligibility check: ALT {p['alt_u_l']} U/L is above the {crit['alt_max_u_l']} U/L limit of amendment A3")
    if true_egfr < crit["egfr_min"]:
        raise ValueError(f"IRT eligibility check: eGFR {true_egfr} is below the protocol minimum of {crit['egfr_min']}")
    return f"{mrn} randomized to arm {'B' if int(mrn) % 2 else 'A'}"


def trial_brain(body: dict) -> Turn:
    sys, ask = system_text(body), first_user(body)
    if sys.startswith("You are a chart reviewer"):
        name = re.search(r"name=([^;]+);", ask).group(1)
        dob = re.search(r"dob=([\d-]+)", ask).group(1)
        found = last_result(body, "find_patient")
        if found is None:
            return call("find_patient", name=name, dob=dob)
        labs = last_result(body, "patient_labs")
        if labs is None:
            pick = found["candidates"][0] if on("first_candidate") else next(c for c in found["candidates"] if c["dob"] == dob)
            return call("patient_labs", mrn=pick["mrn"])
        e = last_result(body, "compute_egfr")
        if e is None:
            return call("compute_egfr", creatinine_mg_dl=labs["creatinine_mg_dl"], age=labs["age"], sex=labs["sex"])
        return say(json.dumps({"mrn": labs["mrn"], "egfr": e["egfr"], "alt_u_l": labs["alt_u_l"]}))
    ref = re.search(r"referral (REF-\d+)", ask).group(1)
    trial = re.search(r"trial (\S+?)[:.]", ask).group(1)
    crit = last_result(body, "protocol_criteria")
    if crit is None:
        return call("protocol_criteria", trial_id=trial)
    chart = last_result(body, "chart_reviewer")
    if chart is None:
        name = re.search(r"patient (.+?), born", ask).group(1)
        dob = re.search(r"born ([\d-]+)", ask).group(1)
        return call("chart_reviewer", input=f"Pull the chart for name={name}; dob={dob} and report eGFR and ALT.")
    if chart["egfr"] < crit["egfr_min"] or chart["alt_u_l"] > crit["alt_max_u_l"]:
        return say(f"Screen failure for {ref}: eGFR {chart['egfr']}, ALT {chart['alt_u_l']} against protocol {crit['version']}.")
    if last_result(body, "enroll_patient") is None:
        return call("enroll_patient", trial_id=trial, referral_id=ref, mrn=chart["mrn"], egfr_value=chart["egfr"],
                    alt_u_l=chart["alt_u_l"], protocol_version=crit["version"])
    return say(f"{ref} enrolled.")


def build_trials(model: Any) -> Any:
    reviewer = SdkAgent(name="chart_reviewer", model=model, tools=[find_patient, patient_labs, compute_egfr],
                        instructions="You are a chart reviewer. Find the patient's chart by name and date of birth, pull "
                                     "the latest labs, compute eGFR and reply with JSON {mrn, egfr, alt_u_l}.")
    return SdkAgent(name="screening_coordinator", model=model,
                    instructions="You screen referrals for a trial: get the current protocol limits, have the chart "
                                 "reviewer report the labs, and enroll the patient only if eligible.",
                    tools=[protocol_criteria, reviewer.as_tool(tool_name="chart_reviewer",
                                                              tool_description="Review a patient's chart and report eGFR and ALT."),
                           strict(enroll_patient)])


def record_trials(ref: str, fault: str | None, path: Path) -> None:
    p = PATIENTS[REFERRALS[ref]]
    prompt = f"Screen referral {ref} for trial ONC-2231: patient {p['name']}, born {p['dob']}."
    run_agent(build_trials, "trial-screening", f"screen {ref}", prompt, trial_brain, fault, path)


TRIALS = Agent(
    "trial-screening", "agents_sdk", "clinical trial screening", "jsonl", record_trials,
    passing=["REF-304", "REF-305", "REF-306", "REF-307", "REF-308"],
    cases=[
        Case("e-trial-wrong-maria", "first_candidate", "wrong_entity_subagent", "REF-301",
             "The chart_reviewer sub-agent's model takes the first 'Maria Lopez' the index returns (MRN 0048812, born "
             "1949) instead of the one matching the referral's DOB; its report is about the wrong patient and "
             "randomization halts on the identity check.", "generation gpt-4o-mini", "llm", "0048812", "enroll_patient", 5),
        Case("e-trial-alt-si-units", "alt_si", "unit_error", "REF-302",
             "patient_labs passes an SI-unit ALT (2.5 ukat/L) through as U/L; the sub-agent reports it, the coordinator "
             "judges the patient eligible and the IRT eligibility check rejects ALT 150 U/L.", "patient_labs", "tool",
             "'alt_u_l': 2.5", "enroll_patient", 4),
        Case("e-trial-stale-protocol", "stale_protocol", "stale_data", "REF-303",
             "protocol_criteria returns the cached amendment A2 limits (ALT <= 120) instead of A3 (<= 100); the coordinator "
             "enrolls a patient with ALT 110 and the IRT check refuses.", "protocol_criteria", "tool", "'A2'",
             "enroll_patient", 2),
    ],
)


# =====================================================================================
# B3  Fleet maintenance: a planner that logs work orders into the run context, hands off to the parts desk
# =====================================================================================

@dataclass
class FleetCtx:
    work_orders: dict = field(default_factory=dict)


UNITS = {
    "V-212": {"model": "Freightliner M2", "brakes": "drum", "odometer_mi": 61200, "last_service_mi": 49800, "depot": "Reno"},
    "V-215": {"model": "Freightliner M2", "brakes": "drum", "odometer_mi": 88400, "last_service_mi": 76200, "depot": "Reno"},
    "V-301": {"model": "Isuzu NPR", "brakes": "disc", "odometer_mi": 40100, "last_service_mi": 30050, "depot": "Sparks"},
    "V-302": {"model": "Isuzu NPR", "brakes": "disc", "odometer_mi": 18350, "last_service_mi": 10200, "depot": "Sparks"},
    "V-410": {"model": "Ford E-450", "brakes": "disc", "odometer_mi": 27500, "last_service_mi": 20400, "depot": "Reno"},
    "V-411": {"model": "Ford E-450", "brakes": "disc", "odometer_mi": 52900, "last_service_mi": 45700, "depot": "Carson"},
    "V-412": {"model": "Ford E-450", "brakes": "disc", "odometer_mi": 33800, "last_service_mi": 26150, "depot": "Carson"},
    "V-520": {"model": "Freightliner M2", "brakes": "drum", "odometer_mi": 15300, "last_service_mi": 3100, "depot": "Carson"},
}
INTERVALS = {"Freightliner M2": 12000, "Isuzu NPR": 10000, "Ford E-450": 7500}
PM_KIT = {"Freightliner M2": "FLT-KIT-M2", "Isuzu NPR": "FLT-KIT-NPR", "Ford E-450": "FLT-KIT-E450"}
BRAKE_PART = {"drum": "BRK-SHOE-31", "disc": "BRK-PAD-22"}
STOCK = {("FLT-KIT-M2", "Reno"): 6, ("FLT-KIT-M2", "Carson"): 2, ("FLT-KIT-NPR", "Sparks"): 4, ("FLT-KIT-E450", "Reno"): 3,
         ("FLT-KIT-E450", "Carson"): 0, ("FLT-KIT-E450", "Sparks"): 5, ("BRK-SHOE-31", "Reno"): 8, ("BRK-PAD-22", "Reno"): 12,
         ("BRK-PAD-22", "Sparks"): 6, ("BRK-SHOE-31", "Carson"): 2}


@function_tool
def telematics(unit_id: str) -> dict:
    """Odometer and last preventive-maintenance reading for a vehicle (miles)."""
    u = UNITS[unit_id]
    odo = round(u["odometer_mi"] * 1.609) if on("odo_km") else u["odometer_mi"]  # new gateway reports km
    return {"unit_id": unit_id, "model": u["model"], "odometer_mi": odo, "last_service_mi": u["last_service_mi"], "home_depot": u["depot"]}


@function_tool
def service_interval(model: str) -> dict:
    """Preventive-maintenance interval for a vehicle model (miles)."""
    return {"model": model, "interval_mi": INTERVALS[model]}


@function_tool
def log_work_order(ctx: RunContextWrapper[FleetCtx], unit_id: str, reason: str) -> dict:
    """Open a work order for a vehicle: 'pm' for preventive maintenance or 'brakes' for a brake defect."""
    u = UNITS[unit_id]
    if reason == "pm":
        part = PM_KIT[u["model"]]
    else:
        brakes = "disc" if on("brake_map") else u["brakes"]  # lookup keyed on the model family, not the axle
        part = BRAKE_PART[brakes]
    ctx.context.work_orders[unit_id] = {"unit_id": unit_id, "reason": reason, "part_no": part, "depot": u["depot"]}
    return {"work_order": f"WO-{unit_id[2:]}-{reason}", "status": "open"}


@function_tool
def work_order(ctx: RunContextWrapper[FleetCtx], unit_id: str) -> dict:
    """The open work order for a vehicle: the part to pull and the depot."""
    return dict(ctx.context.work_orders[unit_id])


@function_tool
def parts_stock(part_no: str, depot: str) -> dict:
    """Units of a part on hand at a depot."""
    if on("stock_network"):
        qty = sum(q for (p, _d), q in STOCK.items() if p == part_no)
    else:
        qty = STOCK.get((part_no, depot), 0)
    return {"part_no": part_no, "depot": depot, "on_hand": qty}


def book_service_bay(unit_id: str, depot: str, part_no: str, reason: str) -> str:
    """Reserve a service bay and pull the part for a work order."""
    u = UNITS[unit_id]
    fits = part_no == PM_KIT[u["model"]] or part_no == BRAKE_PART[u["brakes"]]
    if not fits:
        raise RuntimeError(f"Bay booking rejected: {part_no} does not fit {unit_id} ({u['model']}, {u['brakes']} brakes)")
    if STOCK.get((part_no, depot), 0) <= 0:
        raise RuntimeError(f"Bay booking rejected: {part_no} is not on the shelf at {depot}")
    if reason == "pm":
        remaining = INTERVALS[u["model"]] - (u["odometer_mi"] - u["last_service_mi"])
        if remaining > 500:
            raise RuntimeError(f"{unit_id} still has {remaining:,} mi before its PM interval; early PM bookings need a fleet manager override")
    return f"bay booked for {unit_id} at {depot}"


def fleet_brain(body: dict) -> Turn:
    sys, ask = system_text(body), first_user(body)
    unit = re.search(r"(V-\d+)", ask).group(1)
    if sys.startswith("You are the parts desk"):
        wo = last_result(body, "work_order")
        if wo is None:
            return call("work_order", unit_id=unit)
        stock = last_result(body, "parts_stock")
        if stock is None:
            return call("parts_stock", part_no=wo["part_no"], depot=wo["depot"])
        if stock["on_hand"] <= 0:
            return say(f"{wo['part_no']} is out of stock at {wo['depot']}; backordered.")
        if last_result(body, "book_service_bay") is None:
            return call("book_service_bay", unit_id=unit, depot=wo["depot"], part_no=wo["part_no"], reason=wo["reason"])
        return say("Bay booked.")
    brake = "brake" in ask.lower()
    if not brake:
        t = last_result(body, "telematics")
        if t is None:
            return call("telematics", unit_id=unit)
        iv = last_result(body, "service_interval")
        if iv is None:
            return call("service_interval", model=t["model"])
        if iv["interval_mi"] - (t["odometer_mi"] - t["last_service_mi"]) > 500:
            return say(f"{unit} is not due for PM yet.")
    if last_result(body, "log_work_order") is None:
        return call("log_work_order", unit_id=unit, reason="brakes" if brake else "pm")
    return call("transfer_to_parts_desk")


def build_fleet(model: Any) -> Any:
    parts = SdkAgent(name="parts_desk", model=model, tools=[work_order, parts_stock, strict(book_service_bay)],
                     instructions="You are the parts desk. Read the open work order, check the part at the unit's depot, "
                                  "and book a service bay if it is on the shelf.")
    return SdkAgent(name="maintenance_planner", model=model, handoffs=[parts],
                    tools=[telematics, service_interval, log_work_order],
                    instructions="You plan fleet maintenance. For PM requests check mileage against the interval; open a "
                                 "work order when service is due or a defect is reported, then hand off to the parts desk.")


def record_fleet(inp: tuple, fault: str | None, path: Path) -> None:
    unit, kind = inp
    prompt = (f"Driver reported brake pull and a grinding noise on {unit}; please get it in." if kind == "brakes"
              else f"Is {unit} due for preventive maintenance? If so, get it booked.")
    run_agent(build_fleet, "fleet-maintenance-planner", f"{kind} {unit}", prompt, fleet_brain, fault, path, context=FleetCtx())


FLEET = Agent(
    "fleet-maintenance-planner", "agents_sdk", "fleet maintenance", "jsonl", record_fleet,
    passing=[("V-215", "pm"), ("V-301", "pm"), ("V-410", "brakes"), ("V-411", "pm"), ("V-520", "brakes")],
    cases=[
        Case("e-fleet-odo-km", "odo_km", "unit_error", ("V-212", "pm"),
             "telematics reports V-212's odometer in kilometres under odometer_mi; the planner sees it as overdue, opens "
             "a PM work order and hands off, and the bay booking finds 600 mi still to go.",
             "telematics", "tool", "98471", "book_service_bay", 5),
        Case("e-fleet-stock-network", "stock_network", "tool_ignores_arg", ("V-412", "pm"),
             "parts_stock ignores the depot argument and answers with network-wide stock (8 E-450 kits) although "
             "Carson has none; the parts desk books the bay there and the booking finds the shelf empty.",
             "parts_stock", "tool", "'on_hand': 8", "book_service_bay", 2),
        Case("e-fleet-brake-map", "brake_map", "bad_state_write", ("V-212", "brakes"),
             "log_work_order writes a disc-brake pad (BRK-PAD-22) into the work order it stores in the run context for "
             "a drum-brake truck; the parts desk reads the work order back, pulls the pad, and the bay booking rejects the part.",
             "log_work_order", "tool", 1, "book_service_bay", 4),
    ],
)

AGENTS = [FRAUD, TRIALS, FLEET]
