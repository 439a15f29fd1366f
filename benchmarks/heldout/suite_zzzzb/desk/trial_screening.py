"""Clinical-trial screening office of a hospital research unit (OpenAI Agents SDK + TrajdebugProcessor)."""
from __future__ import annotations

import datetime as dt
import json
import re

from agents import Agent, ModelSettings, RunConfig, Runner, function_tool

from . import common

RUN_NAME = "trial-screening-office"
ROUTE = "openai_agents"
DOMAIN = "hospital research unit: pre-screening referrals for a diabetes trial and booking consent visits"
SHAPE = ("Agents SDK: a coordinator whose first turn makes four parallel tool calls (referral, criteria twice, labs), "
         "a notes recall, a hand-off to a consent-scheduler agent that records eligibility (schema and criteria "
         "checks that raise) and books the consent visit")
SWITCH = None

TRIAL = "GLY-304"
CRITERIA = {
    "inclusion": [{"id": "I-1", "text": "Type 2 diabetes, age 30-75"}, {"id": "I-3", "text": "HbA1c 7.0-8.5% within 60 days"},
                  {"id": "I-4", "text": "eGFR >= 45 within 90 days"}],
    "exclusion": [{"id": "E-1", "text": "Insulin in the last 3 months"}, {"id": "E-2", "text": "Prior anti-VEGF therapy"}],
}
PATIENTS = {
    "MRN-558201": {"age": 61, "site": "Eastgate Clinic", "a1c": 7.6, "egfr": 68},
    "MRN-602317": {"age": 54, "site": "Riverside Research Unit", "a1c": 8.2, "egfr": 52},
    "MRN-417760": {"age": 47, "site": "Eastgate Clinic", "a1c": 7.1, "egfr": 88},
    "MRN-739045": {"age": 70, "site": "Northside Clinic", "a1c": 8.0, "egfr": 47},
    "MRN-660934": {"age": 38, "site": "Riverside Research Unit", "a1c": 7.9, "egfr": 95},
}
OTHER_NOTE = {"patient": "MRN-771042", "date": "2025-03-24", "text": "Screen MRN-771042: HbA1c 9.1% on 2025-03-21, referred back to PCP."}

INPUTS = [
    {"task": "pre-screen MRN-558201 for GLY-304", "message": "Referral: patient MRN-558201 for trial GLY-304, consent visit wanted on 2025-04-14."},
    {"task": "pre-screen MRN-602317 for GLY-304", "message": "Referral: patient MRN-602317 for trial GLY-304, consent visit wanted on 2025-04-15."},
    {"task": "pre-screen MRN-417760 for GLY-304", "message": "Referral: patient MRN-417760 for trial GLY-304, consent visit wanted on 2025-04-16."},
    {"task": "pre-screen MRN-739045 for GLY-304", "message": "Referral: patient MRN-739045 for trial GLY-304, consent visit wanted on 2025-04-17."},
    {"task": "pre-screen MRN-660934 for GLY-304", "message": "Referral: patient MRN-660934 for trial GLY-304, consent visit wanted on 2025-04-22."},
]

CASES = [
    {"id": "trial_visit_date", "input": 3, "switch": "spoken_date", "fault_kind": "format_drift",
     "root": ("response", 5), "failure": ("book_consent_visit", 1),
     "description": "The consent scheduler's model writes the visit date as '17 Apr 2025' instead of an ISO date, and the booking tool cannot read it."},
    {"id": "trial_first_turn", "input": 1, "switch": "labs_left_out", "fault_kind": "plan_error",
     "root": ("response", 1), "failure": ("record_eligibility", 1),
     "description": "The coordinator's first turn gathers the referral and the criteria but never asks for lab results, so eligibility is recorded with no eGFR for criterion I-4."},
    {"id": "trial_lab_rows", "input": 4, "switch": "newest_rows", "fault_kind": "truncated_result",
     "root": ("list_lab_results", 1), "failure": ("record_eligibility", 1),
     "description": "The lab listing returns only the five newest rows, cutting off the eGFR of 2025-02-10, so criterion I-4 has no value."},
    {"id": "trial_notes_thread", "input": 0, "switch": "unit_thread", "fault_kind": "context_pollution",
     "root": ("recall_screening_notes", 1), "failure": ("record_eligibility", 1),
     "description": "The notes recall returns the unit's whole screening thread, and the scheduler takes HbA1c 9.1% from another patient's note as this patient's value."},
    {"id": "trial_criteria_section", "input": 2, "switch": "section_default", "fault_kind": "tool_ignores_argument",
     "root": ("search_trial_criteria", 2), "failure": ("record_eligibility", 1),
     "description": "The criteria search ignores section='exclusion' and returns the inclusion list again, so exclusions E-1 and E-2 are never assessed."},
]


def _labs(pid: str) -> list:
    p = PATIENTS[pid]
    return [{"date": "2025-03-28", "test": "Glucose", "value": 141, "unit": "mg/dL"},
            {"date": "2025-03-28", "test": "Potassium", "value": 4.3, "unit": "mmol/L"},
            {"date": "2025-03-18", "test": "HbA1c", "value": p["a1c"], "unit": "%"},
            {"date": "2025-03-18", "test": "LDL", "value": 112, "unit": "mg/dL"},
            {"date": "2025-02-27", "test": "ALT", "value": 31, "unit": "U/L"},
            {"date": "2025-02-10", "test": "eGFR", "value": p["egfr"], "unit": "mL/min/1.73m2"},
            {"date": "2025-01-15", "test": "Creatinine", "value": 0.9, "unit": "mg/dL"}]


@function_tool(failure_error_function=None)
def fetch_referral(patient_id: str) -> dict:
    """Referral letter of a patient."""
    p = PATIENTS[patient_id]
    return {"patient_id": patient_id, "age": p["age"], "diagnosis": "E11.9", "site": p["site"],
            "medications": ["metformin 1000 mg BID"], "insulin": False, "anti_vegf": False}


@function_tool(failure_error_function=None)
def list_lab_results(patient_id: str, since: str) -> dict:
    """Lab results of a patient since a date, newest first."""
    rows = [r for r in _labs(patient_id) if r["date"] >= since]
    if SWITCH == "newest_rows":
        rows = rows[:5]
    return {"patient_id": patient_id, "rows": rows}


@function_tool(failure_error_function=None)
def search_trial_criteria(trial_id: str, section: str) -> dict:
    """Eligibility criteria of a trial, one section (inclusion or exclusion)."""
    if SWITCH == "section_default":
        section_used = "inclusion"
    else:
        section_used = section
    return {"trial_id": trial_id, "criteria": [dict(c) for c in CRITERIA[section_used]]}


@function_tool(failure_error_function=None)
def recall_screening_notes(patient_id: str) -> list:
    """Earlier screening notes about a patient."""
    a1c = PATIENTS[patient_id]["a1c"]
    notes = [{"patient": patient_id, "date": "2025-03-20", "text": f"Screen {patient_id}: HbA1c {a1c}% on 2025-03-18, PCP agrees to referral."}]
    if SWITCH == "unit_thread":
        notes.append(dict(OTHER_NOTE))
    return notes


@function_tool(failure_error_function=None)
def record_eligibility(patient_id: str, hba1c: float, egfr: float, inclusion_met: list[str], exclusion_checked: list[str]) -> dict:
    """Record the pre-screening eligibility of a patient (egfr -1 when no result)."""
    if egfr < 0:
        raise ValueError(f"eligibility {patient_id}: criterion I-4 needs an eGFR result within 90 days; none supplied")
    if not 7.0 <= hba1c <= 8.5:
        raise ValueError(f"eligibility {patient_id}: HbA1c {hba1c}% outside criterion I-3 (7.0-8.5%)")
    missing = [c["id"] for c in CRITERIA["exclusion"] if c["id"] not in exclusion_checked]
    if missing:
        raise ValueError(f"eligibility {patient_id}: exclusion criteria {', '.join(missing)} not assessed")
    return {"patient_id": patient_id, "eligible": egfr >= 45, "record": f"ELG-{patient_id[-6:]}"}


@function_tool(failure_error_function=None)
def book_consent_visit(patient_id: str, date: str, site: str) -> dict:
    """Book the informed-consent visit."""
    day = dt.date.fromisoformat(date)
    return {"patient_id": patient_id, "date": day.isoformat(), "site": site, "slot": "09:30", "booking": f"CV-{patient_id[-4:]}-{day.day:02d}"}


def _agents(model: str) -> Agent:
    scheduler = Agent(name="consent_scheduler", model=model,
                      instructions="You record pre-screening eligibility and book the informed consent visit.",
                      tools=[record_eligibility, book_consent_visit])
    return Agent(name="screening_coordinator", model=model,
                 instructions="You coordinate trial pre-screening: gather referral, criteria, labs and notes, then hand off.",
                 model_settings=ModelSettings(parallel_tool_calls=True),
                 tools=[fetch_referral, list_lab_results, search_trial_criteria, recall_screening_notes],
                 handoffs=[scheduler])


def record(server, inp: dict, path: str) -> None:
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    common.run_agents(server, lambda: Runner.run(_agents(server.model), inp["message"],
                                                 run_config=RunConfig(workflow_name=RUN_NAME), max_turns=12),
                      TrajdebugProcessor(path=path, name=RUN_NAME, task=inp["task"]))


def brain(request):
    from trajdebug.testing import Reply, tool_call

    instructions = common.resp_instructions(request)
    user = common.resp_user(request)
    seen = common.resp_outputs(request)
    pid, trial, want = re.search(r"patient (\S+) for trial (\S+), consent visit wanted on (\S+)\.", user).groups()
    if "coordinate trial pre-screening" in instructions:
        if "fetch_referral" not in seen:
            calls = [tool_call("fetch_referral", {"patient_id": pid}),
                     tool_call("search_trial_criteria", {"trial_id": trial, "section": "inclusion"}),
                     tool_call("search_trial_criteria", {"trial_id": trial, "section": "exclusion"})]
            if SWITCH != "labs_left_out":
                calls.append(tool_call("list_lab_results", {"patient_id": pid, "since": "2025-01-01"}))
            return Reply(tool_calls=tuple(calls))
        if "recall_screening_notes" not in seen:
            return Reply(tool_calls=(tool_call("recall_screening_notes", {"patient_id": pid}),))
        return Reply(tool_calls=(tool_call("transfer_to_consent_scheduler", {}),))
    if "informed consent visit" in instructions:
        if "record_eligibility" not in seen:
            a1c = -1.0
            for note in seen["recall_screening_notes"][-1]:
                m = re.search(r"HbA1c ([\d.]+)%", note["text"])
                if m:
                    a1c = float(m.group(1))
            rows = seen.get("list_lab_results", [{"rows": []}])[-1]["rows"]
            egfr = next((r["value"] for r in rows if r["test"] == "eGFR"), -1)
            inc, exc = seen["search_trial_criteria"][0], seen["search_trial_criteria"][1]
            return Reply(tool_calls=(tool_call("record_eligibility", {
                "patient_id": pid, "hba1c": a1c, "egfr": egfr,
                "inclusion_met": [c["id"] for c in inc["criteria"]],
                "exclusion_checked": [c["id"] for c in exc["criteria"]]}),))
        if "book_consent_visit" not in seen:
            date = want
            if SWITCH == "spoken_date":
                date = dt.date.fromisoformat(want).strftime("%d %b %Y")
            site = seen["fetch_referral"][-1]["site"]
            return Reply(tool_calls=(tool_call("book_consent_visit", {"patient_id": pid, "date": date, "site": site}),))
        b = seen["book_consent_visit"][-1]
        return f"Consent visit booked for {pid} on {b['date']} at {b['slot']}, {b['site']} ({b['booking']})."
    return "I cannot help with that."
