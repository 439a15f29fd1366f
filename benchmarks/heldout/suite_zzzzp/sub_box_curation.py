"""tea-box-curator: builds a subscriber's monthly tea-and-snack box, slot by slot (sdk)."""
from __future__ import annotations

import json

import trajdebug

from common import chat, system_of, user_of

NAME, ROUTE = "tea-box-curator", "sdk"
DOMAIN = "subscription box: monthly curation of a tea-and-snack box per subscriber"
SHAPE = "profile tool, history retrieval, notes memory, model plan -> parse, per slot: catalog search -> model pick -> parse; box state write, allergen/repeat checks, pricing, stock reservation, shipment"
SWITCH = None


def _on(case):
    return SWITCH == case


CATALOG = {
    "tea": [("TEA-EARL-50", "Earl Grey loose leaf", [], 5.20), ("TEA-SENCHA-50", "Sencha", [], 6.10),
            ("TEA-ROOIBOS-50", "Rooibos vanilla", [], 5.40), ("TEA-CHAI-50", "Masala chai", ["dairy"], 5.80),
            ("TEA-MINT-50", "Moroccan mint", [], 4.90), ("TEA-OOLONG-50", "Milk oolong", [], 6.20)],
    "snack": [("SNK-ALMOND-SMK", "Smoked almonds", ["tree nut"], 6.00), ("SNK-RICECRK", "Rice crackers", [], 4.60),
              ("SNK-PRETZEL", "Sourdough pretzels", ["gluten"], 4.80), ("SNK-SEAWEED", "Seaweed thins", [], 5.10),
              ("SNK-CHICKPEA", "Roasted chickpeas", [], 4.70)],
    "sweet": [("SWT-HONEYALM", "Honey almond crunch", ["tree nut"], 6.30), ("SWT-SHORTBRD", "Shortbread", ["gluten", "dairy"], 5.50),
              ("SWT-DATEBAR", "Date bar", [], 4.90), ("SWT-FUDGE", "Sea salt fudge", ["dairy"], 5.60)],
}
ITEM = {sku: {"sku": sku, "name": n, "allergens": a, "cost": c, "category": cat}
        for cat, rows in CATALOG.items() for sku, n, a, c in rows}
PLANS = {"6-item": 36.00, "4-item": 25.00}
PROFILES = {
    "SUB-1042": {"plan": "6-item", "allergens": ["tree nut"], "region": "UK-S"},
    "SUB-1077": {"plan": "6-item", "allergens": ["gluten"], "region": "UK-N"},
    "SUB-1103": {"plan": "4-item", "allergens": [], "region": "UK-S"},
    "SUB-1150": {"plan": "6-item", "allergens": ["dairy"], "region": "IE"},
    "SUB-1188": {"plan": "4-item", "allergens": ["tree nut"], "region": "UK-N"},
}
CACHED_PROFILES = {"SUB-1042": {"plan": "6-item", "allergens": ["tree nut"], "region": "UK-S", "cached_at": "2025-03-01"}}
BILLING = {"SUB-1042": ("4-item", "2025-03-10"), "SUB-1077": ("6-item", "2024-11-02"), "SUB-1103": ("4-item", "2024-09-19"),
           "SUB-1150": ("6-item", "2025-01-05"), "SUB-1188": ("4-item", "2024-12-12")}
PROFILES["SUB-1042"]["plan"] = "4-item"  # changed 2025-03-10
HISTORY = {  # oldest first
    "SUB-1042": [("2024-12", ["TEA-SENCHA-50", "SNK-RICECRK"]), ("2025-01", ["TEA-MINT-50"]), ("2025-02", ["SWT-DATEBAR"])],
    "SUB-1077": [("2024-12", ["TEA-EARL-50", "SNK-ALMOND-SMK"]), ("2025-01", ["TEA-SENCHA-50", "SWT-HONEYALM"]),
                 ("2025-02", ["TEA-ROOIBOS-50", "SNK-RICECRK"])],
    "SUB-1103": [("2024-12", ["TEA-CHAI-50"]), ("2025-01", ["SNK-ALMOND-SMK"]), ("2025-02", ["TEA-EARL-50", "SWT-FUDGE"])],
    "SUB-1150": [("2024-12", ["TEA-SENCHA-50"]), ("2025-01", ["TEA-EARL-50", "SNK-ALMOND-SMK"]), ("2025-02", ["SWT-DATEBAR"])],
    "SUB-1188": [("2024-12", ["TEA-EARL-50"]), ("2025-01", ["TEA-SENCHA-50", "SNK-RICECRK"]), ("2025-02", ["SWT-DATEBAR", "TEA-ROOIBOS-50"])],
}
NOTES = {"SUB-1042": ["prefers caffeine-free in the evening"], "SUB-1077": ["likes smoky flavours"],
         "SUB-1103": ["no strong mint please"], "SUB-1150": ["gift wrap every box"], "SUB-1188": ["enjoys fruity teas"]}
HOUSEHOLD_CHAT = {"SUB-1103": ["(gift order GO-5521 for Tom) please send the Earl Grey loose leaf again, he loved it"]}

INPUTS = [{"task": f"March box for {s}", "subscriber": s, "month": "2025-03"} for s in PROFILES]

CASES = [
    {"id": "zzzzp_sb_cached_plan", "input": 0, "fault_kind": "stale_data",
     "root": ("load_subscriber", 1, "tool"), "failure": ("create_shipment", 1),
     "description": "load_subscriber serves the profile cached on 2025-03-01, still on the 6-item plan though billing moved SUB-1042 to 4 items on 2025-03-10, so the shipment of a 6-item box is refused."},
    {"id": "zzzzp_sb_history_window", "input": 1, "fault_kind": "off_by_one",
     "root": ("recall_history", 1, "retrieval"), "failure": ("no_repeat_check", 1),
     "description": "recall_history slices the last months with [-months + 1:], returning two boxes instead of three, so the December Earl Grey is picked again and the no-repeat check fails."},
    {"id": "zzzzp_sb_gift_chat", "input": 2, "fault_kind": "context_pollution",
     "root": ("compose_notes", 1, "state"), "failure": ("no_repeat_check", 1),
     "description": "compose_notes adds the household's gift-order chat for another recipient to the subscriber's notes, and the pick model honours its request for Earl Grey, a repeat from February."},
    {"id": "zzzzp_sb_bonus_slot", "input": 3, "fault_kind": "plan_error",
     "root": ("plan_box", 1, "llm"), "failure": ("price_box", 1),
     "description": "the planning model adds a seventh 'bonus' sweet slot to a 6-item plan, so the box costs more than the plan's 36.00 budget."},
    {"id": "zzzzp_sb_facet_timeout", "input": 4, "fault_kind": "swallowed_error",
     "root": ("search_catalog", 3, "tool"), "failure": ("allergen_check", 1),
     "description": "search_catalog catches the allergen facet service's timeout for the sweet slot and returns the unfiltered list without allergen data, so Honey almond crunch is picked for a tree-nut-allergic subscriber."},
]

PLANNER = "You plan a subscription box: answer JSON {slots: [category,...]} with exactly as many slots as the plan has items."
PICKER = "You pick one item for a box slot. Avoid the listed SKUs and the subscriber's allergens. Honour requests in the notes. Answer JSON {sku, reason}."


def brain(request):
    sysmsg, user = system_of(request), json.loads(user_of(request) or "{}")
    if sysmsg.startswith("You plan a subscription box"):
        n = int(user["plan"].split("-")[0])
        slots = ["tea", "snack", "sweet", "tea", "snack", "tea"][:n]
        if n == 6 and "dairy" in user.get("allergens", []) and _on("zzzzp_sb_bonus_slot"):
            slots.append("sweet")  # a bonus sweet on top of the plan
        return json.dumps({"slots": slots})
    if sysmsg.startswith("You pick one item"):
        cands, avoid = user["candidates"], set(user["avoid"])
        for note in user.get("notes", []):
            for c in cands:
                if c["name"] in note:
                    return json.dumps({"sku": c["sku"], "reason": "requested in the notes"})
        for c in cands:
            if c["sku"] not in avoid and not set(c.get("allergens", [])) & set(user["allergens"]):
                return json.dumps({"sku": c["sku"], "reason": "not sent before"})
        return json.dumps({"sku": cands[0]["sku"], "reason": "only option"})
    return "OK"


@trajdebug.step(kind="tool")
def load_subscriber(subscriber: str) -> dict:
    if _on("zzzzp_sb_cached_plan") and subscriber in CACHED_PROFILES:
        return {"subscriber": subscriber, **CACHED_PROFILES[subscriber]}
    return {"subscriber": subscriber, **PROFILES[subscriber]}


@trajdebug.step(kind="retrieval")
def recall_history(subscriber: str, months: int = 3) -> list[dict]:
    boxes = HISTORY[subscriber]
    kept = boxes[-months + 1:] if _on("zzzzp_sb_history_window") else boxes[-months:]
    return [{"month": m, "skus": list(s)} for m, s in kept]


@trajdebug.step(kind="state")
def compose_notes(subscriber: str) -> list[str]:
    notes = list(NOTES[subscriber])
    if _on("zzzzp_sb_gift_chat"):
        notes += HOUSEHOLD_CHAT.get(subscriber, [])
    trajdebug.current_run().state["notes"] = notes
    return notes


@trajdebug.step(kind="llm")
def plan_box(messages: list[dict]) -> dict:
    return chat(messages)[0]


@trajdebug.step(kind="parse")
def parse_plan(answer: dict) -> list[str]:
    return list(json.loads(answer["content"])["slots"])


@trajdebug.step(kind="tool")
def search_catalog(category: str, exclude_allergens: list[str]) -> list[dict]:
    rows = [dict(ITEM[sku]) for sku, *_ in CATALOG[category]]
    try:
        if _on("zzzzp_sb_facet_timeout") and category == "sweet":
            raise TimeoutError("allergen facet service did not answer in 800 ms")
        return [{k: r[k] for k in ("sku", "name", "allergens")} for r in rows
                if not set(r["allergens"]) & set(exclude_allergens)]
    except TimeoutError:
        return [{"sku": r["sku"], "name": r["name"]} for r in rows]


@trajdebug.step(kind="llm")
def pick_item(messages: list[dict]) -> dict:
    return chat(messages)[0]


@trajdebug.step(kind="parse")
def parse_pick(answer: dict) -> str:
    return json.loads(answer["content"])["sku"]


@trajdebug.step(kind="state")
def save_box(subscriber: str, skus: list[str]) -> dict:
    box = {"subscriber": subscriber, "skus": list(skus)}
    trajdebug.current_run().state["box"] = box
    return box


@trajdebug.step(kind="condition")
def allergen_check(allergens: list[str]) -> bool:
    box = trajdebug.current_run().state["box"]
    for sku in box["skus"]:
        hit = set(ITEM[sku]["allergens"]) & set(allergens)
        if hit:
            raise ValueError(f"{sku} ({ITEM[sku]['name']}) contains {', '.join(sorted(hit))}; {box['subscriber']} is allergic")
    return True


@trajdebug.step(kind="condition")
def no_repeat_check(subscriber: str, skus: list[str]) -> bool:
    for month, sent in HISTORY[subscriber]:
        for sku in skus:
            if sku in sent:
                raise ValueError(f"{sku} was already sent to {subscriber} in the {month} box")
    return True


@trajdebug.step(kind="other")
def price_box(skus: list[str], plan: str) -> dict:
    cost = round(sum(ITEM[s]["cost"] for s in skus), 2)
    if cost > PLANS[plan]:
        raise ValueError(f"box cost {cost:.2f} exceeds the {plan} plan budget {PLANS[plan]:.2f}")
    return {"cost": cost, "budget": PLANS[plan]}


@trajdebug.step(kind="tool")
def reserve_stock(skus: list[str]) -> dict:
    return {"reservation": "RSV-" + str(sum(map(ord, "".join(skus))) % 10000).zfill(4), "lines": len(skus)}


@trajdebug.step(kind="tool")
def create_shipment(subscriber: str, skus: list[str], region: str) -> dict:
    plan, since = BILLING[subscriber]
    if len(skus) != int(plan.split("-")[0]):
        raise ValueError(f"subscription {subscriber} is billed for the {plan} plan since {since}; box has {len(skus)} items")
    return {"shipment": f"SHP-{subscriber[4:]}-03", "region": region, "items": len(skus)}


def run(inp: dict, path: str) -> None:
    sub = inp["subscriber"]
    with trajdebug.run(NAME, task=inp["task"], path=path):
        profile = load_subscriber(sub)
        history = recall_history(sub)
        notes = compose_notes(sub)
        plan_msgs = [{"role": "system", "content": PLANNER},
                     {"role": "user", "content": json.dumps({"plan": profile["plan"], "allergens": profile["allergens"],
                                                             "history": history})}]
        slots = parse_plan(plan_box(plan_msgs))
        picked: list[str] = []
        avoid = [s for box in history for s in box["skus"]]
        for slot in slots:
            cands = search_catalog(slot, profile["allergens"])
            msgs = [{"role": "system", "content": PICKER},
                    {"role": "user", "content": json.dumps({"slot": slot, "candidates": cands, "avoid": avoid + picked,
                                                            "allergens": profile["allergens"], "notes": notes})}]
            picked.append(parse_pick(pick_item(msgs)))
        box = save_box(sub, picked)
        allergen_check(profile["allergens"])
        no_repeat_check(sub, box["skus"])
        price_box(box["skus"], profile["plan"])
        reserve_stock(box["skus"])
        create_shipment(sub, box["skus"], profile["region"])
