"""Christmas tree farm: a wholesale allocation agent traced with OpenTelemetry + OpenInference (OTLP/JSON)."""

from __future__ import annotations

import json

from openai import OpenAI

from . import otel
from .common import Case, last_user_json, system_text
from .kit import active
from .otel import span

NAME = "tree-farm-wholesale"
ROUTE = "otlp"
DOMAIN = "Christmas tree farm"
EXT = "json"
SHAPE = ("retailer order tool -> per line inventory retriever + price tool -> allocation prompt builder -> allocation LLM -> parse "
         "-> per allocation tag tool -> haulage sub-agent (truck quote tool, haulage LLM) -> confirm shipment")

STOCK = {  # (species, grade) -> [(block, available)]
    ("Nordmann Fir", "150-175"): [("A1", 120), ("B3", 40)],
    ("Nordmann Fir", "175-200"): [("A2", 80)],
    ("Norway Spruce", "125-150"): [("C1", 150), ("C4", 60)],
    ("Fraser Fir", "150-175"): [("D2", 70)],
    ("Blue Spruce", "150-175"): [("E1", 30)],
    ("Norway Spruce", "175-200"): [("C2", 90)],
}
LAST_SEASON = {"B3": 95, "A2": 140}
ORDERS = {
    "RO-1187": {"retailer": "Greenway Garden Centre", "deliver_by": "2026-12-06",
                "lines": [("Nordmann Fir", "150-175", 175), ("Norway Spruce", "125-150", 60),
                          ("Fraser Fir", "150-175", 20)]},
    "RO-1203": {"retailer": "Hollins Farm Shop", "deliver_by": "2026-12-08",
                "lines": [("Nordmann Fir", "175-200", 50), ("Norway Spruce", "175-200", 40)]},
    "RO-1210": {"retailer": "St Anne's Scouts", "deliver_by": "2026-12-05",
                "lines": [("Norway Spruce", "125-150", 35), ("Fraser Fir", "150-175", 10)]},
    "RO-1222": {"retailer": "Market Square Traders", "deliver_by": "2026-12-07",
                "lines": [("Fraser Fir", "150-175", 25), ("Nordmann Fir", "150-175", 45)]},
    "RO-1230": {"retailer": "Bramley DIY", "deliver_by": "2026-12-09",
                "lines": [("Nordmann Fir", "175-200", 30), ("Blue Spruce", "150-175", 10),
                          ("Norway Spruce", "125-150", 40)]},
    "RO-1241": {"retailer": "Riverside Church", "deliver_by": "2026-12-10",
                "lines": [("Norway Spruce", "175-200", 20), ("Nordmann Fir", "175-200", 15)]},
}
OTHER_THREAD = {"retailer": "Bramley DIY", "order": "RO-1230", "lines": [["Blue Spruce", "150-175", 10]],
                "inventory": {"Blue Spruce|150-175": [{"block": "E1", "available": 30, "stocktake": "2026-11-28"}]}}
INPUTS = {k.lower().replace("-", ""): k for k in ORDERS}
REFS = ["ro1210", "ro1222", "ro1230", "ro1241"]
TRUCK_CAPACITY = 180

CASES = [
    Case("zw_tree_season", "stale_data", "ro1187", "inventory_search", 1, "retrieval", "confirm_shipment", 1,
         "The inventory search answers block B3 from last season's stocktake (95 trees) instead of this season's 40."),
    Case("zw_tree_slot", "hallucinated_value", "ro1203", "ChatCompletion", 2, "llm", "confirm_shipment", 1,
         "The haulage model states a delivery date that none of the quoted truck slots offers."),
    Case("zw_tree_tags", "truncated_result", "ro1187", "tag_trees", 1, "tool", "confirm_shipment", 1,
         "The tagging tool returns only its first 100 tags for a 120-tree block allocation."),
    Case("zw_tree_quote", "swallowed_error", "ro1187", "truck_quote", 1, "tool", "confirm_shipment", 1,
         "The truck-quote tool catches a haulier API error and answers a single default truck."),
    Case("zw_tree_ctx", "context_pollution", "ro1203", "build_allocation_prompt", 1, "other", "confirm_shipment", 1,
         "The allocation prompt carries another retailer's order thread, and the model allocates its Blue Spruce."),
]


class ShipmentRejected(RuntimeError):
    pass


def _policy(req):
    body = req.body or {}
    data = last_user_json(body)
    if "haulage" in system_text(body):
        q = data["quote"]
        day = q["slots"][0]
        if active("zw_tree_slot"):
            day = "2026-12-02"
        return json.dumps({"trucks": q["trucks"], "delivery_date": day, "trees": data["trees"]})
    lines = [list(x) for x in data["order"]["lines"]]
    inventory = dict(data["inventory"])
    for prev in data.get("history", []):
        lines.extend(prev["lines"])
        inventory.update(prev.get("inventory", {}))
    alloc = []
    for species, grade, qty in lines:
        left = qty
        for blk in inventory.get(f"{species}|{grade}", []):
            take = min(left, blk["available"])
            if take:
                alloc.append({"block": blk["block"], "species": species, "grade": grade, "qty": take})
                left -= take
    return json.dumps({"allocation": alloc})


def _confirm(order_id: str, alloc: list, tags: dict, haul: dict) -> dict:
    order = ORDERS[order_id]
    wanted = {(s, g) for s, g, _ in order["lines"]}
    avail = {b: n for v in STOCK.values() for b, n in v}
    for a in alloc:
        if (a["species"], a["grade"]) not in wanted:
            raise ShipmentRejected(f"422: allocation includes {a['species']} {a['grade']} cm, not on order {order_id}")
        if a["qty"] > avail[a["block"]]:
            raise ShipmentRejected(f"409: block {a['block']} has {avail[a['block']]} tagged-ready trees, allocation "
                                   f"takes {a['qty']}")
        if len(tags[a["block"]]) != a["qty"]:
            raise ShipmentRejected(f"422: shipment lists {len(tags[a['block']])} tags for block {a['block']}, "
                                   f"allocation is {a['qty']}")
    trees = sum(a["qty"] for a in alloc)
    if haul["trucks"] * TRUCK_CAPACITY < trees:
        raise ShipmentRejected(f"422: {haul['trucks']} truck(s) of {TRUCK_CAPACITY} trees cannot carry {trees} trees")
    if haul["delivery_date"] > order["deliver_by"] or haul["delivery_date"] < "2026-12-04":
        raise ShipmentRejected(f"409: delivery date {haul['delivery_date']} is outside the haulier's slots for "
                               f"order {order_id} (deliver by {order['deliver_by']})")
    return {"status": "confirmed", "shipment": f"SH-{order_id[3:]}", "trees": trees}


def record(inp_id: str, path: str, server) -> None:
    server.use(_policy)
    otel.begin()
    client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    oid = INPUTS[inp_id]
    try:
        with span(NAME, "AGENT", input={"order_id": oid}, agent__name=NAME):
            with span("fetch_retailer_order", "TOOL", input={"order_id": oid}) as s:
                order = s.output({"order": oid, **ORDERS[oid], "lines": [list(x) for x in ORDERS[oid]["lines"]]})
            inventory, prices = {}, {}
            for species, grade, _ in order["lines"]:
                with span("inventory_search", "RETRIEVER", input=f"{species} {grade} cm") as s:
                    blocks = []
                    for blk, n in STOCK[(species, grade)]:
                        if blk == "B3" and active("zw_tree_season"):
                            blocks.append({"block": blk, "available": LAST_SEASON[blk], "stocktake": "2025-11-20"})
                        else:
                            blocks.append({"block": blk, "available": n, "stocktake": "2026-11-28"})
                    inventory[f"{species}|{grade}"] = s.output(blocks)
                with span("wholesale_price", "TOOL", input={"species": species, "grade": grade}) as s:
                    base = {"Nordmann Fir": 21.0, "Norway Spruce": 12.5, "Fraser Fir": 24.0, "Blue Spruce": 27.0}
                    prices[f"{species}|{grade}"] = s.output({"gbp_per_tree": base[species] + (4.0 if grade[-3:] == "200" else 0.0)})
            with span("build_allocation_prompt", "CHAIN", input={"order": oid}) as s:
                ctx = {"order": order, "inventory": inventory}
                if active("zw_tree_ctx"):
                    ctx["history"] = [OTHER_THREAD]
                s.output(ctx)
            r = client.chat.completions.create(model="farm-allocator", messages=[
                {"role": "system", "content": "Allocate trees from blocks to the order. Answer JSON."},
                {"role": "user", "content": json.dumps(ctx)}])
            with span("parse_allocation", "CHAIN", input=r.choices[0].message.content) as s:
                alloc = s.output(json.loads(r.choices[0].message.content)["allocation"])
            tags = {}
            for i, a in enumerate(alloc):
                with span("tag_trees", "TOOL", input={"block": a["block"], "qty": a["qty"]}) as s:
                    got = [f"{a['block']}-{n:04d}" for n in range(1, a["qty"] + 1)]
                    if i == 0 and active("zw_tree_tags"):
                        got = got[:100]
                    tags[a["block"]] = s.output(got)
            trees = sum(a["qty"] for a in alloc)
            with span("haulage_agent", "AGENT", input={"trees": trees}, agent__name="haulage_agent") as sub:
                with span("truck_quote", "TOOL", input={"trees": trees, "deliver_by": order["deliver_by"]}) as s:
                    try:
                        if active("zw_tree_quote"):
                            raise ConnectionError("haulier API 503 Service Unavailable")
                        trucks = -(-trees // TRUCK_CAPACITY)
                        quote = {"trucks": trucks, "slots": ["2026-12-04", "2026-12-05"]}
                    except ConnectionError:
                        quote = {"trucks": 1, "slots": ["2026-12-04"]}
                    s.output(quote)
                h = client.chat.completions.create(model="farm-allocator", messages=[
                    {"role": "system", "content": "You are the haulage planner. Answer JSON."},
                    {"role": "user", "content": json.dumps({"quote": quote, "trees": trees})}])
                haul = sub.output(json.loads(h.choices[0].message.content))
            with span("confirm_shipment", "TOOL", input={"allocation": alloc, "haulage": haul}) as s:
                s.output(_confirm(oid, alloc, tags, haul))
    except ShipmentRejected:
        pass
    otel.write(path)
