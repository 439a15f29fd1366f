"""Marquee hire: turns a customer's enquiry into a priced marquee quote (langgraph route).

Shape: a StateGraph: model extraction + JSON parser -> site survey tool -> unit normalisation -> layout router
-> layout node -> fleet inventory tool -> shortlist -> model choice + parser -> furnishing sub-graph
(customer's bookings tool, booking pick, a loop over five furniture categories with a stock tool and a retry
policy) -> delivery tool and pricing -> validator node.
"""

from __future__ import annotations

import json
import math
import operator
import re
from typing import Annotated, TypedDict

import kit
from common import dumps, json_in, system_text, user_text
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.types import RetryPolicy

from trajdebug.integrations.langchain import TrajdebugTracer


NAME = "marquee-quote-builder"
ROUTE = "langgraph"
DOMAIN = "marquee hire"
SHAPE = "graph: model extract + parser -> survey tool -> normalise -> layout router -> inventory tool -> shortlist -> model choice -> furnishing sub-graph (bookings tool, pick, 5-category stock loop with retry) -> pricing -> validator"

FT = 0.3048
VENUES = {
    "V-ORCH": {
        "name": "The Orchard, Hexham",
        "lawn": {"length": 32, "width": 24, "units": "m"},
        "distance_km": 18,
    },
    "V-MILL": {
        "name": "Mill House, Corbridge",
        "lawn": {"length": 70, "width": 62, "units": "ft"},
        "distance_km": 26,
    },
    "V-HALL": {"name": "Elswick Hall", "lawn": {"length": 40, "width": 30, "units": "m"}, "distance_km": 9},
    "V-BARN": {
        "name": "Tithe Barn Meadow, Alnwick",
        "lawn": {"length": 120, "width": 90, "units": "ft"},
        "distance_km": 54,
    },
    "V-RECT": {
        "name": "The Old Rectory, Wylam",
        "lawn": {"length": 28, "width": 20, "units": "m"},
        "distance_km": 14,
    },
    "V-QUAY": {
        "name": "Quay Meadow, Warkworth",
        "lawn": {"length": 36, "width": 22, "units": "m"},
        "distance_km": 48,
    },
}
FLEET = [  # name, width m, length m, price GBP, booked dates
    ("Pagoda 6x6", 6, 6, 900, []),
    ("Pagoda cluster 6x12", 6, 12, 1700, ["2026-06-13"]),
    ("Frame 9x12", 9, 12, 2300, []),
    ("Frame 9x15", 9, 15, 2800, ["2026-07-11"]),
    ("Clearspan 9x21", 9, 21, 3600, ["2026-07-04", "2026-08-22"]),
    ("Pagoda cluster 12x15", 12, 15, 4100, ["2026-05-30"]),
    ("Frame 12x18", 12, 18, 4600, ["2026-06-27"]),
    ("Clearspan 15x18", 15, 18, 5400, []),
    ("Frame 12x24", 12, 24, 5900, ["2026-09-05"]),
    ("Clearspan 15x24", 15, 24, 6800, []),
]
STOCK = {
    "tables": [
        {"sku": "TB-RND6", "name": "6 ft round table", "free": 30, "unit_gbp": 9.0},
        {"sku": "TB-POSE", "name": "poseur table", "free": 25, "unit_gbp": 12.0},
    ],
    "chairs": [
        {"sku": "CH-FOLD", "name": "folding chair, black", "free": 40, "unit_gbp": 1.5},
        {"sku": "CH-CHIA", "name": "Chiavari chair, white", "free": 220, "unit_gbp": 3.2},
    ],
    "lighting": [{"sku": "LT-FEST", "name": "festoon run 20 m", "free": 18, "unit_gbp": 35.0}],
    "flooring": [{"sku": "FL-MAT", "name": "coir matting per m2", "free": 600, "unit_gbp": 2.1}],
    "heating": [{"sku": "HT-IDF", "name": "indirect fired heater", "free": 6, "unit_gbp": 120.0}],
}
BOOKINGS = {
    "Ashworth": [
        {"ref": "MH-2025-118", "date": "2025-09-13", "venue_id": "V-RECT", "guests": 60},
        {"ref": "MH-2026-044", "date": "2026-06-27", "venue_id": "V-HALL", "guests": 140},
    ],
    "Okafor": [{"ref": "MH-2026-031", "date": "2026-06-20", "venue_id": "V-MILL", "guests": 110}],
    "Lindqvist": [{"ref": "MH-2026-052", "date": "2026-07-11", "venue_id": "V-ORCH", "guests": 140}],
    "Pemberton": [{"ref": "MH-2026-058", "date": "2026-07-18", "venue_id": "V-HALL", "guests": 120}],
    "Castellano": [{"ref": "MH-2026-061", "date": "2026-07-04", "venue_id": "V-BARN", "guests": 110}],
    "Marsh": [{"ref": "MH-2026-067", "date": "2026-08-01", "venue_id": "V-QUAY", "guests": 90}],
    "Haddad": [{"ref": "MH-2026-070", "date": "2026-08-15", "venue_id": "V-ORCH", "guests": 200}],
    "Fenwick": [{"ref": "MH-2026-073", "date": "2026-05-16", "venue_id": "V-HALL", "guests": 70}],
    "Nakamura": [{"ref": "MH-2026-079", "date": "2026-09-19", "venue_id": "V-BARN", "guests": 160}],
}
CATEGORIES = ["tables", "chairs", "lighting", "flooring", "heating"]
CLEARANCE_M = 2.0


def _email(customer, ref, date, venue, guests, style):
    return (
        f"Hello, we would like a quote for a marquee.\nCustomer: {customer}\nBooking ref: {ref}\nDate: {date}\n"
        f"Venue: {venue} ({VENUES[venue]['name']})\nGuests: {guests}\nStyle: {style}\nThanks!"
    )


INPUTS = {
    "okafor": _email("Okafor", "MH-2026-031", "2026-06-20", "V-MILL", 110, "seated dinner"),
    "lindqvist": _email(
        "Lindqvist", "MH-2026-052", "2026-07-11", "V-ORCH", 140, "seated dinner and evening reception"
    ),
    "pemberton": _email("Pemberton", "MH-2026-058", "2026-07-18", "V-HALL", 120, "seated dinner"),
    "castellano": _email("Castellano", "MH-2026-061", "2026-07-04", "V-BARN", 110, "seated lunch"),
    "ashworth": _email("Ashworth", "MH-2026-044", "2026-06-27", "V-HALL", 140, "seated dinner with dancing"),
    "marsh": _email("Marsh", "MH-2026-067", "2026-08-01", "V-QUAY", 90, "standing reception"),
    "haddad": _email("Haddad", "MH-2026-070", "2026-08-15", "V-ORCH", 200, "standing reception"),
    "fenwick": _email("Fenwick", "MH-2026-073", "2026-05-16", "V-HALL", 70, "seated dinner with dancing"),
    "nakamura": _email(
        "Nakamura", "MH-2026-079", "2026-09-19", "V-BARN", 160, "seated dinner and evening reception"
    ),
}
REFS = ["marsh", "haddad", "fenwick", "nakamura"]
CASES = [
    {
        "id": "marquee_c1",
        "kind": "unit_error",
        "input": "okafor",
        "root": ("normalise_site", 1),
        "failure": "validate_quote",
        "description": "The site normaliser takes the Mill House lawn survey (70 x 62 ft) as metres, so the 9 x 21 m clearspan that needs 25 m of lawn is shortlisted and chosen.",
    },
    {
        "id": "marquee_c2",
        "kind": "wrong_routing",
        "input": "lindqvist",
        "root": ("route_layout", 1),
        "failure": "validate_quote",
        "description": "The layout router checks for a reception before a seated meal, so 'seated dinner and evening reception' goes to the standing layout and a 189 m2 marquee is quoted for 140 seated guests who need 210 m2.",
    },
    {
        "id": "marquee_c3",
        "kind": "truncated_result",
        "input": "pemberton",
        "root": ("furniture_stock", 2),
        "failure": "validate_quote",
        "description": "The chair stock lookup returns only its first line (40 folding chairs), so 120 seated guests get 40 chairs.",
    },
    {
        "id": "marquee_c4",
        "kind": "tool_ignores_argument",
        "input": "castellano",
        "root": ("marquee_inventory", 1),
        "failure": "validate_quote",
        "description": "The fleet inventory ignores the event date and lists the 9 x 21 m clearspan that is already booked on 2026-07-04, which is then chosen.",
    },
    {
        "id": "marquee_c5",
        "kind": "subagent_wrong_entity",
        "input": "ashworth",
        "root": ("pick_booking", 1),
        "failure": "validate_quote",
        "description": "The furnishing sub-graph picks the customer's first booking on file (MH-2025-118, 60 guests) instead of MH-2026-044, so the furniture is for the other event.",
    },
]


class QuoteState(TypedDict, total=False):
    request: str
    event: dict
    survey: dict
    site: dict
    layout: dict
    inventory: list
    shortlist: list
    marquee: dict
    bookings: list
    booking: dict
    furniture: Annotated[list, operator.add]
    category_index: int
    quote: dict
    verdict: dict


EXTRACT_SYSTEM = (
    "Extract the marquee enquiry as JSON with keys customer, ref, date (YYYY-MM-DD), venue_id, guests "
    "(int) and style (the customer's words). Only JSON."
)
CHOOSE_SYSTEM = 'Choose the cheapest marquee in the shortlist. Only JSON: {"name": str, "reason": str}.'


def brain(request):
    system = system_text(request)
    if system.startswith("Extract the marquee enquiry"):
        text = user_text(request)
        field = lambda k: re.search(rf"^{k}: (.+)$", text, re.M).group(1).strip()  # noqa: E731
        return json.dumps(
            {
                "customer": field("Customer"),
                "ref": field("Booking ref"),
                "date": field("Date"),
                "venue_id": field("Venue").split()[0],
                "guests": int(field("Guests")),
                "style": field("Style"),
            }
        )
    if system.startswith("Choose the cheapest marquee"):
        short = json_in(user_text(request))["shortlist"]
        best = min(short, key=lambda m: m["price_gbp"])
        return json.dumps(
            {"name": best["name"], "reason": f"cheapest of {len(short)} at {best['price_gbp']} GBP"}
        )
    return "{}"


@tool
def site_survey(venue_id: str) -> dict:
    """The venue's lawn survey as recorded by the site team."""
    v = VENUES[venue_id]
    return {"venue_id": venue_id, "venue": v["name"], "lawn": dict(v["lawn"]), "ground": "level grass"}


@tool
def marquee_inventory(min_area_m2: float, date: str) -> list:
    """Marquees of at least the given floor area that are free on the date."""
    out = []
    for name, w, ln, price, booked in FLEET:
        if w * ln < min_area_m2:
            continue
        if date in booked and not kit.on("marquee_c4"):
            continue
        out.append({"name": name, "width_m": w, "length_m": ln, "area_m2": w * ln, "price_gbp": price})
    return out


@tool
def find_bookings(customer: str) -> list:
    """Every booking on file for a customer, oldest first."""
    return [dict(b) for b in BOOKINGS.get(customer, [])]


_STOCK_CALLS = {"n": 0}


@tool
def furniture_stock(category: str, date: str) -> dict:
    """Free stock lines of a furniture category on a date."""
    _STOCK_CALLS["n"] += 1
    if category == "lighting" and _STOCK_CALLS["n"] == 3:
        raise ConnectionError("stock service: connection reset by peer")
    lines = [dict(x) for x in STOCK[category]]
    if kit.on("marquee_c3") and sum(x["free"] for x in lines) > 200:
        lines = lines[:1]
    return {"category": category, "date": date, "lines": lines}


@tool
def delivery_distance(venue_id: str) -> dict:
    """Road distance from the yard to the venue."""
    return {"venue_id": venue_id, "km": VENUES[venue_id]["distance_km"]}


def _fits(w: float, ln: float, site: dict) -> bool:
    a, b = sorted((w + 2 * CLEARANCE_M, ln + 2 * CLEARANCE_M))
    c, d = sorted((site["width_m"], site["length_m"]))
    return a <= c and b <= d


def _required_area(style: str, guests: int) -> float:
    s = style.lower()
    if "seated" in s:
        return guests * 1.5 + (20 if "danc" in s else 0)
    return guests * 0.8


def build(llm):
    parser = JsonOutputParser()

    def extract_event(s: QuoteState) -> dict:
        msg = llm.invoke([SystemMessage(EXTRACT_SYSTEM), HumanMessage(s["request"])])
        return {"event": parser.invoke(msg)}

    def survey_site(s: QuoteState) -> dict:
        return {"survey": site_survey.invoke({"venue_id": s["event"]["venue_id"]})}

    def normalise_site(s: QuoteState) -> dict:
        lawn = s["survey"]["lawn"]
        factor = FT if lawn["units"] == "ft" else 1.0
        if kit.on("marquee_c1"):
            factor = 1.0
        return {
            "site": {
                "venue_id": s["survey"]["venue_id"],
                "length_m": round(lawn["length"] * factor, 1),
                "width_m": round(lawn["width"] * factor, 1),
            }
        }

    def route_layout(s: QuoteState) -> str:
        style = s["event"]["style"].lower()
        if kit.on("marquee_c2") and "reception" in style:
            return "standing_layout"
        if "seated" in style:
            return "seated_layout"
        return "standing_layout"

    def seated_layout(s: QuoteState) -> dict:
        g, style = s["event"]["guests"], s["event"]["style"].lower()
        dance = 20 if "danc" in style else 0
        return {
            "layout": {
                "kind": "seated",
                "guests": g,
                "m2_per_guest": 1.5,
                "dance_floor_m2": dance,
                "required_m2": g * 1.5 + dance,
            }
        }

    def standing_layout(s: QuoteState) -> dict:
        g = s["event"]["guests"]
        return {
            "layout": {
                "kind": "standing",
                "guests": g,
                "m2_per_guest": 0.8,
                "dance_floor_m2": 0,
                "required_m2": g * 0.8,
            }
        }

    def list_marquees(s: QuoteState) -> dict:
        inv = marquee_inventory.invoke(
            {"min_area_m2": s["layout"]["required_m2"], "date": s["event"]["date"]}
        )
        return {"inventory": inv}

    def shortlist(s: QuoteState) -> dict:
        return {"shortlist": [m for m in s["inventory"] if _fits(m["width_m"], m["length_m"], s["site"])]}

    def choose_marquee(s: QuoteState) -> dict:
        payload = {"required_m2": s["layout"]["required_m2"], "shortlist": s["shortlist"]}
        msg = llm.invoke([SystemMessage(CHOOSE_SYSTEM), HumanMessage(dumps(payload))])
        pick = parser.invoke(msg)
        chosen = next(m for m in s["shortlist"] if m["name"] == pick["name"])
        return {"marquee": chosen}

    # the furnishing sub-graph
    def booking_lookup(s: QuoteState) -> dict:
        return {"bookings": find_bookings.invoke({"customer": s["event"]["customer"]}), "category_index": 0}

    def pick_booking(s: QuoteState) -> dict:
        if kit.on("marquee_c5"):
            return {"booking": s["bookings"][0]}
        match = [b for b in s["bookings"] if b["date"] == s["event"]["date"]]
        return {"booking": match[0]}

    def furnish_category(s: QuoteState) -> dict:
        cat = CATEGORIES[s["category_index"]]
        b = s["booking"]
        stock = furniture_stock.invoke({"category": cat, "date": b["date"]})
        seated = s["layout"]["kind"] == "seated"
        area = s["marquee"]["area_m2"]
        need = {
            "tables": math.ceil(b["guests"] / (10 if seated else 12)),
            "chairs": b["guests"] if seated else math.ceil(b["guests"] * 0.3),
            "lighting": math.ceil(area / 36),
            "flooring": area,
            "heating": math.ceil(area / 60) if b["date"][5:7] in ("04", "05", "09", "10") else 0,
        }[cat]
        lines, left = [], need
        for ln in stock["lines"]:
            if cat == "tables" and (ln["sku"] == "TB-POSE") == seated:
                continue
            take = min(left, ln["free"])
            if take:
                lines.append(
                    {
                        "booking": b["ref"],
                        "category": cat,
                        "sku": ln["sku"],
                        "qty": take,
                        "line_gbp": round(take * ln["unit_gbp"], 2),
                    }
                )
            left -= take
        return {"furniture": lines, "category_index": s["category_index"] + 1}

    def more_categories(s: QuoteState) -> str:
        return "furnish_category" if s["category_index"] < len(CATEGORIES) else END

    sub = StateGraph(QuoteState)
    sub.add_node("booking_lookup", booking_lookup)
    sub.add_node("pick_booking", pick_booking)
    sub.add_node(
        "furnish_category",
        furnish_category,
        retry_policy=RetryPolicy(
            max_attempts=3, initial_interval=0.01, jitter=False, retry_on=ConnectionError
        ),
    )
    sub.add_edge(START, "booking_lookup")
    sub.add_edge("booking_lookup", "pick_booking")
    sub.add_edge("pick_booking", "furnish_category")
    sub.add_conditional_edges("furnish_category", more_categories, ["furnish_category", END])
    furnish = sub.compile()

    def price_quote(s: QuoteState) -> dict:
        km = delivery_distance.invoke({"venue_id": s["event"]["venue_id"]})["km"]
        furniture = round(sum(f["line_gbp"] for f in s["furniture"]), 2)
        delivery = round(60 + 1.8 * km, 2)
        total = round(s["marquee"]["price_gbp"] + furniture + delivery, 2)
        return {
            "quote": {
                "ref": s["event"]["ref"],
                "marquee": s["marquee"]["name"],
                "marquee_gbp": s["marquee"]["price_gbp"],
                "furniture_gbp": furniture,
                "delivery_gbp": delivery,
                "total_gbp": total,
            }
        }

    def validate_quote(s: QuoteState) -> dict:
        ev, m, q = s["event"], s["marquee"], s["quote"]
        refs = {f["booking"] for f in s["furniture"]}
        if refs != {ev["ref"]}:
            raise ValueError(f"furniture lines are for {sorted(refs)}, the quote is for {ev['ref']}")
        booked = next(b for n, _w, _l, _p, b in FLEET if n == m["name"])
        if ev["date"] in booked:
            raise ValueError(f"{m['name']} is already booked on {ev['date']}")
        need = _required_area(ev["style"], ev["guests"])
        if m["area_m2"] < need:
            raise ValueError(
                f"{m['name']} gives {m['area_m2']} m2, {ev['guests']} guests ({ev['style']}) need {need} m2"
            )
        lawn = site_survey.func(ev["venue_id"])["lawn"]
        f = FT if lawn["units"] == "ft" else 1.0
        site = {"length_m": lawn["length"] * f, "width_m": lawn["width"] * f}
        if not _fits(m["width_m"], m["length_m"], site):
            raise ValueError(
                f"{m['name']} needs {m['width_m'] + 4:.1f} x {m['length_m'] + 4:.1f} m with clearance, "
                f"the lawn is {site['width_m']:.1f} x {site['length_m']:.1f} m"
            )
        if "seated" in ev["style"].lower():
            chairs = sum(f["qty"] for f in s["furniture"] if f["category"] == "chairs")
            if chairs < ev["guests"]:
                raise ValueError(f"{chairs} chairs for {ev['guests']} seated guests")
        total = round(q["marquee_gbp"] + q["furniture_gbp"] + q["delivery_gbp"], 2)
        if abs(total - q["total_gbp"]) > 0.01:
            raise ValueError(f"quote total {q['total_gbp']} is not the sum of its lines ({total})")
        return {"verdict": {"ref": ev["ref"], "status": "ready to send", "total_gbp": q["total_gbp"]}}

    g = StateGraph(QuoteState)
    for name, fn in [
        ("extract_event", extract_event),
        ("survey_site", survey_site),
        ("normalise_site", normalise_site),
        ("seated_layout", seated_layout),
        ("standing_layout", standing_layout),
        ("list_marquees", list_marquees),
        ("shortlist", shortlist),
        ("choose_marquee", choose_marquee),
        ("furnish", furnish),
        ("price_quote", price_quote),
        ("validate_quote", validate_quote),
    ]:
        g.add_node(name, fn)
    g.add_edge(START, "extract_event")
    g.add_edge("extract_event", "survey_site")
    g.add_edge("survey_site", "normalise_site")
    g.add_conditional_edges("normalise_site", route_layout, ["seated_layout", "standing_layout"])
    g.add_edge("seated_layout", "list_marquees")
    g.add_edge("standing_layout", "list_marquees")
    g.add_edge("list_marquees", "shortlist")
    g.add_edge("shortlist", "choose_marquee")
    g.add_edge("choose_marquee", "furnish")
    g.add_edge("furnish", "price_quote")
    g.add_edge("price_quote", "validate_quote")
    g.add_edge("validate_quote", END)
    return g.compile()


def record(server, inp: str, path: str) -> None:
    _STOCK_CALLS["n"] = 0
    server.use(brain)
    llm = ChatOpenAI(
        base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0
    )
    ref = re.search(r"Booking ref: (\S+)", inp).group(1)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"quote the marquee for booking {ref}")
    try:
        build(llm).invoke({"request": inp, "furniture": []}, config={"callbacks": [tracer]})
    except ValueError:
        pass
