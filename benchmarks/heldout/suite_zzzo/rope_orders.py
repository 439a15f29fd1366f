"""Ropemaker's orders: a LangGraph with a routing model, a per-line loop and a ReAct dispatch loop (langgraph route)."""
import json
import operator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

NAME, ROUTE, DOMAIN = "ropewalk-orders", "langgraph", "ropemaker's orders"
SHAPE = "StateGraph: model classifier with a conditional edge to one of two desks, a self-looping line node (stock + lay tools per line), a ReAct dispatch loop (model + ToolNode), schema check node"
SWITCH = None
_CLIENTS = {}

FIBRES = {"marine": {"fibre": "polyester 3-strand", "kn_per_mm2": 0.22}, "heritage": {"fibre": "manila 3-strand", "kn_per_mm2": 0.09}}
STOCK = {"polyester 3-strand": 900, "manila 3-strand": 400, "hemp 4-strand": 250}
INPUTS = [
    {"order": "RW-501", "customer": "Porthleven harbour", "use": "mooring", "lines": [[24, 40], [24, 40], [18, 25]], "min_kn": 90},
    {"order": "RW-502", "customer": "St Enodoc church", "use": "bell rope", "lines": [[22, 12], [22, 12], [20, 10], [20, 10], [18, 9], [18, 9]], "min_kn": 20},
    {"order": "RW-503", "customer": "Brixham trawler Provident", "use": "rigging", "lines": [[16, 60], [12, 35]], "min_kn": 20},
    {"order": "RW-504", "customer": "Gweek boatyard", "use": "mooring", "lines": [[28, 30], [28, 30]], "min_kn": 120},
    {"order": "RW-505", "customer": "Cotehele quay", "use": "heritage rigging", "lines": [[20, 25], [16, 18], [14, 15], [12, 20]], "min_kn": 10},
]
CASES = [
    {"id": "zzzo_r01", "input": 3, "switch": "desk", "fault_kind": "wrong_routing",
     "root": ("ChatOpenAI", 1, "llm"), "failure": ("order_schema_check", 1),
     "description": "The classifier sent a 120 kN mooring order to the heritage desk, which specified manila."},
    {"id": "zzzo_r02", "input": 0, "switch": "stock", "fault_kind": "swallowed_error",
     "root": ("fibre_stock", 3, "tool"), "failure": ("order_schema_check", 1),
     "description": "The stock lookup for the third line timed out; the tool caught it and reported the fibre as hemp 4-strand, which was then laid."},
    {"id": "zzzo_r03", "input": 1, "switch": "weight", "fault_kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 2, "llm"), "failure": ("order_schema_check", 1),
     "description": "The dispatch model asked the carrier to quote for the first line's weight rather than the whole order's."},
    {"id": "zzzo_r04", "input": 4, "switch": "lay", "fault_kind": "truncated_result",
     "root": ("lay_calculator", 2, "tool"), "failure": ("order_schema_check", 1),
     "description": "The lay calculator's answer for the second line came back cut to its first field, with no length made up."},
    {"id": "zzzo_r05", "input": 2, "switch": "pollute", "fault_kind": "context_pollution",
     "root": ("dispatch_brief", 1, "other"), "failure": ("order_schema_check", 1),
     "description": "The dispatch brief carried the previous order's 1200 kg note, which the dispatch model booked."},
]


def _add(a, b):
    return (a or []) + (b or [])


class Order(TypedDict, total=False):
    order: dict
    desk: str
    spec: dict
    i: int
    made: Annotated[list, _add]
    messages: Annotated[list, _add]
    booking: dict


@tool
def fibre_stock(fibre: str, metres: float) -> dict:
    """Metres of a fibre in the ropewalk's store."""
    try:
        if SWITCH == "stock" and metres == 25:
            raise TimeoutError("store ledger did not answer")
        have = STOCK[fibre]
        use = fibre
    except TimeoutError:
        use, have = "hemp 4-strand", STOCK["hemp 4-strand"]
    return {"fibre": use, "metres_in_store": have}


@tool
def lay_calculator(diameter_mm: int, metres: float, fibre: str) -> dict:
    """Yarn count and finished length for a laid line."""
    out = {"diameter_mm": diameter_mm, "yarns": diameter_mm * 9, "finished_m": metres, "fibre": fibre,
           "kg": round(diameter_mm ** 2 * metres * 0.00075, 2)}
    if SWITCH == "lay" and diameter_mm == 16:
        return {"diameter_mm": diameter_mm}
    return out


@tool
def carrier_quote(kg: float, destination: str) -> dict:
    """Carrier quote for a weight to a destination."""
    return {"kg": kg, "destination": destination, "gbp": round(12 + kg * 0.4, 2), "quote": f"Q-{int(kg * 10)}"}


@tool
def book_carrier(quote: str, kg: float) -> dict:
    """Book the quoted carriage."""
    return {"booked": quote, "kg": kg}


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    if system.startswith("Classify"):
        o = json.loads(msgs[-1]["content"])
        desk = "marine" if o["use"] in ("mooring", "rigging") else "heritage"
        if SWITCH == "desk":
            desk = "heritage"
        return desk
    brief = json.loads(msgs[1]["content"])
    results = {}
    names = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m["role"] == "tool":
            results[names[m["tool_call_id"]]] = json.loads(m["content"])
    if "carrier_quote" not in results:
        kg = brief.get("note_kg") or brief["total_kg"]
        if SWITCH == "weight":
            kg = brief["line_kg"][0]
        return Reply(tool_calls=(tool_call("carrier_quote", {"kg": kg, "destination": brief["customer"]}),))
    if "book_carrier" not in results:
        q = results["carrier_quote"]
        return Reply(tool_calls=(tool_call("book_carrier", {"quote": q["quote"], "kg": q["kg"]}),))
    return f"Booked {results['book_carrier']['booked']}."


def build(llm):
    tools = [carrier_quote, book_carrier]
    dispatcher = llm.bind_tools(tools)

    def classify(state: Order) -> dict:
        ai = llm.invoke([SystemMessage("Classify the order for a desk: marine or heritage."),
                         HumanMessage(json.dumps(state["order"]))])
        return {"desk": ai.content.strip()}

    def marine_desk(state: Order) -> dict:
        return {"spec": dict(FIBRES["marine"], desk="marine"), "i": 0}

    def heritage_desk(state: Order) -> dict:
        return {"spec": dict(FIBRES["heritage"], desk="heritage"), "i": 0}

    def make_line(state: Order) -> dict:
        d, m = state["order"]["lines"][state["i"]]
        stock = fibre_stock.invoke({"fibre": state["spec"]["fibre"], "metres": m})
        laid = lay_calculator.invoke({"diameter_mm": d, "metres": m, "fibre": stock["fibre"]})
        return {"made": [laid], "i": state["i"] + 1}

    def dispatch_brief(state: Order) -> dict:
        made = state["made"]
        brief = {"customer": state["order"]["customer"], "total_kg": round(sum(x.get("kg", 0) for x in made), 2),
                 "line_kg": [x.get("kg", 0) for x in made]}
        if SWITCH == "pollute":
            brief["note_kg"] = 1200
        return {"messages": [SystemMessage("Arrange carriage with the tools."), HumanMessage(json.dumps(brief))]}

    def dispatch(state: Order) -> dict:
        return {"messages": [dispatcher.invoke(state["messages"])]}

    def after_dispatch(state: Order) -> str:
        return "tools" if state["messages"][-1].tool_calls else "order_schema_check"

    def pick_desk(state: Order) -> str:
        return "marine_desk" if state["desk"] == "marine" else "heritage_desk"

    def next_line(state: Order) -> str:
        return "make_line" if state["i"] < len(state["order"]["lines"]) else "dispatch_brief"

    def order_schema_check(state: Order) -> dict:
        o, made, spec = state["order"], state["made"], state["spec"]
        booked = [json.loads(m.content) for m in state["messages"] if getattr(m, "name", None) == "book_carrier"]
        if len(made) != len(o["lines"]):
            raise ValueError(f"order {o['order']}: {len(made)} lines made for {len(o['lines'])} ordered")
        for want, line in zip(o["lines"], made):
            for field in ("diameter_mm", "finished_m", "fibre", "kg"):
                if field not in line:
                    raise ValueError(f"order {o['order']}: line {want[0]} mm x {want[1]} m has no {field}")
            strength = round(spec["kn_per_mm2"] * 3.14159 * (line["diameter_mm"] / 2) ** 2, 1)
            if line["fibre"] != spec["fibre"]:
                raise ValueError(f"order {o['order']}: line {want[0]} mm laid in {line['fibre']}, spec is {spec['fibre']}")
            if strength < o["min_kn"] and line["diameter_mm"] == max(w[0] for w in o["lines"]):
                raise ValueError(f"order {o['order']}: {line['diameter_mm']} mm {line['fibre']} breaks at {strength} kN, {o['min_kn']} kN required")
        total = round(sum(x["kg"] for x in made), 2)
        if not booked or abs(booked[0]["kg"] - total) > 0.5:
            raise ValueError(f"order {o['order']}: carriage booked for {booked[0]['kg'] if booked else 0} kg, the lines weigh {total} kg")
        return {"booking": booked[0]}

    g = StateGraph(Order)
    g.add_node("classify", classify)
    g.add_node("marine_desk", marine_desk)
    g.add_node("heritage_desk", heritage_desk)
    g.add_node("make_line", make_line)
    g.add_node("dispatch_brief", dispatch_brief)
    g.add_node("dispatch", dispatch)
    g.add_node("tools", ToolNode(tools))
    g.add_node("order_schema_check", order_schema_check)
    g.add_edge(START, "classify")
    g.add_conditional_edges("classify", pick_desk, ["marine_desk", "heritage_desk"])
    g.add_edge("marine_desk", "make_line")
    g.add_edge("heritage_desk", "make_line")
    g.add_conditional_edges("make_line", next_line, ["make_line", "dispatch_brief"])
    g.add_edge("dispatch_brief", "dispatch")
    g.add_conditional_edges("dispatch", after_dispatch, ["tools", "order_schema_check"])
    g.add_edge("tools", "dispatch")
    g.add_edge("order_schema_check", END)
    return g.compile()


def record(inp, server, path):
    if server.base_url not in _CLIENTS:
        _CLIENTS[server.base_url] = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    llm = _CLIENTS[server.base_url]
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"order {inp['order']}")
    try:
        build(llm).invoke({"order": dict(inp)}, config={"callbacks": [tracer], "recursion_limit": 60})
    except ValueError:
        pass
