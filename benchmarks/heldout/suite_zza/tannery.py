"""Leather tannery batch planner (recording SDK): lot intake, recipe, drum plan, dosing, shaving, ERP submit."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trajdebug

from .common import client, request_text
from .kit import active

AGENT = "tannery-batch-planner"
ROUTE = "sdk"
DOMAIN = "leather tannery"
SHAPE = "intake -> lot parse -> recipe retrieval -> LLM drum plan -> per-stage dose/charge loop (pH retry) -> shift schedule -> drum slot -> thickness conversion -> batch state -> ERP submit"

INPUTS: dict[str, dict[str, Any]] = {
    "A": {"order": "TN-4471", "article": "nappa", "lot": "L-88", "weight": "1,250.5", "hides": 40, "thickness_in": 0.051, "start_h": 8},
    "B": {"order": "TN-4502", "article": "nappa", "lot": "L-91", "weight": "2,010.0", "hides": 66, "thickness_in": 0.049, "start_h": 6},
    "R1": {"order": "TN-4380", "article": "upholstery", "lot": "L-70", "weight": "980.0", "hides": 31, "thickness_in": 0.047, "start_h": 7},
    "R2": {"order": "TN-4391", "article": "nappa", "lot": "L-73", "weight": "1,104.2", "hides": 35, "thickness_in": 0.052, "start_h": 6},
    "R3": {"order": "TN-4412", "article": "saddle", "lot": "L-77", "weight": "1,612.8", "hides": 48, "thickness_in": 0.140, "start_h": 8},
    "R4": {"order": "TN-4420", "article": "upholstery", "lot": "L-80", "weight": "1,330.9", "hides": 42, "thickness_in": 0.046, "start_h": 7},
}
REFS = ["R1", "R2", "R3", "R4"]

RECIPES = {
    "nappa": {"recipe": "RX-NAP-4", "article": "nappa", "chrome_pct": 6.5, "stages": ["soak", "lime", "delime", "pickle", "tan"], "mm": [1.1, 1.4]},
    "nubuck": {"recipe": "RX-NUB-2", "article": "nubuck", "chrome_pct": 5.0, "stages": ["soak", "lime", "delime", "pickle", "tan"], "mm": [1.1, 1.4]},
    "upholstery": {"recipe": "RX-UPH-1", "article": "upholstery", "chrome_pct": 6.2, "stages": ["soak", "lime", "delime", "pickle", "tan"], "mm": [1.0, 1.3]},
    "saddle": {"recipe": "RX-SAD-3", "article": "saddle", "chrome_pct": 7.0, "stages": ["soak", "lime", "delime", "pickle", "tan"], "mm": [3.3, 3.8]},
}
STAGE_PCT = {"soak": 200.0, "lime": 3.0, "delime": 1.5, "pickle": 7.0}
HOURS = {"soak": 2, "lime": 2, "delime": 1, "pickle": 1, "tan": 2}


def policy(request: Any) -> str:
    system, text = request_text(request)
    if "drum plan" in system:
        m = re.search(r"stages: (\[.*?\])", text)
        stages = json.loads(m.group(1)) if m else []
        if active("tannery_03"):
            stages = [s for s in stages if s != "pickle"]
        return json.dumps({"drum": "D3", "stages": stages, "note": "standard float"})
    return "ok"


@trajdebug.step(kind="input")
def receive_order(order: dict) -> dict:
    return dict(order)


@trajdebug.step(kind="tool")
def fetch_hide_lot(lot: str, inp: dict) -> str:
    return f"LOT {lot} | HIDES {inp['hides']} | WEIGHT_KG {inp['weight']} | GRADE A | SALTED yes"


@trajdebug.step(kind="parse")
def parse_hide_lot(text: str) -> dict:
    fields = dict(part.strip().split(" ", 1) for part in text.split("|"))
    raw = fields["WEIGHT_KG"]
    if active("tannery_01"):
        weight = float(raw.split(",")[-1])
    else:
        weight = float(raw.replace(",", ""))
    return {"lot": fields["LOT"], "hides": int(fields["HIDES"]), "weight_kg": weight, "grade": fields["GRADE"]}


@trajdebug.step(kind="retrieval")
def lookup_recipe(article: str) -> dict:
    ranked = sorted(RECIPES, key=lambda k: (k != article, k))
    if active("tannery_02"):
        ranked = sorted(RECIPES, key=lambda k: (k[:1] != article[:1], -len(k)))
    return dict(RECIPES[ranked[0]])


@trajdebug.step(kind="other")
def compute_dose(stage: str, lot: dict, recipe: dict) -> dict:
    pct = recipe["chrome_pct"] if stage == "tan" else STAGE_PCT[stage]
    return {"stage": stage, "kg": round(lot["weight_kg"] * pct / 100, 2), "pct": pct}


@trajdebug.step(kind="tool")
def read_float_ph(drum: str, stage: str, pickled: bool) -> dict:
    ph = {"soak": 8.1, "lime": 12.4, "delime": 8.6, "pickle": 2.9}.get(stage, 2.9 if pickled else 5.8)
    return {"drum": drum, "stage": stage, "ph": ph}


@trajdebug.step(kind="tool")
def charge_drum(drum: str, dose: dict, reading: dict) -> dict:
    if dose["stage"] == "tan" and reading["ph"] > 3.2:
        raise RuntimeError(f"drum {drum} controller refused chrome charge: float pH {reading['ph']} above 3.2 limit")
    return {"drum": drum, "stage": dose["stage"], "charged_kg": dose["kg"], "status": "charged"}


@trajdebug.step(kind="other")
def schedule_shift(stages: list, start_h: int) -> dict:
    total = sum(HOURS[s] for s in stages)
    end = start_h + total + (1 if active("tannery_04") else 0)
    return {"start": f"{start_h:02d}:00", "end": f"{end:02d}:00", "hours": total}


@trajdebug.step(kind="tool")
def book_drum_slot(drum: str, shift: dict) -> dict:
    if int(shift["end"][:2]) - int(shift["start"][:2]) != shift["hours"]:
        raise RuntimeError(f"drum calendar 409: {drum} slot {shift['start']}-{shift['end']} does not match {shift['hours']} process hours")
    return {"drum": drum, "slot": f"{shift['start']}-{shift['end']}", "status": "held"}


@trajdebug.step(kind="other")
def convert_thickness(inches: float) -> float:
    factor = 2.54 if active("tannery_05") else 25.4
    return round(inches * factor, 2)


@trajdebug.step(kind="condition")
def check_shaving_target(mm: float, recipe: dict) -> str:
    lo, hi = recipe["mm"]
    if not lo <= mm <= hi:
        raise ValueError(f"shaving target {mm} mm outside article range {lo}-{hi} mm ({recipe['recipe']})")
    return "within range"


@trajdebug.step(kind="state")
def save_batch_record(order: dict, lot: dict, recipe: dict, charges: list, shift: dict, mm: float) -> dict:
    rec = {"order": order["order"], "lot": lot["lot"], "recipe": recipe["recipe"], "article": recipe["article"],
           "charges": charges, "shift": shift, "shave_mm": mm}
    trajdebug.current_run().state["batch"] = rec
    return rec


@trajdebug.step(kind="tool")
def submit_batch(inp: dict) -> dict:
    rec = trajdebug.current_run().state["batch"]
    true_kg = float(inp["weight"].replace(",", ""))
    if rec["article"] != inp["article"]:
        raise RuntimeError(f"ERP 422: recipe {rec['recipe']} is not approved for article {inp['article']} (order {rec['order']})")
    tan = [c for c in rec["charges"] if c["stage"] == "tan"]
    chrome = tan[0]["charged_kg"] if tan else 0.0
    if chrome < true_kg * 0.06:
        raise RuntimeError(f"ERP 422: chrome charge {chrome} kg below 6% of lot {rec['lot']} weight {true_kg} kg")
    if rec["shift"]["hours"] + inp["start_h"] != int(rec["shift"]["end"][:2]):
        raise RuntimeError(f"ERP 409: drum D3 booking {rec['shift']['start']}-{rec['shift']['end']} does not match {rec['shift']['hours']} process hours")
    return {"status": 201, "batch": f"B-{rec['order']}", "lot": rec["lot"]}


def record(key: str, path: Path, base_url: str) -> None:
    inp = INPUTS[key]
    llm = client(base_url)
    try:
        with trajdebug.run(AGENT, task=f"plan tanning batch for order {inp['order']}", path=str(path)):
            order = receive_order(inp)
            text = fetch_hide_lot(order["lot"], inp)
            lot = parse_hide_lot(text)
            recipe = lookup_recipe(order["article"])
            messages = [
                {"role": "system", "content": "You write the drum plan for a tannery batch as JSON."},
                {"role": "user", "content": f"Lot {lot['lot']}, {lot['hides']} hides, recipe {recipe['recipe']} stages: {json.dumps(recipe['stages'])}"},
            ]
            with trajdebug.step("plan_drum_run", kind="llm", input={"messages": messages}) as s:
                reply = llm.chat.completions.create(model="fake-model", messages=messages)
                s.output = {"role": "assistant", "content": reply.choices[0].message.content}
            plan = json.loads(s.output["content"])
            charges = []
            for stage in plan["stages"]:
                reading = read_float_ph(plan["drum"], stage, "pickle" in plan["stages"])
                dose = compute_dose(stage, lot, recipe)
                charges.append(charge_drum(plan["drum"], dose, reading))
            shift = schedule_shift(plan["stages"], order["start_h"])
            book_drum_slot(plan["drum"], shift)
            mm = convert_thickness(order["thickness_in"])
            check_shaving_target(mm, recipe)
            save_batch_record(order, lot, recipe, charges, shift, mm)
            submit_batch(inp)
    except (RuntimeError, ValueError):
        pass


CASES = [
    dict(case="tannery_01", fault_kind="lossy_parsing", input="A", root=("parse_hide_lot", 1, "parse"), failure=("submit_batch", 1),
         description="The lot parser keeps only the digits after the thousands comma of the hide weight, so every dose is computed for a lot a fraction of its size and the ERP rejects the chrome charge."),
    dict(case="tannery_02", fault_kind="wrong_retrieval", input="B", root=("lookup_recipe", 1, "retrieval"), failure=("submit_batch", 1),
         description="The recipe lookup ranks a longer recipe name with the same initial first and returns the nubuck recipe for a nappa order, which the ERP refuses at submit."),
    dict(case="tannery_03", fault_kind="plan_error", input="A", root=("plan_drum_run", 1, "llm"), failure=("charge_drum", 4),
         description="The drum plan from the model leaves out the pickle stage, so the float is still alkaline when the chrome charge is attempted and the drum controller refuses it."),
    dict(case="tannery_04", fault_kind="off_by_one", input="B", root=("schedule_shift", 1, "other"), failure=("book_drum_slot", 1),
         description="The shift scheduler counts one hour too many when it computes the booking's end, and the drum calendar finds the slot longer than the process hours."),
    dict(case="tannery_05", fault_kind="unit_error", input="A", root=("convert_thickness", 1, "other"), failure=("check_shaving_target", 1),
         description="The thickness conversion multiplies inches by 2.54 instead of 25.4, so the shaving target is ten times too thin and the range check fails."),
]
