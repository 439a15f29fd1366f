"""Tea blending workshop (OpenTelemetry + OpenInference, exported as OTLP/JSON): plans a recipe, finds lots, scales, labels, reserves, checks caffeine, submits."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .common import Case, chat, role_and_payload
from .kit import active
from .otlp_common import Tracing

NAME = "tea-blender"
ROUTE = "otlp"
DOMAIN = "tea blending"
SHAPE = "read order -> recipe llm -> parse -> lot search -> per-component inventory and lot spec -> scale -> label llm -> reserve lots -> quality sub-agent -> submit"

ORDERS = {
    "lumen": "Order TB-88 for Cafe Lumen: 4 kg breakfast blend; assam 60%, ceylon 30%, cornflower 10%. Ship 2026-12-18.",
    "quill": "Order TB-91 for Quill Books: 2 kg evening blend; rooibos 70%, chamomile 20%, lemongrass 10%. Ship 2026-12-20.",
    "fern": "Order TB-92 for Fern Deli: 3 kg afternoon blend; darjeeling 50%, ceylon 40%, cornflower 10%. Ship 2026-12-19.",
    "harvest": "Order TB-93 for Harvest Inn: 5 kg house blend; assam 70%, darjeeling 30%. Ship 2026-12-21.",
    "moss": "Order TB-94 for Moss Cafe: 1 kg calm blend; chamomile 60%, lemongrass 40%. Ship 2026-12-17.",
    "ridge": "Order TB-95 for Ridge Hotel: 6 kg rooibos chai; rooibos 80%, cornflower 20%. Ship 2026-12-22.",
}
LOTS = {
    "assam": [{"lot": "AS-301", "type": "black", "kg": 40.0, "caffeine_pct": 3.1}],
    "ceylon": [{"lot": "CY-114", "type": "black", "kg": 25.0, "caffeine_pct": 2.6}, {"lot": "CY-G12", "type": "green", "kg": 9.0, "caffeine_pct": 2.1}],
    "cornflower": [{"lot": "CF-007", "type": "botanical", "kg": 4.0, "caffeine_pct": 0.0}],
    "rooibos": [{"lot": "RB-220", "type": "herbal", "kg": 30.0, "caffeine_pct": 0.0}],
    "chamomile": [{"lot": "CH-045", "type": "herbal", "kg": 8.0, "caffeine_pct": 0.0}],
    "lemongrass": [{"lot": "LG-018", "type": "herbal", "kg": 6.0, "caffeine_pct": 0.0}],
    "darjeeling": [{"lot": "DJ-502", "type": "black", "kg": 12.0, "caffeine_pct": 2.9}],
    "hibiscus": [{"lot": "HB-090", "type": "herbal", "kg": 5.0, "caffeine_pct": 0.0}],
}
KIND = {"assam": "black", "ceylon": "black", "darjeeling": "black", "cornflower": "botanical", "rooibos": "herbal", "chamomile": "herbal", "lemongrass": "herbal", "hibiscus": "herbal"}

CASES = [
    Case("ze_tea_1", "tea_plan", "plan_error", "lumen", ("ChatCompletion", 1), ("submit_blend_order", 1),
         "The recipe model plans the ceylon share at 40% while keeping the others, so the recipe adds up to 110% and the order system refuses it."),
    Case("ze_tea_2", "tea_ctx", "context_pollution", "quill", ("build_label_context", 1), ("submit_blend_order", 1),
         "The label context carries the previous order's ingredient list, the label model lists hibiscus, and the label check refuses it."),
    Case("ze_tea_3", "tea_lot", "wrong_retrieval", "lumen", ("search_lot_notes", 1), ("submit_blend_order", 1),
         "The lot search returns the green ceylon lot for a black-tea component, and the order's lot-type check fails."),
    Case("ze_tea_4", "tea_page", "truncated_result", "quill", ("reserve_lots", 1), ("submit_blend_order", 1),
         "The reservation service answers only its first page of reservations, so one component has no reserved lot at submission."),
    Case("ze_tea_5", "tea_caff", "unit_error", "lumen", ("compute_caffeine", 1), ("submit_blend_order", 1),
         "The caffeine step treats the lab's percent figures as mg per gram, so the declared caffeine is ten times too low."),
]
REF_INPUTS = ["fern", "harvest", "moss", "ridge"]


class OrderRejected(RuntimeError):
    pass


def policy(request: Any) -> str:
    role, p = role_and_payload(request)
    if role == "plan":
        comps = [{"name": n, "pct": float(v)} for n, v in re.findall(r"([a-z]+) (\d+)%", p["order"])]
        if active("tea_plan"):
            comps = [dict(c, pct=40.0) if c["name"] == "ceylon" else c for c in comps]
        return json.dumps({"recipe": comps, "steps": ["weigh", "tumble 6 min", "rest 2 h", "pack"]})
    if role == "label":
        names = [i for i in p["context"]["ingredients"]]
        names += [i for i in p["context"].get("recent", []) if i not in names]
        return "INGREDIENTS: " + ", ".join(n.title() for n in names) + f". Net {p['kg']} kg."
    if role == "quality":
        return json.dumps({"method": "weighted lab caffeine", "limit_mg_per_g": 35})
    return "{}"


def record(main_input: str, path: Path) -> None:
    text = ORDERS[main_input]
    t = Tracing(NAME, path)
    try:
        with t.span(NAME, "AGENT", input=text, agent__name=NAME) as top:
            with t.span("read_order", "CHAIN", input=text) as s:
                m = re.match(r"Order (TB-\d+) for ([^:]+): (\d+) kg ([a-z ]+);", text)
                order = t.out(s, {"order": m[1], "client": m[2], "kg": float(m[3]), "blend": m[4]})
            with t.span("plan_recipe", "CHAIN", input={"order": text}):
                answer = chat("tea-planner", "ROLE: plan\nPlan the blend recipe as JSON.", {"order": text})
            with t.span("parse_recipe", "CHAIN", input=answer) as s:
                recipe = t.out(s, json.loads(answer)["recipe"])
            with t.span("search_lot_notes", "RETRIEVER", input={"components": [c["name"] for c in recipe]}) as s:
                docs = []
                for c in recipe:
                    lots = LOTS[c["name"]]
                    pick = lots[-1] if active("tea_lot") and len(lots) > 1 else lots[0]
                    docs.append({"component": c["name"], "lot": pick["lot"], "notes": f"{c['name']} lot {pick['lot']}, {pick['type']}"})
                for i, d in enumerate(docs):
                    s.set_attribute(f"retrieval.documents.{i}.document.content", d["notes"])
                    s.set_attribute(f"retrieval.documents.{i}.document.id", d["lot"])
                t.out(s, docs)
            specs = {}
            for d in docs:
                with t.span("check_inventory", "TOOL", input={"component": d["component"], "lot": d["lot"]}, tool__name="check_inventory") as s:
                    lot = next(x for x in LOTS[d["component"]] if x["lot"] == d["lot"])
                    t.out(s, {"lot": lot["lot"], "kg_available": lot["kg"]})
                with t.span("get_lot_spec", "TOOL", input={"lot": d["lot"]}, tool__name="get_lot_spec") as s:
                    specs[d["component"]] = t.out(s, {"lot": lot["lot"], "type": lot["type"], "caffeine_pct": lot["caffeine_pct"], "moisture_pct": 5.5})
            with t.span("scale_batch", "CHAIN", input={"recipe": recipe, "kg": order["kg"]}) as s:
                grams = t.out(s, {c["name"]: round(order["kg"] * 1000 * c["pct"] / 100) for c in recipe})
            with t.span("build_label_context", "CHAIN", input={"grams": grams}) as s:
                ctx = {"ingredients": sorted(grams, key=lambda k: -grams[k]), "client": order["client"]}
                if active("tea_ctx"):
                    ctx["recent"] = ["hibiscus", "rooibos"]
                t.out(s, ctx)
            with t.span("write_label", "CHAIN", input=ctx):
                label = chat("tea-labeller", "ROLE: label\nWrite the ingredient label, heaviest first.", {"context": ctx, "kg": order["kg"]})
            with t.span("reserve_lots", "TOOL", input={"allocations": [{"lot": specs[n]["lot"], "g": g} for n, g in grams.items()]}, tool__name="reserve_lots") as s:
                res = [{"lot": specs[n]["lot"], "component": n, "g": g, "hold": f"H-{i + 1}"} for i, (n, g) in enumerate(grams.items())]
                page = {"reservations": res[:2] if active("tea_page") else res, "page": 1}
                reserved = t.out(s, page)["reservations"]
            with t.span("quality_check", "AGENT", input={"specs": specs, "grams": grams}, agent__name="quality_check") as qa:
                q = json.loads(chat("tea-quality", "ROLE: quality\nChoose the caffeine method and limit.", {"specs": specs}))
                with t.span("compute_caffeine", "CHAIN", input={"specs": specs, "grams": grams, "method": q["method"]}) as s:
                    total_g = sum(grams.values())
                    factor = 1.0 if active("tea_caff") else 10.0
                    declared = t.out(s, {"caffeine_mg_per_g": round(sum(specs[n]["caffeine_pct"] * factor * g for n, g in grams.items()) / total_g, 1)})
                t.out(qa, declared)
            submission = {"order": order["order"], "recipe": recipe, "grams": grams, "label": label, "reserved": reserved, "caffeine": declared, "lots": {n: s_["lot"] for n, s_ in specs.items()}}
            with t.span("submit_blend_order", "TOOL", input=submission, tool__name="submit_blend_order") as s:
                total_pct = sum(c["pct"] for c in recipe)
                if abs(total_pct - 100) > 0.01:
                    raise OrderRejected(f"blend-orders 422: recipe percentages add up to {total_pct:.1f}, expected 100")
                for n, lot in submission["lots"].items():
                    got = next(x for x in LOTS[n] if x["lot"] == lot)["type"]
                    if got != KIND[n]:
                        raise OrderRejected(f"blend-orders 422: lot {lot} is {got} tea, component '{n}' must be {KIND[n]}")
                listed = [w.strip().lower() for w in label.split(":", 1)[1].split(".")[0].split(",")]
                extra = [w for w in listed if w not in grams]
                if extra:
                    raise OrderRejected(f"blend-orders 422: label lists {extra}, which are not in the blend")
                missing = [n for n in grams if n not in {r["component"] for r in reserved}]
                if missing:
                    raise OrderRejected(f"blend-orders 409: {sum(r['g'] for r in reserved)} g reserved of {sum(grams.values())} g; no hold for {missing}")
                lab = round(sum(LOTS[n][0]["caffeine_pct"] * 10 * g for n, g in grams.items() if LOTS[n][0]["lot"] == submission["lots"][n]) / sum(grams.values()), 1)
                if abs(declared["caffeine_mg_per_g"] - lab) > 0.1 * max(lab, 1):
                    raise OrderRejected(f"blend-orders 422: declared caffeine {declared['caffeine_mg_per_g']} mg/g differs from the lab value {lab} mg/g")
                t.out(s, {"order": order["order"], "status": "scheduled"})
            t.out(top, f"{order['order']} scheduled for blending")
    except OrderRejected:
        pass
    finally:
        t.close()
