"""Metronome workshop: production run for a customer order (trajdebug recording API, sub-agent per order line).

Shape: order -> model build plan -> plan parser -> supplier catalogue retrieval -> parallel stock checks
(asyncio) -> part reservation (retried once) -> one `build_line` sub-agent per order line (movement lookup,
pendulum fitting when planned, escapement tuning, run.state write) -> review notes -> model quality review ->
review parser -> final inspection -> certificates -> packing -> invoice with a units check.
"""
from __future__ import annotations

import asyncio
import json
import re

import trajdebug
from suitecommon import chat_text, prompt, read_prompt

RUN_NAME = "metronome-workshop-production"
ROUTE = "sdk"
DOMAIN = "metronome workshop"
SHAPE = "batch: one sub-agent step per order line (6-9 lines), asyncio parallel stock checks, retry, run.state per line, model plan + model review"

ACTIVE = ""

CATALOG = [
    {"movement": "M-20 spring", "type": "mechanical", "bpm": [40, 208]},
    {"movement": "M-24 spring", "type": "mechanical", "bpm": [40, 208]},
    {"movement": "Q-5 quartz", "type": "electronic", "bpm": [30, 252]},
    {"movement": "M-12 bell", "type": "mechanical", "bpm": [40, 208]},
    {"movement": "Q-9 quartz", "type": "electronic", "bpm": [20, 300]},
    {"movement": "M-30 tall case", "type": "mechanical", "bpm": [38, 200]},
]
MODELS = {"Maelzel Classic": "M-20 spring", "Pyramid Walnut": "M-24 spring", "Pocket Click": "Q-5 quartz",
          "Bell Tower": "M-12 bell", "Studio Pulse": "Q-9 quartz", "Conservatoire Tall": "M-30 tall case"}
BEAT_ERROR = {"M-20 spring": 0.4, "M-24 spring": 0.3, "Q-5 quartz": 0.1, "M-12 bell": 0.6, "Q-9 quartz": 0.1, "M-30 tall case": 0.5}
PREVIOUS_ORDER_NOTES = ["Order WO-0871 (Musikhaus Adler): 9 units Maelzel Classic passed", "Order WO-0871: 8 units Bell Tower passed"]


def _order(oid, customer, lines):
    return {"order": oid, "customer": customer, "lines": [{"line": i + 1, "model": m, "qty": q, "finish": f} for i, (m, q, f) in enumerate(lines)]}


INPUTS = [
    _order("WO-0912", "Conservatorio di Parma", [("Maelzel Classic", 4, "walnut"), ("Pocket Click", 10, "black"), ("Bell Tower", 2, "oak"),
                                                  ("Studio Pulse", 6, "grey"), ("Pyramid Walnut", 3, "walnut"), ("Maelzel Classic", 2, "ebony")]),
    _order("WO-0913", "Klavierhaus Jena", [("Pyramid Walnut", 5, "walnut"), ("Conservatoire Tall", 1, "mahogany"), ("Pocket Click", 12, "red"),
                                           ("Bell Tower", 3, "oak"), ("Studio Pulse", 4, "black"), ("Maelzel Classic", 6, "cherry"), ("Pocket Click", 5, "blue")]),
    _order("WO-0914", "Escola de Musica Braga", [("Studio Pulse", 8, "white"), ("Maelzel Classic", 3, "walnut"), ("Bell Tower", 1, "oak"),
                                                 ("Conservatoire Tall", 2, "ebony"), ("Pocket Click", 20, "black"), ("Pyramid Walnut", 2, "cherry"),
                                                 ("Maelzel Classic", 5, "oak"), ("Studio Pulse", 2, "grey")]),
    _order("WO-0915", "Royal Academy shop", [("Conservatoire Tall", 1, "walnut"), ("Maelzel Classic", 7, "mahogany"), ("Pocket Click", 9, "silver"),
                                             ("Bell Tower", 4, "oak"), ("Pyramid Walnut", 6, "walnut"), ("Studio Pulse", 3, "black"),
                                             ("Maelzel Classic", 2, "cherry"), ("Bell Tower", 1, "ebony"), ("Pocket Click", 4, "gold")]),
    _order("WO-0916", "Musikschule Linz", [("Bell Tower", 2, "oak"), ("Studio Pulse", 5, "white"), ("Maelzel Classic", 3, "walnut"),
                                           ("Pyramid Walnut", 4, "cherry"), ("Pocket Click", 8, "black"), ("Conservatoire Tall", 1, "oak")]),
]
CASES = [
    {"id": "met_plan_pendulum", "input": 0, "switch": "plan_no_pendulum", "kind": "plan_error",
     "root": ("plan_build", 1), "failure": ("final_inspection", 1),
     "description": "The model's build plan leaves out the pendulum station for mechanical movements, so no pendulum is ever fitted."},
    {"id": "met_catalog_page", "input": 1, "switch": "catalog_first_page", "kind": "truncated_result",
     "root": ("supplier_catalog", 1), "failure": ("lookup_movement", 2),
     "description": "The supplier catalogue returns only its first page of four movements, so the tall-case movement is missing."},
    {"id": "met_bench_sensor", "input": 2, "switch": "sensor_default", "kind": "swallowed_error",
     "root": ("tune_escapement", 4), "failure": ("issue_certificates", 1),
     "description": "Escapement tuning on line 4 catches a bench sensor read error and reports a 0.0% beat error instead of a measurement."},
    {"id": "met_line_finish", "input": 3, "switch": "finish_default", "kind": "bad_memory_write",
     "root": ("record_line", 3), "failure": ("pack_order", 1),
     "description": "The line record for line 3 is saved with the workshop's standard walnut finish rather than the silver the customer ordered."},
    {"id": "met_review_notes", "input": 4, "switch": "notes_previous", "kind": "context_pollution",
     "root": ("gather_review_notes", 1), "failure": ("final_invoice", 1),
     "description": "The review notes also carry the previous customer's order, so the model's units-passed count includes their 17 units."},
]

CLIENT = None
MODEL = "fake-model"
_RESERVE = {"calls": 0}


def policy(request):
    system, data = read_prompt(request)
    if system.startswith("Plan the build stations"):
        plans = {}
        for model in data["models"]:
            movement = MODELS[model]
            stations = ["case", "movement"]
            if "quartz" not in movement and ACTIVE != "plan_no_pendulum":
                stations.append("pendulum")
            stations += ["escapement", "finish"]
            plans[model] = stations
        return json.dumps({"stations": plans})
    if system.startswith("Review the production notes"):
        units = 0
        for note in data["notes"]:
            m = re.search(r"(\d+) units? .* passed", note)
            if m:
                units += int(m.group(1))
        return f"Quality review: {units} units passed bench inspection; no rework needed."
    raise ValueError(f"no answer for {system[:40]}")


@trajdebug.step(kind="input")
def receive_order(order: dict) -> dict:
    return order


@trajdebug.step(kind="llm")
def plan_build(messages: list[dict]) -> str:
    return chat_text(CLIENT, MODEL, messages)


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> dict:
    return json.loads(text)["stations"]


@trajdebug.step(kind="retrieval")
def supplier_catalog(query: str) -> list[dict]:
    items = [dict(item) for item in CATALOG]
    if ACTIVE == "catalog_first_page":
        items = items[:4]
    return items


@trajdebug.step(kind="tool")
async def check_stock(part: str) -> dict:
    await asyncio.sleep(0)
    return {"part": part, "on_hand": 40 + len(part)}


@trajdebug.step(kind="agent")
async def stock_round(parts: list[str]) -> list[dict]:
    results = []
    for part in parts:  # started in order, awaited together
        results.append(asyncio.ensure_future(check_stock(part)))
    return list(await asyncio.gather(*results))


@trajdebug.retry(attempts=2, on=(TimeoutError,))
@trajdebug.step(kind="tool")
def reserve_parts(order: str, stock: list[dict]) -> dict:
    _RESERVE["calls"] += 1
    if _RESERVE["calls"] == 1:
        raise TimeoutError("parts store did not confirm within 3 s")
    return {"order": order, "reserved": [s["part"] for s in stock]}


@trajdebug.step(kind="tool")
def lookup_movement(model: str, catalog: list[dict]) -> dict:
    wanted = MODELS[model]
    for item in catalog:
        if item["movement"] == wanted:
            return item
    raise KeyError(f"movement {wanted} for {model} not in the supplier catalogue")


@trajdebug.step(kind="tool")
def fit_pendulum(model: str, qty: int) -> dict:
    return {"model": model, "pendulum_weight_g": 38 if "Tall" not in model else 120, "units": qty}


@trajdebug.step(kind="tool")
def tune_escapement(line: int, movement: dict) -> dict:
    try:
        if ACTIVE == "sensor_default" and line == 4:
            raise OSError("bench sensor COM3 read timed out")
        beat = BEAT_ERROR[movement["movement"]]
    except OSError:
        beat = 0.0
    return {"line": line, "bpm": movement["bpm"], "beat_error_pct": beat}


@trajdebug.step(kind="state")
def record_line(line: dict, movement: dict, tuning: dict, pendulum: dict | None) -> None:
    finish = line["finish"]
    if ACTIVE == "finish_default" and line["line"] == 3:
        finish = "walnut"
    trajdebug.current_run().state[f"line:{line['line']}"] = {
        "model": line["model"], "qty": line["qty"], "finish": finish, "movement": movement["movement"],
        "type": movement["type"], "beat_error_pct": tuning["beat_error_pct"],
        "pendulum_g": pendulum["pendulum_weight_g"] if pendulum else None}


@trajdebug.step(kind="agent")
def build_line(line: dict, stations: list[str], catalog: list[dict]) -> dict:
    movement = lookup_movement(line["model"], catalog)
    pendulum = fit_pendulum(line["model"], line["qty"]) if "pendulum" in stations else None
    tuning = tune_escapement(line["line"], movement)
    record_line(line, movement, tuning, pendulum)
    return {"line": line["line"], "done": stations}


@trajdebug.step(kind="other")
def gather_review_notes(order: str, line_count: int) -> list[str]:
    state = trajdebug.current_run().state
    notes = [f"Order {order}: {state[f'line:{n}']['qty']} units {state[f'line:{n}']['model']} passed" for n in range(1, line_count + 1)]
    if ACTIVE == "notes_previous":
        notes = PREVIOUS_ORDER_NOTES + notes
    return notes


@trajdebug.step(kind="llm")
def quality_review(messages: list[dict]) -> str:
    return chat_text(CLIENT, MODEL, messages)


@trajdebug.step(kind="parse")
def read_review(text: str) -> dict:
    return {"units_passed": int(re.search(r"(\d+) units passed", text).group(1))}


@trajdebug.step(kind="condition")
def final_inspection(line_count: int) -> str:
    state = trajdebug.current_run().state
    for n in range(1, line_count + 1):
        rec = state[f"line:{n}"]
        if rec["type"] == "mechanical" and not rec["pendulum_g"]:
            raise AssertionError(f"line {n}: {rec['qty']} x {rec['model']} have no pendulum weight fitted")
    return "all lines inspected"


@trajdebug.step(kind="tool")
def issue_certificates(line_count: int) -> list[str]:
    state = trajdebug.current_run().state
    certs = []
    for n in range(1, line_count + 1):
        rec = state[f"line:{n}"]
        if rec["beat_error_pct"] < 0.05:
            raise ValueError(f"line {n}: beat error {rec['beat_error_pct']}% is below the bench resolution of 0.05%; certificate refused")
        certs.append(f"{rec['model']} line {n}: beat error {rec['beat_error_pct']}%")
    return certs


@trajdebug.step(kind="tool")
def pack_order(order: dict) -> dict:
    state = trajdebug.current_run().state
    for line in order["lines"]:
        rec = state[f"line:{line['line']}"]
        if rec["finish"] != line["finish"]:
            raise ValueError(f"packing slip line {line['line']}: {rec['finish']} {rec['model']} does not match purchase order finish {line['finish']}")
    return {"order": order["order"], "boxes": sum(line["qty"] for line in order["lines"])}


@trajdebug.step(kind="output")
def final_invoice(order: dict, review: dict, packed: dict) -> str:
    ordered = sum(line["qty"] for line in order["lines"])
    assert review["units_passed"] == ordered, f"review passed {review['units_passed']} units, order {order['order']} has {ordered}"
    return f"Invoice {order['order']}: {ordered} metronomes in {packed['boxes']} boxes"


def record(server, inp: dict, path: str) -> None:
    global CLIENT, MODEL
    from openai import OpenAI

    server.use(policy)
    CLIENT, MODEL = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0), server.model
    _RESERVE["calls"] = 0
    try:
        with trajdebug.run(RUN_NAME, task=f"production order {inp['order']}", path=path):
            order = receive_order(inp)
            models = sorted({line["model"] for line in order["lines"]})
            plan = parse_plan(plan_build(prompt("Plan the build stations for each metronome model as JSON.", {"models": models})))
            catalog = supplier_catalog("metronome movements")
            parts = sorted({MODELS[m] for m in models})
            stock = asyncio.run(stock_round(parts))
            reserve_parts(order["order"], stock)
            for line in order["lines"]:
                build_line(line, plan[line["model"]], catalog)
            notes = gather_review_notes(order["order"], len(order["lines"]))
            review = read_review(quality_review(prompt("Review the production notes and count the units that passed.", {"notes": notes})))
            final_inspection(len(order["lines"]))
            issue_certificates(len(order["lines"]))
            packed = pack_order(order)
            final_invoice(order, review, packed)
    except Exception:
        pass
