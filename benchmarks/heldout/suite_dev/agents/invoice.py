"""Accounts-payable agent: extracts an invoice, parses the amounts, posts it, reconciles with the PO."""

from __future__ import annotations

import json
import re

import trajdebug

from .common import llm_meta, mark_failure, mark_flow, mark_root, on


NAME = "invoice-intake"
SUMMARY = (
    "Reads a supplier invoice, parses its amounts, posts it to AP and reconciles it with the purchase order."
)
FAULTS = {
    "thousands_separator": "the amount parser stops at the first thousands separator ('1,250.00' becomes 1.0)",
}


class POReconciliationError(Exception):
    """The posted invoice amount does not match the approved purchase order."""


INVOICES = {
    "INV-88213": {
        "vendor": "Nordlicht Office GmbH",
        "po": "PO-5521",
        "vat": 0.23,
        "lines": [("Ergonomic chair", 4, "1,250.00"), ("Desk lamp", 4, "64.90")],
    },
    "INV-77102": {
        "vendor": "Atlantic Cloud Services",
        "po": "PO-5530",
        "vat": 0.23,
        "lines": [("Compute reservation Q3", 1, "3,480.00"), ("Support plan", 1, "420.00")],
    },
    "INV-60917": {
        "vendor": "Grafica Moderna Lda",
        "po": "PO-5544",
        "vat": 0.06,
        "lines": [("Annual report print run", 2, "2,115.50"), ("Binding", 2, "85.00")],
    },
    "INV-51002": {
        "vendor": "Cafe Central Catering",
        "po": "PO-5550",
        "vat": 0.13,
        "lines": [("Team lunch", 1, "312.40"), ("Coffee service", 3, "48.00")],
    },
    "INV-51190": {
        "vendor": "Papelaria Lusa",
        "po": "PO-5551",
        "vat": 0.23,
        "lines": [("A4 paper box", 12, "21.75"), ("Toner", 2, "89.90")],
    },
    "INV-52277": {
        "vendor": "SecureKey Ltd",
        "po": "PO-5557",
        "vat": 0.23,
        "lines": [("Hardware tokens", 25, "32.00")],
    },
    "INV-53015": {
        "vendor": "Limpeza Total",
        "po": "PO-5560",
        "vat": 0.23,
        "lines": [("Office cleaning June", 1, "640.00"), ("Window cleaning", 1, "155.00")],
    },
    "INV-53300": {
        "vendor": "Tradutores Unidos",
        "po": "PO-5566",
        "vat": 0.23,
        "lines": [("Translation EN-PT, 12k words", 1, "960.00")],
    },
}


def _num(s: str) -> float:
    return float(s.replace(",", ""))


def po_amount(inv_id: str) -> float:
    inv = INVOICES[inv_id]
    sub = sum(q * _num(p) for _, q, p in inv["lines"])
    return round(sub * (1 + inv["vat"]), 2)


FAILING = [
    {
        "fault": "thousands_separator",
        "description": "Four chairs at 1,250.00 are parsed as 1.00 each; the computed total and the AP posting are far too low; PO reconciliation fails.",
        "input": {
            "id": "INV-88213",
            "task": "New invoice INV-88213 from Nordlicht in the AP inbox - please book it.",
        },
    },
    {
        "fault": "thousands_separator",
        "description": "Cloud invoice with a 3,480.00 line parsed as 3.0; subtotal, posting and reconciliation go wrong.",
        "input": {"id": "INV-77102", "task": "Book Atlantic Cloud's invoice INV-77102 against its PO."},
    },
    {
        "fault": "thousands_separator",
        "description": "Print run at 2,115.50 per unit read as 2.0; the posted amount misses the PO by thousands.",
        "input": {"id": "INV-60917", "task": "Process supplier invoice INV-60917 (Grafica Moderna)."},
    },
]

PASSING = [
    {"id": "INV-51002", "task": "Please post the catering invoice INV-51002."},
    {"id": "INV-51190", "task": "Book INV-51190 from Papelaria Lusa."},
    {"id": "INV-52277", "task": "AP: SecureKey invoice INV-52277 arrived, book it please."},
    {"id": "INV-53015", "task": "Post the cleaning invoice INV-53015 for June."},
    {"id": "INV-53300", "task": "Translation invoice INV-53300 needs booking."},
]


@trajdebug.step(kind="tool")
def fetch_invoice_document(invoice_id: str) -> str:
    inv = INVOICES[invoice_id]
    rows = "\n".join(f"  {d:<32} {q:>3} x {p:>10} EUR" for d, q, p in inv["lines"])
    return (
        f"{inv['vendor']}\nINVOICE {invoice_id}    Your order: {inv['po']}\n\n{rows}\n\n"
        f"  VAT {int(inv['vat'] * 100)}% applies. Payment within 30 days.\n"
    )


@trajdebug.step(kind="llm")
def extract_invoice(document: str) -> str:
    """Scripted extraction model: returns the fields as printed (amounts stay strings)."""
    llm_meta()
    head = document.splitlines()
    inv_id = head[1].split()[1]
    inv = INVOICES[inv_id]
    return json.dumps(
        {
            "vendor": inv["vendor"],
            "invoice_number": inv_id,
            "po_number": inv["po"],
            "vat_rate": f"{int(inv['vat'] * 100)}%",
            "lines": [{"description": d, "quantity": str(q), "unit_price": p} for d, q, p in inv["lines"]],
        }
    )


def _to_amount(text: str) -> float:
    text = text.strip()
    if on("thousands_separator"):
        m = re.match(r"[0-9.]+", text)  # stops at ','
        if "," in text:
            mark_root()
        return float(m.group(0))
    return float(text.replace(",", ""))


@trajdebug.step(kind="parse")
def parse_amounts(extraction: str) -> dict:
    data = json.loads(extraction)
    lines = [
        {
            "description": ln["description"],
            "quantity": int(ln["quantity"]),
            "unit_price": _to_amount(ln["unit_price"]),
        }
        for ln in data["lines"]
    ]
    return {
        "vendor": data["vendor"],
        "invoice_number": data["invoice_number"],
        "po_number": data["po_number"],
        "vat_rate": float(data["vat_rate"].rstrip("%")) / 100,
        "lines": lines,
    }


@trajdebug.step(kind="other")
def compute_totals(invoice: dict) -> dict:
    sub = round(sum(ln["quantity"] * ln["unit_price"] for ln in invoice["lines"]), 2)
    vat = round(sub * invoice["vat_rate"], 2)
    mark_flow()
    return {"subtotal": sub, "vat": vat, "total": round(sub + vat, 2)}


@trajdebug.step(kind="tool")
def post_to_ap(invoice: dict, totals: dict) -> dict:
    mark_flow()
    return {
        "document": f"AP-{invoice['invoice_number'][4:]}",
        "vendor": invoice["vendor"],
        "po_number": invoice["po_number"],
        "amount": totals["total"],
        "status": "posted",
    }


@trajdebug.step(kind="tool")
def get_purchase_order(po_number: str) -> dict:
    inv_id = next(k for k, v in INVOICES.items() if v["po"] == po_number)
    return {"po_number": po_number, "approved_amount": po_amount(inv_id), "currency": "EUR"}


@trajdebug.step(kind="condition")
def reconcile_with_po(posting: dict, po: dict) -> bool:
    diff = round(posting["amount"] - po["approved_amount"], 2)
    if abs(diff) > 0.01:
        mark_failure()
        raise POReconciliationError(
            f"{posting['document']} posted {posting['amount']:.2f} EUR, {po['po_number']} approved "
            f"{po['approved_amount']:.2f} EUR (difference {diff:+.2f})"
        )
    return True


def run_agent(inp: dict, run) -> str:
    doc = fetch_invoice_document(inp["id"])
    invoice = parse_amounts(extract_invoice(doc))
    totals = compute_totals(invoice)
    posting = post_to_ap(invoice, totals)
    reconcile_with_po(posting, get_purchase_order(invoice["po_number"]))
    return posting["document"]
