"""refill_bot: a retail pharmacy's refill assistant (``openai`` client instrumented with
openinference-instrumentation-openai; the application's own AGENT / TOOL / CHAIN spans; OTLP JSON).

refill_request (AGENT): lookup_patient -> get_prescription -> parse_sig (CHAIN) -> normalize_strength
(CHAIN) -> model loop with tools: days_supply -> submit_claim (the insurer's adjudication) ->
pharmacist_verification (the label check) -> a message to the patient.
"""

from __future__ import annotations

import json
import re
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from fakellm import Reply, last_result, messages, text_of
from harness import FAULT, AgentSpec, Case
from oi_spans import chain_span, span, tool_span
from routes import install, openai_client, otel_tracer, otlp_run


TODAY = date(2026, 2, 24)
PLAN_MAX_DAYS = {"RETAIL-30": 30, "MAIL-90": 90}

PATIENTS = {
    "PT-5501": {"name": "Margaret Doyle", "plan": "RETAIL-30"},
    "PT-5517": {"name": "Oluwaseun Adebayo", "plan": "MAIL-90"},
    "PT-5523": {"name": "Henrik Lund", "plan": "RETAIL-30"},
    "PT-5538": {"name": "Rosa Delgado", "plan": "RETAIL-30"},
    "PT-5544": {"name": "Bernard Okoro", "plan": "RETAIL-30"},
    "PT-5559": {"name": "Yuki Sato", "plan": "RETAIL-30"},
    "PT-5561": {"name": "Dmitri Volkov", "plan": "RETAIL-30"},
    "PT-5576": {"name": "Clara Jensen", "plan": "RETAIL-30"},
    "PT-5582": {"name": "Amina Yusuf", "plan": "RETAIL-30"},
}

RX = {
    "RX-88012": {"patient": "PT-5501", "drug": "metformin", "strength": "500 mg", "sig": "Take 1 tablet by mouth twice daily with meals", "quantity": 60, "last_fill": "2026-01-26", "per_day": 2},
    "RX-88107": {"patient": "PT-5517", "drug": "levothyroxine", "strength": "25 mcg", "sig": "Take 1 tablet by mouth once daily before breakfast", "quantity": 90, "last_fill": "2025-11-28", "per_day": 1},
    "RX-88230": {"patient": "PT-5523", "drug": "lisinopril", "strength": "10 mg", "sig": "Take 1 tablet by mouth every day", "quantity": 30, "last_fill": "2026-01-27", "per_day": 1},
    "RX-88344": {"patient": "PT-5538", "drug": "gabapentin", "strength": "300 mg", "sig": "Take 1 capsule by mouth three times daily", "quantity": 90, "last_fill": "2026-01-25", "per_day": 3},
    "RX-88459": {"patient": "PT-5544", "drug": "valacyclovir", "strength": "1 g", "sig": "Take 1 tablet by mouth twice daily", "quantity": 60, "last_fill": "2026-01-23", "per_day": 2},
    "RX-88521": {"patient": "PT-5559", "drug": "metoprolol tartrate", "strength": "50 mg", "sig": "Take 1 tablet by mouth every 12 hours", "quantity": 60, "last_fill": "2026-01-05", "per_day": 2},
    "RX-88633": {"patient": "PT-5561", "drug": "levetiracetam", "strength": "0.5 g", "sig": "Take 1 tablet by mouth twice daily", "quantity": 60, "last_fill": "2026-01-25", "per_day": 2},
    "RX-88745": {"patient": "PT-5576", "drug": "atorvastatin", "strength": "20 mg", "sig": "Take 1 tablet by mouth at bedtime", "quantity": 30, "last_fill": "2026-02-19", "per_day": 1},
    "RX-88856": {"patient": "PT-5582", "drug": "estradiol", "strength": "1 mg", "sig": "Take 1 tablet by mouth once daily", "quantity": 28, "last_fill": "2026-01-27", "per_day": 1},
}
# The pharmacy system's nightly snapshot, taken before RX-88745's last fill was posted.
RX_SNAPSHOT = {"RX-88745": {**RX["RX-88745"], "last_fill": "2026-01-20"}}
PRODUCT_MG = {"metformin": 500, "levothyroxine": 0.025, "lisinopril": 10, "gabapentin": 300, "valacyclovir": 1000,
              "metoprolol tartrate": 50, "levetiracetam": 500, "atorvastatin": 20, "estradiol": 1}


class ClaimRejected(Exception):
    """The insurer rejected the pharmacy claim."""


class VerificationFailed(Exception):
    """The pharmacist's label verification failed."""


# -- tools and parsers -------------------------------------------------------------------------------


def lookup_patient(patient_id: str) -> dict[str, Any]:
    FAULT.tick("lookup_patient")
    return {"patient_id": patient_id, **PATIENTS[patient_id]}


def get_prescription(rx_number: str) -> dict[str, Any]:
    FAULT.tick("get_prescription")
    rec = RX[rx_number]
    if FAULT.on("rx_from_nightly_snapshot") and rx_number in RX_SNAPSHOT:
        rec = RX_SNAPSHOT[rx_number]
        FAULT.fire_tool("get_prescription", rec["last_fill"])
    return {"rx_number": rx_number, **rec}


def parse_sig(sig: str) -> dict[str, Any]:
    FAULT.tick("parse_sig")
    s = sig.lower()
    per_dose = int(re.search(r"take (\d+)", s).group(1))
    table = [(r"twice daily|two times a day", 2), (r"three times daily", 3), (r"four times daily", 4),
             (r"once daily|every day|at bedtime|\bdaily\b", 1)]
    if not FAULT.on("sig_hours_interval_unsupported"):
        table.insert(0, (r"every (\d+) hours", None))
    per_day = 1  # the common case
    for pat, n in table:
        m = re.search(pat, s)
        if m:
            per_day = n if n is not None else 24 // int(m.group(1))
            break
    if FAULT.on("sig_hours_interval_unsupported") and re.search(r"every \d+ hours", s):
        FAULT.fire_tool("parse_sig", '"doses_per_day": 1', kind="parse")
    return {"tablets_per_dose": per_dose, "doses_per_day": per_day}


def normalize_strength(strength: str) -> dict[str, Any]:
    FAULT.tick("normalize_strength")
    value, unit = re.fullmatch(r"([\d.]+)\s*(mg|g|mcg)", strength.strip()).groups()
    factor = {"mg": 1, "g": 1000, "mcg": 0.001}[unit]
    if unit == "g" and FAULT.on("grams_times_hundred"):
        factor = 100
        FAULT.fire_tool("normalize_strength", '"strength_mg": 50', kind="parse")
    return {"strength_mg": round(float(value) * factor, 4), "as_written": strength}


def days_supply(quantity: int, tablets_per_dose: int, doses_per_day: int) -> dict[str, Any]:
    FAULT.tick("days_supply")
    return {"quantity": quantity, "days_supply": quantity // (tablets_per_dose * doses_per_day)}


def submit_claim(patient_id: str, rx_number: str, quantity: int, days_supply: int, last_fill_date: str) -> dict[str, Any]:
    FAULT.tick("submit_claim")
    rx = RX[rx_number]
    plan = PATIENTS[patient_id]["plan"]
    if quantity != rx["quantity"]:
        raise ClaimRejected(f"NCPDP reject 76 (plan limitations): quantity {quantity} exceeds the {rx['quantity']} units prescribed on {rx_number}")
    if days_supply > PLAN_MAX_DAYS[plan]:
        raise ClaimRejected(f"NCPDP reject 19: days supply {days_supply} exceeds the {PLAN_MAX_DAYS[plan]}-day maximum of plan {plan}")
    expected = rx["quantity"] // rx["per_day"]
    if days_supply != expected:
        raise ClaimRejected(
            f"NCPDP reject E7: days supply {days_supply} is inconsistent with {quantity} units at the prescribed "
            f"{rx['per_day']} per day ({expected} days) - claim held for audit"
        )
    on_record = date.fromisoformat(rx["last_fill"])
    if (TODAY - on_record).days < 0.75 * expected:
        raise ClaimRejected(
            f"NCPDP reject 79 (refill too soon): plan shows {rx_number} filled on {on_record}; claim assumed {last_fill_date}"
        )
    return {"claim_id": f"CLM-{rx_number[3:]}-0224", "status": "paid", "copay": 4.0 if plan == "RETAIL-30" else 10.0}


def pharmacist_verification(rx_number: str, drug: str, strength_mg: float, directions: str, quantity: int) -> dict[str, Any]:
    FAULT.tick("pharmacist_verification")
    want = PRODUCT_MG[RX[rx_number]["drug"]]
    if abs(strength_mg - want) > 1e-6:
        raise VerificationFailed(
            f"label for {rx_number} states {strength_mg:g} mg {drug}, but the product scanned at fill is {want:g} mg — label not released"
        )
    return {"verified": True, "pharmacist": "R.Ph. J. Mbeki"}


TOOLS = {"days_supply": days_supply, "submit_claim": submit_claim, "pharmacist_verification": pharmacist_verification}
TOOL_SCHEMAS = [
    {"type": "function", "function": {"name": "days_supply", "description": "Compute the days supply of a fill.",
                                      "parameters": {"type": "object", "properties": {"quantity": {"type": "integer"}, "tablets_per_dose": {"type": "integer"}, "doses_per_day": {"type": "integer"}}, "required": ["quantity", "tablets_per_dose", "doses_per_day"]}}},
    {"type": "function", "function": {"name": "submit_claim", "description": "Submit the refill claim to the patient's insurer.",
                                      "parameters": {"type": "object", "properties": {"patient_id": {"type": "string"}, "rx_number": {"type": "string"}, "quantity": {"type": "integer"}, "days_supply": {"type": "integer"}, "last_fill_date": {"type": "string"}}, "required": ["patient_id", "rx_number", "quantity", "days_supply", "last_fill_date"]}}},
    {"type": "function", "function": {"name": "pharmacist_verification", "description": "Send the printed label for pharmacist verification.",
                                      "parameters": {"type": "object", "properties": {"rx_number": {"type": "string"}, "drug": {"type": "string"}, "strength_mg": {"type": "number"}, "directions": {"type": "string"}, "quantity": {"type": "integer"}}, "required": ["rx_number", "drug", "strength_mg", "directions", "quantity"]}}},
]

SYSTEM = ("You are the refill assistant of Brookside Pharmacy. Using the case file: compute the days supply, decide whether the "
          "refill is due (at least 75 % of the last fill's days supply has elapsed), submit the claim, send the label for "
          f"pharmacist verification and tell the patient when to pick up. Today is {TODAY.isoformat()}.")


# -- the scripted model ----------------------------------------------------------------------------------


def policy(body: dict[str, Any]) -> Reply:
    case = json.loads(re.search(r"Case file: (\{.*\})", text_of(messages(body)[1]), flags=re.S).group(1))
    rx, sig, strength = case["prescription"], case["sig"], case["strength"]
    ds = last_result(body, "days_supply")
    claim = last_result(body, "submit_claim")
    ver = last_result(body, "pharmacist_verification")
    if ds is None:
        per_day = sig["doses_per_day"]
        if FAULT.on("once_daily_read_as_twice") and per_day == 1:
            per_day = 2  # "once daily" taken for "one tablet twice daily"
            FAULT.fire_llm('"doses_per_day": 2')
        return Reply(tool_calls=[("days_supply", {"quantity": rx["quantity"], "tablets_per_dose": sig["tablets_per_dose"], "doses_per_day": per_day})])
    if claim is None:
        last = date.fromisoformat(rx["last_fill"])
        due = last + timedelta(days=int(0.75 * ds["days_supply"] + 0.999))
        if TODAY < due:
            return Reply(content=f"Hi {case['patient']['name'].split()[0]}, your {rx['drug']} refill isn't due yet. "
                                 f"We can fill it from {due.isoformat()}; we'll text you then.")
        return Reply(tool_calls=[("submit_claim", {"patient_id": case["patient"]["patient_id"], "rx_number": rx["rx_number"],
                                                   "quantity": ds["quantity"], "days_supply": ds["days_supply"], "last_fill_date": rx["last_fill"]})])
    if ver is None:
        directions = rx["sig"]
        return Reply(tool_calls=[("pharmacist_verification", {"rx_number": rx["rx_number"], "drug": rx["drug"],
                                                              "strength_mg": strength["strength_mg"], "directions": directions,
                                                              "quantity": ds["quantity"]})])
    return Reply(content=f"Hi {case['patient']['name'].split()[0]}, your {rx['drug']} refill is ready for pickup today after 3 pm. "
                         f"Copay ${claim['copay']:.2f}.")


# -- the agent ----------------------------------------------------------------------------------------------


def handle_refill(request: dict[str, Any]) -> str:
    tracer = otel_tracer("brookside.refill_bot")
    client = openai_client()
    with span(tracer, "refill_request", "AGENT", input=request["text"], agent__name="refill_bot") as root:
        patient = tool_span(tracer, "lookup_patient", {"patient_id": request["patient_id"]}, lookup_patient)
        rx = tool_span(tracer, "get_prescription", {"rx_number": request["rx_number"]}, get_prescription)
        sig = chain_span(tracer, "parse_sig", rx["sig"], parse_sig)
        strength = chain_span(tracer, "normalize_strength", rx["strength"], normalize_strength)
        case = {"patient": patient, "prescription": rx, "sig": sig, "strength": strength}
        msgs: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM},
                                      {"role": "user", "content": f"{request['text']}\nCase file: {json.dumps(case)}"}]
        for _ in range(8):
            resp = client.chat.completions.create(model="gpt-4o-mini", messages=msgs, tools=TOOL_SCHEMAS, temperature=0)
            msg = resp.choices[0].message
            if not msg.tool_calls:
                return root.output(msg.content)
            msgs.append({"role": "assistant", "content": msg.content,
                         "tool_calls": [tc.model_dump(exclude_none=True) for tc in msg.tool_calls]})
            for tc in msg.tool_calls:
                args = json.loads(tc.function.arguments)
                result = tool_span(tracer, tc.function.name, args, TOOLS[tc.function.name], call_id=tc.id)
                msgs.append({"role": "tool", "tool_call_id": tc.id, "content": json.dumps(result)})
        raise RuntimeError("refill assistant did not finish")


def execute(inp: dict[str, Any], path: Path, key: str) -> str:
    install(policy)
    return otlp_run(lambda: handle_refill(inp), path, key=key)


def req(patient: str, rx: str, channel: str) -> dict[str, Any]:
    return {"patient_id": patient, "rx_number": rx, "text": f"Refill request via {channel}: patient {patient}, prescription {rx}."}


SPEC = AgentSpec(
    name="refill_bot",
    route="otlp",
    domain="pharmacy refills",
    summary="openai + OpenInference: refill_request AGENT: lookup_patient, get_prescription (TOOL), parse_sig, normalize_strength "
            "(CHAIN), ChatCompletion loop -> days_supply, submit_claim, pharmacist_verification (TOOL)",
    execute=execute,
    ext="json",
    passing=[
        req("PT-5501", "RX-88012", "IVR phone line"),
        req("PT-5517", "RX-88107", "mobile app"),
        req("PT-5523", "RX-88230", "text message"),
        req("PT-5538", "RX-88344", "pharmacy counter"),
        req("PT-5544", "RX-88459", "mobile app"),
    ],
    cases=[
        Case(
            slug="every_12_hours_read_as_daily",
            input=req("PT-5559", "RX-88521", "IVR phone line"),
            fault="sig_hours_interval_unsupported",
            fault_kind="lossy_parsing",
            description="parse_sig has no rule for 'every 12 hours' and falls back to one dose a day without a word; the "
                        "model computes a 60-day supply for 60 tablets and the insurer rejects the claim over the plan's 30-day maximum.",
            failure="submit_claim",
            path=["ChatCompletion", "days_supply", "ChatCompletion", "submit_claim"],
        ),
        Case(
            slug="grams_to_mg_off_by_ten",
            input=req("PT-5561", "RX-88633", "text message"),
            fault="grams_times_hundred",
            fault_kind="unit_error",
            description="normalize_strength converts grams with a factor of 100: 0.5 g becomes 50 mg. The claim goes "
                        "through; the model prints a 50 mg label and the pharmacist verification step refuses it against the 500 mg product.",
            failure="pharmacist_verification",
            path=["ChatCompletion", "pharmacist_verification"],
        ),
        Case(
            slug="last_fill_from_nightly_snapshot",
            input=req("PT-5576", "RX-88745", "mobile app"),
            fault="rx_from_nightly_snapshot",
            fault_kind="stale_data",
            description="get_prescription reads last night's snapshot, taken before the 19 Feb fill was posted, so the "
                        "refill looks due (last fill 20 Jan). The model submits the claim and the insurer rejects it as too soon.",
            failure="submit_claim",
            path=["ChatCompletion", "submit_claim"],
        ),
        Case(
            slug="once_daily_passed_as_two",
            input=req("PT-5582", "RX-88856", "pharmacy counter"),
            fault="once_daily_read_as_twice",
            fault_kind="wrong_tool_args",
            description="For a once-daily estradiol prescription the model calls days_supply with doses_per_day=2; the "
                        "14-day result makes the refill look due, the model claims 14 days, and the insurer rejects the "
                        "days supply as inconsistent with the prescription.",
            failure="submit_claim",
            path=["days_supply", "ChatCompletion", "submit_claim"],
        ),
    ],
)
