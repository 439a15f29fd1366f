"""Kiteboarding school (langgraph): a routed StateGraph; the model's level assessment is parsed by a LangChain parser."""
from typing import TypedDict

from langchain_core.output_parsers import JsonOutputParser
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer
import json

NAME, ROUTE, DOMAIN = "kite-school-booking", "langgraph", "kiteboarding school"
SHAPE = "graph: intake -> assess (ChatOpenAI | JsonOutputParser) -> pick_track router -> one of three lesson nodes (forecast + kite size tools) -> book_slot -> safety_check"
ON: set = set()

INPUTS = [
    {"student": "Leila Haddad", "weight_kg": 58, "log": "3 lessons, body drags both ways, first water starts", "spot": "Tarifa Valdevaqueros", "date": "2027-05-08", "lessons_done": 3},
    {"student": "Piet de Vries", "weight_kg": 92, "log": "never flown a kite", "spot": "Tarifa Los Lances", "date": "2027-05-09", "lessons_done": 0},
    {"student": "Noa Mizrahi", "weight_kg": 70, "log": "rides both directions, holds upwind for 200 m", "spot": "Tarifa Valdevaqueros", "date": "2027-05-10", "lessons_done": 9},
    {"student": "Sam Ortega", "weight_kg": 52, "log": "trainer kite on the beach twice", "spot": "Tarifa Los Lances", "date": "2027-05-11", "lessons_done": 1},
    {"student": "Ruth Baker", "weight_kg": 81, "log": "water starts, loses ground downwind", "spot": "Tarifa Valdevaqueros", "date": "2027-05-12", "lessons_done": 5},
]
CASES = [
    {"id": "zzzm-11", "input": 0, "switch": "route_pool", "kind": "wrong_routing",
     "root": ("pick_track", 1, None), "failure": ("book_instructor", 1),
     "description": "The router sends a level 2 student to the beach pool session meant for level 0 and 1."},
    {"id": "zzzm-12", "input": 2, "switch": "wind_ms", "kind": "unit_error",
     "root": ("spot_wind_forecast", 1, None), "failure": ("station_reading", 1),
     "description": "The forecast tool gives the wind in metres per second under a field the kite chart reads as knots."},
    {"id": "zzzm-13", "input": 3, "switch": "kite_weight", "kind": "tool_ignores_argument",
     "root": ("kite_size_chart", 1, None), "failure": ("station_reading", 1),
     "description": "The kite size chart ignores the rider's weight and sizes the kite for a 75 kg rider."},
    {"id": "zzzm-14", "input": 1, "switch": "notes_mix", "kind": "context_pollution",
     "root": ("gather_notes", 1, None), "failure": ("book_instructor", 1),
     "description": "The notes for the assessment prompt also carry another student's logbook entry, so a first-timer is assessed as riding upwind."},
    {"id": "zzzm-15", "input": 4, "switch": "level_text", "kind": "format_drift",
     "root": ("ChatOpenAI", 1, "llm"), "failure": ("pick_track", 1),
     "description": "The assessment model answers the level as the text 'Level 2' instead of the number the school's schema uses."},
]
OTHER_LOG = "Instructor note (Noa Mizrahi): rides both directions, holds upwind for 200 m."


class Lesson(TypedDict, total=False):
    student: str
    weight_kg: int
    log: str
    spot: str
    date: str
    notes: list
    level: object
    track: str
    wind: dict
    kite_m2: int
    booking: dict
    cleared: bool
    lessons_done: int


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    if "level_text" in ON:
        return json.dumps({"level": "Level 2", "reason": "water starts"})
    text = prompt.lower()
    if "upwind" in text:
        lvl = 3
    elif "water start" in text:
        lvl = 2
    elif "body drag" in text:
        lvl = 1
    else:
        lvl = 0
    return json.dumps({"level": lvl, "reason": "from the logbook"})


@tool
def spot_wind_forecast(spot: str, date: str) -> dict:
    """Wind forecast for a kite spot on a date, in knots."""
    kn = 18 if "Valdevaqueros" in spot else 14
    if "wind_ms" in ON:
        kn = round(kn * 0.514)
    return {"spot": spot, "date": date, "wind_kn": kn, "gust_kn": kn + 5}


@tool
def kite_size_chart(weight_kg: int, wind_kn: int) -> int:
    """Kite size in square metres for a rider's weight and the wind in knots."""
    w = 75 if "kite_weight" in ON else weight_kg
    return max(5, min(17, round(w * 2.2 / wind_kn)))


@tool
def station_reading(spot: str, kite_m2: int, weight_kg: int) -> dict:
    """Live anemometer reading at the spot; the beach marshal refuses kites too large for rider and wind."""
    kn = 18 if "Valdevaqueros" in spot else 14
    limit = round(weight_kg * 2.2 / kn) + 2
    if kite_m2 > limit:
        raise ValueError(f"marshal refuses launch: {kite_m2} m2 kite for a {weight_kg} kg rider in {kn} kn (max {limit} m2)")
    return {"spot": spot, "wind_kn": kn, "launch": "cleared"}


@tool
def book_instructor(track: str, level: int, date: str, lessons_done: int) -> dict:
    """Book an instructor slot for a lesson track."""
    allowed = {"beach_pool": (0, 1), "water_start": (1, 2), "upwind": (2, 3)}[track]
    if not allowed[0] <= level <= allowed[1]:
        raise ValueError(f"{track} lessons take IKO levels {allowed[0]}-{allowed[1]}, student assessed at {level}")
    if track == "upwind" and lessons_done < 4:
        raise ValueError(f"upwind clinic needs 4 completed lessons on record, student has {lessons_done}")
    return {"track": track, "date": date, "instructor": {"beach_pool": "Jon", "water_start": "Alba", "upwind": "Kai"}[track]}


def build(llm):
    def intake(s: Lesson) -> dict:
        return {"notes": []}

    def gather_notes(s: Lesson) -> dict:
        notes = [f"Logbook ({s['student']}): {s['log']}."]
        if "notes_mix" in ON:
            notes.append(OTHER_LOG)
        return {"notes": notes}

    chain = llm | JsonOutputParser()

    def assess(s: Lesson) -> dict:
        out = chain.invoke([("system", "Assess the student's IKO level (0-3) from the notes. Answer JSON {level, reason}."),
                            ("user", "\n".join(s["notes"]))])
        return {"level": out["level"]}

    def pick_track(s: Lesson) -> dict:
        lvl = s["level"]
        if not isinstance(lvl, int):
            raise TypeError(f"assessment level must be an IKO number 0-3, got {lvl!r}")
        track = "beach_pool" if lvl <= 1 else ("water_start" if lvl == 2 else "upwind")
        if "route_pool" in ON:
            track = "beach_pool" if lvl <= 2 else "upwind"
        return {"track": track}

    def lesson(s: Lesson) -> dict:
        wind = spot_wind_forecast.invoke({"spot": s["spot"], "date": s["date"]})
        size = kite_size_chart.invoke({"weight_kg": s["weight_kg"], "wind_kn": wind["wind_kn"]})
        return {"wind": wind, "kite_m2": size}

    def book_slot(s: Lesson) -> dict:
        return {"booking": book_instructor.invoke({"track": s["track"], "level": s["level"], "date": s["date"], "lessons_done": s["lessons_done"]})}

    def safety_check(s: Lesson) -> dict:
        station_reading.invoke({"spot": s["spot"], "kite_m2": s["kite_m2"], "weight_kg": s["weight_kg"]})
        return {"cleared": True}

    g = StateGraph(Lesson)
    for n, f in [("intake", intake), ("gather_notes", gather_notes), ("assess", assess), ("pick_track", pick_track),
                 ("beach_pool", lesson), ("water_start", lesson), ("upwind", lesson), ("book_slot", book_slot),
                 ("safety_check", safety_check)]:
        g.add_node(n, f)
    g.add_edge(START, "intake")
    g.add_edge("intake", "gather_notes")
    g.add_edge("gather_notes", "assess")
    g.add_edge("assess", "pick_track")
    g.add_conditional_edges("pick_track", lambda s: s["track"], ["beach_pool", "water_start", "upwind"])
    for n in ("beach_pool", "water_start", "upwind"):
        g.add_edge(n, "book_slot")
    g.add_edge("book_slot", "safety_check")
    g.add_edge("safety_check", END)
    return g.compile()


def run_one(inp, path, server):
    llm = ChatOpenAI(base_url=server.base_url, api_key="x", model="kite-coach", max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"book lesson {inp['student']} {inp['date']}")
    try:
        build(llm).invoke(dict(inp), config={"callbacks": [tracer]})
    except Exception:
        pass
