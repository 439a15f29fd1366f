"""Fishmonger wholesale orders, traced with OpenTelemetry + OpenInference and exported as OTLP/JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from openai import OpenAI

from .common import Case, Otel, otel_chat
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "fish-wholesale-desk", "otlp", "fishmonger wholesale orders", "json"
SHAPE = "receive -> read email (LLM) -> parse lines -> auction prices -> per line stock/allocate -> quality sub-agent (certificates, LLM summary) -> invoice lines -> submit -> courier -> confirm dispatch"

ORDERS = {
    "harbour_bistro": {"po": "HB-5521", "text": "Order for Harbour Bistro: 12 kg hake fillet, 40 pcs oysters, 6 kg mackerel; deliver 2026-02-14 07:00."},
    "quay_kitchen": {"po": "QK-0918", "text": "Order for Quay Kitchen: 8 kg cod loin, 10 kg mussels, 24 pcs scallops; deliver 2026-02-14 06:30."},
    "salt_table": {"po": "ST-3301", "text": "Order for Salt Table: 5 kg sea bass, 3 kg squid; deliver 2026-02-14 08:00."},
    "dock_canteen": {"po": "DC-7710", "text": "Order for Dock Canteen: 20 kg pollock, 30 pcs oysters; deliver 2026-02-14 09:00."},
    "gull_inn": {"po": "GI-2045", "text": "Order for Gull Inn: 7 kg hake fillet, 4 kg mackerel, 2 kg squid; deliver 2026-02-14 07:30."},
    "pier_cafe": {"po": "PC-1182", "text": "Order for Pier Cafe: 9 kg cod loin; deliver 2026-02-14 10:00."},
}
REFS = ["salt_table", "dock_canteen", "gull_inn", "pier_cafe"]
PO_LINES = {"HB-5521": 3, "QK-0918": 3, "ST-3301": 2, "DC-7710": 2, "GI-2045": 3, "PC-1182": 1}
PRICES = {"hake fillet": 11.2, "oysters": 0.9, "mackerel": 6.4, "cod loin": 14.8, "mussels": 4.1, "scallops": 1.6,
          "sea bass": 13.5, "squid": 8.2, "pollock": 7.0}
LOTS = {"hake fillet": "L-0207", "oysters": "L-0211", "mackerel": "L-0213", "cod loin": "L-0198", "mussels": "L-0215",
        "scallops": "L-0216", "sea bass": "L-0201", "squid": "L-0209", "pollock": "L-0204"}
AUCTION_TODAY, AUCTION_CACHED = "2026-02-13", "2026-02-12"
FULL_SLOTS = {"2026-02-14 06:30"}

CASES = [
    Case("zf_fm_1", "lossy_parsing", "harbour_bistro", "parse_order_lines", 1, "submit_order", 1,
         "parse_order_lines only reads kilogram lines and silently drops the 40 pcs of oysters."),
    Case("zf_fm_2", "stale_data", "quay_kitchen", "get_market_prices", 1, "submit_order", 1,
         "get_market_prices serves the cached price list of the previous auction day."),
    Case("zf_fm_3", "truncated_result", "harbour_bistro", "fetch_catch_certificates", 1, "submit_order", 1,
         "fetch_catch_certificates returns only the first page of two certificates, leaving the mackerel lot without one."),
    Case("zf_fm_4", "format_drift", "quay_kitchen", "format_invoice_lines", 1, "submit_order", 1,
         "format_invoice_lines starts writing quantities with a decimal comma, which the order API does not read as numbers."),
    Case("zf_fm_5", "swallowed_error", "quay_kitchen", "book_courier", 1, "confirm_dispatch", 1,
         "book_courier catches the courier's slot-full answer and returns a booking with no slot."),
]


class OrderRefused(RuntimeError):
    pass


def policy(request: Any) -> str:
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Read"):
        body = user.split(": ", 1)[1].split("; deliver ")
        lines = [re.match(r"(\d+) (kg|pcs) (.+)", part).groups() for part in body[0].split(", ")]
        return "\n".join(f"{name} | {qty} | {unit}" for qty, unit, name in lines) + f"\ndeliver | {body[1].rstrip('.')}"
    if system.startswith("Summarise"):
        certs = json.loads(user)["certificates"]
        return f"{len(certs)} catch certificates on file; all lots traceable to landing."
    return "ok"


def record(server: Any, key: str, path: Path) -> None:
    server.use(policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    otel = Otel(AGENT)
    order = ORDERS[key]
    try:
        with otel.span("wholesale_order", "AGENT", order["text"], **{"agent.name": AGENT}) as root:
            with otel.span("receive_order", "CHAIN", order) as s:
                mail = otel.output(s, {"po": order["po"], "body": order["text"], "mailbox": "orders@quayside-fish"})
            raw = otel_chat(otel, client, server.model, "read_order_email", "Read the order email into 'item | qty | unit' lines.",
                            mail["body"])
            with otel.span("parse_order_lines", "CHAIN", raw) as s:
                unit_pattern = r"kg" if active("zf_fm_1") else r"kg|pcs"
                lines = [{"item": m.group(1), "qty": float(m.group(2)), "unit": m.group(3)}
                         for m in re.finditer(rf"^([a-z ]+) \| (\d+) \| ({unit_pattern})$", raw, re.MULTILINE)]
                deliver = re.search(r"^deliver \| (.+)$", raw, re.MULTILINE).group(1)
                otel.output(s, {"lines": lines, "deliver": deliver})
            with otel.span("get_market_prices", "TOOL", {"market": "Quayside auction"}, **{"tool.name": "get_market_prices"}) as s:
                day = AUCTION_CACHED if active("zf_fm_2") else AUCTION_TODAY
                prices = otel.output(s, {"auction_day": day, "eur": dict(PRICES)})
            allocated = []
            for line in lines:
                with otel.span("check_catch_stock", "TOOL", {"item": line["item"]}, **{"tool.name": "check_catch_stock"}) as s:
                    stock = otel.output(s, {"item": line["item"], "lot": LOTS[line["item"]], "available": 200.0})
                with otel.span("allocate_catch", "CHAIN", {"line": line, "stock": stock}) as s:
                    allocated.append(otel.output(s, {**line, "lot": stock["lot"], "unit_eur": prices["eur"][line["item"]]}))
            with otel.span("quality_check", "AGENT", {"lots": [a["lot"] for a in allocated]}, **{"agent.name": "quality"}) as q:
                with otel.span("fetch_catch_certificates", "TOOL", {"lots": [a["lot"] for a in allocated]},
                               **{"tool.name": "fetch_catch_certificates", "agent.name": "quality"}) as s:
                    certs = [{"lot": a["lot"], "certificate": f"CC-{a['lot'][2:]}-NO", "vessel": "FV Morning Star"}
                             for a in allocated]
                    if active("zf_fm_3"):
                        certs = certs[:2]
                    otel.output(s, {"certificates": certs})
                summary = otel_chat(otel, client, server.model, "summarise_traceability",
                                    "Summarise the traceability of the lots.", json.dumps({"certificates": certs}),
                                    **{"agent.name": "quality"})
                otel.output(q, summary)
            with otel.span("format_invoice_lines", "CHAIN", allocated) as s:
                def qty(v: float) -> str:
                    return f"{v:.1f}".replace(".", ",") if active("zf_fm_4") else f"{v:.1f}"
                invoice = otel.output(s, [{"item": a["item"], "lot": a["lot"], "qty": qty(a["qty"]), "unit": a["unit"],
                                           "unit_eur": f"{a['unit_eur']:.2f}"} for a in allocated])
            body = {"po": order["po"], "lines": invoice, "price_day": prices["auction_day"],
                    "certificates": [c["lot"] for c in certs], "deliver": deliver}
            with otel.span("submit_order", "TOOL", body, **{"tool.name": "submit_order"}) as s:
                if len(invoice) != PO_LINES[order["po"]]:
                    raise OrderRefused(f"HTTP 409 {{\"error\": \"order has {len(invoice)} lines, PO {order['po']} has "
                                       f"{PO_LINES[order['po']]}\"}}")
                if body["price_day"] != AUCTION_TODAY:
                    raise OrderRefused(f"HTTP 409 {{\"error\": \"prices dated {body['price_day']}; today's auction closed "
                                       f"{AUCTION_TODAY} 05:30\"}}")
                for n, line in enumerate(invoice, 1):
                    if not re.fullmatch(r"\d+(\.\d+)?", line["qty"]):
                        raise OrderRefused(f"HTTP 422 {{\"error\": \"line {n} quantity '{line['qty']}' is not a decimal number\"}}")
                    if line["lot"] not in body["certificates"]:
                        raise OrderRefused(f"HTTP 422 {{\"error\": \"lot {line['lot']} ({line['item']}) has no catch "
                                           "certificate attached\"}")
                so = otel.output(s, {"sales_order": "SO-" + order["po"], "status": "accepted"})
            with otel.span("book_courier", "TOOL", {"slot": deliver, "order": so["sales_order"]}, **{"tool.name": "book_courier"}) as s:
                reply = {"status": 409, "error": "slot full"} if deliver in FULL_SLOTS and active("zf_fm_5") else \
                    {"status": 201, "slot": deliver, "van": "COLD-3"}
                courier = otel.output(s, {"courier": "ColdRun", "slot": reply.get("slot"), "van": reply.get("van")})
            with otel.span("confirm_dispatch", "TOOL", {"order": so, "courier": courier}, **{"tool.name": "confirm_dispatch"}) as s:
                if courier["slot"] != deliver:
                    raise OrderRefused(f"HTTP 422 {{\"error\": \"dispatch for {so['sales_order']} has no courier slot for {deliver}\"}}")
                otel.output(root, otel.output(s, {"dispatch": f"DSP-{order['po']}", "eta": deliver}))
    except OrderRefused:
        pass
    otel.write(path)
