"""Hot-air balloon flight planner (langgraph route): winds aloft loop, a model plans the flight, landing
fields, passenger weigh-in loop, envelope check, a model routes to the pilot brief or a reschedule."""

from __future__ import annotations

import json
import operator
from typing import Annotated, TypedDict

from kit import Case, active
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph


AGENT = "balloon-flight-planner"
ROUTE = "langgraph"
DOMAIN = "hot-air balloon passenger flights"
SHAPE = "intake -> winds-aloft loop (4 hours) -> model plans (JSON) -> landing fields -> weigh-in loop per passenger -> envelope check -> model routes -> pilot brief + flight notice, or reschedule"

SITES = {
    "BURNHAM": {"lat": 51.5, "envelope": "G-BXKE", "limit_kg": 420},
    "ASHCOTT": {"lat": 51.1, "envelope": "G-CDWN", "limit_kg": 560},
}
PAX = {"ana": 64, "ben": 88, "chidi": 79, "dora": 58, "emil": 92, "fern": 71, "gus": 83, "hana": 60, "ivo": 77, "jo": 69}
INPUTS = {
    "BK-71": {"booking": "BK-71", "site": "BURNHAM", "date": "2026-12-04", "pax": ["ana", "ben", "chidi", "dora"], "wind_kt": 6},
    "BK-72": {"booking": "BK-72", "site": "ASHCOTT", "date": "2026-12-04", "pax": ["emil", "fern", "gus"], "wind_kt": 13},
    "BK-73": {"booking": "BK-73", "site": "BURNHAM", "date": "2026-12-05", "pax": ["hana", "ivo"], "wind_kt": 5},
    "BK-74": {"booking": "BK-74", "site": "ASHCOTT", "date": "2026-12-05", "pax": ["jo", "ana", "dora"], "wind_kt": 7},
    "BK-75": {"booking": "BK-75", "site": "BURNHAM", "date": "2026-12-06", "pax": ["ben", "gus", "ivo", "fern"], "wind_kt": 14},
    "BK-76": {"booking": "BK-76", "site": "ASHCOTT", "date": "2026-12-06", "pax": ["chidi", "hana"], "wind_kt": 4},
}
REFS = ["BK-73", "BK-74", "BK-75", "BK-76"]
CASES = [
    Case("balloon.args", "wrong_tool_args", "ChatOpenAI", "bearing 225", "BK-71"),
    Case("balloon.format", "format_drift", "ChatOpenAI", "0600L", "BK-71"),
    Case("balloon.forecast", "stale_data", "winds_aloft", "2026-12-01T18Z", "BK-71"),
    Case("balloon.weight", "unit_error", "weigh_in", "194", "BK-71"),
    Case("balloon.route", "wrong_routing", "ChatOpenAI", "ROUTE: pilot_brief", "BK-72"),
]


def _issued(date: str) -> str:
    return f"{date[:8]}{int(date[8:]) - 1:02d}T18Z"


@tool
def winds_aloft(site: str, date: str, hour: int) -> dict:
    """Winds aloft for a launch site and hour (met office feed)."""
    issued = "2026-12-01T18Z" if active("balloon.forecast") else _issued(date)
    speed = INPUTS_BY_DATE.get((site, date), 6)
    return {"site": site, "valid": f"{date}T{hour:02d}Z", "issued": issued, "from_deg": 225, "surface_kt": speed,
            "kt_1000ft": speed + 4 + hour % 3}


@tool
def landing_fields(site: str, bearing: int, radius_km: int) -> list:
    """Landowner-approved landing fields from a site along a bearing."""
    names = {45: ["Wexcombe Down", "Hollins Farm"], 225: ["Marsh Lane", "Coldharbour"]}
    return [{"field": n, "bearing": bearing, "km": 8 + 5 * k} for k, n in enumerate(names.get(bearing, []))]


@tool
def weigh_in(booking: str, passenger: str) -> dict:
    """Kiosk weigh-in record for one passenger."""
    kg = PAX[passenger]
    if active("balloon.weight") and passenger == "ben":
        return {"passenger": passenger, "kg": round(kg * 2.2046)}
    return {"passenger": passenger, "kg": kg}


@tool
def envelope_capacity(site: str, payload_kg: int) -> dict:
    """Envelope lift margin at the forecast ambient temperature."""
    lim = SITES[site]["limit_kg"]
    if payload_kg > lim:
        raise ValueError(f"{SITES[site]['envelope']}: payload {payload_kg} kg over the {lim} kg lift limit at 4 C ambient")
    return {"envelope": SITES[site]["envelope"], "payload_kg": payload_kg, "margin_kg": lim - payload_kg}


@tool
def file_flight_notice(booking: str, site: str, etd: str, bearing: int, field: str, forecast_issued: str, surface_kt: int) -> dict:
    """File the flight notice with the aviation authority."""
    if len(etd) != 6 or etd[2] != ":" or not etd.endswith("Z"):
        raise ValueError(f"notice form rejected: ETD {etd!r} does not match HH:MMZ")
    if bearing != 45:
        raise ValueError(f"notice rejected: landing field {field} lies upwind of the forecast drift 045")
    date = INPUTS[booking]["date"]
    if forecast_issued != _issued(date):
        raise ValueError(f"notice rejected: forecast {forecast_issued} is not the current issue for {date}")
    if surface_kt > 10:
        raise ValueError(f"notice rejected: surface wind {surface_kt} kt above the 10 kt passenger-flight limit")
    return {"notice": f"FN-{booking}", "status": "accepted"}


@tool
def rebook(booking: str, reason: str) -> dict:
    """Move a booking to the next free slot."""
    return {"booking": booking, "new_date": "2026-12-09", "reason": reason}


INPUTS_BY_DATE = {(v["site"], v["date"]): v["wind_kt"] for v in INPUTS.values()}


class S(TypedDict, total=False):
    booking: dict
    winds: Annotated[list, operator.add]
    plan: dict
    fields: list
    weights: Annotated[list, operator.add]
    load: dict
    route: str
    result: dict


def brain(request) -> str:
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    data = json.loads(user.split("\n", 1)[1])
    if system.startswith("You plan"):
        winds = data["winds"]
        calm = min(winds, key=lambda w: (w["kt_1000ft"], w["valid"]))
        bearing = (winds[0]["from_deg"] + 180) % 360
        if active("balloon.args"):
            bearing = winds[0]["from_deg"]
        etd = calm["valid"][11:13] + ":00Z"
        if active("balloon.format"):
            etd = calm["valid"][11:13] + "00L"
        return (f"Launch at {etd}, drift bearing {bearing}.\n"
                + json.dumps({"etd": etd, "landing_query": {"bearing": bearing, "radius_km": 25}}))
    if system.startswith("You route"):
        ok = data["surface_kt"] <= 10 or active("balloon.route")
        return "ROUTE: pilot_brief" if ok else "ROUTE: reschedule"
    return "noted"


def _json_tail(text: str) -> dict:
    return json.loads(text[text.index("{"):])


def build(llm):
    def intake(state: S) -> dict:
        return {"booking": dict(state["booking"])}

    def forecast(state: S, config: RunnableConfig) -> dict:
        b = state["booking"]
        hour = 6 + len(state.get("winds", []))
        return {"winds": [winds_aloft.invoke({"site": b["site"], "date": b["date"], "hour": hour}, config)]}

    def more_winds(state: S) -> str:
        return "forecast" if len(state["winds"]) < 4 else "planner"

    def planner(state: S, config: RunnableConfig) -> dict:
        msg = llm.invoke([SystemMessage("You plan balloon flights: pick the calmest hour and the drift bearing."),
                          HumanMessage("Plan this flight:\n" + json.dumps({"booking": state["booking"], "winds": state["winds"]}))], config)
        return {"plan": _json_tail(msg.content)}

    def landing(state: S, config: RunnableConfig) -> dict:
        q = state["plan"]["landing_query"]
        return {"fields": landing_fields.invoke({"site": state["booking"]["site"], **q}, config)}

    def weigh(state: S, config: RunnableConfig) -> dict:
        b = state["booking"]
        who = b["pax"][len(state.get("weights", []))]
        return {"weights": [weigh_in.invoke({"booking": b["booking"], "passenger": who}, config)]}

    def more_pax(state: S) -> str:
        return "weigh" if len(state["weights"]) < len(state["booking"]["pax"]) else "load_check"

    def load_check(state: S, config: RunnableConfig) -> dict:
        total = sum(w["kg"] for w in state["weights"]) + 95  # pilot
        return {"load": envelope_capacity.invoke({"site": state["booking"]["site"], "payload_kg": total}, config)}

    def router(state: S, config: RunnableConfig) -> dict:
        w = state["winds"][0]
        msg = llm.invoke([SystemMessage("You route a planned flight: pilot_brief or reschedule."),
                          HumanMessage("Route:\n" + json.dumps({"surface_kt": w["surface_kt"], "load": state["load"]}))], config)
        return {"route": msg.content.split(":")[1].strip()}

    def pilot_brief(state: S, config: RunnableConfig) -> dict:
        b, p = state["booking"], state["plan"]
        calm = state["winds"][0]
        res = file_flight_notice.invoke({"booking": b["booking"], "site": b["site"], "etd": p["etd"],
                                         "bearing": p["landing_query"]["bearing"], "field": state["fields"][0]["field"],
                                         "forecast_issued": calm["issued"], "surface_kt": calm["surface_kt"]}, config)
        return {"result": res}

    def reschedule(state: S, config: RunnableConfig) -> dict:
        return {"result": rebook.invoke({"booking": state["booking"]["booking"], "reason": "surface wind"}, config)}

    g = StateGraph(S)
    for name, fn in [("intake", intake), ("forecast", forecast), ("planner", planner), ("landing", landing),
                     ("weigh", weigh), ("load_check", load_check), ("router", router),
                     ("pilot_brief", pilot_brief), ("reschedule", reschedule)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "forecast")
    g.add_conditional_edges("forecast", more_winds, ["forecast", "planner"])
    g.add_edge("planner", "landing")
    g.add_edge("landing", "weigh")
    g.add_conditional_edges("weigh", more_pax, ["weigh", "load_check"])
    g.add_edge("load_check", "router")
    g.add_conditional_edges("router", lambda s: s["route"], ["pilot_brief", "reschedule"])
    g.add_edge("pilot_brief", END)
    g.add_edge("reschedule", END)
    return g.compile()


def record(inp: str, path, server) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    server.use(brain)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"plan balloon flight {inp}")
    try:
        build(llm).invoke({"booking": INPUTS[inp]}, config={"callbacks": [tracer], "recursion_limit": 60})
    except ValueError:
        pass
