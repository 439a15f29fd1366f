"""pension-estimator: a public pension fund's benefit estimate desk (sdk route).

The model plans the estimate, the agent reads the member record, loops over every service year
(payroll feed, then parser), writes the service history to run.state, adds purchased service,
averages the highest three salaries, retrieves the actuarial reduction table, computes the benefit,
has the model explain it, checks it and issues the statement.
"""
from __future__ import annotations

import json

from openai import OpenAI

import trajdebug
from common import llm_step, last_user, system_text

NAME = "pension-estimator"
ROUTE = "sdk"
DOMAIN = "public pension fund: retirement benefit estimates"
SHAPE = "plan (llm) -> parse plan -> member tool -> loop over service years (payroll tool + parser) -> state write -> purchased service tool -> average -> actuarial table retrieval -> compute -> explain (llm) -> final check -> statement tool"
SWITCH = None


def _years(first, last, base, raise_pct, part_time=()):
    out, pay = [], base
    for y in range(first, last + 1):
        hours = 1040 if y in part_time else 2080
        out.append({"year": y, "hours": hours, "gross": round(pay * hours / 2080, 2)})
        pay = round(pay * (1 + raise_pct), 2)
    return out


MEMBERS = {
    "M-10442": {"name": "Dana Whitlock", "born": 1964, "years": _years(2014, 2026, 58200, 0.028), "purchased": 1.5},
    "M-20817": {"name": "Luis Ferreira", "born": 1965, "years": _years(2016, 2026, 61900, 0.025, (2019,)), "purchased": 0.0},
    "M-30125": {"name": "Grace Obi", "born": 1962, "years": _years(2012, 2026, 49800, 0.031), "purchased": 0.0},
    "M-41230": {"name": "Tomasz Wren", "born": 1966, "years": _years(2018, 2026, 72400, 0.022), "purchased": 2.0},
    "M-55061": {"name": "Irene Castell", "born": 1963, "years": _years(2013, 2026, 54300, 0.027, (2016, 2017)), "purchased": 0.0},
}
for _m in MEMBERS.values():
    _m["statement_credit"] = round(sum(min(y["hours"] / 2080, 1.0) for y in _m["years"]) + _m["purchased"], 2)

INPUTS = [
    {"task": "estimate for M-10442 retiring 2027-03-01, single life", "member": "M-10442", "retire": "2027-03-01"},
    {"task": "estimate for M-20817 retiring 2027-07-01, single life", "member": "M-20817", "retire": "2027-07-01"},
    {"task": "estimate for M-30125 retiring 2027-01-01, single life", "member": "M-30125", "retire": "2027-01-01"},
    {"task": "estimate for M-41230 retiring 2028-06-01, single life", "member": "M-41230", "retire": "2028-06-01"},
    {"task": "estimate for M-55061 retiring 2027-09-01, single life", "member": "M-55061", "retire": "2027-09-01"},
]

TABLES = {
    "2026-01": {"in_force_from": "2025-07-01", "factors": {60: 0.86, 61: 0.90, 62: 0.94, 63: 0.97, 64: 0.99, 65: 1.0}},
    "2024-01": {"in_force_from": "2024-01-01", "factors": {60: 0.84, 61: 0.88, 62: 0.93, 63: 0.96, 64: 0.99, 65: 1.0}},
}
MONTHLY_CAP = 9850.0


# ------------------------------------------------------------------ the model's side
def brain(request):
    system, user = system_text(request), last_user(request)
    if system.startswith("Plan"):
        plan = ["member_record", "service_history", "purchased_service", "salary_average", "benefit_factor",
                "compute_benefit"]
        if SWITCH == "B3":
            plan = ["member_record", "service_history", "salary_average", "benefit_factor", "compute_benefit"]
        return json.dumps({"plan": plan})
    if system.startswith("Explain"):
        p = json.loads(user)
        return (f"{p['name']} has {p['credit']} years of credited service and a final average salary of "
                f"${p['fas_monthly']:,.2f} a month. Retiring at {p['age']}, the reduction factor is {p['factor']}, "
                f"so the estimated single-life benefit is ${p['monthly']:,.2f} a month.")
    return "Please send a member id."


# ------------------------------------------------------------------ steps
@trajdebug.step(kind="input")
def receive_request(member: str, retire: str, option: str) -> dict:
    return {"member": member, "retire": retire, "option": option}


@trajdebug.step(kind="parse")
def parse_plan(content: str) -> list:
    return list(json.loads(content)["plan"])


@trajdebug.step(kind="tool")
def fetch_member(member_id: str) -> dict:
    m = MEMBERS[member_id]
    years = [y["year"] for y in m["years"]]
    page = 10 if SWITCH == "B2" else 50
    return {"member_id": member_id, "name": m["name"], "born": m["born"], "status": "active",
            "service_years": years[:page], "next_page": "p2" if len(years) > page else None,
            "statement_credit": m["statement_credit"]}


def _payroll_gateway(member_id, year):
    if SWITCH == "B5" and year == 2021:
        raise ConnectionError("payroll archive gateway did not answer within 5 s")
    rec = next(y for y in MEMBERS[member_id]["years"] if y["year"] == year)
    if year >= 2025:  # the new payroll system reports cents
        return {"year": year, "hours": rec["hours"], "amount": int(round(rec["gross"] * 100)), "unit": "cents"}
    return {"year": year, "hours": rec["hours"], "amount": rec["gross"], "unit": "usd"}


@trajdebug.step(kind="tool")
def fetch_payroll(member_id: str, year: int) -> dict:
    try:
        return _payroll_gateway(member_id, year)
    except ConnectionError:
        return {"year": year, "hours": 0, "amount": 0, "unit": "usd"}


@trajdebug.step(kind="parse")
def parse_payroll(record: dict) -> dict:
    amount = float(record["amount"])
    if record["unit"] == "cents" and SWITCH != "B1":
        amount = amount / 100
    return {"year": record["year"], "hours": record["hours"], "gross": round(amount, 2)}


@trajdebug.step(kind="state")
def record_service(rows: list) -> dict:
    credit = round(sum(min(r["hours"] / 2080, 1.0) for r in rows), 2)
    history = {"years": [r["year"] for r in rows], "credit": credit}
    trajdebug.current_run().state["service"] = history
    return history


@trajdebug.step(kind="tool")
def purchased_service(member_id: str) -> dict:
    return {"member_id": member_id, "years": MEMBERS[member_id]["purchased"]}


@trajdebug.step(kind="other")
def salary_average(rows: list) -> dict:
    full = sorted((r["gross"] for r in rows), reverse=True)[:3]
    return {"fas_annual": round(sum(full) / 3, 2), "fas_monthly": round(sum(full) / 36, 2)}


@trajdebug.step(kind="retrieval")
def benefit_factor(age: int, retire: str) -> dict:
    tables = sorted(TABLES.items(), key=lambda kv: kv[1]["in_force_from"], reverse=True)
    if SWITCH == "B4":
        tables = tables[::-1]  # the local copy of the tables, last synced before the 2026 valuation
    version, table = next((v, t) for v, t in tables if t["in_force_from"] <= retire)
    return {"table": version, "age": age, "factor": table["factors"][min(max(age, 60), 65)]}


@trajdebug.step(kind="other")
def compute_benefit(credit: float, fas_monthly: float, factor: float) -> dict:
    return {"monthly": round(0.02 * credit * fas_monthly * factor, 2), "multiplier": 0.02}


@trajdebug.step(kind="condition")
def final_check(member: dict, rows: list, credit: float, benefit: dict) -> dict:
    if benefit["monthly"] > MONTHLY_CAP:
        raise ValueError(f"estimated benefit ${benefit['monthly']:,.2f} a month exceeds the statutory cap "
                         f"${MONTHLY_CAP:,.2f}")
    for r in rows:
        if r["hours"] == 0 and member["status"] == "active":
            raise ValueError(f"payroll year {r['year']} shows 0 hours while the member was active all year")
    if abs(credit - member["statement_credit"]) > 0.01:
        raise ValueError(f"credited service {credit} years differs from {member['statement_credit']} years on the "
                         f"2025 annual statement")
    return {"ok": True}


@trajdebug.step(kind="tool")
def issue_statement(member_id: str, benefit: dict, factor: dict, retire: str) -> dict:
    in_force = max((t for t in TABLES.values() if t["in_force_from"] <= retire), key=lambda t: t["in_force_from"])
    if TABLES[factor["table"]] is not in_force:
        raise RuntimeError(f"statement refused: actuarial table {factor['table']} is not in force for retirement "
                           f"on {retire} (table in force since {in_force['in_force_from']})")
    return {"statement": f"EST-{member_id}-{retire}", "monthly": benefit["monthly"]}


def execute(inp, server, path):
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with trajdebug.run(NAME, path=path, task=inp["task"]):
            req = receive_request(inp["member"], inp["retire"], "single life")
            ans = llm_step("plan_estimate", client, server.model, [
                {"role": "system", "content": "Plan the benefit estimate: answer JSON {plan: [step, ...]}."},
                {"role": "user", "content": json.dumps(req)}])
            plan = parse_plan(ans["content"])
            member = fetch_member(req["member"])
            rows = []
            for year in member["service_years"]:
                rows.append(parse_payroll(fetch_payroll(req["member"], year)))
            history = record_service(rows)
            credit = history["credit"]
            if "purchased_service" in plan:
                credit = round(credit + purchased_service(req["member"])["years"], 2)
            fas = salary_average(rows)
            age = int(req["retire"][:4]) - member["born"]
            factor = benefit_factor(age, req["retire"])
            benefit = compute_benefit(credit, fas["fas_monthly"], factor["factor"])
            llm_step("explain_estimate", client, server.model, [
                {"role": "system", "content": "Explain the estimate to the member in two sentences."},
                {"role": "user", "content": json.dumps({"name": member["name"], "credit": credit, "age": age,
                                                        "fas_monthly": fas["fas_monthly"], "factor": factor["factor"],
                                                        "monthly": benefit["monthly"]})}])
            final_check(member, rows, credit, benefit)
            issue_statement(req["member"], benefit, factor, req["retire"])
    except (ValueError, RuntimeError):
        pass


CASES = [
    {"id": "zc61-pension-1", "input": 0, "switch": "B1", "fault_kind": "unit_error",
     "root": {"name": "parse_payroll", "occurrence": 12, "kind": "parse"},
     "failure": {"name": "final_check", "occurrence": 1},
     "description": "The payroll parser takes the new payroll system's amounts in cents as dollars from 2025 on, so the final average salary and the benefit come out a hundred times too high."},
    {"id": "zc61-pension-2", "input": 2, "switch": "B2", "fault_kind": "truncated_result",
     "root": {"name": "fetch_member", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "final_check", "occurrence": 1},
     "description": "The member service returns only the first page of 10 service years (with a next page the agent never reads), so 15 years of service are credited as 10."},
    {"id": "zc61-pension-3", "input": 3, "switch": "B3", "fault_kind": "plan_error",
     "root": {"name": "plan_estimate", "occurrence": 1, "kind": "llm"},
     "failure": {"name": "final_check", "occurrence": 1},
     "description": "The model's plan leaves out the purchased-service step, so the member's 2.0 bought-back years are never added to the credit."},
    {"id": "zc61-pension-4", "input": 1, "switch": "B4", "fault_kind": "stale_data",
     "root": {"name": "benefit_factor", "occurrence": 1, "kind": "retrieval"},
     "failure": {"name": "issue_statement", "occurrence": 1},
     "description": "The actuarial table lookup reads a local copy last synced before the 2026 valuation and returns the 2024-01 reduction factors."},
    {"id": "zc61-pension-5", "input": 4, "switch": "B5", "fault_kind": "swallowed_error",
     "root": {"name": "fetch_payroll", "occurrence": 9, "kind": "tool"},
     "failure": {"name": "final_check", "occurrence": 1},
     "description": "The payroll tool catches a gateway timeout for 2021 and answers an empty year with 0 hours, which the agent carries on with."},
]
