"""Brass band: plan a concert season's programmes, wet-weather cover, roster and programme notes (langgraph route)."""
from __future__ import annotations

import json
import os
import sys
from typing import TypedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

import kit
from harness import Brain, chat_prompt, payload

NAME, ROUTE, DOMAIN = "brassband-season", "langgraph", "a brass band's concert season"
SHAPE = "StateGraph: calendar tool, LLM themes + parse, per-concert loop (LLM repertoire pick, parts/duration tool per piece, venue routing to a wet-weather cover node), roster tool, LLM programme notes, validator"

LIBRARY = {  # piece: (parts held, minutes, length in seconds as catalogued, theme)
    "Cornish Cavalier": (30, 4.5, 270, "march"), "Slaidburn": (30, 3.5, 210, "march"), "Deep Harmony": (29, 3.0, 180, "hymn"),
    "Nimrod": (30, 4.0, 240, "hymn"), "Frolic for Trombones": (28, 5.0, 300, "showcase"), "Napoli": (30, 6.5, 390, "showcase"),
    "Christmas Festival": (30, 8.0, 480, "carols"), "Sleigh Ride": (29, 3.5, 210, "carols"), "Film Classics": (30, 9.5, 570, "film"),
    "Star Wars Suite": (30, 11.0, 660, "film"), "Penlan": (30, 4.0, 240, "hymn"), "Sousa Medley": (30, 7.0, 420, "march"),
}
VENUES = {"St Mary's Church": ("indoor", 70), "Abbey Gardens": ("outdoor", 45), "Victoria Park": ("outdoor", 50), "Town Hall": ("indoor", 90)}
MEMBERS_NOW = [f"P{n:02d}" for n in range(1, 29)]
MEMBERS_LAST = [m for m in MEMBERS_NOW if m != "P17"] + ["P31"]
THEMES = ["march", "hymn", "showcase", "film", "carols"]


def make_season(i: int) -> dict:
    venues = list(VENUES)
    concerts = []
    for k in range(4):
        concerts.append({"no": k + 1, "date": f"2026-{5 + k * 2:02d}-{(7 * i + 3 * k) % 27 + 1:02d}", "venue": venues[(i + k) % 4]})
    concerts[-1]["date"] = f"2026-12-{12 + i}"
    return {"season": f"season-{2026}-{chr(65 + i)}", "concerts": concerts, "themes": [THEMES[(i + k) % 4] for k in range(3)] + ["carols"]}


brain = Brain()


@brain.on("themes")
def _themes(request, text):
    return json.dumps(payload(text)["themes"])


@brain.on("repertoire")
def _rep(request, text):
    d = payload(text)
    pieces = [p for p in d["library"] if LIBRARY[p][3] == d["theme"]][:2]
    return json.dumps(pieces)


@brain.on("notes")
def _notes(request, text):
    d = payload(text)
    rows = []
    for c in d["concerts"]:
        date = c["date"]
        if kit.on("zzu_brassband_03") and c["no"] == 2:
            date = "2026-07-18"
        rows.append(f"Concert {c['no']} ({date}, {c['venue']}): {', '.join(c['pieces'])}.")
    return "\n".join(rows)


class State(TypedDict, total=False):
    season: dict
    concerts: list
    raw_themes: str
    themes: list
    idx: int
    programmes: list
    covers: dict
    roster: list
    notes: str
    result: str
    leaflet: dict


@tool
def season_calendar(season: str, concerts: list) -> list:
    """The season's confirmed concert dates and venues."""
    return [dict(c, setting=VENUES[c["venue"]][0], slot_min=VENUES[c["venue"]][1]) for c in concerts]


@tool
def check_parts(piece: str) -> dict:
    """Parts held in the band library for a piece, and its playing time."""
    parts, minutes, seconds, _ = LIBRARY[piece]
    if kit.on("zzu_brassband_02") and piece in ("Film Classics", "Star Wars Suite"):
        return {"piece": piece, "parts": parts, "duration": seconds}  # film catalogue lists lengths in seconds
    return {"piece": piece, "parts": parts, "duration": minutes}


@tool
def book_cover(venue: str, date: str) -> dict:
    """Book a wet-weather fallback hall for an outdoor concert."""
    return {"venue": venue, "date": date, "cover": "Town Hall"}


@tool
def member_roster(season: str) -> list:
    """Players available for the season."""
    return list(MEMBERS_LAST if kit.on("zzu_brassband_04") else MEMBERS_NOW)  # roster export from the members' app


def build(llm):
    def ask(tag, instruction, data):
        return llm.invoke([SystemMessage("You are the music director's assistant of a brass band."), HumanMessage(chat_prompt(tag, instruction, data))]).content

    def load_season(s: State) -> dict:
        return {"concerts": season_calendar.invoke({"season": s["season"]["season"], "concerts": s["season"]["concerts"]}), "idx": 0, "programmes": [], "covers": {}}

    def draft_themes(s: State) -> dict:
        return {"raw_themes": ask("themes", "Propose a theme for each concert, in order.", {"themes": s["season"]["themes"], "concerts": len(s["concerts"])})}

    def parse_themes(s: State) -> dict:
        themes = json.loads(s["raw_themes"])
        if kit.on("zzu_brassband_05"):
            themes = themes[1:] + themes[:1]
        return {"themes": themes}

    def plan_concert(s: State) -> dict:
        c = s["concerts"][s["idx"]]
        used = {p for prog in s["programmes"] for p in prog["pieces"]}
        pieces = json.loads(ask("repertoire", "Pick two pieces for the theme from the library.", {"theme": s["themes"][s["idx"]], "library": [p for p in LIBRARY if p not in used]}))
        checked = [check_parts.invoke({"piece": p}) for p in pieces]
        total = sum(x["duration"] for x in checked)
        return {"programmes": s["programmes"] + [{"no": c["no"], "pieces": pieces, "minutes": total, "parts": min(x["parts"] for x in checked)}]}

    def venue_route(s: State) -> str:
        c = s["concerts"][s["idx"]]
        outdoor = c["setting"] == "outdoor"
        if kit.on("zzu_brassband_01"):
            outdoor = c["venue"].endswith("Park")
        return "outdoor_cover" if outdoor else "advance"

    def outdoor_cover(s: State) -> dict:
        c = s["concerts"][s["idx"]]
        return {"covers": {**s["covers"], str(c["no"]): book_cover.invoke({"venue": c["venue"], "date": c["date"]})["cover"]}}

    def advance(s: State) -> dict:
        return {"idx": s["idx"] + 1}

    def more_concerts(s: State) -> str:
        return "plan_concert" if s["idx"] < len(s["concerts"]) else "build_roster"

    def build_roster(s: State) -> dict:
        return {"roster": member_roster.invoke({"season": s["season"]["season"]})}

    def programme_notes(s: State) -> dict:
        rows = [{"no": c["no"], "date": c["date"], "venue": c["venue"], "pieces": p["pieces"]} for c, p in zip(s["concerts"], s["programmes"])]
        return {"notes": ask("notes", "Write one programme-note line per concert.", {"concerts": rows})}

    def layout_leaflet(s: State) -> dict:
        return {"leaflet": {"pages": 2 + len(s["concerts"]) // 2, "lines": len(s["notes"].splitlines())}}

    def validate_season(s: State) -> dict:
        season = s["season"]
        seen = set()
        for c, p in zip(s["concerts"], s["programmes"]):
            slot = VENUES[c["venue"]][1]
            if p["minutes"] > slot:
                raise ValueError(f"concert {c['no']} at {c['venue']}: {p['minutes']} minutes of music for a {slot}-minute slot")
            if p["parts"] < 28:
                raise ValueError(f"concert {c['no']}: only {p['parts']} parts held for 28 players")
            if c["date"].startswith("2026-12") != all(LIBRARY[x][3] == "carols" for x in p["pieces"]):
                raise ValueError(f"concert {c['no']} on {c['date']}: programme {', '.join(p['pieces'])} breaks the carols-in-December rule")
            if VENUES[c["venue"]][0] == "outdoor" and str(c["no"]) not in s["covers"]:
                raise ValueError(f"concert {c['no']} at {c['venue']} on {c['date']} has no wet-weather cover")
            if seen & set(p["pieces"]):
                raise ValueError(f"concert {c['no']}: repeats {', '.join(seen & set(p['pieces']))}")
            seen |= set(p["pieces"])
        extra = sorted(set(s["roster"]) - set(MEMBERS_NOW))
        if extra or len(s["roster"]) < 28:
            raise ValueError(f"{season['season']}: roster lists {', '.join(extra) or 'too few players'} not in the current membership")
        for c in s["concerts"]:
            if f"Concert {c['no']} ({c['date']}," not in s["notes"]:
                raise ValueError(f"programme notes do not give concert {c['no']} on {c['date']}")
        return {"result": "ok"}

    g = StateGraph(State)
    for n, f in (("load_season", load_season), ("draft_themes", draft_themes), ("parse_themes", parse_themes), ("plan_concert", plan_concert),
                 ("outdoor_cover", outdoor_cover), ("advance", advance), ("build_roster", build_roster), ("programme_notes", programme_notes), ("layout_leaflet", layout_leaflet),
                 ("validate_season", validate_season)):
        g.add_node(n, f)
    g.add_edge(START, "load_season")
    g.add_edge("load_season", "draft_themes")
    g.add_edge("draft_themes", "parse_themes")
    g.add_edge("parse_themes", "plan_concert")
    g.add_conditional_edges("plan_concert", venue_route, ["outdoor_cover", "advance"])
    g.add_edge("outdoor_cover", "advance")
    g.add_conditional_edges("advance", more_concerts, ["plan_concert", "build_roster"])
    g.add_edge("build_roster", "programme_notes")
    g.add_edge("programme_notes", "layout_leaflet")
    g.add_edge("layout_leaflet", "validate_season")
    g.add_edge("validate_season", END)
    return g.compile()


def record(server, i: int, path: str) -> None:
    season = make_season(i)
    server.use(brain)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"plan {season['season']}")
    try:
        build(llm).invoke({"season": season}, config={"callbacks": [tracer], "recursion_limit": 80})
    except ValueError:
        pass


CASES = [
    dict(id="zzu_brassband_01", kind="wrong_routing", root=("venue_route", 4), failure=("validate_season", 1), input=2,
         description="The venue router treats only parks as outdoor, so the Abbey Gardens concert skips the wet-weather cover booking."),
    dict(id="zzu_brassband_02", kind="unit_error", root=("check_parts", 5), failure=("validate_season", 1), input=1,
         description="The library tool returns film pieces' playing time in seconds, so the film concert's total far exceeds its slot."),
    dict(id="zzu_brassband_03", kind="hallucinated_value", root=("ChatOpenAI", 6), failure=("validate_season", 1), input=0,
         description="The programme-notes model gives the second concert a date (18 July) that is not in the season calendar it was handed."),
    dict(id="zzu_brassband_04", kind="stale_data", root=("member_roster", 1), failure=("validate_season", 1), input=3,
         description="The roster tool reads last season's export, which still lists a player who has left and misses a new one."),
    dict(id="zzu_brassband_05", kind="off_by_one", root=("parse_themes", 1), failure=("validate_season", 1), input=4,
         description="Theme parsing rotates the list by one, so the carols theme lands on the first concert instead of December's."),
]
REFS = [5, 6, 7, 8]
