"""A puppeteer's touring shows, traced with OpenTelemetry: a model plans the dates (OpenInference span of the
instrumented openai client), then a long loop over the venues (venue lookup, stage fit, travel leg, ferry timetable
retried after a dropped connection, hotel search, tour-log write), lorry booking, venue confirmations, a model
writes the tour-book intro and the tour book's own check closes the run. Exported as OTLP JSON."""
from __future__ import annotations

import json
from datetime import date, timedelta

from suite_common import chat, client, last_user, otlp, otlp_write, set_output, span_attrs

RUN_NAME = "puppet-tour-planner"
ROUTE = "otlp"
DOMAIN = "puppeteer's touring shows"
SHAPE = ("~40-60 spans: model plans the dates, schedule parse, night plan, then per venue a lookup, stage fit, "
         "travel leg, ferry timetable (2 attempts) inside a sailings step on island legs, hotel search and a tour-log "
         "write; lorry booking, a confirmation per venue, model intro, tour-book check")

SWITCHES = ["NIGHTS_SHORT", "VENUE_CACHE", "FERRY_DEFAULT", "HOTEL_ANY_ACCESS", "TWELVE_HOUR"]
NIGHTS_SHORT = VENUE_CACHE = FERRY_DEFAULT = HOTEL_ANY_ACCESS = TWELVE_HOUR = False

VENUES = {
    "Inverness": ("Eden Court Studio", 8.5), "Ullapool": ("Macphail Centre", 8.0), "Stornoway": ("An Lanntair", 9.0),
    "Oban": ("Corran Halls", 10.0), "Mull": ("Aros Hall", 8.0), "Fort William": ("Nevis Centre", 12.0),
    "Perth": ("Perth Theatre Studio", 9.5), "Kirkwall": ("Pickaquoy Centre", 11.0), "Thurso": ("Thurso Library Hall", 7.4),
    "Aberdeen": ("Lemon Tree", 8.6), "Dundee": ("Rep Studio", 9.0), "Stirling": ("Macrobert Studio", 8.8),
    "Skye": ("Aros Centre", 8.4), "Mallaig": ("Mallaig Hall", 8.0), "Elgin": ("Elgin Town Hall", 10.5),
}
CACHED = {"Oban": ("Corran Halls", 10.0), "Stornoway": ("An Lanntair", 9.0), "Thurso": ("Thurso Library Hall", 9.4)}
CURRENT_STAGE = dict(VENUES)
FERRY = {frozenset(("Ullapool", "Stornoway")): ("Ullapool", ["09:30", "14:00"]),
         frozenset(("Oban", "Mull")): ("Oban", ["07:45", "11:00", "16:00"]),
         frozenset(("Thurso", "Kirkwall")): ("Scrabster", ["08:45", "19:00"]),
         frozenset(("Mallaig", "Skye")): ("Mallaig", ["10:10", "12:40"])}
KM = 120
HOTELS = {c: [{"hotel": f"{c} Arms", "step_free": False}, {"hotel": f"{c} Lodge", "step_free": True}] for c in VENUES}
SET_WIDTH_M = 8.0
COMPACT_SET_M = 6.0

INPUTS = [
    {"tour": "PT-71", "show": "The Lantern Fox", "start": "2027-03-04", "step_free": True,
     "cities": ["Inverness", "Ullapool", "Stornoway", "Oban", "Mull", "Fort William"]},
    {"tour": "PT-72", "show": "Selkie Tide", "start": "2027-04-10", "step_free": False,
     "cities": ["Perth", "Thurso", "Kirkwall", "Aberdeen", "Dundee"]},
    {"tour": "PT-73", "show": "The Clockmaker's Bird", "start": "2027-05-02", "step_free": True,
     "cities": ["Stirling", "Fort William", "Mallaig", "Skye", "Inverness", "Elgin", "Aberdeen"]},
    {"tour": "PT-74", "show": "Ferry Tales", "start": "2027-06-12", "step_free": False,
     "cities": ["Oban", "Mull", "Fort William", "Inverness", "Thurso", "Kirkwall"]},
    {"tour": "PT-75", "show": "Moonlight Loom", "start": "2027-09-18", "step_free": True,
     "cities": ["Dundee", "Perth", "Stirling", "Oban", "Mull"]},
]


def policy(request):
    prompt = last_user(request)
    if prompt.startswith("Plan the show dates"):
        t = json.loads(prompt.split("\n", 1)[1])
        d0 = date.fromisoformat(t["start"])
        out = []
        for i, c in enumerate(t["cities"]):
            time = "14:30" if i % 3 == 2 else "19:30"
            if TWELVE_HOUR and i == 3:
                time = "7:30pm"
            out.append({"city": c, "date": (d0 + timedelta(days=i)).isoformat(), "show_time": time})
        return json.dumps({"schedule": out})
    if prompt.startswith("Write the tour-book intro"):
        t = json.loads(prompt.split("\n", 1)[1])
        return f"{t['show']} tours {len(t['cities'])} towns from {t['first']} to {t['last']}."
    return "ok"


def record(inp, path, server):
    server.use(policy)
    provider, _ = otlp()
    tracer = provider.get_tracer("puppet-tour-planner")
    cl = client(server)
    log: dict = {}
    attempts = {"n": 0}

    def tool_span(name, args):
        return tracer.start_as_current_span(name, attributes=span_attrs("TOOL", args, **{"tool.name": name}))

    try:
        with tracer.start_as_current_span(RUN_NAME, attributes=span_attrs("AGENT", inp, **{"agent.name": RUN_NAME})):
            text = chat(cl, server, [{"role": "system", "content": "You plan a touring puppet company's dates: one town a day, HH:MM show times."},
                                     {"role": "user", "content": "Plan the show dates:\n" + json.dumps(inp)}]).content
            with tracer.start_as_current_span("parse_schedule", attributes=span_attrs("CHAIN", text)) as sp:
                schedule = json.loads(text)["schedule"]
                set_output(sp, schedule)
            with tracer.start_as_current_span("night_plan", attributes=span_attrs("CHAIN", {"shows": len(schedule)})) as sp:
                count = len(schedule) - 1 if NIGHTS_SHORT else len(schedule)
                nights = [{"city": schedule[i]["city"], "night": schedule[i]["date"]} for i in range(count)]
                set_output(sp, nights)
            stays, legs, venues = [], [], []
            for i, stop in enumerate(schedule):
                city = stop["city"]
                with tool_span("venue_lookup", {"city": city}) as sp:
                    name, width = CACHED[city] if (VENUE_CACHE and city in CACHED) else VENUES[city]
                    v = {"city": city, "venue": name, "stage_width_m": width}
                    venues.append(v)
                    set_output(sp, v)
                with tracer.start_as_current_span("stage_fit", attributes=span_attrs("CHAIN", {"venue": v["venue"], "stage_width_m": width})) as sp:
                    v["set_m"] = SET_WIDTH_M if width >= SET_WIDTH_M else COMPACT_SET_M
                    set_output(sp, {"set": "full" if v["set_m"] == SET_WIDTH_M else "compact", "set_width_m": v["set_m"], "margin_m": round(width - v["set_m"], 1)})
                if i > 0:
                    prev = schedule[i - 1]["city"]
                    with tool_span("travel_leg", {"from": prev, "to": city}) as sp:
                        key = frozenset((prev, city))
                        leg = {"from": prev, "to": city, "km": KM, "ferry": key in FERRY, "day": stop["date"]}
                        set_output(sp, leg)
                    if leg["ferry"]:
                        with tracer.start_as_current_span("ferry_sailings", attributes=span_attrs("CHAIN", {"from": prev, "to": city, "day": stop["date"]})) as fs:
                            port, times = FERRY[key]
                            sailing = None
                            for attempt in (1, 2):
                                try:
                                    with tool_span("ferry_timetable", {"port": port, "day": stop["date"], "attempt": attempt}) as sp:
                                        attempts["n"] += 1
                                        if attempt == 1:
                                            raise ConnectionError(f"{port} timetable service dropped the connection")
                                        if FERRY_DEFAULT and city in ("Skye", "Mallaig"):
                                            raise TimeoutError(f"{port} timetable service timed out")
                                        sailing = {"port": port, "sailing": times[0]}
                                        set_output(sp, sailing)
                                    break
                                except ConnectionError:
                                    continue
                                except TimeoutError:
                                    sailing = {"port": port, "sailing": "08:00"}
                                    break
                            leg["sailing"] = sailing["sailing"]
                            set_output(fs, leg)
                    legs.append(leg)
                with tool_span("hotel_search", {"city": city, "night": stop["date"], "step_free": inp["step_free"]}) as sp:
                    options = HOTELS[city]
                    if inp["step_free"] and not HOTEL_ANY_ACCESS:
                        options = [h for h in options if h["step_free"]]
                    stay = {"city": city, "night": stop["date"], **options[0]}
                    set_output(sp, stay)
                with tool_span("tour_log_write", {"key": f"{inp['tour']}/{city}"}) as sp:
                    if any(n["city"] == city and n["night"] == stop["date"] for n in nights):
                        stays.append(stay)
                    log[city] = {"venue": v["venue"], "hotel": stay["hotel"], "date": stop["date"]}
                    set_output(sp, {"saved": f"{inp['tour']}/{city}"})
            with tool_span("book_lorry", {"legs": legs}) as sp:
                for leg in legs:
                    if leg["ferry"]:
                        port, times = FERRY[frozenset((leg["from"], leg["to"]))]
                        if leg["sailing"] not in times:
                            raise ValueError(f"ferry operator: no {leg['sailing']} sailing from {port} on {leg['day']}; sailings {', '.join(times)}")
                set_output(sp, {"lorry": "LX-" + inp["tour"][3:], "legs": len(legs)})
            for v in venues:
                with tool_span("confirm_venue", {"venue": v["venue"], "set_width_m": v["set_m"]}) as sp:
                    actual = CURRENT_STAGE[v["city"]][1]
                    if actual < v["set_m"]:
                        raise ValueError(f"{v['venue']} box office: our stage is {actual} m wide, your rider asks for {v['set_m']} m")
                    set_output(sp, {"venue": v["venue"], "confirmed": True})
            intro = chat(cl, server, [{"role": "user", "content": "Write the tour-book intro:\n" + json.dumps(
                {"show": inp["show"], "cities": inp["cities"], "first": schedule[0]["date"], "last": schedule[-1]["date"]})}]).content
            with tracer.start_as_current_span("print_tour_book", attributes=span_attrs("CHAIN", {"intro": intro, "shows": schedule, "stays": stays})) as sp:
                assert len(stays) == len(schedule), f"tour book: {len(schedule)} show days, {len(stays)} hotel nights"
                for s in schedule:
                    hh, _, mm = s["show_time"].partition(":")
                    assert len(s["show_time"]) == 5 and hh.isdigit() and mm.isdigit(), f"tour book: show time {s['show_time']!r} in {s['city']} is not HH:MM"
                if inp["step_free"]:
                    for st in stays:
                        assert st["step_free"], f"tour book: {st['hotel']} ({st['city']}) has no step-free room for the company"
                set_output(sp, {"pages": 2 + len(schedule)})
    except (ValueError, AssertionError):
        pass
    otlp_write(path)


CASES = [
    {"id": "zzzs-tour-01", "input": 0, "switch": "NIGHTS_SHORT", "fault_kind": "off_by_one",
     "root": {"name": "night_plan", "occurrence": 1, "kind": "other"}, "failure": {"name": "print_tour_book", "occurrence": 1},
     "description": "The night plan counts one night fewer than there are show days, so the last town (Fort William) gets no hotel night."},
    {"id": "zzzs-tour-02", "input": 1, "switch": "VENUE_CACHE", "fault_kind": "stale_data",
     "root": {"name": "venue_lookup", "occurrence": 2, "kind": "tool"}, "failure": {"name": "confirm_venue", "occurrence": 2},
     "description": "The venue lookup for Thurso answers from a cached record with a 9.4 m stage; the hall's stage is now 7.4 m, so the rider asks for the full 8 m set instead of the 6 m compact one."},
    {"id": "zzzs-tour-03", "input": 2, "switch": "FERRY_DEFAULT", "fault_kind": "swallowed_error",
     "root": {"name": "ferry_sailings", "occurrence": 1, "kind": "other"}, "failure": {"name": "book_lorry", "occurrence": 1},
     "description": "When the Mallaig timetable service times out, the sailings step quietly assumes an 08:00 sailing that Mallaig does not run."},
    {"id": "zzzs-tour-04", "input": 4, "switch": "HOTEL_ANY_ACCESS", "fault_kind": "tool_ignores_argument",
     "root": {"name": "hotel_search", "occurrence": 1, "kind": "tool"}, "failure": {"name": "print_tour_book", "occurrence": 1},
     "description": "The hotel search ignores step_free=true and offers the first hotel in each town, Dundee Arms without a step-free room."},
    {"id": "zzzs-tour-05", "input": 3, "switch": "TWELVE_HOUR", "fault_kind": "format_drift",
     "root": {"name": "ChatCompletion", "occurrence": 1, "kind": "llm"}, "failure": {"name": "print_tour_book", "occurrence": 1},
     "description": "The date-planning model writes the Inverness show time as '7:30pm' where every other stop uses HH:MM ('19:30')."},
]
