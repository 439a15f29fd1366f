"""Tailoring alterations (langgraph route): read the request, measure, brief, plan, fitting sub-graph, ticket."""
from __future__ import annotations

import json
from typing import Any, TypedDict

from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, last_user
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "tailor-alterations", "langgraph", "tailoring alterations", "jsonl"
SHAPE = "intake (llm + parse) -> measure per garment -> brief -> plan (llm + parse) -> fitting sub-graph (fitter, booking per garment) -> price + ticket"

MEASURES = {
    "jacket": {"chest_cm": 104, "sleeve_cm": 63, "back_cm": 76},
    "trousers": {"waist_cm": 86, "inseam_cm": 79},
    "shirt": {"neck_cm": 40, "sleeve_cm": 86},
    "dress": {"bust_cm": 92, "hem_cm": 104},
    "coat": {"chest_cm": 110, "sleeve_cm": 65},
}
NEEDS = {"jacket": "sleeve_cm", "trousers": "inseam_cm", "shirt": "neck_cm", "dress": "hem_cm", "coat": "sleeve_cm"}
OPS = {"jacket": ["shorten sleeves", "take in sides"], "trousers": ["hem", "take in waist"], "shirt": ["shorten sleeves", "taper"],
       "dress": ["hem", "take in bust"], "coat": ["shorten sleeves", "reline"]}
FITTERS = {"jacket": "Rosa", "trousers": "Dev", "shirt": "Dev", "dress": "Mina", "coat": "Rosa"}
PRICE = {"shorten sleeves": 24.0, "take in sides": 30.0, "hem": 18.0, "take in waist": 22.0, "taper": 20.0, "take in bust": 28.0, "reline": 90.0}

INPUTS = {
    "suit": {"customer": "K-301", "text": "Three-piece order: jacket sleeves too long, trousers need hemming, shirt neck fine but taper it.",
             "garments": ["jacket", "trousers", "shirt"], "due_days": 14},
    "dress": {"customer": "K-318", "text": "Bridesmaid dress hem and bust, plus a winter coat sleeves.",
              "garments": ["dress", "coat"], "due_days": 3},
}
REFS = [
    {"customer": "K-322", "text": "Trousers hem only.", "garments": ["trousers"], "due_days": 10},
    {"customer": "K-330", "text": "Coat sleeves and a shirt taper.", "garments": ["coat", "shirt"], "due_days": 7},
    {"customer": "K-341", "text": "Dress hem, jacket sleeves, trousers waist.", "garments": ["dress", "jacket", "trousers"], "due_days": 21},
    {"customer": "K-305", "text": "Jacket sides taken in.", "garments": ["jacket"], "due_days": 2},
]

CASES = [
    Case("tailor_measure", "tool_ignores_argument", "suit", "lookup_measurements", 2, "tool", "create_alteration_ticket", 1,
         "The measurement service ignores the garment argument and returns the jacket's measurements for the trousers."),
    Case("tailor_brief", "context_pollution", "suit", "brief_tailor", 1, "other", "create_alteration_ticket", 1,
         "The brief for the tailor carries a note from another customer's ticket, which the plan then applies to the jacket."),
    Case("tailor_plan", "plan_error", "suit", "ChatOpenAI", 2, "llm", "create_alteration_ticket", 1,
         "The alteration planner leaves the last garment of the order out of the plan."),
    Case("tailor_fitting", "subagent_wrong_entity", "dress", "book_fitting", 2, "tool", "create_alteration_ticket", 1,
         "The fitting sub-graph books the second fitting under the previous customer's number."),
    Case("tailor_rush", "wrong_tool_args", "dress", "price_alterations", 1, "tool", "create_alteration_ticket", 1,
         "The pricing call passes a 2-day rush although the order is due in 3 days, adding a rush surcharge the ticket check refuses."),
]


def policy(req):
    system, user = last_user(req)
    if system.startswith("You read tailoring"):
        data = json.loads(user)
        return json.dumps({"customer": data["customer"], "garments": data["garments"], "due_days": data["due_days"]})
    if system.startswith("You plan alterations"):
        data = json.loads(user)
        plan = [{"garment": g, "op": OPS[g][0] if i % 2 == 0 else OPS[g][-1]} for i, g in enumerate(data["garments"])]
        if active("tailor_plan"):
            plan = plan[:-1]
        for note in data["notes"]:
            plan.append({"garment": data["garments"][0], "op": note})
        return json.dumps(plan)
    return "ok"


@tool
def lookup_measurements(customer: str, garment: str) -> dict:
    """Measurements on file for one garment of a customer."""
    g = "jacket" if active("tailor_measure") else garment
    return {"customer": customer, "garment": garment, **MEASURES[g]}


@tool
def find_fitter(garment: str) -> str:
    """The fitter who takes this garment type."""
    return FITTERS[garment]


@tool
def book_fitting(customer: str, fitter: str, garment: str) -> dict:
    """Book a fitting slot."""
    return {"fitting": f"F-{customer[-3:]}-{garment[:3]}", "customer": customer, "fitter": fitter, "garment": garment}


@tool
def price_alterations(ops: list[str], rush_days: int) -> dict:
    """Price a list of operations; rush_days under 3 adds a 40% surcharge."""
    base = sum(PRICE[o] for o in ops)
    return {"base": base, "rush_surcharge": round(base * 0.4, 2) if rush_days < 3 else 0.0}


@tool
def create_alteration_ticket(ticket: dict) -> dict:
    """Open the workshop ticket; the workshop validates it."""
    errs = []
    cust = ticket["customer"]
    planned = [p["garment"] for p in ticket["plan"]]
    for g in ticket["garments"]:
        if g not in planned:
            errs.append(f"garment '{g}' has no planned operation")
    for p in ticket["plan"]:
        if p["op"] not in OPS[p["garment"]]:
            errs.append(f"'{p['op']}' is not an alteration offered for {p['garment']}")
    for m in ticket["measurements"]:
        if NEEDS[m["garment"]] not in m:
            errs.append(f"{m['garment']}: {NEEDS[m['garment']]} missing from measurements")
    for f in ticket["fittings"]:
        if f["customer"] != cust:
            errs.append(f"fitting {f['fitting']} is registered to {f['customer']}, not {cust}")
    if ticket["price"]["rush_surcharge"] and ticket["due_days"] >= 3:
        errs.append(f"rush surcharge on an order due in {ticket['due_days']} days")
    if errs:
        raise ValueError("ticket validation failed: " + "; ".join(errs))
    return {"ticket": f"AT-{cust[-3:]}{len(planned)}", "status": "open"}


class S(TypedDict, total=False):
    request: dict
    order: dict
    measurements: list
    brief: dict
    plan: list
    fittings: list
    ticket: dict
    last_customer: str


class FS(TypedDict, total=False):
    customer: str
    garments: list
    fitters: list
    fittings: list
    last_customer: str


def build(llm):
    parse_order = RunnableLambda(lambda text: json.loads(text), name="parse_order")
    parse_plan = RunnableLambda(lambda text: [p for p in json.loads(text) if p.get("garment")], name="parse_plan")

    def intake(state: S, config) -> dict:
        msg = llm.invoke([("system", "You read tailoring requests. Answer JSON."), ("user", json.dumps(state["request"], sort_keys=True))], config)
        return {"order": parse_order.invoke(msg.content, config)}

    def measure(state: S, config) -> dict:
        o = state["order"]
        return {"measurements": [lookup_measurements.invoke({"customer": o["customer"], "garment": g}, config) for g in o["garments"]]}

    def brief_tailor(state: S) -> dict:
        notes = []
        if active("tailor_brief"):
            notes.append("take in waist")  # carried over from ticket AT-2297
        return {"brief": {"customer": state["order"]["customer"], "garments": state["order"]["garments"],
                          "measurements": state["measurements"], "notes": notes}}

    def plan(state: S, config) -> dict:
        msg = llm.invoke([("system", "You plan alterations. Answer a JSON list."), ("user", json.dumps(state["brief"], sort_keys=True))], config)
        return {"plan": parse_plan.invoke(msg.content, config)}

    def pick(state: FS, config) -> dict:
        return {"fitters": [find_fitter.invoke({"garment": g}, config) for g in state["garments"]]}

    def book(state: FS, config) -> dict:
        out = []
        for i, (g, f) in enumerate(zip(state["garments"], state["fitters"])):
            who = state["last_customer"] if (active("tailor_fitting") and i == 1) else state["customer"]
            out.append(book_fitting.invoke({"customer": who, "fitter": f, "garment": g}, config))
        return {"fittings": out}

    sub = StateGraph(FS)
    sub.add_node("pick_fitters", pick)
    sub.add_node("book_fittings", book)
    sub.add_edge(START, "pick_fitters")
    sub.add_edge("pick_fitters", "book_fittings")
    sub.add_edge("book_fittings", END)
    fitting_graph = sub.compile()

    def fitting_room(state: S, config) -> dict:
        out = fitting_graph.invoke({"customer": state["order"]["customer"], "garments": state["order"]["garments"],
                                    "last_customer": state.get("last_customer", "K-000")}, config)
        return {"fittings": out["fittings"]}

    def finalize(state: S, config) -> dict:
        o = state["order"]
        rush = 2 if active("tailor_rush") else o["due_days"]
        price = price_alterations.invoke({"ops": [p["op"] for p in state["plan"]], "rush_days": rush}, config)
        ticket = {"customer": o["customer"], "garments": o["garments"], "plan": state["plan"], "measurements": state["measurements"],
                  "fittings": state["fittings"], "price": price, "due_days": o["due_days"]}
        return {"ticket": create_alteration_ticket.invoke({"ticket": ticket}, config)}

    g = StateGraph(S)
    for name, fn in [("intake", intake), ("measure", measure), ("brief_tailor", brief_tailor), ("plan", plan),
                     ("fitting_room", fitting_room), ("finalize", finalize)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    for a, b in [("intake", "measure"), ("measure", "brief_tailor"), ("brief_tailor", "plan"), ("plan", "fitting_room"),
                 ("fitting_room", "finalize")]:
        g.add_edge(a, b)
    g.add_edge("finalize", END)
    return g.compile()


def record(server, inp, path):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"alterations for {inp['customer']}")
    try:
        build(llm).invoke({"request": inp, "last_customer": "K-299"}, config={"callbacks": [tracer]})
    except Exception:
        pass
