"""Tugboat dispatch (recording SDK): plan tugs for an arriving ship, reserve them, file the dispatch."""

from __future__ import annotations

import json
from pathlib import Path

import trajdebug

from . import common
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "tug-dispatch", "sdk", "tugboat dispatch", "jsonl"

JOBS = {
    "J-4101": {"vessel": "MV Karin Sol", "loa_m": 229, "dwt_t": 61000, "berth": "Quay 7", "eta_h": 14},
    "J-4102": {"vessel": "MT Ostra Bay", "loa_m": 183, "dwt_t": 38000, "berth": "Oil Jetty 2", "eta_h": 6},
    "J-4103": {"vessel": "MV Lindqvist", "loa_m": 142, "dwt_t": 17000, "berth": "Quay 3", "eta_h": 9},
    "J-4104": {"vessel": "MV Peregrine Ace", "loa_m": 199, "dwt_t": 22000, "berth": "Ro-Ro 1", "eta_h": 20},
    "J-4105": {"vessel": "MV Halcyon Star", "loa_m": 261, "dwt_t": 92000, "berth": "Quay 9", "eta_h": 11},
    "J-4106": {"vessel": "MT Brisa Norte", "loa_m": 120, "dwt_t": 9000, "berth": "Oil Jetty 1", "eta_h": 3},
}
REFS = ["J-4103", "J-4104", "J-4105", "J-4106"]
FLEET = ["Tug Goliath", "Tug Sentinel", "Tug Marlin", "Tug Bressay"]
PULL_KN = {"Tug Goliath": 637.4, "Tug Sentinel": 588.4, "Tug Marlin": 490.3, "Tug Bressay": 451.1}
PREV_JOB = {"J-4101": "J-4099", "J-4102": "J-4100"}


@common.handler("tug:plan")
def _plan(msgs, tools):
    job = json.loads(common.last_user(msgs))
    tugs = 2 if job["loa_m"] < 170 else 3
    pull = round(job["dwt_t"] / 1000 * 0.55 + 8, 1)
    return json.dumps({"tugs": tugs, "required_pull_t": pull, "approach": "stern-first" if job["loa_m"] > 200 else "bow-in"})


@common.handler("tug:brief")
def _brief(msgs, tools):
    d = json.loads(common.last_user(msgs))
    return f"Pilot brief: {d['vessel']} to {d['berth']}, {len(d['tugs'])} tugs ({', '.join(d['tugs'])}), {d['approach']} approach."


class DispatchRejected(Exception):
    pass


@trajdebug.step(kind="input")
def receive_job(job_id: str) -> dict:
    return {"job_id": job_id, **JOBS[job_id]}


@trajdebug.step(kind="tool")
def fetch_vessel_profile(vessel: str) -> dict:
    j = next(v for v in JOBS.values() if v["vessel"] == vessel)
    return {"vessel": vessel, "loa_m": j["loa_m"], "dwt_t": j["dwt_t"], "thrusters": j["loa_m"] > 190}


@trajdebug.step(kind="tool")
def fetch_tide(hour: int, issued: str) -> dict:
    if active("tug_tide_cache"):
        issued = "2026-12-03T18:00Z"
    return {"hour": hour, "height_m": round(2.1 + (hour % 6) * 0.35, 2), "issued": issued}


@trajdebug.step(kind="llm")
def plan_job(job: dict) -> str:
    return common.chat("[tug:plan] You plan harbour towage. Answer JSON.", json.dumps({k: job[k] for k in ("loa_m", "dwt_t", "berth")}))


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="other")
def select_tugs(plan: dict, fleet: list) -> list:
    n = plan["tugs"] - 1 if active("tug_select_range") else plan["tugs"]
    return fleet[:n]


@trajdebug.step(kind="tool")
def check_availability(tug: str, eta_h: int) -> dict:
    return {"tug": tug, "free": True, "window": [eta_h - 1, eta_h + 3]}


@trajdebug.step(kind="tool")
def reserve_tug(tug: str, job_id: str) -> dict:
    return {"reservation": f"R-{job_id[2:]}-{tug.split()[1][:3].upper()}", "tug": tug, "job_id": job_id}


@trajdebug.step(kind="state")
def record_reservation(res: dict) -> None:
    trajdebug.current_run().state.setdefault("reservations", []).append(res)


@trajdebug.step(kind="other")
def resolve_job_ref(job: dict) -> dict:
    jid = PREV_JOB.get(job["job_id"], job["job_id"]) if active("tug_roster_job") else job["job_id"]
    return {"job_id": jid, "berth": job["berth"]}


@trajdebug.step(kind="agent")
def crew_roster(job: dict, tugs: list) -> list:
    out = []
    target = resolve_job_ref(job)["job_id"]
    for tug in tugs:
        check_availability(tug, job["eta_h"])
        res = reserve_tug(tug, target)
        record_reservation(res)
        out.append(res)
    return out


@trajdebug.step(kind="other")
def combined_pull(tugs: list) -> dict:
    kn = sum(PULL_KN[t] for t in tugs)
    tonnes = kn / 98.0665 if active("tug_pull_units") else kn / 9.80665
    return {"pull_t": round(tonnes, 1)}


@trajdebug.step(kind="tool")
def fetch_weather(berth: str) -> dict:
    if active("tug_weather_quiet"):
        try:
            raise ConnectionError("met office feed timed out")
        except ConnectionError:
            return {"berth": berth, "wind_kn": 0, "obs_id": None}
    return {"berth": berth, "wind_kn": 14, "obs_id": f"OBS-{len(berth)}2281"}


@trajdebug.step(kind="llm")
def write_brief(summary: dict) -> str:
    return common.chat("[tug:brief] You write pilot briefs.", json.dumps(summary))


@trajdebug.step(kind="condition")
def validate_dispatch(plan: dict, weather: dict, tides: list) -> str:
    if weather["obs_id"] is None:
        raise DispatchRejected(f"pre-departure check: no weather observation on file for {weather['berth']}; gust limit cannot be confirmed")
    return "file" if weather["wind_kn"] < 30 and tides else "hold"


@trajdebug.step(kind="tool")
def submit_dispatch(job: dict, plan: dict, reservations: list, pull: dict, weather: dict, tides: list, brief: str) -> dict:
    if len(reservations) < plan["tugs"]:
        raise DispatchRejected(f"HTTP 422 from VTS: job {job['job_id']} requires {plan['tugs']} tugs, {len(reservations)} assigned")
    for r in reservations:
        if r["job_id"] != job["job_id"]:
            raise DispatchRejected(f"HTTP 409 from VTS: reservation {r['reservation']} is held for job {r['job_id']}, not {job['job_id']}")
    if pull["pull_t"] < plan["required_pull_t"]:
        raise DispatchRejected(f"HTTP 422 from VTS: combined bollard pull {pull['pull_t']} t below required {plan['required_pull_t']} t")
    for t in tides:
        if not t["issued"].startswith("2026-12-05"):
            raise DispatchRejected(f"HTTP 409 from VTS: tide prediction issued {t['issued']} superseded by 2026-12-05T00:00Z")
    return {"dispatch": f"D-{job['job_id']}", "status": "filed"}


def record(job_id: str, path: Path) -> None:
    try:
        with trajdebug.run(AGENT, path=str(path), task=f"dispatch tugs for {job_id}"):
            job = receive_job(job_id)
            fetch_vessel_profile(job["vessel"])
            tides = [fetch_tide(job["eta_h"] + k, "2026-12-05T00:00Z") for k in (-1, 0, 1)]
            plan = parse_plan(plan_job(job))
            tugs = select_tugs(plan, FLEET)
            res = crew_roster(job, tugs)
            brief = write_brief({"vessel": job["vessel"], "berth": job["berth"], "tugs": tugs, "approach": plan["approach"]})
            weather = fetch_weather(job["berth"])
            validate_dispatch(plan, weather, tides)
            pull = combined_pull(tugs)
            submit_dispatch(job, plan, res, pull, weather, tides, brief)
    except DispatchRejected:
        pass


CASES = [
    dict(case="zr_tug_01", fault_id="tug_pull_units", kind="unit_error", input="J-4101", root=("combined_pull", 1),
         failure=("submit_dispatch", 1), description="combined bollard pull divides kilonewtons by 98.07 instead of 9.807, so the filed pull is ten times too small."),
    dict(case="zr_tug_02", fault_id="tug_tide_cache", kind="stale_data", input="J-4102", root=("fetch_tide", 1),
         failure=("submit_dispatch", 1), description="the tide service answers from yesterday's cached prediction, which the VTS rejects at filing."),
    dict(case="zr_tug_03", fault_id="tug_select_range", kind="off_by_one", input="J-4101", root=("select_tugs", 1),
         failure=("submit_dispatch", 1), description="tug selection takes one tug fewer than the plan asks for."),
    dict(case="zr_tug_04", fault_id="tug_roster_job", kind="subagent_wrong_entity", input="J-4102", root=("resolve_job_ref", 1),
         failure=("submit_dispatch", 1), description="the crew roster sub-agent reserves tugs against the previous job number instead of the current one."),
    dict(case="zr_tug_05", fault_id="tug_weather_quiet", kind="swallowed_error", input="J-4101", root=("fetch_weather", 1),
         failure=("validate_dispatch", 1), description="the weather fetch swallows a feed timeout and returns calm wind with no observation id."),
]
