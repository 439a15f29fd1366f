"""Sail loft: repair quotes for damaged sails (recording route: trajdebug's own SDK).

Shape: the model reads the repair ticket into JSON, a parser makes the work order, then a loop over
the damage items (catalogue retrieval, the model sizes the patch, the cutting table measures it, the
job card in run.state is written), cloth is reserved from the rolls, bench days planned, and the
loft's own quote check runs before the quote is written.
"""
from __future__ import annotations

import datetime as dt
import json
import math

import trajdebug
from openai import OpenAI

RUN_NAME = "sail-loft-repairs"
ROUTE = "sdk"
DOMAIN = "a sail loft's sail repairs"
SHAPE = "model extract -> parse -> loop over damage items (retrieval, model, tool, state write) -> reserve -> plan -> validator -> output; 16-32 steps"

SWITCH = None

INPUTS = [
    {"boat": "Kittiwake", "sail": "mainsail", "cloth": "Dacron 7.6oz", "luff_m": 11.2, "received": "2026-03-02",
     "due": "2026-03-06", "damage": [("panel 3", "tear", 40), ("panel 5", "chafe", 25), ("leech", "tear", 18)]},
    {"boat": "Gannet", "sail": "genoa", "cloth": "Dacron 6.0oz", "luff_m": 12.8, "received": "2026-03-03",
     "due": "2026-03-09", "damage": [("clew", "chafe", 30), ("panel 2", "tear", 55)]},
    {"boat": "Skua", "sail": "mainsail", "cloth": "Pentex laminate", "luff_m": 14.1, "received": "2026-03-04",
     "due": "2026-03-10", "damage": [("panel 4", "tear", 35), ("batten pocket 2", "chafe", 20),
                                     ("panel 6", "tear", 22), ("foot", "chafe", 15)]},
    {"boat": "Fulmar", "sail": "spinnaker", "cloth": "Nylon 0.75oz", "luff_m": 13.0, "received": "2026-03-05",
     "due": "2026-03-06", "damage": [("panel 7", "tear", 60), ("head", "chafe", 12)]},
    {"boat": "Petrel", "sail": "jib", "cloth": "Dacron 6.0oz", "luff_m": 9.4, "received": "2026-03-06",
     "due": "2026-03-12", "damage": [("panel 1", "tear", 28), ("panel 2", "chafe", 16), ("tack", "chafe", 10),
                                     ("leech", "tear", 33), ("panel 5", "tear", 21)]},
]

CASES = [
    {"id": "zzzb_sail_01", "input": 2, "switch": "cutting_table_sqft", "kind": "unit_error",
     "root": ("cut_area", 1), "failure": ("reserve_cloth", 1),
     "description": "The cutting table reported the first patch's area in square feet while the loft counts square metres, so the laminate reservation asked for more cloth than the roll holds."},
    {"id": "zzzb_sail_02", "input": 0, "switch": "patch_cloth_made_up", "kind": "hallucinated_value",
     "root": ("estimate_patch", 2), "failure": ("reserve_cloth", 1),
     "description": "The model sizing the second patch named a cloth, Dacron 9.2oz, that the catalogue never gave it, and the loft has no roll of it."},
    {"id": "zzzb_sail_03", "input": 3, "switch": "bench_days_inclusive", "kind": "off_by_one",
     "root": ("plan_bench_days", 1), "failure": ("check_quote", 1),
     "description": "Bench planning counted the start day twice (an inclusive range), so the ready date fell one day after the owner's date."},
    {"id": "zzzb_sail_04", "input": 4, "switch": "job_card_previous_key", "kind": "bad_memory_write",
     "root": ("record_panel", 3), "failure": ("check_quote", 1),
     "description": "The job card entry for the third damage item (tack) was filed under the previous item's place, overwriting it, so the quote check found a damage item with no priced patch."},
    {"id": "zzzb_sail_05", "input": 2, "switch": "catalogue_times_out", "kind": "swallowed_error",
     "root": ("lookup_cloth", 3), "failure": ("check_quote", 1),
     "description": "The cloth lookup for the third item caught the catalogue's timeout and answered the house Dacron, so a laminate sail got a Dacron patch the quote check refuses."},
]

CATALOGUE = {
    "Dacron 7.6oz": {"cloth": "Dacron 7.6oz", "roll_m2": 6.0, "eur_m2": 38.0},
    "Dacron 6.0oz": {"cloth": "Dacron 6.0oz", "roll_m2": 8.0, "eur_m2": 31.0},
    "Pentex laminate": {"cloth": "Pentex laminate", "roll_m2": 0.6, "eur_m2": 96.0},
    "Nylon 0.75oz": {"cloth": "Nylon 0.75oz", "roll_m2": 5.0, "eur_m2": 22.0},
}
HOURS = {"tear": 2.5, "chafe": 1.5}


def policy(request):
    messages = request.body["messages"]
    system, user = messages[0]["content"], messages[-1]["content"]
    if system.startswith("Read the repair ticket"):
        ticket = json.loads(user)
        return json.dumps({"boat": ticket["boat"], "sail": ticket["sail"], "cloth": ticket["cloth"],
                           "luff_m": ticket["luff_m"], "due": ticket["due"], "received": ticket["received"],
                           "items": [{"where": w, "type": t, "length_cm": n} for w, t, n in ticket["damage"]]})
    if system.startswith("Size a patch"):
        item = json.loads(user)
        margin = 12 if item["type"] == "tear" else 8
        cloth = item["cloth"]["cloth"]
        if SWITCH == "patch_cloth_made_up" and item["where"] == "panel 5":
            cloth = "Dacron 9.2oz"
        return json.dumps({"where": item["where"], "width_cm": item["length_cm"] + margin,
                           "height_cm": margin * 2, "cloth": cloth})
    return "I can only help with sail repairs."


def _client(server):
    return OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


def record(inp, path, server):
    client = _client(server)

    @trajdebug.step(kind="input")
    def repair_ticket(ticket: dict) -> dict:
        return ticket

    @trajdebug.step(kind="llm")
    def read_ticket(ticket: dict) -> dict:
        reply = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": "Read the repair ticket into JSON: boat, sail, cloth, luff, dates, damage items."},
            {"role": "user", "content": json.dumps(ticket)}])
        trajdebug.current_step().usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                                       completion_tokens=reply.usage.completion_tokens)
        return {"role": "assistant", "content": reply.choices[0].message.content}

    @trajdebug.step(kind="parse")
    def parse_work_order(answer: dict) -> dict:
        data = json.loads(answer["content"])
        return {"boat": data["boat"], "sail": data["sail"], "cloth": data["cloth"], "luff_m": float(data["luff_m"]),
                "received": data["received"], "due": data["due"], "items": list(data["items"])}

    @trajdebug.step(kind="tool")
    def cloth_catalogue(cloth: str) -> dict:
        if SWITCH == "catalogue_times_out" and cloth == "Pentex laminate" and trajdebug.current_run().state.get("catalogue_calls", 0) == 2:
            raise TimeoutError("cloth catalogue did not answer within 2.0 s")
        return dict(CATALOGUE[cloth])

    @trajdebug.step(kind="retrieval")
    def lookup_cloth(cloth: str) -> dict:
        state = trajdebug.current_run().state
        try:
            return cloth_catalogue(cloth)
        except TimeoutError:
            return dict(CATALOGUE["Dacron 7.6oz"])
        finally:
            state["catalogue_calls"] = state.get("catalogue_calls", 0) + 1

    @trajdebug.step(kind="llm")
    def estimate_patch(item: dict, cloth: dict) -> dict:
        reply = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": "Size a patch for this damage item; answer JSON width_cm, height_cm, cloth."},
            {"role": "user", "content": json.dumps({**item, "cloth": cloth})}])
        return json.loads(reply.choices[0].message.content)

    @trajdebug.step(kind="tool")
    def cut_area(patch: dict) -> dict:
        area = patch["width_cm"] * patch["height_cm"] / 10000
        if SWITCH == "cutting_table_sqft" and patch["where"] == "panel 4":
            area = area * 10.7639
        return {"where": patch["where"], "cloth": patch["cloth"], "area": round(area, 4)}

    @trajdebug.step(kind="state")
    def record_panel(item: dict, cut: dict, hours: float) -> dict:
        card = trajdebug.current_run().state.setdefault("job_card", {})
        order = card.setdefault("_order", [])
        key = item["where"]
        if SWITCH == "job_card_previous_key" and key == "tack":
            key = order[-1]
        if key not in order:
            order.append(key)
        card[key] = {"cloth": cut["cloth"], "area_m2": cut["area"], "hours": hours}
        return {"place": key, **card[key]}

    @trajdebug.step(kind="tool")
    def reserve_cloth(order: dict) -> list:
        card = trajdebug.current_run().state["job_card"]
        need = {}
        for key in card["_order"]:
            need[card[key]["cloth"]] = need.get(card[key]["cloth"], 0.0) + card[key]["area_m2"]
        held = []
        for cloth, m2 in need.items():
            if cloth not in CATALOGUE:
                raise LookupError(f"no roll of {cloth} in the loft for {order['boat']}")
            if m2 > CATALOGUE[cloth]["roll_m2"]:
                raise ValueError(f"{order['boat']} needs {m2:.2f} m2 of {cloth}; the roll holds {CATALOGUE[cloth]['roll_m2']} m2")
            held.append({"cloth": cloth, "m2": round(m2, 3)})
        return held

    @trajdebug.step(kind="tool")
    def plan_bench_days(received: str, hours: float) -> dict:
        start = dt.date.fromisoformat(received) + dt.timedelta(days=1)
        days = math.ceil(hours / 6)
        span = range(days + 1) if SWITCH == "bench_days_inclusive" else range(days)
        bench = [(start + dt.timedelta(days=d)).isoformat() for d in span]
        return {"bench_days": bench, "ready": bench[-1]}

    @trajdebug.step(kind="condition")
    def check_quote(order: dict, plan: dict) -> dict:
        card = trajdebug.current_run().state["job_card"]
        for item in order["items"]:
            if item["where"] not in card:
                raise ValueError(f"{order['boat']}: damage at {item['where']} has no priced patch")
            if card[item["where"]]["cloth"] != order["cloth"]:
                raise ValueError(f"{order['boat']}: patch at {item['where']} is {card[item['where']]['cloth']}, "
                                 f"the sail is {order['cloth']}")
        if plan["ready"] > order["due"]:
            raise ValueError(f"{order['boat']}: ready {plan['ready']} is after the owner's date {order['due']}")
        return {"ok": True, "items": len(order["items"])}

    @trajdebug.step(kind="output")
    def write_quote(order: dict, plan: dict) -> str:
        card = trajdebug.current_run().state["job_card"]
        eur = sum(card[k]["area_m2"] * CATALOGUE[card[k]["cloth"]]["eur_m2"] + card[k]["hours"] * 55 for k in card["_order"])
        return f"{order['boat']} {order['sail']}: {len(card['_order'])} patches, EUR {eur:.2f}, ready {plan['ready']}"

    try:
        with trajdebug.run(RUN_NAME, path=str(path), task=f"repair quote for the {inp['sail']} of {inp['boat']}"):
            ticket = repair_ticket(inp)
            order = parse_work_order(read_ticket(ticket))
            hours = 0.0
            for item in order["items"]:
                cloth = lookup_cloth(order["cloth"])
                patch = estimate_patch(item, cloth)
                cut = cut_area(patch)
                h = HOURS[item["type"]] + cut["area"] * 4
                hours += h
                record_panel(item, cut, round(h, 2))
            reserve_cloth(order)
            plan = plan_bench_days(order["received"], round(hours, 2))
            check_quote(order, plan)
            write_quote(order, plan)
    except (ValueError, LookupError):
        pass
