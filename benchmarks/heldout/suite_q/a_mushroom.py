"""Mushroom farm grow rooms (route openai_agents): the OpenAI Agents SDK against the fake server.

A grow manager agent reads the room, its sensor log, consults a strain advisor sub-agent (as_tool),
sets the climate, checks it, inspects the shelves one by one, quarantines flagged shelves and hands
off to a dispatch agent that books the packhouse intake.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.heldout.suite_q import kit
from benchmarks.heldout.suite_q.kit import Agent, Case


NAME = "growroom-ops"

ROOMS = {
    "GR-1": {"strain": "Pleurotus ostreatus", "lot": "LOT-4410", "shelves": [6, 6, 5, 6], "alert_shelf": None},
    "GR-2": {"strain": "Hericium erinaceus", "lot": "LOT-2264", "shelves": [5, 4, 5, 4], "alert_shelf": 1},
    "GR-3": {"strain": "Lentinula edodes", "lot": "LOT-5127", "shelves": [8, 8, 8, 7, 8], "alert_shelf": 4},
    "GR-4": {"strain": "Hericium erinaceus", "lot": "LOT-3390", "shelves": [4, 5, 4], "alert_shelf": None},
    "GR-5": {"strain": "Pleurotus ostreatus", "lot": "LOT-6002", "shelves": [6, 6, 6, 6, 6, 6], "alert_shelf": 2},
    "GR-6": {"strain": "Lentinula edodes", "lot": "LOT-6218", "shelves": [7, 7, 7, 7], "alert_shelf": None},
    "GR-7": {"strain": "Hericium erinaceus", "lot": "LOT-7005", "shelves": [5, 5, 5, 5, 5], "alert_shelf": 3},
    "GR-9": {"strain": "Lentinula edodes", "lot": "LOT-9043", "shelves": [7, 8, 7, 8, 7], "alert_shelf": None},
    "GR-8": {"strain": "Pleurotus ostreatus", "lot": "LOT-8120", "shelves": [6, 5, 6, 5, 6, 5, 6], "alert_shelf": 6},
}
PROFILES = {
    "Pleurotus ostreatus": {"humidity_pct": 90, "co2_ppm": 700, "cycle_days": 6},
    "Pleurotus djamor": {"humidity_pct": 85, "co2_ppm": 1100, "cycle_days": 5},
    "Lentinula edodes": {"humidity_pct": 85, "co2_ppm": 900, "cycle_days": 9},
    "Hericium erinaceus": {"humidity_pct": 93, "co2_ppm": 600, "cycle_days": 8},
}
HARVEST = {"GR-2": "2026-12-13", "GR-9": "2026-12-14", "GR-1": "2026-12-07", "GR-3": "2026-12-11", "GR-4": "2026-12-10", "GR-5": "2026-12-08",
           "GR-6": "2026-12-12", "GR-7": "2026-12-09", "GR-8": "2026-12-06"}

MAIN = "You manage the grow rooms of Ridgeback Mushrooms. Prepare a room for fruiting and pass it to dispatch."
ADVISOR = "You are the strain advisor. Look up the fruiting climate profile of the strain you are asked about."
DISPATCH = "You are dispatch. Book the packhouse intake for the harvest described in the conversation."

_SETPOINTS: dict[str, dict] = {}


class Refused(RuntimeError):
    pass


Refused.__module__ = "growroom.clients"


def _calls(msgs):
    """(tool name, arguments, result text) for every tool call answered so far."""
    names, out = {}, []
    for m in msgs:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = (c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
        if m.get("role") == "tool":
            n, a = names.get(m["tool_call_id"], ("?", {}))
            out.append((n, a, m["content"]))
    return out


def _user_text(msgs) -> str:
    for m in msgs:
        if m.get("role") == "user":
            c = m["content"]
            return c if isinstance(c, str) else " ".join(p.get("text", "") for p in c)
    return ""


def policy(request):
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0].get("role") == "system" else ""
    done = _calls(msgs)
    names = [d[0] for d in done]
    if system == ADVISOR:
        if "strain_profile" not in names:
            strain = _user_text(msgs).split("strain ")[1].split(" fruiting")[0]
            if kit.active("ma_entity"):
                strain = "Pleurotus djamor" if strain != "Pleurotus djamor" else "Pleurotus ostreatus"
            return Reply(tool_calls=(tool_call("strain_profile", {"strain": strain}),))
        return done[-1][2]
    if system == DISPATCH:
        facts = {}
        for n, _a, res in done:
            if n == "room_status":
                facts.update(json.loads(res))
            if n == "inspect_shelf":
                facts.setdefault("trays", 0)
                facts["trays"] += json.loads(res)["trays"]
            if n == "quarantine_shelf":
                facts["trays"] -= json.loads(res)["trays_held"]
        if "book_packhouse" not in names:
            lot = "LOT-7731" if kit.active("ma_halluc") else facts["lot"]
            date = facts["harvest_date"]
            if kit.active("ma_format"):
                y, m, d = date.split("-")
                date = f"{d}/{m}/{y}"
            return Reply(tool_calls=(tool_call("book_packhouse", {
                "room": facts["room"], "lot": lot, "harvest_date": date, "trays": facts["trays"]}),))
        return f"Packhouse intake booked: {done[-1][2]}"
    # the grow manager
    room = _user_text(msgs).split("room ")[1].split(" ")[0].rstrip(".")
    status = next((json.loads(r) for n, a, r in done if n == "room_status"), None)
    if status is None:
        return Reply(tool_calls=(tool_call("room_status", {"room": room}),))
    if "fetch_sensor_log" not in names:
        return Reply(tool_calls=(tool_call("fetch_sensor_log", {"room": room, "hours": 48}),))
    if "consult_strain_advisor" not in names:
        return Reply(tool_calls=(tool_call("consult_strain_advisor", {
            "input": f"Climate profile for strain {status['strain']} fruiting in {room}"}),))
    if "set_climate" not in names:
        prof = json.loads(next(r for n, a, r in done if n == "consult_strain_advisor"))
        target = room
        if kit.active("ma_args"):
            target = f"GR-{int(room.split('-')[1]) + 1}"
        return Reply(tool_calls=(tool_call("set_climate", {
            "room": target, "humidity_pct": prof["humidity_pct"], "co2_ppm": prof["co2_ppm"]}),))
    if "verify_climate" not in names:
        return Reply(tool_calls=(tool_call("verify_climate", {"room": room}),))
    inspected = names.count("inspect_shelf")
    if inspected < status["shelf_count"]:
        return Reply(tool_calls=(tool_call("inspect_shelf", {"room": room, "shelf": inspected + 1}),))
    log = json.loads(next(r for n, a, r in done if n == "fetch_sensor_log"))
    flagged = [a["shelf"] for a in log["alerts"]]
    held = [a["shelf"] for n, a, r in done if n == "quarantine_shelf"]
    for s in flagged:
        if s not in held:
            return Reply(tool_calls=(tool_call("quarantine_shelf", {"room": room, "shelf": s}),))
    if "transfer_to_dispatch" not in names:
        return Reply(tool_calls=(tool_call("transfer_to_dispatch", {}),))
    return "Handed to dispatch."


def _build(model):
    from agents import Agent as SdkAgent
    from agents import function_tool

    @function_tool(failure_error_function=None)
    def room_status(room: str) -> str:
        """Current crop, lot and shelves of a grow room."""
        r = ROOMS[room]
        return json.dumps({"room": room, "strain": r["strain"], "lot": r["lot"], "shelf_count": len(r["shelves"]),
                           "harvest_date": HARVEST[room]})

    @function_tool(failure_error_function=None)
    def fetch_sensor_log(room: str, hours: int) -> str:
        """Sensor log of a room over the last `hours` hours, with its contamination alerts."""
        if kit.active("ma_ignore"):
            hours = 6  # the logger's default window
        start = {48: "2026-12-01T09:00", 6: "2026-12-03T03:00"}.get(hours, "2026-12-02T09:00")
        shelf = ROOMS[room]["alert_shelf"]
        alerts = [{"shelf": shelf, "note": "green mould spot on tray edge", "at": "2026-12-01T22:40"}] \
            if shelf and hours >= 24 else []
        return json.dumps({"room": room, "window_start": start, "humidity_avg": 87.5, "alerts": alerts})

    @function_tool(failure_error_function=None)
    def strain_profile(strain: str) -> str:
        """The fruiting climate profile of a strain."""
        return json.dumps({"strain": strain, **PROFILES[strain]})

    @function_tool(failure_error_function=None)
    def set_climate(room: str, humidity_pct: int, co2_ppm: int) -> str:
        """Send new climate setpoints to a room's controller."""
        _SETPOINTS[room] = {"humidity_pct": humidity_pct, "co2_ppm": co2_ppm}
        return json.dumps({"room": room, "accepted": True})

    @function_tool(failure_error_function=None)
    def verify_climate(room: str) -> str:
        """Read back a room's controller setpoints and check them against the crop registered there."""
        sp = _SETPOINTS.get(room)
        if sp is None:
            raise Refused(f"Climate controller {room}: setpoint readback timed out after 3 polls")
        want = PROFILES[ROOMS[room]["strain"]]
        if abs(sp["co2_ppm"] - want["co2_ppm"]) > 150:
            raise Refused(f"Climate controller {room}: interlock tripped, CO2 setpoint outside the band "
                          "registered for this room, change rolled back")
        return json.dumps({"room": room, **sp, "state": "holding"})

    @function_tool(failure_error_function=None)
    def inspect_shelf(room: str, shelf: int) -> str:
        """Tray count and pin-set stage of one shelf."""
        return json.dumps({"room": room, "shelf": shelf, "trays": ROOMS[room]["shelves"][shelf - 1],
                           "stage": "primordia"})

    @function_tool(failure_error_function=None)
    def quarantine_shelf(room: str, shelf: int) -> str:
        """Hold a shelf's trays back from harvest."""
        return json.dumps({"room": room, "shelf": shelf, "trays_held": ROOMS[room]["shelves"][shelf - 1]})

    @function_tool(failure_error_function=None)
    def book_packhouse(room: str, lot: str, harvest_date: str, trays: int) -> str:
        """Book the packhouse intake for a harvest."""
        r = ROOMS[room]
        parts = harvest_date.split("-")
        if len(parts) != 3 or len(parts[0]) != 4:
            raise Refused("Packhouse API: 422 Unprocessable Entity (field harvest_date)")
        if lot != r["lot"]:
            raise Refused(f"Packhouse API: 404 no pre-advice found for {lot}")
        held = r["shelves"][r["alert_shelf"] - 1] if r["alert_shelf"] else 0
        if trays != sum(r["shelves"]) - held:
            raise Refused(f"Packhouse API: 409 intake of {trays} trays refused, room {room} has an open "
                          "hygiene hold")
        return json.dumps({"booking": f"PH-{room}-{harvest_date}", "trays": trays})

    advisor = SdkAgent(name="strain_advisor", instructions=ADVISOR, model=model, tools=[strain_profile])
    dispatch = SdkAgent(name="dispatch", instructions=DISPATCH, model=model, tools=[book_packhouse])
    main = SdkAgent(
        name="grow_manager", instructions=MAIN, model=model,
        tools=[room_status, fetch_sensor_log,
               advisor.as_tool("consult_strain_advisor", "Ask the strain advisor for a climate profile."),
               set_climate, verify_climate, inspect_shelf, quarantine_shelf],
        handoffs=[dispatch],
    )
    return main


_SERVER = None


def _server():
    global _SERVER
    if _SERVER is None:
        from trajdebug.testing import FakeModelServer

        _SERVER = FakeModelServer(policy, model="gpt-4o-mini").start()
    return _SERVER


def agent(inp: dict, path: Path) -> None:
    from agents import OpenAIChatCompletionsModel, RunConfig, Runner
    from agents.exceptions import AgentsException
    from agents.tracing import set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    server = _server()
    _SETPOINTS.clear()
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    task = f"Prepare room {inp['room']} for fruiting and book the packhouse intake."
    proc = TrajdebugProcessor(path=str(path), name=NAME, task=task)
    set_trace_processors([proc])
    try:
        Runner.run_sync(_build(model), task, max_turns=40,
                        run_config=RunConfig(workflow_name=NAME, tracing_disabled=False))
    except (Refused, AgentsException):
        pass
    finally:
        set_trace_processors([])


CASES = [
    Case("growroom_args", NAME, "openai_agents", "wrong_tool_args", "ma_args", {"room": "GR-6"}, None, "GR-7"),
    Case("growroom_entity", NAME, "openai_agents", "subagent_wrong_entity", "ma_entity", {"room": "GR-1"},
         None, "djamor"),
    Case("growroom_ignored", NAME, "openai_agents", "tool_ignores_argument", "ma_ignore", {"room": "GR-8"},
         "fetch_sensor_log", "2026-12-03T03:00"),
    Case("growroom_halluc", NAME, "openai_agents", "hallucinated_value", "ma_halluc", {"room": "GR-3"},
         None, "LOT-7731"),
    Case("growroom_format", NAME, "openai_agents", "format_drift", "ma_format", {"room": "GR-4"},
         None, "10/12/2026"),
]
REFS = [{"room": "GR-5"}, {"room": "GR-7"}, {"room": "GR-2"}, {"room": "GR-9"}]

AGENT = Agent(NAME, "openai_agents", "jsonl", agent, CASES, REFS)
