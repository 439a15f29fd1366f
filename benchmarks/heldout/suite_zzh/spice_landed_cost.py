"""Spice importer (LangGraph): builds the customs entry and landed cost of an inbound spice shipment.

Shape: a StateGraph: load documents (invoice, bill of lading: tools) -> model extracts the invoice -> line
parser -> unit normalisation -> HS classification (a retriever per line) -> rates (tariff per line, FX) ->
compliance sub-graph (lab certificate per lot, model screens them) -> costs -> model drafts the entry note ->
`validate_entry` (the importer's entry rules).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import re
import sys
from pathlib import Path
from typing import Any, TypedDict


sys.path.insert(0, str(Path(__file__).resolve().parent))

import kit
from common import chat_messages, system_text, text_of


NAME = "spice-landed-cost"
ROUTE = "langgraph"
DOMAIN = "spice importer"
EXT = "jsonl"
SHAPE = ("StateGraph: documents (2 tools), LLM invoice extraction, output parser, unit normalisation, "
         "HS retriever per line, tariff tool per line (retried) + FX tool, compliance sub-graph (certificate tool per lot, "
         "LLM screen), costs, LLM entry note, validator node; 25-34 steps")

HS = [
    {"code": "0904.11", "text": "Pepper of the genus Piper, neither crushed nor ground",
     "names": ["pepper", "peppercorns", "black", "white"], "forms": ["whole"], "form": "whole", "duty": 0.0},
    {"code": "0904.12", "text": "Pepper of the genus Piper, crushed or ground",
     "names": ["pepper", "black", "white"], "forms": ["ground", "crushed", "cracked"], "form": "ground", "duty": 0.0},
    {"code": "0904.21", "text": "Fruits of the genus Capsicum or Pimenta, dried, neither crushed nor ground",
     "names": ["paprika", "chili", "chile", "capsicum", "allspice"], "forms": ["dried", "whole", "pods"],
     "form": "whole", "duty": 0.05},
    {"code": "0904.22", "text": "Fruits of the genus Capsicum or Pimenta, crushed or ground",
     "names": ["paprika", "chili", "chile", "capsicum", "allspice"],
     "forms": ["ground", "crushed", "flakes", "powder"], "form": "ground", "duty": 0.03},
    {"code": "0905.10", "text": "Vanilla, neither crushed nor ground",
     "names": ["vanilla"], "forms": ["beans", "pods", "whole"], "form": "whole", "duty": 0.0},
    {"code": "0906.11", "text": "Cinnamon (Cinnamomum zeylanicum Blume), neither crushed nor ground",
     "names": ["cinnamon", "ceylon"], "forms": ["quills", "sticks", "whole"], "form": "whole", "duty": 0.0},
    {"code": "0906.19", "text": "Other cinnamon and cinnamon-tree flowers, neither crushed nor ground",
     "names": ["cassia", "cinnamon"], "forms": ["sticks", "whole", "bark"], "form": "whole", "duty": 0.0},
    {"code": "0906.20", "text": "Cinnamon and cinnamon-tree flowers, crushed or ground",
     "names": ["cinnamon", "cassia", "ceylon"], "forms": ["ground", "powder"], "form": "ground", "duty": 0.0},
    {"code": "0908.11", "text": "Nutmeg, neither crushed nor ground",
     "names": ["nutmeg"], "forms": ["whole"], "form": "whole", "duty": 0.0},
    {"code": "0908.12", "text": "Nutmeg, crushed or ground",
     "names": ["nutmeg"], "forms": ["ground"], "form": "ground", "duty": 0.0},
    {"code": "0908.31", "text": "Cardamoms, neither crushed nor ground",
     "names": ["cardamom", "cardamoms"], "forms": ["whole", "pods", "green", "seeds"], "form": "whole", "duty": 0.0},
    {"code": "0908.32", "text": "Cardamoms, crushed or ground",
     "names": ["cardamom", "cardamoms"], "forms": ["ground", "powder"], "form": "ground", "duty": 0.0},
    {"code": "0910.30", "text": "Turmeric (curcuma)", "names": ["turmeric", "curcuma"], "forms": [], "form": "any",
     "duty": 0.02},
    {"code": "0910.99", "text": "Other spices", "names": ["sumac", "bay", "fenugreek"], "forms": ["leaves"],
     "form": "any", "duty": 0.02},
]
HS_BY_CODE = {d["code"]: d for d in HS}
GROUND_WORDS = {"ground", "powder", "crushed", "flakes", "cracked"}
WHOLE_WORDS = {"whole", "sticks", "pods", "quills", "beans", "leaves", "seeds"}

FX_BASE = {"EUR": 1.0812, "INR": 0.011968, "TRY": 0.030262, "LKR": 0.003329, "USD": 1.0}


def fx_on(currency: str, date: str) -> float:
    """The published rate of a currency on a date (USD per unit)."""
    if currency == "USD":
        return 1.0
    day = dt.date.fromisoformat(date).timetuple().tm_yday
    return round(FX_BASE[currency] * (1 + ((day * 37) % 41 - 20) / 1000), 6)


FX_CACHE = {"TRY": "2024-05-02", "EUR": "2024-04-22"}  # the board loaded at the start of the week


def _ship(sid, supplier, origin, currency, date, bol_date, gross_kg, freight, lines, written_date=None):
    total = round(sum(a for _, _, _, _, a in lines), 2)
    return {"shipment_id": sid, "supplier": supplier, "origin": origin, "currency": currency, "date": date,
            "written_date": written_date or date, "bol_date": bol_date, "gross_kg": gross_kg,
            "freight_usd": freight, "total": total,
            "lines": [{"lot": lot, "description": d, "qty": q, "unit": u, "amount": a} for lot, d, q, u, a in lines]}


SHIPMENTS = {
    "SHP-2407": _ship("SHP-2407", "Cobán Spice Export S.A.", "GT", "USD", "2024-07-15", "2024-07-18", 1320, 1850.0,
                      [("CB-71", "green cardamom, whole pods", 1650, "lb", 29700.0),
                       ("CB-72", "cardamom seeds, whole", 1100, "lb", 23100.0)]),
    "SHP-2403": _ship("SHP-2403", "Pimentones de la Vera S.L.", "ES", "EUR", "2024-04-22", "2024-04-25", 2150, 2400.0,
                      [("PX-11", "smoked paprika, ground", 1200, "kg", 5400.0),
                       ("PX-12", "sweet paprika, ground (organic)", 800, "kg", 4280.0)]),
    "SHP-2406": _ship("SHP-2406", "Malabar Coast Traders", "IN", "INR", "2024-06-14", "2024-06-19", 3300, 3100.0,
                      [("MC-31", "black pepper, whole", 1500, "kg", 1012500.0),
                       ("MC-32", "turmeric, ground", 1000, "kg", 215000.0),
                       ("MC-33", "chili flakes, crushed", 600, "kg", 174000.0)]),
    "SHP-2408": _ship("SHP-2408", "Antep Baharat Ltd.", "TR", "TRY", "2024-07-09", "2024-07-12", 1450, 1650.0,
                      [("AB-81", "sumac, ground", 500, "kg", 110000.0),
                       ("AB-82", "aleppo chili flakes", 400, "kg", 128000.0),
                       ("AB-83", "bay leaves, whole", 450, "kg", 76500.0)]),
    "SHP-2402": _ship("SHP-2402", "Pimentones de la Vera S.L.", "ES", "EUR", "2024-03-07", "2024-03-12", 1600, 2100.0,
                      [("PX-05", "hot paprika, ground", 900, "kg", 4410.0),
                       ("PX-06", "smoked paprika, ground", 600, "kg", 2700.0)], written_date="07/03/2024"),
    # reference shipments
    "SHP-2311": _ship("SHP-2311", "Ceylon Quills (Pvt) Ltd.", "LK", "LKR", "2024-04-03", "2024-04-08", 980, 1500.0,
                      [("CQ-01", "ceylon cinnamon quills, whole", 600, "kg", 2880000.0),
                       ("CQ-02", "ceylon cinnamon, ground", 300, "kg", 1170000.0)]),
    "SHP-2315": _ship("SHP-2315", "Mekong Cassia Co.", "VN", "USD", "2024-05-20", "2024-05-24", 2200, 2650.0,
                      [("MK-11", "cassia cinnamon sticks", 1400, "kg", 5880.0),
                       ("MK-12", "cassia cinnamon, ground", 600, "kg", 2940.0)]),
    "SHP-2319": _ship("SHP-2319", "Cobán Spice Export S.A.", "GT", "USD", "2024-06-03", "2024-06-06", 760, 1200.0,
                      [("CB-55", "green cardamom, whole pods", 1200, "lb", 21600.0),
                       ("CB-56", "cardamom, ground", 300, "lb", 7200.0)]),
    "SHP-2322": _ship("SHP-2322", "Antep Baharat Ltd.", "TR", "TRY", "2024-08-19", "2024-08-22", 1250, 1500.0,
                      [("AB-91", "aleppo chili flakes", 600, "kg", 198000.0),
                       ("AB-92", "fenugreek seeds, whole", 500, "kg", 60000.0)]),
}
CERTS = {lot["lot"]: {"lot": lot["lot"], "aflatoxin_b1_ppb": 1.1 + (i % 3) * 0.7, "ochratoxin_a_ppb": 3.0 + i % 4,
                      "salmonella_25g": "absent", "lab": "Eurofins Hamburg" if i % 2 else "SGS Cochin"}
         for i, lot in enumerate(ln for s in SHIPMENTS.values() for ln in s["lines"])}

CASES = [
    {"case": "zzh_spic_01", "switch": "spice.lb_factor", "input": "SHP-2407", "fault_kind": "unit_error",
     "root": ("normalize_units", 1), "failure": ("validate_entry", 1),
     "description": "Unit normalisation leaves the Guatemalan invoice's pound quantities as kilograms, so the "
                    "entry declares 2,750 kg net against a 1,320 kg gross bill of lading."},
    {"case": "zzh_spic_02", "switch": "spice.line_pattern", "input": "SHP-2403", "fault_kind": "lossy_parsing",
     "root": ("invoice_line_parser", 1), "failure": ("validate_entry", 1),
     "description": "The invoice line parser's description pattern does not admit parentheses and silently skips "
                    "lot PX-12 'sweet paprika, ground (organic)'."},
    {"case": "zzh_spic_03", "switch": "spice.hits_order", "input": "SHP-2406", "fault_kind": "wrong_retrieval",
     "root": ("hs_code_search", 3), "failure": ("validate_entry", 1),
     "description": "The HS search returns its hits in index order instead of by score, so 'chili flakes, crushed' "
                    "gets heading 0904.21 (neither crushed nor ground) instead of 0904.22."},
    {"case": "zzh_spic_04", "switch": "spice.fx_board", "input": "SHP-2408", "fault_kind": "stale_data",
     "root": ("fx_rate", 1), "failure": ("validate_entry", 1),
     "description": "The FX tool answers from last week's rate board, giving the TRY rate of 2024-05-02 for an "
                    "invoice dated 2024-07-09."},
    {"case": "zzh_spic_05", "switch": "spice.date_style", "input": "SHP-2402", "fault_kind": "format_drift",
     "root": ("ChatOpenAI", 1), "failure": ("validate_entry", 1),
     "description": "The extraction model copies the Spanish invoice date as 07/03/2024 instead of ISO, and the "
                    "parser reads it month-first as 2024-07-03, after the 2024-03-12 bill of lading."},
]
REFS = ["SHP-2311", "SHP-2315", "SHP-2319", "SHP-2322"]


FLAKY_TARIFF_ORIGINS = {"IN", "TR"}  # origins whose tariff look-ups drop the first connection
_CALLS: dict[str, int] = {}


class EntryRejected(Exception):
    """The customs entry breaks an entry rule."""


def _money(x: float) -> str:
    return f"{x:,.2f}"


def _qty(x: float) -> str:
    return f"{x:,.0f}"


def invoice_text(s: dict) -> str:
    rows = "\n".join(f"  {ln['lot']}  {ln['description']:<36} {_qty(ln['qty'])} {ln['unit']}  {_money(ln['amount'])}"
                     for ln in s["lines"])
    return (f"COMMERCIAL INVOICE {s['shipment_id']}-INV\nSeller: {s['supplier']} ({s['origin']})\n"
            f"Date: {s['written_date']}\nCurrency: {s['currency']}\n{rows}\nTOTAL {s['currency']} {_money(s['total'])}\n")


# -- the model ------------------------------------------------------------------------------------------


def brain(request: Any) -> str:
    messages = chat_messages(request)
    system = system_text(messages)
    user = text_of(messages[-1])
    if system.startswith("You extract commercial invoices"):
        sid = re.search(r"COMMERCIAL INVOICE (SHP-\d+)-INV", user).group(1)
        s = SHIPMENTS[sid]
        date = s["written_date"] if kit.on("spice.date_style") else s["date"]
        out = [f"INVOICE {sid}-INV | DATE {date} | CURRENCY {s['currency']} | TOTAL {_money(s['total'])}"]
        for ln in s["lines"]:
            out.append(f"LOT {ln['lot']} | {ln['description']} | {_qty(ln['qty'])} {ln['unit']} | {_money(ln['amount'])}")
        return "\n".join(out)
    if system.startswith("You screen lab certificates"):
        certs = json.loads(user)["certificates"]
        held = [c["lot"] for c in certs if c["aflatoxin_b1_ppb"] > 5 or c["salmonella_25g"] != "absent"]
        return json.dumps({"cleared": [c["lot"] for c in certs if c["lot"] not in held], "held": held})
    if system.startswith("You write customs entry notes"):
        entry = json.loads(user)
        return (f"Entry for {entry['shipment_id']}: {len(entry['lines'])} lines, customs value "
                f"USD {_money(entry['customs_value_usd'])}, duty USD {_money(entry['duty_usd'])}.")
    return "Unsupported request."


# -- graph ---------------------------------------------------------------------------------------------------


class Entry(TypedDict, total=False):
    shipment_id: str
    invoice_text: str
    bol: dict
    extraction: str
    invoice: dict
    lines: list
    classified: list
    rates: dict
    screening: dict
    costs: dict
    note: str


class CompState(TypedDict, total=False):
    lots: list
    certificates: list
    screening: dict


def build(llm: Any) -> Any:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.output_parsers import BaseOutputParser
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import tool
    from langgraph.graph import END, START, StateGraph

    @tool
    def fetch_invoice(shipment_id: str) -> str:
        """The supplier's commercial invoice for a shipment, as scanned text."""
        return invoice_text(SHIPMENTS[shipment_id])

    @tool
    def fetch_bill_of_lading(shipment_id: str) -> dict:
        """The bill of lading: date, gross weight, freight."""
        s = SHIPMENTS[shipment_id]
        return {"bol_no": f"BL-{shipment_id[4:]}-01", "date": s["bol_date"], "gross_kg": s["gross_kg"],
                "freight_usd": s["freight_usd"], "origin": s["origin"]}

    @tool
    def tariff_rate(hs_code: str, origin: str) -> dict:
        """The ad valorem duty rate of an HS heading for an origin."""
        _CALLS["tariff"] = _CALLS.get("tariff", 0) + 1
        if origin in FLAKY_TARIFF_ORIGINS and _CALLS["tariff"] == 1:
            raise ConnectionError("tariff service: connection reset by peer")
        return {"hs_code": hs_code, "origin": origin, "ad_valorem": HS_BY_CODE[hs_code]["duty"]}

    tariff = tariff_rate.with_retry(stop_after_attempt=3, wait_exponential_jitter=False,
                                    retry_if_exception_type=(ConnectionError,))

    @tool
    def fx_rate(currency: str, date: str) -> dict:
        """USD per unit of a currency on a date (customs valuation rate)."""
        if kit.on("spice.fx_board") and currency in FX_CACHE:
            day = FX_CACHE[currency]
            return {"currency": currency, "date": day, "usd_per_unit": fx_on(currency, day)}
        return {"currency": currency, "date": date, "usd_per_unit": fx_on(currency, date)}

    @tool
    def lab_certificate(lot: str) -> dict:
        """The lab certificate of analysis for a lot."""
        return dict(CERTS[lot])

    class InvoiceLineParser(BaseOutputParser[dict]):
        """Reads the extraction's pipe-separated lines."""

        name: str = "invoice_line_parser"

        def parse(self, text: str) -> dict:
            head = re.match(r"INVOICE (\S+) \| DATE (\S+) \| CURRENCY (\w+) \| TOTAL ([\d,.]+)", text)
            date = head.group(2)
            for fmt in ("%Y-%m-%d", "%m/%d/%Y"):
                try:
                    date = dt.datetime.strptime(head.group(2), fmt).date().isoformat()
                    break
                except ValueError:
                    continue
            desc = r"[\w ,.'-]+" if kit.on("spice.line_pattern") else r"[^|]+?"
            line_re = re.compile(rf"^LOT (\S+) \| ({desc}) \| ([\d,.]+) (kg|lb) \| ([\d,.]+)$")
            lines = []
            for row in text.splitlines()[1:]:
                m = line_re.match(row.strip())
                if m:
                    lines.append({"lot": m.group(1), "description": m.group(2).strip(),
                                  "qty": float(m.group(3).replace(",", "")), "unit": m.group(4),
                                  "amount": float(m.group(5).replace(",", ""))})
            return {"invoice_no": head.group(1), "date": date, "currency": head.group(3),
                    "total": float(head.group(4).replace(",", "")), "lines": lines}

    class HsCodeSearch(BaseRetriever):
        """Keyword search over the HS chapter 09 headings."""

        name: str = "hs_code_search"
        k: int = 3

        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list:
            words = set(re.findall(r"[a-z]+", query.lower()))
            hits = []
            for d in HS:
                names = len(words & set(d["names"]))
                if names:
                    hits.append((2 * names + len(words & set(d["forms"])), d))
            if not kit.on("spice.hits_order"):
                hits.sort(key=lambda h: (-h[0], h[1]["code"]))
            return [Document(page_content=f"{d['code']} {d['text']}", metadata={"code": d["code"], "score": s})
                    for s, d in hits[: self.k]]

    parser = InvoiceLineParser()
    search = HsCodeSearch()

    def load_documents(state: Entry) -> dict:
        return {"invoice_text": fetch_invoice.invoke({"shipment_id": state["shipment_id"]}),
                "bol": fetch_bill_of_lading.invoke({"shipment_id": state["shipment_id"]})}

    def extract_invoice(state: Entry) -> dict:
        reply = llm.invoke([
            ("system", "You extract commercial invoices. One header line 'INVOICE <no> | DATE <date> | CURRENCY <c> | "
                       "TOTAL <amount>', then one line per lot 'LOT <lot> | <description> | <qty> <unit> | <amount>'."),
            ("user", state["invoice_text"]),
        ])
        return {"extraction": reply.content}

    def parse_invoice(state: Entry) -> dict:
        return {"invoice": parser.invoke(state["extraction"])}

    def normalize_units(state: Entry) -> dict:
        lines = []
        for ln in state["invoice"]["lines"]:
            factor = {"kg": 1.0, "lb": 0.45359237}[ln["unit"]]
            if kit.on("spice.lb_factor"):
                factor = 1.0
            lines.append({**ln, "net_kg": round(ln["qty"] * factor, 1)})
        return {"lines": lines}

    def classify_hs(state: Entry) -> dict:
        out = []
        for ln in state["lines"]:
            docs = search.invoke(ln["description"])
            out.append({**ln, "hs_code": docs[0].metadata["code"]})
        return {"classified": out}

    def rates(state: Entry) -> dict:
        origin = state["bol"]["origin"]
        duty = {ln["lot"]: tariff.invoke({"hs_code": ln["hs_code"], "origin": origin})["ad_valorem"]
                for ln in state["classified"]}
        fx = fx_rate.invoke({"currency": state["invoice"]["currency"], "date": state["invoice"]["date"]})
        return {"rates": {"duty": duty, "fx": fx}}

    def certificates(state: CompState) -> dict:
        return {"certificates": [lab_certificate.invoke({"lot": lot}) for lot in state["lots"]]}

    def screen(state: CompState) -> dict:
        reply = llm.invoke([
            ("system", "You screen lab certificates against EU limits (aflatoxin B1 5 ppb, salmonella absent in "
                       "25 g). Answer JSON {cleared, held}."),
            ("user", json.dumps({"certificates": state["certificates"]})),
        ])
        return {"screening": json.loads(reply.content)}

    comp = StateGraph(CompState)
    comp.add_node("certificates", certificates)
    comp.add_node("screen", screen)
    comp.add_edge(START, "certificates")
    comp.add_edge("certificates", "screen")
    comp.add_edge("screen", END)
    compliance_graph = comp.compile()

    def compliance(state: Entry) -> dict:
        got = compliance_graph.invoke({"lots": [ln["lot"] for ln in state["classified"]]})
        return {"screening": got["screening"]}

    def compute_costs(state: Entry) -> dict:
        fx = state["rates"]["fx"]["usd_per_unit"]
        total_kg = sum(ln["net_kg"] for ln in state["classified"]) or 1.0
        lines = []
        for ln in state["classified"]:
            value = round(ln["amount"] * fx, 2)
            duty = round(value * state["rates"]["duty"][ln["lot"]], 2)
            freight = round(state["bol"]["freight_usd"] * ln["net_kg"] / total_kg, 2)
            lines.append({**ln, "value_usd": value, "duty_usd": duty, "freight_usd": freight,
                          "landed_usd_per_kg": round((value + duty + freight) / ln["net_kg"], 3)})
        return {"costs": {"lines": lines, "customs_value_usd": round(sum(x["value_usd"] for x in lines), 2),
                          "duty_usd": round(sum(x["duty_usd"] for x in lines), 2)}}

    def draft_entry(state: Entry) -> dict:
        reply = llm.invoke([
            ("system", "You write customs entry notes for the broker."),
            ("user", json.dumps({"shipment_id": state["shipment_id"], **state["costs"]})),
        ])
        return {"note": reply.content}

    def validate_entry(state: Entry) -> dict:
        inv, bol, costs = state["invoice"], state["bol"], state["costs"]
        inv_date, bol_date = dt.date.fromisoformat(inv["date"]), dt.date.fromisoformat(bol["date"])
        if inv_date > bol_date or (bol_date - inv_date).days > 60:
            raise EntryRejected(f"invoice date {inv_date} does not precede the bill of lading date {bol_date} "
                                "by 0-60 days")
        lines_total = round(sum(ln["amount"] for ln in inv["lines"]), 2)
        if abs(lines_total - inv["total"]) > 0.01:
            raise EntryRejected(f"entry lines sum to {inv['currency']} {_money(lines_total)}; the invoice total is "
                                f"{inv['currency']} {_money(inv['total'])}")
        net = round(sum(ln["net_kg"] for ln in costs["lines"]), 1)
        if net > bol["gross_kg"] or net < 0.85 * bol["gross_kg"]:
            raise EntryRejected(f"declared net weight {net:,} kg against a gross weight of {bol['gross_kg']:,} kg "
                                f"on {bol['bol_no']}")
        for ln in costs["lines"]:
            words = set(re.findall(r"[a-z]+", ln["description"].lower()))
            form = "ground" if words & GROUND_WORDS else ("whole" if words & WHOLE_WORDS else "any")
            heading = HS_BY_CODE[ln["hs_code"]]
            if heading["form"] != "any" and form != "any" and heading["form"] != form:
                raise EntryRejected(f"lot {ln['lot']} '{ln['description']}' is classified {ln['hs_code']} "
                                    f"({heading['text']})")
        fx = state["rates"]["fx"]
        if fx["date"] != inv["date"]:
            raise EntryRejected(f"{fx['currency']} rate dated {fx['date']}; customs value needs the rate of the "
                                f"invoice date {inv['date']}")
        held = state["screening"].get("held") or []
        if held or set(state["screening"]["cleared"]) != {ln["lot"] for ln in costs["lines"]}:
            raise EntryRejected(f"lots not cleared by their certificates: {held}")
        return {}

    g = StateGraph(Entry)
    for name, fn in [("load_documents", load_documents), ("extract_invoice", extract_invoice),
                     ("parse_invoice", parse_invoice), ("normalize_units", normalize_units),
                     ("classify_hs", classify_hs), ("rates", rates), ("compliance", compliance),
                     ("compute_costs", compute_costs), ("draft_entry", draft_entry),
                     ("validate_entry", validate_entry)]:
        g.add_node(name, fn)
    order = ["load_documents", "extract_invoice", "parse_invoice", "normalize_units", "classify_hs", "rates",
             "compliance", "compute_costs", "draft_entry", "validate_entry"]
    g.add_edge(START, order[0])
    for a, b in itertools.pairwise(order):
        g.add_edge(a, b)
    g.add_edge(order[-1], END)
    return g.compile()


def record(shipment_id: str, path: Path, server: Any) -> None:
    from langchain_openai import ChatOpenAI

    from trajdebug.integrations.langchain import TrajdebugTracer

    llm = ChatOpenAI(base_url=server.base_url, api_key="importer-local", model="fake-model", max_retries=0,
                     temperature=0)
    _CALLS.clear()
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"customs entry and landed cost for {shipment_id}")
    try:
        build(llm).invoke({"shipment_id": shipment_id}, config={"callbacks": [tracer]})
    except EntryRejected:
        pass
