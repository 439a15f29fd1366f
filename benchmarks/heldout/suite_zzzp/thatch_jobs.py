"""Thatcher's roofing jobs: OpenAI Agents SDK (Chat Completions), an estimator with parallel tool calls handing off to a scheduler."""
from __future__ import annotations

import re

from agents import Agent, function_tool, handoff
from trajdebug.testing import Reply, tool_call

from suite_common import call_results, first_user, first_system, run_sdk_agent, sdk_model

RUN_NAME = "thatch-job-estimator"
ROUTE = "openai_agents"
DOMAIN = "thatcher's roofing jobs"
SHAPE = "Agents SDK: estimator agent (job lookup, parallel survey + reed stock calls, pricing tool) hands off to a scheduler agent whose crew booking checks the job"
SWITCH = None

JOBS = {
    "J-301": {"job": "J-301", "cottage": "Lower Farm, Wyke", "material": "water reed", "notes": "full re-thatch"},
    "J-302": {"job": "J-302", "cottage": "Rose Cottage, Hale", "material": "long straw", "notes": "ridge and porch"},
    "J-303": {"job": "J-303", "cottage": "The Old Forge, Ness", "material": "water reed", "notes": "rear slope"},
    "J-304": {"job": "J-304", "cottage": "Pound House, Wyke", "material": "combed wheat reed", "notes": "full re-thatch"},
    "J-305": {"job": "J-305", "cottage": "Mill End, Hale", "material": "long straw", "notes": "main roof"},
}
SURVEYS = {
    "J-301": [{"section": "main", "slope_m2": 142.0, "footprint_m2": 96.0}, {"section": "porch", "slope_m2": 11.0, "footprint_m2": 7.5}],
    "J-302": [{"section": "ridge", "slope_m2": 24.0, "footprint_m2": 20.0}, {"section": "porch", "slope_m2": 9.0, "footprint_m2": 6.0}],
    "J-303": [{"section": "rear", "slope_m2": 66.0, "footprint_m2": 45.0}],
    "J-304": [{"section": "main", "slope_m2": 171.0, "footprint_m2": 118.0}, {"section": "outshot", "slope_m2": 28.0, "footprint_m2": 19.0}],
    "J-305": [{"section": "main", "slope_m2": 118.0, "footprint_m2": 80.0}, {"section": "dormer", "slope_m2": 14.0, "footprint_m2": 8.0}],
}
STOCK = {"water reed": 2400, "long straw": 1800, "combed wheat reed": 2100}
BUNDLES_PER_M2 = {"water reed": 8, "long straw": 9, "combed wheat reed": 8}
CREW_M2_PER_DAY = 9.0
INPUTS = [{"job": j, "start": s} for j, s in
          [("J-301", "2027-03-01"), ("J-302", "2027-03-08"), ("J-303", "2027-03-15"), ("J-304", "2027-04-05"), ("J-305", "2027-04-19")]]
CASES = [
    dict(id="zzzp_thatch_01", input=0, switch="a", fault_kind="wrong_tool_args", root=("generation thatch-model", 3, "llm"),
         failure=("book_crew", 1), description="The estimator prices the roof from the plan footprint area rather than the slope area the survey gives."),
    dict(id="zzzp_thatch_02", input=3, switch="b", fault_kind="unit_error", root=("survey_roof", 1, "tool"),
         failure=("book_crew", 1), description="The survey service reports slope areas in square feet under the m2 field, so J-304 is priced and scheduled at over ten times its size."),
    dict(id="zzzp_thatch_03", input=4, switch="c", fault_kind="truncated_result", root=("survey_roof", 1, "tool"),
         failure=("book_crew", 1), description="The survey answer for J-305 is cut to its first section, dropping the dormer."),
    dict(id="zzzp_thatch_04", input=2, switch="d", fault_kind="context_pollution", root=("get_job", 1, "tool"),
         failure=("book_crew", 1), description="The job record for J-303 carries a neighbour's booking note naming job J-301, and the scheduler books the crew under J-301."),
    dict(id="zzzp_thatch_05", input=1, switch="e", fault_kind="format_drift", root=("reed_stock", 1, "tool"),
         failure=("book_crew", 1), description="The reed stock service answers in its newer layout, lots with counts instead of a bundles total, so the estimate reserves no bundles."),
]


@function_tool(failure_error_function=None)
def get_job(job_id: str) -> dict:
    """The job sheet of a thatching job."""
    job = dict(JOBS[job_id])
    if SWITCH == "d" and job_id == "J-303":
        job["notes"] = "rear slope; see J-301 crew booking for scaffold share, J-301 starts first"
    return job


@function_tool(failure_error_function=None)
def survey_roof(job_id: str) -> dict:
    """Measured roof sections of a job (slope and footprint areas in m2)."""
    sections = [dict(s) for s in SURVEYS[job_id]]
    if SWITCH == "b":
        sections = [dict(s, slope_m2=round(s["slope_m2"] * 10.764, 1), footprint_m2=round(s["footprint_m2"] * 10.764, 1)) for s in sections]
    if SWITCH == "c":
        sections = sections[:1]
    return {"job": job_id, "sections": sections}


@function_tool(failure_error_function=None)
def reed_stock(material: str) -> dict:
    """Bundles of a thatching material in the yard."""
    if SWITCH == "e":
        n = STOCK[material]
        return {"material": material, "lots": [{"lot": "A", "count": n // 2}, {"lot": "B", "count": n - n // 2}]}
    return {"material": material, "bundles": STOCK[material]}


@function_tool(failure_error_function=None)
def price_roof(job_id: str, area_m2: float, material: str, bundles_available: int) -> dict:
    """Price and crew days for thatching an area."""
    need = int(area_m2 * BUNDLES_PER_M2[material])
    days = max(1, int(-(-area_m2 // CREW_M2_PER_DAY)))
    return {"job": job_id, "bundles": min(need, bundles_available), "days": days, "price_gbp": round(area_m2 * 118.0, 2)}


@function_tool(failure_error_function=None)
def book_crew(job_id: str, start: str, days: int, bundles: int) -> dict:
    """Book the thatching crew and the reed delivery for a job."""
    area = sum(s["slope_m2"] for s in SURVEYS[job_id])  # the crew planner reads the job file itself
    mat = JOBS[job_id]["material"]
    if bundles < area * BUNDLES_PER_M2[mat] * 0.9:
        raise ValueError(f"{job_id}: {bundles} bundles of {mat} reserved, {int(area * BUNDLES_PER_M2[mat])} needed for {area:.0f} m2")
    if not (area / CREW_M2_PER_DAY) <= days <= (area / CREW_M2_PER_DAY) + 2:
        raise ValueError(f"{job_id}: {days} crew days booked for {area:.0f} m2 of roof")
    return {"job": job_id, "start": start, "days": days, "confirmed": True}




def policy(request):
    system = first_system(request)
    res = call_results(request)
    got = {}
    for name, val in res:
        got[name] = val
    user = first_user(request)
    job_id = re.search(r"J-\d{3}", user).group(0)
    start = re.search(r"\d{4}-\d{2}-\d{2}", user).group(0)
    if system.startswith("You book"):
        if "book_crew" in got:
            b = got["book_crew"]
            return f"Crew booked for {b['job']} from {b['start']} for {b['days']} days."
        price = got["price_roof"]
        target = job_id
        notes = got["get_job"].get("notes", "")
        m = re.search(r"see (J-\d{3}) crew booking", notes)
        if m:
            target = m.group(1)
        return Reply(tool_calls=(tool_call("book_crew", {"job_id": target, "start": start, "days": price["days"], "bundles": price["bundles"]}),))
    if "get_job" not in got:
        return Reply(tool_calls=(tool_call("get_job", {"job_id": job_id}),))
    if "survey_roof" not in got:
        mat = got["get_job"]["material"]
        return Reply(tool_calls=(tool_call("survey_roof", {"job_id": job_id}), tool_call("reed_stock", {"material": mat})))
    if "price_roof" not in got:
        field = "footprint_m2" if SWITCH == "a" else "slope_m2"
        area = round(sum(s[field] for s in got["survey_roof"]["sections"]), 1)
        stock = got["reed_stock"].get("bundles", 0)
        return Reply(tool_calls=(tool_call("price_roof", {"job_id": job_id, "area_m2": area, "material": got["get_job"]["material"], "bundles_available": stock}),))
    return Reply(tool_calls=(tool_call("transfer_to_scheduler", {}),))


def record(server, inp: dict, path: str) -> None:
    model = sdk_model(server, "thatch-model")
    scheduler = Agent(name="scheduler", instructions="You book thatching crews and reed deliveries for priced jobs.",
                      model=model, tools=[book_crew])
    estimator = Agent(name="estimator", instructions="You estimate thatching jobs: read the job, survey, stock, then price.",
                      model=model, tools=[get_job, survey_roof, reed_stock, price_roof], handoffs=[handoff(scheduler)])
    run_sdk_agent(server, estimator, f"Estimate and schedule job {inp['job']} starting {inp['start']}.", path,
                  RUN_NAME, f"thatch job {inp['job']}", "thatch-jobs")
