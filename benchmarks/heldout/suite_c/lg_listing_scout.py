"""listing_scout: a home-buying assistant (LangGraph ReAct agent, ``create_react_agent``).

The buyer writes one message (city, budget, bedrooms, down payment, monthly cap, a date);
the agent searches the MLS feed, opens the best match, prices the mortgage and books a
viewing.  ``book_viewing`` is the brokerage's booking API: it re-checks the request
against the buyer's pre-approval file and the live listing, and refuses bad bookings.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

from fakellm import Reply, last_result, user_text
from harness import FAULT, AgentSpec, Case
from routes import chat_model, install, invoke_graph


# -- the brokerage's data -------------------------------------------------------------------

LISTINGS: dict[str, dict[str, Any]] = {
    # Austin
    "ATX-311": {"city": "Austin", "address": "4102 Ramble Ln", "price": 612_000, "beds": 3, "baths": 2, "sqft": 1850, "hoa": 0},
    "ATX-327": {"city": "Austin", "address": "88 Cedar Bend", "price": 598_500, "beds": 4, "baths": 2.5, "sqft": 2140, "hoa": 45},
    "ATX-340": {"city": "Austin", "address": "1719 Oak Hollow Dr", "price": 640_000, "beds": 2, "baths": 3, "sqft": 2300, "hoa": 0},
    "ATX-352": {"city": "Austin", "address": "9 Windmere Ct", "price": 815_000, "beds": 4, "baths": 3, "sqft": 2900, "hoa": 120},
    "ATX-366": {"city": "Austin", "address": "520 Pecan St", "price": 455_000, "beds": 3, "baths": 2, "sqft": 1420, "hoa": 0},
    # Denver
    "DEN-102": {"city": "Denver", "address": "2290 Clarkson St", "price": 529_000, "beds": 3, "baths": 2, "sqft": 1610, "hoa": 0},
    "DEN-118": {"city": "Denver", "address": "77 Larimer Sq #4", "price": 489_900, "beds": 2, "baths": 2, "sqft": 1180, "hoa": 310},
    "DEN-131": {"city": "Denver", "address": "1455 Holly St", "price": 575_000, "beds": 3, "baths": 2.5, "sqft": 1790, "hoa": 0},
    "DEN-149": {"city": "Denver", "address": "6010 E 17th Ave", "price": 719_000, "beds": 4, "baths": 3, "sqft": 2480, "hoa": 0},
    "DEN-150": {"city": "Denver", "address": "31 Tennyson Way", "price": 560_000, "beds": 1, "baths": 3, "sqft": 1950, "hoa": 0},
    # Raleigh
    "RAL-207": {"city": "Raleigh", "address": "3308 Glenwood Ave", "price": 389_000, "beds": 3, "baths": 2, "sqft": 1720, "hoa": 25},
    "RAL-215": {"city": "Raleigh", "address": "12 Brier Creek Pkwy", "price": 425_000, "beds": 4, "baths": 2.5, "sqft": 2210, "hoa": 60},
    "RAL-233": {"city": "Raleigh", "address": "905 Wade Ave", "price": 344_500, "beds": 2, "baths": 1, "sqft": 1050, "hoa": 0},
    "RAL-241": {"city": "Raleigh", "address": "47 Falls of Neuse Rd", "price": 512_000, "beds": 4, "baths": 3, "sqft": 2650, "hoa": 40},
    # Columbus
    "CMH-410": {"city": "Columbus", "address": "150 E Beck St", "price": 279_000, "beds": 3, "baths": 1.5, "sqft": 1390, "hoa": 0},
    "CMH-422": {"city": "Columbus", "address": "2721 Neil Ave", "price": 318_000, "beds": 3, "baths": 2, "sqft": 1575, "hoa": 0},
    "CMH-437": {"city": "Columbus", "address": "88 Schiller Park Ln", "price": 365_000, "beds": 2, "baths": 3, "sqft": 1880, "hoa": 0},
    "CMH-451": {"city": "Columbus", "address": "5 Olentangy Blvd", "price": 442_000, "beds": 4, "baths": 2.5, "sqft": 2300, "hoa": 0},
    # Tucson
    "TUS-508": {"city": "Tucson", "address": "1840 E Speedway", "price": 309_000, "beds": 3, "baths": 2, "sqft": 1500, "hoa": 0},
    "TUS-515": {"city": "Tucson", "address": "702 N Stone Ave", "price": 286_000, "beds": 2, "baths": 2, "sqft": 1240, "hoa": 90},
    "TUS-529": {"city": "Tucson", "address": "9 Saguaro Ridge", "price": 355_000, "beds": 3, "baths": 2.5, "sqft": 1980, "hoa": 75},
}

# What the MLS cache held last week (the feed has moved since).
LAST_WEEK_PRICES = {"DEN-131": 549_000, "RAL-215": 409_000, "TUS-529": 339_000, "CMH-422": 305_000}

BUYERS: dict[str, dict[str, Any]] = {
    "B-1042": {"preapproved": 650_000, "min_beds": 3, "max_monthly": 3_600},
    "B-2210": {"preapproved": 600_000, "min_beds": 3, "max_monthly": 3_300},
    "B-3307": {"preapproved": 440_000, "min_beds": 3, "max_monthly": 2_600},
    "B-4451": {"preapproved": 330_000, "min_beds": 3, "max_monthly": 2_000},
    "B-5120": {"preapproved": 320_000, "min_beds": 3, "max_monthly": 1_900},
    "B-6003": {"preapproved": 650_000, "min_beds": 3, "max_monthly": 3_600},
    "B-6118": {"preapproved": 590_000, "min_beds": 3, "max_monthly": 3_200},
    "B-6230": {"preapproved": 450_000, "min_beds": 3, "max_monthly": 2_700},
    "B-6342": {"preapproved": 650_000, "min_beds": 3, "max_monthly": 3_600},
}

RATE_PCT = 6.5


class ViewingRefused(Exception):
    """The brokerage's booking API refused the viewing request."""


def _amortize(loan: float, annual_rate_pct: float, years: int) -> float:
    r = annual_rate_pct / 100 / 12
    n = years * 12
    return loan * r / (1 - (1 + r) ** -n)


# -- tools -------------------------------------------------------------------------------------


def build_tools() -> list[Any]:
    from langchain_core.tools import tool

    @tool
    def search_listings(city: str, max_price: int, min_beds: int) -> str:
        """Search active MLS listings in a city under a price ceiling with at least `min_beds` bedrooms.
        Results are ordered by living area, largest first."""
        FAULT.tick("search_listings")
        hits = []
        for lid, row in LISTINGS.items():
            if row["city"].lower() != city.lower() or row["price"] > max_price:
                continue
            size_ok = row["beds"] >= min_beds
            if FAULT.on("search_beds_vs_baths"):
                size_ok = row["baths"] >= min_beds  # compares the bedroom floor against bathrooms
            if size_ok:
                hits.append({"listing_id": lid, "address": row["address"], "price": row["price"], "beds": row["beds"],
                             "baths": row["baths"], "sqft": row["sqft"]})
        hits.sort(key=lambda h: -h["sqft"])
        if FAULT.on("search_beds_vs_baths"):
            right = [h for h in hits if LISTINGS[h["listing_id"]]["beds"] >= min_beds]
            if hits and (not right or right[0] != hits[0]):
                FAULT.fire_tool("search_listings", hits[0]["listing_id"])
        return json.dumps({"count": len(hits), "results": hits[:5]})

    @tool
    def listing_details(listing_id: str) -> str:
        """Full details of one listing: asking price, bedrooms, HOA dues, status."""
        FAULT.tick("listing_details")
        item = LISTINGS[listing_id]
        price = item["price"]
        if FAULT.on("details_from_stale_cache") and listing_id in LAST_WEEK_PRICES:
            price = LAST_WEEK_PRICES[listing_id]  # served from last week's MLS snapshot
            FAULT.fire_tool("listing_details", price)
        return json.dumps({"listing_id": listing_id, "address": item["address"], "asking_price": price, "beds": item["beds"],
                           "baths": item["baths"], "sqft": item["sqft"], "hoa_monthly": item["hoa"], "status": "active"})

    @tool
    def mortgage_estimate(price: float, down_payment_pct: float, annual_rate_pct: float = RATE_PCT, years: int = 30) -> str:
        """Estimate the monthly payment (principal, interest and HOA excluded) for a purchase price,
        a down payment given in percent (20 means 20 %), a rate in percent and a term in years."""
        FAULT.tick("mortgage_estimate")
        down = price * down_payment_pct / 100
        if FAULT.on("down_payment_percent_as_fraction"):
            down = price * down_payment_pct / 100 / 100  # the helper expected 0.20, got 20 and divided again
        loan = price - down
        monthly = round(_amortize(loan, annual_rate_pct, years), 2)
        if FAULT.on("down_payment_percent_as_fraction"):
            FAULT.fire_tool("mortgage_estimate", monthly)
        return json.dumps({"loan_amount": round(loan, 2), "monthly_payment": monthly, "rate_pct": annual_rate_pct, "term_years": years})

    @tool
    def book_viewing(listing_id: str, buyer_id: str, offer_basis_price: float, est_monthly_payment: float, date: str) -> str:
        """Book a viewing with the listing agent. The request must carry the price the buyer's
        estimate was based on and the estimated monthly payment."""
        FAULT.tick("book_viewing")
        buyer = BUYERS[buyer_id]
        listing = LISTINGS[listing_id]
        if abs(offer_basis_price - listing["price"]) > 1:
            raise ViewingRefused(
                f"{listing_id} is listed at ${listing['price']:,} today; the buyer packet was prepared on "
                f"${offer_basis_price:,.0f}. Re-run the affordability estimate before booking."
            )
        if listing["price"] > buyer["preapproved"]:
            raise ViewingRefused(
                f"{listing['address']} (${listing['price']:,}) is above buyer {buyer_id}'s pre-approval of "
                f"${buyer['preapproved']:,}; lender rules forbid booking it."
            )
        if listing["beds"] < buyer["min_beds"]:
            raise ViewingRefused(
                f"{listing_id} has {listing['beds']} bedroom(s) but {buyer_id}'s search profile requires at least {buyer['min_beds']}."
            )
        if est_monthly_payment > buyer["max_monthly"]:
            raise ViewingRefused(
                f"estimated payment ${est_monthly_payment:,.2f}/mo is over the ${buyer['max_monthly']:,} ceiling in {buyer_id}'s file"
            )
        return json.dumps({"confirmation": f"VW-{listing_id}-{date.replace('-', '')}", "listing_id": listing_id, "date": date, "agent": "Dana Whitfield"})

    return [search_listings, listing_details, mortgage_estimate, book_viewing]


# -- the scripted model ---------------------------------------------------------------------------


def _money(s: str) -> int:
    s = s.replace(",", "").replace("$", "").strip().lower()
    if s.endswith("k"):
        return int(float(s[:-1]) * 1000)
    return int(float(s))


def parse_request(text: str) -> dict[str, Any]:
    return {
        "buyer": re.search(r"\b(B-\d{4})\b", text).group(1),
        "city": re.search(r"\bin ([A-Z][a-z]+)\b", text).group(1),
        "budget": _money(re.search(r"budget (?:of |is )?(\$[\d,]+k?)", text).group(1)),
        "beds": int(re.search(r"(\d)\+? ?(?:bed|bedroom|br)", text).group(1)),
        "down": float(re.search(r"(\d+(?:\.\d+)?)\s?% down", text).group(1)),
        "date": re.search(r"(\d{4}-\d{2}-\d{2})", text).group(1),
    }


def policy(body: dict[str, Any]) -> Reply:
    req = parse_request(user_text(body))
    found = last_result(body, "search_listings")
    details = last_result(body, "listing_details")
    est = last_result(body, "mortgage_estimate")
    booking = last_result(body, "book_viewing")
    if found is None:
        budget = req["budget"]
        if FAULT.on("misread_budget"):
            budget = int(str(budget).replace("6", "8", 1))  # "$650,000" read as 850,000
            FAULT.fire_llm(budget)
        return Reply(tool_calls=[("search_listings", {"city": req["city"], "max_price": budget, "min_beds": req["beds"]})])
    if details is None:
        if not found["results"]:
            return Reply(content="Nothing on the market matches those criteria right now.")
        return Reply(tool_calls=[("listing_details", {"listing_id": found["results"][0]["listing_id"]})])
    if est is None:
        return Reply(tool_calls=[("mortgage_estimate", {"price": details["asking_price"], "down_payment_pct": req["down"], "annual_rate_pct": RATE_PCT})])
    if booking is None:
        return Reply(tool_calls=[("book_viewing", {"listing_id": details["listing_id"], "buyer_id": req["buyer"],
                                                   "offer_basis_price": details["asking_price"],
                                                   "est_monthly_payment": est["monthly_payment"], "date": req["date"]})])
    return Reply(content=(f"Booked: {details['address']} on {booking['date']} with {booking['agent']} "
                          f"(confirmation {booking['confirmation']}). Estimated payment ${est['monthly_payment']:,.2f}/mo."))


SYSTEM = (
    "You are Keystone Realty's buyer assistant. Find the best active listing for the buyer, check "
    "affordability with mortgage_estimate at the current 30-year rate of 6.5 %, then book a viewing. "
    "Always pass the exact asking price you priced the mortgage on."
)


def execute(inp: dict[str, Any], path: Path, key: str) -> str:
    from langgraph.prebuilt import create_react_agent

    install(policy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(chat_model("gpt-4o-mini"), build_tools(), prompt=SYSTEM, name="listing_scout")
    return invoke_graph(graph, {"messages": [("user", inp["message"])]}, path, run_name="listing_scout", key=key)


def msg(buyer: str, city: str, budget: str, beds: int, down: int, cap: str, date: str) -> dict[str, Any]:
    return {"message": (f"Hi, this is buyer {buyer}. I'm house hunting in {city}: {beds}+ bedrooms, budget of {budget}, "
                        f"{down}% down, and I want to stay under {cap} a month. Can you set up a viewing of the best "
                        f"option on {date}?")}


SPEC = AgentSpec(
    name="listing_scout",
    route="langgraph",
    domain="real-estate listings",
    summary="ReAct agent (langgraph.prebuilt.create_react_agent): search_listings -> listing_details -> mortgage_estimate -> book_viewing",
    execute=execute,
    passing=[
        msg("B-2210", "Denver", "$600,000", 3, 20, "$3,300", "2026-03-07"),
        msg("B-3307", "Raleigh", "$440,000", 3, 15, "$2,600", "2026-03-08"),
        msg("B-4451", "Columbus", "$330,000", 3, 10, "$2,000", "2026-03-14"),
        msg("B-5120", "Tucson", "$320,000", 3, 20, "$1,900", "2026-03-15"),
        msg("B-1042", "Austin", "$650,000", 3, 25, "$3,600", "2026-03-21"),
    ],
    cases=[
        Case(
            slug="budget_misread",
            input=msg("B-6003", "Austin", "$650,000", 3, 20, "$3,600", "2026-04-04"),
            fault="misread_budget",
            fault_kind="wrong_tool_args",
            description="The model turns the buyer's $650,000 budget into max_price=850000 in its first search; "
                        "the search then tops out with a $815,000 house that the booking API refuses as over pre-approval.",
            failure="book_viewing",
            path=["search_listings", "ChatOpenAI", "listing_details", "ChatOpenAI", "book_viewing"],
        ),
        Case(
            slug="beds_filter_on_baths",
            input=msg("B-6342", "Austin", "$650,000", 3, 20, "$3,600", "2026-04-11"),
            fault="search_beds_vs_baths",
            fault_kind="tool_ignores_argument",
            description="search_listings applies the min_beds filter to the bathroom count, so a 2-bedroom/3-bath house "
                        "ranks first; it is priced and sent to booking, which refuses it for too few bedrooms.",
            failure="book_viewing",
            path=["ChatOpenAI", "listing_details", "ChatOpenAI", "book_viewing"],
        ),
        Case(
            slug="down_payment_scale",
            input=msg("B-6118", "Denver", "$590,000", 3, 20, "$3,200", "2026-04-18"),
            fault="down_payment_percent_as_fraction",
            fault_kind="unit_error",
            description="mortgage_estimate divides the down-payment percentage by 100 twice (20 % becomes 0.2 %), so the "
                        "loan is almost the full price and the monthly estimate is inflated; booking refuses it against the monthly cap.",
            failure="book_viewing",
            path=["ChatOpenAI", "book_viewing"],
        ),
        Case(
            slug="stale_asking_price",
            input=msg("B-6230", "Raleigh", "$450,000", 3, 20, "$2,700", "2026-04-25"),
            fault="details_from_stale_cache",
            fault_kind="stale_data",
            description="listing_details answers from last week's MLS snapshot ($409,000 instead of $425,000); the "
                        "estimate and the booking request are built on that price and the booking API refuses the mismatch.",
            failure="book_viewing",
            path=["ChatOpenAI", "book_viewing"],
        ),
    ],
)
