"""tamping-planner: a rail track maintenance engineer's tamping work bank for a weekend possession (LangGraph).

The track recording car's run lists geometry exceedances (top, twist, alignment) by mileage. The graph
retrieves them with the run summary, parses their mileages into metres, has the model put the sites in
working order, checks the order against the possession's single access point, then works site by site
(a model with the track constraints and ballast tools, called in parallel through a ToolNode) to set the
design lift and slew, estimates the possession time, validates it and submits the work bank.
"""

from __future__ import annotations

import json
import operator
import re
from typing import Annotated, Any, TypedDict

from ._common import Env, first_json, last_user, system_of

NAME = "tamping-planner"
ROUTE = "langgraph"
DOMAIN = "rail track maintenance: geometry exceedances, tamping work bank, possession planning"
SHAPE = ("LangGraph: tool + retriever node, mileage parser, planning LLM + JSON parser, order check, "
         "per-site loop (model with parallel tool calls through a ToolNode, self-looping node), "
         "time estimate, validation node, submission tool")

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


def _x(site, start, length_yd, parameter, value, band):
    return {"site": site, "start": start, "length_yd": length_yd, "parameter": parameter, "value_mm": value,
            "band": band}


EXCEEDANCES = {
    "LNW2": [_x("LNW2-01", "112m 24ch", 286, "top left", 21, "red"),
             _x("LNW2-02", "113m 10ch", 198, "twist 3m", 14, "amber"),
             _x("LNW2-03", "113m 62ch", 330, "alignment", 25, "amber")],
    "SBJ1": [_x("SBJ1-01", "40m 12ch", 220, "top left", 16, "amber"),
             _x("SBJ1-02", "40m 55ch", 176, "twist 3m", 19, "red"),
             _x("SBJ1-03", "41m 30ch", 264, "alignment", 22, "amber")],
    "MLN3": [_x("MLN3-01", "8m 20ch", 240, "top left", 17, "amber"),
             _x("MLN3-02", "9m 05ch", 300, "top right", 23, "red"),
             _x("MLN3-03", "9m 60ch", 180, "alignment", 20, "amber")],
    "ECM5": [_x("ECM5-01", "201m 52ch", 210, "top left", 15, "amber"),
             _x("ECM5-02", "202m 20ch", 260, "alignment", 18, "amber"),
             _x("ECM5-03", "202m 71ch", 190, "top right", 24, "red"),
             _x("ECM5-04", "203m 44ch", 230, "twist 3m", 21, "red")],
    "DOL1": [_x("DOL1-01", "55m 14ch", 200, "top left", 14, "amber"),
             _x("DOL1-02", "55m 48ch", 250, "top left", 22, "red"),
             _x("DOL1-03", "56m 30ch", 220, "alignment", 17, "amber")],
}
# Track features from the asset register (current), by site.
FEATURES = {
    "MLN3-02": [{"type": "S&C", "unit": "2081A", "from": "9m 08ch", "to": "9m 14ch", "installed": "2025-08-14"}],
    "LNW2-03": [{"type": "underbridge", "unit": "UB-113/61", "from": "113m 61ch", "to": "113m 62ch",
                 "installed": "1962-05-01"}],
    "ECM5-02": [{"type": "level crossing", "unit": "LC Moor Lane", "from": "202m 31ch", "to": "202m 31ch",
                 "installed": "1988-09-30"}],
}
# The constraints service's cache, holding what it answered for a site on an earlier query.
CONSTRAINTS_CACHE = {"MLN3-02": {"site": "MLN3-02", "as_of": "2025-03-01", "features": []}}
BALLAST = {"LNW2-02": "fouled", "MLN3-03": "fouled", "ECM5-01": "fouled", "DOL1-03": "fouled"}

INPUTS = [
    {"elr": "LNW2", "trc_run": "TRC-2025-10-02-LNW2", "machine": "09-3X", "access": "112m 00ch",
     "possession": {"start": "2025-10-11T23:40", "end": "2025-10-12T07:10"}},
    {"elr": "SBJ1", "trc_run": "TRC-2025-10-03-SBJ1", "machine": "09-3X", "access": "40m 00ch",
     "possession": {"start": "2025-10-18T23:30", "end": "2025-10-19T06:30"}},
    {"elr": "MLN3", "trc_run": "TRC-2025-10-06-MLN3", "machine": "B&B-07", "access": "8m 00ch",
     "possession": {"start": "2025-10-25T23:50", "end": "2025-10-26T07:20"}},
    {"elr": "ECM5", "trc_run": "TRC-2025-10-08-ECM5", "machine": "09-3X", "access": "201m 40ch",
     "possession": {"start": "2025-11-01T23:40", "end": "2025-11-02T07:10"}},
    {"elr": "DOL1", "trc_run": "TRC-2025-10-09-DOL1", "machine": "B&B-07", "access": "55m 00ch",
     "possession": {"start": "2025-11-08T23:40", "end": "2025-11-09T06:40"}},
]

CASES = [
    {"id": "tamping_yards_as_chains", "input": 0, "switch": "length_chains", "fault_kind": "unit_error",
     "root": ("MileageParser", 1), "failure": ("validate_possession", 1),
     "description": "MileageParser reads the exceedance lengths, given in yards, as chains, so LNW2-01 becomes "
                    "5753 m long instead of 262 m and the possession check finds the work bank needs far more "
                    "than the 6.5 working hours."},
    {"id": "tamping_red_first_order", "input": 1, "switch": "red_first", "fault_kind": "plan_error",
     "root": ("ChatOpenAI", 1), "failure": ("check_site_order", 1),
     "description": "the planning model puts the red-band site SBJ1-02 at 40m 55ch first and then goes back to "
                    "SBJ1-01 at 40m 12ch, which the single access point at 40m 00ch does not allow."},
    {"id": "tamping_cached_constraints", "input": 2, "switch": "constraints_cache", "fault_kind": "stale_data",
     "root": ("get_track_constraints", 2), "failure": ("submit_work_bank", 1),
     "description": "get_track_constraints answers MLN3-02 from a cache of 2025-03-01 that predates S&C unit "
                    "2081A (installed 2025-08-14), so the site is planned as plain line and the work bank is "
                    "refused."},
    {"id": "tamping_first_page", "input": 3, "switch": "first_page", "fault_kind": "truncated_result",
     "root": ("trc_exceedances", 1), "failure": ("validate_possession", 1),
     "description": "the trc_exceedances retriever returns only its first three exceedances, leaving out the "
                    "red-band twist at ECM5-04, and the possession check finds one of the run's two red sites "
                    "uncovered."},
    {"id": "tamping_lift_figure", "input": 4, "switch": "lift_figure", "fault_kind": "hallucinated_value",
     "root": ("ChatOpenAI", 5), "failure": ("submit_work_bank", 1),
     "description": "the site model gives DOL1-02 a design lift of 45 mm that nothing it read supports (a 22 mm "
                    "top exceedance calls for 27 mm), and the work bank is refused above the 30 mm single-pass limit."},
]

YD = 0.9144
CHAIN = 20.1168
MILE = 1609.344


def mileage_m(text: str) -> float:
    miles, chains = re.match(r"(\d+)m (\d+)ch", text).groups()
    return int(miles) * MILE + int(chains) * CHAIN


# -- the model ----------------------------------------------------------------------------------------

def _order_answer(request: Any) -> str:
    data = json.loads(last_user(request))
    sites = sorted(data["sites"], key=lambda s: s["start_m"])
    if _on("red_first"):
        sites = sorted(sites, key=lambda s: (s["band"] != "red", s["start_m"]))
    return json.dumps({"order": [s["site"] for s in sites],
                       "notes": "work away from the access point; every red and amber site fits the possession"})


def _site_answer(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    site = json.loads(msgs[1]["content"])
    tools = {}
    for m in msgs:
        if m["role"] == "tool":
            data = json.loads(m["content"])
            tools["ballast" if "condition" in data else "constraints"] = data
    if not tools:
        return Reply(tool_calls=(tool_call("get_track_constraints", {"site": site["site"]}),
                                 tool_call("get_ballast_state", {"site": site["site"]})))
    sc = any(f["type"] == "S&C" for f in tools["constraints"]["features"])
    if site["parameter"] == "alignment":
        lift, slew = 10, min(40, site["value_mm"] + 10)
    else:
        lift, slew = min(30, max(15, site["value_mm"] + 5)), 0
    if tools["ballast"]["condition"] == "fouled":
        lift = min(lift, 20)
    if _on("lift_figure") and site["site"] == "DOL1-02":
        lift = 45
    return json.dumps({"site": site["site"], "mode": "S&C" if sc else "plain_line", "lift_mm": lift,
                       "slew_mm": slew, "note": f"ballast {tools['ballast']['condition']}"})


def brain(request: Any) -> Any:
    system = system_of(request)
    if system.startswith("You order tamping sites"):
        return _order_answer(request)
    if system.startswith("You design the tamp"):
        return _site_answer(request)
    raise ValueError("unexpected prompt")


# -- the graph ----------------------------------------------------------------------------------------

def _build(env: Env):
    from langchain_core.documents import Document
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.output_parsers import BaseOutputParser, JsonOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph
    from langgraph.prebuilt import ToolNode

    llm = ChatOpenAI(model=env.model, base_url=env.base_url, api_key="not-needed", max_retries=0)

    class TrcExceedances(BaseRetriever):
        """Exceedance records of a track recording run, one document each, in mileage order."""

        def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> list:
            elr = re.search(r"ELR (\w+)", query).group(1)
            rows = sorted(EXCEEDANCES[elr], key=lambda x: mileage_m(x["start"]))
            page = 3 if _on("first_page") else 50
            return [Document(page_content=f"{x['site']}: {x['start']}, length {x['length_yd']} yd, "
                                          f"{x['parameter']} {x['value_mm']} mm ({x['band']})",
                             metadata=dict(x)) for x in rows[:page]]

    trc_exceedances = TrcExceedances().with_config(run_name="trc_exceedances")

    @tool
    def get_trc_run_summary(trc_run: str) -> dict:
        """Header of a track recording run: miles recorded and exceedances by band."""
        elr = trc_run.rsplit("-", 1)[1]
        rows = EXCEEDANCES[elr]
        return {"trc_run": trc_run, "elr": elr, "red": sum(x["band"] == "red" for x in rows),
                "amber": sum(x["band"] == "amber" for x in rows)}

    class MileageParser(BaseOutputParser[list]):
        """Exceedance lines ("site: 112m 24ch, length 286 yd, ...") to sites in metres."""

        def parse(self, text: str) -> list:
            out = []
            for line in text.splitlines():
                m = re.match(r"(\S+): (\d+m \d+ch), length (\d+) yd, (.+?) (\d+) mm \((\w+)\)", line)
                site, start, length, parameter, value, band = m.groups()
                per_unit = CHAIN if _on("length_chains") else YD
                start_m = mileage_m(start)
                out.append({"site": site, "start": start, "start_m": round(start_m, 1),
                            "length_m": round(int(length) * per_unit, 1), "parameter": parameter,
                            "value_mm": int(value), "band": band})
            return out

    mileage_parser = MileageParser()

    @tool
    def get_track_constraints(site: str) -> dict:
        """Track features (S&C, bridges, level crossings) at a site, from the asset register."""
        if _on("constraints_cache") and site in CONSTRAINTS_CACHE:
            return dict(CONSTRAINTS_CACHE[site])
        return {"site": site, "as_of": "2025-10-01", "features": [dict(f) for f in FEATURES.get(site, [])]}

    @tool
    def get_ballast_state(site: str) -> dict:
        """Ballast condition at a site from the last ground-penetrating radar survey."""
        return {"site": site, "condition": BALLAST.get(site, "clean"), "depth_mm": 280}

    @tool
    def submit_work_bank(elr: str, machine: str, sites: list[dict]) -> dict:
        """Submit the possession's tamping work bank to the planning system (validated on receipt)."""
        for s in sites:
            if s["lift_mm"] > 30:
                raise ValueError(f"design lift {s['lift_mm']} mm at {s['site']} exceeds the 30 mm single-pass limit")
            sc = [f for f in FEATURES.get(s["site"], []) if f["type"] == "S&C"]
            if sc and s["mode"] != "S&C":
                f = sc[0]
                raise ValueError(f"{s['site']} overlaps S&C unit {f['unit']} ({f['from']}-{f['to']}, installed "
                                 f"{f['installed']}): planned as {s['mode']}, plain-line tamping not permitted")
        return {"work_bank": f"WB-{elr}-{len(sites)}", "machine": machine, "sites": len(sites)}

    site_llm = llm.bind_tools([get_track_constraints, get_ballast_state])
    order_chain = ChatPromptTemplate.from_messages([
        ("system", "You order tamping sites for one possession: every red site and the amber ones that fit, "
                   "in working order from the access point. Answer JSON: order, notes."),
        ("human", "{payload}")]) | llm | JsonOutputParser()

    class S(TypedDict, total=False):
        request: dict
        summary: dict
        exceedance_text: str
        sites: list
        order: list
        i: int
        msg_start: int
        site_msgs: Annotated[list, operator.add]
        work_bank: Annotated[list, operator.add]
        estimate: dict
        result: dict

    def load_exceedances(state: dict) -> dict:
        req = state["request"]
        summary = get_trc_run_summary.invoke({"trc_run": req["trc_run"]})
        docs = trc_exceedances.invoke(f"exceedances ELR {req['elr']} run {req['trc_run']}")
        return {"summary": summary, "exceedance_text": "\n".join(d.page_content for d in docs)}

    def convert_mileage(state: dict) -> dict:
        return {"sites": mileage_parser.invoke(state["exceedance_text"])}

    def plan_order(state: dict) -> dict:
        payload = json.dumps({"access": state["request"]["access"], "possession": state["request"]["possession"],
                              "sites": state["sites"]})
        return {"order": order_chain.invoke({"payload": payload})["order"], "i": 0, "msg_start": 0}

    def check_site_order(state: dict) -> dict:
        by_id = {s["site"]: s for s in state["sites"]}
        seq = [by_id[x] for x in state["order"]]
        for a, b in zip(seq, seq[1:]):
            if b["start_m"] < a["start_m"]:
                raise ValueError(f"site order {a['start']} -> {b['start']} reverses the machine; the possession has "
                                 f"one access point at {state['request']['access']} (work away from it)")
        return {}

    def site_worker(state: dict) -> dict:
        by_id = {s["site"]: s for s in state["sites"]}
        site = by_id[state["order"][state["i"]]]
        mine = state.get("site_msgs", [])[state["msg_start"]:]
        if not mine:
            mine = [SystemMessage("You design the tamp for one site: read its track constraints and ballast, "
                                  "then answer JSON: site, mode (plain_line or S&C), lift_mm, slew_mm, note."),
                    HumanMessage(json.dumps(site))]
            reply = site_llm.invoke(mine)
            return {"site_msgs": [*mine, reply]}
        reply = site_llm.invoke(mine)
        if reply.tool_calls:
            return {"site_msgs": [reply]}
        design = first_json(reply.content)
        entry = {**design, "start_m": site["start_m"], "length_m": site["length_m"], "band": site["band"]}
        total = len(state.get("site_msgs", [])) + 1
        return {"site_msgs": [reply], "work_bank": [entry], "i": state["i"] + 1, "msg_start": total}

    def after_site_worker(state: dict) -> str:
        last = state["site_msgs"][-1]
        if last.tool_calls:
            return "site_tools"
        return "site_worker" if state["i"] < len(state["order"]) else "estimate_possession"

    def estimate_possession(state: dict) -> dict:
        rate = {"plain_line": 1000.0, "S&C": 300.0}
        access = mileage_m(state["request"]["access"])
        hours, pos = 0.0, access
        for s in state["work_bank"]:
            hours += abs(s["start_m"] - pos) / 16000 + 20 / 60 + s["length_m"] / rate[s["mode"]]
            pos = s["start_m"] + s["length_m"]
        hours += abs(pos - access) / 16000
        start, end = (state["request"]["possession"][k] for k in ("start", "end"))
        sh, sm = map(int, start[11:].split(":"))
        eh, em = map(int, end[11:].split(":"))
        length = (eh * 60 + em + 24 * 60 - sh * 60 - sm) / 60
        return {"estimate": {"work_hours": round(hours, 2), "possession_hours": length,
                             "available_hours": length - 1.0}}

    def validate_possession(state: dict) -> dict:
        est, summary = state["estimate"], state["summary"]
        red = [s["site"] for s in state["work_bank"] if s["band"] == "red"]
        if len(red) < summary["red"]:
            raise ValueError(f"{summary['trc_run']} lists {summary['red']} red-band exceedances; the work bank "
                             f"covers {len(red)} ({', '.join(red)})")
        if est["work_hours"] > est["available_hours"]:
            raise ValueError(f"work bank needs {est['work_hours']} h; the possession leaves "
                             f"{est['available_hours']} working hours")
        return {}

    def submit(state: dict) -> dict:
        req = state["request"]
        sites = [{k: s[k] for k in ("site", "mode", "lift_mm", "slew_mm")} for s in state["work_bank"]]
        return {"result": submit_work_bank.invoke({"elr": req["elr"], "machine": req["machine"], "sites": sites})}

    g = StateGraph(S)
    g.add_node("load_exceedances", load_exceedances)
    g.add_node("convert_mileage", convert_mileage)
    g.add_node("plan_order", plan_order)
    g.add_node("check_site_order", check_site_order)
    g.add_node("site_worker", site_worker)
    g.add_node("site_tools", ToolNode([get_track_constraints, get_ballast_state], messages_key="site_msgs"))
    g.add_node("estimate_possession", estimate_possession)
    g.add_node("validate_possession", validate_possession)
    g.add_node("submit", submit)
    g.add_edge(START, "load_exceedances")
    g.add_edge("load_exceedances", "convert_mileage")
    g.add_edge("convert_mileage", "plan_order")
    g.add_edge("plan_order", "check_site_order")
    g.add_edge("check_site_order", "site_worker")
    g.add_conditional_edges("site_worker", after_site_worker, ["site_tools", "site_worker", "estimate_possession"])
    g.add_edge("site_tools", "site_worker")
    g.add_edge("estimate_possession", "validate_possession")
    g.add_edge("validate_possession", "submit")
    g.add_edge("submit", END)
    return g.compile()


_GRAPHS: dict[str, Any] = {}


def run(inp: dict, path: str, env: Env) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    graph = _GRAPHS.get(env.base_url) or _GRAPHS.setdefault(env.base_url, _build(env))
    tracer = TrajdebugTracer(path=path, name=NAME)
    task = f"tamping work bank {inp['elr']} from {inp['trc_run']}"
    graph.invoke({"request": inp}, config={"callbacks": [tracer], "metadata": {"task": task},
                                           "recursion_limit": 60})
