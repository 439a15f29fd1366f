"""Pothole repair crews (langgraph): citizen reports -> triage loop -> registry -> materials -> dispatch sub-graph -> work orders."""
from __future__ import annotations

import json
import operator
import re
from typing import Annotated, TypedDict

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .kit import active

AGENT = "pothole-repair-dispatch"
ROUTE = "langgraph"
DOMAIN = "pothole repair crews"

CREWS = {"north": ["Crew N1", "Crew N2"], "south": ["Crew S1"], "east": ["Crew E1", "Crew E2"]}
SCHOOL_ZONES = {"Carver St", "Linden Ave", "Abbey Rd", "Wren Close"}


def _rep(rows):
    return "\n".join(f"{i} | {st} | {d} | {w}cm x {l}cm | depth {dp}cm{' | near school' if st in SCHOOL_ZONES else ''}"
                     for i, st, d, w, l, dp in rows)


INPUTS = {
    "A": {"batch": "PR-0611", "text": _rep([("PH-301", "Market St", "north", 40, 30, 4), ("PH-302", "Carver St", "north", 35, 20, 6),
                                              ("PH-303", "Dock Rd", "south", 60, 45, 7), ("PH-304", "Kiln Way", "east", 25, 25, 3),
                                              ("PH-305", "Linden Ave", "east", 50, 40, 5)])},
    "B": {"batch": "PR-0612", "text": _rep([("PH-311", "Abbey Rd", "south", 30, 30, 5), ("PH-312", "Mercer Ln", "north", 70, 50, 8),
                                              ("PH-313", "Hale St", "east", 20, 15, 3), ("PH-314", "Wren Close", "north", 45, 35, 6),
                                              ("PH-315", "Gate Rd", "south", 55, 30, 4)])},
    "R1": {"batch": "PR-0613", "text": _rep([("PH-321", "Park Rd", "north", 30, 25, 4), ("PH-322", "Linden Ave", "east", 40, 40, 6),
                                               ("PH-323", "Quarry Ln", "south", 35, 30, 5)])},
    "R2": {"batch": "PR-0614", "text": _rep([("PH-331", "Carver St", "north", 45, 25, 7), ("PH-332", "Ferry Rd", "south", 30, 20, 3),
                                               ("PH-333", "Tanner St", "east", 65, 40, 6), ("PH-334", "Elm Grove", "north", 20, 20, 2)])},
    "R3": {"batch": "PR-0615", "text": _rep([("PH-341", "Mill Rd", "east", 50, 50, 5), ("PH-342", "Abbey Rd", "south", 30, 25, 4),
                                               ("PH-343", "Wren Close", "north", 40, 35, 6), ("PH-344", "Pike St", "south", 25, 20, 3),
                                               ("PH-345", "Oak Row", "east", 35, 30, 4)])},
    "R4": {"batch": "PR-0616", "text": _rep([("PH-351", "High St", "north", 60, 40, 8), ("PH-352", "Cross Ln", "east", 30, 30, 4)])},
}

CASES = [
    {"id": "zzf-pothole-01", "kind": "wrong_tool_args", "input": "A", "root": ("create_job", 2),
     "failure": ("issue_work_orders", 1),
     "desc": "create_jobs passes the first job's due_hours to every create_job call, so the school-zone repair gets a 72-hour deadline."},
    {"id": "zzf-pothole-02", "kind": "off_by_one", "input": "B", "root": ("estimate_materials", 1),
     "failure": ("issue_work_orders", 1),
     "desc": "estimate_materials starts its sum at the second report, so the asphalt order is short by the first repair's tonnage."},
    {"id": "zzf-pothole-03", "kind": "bad_memory_write", "input": "A", "root": ("log_triage", 3),
     "failure": ("issue_work_orders", 1),
     "desc": "log_triage files the third report's triage under the second report's id, so PH-303 drops out of the registry and gets no work order."},
    {"id": "zzf-pothole-04", "kind": "lossy_parsing", "input": "B", "root": ("ingest_reports", 1),
     "failure": ("issue_work_orders", 1),
     "desc": "ingest_reports drops the near-school marker, so the school-zone potholes are triaged as routine."},
    {"id": "zzf-pothole-05", "kind": "subagent_wrong_entity", "input": "A", "root": ("ChatOpenAI", 6),
     "failure": ("issue_work_orders", 1),
     "desc": "The dispatch sub-graph's planner lists PH-304 twice and never PH-305, so the Linden Ave pothole has no crew."},
]


@tool
def create_job(pothole: str, crew: str, due_hours: int) -> str:
    """Create a repair job for a crew."""
    return json.dumps({"job": f"J-{pothole[3:]}-{crew[-2:]}", "pothole": pothole, "crew": crew, "due_hours": due_hours})


class S(TypedDict, total=False):
    batch: dict
    reports: list
    idx: int
    last: dict
    registry: dict
    materials: dict
    jobs: list
    created: Annotated[list, operator.add]


def policy(request):
    msgs = request.body["messages"]
    m = json.loads(msgs[-1]["content"])
    if msgs[0]["content"].startswith("Triage"):
        urgent = m["depth_cm"] >= 6 or m["school"]
        return json.dumps({"id": m["id"], "severity": "urgent" if urgent else "routine", "due_hours": 24 if urgent else 72})
    jobs = []
    used: dict = {}
    for r in m["registry"]:
        crews = CREWS[r["district"]]
        crew = crews[used.get(r["district"], 0) % len(crews)]
        used[r["district"]] = used.get(r["district"], 0) + 1
        jobs.append({"pothole": r["id"], "crew": crew, "due_hours": r["due_hours"]})
    if active("zzf-pothole-05"):
        jobs[-1] = dict(jobs[-2], crew=jobs[-1]["crew"])
    return json.dumps({"jobs": jobs})


def build(llm):
    def ingest_reports(state: S) -> dict:
        out = []
        for line in state["batch"]["text"].splitlines():
            parts = [p.strip() for p in line.split("|")]
            w, l = map(int, re.findall(r"\d+", parts[3]))
            school = "near school" in parts[5:] and not active("zzf-pothole-04")
            out.append({"id": parts[0], "street": parts[1], "district": parts[2], "width_cm": w, "length_cm": l,
                        "depth_cm": int(re.findall(r"\d+", parts[4])[0]), "school": school})
        return {"reports": out, "idx": 0, "registry": {}}

    def triage_report(state: S) -> dict:
        r = state["reports"][state["idx"]]
        reply = llm.invoke([("system", "Triage the pothole. Answer JSON: id, severity, due_hours."), ("user", json.dumps(r))])
        return {"last": json.loads(reply.content)}

    def log_triage(state: S) -> dict:
        reg = dict(state["registry"])
        t = state["last"]
        key = t["id"]
        if active("zzf-pothole-03") and state["idx"] == 2:
            key = state["reports"][1]["id"]
        r = state["reports"][state["idx"]]
        reg[key] = {**t, "id": key, "district": r["district"]}
        return {"registry": reg, "idx": state["idx"] + 1}

    def next_report(state: S) -> str:
        return "triage_report" if state["idx"] < len(state["reports"]) else "estimate_materials"

    def estimate_materials(state: S) -> dict:
        reps = state["reports"][1:] if active("zzf-pothole-02") else state["reports"]
        tonnes = sum(r["width_cm"] * r["length_cm"] * r["depth_cm"] * 2.4e-6 for r in reps)
        return {"materials": {"asphalt_t": round(tonnes * 1.1, 4), "repairs": len(reps)}}

    def plan_dispatch(state: S) -> dict:
        reg = list(state["registry"].values())
        reply = llm.invoke([("system", "Assign crews to the triaged potholes. Answer JSON jobs."),
                            ("user", json.dumps({"registry": reg, "crews": CREWS}))])
        return {"jobs": json.loads(reply.content)["jobs"]}

    def create_jobs(state: S) -> dict:
        made = []
        jobs = state["jobs"]
        for j in jobs:
            due = jobs[0]["due_hours"] if active("zzf-pothole-01") else j["due_hours"]
            made.append(json.loads(create_job.invoke({"pothole": j["pothole"], "crew": j["crew"], "due_hours": due})))
        return {"created": made}

    sub = StateGraph(S)
    sub.add_node("plan_dispatch", plan_dispatch)
    sub.add_node("create_jobs", create_jobs)
    sub.add_edge(START, "plan_dispatch")
    sub.add_edge("plan_dispatch", "create_jobs")
    sub.add_edge("create_jobs", END)
    dispatch = sub.compile()

    def issue_work_orders(state: S) -> dict:
        by_id = {c["pothole"]: c for c in state["created"]}
        for r in state["reports"]:
            if r["id"] not in by_id:
                raise RuntimeError(f"work order batch {state['batch']['batch']} rejected: report {r['id']} "
                                   f"({r['street']}) has no repair job")
            if r["street"] in SCHOOL_ZONES and by_id[r["id"]]["due_hours"] > 24:
                raise RuntimeError(f"work order batch {state['batch']['batch']} rejected: {r['id']} on {r['street']} "
                                   f"is in a school zone and must be due within 24h, job says {by_id[r['id']]['due_hours']}h")
        need = sum(r["width_cm"] * r["length_cm"] * r["depth_cm"] * 2.4e-6 for r in state["reports"]) * 1.1
        if state["materials"]["asphalt_t"] + 1e-9 < round(need, 4):
            raise RuntimeError(f"depot order rejected: asphalt {state['materials']['asphalt_t']} t is below the "
                               f"{need:.4f} t needed for {len(state['reports'])} repairs")
        return {}

    g = StateGraph(S)
    for fn in (ingest_reports, triage_report, log_triage, estimate_materials):
        g.add_node(fn.__name__, fn)
    g.add_node("dispatch_crews", dispatch)
    g.add_node("issue_work_orders", issue_work_orders)
    g.add_edge(START, "ingest_reports")
    g.add_edge("ingest_reports", "triage_report")
    g.add_edge("triage_report", "log_triage")
    g.add_conditional_edges("log_triage", next_report, ["triage_report", "estimate_materials"])
    g.add_edge("estimate_materials", "dispatch_crews")
    g.add_edge("dispatch_crews", "issue_work_orders")
    g.add_edge("issue_work_orders", END)
    return g.compile()


def record(inp: dict, out, server) -> None:
    server.use(policy)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=str(out), name=AGENT, task=f"dispatch repairs for {inp['batch']}")
    try:
        build(llm).invoke({"batch": inp, "created": []}, config={"callbacks": [tracer], "recursion_limit": 80})
    except RuntimeError:
        pass
