"""Haemodialysis unit: morning water-plant checks and session set-up (route: openai_agents).

OpenAI Agents SDK: the unit coordinator agent takes the water-treatment plant readings it plans (parallel
tool calls, one per sampling point), reviews the RO-loop microbiology, reads the handover notes, reads the
session's patient schedule and assigns every patient a chair and a machine with the prescribed
dialysate (parallel tool calls), then hands off to the charge nurse agent, whose sign-off tool validates
the unit's record before the first patient is connected.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import date, timedelta
from typing import Any

from agents import (
    Agent,
    RunConfig,
    Runner,
    function_tool,
    handoff,
    set_default_openai_api,
    set_default_openai_client,
)
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.testing import Reply, tool_call

from .common import agents_view

NAME = "dialysis-unit-prep"
ROUTE = "openai_agents"
DOMAIN = "haemodialysis unit: water-treatment plant checks and chair/machine set-up before a session"
SHAPE = (
    "Agents SDK: coordinator agent (parallel plant-reading tools, microbiology tool, handover-notes tool, "
    "schedule tool, parallel chair-assignment tools), hand-off to the charge nurse agent (sign-off tool); "
    "35-41 steps per passing run"
)

SWITCH: str | None = None


def _case(key: str) -> bool:
    """The one place the case switch is read."""
    return SWITCH == key


STAGES = {
    "post_softener": ("hardness_mg_l", 8.0),
    "pre_carbon": ("total_chlorine_mg_l", 0.42),
    "between_carbon": ("total_chlorine_mg_l", 0.03),
    "post_carbon": ("total_chlorine_mg_l", 0.0),
    "post_ro": ("conductivity_us_cm", 6.1),
}
REQUIRED_STAGES = ("post_softener", "between_carbon", "post_carbon", "post_ro")
MICRO = {
    "sample_point": "RO loop return",
    "taken": "2025-11-10",
    "tvc_cfu_ml": 4,
    "endotoxin_eu_ml": 0.03,
    "status": "within limits",
}
CONTEXT_LIMIT_CHARS = 30000


def _patients(prefix: int, n: int, k3: tuple[int, ...] = (), ca15: tuple[int, ...] = ()) -> list[dict]:
    return [
        {
            "patient_id": f"P-{prefix + i:05d}",
            "hours": 4.0 if i % 3 else 3.5,
            "dialysate_k": 3.0 if i in k3 else 2.0,
            "dialysate_ca": 1.5 if i in ca15 else 1.25,
            "access": "AVF" if i % 4 else "tunnelled line",
        }
        for i in range(n)
    ]


SESSIONS = {
    "B-1110-AM": _patients(41010, 11, k3=(5,), ca15=(2, 8)),
    "B-1111-AM": _patients(41030, 7, ca15=(1, 4)),
    "B-1112-AM": _patients(41050, 6, k3=(2,)),
    "B-1113-AM": _patients(41060, 12, ca15=(3, 9)),
    "B-1114-AM": _patients(41070, 9, k3=(7,), ca15=(0,)),
}
NOTES = {
    "B-1110-AM": "Night: plant alarm 02:10 softener regen, cleared. M-06 heat disinfect repeated, pass.",
    "B-1111-AM": "Night: no plant alarms. Chair 4 footrest reported, estates ticket 88121.",
    "B-1112-AM": "Night: carbon tank 1 backwash 01:30. M-03 conductivity alarm once, recalibrated, pass.",
    "B-1113-AM": "Night: no issues. Two new starters this morning (see schedule).",
    "B-1114-AM": "Night: RO membrane pressure trend up, technician visit booked Thursday.",
}

INPUTS = [
    {
        "id": "b1110",
        "task": "prepare Renal Unit B for session B-1110-AM (plant checks, chairs)",
        "message": "Prepare Renal Unit B for session B-1110-AM: water plant checks, then chairs and machines.",
    },
    {
        "id": "b1111",
        "task": "prepare Renal Unit B for session B-1111-AM (plant checks, chairs)",
        "message": "Prepare Renal Unit B for session B-1111-AM: water plant checks, then chairs and machines.",
    },
    {
        "id": "b1112",
        "task": "prepare Renal Unit B for session B-1112-AM (plant checks, chairs)",
        "message": "Prepare Renal Unit B for session B-1112-AM: water plant checks, then chairs and machines.",
    },
    {
        "id": "b1113",
        "task": "prepare Renal Unit B for session B-1113-AM (plant checks, chairs)",
        "message": "Prepare Renal Unit B for session B-1113-AM: water plant checks, then chairs and machines.",
    },
    {
        "id": "b1114",
        "task": "prepare Renal Unit B for session B-1114-AM (plant checks, chairs)",
        "message": "Prepare Renal Unit B for session B-1114-AM: water plant checks, then chairs and machines.",
    },
]

CASES = [
    {
        "case": "dialysis_carbon_sampling_plan",
        "input": "b1110",
        "switch": "skip_between_carbon",
        "fault_kind": "plan_error",
        "root": ("generation fake-model", 1),
        "failure": ("sign_off_session", 1),
        "description": "Planning the plant round, the coordinator model sampled chlorine before and after the carbon "
        "tanks but not between them; chairs are assigned and the charge nurse's sign-off refuses a "
        "record without the between-tanks chlorine.",
    },
    {
        "case": "dialysis_lims_timeout",
        "input": "b1111",
        "switch": "lims_timeout",
        "fault_kind": "swallowed_error",
        "root": ("lab_results", 1),
        "failure": ("sign_off_session", 1),
        "description": "The microbiology tool's LIMS call timed out and the tool answered 'no results pending' "
        "instead of an error, so the RO-loop results are never reviewed; the sign-off finds no "
        "microbiology review on the record.",
    },
    {
        "case": "dialysis_notes_archive",
        "input": "b1112",
        "switch": "notes_whole_archive",
        "fault_kind": "context_pollution",
        "root": ("handover_notes", 1),
        "failure": ("generation fake-model", 4),
        "description": "The handover-notes tool returned the whole notes archive of every unit instead of the "
        "night's note; it goes into the coordinator's context and the next model call is refused for "
        "exceeding the context length.",
    },
    {
        "case": "dialysis_schedule_page",
        "input": "b1113",
        "switch": "schedule_first_page",
        "fault_kind": "truncated_result",
        "root": ("patient_schedule", 1),
        "failure": ("sign_off_session", 1),
        "description": "The schedule tool returned only its first page (8 of 12 booked patients) with no sign of "
        "more; 8 chairs are assigned and the sign-off finds 4 booked patients without one.",
    },
    {
        "case": "dialysis_potassium_bath",
        "input": "b1114",
        "switch": "default_k_bath",
        "fault_kind": "tool_ignores_argument",
        "root": ("assign_chair", None, {"patient_id": "P-41077"}),
        "failure": ("sign_off_session", 1),
        "description": "The chair-assignment tool set every machine to the unit's default 2.0 mmol/L potassium bath, "
        "ignoring the dialysate_k it was given; P-41077's 3.0 prescription is lost and the sign-off "
        "stops the session.",
    },
]


class _Record:
    readings: dict[str, dict] = {}
    micro: list[dict] = []
    chairs: dict[str, dict] = {}
    session = ""


# --- tools ----------------------------------------------------------------------------------------


@function_tool
def handover_notes(unit: str, session: str) -> str:
    """The night team's handover note for the unit and session."""
    if _case("notes_whole_archive"):
        archive = []
        for back in range(42, 0, -1):
            day = (date(2025, 11, 12) - timedelta(days=back)).isoformat()
            for u in ("Renal Unit A", "Renal Unit B", "Renal Unit B satellite", "Home therapies"):
                archive.append(
                    f"{day} {u}: plant checks complete; chlorine post carbon 0.00 mg/L; "
                    f"conductivity within limits; machines heat-disinfected; no incidents reported "
                    f"overnight; chairs cleaned and restocked; handover to day team at 07:00."
                )
        return "\n".join(archive)
    return f"{unit} {session}: {NOTES[session]}"


@function_tool
def plant_readings(stage: str) -> str:
    """Take a reading at a sampling point of the water-treatment plant."""
    key, value = STAGES[stage]
    reading = {"stage": stage, key: value, "time": "06:40"}
    _Record.readings[stage] = reading
    return json.dumps(reading)


def _lims_fetch(sample_point: str) -> dict:
    if _case("lims_timeout"):
        raise TimeoutError("LIMS did not answer within 10 s")
    return dict(MICRO)


@function_tool
def lab_results(sample_point: str) -> str:
    """Latest microbiology results for a sampling point (TVC, endotoxin)."""
    try:
        result = _lims_fetch(sample_point)
    except TimeoutError:
        return json.dumps({"sample_point": sample_point, "results": [], "note": "no results pending"})
    _Record.micro.append(result)
    return json.dumps({"sample_point": sample_point, "results": [result]})


@function_tool
def patient_schedule(session: str) -> str:
    """Patients booked for a session, with their dialysis prescriptions."""
    patients = SESSIONS[session]
    if _case("schedule_first_page"):
        patients = patients[:8]
    return json.dumps({"session": session, "patients": patients})


@function_tool
def assign_chair(
    patient_id: str, chair: str, machine: str, dialysate_k: float, dialysate_ca: float, hours: float
) -> str:
    """Assign a patient a chair and a machine, and programme the machine's dialysate."""
    k = 2.0 if _case("default_k_bath") else dialysate_k
    got = {
        "patient_id": patient_id,
        "chair": chair,
        "machine": machine,
        "dialysate_k": k,
        "dialysate_ca": dialysate_ca,
        "hours": hours,
        "status": "programmed",
    }
    _Record.chairs[patient_id] = got
    return json.dumps(got)


def _sign_off(session: str) -> str:
    missing = [s for s in REQUIRED_STAGES if s not in _Record.readings]
    if missing:
        raise PermissionError(
            f"{session}: sign-off refused, no plant reading recorded for {', '.join(missing)}"
        )
    if not _Record.micro:
        raise PermissionError(f"{session}: sign-off refused, RO-loop microbiology not reviewed on the record")
    booked = SESSIONS[session]
    unassigned = [p["patient_id"] for p in booked if p["patient_id"] not in _Record.chairs]
    if unassigned:
        raise PermissionError(
            f"{session}: sign-off refused, {len(booked)} patients booked and "
            f"{len(booked) - len(unassigned)} assigned (no chair: {', '.join(unassigned)})"
        )
    for p in booked:
        c = _Record.chairs[p["patient_id"]]
        if c["dialysate_k"] != p["dialysate_k"] or c["dialysate_ca"] != p["dialysate_ca"]:
            raise PermissionError(
                f"{session}: sign-off refused, {p['patient_id']} prescribed K {p['dialysate_k']} "
                f"Ca {p['dialysate_ca']} mmol/L; {c['machine']} programmed K {c['dialysate_k']} "
                f"Ca {c['dialysate_ca']}"
            )
    return json.dumps({"session": session, "signed_off": True, "patients": len(booked)})


sign_off_session = function_tool(
    _sign_off,
    name_override="sign_off_session",
    failure_error_function=None,
    description_override="Sign the session off: validates the unit's record.",
)

COORDINATOR = (
    "You are the haemodialysis unit coordinator. Take the water plant readings, review the RO-loop "
    "microbiology, read the handover notes, read the schedule, assign every patient a chair and a "
    "machine with their prescribed dialysate, then hand off to the charge nurse."
)
CHARGE = "You are the charge nurse. Sign the session off, then confirm the unit is ready."


def build(model: str) -> Agent:
    charge = Agent(name="charge_nurse", instructions=CHARGE, model=model, tools=[sign_off_session])
    return Agent(
        name="unit_coordinator",
        instructions=COORDINATOR,
        model=model,
        tools=[handover_notes, plant_readings, lab_results, patient_schedule, assign_chair],
        handoffs=[handoff(charge)],
    )


def record(inp: dict, path: str, ctx: Any) -> None:
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    _Record.readings, _Record.micro, _Record.chairs = {}, [], {}
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp["task"])])
    logging.getLogger("openai.agents").setLevel(logging.CRITICAL)  # the SDK logs the error it then raises

    async def go() -> None:
        client = AsyncOpenAI(base_url=ctx.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(client)
        try:
            await Runner.run(
                build(ctx.model), inp["message"], run_config=RunConfig(workflow_name=NAME), max_turns=20
            )
        finally:
            await client.close()

    try:
        asyncio.run(go())
    except Exception as exc:  # Runner.run raised: the trace records the failed run
        if type(exc).__name__ not in ("UserError", "BadRequestError"):
            raise
    finally:
        set_trace_processors([])


# --- the model --------------------------------------------------------------------------------


def brain(request: Any) -> Any:
    instructions, text, got, size = agents_view(request)
    if size > CONTEXT_LIMIT_CHARS:
        return Reply(
            status=400,
            error=f"This model's maximum context length is 8192 tokens. However, your "
            f"messages resulted in {size // 4} tokens. Please reduce the length of the "
            f"messages.",
        )
    session = next(w.rstrip(":") for w in text.split() if w.startswith("B-"))
    if instructions == CHARGE:
        if "sign_off_session" not in got:
            return Reply(tool_calls=(tool_call("sign_off_session", {"session": session}),))
        return f"{session} signed off: plant checks recorded, {got['sign_off_session'][-1]['patients']} patients ready."
    if instructions != COORDINATOR:
        return "I cannot help with that."
    if "plant_readings" not in got:
        stages = ["post_softener", "pre_carbon", "between_carbon", "post_carbon", "post_ro"]
        if _case("skip_between_carbon"):
            stages.remove("between_carbon")
        return Reply(tool_calls=tuple(tool_call("plant_readings", {"stage": s}) for s in stages))
    if "lab_results" not in got:
        return Reply(tool_calls=(tool_call("lab_results", {"sample_point": "RO loop return"}),))
    if "handover_notes" not in got:
        return Reply(tool_calls=(tool_call("handover_notes", {"unit": "Renal Unit B", "session": session}),))
    if "patient_schedule" not in got:
        return Reply(tool_calls=(tool_call("patient_schedule", {"session": session}),))
    if "assign_chair" not in got:
        patients = got["patient_schedule"][-1]["patients"]
        return Reply(
            tool_calls=tuple(
                tool_call(
                    "assign_chair",
                    {
                        "patient_id": p["patient_id"],
                        "chair": f"C{n:02d}",
                        "machine": f"M-{n:02d}",
                        "dialysate_k": p["dialysate_k"],
                        "dialysate_ca": p["dialysate_ca"],
                        "hours": p["hours"],
                    },
                )
                for n, p in enumerate(patients, start=1)
            )
        )
    return Reply(tool_calls=(tool_call("transfer_to_charge_nurse", {}),))
