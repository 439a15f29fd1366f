"""tax-filing-assistant: prepares and e-files a simple US federal return (tax year 2024) from the filer's
document vault: a model reads the W-2, code normalises the bank's 1099-INT feed and parses the broker's
1099-B CSV, a model decides between the standard and itemized deduction, code computes the tax, builds
the 1040, runs a preflight review and submits it to the e-file transmitter.  The `openai` client is
instrumented with OpenInference; tools and parsing are the agent's own OTel spans; exported as OTLP JSON."""

from __future__ import annotations

import csv
import io
import json
import re
from contextlib import contextmanager
from typing import Any

from openai import OpenAI
from otel_route import Telemetry
from suite_common import FAULT, Agent, Case, Loc, messages_of, system_text

from trajdebug.testing import FakeModelServer


NAME = "tax-filing-assistant"
MODEL = "gpt-4o-2024-08-06"


def _w2(employer: str, wages: str, withheld: str) -> str:
    return (f"Form W-2 Wage and Tax Statement 2024\nEmployer: {employer}\nEmployee SSN: XXX-XX-{sum(map(ord, employer)) % 9000 + 1000}\n"
            f"Box 1 Wages, tips, other compensation: {wages}\nBox 2 Federal income tax withheld: {withheld}\n"
            f"Box 3 Social security wages: {wages}\n")


def _b(rows: list[tuple[str, str, str, str, str]]) -> str:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["description", "date_sold", "proceeds", "cost_basis", "gain_loss"])
    for r in rows:
        w.writerow(r)
    return out.getvalue()


FILERS: dict[str, dict[str, Any]] = {
    "TP-1001": {"name": "Jordan Reyes", "status": "single",
                "w2": _w2("Halvorsen Logistics Inc.", "86,450.00", "10,212.00"),
                "int": {"payer": "First Prairie Bank", "box1_interest": 42575, "amount_unit": "cents"},
                "b": _b([("VTI 12 sh", "2024-05-02", "3,110.40", "1,280.40", "1,830.00")]),
                "itemizable": {"state_income_tax": 3900, "mortgage_interest": 0, "charity": 2300}},
    "TP-1002": {"name": "Priya and Sam Natarajan", "status": "married_joint",
                "w2": _w2("Brightwater Health System", "142,300.00", "17,950.00"),
                "int": {"payer": "Lakeshore Credit Union", "box1_interest": 121540, "amount_unit": "cents"},
                "b": _b([("AAPL 30 sh", "2024-02-21", "5,520.00", "1,400.00", "4,120.00"),
                         ("ARKK 250 sh", "2024-09-10", "10,624.50", "17,000.00", "(6,375.50)")]),
                "itemizable": {"state_income_tax": 9100, "mortgage_interest": 8200, "charity": 1500}},
    "TP-1003": {"name": "Alex Kim", "status": "single",
                "w2": _w2("Copperline Studios LLC", "58,900.00", "5,400.00"),
                "int": {"payer": "Northgate Savings", "box1_interest": 8810, "amount_unit": "cents"},
                "b": _b([]),
                "itemizable": {"state_income_tax": 2100, "mortgage_interest": 0, "charity": 400}},
    "TP-1004": {"name": "Dana Whitfield", "status": "single",
                "w2": _w2("Meridian Aerospace Corp.", "97,800.00", "13,400.00"),
                "int": {"payer": "First Prairie Bank", "box1_interest": 31000, "amount_unit": "cents"},
                "b": _b([]),
                "itemizable": {"state_income_tax": 5900, "mortgage_interest": 0, "charity": 1150}},
    # passing
    "TP-2001": {"name": "Morgan Ellis", "status": "single",
                "w2": _w2("Tidewater Analytics", "64,200.00", "6,980.00"),
                "int": {"payer": "Northgate Savings", "box1_interest": 5230, "amount_unit": "cents"},
                "b": _b([("SCHD 20 sh", "2024-06-11", "1,560.00", "920.00", "640.00")]),
                "itemizable": {"state_income_tax": 2800, "mortgage_interest": 0, "charity": 600}},
    "TP-2002": {"name": "Luis and Ana Ortega", "status": "married_joint",
                "w2": _w2("Granite Peak Engineering", "188,000.00", "27,300.00"),
                "int": {"payer": "Lakeshore Credit Union", "box1_interest": 64020, "amount_unit": "cents"},
                "b": _b([("MSFT 15 sh", "2024-04-03", "6,300.00", "3,900.00", "2,400.00"),
                         ("BND 80 sh", "2024-11-19", "5,760.00", "6,540.00", "(780.00)")]),
                "itemizable": {"state_income_tax": 10000, "mortgage_interest": 16800, "charity": 4500}},
    "TP-2003": {"name": "Sam Oduya", "status": "single",
                "w2": _w2("Riverbend Public Library", "41,750.00", "3,020.00"),
                "int": {"payer": "Northgate Savings", "box1_interest": 0, "amount_unit": "cents"},
                "b": _b([]),
                "itemizable": {"state_income_tax": 1300, "mortgage_interest": 0, "charity": 150}},
    "TP-2004": {"name": "Hannah and Joel Brandt", "status": "married_joint",
                "w2": _w2("Cedar Valley Schools", "121,400.00", "11,870.00"),
                "int": {"payer": "First Prairie Bank", "box1_interest": 200495, "amount_unit": "cents"},
                "b": _b([("VXUS 40 sh", "2024-03-28", "2,440.00", "2,080.00", "360.00"),
                         ("VOO 5 sh", "2024-08-15", "2,590.00", "1,900.00", "690.00")]),
                "itemizable": {"state_income_tax": 6400, "mortgage_interest": 9800, "charity": 2000}},
    "TP-2005": {"name": "Riley Chen", "status": "single",
                "w2": _w2("Stonebridge Capital Partners", "152,000.00", "29,100.00"),
                "int": {"payer": "Lakeshore Credit Union", "box1_interest": 18890, "amount_unit": "cents"},
                "b": _b([("QQQ 10 sh", "2024-07-01", "4,790.00", "5,210.00", "(420.00)")]),
                "itemizable": {"state_income_tax": 10000, "mortgage_interest": 12400, "charity": 2100}},
}

TABLES = {
    2024: {"single": {"standard_deduction": 14600, "brackets": [[11600, 0.10], [47150, 0.12], [100525, 0.22], [191950, 0.24], [None, 0.32]]},
           "married_joint": {"standard_deduction": 29200, "brackets": [[23200, 0.10], [94300, 0.12], [201050, 0.22], [383900, 0.24], [None, 0.32]]}},
    2023: {"single": {"standard_deduction": 13850, "brackets": [[11000, 0.10], [44725, 0.12], [95375, 0.22], [182100, 0.24], [None, 0.32]]},
           "married_joint": {"standard_deduction": 27700, "brackets": [[22000, 0.10], [89450, 0.12], [190750, 0.22], [364200, 0.24], [None, 0.32]]}},
}


class ReturnRejected(RuntimeError):
    pass


class PreflightFailed(RuntimeError):
    pass


def _money(s: str) -> float:
    s = s.strip()
    neg = s.startswith("(") and s.endswith(")")
    v = float(s.strip("()").replace(",", "") or 0)
    return -v if neg else v


# -- the fake model server's brain --------------------------------------------------------------


def brain(request: Any) -> str:
    msgs = messages_of(request)
    system = system_text(msgs)
    user = msgs[-1]["content"]
    if "W-2" in system:
        wages = re.search(r"Box 1[^:]*:\s*([\d,.]+)", user).group(1)
        withheld = re.search(r"Box 2[^:]*:\s*([\d,.]+)", user).group(1)
        employer = re.search(r"Employer:\s*(.+)", user).group(1)
        return json.dumps({"employer": employer, "box1_wages": float(wages.replace(",", "")),
                           "box2_federal_withholding": float(withheld.replace(",", ""))})
    if "itemize" in system:
        std = float(re.search(r"Standard deduction:\s*([\d,.]+)", user).group(1).replace(",", ""))
        item = float(re.search(r"Itemizable total:\s*([\d,.]+)", user).group(1).replace(",", ""))
        method = "itemized" if item > std else "standard"
        why = (f"itemizable expenses of {item:,.0f} exceed the standard deduction of {std:,.0f}" if method == "itemized"
               else f"the standard deduction of {std:,.0f} is larger than itemizing ({item:,.0f})")
        if FAULT.on("itemize_anyway") and method == "standard":
            method = "itemized"
            why = "state income tax and charitable gifts make itemizing worthwhile"
        return json.dumps({"method": method, "reason": why})
    if "summary" in system:
        data = json.loads(user.split("Return:", 1)[1])
        verb = "refund" if data["refund"] >= 0 else "balance due"
        return (f"Your 2024 return was accepted for e-filing. Taxable income {data['taxable_income']:,.2f}; "
                f"{verb} of {abs(data['refund']):,.2f}.")
    return "I can only help with tax filing questions."


# -- the agent -------------------------------------------------------------------------------------


def build(tel: Telemetry, client: OpenAI):
    @tel.tool
    def fetch_tax_documents(taxpayer_id: str, year: int) -> dict[str, Any]:
        f = FILERS[taxpayer_id]
        return {"w2_text": f["w2"], "form_1099_int": dict(f["int"]), "form_1099_b_csv": f["b"],
                "questionnaire": {"filing_status": f["status"], **f["itemizable"]}}

    @tel.chain
    def parse_w2(raw: str) -> dict[str, Any]:
        data = json.loads(raw)
        return {"wages": round(float(data["box1_wages"]), 2), "withholding": round(float(data["box2_federal_withholding"]), 2)}

    @tel.chain
    def normalize_interest(form_1099_int: dict[str, Any]) -> dict[str, Any]:
        amount = form_1099_int["box1_interest"]
        if not FAULT.on("interest_cents"):
            amount = amount / 100 if form_1099_int.get("amount_unit") == "cents" else amount
        return {"payer": form_1099_int["payer"], "interest": round(float(amount), 2)}

    @tel.chain
    def parse_1099b(csv_text: str) -> dict[str, Any]:
        rows = list(csv.DictReader(io.StringIO(csv_text)))
        txs = []
        for r in rows:
            gain = r["gain_loss"]
            if FAULT.on("paren_loss"):
                gain = gain.strip("()")  # accounting negatives read as plain numbers
            txs.append({"description": r["description"], "proceeds": _money(r["proceeds"]),
                        "cost_basis": _money(r["cost_basis"]), "gain": _money(gain)})
        return {"transactions": txs, "net_gain": round(sum(t["gain"] for t in txs), 2)}

    @tel.tool
    def lookup_tax_tables(year: int, filing_status: str) -> dict[str, Any]:
        source_year = 2023 if FAULT.on("offline_tables") else year  # bundled copy from last season
        return {"year": year, "filing_status": filing_status, **json.loads(json.dumps(TABLES[source_year][filing_status]))}

    @tel.tool
    def fetch_itemized_deductions(taxpayer_id: str, year: int) -> dict[str, Any]:
        items = dict(FILERS[taxpayer_id]["itemizable"])
        items["state_income_tax"] = min(items["state_income_tax"], 10000)  # SALT cap
        return {"items": items, "total": sum(items.values())}

    @tel.chain
    def compute_tax(w2: dict[str, Any], interest: dict[str, Any], capital: dict[str, Any],
                    tables: dict[str, Any], deduction: dict[str, Any]) -> dict[str, Any]:
        net_cap = max(capital["net_gain"], -3000.0)
        agi = round(w2["wages"] + interest["interest"] + net_cap, 2)
        ded = deduction["amount"]
        taxable = max(0.0, round(agi - ded, 2))
        tax, lower = 0.0, 0.0
        for upper, rate in tables["brackets"]:
            top = taxable if upper is None else min(taxable, upper)
            if top > lower:
                tax += (top - lower) * rate
            if upper is None or taxable <= upper:
                break
            lower = upper
        tax = round(tax, 2)
        return {"agi": agi, "deduction_method": deduction["method"], "deduction": ded,
                "standard_deduction": tables["standard_deduction"], "taxable_income": taxable, "tax": tax,
                "withholding": w2["withholding"], "refund": round(w2["withholding"] - tax, 2)}

    @tel.chain
    def build_form_1040(taxpayer_id: str, status: str, w2: dict[str, Any], interest: dict[str, Any],
                        capital: dict[str, Any], computed: dict[str, Any]) -> dict[str, Any]:
        return {
            "taxpayer_id": taxpayer_id, "tax_year": 2024, "filing_status": status,
            "line_1a_wages": w2["wages"], "line_2b_taxable_interest": interest["interest"],
            "line_7_capital_gain": max(capital["net_gain"], -3000.0), "line_11_agi": computed["agi"],
            "line_12_deduction": computed["deduction"], "deduction_method": computed["deduction_method"],
            "line_15_taxable_income": computed["taxable_income"], "line_16_tax": computed["tax"],
            "line_25a_withholding": computed["withholding"], "refund_or_due": computed["refund"],
            "schedule_b": {"payers": [{"name": interest["payer"], "amount": interest["interest"]}]},
            "schedule_d": {"net_gain_loss": capital["net_gain"], "transactions": len(capital["transactions"])},
            "standard_deduction_for_status": computed["standard_deduction"],
        }

    @tel.chain
    def preflight_review(form: dict[str, Any]) -> dict[str, Any]:
        if form["deduction_method"] == "itemized" and form["line_12_deduction"] < form["standard_deduction_for_status"]:
            raise PreflightFailed("preflight review: the chosen deduction method costs the filer money; review the return")
        return {"checks": ["deduction method", "arithmetic"], "passed": True}

    @tel.tool
    def efile_submit(form_1040: dict[str, Any]) -> dict[str, Any]:
        f = FILERS[form_1040["taxpayer_id"]]
        on_file_interest = f["int"]["box1_interest"] / 100
        on_file_net = round(sum(_money(r["gain_loss"]) for r in csv.DictReader(io.StringIO(f["b"]))), 2)
        std = TABLES[2024][form_1040["filing_status"]]["standard_deduction"]
        if abs(form_1040["line_2b_taxable_interest"] - on_file_interest) > 0.5:
            raise ReturnRejected("Return rejected by the e-file transmitter (SEIC-B01): Schedule B interest does not "
                                 "agree with the payer's information return")
        if abs(form_1040["schedule_d"]["net_gain_loss"] - on_file_net) > 0.5:
            raise ReturnRejected("Return rejected (R0000-D14): Schedule D totals do not reconcile with Form 1099-B")
        if form_1040["deduction_method"] == "standard" and form_1040["line_12_deduction"] != std:
            raise ReturnRejected("Reject F1040-180: the standard deduction amount is not the amount allowed")
        return {"submission_id": f"SUB-{form_1040['taxpayer_id'][3:]}-2024", "status": "accepted"}

    def chat(system: str, user: str) -> str:
        r = client.chat.completions.create(model=MODEL, temperature=0, messages=[
            {"role": "system", "content": system}, {"role": "user", "content": user}])
        return r.choices[0].message.content

    def prepare(taxpayer_id: str) -> None:
        request = f"Prepare and e-file the 2024 federal return for {taxpayer_id}"
        with tel.span(NAME, "AGENT", input=request, agent__name=NAME) as root:
            docs = fetch_tax_documents(taxpayer_id=taxpayer_id, year=2024)
            w2 = parse_w2(raw=chat("Extract the W-2 boxes (box1_wages, box2_federal_withholding, employer) as JSON.",
                                   docs["w2_text"]))
            interest = normalize_interest(form_1099_int=docs["form_1099_int"])
            capital = parse_1099b(csv_text=docs["form_1099_b_csv"])
            status = docs["questionnaire"]["filing_status"]
            tables = lookup_tax_tables(year=2024, filing_status=status)
            q = docs["questionnaire"]
            itemizable = min(q["state_income_tax"], 10000) + q["mortgage_interest"] + q["charity"]
            decision = json.loads(chat(
                "You decide whether the filer should itemize deductions or take the standard deduction. "
                "Answer as JSON with method and reason.",
                f"Filing status: {status}\nStandard deduction: {tables['standard_deduction']:,}\n"
                f"Itemizable (questionnaire): state income tax {q['state_income_tax']:,}, mortgage interest "
                f"{q['mortgage_interest']:,}, charity {q['charity']:,}\nItemizable total: {itemizable:,}"))
            if decision["method"] == "itemized":
                items = fetch_itemized_deductions(taxpayer_id=taxpayer_id, year=2024)
                deduction = {"method": "itemized", "amount": items["total"]}
            else:
                deduction = {"method": "standard", "amount": tables["standard_deduction"]}
            computed = compute_tax(w2=w2, interest=interest, capital=capital, tables=tables, deduction=deduction)
            form = build_form_1040(taxpayer_id=taxpayer_id, status=status, w2=w2, interest=interest,
                                   capital=capital, computed=computed)
            preflight_review(form=form)
            receipt = efile_submit(form_1040=form)
            summary = chat("Write a two-sentence summary of the filed return for the filer.",
                           f"Return: {json.dumps(computed)}")
            root.output({"submission": receipt, "summary": summary})

    return prepare


@contextmanager
def session():
    with FakeModelServer(brain, model=MODEL) as server, Telemetry(NAME) as tel:
        client = OpenAI(base_url=server.base_url, api_key="sk-fake-not-used", max_retries=0)
        prepare = build(tel, client)

        def record(taxpayer_id: str, path: str) -> BaseException | None:
            return tel.record(lambda: prepare(taxpayer_id), path, (ReturnRejected, PreflightFailed))

        yield record


AGENT = Agent(
    name=NAME,
    route="otlp",
    domain="personal tax filing",
    summary="fetch the filer's documents, a model extracts the W-2, code normalises the 1099-INT feed and "
    "parses the 1099-B CSV, tax tables, a model chooses standard vs itemized, compute, build the 1040, "
    "preflight review, e-file, a model summarises",
    features=["branch (itemized deductions)"],
    passing=["TP-2001", "TP-2002", "TP-2003", "TP-2004", "TP-2005"],
    session=session,
    cases=[
        Case(
            "d-tax-interest-cents",
            "TP-1001",
            "interest_cents",
            "unit_error",
            "The bank's 1099-INT feed gives interest in cents (42575); the normaliser takes it as dollars, so "
            "42,575.00 of interest goes on the return and the transmitter rejects it.",
            [Loc("normalize_interest", 1, "42575.0"), Loc("compute_tax"), Loc("build_form_1040"), Loc("efile_submit")],
        ),
        Case(
            "d-tax-paren-loss",
            "TP-1002",
            "paren_loss",
            "lossy_parsing",
            "The 1099-B parser strips the accounting parentheses, so the (6,375.50) loss on ARKK becomes a "
            "gain; Schedule D no longer matches the broker's 1099-B and the return is rejected.",
            [Loc("parse_1099b", 1, "6375.5"), Loc("compute_tax"), Loc("build_form_1040"), Loc("efile_submit")],
        ),
        Case(
            "d-tax-offline-tables",
            "TP-1003",
            "offline_tables",
            "stale_data",
            "The tax-table lookup silently serves last season's bundled tables (TY2023: standard deduction "
            "13,850) stamped as 2024; the return claims the wrong standard deduction and is rejected.",
            [Loc("lookup_tax_tables", 1, "13850"), Loc("compute_tax"), Loc("build_form_1040"), Loc("efile_submit")],
        ),
        Case(
            "d-tax-itemize-branch",
            "TP-1004",
            "itemize_anyway",
            "wrong_routing",
            "The deduction model sends the return down the itemized branch although the itemizable total "
            "(7,050) is below the standard deduction (14,600); the itemized deductions are fetched and used and "
            "the preflight review stops the return.",
            [Loc("ChatCompletion", 2, "itemized"), Loc("fetch_itemized_deductions"), Loc("compute_tax"),
             Loc("build_form_1040"), Loc("preflight_review")],
        ),
    ],
)
