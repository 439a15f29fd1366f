"""Volcano monitoring observatory (OpenAI Agents SDK, a gas analyst agent used as a tool).

The duty volcanologist agent prepares the daily alert level for one volcano: it pulls the seismic event
counts of both stations, the tilt change, the recent bulletins, consults the gas analyst agent (which
measures the SO2 flux with its own tool), decides the level and issues it through the observatory's
bulletin service, which cross-checks the evidence against the monitoring database.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from agents import AgentsException, Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor

from .common import Case, tool_history
from .kit import active

AGENT = "volcano-duty-officer"
ROUTE = "openai_agents"
DOMAIN = "volcano monitoring observatory"
SHAPE = "Agents SDK: duty agent with 5 tools over several turns, gas analyst agent as a tool (its own tool), issue tool"

# (volcano, date) -> monitoring database
DB = {
    ("Kalder", "2026-11-14"): {"KLD1": 131, "KLD2": 57, "tilt": 9.8, "so2": 3150, "last_level": "YELLOW"},
    ("Kalder", "2026-11-13"): {"KLD1": 88, "KLD2": 8, "tilt": 4.1, "so2": 1900, "last_level": "YELLOW"},
    ("Kalder", "2026-11-07"): {"KLD1": 20, "KLD2": 11, "tilt": 2.1, "so2": 640, "last_level": "GREEN"},
    ("Kalder", "2026-11-16"): {"KLD1": 40, "KLD2": 22, "tilt": 3.0, "so2": 820, "last_level": "ORANGE"},
    ("Kalder", "2026-11-09"): {"KLD1": 15, "KLD2": 9, "tilt": 5.5, "so2": 2200, "last_level": "GREEN"},
    ("Kalder", "2026-11-15"): {"KLD1": 102, "KLD2": 61, "tilt": 11.0, "so2": 2650, "last_level": "ORANGE"},
    ("Kalder", "2026-11-11"): {"KLD1": 12, "KLD2": 6, "tilt": 0.8, "so2": 310, "last_level": "GREEN"},
    ("Saro", "2026-11-14"): {"SR1": 4, "SR2": 2, "tilt": 0.3, "so2": 180, "last_level": "ORANGE"},
    ("Saro", "2026-11-13"): {"SR1": 5, "SR2": 1, "tilt": 0.2, "so2": 150, "last_level": "ORANGE"},
}
INPUTS = {d: d for (v, d) in DB if v == "Kalder"}
REFS = ["2026-11-16", "2026-11-09", "2026-11-15", "2026-11-11"]

CASES = [
    Case("zzd-volcano-01", "wrong_tool_args", "volcano.kld2_date", "2026-11-14", "generation observatory-model", 2,
         "issue_alert_level", 1, "The duty agent asks for station KLD2's counts on the day before the bulletin "
         "date, so the issued seismic evidence disagrees with the catalogue."),
    Case("zzd-volcano-02", "subagent_wrong_entity", "volcano.gas_target", "2026-11-14", "generation observatory-model", 6,
         "issue_alert_level", 1, "The gas analyst agent measures the SO2 flux of the neighbouring volcano Saro "
         "instead of Kalder, and the duty agent issues the bulletin with that flux as evidence."),
    Case("zzd-volcano-03", "stale_data", "volcano.tilt_cache", "2026-11-13", "fetch_tilt", 1,
         "issue_alert_level", 1, "The tilt tool answers from a week-old cache (2026-11-07), so the issued tilt "
         "evidence disagrees with the station record."),
    Case("zzd-volcano-04", "truncated_result", "volcano.half_day", "2026-11-14", "fetch_seismic_counts", 1,
         "issue_alert_level", 1, "Station KLD1's event count comes back for only the first 12 hours, so the "
         "level is decided and issued on half the day's events."),
    Case("zzd-volcano-05", "context_pollution", "volcano.mixed_bulletins", "2026-11-14", "search_past_bulletins",
         1, "issue_alert_level", 1, "The bulletin search mixes the neighbouring volcano's bulletins into the "
         "results, and the agent takes Saro's ORANGE as Kalder's previous level."),
]


def _level(vt: int, so2: float, tilt: float) -> str:
    if vt > 150 or so2 > 3000:
        return "ORANGE"
    if vt > 50 or so2 > 1000 or tilt > 8:
        return "YELLOW"
    return "GREEN"


def _policy(request):
    from trajdebug.testing import Reply, tool_call

    messages = request.body["messages"]
    system = messages[0]["content"]
    user = next(m["content"] for m in messages if m["role"] == "user")
    done = tool_history(messages)
    seen = {name: (args, json.loads(res) if res.startswith("{") else res) for name, args, res in done}
    if system.startswith("You are the gas analyst"):
        volcano = re.search(r"for (\w+) on", user).group(1)
        date = re.search(r"on (\d{4}-\d\d-\d\d)", user).group(1)
        if "fetch_so2_flux" not in seen:
            if active("volcano.gas_target"):
                volcano = "Saro"
            return Reply(tool_calls=(tool_call("fetch_so2_flux", {"volcano": volcano, "date": date}),))
        flux = seen["fetch_so2_flux"][1]
        return f"SO2 flux {flux['so2_t_per_day']} t/d ({flux['method']}, {flux['volcano']} {flux['date']})."
    date = re.search(r"(\d{4}-\d\d-\d\d)", user).group(1)
    counts = [json.loads(r) for n, a, r in done if n == "fetch_seismic_counts"]
    if len(counts) < 2:
        station = ["KLD1", "KLD2"][len(counts)]
        day = date
        if active("volcano.kld2_date") and station == "KLD2":
            day = {"2026-11-14": "2026-11-13"}.get(date, date)
        return Reply(tool_calls=(tool_call("fetch_seismic_counts", {"station": station, "date": day}),))
    if "fetch_tilt" not in seen:
        return Reply(tool_calls=(tool_call("fetch_tilt", {"station": "KLD1", "date": date, "hours": 24}),))
    if "search_past_bulletins" not in seen:
        return Reply(tool_calls=(tool_call("search_past_bulletins", {"volcano": "Kalder", "limit": 3}),))
    if "consult_gas_analyst" not in seen:
        return Reply(tool_calls=(tool_call("consult_gas_analyst",
                                           {"input": f"Measure the SO2 flux for Kalder on {date}."}),))
    if "issue_alert_level" not in seen:
        vt = sum(c["vt_events"] for c in counts)
        tilt = seen["fetch_tilt"][1]["change_urad"]
        so2 = float(re.search(r"SO2 flux ([\d.]+)", seen["consult_gas_analyst"][1]).group(1))
        previous = seen["search_past_bulletins"][1]["bulletins"][0]["level"]
        return Reply(tool_calls=(tool_call("issue_alert_level", {
            "volcano": "Kalder", "date": date, "level": _level(vt, so2, tilt), "previous_level": previous,
            "vt_events": vt, "so2_t_per_day": so2, "tilt_urad": tilt}),))
    issued = json.loads([r for n, a, r in done if n == "issue_alert_level"][0])
    return f"Issued {issued['bulletin']} for Kalder."


class BulletinRejected(RuntimeError):
    pass


@function_tool
def fetch_seismic_counts(station: str, date: str) -> str:
    """Volcano-tectonic event count of one seismic station for one UTC day."""
    volcano = "Kalder" if station.startswith("KLD") else "Saro"
    events = DB[(volcano, date)][station]
    hours = 24
    if active("volcano.half_day") and station == "KLD1":
        events, hours = events * 5 // 12, 12
    return json.dumps({"station": station, "date": date, "vt_events": events, "hours_covered": hours})


@function_tool
def fetch_tilt(station: str, date: str, hours: int) -> str:
    """Tilt change (microradians) at a tiltmeter over the last hours of the date."""
    as_of = "2026-11-07" if active("volcano.tilt_cache") else date
    return json.dumps({"station": station, "as_of": as_of, "window_h": hours,
                       "change_urad": DB[("Kalder", as_of)]["tilt"]})


@function_tool
def search_past_bulletins(volcano: str, limit: int) -> str:
    """The most recent alert bulletins for a volcano, newest first."""
    rows = []
    for (v, d), rec in DB.items():
        if v == volcano or (active("volcano.mixed_bulletins") and v == "Saro"):
            issued = f"{d}T{'06' if v == 'Kalder' else '18'}:00Z"
            rows.append({"volcano": v, "date": d, "issued": issued, "level": rec["last_level"]})
    rows.sort(key=lambda r: r["issued"], reverse=True)
    current = CURRENT["date"]
    rows = [r for r in rows if r["date"] < current][:limit]
    return json.dumps({"bulletins": rows})


@function_tool
def fetch_so2_flux(volcano: str, date: str) -> str:
    """SO2 emission rate (tonnes per day) from the day's DOAS traverse."""
    return json.dumps({"volcano": volcano, "date": date, "so2_t_per_day": DB[(volcano, date)]["so2"],
                       "method": "DOAS traverse"})


@function_tool(failure_error_function=None)
def issue_alert_level(volcano: str, date: str, level: str, previous_level: str, vt_events: int,
                      so2_t_per_day: float, tilt_urad: float) -> str:
    """Issue the day's alert level bulletin through the observatory's bulletin service."""
    rec = DB[(volcano, date)]
    vt = rec["KLD1"] + rec["KLD2"]
    if vt_events != vt:
        raise BulletinRejected(f"HTTP 409 Conflict: evidence vt_events {vt_events} disagrees with catalogue "
                               f"total {vt} for {volcano} on {date}")
    if abs(tilt_urad - rec["tilt"]) > 0.05:
        raise BulletinRejected(f"HTTP 409 Conflict: evidence tilt_urad {tilt_urad} disagrees with station KLD1 "
                               f"record {rec['tilt']} for {date}")
    if abs(so2_t_per_day - rec["so2"]) > 1:
        raise BulletinRejected(f"HTTP 409 Conflict: evidence so2_t_per_day {so2_t_per_day} disagrees with the "
                               f"DOAS record {rec['so2']} t/d for {volcano} on {date}")
    prior = max(d for (v, d) in DB if v == volcano and d < date)
    if previous_level != DB[(volcano, prior)]["last_level"]:
        raise BulletinRejected(f"HTTP 409 Conflict: previous_level {previous_level} does not match the last "
                               f"{volcano} bulletin ({DB[(volcano, prior)]['last_level']}, {prior})")
    expected = _level(vt, rec["so2"], rec["tilt"])
    if level != expected:
        raise BulletinRejected(f"HTTP 422 Unprocessable Entity: level {level} for {volcano} on {date} is below "
                               f"the criteria for {expected} (SO2 {rec['so2']} t/d on record, "
                               f"{so2_t_per_day} t/d in evidence)")
    return json.dumps({"bulletin": f"VAB-{volcano[:3].upper()}-{date}", "level": level})


CURRENT: dict = {}


def record(server, key: str, path: Path) -> None:
    server.use(_policy)
    CURRENT["date"] = key
    processor = TrajdebugProcessor(path=str(path), name=AGENT, task=f"alert level for Kalder on {key}")
    set_trace_processors([processor])

    async def main() -> None:
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        model = OpenAIChatCompletionsModel(model="observatory-model", openai_client=client)
        gas = Agent(name="gas_analyst", model=model, tools=[fetch_so2_flux],
                    instructions="You are the gas analyst. Measure the SO2 flux asked for and report it in t/d.")
        duty = Agent(name="duty_volcanologist", model=model,
                     instructions="You are the duty volcanologist for Kalder. Gather the day's evidence, consult "
                                  "the gas analyst, decide the alert level and issue it.",
                     tools=[fetch_seismic_counts, fetch_tilt, search_past_bulletins,
                            gas.as_tool(tool_name="consult_gas_analyst",
                                        tool_description="Ask the gas analyst to measure the SO2 flux."),
                            issue_alert_level])
        try:
            await Runner.run(duty, f"Prepare the {key} alert level bulletin for Kalder (stations KLD1, KLD2).",
                             run_config=RunConfig(workflow_name=AGENT), max_turns=20)
        except AgentsException as exc:
            if not isinstance(exc.__cause__, BulletinRejected):
                raise
        finally:
            await client.close()

    try:
        asyncio.run(main())
    finally:
        set_trace_processors([])
