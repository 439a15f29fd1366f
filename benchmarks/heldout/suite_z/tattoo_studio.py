"""Tattoo studio appointments, recorded with the trajdebug SDK."""

from __future__ import annotations

from .common import Agent, Case, chat_policy, run_sdk

AGENT = Agent(
    key="tattoo_studio", agent="tattoo-studio-appointments", route="sdk", domain="tattoo studio appointment",
    shape="plan, chair-time list, 7x parse+screen loop, pick, deposits held, draft in run.state, consent sub-agent, quote, pre-check, confirm",
    unit="sitting", party_word="minutes per sitting", site_word="studio", doc_word="consent", prefix="INK",
    sites=["studio-canal", "studio-docks", "studio-arcade"],
    customers=[("P-201", "Rowan Achterberg"), ("P-214", "Mika Sorensen"), ("P-226", "Ines Carvalho"),
               ("P-238", "Theo Lindqvist")],
    labels=["fine-line chair", "blackwork chair", "colour realism chair", "lettering chair", "cover-up suite",
            "flash chair", "guest artist chair"],
    scale=1.0,
    names={"intake": "take_enquiry", "plan": "draft_session_plan", "parse_plan": "read_session_plan",
           "fetch": "list_chair_times", "parse_item": "normalise_chair_time", "check_item": "vet_chair_time",
           "select": "pick_chair_times", "hold": "take_deposit_hold", "remember": "store_appointment_draft",
           "sub": "consent_clerk", "resolve": "match_client_record", "lookup": "find_consent_form",
           "summarise": "note_consent", "total": "quote_appointment", "preflight": "check_quote",
           "submit": "confirm_appointment"},
    inputs=[
        {"ref": "TA-3301", "customer": "P-214", "site": "studio-docks", "date": "2027-02-09", "count": 3, "party": 12, "budget": 720.0},
        {"ref": "TA-3302", "customer": "P-201", "site": "studio-canal", "date": "2027-02-10", "count": 2, "party": 15, "budget": 560.0},
        {"ref": "TA-3303", "customer": "P-226", "site": "studio-arcade", "date": "2027-02-11", "count": 3, "party": 11, "budget": 700.0},
        {"ref": "TA-3304", "customer": "P-238", "site": "studio-docks", "date": "2027-02-12", "count": 2, "party": 16, "budget": 600.0},
        {"ref": "TA-3305", "customer": "P-214", "site": "studio-canal", "date": "2027-02-05", "count": 3, "party": 13, "budget": 720.0},
    ],
    cases=[
        Case("z06_ink_coverup", "wrong_routing", "check_item",
             "Vetting the fifth chair time routes the cover-up suite, which needs special handling, to the standard queue, so it is booked online.",
             root_kind="condition", item=4, hops=4),
        Case("z07_ink_plan", "plan_error", "plan",
             "The session plan leaves out the verify step, so chair times are never screened and a cover-up suite needing special handling is booked.",
             root_kind="llm", hops=6),
        Case("z08_ink_deposit", "swallowed_error", "hold",
             "The deposit hold for the second chair time times out inside the tool, which reports it as queued and the run carries on without a hold.",
             root_kind="tool", item=1, hops=3),
        Case("z09_ink_cents", "unit_error", "total",
             "The quote step sums prices in cents and never converts them to euros, so the pre-check finds the quote far over budget.",
             root_kind="other", hops=1),
        Case("z10_ink_client", "subagent_wrong_entity", "resolve",
             "The consent clerk sub-agent matches the enquiry to the next client on file, so it attaches another client's consent form.",
             root_kind="llm", hops=3),
    ],
)


def policy(A: Agent):
    return chat_policy(A)


def record(A: Agent, inp: dict, path: str, base_url: str) -> str:
    return run_sdk(A, inp, path, base_url)
