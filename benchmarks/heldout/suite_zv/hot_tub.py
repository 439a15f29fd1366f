"""Hot tub installation: survey, spec, circuit and permit checks, then book the install crew (OpenAI Agents SDK)."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

from agents import Agent, RunConfig, Runner, function_tool
from agents.exceptions import AgentsException

from trajdebug.testing import Reply, tool_call

from .common import Case
from .kit import active
from .oa_common import model_for, processor_for, view

AGENT = "hot-tub-install-coordinator"
ROUTE = "openai_agents"

SITES = {
    "S-204": {"customer": "Harwood", "address": "14 Eastfield Road", "council": "Westfield", "slab": 450, "gates": [2.6, 2.3, 1.9, 1.2]},
    "S-219": {"customer": "Moyo", "address": "3 Quarry Lane", "council": "Ashby", "slab": 520, "gates": [2.8, 2.5, 2.4]},
    "S-231": {"customer": "Lindgren", "address": "77 Mill Street", "council": "Westfield", "slab": 480, "gates": [2.4, 1.1]},
    "S-246": {"customer": "Perrault", "address": "9 Orchard Close", "council": "Ashby", "slab": 610, "gates": [3.0, 2.7]},
    "S-258": {"customer": "Nakamura", "address": "21 Heath View", "council": "Brookmere", "slab": 500, "gates": [2.2, 2.5, 2.9]},
    "S-263": {"customer": "Adeyemi", "address": "5 Riverside Walk", "council": "Brookmere", "slab": 470, "gates": [1.6, 2.8]},
}
TUBS = {
    "Aurora 7": {"width_m": 2.1, "filled_kg": 1900, "footprint_m2": 4.8, "heater_kw": 7.5, "pump_kw": 2.2},
    "Solace 5": {"width_m": 1.9, "filled_kg": 1350, "footprint_m2": 3.6, "heater_kw": 5.5, "pump_kw": 1.5},
    "Tidewell 4": {"width_m": 1.8, "filled_kg": 1050, "footprint_m2": 3.2, "heater_kw": 3.0, "pump_kw": 1.1},
}
JOBS = {"JOB-81": ("S-204", "Aurora 7"), "JOB-86": ("S-219", "Solace 5"), "JOB-90": ("S-231", "Tidewell 4"),
        "JOB-93": ("S-246", "Aurora 7"), "JOB-97": ("S-258", "Solace 5"), "JOB-99": ("S-263", "Tidewell 4")}
BREAKERS = [16, 20, 32, 40, 50]


class BookingRejected(Exception):
    pass


@function_tool
def get_site_survey(site_id: str) -> str:
    """Site survey: slab rating, access gate widths from street to pad, address."""
    s = SITES[site_id]
    gates = s["gates"]
    if active("hot-02"):
        gates = gates[:2]  # the survey app's export keeps the first two measurements
    return json.dumps({"site": site_id, "survey": f"SV-{site_id[2:]}", "address": s["address"], "slab_rating_kg_m2": s["slab"], "access_widths_m": gates})


@function_tool
def lookup_tub_model(model: str) -> str:
    """The manufacturer's spec sheet for a tub model, as text."""
    t = TUBS[model]
    return (f"{model} spec sheet. Width: {t['width_m']} m. Filled weight: {t['filled_kg']} kg. "
            f"Footprint: {t['footprint_m2']} m2. Heater: {t['heater_kw']} kW. Circulation pump: {t['pump_kw']} kW. Supply: 230 V single phase.")


@function_tool
def parse_spec_sheet(text: str) -> str:
    """Turn a spec sheet's text into fields."""
    def num(label: str) -> float:
        raw = re.search(label + r": ([\d.]+)", text).group(1)
        if active("hot-05") and label == "Heater":
            return float(int(float(raw)))
        return float(raw)
    return json.dumps({"width_m": num("Width"), "filled_kg": num("Filled weight"), "footprint_m2": num("Footprint"),
                       "heater_kw": num("Heater"), "pump_kw": num("Circulation pump")})


@function_tool
def compute_circuit(load_kw: float) -> str:
    """Size the dedicated supply circuit for a heater load at 230 V."""
    amps = load_kw * 1000 / 230
    breaker = next(b for b in BREAKERS if b >= amps)
    return json.dumps({"design_current_a": round(amps, 1), "breaker_a": breaker, "cable_mm2": 6 if breaker <= 32 else 10})


@function_tool
def lookup_council_rules(council: str) -> str:
    """Permitted-development rules and a pre-approval reference for a council."""
    return json.dumps({"council": council, "permit_ref": f"PD-{council[:4].upper()}-{len(council) * 37}", "planning_needed": False})


@function_tool(failure_error_function=None)
def book_installation(site_id: str, model: str, delivery: str, breaker_a: int, permit_ref: str, slab_rating_kg_m2: int) -> str:
    """Book the install crew; the scheduling system validates the job."""
    s, t = SITES[site_id], TUBS[model]
    if slab_rating_kg_m2 != s["slab"]:
        raise BookingRejected(f"422 job validation: declared slab rating {slab_rating_kg_m2} kg/m2 does not match survey SV-{site_id[2:]} ({s['slab']} kg/m2)")
    if delivery != "crane" and min(s["gates"]) < t["width_m"]:
        raise BookingRejected(f"422 job validation: delivery '{delivery}' impossible, narrowest access {min(s['gates'])} m < {model} width {t['width_m']} m; crane lift required")
    need = next(b for b in BREAKERS if b >= t["heater_kw"] * 1000 / 230)
    if breaker_a < need:
        raise BookingRejected(f"422 job validation: supply breaker {breaker_a} A below the {need} A required for the {model} heater ({t['heater_kw']} kW)")
    expected = f"PD-{s['council'][:4].upper()}-{len(s['council']) * 37}"
    if permit_ref != expected:
        raise BookingRejected(f"409 permit check: reference {permit_ref} is not registered for {s['address']} ({s['council']} council)")
    return json.dumps({"booking": f"INST-{site_id[2:]}-{model[:3].upper()}", "crew": "Crew B", "status": "confirmed"})


def coordinator_policy(user: str, res: dict):
    job = re.search(r"JOB-\d+", user).group(0)
    site_id, model = JOBS[job]
    if "get_site_survey" not in res:
        return Reply(tool_calls=(tool_call("get_site_survey", {"site_id": site_id}),))
    if "lookup_tub_model" not in res:
        return Reply(tool_calls=(tool_call("lookup_tub_model", {"model": model}),))
    if "parse_spec_sheet" not in res:
        return Reply(tool_calls=(tool_call("parse_spec_sheet", {"text": res["lookup_tub_model"][0]}),))
    spec, survey = res["parse_spec_sheet"][0], res["get_site_survey"][0]
    if "compute_circuit" not in res:
        load = spec["pump_kw"] if active("hot-04") else spec["heater_kw"]
        return Reply(tool_calls=(tool_call("compute_circuit", {"load_kw": load}),))
    if "check_permit" not in res:
        return Reply(tool_calls=(tool_call("check_permit", {"input": f"Pre-approval for a hot tub at {survey['address']}, site {site_id}."}),))
    if "book_installation" not in res:
        delivery = "crane" if min(survey["access_widths_m"]) < spec["width_m"] else "side gate"
        permit = re.search(r"PD-[A-Z]+-\d+", res["check_permit"][0] if isinstance(res["check_permit"][0], str) else json.dumps(res["check_permit"][0])).group(0)
        slab = 600 if active("hot-01") else survey["slab_rating_kg_m2"]
        return Reply(tool_calls=(tool_call("book_installation", {"site_id": site_id, "model": model, "delivery": delivery,
                                                                 "breaker_a": res["compute_circuit"][0]["breaker_a"], "permit_ref": permit,
                                                                 "slab_rating_kg_m2": slab}),))
    return f"Booked: {res['book_installation'][0]['booking']}."


def permit_policy(user: str, res: dict):
    if "lookup_council_rules" not in res:
        site_id = re.search(r"S-\d+", user).group(0)
        council = SITES[site_id]["council"]
        if active("hot-03"):
            council = re.search(r"\d+ (\w+) Road", user).group(1)  # reads the council off the street name
        return Reply(tool_calls=(tool_call("lookup_council_rules", {"council": council}),))
    r = res["lookup_council_rules"][0]
    return f"Permitted development for {r['council']}: no planning needed. Pre-approval {r['permit_ref']}."


def policy(request):
    system, user, res = view(request)
    if system.startswith("You check permits"):
        return permit_policy(user, res)
    return coordinator_policy(user, res)


def record(job: str, path: Path, server) -> None:
    server.use(policy)
    model = model_for(server)
    permits = Agent(name="permit-checker", instructions="You check permits for garden hot tub installs.", model=model,
                    tools=[lookup_council_rules])
    coordinator = Agent(
        name="install-coordinator",
        instructions="You coordinate hot tub installations: survey, spec, electrics, permit, then book the crew.",
        model=model,
        tools=[get_site_survey, lookup_tub_model, parse_spec_sheet, compute_circuit,
               permits.as_tool(tool_name="check_permit", tool_description="Ask the permit checker for pre-approval."),
               book_installation],
    )
    processor_for(path, AGENT, f"install job {job}")
    try:
        Runner.run_sync(coordinator, f"Please schedule installation job {job}.", run_config=RunConfig(workflow_name=AGENT), max_turns=20)
    except (BookingRejected, AgentsException):
        pass


REF_INPUTS = ["JOB-90", "JOB-93", "JOB-97", "JOB-99"]
CASES = [
    Case("hot-01", "hallucinated_value", "JOB-81", ("generation gpt-4o-mini", 8), ("book_installation", 1),
         "The coordinator's booking call states a slab rating of 600 kg/m2 that no survey gave."),
    Case("hot-02", "truncated_result", "JOB-81", ("get_site_survey", 1), ("book_installation", 1),
         "The survey returns only the first two access widths, hiding the narrow gate, so no crane is booked."),
    Case("hot-03", "subagent_wrong_entity", "JOB-81", ("generation gpt-4o-mini", 6), ("book_installation", 1),
         "The permit sub-agent looks up the council named in the street address instead of the site's council."),
    Case("hot-04", "wrong_tool_args", "JOB-86", ("generation gpt-4o-mini", 4), ("book_installation", 1),
         "The coordinator sizes the circuit with the pump load instead of the heater load."),
    Case("hot-05", "lossy_parsing", "JOB-81", ("parse_spec_sheet", 1), ("book_installation", 1),
         "The spec sheet parser drops the heater's decimal part (7.5 kW read as 7 kW)."),
]
