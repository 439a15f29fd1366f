"""A piano tuner's visits (route: langgraph, ChatOpenAI against the fake server, TrajdebugTracer)."""

from __future__ import annotations

import json
import operator
from datetime import date
from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

import kit
from common import chat_policy, task_prompt
from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "piano-tuner-visits"
ROUTE = "langgraph"
DOMAIN = "piano tuner: visits"
SHAPE = "StateGraph: intake LLM, rate card tool, day-plan LLM, visit loop (piano record + quote tools, loop router), invoicing sub-graph (draft LLM, parse), validator"

PIANOS = {
    "C-11": {"customer": "C-11", "name": "Mrs Albright", "make": "Bechstein", "type": "grand", "pitch_hz": 440.0, "fixed": "09:00"},
    "C-12": {"customer": "C-12", "name": "St Anne's School", "make": "Yamaha U1", "type": "upright", "pitch_hz": 437.5, "fixed": None},
    "C-13": {"customer": "C-13", "name": "Mr Okafor", "make": "Steinway B", "type": "grand", "pitch_hz": 439.0, "fixed": None},
    "C-14": {"customer": "C-14", "name": "The Lamb Inn", "make": "Broadwood", "type": "upright", "pitch_hz": 435.0, "fixed": "13:30"},
    "C-15": {"customer": "C-15", "name": "Ms Varga", "make": "Kawai K3", "type": "upright", "pitch_hz": 440.0, "fixed": None},
    "C-16": {"customer": "C-16", "name": "Chapel Lane Studio", "make": "Bosendorfer", "type": "grand", "pitch_hz": 441.0, "fixed": "09:00"},
    "C-17": {"customer": "C-17", "name": "Dr Hume", "make": "Petrof", "type": "upright", "pitch_hz": 438.0, "fixed": None},
}
RATES = {2026: {"upright": 85.0, "grand": 110.0, "pitch_raise": 30.0}, 2025: {"upright": 78.0, "grand": 100.0, "pitch_raise": 25.0}}
VISIT_MIN = 90

INPUTS = [
    {"tuner": "J. Marsh", "date": "2026-04-07", "customers": ["C-12", "C-11", "C-13"]},
    {"tuner": "J. Marsh", "date": "2026-04-08", "customers": ["C-15", "C-14", "C-17"]},
    {"tuner": "P. Quint", "date": "2026-04-09", "customers": ["C-13", "C-16", "C-12", "C-15"]},
    {"tuner": "P. Quint", "date": "2026-04-11", "customers": ["C-17", "C-11", "C-14"]},
    {"tuner": "J. Marsh", "date": "2026-04-15", "customers": ["C-16", "C-15", "C-13"]},
    {"tuner": "P. Quint", "date": "2026-04-16", "customers": ["C-12", "C-17", "C-15"]},
]

C = "zzr_piano_"
CASES = [
    {"id": C + "01", "input": 1, "fault_kind": "stale_data", "root": ("rate_card", 1), "failure": ("validate_day", 1),
     "description": "The rate card tool answers from last year's cached card (upright 78 GBP), so every line of the day is under the current rates."},
    {"id": C + "02", "input": 3, "fault_kind": "format_drift", "root": ("ChatOpenAI", 3), "failure": ("validate_day", 1),
     "description": "The invoice drafting model switches the visit date to day/month/year, which the parser reads month-first, dating the invoice 4 November instead of 11 April."},
    {"id": C + "03", "input": 0, "fault_kind": "wrong_tool_args", "root": ("visit", 2), "failure": ("validate_day", 1),
     "description": "The second visit node calls the quote tool with the piano type of the visit before (the Bechstein grand) for St Anne's School's Yamaha upright."},
    {"id": C + "04", "input": 2, "fault_kind": "off_by_one", "root": ("more_visits", 3), "failure": ("validate_day", 1),
     "description": "The visit loop's router compares the next index with the count minus one and ends the day before the fourth customer is visited."},
    {"id": C + "05", "input": 4, "fault_kind": "plan_error", "root": ("ChatOpenAI", 2), "failure": ("validate_day", 1),
     "description": "The day-plan model orders the stops by customer number and puts Chapel Lane Studio, fixed at 09:00, third."},
]


class S(TypedDict, total=False):
    text: str
    request: dict
    rates: dict
    plan: list
    idx: int
    visits: Annotated[list, operator.add]
    draft: str
    invoice: dict


def brain(inp):
    def intake(p):
        return {"tuner": inp["tuner"], "date": inp["date"], "customers": inp["customers"]}

    def plan_day(p):
        custs = p["customers"]
        fixed = [c for c in custs if PIANOS[c]["fixed"]]
        free = [c for c in custs if not PIANOS[c]["fixed"]]
        morning = [c for c in fixed if PIANOS[c]["fixed"] < "12:00"]
        later = [c for c in fixed if c not in morning]
        order = morning + free[:1] + later + free[1:]
        if kit.on(C + "05"):
            order = sorted(custs)
        return {"stops": order}

    def draft(p):
        d = p["date"]
        shown = d
        if kit.on(C + "02"):
            shown = f"{d[8:10]}/{d[5:7]}/{d[0:4]}"
        return json.dumps({"invoice_date": shown, "tuner": p["tuner"],
                           "lines": [{"customer": v["customer"], "amount": v["amount"]} for v in p["visits"]]})

    return chat_policy({"intake": intake, "plan_day": plan_day, "draft_invoice": draft})


@tool
def rate_card(year: int) -> dict:
    """The tuner's published rates for a year (GBP)."""
    if kit.on(C + "01"):
        return dict(RATES[year - 1], year=year)
    return dict(RATES[year], year=year)


@tool
def piano_record(customer: str) -> dict:
    """The customer's piano record: make, type, last measured pitch, fixed appointment time."""
    return dict(PIANOS[customer])


@tool
def quote_service(piano_type: str, pitch_hz: float, upright: float, grand: float, pitch_raise: float) -> dict:
    """Price a tuning visit: the base rate for the piano type, plus a pitch raise when below 438 Hz."""
    base = grand if piano_type == "grand" else upright
    extra = pitch_raise if pitch_hz < 438.0 else 0.0
    return {"piano_type": piano_type, "base": base, "pitch_raise": extra, "amount": base + extra}


def _parse_date(text: str) -> str:
    if "/" in text:
        a, b, y = text.split("/")
        return date(int(y), int(a), int(b)).isoformat()
    return date.fromisoformat(text).isoformat()


def make_graph(llm):
    def ask(task, payload, config):
        msgs = [SystemMessage("You are the tuner's office assistant."), HumanMessage(task_prompt(task, payload))]
        return llm.invoke(msgs, config=config).content

    def intake(state: S, config) -> dict:
        return {"request": json.loads(ask("intake", {"text": state["text"]}, config)), "idx": 0}

    def load_rates(state: S, config) -> dict:
        return {"rates": rate_card.invoke({"year": int(state["request"]["date"][:4])}, config=config)}

    def plan_day(state: S, config) -> dict:
        plan = json.loads(ask("plan_day", {"customers": state["request"]["customers"], "date": state["request"]["date"]}, config))
        return {"plan": plan["stops"]}

    def visit(state: S, config) -> dict:
        i = state["idx"]
        rec = piano_record.invoke({"customer": state["plan"][i]}, config=config)
        piano_type = rec["type"]
        if kit.on(C + "03") and i == 1:
            piano_type = state["visits"][-1]["piano_type"]
        r = state["rates"]
        q = quote_service.invoke({"piano_type": piano_type, "pitch_hz": rec["pitch_hz"], "upright": r["upright"],
                                  "grand": r["grand"], "pitch_raise": r["pitch_raise"]}, config=config)
        minutes = 9 * 60 + i * VISIT_MIN
        arrival = f"{minutes // 60:02d}:{minutes % 60:02d}"
        return {"idx": i + 1, "visits": [{"customer": rec["customer"], "piano_type": q["piano_type"], "amount": q["amount"], "arrival": arrival}]}

    def more_visits(state: S) -> str:
        last = len(state["plan"]) - 1 if kit.on(C + "04") else len(state["plan"])
        return "visit" if state["idx"] < last else "invoicing"

    def draft(state: S, config) -> dict:
        return {"draft": ask("draft_invoice", {"date": state["request"]["date"], "tuner": state["request"]["tuner"],
                                               "visits": state["visits"]}, config)}

    def parse_invoice(state: S) -> dict:
        d = json.loads(state["draft"])
        return {"invoice": {"date": _parse_date(d["invoice_date"]), "lines": d["lines"], "total": sum(x["amount"] for x in d["lines"])}}

    sub = StateGraph(S)
    sub.add_node("draft_invoice", draft)
    sub.add_node("parse_invoice", parse_invoice)
    sub.add_edge(START, "draft_invoice")
    sub.add_edge("draft_invoice", "parse_invoice")
    sub.add_edge("parse_invoice", END)
    invoicing = sub.compile()

    def validate_day(state: S) -> dict:
        req, inv = state["request"], state["invoice"]
        done = [v["customer"] for v in state["visits"]]
        missing = [c for c in req["customers"] if c not in done]
        if missing:
            raise ValueError(f"customers {missing} were booked for {req['date']} but not visited")
        if inv["date"] != req["date"]:
            raise ValueError(f"invoice dated {inv['date']} for visits on {req['date']}")
        rates = RATES[int(req["date"][:4])]
        for v in state["visits"]:
            p = PIANOS[v["customer"]]
            due = rates[p["type"]] + (rates["pitch_raise"] if p["pitch_hz"] < 438.0 else 0.0)
            if v["amount"] != due:
                raise ValueError(f"{p['name']} ({p['make']}, {p['type']}) charged {v['amount']} GBP, rate card says {due} GBP")
            if p["fixed"] and v["arrival"] > p["fixed"]:
                raise ValueError(f"arrival at {p['name']} {v['arrival']} misses the fixed {p['fixed']} appointment")
        return {}

    g = StateGraph(S)
    g.add_node("intake", intake)
    g.add_node("load_rates", load_rates)
    g.add_node("plan_day", plan_day)
    g.add_node("visit", visit)
    g.add_node("invoicing", invoicing)
    g.add_node("validate_day", validate_day)
    g.add_edge(START, "intake")
    g.add_edge("intake", "load_rates")
    g.add_edge("load_rates", "plan_day")
    g.add_edge("plan_day", "visit")
    g.add_conditional_edges("visit", more_visits, {"visit": "visit", "invoicing": "invoicing"})
    g.add_edge("invoicing", "validate_day")
    g.add_edge("validate_day", END)
    return g.compile()


def record(server, inp, path):
    server.use(brain(inp))
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    text = f"{inp['tuner']} tunes for {', '.join(PIANOS[c]['name'] for c in inp['customers'])} on {inp['date']}."
    tracer = TrajdebugTracer(path=path, name=NAME, task=text)
    try:
        make_graph(llm).invoke({"text": text}, config={"callbacks": [tracer]})
    except ValueError:
        pass
