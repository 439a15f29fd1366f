"""Blacksmith forge commissions (OpenAI Agents SDK): foreman agent with tools and a metallurgist agent-as-tool,
hand-off to the quote clerk who issues the quote."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agents import Agent, function_tool
from trajdebug.testing import Reply, tool_call

from .common import Case, agents_model, chat_state, run_agents
from .kit import active

AGENT, ROUTE, DOMAIN = "forge-commission-quoter", "openai_agents", "blacksmith forge"
SHAPE = "foreman: commission, stock, heat schedule, metallurgist agent-as-tool, anvil booking; hand-off; clerk: costs, quote"

ORDERS = {
    "CM-1044": {"customer": "C-71 Harrow Farm", "item": "gate hinge straps", "steel": "5160", "thickness_mm": 12,
                "kg": 18.0, "pieces": 4, "hrc": "HRC 44-48"},
    "CM-1051": {"customer": "C-12 Old Mill Inn", "item": "fire dogs", "steel": "A36", "thickness_mm": 20,
                "kg": 26.0, "pieces": 2, "hrc": "none"},
    "CM-1060": {"customer": "C-33 Kestrel Knives", "item": "knife blanks", "steel": "1095", "thickness_mm": 4,
                "kg": 6.5, "pieces": 12, "hrc": "HRC 58-60"},
    "CM-1062": {"customer": "C-40 Vale Church", "item": "door ring pulls", "steel": "A36", "thickness_mm": 10,
                "kg": 4.0, "pieces": 6, "hrc": "none"},
    "CM-1070": {"customer": "C-71 Harrow Farm", "item": "plough share", "steel": "1075", "thickness_mm": 10,
                "kg": 9.0, "pieces": 1, "hrc": "HRC 50-54"},
    "CM-1075": {"customer": "C-55 Brook Stables", "item": "tether rings", "steel": "A36", "thickness_mm": 8,
                "kg": 3.0, "pieces": 10, "hrc": "none"},
}
PRIOR = {"C-71 Harrow Farm": "CM-0998", "C-12 Old Mill Inn": "CM-0950", "C-33 Kestrel Knives": "CM-1001",
         "C-40 Vale Church": "CM-0977", "C-55 Brook Stables": "CM-0981"}
INPUTS = {k: f"Quote commission {k} for {v['customer']}: {v['pieces']} x {v['item']}" for k, v in ORDERS.items()}
REFS = ["CM-1060", "CM-1062", "CM-1070", "CM-1075"]

CASES = [
    Case("zk_forge_1", "hallucinated_value", ("generation clerk-model", 3), ("issue_quote", 1), "CM-1044",
         "The quote clerk's model writes a hardness figure no tool gave it into the quote, and the quote API refuses it."),
    Case("zk_forge_2", "wrong_tool_args", ("generation foreman-model", 3), ("issue_quote", 1), "CM-1044",
         "The foreman's model asks heat_schedule for 1095 steel on a 5160 commission, so the quote's heat treatment mismatches."),
    Case("zk_forge_3", "tool_ignores_argument", ("steel_stock", 1), ("issue_quote", 1), "CM-1051",
         "steel_stock ignores the grade it is asked for and reports the default bar stock, so material is priced for another grade."),
    Case("zk_forge_4", "subagent_wrong_entity", ("generation metallurgist-model", 1), ("issue_quote", 1), "CM-1044",
         "The metallurgist sub-agent looks up the customer's previous order, so the hardness spec belongs to another commission."),
    Case("zk_forge_5", "swallowed_error", ("book_anvil_time", 1), ("issue_quote", 1), "CM-1051",
         "book_anvil_time catches the calendar's conflict and answers as if booked, leaving the quote without an anvil slot."),
]

HEAT = {"5160": (830, "oil", 1.5), "1095": (800, "brine", 1.0), "A36": (0, "air", 0.5), "1075": (810, "oil", 1.2)}
PRICE = {"5160": 4.2, "1095": 5.1, "A36": 1.6, "1075": 4.0}


@function_tool
def lookup_commission(order_id: str) -> str:
    """Read a commission from the order book."""
    o = ORDERS[order_id]
    return json.dumps({"order_id": order_id, **{k: o[k] for k in ("customer", "item", "steel", "thickness_mm", "kg", "pieces")}})


@function_tool
def steel_stock(grade: str) -> str:
    """Bar stock on the rack for a steel grade."""
    g = "5160" if active("zk_forge_3") else grade
    return json.dumps({"grade": g, "bars": [{"size": "12x50", "kg": 40}, {"size": "20x40", "kg": 55}], "eur_per_kg": PRICE[g]})


@function_tool
def heat_schedule(steel: str, thickness_mm: int) -> str:
    """Normalise / harden / temper schedule for a steel and section."""
    t, quench, per = HEAT[steel]
    return json.dumps({"steel": steel, "harden_c": t, "quench": quench, "forge_hours": round(per * (1 + thickness_mm / 10), 1)})


@function_tool
def hardness_spec(order_id: str) -> str:
    """Hardness specification filed for an order."""
    o = ORDERS.get(order_id) or {"hrc": "HRC 40-44", "item": "hay hooks"}
    return json.dumps({"order_id": order_id, "spec": o["hrc"], "item": o["item"]})


@function_tool
def book_anvil_time(order_id: str, hours: float) -> str:
    """Book anvil and forge time in the shop calendar."""
    try:
        if active("zk_forge_5"):
            raise RuntimeError("calendar conflict: anvil 2 held by CM-1049 on 2026-07-08")
        return json.dumps({"order_id": order_id, "booking": f"AV-{order_id[3:]}-0708", "hours": hours})
    except RuntimeError:
        return json.dumps({"order_id": order_id, "booking": "", "hours": hours})


@function_tool
def material_cost(grade: str, kg: float) -> str:
    """Material cost from the stock price."""
    return json.dumps({"grade": grade, "kg": kg, "eur": round(kg * 1.15, 2)})


@function_tool
def labour_cost(hours: float) -> str:
    """Labour at the shop rate."""
    return json.dumps({"hours": hours, "eur": round(hours * 48.0, 2)})


@function_tool(failure_error_function=None)
def issue_quote(order_id: str, material_grade: str, material_eur: float, heat_steel: str, hardness: str,
                anvil_booking: str, labour_eur: float) -> str:
    """Issue the customer quote (validated by the order book)."""
    o = ORDERS[order_id]
    if material_grade != o["steel"]:
        raise ValueError(f"422 quote rejected: material grade {material_grade} does not match commission steel {o['steel']}")
    if heat_steel != o["steel"]:
        raise ValueError(f"422 quote rejected: heat treatment written for {heat_steel}, commission {order_id} is {o['steel']}")
    if hardness != o["hrc"]:
        raise ValueError(f"422 quote rejected: hardness '{hardness}' differs from the filed spec for {order_id}")
    if not anvil_booking:
        raise ValueError("422 quote rejected: field anvil_booking is empty; a quote needs a booked forge slot")
    return json.dumps({"quote": "Q-" + order_id[3:], "total_eur": round(material_eur + labour_eur, 2)})


def _last(results, name):
    return [v for n, v in results if n == name][-1]


def policy(req):
    system, results, user = chat_state(req.body)
    done = [n for n, _ in results]
    if system.startswith("You are the metallurgist"):
        if "hardness_spec" not in done:
            oid = re.search(r"CM-\d+", user).group(0)
            if active("zk_forge_4"):
                oid = PRIOR[ORDERS[oid]["customer"]]
            return Reply(tool_calls=(tool_call("hardness_spec", {"order_id": oid}),))
        return json.dumps(_last(results, "hardness_spec"))
    oid = re.search(r"CM-\d+", user).group(0)
    if system.startswith("You are the forge foreman"):
        if "lookup_commission" not in done:
            return Reply(tool_calls=(tool_call("lookup_commission", {"order_id": oid}),))
        c = _last(results, "lookup_commission")
        if "steel_stock" not in done:
            return Reply(tool_calls=(tool_call("steel_stock", {"grade": c["steel"]}),))
        if "heat_schedule" not in done:
            steel = "1095" if active("zk_forge_2") else c["steel"]
            return Reply(tool_calls=(tool_call("heat_schedule", {"steel": steel, "thickness_mm": c["thickness_mm"]}),))
        if "metallurgist" not in done:
            return Reply(tool_calls=(tool_call("metallurgist", {"input": f"Hardness spec for {oid} ({c['item']})"}),))
        if "book_anvil_time" not in done:
            h = _last(results, "heat_schedule")["forge_hours"] * c["pieces"]
            return Reply(tool_calls=(tool_call("book_anvil_time", {"order_id": oid, "hours": h}),))
        return Reply(tool_calls=(tool_call("transfer_to_quote_clerk", {}),))
    if system.startswith("You are the quote clerk"):
        stock = _last(results, "steel_stock")
        c = _last(results, "lookup_commission")
        if "material_cost" not in done:
            return Reply(tool_calls=(tool_call("material_cost", {"grade": stock["grade"], "kg": c["kg"] * stock["eur_per_kg"]}),))
        if "labour_cost" not in done:
            return Reply(tool_calls=(tool_call("labour_cost", {"hours": _last(results, "book_anvil_time")["hours"]}),))
        if "issue_quote" not in done:
            spec = _last(results, "metallurgist")
            spec = spec["spec"] if isinstance(spec, dict) else str(spec)
            hardness = "HRC 60-62" if active("zk_forge_1") else spec
            return Reply(tool_calls=(tool_call("issue_quote", {
                "order_id": oid, "material_grade": stock["grade"], "material_eur": _last(results, "material_cost")["eur"],
                "heat_steel": _last(results, "heat_schedule")["steel"], "hardness": hardness,
                "anvil_booking": _last(results, "book_anvil_time")["booking"],
                "labour_eur": _last(results, "labour_cost")["eur"]}),))
        return "Quote " + _last(results, "issue_quote")["quote"] + " sent to the customer."
    return "ok"


def record(server, inp: str, out: Path) -> None:
    metallurgist = Agent(name="metallurgist", model=agents_model(server, "metallurgist-model"), tools=[hardness_spec],
                         instructions="You are the metallurgist. Find the hardness spec filed for the order and answer with it as JSON.")
    clerk = Agent(name="quote_clerk", model=agents_model(server, "clerk-model"), tools=[material_cost, labour_cost, issue_quote],
                  instructions="You are the quote clerk. Price material and labour from the foreman's notes and issue the quote.")
    foreman = Agent(name="forge_foreman", model=agents_model(server, "foreman-model"), handoffs=[clerk],
                    tools=[lookup_commission, steel_stock, heat_schedule,
                           metallurgist.as_tool(tool_name="metallurgist", tool_description="Ask the metallurgist for a hardness spec."),
                           book_anvil_time],
                    instructions="You are the forge foreman. Read the commission, check stock and heat treatment, "
                                 "get the hardness spec, book anvil time, then hand off to the quote clerk.")
    run_agents(foreman, INPUTS[inp], out, AGENT)
