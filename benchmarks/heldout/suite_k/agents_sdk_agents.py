"""The two OpenAI Agents SDK agents (Chat Completions model on the fake server, recorded by
TrajdebugProcessor): film-festival programming and textbook procurement."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    function_tool,
    set_trace_processors,
)

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, Request, tool_call

from ._harness import active


def _results(msgs: list[dict[str, Any]]) -> list[Any]:
    out = []
    for m in msgs:
        if m.get("role") == "tool":
            try:
                out.append(json.loads(m["content"]))
            except (TypeError, ValueError):
                out.append({"text": m["content"]})
    return out


# -- film-festival programming ------------------------------------------------------------------

_FILMS = {
    "competition": [("F-2270", "Salt Meridian", 118), ("F-2281", "The Lantern Keepers", 97), ("F-2295", "Glass Orchard", 104)],
    "panorama": [("F-3104", "Dust Psalm", 88), ("F-3112", "Northern Ferry", 101)],
    "forum": [("F-4021", "Static Gardens", 76), ("F-4033", "Copper Tide", 92)],
    "midnight": [("F-5007", "Hollow Signal", 84), ("F-5010", "Night Shift Saints", 95)],
    "retrospective": [("F-6001", "Rivers of Chalk", 132), ("F-6004", "The Ninth Lock", 111)],
}
_RUNTIME = {f: r for rows in _FILMS.values() for f, _, r in rows}
_CLEARED: set[str] = set()


@function_tool
def search_submissions(section: str, min_score: float) -> str:
    """Shortlisted submissions of a festival section with a jury score at or above min_score."""
    rows = [{"film": f, "title": t, "runtime_min": r} for f, t, r in _FILMS[section]]
    if active("k_fest_trunc"):
        rows = rows[:2]
    return json.dumps({"section": section, "films": rows, "total": len(rows)}, sort_keys=True)


@function_tool
def get_screening_slots(venue: str, day: str) -> str:
    """Free screening slots of a venue on a day."""
    length = 110 if venue == "Studio 3" else 150
    starts = ["14:00", "17:00", "19:30"]
    if active("k_fest_drift"):
        starts[2] = "7:30 PM"
    return json.dumps({"venue": venue, "day": day, "slots": [{"slot": f"{venue[:1]}{k + 1}", "start": s, "length_min": length}
                                                             for k, s in enumerate(starts)]}, sort_keys=True)


@function_tool
def check_rights(film_id: str, territory: str) -> str:
    """Screening-rights status of a film in a territory."""
    _CLEARED.add(film_id)
    return json.dumps({"film": film_id, "territory": territory, "status": "cleared", "until": "2027-01-31"})


@function_tool(failure_error_function=None)
def schedule_screening(film_id: str, slot: str, start: str, runtime_min: int, length_min: int) -> str:
    """Book a film into a screening slot in the festival schedule."""
    if not re.fullmatch(r"\d\d:\d\d", start):
        raise ValueError(f"schedule service: start '{start}' of slot {slot} is not HH:MM")
    if runtime_min != _RUNTIME[film_id]:
        raise ValueError(f"schedule service: runtime {runtime_min} min does not match the DCP of {film_id} ({_RUNTIME[film_id]} min)")
    if runtime_min > length_min:
        raise ValueError(f"schedule service: {film_id} runs {runtime_min} min, slot {slot} is {length_min} min")
    if film_id not in _CLEARED:
        raise PermissionError(f"schedule service: no rights clearance on file for {film_id}")
    return json.dumps({"film": film_id, "slot": slot, "start": start, "booked": True})


@function_tool(failure_error_function=None)
def publish_program(section: str, film_ids: list[str]) -> str:
    """Publish a section's screenings to the festival programme."""
    missing = [f for f, _, _ in _FILMS[section] if f not in film_ids]
    if missing:
        raise ValueError(f"programme portal: {section} is missing shortlisted titles {', '.join(missing)}")
    return json.dumps({"section": section, "published": len(film_ids)})


def festival_policy(request: Request) -> Reply | str:
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    results = _results(msgs)
    if system.startswith("Route"):
        target = "shorts_programmer" if active("k_fest_route") else "features_programmer"
        return Reply(tool_calls=(tool_call(f"transfer_to_{target}", {}),))
    if system.startswith("You clear"):
        film = re.search(r"F-\d{4}", msgs[-1]["content"] if not results else msgs[1]["content"]).group(0)
        if active("k_fest_entity") and film == "F-2270":
            film = "F-2207"
        if not results:
            return Reply(tool_calls=(tool_call("check_rights", {"film_id": film, "territory": "DE"}),))
        return f"Rights for {results[0]['film']} in DE: {results[0]['status']} until {results[0]['until']}."
    task = json.loads(msgs[1]["content"])
    venue = "Studio 3" if system.startswith("You program short") else "Palace 1"
    films = next((r for r in results if "films" in r), None)
    slots = next((r for r in results if "slots" in r), None)
    if films is None:
        return Reply(tool_calls=(tool_call("search_submissions", {"section": task["section"], "min_score": 7.5}),
                                 tool_call("get_screening_slots", {"venue": venue, "day": task["day"]})))
    rights = [r for r in results if "text" in r and r["text"].startswith("Rights")]
    if not rights:
        return Reply(tool_calls=tuple(tool_call("rights_desk", {"input": f"Clear {f['film']} ({f['title']}) for DE"})
                                      for f in films["films"]))
    booked = [r for r in results if r.get("booked")]
    if not booked:
        calls = []
        for f, s in zip(films["films"], slots["slots"]):
            runtime = f["runtime_min"]
            if active("k_fest_halluc") and f["film"] == "F-2281":
                runtime = 79
            calls.append(tool_call("schedule_screening", {"film_id": f["film"], "slot": s["slot"], "start": s["start"],
                                                          "runtime_min": runtime, "length_min": s["length_min"]}))
        return Reply(tool_calls=tuple(calls))
    if not any("published" in r for r in results):
        return Reply(tool_calls=(tool_call("publish_program", {"section": task["section"], "film_ids": [b["film"] for b in booked]}),))
    return "Programmed: " + ", ".join(f"{b['film']} at {b['start']}" for b in booked)


def _festival_agent(client: Any) -> Agent:
    model = OpenAIChatCompletionsModel(model="fake-model", openai_client=client)
    rights = Agent(name="rights_desk", instructions="You clear screening rights for festival films.", model=model,
                   tools=[check_rights])
    tools = [search_submissions, get_screening_slots,
             rights.as_tool("rights_desk", "Clear the screening rights of one film."), schedule_screening]
    features = Agent(name="features_programmer", instructions="You program feature films into the festival schedule.",
                     model=model, tools=[*tools, publish_program])
    shorts = Agent(name="shorts_programmer", instructions="You program short films into the shorts blocks.",
                   model=model, tools=[*tools, publish_program])
    return Agent(name="festival_triage", instructions="Route the programming request to the right programmer.",
                 model=model, handoffs=[features, shorts])


def festival_agent(clients: dict[str, Any], given: dict[str, Any], path: Path) -> None:
    _CLEARED.clear()
    agent = _festival_agent(clients["async"])
    set_trace_processors([TrajdebugProcessor(path=str(path), name="festival-programmer", task=f"program {given['section']}")])
    try:
        Runner.run_sync(agent, json.dumps(given), context=dict(given), run_config=RunConfig(workflow_name="festival-programmer"),
                        max_turns=12)
    finally:
        set_trace_processors([])


FESTIVAL_INPUTS = [{"section": "competition", "day": "2026-06-12"}, {"section": "panorama", "day": "2026-06-13"},
                   {"section": "forum", "day": "2026-06-14"}, {"section": "midnight", "day": "2026-06-13"},
                   {"section": "retrospective", "day": "2026-06-15"}]


# -- textbook procurement -----------------------------------------------------------------------

_REGISTRAR = {"MATH-201": {"A": "88 enrolled + 8 waitlist", "B": "60 enrolled + 4 waitlist"},
              "CHEM-110": {"A": "120 enrolled + 10 waitlist", "B": "41 enrolled + 0 waitlist"},
              "HIST-305": {"A": "35 enrolled + 2 waitlist", "B": "28 enrolled + 1 waitlist"},
              "CS-150": {"A": "140 enrolled + 12 waitlist", "B": "90 enrolled + 6 waitlist"},
              "BIO-220": {"A": "64 enrolled + 5 waitlist", "B": "58 enrolled + 3 waitlist"}}
_BOOKS = {"MATH-201": ("Linear Algebra Done Openly", "978-1-4921-7740-2", "978-1-4921-7739-6"),
          "CHEM-110": ("Chemistry in Context", "978-0-321-90210-4", "978-0-321-88011-2"),
          "HIST-305": ("The Long Nineteenth Century", "978-0-19-882310-5", "978-0-19-870021-5"),
          "CS-150": ("Programming from First Principles", "978-1-09-811352-0", "978-1-09-810441-2"),
          "BIO-220": ("Cell Biology Essentials", "978-1-319-33409-7", "978-1-319-30110-5")}
_IN_PRINT = {b[1] for b in _BOOKS.values()}
_QUOTES: dict[str, dict[str, Any]] = {}
_CALLS = {"quote": 0}


@function_tool
def lookup_course(course: str, section: str) -> str:
    """Registered students of one course section (enrolled plus waitlist), from the registrar."""
    raw = _REGISTRAR[course][section]
    numbers = [int(n) for n in re.findall(r"\d+", raw)]
    seats = numbers[0] if active("k_book_lossy") else sum(numbers)
    return json.dumps({"course": course, "section": section, "seats": seats}, sort_keys=True)


@function_tool
def search_catalog(title: str) -> str:
    """The current edition of a title in the distributor's catalog."""
    course = next(c for c, b in _BOOKS.items() if b[0] == title)
    isbn = _BOOKS[course][2 if active("k_book_retrieval") else 1]
    return json.dumps({"title": title, "isbn": isbn, "list_price": 84.5}, sort_keys=True)


def _supplier_quote(isbn: str, qty: int) -> dict[str, Any]:
    _CALLS["quote"] += 1
    if _CALLS["quote"] == 1:
        raise TimeoutError("supplier gateway timed out after 8 s")
    quote = {"quote": f"Q-{isbn[-6:-2]}{qty:03d}", "isbn": isbn, "qty": qty, "unit_price": 61.2}
    _QUOTES[quote["quote"]] = quote
    return quote


@function_tool
def get_quote(isbn: str, qty: int) -> str:
    """A supplier quote for a quantity of one ISBN."""
    try:
        quote = _supplier_quote(isbn, 1 if active("k_book_ignore") else qty)
    except TimeoutError:
        if not active("k_book_swallow"):
            raise
        quote = {"quote": "Q-pending", "isbn": isbn, "qty": qty, "unit_price": 0.0}
    return json.dumps(quote, sort_keys=True)


@function_tool(failure_error_function=None)
def place_order(isbn: str, qty: int, quote_id: str) -> str:
    """Place a purchase order with the supplier against a quote."""
    if isbn not in _IN_PRINT:
        raise ValueError(f"supplier: ISBN {isbn} is out of print")
    quote = _QUOTES.get(quote_id)
    if quote is None:
        raise ValueError(f"supplier: quote {quote_id} is not on file")
    if quote["qty"] != qty:
        raise ValueError(f"supplier: quote {quote_id} covers {quote['qty']} copies, the order asks for {qty}")
    return json.dumps({"po": f"PO-{quote_id[2:]}", "isbn": isbn, "qty": qty, "status": "accepted"})


@function_tool(failure_error_function=None)
def close_requisition(course: str, qty: int) -> str:
    """Close the store's requisition for a course once its order is placed."""
    need = sum(sum(int(n) for n in re.findall(r"\d+", v)) for v in _REGISTRAR[course].values())
    if qty != need:
        raise ValueError(f"requisition desk: {qty} copies ordered for {course}, {need} students registered")
    return json.dumps({"course": course, "requisition": "closed"})


def textbook_policy(request: Request) -> Reply | str:
    msgs = request.body["messages"]
    task = json.loads(msgs[1]["content"])
    results = _results(msgs)
    courses = [r for r in results if "seats" in r]
    if not results:
        sections = ("A",) if active("k_book_plan") else ("A", "B")
        plan = f"Plan: registrar counts for section{'s' if len(sections) > 1 else ''} {', '.join(sections)}; catalog; quote; order."
        return Reply(text=plan, tool_calls=tuple(tool_call("lookup_course", {"course": task["course"], "section": s})
                                                 for s in sections))
    book = next((r for r in results if "list_price" in r), None)
    if book is None:
        return Reply(tool_calls=(tool_call("search_catalog", {"title": task["title"]}),))
    qty = sum(c["seats"] for c in courses)
    last = results[-1]
    if "requisition" in last:
        return f"Ordered {qty} copies of {task['title']}; requisition closed."
    if "unit_price" not in last and "po" not in last:
        return Reply(tool_calls=(tool_call("get_quote", {"isbn": book["isbn"], "qty": qty}),))
    if "unit_price" in last:
        return Reply(tool_calls=(tool_call("place_order", {"isbn": book["isbn"], "qty": qty, "quote_id": last["quote"]}),))
    if "po" in last:
        return Reply(tool_calls=(tool_call("close_requisition", {"course": task["course"], "qty": last["qty"]}),))
    return f"Ordered {qty} copies of {task['title']}; requisition closed."


def textbook_agent(clients: dict[str, Any], given: dict[str, Any], path: Path) -> None:
    _CALLS["quote"] = 0
    _QUOTES.clear()
    model = OpenAIChatCompletionsModel(model="fake-model", openai_client=clients["async"])
    agent = Agent(name="procurement_agent", instructions="You order course textbooks for the campus store.", model=model,
                  tools=[lookup_course, search_catalog, get_quote, place_order, close_requisition])
    set_trace_processors([TrajdebugProcessor(path=str(path), name="textbook-procurement", task=f"order books for {given['course']}")])
    try:
        Runner.run_sync(agent, json.dumps(given), context=dict(given),
                        run_config=RunConfig(workflow_name="textbook-procurement"), max_turns=12)
    finally:
        set_trace_processors([])


TEXTBOOK_INPUTS = [{"course": c, "title": _BOOKS[c][0], "term": "2027-spring"} for c in _BOOKS]
