"""Sawmill custom-cut orders (sdk route): parse a web order, yard notes, a model cut plan, per-line
sub-agent (logs, saw, kiln, moisture with a sensor retry, grading stamp, pricing), delivery routing, invoice."""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchmarks.heldout.suite_s import kit
from openai import OpenAI

import trajdebug


AGENT = "sawmill-orders"
ROUTE = "sdk"
EXT = "jsonl"
DOMAIN = "sawmill custom-cut timber orders"
SHAPE = "parse, retrieval of yard notes, model cut plan, per-line sub-agent (logs, saw, kiln, moisture sensor retry, grading stamp, price), routing condition, haulage booking, invoice, model summary"

RATE = {"oak": 1450, "larch": 520, "douglas": 610, "cedar": 980}  # per m3
DENSITY = {"oak": 0.72, "larch": 0.59, "douglas": 0.53, "cedar": 0.37}  # t per m3
BATCH = {"oak": "B-04", "larch": "B-11", "douglas": "B-21", "cedar": "B-31"}


def _order(ref, site, lines):
    parts = [f"{n} x {sp} {w}x{t} @ {ln} m" for n, sp, w, t, ln in lines]
    return f"Order {ref}: " + "; ".join(parts) + f"; deliver to {site}"


CASES = [
    {"case": "sawmill_length_parse", "fault": "sm1", "kind": "lossy_parsing", "root": "parse_order",
     "fail": "post_invoice", "marker": '"length_m": 3,',
     "input": _order("SW-771", "Holm Farm", [(12, "oak", 200, 100, 3.6), (40, "larch", 150, 25, 4.8)])},
    {"case": "sawmill_kiln_plan", "fault": "sm2", "kind": "plan_error", "root": "plan_cuts",
     "fail": "grade_stamp", "marker": "L2:saw>plane",
     "input": _order("SW-774", "Fell End Barn", [(6, "douglas", 225, 75, 4.2), (60, "larch", 150, 25, 3.9)])},
    {"case": "sawmill_yard_notes", "fault": "sm3", "kind": "context_pollution", "root": "yard_notes",
     "fail": "saw_batch", "marker": "Kettle Barns",
     "input": _order("SW-779", "Brook Cottage", [(8, "oak", 150, 150, 2.4), (14, "douglas", 175, 50, 3.3), (30, "larch", 125, 25, 3.0)])},
    {"case": "sawmill_haulage_route", "fault": "sm4", "kind": "wrong_routing", "root": "route_delivery",
     "fail": "book_haulage", "marker": '"route": "courier"',
     "input": _order("SW-783", "Stonegate Mill", [(4, "oak", 300, 200, 5.4), (2, "oak", 250, 250, 4.8)])},
    {"case": "sawmill_kiln_target", "fault": "sm5", "kind": "tool_ignores_argument", "root": "kiln_schedule",
     "fail": "grade_stamp", "marker": '"target_mc": 25',
     "input": _order("SW-788", "Ridge House", [(6, "oak", 200, 150, 3.0), (4, "oak", 250, 100, 2.7), (24, "cedar", 100, 50, 3.0), (10, "douglas", 200, 50, 3.6)])},
]
REFS = [
    _order("SW-701", "Larks Rise", [(20, "larch", 150, 25, 3.6), (4, "douglas", 200, 75, 4.8)]),
    _order("SW-705", "Mill Lane", [(2, "oak", 200, 200, 3.0)]),
    _order("SW-709", "Beck Side", [(36, "cedar", 125, 19, 4.2), (12, "larch", 100, 50, 2.4)]),
    _order("SW-712", "Tarn View", [(8, "douglas", 150, 50, 3.9), (16, "oak", 100, 25, 2.1)]),
]


class MillError(RuntimeError):
    pass


def policy(request):
    msgs = request.body["messages"]
    system, data = msgs[0]["content"], json.loads(msgs[-1]["content"])
    if system.startswith("You plan"):
        notes = " ".join(data["notes"])
        plan = []
        for i, line in enumerate(data["lines"], 1):
            batches = re.findall(rf"batch (B-\d+) {line['species']}", notes)
            steps = ["saw", "plane"] if (line["species"] == "oak" or (kit.active("sm2") and i == 2)) else ["saw", "kiln", "plane"]
            plan.append({"line": i, "batch": batches[-1], "ops": f"L{i}:" + ">".join(steps)})
        return json.dumps({"order": data["ref"], "plan": plan})
    if system.startswith("You summarise"):
        return f"Order {data['ref']} is cut, graded and booked for delivery ({data['route']})."
    return "OK"


def _chat(client, system, payload):
    r = client.chat.completions.create(model="mill-model", messages=[{"role": "system", "content": system},
                                                                       {"role": "user", "content": json.dumps(payload)}])
    return r.choices[0].message.content


@trajdebug.step(kind="input")
def intake(text: str) -> str:
    return text


@trajdebug.step(kind="parse")
def parse_order(text: str) -> dict:
    head, rest = text.split(": ", 1)
    items, site = rest.rsplit("; deliver to ", 1)
    lines = []
    for item in items.split("; "):
        m = re.match(r"(\d+) x (\w+) (\d+)x(\d+) @ ([\d.]+) m", item)
        length = int(float(m.group(5))) if kit.active("sm1") else float(m.group(5))
        lines.append({"count": int(m.group(1)), "species": m.group(2), "width_mm": int(m.group(3)),
                      "thick_mm": int(m.group(4)), "length_m": length, "item": item})
    return {"ref": head.split()[1], "site": site, "lines": lines}


@trajdebug.step(kind="retrieval")
def yard_notes(species: list) -> list:
    notes = [f"batch {BATCH[s]} {s} seasoned stock, graded last month" for s in species]
    if kit.active("sm3") and "larch" in species:
        notes.append("batch B-17 larch held in shed 3 for Kettle Barns (order SW-702)")
    return notes


@trajdebug.step(kind="llm")
def plan_cuts(client, order: dict, notes: list) -> dict:
    return json.loads(_chat(client, "You plan the cuts for a sawmill order. Answer JSON.", {**order, "notes": notes}))


@trajdebug.step(kind="tool")
def pick_logs(species: str, length_m: float, batch: str) -> dict:
    return {"batch": batch, "species": species, "logs": 3, "min_length_m": round(length_m + 0.3, 1)}


@trajdebug.step(kind="tool")
def saw_batch(ref: str, batch: str, species: str, count: int) -> dict:
    held = {"B-17": "SW-702"}
    if batch in held:
        raise MillError(f"saw line refused batch {batch}: held for order {held[batch]}")
    return {"batch": batch, "pieces": count, "saw": "headrig-2", "ref": ref}


@trajdebug.step(kind="tool")
def kiln_schedule(batch: str, species: str, target_mc: int) -> dict:
    mc = 25 if kit.active("sm5") else target_mc
    return {"batch": batch, "kiln": "K1", "target_mc": mc, "hours": 40 + 2 * (30 - mc)}


@trajdebug.step(kind="tool")
def moisture_reading(batch: str, attempt: int, kiln: dict | None) -> dict:
    if attempt == 1:
        return {"batch": batch, "status": "sensor_warmup"}
    mc = kiln["target_mc"] if kiln else 34
    return {"batch": batch, "status": "ok", "mc_percent": mc}


@trajdebug.step(kind="tool")
def grade_stamp(batch: str, species: str, mc_percent: int) -> dict:
    if species != "oak" and mc_percent > 20:
        raise MillError(f"grading agency declined stamp for {batch}: moisture {mc_percent}% above 20% for kiln-dried {species}")
    return {"batch": batch, "stamp": "KD-C16" if species != "oak" else "GREEN-OAK", "species": species}


@trajdebug.step(kind="other")
def price_line(line: dict) -> dict:
    vol = line["count"] * line["width_mm"] * line["thick_mm"] * line["length_m"] / 1e6
    return {"item": line["item"], "m3": round(vol, 3), "eur": round(vol * RATE[line["species"]], 2),
            "tonnes": round(vol * DENSITY[line["species"]], 3)}


@trajdebug.step(kind="condition")
def route_delivery(priced: list) -> dict:
    tonnes = round(sum(p["tonnes"] for p in priced), 3)
    measure = priced[0]["tonnes"] if kit.active("sm4") else tonnes
    return {"tonnes": tonnes, "route": "courier" if measure <= 1.0 else "lorry"}


@trajdebug.step(kind="tool")
def book_haulage(route: dict, site: str) -> dict:
    if route["route"] == "courier" and route["tonnes"] > 1.0:
        raise MillError(f"pallet courier rejected consignment to {site}: {route['tonnes']} t over the 1.0 t limit")
    return {"carrier": "PalletLine" if route["route"] == "courier" else "own lorry", "site": site}


@trajdebug.step(kind="tool")
def post_invoice(ref: str, text: str, priced: list) -> dict:
    shop = 0.0
    for item in text.split(": ", 1)[1].rsplit("; deliver to ", 1)[0].split("; "):
        m = re.match(r"(\d+) x (\w+) (\d+)x(\d+) @ ([\d.]+) m", item)
        shop += int(m.group(1)) * int(m.group(3)) * int(m.group(4)) * float(m.group(5)) / 1e6 * RATE[m.group(2)]
    total = round(sum(p["eur"] for p in priced), 2)
    if abs(total - round(shop, 2)) > 0.05:
        raise MillError(f"accounts API 409: invoice {ref} total {total:.2f} EUR differs from web order total {shop:.2f} EUR")
    return {"invoice": f"INV-{ref}", "eur": total}


@trajdebug.step(kind="llm")
def summarise(client, data: dict) -> str:
    return _chat(client, "You summarise the order status for the customer.", data)


@trajdebug.step(kind="output")
def deliver(text: str) -> str:
    return text


def record(text: str, path: Path, server) -> None:
    server.use(policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with trajdebug.run(AGENT, path=str(path), task=f"cut and deliver {text.split(':')[0]}"):
            order = parse_order(intake(text))
            notes = yard_notes(sorted({ln["species"] for ln in order["lines"]}))
            plan = plan_cuts(client, order, notes)
            priced = []
            for line, step in zip(order["lines"], plan["plan"]):
                with trajdebug.step("cut_line", kind="agent", input={"line": step["line"]}):
                    logs = pick_logs(line["species"], line["length_m"], step["batch"])
                    saw_batch(order["ref"], logs["batch"], line["species"], line["count"])
                    kiln = kiln_schedule(logs["batch"], line["species"], 18) if ">kiln>" in step["ops"] else None
                    attempt = 1
                    while (reading := moisture_reading(logs["batch"], attempt, kiln))["status"] != "ok":
                        attempt += 1
                    grade_stamp(logs["batch"], line["species"], reading["mc_percent"])
                    priced.append(price_line(line))
            route = route_delivery(priced)
            book_haulage(route, order["site"])
            inv = post_invoice(order["ref"], text, priced)
            deliver(summarise(client, {"ref": order["ref"], "route": route["route"], "invoice": inv["invoice"]}))
    except MillError:
        pass
