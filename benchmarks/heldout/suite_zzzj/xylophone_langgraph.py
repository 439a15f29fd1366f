"""Xylophone maker's orders: quote desk as a LangGraph StateGraph (ChatOpenAI against the fake server).

Shape: intake node -> model spec extraction node -> spec parser node -> resonator table node (a retriever)
-> bar planning node (model with bound tools, parallel tool calls, ToolNode loop) -> bar collection node ->
conditional route (catalogue or custom quote) -> pricing node (tool) -> resonator cutting node (tool) ->
quote schema validation node.
"""
from __future__ import annotations

import json
import re
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from suitecommon import read_prompt

RUN_NAME = "xylophone-quote-desk"
ROUTE = "langgraph"
DOMAIN = "xylophone maker's orders"
SHAPE = "StateGraph: 2 model nodes (one a tool-calling loop with parallel calls), retriever node, conditional route, tool nodes, schema-check node"

ACTIVE = ""

NOTES = "C C# D D# E F F# G G# A A# B".split()
RESONATOR_DOCS = [
    Document(page_content="Xylophone resonator table: closed tubes, quarter wave, length_cm = 8575 / (4 * f) - 0.6 * radius",
             metadata={"table": "xylophone-closed-tube", "instrument": "xylophone", "factor": 0.25}),
    Document(page_content="Marimba resonator table: closed tubes tuned one octave lower than the bar, length_cm = 8575 / (2 * f)",
             metadata={"table": "marimba-octave-tube", "instrument": "marimba", "factor": 0.5}),
    Document(page_content="Vibraphone resonator table: tubes with rotating fans, length_cm = 8575 / (4 * f)",
             metadata={"table": "vibraphone-fan-tube", "instrument": "vibraphone", "factor": 0.25}),
]
WOOD_EUR = {("rosewood", "concert"): 31.0, ("rosewood", "student"): 18.5, ("padauk", "concert"): 19.0,
            ("padauk", "student"): 11.0, ("synthetic", "student"): 7.5, ("synthetic", "concert"): 9.0}
INPUTS = [
    {"order": "XO-5101", "bar_count": 37, "budget_eur": 2600, "frame_depth_cm": 48,
     "message": "Concert xylophone, range C4-C7, rosewood, concert grade, tuned to A442, with resonators."},
    {"order": "XO-5102", "bar_count": 44, "budget_eur": 1400, "frame_depth_cm": 60,
     "message": "School xylophone, range F3-C7, padauk, student grade, tuned to A440, with resonators."},
    {"order": "XO-5103", "bar_count": 30, "budget_eur": 760, "frame_depth_cm": 40,
     "message": "Practice xylophone, range C5-F7, synthetic, student grade, tuned to A442, custom engraving on the frame."},
    {"order": "XO-5104", "bar_count": 42, "budget_eur": 2100, "frame_depth_cm": 48,
     "message": "Orchestra xylophone, range G3-C7, padauk, concert grade, tuned to A443, with resonators."},
    {"order": "XO-5105", "bar_count": 49, "budget_eur": 3300, "frame_depth_cm": 52,
     "message": "Solo xylophone, range C3-C7, rosewood, concert grade, tuned to A442, custom engraving on the frame."},
]
CASES = [
    {"id": "xyl_pitch_args", "input": 0, "switch": "pitch_440", "kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 2), "failure": ("validate_quote", 1),
     "description": "The bar-planning model asks the tuning table for A440 although the order is tuned to A442."},
    {"id": "xyl_marimba_table", "input": 1, "switch": "marimba_table", "kind": "wrong_retrieval",
     "root": ("ResonatorTables", 1), "failure": ("cut_resonators", 1),
     "description": "The resonator search returns the marimba octave-tube table for a xylophone order."},
    {"id": "xyl_custom_route", "input": 4, "switch": "route_catalogue", "kind": "wrong_routing",
     "root": ("choose_quote_path", 1), "failure": ("validate_quote", 1),
     "description": "An order asking for custom engraving is routed to the catalogue quote, which carries no engraving line."},
    {"id": "xyl_range_text", "input": 3, "switch": "range_words", "kind": "format_drift",
     "root": ("ChatOpenAI", 1), "failure": ("validate_quote", 1),
     "description": "The spec model writes the range as 'G3 to C7' instead of 'G3-C7', and the parser falls back to the standard C4-C7 range."},
    {"id": "xyl_grade_price", "input": 2, "switch": "grade_ignored", "kind": "tool_ignores_argument",
     "root": ("wood_price", 1), "failure": ("validate_quote", 1),
     "description": "The wood price tool ignores the grade it is given and prices student bars at concert rates."},
]


def note_freq(note: str, pitch_hz: float) -> float:
    name, octave = note[:-1], int(note[-1])
    semis = NOTES.index(name) + 12 * (octave + 1) - 69
    return round(pitch_hz * 2 ** (semis / 12), 2)


def note_range(low: str, high: str) -> list[str]:
    def idx(n):
        return NOTES.index(n[:-1]) + 12 * int(n[-1])
    return [f"{NOTES[i % 12]}{i // 12}" for i in range(idx(low), idx(high) + 1)]


def policy(request):
    system, data = read_prompt(request)
    if system.startswith("Extract the instrument spec"):
        text = data["message"]
        low, high = re.search(r"range ([A-G]#?\d)-([A-G]#?\d)", text).groups()
        rng = f"{low}-{high}"
        if ACTIVE == "range_words":
            rng = f"{low} to {high}"
        wood = re.search(r"(rosewood|padauk|synthetic)", text).group(1)
        return json.dumps({"range": rng, "wood": wood, "grade": re.search(r"(concert|student) grade", text).group(1),
                           "pitch_hz": int(re.search(r"A(4\d\d)", text).group(1)), "resonators": "with resonators" in text,
                           "engraving": "engraving" in text})
    if system.startswith("Plan the bar schedule"):
        tool_msgs = [m for m in request.body["messages"] if m["role"] == "tool"]
        if not tool_msgs:
            pitch = data["pitch_hz"]
            if ACTIVE == "pitch_440":
                pitch = 440
            octaves = sorted({int(n[-1]) for n in data["notes"]})
            return {"__calls__": [("lookup_tuning", {"octave": o, "pitch_hz": pitch, "notes": [n for n in data["notes"] if int(n[-1]) == o]}) for o in octaves]}
        return f"Bar schedule ready for {len(data['notes'])} bars."
    raise ValueError(f"no answer for {system[:40]}")


def _wrap(pol):
    from trajdebug.testing import Reply, tool_call

    def answer(request):
        out = pol(request)
        if isinstance(out, dict) and "__calls__" in out:
            return Reply(tool_calls=tuple(tool_call(n, a) for n, a in out["__calls__"]))
        return out
    return answer


class ResonatorTables(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        instrument = "xylophone"
        if ACTIVE == "marimba_table":
            instrument = "marimba"
        return [d for d in RESONATOR_DOCS if d.metadata["instrument"] == instrument]


@tool
def lookup_tuning(octave: int, pitch_hz: float, notes: list[str]) -> dict:
    """Bar frequencies for one octave of notes at the given concert pitch."""
    return {"octave": octave, "pitch_hz": pitch_hz, "bars": {n: note_freq(n, pitch_hz) for n in notes}}


@tool
def wood_price(wood: str, grade: str, bars: int) -> dict:
    """Price of tone bars in the given wood and grade."""
    used_grade = grade
    if ACTIVE == "grade_ignored":
        used_grade = "concert"
    unit = WOOD_EUR[(wood, used_grade)]
    return {"wood": wood, "grade": grade, "bars": bars, "unit_eur": unit, "bars_eur": round(unit * bars, 2)}


@tool
def cut_resonators(factor: float, bars: dict, frame_depth_cm: float) -> dict:
    """Cut list of resonator tubes for the bar frequencies."""
    lengths = {n: round(34300 * factor / f, 1) for n, f in bars.items()}
    longest = max(lengths, key=lengths.get)
    if lengths[longest] > frame_depth_cm:
        raise ValueError(f"tube for {longest} would be {lengths[longest]} cm, deeper than the {frame_depth_cm} cm frame")
    return {"tubes": len(lengths), "longest_cm": lengths[longest]}


class State(TypedDict, total=False):
    request: dict
    spec_text: str
    spec: dict
    table: dict
    messages: Annotated[list, add_messages]
    bars: dict
    quote: dict
    path: str
    resonators: dict


def build(llm):
    planner = llm.bind_tools([lookup_tuning])

    def intake(state: State) -> dict:
        req = dict(state["request"])
        req["message"] = req["message"].strip()
        return {"request": req}

    def extract_spec(state: State) -> dict:
        msg = llm.invoke([SystemMessage("Extract the instrument spec as JSON: range, wood, grade, pitch_hz, resonators, engraving."),
                          HumanMessage(json.dumps({"message": state["request"]["message"]}))])
        return {"spec_text": msg.content}

    def parse_spec(state: State) -> dict:
        spec = json.loads(state["spec_text"])
        m = re.fullmatch(r"([A-G]#?\d)-([A-G]#?\d)", spec["range"])
        low, high = m.groups() if m else ("C4", "C7")
        spec["notes"] = note_range(low, high)
        return {"spec": spec}

    def resonator_tables(state: State) -> dict:
        if not state["spec"]["resonators"]:
            return {"table": {}}
        [doc] = ResonatorTables().invoke("xylophone resonator tube lengths")
        return {"table": dict(doc.metadata)}

    def plan_bars(state: State) -> dict:
        msgs = state.get("messages") or [SystemMessage("Plan the bar schedule: call lookup_tuning per octave."),
                                         HumanMessage(json.dumps({"notes": state["spec"]["notes"], "pitch_hz": state["spec"]["pitch_hz"]}))]
        reply = planner.invoke(msgs)
        return {"messages": ([] if state.get("messages") else msgs) + [reply]}

    def after_plan(state: State) -> str:
        last = state["messages"][-1]
        return "tuning_tools" if getattr(last, "tool_calls", None) else "collect_bars"

    def collect_bars(state: State) -> dict:
        bars: dict[str, float] = {}
        for m in state["messages"]:
            if isinstance(m, ToolMessage):
                bars.update(json.loads(m.content)["bars"])
        return {"bars": bars}

    def choose_quote_path(state: State) -> str:
        path = "custom_quote" if state["spec"]["engraving"] else "catalogue_quote"
        if ACTIVE == "route_catalogue":
            path = "catalogue_quote"
        return path

    def catalogue_quote(state: State) -> dict:
        spec = state["spec"]
        price = wood_price.invoke({"wood": spec["wood"], "grade": spec["grade"], "bars": len(state["bars"])})
        return {"quote": {"order": state["request"]["order"], "bars": len(state["bars"]), "lines": [
            {"item": f"{spec['wood']} bars", "eur": price["bars_eur"]}, {"item": "frame", "eur": 420.0}], "path": "catalogue"}}

    def custom_quote(state: State) -> dict:
        spec = state["spec"]
        price = wood_price.invoke({"wood": spec["wood"], "grade": spec["grade"], "bars": len(state["bars"])})
        return {"quote": {"order": state["request"]["order"], "bars": len(state["bars"]), "lines": [
            {"item": f"{spec['wood']} bars", "eur": price["bars_eur"]}, {"item": "frame", "eur": 420.0},
            {"item": "engraving", "eur": 95.0}], "path": "custom"}}

    def resonators(state: State) -> dict:
        if not state["table"]:
            return {"resonators": {"tubes": 0}}
        cut = cut_resonators.invoke({"factor": state["table"]["factor"], "bars": state["bars"],
                                     "frame_depth_cm": state["request"]["frame_depth_cm"]})
        return {"resonators": cut}

    def validate_quote(state: State) -> dict:
        req, quote, spec = state["request"], state["quote"], state["spec"]
        problems = []
        if quote["bars"] != req["bar_count"]:
            problems.append(f"quote has {quote['bars']} bars, order form says {req['bar_count']}")
        if spec["engraving"] and not any(line["item"] == "engraving" for line in quote["lines"]):
            problems.append("order asks for engraving, quote has no engraving line")
        total = round(sum(line["eur"] for line in quote["lines"]), 2)
        if total > req["budget_eur"]:
            problems.append(f"quote total {total} EUR exceeds the approved budget of {req['budget_eur']} EUR")
        a4 = state["bars"].get("A4")
        if a4 is not None and abs(a4 - spec["pitch_hz"]) > 0.5:
            problems.append(f"A4 bar scheduled at {a4} Hz, order is tuned to A{spec['pitch_hz']}")
        if problems:
            raise ValueError(f"quote {quote['order']} failed validation: " + "; ".join(problems))
        return {"quote": {**quote, "total_eur": total, "status": "valid"}}

    g = StateGraph(State)
    for name, fn in [("intake", intake), ("extract_spec", extract_spec), ("parse_spec", parse_spec),
                     ("resonator_tables", resonator_tables), ("plan_bars", plan_bars), ("collect_bars", collect_bars),
                     ("catalogue_quote", catalogue_quote), ("custom_quote", custom_quote), ("resonators", resonators),
                     ("validate_quote", validate_quote)]:
        g.add_node(name, fn)
    g.add_node("tuning_tools", ToolNode([lookup_tuning]))
    g.add_edge(START, "intake")
    g.add_edge("intake", "extract_spec")
    g.add_edge("extract_spec", "parse_spec")
    g.add_edge("parse_spec", "resonator_tables")
    g.add_edge("resonator_tables", "plan_bars")
    g.add_conditional_edges("plan_bars", after_plan, ["tuning_tools", "collect_bars"])
    g.add_edge("tuning_tools", "plan_bars")
    g.add_conditional_edges("collect_bars", choose_quote_path, ["catalogue_quote", "custom_quote"])
    g.add_edge("catalogue_quote", "resonators")
    g.add_edge("custom_quote", "resonators")
    g.add_edge("resonators", "validate_quote")
    g.add_edge("validate_quote", END)
    return g.compile()


def record(server, inp: dict, path: str) -> None:
    from langchain_openai import ChatOpenAI

    from trajdebug.integrations.langchain import TrajdebugTracer

    server.use(_wrap(policy))
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=path, name=RUN_NAME, task=f"xylophone quote {inp['order']}")
    try:
        build(llm).invoke({"request": inp}, config={"callbacks": [tracer]})
    except Exception:
        pass
