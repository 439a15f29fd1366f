"""ap-invoice-matcher: an accounts-payable agent doing a three-way match (invoice, purchase order,
goods receipt) before posting the invoice to the ERP.  Recorded with the trajdebug SDK; the model is a
plain Python function that reads the invoice e-mail the way an extraction model would."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import Any

from suite_common import FAULT, Agent, Case, Loc

import trajdebug


NAME = "ap-invoice-matcher"

INBOX = {
    "INV-88213": (
        "billing@nordlicht-buero.de",
        "Invoice 88213 for your order",
        "Dear customer,\nplease find our invoice 88213 attached.\nPO reference: PO-7731\n"
        "Invoice date: 2025-03-04\nInvoice total: 12,480.00 EUR (VAT reverse charge)\n"
        "Payment terms: 30 days net.\nKind regards, Nordlicht Büroausstattung GmbH",
    ),
    "INV-55102": (
        "accounts@thamesfixings.co.uk",
        "Invoice TF-55102",
        "Hello,\nInvoice TF-55102 covers the anchor bolts shipped on 11 Feb.\nYour PO: PO-5260\n"
        "Invoice date: 2025-02-14\nAmount due: 3,920.50 GBP\nBank: Barclays, sort code 20-00-00\n"
        "Thames Fixings Ltd",
    ),
    "INV-61007": (
        "ar@prairie-pallets.com",
        "Prairie Pallets invoice 61007",
        "Hi AP team,\nInvoice 61007 - PO-4418 - 400 heat-treated pallets.\nInvoice date: 2025-03-18\n"
        "Total: 9,600.00 USD\nThanks, Prairie Pallets Inc.",
    ),
    "INV-70345": (
        "invoices@coastal-cartons.com",
        "Invoice 70345 (final delivery)",
        "Invoice 70345 for PO-6022, second and final delivery of shipping cartons.\n"
        "Invoice date: 2025-03-21\nTotal: 5,580.00 USD\nCoastal Cartons Co.",
    ),
    # passing inputs
    "INV-90112": (
        "billing@lumen-labels.com",
        "Invoice 90112",
        "Invoice 90112 for PO-3105 (thermal labels).\nInvoice date: 2025-01-09\nTotal: 845.00 USD\n"
        "Lumen Labels",
    ),
    "INV-90154": (
        "facturation@atelier-rive.fr",
        "Facture 90154 / invoice 90154",
        "Invoice 90154, PO reference: PO-3390.\nInvoice date: 2025-02-03\nInvoice total: 2,150.00 EUR\n"
        "Atelier Rive SARL",
    ),
    "INV-90177": (
        "ar@summit-forklifts.com",
        "Service invoice 90177",
        "Service invoice 90177 for PO-2871: quarterly forklift maintenance.\nInvoice date: 2025-02-27\n"
        "Total: 18,300.00 USD\nSummit Forklift Services",
    ),
    "INV-90203": (
        "accounts@pennine-packaging.co.uk",
        "Invoice PP-90203",
        "Invoice PP-90203\nYour PO: PO-3544\nInvoice date: 2025-03-10\nAmount due: 640.00 GBP\n"
        "Pennine Packaging",
    ),
    "INV-90240": (
        "billing@nordlicht-buero.de",
        "Invoice 90240",
        "Invoice 90240 for office chairs.\nPO reference: PO-3618\nInvoice date: 2025-03-12\n"
        "Invoice total: 7,035.00 EUR\nNordlicht Büroausstattung GmbH",
    ),
}

PURCHASE_ORDERS = {
    "PO-7731": {"vendor": "Nordlicht Büroausstattung GmbH", "vendor_id": "V-2201", "amount_usd": 13540.00,
                "lines": [{"sku": "DESK-180", "qty": 20, "unit_usd": 677.00}]},
    "PO-7713": {"vendor": "Cascade Janitorial LLC", "vendor_id": "V-1187", "amount_usd": 2210.00,
                "lines": [{"sku": "JAN-SVC-Q1", "qty": 1, "unit_usd": 2210.00}]},
    "PO-5260": {"vendor": "Thames Fixings Ltd", "vendor_id": "V-3310", "amount_usd": 4979.00,
                "lines": [{"sku": "ANCH-M12", "qty": 3500, "unit_usd": 1.4226}]},
    "PO-4418": {"vendor": "Prairie Pallets Inc.", "vendor_id": "V-0904", "amount_usd": 9600.00,
                "lines": [{"sku": "PAL-HT-48", "qty": 400, "unit_usd": 24.00}]},
    "PO-4481": {"vendor": "Granite State Freight", "vendor_id": "V-0419", "amount_usd": 1875.00,
                "lines": [{"sku": "FRT-LTL", "qty": 5, "unit_usd": 375.00}]},
    "PO-6022": {"vendor": "Coastal Cartons Co.", "vendor_id": "V-2760", "amount_usd": 5580.00,
                "lines": [{"sku": "CTN-24x18", "qty": 6000, "unit_usd": 0.93}]},
    "PO-3105": {"vendor": "Lumen Labels", "vendor_id": "V-1555", "amount_usd": 845.00,
                "lines": [{"sku": "LBL-4x6", "qty": 130, "unit_usd": 6.50}]},
    "PO-3390": {"vendor": "Atelier Rive SARL", "vendor_id": "V-2980", "amount_usd": 2330.60,
                "lines": [{"sku": "SIGN-PNL", "qty": 4, "unit_usd": 582.65}]},
    "PO-2871": {"vendor": "Summit Forklift Services", "vendor_id": "V-0766", "amount_usd": 18300.00,
                "lines": [{"sku": "SVC-FL-Q", "qty": 1, "unit_usd": 18300.00}]},
    "PO-3544": {"vendor": "Pennine Packaging", "vendor_id": "V-3121", "amount_usd": 812.80,
                "lines": [{"sku": "BOX-DW", "qty": 800, "unit_usd": 1.016}]},
    "PO-3618": {"vendor": "Nordlicht Büroausstattung GmbH", "vendor_id": "V-2201", "amount_usd": 7626.00,
                "lines": [{"sku": "CHAIR-ERG", "qty": 30, "unit_usd": 254.20}]},
}

# goods received notes: quantities booked in at the dock
RECEIPTS = {
    "PO-7731": [{"sku": "DESK-180", "qty": 20, "grn": "GRN-4410"}],
    "PO-7713": [{"sku": "JAN-SVC-Q1", "qty": 1, "grn": "GRN-4102"}],
    "PO-5260": [{"sku": "ANCH-M12", "qty": 3500, "grn": "GRN-4388"}],
    "PO-4418": [{"sku": "PAL-HT-48", "qty": 400, "grn": "GRN-4501"}],
    "PO-4481": [{"sku": "FRT-LTL", "qty": 5, "grn": "GRN-4477"}],
    "PO-6022": [{"sku": "CTN-24x18", "qty": 3000, "grn": "GRN-4490"}, {"sku": "CTN-24x18", "qty": 3000, "grn": "GRN-4533"}],
    "PO-3105": [{"sku": "LBL-4x6", "qty": 130, "grn": "GRN-4011"}],
    "PO-3390": [{"sku": "SIGN-PNL", "qty": 4, "grn": "GRN-4230"}],
    "PO-2871": [{"sku": "SVC-FL-Q", "qty": 1, "grn": "GRN-4302"}],
    "PO-3544": [{"sku": "BOX-DW", "qty": 800, "grn": "GRN-4455"}],
    "PO-3618": [{"sku": "CHAIR-ERG", "qty": 30, "grn": "GRN-4460"}],
}
# what the receiving system's read replica held before the last dock scans were replicated
RECEIPT_SNAPSHOT = {"PO-6022": [{"sku": "CTN-24x18", "qty": 3000, "grn": "GRN-4490"}]}

FX = {("EUR", "USD"): 1.085, ("GBP", "USD"): 1.270, ("USD", "USD"): 1.0}

TOLERANCE = 0.01  # 1 % price tolerance on the three-way match


class ERPPostingError(RuntimeError):
    pass


# -- the model ------------------------------------------------------------------------------


def fake_extraction_model(messages: list[dict[str, str]]) -> str:
    """What the extraction model answers: the invoice's header fields as JSON text."""
    body = messages[-1]["content"]
    po = re.search(r"PO[- ]?(\d{4})", body)
    total = re.search(r"(?:Invoice total|Amount due|Total):\s*([\d,]+\.\d\d)\s*([A-Z]{3})", body)
    date = re.search(r"Invoice date:\s*(\d{4}-\d\d-\d\d)", body)
    vendor = body.strip().splitlines()[-1].replace("Kind regards, ", "").replace("Thanks, ", "")
    po_number = f"PO-{po.group(1)}" if po else None
    if FAULT.on("misread_po") and po_number == "PO-4418":
        po_number = "PO-4481"  # two digits transposed
    fields = {
        "vendor": vendor,
        "po_number": po_number,
        "invoice_date": date.group(1) if date else None,
        "total": total.group(1) if total else None,
        "currency": total.group(2) if total else None,
    }
    return "```json\n" + json.dumps(fields, ensure_ascii=False) + "\n```"


# -- the agent's steps ------------------------------------------------------------------------


@trajdebug.step(kind="tool")
def fetch_invoice_email(invoice_id: str) -> dict[str, str]:
    sender, subject, body = INBOX[invoice_id]
    return {"from": sender, "subject": subject, "body": body}


@trajdebug.step(kind="llm")
def extract_invoice_fields(messages: list[dict[str, str]]) -> str:
    return fake_extraction_model(messages)


def _amount(text: str) -> float:
    if FAULT.on("thousands_stop"):
        m = re.match(r"\d+(?:\.\d+)?", text)  # the old parser: digits up to the first separator
        return float(m.group(0)) if m else 0.0
    return float(text.replace(",", ""))


@trajdebug.step(kind="parse")
def parse_invoice_fields(raw: str) -> dict[str, Any]:
    text = raw.strip().removeprefix("```json").removesuffix("```").strip()
    data = json.loads(text)
    return {
        "vendor": data["vendor"],
        "po_number": data["po_number"],
        "invoice_date": data["invoice_date"],
        "currency": data["currency"],
        "total": _amount(data["total"]),
    }


@trajdebug.step(kind="tool")
def get_purchase_order(po_number: str) -> dict[str, Any]:
    po = PURCHASE_ORDERS.get(po_number)
    if po is None:
        raise KeyError(f"no purchase order {po_number}")
    return {"po_number": po_number, **po}


@trajdebug.step(kind="tool")
def get_fx_rate(base: str, quote: str, on_date: str) -> dict[str, Any]:
    rate = FX[(base, quote)]
    if FAULT.on("inverted_rate") and base == "GBP":
        rate = round(1 / rate, 4)  # the rates feed publishes USD->GBP; this adapter forgot to invert
    return {"pair": f"{base}/{quote}", "date": on_date, "rate": rate}


@trajdebug.step(kind="other")
def convert_to_usd(amount: float, fx: dict[str, Any]) -> float:
    return round(amount * fx["rate"], 2)


@trajdebug.step(kind="tool")
def get_goods_receipts(po_number: str) -> list[dict[str, Any]]:
    if FAULT.on("stale_receipts") and po_number in RECEIPT_SNAPSHOT:
        return [dict(r) for r in RECEIPT_SNAPSHOT[po_number]]  # served from the read replica
    return [dict(r) for r in RECEIPTS.get(po_number, [])]


@trajdebug.step(kind="other")
def value_receipts(receipts: list[dict[str, Any]], po: dict[str, Any]) -> float:
    unit = {line["sku"]: line["unit_usd"] for line in po["lines"]}
    return round(sum(r["qty"] * unit.get(r["sku"], 0.0) for r in receipts), 2)


@trajdebug.step(kind="other")
def reconcile(invoice: dict[str, Any], po: dict[str, Any], invoice_usd: float, received_usd: float) -> dict[str, Any]:
    po_var = (invoice_usd - po["amount_usd"]) / po["amount_usd"]
    grn_var = (invoice_usd - received_usd) / received_usd if received_usd else 1.0
    return {
        "invoice": invoice["po_number"],
        "vendor_id": po["vendor_id"],
        "invoice_usd": invoice_usd,
        "po_usd": po["amount_usd"],
        "received_usd": received_usd,
        "po_variance": round(po_var, 4),
        "receipt_variance": round(grn_var, 4),
        "within_tolerance": abs(po_var) <= TOLERANCE and abs(grn_var) <= TOLERANCE,
    }


@trajdebug.step(kind="tool")
def post_to_erp(match: dict[str, Any], due_date: str) -> dict[str, str]:
    # the ERP runs its own match and refuses postings it cannot reconcile
    if abs(match["receipt_variance"]) > TOLERANCE:
        raise ERPPostingError("ERP rejected the posting: invoiced value is not covered by goods received")
    if abs(match["po_variance"]) > TOLERANCE:
        raise ERPPostingError("ERP rejected the posting: price variance against the purchase order exceeds tolerance")
    return {"document": f"AP-{match['invoice'][-4:]}-{due_date.replace('-', '')}", "status": "posted"}


@trajdebug.step(kind="output")
def confirm(posting: dict[str, str], invoice: dict[str, Any]) -> str:
    return f"Invoice from {invoice['vendor']} posted as {posting['document']} ({posting['status']})."


def process_invoice(invoice_id: str) -> str:
    mail = fetch_invoice_email(invoice_id)
    prompt = [
        {"role": "system", "content": "Extract vendor, po_number, invoice_date, total (as printed) and currency "
                                      "from the invoice e-mail. Answer with JSON only."},
        {"role": "user", "content": mail["body"]},
    ]
    invoice = parse_invoice_fields(extract_invoice_fields(prompt))
    po = get_purchase_order(invoice["po_number"])
    fx = get_fx_rate(invoice["currency"], "USD", invoice["invoice_date"])
    invoice_usd = convert_to_usd(invoice["total"], fx)
    received = value_receipts(get_goods_receipts(invoice["po_number"]), po)
    match = reconcile(invoice, po, invoice_usd, received)
    posting = post_to_erp(match, invoice["invoice_date"])
    return confirm(posting, invoice)


@contextmanager
def session():
    def record(invoice_id: str, path: str) -> BaseException | None:
        try:
            with trajdebug.run(NAME, path=path, task=f"match and post {invoice_id}"):
                process_invoice(invoice_id)
        except ERPPostingError as exc:
            return exc
        return None

    yield record


AGENT = Agent(
    name=NAME,
    route="sdk",
    domain="accounts payable (supplier invoices)",
    summary="fetch the invoice e-mail, extract its header with a model, parse it, fetch the PO, convert the "
    "currency, value the goods receipts, reconcile, post to the ERP",
    features=["multi-currency", "three-way match"],
    passing=["INV-90112", "INV-90154", "INV-90177", "INV-90203", "INV-90240"],
    session=session,
    cases=[
        Case(
            "d-apinv-thousands",
            "INV-88213",
            "thousands_stop",
            "lossy_parsing",
            "The amount parser stops at the thousands separator: '12,480.00' EUR becomes 12.0; the USD value "
            "is then far below the PO and the goods received, and the ERP refuses the posting.",
            [Loc("parse_invoice_fields", 1, "12.0"), Loc("convert_to_usd"), Loc("reconcile"), Loc("post_to_erp")],
        ),
        Case(
            "d-apinv-gbp-rate",
            "INV-55102",
            "inverted_rate",
            "unit_error",
            "The FX adapter returns the USD->GBP rate (0.7874) for GBP->USD; the converted invoice is a third "
            "too low and the posting is refused.",
            [Loc("get_fx_rate", 1, "0.7874"), Loc("convert_to_usd"), Loc("reconcile"), Loc("post_to_erp")],
        ),
        Case(
            "d-apinv-po-misread",
            "INV-61007",
            "misread_po",
            "wrong_tool_args",
            "The extraction model transposes the PO number (PO-4418 read as PO-4481, a freight PO of another "
            "vendor); the match runs against the wrong order and the ERP refuses it.",
            [
                Loc("extract_invoice_fields", 1, "PO-4481"),
                Loc("parse_invoice_fields"),
                Loc("get_purchase_order", 1, "PO-4481"),
                Loc("reconcile"),
                Loc("post_to_erp"),
            ],
        ),
        Case(
            "d-apinv-stale-grn",
            "INV-70345",
            "stale_receipts",
            "stale_data",
            "The goods-receipt lookup is served from a lagging read replica that misses the second delivery "
            "(GRN-4533); half of the invoice looks unreceived and the ERP refuses the posting.",
            [Loc("get_goods_receipts", 1, "GRN-4490"), Loc("value_receipts"), Loc("reconcile"), Loc("post_to_erp")],
        ),
    ],
)
