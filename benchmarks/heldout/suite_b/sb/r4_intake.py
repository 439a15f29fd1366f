"""Travel-insurance claim intake (trajdebug recording SDK, insurance claims).

A scanned claim form is OCR'd, the model extracts the fields as JSON (its JSON
often needs repair), the invoice amount is converted to the policy currency,
a screening sub-agent identifies the claimant in the customer register, the
coverage is assessed, and a final validation guards the reserve that is set.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trajdebug
from sb.harness import Case, failing, faulty, tick


AGENT = "travel-claim-intake"
ROUTE = "trajdebug-sdk"
DOMAIN = "insurance claims"

PEOPLE = [
    {"customer_id": "TC-1001", "name": "Anna Berg", "dob": "1984-02-11", "policy_no": "TRV-88120"},
    {"customer_id": "TC-1002", "name": "Anna Berg", "dob": "1991-09-30", "policy_no": "TRV-90415"},
    {"customer_id": "TC-2040", "name": "Rui Matos", "dob": "1979-05-02", "policy_no": "TRV-77301"},
    {"customer_id": "TC-3112", "name": "Kofi Mensah", "dob": "1988-12-19", "policy_no": "TRV-66018"},
    {"customer_id": "TC-3113", "name": "Kofi Mensah", "dob": "1962-07-07", "policy_no": "TRV-61290"},
    {"customer_id": "TC-4500", "name": "Lena Fischer", "dob": "1995-03-23", "policy_no": "TRV-91002"},
    {"customer_id": "TC-5021", "name": "Omar Haddad", "dob": "1970-10-14", "policy_no": "TRV-55473"},
    {"customer_id": "TC-6230", "name": "Yuki Sato", "dob": "2001-01-05", "policy_no": "TRV-99881"},
]
POLICIES = {  # policy -> (currency, per-claim medical limit, excess)
    "TRV-88120": ("EUR", 10000.0, 100.0),
    "TRV-90415": ("EUR", 5000.0, 250.0),
    "TRV-77301": ("EUR", 20000.0, 150.0),
    "TRV-66018": ("EUR", 15000.0, 100.0),
    "TRV-61290": ("EUR", 8000.0, 200.0),
    "TRV-91002": ("EUR", 12000.0, 0.0),
    "TRV-55473": ("EUR", 25000.0, 300.0),
    "TRV-99881": ("EUR", 7000.0, 100.0),
}
FX_TO_EUR = {"GBP": 1.1712, "USD": 0.9197, "CHF": 1.0455, "EUR": 1.0, "JPY": 0.00593}
FORMS = {
    "DOC-7001": {
        "name": "Anna Berg",
        "dob": "1991-09-30",
        "policy_no": "TRV-90415",
        "currency": "GBP",
        "amount": 3200.00,
        "assessor_eur": 3747.84,
        "what": "fractured wrist, London A&E",
    },
    "DOC-7002": {
        "name": "Rui Matos",
        "dob": "1979-05-02",
        "policy_no": "TRV-77301",
        "currency": "USD",
        "amount": 8450.00,
        "assessor_eur": 7771.47,
        "what": "appendectomy, Boston",
    },
    "DOC-7003": {
        "name": "Kofi Mensah",
        "dob": "1962-07-07",
        "policy_no": "TRV-61290",
        "currency": "CHF",
        "amount": 2780.50,
        "assessor_eur": 2907.01,
        "what": "ski injury, Zermatt",
    },
    "DOC-7004": {
        "name": "Lena Fischer",
        "dob": "1995-03-23",
        "policy_no": "TRV-91002",
        "currency": "JPY",
        "amount": 412000.0,
        "assessor_eur": 2443.16,
        "what": "food poisoning, Osaka",
    },
    "DOC-7005": {
        "name": "Omar Haddad",
        "dob": "1970-10-14",
        "policy_no": "TRV-55473",
        "currency": "USD",
        "amount": 15120.00,
        "assessor_eur": 13905.86,
        "what": "cardiac observation, Miami",
    },
    "DOC-7006": {
        "name": "Yuki Sato",
        "dob": "2001-01-05",
        "policy_no": "TRV-99881",
        "currency": "GBP",
        "amount": 640.00,
        "assessor_eur": 749.57,
        "what": "dental emergency, Edinburgh",
    },
    "DOC-7007": {
        "name": "Anna Berg",
        "dob": "1984-02-11",
        "policy_no": "TRV-88120",
        "currency": "CHF",
        "amount": 1190.00,
        "assessor_eur": 1244.15,
        "what": "sprained ankle, Geneva",
    },
    "DOC-7008": {
        "name": "Kofi Mensah",
        "dob": "1988-12-19",
        "policy_no": "TRV-66018",
        "currency": "USD",
        "amount": 5300.00,
        "assessor_eur": 4874.41,
        "what": "pneumonia, Chicago",
    },
    "DOC-7009": {
        "name": "Rui Matos",
        "dob": "1979-05-02",
        "policy_no": "TRV-77301",
        "currency": "GBP",
        "amount": 2150.00,
        "assessor_eur": 2518.08,
        "what": "burns, Manchester",
    },
}


@trajdebug.step(kind="tool")
def ocr_document(doc_id: str) -> str:
    tick("ocr_document")
    f = FORMS[doc_id]
    return (
        f"CLAIM FORM {doc_id}\nInsured: {f['name']}  Date of birth: {f['dob']}\nPolicy: {f['policy_no']}\n"
        f"Treatment: {f['what']}\nInvoice total: {f['amount']:.2f} {f['currency']}\n"
        f"Assessor estimate (EUR): {f['assessor_eur']:.2f}"
    )


@trajdebug.step(kind="llm", attributes={"model": "extractor-large"})
def extract_fields(page: str) -> str:
    """The fake model: reads the OCR text and writes JSON, with the trailing comma it likes to leave."""
    tick("extract_fields")
    g = dict(
        re.findall(
            r"(Insured|Date of birth|Policy|Invoice total|Assessor estimate \(EUR\)): ([^\n]+?)(?=  |\n|$)",
            page,
        )
    )
    amount, currency = g["Invoice total"].split()
    return (
        "{\n"
        f'  "insured_name": "{g["Insured"]}",\n'
        f'  "date_of_birth": "{g["Date of birth"]}",\n'
        f'  "policy_no": "{g["Policy"]}",\n'
        f'  "invoice_amount": {amount},\n'
        f'  "invoice_currency": "{currency}",\n'
        f'  "assessor_estimate_eur": {g["Assessor estimate (EUR)"]},\n'
        "}"
    )


@trajdebug.step(kind="parse")
def repair_json(text: str) -> dict[str, Any]:
    tick("repair_json")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    if faulty("repair_strings_only", "repair_json"):
        # fallback 'repair': harvest the quoted pairs; numbers are left behind
        data: dict[str, Any] = dict(re.findall(r'"(\w+)":\s*"([^"]*)"', text))
    else:
        data = json.loads(re.sub(r",\s*}", "}", text))
    data.setdefault("invoice_amount", 0.0)
    data.setdefault("assessor_estimate_eur", 0.0)
    return data


@trajdebug.step(kind="tool")
def convert_currency(amount: float, currency: str) -> dict[str, Any]:
    tick("convert_currency")
    rate = FX_TO_EUR[currency]
    if faulty("fx_inverted", "convert_currency"):
        rate = 1 / rate  # table read as EUR->currency
    return {"amount_eur": round(amount * rate, 2), "rate": round(rate, 6), "from": currency}


@trajdebug.step(kind="tool")
def search_people(name: str) -> list[dict[str, Any]]:
    tick("search_people")
    return [dict(p) for p in PEOPLE if p["name"] == name]


@trajdebug.step(kind="llm", attributes={"model": "screening-small"})
def pick_match(question: str) -> str:
    """The screening agent's model: picks the register entry matching the form."""
    tick("pick_match")
    q = json.loads(question)
    cands = q["candidates"]
    if faulty("screen_first_namesake", "pick_match") and len(cands) > 1:
        return cands[0]["customer_id"]  # namesakes: takes the first without comparing date of birth
    return next(c["customer_id"] for c in cands if c["dob"] == q["date_of_birth"])


@trajdebug.step(kind="agent", agent="screening")
def screen_claimant(name: str, date_of_birth: str) -> dict[str, Any]:
    cands = search_people(name)
    cid = pick_match(json.dumps({"name": name, "date_of_birth": date_of_birth, "candidates": cands}))
    return next(c for c in cands if c["customer_id"] == cid)


@trajdebug.step(kind="tool")
def assess_coverage(policy_no: str, amount_eur: float) -> dict[str, Any]:
    tick("assess_coverage")
    _currency, limit, excess = POLICIES[policy_no]
    return {
        "policy_no": policy_no,
        "reserve_eur": round(min(limit, max(0.0, amount_eur - excess)), 2),
        "excess": excess,
    }


@trajdebug.step(kind="condition")
def validate_claim(
    fields: dict[str, Any], claimant: dict[str, Any], converted: dict[str, Any], coverage: dict[str, Any]
) -> dict[str, Any]:
    tick("validate_claim")
    if claimant["policy_no"] != fields["policy_no"]:
        failing("validate_claim")
        raise LookupError(
            f"claimant {claimant['customer_id']} ({claimant['name']}, born {claimant['dob']}) does not hold {fields['policy_no']}"
        )
    est = float(fields["assessor_estimate_eur"]) or None
    if est is None or converted["amount_eur"] <= 0:
        failing("validate_claim")
        raise ValueError(
            f"no priced loss on {fields['policy_no']}: invoice converts to EUR {converted['amount_eur']:.2f}"
        )
    if abs(converted["amount_eur"] - est) > 0.05 * est:
        failing("validate_claim")
        raise ValueError(
            f"converted invoice EUR {converted['amount_eur']:,.2f} is not within 5% of the assessor's EUR {est:,.2f}"
        )
    return {"valid": True, "reserve_eur": coverage["reserve_eur"]}


@trajdebug.step(kind="tool")
def open_claim(doc_id: str, customer_id: str, reserve_eur: float) -> str:
    tick("open_claim")
    return f"claim opened for {customer_id} from {doc_id}, reserve EUR {reserve_eur:,.2f}"


def run(task: dict[str, Any], path: Path) -> Any:
    doc = task["doc_id"]
    with trajdebug.run("travel-claim-intake", path=path, task=f"intake {doc}", agent=AGENT):
        fields = repair_json(extract_fields(ocr_document(doc)))
        converted = convert_currency(float(fields["invoice_amount"]), fields["invoice_currency"])
        claimant = screen_claimant(fields["insured_name"], fields["date_of_birth"])
        coverage = assess_coverage(fields["policy_no"], converted["amount_eur"])
        verdict = validate_claim(fields, claimant, converted, coverage)
        return open_claim(doc, claimant["customer_id"], verdict["reserve_eur"])


PASSING = [{"doc_id": d} for d in ("DOC-7002", "DOC-7005", "DOC-7006", "DOC-7007", "DOC-7009")]

CASES = [
    Case(
        id="intake-fx-inverted",
        task={"doc_id": "DOC-7008"},
        fault="fx_inverted",
        fault_kind="unit_scale_error",
        description="convert_currency reads the rate table the wrong way round and divides by the USD->EUR rate; the "
        "converted invoice is EUR 5,762.75 instead of 4,874.41. Coverage is assessed on it and the final validation "
        "finds it out of line with the assessor's estimate.",
        root="convert_currency",
        evidence="5762.75",
        path=["convert_currency", "assess_coverage", "validate_claim"],
        failure="validate_claim",
    ),
    Case(
        id="intake-json-repair-drops-numbers",
        task={"doc_id": "DOC-7004"},
        fault="repair_strings_only",
        fault_kind="lossy_parsing",
        description="The model's JSON has a trailing comma; repair_json's fallback keeps only quoted string pairs, so "
        "the invoice amount and the assessor estimate default to 0. The zero converts to EUR 0 and the validation "
        "finds no priced loss.",
        root="repair_json",
        evidence='"invoice_amount": 0.0',
        path=["repair_json", "convert_currency", "assess_coverage", "validate_claim"],
        failure="validate_claim",
    ),
    Case(
        id="intake-screening-namesake",
        task={"doc_id": "DOC-7001"},
        fault="screen_first_namesake",
        fault_kind="wrong_entity_subagent",
        description="Two customers are called Anna Berg; the screening sub-agent's model takes the first without "
        "comparing dates of birth and returns TC-1001, whose policy is TRV-88120. The validation refuses a claimant "
        "who does not hold the policy on the form.",
        root="pick_match",
        evidence="TC-1001",
        path=["pick_match", "screen_claimant", "validate_claim"],
        failure="validate_claim",
    ),
    Case(
        id="intake-screening-namesake-b",
        task={"doc_id": "DOC-7003"},
        fault="screen_first_namesake",
        fault_kind="wrong_entity_subagent",
        description="For the older Kofi Mensah (born 1962) the screening model returns the first namesake, TC-3112, "
        "and the validation rejects the claimant-policy pair.",
        root="pick_match",
        evidence="TC-3112",
        path=["pick_match", "screen_claimant", "validate_claim"],
        failure="validate_claim",
    ),
]
