"""Lapidary workshop commissions (recording SDK): read a commission, pick rough, estimate yield, price,
book a bench, issue the work order."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trajdebug

from . import common
from .common import Case
from .kit import active

AGENT = "lapidary-commissions"
ROUTE = "sdk"
EXT = "jsonl"
DOMAIN = "lapidary workshop"
SHAPE = ("commission intake, model classification + parser, rough inventory retrieval, model lot choice, "
         "lot inspection (retried), yield sub-agent (model + parser + weight), state write, model rate "
         "lookup plan + rate tool, pricing, bench calendar + slot picking, model work order + parser, "
         "validator, work-order issue")

COMMISSIONS = {
    "opal_cabs": "Please cut 3 oval cabochons 14x10 mm from boulder opal, polished, for a bracelet. "
                 "Deliver by 2026-04-20. Customer: Ines Varga.",
    "sapphire_facets": "Two round brilliant faceted stones, 6 mm, blue sapphire, for earrings. "
                       "Need by 2026-05-02. Customer: Tomas Reid.",
    "amethyst_pendant": "One pear faceted amethyst 16x12 mm for a pendant, by 2026-03-28. Customer: A. Obi.",
    "garnet_studs": "Two round brilliant faceted garnets 5 mm for studs, by 2026-06-10. Customer: L. Marsh.",
    "labradorite_cab": "One oval cabochon 25x18 mm labradorite with good flash, by 2026-04-02. Customer: K. Ito.",
    "opal_ring": "One oval cabochon 12x10 mm boulder opal for a ring, by 2026-07-01. Customer: P. Hale.",
}
REFS = ["amethyst_pendant", "garnet_studs", "labradorite_cab", "opal_ring"]

ROUGH = {
    "boulder opal": [
        {"lot": "R-3307", "ct": 6.1, "grade": "B"}, {"lot": "R-3312", "ct": 7.4, "grade": "B"},
        {"lot": "R-3340", "ct": 22.0, "grade": "A"}, {"lot": "R-3355", "ct": 18.5, "grade": "A-"}],
    "blue sapphire": [{"lot": "R-4102", "ct": 2.9, "grade": "AA"}, {"lot": "R-4117", "ct": 4.6, "grade": "A"}],
    "amethyst": [{"lot": "R-2210", "ct": 31.0, "grade": "A"}],
    "garnet": [{"lot": "R-2604", "ct": 3.8, "grade": "A"}, {"lot": "R-2611", "ct": 2.2, "grade": "B"}],
    "labradorite": [{"lot": "R-1803", "ct": 120.0, "grade": "A"}],
}
RATES = {"cabochon": 4.5, "faceted": 18.0}
MIN_CT = {("cabochon", "14x10"): 6.0, ("cabochon", "12x10"): 4.0, ("cabochon", "25x18"): 40.0,
          ("faceted", "6"): 2.0, ("faceted", "16x12"): 22.0, ("faceted", "5"): 1.5}
HELD = {"2026-04-13T09:00": "W-1182", "2026-04-14T09:00": "W-1190"}

CASES = [
    Case("zq_lapidary_lot", "lapidary-lot", "hallucinated_value", "opal_cabs", ("choose_lot", 1),
         ("inspect_lot", 1), "The model's lot choice names R-5521, a lot that appears in none of the "
                             "inventory hits, and the inspection service cannot find it."),
    Case("zq_lapidary_yield", "lapidary-yield", "format_drift", "sapphire_facets", ("estimate_yield", 1),
         ("validate_work_order", 1), "The yield model answers '62%' instead of a fraction; the parser "
                                     "accepts 62 and the finished weight exceeds the rough."),
    Case("zq_lapidary_page", "lapidary-page", "truncated_result", "opal_cabs", ("search_rough_inventory", 1),
         ("validate_work_order", 1), "The inventory search returns only its first two lots, so the lot "
                                     "chosen is too small for three 14x10 mm cabochons."),
    Case("zq_lapidary_bench", "lapidary-bench", "swallowed_error", "sapphire_facets",
         ("read_bench_calendar", 1), ("issue_work_order", 1),
         "The bench calendar read times out internally and the tool answers an empty list of holds, so the "
         "slot picked is already held and the scheduler refuses the order."),
    Case("zq_lapidary_rate", "lapidary-rate", "wrong_tool_args", "sapphire_facets", ("plan_cut", 1),
         ("validate_work_order", 1), "The model asks the rate tool for the cabochon schedule on a faceted "
                                     "commission, and the price falls under the faceting minimum."),
]

_CLIENT: Any = None


def policy(req: Any) -> Any:
    msgs = common.messages_of(req)
    system = common.system_of(msgs)
    user = common.text_of(msgs[-1].get("content"))
    if system.startswith("Classify the commission"):
        stone = next(s for s in ROUGH if s in user)
        cut = "cabochon" if "cabochon" in user else "faceted"
        count = {"One": 1, "Two": 2, "3": 3}[re.search(r"\b(One|Two|3)\b", user).group(1)]
        size = re.search(r"(\d+x\d+|\d+) mm", user).group(1)
        due = re.search(r"\d{4}-\d\d-\d\d", user).group(0)
        return json.dumps({"stone": stone, "cut": cut, "count": count, "size_mm": size, "due": due})
    if system.startswith("Choose the rough lot"):
        facts = json.loads(user)
        if active("lapidary-lot"):
            return json.dumps({"lot": "R-5521", "why": "largest A grade lot"})
        best = max(facts["lots"], key=lambda lot: lot["ct"])
        return json.dumps({"lot": best["lot"], "why": "largest lot on hand"})
    if system.startswith("Estimate the cutting yield"):
        facts = json.loads(user)
        y = 0.62 if facts["cut"] == "cabochon" else 0.38
        if active("lapidary-yield"):
            return json.dumps({"yield": f"{round(y * 100)}%", "note": "typical for this material"})
        return json.dumps({"yield": y, "note": "typical for this material"})
    if system.startswith("Plan the rate lookup"):
        facts = json.loads(user)
        cut = "cabochon" if active("lapidary-rate") else facts["cut"]
        return json.dumps({"tool": "get_cut_rate", "args": {"stone": facts["stone"], "cut": cut}})
    if system.startswith("Write the work order"):
        facts = json.loads(user)
        return json.dumps({"customer": facts["customer"], "lot": facts["lot"], "cut": facts["cut"],
                           "count": facts["count"], "finished_ct": facts["finished_ct"],
                           "rate_per_ct": facts["rate_per_ct"], "price": facts["price"],
                           "bench": facts["bench"], "slots": facts["slots"]})
    return "unknown request"


def _chat(system: str, user: str) -> str:
    reply = _CLIENT.chat.completions.create(model=common.MODEL, temperature=0, messages=[
        {"role": "system", "content": system}, {"role": "user", "content": user}])
    trajdebug.current_step().usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                                   completion_tokens=reply.usage.completion_tokens)
    return reply.choices[0].message.content


@trajdebug.step(kind="input")
def read_commission(text: str) -> dict:
    return {"text": text, "customer": text.rsplit("Customer:", 1)[1].strip().rstrip(".")}


@trajdebug.step(kind="llm")
def classify_request(commission: dict) -> str:
    return _chat("Classify the commission: stone, cut, count, size_mm, due. Answer JSON.", commission["text"])


@trajdebug.step(kind="parse")
def parse_request(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="retrieval")
def search_rough_inventory(stone: str) -> list[dict]:
    lots = list(ROUGH[stone])
    if active("lapidary-page"):
        lots = lots[:2]
    return lots


@trajdebug.step(kind="llm")
def choose_lot(req: dict, lots: list[dict]) -> str:
    return _chat("Choose the rough lot for the commission. Answer JSON with lot and why.",
                 json.dumps({"request": req, "lots": lots}))


_INSPECT = {"n": 0}


class InventoryError(LookupError):
    pass


@trajdebug.retry(attempts=2, on=(TimeoutError,), reason="policy: retry the inspection scanner once")
@trajdebug.step(kind="tool")
def inspect_lot(lot_id: str) -> dict:
    _INSPECT["n"] += 1
    if _INSPECT["n"] == 1:
        raise TimeoutError("inspection scanner did not answer within 5 s")
    for lots in ROUGH.values():
        for lot in lots:
            if lot["lot"] == lot_id:
                return {**lot, "inclusions": "minor", "hardness": 9 if lot_id.startswith("R-41") else 6}
    raise InventoryError(f"HTTP 404 from rough-inventory: {{\"error\": \"lot {lot_id} not found\"}}")


@trajdebug.step(kind="llm")
def estimate_yield(req: dict, lot: dict) -> str:
    return _chat("Estimate the cutting yield as a fraction of rough weight. Answer JSON.",
                 json.dumps({"cut": req["cut"], "stone": req["stone"], "lot": lot}))


@trajdebug.step(kind="parse")
def parse_yield(text: str) -> dict:
    data = json.loads(text)
    return {"yield": float(str(data["yield"]).rstrip("%")), "note": data.get("note", "")}


@trajdebug.step(kind="other")
def finished_weight(lot: dict, est: dict) -> dict:
    return {"rough_ct": lot["ct"], "finished_ct": round(lot["ct"] * est["yield"], 2)}


@trajdebug.step(kind="agent")
def yield_estimator(req: dict, lot: dict) -> dict:
    est = parse_yield(estimate_yield(req, lot))
    return finished_weight(lot, est)


@trajdebug.step(kind="state")
def remember_lot(lot: dict, weights: dict) -> None:
    trajdebug.current_run().state["lot"] = {"lot": lot["lot"], **weights}


@trajdebug.step(kind="llm")
def plan_cut(req: dict) -> str:
    return _chat("Plan the rate lookup: which tool and arguments. Answer JSON.",
                 json.dumps({"stone": req["stone"], "cut": req["cut"]}))


@trajdebug.step(kind="other")
def price_job(req: dict, rate: dict) -> dict:
    held = trajdebug.current_run().state["lot"]
    price = round(held["finished_ct"] * rate["per_ct"] + 35.0 * req["count"], 2)
    return {"price": price, "hours": 2 * req["count"] + (2 if req["cut"] == "faceted" else 0)}


@trajdebug.step(kind="tool")
def read_bench_calendar(bench: str, week_of: str) -> dict:
    holds = dict(HELD) if bench == "FACET-2" else {}
    try:
        if active("lapidary-bench"):
            raise TimeoutError("calendar service timed out")
    except TimeoutError:
        holds = {}
    return {"bench": bench, "week_of": week_of, "holds": holds}


@trajdebug.step(kind="other")
def pick_bench_slots(calendar: dict, hours: int) -> list[str]:
    slots = []
    for day in ("2026-04-13", "2026-04-14", "2026-04-15", "2026-04-16"):
        for hour in ("09:00", "13:00"):
            slot = f"{day}T{hour}"
            if slot not in calendar["holds"] and len(slots) * 4 < hours:
                slots.append(slot)
    return slots


@trajdebug.step(kind="llm")
def write_work_order(facts: dict) -> str:
    return _chat("Write the work order as JSON.", json.dumps(facts))


@trajdebug.step(kind="parse")
def parse_work_order(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="condition")
def validate_work_order(order: dict, lot: dict, req: dict) -> dict:
    if order["finished_ct"] >= lot["ct"]:
        raise ValueError(f"finished weight {order['finished_ct']} ct is not less than rough lot {lot['lot']} "
                         f"weight {lot['ct']} ct")
    need = MIN_CT[(req["cut"], req["size_mm"])] * req["count"]
    if lot["ct"] < need:
        raise ValueError(f"rough lot {lot['lot']} ({lot['ct']} ct) cannot yield {req['count']} x "
                         f"{req['size_mm']} mm {req['cut']} stones (needs at least {need} ct)")
    floor = RATES[req["cut"]]
    if order["rate_per_ct"] < floor:
        raise ValueError(f"cutting rate {order['rate_per_ct']:.2f}/ct is below the {req['cut']} minimum "
                         f"{floor:.2f}/ct")
    return {"ok": True}


class SchedulerError(RuntimeError):
    pass


@trajdebug.step(kind="tool")
def issue_work_order(order: dict) -> dict:
    if order["bench"] == "FACET-2":
        for slot in order["slots"]:
            if slot in HELD:
                raise SchedulerError(f"HTTP 409 from bench-scheduler: {{\"error\": \"slot held\", \"bench\": "
                                     f"\"FACET-2\", \"slot\": \"{slot}\", \"job\": \"{HELD[slot]}\"}}")
    return {"status": "issued", "work_order": f"WO-{order['lot'][2:]}-{len(order['slots'])}"}


def setup() -> None:
    global _CLIENT
    common.server().use(policy)
    _CLIENT = common.openai_client()


def record(key: str, path: Path) -> None:
    _INSPECT["n"] = 0 if key in ("sapphire_facets", "garnet_studs") else 1
    with trajdebug.run(AGENT, task=f"commission {key.replace('_', ' ')}", path=str(path)):
        commission = read_commission(COMMISSIONS[key])
        req = parse_request(classify_request(commission))
        lots = search_rough_inventory(req["stone"])
        choice = json.loads(choose_lot(req, lots))
        lot = inspect_lot(choice["lot"])
        weights = yield_estimator(req, lot)
        remember_lot(lot, weights)
        action = json.loads(plan_cut(req))
        with trajdebug.step(action["tool"], kind="tool", input=action["args"]) as call:
            call.output = {"cut": action["args"]["cut"], "per_ct": RATES[action["args"]["cut"]]}
        rate = call.output
        priced = price_job(req, rate)
        bench = "FACET-2" if req["cut"] == "faceted" else "CAB-1"
        calendar = read_bench_calendar(bench, "2026-04-13")
        slots = pick_bench_slots(calendar, priced["hours"])
        facts = {"customer": commission["customer"], "lot": lot["lot"], "cut": req["cut"], "count": req["count"],
                 "finished_ct": weights["finished_ct"], "rate_per_ct": rate["per_ct"], "price": priced["price"],
                 "bench": bench, "slots": slots}
        order = parse_work_order(write_work_order(facts))
        validate_work_order(order, lot, req)
        issue_work_order(order)
