"""refund-desk: an online shop's returns assistant.  It reads the customer's message, looks the order up
(the order service is slow at times, so lookups are retried), remembers the order for the rest of the
conversation, asks which item when the first message does not say, applies the return policy and
issues the refund through the payments team's refund service.  Recorded with the trajdebug SDK; the
model is a plain Python function."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import Any

from suite_common import FAULT, Agent, Case, Loc

import trajdebug


NAME = "refund-desk"

ORDERS = {
    "A-20931": {"customer": "C-5520", "region": "US", "paid": 249.00, "refunded": 0.0,
                "lines": [{"line": 1, "sku": "SW-410", "name": "Pulse smartwatch", "category": "electronics", "price": 249.00}]},
    "A-31006": {"customer": "C-6610", "region": "EU", "paid": 189.00, "refunded": 40.00,
                "lines": [{"line": 1, "sku": "JK-77", "name": "Storm rain jacket", "category": "apparel", "price": 189.00}]},
    "A-44210": {"customer": "C-3307", "region": "EU", "paid": 188.00, "refunded": 0.0,
                "lines": [{"line": 1, "sku": "CC-15", "name": "Aurora charging case", "category": "accessories", "price": 39.00},
                          {"line": 2, "sku": "HP-220", "name": "Aurora ANC headphones", "category": "electronics", "price": 149.00,
                           "final_sale": True}]},
    "A-10457": {"customer": "C-7781", "region": "US", "paid": 64.00, "refunded": 0.0,
                "lines": [{"line": 1, "sku": "LMP-9", "name": "Brass desk lamp", "category": "home", "price": 64.00}]},
    "A-10475": {"customer": "C-9012", "region": "US", "paid": 89.00, "refunded": 0.0,
                "lines": [{"line": 1, "sku": "LMP-31", "name": "Arc floor lamp", "category": "home", "price": 89.00}]},
    "A-50112": {"customer": "C-1204", "region": "US", "paid": 139.00, "refunded": 0.0,
                "lines": [{"line": 1, "sku": "BT-88", "name": "Ridge hiking boots", "category": "footwear", "price": 139.00}]},
    "A-50127": {"customer": "C-2291", "region": "EU", "paid": 79.00, "refunded": 0.0,
                "lines": [{"line": 1, "sku": "SPK-3", "name": "Bluetooth speaker", "category": "electronics", "price": 79.00}]},
    "A-50188": {"customer": "C-4470", "region": "EU", "paid": 105.00, "refunded": 0.0,
                "lines": [{"line": 1, "sku": "SC-12", "name": "Wool scarf", "category": "apparel", "price": 45.00},
                          {"line": 2, "sku": "GL-12", "name": "Wool gloves", "category": "apparel", "price": 60.00}]},
    "A-50203": {"customer": "C-3018", "region": "US", "paid": 35.00, "refunded": 0.0,
                "lines": [{"line": 1, "sku": "YM-5", "name": "Cork yoga mat", "category": "sports", "price": 35.00}]},
    "A-50219": {"customer": "C-5102", "region": "US", "paid": 68.00, "refunded": 0.0,
                "lines": [{"line": 1, "sku": "PC-8", "name": "Slim phone case", "category": "accessories", "price": 19.00},
                          {"line": 2, "sku": "CH-2", "name": "Fast charger", "category": "electronics", "price": 49.00}]},
}
# the edge cache in front of the order service (refreshed nightly)
ORDER_CACHE = {"A-31006": {**ORDERS["A-31006"], "refunded": 0.0}}
SLOW_ORDERS = {"A-31006", "A-50203"}  # the order service times out on the first call for these

POLICIES = {
    "electronics": {"policy": "RP-ELEC-2", "window_days": 30, "opened_fee": 0.15},
    "apparel": {"policy": "RP-GEN-1", "window_days": 30, "opened_fee": 0.0},
    "accessories": {"policy": "RP-GEN-1", "window_days": 30, "opened_fee": 0.0},
    "footwear": {"policy": "RP-FTW-1", "window_days": 60, "opened_fee": 0.0},
    "home": {"policy": "RP-GEN-1", "window_days": 30, "opened_fee": 0.0},
    "sports": {"policy": "RP-GEN-1", "window_days": 30, "opened_fee": 0.0},
}


class RefundRefused(RuntimeError):
    pass


# -- the model ---------------------------------------------------------------------------------

_ITEM = re.compile(r"(?:return|refund|It's|it's|The|the) (?:the )?([a-z][\w -]*?)(?: please)?(?: from| on|,|;|\.)")


def fake_model(messages: list[dict[str, str]]) -> str:
    text = messages[-1]["content"]
    order = re.search(r"A-\d{5}", text)
    order_id = order.group(0) if order else None
    if FAULT.on("misread_order") and order_id == "A-10457":
        order_id = "A-10475"
    item = _ITEM.search(text)
    hint = item.group(1).strip() if item and item.group(1) not in ("order", "item") else None
    low = text.lower()
    condition = ("damaged" if any(w in low for w in ("broken", "damaged", "cracked", "faulty"))
                 else "opened" if "opened" in low else "unopened")
    return json.dumps({"intent": "return", "order_id": order_id, "item": hint, "condition": condition})


# -- steps ---------------------------------------------------------------------------------------


@trajdebug.step(kind="llm")
def classify_request(messages: list[dict[str, str]]) -> str:
    return fake_model(messages)


@trajdebug.step(kind="parse")
def parse_intent(raw: str) -> dict[str, Any]:
    data = json.loads(raw)
    return {k: data.get(k) for k in ("intent", "order_id", "item", "condition")}


_calls: dict[str, int] = {}


@trajdebug.retry(attempts=3, on=(TimeoutError,), reason="order service timeout")
@trajdebug.step(kind="tool")
def lookup_order(order_id: str) -> dict[str, Any]:
    _calls[order_id] = _calls.get(order_id, 0) + 1
    if order_id in SLOW_ORDERS and _calls[order_id] == 1:
        raise TimeoutError(f"order service did not answer for {order_id} within 2.0 s")
    if FAULT.on("retry_from_cache") and _calls[order_id] > 1 and order_id in ORDER_CACHE:
        record = ORDER_CACHE[order_id]  # retries are served from the edge cache to spare the service
    else:
        record = ORDERS[order_id]
    return {"order_id": order_id, **json.loads(json.dumps(record))}


@trajdebug.step(kind="state")
def remember_order(order: dict[str, Any]) -> dict[str, Any]:
    names = [ln["name"].lower() for ln in order["lines"]]
    skus = [ln["sku"] for ln in order["lines"]]
    if FAULT.on("sorted_names"):
        names = sorted(names)  # "keep the item menu alphabetical" - skus were not sorted along
    memory = {"order_id": order["order_id"], "customer": order["customer"], "region": order["region"],
              "items": dict(zip(names, skus))}
    trajdebug.current_run().state["order"] = memory
    return memory


@trajdebug.step(kind="other")
def resolve_item(hint: str, order: dict[str, Any]) -> dict[str, Any]:
    memory = trajdebug.current_run().state["order"]
    words = set(hint.lower().split())
    name = max(memory["items"], key=lambda n: len(words & set(n.split())))
    if not words & set(name.split()):
        raise LookupError(f"no item like {hint!r} on order {memory['order_id']}")
    sku = memory["items"][name]
    return next(dict(ln) for ln in order["lines"] if ln["sku"] == sku)


@trajdebug.step(kind="tool")
def get_return_policy(category: str, region: str) -> dict[str, Any]:
    if FAULT.on("policy_default"):
        return {"category": "general", "region": region, **POLICIES["apparel"]}  # category filter not applied
    return {"category": category, "region": region, **POLICIES[category]}


@trajdebug.step(kind="other")
def compute_refund(line: dict[str, Any], policy: dict[str, Any], order: dict[str, Any], condition: str) -> dict[str, Any]:
    fee = policy["opened_fee"] if condition == "opened" else 0.0
    amount = round(line["price"] * (1 - fee), 2)
    amount = min(amount, round(order["paid"] - order["refunded"], 2))
    return {"order_id": order["order_id"], "customer": order["customer"], "sku": line["sku"],
            "amount": amount, "restocking_fee": fee, "policy": policy["policy"]}


@trajdebug.step(kind="tool")
def issue_refund(customer_id: str, refund: dict[str, Any], condition: str) -> dict[str, str]:
    # the refund service checks the request against the order of record
    order = ORDERS.get(refund["order_id"])
    if order is None or order["customer"] != customer_id:
        raise RefundRefused("refund service: the order is not on this customer's account")
    line = next(ln for ln in order["lines"] if ln["sku"] == refund["sku"])
    if line.get("final_sale"):
        raise RefundRefused("refund service: final-sale items cannot be refunded")
    fee = POLICIES[line["category"]]["opened_fee"] if condition == "opened" else 0.0
    if refund["amount"] > round(line["price"] * (1 - fee), 2) + 0.005:
        raise RefundRefused("refund service: amount is above what the return policy allows")
    if refund["amount"] > round(order["paid"] - order["refunded"], 2) + 0.005:
        raise RefundRefused("refund service: amount exceeds the remaining captured balance")
    return {"refund_id": f"RF-{refund['order_id'][2:]}-{refund['sku']}", "amount": f"{refund['amount']:.2f}"}


@trajdebug.step(kind="output")
def reply_to_customer(refund: dict[str, str], line: dict[str, Any]) -> str:
    return f"Your refund of {refund['amount']} for the {line['name']} is on its way (reference {refund['refund_id']})."


SYSTEM = ("You are the returns assistant. From the customer's message extract the order id, the item they "
          "want to return and its condition (unopened, opened, damaged). JSON only.")


def handle(customer: str, turns: list[str]) -> str:
    _calls.clear()
    intent = parse_intent(classify_request([{"role": "system", "content": SYSTEM},
                                            {"role": "user", "content": turns[0]}]))
    order = lookup_order(intent["order_id"])
    remember_order(order)
    if intent["item"] is None:
        follow = parse_intent(classify_request([
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": turns[0]},
            {"role": "assistant", "content": "Sure - which item would you like to return, and why?"},
            {"role": "user", "content": turns[1]},
        ]))
        intent = {**intent, "item": follow["item"], "condition": follow["condition"]}
    line = resolve_item(intent["item"], order)
    policy = get_return_policy(line["category"], order["region"])
    refund = compute_refund(line, policy, order, intent["condition"])
    done = issue_refund(customer, refund, intent["condition"])
    return reply_to_customer(done, line)


@contextmanager
def session():
    def record(inp: dict[str, Any], path: str) -> BaseException | None:
        try:
            with trajdebug.run(NAME, path=path, task=inp["turns"][0], metadata={"customer": inp["customer"]}):
                handle(inp["customer"], inp["turns"])
        except RefundRefused as exc:
            return exc
        return None

    yield record


AGENT = Agent(
    name=NAME,
    route="sdk",
    domain="e-commerce returns and refunds",
    summary="classify the customer's message, look the order up (retried on timeouts), remember it across "
    "turns, ask for the item when needed, resolve it, fetch the return policy, compute and issue the refund",
    features=["retries", "memory across turns"],
    passing=[
        {"customer": "C-1204", "turns": ["Hi, I want to return the hiking boots from order A-50112, never worn."]},
        {"customer": "C-2291", "turns": ["I'd like to return the bluetooth speaker from order A-50127; I opened it, "
                                         "sound is fine but I don't need it."]},
        {"customer": "C-4470", "turns": ["Order A-50188 came yesterday, I'd like to send an item back.",
                                         "The wool scarf please, it's the wrong colour."]},
        {"customer": "C-3018", "turns": ["Please refund the yoga mat from order A-50203, it arrived damaged."]},
        {"customer": "C-5102", "turns": ["Hello, this is about order A-50219.",
                                         "I need to return the phone case, it doesn't fit."]},
    ],
    session=session,
    cases=[
        Case(
            "d-refund-policy-category",
            {"customer": "C-5520", "turns": ["Hello, I'd like to return the smartwatch from order A-20931. I opened "
                                             "it but it doesn't fit my wrist."]},
            "policy_default",
            "tool_ignores_argument",
            "The return-policy lookup ignores the category and answers with the general policy (no restocking "
            "fee) for an opened smartwatch; the full price is refunded and the refund service refuses it.",
            [Loc("get_return_policy", 1, "RP-GEN-1"), Loc("compute_refund"), Loc("issue_refund")],
        ),
        Case(
            "d-refund-cached-retry",
            {"customer": "C-6610", "turns": ["Hi, order A-31006: I want to return the rain jacket, unworn, tags on."]},
            "retry_from_cache",
            "stale_data",
            "The order lookup times out once; the retry is served from the nightly edge cache, which predates "
            "yesterday's EUR 40 goodwill refund, so the refund is computed on the full amount and the refund "
            "service refuses it.",
            [Loc("lookup_order", 2, "\"refunded\": 0.0"), Loc("compute_refund"), Loc("issue_refund")],
        ),
        Case(
            "d-refund-item-memory",
            {"customer": "C-3307", "turns": ["Hi, my order A-44210 arrived today and I need to send an item back.",
                                             "It's the charging case, it arrived cracked."]},
            "sorted_names",
            "bad_memory_write",
            "Remembering the order sorts the item names but not their SKUs, so the conversation memory maps "
            "'aurora charging case' to the headphones' SKU; the second turn resolves the case to the final-sale "
            "headphones and the refund is refused.",
            [Loc("remember_order", 1, "HP-220"), Loc("resolve_item"), Loc("compute_refund"), Loc("issue_refund")],
        ),
        Case(
            "d-refund-order-misread",
            {"customer": "C-7781", "turns": ["Please refund the desk lamp on order A-10457, it arrived broken."]},
            "misread_order",
            "wrong_tool_args",
            "The model reads the order number as A-10475 (another customer's lamp order); the lookup, the item "
            "match and the refund all run on that order and the refund service refuses it.",
            [Loc("classify_request", 1, "A-10475"), Loc("parse_intent"), Loc("lookup_order"), Loc("compute_refund"),
             Loc("issue_refund")],
        ),
    ],
)
