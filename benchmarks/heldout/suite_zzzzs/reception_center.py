"""Spontaneous-volunteer reception centre after a town flood: walk-in helpers registered, screened and matched
to the emergency operations centre's task board.

Route: langgraph (a real StateGraph with ChatOpenAI, ToolNode, a retriever and output parsers, recorded by
trajdebug's LangChain callback, JSONL). Shape: form parser, task-board retriever + planning model with a JSON
parser, a screening node calling the background-check tool per volunteer, an age node, a handover-log node,
a tool-calling matcher with parallel assignment calls, a final staffing check.
"""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Annotated, TypedDict

from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser, JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

import _common
from _common import messages_of, system_of
from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

NAME = "flood-volunteer-reception"
ROUTE = "langgraph"
DOMAIN = "spontaneous-volunteer reception centre after a flood"
SHAPE = ("form parser, retriever + llm plan with JSON parser, per-volunteer check tool loop, code node, handover "
         "tool node, tool-calling matcher with parallel calls, final check")
SWITCH = None

BOARDS = {
    "Highbury": [
        {"task": "T-01", "what": "sandbag filling", "site": "Mill Lane depot", "min_age": 16, "skill": None, "dbs": False},
        {"task": "T-02", "what": "muck-out", "site": "Church Row houses", "min_age": 18, "skill": None, "dbs": False},
        {"task": "T-03", "what": "tree clearance", "site": "Weir Rd", "min_age": 18, "skill": "chainsaw", "dbs": False},
        {"task": "T-04", "what": "shelter childcare", "site": "St Anne's hall", "min_age": 18, "skill": None, "dbs": True},
        {"task": "T-05", "what": "welfare calls", "site": "St Anne's hall", "min_age": 16, "skill": None, "dbs": False},
    ],
    "Lowbury": [
        {"task": "LB-T01", "what": "sandbag filling", "site": "Mill Rd yard", "min_age": 16, "skill": None, "dbs": False},
        {"task": "LB-T02", "what": "muck-out", "site": "Chapel Row", "min_age": 18, "skill": None, "dbs": False},
        {"task": "LB-T03", "what": "welfare calls", "site": "Lowbury library", "min_age": 16, "skill": None, "dbs": False},
    ],
}
DBS_REGISTER = {"Ravi Menon", "Jo Hart", "Aisha Bello", "Grace Ng", "Owen Pike", "Lena Vos"}
HANDOVER = {
    "open_issues": ["Church Row no 14 still has standing water", "St Anne's hall needs more cots"],
    "assignments_yesterday": [{"name": "Priya Shah", "task": "T-04"}, {"name": "Mark Lowe", "task": "T-03"}],
}

INPUTS = [
    {"task": "Highbury reception desk, 2025-06-19 morning intake", "town": "Highbury", "day": "2025-06-19",
     "teams": {"T-01": 2, "T-03": 1, "T-05": 1},
     "forms": ["Ravi Menon | dob 1988-03-14 | skills: first aid; chainsaw | phone 07700 900123",
               "Sue Clay | dob 1979-11-02 | skills: none | phone 07700 900456",
               "Jo Hart | dob 1995-07-21 | skills: first aid | phone 07700 900789",
               "Ben Ito | dob 2001-01-30 | skills: driving | phone 07700 900321"]},
    {"task": "Highbury reception desk, 2025-06-20 morning intake", "town": "Highbury", "day": "2025-06-20",
     "teams": {"T-01": 2, "T-02": 2},
     "forms": ["Tom Price | dob 2007-09-02 | skills: none | phone 07700 900111",
               "Aisha Bello | dob 1984-05-09 | skills: first aid | phone 07700 900222",
               "Kim Doyle | dob 2008-02-11 | skills: none | phone 07700 900333",
               "Grace Ng | dob 1990-12-01 | skills: first aid, driving | phone 07700 900444",
               "Dan Frost | dob 1999-06-18 | skills: none | phone 07700 900555"]},
    {"task": "Highbury reception desk, 2025-06-21 morning intake", "town": "Highbury", "day": "2025-06-21",
     "teams": {"T-01": 2, "T-02": 2},
     "forms": ["Owen Pike | dob 1975-04-04 | skills: first aid | phone 07700 900666",
               "Nell Ward | dob 2000-08-30 | skills: none | phone 07700 900777",
               "Raj Patel | dob 1993-02-14 | skills: driving | phone 07700 900888",
               "Lena Vos | dob 1986-10-10 | skills: first aid | phone 07700 900999",
               "Cal Reid | dob 1997-03-03 | skills: none | phone 07700 900100"]},
    {"task": "Highbury reception desk, 2025-06-22 morning intake", "town": "Highbury", "day": "2025-06-22",
     "teams": {"T-01": 2, "T-02": 2},
     "forms": ["Grace Ng | dob 1990-12-01 | skills: first aid, driving | phone 07700 900444",
               "Ben Ito | dob 2001-01-30 | skills: driving | phone 07700 900321",
               "Sue Clay | dob 1979-11-02 | skills: none | phone 07700 900456",
               "Owen Pike | dob 1975-04-04 | skills: first aid | phone 07700 900666"]},
    {"task": "Highbury reception desk, 2025-06-23 morning intake", "town": "Highbury", "day": "2025-06-23",
     "teams": {"T-04": 1, "T-05": 1, "T-01": 2},
     "forms": ["Lena Vos | dob 1986-10-10 | skills: first aid | phone 07700 900999",
               "Nell Ward | dob 2000-08-30 | skills: none | phone 07700 900777",
               "Jo Hart | dob 1995-07-21 | skills: first aid | phone 07700 900789",
               "Cal Reid | dob 1997-03-03 | skills: none | phone 07700 900100"]},
]

CASES = [
    {"id": "reception_center-1", "input": 0, "kind": "lossy_parsing",
     "root": ("RegistrationFormParser", 1, "parse"), "failure": ("final_check", 1),
     "what": "'first aid; chainsaw' is kept as one skill, so Ravi Menon's chainsaw ticket is lost",
     "description": "The registration-form parser split skills on commas only, so the one chainsaw holder's "
                    "ticket vanished inside 'first aid; chainsaw' and tree clearance is left unstaffed."},
    {"id": "reception_center-2", "input": 1, "kind": "off_by_one",
     "root": ("compute_ages", 1, "other"), "failure": ("assign_volunteer", 2),
     "what": "ages are computed from birth years only: Tom Price (born 2007-09-02) is taken as 18 on 2025-06-20",
     "description": "The age node subtracted birth years without checking whether the birthday had passed, so a "
                    "17-year-old is matched to the 18-plus muck-out team and the assignment is refused."},
    {"id": "reception_center-3", "input": 2, "kind": "plan_error",
     "root": ("ChatOpenAI", 1, "llm"), "failure": ("final_check", 1),
     "what": "the shift plan puts first-aid cover on the sandbag depot only, not on the muck-out team",
     "description": "The shift-planning model asked for a first-aid lead only at the sandbag depot, so the "
                    "muck-out team goes out without a first-aider and the staffing check fails."},
    {"id": "reception_center-4", "input": 3, "kind": "wrong_retrieval",
     "root": ("TaskBoardRetriever", 1, "retrieval"), "failure": ("assign_volunteer", 1),
     "what": "the task-board search returned Lowbury's board (Mill Rd, Chapel Row) for Highbury",
     "description": "The task-board retriever returned the neighbouring Lowbury board for a Highbury query, so "
                    "the matcher assigns volunteers to task ids the Highbury operations centre does not hold."},
    {"id": "reception_center-5", "input": 4, "kind": "context_pollution",
     "root": ("load_handover", 1, "agent"), "failure": ("assign_volunteer", 1),
     "what": "the whole handover log, with yesterday's assignments, is put into the matcher's prompt",
     "description": "The handover node passed yesterday's assignments into the matcher's prompt along with the "
                    "open issues, and the matcher re-assigns a volunteer who has not registered today."},
]


class RegistrationFormParser(BaseOutputParser[list]):
    """Reads the walk-in registration forms, one per line."""

    def parse(self, text: str) -> list:
        out = []
        for k, line in enumerate(text.splitlines(), 1):
            f = [p.strip() for p in line.split("|")]
            raw = f[2].split(":", 1)[1]
            sep = r"," if SWITCH == "reception_center-1" else r"[,;]"
            skills = [s.strip() for s in re.split(sep, raw) if s.strip() and s.strip() != "none"]
            out.append({"id": f"W-{k:02d}", "name": f[0], "dob": f[1].split()[1], "skills": skills})
        return out


class TaskBoardRetriever(BaseRetriever):
    """Open requests on an emergency operations centre's task board."""

    def _get_relevant_documents(self, query: str, *, run_manager=None) -> list[Document]:
        town = query.split()[0]
        if SWITCH == "reception_center-4":
            town = "Lowbury"  # nearest board by similarity of its street names
        return [Document(page_content=f"{t['what']} at {t['site']}", metadata=dict(t, town=town))
                for t in BOARDS[town]]


@tool
def check_dbs(name: str) -> dict:
    """Look a volunteer up in the background-check register."""
    return {"name": name, "dbs_clear": name in DBS_REGISTER}


@tool
def read_handover_log(town: str, day: str) -> dict:
    """The previous shift's handover log."""
    return dict(HANDOVER, town=town, written="evening before " + day)


ASSIGNED: dict[str, list[str]] = {}


@tool
def assign_volunteer(name: str, task: str) -> dict:
    """Assign a registered volunteer to a task on the town's board and print their badge."""
    st = _CURRENT
    vol = next((v for v in st["volunteers"] if v["name"] == name), None)
    if vol is None:
        raise ValueError(f"no registration for {name} on {st['day']}")
    board = {t["task"]: t for t in BOARDS[st["town"]]}
    if task not in board:
        raise ValueError(f"task {task} is not on the {st['town']} operations board")
    t = board[task]
    born = date.fromisoformat(vol["dob"])
    on = date.fromisoformat(st["day"])
    age = on.year - born.year - ((on.month, on.day) < (born.month, born.day))
    if age < t["min_age"]:
        raise ValueError(f"{name} is {age} on {st['day']}; {task} {t['what']} needs {t['min_age']}+")
    ASSIGNED.setdefault(task, []).append(name)
    return {"badge": f"{task}/{vol['id']}", "name": name, "site": t["site"]}


_CURRENT: dict = {}


class S(TypedDict, total=False):
    request: dict
    volunteers: list
    board: list
    plan: dict
    handover: str
    messages: Annotated[list, add_messages]


def build(llm):
    matcher_llm = llm.bind_tools([assign_volunteer])

    def intake(state: S) -> dict:
        vols = RegistrationFormParser().invoke("\n".join(state["request"]["forms"]))
        _CURRENT["volunteers"] = vols
        return {"volunteers": vols}

    def plan_shift(state: S) -> dict:
        req = state["request"]
        docs = TaskBoardRetriever().invoke(f"{req['town']} flood tasks open {req['day']}")
        board = [d.metadata for d in docs]
        plan = (llm | JsonOutputParser()).invoke([
            SystemMessage("You plan a flood volunteer shift from the operations board: one team per requested task, "
                          "with its size and whether it needs a first-aid lead. Answer JSON {\"teams\": [...]}."),
            HumanMessage(json.dumps({"requested": req["teams"], "board": board})),
        ])
        return {"board": board, "plan": plan}

    def screen(state: S) -> dict:
        out = []
        for v in state["volunteers"]:
            out.append(dict(v, dbs_clear=check_dbs.invoke({"name": v["name"]})["dbs_clear"]))
        _CURRENT["volunteers"] = out
        return {"volunteers": out}

    def compute_ages(state: S) -> dict:
        on = date.fromisoformat(state["request"]["day"])
        out = []
        for v in state["volunteers"]:
            born = date.fromisoformat(v["dob"])
            age = on.year - born.year
            if SWITCH != "reception_center-2":
                age -= (on.month, on.day) < (born.month, born.day)
            out.append(dict(v, age=age))
        return {"volunteers": out}

    def load_handover(state: S) -> dict:
        log = read_handover_log.invoke({"town": state["request"]["town"], "day": state["request"]["day"]})
        if SWITCH == "reception_center-5":
            return {"handover": json.dumps(log)}
        return {"handover": json.dumps({"open_issues": log["open_issues"]})}

    def matcher(state: S) -> dict:
        msg = matcher_llm.invoke([
            SystemMessage("You match registered flood volunteers to the planned teams with assign_volunteer, "
                          "respecting age limits, skills and background checks; then confirm."),
            HumanMessage(json.dumps({"teams": state["plan"]["teams"], "board": state["board"],
                                     "volunteers": state["volunteers"]})),
            HumanMessage("Handover: " + state["handover"]),
        ] + state.get("messages", []))
        return {"messages": [msg]}

    def final_check(state: S) -> dict:
        fa = {v["name"] for v in state["volunteers"] if "first aid" in v["skills"]}
        for team, size in state["request"]["teams"].items():
            names = ASSIGNED.get(team, [])
            if len(names) < size:
                raise RuntimeError(f"{team} is short: {len(names)} of {size} places filled")
            if size >= 2 and not fa & set(names):
                raise RuntimeError(f"{team} team ({', '.join(names)}) goes out without a first-aider")
        return {}

    g = StateGraph(S)
    for name, fn in (("intake", intake), ("plan_shift", plan_shift), ("screen", screen),
                     ("compute_ages", compute_ages), ("load_handover", load_handover), ("matcher", matcher),
                     ("final_check", final_check)):
        g.add_node(name, fn)
    g.add_node("tools", ToolNode([assign_volunteer]))
    g.add_edge(START, "intake")
    g.add_edge("intake", "plan_shift")
    g.add_edge("plan_shift", "screen")
    g.add_edge("screen", "compute_ages")
    g.add_edge("compute_ages", "load_handover")
    g.add_edge("load_handover", "matcher")
    g.add_conditional_edges("matcher", tools_condition, {"tools": "tools", "__end__": "final_check"})
    g.add_edge("tools", "matcher")
    g.add_edge("final_check", END)
    return g.compile()


_graph = None


def execute(inp: dict, out_path: str) -> None:
    global _graph
    if _graph is None:
        _graph = build(ChatOpenAI(model=_common.MODEL, base_url=_common.BASE_URL, api_key="not-needed",
                                  max_retries=0))
    ASSIGNED.clear()
    _CURRENT.clear()
    _CURRENT.update(town=inp["town"], day=inp["day"], volunteers=[])
    tracer = TrajdebugTracer(path=out_path, name=NAME, task=inp["task"])
    try:
        _graph.invoke({"request": inp}, config={"callbacks": [tracer]})
    except (RuntimeError, ValueError):
        pass


def brain(request):
    system = system_of(request)
    msgs = messages_of(request)
    if system.startswith("You plan a flood"):
        req = json.loads(msgs[-1]["content"])
        board = {t["what"]: t["task"] for t in req["board"]}
        by_id = {t["task"]: t for t in req["board"]}
        teams = []
        for task, size in req["requested"].items():
            if task not in by_id:  # the request names a task of the board by what it is
                task = board.get({"T-01": "sandbag filling", "T-02": "muck-out", "T-05": "welfare calls"}.get(
                    task, ""), task)
            lead = size >= 2
            if SWITCH == "reception_center-3":
                lead = by_id.get(task, {}).get("what") == "sandbag filling"
            teams.append({"task": task, "size": size, "first_aid_lead": lead})
        return json.dumps({"teams": teams})
    if system.startswith("You match"):
        data = json.loads(msgs[1]["content"])
        handover = json.loads(msgs[2]["content"].split(": ", 1)[1])
        if any(m["role"] == "tool" for m in msgs):
            return f"Assigned {sum(m['role'] == 'tool' for m in msgs)} volunteers."
        board = {t["task"]: t for t in data["board"]}
        free = list(data["volunteers"])
        calls = []
        wanted = {t["task"] for t in data["teams"]}
        for prev in handover.get("assignments_yesterday", []):  # keep yesterday's people on their tasks
            if prev["task"] in wanted:
                calls.append(tool_call("assign_volunteer", {"name": prev["name"], "task": prev["task"]}))
        order = sorted(data["teams"], key=lambda t: (board[t["task"]]["skill"] is None, not board[t["task"]]["dbs"],
                                                     -board[t["task"]]["min_age"]))
        for team in order:
            t = board[team["task"]]
            ok = [v for v in free if v["age"] >= t["min_age"] and (t["skill"] is None or t["skill"] in v["skills"])
                  and (not t["dbs"] or v["dbs_clear"])]
            ok.sort(key=lambda v: "first aid" in v["skills"])  # keep first-aiders for the teams that need a lead
            if team["first_aid_lead"]:
                lead = [v for v in ok if "first aid" in v["skills"]][:1]
                ok = lead + [v for v in ok if v not in lead]
            for v in ok[:team["size"]]:
                free.remove(v)
                calls.append(tool_call("assign_volunteer", {"name": v["name"], "task": team["task"]}))
        return Reply(tool_calls=tuple(calls))
    return "Unknown request."
