"""Scuba dive centre (OpenAI Agents SDK): check a diver, pick a site, plan gas with a sub-agent, book the boat dive."""

from __future__ import annotations

import json
from pathlib import Path

from agents import Agent, function_tool
from trajdebug.testing import Reply, tool_call

from . import common
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "dive-desk", "openai_agents", "scuba dive centre", "jsonl"

DIVERS = {
    "D-301": {"name": "Maja Lind", "agency": "PADI", "level": "Open Water", "sac_l_min": 18, "buddy": "D-302", "date": "2026-12-12"},
    "D-302": {"name": "Kofi Asare", "agency": "SSI", "level": "Advanced", "sac_l_min": 14, "buddy": "D-301", "date": "2026-12-13"},
    "D-303": {"name": "Ana Ruiz", "agency": "PADI", "level": "Advanced", "sac_l_min": 15, "buddy": "D-304", "date": "2026-12-14"},
    "D-304": {"name": "Jon Berg", "agency": "BSAC", "level": "Sports Diver", "sac_l_min": 16, "buddy": "D-303", "date": "2026-12-14"},
    "D-305": {"name": "Lea Novak", "agency": "SSI", "level": "Open Water", "sac_l_min": 20, "buddy": "D-306", "date": "2026-12-15"},
    "D-306": {"name": "Sam Okoro", "agency": "PADI", "level": "Rescue", "sac_l_min": 13, "buddy": "D-305", "date": "2026-12-16"},
}
REFS = ["D-303", "D-304", "D-305", "D-306"]
LIMIT = {"Open Water": 18, "Advanced": 30, "Sports Diver": 35, "Rescue": 30}
SITES = {"Blue Hole Reef": 16, "Anchor Wall": 28, "Wreck of the Ellan": 24, "Coral Gardens": 12}
PROFILE_CACHE: dict = {}


@function_tool
def get_diver_profile(diver_id: str) -> str:
    """Fetch a diver's profile."""
    return json.dumps({"diver_id": diver_id, **DIVERS[diver_id]})


@function_tool
def check_certification(diver_id: str, agency: str) -> str:
    """Verify a diver's certification with the agency."""
    d = DIVERS[diver_id]
    return json.dumps({"diver_id": diver_id, "agency": agency, "level": d["level"], "max_depth_m": LIMIT[d["level"]], "verified": True})


@function_tool
def list_sites(date: str) -> str:
    """List the boat sites running on a date."""
    return json.dumps([{"site": s, "max_depth_m": m} for s, m in SITES.items()])


@function_tool
def get_conditions(site: str, date: str) -> str:
    """Fetch the forecast sea conditions for a site and date."""
    if active("scuba_cond_quiet") and site == "Wreck of the Ellan":
        try:
            raise TimeoutError("buoy feed did not answer")
        except TimeoutError:
            return json.dumps({"site": site, "date": date, "swell_m": 0.0, "current_kn": 0.0, "report": None})
    return json.dumps({"site": site, "date": date, "swell_m": round(0.4 + len(site) % 5 * 0.2, 1),
                       "current_kn": 0.5 + len(site) % 3 * 0.3, "report": f"CR-{date}-{site[:4].upper()}"})


@function_tool
def compute_gas(diver_id: str, depth_m: int, minutes: int, sac_l_min: int) -> str:
    """Compute the gas needed for a dive (rule of thirds)."""
    ata = depth_m / 10 + 1
    need = round(sac_l_min * ata * minutes * 1.5)
    return json.dumps({"diver_id": diver_id, "plan_ref": f"GP-{diver_id}-{depth_m}", "gas_l": need, "tank": "15 L" if need > 2400 else "12 L"})


def _book(diver_id: str, site: str, date: str, depth_m: int, gas_plan: str, conditions_report: str) -> str:
    d = DIVERS[diver_id]
    gp = json.loads(gas_plan)
    if not conditions_report or conditions_report == "None":
        raise RuntimeError(f"booking API 422: no conditions report for {site} on {date}; boat cannot be assigned")
    if not conditions_report.startswith(f"CR-{d['date']}"):
        raise RuntimeError(f"booking API 409: conditions report {conditions_report} does not cover the dive date {d['date']}")
    if depth_m > LIMIT[d["level"]]:
        raise RuntimeError(f"booking API 422: planned depth {depth_m} m exceeds the {d['level']} limit of {LIMIT[d['level']]} m")
    if gp["diver_id"] != diver_id:
        raise RuntimeError(f"booking API 409: gas plan {gp['plan_ref']} was computed for diver {gp['diver_id']}, booking is for {diver_id}")
    if date != d["date"]:
        raise RuntimeError(f"booking API 409: booking date {date} does not match the diver's requested date {d['date']}")
    return json.dumps({"booking": f"BD-{diver_id}-{site[:4].upper()}", "status": "confirmed"})


book_dive = function_tool(_book, name_override="book_dive", description_override="Book the boat dive.", failure_error_function=None)


@common.handler("scuba:gas")
def _gas(msgs, tools):
    req = json.loads(common.first_user(msgs))
    done = common.calls_and_results(msgs)
    who = DIVERS[req["diver_id"]]["buddy"] if active("scuba_gas_buddy") else req["diver_id"]
    if not done:
        return Reply(tool_calls=(tool_call("get_diver_profile", {"diver_id": who}),))
    if len(done) == 1:
        prof = json.loads(done[0][2])
        return Reply(tool_calls=(tool_call("compute_gas", {"diver_id": prof["diver_id"], "depth_m": req["depth_m"], "minutes": req["minutes"], "sac_l_min": prof["sac_l_min"]}),))
    return done[-1][2]


@common.handler("scuba:desk")
def _desk(msgs, tools):
    diver_id = common.first_user(msgs).split()[-1]
    done = common.calls_and_results(msgs)
    names = [n for n, _, _ in done]
    res = {n: json.loads(r) if r.startswith(("{", "[")) else r for n, _, r in done}
    if not done:
        return Reply(tool_calls=(tool_call("get_diver_profile", {"diver_id": diver_id}),))
    prof = res["get_diver_profile"]
    date = prof["date"]
    if "check_certification" not in names and "list_sites" not in names:
        if active("scuba_skip_cert"):
            return Reply(tool_calls=(tool_call("list_sites", {"date": date}),))
        return Reply(tool_calls=(tool_call("check_certification", {"diver_id": diver_id, "agency": prof["agency"]}),))
    if "list_sites" not in names:
        return Reply(tool_calls=(tool_call("list_sites", {"date": date}),))
    limit = res["check_certification"]["max_depth_m"] if "check_certification" in res else 30
    sites = [s for s in res["list_sites"] if s["max_depth_m"] <= limit]
    sites.sort(key=lambda s: -s["max_depth_m"])
    checked = [a["site"] for n, a, _ in done if n == "get_conditions"]
    if len(checked) < 2:
        site = sites[len(checked)]["site"]
        when = "2026-12-11" if active("scuba_cond_date") else date
        return Reply(tool_calls=(tool_call("get_conditions", {"site": site, "date": when}),))
    conds = [json.loads(r) for n, _, r in done if n == "get_conditions"]
    best = min(conds, key=lambda c: c["swell_m"] + c["current_kn"])
    depth = next(s["max_depth_m"] for s in sites if s["site"] == best["site"])
    if "gas_planner" not in names:
        return Reply(tool_calls=(tool_call("gas_planner", {"input": json.dumps({"diver_id": diver_id, "depth_m": depth, "minutes": 45})}),))
    if "book_dive" not in names:
        if active("scuba_depth_claim"):
            depth = 30
        return Reply(tool_calls=(tool_call("book_dive", {"diver_id": diver_id, "site": best["site"], "date": date, "depth_m": depth,
                                                         "gas_plan": res["gas_planner"] if isinstance(res["gas_planner"], str) else json.dumps(res["gas_planner"]),
                                                         "conditions_report": str(best["report"])}),))
    return f"Booked {res['book_dive']['booking']} for {prof['name']}."


def _agents() -> Agent:
    gas = Agent(name="gas_planner", instructions="[scuba:gas] You compute a diver's gas plan.", model=common.agents_model(),
                tools=[get_diver_profile, compute_gas])
    return Agent(name="dive_desk", instructions="[scuba:desk] You run the dive centre's booking desk.", model=common.agents_model(),
                 tools=[get_diver_profile, check_certification, list_sites, get_conditions,
                        gas.as_tool(tool_name="gas_planner", tool_description="Plan the gas for one diver's dive."), book_dive])


def record(diver_id: str, path: Path) -> None:
    common.run_agents(_agents(), f"Book the next boat dive for diver {diver_id}", path, AGENT, f"book a dive for {diver_id}")


CASES = [
    dict(case="zr_scuba_01", fault_id="scuba_depth_claim", kind="hallucinated_value", input="D-301", root=("generation gpt-4o-mini", 10),
         failure=("book_dive", 1), description="the desk model books a 30 m depth that no tool result states for this Open Water diver."),
    dict(case="zr_scuba_02", fault_id="scuba_cond_date", kind="wrong_tool_args", input="D-302", root=("generation gpt-4o-mini", 4),
         failure=("book_dive", 1), description="the desk model asks for sea conditions on the day before the dive."),
    dict(case="zr_scuba_03", fault_id="scuba_gas_buddy", kind="subagent_wrong_entity", input="D-301", root=("generation gpt-4o-mini", 7),
         failure=("book_dive", 1), description="the gas planner sub-agent loads the buddy's profile and plans gas for the buddy."),
    dict(case="zr_scuba_04", fault_id="scuba_skip_cert", kind="plan_error", input="D-301", root=("generation gpt-4o-mini", 2),
         failure=("book_dive", 1), description="the desk model skips the certification check and plans sites with a 30 m default limit."),
    dict(case="zr_scuba_05", fault_id="scuba_cond_quiet", kind="swallowed_error", input="D-302", root=("get_conditions", 2),
         failure=("book_dive", 1), description="the conditions tool swallows a buoy-feed timeout and reports calm sea with no report id."),
]
