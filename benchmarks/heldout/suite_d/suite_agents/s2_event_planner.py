"""event-planner: plans a corporate event or a wedding from a client's messages.  The planner keeps the
brief in the run's state across the client's turns, runs two sub-agents (a venue scout and a catering
scout), assembles a quote, checks it, puts a hold on the venue and sends the proposal to the client.
Recorded with the trajdebug SDK; the model is a plain Python function."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import Any

from suite_common import FAULT, Agent, Case, Loc

import trajdebug


NAME = "event-planner"

VENUES = [
    {"venue_id": "VEN-201", "name": "Zuiderkerk Hall", "city": "Amsterdam", "capacity": 180,
     "types": ["conference", "gala"], "features": ["stage", "av"], "day_rate": 9500,
     "annex": {"venue_id": "VEN-204", "name": "Zuiderkerk Annex", "capacity": 90}},
    {"venue_id": "VEN-204", "name": "Zuiderkerk Annex", "city": "Amsterdam", "capacity": 90,
     "types": ["conference"], "features": ["av"], "day_rate": 4100},
    {"venue_id": "VEN-310", "name": "Kanaalhuis", "city": "Amsterdam", "capacity": 130,
     "types": ["wedding"], "features": ["ceremony", "garden"], "day_rate": 8200},
    {"venue_id": "VEN-402", "name": "Maliebaan Loft", "city": "Utrecht", "capacity": 140,
     "types": ["offsite", "conference"], "features": ["breakout rooms"], "day_rate": 6400},
    {"venue_id": "VEN-405", "name": "Oudegracht Studio", "city": "Utrecht", "capacity": 60,
     "types": ["offsite"], "features": ["kitchen"], "day_rate": 2900},
    {"venue_id": "VEN-501", "name": "Maashaven Pier", "city": "Rotterdam", "capacity": 250,
     "types": ["gala", "conference"], "features": ["stage", "av", "waterfront"], "day_rate": 12000},
    {"venue_id": "VEN-505", "name": "Witte Huis Rooms", "city": "Rotterdam", "capacity": 110,
     "types": ["conference"], "features": ["av"], "day_rate": 5200},
    {"venue_id": "VEN-601", "name": "Spaarne Orangerie", "city": "Haarlem", "capacity": 120,
     "types": ["wedding"], "features": ["ceremony", "garden"], "day_rate": 7800},
    {"venue_id": "VEN-603", "name": "Haarlem Business Centre", "city": "Haarlem", "capacity": 150,
     "types": ["conference"], "features": ["av"], "day_rate": 4900},
    {"venue_id": "VEN-701", "name": "Lange Voorhout Salon", "city": "The Hague", "capacity": 80,
     "types": ["conference"], "features": ["av"], "day_rate": 3900},
]

MENUS = [
    {"menu_id": "M-BUF", "name": "Standard buffet", "per_head": 38, "tags": ["vegetarian-options"], "for": ["conference", "offsite"]},
    {"menu_id": "M-HAL", "name": "Halal buffet", "per_head": 44, "tags": ["halal", "vegetarian-options"], "for": ["conference", "offsite", "gala"]},
    {"menu_id": "M-VEG", "name": "Plant-based tasting menu", "per_head": 145, "tags": ["vegan", "vegetarian", "halal"], "for": ["conference", "gala", "wedding", "offsite"]},
    {"menu_id": "M-WED", "name": "Three-course wedding dinner", "per_head": 85, "tags": ["vegetarian-options"], "for": ["wedding"]},
    {"menu_id": "M-GAL", "name": "Walking dinner", "per_head": 70, "tags": ["vegetarian-options"], "for": ["gala"]},
]

TRACK_NEEDS = {"wedding": ["ceremony"], "gala": ["stage"], "conference": ["av"], "offsite": []}


class PlanRejected(RuntimeError):
    pass


class VenueHoldRefused(RuntimeError):
    pass


class ProposalDeclined(RuntimeError):
    pass


# -- the model (a plain function standing in for the LLM) ------------------------------------------

_CITIES = ["Amsterdam", "Utrecht", "Rotterdam", "Haarlem", "The Hague"]
_DIETS = ["vegan", "vegetarian", "halal"]


def _read_event(text: str) -> dict[str, Any]:
    city = next((c for c in _CITIES if c in text), None)
    date = re.search(r"(\d{4}-\d\d-\d\d)", text)
    head = re.search(r"(\d+)\s+(?:people|guests|attendees)", text)
    budget = re.search(r"budget (?:of )?(?:EUR |€)?([\d,.]+)\s*(k)?", text)
    amount = None
    if budget:
        amount = float(budget.group(1).replace(",", "")) * (1000 if budget.group(2) else 1)
    return {"city": city, "date": date.group(1) if date else None,
            "headcount": int(head.group(1)) if head else None, "budget_eur": amount}


def fake_model(task: str, messages: list[dict[str, str]]) -> str:
    text = messages[-1]["content"]
    if task == "brief":
        first_sentences = text.split("Separately")[0]
        low = text.lower()
        kind = ("wedding" if "wedding" in low or "married" in low else "gala" if "gala" in text.lower()
                else "offsite" if "offsite" in text.lower() else "conference")
        brief = {"event": kind, **_read_event(text),
                 "dietary": [d for d in _DIETS if d in first_sentences.lower()]}
        return json.dumps(brief)
    if task == "amendment":
        found = _read_event(text)
        return json.dumps({k: v for k, v in found.items() if v is not None})
    if task == "track":
        brief = json.loads(text.split("Brief:", 1)[1])
        track = brief["event"]
        if FAULT.on("track_conference") and track == "wedding":
            track = "conference"  # "reception" read as a corporate reception
        return track
    if task == "pick_venue":
        data = json.loads(text.split("Candidates:", 1)[1])
        fits = sorted(data, key=lambda v: v["day_rate"])
        best = fits[0]
        pick = {"venue_id": best["venue_id"], "name": best["name"], "city": best["city"],
                "capacity": best["capacity"], "features": best["features"], "day_rate": best["day_rate"]}
        if FAULT.on("annex_id") and "annex" in best:
            pick["venue_id"] = best["annex"]["venue_id"]  # the annex's id next to the main hall's details
        return json.dumps(pick)
    if task == "menu":
        need = json.loads(text.split("Requirements:", 1)[1])
        ok = [m for m in MENUS if need["track"] in m["for"] and all(d in m["tags"] or f"{d}-options" in m["tags"] for d in need["dietary"])]
        ok.sort(key=lambda m: m["per_head"])
        return json.dumps({"menu_id": ok[0]["menu_id"], "why": f"cheapest {need['track']} menu meeting {need['dietary'] or 'no'} requirements"})
    raise ValueError(task)


# -- steps ------------------------------------------------------------------------------------


@trajdebug.step(kind="llm")
def parse_brief(messages: list[dict[str, str]]) -> str:
    return fake_model("brief", messages)


@trajdebug.step(kind="state")
def save_brief(raw: str) -> dict[str, Any]:
    brief = json.loads(raw)
    trajdebug.current_run().state["brief"] = brief
    return brief


@trajdebug.step(kind="llm")
def parse_amendment(messages: list[dict[str, str]]) -> str:
    return fake_model("amendment", messages)


@trajdebug.step(kind="state")
def update_brief(raw: str) -> dict[str, Any]:
    changes = json.loads(raw)
    state = trajdebug.current_run().state
    brief = dict(state["brief"])
    if FAULT.on("date_to_alt") and "date" in changes:
        # legacy schema: a date given in an amendment was an *alternative* date
        brief["alt_date"] = changes.pop("date")
    brief.update(changes)
    state["brief"] = brief
    return brief


@trajdebug.step(kind="llm")
def choose_track(messages: list[dict[str, str]]) -> str:
    return fake_model("track", messages)


@trajdebug.step(kind="tool")
def search_venues(city: str, date: str, min_capacity: int, venue_type: str) -> list[dict[str, Any]]:
    return [dict(v) for v in VENUES
            if v["city"] == city and v["capacity"] >= min_capacity and venue_type in v["types"]]


@trajdebug.step(kind="llm")
def pick_venue(messages: list[dict[str, str]]) -> str:
    return fake_model("pick_venue", messages)


@trajdebug.step(kind="agent")
def venue_scout(track: str) -> dict[str, Any]:
    brief = trajdebug.current_run().state["brief"]
    candidates = search_venues(brief["city"], brief["date"], brief["headcount"], track)
    raw = pick_venue([
        {"role": "system", "content": "You are the venue scout. Pick the best value venue from the candidates "
                                      "and answer with its details as JSON."},
        {"role": "user", "content": f"Event on {brief['date']} for {brief['headcount']} guests.\n"
                                    f"Candidates: {json.dumps(candidates)}"},
    ])
    pick = json.loads(raw)
    pick["date"] = brief["date"]
    return pick


@trajdebug.step(kind="other")
def build_catering_brief(brief: dict[str, Any], conversation: list[str], track: str) -> dict[str, Any]:
    dietary = list(brief["dietary"])
    if FAULT.on("diet_from_whole_thread"):
        # collect every dietary wish in the thread (the current event's and any other mentioned)
        for msg in conversation:
            dietary += [d for d in _DIETS if d in msg.lower() and d not in dietary]
    return {"track": track, "headcount": brief["headcount"], "dietary": dietary}


@trajdebug.step(kind="llm")
def choose_menu(messages: list[dict[str, str]]) -> str:
    return fake_model("menu", messages)


@trajdebug.step(kind="tool")
def price_menu(menu_id: str, headcount: int) -> dict[str, Any]:
    menu = next(m for m in MENUS if m["menu_id"] == menu_id)
    return {"menu_id": menu_id, "name": menu["name"], "per_head": menu["per_head"], "headcount": headcount,
            "total": menu["per_head"] * headcount}


@trajdebug.step(kind="agent")
def catering_scout(conversation: list[str], track: str) -> dict[str, Any]:
    brief = trajdebug.current_run().state["brief"]
    need = build_catering_brief(brief, conversation, track)
    raw = choose_menu([
        {"role": "system", "content": "You are the catering scout. Choose the menu that meets every requirement "
                                      "at the lowest price. Answer with JSON."},
        {"role": "user", "content": f"Requirements: {json.dumps(need)}"},
    ])
    return price_menu(json.loads(raw)["menu_id"], need["headcount"])


@trajdebug.step(kind="other")
def assemble_quote(venue: dict[str, Any], catering: dict[str, Any], track: str) -> dict[str, Any]:
    return {
        "track": track,
        "venue_id": venue["venue_id"],
        "venue": venue["name"],
        "venue_features": venue["features"],
        "date": venue["date"],
        "headcount": catering["headcount"],
        "menu": catering["name"],
        "total_eur": venue["day_rate"] + catering["total"],
    }


@trajdebug.step(kind="condition")
def validate_plan(quote: dict[str, Any], brief: dict[str, Any]) -> dict[str, Any]:
    missing = [f for f in TRACK_NEEDS[brief["event"]] if f not in quote["venue_features"]]
    if missing:
        raise PlanRejected(f"plan check failed: a {brief['event']} needs a venue with {', '.join(missing)}")
    if brief.get("budget_eur") and quote["total_eur"] > brief["budget_eur"]:
        raise PlanRejected("plan check failed: the quote is over the client's budget")
    return {"ok": True}


@trajdebug.step(kind="tool")
def book_venue(venue_id: str, date: str, headcount: int) -> dict[str, str]:
    venue = next(v for v in VENUES if v["venue_id"] == venue_id)
    if headcount > venue["capacity"]:
        raise VenueHoldRefused(f"{venue['name']} declined the provisional hold (licensed for {venue['capacity']} guests)")
    return {"hold": f"HOLD-{venue_id[-3:]}-{date.replace('-', '')}", "venue_id": venue_id, "date": date}


@trajdebug.step(kind="tool")
def send_proposal(quote: dict[str, Any], hold: dict[str, str], client_thread: list[str]) -> dict[str, str]:
    # the client reads the proposal against what they asked for
    wanted: dict[str, Any] = {}
    for msg in client_thread:
        wanted.update({k: v for k, v in _read_event(msg.split("Separately")[0]).items() if v is not None})
    if hold["date"] != wanted["date"] or quote["headcount"] != wanted["headcount"]:
        raise ProposalDeclined("the client declined the proposal: it is not the event they asked for")
    return {"status": "sent", "hold": hold["hold"]}


@trajdebug.step(kind="output")
def summarize(quote: dict[str, Any], proposal: dict[str, str]) -> str:
    return (f"Proposal sent: {quote['venue']} on {quote['date']} for {quote['headcount']} guests, "
            f"{quote['menu']}, EUR {quote['total_eur']:,} (hold {proposal['hold']}).")


def plan(conversation: list[str]) -> str:
    run = trajdebug.current_run()
    save_brief(parse_brief([
        {"role": "system", "content": "Extract the event brief: event type, city, date, headcount, budget_eur, "
                                      "dietary needs of this event. JSON only."},
        {"role": "user", "content": conversation[0]},
    ]))
    for later in conversation[1:]:
        update_brief(parse_amendment([
            {"role": "system", "content": "The client changes the brief. Return only the fields that change, as JSON."},
            {"role": "user", "content": later},
        ]))
    track = choose_track([
        {"role": "system", "content": "Pick the planning track: conference, offsite, gala or wedding."},
        {"role": "user", "content": f"Brief: {json.dumps(run.state['brief'])}"},
    ])
    venue = venue_scout(track)
    catering = catering_scout(conversation, track)
    quote = assemble_quote(venue, catering, track)
    validate_plan(quote, run.state["brief"])
    hold = book_venue(quote["venue_id"], quote["date"], quote["headcount"])
    proposal = send_proposal(quote, hold, conversation)
    return summarize(quote, proposal)


@contextmanager
def session():
    def record(conversation: list[str], path: str) -> BaseException | None:
        try:
            with trajdebug.run(NAME, path=path, task=conversation[0][:80]):
                plan(conversation)
        except (PlanRejected, VenueHoldRefused, ProposalDeclined) as exc:
            return exc
        return None

    yield record


AGENT = Agent(
    name=NAME,
    route="sdk",
    domain="event planning (venues and catering)",
    summary="extract the brief (kept in run.state, amended by later client turns), choose a planning track, "
    "venue-scout and catering-scout sub-agents, assemble and validate the quote, hold the venue, send the "
    "proposal to the client",
    features=["memory across turns", "sub-agents"],
    passing=[
        ["Board strategy day for 60 people in The Hague on 2025-09-04, budget EUR 9,000."],
        ["We are getting married! Ceremony and dinner for 110 guests in Amsterdam on 2025-07-12, budget 22k."],
        ["Team offsite for 40 people in Utrecht on 2025-05-22, budget 6k, vegetarian food please.",
         "Quick update: make that 45 people."],
        ["Charity gala for 200 guests in Rotterdam on 2025-12-06, budget 30k."],
        ["Customer conference for 100 attendees in Rotterdam on 2025-11-13, budget 12k, halal catering.",
         "Could we do 2025-11-20 instead?"],
    ],
    session=session,
    cases=[
        Case(
            "d-event-annex",
            ["Annual partner summit for 150 people in Amsterdam on 2025-09-18, budget 40k, no dietary restrictions."],
            "annex_id",
            "subagent_wrong_entity",
            "The venue scout sub-agent returns Zuiderkerk Hall's details under the id of its 90-seat annex "
            "(VEN-204); the quote carries that id and the provisional hold for 150 guests is refused.",
            [Loc("pick_venue", 1, "VEN-204"), Loc("venue_scout"), Loc("assemble_quote"), Loc("book_venue")],
        ),
        Case(
            "d-event-date-memory",
            ["Team offsite for 120 people in Utrecht on 2025-06-07, budget 30k, vegetarian options please.",
             "Small change: could we move it to 2025-06-14?"],
            "date_to_alt",
            "bad_memory_write",
            "Updating the brief after the client's second message stores the new date under 'alt_date' (an old "
            "schema field), so the brief kept in state still says 7 June; the venue is held for the old date "
            "and the client declines the proposal.",
            [Loc("update_brief", 1, "alt_date"), Loc("venue_scout"), Loc("assemble_quote"), Loc("book_venue"),
             Loc("send_proposal")],
        ),
        Case(
            "d-event-vegan-carryover",
            ["Product launch for 80 guests in Rotterdam on 2025-10-02, budget 16k, standard buffet is fine. "
             "Separately, our December party will need a fully vegan menu, but we will book that one later."],
            "diet_from_whole_thread",
            "context_pollution",
            "The catering brief collects dietary wishes from the whole thread, so the vegan requirement of "
            "another event (the December party) enters this event's catering prompt; the vegan tasting menu is "
            "chosen and the quote goes over budget.",
            [Loc("build_catering_brief", 1, "vegan"), Loc("choose_menu"), Loc("price_menu"),
             Loc("assemble_quote"), Loc("validate_plan")],
        ),
        Case(
            "d-event-wedding-track",
            ["Our wedding: ceremony and reception for 90 guests in Haarlem on 2025-08-23, budget 25k."],
            "track_conference",
            "wrong_routing",
            "The planning-track model routes the wedding to the conference track; the venue search looks for "
            "conference venues, a business centre without a ceremony space is picked and the plan check fails.",
            [Loc("choose_track", 1, "conference"), Loc("search_venues"), Loc("pick_venue"), Loc("assemble_quote"),
             Loc("validate_plan")],
        ),
    ],
)
