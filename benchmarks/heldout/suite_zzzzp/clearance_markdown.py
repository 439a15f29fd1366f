"""clearance-markdown: end-of-season markdown of a store department's leftover stock (otlp)."""
from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from common import OtlpRecorder, system_of, user_of

NAME, ROUTE = "clearance-markdown", "otlp"
DOMAIN = "end-of-season clearance: markdown ladder pricing of a store department's leftover seasonal stock"
SHAPE = "OpenTelemetry + OpenInference spans: season tool, calendar step, per SKU: sales and stock tools, context assembly, model proposal -> parse -> price calc; price-file tool, margin check"
SWITCH = None


def _on(case):
    return SWITCH == case


LADDER = {1: 20, 2: 30, 3: 40, 4: 50}
SEASON_END, TODAY = "2025-03-01", "2025-03-20"
# sku: (ticket price, unit cost)
SKUS = {
    "PRK-NAVY-M": (89.00, 38.00), "PRK-NAVY-L": (89.00, 38.00), "GLV-WOOL": (24.00, 9.50), "HAT-BEANIE": (18.00, 6.00),
    "SCF-CHECK": (32.00, 12.00), "BOOT-SNOW-41": (80.00, 52.00), "BOOT-SNOW-43": (80.00, 41.00), "THM-TOP": (29.00, 11.00),
    "THM-LEG": (27.00, 10.50), "JKT-FLEECE": (59.99, 24.00), "SOCK-MERINO": (16.00, 5.50), "MIT-KIDS": (14.00, 4.80),
}
SALES = {"PRK-NAVY-M": [6, 5, 4], "PRK-NAVY-L": [2, 1, 1], "GLV-WOOL": [9, 7, 6], "HAT-BEANIE": [4, 3, 2],
         "SCF-CHECK": [1, 1, 0], "BOOT-SNOW-41": [5, 6, 4], "BOOT-SNOW-43": [1, 0, 1], "THM-TOP": [7, 6, 6],
         "THM-LEG": [3, 2, 2], "JKT-FLEECE": [4, 3, 3], "SOCK-MERINO": [12, 10, 9], "MIT-KIDS": [2, 1, 1]}
ON_HAND = {"PRK-NAVY-M": 14, "PRK-NAVY-L": 22, "GLV-WOOL": 18, "HAT-BEANIE": 15, "SCF-CHECK": 11, "BOOT-SNOW-41": 12,
           "BOOT-SNOW-43": 9, "THM-TOP": 16, "THM-LEG": 17, "JKT-FLEECE": 12, "SOCK-MERINO": 20, "MIT-KIDS": 13}
MEMOS = {"ST-14": "Store 14: follow the ladder; no markdown beyond the week's step.",
         "OUTLET": "Outlet stores: clear all winter outerwear at 75% off this weekend."}

INPUTS = [
    {"task": "clearance store ST-14 outerwear", "store": "ST-14", "skus": ["PRK-NAVY-M", "PRK-NAVY-L", "GLV-WOOL", "HAT-BEANIE", "SCF-CHECK"]},
    {"task": "clearance store ST-14 footwear", "store": "ST-14", "skus": ["BOOT-SNOW-41", "BOOT-SNOW-43", "SOCK-MERINO", "MIT-KIDS", "HAT-BEANIE"]},
    {"task": "clearance store ST-14 base layers", "store": "ST-14", "skus": ["THM-TOP", "THM-LEG", "SOCK-MERINO", "GLV-WOOL", "PRK-NAVY-L"]},
    {"task": "clearance store ST-14 fleece", "store": "ST-14", "skus": ["JKT-FLEECE", "THM-TOP", "SCF-CHECK", "MIT-KIDS", "GLV-WOOL"]},
    {"task": "clearance store ST-14 kids", "store": "ST-14", "skus": ["MIT-KIDS", "HAT-BEANIE", "SOCK-MERINO", "THM-LEG", "BOOT-SNOW-43"]},
]

CASES = [
    {"id": "zzzzp_cm_sales_timeout", "input": 1, "fault_kind": "swallowed_error",
     "root": ("get_sales_history", 1, "tool"), "failure": ("apply_prices", 1),
     "description": "get_sales_history catches the sales warehouse's 504 for BOOT-SNOW-41 and answers no weekly sales, so the model sees 99 weeks of cover, marks it 40% off to 48.00, and the price file refuses a price under the 52.00 cost floor."},
    {"id": "zzzzp_cm_outlet_memo", "input": 0, "fault_kind": "context_pollution",
     "root": ("assemble_context", 2, "state"), "failure": ("apply_prices", 1),
     "description": "assemble_context adds the outlet stores' memo ('clear all winter outerwear at 75% off') to PRK-NAVY-L's context in store ST-14, the model follows it, and the price file refuses 75%, which is no ladder step."},
    {"id": "zzzzp_cm_restated_ticket", "input": 3, "fault_kind": "hallucinated_value",
     "root": ("propose_markdown", 1, "llm"), "failure": ("apply_prices", 1),
     "description": "the markdown model restates JKT-FLEECE's ticket price as 49.99 (the context says 59.99), compute_price marks down from it, and the price file refuses a price that is not the ladder step off the ticket."},
    {"id": "zzzzp_cm_pct_fraction", "input": 2, "fault_kind": "unit_error",
     "root": ("parse_markdown", 3, "parse"), "failure": ("apply_prices", 1),
     "description": "parse_markdown turns SOCK-MERINO's '20%' into the fraction 0.2 while every other step works in percent, so compute_price takes 0.2% off and the price file refuses a step that is not on the ladder."},
    {"id": "zzzzp_cm_week_count", "input": 4, "fault_kind": "off_by_one",
     "root": ("season_week", 1, "other"), "failure": ("apply_prices", 1),
     "description": "season_week counts the season's end week as a week of its own, answering week 4 on day 19, so the model takes the 50% step and the price file refuses more than week 3's 40%."},
]

PROPOSER = "You propose a clearance markdown for one SKU from its sales, stock and the week's allowed ladder steps. Answer JSON {sku, markdown: 'NN%', ticket_price, reason}."


def brain(request):
    if system_of(request).startswith("You propose a clearance markdown"):
        ctx = json.loads(user_of(request))
        weekly = ctx["weekly_units"]
        cover = ctx["on_hand"] / (sum(weekly) / len(weekly)) if weekly and sum(weekly) else 99
        steps = ctx["allowed_pcts"]
        pct = steps[-1] if cover > 6 else steps[-2] if cover > 3 else steps[0]
        reason = f"{cover:.1f} weeks of cover"
        for memo in ctx["memos"]:
            if "75% off" in memo and "outerwear" in memo and ctx["sku"].startswith("PRK"):
                pct, reason = 75, "memo: clear winter outerwear at 75% off"
        ticket = ctx["ticket_price"]
        if ctx["sku"] == "JKT-FLEECE" and _on("zzzzp_cm_restated_ticket"):
            ticket = 49.99
        return json.dumps({"sku": ctx["sku"], "markdown": f"{pct}%", "ticket_price": ticket, "reason": reason})
    return "OK"


def run(inp: dict, path: str) -> None:
    rec = OtlpRecorder(NAME, inp["task"])
    try:
        with rec.root(inp):
            with rec.span("load_season", "tool", {"store": inp["store"], "skus": inp["skus"]}) as s:
                s.output = season = {"store": inp["store"], "season_end": SEASON_END,
                                     "items": [{"sku": k, "ticket_price": SKUS[k][0], "unit_cost": SKUS[k][1]} for k in inp["skus"]]}
            with rec.span("season_week", "other", {"season_end": SEASON_END, "today": TODAY}) as s:
                days = (date.fromisoformat(TODAY) - date.fromisoformat(SEASON_END)).days
                week = days // 7 + 2 if _on("zzzzp_cm_week_count") else days // 7 + 1
                s.output = {"week": week, "allowed_pcts": [LADDER[w] for w in sorted(LADDER) if w <= week]}
            cal = s.output
            prices = []
            for item in season["items"]:
                sku = item["sku"]
                with rec.span("get_sales_history", "tool", {"sku": sku, "weeks": 3}) as s:
                    try:
                        if sku == "BOOT-SNOW-41" and _on("zzzzp_cm_sales_timeout"):
                            raise TimeoutError("sales warehouse answered 504 Gateway Timeout")
                        s.output = {"sku": sku, "weekly_units": SALES[sku]}
                    except TimeoutError:
                        s.output = {"sku": sku, "weekly_units": []}
                sales = s.output
                with rec.span("get_on_hand", "tool", {"sku": sku, "store": inp["store"]}) as s:
                    s.output = {"sku": sku, "on_hand": ON_HAND[sku]}
                stock = s.output
                with rec.span("assemble_context", "state", {"sku": sku}) as s:
                    memos = [MEMOS[inp["store"]]]
                    if _on("zzzzp_cm_outlet_memo") and sku == "PRK-NAVY-L":
                        memos = list(MEMOS.values())  # the whole memo board
                    s.output = ctx = {"sku": sku, "ticket_price": item["ticket_price"], "weekly_units": sales["weekly_units"],
                                      "on_hand": stock["on_hand"], "week": cal["week"], "allowed_pcts": cal["allowed_pcts"], "memos": memos}
                answer = rec.llm("propose_markdown", [{"role": "system", "content": PROPOSER},
                                                      {"role": "user", "content": json.dumps(ctx)}])
                with rec.span("parse_markdown", "parse", {"content": answer["content"]}) as s:
                    data = json.loads(answer["content"])
                    pct = float(data["markdown"].rstrip("%"))
                    if sku == "SOCK-MERINO" and _on("zzzzp_cm_pct_fraction"):
                        pct = pct / 100
                    s.output = parsed = {"sku": sku, "pct": pct, "ticket_price": data["ticket_price"]}
                with rec.span("compute_price", "other", parsed) as s:
                    s.output = {"sku": sku, "pct": parsed["pct"], "new_price": round(parsed["ticket_price"] * (1 - parsed["pct"] / 100), 2)}
                prices.append(s.output)
            with rec.span("apply_prices", "tool", {"store": inp["store"], "prices": prices}) as s:
                days = (date.fromisoformat(TODAY) - date.fromisoformat(SEASON_END)).days
                cap = LADDER[min(days // 7 + 1, 4)]
                for p in prices:
                    ticket, cost = SKUS[p["sku"]]
                    if p["pct"] not in LADDER.values():
                        raise ValueError(f"price file: {p['pct']}% off for {p['sku']} is not a ladder step")
                    if p["pct"] > cap:
                        raise ValueError(f"price file: week {days // 7 + 1} allows at most {cap}% off; {p['sku']} got {p['pct']}%")
                    if abs(p["new_price"] - round(ticket * (1 - p["pct"] / 100), 2)) > 0.005:
                        raise ValueError(f"price file: {p['new_price']:.2f} is not {p['pct']}% off {p['sku']}'s ticket price {ticket:.2f}")
                    if p["new_price"] < cost:
                        raise ValueError(f"price file: {p['sku']} at {p['new_price']:.2f} is below its cost floor {cost:.2f}")
                s.output = {"store": inp["store"], "updated": len(prices), "batch": f"PF-{inp['store']}-0320"}
            with rec.span("margin_check", "condition", {"prices": prices}) as s:
                margin = sum(p["new_price"] - SKUS[p["sku"]][1] for p in prices)
                if margin <= 0:
                    raise ValueError(f"clearance margin {margin:.2f} is not positive")
                s.output = {"margin": round(margin, 2), "ok": True}
    finally:
        Path(path).write_text(json.dumps(rec.document()))
