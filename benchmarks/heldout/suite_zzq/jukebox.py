"""Jukebox rental firm: books one hire from an enquiry (OpenAI Agents SDK route, Responses API)."""

from __future__ import annotations

import datetime as dt
import json
import re

from agents import Agent, function_tool

import kit
from _common import run_agent, tool_calls_made, tool_outputs

NAME = "spinright-jukebox-hires"
ROUTE = "openai_agents"
DOMAIN = "jukebox rental firm: hires"
SHAPE = ("hire-desk agent (Responses API): customer lookup, playlist-curator sub-agent as a tool (one library "
         "search per decade, then its playlist), rate and delivery quote (parallel), availability, create the "
         "hire, validator tool, final message")
EXT = "jsonl"

CUSTOMERS = {"ruth.b@example.org": "CU-118", "events@thegranary.example": "CU-207", "dj.lowe@example.net": "CU-311",
             "anna.k@example.com": "CU-402", "office@oakfieldcc.example": "CU-519"}
UNITS = [
    {"unit": "JB-01", "model": "Wurlitzer 1015", "booked": ["2026-07-11"]},
    {"unit": "JB-02", "model": "Wurlitzer 1015", "booked": []},
    {"unit": "JB-05", "model": "Rock-Ola Bubbler", "booked": ["2026-07-18", "2026-07-19"]},
    {"unit": "JB-06", "model": "Rock-Ola Bubbler", "booked": []},
    {"unit": "JB-09", "model": "Seeburg Select-O-Matic", "booked": []},
]
RATES = {"Wurlitzer 1015": (145.0, 300.0), "Rock-Ola Bubbler": (120.0, 250.0), "Seeburg Select-O-Matic": (110.0, 250.0)}
LIBRARY = {d: ["%s track %02d" % (d, i) for i in range(1, 41)] for d in ("1950s", "1960s", "1970s", "1980s")}

ENQUIRIES = [
    dict(ref="HR-7001", email="ruth.b@example.org", model="Wurlitzer 1015", start="2026-07-10", days=3,
         postcode="BS6 5AH", stairs=0, decades=["1950s", "1960s"], tracks=60),
    dict(ref="HR-7002", email="events@thegranary.example", model="Rock-Ola Bubbler", start="2026-07-17", days=3,
         postcode="BS1 4RB", stairs=2, decades=["1960s", "1970s"], tracks=50),
    dict(ref="HR-7003", email="dj.lowe@example.net", model="Seeburg Select-O-Matic", start="2026-07-24", days=2,
         postcode="BA2 3QT", stairs=1, decades=["1950s", "1960s", "1970s"], tracks=75),
    dict(ref="HR-7004", email="anna.k@example.com", model="Rock-Ola Bubbler", start="2026-07-18", days=2,
         postcode="BS8 1TH", stairs=0, decades=["1980s", "1970s"], tracks=60),
    dict(ref="HR-7005", email="office@oakfieldcc.example", model="Wurlitzer 1015", start="2026-07-31", days=1,
         postcode="BS16 1QY", stairs=0, decades=["1960s", "1980s"], tracks=40),
]
BY_REF = {e["ref"]: e for e in ENQUIRIES}


def _enquiry_text(e: dict) -> str:
    end = dt.date.fromisoformat(e["start"]) + dt.timedelta(days=e["days"] - 1)
    return ("Enquiry %s from %s: we would like a %s from %s to %s (delivered the first morning, collected after the "
            "last evening) at %s, %d flight(s) of stairs. Please load %d tracks from the %s." % (
                e["ref"], e["email"], e["model"], e["start"], end.isoformat(), e["postcode"], e["stairs"], e["tracks"],
                " and ".join(e["decades"])))


INPUTS = [{"ref": e["ref"], "message": _enquiry_text(e)} for e in ENQUIRIES]

C_ARGS, C_HALLU, C_IGN, C_TRUNC, C_DRIFT = "zzq-jbx-1", "zzq-jbx-2", "zzq-jbx-3", "zzq-jbx-4", "zzq-jbx-5"
CASES = [
    dict(id=C_ARGS, input=0, kind="wrong_tool_args", root=("response", 7, "llm"), failure=("validate_hire", 1),
         description="the hire-desk model asks check_availability for 1 day instead of the 3-day hire, so JB-01 "
                     "looks free although it is out on the second day"),
    dict(id=C_HALLU, input=1, kind="hallucinated_value", root=("response", 8, "llm"), failure=("validate_hire", 1),
         description="the model passes create_hire a deposit of GBP 150 that no tool gave (the rate card says "
                     "GBP 250)"),
    dict(id=C_IGN, input=3, kind="tool_ignores_argument", root=("check_availability", 1, "tool"),
         failure=("validate_hire", 1),
         description="check_availability ignores the model argument and offers the first free unit of any make, "
                     "a Wurlitzer, for a Rock-Ola Bubbler hire"),
    dict(id=C_TRUNC, input=2, kind="truncated_result", root=("music_library_search", 3, "tool"),
         failure=("validate_hire", 1),
         description="the library search for the 1970s returns only its first page of 10 tracks, and the "
                     "curator builds the playlist from it"),
    dict(id=C_DRIFT, input=4, kind="format_drift", root=("response", 5, "llm"), failure=("validate_hire", 1),
         description="the playlist curator's final answer lists the tracks on one line separated by semicolons "
                     "instead of one per line, so create_hire counts a single track"),
]

HIRES: dict = {}


@function_tool
def lookup_customer(email: str) -> dict:
    """The customer account of an e-mail address."""
    return {"email": email, "customer": CUSTOMERS[email], "account": "open"}


@function_tool
def check_availability(model: str, start: str, days: int) -> dict:
    """Free units of a jukebox model for a hire starting on `start` and lasting `days` days."""
    span = [(dt.date.fromisoformat(start) + dt.timedelta(days=i)).isoformat() for i in range(days)]
    units = UNITS if kit.on(C_IGN) else [u for u in UNITS if u["model"] == model]
    free = [u["unit"] for u in units if not set(span) & set(u["booked"])]
    return {"model": model, "start": start, "days": days, "free": free}


@function_tool
def get_hire_rate(model: str, days: int) -> dict:
    """Hire rate and security deposit of a model."""
    per_day, deposit = RATES[model]
    return {"model": model, "days": days, "hire": round(per_day * days, 2), "deposit": deposit}


@function_tool
def delivery_quote(postcode: str, stairs: int) -> dict:
    """Delivery and collection price to a postcode, with a surcharge per flight of stairs."""
    base = 45.0 + (5.0 if postcode.startswith("BA") else 0.0)
    return {"postcode": postcode, "stairs": stairs, "delivery": base + 20.0 * stairs}


@function_tool
def music_library_search(decade: str, limit: int) -> dict:
    """Tracks of a decade from the licensed library."""
    tracks = LIBRARY[decade][:limit]
    if kit.on(C_TRUNC) and decade == "1970s":
        tracks = tracks[:10]
    return {"decade": decade, "tracks": tracks}


@function_tool
def create_hire(customer: str, unit: str, start: str, days: int, hire: float, deposit: float, delivery: float,
                playlist: str) -> dict:
    """Creates the hire record. `playlist` is one track per line."""
    ref = "H-%s-%s" % (unit, start.replace("-", "")[4:])
    tracks = [t for t in playlist.splitlines() if t.strip()]
    HIRES[ref] = dict(customer=customer, unit=unit, start=start, days=days, hire=hire, deposit=deposit,
                      delivery=delivery, tracks=len(tracks))
    return {"hire": ref, "tracks": len(tracks), "total": round(hire + deposit + delivery, 2)}


def validate_hire(hire: str, enquiry: str) -> dict:
    """Checks a hire against the enquiry and the firm's rules before it is confirmed."""
    h, e = HIRES[hire], BY_REF[enquiry]
    unit = next(u for u in UNITS if u["unit"] == h["unit"])
    if unit["model"] != e["model"]:
        raise ValueError("hire %s gives unit %s, a %s; the enquiry is for a %s" % (hire, unit["unit"], unit["model"], e["model"]))
    if h["days"] != e["days"]:
        raise ValueError("hire %s runs %d day(s) from %s; the enquiry asks for %d" % (hire, h["days"], h["start"], e["days"]))
    span = [(dt.date.fromisoformat(e["start"]) + dt.timedelta(days=i)).isoformat() for i in range(e["days"])]
    clash = sorted(set(span) & set(unit["booked"]))
    if clash:
        raise ValueError("unit %s is already out on %s" % (unit["unit"], ", ".join(clash)))
    per_day, deposit = RATES[e["model"]]
    if h["deposit"] != deposit:
        raise ValueError("hire %s deposit GBP %.2f; the rate card deposit for a %s is GBP %.2f"
                         % (hire, h["deposit"], e["model"], deposit))
    if h["tracks"] != e["tracks"]:
        raise ValueError("hire %s loads %d tracks; the enquiry asks for %d" % (hire, h["tracks"], e["tracks"]))
    return {"hire": hire, "status": "ready to confirm"}


validate_hire_tool = function_tool(validate_hire, failure_error_function=None)


def _ref(request) -> str:
    text = json.dumps(request.body.get("input"))
    return re.search(r"HR-\d{4}", text).group(0)


def brain(request):
    from trajdebug.testing import Reply, tool_call

    instructions = request.body.get("instructions") or ""
    outs = tool_outputs(request)
    made = tool_calls_made(request)
    if instructions.startswith("You curate"):
        ask = json.loads(re.search(r"\{.*\}", json.dumps(request.body["input"][0]["content"]).replace('\\"', '"')).group(0))
        decades = ask["decades"]
        if len(outs) < len(decades):
            return Reply(tool_calls=(tool_call("music_library_search", {"decade": decades[len(outs)],
                                                                         "limit": 40}),))
        per = ask["tracks"] // len(decades)
        tracks = []
        for i, o in enumerate(outs):
            n = per + (ask["tracks"] - per * len(decades) if i == len(outs) - 1 else 0)
            tracks += o["tracks"][:n]
        sep = "; " if kit.on(C_DRIFT) else "\n"
        return sep.join(tracks)
    e = BY_REF[_ref(request)]
    step = len(made)
    if step == 0:
        return Reply(tool_calls=(tool_call("lookup_customer", {"email": e["email"]}),))
    if step == 1:
        return Reply(tool_calls=(tool_call("curate_playlist", {"input": json.dumps(
            {"enquiry": e["ref"], "decades": e["decades"], "tracks": e["tracks"]})}),))
    if step == 2:
        return Reply(tool_calls=(tool_call("get_hire_rate", {"model": e["model"], "days": e["days"]}),
                                 tool_call("delivery_quote", {"postcode": e["postcode"], "stairs": e["stairs"]})))
    if step == 4:
        days = 1 if kit.on(C_ARGS) else e["days"]
        return Reply(tool_calls=(tool_call("check_availability", {"model": e["model"], "start": e["start"],
                                                                  "days": days}),))
    if step == 5:
        cust, playlist, rate, deliv, avail = outs[:5]
        deposit = 150.0 if kit.on(C_HALLU) else rate["deposit"]
        return Reply(tool_calls=(tool_call("create_hire", {
            "customer": cust["customer"], "unit": avail["free"][0], "start": e["start"], "days": e["days"],
            "hire": rate["hire"], "deposit": deposit, "delivery": deliv["delivery"], "playlist": playlist}),))
    if step == 6:
        return Reply(tool_calls=(tool_call("validate_hire", {"hire": outs[5]["hire"], "enquiry": e["ref"]}),))
    return "Hire %s is ready to confirm: total GBP %.2f." % (outs[5]["hire"], outs[5]["total"])


def build():
    curator = Agent(name="playlist_curator", model="fake-model", tools=[music_library_search],
                    instructions="You curate jukebox playlists from the licensed library: search each decade asked "
                                 "for, then answer the playlist, one track per line.")
    return Agent(name="hire_desk", model="fake-model",
                 instructions="You are the hire desk of a jukebox rental firm. Look the customer up, check "
                              "availability, price the hire and delivery, have the playlist curated, create the hire "
                              "and validate it before answering.",
                 tools=[lookup_customer, check_availability, get_hire_rate, delivery_quote,
                        curator.as_tool(tool_name="curate_playlist",
                                        tool_description="Curates the playlist loaded on the jukebox."),
                        create_hire, validate_hire_tool])


def record(server, inp: dict, path: str) -> None:
    server.use(brain)
    HIRES.clear()
    run_agent(server, build(), inp["message"], path, NAME, "book jukebox hire %s" % inp["ref"])
