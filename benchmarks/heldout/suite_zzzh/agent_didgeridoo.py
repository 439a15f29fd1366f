"""Didgeridoo maker's orders: a LangGraph tool-calling loop (ChatOpenAI bound to tools, a ToolNode, parallel
tool calls in one turn) that ends in an order confirmation node parsing the model's JSON against a schema (langgraph)."""
from __future__ import annotations

import datetime as dt
import json

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel, Field

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

NAME = "didgeridoo-orders"
ROUTE = "langgraph"
DOMAIN = "didgeridoo maker's orders"
SHAPE = "LangGraph ReAct loop: model turn with two parallel tool calls (customer, timber), then weigh and shipping tool turns, a final JSON answer, and a confirmation node whose schema check (pydantic) and order checks end the run"
SWITCH = None

CUSTOMERS = {
    "C-101": {"customer": "C-101", "name": "Jarrah Cole", "country": "AU"},
    "C-207": {"customer": "C-207", "name": "Lena Vogt", "country": "DE"},
    "C-318": {"customer": "C-318", "name": "Sam Ortiz", "country": "US"},
    "C-422": {"customer": "C-422", "name": "Aiko Mori", "country": "JP"},
    "C-530": {"customer": "C-530", "name": "Tom Reyes", "country": "GB"},
}
RATES = {"AU": 18.0, "DE": 42.0, "US": 55.0, "JP": 61.0, "GB": 39.0}

INPUTS = [
    {"order": "Order for C-101: eucalyptus didgeridoo in D, 150 cm, oiled finish", "customer": "C-101", "ship_to": "AU", "length_cm": 150, "key": "D"},
    {"order": "Order for C-207: eucalyptus didgeridoo in C, 165 cm, dot painting", "customer": "C-207", "ship_to": "DE", "length_cm": 165, "key": "C"},
    {"order": "Order for C-318: eucalyptus didgeridoo in E, 135 cm, natural finish", "customer": "C-318", "ship_to": "US", "length_cm": 135, "key": "E"},
    {"order": "Order for C-422: eucalyptus didgeridoo in F, 128 cm, beeswax finish", "customer": "C-422", "ship_to": "JP", "length_cm": 128, "key": "F"},
    {"order": "Order for C-530: eucalyptus didgeridoo in C#, 158 cm, burnt design", "customer": "C-530", "ship_to": "GB", "length_cm": 158, "key": "C#"},
]

CASES = [
    {"id": "zzzh-didgeridoo-01", "input": 2, "switch": "grams", "fault_kind": "unit_error",
     "root": "weigh_instrument", "root_occurrence": 1, "failure": "confirm_order",
     "description": "The weighing tool reported the 135 cm instrument's packed weight in grams (2310) under the kilogram field, and the shipment was booked at 2310 kg."},
    {"id": "zzzh-didgeridoo-02", "input": 1, "switch": "length", "fault_kind": "wrong_tool_args",
     "root": "ChatOpenAI", "root_occurrence": 1, "failure": "confirm_order",
     "description": "The model's first turn asked the timber store for a 150 cm blank while the order was for 165 cm, so a batch of the other length was reserved."},
    {"id": "zzzh-didgeridoo-03", "input": 3, "switch": "date", "fault_kind": "format_drift",
     "root": "ChatOpenAI", "root_occurrence": 4, "failure": "confirm_order",
     "description": "The model's final order answer wrote the delivery date as 14/03/2027 instead of the ISO date 2027-03-14 the order schema takes."},
    {"id": "zzzh-didgeridoo-04", "input": 4, "switch": "batch", "fault_kind": "hallucinated_value",
     "root": "ChatOpenAI", "root_occurrence": 4, "failure": "confirm_order",
     "description": "The model's final answer gave timber batch EB-0990, which no timber lookup returned (the reserved batch was EB-1108)."},
    {"id": "zzzh-didgeridoo-05", "input": 1, "switch": "customer", "fault_kind": "swallowed_error",
     "root": "lookup_customer", "root_occurrence": 1, "failure": "confirm_order",
     "description": "The customer lookup for C-207 failed to read the address book and silently answered the workshop's home country AU, so shipping was quoted to Australia instead of Germany."},
]


@tool
def lookup_customer(customer_id: str) -> str:
    """The customer's record: name and country."""
    try:
        if SWITCH == "customer" and customer_id == "C-207":
            raise KeyError(customer_id)
        return json.dumps(CUSTOMERS[customer_id])
    except KeyError:
        return json.dumps({"customer": customer_id, "name": "", "country": "AU"})


@tool
def check_timber(length_cm: int, key: str) -> str:
    """Find a seasoned eucalyptus blank of a length for a key and reserve it."""
    return json.dumps({"batch": f"EB-{length_cm * 7 + len(key)}", "length_cm": length_cm, "key": key, "reserved": True})


@tool
def weigh_instrument(length_cm: int) -> str:
    """Packed weight of a finished instrument."""
    grams = length_cm * 17 + 15
    kg = grams if SWITCH == "grams" else round(grams / 1000, 2)
    return json.dumps({"length_cm": length_cm, "weight_kg": kg})


@tool
def quote_shipping(country: str, weight_kg: float) -> str:
    """Courier price for a parcel to a country."""
    return json.dumps({"country": country, "weight_kg": weight_kg, "price": round(RATES[country] + 6.0 * weight_kg, 2)})


TOOLS = [lookup_customer, check_timber, weigh_instrument, quote_shipping]


def policy(request):
    msgs = request.body["messages"]
    order = next(m["content"] for m in msgs if m["role"] == "user")
    facts = {}
    for m in msgs:
        if m["role"] == "tool":
            facts.update(json.loads(m["content"]))
    cid = order.split("Order for ")[1].split(":")[0]
    key = order.split(" in ")[1].split(",")[0]
    length = int(order.split(", ")[1].split(" cm")[0])
    turns = sum(1 for m in msgs if m["role"] == "assistant")
    if turns == 0:
        asked = 150 if SWITCH == "length" else length
        return Reply(tool_calls=(tool_call("lookup_customer", {"customer_id": cid}),
                                 tool_call("check_timber", {"length_cm": asked, "key": key})))
    if turns == 1:
        return Reply(tool_calls=(tool_call("weigh_instrument", {"length_cm": facts["length_cm"]}),))
    if turns == 2:
        return Reply(tool_calls=(tool_call("quote_shipping", {"country": facts["country"], "weight_kg": facts["weight_kg"]}),))
    delivery = "2027-03-14"
    if SWITCH == "date":
        delivery = "14/03/2027"
    batch = "EB-0990" if SWITCH == "batch" else facts["batch"]
    return json.dumps({"customer": cid, "country": facts["country"], "key": key, "length_cm": facts["length_cm"],
                       "batch": batch, "weight_kg": facts["weight_kg"], "shipping": facts["price"],
                       "delivery_date": delivery})


class Confirmation(BaseModel):
    customer: str
    country: str = Field(min_length=2, max_length=2)
    key: str
    length_cm: int
    batch: str
    weight_kg: float = Field(gt=0, le=30)
    shipping: float
    delivery_date: dt.date


def build(llm, order):
    bound = llm.bind_tools(TOOLS)

    def maker(state: MessagesState) -> dict:
        return {"messages": [bound.invoke(state["messages"])]}

    def confirm_order(state: MessagesState) -> dict:
        final = state["messages"][-1].content
        c = Confirmation.model_validate_json(final)
        seen = [json.loads(m.content) for m in state["messages"] if isinstance(m, ToolMessage)]
        batches = {s["batch"] for s in seen if "batch" in s}
        if c.batch not in batches:
            raise ValueError(f"batch {c.batch} is not among the reserved timber {sorted(batches)}")
        if c.length_cm != order["length_cm"]:
            raise ValueError(f"reserved blank is {c.length_cm} cm, the order is for {order['length_cm']} cm")
        if c.country != order["ship_to"]:
            raise ValueError(f"shipping quoted to {c.country}, the order ships to {order['ship_to']}")
        return {"messages": [AIMessage(content=f"Confirmed {c.batch} for {c.customer}, ships {c.delivery_date}")]}

    g = StateGraph(MessagesState)
    g.add_node("maker", maker)
    g.add_node("tools", ToolNode(TOOLS))
    g.add_node("confirm_order", confirm_order)
    g.add_edge(START, "maker")
    g.add_conditional_edges("maker", tools_condition, {"tools": "tools", END: "confirm_order"})
    g.add_edge("tools", "maker")
    g.add_edge("confirm_order", END)
    return g.compile()


def record(server, inp, path):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["order"])
    build(llm, inp).invoke({"messages": [("system", "You take didgeridoo orders. Use the tools, then answer with the order as JSON."),
                                         ("user", inp["order"])]}, config={"callbacks": [tracer]})
