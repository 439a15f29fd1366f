"""Suite K's agents and its 40 cases (which switch, which step first holds the wrong value)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import agents_sdk_agents as oa
from . import langgraph_agents as lg
from . import otlp_agents as ot
from . import sdk_agents as sdk
from ._harness import Case


@dataclass(frozen=True, slots=True)
class Agent:
    """An agent of the suite: how to run it on one input, its model policy, its reference inputs."""

    route: str
    run: Callable[[dict[str, Any], Any, Path], None]
    policy: Callable[..., Any]
    given: Any
    refs: tuple[Any, ...]


def _sync(fn: Callable[[Any, Any, Path], None]) -> Callable[[dict[str, Any], Any, Path], None]:
    return lambda clients, given, path: fn(clients["sync"], given, path)


AGENTS: dict[str, Agent] = {
    "fixture-scheduler": Agent("sdk", _sync(sdk.fixture_agent), sdk.fixture_policy, sdk.FIXTURE_INPUTS[0],
                               tuple(sdk.FIXTURE_INPUTS[1:])),
    "ration-planner": Agent("sdk", _sync(sdk.zoo_agent), sdk.zoo_policy, sdk.ZOO_INPUTS[0], tuple(sdk.ZOO_INPUTS[1:])),
    "plow-dispatcher": Agent("langgraph", lg.plow_agent, lg.plow_policy, lg.PLOW_INPUTS[0], tuple(lg.PLOW_INPUTS[1:])),
    "spectrum-licensing": Agent("langgraph", lg.spectrum_agent, lg.spectrum_policy, lg.SPECTRUM_INPUTS[0],
                                tuple(lg.SPECTRUM_INPUTS[1:])),
    "festival-programmer": Agent("openai_agents", oa.festival_agent, oa.festival_policy, oa.FESTIVAL_INPUTS[0],
                                 tuple(oa.FESTIVAL_INPUTS[1:])),
    "textbook-procurement": Agent("openai_agents", oa.textbook_agent, oa.textbook_policy, oa.TEXTBOOK_INPUTS[0],
                                  tuple(oa.TEXTBOOK_INPUTS[1:])),
    "release-planner": Agent("otlp", ot.reservoir_agent, ot.reservoir_policy, ot.RESERVOIR_INPUTS[0],
                             tuple(ot.RESERVOIR_INPUTS[1:])),
    "inspection-planner": Agent("otlp", ot.bridge_agent, ot.bridge_policy, ot.BRIDGE_INPUTS[0], tuple(ot.BRIDGE_INPUTS[1:])),
}

_ROWS = [
    # case, agent, fault kind, switch, root step, marker of the wrong value
    ("k01", "fixture-scheduler", "off_by_one", "k_fix_obo", "fetch_calendar", "2026-03-16"),
    ("k02", "fixture-scheduler", "plan_error", "k_fix_plan", "ask_model", "Harbor FC vs Rovers"),
    ("k03", "fixture-scheduler", "lossy_parsing", "k_fix_lossy", "parse_pairings", '"home": "Rovers"'),
    ("k04", "fixture-scheduler", "swallowed_error", "k_fix_swallow", "reserve_venue", "TBC"),
    ("k05", "fixture-scheduler", "unit_error", "k_fix_unit", "record_broadcast", "1.75"),
    ("k06", "ration-planner", "stale_data", "k_zoo_stale", "fetch_weights", "2025-02-03"),
    ("k07", "ration-planner", "wrong_retrieval", "k_zoo_retrieval", "lookup_diet", '"sheet": "DS-101", "species": "Okapi"'),
    ("k08", "ration-planner", "bad_memory_write", "k_zoo_memory", "remember_exclusions", "ZK-0121"),
    ("k09", "ration-planner", "hallucinated_value", "k_zoo_halluc", "ask_model", "420.0"),
    ("k10", "ration-planner", "context_pollution", "k_zoo_pollute", "build_context", "enrichment feed trial"),
    ("k11", "plow-dispatcher", "unit_error", "k_plow_unit", "get_forecast", "4.7"),
    ("k12", "plow-dispatcher", "tool_ignores_argument", "k_plow_ignore", "list_routes", "R-N-31"),
    ("k13", "plow-dispatcher", "truncated_result", "k_plow_trunc", "list_routes", '"count": 3'),
    ("k14", "plow-dispatcher", "format_drift", "k_plow_drift", "assign_plow", "2026-12-02T06:40"),
    ("k15", "plow-dispatcher", "wrong_tool_args", "k_plow_args", "ChatOpenAI", "East"),
    ("k16", "spectrum-licensing", "off_by_one", "k_spec_obo", "parse_application", '"channels": 3'),
    ("k17", "spectrum-licensing", "wrong_routing", "k_spec_route", "ChatOpenAI", "broadcast"),
    ("k18", "spectrum-licensing", "subagent_wrong_entity", "k_spec_entity", "ChatOpenAI", "Keller Broadcasting"),
    ("k19", "spectrum-licensing", "stale_data", "k_spec_stale", "search_grants", "2025-09-30"),
    ("k20", "spectrum-licensing", "bad_memory_write", "k_spec_memory", "record_conditions", "55.0"),
    ("k21", "festival-programmer", "wrong_routing", "k_fest_route", "generation fake-model", "transfer_to_shorts_programmer"),
    ("k22", "festival-programmer", "truncated_result", "k_fest_trunc", "search_submissions", '"total": 2'),
    ("k23", "festival-programmer", "format_drift", "k_fest_drift", "get_screening_slots", "7:30 PM"),
    ("k24", "festival-programmer", "subagent_wrong_entity", "k_fest_entity", "generation fake-model", "F-2207"),
    ("k25", "festival-programmer", "hallucinated_value", "k_fest_halluc", "generation fake-model", ": 79,"),
    ("k26", "textbook-procurement", "plan_error", "k_book_plan", "generation fake-model", "section A;"),
    ("k27", "textbook-procurement", "lossy_parsing", "k_book_lossy", "lookup_course", '"seats": 88'),
    ("k28", "textbook-procurement", "wrong_retrieval", "k_book_retrieval", "search_catalog", "978-1-4921-7739-6"),
    ("k29", "textbook-procurement", "swallowed_error", "k_book_swallow", "get_quote", "Q-pending"),
    ("k30", "textbook-procurement", "tool_ignores_argument", "k_book_ignore", "get_quote", '"qty": 1,'),
    ("k31", "release-planner", "unit_error", "k_res_unit", "read_inflow_forecast", "1412.4"),
    ("k32", "release-planner", "swallowed_error", "k_res_swallow", "read_storage", "offline"),
    ("k33", "release-planner", "truncated_result", "k_res_trunc", "get_demands", '"days": 5'),
    ("k34", "release-planner", "wrong_tool_args", "k_res_args", "ChatCompletion", "Upper Canal"),
    ("k35", "release-planner", "context_pollution", "k_res_pollute", "build_prompt", "flood watch"),
    ("k36", "inspection-planner", "plan_error", "k_br_plan", "ChatCompletion", "defer B-0619"),
    ("k37", "inspection-planner", "lossy_parsing", "k_br_lossy", "parse_ratings", '"min_rating": 4, "superstructure": 5'),
    ("k38", "inspection-planner", "wrong_routing", "k_br_route", "ChatCompletion", "B-0617: routine"),
    ("k39", "inspection-planner", "hallucinated_value", "k_br_halluc", "ChatCompletion", "post 40 t"),
    ("k40", "inspection-planner", "bad_memory_write", "k_br_memory", "remember_priority", '"bridge": "B-0617", "priority": 3'),
]

CASES = [
    Case(case=c, agent=a, route=AGENTS[a].route, fault_kind=k, fault_id=f, root_name=r, marker=m, given=AGENTS[a].given)
    for c, a, k, f, r, m in _ROWS
]
