"""Sports massage clinic (LangGraph): triage model, client history, memory note, routed desk with slot model,
context, plan model, plan parse, booking."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, last_user
from .kit import active

AGENT, ROUTE, DOMAIN = "sports-massage-booker", "langgraph", "sports massage clinic"
SHAPE = "triage LLM -> history tool -> memory node -> router node -> (rehab | deep tissue) desk: slots tool + slot LLM -> context node -> plan LLM -> parse node -> book node"

CLIENTS = {
    "C-88": {"name": "Priya N.", "allergies": ["arnica"], "post_op": True, "sessions": [{"date": "2027-02-10", "area": "hamstring", "minutes": 45}]},
    "C-91": {"name": "Tom B.", "allergies": [], "post_op": False, "sessions": [{"date": "2027-02-01", "area": "calf", "minutes": 60}]},
    "C-12": {"name": "Ana G.", "allergies": [], "post_op": False, "sessions": []},
    "C-40": {"name": "Lee K.", "allergies": ["lanolin"], "post_op": False, "sessions": [{"date": "2027-01-20", "area": "shoulder", "minutes": 30}]},
    "C-57": {"name": "Rui M.", "allergies": [], "post_op": True, "sessions": []},
    "C-63": {"name": "Jo W.", "allergies": ["arnica"], "post_op": False, "sessions": []},
}
THERAPISTS = {"rehab": ("T-2", ["09:00", "11:00", "15:00"]), "deep_tissue": ("T-4", ["10:00", "13:00", "17:30"])}

INPUTS = {
    "priya": {"client": "C-88", "date": "2027-03-04", "text": "C-88: hamstring strain after knee surgery, sprinter, wants 75 min"},
    "tom": {"client": "C-91", "date": "2027-03-05", "text": "C-91: tight calf, marathon block, wants 60 min"},
    "r1": {"client": "C-12", "date": "2027-03-02", "text": "C-12: stiff lower back, rower, wants 45 min"},
    "r2": {"client": "C-40", "date": "2027-03-03", "text": "C-40: shoulder impingement, swimmer, wants 30 min"},
    "r3": {"client": "C-57", "date": "2027-03-08", "text": "C-57: quad tightness after ACL surgery, footballer, wants 60 min"},
    "r4": {"client": "C-63", "date": "2027-03-09", "text": "C-63: sore forearms, climber, wants 45 min"},
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    Case("massage-1", "bad_memory_write", "remember_client", 1, "book_session", 1, "priya",
         "The memory node writes the client note without the allergy list, so the plan model adds arnica gel."),
    Case("massage-2", "wrong_routing", "route_desk", 1, "book_session", 1, "priya",
         "The router sends a post-operative client to the deep tissue desk."),
    Case("massage-3", "context_pollution", "build_context", 1, "book_session", 1, "tom",
         "The context node carries the previous client's notes into this client's plan prompt."),
    Case("massage-4", "lossy_parsing", "parse_plan", 1, "book_session", 1, "priya",
         "The plan parser reads only the first digit of the session length."),
    Case("massage-5", "hallucinated_value", "ChatOpenAI", 2, "book_session", 1, "tom",
         "The slot model answers with a start time the therapist never offered."),
]

_LAST_CONTEXT: dict = {"notes": "C-40 Lee K.: shoulder, 30 min; avoid lanolin; area shoulder"}


class ClinicState(TypedDict, total=False):
    client: str
    date: str
    request: str
    triage: dict
    history: dict
    memory: dict
    desk: str
    slot: dict
    context: str
    plan_text: str
    plan: dict
    booking: dict


def policy(request):
    p = last_user(request)
    if p.startswith("TRIAGE"):
        m = re.search(r"(C-\d+): (.+?) (?:strain|tightness|impingement|tight|stiff|sore)?", p)
        area = next(a for a in ("hamstring", "calf", "lower back", "shoulder", "quad", "forearm") if a in p)
        minutes = int(re.search(r"wants (\d+) min", p).group(1))
        return json.dumps({"client": m.group(1), "area": area, "post_op": "surgery" in p, "minutes": minutes})
    if p.startswith("SLOT"):
        d = json.loads(p.split("\n", 1)[1])
        if active("massage-5"):
            return json.dumps({"therapist": d["therapist"], "time": "14:30"})
        return json.dumps({"therapist": d["therapist"], "time": d["slots"][1]})
    if p.startswith("PLAN"):
        d = json.loads(p.split("\n", 1)[1])
        ctx = d["context"]
        area = d["area"]
        m = re.search(r"area (\w[\w ]*?)$", ctx)
        if m:
            area = m.group(1)
        balm = "arnica gel" if "arnica" not in ctx else "plain oil"
        return f"Plan: {d['minutes']} min on {area} using {balm}; gentle progression."
    return "{}"


@tool
def client_history(client: str) -> str:
    """The clinic record of a client."""
    return json.dumps({"client": client, **CLIENTS[client]})


@tool
def therapist_slots(specialty: str, date: str) -> str:
    """Free slots of the desk's therapist on a date."""
    t, slots = THERAPISTS[specialty]
    return json.dumps({"therapist": t, "date": date, "slots": slots})


class BookingRefused(Exception):
    pass


def build(llm) -> Any:
    def triage(state: ClinicState) -> dict:
        msg = llm.invoke([("system", "Triage sports massage requests as JSON."), ("user", "TRIAGE\n" + state["request"])])
        return {"triage": json.loads(msg.content)}

    def load_history(state: ClinicState) -> dict:
        return {"history": json.loads(client_history.invoke({"client": state["client"]}))}

    def remember_client(state: ClinicState) -> dict:
        h = state["history"]
        mem = {"client": h["client"], "name": h["name"], "post_op": h["post_op"], "allergies": list(h["allergies"])}
        if active("massage-1"):
            mem = {k: v for k, v in mem.items() if k != "allergies"}
        return {"memory": mem}

    def route_desk(state: ClinicState) -> dict:
        post_op = state["memory"]["post_op"] or state["triage"]["post_op"]
        if active("massage-2"):
            post_op = state["triage"]["minutes"] < 60
        return {"desk": "rehab" if post_op else "deep_tissue"}

    def desk(specialty: str):
        def run_desk(state: ClinicState) -> dict:
            offered = json.loads(therapist_slots.invoke({"specialty": specialty, "date": state["date"]}))
            msg = llm.invoke([("system", "Pick a slot from the offered list."), ("user", "SLOT\n" + json.dumps(offered))])
            return {"slot": {**json.loads(msg.content), "date": state["date"], "desk": specialty}}
        return run_desk

    def build_context(state: ClinicState) -> dict:
        mem = state["memory"]
        notes = f"{mem['client']} {mem['name']}: allergies {', '.join(mem.get('allergies', [])) or 'none recorded'}"
        if active("massage-3"):
            notes = notes + "\n" + _LAST_CONTEXT["notes"]
        return {"context": notes}

    def plan_session(state: ClinicState) -> dict:
        payload = json.dumps({"area": state["triage"]["area"], "minutes": state["triage"]["minutes"], "context": state["context"]})
        msg = llm.invoke([("system", "Write a one-line session plan."), ("user", "PLAN\n" + payload)])
        return {"plan_text": msg.content}

    def parse_plan(state: ClinicState) -> dict:
        text = state["plan_text"]
        pat = r"(\d)" if active("massage-4") else r"(\d+) min"
        minutes = int(re.search(pat, text).group(1))
        area = re.search(r"min on (.+?) using", text).group(1)
        balm = re.search(r"using (.+?);", text).group(1)
        return {"plan": {"minutes": minutes, "area": area, "balm": balm}}

    def book_session(state: ClinicState) -> dict:
        c = CLIENTS[state["client"]]
        plan, slot, tri = state["plan"], state["slot"], state["triage"]
        if plan["minutes"] % 15 or plan["minutes"] < 30:
            raise BookingRefused(f"clinic API 422: session length {plan['minutes']} min is not a bookable length (30-90, in 15 min units)")
        if c["post_op"] and slot["desk"] != "rehab":
            raise BookingRefused(f"clinic API 422: therapist {slot['therapist']} ({slot['desk']}) is not cleared for post-operative client {state['client']}")
        tid, slots = THERAPISTS[slot["desk"]]
        if slot["time"] not in slots:
            raise BookingRefused(f"clinic API 409: slot {slot['date']} {slot['time']} is not offered by {tid}")
        if plan["area"] != tri["area"]:
            raise BookingRefused(f"clinic API 422: plan area '{plan['area']}' does not match the intake area '{tri['area']}' for {state['client']}")
        for a in c["allergies"]:
            if a in plan["balm"]:
                raise BookingRefused(f"clinic API 409: plan for {state['client']} uses {plan['balm']}; client record lists allergy '{a}'")
        return {"booking": {"client": state["client"], "slot": slot, "minutes": plan["minutes"]}}

    g = StateGraph(ClinicState)
    for name, fn in [("triage", triage), ("load_history", load_history), ("remember_client", remember_client),
                     ("route_desk", route_desk), ("rehab_desk", desk("rehab")), ("deep_tissue_desk", desk("deep_tissue")),
                     ("build_context", build_context), ("plan_session", plan_session), ("parse_plan", parse_plan),
                     ("book_session", book_session)]:
        g.add_node(name, fn)
    g.add_edge(START, "triage")
    g.add_edge("triage", "load_history")
    g.add_edge("load_history", "remember_client")
    g.add_edge("remember_client", "route_desk")
    g.add_conditional_edges("route_desk", lambda s: s["desk"] + "_desk", ["rehab_desk", "deep_tissue_desk"])
    g.add_edge("rehab_desk", "build_context")
    g.add_edge("deep_tissue_desk", "build_context")
    g.add_edge("build_context", "plan_session")
    g.add_edge("plan_session", "parse_plan")
    g.add_edge("parse_plan", "book_session")
    g.add_edge("book_session", END)
    return g.compile()


def record(inp: dict, path: Path, base_url: str) -> None:
    llm = ChatOpenAI(base_url=base_url, api_key="not-needed", model="ops-model", max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=inp["text"])
    try:
        build(llm).invoke({"client": inp["client"], "date": inp["date"], "request": inp["text"]}, config={"callbacks": [tracer]})
    except BookingRefused:
        pass
