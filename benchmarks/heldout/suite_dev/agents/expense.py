"""Expense-report agent with a currency-conversion tool."""

from __future__ import annotations

import json

import trajdebug

from .common import llm_meta, mark_failure, mark_flow, mark_root, on


NAME = "expense-report"
SUMMARY = "Categorizes an employee's receipts, converts them to EUR and checks the reimbursement against finance's figure."
FAULTS = {
    "fx_inverted_usd": "the FX tool returns the EUR->USD rate when asked for USD->EUR (1.09 instead of 0.917)",
}


class ReimbursementMismatch(Exception):
    """The report's total differs from what finance will pay out."""


TRUE_RATES = {"USD": 0.917, "GBP": 1.182, "CHF": 1.046, "JPY": 0.00611, "SEK": 0.0872, "EUR": 1.0}

REPORTS = {
    "exp-0417": [
        {"merchant": "Lufthansa", "amount": 412.30, "currency": "EUR", "date": "2025-04-02"},
        {"merchant": "Marriott Boston", "amount": 689.00, "currency": "USD", "date": "2025-04-05"},
        {"merchant": "Uber", "amount": 38.40, "currency": "EUR", "date": "2025-04-01"},
    ],
    "exp-0422": [
        {"merchant": "British Airways", "amount": 233.10, "currency": "GBP", "date": "2025-04-10"},
        {"merchant": "Premier Inn", "amount": 154.00, "currency": "GBP", "date": "2025-04-11"},
        {"merchant": "Starbucks JFK", "amount": 17.85, "currency": "USD", "date": "2025-04-12"},
        {"merchant": "Hertz", "amount": 96.00, "currency": "EUR", "date": "2025-04-12"},
    ],
    "exp-0431": [
        {"merchant": "SBB", "amount": 88.00, "currency": "CHF", "date": "2025-05-06"},
        {"merchant": "Hilton Chicago", "amount": 1240.50, "currency": "USD", "date": "2025-05-07"},
    ],
    "exp-0440": [
        {"merchant": "TAP Air Portugal", "amount": 188.00, "currency": "EUR", "date": "2025-05-20"},
        {"merchant": "Hotel Bristol", "amount": 321.00, "currency": "EUR", "date": "2025-05-21"},
    ],
    "exp-0451": [
        {"merchant": "Eurostar", "amount": 145.00, "currency": "GBP", "date": "2025-06-02"},
        {"merchant": "Pret A Manger", "amount": 11.20, "currency": "GBP", "date": "2025-06-02"},
    ],
    "exp-0456": [
        {"merchant": "JR East", "amount": 14800, "currency": "JPY", "date": "2025-06-10"},
        {"merchant": "Park Hyatt Tokyo", "amount": 98000, "currency": "JPY", "date": "2025-06-11"},
        {"merchant": "Finnair", "amount": 702.00, "currency": "EUR", "date": "2025-06-09"},
    ],
    "exp-0463": [
        {"merchant": "Scandic", "amount": 1650.00, "currency": "SEK", "date": "2025-06-18"},
        {"merchant": "SAS", "amount": 2390.00, "currency": "SEK", "date": "2025-06-17"},
    ],
    "exp-0470": [
        {"merchant": "Swiss", "amount": 310.00, "currency": "CHF", "date": "2025-07-01"},
        {"merchant": "Hotel Schweizerhof", "amount": 540.00, "currency": "CHF", "date": "2025-07-02"},
        {"merchant": "Migros", "amount": 23.90, "currency": "CHF", "date": "2025-07-02"},
    ],
}
CATEGORY = {
    "Lufthansa": "travel",
    "Marriott Boston": "lodging",
    "Uber": "ground",
    "British Airways": "travel",
    "Premier Inn": "lodging",
    "Starbucks JFK": "meals",
    "Hertz": "ground",
    "SBB": "ground",
    "Hilton Chicago": "lodging",
    "TAP Air Portugal": "travel",
    "Hotel Bristol": "lodging",
    "Eurostar": "travel",
    "Pret A Manger": "meals",
    "JR East": "ground",
    "Park Hyatt Tokyo": "lodging",
    "Finnair": "travel",
    "Scandic": "lodging",
    "SAS": "travel",
    "Swiss": "travel",
    "Hotel Schweizerhof": "lodging",
    "Migros": "meals",
}


def finance_total(report_id: str) -> float:
    return round(sum(r["amount"] * TRUE_RATES[r["currency"]] for r in REPORTS[report_id]), 2)


FAILING = [
    {
        "fault": "fx_inverted_usd",
        "description": "Boston trip: the only USD rate lookup (first FX call, for the hotel) returns 1.09 instead of 0.917; the converted hotel line and the report total are too high; the reimbursement check fails.",
        "input": {
            "id": "exp-0417",
            "task": "File expense report exp-0417 (Boston client visit) for Ana Ribeiro.",
        },
    },
    {
        "fault": "fx_inverted_usd",
        "description": "London trip with one USD coffee: the third FX lookup inflates the coffee line; the total is off by about 3 EUR and the check fails.",
        "input": {
            "id": "exp-0422",
            "task": "Please process report exp-0422 (London workshop), employee Tom Hale.",
        },
    },
    {
        "fault": "fx_inverted_usd",
        "description": "Chicago hotel paid in USD: the second FX lookup is inverted; the lodging line is overstated and the reimbursement check fails.",
        "input": {
            "id": "exp-0431",
            "task": "Reimburse exp-0431, Zurich + Chicago roadshow, for Marta Silva.",
        },
    },
]

PASSING = [
    {"id": "exp-0440", "task": "Expense report exp-0440 (Vienna offsite) for Joao Pires, please."},
    {"id": "exp-0451", "task": "Process exp-0451 - London day trip, employee Sara Lim."},
    {"id": "exp-0456", "task": "File report exp-0456 for the Tokyo partner visit (Kenji Mori)."},
    {"id": "exp-0463", "task": "exp-0463 Stockholm conference, Ines Costa - please reimburse."},
    {"id": "exp-0470", "task": "Reimburse exp-0470 (Zurich customer meeting) for Paul Dubois."},
]


@trajdebug.step(kind="tool")
def load_receipts(report_id: str) -> list:
    return [dict(r, line=i + 1) for i, r in enumerate(REPORTS[report_id])]


@trajdebug.step(kind="llm")
def chat(prompt: str) -> str:
    """Scripted model: categorizes receipts, or writes the note to the approver."""
    llm_meta()
    if prompt.startswith("CATEGORIZE"):
        merchants = [line.split(" | ")[1] for line in prompt.splitlines()[1:] if " | " in line]
        return json.dumps({m: CATEGORY[m] for m in merchants})
    total = prompt.rsplit("TOTAL_EUR=", 1)[1].strip()
    return f"Hi, the attached report comes to {total} EUR; receipts are all itemized. Please approve."


@trajdebug.step(kind="parse")
def parse_categories(completion: str) -> dict:
    cats = json.loads(completion)
    return {k: v.lower() for k, v in cats.items()}


@trajdebug.step(kind="tool")
def get_fx_rate(base: str, quote: str, date: str) -> dict:
    rate = TRUE_RATES[base]
    if base == "USD" and on("fx_inverted_usd"):
        rate = round(1 / rate, 4)
        mark_root()
    return {"pair": f"{base}/{quote}", "rate": rate, "as_of": date, "provider": "ecb-mirror"}


@trajdebug.step(kind="other")
def convert_line(receipt: dict, fx: dict) -> dict:
    eur = round(receipt["amount"] * fx["rate"], 2)
    if fx["pair"].startswith("USD"):
        mark_flow()
    return {**receipt, "amount_eur": eur, "rate": fx["rate"]}


@trajdebug.step(kind="other")
def summarize_report(lines: list, categories: dict) -> dict:
    by_cat: dict = {}
    for ln in lines:
        cat = categories.get(ln["merchant"], "other")
        by_cat[cat] = round(by_cat.get(cat, 0.0) + ln["amount_eur"], 2)
    mark_flow()
    return {"lines": len(lines), "by_category": by_cat, "total_eur": round(sum(by_cat.values()), 2)}


@trajdebug.step(kind="tool")
def finance_payout(report_id: str) -> dict:
    return {"report_id": report_id, "approved_eur": finance_total(report_id)}


@trajdebug.step(kind="condition")
def check_reimbursement(summary: dict, payout: dict) -> bool:
    if abs(summary["total_eur"] - payout["approved_eur"]) > 0.5:
        mark_failure()
        raise ReimbursementMismatch(
            f"report totals {summary['total_eur']:,.2f} EUR but finance computes {payout['approved_eur']:,.2f} EUR "
            f"for {payout['report_id']}"
        )
    return True


def run_agent(inp: dict, run) -> str:
    receipts = load_receipts(inp["id"])
    prompt = "CATEGORIZE each receipt as travel, lodging, ground, meals or other.\n" + "\n".join(
        f"{r['line']} | {r['merchant']} | {r['amount']} {r['currency']}" for r in receipts
    )
    categories = parse_categories(chat(prompt))
    lines = []
    for r in receipts:
        if r["currency"] == "EUR":
            lines.append({**r, "amount_eur": r["amount"], "rate": 1.0})
        else:
            lines.append(convert_line(r, get_fx_rate(r["currency"], "EUR", r["date"])))
    summary = summarize_report(lines, categories)
    note = chat(
        f"Write a two-line note to the approver for {inp['id']}.\nTOTAL_EUR={summary['total_eur']:.2f}"
    )
    check_reimbursement(summary, finance_payout(inp["id"]))
    return note
