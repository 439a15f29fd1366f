"""Crochet pattern shop: a tool-calling assistant changes a customer's pattern-box subscription (catalogue
search, yarn stock and currency conversion in parallel, shipment schedule), then a parser and a billing node
that validates the change against the billing schema.

Route: a LangGraph StateGraph (model node + ToolNode loop) with ChatOpenAI, recorded with TrajdebugTracer.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel, Field, field_validator

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

import suite_common as sc

RUN_NAME = "crochet-subscription-desk"
ROUTE = "langgraph"
DOMAIN = "crochet pattern shop's subscriptions"
SHAPE = "StateGraph ReAct loop: account node -> model node <-> ToolNode (catalogue search, parallel yarn stock + currency conversion, shipment schedule) -> parser node -> billing node with a pydantic schema -> notice node (about 24 steps)"
ACTIVE = None

INPUTS = [
    {"account": "CR-310", "message": "Please move me to the Amigurumi Advanced box for 6 months from 2027-02-01, colourway Heather, billed in EUR."},
    {"account": "CR-311", "message": "Switch my subscription to the Lace Shawl box for 3 months from 2027-01-15, colourway Sea Glass, billed in GBP."},
    {"account": "CR-312", "message": "I'd like the Granny Square Beginner box for 12 months from 2027-03-01, colourway Marigold, billed in USD."},
    {"account": "CR-313", "message": "Change to the Amigurumi Beginner box for 4 months from 2027-02-10, colourway Natural, billed in EUR."},
    {"account": "CR-314", "message": "Put me on the Colourwork Socks box for 9 months from 2027-01-20, colourway Ember, billed in USD."},
]
CATALOGUE = [
    {"code": "AMI-B", "title": "Amigurumi Beginner box", "gbp": 11.50},
    {"code": "AMI-A", "title": "Amigurumi Advanced box", "gbp": 14.00},
    {"code": "LAC-S", "title": "Lace Shawl box", "gbp": 16.50},
    {"code": "GRN-B", "title": "Granny Square Beginner box", "gbp": 9.00},
    {"code": "SOC-C", "title": "Colourwork Socks box", "gbp": 13.25},
]
RATES = {"GBP": 1.0, "EUR": 1.17, "USD": 1.27}
YARN = {"Heather": 140, "Sea Glass": 60, "Marigold": 220, "Natural": 500, "Ember": 75}

CASES = [
    {"id": "zzzf_crochet_01", "input": 0, "switch": "title_first_word", "fault_kind": "wrong_retrieval",
     "root": ("find_plan", 1), "failure": "billing",
     "description": "The catalogue search matches on the first word of the title only and returns the Amigurumi Beginner box for a request for the Advanced box."},
    {"id": "zzzf_crochet_02", "input": 2, "switch": "one_month", "fault_kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 3), "failure": "billing",
     "description": "The assistant model asks the shipment scheduler for one month although the customer subscribes for twelve, so the change carries one shipment for a twelve-month term."},
    {"id": "zzzf_crochet_03", "input": 1, "switch": "comma_decimal", "fault_kind": "format_drift",
     "root": ("convert_price", 1), "failure": "billing",
     "description": "The currency service answers the monthly price with a comma as the decimal mark, and the billing schema cannot read it as a number."},
    {"id": "zzzf_crochet_04", "input": 4, "switch": "default_colourway", "fault_kind": "tool_ignores_argument",
     "root": ("check_yarn_stock", 1), "failure": "billing",
     "description": "The yarn stock check ignores the colourway it is given and reserves the Natural kit, so the change's kit does not match the customer's Ember colourway."},
    {"id": "zzzf_crochet_05", "input": 3, "switch": "first_shipment_only", "fault_kind": "lossy_parsing",
     "root": ("parse_change", 1), "failure": "billing",
     "description": "The change parser keeps only the first shipment date of the schedule, so a four-month subscription is billed with one shipment."},
]


def _results(messages):
    names, out = {}, {}
    for m in messages:
        if m.get("role") == "assistant":
            for tc in m.get("tool_calls") or []:
                names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            out[names.get(m["tool_call_id"])] = json.loads(m["content"])
    return out


def policy(request):
    msgs = request.body["messages"]
    ask = next(m["content"] for m in msgs if m["role"] == "user")
    res = _results(msgs)
    plan = re.search(r"the (.*? box)", ask).group(1)
    months = int(re.search(r"for (\d+) months", ask).group(1))
    start = re.search(r"from (\d{4}-\d{2}-\d{2})", ask).group(1)
    colour = re.search(r"colourway ([\w ]+),", ask).group(1)
    cur = re.search(r"billed in (\w+)", ask).group(1)
    if "find_plan" not in res:
        return Reply(tool_calls=(tool_call("find_plan", {"query": plan}),))
    p = res["find_plan"]
    if "check_yarn_stock" not in res:
        return Reply(tool_calls=(tool_call("check_yarn_stock", {"plan_code": p["code"], "colourway": colour, "months": months}),
                                 tool_call("convert_price", {"amount_gbp": p["gbp"], "currency": cur})))
    if "schedule_shipments" not in res:
        n = 1 if ACTIVE == "one_month" else months
        return Reply(tool_calls=(tool_call("schedule_shipments", {"plan_code": p["code"], "months": n, "start": start}),))
    return json.dumps({"plan_code": p["code"], "plan_title": p["title"], "kit_sku": res["check_yarn_stock"]["kit_sku"],
                       "monthly_price": res["convert_price"]["amount"], "currency": cur, "months": months,
                       "shipments": res["schedule_shipments"]["dates"]})


@tool
def find_plan(query: str) -> dict:
    """Search the pattern-box catalogue by title."""
    q = query.lower()
    if ACTIVE == "title_first_word":
        hits = [c for c in CATALOGUE if c["title"].lower().split()[0] == q.split()[0]]
    else:
        hits = [c for c in CATALOGUE if c["title"].lower() == q]
    return dict(hits[0])


@tool
def check_yarn_stock(plan_code: str, colourway: str, months: int) -> dict:
    """Reserve yarn kits of a colourway for the subscription's months."""
    used = "Natural" if ACTIVE == "default_colourway" else colourway
    if YARN[used] < months * 2:
        return {"kit_sku": None, "available": YARN[used]}
    return {"kit_sku": f"{plan_code}-{used.upper().replace(' ', '')}", "reserved": months * 2}


@tool
def convert_price(amount_gbp: float, currency: str) -> dict:
    """Convert a monthly price from GBP."""
    amount = round(amount_gbp * RATES[currency], 2)
    return {"amount": f"{amount:.2f}".replace(".", ",") if ACTIVE == "comma_decimal" else amount, "currency": currency}


@tool
def schedule_shipments(plan_code: str, months: int, start: str) -> dict:
    """Shipment dates of a box, one a month from the start date."""
    d = dt.date.fromisoformat(start)
    dates = []
    for i in range(months):
        y, m = divmod(d.month - 1 + i, 12)
        dates.append(dt.date(d.year + y, m + 1, min(d.day, 28)).isoformat())
    return {"plan_code": plan_code, "dates": dates}


TOOLS = [find_plan, check_yarn_stock, convert_price, schedule_shipments]


class SubscriptionChange(BaseModel):
    account: str = Field(pattern=r"^CR-\d{3}$")
    plan_code: str
    plan_title: str
    kit_sku: str
    monthly_price: float = Field(gt=0)
    currency: str = Field(pattern=r"^(GBP|EUR|USD)$")
    months: int = Field(ge=1, le=24)
    shipments: list[str]
    requested_plan: str
    colourway: str

    @field_validator("shipments")
    @classmethod
    def _dates(cls, v):
        for d in v:
            dt.date.fromisoformat(d)
        return v

    def model_post_init(self, _ctx):
        if len(self.shipments) != self.months:
            raise ValueError(f"{len(self.shipments)} shipments for a {self.months}-month subscription")
        if self.plan_title.lower() != self.requested_plan.lower():
            raise ValueError(f"plan {self.plan_code} is the {self.plan_title}; the customer asked for the {self.requested_plan}")
        if not self.kit_sku.endswith(self.colourway.upper().replace(" ", "")):
            raise ValueError(f"kit {self.kit_sku} is not the {self.colourway} colourway the customer chose")


class Desk(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    account: dict
    change: dict
    invoice: dict
    notice: str


def build_graph(llm):
    model = llm.bind_tools(TOOLS)

    def load_account(state: Desk) -> dict:
        return {"account": {"id": state["account"]["id"], "country": "UK", "since": "2024-05-01", "current_box": "GRN-B"}}

    def assistant(state: Desk, config) -> dict:
        return {"messages": [model.invoke(state["messages"], config)]}

    def parse_change(state: Desk) -> dict:
        data = json.loads(state["messages"][-1].content)
        if ACTIVE == "first_shipment_only":
            data["shipments"] = data["shipments"][:1]
        return {"change": data}

    def billing(state: Desk) -> dict:
        ask = state["messages"][0].content
        c = state["change"]
        change = SubscriptionChange(account=state["account"]["id"], requested_plan=re.search(r"the (.*? box)", ask).group(1),
                                    colourway=re.search(r"colourway ([\w ]+),", ask).group(1), **c)
        return {"invoice": {"account": change.account, "monthly": change.monthly_price, "currency": change.currency,
                            "first_charge": change.shipments[0], "charges": len(change.shipments)}}

    def notice(state: Desk) -> dict:
        inv = state["invoice"]
        return {"notice": f"Your {state['change']['plan_title']} starts {inv['first_charge']}: {inv['charges']} x {inv['monthly']} {inv['currency']}."}

    g = StateGraph(Desk)
    g.add_node("load_account", load_account)
    g.add_node("assistant", assistant)
    g.add_node("tools", ToolNode(TOOLS))
    g.add_node("parse_change", parse_change)
    g.add_node("billing", billing)
    g.add_node("notice", notice)
    g.add_edge(START, "load_account")
    g.add_edge("load_account", "assistant")
    g.add_conditional_edges("assistant", tools_condition, {"tools": "tools", END: "parse_change"})
    g.add_edge("tools", "assistant")
    g.add_edge("parse_change", "billing")
    g.add_edge("billing", "notice")
    g.add_edge("notice", END)
    return g.compile()


def record(inp: dict, path: str) -> None:
    llm = sc.chat_model()
    tracer = TrajdebugTracer(path=path, name=RUN_NAME, task=f"subscription change for {inp['account']}")
    build_graph(llm).invoke({"messages": [("user", inp["message"])], "account": {"id": inp["account"]}},
                            config={"callbacks": [tracer], "recursion_limit": 20})
