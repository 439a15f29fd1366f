"""visa_desk: a consulate's visa-filing assistant (OpenAI Agents SDK: intake agent with handoffs
to three specialists).

intake -> handoff to work_visa_specialist | student_visa_specialist | visitor_visa_specialist;
the specialist pulls the applicant record, checks passport validity for the arrival date, looks
up the fee (EUR), converts it to the USD the applicant pays, and files with the consular
system (``file_application``), which re-checks the filing and raises on an inconsistent one.
"""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path
from typing import Any

from fakellm import Reply, last_result, system_prompt, user_text
from harness import FAULT, AgentSpec, Case
from routes import agents_model, install, run_agents


TODAY = date(2026, 2, 24)
EUR_USD = 1.08  # reference rate published by the consulate's bank this morning
FEES_EUR = {"D-employment": 75.0, "D-study": 75.0, "C-short-stay": 90.0}
CLASS_FOR = {"employment": "D-employment", "study": "D-study", "visit": "C-short-stay"}

APPLICANTS = {
    "A-3391": {"name": "Tomasz Wierzbicki", "nationality": "PL", "purpose": "employment", "passport_no": "EK4471920", "passport_expiry": "2031-05-30"},
    "A-3402": {"name": "Ana Lucia Ferreira", "nationality": "BR", "purpose": "study", "passport_no": "FZ883102", "passport_expiry": "2029-11-02"},
    "A-3417": {"name": "Daniel Mensah", "nationality": "GH", "purpose": "visit", "passport_no": "G2290417", "passport_expiry": "2028-08-19"},
    "A-3425": {"name": "Hye-jin Park", "nationality": "KR", "purpose": "study", "passport_no": "M77120045", "passport_expiry": "2033-01-15"},
    "A-3438": {"name": "Ravi Subramanian", "nationality": "IN", "purpose": "employment", "passport_no": "Z5510382", "passport_expiry": "2030-03-07"},
    "A-3450": {"name": "Chiara Bellini", "nationality": "US", "purpose": "employment", "passport_no": "598120447", "passport_expiry": "2032-09-12"},
    "A-3463": {"name": "Mateo Rojas", "nationality": "CO", "purpose": "study", "passport_no": "AQ412877", "passport_expiry": "2030-12-01"},
    "A-3471": {"name": "Leila Haddad", "nationality": "LB", "purpose": "visit", "passport_no": "LR0093381", "passport_expiry": "2029-06-30"},
    "A-3489": {"name": "Kwame Asante", "nationality": "GH", "purpose": "employment", "passport_no": "G4418820", "passport_expiry": "2035-04-22"},
}
# The front-office cache still holds the record as it was before the applicant renewed their passport.
RECORD_CACHE = {"A-3489": {**APPLICANTS["A-3489"], "passport_no": "G1190034", "passport_expiry": "2026-07-09"}}


class ConsularFilingError(Exception):
    """The consular filing system refused the application."""


def _d(s: str) -> date:
    return date.fromisoformat(s)


def _months_between(a: date, b: date) -> int:
    return (b.year - a.year) * 12 + (b.month - a.month) - (1 if b.day < a.day else 0)


def build_tools() -> list[Any]:
    from agents import function_tool

    @function_tool
    def applicant_record(applicant_id: str) -> str:
        """Fetch the applicant's record: name, nationality, stated purpose, current passport."""
        FAULT.tick("applicant_record")
        rec = APPLICANTS[applicant_id]
        if FAULT.on("record_cache_before_renewal") and applicant_id in RECORD_CACHE:
            rec = RECORD_CACHE[applicant_id]
            FAULT.fire_tool("applicant_record", rec["passport_no"])
        return json.dumps({"applicant_id": applicant_id, **rec})

    @function_tool
    def passport_validity(passport_no: str, passport_expiry: str, arrival_date: str) -> str:
        """How many full months the passport remains valid after the arrival date (ISO dates)."""
        FAULT.tick("passport_validity")
        months = _months_between(_d(arrival_date), _d(passport_expiry))
        return json.dumps({"passport_no": passport_no, "arrival_date": arrival_date, "months_valid_after_arrival": months})

    @function_tool
    def visa_fee(visa_class: str, nationality: str) -> str:
        """The consular fee for a visa class, in EUR."""
        FAULT.tick("visa_fee")
        return json.dumps({"visa_class": visa_class, "fee": FEES_EUR[visa_class], "currency": "EUR"})

    @function_tool
    def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
        """Convert an amount at the bank's reference rate of the day."""
        FAULT.tick("convert_currency")
        rate = EUR_USD if (from_currency, to_currency) == ("EUR", "USD") else 1 / EUR_USD
        if FAULT.on("fx_rate_inverted"):
            rate = 1 / rate  # the rate table is stored quote-per-base, read as base-per-quote
        out = round(amount * rate, 2)
        if FAULT.on("fx_rate_inverted"):
            FAULT.fire_tool("convert_currency", out)
        return json.dumps({"amount": out, "currency": to_currency, "rate": round(rate, 6)})

    @function_tool(failure_error_function=None)
    def file_application(applicant_id: str, visa_class: str, arrival_date: str, passport_no: str,
                         passport_months_valid: int, fee_paid_usd: float) -> str:
        """File the visa application with the consular system (final step)."""
        FAULT.tick("file_application")
        rec = APPLICANTS[applicant_id]
        want = CLASS_FOR[rec["purpose"]]
        if visa_class != want:
            raise ConsularFilingError(
                f"{applicant_id}: the dossier supports '{rec['purpose']}' (file as {want}); a {visa_class} application would be refused at the post"
            )
        lead = (_d(arrival_date) - TODAY).days
        if lead < 15:
            raise ConsularFilingError(f"arrival {arrival_date} leaves {lead} days; national and Schengen visas need at least 15 days' processing")
        if passport_months_valid < 6:
            raise ConsularFilingError(
                f"passport {passport_no} would have {passport_months_valid} month(s) left at arrival; six are required"
            )
        if passport_no != rec["passport_no"]:
            raise ConsularFilingError(f"passport {passport_no} is not the travel document registered for {applicant_id}")
        due = round(FEES_EUR[visa_class] * EUR_USD, 2)
        if abs(fee_paid_usd - due) > 0.5:
            raise ConsularFilingError(f"fee mismatch: USD {fee_paid_usd:.2f} received, USD {due:.2f} due for {visa_class}")
        return json.dumps({"status": "filed", "reference": f"VF-{applicant_id}-{arrival_date.replace('-', '')}"})

    return [applicant_record, passport_validity, visa_fee, convert_currency, file_application]


# -- the scripted model -------------------------------------------------------------------------------


def route_for(text: str) -> str:
    t = text.lower()
    if FAULT.on("onboarding_read_as_visit") and "onboarding" in t:
        FAULT.fire_llm("transfer_to_visitor_visa_specialist")
        return "visitor_visa_specialist"
    if any(w in t for w in ("job offer", "employment contract", "hired", "work permit")):
        return "work_visa_specialist"
    if any(w in t for w in ("admission", "enrolled", "university", "semester")):
        return "student_visa_specialist"
    return "visitor_visa_specialist"


def arrival_iso(text: str) -> str:
    d, m, y = re.search(r"(\d{2})/(\d{2})/(\d{4})", text).groups()
    if FAULT.on("arrival_day_month_swapped") and d != m and int(d) <= 12:
        d, m = m, d  # read as month/day
        iso = f"{y}-{m}-{d}"
        FAULT.fire_llm(iso)
        return iso
    return f"{y}-{m}-{d}"


def policy(body: dict[str, Any]) -> Reply:
    sp = system_prompt(body)
    ask = user_text(body)
    if "intake" in sp.lower():
        return Reply(tool_calls=[(f"transfer_to_{route_for(ask)}", {})])
    klass = {"work": "D-employment", "student": "D-study", "visitor": "C-short-stay"}[re.search(r"the (\w+) visa desk", sp).group(1)]
    app_id = re.search(r"\b(A-\d{4})\b", ask).group(1)
    rec = last_result(body, "applicant_record")
    valid = last_result(body, "passport_validity")
    fee = last_result(body, "visa_fee")
    conv = last_result(body, "convert_currency")
    filed = last_result(body, "file_application")
    if rec is None:
        return Reply(tool_calls=[("applicant_record", {"applicant_id": app_id})])
    if valid is None:
        return Reply(tool_calls=[("passport_validity", {"passport_no": rec["passport_no"], "passport_expiry": rec["passport_expiry"],
                                                        "arrival_date": arrival_iso(ask)})])
    if fee is None:
        return Reply(tool_calls=[("visa_fee", {"visa_class": klass, "nationality": rec["nationality"]})])
    if conv is None:
        return Reply(tool_calls=[("convert_currency", {"amount": fee["fee"], "from_currency": "EUR", "to_currency": "USD"})])
    if filed is None:
        return Reply(tool_calls=[("file_application", {
            "applicant_id": app_id, "visa_class": klass, "arrival_date": valid["arrival_date"], "passport_no": valid["passport_no"],
            "passport_months_valid": valid["months_valid_after_arrival"], "fee_paid_usd": conv["amount"]})])
    return Reply(content=f"Filed {klass} for {rec['name']}: reference {filed['reference']}. Fee charged: USD {conv['amount']:.2f}.")


def build_agents() -> Any:
    from agents import Agent

    tools = build_tools()
    desks = []
    for desk, blurb in (("work", "employment (national D) visas"), ("student", "study (national D) visas"),
                        ("visitor", "short-stay Schengen C visas")):
        desks.append(Agent(
            name=f"{desk}_visa_specialist",
            instructions=(f"You are the {desk} visa desk, handling {blurb}. Pull the applicant record, check passport "
                          "validity on the arrival date (the applicant writes dates as DD/MM/YYYY), look up the fee, convert it "
                          "to USD and file the application."),
            tools=tools,
            model=agents_model("gpt-4.1-mini"),
        ))
    return Agent(
        name="intake",
        instructions="You are the consulate's intake agent. Read the request and hand it to the right visa desk.",
        handoffs=desks,
        model=agents_model("gpt-4.1-mini"),
    )


def execute(inp: dict[str, Any], path: Path, key: str) -> str:
    install(policy)
    return run_agents(build_agents(), inp["message"], path, workflow="visa_desk", key=key)


SPEC = AgentSpec(
    name="visa_desk",
    route="openai_agents",
    domain="visa and immigration paperwork",
    summary="Agents SDK: intake -> handoff to work/student/visitor specialist -> applicant_record, passport_validity, visa_fee, "
            "convert_currency -> file_application",
    execute=execute,
    passing=[
        {"message": "Applicant A-3391 has signed an employment contract with a Munich logistics firm; arrival 02/05/2026. Please file."},
        {"message": "A-3402 was granted admission to TU Berlin for the winter semester. She lands on 28/09/2026."},
        {"message": "Please handle A-3417: a two-week family visit, arriving 14/06/2026."},
        {"message": "Student file for A-3425, enrolled at Heidelberg University from October; arrival date 01/10/2026."},
        {"message": "A-3471 is attending a trade fair and visiting friends; arriving 19/05/2026, leaving after ten days."},
    ],
    cases=[
        Case(
            slug="onboarding_routed_to_visitor_desk",
            input={"message": "A-3438 accepted a job offer in Hamburg and first flies in for the company's onboarding week; "
                              "arrival 20/04/2026. Please take care of the visa."},
            fault="onboarding_read_as_visit",
            fault_kind="wrong_routing",
            description="The intake model reads 'onboarding week' as a short visit and hands an employment case to the "
                        "visitor desk; that desk prices and files a C short-stay visa, which the consular system refuses "
                        "because the dossier is an employment one.",
            failure="file_application",
            path=["handoff intake -> visitor_visa_specialist", "generation gpt-4.1-mini", "file_application"],
        ),
        Case(
            slug="arrival_date_month_first",
            input={"message": "Employment visa for A-3450 (job offer from a Frankfurt bank). Arrival 03/09/2026, please file today."},
            fault="arrival_day_month_swapped",
            fault_kind="wrong_tool_args",
            description="The work desk's model reads the applicant's 03/09/2026 (3 September) as March 9 and passes "
                        "arrival_date=2026-03-09 to passport_validity; the date is echoed back and filed, and the consular "
                        "system refuses an arrival only 13 days away.",
            failure="file_application",
            path=["passport_validity", "generation gpt-4.1-mini", "file_application"],
        ),
        Case(
            slug="fee_rate_inverted",
            input={"message": "A-3463 has admission to a master's programme at the University of Freiburg, arrival 25/08/2026."},
            fault="fx_rate_inverted",
            fault_kind="unit_error",
            description="convert_currency applies the EUR/USD reference rate the wrong way round: the EUR 75 fee becomes "
                        "USD 69.44 instead of 81.00; the model files that amount and the consular system rejects the fee.",
            failure="file_application",
            path=["generation gpt-4.1-mini", "file_application"],
        ),
        Case(
            slug="passport_from_pre_renewal_cache",
            input={"message": "Please file for A-3489, who was hired by a Cologne engineering firm (employment contract attached). "
                              "Arrival 11/05/2026."},
            fault="record_cache_before_renewal",
            fault_kind="stale_data",
            description="applicant_record answers from the front-office cache, which still has the passport the applicant "
                        "replaced (expiring July 2026). passport_validity computes 1 month left, the model files it, and the "
                        "consular system refuses the filing.",
            failure="file_application",
            path=["generation gpt-4.1-mini", "passport_validity", "generation gpt-4.1-mini", "file_application"],
        ),
    ],
)
