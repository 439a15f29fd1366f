"""Batch orders at a dye works (route: langgraph, a tool-calling dyer with a ToolNode)."""
from __future__ import annotations

import ast
import json
import re
from typing import Annotated, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.integrations.langchain import TrajdebugTracer
import suitekit

NAME = "dye-batches"
ROUTE = "langgraph"
DOMAIN = "dye works: batch orders"
SHAPE = ("LangGraph with a routed branch and a ReAct loop, ~20 steps: model classifies the order, parse node, "
         "router to the acid or reactive line node (each runs a recipe retriever), dyer model with a ToolNode "
         "(shade card, recipe scaling, parallel stock checks), batch-sheet parse node, QA node schema check")

ON = {"line": False, "grams": False, "card": False, "recipe": False, "code": False}

ORDERS = [
    "Halden Mills: 52 kg of worsted wool yarn, shade Navy Marl.",
    "Brightwater Linens: 120 kg of linen/wool 70/30 cloth, shade Sage.",
    "Pellow & Daughters: 18 kg of silk scarves, shade Damson.",
    "Tarn Outdoor: 75 kg of cotton canvas, shade Navy.",
    "Kiln Street Knits: 40 kg of nylon/wool 20/80 yarn, shade Ochre.",
]
INPUTS = [{"text": t} for t in ORDERS]
CARDS = {  # customer shade cards: shade -> approved card code
    "Halden Mills": {"Navy Marl": "DW-1124"}, "Brightwater Linens": {"Sage": "DW-2210"},
    "Pellow & Daughters": {"Damson": "DW-3307"}, "Tarn Outdoor": {"Navy": "DW-1120"},
    "Kiln Street Knits": {"Ochre": "DW-4416"},
}
RECIPES = [
    {"recipe_id": "R-204", "shade": "Navy", "dye_class": "reactive", "liquor_ratio": 8,
     "dyes": [{"dye": "Reactive Blue 19", "pct_owf": 3.2}, {"dye": "Reactive Black 5", "pct_owf": 0.9}]},
    {"recipe_id": "R-118", "shade": "Navy", "dye_class": "acid", "liquor_ratio": 20,
     "dyes": [{"dye": "Acid Blue 113", "pct_owf": 2.8}, {"dye": "Acid Black 172", "pct_owf": 0.6}]},
    {"recipe_id": "R-131", "shade": "Navy Marl", "dye_class": "acid", "liquor_ratio": 20,
     "dyes": [{"dye": "Acid Blue 113", "pct_owf": 1.9}, {"dye": "Acid Black 172", "pct_owf": 0.3},
              {"dye": "Acid Red 266", "pct_owf": 0.1}]},
    {"recipe_id": "R-305", "shade": "Sage", "dye_class": "reactive", "liquor_ratio": 10,
     "dyes": [{"dye": "Reactive Yellow 145", "pct_owf": 1.1}, {"dye": "Reactive Blue 221", "pct_owf": 0.4}]},
    {"recipe_id": "R-306", "shade": "Sage", "dye_class": "acid", "liquor_ratio": 20,
     "dyes": [{"dye": "Acid Yellow 49", "pct_owf": 1.0}, {"dye": "Acid Blue 25", "pct_owf": 0.5}]},
    {"recipe_id": "R-412", "shade": "Damson", "dye_class": "acid", "liquor_ratio": 30,
     "dyes": [{"dye": "Acid Red 266", "pct_owf": 1.6}, {"dye": "Acid Blue 25", "pct_owf": 0.8}]},
    {"recipe_id": "R-520", "shade": "Ochre", "dye_class": "acid", "liquor_ratio": 20,
     "dyes": [{"dye": "Acid Yellow 49", "pct_owf": 2.1}, {"dye": "Acid Red 266", "pct_owf": 0.4}]},
]
STOCK_KG = {"Reactive Blue 19": 40, "Reactive Black 5": 25, "Acid Blue 113": 30, "Acid Black 172": 12,
            "Acid Red 266": 9, "Reactive Yellow 145": 20, "Reactive Blue 221": 15, "Acid Yellow 49": 22,
            "Acid Blue 25": 18}
CELLULOSE = ("cotton", "linen", "viscose")

CASES = [
    dict(id="zd01", input=1, switch="line", fault_kind="wrong_routing",
         root=("line_for", 1), kind=None, failure=("qa_check", 1),
         description="line_for sends the 70/30 linen/wool cloth to the acid line because the fibre text mentions wool, though linen is the major fibre and needs reactive dyes."),
    dict(id="zd02", input=3, switch="grams", fault_kind="unit_error",
         root=("scale_recipe", 1), kind="tool", failure=("qa_check", 1),
         description="scale_recipe multiplies the percent on weight of fibre by the batch weight without dividing by 100, so the sheet asks for 100 times the dye."),
    dict(id="zd03", input=0, switch="card", fault_kind="hallucinated_value",
         root=("ChatOpenAI", 5), kind="llm", failure=("qa_check", 1),
         description="The dyer model writes shade card DW-1142 on the batch sheet, a code no tool returned (the shade card lookup said DW-1124)."),
    dict(id="zd04", input=0, switch="recipe", fault_kind="wrong_retrieval",
         root=("RecipeBook", 1), kind="retrieval", failure=("qa_check", 1),
         description="The recipe book search matches on the first word of the shade and returns the Navy recipe R-118 for a Navy Marl order."),
    dict(id="zd05", input=4, switch="code", fault_kind="format_drift",
         root=("shade_match", 1), kind="tool", failure=("qa_check", 1),
         description="The shade card service answers the card code in its new style 'dw 4416' instead of 'DW-4416', and the code is copied onto the batch sheet."),
]


def _parse_tool_text(text: str):
    try:
        return json.loads(text)
    except Exception:
        return ast.literal_eval(text)


def policy(request):
    msgs = request.body.get("messages") or []
    system = suitekit.system_of(request)
    if system.startswith("Classify"):
        text = suitekit.last_user(request)
        m = re.match(r"(.+?): (\d+) kg of (.+?) (yarn|cloth|scarves|canvas), shade (.+)\.", text)
        customer, kg, fibre, form, shade = m.groups()
        return json.dumps({"customer": customer, "kg": int(kg), "fibre": fibre, "form": form, "shade": shade})
    order = json.loads(next(m["content"] for m in msgs if m["role"] == "user"))
    names = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
    results = {}
    for m in msgs:
        if m["role"] == "tool":
            results.setdefault(names[m["tool_call_id"]], []).append(_parse_tool_text(m["content"]))
    from trajdebug.testing import Reply, tool_call
    if "shade_match" not in results:
        return Reply(tool_calls=(tool_call("shade_match", {"customer": order["customer"], "shade": order["shade"]}),))
    if "scale_recipe" not in results:
        return Reply(tool_calls=(tool_call("scale_recipe", {"recipe_id": order["recipe"]["recipe_id"], "kg": order["kg"]}),))
    lines = results["scale_recipe"][0]["lines"]
    if "stock_check" not in results:
        return Reply(tool_calls=tuple(tool_call("stock_check", {"dye": ln["dye"], "grams": ln["grams"]}) for ln in lines))
    card = results["shade_match"][0]["card_code"]
    if ON["card"]:
        card = "DW-1142"
    return json.dumps({"customer": order["customer"], "shade": order["shade"], "card_code": card,
                       "recipe_id": order["recipe"]["recipe_id"], "kg": order["kg"],
                       "liquor_ratio": order["recipe"]["liquor_ratio"],
                       "dyes": [{"dye": ln["dye"], "grams": ln["grams"]} for ln in lines]})


class RecipeBook(BaseRetriever):
    dye_class: str = "acid"

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        key = query.split()[0] if ON["recipe"] else query
        hits = [r for r in RECIPES if r["shade"] == key and r["dye_class"] == self.dye_class]
        return [Document(page_content=json.dumps(r), metadata={"recipe_id": r["recipe_id"]}) for r in hits]


@tool
def shade_match(customer: str, shade: str) -> dict:
    """Look up the customer's approved shade card code for a shade."""
    code = CARDS[customer][shade]
    if ON["code"]:
        code = code.lower().replace("-", " ")
    return {"customer": customer, "shade": shade, "card_code": code, "approved": True}


@tool
def scale_recipe(recipe_id: str, kg: float) -> dict:
    """Scale a recipe to a batch weight: grams of each dye."""
    recipe = next(r for r in RECIPES if r["recipe_id"] == recipe_id)
    factor = 1000.0 if ON["grams"] else 10.0  # pct owf x kg x 1000 g / 100
    return {"recipe_id": recipe_id, "kg": kg,
            "lines": [{"dye": d["dye"], "grams": round(d["pct_owf"] * kg * factor, 1)} for d in recipe["dyes"]]}


@tool
def stock_check(dye: str, grams: float) -> dict:
    """Check the dye store holds enough of a dye."""
    return {"dye": dye, "grams": grams, "in_stock_kg": STOCK_KG[dye], "reserved": True}


class Batch(TypedDict, total=False):
    request: str
    order: dict
    recipe: dict
    messages: Annotated[list[AnyMessage], add_messages]
    sheet: dict


def build(llm):
    tools = [shade_match, scale_recipe, stock_check]
    dyer_llm = llm.bind_tools(tools)

    def classify_order(state: Batch) -> dict:
        msg = llm.invoke([SystemMessage("Classify the order: customer, kg, fibre, form, shade as JSON."),
                          HumanMessage(state["request"])])
        return {"messages": [msg]}

    def read_order(state: Batch) -> dict:
        return {"order": json.loads(state["messages"][-1].content)}

    def line_for(state: Batch) -> str:
        fibre = state["order"]["fibre"]
        if ON["line"]:
            return "acid_line" if any(w in fibre for w in ("wool", "silk", "nylon")) else "reactive_line"
        parts = fibre.split()[0].split("/")
        shares = [int(x) for x in fibre.split()[1].split("/")] if len(parts) > 1 else [100]
        major = parts[shares.index(max(shares))]
        return "reactive_line" if major in CELLULOSE else "acid_line"

    def _line(state: Batch, dye_class: str) -> dict:
        docs = RecipeBook(dye_class=dye_class).invoke(state["order"]["shade"])
        recipe = json.loads(docs[0].page_content)
        brief = dict(state["order"], recipe=recipe)
        return {"recipe": recipe, "messages": [
            SystemMessage("You are the dyer. Match the shade card, scale the recipe, check stock, then answer the batch sheet as JSON."),
            HumanMessage(json.dumps(brief))]}

    def acid_line(state: Batch) -> dict:
        return _line(state, "acid")

    def reactive_line(state: Batch) -> dict:
        return _line(state, "reactive")

    def dyer(state: Batch) -> dict:
        history = [m for m in state["messages"][2:]]  # from the line's brief on
        return {"messages": [dyer_llm.invoke(history)]}

    def batch_sheet(state: Batch) -> dict:
        return {"sheet": json.loads(state["messages"][-1].content)}

    def qa_check(state: Batch) -> dict:
        sheet, order, recipe = state["sheet"], state["order"], state["recipe"]
        for key, typ in (("card_code", str), ("recipe_id", str), ("kg", (int, float)), ("dyes", list)):
            if not isinstance(sheet.get(key), typ):
                raise TypeError(f"batch sheet field {key} must be {getattr(typ, '__name__', 'a number')}")
        if not re.fullmatch(r"DW-\d{4}", sheet["card_code"]):
            raise ValueError(f"card code {sheet['card_code']!r} is not a shade card number (DW-0000)")
        if CARDS[order["customer"]].get(order["shade"]) != sheet["card_code"]:
            raise ValueError(f"shade card {sheet['card_code']} is not approved for {order['customer']} {order['shade']}")
        if recipe["shade"] != order["shade"]:
            raise ValueError(f"recipe {recipe['recipe_id']} is for shade {recipe['shade']}, order is {order['shade']}")
        fibre = order["fibre"].split()[0].split("/")
        shares = [int(x) for x in order["fibre"].split()[1].split("/")] if len(fibre) > 1 else [100]
        major = fibre[shares.index(max(shares))]
        if (major in CELLULOSE) != (recipe["dye_class"] == "reactive"):
            raise ValueError(f"{recipe['dye_class']} dyes will not fix on {order['fibre']}")
        total_g = sum(d["grams"] for d in sheet["dyes"])
        if total_g > 0.08 * sheet["kg"] * 1000:
            raise ValueError(f"dye total {total_g / 1000:.1f} kg is over 8% of {sheet['kg']} kg goods")
        return {"sheet": dict(sheet, released=True)}

    g = StateGraph(Batch)
    for fn in (classify_order, read_order, acid_line, reactive_line, dyer, batch_sheet, qa_check):
        g.add_node(fn.__name__, fn)
    g.add_node("tools", ToolNode(tools))
    g.add_edge(START, "classify_order")
    g.add_edge("classify_order", "read_order")
    g.add_conditional_edges("read_order", line_for, ["acid_line", "reactive_line"])
    g.add_edge("acid_line", "dyer")
    g.add_edge("reactive_line", "dyer")
    g.add_conditional_edges("dyer", tools_condition, {"tools": "tools", END: "batch_sheet"})
    g.add_edge("tools", "dyer")
    g.add_edge("batch_sheet", "qa_check")
    g.add_edge("qa_check", END)
    return g.compile()


def record(inp: dict, path: str, base_url: str) -> None:
    llm = suitekit.chat_model(base_url)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["text"])
    try:
        build(llm).invoke({"request": inp["text"]}, config={"callbacks": [tracer], "recursion_limit": 40})
    except Exception:
        pass
