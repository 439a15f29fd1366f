"""Falconry bird control at an airfield: OpenAI Agents SDK (agent-as-tool), traced by TrajdebugProcessor."""

from __future__ import annotations

from .common import Agent, Case, agents_locate, agents_policy, run_agents

AGENT = Agent(
    key="falconry", agent="airfield-falconry-dispatch", route="openai_agents", domain="airfield falconry bird control",
    shape="Agents SDK: coordinator calls patrol-slot tool, holds per slot, draft tool, permit agent-as-tool (lookup), quote, book",
    unit="patrol slot", party_word="minutes aloft", site_word="runway", doc_word="airside", prefix="HWK",
    sites=["runway-09", "runway-27", "runway-14"],
    customers=[("F-701", "Eastfield Aerodrome Ops"), ("F-716", "Northmoor Airfield"), ("F-722", "Skyline Cargo Apron"),
               ("F-739", "Vale Gliding Strip")],
    labels=["harris hawk dawn sweep", "peregrine lure patrol", "lanner apron patrol", "saker grass patrol",
            "eagle owl night flight", "goshawk hedge patrol", "merlin perimeter run"],
    scale=5.0,
    names={"fetch": "list_patrol_slots", "hold": "hold_patrol_slot", "remember": "save_patrol_draft",
           "sub": "airside_permit_agent", "lookup": "find_airside_pass", "total": "quote_patrols",
           "submit": "book_patrols", "plan": "plan", "select": "select", "resolve": "resolve"},
    inputs=[
        {"ref": "BC-2201", "customer": "F-716", "site": "runway-27", "date": "2027-07-05", "count": 3, "party": 14, "budget": 3600.0},
        {"ref": "BC-2202", "customer": "F-701", "site": "runway-09", "date": "2027-07-06", "count": 2, "party": 12, "budget": 1900.0},
        {"ref": "BC-2203", "customer": "F-722", "site": "runway-14", "date": "2027-07-07", "count": 3, "party": 17, "budget": 4800.0},
        {"ref": "BC-2204", "customer": "F-739", "site": "runway-27", "date": "2027-07-08", "count": 2, "party": 20, "budget": 3300.0},
        {"ref": "BC-2205", "customer": "F-716", "site": "runway-09", "date": "2027-07-09", "count": 3, "party": 10, "budget": 2600.0},
    ],
    cases=[
        Case("z21_hwk_minutes", "hallucinated_value", "plan",
             "The coordinator model states 24 minutes aloft per slot when the request asks for 14, and the booking is refused for that figure.",
             root_kind="llm", hops=5),
        Case("z22_hwk_pass", "subagent_wrong_entity", "resolve",
             "The airside permit agent, run as a tool, looks up the next airfield's pass instead of the requesting airfield's.",
             root_kind="llm", hops=4),
        Case("z23_hwk_cache", "stale_data", "fetch",
             "The patrol-slot tool answers from last week's cached rate card, and the booking is refused for an outdated tariff.",
             root_kind="tool", hops=6),
        Case("z24_hwk_hold", "swallowed_error", "hold",
             "Holding the first patrol slot times out inside the tool, which answers queued with no hold id, and the booking finds no hold.",
             root_kind="tool", item=0, hops=3),
        Case("z25_hwk_verify", "plan_error", "plan",
             "The coordinator plans without the verify step, so the night eagle-owl flight that needs special clearance is chosen and booked.",
             root_kind="llm", hops=6),
    ],
)


def policy(A: Agent):
    return agents_policy(A, {})


def record(A: Agent, inp: dict, path: str, base_url: str) -> str:
    return run_agents(A, inp, path, base_url)


locate = agents_locate
