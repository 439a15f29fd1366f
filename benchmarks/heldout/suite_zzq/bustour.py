"""Sightseeing bus tour operator: builds one day's itinerary (LangGraph route, ChatOpenAI on the fake server)."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import TypedDict

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

import kit
from _common import chat_model, dumps, last_user, run_graph, system_of

NAME = "citylink-tour-itineraries"
ROUTE = "langgraph"
DOMAIN = "sightseeing bus tour operator: itineraries"
SHAPE = ("intake node (model), a loop over the stops (site-info retriever, opening hours and drive time tools, "
         "routing function), itinerary text (model), ticketing sub-graph (model matches venues, parse, booking "
         "tool per venue), fleet status (tool), coach choice, coach reservation (tool), validator node")
EXT = "jsonl"

SITES = {
    "Roman Baths": dict(id="RB", postcode="BA1 1LZ", hours=("09:00", "18:00"), mon=None, dwell=75, ticket=True),
    "Bath Abbey": dict(id="BATH-ABBEY", postcode="BA1 1LT", hours=("09:30", "17:30"), mon=None, dwell=40, ticket=True),
    "No. 1 Royal Crescent": dict(id="ROYAL-CRES", postcode="BA1 2LR", hours=("10:00", "17:00"), mon=("12:00", "17:00"),
                                 dwell=50, ticket=True),
    "Abbey Gardens": dict(id="ABBEY-GDN", postcode="BA2 4AL", hours=("08:00", "20:00"), mon=None, dwell=25, ticket=False),
    "Prior Park": dict(id="PRIOR-PARK", postcode="BA2 5AH", hours=("10:00", "17:00"), mon=None, dwell=60, ticket=True),
    "Pulteney Bridge": dict(id="PULTENEY", postcode="BA2 4AT", hours=("00:00", "23:59"), mon=None, dwell=20, ticket=False),
    "Holburne Museum": dict(id="HOLBURNE", postcode="BA2 4DB", hours=("10:00", "17:00"), mon=("11:00", "17:00"),
                            dwell=45, ticket=True),
}
OTHER_DOCS = [("Abbey Gardens", "GL20 5RZ", "Tewkesbury abbey grounds; coach drop-off on Church Street."),
              ("Royal Crescent", "BN2 1AN", "Brighton seafront terrace; coach parking on Madeira Drive.")]
VENUES = [{"venue": "RB", "name": "Roman Baths"}, {"venue": "RB-KITCHEN", "name": "Roman Baths Kitchen"},
          {"venue": "BATH-ABBEY", "name": "Bath Abbey"}, {"venue": "BATH-ABBEY-TOWER", "name": "Bath Abbey Tower Tour"},
          {"venue": "ROYAL-CRES", "name": "No. 1 Royal Crescent"}, {"venue": "PRIOR-PARK", "name": "Prior Park"},
          {"venue": "HOLBURNE", "name": "Holburne Museum"}]
FLEET = {"C-33": 33, "C-49": 49, "C-57": 57, "C-70": 70}
CALENDAR = {"2026-06-16": {"C-57": "H-889"}, "2026-06-15": {"C-70": "H-871"}}
SNAPSHOT_DAY = "2026-06-12"

TOURS = [
    dict(tour="T-601", date="2026-06-15", start="09:00", passengers=30,
         stops=["Roman Baths", "No. 1 Royal Crescent", "Bath Abbey", "Pulteney Bridge", "Holburne Museum"]),
    dict(tour="T-602", date="2026-06-16", start="09:30", passengers=52,
         stops=["Bath Abbey", "Abbey Gardens", "Prior Park", "Roman Baths"]),
    dict(tour="T-603", date="2026-06-17", start="09:15", passengers=45,
         stops=["Pulteney Bridge", "Holburne Museum", "Bath Abbey", "Abbey Gardens", "Prior Park"]),
    dict(tour="T-604", date="2026-06-18", start="10:00", passengers=24,
         stops=["Roman Baths", "Abbey Gardens", "Pulteney Bridge", "No. 1 Royal Crescent"]),
    dict(tour="T-605", date="2026-06-15", start="09:00", passengers=49,
         stops=["Abbey Gardens", "Roman Baths", "Bath Abbey", "Prior Park", "Pulteney Bridge"]),
]
INPUTS = [{"tour": t["tour"], "request": "Tour %s on %s from %s for %d passengers plus a guide. Stops: %s." % (
    t["tour"], t["date"], t["start"], t["passengers"], "; ".join(t["stops"]))} for t in TOURS]
BY_TOUR = {t["tour"]: t for t in TOURS}

C_OBO, C_RETR, C_IGN, C_SUB, C_STALE = "zzq-bus-1", "zzq-bus-2", "zzq-bus-3", "zzq-bus-4", "zzq-bus-5"
CASES = [
    dict(id=C_OBO, input=4, kind="off_by_one", root=("choose_coach", 1, "other"), failure=("validate", 1),
         description="choose_coach compares seats with the passengers alone, leaving out the guide, and takes the "
                     "49-seat coach for 49 passengers plus a guide"),
    dict(id=C_RETR, input=2, kind="wrong_retrieval", root=("SiteIndex", 4, "retrieval"), failure=("validate", 1),
         description="the site-info retriever searches the whole regional index and returns Tewkesbury's Abbey "
                     "Gardens, so the itinerary gives the driver a GL20 postcode"),
    dict(id=C_IGN, input=0, kind="tool_ignores_argument", root=("opening_hours", 2, "tool"),
         failure=("validate", 1),
         description="opening_hours ignores the date and returns the usual hours of No. 1 Royal Crescent, which "
                     "opens at 12:00 on Mondays, so the coach arrives before it opens"),
    dict(id=C_SUB, input=3, kind="subagent_wrong_entity", root=("ChatOpenAI", 3, "llm"), failure=("validate", 1),
         description="inside the ticketing sub-graph the model matches the Roman Baths stop to the Roman Baths "
                     "Kitchen venue, and the tickets are booked there"),
    dict(id=C_STALE, input=1, kind="stale_data", root=("fleet_status", 1, "tool"), failure=("validate", 1),
         description="fleet_status answers from the availability snapshot of 12 June, which still shows C-57 "
                     "free on 16 June although it has since gone out on hire H-889"),
]


def _docs() -> list:
    docs = [Document(page_content="%s, %s. %s" % (n, pc, txt), metadata={"name": n, "postcode": pc,
                                                                           "area": pc.split()[0][:2]})
             for n, pc, txt in OTHER_DOCS]
    docs += [Document(page_content="%s, Bath %s. Coach drop-off nearby." % (n, s["postcode"]),
                      metadata={"name": n, "postcode": s["postcode"], "area": "BA"}) for n, s in SITES.items()]
    return docs


class SiteIndex(BaseRetriever):
    area: str = "BA"

    def _get_relevant_documents(self, query: str, *, run_manager=None) -> list:
        docs = _docs()
        if not kit.on(C_RETR):
            docs = [d for d in docs if d.metadata["area"] == self.area]
        words = set(query.lower().split())
        ranked = sorted(docs, key=lambda d: -len(words & set(d.metadata["name"].lower().split())))
        return ranked[:2]


def _mins(t: str) -> int:
    h, m = t.split(":")
    return int(h) * 60 + int(m)


def _hhmm(m: int) -> str:
    return "%02d:%02d" % (m // 60, m % 60)


def _hours_on(name: str, date: str) -> tuple:
    s = SITES[name]
    monday = dt.date.fromisoformat(date).weekday() == 0
    return s["mon"] if monday and s["mon"] else s["hours"]


@tool
def opening_hours(site: str, date: str) -> dict:
    """Opening hours of a site on a date."""
    if kit.on(C_IGN):
        opens, closes = SITES[site]["hours"]
    else:
        opens, closes = _hours_on(site, date)
    return {"site": site, "date": date, "opens": opens, "closes": closes}


@tool
def drive_time(origin: str, destination: str) -> dict:
    """Coach drive time in minutes between two postcodes."""
    minutes = 6 + (sum(map(ord, origin + destination)) % 9)
    return {"from": origin, "to": destination, "minutes": minutes}


@tool
def book_tickets(venue: str, date: str, people: int, arrival: str) -> dict:
    """Books group tickets at a venue."""
    return {"venue": venue, "date": date, "people": people, "slot": arrival, "booking": "TK-%s-%s" % (venue, date[-2:])}


@tool
def fleet_status(date: str) -> dict:
    """Which coaches are free on a date."""
    day = SNAPSHOT_DAY if kit.on(C_STALE) else date
    busy = CALENDAR.get(day, {})
    return {"date": date, "free": [c for c in FLEET if c not in busy], "seats": FLEET}


@tool
def reserve_coach(coach: str, date: str, tour: str) -> dict:
    """Reserves a coach for a tour."""
    return {"coach": coach, "date": date, "tour": tour, "reservation": "CR-%s-%s" % (coach, tour)}


class S(TypedDict, total=False):
    request: dict
    spec: dict
    i: int
    clock: int
    last_postcode: str
    stops: list
    itinerary: str
    tickets: list
    fleet: dict
    coach: str
    reservation: dict


class T(TypedDict, total=False):
    spec: dict
    stops: list
    match_text: str
    matches: list
    tickets: list


def build(llm):
    index = SiteIndex()

    def intake(s: S) -> dict:
        msg = llm.invoke([("system", "You read tour requests. Answer JSON: tour, date, start, passengers, stops."),
                          ("user", s["request"]["request"])])
        spec = json.loads(msg.content)
        return {"spec": spec, "i": 0, "clock": _mins(spec["start"]), "last_postcode": "BA1 1SU", "stops": []}

    def plan_stop(s: S) -> dict:
        name = s["spec"]["stops"][s["i"]]
        doc = index.invoke(name)[0]
        hours = opening_hours.invoke({"site": name, "date": s["spec"]["date"]})
        leg = drive_time.invoke({"origin": s["last_postcode"], "destination": doc.metadata["postcode"]})
        arrive = max(s["clock"] + leg["minutes"], _mins(hours["opens"]))
        leave = arrive + SITES[name]["dwell"]
        stop = {"site": name, "postcode": doc.metadata["postcode"], "arrive": _hhmm(arrive), "leave": _hhmm(leave)}
        return {"stops": s["stops"] + [stop], "clock": leave + 5, "last_postcode": doc.metadata["postcode"],
                "i": s["i"] + 1}

    def more_stops(s: S) -> str:
        return "plan_stop" if s["i"] < len(s["spec"]["stops"]) else "write_itinerary"

    def write_itinerary(s: S) -> dict:
        msg = llm.invoke([("system", "You write the driver's and guide's itinerary sheet, one stop a line."),
                          ("user", dumps({"tour": s["spec"]["tour"], "date": s["spec"]["date"], "stops": s["stops"]}))])
        return {"itinerary": msg.content}

    def match_venues(t: T) -> dict:
        msg = llm.invoke([("system", "You match tour stops to ticketing venues. Answer one line per ticketed stop: "
                                     "'stop -> VENUE-ID'."),
                          ("user", dumps({"stops": [x["site"] for x in t["stops"]], "venues": VENUES}))])
        return {"match_text": msg.content}

    def parse_matches(t: T) -> dict:
        out = []
        for line in t["match_text"].splitlines():
            stop, venue = [x.strip() for x in line.split("->")]
            out.append({"stop": stop, "venue": venue})
        return {"matches": out}

    def book(t: T) -> dict:
        arrivals = {x["site"]: x["arrive"] for x in t["stops"]}
        tickets = [book_tickets.invoke({"venue": m["venue"], "date": t["spec"]["date"],
                                        "people": t["spec"]["passengers"] + 1, "arrival": arrivals[m["stop"]]})
                   for m in t["matches"]]
        return {"tickets": tickets}

    tg = StateGraph(T)
    tg.add_node("match_venues", match_venues)
    tg.add_node("parse_matches", parse_matches)
    tg.add_node("book", book)
    tg.add_edge(START, "match_venues")
    tg.add_edge("match_venues", "parse_matches")
    tg.add_edge("parse_matches", "book")
    tg.add_edge("book", END)
    ticketing_graph = tg.compile()

    def ticketing(s: S) -> dict:
        out = ticketing_graph.invoke({"spec": s["spec"], "stops": s["stops"]})
        return {"tickets": out["tickets"]}

    def check_fleet(s: S) -> dict:
        return {"fleet": fleet_status.invoke({"date": s["spec"]["date"]})}

    def choose_coach(s: S) -> dict:
        need = s["spec"]["passengers"] if kit.on(C_OBO) else s["spec"]["passengers"] + 1
        fits = sorted((s["fleet"]["seats"][c], c) for c in s["fleet"]["free"] if s["fleet"]["seats"][c] >= need)
        return {"coach": fits[0][1]}

    def reserve(s: S) -> dict:
        return {"reservation": reserve_coach.invoke({"coach": s["coach"], "date": s["spec"]["date"],
                                                     "tour": s["spec"]["tour"]})}

    def validate(s: S) -> dict:
        t = BY_TOUR[s["request"]["tour"]]
        for stop in s["stops"]:
            if not stop["postcode"].startswith("BA"):
                raise ValueError("stop %s has postcode %s, outside the BA tour area" % (stop["site"], stop["postcode"]))
            opens, closes = _hours_on(stop["site"], t["date"])
            if _mins(stop["arrive"]) < _mins(opens) or _mins(stop["leave"]) > _mins(closes):
                raise ValueError("%s is open %s-%s on %s; the itinerary has %s-%s" % (
                    stop["site"], opens, closes, t["date"], stop["arrive"], stop["leave"]))
        wanted = sorted(SITES[x]["id"] for x in t["stops"] if SITES[x]["ticket"])
        booked = sorted(k["venue"] for k in s["tickets"])
        if wanted != booked:
            raise ValueError("tickets booked for %s; ticketed stops are %s" % (", ".join(booked), ", ".join(wanted)))
        seats = FLEET[s["coach"]]
        if seats < t["passengers"] + 1:
            raise ValueError("coach %s seats %d; tour %s carries %d passengers and a guide"
                             % (s["coach"], seats, t["tour"], t["passengers"]))
        hire = CALENDAR.get(t["date"], {}).get(s["coach"])
        if hire:
            raise ValueError("coach %s is out on hire %s on %s" % (s["coach"], hire, t["date"]))
        return {}

    g = StateGraph(S)
    for name, fn in [("intake", intake), ("plan_stop", plan_stop), ("write_itinerary", write_itinerary),
                     ("ticketing", ticketing), ("check_fleet", check_fleet), ("choose_coach", choose_coach),
                     ("reserve", reserve), ("validate", validate)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "plan_stop")
    g.add_conditional_edges("plan_stop", more_stops, ["plan_stop", "write_itinerary"])
    g.add_edge("write_itinerary", "ticketing")
    g.add_edge("ticketing", "check_fleet")
    g.add_edge("check_fleet", "choose_coach")
    g.add_edge("choose_coach", "reserve")
    g.add_edge("reserve", "validate")
    g.add_edge("validate", END)
    return g.compile()


def brain(request):
    system = system_of(request)
    user = last_user(request)
    if system.startswith("You read tour requests"):
        t = BY_TOUR[re.search(r"T-\d+", user).group(0)]
        return json.dumps({k: t[k] for k in ("tour", "date", "start", "passengers", "stops")})
    if system.startswith("You write the driver"):
        data = json.loads(user)
        return "\n".join(["Tour %s, %s" % (data["tour"], data["date"])] + [
            "%s-%s %s (%s)" % (x["arrive"], x["leave"], x["site"], x["postcode"]) for x in data["stops"]])
    if system.startswith("You match tour stops"):
        data = json.loads(user)
        lines = []
        for stop in data["stops"]:
            if not SITES[stop]["ticket"]:
                continue
            venue = SITES[stop]["id"]
            if kit.on(C_SUB) and stop == "Roman Baths":
                venue = "RB-KITCHEN"
            lines.append("%s -> %s" % (stop, venue))
        return "\n".join(lines)
    return "I cannot help with that."


def record(server, inp: dict, path: str) -> None:
    server.use(brain)
    graph = build(chat_model(server))
    run_graph(graph, {"request": inp}, path, NAME, "build itinerary for tour %s" % inp["tour"])
