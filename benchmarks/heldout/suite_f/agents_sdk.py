"""Agents recorded with the trajdebug recording SDK (`trajdebug.run`, `@trajdebug.step`, `run.state`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trajdebug

from .common import BRAINS, Agent, Case, active, complete

# ======================================================================================
# invoice-reconciler: accounts payable, an invoice matched to its purchase order
# ======================================================================================

FX_TO_EUR = {"EUR": 1.0, "GBP": 1.17, "CHF": 1.06, "USD": 0.92, "SEK": 0.087}
SYMBOL = {"EUR": "€", "GBP": "£", "CHF": "CHF ", "USD": "$", "SEK": "SEK "}

INVOICES: dict[str, dict[str, Any]] = {
    "INV-2291": {"vendor": "Hartley Print Ltd", "ccy": "GBP", "po": "PO-7713",
                 "lines": [("Brochure A4, 2,000 pcs", 1, 2860.00), ("Delivery", 1, 560.00)]},
    "INV-3307": {"vendor": "Bergmann Logistik GmbH", "ccy": "EUR", "po": "PO-7720",
                 "lines": [("Pallet storage, March", 14, 38.50), ("Handling", 1, 211.00)]},
    "INV-4410": {"vendor": "Alpenkaffee AG", "ccy": "CHF", "po": "PO-7731",
                 "lines": [("Espresso beans 6 kg", 9, 121.00), ("Grinder service", 1, 340.00)]},
    "INV-5120": {"vendor": "Lakeside Catering Inc.", "ccy": "USD", "po": "PO-7744",
                 "lines": [("Conference lunch, 240 guests", 240, 48.00), ("Staff", 1, 960.00)]},
    "INV-6081": {"vendor": "Nordljus Design AB", "ccy": "SEK", "po": "PO-7750",
                 "lines": [("Brand workshop", 2, 18500.00), ("Travel", 1, 4200.00)]},
    "INV-7002": {"vendor": "Cobalt Office Supplies", "ccy": "GBP", "po": "PO-7761",
                 "lines": [("Desk chairs", 12, 189.00)]},
    "INV-7315": {"vendor": "Rhein Cleaning Services", "ccy": "EUR", "po": "PO-7765",
                 "lines": [("Office cleaning, April", 1, 1840.00), ("Window cleaning", 2, 155.00)]},
    "INV-8120": {"vendor": "Pinecrest Software LLC", "ccy": "USD", "po": "PO-7770",
                 "lines": [("Annual licence, 35 seats", 35, 96.00)]},
}


def _inv_total(inv: dict[str, Any]) -> float:
    return round(sum(q * p for _, q, p in inv["lines"]), 2)


def _money(x: float) -> str:
    return f"{x:,.2f}"


def _po(inv_id: str) -> dict[str, Any]:
    inv = INVOICES[inv_id]
    eur = round(_inv_total(inv) * FX_TO_EUR[inv["ccy"]], 2)
    prior = round(eur * 0.4, 2)
    return {"po": inv["po"], "vendor": inv["vendor"], "line_amount_eur": eur,
            "budget_eur": round(eur + prior, 2), "invoiced_eur": prior}


def _invoice_text(inv_id: str) -> str:
    inv = INVOICES[inv_id]
    sym = SYMBOL[inv["ccy"]]
    rows = "\n".join(f"  {d:<32} {q:>4} x {sym}{_money(p)}" for d, q, p in inv["lines"])
    return (f"INVOICE {inv_id}\nFrom: {inv['vendor']}\nYour order: {inv['po']}\n{rows}\n"
            f"  TOTAL DUE {sym}{_money(_inv_total(inv))} ({inv['ccy']})\nPayment terms: 30 days net")


def _extract_brain(request: Any, msgs: list[dict[str, Any]]) -> str:
    user = msgs[-1]["content"]
    inv_id = re.search(r"INVOICE (INV-\d+)", user).group(1)
    inv = INVOICES[inv_id]
    ccy = inv["ccy"]
    if active("inv.currency"):
        ccy = "EUR"  # the model reads the amount and assumes the company's home currency
    return json.dumps({"invoice": inv_id, "vendor": inv["vendor"], "po": inv["po"], "currency": ccy,
                       "total": _money(_inv_total(inv))})


BRAINS["extract_invoice"] = _extract_brain


class RateServiceTimeout(Exception):
    pass


def _rate_service(ccy: str) -> float:
    if active("inv.fx") and ccy == "CHF":
        raise RateServiceTimeout("rates.internal: read timed out after 2.0 s")
    return FX_TO_EUR[ccy]


@trajdebug.step(kind="tool")
def fetch_invoice(invoice_id: str) -> str:
    return _invoice_text(invoice_id)


@trajdebug.step(kind="llm")
def extract_invoice(messages: list[dict[str, str]]) -> dict[str, Any]:
    return complete("extract_invoice", messages[-1]["content"], messages[0]["content"])


@trajdebug.step(kind="parse")
def parse_invoice(reply: dict[str, Any]) -> dict[str, Any]:
    data = json.loads(reply["content"])
    raw = data["total"]
    if active("inv.parse"):
        total = float(raw.replace(".", "").replace(",", "."))  # read as a European-format number
    else:
        total = float(raw.replace(",", ""))
    return {"invoice": data["invoice"], "vendor": data["vendor"], "po": data["po"],
            "currency": data["currency"], "total": total}


@trajdebug.step(kind="tool")
def fetch_po(po_id: str, invoice_id: str) -> dict[str, Any]:
    po = _po(invoice_id)
    trajdebug.current_run().state["po_ledger"] = {po_id: {"budget_eur": po["budget_eur"],
                                                          "invoiced_eur": po["invoiced_eur"]}}
    return po


@trajdebug.step(kind="tool")
def fx_rate(currency: str) -> dict[str, Any]:
    try:
        rate = _rate_service(currency)
    except RateServiceTimeout:
        rate = 1.0
    return {"pair": f"{currency}/EUR", "rate": rate}


@trajdebug.step(kind="other")
def convert_total(invoice: dict[str, Any], fx: dict[str, Any]) -> dict[str, Any]:
    return {"invoice": invoice["invoice"], "total_eur": round(invoice["total"] * fx["rate"], 2)}


@trajdebug.step(kind="state")
def update_po_ledger(po_id: str, converted: dict[str, Any]) -> dict[str, Any]:
    ledger = trajdebug.current_run().state["po_ledger"]
    entry = dict(ledger[po_id])
    entry["reserved_eur"] = converted["total_eur"]
    if active("inv.ledger"):
        entry["invoiced_eur"] = round(entry["invoiced_eur"] + converted["total_eur"], 2)  # reserved counted twice
    entry["remaining_eur"] = round(entry["budget_eur"] - entry["invoiced_eur"], 2)
    trajdebug.current_run().state["po_ledger"] = {**ledger, po_id: entry}
    return entry


@trajdebug.step(kind="condition")
def approve_payment(po: dict[str, Any], converted: dict[str, Any]) -> str:
    entry = trajdebug.current_run().state["po_ledger"][po["po"]]
    amount, expected = converted["total_eur"], po["line_amount_eur"]
    if abs(amount - expected) > 0.01 * expected:
        raise ValueError(f"{converted['invoice']}: {amount:.2f} EUR does not match {po['po']} "
                         f"({expected:.2f} EUR)")
    if amount > entry["remaining_eur"] + 0.01:
        raise ValueError(f"{converted['invoice']}: {amount:.2f} EUR exceeds the remaining balance of "
                         f"{po['po']} ({entry['remaining_eur']:.2f} EUR)")
    return "approved"


@trajdebug.step(kind="tool")
def schedule_payment(invoice_id: str, amount_eur: float) -> dict[str, Any]:
    return {"invoice": invoice_id, "amount_eur": amount_eur, "status": "scheduled", "run": "2026-12-04"}


def record_invoice(inp: dict[str, Any], path: Path) -> None:
    inv_id = inp["invoice_id"]
    try:
        with trajdebug.run("invoice-reconciler", path=str(path), task=f"reconcile and pay {inv_id}"):
            with trajdebug.step("receive_request", kind="input", input=inp) as s:
                s.output = {"invoice_id": inv_id}
            text = fetch_invoice(inv_id)
            system = ("Extract the invoice as JSON with keys invoice, vendor, po, currency (ISO code) "
                      "and total (as printed).")
            reply = extract_invoice([{"role": "system", "content": system},
                                     {"role": "user", "content": text}])
            invoice = parse_invoice(reply)
            po = fetch_po(invoice["po"], inv_id)
            fx = fx_rate(invoice["currency"])
            converted = convert_total(invoice, fx)
            update_po_ledger(invoice["po"], converted)
            approve_payment(po, converted)
            schedule_payment(inv_id, converted["total_eur"])
    except ValueError:
        pass


def _inv_marker_parse(inv_id: str) -> str:
    raw = _money(_inv_total(INVOICES[inv_id]))
    return f'"total": {float(raw.replace(".", "").replace(",", "."))}'


def _inv_marker_ledger(inv_id: str) -> str:
    po = _po(inv_id)
    return f'"invoiced_eur": {round(po["invoiced_eur"] + po["line_amount_eur"], 2)}'


INVOICE_AGENT = Agent(
    name="invoice-reconciler", route="sdk", domain="accounts payable", ext="jsonl",
    description="extracts an invoice with a model, converts it to EUR, matches it to its PO and approves payment",
    ref_inputs=[{"invoice_id": i} for i in ("INV-6081", "INV-7002", "INV-7315", "INV-8120")],
    record=record_invoice,
    cases=[
        Case("invoice_currency_mixup", "invoice-reconciler", {"invoice_id": "INV-2291"}, "currency_mixup",
             "inv.currency", "extract_invoice", "llm", '"currency": "EUR", "total": "3,420.00"',
             "the model extracts a GBP invoice's currency as EUR, so no conversion is applied and the "
             "amount no longer matches the purchase order"),
        Case("invoice_lossy_parse", "invoice-reconciler", {"invoice_id": "INV-5120"}, "lossy_parse",
             "inv.parse", "parse_invoice", "parse", _inv_marker_parse("INV-5120"),
             "the total '12,480.00' is parsed as a European-format number (12.48)"),
        Case("invoice_ledger_double_count", "invoice-reconciler", {"invoice_id": "INV-3307"},
             "bad_state_write", "inv.ledger", "update_po_ledger", "state", _inv_marker_ledger("INV-3307"),
             "the PO ledger write adds the reserved amount to invoiced_eur as well, so the remaining "
             "balance is understated"),
        Case("invoice_fx_default", "invoice-reconciler", {"invoice_id": "INV-4410"}, "swallowed_error",
             "inv.fx", "fx_rate", "tool", '"pair": "CHF/EUR", "rate": 1.0}',
             "the FX service times out and fx_rate silently returns a rate of 1.0"),
    ],
)
AGENTS = [INVOICE_AGENT]
