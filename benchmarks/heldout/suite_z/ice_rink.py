"""Ice-rink session bookings, recorded with the trajdebug SDK."""

from __future__ import annotations

from .common import Agent, Case, chat_policy, run_sdk

AGENT = Agent(
    key="ice_rink", agent="ice-rink-bookings", route="sdk", domain="ice-rink session booking",
    shape="plan, timetable pull, 7x parse+screen loop, pick, holds, draft in run.state, waiver sub-agent, quote, pre-check, book",
    unit="session", party_word="skaters", site_word="rink", doc_word="waiver", prefix="ICE",
    sites=["rink-west", "rink-east", "rink-north"],
    customers=[("C-104", "Northside Skating Club"), ("C-117", "Lakeview Curling Juniors"),
               ("C-122", "Maple Figure Academy"), ("C-131", "Harbor Hockey Masters")],
    labels=["public skate", "figure patch", "hockey drop-in", "learn-to-skate", "sledge hockey", "family skate",
            "late-night skate"],
    scale=1.0,
    names={"intake": "read_booking_request", "plan": "plan_booking", "parse_plan": "parse_booking_plan",
           "fetch": "fetch_ice_timetable", "parse_item": "parse_session_slot", "check_item": "screen_slot",
           "select": "choose_slots", "hold": "hold_slot", "remember": "save_booking_draft", "sub": "waiver_desk",
           "resolve": "identify_club", "lookup": "search_waivers", "summarise": "summarise_waiver",
           "total": "price_booking", "preflight": "precheck_booking", "submit": "book_sessions"},
    inputs=[
        {"ref": "RB-5101", "customer": "C-104", "site": "rink-east", "date": "2027-01-11", "count": 3, "party": 14, "budget": 720.0},
        {"ref": "RB-5102", "customer": "C-117", "site": "rink-west", "date": "2027-01-12", "count": 2, "party": 12, "budget": 400.0},
        {"ref": "RB-5103", "customer": "C-122", "site": "rink-north", "date": "2027-01-13", "count": 3, "party": 18, "budget": 990.0},
        {"ref": "RB-5104", "customer": "C-131", "site": "rink-east", "date": "2027-01-14", "count": 2, "party": 20, "budget": 700.0},
        {"ref": "RB-5105", "customer": "C-104", "site": "rink-west", "date": "2027-01-15", "count": 3, "party": 10, "budget": 520.0},
    ],
    cases=[
        Case("z01_ice_count", "off_by_one", "parse_plan",
             "The plan parser converts the requested session count as if it were a zero-based index, so only two sessions are booked for a three-session request.",
             root_kind="parse", hops=7),
        Case("z02_ice_slotid", "hallucinated_value", "select",
             "The slot-choosing model returns a slot id that appears in none of the candidates, which the rink desk does not know.",
             root_kind="llm", hops=4),
        Case("z03_ice_draft", "bad_memory_write", "remember",
             "The booking draft written to run state swaps the party size and the session count, so the booking goes out for 3 skaters.",
             root_kind="state", hops=2),
        Case("z04_ice_tariff", "stale_data", "fetch",
             "The timetable tool serves last week's cached price list, and the booking is refused for quoting an outdated tariff.",
             root_kind="tool", hops=9),
        Case("z05_ice_waiver", "wrong_retrieval", "lookup",
             "The waiver search ranks the club's expired 2025 waiver first, and the booking is refused for an expired waiver.",
             root_kind="retrieval", hops=3),
    ],
)


def policy(A: Agent):
    return chat_policy(A)


def record(A: Agent, inp: dict, path: str, base_url: str) -> str:
    return run_sdk(A, inp, path, base_url)
