"""A coppersmith's cookware order desk traced with OpenTelemetry + OpenInference (route otlp).

Shape: a model reads the customer's order email, a parser turns it into lines; the copper
rate comes from a price feed that sometimes needs a second attempt; each line gets a pattern
(retriever), sheet stock (tool), a cut list (code) and an order-book entry (memory tool);
pans go through a tinning shop sub-agent (its own model call and the tin bath tool); the
order book is read back and the invoice is checked field by field.  14-39 spans.
"""

from __future__ import annotations

import json
import math

from openai import OpenAI
from opentelemetry.trace import Status, StatusCode

from _otlp import attrs, done, traced

NAME = "coppersmith-order-desk"
ROUTE = "otlp"
DOMAIN = "a coppersmith's cookware orders"
SHAPE = "OTLP spans: model + parser, price feed with a second attempt, per-line retriever/tool/code/memory, tinning sub-agent span per pan, invoice check; 14-39 spans"
SWITCH = None

PATTERNS = {  # item -> (sheet area cm2, litres, tinned)
    "saucepan 2 qt": (1450, 1.9, True), "saucepan 3 qt": (1800, 2.8, True), "stockpot 8 qt": (3600, 7.6, True),
    "stockpot 12 qt": (4700, 11.4, True), "jam pan": (2900, 9.0, False), "kettle": (2200, 2.4, True),
    "bain-marie": (2600, 4.0, True), "mixing bowl": (1600, 5.0, False),
}
NEXT_DOWN = {"stockpot 12 qt": "stockpot 8 qt", "saucepan 3 qt": "saucepan 2 qt"}
GAUGE_MM = {"saucepan": 2.0, "stockpot": 2.5, "jam": 1.5, "kettle": 1.2, "bain-marie": 2.0, "mixing": 1.0}
SECOND_ATTEMPT = {"CW-1202", "CW-1204"}

INPUTS = [
    {"order": "CW-1201", "customer": "The Anchor Inn", "email": "Please make us a stockpot 12 qt, two saucepan 3 qt and a jam pan."},
    {"order": "CW-1202", "customer": "Mrs Polglase", "email": "I would like a kettle and a saucepan 2 qt."},
    {"order": "CW-1203", "customer": "Rosewarne Hotel", "email": "Order: bain-marie, stockpot 8 qt, saucepan 3 qt, mixing bowl."},
    {"order": "CW-1204", "customer": "Chef Tremayne", "email": "One jam pan and one mixing bowl please."},
    {"order": "CW-1205", "customer": "Lizard Point Cafe", "email": "Three saucepan 2 qt and a kettle for the cafe."},
]

CASES = [
    {"id": "zzzr-copper-rate", "input": 2, "switch": "feed_down", "kind": "swallowed_error",
     "root": ("copper_rate", 1), "failure": ("invoice_check", 1),
     "desc": "When the copper price feed failed, the rate step carried on with a rate of 0.00 per kg instead of stopping."},
    {"id": "zzzr-copper-weight", "input": 0, "switch": "thickness_mm", "kind": "unit_error",
     "root": ("cut_list", 2), "failure": ("invoice_check", 1),
     "desc": "The cut list for the first saucepan used the gauge in millimetres as centimetres, making the pan ten times its weight."},
    {"id": "zzzr-copper-pattern", "input": 0, "switch": "size_down", "kind": "wrong_retrieval",
     "root": ("pattern_library", 1), "failure": ("invoice_check", 1),
     "desc": "The pattern library answered the 12 qt stockpot with the 8 qt stockpot pattern."},
    {"id": "zzzr-copper-book", "input": 2, "switch": "line_number", "kind": "bad_memory_write",
     "root": ("order_book_write", 3), "failure": ("invoice_check", 1),
     "desc": "The order book entry for line 3 (saucepan 3 qt) was written over line 2, so the book holds three lines for a four-line order."},
    {"id": "zzzr-copper-dwell", "input": 4, "switch": "dwell_text", "kind": "format_drift",
     "root": ("ChatCompletion", 3), "failure": ("tin_bath", 2),
     "desc": "The tinning plan for the second saucepan gave its dwell as the text 1m30s instead of a number of seconds."},
]


def policy(request):
    messages = request.body["messages"]
    system, text = messages[0]["content"], messages[-1]["content"]
    if system.startswith("Read the order"):
        lines = []
        for part in text.replace(" and ", ", ").replace(".", "").split(", "):
            part = part.split(": ")[-1].strip()
            count = 1
            for word, n in (("a ", 1), ("an ", 1), ("one ", 1), ("two ", 2), ("three ", 3), ("us a ", 1)):
                if part.lower().startswith(word):
                    count, part = n, part[len(word):]
            for item in PATTERNS:
                if item in part:
                    lines.append({"item": item, "quantity": count})
        return json.dumps({"lines": lines})
    plan = json.loads(text)
    dwell = 90 if plan["litres"] < 5 else 150
    reply = {"item": plan["item"], "bath_c": 232, "dwell_s": dwell, "wipe": "tow and sal ammoniac"}
    if SWITCH == "dwell_text" and plan["line"] == 2:
        reply["dwell_s"] = "1m30s"
    return json.dumps(reply)


def record(server, given: dict, path) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    book: dict[int, dict] = {}
    with traced(NAME, path) as tracer:
        def span(name, kind, given_value):
            return tracer.start_as_current_span(name, attributes=attrs(kind, given_value))

        try:
            with span(NAME, "AGENT", given) as top:
                reply = client.chat.completions.create(model="copper-desk-model", messages=[
                    {"role": "system", "content": "Read the order email into lines of item and quantity, as JSON."},
                    {"role": "user", "content": given["email"]}])
                with span("parse_order", "CHAIN", {"text": reply.choices[0].message.content}) as s:
                    lines = []
                    for entry in json.loads(reply.choices[0].message.content)["lines"]:
                        lines.extend({"item": entry["item"]} for _ in range(entry["quantity"]))
                    lines = [{"line": i + 1, **ln} for i, ln in enumerate(lines)]
                    done(s, lines)
                with span("copper_rate", "CHAIN", {"metal": "copper", "order": given["order"]}) as s:
                    rate = None
                    for attempt in (1, 2):
                        try:
                            with span("copper_price_feed", "TOOL", {"metal": "copper", "attempt": attempt}) as f:
                                if (given["order"] in SECOND_ATTEMPT and attempt == 1) or SWITCH == "feed_down":
                                    raise ConnectionError("price feed did not answer within 5 s")
                                rate = {"gbp_per_kg": 8.42, "as_of": "2026-12-07"}
                                done(f, rate)
                            break
                        except ConnectionError:
                            continue
                    if rate is None:
                        rate = {"gbp_per_kg": 0.0, "as_of": "2026-12-07"}
                    done(s, rate)
                priced = []
                for ln in lines:
                    with span("pattern_library", "RETRIEVER", {"item": ln["item"]}) as s:
                        item = ln["item"]
                        if SWITCH == "size_down" and item in NEXT_DOWN and ln["line"] == 1:
                            item = NEXT_DOWN[item]
                        area, litres, tinned = PATTERNS[item]
                        pattern = {"pattern": item, "sheet_cm2": area, "litres": litres, "tinned": tinned}
                        done(s, [pattern])
                    with span("sheet_stock", "TOOL", {"item": ln["item"]}) as s:
                        gauge = GAUGE_MM[ln["item"].split()[0]]
                        sheet = {"gauge_mm": gauge, "sheet": f"{gauge} mm half-hard", "in_stock": True}
                        done(s, sheet)
                    with span("cut_list", "CHAIN", {"pattern": pattern, "sheet": sheet}) as s:
                        thickness_cm = sheet["gauge_mm"] / 10
                        if SWITCH == "thickness_mm" and ln["line"] == 2:
                            thickness_cm = sheet["gauge_mm"]
                        kg = round(pattern["sheet_cm2"] * thickness_cm * 8.96 / 1000, 2)
                        cut = {"line": ln["line"], "item": ln["item"], "litres": pattern["litres"], "copper_kg": kg}
                        done(s, cut)
                    if pattern["tinned"]:
                        with span("tinning_shop", "AGENT", cut) as s:
                            plan = client.chat.completions.create(model="copper-desk-model", messages=[
                                {"role": "system", "content": "Plan the tin lining for a pan as JSON: bath_c, dwell_s."},
                                {"role": "user", "content": json.dumps({"item": ln["item"], "litres": pattern["litres"], "line": ln["line"]})}]
                            ).choices[0].message.content
                            plan = json.loads(plan)
                            with span("tin_bath", "TOOL", plan) as t:
                                if not isinstance(plan["dwell_s"], (int, float)):
                                    raise TypeError(f"dwell {plan['dwell_s']!r} for {plan['item']} is not a number of seconds")
                                if not 220 <= plan["bath_c"] <= 260:
                                    raise ValueError(f"bath at {plan['bath_c']} C is outside 220-260 C")
                                tin = {"item": plan["item"], "tin_g": round(pattern["sheet_cm2"] * 0.012, 1), "dwell_s": plan["dwell_s"]}
                                done(t, tin)
                            done(s, tin)
                    with span("order_book_write", "TOOL", {"order": given["order"], "line": ln["line"], "entry": cut}) as s:
                        slot = ln["line"]
                        if SWITCH == "line_number" and ln["line"] == 3:
                            slot = 2
                        book[slot] = {**cut, "gbp": round(cut["copper_kg"] * rate["gbp_per_kg"] * 1.8 + 35.0, 2)}
                        done(s, f"line {slot} written")
                with span("order_book_read", "TOOL", {"order": given["order"]}) as s:
                    entries = [book[k] for k in sorted(book)]
                    done(s, entries)
                with span("invoice_check", "CHAIN", {"order": given["order"], "lines": len(lines), "entries": entries}) as s:
                    if len(entries) != len(lines):
                        raise ValueError(f"order book holds {len(entries)} lines, order {given['order']} has {len(lines)}")
                    for e, ln in zip(entries, lines):
                        if e["item"] != ln["item"]:
                            raise ValueError(f"invoice line {ln['line']} is {e['item']}, order line is {ln['item']}")
                        want = PATTERNS[e["item"]][1]
                        if abs(e["litres"] - want) > 0.2:
                            raise ValueError(f"line {ln['line']} {e['item']} is cut to hold {e['litres']} l, it must hold {want} l")
                        if not 0.5 <= e["copper_kg"] <= 12.0:
                            raise ValueError(f"line {ln['line']} {e['item']} weighs {e['copper_kg']} kg of copper")
                        if e["gbp"] <= 40.0:
                            raise ValueError(f"line {ln['line']} {e['item']} priced {e['gbp']:.2f} GBP, below the metal and labour in it")
                    total = round(sum(e["gbp"] for e in entries), 2)
                    done(s, {"order": given["order"], "total_gbp": total})
                done(top, f"{given['order']} for {given['customer']}: {len(entries)} pieces, {total:.2f} GBP")
        except Exception:
            pass
