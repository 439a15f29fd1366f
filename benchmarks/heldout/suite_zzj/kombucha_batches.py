"""Kombucha brewery: plans the brewing batches of a wholesale order (sdk route, JSON Lines).

Shape: order in -> model plans the batches -> tank list -> per flavour: recipe retrieval, scaling, tank
choice, batch record in run.state, a bottling sub-agent (lot codes, bottling-line booking with a retry),
label copy by the model and its parsing -> batch sheet -> cellar log -> validator.
"""

from __future__ import annotations

import datetime as dt
import json
import math

import kit
from common import chat, dumps, json_in, system_text, user_text
from openai import OpenAI

import trajdebug


NAME = "kombucha-batch-planner"
ROUTE = "sdk"
DOMAIN = "kombucha brewery"
SHAPE = "order -> model plan -> tanks -> per flavour: recipe, scale, tank, state write, bottling sub-agent, label model + parse -> sheet -> cellar log -> validator"

CASE_LITRES = 12 * 0.33
PROCESS_LOSS = 1.08

RECIPES = {
    "ginger-lemon": {
        "code": "GL",
        "tea_g_per_l": 6,
        "sugar_g_per_l": 70,
        "primary_days": 8,
        "secondary_days": 3,
        "residual_sugar_g_per_100ml": 3.2,
        "abv_pct": 0.3,
        "caffeine_mg_per_100ml": 8,
    },
    "hibiscus-rose": {
        "code": "HR",
        "tea_g_per_l": 5,
        "sugar_g_per_l": 75,
        "primary_days": 9,
        "secondary_days": 2,
        "residual_sugar_g_per_100ml": 3.6,
        "abv_pct": 0.3,
        "caffeine_mg_per_100ml": 6,
    },
    "blueberry-basil": {
        "code": "BB",
        "tea_g_per_l": 6,
        "sugar_g_per_l": 65,
        "primary_days": 8,
        "secondary_days": 4,
        "residual_sugar_g_per_100ml": 2.9,
        "abv_pct": 0.4,
        "caffeine_mg_per_100ml": 8,
    },
    "passionfruit-mint": {
        "code": "PM",
        "tea_g_per_l": 5,
        "sugar_g_per_l": 80,
        "primary_days": 10,
        "secondary_days": 3,
        "residual_sugar_g_per_100ml": 3.8,
        "abv_pct": 0.4,
        "caffeine_mg_per_100ml": 7,
    },
    "classic-green": {
        "code": "CG",
        "tea_g_per_l": 7,
        "sugar_g_per_l": 60,
        "primary_days": 7,
        "secondary_days": 2,
        "residual_sugar_g_per_100ml": 2.4,
        "abv_pct": 0.3,
        "caffeine_mg_per_100ml": 10,
    },
    "turmeric-orange": {
        "code": "TO",
        "tea_g_per_l": 6,
        "sugar_g_per_l": 72,
        "primary_days": 9,
        "secondary_days": 3,
        "residual_sugar_g_per_100ml": 3.3,
        "abv_pct": 0.35,
        "caffeine_mg_per_100ml": 8,
    },
    "raspberry-lime": {
        "code": "RL",
        "tea_g_per_l": 6,
        "sugar_g_per_l": 68,
        "primary_days": 8,
        "secondary_days": 3,
        "residual_sugar_g_per_100ml": 3.0,
        "abv_pct": 0.3,
        "caffeine_mg_per_100ml": 8,
    },
}
TANKS = {"T1": 60, "T2": 100, "T3": 100, "T4": 150, "T5": 200, "T6": 250, "T7": 300}
CELLAR = [  # tank, from, to (inclusive), batch
    ("T5", "2026-03-03", "2026-03-16", "batch 0311 classic-green"),
    ("T3", "2026-02-20", "2026-03-04", "batch 0298 hibiscus-rose"),
    ("T7", "2026-04-01", "2026-04-15", "batch 0340 ginger-lemon"),
    ("T2", "2026-04-10", "2026-04-24", "batch 0352 raspberry-lime"),
]


def _order(oid, customer, brew, ship, lines):
    return {
        "order_id": oid,
        "customer": customer,
        "brew_date": brew,
        "ship_by": ship,
        "lines": [{"flavour": f, "cases": c} for f, c in lines],
    }


INPUTS = {
    "o1042": _order(
        "KB-1042",
        "Fennel & Finch Grocers",
        "2026-03-09",
        "2026-03-30",
        [("ginger-lemon", 30), ("hibiscus-rose", 20), ("classic-green", 10)],
    ),
    "o1043": _order(
        "KB-1043",
        "Harbourside Cafe Group",
        "2026-03-05",
        "2026-03-27",
        [("passionfruit-mint", 45), ("blueberry-basil", 20), ("ginger-lemon", 12)],
    ),
    "o1044": _order(
        "KB-1044",
        "Northgate Gyms",
        "2026-03-12",
        "2026-04-02",
        [("turmeric-orange", 24), ("raspberry-lime", 16), ("classic-green", 40)],
    ),
    "o1045": _order(
        "KB-1045",
        "Little Sprout Deli",
        "2026-04-06",
        "2026-04-28",
        [("hibiscus-rose", 30), ("blueberry-basil", 24), ("raspberry-lime", 10)],
    ),
    "o1046": _order(
        "KB-1046",
        "Marlow Street Market",
        "2026-03-16",
        "2026-04-06",
        [("ginger-lemon", 20), ("passionfruit-mint", 30), ("turmeric-orange", 12)],
    ),
    "o1047": _order(
        "KB-1047",
        "Cedar Lane Co-op",
        "2026-03-20",
        "2026-04-10",
        [("classic-green", 30), ("hibiscus-rose", 16)],
    ),
    "o1048": _order(
        "KB-1048",
        "Upland Farm Shop",
        "2026-04-13",
        "2026-05-04",
        [("blueberry-basil", 40), ("ginger-lemon", 24), ("passionfruit-mint", 10)],
    ),
    "o1049": _order(
        "KB-1049",
        "Quayside Hotel",
        "2026-03-23",
        "2026-04-13",
        [("raspberry-lime", 30), ("turmeric-orange", 20), ("hibiscus-rose", 12)],
    ),
    "o1050": _order(
        "KB-1050",
        "Brightwater Studios",
        "2026-03-26",
        "2026-04-16",
        [("passionfruit-mint", 20), ("classic-green", 24), ("blueberry-basil", 12)],
    ),
}
REFS = ["o1047", "o1048", "o1049", "o1050"]
CASES = [
    {
        "id": "kombucha_c1",
        "kind": "unit_error",
        "input": "o1042",
        "root": ("assign_tank", 1),
        "failure": "validate_batch_sheet",
        "description": "The tank chooser reads the cellar's litre capacities as US gallons, so the 130 L ginger-lemon batch is put in the 60 L tank T1.",
    },
    {
        "id": "kombucha_c2",
        "kind": "stale_data",
        "input": "o1043",
        "root": ("list_tanks", 1),
        "failure": "validate_batch_sheet",
        "description": "The tank list comes from the snapshot taken three days before the brew date, when T5 was still free; the 200 L passionfruit-mint batch is put in T5, which holds batch 0311.",
    },
    {
        "id": "kombucha_c3",
        "kind": "off_by_one",
        "input": "o1044",
        "root": ("plan_bottling", 1),
        "failure": "validate_batch_sheet",
        "description": "The bottling planner numbers lots from 1 up to but not including the case count, so the first batch is bottled one case short of the order.",
    },
    {
        "id": "kombucha_c4",
        "kind": "bad_memory_write",
        "input": "o1045",
        "root": ("record_batch", 2),
        "failure": "validate_batch_sheet",
        "description": "The second batch record is copied from the first and keeps the first batch's tank, so two batches are booked into T4.",
    },
    {
        "id": "kombucha_c5",
        "kind": "hallucinated_value",
        "input": "o1046",
        "root": ("write_label", 1),
        "failure": "validate_batch_sheet",
        "description": "The label model gives passionfruit-mint a residual sugar of 2.6 g/100 ml, a figure that is in no lab sheet (the recipe says 3.8).",
    },
]

_CLIENT: OpenAI | None = None
_MODEL = "fake-model"
PLAN_SYSTEM = (
    "You plan kombucha brewing for a wholesale order. Return only a JSON list of batches, one per "
    'flavour, largest first: [{"flavour": str, "cases": int}].'
)
LABEL_SYSTEM = (
    "You write the nutrition panel of a kombucha label from the recipe's lab figures. Return only JSON: "
    '{"flavour", "residual_sugar_g_per_100ml", "abv_pct", "caffeine_mg_per_100ml", "tagline"}.'
)


def brain_for(order: dict):
    state = {"labels": 0}

    def brain(request):
        system = system_text(request)
        if system.startswith("You plan kombucha"):
            lines = json_in(user_text(request))["lines"]
            plan = sorted(
                ({"flavour": ln["flavour"], "cases": ln["cases"]} for ln in lines), key=lambda b: -b["cases"]
            )
            return json.dumps(plan)
        if system.startswith("You write the nutrition panel"):
            state["labels"] += 1
            lab = json_in(user_text(request))
            sugar = lab["residual_sugar_g_per_100ml"]
            if state["labels"] == 1 and kit.on("kombucha_c5"):
                sugar = 2.6
            return json.dumps(
                {
                    "flavour": lab["flavour"],
                    "residual_sugar_g_per_100ml": sugar,
                    "abv_pct": lab["abv_pct"],
                    "caffeine_mg_per_100ml": lab["caffeine_mg_per_100ml"],
                    "tagline": f"Raw, living {lab['flavour'].replace('-', ' and ')} kombucha",
                }
            )
        return "I can only plan batches and write labels."

    return brain


def _llm_call(msgs: list[dict]) -> dict:
    reply = chat(_CLIENT, _MODEL, msgs)
    u = reply.usage
    trajdebug.current_step().usage(
        model=reply.model, prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens
    )
    return {"role": "assistant", "content": reply.choices[0].message.content}


@trajdebug.step(kind="input")
def receive_order(order: dict) -> dict:
    return order


@trajdebug.step(kind="llm")
def plan_batches(messages: list[dict]) -> dict:
    return _llm_call(messages)


@trajdebug.step(kind="parse")
def parse_plan(reply: dict) -> list[dict]:
    plan = json.loads(reply["content"])
    out = []
    for b in plan:
        litres = math.ceil(b["cases"] * CASE_LITRES * PROCESS_LOSS / 10) * 10
        out.append({"flavour": b["flavour"], "cases": int(b["cases"]), "litres": litres})
    return out


def _free_tanks(day: str) -> list[dict]:
    busy = {t for t, a, b, _ in CELLAR if a <= day <= b}
    return [{"tank": t, "capacity": c, "unit": "L"} for t, c in TANKS.items() if t not in busy]


@trajdebug.step(kind="tool")
def list_tanks(brew_date: str) -> dict:
    as_of = brew_date
    if kit.on("kombucha_c2"):
        as_of = (dt.date.fromisoformat(brew_date) - dt.timedelta(days=3)).isoformat()
    listing = {"as_of": as_of, "free": _free_tanks(as_of)}
    trajdebug.current_run().state["tanks"] = listing
    return listing


@trajdebug.step(kind="retrieval")
def fetch_recipe(flavour: str) -> dict:
    recipe = dict(RECIPES[flavour], flavour=flavour)
    trajdebug.current_run().state[f"recipe:{flavour}"] = recipe
    return recipe


@trajdebug.step(kind="other")
def scale_recipe(recipe: dict, batch: dict) -> dict:
    litres = batch["litres"]
    return {
        "flavour": batch["flavour"],
        "litres": litres,
        "sugar_kg": round(recipe["sugar_g_per_l"] * litres / 1000, 2),
        "tea_g": recipe["tea_g_per_l"] * litres,
        "starter_l": round(litres * 0.1, 1),
        "ferment_days": recipe["primary_days"] + recipe["secondary_days"],
    }


@trajdebug.step(kind="condition")
def assign_tank(sheet: dict, tanks: dict, used: list[str]) -> dict:
    for t in sorted(tanks["free"], key=lambda t: t["capacity"]):
        if t["tank"] in used:
            continue
        cap_l = t["capacity"] if t["unit"] == "L" else t["capacity"] * 3.785
        if kit.on("kombucha_c1"):
            cap_l = t["capacity"] * 3.785
        if cap_l >= sheet["litres"]:
            return {"flavour": sheet["flavour"], "tank": t["tank"], "litres": sheet["litres"]}
    return {"flavour": sheet["flavour"], "tank": None, "litres": sheet["litres"]}


@trajdebug.step(kind="state")
def record_batch(sheet: dict, choice: dict, batch: dict) -> dict:
    state = trajdebug.current_run().state
    last = state.get("last_batch")
    if kit.on("kombucha_c4") and last is not None:
        entry = dict(last)
        entry.update(
            flavour=sheet["flavour"],
            litres=sheet["litres"],
            cases=batch["cases"],
            sugar_kg=sheet["sugar_kg"],
            ferment_days=sheet["ferment_days"],
        )
    else:
        entry = {
            "flavour": sheet["flavour"],
            "litres": sheet["litres"],
            "cases": batch["cases"],
            "tank": choice["tank"],
            "sugar_kg": sheet["sugar_kg"],
            "ferment_days": sheet["ferment_days"],
        }
    state[f"batch:{sheet['flavour']}"] = entry
    state["last_batch"] = entry
    return entry


@trajdebug.step(kind="other")
def plan_bottling(entry: dict, brew_date: str) -> dict:
    code = RECIPES[entry["flavour"]]["code"]
    day = dt.date.fromisoformat(brew_date) + dt.timedelta(days=entry["ferment_days"] + 1)
    top = entry["cases"] if kit.on("kombucha_c3") else entry["cases"] + 1
    lots = [f"L{day:%y%m%d}-{code}-{i:03d}" for i in range(1, top)]
    return {
        "flavour": entry["flavour"],
        "bottling_day": day.isoformat(),
        "cases": len(lots),
        "first_lot": lots[0],
        "last_lot": lots[-1],
    }


_LINE_CALLS = {"n": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def book_bottling_line(day: str, flavour: str, cases: int) -> dict:
    _LINE_CALLS["n"] += 1
    if _LINE_CALLS["n"] == 2:
        raise ConnectionError("bottling-line scheduler did not answer in 5 s")
    hour = 8 + 2 * (_LINE_CALLS["n"] % 4)
    return {"line": "B1", "day": day, "start": f"{hour:02d}:00", "flavour": flavour, "cases": cases}


@trajdebug.step(kind="agent")
def bottling_agent(entry: dict, brew_date: str) -> dict:
    plan = plan_bottling(entry, brew_date)
    slot = book_bottling_line(plan["bottling_day"], plan["flavour"], plan["cases"])
    result = {**plan, "line": slot["line"], "start": slot["start"]}
    trajdebug.current_run().state[f"bottling:{entry['flavour']}"] = result
    return result


@trajdebug.step(kind="llm")
def write_label(messages: list[dict]) -> dict:
    return _llm_call(messages)


@trajdebug.step(kind="parse")
def parse_label(reply: dict) -> dict:
    label = json.loads(reply["content"])
    trajdebug.current_run().state[f"label:{label['flavour']}"] = label
    return label


@trajdebug.step(kind="other")
def compile_batch_sheet(order: dict, plan: list[dict]) -> dict:
    state = trajdebug.current_run().state
    rows = []
    for b in plan:
        f = b["flavour"]
        rows.append({**state[f"batch:{f}"], "bottling": state[f"bottling:{f}"], "label": state[f"label:{f}"]})
    return {
        "order_id": order["order_id"],
        "brew_date": order["brew_date"],
        "ship_by": order["ship_by"],
        "batches": rows,
    }


@trajdebug.step(kind="tool")
def cellar_log(day: str) -> list[dict]:
    return [{"tank": t, "from": a, "to": b, "batch": n} for t, a, b, n in CELLAR if a <= day <= b]


@trajdebug.step(kind="condition")
def validate_batch_sheet(sheet: dict, order: dict, occupied: list[dict]) -> dict:
    state = trajdebug.current_run().state
    busy = {o["tank"]: o["batch"] for o in occupied}
    seen: dict[str, str] = {}
    ordered = {ln["flavour"]: ln["cases"] for ln in order["lines"]}
    for row in sheet["batches"]:
        f, tank = row["flavour"], row["tank"]
        if tank is None:
            raise ValueError(f"{f}: no tank holds {row['litres']} L")
        if row["litres"] > TANKS[tank]:
            raise ValueError(f"{f}: {row['litres']} L batch does not fit tank {tank} ({TANKS[tank]} L)")
        if tank in seen:
            raise ValueError(f"tank {tank} is booked for both {seen[tank]} and {f}")
        seen[tank] = f
        if tank in busy:
            raise ValueError(f"tank {tank} is occupied by {busy[tank]} on {sheet['brew_date']}")
        if row["bottling"]["cases"] != ordered[f]:
            raise ValueError(f"{f}: {row['bottling']['cases']} cases bottled, {ordered[f]} ordered")
        if row["bottling"]["bottling_day"] > sheet["ship_by"]:
            raise ValueError(
                f"{f}: bottled {row['bottling']['bottling_day']}, after ship-by {sheet['ship_by']}"
            )
        recipe = state[f"recipe:{f}"]
        for key in ("residual_sugar_g_per_100ml", "abv_pct", "caffeine_mg_per_100ml"):
            if row["label"][key] != recipe[key]:
                raise ValueError(
                    f"{f}: label {key} {row['label'][key]} does not match the lab sheet ({recipe[key]})"
                )
        if row["label"]["abv_pct"] >= 0.5:
            raise ValueError(f"{f}: {row['label']['abv_pct']}% ABV cannot be sold as non-alcoholic")
    return {"order_id": sheet["order_id"], "batches": len(sheet["batches"]), "status": "ready"}


def agent(order: dict) -> dict:
    order = receive_order(order)
    reply = plan_batches(
        [{"role": "system", "content": PLAN_SYSTEM}, {"role": "user", "content": dumps(order)}]
    )
    plan = parse_plan(reply)
    tanks = list_tanks(order["brew_date"])
    used: list[str] = []
    for batch in plan:
        recipe = fetch_recipe(batch["flavour"])
        sheet = scale_recipe(recipe, batch)
        choice = assign_tank(sheet, tanks, list(used))
        entry = record_batch(sheet, choice, batch)
        used.append(choice["tank"])
        bottling_agent(entry, order["brew_date"])
        lab = {k: recipe[k] for k in ("residual_sugar_g_per_100ml", "abv_pct", "caffeine_mg_per_100ml")}
        label_reply = write_label(
            [
                {"role": "system", "content": LABEL_SYSTEM},
                {"role": "user", "content": dumps({"flavour": batch["flavour"], **lab})},
            ]
        )
        parse_label(label_reply)
    sheet = compile_batch_sheet(order, plan)
    occupied = cellar_log(order["brew_date"])
    return validate_batch_sheet(sheet, order, occupied)


def record(server, inp: dict, path: str) -> None:
    global _CLIENT, _MODEL
    _CLIENT = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _MODEL = server.model
    _LINE_CALLS["n"] = 0
    server.use(brain_for(inp))
    try:
        with trajdebug.run(NAME, path=path, task=f"plan the brewing batches of order {inp['order_id']}"):
            agent(inp)
    except ValueError:
        pass
