"""Roof-inspection drone surveys, exported as OpenTelemetry/OpenInference spans (OTLP JSON)."""

from __future__ import annotations

from .common import Agent, Case, chat_policy, run_otlp

AGENT = Agent(
    key="roof_drone", agent="roof-drone-surveys", route="otlp", domain="roof-inspection drone survey",
    shape="plan, flight-window list, 7x parse+screen loop, pick, airspace holds, draft memory, permit sub-agent, quote, pre-check, schedule",
    unit="flight window", party_word="roof facets", site_word="district", doc_word="permit", prefix="DRN",
    sites=["district-mill", "district-quay", "district-heath"],
    customers=[("R-301", "Brightwater Housing Co-op"), ("R-312", "Fenwick Estates"), ("R-327", "Oakmoor Parish Council"),
               ("R-335", "Kestrel Roofing Ltd")],
    labels=["dawn window", "low-wind window", "midday window", "thermal window", "restricted-zone window",
            "afternoon window", "dusk window"],
    scale=3.0,
    names={"intake": "receive_survey_order", "plan": "plan_survey", "parse_plan": "parse_survey_plan",
           "fetch": "get_flight_windows", "parse_item": "parse_flight_window", "check_item": "assess_window",
           "select": "select_windows", "hold": "reserve_airspace", "remember": "write_survey_draft",
           "sub": "permit_agent", "resolve": "resolve_client", "lookup": "retrieve_permit",
           "summarise": "summarise_permit", "total": "cost_survey", "preflight": "validate_survey",
           "submit": "schedule_survey"},
    inputs=[
        {"ref": "SV-7701", "customer": "R-312", "site": "district-quay", "date": "2027-03-08", "count": 3, "party": 14, "budget": 2100.0},
        {"ref": "SV-7702", "customer": "R-301", "site": "district-mill", "date": "2027-03-09", "count": 2, "party": 12, "budget": 1200.0},
        {"ref": "SV-7703", "customer": "R-327", "site": "district-heath", "date": "2027-03-10", "count": 3, "party": 17, "budget": 2900.0},
        {"ref": "SV-7704", "customer": "R-335", "site": "district-quay", "date": "2027-03-11", "count": 2, "party": 20, "budget": 2100.0},
        {"ref": "SV-7705", "customer": "R-312", "site": "district-mill", "date": "2027-03-12", "count": 3, "party": 10, "budget": 1500.0},
    ],
    cases=[
        Case("z31_drn_zone", "wrong_routing", "check_item",
             "Assessing the fifth flight window routes a restricted-zone window to the standard queue, so it is accepted and scheduled.",
             root_kind="condition", item=4, hops=4),
        Case("z32_drn_district", "tool_ignores_argument", "fetch",
             "The flight-window service ignores the district filter and returns windows for every district, and a cheaper window in another district is picked.",
             root_kind="tool", hops=5),
        Case("z33_drn_price", "lossy_parsing", "parse_item",
             "Parsing the fourth flight window truncates its price to whole euros, so the survey cost disagrees with the tariff.",
             root_kind="parse", item=3, hops=5),
        Case("z34_drn_count", "off_by_one", "select",
             "The window-selection model returns one window fewer than the order asks for, and the pre-check rejects the short survey.",
             root_kind="llm", hops=2),
        Case("z35_drn_client", "subagent_wrong_entity", "resolve",
             "The permit sub-agent resolves the order to a different client, and the survey is filed with that client's permit.",
             root_kind="llm", hops=3),
    ],
)


def policy(A: Agent):
    return chat_policy(A)


def record(A: Agent, inp: dict, path: str, base_url: str) -> str:
    return run_otlp(A, inp, path, base_url)
