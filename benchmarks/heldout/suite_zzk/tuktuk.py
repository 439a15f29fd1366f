"""Tuk-tuk city tours: a tour-planning agent traced with OpenTelemetry (route: otlp).

Reads the booking, has a model turn the customer's interests into search queries, searches the
points of interest (a retriever, retried on timeouts), has a model pick the stops, runs a
route sub-agent (one distance call per leg, a total) and a fleet-desk sub-agent (roster, a model
picks the driver, assignment), has a model write the timed itinerary, parses it, prices the
tour and checks it against the operator's rules.  Spans carry OpenInference attributes; the
OpenAI client is instrumented by openinference-instrumentation-openai.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import common
import kit
from openai import OpenAI


NAME = "tuktuk-tour-planner"
ROUTE = "otlp"
DOMAIN = "tuk-tuk city tours"
SHAPE = (
    "OTLP spans: booking tool, model writes queries + parser, POI retriever per query (retry on timeout), "
    "model picks stops, route sub-agent (distance tool per leg, total), fleet sub-agent (roster tool, model "
    "picks driver, assignment tool), model writes the itinerary + parser, pricing, validator"
)

BATTERY_RANGE_KM = 60.0
WINDOW_END = {"09:30": "13:30", "10:00": "14:00", "14:00": "18:00", "15:00": "19:00", "16:30": "20:30"}

# point of interest: (id, name, city, tags, minutes, entry fee EUR, x km, y km from the city's centre)
POIS = [
    ("LIS-01", "Sé de Lisboa", "Lisbon", ["cathedral", "church"], 25, 5.0, 0.4, 0.3),
    ("LIS-02", "Castelo de São Jorge", "Lisbon", ["castle", "viewpoints"], 45, 15.0, 0.8, 0.7),
    ("LIS-03", "Miradouro da Senhora do Monte", "Lisbon", ["viewpoints"], 15, 0.0, 1.2, 1.4),
    ("LIS-04", "Museu Nacional do Azulejo", "Lisbon", ["tiles", "museum"], 50, 8.0, 3.6, 2.2),
    ("LIS-05", "Alfama fado houses", "Lisbon", ["fado", "music"], 30, 0.0, 0.9, 0.2),
    ("LIS-06", "Mosteiro dos Jerónimos", "Lisbon", ["monastery", "church"], 60, 12.0, -6.4, -0.8),
    ("LIS-07", "LX Factory", "Lisbon", ["street art", "markets"], 40, 0.0, -3.9, -0.6),
    ("LIS-08", "Miradouro de Santa Luzia", "Lisbon", ["viewpoints", "tiles"], 15, 0.0, 0.6, 0.4),
    ("POR-01", "Sé do Porto", "Porto", ["cathedral", "church", "tiles"], 30, 3.0, 0.1, 0.2),
    ("POR-02", "São Bento station tiles", "Porto", ["tiles", "station"], 20, 0.0, 0.2, 0.1),
    ("POR-03", "Ribeira", "Porto", ["viewpoints", "river"], 30, 0.0, 0.3, -0.4),
    ("POR-04", "Livraria Lello", "Porto", ["books", "architecture"], 30, 10.0, -0.4, 0.3),
    ("POR-05", "Torre dos Clérigos", "Porto", ["viewpoints", "church"], 35, 8.0, -0.3, 0.2),
    ("POR-06", "Casa da Música", "Porto", ["music", "architecture"], 40, 12.0, -2.6, 1.9),
]
REVIEWS = {
    "LIS-01": 31877,
    "LIS-02": 96412,
    "LIS-03": 12290,
    "LIS-04": 18833,
    "LIS-05": 7410,
    "LIS-06": 88120,
    "LIS-07": 40315,
    "LIS-08": 22904,
    "POR-01": 48210,
    "POR-02": 30150,
    "POR-03": 61004,
    "POR-04": 52977,
    "POR-05": 57321,
    "POR-06": 14208,
}
PRICE_LIST = {p[0]: p[5] for p in POIS}
DEPOT = {"Lisbon": (0.0, 0.0), "Porto": (0.0, 0.0)}

DRIVERS = {"Lisbon": ["Rui Matos", "Inês Carvalho", "Bruno Teles"], "Porto": ["Sofia Pinto", "Tiago Reis"]}


def _booking(
    ref: str, city: str, day: str, start: str, group: int, interests: list[str], customer: str, other: str
) -> dict[str, Any]:
    return {
        "booking": ref,
        "city": city,
        "date": day,
        "start": start,
        "group": group,
        "interests": interests,
        "customer": customer,
        "note": f"Hi! We'd love to see {', '.join(interests)}.",
        "other_booking": other,
    }


INPUTS: dict[str, dict[str, Any]] = {
    "ferreira": _booking(
        "TT-5511",
        "Lisbon",
        "2026-05-15",
        "14:00",
        4,
        ["cathedral", "viewpoints", "fado"],
        "Ana Ferreira",
        "TT-5512",
    ),
    "lindqvist": _booking(
        "TT-5520",
        "Lisbon",
        "2026-05-16",
        "10:00",
        3,
        ["tiles", "castle", "viewpoints"],
        "Erik Lindqvist",
        "TT-5521",
    ),
    "osei": _booking(
        "TT-5527",
        "Lisbon",
        "2026-05-17",
        "09:30",
        2,
        ["monastery", "street art", "tiles"],
        "Kwame Osei",
        "TT-5528",
    ),
    "moreau": _booking(
        "TT-5530", "Porto", "2026-05-18", "15:00", 5, ["tiles", "books", "river"], "Claire Moreau", "TT-5531"
    ),
    "tanaka": _booking(
        "TT-5534",
        "Lisbon",
        "2026-05-19",
        "14:00",
        4,
        ["castle", "fado", "cathedral"],
        "Yuki Tanaka",
        "TT-5535",
    ),
    "brennan": _booking(
        "TT-5501",
        "Lisbon",
        "2026-05-11",
        "10:00",
        2,
        ["castle", "viewpoints", "fado"],
        "Siobhan Brennan",
        "TT-5502",
    ),
    "novak": _booking(
        "TT-5504",
        "Porto",
        "2026-05-12",
        "14:00",
        3,
        ["cathedral", "architecture", "river"],
        "Petra Novak",
        "TT-5505",
    ),
    "garcia": _booking(
        "TT-5507",
        "Lisbon",
        "2026-05-13",
        "16:30",
        6,
        ["tiles", "cathedral", "markets"],
        "Lucía García",
        "TT-5508",
    ),
    "ahmed": _booking(
        "TT-5509",
        "Lisbon",
        "2026-05-14",
        "09:30",
        2,
        ["church", "museum", "viewpoints"],
        "Omar Ahmed",
        "TT-5510",
    ),
}
REFS = ["brennan", "novak", "garcia", "ahmed"]

CASES = [
    {
        "id": "tuktuk-search",
        "input": "ferreira",
        "kind": "wrong_retrieval",
        "root": ("poi_search", 1),
        "failure": ("validate_tour", 1),
        "description": "The POI search for 'cathedral' ranks the whole index and returns Sé do Porto first, so a "
        "Porto stop ends up on a Lisbon tour.",
    },
    {
        "id": "tuktuk-fees",
        "input": "lindqvist",
        "kind": "hallucinated_value",
        "root": ("ChatCompletion", 2),
        "failure": ("validate_tour", 1),
        "description": "The stop-picking model states an entry fee of EUR 10.00 for Castelo de São Jorge, a figure "
        "none of its candidates hold (the search gave EUR 15.00).",
    },
    {
        "id": "tuktuk-metres",
        "input": "osei",
        "kind": "unit_error",
        "root": ("sum_route", 1),
        "failure": ("validate_tour", 1),
        "description": "sum_route divides the legs' metres by 100 instead of 1000, so a 21.3 km route reads as 213.2 km, "
        "past the tuk-tuk's 60 km battery range.",
    },
    {
        "id": "tuktuk-driver",
        "input": "moreau",
        "kind": "subagent_wrong_entity",
        "root": ("ChatCompletion", 3),
        "failure": ("validate_tour", 1),
        "description": "The fleet desk's model assigns the driver to the customer's other booking TT-5531 instead "
        "of TT-5530, so this tour's assignment is for another booking.",
    },
    {
        "id": "tuktuk-times",
        "input": "tanaka",
        "kind": "format_drift",
        "root": ("ChatCompletion", 4),
        "failure": ("validate_tour", 1),
        "description": "The itinerary model switches to 12-hour times ('3:55 pm') after the second stop, and the "
        "lenient parser reads them as 03:55, outside the 14:00-18:00 tour window.",
    },
]


# -- the scripted model ---------------------------------------------------------------------------------------------


def brain(request: Any) -> str:
    system, prompt = common.system_text(request), common.last_user(request)
    if system.startswith("You turn tour requests"):
        note = prompt.split("Note: ", 1)[1]
        interests = note.split("see ", 1)[1].rstrip(".!").split(", ")
        return "\n".join(f"- {i}" for i in interests)
    if system.startswith("You pick tour stops"):
        groups = common.payload(prompt, "CANDIDATES")
        stops, seen = [], set()
        for group in groups:
            pick = next((c for c in group["results"] if c["id"] not in seen), None)
            if pick is None:
                continue
            seen.add(pick["id"])
            fee = pick["entry_fee_eur"]
            if kit.on("tuktuk-fees") and pick["id"] == "LIS-02":
                fee = 10.0
            stops.append(
                {"poi": pick["id"], "name": pick["name"], "minutes": pick["minutes"], "entry_fee_eur": fee}
            )
        return json.dumps({"stops": stops})
    if system.startswith("You assign drivers"):
        roster, booking = common.payload(prompt, "ROSTER"), common.payload(prompt, "BOOKING")
        busy = {a["driver"] for a in roster["assignments"] if a["date"] == booking["date"]}
        driver = next(d for d in roster["drivers"] if d not in busy)
        target = booking["booking"]
        if kit.on("tuktuk-driver"):
            target = next(b["booking"] for b in roster["open_bookings"] if b["booking"] != booking["booking"])
        return json.dumps({"booking": target, "driver": driver})
    if system.startswith("You write tour itineraries"):
        plan = common.payload(prompt, "PLAN")
        h, m = map(int, plan["start"].split(":"))
        t = h * 60 + m + 10
        lines = []
        for k, stop in enumerate(plan["stops"]):
            hh, mm = divmod(t, 60)
            stamp = f"{hh:02d}:{mm:02d}"
            if kit.on("tuktuk-times") and k >= 2:
                stamp = f"{hh - 12 if hh > 12 else hh}:{mm:02d} {'pm' if hh >= 12 else 'am'}"
            lines.append(f"{stamp} {stop['name']} ({stop['minutes']} min)")
            t += stop["minutes"] + 15
        return "\n".join(lines)
    return ""


# -- the agent ------------------------------------------------------------------------------------------------------

OT = common.Otlp(NAME)
client: OpenAI | None = None
_search_calls: dict[str, int] = {}


def _ask(system: str, prompt: str) -> str:
    reply = client.chat.completions.create(
        model=common.MODEL,
        temperature=0,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
    )
    return reply.choices[0].message.content


def _poi(p: tuple) -> dict[str, Any]:
    return {"id": p[0], "name": p[1], "city": p[2], "tags": p[3], "minutes": p[4], "entry_fee_eur": p[5]}


class SearchTimeout(Exception):
    pass


def poi_search(city: str, query: str) -> list[dict[str, Any]]:
    for attempt in (1, 2, 3):
        try:
            with OT.span(
                "poi_search",
                "RETRIEVER",
                {"city": city, "query": query, "top_k": 3},
                **{"retry.attempt": attempt},
            ) as s:
                _search_calls[query] = _search_calls.get(query, 0) + 1
                if query == "viewpoints" and _search_calls[query] == 1:
                    raise SearchTimeout("POI index did not answer within 2 s")
                pool = POIS if kit.on("tuktuk-search") else [p for p in POIS if p[2] == city]
                ranked = sorted((p for p in pool if query in p[3]), key=lambda p: (-REVIEWS[p[0]], p[0]))
                hits = [_poi(p) for p in ranked[:3]]
                return s.output(hits)
        except SearchTimeout:
            continue
    return []


def leg_distance(origin: str, dest: str, a: tuple, b: tuple) -> int:
    with OT.span("leg_distance", "TOOL", {"from": origin, "to": dest}, **{"tool.name": "leg_distance"}) as s:
        metres = round((abs(a[0] - b[0]) + abs(a[1] - b[1])) * 1000 * 1.3)
        return s.output({"from": origin, "to": dest, "metres": metres})["metres"]


def route_optimizer(city: str, stops: list[dict[str, Any]]) -> dict[str, Any]:
    with OT.span("route_optimizer", "AGENT", {"city": city, "stops": [s["poi"] for s in stops]}) as agent:
        where = {p[0]: (p[6], p[7]) for p in POIS}
        points = (
            [("depot", DEPOT[city])] + [(s["poi"], where[s["poi"]]) for s in stops] + [("depot", DEPOT[city])]
        )
        legs = [
            leg_distance(points[i][0], points[i + 1][0], points[i][1], points[i + 1][1])
            for i in range(len(points) - 1)
        ]
        with OT.span("sum_route", "CHAIN", {"legs_m": legs}) as s:
            per_km = 100 if kit.on("tuktuk-metres") else 1000
            route = s.output({"legs": len(legs), "km": round(sum(legs) / per_km, 2)})
        return agent.output(route)


def fleet_desk(booking: dict[str, Any]) -> dict[str, Any]:
    with OT.span("fleet_desk", "AGENT", {"booking": booking["booking"], "date": booking["date"]}) as agent:
        with OT.span("roster_lookup", "TOOL", {"city": booking["city"], "date": booking["date"]}) as s:
            roster = s.output(
                {
                    "drivers": DRIVERS[booking["city"]],
                    "assignments": [
                        {"booking": "TT-4990", "driver": DRIVERS[booking["city"]][0], "date": booking["date"]}
                    ],
                    "open_bookings": [
                        {"booking": booking["booking"], "date": booking["date"]},
                        {
                            "booking": booking["other_booking"],
                            "date": booking["date"][:-2] + f"{int(booking['date'][-2:]) + 1:02d}",
                        },
                    ],
                }
            )
        answer = json.loads(
            _ask(
                "You assign drivers to tuk-tuk bookings; answer with JSON.",
                f"BOOKING: {json.dumps({'booking': booking['booking'], 'date': booking['date']})}\n"
                f"ROSTER: {json.dumps(roster)}",
            )
        )
        with OT.span("assign_driver", "TOOL", answer) as s:
            day = next(b["date"] for b in roster["open_bookings"] if b["booking"] == answer["booking"])
            assignment = s.output(
                {
                    "assignment": f"DA-{answer['booking'][3:]}",
                    "booking": answer["booking"],
                    "driver": answer["driver"],
                    "date": day,
                }
            )
        return agent.output(assignment)


def _minutes(stamp: str) -> int:
    return int(stamp[:2]) * 60 + int(stamp[3:5])


def plan_tour(ref: str) -> dict[str, Any]:
    with OT.span("read_booking", "TOOL", {"booking": ref}, **{"tool.name": "read_booking"}) as s:
        booking = s.output(dict(next(b for b in INPUTS.values() if b["booking"] == ref)))
    text = _ask(
        "You turn tour requests into search queries, one per line.",
        f"City: {booking['city']}\nNote: {booking['note']}",
    )
    with OT.span("parse_queries", "CHAIN", text) as s:
        queries = s.output([line[2:].strip() for line in text.splitlines() if line.startswith("- ")])
    candidates = [{"query": q, "results": poi_search(booking["city"], q)} for q in queries]
    picked = json.loads(
        _ask(
            "You pick tour stops from search results; answer with JSON.",
            f"Group of {booking['group']}, start {booking['start']}.\nCANDIDATES: {json.dumps(candidates)}",
        )
    )
    stops = picked["stops"]
    route = route_optimizer(booking["city"], stops)
    assignment = fleet_desk(booking)
    itinerary = _ask(
        "You write tour itineraries: one line per stop, time first.",
        f"PLAN: {json.dumps({'start': booking['start'], 'stops': stops})}",
    )
    with OT.span("parse_itinerary", "CHAIN", itinerary) as s:
        timed = []
        for line in itinerary.splitlines():
            m = re.match(r"(\d{1,2}):(\d{2})\s*(?:[ap]m\s+)?(.+?) \(\d+ min\)$", line)
            timed.append({"time": f"{int(m.group(1)):02d}:{m.group(2)}", "stop": m.group(3)})
        s.output(timed)
    with OT.span("price_tour", "CHAIN", {"stops": stops, "km": route["km"], "group": booking["group"]}) as s:
        fees = sum(st["entry_fee_eur"] for st in stops) * booking["group"]
        fare = s.output(
            {
                "base_eur": 95.0,
                "distance_eur": round(route["km"] * 1.2, 2),
                "entry_fees_eur": fees,
                "total_eur": round(95.0 + route["km"] * 1.2 + fees, 2),
            }
        )
    tour = {
        "booking": booking["booking"],
        "city": booking["city"],
        "date": booking["date"],
        "start": booking["start"],
        "stops": stops,
        "timed": timed,
        "route": route,
        "assignment": assignment,
        "fare": fare,
    }
    with OT.span("validate_tour", "CHAIN", tour):
        validate_tour(tour)
    return tour


def validate_tour(tour: dict[str, Any]) -> None:
    city_of = {p[0]: p[2] for p in POIS}
    for stop in tour["stops"]:
        if city_of[stop["poi"]] != tour["city"]:
            raise ValueError(
                f"tour {tour['booking']} stops at {stop['name']} ({stop['poi']}), which is in "
                f"{city_of[stop['poi']]}, not {tour['city']}"
            )
    for stop in tour["stops"]:
        if stop["entry_fee_eur"] != PRICE_LIST[stop["poi"]]:
            raise ValueError(
                f"tour {tour['booking']} charges EUR {stop['entry_fee_eur']:.2f} entry at "
                f"{stop['name']}; the price list says EUR {PRICE_LIST[stop['poi']]:.2f}"
            )
    if tour["route"]["km"] > BATTERY_RANGE_KM:
        raise ValueError(
            f"tour {tour['booking']} route is {tour['route']['km']} km, past the {BATTERY_RANGE_KM:.0f} km "
            f"battery range"
        )
    a = tour["assignment"]
    if a["booking"] != tour["booking"] or a["date"] != tour["date"]:
        raise ValueError(
            f"driver assignment {a['assignment']} is for booking {a['booking']} on {a['date']}; this "
            f"tour is {tour['booking']} on {tour['date']}"
        )
    start, end = _minutes(tour["start"]), _minutes(WINDOW_END[tour["start"]])
    for t in tour["timed"]:
        if not start <= _minutes(t["time"]) <= end:
            raise ValueError(
                f"tour {tour['booking']} reaches {t['stop']} at {t['time']}, outside the "
                f"{tour['start']}-{WINDOW_END[tour['start']]} window"
            )


def record(server: Any, key: str, path: Path) -> None:
    global client
    server.use(brain)
    _search_calls.clear()
    OT.exporter.clear()
    ref = INPUTS[key]["booking"]
    with OT.instrumented():
        client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        try:
            with OT.span(NAME, "AGENT", {"booking": ref}, **{"session.id": f"desk-{ref}"}) as root:
                root.output(plan_tour(ref))
        except ValueError:
            pass
        client.close()
    OT.write(path)
