"""Topiary nursery: turn a customer's order e-mail into reserved plants, a delivery plan and a confirmation (sdk route)."""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import trajdebug
from openai import OpenAI

import kit
from harness import Brain, chat_prompt, payload

NAME, ROUTE, DOMAIN = "topiary-orders", "sdk", "a topiary nursery's orders"
SHAPE = "intake, LLM extraction + parse, per-line stock/price/reserve loop (retried stock gateway), customer memory, delivery sub-agent (zone tool, LLM van plan, parse), discount, LLM confirmation, validator"

SPECIES = {"box ball": 0.9, "yew cone": 1.4, "bay standard": 2.1, "privet cloud": 1.7, "holly pyramid": 1.6, "beech spiral": 1.2}
HEIGHTS = [60, 80, 100, 120, 150, 180]
CUSTOMERS = [("Hartwell Gardens", "trade"), ("Mrs P. Oduya", "retail"), ("Lantern Hotel", "trade"), ("Fenwick Estate", "estate"), ("Tom Gage", "retail"), ("Brook Farm Shop", "trade"), ("Castle Mews HOA", "estate"), ("Ivy Leigh", "retail"), ("Millbank School", "trade")]
DISCOUNT = {"trade": 0.15, "estate": 0.10, "retail": 0.0}
ZONES = {"GU": ("south", ["Tuesday", "Thursday"]), "RG": ("west", ["Monday", "Wednesday"]), "SL": ("north", ["Wednesday", "Friday"])}
VANS = [("V1", 30), ("V2", 60), ("V3", 120)]


def make_order(i: int) -> dict:
    names = list(SPECIES)
    lines = []
    for k in range(4):
        sp = names[(i + 2 * k) % len(names)]
        lines.append({"species": sp, "height_cm": HEIGHTS[(i * 3 + k * 2) % len(HEIGHTS)], "qty": 2 + (i + k * 3) % 9})
    name, tier = CUSTOMERS[i]
    postcode = ["GU7 2AB", "RG4 9QT", "SL6 1HH"][i % 3]
    text = f"Order from {name}, deliver to {postcode}: " + "; ".join(f"{l['qty']} x {l['species']} at {l['height_cm']} cm" for l in lines)
    return {"order_no": f"TN-{4100 + i}", "customer": name, "tier": tier, "postcode": postcode, "lines": lines, "text": text}


def unit_price(species: str, height_cm: int) -> float:
    return round(SPECIES[species] * height_cm / 10, 2)


brain = Brain()


@brain.on("extract_lines")
def _extract(request, text):
    lines = [dict(l) for l in payload(text)["lines"]]
    if kit.on("zzu_topiary_01"):
        lines[2]["height_cm"] = lines[2]["height_cm"] / 100  # the model gives this line in metres
    return json.dumps({"lines": lines})


@brain.on("plan_van")
def _plan_van(request, text):
    d = payload(text)
    van = next(v for v, cap in VANS if cap >= d["plants"])
    day = d["days"][0]
    if kit.on("zzu_topiary_04"):
        day = "Saturday"
    trolleys = d["tall_plants"] // 4 + (1 if d["tall_plants"] % 4 else 0)
    return f"VAN: {van}; DAY: {day}; TROLLEYS: {trolleys}"


@brain.on("confirm")
def _confirm(request, text):
    d = payload(text)
    return f"Dear {d['customer']}, your order {d['order_no']} is confirmed for {d['day']}. Total due: {d['total']:.2f} GBP."


_gateway = {"calls": 0}


@trajdebug.step(kind="input")
def read_order(order: dict) -> dict:
    return {"order_no": order["order_no"], "text": order["text"], "lines": order["lines"], "postcode": order["postcode"], "customer": order["customer"]}


def _llm(client, name, prompt):
    msgs = [{"role": "system", "content": "You are the order desk of a topiary nursery."}, {"role": "user", "content": prompt}]
    with trajdebug.step(name, kind="llm", input={"messages": msgs}) as s:
        r = client.chat.completions.create(model="fake-model", messages=msgs)
        s.output = {"role": "assistant", "content": r.choices[0].message.content}
    return s.output


@trajdebug.step(kind="parse")
def parse_lines(answer: dict) -> list:
    return json.loads(answer["content"])["lines"]


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def check_stock(species: str, height_cm: float) -> dict:
    _gateway["calls"] += 1
    if _gateway["calls"] == 2:
        raise ConnectionError("stock gateway timed out")
    lot_height = next((h for h in HEIGHTS if h >= height_cm), HEIGHTS[-1])
    return {"species": species, "lot": f"{species[:3].upper()}-{lot_height}", "height_cm": lot_height, "available": 40}


@trajdebug.step(kind="tool")
def price_line(species: str, height_cm: int, qty: int) -> dict:
    each = unit_price(species, height_cm)
    if kit.on("zzu_topiary_02") and qty >= 1 and species == "privet cloud":
        return {"species": species, "each": each, "line_total": each}  # priced for one plant
    return {"species": species, "each": each, "line_total": round(each * qty, 2)}


@trajdebug.step(kind="tool")
def reserve_plant(lot: dict, qty: int) -> dict:
    return {"lot": lot["lot"], "species": lot["species"], "height_cm": lot["height_cm"], "qty": qty}


@trajdebug.step(kind="state")
def remember_customer(name: str, tier: str) -> dict:
    if kit.on("zzu_topiary_03"):
        tier = "retail" if tier != "retail" else tier  # the account lookup's first match
    rec = {"name": name, "tier": tier}
    trajdebug.current_run().state["customer"] = rec
    return rec


@trajdebug.step(kind="tool")
def lookup_zone(postcode: str) -> dict:
    zone, days = ZONES[postcode[:2]]
    return {"zone": zone, "days": days}


@trajdebug.step(kind="parse")
def parse_van(answer: dict) -> dict:
    parts = dict(p.split(": ") for p in answer["content"].split("; "))
    if kit.on("zzu_topiary_05"):
        parts = dict(p.split(": ") for p in answer["content"].split("; ")[:2])
    trolleys = int(parts.get("TROLLEYS", 0))
    return {"van": parts["VAN"], "day": parts["DAY"], "trolleys": trolleys}


@trajdebug.step(kind="agent")
def plan_delivery(client, postcode: str, reserved: list) -> dict:
    zone = lookup_zone(postcode)
    plants = sum(r["qty"] for r in reserved)
    tall = sum(r["qty"] for r in reserved if r["height_cm"] >= 150)
    ans = _llm(client, "plan_van", chat_prompt("plan_van", "Pick a van, a delivery day and trolleys (one per 4 tall plants).", {"plants": plants, "tall_plants": tall, "days": zone["days"]}))
    plan = parse_van(ans)
    return {**plan, "zone": zone["zone"]}


@trajdebug.step(kind="other")
def apply_discount(priced: list) -> dict:
    cust = trajdebug.current_run().state["customer"]
    gross = round(sum(p["line_total"] for p in priced), 2)
    rate = DISCOUNT[cust["tier"]]
    return {"gross": gross, "rate": rate, "total": round(gross * (1 - rate), 2)}


@trajdebug.step(kind="condition")
def validate_order(order: dict, reserved: list, priced: list, delivery: dict, bill: dict, confirmation: dict) -> str:
    for line, res, pr in zip(order["lines"], reserved, priced):
        if res["height_cm"] != line["height_cm"] or res["qty"] != line["qty"]:
            raise ValueError(f"{order['order_no']}: reserved {res['qty']} x {res['lot']} ({res['height_cm']} cm) for {line['qty']} x {line['species']} at {line['height_cm']} cm")
        expect = round(unit_price(line["species"], line["height_cm"]) * line["qty"], 2)
        if abs(pr["line_total"] - expect) > 0.005:
            raise ValueError(f"{order['order_no']}: {line['species']} line priced {pr['line_total']:.2f}, list price gives {expect:.2f}")
    zone, days = ZONES[order["postcode"][:2]]
    if delivery["day"] not in days:
        raise ValueError(f"{order['order_no']}: delivery on {delivery['day']}, zone {zone} is served on {' and '.join(days)}")
    tall = sum(l["qty"] for l in order["lines"] if l["height_cm"] >= 150)
    if delivery["trolleys"] * 4 < tall:
        raise ValueError(f"{order['order_no']}: {delivery['trolleys']} trolleys for {tall} plants of 150 cm or more")
    rate = DISCOUNT[order["tier"]]
    if abs(bill["rate"] - rate) > 1e-9:
        raise ValueError(f"{order['order_no']}: discount {bill['rate']:.0%} applied, {order['tier']} accounts get {rate:.0%}")
    if f"{bill['total']:.2f}" not in confirmation["content"]:
        raise ValueError(f"{order['order_no']}: confirmation does not state the total {bill['total']:.2f}")
    return "ok"


def record(server, i: int, path: str) -> None:
    order = make_order(i)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    server.use(brain)
    _gateway["calls"] = 0
    try:
        with trajdebug.run(NAME, task=f"process order {order['order_no']}", path=path):
            got = read_order(order)
            ans = _llm(client, "extract_lines", chat_prompt("extract_lines", "Extract the order lines as JSON.", {"text": got["text"], "lines": got["lines"]}))
            lines = parse_lines(ans)
            reserved, priced = [], []
            for line in lines:
                lot = check_stock(line["species"], line["height_cm"])
                priced.append(price_line(line["species"], lot["height_cm"], line["qty"]))
                reserved.append(reserve_plant(lot, line["qty"]))
            remember_customer(order["customer"], order["tier"])
            delivery = plan_delivery(client, order["postcode"], reserved)
            bill = apply_discount(priced)
            conf = _llm(client, "draft_confirmation", chat_prompt("confirm", "Write the confirmation.", {"customer": order["customer"], "order_no": order["order_no"], "day": delivery["day"], "total": bill["total"]}))
            validate_order(order, reserved, priced, delivery, bill, conf)
    except ValueError:
        pass


CASES = [
    dict(id="zzu_topiary_01", kind="unit_error", root=("extract_lines", 1), failure=("validate_order", 1), input=0,
         description="The extraction model gives the third line's height in metres (1.2) instead of centimetres, so a 60 cm lot is reserved."),
    dict(id="zzu_topiary_02", kind="tool_ignores_argument", root=("price_line", 2), failure=("validate_order", 1), input=1,
         description="The pricing tool ignores qty for privet clouds and returns the price of a single plant as the line total."),
    dict(id="zzu_topiary_03", kind="bad_memory_write", root=("remember_customer", 1), failure=("validate_order", 1), input=2,
         description="The customer memory records a trade account as retail, so no trade discount is applied later."),
    dict(id="zzu_topiary_04", kind="hallucinated_value", root=("plan_van", 1), failure=("validate_order", 1), input=3,
         description="The van planner answers a Saturday delivery, a day not among the zone's delivery days it was given."),
    dict(id="zzu_topiary_05", kind="lossy_parsing", root=("parse_van", 1), failure=("validate_order", 1), input=4,
         description="The van-plan parser reads a single trolley as none, so tall plants go without trolleys."),
]
REFS = [5, 6, 7, 8]
