"""Hand-fan maker's orders (openai_agents route): one agent, parallel tool calls over the order's lines,
a delivery tool that fails once and succeeds when the model asks again, and a typed final answer whose
schema check refuses an inconsistent workshop plan."""
from __future__ import annotations

import asyncio
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from pydantic import BaseModel, model_validator

from trajdebug.integrations.openai_agents import TrajdebugProcessor

NAME = "fan-orders"
ROUTE = "openai_agents"
DOMAIN = "a hand-fan maker's orders"
SHAPE = "single agent: order lookup with text parsing, parallel stick-stock calls per line, parallel leaf quotes, a delivery tool retried after a first failure, typed output with a schema check"
SWITCH = None

ORDERS = {
    "HF-201": {"text": "Order of 3 fans; budget 900 GBP; event 2027-05-14 | 2 x silk leaf, horn sticks, 27 cm | 1 x lace leaf, mother of pearl sticks, 23 cm", "express": False},
    "HF-202": {"text": "Order of 4 fans; budget 1400 GBP; event 2027-03-02 | 1 x silk leaf, hand-painted, bone sticks, 30 cm | 3 x paper leaf, sandalwood sticks, 21 cm", "express": True},
    "HF-203": {"text": "Order of 2 fans; budget 700 GBP; event 2027-06-20 | 2 x feather leaf, tortoiseshell-effect sticks, 25 cm", "express": False},
    "HF-204": {"text": "Order of 5 fans; budget 1600 GBP; event 2027-04-01 | 1 x lace leaf, ebony sticks, 27 cm | 2 x silk leaf, horn sticks, 24 cm | 2 x paper leaf, bamboo sticks, 21 cm", "express": True},
    "HF-205": {"text": "Order of 2 fans; budget 800 GBP; event 2027-04-10 | 1 x silk leaf, bone sticks, 27 cm | 1 x lace leaf, sandalwood sticks, 23 cm", "express": False},
}
INPUTS = [f"Prepare the workshop plan for order {o}." for o in ORDERS]
STICK_PRICE = {"horn": 60, "mother of pearl": 140, "bone": 45, "sandalwood": 30, "tortoiseshell-effect": 50, "ebony": 75, "bamboo": 12}
LEAF_PRICE_PER_CM = {"silk": 4.0, "lace": 6.5, "paper": 1.2, "feather": 5.0}
_slot_calls = {"n": 0}


def _parse_lines(text: str, quick: bool = False) -> list[dict]:
    lines = []
    for chunk in text.split(" | ")[1:]:
        if quick:
            parts = [p.strip() for p in chunk.split(",")]
            if len(parts) != 3:
                continue
        else:
            head, rest = chunk.split(" leaf", 1)
            parts = [head + " leaf"] + [p.strip() for p in rest.split(",") if p.strip()]
            parts = [parts[0], parts[-2], parts[-1]]
        qty, leaf = parts[0].split(" x ")
        lines.append({"line": len(lines) + 1, "qty": int(qty), "leaf": leaf.replace(" leaf", "").split(",")[0].strip(),
                      "sticks": parts[1].replace(" sticks", ""), "span_cm": float(parts[2].replace(" cm", ""))})
    return lines


@function_tool
def order_lines(order_id: str) -> str:
    """The order's header (fan count, budget, event date) and its lines, read from the order text."""
    o = ORDERS[order_id]
    head = o["text"].split(" | ")[0]
    return json.dumps({"order_id": order_id, "fans": int(head.split("Order of ")[1].split(" ")[0]),
                       "budget": int(head.split("budget ")[1].split(" ")[0]), "event": head.split("event ")[1],
                       "express": o["express"], "lines": _parse_lines(o["text"], quick=SWITCH == "commas")})


@function_tool
def stick_stock(material: str, sets: int) -> str:
    """Stick sets (18 sticks and 2 guards) in stock for a material, with the price per set."""
    return json.dumps({"material": material, "sets": sets, "in_stock": True, "price_per_set": STICK_PRICE[material]})


@function_tool
def leaf_quote(leaf: str, span_cm: float, qty: int) -> str:
    """Price of the leaves for a line, in GBP."""
    price = round(LEAF_PRICE_PER_CM[leaf] * span_cm * qty, 2)
    if SWITCH == "pence" and leaf == "lace":
        price = round(price * 100)
    return json.dumps({"leaf": leaf, "qty": qty, "price": price})


@function_tool
def delivery_slot(order_id: str, fans: int, express: bool) -> str:
    """Earliest week the workshop can finish the order (express jumps the queue)."""
    _slot_calls["n"] += 1
    if _slot_calls["n"] == 1:
        raise TimeoutError("workshop calendar is being updated, ask again")
    weeks = 2 + fans if (express and SWITCH != "express") else 6 + fans
    return json.dumps({"order_id": order_id, "weeks": weeks, "ready": f"2027-01-{4 + 7 * (weeks % 4):02d}",
                       "ready_week": weeks})


class Line(BaseModel):
    line: int
    qty: int
    sticks: str
    leaf: str
    cost: float


class WorkshopPlan(BaseModel):
    order_id: str
    fans_ordered: int
    budget: int
    event: str
    lines: list[Line]
    total: float
    ready_by: str

    @model_validator(mode="after")
    def consistent(self):
        made = sum(l.qty for l in self.lines)
        if made != self.fans_ordered:
            raise ValueError(f"plan makes {made} fans, the order is for {self.fans_ordered}")
        book = _parse_lines(ORDERS[self.order_id]["text"])
        for l in self.lines:
            want = book[l.line - 1]["sticks"]
            if l.sticks != want:
                raise ValueError(f"line {l.line} planned with {l.sticks} sticks, the order asks for {want}")
        if abs(sum(l.cost for l in self.lines) - self.total) > 0.01:
            raise ValueError(f"total {self.total} is not the sum of the lines")
        if self.total > self.budget:
            raise ValueError(f"total {self.total:.2f} GBP is over the client's budget of {self.budget} GBP")
        if self.ready_by > self.event:
            raise ValueError(f"ready {self.ready_by}, after the client's event on {self.event}")
        return self


def _results(msgs):
    names = {}
    for m in msgs:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = (c["function"]["name"], json.loads(c["function"]["arguments"]))
    out = {}
    for m in msgs:
        if m["role"] == "tool" and m["tool_call_id"] in names:
            name, args = names[m["tool_call_id"]]
            try:
                val = json.loads(m["content"])
            except ValueError:
                val = {"text": m["content"]}
            out.setdefault(name, []).append((args, val))
    return out


def brain(request):
    from trajdebug.testing import Reply, tool_call
    msgs = request.body["messages"]
    res = _results(msgs)
    order_id = msgs[-1]["content"].split("order ")[1].rstrip(".") if not res else None
    if not res:
        return Reply(tool_calls=(tool_call("order_lines", {"order_id": order_id}),))
    order = res["order_lines"][0][1]
    lines = order["lines"]
    if "stick_stock" not in res:
        calls = []
        for l in lines:
            material = l["sticks"]
            if SWITCH == "bone-for-horn" and material == "horn" and order["order_id"] == "HF-204":
                material = "bone"
            calls.append(tool_call("stick_stock", {"material": material, "sets": l["qty"]}))
        if SWITCH == "plan-skip" and order["order_id"] == "HF-202":
            calls = calls[:1]
        return Reply(text=f"Plan: stock for lines 1-{len(calls)}, then leaves, then a delivery slot.", tool_calls=tuple(calls))
    if "leaf_quote" not in res:
        planned = len(res["stick_stock"])
        return Reply(tool_calls=tuple(tool_call("leaf_quote", {"leaf": l["leaf"], "span_cm": l["span_cm"], "qty": l["qty"]})
                                      for l in lines[:planned]))
    slots = [v for _, v in res.get("delivery_slot", []) if "weeks" in v]
    if not slots:
        return Reply(tool_calls=(tool_call("delivery_slot", {"order_id": order["order_id"], "fans": order["fans"], "express": order["express"]}),))
    slot = slots[0]
    out_lines = []
    for (sargs, stock), (_, leaf), l in zip(res["stick_stock"], res["leaf_quote"], lines):
        out_lines.append({"line": l["line"], "qty": l["qty"], "sticks": stock["material"], "leaf": leaf["leaf"],
                          "cost": round(stock["price_per_set"] * l["qty"] + leaf["price"], 2)})
    event_month = "2027-" + order["event"][5:7]
    ready = f"2027-{(slot['weeks'] // 4) + 1:02d}-{1 + 7 * (slot['weeks'] % 4):02d}"
    return json.dumps({"order_id": order["order_id"], "fans_ordered": order["fans"], "budget": order["budget"],
                       "event": order["event"], "lines": out_lines, "total": round(sum(x["cost"] for x in out_lines), 2),
                       "ready_by": ready})


async def _run(inp, server):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client)
    set_default_openai_api("chat_completions")
    agent = Agent(name="order_desk", model=server.model, output_type=WorkshopPlan,
                  tools=[order_lines, stick_stock, leaf_quote, delivery_slot],
                  instructions="You turn fan orders into workshop plans. Check stock and leaf prices for every line, book a delivery slot, answer with the plan.")
    try:
        await Runner.run(agent, inp, run_config=RunConfig(workflow_name=NAME), max_turns=12)
    finally:
        await client.close()


def record(inp, path, server):
    _slot_calls["n"] = 0
    order_id = inp.split("order ")[1].rstrip(".")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"workshop plan for {order_id}")])
    try:
        asyncio.run(_run(inp, server))
    finally:
        set_trace_processors([])


CASES = [
    {"id": "fan-description-commas", "input": 1, "switch": "commas", "kind": "lossy_parsing",
     "root": ("order_lines", 1), "failure": ("turn 6", 1),
     "description": "Reading the order text splits every line on commas and drops the hand-painted silk line, which has an extra comma in its description."},
    {"id": "fan-bone-sticks", "input": 3, "switch": "bone-for-horn", "kind": "wrong_tool_args",
     "root": ("generation fake-model", 2), "root_holds": "bone", "failure": ("turn 6", 1),
     "description": "The model checks stock for bone sticks on the line that orders horn sticks."},
    {"id": "fan-lace-pence", "input": 0, "switch": "pence", "kind": "unit_error",
     "root": ("leaf_quote", 2), "root_holds": "lace", "failure": ("turn 6", 1),
     "description": "The leaf quote for the lace line comes back in pence (14950) while every other price is in pounds."},
    {"id": "fan-express-ignored", "input": 1, "switch": "express", "kind": "tool_ignores_argument",
     "root": ("delivery_slot", 2), "failure": ("turn 6", 1),
     "description": "The delivery tool ignores the express flag and books the standard queue, past the client's event date."},
    {"id": "fan-plan-one-line", "input": 1, "switch": "plan-skip", "kind": "plan_error",
     "root": ("generation fake-model", 2), "failure": ("turn 6", 1),
     "description": "The model's plan covers only the first of the order's two lines, so the paper fans are never stocked, quoted or made."},
]
