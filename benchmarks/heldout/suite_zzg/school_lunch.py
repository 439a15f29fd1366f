"""SDK route: a school's weekly lunch menu planner that orders from the catering supplier."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trajdebug

from .common import Case, chat, register, reply_json
from .kit import active

NAME = "school-lunch-planner"
ROUTE = "sdk"
DOMAIN = "school lunch menus"
SHAPE = "enrolment + allergy register, 5-day LLM dish loop with retry, nutrition sub-agent, supplier order"
SYSTEM = "[lunch] You plan school lunches. Answer JSON."

CATALOGUE = {
    "SL-101": {"dish": "Vegetable lasagne", "allergens": ["gluten", "milk"], "veg": True, "kcal": 520},
    "SL-102": {"dish": "Chicken curry and rice", "allergens": [], "veg": False, "kcal": 610},
    "SL-103": {"dish": "Tahini chickpea wrap", "allergens": ["sesame", "gluten"], "veg": True, "kcal": 480},
    "SL-104": {"dish": "Fish pie", "allergens": ["fish", "milk"], "veg": False, "kcal": 560},
    "SL-105": {"dish": "Bean chilli with jacket potato", "allergens": [], "veg": True, "kcal": 540},
    "SL-106": {"dish": "Turkey meatballs and pasta", "allergens": ["gluten", "egg"], "veg": False, "kcal": 590},
    "SL-107": {"dish": "Lentil dhal with naan", "allergens": ["gluten", "milk"], "veg": True, "kcal": 500},
}
INPUTS = {
    "oakfield": {"school": "Oakfield Primary", "week": "2027-01-11", "pupils": 212},
    "brookside": {"school": "Brookside Infants", "week": "2027-01-18", "pupils": 148},
    "hillcrest": {"school": "Hillcrest Juniors", "week": "2027-01-25", "pupils": 305},
    "millbank": {"school": "Millbank Academy", "week": "2027-02-01", "pupils": 264},
    "rowan": {"school": "Rowan Lane School", "week": "2027-02-08", "pupils": 187},
    "elmwood": {"school": "Elmwood Primary", "week": "2027-02-22", "pupils": 231},
}
REF_INPUTS = ["hillcrest", "millbank", "rowan", "elmwood"]
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri"]
_flaky: dict[str, int] = {}


def _policy(msgs: list[dict[str, Any]]) -> str:
    p = json.loads(msgs[-1]["content"])
    if p["task"] == "pick_dish":
        banned = set(p["avoid_allergens"])
        order = ["SL-102", "SL-105", "SL-103", "SL-104", "SL-107", "SL-101", "SL-106"]
        i = DAYS.index(p["day"])
        ok = [c for c in order if not banned & set(CATALOGUE[c]["allergens"]) and c not in p["already"]]
        pick = ok[i % len(ok)] if ok else order[i]
        veg = [c for c in ok if CATALOGUE[c]["veg"] and c != pick] or [pick]
        vo = veg[0]
        if active("lunch_hallucinated") and p["day"] == "Tue":
            vo = "SL-150"
        return reply_json({"main": pick, "veg_option": vo, "note": f"rotation day {i + 1}"})
    if p["task"] == "nutrition":
        low = [d for d in p["menu"] if d["kcal"] < 450]
        return reply_json({"verdict": "ok" if not low else "low", "days_below_target": [d["day"] for d in low]})
    raise ValueError(p["task"])


register("[lunch]", _policy)


@trajdebug.step(kind="tool")
def fetch_enrolment(school: str, pupils: int) -> dict:
    return {"school": school, "pupils": pupils, "vegetarian": pupils // 7, "halal": pupils // 9, "absent_rate": 0.05}


@trajdebug.step(kind="tool")
def fetch_allergy_register(school: str) -> str:
    rows = ["pupil,allergen", "P-0412,peanut;sesame", "P-0533,milk;egg", "P-0719,peanut", "P-0804,fish;sesame"]
    return "\n".join(rows)


@trajdebug.step(kind="parse")
def parse_allergy_register(text: str) -> list[str]:
    found: set[str] = set()
    for line in text.splitlines()[1:]:
        _, allergens = line.split(",")
        parts = allergens.split(";")
        if active("lunch_lossy_parse"):
            parts = parts[:1] if len(parts) > 1 else parts
        found.update(parts)
    # milk and egg are handled by the kitchen's free-from line, not the main dish
    return sorted(found - {"milk", "egg"})


@trajdebug.step(kind="state")
def remember_diet_counts(enrol: dict) -> dict:
    veg = enrol["vegetarian"]
    if active("lunch_memory_write"):
        veg = enrol["halal"]
    counts = {"vegetarian": veg, "halal": enrol["halal"], "pupils": enrol["pupils"]}
    trajdebug.current_run().state["diet_counts"] = counts
    return counts


@trajdebug.step(kind="other")
def plan_days(week: str) -> list[str]:
    days = list(DAYS)
    if active("lunch_off_by_one"):
        days = DAYS[1:]
    return days


@trajdebug.step(kind="llm")
def pick_dish(day: str, avoid: list[str], already: list[str]) -> dict:
    messages, text, usage = chat(SYSTEM, {"task": "pick_dish", "day": day, "avoid_allergens": avoid, "already": already})
    trajdebug.current_step().usage(model="gpt-4o-mini", **usage)
    return {"messages": messages, "answer": text}


@trajdebug.step(kind="parse")
def parse_pick(reply: dict) -> dict:
    data = json.loads(reply["answer"])
    return {"main": data["main"], "veg_option": data["veg_option"]}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def lookup_dish(code: str) -> dict:
    _flaky[code] = _flaky.get(code, 0) + 1
    if code == "SL-104" and _flaky[code] % 2 == 1:
        raise ConnectionError("catalogue service reset the connection")
    if code not in CATALOGUE:
        return {"code": code, "dish": "unlisted", "allergens": [], "veg": True, "kcal": 500}
    return dict(CATALOGUE[code], code=code)


@trajdebug.step(kind="llm")
def nutrition_review(menu: list[dict]) -> dict:
    messages, text, usage = chat(SYSTEM, {"task": "nutrition", "menu": menu})
    return {"messages": messages, "answer": text}


@trajdebug.step(kind="other")
def portion_plan(menu: list[dict], counts: dict) -> list[dict]:
    lines = []
    for d in menu:
        eaters = round(counts["pupils"] * 0.95)
        veg = counts["vegetarian"]
        lines.append({"day": d["day"], "code": d["code"], "portions": eaters - veg})
        lines.append({"day": d["day"], "code": d["veg_code"], "portions": veg})
    if active("lunch_unit_error"):
        lines = [dict(x, portions=round(x["portions"] * 0.12, 1)) for x in lines]  # trays, not portions
    return lines


@trajdebug.step(kind="tool")
def submit_supplier_order(school: str, week: str, lines: list[dict], register: list[str], counts: dict) -> dict:
    codes = {l["code"] for l in lines}
    unknown = sorted(c for c in codes if c not in CATALOGUE)
    if unknown:
        raise RuntimeError(f'HTTP 404 {{"error": "unknown_item", "items": {json.dumps(unknown)}}}')
    days = sorted({l["day"] for l in lines}, key=DAYS.index)
    if days != DAYS:
        raise RuntimeError(f'HTTP 422 {{"error": "incomplete_week", "days_ordered": {json.dumps(days)}, "required": 5}}')
    small = [l for l in lines if l["portions"] < 10 or l["portions"] != int(l["portions"])]
    if small:
        raise RuntimeError(f'HTTP 422 {{"error": "portions_invalid", "line": {json.dumps(small[0])}, "rule": "whole portions, min 10"}}')
    for l in lines:
        if "sesame" in CATALOGUE[l["code"]]["allergens"]:
            raise RuntimeError(f'HTTP 409 {{"error": "allergen_conflict", "item": "{l["code"]}", "allergen": "sesame", "register": "{school}"}}')
    veg = sum(l["portions"] for l in lines if CATALOGUE[l["code"]]["veg"] and l["day"] == "Mon")
    if veg < counts["pupils"] // 7:
        raise RuntimeError(f"order check: vegetarian portions {veg} on Mon below the {counts['pupils'] // 7} vegetarians enrolled")
    return {"order": f"ORD-{week}-{len(lines)}", "status": "accepted"}


def record(inp: dict, path: Path) -> None:
    _flaky.clear()
    try:
        with trajdebug.run(NAME, path=str(path), task=f"lunch order for {inp['school']} week of {inp['week']}") as run:
            enrol = fetch_enrolment(inp["school"], inp["pupils"])
            reg = parse_allergy_register(fetch_allergy_register(inp["school"]))
            counts = remember_diet_counts(enrol)
            menu: list[dict] = []
            chosen: list[str] = []
            for day in plan_days(inp["week"]):
                pick = parse_pick(pick_dish(day, reg, chosen))
                main = lookup_dish(pick["main"])
                veg = lookup_dish(pick["veg_option"])
                chosen.append(main["code"])
                menu.append({"day": day, "code": main["code"], "veg_code": veg["code"], "kcal": main["kcal"]})
            with trajdebug.step("nutrition_check", kind="agent", input={"menu": menu}) as sub:
                review = nutrition_review(menu)
                sub.output = json.loads(review["answer"])
            lines = portion_plan(menu, run.state["diet_counts"])
            submit_supplier_order(inp["school"], inp["week"], lines, reg, enrol)
    except RuntimeError:
        pass


CASES = [
    Case("lunch_01", "lunch_lossy_parse", "lossy_parsing", "oakfield", "parse_allergy_register", 1, "parse",
         "submit_supplier_order", "The allergy register parser keeps only the first allergen of a multi-allergen row, so sesame never reaches the dish picker."),
    Case("lunch_02", "lunch_memory_write", "bad_memory_write", "brookside", "remember_diet_counts", 1, "state",
         "submit_supplier_order", "The diet counts written to run state take the halal count as the vegetarian count."),
    Case("lunch_03", "lunch_off_by_one", "off_by_one", "oakfield", "plan_days", 1, "other",
         "submit_supplier_order", "The day planner starts its slice at index 1 and drops Monday from the week."),
    Case("lunch_04", "lunch_hallucinated", "hallucinated_value", "brookside", "pick_dish", 0, "llm",
         "submit_supplier_order", "On Tuesday the model names a vegetarian option SL-150 that is not in the supplier catalogue."),
    Case("lunch_05", "lunch_unit_error", "unit_error", "oakfield", "portion_plan", 1, "other",
         "submit_supplier_order", "The portion planner converts portions into gastronorm trays, sending fractional counts to the supplier."),
]
