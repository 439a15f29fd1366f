"""Laundromat machine maintenance, exported as OpenTelemetry/OpenInference spans (OTLP JSON)."""

from __future__ import annotations

from .common import Agent, Case, chat_policy, run_otlp

AGENT = Agent(
    key="laundromat", agent="laundromat-maintenance", route="otlp", domain="laundromat machine maintenance",
    shape="plan, service-slot list, 7x parse+screen loop, pick, technician holds, draft memory, warranty sub-agent, quote, pre-check, dispatch",
    unit="service visit", party_word="machines", site_word="branch", doc_word="warranty", prefix="LDR",
    sites=["branch-elm", "branch-ford", "branch-yard"],
    customers=[("L-401", "SpinCycle Elm Street"), ("L-415", "Suds & Co Ford Road"), ("L-428", "Bubbles Yardside"),
               ("L-436", "Tumble Town Franchise")],
    labels=["washer descale", "dryer belt swap", "drum bearing check", "coin-mech service", "gas dryer overhaul",
            "pump clean", "door seal swap"],
    scale=2.0,
    names={"intake": "log_maintenance_ticket", "plan": "plan_maintenance", "parse_plan": "parse_maintenance_plan",
           "fetch": "query_service_slots", "parse_item": "parse_service_slot", "check_item": "triage_slot",
           "select": "choose_service_slots", "hold": "reserve_technician", "remember": "record_job_draft",
           "sub": "warranty_agent", "resolve": "find_site_owner", "lookup": "retrieve_warranty",
           "summarise": "summarise_warranty", "total": "cost_job", "preflight": "check_job",
           "submit": "dispatch_technician"},
    inputs=[
        {"ref": "MT-9101", "customer": "L-415", "site": "branch-ford", "date": "2027-04-05", "count": 3, "party": 13, "budget": 1300.0},
        {"ref": "MT-9102", "customer": "L-401", "site": "branch-elm", "date": "2027-04-06", "count": 2, "party": 11, "budget": 700.0},
        {"ref": "MT-9103", "customer": "L-428", "site": "branch-yard", "date": "2027-04-07", "count": 3, "party": 16, "budget": 1700.0},
        {"ref": "MT-9104", "customer": "L-436", "site": "branch-ford", "date": "2027-04-08", "count": 2, "party": 19, "budget": 1300.0},
        {"ref": "MT-9105", "customer": "L-415", "site": "branch-elm", "date": "2027-04-09", "count": 3, "party": 12, "budget": 1250.0},
    ],
    cases=[
        Case("z36_ldr_date", "format_drift", "plan",
             "The planning model writes the visit date as day/month/year, which the slot service reads month-first, so the job is costed on another day's price list.",
             root_kind="llm", hops=9),
        Case("z37_ldr_hold", "swallowed_error", "hold",
             "Reserving a technician for the third slot times out inside the tool, which returns a queued status instead of an error, and the dispatch finds no hold.",
             root_kind="tool", item=2, hops=3),
        Case("z38_ldr_recent", "context_pollution", "select",
             "The slot-choosing model takes an id from the branch's previous order listed in its prompt, which is not offered on the visit date.",
             root_kind="llm", hops=4),
        Case("z39_ldr_sum", "off_by_one", "total",
             "The job costing loop stops one slot short, so the quoted total leaves out the last service visit.",
             root_kind="other", hops=1),
        Case("z40_ldr_branch", "tool_ignores_argument", "fetch",
             "The slot service ignores the branch filter and lists every branch's slots, so cheaper visits at another branch are dispatched.",
             root_kind="tool", hops=5),
    ],
)


def policy(A: Agent):
    return chat_policy(A)


def record(A: Agent, inp: dict, path: str, base_url: str) -> str:
    return run_otlp(A, inp, path, base_url)
