"""Taxidermist's mounting orders: sdk route. Parse the work order, per specimen measure, look up
the species rules, ask the model for a mounting form, keep each form in run.state, reserve the
forms with the supplier, price the order and check the deposit."""
from __future__ import annotations

import json

from openai import OpenAI

import trajdebug

NAME = "mounting-orders"
ROUTE = "sdk"
DOMAIN = "taxidermist's mounting orders"
SHAPE = "parse order -> per specimen: rules (retrieval), measure (tool), form (llm), keep (state) -> reserve, price, deposit check; 11-27 steps"
SWITCHES = {"measure_in_inches": False, "rules_for_genus": False, "form_code_invented": False,
            "last_line_dropped": False, "deposit_from_old_sheet": False}

RULES = {
    "red fox": {"genus": "vulpes", "forms": {"FX-S": (40, 55), "FX-L": (56, 75)}, "pose": "standing"},
    "arctic fox": {"genus": "vulpes", "forms": {"AF-S": (30, 45), "AF-L": (46, 60)}, "pose": "curled"},
    "mallard": {"genus": "anas", "forms": {"MD-F": (25, 40)}, "pose": "flying"},
    "pheasant": {"genus": "phasianus", "forms": {"PH-S": (50, 70), "PH-L": (71, 90)}, "pose": "perched"},
    "brown trout": {"genus": "salmo", "forms": {"BT-1": (20, 45), "BT-2": (46, 70)}, "pose": "arched"},
    "badger": {"genus": "meles", "forms": {"BD-S": (50, 70), "BD-L": (71, 90)}, "pose": "walking"},
    "roe deer": {"genus": "capreolus", "forms": {"RD-SH": (30, 45)}, "pose": "shoulder"},
}
PRICE = {"standing": 420, "curled": 380, "flying": 260, "perched": 300, "arched": 180, "walking": 450, "shoulder": 520}
DEPOSIT_RATE = 0.3
OLD_DEPOSIT_RATE = 0.25

INPUTS = [
    {"task": "mounting order T-2201, Hollis", "sheet": "customer: Hollis\nred fox | 62 cm\nmallard | 33 cm\nbrown trout | 51 cm", "deposit": 0.3},
    {"task": "mounting order T-2202, Ostrander", "sheet": "customer: Ostrander\npheasant | 74 cm\nbadger | 66 cm", "deposit": 0.3},
    {"task": "mounting order T-2203, Kemble", "sheet": "customer: Kemble\narctic fox | 41 cm\nroe deer | 38 cm\nmallard | 29 cm\nbrown trout | 40 cm", "deposit": 0.3},
    {"task": "mounting order T-2204, Pryce", "sheet": "customer: Pryce\nbadger | 78 cm", "deposit": 0.3},
    {"task": "mounting order T-2205, Underhill", "sheet": "customer: Underhill\nred fox | 49 cm\npheasant | 58 cm\nroe deer | 42 cm", "deposit": 0.3},
]
CASES = [
    {"id": "zv01", "input": 0, "switch": "measure_in_inches", "kind": "unit_error",
     "root": ("measure_specimen", 3, "tool"), "failure": ("reserve_forms", 1),
     "description": "The bench scale reported the trout's length in inches (20.1) where the order is kept in centimetres, so its form was picked for a fish less than half its size."},
    {"id": "zv02", "input": 2, "switch": "rules_for_genus", "kind": "wrong_retrieval",
     "root": ("species_rules", 1, "retrieval"), "failure": ("reserve_forms", 1),
     "description": "The species rules lookup for the arctic fox returned the red fox's sheet (same genus), whose forms start at 40 cm and whose codes the supplier never stocks for an arctic fox."},
    {"id": "zv03", "input": 1, "switch": "form_code_invented", "kind": "hallucinated_value",
     "root": ("choose_form", 2, "llm"), "failure": ("reserve_forms", 1),
     "description": "The model named form BD-M for the badger, a code that is not among the badger forms it was given."},
    {"id": "zv04", "input": 4, "switch": "last_line_dropped", "kind": "lossy_parsing",
     "root": ("read_work_order", 1, "parse"), "failure": ("check_deposit", 1),
     "description": "The work order reader dropped the sheet's last specimen line (the roe deer), so the order was priced for two mounts while the deposit slip was made out for three."},
    {"id": "zv05", "input": 3, "switch": "deposit_from_old_sheet", "kind": "stale_data",
     "root": ("load_price_sheet", 1, "tool"), "failure": ("check_deposit", 1),
     "description": "The price sheet loaded was last season's, with a 25% deposit rate, so the deposit asked differs from the 30% the customer's slip states."},
]

_client = None


def _llm(server):
    global _client
    if _client is None or _client.base_url != server.base_url + "/":
        _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    return _client


def policy(request):
    msgs = request.body["messages"]
    ask = json.loads(msgs[-1]["content"])
    forms = ask["forms"]
    length = ask["length_cm"]
    pick = None
    for code, (lo, hi) in forms.items():
        if lo <= length <= hi:
            pick = code
    if pick is None:  # nearest form
        pick = min(forms, key=lambda c: min(abs(forms[c][0] - length), abs(forms[c][1] - length)))
    if SWITCHES["form_code_invented"] and ask["species"] == "badger":
        pick = "BD-M"
    return json.dumps({"form": pick, "pose": ask["pose"]})


@trajdebug.step(kind="input")
def receive_order(sheet: str, deposit: float) -> dict:
    return {"sheet": sheet, "deposit_rate_on_slip": deposit}


@trajdebug.step(kind="parse")
def read_work_order(sheet: str) -> dict:
    lines = sheet.strip().splitlines()
    customer = lines[0].split(":", 1)[1].strip()
    body = lines[1:]
    count = len(body)
    if SWITCHES["last_line_dropped"]:
        body = body[:-1] if len(body) > 2 else body
    specimens = []
    for i, line in enumerate(body, 1):
        species, length = [p.strip() for p in line.split("|")]
        specimens.append({"tag": f"S{i}", "species": species, "stated_cm": float(length.split()[0])})
    return {"customer": customer, "specimens": specimens, "lines_on_sheet": count}


@trajdebug.step(kind="retrieval")
def species_rules(species: str) -> dict:
    if SWITCHES["rules_for_genus"] and species == "arctic fox":
        species = "red fox"
    return {"species": species, **RULES[species]}


@trajdebug.step(kind="tool")
def measure_specimen(tag: str, species: str, stated_cm: float) -> dict:
    length = round(stated_cm * 1.0, 1)
    if SWITCHES["measure_in_inches"] and species == "brown trout":
        length = round(stated_cm / 2.54, 1)
    return {"tag": tag, "length_cm": length}


@trajdebug.step(kind="llm")
def choose_form(messages: list) -> str:
    reply = _llm(SERVER).chat.completions.create(model="fake-model", messages=messages)
    return reply.choices[0].message.content


@trajdebug.step(kind="state")
def keep_form(tag: str, species: str, choice: dict, length: dict) -> None:
    trajdebug.current_run().state[f"form:{tag}"] = {"species": species, "form": choice["form"],
                                                    "pose": choice["pose"], "length_cm": length["length_cm"]}


@trajdebug.step(kind="tool")
def load_price_sheet(season: str) -> dict:
    rate = OLD_DEPOSIT_RATE if SWITCHES["deposit_from_old_sheet"] else DEPOSIT_RATE
    return {"season": season, "prices": dict(PRICE), "deposit_rate": rate}


@trajdebug.step(kind="tool")
def reserve_forms(order: dict) -> dict:
    state = trajdebug.current_run().state
    held = []
    for spec in order["specimens"]:
        entry = state[f"form:{spec['tag']}"]
        stock = RULES[spec["species"]]["forms"]
        if entry["form"] not in stock:
            raise LookupError(f"supplier has no form {entry['form']} for {spec['species']}")
        lo, hi = stock[entry["form"]]
        if not lo - 3 <= spec["stated_cm"] <= hi + 3:
            raise ValueError(f"form {entry['form']} ({lo}-{hi} cm) does not fit {spec['tag']} {spec['species']} at {spec['stated_cm']} cm")
        held.append({"tag": spec["tag"], "form": entry["form"]})
    return {"held": held}


@trajdebug.step(kind="other")
def price_order(order: dict, sheet: dict) -> dict:
    state = trajdebug.current_run().state
    total = sum(sheet["prices"][state[f"form:{s['tag']}"]["pose"]] for s in order["specimens"])
    return {"total": total, "deposit": round(total * sheet["deposit_rate"], 2), "mounts": len(order["specimens"])}


@trajdebug.step(kind="condition")
def check_deposit(quote: dict, order: dict, received: dict) -> str:
    if quote["mounts"] != order["lines_on_sheet"]:
        raise ValueError(f"quote covers {quote['mounts']} mounts, deposit slip lists {order['lines_on_sheet']}")
    expected = round(quote["total"] * received["deposit_rate_on_slip"], 2)
    if abs(expected - quote["deposit"]) > 0.01:
        raise ValueError(f"deposit {quote['deposit']} does not match slip's {expected}")
    return "deposit ok"


@trajdebug.step(kind="output")
def confirm_order(customer: str, quote: dict, held: dict) -> str:
    return f"{customer}: {quote['mounts']} mounts, total {quote['total']}, deposit {quote['deposit']}, forms {[h['form'] for h in held['held']]}"


SERVER = None


def record(inp, path, server):
    global SERVER
    SERVER = server
    with trajdebug.run(NAME, task=inp["task"], path=path):
        received = receive_order(inp["sheet"], inp["deposit"])
        order = read_work_order(received["sheet"])
        for spec in order["specimens"]:
            rules = species_rules(spec["species"])
            length = measure_specimen(spec["tag"], spec["species"], spec["stated_cm"])
            ask = {"species": spec["species"], "length_cm": length["length_cm"], "forms": rules["forms"], "pose": rules["pose"]}
            messages = [{"role": "system", "content": "Pick the mounting form that fits the specimen. Answer JSON."},
                        {"role": "user", "content": json.dumps(ask)}]
            text = choose_form(messages)
            with trajdebug.step("read_form_choice", kind="parse", input={"text": text}) as p:
                p.output = choice = json.loads(text)
            keep_form(spec["tag"], spec["species"], choice, length)
        sheet = load_price_sheet("2026")
        held = reserve_forms(order)
        quote = price_order(order, sheet)
        check_deposit(quote, order, received)
        confirm_order(order["customer"], quote, held)
