"""Wind-farm maintenance planner (LangGraph): turns a day's turbine alarms into crewed work orders.

A graph: intake -> turbine status (a loop over the farm's turbines through SCADA, retried once when a poll
times out) -> triage (the model assigns a crew to each alarm) -> forecast (met service, converted to SI) ->
transfer window (plain code) -> dispatch (one work order per alarm, the operator's work-order API checks
crew, lock-outs and weather) -> the planner's own summary check.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from benchmarks.heldout.suite_l.kit import Case, active
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool


AGENT = "windfarm-maintenance-planner"
ROUTE = "langgraph"
DOMAIN = "wind-farm maintenance"

KNOT_MS = 0.514444
HS_LIMIT_M = 1.5
WIND_LIMIT_MS = 12.0
CREWS = {"GBX": "gearbox", "PB": "blade", "CNV": "electrical", "YAW": "mechanical"}
ALARMS = {
    "Moray East": {"T03": ["GBX-114"], "T05": ["CNV-201"], "T07": ["PB-2"], "T11": ["YAW-7"]},
    "Walney 3": {"T02": ["CNV-201"], "T06": ["GBX-114"], "T09": ["PB-2"]},
    "Beatrice": {"T04": ["PB-2"], "T08": ["GBX-120"], "T10": ["YAW-7"], "T12": ["CNV-230"]},
}
LOCKED = {"Moray East": {"T07"}, "Walney 3": {"T04"}, "Beatrice": {"T01"}}
FLAKY = {"Moray East": "T07", "Walney 3": "T05", "Beatrice": "T09"}


def _forecast(farm: str, issue: str) -> list[dict[str, Any]]:
    """Hourly wind (knots) and significant wave height (m), 06:00 to 18:00."""
    seed = sum(map(ord, farm)) % 5
    rows = []
    for i, hour in enumerate(range(6, 19)):
        wind_kn = 11 + (i + seed) % 4 * 2.0
        hs = 0.8 + 0.1 * ((i + seed) % 3)
        if issue == "current" and hour in (6, 7, 8) and farm == "Moray East":
            wind_kn, hs = 18.0, 1.9  # a front passing in the morning
        if hour == 8 and farm == "Beatrice":
            wind_kn = 27.0  # a squall line at 08:00
        if hour == 9 and farm == "Walney 3":
            hs = 1.7
        rows.append({"hour": f"{hour:02d}:00", "wind_kn": wind_kn, "hs_m": round(hs, 1)})
    return rows


@tool
def scada_query(farm: str, turbine: str, attempt: int = 1) -> dict[str, Any]:
    """Poll one turbine's controller through SCADA."""
    if turbine == FLAKY[farm] and attempt == 1:
        raise TimeoutError(f"SCADA poll of {farm}/{turbine} timed out after 3.0 s")
    state = "locked_out" if turbine in LOCKED[farm] else "available"
    return {"turbine": turbine, "state": state, "alarms": ALARMS[farm].get(turbine, [])}


@tool
def read_turbine_status(farm: str, turbine: str) -> dict[str, Any]:
    """A turbine's state and alarms, polled again once when SCADA times out."""
    try:
        return scada_query.invoke({"farm": farm, "turbine": turbine})
    except TimeoutError:
        if active("windfarm.poll_fallback"):
            return {
                "turbine": turbine,
                "state": "available",
                "alarms": ALARMS[farm].get(turbine, []),
                "polled": "cached",
            }
        return scada_query.invoke({"farm": farm, "turbine": turbine, "attempt": 2})


@tool
def fetch_met_forecast(farm: str, date: str) -> dict[str, Any]:
    """The met service's hourly marine forecast for the farm (wind in knots, Hs in metres)."""
    issue = "previous" if active("windfarm.forecast_issue") else "current"
    issued = f"{date}T00:00Z" if issue == "current" else "previous day 12:00Z"
    return {"farm": farm, "issued": issued, "hours": _forecast(farm, issue)}


def _to_si(forecast: dict[str, Any]) -> list[dict[str, Any]]:
    factor = 1 / 3.6 if active("windfarm.knot_factor") else KNOT_MS
    return [
        {"hour": h["hour"], "wind_ms": round(h["wind_kn"] * factor, 1), "hs_m": h["hs_m"]}
        for h in forecast["hours"]
    ]


def _window(args: dict[str, Any]) -> dict[str, Any]:
    hours, need = args["hours"], args["need"]
    ok = [h["wind_ms"] < WIND_LIMIT_MS and h["hs_m"] < HS_LIMIT_M for h in hours]
    for start in range(len(hours) - need + 1):
        if all(ok[start : start + need]):
            span = need + 1 if active("windfarm.window_end") else need
            return {"start": hours[start]["hour"], "slots": [h["hour"] for h in hours[start : start + span]]}
    return {"start": None, "slots": []}


convert_forecast = RunnableLambda(_to_si, name="convert_forecast")
select_transfer_window = RunnableLambda(_window, name="select_transfer_window")


@tool
def create_work_order(farm: str, turbine: str, alarm: str, crew: str, slot: str) -> dict[str, Any]:
    """Create a work order in the operator's maintenance system (checks crew, lock-out and weather)."""
    need = CREWS[alarm.split("-")[0]]
    if crew != need:
        raise ValueError(f"work-order API 422: {alarm} on {turbine} needs the {need} crew, not {crew}")
    if turbine in LOCKED[farm]:
        raise ValueError(
            f"work-order API 409: {farm}/{turbine} is under lock-out/tag-out; no access is permitted"
        )
    hour = next(h for h in _forecast(farm, "current") if h["hour"] == slot)
    if hour["hs_m"] >= HS_LIMIT_M or hour["wind_kn"] * KNOT_MS >= WIND_LIMIT_MS:
        raise ValueError(
            f"work-order API 422: transfer to {turbine} at {slot} refused, forecast Hs {hour['hs_m']} m and wind "
            f"{hour['wind_kn'] * KNOT_MS:.1f} m/s exceed the CTV limits ({HS_LIMIT_M} m, {WIND_LIMIT_MS} m/s)"
        )
    return {"order": f"WO-{turbine}-{alarm}", "crew": crew, "slot": slot, "status": "scheduled"}


class PlanState(TypedDict, total=False):
    text: str
    request: dict[str, Any]
    statuses: list[dict[str, Any]]
    orders: list[dict[str, Any]]
    forecast: list[dict[str, Any]]
    window: dict[str, Any]
    scheduled: list[dict[str, Any]]


TRIAGE_SYS = "You triage wind-turbine alarms. For each alarm on an accessible turbine assign a crew (gearbox, blade, electrical, mechanical). Answer JSON {orders:[{turbine, alarm, crew}]}."


def policy(request: Any) -> str:
    messages = request.body["messages"]
    if messages[0]["content"] != TRIAGE_SYS:
        return "Unsupported request."
    statuses = json.loads(messages[-1]["content"])["turbines"]
    crews = dict(CREWS)
    if active("windfarm.pitch_crew"):
        crews["PB"] = "electrical"
    orders = [
        {"turbine": s["turbine"], "alarm": a, "crew": crews[a.split("-")[0]]}
        for s in statuses
        if s["state"] == "available"
        for a in s["alarms"]
    ]
    return json.dumps({"orders": orders})


def build(llm: Any) -> Any:
    from langgraph.graph import END, START, StateGraph

    def intake(state: PlanState) -> dict[str, Any]:
        fields = dict(p.strip().split("=", 1) for p in state["text"].split(";"))
        turbines = [f"T{n:02d}" for n in range(1, int(fields["turbines"]) + 1)]
        return {"request": {"farm": fields["farm"], "date": fields["date"], "turbines": turbines}}

    def turbine_status(state: PlanState) -> dict[str, Any]:
        farm = state["request"]["farm"]
        return {
            "statuses": [
                read_turbine_status.invoke({"farm": farm, "turbine": t}) for t in state["request"]["turbines"]
            ]
        }

    def triage(state: PlanState) -> dict[str, Any]:
        flagged = [s for s in state["statuses"] if s["alarms"]]
        reply = llm.invoke([SystemMessage(TRIAGE_SYS), HumanMessage(json.dumps({"turbines": flagged}))])
        return {"orders": json.loads(reply.content)["orders"]}

    def forecast(state: PlanState) -> dict[str, Any]:
        raw = fetch_met_forecast.invoke({"farm": state["request"]["farm"], "date": state["request"]["date"]})
        return {"forecast": convert_forecast.invoke(raw)}

    def transfer_window(state: PlanState) -> dict[str, Any]:
        return {
            "window": select_transfer_window.invoke(
                {"hours": state["forecast"], "need": len(state["orders"])}
            )
        }

    def dispatch(state: PlanState) -> dict[str, Any]:
        farm, slots = state["request"]["farm"], state["window"]["slots"]
        done = []
        for order, slot in zip(state["orders"], slots[-len(state["orders"]) :]):
            done.append(create_work_order.invoke({"farm": farm, **order, "slot": slot}))
        return {"scheduled": done}

    def check_plan(state: PlanState) -> dict[str, Any]:
        if len(state["scheduled"]) != len(state["orders"]):
            raise ValueError(
                f"{len(state['orders'])} alarms triaged but {len(state['scheduled'])} work orders scheduled"
            )
        return {}

    g = StateGraph(PlanState)
    for name, fn in (
        ("intake", intake),
        ("turbine_status", turbine_status),
        ("triage", triage),
        ("forecast", forecast),
        ("transfer_window", transfer_window),
        ("dispatch", dispatch),
        ("check_plan", check_plan),
    ):
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    for a, b in (
        ("intake", "turbine_status"),
        ("turbine_status", "triage"),
        ("triage", "forecast"),
        ("forecast", "transfer_window"),
        ("transfer_window", "dispatch"),
        ("dispatch", "check_plan"),
    ):
        g.add_edge(a, b)
    g.add_edge("check_plan", END)
    return g.compile()


_GRAPH: dict[str, Any] = {}


def record(server: Any, path: Path, inp: dict[str, Any]) -> None:
    """Record one run of the agent on ``inp`` into ``path`` (a failure is recorded, not raised)."""
    from langchain_openai import ChatOpenAI

    from trajdebug.integrations.langchain import TrajdebugTracer

    if _GRAPH.get("url") != server.base_url:
        llm = ChatOpenAI(
            base_url=server.base_url,
            api_key="sk-not-needed",
            model="gpt-4o-mini",
            max_retries=0,
            temperature=0,
        )
        _GRAPH.update(url=server.base_url, graph=build(llm))
    server.use(policy)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=inp["text"])
    try:
        _GRAPH["graph"].invoke({"text": inp["text"]}, config={"callbacks": [tracer]})
    except ValueError:
        pass


def _req(farm: str, turbines: int, date: str) -> dict[str, Any]:
    return {"text": f"farm={farm}; turbines={turbines}; date={date}"}


CASES = [
    Case(
        "windfarm_01",
        "windfarm.pitch_crew",
        "wrong_routing",
        "ChatOpenAI",
        '\\"alarm\\": \\"PB-2\\", \\"crew\\": \\"electrical\\"',
        _req("Beatrice", 12, "2026-04-10"),
    ),
    Case(
        "windfarm_02",
        "windfarm.knot_factor",
        "unit_error",
        "convert_forecast",
        '"wind_ms": 7.5',
        _req("Beatrice", 12, "2026-04-11"),
    ),
    Case(
        "windfarm_03",
        "windfarm.forecast_issue",
        "stale_data",
        "fetch_met_forecast",
        "previous day",
        _req("Moray East", 6, "2026-04-12"),
    ),
    Case(
        "windfarm_04",
        "windfarm.window_end",
        "off_by_one",
        "select_transfer_window",
        '"09:00"]',
        _req("Walney 3", 12, "2026-04-13"),
    ),
    Case(
        "windfarm_05",
        "windfarm.poll_fallback",
        "swallowed_error",
        "read_turbine_status",
        "cached",
        _req("Moray East", 12, "2026-04-14"),
    ),
]
REFS = [
    _req("Walney 3", 10, "2026-05-02"),
    _req("Beatrice", 9, "2026-05-03"),
    _req("Moray East", 5, "2026-05-04"),
    _req("Walney 3", 8, "2026-05-05"),
]
