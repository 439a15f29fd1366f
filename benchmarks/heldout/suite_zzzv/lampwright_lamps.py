"""Lampwright's custom lamps: langgraph route. A tool-calling designer (ChatOpenAI with bound
tools) that asks three tools in parallel through a ToolNode, then writes the lamp spec as text;
a parser node reads the spec; a routing function picks the shade workshop; the workshop node
books the bench; the last node checks the spec against a pydantic schema."""
from __future__ import annotations

import json
import re
from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel, model_validator

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

NAME = "custom-lamps"
ROUTE = "langgraph"
DOMAIN = "lampwright's custom lamps"
SHAPE = "designer (llm + 3 parallel tools via ToolNode) -> spec text -> parse node -> workshop router -> workshop booking tool -> pydantic spec check; 15-16 steps"
SWITCHES = {"glass_to_fabric_shop": False, "budget_at_mains": False, "count_dropped": False,
            "watts_from_catalog": False, "shade_list_yesterday": False}

SHADES = {
    "linen drum": [{"code": "LD-30", "cm": 30}, {"code": "LD-40", "cm": 40}],
    "silk pleat": [{"code": "SP-25", "cm": 25}, {"code": "SP-35", "cm": 35}],
    "leaded glass dome": [{"code": "LG-38", "cm": 38}],
    "opal glass globe": [{"code": "OG-20", "cm": 20}, {"code": "OG-25", "cm": 25}],
    "parchment cone": [{"code": "PC-32", "cm": 32}],
}
SOLD_SINCE_YESTERDAY = {"OG-25"}
MATERIAL_SHOP = {"linen": "fabric", "silk": "fabric", "parchment": "fabric", "leaded glass": "glass", "opal glass": "glass"}
BASES = {"arc floor": {"cap": "E27", "max_watts": 100}, "twin arm desk": {"cap": "E14", "max_watts": 40},
         "brass column": {"cap": "E27", "max_watts": 60}, "ceiling pendant": {"cap": "E27", "max_watts": 75},
         "wall sconce": {"cap": "E14", "max_watts": 40}}
FUSES = [1, 2, 3, 5, 13]

INPUTS = [
    {"task": "lamp commission L-88, arc floor, linen drum", "style": "arc floor", "bulbs": 1, "watts": 60, "voltage": 230, "shade": "linen drum", "material": "linen", "shade_cm": 40},
    {"task": "lamp commission L-89, twin arm desk, silk pleat, export 110 V", "style": "twin arm desk", "bulbs": 2, "watts": 40, "voltage": 110, "shade": "silk pleat", "material": "silk", "shade_cm": 25},
    {"task": "lamp commission L-90, brass column, leaded glass dome", "style": "brass column", "bulbs": 1, "watts": 60, "voltage": 230, "shade": "leaded glass dome", "material": "leaded glass", "shade_cm": 38},
    {"task": "lamp commission L-91, ceiling pendant, opal glass globe", "style": "ceiling pendant", "bulbs": 3, "watts": 25, "voltage": 230, "shade": "opal glass globe", "material": "opal glass", "shade_cm": 25},
    {"task": "lamp commission L-92, wall sconce, parchment cone", "style": "wall sconce", "bulbs": 2, "watts": 40, "voltage": 230, "shade": "parchment cone", "material": "parchment", "shade_cm": 32},
]
CASES = [
    {"id": "zv16", "input": 2, "switch": "glass_to_fabric_shop", "kind": "wrong_routing",
     "root": ("pick_workshop", 1, "other"), "failure": ("book_workshop", 1),
     "description": "The workshop router sent a leaded glass dome to the fabric shop, which cannot work glass."},
    {"id": "zv17", "input": 1, "switch": "budget_at_mains", "kind": "tool_ignores_argument",
     "root": ("wattage_budget", 1, "tool"), "failure": ("finalize_spec", 1),
     "description": "The wattage budget tool worked the current out at 230 V whatever voltage it was given, so the 110 V export lamp got a 1 A fuse for 0.73 A load that needs a 2 A fuse."},
    {"id": "zv18", "input": 4, "switch": "count_dropped", "kind": "lossy_parsing",
     "root": ("read_spec", 1, "other"), "failure": ("finalize_spec", 1),
     "description": "The spec reader kept the bulb cap and wattage but dropped the '2 x' count, so the twin sconce was specified with one bulb."},
    {"id": "zv19", "input": 0, "switch": "watts_from_catalog", "kind": "hallucinated_value",
     "root": ("ChatOpenAI", 2, "llm"), "failure": ("finalize_spec", 1),
     "description": "The designer wrote a 100 W bulb into the spec, the base's catalog maximum, although the commission and the wattage budget both say 60 W."},
    {"id": "zv20", "input": 3, "switch": "shade_list_yesterday", "kind": "stale_data",
     "root": ("shade_stock", 1, "tool"), "failure": ("book_workshop", 1),
     "description": "The shade stock list was yesterday's, still showing the 25 cm opal globe OG-25 that has since been sold."},
]


class Commission(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    order: dict
    spec: dict
    shop: str
    booking: dict


@tool
def parts_catalog(style: str) -> dict:
    """The base's bulb cap and its maximum wattage."""
    return {"style": style, **BASES[style]}


@tool
def shade_stock(shade: str) -> list:
    """Shades of this kind in stock, by code and diameter."""
    rows = [r for r in SHADES[shade] if r["code"] not in SOLD_SINCE_YESTERDAY]
    if SWITCHES["shade_list_yesterday"]:
        rows = list(SHADES[shade])
    return rows


@tool
def wattage_budget(bulbs: int, watts: int, voltage: int) -> dict:
    """Load current of the lamp at the given supply voltage and the fuse to fit."""
    volts = 230 if SWITCHES["budget_at_mains"] else voltage
    current = round(bulbs * watts / volts, 2)
    fuse = next(f for f in FUSES if f >= current * 1.5)
    return {"current_a": current, "fuse_a": fuse}


def policy(request):
    msgs = request.body["messages"]
    order = json.loads(msgs[1]["content"])
    results = {}
    for m in msgs:
        if m.get("role") == "tool":
            results[m["tool_call_id"]] = json.loads(m["content"])
    if not results:
        return Reply(tool_calls=(
            tool_call("parts_catalog", {"style": order["style"]}),
            tool_call("shade_stock", {"shade": order["shade"]}),
            tool_call("wattage_budget", {"bulbs": order["bulbs"], "watts": order["watts"], "voltage": order["voltage"]}),
        ))
    base = shades = budget = None
    for v in results.values():
        if isinstance(v, list):
            shades = v
        elif "fuse_a" in v:
            budget = v
        else:
            base = v
    shade = min(shades, key=lambda r: abs(r["cm"] - order["shade_cm"]))
    watts = base["max_watts"] if SWITCHES["watts_from_catalog"] else order["watts"]
    return (f"Lamp spec\nbulbs: {order['bulbs']} x {base['cap']} {watts}W\nshade: {shade['code']} {shade['cm']} cm\n"
            f"fuse: {budget['fuse_a']} A\nsupply: {order['voltage']} V")


@tool
def book_workshop(shop: str, shade_code: str, material: str) -> dict:
    """Book the shade workshop's bench for the shade."""
    if MATERIAL_SHOP[material] != shop:
        raise ValueError(f"the {shop} shop cannot work {material}")
    in_stock = {r["code"] for rows in SHADES.values() for r in rows} - SOLD_SINCE_YESTERDAY
    if shade_code not in in_stock:
        raise LookupError(f"shade {shade_code} is not on the shelf")
    return {"shop": shop, "shade": shade_code, "bench_day": "Thursday"}


class LampSpec(BaseModel):
    bulbs: int
    cap: str
    watts: int
    shade_code: str
    fuse_a: int
    supply_v: int
    arms: int
    max_watts: int

    @model_validator(mode="after")
    def check(self):
        if self.bulbs != self.arms:
            raise ValueError(f"{self.bulbs} bulb(s) for a {self.arms}-bulb fitting")
        if self.watts > self.max_watts:
            raise ValueError(f"{self.watts} W bulb above the shade's rating of {self.max_watts} W")
        load = self.bulbs * self.watts / self.supply_v
        if self.fuse_a < load * 1.5:
            raise ValueError(f"fuse {self.fuse_a} A under 1.5 x the load of {load:.2f} A at {self.supply_v} V")
        return self


SHADE_RATING = {"linen": 75, "silk": 60, "leaded glass": 100, "opal glass": 60, "parchment": 40}


def build(llm):
    designer_llm = llm.bind_tools([parts_catalog, shade_stock, wattage_budget])

    def designer(state: Commission) -> dict:
        return {"messages": [designer_llm.invoke(state["messages"])]}

    def read_spec(state: Commission) -> dict:
        text = state["messages"][-1].content
        m = re.search(r"bulbs: (\d+) x (E\d+) (\d+)W", text)
        count = int(m.group(1))
        if SWITCHES["count_dropped"]:
            m = re.search(r"(E\d+) (\d+)W", text)
            count, cap, watts = 1, m.group(1), int(m.group(2))
        else:
            cap, watts = m.group(2), int(m.group(3))
        shade = re.search(r"shade: (\S+) (\d+) cm", text)
        fuse = re.search(r"fuse: (\d+) A", text)
        supply = re.search(r"supply: (\d+) V", text)
        return {"spec": {"bulbs": count, "cap": cap, "watts": watts, "shade_code": shade.group(1),
                         "fuse_a": int(fuse.group(1)), "supply_v": int(supply.group(1))}}

    def pick_workshop(state: Commission) -> str:
        material = state["order"]["material"]
        shop = MATERIAL_SHOP[material]
        if SWITCHES["glass_to_fabric_shop"] and material == "leaded glass":
            shop = "fabric"
        return f"{shop}_shop"

    def fabric_shop(state: Commission) -> dict:
        return {"shop": "fabric", "booking": book_workshop.invoke(
            {"shop": "fabric", "shade_code": state["spec"]["shade_code"], "material": state["order"]["material"]})}

    def glass_shop(state: Commission) -> dict:
        return {"shop": "glass", "booking": book_workshop.invoke(
            {"shop": "glass", "shade_code": state["spec"]["shade_code"], "material": state["order"]["material"]})}

    def finalize_spec(state: Commission) -> dict:
        o = state["order"]
        spec = LampSpec(**state["spec"], arms=o["bulbs"], max_watts=SHADE_RATING[o["material"]])
        return {"spec": spec.model_dump()}

    g = StateGraph(Commission)
    g.add_node("designer", designer)
    g.add_node("tools", ToolNode([parts_catalog, shade_stock, wattage_budget]))
    g.add_node("read_spec", read_spec)
    g.add_node("fabric_shop", fabric_shop)
    g.add_node("glass_shop", glass_shop)
    g.add_node("finalize_spec", finalize_spec)
    g.add_edge(START, "designer")
    g.add_conditional_edges("designer", tools_condition, {"tools": "tools", END: "read_spec"})
    g.add_edge("tools", "designer")
    g.add_conditional_edges("read_spec", pick_workshop, ["fabric_shop", "glass_shop"])
    g.add_edge("fabric_shop", "finalize_spec")
    g.add_edge("glass_shop", "finalize_spec")
    g.add_edge("finalize_spec", END)
    return g.compile()


def record(inp, path, server):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["task"])
    order = {k: inp[k] for k in ("style", "bulbs", "watts", "voltage", "shade", "material", "shade_cm")}
    build(llm).invoke({"order": order, "messages": [
        ("system", "You design custom lamps. Check the parts, shades and electrical budget, then write the lamp spec."),
        ("user", json.dumps(order))]}, config={"callbacks": [tracer]})
