"""Marimba ensemble tours (otlp route): plan-and-execute. A planning model orders the tour's cities,
a parser dates the legs, then each leg runs venue retrieval, a venue pick, a stage check, distance
and freight tools and a model writing the leg's load-in notes; the crew rota, the haulier booking and
a final feasibility check close the plan. Traced with OpenInference + OpenTelemetry, exported as OTLP JSON."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys

from openai import OpenAI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otel_route  # noqa: E402

NAME = "marimba-tour-planner"
ROUTE = "otlp"
DOMAIN = "a marimba ensemble's tours"
SHAPE = "plan-and-execute: planning model + date parser, then per leg (3-5 legs) retriever, pick, stage check, distance tool, freight tool, notes model; crew rota, haulier booking, feasibility check"
SWITCH = None

CITY_XY = {"Lyon": (0, 0), "Geneva": (110, 90), "Milan": (290, 60), "Munich": (520, 380), "Vienna": (870, 420),
           "Zurich": (300, 300), "Basel": (240, 330), "Strasbourg": (260, 480), "Oslo": (900, 1800), "Prague": (780, 620),
           "Ljubljana": (700, 150), "Turin": (230, 20), "Bern": (200, 260)}
VENUES = {
    "Lyon": [("Salle Molière", 9.0), ("Le Périscope", 4.5)], "Geneva": [("Victoria Hall", 11.0), ("AMR Sunset", 4.0)],
    "Milan": [("Teatro Dal Verme", 12.0), ("Blue Note Milano", 4.5)], "Munich": [("Prinzregententheater", 12.5), ("Unterfahrt", 4.0)],
    "Vienna": [("Konzerthaus Mozart-Saal", 10.0), ("Porgy & Bess", 5.0)], "Zurich": [("Tonhalle Kleiner Saal", 8.0), ("Moods", 4.5)],
    "Basel": [("Stadtcasino Hans Huber Saal", 8.5), ("Bird's Eye", 3.5)], "Strasbourg": [("Cité de la Musique", 9.5), ("Le Cheval Blanc", 4.0)],
    "Prague": [("Rudolfinum Suk Hall", 9.0), ("Jazz Dock", 4.5)], "Ljubljana": [("Slovenska filharmonija", 10.0), ("Klub Gromka", 3.5)],
    "Turin": [("Conservatorio Verdi", 9.5), ("Jazz Club Torino", 4.0)], "Bern": [("Casino Bern", 10.0), ("Marians Jazzroom", 4.0)],
}
STAGE_MIN_M = 6.0
TRAVEL_DAY_KM = 450

INPUTS = [
    {"tour": "Spring Alps run", "start": "2027-04-05", "end": "2027-04-10", "marimbas": 5, "home": "Lyon",
     "cities": ["Milan", "Geneva", "Turin", "Bern", "Zurich"]},
    {"tour": "Danube week", "start": "2027-05-03", "end": "2027-05-08", "marimbas": 4, "home": "Lyon",
     "cities": ["Vienna", "Munich", "Prague", "Zurich"]},
    {"tour": "Rhine weekend", "start": "2027-06-11", "end": "2027-06-14", "marimbas": 3, "home": "Lyon",
     "cities": ["Basel", "Strasbourg", "Zurich"]},
    {"tour": "Eastern loop", "start": "2027-09-01", "end": "2027-09-07", "marimbas": 5, "home": "Lyon",
     "cities": ["Ljubljana", "Vienna", "Milan", "Munich", "Turin"]},
    {"tour": "Swiss school concerts", "start": "2027-10-18", "end": "2027-10-23", "marimbas": 2, "home": "Lyon",
     "cities": ["Bern", "Geneva", "Basel", "Zurich", "Milan"]},
]

CASES = [
    {"id": "zzzk-marimba-1", "input": 1, "switch": "visit_in_given_order", "kind": "plan_error",
     "root": ("ChatCompletion", 1), "failure": ("tour_feasibility_check", 1),
     "description": "The planning model keeps the cities in the order the promoter listed them, so the tour doubles back from Prague to Zurich in one 577 km travel day."},
    {"id": "zzzk-marimba-2", "input": 2, "switch": "club_first", "kind": "wrong_retrieval",
     "root": ("venue_search", 2), "failure": ("check_stage", 2),
     "description": "The venue search for the second stop ranks the small jazz club above the concert hall, so a 4.5 m stage is picked for three marimbas."},
    {"id": "zzzk-marimba-3", "input": 3, "switch": "evening_words", "kind": "format_drift",
     "root": ("ChatCompletion", 4), "failure": ("crew_rota", 1),
     "description": "The model's load-in notes for the third stop give the load-in as '2pm' rather than the HH:MM time the other legs use."},
    {"id": "zzzk-marimba-4", "input": 0, "switch": "one_case_quote", "kind": "tool_ignores_argument",
     "root": ("freight_quote", 4), "failure": ("book_haulier", 1),
     "description": "The freight quote for the fourth leg disregards the number of marimbas and quotes van space for one instrument."},
    {"id": "zzzk-marimba-5", "input": 4, "switch": "dates_from_day_two", "kind": "off_by_one",
     "root": ("date_legs", 1), "failure": ("tour_feasibility_check", 1),
     "description": "Dating the legs starts one day after the tour's first day, pushing the last concert past the booked return."},
]


def _km(a, b):
    (x1, y1), (x2, y2) = CITY_XY[a], CITY_XY[b]
    return round(((x1 - x2) ** 2 + (y1 - y2) ** 2) ** 0.5)


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    ask = json.loads(msgs[-1]["content"])
    if system.startswith("Plan"):
        cities, route, here = list(ask["cities"]), [], ask["home"]
        if SWITCH == "visit_in_given_order":
            route = cities
        else:
            while cities:
                nxt = min(cities, key=lambda c: (_km(here, c), c))
                route.append(nxt)
                cities.remove(nxt)
                here = nxt
        return json.dumps({"route": route, "rest_days": 0})
    # leg notes
    hour = 14 if ask["stage_m"] >= 9 else 15
    load_in = f"{hour}:00"
    if SWITCH == "evening_words" and ask["leg"] == 3:
        load_in = "2pm"
    return json.dumps({"city": ask["city"], "load_in": load_in, "soundcheck": f"{hour + 2}:30",
                       "note": f"{ask['marimbas']} marimbas via the loading dock at {ask['venue']}"})


def _search(city, marimbas, leg):
    rows = [{"venue": v, "city": city, "stage_width_m": w, "score": round(0.9 - 0.2 * i, 2)} for i, (v, w) in enumerate(VENUES[city])]
    if SWITCH == "club_first" and leg == 2:
        rows = [{**r, "score": round(1.1 - r["score"], 2)} for r in rows][::-1]
    return rows


def record(inp, path, server):
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    span = otel_route.span
    with otel_route.traced_run(path, "marimba-tours") as tracer:
        try:
            with span(tracer, NAME, "AGENT", inp):
                with span(tracer, "read_tour_request", "CHAIN", inp) as s:
                    req = s.done({"tour": inp["tour"], "home": inp["home"], "cities": inp["cities"], "start": inp["start"],
                                  "end": inp["end"], "marimbas": inp["marimbas"]})
                reply = client.chat.completions.create(model=server.model, messages=[
                    {"role": "system", "content": "Plan the route: order the cities to keep travel short. Answer JSON {route, rest_days}."},
                    {"role": "user", "content": json.dumps({"home": req["home"], "cities": req["cities"]})}])
                with span(tracer, "date_legs", "CHAIN", {"plan": reply.choices[0].message.content, "start": req["start"]}) as s:
                    plan = json.loads(reply.choices[0].message.content)
                    first = dt.date.fromisoformat(req["start"])
                    offset = 1 if SWITCH == "dates_from_day_two" else 0
                    legs = s.done([{"leg": i + 1, "city": c, "date": str(first + dt.timedelta(days=i + offset))}
                                   for i, c in enumerate(plan["route"])])
                prev = req["home"]
                notes, quotes, travel = [], [], []
                for leg in legs:
                    with span(tracer, "venue_search", "RETRIEVER", {"city": leg["city"], "need_stage_m": STAGE_MIN_M}) as s:
                        hits = s.done(_search(leg["city"], req["marimbas"], leg["leg"]))
                    with span(tracer, "pick_venue", "CHAIN", hits) as s:
                        venue = s.done(max(hits, key=lambda h: h["score"]))
                    with span(tracer, "check_stage", "CHAIN", {"venue": venue, "marimbas": req["marimbas"]}) as s:
                        need = STAGE_MIN_M if req["marimbas"] >= 3 else 4.0
                        if venue["stage_width_m"] < need:
                            raise ValueError(f"{venue['venue']} stage {venue['stage_width_m']} m is narrower than the {need} m "
                                             f"{req['marimbas']} marimbas need")
                        s.done({"venue": venue["venue"], "fits": True})
                    with span(tracer, "distance_matrix", "TOOL", {"from": prev, "to": leg["city"]}) as s:
                        hop = s.done({"from": prev, "to": leg["city"], "km": _km(prev, leg["city"])})
                        travel.append(hop)
                    with span(tracer, "freight_quote", "TOOL", {"km": hop["km"], "instruments": req["marimbas"]}) as s:
                        count = req["marimbas"]
                        if SWITCH == "one_case_quote" and leg["leg"] == 4:
                            count = 1
                        q = s.done({"leg": leg["leg"], "volume_m3": round(2.6 * count, 1), "eur": round(180 + 1.1 * hop["km"] * count, 2)})
                        quotes.append(q)
                    reply = client.chat.completions.create(model=server.model, messages=[
                        {"role": "system", "content": "Write the leg's load-in notes as JSON {city, load_in (HH:MM), soundcheck, note}."},
                        {"role": "user", "content": json.dumps({"leg": leg["leg"], "city": leg["city"], "venue": venue["venue"],
                                                                "stage_m": venue["stage_width_m"], "marimbas": req["marimbas"]})}])
                    notes.append(reply.choices[0].message.content)
                    prev = leg["city"]
                with span(tracer, "crew_rota", "TOOL", {"notes": notes}) as s:
                    rota = []
                    for leg, text in zip(legs, notes):
                        load_in = json.loads(text)["load_in"]
                        h, m = load_in.split(":")
                        call = dt.datetime.fromisoformat(leg["date"]).replace(hour=int(h), minute=int(m)) - dt.timedelta(hours=1)
                        rota.append({"city": leg["city"], "crew_call": call.isoformat(timespec="minutes")})
                    s.done(rota)
                with span(tracer, "book_haulier", "TOOL", {"quotes": quotes, "marimbas": req["marimbas"]}) as s:
                    cargo = round(2.6 * req["marimbas"], 1)
                    for q in quotes:
                        if q["volume_m3"] < cargo:
                            raise ValueError(f"van space {q['volume_m3']} m3 booked for leg {q['leg']}, cargo is {cargo} m3")
                    s.done({"haulier": "Transalp Backline", "legs": len(quotes), "eur": round(sum(q["eur"] for q in quotes), 2)})
                with span(tracer, "tour_feasibility_check", "CHAIN", {"legs": legs, "travel": travel, "end": req["end"]}) as s:
                    for hop in travel[1:]:
                        if hop["km"] > TRAVEL_DAY_KM:
                            raise ValueError(f"{hop['from']} to {hop['to']} is {hop['km']} km, over the {TRAVEL_DAY_KM} km travel-day limit")
                    if legs[-1]["date"] >= req["end"]:
                        raise ValueError(f"last concert {legs[-1]['date']} is not before the return on {req['end']}")
                    s.done({"feasible": True, "legs": len(legs)})
        except ValueError:
            pass
