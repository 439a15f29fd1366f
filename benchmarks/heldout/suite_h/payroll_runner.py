"""Monthly payroll (route: sdk): pay each employee of a team, fund the run, pay by bank file, file taxes.

Per employee: read the HR rate card, sum the month's timesheet, compute the gross, withhold tax (the
tax service is busy now and then: retried) and keep the payslip in the run's memory.  Then the
payroll is funded from the payslips, the bank file is built from memory and sent, the hours are
reconciled with the time clock and the tax return is filed.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import openai
from benchmarks.heldout.suite_h._common import Agent, Fault, active, last_user, record_sdk

import trajdebug


NAME = "payroll-runner"
TAX_RATES = {"A1": 0.18, "B2": 0.24, "C3": 0.31}

# eid -> (hourly rate, tax code, days worked in November 2026, hours a day)
STAFF: dict[str, tuple[float, str, tuple[int, ...], float]] = {
    "E-1401": (31.5, "B2", (2, 3, 4, 5, 6, 9, 10, 11, 12, 13, 16, 17, 18, 19, 20), 8.0),
    "E-1402": (27.0, "A1", (2, 3, 4, 9, 10, 11, 16, 17, 18, 23, 24, 25), 7.5),
    "E-1403": (44.0, "C3", (3, 4, 5, 6, 10, 11, 12, 13, 17, 18, 19, 20, 24, 25, 26, 27), 8.0),
    "E-1404": (29.5, "B2", (16, 17, 18, 19, 20, 23, 24, 25, 26, 27, 30), 8.0),
    "E-1405": (36.0, "B2", (2, 4, 6, 9, 11, 13, 16, 18, 20, 23, 25, 27), 6.0),
    "E-2401": (25.0, "A1", (2, 3, 4, 5, 6, 9, 10, 11), 8.0),
    "E-2402": (38.0, "C3", (12, 13, 16, 17, 18, 19, 20), 7.0),
    "E-2403": (33.0, "B2", (23, 24, 25, 26, 27, 30), 8.0),
    "E-3401": (41.0, "C3", (2, 9, 16, 23, 30), 9.0),
    "E-3402": (22.5, "A1", (3, 4, 5, 10, 11, 12, 17, 18, 19), 6.5),
    "E-4401": (30.0, "B2", (2, 3, 4, 5, 6, 9, 10, 11, 12, 13), 8.0),
    "E-4402": (35.5, "B2", (16, 17, 18, 19, 20, 23, 24), 7.5),
    "E-4403": (28.0, "A1", (24, 25, 26, 27), 8.0),
    "E-4404": (47.0, "C3", (2, 3, 4, 5, 6), 10.0),
    "E-5401": (26.5, "A1", (2, 5, 9, 12, 16, 19, 23, 26, 30), 8.0),
    "E-5402": (39.0, "C3", (3, 4, 10, 11, 17, 18, 24, 25), 8.0),
}
BUSY_ONCE = {"E-1404", "E-2402", "E-4403"}  # the tax service answers 503 to the first request for these


class TaxServiceBusy(RuntimeError):
    """The tax service answered 503."""


class BankRejected(RuntimeError):
    """The bank refused the payment file."""


class FilingRejected(RuntimeError):
    """A payroll authority refused a filing."""


@trajdebug.step(kind="tool")
def fetch_rates(eid: str) -> dict[str, Any]:
    rate, code, _, _ = STAFF[eid]
    if active("payroll-rate-card-v2") and eid == "E-1404":
        return {"employee": eid, "base_rate": rate, "tax_code": code}  # the HR API's v2 record
    return {"employee": eid, "hourly_rate": rate, "tax_code": code}


@trajdebug.step(kind="tool")
def load_timesheet(eid: str, month: str) -> list[dict[str, Any]]:
    _, _, days, hours = STAFF[eid]
    return [{"date": f"{month}-{d:02d}", "hours": hours} for d in days]


@trajdebug.step(kind="other")
def sum_hours(entries: list[dict[str, Any]], start: str, end: str) -> dict[str, Any]:
    first, last = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    by_day = {e["date"]: e["hours"] for e in entries}
    span = (last - first).days + (0 if active("payroll-month-days") else 1)  # both ends are in the period
    days = [(first + dt.timedelta(days=i)).isoformat() for i in range(span)]
    return {"hours": sum(by_day.get(d, 0.0) for d in days)}


@trajdebug.step(kind="other")
def compute_gross(eid: str, rates: dict[str, Any], hours: dict[str, Any]) -> dict[str, Any]:
    rate = float(rates.get("hourly_rate", 0.0))
    return {"employee": eid, "hours": hours["hours"], "gross": round(rate * hours["hours"], 2),
            "tax_code": rates["tax_code"]}


@trajdebug.step(kind="tool")
def withhold_tax(eid: str, gross: float, tax_code: str, attempt: int) -> dict[str, Any]:
    try:
        if eid in BUSY_ONCE and attempt == 1:
            raise TaxServiceBusy(f"tax service 503 for {eid}: try again")
    except TaxServiceBusy:
        if active("payroll-tax-busy") and eid == "E-1404":
            return {"employee": eid, "withholding": 0.0, "tax_code": tax_code}
        raise
    return {"employee": eid, "withholding": round(gross * TAX_RATES[tax_code], 2), "tax_code": tax_code}


@trajdebug.step(kind="state")
def remember_payslip(payslip: dict[str, Any]) -> dict[str, Any]:
    stored = dict(payslip)
    if active("payroll-memory-net") and payslip["employee"] == "E-1404":
        stored["net"] = payslip["gross"]
    memory = trajdebug.current_run().state
    memory["payslips"] = {**(memory.get("payslips") or {}), payslip["employee"]: stored}
    return stored


@trajdebug.step(kind="agent")
def pay_employee(eid: str, month: str) -> dict[str, Any]:
    rates = fetch_rates(eid)
    hours = sum_hours(load_timesheet(eid, month), f"{month}-01", f"{month}-30")
    gross = compute_gross(eid, rates, hours)
    code = "A1" if active("payroll-default-code") and eid == "E-1404" else gross["tax_code"]
    for attempt in (1, 2, 3):
        try:
            tax = withhold_tax(eid, gross["gross"], code, attempt)
            break
        except TaxServiceBusy:
            continue
    payslip = {**gross, "withholding": tax["withholding"], "withheld_code": tax["tax_code"],
               "net": round(gross["gross"] - tax["withholding"], 2)}
    remember_payslip(payslip)
    return payslip


def payroll_note(client: openai.OpenAI, month: str, payslips: list[dict[str, Any]]) -> str:
    messages = [{"role": "system", "content": "Write a one-line payroll summary for the finance approver."},
                {"role": "user", "content": f"Month {month}: {len(payslips)} payslips, net total "
                                            f"{sum(p['net'] for p in payslips):.2f} EUR."}]
    with trajdebug.step("summarize_payroll", kind="llm", input={"messages": messages}) as s:
        reply = client.chat.completions.create(model="fake-model", messages=messages)  # type: ignore[arg-type]
        text = reply.choices[0].message.content or ""
        s.output = {"role": "assistant", "content": text}
    return text


@trajdebug.step(kind="tool")
def approve_funding(month: str, payslips: list[dict[str, Any]], note: str) -> dict[str, Any]:
    return {"month": month, "approved_total": round(sum(p["net"] for p in payslips), 2), "note": note}


@trajdebug.step(kind="other")
def generate_bank_file(month: str) -> list[dict[str, Any]]:
    memory = trajdebug.current_run().state["payslips"]
    return [{"payee": eid, "amount": slip["net"], "reference": f"SAL {month}"} for eid, slip in memory.items()]


@trajdebug.step(kind="tool")
def submit_bank_file(transfers: list[dict[str, Any]], funding: dict[str, Any]) -> dict[str, Any]:
    for t in transfers:
        if t["amount"] <= 0:
            raise BankRejected(f"transfer to {t['payee']} has a non-positive amount {t['amount']:.2f}")
    total = round(sum(t["amount"] for t in transfers), 2)
    if abs(total - funding["approved_total"]) > 0.005:
        raise BankRejected(f"bank file total {total:.2f} does not match the approved funding "
                           f"{funding['approved_total']:.2f}")
    return {"accepted": len(transfers), "total": total}


@trajdebug.step(kind="tool")
def reconcile_hours(month: str, payslips: list[dict[str, Any]]) -> dict[str, Any]:
    for p in payslips:
        _, _, days, hours = STAFF[p["employee"]]
        clocked = len(days) * hours
        if abs(clocked - p["hours"]) > 0.01:
            raise FilingRejected(f"time clock shows {clocked:.1f} h for {p['employee']} in {month}, "
                                 f"payroll paid {p['hours']:.1f} h")
    return {"reconciled": len(payslips)}


@trajdebug.step(kind="tool")
def file_tax_return(month: str) -> dict[str, Any]:
    memory = trajdebug.current_run().state["payslips"]
    for eid, slip in memory.items():
        if slip.get("withheld_code", slip["tax_code"]) != STAFF[eid][1]:
            raise FilingRejected(f"{eid}: tax withheld under code {slip['withheld_code']}, the registered code is "
                                 f"{STAFF[eid][1]}")
        if slip["gross"] > 500 and slip["withholding"] <= 0:
            raise FilingRejected(f"{eid}: taxable gross {slip['gross']:.2f} filed with no withholding "
                                 f"under code {slip['tax_code']}")
    return {"month": month, "filed": len(memory)}


def run_payroll(server: Any, item: dict[str, Any]) -> None:
    client = openai.OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    payslips = [pay_employee(eid, item["month"]) for eid in item["staff"]]
    funding = approve_funding(item["month"], payslips, payroll_note(client, item["month"], payslips))
    submit_bank_file(generate_bank_file(item["month"]), funding)
    reconcile_hours(item["month"], payslips)
    file_tax_return(item["month"])


def policy(request: Any) -> str:
    prompt = last_user(request)
    return f"Payroll ready for approval. {prompt.split(':', 1)[1].strip()}"


def record(server: Any, item: dict[str, Any], path: Path) -> None:
    server.use(policy)
    record_sdk(NAME, path, f"run payroll {item['month']} for team {item['team']}", lambda: run_payroll(server, item))


AGENT = Agent(
    name=NAME,
    route="sdk",
    domain="payroll",
    record=record,
    failing={"team": "ops", "month": "2026-11", "staff": ["E-1401", "E-1402", "E-1403", "E-1405", "E-1404"]},
    references=(
        {"team": "support", "month": "2026-11", "staff": ["E-2401", "E-2402", "E-2403"]},
        {"team": "field", "month": "2026-11", "staff": ["E-3401", "E-3402"]},
        {"team": "lab", "month": "2026-11", "staff": ["E-4401", "E-4402", "E-4403", "E-4404"]},
        {"team": "studio", "month": "2026-11", "staff": ["E-5401", "E-5402"]},
    ),
    faults=(
        Fault("payroll-rate-card-v2", "format_drift", "fetch_rates", "base_rate", "submit_bank_file",
              "The HR rate card returns one employee's rate under a renamed field (base_rate), so the gross "
              "computation silently uses a rate of 0 and the bank refuses a zero transfer."),
        Fault("payroll-month-days", "off_by_one", "sum_hours", '"hours": 80.0', "reconcile_hours",
              "sum_hours counts the days of the month without its last day, dropping one employee's hours on "
              "the 30th; the time-clock reconciliation finds the gap."),
        Fault("payroll-tax-busy", "swallowed_error", "withhold_tax", '"withholding": 0.0', "file_tax_return",
              "withhold_tax swallows the tax service's 503 and returns no withholding instead of letting the "
              "caller retry; the tax return is refused."),
        Fault("payroll-memory-net", "bad_memory_write", "remember_payslip", '"net": 2596.0', "submit_bank_file",
              "remember_payslip stores one employee's gross as the net in memory, so the bank file built from "
              "memory does not match the approved funding."),
        Fault("payroll-default-code", "wrong_tool_args", "withhold_tax", '"employee": "E-1404", "tax_code": "A1"',
              "file_tax_return",
              "withhold_tax is called with the default tax code A1 instead of the employee's B2, so too little "
              "is withheld and the tax return is refused."),
    ),
)
