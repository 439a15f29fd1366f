"""Papermaking studio: OpenAI Agents SDK (Chat Completions): an order desk with a sub-agent used as a tool, hand-off to one of two vat agents, typed final output."""
from __future__ import annotations

import json
import math
import re

from agents import Agent, function_tool
from pydantic import BaseModel, model_validator
from trajdebug.testing import Reply, tool_call

from suite_common import call_results, first_system, first_user, run_sdk_agent, sdk_model

RUN_NAME = "paper-studio-batches"
ROUTE = "openai_agents"
DOMAIN = "papermaking studio"
SHAPE = "Agents SDK: order desk (order tool, fibre analyst sub-agent as a tool with its own stock tool) hands off to the western or eastern vat agent (pulp recipe, vat booking), whose typed BatchPlan output is schema-checked"
SWITCH = None

ORDERS = {
    "P-601": {"order": "P-601", "fibre": "cotton rag", "sheets": 120, "size": "A3", "gsm": 300},
    "P-602": {"order": "P-602", "fibre": "kozo", "sheets": 80, "size": "A2", "gsm": 40},
    "P-603": {"order": "P-603", "fibre": "abaca", "sheets": 200, "size": "A4", "gsm": 120},
    "P-604": {"order": "P-604", "fibre": "kozo", "sheets": 45, "size": "A3", "gsm": 25},
    "P-605": {"order": "P-605", "fibre": "cotton rag", "sheets": 64, "size": "A2", "gsm": 250},
}
EASTERN = {"kozo", "gampi", "mitsumata"}
MOULDS = {"A4": 0.0624, "A3": 0.1248, "A2": 0.2495}
STOCK_KG = {"cotton rag": 14.0, "kozo": 3.5, "abaca": 4.0, "gampi": 0.8}
LOTS = {"cotton rag": "CR-31", "kozo": "KZ-14", "abaca": "AB-07", "gampi": "GP-02"}
LOTS_LAST_MONTH = {"cotton rag": "CR-29", "kozo": "KZ-11", "abaca": "AB-05", "gampi": "GP-02"}
SHEETS_PER_POST = {"western": 25, "eastern": 40}
INPUTS = [{"order": o} for o in ORDERS]
CASES = [
    dict(id="zzzp_paper_01", input=0, switch="a", fault_kind="subagent_wrong_entity", root=("fibre_analyst", 2, "agent"),
         failure=("book_vat", 1), description="The fibre analyst, asked about cotton rag for P-601, analyses abaca, the fibre named in the studio's standing note, and the pulp is prepared for it."),
    dict(id="zzzp_paper_02", input=3, switch="b", fault_kind="wrong_routing", root=("generation paper-model", 5, "llm"),
         failure=("book_vat", 1), description="The order desk hands the kozo order P-604 to the western vat instead of the eastern one."),
    dict(id="zzzp_paper_03", input=4, switch="c", fault_kind="hallucinated_value", root=("generation paper-model", 6, "llm"),
         failure=("pulp_recipe", 1), description="The vat agent asks for the pulp recipe for A1 sheets, a size the order never named and the studio has no mould for."),
    dict(id="zzzp_paper_04", input=2, switch="d", fault_kind="off_by_one", root=("pulp_recipe", 1, "tool"),
         failure=("turn 6", 1), description="The pulp recipe counts posts with floor division, one post short for 200 sheets at 25 a post plus spoilage."),
    dict(id="zzzp_paper_05", input=1, switch="e", fault_kind="stale_data", root=("fibre_stock", 1, "tool"),
         failure=("book_vat", 1), description="The fibre stock tool answers from last month's stock sheet, naming kozo lot KZ-11, which is used up, and the vat is booked against it."),
]


class BatchPlan(BaseModel):
    order: str
    sheets: int
    mould: str
    posts: int
    sheets_per_post: int
    pulp_kg: float

    @model_validator(mode="after")
    def consistent(self):
        if self.mould not in MOULDS:
            raise ValueError(f"mould {self.mould} not in the studio (A4, A3, A2)")
        if self.posts * self.sheets_per_post < self.sheets:
            raise ValueError(f"{self.posts} posts of {self.sheets_per_post} hold {self.posts * self.sheets_per_post} sheets, {self.sheets} to be made")
        return self


@function_tool(failure_error_function=None)
def read_order(order_id: str) -> dict:
    """An order of handmade paper."""
    return dict(ORDERS[order_id])


@function_tool(failure_error_function=None)
def fibre_stock(fibre: str) -> dict:
    """Kilograms of beaten-ready fibre on the shelf."""
    lots = LOTS_LAST_MONTH if SWITCH == "e" else LOTS
    return {"fibre": fibre, "kg": STOCK_KG[fibre], "lot": lots[fibre]}


@function_tool(failure_error_function=None)
def pulp_recipe(fibre: str, sheets: int, size: str, gsm: int, sheets_per_post: int) -> dict:
    """Pulp weight and posts for a batch (10% spoilage allowed)."""
    make = math.ceil(sheets * 1.1)
    posts = make // sheets_per_post if SWITCH == "d" else math.ceil(make / sheets_per_post)
    kg = round(make * MOULDS[size] * gsm / 1000 * 1.3, 2)
    return {"fibre": fibre, "sheets_to_form": make, "posts": posts, "pulp_kg": kg}


def _book(vat_kind):
    def book_vat(order_id: str, fibre: str, lot: str, pulp_kg: float, posts: int) -> dict:
        o = ORDERS[order_id]
        if lot != LOTS[fibre]:
            raise ValueError(f"vat booking for {order_id} refused: fibre lot {lot} is used up, the shelf holds lot {LOTS[fibre]}")
        if fibre != o["fibre"]:
            raise ValueError(f"vat booking for {order_id} refused: pulp is {fibre}, order is {o['fibre']}")
        if (o["fibre"] in EASTERN) != (vat_kind == "eastern"):
            raise ValueError(f"{vat_kind} vat refused {order_id}: {o['fibre']} is formed at the {'eastern' if o['fibre'] in EASTERN else 'western'} vat")
        if pulp_kg > STOCK_KG[fibre]:
            raise ValueError(f"vat booking for {order_id} refused: {pulp_kg} kg of {fibre} asked, {STOCK_KG[fibre]} kg on the shelf")
        return {"order": order_id, "vat": "W1" if vat_kind == "western" else "E1", "posts": posts, "booked": True}
    book_vat.__doc__ = f"Book the {vat_kind} vat for a batch."
    return function_tool(book_vat, failure_error_function=None)


def policy(request):
    system = first_system(request)
    user = first_user(request)
    res = call_results(request)
    got = dict(res)
    if system.startswith("You analyse"):
        order = json.loads(user)
        fibre = order["fibre"]
        if SWITCH == "a":
            fibre = re.search(r"standing note: (\w+)", order.get("note", "")).group(1)
        if "fibre_stock" not in got:
            return Reply(tool_calls=(tool_call("fibre_stock", {"fibre": fibre}),))
        kg = got["fibre_stock"]["kg"]
        need = round(math.ceil(order["sheets"] * 1.1) * MOULDS[order["size"]] * order["gsm"] / 1000 * 1.3, 2)
        return json.dumps({"fibre": fibre, "lot": got["fibre_stock"]["lot"], "kg_on_shelf": kg, "kg_needed": need, "cleared": kg >= need})
    oid = re.search(r"P-\d{3}", user).group(0)
    if system.startswith("You run the paper studio"):
        if "read_order" not in got:
            return Reply(tool_calls=(tool_call("read_order", {"order_id": oid}),))
        order = got["read_order"]
        if "fibre_analyst" not in got:
            note = dict(order, note="standing note: abaca trials continue this month")
            return Reply(tool_calls=(tool_call("fibre_analyst", {"input": json.dumps(note)}),))
        east = order["fibre"] in EASTERN
        if SWITCH == "b":
            east = False
        return Reply(tool_calls=(tool_call("transfer_to_eastern_vat" if east else "transfer_to_western_vat", {}),))
    kind = "eastern" if system.startswith("You run the eastern") else "western"
    order = got["read_order"]
    analysis = got["fibre_analyst"]
    if isinstance(analysis, str):
        analysis = json.loads(analysis)
    if "pulp_recipe" not in got:
        size = "A1" if SWITCH == "c" else order["size"]
        return Reply(tool_calls=(tool_call("pulp_recipe", {"fibre": analysis["fibre"], "sheets": order["sheets"], "size": size,
                                                            "gsm": order["gsm"], "sheets_per_post": SHEETS_PER_POST[kind]}),))
    recipe = got["pulp_recipe"]
    if "book_vat" not in got:
        return Reply(tool_calls=(tool_call("book_vat", {"order_id": oid, "fibre": recipe["fibre"], "lot": analysis["lot"], "pulp_kg": recipe["pulp_kg"], "posts": recipe["posts"]}),))
    mould = order["size"]
    return json.dumps({"order": oid, "sheets": recipe["sheets_to_form"], "mould": mould, "posts": recipe["posts"],
                       "sheets_per_post": SHEETS_PER_POST[kind], "pulp_kg": recipe["pulp_kg"]})


def record(server, inp: dict, path: str) -> None:
    model = sdk_model(server, "paper-model")
    analyst = Agent(name="fibre_analyst", instructions="You analyse fibres: check the shelf and say whether the order's pulp is cleared.",
                    model=model, tools=[fibre_stock])
    western = Agent(name="western_vat", instructions="You run the western vat: recipe, booking, then the batch plan.",
                    model=model, tools=[pulp_recipe, _book("western")], output_type=BatchPlan)
    eastern = Agent(name="eastern_vat", instructions="You run the eastern vat: recipe, booking, then the batch plan.",
                    model=model, tools=[pulp_recipe, _book("eastern")], output_type=BatchPlan)
    desk = Agent(name="order_desk", instructions="You run the paper studio's order desk: read the order, ask the fibre analyst, hand to a vat.",
                 model=model, tools=[read_order, analyst.as_tool(tool_name="fibre_analyst", tool_description="Analyse the fibre of an order.")],
                 handoffs=[western, eastern])
    run_sdk_agent(server, desk, f"Plan the batch for order {inp['order']}.", path, RUN_NAME, f"paper order {inp['order']}", "paper-studio")
