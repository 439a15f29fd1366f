"""A cricket club's fixtures and nets (langgraph route): a StateGraph with ChatOpenAI and a nets sub-graph."""
import json
import operator
from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

import kit
from common import brain_from
from trajdebug.integrations.langchain import TrajdebugTracer

NAME, ROUTE, DOMAIN = "cricket-fixtures", "langgraph", "cricket club fixtures and nets"
SHAPE = "LLM request reader, fixtures tool, per-fixture routing loop (ground booking / travel), nets sub-graph (LLM plan, slot builder, booking tool loop), context gathering, LLM schedule + parser, validator node"

CLUB = "Ashcombe CC"
LEAGUE = {
    ("1st XI", "2027-05"): [("2027-05-01", "Ashcombe CC", "Fernleigh"), ("2027-05-08", "Brookside", "Ashcombe CC"),
                            ("2027-05-15", "Ashcombe CC", "Millbury"), ("2027-05-22", "Ashcombe CC", "Holt Green"),
                            ("2027-05-29", "Oakhurst", "Ashcombe CC")],
    ("2nd XI", "2027-05"): [("2027-05-02", "Fernleigh II", "Ashcombe CC"), ("2027-05-09", "Ashcombe CC", "Brookside II"),
                            ("2027-05-16", "Ashcombe CC", "Millbury II"), ("2027-05-23", "Holt Green II", "Ashcombe CC")],
    ("1st XI", "2027-06"): [("2027-06-05", "Ashcombe CC", "Oakhurst"), ("2027-06-12", "Fernleigh", "Ashcombe CC"),
                            ("2027-06-19", "Ashcombe CC", "Brookside")],
    ("Colts U15", "2027-06"): [("2027-06-03", "Ashcombe CC", "Millbury Colts"), ("2027-06-10", "Holt Colts", "Ashcombe CC"),
                               ("2027-06-17", "Ashcombe CC", "Fernleigh Colts"), ("2027-06-24", "Ashcombe CC", "Oak Colts")],
    ("Women's XI", "2027-05"): [("2027-05-04", "Ashcombe CC", "Brookside W"), ("2027-05-11", "Millbury W", "Ashcombe CC"),
                                ("2027-05-18", "Ashcombe CC", "Holt W")],
}
HISTORY = {"1st XI": [{"date": "2027-04-24", "opponent": "Kingsbury", "venue": "home"}],
           "2nd XI": [{"date": "2027-04-25", "opponent": "Kingsbury II", "venue": "away"}],
           "Colts U15": [{"date": "2027-05-27", "opponent": "Kingsbury Colts", "venue": "home"}],
           "Women's XI": [{"date": "2027-04-27", "opponent": "Kingsbury W", "venue": "home"}]}
SQUAD_NETS = {"1st XI": ["Tue", "Thu"], "2nd XI": ["Wed"], "Colts U15": ["Mon", "Fri"], "Women's XI": ["Tue"]}


def _req(team, month, sessions):
    return {"team": team, "month": month, "sessions_per_night": sessions,
            "text": f"Plan {team} fixtures for {month} and book nets, {sessions} one-hour lanes each nets night from 18:00."}


INPUTS = {
    "c1": _req("1st XI", "2027-05", 2), "c2": _req("2nd XI", "2027-05", 3), "c3": _req("Colts U15", "2027-06", 2),
    "c4": _req("1st XI", "2027-05", 3), "c5": _req("Women's XI", "2027-05", 2),
    "r1": _req("1st XI", "2027-06", 2), "r2": _req("2nd XI", "2027-05", 2), "r3": _req("Colts U15", "2027-06", 3),
    "r4": _req("Women's XI", "2027-05", 3),
}
REFS = ["r1", "r2", "r3", "r4"]
CASES = [
    {"id": "zzs_cricket_ground_route", "kind": "wrong_routing", "input": "c2", "root": ("route_fixture", 3),
     "failure": ("validate_schedule", 1),
     "description": "The fixture router sends the 2nd XI's home match against Millbury II to travel arrangements, so no ground is booked for it."},
    {"id": "zzs_cricket_nets_slots", "kind": "off_by_one", "input": "c4", "root": ("build_slots", 1),
     "failure": ("validate_schedule", 1),
     "description": "The nets slot builder stops one hour early, giving two lanes per night where three were asked for."},
    {"id": "zzs_cricket_last_month", "kind": "context_pollution", "input": "c3", "root": ("gather_context", 1),
     "failure": ("validate_schedule", 1),
     "description": "The context gathered for the schedule writer carries May's Kingsbury Colts match, which the schedule then lists as a June fixture."},
    {"id": "zzs_cricket_first_page", "kind": "truncated_result", "input": "c1", "root": ("get_fixtures", 1),
     "failure": ("validate_schedule", 1),
     "description": "The fixtures tool returns only its first page of three matches, so the month's last two fixtures never reach the schedule."},
    {"id": "zzs_cricket_clock_times", "kind": "format_drift", "input": "c5", "root": ("ChatOpenAI", 3),
     "failure": ("validate_schedule", 1),
     "description": "The schedule writer gives nets times as 6pm/7pm instead of 24-hour times, which the parser reads as 06:00 and 07:00."},
]


class S(TypedDict, total=False):
    request: dict
    parsed: dict
    fixtures: list
    cursor: int
    grounds: Annotated[list, operator.add]
    travel: Annotated[list, operator.add]
    nets_plan: dict
    slots: list
    nets: list
    context: dict
    draft: str
    schedule: dict


class NetsState(TypedDict, total=False):
    parsed: dict
    nets_plan: dict
    slots: list
    nets: list


@tool
def get_fixtures(team: str, month: str) -> list:
    """The league's fixtures of a team in a month (paged)."""
    rows = [{"date": d, "home": h, "away": a} for d, h, a in LEAGUE[(team, month)]]
    return rows[:3] if kit.on("zzs_cricket_first_page") else rows


@tool
def book_ground(date: str, opponent: str) -> dict:
    """Book the square and the pavilion for a home match."""
    return {"date": date, "opponent": opponent, "pitch": "square 2", "booked": True}


@tool
def arrange_travel(date: str, ground: str) -> dict:
    """Arrange the minibus to an away ground."""
    return {"date": date, "ground": ground, "minibus": "MB-1", "depart": "11:30"}


@tool
def book_net_lane(night: str, start: str) -> dict:
    """Book one nets lane for an hour."""
    return {"night": night, "start": start, "lane": 1 + (int(start[:2]) % 3), "booked": True}


def brain():
    def read(p, _):
        return json.dumps({"team": p["team"], "month": p["month"], "sessions": p["sessions_per_night"]})

    def nets(p, _):
        return json.dumps({"nights": SQUAD_NETS[p["team"]], "first_start": "18:00", "sessions": p["sessions"]})

    def write(p, _):
        fx = [{"date": f["date"], "opponent": f["opponent"], "venue": f["venue"]} for f in p["fixtures"]]
        for prev in p.get("previous", []):
            fx.append(prev)
        nets = []
        for n in p["nets"]:
            t = n["start"]
            if kit.on("zzs_cricket_clock_times"):
                h = int(t[:2]) - 12
                t = f"{h}pm"
            nets.append({"night": n["night"], "start": t})
        return "Schedule:\n" + json.dumps({"fixtures": sorted(fx, key=lambda f: f["date"]), "nets": nets})

    return brain_from({"read": read, "nets": nets, "write": write})


def build(llm):
    def ask(task, payload):
        return llm.invoke([SystemMessage(f"#{task}"), HumanMessage(json.dumps(payload))]).content

    def read_request(s: S) -> dict:
        return {"parsed": json.loads(ask("read", s["request"])), "cursor": 0}

    def load_fixtures(s: S) -> dict:
        rows = get_fixtures.invoke({"team": s["parsed"]["team"], "month": s["parsed"]["month"]})
        fx = []
        for r in rows:
            home = r["home"] == CLUB
            fx.append({"date": r["date"], "opponent": r["away"] if home else r["home"],
                       "venue": "home" if home else "away", "ground": r["home"]})
        return {"fixtures": fx}

    def next_fixture(s: S) -> dict:
        return {"cursor": s["cursor"]}

    def route_fixture(s: S) -> str:
        if s["cursor"] >= len(s["fixtures"]):
            return "nets"
        f = s["fixtures"][s["cursor"]]
        if kit.on("zzs_cricket_ground_route") and s["cursor"] == 2:
            return "travel"
        return "ground" if f["venue"] == "home" else "travel"

    def ground(s: S) -> dict:
        f = s["fixtures"][s["cursor"]]
        return {"grounds": [book_ground.invoke({"date": f["date"], "opponent": f["opponent"]})], "cursor": s["cursor"] + 1}

    def travel(s: S) -> dict:
        f = s["fixtures"][s["cursor"]]
        return {"travel": [arrange_travel.invoke({"date": f["date"], "ground": f["ground"]})], "cursor": s["cursor"] + 1}

    # nets sub-graph
    def plan_nets(s: S) -> dict:
        return {"nets_plan": json.loads(ask("nets", {"team": s["parsed"]["team"], "sessions": s["parsed"]["sessions"]}))}

    def build_slots(s: S) -> dict:
        p = s["nets_plan"]
        first = int(p["first_start"][:2])
        count = p["sessions"] - 1 if kit.on("zzs_cricket_nets_slots") else p["sessions"]
        return {"slots": [{"night": n, "start": f"{first + i:02d}:00"} for n in p["nights"] for i in range(count)]}

    def book_nets(s: S) -> dict:
        return {"nets": [book_net_lane.invoke(slot) for slot in s["slots"]]}

    sub = StateGraph(NetsState)
    sub.add_node("plan_nets", plan_nets)
    sub.add_node("build_slots", build_slots)
    sub.add_node("book_nets", book_nets)
    sub.add_edge(START, "plan_nets")
    sub.add_edge("plan_nets", "build_slots")
    sub.add_edge("build_slots", "book_nets")
    sub.add_edge("book_nets", END)

    def gather_context(s: S) -> dict:
        team = s["parsed"]["team"]
        prev = [p for p in HISTORY.get(team, []) if kit.on("zzs_cricket_last_month") or p["date"][:7] == s["parsed"]["month"]]
        return {"context": {"previous": prev, "team": team}}

    def write_schedule(s: S) -> dict:
        payload = {"month": s["parsed"]["month"], "fixtures": s["fixtures"], "nets": s["nets"],
                   "previous": s["context"]["previous"]}
        return {"draft": ask("write", payload)}

    def parse_schedule(s: S) -> dict:
        doc = json.loads(s["draft"].split("\n", 1)[1])
        for n in doc["nets"]:
            t = n["start"]
            if t.endswith("pm") or t.endswith("am"):
                t = f"{int(t[:-2]):02d}:00"
            n["start"] = t
        return {"schedule": doc}

    def validate_schedule(s: S) -> dict:
        req = s["request"]
        league = LEAGUE[(req["team"], req["month"])]
        sched = s["schedule"]
        dates = [f["date"] for f in sched["fixtures"]]
        expected = [d for d, _, _ in league]
        if dates != expected:
            raise ValueError(f"{req['team']} {req['month']}: schedule dates {dates} differ from the league's {expected}")
        homes = sorted(d for d, h, _ in league if h == CLUB)
        booked = sorted(g["date"] for g in s["grounds"])
        if booked != homes:
            raise ValueError(f"grounds booked for {booked}, home matches on {homes}")
        for n in sched["nets"]:
            if not "18:00" <= n["start"] <= "21:00":
                raise ValueError(f"nets on {n['night']} at {n['start']} outside the 18:00-21:00 window")
        nights = SQUAD_NETS[req["team"]]
        if len(sched["nets"]) != len(nights) * req["sessions_per_night"]:
            raise ValueError(f"{len(sched['nets'])} nets lanes booked, {len(nights) * req['sessions_per_night']} asked for")
        return {"validated": True}

    g = StateGraph(S)
    for name, fn in [("read_request", read_request), ("load_fixtures", load_fixtures), ("next_fixture", next_fixture),
                     ("ground", ground), ("travel", travel), ("gather_context", gather_context),
                     ("write_schedule", write_schedule), ("parse_schedule", parse_schedule),
                     ("validate_schedule", validate_schedule)]:
        g.add_node(name, fn)
    g.add_node("nets", sub.compile())
    g.add_edge(START, "read_request")
    g.add_edge("read_request", "load_fixtures")
    g.add_edge("load_fixtures", "next_fixture")
    g.add_conditional_edges("next_fixture", route_fixture, {"ground": "ground", "travel": "travel", "nets": "nets"})
    g.add_edge("ground", "next_fixture")
    g.add_edge("travel", "next_fixture")
    g.add_edge("nets", "gather_context")
    g.add_edge("gather_context", "write_schedule")
    g.add_edge("write_schedule", "parse_schedule")
    g.add_edge("parse_schedule", "validate_schedule")
    g.add_edge("validate_schedule", END)
    return g.compile()


def record(server, inp, path):
    server.use(brain())
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"fixtures and nets for {inp['team']} {inp['month']}")
    build(llm).invoke({"request": inp}, config={"callbacks": [tracer], "recursion_limit": 80})
