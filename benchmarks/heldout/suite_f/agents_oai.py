"""Agents built with the OpenAI Agents SDK, recorded with trajdebug's tracing processor."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from trajdebug.testing import Reply, tool_call

from .common import BRAINS, Agent, Case, Model, active


def _run(agent_factory: Any, name: str, task: str, text: str, path: Path) -> None:
    from agents import RunConfig, Runner, set_trace_processors
    from agents.exceptions import AgentsException
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    set_trace_processors([TrajdebugProcessor(path=str(path), name=name, task=task)])
    client = AsyncOpenAI(base_url=Model.base_url, api_key="not-needed", max_retries=0)
    try:
        Runner.run_sync(agent_factory(client), text, run_config=RunConfig(workflow_name=name), max_turns=12)
    except (ValueError, AgentsException):
        pass


def _model(client: Any) -> Any:
    from agents import OpenAIChatCompletionsModel

    return OpenAIChatCompletionsModel(model=Model.name, openai_client=client)


def _calls(msgs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Tool calls made so far in the conversation, with their results: (name, result)."""
    names: dict[str, str] = {}
    out = []
    for m in msgs:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
        if m.get("role") == "tool":
            try:
                result = json.loads(m["content"])
            except (TypeError, ValueError):
                try:  # the SDK sends a dict result as its str()
                    result = ast.literal_eval(m["content"])
                except (ValueError, SyntaxError):
                    result = m["content"]
            out.append((names.get(m.get("tool_call_id"), "?"), result))
    return out


def _last(calls: list[tuple[str, Any]], name: str) -> Any:
    return next((r for n, r in reversed(calls) if n == name), None)


# ======================================================================================
# customs-broker: import declarations, a triage agent handing off to desk specialists
# ======================================================================================

FX = {"CAD": 0.66, "USD": 0.92, "GBP": 1.17, "EUR": 1.0}
PRINT = {"CAD": "C$ ", "USD": "US$ ", "GBP": "£", "EUR": "€"}
HS = {  # code: description, keywords, MFN duty %, preferential duty by origin
    "8518.30": ("Headphones and earphones, including earbuds", ["earbuds", "headphones"], 2.0, {}),
    "8517.62": ("Machines for the reception and transmission of data, incl. smartwatches", ["smartwatch"], 0.0, {}),
    "8504.40": ("Static converters: chargers, power adapters", ["charger"], 3.3, {}),
    "8518.22": ("Multiple loudspeakers mounted in one enclosure", ["speaker"], 2.0, {}),
    "6109.10": ("T-shirts, singlets, knitted, of cotton", ["t-shirt"], 12.0, {"GB": 0.0, "TR": 0.0}),
    "6117.10": ("Shawls, scarves, mufflers, knitted", ["scarves", "scarf"], 12.0, {"GB": 0.0}),
    "6117.80": ("Other made up clothing accessories: straps, bands", ["straps", "bands"], 12.0, {}),
    "6203.42": ("Men's trousers and jeans, of cotton", ["jeans", "trousers"], 12.0, {"TR": 0.0}),
    "4202.92": ("Cases, sleeves and covers with outer surface of plastic sheeting or textile", ["sleeve"], 2.7, {}),
}
DESK_BOOK = {"electronics": ["8504.40", "8517.62", "8518.22", "8518.30"],
             "apparel": ["6109.10", "6117.10", "6117.80", "6203.42", "4202.92"]}
SHIPMENTS = {  # goods, total, currency, origin, true HS code
    "SHP-1101": ("wireless earbuds, 300 units", 4200.00, "CAD", "CN", "8518.30"),
    "SHP-1102": ("cotton t-shirts, 500 units", 2950.00, "GBP", "GB", "6109.10"),
    "SHP-1103": ("smartwatches with silicone straps, 120 units", 9800.00, "EUR", "KR", "8517.62"),
    "SHP-1104": ("neoprene laptop sleeve, 800 units", 6100.00, "USD", "VN", "4202.92"),
    "SHP-1201": ("usb-c chargers, 1,000 units", 3300.00, "EUR", "CN", "8504.40"),
    "SHP-1202": ("wool scarves, 400 units", 1800.00, "GBP", "GB", "6117.10"),
    "SHP-1203": ("bluetooth speaker, 250 units", 5500.00, "USD", "CN", "8518.22"),
    "SHP-1204": ("denim jeans, 600 units", 7200.00, "EUR", "TR", "6203.42"),
}
ELECTRONIC_WORDS = ("earbuds", "smartwatch", "charger", "speaker")


def _hs_text(desk: str, query: str) -> str:
    lines = [f"{code} | {HS[code][0]}" for code in DESK_BOOK[desk]]
    text = f"{desk} tariff book, query '{query}':\n" + "\n".join(lines)
    if active("customs.truncated") and desk == "apparel":
        text = text[:230]  # the tariff service's reply is cut at a byte limit
    return text


def _true_duty(shp: str) -> tuple[float, float]:
    _goods, total, ccy, origin, code = SHIPMENTS[shp]
    value = round(total * FX[ccy], 2)
    rate = HS[code][3].get(origin, HS[code][2])
    return value, round(value * rate / 100, 2)


def customs_tools() -> dict[str, Any]:
    from agents import function_tool

    @function_tool
    def get_shipment(shipment_id: str) -> dict[str, Any]:
        """The shipment's goods description, commercial invoice total and origin."""
        goods, total, ccy, origin, _ = SHIPMENTS[shipment_id]
        return {"shipment": shipment_id, "goods": goods, "invoice_total": f"{PRINT[ccy]}{total:,.2f}",
                "origin": origin}

    @function_tool
    def hs_lookup(desk: str, query: str) -> str:
        """Candidate tariff codes from the desk's tariff book."""
        return _hs_text(desk, query)

    @function_tool
    def duty_rate(hs_code: str, origin: str) -> dict[str, Any]:
        """The duty rate of a tariff code for goods of an origin (preferential where an agreement applies)."""
        _desc, _, mfn, pref = HS[hs_code]
        applied = "ERGA OMNES" if active("customs.origin") else origin  # the origin filter is dropped
        rate = pref.get(applied, mfn)
        return {"hs_code": hs_code, "origin_applied": applied, "rate_pct": rate}

    @function_tool
    def fx_to_eur(amount: float, currency: str) -> dict[str, Any]:
        """Convert an amount to EUR at today's customs rate."""
        return {"amount": amount, "currency": currency, "eur": round(amount * FX[currency], 2)}

    @function_tool(failure_error_function=None)
    def file_declaration(shipment_id: str, hs_code: str, customs_value_eur: float, duty_eur: float) -> dict[str, Any]:
        """File the import declaration; customs validates the code, value and duty."""
        goods, _, _, _origin, code = SHIPMENTS[shipment_id]
        if hs_code != code:
            raise ValueError(f"{shipment_id}: HS {hs_code} does not cover '{goods}' (expected heading {code[:4]})")
        value, duty = _true_duty(shipment_id)
        if abs(customs_value_eur - value) > 0.005 * value:
            raise ValueError(f"{shipment_id}: customs value {customs_value_eur:.2f} EUR does not match the "
                             f"commercial invoice ({value:.2f} EUR)")
        if abs(duty_eur - duty) > 0.01 + 0.005 * duty:
            raise ValueError(f"{shipment_id}: duty {duty_eur:.2f} EUR declared, {duty:.2f} EUR due")
        return {"shipment": shipment_id, "mrn": f"26DE{shipment_id[-4:]}A1", "status": "accepted"}

    return {"get_shipment": get_shipment, "hs_lookup": hs_lookup, "duty_rate": duty_rate, "fx_to_eur": fx_to_eur,
            "file_declaration": file_declaration}


def _triage_customs(request: Any, msgs: list[dict[str, Any]]) -> Any:
    calls = _calls(msgs)
    shp = _last(calls, "get_shipment")
    if shp is None:
        sid = re.search(r"SHP-\d+", msgs[-1]["content"] if msgs[-1]["role"] == "user" else
                        next(m["content"] for m in msgs if m["role"] == "user")).group(0)
        return Reply(tool_calls=(tool_call("get_shipment", {"shipment_id": sid}),))
    electronic = any(w in shp["goods"] for w in ELECTRONIC_WORDS)
    if active("customs.route"):
        electronic = False  # "silicone straps" read as an apparel accessory
    target = "transfer_to_electronics_desk" if electronic else "transfer_to_apparel_desk"
    return Reply(tool_calls=(tool_call(target, {}),))


def _desk_customs(desk: str) -> Any:
    def answer(request: Any, msgs: list[dict[str, Any]]) -> Any:
        calls = _calls(msgs)
        shp = _last(calls, "get_shipment")
        hs = _last(calls, "hs_lookup")
        if hs is None:
            return Reply(tool_calls=(tool_call("hs_lookup", {"desk": desk, "query": shp["goods"]}),))
        duty = _last(calls, "duty_rate")
        fx = _last(calls, "fx_to_eur")
        if duty is None:
            lines = [ln.split(" | ") for ln in hs.splitlines()[1:] if " | " in ln]
            words = [w for w in re.findall(r"[a-z-]+", shp["goods"]) if len(w) >= 5]
            best = next((c for c, d in lines if any(w in d.lower() for w in words)), None)
            code = best or next(c for c, d in lines if "accessories" in d)
            amount = float(re.sub(r"[^\d.]", "", shp["invoice_total"]))
            sym = shp["invoice_total"].split()[0] if " " in shp["invoice_total"] else shp["invoice_total"][0]
            ccy = {"C$": "CAD", "US$": "USD", "£": "GBP", "€": "EUR"}[sym]
            if active("customs.currency") and ccy == "CAD":
                ccy = "USD"  # a dollar amount taken as US dollars
            return Reply(tool_calls=(tool_call("duty_rate", {"hs_code": code, "origin": shp["origin"]}),
                                     tool_call("fx_to_eur", {"amount": amount, "currency": ccy})))
        done = _last(calls, "file_declaration")
        if done is None:
            value = fx["eur"]
            return Reply(tool_calls=(tool_call("file_declaration", {
                "shipment_id": shp["shipment"], "hs_code": duty["hs_code"], "customs_value_eur": value,
                "duty_eur": round(value * duty["rate_pct"] / 100, 2)}),))
        return f"Declaration for {shp['shipment']} accepted, MRN {done['mrn']}."

    return answer


BRAINS["customs_triage"] = _triage_customs
BRAINS["customs_electronics"] = _desk_customs("electronics")
BRAINS["customs_apparel"] = _desk_customs("apparel")


def customs_agent(client: Any) -> Any:
    from agents import Agent as SdkAgent

    t = customs_tools()
    desk_tools = [t["hs_lookup"], t["duty_rate"], t["fx_to_eur"], t["file_declaration"]]
    electronics = SdkAgent(name="Electronics desk", model=_model(client), tools=desk_tools,
                           instructions="[customs_electronics] Classify the goods, work out value and duty, "
                                        "file the declaration.",
                           handoff_description="electronics and electrical goods")
    apparel = SdkAgent(name="Apparel desk", model=_model(client), tools=desk_tools,
                       instructions="[customs_apparel] Classify the goods, work out value and duty, file the "
                                    "declaration.",
                       handoff_description="clothing, textiles and accessories")
    return SdkAgent(name="Broker", model=_model(client), tools=[t["get_shipment"]], handoffs=[electronics, apparel],
                    instructions="[customs_triage] Look up the shipment and hand it to the right desk.")


def record_customs(inp: dict[str, Any], path: Path) -> None:
    _run(customs_agent, "customs-broker", f"file the import declaration for {inp['shipment']}",
         f"Please clear shipment {inp['shipment']} through customs.", path)


def _customs_marker_truncated() -> str:
    return _hs_text("apparel", SHIPMENTS["SHP-1104"][0])[:230].splitlines()[-1] + "\n"


CUSTOMS_AGENT = Agent(
    name="customs-broker", route="openai_agents", domain="customs brokerage", ext="jsonl",
    description="a broker agent reads the shipment and hands off to the electronics or apparel desk, which "
                "classifies, prices duty, converts to EUR and files the declaration",
    ref_inputs=[{"shipment": s} for s in ("SHP-1201", "SHP-1202", "SHP-1203", "SHP-1204")],
    record=record_customs,
    cases=[
        Case("customs_smartwatch_to_apparel", "customs-broker", {"shipment": "SHP-1103"}, "wrong_routing",
             "customs.route", "generation fake-model", "llm", "transfer_to_apparel_desk",
             "the broker hands smartwatches (with silicone straps) to the apparel desk"),
        Case("customs_cad_as_usd", "customs-broker", {"shipment": "SHP-1101"}, "currency_mixup",
             "customs.currency", "generation fake-model", "llm", '"currency": "USD"',
             "the desk converts a C$ invoice total as US dollars"),
        Case("customs_origin_ignored", "customs-broker", {"shipment": "SHP-1102"}, "tool_ignores_arg",
             "customs.origin", "duty_rate", "tool", "'origin_applied': 'ERGA OMNES'",
             "duty_rate ignores the origin and returns the MFN rate instead of the UK preferential 0 %"),
        Case("customs_tariff_list_cut", "customs-broker", {"shipment": "SHP-1104"}, "truncated_result",
             "customs.truncated", "hs_lookup", "tool", _customs_marker_truncated(),
             "the tariff service's list is cut at 230 bytes, dropping the sleeves heading, so a wrong code is "
             "chosen"),
    ],
)



# ======================================================================================
# payroll-clerk: a monthly payroll run, with a benefits sub-agent called as a tool
# ======================================================================================

STAFF = {  # name, team, contract rate text, minutes clocked in 2026-11
    "E-1024": ("Ines Duarte", "Warehouse", "EUR 24,80 per hour", 9480),
    "E-1031": ("Karl Weber", "Warehouse", "EUR 22,50 per hour", 9000),
    "E-1090": ("Lea Brun", "Front office", "EUR 21,90 per hour", 9000),
    "E-1095": ("Tariq Haddad", "Warehouse", "EUR 22,50 per hour", 9150),
    "E-1042": ("Sofia Marin", "Front office", "EUR 27,00 per hour", 8400),
    "E-1055": ("Oskar Lind", "Drivers", "EUR 23,00 per hour", 9900),
    "E-1060": ("Mehmet Aydin", "Warehouse", "EUR 24,00 per hour", 8760),
    "E-1068": ("Julia Novak", "Front office", "EUR 26,40 per hour", 7200),
    "E-1077": ("Arno Visser", "Drivers", "EUR 23,00 per hour", 10200),
    "E-1083": ("Hana Kim", "Drivers", "EUR 25,10 per hour", 9600),
}
ENROLMENT = {  # pension %, flat monthly deductions (EUR)
    "E-1024": (4.0, 49.0), "E-1031": (3.0, 0.0), "E-1042": (6.0, 120.0), "E-1055": (4.0, 49.0),
    "E-1060": (5.0, 15.0), "E-1068": (4.0, 0.0), "E-1077": (3.0, 49.0), "E-1083": (5.0, 0.0),
    "E-1090": (4.0, 25.0), "E-1095": (3.0, 0.0),
}
NOTES = [  # (employee, note)
    ("E-1077", "approved overtime 12h (night shifts, week 46)"),
    ("E-1083", "approved overtime 6h (holiday cover)"),
    ("E-1060", "approved overtime 4h (inventory count)"),
    ("E-1031", "new bank account from 2026-12"),
]


def _rate_of(emp: str) -> float:
    return float(STAFF[emp][2].split()[1].replace(",", "."))


def _overtime_of(emp: str) -> float:
    return sum(float(re.search(r"overtime (\d+)h", n).group(1)) for e, n in NOTES if e == emp and "overtime" in n)


def _true_pay(emp: str) -> tuple[float, float, float]:
    hours = round(STAFF[emp][3] / 60, 2)
    rate, ot = _rate_of(emp), _overtime_of(emp)
    gross = round(hours * rate + ot * rate * 1.5, 2)
    pension, flat = ENROLMENT[emp]
    return hours, gross, round(gross * pension / 100 + flat, 2)


def payroll_tools() -> dict[str, Any]:
    from agents import function_tool

    @function_tool
    def get_timesheet(employee_id: str, period: str) -> dict[str, Any]:
        """Hours clocked by an employee in a period."""
        minutes = STAFF[employee_id][3]
        # with the fault: hours.minutes read as decimal hours
        hours = minutes // 60 + (minutes % 60) / 100 if active("pay.units") else round(minutes / 60, 2)
        return {"employee_id": employee_id, "period": period, "hours": hours}

    @function_tool
    def read_contract(employee_id: str) -> dict[str, Any]:
        """The employee's contract rate."""
        text = STAFF[employee_id][2]
        num = text.split()[1]
        rate = float(num.split(",")[0]) if active("pay.rate") else float(num.replace(",", "."))
        return {"employee_id": employee_id, "rate_text": text, "hourly_rate": rate}

    @function_tool
    def hr_notes(employee_id: str) -> list[dict[str, str]]:
        """HR notes that concern an employee this period."""
        team = STAFF[employee_id][1]
        if active("pay.notes"):  # filtered by team instead of by employee
            return [{"employee_id": e, "note": n} for e, n in NOTES if STAFF[e][1] == team]
        return [{"employee_id": e, "note": n} for e, n in NOTES if e == employee_id]

    @function_tool
    def get_enrolment(employee_id: str) -> dict[str, Any]:
        """Benefit enrolment: pension percentage and flat monthly deductions."""
        pension, flat = ENROLMENT[employee_id]
        return {"employee_id": employee_id, "pension_pct": pension, "flat_eur": flat}

    @function_tool(failure_error_function=None)
    def submit_payroll(employee_id: str, period: str, hours: float, overtime_hours: float, gross_eur: float,
                       deductions_eur: float) -> dict[str, Any]:
        """Submit one payslip; the payroll ledger checks it against the time clock, HR and benefits."""
        t_hours, t_gross, t_ded = _true_pay(employee_id)
        if abs(hours - t_hours) > 0.01:
            raise ValueError(f"{employee_id}: {hours} h submitted, the time clock has {t_hours} h")
        if abs(overtime_hours - _overtime_of(employee_id)) > 0.01:
            raise ValueError(f"{employee_id}: overtime {overtime_hours} h is not approved "
                             f"(approved: {_overtime_of(employee_id)} h)")
        if abs(gross_eur - t_gross) > 0.01:
            raise ValueError(f"{employee_id}: gross {gross_eur:.2f} EUR, ledger computes {t_gross:.2f} EUR")
        if abs(deductions_eur - t_ded) > 0.01:
            raise ValueError(f"{employee_id}: deductions {deductions_eur:.2f} EUR do not match the enrolment "
                             f"({t_ded:.2f} EUR)")
        return {"employee_id": employee_id, "period": period, "status": "payslip issued"}

    return {f.name: f for f in (get_timesheet, read_contract, hr_notes, get_enrolment, submit_payroll)}


def _payroll_main(request: Any, msgs: list[dict[str, Any]]) -> Any:
    calls = _calls(msgs)
    user = next(m["content"] for m in msgs if m["role"] == "user")
    emp = re.search(r"E-\d+", user).group(0)
    period = re.search(r"\d{4}-\d{2}", user).group(0)
    ts = _last(calls, "get_timesheet")
    if ts is None:
        return Reply(tool_calls=(tool_call("get_timesheet", {"employee_id": emp, "period": period}),
                                 tool_call("read_contract", {"employee_id": emp}),
                                 tool_call("hr_notes", {"employee_id": emp})))
    ben = _last(calls, "benefits_specialist")
    if ben is None:
        who = "E-1042" if active("pay.entity") else emp  # digits transposed
        return Reply(tool_calls=(tool_call("benefits_specialist",
                                           {"input": f"Monthly deductions for employee {who}, period {period}"}),))
    done = _last(calls, "submit_payroll")
    if done is None:
        rate = _last(calls, "read_contract")["hourly_rate"]
        notes = _last(calls, "hr_notes")
        ot = sum(float(m.group(1)) for n in notes if (m := re.search(r"overtime (\d+)h", n["note"])))
        gross = round(ts["hours"] * rate + ot * rate * 1.5, 2)
        b = ben if isinstance(ben, dict) else json.loads(ben)
        ded = round(gross * b["pension_pct"] / 100 + b["flat_eur"], 2)
        return Reply(tool_calls=(tool_call("submit_payroll", {
            "employee_id": emp, "period": period, "hours": ts["hours"], "overtime_hours": ot, "gross_eur": gross,
            "deductions_eur": ded}),))
    return f"Payslip for {emp} ({period}) issued."


def _payroll_benefits(request: Any, msgs: list[dict[str, Any]]) -> Any:
    calls = _calls(msgs)
    enr = _last(calls, "get_enrolment")
    if enr is None:
        emp = re.search(r"E-\d+", next(m["content"] for m in msgs if m["role"] == "user")).group(0)
        return Reply(tool_calls=(tool_call("get_enrolment", {"employee_id": emp}),))
    return json.dumps({"employee_id": enr["employee_id"], "pension_pct": enr["pension_pct"],
                       "flat_eur": enr["flat_eur"]})


BRAINS["payroll_main"] = _payroll_main
BRAINS["payroll_benefits"] = _payroll_benefits


def payroll_agent(client: Any) -> Any:
    from agents import Agent as SdkAgent

    t = payroll_tools()
    benefits = SdkAgent(name="Benefits specialist", model=_model(client), tools=[t["get_enrolment"]],
                        instructions="[payroll_benefits] Report the employee's pension percentage and flat "
                                     "deductions as JSON.")
    return SdkAgent(name="Payroll clerk", model=_model(client),
                    tools=[t["get_timesheet"], t["read_contract"], t["hr_notes"],
                           benefits.as_tool(tool_name="benefits_specialist",
                                            tool_description="Ask the benefits specialist about deductions."),
                           t["submit_payroll"]],
                    instructions="[payroll_main] Prepare and submit the employee's payslip.")


def record_payroll(inp: dict[str, Any], path: Path) -> None:
    _run(payroll_agent, "payroll-clerk", f"payslip {inp['employee']} {inp['period']}",
         f"Run payroll for {inp['employee']}, period {inp['period']}.", path)


PAYROLL_AGENT = Agent(
    name="payroll-clerk", route="openai_agents", domain="payroll", ext="jsonl",
    description="a payroll agent reads the timesheet, contract and HR notes, asks a benefits sub-agent (agent as "
                "tool) for deductions, and submits the payslip to a ledger that validates it",
    ref_inputs=[{"employee": e, "period": "2026-11"} for e in ("E-1031", "E-1060", "E-1068", "E-1083")],
    record=record_payroll,
    cases=[
        Case("payroll_hours_minutes", "payroll-clerk", {"employee": "E-1095", "period": "2026-11"}, "unit_error",
             "pay.units", "get_timesheet", "tool", "'hours': 152.3",
             "get_timesheet turns 9,150 minutes into 152.30 h (hours.minutes) instead of 152.5 h"),
        Case("payroll_benefits_wrong_employee", "payroll-clerk", {"employee": "E-1024", "period": "2026-11"},
             "wrong_entity_subagent", "pay.entity", "generation fake-model", "llm", "E-1042",
             "the clerk asks the benefits sub-agent about E-1042 instead of E-1024"),
        Case("payroll_team_notes", "payroll-clerk", {"employee": "E-1055", "period": "2026-11"},
             "context_pollution", "pay.notes", "hr_notes", "tool", "E-1077",
             "hr_notes returns the whole team's notes, so another driver's approved overtime enters the context"),
        Case("payroll_rate_cents_dropped", "payroll-clerk", {"employee": "E-1090", "period": "2026-11"},
             "lossy_parse", "pay.rate", "read_contract", "tool", "'hourly_rate': 21.0",
             "read_contract parses 'EUR 21,90 per hour' as 21.0, dropping the decimal part after the comma"),
    ],
)

AGENTS = [CUSTOMS_AGENT, PAYROLL_AGENT]
