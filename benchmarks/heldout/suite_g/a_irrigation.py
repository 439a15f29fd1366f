"""Orchard irrigation scheduler (route a: LangGraph, ChatOpenAI, ToolNode; recorded with TrajdebugTracer).

A grower asks for tomorrow's irrigation windows. A planner model reads the rain forecast and each zone's
soil moisture through tools (one call per turn), writes a plan in text; a parser turns it into records, a
node merges them into the day's valve schedule, and the commit node submits it to the valve controller,
which validates volumes, flows, overlaps and the rain lockout.
"""

from __future__ import annotations

import json
import operator
import re
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from .common import AgentSpec, Case, Reply, Req, active, brain, keyed, model_server, tool_call


AGENT = "orchard-irrigation-scheduler"

ZONES = keyed(
    "crop area_m2 target_pct flow_lpm probe pct",
    {
        'A1': ('almond', 3200, 32, 40, 'capacitive', 21),
        'A2': ('almond', 2800, 32, 35, 'capacitive', 27),
        'B2': ('walnut', 4100, 36, 50, 'tdr', 24),
        'B3': ('walnut', 3600, 36, 45, 'tdr', 30),
        'C1': ('pistachio', 5000, 28, 60, 'capacitive', 19),
        'C4': ('pistachio', 2200, 28, 30, 'tdr', 26),
    },
)
RAIN_MM = {"KDVS": 1.2, "KSMF": 0.0, "KOVE": 14.5, "KMYV": 0.4}
DAILY_ALLOCATION_L = 9000
LOCKOUT_MM = 8.0
ALLOTMENT_L_PER_M2 = 0.5


class ValveControllerError(RuntimeError):
    """The valve controller refused a schedule."""


@tool
def get_rain_forecast(station: str) -> str:
    """Rain expected in the next 24 hours at a weather station, in millimetres."""
    return json.dumps({"station": station, "rain_24h_mm": RAIN_MM[station]})


@tool
def get_soil_moisture(zone: str) -> str:
    """Latest volumetric soil moisture reading of an irrigation zone."""
    z = ZONES[zone]
    pct = z["pct"] / 100 if active("irrigation.probe_units") and z["probe"] == "tdr" else z["pct"]
    return json.dumps(
        {
            "zone": zone,
            "moisture_pct": pct,
            "target_pct": z["target_pct"],
            "area_m2": z["area_m2"],
            "flow_lpm": z["flow_lpm"],
        }
    )


@tool
def submit_valve_schedule(farm: str, station: str, entries: list[dict]) -> str:
    """Submit the day's valve schedule to the controller."""
    if RAIN_MM[station] >= LOCKOUT_MM and any(e["liters"] > 0 for e in entries):
        raise ValveControllerError("controller rain lockout engaged for this farm; watering windows refused")
    seen = set()
    for e in entries:
        if (e["zone"], e["start"]) in seen:
            raise ValveControllerError("valve conflict: a valve is opened twice in the same window")
        seen.add((e["zone"], e["start"]))
        if e["zone"] in ZONES:
            expected = e["minutes"] * ZONES[e["zone"]]["flow_lpm"]
            if abs(expected - e["liters"]) > 0.1 * expected:
                raise ValveControllerError(f"zone {e['zone']}: metered volume and runtime disagree beyond 10%")
            if e["liters"] > ZONES[e["zone"]]["area_m2"] * ALLOTMENT_L_PER_M2:
                raise ValveControllerError("a zone's volume exceeds its daily allotment of 0.5 L per square metre")
    total = sum(e["liters"] for e in entries)
    if total > DAILY_ALLOCATION_L:
        raise ValveControllerError(f"daily district allocation exceeded ({DAILY_ALLOCATION_L} L)")
    return json.dumps({"accepted": len(entries), "farm": farm})


@brain("irrigation.planner")
def _planner(req: Req) -> Any:
    ask = json.loads(req.user)
    done = [a["zone"] for n, a, _ in req.tool_results() if n == "get_soil_moisture"]
    todo = [z for z in ask["zones"] if z not in done]
    if todo:
        return Reply(tool_calls=(tool_call("get_soil_moisture", {"zone": todo[0]}),))
    if not req.called("get_rain_forecast"):
        station = ask["backup_station"] if active("irrigation.station_arg") else ask["station"]
        return Reply(tool_calls=(tool_call("get_rain_forecast", {"station": station}),))
    rain = json.loads(req.result("get_rain_forecast") or "{}")["rain_24h_mm"]
    lines = []
    for n, _, content in req.tool_results():
        if n != "get_soil_moisture":
            continue
        r = json.loads(content)
        deficit = max(0.0, r["target_pct"] - r["moisture_pct"]) if rain < LOCKOUT_MM else 0.0
        minutes = round(deficit * r["area_m2"] * 0.02 / r["flow_lpm"])
        lines.append(f"{r['zone']}: 05:30 for {minutes} min ({minutes * r['flow_lpm']:,} L)")
    return "Plan for tomorrow:\n" + "\n".join(lines)


class PlanParser(BaseOutputParser[list]):
    """Reads 'ZONE: HH:MM for N min (V L)' lines."""

    def parse(self, text: str) -> list:
        out = []
        for zone, start, minutes, vol in re.findall(r"(\w+): (\d\d:\d\d) for (\d+) min \(([\d,]+) L\)", text):
            liters = (
                int(float(vol.replace(",", "."))) if active("irrigation.volume_parse") else int(vol.replace(",", ""))
            )
            out.append({"zone": zone, "start": start, "minutes": int(minutes), "liters": liters})
        return out


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    request: dict
    plan: list
    schedule: Annotated[list, operator.add]


_GRAPH: Any = None


def graph() -> Any:
    global _GRAPH
    if _GRAPH is None:
        from langchain_openai import ChatOpenAI

        llm = ChatOpenAI(
            base_url=model_server().base_url, api_key="not-needed", model="gpt-4o-mini", max_retries=0, temperature=0
        )
        tools = [get_rain_forecast, get_soil_moisture]
        planner_llm = llm.bind_tools(tools)

        def planner(state: State) -> dict:
            system = SystemMessage("desk: irrigation.planner. Plan irrigation windows; one tool call per turn.")
            return {"messages": [planner_llm.invoke([system, *state["messages"]])]}

        def parse_plan(state: State) -> dict:
            return {"plan": PlanParser().invoke(state["messages"][-1].content)}

        def merge_schedule(state: State) -> dict:
            new = [dict(e, farm=state["request"]["farm"]) for e in state["plan"]]
            if active("irrigation.schedule_merge"):
                return {"schedule": state["schedule"] + new}
            return {"schedule": new}

        def commit(state: State) -> dict:
            req = state["request"]
            result = submit_valve_schedule.invoke(
                {"farm": req["farm"], "station": req["station"], "entries": state["schedule"]}
            )
            return {"messages": [HumanMessage(f"controller: {result}")]}

        g = StateGraph(State)
        g.add_node("planner", planner)
        g.add_node("tools", ToolNode(tools, handle_tool_errors=False))
        g.add_node("parse_plan", parse_plan)
        g.add_node("merge_schedule", merge_schedule)
        g.add_node("commit", commit)
        g.add_edge(START, "planner")
        g.add_conditional_edges("planner", tools_condition, {"tools": "tools", END: "parse_plan"})
        g.add_edge("tools", "planner")
        g.add_edge("parse_plan", "merge_schedule")
        g.add_edge("merge_schedule", "commit")
        g.add_edge("commit", END)
        _GRAPH = g.compile()
    return _GRAPH


def record(inp: dict, path: Path) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"irrigation windows for {inp['farm']}")
    standing = [{"zone": "FROST-MAIN", "start": "03:00", "minutes": 20, "liters": 0, "farm": inp["farm"]}]
    state = {"messages": [HumanMessage(json.dumps(inp))], "request": inp, "plan": [], "schedule": standing}
    try:
        graph().invoke(state, config={"callbacks": [tracer]})
    except ValveControllerError:
        pass


def _in(farm: str, station: str, backup: str, *zones: str) -> dict[str, Any]:
    return {"farm": farm, "station": station, "backup_station": backup, "zones": list(zones)}


# fmt: off
SPEC = AgentSpec(
    agent=AGENT, route="a", domain="orchard irrigation", record=record,
    summary="planner LLM with forecast and moisture tools in a ToolNode loop, output parser, schedule merge, commit",
    refs=[_in("F-07", "KDVS", "KSMF", "A1", "A2"), _in("F-12", "KMYV", "KDVS", "C1"),
          _in("F-21", "KOVE", "KDVS", "B2", "B3"), _in("F-30", "KSMF", "KMYV", "C4", "A2")],
    cases=[
        Case("g_irrigation_probe", "unit_error", "irrigation.probe_units", _in("F-03", "KDVS", "KMYV", "A1", "A2", "B2"),
             "get_soil_moisture", '"moisture_pct": 0.24',
             "The moisture tool reports the TDR probe's reading as a fraction instead of a percentage."),
        Case("g_irrigation_station", "wrong_tool_args", "irrigation.station_arg", _in("F-18", "KOVE", "KSMF", "A2", "C1"),
             "ChatOpenAI", '"station": "KSMF"',
             "The planner model asks for the forecast of the backup station instead of the farm's own station."),
        Case("g_irrigation_volume", "lossy_parse", "irrigation.volume_parse", _in("F-09", "KDVS", "KSMF", "B2", "A2"),
             "PlanParser", lambda out: any(e["liters"] < 10 and e["minutes"] > 0 for e in out),
             "The plan parser reads the thousands separator in '1,000 L' as a decimal comma."),
        Case("g_irrigation_merge", "bad_state_write", "irrigation.schedule_merge", _in("F-14", "KMYV", "KDVS", "B3"),
             "merge_schedule", "FROST-MAIN",
             "The merge node returns the existing schedule with the new entries into an appending channel, " "duplicating the standing frost-protection entry."),
    ],
)
# fmt: on
