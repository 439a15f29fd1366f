"""Peal bookings for a church bell-ringing band (route: sdk, trajdebug's own recording API)."""
from __future__ import annotations

import json
import re

from openai import OpenAI

import trajdebug
import suitekit

NAME = "peal-bookings"
ROUTE = "sdk"
DOMAIN = "church bell-ringing band: peal bookings"
SHAPE = ("linear pipeline, ~23 steps: model extracts the request, parser, tower directory retrieval, "
         "calendar tool, method condition, availability loop over 11 ringers with one retried call, "
         "band written to run.state, duration, model-drafted letter, own validator, captain's booking tool")

ON = {"date": False, "band": False, "tower": False, "minutes": False, "calendar": False}

TOWERS = {
    "St Mary, Ely": {"tower": "St Mary, Ely", "bells": 8, "tenor_cwt": 17, "max_hours": 3.5},
    "St Mary, Ealing": {"tower": "St Mary, Ealing", "bells": 6, "tenor_cwt": 9, "max_hours": 3.0},
    "All Saints, Wing": {"tower": "All Saints, Wing", "bells": 10, "tenor_cwt": 24, "max_hours": 4.0},
    "St Giles, Ashtead": {"tower": "St Giles, Ashtead", "bells": 6, "tenor_cwt": 11, "max_hours": 3.5},
    "Holy Trinity, Hull": {"tower": "Holy Trinity, Hull", "bells": 8, "tenor_cwt": 28, "max_hours": 4.0},
    "St Peter, Wolvercote": {"tower": "St Peter, Wolvercote", "bells": 8, "tenor_cwt": 12, "max_hours": 3.5},
}
CAPTAIN_DIARY = {  # the tower captains' own diaries
    "St Mary, Ely": {"2027-04-10": ("10:00", "confirmation service")},
    "All Saints, Wing": {"2027-05-22": ("11:00", "quarter peal for the fete")},
    "St Giles, Ashtead": {},
    "Holy Trinity, Hull": {"2027-06-19": ("19:30", "organ recital")},
    "St Peter, Wolvercote": {"2027-03-13": ("14:00", "wedding")},
}
STAGES = {"Triples": 8, "Major": 8, "Minor": 6, "Doubles": 6, "Caters": 10, "Royal": 10}
ROSTER = ["Agnes Pye", "Ben Rudd", "Clara Voss", "Dorothy Hale", "Edmund Carr", "Fay Lister",
          "George Imms", "Hattie Noble", "Ivor Dunn", "June Marsh", "Ken Oakes"]
AWAY = {"Agnes Pye": {"2027-03-13"}, "Clara Voss": {"2027-04-17", "2027-06-19"}, "Ivor Dunn": {"2027-04-17"},
        "Fay Lister": {"2027-04-17", "2027-05-22"}, "Ken Oakes": {"2027-04-17", "2027-03-13"},
        "June Marsh": {"2027-04-17"}, "Hattie Noble": {"2027-06-19"}}

INPUTS = [
    "Please book a peal of Plain Bob Major at St Mary, Ely on Saturday 2027-04-10 for the bishop's visit.",
    "Could the band ring Stedman Caters at All Saints, Wing on 2027-05-22? It is the patronal festival.",
    "A peal of Cambridge Surprise Minor at St Giles, Ashtead on 2027-07-03 for the Dunn golden wedding.",
    "Grandsire Triples at Holy Trinity, Hull, 2027-06-19, to mark the 150th anniversary of the ring.",
    "Yorkshire Surprise Major at St Peter, Wolvercote on 2027-03-13 for the new vicar's licensing.",
]
INPUTS = [{"text": t} for t in INPUTS]

CASES = [
    dict(id="zp01", input=0, switch="date", fault_kind="hallucinated_value",
         root=("read_request", 1), kind="llm", failure=("check_band", 1),
         description="The model reads the peal date as 2027-04-17 although the request says 2027-04-10, so the band is gathered for a day most ringers are away."),
    dict(id="zp02", input=3, switch="band", fault_kind="off_by_one",
         root=("pick_band", 1), kind="state", failure=("check_band", 1),
         description="pick_band allocates bells with range(1, needed), one bell short, so the band stored in run.state has 7 ringers for 8 bells."),
    dict(id="zp03", input=0, switch="tower", fault_kind="wrong_retrieval",
         root=("find_tower", 1), kind="retrieval", failure=("check_band", 1),
         description="The tower directory search returns St Mary, Ealing (6 bells) for St Mary, Ely, so the ring is too small for Major."),
    dict(id="zp04", input=1, switch="minutes", fault_kind="unit_error",
         root=("estimate_duration", 1), kind="other", failure=("send_to_tower_captain", 1),
         description="estimate_duration returns the peal length in minutes under the key hours, so the booking asks for 205 hours of ringing."),
    dict(id="zp05", input=4, switch="calendar", fault_kind="swallowed_error",
         root=("check_tower_calendar", 1), kind="tool", failure=("send_to_tower_captain", 1),
         description="The tower calendar feed times out and check_tower_calendar returns an empty list of bookings instead of raising, hiding the 14:00 wedding on 2027-03-13."),
]


def policy(request):
    system = suitekit.system_of(request)
    user = suitekit.last_user(request)
    if system.startswith("Extract"):
        m = re.search(r"(Plain Bob|Stedman|Cambridge Surprise|Grandsire|Yorkshire Surprise) (\w+)", user)
        tower = next(t for t in TOWERS if t in user)
        date = re.search(r"\d{4}-\d{2}-\d{2}", user).group(0)
        if ON["date"]:
            date = "2027-04-17"
        return json.dumps({"tower": tower, "date": date, "method": f"{m.group(1)} {m.group(2)}",
                           "occasion": user.split(" for ")[-1].rstrip(".") if " for " in user else "festival"})
    if system.startswith("Write"):
        b = json.loads(user)
        return (f"Dear Tower Captain, the band would like to ring a peal of {b['method']} at {b['tower']} on "
                f"{b['date']} ({b['occasion']}), about {b['hours']} hours. Ringers: {', '.join(b['band'].values())}.")
    return "I can only help with peal bookings."


@trajdebug.step(kind="input")
def take_request(text: str) -> str:
    return text


@trajdebug.step(kind="parse")
def parse_request(content: str) -> dict:
    fields = json.loads(content)
    return {"tower": fields["tower"], "date": fields["date"], "method": fields["method"],
            "occasion": fields.get("occasion", "")}


@trajdebug.step(kind="retrieval")
def find_tower(name: str) -> dict:
    if ON["tower"]:
        name = name.replace("Ely", "Ealing")
    return dict(TOWERS[name])


def _calendar_feed(tower: str, month: str) -> list[dict]:
    diary = CAPTAIN_DIARY.get(tower, {})
    if ON["calendar"]:
        raise TimeoutError("diocesan calendar feed did not answer in 5 s")
    return [{"date": d, "time": t, "event": e} for d, (t, e) in sorted(diary.items()) if d.startswith(month)]


@trajdebug.step(kind="tool")
def check_tower_calendar(tower: str, month: str) -> list[dict]:
    try:
        return _calendar_feed(tower, month)
    except TimeoutError:
        return []


@trajdebug.step(kind="condition")
def choose_method(method: str, tower: dict) -> dict:
    stage = method.split()[-1]
    return {"method": method, "stage": stage, "bells_needed": STAGES[stage]}


_diary_calls = {"n": 0}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def ringer_availability(ringer: str, date: str) -> dict:
    if ringer == "Dorothy Hale":
        _diary_calls["n"] += 1
        if _diary_calls["n"] == 1:
            raise ConnectionError("ringers' diary service reset the connection")
    return {"ringer": ringer, "date": date, "free": date not in AWAY.get(ringer, set())}


@trajdebug.step(kind="state")
def pick_band(answers: list[dict], plan: dict) -> dict:
    free = [a["ringer"] for a in answers if a["free"]]
    needed = plan["bells_needed"]
    bells = range(1, needed) if ON["band"] else range(1, needed + 1)
    band = {str(bell): ringer for bell, ringer in zip(bells, free)}
    trajdebug.current_run().state["band"] = band
    return band


@trajdebug.step(kind="other")
def estimate_duration(tower: dict, plan: dict) -> dict:
    changes = 5040 if plan["stage"] in ("Triples", "Minor", "Doubles") else 5000
    per_minute = 30 - tower["tenor_cwt"] / 4  # heavier rings ring slower
    minutes = changes / per_minute
    hours = minutes if ON["minutes"] else minutes / 60
    return {"changes": changes, "hours": round(hours, 2)}


@trajdebug.step(kind="condition")
def check_band(tower: dict, plan: dict, fields: dict) -> dict:
    band = trajdebug.current_run().state["band"]
    if tower["bells"] < plan["bells_needed"]:
        raise ValueError(f"{tower['tower']} has {tower['bells']} bells; {plan['method']} needs {plan['bells_needed']}")
    if len(band) != plan["bells_needed"]:
        raise ValueError(f"band has {len(band)} ringers for {plan['bells_needed']} bells on {fields['date']}")
    return {"ok": True, "ringers": len(band)}


def _hours(hhmm: str) -> float:
    h, m = hhmm.split(":")
    return int(h) + int(m) / 60


def _overlaps(start: str, hours: float, event_time: str) -> bool:
    s, e = _hours(start), _hours(event_time)
    return s - 2 < e < s + hours + 0.5  # the church needs the tower quiet 2 h before an event


@trajdebug.step(kind="other")
def choose_start(fields: dict, booked: list[dict], length: dict) -> str:
    today = [b for b in booked if b["date"] == fields["date"]]
    for start in ("14:00", "09:00", "17:30"):
        if not any(_overlaps(start, length["hours"], b["time"]) for b in today):
            return start
    return "07:30"


@trajdebug.step(kind="tool")
def send_to_tower_captain(booking: dict) -> dict:
    tower = TOWERS[booking["tower"]]
    held = CAPTAIN_DIARY.get(booking["tower"], {}).get(booking["date"])
    if held and _overlaps(booking["start"], min(booking["hours"], 24), held[0]):
        raise RuntimeError(f"captain of {booking['tower']} declines: {booking['start']} on {booking['date']} "
                           f"clashes with the {held[1]} at {held[0]}")
    if booking["hours"] > tower["max_hours"]:
        raise RuntimeError(f"captain of {booking['tower']} declines: {booking['hours']} hours exceeds "
                           f"the tower's limit of {tower['max_hours']} hours")
    return {"status": "requested", "tower": booking["tower"], "date": booking["date"]}


def record(inp: dict, path: str, base_url: str) -> None:
    client = suitekit.client(base_url)
    _diary_calls["n"] = 0
    try:
        with trajdebug.run(NAME, task=inp["text"], path=path) as run:
            text = take_request(inp["text"])
            msg = suitekit.chat(client, "fake-model", "read_request", [
                {"role": "system", "content": "Extract tower, date (YYYY-MM-DD), method and occasion as JSON."},
                {"role": "user", "content": text}])
            fields = parse_request(msg["content"])
            tower = find_tower(fields["tower"])
            booked = check_tower_calendar(tower["tower"], fields["date"][:7])
            plan = choose_method(fields["method"], tower)
            answers = [ringer_availability(r, fields["date"]) for r in ROSTER]
            band = pick_band(answers, plan)
            length = estimate_duration(tower, plan)
            start = choose_start(fields, booked, length)
            letter = {"tower": tower["tower"], "date": fields["date"], "start": start, "method": plan["method"],
                      "occasion": fields["occasion"], "hours": length["hours"], "band": band}
            suitekit.chat(client, "fake-model", "draft_confirmation", [
                {"role": "system", "content": "Write a short booking letter to the tower captain."},
                {"role": "user", "content": json.dumps(letter)}])
            check_band(tower, plan, fields)
            send_to_tower_captain(letter)
    except Exception:
        pass
