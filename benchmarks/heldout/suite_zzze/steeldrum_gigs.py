"""Steel-drum band gig desk: turns a booking enquiry into a contract (LangGraph route).

Shape: a StateGraph with a typed state: parse enquiry (plain node) -> plan the gig (ChatOpenAI, JSON
parsed in the node) -> conditional router -> venue-rules tool or festival-slot tool -> setlist node
looping a song-catalogue retriever over each set -> fee node -> contract node (tool that checks
the business rules and raises).
"""

from __future__ import annotations

import json
from typing import TypedDict

from common import last_user
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer


NAME = "steeldrum-gig-desk"
ROUTE = "langgraph"
DOMAIN = "steel-drum band's gigs"
SHAPE = "StateGraph: parse -> LLM plan -> conditional router -> venue tool -> retriever loop per set -> fee -> contract tool (~14-20 steps)"

SW = dict.fromkeys(("route_by_size", "short_plan", "minutes_text", "catalog_head", "curfew_any_day"), False)

INPUTS = [
    "Enquiry: wedding reception at Harbour Barn, Saturday 2027-06-12, 120 guests, 3 sets, start 19:30, style calypso",
    "Enquiry: festival stage Riverside Carnival, Sunday 2027-07-04, 2000 guests, 2 sets, start 15:00, style soca",
    "Enquiry: corporate lunch at Mill Quay Hall, Friday 2027-05-21, 60 guests, 1 sets, start 12:30, style jazz",
    "Enquiry: birthday party at Harbour Barn, Wednesday 2027-08-18, 40 guests, 2 sets, start 18:00, style pop",
    "Enquiry: festival stage Seafront Jump Up, Saturday 2027-08-28, 3500 guests, 3 sets, start 16:00, style calypso",
]

SONGS = {
    "calypso": [
        "Pan in A Minor",
        "Rain-O-Rama",
        "Jean and Dinah",
        "Hot Hot Hot",
        "Mary Ann",
        "Island in the Sun",
        "Day-O",
        "Matilda",
        "Sly Mongoose",
        "Brown Skin Gal",
        "Shake Senora",
        "Coconut Woman",
    ],
    "soca": [
        "Tiney Winey",
        "Big Truck",
        "Dollar Wine",
        "Ragga Bunny",
        "Hot Like Fire",
        "Follow the Leader",
        "Bacchanal",
        "Jump and Wave",
        "Advantage",
        "Fog",
        "Savannah Grass",
        "Famalay",
    ],
    "jazz": [
        "Take Five",
        "Blue Bossa",
        "Autumn Leaves",
        "St Thomas",
        "So What",
        "Summertime",
        "Misty",
        "Caravan",
    ],
    "pop": [
        "Dancing Queen",
        "Happy",
        "Valerie",
        "Uptown Funk",
        "Shut Up and Dance",
        "September",
        "Riptide",
        "Shout",
    ],
}
SONG_MIN = 4
CURFEW = {
    "Harbour Barn": {"weekday": "22:00", "Saturday": "23:30"},
    "Mill Quay Hall": {"weekday": "16:00", "Saturday": "23:00"},
}


def policy(request):
    prompt = last_user(request)
    if prompt.startswith("PLAN"):
        e = json.loads(prompt.split("\n", 1)[1])
        sets = e["sets"] - 1 if SW["short_plan"] and e["sets"] > 1 else e["sets"]
        minutes = 45 if e["guests"] < 1000 else 40
        plan = {
            "sets": sets,
            "set_minutes": minutes,
            "break_minutes": 15,
            "pans": 6 if e["guests"] > 100 else 4,
        }
        if SW["minutes_text"]:
            plan["set_minutes"] = f"{minutes} min"
        return json.dumps(plan)
    return "Please send a gig enquiry."


class SongCatalog(BaseRetriever):
    """The band's arranged repertoire, searched by style."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        style, set_no = query.split(" set ")
        set_no = int(set_no)
        songs = SONGS[style]
        picked = [songs[(set_no * 5 + i) % len(songs)] for i in range(12)]
        if SW["catalog_head"]:
            picked = picked[:3]
        return [Document(page_content=s, metadata={"style": style, "minutes": SONG_MIN}) for s in picked]


@tool
def venue_rules(venue: str, weekday: str) -> dict:
    """Noise curfew and load-in rules for a venue on a given weekday."""
    rules = CURFEW[venue]
    day = "weekday" if SW["curfew_any_day"] else weekday
    curfew = rules.get(day, rules["weekday"])
    return {"venue": venue, "curfew": curfew, "load_in_minutes": 45}


@tool
def festival_slot(event: str, date: str) -> dict:
    """Stage slot the festival has allocated to the band."""
    return {"event": event, "stage": "Main", "slot_minutes": 150, "curfew": "22:00"}


@tool
def issue_contract(enquiry: dict, plan: dict, rules: dict, setlist: list, fee: dict) -> str:
    """Check the gig against the band's booking rules and issue the contract."""
    if enquiry["kind"] == "festival" and "stage" not in rules:
        raise ValueError(f"festival booking {enquiry['venue']} has no stage slot allocated")
    played = len(setlist) * SONG_MIN
    booked = plan["sets"] * plan["set_minutes"]
    if plan["sets"] != enquiry["sets"]:
        raise ValueError(f"contract lists {plan['sets']} sets but the client booked {enquiry['sets']}")
    if played < booked:
        raise ValueError(f"setlist covers {played} minutes, {booked} minutes booked")
    h, m = map(int, enquiry["start"].split(":"))
    end = h * 60 + m + booked + (plan["sets"] - 1) * plan["break_minutes"]
    ch, cm = map(int, rules["curfew"].split(":"))
    if end > ch * 60 + cm:
        raise ValueError(
            f"last set ends at {end // 60:02d}:{end % 60:02d}, after the {rules['curfew']} curfew at {enquiry['venue']}"
        )
    return f"Contract issued: {enquiry['venue']} {enquiry['date']}, fee {fee['total_gbp']} GBP"


class Gig(TypedDict, total=False):
    text: str
    enquiry: dict
    plan: dict
    rules: dict
    setlist: list
    fee: dict
    contract: str


def build(llm):
    catalog = SongCatalog()

    def read_enquiry(state: Gig) -> dict:
        text = state["text"].removeprefix("Enquiry: ")
        parts = [p.strip() for p in text.split(",")]
        what, venue = (
            parts[0].split(" at ") if " at " in parts[0] else (parts[0], parts[0].split("stage ")[1])
        )
        weekday, date = parts[1].split(" ")
        return {
            "enquiry": {
                "kind": "festival" if what.startswith("festival") else "private",
                "venue": venue.strip(),
                "weekday": weekday,
                "date": date,
                "guests": int(parts[2].split()[0]),
                "sets": int(parts[3].split()[0]),
                "start": parts[4].split()[1],
                "style": parts[5].split()[1],
            }
        }

    def plan_gig(state: Gig) -> dict:
        e = state["enquiry"]
        msg = llm.invoke(
            [
                ("system", "Plan a steel-drum gig. Answer JSON with sets, set_minutes, break_minutes, pans."),
                ("user", "PLAN\n" + json.dumps(e)),
            ]
        )
        return {"plan": json.loads(msg.content)}

    def route_gig(state: Gig) -> str:
        e = state["enquiry"]
        if SW["route_by_size"]:
            return "festival_booking" if e["guests"] > 2500 else "private_booking"
        return "festival_booking" if e["kind"] == "festival" else "private_booking"

    def private_booking(state: Gig) -> dict:
        e = state["enquiry"]
        if e["venue"] not in CURFEW:
            return {"rules": {"venue": e["venue"], "curfew": "23:00", "load_in_minutes": 60}}
        return {"rules": venue_rules.invoke({"venue": e["venue"], "weekday": e["weekday"]})}

    def festival_booking(state: Gig) -> dict:
        e = state["enquiry"]
        return {"rules": festival_slot.invoke({"event": e["venue"], "date": e["date"]})}

    def build_setlist(state: Gig) -> dict:
        e, p = state["enquiry"], state["plan"]
        songs_per_set = p["set_minutes"] // SONG_MIN + 1
        setlist = []
        for n in range(1, p["sets"] + 1):
            docs = catalog.invoke(f"{e['style']} set {n}")
            setlist.extend(d.page_content for d in docs[:songs_per_set])
        return {"setlist": setlist}

    def price_gig(state: Gig) -> dict:
        p = state["plan"]
        players = p["pans"] + 2
        hours = p["sets"] * p["set_minutes"] / 60
        return {
            "fee": {
                "players": players,
                "hours": round(hours, 2),
                "total_gbp": round(players * 55 * max(hours, 1.5) + 120),
            }
        }

    def contract(state: Gig) -> dict:
        return {
            "contract": issue_contract.invoke(
                {
                    "enquiry": state["enquiry"],
                    "plan": state["plan"],
                    "rules": state["rules"],
                    "setlist": state["setlist"],
                    "fee": state["fee"],
                }
            )
        }

    g = StateGraph(Gig)
    for fn in (read_enquiry, plan_gig, private_booking, festival_booking, build_setlist, price_gig, contract):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "read_enquiry")
    g.add_edge("read_enquiry", "plan_gig")
    g.add_conditional_edges("plan_gig", route_gig, ["private_booking", "festival_booking"])
    g.add_edge("private_booking", "build_setlist")
    g.add_edge("festival_booking", "build_setlist")
    g.add_edge("build_setlist", "price_gig")
    g.add_edge("price_gig", "contract")
    g.add_edge("contract", END)
    return g.compile()


_graphs: dict = {}


def record(inp: str, server, dest: str) -> None:
    if server.base_url not in _graphs:
        llm = ChatOpenAI(
            base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0
        )
        _graphs[server.base_url] = build(llm)
    tracer = TrajdebugTracer(path=dest, name=NAME, task=inp)
    try:
        _graphs[server.base_url].invoke({"text": inp}, config={"callbacks": [tracer]})
    except Exception:  # noqa: BLE001  (the recorded run keeps the failure; the generator checks it)
        pass


CASES = [
    {
        "id": "drum_size_route",
        "input": 1,
        "switch": "route_by_size",
        "fault_kind": "wrong_routing",
        "root": ("route_gig", 1, "other"),
        "failure": ("issue_contract", 1),
        "description": "The router sends the carnival stage booking down the private-venue branch because it goes by crowd size, so no stage slot is ever allocated.",
    },
    {
        "id": "drum_short_plan",
        "input": 4,
        "switch": "short_plan",
        "fault_kind": "plan_error",
        "root": ("ChatOpenAI", 1, "llm"),
        "failure": ("issue_contract", 1),
        "description": "The model plans two sets for a client who booked three.",
    },
    {
        "id": "drum_minutes_text",
        "input": 0,
        "switch": "minutes_text",
        "fault_kind": "format_drift",
        "root": ("ChatOpenAI", 1, "llm"),
        "failure": ("build_setlist", 1),
        "description": "The plan gives set_minutes as the text '45 min' instead of a number, and the setlist arithmetic cannot use it.",
    },
    {
        "id": "drum_catalog_head",
        "input": 3,
        "switch": "catalog_head",
        "fault_kind": "truncated_result",
        "root": ("SongCatalog", 1, "retrieval"),
        "failure": ("issue_contract", 1),
        "description": "The song catalogue search returns only its first three songs for each set, leaving the sets too short.",
    },
    {
        "id": "drum_curfew_day",
        "input": 0,
        "switch": "curfew_any_day",
        "fault_kind": "tool_ignores_argument",
        "root": ("venue_rules", 1, "tool"),
        "failure": ("issue_contract", 1),
        "description": "The venue rules lookup ignores the weekday it is given and answers the weekday curfew for a Saturday wedding.",
    },
]
