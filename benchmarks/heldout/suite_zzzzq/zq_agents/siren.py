"""siren-network-tester: a civil defence warning-systems agent runs the monthly outdoor siren test for
a zone: lists the zone's sirens, reads the test log, has a technician sub-agent diagnose each siren
under standard, opens work orders and files the zone report (which the warning centre checks)."""
from __future__ import annotations

import asyncio
import json
import re

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .common import last_user, system_text, tool_results

NAME = "siren-network-tester"
ROUTE = "openai_agents"
DOMAIN = "civil defence warning sirens: monthly test, diagnosis and work orders per zone"
SHAPE = "Agents SDK: coordinator, parallel tool calls (sirens, log, notes), technician sub-agent as a tool called in parallel per siren (own history tool), work-order tool per siren, report tool with a warning-centre check"
SWITCH = None

STANDARD_DB = 100


def _zone(prefix, n, low):
    return {f"S-{prefix}{i:02d}": (low.get(i, 104 + (i * 7) % 9)) for i in range(1, n + 1)}


ZONES = {
    "North": _zone(1, 11, {4: 82, 10: 96}),
    "Harbour": _zone(2, 7, {3: 88}),
    "Old Town": _zone(3, 9, {2: 91, 7: 79}),
    "Airport": _zone(4, 6, {5: 97}),
    "Riverside": _zone(5, 8, {1: 85, 6: 93}),
}
HISTORY = {"S-104": "rotor bearing worn, amplifier ok", "S-140": "intermittent, self-clears", "S-110": "horn cone cracked",
           "S-203": "battery bank low", "S-302": "controller reboot loop", "S-307": "amplifier board failed",
           "S-405": "horn cone cracked", "S-501": "battery bank low", "S-506": "rotor bearing worn"}
NOTES = {"North": "Zone North: S-108 repainted in May.", "Harbour": "Zone Harbour: S-205 relocated to the ferry pier in March.",
         "Old Town": "Zone Old Town: no open items.", "Airport": "Zone Airport: S-403 works only on mains; battery bank due.",
         "Riverside": "Zone Riverside: S-501 battery replaced last month; S-504 access via the boatyard."}
INPUTS = [
    {"task": "June siren test, zone North", "zone": "North"},
    {"task": "June siren test, zone Harbour", "zone": "Harbour"},
    {"task": "June siren test, zone Old Town", "zone": "Old Town"},
    {"task": "June siren test, zone Airport", "zone": "Airport"},
    {"task": "June siren test, zone Riverside", "zone": "Riverside"},
]
CASES = [
    {"id": "zq_siren_1", "input": 2, "fault_kind": "truncated_result", "root": ("list_sirens", 1), "root_kind": "tool",
     "failure": ("file_report", 1),
     "description": "The siren register tool answers its first page of 8 sirens for zone Old Town (9 sirens), so S-309 is never tested and the warning centre refuses the report."},
    {"id": "zq_siren_2", "input": 3, "fault_kind": "tool_ignores_argument", "root": ("get_test_log", 1), "root_kind": "tool",
     "failure": ("file_report", 1),
     "description": "The test log tool ignores its zone argument and answers zone North's log, so the Airport report carries readings of sirens that are not in the Airport zone."},
    {"id": "zq_siren_3", "input": 0, "fault_kind": "subagent_wrong_entity", "root": ("generation fake-model", 3), "root_kind": "llm",
     "failure": ("file_report", 1),
     "description": "The technician sub-agent looks up the history of S-140 instead of S-104, reads 'intermittent, self-clears' and advises no work order for a siren at 82 dB."},
    {"id": "zq_siren_4", "input": 4, "fault_kind": "plan_error", "root": ("generation fake-model", 2), "root_kind": "llm",
     "failure": ("file_report", 1),
     "description": "The coordinator plans diagnosis only for sirens under 90 dB, so S-506 at 93 dB (under the 100 dB standard) gets no work order."},
    {"id": "zq_siren_5", "input": 1, "fault_kind": "context_pollution", "root": ("get_zone_notes", 1), "root_kind": "tool",
     "failure": ("file_report", 1),
     "description": "The zone notes tool returns zone North's notes along with Harbour's, and the coordinator opens a work order for S-108 from them, a siren outside the Harbour zone."},
]


def brain(request):
    sys_ = system_text(request)
    user = last_user(request)
    results = tool_results(request)
    if sys_.startswith("You are the siren technician"):
        siren = re.search(r"S-\d{3}", user).group(0)
        if not results:
            look = siren[:3] + siren[4] + siren[3] if SWITCH == "zq_siren_3" and siren == "S-104" else siren
            return Reply(tool_calls=(tool_call("get_siren_history", {"siren_id": look}),))
        hist = results[-1][1]["history"]
        action = "none" if "self-clears" in hist else "replace" if "cracked" in hist or "failed" in hist else "repair"
        return json.dumps({"siren": siren, "cause": hist, "action": action})
    zone = re.search(r"zone ([A-Za-z ]+)\.", user).group(1)
    got = {}
    for n, v in results:
        got.setdefault(n, []).append(v)
    if not results:
        return Reply(tool_calls=(tool_call("list_sirens", {"zone": zone}), tool_call("get_test_log", {"zone": zone}),
                                 tool_call("get_zone_notes", {"zone": zone})))
    if "diagnose" not in got:
        log = got["get_test_log"][0]
        limit = 90 if SWITCH == "zq_siren_4" else STANDARD_DB
        low = [r["siren"] for r in log["readings"] if r["db"] < limit]
        return Reply(tool_calls=tuple(tool_call("diagnose", {"input": f"Diagnose siren {s} ({next(r['db'] for r in log['readings'] if r['siren'] == s)} dB)."}) for s in low)
                     or (tool_call("file_report", {"zone": zone, "tested": [s["id"] for s in got["list_sirens"][0]],
                                                    "readings": log["readings"], "work_orders": []}),))
    if "open_work_order" not in got and "file_report" not in got:
        calls = [tool_call("open_work_order", {"siren_id": d["siren"], "action": d["action"]}) for d in got["diagnose"] if d["action"] != "none"]
        for note in got["get_zone_notes"][0]["notes"]:
            if "battery bank due" in note or "relocated" in note or "repainted" in note:
                sid = re.search(r"S-\d{3}", note).group(0)
                calls.append(tool_call("open_work_order", {"siren_id": sid, "action": "inspect"}))
        if calls:
            return Reply(tool_calls=tuple(calls))
    if "file_report" not in got:
        return Reply(tool_calls=(tool_call("file_report", {"zone": zone, "tested": [s["id"] for s in got["list_sirens"][0]],
                                                            "readings": got["get_test_log"][0]["readings"],
                                                            "work_orders": [w["siren_id"] for w in got.get("open_work_order", [])]}),))
    return f"Zone {zone} report filed: {got['file_report'][0]['ref']}."


def record(inp, server, path):
    oai = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=oai)

    @function_tool
    def list_sirens(zone: str) -> list:
        """The sirens registered in a zone."""
        rows = [{"id": s, "zone": zone} for s in ZONES[zone]]
        if SWITCH == "zq_siren_1":
            rows = rows[:8]  # page size of the register API
        return rows

    @function_tool
    def get_test_log(zone: str) -> dict:
        """Sound level readings (dB at 30 m) from this month's test in a zone."""
        src = "North" if SWITCH == "zq_siren_2" else zone  # the log service's default zone
        return {"zone": zone, "readings": [{"siren": s, "db": db} for s, db in ZONES[src].items()]}

    @function_tool
    def get_zone_notes(zone: str) -> dict:
        """Open maintenance notes for a zone."""
        notes = [NOTES[zone]]
        if SWITCH == "zq_siren_5":
            notes = [NOTES["North"]] + notes  # notes search matched on 'Zone'
        return {"zone": zone, "notes": notes}

    @function_tool
    def get_siren_history(siren_id: str) -> dict:
        """Maintenance history of one siren."""
        return {"siren_id": siren_id, "history": HISTORY.get(siren_id, "no history")}

    @function_tool
    def open_work_order(siren_id: str, action: str) -> dict:
        """Open a maintenance work order for a siren."""
        return {"siren_id": siren_id, "action": action, "wo": f"WO-{siren_id[2:]}-06"}

    @function_tool(failure_error_function=None, strict_mode=False)
    def file_report(zone: str, tested: list[str], readings: list[dict], work_orders: list[str]) -> dict:
        """File the zone's monthly test report with the warning centre."""
        reg = ZONES[zone]
        missing = sorted(set(reg) - set(tested))
        if missing:
            raise ValueError(f"warning centre refused {zone} report: {len(missing)} registered sirens not tested ({', '.join(missing)})")
        foreign = sorted({r["siren"] for r in readings} - set(reg)) + sorted(set(work_orders) - set(reg))
        if foreign:
            raise ValueError(f"warning centre refused {zone} report: {', '.join(foreign)} not in zone {zone}")
        under = [s for s, db in reg.items() if db < STANDARD_DB and s not in work_orders]
        if under:
            raise ValueError(f"warning centre refused {zone} report: {under[0]} at {reg[under[0]]} dB under {STANDARD_DB} dB with no work order")
        return {"zone": zone, "ref": f"SIR-{zone[:2].upper()}-06", "status": "filed"}

    tech = Agent(name="siren-technician", model=model, tools=[get_siren_history],
                 instructions="You are the siren technician. Read the siren's history and say the cause and the action (repair, replace or none) as JSON.")
    coord = Agent(name="test-coordinator", model=model,
                  instructions="You coordinate the monthly siren test: list sirens, read the log and notes, have the technician diagnose sirens under standard, open work orders, file the report.",
                  tools=[list_sirens, get_test_log, get_zone_notes,
                         tech.as_tool(tool_name="diagnose", tool_description="Diagnose one siren."), open_work_order, file_report])
    set_trace_processors([TrajdebugProcessor(path=str(path), name=NAME, task=inp["task"])])
    try:
        async def main():
            try:
                return await Runner.run(coord, f"Run the monthly siren test for zone {inp['zone']}.", run_config=RunConfig(workflow_name=NAME))
            finally:
                await oai.close()

        asyncio.run(main())
    finally:
        set_trace_processors([])
