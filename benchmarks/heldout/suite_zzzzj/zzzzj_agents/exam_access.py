"""A school exams officer's assistant: sets up a candidate's access arrangements for one exam paper.

Route: a LangGraph StateGraph with LangChain runnables, recorded by trajdebug's LangChain callback (JSONL).
Shape: intake (model -> JSON parser) -> evidence sub-graph (candidate search tool -> model picks the
candidate -> assessment report tool) -> model decides the arrangements (JSON parser) -> registration with
the awarding bodies' portal -> conditional edge (separate room or main hall) -> room tool -> timetable and
finish-time tools -> model plans the admin tasks -> tasks run in a loop -> final check -> notice.
"""

from __future__ import annotations

import json
import operator
import re
from typing import Annotated, Any, TypedDict

from langchain_core.output_parsers import JsonOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

from . import common

NAME = "exam-access-planner"
ROUTE = "langgraph"
DOMAIN = "secondary school exams office: access arrangements for GCSE candidates"
SHAPE = "LangGraph: prompt -> model -> parser chains, sub-graph, conditional edge, tools, planned task loop, final check"
SWITCH = None

CANDIDATES = [
    {"candidate_number": "4417", "name": "Jordan Lee", "year": 11},
    {"candidate_number": "5102", "name": "Amira Haddad", "year": 11},
    {"candidate_number": "3991", "name": "Callum Reid", "year": 10},
    {"candidate_number": "3990", "name": "Callum Reid", "year": 11},
    {"candidate_number": "4021", "name": "Sophie Turner", "year": 11},
    {"candidate_number": "4630", "name": "Daniel Osei", "year": 11},
]
REPORTS = {
    "4417": {"assessor": "J. Patel (SpLD)", "processing_speed": 78, "reading_accuracy": 74, "needs": ["extra time", "reader"]},
    "5102": {"assessor": "R. Holt (EP)", "processing_speed": 81, "reading_accuracy": 96, "needs": ["extra time", "separate room"]},
    "3991": {"assessor": "J. Patel (SpLD)", "processing_speed": 72, "reading_accuracy": 70, "needs": ["extra time", "reader"]},
    "3990": {"assessor": "S. Grey (SENCo)", "processing_speed": 83, "reading_accuracy": 99, "needs": ["extra time"]},
    "4021": {"assessor": "R. Holt (EP)", "processing_speed": 76, "reading_accuracy": 79, "needs": ["extra time", "reader"]},
    "4630": {"assessor": "CAMHS letter", "processing_speed": 95, "reading_accuracy": 101, "needs": ["separate room"]},
}
TIMETABLE = {"8300/1H": ("2025-05-15", "09:00", 90), "8702/1": ("2025-05-12", "09:00", 105),
             "8461/1H": ("2025-05-13", "09:00", 105), "8462/1H": ("2025-05-19", "13:30", 105),
             "8145/1": ("2025-06-04", "09:00", 120)}
ROOMS = [  # first free room by capacity order
    {"room": "Sports Hall", "capacity": 180, "features": []},
    {"room": "Library Annexe", "capacity": 12, "features": ["separate room"]},
    {"room": "Room S4", "capacity": 2, "features": ["separate room", "reader"]},
]

INPUTS = [
    {"request_id": "eo-311", "text": "Set up access arrangements for candidate 4417 Jordan Lee, Maths 8300/1H."},
    {"request_id": "eo-312", "text": "Access arrangements for Amira Haddad (5102), English Literature 8702/1 please."},
    {"request_id": "eo-313", "text": "Candidate 3990 Callum Reid sits Biology 8461/1H: arrange what he is entitled to."},
    {"request_id": "eo-314", "text": "Please sort Sophie Turner's (4021) arrangements for Chemistry 8462/1H."},
    {"request_id": "eo-315", "text": "Daniel Osei, candidate 4630, History 8145/1: set up his arrangements."},
]

CASES = [
    {"id": "C1", "input": 3, "fault_kind": "wrong_routing",
     "root": ("route_room", 1), "failure": ("book_invigilator", 1),
     "description": "The room router looked only at the separate-room flag, so Sophie Turner, who has a reader, was "
                    "sent to the main hall and the reader's invigilator could not be booked there."},
    {"id": "C2", "input": 1, "fault_kind": "format_drift",
     "root": ("decide_arrangements", 1), "failure": ("compute_finish_time", 1),
     "description": "The arrangements model answered extra time as a text field 'extra_time': '25%' instead of the "
                    "integer extra_time_pct it gives otherwise, and the finish-time tool could not read it."},
    {"id": "C3", "input": 0, "fault_kind": "plan_error",
     "root": ("plan_tasks", 1), "failure": ("final_check", 1),
     "description": "The task planner left book_reader out of the admin plan for a candidate granted a reader, so "
                    "the final check found no reader booked for the paper."},
    {"id": "C4", "input": 4, "fault_kind": "tool_ignores_argument",
     "root": ("find_room", 1), "failure": ("book_invigilator", 1),
     "description": "The room finder ignored the needs argument ['separate room'] and returned the first free room, "
                    "the Sports Hall, so no separate-room invigilator could be booked."},
    {"id": "C5", "input": 2, "fault_kind": "subagent_wrong_entity",
     "root": ("pick_candidate", 1), "failure": ("register_arrangements", 1),
     "description": "The evidence sub-agent picked the first 'Callum Reid' the search returned (3991, Year 10) "
                    "instead of candidate 3990, so the portal refused the arrangements filed against 3990's entry."},
]


def brain(request):
    system = common.system_text(request)
    user = common.user_text(request)
    if system.startswith("Extract"):
        number = re.search(r"\b(\d{4})\b", user).group(1)
        paper = re.search(r"\b(\d{4}/\d[A-Z]?)\b", user).group(1)
        name = next(c["name"] for c in CANDIDATES if c["candidate_number"] == number)
        return json.dumps({"candidate_number": number, "name": name, "paper": paper})
    if system.startswith("Pick"):
        ask = json.loads(user)
        hits = ask["results"]
        pick = hits[0] if SWITCH == "C5" else next(h for h in hits if h["candidate_number"] == ask["candidate_number"])
        return json.dumps({"candidate_number": pick["candidate_number"], "why": f"{pick['name']}, year {pick['year']}"})
    if system.startswith("Decide"):
        report = json.loads(user)["report"]
        needs = report["needs"]
        extra = 25 if "extra time" in needs else 0
        out = {"extra_time_pct": extra, "reader": "reader" in needs, "separate_room": "separate room" in needs}
        if SWITCH == "C2":
            out = {"extra_time": f"{extra}%", "reader": out["reader"], "separate_room": out["separate_room"]}
        return json.dumps(out)
    if system.startswith("Plan"):
        arr = json.loads(user)["arrangements"]
        tasks = ["book_invigilator"]
        if arr.get("reader") and SWITCH != "C3":
            tasks.append("book_reader")
        tasks += ["order_papers", "notify_candidate"]
        return json.dumps({"tasks": tasks})
    if system.startswith("Write"):
        d = json.loads(user)
        return (f"{d['name']}: {d['paper']} in {d['room']}, {d['start']} to {d['finish']}. "
                f"Arrangements: {', '.join(d['granted'])}.")
    return "Sorry, I can't help with that."


# -- tools ----------------------------------------------------------------------------------------


@tool
def search_candidates(name: str) -> list:
    """Candidates entered this series whose name matches."""
    return [c for c in CANDIDATES if c["name"].lower() == name.lower()]


@tool
def get_assessment_report(candidate_number: str) -> dict:
    """The candidate's Form 8 assessment evidence."""
    return {"candidate_number": candidate_number, **REPORTS[candidate_number]}


@tool
def register_arrangements(entry_number: str, form_candidate: str, arrangements: dict) -> dict:
    """File the arrangements with the awarding bodies' access arrangements portal."""
    if entry_number != form_candidate:
        raise ValueError(f"portal refused: Form 8 evidence is for candidate {form_candidate}, "
                         f"the entry is candidate {entry_number}")
    return {"approval": f"AAO-{entry_number}-25", "status": "approved"}


@tool
def find_room(date: str, session: str, needs: list) -> dict:
    """First free exam room on that date and session that meets every need."""
    rooms = ROOMS
    if SWITCH != "C4":
        rooms = [r for r in ROOMS if all(n in r["features"] for n in needs)]
    return {"date": date, "session": session, **rooms[0]}


@tool
def assign_hall_seat(paper: str, candidate_number: str) -> dict:
    """Seat in the main exam hall."""
    return {"room": "Sports Hall", "seat": f"{paper[:4]}-{int(candidate_number) % 90 + 1}", "features": []}


@tool
def get_exam_timetable(paper: str) -> dict:
    """Date, start time and duration of a paper."""
    d, start, minutes = TIMETABLE[paper]
    return {"paper": paper, "date": d, "start": start, "duration_min": minutes}


@tool
def compute_finish_time(start: str, duration_min: int, arrangements: dict) -> dict:
    """Finish time with the candidate's extra time."""
    if "extra_time_pct" not in arrangements:
        raise KeyError(f"extra_time_pct missing from arrangements {sorted(arrangements)}")
    total = duration_min + duration_min * int(arrangements["extra_time_pct"]) // 100
    h, m = map(int, start.split(":"))
    end = h * 60 + m + total
    return {"start": start, "minutes": total, "finish": f"{end // 60:02d}:{end % 60:02d}"}


@tool
def book_invigilator(room: dict, arrangements: dict) -> dict:
    """Book an invigilator for the room (a reader's room needs a 1:1 desk)."""
    needs = (["reader"] if arrangements.get("reader") else []) + (
        ["separate room"] if arrangements.get("separate_room") else [])
    missing = [n for n in needs if n not in room["features"]]
    if missing:
        raise ValueError(f"{room['room']} cannot host a candidate who needs {', '.join(missing)}")
    return {"room": room["room"], "invigilator": "Mrs K. Obi" if needs else "hall team"}


@tool
def book_reader(candidate_number: str, paper: str) -> dict:
    """Book a reader for the candidate."""
    return {"candidate_number": candidate_number, "paper": paper, "reader": "Mr D. Hughes"}


@tool
def order_papers(paper: str, modified: bool) -> dict:
    """Order question papers (modified papers if needed)."""
    return {"paper": paper, "copies": 1, "modified": modified}


@tool
def notify_candidate(candidate_number: str) -> dict:
    """Queue the candidate notice."""
    return {"candidate_number": candidate_number, "queued": True}


TASK_TOOLS = {"book_invigilator": book_invigilator, "book_reader": book_reader, "order_papers": order_papers,
              "notify_candidate": notify_candidate}


class State(TypedDict, total=False):
    request: str
    entry: dict
    candidate: dict
    report: dict
    arrangements: dict
    approval: dict
    room: dict
    timing: dict
    tasks: list
    done: Annotated[list, operator.add]
    notice: str


class Evidence(TypedDict, total=False):
    entry: dict
    results: list
    candidate: dict
    report: dict


def _llm():
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(base_url=common.SERVER.base_url, api_key="not-needed", model=common.SERVER.model,
                      max_retries=0, temperature=0)


def build():
    llm = _llm()
    parser = JsonOutputParser()

    def chain(name: str, system: str):
        prompt = ChatPromptTemplate.from_messages([("system", system), ("user", "{payload}")])
        return (prompt | llm.with_config(run_name=name) | parser).with_config(run_name=name + "_chain")

    intake_chain = chain("extract_request", "Extract candidate_number, name and paper as JSON.")
    pick_chain = chain("pick_candidate", "Pick the search result that is the entered candidate. JSON.")
    decide_chain = chain("decide_arrangements", "Decide the access arrangements from the report as JSON.")
    plan_chain = chain("plan_tasks", "Plan the admin tasks for these arrangements as JSON {{'tasks': [...]}}.")
    notice_chain = (ChatPromptTemplate.from_messages([("system", "Write the candidate notice."), ("user", "{payload}")])
                    | llm.with_config(run_name="write_notice"))

    def search(s: Evidence) -> dict:
        return {"results": search_candidates.invoke({"name": s["entry"]["name"]})}

    def pick(s: Evidence) -> dict:
        picked = pick_chain.invoke({"payload": json.dumps({"candidate_number": s["entry"]["candidate_number"],
                                                           "results": s["results"]})})
        return {"candidate": picked}

    def report(s: Evidence) -> dict:
        return {"report": get_assessment_report.invoke({"candidate_number": s["candidate"]["candidate_number"]})}

    sub = StateGraph(Evidence)
    sub.add_node("search", search)
    sub.add_node("pick", pick)
    sub.add_node("load_report", report)
    sub.add_edge(START, "search")
    sub.add_edge("search", "pick")
    sub.add_edge("pick", "load_report")
    sub.add_edge("load_report", END)
    evidence_graph = sub.compile().with_config(run_name="evidence_reviewer")

    def intake(s: State) -> dict:
        return {"entry": intake_chain.invoke({"payload": s["request"]})}

    def evidence(s: State) -> dict:
        out = evidence_graph.invoke({"entry": s["entry"]})
        return {"candidate": out["candidate"], "report": out["report"]}

    def decide(s: State) -> dict:
        return {"arrangements": decide_chain.invoke({"payload": json.dumps({"report": s["report"]})})}

    def register(s: State) -> dict:
        return {"approval": register_arrangements.invoke({
            "entry_number": s["entry"]["candidate_number"],
            "form_candidate": s["report"]["candidate_number"], "arrangements": s["arrangements"]})}

    def route_room(s: State) -> str:
        a = s["arrangements"]
        if SWITCH == "C1":
            return "allocate_room" if a.get("separate_room") else "main_hall"
        return "allocate_room" if a.get("separate_room") or a.get("reader") else "main_hall"

    def allocate_room(s: State) -> dict:
        a = s["arrangements"]
        needs = ["separate room"] + (["reader"] if a.get("reader") else [])
        d, start, _ = TIMETABLE[s["entry"]["paper"]]
        return {"room": find_room.invoke({"date": d, "session": "am" if start < "12:00" else "pm", "needs": needs})}

    def main_hall(s: State) -> dict:
        return {"room": assign_hall_seat.invoke({"paper": s["entry"]["paper"],
                                                  "candidate_number": s["entry"]["candidate_number"]})}

    def timetable(s: State) -> dict:
        tt = get_exam_timetable.invoke({"paper": s["entry"]["paper"]})
        fin = compute_finish_time.invoke({"start": tt["start"], "duration_min": tt["duration_min"],
                                          "arrangements": s["arrangements"]})
        return {"timing": {**tt, **fin}}

    def plan(s: State) -> dict:
        return {"tasks": plan_chain.invoke({"payload": json.dumps({"arrangements": s["arrangements"]})})["tasks"]}

    def run_tasks(s: State) -> dict:
        done = []
        for task in s["tasks"]:
            args: dict[str, Any] = {"candidate_number": s["entry"]["candidate_number"], "paper": s["entry"]["paper"],
                                    "room": s["room"], "arrangements": s["arrangements"],
                                    "modified": bool(s["arrangements"].get("reader"))}
            t = TASK_TOOLS[task]
            wanted = set(t.args)
            done.append({"task": task, "result": t.invoke({k: v for k, v in args.items() if k in wanted})})
        return {"done": done}

    def final_check(s: State) -> dict:
        booked = {d["task"] for d in s["done"]}
        if s["arrangements"].get("reader") and "book_reader" not in booked:
            raise RuntimeError(f"candidate {s['entry']['candidate_number']} is granted a reader for "
                               f"{s['entry']['paper']} but no reader is booked")
        return {}

    def notice(s: State) -> dict:
        a = s["arrangements"]
        granted = [f"{a.get('extra_time_pct', 0)}% extra time"] + [k.replace("_", " ") for k in ("reader", "separate_room") if a.get(k)]
        msg = notice_chain.invoke({"payload": json.dumps({
            "name": s["entry"]["name"], "paper": s["entry"]["paper"], "room": s["room"]["room"],
            "start": s["timing"]["start"], "finish": s["timing"]["finish"], "granted": granted})})
        return {"notice": msg.content}

    g = StateGraph(State)
    for name, fn in [("intake", intake), ("evidence", evidence), ("decide", decide), ("register", register),
                     ("allocate_room", allocate_room), ("main_hall", main_hall), ("timetable", timetable),
                     ("plan", plan), ("run_tasks", run_tasks), ("final_check", final_check), ("notice", notice)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "evidence")
    g.add_edge("evidence", "decide")
    g.add_edge("decide", "register")
    g.add_conditional_edges("register", route_room, ["allocate_room", "main_hall"])
    g.add_edge("allocate_room", "timetable")
    g.add_edge("main_hall", "timetable")
    g.add_edge("timetable", "plan")
    g.add_edge("plan", "run_tasks")
    g.add_edge("run_tasks", "final_check")
    g.add_edge("final_check", "notice")
    g.add_edge("notice", END)
    return g.compile()


def record(inp: dict, path: str) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["text"], metadata={"request_id": inp["request_id"]})
    build().invoke({"request": inp["text"]}, config={"callbacks": [tracer]})
