"""A boxing gym's memberships and bouts (route: langgraph, ChatOpenAI against the fake server, TrajdebugTracer)."""

from __future__ import annotations

import json
from typing import Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

import kit
from common import chat_policy, task_prompt
from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "boxing-gym-bouts"
ROUTE = "langgraph"
DOMAIN = "boxing gym: memberships and bouts"
SHAPE = "StateGraph: intake LLM, member + weigh-in tools, classify, routed renewal/matchmaking, matchmaking sub-graph (candidates, notes, pick), fees, bout card, validator"

MEMBERS = {
    "BX-101": {"id": "BX-101", "name": "Tariq Bell", "weight_kg": 69.4, "bouts": 6, "membership_expires": "2026-12-31", "medical_expires": "2027-01-15"},
    "BX-102": {"id": "BX-102", "name": "Nia Rowe", "weight_kg": 59.2, "bouts": 3, "membership_expires": "2026-03-31", "medical_expires": "2026-11-30"},
    "BX-103": {"id": "BX-103", "name": "Owen Sark", "weight_kg": 80.9, "bouts": 11, "membership_expires": "2027-02-28", "medical_expires": "2026-10-01"},
    "BX-104": {"id": "BX-104", "name": "Lena Kovac", "weight_kg": 63.8, "bouts": 2, "membership_expires": "2026-09-30", "medical_expires": "2026-12-01"},
    "BX-105": {"id": "BX-105", "name": "Dev Mistry", "weight_kg": 74.6, "bouts": 8, "membership_expires": "2026-05-31", "medical_expires": "2027-03-01"},
    "BX-106": {"id": "BX-106", "name": "Ruth Agyei", "weight_kg": 56.7, "bouts": 5, "membership_expires": "2026-12-31", "medical_expires": "2026-12-31"},
}
CLASSES = [("flyweight", 51), ("bantamweight", 54), ("featherweight", 57), ("lightweight", 60), ("light welterweight", 63.5),
           ("welterweight", 67), ("light middleweight", 71), ("middleweight", 75), ("light heavyweight", 80), ("cruiserweight", 86), ("heavyweight", 92), ("super heavyweight", 999)]
CANDIDATES = {c: [{"id": f"OPP-{i}{j}", "club": club, "bouts": b} for j, (club, b) in enumerate(
    [("Riverside ABC", 1), ("St Cuthbert's BC", 4), ("Northgate ABC", 22), ("Docklands BC", 14), ("Millfield ABC", 7), ("Eastbrook BC", 10)])]
    for i, (c, _) in enumerate(CLASSES)}
SHOW = {"id": "SHOW-26-04", "date": "2026-04-18", "entry_fee_pence": 2500, "venue": "Leisure Centre Hall"}
FEE_CAP_GBP = 60

INPUTS = [
    {"member": "BX-101", "text": "Tariq (BX-101) wants a bout on the April show, renew if needed."},
    {"member": "BX-102", "text": "Nia Rowe BX-102 asks to box on the April show; check her membership."},
    {"member": "BX-103", "text": "Match Owen Sark, member BX-103, for the April show."},
    {"member": "BX-104", "text": "Lena Kovac (BX-104): first show of the year, find her an opponent."},
    {"member": "BX-105", "text": "Please enter Dev Mistry BX-105 in the April show and renew his membership."},
    {"member": "BX-106", "text": "Ruth Agyei BX-106 would like a bout at the April show."},
]

C = "zzr_box_"
CASES = [
    {"id": C + "01", "input": 1, "fault_kind": "wrong_routing", "root": ("route_membership", 1), "failure": ("validate_entry", 1),
     "description": "The membership router compares the expiry with the show date in day-month order and sends an expired member straight to matchmaking without renewal."},
    {"id": C + "02", "input": 2, "fault_kind": "truncated_result", "root": ("list_candidates", 1), "failure": ("validate_entry", 1),
     "description": "The candidate list tool returns only the first page of three opponents, none within the experience bracket of an 11-bout boxer."},
    {"id": C + "03", "input": 3, "fault_kind": "unit_error", "root": ("fees", 1), "failure": ("validate_entry", 1),
     "description": "The fees node reads the show's entry fee in pence as pounds, charging 2500 GBP."},
    {"id": C + "04", "input": 0, "fault_kind": "context_pollution", "root": ("gather_notes", 1), "failure": ("validate_entry", 1),
     "description": "The coach-notes node hands the matchmaker the notes of the previous boxer it handled (a 54 kg bantamweight), and the matchmaker picks from that class."},
    {"id": C + "05", "input": 5, "fault_kind": "tool_ignores_argument", "root": ("latest_weigh_in", 1), "failure": ("validate_entry", 1),
     "description": "The weigh-in tool ignores its unit argument and returns pounds, so a 56.7 kg boxer is classed by 125 as kilograms."},
]


class S(TypedDict, total=False):
    text: str
    request: dict
    member: dict
    weigh_in: dict
    weight_class: str
    renewed: dict
    candidates: list
    notes: list
    opponent: dict
    fees: dict
    card: str


def brain(inp):
    def intake(p):
        return {"member_id": inp["member"], "show": SHOW["id"], "renew_if_needed": True}

    def pick(p):
        notes = p["notes"]
        cls = p["weight_class"]
        for n in notes:
            if n.get("class"):
                cls = n["class"]
        bouts = p["bouts"]
        pool = [c for c in p["candidates"] if abs(c["bouts"] - bouts) <= 3] or p["candidates"]
        best = min(pool, key=lambda c: (abs(c["bouts"] - bouts), c["id"]))
        return {"opponent": best["id"], "club": best["club"], "bouts": best["bouts"], "weight_class": cls}

    def card(p):
        return f"{p['boxer']} vs {p['opponent']} ({p['club']}), {p['weight_class']}, 3x2 min, {SHOW['venue']} {SHOW['date']}"

    return chat_policy({"intake": intake, "pick_opponent": pick, "bout_card": card})


@tool
def get_member(member_id: str) -> dict:
    """The gym's membership record of a member."""
    return dict(MEMBERS[member_id])


@tool
def latest_weigh_in(member_id: str, unit: str = "kg") -> dict:
    """The member's latest recorded weigh-in, in the unit asked for (kg or lb)."""
    kg = MEMBERS[member_id]["weight_kg"]
    if kit.on(C + "05"):
        return {"member_id": member_id, "weight": round(kg * 2.20462, 1), "date": "2026-04-02"}
    value = kg if unit == "kg" else round(kg * 2.20462, 1)
    return {"member_id": member_id, "weight": value, "unit": unit, "date": "2026-04-02"}


@tool
def renew_membership(member_id: str, until: str) -> dict:
    """Renew a membership until a date; returns the receipt."""
    return {"member_id": member_id, "membership_expires": until, "receipt": f"R-{member_id[-3:]}-2026"}


@tool
def list_candidates(weight_class: str, show: str, page_size: int = 10) -> list:
    """Opponents offered by other clubs for a weight class on a show."""
    rows = CANDIDATES[weight_class]
    if kit.on(C + "02"):
        return rows[:3]
    return rows[:page_size]


_last_notes: dict = {"prev": [{"member": "BX-099", "class": "bantamweight", "note": "southpaw, keeps 54 kg, wants a tall opponent"}]}


def make_graph(llm):
    def ask(task, payload, config):
        msgs = [SystemMessage("You are the gym's matchmaking assistant."), HumanMessage(task_prompt(task, payload))]
        return llm.invoke(msgs, config=config).content

    def intake(state: S, config) -> dict:
        return {"request": json.loads(ask("intake", {"text": state["text"]}, config))}

    def load_member(state: S, config) -> dict:
        return {"member": get_member.invoke({"member_id": state["request"]["member_id"]}, config=config)}

    def weigh(state: S, config) -> dict:
        return {"weigh_in": latest_weigh_in.invoke({"member_id": state["member"]["id"], "unit": "kg"}, config=config)}

    def classify(state: S) -> dict:
        w = state["weigh_in"]["weight"]
        for name, limit in CLASSES:
            if w <= limit:
                return {"weight_class": name}
        return {"weight_class": "heavyweight"}

    def route_membership(state: S) -> str:
        exp = state["member"]["membership_expires"]
        show = SHOW["date"]
        if kit.on(C + "01"):
            exp, show = exp[8:] + exp[4:8] + exp[:4], show[8:] + show[4:8] + show[:4]
        return "renew" if exp < show else "match"

    def renew(state: S, config) -> dict:
        r = renew_membership.invoke({"member_id": state["member"]["id"], "until": "2027-03-31"}, config=config)
        return {"renewed": r, "member": dict(state["member"], membership_expires=r["membership_expires"])}

    # matchmaking sub-graph
    def candidates(state: S, config) -> dict:
        return {"candidates": list_candidates.invoke({"weight_class": state["weight_class"], "show": SHOW["id"]}, config=config)}

    def gather_notes(state: S) -> dict:
        notes = [{"member": state["member"]["id"], "note": f"{state['member']['bouts']} bouts, orthodox"}]
        if kit.on(C + "04"):
            notes = _last_notes["prev"] + notes
        return {"notes": notes}

    def pick(state: S, config) -> dict:
        ans = ask("pick_opponent", {"weight_class": state["weight_class"], "bouts": state["member"]["bouts"],
                                    "candidates": state["candidates"], "notes": state["notes"]}, config)
        return {"opponent": json.loads(ans)}

    sub = StateGraph(S)
    sub.add_node("find_candidates", candidates)
    sub.add_node("gather_notes", gather_notes)
    sub.add_node("pick_opponent", pick)
    sub.add_edge(START, "find_candidates")
    sub.add_edge("find_candidates", "gather_notes")
    sub.add_edge("gather_notes", "pick_opponent")
    sub.add_edge("pick_opponent", END)
    matchmaking = sub.compile()

    def fees(state: S) -> dict:
        fee = SHOW["entry_fee_pence"] if kit.on(C + "03") else SHOW["entry_fee_pence"] / 100
        renewal = 35.0 if state.get("renewed") else 0.0
        return {"fees": {"entry_gbp": fee, "renewal_gbp": renewal, "total_gbp": fee + renewal}}

    def bout_card(state: S, config) -> dict:
        o = state["opponent"]
        return {"card": ask("bout_card", {"boxer": state["member"]["name"], "opponent": o["opponent"], "club": o["club"],
                                          "weight_class": o["weight_class"]}, config)}

    def validate_entry(state: S) -> dict:
        m, o = state["member"], state["opponent"]
        if m["membership_expires"] < SHOW["date"]:
            raise ValueError(f"{m['name']} membership expired {m['membership_expires']}, before the show on {SHOW['date']}")
        limit = dict(CLASSES).get(o["weight_class"], 999)
        if MEMBERS[m["id"]]["weight_kg"] > limit:
            raise ValueError(f"{m['name']} weighs {MEMBERS[m['id']]['weight_kg']} kg, over the {o['weight_class']} limit of {limit} kg")
        lower = [lim for _, lim in CLASSES if lim < limit]
        if lower and MEMBERS[m["id"]]["weight_kg"] <= max(lower):
            raise ValueError(f"{m['name']} at {MEMBERS[m['id']]['weight_kg']} kg is entered as {o['weight_class']}, above their class")
        if abs(o["bouts"] - m["bouts"]) > 3:
            raise ValueError(f"opponent {o['opponent']} has {o['bouts']} bouts against {m['bouts']}: outside the 3-bout bracket")
        if state["fees"]["total_gbp"] > FEE_CAP_GBP:
            raise ValueError(f"fees of {state['fees']['total_gbp']} GBP exceed the club cap of {FEE_CAP_GBP} GBP")
        return {}

    g = StateGraph(S)
    g.add_node("intake", intake)
    g.add_node("load_member", load_member)
    g.add_node("weigh", weigh)
    g.add_node("classify", classify)
    g.add_node("renew", renew)
    g.add_node("matchmaking", matchmaking)
    g.add_node("fees", fees)
    g.add_node("bout_card", bout_card)
    g.add_node("validate_entry", validate_entry)
    g.add_edge(START, "intake")
    g.add_edge("intake", "load_member")
    g.add_edge("load_member", "weigh")
    g.add_edge("weigh", "classify")
    g.add_conditional_edges("classify", route_membership, {"renew": "renew", "match": "matchmaking"})
    g.add_edge("renew", "matchmaking")
    g.add_edge("matchmaking", "fees")
    g.add_edge("fees", "bout_card")
    g.add_edge("bout_card", "validate_entry")
    g.add_edge("validate_entry", END)
    return g.compile()


def record(server, inp, path):
    server.use(brain(inp))
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["text"])
    try:
        make_graph(llm).invoke({"text": inp["text"]}, config={"callbacks": [tracer]})
    except ValueError:
        pass
