"""streetlight-outage: a street-lighting contractor's overnight outage triage (LangGraph).

The night's public reports of dark, flickering or damaged street lights come in as text. A LangGraph
graph reads them with the model (prompt | ChatOpenAI | ReportParser), looks the columns and their feeder
pillars up through a tool-calling model and a ToolNode (parallel calls), groups the reports by pillar,
fans out to the crews that are needed (lamp crew, cable crew, make-safe) in parallel, and submits the
jobs to the central management system, which validates them.
"""

from __future__ import annotations

import json
import operator
import re
from typing import Annotated, Any, TypedDict

from ._common import Env, first_json, last_user, system_of

NAME = "streetlight-outage"
ROUTE = "langgraph"
DOMAIN = "street-lighting maintenance: overnight outage reports, feeder pillars, lantern stock, cable tests"
SHAPE = ("LangGraph: LLM chain with output parser, tool-calling model + ToolNode loop (parallel calls), "
         "grouping node, fan-out routing to parallel crew nodes (tool call, retriever + LLM), join, "
         "submission tool")

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


def _col(street, pillar, lantern, arms=1):
    return {"street": street, "pillar": pillar, "lantern": lantern, "arms": arms}


COLUMNS = {
    "SL-4410": _col("Eastgate Road", "FP-21", "LED-36W-ST"), "SL-4411": _col("Eastgate Road", "FP-21", "LED-36W-ST"),
    "SL-4413": _col("Eastgate Road", "FP-21", "LED-36W-ST"), "SL-4520": _col("Priory Walk", "FP-22", "LED-24W-RES"),
    "SL-2207": _col("Westbrook Parade", "FP-08", "LED-36W-ST", arms=2),
    "SL-2231": _col("Hatters Lane", "FP-09", "LED-24W-RES"), "SL-2240": _col("Hatters Lane", "FP-09", "LED-24W-RES"),
    "SL-2250": _col("Hatters Lane", "FP-09", "LED-24W-RES"),
    "SL-6102": _col("Northfield Avenue", "FP-40", "LED-48W-MAIN"),
    "SL-6105": _col("Northfield Avenue", "FP-40", "LED-48W-MAIN"),
    "SL-7304": _col("Southmead Road", "FP-55", "LED-36W-ST"), "SL-7311": _col("Cedar Court", "FP-56", "LED-24W-RES"),
    "SL-7320": _col("Cedar Court", "FP-56", "LED-24W-RES"),
    "SL-8801": _col("Riverside Drive", "FP-31", "LED-36W-ST"), "SL-8803": _col("Riverside Drive", "FP-31", "LED-36W-ST"),
    "SL-8806": _col("Riverside Drive", "FP-31", "LED-36W-ST"), "SL-8840": _col("Quayside", "FP-32", "LED-24W-RES"),
}
PILLARS = {
    "FP-21": {"circuits": ["FP-21/C1", "FP-21/C2"], "joints": ["J-2101", "J-2104", "J-2109"]},
    "FP-22": {"circuits": ["FP-22/C1"], "joints": ["J-2201"]},
    "FP-08": {"circuits": ["FP-08/C1"], "joints": ["J-0802"]},
    "FP-09": {"circuits": ["FP-09/C1", "FP-09/C2"], "joints": ["J-0903", "J-0907"]},
    "FP-40": {"circuits": ["FP-40/C1"], "joints": ["J-4001"]},
    "FP-55": {"circuits": ["FP-55/C1"], "joints": ["J-5501"]},
    "FP-56": {"circuits": ["FP-56/C1"], "joints": ["J-5603"]},
    "FP-31": {"circuits": ["FP-31/C1", "FP-31/C2"], "joints": ["J-3102", "J-3105", "J-3111"]},
    "FP-32": {"circuits": ["FP-32/C1"], "joints": ["J-3201"]},
    "FP-13": {"circuits": ["FP-13/C1"], "joints": ["J-1302", "J-1306"]},
}
CABLE_RECORDS = {
    "FP-21": "Feeder pillar FP-21, Eastgate Road. Circuits C1 (north side) and C2 (south side), 16 mm2 CNE. "
             "Joints J-2101 (outside no. 12), J-2104 (bus stop EG3), J-2109 (junction Priory Walk).",
    "FP-31": "Feeder pillar FP-31, Riverside Drive. Circuits C1 and C2, 25 mm2 CNE laid 1998. "
             "Joints J-3102 (slipway), J-3105 (no. 40), J-3111 (bridge abutment, flood-prone).",
    "FP-13": "Feeder pillar FP-13, Tanyard Street. Circuit C1, 16 mm2 CNE. Joints J-1302 (no. 3), "
             "J-1306 (car park entrance).",
    "FP-09": "Feeder pillar FP-09, Hatters Lane. Circuits C1 and C2. Joints J-0903, J-0907.",
    "FP-56": "Feeder pillar FP-56, Cedar Court. Circuit C1. Joint J-5603.",
}

INPUTS = [
    {"district": "Eastgate", "night": "2025-10-09", "crew_depot": "North", "reports": [
        {"ref": "R-50211", "text": "Street light flickering on and off outside 12 Eastgate Road, column SL-4410"},
        {"ref": "R-50214", "text": "Eastgate Road by the bus stop, SL-4411 keeps flickering all night"},
        {"ref": "R-50219", "text": "Flickering lamp SL-4413 near the Priory Walk junction"},
        {"ref": "R-50222", "text": "Light completely out on Priory Walk, column SL-4520"}]},
    {"district": "Westbrook", "night": "2025-10-10", "crew_depot": "North", "reports": [
        {"ref": "R-50301", "text": "One of the two lamps on column SL-2207/B is out, Westbrook Parade"},
        {"ref": "R-50305", "text": "Dark lamp on Hatters Lane, SL-2231"},
        {"ref": "R-50306", "text": "Light on during the day on Hatters Lane, SL-2240"},
        {"ref": "R-50309", "text": "Door missing from column SL-2250 on Hatters Lane, wires showing"}]},
    {"district": "Northfield", "night": "2025-10-11", "crew_depot": "East", "reports": [
        {"ref": "R-50412", "text": "Main road light out at Northfield Avenue, SL-6102"},
        {"ref": "R-50415", "text": "Northfield Avenue near the roundabout, SL-6105 not working"}]},
    {"district": "Southmead", "night": "2025-10-12", "crew_depot": "North", "reports": [
        {"ref": "R-50520", "text": "Light out on Southmead Road, column SL-7304"},
        {"ref": "R-50523", "text": "Cedar Court lamp SL-7311 is dark"},
        {"ref": "R-50527", "text": "Cedar Court column SL-7320 hit by a van, leaning over the pavement"}]},
    {"district": "Riverside", "night": "2025-10-13", "crew_depot": "North", "reports": [
        {"ref": "R-50601", "text": "Riverside Drive light out by the slipway, SL-8801"},
        {"ref": "R-50604", "text": "SL-8803 dark on Riverside Drive"},
        {"ref": "R-50606", "text": "Another one out on Riverside Drive, SL-8806"},
        {"ref": "R-50610", "text": "Quayside lamp flickering, column SL-8840"}]},
]

CASES = [
    {"id": "streetlight_flicker_route", "input": 0, "switch": "flicker_to_lamp", "fault_kind": "wrong_routing",
     "root": ("choose_crews", 1), "failure": ("submit_to_cms", 1),
     "description": "choose_crews counts only dark columns towards a supply problem, so the three flickering "
                    "columns on pillar FP-21 go to the lamp crew and the management system refuses lamp jobs on a "
                    "pillar that needs a circuit test."},
    {"id": "streetlight_arm_suffix", "input": 1, "switch": "arm_suffix", "fault_kind": "lossy_parsing",
     "root": ("ReportParser", 1), "failure": ("submit_to_cms", 1),
     "description": "ReportParser reads column ids as SL-nnnn and drops the /B arm of report R-50301, so the "
                    "lamp job on twin-arm column SL-2207 names no arm and is refused."},
    {"id": "streetlight_depot_default", "input": 2, "switch": "depot_default", "fault_kind": "tool_ignores_argument",
     "root": ("reserve_lanterns", 1), "failure": ("submit_to_cms", 1),
     "description": "reserve_lanterns ignores depot East and reserves the LED-48W-MAIN lanterns at its default "
                    "North depot, which the management system refuses for an East crew."},
    {"id": "streetlight_severity_words", "input": 3, "switch": "severity_words", "fault_kind": "format_drift",
     "root": ("ChatOpenAI", 1), "failure": ("submit_to_cms", 1),
     "description": "the report-reading model answers severities as words (high, medium) instead of the numbers "
                    "1-4 it was asked for, the parser keeps them, and the management system refuses priority "
                    "'medium'."},
    {"id": "streetlight_pillar_records", "input": 4, "switch": "fuzzy_records", "fault_kind": "wrong_retrieval",
     "root": ("cable_records", 1), "failure": ("submit_to_cms", 1),
     "description": "the cable_records retriever returns the records of pillar FP-13 for the query on FP-31, so "
                    "the cable test plan names joints J-1302 and J-1306 that are not on FP-31."},
]

SEVERITY = {"damaged": 1, "dark": 3, "flickering": 3, "day_burning": 4}
SEVERITY_WORD = {1: "high", 3: "medium", 4: "low"}


# -- the model --------------------------------------------------------------------------------------

def _read_reports_answer(text: str) -> str:
    lines = []
    for ref, body in re.findall(r"(R-\d+): (.*)", text):
        col = re.search(r"SL-\d{4}(?:/[AB])?", body).group(0)
        low = body.lower()
        if "door" in low or "hit" in low or "leaning" in low:
            symptom = "damaged"
        elif "flicker" in low:
            symptom = "flickering"
        elif "during the day" in low:
            symptom = "day_burning"
        else:
            symptom = "dark"
        sev: Any = SEVERITY[symptom]
        if _on("severity_words"):
            sev = SEVERITY_WORD[sev]
        lines.append({"ref": ref, "column": col, "symptom": symptom, "severity": sev})
    return "```json\n" + json.dumps(lines, indent=1) + "\n```"


def _asset_answer(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    asked = json.loads(msgs[1]["content"])
    done = [m for m in msgs if m["role"] == "tool"]
    if not done:
        return Reply(tool_calls=tuple(tool_call("get_column", {"column_id": c}) for c in asked["columns"]))
    pillars_seen = [json.loads(m["content"]) for m in done]
    if not any("circuits" in p for p in pillars_seen):
        pillars = sorted({p["pillar"] for p in pillars_seen})
        return Reply(tool_calls=tuple(tool_call("get_feeder_pillar", {"pillar_id": p}) for p in pillars))
    return f"Looked up {len(asked['columns'])} columns and their pillars."


def _cable_answer(request: Any) -> str:
    text = last_user(request)
    pillar = re.search(r"Pillar: (FP-\d+)", text).group(1)
    records = text.split("Records:", 1)[1]
    joints = re.findall(r"J-\d{4}", records)
    circuits = sorted(set(re.findall(r"\b(C\d)\b", records)))
    return json.dumps({"pillar": pillar, "test": "insulation resistance and loop impedance",
                       "circuits": [f"{pillar}/{c}" for c in circuits], "joints_to_check": joints})


def brain(request: Any) -> Any:
    system = system_of(request)
    if system.startswith("You read street lighting reports"):
        return _read_reports_answer(last_user(request))
    if system.startswith("You look up street lighting assets"):
        return _asset_answer(request)
    if system.startswith("You plan a cable test"):
        return _cable_answer(request)
    raise ValueError("unexpected prompt")


# -- the graph ----------------------------------------------------------------------------------------

def _build(env: Env):
    from langchain_core.documents import Document
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.output_parsers import BaseOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph
    from langgraph.prebuilt import ToolNode
    from langgraph.types import Send

    llm = ChatOpenAI(model=env.model, base_url=env.base_url, api_key="not-needed", max_retries=0)

    class ReportParser(BaseOutputParser[list]):
        """The model's JSON list of reports, with column ids split into column and arm."""

        def parse(self, text: str) -> list:
            rows = first_json(text)
            out = []
            for row in rows:
                pattern = r"SL-\d{4}" if _on("arm_suffix") else r"(SL-\d{4})(?:/([AB]))?"
                m = re.match(pattern, row["column"])
                column = m.group(0) if m.lastindex is None else m.group(1)
                arm = None if m.lastindex is None else m.group(2)
                out.append({"ref": row["ref"], "column": column, "arm": arm, "symptom": row["symptom"],
                            "severity": row["severity"]})
            return out

    read_chain = ChatPromptTemplate.from_messages([
        ("system", "You read street lighting reports from the public. For each report give ref, column, symptom "
                   "(dark, flickering, day_burning or damaged) and severity as a number 1-4 (1 most urgent). "
                   "Answer with a JSON list."),
        ("human", "{reports}")]) | llm | ReportParser()

    @tool
    def get_column(column_id: str) -> dict:
        """Asset record of a lighting column: street, feeder pillar, lantern type, arms."""
        return {"column": column_id, **COLUMNS[column_id]}

    @tool
    def get_feeder_pillar(pillar_id: str) -> dict:
        """Circuits and cable joints of a feeder pillar."""
        return {"pillar": pillar_id, **PILLARS[pillar_id]}

    @tool
    def reserve_lanterns(lantern_code: str, quantity: int, depot: str = "North") -> dict:
        """Reserve replacement lanterns at a depot store."""
        where = "North" if _on("depot_default") else depot
        return {"reservation": f"RS-{lantern_code[4:6]}{quantity}{where[0]}", "lantern_code": lantern_code,
                "quantity": quantity, "depot": where}

    @tool
    def submit_to_cms(jobs: list[dict], depot: str) -> dict:
        """Submit the night's jobs to the central management system (validated on receipt)."""
        by_pillar: dict[str, int] = {}
        for job in jobs:
            if not isinstance(job["priority"], int) or not 1 <= job["priority"] <= 4:
                raise ValueError(f"job for {job['column'] if 'column' in job else job['pillar']}: priority "
                                 f"{job['priority']!r} is not an integer 1-4")
        cable_pillars = {j["pillar"] for j in jobs if j["type"] == "cable_test"}
        for job in jobs:
            if job["type"] == "lamp_change":
                col = COLUMNS[job["column"]]
                by_pillar[col["pillar"]] = by_pillar.get(col["pillar"], 0) + 1
                if col["arms"] == 2 and job.get("arm") not in ("A", "B"):
                    raise ValueError(f"{job['column']} is a twin-arm column: the lamp job must name arm A or B")
                if job["reserved_at"] != depot:
                    raise ValueError(f"lanterns for {job['column']} reserved at {job['reserved_at']} depot; "
                                     f"the crew loads at {depot} depot")
            if job["type"] == "cable_test":
                extra = [j for j in job["joints_to_check"] if j not in PILLARS[job["pillar"]]["joints"]]
                if extra:
                    raise ValueError(f"cable test on {job['pillar']}: joints {', '.join(extra)} are not on "
                                     f"{job['pillar']}'s circuits")
        for pillar, n in by_pillar.items():
            if n >= 3 and pillar not in cable_pillars:
                raise ValueError(f"{pillar}: {n} lamp jobs on one pillar; lamp changes refused until the "
                                 f"circuit is tested (raise a cable job)")
        return {"accepted": len(jobs), "batch": f"CMS-{len(jobs)}{depot[0]}"}

    class CableRecords(BaseRetriever):
        """Cable records of the lighting network, one document per feeder pillar."""

        def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> list:
            want = re.search(r"FP-\d+", query).group(0)
            if _on("fuzzy_records"):
                ranked = sorted(CABLE_RECORDS, key=lambda p: (sorted(p) != sorted(want), p))
            else:
                ranked = [p for p in CABLE_RECORDS if p == want]
            return [Document(page_content=CABLE_RECORDS[p], metadata={"pillar": p}) for p in ranked[:1]]

    cable_records = CableRecords().with_config(run_name="cable_records")
    asset_llm = llm.bind_tools([get_column, get_feeder_pillar])

    class S(TypedDict, total=False):
        request: dict
        reports: list
        messages: Annotated[list, operator.add]
        assets: dict
        groups: list
        jobs: Annotated[list, operator.add]
        result: dict

    def read_reports(state: dict) -> dict:
        text = "\n".join(f"{r['ref']}: {r['text']}" for r in state["request"]["reports"])
        return {"reports": read_chain.invoke({"reports": text})}

    def asset_agent(state: dict) -> dict:
        msgs = state.get("messages") or [
            SystemMessage("You look up street lighting assets: every column, then every feeder pillar."),
            HumanMessage(json.dumps({"columns": [r["column"] for r in state["reports"]]}))]
        reply = asset_llm.invoke(msgs)
        new = [reply] if state.get("messages") else [*msgs, reply]
        return {"messages": new}

    def after_asset_agent(state: dict) -> str:
        return "asset_tools" if state["messages"][-1].tool_calls else "collect_assets"

    def collect_assets(state: dict) -> dict:
        columns, pillars = {}, {}
        for m in state["messages"]:
            if getattr(m, "type", "") == "tool":
                data = json.loads(m.content)
                if "column" in data:
                    columns[data["column"]] = data
                else:
                    pillars[data["pillar"]] = data
        return {"assets": {"columns": columns, "pillars": pillars}}

    def group_by_pillar(state: dict) -> dict:
        groups: dict[str, dict] = {}
        for r in state["reports"]:
            pillar = state["assets"]["columns"][r["column"]]["pillar"]
            g = groups.setdefault(pillar, {"pillar": pillar, "reports": []})
            g["reports"].append({"ref": r["ref"], "column": r["column"], "arm": r["arm"], "symptom": r["symptom"],
                                 "severity": r["severity"]})
        return {"groups": list(groups.values())}

    def choose_crews(state: dict) -> list:
        """One crew per pillar group (several when a group needs several), each sent its own group."""
        supply = ("dark",) if _on("flicker_to_lamp") else ("dark", "flickering")
        sends = []
        for grp in state["groups"]:
            payload = {"group": grp, "request": state["request"], "assets": state["assets"]}
            if any(r["symptom"] == "damaged" for r in grp["reports"]):
                sends.append(Send("make_safe", payload))
            if sum(r["symptom"] in supply for r in grp["reports"]) >= 3:
                sends.append(Send("cable_crew", payload))
            elif any(r["symptom"] != "damaged" for r in grp["reports"]):
                sends.append(Send("lamp_crew", payload))
        return sends

    def lamp_crew(task: dict) -> dict:
        grp, assets = task["group"], task["assets"]
        by_code: dict[str, list] = {}
        for r in grp["reports"]:
            if r["symptom"] != "damaged":
                by_code.setdefault(assets["columns"][r["column"]]["lantern"], []).append(r)
        depot = task["request"]["crew_depot"]
        jobs = []
        for code, reports in sorted(by_code.items()):
            res = reserve_lanterns.invoke({"lantern_code": code, "quantity": len(reports), "depot": depot})
            for r in reports:
                job = {"type": "lamp_change", "column": r["column"], "lantern_code": code,
                       "priority": r["severity"], "reservation": res["reservation"], "reserved_at": res["depot"]}
                if r["arm"]:
                    job["arm"] = r["arm"]
                jobs.append(job)
        return {"jobs": jobs}

    def cable_crew(task: dict) -> dict:
        grp = task["group"]
        docs = cable_records.invoke(f"cable records for feeder pillar {grp['pillar']}")
        records = "\n".join(d.page_content for d in docs)
        answer = llm.invoke([
            SystemMessage("You plan a cable test for a feeder pillar with several dark or flickering columns. "
                          "Answer JSON: pillar, test, circuits, joints_to_check."),
            HumanMessage(f"Pillar: {grp['pillar']}\nColumns: {', '.join(r['column'] for r in grp['reports'])}\n"
                         f"Records:\n{records}")])
        plan = json.loads(answer.content)
        return {"jobs": [{"type": "cable_test", "pillar": grp["pillar"], "priority": 2,
                          "circuits": plan["circuits"], "joints_to_check": plan["joints_to_check"]}]}

    def make_safe(task: dict) -> dict:
        return {"jobs": [{"type": "make_safe", "column": r["column"], "priority": 1, "attend_within_h": 2}
                         for r in task["group"]["reports"] if r["symptom"] == "damaged"]}

    def submit(state: dict) -> dict:
        order = {"make_safe": 0, "cable_test": 1, "lamp_change": 2}
        jobs = sorted(state["jobs"], key=lambda j: (order[j["type"]], j.get("column", j.get("pillar"))))
        return {"result": submit_to_cms.invoke({"jobs": jobs, "depot": state["request"]["crew_depot"]})}

    g = StateGraph(S)
    g.add_node("read_reports", read_reports)
    g.add_node("asset_agent", asset_agent)
    g.add_node("asset_tools", ToolNode([get_column, get_feeder_pillar]))
    g.add_node("collect_assets", collect_assets)
    g.add_node("group_by_pillar", group_by_pillar)
    g.add_node("lamp_crew", lamp_crew)
    g.add_node("cable_crew", cable_crew)
    g.add_node("make_safe", make_safe)
    g.add_node("submit", submit)
    g.add_edge(START, "read_reports")
    g.add_edge("read_reports", "asset_agent")
    g.add_conditional_edges("asset_agent", after_asset_agent, ["asset_tools", "collect_assets"])
    g.add_edge("asset_tools", "asset_agent")
    g.add_edge("collect_assets", "group_by_pillar")
    g.add_conditional_edges("group_by_pillar", choose_crews, ["lamp_crew", "cable_crew", "make_safe"])
    for crew in ("lamp_crew", "cable_crew", "make_safe"):
        g.add_edge(crew, "submit")
    g.add_edge("submit", END)
    return g.compile()


_GRAPHS: dict[str, Any] = {}


def run(inp: dict, path: str, env: Env) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    graph = _GRAPHS.get(env.base_url) or _GRAPHS.setdefault(env.base_url, _build(env))
    tracer = TrajdebugTracer(path=path, name=NAME)
    task = f"overnight outages {inp['district']} {inp['night']}"
    graph.invoke({"request": inp}, config={"callbacks": [tracer], "metadata": {"task": task}})
