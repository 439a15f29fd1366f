"""Rowing club boat allocation (otlp route): allocates boats to crews for an outing via an allocator sub-agent and posts the sheet."""
from __future__ import annotations

import json

from . import fakellm
from .kit import active
from .otlpkit import Recorder

AGENT = "rowing-boat-allocator"
ROUTE = "otlp"

BOATS = [{"name": "Dart", "seats": 1, "status": "in service"}, {"name": "Swift", "seats": 2, "status": "in service"},
         {"name": "Wren", "seats": 2, "status": "in service"}, {"name": "Hermes", "seats": 4, "status": "rigger repair"},
         {"name": "Kestrel", "seats": 4, "status": "in service"}, {"name": "Osprey", "seats": 4, "status": "in service"},
         {"name": "Athena", "seats": 8, "status": "in service"}, {"name": "Boreas", "seats": 8, "status": "in service"}]
ROSTER = {"M1": ["Ayo", "Bell", "Chen", "Dale", "Eze", "Ford", "Gray", "Hale"], "W2": ["Iris", "Jude", "Kaya", "Lena"],
          "N3": ["Mo", "Nia"], "V4": ["Ode", "Pia", "Quin", "Rue"], "J5": ["Sol"], "M6": ["Tam", "Uma"]}
AWAY = {"2026-12-19": {"Bell"}, "2026-12-05": {"Hale"}}
THIS_WEEK = "2026-12-05"
FLAGS = {"2026-12-19": "amber", "2026-12-20": "green", "2026-12-26": "amber", "2026-12-27": "green", "2027-01-02": "green"}
LAST_SHEET = {"M1": "Boreas", "W2": "Athena", "N3": "Wren"}
INPUTS = {
    "main": {"session": "SAT-AM", "date": "2026-12-19", "squad": "novice", "crews": ["W2", "M1", "N3"]},
    "ref1": {"session": "SUN-AM", "date": "2026-12-20", "squad": "senior", "crews": ["V4", "M6"]},
    "ref2": {"session": "SAT-PM", "date": "2026-12-26", "squad": "senior", "crews": ["M1", "J5", "W2"]},
    "ref3": {"session": "SUN-PM", "date": "2026-12-27", "squad": "novice", "crews": ["N3", "V4"]},
    "ref4": {"session": "SAT-AM", "date": "2027-01-02", "squad": "senior", "crews": ["W2", "V4", "J5"]},
}

FAULTS = {
    "rowing_obo": dict(kind="off_by_one", root=("count_seats", 1), failure=("submit_allocation", 1), hops=4,
                       description="count_seats counts the cox as a rowing seat, so the quad crew is given an "
                                   "eight and the sheet is refused for a seat mismatch."),
    "rowing_trunc": dict(kind="truncated_result", root=("list_boats", 1), failure=("submit_allocation", 1), hops=4,
                         description="list_boats returns only its first page of small boats, so the allocator "
                                     "gives the quad crew a double."),
    "rowing_ignore": dict(kind="tool_ignores_argument", root=("crew_roster", 2), failure=("submit_allocation", 1),
                          hops=3, description="crew_roster ignores the session date and returns this week's list "
                                              "without the reserve, so a rower who is away on the day is put in the boat."),
    "rowing_ctx": dict(kind="context_pollution", root=("build_allocation_prompt", 1), failure=("submit_allocation", 1),
                       hops=4, description="build_allocation_prompt pastes last week's sheet into the prompt, and the "
                                           "allocator gives the quad crew an eight from it."),
    "rowing_route": dict(kind="wrong_routing", root=("route_session", 1), failure=("submit_allocation", 1), hops=2,
                         description="route_session sends a novice squad on an amber flag to a standard outing, "
                                     "which the club's safety rule refuses."),
}


def policy(messages, tools):
    req = json.loads(fakellm.last_user(messages))
    need = req["seats_needed"]
    boats = req["free_boats"]
    pick = None
    for line in req.get("notes", []):
        if line.startswith(f"last sheet: {req['crew']} rowed "):
            pick = line.rsplit(" ", 1)[1]
    if pick is None:
        fits = sorted((b for b in boats if b["seats"] >= need), key=lambda b: (b["seats"], b["name"]))
        pick = fits[0]["name"] if fits else max(boats, key=lambda b: b["seats"])["name"]
    return json.dumps({"crew": req["crew"], "boat": pick, "reason": f"{need} seats"})


def run_agent(rec: Recorder, inp: dict) -> None:
    with rec.span(AGENT, "AGENT", inp) as top:
        req = rec.step("read_session", "CHAIN", lambda: dict(inp), inp)
        river = rec.tool("river_conditions", lambda date: f"flag {FLAGS[date]}; stream 1.1 m/s; 6 C", {"date": req["date"]})
        cond = rec.step("parse_conditions", "CHAIN",
                        lambda: {"flag": river.split(";")[0].split()[1], "stream_ms": 1.1}, river)

        def route():
            if cond["flag"] == "amber" and req["squad"] == "novice" and not active("rowing_route"):
                return {"outing": "coached", "launch_cover": True}
            return {"outing": "standard", "launch_cover": False}

        outing = rec.step("route_session", "CHAIN", route, {"flag": cond["flag"], "squad": req["squad"]})

        def boats(available_only, min_seats):
            out = [dict(b) for b in BOATS if b["seats"] >= min_seats]
            out = [b for b in out if b["status"] == "in service"] if available_only else out
            return {"boats": out[:3] if active("rowing_trunc") else out, "page": 1}

        fleet = rec.tool("list_boats", boats, {"available_only": True, "min_seats": 1})["boats"]
        taken: list[str] = []
        sheet = []
        for i, crew in enumerate(req["crews"], start=1):
            def roster(crew, date, i=i):
                day = THIS_WEEK if (active("rowing_ignore") and i == 2) else date
                away = AWAY.get(day, set())
                return {"crew": crew, "date": day, "rowers": [("Zed" if r in away else r) for r in ROSTER[crew]],
                        "reserves_used": sorted(away & set(ROSTER[crew]))}

            ros = rec.tool("crew_roster", roster, {"crew": crew, "date": req["date"]})

            def seats(ros=ros):
                n = len(ros["rowers"]) + (1 if active("rowing_obo") else 0)
                return {"crew": ros["crew"], "seats_needed": n}

            need = rec.step("count_seats", "CHAIN", seats, ros)
            free = [b for b in fleet if b["name"] not in taken]

            def prompt(crew=crew, need=need, free=free, i=i):
                notes = [f"squad {req['squad']}, outing {outing['outing']}"]
                if active("rowing_ctx") and i == 1:
                    notes += [f"last sheet: {c} rowed {b}" for c, b in LAST_SHEET.items()]
                return {"crew": crew, "seats_needed": need["seats_needed"], "free_boats": free, "notes": notes}

            ask = rec.step("build_allocation_prompt", "CHAIN", prompt, {"crew": crew, "need": need})
            with rec.span("boat_allocator", "AGENT", ask, agent="boat_allocator") as sub:
                text = rec.llm("allocate_boat", "You allocate one club boat to a crew.", json.dumps(ask))
                alloc = rec.step("parse_allocation", "CHAIN", lambda text=text: json.loads(text), text,
                                 agent="boat_allocator")
                sub.set_output(alloc)
            taken.append(alloc["boat"])
            sheet.append(rec.step("record_allocation", "CHAIN",
                                  lambda alloc=alloc, ros=ros: {"crew": alloc["crew"], "boat": alloc["boat"],
                                                                "rowers": ros["rowers"]},
                                  {"allocation": alloc, "roster": ros}))

        def submit(session, date, squad, outing, sheet):
            if squad == "novice" and FLAGS[date] == "amber" and outing["outing"] != "coached":
                raise RuntimeError(f"safety rule S4: novice crews on an amber flag need a coached outing with launch "
                                   f"cover (session {session})")
            seen = set()
            by_name = {b["name"]: b for b in BOATS}
            for line in sheet:
                boat = by_name[line["boat"]]
                if line["boat"] in seen:
                    raise RuntimeError(f"boat {line['boat']} allocated twice in session {session}")
                seen.add(line["boat"])
                if boat["status"] != "in service":
                    raise RuntimeError(f"boat {line['boat']} is out of service ({boat['status']})")
                away = [r for r in line["rowers"] if r in AWAY.get(date, set())]
                if away:
                    raise RuntimeError(f"rower {away[0]} is marked away on {date}")
                if boat["seats"] != len(line["rowers"]):
                    raise RuntimeError(f"crew {line['crew']} has {len(line['rowers'])} rowers, boat {line['boat']} "
                                       f"seats {boat['seats']}")
            return {"status": "posted", "session": session, "boats": len(sheet)}

        result = rec.tool("submit_allocation", submit, {"session": req["session"], "date": req["date"],
                                                        "squad": req["squad"], "outing": outing, "sheet": sheet})
        top.set_output(result)


def record(base_url: str, inp: dict, path: str) -> None:
    rec = Recorder(AGENT, AGENT, base_url)
    try:
        run_agent(rec, inp)
    except RuntimeError:
        pass
    rec.write(path)
