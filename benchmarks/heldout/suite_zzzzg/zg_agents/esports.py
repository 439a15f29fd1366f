"""esports-bracket-ops: match-day operations of a gaming venue's amateur tournaments (the OpenAI Agents SDK).

An operations request comes to the tournament director, which reads the bracket and the operators'
notes (parallel tool calls) and hands off: to the rules officer for a no-show (who records the forfeit
and hands on), or straight to the scheduler.  The scheduler reads the live check-ins and the stages'
status (parallel), plans the round, books every match on a stage in one turn (parallel calls), records
walkovers, and posts the announcement.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from .common import system_text, tool_results, user_texts


NAME = "esports-bracket-ops"
ROUTE = "openai_agents"
DOMAIN = "gaming venue: amateur esports brackets, stages and check-ins"
SHAPE = "Agents SDK: director (parallel tool calls, routing hand-off) -> rules officer -> scheduler (parallel reads, parallel bookings, walkovers, announcement)"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


MATCH_MIN = 45
GAP_MIN = 5

EVENTS = {
    "RUMBLE-14": {"name": "Pixel Den Rumble #14", "curfew": "22:00", "round": "QF", "start": "19:00",
                  "stages": {"Stage A": {"free_from": "19:00", "reserved": []},
                             "Stage B": {"free_from": "19:00", "reserved": []}},
                  "matches": [{"match_id": "QF-1", "teams": ["Ember", "Glacier"]},
                              {"match_id": "QF-2", "teams": ["Rook", "Vandal"]},
                              {"match_id": "QF-3", "teams": ["Comet", "Lynx"]},
                              {"match_id": "QF-4", "teams": ["Quartz", "Halo"]}],
                  "results": {}},
    "CLASH-3": {"name": "Campus Clash 3", "curfew": "23:00", "round": "SF", "start": "20:00",
                "stages": {"Stage A": {"free_from": "20:00", "reserved": []},
                           "Stage B": {"free_from": "20:00", "reserved": []}},
                "matches": [{"match_id": "SF-1", "from": ["QF-1", "QF-2"]}, {"match_id": "SF-2", "from": ["QF-3", "QF-4"]}],
                "results": {"QF-1": "Blaze", "QF-3": "Tundra", "QF-4": "Echo"},
                "pending": {"QF-2": ["Nova", "Orbit"]}},
    "SPARK-7": {"name": "Spark Series 7", "curfew": "23:30", "round": "SF", "start": "20:00",
                "stages": {"Stage A": {"free_from": "20:00", "reserved": []},
                           "Stage B": {"free_from": "19:00", "reserved": [["20:00", "21:00"]]}},
                "matches": [{"match_id": "SF-1", "from": ["QF-1", "QF-2"]}, {"match_id": "SF-2", "from": ["QF-3", "QF-4"]}],
                "results": {"QF-1": "Apex", "QF-2": "Mirage", "QF-3": "Sable", "QF-4": "Torque"}},
    "FGF-22": {"name": "Fighting Game Friday 22", "curfew": "23:00", "round": "R1", "start": "18:30",
               "stages": {"Stage A": {"free_from": "18:30", "reserved": []},
                          "Stage B": {"free_from": "18:30", "reserved": []}},
               "matches": [{"match_id": "R1-1", "teams": ["Ryuji", "Mara"]}, {"match_id": "R1-2", "teams": ["Dee", "Oskar"]},
                           {"match_id": "R1-3", "teams": ["Kestrel", "Iona"]}, {"match_id": "R1-4", "teams": ["Pike", "Sunny"]}],
               "results": {}},
    "SUMMIT-2": {"name": "Summit Showdown 2", "curfew": "23:00", "round": "F", "start": "19:30",
                 "stages": {"Stage A": {"free_from": "19:30", "reserved": []},
                            "Stage B": {"free_from": "18:00", "reserved": [["19:00", "22:00"]]}},
                 "matches": [{"match_id": "F-1", "from": ["SF-1", "SF-2"]}],
                 "results": {"SF-1": "Granite", "SF-2": "Wildfire"}},
}
WITHDRAWN = {"FGF-22": {"Kestrel": "12:10"}}
CACHED_CHECKINS_AT = "10:00"

NOTES = [
    {"event_id": "RUMBLE-14", "note": "Rumble #14: casters arrive 18:30; stream on Stage A."},
    {"event_id": "CLASH-3", "note": "Campus Clash 3: student IDs checked at the door."},
    {"event_id": "SPARK-7", "note": "Spark Series 7: sponsor showmatch on Stage B 20:00-21:00."},
    {"event_id": "FGF-22", "note": "Fighting Game Friday 22: bring-your-own-controller allowed."},
    {"event_id": "SUMMIT-2", "note": "Summit Showdown 2: grand final best of five."},
    {"event_id": "SPRING-CUP", "note": "Spring Cup: Stage B projector broken, play every match on Stage A."},
]

INPUTS = [
    {"request_id": "OPS-501", "event_id": "RUMBLE-14", "text": "Schedule the quarterfinals of Pixel Den Rumble #14."},
    {"request_id": "OPS-502", "event_id": "CLASH-3",
     "text": "Team Nova did not show for QF-2 of Campus Clash 3; Orbit should advance. Then schedule the semifinals."},
    {"request_id": "OPS-503", "event_id": "SPARK-7", "text": "Schedule the semifinals of Spark Series 7."},
    {"request_id": "OPS-504", "event_id": "FGF-22", "text": "Schedule round 1 of Fighting Game Friday 22."},
    {"request_id": "OPS-505", "event_id": "SUMMIT-2", "text": "Schedule the grand final of Summit Showdown 2."},
]

CASES = [
    {"id": "esports_1", "switch": "notes_scope", "input": 0, "kind": "context_pollution",
     "root": ("recall_notes", 1), "failure": ("book_station", 4),
     "description": "recall_notes returns the whole venue's notes, including the Spring Cup's 'Stage B projector "
                    "broken', so the scheduler puts all four quarterfinals on Stage A and QF-4 would end after "
                    "the 22:00 curfew."},
    {"id": "esports_2", "switch": "director_route", "input": 1, "kind": "wrong_routing",
     "root": ("response", 2), "failure": ("book_station", 1),
     "description": "the director hands the no-show report straight to the scheduler instead of the rules "
                    "officer, so no forfeit is recorded for QF-2 and booking SF-1 finds it waiting on QF-2."},
    {"id": "esports_3", "switch": "reserved_block", "input": 2, "kind": "plan_error",
     "root": ("response", 4), "failure": ("book_station", 2),
     "description": "the scheduler's plan puts SF-2 on Stage B at 20:00, inside the sponsor showmatch's "
                    "reserved block 20:00-21:00 that station_status listed, and the booking is refused."},
    {"id": "esports_4", "switch": "checkin_cache", "input": 3, "kind": "stale_data",
     "root": ("team_checkins", 1), "failure": ("book_station", 3),
     "description": "team_checkins answers the 10:00 cached list, which still shows Kestrel checked in; R1-3 "
                    "is booked instead of recorded as a walkover, and the live registration says Kestrel "
                    "withdrew at 12:10."},
    {"id": "esports_5", "switch": "clock_format", "input": 4, "kind": "format_drift",
     "root": ("station_status", 1), "failure": ("book_station", 1),
     "description": "station_status answers Stage A's free_from as '7:30 PM' instead of '19:30'; the scheduler "
                    "relays it as the final's start and the booking refuses a time that is not HH:MM."},
]


# --------------------------------------------------------------------------- helpers

def _m(hhmm: str) -> int:
    h, m = hhmm.split(":")
    return int(h) * 60 + int(m)


def _t(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _teams(match: dict, results: dict) -> list:
    if "teams" in match:
        return list(match["teams"])
    return [results.get(dep, f"winner {dep}") for dep in match["from"]]


# --------------------------------------------------------------------------- the model's behaviour

def brain(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    system = system_text(request)
    results = tool_results(request)
    got = lambda name: [r for n, r in results if n == name]  # noqa: E731
    req = json.loads(re.search(r"\{.*\}", user_texts(request)[0], re.S).group(0))
    if system.startswith("You are the tournament director"):
        if not got("get_bracket"):
            return Reply(tool_calls=(tool_call("get_bracket", {"event_id": req["event_id"]}),
                                     tool_call("recall_notes", {"event_id": req["event_id"]})))
        no_show = "did not show" in req["text"] or "forfeit" in req["text"]
        if no_show and not _on("director_route"):
            return Reply(tool_calls=(tool_call("transfer_to_rules_officer", {}),))
        return Reply(tool_calls=(tool_call("transfer_to_scheduler", {}),))
    if system.startswith("You are the rules officer"):
        if not got("record_forfeit"):
            bracket = got("get_bracket")[0]
            m = re.search(r"Team (\w+) did not show for (\S+) .*?(\w+) should advance", req["text"])
            return Reply(tool_calls=(tool_call("record_forfeit", {"event_id": req["event_id"], "match_id": m.group(2),
                                                                  "no_show": m.group(1), "winner": m.group(3)}),))
        return Reply(tool_calls=(tool_call("transfer_to_scheduler", {}),))
    if system.startswith("You are the scheduler"):
        bracket = got("get_bracket")[0]
        checkins = got("team_checkins")
        status = got("station_status")
        if not checkins:
            return Reply(tool_calls=(tool_call("team_checkins", {"event_id": req["event_id"]}),
                                     tool_call("station_status", {"event_id": req["event_id"]})))
        booked = got("book_station") + got("record_walkover")
        if not booked:
            notes = " ".join(n["note"] for n in got("recall_notes")[0]["notes"])
            results_known = dict(bracket["results"])
            for f in got("record_forfeit"):
                results_known[f["match_id"]] = f["winner"]
            stages = status[0]["stages"]
            usable = [s for s in stages if not (s["stage"] == "Stage B" and "Stage B projector broken" in notes)]
            away = {t for t, s in checkins[0]["teams"].items() if s != "checked in"}
            calls, taken = [], {s["stage"]: [] for s in usable}
            for match in bracket["matches"]:
                teams = _teams(match, results_known)
                gone = [t for t in teams if t in away]
                if gone:
                    winner = next(t for t in teams if t not in gone)
                    calls.append(tool_call("record_walkover", {"event_id": req["event_id"], "match_id": match["match_id"],
                                                               "winner": winner}))
                    continue
                best = None
                for s in usable:
                    free_from = s["free_from"]
                    if not re.fullmatch(r"\d\d:\d\d", free_from):
                        best = best or (free_from, s["stage"])  # relayed as the system gave it
                        continue
                    t = max(_m(bracket["start"]), _m(free_from))
                    blocks = list(taken[s["stage"]])
                    if not _on("reserved_block"):
                        blocks += [(_m(a), _m(b)) for a, b in s["reserved"]]
                    moved = True
                    while moved:
                        moved = False
                        for a, b in blocks:
                            if t < b and t + MATCH_MIN > a:
                                t, moved = b + (GAP_MIN if (a, b) in taken[s["stage"]] else 0), True
                    if best is None or (re.fullmatch(r"\d\d:\d\d", best[0]) and t < _m(best[0])):
                        best = (_t(t), s["stage"])
                start, stage = best
                if re.fullmatch(r"\d\d:\d\d", start):
                    taken[stage].append((_m(start), _m(start) + MATCH_MIN))
                calls.append(tool_call("book_station", {"event_id": req["event_id"], "match_id": match["match_id"],
                                                        "stage": stage, "start": start, "teams": teams}))
            return Reply(tool_calls=tuple(calls))
        if not got("announce"):
            lines = [f"{b['match_id']}: {' vs '.join(b['teams'])}, {b['stage']} {b['start']}" for b in got("book_station")]
            lines += [f"{w['match_id']}: walkover, {w['winner']} advances" for w in got("record_walkover")]
            return Reply(tool_calls=(tool_call("announce", {"event_id": req["event_id"], "text": "; ".join(lines)}),))
        return "Round scheduled and announced."
    return "Which event?"


# --------------------------------------------------------------------------- the agents

_BOOKED: dict = {}
_FORFEITS: dict = {}


def _agents(model: Any) -> Any:
    from agents import Agent, function_tool

    @function_tool(failure_error_function=None)
    def get_bracket(event_id: str) -> dict:
        """The event's current round: its matches and the results so far."""
        e = EVENTS[event_id]
        return {"event_id": event_id, "event": e["name"], "round": e["round"], "start": e["start"],
                "matches": e["matches"], "results": dict(e["results"])}

    @function_tool(failure_error_function=None)
    def recall_notes(event_id: str) -> dict:
        """The operators' notes for an event."""
        notes = [n for n in NOTES if n["event_id"] == event_id or _on("notes_scope")]
        return {"event_id": event_id, "notes": notes}

    @function_tool(failure_error_function=None)
    def record_forfeit(event_id: str, match_id: str, no_show: str, winner: str) -> dict:
        """Record a forfeit: the team that did not show loses the match."""
        teams = EVENTS[event_id]["pending"][match_id]
        if no_show not in teams or winner not in teams:
            raise ValueError(f"{match_id} is {teams[0]} vs {teams[1]}")
        _FORFEITS[(event_id, match_id)] = winner
        return {"event_id": event_id, "match_id": match_id, "winner": winner, "by": "forfeit"}

    @function_tool(failure_error_function=None)
    def team_checkins(event_id: str) -> dict:
        """Check-in status of every team of the event."""
        teams = {t: "checked in" for m in EVENTS[event_id]["matches"] for t in m.get("teams", [])}
        teams.update(dict.fromkeys(EVENTS[event_id]["results"].values(), "checked in"))
        as_of = "live"
        if _on("checkin_cache"):
            as_of = CACHED_CHECKINS_AT  # the check-in service answered from its morning cache
        else:
            teams.update({t: f"withdrawn {at}" for t, at in WITHDRAWN.get(event_id, {}).items()})
        return {"event_id": event_id, "as_of": as_of, "teams": teams}

    @function_tool(failure_error_function=None)
    def station_status(event_id: str) -> dict:
        """The stages' free-from times and reserved blocks tonight."""
        e = EVENTS[event_id]
        stages = []
        for name, s in e["stages"].items():
            free_from = s["free_from"]
            if _on("clock_format"):
                h, m = map(int, free_from.split(":"))
                free_from = f"{h - 12 if h > 12 else h}:{m:02d} {'PM' if h >= 12 else 'AM'}"
            stages.append({"stage": name, "free_from": free_from, "reserved": s["reserved"]})
        return {"event_id": event_id, "curfew": e["curfew"], "stages": stages}

    @function_tool(failure_error_function=None)
    def book_station(event_id: str, match_id: str, stage: str, start: str, teams: list[str]) -> dict:
        """Book a stage for a match."""
        e = EVENTS[event_id]
        if not re.fullmatch(r"\d\d:\d\d", start):
            raise ValueError(f"start {start!r} for {match_id} is not a 24-hour HH:MM time")
        for t in teams:
            if t.startswith("winner "):
                dep = t.split()[1]
                if (event_id, dep) not in _FORFEITS:
                    raise ValueError(f"{match_id} waits on {dep}, which has no recorded result")
            if t in WITHDRAWN.get(event_id, {}):
                raise ValueError(f"{t} withdrew at {WITHDRAWN[event_id][t]}; {match_id} cannot be booked")
        a, b = _m(start), _m(start) + MATCH_MIN
        if b > _m(e["curfew"]):
            raise ValueError(f"{match_id} on {stage} would end {_t(b)}, after the {e['curfew']} curfew")
        for r0, r1 in e["stages"][stage]["reserved"]:
            if a < _m(r1) and b > _m(r0):
                raise ValueError(f"{stage} is reserved {r0}-{r1}; {match_id} at {start} overlaps")
        for (ev, st), slots in _BOOKED.items():
            if ev == event_id and st == stage and any(a < y and b > x for x, y in slots):
                raise ValueError(f"{stage} is already booked at {start}")
        _BOOKED.setdefault((event_id, stage), []).append((a, b))
        return {"booking": f"BK-{match_id}-{stage[-1]}", "match_id": match_id, "stage": stage, "start": start,
                "teams": teams}

    @function_tool(failure_error_function=None)
    def record_walkover(event_id: str, match_id: str, winner: str) -> dict:
        """Record a walkover when a player has withdrawn."""
        return {"event_id": event_id, "match_id": match_id, "winner": winner, "by": "walkover"}

    @function_tool(failure_error_function=None)
    def announce(event_id: str, text: str) -> dict:
        """Post the schedule to the event's channel."""
        return {"event_id": event_id, "posted": True, "chars": len(text)}

    scheduler = Agent(name="scheduler", model=model,
                      instructions="You are the scheduler. Read check-ins and stage status, book every match of the "
                                   "round on a stage, record walkovers, then announce the schedule.",
                      tools=[team_checkins, station_status, book_station, record_walkover, announce])
    rules = Agent(name="rules_officer", model=model,
                  instructions="You are the rules officer. Record forfeits and disputes, then hand off to the scheduler.",
                  tools=[record_forfeit], handoffs=[scheduler])
    director = Agent(name="director", model=model,
                     instructions="You are the tournament director. Read the bracket and the notes, then hand the "
                                  "request to the rules officer (no-shows, disputes) or the scheduler.",
                     tools=[get_bracket, recall_notes], handoffs=[rules, scheduler])
    return director


_LOOP: Any = None
_CLIENT: Any = None


def record(inp: dict, path: str, server: Any) -> None:
    global _LOOP, _CLIENT
    from agents import RunConfig, Runner, set_default_openai_api, set_default_openai_client
    from agents.tracing import set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    if _LOOP is None:
        _LOOP = asyncio.new_event_loop()
    if _CLIENT is None or str(_CLIENT.base_url).rstrip("/") != server.base_url.rstrip("/"):
        _CLIENT = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(_CLIENT)
    set_default_openai_api("responses")
    _BOOKED.clear()
    _FORFEITS.clear()
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"ops {inp['request_id']}")])
    director = _agents(server.model)
    try:
        _LOOP.run_until_complete(Runner.run(director, "Ops request " + json.dumps(inp), max_turns=20,
                                            run_config=RunConfig(workflow_name=NAME)))
    except Exception:  # noqa: BLE001 - the trace records the failure
        pass
    finally:
        set_trace_processors([])
