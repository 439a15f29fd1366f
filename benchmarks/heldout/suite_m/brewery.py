"""Brewhouse scheduler (route otlp): orders, recipe retrieval, model brew plan, ingredient loop with
inventory and purchases, batch sheet memory, then the MES: stock, tank, yeast, orders, excise."""

from __future__ import annotations

import json
from typing import Any

from suite_m import kit
from suite_m.otel import span


AGENT = "brewhouse-scheduler"
ROUTE = "otlp"
DOMAIN = "craft brewery production"
SHAPE = "order book, recipe retriever, model plan, loop over 6 ingredients (scale, inventory, purchase), batch-sheet memory, yeast order, model brew sheet, MES reservations per ingredient, tank, order allocation, excise"

RECIPES = {
    "RCP-0411": {"beer": "Hazy IPA", "per_hl": {"pale malt": 18.0, "oat flakes": 3.0, "wheat malt": 2.0, "Citra": 0.9, "Mosaic": 0.6, "yeast": 0.5}, "yeast": "WLP-066", "alt_yeast": "WLP-090"},
    "RCP-0412": {"beer": "Hazy IPA Session", "per_hl": {"pale malt": 12.0, "oat flakes": 2.5, "wheat malt": 1.5, "Citra": 0.6, "Mosaic": 0.4, "yeast": 0.5}, "yeast": "WLP-066", "alt_yeast": "WLP-090"},
    "RCP-0520": {"beer": "Dry Stout", "per_hl": {"pale malt": 16.0, "roast barley": 2.2, "flaked barley": 2.5, "Fuggle": 0.3, "EKG": 0.2, "yeast": 0.5}, "yeast": "WLP-004", "alt_yeast": "WLP-013"},
    "RCP-0633": {"beer": "Pilsner", "per_hl": {"pils malt": 19.0, "acid malt": 0.6, "carapils": 0.8, "Saaz": 0.5, "Hallertau": 0.3, "yeast": 0.6}, "yeast": "WLP-830", "alt_yeast": "WLP-833"},
    "RCP-0745": {"beer": "Amber Ale", "per_hl": {"pale malt": 17.0, "crystal 60": 1.8, "munich malt": 2.0, "Cascade": 0.5, "Centennial": 0.3, "yeast": 0.5}, "yeast": "WLP-001", "alt_yeast": "WLP-002"},
}
STOCK_KG = {"pale malt": 290.3, "oat flakes": 140.0, "wheat malt": 95.0, "Citra": 12.0, "Mosaic": 9.0, "yeast": 20.0,
            "roast barley": 60.0, "flaked barley": 70.0, "Fuggle": 8.0, "EKG": 6.0, "pils malt": 480.0, "acid malt": 25.0,
            "carapils": 30.0, "Saaz": 15.0, "Hallertau": 10.0, "crystal 60": 55.0, "munich malt": 80.0, "Cascade": 14.0, "Centennial": 9.0}
TANKS = {"FV-3": 15.0, "FV-4": 20.0, "FV-6": 30.0, "FV-7": 30.0}
ORDERS = {
    "Hazy IPA": [("Taproom", 6.0), ("Harbor Bottle Shop", 4.5), ("Northside Bar", 5.0), ("Kegs & Co", 7.5), ("Festival cans", 5.0)],
    "Dry Stout": [("Taproom", 5.0), ("The Anchor", 4.0), ("Kegs & Co", 6.0), ("Northside Bar", 3.0)],
    "Pilsner": [("Taproom", 8.0), ("Garden Hall", 7.0), ("Harbor Bottle Shop", 5.0), ("Kegs & Co", 6.0), ("Stadium", 2.0)],
    "Amber Ale": [("Taproom", 4.0), ("The Anchor", 5.0), ("Northside Bar", 4.5), ("Garden Hall", 6.5)],
}


def _inp(n: int, beer: str, week: str) -> dict:
    return {"task": f"Schedule brew B-{n}: {beer} for week {week}", "batch": f"B-{n}", "beer": beer, "week": week}


INPUTS = [
    _inp(2301, "Hazy IPA", "2026-W51"),
    _inp(2302, "Pilsner", "2026-W51"),
    _inp(2303, "Amber Ale", "2026-W52"),
    _inp(2304, "Dry Stout", "2026-W52"),
    _inp(2305, "Pilsner", "2026-W52"),
]
REFERENCES = [
    _inp(2401, "Dry Stout", "2026-W50"),
    _inp(2402, "Amber Ale", "2026-W50"),
    _inp(2403, "Pilsner", "2026-W49"),
    _inp(2404, "Hazy IPA", "2026-W49"),
]

CASES = [
    {"case": "m_brewery_1", "fid": "brw1", "kind": "wrong_retrieval", "input": 0, "root": "recipe_search", "marker": "RCP-0412", "failure": "register_brew"},
    {"case": "m_brewery_2", "fid": "brw2", "kind": "truncated_result", "input": 1, "root": "order_book", "marker": "20.0", "failure": "allocate_orders"},
    {"case": "m_brewery_3", "fid": "brw3", "kind": "plan_error", "input": 2, "root": "ChatCompletion", "marker": "FV-3", "failure": "assign_tank"},
    {"case": "m_brewery_4", "fid": "brw4", "kind": "bad_memory_write", "input": 3, "root": "save_batch_sheet", "marker": "WLP-013", "failure": "pitch_yeast"},
    {"case": "m_brewery_5", "fid": "brw5", "kind": "unit_error", "input": 4, "root": "inventory_lookup", "marker": "1058.2", "failure": "reserve_stock"},
]


def policy(inp: dict):
    def answer(request) -> Any:
        msgs = request.body["messages"]
        system = msgs[0]["content"]
        data = json.loads(msgs[-1]["content"])
        if system.startswith("Plan the brew"):
            volume = data["volume_hl"]
            tank = next(t for t, cap in sorted(TANKS.items(), key=lambda kv: (kv[1], kv[0])) if cap >= volume)
            if kit.active("brw3"):
                tank = "FV-3"
            return json.dumps({"batch_hl": volume, "fermenter": tank, "brew_day": data["week"] + "-2",
                               "steps": ["mash 66C 60 min", "boil 60 min", "whirlpool", "knock out", "ferment"]})
        return json.dumps({"brew_sheet": f"{data['batch']}: {data['beer']} {data['batch_hl']} hL in {data['fermenter']}", "checks": "ok"})

    return answer


def execute(inp: dict, env, tracer, client) -> None:
    beer = inp["beer"]
    mem: dict[str, Any] = {}
    with span(tracer, AGENT, "AGENT", inp["task"]) as root:
        with span(tracer, "order_book", "TOOL", {"beer": beer, "week": inp["week"]}) as s:
            orders = [{"customer": c, "hl": hl} for c, hl in ORDERS[beer]]
            if kit.active("brw2"):
                orders = orders[:3]  # the order service paged at three rows
            book = s.set({"beer": beer, "orders": orders, "total_hl": round(sum(o["hl"] for o in orders), 1)})
        with span(tracer, "recipe_search", "RETRIEVER", beer) as s:
            rid = next(r for r, v in RECIPES.items() if v["beer"] == beer)
            if kit.active("brw1"):
                rid = "RCP-0412"
            rec = RECIPES[rid]
            docs = s.set([{"id": rid, "score": 0.91, "content": json.dumps({"title": rec["beer"], **rec})}])
        recipe = {"id": docs[0]["id"], **json.loads(docs[0]["content"])}
        reply = client.chat.completions.create(model="fake-model", messages=[
            {"role": "system", "content": "Plan the brew: batch size, fermenter, brew day and steps. Answer JSON."},
            {"role": "user", "content": json.dumps({"batch": inp["batch"], "beer": beer, "week": inp["week"], "volume_hl": book["total_hl"], "recipe": recipe["id"], "tanks": TANKS})},
        ])
        with span(tracer, "parse_plan", "CHAIN", reply.choices[0].message.content) as s:
            plan = s.set(json.loads(reply.choices[0].message.content))
        needs = {}
        for ing, per_hl in recipe["per_hl"].items():
            with span(tracer, "scale_ingredient", "CHAIN", {"ingredient": ing, "per_hl": per_hl, "batch_hl": plan["batch_hl"]}) as s:
                need = s.set({"ingredient": ing, "kg": round(per_hl * plan["batch_hl"], 1)})
            with span(tracer, "inventory_lookup", "TOOL", {"ingredient": ing}) as s:
                on_hand = STOCK_KG[ing]
                if ing == "pils malt" and kit.active("brw5"):
                    on_hand = round(on_hand * 2.20462, 1)  # the malt silo controller reports pounds
                stock = s.set({"ingredient": ing, "on_hand": on_hand, "unit": "kg"})
            if stock["on_hand"] < need["kg"]:
                with span(tracer, "purchase_order", "TOOL", {"ingredient": ing, "kg": round(need["kg"] - stock["on_hand"] + 25, 1)}) as s:
                    s.set({"po": f"PO-{inp['batch'][2:]}-{len(needs) + 1}", "ingredient": ing, "eta": "2 days"})
                    mem.setdefault("po", []).append(ing)
            needs[ing] = need["kg"]
        with span(tracer, "save_batch_sheet", "CHAIN", {"batch": inp["batch"], "recipe": recipe["id"]}) as s:
            yeast = recipe["alt_yeast"] if kit.active("brw4") else recipe["yeast"]
            mem["sheet"] = {"batch": inp["batch"], "beer": beer, "recipe": recipe["id"], "yeast": yeast,
                            "fermenter": plan["fermenter"], "batch_hl": plan["batch_hl"]}
            s.set(mem["sheet"])
        sheet = mem["sheet"]
        with span(tracer, "pitch_yeast", "TOOL", {"batch": sheet["batch"], "strain": sheet["yeast"]}) as s:
            propagated = {r["yeast"] for r in RECIPES.values()}
            if sheet["yeast"] not in propagated:
                raise RuntimeError(f"yeast bank: no propagation of {sheet['yeast']} scheduled for {sheet['batch']}")
            s.set({"strain": sheet["yeast"], "generation": 4, "cells_bn": round(sheet["batch_hl"] * 100)})
        summary = client.chat.completions.create(model="fake-model", messages=[
            {"role": "system", "content": "Write the brew sheet headline for the brewers. Answer JSON."},
            {"role": "user", "content": json.dumps(mem["sheet"])},
        ])
        for ing, kg in needs.items():
            with span(tracer, "reserve_stock", "TOOL", {"batch": inp["batch"], "ingredient": ing, "kg": kg}) as s:
                have = STOCK_KG[ing] + (kg if ing in mem.get("po", []) else 0)
                if kg > have:
                    raise RuntimeError(f"MES stock reservation failed: {ing} {kg} kg requested, {STOCK_KG[ing]} kg on hand")
                s.set({"reservation": f"RS-{inp['batch'][2:]}-{ing[:3]}", "kg": kg})
        with span(tracer, "assign_tank", "TOOL", {"tank": sheet["fermenter"], "batch_hl": sheet["batch_hl"]}) as s:
            if TANKS[sheet["fermenter"]] < sheet["batch_hl"]:
                raise RuntimeError(f"MES tank assignment refused: {sheet['fermenter']} holds {TANKS[sheet['fermenter']]} hL")
            s.set({"tank": sheet["fermenter"], "from": plan["brew_day"]})
        with span(tracer, "allocate_orders", "TOOL", {"batch": sheet["batch"], "beer": beer, "batch_hl": sheet["batch_hl"]}) as s:
            committed = round(sum(hl for _, hl in ORDERS[beer]), 1)
            if sheet["batch_hl"] < committed:
                raise RuntimeError(f"order allocation: {committed} hL committed for {beer} in {inp['week']}, batch yields {sheet['batch_hl']} hL")
            s.set({"allocated_hl": committed, "orders": len(ORDERS[beer])})
        with span(tracer, "register_brew", "TOOL", {"batch": sheet["batch"], "beer": beer, "recipe": sheet["recipe"]}) as s:
            if RECIPES[sheet["recipe"]]["beer"] != beer:
                raise RuntimeError(f"excise registration: recipe {sheet['recipe']} is registered under another product name")
            s.set({"excise_ref": f"EX-{sheet['batch'][2:]}", "declared_hl": sheet["batch_hl"]})
        root.set({"batch": sheet["batch"], "tank": sheet["fermenter"], "headline": json.loads(summary.choices[0].message.content)["brew_sheet"]})
