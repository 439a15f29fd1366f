"""Mortgage pre-qualification assistant (route c: the openai client under OpenInference, plus own OTel spans).

A broker asks whether an application pre-qualifies. A model reads the message, the assistant loads the
application, pulls the credit report, converts income to US dollars, retrieves the broker's case notes, gets
an automated valuation, has a model assess debt-to-income and loan-to-value, builds the loan file and sends it
to the lender's underwriting API, which re-verifies every figure on the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .common import AgentSpec, Case, Req, active, brain, keyed, oi_chat, oi_span, record_otel


AGENT = "mortgage-prequal-assistant"

APPS = keyed(
    "applicant income currency loan price estimated_value property",
    {
        'A-3301': ('Grace Liu', 131000, 'USD', 350000, 440000, 450000, 'PR-118'),
        'A-4410': ('Marc Tremblay', 168000, 'CAD', 280000, 360000, 365000, 'PR-204'),
        'A-8802': ('Dana Okoro', 112000, 'USD', 330000, 380000, 390000, 'PR-311'),
        'A-9150': ('Eli Sandoval', 94000, 'EUR', 200000, 270000, 280000, 'PR-415'),
        'A-5120': ('Hana Sato', 120000, 'USD', 300000, 400000, 405000, 'PR-520'),
        'A-6034': ('Luc Gagnon', 150000, 'CAD', 260000, 350000, 352000, 'PR-603'),
        'A-2208': ('Ravi Menon', 98000, 'USD', 240000, 320000, 325000, 'PR-722'),
        'A-7719': ('Olga Berg', 165000, 'USD', 420000, 500000, 540000, 'PR-819'),
    },
)
FX_TO_USD = {"USD": 1.0, "CAD": 0.73, "EUR": 1.08}
BUREAU = {
    "A-5120": [
        ("Card One", 120),
        ("Metro Card", 80),
        ("Federal Student Aid", 310),
        ("Mobile plan", 45),
        ("Lakeside Auto Finance", 640),
    ],
    "A-3301": [("Card One", 150), ("Lakeside Auto Finance", 420)],
    "A-4410": [("Maple Visa", 90)],
    "A-8802": [("Card One", 60), ("Federal Student Aid", 280), ("Metro Card", 40)],
    "A-9150": [("Euro Card", 110)],
    "A-6034": [("Maple Visa", 150), ("Line of credit", 250)],
    "A-2208": [("Card One", 300)],
    "A-7719": [("Card One", 200), ("Metro Card", 300)],
}
PAGE = 4
AVM = {
    "PR-118": 452000,
    "PR-204": 362000,
    "PR-311": 376000,
    "PR-415": 281000,
    "PR-520": 410000,
    "PR-603": 345000,
    "PR-722": 330000,
    "PR-819": 490000,
}
CASE_NOTES = {
    "A-2208": "Broker call 11/28: applicant salaried, 6 years at employer; no co-borrower.",
    "A-5120": "Self-employed 2019-2021, salaried since.",
    "A-3301": "First-time buyer.",
    "A-4410": "Relocating from Montreal; income paid in CAD.",
    "A-8802": "Gift letter on file.",
    "A-9150": "EU employer, income in EUR.",
    "A-6034": "Income paid in CAD by a Quebec employer.",
    "A-7719": "Wants to close before February.",
}
SHARED_NOTES = "A-7731 broker call 11/29: add co-borrower income 64,000 (spouse, nurse) to the assessment."
RATE_FACTOR = 0.00665  # monthly payment per dollar borrowed (30 years, about 7%)


class UnderwritingDeclined(RuntimeError):
    """The lender's underwriting API declined the file."""


@brain("mortgage.intake")
def _intake(req: Req) -> str:
    app = re.search(r"A-\d{4}", req.user)
    return json.dumps({"application": app.group(0) if app else None, "question": "prequalification"})


@brain("mortgage.assess")
def _assess(req: Req) -> str:
    c = json.loads(req.user)
    co = 0
    m = re.search(r"co-borrower income ([\d,]+)", c["notes"])
    if m:
        co = int(m.group(1).replace(",", ""))
    monthly = (c["income_usd"] + co) / 12
    payment = c["loan"] * RATE_FACTOR
    dti = round((sum(t["monthly"] for t in c["tradelines"]) + payment) / monthly, 3)
    ltv = round(c["loan"] / c["value"], 3)
    return json.dumps({"prequalified": dti <= 0.43, "dti": dti, "ltv": ltv, "pmi": ltv > 0.8, "co_borrower_income": co})


def load_application(app_id: str) -> dict:
    with oi_span("load_application", "TOOL", {"application": app_id}) as s:
        return s.output(dict(APPS[app_id], application=app_id))


def fetch_credit_report(app_id: str) -> dict:
    with oi_span("fetch_credit_report", "TOOL", {"application": app_id}) as s:
        lines = [{"creditor": c, "monthly": m} for c, m in BUREAU[app_id]]
        if active("mortgage.bureau_pages") and len(lines) > PAGE:
            return s.output({"tradelines": lines[:PAGE], "next_cursor": "eyJwYWdlIjoyfQ"})
        return s.output({"tradelines": lines})


def normalize_income(amount: float, currency: str) -> dict:
    with oi_span("normalize_income", "TOOL", {"amount": amount, "currency": currency}) as s:
        rate = 1.0 if active("mortgage.fx_label") else FX_TO_USD[currency]
        return s.output({"income_usd": round(amount * rate, 2), "currency": "USD"})


def recall_case_notes(app_id: str) -> str:
    with oi_span("recall_case_notes", "RETRIEVER", app_id) as s:
        notes = CASE_NOTES[app_id]
        if active("mortgage.notes_scope"):
            notes = f"{notes}\n{SHARED_NOTES}"
        return s.output(notes)


def appraisal_lookup(app: dict) -> dict:
    with oi_span("appraisal_lookup", "TOOL", {"property": app["property"]}) as s:
        try:
            if active("mortgage.avm_outage"):
                raise ConnectionError("AVM provider: 503 Service Unavailable")
            value = AVM[app["property"]]
        except ConnectionError:
            value = app["estimated_value"]
        return s.output({"property": app["property"], "value": value})


def build_file(app: dict, income: dict, credit: dict, valuation: dict, assessment: dict) -> dict:
    with oi_span("build_file", "CHAIN", {"application": app["application"]}) as s:
        return s.output(
            {
                "application": app["application"],
                "stated_income_usd": income["income_usd"],
                "loan": app["loan"],
                "value": valuation["value"],
                **assessment,
                "tradelines": len(credit["tradelines"]),
            }
        )


def submit_to_underwriting(loan_file: dict) -> dict:
    with oi_span("submit_to_underwriting", "TOOL", loan_file) as s:
        app = APPS[loan_file["application"]]
        income = app["income"] * FX_TO_USD[app["currency"]]
        if loan_file["co_borrower_income"] > 0:
            raise UnderwritingDeclined("a co-borrower's income is on the file but no co-borrower is on the application")
        if abs(loan_file["stated_income_usd"] - income) > 0.05 * income:
            raise UnderwritingDeclined("stated income does not reconcile with the employer verification")
        debts = sum(m for _, m in BUREAU[loan_file["application"]])
        dti = (debts + app["loan"] * RATE_FACTOR) / (income / 12)
        if abs(dti - loan_file["dti"]) > 0.02:
            raise UnderwritingDeclined("stated debt-to-income ratio does not reconcile with the bureau file")
        if app["loan"] / AVM[app["property"]] > 0.8 and not loan_file["pmi"]:
            raise UnderwritingDeclined("loan-to-value above 80% requires mortgage insurance on the file")
        return s.output({"decision": "conditionally approved", "dti": round(dti, 3)})


def agent(message: str) -> str:
    intake = json.loads(oi_chat("desk: mortgage.intake. Read the broker's request as JSON.", message))
    app = load_application(intake["application"])
    credit = fetch_credit_report(app["application"])
    income = normalize_income(app["income"], app["currency"])
    notes = recall_case_notes(app["application"])
    valuation = appraisal_lookup(app)
    ctx = {
        "income_usd": income["income_usd"],
        "tradelines": credit["tradelines"],
        "loan": app["loan"],
        "value": valuation["value"],
        "notes": notes,
    }
    assessment = json.loads(oi_chat("desk: mortgage.assess. Assess DTI and LTV; reply in JSON.", json.dumps(ctx)))
    if not assessment["prequalified"]:
        return "The application does not prequalify."
    decision = submit_to_underwriting(build_file(app, income, credit, valuation, assessment))
    return f"Prequalified: {decision['decision']}."


def record(inp: dict, path: Path) -> None:
    record_otel(AGENT, inp["message"], lambda: agent(inp["message"]), path, UnderwritingDeclined)


def _in(app: str) -> dict[str, Any]:
    return {"message": f"Does application {app} prequalify? Please send it to underwriting if so."}


# fmt: off
SPEC = AgentSpec(
    agent=AGENT, route="c", domain="mortgage pre-qualification", record=record, ext="json",
    summary="intake LLM, application/credit/FX tools, notes retriever, valuation, assessment LLM, file, underwriting",
    refs=[_in("A-3301"), _in("A-4410"),
          _in("A-8802"), _in("A-9150")],
    cases=[
        Case("g_mortgage_bureau", "truncated_result", "mortgage.bureau_pages", _in("A-5120"),
             "fetch_credit_report", "next_cursor",
             "The credit report tool returns only the first page of tradelines, leaving out the car loan."),
        Case("g_mortgage_fx", "currency_mixup", "mortgage.fx_label", _in("A-6034"),
             "normalize_income", '"income_usd": 150000',
             "The income normalizer passes a CAD salary through unconverted and labels it USD."),
        Case("g_mortgage_notes", "context_pollution", "mortgage.notes_scope", _in("A-2208"),
             "recall_case_notes", "A-7731",
             "The case-notes retrieval pulls another application's note, whose co-borrower income the " "assessment then adds."),
        Case("g_mortgage_avm", "swallowed_error", "mortgage.avm_outage", _in("A-7719"),
             "appraisal_lookup", '"value": 540000',
             "The valuation service's outage is swallowed and the broker's estimate is used as the value."),
    ],
)
# fmt: on
