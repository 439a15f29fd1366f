"""Drive-in cinema: schedule a weekend's screenings after dark, crew, pricing and the public listing (openai_agents route, Chat Completions)."""
from __future__ import annotations

import ast
import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

import kit
from harness import Brain, payload

NAME, ROUTE, DOMAIN = "drivein-screenings", "openai_agents", "a drive-in cinema's screenings"
SHAPE = "Agents SDK programmer (Chat Completions) in a model-driven loop over nights: week tool, sunset/film/schedule tools per night (double bill on Saturday), crew, manager notes, pricing, listing, validator tool"

FILMS = {"The Lighthouse Keepers": (112, "PG"), "Road to Marfa": (97, "12A"), "Moonrise Diner": (104, "PG"), "Harbour Lights": (121, "15"),
         "Paper Kites": (88, "U"), "Night Train": (109, "12A"), "Glass Orchard": (95, "PG"), "Dust & Neon": (118, "15")}
TARIFF = {"Thursday": 18, "Friday": 18, "Saturday": 22}
STATE: dict = {}


def hm(m: int) -> str:
    return f"{m // 60:02d}:{m % 60:02d}"


def mins(t: str) -> int:
    h, m = t.split(":")
    return int(h) * 60 + int(m)


def make_week(i: int) -> dict:
    titles = list(FILMS)
    nights = []
    for k, day in enumerate(("Thursday", "Friday", "Saturday")):
        date = f"2026-0{6 + i % 3}-{5 + i * 2 + k:02d}"
        films = [titles[(i + k * 3) % 8]] + ([titles[(i + 5) % 8]] if day == "Saturday" else [])
        nights.append({"day": day, "date": date, "films": films, "cars": 60 + ((i * 17 + k * 23) % 70)})
    return {"week": f"W{23 + i}", "nights": nights}


def sunset(date: str) -> str:
    return hm(20 * 60 + (int(date[-2:]) * 3 + int(date[5:7])) % 40)


@function_tool
def get_week(week: str) -> dict:
    """The week's screening nights, films booked and expected cars."""
    return STATE["week"]


@function_tool
def get_sunset(date: str) -> str:
    """Sunset time (HH:MM) at the site on a date."""
    return sunset(date)


@function_tool
def get_film(title: str) -> dict:
    """Runtime in minutes and certificate of a film."""
    return {"title": title, "runtime": FILMS[title][0], "cert": FILMS[title][1]}


@function_tool
def schedule_screening(date: str, title: str, start: str) -> dict:
    """Book a screening slot on the projection schedule."""
    STATE.setdefault("booked", []).append({"date": date, "title": title, "start": start})
    shown = start
    if kit.on("zzu_drivein_04") and len(STATE["booked"]) == 4:
        h, m = start.split(":")
        shown = f"{int(h) - 12}:{m} PM"  # the booking system's display format
    return {"date": date, "title": title, "start": shown, "screen": "main"}


@function_tool
def assign_crew(date: str, marshals: int) -> dict:
    """Roster car-park marshals for a night."""
    STATE.setdefault("crew", {})[date] = marshals
    return {"date": date, "marshals": marshals}


@function_tool
def fetch_notes(date: str) -> list:
    """The duty manager's notes for a night."""
    notes = ["Check the FM transmitter before gates open."]
    if kit.on("zzu_drivein_03"):
        notes.append("Sold out last Saturday: raise the car price to 25 GBP.")
    return notes


@function_tool
def price_tickets(date: str, band: str) -> dict:
    """Car price for a night, by tariff band (weekday or weekend)."""
    return {"date": date, "band": band, "car_price": 22 if band == "weekend" else 18}


@function_tool(strict_mode=False)
def compose_listing(rows: list[dict], car_price: int) -> str:
    """Write the public listing for the week."""
    price = 18 if kit.on("zzu_drivein_05") else car_price
    text = "\n".join(f"{r['date']} {r['start']} {r['title']}" for r in rows) + f"\nCars {price} GBP on Saturday"
    STATE["listing"] = {"rows": rows, "price": price}
    return text


@function_tool(failure_error_function=None)
def validate_programme(week: str) -> str:
    """Check the week's programme against the site's rules."""
    wk = STATE["week"]
    booked = STATE.get("booked", [])
    for n in wk["nights"]:
        shows = [b for b in booked if b["date"] == n["date"]]
        if len(shows) != len(n["films"]):
            raise ValueError(f"{n['date']}: {len(shows)} screenings booked for {len(n['films'])} films")
        if mins(shows[0]["start"]) < mins(sunset(n["date"])) + 20:
            raise ValueError(f"{n['date']}: {shows[0]['title']} starts {shows[0]['start']}, before sunset {sunset(n['date'])} + 20 min")
        if len(shows) == 2:
            end = mins(shows[0]["start"]) + FILMS[shows[0]["title"]][0] + 15
            if mins(shows[1]["start"]) < end:
                raise ValueError(f"{n['date']}: {shows[1]['title']} at {shows[1]['start']} overlaps {shows[0]['title']} (ends {hm(end - 15)}, 15 min interval)")
        if n["day"] == "Saturday":
            need = -(-n["cars"] // 40)
            if STATE.get("crew", {}).get(n["date"], 0) < need:
                raise ValueError(f"{n['date']}: {STATE.get('crew', {}).get(n['date'], 0)} marshals for {n['cars']} cars (one per 40)")
    for r in STATE["listing"]["rows"]:
        b = next(b for b in booked if b["title"] == r["title"] and b["date"] == r["date"])
        if r["start"] != b["start"]:
            raise ValueError(f"listing shows {r['title']} on {r['date']} at {r['start']!r}, the projection schedule has {b['start']}")
    if STATE["listing"]["price"] != TARIFF["Saturday"]:
        raise ValueError(f"{week}: listing gives Saturday cars at {STATE['listing']['price']} GBP, the tariff is {TARIFF['Saturday']} GBP")
    return f"{week} programme valid"


def _outputs(request):
    outs = []
    for m in request.body.get("messages") or []:
        if m.get("role") == "tool":
            try:
                outs.append(ast.literal_eval(m["content"]))
            except (ValueError, SyntaxError):
                outs.append(m["content"])
    return outs


def _plan(req, outs):
    """The programmer's sequence of calls, given what it has read so far."""
    calls = [("get_week", {"week": req["week"]})]
    if not outs:
        return calls
    wk = outs[0]
    k = 1
    rows = []
    for n in wk["nights"]:
        calls.append(("get_sunset", {"date": n["date"]}))
        ss = outs[k] if len(outs) > k else None
        k += 1
        films = []
        for t in n["films"]:
            calls.append(("get_film", {"title": t}))
            films.append(outs[k] if len(outs) > k else None)
            k += 1
        if ss is None or None in films:
            return calls
        start = mins(ss) + 20
        start += (-start) % 5
        for f in films:
            calls.append(("schedule_screening", {"date": n["date"], "title": f["title"], "start": hm(start)}))
            got = outs[k] if len(outs) > k else None
            k += 1
            if got is None:
                return calls
            rows.append({"date": n["date"], "start": got["start"], "title": f["title"]})
            gap = 15
            start += f["runtime"] + gap
            start += (-start) % 5
    sat = next(n for n in wk["nights"] if n["day"] == "Saturday")
    marshals = sat["cars"] // 50 if kit.on("zzu_drivein_02") else -(-sat["cars"] // 40)
    calls.append(("assign_crew", {"date": sat["date"], "marshals": marshals}))
    calls.append(("fetch_notes", {"date": sat["date"]}))
    notes = outs[len(calls) - 1] if len(outs) >= len(calls) else None
    if notes is None:
        return calls
    band = "weekend"
    if kit.on("zzu_drivein_01"):
        band = "weekday" if sat["films"][0] in FILMS and FILMS[sat["films"][0]][1] in ("U", "PG") else "weekend"  # family bill
    calls.append(("price_tickets", {"date": sat["date"], "band": band}))
    priced = outs[len(calls) - 1] if len(outs) >= len(calls) else None
    if priced is None:
        return calls
    price = priced["car_price"]
    for note in notes:
        if "car price to" in note:
            price = int(note.split("car price to ")[1].split()[0])
    calls.append(("compose_listing", {"rows": rows, "car_price": price}))
    calls.append(("validate_programme", {"week": req["week"]}))
    return calls


brain = Brain()


@brain.on("programmer")
def _programmer(request, text):
    outs = _outputs(request)
    req = payload(text)
    calls = _plan(req, outs)
    if len(outs) < len(calls):
        name, args = calls[len(outs)]
        return Reply(tool_calls=(tool_call(name, args),))
    return f"Programme for {req['week']} is booked and listed."


def record(server, i: int, path: str) -> None:
    wk = make_week(i)
    STATE.clear()
    STATE["week"] = wk
    server.use(brain)
    proc = TrajdebugProcessor(path=path, name=NAME, task=f"programme week {wk['week']}")
    set_trace_processors([proc])
    set_default_openai_api("chat_completions")

    async def main():
        async with AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0) as client:
            set_default_openai_client(client)
            agent = Agent(name="programmer", model="fake-model",
                          instructions="[programmer] Schedule each night's films after dark, crew and price Saturday, write the listing, then validate.",
                          tools=[get_week, get_sunset, get_film, schedule_screening, assign_crew, fetch_notes, price_tickets, compose_listing, validate_programme])
            await Runner.run(agent, "Programme this week. DATA: " + json.dumps({"week": wk["week"]}), max_turns=30,
                             run_config=RunConfig(workflow_name=NAME))

    try:
        asyncio.run(main())
    except Exception:  # the SDK re-raises the validator's error wrapped in UserError
        pass
    finally:
        set_trace_processors([])
        set_default_openai_api("responses")


CASES = [
    dict(id="zzu_drivein_01", kind="wrong_routing", root=("generation fake-model", 15), failure=("validate_programme", 1), input=2,
         description="The programmer sends Saturday's family bill down the weekday tariff band, so the listing undercharges cars."),
    dict(id="zzu_drivein_02", kind="plan_error", root=("generation fake-model", 13), failure=("validate_programme", 1), input=0,
         description="The programmer plans Saturday's marshals at one per 50 cars, rounded down, instead of the site's one per 40."),
    dict(id="zzu_drivein_03", kind="context_pollution", root=("fetch_notes", 1), failure=("validate_programme", 1), input=1,
         description="The manager's notes carry last Saturday's sold-out remark, and the programmer lists cars at 25 GBP from it."),
    dict(id="zzu_drivein_04", kind="format_drift", root=("schedule_screening", 4), failure=("validate_programme", 1), input=3,
         description="The booking tool answers Saturday's second slot in 12-hour display format, which the listing copies."),
    dict(id="zzu_drivein_05", kind="tool_ignores_argument", root=("compose_listing", 1), failure=("validate_programme", 1), input=4,
         description="The listing tool ignores the car price it is given and prints the weekday price for Saturday."),
]
REFS = [5, 6, 7, 8]
