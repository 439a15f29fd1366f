"""Snooker hall: a league night's results, tables and referees (otlp route)."""
from __future__ import annotations

import json

import kit
from common import Otlp, block, client, last_user, parse_block

NAME = "snooker-league-night"
ROUTE = "otlp"
DOMAIN = "a snooker hall's table bookings and league"
SHAPE = "OpenInference spans: fetch_standings, fetch_results, read_results llm, parse_results, update_table, per match route_match + book_table, referee_roster sub-agent (search_referees, check_availability per match, assign llm), announce llm, format_notice, validate_night"

TEAMS = ["Cue Ball Crew", "Pocket Rockets", "Red Devils", "Baulk Line", "Long Pots", "Safety First"]
REFEREES = {"division 1": ["K. Doyle", "M. Ibe", "S. Ward", "P. Kane"], "ladies": ["J. Hart", "L. Moss", "R. Penn"]}
LEAVE = {"K. Doyle": ("2026-09-10", "2026-09-17"), "M. Ibe": ("2026-10-01", "2026-10-08")}
MATCH_TABLES = [1, 2, 3, 4]
SOCIAL_TABLES = [7, 8, 9]


def _night(date, prev, fixtures):
    return {"date": date, "report": "; ".join(f"{h} {a}-{b} {w}" for h, a, b, w in prev),
            "prev": [{"home": h, "away": w, "home_frames": a, "away_frames": b} for h, a, b, w in prev],
            "fixtures": [{"home": h, "away": a, "type": t} for h, a, t in fixtures]}


CASES = [
    {"id": "zzn_snooker_01", "kind": "off_by_one",
     "input": _night("2026-09-17", [("Cue Ball Crew", 6, 3, "Pocket Rockets"), ("Red Devils", 4, 5, "Baulk Line")],
                     [("Long Pots", "Safety First", "league"), ("Cue Ball Crew", "Red Devils", "league")]),
     "root": ("check_availability", 1), "failure": ("validate_night", 1),
     "desc": "check_availability treats a referee's leave as ending the day before its last day, so K. Doyle, on leave until the night itself, is offered as free."},
    {"id": "zzn_snooker_02", "kind": "wrong_retrieval",
     "input": _night("2026-09-24", [("Long Pots", 7, 2, "Safety First"), ("Pocket Rockets", 5, 4, "Red Devils")],
                     [("Baulk Line", "Pocket Rockets", "league"), ("Safety First", "Cue Ball Crew", "league")]),
     "root": ("search_referees", 1), "failure": ("validate_night", 1),
     "desc": "search_referees returns the ladies' league referee pool instead of the division 1 panel."},
    {"id": "zzn_snooker_03", "kind": "lossy_parsing",
     "input": _night("2026-10-01", [("Red Devils", 10, 8, "Long Pots"), ("Baulk Line", 5, 4, "Cue Ball Crew")],
                     [("Pocket Rockets", "Long Pots", "league"), ("Red Devils", "Safety First", "league")]),
     "root": ("parse_results", 1), "failure": ("validate_night", 1),
     "desc": "parse_results keeps only the first character of each frame score, so Red Devils' 10-8 win is read as 1-8."},
    {"id": "zzn_snooker_04", "kind": "wrong_routing",
     "input": _night("2026-10-08", [("Safety First", 5, 1, "Baulk Line"), ("Long Pots", 3, 6, "Cue Ball Crew")],
                     [("Cue Ball Crew", "Long Pots", "league"), ("Red Devils", "Pocket Rockets", "friendly"), ("Baulk Line", "Safety First", "league")]),
     "root": ("route_match", 3), "failure": ("validate_night", 1),
     "desc": "route_match sends the third fixture, a league match, to the social tables with the friendlies."},
    {"id": "zzn_snooker_05", "kind": "hallucinated_value",
     "input": _night("2026-10-15", [("Pocket Rockets", 6, 0, "Long Pots"), ("Cue Ball Crew", 5, 2, "Safety First")],
                     [("Red Devils", "Cue Ball Crew", "league"), ("Long Pots", "Baulk Line", "league")]),
     "root": ("ChatCompletion", 3), "failure": ("validate_night", 1),
     "desc": "The announcement model puts the second match on table 5, a table no booking holds."},
]
REFS = [_night("2026-08-27", [("Baulk Line", 5, 3, "Long Pots"), ("Safety First", 2, 6, "Red Devils")],
               [("Cue Ball Crew", "Baulk Line", "league"), ("Pocket Rockets", "Safety First", "league")]),
        _night("2026-09-03", [("Red Devils", 6, 1, "Cue Ball Crew"), ("Long Pots", 4, 5, "Pocket Rockets")],
               [("Safety First", "Long Pots", "league"), ("Red Devils", "Baulk Line", "friendly")]),
        _night("2026-09-10", [("Pocket Rockets", 11, 9, "Baulk Line"), ("Cue Ball Crew", 6, 3, "Long Pots")],
               [("Red Devils", "Long Pots", "league"), ("Baulk Line", "Cue Ball Crew", "league")]),
        _night("2026-09-01", [("Safety First", 5, 4, "Cue Ball Crew"), ("Baulk Line", 0, 6, "Red Devils")],
               [("Pocket Rockets", "Cue Ball Crew", "league"), ("Long Pots", "Red Devils", "league"), ("Safety First", "Baulk Line", "friendly")])]


def brain(request):
    title, p = parse_block(last_user(request))
    if title == "RESULTS":
        return json.dumps({"results": [f"{r['home']} {r['home_frames']}-{r['away_frames']} {r['away']}" for r in p["prev"]]})
    if title == "ASSIGN":
        out = {}
        free = [r for r in p["available"] if r["free"]]
        for i, m in enumerate(p["matches"]):
            out[m] = free[i % len(free)]["name"]
        return json.dumps(out)
    if title == "ANNOUNCE":
        lines = []
        for i, b in enumerate(p["bookings"]):
            table = b["table"]
            if kit.on("zzn_snooker_05") and i == 1:
                table = 5
            lines.append(f"{b['home']} v {b['away']}: table {table}, referee {p['referees'].get(b['home'], 'none')}")
        return "League night " + p["date"] + "\n" + "\n".join(lines)
    raise ValueError(title)


def fetch_standings(date):
    return {t: {"played": 4, "points": 6 - i, "frames_for": 20 - i, "frames_against": 14 + i} for i, t in enumerate(TEAMS)}


def fetch_results(date):
    return {"source": "results sheet", "date": date}


def parse_results(lines):
    rows = []
    for line in lines:
        left, right = line.split("-")
        *home, hf = left.split(" ")
        af, *away = right.split(" ")
        if kit.on("zzn_snooker_03"):
            hf, af = hf[:1], af[:1]
        rows.append({"home": " ".join(home), "away": " ".join(away), "home_frames": int(hf), "away_frames": int(af)})
    return rows


def update_table(standings, rows):
    table = {t: dict(v) for t, v in standings.items()}
    for r in rows:
        for team, f, a in ((r["home"], r["home_frames"], r["away_frames"]), (r["away"], r["away_frames"], r["home_frames"])):
            t = table[team]
            t["played"] += 1
            t["frames_for"] += f
            t["frames_against"] += a
            t["points"] += 2 if f > a else 0
    return table


def route_match(fixture, index):
    kind = fixture["type"]
    if kit.on("zzn_snooker_04") and index == 3:
        kind = "friendly"
    return "match_tables" if kind == "league" else "social_tables"


def book_table(fixture, hall, taken):
    pool = MATCH_TABLES if hall == "match_tables" else SOCIAL_TABLES
    table = next(t for t in pool if t not in taken)
    return {"home": fixture["home"], "away": fixture["away"], "table": table, "hall": hall}


def search_referees(division):
    pool = "ladies" if kit.on("zzn_snooker_02") else division
    return {"division": division, "referees": REFEREES[pool]}


def check_availability(name, date):
    start, until = LEAVE.get(name, ("", ""))
    on_leave = start <= date <= until
    if kit.on("zzn_snooker_01"):
        on_leave = start <= date < until
    return {"name": name, "free": not on_leave}


def format_notice(text):
    return {"board": "main hall", "lines": text.split("\n")[1:], "title": text.split("\n")[0]}


def validate_night(night, table, bookings, referees, notice):
    expect = update_table(fetch_standings(night["date"]), night["prev"])
    for team, row in expect.items():
        if table[team] != row:
            raise ValueError(f"{team} shows {table[team]['frames_for']} frames for and {table[team]['points']} points; the results sheet gives {row['frames_for']} and {row['points']}")
    for f, b in zip(night["fixtures"], bookings):
        if f["type"] == "league" and b["table"] not in MATCH_TABLES:
            raise ValueError(f"league match {f['home']} v {f['away']} booked on table {b['table']}, not a match table")
    for home, ref in referees.items():
        if ref not in REFEREES["division 1"]:
            raise ValueError(f"referee {ref} for {home} is not on the division 1 panel")
        start, until = LEAVE.get(ref, ("", ""))
        if start <= night["date"] <= until:
            raise ValueError(f"referee {ref} is on leave until {until}, the night of {night['date']}")
    for line, b in zip(notice["lines"], bookings):
        if f"table {b['table']}," not in line:
            raise ValueError(f"notice line {line!r} does not show the booked table {b['table']}")
    return {"ok": True}


def record(inp, path, server):
    server.use(brain)
    o = Otlp("snooker-hall")
    cli = client(server)

    def llm(title, **parts):
        r = cli.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": block(title, **parts)}])
        return r.choices[0].message.content

    try:
        with o.span(NAME, "AGENT", {"date": inp["date"]}, **{"session.id": "league-" + inp["date"]}):
            standings = o.call("fetch_standings", "TOOL", fetch_standings, {"date": inp["date"]})
            o.call("fetch_results", "RETRIEVER", fetch_results, {"date": inp["date"]})
            lines = json.loads(llm("RESULTS", report=inp["report"], prev=inp["prev"]))["results"]
            rows = o.call("parse_results", "CHAIN", parse_results, {"lines": lines})
            table = o.call("update_table", "CHAIN", update_table, {"standings": standings, "rows": rows})
            bookings, taken = [], []
            for i, f in enumerate(inp["fixtures"], 1):
                hall = o.call("route_match", "CHAIN", route_match, {"fixture": f, "index": i})
                b = o.call("book_table", "TOOL", book_table, {"fixture": f, "hall": hall, "taken": list(taken)})
                taken.append(b["table"])
                bookings.append(b)
            league = [b for f, b in zip(inp["fixtures"], bookings) if f["type"] == "league"]
            with o.span("referee_roster", "AGENT", {"matches": [b["home"] for b in league]}) as sp:
                pool = o.call("search_referees", "RETRIEVER", search_referees, {"division": "division 1"})
                avail = [o.call("check_availability", "TOOL", check_availability, {"name": n, "date": inp["date"]})
                         for n in pool["referees"][:2]]
                referees = json.loads(llm("ASSIGN", matches=[b["home"] for b in league], available=avail))
                sp.set_attribute("output.value", json.dumps(referees))
            text = llm("ANNOUNCE", date=inp["date"], bookings=bookings, referees=referees)
            notice = o.call("format_notice", "CHAIN", format_notice, {"text": text})
            o.call("validate_night", "CHAIN", validate_night,
                   {"night": inp, "table": table, "bookings": bookings, "referees": referees, "notice": notice})
    finally:
        o.close(path)
