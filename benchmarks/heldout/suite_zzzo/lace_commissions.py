"""Lacemaker's commissions: a LangGraph StateGraph pricing a bobbin-lace commission (langgraph route)."""
import json
from typing import Any, TypedDict

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

import trajdebug
from trajdebug.integrations.langchain import TrajdebugTracer

NAME, ROUTE, DOMAIN = "lace-commissions", "langgraph", "lacemaker's commissions"
SHAPE = "linear StateGraph: intake, archive retriever, model plan, plain-node parser, thread reservation tool per lot, pricing tool, confirm node"
SWITCH = None
_CLIENTS = {}

STYLES = {"Bucks point": {"gauge": "140/2", "per_m": 38, "hours_per_m": 22},
          "Torchon": {"gauge": "80/2", "per_m": 24, "hours_per_m": 12},
          "Honiton": {"gauge": "170/2", "per_m": 45, "hours_per_m": 30},
          "Cluny": {"gauge": "60/2", "per_m": 20, "hours_per_m": 10}}
INPUTS = [
    {"client": "Mrs Penrose", "style": "Bucks point", "length_m": 1.5, "use": "christening gown edging"},
    {"client": "Rev. Allard", "style": "Torchon", "length_m": 3.0, "use": "altar cloth border"},
    {"client": "Ms Okafor", "style": "Honiton", "length_m": 0.6, "use": "bridal collar"},
    {"client": "Mr Lindqvist", "style": "Cluny", "length_m": 4.0, "use": "table runner trim"},
    {"client": "Dr Hale", "style": "Torchon", "length_m": 2.0, "use": "cuff insertions"},
]
CASES = [
    {"id": "zzzo_l01", "input": 0, "switch": "archive", "fault_kind": "wrong_retrieval",
     "root": ("pattern_archive", 1, "retrieval"), "failure": ("confirm_commission", 1),
     "description": "The pattern archive returned the Torchon pricking for a Bucks point order, so 80/2 thread was reserved instead of 140/2."},
    {"id": "zzzo_l02", "input": 2, "switch": "units", "fault_kind": "format_drift",
     "root": ("ChatOpenAI", 1, "llm"), "failure": ("read_plan", 1),
     "description": "The model wrote the length as the text '0.6 m' instead of a number in metres, which the plan reader could not take."},
    {"id": "zzzo_l03", "input": 3, "switch": "reserve", "fault_kind": "tool_ignores_argument",
     "root": ("reserve_thread", 1, "tool"), "failure": ("confirm_commission", 1),
     "description": "The thread store reserved its standard 50 m lot whatever length was asked, so two lots held 100 m of the 320 m the runner needs."},
    {"id": "zzzo_l04", "input": 1, "switch": "metres", "fault_kind": "off_by_one",
     "root": ("price_commission", 1, "tool"), "failure": ("confirm_commission", 1),
     "description": "Pricing counted the metres from the second one on, leaving the last metre of work out of the price."},
    {"id": "zzzo_l05", "input": 4, "switch": "hours", "fault_kind": "plan_error",
     "root": ("ChatOpenAI", 1, "llm"), "failure": ("confirm_commission", 1),
     "description": "The model's plan put the work at 8 hours where the style takes 12 hours a metre for 2 metres."},
]


class Lace(TypedDict, total=False):
    order: dict
    notes: str
    plan_text: str
    plan: dict
    lots: list
    reserved: list
    price: dict
    confirmation: str


class PatternArchive(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> list:
        style = query.split(":", 1)[0]
        if SWITCH == "archive" and style == "Bucks point":
            style = "Torchon"
        s = STYLES[style]
        return [Document(page_content=json.dumps({"style": style, "gauge": s["gauge"], "pins_per_cm": s["per_m"] // 4,
                                                  "hours_per_m": s["hours_per_m"]}))]


@tool
def reserve_thread(gauge: str, metres: int) -> dict:
    """Reserve linen thread of a gauge from the store."""
    if SWITCH == "reserve" and metres > 100:
        metres = 50
    return {"gauge": gauge, "reserved_m": metres, "lot": f"LN-{gauge.replace('/', '')}-{metres}"}


@tool
def price_commission(length_m: float, hours: float, style: str) -> dict:
    """Price a commission from the length, the hours of work and the style's rate."""
    rate = STYLES[style]["per_m"]
    metres = int(length_m * 10)
    first = 1 if SWITCH == "metres" else 0
    material = sum(rate / 10 for _ in range(first, metres))
    return {"material_gbp": round(material, 2), "labour_gbp": round(hours * 28, 2),
            "total_gbp": round(material + hours * 28, 2)}


def policy(request):
    msgs = request.body["messages"]
    data = json.loads(msgs[-1]["content"])
    notes = json.loads(data["pattern"])
    length = data["length_m"]
    hours = round(notes["hours_per_m"] * length, 1)
    if SWITCH == "hours":
        hours = 8.0
    plan = {"style": notes["style"], "gauge": notes["gauge"], "length_m": length, "hours": hours,
            "thread_lots": 2 if length > 1 else 1}
    if SWITCH == "units":
        plan["length_m"] = f"{length} m"
    return json.dumps(plan)


def build(llm):
    archive = PatternArchive()

    def intake(state: Lace) -> dict:
        o = state["order"]
        return {"order": {**o, "style": o["style"].strip(), "length_m": float(o["length_m"])}}

    def find_pattern(state: Lace) -> dict:
        docs = archive.invoke(f"{state['order']['style']}: {state['order']['use']}", config={"run_name": "pattern_archive"})
        return {"notes": docs[0].page_content}

    def plan_work(state: Lace) -> dict:
        msg = json.dumps({"pattern": state["notes"], "length_m": state["order"]["length_m"],
                          "use": state["order"]["use"]})
        ai = llm.invoke([("system", "Plan the lace commission. Answer JSON."), ("user", msg)])
        return {"plan_text": ai.content}

    def read_plan(state: Lace) -> dict:
        p = json.loads(state["plan_text"])
        length = float(p["length_m"]) if isinstance(p["length_m"], (int, float)) else None
        if length is None:
            raise TypeError(f"length_m {p['length_m']!r} is not a number of metres")
        need = int(length * STYLES[p["style"]]["per_m"] * 4)
        per_lot = -(-need // p["thread_lots"])
        return {"plan": {**p, "length_m": length, "thread_needed_m": need},
                "lots": [per_lot] * p["thread_lots"]}

    def reserve(state: Lace) -> dict:
        got = [reserve_thread.invoke({"gauge": state["plan"]["gauge"], "metres": m}) for m in state["lots"]]
        return {"reserved": got}

    def price(state: Lace) -> dict:
        p = state["plan"]
        return {"price": price_commission.invoke({"length_m": p["length_m"], "hours": p["hours"], "style": p["style"]})}

    def confirm_commission(state: Lace) -> dict:
        o, p, q = state["order"], state["plan"], state["price"]
        book = STYLES[o["style"]]
        for lot in state["reserved"]:
            if lot["gauge"] != book["gauge"]:
                raise ValueError(f"{o['style']} is worked in {book['gauge']} linen, lot {lot['lot']} is {lot['gauge']}")
        total_m = sum(lot["reserved_m"] for lot in state["reserved"])
        if total_m < p["thread_needed_m"]:
            raise ValueError(f"{total_m} m of thread reserved, the pattern needs {p['thread_needed_m']} m")
        if q["material_gbp"] < round(book["per_m"] * o["length_m"], 2) - 0.01:
            raise ValueError(f"material {q['material_gbp']} GBP is under {book['per_m']} GBP a metre for {o['length_m']} m")
        if q["labour_gbp"] < book["hours_per_m"] * o["length_m"] * 28 - 0.01:
            raise ValueError(f"labour {q['labour_gbp']} GBP is under the studio rate for {o['length_m']} m of {o['style']}")
        return {"confirmation": f"{o['client']}: {o['use']}, {q['total_gbp']} GBP"}

    g = StateGraph(Lace)
    for name, fn in [("intake", intake), ("find_pattern", find_pattern), ("plan_work", plan_work),
                     ("read_plan", read_plan), ("reserve", reserve), ("price", price),
                     ("confirm_commission", confirm_commission)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    for a, b in [("intake", "find_pattern"), ("find_pattern", "plan_work"), ("plan_work", "read_plan"),
                 ("read_plan", "reserve"), ("reserve", "price"), ("price", "confirm_commission")]:
        g.add_edge(a, b)
    g.add_edge("confirm_commission", END)
    return g.compile()


def record(inp, server, path):
    if server.base_url not in _CLIENTS:
        _CLIENTS[server.base_url] = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    llm = _CLIENTS[server.base_url]
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"commission for {inp['client']}")
    try:
        build(llm).invoke({"order": dict(inp)}, config={"callbacks": [tracer]})
    except (ValueError, TypeError):
        pass
