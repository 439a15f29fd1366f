"""Frozen yoghurt franchise supply (otlp route): forecast a store's weekly tub order and send the purchase order."""

from __future__ import annotations

import json
import math

from .common import Case, OtlpRecorder, last_user_json, policy
from .kit import active

NAME = "froyo-supply-planner"
ROUTE = "otlp"
TUB_L = 5.0
CATALOG = [
    {"sku": "YG-OT-01", "flavour": "Original Tart", "price": 14.50},
    {"sku": "YG-STR-02", "flavour": "Strawberry", "price": 16.90},
    {"sku": "YG-STR-DF", "flavour": "Strawberry", "price": 19.40, "note": "dairy-free"},
    {"sku": "YG-MAN-05", "flavour": "Mango", "price": 16.90},
    {"sku": "YG-CHO-03", "flavour": "Chocolate", "price": 15.20},
    {"sku": "YG-PIS-07", "flavour": "Pistachio", "price": 18.10},
    {"sku": "YG-BLU-04", "flavour": "Blueberry", "price": 16.40},
]
PLANOGRAM = {"YG-OT-01", "YG-STR-02", "YG-MAN-05", "YG-CHO-03", "YG-PIS-07", "YG-BLU-04"}


def _store(sid, name, cap, rows):
    return {"store": sid, "name": name, "capacity": cap, "week": "2026-W50",
            "flavours": [{"flavour": f, "litres": l, "cups": c, "on_hand": o, "stale_on_hand": s} for f, l, c, o, s in rows]}


INPUTS = {
    "st_riverside": _store("FY-014", "Riverside", 36, [("Original Tart", 48.5, 162, 6, 1), ("Strawberry", 22.0, 75, 4, 0),
                                                    ("Mango", 30.5, 101, 5, 1), ("Chocolate", 18.0, 60, 3, 0)]),
    "st_harbourside": _store("FY-022", "Harbourside", 30, [("Original Tart", 40.0, 131, 5, 0), ("Mango", 24.5, 80, 4, 1),
                                                        ("Blueberry", 19.0, 64, 3, 0)]),
    "st_ref_a": _store("FY-003", "Old Town", 34, [("Original Tart", 44.0, 145, 7, 7), ("Strawberry", 20.5, 69, 3, 3),
                                               ("Pistachio", 12.0, 40, 2, 2)]),
    "st_ref_b": _store("FY-009", "Station Plaza", 40, [("Original Tart", 55.0, 180, 8, 8), ("Chocolate", 26.0, 88, 4, 4),
                                                    ("Mango", 21.0, 70, 3, 3), ("Blueberry", 15.5, 52, 2, 2)]),
    "st_ref_c": _store("FY-017", "Canal Side", 28, [("Original Tart", 35.5, 118, 4, 4), ("Strawberry", 17.0, 57, 3, 3)]),
    "st_ref_d": _store("FY-031", "University", 38, [("Original Tart", 50.0, 166, 6, 6), ("Pistachio", 14.5, 49, 2, 2),
                                                 ("Chocolate", 20.0, 67, 3, 3), ("Strawberry", 16.0, 54, 2, 2)]),
}
REFS = ["st_ref_a", "st_ref_b", "st_ref_c", "st_ref_d"]

CASES = [
    Case("zzb_froyo_01", NAME, ROUTE, "format_drift", "froyo_export", "st_riverside", "get_store_sales", 1, "tool",
         "submit_purchase_order", "the POS export gains a cups column before litres and the sales parser reads cups as litres."),
    Case("zzb_froyo_02", NAME, ROUTE, "wrong_retrieval", "froyo_catalog", "st_riverside", "search_supplier_catalog", 2, "retrieval",
         "submit_purchase_order", "the catalog search ranks the dairy-free strawberry SKU first, and it is not on the store's planogram."),
    Case("zzb_froyo_03", NAME, ROUTE, "stale_data", "froyo_inventory", "st_harbourside", "get_inventory", 1, "tool",
         "submit_purchase_order", "get_inventory answers from Friday's snapshot taken before the weekend delivery."),
    Case("zzb_froyo_04", NAME, ROUTE, "hallucinated_value", "froyo_price", "st_harbourside", "draft_purchase_order", 1, "llm",
         "submit_purchase_order", "the drafting model writes a Mango unit price that no catalog result gave."),
    Case("zzb_froyo_05", NAME, ROUTE, "wrong_tool_args", "froyo_shipto", "st_riverside", "draft_purchase_order", 1, "llm",
         "submit_purchase_order", "the drafting model puts the franchisor's billing account in ship_to instead of the store id."),
]


class PurchaseOrderRejected(RuntimeError):
    pass


@policy("froyo-forecaster")
def _forecast(request):
    p = last_user_json(request)
    return json.dumps({"forecast_l": {f: round(l * 1.1, 2) for f, l in p["last_week_l"].items()}, "uplift": 0.1})


@policy("froyo-allocator")
def _allocate(request):
    p = last_user_json(request)
    return json.dumps({"lines": [{**ln, "qty": min(ln["qty"], p["stock"][ln["sku"]])} for ln in p["lines"]]})


@policy("froyo-drafter")
def _draft(request):
    p = last_user_json(request)
    lines = [{"sku": ln["sku"], "qty": ln["qty"], "unit_price": p["prices"][ln["sku"]]} for ln in p["lines"] if ln["qty"] > 0]
    if active("froyo_price"):
        lines = [{**ln, "unit_price": 15.90} if ln["sku"] == "YG-MAN-05" else ln for ln in lines]
    ship_to = p["bill_to"] if active("froyo_shipto") else p["store"]
    return json.dumps({"ship_to": ship_to, "bill_to": p["bill_to"], "week": p["week"], "lines": lines})


def record(input_key: str, path: str) -> None:
    st = INPUTS[input_key]
    rec = OtlpRecorder("froyo-supply")
    try:
        _agent(rec, st)
    except PurchaseOrderRejected:
        pass
    rec.write(path)


def _agent(rec: OtlpRecorder, st: dict) -> None:
    with rec.span(NAME, "AGENT", {"store": st["store"], "week": st["week"]}, **{"agent.name": NAME}) as top:
        with rec.span("read_store_request", "CHAIN", {"store": st["store"]}) as s:
            req = rec.output(s, {"store": st["store"], "week": st["week"], "flavours": [f["flavour"] for f in st["flavours"]]})
        with rec.span("get_store_sales", "TOOL", {"store": st["store"], "week": "2026-W49"}) as s:
            if active("froyo_export"):
                csv = "flavour,cups,litres\n" + "\n".join(f"{f['flavour']},{f['cups']},{f['litres']}" for f in st["flavours"])
            else:
                csv = "flavour,litres\n" + "\n".join(f"{f['flavour']},{f['litres']}" for f in st["flavours"])
            rec.output(s, csv)
        with rec.span("parse_sales_export", "CHAIN", csv) as s:
            rows = [line.split(",") for line in csv.splitlines()[1:]]
            sales = rec.output(s, {r[0]: float(r[1]) for r in rows})
        with rec.span("get_inventory", "TOOL", {"store": st["store"]}) as s:
            key = "stale_on_hand" if active("froyo_inventory") else "on_hand"
            snap = "2026-12-04T21:00Z" if active("froyo_inventory") else "2026-12-07T06:00Z"
            inv = rec.output(s, {"taken_at": snap, "tubs": {f["flavour"]: f[key] for f in st["flavours"]}})
        skus = {}
        for flav in req["flavours"]:
            with rec.span("search_supplier_catalog", "RETRIEVER", {"query": flav}) as s:
                hits = [c for c in CATALOG if c["flavour"] == flav]
                hits = sorted(hits, key=lambda c: c["sku"], reverse=True) if active("froyo_catalog") else \
                    [c for c in hits if "note" not in c] + [c for c in hits if "note" in c]
                rec.output(s, hits)
                for i, h in enumerate(hits):
                    s.set_attribute(f"retrieval.documents.{i}.document.content", json.dumps(h))
                    s.set_attribute(f"retrieval.documents.{i}.document.id", h["sku"])
                skus[flav] = hits[0]
        forecast = json.loads(rec.llm("forecast_demand", "froyo-forecaster", "Forecast next week's litres per flavour.",
                                      {"store": st["store"], "last_week_l": sales}))
        with rec.span("compute_order_quantities", "CHAIN", {"forecast": forecast, "inventory": inv}) as s:
            lines = []
            for flav, litres in forecast["forecast_l"].items():
                need = math.ceil(litres / TUB_L)
                lines.append({"sku": skus[flav]["sku"], "flavour": flav, "qty": max(0, need - inv["tubs"][flav])})
            rec.output(s, lines)
        with rec.span("allocation_agent", "AGENT", {"lines": lines}, **{"agent.name": "allocation_agent"}) as sub:
            stock = {}
            for ln in lines:
                with rec.span("check_warehouse_stock", "TOOL", {"sku": ln["sku"]}) as s:
                    stock[ln["sku"]] = rec.output(s, {"sku": ln["sku"], "available": 60})["available"]
            alloc = json.loads(rec.llm("allocate_shortfalls", "froyo-allocator", "Cap each line at warehouse stock.",
                                       {"lines": lines, "stock": stock}))
            rec.output(sub, alloc)
        prices = {c["sku"]: c["price"] for c in skus.values()}
        draft = rec.llm("draft_purchase_order", "froyo-drafter", "Draft the purchase order document.",
                        {"store": st["store"], "bill_to": "FR-HQ-01", "week": st["week"], "lines": alloc["lines"],
                         "prices": prices})
        with rec.span("submit_purchase_order", "TOOL", json.loads(draft)) as s:
            po = json.loads(draft)
            if po["ship_to"] != st["store"]:
                raise PurchaseOrderRejected(f'HTTP 400 {{"error":"invalid_ship_to","ship_to":"{po["ship_to"]}",'
                                            f'"detail":"not a franchise store"}}')
            price_list = {c["sku"]: c["price"] for c in CATALOG}
            for ln in po["lines"]:
                if ln["sku"] not in PLANOGRAM:
                    raise PurchaseOrderRejected(f'HTTP 422 {{"error":"sku_not_listed","sku":"{ln["sku"]}","store":"{st["store"]}"}}')
                if abs(ln["unit_price"] - price_list[ln["sku"]]) > 0.005:
                    raise PurchaseOrderRejected(f'HTTP 422 {{"error":"price_mismatch","sku":"{ln["sku"]}",'
                                                f'"unit_price":{ln["unit_price"]},"price_list":{price_list[ln["sku"]]}}}')
            after = sum(f["on_hand"] for f in st["flavours"]) + sum(ln["qty"] for ln in po["lines"])
            if after > st["capacity"]:
                raise PurchaseOrderRejected(f'HTTP 422 {{"error":"freezer_capacity","store":"{st["store"]}",'
                                            f'"tubs_after_delivery":{after},"capacity":{st["capacity"]}}}')
            rec.output(s, {"po": f"PO-{st['store'][3:]}-W50", "status": "accepted"})
        rec.output(top, {"po": f"PO-{st['store'][3:]}-W50"})
