"""A mole catcher's call-outs: trajdebug's own recording API, state kept in run.state.

Shape: take_call -> read_callout (parse) -> lookup_site (tool) -> note_site (state) -> van_inventory (tool)
-> travel_distance (tool) -> triage (llm) -> read_triage (parse) -> per lawn: reserve_traps, set_traps (tools),
log_lawn (state) -> price_visit -> write_quote (llm) -> check_quote (validator) -> send_confirmation (tool).
"""

from __future__ import annotations

import json
import math
import re

from zd_common import client, last_user, payload

import trajdebug


NAME = "molecatcher-callouts"
SHORT = "mole"
ROUTE = "sdk"
DOMAIN = "mole catcher's call-outs"
SHAPE = "linear pipeline, run.state, per-lawn loop (3 steps a lawn), quote validator; 17-26 steps"

# switches, each read at exactly one place
SITE_NEAREST_NAME = False
DISTANCE_IN_KM = False
VAN_MORNING_SNAPSHOT = False
NOTE_SITE_KEYS_SWAPPED = False
TRIAGE_INVENTS_TRAP = False
SWITCHES = [
    "SITE_NEAREST_NAME",
    "DISTANCE_IN_KM",
    "VAN_MORNING_SNAPSHOT",
    "NOTE_SITE_KEYS_SWAPPED",
    "TRIAGE_INVENTS_TRAP",
]

SITES = {
    "Orchard Farm": {
        "site_id": "S-44",
        "lawns": ["front", "paddock", "orchard"],
        "soil": "loam",
        "postcode": "GL7 2QA",
    },
    "Orchard Farm Cottages": {
        "site_id": "S-45",
        "lawns": ["front", "back"],
        "soil": "loam",
        "postcode": "GL7 2QB",
    },
    "Hale Manor": {
        "site_id": "S-12",
        "lawns": ["croquet", "south", "east", "kitchen garden"],
        "soil": "clay",
        "postcode": "GL8 1HT",
    },
    "Brook Cricket Club": {
        "site_id": "S-31",
        "lawns": ["square", "outfield"],
        "soil": "sandy loam",
        "postcode": "GL5 3CC",
    },
    "Vicarage Lane 7": {"site_id": "S-08", "lawns": ["front"], "soil": "chalk", "postcode": "GL7 5VL"},
    "Ashby Stud": {
        "site_id": "S-60",
        "lawns": ["yard", "north paddock", "south paddock"],
        "soil": "clay",
        "postcode": "GL9 4AS",
    },
}
CUSTOMERS = {"C-118", "C-204", "C-077", "C-310", "C-152"}
MILES = {"GL7 2QA": 6.0, "GL7 2QB": 6.2, "GL8 1HT": 11.5, "GL5 3CC": 14.0, "GL7 5VL": 3.5, "GL9 4AS": 18.0}
VAN = {"barrel": 20, "scissor": 12, "tunnel": 8}
VAN_AT_SEVEN = {"barrel": 20, "scissor": 2, "tunnel": 8, "counted_at": "07:00"}
CALLOUT_FEE, PER_TRAP, PER_MILE, CAP = 45.0, 6.5, 0.9, 260.0
TRAVEL_BANDS = {"GL5": 30.0, "GL7": 15.0, "GL8": 25.0, "GL9": 35.0}

INPUTS = [
    {"customer": "C-118", "text": "Call-out for Orchard Farm: molehills front 14, paddock 9, orchard 22"},
    {
        "customer": "C-204",
        "text": "Call-out for Hale Manor: molehills croquet 5, south 11, east 3, kitchen garden 8",
    },
    {"customer": "C-077", "text": "Call-out for Brook Cricket Club: molehills square 2, outfield 17"},
    {"customer": "C-310", "text": "Call-out for Vicarage Lane 7: molehills front 6"},
    {
        "customer": "C-152",
        "text": "Call-out for Ashby Stud: molehills yard 4, north paddock 19, south paddock 12",
    },
]

CASES = [
    {
        "input": 0,
        "switch": "SITE_NEAREST_NAME",
        "fault_kind": "wrong_retrieval",
        "root": ("lookup_site", 1, "tool"),
        "failure": ("set_traps", 2),
        "description": "The site lookup matched the first record whose name starts with the requested one and "
        "returned Orchard Farm Cottages (two lawns) for Orchard Farm.",
    },
    {
        "input": 1,
        "switch": "DISTANCE_IN_KM",
        "fault_kind": "unit_error",
        "root": ("travel_distance", 1, "tool"),
        "failure": ("check_quote", 1),
        "description": "The route service answered the distance in kilometres and the pricing read it as miles.",
    },
    {
        "input": 2,
        "switch": "VAN_MORNING_SNAPSHOT",
        "fault_kind": "stale_data",
        "root": ("van_inventory", 1, "tool"),
        "failure": ("reserve_traps", 2),
        "description": "The van inventory came from the 07:00 count, before the morning round used ten scissor traps.",
    },
    {
        "input": 3,
        "switch": "NOTE_SITE_KEYS_SWAPPED",
        "fault_kind": "bad_memory_write",
        "root": ("note_site", 1, "state"),
        "failure": ("send_confirmation", 1),
        "description": "The site note stored the site id under the customer key, so the confirmation went to "
        "customer S-08.",
    },
    {
        "input": 4,
        "switch": "TRIAGE_INVENTS_TRAP",
        "fault_kind": "hallucinated_value",
        "root": ("triage", 1, "llm"),
        "failure": ("reserve_traps", 2),
        "description": "The triage model named a 'duo-jaw' trap that is not among the trap types it was given.",
    },
]


def policy(request):
    prompt = last_user(request)
    if prompt.startswith("Triage"):
        data = payload(prompt)
        plan = []
        for lawn, hills in data["molehills"].items():
            kind = "barrel" if data["soil"] in ("clay",) else ("scissor" if hills >= 10 else "tunnel")
            if TRIAGE_INVENTS_TRAP and lawn == "north paddock":
                kind = "duo-jaw"
            plan.append({"lawn": lawn, "trap": kind, "count": max(1, math.ceil(hills / 4))})
        return json.dumps({"plan": plan, "return_visit_days": 10})
    if prompt.startswith("Write"):
        data = payload(prompt)
        return (
            f"Quote {data['site']}: {data['traps']} traps, total GBP {data['total']:.2f}, revisit in 10 days."
        )
    return "I can only triage call-outs."


@trajdebug.step(kind="input")
def take_call(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="parse")
def read_callout(call: dict) -> dict:
    m = re.match(r"Call-out for (.+?): molehills (.+)$", call["text"])
    hills = {}
    for part in m.group(2).split(","):
        lawn, n = part.strip().rsplit(" ", 1)
        hills[lawn] = int(n)
    return {"customer": call["customer"], "site": m.group(1), "molehills": hills}


@trajdebug.step(kind="tool")
def lookup_site(name: str) -> dict:
    if SITE_NEAREST_NAME:
        for key in sorted(SITES, key=len, reverse=True):
            if key.startswith(name):
                return {"name": key, **SITES[key]}
    return {"name": name, **SITES[name]}


@trajdebug.step(kind="state")
def note_site(site: dict, customer: str) -> dict:
    note = {
        "customer": customer,
        "site_id": site["site_id"],
        "postcode": site["postcode"],
        "lawns": site["lawns"],
    }
    if NOTE_SITE_KEYS_SWAPPED:
        note = {**note, "customer": site["site_id"]}
    trajdebug.current_run().state["site"] = note
    return note


@trajdebug.step(kind="tool")
def van_inventory(van: str) -> dict:
    return dict(VAN_AT_SEVEN) if VAN_MORNING_SNAPSHOT else {**VAN, "counted_at": "now"}


@trajdebug.step(kind="tool")
def travel_distance(postcode: str) -> dict:
    miles = MILES[postcode]
    if DISTANCE_IN_KM:
        return {"postcode": postcode, "distance": round(miles * 1.609, 1)}
    return {"postcode": postcode, "distance": miles}


@trajdebug.step(kind="llm")
def triage(messages: list[dict], llm) -> str:
    reply = llm.chat.completions.create(model="fake-model", messages=messages)
    return reply.choices[0].message.content


@trajdebug.step(kind="parse")
def read_triage(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="tool")
def reserve_traps(trap: str, count: int) -> dict:
    run = trajdebug.current_run()
    van = run.state["van"]
    if trap not in van:
        raise KeyError(
            f"no {trap} traps carried in the van (carried: {', '.join(k for k in van if k != 'counted_at')})"
        )
    if van[trap] < count:
        raise RuntimeError(f"only {van[trap]} {trap} traps left in the van, {count} needed")
    van[trap] -= count
    run.state["van"] = van
    return {"trap": trap, "reserved": count, "left": van[trap]}


@trajdebug.step(kind="tool")
def set_traps(lawn: str, trap: str, count: int) -> dict:
    site = trajdebug.current_run().state["site"]
    if lawn not in site["lawns"]:
        raise LookupError(
            f"lawn '{lawn}' is not on the site plan of {site['site_id']} ({', '.join(site['lawns'])})"
        )
    return {"lawn": lawn, "trap": trap, "set": count}


@trajdebug.step(kind="state")
def log_lawn(lawn: str, placed: dict) -> None:
    trajdebug.current_run().state[f"lawn:{lawn}"] = placed


@trajdebug.step(kind="other")
def price_visit(traps: int, distance: dict) -> dict:
    travel = round(distance["distance"] * PER_MILE * 2, 2)
    total = round(CALLOUT_FEE + traps * PER_TRAP + travel, 2)
    return {"callout": CALLOUT_FEE, "traps": traps, "travel": travel, "total": total}


@trajdebug.step(kind="llm")
def write_quote(messages: list[dict], llm) -> str:
    reply = llm.chat.completions.create(model="fake-model", messages=messages)
    return reply.choices[0].message.content


@trajdebug.step(kind="condition")
def check_quote(price: dict, postcode: str) -> bool:
    band = TRAVEL_BANDS[postcode.split()[0]]
    if price["travel"] > band:
        raise ValueError(
            f"travel charge GBP {price['travel']:.2f} is above the GBP {band:.2f} band for "
            f"{postcode.split()[0]}; quote GBP {price['total']:.2f} not sent"
        )
    if price["total"] > CAP:
        raise ValueError(f"quote GBP {price['total']:.2f} is above the GBP {CAP:.0f} call-out cap")
    return True


@trajdebug.step(kind="tool")
def send_confirmation(customer: str, text: str) -> dict:
    if customer not in CUSTOMERS:
        raise LookupError(f"no customer {customer} in the address book")
    return {"sent_to": customer, "chars": len(text)}


def record(inp, path, server):
    llm = client(server)
    try:
        with trajdebug.run(NAME, path=path, task=inp["text"]) as run:
            run.state["van"] = {}
            call = take_call(inp)
            parsed = read_callout(call)
            site = lookup_site(parsed["site"])
            note_site(site, parsed["customer"])
            with trajdebug.step("load_van", kind="state") as s:
                van = van_inventory("van-1")
                run.state["van"] = dict(van)
                s.output = van
            distance = travel_distance(site["postcode"])
            msgs = [
                {
                    "role": "system",
                    "content": "You are the triage desk of a mole catcher. Pick a trap type per lawn "
                    "from those carried (barrel, scissor, tunnel) and a count.",
                },
                {
                    "role": "user",
                    "content": "Triage "
                    + json.dumps(
                        {"site": site["name"], "soil": site["soil"], "molehills": parsed["molehills"]}
                    ),
                },
            ]
            plan = read_triage(triage(msgs, llm))
            total_traps = 0
            for item in plan["plan"]:
                reserve_traps(item["trap"], item["count"])
                placed = set_traps(item["lawn"], item["trap"], item["count"])
                log_lawn(item["lawn"], placed)
                total_traps += item["count"]
            price = price_visit(total_traps, distance)
            quote = write_quote(
                [
                    {"role": "system", "content": "Write a one-line quote for the customer."},
                    {
                        "role": "user",
                        "content": "Write "
                        + json.dumps({"site": site["name"], "traps": total_traps, "total": price["total"]}),
                    },
                ],
                llm,
            )
            check_quote(price, site["postcode"])
            with trajdebug.step("confirm", kind="agent"):
                send_confirmation(run.state["site"]["customer"], quote)
    except Exception:  # noqa: BLE001
        pass
