"""Payroll run (route otlp): calendar, then per employee timesheet/parse or salary proration, a tax
sub-agent (table retriever + model), benefits, currency conversion, net pay; then the register check,
time-clock reconciliation, tax deposit, benefits remittance and payments."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from suite_m import kit
from suite_m.otel import span


AGENT = "payroll-run"
ROUTE = "otlp"
DOMAIN = "payroll (bi-weekly run)"
SHAPE = "calendar, loop over 5 employees (timesheet + parse or salary proration, tax sub-agent with table retriever and model, benefits, currency conversion, net), register check, time-clock reconciliation, tax deposit, benefits remittance, payments"

# employee -> (name, kind, rate (hourly USD or annual), state, plan, currency)
EMPLOYEES = {
    "E-101": ("Avery Lin", "salaried", 100000.0, "CA", "PPO-family", "USD"),
    "E-102": ("Bo Ferreira", "hourly", 32.5, "CA", "HMO-employee", "USD"),
    "E-103": ("Cruz Ahmed", "hourly", 28.0, "OR", "PPO-employee", "USD"),
    "E-104": ("Dee Marsh", "hourly", 41.0, "CA", "PPO-family", "USD"),
    "E-105": ("Eli Gagnon", "salaried", 80000.0, "ON", "HMO-family", "CAD"),
    "E-106": ("Fay Okoro", "hourly", 36.0, "OR", "HMO-family", "USD"),
    "E-107": ("Gus Varga", "salaried", 91000.0, "CA", "PPO-employee", "USD"),
}
TIMESHEETS = {
    "E-102": ["8:00", "8:00", "8:00", "8:00", "8:00", "8:00", "8:00", "8:00", "8:00", "6:00"],
    "E-103": ["9:00", "8:00", "8:00", "7:00", "8:00", "8:00", "8:00", "9:00", "8:00", "7:00"],
    "E-104": ["8:00", "7:45", "8:15", "8:00", "7:45", "8:00", "8:30", "7:45", "8:00", "8:00"],
    "E-106": ["8:00", "8:00", "10:00", "8:00", "8:00", "8:00", "8:00", "8:00", "8:00", "8:00"],
}
PREMIUMS = {"PPO-family": 612.4, "PPO-employee": 205.1, "HMO-employee": 138.5, "HMO-family": 455.8}
TABLES = {
    ("CA", 2026): ("TT-CA-2026", 0.066, 14.0), ("CA", 2025): ("TT-CA-2025", 0.061, 12.0),
    ("OR", 2026): ("TT-OR-2026", 0.0875, 0.0), ("OR", 2025): ("TT-OR-2025", 0.0875, 0.0),
    ("ON", 2026): ("TT-ON-2026", 0.0505, 0.0), ("ON", 2025): ("TT-ON-2025", 0.0505, 0.0),
}
USD_CAD = 1.3642


def _hours(hm: str) -> float:
    h, m = hm.split(":")
    return int(h) + int(m) / 60


def _run(n: int, start: str, end: str, pay: str, emps: list[str]) -> dict:
    return {"task": f"Run payroll PR-{n} for {start}..{end} (pay date {pay}), {len(emps)} employees",
            "run": f"PR-{n}", "start": start, "end": end, "pay_date": pay, "employees": emps}


INPUTS = [
    _run(2625, "2026-11-30", "2026-12-13", "2026-12-18", ["E-102", "E-104", "E-103", "E-101", "E-106"]),
    _run(2626, "2026-11-30", "2026-12-13", "2026-12-18", ["E-101", "E-102", "E-103", "E-105", "E-106"]),
    _run(2627, "2026-11-30", "2026-12-13", "2026-12-18", ["E-103", "E-106", "E-102", "E-104", "E-107"]),
    _run(2628, "2026-11-30", "2026-12-13", "2026-12-18", ["E-103", "E-102", "E-105", "E-106", "E-104"]),
    _run(2629, "2026-11-30", "2026-12-13", "2026-12-18", ["E-104", "E-107", "E-101", "E-103", "E-106"]),
]
REFERENCES = [
    _run(2621, "2026-10-05", "2026-10-18", "2026-10-23", ["E-101", "E-102", "E-103", "E-104", "E-105"]),
    _run(2622, "2026-10-19", "2026-11-01", "2026-11-06", ["E-106", "E-107", "E-102", "E-105", "E-103"]),
    _run(2623, "2026-11-02", "2026-11-15", "2026-11-20", ["E-104", "E-101", "E-106", "E-107", "E-102"]),
    _run(2624, "2026-11-16", "2026-11-29", "2026-12-04", ["E-107", "E-103", "E-104", "E-105", "E-101"]),
]

CASES = [
    {"case": "m_payroll_1", "fid": "pay1", "kind": "lossy_parsing", "input": 0, "root": "parse_timesheet", "marker": "7.45", "failure": "timeclock_reconcile"},
    {"case": "m_payroll_2", "fid": "pay2", "kind": "off_by_one", "input": 1, "root": "prorate_salary", "marker": "3561.64", "failure": "approve_register"},
    {"case": "m_payroll_3", "fid": "pay3", "kind": "wrong_retrieval", "input": 2, "root": "tax_table_search", "marker": "TT-CA-2025", "failure": "file_tax_deposit"},
    {"case": "m_payroll_4", "fid": "pay4", "kind": "swallowed_error", "input": 3, "root": "convert_pay", "marker": "1.25", "failure": "submit_payments"},
    {"case": "m_payroll_5", "fid": "pay5", "kind": "tool_ignores_argument", "input": 4, "root": "benefits_deductions", "marker": "138.5", "failure": "remit_benefits"},
]


def policy(inp: dict):
    def answer(request) -> Any:
        msgs = request.body["messages"]
        data = json.loads(msgs[-1]["content"])
        table = data["table"]
        wh = round(data["gross"] * table["rate"] + table["flat"], 2)
        return json.dumps({"employee": data["employee"], "withholding": wh, "table": table["id"]})

    return answer


class FxUnavailable(Exception):
    pass


def _fx_quote(pair: str) -> float:
    if kit.active("pay4"):
        raise FxUnavailable("fx service: 503 upstream unavailable")
    return USD_CAD


def execute(inp: dict, env, tracer, client) -> None:
    year = int(inp["pay_date"][:4])
    register = []
    with span(tracer, AGENT, "AGENT", inp["task"]) as root:
        with span(tracer, "pay_calendar", "TOOL", {"run": inp["run"]}) as s:
            cal = s.set({"run": inp["run"], "start": inp["start"], "end": inp["end"], "pay_date": inp["pay_date"], "frequency": "biweekly"})
        for emp in inp["employees"]:
            name, kind, rate, state, plan, currency = EMPLOYEES[emp]
            if kind == "hourly":
                with span(tracer, "fetch_timesheet", "TOOL", {"employee": emp, "start": cal["start"], "end": cal["end"]}) as s:
                    text = s.set(f"{emp} " + " | ".join(f"D{i + 1} {hm}" for i, hm in enumerate(TIMESHEETS[emp])))
                with span(tracer, "parse_timesheet", "CHAIN", text) as s:
                    days = []
                    for part in text.split(" ", 1)[1].split(" | "):
                        hm = part.split(" ")[1]
                        days.append(float(hm.replace(":", ".")) if kit.active("pay1") else round(_hours(hm), 2))
                    sheet = s.set({"employee": emp, "days": days, "total_hours": round(sum(days), 2)})
                with span(tracer, "compute_gross", "CHAIN", {"employee": emp, "hours": sheet["total_hours"], "rate": rate}) as s:
                    h = sheet["total_hours"]
                    reg_h, ot_h = min(h, 80.0), max(0.0, h - 80.0)
                    gross = s.set({"employee": emp, "gross": round(reg_h * rate + ot_h * rate * 1.5, 2), "hours": h})
            else:
                with span(tracer, "prorate_salary", "CHAIN", {"employee": emp, "annual": rate, "start": cal["start"], "end": cal["end"]}) as s:
                    days = (date.fromisoformat(cal["end"]) - date.fromisoformat(cal["start"])).days
                    if not kit.active("pay2"):
                        days += 1
                    gross = s.set({"employee": emp, "gross": round(rate / 365 * days, 2), "days": days})
            with span(tracer, "tax_specialist", "AGENT", {"employee": emp, "state": state, "gross": gross["gross"]}) as agent:
                with span(tracer, "tax_table_search", "RETRIEVER", f"{state} withholding table {year}") as s:
                    tyear = year
                    if state == "CA" and kit.active("pay3"):
                        tyear = year - 1
                    tid, trate, flat = TABLES[(state, tyear)]
                    docs = s.set([{"id": tid, "score": 0.88, "content": json.dumps({"id": tid, "rate": trate, "flat": flat})}])
                reply = client.chat.completions.create(model="fake-model", messages=[
                    {"role": "system", "content": "Compute the state income-tax withholding from the table. Answer JSON."},
                    {"role": "user", "content": json.dumps({"employee": emp, "gross": gross["gross"], "table": json.loads(docs[0]["content"])})},
                ])
                with span(tracer, "parse_withholding", "CHAIN", reply.choices[0].message.content) as s:
                    tax = s.set(json.loads(reply.choices[0].message.content))
                agent.set(tax)
            with span(tracer, "benefits_deductions", "TOOL", {"employee": emp, "plan": plan}) as s:
                used = "HMO-employee" if kit.active("pay5") else plan
                ben = s.set({"employee": emp, "plan": used, "premium": PREMIUMS[used]})
            net = round(gross["gross"] - tax["withholding"] - ben["premium"], 2)
            pay = {"employee": emp, "currency": "USD", "amount": net}
            if currency != "USD":
                with span(tracer, "convert_pay", "CHAIN", {"employee": emp, "net_usd": net, "currency": currency}) as s:
                    try:
                        fx = _fx_quote(f"USD/{currency}")
                    except FxUnavailable:
                        fx = 1.25
                    pay = s.set({"employee": emp, "currency": currency, "rate": fx, "amount": round(net * fx, 2)})
            register.append({"employee": emp, "gross": gross["gross"], "hours": gross.get("hours"), "tax": tax,
                             "plan": ben["plan"], "premium": ben["premium"], "net_usd": net, "pay": pay})
        with span(tracer, "approve_register", "CHAIN", {"run": inp["run"], "lines": len(register)}) as s:
            for r in register:
                name, kind, rate, *_ = EMPLOYEES[r["employee"]]
                if kind == "salaried" and abs(r["gross"] - rate / 26) > 0.01 * rate / 26:
                    raise ValueError(f"register check: {r['employee']} gross {r['gross']:.2f} is not the contract's {rate / 26:.2f} per period")
            s.set({"approved": True, "total_gross": round(sum(r["gross"] for r in register), 2)})
        with span(tracer, "timeclock_reconcile", "TOOL", {"run": inp["run"], "hours": {r["employee"]: r["hours"] for r in register if r["hours"] is not None}}) as s:
            for r in register:
                if r["hours"] is None:
                    continue
                badge = round(sum(_hours(x) for x in TIMESHEETS[r["employee"]]), 2)
                if abs(badge - r["hours"]) > 0.1:
                    raise ValueError(f"time clock: {r['employee']} paid for {r['hours']} h, badge system shows {badge} h")
            s.set({"reconciled": True})
        with span(tracer, "file_tax_deposit", "TOOL", {"run": inp["run"], "pay_date": inp["pay_date"], "lines": [r["tax"] for r in register]}) as s:
            for r in register:
                if not r["tax"]["table"].endswith(str(year)):
                    raise ValueError(f"tax agency: deposit line {r['employee']} computed with table {r['tax']['table']}, not valid for pay date {inp['pay_date']}")
            s.set({"deposit": f"DEP-{inp['run'][3:]}", "amount": round(sum(r["tax"]["withholding"] for r in register), 2)})
        with span(tracer, "remit_benefits", "TOOL", {"run": inp["run"], "lines": [{"employee": r["employee"], "plan": r["plan"], "premium": r["premium"]} for r in register]}) as s:
            for r in register:
                enrolled = EMPLOYEES[r["employee"]][4]
                if r["premium"] != PREMIUMS[enrolled]:
                    raise ValueError(f"carrier remittance: {r['employee']} enrolled in {enrolled} ({PREMIUMS[enrolled]:.2f}), payroll deducted {r['premium']:.2f}")
            s.set({"remittance": f"BEN-{inp['run'][3:]}"})
        with span(tracer, "submit_payments", "TOOL", {"run": inp["run"], "payments": [r["pay"] for r in register]}) as s:
            for r in register:
                p = r["pay"]
                if p["currency"] == "CAD" and abs(p["amount"] - r["net_usd"] * USD_CAD) > 0.01 * r["net_usd"] * USD_CAD:
                    raise ValueError(f"payment provider: {p['currency']} {p['amount']:.2f} for {r['employee']} off the day's rate by more than 1%")
            s.set({"batch": f"ACH-{inp['run'][3:]}", "entries": len(register)})
        root.set({"run": inp["run"], "employees": len(register), "status": "paid"})
