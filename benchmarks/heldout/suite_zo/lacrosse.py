"""Lacrosse league (langgraph route): build a week's fixtures from standings and field permits, publish them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.output_parsers import BaseOutputParser
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

from .common import Case, last_user_text, system_text
from .kit import active

AGENT = "lacrosse-fixtures"
ROUTE = "langgraph"
EXT = "jsonl"
BASE_URL = ""

TEAMS = {
    "senior": [("Hawks", 14), ("Otters", 12), ("Ravens", 11), ("Badgers", 9), ("Lynx", 7), ("Foxes", 6),
               ("Herons", 4), ("Stags", 2)],
    "junior": [("Cubs", 13), ("Kits", 12), ("Pups", 10), ("Owlets", 8), ("Fawns", 5), ("Joeys", 3)],
    "masters": [("Veterans", 9), ("Old Boys", 8), ("Alumni", 6), ("Legends", 5)],
}
PERMITS = {
    "Riverside": [("Field 1", "18:00", "20:30"), ("Field 2B", "18:00", "20:30"), ("Field 3", "18:30", "21:30"),
                  ("Field 4", "18:00", "21:00"), ("Field 5", "19:00", "22:00")],
    "Northgate": [("Pitch A", "17:30", "20:00"), ("Pitch B", "18:00", "21:00"), ("Pitch C2", "18:00", "21:00"),
                  ("Pitch D", "18:30", "21:30")],
}

INPUTS = {
    "w6_senior": {"league": "Metro Box Lacrosse", "division": "senior", "week": 6, "date": "2026-05-13", "venue": "Riverside"},
    "w7_junior": {"league": "Metro Box Lacrosse", "division": "junior", "week": 7, "date": "2026-05-20", "venue": "Northgate"},
    "ref_w3_masters": {"league": "Metro Box Lacrosse", "division": "masters", "week": 3, "date": "2026-04-22", "venue": "Northgate"},
    "ref_w4_senior": {"league": "Metro Box Lacrosse", "division": "senior", "week": 4, "date": "2026-04-29", "venue": "Riverside"},
    "ref_w5_junior": {"league": "Metro Box Lacrosse", "division": "junior", "week": 5, "date": "2026-05-06", "venue": "Riverside"},
    "ref_w8_masters": {"league": "Metro Box Lacrosse", "division": "masters", "week": 8, "date": "2026-05-27", "venue": "Riverside"},
}
OFFICIALS = {"senior": "NLRA", "junior": "JLRA", "masters": "NLRA"}
GAME_MIN = 90


class LeagueApiError(Exception):
    """The league site's fixtures API refused the week."""


def policy(request):
    sys_t, user = system_text(request), last_user_text(request)
    if "pair teams" in sys_t:
        table = json.loads(user.split("STANDINGS:", 1)[1])
        lines = [f"Game {i // 2 + 1}: {table[i]['team']} vs {table[i + 1]['team']}" for i in range(0, len(table) - 1, 2)]
        return "\n".join(lines)
    if "fixture notice" in sys_t:
        rows = json.loads(user.split("FIXTURES:", 1)[1])
        out = []
        for r in rows:
            t = r["kickoff"]
            if active("lacrosse.fd_notice"):
                h, m = map(int, t.split(":"))
                t = f"{h - 12 if h > 12 else h}:{m:02d} PM"
            out.append(f"{r['game']} | {r['home']} v {r['away']} | {r['field']} | {t} | {r['officials']}")
        return "FIXTURES\n" + "\n".join(out)
    return "?"


@tool
def get_standings(division: str, week: int) -> list[dict]:
    """League table for a division before the given week."""
    return [{"team": t, "points": p} for t, p in TEAMS[division]]


@tool
def list_field_permits(venue: str, date: str) -> dict:
    """Field permits the city issued for a venue and date."""
    rows = [{"field": f, "opens": a, "closes": b} for f, a, b in PERMITS[venue]]
    if active("lacrosse.tr_permits"):
        return {"venue": venue, "date": date, "permits": rows[:2]}
    return {"venue": venue, "date": date, "permits": rows}


@tool
def hold_slot(field: str, date: str, kickoff: str, game: str) -> dict:
    """Place a hold on a field slot."""
    return {"hold": f"H-{game}-{field.replace(' ', '')}", "field": field, "kickoff": kickoff, "status": "held"}


class PairingParser(BaseOutputParser[list]):
    """Reads 'Game n: Home vs Away' lines."""

    def parse(self, text: str) -> list:
        games = []
        for line in text.splitlines():
            m = re.match(r"Game (\d+): (.+?) vs (.+)$", line.strip())
            if m:
                games.append({"game": f"G{m.group(1)}", "home": m.group(2), "away": m.group(3)})
        return games


class LeagueState(TypedDict, total=False):
    request: dict
    standings: list
    permits: dict
    pairing_text: str
    games: list
    officials: dict
    fixtures: list
    holds: list
    notice: str
    rows: list
    receipt: dict


def build(llm: Any):
    parser = PairingParser()

    def intake(state: LeagueState) -> dict:
        req = dict(state["request"])
        req["division"] = req["division"].lower()
        return {"request": req}

    def standings(state: LeagueState, config) -> dict:
        req = state["request"]
        return {"standings": get_standings.invoke({"division": req["division"], "week": req["week"]}, config=config)}

    def fields(state: LeagueState, config) -> dict:
        req = state["request"]
        return {"permits": list_field_permits.invoke({"venue": req["venue"], "date": req["date"]}, config=config)}

    def pair(state: LeagueState, config) -> dict:
        table = sorted(state["standings"], key=lambda r: -r["points"])
        msg = llm.invoke([("system", "You pair teams for the week: adjacent places in the table meet."),
                          ("user", "STANDINGS:" + json.dumps(table))], config=config)
        return {"pairing_text": msg.content}

    def parse(state: LeagueState, config) -> dict:
        return {"games": parser.invoke(state["pairing_text"], config=config)}

    def officials(state: LeagueState) -> dict:
        division = state["request"]["division"]
        pool = OFFICIALS[division]
        if active("lacrosse.wr_officials"):
            pool = "JLRA" if division != "junior" else "NLRA"
        return {"officials": {g["game"]: pool for g in state["games"]}}

    def kickoffs(state: LeagueState) -> dict:
        permits = state["permits"]["permits"]
        fixtures = []
        for i, g in enumerate(state["games"]):
            p = permits[i % len(permits)]
            rnd = i // len(permits) + (1 if active("lacrosse.obo_rounds") else 0)
            h, m = map(int, p["opens"].split(":"))
            start = h * 60 + m + rnd * GAME_MIN
            fixtures.append({**g, "field": p["field"], "kickoff": f"{start // 60:02d}:{start % 60:02d}",
                             "officials": state["officials"][g["game"]]})
        return {"fixtures": fixtures, "holds": []}

    def hold(state: LeagueState, config) -> dict:
        fx = state["fixtures"][len(state["holds"])]
        h = hold_slot.invoke({"field": fx["field"], "date": state["request"]["date"], "kickoff": fx["kickoff"],
                              "game": fx["game"]}, config=config)
        return {"holds": state["holds"] + [h]}

    def more_holds(state: LeagueState) -> str:
        return "hold" if len(state["holds"]) < len(state["fixtures"]) else "notice"

    def notice(state: LeagueState, config) -> dict:
        msg = llm.invoke([("system", "You write the weekly fixture notice, one line per game."),
                          ("user", "FIXTURES:" + json.dumps(state["fixtures"]))], config=config)
        return {"notice": msg.content}

    def read_notice(state: LeagueState) -> dict:
        rows = []
        for line in state["notice"].splitlines()[1:]:
            game, teams, field, kickoff, refs = [p.strip() for p in line.split("|")]
            if active("lacrosse.lp_field"):
                field = re.sub(r"(\d+)[A-Z]$", r"\1", field)
            home, away = teams.split(" v ")
            rows.append({"game": game, "home": home, "away": away, "field": field, "kickoff": kickoff, "officials": refs})
        return {"rows": rows}

    def publish(state: LeagueState) -> dict:
        req = state["request"]
        permits = {p["field"]: p for p in state["permits"]["permits"]}
        full = {f for f, _, _ in PERMITS[req["venue"]]}
        teams = [t for t, _ in TEAMS[req["division"]]]
        errs = []
        seen = [t for r in state["rows"] for t in (r["home"], r["away"])]
        if sorted(seen) != sorted(teams):
            errs.append(f"teams without a fixture: {sorted(set(teams) - set(seen))}")
        for r in state["rows"]:
            if not re.fullmatch(r"\d{2}:\d{2}", r["kickoff"]):
                errs.append(f"{r['game']}: kickoff '{r['kickoff']}' is not HH:MM")
                continue
            if r["field"] not in full:
                errs.append(f"{r['game']}: no permit for '{r['field']}' at {req['venue']}")
                continue
            closes = dict((f, c) for f, _, c in PERMITS[req["venue"]])[r["field"]]
            h, m = map(int, r["kickoff"].split(":"))
            ch, cm = map(int, closes.split(":"))
            if h * 60 + m + GAME_MIN > ch * 60 + cm:
                errs.append(f"{r['game']}: {r['kickoff']} kickoff ends after the {r['field']} permit closes at {closes}")
            if r["officials"] != OFFICIALS[req["division"]]:
                errs.append(f"{r['game']}: officials association {r['officials']} does not cover {req['division']} games")
        del permits
        if errs:
            raise LeagueApiError("POST /api/v2/fixtures -> 400 Bad Request: " + json.dumps({"errors": errs}))
        return {"receipt": {"published": len(state["rows"]), "week": req["week"]}}

    g = StateGraph(LeagueState)
    for name, fn in [("intake", intake), ("standings", standings), ("fields", fields), ("pair", pair),
                     ("parse", parse), ("officials", officials), ("kickoffs", kickoffs), ("hold", hold),
                     ("notice", notice), ("read_notice", read_notice), ("publish", publish)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    for a, b in [("intake", "standings"), ("standings", "fields"), ("fields", "pair"), ("pair", "parse"),
                 ("parse", "officials"), ("officials", "kickoffs"), ("kickoffs", "hold")]:
        g.add_edge(a, b)
    g.add_conditional_edges("hold", more_holds, {"hold": "hold", "notice": "notice"})
    g.add_edge("notice", "read_notice")
    g.add_edge("read_notice", "publish")
    g.add_edge("publish", END)
    return g.compile()


def record(key: str, path: Path) -> None:
    from langchain_openai import ChatOpenAI

    from trajdebug.integrations.langchain import TrajdebugTracer

    req = INPUTS[key]
    llm = ChatOpenAI(base_url=BASE_URL, api_key="local-test", model="fake-model", max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"week {req['week']} {req['division']} fixtures at {req['venue']}")
    try:
        build(llm).invoke({"request": req}, config={"callbacks": [tracer], "recursion_limit": 60})
    except LeagueApiError:
        pass


REFS = ["ref_w3_masters", "ref_w4_senior", "ref_w5_junior", "ref_w8_masters"]


def _c(n, kind, fid, key, root, occ, desc):
    return Case(f"zo_lacrosse_{n}", AGENT, ROUTE, kind, fid, key, root, occ, "publish", 1, desc)


CASES = [
    _c(1, "wrong_routing", "lacrosse.wr_officials", "w6_senior", "officials", 1,
       "the officials node sends senior games to the junior referees' association JLRA."),
    _c(2, "truncated_result", "lacrosse.tr_permits", "w6_senior", "list_field_permits", 1,
       "list_field_permits returns only the first two permits, so four games are squeezed onto two fields past closing."),
    _c(3, "format_drift", "lacrosse.fd_notice", "w7_junior", "ChatOpenAI", 2,
       "the notice model writes kickoffs as 12-hour '7:30 PM' times instead of HH:MM."),
    _c(4, "off_by_one", "lacrosse.obo_rounds", "w7_junior", "kickoffs", 1,
       "kickoffs starts counting rounds at 1, so every game kicks off 90 minutes late and runs past the permit."),
    _c(5, "lossy_parsing", "lacrosse.lp_field", "w6_senior", "read_notice", 1,
       "read_notice strips the letter suffix of 'Field 2B', leaving a field name with no permit."),
]
