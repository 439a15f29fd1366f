"""Skate park session desk (LangGraph): request parsing, roster and occupancy tools, model-planned slot hold,
a coach-assignment subgraph, and the session confirmation."""
from __future__ import annotations

import json
import re
from typing import TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, last_user_json, policy
from .kit import active

NAME, ROUTE, DOMAIN = "skatepark-sessions", "langgraph", "skate park sessions"
SHAPE = "StateGraph: read_request -> load_roster(tool) -> verify_waivers(tool loop) -> price_session(tool) -> load_occupancy(tool) -> plan_hold(LLM + hold_slot tool) -> assign_coach (subgraph: profile tool + LLM pick) -> confirm_session"

GROUPS = {
    "Rollers Club": {"size": 12, "level": "beginner"}, "Rolling Crew": {"size": 6, "level": "advanced"},
    "Deck Dogs": {"size": 15, "level": "intermediate"}, "Grind Girls": {"size": 9, "level": "beginner"},
    "Kickflip Kids": {"size": 11, "level": "beginner"}, "Vert Vets": {"size": 7, "level": "advanced"},
}
COACHES = {"beginner": "Coach Mara", "intermediate": "Coach Dev", "advanced": "Coach Rio"}
OCCUPANCY = {"2027-04-18 14:00": 30, "2027-05-02 10:00": 5, "2027-05-09 16:00": 12, "2027-05-16 12:00": 0,
             "2027-05-23 18:00": 20, "2027-06-06 11:00": 8}
INPUTS = {
    "A": "Group Rollers Club; 12 skaters; 2027-04-18 at 14:00; 2 hours; bowl",
    "B": "Group Deck Dogs; 15 skaters; 2027-05-09 at 16:00; 3 hours; street",
    "R1": "Group Grind Girls; 9 skaters; 2027-05-02 at 10:00; 2 hours; bowl",
    "R2": "Group Kickflip Kids; 11 skaters; 2027-05-16 at 12:00; 1 hours; street",
    "R3": "Group Vert Vets; 7 skaters; 2027-05-23 at 18:00; 2 hours; vert",
    "R4": "Group Grind Girls; 9 skaters; 2027-06-06 at 11:00; 2 hours; street",
}
REFS = ["R1", "R2", "R3", "R4"]
CAPACITY = 40

CASES = [
    Case("zm_skate_1", "lossy_parsing", "B", ("read_request", 1, "other"), ("confirm_session", 1),
         "read_request keeps only the first digit of the skater count", "skate.lossy"),
    Case("zm_skate_2", "truncated_result", "A", ("fetch_roster", 1, "tool"), ("confirm_session", 1),
         "fetch_roster returns only the first page of the roster", "skate.trunc"),
    Case("zm_skate_3", "stale_data", "A", ("fetch_occupancy", 1, "tool"), ("confirm_session", 1),
         "fetch_occupancy serves a snapshot from the previous day, before most bookings for the slot", "skate.stale"),
    Case("zm_skate_4", "wrong_tool_args", "B", ("ChatOpenAI", 1, "llm"), ("hold_slot", 1),
         "the model fills the hold call with the session length in minutes where hours are expected", "skate.args"),
    Case("zm_skate_5", "subagent_wrong_entity", "A", ("ChatOpenAI", 2, "llm"), ("confirm_session", 1),
         "the coach sub-agent picks the coach for Rolling Crew, a similarly named group", "skate.entity"),
]


@policy("skate_hold")
def _hold(msgs):
    q = last_user_json(msgs)
    hours = q["hours"] * 60 if active("skate.args") else q["hours"]
    return json.dumps({"area": q["area"], "start": q["when"], "hours": hours})


@policy("skate_coach")
def _coach(msgs):
    q = last_user_json(msgs)
    group = q["group"]
    if active("skate.entity"):
        group = "Rolling Crew"
    return json.dumps({"group": group, "coach": COACHES[GROUPS[group]["level"]]})


@tool
def fetch_roster(group: str) -> dict:
    """Members of a club registered with the park."""
    names = [f"{group.split()[0]}-{i:02d}" for i in range(GROUPS[group]["size"])]
    if active("skate.trunc"):
        names = names[:10]
    return {"group": group, "members": names}


@tool
def fetch_occupancy(slot: str) -> dict:
    """Skaters already booked for a slot."""
    booked = OCCUPANCY.get(slot, 0)
    if active("skate.stale"):
        return {"slot": slot, "booked": 4, "as_of": "2027-04-17"}
    return {"slot": slot, "booked": booked, "as_of": slot.split()[0]}


@tool
def hold_slot(area: str, start: str, hours: float) -> dict:
    """Hold an area of the park for a group session."""
    if hours > 4:
        raise ValueError(f"HTTP 400 holds API: 'hours' must be between 0.5 and 4, got {hours}")
    return {"hold": f"H-{area}-{start.replace(' ', 'T')}", "area": area, "start": start, "hours": hours}


@tool
def waiver_status(members: list[str]) -> dict:
    """Signed-waiver status for a batch of members."""
    return {"signed": list(members), "missing": []}


@tool
def session_rates(area: str, hours: int) -> dict:
    """Group rate for an area of the park."""
    per_hour = {"bowl": 60, "street": 45, "vert": 75}[area]
    return {"area": area, "hours": hours, "eur": per_hour * hours}


@tool
def group_profile(group: str) -> dict:
    """The park's profile of a registered group."""
    return {"group": group, **GROUPS[group]}


class S(TypedDict, total=False):
    text: str
    req: dict
    roster: dict
    occupancy: dict
    hold: dict
    profile: dict
    coach: dict
    waivers: list
    price: dict
    result: dict


class C(TypedDict, total=False):
    req: dict
    profile: dict
    coach: dict


def build(base_url):
    llm = ChatOpenAI(base_url=base_url, api_key="local", model="park-desk", max_retries=0)

    def read_request(s):
        m = re.match(r"Group ([\w ]+); (\d+) skaters; (\S+) at (\S+); (\d+) hours; (\w+)", s["text"])
        size = m[2][0] if active("skate.lossy") else m[2]
        return {"req": {"group": m[1], "size": int(size), "when": f"{m[3]} {m[4]}", "hours": int(m[5]), "area": m[6]}}

    def load_roster(s):
        return {"roster": fetch_roster.invoke({"group": s["req"]["group"]})}

    def verify_waivers(s):
        members = s["roster"]["members"]
        signed = []
        for i in range(0, len(members), 4):
            signed += waiver_status.invoke({"members": members[i:i + 4]})["signed"]
        return {"waivers": signed}

    def price_session(s):
        return {"price": session_rates.invoke({"area": s["req"]["area"], "hours": s["req"]["hours"]})}

    def load_occupancy(s):
        return {"occupancy": fetch_occupancy.invoke({"slot": s["req"]["when"]})}

    def plan_hold(s):
        req, occ = dict(s["req"]), s["occupancy"]
        while occ["booked"] + req["size"] > CAPACITY:
            day, hhmm = req["when"].split()
            req["when"] = f"{day} {int(hhmm[:2]) + 1:02d}:00"
            occ = fetch_occupancy.invoke({"slot": req["when"]})
        r = llm.invoke([SystemMessage("[desk:skate_hold] You book park areas. Answer JSON args for hold_slot."),
                        HumanMessage(json.dumps(req))])
        return {"hold": hold_slot.invoke(json.loads(r.content))}

    def coach_profile(c):
        return {"profile": group_profile.invoke({"group": c["req"]["group"]})}

    def coach_pick(c):
        r = llm.invoke([SystemMessage("[desk:skate_coach] You assign coaches by group level. Answer JSON."),
                        HumanMessage(json.dumps({"group": c["req"]["group"], "profile": c["profile"]}))])
        return {"coach": json.loads(r.content)}

    sub = StateGraph(C)
    sub.add_node("coach_profile", coach_profile)
    sub.add_node("coach_pick", coach_pick)
    sub.add_edge(START, "coach_profile")
    sub.add_edge("coach_profile", "coach_pick")
    sub.add_edge("coach_pick", END)
    coach_graph = sub.compile()

    def confirm_session(s):
        req, problems = s["req"], []
        if not s["hold"].get("hold"):
            problems.append("no hold")
        members = s["roster"]["members"]
        if len(members) != req["size"]:
            problems.append(f"roster has {len(members)} members, request says {req['size']} skaters")
        slot = s["hold"]["start"]
        live = OCCUPANCY.get(slot, 0)
        if live + len(members) > CAPACITY:
            problems.append(f"slot {slot} holds {CAPACITY}: {live} booked, {len(members)} more requested")
        want = COACHES[GROUPS[req["group"]]["level"]]
        if s["coach"]["coach"] != want:
            problems.append(f"{req['group']} is {GROUPS[req['group']]['level']} level; {s['coach']['coach']} does not coach that level")
        if problems:
            raise RuntimeError("HTTP 409 sessions API: " + "; ".join(problems))
        return {"result": {"session": s["hold"]["hold"], "coach": s["coach"]["coach"]}}

    g = StateGraph(S)
    for fn in (read_request, load_roster, verify_waivers, price_session, load_occupancy, plan_hold, confirm_session):
        g.add_node(fn.__name__, fn)
    g.add_node("assign_coach", coach_graph)
    order = ["read_request", "load_roster", "verify_waivers", "price_session", "load_occupancy", "plan_hold", "assign_coach", "confirm_session"]
    g.add_edge(START, order[0])
    for a, b in zip(order, order[1:]):
        g.add_edge(a, b)
    g.add_edge(order[-1], END)
    return g.compile()


def record(key, out, base_url):
    tracer = TrajdebugTracer(path=str(out), name=NAME, task="book a skate park group session")
    build(base_url).invoke({"text": INPUTS[key]}, config={"callbacks": [tracer]})
