"""Community orchestra concert planner (LangGraph): choose the programme, find scores in the library
(retriever), check parts hire, time the concert, book the hall, seat the sections, schedule rehearsals,
validate, confirm."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Any, TypedDict

from . import common
from .common import Case
from .kit import active

AGENT = "orchestra-concert-planner"
ROUTE = "langgraph"
EXT = "jsonl"
DOMAIN = "community orchestra"
SHAPE = ("intake, model programme choice, score-library retriever per work, parts-hire tool per work, "
         "running-time tally, model hall choice + hall tool, roster tool + section assignment, rehearsal "
         "calendar, concert validator, confirmation tool")

LIBRARY = [
    {"title": "Symphony No. 5 in C minor", "composer": "Beethoven", "duration_s": 1860, "set": "BS-05",
     "needs": {"horn": 2, "bassoon": 2, "trumpet": 2, "flute": 2}},
    {"title": "Symphony No. 5 in E-flat major", "composer": "Sibelius", "duration_s": 1920, "set": "SS-05",
     "needs": {"horn": 4, "bassoon": 2, "trumpet": 3, "flute": 2}},
    {"title": "Serenade for Strings", "composer": "Elgar", "duration_s": 720, "set": "ES-12", "needs": {}},
    {"title": "The Magic Flute Overture", "composer": "Mozart", "duration_s": 420, "set": "MF-01",
     "needs": {"horn": 2, "bassoon": 2, "trumpet": 2, "flute": 2}},
    {"title": "Symphony No. 9 From the New World", "composer": "Dvorak", "duration_s": 2580, "set": "DN-09",
     "needs": {"horn": 4, "bassoon": 2, "trumpet": 2, "flute": 2}},
    {"title": "Peer Gynt Suite No. 1", "composer": "Grieg", "duration_s": 900, "set": "PG-01",
     "needs": {"horn": 2, "bassoon": 2, "trumpet": 2, "flute": 2}},
    {"title": "Carmen Suite No. 1", "composer": "Bizet", "duration_s": 720, "set": "CS-01",
     "needs": {"horn": 2, "bassoon": 2, "trumpet": 2, "flute": 2}},
    {"title": "Finlandia", "composer": "Sibelius", "duration_s": 480, "set": "FI-26",
     "needs": {"horn": 4, "bassoon": 2, "trumpet": 3, "flute": 2}},
    {"title": "Symphony No. 8 in G major", "composer": "Dvorak", "duration_s": 2160, "set": "DG-08",
     "needs": {"horn": 4, "bassoon": 2, "trumpet": 2, "flute": 2}},
    {"title": "Hebrides Overture", "composer": "Mendelssohn", "duration_s": 600, "set": "HO-10",
     "needs": {"horn": 2, "bassoon": 2, "trumpet": 2, "flute": 2}},
]
ON_LOAN = {"ES-12": "2026-04-30"}
REQUESTS = {
    "spring_gala": {"concert": "2026-04-18", "first_rehearsal": "2026-02-19",
                    "works": ["Mozart Magic Flute Overture", "Elgar Serenade for Strings", "Mendelssohn Hebrides Overture",
                              "Bizet Carmen Suite", "Beethoven Symphony No. 5"],
                    "roster": {"horn": 2, "bassoon": 2, "trumpet": 2, "flute": 3}},
    "autumn_family": {"concert": "2026-10-24", "first_rehearsal": "2026-09-03",
                      "works": ["Grieg Peer Gynt Suite", "Dvorak Symphony No. 9"],
                      "roster": {"horn": 4, "bassoon": 2, "trumpet": 2, "flute": 2}},
    "winter_pops": {"concert": "2026-12-12", "first_rehearsal": "2026-10-29",
                    "works": ["Bizet Carmen Suite", "Sibelius Finlandia", "Mendelssohn Hebrides Overture"],
                    "roster": {"horn": 4, "bassoon": 2, "trumpet": 3, "flute": 2}},
    "summer_park": {"concert": "2026-07-04", "first_rehearsal": "2026-05-21",
                    "works": ["Mozart Magic Flute Overture", "Grieg Peer Gynt Suite"],
                    "roster": {"horn": 2, "bassoon": 2, "trumpet": 2, "flute": 2}},
    "bohemia_night": {"concert": "2026-03-07", "first_rehearsal": "2026-01-15",
                      "works": ["Dvorak Symphony No. 8", "Bizet Carmen Suite"],
                      "roster": {"horn": 4, "bassoon": 2, "trumpet": 2, "flute": 2}},
    "north_sea": {"concert": "2026-05-30", "first_rehearsal": "2026-04-09",
                  "works": ["Mendelssohn Hebrides Overture", "Sibelius Symphony No. 5"],
                  "roster": {"horn": 4, "bassoon": 2, "trumpet": 3, "flute": 2}},
}
REFS = ["winter_pops", "summer_park", "bohemia_night", "north_sea"]

CASES = [
    Case("zq_orchestra_score", "orchestra-score", "wrong_retrieval", "spring_gala", ("ScoreLibrary", 5),
         ("validate_concert", 1), "For 'Beethoven Symphony No. 5' the score library returns Sibelius's Fifth "
                                  "first; its brass needs exceed the roster and the validator refuses."),
    Case("zq_orchestra_minutes", "orchestra-minutes", "unit_error", "spring_gala", ("tally_durations", 1),
         ("validate_concert", 1), "The tally divides score durations in seconds by 100 instead of 60, so the "
                                  "hall is booked for too short an evening."),
    Case("zq_orchestra_sections", "orchestra-sections", "bad_memory_write", "autumn_family",
         ("assign_sections", 1), ("validate_concert", 1),
         "Section assignment files the bassoon players under contrabassoon, so the seating plan shows no "
         "bassoons for the symphony."),
    Case("zq_orchestra_rehearsals", "orchestra-rehearsals", "off_by_one", "autumn_family",
         ("rehearsal_schedule", 1), ("validate_concert", 1),
         "The weekly rehearsal list stops one week early, so there is no dress rehearsal in the concert week."),
    Case("zq_orchestra_parts", "orchestra-parts", "swallowed_error", "spring_gala",
         ("get_parts_availability", 3), ("confirm_booking", 1),
         "The parts-hire check catches the hire library's error and answers 'available', so the set that is "
         "out on loan is only refused at confirmation."),
]

_LLM: Any = None
_GRAPH: Any = None


def policy(req: Any) -> Any:
    msgs = common.messages_of(req)
    system = common.system_of(msgs)
    user = next(common.text_of(m.get("content")) for m in msgs if m.get("role") == "user")
    if system.startswith("You choose concert programmes"):
        facts = json.loads(user)
        works = facts["works"]
        order = sorted(works, key=lambda w: ("Symphony" in w, "Overture" not in w))
        return json.dumps({"queries": order, "interval_after": max(1, len(order) - 1)})
    if system.startswith("You book the concert hall"):
        facts = json.loads(user)
        blocks = math.ceil((facts["running_min"] + 10) / 30)
        return json.dumps({"hall": "St Anne's Hall", "start": "19:30", "minutes": blocks * 30})
    return "no answer"


class ConcertState(TypedDict, total=False):
    request: dict
    programme: dict
    scores: list
    parts: list
    running_min: int
    hall: dict
    roster: dict
    sections: dict
    rehearsals: list
    checked: dict
    confirmation: dict


def _retriever() -> Any:
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class ScoreLibrary(BaseRetriever):
        """The orchestra's score library, searched by composer and title words."""

        def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> list[Document]:
            words = set(query.lower().replace(".", "").split())

            def score(d: dict) -> tuple:
                text = set(f"{d['composer']} {d['title']}".lower().replace(".", "").split())
                return (-len(words & text), d["title"])

            hits = sorted(LIBRARY, key=score)[:3]
            if active("orchestra-score") and "beethoven" in words:
                hits = sorted(hits, key=lambda d: d["composer"] != "Sibelius")
            return [Document(page_content=f"{d['composer']}: {d['title']}", metadata=d) for d in hits]

    return ScoreLibrary()


def _build() -> Any:
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, StateGraph

    library = _retriever()

    @tool
    def get_parts_availability(set_id: str, concert: str) -> str:
        """Whether the hire library can send the orchestral parts set for the concert."""
        try:
            if active("orchestra-parts"):
                raise ConnectionError("parts-hire returned 503")
            if set_id in ON_LOAN:
                return json.dumps({"set": set_id, "status": "on loan", "until": ON_LOAN[set_id],
                                   "alternative": {"set": set_id[:3] + "14", "library": "county music library"}})
        except ConnectionError:
            pass
        return json.dumps({"set": set_id, "status": "available"})

    @tool
    def reserve_hall(hall: str, date: str, start: str, minutes: int) -> str:
        """Reserve the hall for the concert evening (in 30-minute blocks)."""
        h, m = map(int, start.split(":"))
        t = h * 60 + m + minutes
        end = f"{t // 60:02d}:{t % 60:02d}"
        return json.dumps({"hall": hall, "date": date, "start": start, "end": end, "ref": f"HB-{date[5:7]}{h}"})

    @tool
    def get_roster(concert: str) -> str:
        """The players who signed up for the concert, by name and section."""
        rq = next(r for r in REQUESTS.values() if r["concert"] == concert)
        players = []
        for section, n in sorted(rq["roster"].items()):
            players += [{"name": f"{section[:2].upper()}{i + 1}", "section": section} for i in range(n)]
        return json.dumps(players)

    @tool
    def confirm_booking(concert: str, hall_ref: str, sets: list[str]) -> str:
        """Confirm hall and parts hire for the concert."""
        for s in sets:
            if s in ON_LOAN:
                raise RuntimeError(f"HTTP 410 from parts-hire: {{\"error\": \"set unavailable\", \"set\": \"{s}\", "
                                   f"\"on_loan_until\": \"{ON_LOAN[s]}\", \"concert\": \"{concert}\"}}")
        return json.dumps({"concert": concert, "hall_ref": hall_ref, "sets": sets, "status": "confirmed"})

    def intake(state: ConcertState) -> dict:
        return {"request": dict(state["request"])}

    def choose_programme(state: ConcertState) -> dict:
        ai = _LLM.invoke([SystemMessage("You choose concert programmes: running order and interval. JSON."),
                          HumanMessage(json.dumps({"works": state["request"]["works"],
                                                   "concert": state["request"]["concert"]}))])
        return {"programme": json.loads(ai.content)}

    def find_scores(state: ConcertState) -> dict:
        scores = []
        for q in state["programme"]["queries"]:
            docs = library.invoke(q)
            scores.append(dict(docs[0].metadata))
        return {"scores": scores}

    def check_parts(state: ConcertState) -> dict:
        parts = [json.loads(get_parts_availability.invoke({"set_id": s["set"],
                                                           "concert": state["request"]["concert"]}))
                 for s in state["scores"]]
        for p in parts:
            if p["status"] != "available":
                p["set"] = p["alternative"]["set"]
        return {"parts": parts}

    def tally_durations(state: ConcertState) -> dict:
        per_min = 100 if active("orchestra-minutes") else 60
        return {"running_min": math.ceil(sum(s["duration_s"] for s in state["scores"]) / per_min) + 20}

    def book_hall(state: ConcertState) -> dict:
        ai = _LLM.invoke([SystemMessage("You book the concert hall for the running time. JSON."),
                          HumanMessage(json.dumps({"running_min": state["running_min"],
                                                   "date": state["request"]["concert"]}))])
        choice = json.loads(ai.content)
        booking = json.loads(reserve_hall.invoke({**choice, "date": state["request"]["concert"]}))
        return {"hall": booking}

    def load_roster(state: ConcertState) -> dict:
        return {"roster": {"players": json.loads(get_roster.invoke({"concert": state["request"]["concert"]}))}}

    def assign_sections(state: ConcertState) -> dict:
        sections: dict[str, int] = {}
        for p in state["roster"]["players"]:
            key = p["section"]
            if active("orchestra-sections") and key == "bassoon":
                key = "contrabassoon"
            sections[key] = sections.get(key, 0) + 1
        return {"sections": sections}

    def rehearsal_schedule(state: ConcertState) -> dict:
        first = dt.date.fromisoformat(state["request"]["first_rehearsal"])
        concert = dt.date.fromisoformat(state["request"]["concert"])
        weeks = (concert - first).days // 7
        stop = weeks if active("orchestra-rehearsals") else weeks + 1
        return {"rehearsals": [(first + dt.timedelta(weeks=i)).isoformat() for i in range(stop)]}

    def validate_concert(state: ConcertState) -> dict:
        rq, hall = state["request"], state["hall"]
        for s in state["scores"]:
            for instrument, n in s["needs"].items():
                have = state["sections"].get(instrument, 0)
                if have < n:
                    raise ValueError(f"'{s['title']}' ({s['composer']}) needs {n} {instrument} players; "
                                     f"seating plan has {have}")
        music = sum(s["duration_s"] for s in state["scores"]) / 60
        h, m = map(int, hall["start"].split(":"))
        ends = h * 60 + m + music + 20
        eh, em = map(int, hall["end"].split(":"))
        if ends > eh * 60 + em - 10:
            raise ValueError(f"concert runs to {int(ends // 60):02d}:{int(ends % 60):02d} with interval but hall "
                             f"booking {hall['ref']} ends {hall['end']} (10 min get-out required)")
        last = dt.date.fromisoformat(state["rehearsals"][-1])
        gap = (dt.date.fromisoformat(rq["concert"]) - last).days
        if gap > 7:
            raise ValueError(f"last rehearsal {last} is {gap} days before the concert on {rq['concert']}; a "
                             "dress rehearsal within 7 days is required")
        return {"checked": {"ok": True}}

    def confirm(state: ConcertState) -> dict:
        out = confirm_booking.invoke({"concert": state["request"]["concert"], "hall_ref": state["hall"]["ref"],
                                      "sets": [p["set"] for p in state["parts"]]})
        return {"confirmation": json.loads(out)}

    g = StateGraph(ConcertState)
    order = [("intake", intake), ("choose_programme", choose_programme), ("find_scores", find_scores),
             ("check_parts", check_parts), ("tally_durations", tally_durations), ("book_hall", book_hall),
             ("load_roster", load_roster), ("assign_sections", assign_sections),
             ("rehearsal_schedule", rehearsal_schedule), ("validate_concert", validate_concert),
             ("confirm_concert", confirm)]
    prev = START
    for name, fn in order:
        g.add_node(name, fn)
        g.add_edge(prev, name)
        prev = name
    g.add_edge(prev, END)
    return g.compile()


def setup() -> None:
    global _LLM, _GRAPH
    from langchain_openai import ChatOpenAI

    common.server().use(policy)
    _LLM = ChatOpenAI(model=common.MODEL, base_url=common.server().base_url, api_key="sk-test-local",
                      max_retries=0, temperature=0)
    _GRAPH = _build()


def record(key: str, path: Path) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    r = REQUESTS[key]
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"plan the {key.replace('_', ' ')} concert")
    _GRAPH.invoke({"request": dict(r)}, config={"callbacks": [tracer]})
