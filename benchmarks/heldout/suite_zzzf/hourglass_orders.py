"""Hourglass workshop: turns a customer's order e-mail into a work order, reserves materials, quotes and ships.

Route: trajdebug's own recording API (steps, run.state, a retried shipping call, a loop over components).
"""

from __future__ import annotations

import json
import re

import trajdebug
import suite_common as sc

RUN_NAME = "hourglass-workshop-orders"
ROUTE = "sdk"
DOMAIN = "hourglass maker's workshop orders"
SHAPE = "linear pipeline: model extraction, parser, sand-grade lookup, fill maths, bulb choice, per-component reservation loop, price list, retried shipping quote, final validator (about 17 steps)"
ACTIVE = None

INPUTS = [
    {"order_id": "HG-3101", "customer": "C-118", "email": "Please make 2 hourglasses, 30 minute run, walnut frame, amber sand. Plate text: 'For Ada, 1936'. Ship to Bergen 5003."},
    {"order_id": "HG-3102", "customer": "C-204", "email": "One hourglass, 15 minute run, oak frame, white sand. Plate text: 'Tea time'. Ship to Leeds LS1."},
    {"order_id": "HG-3103", "customer": "C-077", "email": "3 hourglasses, 60 minute run, brass frame, black basalt sand. Plate text: 'Chess club finals'. Ship to Lyon 69002."},
    {"order_id": "HG-3104", "customer": "C-311", "email": "1 hourglass, 5 minute run, walnut frame, blue sand. Plate text: 'Brush your teeth'. Ship to Porto 4050."},
    {"order_id": "HG-3105", "customer": "C-140", "email": "4 hourglasses, 10 minute run, oak frame, amber sand. Plate text: 'Quiet study hour'. Ship to Graz 8010."},
]
CITY_OF = {"C-118": "Bergen", "C-204": "Leeds", "C-077": "Lyon", "C-311": "Porto", "C-140": "Graz"}

CASES = [
    {"id": "zzzf_hourglass_01", "input": 0, "switch": "fill_seconds", "fault_kind": "unit_error",
     "root": ("compute_sand_fill", 1), "failure": "select_bulb",
     "description": "The sand fill multiplies the flow rate in grams per minute by the run time in seconds, so the fill is sixty times too heavy and no bulb can hold it."},
    {"id": "zzzf_hourglass_02", "input": 2, "switch": "plate_cut", "fault_kind": "lossy_parsing",
     "root": ("parse_order", 1), "failure": "engrave_plate",
     "description": "The order parser keeps only the first twelve characters of the plate text, so the engraving no longer matches the customer's approved proof."},
    {"id": "zzzf_hourglass_03", "input": 3, "switch": "city_invented", "fault_kind": "hallucinated_value",
     "root": ("extract_order", 1), "failure": "shipping_quote",
     "description": "The extraction model states the ship-to city as Lisbon although the e-mail says Porto 4050, and the carrier rejects the postcode for that city."},
    {"id": "zzzf_hourglass_04", "input": 1, "switch": "frame_swallow", "fault_kind": "swallowed_error",
     "root": ("reserve_component", 3), "failure": "final_check",
     "description": "The frame reservation hides the stock service's timeout and reports zero frames reserved as a normal answer, so the work order is short of frames at the final check."},
    {"id": "zzzf_hourglass_05", "input": 4, "switch": "old_prices", "fault_kind": "stale_data",
     "root": ("lookup_price_list", 1), "failure": "final_check",
     "description": "The price list lookup serves last season's list, so the quoted total falls below the current material cost floor."},
]

SAND_GRADES = {"amber": 9.5, "white": 8.0, "black basalt": 11.0, "blue": 8.5}  # grams per minute
BULBS = [("B-40", 60), ("B-60", 160), ("B-90", 400), ("B-120", 900)]  # bulb, max grams
STOCK = {"glass": 50, "sand": 9000, "walnut": 12, "oak": 20, "brass": 8}
PRICES_2026 = {"B-40": 38.0, "B-60": 46.0, "B-90": 58.0, "B-120": 74.0, "walnut": 42.0, "oak": 30.0, "brass": 65.0, "sand_per_100g": 3.2, "plate": 18.0}
PRICES_2025 = {"B-40": 31.0, "B-60": 37.0, "B-90": 45.0, "B-120": 59.0, "walnut": 29.0, "oak": 21.0, "brass": 48.0, "sand_per_100g": 2.1, "plate": 12.0}
COSTS = {"B-40": 22.0, "B-60": 27.0, "B-90": 34.0, "B-120": 44.0, "walnut": 24.0, "oak": 17.0, "brass": 40.0, "sand_per_100g": 1.5, "plate": 8.0}
PROOFS = {"HG-3101": "For Ada, 1936", "HG-3102": "Tea time", "HG-3103": "Chess club finals", "HG-3104": "Brush your teeth", "HG-3105": "Quiet study hour"}


def policy(request):
    text = sc.last_user(request)
    m = re.search(r"E-mail: (.*)", text, re.S)
    email = m.group(1) if m else text
    qty = re.match(r"\s*(\w+)", email.split("make ")[-1]).group(1)
    qty = {"One": 1, "one": 1}.get(qty, qty)
    minutes = int(re.search(r"(\d+) minute", email).group(1))
    frame = re.search(r"(\w+) frame", email).group(1)
    sand = re.search(r"frame, (.*?) sand", email).group(1)
    plate = re.search(r"Plate text: '(.*?)'", email).group(1)
    city, postcode = re.search(r"Ship to (\w+) (\w+)\.", email).groups()
    if ACTIVE == "city_invented":
        city = "Lisbon"
    return json.dumps({"quantity": int(qty), "run_minutes": minutes, "frame": frame, "sand": sand,
                       "plate_text": plate, "ship_city": city, "postcode": postcode})


@trajdebug.step(kind="input")
def receive_order(order: dict) -> dict:
    return order


@trajdebug.step(kind="llm")
def extract_order(messages: list[dict]) -> str:
    client = sc.openai_client()
    reply = client.chat.completions.create(model=sc.model(), messages=messages)
    return reply.choices[0].message.content


@trajdebug.step(kind="parse")
def parse_order(text: str) -> dict:
    data = json.loads(text)
    plate = data["plate_text"].strip()
    if ACTIVE == "plate_cut":
        plate = plate[:12]
    return {"quantity": int(data["quantity"]), "run_minutes": int(data["run_minutes"]), "frame": data["frame"].lower(),
            "sand": data["sand"].lower(), "plate_text": plate, "ship_city": data["ship_city"], "postcode": data["postcode"]}


@trajdebug.step(kind="retrieval")
def lookup_sand_grade(sand: str) -> dict:
    return {"sand": sand, "flow_g_per_min": SAND_GRADES[sand], "source": "sand-grade sheet rev 7"}


@trajdebug.step(kind="other")
def compute_sand_fill(grade: dict, run_minutes: int) -> dict:
    run_length = run_minutes * 60 if ACTIVE == "fill_seconds" else run_minutes
    grams = round(grade["flow_g_per_min"] * run_length * 1.04, 1)
    return {"fill_grams": grams, "margin": 1.04}


@trajdebug.step(kind="tool")
def select_bulb(fill: dict) -> dict:
    for bulb, cap in BULBS:
        if fill["fill_grams"] <= cap * 0.8:
            return {"bulb": bulb, "capacity_g": cap}
    raise ValueError(f"no bulb in the catalogue holds {fill['fill_grams']} g of sand (largest B-120 takes 720 g at 80%)")


@trajdebug.step(kind="tool")
def reserve_component(component: str, amount: float) -> dict:
    if ACTIVE == "frame_swallow" and component in ("walnut", "oak", "brass"):
        try:
            raise TimeoutError("stock service did not answer in 2 s")
        except TimeoutError:
            return {"component": component, "reserved": 0, "requested": amount}
    if STOCK[component] < amount:
        return {"component": component, "reserved": STOCK[component], "requested": amount}
    return {"component": component, "reserved": amount, "requested": amount}


@trajdebug.step(kind="state")
def save_work_order(order_id: str, spec: dict, bulb: dict, fill: dict, reservations: list) -> dict:
    wo = {"work_order": f"W-{order_id[3:]}", "spec": spec, "bulb": bulb["bulb"], "fill_grams": fill["fill_grams"],
          "reservations": reservations}
    trajdebug.current_run().state["work_order"] = wo
    return wo


@trajdebug.step(kind="retrieval")
def lookup_price_list(season: str) -> dict:
    served = "2025" if ACTIVE == "old_prices" else season
    return {"season": served, "prices": dict(PRICES_2025 if served == "2025" else PRICES_2026)}


@trajdebug.step(kind="other")
def quote_total(work_order: dict, price_list: dict) -> dict:
    p = price_list["prices"]
    spec = work_order["spec"]
    unit = p[work_order["bulb"]] + p[spec["frame"]] + p["sand_per_100g"] * work_order["fill_grams"] / 100 + p["plate"]
    return {"unit_price": round(unit, 2), "total": round(unit * spec["quantity"], 2), "currency": "EUR"}


@trajdebug.step(kind="tool")
def engrave_plate(order_id: str, plate_text: str) -> dict:
    proof = PROOFS[order_id]
    if plate_text != proof:
        raise ValueError(f"plate text '{plate_text}' does not match the approved proof '{proof}' for {order_id}")
    return {"plate": plate_text, "engraver_slot": "Tue 09:00"}


_ship_calls = {"n": 0}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def shipping_quote(city: str, postcode: str, parcels: int) -> dict:
    _ship_calls["n"] += 1
    if _ship_calls["n"] % 2 == 1:
        raise ConnectionError("carrier gateway reset the connection")
    valid = {"Bergen": "5003", "Leeds": "LS1", "Lyon": "69002", "Porto": "4050", "Graz": "8010"}
    if valid.get(city) != postcode:
        raise ValueError(f"carrier rejects postcode {postcode} for {city}")
    return {"carrier": "NordFreight", "city": city, "cost": 14.0 + 3.5 * parcels}


@trajdebug.step(kind="condition")
def final_check(work_order: dict, quote: dict, cost_floor: float) -> dict:
    need = work_order["spec"]["quantity"]
    for r in work_order["reservations"]:
        if r["reserved"] < r["requested"]:
            raise ValueError(f"{work_order['work_order']}: {r['reserved']} of {r['requested']} {r['component']} reserved")
    if quote["total"] < cost_floor:
        raise ValueError(f"quote {quote['total']:.2f} EUR below the material cost floor {cost_floor:.2f} EUR for {need} pieces")
    return {"approved": True}


@trajdebug.step(kind="tool")
def material_cost_floor(work_order: dict) -> float:
    spec = work_order["spec"]
    unit = COSTS[work_order["bulb"]] + COSTS[spec["frame"]] + COSTS["sand_per_100g"] * work_order["fill_grams"] / 100 + COSTS["plate"]
    return round(unit * spec["quantity"] * 1.4, 2)


@trajdebug.step(kind="output")
def confirm_order(order_id: str, quote: dict, ship: dict) -> str:
    return f"Order {order_id} confirmed: {quote['total']:.2f} EUR plus {ship['cost']:.2f} EUR shipping via {ship['carrier']}."


def record(inp: dict, path: str) -> None:
    _ship_calls["n"] = 0
    with trajdebug.run(RUN_NAME, task=f"work order for {inp['order_id']}", path=path):
        order = receive_order(inp)
        messages = [
            {"role": "system", "content": "Extract the hourglass order as JSON with quantity, run_minutes, frame, sand, plate_text, ship_city, postcode."},
            {"role": "user", "content": f"Order {order['order_id']}. E-mail: {order['email']}"},
        ]
        spec = parse_order(extract_order(messages))
        grade = lookup_sand_grade(spec["sand"])
        fill = compute_sand_fill(grade, spec["run_minutes"])
        bulb = select_bulb(fill)
        reservations = []
        for component, amount in (("glass", 2 * spec["quantity"]), ("sand", fill["fill_grams"] * spec["quantity"]),
                                  (spec["frame"], spec["quantity"])):
            reservations.append(reserve_component(component, amount))
        wo = save_work_order(order["order_id"], spec, bulb, fill, reservations)
        prices = lookup_price_list("2026")
        quote = quote_total(wo, prices)
        engrave_plate(order["order_id"], spec["plate_text"])
        ship = shipping_quote(spec["ship_city"], spec["postcode"], spec["quantity"])
        floor = material_cost_floor(wo)
        final_check(wo, quote, floor)
        confirm_order(order["order_id"], quote, ship)
