"""Bottle deposit return scheme: a retailer's monthly deposit refund claim from its reverse vending machines (OTLP)."""

from __future__ import annotations

import calendar
import json

from . import kit
from .common import ApiError, Case, Otlp

AGENT, ROUTE, DOMAIN = "bottle_deposit", "otlp", "bottle deposit return scheme"
RUN_NAME, MODEL = "deposit-return-claims", "claims-clerk-8"
SHAPE = "claim plan (llm) -> per machine: log (tool), period rows, parse -> per material tally -> audit sub-agent (tool, llm) -> rates (retriever) -> compose claim (llm) -> save draft -> submit claim"

MATERIALS = ["PET<=0.5L", "PET>0.5L", "CAN", "GLASS"]
RATES = {"table": "DRS-2027", "effective": "2027-02-01", "EUR": {"PET<=0.5L": 0.15, "PET>0.5L": 0.25, "CAN": 0.15, "GLASS": 0.20}}
OLD_RATES = {"table": "DRS-2026", "effective": "2026-02-01", "EUR": {"PET<=0.5L": 0.10, "PET>0.5L": 0.25, "CAN": 0.10, "GLASS": 0.20}}
NEW_FIRMWARE = {"RVM-2", "RVM-A2", "RVM-C1"}

INPUTS = {
    "fernhill": {"retailer": "RT-0088 Fernhill Co-op", "month": "2027-04", "machines": ["RVM-1", "RVM-2", "RVM-3"]},
    "harbour": {"retailer": "RT-0131 Harbour Street Market", "month": "2027-05", "machines": ["RVM-A1", "RVM-A2", "RVM-A3"]},
    "quayside": {"retailer": "RT-0102 Quayside Stores", "month": "2027-03", "machines": ["RVM-B1", "RVM-B2"]},
    "millbrook": {"retailer": "RT-0147 Millbrook Grocers", "month": "2027-06", "machines": ["RVM-C1", "RVM-C2", "RVM-C3"]},
    "station": {"retailer": "RT-0159 Station Road Spar", "month": "2027-04", "machines": ["RVM-D1", "RVM-D2"]},
    "oakfield": {"retailer": "RT-0176 Oakfield Farm Shop", "month": "2027-05", "machines": ["RVM-E1", "RVM-A2"]},
}
REFS = ["quayside", "millbrook", "station", "oakfield"]

CASES = [
    Case("zx_bottle_1", "bottle.draft_rotate", "bad_memory_write", "fernhill", ("save_claim_draft", 1, "other"),
         ("submit_claim", 1), "save_claim_draft stores each machine's total under the next machine's key."),
    Case("zx_bottle_2", "bottle.period_end", "off_by_one", "harbour", ("select_period_rows", 1, "other"),
         ("submit_claim", 1), "select_period_rows compares dates with < against the month's last day and drops its rows."),
    Case("zx_bottle_3", "bottle.rate_table", "stale_data", "fernhill", ("deposit_rates", 1, "retrieval"),
         ("submit_claim", 1), "The rate search returns the 2026 deposit table, superseded on 2027-02-01."),
    Case("zx_bottle_4", "bottle.log_month", "wrong_tool_args", "harbour", ("fetch_rvm_log", 3, "tool"),
         ("submit_claim", 1), "The third machine's log is requested for the previous month."),
    Case("zx_bottle_5", "bottle.count_parse", "lossy_parsing", "fernhill", ("parse_rvm_log", 2, "other"),
         ("submit_claim", 1), "parse_rvm_log silently drops count fields written with a thousands separator by the newer firmware."),
]


def _days(month: str) -> int:
    y, m = map(int, month.split("-"))
    return calendar.monthrange(y, m)[1]


def _count(machine: str, month: str, day: int, mi: int) -> int:
    h = sum(map(ord, machine)) + int(month[-2:]) * 11
    return 600 + (day * 37 + mi * 113 + h * 53) % 700


def _log(machine: str, month: str) -> str:
    lines = ["date;machine;material;count"]
    for d in range(1, _days(month) + 1):
        for mi, mat in enumerate(MATERIALS):
            c = _count(machine, month, d, mi)
            lines.append(f"{month}-{d:02d};{machine};{mat};{c:,}" if machine in NEW_FIRMWARE else f"{month}-{d:02d};{machine};{mat};{c}")
    return "\n".join(lines)


def _telemetry(machine: str, month: str) -> dict:
    return {mat: sum(_count(machine, month, d, mi) for d in range(1, _days(month) + 1)) for mi, mat in enumerate(MATERIALS)}


def policy(messages: list[dict]) -> str:
    system, user = messages[0]["content"], messages[-1]["content"]
    if system.startswith("Plan"):
        req = json.loads(user.split("REQUEST:", 1)[1])
        return json.dumps({"period": req["month"], "machines": req["machines"], "audit_sample": req["machines"][0]})
    if system.startswith("Review"):
        return "Audit sample consistent with the machine log; no anomaly to report."
    data = json.loads(user.split("DATA:", 1)[1])
    return json.dumps({"retailer": data["retailer"], "period": data["period"], "rate_table": data["rates"]["table"],
                       "machines": data["machines"], "materials": data["materials"],
                       "cover_note": f"Deposit refund claim for {data['period']}, {len(data['machines'])} machines."})


def record(key: str) -> dict:
    inp = INPUTS[key]
    o = Otlp("deposit-claims")
    memory: dict = {}
    try:
        with o.span(RUN_NAME, "AGENT", inp, agent__name=RUN_NAME) as root:
            plan = json.loads(o.llm("plan_claim", MODEL, [
                {"role": "system", "content": "Plan the monthly deposit claim: period, machines, audit sample. JSON."},
                {"role": "user", "content": f"REQUEST: {json.dumps(inp)}"}]))
            per_machine, totals = {}, {m: 0 for m in MATERIALS}
            for i, machine in enumerate(plan["machines"]):
                month = plan["period"]
                if kit.active("bottle.log_month") and i == 2:
                    y, m = map(int, month.split("-"))
                    month = f"{y}-{m - 1:02d}"
                with o.span("fetch_rvm_log", "TOOL", {"machine": machine, "month": month}, tool__name="fetch_rvm_log") as s:
                    log = {"machine": machine, "period": month, "csv": _log(machine, month)}
                    s["out"] = log
                with o.span("select_period_rows", "CHAIN", {"machine": machine, "period": log["period"]}) as s:
                    first, last = f"{log['period']}-01", f"{log['period']}-{_days(log['period']):02d}"
                    rows = [r for r in log["csv"].splitlines()[1:]
                            if first <= r[:10] and (r[:10] < last if kit.active("bottle.period_end") else r[:10] <= last)]
                    s["out"] = {"rows": len(rows), "from": first, "to": rows[-1][:10]}
                with o.span("parse_rvm_log", "CHAIN", {"machine": machine, "rows": len(rows)}) as s:
                    counts = {m: 0 for m in MATERIALS}
                    for r in rows:
                        _d, _m, mat, c = r.split(";")
                        if kit.active("bottle.count_parse"):
                            counts[mat] += int(c) if c.isdigit() else 0
                        else:
                            counts[mat] += int(c.replace(",", ""))
                    parsed = {"machine": machine, "period": log["period"], "counts": counts, "containers": sum(counts.values())}
                    s["out"] = parsed
                per_machine[machine] = parsed
            for mat in MATERIALS:
                with o.span("tally_material", "CHAIN", {"material": mat}) as s:
                    totals[mat] = sum(p["counts"][mat] for p in per_machine.values())
                    s["out"] = {"material": mat, "count": totals[mat]}
            with o.span("audit_check", "AGENT", {"machine": plan["audit_sample"]}, agent__name="audit_check"):
                with o.span("fetch_audit_sample", "TOOL", {"machine": plan["audit_sample"]}, tool__name="fetch_audit_sample") as s:
                    sample = {"machine": plan["audit_sample"], "bag": "BG-" + plan["audit_sample"][-2:], "counted": 412, "logged": 412}
                    s["out"] = sample
                o.llm("audit_review", MODEL, [{"role": "system", "content": "Review the audit sample against the log."},
                                              {"role": "user", "content": json.dumps(sample)}])
            with o.span("deposit_rates", "RETRIEVER", {"query": f"deposit rates in force {plan['period']}"}) as s:
                rates = json.loads(json.dumps(OLD_RATES if kit.active("bottle.rate_table") else RATES))
                s["out"] = {"documents": [rates]}
            claim = json.loads(o.llm("compose_claim", MODEL, [
                {"role": "system", "content": "Compose the deposit refund claim as JSON."},
                {"role": "user", "content": "DATA: " + json.dumps({
                    "retailer": inp["retailer"], "period": plan["period"], "rates": rates, "materials": totals,
                    "machines": {m: {"containers": p["containers"], "period": p["period"]} for m, p in per_machine.items()}})}]))
            with o.span("save_claim_draft", "CHAIN", {"claim": claim}) as s:
                machines = dict(claim["machines"])
                if kit.active("bottle.draft_rotate"):
                    keys = list(machines)
                    vals = [machines[k]["containers"] for k in keys]
                    machines = {k: {**machines[k], "containers": vals[(j + 1) % len(keys)]} for j, k in enumerate(keys)}
                memory[inp["retailer"]] = {**claim, "machines": machines, "rates": rates["EUR"]}
                s["out"] = {"saved": inp["retailer"], "machines": machines}
            draft = memory[inp["retailer"]]
            with o.span("submit_claim", "TOOL", {"retailer": draft["retailer"], "period": draft["period"]}, tool__name="submit_claim") as s:
                amount = round(sum(draft["materials"][m] * draft["rates"][m] for m in MATERIALS), 2)
                for m, rec in draft["machines"].items():
                    if rec["period"] != draft["period"]:
                        raise ApiError(f"HTTP 422: log period {rec['period']} for {m} does not match claim period {draft['period']}")
                    tel = sum(_telemetry(m, draft["period"]).values())
                    if rec["containers"] != tel:
                        raise ApiError(f"HTTP 422: {m} claimed {rec['containers']:,} containers; scheme telemetry recorded {tel:,} "
                                       f"for {draft['period']}")
                due = round(sum(sum(_telemetry(m, draft["period"])[k] for m in draft["machines"]) * RATES["EUR"][k]
                                for k in MATERIALS), 2)
                if abs(amount - due) > 0.005:
                    raise ApiError(f"HTTP 422: claimed deposit refund {amount:,.2f} EUR does not match {due:,.2f} EUR at the "
                                   f"rates in force for {draft['period']}")
                s["out"] = {"claim": f"CL-{draft['retailer'][3:7]}-{draft['period']}", "amount_eur": amount, "status": "accepted"}
            root["out"] = s["out"]
    except ApiError:
        pass
    return o.take()
