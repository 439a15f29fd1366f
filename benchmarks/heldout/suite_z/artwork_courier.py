"""Museum artwork loan couriering: OpenAI Agents SDK (agent-as-tool), traced by TrajdebugProcessor."""

from __future__ import annotations

from .common import Agent, Case, agents_locate, agents_policy, run_agents

AGENT = Agent(
    key="artwork_courier", agent="artwork-loan-courier", route="openai_agents", domain="museum artwork loan couriering",
    shape="Agents SDK: coordinator calls crate-van slot tool, holds per slot, draft tool, indemnity agent-as-tool (lookup), quote, book",
    unit="courier leg", party_word="crate units", site_word="depot", doc_word="indemnity", prefix="ART",
    sites=["depot-louvre", "depot-rijks", "depot-prado"],
    customers=[("A-801", "Kunsthal Meerwijk"), ("A-815", "Galleria Sanvito"), ("A-827", "Ashcombe Museum Trust"),
               ("A-833", "Fundacio Miravet")],
    labels=["climate van leg", "fine-art shuttle leg", "air-ride truck leg", "courier-escorted leg",
            "oversize sculpture leg", "shared consolidation leg", "night secure leg"],
    scale=6.0,
    names={"fetch": "list_courier_legs", "hold": "hold_courier_leg", "remember": "save_loan_draft",
           "sub": "indemnity_agent", "lookup": "search_indemnity_register", "total": "quote_loan_transport",
           "submit": "book_loan_transport", "plan": "plan", "select": "select", "resolve": "resolve"},
    inputs=[
        {"ref": "LN-8801", "customer": "A-815", "site": "depot-rijks", "date": "2027-09-06", "count": 3, "party": 13, "budget": 4100.0},
        {"ref": "LN-8802", "customer": "A-801", "site": "depot-louvre", "date": "2027-09-07", "count": 2, "party": 12, "budget": 2300.0},
        {"ref": "LN-8803", "customer": "A-827", "site": "depot-prado", "date": "2027-09-08", "count": 3, "party": 16, "budget": 5500.0},
        {"ref": "LN-8804", "customer": "A-833", "site": "depot-rijks", "date": "2027-09-09", "count": 2, "party": 19, "budget": 3800.0},
        {"ref": "LN-8805", "customer": "A-815", "site": "depot-louvre", "date": "2027-09-10", "count": 3, "party": 11, "budget": 3400.0},
    ],
    cases=[
        Case("z26_art_week", "wrong_tool_args", "fetch_args",
             "The coordinator model calls the courier-leg tool with a date one week after the loan's move date, so the legs are priced on a later list.",
             root_kind="llm", hops=7),
        Case("z27_art_page", "truncated_result", "fetch",
             "The courier-leg tool returns only the first three legs, so too few legs fit the crates and the booking is one leg short.",
             root_kind="tool", hops=6),
        Case("z28_art_recent", "context_pollution", "select",
             "The coordinator model takes a leg id from the museum's previous loan listed in its prompt, which is not offered on the move date.",
             root_kind="llm", hops=4),
        Case("z29_art_date", "format_drift", "plan",
             "The coordinator model writes the move date day-first in its tool call, which the leg service reads month-first, so the legs come from another day's list.",
             root_kind="llm", hops=7),
        Case("z30_art_cents", "lossy_parsing", "parse_item",
             "The quote tool reads the fourth leg's price without its cents, so the transport quote disagrees with the tariff.",
             root_kind="tool", item=3, hops=1),
    ],
)


def policy(A: Agent):
    return agents_policy(A, {})


def record(A: Agent, inp: dict, path: str, base_url: str) -> str:
    return run_agents(A, inp, path, base_url)


locate = agents_locate
