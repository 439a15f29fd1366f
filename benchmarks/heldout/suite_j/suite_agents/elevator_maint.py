"""Elevator maintenance (route: openai_agents): a controller alarm becomes a verified repair visit.

Two agents of the OpenAI Agents SDK: a triage agent reads the unit's status and maintenance history
(two tool calls in one model turn) and looks up the alarm code for the unit's controller, then hands
off to a scheduling agent that checks parts stock, reserves the part, books a technician and verifies
the work order against the service contract.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from ..harness import (
    AgentSpec,
    Fault,
    active,
    extract_json,
    last_tool_json,
    messages,
    system_text,
    tool_results,
)
from ..routes import agents_model, agents_processor


NAME = "elevator-maintenance-dispatcher"

UNITS = {
    "HT-1": ("Harbor Tower", "KONE MonoSpace", "traction", ["HT-2"]),
    "HT-2": ("Harbor Tower", "Otis Gen2", "hydraulic", ["HT-1"]),
    "MP-3": ("Maple Plaza", "Schindler 3300", "traction", ["MP-4"]),
    "MP-4": ("Maple Plaza", "Schindler 3300", "traction", ["MP-3"]),
    "RC-1": ("Riverside Clinic", "Otis Gen2", "hydraulic", []),
    "LB-2": ("Lakeside Library", "KONE MonoSpace", "traction", ["LB-1"]),
    "LB-1": ("Lakeside Library", "KONE MonoSpace", "traction", ["LB-2"]),
    "SG-5": ("Station Garage", "Otis Gen2", "traction", []),
}
CODES = {
    ("Otis", "DR-31"): ("door reopen limit exceeded", "OT-DOB-114"),
    ("KONE", "DR-31"): ("door lock circuit open", "KM-DLC-220"),
    ("Otis", "HY-07"): ("valve block pressure low", "OT-HVB-301"),
    ("Schindler", "LV-12"): ("levelling sensor drift", "SC-LVS-045"),
    ("KONE", "BR-04"): ("brake lining wear", "KM-BRL-510"),
    ("Otis", "LV-12"): ("levelling sensor drift", "OT-LVS-046"),
}
PARTS = {"OT-DOB-114": "Otis", "KM-DLC-220": "KONE", "OT-HVB-301": "Otis", "SC-LVS-045": "Schindler",
         "KM-BRL-510": "KONE", "OT-LVS-046": "Otis"}
TECHS = [("T-14", "traction"), ("T-22", "hydraulic"), ("T-31", "traction")]
STATE: dict[str, dict[str, Any]] = {"reservations": {}, "visits": {}}


def alarm(aid: str, unit: str, code: str, raised: str) -> dict[str, Any]:
    return {"alarm": aid, "unit": unit, "code": code, "raised": raised, "sla_hours": 72}


INPUTS = [
    alarm("AL-88121", "HT-2", "DR-31", "2026-03-03"),
    alarm("AL-88140", "HT-2", "HY-07", "2026-03-03"),
    alarm("AL-88152", "HT-2", "DR-31", "2026-03-04"),
    alarm("AL-88167", "MP-3", "LV-12", "2026-03-04"),
    alarm("AL-88175", "RC-1", "HY-07", "2026-03-05"),
]
REFS = [
    alarm("AL-88102", "LB-2", "BR-04", "2026-03-02"),
    alarm("AL-88110", "MP-4", "LV-12", "2026-03-02"),
    alarm("AL-88183", "SG-5", "LV-12", "2026-03-05"),
    alarm("AL-88190", "HT-1", "DR-31", "2026-03-06"),
]
BY_ID = {a["alarm"]: a for a in INPUTS + REFS}


class ServiceContractBreach(RuntimeError):
    pass


class CatalogueError(LookupError):
    pass


class WarehouseTimeout(TimeoutError):
    pass


# -- tools -----------------------------------------------------------------------------------------


def get_unit_status(unit: str) -> str:
    """The elevator unit's controller, drive type and current state."""
    building, controller, drive, bank = UNITS[unit]
    return json.dumps({"unit": unit, "building": building, "controller": controller, "drive": drive,
                       "state": "out of service", "same_bank": bank})


def get_maintenance_history(unit: str) -> str:
    """The unit's recent maintenance visits."""
    return json.dumps({"unit": unit, "visits": [{"date": "2026-01-12", "work": "annual safety test", "result": "passed"},
                                                {"date": "2025-11-03", "work": "door operator adjustment"}]})


def lookup_alarm_code(code: str, controller: str) -> str:
    """What an alarm code means on a controller family, and the part usually needed."""
    meaning, part = CODES[(controller.split()[0], code)]
    return json.dumps({"code": code, "controller": controller, "meaning": meaning, "part": part})


def _warehouse(name: str, part: str) -> int:
    if name == "North" and active("el-swallow"):
        raise WarehouseTimeout("North warehouse API timed out after 10 s")
    return 3 if name == "North" else 0


def check_parts_stock(part: str) -> str:
    """Stock of a part across the warehouses."""
    on_hand = 0
    for name in ("North", "South"):
        try:
            on_hand += _warehouse(name, part)
        except WarehouseTimeout:
            continue
    return json.dumps({"part": part, "on_hand": on_hand, "available": on_hand > 0,
                       "supplier_lead_days": 10})


def reserve_part(part: str, unit: str) -> str:
    """Reserve a part for a unit's repair."""
    if part not in PARTS:
        raise CatalogueError(f"parts catalogue has no part {part}")
    rid = f"RES-{part[-3:]}-{unit}"
    STATE["reservations"][rid] = {"part": part, "unit": unit}
    return json.dumps({"reservation": rid, "part": part, "unit": unit})


def schedule_technician(unit: str, date: str, certification: str) -> str:
    """Book a certified technician for a repair visit."""
    cert = None if active("el-ignore") else certification
    tech = next(t for t, c in TECHS if cert is None or c == cert)
    vid = f"VIS-{unit}-{date[5:].replace('-', '')}"
    STATE["visits"][vid] = {"unit": unit, "date": date, "technician": tech}
    return json.dumps({"visit": vid, "unit": unit, "date": date, "technician": tech})


def verify_work_order(alarm_id: str, reservation: str, visit: str) -> str:
    """Check the work order against the service contract before it is released."""
    a = BY_ID[alarm_id]
    res, vis = STATE["reservations"][reservation], STATE["visits"][visit]
    _, controller, drive, _ = UNITS[a["unit"]]
    if vis["unit"] != a["unit"] or res["unit"] != a["unit"]:
        raise ServiceContractBreach(f"work order for {alarm_id} books {vis['unit']}; the alarm is on {a['unit']}")
    if PARTS[res["part"]] != controller.split()[0]:
        raise ServiceContractBreach(f"part {res['part']} does not fit a {controller} controller")
    cert = dict(TECHS)[vis["technician"]]
    if cert != drive:
        raise ServiceContractBreach(f"technician {vis['technician']} is certified for {cert} units; {a['unit']} is {drive}")
    due = dt.date.fromisoformat(a["raised"]) + dt.timedelta(hours=a["sla_hours"])
    if dt.date.fromisoformat(vis["date"]) > due:
        raise ServiceContractBreach(f"visit on {vis['date']} breaches the {a['sla_hours']}-hour response for "
                                    f"{a['unit']} (due {due})")
    return json.dumps({"work_order": f"WO-{alarm_id[3:]}", "status": "released"})


# -- the model -------------------------------------------------------------------------------------


def _alarm(request: Any) -> dict[str, Any]:
    first = next(m for m in messages(request) if m.get("role") == "user")
    return extract_json(str(first.get("content")))


def policy(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    system, done = system_text(request), [n for n, _ in tool_results(request)]
    a = _alarm(request)
    if system.startswith("You triage elevator alarms"):
        if "get_unit_status" not in done:
            return Reply(tool_calls=(tool_call("get_unit_status", {"unit": a["unit"]}),
                                     tool_call("get_maintenance_history", {"unit": a["unit"]})))
        if "lookup_alarm_code" not in done:
            controller = last_tool_json(request, "get_unit_status")["controller"]
            if active("el-args"):
                controller = "KONE MonoSpace"
            return Reply(tool_calls=(tool_call("lookup_alarm_code", {"code": a["code"], "controller": controller}),))
        return Reply(tool_calls=(tool_call("transfer_to_scheduling_agent", {}),))
    status = last_tool_json(request, "get_unit_status")
    part = last_tool_json(request, "lookup_alarm_code")["part"]
    unit = status["same_bank"][0] if active("el-handoff") and status["same_bank"] else a["unit"]
    if "check_parts_stock" not in done:
        return Reply(tool_calls=(tool_call("check_parts_stock", {"part": part}),))
    if "reserve_part" not in done:
        if active("el-part"):
            part = part[:-1] + "8"
        return Reply(tool_calls=(tool_call("reserve_part", {"part": part, "unit": unit}),))
    if "schedule_technician" not in done:
        stock = last_tool_json(request, "check_parts_stock")
        days = 1 if stock["available"] else stock["supplier_lead_days"]
        date = (dt.date.fromisoformat(a["raised"]) + dt.timedelta(days=days)).isoformat()
        return Reply(tool_calls=(tool_call("schedule_technician", {"unit": unit, "date": date,
                                                                  "certification": status["drive"]}),))
    if "verify_work_order" not in done:
        return Reply(tool_calls=(tool_call("verify_work_order", {
            "alarm_id": a["alarm"], "reservation": last_tool_json(request, "reserve_part")["reservation"],
            "visit": last_tool_json(request, "schedule_technician")["visit"]}),))
    visit = last_tool_json(request, "schedule_technician")
    return f"Repair visit {visit['visit']} on {visit['date']} with {visit['technician']}; work order released."


_AGENTS: dict[str, Any] = {}


def agents_for(server: Any) -> Any:
    from agents import Agent, function_tool

    model = agents_model(server)
    if _AGENTS.get("model") is not model:
        def ft(fn: Any) -> Any:
            return function_tool(fn, failure_error_function=None)

        scheduling = Agent(name="scheduling_agent", model=model,
                           instructions="You schedule elevator repairs: check stock, reserve the part, book a "
                                        "certified technician within the response time, verify the work order.",
                           tools=[ft(check_parts_stock), ft(reserve_part), ft(schedule_technician),
                                  ft(verify_work_order)])
        triage = Agent(name="triage_agent", model=model,
                       instructions="You triage elevator alarms: read the unit and its history, look the alarm "
                                    "code up for the unit's controller, then hand off to scheduling.",
                       tools=[ft(get_unit_status), ft(get_maintenance_history), ft(lookup_alarm_code)],
                       handoffs=[scheduling])
        _AGENTS.update(model=model, triage=triage)
    return _AGENTS["triage"]


def run(server: Any, item: dict[str, Any], path: Path) -> None:
    from agents import RunConfig, Runner
    from agents.exceptions import AgentsException

    server.use(policy)
    STATE["reservations"].clear()
    STATE["visits"].clear()
    triage = agents_for(server)
    agents_processor(path, NAME, f"dispatch a repair for alarm {item['alarm']} on {item['unit']}")
    try:
        Runner.run_sync(triage, "Controller alarm: " + json.dumps(item),
                        run_config=RunConfig(workflow_name=NAME))
    except AgentsException:
        pass


SPEC = AgentSpec(
    name=NAME, route="openai_agents", domain="elevator maintenance", inputs=INPUTS, ref_inputs=REFS, run=run,
    faults=[
        Fault("el-args", "wrong_tool_args", 0, "generation gpt-4o-mini", '"controller": "KONE MonoSpace"',
              "the model looks the code up for a KONE controller on an Otis unit; the part does not fit"),
        Fault("el-swallow", "swallowed_error", 1, "check_parts_stock", '"on_hand": 0',
              "a warehouse timeout is skipped and counted as no stock; the visit waits for the supplier"),
        Fault("el-handoff", "subagent_wrong_entity", 2, "generation gpt-4o-mini", '"unit": "HT-1"',
              "the scheduling agent works on the neighbouring car HT-1"),
        Fault("el-part", "hallucinated_value", 3, "generation gpt-4o-mini", "SC-LVS-048",
              "the model reserves a part number the catalogue does not have"),
        Fault("el-ignore", "tool_ignores_argument", 4, "schedule_technician", '"technician": "T-14"',
              "the booking ignores the certification asked for; the work-order check refuses"),
    ],
)
