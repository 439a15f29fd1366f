"""A lido's swim sessions (langgraph route): plan the day's sessions, staff them through a sub-graph, publish."""
import json
from typing import TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

import kit
from common import brain_from
from trajdebug.integrations.langchain import TrajdebugTracer

NAME, ROUTE, DOMAIN = "lido-sessions", "langgraph", "a lido's swim sessions"
SHAPE = "LLM request reader, LLM day plan, per-session loop (capacity tool, staffing sub-graph: LLM roster pick, roster tool, guard assignment), conditions (forecast tool, water sensor tool, conversion), LLM timetable + parser, validator node"

SITE = "Riverside Lido"
OPEN, CLOSE = "06:30", "20:00"
POOLS = {"main": 120, "learner": 20}
ROSTERS = {
    ("Riverside Lido", "early"): ["Ana K", "Tom B", "Priya S"], ("Riverside Lido", "day"): ["Joe M", "Lena W", "Sam O"],
    ("Riverside Lido", "late"): ["Kit R", "Dev P", "Mo A"],
    ("Parkside Lido", "early"): ["Ola F", "Ben C", "Ria D"], ("Parkside Lido", "day"): ["Zoe H", "Raj T", "Ed L"],
    ("Parkside Lido", "late"): ["Ivy N", "Max G", "Sol V"],
}
SENSOR_F = {"2027-06-12": 59.0, "2027-06-13": 62.6, "2027-06-14": 57.2, "2027-06-19": 64.4, "2027-06-20": 60.8,
            "2027-06-11": 66.2, "2027-06-26": 68.0, "2027-06-27": 55.4, "2027-07-03": 69.8}
FORECAST = {"2027-06-12": "sunny", "2027-06-13": "thunder pm", "2027-06-14": "showers", "2027-06-19": "sunny",
            "2027-06-20": "cloudy", "2027-06-11": "sunny", "2027-06-26": "cloudy", "2027-06-27": "sunny", "2027-07-03": "sunny"}
SESSIONS = [("lane swim", "main", "06:30", "08:00"), ("learn to swim", "learner", "09:00", "10:00"),
            ("general swim", "main", "10:00", "16:00"), ("evening lanes", "main", "18:00", "19:30")]


def _req(date, kinds):
    return {"date": date, "site": SITE, "sessions": kinds,
            "text": f"Publish {SITE}'s timetable for {date}: " + ", ".join(kinds)}


INPUTS = {
    "d1": _req("2027-06-12", ["lane swim", "general swim", "evening lanes"]),
    "d2": _req("2027-06-13", ["lane swim", "learn to swim", "general swim"]),
    "d3": _req("2027-06-14", ["lane swim", "learn to swim", "general swim", "evening lanes"]),
    "d4": _req("2027-06-19", ["learn to swim", "general swim", "evening lanes"]),
    "d5": _req("2027-06-20", ["lane swim", "general swim", "evening lanes"]),
    "r1": _req("2027-06-26", ["lane swim", "general swim"]),
    "r2": _req("2027-06-27", ["lane swim", "learn to swim", "general swim", "evening lanes"]),
    "r3": _req("2027-07-03", ["general swim", "evening lanes"]),
    "r4": _req("2027-06-11", ["learn to swim", "general swim"]),
}
REFS = ["r1", "r2", "r3", "r4"]
CASES = [
    {"id": "zzs_lido_water_temp", "kind": "unit_error", "input": "d1", "root": ("water_celsius", 1),
     "failure": ("validate_timetable", 1),
     "description": "The water sensor's 59 F is converted by dividing by 1.8 without taking 32 off, so the timetable shows 32.8 C and no cold-water notice."},
    {"id": "zzs_lido_pool_capacity", "kind": "wrong_tool_args", "input": "d4", "root": ("get_capacity", 3),
     "failure": ("validate_timetable", 1),
     "description": "Capacity for the evening lanes is asked of the learner pool instead of the main pool, so the session is published for 20 swimmers."},
    {"id": "zzs_lido_early_open", "kind": "plan_error", "input": "d5", "root": ("ChatOpenAI", 2),
     "failure": ("validate_timetable", 1),
     "description": "The day plan starts the lane swim at 06:00, half an hour before the lido opens."},
    {"id": "zzs_lido_sister_roster", "kind": "subagent_wrong_entity", "input": "d3", "root": ("ChatOpenAI", 6),
     "failure": ("validate_timetable", 1),
     "description": "The staffing sub-graph picks Parkside Lido's late roster for the evening lanes, so its guards are not Riverside staff."},
    {"id": "zzs_lido_forecast_cache", "kind": "stale_data", "input": "d2", "root": ("get_forecast", 1),
     "failure": ("validate_timetable", 1),
     "description": "The forecast tool answers from the previous day's cached forecast (sunny) and misses the afternoon thunder that closes the pool."},
]


class S(TypedDict, total=False):
    request: dict
    parsed: dict
    plan: list
    cursor: int
    staffed: list
    conditions: dict
    draft: str
    timetable: dict


class Staff(TypedDict, total=False):
    session: dict
    site: str
    pick: dict
    roster: list
    guards: list


@tool
def get_capacity(pool: str, session: str) -> dict:
    """Bather load of a pool for a session."""
    return {"pool": pool, "session": session, "capacity": POOLS[pool]}


@tool
def fetch_roster(site: str, shift: str) -> list:
    """Lifeguards rostered at a site for a shift."""
    return ROSTERS[(site, shift)]


@tool
def get_forecast(date: str) -> dict:
    """Met forecast for the lido's postcode."""
    day = date
    if kit.on("zzs_lido_forecast_cache"):
        day = "2027-06-12"
    return {"date": date, "issued_for": day, "summary": FORECAST[day]}


@tool
def read_water_sensor(date: str) -> dict:
    """The pool's water temperature probe (Fahrenheit feed)."""
    return {"date": date, "temp_f": SENSOR_F[date]}


def shift_of(start):
    return "early" if start < "09:00" else ("day" if start < "17:00" else "late")


def brain():
    def read(p, _):
        return json.dumps({"date": p["date"], "site": p["site"], "sessions": p["sessions"]})

    def plan(p, _):
        rows = []
        for name, pool, start, end in SESSIONS:
            if name in p["sessions"]:
                if kit.on("zzs_lido_early_open") and name == "lane swim":
                    start = "06:00"
                rows.append({"session": name, "pool": pool, "start": start, "end": end})
        return json.dumps(rows)

    def roster(p, _):
        site = p["site"]
        if kit.on("zzs_lido_sister_roster") and p["session"] == "evening lanes":
            site = "Parkside Lido"
        return json.dumps({"site": site, "shift": shift_of(p["start"])})

    def publish(p, _):
        return json.dumps({"date": p["date"], "sessions": p["sessions"], "water_c": p["water_c"],
                           "notices": p["notices"]})

    return brain_from({"read": read, "plan": plan, "roster": roster, "publish": publish})


def build(llm):
    def ask(task, payload):
        return llm.invoke([SystemMessage(f"#{task}"), HumanMessage(json.dumps(payload))]).content

    def read_request(s: S) -> dict:
        return {"parsed": json.loads(ask("read", s["request"])), "cursor": 0, "staffed": []}

    def plan_day(s: S) -> dict:
        return {"plan": json.loads(ask("plan", s["parsed"]))}

    def next_session(s: S) -> dict:
        return {"cursor": s["cursor"]}

    def more(s: S) -> str:
        return "session" if s["cursor"] < len(s["plan"]) else "conditions"

    def session(s: S) -> dict:
        sess = s["plan"][s["cursor"]]
        pool = sess["pool"]
        if kit.on("zzs_lido_pool_capacity") and sess["session"] == "evening lanes":
            pool = "learner"
        cap = get_capacity.invoke({"pool": pool, "session": sess["session"]})
        return {"staffed": s["staffed"] + [{**sess, "capacity": cap["capacity"]}]}

    def pick_roster(st: Staff) -> dict:
        return {"pick": json.loads(ask("roster", {"site": st["site"], **st["session"]}))}

    def get_roster(st: Staff) -> dict:
        return {"roster": fetch_roster.invoke(st["pick"])}

    def assign_guards(st: Staff) -> dict:
        need = 3 if st["session"]["pool"] == "main" else 2
        return {"guards": st["roster"][:need]}

    sub = StateGraph(Staff)
    sub.add_node("pick_roster", pick_roster)
    sub.add_node("get_roster", get_roster)
    sub.add_node("assign_guards", assign_guards)
    sub.add_edge(START, "pick_roster")
    sub.add_edge("pick_roster", "get_roster")
    sub.add_edge("get_roster", "assign_guards")
    sub.add_edge("assign_guards", END)
    staffing_graph = sub.compile()

    def staffing(s: S) -> dict:
        last = s["staffed"][-1]
        out = staffing_graph.invoke({"session": {k: last[k] for k in ("session", "pool", "start", "end")},
                                     "site": s["parsed"]["site"]})
        return {"staffed": s["staffed"][:-1] + [{**last, "guards": out["guards"]}], "cursor": s["cursor"] + 1}

    def conditions(s: S) -> dict:
        fc = get_forecast.invoke({"date": s["parsed"]["date"]})
        probe = read_water_sensor.invoke({"date": s["parsed"]["date"]})
        return {"conditions": {"forecast": fc["summary"], "temp_f": probe["temp_f"]}}

    def water_celsius(s: S) -> dict:
        f = s["conditions"]["temp_f"]
        c = f / 1.8 if kit.on("zzs_lido_water_temp") else (f - 32) / 1.8
        notices = []
        if c < 16:
            notices.append("cold water: wetsuits advised")
        if "thunder" in s["conditions"]["forecast"]:
            notices.append("pool closes 14:00 for thunder")
        return {"conditions": {**s["conditions"], "water_c": round(c, 1), "notices": notices}}

    def publish(s: S) -> dict:
        return {"draft": ask("publish", {"date": s["parsed"]["date"], "sessions": s["staffed"],
                                         "water_c": s["conditions"]["water_c"], "notices": s["conditions"]["notices"]})}

    def parse_timetable(s: S) -> dict:
        return {"timetable": json.loads(s["draft"])}

    def validate_timetable(s: S) -> dict:
        t, date = s["timetable"], s["request"]["date"]
        for sess in t["sessions"]:
            if sess["start"] < OPEN or sess["end"] > CLOSE:
                raise ValueError(f"{sess['session']} {sess['start']}-{sess['end']} outside opening {OPEN}-{CLOSE}")
            if sess["capacity"] != POOLS[sess["pool"]]:
                raise ValueError(f"{sess['session']} published for {sess['capacity']}, the {sess['pool']} pool takes {POOLS[sess['pool']]}")
            staff = ROSTERS[(SITE, shift_of(sess["start"]))]
            odd = [g for g in sess["guards"] if g not in staff]
            if odd:
                raise ValueError(f"{sess['session']} guards {odd} are not on the {SITE} roster")
        actual_c = round((SENSOR_F[date] - 32) / 1.8, 1)
        if abs(t["water_c"] - actual_c) > 0.5:
            raise ValueError(f"water {t['water_c']} C published, the probe reads {actual_c} C")
        if "thunder" in FORECAST[date] and not any("thunder" in n for n in t["notices"]):
            raise ValueError(f"forecast for {date} is {FORECAST[date]}, no closure notice published")
        return {"validated": True}

    g = StateGraph(S)
    for name, fn in [("read_request", read_request), ("plan_day", plan_day), ("next_session", next_session),
                     ("session", session), ("staffing", staffing), ("conditions", conditions),
                     ("water_celsius", water_celsius), ("publish", publish), ("parse_timetable", parse_timetable),
                     ("validate_timetable", validate_timetable)]:
        g.add_node(name, fn)
    g.add_edge(START, "read_request")
    g.add_edge("read_request", "plan_day")
    g.add_edge("plan_day", "next_session")
    g.add_conditional_edges("next_session", more, {"session": "session", "conditions": "conditions"})
    g.add_edge("session", "staffing")
    g.add_edge("staffing", "next_session")
    g.add_edge("conditions", "water_celsius")
    g.add_edge("water_celsius", "publish")
    g.add_edge("publish", "parse_timetable")
    g.add_edge("parse_timetable", "validate_timetable")
    g.add_edge("validate_timetable", END)
    return g.compile()


def record(server, inp, path):
    server.use(brain())
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"timetable for {inp['site']} on {inp['date']}")
    build(llm).invoke({"request": inp}, config={"callbacks": [tracer], "recursion_limit": 80})
