"""Pickle cannery batch release (sdk): order -> recipe -> plan -> lots -> stages with QA sub-agent -> label -> release."""

from __future__ import annotations

import json
import re
from typing import Any

import trajdebug

from .common import chat, last_user
from .kit import active

NAME = "pickle-cannery-batch"
ROUTE = "sdk"
INPUTS = {
    "dill": "Order PO-7741 for Harbourside Grocers: product DS-500 dill spears, 1200 jars of 500 ml",
    "bnb": "Order PO-7752 for Kettle & Crock: product BB-350 bread and butter chips, 800 jars of 350 ml",
    "ref1": "Order PO-7690 for Greenway Co-op: product DS-500 dill spears, 600 jars of 500 ml",
    "ref2": "Order PO-7702 for Pantry Lane: product BB-350 bread and butter chips, 400 jars of 350 ml",
    "ref3": "Order PO-7713 for Old Mill Deli: product GH-250 garlic gherkins, 900 jars of 250 ml",
    "ref4": "Order PO-7725 for Marlow Stores: product GH-250 garlic gherkins, 300 jars of 250 ml",
}
RECIPES = [
    {"id": "R-DS", "product": "DS-500", "title": "dill spears kosher style brine", "vinegar_pct": 5.0, "salt_pct": 3.5},
    {"id": "R-BB", "product": "BB-350", "title": "bread and butter chips sweet brine", "vinegar_pct": 4.5, "salt_pct": 1.5},
    {"id": "R-GH", "product": "GH-250", "title": "garlic gherkins dill brine", "vinegar_pct": 5.5, "salt_pct": 3.0},
]
LOTS_LIVE = [
    {"lot": "CU-3301", "kg": 900, "harvested": "2026-12-03"},
    {"lot": "CU-3302", "kg": 1400, "harvested": "2026-12-04"},
]
LOTS_CACHE = {"as_of": "2026-11-27", "lots": [{"lot": "CU-3188", "kg": 1600, "harvested": "2026-11-26"}]}
STAGES = ["wash", "grade", "pack", "brine", "pasteurize", "cool", "label"]
PREVIOUS_ORDER_NOTES = "Carry-over from PO-7612 (Seaview Market): fill 750 ml, tall jar"


def policy(request: Any) -> str:
    text = last_user(request)
    if text.startswith("PLAN"):
        return json.dumps({"stages": [s for s in STAGES if not (s == "pasteurize" and active("pk_plan"))]})
    if text.startswith("LABEL"):
        brief = json.loads(text[5:])
        fills = re.findall(r"fill (\d+) ml", " ".join(brief["notes"]))
        fill = int(fills[-1]) if fills else brief["fill_ml"]
        if active("pk_halluc"):
            fill = 450
        return json.dumps({"product": brief["product"], "net_ml": fill, "customer": brief["customer"],
                           "text": f"{brief['title']} - net {fill} ml"})
    return "ok"


@trajdebug.step(kind="parse")
def parse_order(text: str) -> dict:
    m = re.search(r"Order (\S+) for (.+?): product (\S+) (.+?), (\d+) jars of (\d+) ml", text)
    return {"po": m.group(1), "customer": m.group(2), "product": m.group(3), "desc": m.group(4),
            "jars": int(m.group(5)), "fill_ml": int(m.group(6))}


@trajdebug.step(kind="retrieval")
def retrieve_recipe(query: str) -> list[dict]:
    words = set(query.lower().split())
    scored = sorted(RECIPES, key=lambda r: -len(words & set(r["title"].split())))
    if active("pk_retrieval"):
        scored = sorted(RECIPES, key=lambda r: -len(words & set(r["title"].split()) - {"dill"}))[::-1]
    return scored[:2]


@trajdebug.step(kind="llm")
def plan_production(client: Any, order: dict, recipe: dict) -> dict:
    plan = json.loads(chat(client, [{"role": "user", "content": "PLAN " + json.dumps({"order": order, "recipe": recipe})}]))
    return plan


@trajdebug.step(kind="other")
def review_plan(plan: dict) -> list[str]:
    return [s for s in plan["stages"] if s in STAGES]


@trajdebug.step(kind="tool")
def fetch_cucumber_lots(kg_needed: float) -> dict:
    if active("pk_stale"):
        return LOTS_CACHE
    return {"as_of": "2026-12-04", "lots": LOTS_LIVE}


@trajdebug.step(kind="other")
def choose_lot(lots: dict, kg_needed: float) -> dict:
    best = max(lots["lots"], key=lambda x: x["kg"])
    return {"lot": best["lot"], "kg": round(kg_needed, 1), "harvested": best["harvested"]}


@trajdebug.step(kind="tool")
def run_stage(stage: str, po: str) -> dict:
    return {"stage": stage, "po": po, "status": "done"}


@trajdebug.step(kind="tool")
def measure_ph(sample: int, vinegar_pct: float) -> dict:
    return {"sample": sample, "ph": round(4.6 - vinegar_pct * 0.18 + sample * 0.01, 2)}


@trajdebug.step(kind="state")
def record_qa(reading: dict) -> None:
    trajdebug.current_run().state.setdefault("qa", []).append(reading)


@trajdebug.step(kind="other")
def assemble_label_brief(order: dict, recipe: dict) -> dict:
    notes = [f"customer {order['customer']}: fill {order['fill_ml']} ml"]
    if active("pk_context"):
        notes.append(PREVIOUS_ORDER_NOTES)
    return {"product": order["product"], "title": recipe["title"], "customer": order["customer"],
            "fill_ml": order["fill_ml"], "notes": notes}


@trajdebug.step(kind="llm")
def write_label(client: Any, brief: dict) -> dict:
    return json.loads(chat(client, [{"role": "user", "content": "LABEL" + json.dumps(brief)}]))


@trajdebug.step(kind="tool")
def reserve_lot(lot: dict) -> dict:
    live = {x["lot"]: x for x in LOTS_LIVE}
    if lot["lot"] not in live:
        raise LookupError(f"404 Not Found: cucumber lot {lot['lot']} has no remaining stock in the cold store")
    return {"reserved": lot["lot"], "kg": lot["kg"]}


@trajdebug.step(kind="tool")
def release_batch(record: dict) -> dict:
    errs = []
    if record["recipe_product"] != record["product"]:
        errs.append(f"recipe {record['recipe']} is approved for {record['recipe_product']}, not {record['product']}")
    if "pasteurize" not in record["stages_done"]:
        errs.append("process log has no pasteurize stage (scheduled process 21 CFR 113 requires it)")
    if record["label"]["net_ml"] != record["fill_ml"]:
        errs.append(f"label net {record['label']['net_ml']} ml does not match fill volume {record['fill_ml']} ml")
    if errs:
        raise ValueError("batch hold: " + "; ".join(errs))
    return {"released": record["po"]}


def run_case(ctx: dict, inp: str, path: str) -> None:
    client = ctx["client"]
    text = INPUTS[inp]
    try:
        with trajdebug.run(NAME, task=text, path=path) as run:
            with trajdebug.step("order_intake", kind="input") as s:
                s.output = text
            order = parse_order(text)
            hits = retrieve_recipe(order["desc"])
            recipe = hits[0]
            plan = plan_production(client, order, recipe)
            stages = review_plan(plan)
            kg = order["jars"] * order["fill_ml"] * 0.0006
            lots = fetch_cucumber_lots(kg)
            lot = choose_lot(lots, kg)
            done = []
            for i, stage in enumerate(stages):
                done.append(run_stage(stage, order["po"])["stage"])
                if stage == "brine":
                    with trajdebug.step("qa_agent", kind="agent", input={"stage": stage}):
                        for sample in (1, 2):
                            record_qa(measure_ph(sample, recipe["vinegar_pct"]))
                if stage == "grade":
                    reserve_lot(lot)
            brief = assemble_label_brief(order, recipe)
            label = write_label(client, brief)
            release_batch({"po": order["po"], "product": order["product"], "recipe": recipe["id"],
                           "recipe_product": recipe["product"], "stages_done": done, "label": label,
                           "fill_ml": order["fill_ml"], "qa": run.state["qa"]})
    except (ValueError, LookupError):
        pass


CASES = [
    ("pk_halluc", "hallucinated_value", "dill", "write_label", 1, "llm", "release_batch", 1,
     "The label model states a net volume of 450 ml that neither the order nor the brief holds."),
    ("pk_stale", "stale_data", "bnb", "fetch_cucumber_lots", 1, "tool", "reserve_lot", 1,
     "The lot lookup answers from a week-old cached snapshot whose only lot has since been used up."),
    ("pk_context", "context_pollution", "bnb", "assemble_label_brief", 1, "other", "release_batch", 1,
     "The label brief carries notes left over from an earlier customer's order, whose 750 ml fill the label model then uses."),
    ("pk_plan", "plan_error", "dill", "plan_production", 1, "llm", "release_batch", 1,
     "The production plan from the model drops the pasteurize stage, so the batch is processed without it."),
    ("pk_retrieval", "wrong_retrieval", "dill", "retrieve_recipe", 1, "retrieval", "release_batch", 1,
     "The recipe search ranks the bread and butter recipe first for a dill spears order."),
]
REFS = ["ref1", "ref2", "ref3", "ref4"]
