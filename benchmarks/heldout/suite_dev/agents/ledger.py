"""Bookkeeping agent: imports the sales export, classifies entries, posts the journal, closes the month."""

from __future__ import annotations

import json
import re

import trajdebug

from .common import llm_meta, mark_failure, mark_flow, mark_root, on


NAME = "ledger-close"
SUMMARY = "Imports a month's sales/refund export, lets an LLM pick GL accounts, posts the journal and reconciles with the bank movement."
FAULTS = {
    "refund_sign_dropped": "the export parser's amount pattern drops a leading minus sign, so a refund is booked as income",
}


class PeriodCloseError(Exception):
    """The ledger's net movement does not match the bank's."""


EXPORTS = {
    "2025-01": [
        ("INV-1041", "SALE", "Garcia Lda", "1,200.00"),
        ("INV-1042", "SALE", "Nunes & Filhos", "845.50"),
        ("RF-0091", "REFUND", "Costa Design", "-180.00"),
        ("INV-1043", "SALE", "Ortiz SL", "2,310.00"),
    ],
    "2025-02": [
        ("INV-1050", "SALE", "Lopes Arquitetos", "3,100.00"),
        ("RF-0094", "REFUND", "Garcia Lda", "-1,200.00"),
        ("INV-1051", "SALE", "Ferreira Lda", "640.00"),
    ],
    "2025-03": [
        ("INV-1060", "SALE", "Almeida Textil", "980.00"),
        ("INV-1061", "SALE", "Costa Design", "1,450.00"),
        ("INV-1062", "SALE", "Nunes & Filhos", "220.00"),
        ("RF-0097", "REFUND", "Almeida Textil", "-75.25"),
    ],
    "2025-04": [("INV-1070", "SALE", "Ortiz SL", "1,980.00"), ("INV-1071", "SALE", "Ferreira Lda", "410.00")],
    "2025-05": [
        ("INV-1080", "SALE", "Garcia Lda", "760.00"),
        ("RF-0101", "REFUND", "Ferreira Lda", "-60.00"),
        ("INV-1081", "SALE", "Lopes Arquitetos", "2,045.90"),
    ],
    "2025-06": [
        ("INV-1090", "SALE", "Nunes & Filhos", "1,120.00"),
        ("INV-1091", "SALE", "Almeida Textil", "95.00"),
        ("INV-1092", "SALE", "Ortiz SL", "3,300.00"),
    ],
    "2025-07": [
        ("RF-0105", "REFUND", "Ortiz SL", "-300.00"),
        ("INV-1100", "SALE", "Costa Design", "1,875.00"),
    ],
    "2025-08": [
        ("INV-1110", "SALE", "Ferreira Lda", "530.00"),
        ("INV-1111", "SALE", "Garcia Lda", "1,640.00"),
        ("RF-0108", "REFUND", "Nunes & Filhos", "-44.90"),
        ("INV-1112", "SALE", "Lopes Arquitetos", "99.00"),
    ],
}


def _amt(s: str) -> float:
    return float(s.replace(",", ""))


def bank_net(period: str) -> float:
    return round(sum(_amt(a) for *_, a in EXPORTS[period]), 2)


FAILING = [
    {
        "fault": "refund_sign_dropped",
        "description": "January close: the Costa Design refund (-180.00) is parsed as +180.00, classified and posted as income; the ledger net is 360.00 above the bank's and the close fails.",
        "input": {
            "id": "2025-01",
            "task": "Close January 2025 for Lusitania Trading: import the sales export and reconcile.",
        },
    },
    {
        "fault": "refund_sign_dropped",
        "description": "February close: a full 1,200.00 refund becomes income; the posted journal nets 2,400.00 too high; the month cannot close.",
        "input": {"id": "2025-02", "task": "Please do the February books and reconcile with the bank."},
    },
    {
        "fault": "refund_sign_dropped",
        "description": "March close: a small 75.25 refund loses its sign; the bank reconciliation is off by 150.50.",
        "input": {
            "id": "2025-03",
            "task": "Month-end for March: post the export, check against the bank movement.",
        },
    },
]

PASSING = [
    {"id": "2025-04", "task": "Close April (sales export attached)."},
    {"id": "2025-05", "task": "May month-end close please, includes a refund to Ferreira."},
    {"id": "2025-06", "task": "Book June and reconcile."},
    {"id": "2025-07", "task": "July close - there's one refund for Ortiz."},
    {"id": "2025-08", "task": "August books: import, post, reconcile with the bank."},
]


@trajdebug.step(kind="tool")
def download_export(period: str) -> str:
    lines = [f"# sales export {period}", "doc;type;party;amount_eur"]
    lines += [";".join(r) for r in EXPORTS[period]]
    return "\n".join(lines) + "\n"


AMOUNT_OK = re.compile(r"-?[\d,]+\.\d{2}")
AMOUNT_BUGGY = re.compile(r"[\d,]+\.\d{2}")


@trajdebug.step(kind="parse")
def parse_export(text: str) -> list:
    pattern = AMOUNT_BUGGY if on("refund_sign_dropped") else AMOUNT_OK
    entries = []
    for line in text.splitlines()[2:]:
        doc, typ, party, raw = line.split(";")
        value = _amt(pattern.search(raw).group(0))
        if raw.startswith("-") and value > 0:
            mark_root()
        entries.append({"doc": doc, "type": typ, "party": party, "amount": value})
    return entries


@trajdebug.step(kind="llm")
def suggest_accounts(prompt: str) -> str:
    llm_meta()
    out = {}
    for line in prompt.splitlines():
        m = re.match(r"- (\S+) \((\w+)\)", line)
        if m:
            out[m.group(1)] = "7111 Sales - services" if m.group(2) == "SALE" else "7181 Returns and refunds"
    return json.dumps(out)


@trajdebug.step(kind="parse")
def build_journal(entries: list, account_map: str) -> list:
    accounts = json.loads(account_map)
    journal = []
    for e in entries:
        journal.append(
            {
                "doc": e["doc"],
                "account": accounts[e["doc"]].split()[0],
                "party": e["party"],
                "credit": e["amount"],
            }
        )
    mark_flow()
    return journal


@trajdebug.step(kind="tool")
def post_journal(period: str, lines: list) -> dict:
    net = round(sum(ln["credit"] for ln in lines), 2)
    mark_flow()
    return {
        "period": period,
        "posted_lines": len(lines),
        "net_movement": net,
        "batch": f"GL-{period.replace('-', '')}",
    }


@trajdebug.step(kind="tool")
def bank_movement(period: str) -> dict:
    return {"period": period, "net": bank_net(period), "account": "PT50 0035 0000 1234"}


@trajdebug.step(kind="condition")
def close_period(posting: dict, bank: dict) -> str:
    if abs(posting["net_movement"] - bank["net"]) > 0.005:
        mark_failure()
        raise PeriodCloseError(
            f"cannot close {posting['period']}: ledger net {posting['net_movement']:+,.2f} vs bank {bank['net']:+,.2f}"
        )
    return f"{posting['period']} closed"


def run_agent(inp: dict, run) -> str:
    entries = parse_export(download_export(inp["id"]))
    prompt = "Assign a GL account to each entry:\n" + "\n".join(
        f"- {e['doc']} ({e['type']}) {e['party']}" for e in entries
    )
    journal = build_journal(entries, suggest_accounts(prompt))
    posting = post_journal(inp["id"], journal)
    return close_period(posting, bank_movement(inp["id"]))
