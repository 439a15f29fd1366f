"""Choir rehearsal scheduling (langgraph route): a concert brief becomes booked rehearsal evenings."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case
from .kit import active

AGENT = "choir-rehearsals"
ROUTE = "langgraph"
EXT = "jsonl"

INPUTS = {
    "bminor": {"brief": "Book 3 rehearsals of 150 minutes for 'Mass in B minor' (Bach) before 2027-03-20."},
    "messiah": {"brief": "Book 4 rehearsals of 120 minutes for 'Messiah' (Handel) before 2027-12-10."},
}
REFS = [
    {"brief": "Book 2 rehearsals of 90 minutes for 'Requiem' (Faure) before 2027-05-15."},
    {"brief": "Book 3 rehearsals of 120 minutes for 'Gloria' (Vivaldi) before 2027-06-26."},
    {"brief": "Book 4 rehearsals of 150 minutes for 'Creation' (Haydn) before 2027-10-09."},
    {"brief": "Book 2 rehearsals of 120 minutes for 'Mass in C' (Beethoven) before 2027-04-24."},
]

CASES = [
    Case("zc16", "zc-ch-1", "stale_data", "bminor", ("section_availability", 4), ("publish_schedule", 1),
         "section_availability answers the week of 2027-03-08 from last term's cache, which still shows the conductor free on 2027-03-09."),
    Case("zc17", "zc-ch-2", "off_by_one", "messiah", ("pick_weeks", 1), ("publish_schedule", 1),
         "pick_weeks slices one week too few, so only 3 of the 4 rehearsals are proposed and booked."),
    Case("zc18", "zc-ch-3", "unit_error", "messiah", ("compute_times", 1), ("reserve_hall", 1),
         "compute_times passes the rehearsal length in minutes where the hall API expects hours."),
    Case("zc19", "zc-ch-4", "hallucinated_value", "bminor", ("ChatOpenAI", 2), ("reserve_hall", 2),
         "The model proposes Saturday 2027-03-06, an evening no availability answer offered."),
    Case("zc20", "zc-ch-5", "wrong_retrieval", "messiah", ("ScoreLibrary", 1), ("publish_schedule", 1),
         "The score search matches on the composer's catalogue shelf and returns the Dixit Dominus parts instead of Messiah."),
]

SCORES = [
    {"work": "Mass in B minor", "composer": "Bach", "edition": "Baerenreiter BA 5935"},
    {"work": "Dixit Dominus", "composer": "Handel", "edition": "Novello NOV 070225"},
    {"work": "Messiah", "composer": "Handel", "edition": "Novello NOV 070137"},
    {"work": "Requiem", "composer": "Faure", "edition": "Carus 27.311"},
    {"work": "Gloria", "composer": "Vivaldi", "edition": "Ricordi 132524"},
    {"work": "Creation", "composer": "Haydn", "edition": "Peters EP 66"},
    {"work": "Mass in C", "composer": "Beethoven", "edition": "Breitkopf ChB 5285"},
]
CONDUCTOR_BUSY = {"2027-03-09", "2027-11-16"}
LAST_TERM_CACHE = {"2027-03-08": ["2027-03-09", "2027-03-11"]}
HALL_OPEN_WEEKDAYS = {1, 3}  # Tuesday, Thursday


class ScoreLibrary(BaseRetriever):
    """The choir library's catalogue search."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        work, composer = query.split(" | ")
        if active("zc-ch-5"):
            hits = [s for s in SCORES if s["composer"] == composer]
        else:
            hits = [s for s in SCORES if s["work"] == work and s["composer"] == composer]
        return [Document(page_content=f"{s['work']} ({s['composer']}): {s['edition']}", metadata=s) for s in hits]


@tool
def section_availability(week: str) -> dict:
    """Evenings in a week when every voice section and the conductor are free."""
    if active("zc-ch-1") and week in LAST_TERM_CACHE:
        return {"week": week, "free": LAST_TERM_CACHE[week]}
    monday = dt.date.fromisoformat(week)
    evenings = [(monday + dt.timedelta(days=d)).isoformat() for d in (1, 3)]
    return {"week": week, "free": [e for e in evenings if e not in CONDUCTOR_BUSY]}


class HallAPIError(Exception):
    pass


@tool
def reserve_hall(date: str, start: str, duration_hours: float) -> dict:
    """Reserve the church hall for a rehearsal."""
    day = dt.date.fromisoformat(date)
    if day.weekday() not in HALL_OPEN_WEEKDAYS:
        raise HallAPIError(f'HTTP 409: {{"error": "hall_closed", "detail": "the hall takes no evening bookings on {day:%A} {date}"}}')
    if duration_hours > 4:
        raise HallAPIError(f'HTTP 400: {{"error": "invalid_duration", "detail": "duration_hours {duration_hours} exceeds the maximum of 4"}}')
    return {"date": date, "start": start, "hours": duration_hours, "ref": f"HALL-{date}"}


@tool
def publish_schedule(work: str, count: int, edition: str, bookings: list[dict]) -> dict:
    """Publish the rehearsal schedule to the choir's members."""
    errors = []
    if len(bookings) != count:
        errors.append(f"the brief asks for {count} rehearsals, {len(bookings)} booked")
    if not edition.startswith(work + " "):
        errors.append(f"parts issued ({edition}) do not belong to {work}")
    for b in bookings:
        if b["date"] in CONDUCTOR_BUSY:
            errors.append(f"conductor has an engagement on {b['date']}")
    if errors:
        raise HallAPIError("schedule not published: " + "; ".join(errors))
    return {"published": True, "rehearsals": [b["date"] for b in bookings]}


def policy(request):
    content = request.body["messages"][-1].get("content") or ""
    if content.startswith("Read this concert brief"):
        text = content.split("\n", 1)[1]
        m = re.search(r"Book (\d+) rehearsals of (\d+) minutes for '([^']+)' \((\w+)\) before (\S+)\.", text)
        return json.dumps({"count": int(m.group(1)), "minutes": int(m.group(2)), "work": m.group(3),
                           "composer": m.group(4), "deadline": m.group(5)})
    if content.startswith("Propose one evening per week"):
        free = json.loads(content.split("\n", 1)[1])
        slots = [{"date": days[0], "start": "19:00"} for days in free.values() if days]
        if active("zc-ch-4") and len(slots) > 1:
            slots[1] = {"date": "2027-03-06", "start": "19:00"}
        return json.dumps({"slots": slots})
    return "No answer."


class State(TypedDict, total=False):
    brief: str
    plan: dict
    edition: str
    weeks: list
    free: dict
    chosen: list
    slots: list
    timed: list
    bookings: list
    result: dict


class AvailState(TypedDict, total=False):
    deadline: str
    count: int
    weeks: list
    free: dict


def build(llm: ChatOpenAI):
    library = ScoreLibrary()

    def read_brief(state: State) -> dict:
        answer = llm.invoke([("user", "Read this concert brief as JSON:\n" + state["brief"])])
        return {"plan": json.loads(answer.content)}

    def find_scores(state: State) -> dict:
        p = state["plan"]
        docs = library.invoke(f"{p['work']} | {p['composer']}")
        return {"edition": docs[0].page_content.split(": ", 1)[0] + " " + docs[0].metadata["edition"]}

    def list_weeks(state: AvailState) -> dict:
        deadline = dt.date.fromisoformat(state["deadline"])
        monday = deadline - dt.timedelta(days=deadline.weekday())
        weeks = [(monday - dt.timedelta(days=7 * k)).isoformat() for k in range(state["count"] + 1, 0, -1)]
        return {"weeks": weeks}

    def poll_sections(state: AvailState) -> dict:
        free = {}
        for week in state["weeks"]:
            free[week] = section_availability.invoke({"week": week})["free"]
        return {"free": free}

    sub = StateGraph(AvailState)
    sub.add_node("list_weeks", list_weeks)
    sub.add_node("poll_sections", poll_sections)
    sub.add_edge(START, "list_weeks")
    sub.add_edge("list_weeks", "poll_sections")
    sub.add_edge("poll_sections", END)
    availability = sub.compile()

    def gather_availability(state: State) -> dict:
        out = availability.invoke({"deadline": state["plan"]["deadline"], "count": state["plan"]["count"]})
        return {"weeks": out["weeks"], "free": out["free"]}

    def pick_weeks(state: State) -> dict:
        n = state["plan"]["count"] - (1 if active("zc-ch-2") else 0)
        usable = [w for w in state["weeks"] if state["free"][w]]
        return {"chosen": usable[-n:]}

    def propose_slots(state: State) -> dict:
        free = {w: state["free"][w] for w in state["chosen"]}
        answer = llm.invoke([("user", "Propose one evening per week for rehearsals:\n" + json.dumps(free))])
        return {"slots": json.loads(answer.content)["slots"]}

    def compute_times(state: State) -> dict:
        minutes = state["plan"]["minutes"]
        hours = float(minutes) if active("zc-ch-3") else minutes / 60
        return {"timed": [{**s, "duration_hours": hours} for s in state["slots"]]}

    def book_rehearsals(state: State) -> dict:
        return {"bookings": [reserve_hall.invoke(t) for t in state["timed"]]}

    def publish(state: State) -> dict:
        p = state["plan"]
        return {"result": publish_schedule.invoke({"work": p["work"], "count": p["count"],
                                                   "edition": state["edition"], "bookings": state["bookings"]})}

    g = StateGraph(State)
    order = [("read_brief", read_brief), ("find_scores", find_scores), ("gather_availability", gather_availability),
             ("pick_weeks", pick_weeks), ("propose_slots", propose_slots), ("compute_times", compute_times),
             ("book_rehearsals", book_rehearsals), ("publish", publish)]
    for name, fn in order:
        g.add_node(name, fn)
    g.add_edge(START, order[0][0])
    for (a, _), (b, _) in zip(order, order[1:]):
        g.add_edge(a, b)
    g.add_edge(order[-1][0], END)
    return g.compile()


def record(inp: dict, path: str, server) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=AGENT, task=inp["brief"])
    try:
        build(llm).invoke({"brief": inp["brief"]}, config={"callbacks": [tracer]})
    except HallAPIError:
        pass
