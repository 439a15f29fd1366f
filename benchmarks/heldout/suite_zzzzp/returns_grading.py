"""returns-grading: a returns centre grades each returned unit and routes it to a bin, then refunds (sdk)."""
from __future__ import annotations

import json

import trajdebug

from common import chat, system_of, user_of

NAME, ROUTE = "returns-grading", "sdk"
DOMAIN = "returns processing centre: grading returned units, disposition bins, refunds"
SHAPE = "intake, order lookup, policy retrieval, window check, per unit: model grade -> parse -> state write -> disposition; refund calc, payment tool, per unit WMS put-away, final check"
SWITCH = None


def _on(case):
    return SWITCH == case


ORDERS = {
    "RMA-5512": {"order": "WO-88120", "purchased": "2025-03-02", "category": "home", "captured_cents": 11998,
                 "lines": [{"sku": "KET-220", "serial": "SN-40071", "price_cents": 5999},
                           {"sku": "KET-220", "serial": "SN-40072", "price_cents": 5999}]},
    "RMA-5513": {"order": "WO-88164", "purchased": "2025-03-11", "category": "electronics", "captured_cents": 8900,
                 "lines": [{"sku": "HPH-BT7", "serial": "SN-77310", "price_cents": 6400},
                           {"sku": "CBL-USBC", "serial": "SN-77311", "price_cents": 2500}]},
    "RMA-5514": {"order": "WO-88201", "purchased": "2025-03-08", "category": "electronics", "captured_cents": 31400,
                 "lines": [{"sku": "SPK-MINI", "serial": "SN-81002", "price_cents": 4900},
                           {"sku": "TAB-10", "serial": "SN-81003", "price_cents": 26500}]},
    "RMA-5515": {"order": "WO-88233", "purchased": "2025-02-27", "category": "apparel", "captured_cents": 21700,
                 "lines": [{"sku": "JKT-RAIN-M", "serial": "SN-90410", "price_cents": 12900},
                           {"sku": "BOOT-42", "serial": "SN-90411", "price_cents": 6900},
                           {"sku": "SOCK-3PK", "serial": "SN-90412", "price_cents": 1900}]},
    "RMA-5516": {"order": "WO-88240", "purchased": "2025-03-14", "category": "home", "captured_cents": 16850,
                 "lines": [{"sku": "LMP-DESK", "serial": "SN-88231", "price_cents": 8950},
                           {"sku": "LMP-FLR", "serial": "SN-88232", "price_cents": 7900}]},
}
POLICIES = [
    {"id": "POL-APP", "title": "Apparel and accessories returns", "keywords": ["apparel", "accessories", "footwear"],
     "window_days": 60, "restocking_fee_pct": 0, "restock_bin": "APP-RESTOCK"},
    {"id": "POL-ELC", "title": "Electronics and audio returns", "keywords": ["electronics", "audio", "tablets"],
     "window_days": 30, "restocking_fee_pct": 15, "restock_bin": "ELC-RESTOCK"},
    {"id": "POL-HOM", "title": "Home and kitchen returns", "keywords": ["home", "kitchen", "lighting"],
     "window_days": 30, "restocking_fee_pct": 10, "restock_bin": "HOM-RESTOCK"},
]
BIN_CATEGORY = {"APP-RESTOCK": "apparel", "ELC-RESTOCK": "electronics", "HOM-RESTOCK": "home",
                "RFB-01": None, "LIQ-02": None}

INPUTS = [
    {"task": "RMA-5512: two kettles, one dented lid", "rma": "RMA-5512", "reason": "arrived dented",
     "units": [{"serial": "SN-40071", "notes": "box opened, unit unused, all parts present", "scan_missing": []},
               {"serial": "SN-40072", "notes": "dented lid, cosmetic dent only, all parts present", "scan_missing": []}]},
    {"task": "RMA-5513: audio accessories bundle, headphones and cable", "rma": "RMA-5513",
     "reason": "changed mind; audio accessories not needed",
     "units": [{"serial": "SN-77310", "notes": "sealed, factory film intact", "scan_missing": []},
               {"serial": "SN-77311", "notes": "sealed in bag", "scan_missing": []}]},
    {"task": "RMA-5514: mini speaker and tablet", "rma": "RMA-5514", "reason": "not as described",
     "units": [{"serial": "SN-81002", "notes": "light use, clean, all parts present", "scan_missing": []},
               {"serial": "SN-81003", "notes": "screen clean", "scan_missing": ["charger"]}]},
    {"task": "RMA-5515: rain jacket, boots and socks", "rma": "RMA-5515", "reason": "size too small",
     "units": [{"serial": "SN-90410", "notes": "tags attached, unworn", "scan_missing": []},
               {"serial": "SN-90411", "notes": "sole worn, scuffed toe", "scan_missing": []},
               {"serial": "SN-90412", "notes": "sealed pack, tags attached", "scan_missing": []}]},
    {"task": "RMA-5516: desk lamp and floor lamp", "rma": "RMA-5516", "reason": "colour differs from photo",
     "units": [{"serial": "SN-88231", "notes": "opened, bulb tested, all parts present", "scan_missing": []},
               {"serial": "SN-88232", "notes": "unused, all parts present", "scan_missing": []}]},
]

CASES = [
    {"id": "zzzzp_rg_refund_cents", "input": 0, "fault_kind": "unit_error",
     "root": ("compute_refund", 1, "other"), "failure": ("issue_refund", 1),
     "description": "compute_refund sums the order lines' price_cents as if they were dollars, so the refund is 100x the captured amount and the payment gateway refuses it."},
    {"id": "zzzzp_rg_policy_audio", "input": 1, "fault_kind": "wrong_retrieval",
     "root": ("fetch_return_policy", 1, "retrieval"), "failure": ("update_inventory", 1),
     "description": "the policy search matches the customer's words 'audio accessories' to the apparel-and-accessories policy, so sealed headphones are sent to the apparel restock bin, which the WMS refuses."},
    {"id": "zzzzp_rg_defects_split", "input": 2, "fault_kind": "lossy_parsing",
     "root": ("parse_grade", 2, "parse"), "failure": ("update_inventory", 2),
     "description": "parse_grade keeps only the first defect of the model's 'scuffed corner; missing charger', so the tablet is routed to restock and the WMS put-away refuses it because the dock scan lists a missing charger."},
    {"id": "zzzzp_rg_grade_key", "input": 3, "fault_kind": "bad_memory_write",
     "root": ("record_grade", 2, "state"), "failure": ("compute_refund", 1),
     "description": "record_grade files the boots' grade under the previous unit's serial key, overwriting the jacket's grade, so compute_refund finds no grade for SN-90411."},
    {"id": "zzzzp_rg_serial_echo", "input": 4, "fault_kind": "hallucinated_value",
     "root": ("grade_item", 1, "llm"), "failure": ("update_inventory", 1),
     "description": "the grading model echoes the desk lamp's serial as SN-88213 (digits swapped), and the WMS put-away refuses a serial that is not on the RMA."},
]

GRADER = "You grade one returned unit from its inspection notes. Answer JSON: serial, grade (A/B/C), defects (text, '; ' separated)."


def brain(request):
    if system_of(request).startswith("You grade one returned unit"):
        unit = json.loads(user_of(request))
        notes = unit["notes"]
        grade, defects = "A", []
        if "light use" in notes or "opened" in notes or "dent" in notes:
            grade = "B"
        if "worn" in notes or "scuffed" in notes:
            grade, defects = "C", ["sole worn", "scuffed toe"]
        if "dent" in notes:
            defects = ["dented lid"]
        for part in unit.get("scan_missing", []):
            defects = ["scuffed corner", f"missing {part}"]
        serial = unit["serial"]
        if serial == "SN-88231" and _on("zzzzp_rg_serial_echo"):
            serial = "SN-88213"
        return json.dumps({"serial": serial, "grade": grade, "defects": "; ".join(defects)})
    return "OK"


@trajdebug.step(kind="input")
def intake(rma: dict) -> dict:
    return {"rma": rma["rma"], "units": len(rma["units"]), "reason": rma["reason"]}


@trajdebug.step(kind="tool")
def lookup_order(rma_id: str) -> dict:
    return json.loads(json.dumps(ORDERS[rma_id]))


@trajdebug.step(kind="retrieval")
def fetch_return_policy(query: str) -> list[dict]:
    words = query.lower().split()
    if _on("zzzzp_rg_policy_audio"):
        words = words[1:]  # ranks on the customer's own words
    scored = []
    for pol in POLICIES:
        hits = sum(w.strip(";,.") in pol["keywords"] for w in words)
        scored.append((hits, pol))
    scored.sort(key=lambda hp: -hp[0])
    return [dict(scored[0][1])]


@trajdebug.step(kind="condition")
def check_window(purchased: str, window_days: int, today: str = "2025-03-20") -> bool:
    from datetime import date
    days = (date.fromisoformat(today) - date.fromisoformat(purchased)).days
    if days > window_days:
        raise ValueError(f"return window of {window_days} days passed ({days} days)")
    return True


@trajdebug.step(kind="llm")
def grade_item(messages: list[dict]) -> dict:
    msg, _ = chat(messages)
    return msg


@trajdebug.step(kind="parse")
def parse_grade(answer: dict) -> dict:
    data = json.loads(answer["content"])
    text = data.get("defects", "")
    if _on("zzzzp_rg_defects_split"):
        parts = [text.split(";")[0].strip()] if text else []
    else:
        parts = [d.strip() for d in text.split(";") if d.strip()]
    return {"serial": data["serial"], "grade": data["grade"], "defects": parts}


@trajdebug.step(kind="state")
def record_grade(serial: str, grade: dict, previous_serial: str | None) -> str:
    key = f"grade:{serial}"
    if _on("zzzzp_rg_grade_key") and previous_serial:
        key = f"grade:{previous_serial}"
    trajdebug.current_run().state[key] = grade["grade"]
    return key


@trajdebug.step(kind="condition")
def choose_disposition(grade: dict, policy: dict) -> dict:
    if any(d.startswith("missing") for d in grade["defects"]):
        return {"disposition": "refurbish", "bin": "RFB-01"}
    if grade["grade"] in ("A", "B"):
        return {"disposition": "restock", "bin": policy["restock_bin"]}
    return {"disposition": "liquidate", "bin": "LIQ-02"}


@trajdebug.step(kind="other")
def compute_refund(order: dict, policy: dict) -> dict:
    state = trajdebug.current_run().state
    total = 0.0
    for line in order["lines"]:
        grade = state.get(f"grade:{line['serial']}")
        if grade is None:
            raise KeyError(f"no grade recorded for {line['serial']}")
        amount = line["price_cents"] if _on("zzzzp_rg_refund_cents") else line["price_cents"] / 100
        if grade != "A":
            amount *= 1 - policy["restocking_fee_pct"] / 100
        total += amount
    return {"refund": round(total, 2), "currency": "USD"}


@trajdebug.step(kind="tool")
def issue_refund(order_id: str, refund: dict, captured_cents: int) -> dict:
    if refund["refund"] > captured_cents / 100:
        raise ValueError(f"refund {refund['refund']:.2f} USD exceeds captured amount {captured_cents / 100:.2f} USD on {order_id}")
    return {"refund_id": f"RF-{order_id[3:]}", "amount": refund["refund"], "status": "settled"}


@trajdebug.step(kind="tool")
def update_inventory(serial: str, sku: str, placement: dict, category: str, rma: dict) -> dict:
    serials = [u["serial"] for u in rma["units"]]
    if serial not in serials:
        raise LookupError(f"WMS: serial {serial} is not on {rma['rma']}")
    want = BIN_CATEGORY[placement["bin"]]
    if want is not None and want != category:
        raise ValueError(f"WMS: bin {placement['bin']} does not take category {category} ({sku})")
    unit = next(u for u in rma["units"] if u["serial"] == serial)
    if placement["disposition"] == "restock" and unit["scan_missing"]:
        raise ValueError(f"WMS: restock refused for {serial}: dock scan lists missing {', '.join(unit['scan_missing'])}")
    return {"serial": serial, "bin": placement["bin"], "moved": True}


@trajdebug.step(kind="condition")
def final_check(refund: dict, moves: list[dict], units: int) -> str:
    if len(moves) != units:
        raise ValueError(f"{len(moves)} of {units} units put away")
    return "closed"


def run(rma: dict, path: str) -> None:
    with trajdebug.run(NAME, task=rma["task"], path=path) as r:
        intake(rma)
        order = lookup_order(rma["rma"])
        [policy] = fetch_return_policy(f"{order['category']} {rma['reason']}")
        check_window(order["purchased"], policy["window_days"])
        placements, previous = [], None
        for unit in rma["units"]:
            line = next(l for l in order["lines"] if l["serial"] == unit["serial"])
            messages = [{"role": "system", "content": GRADER},
                        {"role": "user", "content": json.dumps({**unit, "sku": line["sku"]})}]
            answer = grade_item(messages)
            grade = parse_grade(answer)
            record_grade(unit["serial"], grade, previous)
            previous = unit["serial"]
            placements.append((grade, line, choose_disposition(grade, policy)))
        refund = compute_refund(order, policy)
        issue_refund(order["order"], refund, order["captured_cents"])
        moves = [update_inventory(g["serial"], line["sku"], p, order["category"], rma) for g, line, p in placements]
        final_check(refund, moves, len(rma["units"]))
        r.state["closed"] = True
