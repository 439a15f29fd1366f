"""Exam invigilation (sdk): timetable -> regulations lookup -> session plan -> per-session staffing sub-agent -> roster."""
from __future__ import annotations

import json
import math

import trajdebug
from openai import OpenAI

from .kit import active

AGENT = "exam-invigilation"
ROUTE = "sdk"
DOMAIN = "exam invigilation"

STAFF = [
    {"name": "D. Moss", "hours": "am", "leave": []},
    {"name": "G. Kowalczyk", "hours": "all", "leave": ["2026-06-12"]},
    {"name": "R. Patel", "hours": "all", "leave": []},
    {"name": "A. Ferreira", "hours": "all", "leave": ["2026-06-11"]},
    {"name": "K. Lindqvist", "hours": "all", "leave": []},
    {"name": "S. Adeyemi", "hours": "pm", "leave": []},
    {"name": "T. Nakamura", "hours": "all", "leave": []},
    {"name": "H. O'Neill", "hours": "all", "leave": []},
    {"name": "P. Dubois", "hours": "pm", "leave": []},
    {"name": "M. Haddad", "hours": "all", "leave": []},
    {"name": "E. Byrne", "hours": "am", "leave": []},
    {"name": "L. Santos", "hours": "all", "leave": []},
]

REGS = {
    "written": {"doc": "REG-4.2 written examinations", "candidates_per_invigilator": 30, "minimum": 2},
    "practical": {"doc": "REG-6.1 practical assessments", "candidates_per_invigilator": 12, "minimum": 2},
    "coursework": {"doc": "REG-9.3 supervised coursework", "candidates_per_invigilator": 50, "minimum": 1},
}


def _tt(date, rows):
    return {"date": date, "board": "Northern Exams Board", "sessions": [
        {"paper": p, "room": r, "candidates": c, "start": s, "end": e, "mode": m} for p, r, c, s, e, m in rows]}


INPUTS = {
    "A": _tt("2026-06-11", [("MATH-201", "Hall A", 90, "09:00", "11:00", "written"),
                            ("CHEM-110", "Lab 3", 22, "09:30", "11:30", "practical"),
                            ("HIST-305", "Hall A", 60, "14:00", "16:00", "written")]),
    "B": _tt("2026-06-12", [("PHYS-220", "Hall B", 75, "09:00", "11:30", "written"),
                            ("ARTS-140", "Studio 2", 20, "13:30", "15:30", "practical"),
                            ("ECON-101", "Hall B", 55, "14:00", "16:00", "written")]),
    "R1": _tt("2026-06-15", [("BIOL-210", "Hall A", 60, "09:00", "11:00", "written"),
                             ("GEOG-120", "Room 12", 28, "14:00", "15:30", "written")]),
    "R2": _tt("2026-06-16", [("ENGL-101", "Hall B", 85, "09:00", "11:00", "written"),
                             ("CHEM-210", "Lab 3", 20, "13:00", "15:00", "practical")]),
    "R3": _tt("2026-06-17", [("COMP-330", "Lab 1", 24, "09:30", "11:30", "practical"),
                             ("PSYC-200", "Hall A", 58, "09:00", "11:00", "written"),
                             ("MUSC-110", "Room 4", 16, "14:00", "15:00", "written")]),
    "R4": _tt("2026-06-18", [("LAW-240", "Hall B", 88, "14:00", "17:00", "written")]),
}

CASES = [
    {"id": "zzf-invig-01", "kind": "bad_memory_write", "input": "A", "root": ("remember_assignment", 1),
     "failure": ("publish_roster", 1),
     "desc": "remember_assignment stores the first session's invigilators under the afternoon start time, so they are offered again for the overlapping 09:30 practical."},
    {"id": "zzf-invig-02", "kind": "context_pollution", "input": "B", "root": ("compose_brief", 3),
     "failure": ("publish_roster", 1),
     "desc": "compose_brief for the afternoon written paper carries the morning session's available staff into the brief, and the picker chooses a morning-only invigilator."},
    {"id": "zzf-invig-03", "kind": "plan_error", "input": "A", "root": ("plan_sessions", 1),
     "failure": ("publish_roster", 1),
     "desc": "The session planner leaves the afternoon HIST-305 paper out of its plan, so no one is staffed for it."},
    {"id": "zzf-invig-04", "kind": "wrong_retrieval", "input": "B", "root": ("retrieve_regulation", 2),
     "failure": ("publish_roster", 1),
     "desc": "retrieve_regulation returns the supervised-coursework ratio for the ARTS-140 practical, so too few invigilators are staffed."},
    {"id": "zzf-invig-05", "kind": "stale_data", "input": "B", "root": ("query_availability", 1),
     "failure": ("check_session_cover", 1),
     "desc": "query_availability serves last week's cached availability, which lists G. Kowalczyk although he is on leave on 2026-06-12."},
]


def policy(request):
    msgs = request.body["messages"]
    sys_prompt = msgs[0]["content"]
    data = json.loads(msgs[-1]["content"])
    if sys_prompt.startswith("Order the sessions"):
        order = sorted(data["sessions"], key=lambda s: (s["start"], -s["candidates"]))
        papers = [s["paper"] for s in order]
        if active("zzf-invig-03"):
            papers = papers[:-1]
        return json.dumps({"order": papers, "note": "largest morning session first"})
    pool = [p["name"] for p in data["available"]]
    return json.dumps({"invigilators": pool[: data["needed"]], "lead": pool[0] if pool else None})


@trajdebug.step(kind="input")
def load_timetable(tt: dict) -> dict:
    return json.loads(json.dumps(tt))


@trajdebug.step(kind="llm")
def plan_sessions(client, timetable: dict) -> dict:
    r = client.chat.completions.create(model="fake-model", messages=[
        {"role": "system", "content": "Order the sessions for staffing. Answer JSON with order."},
        {"role": "user", "content": json.dumps({"sessions": timetable["sessions"]})}])
    return json.loads(r.choices[0].message.content)


@trajdebug.step(kind="retrieval")
def retrieve_regulation(board: str, mode: str) -> dict:
    key = mode
    if active("zzf-invig-04") and mode == "practical":
        key = "coursework"
    return {"board": board, "query": f"invigilation ratio {mode}", **REGS[key]}


@trajdebug.step(kind="other")
def compute_needed(candidates: int, reg: dict) -> int:
    return max(reg["minimum"], math.ceil(candidates / reg["candidates_per_invigilator"]))


def _overlap(a, b):
    return a["start"] < b["end"] and b["start"] < a["end"]


@trajdebug.step(kind="tool")
def query_availability(date: str, session: dict, assigned: dict) -> dict:
    cached = active("zzf-invig-05")
    out = []
    for s in STAFF:
        if not cached and date in s["leave"]:
            continue
        if s["hours"] == "am" and session["start"] >= "12:00":
            continue
        if s["hours"] == "pm" and session["start"] < "12:00":
            continue
        if any(_overlap(session, slot) for slot in assigned.get(s["name"], [])):
            continue
        out.append({"name": s["name"], "hours": s["hours"]})
    return {"date": date, "as_of": "2026-06-04" if cached else date, "available": out}


@trajdebug.step(kind="other")
def compose_brief(session: dict, avail: dict, needed: int, notes: dict) -> dict:
    pool = list(avail["available"])
    if active("zzf-invig-02") and notes.get("last_pool"):
        pool = notes["last_pool"] + [p for p in pool if p not in notes["last_pool"]]
    return {"paper": session["paper"], "room": session["room"], "needed": needed, "available": pool}


@trajdebug.step(kind="llm")
def pick_invigilators(client, brief: dict) -> dict:
    r = client.chat.completions.create(model="fake-model", messages=[
        {"role": "system", "content": "Pick invigilators from the available staff. Answer JSON."},
        {"role": "user", "content": json.dumps(brief)}])
    return json.loads(r.choices[0].message.content)


@trajdebug.step(kind="state")
def remember_assignment(session: dict, picked: dict, date: str) -> None:
    st = trajdebug.current_run().state
    assigned = st.setdefault("assigned", {})
    slot = {"start": session["start"], "end": session["end"], "paper": session["paper"]}
    if active("zzf-invig-01"):
        slot = {"start": "14:00", "end": "16:00", "paper": session["paper"]}
    for name in picked["invigilators"]:
        assigned.setdefault(name, []).append(slot)


@trajdebug.step(kind="agent")
def staff_session(client, date: str, board: str, session: dict, notes: dict) -> dict:
    reg = retrieve_regulation(board, session["mode"])
    needed = compute_needed(session["candidates"], reg)
    assigned = trajdebug.current_run().state.get("assigned", {})
    avail = query_availability(date, session, json.loads(json.dumps(assigned)))
    brief = compose_brief(session, avail, needed, notes)
    picked = pick_invigilators(client, brief)
    remember_assignment(session, picked, date)
    notes["last_pool"] = avail["available"]
    return {"paper": session["paper"], "room": session["room"], "start": session["start"], "end": session["end"],
            "candidates": session["candidates"], "mode": session["mode"], "invigilators": picked["invigilators"]}


@trajdebug.step(kind="tool")
def check_session_cover(date: str, row: dict) -> dict:
    for name in row["invigilators"]:
        person = next(s for s in STAFF if s["name"] == name)
        if date in person["leave"]:
            raise RuntimeError(f"HR register: {name} is on approved leave on {date} and cannot cover {row['paper']}")
    return {"paper": row["paper"], "ok": True}


@trajdebug.step(kind="tool")
def publish_roster(timetable: dict, rows: list[dict]) -> dict:
    by_paper = {r["paper"]: r for r in rows}
    for s in timetable["sessions"]:
        if s["paper"] not in by_paper:
            raise RuntimeError(f"roster rejected: paper {s['paper']} ({s['room']} {s['start']}) has no invigilators")
    for r in rows:
        ratio = REGS[r["mode"]]
        need = max(ratio["minimum"], math.ceil(r["candidates"] / ratio["candidates_per_invigilator"]))
        if len(r["invigilators"]) < need:
            raise RuntimeError(f"roster rejected: {r['paper']} has {len(r['invigilators'])} invigilators for "
                               f"{r['candidates']} candidates, {ratio['doc']} requires {need}")
        for name in r["invigilators"]:
            person = next(p for p in STAFF if p["name"] == name)
            if person["hours"] == "am" and r["start"] >= "12:00":
                raise RuntimeError(f"roster rejected: {name} is contracted for morning sessions only, "
                                   f"assigned to {r['paper']} at {r['start']}")
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            if _overlap(a, b):
                both = set(a["invigilators"]) & set(b["invigilators"])
                if both:
                    raise RuntimeError(f"roster rejected: {sorted(both)[0]} is double-booked for {a['paper']} "
                                       f"{a['start']}-{a['end']} and {b['paper']} {b['start']}-{b['end']}")
    return {"published": True, "date": timetable["date"], "sessions": len(rows)}


def record(inp: dict, out, server) -> None:
    server.use(policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with trajdebug.run(AGENT, path=str(out), task=f"staff exams on {inp['date']}"):
            tt = load_timetable(inp)
            plan = plan_sessions(client, tt)
            by_paper = {s["paper"]: s for s in tt["sessions"]}
            notes: dict = {}
            rows = []
            for paper in plan["order"]:
                rows.append(staff_session(client, tt["date"], tt["board"], by_paper[paper], notes))
            for row in rows:
                check_session_cover(tt["date"], row)
            publish_roster(tt, rows)
    except RuntimeError:
        pass
