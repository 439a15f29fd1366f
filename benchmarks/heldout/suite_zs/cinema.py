"""Cinema projection booking (recording SDK): plan a film's shows across screens and book them with the projection API."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import trajdebug
from openai import OpenAI

from .common import Case, ask, json_policy
from .kit import active

AGENT = "cinema-projection-booking"
ROUTE = "sdk"
DOMAIN = "cinema projection booking"
SHAPE = "input, film lookup, runtime parse, per-screen diary (retried) + model slot plan, state, ingest calc, KDM, model draft, booking API"

FILMS = {
    "F-2231": {"title": "Northern Lights Run", "runtime": "2h 08m", "certificate": "15", "dcp_gb": 182.0, "trailers_min": 14},
    "F-1187": {"title": "The Paper Orchard", "runtime": "1h 47m", "certificate": "PG", "dcp_gb": 146.0, "trailers_min": 12},
    "F-3090": {"title": "Saltwater Verdict", "runtime": "2h 21m", "certificate": "12A", "dcp_gb": 205.0, "trailers_min": 15},
    "F-0412": {"title": "Glasshouse Summer", "runtime": "1h 39m", "certificate": "U", "dcp_gb": 120.0, "trailers_min": 10},
}
SCREENS = {
    "S1": {"seats": 240, "opens": "10:00", "busy_until": "10:00", "ingest_mbit_s": 400},
    "S2": {"seats": 96, "opens": "10:00", "busy_until": "13:30", "ingest_mbit_s": 250},
    "S3": {"seats": 148, "opens": "10:00", "busy_until": "11:45", "ingest_mbit_s": 400},
    "S4": {"seats": 60, "opens": "10:00", "busy_until": "12:15", "ingest_mbit_s": 250},
}
CLEAN_MIN = 15
INPUTS = {
    "A": {"request": "BK-5012", "film": "F-2231", "date": "2026-12-12", "screens": ["S1", "S2", "S3"], "shows": 2},
    "B": {"request": "BK-5013", "film": "F-3090", "date": "2026-12-19", "screens": ["S3", "S1", "S4"], "shows": 2},
}
REFS = [
    {"request": "BK-4990", "film": "F-1187", "date": "2026-12-05", "screens": ["S2", "S4", "S1"], "shows": 2},
    {"request": "BK-4991", "film": "F-0412", "date": "2026-12-06", "screens": ["S4", "S3", "S2"], "shows": 3},
    {"request": "BK-4995", "film": "F-2231", "date": "2026-12-11", "screens": ["S3", "S4", "S2"], "shows": 2},
    {"request": "BK-4999", "film": "F-3090", "date": "2026-12-13", "screens": ["S1", "S3", "S2"], "shows": 2},
]
CASES = [
    Case("zs_cinema_1", "cin.runtime", "lossy_parsing", "A", "parse_runtime", 1, "parse", "book_projection", 1,
         "The runtime parser keeps only the hours of '2h 08m', so every show slot is planned 8 minutes short."),
    Case("zs_cinema_2", "cin.ingest", "unit_error", "B", "compute_ingest", 1, "other", "book_projection", 1,
         "Ingest time divides gigabytes by megabits per second without the factor of eight, scheduling ingest too late."),
    Case("zs_cinema_3", "cin.seats", "bad_memory_write", "A", "remember_plan", 1, "state", "book_projection", 1,
         "The plan written to run state gives every screen the seat count of the first screen."),
    Case("zs_cinema_4", "cin.cert", "hallucinated_value", "B", "draft_booking", 1, "llm", "book_projection", 1,
         "The model's booking draft states a certificate that the film record does not hold."),
    Case("zs_cinema_5", "cin.kdm", "stale_data", "A", "fetch_kdm", 1, "tool", "load_kdm", 1,
         "The key service answers from a cached key of an earlier engagement whose validity ends before the show date."),
]


def _hm(t: str) -> int:
    h, m = t.split(":")
    return int(h) * 60 + int(m)


def _fmt(mins: int) -> str:
    return f"{mins // 60:02d}:{mins % 60:02d}"


def _plan_screen(p: dict) -> dict:
    start = _hm(p["free_from"])
    starts = []
    for _ in range(p["shows"]):
        starts.append(_fmt(start))
        start += p["slot_min"] + CLEAN_MIN
    return {"screen": p["screen"], "starts": starts}


def _draft(p: dict) -> dict:
    cert = p["film"]["certificate"]
    if active("cin.cert"):
        cert = "12A" if cert != "12A" else "15"
    return {"film_id": p["film"]["film_id"], "certificate": cert, "date": p["date"],
            "shows": p["shows"], "kdm": p["kdm"]["key_id"]}


policy = json_policy({"plan_screen": _plan_screen, "draft_booking": _draft})
_client: Any = None
_diary_calls = {"n": 0}


@trajdebug.step(kind="input")
def read_request(req: dict) -> dict:
    return dict(req)


@trajdebug.step(kind="tool")
def lookup_film(film_id: str) -> dict:
    return {"film_id": film_id, **FILMS[film_id]}


@trajdebug.step(kind="parse")
def parse_runtime(film: dict) -> dict:
    text = film["runtime"]
    h = int(re.search(r"(\d+)h", text).group(1))
    m = int(re.search(r"(\d+)m", text).group(1))
    minutes = h * 60 if active("cin.runtime") else h * 60 + m
    return {"feature_min": minutes, "slot_min": minutes + film["trailers_min"]}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def get_screen_diary(screen: str, date: str) -> dict:
    _diary_calls["n"] += 1
    if screen == "S2" and _diary_calls["n"] % 2 == 1:
        raise ConnectionError("diary service 503: upstream busy, retry")
    s = SCREENS[screen]
    return {"screen": screen, "date": date, "seats": s["seats"], "free_from": s["busy_until"], "ingest_mbit_s": s["ingest_mbit_s"]}


@trajdebug.step(kind="tool")
def check_projector(screen: str) -> dict:
    return {"screen": screen, "lamp_hours": 1200 + 97 * int(screen[1:]), "status": "ready", "sound": "7.1"}


@trajdebug.step(kind="llm")
def plan_screen(diary: dict, timing: dict, shows: int) -> dict:
    return ask(_client, AGENT, "plan_screen", {"screen": diary["screen"], "free_from": diary["free_from"],
                                               "slot_min": timing["slot_min"], "shows": shows})


@trajdebug.step(kind="state")
def remember_plan(plans: list, diaries: list) -> dict:
    first = diaries[0]["seats"]
    plan = {}
    for p, d in zip(plans, diaries):
        plan[p["screen"]] = {"starts": p["starts"], "seats": first if active("cin.seats") else d["seats"]}
    trajdebug.current_run().state["plan"] = plan
    return plan


@trajdebug.step(kind="other")
def compute_ingest(film: dict, diaries: list, plan: dict, draft: dict) -> dict:
    out = {}
    for d in diaries:
        rate = d["ingest_mbit_s"]
        minutes = film["dcp_gb"] * 1000 / rate / 60 if active("cin.ingest") else film["dcp_gb"] * 8000 / rate / 60
        first = _hm(plan[d["screen"]]["starts"][0])
        out[d["screen"]] = {"start": _fmt(first - int(minutes) - 20), "minutes": round(minutes, 1)}
    return {**draft, "ingest": out}


@trajdebug.step(kind="tool")
def fetch_kdm(film_id: str, date: str) -> dict:
    if active("cin.kdm"):
        return {"key_id": f"KDM-{film_id}-0931", "valid_from": "2026-11-20", "valid_until": "2026-12-01"}
    return {"key_id": f"KDM-{film_id}-1204", "valid_from": "2026-12-01", "valid_until": "2027-01-15"}


@trajdebug.step(kind="tool")
def load_kdm(kdm: dict, date: str, screens: list) -> dict:
    if not (kdm["valid_from"] <= date <= kdm["valid_until"]):
        raise RuntimeError(f"projection server 400: key {kdm['key_id']} is valid {kdm['valid_from']} to "
                           f"{kdm['valid_until']}, not on {date}")
    return {"loaded": kdm["key_id"], "screens": screens}


@trajdebug.step(kind="llm")
def draft_booking(film: dict, date: str, plan: dict, kdm: dict) -> dict:
    shows = [{"screen": sc, "start": st, "seats": v["seats"]} for sc, v in plan.items() for st in v["starts"]]
    return ask(_client, AGENT, "draft_booking", {"film": film, "date": date, "shows": shows, "kdm": kdm})


@trajdebug.step(kind="tool")
def book_projection(draft: dict) -> dict:
    film = FILMS[draft["film_id"]]
    h, m = re.findall(r"\d+", film["runtime"])
    length = int(h) * 60 + int(m) + film["trailers_min"]
    if draft["certificate"] != film["certificate"]:
        raise RuntimeError(f"HTTP 422 {{\"error\": \"certificate {draft['certificate']} does not match the "
                           f"classification {film['certificate']} on record for {draft['film_id']}\"}}")
    if not ("2026-12-01" <= draft["date"] <= "2027-01-15") or draft["kdm"].endswith("0931"):
        raise RuntimeError(f"HTTP 409 {{\"error\": \"key {draft['kdm']} is not valid on {draft['date']}\"}}")
    by_screen: dict = {}
    for show in draft["shows"]:
        if show["seats"] != SCREENS[show["screen"]]["seats"]:
            raise RuntimeError(f"HTTP 422 {{\"error\": \"screen {show['screen']} has {SCREENS[show['screen']]['seats']} "
                               f"seats, show at {show['start']} offers {show['seats']}\"}}")
        by_screen.setdefault(show["screen"], []).append(_hm(show["start"]))
    for sc, starts in by_screen.items():
        for a, b in zip(starts, starts[1:]):
            if a + length + CLEAN_MIN > b:
                raise RuntimeError(f"HTTP 409 {{\"error\": \"show at {_fmt(b)} on {sc} starts before the {_fmt(a)} "
                                   f"show has ended and the screen is cleaned ({_fmt(a + length)})\"}}")
        need = film["dcp_gb"] * 8000 / SCREENS[sc]["ingest_mbit_s"] / 60
        ing = draft["ingest"][sc]
        if _hm(ing["start"]) + need > starts[0]:
            raise RuntimeError(f"HTTP 409 {{\"error\": \"ingest on {sc} from {ing['start']} cannot finish "
                               f"{film['dcp_gb']} GB before the first show at {_fmt(starts[0])}\"}}")
    return {"status": "booked", "reference": f"PRJ-{draft['film_id']}-{draft['date']}"}


def record(inp: dict, dest: Path, server: Any) -> None:
    global _client
    _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _diary_calls["n"] = 0
    try:
        with trajdebug.run(AGENT, path=str(dest), task=f"book projection of {inp['film']} on {inp['date']}"):
            req = read_request(inp)
            film = lookup_film(req["film"])
            timing = parse_runtime(film)
            diaries, plans = [], []
            for screen in req["screens"]:
                diary = get_screen_diary(screen, req["date"])
                diaries.append(diary)
                check_projector(screen)
                plans.append(plan_screen(diary, timing, req["shows"]))
            plan = remember_plan(plans, diaries)
            kdm = fetch_kdm(film["film_id"], req["date"])
            load_kdm(kdm, req["date"], req["screens"])
            draft = draft_booking(film, req["date"], plan, kdm)
            booking = compute_ingest(film, diaries, plan, draft)
            book_projection(booking)
    except RuntimeError:
        pass
