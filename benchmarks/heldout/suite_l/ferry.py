"""Ferry timetabler (recording SDK): plans a day's or a week's sailings of one vessel on one route.

Vessel profile (a flaky registry, with a cached fallback), berth windows, crossing time, a model that
plans the departures, a tide check per sailing (a long loop on weekly plans), a passenger notice drafted
and reviewed by the model, the agent's own draft check, then the operator's timetable API.
"""

from __future__ import annotations

import bisect
import json
import math
from pathlib import Path
from typing import Any

from benchmarks.heldout.suite_l.kit import Case, active, openai_client

import trajdebug


AGENT = "ferry-timetabler"
ROUTE = "sdk"
DOMAIN = "ferry timetabling"

FLEET = {
    "MV Loch Frisa": {"speed_knots": 12.0, "draft_m": 1.5, "routes": ["Oban-Craignure", "Oban-Lismore"]},
    "MV Coruisk": {"speed_knots": 14.0, "draft_m": 1.2, "routes": ["Mallaig-Armadale", "Oban-Craignure"]},
    "MV Lochinvar": {"speed_knots": 10.0, "draft_m": 1.1, "routes": ["Tarbert-Portavadie", "Oban-Lismore"]},
}
ROUTES = {
    "Oban-Craignure": {"distance_km": 17.6, "port": "Oban"},
    "Oban-Lismore": {"distance_km": 13.0, "port": "Oban"},
    "Mallaig-Armadale": {"distance_km": 9.3, "port": "Mallaig"},
    "Tarbert-Portavadie": {"distance_km": 8.1, "port": "Tarbert"},
}
BERTHS = {"Oban": ("06:30", "21:00"), "Mallaig": ("06:45", "20:30"), "Tarbert": ("07:15", "21:30")}
LAST_SEASON = {"Oban": ("05:45", "22:30"), "Mallaig": ("06:00", "21:30"), "Tarbert": ("06:30", "22:00")}
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
TURNAROUND = 20
CLEARANCE_M = 0.5


def _hm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _mins(text: str) -> int:
    h, m = text.split(":")
    return int(h) * 60 + int(m)


def _tide_table(day: int) -> list[dict[str, Any]]:
    """Hourly predictions whose minutes drift day by day, as a harbour's published table does."""
    rows = []
    for hour in range(5, 23):
        minute = (day * 13 + hour * 7) % 60 or 5
        if (day, hour) == (3, 13):
            minute = 0
        # the slipway's charted depth: never below 2.1 m in daylight, except Thursday's low water at noon
        height = max(round(2.4 + 1.1 * math.sin((hour + day * 0.8) / 2.0), 1), 2.1)
        if (day, hour) == (3, 12):
            height = 1.1
        rows.append({"time": f"{hour:02d}:{minute:02d}", "height_m": height})
    return rows


# -- tools ------------------------------------------------------------------------------------


@trajdebug.step(kind="input")
def read_request(text: str) -> dict[str, Any]:
    fields = dict(part.split("=", 1) for part in text.split(";"))
    return {
        "route": fields["route"],
        "vessel": fields["vessel"],
        "days": fields["days"].split(","),
        "per_day": int(fields["per_day"]),
        "registry": fields.get("registry", "live"),
    }


@trajdebug.step(kind="tool")
def fetch_vessel_profile(vessel: str, registry: str) -> dict[str, Any]:
    if registry == "slow":
        raise TimeoutError("vessel registry did not answer within 5.0 s (GET /fleet/vessels)")
    return {
        "vessel": vessel,
        **{k: v for k, v in FLEET[vessel].items() if k != "routes"},
        "source": "registry",
    }


@trajdebug.step(kind="tool")
def load_cached_profile(vessel: str) -> dict[str, Any]:
    cache = {name.upper(): {"vessel": name, **v} for name, v in FLEET.items()}
    key = vessel.title() if active("ferry.cache_key") else vessel.upper()
    try:
        entry = cache[key]
    except KeyError:
        entry = {"vessel": vessel, "speed_knots": 8.0, "draft_m": 1.5}
    return {k: v for k, v in entry.items() if k != "routes"} | {"source": "profile cache"}


@trajdebug.step(kind="tool")
def fetch_berth_windows(port: str) -> dict[str, Any]:
    opens, closes = LAST_SEASON[port] if active("ferry.berth_cache") else BERTHS[port]
    return {"port": port, "opens": opens, "closes": closes}


@trajdebug.step(kind="tool")
def fetch_route(route: str) -> dict[str, Any]:
    return {"route": route, **ROUTES[route]}


@trajdebug.step(kind="other")
def compute_crossing_minutes(route: dict[str, Any], profile: dict[str, Any]) -> dict[str, Any]:
    km = route["distance_km"]
    nautical = km if active("ferry.km_as_nm") else km / 1.852
    minutes = 5 * math.ceil(nautical / profile["speed_knots"] * 60 / 5)
    return {"route": route["route"], "crossing_minutes": minutes, "turnaround_minutes": TURNAROUND}


@trajdebug.step(kind="tool")
def fetch_tide_table(port: str, day: str) -> dict[str, Any]:
    return {"port": port, "day": day, "predictions": _tide_table(DAYS.index(day))}


@trajdebug.step(kind="other")
def select_tide_slot(departure: str, table: dict[str, Any]) -> dict[str, Any]:
    times = [_mins(r["time"]) for r in table["predictions"]]
    pick = bisect.bisect_left if active("ferry.slot_edge") else bisect.bisect_right
    row = table["predictions"][max(pick(times, _mins(departure)) - 1, 0)]
    return {"day": table["day"], "departure": departure, "slot": row["time"], "height_m": row["height_m"]}


@trajdebug.step(kind="state")
def record_sailing(day: str, departure: str, tide: dict[str, Any], vessel: str) -> None:
    timetable = trajdebug.current_run().state.setdefault("timetable", [])
    timetable.append({"day": day, "departure": departure, "tide_m": tide["height_m"], "vessel": vessel})
    trajdebug.current_run().state["timetable"] = timetable


@trajdebug.step(kind="condition")
def check_draft(profile: dict[str, Any]) -> dict[str, Any]:
    timetable = trajdebug.current_run().state["timetable"]
    need = profile["draft_m"] + CLEARANCE_M
    for n, sailing in enumerate(timetable, 1):
        if sailing["tide_m"] < need:
            raise ValueError(
                f"sailing {n} ({sailing['day']} {sailing['departure']}): predicted tide {sailing['tide_m']} m "
                f"is below the {need:.1f} m the vessel needs at the slipway"
            )
    return {"sailings": len(timetable), "min_tide_m": min(s["tide_m"] for s in timetable)}


@trajdebug.step(kind="tool")
def publish_timetable(
    route: str, vessel: str, departures: list[str], crossing: dict[str, Any], berth: dict[str, Any]
) -> dict[str, Any]:
    if route not in FLEET.get(vessel, {}).get("routes", []):
        raise PermissionError(
            f"timetable API 403: vessel {vessel!r} holds no passenger certificate for {route}"
        )
    actual_open, actual_close = (_mins(t) for t in BERTHS[berth["port"]])
    for dep in departures:
        if _mins(dep) < actual_open:
            raise ValueError(
                f"timetable API 422: departure {dep} is before the {berth['port']} berth opens ({_hm(actual_open)})"
            )
    back = _mins(departures[-1]) + 2 * crossing["crossing_minutes"] + crossing["turnaround_minutes"]
    if back > actual_close:
        raise ValueError(
            f"timetable API 422: last sailing {departures[-1]} returns at {_hm(back)}, after the berth closes ({_hm(actual_close)})"
        )
    return {"status": "published", "route": route, "sailings": len(departures)}


# -- the model --------------------------------------------------------------------------------

PLAN_SYS = 'You plan ferry departures. Answer JSON: {"vessel": str, "departures": ["HH:MM", ...]}.'
NOTICE_SYS = "You write the passenger notice for a new ferry timetable."
REVIEW_SYS = 'You review a passenger notice. Answer JSON: {"approved": bool, "vessel": str, "notice": str}.'


def policy(request: Any) -> str:
    messages = request.body["messages"]
    system, user = messages[0]["content"], messages[-1]["content"]
    if system == PLAN_SYS:
        brief = json.loads(user)
        first = 60 * math.ceil((_mins(brief["berth"]["opens"]) + 15) / 60)  # sailings leave on the hour
        step = 2 * (brief["crossing"]["crossing_minutes"] + brief["crossing"]["turnaround_minutes"])
        vessel = "MV Isle of Kerrera" if active("ferry.vessel_name") else brief["vessel"]
        return json.dumps(
            {"vessel": vessel, "departures": [_hm(first + i * step) for i in range(brief["per_day"])]}
        )
    if system == NOTICE_SYS:
        plan = json.loads(user)
        return (
            f"From {plan['days'][0]}, {plan['vessel']} sails {plan['route']} at "
            + ", ".join(plan["departures"])
            + "."
        )
    if system == REVIEW_SYS:
        notice = user
        vessel = notice.split(", ", 1)[1].split(" sails ", 1)[0]
        return json.dumps({"approved": True, "vessel": vessel, "notice": notice})
    return "I can only plan timetables."


_MODEL: dict[str, Any] = {}


def _ask(system: str, user: str) -> str:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    resp = _MODEL["client"].chat.completions.create(model="gpt-4o-mini", messages=messages, temperature=0)
    return resp.choices[0].message.content


@trajdebug.step(kind="llm")
def plan_departures(brief: dict[str, Any]) -> str:
    return _ask(PLAN_SYS, json.dumps(brief))


@trajdebug.step(kind="llm")
def draft_notice(plan: dict[str, Any], route: str, days: list[str]) -> str:
    return _ask(NOTICE_SYS, json.dumps({**plan, "route": route, "days": days}))


@trajdebug.step(kind="llm")
def review_notice(notice: str) -> str:
    return _ask(REVIEW_SYS, notice)


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> dict[str, Any]:
    plan = json.loads(text)
    return {"vessel": plan["vessel"], "departures": list(plan["departures"])}


@trajdebug.step(kind="parse")
def parse_review(text: str) -> dict[str, Any]:
    return json.loads(text)


# -- the agent --------------------------------------------------------------------------------


def _profile(req: dict[str, Any]) -> dict[str, Any]:
    try:
        return fetch_vessel_profile(req["vessel"], req["registry"])
    except TimeoutError:
        return load_cached_profile(req["vessel"])


def _agent(text: str) -> None:
    req = read_request(text)
    profile = _profile(req)
    route = fetch_route(req["route"])
    berth = fetch_berth_windows(route["port"])
    crossing = compute_crossing_minutes(route, profile)
    brief = {
        "vessel": req["vessel"],
        "route": req["route"],
        "per_day": req["per_day"],
        "berth": berth,
        "crossing": crossing,
    }
    plan = parse_plan(plan_departures(brief))
    with trajdebug.step("tide_check", kind="agent"):
        for day in req["days"]:
            table = fetch_tide_table(route["port"], day)
            for dep in plan["departures"]:
                tide = select_tide_slot(dep, table)
                record_sailing(day, dep, tide, plan["vessel"])
    notice = draft_notice(plan, req["route"], req["days"])
    review = parse_review(review_notice(notice))
    check_draft(profile)
    publish_timetable(req["route"], review["vessel"], plan["departures"], crossing, berth)


def record(server: Any, path: Path, inp: dict[str, Any]) -> None:
    """Record one run of the agent on ``inp`` into ``path`` (a failure is recorded, not raised)."""
    _MODEL["client"] = openai_client(server)
    server.use(policy)
    try:
        with trajdebug.run(AGENT, path=str(path), task=inp["text"]):
            _agent(inp["text"])
    except (ValueError, PermissionError):
        pass


def _req(route: str, vessel: str, days: str, per_day: int, registry: str = "live") -> dict[str, Any]:
    return {"text": f"route={route};vessel={vessel};days={days};per_day={per_day};registry={registry}"}


WEEK = ",".join(DAYS)
CASES = [
    Case(
        "ferry_01",
        "ferry.km_as_nm",
        "unit_error",
        "compute_crossing_minutes",
        '"crossing_minutes": 90',
        _req("Oban-Craignure", "MV Loch Frisa", "Sat", 5),
    ),
    Case(
        "ferry_02",
        "ferry.slot_edge",
        "off_by_one",
        "select_tide_slot",
        '"height_m": 1.1',
        _req("Oban-Lismore", "MV Loch Frisa", WEEK, 5),
    ),
    Case(
        "ferry_03",
        "ferry.berth_cache",
        "stale_data",
        "fetch_berth_windows",
        '"opens": "05:45"',
        _req("Oban-Craignure", "MV Coruisk", "Mon,Tue", 4),
    ),
    Case(
        "ferry_04",
        "ferry.vessel_name",
        "hallucinated_value",
        "plan_departures",
        "Isle of Kerrera",
        _req("Oban-Lismore", "MV Lochinvar", "Fri", 3),
    ),
    Case(
        "ferry_05",
        "ferry.cache_key",
        "swallowed_error",
        "load_cached_profile",
        '"speed_knots": 8.0',
        _req("Oban-Craignure", "MV Loch Frisa", "Sun", 5, registry="slow"),
    ),
]
REFS = [
    _req("Mallaig-Armadale", "MV Coruisk", "Mon,Wed,Fri", 5),
    _req("Tarbert-Portavadie", "MV Lochinvar", "Tue", 6, registry="slow"),
    _req("Oban-Craignure", "MV Coruisk", "Thu,Fri", 4),
    _req("Oban-Lismore", "MV Lochinvar", "Sat,Sun", 3),
]
