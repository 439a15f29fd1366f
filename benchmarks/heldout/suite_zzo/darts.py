"""Darts league fixtures (langgraph route): builds a round of fixtures, books boards, assigns markers, publishes."""
from __future__ import annotations

import json
import operator
from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

import _rt
import kit

NAME, ROUTE, DOMAIN = "darts-league-fixtures", "langgraph", "a darts league's fixtures"
SHAPE = "StateGraph: intake, teams/venues/rules tools, context, LLM draft, parse, route+book loop per fixture, marker sub-graph, publish, validator"

DIVS = {
    "Premier": ["Red Lion A", "Crown Arrows", "Bull & Gate", "Ship Inn", "Fox Flights", "Anchor Tons"],
    "Division 1": ["Red Lion B", "Plough 180s", "Bell Doubles", "Swan Checkouts", "Kings Arms", "Oak Tree"],
    "Division 2": ["Hare Hounds", "Rose Bullseye", "George Treble", "Star Legs", "Mill Darters", "Wheatsheaf"],
}
RULES = {"Premier": {"legs": 7, "boards": 2}, "Division 1": {"legs": 5, "boards": 2}, "Division 2": {"legs": 5, "boards": 1}}
MARKERS = ["J. Platt", "R. Kaur", "D. Moss", "E. Wren", "T. Okoro"]


def _input(i: int) -> dict:
    div = list(DIVS)[i % 3]
    return {"division": div, "round": 3 + i, "date": f"2025-10-{6 + 7 * (i % 3):02d}"}


INPUTS = [_input(i) for i in range(5)]  # Premier, D1, D2, Premier, D1
CASES = [
    {"id": "dl_c1", "input": 0, "fault_kind": "wrong_retrieval", "root": "search_rulebook", "occ": 1, "failure": "validate_fixtures",
     "description": "search_rulebook returns Division 1's match format for a Premier round, so fixtures are published as best of 5 legs."},
    {"id": "dl_c2", "input": 1, "fault_kind": "context_pollution", "root": "build_context", "occ": 1, "failure": "validate_fixtures",
     "description": "build_context puts the Premier team list into the drafting prompt and the model pairs a Premier team in a Division 1 round."},
    {"id": "dl_c3", "input": 2, "fault_kind": "off_by_one", "root": "book_board", "occ": 2, "failure": "validate_fixtures",
     "description": "book_board books the second fixture at the next fixture's home venue, double-booking a one-board pub."},
    {"id": "dl_c4", "input": 3, "fault_kind": "format_drift", "root": "ChatOpenAI", "occ": 3, "failure": "validate_fixtures",
     "description": "The marker model answers in a different line layout and the reader keeps the whole line as the marker's name."},
    {"id": "dl_c5", "input": 4, "fault_kind": "wrong_routing", "root": "route_fixture", "occ": 3, "failure": "validate_fixtures",
     "description": "route_fixture sends the third fixture to the away team's venue instead of the home team's."},
]


@tool
def fetch_teams(division: str) -> list:
    """Registered teams of a division."""
    return [{"team": t, "venue": t.split(" ")[0] + " pub"} for t in DIVS[division]]


@tool
def fetch_venues(division: str) -> list:
    """Venues and their boards."""
    return [{"venue": t.split(" ")[0] + " pub", "boards": 1} for t in DIVS[division]]


@tool
def search_rulebook(query: str) -> dict:
    """Search the league rulebook for the division's match format."""
    div = query.split(":")[0]
    if kit.on("dl_c1"):
        div = "Division 1"
    return {"section": f"{div} match format", **RULES[div]}


@tool
def book_board(venue: str, date: str, fixture: str) -> dict:
    """Book a board at a venue for a fixture night."""
    return {"venue": venue, "date": date, "fixture": fixture, "board": 1}


class S(TypedDict, total=False):
    division: str
    round: int
    date: str
    teams: list
    venues: list
    rules: dict
    context: str
    draft: str
    fixtures: list
    i: int
    lane: str
    bookings: Annotated[list, operator.add]
    markers: list
    sheet: dict


def _policy(inp: dict):
    def brain(request):
        text = _rt.last_user(request)
        if text.startswith("Pair the teams"):
            teams = json.loads(text.split("TEAMS:", 1)[1].split("\n", 1)[0])
            names = [t["team"] for t in teams]
            if "Also in the league:" in text:
                names[3] = DIVS["Premier"][3]
            r = inp["round"] % 3
            names = names[r:] + names[:r]
            return "\n".join(f"{names[k]} v {names[k + 3]}" for k in range(3))
        if text.startswith("Assign a marker"):
            f = json.loads(text.split("\n", 1)[1])
            m = MARKERS[(len(f["home"]) + inp["round"]) % len(MARKERS)]
            if kit.on("dl_c4") and "Crown" in f["home"] + f["away"]:
                return f"Marker: {m} (board 1)"
            return m
        return "OK"
    return brain


def build(llm):
    def intake(s: S) -> dict:
        return {"i": 0, "bookings": []}

    def load_league(s: S) -> dict:
        teams = fetch_teams.invoke({"division": s["division"]})
        venues = fetch_venues.invoke({"division": s["division"]})
        rules = search_rulebook.invoke({"query": f"{s['division']}: legs per match and boards"})
        return {"teams": teams, "venues": venues, "rules": rules}

    def build_context(s: S) -> dict:
        ctx = "TEAMS:" + json.dumps(s["teams"])
        if kit.on("dl_c2"):
            ctx += "\nAlso in the league: " + ", ".join(DIVS["Premier"])
        return {"context": ctx}

    def draft_pairings(s: S) -> dict:
        msg = llm.invoke([SystemMessage("You pair darts teams for a league round, one fixture a line: HOME v AWAY."),
                          HumanMessage(f"Pair the teams for round {s['round']} of {s['division']}.\n{s['context']}")])
        return {"draft": msg.content}

    def parse_pairings(s: S) -> dict:
        out = []
        for line in s["draft"].splitlines():
            home, away = [p.strip() for p in line.split(" v ")]
            out.append({"home": home, "away": away, "legs": s["rules"]["legs"]})
        return {"fixtures": out}

    def route_fixture(s: S) -> dict:
        f = s["fixtures"][s["i"]]
        lane = "home"
        if kit.on("dl_c5") and s["i"] == 2:
            lane = "away"
        return {"lane": lane}

    def book(s: S) -> dict:
        i = s["i"]
        venue_of = {t["team"]: t["venue"] for t in s["teams"]}
        f = s["fixtures"][i]
        k = i
        if kit.on("dl_c3") and i == 1:
            k = i + 1
        g = s["fixtures"][k]
        venue = venue_of.get(g["home"] if s["lane"] == "home" else g["away"], "Neutral pub")
        b = book_board.invoke({"venue": venue, "date": s["date"], "fixture": f"{f['home']} v {f['away']}"})
        return {"bookings": [b], "i": i + 1}

    def more(s: S) -> str:
        return "route_fixture" if s["i"] < len(s["fixtures"]) else "markers"

    def assign(ms: dict) -> dict:
        names = []
        for f in ms["fixtures"]:
            msg = llm.invoke([SystemMessage("Name one marker for the fixture."), HumanMessage("Assign a marker\n" + json.dumps(f))])
            names.append(msg.content.strip())
        return {"markers": names}

    def read_markers(ms: dict) -> dict:
        return {"markers": [m.split("|")[0].strip() for m in ms["markers"]]}

    sub = StateGraph(S)
    sub.add_node("assign_markers", assign)
    sub.add_node("read_markers", read_markers)
    sub.add_edge(START, "assign_markers")
    sub.add_edge("assign_markers", "read_markers")
    sub.add_edge("read_markers", END)
    markers = sub.compile()

    def publish(s: S) -> dict:
        rows = [{**f, "venue": b["venue"], "date": b["date"], "marker": m}
                for f, b, m in zip(s["fixtures"], s["bookings"], s["markers"])]
        return {"sheet": {"division": s["division"], "round": s["round"], "fixtures": rows}}

    def validate_fixtures(s: S) -> dict:
        sheet = s["sheet"]
        teams = set(DIVS[sheet["division"]])
        legs = RULES[sheet["division"]]["legs"]
        seen: list = []
        used: dict = {}
        for r in sheet["fixtures"]:
            for t in (r["home"], r["away"]):
                if t not in teams:
                    raise ValueError(f"{t} is not a {sheet['division']} team")
                seen.append(t)
            if r["legs"] != legs:
                raise ValueError(f"{r['home']} v {r['away']} set to best of {r['legs']} legs, {sheet['division']} plays {legs}")
            if r["venue"] != r["home"].split(" ")[0] + " pub":
                raise ValueError(f"{r['home']} v {r['away']} booked at {r['venue']}, not the home venue")
            used[r["venue"]] = used.get(r["venue"], 0) + 1
            if r["marker"] not in MARKERS:
                raise ValueError(f"marker '{r['marker']}' is not a registered official")
        if len(seen) != len(set(seen)):
            raise ValueError("a team plays twice in one round")
        return {"published": True}

    g = StateGraph(S)
    for n, fn in [("intake", intake), ("load_league", load_league), ("build_context", build_context),
                  ("draft_pairings", draft_pairings), ("parse_pairings", parse_pairings), ("route_fixture", route_fixture),
                  ("book", book), ("markers", markers), ("publish", publish), ("validate_fixtures", validate_fixtures)]:
        g.add_node(n, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "load_league")
    g.add_edge("load_league", "build_context")
    g.add_edge("build_context", "draft_pairings")
    g.add_edge("draft_pairings", "parse_pairings")
    g.add_edge("parse_pairings", "route_fixture")
    g.add_edge("route_fixture", "book")
    g.add_conditional_edges("book", more, ["route_fixture", "markers"])
    g.add_edge("markers", "publish")
    g.add_edge("publish", "validate_fixtures")
    g.add_edge("validate_fixtures", END)
    return g.compile()


def record(inp: dict, path: str) -> None:
    _rt.SERVER.use(_policy(inp))
    _rt.lg_run(build(_rt.chat_model()), dict(inp), NAME, f"fixtures for {inp['division']} round {inp['round']}", path)
