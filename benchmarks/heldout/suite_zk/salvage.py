"""Marine salvage operations (OpenAI Agents SDK): salvage master with survey tools and a dive-planner
agent-as-tool, hand-off to the permit officer (or the insurer liaison) who files the application."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agents import Agent, function_tool
from trajdebug.testing import Reply, tool_call

from .common import Case, agents_model, chat_state, run_agents
from .kit import active

AGENT, ROUTE, DOMAIN = "wreck-salvage-planner", "openai_agents", "marine salvage"
SHAPE = "master: job notes, registry, survey, tides, dive-planner agent-as-tool, lift estimate; routed hand-off; permit filing"

WRECKS = {
    "SJ-21": {"imo": "9301187", "name": "Maren Skov", "owner": "Nordhav Shipping AS", "agent": "Kvist Marine Agency",
              "depth_m": 28, "mass_t": 60, "hazards": ["nets on bow", "broken mast", "open hold", "bunker fuel 40 m3", "lube oil drums"]},
    "SJ-34": {"imo": "9188265", "name": "Tern", "owner": "Baltic Tern Oy", "agent": "Baltic Tern Oy",
              "depth_m": 17, "mass_t": 22, "hazards": ["entangled lines", "collapsed wheelhouse", "diesel 6 m3"]},
    "SJ-40": {"imo": "9411032", "name": "Lys", "owner": "Fjordlys AS", "agent": "Fjordlys AS",
              "depth_m": 12, "mass_t": 15, "hazards": ["debris field", "diesel 2 m3"]},
    "SJ-45": {"imo": "9012877", "name": "Skarv", "owner": "Skarv Fiske", "agent": "Skarv Fiske",
              "depth_m": 24, "mass_t": 35, "hazards": ["trawl doors", "hydraulic oil 1 m3"]},
    "SJ-52": {"imo": "9355102", "name": "Havbris", "owner": "Havbris Cargo", "agent": "Kvist Marine Agency",
              "depth_m": 31, "mass_t": 48, "hazards": ["container stack", "bunker fuel 12 m3", "ammonia cylinders"]},
    "SJ-58": {"imo": "9266710", "name": "Odin", "owner": "Odin Tug AS", "agent": "Odin Tug AS",
              "depth_m": 9, "mass_t": 30, "hazards": ["tow wire", "diesel 4 m3"]},
}
INPUTS = {k: f"Plan salvage of wreck site {k} (IMO {v['imo']}) for applicant {v['agent']}, operation date 2026-08-14"
          for k, v in WRECKS.items()}
REFS = ["SJ-40", "SJ-45", "SJ-52", "SJ-58"]

CASES = [
    Case("zk_salv_1", "wrong_routing", ("generation master-model", 7), ("file_insurance_claim", 1), "SJ-21",
         "The salvage master's model hands off to the insurer liaison instead of the permit officer, who cannot claim without a permit."),
    Case("zk_salv_2", "stale_data", ("vessel_registry", 1), ("file_salvage_permit", 1), "SJ-34",
         "vessel_registry answers from a cached entry with the previous owner, and the permit office rejects the applicant."),
    Case("zk_salv_3", "truncated_result", ("survey_wreck", 1), ("file_salvage_permit", 1), "SJ-21",
         "survey_wreck returns the first three hazards only, so the permit's pollution plan misses the fuel in the tanks."),
    Case("zk_salv_4", "context_pollution", ("recall_job_notes", 1), ("file_salvage_permit", 1), "SJ-34",
         "recall_job_notes mixes in the notes of a deeper earlier job, and the dive plan is made for that depth."),
    Case("zk_salv_5", "unit_error", ("estimate_lift", 1), ("file_salvage_permit", 1), "SJ-21",
         "estimate_lift treats the wreck's tonnes as short tons in pounds, so the declared lift load is far off the mass."),
]


@function_tool
def recall_job_notes(site: str) -> str:
    """Crew notes on file for a wreck site."""
    notes = [{"site": site, "depth_m": WRECKS[site]["depth_m"], "note": "visibility 4 m, current slack at low water"}]
    if active("zk_salv_4"):
        notes.insert(0, {"site": "SJ-09", "depth_m": 62, "note": "deep job, trimix, decompression stops"})
    return json.dumps({"notes": notes})


@function_tool
def vessel_registry(imo: str) -> str:
    """Ship registry entry for an IMO number."""
    w = next(v for v in WRECKS.values() if v["imo"] == imo)
    owner = "Skagen Line ApS" if active("zk_salv_2") else w["owner"]
    return json.dumps({"imo": imo, "name": w["name"], "registered_owner": owner, "as_of": "2026-08-01"})


@function_tool
def survey_wreck(site: str) -> str:
    """Side-scan and ROV survey of a wreck site."""
    w = WRECKS[site]
    hz = w["hazards"][:3] if active("zk_salv_3") else w["hazards"]
    return json.dumps({"site": site, "depth_m": w["depth_m"], "mass_t": w["mass_t"], "hazards": hz, "survey": "SV-" + site[3:]})


@function_tool
def tide_windows(site: str, date: str) -> str:
    """Slack-water windows for a site and date."""
    return json.dumps({"site": site, "date": date, "windows": ["06:10-07:00", "18:25-19:15"]})


@function_tool
def dive_tables(depth_m: int) -> str:
    """Air dive table limits for a depth."""
    gas = "air" if depth_m <= 40 else "trimix"
    return json.dumps({"depth_m": depth_m, "gas": gas, "bottom_min": max(10, 60 - depth_m), "deco": depth_m > 30})


@function_tool
def estimate_lift(mass_t: float, depth_m: int) -> str:
    """Lift load for the wreck incl. suction allowance."""
    kg = mass_t * 2000 * 0.4536 if active("zk_salv_5") else mass_t * 1000
    load_kn = round(kg * 9.81 / 1000 * 1.25, 1)
    return json.dumps({"lift_kn": load_kn, "crane": "SC-1200" if load_kn < 1200 else "SC-2000"})


@function_tool(failure_error_function=None)
def file_salvage_permit(site: str, applicant: str, registered_owner: str, hazards: list[str], dive_depth_m: int,
                        lift_kn: float) -> str:
    """File the salvage permit application with the coastal authority."""
    w = WRECKS[site]
    if registered_owner != w["owner"]:
        raise PermissionError(f"403 Forbidden: registry lists owner '{w['owner']}', application names '{registered_owner}'")
    missing = [h for h in w["hazards"] if h not in hazards]
    if missing:
        raise ValueError(f"422 Unprocessable Entity: pollution plan does not cover surveyed hazard '{missing[0]}'")
    if dive_depth_m != w["depth_m"]:
        raise ValueError(f"422 Unprocessable Entity: dive plan depth {dive_depth_m} m does not match surveyed depth {w['depth_m']} m")
    expect = round(w["mass_t"] * 9.81 * 1.25, 1)
    if abs(lift_kn - expect) > 1:
        raise ValueError(f"422 Unprocessable Entity: declared lift load {lift_kn} kN is inconsistent with wreck mass "
                         f"{w['mass_t']} t ({expect} kN)")
    return json.dumps({"permit": "SP-" + site[3:] + "-0814", "status": "filed"})


@function_tool(failure_error_function=None)
def file_insurance_claim(site: str, applicant: str) -> str:
    """File the hull insurer's salvage claim."""
    raise PermissionError(f"412 Precondition Failed: no salvage permit on record for site {site}; a claim needs the permit number")


def _last(results, name):
    return [v for n, v in results if n == name][-1]


def policy(req):
    system, results, user = chat_state(req.body)
    done = [n for n, _ in results]
    site = re.search(r"SJ-\d+", user).group(0)
    if system.startswith("You are the dive planner"):
        if "dive_tables" not in done:
            depth = int(re.search(r"depth (\d+)", user).group(1))
            return Reply(tool_calls=(tool_call("dive_tables", {"depth_m": depth}),))
        return json.dumps(_last(results, "dive_tables"))
    if system.startswith("You are the salvage master"):
        steps = [("recall_job_notes", {"site": site}), ("vessel_registry", {"imo": re.search(r"IMO (\d+)", user).group(1)}),
                 ("survey_wreck", {"site": site}), ("tide_windows", {"site": site, "date": "2026-08-14"})]
        for name, args in steps:
            if name not in done:
                return Reply(tool_calls=(tool_call(name, args),))
        if "dive_planner" not in done:
            depth = _last(results, "recall_job_notes")["notes"][0]["depth_m"]
            return Reply(tool_calls=(tool_call("dive_planner", {"input": f"Plan dives at {site}, depth {depth} m"}),))
        if "estimate_lift" not in done:
            s = _last(results, "survey_wreck")
            return Reply(tool_calls=(tool_call("estimate_lift", {"mass_t": s["mass_t"], "depth_m": s["depth_m"]}),))
        target = "transfer_to_insurer_liaison" if active("zk_salv_1") else "transfer_to_permit_officer"
        return Reply(tool_calls=(tool_call(target, {}),))
    applicant = re.search(r"applicant (.+), operation", user).group(1)
    if system.startswith("You are the permit officer"):
        if "file_salvage_permit" not in done:
            s = _last(results, "survey_wreck")
            dive = _last(results, "dive_planner")
            return Reply(tool_calls=(tool_call("file_salvage_permit", {
                "site": site, "applicant": applicant, "registered_owner": _last(results, "vessel_registry")["registered_owner"],
                "hazards": s["hazards"], "dive_depth_m": dive["depth_m"], "lift_kn": _last(results, "estimate_lift")["lift_kn"]}),))
        return "Permit " + _last(results, "file_salvage_permit")["permit"] + " filed."
    if system.startswith("You are the insurer liaison"):
        if "file_insurance_claim" not in done:
            return Reply(tool_calls=(tool_call("file_insurance_claim", {"site": site, "applicant": applicant}),))
        return "Claim filed."
    return "ok"


def record(server, inp: str, out: Path) -> None:
    diver = Agent(name="dive_planner", model=agents_model(server, "diver-model"), tools=[dive_tables],
                  instructions="You are the dive planner. Check the dive tables for the depth and answer with the plan as JSON.")
    permits = Agent(name="permit_officer", model=agents_model(server, "permit-model"), tools=[file_salvage_permit],
                    instructions="You are the permit officer. File the salvage permit from the master's survey and plans.")
    insurer = Agent(name="insurer_liaison", model=agents_model(server, "insurer-model"), tools=[file_insurance_claim],
                    instructions="You are the insurer liaison. File the hull insurer's claim for completed salvage.")
    master = Agent(name="salvage_master", model=agents_model(server, "master-model"), handoffs=[permits, insurer],
                   tools=[recall_job_notes, vessel_registry, survey_wreck, tide_windows,
                          diver.as_tool(tool_name="dive_planner", tool_description="Ask the dive planner for a dive plan."),
                          estimate_lift],
                   instructions="You are the salvage master. Gather notes, registry, survey and tides, get a dive plan and a "
                                "lift estimate, then hand off to the permit officer for a new operation.")
    run_agents(master, INPUTS[inp], out, AGENT)
