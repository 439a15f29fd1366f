"""langgraph route: a real StateGraph whose model nodes call ChatOpenAI (pointed at the fake model server),
whose tools are LangChain tools, with the check as a compiled sub-graph; recorded with TrajdebugTracer."""
from __future__ import annotations

import json
import operator
import re
from typing import Annotated, Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from core import ValidationFailed, fast_client
from trajdebug.integrations.langchain import TrajdebugTracer


class JobState(TypedDict, total=False):
    request: dict
    catalogue: dict
    cap: float
    plan_text: str
    order: list
    idx: int
    entry: dict
    est_text: str
    parsed: dict
    quote: dict
    conv: dict
    lines: Annotated[list, operator.add]
    history: Annotated[list, operator.add]
    check: dict
    total: float
    channel: str
    note: str
    note_read: dict
    result: dict


class CheckState(TypedDict, total=False):
    request: dict
    target: dict
    record: dict
    summary: str
    check: dict


def _ask(llm, role, payload):
    msg = llm.invoke([SystemMessage(content=f"role: {role}"), HumanMessage(content=json.dumps(payload))])
    return msg.content


def build(A, inp, llm):
    V = A.v
    by_id = {it["id"]: it for it in inp["items"]}
    attempts: dict[int, int] = {}

    def _catalogue(ref: str, date: str, ids: list[str]) -> dict:
        return A.catalogue(inp)

    def _quote(item_id: str, qty: int, position: int) -> dict:
        attempts[position] = attempts.get(position, 0) + 1
        if position == V.get("flaky", 1) and attempts[position] == 1:
            raise ConnectionError(f"{V['tool']} connection reset")
        return A.quote(item_id, qty, position)

    def _hold(item_id: str) -> dict:
        return A.hold_record(inp, item_id)

    cat_tool = StructuredTool.from_function(_catalogue, name=V["catalog"], description="Search the catalogue.")
    quote_tool = StructuredTool.from_function(_quote, name=V["tool"], description="Price one item.")
    hold_tool = StructuredTool.from_function(_hold, name=V["sub_tool"], description="Fetch the check record.")

    # ---- the check sub-graph ----
    def resolve(s: CheckState):
        req = s["request"]
        text = _ask(llm, "resolve", {"flag": req["flag"], "ids": [it["id"] for it in req["items"]]})
        return {"target": json.loads(text)}

    def lookup(s: CheckState):
        return {"record": hold_tool.invoke({"item_id": s["target"]["id"]})}

    def summarise(s: CheckState):
        return {"summary": _ask(llm, "summarise", {"record": s["record"], "date": s["request"]["date"]})}

    def parse_summary(s: CheckState):
        return {"check": json.loads(s["summary"])}

    sg = StateGraph(CheckState)
    for name, fn in ((V["sub_llm"], resolve), (V["sub_tool"] + "_node", lookup), (V["sub_sum"], summarise),
                     (V["sub_parse"], parse_summary)):
        sg.add_node(name, fn)
    sg.add_edge(START, V["sub_llm"])
    sg.add_edge(V["sub_llm"], V["sub_tool"] + "_node")
    sg.add_edge(V["sub_tool"] + "_node", V["sub_sum"])
    sg.add_edge(V["sub_sum"], V["sub_parse"])
    sg.add_edge(V["sub_parse"], END)
    check_graph = sg.compile()

    def run_check(s: JobState):
        out = check_graph.invoke({"request": s["request"]})
        return {"check": out["check"]}

    # ---- the main graph ----
    def read_request(s: JobState):
        return {"request": {"ref": inp["ref"], "date": inp["date"], A.cap_noun: inp["cap"], "flag": inp["flag"],
                            "items": [dict(it, note=A.note_for(it)) for it in inp["items"]]}, "idx": 0}

    def load_catalogue(s: JobState):
        req = s["request"]
        return {"catalogue": cat_tool.invoke({"ref": req["ref"], "date": req["date"], "ids": list(by_id)})}

    def remember_cap(s: JobState):
        return {"cap": A.store_cap(s["request"][A.cap_noun])}

    def plan(s: JobState):
        return {"plan_text": _ask(llm, "plan", {"ref": inp["ref"], "items": [
            {"id": it["id"], "qty": it["qty"]} for it in s["request"]["items"]]})}

    def parse_plan(s: JobState):
        return {"order": A.parse_plan(s["plan_text"])}

    def match_entry(s: JobState):
        item = by_id[s["order"][s["idx"]]]
        return {"entry": A.lookup_rate(s["catalogue"], item)}

    def estimate(s: JobState):
        idx, order = s["idx"], s["order"]
        item = by_id[order[idx]]
        text = _ask(llm, "estimate", {"position": idx, "item": item["id"], "note": A.note_for(item),
                                      "neighbour": order[(idx + 1) % len(order)],
                                      "history": s.get("history", [])[-2:]})
        return {"est_text": text, "history": [A.note_for(item)]}

    def parse_estimate(s: JobState):
        return {"parsed": A.parse_estimate(s["est_text"], s["idx"])}

    def quote(s: JobState):
        args = {"item_id": s["parsed"]["id"], "qty": s["parsed"]["qty"], "position": s["idx"]}
        for attempt in (1, 2):
            try:
                return {"quote": quote_tool.invoke(args)}
            except ConnectionError:
                if attempt == 2:
                    raise
        raise AssertionError

    def convert(s: JobState):
        return {"conv": A.convert(s["quote"], s["idx"])}

    def record_line(s: JobState):
        item_id = s["order"][s["idx"]]
        return {"lines": [A.line(item_id, s["entry"], s["conv"])], "idx": s["idx"] + 1}

    def more(s: JobState):
        return "next" if s["idx"] < len(s["order"]) else "done"

    def total(s: JobState):
        return {"total": A.total(s["lines"])}

    def route(s: JobState):
        return {"channel": A.channel(s["total"], s["cap"])}

    def note(s: JobState):
        return {"note": _ask(llm, "note", {"ref": inp["ref"], "lines": len(s["lines"]), "total": s["total"],
                                           "channel": s["channel"]})}

    def parse_note(s: JobState):
        m = re.search(r"total ([\d.]+) (\w+), channel (\w+)", s["note"])
        if not m:
            return {"note_read": {"stated_total": None, "text": s["note"]}}
        return {"note_read": {"stated_total": float(m.group(1)), "currency": m.group(2), "channel": m.group(3)}}

    def validate(s: JobState):
        return {"result": A.validate(inp, s["lines"], s["check"], s["total"], s["channel"], s["note"])}

    g = StateGraph(JobState)
    chain = [(V["request"], read_request), (V["catalog"] + "_node", load_catalogue), (V["cap"], remember_cap),
             (V["plan"], plan), (V["parse_plan"], parse_plan)]
    loop = [(V["lookup"], match_entry), (V["estimate"], estimate), (V["parse_est"], parse_estimate),
            (V["tool"] + "_node", quote), (V["convert"], convert), (V["record"], record_line)]
    tail = [(V["total"], total), (V["route"], route), (V["note"], note), (V["parse_note"], parse_note)]
    sub = [(V["sub"], run_check)]
    if V.get("sub_first"):
        chain, after = chain + sub, list(tail)
    else:
        after = (sub + tail) if not V.get("sub_late") else (tail + sub)
    after.append((V["validate"], validate))
    for name, fn in chain + loop + after:
        g.add_node(name, fn)
    seq = [n for n, _ in chain] + [loop[0][0]]
    for a, b in zip(seq, seq[1:]):
        g.add_edge(a, b)
    g.add_edge(START, chain[0][0])
    for (a, _), (b, _) in zip(loop, loop[1:]):
        g.add_edge(a, b)
    g.add_conditional_edges(loop[-1][0], more, {"next": loop[0][0], "done": after[0][0]})
    for (a, _), (b, _) in zip(after, after[1:]):
        g.add_edge(a, b)
    g.add_edge(after[-1][0], END)
    return g.compile()


def record(A, inp, path, server):
    server.use(A.chat_brain)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0,
                     temperature=0, http_client=fast_client())
    graph = build(A, inp, llm)
    tracer = TrajdebugTracer(path=str(path), name=A.name, task=f"{A.v['task']} {inp['ref']}")
    try:
        graph.invoke({}, config={"callbacks": [tracer], "recursion_limit": 200})
    except ValidationFailed:
        pass


def root_of(A, case):
    """The recorded (name, occurrence) of the step a case switches, on this route."""
    V, idx, p = A.v, case.get("index", 0), case["point"]
    flaky = V.get("flaky", 1)
    n = A.n_items
    llm_no = {"plan": 1, "estimate": 2 + idx,
              "resolve": n + 3 if V.get("sub_late") else n + 2,
              "note": n + 2 + (0 if V.get("sub_late") else 2),
              "summarise": n + 4 if V.get("sub_late") else n + 3}
    table = {"parse_plan": (V["parse_plan"], 1), "catalogue": (V["catalog"], 1), "cap": (V["cap"], 1),
             "parse_estimate": (V["parse_est"], idx + 1), "quote": (V["tool"], idx + 1 + (1 if idx >= flaky else 0)),
             "convert": (V["convert"], idx + 1), "route": (V["route"], 1), "total": (V["total"], 1),
             "hold": (V["sub_tool"], 1)}
    if V.get("sub_first"):
        llm_no = {"plan": 1, "resolve": 2, "summarise": 3, "estimate": 4 + idx, "note": n + 4}
    if p in llm_no:
        return "ChatOpenAI", llm_no[p]
    return table[p]


def failure_of(A, case):
    return A.v["validate"], 1
