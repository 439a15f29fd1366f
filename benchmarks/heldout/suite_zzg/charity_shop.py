"""OTLP route: a charity shop's donation intake: gift aid, sorting plan, grading, pricing and the stock ledger."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .common import Case, OtlpRecorder, register, reply_json
from .kit import active

NAME = "charity-donation-intake"
ROUTE = "otlp"
DOMAIN = "charity shop donations"
SHAPE = "OTel/OpenInference: donor lookup, gift-aid sub-agent, LLM sorting plan, per-item LLM grade + comparables + ledger write loop, till/online publish"
SYSTEM = "[charity] You sort and price charity shop donations. Answer JSON."

INPUTS = {
    "bag_a": {"bag": "BAG-0931", "donor": "D-5512", "items": ["wool coat", "kettle", "hardback novels x6", "denim jeans"]},
    "bag_b": {"bag": "BAG-0932", "donor": "D-6120", "items": ["china tea set", "wool coat", "board game", "silk scarf", "toaster"]},
    "bag_c": {"bag": "BAG-0933", "donor": "D-4471", "items": ["denim jeans", "board game", "vinyl records x12"]},
    "bag_d": {"bag": "BAG-0934", "donor": "D-3308", "items": ["silk scarf", "hardback novels x6", "kettle"]},
    "bag_e": {"bag": "BAG-0935", "donor": "D-7002", "items": ["china tea set", "wool coat", "denim jeans", "board game"]},
    "bag_f": {"bag": "BAG-0936", "donor": "D-2219", "items": ["toaster", "vinyl records x12", "silk scarf"]},
}
REF_INPUTS = ["bag_c", "bag_d", "bag_e", "bag_f"]
DONORS = {"D-5512": "Margaret Okafor", "D-6120": "Tom Hallworth", "D-4471": "Priya Nair", "D-3308": "Alan Brooks",
          "D-7002": "Sian Pritchard", "D-2219": "Gareth Lowe", "D-1001": "Eileen Marsh"}
COMPS = {"clothing": 8.0, "electricals": 6.0, "books": 1.5, "homeware": 12.0, "toys": 4.0, "music": 2.0}
CATEGORY = {"wool coat": "clothing", "kettle": "electricals", "hardback novels x6": "books", "denim jeans": "clothing",
            "china tea set": "homeware", "board game": "toys", "silk scarf": "clothing", "toaster": "electricals", "vinyl records x12": "music"}


def _policy(msgs: list[dict[str, Any]]) -> str:
    p = json.loads(msgs[-1]["content"])
    if p["task"] == "sort_plan":
        plan = []
        for it in p["items"]:
            cat = CATEGORY[it]
            if active("charity_plan_error"):
                route = "online"
            else:
                route = "pat_test" if cat == "electricals" else ("online" if cat in ("music", "homeware") else "shop_floor")
            plan.append({"item": it, "category": cat, "route": route})
        return reply_json({"plan": plan})
    if p["task"] == "grade":
        designer = any("Burberry" in n and p["item"] in n for n in p["notes"])
        grade = "A" if designer else ("B" if p["item"] != "denim jeans" else "C")
        return reply_json({"item": p["item"], "grade": grade, "brand": "Burberry" if designer else None})
    if p["task"] == "gift_aid":
        d = p["declaration"]
        return reply_json({"eligible": d["status"] == "active", "name_on_declaration": d["name"]})
    raise ValueError(p["task"])


register("[charity]", _policy)


def _declaration(donor: str) -> dict:
    if active("charity_ignores_arg"):
        donor = "D-1001"  # the register answers its first row whatever donor is asked for
    return {"donor": donor, "name": DONORS[donor], "status": "active", "since": "2023-04-01"}


def record(inp: dict, path: Path) -> None:
    rec = OtlpRecorder("charity-shop")
    ledger: dict[str, dict] = {}
    try:
        with rec.span(NAME, "AGENT", {"bag": inp["bag"], "donor": inp["donor"]}, agent__name=NAME) as top:
            with rec.span("donor_lookup", "TOOL", {"donor": inp["donor"]}, tool__name="donor_lookup") as s:
                donor = rec.out(s, {"donor": inp["donor"], "name": DONORS[inp["donor"]], "postcode": "CF10 1AA"})
            with rec.span("gift_aid_agent", "AGENT", {"donor": inp["donor"]}, agent__name="gift-aid") as sub:
                with rec.span("hmrc_declaration_lookup", "TOOL", {"donor_id": inp["donor"]}, tool__name="hmrc_declaration_lookup") as s:
                    decl = rec.out(s, _declaration(inp["donor"]))
                ga = json.loads(rec.llm("gift_aid_check", SYSTEM, {"task": "gift_aid", "declaration": decl}))
                rec.out(sub, ga)
            plan_text = rec.llm("sorting_plan", SYSTEM, {"task": "sort_plan", "items": inp["items"]})
            with rec.span("parse_sorting_plan", "CHAIN", plan_text) as s:
                plan = rec.out(s, json.loads(plan_text)["plan"])
            notes = [f"bag {inp['bag']} from {donor['name']}"]
            if active("charity_pollution"):
                notes.append("bag BAG-0118: wool coat, Burberry label, authenticated")
            for n, row in enumerate(plan, 1):
                g = json.loads(rec.llm("grade_item", SYSTEM, {"task": "grade", "item": row["item"], "notes": notes}))
                cat = row["category"]
                query = {"category": cat, "grade": g["grade"]}
                if active("charity_tool_args") and n == len(plan):
                    query = {"category": g["grade"], "grade": cat}
                with rec.span("price_comparables", "TOOL", query, tool__name="price_comparables") as s:
                    base = COMPS.get(query["category"], 0.0)
                    mult = {"A": 22.0, "B": 1.0, "C": 0.6}.get(query["grade"], 0.0)
                    comp = rec.out(s, {"median_gbp": round(base * mult, 2), "n": 14 if base else 0})
                sku = f"CS-{inp['bag'][-4:]}-{n:02d}"
                with rec.span("stock_ledger_write", "CHAIN", {"sku": sku, "item": row["item"]}) as s:
                    key = sku
                    if active("charity_memory") and n == len(plan):
                        key = f"CS-{inp['bag'][-4:]}-{n - 1:02d}"
                    ledger[key] = {"item": row["item"], "route": row["route"], "price_gbp": comp["median_gbp"], "grade": g["grade"]}
                    rec.out(s, {"ledger_size": len(ledger), "written": key})
            batch = {"bag": inp["bag"], "donor": inp["donor"], "gift_aid": ga, "items": ledger, "expected_items": len(inp["items"])}
            with rec.span("publish_stock", "TOOL", batch, tool__name="publish_stock") as s:
                if len(ledger) != len(inp["items"]):
                    raise ValueError(f"till import: {len(ledger)} ledger rows for {len(inp['items'])} items in {inp['bag']}")
                for sku, row in sorted(ledger.items()):
                    if row["route"] == "online" and CATEGORY[row["item"]] == "electricals":
                        raise ValueError(f'HTTP 422 {{"error": "pat_certificate_required", "sku": "{sku}", "item": "{row["item"]}"}}')
                    if row["price_gbp"] < 0.5:
                        raise ValueError(f'HTTP 422 {{"error": "price_below_floor", "sku": "{sku}", "price_gbp": {row["price_gbp"]}}}')
                    if row["price_gbp"] > 60 and row["grade"] == "A":
                        raise ValueError(f"till import: {sku} {row['item']} priced £{row['price_gbp']:.2f}, over the £60 cap without a brand authentication record")
                if ga["name_on_declaration"] != donor["name"]:
                    raise ValueError(f'HTTP 409 {{"error": "declaration_name_mismatch", "donor": "{inp["donor"]}", "declared": "{ga["name_on_declaration"]}"}}')
                rec.out(s, {"published": len(ledger)})
            rec.out(top, {"bag": inp["bag"], "items": len(ledger)})
    except ValueError:
        pass
    rec.write(path)


CASES = [
    Case("charity_01", "charity_memory", "bad_memory_write", "bag_a", "stock_ledger_write", 4, "other",
         "publish_stock", "The ledger write for the last item uses the previous item's SKU and overwrites its row."),
    Case("charity_02", "charity_pollution", "context_pollution", "bag_b", "grade_item", 2, "llm",
         "publish_stock", "Another bag's note about an authenticated Burberry coat sits in the grader's notes and it grades this coat A."),
    Case("charity_03", "charity_plan_error", "plan_error", "bag_a", "sorting_plan", 1, "llm",
         "publish_stock", "The sorting plan sends every item online, the kettle included, skipping the PAT test route."),
    Case("charity_04", "charity_tool_args", "wrong_tool_args", "bag_b", "price_comparables", 5, "tool",
         "publish_stock", "The last item's comparables query swaps category and grade, so the price comes back as zero."),
    Case("charity_05", "charity_ignores_arg", "tool_ignores_argument", "bag_b", "hmrc_declaration_lookup", 1, "tool",
         "publish_stock", "The declaration register ignores the donor id and answers its first row."),
]
