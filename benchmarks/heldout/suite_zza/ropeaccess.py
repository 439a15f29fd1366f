"""Rope-access window cleaning (LangGraph): survey, anchors, height, permits with retry, wind window, routed crew team, job sheet."""

import json
import re
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

from .common import request_text
from .kit import active

AGENT = "rope-access-job-planner"
ROUTE = "langgraph"
DOMAIN = "rope-access window cleaning"
SHAPE = "StateGraph: intake -> survey tool -> parse -> height conversion -> rope kit check -> permit (retry) -> wind loop -> conditional route -> team node (LLM + roster tool) -> crew memory -> job sheet submit"

SITES = {
    "A": {"job": "RW-301", "site": "Harbour Tower", "height_ft": 128, "drops": 14, "anchors": "A1:pass,A2:pass,A3:due 2026-11-30", "start": "07:00"},
    "B": {"job": "RW-317", "site": "Quayside Offices", "height_ft": 190, "drops": 8, "anchors": "A1:pass,A2:pass", "start": "07:30"},
    "R1": {"job": "RW-250", "site": "Mill Court", "height_ft": 62, "drops": 6, "anchors": "A1:pass,A2:pass", "start": "08:00"},
    "R2": {"job": "RW-262", "site": "Civic Atrium", "height_ft": 151, "drops": 10, "anchors": "A1:pass,A2:pass,A3:pass", "start": "07:00"},
    "R3": {"job": "RW-271", "site": "Bank Chambers", "height_ft": 88, "drops": 9, "anchors": "A1:pass", "start": "07:30"},
    "R4": {"job": "RW-288", "site": "Dock Lofts", "height_ft": 204, "drops": 12, "anchors": "A1:pass,A2:pass,A3:pass", "start": "08:00"},
}
INPUTS = SITES
REFS = ["R1", "R2", "R3", "R4"]
ROSTER = {
    "facade": [{"name": "Imke Vos", "irata": 2}, {"name": "Tom Reyes", "irata": 1}],
    "highrise": [{"name": "Priya Nair", "irata": 3}, {"name": "Olek Mazur", "irata": 2}, {"name": "Sam Ode", "irata": 2}],
}
_calls: dict[str, int] = {}


@tool
def building_survey(site: str) -> str:
    """Fetch the building survey for a site."""
    s = next(v for v in SITES.values() if v["site"] == site)
    return f"HEIGHT_FT {s['height_ft']} | DROPS {s['drops']} | ANCHORS {s['anchors']}"


@tool
def council_permit(job: str) -> dict:
    """Fetch the council access permit for a job."""
    _calls[job] = _calls.get(job, 0) + 1
    if _calls[job] % 2 == 1:
        raise ConnectionError("council permit API 503: upstream busy, retry")
    return {"permit": f"P-{job[3:]}", "earliest_start": "07:00", "pavement_closure": True}


@tool
def wind_forecast(site: str, hour: int) -> dict:
    """Wind speed forecast at roof level for an hour of the day."""
    return {"site": site, "hour": hour, "gust_ms": 6 + hour % 3}


@tool
def crew_roster(team: str) -> list:
    """List the rope-access technicians of a team."""
    return ROSTER[team]


class S(TypedDict, total=False):
    job: dict
    survey_text: str
    survey: dict
    height_m: float
    kit: dict
    permit: dict
    wind: list
    team: str
    crew: list
    memory: dict
    sheet: dict


def policy(request: Any) -> Any:
    system, text = request_text(request)
    if "crew planner" in system:
        return Reply(tool_calls=(tool_call("crew_roster", {"team": re.search(r"TEAM (\w+)", text).group(1)}),))
    if "crew selector" in system:
        roster = json.loads(re.search(r"ROSTER (\[.*\])", text).group(1))
        return json.dumps({"crew": [r["name"] for r in roster]})
    return "ok"


def build(base_url: str) -> Any:
    llm = ChatOpenAI(model="fake-model", base_url=base_url, api_key="sk-local-test", max_retries=0)

    def intake(state: S) -> S:
        return {"job": dict(state["job"])}

    def fetch_survey(state: S, config: RunnableConfig) -> S:
        return {"survey_text": building_survey.invoke({"site": state["job"]["site"]}, config)}

    def parse_survey(state: S) -> S:
        fields = dict(p.strip().split(" ", 1) for p in state["survey_text"].split("|"))
        anchors = {}
        for item in fields["ANCHORS"].split(","):
            name, status = item.split(":", 1)
            anchors[name] = status if not active("rope_02") else status.split(" ")[0].replace("due", "pass")
        return {"survey": {"height_ft": float(fields["HEIGHT_FT"]), "drops": int(fields["DROPS"]), "anchors": anchors}}

    def convert_height(state: S) -> S:
        ft = state["survey"]["height_ft"]
        return {"height_m": round(ft if active("rope_03") else ft * 0.3048, 1)}

    def check_rope_kit(state: S) -> S:
        h = state["height_m"]
        kit = {"kit": "RK-100", "rated_m": 100}
        if h > kit["rated_m"]:
            raise ValueError(f"rope kit RK-100 rated for 100 m descents; planned descent {h} m")
        return {"kit": kit}

    def check_permits(state: S, config: RunnableConfig) -> S:
        job = state["job"]["job"]
        for _ in range(3):
            try:
                return {"permit": council_permit.invoke({"job": job}, config)}
            except ConnectionError:
                if active("rope_05"):
                    return {"permit": {"permit": "pending", "earliest_start": "06:00"}}
        return {"permit": {}}

    def wind_window(state: S, config: RunnableConfig) -> S:
        hours = [int(state["job"]["start"][:2]) + i for i in range(3)]
        return {"wind": [wind_forecast.invoke({"site": state["job"]["site"], "hour": h}, config) for h in hours]}

    def route_team(state: S) -> str:
        if active("rope_01"):
            return "highrise_team" if state["survey"]["drops"] >= 12 else "facade_team"
        return "highrise_team" if state["height_m"] >= 40 else "facade_team"

    def team(name: str) -> Any:
        def node(state: S, config: RunnableConfig) -> S:
            msg = llm.invoke([SystemMessage("You are the crew planner."), HumanMessage(f"JOB {state['job']['job']} TEAM {name}")], config)
            roster = crew_roster.invoke(msg.tool_calls[0]["args"], config)
            pick = llm.invoke([SystemMessage("You are the crew selector. Answer JSON."), HumanMessage(f"ROSTER {json.dumps(roster)}")], config)
            names = json.loads(pick.content)["crew"]
            return {"team": name, "crew": [r for r in roster if r["name"] in names]}
        return node

    def remember_crew(state: S) -> S:
        crew = state["crew"]
        if active("rope_04"):
            crew = sorted(crew, key=lambda r: r["irata"])[:2]
        return {"memory": {"job": state["job"]["job"], "crew": crew, "supervisor": max(r["irata"] for r in crew)}}

    def submit_job_sheet(state: S) -> S:
        job, survey, permit, mem = state["job"], state["survey"], state["permit"], state["memory"]
        true_anchors = dict(a.split(":", 1) for a in job["anchors"].split(","))
        for name, status in true_anchors.items():
            if status.startswith("due") and survey["anchors"].get(name) == "pass":
                raise RuntimeError(f"safety register 409: anchor {name} at {job['site']} certification lapsed ({status}); sheet lists it as pass")
        if state["height_m"] >= 40 and not any(r["irata"] >= 3 for r in mem["crew"]):
            raise RuntimeError(f"safety register 422: job {job['job']} over 40 m needs an IRATA level 3 supervisor; crew {[r['name'] for r in mem['crew']]}")
        if permit.get("earliest_start", "99") > job["start"] or not permit.get("permit", "").startswith("P-"):
            raise RuntimeError(f"job sheet 422: no council permit on file for {job['job']} (permit {permit.get('permit')})")
        return {"sheet": {"status": 201, "job": job["job"], "crew": [r["name"] for r in mem["crew"]]}}

    g = StateGraph(S)
    seq = [("intake", intake), ("fetch_survey", fetch_survey), ("parse_survey", parse_survey), ("convert_height", convert_height),
           ("check_rope_kit", check_rope_kit), ("check_permits", check_permits), ("wind_window", wind_window)]
    for n, fn in seq:
        g.add_node(n, fn)
    g.add_node("facade_team", team("facade"))
    g.add_node("highrise_team", team("highrise"))
    g.add_node("remember_crew", remember_crew)
    g.add_node("submit_job_sheet", submit_job_sheet)
    g.add_edge(START, "intake")
    for (a, _), (b, _) in zip(seq, seq[1:]):
        g.add_edge(a, b)
    g.add_conditional_edges("wind_window", route_team, ["facade_team", "highrise_team"])
    g.add_edge("facade_team", "remember_crew")
    g.add_edge("highrise_team", "remember_crew")
    g.add_edge("remember_crew", "submit_job_sheet")
    g.add_edge("submit_job_sheet", END)
    return g.compile()


def record(key: str, path: Path, base_url: str) -> None:
    _calls.clear()
    graph = build(base_url)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"plan rope-access cleaning job {SITES[key]['job']}")
    try:
        graph.invoke({"job": SITES[key]}, config={"callbacks": [tracer]})
    except (ValueError, RuntimeError):
        pass


CASES = [
    dict(case="rope_01", fault_kind="wrong_routing", input="B", root=("route_team", 1, "other"), failure=("submit_job_sheet", 1),
         description="The team router branches on the number of drops instead of the height, sending a 58 m building to the facade team without a level 3 supervisor."),
    dict(case="rope_02", fault_kind="lossy_parsing", input="A", root=("parse_survey", 1, "other"), failure=("submit_job_sheet", 1),
         description="The survey parser keeps only the first word of each anchor status and maps a due inspection to pass, so the job sheet lists a lapsed anchor."),
    dict(case="rope_03", fault_kind="unit_error", input="B", root=("convert_height", 1, "other"), failure=("check_rope_kit", 1),
         description="The height conversion takes the survey's feet as metres, and the rope kit check finds the descent longer than the kit's rating."),
    dict(case="rope_04", fault_kind="bad_memory_write", input="B", root=("remember_crew", 1, "other"), failure=("submit_job_sheet", 1),
         description="The crew memory keeps the two least qualified technicians, dropping the level 3 supervisor the job sheet needs."),
    dict(case="rope_05", fault_kind="swallowed_error", input="B", root=("check_permits", 1, "agent"), failure=("submit_job_sheet", 1),
         description="The permit node catches the permit API's busy error and carries on with a pending placeholder permit, which the job sheet refuses."),
]
