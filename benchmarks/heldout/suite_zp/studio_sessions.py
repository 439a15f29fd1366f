"""Recording studio: turns a band's request into day-by-day sessions with rooms and engineers, prices it
from the rate card and books it in the studio calendar (recording SDK)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import trajdebug
from openai import OpenAI

from .common import ApiError, Case, chat_json, last_user_json
from .kit import active

NAME = "studio-booker"
ROUTE = "sdk"
DOMAIN = "recording studio sessions"
SHAPE = "context -> estimate -> day split -> rate card -> per day: room check (retry), rota -> session-planner sub-agent (per song slot + book) -> price -> per day engineer -> book"


def _songs(*rows: tuple[str, float, str]) -> list[dict]:
    return [{"title": t, "hours": h, "needs": n} for t, h, n in rows]


INPUTS: dict[str, dict[str, Any]] = {
    "lantern": {"request_id": "RS-881", "band": "The Lantern Keepers", "start": "2027-03-12", "days": 2, "max_day_hours": 8.0,
                "songs": _songs(("Harbour Lights", 2.5, "drums"), ("Low Tide", 2.5, "piano"), ("Tin Roof", 2.5, "drums"),
                                ("Paper Moon Waltz", 2.5, "piano"))},
    "okapi": {"request_id": "RS-887", "band": "Okapi Parade", "start": "2027-03-15", "days": 2, "max_day_hours": 6.0,
              "songs": _songs(("Savannah Bus", 3.0, "drums"), ("Slow Giraffe", 2.0, "vocals"), ("Dust", 3.0, "drums"),
                              ("Last Stop", 2.0, "vocals"))},
    "reeds": {"request_id": "RS-890", "band": "Reed & Rail", "start": "2027-03-16", "days": 1, "max_day_hours": 8.0,
              "songs": _songs(("Junction", 3.0, "vocals"), ("Signal Box", 2.0, "piano"))},
    "moth": {"request_id": "RS-893", "band": "Moth Choir", "start": "2027-03-19", "days": 2, "max_day_hours": 8.0,
             "songs": _songs(("Lamp", 4.0, "vocals"), ("Wing", 3.0, "piano"), ("Night Bus", 4.0, "drums"))},
    "quarry": {"request_id": "RS-896", "band": "Granite Hum", "start": "2027-03-22", "days": 3, "max_day_hours": 6.0,
               "songs": _songs(("Blast", 3.0, "drums"), ("Chisel", 3.0, "drums"), ("Dust Road", 2.0, "vocals"),
                               ("Cairn", 3.0, "piano"))},
    "velvet": {"request_id": "RS-899", "band": "Velvet Static", "start": "2027-03-25", "days": 1, "max_day_hours": 8.0,
               "songs": _songs(("Hiss", 2.0, "vocals"), ("Crackle", 2.0, "drums"), ("Hum", 2.0, "piano"))},
}
MAIN = ("lantern", "okapi")
REFS = ("reeds", "moth", "quarry", "velvet")

CASES = [
    Case("rss-1", "off_by_one", "okapi", ("split_into_days", 1), ("book_sessions", 1),
         "The day split stops one day short, so every song lands on the first day and it overruns the studio day."),
    Case("rss-2", "swallowed_error", "lantern", ("fetch_engineer_rota", 2), ("book_sessions", 1),
         "A timeout from the rota service is caught and read as an empty rota, so the second day books without an engineer."),
    Case("rss-3", "context_pollution", "okapi", ("build_context", 1), ("book_sessions", 1),
         "The estimator's context keeps the previous band's thread, so its song list adds their tracks to this booking."),
    Case("rss-4", "truncated_result", "lantern", ("fetch_rate_card", 1), ("book_sessions", 1),
         "The rate card comes back cut to its first page, without the weekend row, so the Saturday is priced at the weekday rate."),
    Case("rss-5", "hallucinated_value", "lantern", ("assign_engineer", 2), ("book_sessions", 1),
         "For the last day the engineer picker names an engineer who is not on that day's rota."),
]

RATE_CARD = [
    {"code": "WKD", "label": "weekday studio hour", "gbp": 55.0},
    {"code": "EVE", "label": "evening studio hour", "gbp": 70.0},
    {"code": "WKE", "label": "weekend studio hour", "gbp": 75.0},
    {"code": "ENG", "label": "engineer hour", "gbp": 30.0},
]
ROTA = {"Mon": ["Priya Okafor", "Tom Reyes"], "Tue": ["Tom Reyes"], "Wed": ["Priya Okafor"], "Thu": ["Dee Marsh", "Tom Reyes"],
        "Fri": ["Dee Marsh"], "Sat": ["Sol Brandt"], "Sun": ["Sol Brandt"]}
PREVIOUS_THREAD = [
    {"from": "RS-874 Brass Foundry", "songs": [{"title": "Copper Kettle", "hours": 3.0, "needs": "drums"}]},
]
_memory: list[dict] = []


def policy(req: Any) -> str:
    p = last_user_json(req.body)
    task = p.get("task")
    if task == "estimate":
        songs = [dict(s) for s in p["request"]["songs"]]
        for note in p.get("thread", []):
            songs += [dict(s) for s in note.get("songs", [])]
        return json.dumps({"songs": songs, "total_hours": sum(s["hours"] for s in songs)})
    if task == "slot_song":
        for day in p["days"]:
            if day["free_hours"] >= p["song"]["hours"]:
                room = "Live Room" if p["song"]["needs"] == "drums" else "Studio B"
                return json.dumps({"date": day["date"], "room": room})
        return json.dumps({"date": p["days"][-1]["date"], "room": "Studio B"})
    if task == "engineer":
        if active("rss-5") and p["day"] == p["of"]:
            return json.dumps({"date": p["date"], "engineer": "Mara Quist"})
        return json.dumps({"date": p["date"], "engineer": p["rota"][0] if p["rota"] else None})
    return "{}"


@trajdebug.step(kind="input")
def read_request(req: dict) -> dict:
    return json.loads(json.dumps(req))


@trajdebug.step(kind="state")
def build_context(req: dict) -> dict:
    if not active("rss-3"):
        _memory.clear()  # a new request starts a new estimator thread
    else:
        _memory[:] = PREVIOUS_THREAD
    context = {"task": "estimate", "request": {"request_id": req["request_id"], "songs": req["songs"]}, "thread": list(_memory)}
    trajdebug.current_run().state["estimator_thread"] = context["thread"]
    return context


@trajdebug.step(kind="llm")
def estimate_hours(client: OpenAI, context: dict) -> dict:
    _, out = chat_json(client, "You estimate studio time for recording sessions.", context)
    return out


@trajdebug.step(kind="other")
def split_into_days(req: dict) -> list[str]:
    start = dt.date.fromisoformat(req["start"])
    n = req["days"] - 1 if active("rss-1") else req["days"]
    return [(start + dt.timedelta(days=i)).isoformat() for i in range(n)]


@trajdebug.step(kind="tool")
def fetch_rate_card(page_size: int = 2) -> list[dict]:
    rows = [dict(r) for r in RATE_CARD]
    if active("rss-4"):
        return rows[:page_size]  # the next page link is not followed
    return rows


_calls = {"room": 0}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def check_room(date: str, max_hours: float) -> dict:
    _calls["room"] += 1
    if _calls["room"] == 1:
        raise ConnectionError("calendar service: 502 Bad Gateway")
    return {"date": date, "rooms": ["Live Room", "Studio B"], "free_hours": max_hours}


def _weekday(date: str) -> str:
    return dt.date.fromisoformat(date).strftime("%a")


@trajdebug.step(kind="tool")
def fetch_engineer_rota(date: str, index: int) -> list[str]:
    try:
        if active("rss-2") and index == 1:
            raise TimeoutError("rota service did not answer within 5 s")
        return list(ROTA[_weekday(date)])
    except TimeoutError:
        return []


@trajdebug.step(kind="llm")
def slot_song(client: OpenAI, song: dict, days: list[dict]) -> dict:
    _, out = chat_json(client, "You slot songs into studio days.", {"task": "slot_song", "song": song, "days": days})
    return out


@trajdebug.step(kind="state")
def book_slot(song: dict, slot: dict) -> dict:
    state = trajdebug.current_run().state
    sessions = state.setdefault(f"day:{slot['date']}", [])
    sessions.append({"title": song["title"], "hours": song["hours"], "room": slot["room"]})
    return {"date": slot["date"], "booked": len(sessions)}


@trajdebug.step(kind="agent")
def session_planner(client: OpenAI, songs: list[dict], days: list[dict]) -> list[dict]:
    free = [dict(d) for d in days]
    out = []
    for song in songs:
        slot = slot_song(client, song, free)
        book_slot(song, slot)
        for d in free:
            if d["date"] == slot["date"]:
                d["free_hours"] -= song["hours"]
        out.append({"title": song["title"], **slot})
    return out


@trajdebug.step(kind="llm")
def assign_engineer(client: OpenAI, date: str, rota: list[str], day: int, of: int) -> dict:
    _, out = chat_json(client, "You assign studio engineers.", {"task": "engineer", "date": date, "rota": rota, "day": day, "of": of})
    return out


@trajdebug.step(kind="other")
def price_sessions(days: list[str], card: list[dict]) -> dict:
    state = trajdebug.current_run().state
    rates = {r["code"]: r["gbp"] for r in card}
    total = 0.0
    lines = []
    for date in days:
        hours = sum(s["hours"] for s in state.get(f"day:{date}", []))
        code = "WKE" if _weekday(date) in ("Sat", "Sun") else "WKD"
        rate = rates.get(code, rates["WKD"])
        eng = rates.get("ENG", 30.0) * hours
        lines.append({"date": date, "hours": hours, "rate": rate, "engineer_cost": eng})
        total += hours * rate + eng
    return {"lines": lines, "total_gbp": round(total, 2)}


@trajdebug.step(kind="tool")
def book_sessions(req: dict, days: list[str], quote: dict, engineers: list[dict]) -> dict:
    state = trajdebug.current_run().state
    titles = {s["title"] for s in req["songs"]}
    for date in days:
        booked = state.get(f"day:{date}", [])
        for s in booked:
            if s["title"] not in titles:
                raise ApiError(422, {"error": "unknown_track", "detail": f"session track '{s['title']}' is not on request {req['request_id']}'s track list"})
        hours = sum(s["hours"] for s in booked)
        if hours > req["max_day_hours"]:
            raise ApiError(422, {"error": "day_overrun", "detail": f"{date} is booked for {hours:.1f} h; a studio day is at most {req['max_day_hours']:.1f} h"})
    for eng in engineers:
        if eng["engineer"] is None:
            raise ApiError(422, {"error": "no_engineer", "detail": f"sessions on {eng['date']} have no engineer assigned"})
        if eng["engineer"] not in ROTA[_weekday(eng["date"])]:
            raise ApiError(409, {"error": "engineer_unavailable", "detail": f"{eng['engineer']} is not rostered on {eng['date']}"})
    rates = {r["code"]: r["gbp"] for r in RATE_CARD}
    expect = 0.0
    for date in days:
        hours = sum(s["hours"] for s in state.get(f"day:{date}", []))
        code = "WKE" if _weekday(date) in ("Sat", "Sun") else "WKD"
        expect += hours * (rates[code] + rates["ENG"])
    if abs(expect - quote["total_gbp"]) > 0.01:
        raise ApiError(422, {"error": "quote_mismatch", "detail": f"quoted {quote['total_gbp']:.2f} GBP; the rate card prices this booking at {expect:.2f} GBP"})
    return {"status": 201, "booking": f"BK-{req['request_id']}", "total_gbp": quote["total_gbp"]}


def record(inp_id: str, out: Path, base_url: str) -> None:
    client = OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    _calls["room"] = 0
    try:
        with trajdebug.run(NAME, task=f"book studio sessions for {INPUTS[inp_id]['request_id']}", path=str(out)):
            req = read_request(INPUTS[inp_id])
            context = build_context(req)
            estimate = estimate_hours(client, context)
            days = split_into_days(req)
            card = fetch_rate_card()
            free, rotas = [], {}
            for i, date in enumerate(days):
                room = check_room(date, req["max_day_hours"])
                free.append({"date": date, "free_hours": room["free_hours"]})
                rotas[date] = fetch_engineer_rota(date, i)
            session_planner(client, estimate["songs"], free)
            quote = price_sessions(days, card)
            engineers = [assign_engineer(client, date, rotas[date], i + 1, len(days)) for i, date in enumerate(days)]
            book_sessions(req, days, quote, engineers)
    except ApiError:
        pass
