"""Skip hire: a booking agent for a waste-skip company (route: sdk).

Reads the customer's order with a model, looks up the postcode, has a model plan the
booking stages, classifies each waste item, checks the weight, picks a skip size, holds
one at the depot, works out the hire dates, applies for a council permit when the skip
stands on the road (a sub-agent), prices and schedules the delivery and checks the
booking against the company's rules.
"""

from __future__ import annotations

import copy
import json
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import common
import kit
from openai import OpenAI

import trajdebug


NAME = "skip-hire-booker"
ROUTE = "sdk"
DOMAIN = "skip hire"
SHAPE = (
    "input, model extraction + parser, postcode tool, state write, model plan + parser, per-item model "
    "classification + parser, weight check, size choice, model-built hold request, availability tool with "
    "retry, hire dates, permit sub-agent (rules retrieval, model draft, parser, portal tool), pricing, "
    "delivery tool, state write, model confirmation, validator"
)

SIZES = [4, 6, 8, 10, 12, 14]
WEIGHT_LIMIT_T = {4: 4.0, 6: 6.0, 8: 8.0, 10: 8.0, 12: 8.0, 14: 8.0}
WEEKLY_PRICE = {4: 180.0, 6: 225.0, 8: 265.0, 10: 310.0, 12: 355.0, 14: 395.0}
DENSITY = {
    "soil": 1.5,
    "rubble": 1.4,
    "concrete": 1.6,
    "garden": 0.3,
    "timber": 0.35,
    "plasterboard": 0.6,
    "household": 0.25,
    "metal": 0.5,
    "tiles": 1.1,
}
CLASS = {
    "soil": "inert",
    "rubble": "inert",
    "concrete": "inert",
    "tiles": "inert",
    "garden": "green",
    "timber": "mixed",
    "plasterboard": "gypsum",
    "household": "mixed",
    "metal": "mixed",
}

POSTCODES = {
    "LS7 3QT": {"council": "Leeds City Council", "depot": "D-NORTH", "depot_postcode": "LS11 5QT", "zone": 2},
    "LS6 2AB": {"council": "Leeds City Council", "depot": "D-NORTH", "depot_postcode": "LS11 5QT", "zone": 1},
    "BD9 4HT": {"council": "Bradford Council", "depot": "D-WEST", "depot_postcode": "BD4 7TJ", "zone": 2},
    "WF1 3PL": {"council": "Wakefield Council", "depot": "D-EAST", "depot_postcode": "WF2 0XQ", "zone": 3},
    "HG1 2RD": {
        "council": "Harrogate Borough Council",
        "depot": "D-NORTH",
        "depot_postcode": "LS11 5QT",
        "zone": 3,
    },
    "LS17 6DN": {
        "council": "Leeds City Council",
        "depot": "D-NORTH",
        "depot_postcode": "LS11 5QT",
        "zone": 2,
    },
    "BD18 3LA": {"council": "Bradford Council", "depot": "D-WEST", "depot_postcode": "BD4 7TJ", "zone": 1},
    "WF4 5AE": {"council": "Wakefield Council", "depot": "D-EAST", "depot_postcode": "WF2 0XQ", "zone": 2},
    "LS25 1BB": {"council": "Leeds City Council", "depot": "D-EAST", "depot_postcode": "WF2 0XQ", "zone": 3},
}
PERMIT_RULES = {
    "Leeds City Council": {"fee_per_week": 45.0, "lights_required": True, "max_days": 28},
    "Bradford Council": {"fee_per_week": 38.0, "lights_required": True, "max_days": 28},
    "Wakefield Council": {"fee_per_week": 52.0, "lights_required": True, "max_days": 14},
    "Harrogate Borough Council": {"fee_per_week": 40.0, "lights_required": True, "max_days": 28},
}


def _order(
    ref: str, customer: str, address: str, postcode: str, placement: str, start: str, days: int, items: str
) -> dict[str, Any]:
    rows = []
    for part in items.split(";"):
        material, volume = part.split()
        rows.append({"item": material, "volume_yd3": float(volume)})
    text = (
        f"Hi, it's {customer}. I need a skip at {address}, {postcode}, on the {placement}, from {start} for "
        f"{days} days. Going in: "
        + ", ".join(f"about {r['volume_yd3']} cubic yards of {r['item']}" for r in rows)
    )
    return {
        "order": ref,
        "customer": customer,
        "message": text,
        "fields": {
            "address": address,
            "postcode": postcode,
            "placement": placement,
            "start": start,
            "days": days,
            "items": rows,
        },
    }


INPUTS: dict[str, dict[str, Any]] = {
    "mill-lane": _order(
        "SK-40112",
        "Dan Whitaker",
        "14 Mill Lane",
        "LS7 3QT",
        "driveway",
        "2026-05-12",
        7,
        "garden 2.5; timber 1.5; household 1.2",
    ),
    "ash-grove": _order(
        "SK-40118",
        "Priya Nair",
        "3 Ash Grove",
        "LS6 2AB",
        "road",
        "2026-05-14",
        10,
        "rubble 2.0; plasterboard 1.0; timber 1.5",
    ),
    "manor-rd": _order(
        "SK-40121",
        "Helen Brook",
        "27 Manor Road",
        "BD9 4HT",
        "road",
        "2026-05-18",
        5,
        "household 2.0; metal 0.8; garden 1.6",
    ),
    "station-st": _order(
        "SK-40127",
        "Tom Oduya",
        "81 Station Street",
        "WF1 3PL",
        "driveway",
        "2026-05-19",
        14,
        "soil 4.0; rubble 2.5; concrete 0.5",
    ),
    "kings-rd": _order(
        "SK-40130",
        "Gwen Harper",
        "5 Kings Road",
        "HG1 2RD",
        "road",
        "2026-05-20",
        7,
        "tiles 1.0; plasterboard 1.4; timber 2.2",
    ),
    "park-view": _order(
        "SK-40101",
        "Imran Shah",
        "9 Park View",
        "LS17 6DN",
        "driveway",
        "2026-05-04",
        7,
        "garden 3.0; timber 2.0",
    ),
    "church-st": _order(
        "SK-40104",
        "Lucy Fenwick",
        "42 Church Street",
        "BD18 3LA",
        "road",
        "2026-05-06",
        14,
        "household 2.5; timber 1.0; metal 0.6",
    ),
    "orchard-cl": _order(
        "SK-40107",
        "Owen Price",
        "2 Orchard Close",
        "WF4 5AE",
        "driveway",
        "2026-05-07",
        10,
        "soil 3.0; rubble 2.0; garden 1.0",
    ),
    "high-st": _order(
        "SK-40109",
        "Nia Evans",
        "110 High Street",
        "LS25 1BB",
        "road",
        "2026-05-08",
        7,
        "plasterboard 1.5; tiles 0.8; household 1.5",
    ),
}
REFS = ["park-view", "church-st", "orchard-cl", "high-st"]

CASES = [
    {
        "id": "skips-days",
        "input": "mill-lane",
        "kind": "off_by_one",
        "root": ("compute_hire_dates", 1),
        "failure": ("validate_booking", 1),
        "description": "compute_hire_dates builds the hire days with range(1, days), so the 7-day order is booked "
        "for 6 days, from the day after the requested start.",
    },
    {
        "id": "skips-address",
        "input": "manor-rd",
        "kind": "bad_memory_write",
        "root": ("remember_order", 1),
        "failure": ("validate_booking", 1),
        "description": "remember_order stores the depot's postcode as the delivery postcode in run state, so the "
        "delivery is scheduled to BD4 7TJ instead of the customer's BD9 4HT.",
    },
    {
        "id": "skips-permit",
        "input": "ash-grove",
        "kind": "swallowed_error",
        "root": ("submit_permit", 1),
        "failure": ("validate_booking", 1),
        "description": "The council portal answers busy; submit_permit catches the error and returns a pending "
        "application with no reference, so the road skip is booked with no permit reference.",
    },
    {
        "id": "skips-hold",
        "input": "kings-rd",
        "kind": "wrong_tool_args",
        "root": ("request_hold_args", 1),
        "failure": ("validate_booking", 1),
        "description": "The model that builds the availability request passes the waste volume (4.6 yd3, as 4) as "
        "the skip size instead of the chosen 6 yd skip, so the hold reserves a 4 yd skip.",
    },
    {
        "id": "skips-weight",
        "input": "station-st",
        "kind": "plan_error",
        "root": ("plan_booking", 1),
        "failure": ("validate_booking", 1),
        "description": "The model's booking plan leaves out the weight check for a load of soil and rubble, so one "
        "8 yd skip is booked for about 10.3 t, over its 8 t limit.",
    },
]


# -- the scripted model -----------------------------------------------------------------------------------


def brain(request: Any) -> str:
    system, prompt = common.system_text(request), common.last_user(request)
    if system.startswith("You read skip hire orders"):
        ref = common.payload(prompt, "REF")
        order = next(o for o in INPUTS.values() if o["order"] == ref)
        return json.dumps(order["fields"])
    if system.startswith("You plan skip bookings"):
        order = common.payload(prompt, "ORDER")
        stages = ["classify"]
        dense = any(i["item"] in ("soil", "rubble", "concrete", "tiles") for i in order["items"])
        if dense and not kit.on("skips-weight"):
            stages.append("weight_check")
        stages += ["size", "availability", "dates"]
        if order["placement"] == "road":
            stages.append("permit")
        stages += ["price", "schedule", "confirm"]
        return json.dumps({"stages": stages})
    if system.startswith("You classify waste"):
        item = common.payload(prompt, "ITEM")
        return f"class: {CLASS[item['item']]}\ndensity_t_per_yd3: {DENSITY[item['item']]}"
    if system.startswith("You prepare availability requests"):
        req = common.payload(prompt, "REQUEST")
        size = req["chosen_size_yd"]
        if kit.on("skips-hold"):
            size = int(req["waste_volume_yd3"])
        return json.dumps(
            {"depot": req["depot"], "size_yd": size, "start": req["start"], "days": req["days"]}
        )
    if system.startswith("You draft council permit"):
        p = common.payload(prompt, "PERMIT")
        return json.dumps(
            {
                "council": p["council"],
                "site": p["address"],
                "from": p["from"],
                "to": p["to"],
                "days": p["days"],
                "lights": True,
                "cones": 4,
            }
        )
    if system.startswith("You write booking confirmations"):
        b = common.payload(prompt, "BOOKING")
        return (
            f"Hello {b['customer']}, your {b['size_yd']} yard skip is booked for {b['from']} to {b['to']}. "
            f"Total GBP {b['price']:.2f}."
        )
    return "Sorry, I can't help with that."


# -- the agent ----------------------------------------------------------------------------------------------

client: OpenAI | None = None
_calls: dict[str, int] = {}


def _ask(system: str, prompt: str) -> str:
    reply = client.chat.completions.create(
        model=common.MODEL,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
    )
    return reply.choices[0].message.content


class PortalBusy(Exception):
    pass


@trajdebug.step(kind="input")
def receive_order(order: dict) -> dict:
    return order


@trajdebug.step(kind="llm")
def extract_order(ref: str, message: str) -> str:
    return _ask("You read skip hire orders and answer with JSON fields.", f'REF: "{ref}"\nMessage: {message}')


@trajdebug.step(kind="parse")
def parse_order(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="tool")
def lookup_postcode(postcode: str) -> dict:
    return {"postcode": postcode, **POSTCODES[postcode]}


@trajdebug.step(kind="state")
def remember_order(ref: str, fields: dict, area: dict) -> dict:
    delivery = area["depot_postcode"] if kit.on("skips-address") else fields["postcode"]
    order = {
        "order": ref,
        "address": fields["address"],
        "delivery_postcode": delivery,
        "depot": area["depot"],
        "council": area["council"],
        "zone": area["zone"],
    }
    trajdebug.current_run().state["order"] = order
    return order


@trajdebug.step(kind="llm")
def plan_booking(fields: dict) -> str:
    return _ask("You plan skip bookings: list the stages this order needs.", f"ORDER: {json.dumps(fields)}")


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> list:
    return json.loads(text)["stages"]


@trajdebug.step(kind="llm")
def classify_waste(item: dict) -> str:
    return _ask("You classify waste for skip loads.", f"ITEM: {json.dumps(item)}")


@trajdebug.step(kind="parse")
def parse_class(item: dict, text: str) -> dict:
    values = dict(line.split(": ", 1) for line in text.splitlines())
    return {**item, "class": values["class"], "density": float(values["density_t_per_yd3"])}


@trajdebug.step(kind="other")
def weight_check(items: list) -> dict:
    tonnes = round(sum(i["volume_yd3"] * i["density"] for i in items), 2)
    return {"tonnes": tonnes, "heavy": tonnes > 6.0}


@trajdebug.step(kind="other")
def choose_skip_size(items: list, weight: dict | None) -> dict:
    volume = sum(i["volume_yd3"] for i in items)
    size = next(s for s in SIZES if s >= volume * 1.1)
    if weight and weight["tonnes"] > WEIGHT_LIMIT_T[size]:
        count = -(-int(weight["tonnes"] * 10) // 80)
        per_skip = next(
            s for s in SIZES if s >= volume * 1.1 / count and WEIGHT_LIMIT_T[s] >= weight["tonnes"] / count
        )
        return {"size_yd": per_skip, "count": count, "volume_yd3": round(volume, 2)}
    return {"size_yd": size, "count": 1, "volume_yd3": round(volume, 2)}


@trajdebug.step(kind="llm")
def request_hold_args(depot: str, choice: dict, start: str, days: int) -> str:
    req = {
        "depot": depot,
        "chosen_size_yd": choice["size_yd"],
        "waste_volume_yd3": choice["volume_yd3"],
        "start": start,
        "days": days,
    }
    return _ask(
        "You prepare availability requests for the depot system as JSON.", f"REQUEST: {json.dumps(req)}"
    )


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def check_availability(args: dict) -> dict:
    _calls["availability"] = _calls.get("availability", 0) + 1
    if args["depot"] == "D-EAST" and _calls["availability"] == 1:
        raise ConnectionError("depot system did not answer (502 Bad Gateway)")
    return {
        "hold": f"H-{args['depot'][2:]}-{args['size_yd']}-{args['start'].replace('-', '')}",
        "size_yd": args["size_yd"],
        "depot": args["depot"],
        "available": True,
    }


@trajdebug.step(kind="other")
def compute_hire_dates(start: str, days: int) -> dict:
    first = date.fromisoformat(start)
    offsets = range(1, days) if kit.on("skips-days") else range(days)
    hire = [first + timedelta(days=i) for i in offsets]
    return {
        "from": hire[0].isoformat(),
        "to": hire[-1].isoformat(),
        "hire_days": len(hire),
        "collection": (hire[-1] + timedelta(days=1)).isoformat(),
    }


@trajdebug.step(kind="retrieval")
def permit_rules(council: str) -> dict:
    return {"council": council, **PERMIT_RULES[council]}


@trajdebug.step(kind="llm")
def draft_permit(order: dict, dates: dict, rules: dict) -> str:
    p = {
        "council": rules["council"],
        "address": order["address"],
        "from": dates["from"],
        "to": dates["to"],
        "days": dates["hire_days"],
    }
    return _ask(
        "You draft council permit applications for skips on the highway, as JSON.", f"PERMIT: {json.dumps(p)}"
    )


@trajdebug.step(kind="parse")
def parse_permit(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="tool")
def submit_permit(application: dict) -> dict:
    try:
        if kit.on("skips-permit"):
            raise PortalBusy("council portal answered 503: try again later")
        ref = f"PR-{application['council'].split()[0][:3].upper()}-{application['from'].replace('-', '')[2:]}"
        return {"status": "granted", "reference": ref, "days": application["days"]}
    except PortalBusy:
        return {"status": "pending", "reference": None, "days": application["days"]}


@trajdebug.step(kind="agent")
def apply_permit(order: dict, dates: dict) -> dict:
    rules = permit_rules(order["council"])
    application = parse_permit(draft_permit(order, dates, rules))
    receipt = submit_permit(application)
    return {**receipt, "fee": round(rules["fee_per_week"] * -(-dates["hire_days"] // 7), 2)}


@trajdebug.step(kind="other")
def price_booking(choice: dict, dates: dict, permit: dict | None) -> dict:
    order = trajdebug.current_run().state["order"]
    weeks = -(-dates["hire_days"] // 7)
    skips = WEEKLY_PRICE[choice["size_yd"]] * choice["count"] * weeks
    delivery = {1: 25.0, 2: 40.0, 3: 60.0}[order["zone"]]
    permit_fee = permit["fee"] if permit else 0.0
    return {
        "skips": skips,
        "delivery": delivery,
        "permit": permit_fee,
        "total": round(skips + delivery + permit_fee, 2),
    }


@trajdebug.step(kind="tool")
def schedule_delivery(dates: dict, choice: dict) -> dict:
    order = trajdebug.current_run().state["order"]
    return {
        "driver": "R. Haigh" if order["depot"] == "D-NORTH" else "K. Begum",
        "date": dates["from"],
        "slot": "07:30-10:00",
        "postcode": order["delivery_postcode"],
        "skips": choice["count"],
    }


@trajdebug.step(kind="state")
def store_booking(booking: dict) -> dict:
    trajdebug.current_run().state["booking"] = booking
    return booking


@trajdebug.step(kind="llm")
def send_confirmation(booking: dict) -> str:
    b = {
        "customer": booking["customer"],
        "size_yd": booking["size_yd"],
        "from": booking["dates"]["from"],
        "to": booking["dates"]["to"],
        "price": booking["price"]["total"],
    }
    return _ask("You write booking confirmations to customers.", f"BOOKING: {json.dumps(b)}")


@trajdebug.step(kind="condition")
def validate_booking(booking: dict, fields: dict) -> bool:
    if booking["delivery"]["postcode"] != fields["postcode"]:
        raise ValueError(
            f"booking {booking['order']} delivers to {booking['delivery']['postcode']}; the order's "
            f"address is {fields['address']}, {fields['postcode']}"
        )
    if booking["dates"]["hire_days"] != fields["days"]:
        raise ValueError(
            f"booking {booking['order']} hires {booking['dates']['from']} to {booking['dates']['to']} "
            f"({booking['dates']['hire_days']} days); the order asked for {fields['days']} days"
        )
    if booking["hold"]["size_yd"] != booking["size_yd"]:
        raise ValueError(
            f"booking {booking['order']} is for a {booking['size_yd']} yd skip but hold "
            f"{booking['hold']['hold']} reserves a {booking['hold']['size_yd']} yd skip"
        )
    tonnes = sum(i["volume_yd3"] * i["density"] for i in booking["items"])
    per_skip = tonnes / booking["count"]
    if per_skip > WEIGHT_LIMIT_T[booking["size_yd"]]:
        raise ValueError(
            f"booking {booking['order']}: {booking['count']} x {booking['size_yd']} yd skip for "
            f"{tonnes:.1f} t of waste, over the {WEIGHT_LIMIT_T[booking['size_yd']]:.0f} t limit per skip"
        )
    if fields["placement"] == "road" and not (booking["permit"] or {}).get("reference"):
        raise ValueError(
            f"booking {booking['order']} puts a skip on the road at {fields['address']} with no "
            f"council permit reference"
        )
    return True


def book(order: dict) -> dict:
    order = receive_order(order)
    fields = parse_order(extract_order(order["order"], order["message"]))
    area = lookup_postcode(fields["postcode"])
    stored = remember_order(order["order"], fields, area)
    stages = parse_plan(plan_booking(fields))
    items = [parse_class(item, classify_waste(item)) for item in fields["items"]]
    weight = weight_check(items) if "weight_check" in stages else None
    choice = choose_skip_size(items, weight)
    hold = check_availability(
        json.loads(request_hold_args(stored["depot"], choice, fields["start"], fields["days"]))
    )
    dates = compute_hire_dates(fields["start"], fields["days"])
    permit = apply_permit(stored, dates) if "permit" in stages else None
    price = price_booking(choice, dates, permit)
    delivery = schedule_delivery(dates, choice)
    booking = store_booking(
        {
            "order": order["order"],
            "customer": order["customer"],
            "size_yd": choice["size_yd"],
            "count": choice["count"],
            "items": items,
            "hold": hold,
            "dates": dates,
            "permit": permit,
            "price": price,
            "delivery": delivery,
        }
    )
    send_confirmation(booking)
    validate_booking(booking, fields)
    return booking


def record(server: Any, key: str, path: Path) -> None:
    global client
    server.use(brain)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _calls.clear()
    order = copy.deepcopy(INPUTS[key])
    try:
        with trajdebug.run(NAME, path=str(path), task=f"book skip order {order['order']}"):
            book(order)
    except ValueError:
        pass
