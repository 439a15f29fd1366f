"""Indoor climbing gym: a LangGraph StateGraph that confirms a group climbing session (langgraph)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

from .common import last_user_json
from .kit import active

NAME = "climbing-gym-sessions"
ROUTE = "langgraph"
DOMAIN = "indoor climbing gym"
SHAPE = "StateGraph: LLM router -> party or member desk -> roster memory -> waiver loop -> harness reservation loop -> auto-belay weight check -> confirm session"

TODAY = "2026-06-06"
PEOPLE = {
    "Mia": {"age": 9, "weight_lb": 62, "harness": "XS"}, "Noah": {"age": 10, "weight_lb": 70, "harness": "S"},
    "Zoe": {"age": 9, "weight_lb": 58, "harness": "XS"}, "Eli": {"age": 11, "weight_lb": 81, "harness": "S"},
    "Ada": {"age": 34, "weight_lb": 141, "harness": "M"}, "Raj": {"age": 41, "weight_lb": 187, "harness": "L"},
    "Kim": {"age": 29, "weight_lb": 128, "harness": "M"}, "Sol": {"age": 10, "weight_lb": 66, "harness": "XS"},
    "Ivo": {"age": 38, "weight_lb": 176, "harness": "L"}, "Bea": {"age": 12, "weight_lb": 90, "harness": "S"},
}
WAIVERS = {"Mia": "2026-12-31", "Noah": "2026-09-30", "Zoe": "2026-06-03", "Eli": "2027-01-15", "Ada": "2026-11-01",
           "Raj": "2026-08-20", "Kim": "2027-02-02", "Sol": "2026-10-10", "Ivo": "2026-07-07", "Bea": "2026-12-01"}
RENEWED = {"Zoe": "2027-06-05"}  # renewed yesterday at the desk
STOCK = {"XS": 2, "S": 4, "M": 5, "L": 2}
SIZE_UP = {"XS": "S", "S": "M", "M": "L"}
INPUTS = {
    "party_kids": {"booker": "G-5501", "text": "Birthday party for Mia, Noah, Zoe and Sol on 2026-06-06", "people": ["Mia", "Noah", "Zoe", "Sol"]},
    "family": {"booker": "G-5502", "text": "Family session for Ada, Eli and Bea on 2026-06-06", "people": ["Ada", "Eli", "Bea"]},
    "r1": {"booker": "G-6001", "text": "Member session for Kim and Raj on 2026-06-06", "people": ["Kim", "Raj"]},
    "r2": {"booker": "G-6002", "text": "Birthday party for Eli, Noah and Bea on 2026-06-06", "people": ["Eli", "Noah", "Bea"]},
    "r3": {"booker": "G-6003", "text": "Family session for Ivo, Sol and Mia on 2026-06-06", "people": ["Ivo", "Sol", "Mia"]},
    "r4": {"booker": "G-6004", "text": "Member session for Ada, Ivo and Kim on 2026-06-06", "people": ["Ada", "Ivo", "Kim"]},
}
REFS = ["r1", "r2", "r3", "r4"]
CASES = [
    {"id": "zd_climbing_stock", "kind": "tool_ignores_argument", "input": "party_kids", "root": "harness_stock", "occ": 1,
     "failure": "confirm_session", "description": "harness_stock ignores its size argument and reports the whole harness count, so three XS harnesses are promised for four XS climbers and the session API refuses the reservation."},
    {"id": "zd_climbing_router", "kind": "wrong_routing", "input": "party_kids", "root": "route_request", "occ": 1,
     "failure": "confirm_session", "description": "route_request sends a children's party to the member desk, which books it as an adult member session that the session API refuses for minors without a supervisor."},
    {"id": "zd_climbing_waiver", "kind": "stale_data", "input": "party_kids", "root": "waiver_status", "occ": 3,
     "failure": "confirm_session", "description": "waiver_status answers Zoe from the morning snapshot taken before her renewal, so the roster goes out with an expired waiver date that the session API rejects."},
    {"id": "zd_climbing_weight", "kind": "unit_error", "input": "family", "root": "confirm", "occ": 1,
     "failure": "confirm_session", "description": "the confirm node converts pounds to kilograms by multiplying by 2.2046, and the session API refuses a climber over the auto-belay weight limit."},
    {"id": "zd_climbing_roster", "kind": "bad_memory_write", "input": "family", "root": "remember_roster", "occ": 1,
     "failure": "confirm_session", "description": "remember_roster writes the roster without its last climber, so the session confirmed covers fewer climbers than the booking names."},
]


def policy(req):
    ask = last_user_json(req)
    if ask.get("ask") == "route":
        desk = "party_desk" if ask["text"].startswith(("Birthday", "Family")) else "member_desk"
        if active("zd_climbing_router"):
            desk = "member_desk"
        return json.dumps({"desk": desk})
    if ask.get("ask") == "session_plan":
        kids = [p for p in ask["people"] if p["age"] < 14]
        return json.dumps({"type": ask["desk"], "supervisor": bool(kids) and ask["desk"] == "party_desk",
                           "wall": "kids_autobelay" if kids else "lead_wall", "minutes": 90})
    return json.dumps({})


@tool
def member_profiles(names: list[str]) -> list[dict]:
    """Profiles of the climbers named."""
    return [{"name": n, **PEOPLE[n]} for n in names]


@tool
def waiver_status(name: str) -> dict:
    """A climber's waiver: valid-until date."""
    if active("zd_climbing_waiver"):
        return {"name": name, "valid_until": WAIVERS[name], "as_of": "2026-06-05T07:00"}
    return {"name": name, "valid_until": RENEWED.get(name, WAIVERS[name]), "as_of": "2026-06-06T09:12"}


@tool
def harness_stock(size: str) -> dict:
    """Harnesses available in one size."""
    if active("zd_climbing_stock"):
        return {"size": size, "available": sum(STOCK.values())}
    return {"size": size, "available": STOCK[size]}


@tool
def confirm_session(booker: str, date: str, session: dict, roster: list[dict], harnesses: dict) -> dict:
    """Confirm the session (the gym's session API validates it)."""
    names = [r["name"] for r in roster]
    if len(names) != session["expected"]:
        raise ValueError(f"HTTP 422: roster has {len(names)} climbers, booking names {session['expected']}")
    if any(r["age"] < 14 for r in roster) and not session["supervisor"]:
        raise ValueError("HTTP 422: climbers under 14 need a supervised session (supervisor=false)")
    for r in roster:
        if r["waiver_until"] < date:
            raise ValueError(f"HTTP 403: waiver for {r['name']} expired {r['waiver_until']}")
        if r["age"] < 14 and r["weight_kg"] > 60:
            raise ValueError(f"HTTP 422: {r['name']} weight {r['weight_kg']} kg above kids auto-belay limit 60 kg")
    if sum(harnesses.values()) != len(roster):
        raise ValueError(f"HTTP 422: {sum(harnesses.values())} harnesses for {len(roster)} climbers")
    for size, n in harnesses.items():
        if n > STOCK[size]:
            raise ValueError(f"HTTP 409: {n} {size} harnesses reserved, {STOCK[size]} in stock")
    return {"session": f"SES-{booker[2:]}", "status": "confirmed"}


class S(TypedDict, total=False):
    booker: str
    text: str
    people: list
    desk: str
    profiles: list
    session: dict
    roster: list
    i: int
    harnesses: dict
    result: dict


def build(base_url: str):
    from langchain_openai import ChatOpenAI
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=base_url, api_key="sk-local-test", max_retries=0)
    router = llm.with_config(run_name="route_request")
    planner = llm.with_config(run_name="plan_session")

    def classify(s: S) -> dict:
        msg = router.invoke([SystemMessage("Route the request to party_desk or member_desk. JSON."),
                             HumanMessage(json.dumps({"ask": "route", "text": s["text"]}))])
        return {"desk": json.loads(msg.content)["desk"]}

    def desk(s: S) -> dict:
        profiles = member_profiles.invoke({"names": s["people"]})
        msg = planner.invoke([SystemMessage("Plan the session. JSON."),
                              HumanMessage(json.dumps({"ask": "session_plan", "desk": s["desk"], "people": profiles}))])
        plan = json.loads(msg.content)
        plan["expected"] = len(s["people"])
        return {"profiles": profiles, "session": plan}

    def remember_roster(s: S) -> dict:
        rows = [{"name": p["name"], "age": p["age"], "harness": p["harness"], "weight_lb": p["weight_lb"]} for p in s["profiles"]]
        if active("zd_climbing_roster"):
            rows = rows[:-1]
        return {"roster": rows, "i": 0}

    def waivers(s: S) -> dict:
        r = dict(s["roster"][s["i"]])
        r["waiver_until"] = waiver_status.invoke({"name": r["name"]})["valid_until"]
        roster = list(s["roster"])
        roster[s["i"]] = r
        return {"roster": roster, "i": s["i"] + 1}

    def harnesses(s: S) -> dict:
        need: dict[str, int] = {}
        for r in s["roster"]:
            need[r["harness"]] = need.get(r["harness"], 0) + 1
        held: dict[str, int] = {}
        for size in ("XS", "S", "M", "L"):
            n = need.get(size, 0) + held.pop(size, 0)
            if not n:
                continue
            stock = harness_stock.invoke({"size": size})
            take = min(n, stock["available"])
            held[size] = take
            if n > take:
                held[SIZE_UP[size]] = n - take  # size up the rest
        return {"harnesses": held}

    def belay_check(s: S) -> dict:
        out = []
        for r in s["roster"]:
            out.append({**r, "wall": "kids_autobelay" if r["age"] < 14 else s["session"]["wall"]})
        return {"roster": out}

    def confirm(s: S) -> dict:
        roster = []
        for r in s["roster"]:  # the session API takes kilograms
            kg = r["weight_lb"] * 2.2046 if active("zd_climbing_weight") else r["weight_lb"] / 2.2046
            roster.append({**r, "weight_kg": round(kg, 1)})
        return {"result": confirm_session.invoke({"booker": s["booker"], "date": TODAY, "session": s["session"],
                                                  "roster": roster, "harnesses": s["harnesses"]})}

    g = StateGraph(S)
    for name, fn in [("classify", classify), ("party_desk", desk), ("member_desk", desk),
                     ("remember_roster", remember_roster), ("waivers", waivers), ("harnesses", harnesses),
                     ("belay_check", belay_check), ("confirm", confirm)]:
        g.add_node(name, fn)
    g.add_edge(START, "classify")
    g.add_conditional_edges("classify", lambda s: s["desk"], ["party_desk", "member_desk"])
    g.add_edge("party_desk", "remember_roster")
    g.add_edge("member_desk", "remember_roster")
    g.add_edge("remember_roster", "waivers")
    g.add_conditional_edges("waivers", lambda s: "waivers" if s["i"] < len(s["roster"]) else "harnesses", ["waivers", "harnesses"])
    g.add_edge("harnesses", "belay_check")
    g.add_edge("belay_check", "confirm")
    g.add_edge("confirm", END)
    return g.compile()


_GRAPHS: dict[str, Any] = {}


def record(inp: dict, path: Path, base_url: str) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer
    graph = _GRAPHS.get(base_url) or _GRAPHS.setdefault(base_url, build(base_url))
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"confirm climbing session for {inp['booker']}")
    try:
        graph.invoke({"booker": inp["booker"], "text": inp["text"], "people": inp["people"]}, config={"callbacks": [tracer]})
    except ValueError:
        pass
