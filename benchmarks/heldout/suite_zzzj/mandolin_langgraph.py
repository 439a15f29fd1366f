"""Mandolin luthier: repair-bench intake as a LangGraph ReAct loop with memory tools and a sub-graph.

Shape: intake node -> tool-calling model loop (MessagesState-style: parallel customer/history lookups,
two action measurements, two notebook writes, parts pricing, final quote text) -> parts specialist sub-graph
(its own model picks the instrument, a tool fetches the parts sheet) -> work-order node (notebook reads,
quote validator) -> bench scheduling node whose tool checks the set-up.
"""
from __future__ import annotations

import json
import re
from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from suitecommon import read_prompt

RUN_NAME = "mandolin-repair-bench"
ROUTE = "langgraph"
DOMAIN = "mandolin luthier"
SHAPE = "ReAct loop (model + ToolNode, 5 turns, parallel calls, notebook memory tools) then a sub-graph node and two checking nodes"

ACTIVE = ""

CUSTOMERS = {
    "C-118": {"name": "Rosa Iannone", "instruments": [{"serial": "MN-2231", "model": "A-5 oval hole"}, {"serial": "MN-1904", "model": "F-style Florentine"}]},
    "C-207": {"name": "Declan Hurley", "instruments": [{"serial": "MN-3310", "model": "F-style Florentine"}]},
    "C-311": {"name": "Ines Sottile", "instruments": [{"serial": "MN-0877", "model": "Neapolitan bowl-back"}, {"serial": "MN-2999", "model": "A-5 oval hole"}]},
    "C-402": {"name": "Tomas Vrba", "instruments": [{"serial": "MN-3120", "model": "A-5 oval hole"}]},
    "C-515": {"name": "Grace Oduya", "instruments": [{"serial": "MN-1450", "model": "F-style Florentine"}, {"serial": "MN-3402", "model": "Octave mandola"}]},
}
HISTORY = {
    "MN-2231": ["2022-03 setup", "2023-01 new strings", "2023-09 nut", "2024-05 setup", "2025-02 refret (24-month warranty)"],
    "MN-3310": ["2024-11 setup"],
    "MN-2999": ["2021-06 bridge", "2025-08 refret (24-month warranty)"],
    "MN-3120": ["2020-04 setup", "2021-10 nut", "2022-12 setup", "2023-07 tuners"],
    "MN-3402": ["2025-03 setup", "2025-12 new strings"],
}
ACTION_MM = {"MN-2231": (2.6, 2.2), "MN-3310": (2.8, 2.3), "MN-2999": (2.5, 2.1), "MN-3120": (3.1, 2.6), "MN-3402": (2.7, 2.4)}
PARTS = {"A-5 oval hole": {"bridge": "adjustable ebony A", "nut": "bone 29 mm"},
         "F-style Florentine": {"bridge": "compensated ebony F", "nut": "bone 28 mm"},
         "Neapolitan bowl-back": {"bridge": "fixed rosewood", "nut": "bone 26 mm"},
         "Octave mandola": {"bridge": "compensated ebony M", "nut": "bone 31 mm"}}
PRICES = {"setup": 85.0, "fret dress": 120.0, "strings": 18.0}
NOTEBOOK: dict[str, float] = {}

INPUTS = [
    {"ticket": "RB-7001", "customer": "C-118", "serial": "MN-2231", "model": "A-5 oval hole", "work": ["setup", "fret dress", "strings"]},
    {"ticket": "RB-7002", "customer": "C-207", "serial": "MN-3310", "model": "F-style Florentine", "work": ["setup", "strings"]},
    {"ticket": "RB-7003", "customer": "C-311", "serial": "MN-2999", "model": "A-5 oval hole", "work": ["fret dress", "strings"]},
    {"ticket": "RB-7004", "customer": "C-402", "serial": "MN-3120", "model": "A-5 oval hole", "work": ["setup"]},
    {"ticket": "RB-7005", "customer": "C-515", "serial": "MN-3402", "model": "Octave mandola", "work": ["setup", "strings"]},
]
CASES = [
    {"id": "man_parts_instrument", "input": 2, "switch": "first_instrument", "kind": "subagent_wrong_entity",
     "root": ("ChatOpenAI", 6), "failure": ("schedule_setup", 1),
     "description": "The parts specialist's model picks the customer's first instrument, a bowl-back, instead of the A-5 on the ticket."},
    {"id": "man_notebook_key", "input": 1, "switch": "note_collision", "kind": "bad_memory_write",
     "root": ("save_note", 2), "failure": ("schedule_setup", 1),
     "description": "The notebook files the treble-side action under the bass-side key, overwriting the bass reading."},
    {"id": "man_history_tail", "input": 0, "switch": "history_tail", "kind": "truncated_result",
     "root": ("list_repairs", 1), "failure": ("work_order", 1),
     "description": "The repair history returns only the first three entries, hiding the 2025 refret still under warranty."},
    {"id": "man_quote_total", "input": 4, "switch": "quote_total", "kind": "hallucinated_value",
     "root": ("ChatOpenAI", 5), "failure": ("work_order", 1),
     "description": "The model's closing quote states 89.00 EUR, a total no priced part adds up to."},
    {"id": "man_action_inches", "input": 3, "switch": "action_inches", "kind": "unit_error",
     "root": ("measure_action", 1), "failure": ("schedule_setup", 1),
     "description": "The action gauge reports the bass side in inches while the bench works in millimetres."},
]


@tool
def lookup_customer(customer: str) -> str:
    """Customer record with the instruments on their account."""
    return json.dumps({"customer": customer, **CUSTOMERS[customer]})


@tool
def list_repairs(serial: str) -> str:
    """Repair history of an instrument, oldest first."""
    entries = HISTORY.get(serial, [])
    if ACTIVE == "history_tail":
        entries = entries[:3]
    return json.dumps({"serial": serial, "repairs": entries})


@tool
def measure_action(serial: str, side: str) -> str:
    """String height at the 12th fret in millimetres."""
    bass, treble = ACTION_MM[serial]
    value = bass if side == "bass" else treble
    if ACTIVE == "action_inches" and side == "bass":
        value = round(value / 25.4, 3)
    return json.dumps({"serial": serial, "side": side, "action": value})


@tool
def save_note(key: str, value: float) -> str:
    """Write a reading into the bench notebook."""
    slot = key
    if ACTIVE == "note_collision" and key == "action_treble":
        slot = "action_bass"
    NOTEBOOK[slot] = value
    return json.dumps({"saved": key})


@tool
def recall_note(key: str) -> str:
    """Read a reading back from the bench notebook."""
    return json.dumps({"key": key, "value": NOTEBOOK.get(key)})


@tool
def price_parts(items: list[str]) -> str:
    """Price the listed bench jobs."""
    lines = [{"item": i, "eur": PRICES[i]} for i in items]
    return json.dumps({"lines": lines, "total_eur": round(sum(x["eur"] for x in lines), 2)})


@tool
def fetch_parts_sheet(serial: str, model: str) -> str:
    """Parts sheet (bridge, nut) for an instrument model."""
    return json.dumps({"serial": serial, "model": model, **PARTS[model]})


@tool
def schedule_setup(ticket: str, model: str, bass_mm: float, treble_mm: float, parts_model: str) -> str:
    """Book the set-up bench; rejects a set-up the bench cannot do."""
    if parts_model != model:
        raise ValueError(f"parts sheet is for a {parts_model}, ticket {ticket} is a {model}")
    if not (1.2 <= treble_mm <= 4.0 and 1.2 <= bass_mm <= 4.0):
        raise ValueError(f"action bass {bass_mm} mm / treble {treble_mm} mm outside the 1.2-4.0 mm bench range")
    if bass_mm <= treble_mm:
        raise ValueError(f"bass-side action {bass_mm} mm not above treble-side {treble_mm} mm: saddle cannot be cut")
    return json.dumps({"ticket": ticket, "bench": "B2", "day": "Thursday"})


TOOLS = [lookup_customer, list_repairs, measure_action, save_note, price_parts]


def _results(request) -> dict:
    out: dict[str, list] = {}
    msgs = request.body["messages"]
    names = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
    for m in msgs:
        if m["role"] == "tool":
            out.setdefault(names[m["tool_call_id"]], []).append(json.loads(m["content"]))
    return out


def policy(request):
    from trajdebug.testing import Reply, tool_call

    system, data = read_prompt(request)
    if system.startswith("You run the repair bench"):
        got = _results(request)
        if "lookup_customer" not in got:
            return Reply(tool_calls=(tool_call("lookup_customer", {"customer": data["customer"]}),
                                     tool_call("list_repairs", {"serial": data["serial"]})))
        if "measure_action" not in got:
            return Reply(tool_calls=(tool_call("measure_action", {"serial": data["serial"], "side": "bass"}),
                                     tool_call("measure_action", {"serial": data["serial"], "side": "treble"})))
        if "save_note" not in got:
            return Reply(tool_calls=tuple(tool_call("save_note", {"key": f"action_{r['side']}", "value": r["action"]}) for r in got["measure_action"]))
        if "price_parts" not in got:
            return Reply(tool_calls=(tool_call("price_parts", {"items": data["work"]}),))
        history = got["list_repairs"][0]["repairs"]
        warranty = any("refret" in h and h[:4] >= "2025" for h in history)
        total = got["price_parts"][0]["total_eur"]
        if ACTIVE == "quote_total":
            total = 89.0
        return f"Quote for {data['ticket']}: {total:.2f} EUR; refret warranty: {'yes' if warranty else 'no'}."
    if system.startswith("Pick the instrument"):
        instruments = data["instruments"]
        chosen = next(i for i in instruments if i["serial"] == data["serial"])
        if ACTIVE == "first_instrument":
            chosen = instruments[0]
        return json.dumps(chosen)
    raise ValueError(f"no answer for {system[:40]}")


class State(TypedDict, total=False):
    ticket: dict
    messages: Annotated[list, add_messages]
    parts: dict
    order: dict
    booking: dict


class PartsState(TypedDict, total=False):
    ticket: dict
    customer: dict
    pick: dict
    parts: dict


def build(llm):
    bench = llm.bind_tools(TOOLS)

    def intake(state: State) -> dict:
        t = state["ticket"]
        return {"messages": [SystemMessage("You run the repair bench intake: look up, measure, note, price, then quote."),
                             HumanMessage(json.dumps(t))]}

    def bench_agent(state: State) -> dict:
        return {"messages": [bench.invoke(state["messages"])]}

    def next_step(state: State) -> str:
        return "bench_tools" if state["messages"][-1].tool_calls else "parts_specialist"

    def pick_instrument(state: PartsState) -> dict:
        customer = json.loads(lookup_customer.invoke({"customer": state["ticket"]["customer"]}))
        msg = llm.invoke([SystemMessage("Pick the instrument this ticket is about; answer with its JSON record."),
                          HumanMessage(json.dumps({"serial": state["ticket"]["serial"], "instruments": customer["instruments"]}))])
        return {"customer": customer, "pick": json.loads(msg.content)}

    def parts_sheet(state: PartsState) -> dict:
        return {"parts": json.loads(fetch_parts_sheet.invoke({"serial": state["pick"]["serial"], "model": state["pick"]["model"]}))}

    sub = StateGraph(PartsState)
    sub.add_node("pick_instrument", pick_instrument)
    sub.add_node("parts_sheet", parts_sheet)
    sub.add_edge(START, "pick_instrument")
    sub.add_edge("pick_instrument", "parts_sheet")
    sub.add_edge("parts_sheet", END)
    parts_graph = sub.compile()

    def parts_specialist(state: State) -> dict:
        out = parts_graph.invoke({"ticket": state["ticket"]})
        return {"parts": out["parts"]}

    def work_order(state: State) -> dict:
        t = state["ticket"]
        bass = json.loads(recall_note.invoke({"key": "action_bass"}))["value"]
        treble = json.loads(recall_note.invoke({"key": "action_treble"}))["value"]
        quote_text = state["messages"][-1].content
        priced = None
        history = []
        for m in state["messages"]:
            if isinstance(m, ToolMessage) and m.name == "price_parts":
                priced = json.loads(m.content)["total_eur"]
            if isinstance(m, ToolMessage) and m.name == "list_repairs":
                history = json.loads(m.content)["repairs"]
        quoted = float(re.search(r"(\d+\.\d\d) EUR", quote_text).group(1))
        warranty = "warranty: yes" in quote_text
        if abs(quoted - priced) > 0.01:
            raise ValueError(f"work order {t['ticket']}: quoted {quoted:.2f} EUR but priced jobs total {priced:.2f} EUR")
        if "fret dress" in t["work"] and not warranty and quoted > 0 and t["ticket"] in WARRANTY_CLAIMS:
            raise ValueError(f"work order {t['ticket']}: customer claims the refret warranty, quote charges fret dress in full ({len(history)} repairs on file)")
        return {"order": {"ticket": t["ticket"], "bass_mm": bass, "treble_mm": treble, "eur": quoted, "warranty": warranty}}

    def book_bench(state: State) -> dict:
        o, t = state["order"], state["ticket"]
        booking = json.loads(schedule_setup.invoke({"ticket": t["ticket"], "model": t["model"], "bass_mm": o["bass_mm"],
                                                    "treble_mm": o["treble_mm"], "parts_model": state["parts"]["model"]}))
        return {"booking": booking}

    g = StateGraph(State)
    g.add_node("intake", intake)
    g.add_node("bench_agent", bench_agent)
    g.add_node("bench_tools", ToolNode(TOOLS))
    g.add_node("parts_specialist", parts_specialist)
    g.add_node("work_order", work_order)
    g.add_node("book_bench", book_bench)
    g.add_edge(START, "intake")
    g.add_edge("intake", "bench_agent")
    g.add_conditional_edges("bench_agent", next_step, ["bench_tools", "parts_specialist"])
    g.add_edge("bench_tools", "bench_agent")
    g.add_edge("parts_specialist", "work_order")
    g.add_edge("work_order", "book_bench")
    g.add_edge("book_bench", END)
    return g.compile()


WARRANTY_CLAIMS = {"RB-7001", "RB-7003"}


def record(server, inp: dict, path: str) -> None:
    from langchain_openai import ChatOpenAI

    from trajdebug.integrations.langchain import TrajdebugTracer

    server.use(policy)
    NOTEBOOK.clear()
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=path, name=RUN_NAME, task=f"repair ticket {inp['ticket']}")
    try:
        build(llm).invoke({"ticket": inp}, config={"callbacks": [tracer]})
    except Exception:
        pass
