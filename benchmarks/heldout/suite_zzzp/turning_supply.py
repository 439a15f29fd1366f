"""Woodturning supply shop: OTLP spans with an instrumented openai client; the model reads the email, then per line a catalogue retriever and a model pick; courier quote retried, courier booking and till check."""
from __future__ import annotations

import json
import re

from suite_common import Spans, begin_otlp, first_system, last_user, write_otlp

RUN_NAME = "turning-supply-orders"
ROUTE = "otlp"
DOMAIN = "woodturning supply shop"
SHAPE = "OTLP spans: email reading model call, parse chain, per line a catalogue retriever + model SKU pick + stock reservation tool, parcel weighing, courier quote retried after a 503, courier booking API, till reconciliation"
SWITCH = None

CATALOGUE = [
    {"sku": "ASH-BB-150", "name": "ash bowl blank 150 x 50 mm", "price": 6.80, "grams": 620},
    {"sku": "ASH-BB-200", "name": "ash bowl blank 200 x 75 mm", "price": 11.40, "grams": 1480},
    {"sku": "SYC-BB-200", "name": "sycamore bowl blank 200 x 75 mm", "price": 10.90, "grams": 1390},
    {"sku": "WAL-PB-50", "name": "walnut pen blank 20 x 20 x 130 mm, pack of 5", "price": 7.50, "grams": 210},
    {"sku": "OAK-SP-300", "name": "oak spindle blank 50 x 50 x 300 mm", "price": 5.20, "grams": 540},
    {"sku": "BEE-SP-300", "name": "beech spindle blank 50 x 50 x 300 mm", "price": 4.60, "grams": 520},
    {"sku": "CA-GLUE-50", "name": "CA glue thin 50 g", "price": 5.95, "grams": 70},
    {"sku": "FIN-WAX-200", "name": "friction polish 200 ml", "price": 9.25, "grams": 260},
    {"sku": "GOU-BOWL-12", "name": "bowl gouge 12 mm, M2 steel", "price": 48.00, "grams": 390},
]
INPUTS = [
    {"order": "WT-9101", "email": "Please send 2 ash bowl blank 200 x 75 mm and 1 friction polish 200 ml.", "postcode": "LD3 7HP", "bill_postcode": "LD3 7HP", "prepaid": 32.05},
    {"order": "WT-9102", "email": "Could I have 4 walnut pen blank packs, 1 CA glue thin 50 g and 3 oak spindle blank 50 x 50 x 300 mm.", "postcode": "SY23 1NT", "bill_postcode": "SY23 1NT", "prepaid": 51.55},
    {"order": "WT-9103", "email": "Order: 1 bowl gouge 12 mm, 2 sycamore bowl blank 200 x 75 mm, 6 beech spindle blank 50 x 50 x 300 mm.", "postcode": "HR4 0AA", "bill_postcode": "EH1 1YZ", "prepaid": 97.40},
    {"order": "WT-9104", "email": "3 ash bowl blank 150 x 50 mm please, and 2 friction polish 200 ml.", "postcode": "TR18 4AB", "bill_postcode": "TR18 4AB", "prepaid": 38.90},
    {"order": "WT-9105", "email": "I need 10 beech spindle blank 50 x 50 x 300 mm and 2 CA glue thin 50 g.", "postcode": "NP7 5UH", "bill_postcode": "BS1 4DJ", "prepaid": 57.90},
]
ZONES = ("LD", "SY", "HR", "TR", "NP")
CASES = [
    dict(id="zzzp_turn_01", input=0, switch="a", fault_kind="wrong_retrieval", root=("catalogue_search", 1, "retrieval"),
         failure=("till_check", 1), description="The catalogue search for the 200 mm ash bowl blank returns the ash 150 mm and sycamore 200 mm blanks but not the ash 200 mm one, so the sycamore blank is picked and priced."),
    dict(id="zzzp_turn_02", input=2, switch="b", fault_kind="plan_error", root=("ChatCompletion", 1, "llm"),
         failure=("till_check", 1), description="The model's reading of the email leaves out the bowl gouge, the first line of the order."),
    dict(id="zzzp_turn_03", input=4, switch="c", fault_kind="unit_error", root=("weigh_parcel", 1, "tool"),
         failure=("book_courier", 1), description="The parcel weight adds the CA glue's 70 g as 70 kg."),
    dict(id="zzzp_turn_04", input=1, switch="d", fault_kind="tool_ignores_argument", root=("reserve_stock", 1, "tool"),
         failure=("till_check", 1), description="The stock reservation ignores the quantity asked and reserves one pack of walnut pen blanks instead of four."),
    dict(id="zzzp_turn_05", input=3, switch="e", fault_kind="wrong_tool_args", root=("courier_quote", 2, "tool"),
         failure=("book_courier", 1), description="The courier quote is asked with the billing postcode rather than the delivery postcode."),
]
# case e needs a billing postcode outside the courier's zones
INPUTS[3]["bill_postcode"] = "EH3 9QQ"


def policy(request):
    system = first_system(request)
    text = last_user(request)
    if system.startswith("Read the customer's email"):
        lines = [{"qty": int(q), "item": item.strip()} for q, item in
                 re.findall(r"(\d+) ([a-zA-Z][a-zA-Z0-9 x]*?(?: \d+ (?:mm|g|ml))?)(?=,| and|\.| please)", text)]
        if SWITCH == "b":
            lines = lines[1:]
        return json.dumps({"lines": lines})
    ask = json.loads(text)
    words = set(ask["item"].lower().replace("packs", "pack").split())
    best = max(ask["candidates"], key=lambda d: len(words & set(d["name"].lower().split())))
    return best["sku"]


def search(item):
    words = set(item.lower().replace("packs", "pack").split())
    scored = sorted(CATALOGUE, key=lambda d: -len(words & set(d["name"].lower().split())))
    hits = scored[:3]
    if SWITCH == "a" and "ash" in words and "200" in words:
        hits = [d for d in scored if d["sku"] != "ASH-BB-200"][:3]
    return [{"sku": d["sku"], "name": d["name"]} for d in hits]


_quote_calls = {"n": 0}


def record(server, inp: dict, path: str) -> None:
    from openai import OpenAI

    begin_otlp()
    sp = Spans("turning-supply")
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    by_sku = {d["sku"]: d for d in CATALOGUE}
    try:
        with sp(RUN_NAME, "AGENT", inp) as top:
            reply = client.chat.completions.create(model="shop-model", messages=[
                {"role": "system", "content": "Read the customer's email and list the order lines as JSON."},
                {"role": "user", "content": inp["email"]}])
            with sp("read_lines", "CHAIN", {"text": reply.choices[0].message.content}) as o:
                lines = json.loads(reply.choices[0].message.content)["lines"]
                o.value = lines
            picked = []
            for line in lines:
                with sp("catalogue_search", "RETRIEVER", {"query": line["item"]}) as o:
                    docs = search(line["item"])
                    o.value = docs
                pick = client.chat.completions.create(model="shop-model", messages=[
                    {"role": "system", "content": "Pick the SKU that matches the customer's line. Answer with the SKU only."},
                    {"role": "user", "content": json.dumps({"item": line["item"], "candidates": docs})}]).choices[0].message.content.strip()
                with sp("reserve_stock", "TOOL", {"sku": pick, "qty": line["qty"]}) as o:
                    qty = 1 if SWITCH == "d" and pick == "WAL-PB-50" else line["qty"]
                    o.value = {"sku": pick, "reserved": qty}
                picked.append({"sku": pick, "qty": qty})
            with sp("weigh_parcel", "TOOL", {"lines": picked}) as o:
                grams = 0
                for p in picked:
                    g = by_sku[p["sku"]]["grams"] * p["qty"]
                    if SWITCH == "c" and p["sku"] == "CA-GLUE-50":
                        g = g * 1000
                    grams += g
                o.value = {"kg": round(grams / 1000 + 0.4, 2)}
            kg = o.value["kg"]
            postcode = inp["bill_postcode"] if SWITCH == "e" else inp["postcode"]
            quote = None
            for attempt in (1, 2):
                try:
                    with sp("courier_quote", "TOOL", {"postcode": postcode, "kg": kg, "attempt": attempt}) as o:
                        if attempt == 1:
                            raise ConnectionError("courier API 503: service busy, retry")
                        zone = postcode[:2]
                        o.value = {"service": "48h" if zone in ZONES else "72h remote", "price": round(6.5 + 0.4 * kg, 2), "zone": zone}
                        quote = o.value
                    break
                except ConnectionError:
                    continue
            with sp("book_courier", "TOOL", {"order": inp["order"], "deliver_to": inp["postcode"], "quote": quote, "kg": kg}) as o:
                if kg > 30:
                    raise RuntimeError(f"courier API 422: parcel of {kg} kg refused, the limit is 30 kg")
                if quote["zone"] != inp["postcode"][:2]:
                    raise RuntimeError(f"courier API 409: quote priced for zone {quote['zone']}, parcel addressed to {inp['postcode']}")
                o.value = {"consignment": f"CN-{inp['order'][3:]}", "service": quote["service"]}
            with sp("till_check", "TOOL", {"order": inp["order"], "lines": picked, "prepaid": inp["prepaid"]}) as o:
                goods = round(sum(by_sku[p["sku"]]["price"] * p["qty"] for p in picked), 2)
                if abs(goods - inp["prepaid"]) > 0.005:
                    raise ValueError(f"{inp['order']}: goods total {goods:.2f} GBP does not match the {inp['prepaid']:.2f} GBP the customer paid")
                o.value = {"goods": goods, "reconciled": True}
            top.value = {"order": inp["order"], "consignment": f"CN-{inp['order'][3:]}"}
    except Exception:
        pass
    write_otlp(path)
