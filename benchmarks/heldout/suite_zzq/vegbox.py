"""Organic veg box scheme: plans one delivery round (sdk route, JSONL)."""

from __future__ import annotations

import json

import trajdebug

import kit
from _common import chat_client, dumps, fresh, last_user, system_of

NAME = "greenfield-vegbox-rounds"
ROUTE = "sdk"
DOMAIN = "organic veg box scheme: delivery rounds"
SHAPE = ("input, 2 lookups, exclusions to run.state, 3x(model plans a box size + parse), pack each box, "
         "weigh, reserve stock per item (with retry), route sub-agent (geocode, model orders stops, parse), "
         "driver sheet (model), validator")
EXT = "jsonl"

SUBS = {
    "R1": [("S-101", "Ana Pryce", "large", ["celeriac"]), ("S-102", "Tom Hale", "small", []),
           ("S-103", "Joy Pryce", "medium", ["kale"]), ("S-104", "Ben Okafor", "large", []),
           ("S-105", "Lia Moss", "medium", ["beetroot"])],
    "R2": [("S-201", "Raj Bell", "medium", []), ("S-202", "Eve Carr", "large", ["leeks"]),
           ("S-203", "Ida Rowe", "small", []), ("S-204", "Sam Carr", "small", ["kale"])],
    "R3": [("S-301", "Nia Ford", "large", ["kale"]), ("S-302", "Max Ford", "medium", []),
           ("S-303", "Kit Lowe", "large", []), ("S-304", "Ola Dunn", "small", ["celeriac"]),
           ("S-305", "Zed Arno", "medium", [])],
    "R4": [("S-401", "Pip Vale", "medium", ["leeks"]), ("S-402", "Cal Shaw", "large", ["beetroot"]),
           ("S-403", "Uma Vale", "small", []), ("S-404", "Rex Yates", "large", [])],
    "R5": [("S-501", "Dee Marsh", "medium", ["celeriac"]), ("S-502", "Hal Marsh", "large", []),
           ("S-503", "Fay Quin", "small", []), ("S-504", "Gus Penn", "medium", []),
           ("S-505", "Ivy Tate", "large", ["kale"])],
}
DAYS = {"R1": "2026-03-10", "R2": "2026-03-11", "R3": "2026-03-12", "R4": "2026-03-13", "R5": "2026-03-14"}
STOCK = {"carrots": 60.0, "kale": 25.0, "leeks": 30.0, "beetroot": 28.0, "celeriac": 30.0, "potatoes": 90.0}
BOX_GRAMS = {"small": {"carrots": 600, "potatoes": 1000, "kale": 250, "beetroot": 400},
             "medium": {"carrots": 800, "potatoes": 1500, "kale": 300, "leeks": 500, "beetroot": 500},
             "large": {"carrots": 1000, "potatoes": 2000, "kale": 400, "leeks": 700, "beetroot": 600,
                       "celeriac": 800}}
SWAP = {"celeriac": "carrots", "kale": "leeks", "leeks": "carrots", "beetroot": "potatoes"}
COORDS = {"S-%d0%d" % (r, i): (51.40 + 0.013 * r + 0.004 * i, -2.60 + 0.011 * i) for r in range(1, 6) for i in range(1, 6)}

INPUTS = [{"round": r, "delivery_day": DAYS[r], "van_capacity_kg": 60.0} for r in ("R1", "R2", "R3", "R4", "R5")]

C_UNIT, C_STALE, C_OBO, C_MEM, C_SWALLOW = "zzq-veg-1", "zzq-veg-2", "zzq-veg-3", "zzq-veg-4", "zzq-veg-5"
CASES = [
    dict(id=C_UNIT, input=0, kind="unit_error", root=("pack_box", 4, "other"), failure=("validate_round", 1),
         description="pack_box converts Ben Okafor's large box from grams with /100 instead of /1000, "
                     "so the van load passes its capacity"),
    dict(id=C_STALE, input=1, kind="stale_data", root=("fetch_harvest", 1, "tool"), failure=("validate_round", 1),
         description="fetch_harvest answers from last week's cached harvest sheet, whose lots were picked "
                     "too long before delivery day"),
    dict(id=C_OBO, input=2, kind="off_by_one", root=("parse_route", 1, "parse"), failure=("validate_round", 1),
         description="parse_route maps the model's 1-based stop numbers as 0-based, so one subscriber is "
                     "listed twice and the stop numbered 1 is never visited"),
    dict(id=C_MEM, input=3, kind="bad_memory_write", root=("remember_exclusions", 1, "state"),
         failure=("validate_round", 1),
         description="remember_exclusions files exclusions per household (surname, last one wins), so Pip "
                     "Vale's 'no leeks' is replaced by Uma Vale's empty list"),
    dict(id=C_SWALLOW, input=4, kind="swallowed_error", root=("reserve_stock", 4, "tool"),
         failure=("validate_round", 1),
         description="reserve_stock swallows the stock service's lock error for kale and reports 0 kg "
                     "reserved as a normal answer"),
]


# ---- tools ----------------------------------------------------------------------------------------

@trajdebug.step(kind="input")
def load_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="tool")
def fetch_subscriptions(round_id: str) -> list:
    return [{"id": i, "name": n, "box": b, "exclusions": list(x)} for i, n, b, x in SUBS[round_id]]


@trajdebug.step(kind="tool")
def fetch_harvest(delivery_day: str) -> list:
    day = int(delivery_day[-2:])
    picked = day - 1
    if kit.on(C_STALE):
        picked = day - 8  # the sheet cached on the previous run
    return [{"item": k, "stock_kg": v, "picked": "2026-03-%02d" % picked} for k, v in STOCK.items()]


@trajdebug.step(kind="state")
def remember_exclusions(subscribers: list) -> dict:
    notes = {}
    households = {s["name"].split()[-1]: list(s["exclusions"]) for s in subscribers}
    for s in subscribers:
        notes[s["id"]] = households[s["name"].split()[-1]] if kit.on(C_MEM) else list(s["exclusions"])
    trajdebug.current_run().state["exclusions"] = notes
    return notes


@trajdebug.step(kind="llm")
def plan_box_contents(messages: list) -> str:
    return CLIENT.chat.completions.create(model="fake-model", messages=messages).choices[0].message.content


@trajdebug.step(kind="parse")
def parse_box_plan(text: str) -> dict:
    data = json.loads(text)
    return {row["item"]: int(row["grams"]) for row in data["items"]}


@trajdebug.step(kind="other")
def pack_box(subscriber: dict, plan: dict) -> dict:
    notes = trajdebug.current_run().state["exclusions"]
    excluded = notes.get(subscriber["id"], [])
    items = {}
    for item, grams in plan.items():
        if item in excluded:
            item = SWAP[item]
        items[item] = items.get(item, 0) + grams
    total_g = sum(items.values())
    weight_kg = round(total_g / 1000, 2)
    if kit.on(C_UNIT) and subscriber["box"] == "large" and subscriber["id"].endswith("4"):
        weight_kg = round(total_g / 100, 2)
    return {"subscriber": subscriber["id"], "name": subscriber["name"], "items": items, "weight_kg": weight_kg}


@trajdebug.step(kind="other")
def weigh_load(boxes: list) -> dict:
    return {"boxes": len(boxes), "load_kg": round(sum(b["weight_kg"] for b in boxes), 2)}


class StockLocked(Exception):
    pass


_ATTEMPTS: dict = {}


def _stock_service(item: str, kg: float, day: str) -> dict:
    n = _ATTEMPTS[(item, day)] = _ATTEMPTS.get((item, day), 0) + 1
    if item == "kale" and day == "2026-03-14":
        raise StockLocked("lot KA-14 locked by the packing shed")
    if item == "leeks" and day == "2026-03-11" and n == 1:
        raise TimeoutError("stock service did not answer in 2 s")
    return {"item": item, "reserved_kg": kg, "lot": "%s-%s" % (item[:2].upper(), day[-2:])}


@trajdebug.step(kind="tool")
def reserve_stock(item: str, kg: float, day: str) -> dict:
    if kit.on(C_SWALLOW):
        try:
            return _stock_service(item, kg, day)
        except StockLocked:
            return {"item": item, "reserved_kg": 0.0, "lot": None}
    return _stock_service(item, kg, day)


@trajdebug.step(kind="tool")
def release_and_reserve(item: str, kg: float, day: str) -> dict:
    """The packing shed's manual hold: waits for the lock and reserves from the next lot."""
    return {"item": item, "reserved_kg": kg, "lot": "%s-%s-B" % (item[:2].upper(), day[-2:])}


@trajdebug.step(kind="tool")
def geocode_stops(subscriber_ids: list) -> list:
    return [{"id": s, "lat": round(COORDS[s][0], 4), "lon": round(COORDS[s][1], 4)} for s in subscriber_ids]


@trajdebug.step(kind="llm")
def order_stops(messages: list) -> str:
    return CLIENT.chat.completions.create(model="fake-model", messages=messages).choices[0].message.content


@trajdebug.step(kind="parse")
def parse_route(text: str, stops: list) -> list:
    order = []
    for line in text.strip().splitlines():
        num = int(line.split(".")[0])
        idx = num if kit.on(C_OBO) and num < len(stops) else num - 1
        order.append(stops[idx]["id"])
    return order


@trajdebug.step(kind="agent")
def route_planner(subscriber_ids: list, depot: str) -> list:
    stops = geocode_stops(subscriber_ids)
    text = order_stops([
        {"role": "system", "content": "You order delivery stops for a van leaving the depot. Answer one stop a "
                                      "line as 'N. ID' where N is the stop's number in the list given."},
        {"role": "user", "content": dumps({"depot": depot, "stops": stops})},
    ])
    return parse_route(text, stops)


@trajdebug.step(kind="llm")
def draft_driver_sheet(messages: list) -> str:
    return CLIENT.chat.completions.create(model="fake-model", messages=messages).choices[0].message.content


@trajdebug.step(kind="condition")
def validate_round(request: dict, subscribers: list, harvest: list, boxes: list, load: dict,
                   reservations: list, route: list) -> dict:
    if load["load_kg"] > request["van_capacity_kg"]:
        raise ValueError("load %.2f kg exceeds the van capacity of %.1f kg" % (load["load_kg"], request["van_capacity_kg"]))
    day = int(request["delivery_day"][-2:])
    for lot in harvest:
        if day - int(lot["picked"][-2:]) > 3:
            raise ValueError("%s picked %s, more than 3 days before delivery on %s"
                             % (lot["item"], lot["picked"], request["delivery_day"]))
    by_id = {s["id"]: s for s in subscribers}
    for b in boxes:
        for item in b["items"]:
            if item in by_id[b["subscriber"]]["exclusions"]:
                raise ValueError("box for %s (%s) holds %s, which the subscriber excludes"
                                 % (b["name"], b["subscriber"], item))
    needed: dict = {}
    for b in boxes:
        for item, g in b["items"].items():
            needed[item] = needed.get(item, 0) + g / 1000
    got = {r["item"]: r["reserved_kg"] for r in reservations}
    for item, kg in sorted(needed.items()):
        if got.get(item, 0) + 1e-9 < kg:
            raise ValueError("%s: %.2f kg packed but %.2f kg reserved" % (item, kg, got.get(item, 0)))
    if sorted(route) != sorted(by_id):
        missing = sorted(set(by_id) - set(route))
        raise ValueError("route has %d stops for %d subscribers; %s not visited"
                         % (len(route), len(by_id), ", ".join(missing) or "none"))
    return {"ok": True, "stops": len(route), "load_kg": load["load_kg"]}


# ---- the model --------------------------------------------------------------------------------------

def brain(request):
    system = system_of(request)
    user = json.loads(last_user(request))
    if system.startswith("You plan the contents"):
        grams = BOX_GRAMS[user["box"]]
        return json.dumps({"box": user["box"], "items": [{"item": k, "grams": v} for k, v in grams.items()]})
    if system.startswith("You order delivery stops"):
        stops = user["stops"]
        order = sorted(range(len(stops)), key=lambda i: (stops[i]["lat"], stops[i]["lon"]))
        return "\n".join("%d. %s" % (i + 1, stops[i]["id"]) for i in order)
    if system.startswith("You write the driver"):
        return "Round %s: %d stops, load %.1f kg. Leave boxes in the porch if nobody answers." % (
            user["round"], len(user["route"]), user["load_kg"])
    return "I cannot help with that."


CLIENT = None


def record(server, inp: dict, path: str) -> None:
    global CLIENT
    CLIENT = chat_client(server)
    server.use(brain)
    _ATTEMPTS.clear()
    fresh(path)
    try:
        with trajdebug.run(NAME, path=path, task="plan veg box round %s for %s" % (inp["round"], inp["delivery_day"])):
            req = load_request(inp)
            subs = fetch_subscriptions(req["round"])
            harvest = fetch_harvest(req["delivery_day"])
            remember_exclusions(subs)
            plans = {}
            for size in ("small", "medium", "large"):
                text = plan_box_contents([
                    {"role": "system", "content": "You plan the contents of this week's organic veg box. Answer "
                                                  "JSON: {\"box\": size, \"items\": [{\"item\", \"grams\"}]}."},
                    {"role": "user", "content": dumps({"box": size, "harvest": harvest})},
                ])
                plans[size] = parse_box_plan(text)
            boxes = [pack_box(s, plans[s["box"]]) for s in subs]
            load = weigh_load(boxes)
            needed: dict = {}
            for b in boxes:
                for item, g in b["items"].items():
                    needed[item] = round(needed.get(item, 0) + g / 1000, 2)
            reservations = []
            for item in sorted(needed):
                try:
                    res = reserve_stock(item, needed[item], req["delivery_day"])
                except TimeoutError:
                    res = reserve_stock(item, needed[item], req["delivery_day"])
                except StockLocked:
                    res = release_and_reserve(item, needed[item], req["delivery_day"])
                reservations.append(res)
            route = route_planner([s["id"] for s in subs], "Greenfield Farm")
            draft_driver_sheet([
                {"role": "system", "content": "You write the driver's sheet for a delivery round."},
                {"role": "user", "content": dumps({"round": req["round"], "route": route, "load_kg": load["load_kg"]})},
            ])
            validate_round(req, subs, harvest, boxes, load, reservations, route)
    except ValueError:
        pass
