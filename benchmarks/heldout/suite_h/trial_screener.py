"""Clinical-trial screening (route: sdk): a site screens patients for a diabetes trial and enrols them.

Per patient: fetch the record (the EHR times out once in a while: retried), a model extracts the labs
from the visit note, the labs are parsed to mg/dL, eligibility is checked and the decision kept in
the run's state.  Then the roster is built, randomized, source-verified and submitted to the sponsor.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import openai
from benchmarks.heldout.suite_h._common import Agent, Fault, active, last_user, record_sdk

import trajdebug


NAME = "trial-screener"
SCREENING_DAY = "2026-11-30"
WINDOW_START = "2026-09-01"  # 90 days before the screening day
PROTOCOL = {"min_age": 18, "max_age": 75, "max_creatinine_mg_dl": 1.5, "hba1c_range": [7.0, 10.0]}

# pid -> (age, visit date, lab line of the visit note)
PATIENTS: dict[str, tuple[int, str, str]] = {
    "P-2101": (79, "2026-10-03", "creatinine 0.9 mg/dL, HbA1c 8.1%"),
    "P-2102": (54, "2026-10-11", "creatinine 1.2 mg/dL, HbA1c 7.9%"),
    "P-2103": (61, "2026-09-28", "creatinine 0.8 mg/dL, HbA1c 8.8%"),
    "P-2104": (47, "2026-11-02", "creatinine 97 umol/L, HbA1c 9.2%"),
    "P-2105": (66, "2026-10-21", "creatinine 1.0 mg/dL, HbA1c 11.2%"),
    "P-3101": (38, "2026-09-15", "creatinine 0.7 mg/dL, HbA1c 7.6%"),
    "P-3102": (71, "2026-10-30", "creatinine 1.4 mg/dL, HbA1c 8.3%"),
    "P-3103": (29, "2026-11-12", "creatinine 62 umol/L, HbA1c 9.7%"),
    "P-3104": (58, "2026-10-05", "creatinine 1.9 mg/dL, HbA1c 8.0%"),
    "P-4101": (44, "2026-09-09", "creatinine 1.1 mg/dL, HbA1c 7.2%"),
    "P-4102": (63, "2026-11-18", "creatinine 0.9 mg/dL, HbA1c 9.9%"),
    "P-4103": (52, "2026-10-25", "creatinine 80 umol/L, HbA1c 8.4%"),
    "P-4104": (36, "2026-10-14", "creatinine 0.6 mg/dL, HbA1c 6.1%"),
    "P-4105": (69, "2026-11-07", "creatinine 1.3 mg/dL, HbA1c 7.7%"),
    "P-5101": (57, "2026-10-19", "creatinine 1.0 mg/dL, HbA1c 8.6%"),
    "P-5102": (49, "2026-09-22", "creatinine 0.8 mg/dL, HbA1c 7.1%"),
    "P-5103": (74, "2026-11-20", "creatinine 1.5 mg/dL, HbA1c 9.0%"),
    "P-6101": (41, "2026-10-08", "creatinine 71 umol/L, HbA1c 8.9%"),
    "P-6102": (66, "2026-09-30", "creatinine 1.2 mg/dL, HbA1c 7.5%"),
    "P-6103": (33, "2026-11-15", "creatinine 0.7 mg/dL, HbA1c 9.4%"),
    "P-6104": (60, "2026-10-27", "creatinine 1.1 mg/dL, HbA1c 10.4%"),
}
ARCHIVED_VISIT = {"P-2104": ("2026-06-14", "creatinine 88 umol/L, HbA1c 9.0%")}  # the EHR's previous copy
FLAKY = {"P-2102", "P-3102", "P-5102"}  # the EHR times out on the first read of these


class EhrTimeout(TimeoutError):
    """The EHR did not answer in time."""


class SponsorRejected(RuntimeError):
    """The sponsor's enrolment API refused the submission."""


@trajdebug.step(kind="tool")
def load_protocol(trial: str) -> dict[str, Any]:
    return {"trial": trial, **PROTOCOL, "screening_day": SCREENING_DAY, "min_cohort": 3}


@trajdebug.step(kind="tool")
def fetch_record(pid: str, attempt: int) -> dict[str, Any]:
    if pid in FLAKY and attempt == 1:
        raise EhrTimeout(f"EHR read of {pid} timed out after 10 s")
    age, visit, labs = PATIENTS[pid]
    version = 5
    if active("trial-visit-cache") and pid in ARCHIVED_VISIT:
        visit, labs = ARCHIVED_VISIT[pid]  # the read is served from the EHR's replica of June
        version = 3
    return {"pid": pid, "age": age, "visit_date": visit, "record_version": version,
            "note": f"Visit {visit}. Patient {pid}, age {age}. Labs: {labs}."}


def extract_labs(client: openai.OpenAI, record: dict[str, Any]) -> str:
    messages = [
        {"role": "system", "content": "Extract creatinine (value and unit) and HbA1c (%) from the note as JSON."},
        {"role": "user", "content": f"Patient {record['pid']}. Note: {record['note']}"},
    ]
    with trajdebug.step("extract_labs", kind="llm", input={"messages": messages}) as s:
        reply = client.chat.completions.create(model="fake-model", messages=messages)  # type: ignore[arg-type]
        text = reply.choices[0].message.content or ""
        s.output = {"role": "assistant", "content": text}
    return text


@trajdebug.step(kind="parse")
def parse_labs(pid: str, text: str) -> dict[str, Any]:
    labs = json.loads(text)
    creatinine = float(labs["creatinine"])
    if labs.get("creatinine_unit") == "umol/L" and not active("trial-umol-units"):
        creatinine = round(creatinine / 88.4, 2)  # the protocol's limits are in mg/dL
    return {"pid": pid, "creatinine_mg_dl": creatinine, "hba1c": float(labs["hba1c"])}


@trajdebug.step(kind="condition")
def check_eligibility(record: dict[str, Any], labs: dict[str, Any], protocol: dict[str, Any]) -> dict[str, Any]:
    reasons = []
    if not protocol["min_age"] <= record["age"] <= protocol["max_age"]:
        reasons.append("age")
    if labs["creatinine_mg_dl"] > protocol["max_creatinine_mg_dl"]:
        reasons.append("renal function")
    low, high = protocol["hba1c_range"]
    if not low <= labs["hba1c"] <= high:
        reasons.append("glycaemic range")
    return {"pid": record["pid"], "eligible": not reasons, "excluded_for": reasons}


@trajdebug.step(kind="state")
def record_decision(decision: dict[str, Any], record: dict[str, Any], labs: dict[str, Any]) -> dict[str, Any]:
    state = trajdebug.current_run().state
    decisions = dict(state.get("decisions") or {})
    visit = SCREENING_DAY if active("trial-decision-date") and record["pid"] == "P-2104" else record["visit_date"]
    entry = {**decision, "visit_date": visit, "hba1c": labs["hba1c"]}
    decisions[decision["pid"]] = entry
    state["decisions"] = decisions
    return entry


@trajdebug.step(kind="agent")
def screen_patient(client: openai.OpenAI, pid: str, protocol: dict[str, Any]) -> None:
    record: dict[str, Any] | None = None
    for attempt in (1, 2, 3):
        try:
            record = fetch_record(pid, attempt)
            break
        except EhrTimeout:
            continue
    assert record is not None
    labs = parse_labs(pid, extract_labs(client, record))
    record_decision(check_eligibility(record, labs, protocol), record, labs)


@trajdebug.step(kind="other")
def build_roster() -> list[dict[str, Any]]:
    decisions = trajdebug.current_run().state["decisions"]
    return [d for d in decisions.values() if d["eligible"]]


@trajdebug.step(kind="tool")
def randomize(patients: list[str], arms: list[str]) -> dict[str, Any]:
    allocation = {pid: arms[i % len(arms)] for i, pid in enumerate(sorted(patients))}
    counts: dict[str, int] = {}
    for arm in allocation.values():
        counts[arm] = counts.get(arm, 0) + 1
    return {"allocation": allocation, "arm_counts": counts}


@trajdebug.step(kind="tool")
def verify_sources(roster: list[dict[str, Any]]) -> dict[str, Any]:
    """The sponsor's source-data verification: the EHR's current record and the lab system."""
    for entry in roster:
        _age, visit, labs = PATIENTS[entry["pid"]]
        if visit != entry["visit_date"]:
            raise SponsorRejected(f"source verification: {entry['pid']} visit {entry['visit_date']} is not the "
                                  f"current EHR visit {visit}")
        if not WINDOW_START <= entry["visit_date"] <= SCREENING_DAY:
            raise SponsorRejected(f"{entry['pid']}: visit outside the 90-day screening window")
        lab_hba1c = float(re.findall(r"HbA1c ([\d.]+)%", labs)[0])
        if abs(lab_hba1c - entry["hba1c"]) > 0.05:
            raise SponsorRejected(f"source verification: {entry['pid']} HbA1c {entry['hba1c']} does not match "
                                  f"the lab system ({lab_hba1c})")
    return {"verified": len(roster)}


@trajdebug.step(kind="tool")
def submit_enrollment(trial: str, allocation: dict[str, Any], protocol: dict[str, Any]) -> dict[str, Any]:
    counts = allocation["arm_counts"]
    total = sum(counts.values())
    if total < protocol["min_cohort"]:
        raise SponsorRejected(f"{trial}: a site cohort of {total} is below the minimum of {protocol['min_cohort']}")
    if len(counts) < 2 or max(counts.values()) - min(counts.values()) > 1:
        raise SponsorRejected(f"{trial}: arm counts {counts} break the 1:1 allocation")
    return {"trial": trial, "enrolled": total, "status": "accepted"}


def screen(server: Any, item: dict[str, Any]) -> None:
    client = openai.OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    protocol = load_protocol(item["trial"])
    for pid in item["patients"]:
        screen_patient(client, pid, protocol)
    roster = build_roster()
    arms = ["drug"] if active("trial-single-arm") else ["drug", "placebo"]
    allocation = randomize([d["pid"] for d in roster], arms)
    verify_sources(roster)
    submit_enrollment(item["trial"], allocation, protocol)


def policy(request: Any) -> str:
    """The extraction model: reads the note's lab line."""
    prompt = last_user(request)
    pid = re.findall(r"Patient (P-\d+)", prompt)[0]
    value, unit = re.findall(r"creatinine ([\d.]+) (mg/dL|umol/L)", prompt)[0]
    hba1c = float(re.findall(r"HbA1c ([\d.]+)%", prompt)[0])
    if active("trial-model-hba1c") and pid == "P-2105":
        hba1c = 7.3  # the model states a value the note does not hold
    return json.dumps({"creatinine": float(value), "creatinine_unit": unit, "hba1c": hba1c})


def record(server: Any, item: dict[str, Any], path: Path) -> None:
    server.use(policy)
    record_sdk(NAME, path, f"screen {len(item['patients'])} patients for {item['trial']}", lambda: screen(server, item))


AGENT = Agent(
    name=NAME,
    route="sdk",
    domain="clinical-trial screening",
    record=record,
    failing={"trial": "NCT-H2100", "patients": ["P-2101", "P-2102", "P-2103", "P-2104", "P-2105"]},
    references=(
        {"trial": "NCT-H3100", "patients": ["P-3101", "P-3102", "P-3103", "P-3104"]},
        {"trial": "NCT-H4100", "patients": ["P-4101", "P-4102", "P-4103", "P-4104", "P-4105"]},
        {"trial": "NCT-H5100", "patients": ["P-5101", "P-5102", "P-5103"]},
        {"trial": "NCT-H6100", "patients": ["P-6101", "P-6102", "P-6103", "P-6104"]},
    ),
    faults=(
        Fault("trial-umol-units", "unit_error", "parse_labs", '"creatinine_mg_dl": 97.0', "submit_enrollment",
              "parse_labs keeps a creatinine reported in umol/L as if it were mg/dL, so an eligible patient is "
              "excluded and the cohort falls below the site minimum."),
        Fault("trial-visit-cache", "stale_data", "fetch_record", "2026-06-14", "verify_sources",
              "fetch_record serves an older copy of one patient's record (a June visit), which source "
              "verification later rejects."),
        Fault("trial-model-hba1c", "hallucinated_value", "extract_labs", "7.3", "verify_sources",
              "The extraction model states an HbA1c of 7.3 that the note (11.2) does not hold, so an "
              "ineligible patient is enrolled and source verification fails."),
        Fault("trial-single-arm", "wrong_tool_args", "randomize", '"arm_counts": {"drug": 3}', "submit_enrollment",
              "randomize is called with only the drug arm, so every patient is allocated to it and the "
              "sponsor refuses the unbalanced allocation."),
        Fault("trial-decision-date", "bad_memory_write", "record_decision", '"visit_date": "2026-11-30"',
              "verify_sources",
              "record_decision stores the screening day instead of the patient's visit date in the run's state, "
              "and source verification finds the visit does not match the EHR."),
    ),
)
