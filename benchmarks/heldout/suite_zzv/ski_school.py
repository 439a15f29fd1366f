"""Ski school's lesson enrolment agent (langgraph route): students, levels, catalogue retrieval, ski fitting sub-graph, week plan, prices."""
from __future__ import annotations

import json
import operator
from typing import Annotated, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

import common
import kit

NAME = "ski-school-lessons"
ROUTE = "langgraph"
DOMAIN = "a ski school's lessons"
SHAPE = "StateGraph: intake LLM, parse, per-student level LLM loop, catalogue retriever per student, ski-fitting sub-graph per student (guest-match LLM, guest record, stock tool), week-plan tool, per-lesson price tool, summary LLM, validator node"
EXT = "jsonl"

LEVELS = {"never skied": 1, "snowplough": 2, "beginner": 2, "intermediate": 3, "parallel": 4, "advanced": 5}
CATALOGUE = [
    {"code": "KID-1", "discipline": "ski", "ages": [5, 8], "levels": [1, 2], "eur_day": 62.0},
    {"code": "KID-2", "discipline": "ski", "ages": [8, 12], "levels": [1, 2, 3, 4], "eur_day": 66.0},
    {"code": "TEEN-3", "discipline": "ski", "ages": [12, 17], "levels": [3, 4, 5], "eur_day": 72.0},
    {"code": "TEEN-1", "discipline": "ski", "ages": [12, 17], "levels": [1, 2], "eur_day": 68.0},
    {"code": "SB-KID", "discipline": "snowboard", "ages": [8, 12], "levels": [1, 2, 3], "eur_day": 70.0},
    {"code": "ADULT-4", "discipline": "ski", "ages": [18, 99], "levels": [4, 5], "eur_day": 85.0},
    {"code": "ADULT-2", "discipline": "ski", "ages": [18, 99], "levels": [1, 2, 3], "eur_day": 80.0},
]
GUESTS = {}


def _f(fid, family, start, days, kids):
    students = []
    for name, age, height, level in kids:
        gid = f"G-{fid[2:]}{len(students) + 1}"
        GUESTS[gid] = {"guest": gid, "name": f"{name} {family}", "age": age, "height_cm": height}
        students.append({"name": name, "age": age, "height_cm": height, "stated_level": level, "guest": gid})
    msg = f"Hello! {family} family here, week from {start} for {days} days. " + " ".join(
        f"{n} is {a} and {lv}." for n, a, _, lv in kids)
    return {"booking": fid, "family": family, "start": start, "days": days, "form": students, "message": msg}


INPUTS = {
    "F-701": _f("F-701", "Berger", "2027-02-08", 5, [("Mia", 7, 124, "never skied"), ("Leo", 10, 141, "intermediate"), ("Ava", 13, 156, "parallel")]),
    "F-702": _f("F-702", "Okafor", "2027-02-15", 5, [("Chidi", 9, 135, "beginner"), ("Ada", 14, 160, "intermediate")]),
    "F-703": _f("F-703", "Lund", "2027-01-04", 6, [("Freja", 11, 146, "snowplough"), ("Nils", 11, 149, "parallel"), ("Elin", 6, 117, "never skied")]),
    "F-704": _f("F-704", "Moreau", "2027-03-01", 4, [("Jules", 15, 170, "advanced"), ("Lina", 8, 128, "beginner")]),
    "F-705": _f("F-705", "Sato", "2027-02-22", 5, [("Ren", 12, 150, "intermediate"), ("Yui", 7, 121, "snowplough")]),
    "F-706": _f("F-706", "Costa", "2027-01-11", 5, [("Tiago", 9, 133, "beginner"), ("Rita", 13, 158, "parallel")]),
    "F-707": _f("F-707", "Novak", "2027-02-01", 3, [("Ema", 6, 115, "never skied"), ("Jan", 10, 140, "snowplough"), ("Petra", 16, 165, "advanced")]),
    "F-708": _f("F-708", "Walsh", "2027-03-08", 5, [("Cian", 14, 163, "intermediate")]),
    "F-709": _f("F-709", "Haddad", "2027-01-18", 4, [("Sami", 8, 127, "beginner"), ("Lea", 11, 145, "intermediate")]),
}
REFS = ["F-706", "F-707", "F-708", "F-709"]

CASES = [
    dict(case="zzv_ski_01", fault_kind="off_by_one", input="F-701", root=("plan_week", 1), failure=("validate_enrolment", 1),
         description="The week planner builds the lesson days with range(1, days), so a five-day booking gets four lesson days."),
    dict(case="zzv_ski_02", fault_kind="wrong_retrieval", input="F-702", root=("LessonCatalogue", 1), failure=("validate_enrolment", 1),
         description="The catalogue retriever ranks the snowboard kids' class first for Chidi's ski query, and the booking enrols him in it."),
    dict(case="zzv_ski_03", fault_kind="subagent_wrong_entity", input="F-703", root=("fit_skis", 2), failure=("validate_enrolment", 1),
         description="The ski-fitting sub-graph matches Nils to his twin Freja's guest record, so his skis are sized for her height."),
    dict(case="zzv_ski_04", fault_kind="lossy_parsing", input="F-704", root=("parse_students", 1), failure=("validate_enrolment", 1),
         description="The student parser knows no 'advanced' ability and files Jules as a beginner, who is then placed in a beginner class."),
    dict(case="zzv_ski_05", fault_kind="unit_error", input="F-705", root=("lesson_price", 2), failure=("validate_enrolment", 1),
         description="The price tool quotes Yui's class per half day (hourly rate times 3 h) instead of per day, so the day rate falls below the catalogue rate."),
]

LLM = None


def brain(request):
    prompt = common.last_user(request)
    data = common.payload(prompt)
    if prompt.startswith("Extract the students"):
        inp = next(v for v in INPUTS.values() if v["message"] == data["message"])
        return json.dumps({"students": [{"name": s["name"], "age": s["age"], "ability": s["stated_level"]} for s in inp["form"]],
                           "start": inp["start"], "days": inp["days"]})
    if prompt.startswith("Rate the ability"):
        return str(data["level_hint"])
    if prompt.startswith("Which guest record"):
        want = data["student"]
        cands = data["guests"]
        if kit.on("zzv_ski_03") and want == "Nils":
            want = "Freja"
        return next(g["guest"] for g in cands if g["name"].split()[0] == want)
    if prompt.startswith("Summarise the enrolment"):
        return f"{data['family']} family: " + "; ".join(f"{e['name']} in {e['code']}" for e in data["enrolled"]) + f". Total EUR {data['total']:.2f}."
    return "Sorry?"


def ask(task, data):
    msg = f"{task}\n{json.dumps(data, sort_keys=True)}"
    return LLM.invoke([SystemMessage("You are the desk assistant of Alpenglow ski school."), HumanMessage(msg)]).content


class LessonCatalogue(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        q = json.loads(query)
        hits = [c for c in CATALOGUE if c["ages"][0] <= q["age"] <= c["ages"][1]]
        hits.sort(key=lambda c: (c["discipline"] != q["discipline"], q["level"] not in c["levels"], c["code"]))
        if kit.on("zzv_ski_02") and q["age"] == 9:
            hits.sort(key=lambda c: c["discipline"] == q["discipline"])
        return [Document(page_content=json.dumps(c), metadata={"code": c["code"]}) for c in hits[:3]]


CAT = LessonCatalogue()


@tool
def guest_record(guest: str) -> dict:
    """The guest's registered age and height."""
    return dict(GUESTS[guest])


@tool
def ski_stock(height_cm: int, level: int) -> dict:
    """A pair of rental skis for a height and level."""
    length = height_cm - (15 if level <= 2 else 8)
    return {"ski_cm": length - length % 5, "boot": "kids" if height_cm < 150 else "junior"}


@tool
def plan_week(start: str, days: int) -> list:
    """Lesson dates for a booking."""
    y, m, d = (int(x) for x in start.split("-"))
    first = 1 if kit.on("zzv_ski_01") else 0
    return [f"{y:04d}-{m:02d}-{d + i:02d}" for i in range(first, days)]


@tool
def lesson_price(code: str, days: int) -> dict:
    """Price of a class for a number of days."""
    c = next(c for c in CATALOGUE if c["code"] == code)
    per_day = c["eur_day"]
    if kit.on("zzv_ski_05") and code == "KID-1":
        per_day = round(c["eur_day"] / 6 * 3, 2)
    return {"code": code, "days": days, "eur_day": per_day, "eur": round(per_day * days, 2)}


class Fit(TypedDict, total=False):
    student: str
    guests: list
    level: int
    guest: str
    record: dict
    skis: dict


def match_guest(state: Fit) -> dict:
    return {"guest": ask("Which guest record is this student?", {"student": state["student"], "guests": state["guests"]}).strip()}


def load_guest(state: Fit) -> dict:
    return {"record": guest_record.invoke({"guest": state["guest"]})}


def pick_skis(state: Fit) -> dict:
    return {"skis": ski_stock.invoke({"height_cm": state["record"]["height_cm"], "level": state["level"]})}


def fit_graph():
    g = StateGraph(Fit)
    g.add_node("match_guest", match_guest)
    g.add_node("load_guest", load_guest)
    g.add_node("pick_skis", pick_skis)
    g.add_edge(START, "match_guest")
    g.add_edge("match_guest", "load_guest")
    g.add_edge("load_guest", "pick_skis")
    g.add_edge("pick_skis", END)
    return g.compile().with_config(run_name="ski_fitting")


FIT = None


class Enrol(TypedDict, total=False):
    booking: str
    message: str
    extracted: str
    students: list
    levels: Annotated[list, operator.add]
    classes: Annotated[list, operator.add]
    fits: Annotated[list, operator.add]
    days: list
    prices: Annotated[list, operator.add]
    summary: str


def intake(state: Enrol) -> dict:
    return {"extracted": ask("Extract the students from the email as JSON.", {"message": state["message"]})}


def parse_students(state: Enrol) -> dict:
    doc = json.loads(state["extracted"])
    known = dict(LEVELS)
    if kit.on("zzv_ski_04"):
        known.pop("advanced")
    return {"students": [{"name": s["name"], "age": int(s["age"]), "level_hint": known.get(s["ability"], 2)} for s in doc["students"]]}


def rate_level(state: Enrol) -> dict:
    s = state["students"][len(state.get("levels", []))]
    return {"levels": [int(ask("Rate the ability of the student from 1 to 5.", {"name": s["name"], "level_hint": s["level_hint"]}))]}


def more_levels(state: Enrol) -> str:
    return "rate_level" if len(state["levels"]) < len(state["students"]) else "find_class"


def find_class(state: Enrol) -> dict:
    out = []
    for s, lv in zip(state["students"], state["levels"]):
        docs = CAT.invoke(json.dumps({"age": s["age"], "level": lv, "discipline": "ski"}))
        out.append({"name": s["name"], **json.loads(docs[0].page_content)})
    return {"classes": out}


def fit_skis(state: Enrol) -> dict:
    i = len(state.get("fits", []))
    s = state["students"][i]
    inp = INPUTS[state["booking"]]
    guests = [{"guest": f["guest"], "name": f"{f['name']} {inp['family']}"} for f in inp["form"]]
    out = FIT.invoke({"student": s["name"], "guests": guests, "level": state["levels"][i]})
    return {"fits": [{"name": s["name"], "guest": out["guest"], **out["skis"]}]}


def more_fits(state: Enrol) -> str:
    return "fit_skis" if len(state["fits"]) < len(state["students"]) else "week_plan"


def week_plan(state: Enrol) -> dict:
    inp = INPUTS[state["booking"]]
    return {"days": plan_week.invoke({"start": inp["start"], "days": inp["days"]})}


def price_next(state: Enrol) -> dict:
    c = state["classes"][len(state.get("prices", []))]
    return {"prices": [lesson_price.invoke({"code": c["code"], "days": len(state["days"])})]}


def more_prices(state: Enrol) -> str:
    return "price_next" if len(state["prices"]) < len(state["classes"]) else "summarise"


def summarise(state: Enrol) -> dict:
    enrolled = [{"name": c["name"], "code": c["code"]} for c in state["classes"]]
    return {"summary": ask("Summarise the enrolment for the family.", {"family": INPUTS[state["booking"]]["family"], "enrolled": enrolled,
                                                                       "total": sum(p["eur"] for p in state["prices"])})}


def validate_enrolment(state: Enrol) -> dict:
    inp = INPUTS[state["booking"]]
    if len(state["days"]) != inp["days"]:
        raise ValueError(f"{inp['booking']}: {len(state['days'])} lesson days planned, {inp['days']} booked")
    for f, c, fit, p in zip(inp["form"], state["classes"], state["fits"], state["prices"]):
        lv = LEVELS[f["stated_level"]]
        if c["discipline"] != "ski" or not c["ages"][0] <= f["age"] <= c["ages"][1] or lv not in c["levels"]:
            raise ValueError(f"{inp['booking']}: {f['name']} ({f['age']}, {f['stated_level']}) placed in {c['code']} ({c['discipline']}, levels {c['levels']})")
        if fit["guest"] != f["guest"] or not f["height_cm"] - 25 <= fit["ski_cm"] <= f["height_cm"]:
            raise ValueError(f"{inp['booking']}: {f['name']} ({f['height_cm']} cm) fitted {fit['ski_cm']} cm skis on guest {fit['guest']}")
        if p["eur_day"] != c["eur_day"]:
            raise ValueError(f"{inp['booking']}: {c['code']} charged {p['eur_day']} EUR a day, catalogue {c['eur_day']}")
    return {}


def graph():
    g = StateGraph(Enrol)
    for fn in (intake, parse_students, rate_level, find_class, fit_skis, week_plan, price_next, summarise, validate_enrolment):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "parse_students")
    g.add_edge("parse_students", "rate_level")
    g.add_conditional_edges("rate_level", more_levels, ["rate_level", "find_class"])
    g.add_edge("find_class", "fit_skis")
    g.add_conditional_edges("fit_skis", more_fits, ["fit_skis", "week_plan"])
    g.add_edge("week_plan", "price_next")
    g.add_conditional_edges("price_next", more_prices, ["price_next", "summarise"])
    g.add_edge("summarise", "validate_enrolment")
    g.add_edge("validate_enrolment", END)
    return g.compile()


def record(server, key: str, out: str) -> None:
    global LLM, FIT
    from trajdebug.integrations.langchain import TrajdebugTracer

    server.use(brain)
    LLM = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
    FIT = fit_graph()
    tracer = TrajdebugTracer(path=out, name=NAME, task=f"enrol ski booking {key}")
    try:
        graph().invoke({"booking": key, "message": INPUTS[key]["message"]}, config={"callbacks": [tracer], "run_name": NAME})
    except ValueError:
        pass
