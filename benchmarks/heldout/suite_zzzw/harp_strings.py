"""Harp maker's string replacements: LangGraph with a routing edge to a desk, then a model/ToolNode loop and a fit check."""
from __future__ import annotations

import json
import re
from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from trajdebug.integrations.langchain import TrajdebugTracer

NAME, ROUTE, EXT = "harp-restringing", "langgraph", "jsonl"
DOMAIN = "harp maker's string replacements"
SHAPE = "graph: ticket parse node, harp register node, routing edge to lever or pedal desk, then a model with bound tools looping with a ToolNode (chart, parallel stock lookups, supplier order, reservation), fit check node (21-30 steps)"
SWITCH = None

HARPS = {
    "Enid Pickles": {"harp": "Camac Hermine", "type": "lever", "strings": 34},
    "Bryn Hughes": {"harp": "Lyon & Healy 85", "type": "pedal", "strings": 46},
    "Sal Moorhouse": {"harp": "Dusty Strings FH36", "type": "lever", "strings": 36},
    "Grace Tindall": {"harp": "Salvi Aurora", "type": "pedal", "strings": 47},
    "Olwen Price": {"harp": "Teifi Eryr", "type": "lever", "strings": 36},
}


def gauge(chart, n, total):
    base = 0.022 if chart == "lever" else 0.025
    return round(base + (n - 1) * (0.0011 if chart == "lever" else 0.0013), 4)


DRAWER = {"gut": 6, "nylon": 9, "wire": 4}
DRAWER_LAST_MONTH = {"gut": 6, "nylon": 9, "wire": 4}
EMPTY = {("gut", 0.0374)}  # bins emptied since the monthly count

INPUTS = [
    {"key": "pickles", "text": "String ticket: Enid Pickles needs strings 12, 13 and 14 replaced in gut."},
    {"key": "hughes", "text": "String ticket: Bryn Hughes needs strings 20 and 22 replaced in gut."},
    {"key": "moorhouse", "text": "String ticket: Sal Moorhouse needs strings 3, 4, 5 and 7 replaced in nylon."},
    {"key": "tindall", "text": "String ticket: Grace Tindall needs strings 40 and 41 replaced in wire."},
    {"key": "price", "text": "String ticket: Olwen Price needs strings 15 replaced in gut."},
]

CASES = [
    {"id": "zzzw_harp_01", "input": 1, "switch": "pedal_to_lever", "fault_kind": "wrong_routing",
     "root": {"name": "route_desk", "occurrence": 1}, "failure": {"name": "fit_check", "occurrence": 1},
     "description": "The desk router sends Bryn Hughes's pedal harp to the lever desk, whose string chart then sets the gauges."},
    {"id": "zzzw_harp_02", "input": 2, "switch": "model_material", "fault_kind": "wrong_tool_args",
     "root": {"name": "ChatOpenAI", "occurrence": 2}, "failure": {"name": "fit_check", "occurrence": 1},
     "description": "The model asks the stock drawer for gut strings though the ticket asks for nylon, and reserves gut."},
    {"id": "zzzw_harp_03", "input": 2, "switch": "chart_page", "fault_kind": "truncated_result",
     "root": {"name": "string_chart", "occurrence": 1}, "failure": {"name": "fit_check", "occurrence": 1},
     "description": "The string chart returns only the first three of the four strings asked for, so string 7 is never reserved."},
    {"id": "zzzw_harp_04", "input": 4, "switch": "monthly_count", "fault_kind": "stale_data",
     "root": {"name": "stock_drawer", "occurrence": 1}, "failure": {"name": "reserve_strings", "occurrence": 1},
     "description": "The stock drawer answers last month's count for the gut string of gauge 0.0374 (Olwen Price's string 15), a bin emptied since."},
    {"id": "zzzw_harp_05", "input": 4, "switch": "register_default", "fault_kind": "swallowed_error",
     "root": {"name": "harp_register", "occurrence": 1}, "failure": {"name": "fit_check", "occurrence": 1},
     "description": "The harp register times out for Olwen Price and quietly answers the Camac Hermine, a 34-string lever harp, as the fallback."},
]


@tool
def harp_register(customer: str) -> str:
    """The customer's harp on the workshop register."""
    if SWITCH == "register_default" and customer == "Olwen Price":
        try:
            raise TimeoutError("register did not answer")
        except TimeoutError:
            return json.dumps({"customer": customer, "harp": "Camac Hermine", "type": "lever", "strings": 34})
    return json.dumps({"customer": customer, **HARPS[customer]})


@tool
def string_chart(harp: str, chart: str, strings: list[int], total: int) -> str:
    """Gauge of each string number on the maker's chart."""
    rows = [{"string": n, "gauge": gauge(chart, n, total), "octave": (n - 1) // 7 + 1} for n in strings]
    if SWITCH == "chart_page":
        rows = rows[:3]
    return json.dumps({"harp": harp, "chart": chart, "rows": rows})


@tool
def stock_drawer(material: str, gauge: float) -> str:
    """How many strings of a material and gauge are in the drawer."""
    count = DRAWER[material]
    if (material, gauge) in EMPTY and SWITCH != "monthly_count":
        count = 0
    if (material, gauge) in EMPTY and SWITCH == "monthly_count":
        count = DRAWER_LAST_MONTH[material]
    return json.dumps({"material": material, "gauge": gauge, "in_drawer": count})


@tool
def reserve_strings(customer: str, items: list[dict]) -> str:
    """Take strings out of the drawer for a customer."""
    for it in items:
        if it["source"] == "drawer" and (it["material"], it["gauge"]) in EMPTY:
            raise RuntimeError(f"drawer bin {it['material']} {it['gauge']} is empty: cannot reserve string {it['string']}")
    return json.dumps({"customer": customer, "reserved": items})


@tool
def order_from_supplier(material: str, gauge: float) -> str:
    """Order a string the drawer lacks from the string maker."""
    return json.dumps({"supplier_order": f"{material}-{gauge}", "arrives": "in 4 days"})


TOOLS = [string_chart, stock_drawer, order_from_supplier, reserve_strings]


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    ticket = json.loads(next(m["content"] for m in msgs if m["role"] == "user"))
    results = {}
    for m in msgs:
        if m["role"] == "tool":
            d = json.loads(m["content"])
            key = ("chart" if "rows" in d else "reserved" if "reserved" in d else
                   "supplier" if "supplier_order" in d else "stock")
            results.setdefault(key, []).append(d)
    harp = json.loads(re.search(r"Harp: (\{.*\})", system).group(1))
    chart = "lever" if "lever desk" in system else "pedal"
    if "chart" not in results:
        return {"tool_calls": [("string_chart", {"harp": harp["harp"], "chart": chart, "strings": ticket["strings"],
                                                  "total": harp["strings"]})]}
    rows = results["chart"][0]["rows"]
    material = "gut" if SWITCH == "model_material" else ticket["material"]
    if "stock" not in results:
        return {"tool_calls": [("stock_drawer", {"material": material, "gauge": r["gauge"]}) for r in rows]}
    lacking = [s for s in results["stock"] if s["in_drawer"] == 0]
    if lacking and "supplier" not in results:
        return {"tool_calls": [("order_from_supplier", {"material": s["material"], "gauge": s["gauge"]}) for s in lacking]}
    if "reserved" not in results:
        items = [{"string": r["string"], "gauge": s["gauge"], "material": s["material"],
                  "source": "drawer" if s["in_drawer"] > 0 else "supplier"} for r, s in zip(rows, results["stock"])]
        return {"tool_calls": [("reserve_strings", {"customer": ticket["customer"], "items": items})]}
    got = results["reserved"][0]["reserved"]
    return "Reserved strings " + ", ".join(str(i["string"]) for i in got) + " for " + ticket["customer"] + "."


class S(TypedDict, total=False):
    ticket_text: str
    ticket: dict
    harp: dict
    desk: str
    messages: Annotated[list, add_messages]


def build(llm):
    from trajdebug.testing import Reply, tool_call

    def read_ticket(s: S):
        t = s["ticket_text"]
        m = re.search(r"ticket: (.+?) needs strings (.+?) replaced in (\w+)\.", t)
        nums = [int(x) for x in re.findall(r"\d+", m.group(2))]
        return {"ticket": {"customer": m.group(1), "strings": nums, "material": m.group(3)}}

    def lookup_harp(s: S):
        return {"harp": json.loads(harp_register.invoke({"customer": s["ticket"]["customer"]}))}

    def route_desk(s: S) -> str:
        kind = s["harp"]["type"]
        if SWITCH == "pedal_to_lever":
            kind = "lever"
        return "lever_desk" if kind == "lever" else "pedal_desk"

    def desk(name):
        def f(s: S):
            sys = (f"You are the {name.replace('_', ' ')}. Harp: {json.dumps(s['harp'])}. "
                   "Look up the chart, check the drawer, reserve the strings.")
            return {"desk": name, "messages": [SystemMessage(sys), HumanMessage(json.dumps(s["ticket"]))]}
        return f

    bound = llm.bind_tools(TOOLS)

    def fitter(s: S):
        return {"messages": [bound.invoke(s["messages"])]}

    def after_fitter(s: S) -> str:
        last = s["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else "fit_check"

    def fit_check(s: S):
        reserved = []
        for m in s["messages"]:
            if isinstance(m, ToolMessage) and '"reserved"' in m.content:
                reserved = json.loads(m.content)["reserved"]
        t = s["ticket"]
        harp = HARPS[t["customer"]]
        by_no = {r["string"]: r for r in reserved}
        for n in t["strings"]:
            if n > harp["strings"]:
                raise AssertionError(f"{harp['harp']} has {harp['strings']} strings, no string {n}")
            if n not in by_no:
                raise AssertionError(f"string {n} of {harp['harp']} was not reserved")
            r = by_no[n]
            want = gauge(harp["type"], n, harp["strings"])
            if r["material"] != t["material"]:
                raise AssertionError(f"string {n} reserved in {r['material']}, ticket asks {t['material']}")
            if abs(r["gauge"] - want) > 1e-6:
                raise AssertionError(f"string {n} of the {harp['harp']} takes gauge {want}, reserved {r['gauge']}")
        if harp["strings"] != s["harp"]["strings"] or harp["harp"] != s["harp"]["harp"]:
            raise AssertionError(f"{t['customer']} plays a {harp['harp']} ({harp['strings']} strings), the job was set up for a {s['harp']['harp']}")
        return {"messages": [AIMessage(f"Fit check passed for {t['customer']}.")]}

    g = StateGraph(S)
    g.add_node("read_ticket", read_ticket)
    g.add_node("lookup_harp", lookup_harp)
    g.add_node("lever_desk", desk("lever_desk"))
    g.add_node("pedal_desk", desk("pedal_desk"))
    g.add_node("fitter", fitter)
    g.add_node("tools", ToolNode(TOOLS, handle_tool_errors=False))
    g.add_node("fit_check", fit_check)
    g.add_edge(START, "read_ticket")
    g.add_edge("read_ticket", "lookup_harp")
    g.add_conditional_edges("lookup_harp", route_desk, ["lever_desk", "pedal_desk"])
    g.add_edge("lever_desk", "fitter")
    g.add_edge("pedal_desk", "fitter")
    g.add_conditional_edges("fitter", after_fitter, ["tools", "fit_check"])
    g.add_edge("tools", "fitter")
    g.add_edge("fit_check", END)
    return g.compile()


def _policy(request):
    from trajdebug.testing import Reply, tool_call
    a = policy(request)
    if isinstance(a, dict):
        return Reply(tool_calls=tuple(tool_call(n, args) for n, args in a["tool_calls"]))
    return a


def record(server, inp, path):
    server.use(_policy)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"string replacement: {inp['text']}")
    try:
        build(llm).invoke({"ticket_text": inp["text"]}, config={"callbacks": [tracer], "recursion_limit": 30})
    except Exception:
        pass
