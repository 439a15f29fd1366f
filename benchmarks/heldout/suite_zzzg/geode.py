"""Geode shop's mail orders: a batch loop traced with OpenTelemetry (OpenInference) and exported as OTLP JSON.

Shape: fetch_paid_orders -> for each order: find_specimen (retriever) -> the model writes the customs
line (ChatCompletion, instrumented openai client) -> parse_customs_line -> weigh_parcel -> buy_postage
(the carrier's API, raises on a label it refuses) -> build_manifest -> payments_summary ->
reconcile_batch (the dispatch desk's end-of-batch check, raises).
"""

from __future__ import annotations

import json
import re

from openai import OpenAI

from otlp_support import Recorder

NAME = "geode-mail-orders"
ROUTE = "otlp"
DOMAIN = "geode shop's mail orders"
SHAPE = "batch loop over 3-6 orders, 22-35 spans: tool -> (retriever -> llm -> parser -> scale tool -> carrier tool) per order -> manifest -> payments tool -> reconciliation raises (or the carrier raises)"
SWITCH = None

STOCK = [
    {"sku": "AM-20", "name": "amethyst cathedral geode 20 cm", "weight_g": 1240, "price": 185.0},
    {"sku": "AM-30", "name": "amethyst cathedral geode 30 cm", "weight_g": 2980, "price": 340.0},
    {"sku": "CT-08", "name": "citrine cluster 8 cm", "weight_g": 310, "price": 42.5},
    {"sku": "AG-12", "name": "agate geode pair polished 12 cm", "weight_g": 870, "price": 64.0},
    {"sku": "AG-06", "name": "agate geode pair polished 6 cm", "weight_g": 220, "price": 24.0},
    {"sku": "CL-15", "name": "celestite geode blue 15 cm", "weight_g": 1630, "price": 128.0},
    {"sku": "QZ-10", "name": "quartz thunder egg 10 cm", "weight_g": 540, "price": 36.0},
    {"sku": "QZ-05", "name": "quartz thunder egg pair 5 cm", "weight_g": 180, "price": 18.5},
    {"sku": "OC-09", "name": "ocean jasper sphere 9 cm", "weight_g": 1020, "price": 88.0},
]


def _order(n, customer, country, sku, specimen):
    return {"order_id": f"G-{n}", "customer": customer, "country": country, "sku": sku, "specimen": specimen}


BATCHES = {
    "2027-02-01": [_order(1040, "R. Okoye", "GB", "CT-08", "citrine cluster about 8 cm"),
                   _order(1041, "M. Lindqvist", "SE", "AM-20", "amethyst cathedral geode 20 cm"),
                   _order(1042, "P. Duarte", "PT", "QZ-10", "quartz thunder egg 10 cm")],
    "2027-02-02": [_order(1043, "A. Hughes", "GB", "AG-12", "polished agate geode pair 12 cm"),
                   _order(1044, "K. Sato", "JP", "CL-15", "blue celestite geode 15 cm"),
                   _order(1045, "L. Moreau", "FR", "QZ-05", "pair of quartz thunder eggs 5 cm"),
                   _order(1046, "D. Brennan", "IE", "OC-09", "ocean jasper sphere 9 cm")],
    "2027-02-03": [_order(1047, "T. Nakamura", "JP", "AM-20", "amethyst cathedral geode 20 cm"),
                   _order(1048, "S. Weiss", "DE", "AG-06", "agate geode pair 6 cm polished"),
                   _order(1049, "E. Castillo", "ES", "CT-08", "citrine cluster 8 cm"),
                   _order(1050, "F. Achterberg", "NL", "QZ-10", "quartz thunder egg 10 cm"),
                   _order(1051, "G. Rossi", "IT", "OC-09", "ocean jasper sphere 9 cm"),
                   _order(1052, "H. Olsen", "NO", "CL-15", "celestite geode 15 cm blue")],
    "2027-02-04": [_order(1053, "I. Petrova", "BG", "AM-30", "amethyst cathedral geode 30 cm"),
                   _order(1054, "J. Byrne", "GB", "AG-06", "small agate geode pair 6 cm")],
    "2027-02-05": [_order(1055, "N. Haddad", "LB", "CL-15", "celestite geode blue 15 cm"),
                   _order(1056, "O. Ferreira", "BR", "AM-20", "amethyst cathedral geode 20 cm"),
                   _order(1057, "Q. Laine", "FI", "AG-12", "agate geode pair 12 cm"),
                   _order(1058, "U. Varga", "HU", "QZ-05", "quartz thunder eggs pair 5 cm")],
}

INPUTS = [{"batch": b} for b in BATCHES]

CASES = [
    {"id": "zzzg_geo_01", "input": 1, "switch": 1, "kind": "unit_error",
     "root": ("weigh_parcel", 2), "failure": ("buy_postage", 2),
     "description": "The packing-bench scale reports K. Sato's celestite parcel in pounds under the "
                    "kilogram field, 4.37 for a 1.98 kg parcel, and the carrier refuses the declared weight."},
    {"id": "zzzg_geo_02", "input": 2, "switch": 2, "kind": "truncated_result",
     "root": ("fetch_paid_orders", 1), "failure": ("reconcile_batch", 1),
     "description": "The order feed answers only its first page of four, so two of the six paid orders "
                    "of 2027-02-03 never get a label."},
    {"id": "zzzg_geo_03", "input": 0, "switch": 3, "kind": "lossy_parsing",
     "root": ("parse_customs_line", 2), "failure": ("buy_postage", 2),
     "description": "The customs-line parser reads '1,240 g' as 240 g because its pattern has no thousands "
                    "separator, so the declared weight does not match the parcel."},
    {"id": "zzzg_geo_04", "input": 4, "switch": 4, "kind": "wrong_retrieval",
     "root": ("find_specimen", 2), "failure": ("reconcile_batch", 1),
     "description": "The specimen search returns the 30 cm amethyst cathedral (AM-30) for O. Ferreira's "
                    "order of the 20 cm one (AM-20), which is what gets packed and labelled."},
    {"id": "zzzg_geo_05", "input": 3, "switch": 5, "kind": "off_by_one",
     "root": ("build_manifest", 1), "failure": ("reconcile_batch", 1),
     "description": "The manifest pairs each order with the label bought for the order before it, so "
                    "J. Byrne's row carries I. Petrova's parcel (AM-30) and tracking number."},
]

PACKAGING_G = 350
CARRIER_LIMIT_KG = 30.0
_LABELS: dict = {}


class CarrierRefused(Exception):
    pass


class BatchMismatch(AssertionError):
    pass


# ---------------------------------------------------------------- model policy

def policy(request):
    messages = request.body["messages"]
    item = json.loads(messages[-1]["content"])
    return (f"Customs: {item['name']}, natural mineral specimen, {item['weight_g']:,} g, "
            f"value {item['price']:.2f} GBP, origin Brazil.")


# ---------------------------------------------------------------- steps

def fetch_paid_orders(batch: str) -> list:
    orders = BATCHES[batch]
    if SWITCH == 2:
        orders = orders[:4]
    return [dict(o) for o in orders]


def find_specimen(query: str) -> dict:
    words = set(query.lower().split())
    ranked = sorted(STOCK, key=lambda s: -len(words & set(s["name"].split())))
    if SWITCH == 4 and "amethyst" in words:
        ranked = sorted(ranked, key=lambda s: s["sku"] != "AM-30")
    return dict(ranked[0])


def parse_customs_line(text: str) -> dict:
    name = re.match(r"Customs: ([^,]+),", text).group(1)
    pattern = r"(\d+) g" if SWITCH == 3 else r"(\d[\d,]*) g"
    weight = int(re.search(pattern, text).group(1).replace(",", ""))
    value = float(re.search(r"value ([\d.]+) GBP", text).group(1))
    return {"description": name, "weight_g": weight, "value_gbp": value}


def weigh_parcel(order_id: str, sku: str) -> dict:
    grams = next(s["weight_g"] for s in STOCK if s["sku"] == sku) + PACKAGING_G
    kg = grams / 1000
    if SWITCH == 1 and order_id == "G-1044":
        kg = round(kg * 2.2046, 2)
    return {"order_id": order_id, "parcel_kg": kg, "scale": "bench-2"}


def buy_postage(order_id: str, country: str, parcel_kg: float, declared_weight_g: int, customs_value_gbp: float) -> dict:
    if parcel_kg > CARRIER_LIMIT_KG:
        raise CarrierRefused(f"{order_id}: parcel of {parcel_kg} kg is over the {CARRIER_LIMIT_KG} kg limit")
    contents_kg = parcel_kg - PACKAGING_G / 1000
    if abs(declared_weight_g / 1000 - contents_kg) > 0.05 + 0.1 * contents_kg:
        raise CarrierRefused(f"{order_id}: customs declares {declared_weight_g} g of contents; the parcel weighs "
                             f"{parcel_kg} kg with {PACKAGING_G} g of packing")
    tracking = f"RX{order_id[2:]}{len(_LABELS) + 7:02d}GB"
    _LABELS[order_id] = tracking
    return {"order_id": order_id, "tracking": tracking, "service": "tracked" if country == "GB" else "international tracked"}


def build_manifest(orders: list, labels: list) -> list:
    shift = 1 if SWITCH == 5 else 0
    rows = []
    for i, order in enumerate(orders):
        label = labels[i - shift] if i - shift >= 0 else labels[i]
        rows.append({"order_id": order["order_id"], "sku": label["sku"], "tracking": label["tracking"]})
    return rows


def payments_summary(batch: str) -> dict:
    return {"batch": batch, "paid_orders": [{"order_id": o["order_id"], "sku": o["sku"]} for o in BATCHES[batch]]}


def reconcile_batch(manifest: list, paid: dict) -> dict:
    if len(manifest) != len(paid["paid_orders"]):
        raise BatchMismatch(f"manifest lists {len(manifest)} parcels; batch {paid['batch']} has "
                            f"{len(paid['paid_orders'])} paid orders")
    for row, order in zip(manifest, paid["paid_orders"]):
        if row["sku"] != order["sku"]:
            raise BatchMismatch(f"{order['order_id']} was paid for {order['sku']}; its parcel holds {row['sku']}")
        if _LABELS[row["order_id"]] != row["tracking"]:
            raise BatchMismatch(f"{row['order_id']} carries tracking {row['tracking']}; the carrier issued "
                                f"{_LABELS[row['order_id']]} for it")
    return {"batch": paid["batch"], "parcels": len(manifest), "reconciled": True}


def record(inp: dict, path: str, server) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _LABELS.clear()
    batch = inp["batch"]
    with Recorder(NAME, path) as rec, rec.span(NAME, "AGENT", {"batch": batch}, **{"agent.name": NAME}) as top:
        orders = rec.call("fetch_paid_orders", "TOOL", fetch_paid_orders, {"batch": batch})
        labels = []
        for order in orders:
            item = rec.call("find_specimen", "RETRIEVER", find_specimen, {"query": order["specimen"]})
            reply = client.chat.completions.create(model=server.model, messages=[
                {"role": "system", "content": "Write the customs line for this specimen."},
                {"role": "user", "content": json.dumps(item)},
            ])
            customs = rec.call("parse_customs_line", "CHAIN", parse_customs_line,
                               {"text": reply.choices[0].message.content})
            parcel = rec.call("weigh_parcel", "TOOL", weigh_parcel, {"order_id": order["order_id"], "sku": item["sku"]})
            label = rec.call("buy_postage", "TOOL", buy_postage, {
                "order_id": order["order_id"], "country": order["country"], "parcel_kg": parcel["parcel_kg"],
                "declared_weight_g": customs["weight_g"], "customs_value_gbp": customs["value_gbp"]})
            labels.append({**label, "sku": item["sku"]})
        manifest = rec.call("build_manifest", "CHAIN", build_manifest, {"orders": orders, "labels": labels})
        paid = rec.call("payments_summary", "TOOL", payments_summary, {"batch": batch})
        top["output"] = rec.call("reconcile_batch", "CHAIN", reconcile_batch, {"manifest": manifest, "paid": paid})
