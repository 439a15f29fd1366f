"""Clock-winding round service: langgraph route. A StateGraph: the register of the client's clocks
(retriever), a model that plans the round (stops: clocks, and key pick-ups), then one node per
stop in a loop (a winding tool per clock, a key-box tool per key) with a routing function back to
itself, then a node that gathers the round notes, a model that writes the visit report, and the
invoice node, which checks the report against the contract."""
from __future__ import annotations

import json
from typing import TypedDict

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "winding-rounds"
ROUTE = "langgraph"
DOMAIN = "clock-winding round service"
SHAPE = "register -> plan (llm) -> loop over 4-12 stops (node + tool + router each) -> notes -> report (llm) -> invoice check; 21-45 steps"
SWITCHES = {"tower_before_key": False, "loop_stops_early": False, "register_page_one": False,
            "drift_per_week": False, "notes_all_rounds": False}

SITES = {
    "Ashcombe Hall": {"clocks": [("AH-01", "longcase", 8), ("AH-02", "bracket", 8), ("AH-03", "lantern", 1), ("AH-04", "longcase", 8), ("AH-05", "wall regulator", 8), ("AH-06", "carriage", 8), ("AH-07", "stable turret", 8)], "keys": {"AH-07": "stable yard"}},
    "St Bride's": {"clocks": [("SB-01", "tower", 8), ("SB-02", "vestry wall", 8), ("SB-03", "bracket", 8)], "keys": {"SB-01": "tower door"}},
    "Moreton Guildhall": {"clocks": [("MG-01", "turret", 8), ("MG-02", "longcase", 8), ("MG-03", "longcase", 8), ("MG-04", "dial", 8), ("MG-05", "dial", 8), ("MG-06", "skeleton", 8), ("MG-07", "bracket", 8), ("MG-08", "bracket", 8), ("MG-09", "wall regulator", 8), ("MG-10", "carriage", 8), ("MG-11", "lantern", 1)], "keys": {"MG-01": "turret loft"}},
    "Fenwick House": {"clocks": [("FH-01", "longcase", 8), ("FH-02", "bracket", 8), ("FH-03", "mantel", 8), ("FH-04", "mantel", 8), ("FH-05", "carriage", 8)], "keys": {}},
    "Harrow Mill": {"clocks": [("HM-01", "mill turret", 8), ("HM-02", "office dial", 8), ("HM-03", "longcase", 8), ("HM-04", "wall regulator", 8)], "keys": {"HM-01": "mill loft"}},
}
DRIFT = {"AH": 4.0, "SB": -6.0, "MG": 3.0, "FH": -2.0, "HM": 5.0}
PREVIOUS_ROUND = {"site": "Fenwick House", "clocks": ["FH-01", "FH-02", "FH-03", "FH-04", "FH-05"]}
REGULATOR_LIMIT_S = 30.0

INPUTS = [
    {"task": "weekly round, Ashcombe Hall, week 45", "site": "Ashcombe Hall", "week": 45},
    {"task": "weekly round, St Bride's, week 45", "site": "St Bride's", "week": 45},
    {"task": "weekly round, Moreton Guildhall, week 45", "site": "Moreton Guildhall", "week": 45},
    {"task": "weekly round, Fenwick House, week 46", "site": "Fenwick House", "week": 46},
    {"task": "weekly round, Harrow Mill, week 46", "site": "Harrow Mill", "week": 46},
]
CASES = [
    {"id": "zv11", "input": 1, "switch": "tower_before_key", "kind": "plan_error",
     "root": ("ChatOpenAI", 1, "llm"), "failure": ("wind_clock", 1),
     "description": "The model planned the round with the tower clock first, before the stop that collects the tower door key."},
    {"id": "zv12", "input": 2, "switch": "loop_stops_early", "kind": "off_by_one",
     "root": ("next_stop", 11, "other"), "failure": ("invoice_round", 1),
     "description": "The round's routing compared the stop counter against one less than the number of stops, so the last clock on the plan (the lantern clock MG-11) was never wound."},
    {"id": "zv13", "input": 0, "switch": "register_page_one", "kind": "truncated_result",
     "root": ("ClientRegister", 1, "retrieval"), "failure": ("invoice_round", 1),
     "description": "The client register returned only its first page of six clocks, so the stable turret clock AH-07 was left off the round."},
    {"id": "zv14", "input": 4, "switch": "drift_per_week", "kind": "unit_error",
     "root": ("wind_clock", 2, "tool"), "failure": ("invoice_round", 1),
     "description": "The winding tool reported the office dial's drift in seconds per week (35 s) where the round keeps seconds per day, so its regulator was set past its travel."},
    {"id": "zv15", "input": 3, "switch": "notes_all_rounds", "kind": "context_pollution",
     "root": ("gather_notes", 1, "other"), "failure": ("invoice_round", 1),
     "description": "The notes gathered for the report held the previous Fenwick House round beside this one, so the report listed every clock twice."},
]


class Round(TypedDict, total=False):
    site: str
    week: int
    register: list
    plan: list
    stop: int
    done: list
    keys_held: list
    notes: str
    report: str
    invoice: dict


def policy(request):
    msgs = request.body["messages"]
    sys_text = msgs[0]["content"]
    data = json.loads(msgs[-1]["content"])
    if sys_text.startswith("Plan"):
        stops = []
        keyed = [c for c in data["clocks"] if c.get("key")]
        for c in keyed:
            stops.append({"stop": "key", "for": c["clock"], "place": c["key"]})
        stops += [{"stop": "clock", "clock": c["clock"]} for c in data["clocks"]]
        if SWITCHES["tower_before_key"]:
            first_clock = next(i for i, s in enumerate(stops) if s["stop"] == "clock")
            stops.insert(0, stops.pop(first_clock))
        return json.dumps({"stops": stops})
    lines = []
    for r in data["rounds"]:
        for w in r["wound"]:
            lines.append({"clock": w["clock"], "regulator_s": -w["drift_s_day"]})
    return json.dumps({"site": data["site"], "visits": lines})


class ClientRegister(BaseRetriever):
    """The clocks kept under contract at a site, with their winding periods and key places."""

    def _get_relevant_documents(self, query: str, *, run_manager=None) -> list:
        s = SITES[query]
        rows = [Document(page_content=f"{c} {k} clock, {d}-day", metadata={"clock": c, "kind": k, "days": d, "key": s["keys"].get(c)})
                for c, k, d in s["clocks"]]
        if SWITCHES["register_page_one"]:
            rows = rows[:6]
        return rows


client_register = ClientRegister()


@tool
def wind_clock(clock: str, keys_held: list) -> dict:
    """Wind one clock, read its drift, and report the turns given."""
    site = next(n for n, s in SITES.items() if any(c == clock for c, _, _ in s["clocks"]))
    need = SITES[site]["keys"].get(clock)
    if need and need not in keys_held:
        raise PermissionError(f"{clock}: locked, the {need} key has not been collected")
    drift = DRIFT[clock[:2]] + (int(clock[-2:]) % 3) * 0.5
    if SWITCHES["drift_per_week"] and clock == "HM-02":
        drift = drift * 7
    return {"clock": clock, "turns": 12 + int(clock[-2:]) % 4, "drift_s_day": drift}


@tool
def key_box(place: str) -> dict:
    """Collect a key from the client's key box."""
    return {"key": place, "signed_out": True}


def build(llm):
    def read_register(state: Round) -> dict:
        return {"register": [dict(d.metadata) for d in client_register.invoke(state["site"])]}

    def plan_round(state: Round) -> dict:
        msg = llm.invoke([("system", "Plan the winding round: order the stops. Answer JSON."),
                          ("user", json.dumps({"site": state["site"], "clocks": state["register"]}))])
        return {"plan": json.loads(msg.content)["stops"], "stop": 0, "done": [], "keys_held": []}

    def do_stop(state: Round) -> dict:
        stop = state["plan"][state["stop"]]
        if stop["stop"] == "key":
            got = key_box.invoke({"place": stop["place"]})
            return {"keys_held": state["keys_held"] + [got["key"]], "stop": state["stop"] + 1}
        wound = wind_clock.invoke({"clock": stop["clock"], "keys_held": state["keys_held"]})
        return {"done": state["done"] + [wound], "stop": state["stop"] + 1}

    def next_stop(state: Round) -> str:
        last = len(state["plan"]) - 1 if SWITCHES["loop_stops_early"] else len(state["plan"])
        return "do_stop" if state["stop"] < last else "gather_notes"

    def gather_notes(state: Round) -> dict:
        rounds = [{"site": state["site"], "wound": state["done"]}]
        if SWITCHES["notes_all_rounds"]:
            rounds = [{"site": PREVIOUS_ROUND["site"], "wound": [
                {"clock": c, "turns": 12, "drift_s_day": -2.0} for c in PREVIOUS_ROUND["clocks"]]}] + rounds
        return {"notes": json.dumps({"site": state["site"], "rounds": rounds})}

    def write_report(state: Round) -> dict:
        msg = llm.invoke([("system", "Write the visit report: each clock wound and its regulator setting. JSON."),
                          ("user", state["notes"])])
        return {"report": msg.content}

    def invoice_round(state: Round) -> dict:
        report = json.loads(state["report"])
        contract = [c for c, _, _ in SITES[state["site"]]["clocks"]]
        billed = [v["clock"] for v in report["visits"]]
        assert sorted(billed) == sorted(contract), f"report bills {len(billed)} visits {billed}, contract lists {contract}"
        for v in report["visits"]:
            assert abs(v["regulator_s"]) <= REGULATOR_LIMIT_S, f"{v['clock']}: regulator set {v['regulator_s']} s/day, travel is {REGULATOR_LIMIT_S}"
        return {"invoice": {"site": state["site"], "visits": len(billed), "amount": 18.0 * len(billed)}}

    g = StateGraph(Round)
    for fn in (read_register, plan_round, do_stop, gather_notes, write_report, invoice_round):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "read_register")
    g.add_edge("read_register", "plan_round")
    g.add_edge("plan_round", "do_stop")
    g.add_conditional_edges("do_stop", next_stop, ["do_stop", "gather_notes"])
    g.add_edge("gather_notes", "write_report")
    g.add_edge("write_report", "invoice_round")
    g.add_edge("invoice_round", END)
    return g.compile()


def record(inp, path, server):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["task"])
    build(llm).invoke({"site": inp["site"], "week": inp["week"]},
                      config={"callbacks": [tracer], "recursion_limit": 100})
