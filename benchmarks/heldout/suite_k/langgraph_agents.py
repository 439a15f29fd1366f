"""The two LangGraph agents (ChatOpenAI on the fake server, recorded by TrajdebugTracer):
snow-plow dispatch and radio-spectrum licensing."""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, Request, tool_call

from ._harness import active


def _llm(base_url: str) -> ChatOpenAI:
    return ChatOpenAI(base_url=base_url, api_key="local", model="fake-model", max_retries=0, temperature=0)


def _tool_results(messages: list[dict[str, Any]]) -> list[Any]:
    return [json.loads(m["content"]) for m in messages if m.get("role") == "tool"]


# -- snow-plow dispatch -----------------------------------------------------------------------

_ROUTES = {
    "North": [("R-N-01", 1), ("R-N-02", 1), ("R-N-03", 1), ("R-N-04", 1), ("R-N-05", 1), ("R-N-31", 3), ("R-N-32", 3)],
    "East": [("R-E-01", 1), ("R-E-02", 1), ("R-E-03", 2), ("R-E-21", 3)],
    "West": [("R-W-01", 1), ("R-W-02", 1), ("R-W-03", 1), ("R-W-11", 2)],
    "Harbor": [("R-H-01", 1), ("R-H-02", 1), ("R-H-12", 2)],
    "Ridge": [("R-R-01", 1), ("R-R-02", 1), ("R-R-03", 1), ("R-R-04", 1)],
    "Valley": [("R-V-01", 1), ("R-V-02", 2)],
}
_FLEET = ["T-01", "T-02", "T-03", "T-04", "T-05", "T-06"]


@tool
def get_forecast(district: str) -> dict:
    """Snowfall forecast for a district over the next 12 hours (centimetres)."""
    snow = 4.7 if active("k_plow_unit") else 12.0
    return {"district": district, "snow_cm": snow, "issued": "2026-12-02T04:00"}


@tool
def list_routes(district: str, priority: int) -> dict:
    """Plow routes of a district up to a priority level (1 = arterial)."""
    rows = [r for r, p in _ROUTES.get(district, []) if active("k_plow_ignore") or p <= priority]
    if active("k_plow_trunc"):
        rows = rows[:3]
    return {"district": district, "routes": rows, "count": len(rows)}


@tool
def assign_plow(route_id: str, truck_id: str, salt_kg: int) -> dict:
    """Assign a truck and a salt load to a route."""
    if truck_id not in _FLEET:
        raise ValueError(f"fleet service: truck {truck_id} is not in the depot fleet ({len(_FLEET)} trucks)")
    if route_id.split("-")[1] != _DEPOT[0]:
        raise ValueError(f"fleet service: route {route_id} is outside the depot's service area")
    eta = "06:40"
    if active("k_plow_drift") and route_id.endswith("03"):
        eta = "2026-12-02T06:40:00+00:00"
    return {"route": route_id, "truck": truck_id, "salt_kg": salt_kg, "eta": eta}


_DEPOT = ["N"]


def plow_policy(request: Request) -> Reply | str:
    msgs = request.body["messages"]
    task = json.loads(msgs[1]["content"])
    results = _tool_results(msgs)
    if not results:
        district = "East" if active("k_plow_args") else task["district"]
        return Reply(tool_calls=(tool_call("get_forecast", {"district": task["district"]}),
                                 tool_call("list_routes", {"district": district, "priority": 1})))
    if len(results) == 2:
        forecast, routes = results
        salt = int(forecast["snow_cm"] * 25)
        calls = tuple(tool_call("assign_plow", {"route_id": r, "truck_id": f"T-{k + 1:02d}", "salt_kg": salt})
                      for k, r in enumerate(routes["routes"]))
        return Reply(tool_calls=calls)
    return f"Dispatched {len(results) - 2} plows for district {task['district']}."


class PlowState(MessagesState):
    district: str


def _plow_graph(base_url: str) -> Any:
    llm = _llm(base_url).bind_tools([get_forecast, list_routes, assign_plow])

    def dispatcher(state: PlowState) -> dict:
        return {"messages": [llm.invoke(state["messages"])]}

    def dispatch_check(state: PlowState) -> dict:
        done = [json.loads(m.content) for m in state["messages"] if isinstance(m, ToolMessage) and m.name == "assign_plow"]
        covered = {d["route"] for d in done}
        for route, prio in _ROUTES[state["district"]]:
            if prio == 1 and route not in covered:
                raise AssertionError(f"dispatch check: arterial route {route} has no plow assigned")
        for d in done:
            hh, mm = d["eta"].split(":")
            if int(hh) * 60 + int(mm) > 7 * 60:
                raise AssertionError(f"dispatch check: {d['route']} cleared after 07:00")
            if d["salt_kg"] < 200:
                raise AssertionError(f"dispatch check: {d['salt_kg']} kg of salt on {d['route']} is below the 200 kg storm minimum")
        return {"messages": [AIMessage(content=f"{len(done)} routes dispatched")]}

    g = StateGraph(PlowState)
    g.add_node("dispatcher", dispatcher)
    g.add_node("tools", ToolNode([get_forecast, list_routes, assign_plow], handle_tool_errors=False))
    g.add_node("dispatch_check", dispatch_check)
    g.add_edge(START, "dispatcher")
    g.add_conditional_edges("dispatcher", tools_condition, {"tools": "tools", END: "dispatch_check"})
    g.add_edge("tools", "dispatcher")
    g.add_edge("dispatch_check", END)
    return g.compile()


def plow_agent(clients: dict[str, Any], given: dict[str, Any], path: Path) -> None:
    _DEPOT[0] = given["district"][0]
    tracer = TrajdebugTracer(path=str(path), name="plow-dispatcher", task=f"storm dispatch, {given['district']}")
    messages = [SystemMessage("You dispatch snow plows for the city depot."), HumanMessage(json.dumps(given))]
    _plow_graph(clients["base_url"]).invoke({"messages": messages, "district": given["district"]},
                                            config={"callbacks": [tracer], "recursion_limit": 12})


PLOW_INPUTS = [{"district": "North"}, {"district": "East"}, {"district": "West"}, {"district": "Harbor"}, {"district": "Ridge"}]


# -- radio-spectrum licensing ------------------------------------------------------------------

_LICENSEES = {"Keller Broadband Ltd": {"id": "KB-2040", "standing": "good"},
              "Keller Broadcasting": {"id": "KB-1193", "standing": "good"},
              "Marsh Utilities": {"id": "MU-3310", "standing": "good"},
              "Tern Radio Coop": {"id": "TR-0871", "standing": "good"},
              "Orca Mining": {"id": "OM-4417", "standing": "good"},
              "Pell Rail": {"id": "PR-2209", "standing": "good"}}
_GRANTS = [{"license": "L-88213", "band_ghz": 23.0, "cell": "K7", "channel": 12, "granted": "2026-10-02"},
           {"license": "L-70114", "band_ghz": 18.0, "cell": "K7", "channel": 3, "granted": "2024-05-19"}]
_EIRP_LIMIT = {23.0: 45.0, 18.0: 50.0, 0.6: 60.0}


@tool
def lookup_licensee(name: str) -> dict:
    """The registry record of a licensee, by registered name."""
    return {"name": name, **_LICENSEES[name]}


@tool
def search_grants(band_ghz: float, cell: str) -> dict:
    """Granted licenses in a band and map cell."""
    if active("k_spec_stale"):
        rows = [g for g in _GRANTS if g["granted"] < "2025-09-30"]
        return {"snapshot": "2025-09-30", "grants": [g for g in rows if g["band_ghz"] == band_ghz and g["cell"] == cell]}
    return {"snapshot": "2026-12-01", "grants": [g for g in _GRANTS if g["band_ghz"] == band_ghz and g["cell"] == cell]}


@tool
def issue_license(application: dict) -> dict:
    """File a decided application with the spectrum registry."""
    a = application
    lo, hi = (int(x) for x in _FILED[a["ref"]].split("-"))
    if len(a["channels"]) != hi - lo + 1:
        raise ValueError(f"spectrum registry: {len(a['channels'])} channels assigned for the requested range {lo}-{hi}")
    if a["licensee_id"] != _LICENSEES[a["applicant"]]["id"]:
        raise ValueError(f"spectrum registry: licensee {a['licensee_id']} is not the applicant {a['applicant']}")
    if a["service"] == "broadcast" and a["band_ghz"] > 3:
        raise ValueError(f"spectrum registry: {a['band_ghz']} GHz is not in the broadcast allotment plan")
    for g in _GRANTS:
        if (g["band_ghz"], g["cell"]) == (a["band_ghz"], a["cell"]) and g["channel"] in a["channels"]:
            raise ValueError(f"spectrum registry: channel {g['channel']} conflicts with {g['license']}")
    if a["fee"] != 1200.0 * len(a["channels"]) * (1 if a["service"] == "fixed" else 2):
        raise ValueError(f"spectrum registry: fee {a['fee']:.2f} does not match the tariff")
    if a["eirp_dbw"] > _EIRP_LIMIT[a["band_ghz"]]:
        raise ValueError(f"spectrum registry: EIRP {a['eirp_dbw']} dBW over the limit for {a['band_ghz']} GHz")
    return {"license": "L-9" + a["licensee_id"][-4:], "status": "granted"}


def spectrum_policy(request: Request) -> Reply | str:
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    app = json.loads(msgs[1]["content"])
    if system.startswith("Route"):
        desk = "fixed" if app["band_ghz"] > 3 else "broadcast"
        if active("k_spec_route"):
            desk = "broadcast"
        return json.dumps({"desk": desk})
    results = _tool_results(msgs)
    if not results:
        name = "Keller Broadcasting" if active("k_spec_entity") else app["applicant"]
        return Reply(tool_calls=(tool_call("lookup_licensee", {"name": name}),
                                 tool_call("search_grants", {"band_ghz": app["band_ghz"], "cell": app["cell"]})))
    rec, grants = results
    taken = sorted(g["channel"] for g in grants["grants"])
    free = [c for c in range(app["first_channel"], 40) if c not in taken][: app["channels"]]
    return json.dumps({"licensee_id": rec["id"], "channels": free})


class SpecState(TypedDict, total=False):
    application: dict
    desk: str
    decision: dict
    fee: dict
    conditions: dict
    log: Annotated[list, operator.add]


def _spectrum_graph(base_url: str) -> Any:
    llm = _llm(base_url)
    desk_llm = llm.bind_tools([lookup_licensee, search_grants])

    def parse_application(state: SpecState) -> dict:
        form = state["application"]
        lo, hi = (int(x) for x in form["channel_range"].split("-"))
        app = {"ref": form["ref"], "applicant": form["applicant"], "band_ghz": float(form["band"].removesuffix(" GHz")),
               "cell": form["cell"], "first_channel": lo, "channels": hi - lo + 1, "eirp_dbw": form["eirp_dbw"]}
        if active("k_spec_obo"):
            app["channels"] = hi - lo
        return {"application": app}

    def triage(state: SpecState) -> dict:
        out = llm.invoke([SystemMessage("Route the application to a desk."), HumanMessage(json.dumps(state["application"]))])
        return {"desk": json.loads(out.content)["desk"]}

    def fixed_desk(state: SpecState) -> dict:
        msgs = [SystemMessage("You coordinate fixed microwave links."), HumanMessage(json.dumps(state["application"]))]
        first = desk_llm.invoke(msgs)
        tools = {"lookup_licensee": lookup_licensee, "search_grants": search_grants}
        replies = [tools[c["name"]].invoke(c) for c in first.tool_calls]
        final = desk_llm.invoke([*msgs, first, *replies])
        return {"decision": {**json.loads(final.content), "service": "fixed"}}

    def broadcast_desk(state: SpecState) -> dict:
        app = state["application"]
        rec = lookup_licensee.invoke({"name": app["applicant"]})
        chans = list(range(app["first_channel"], app["first_channel"] + app["channels"]))
        return {"decision": {"licensee_id": rec["id"], "channels": chans, "service": "broadcast"}}

    def compute_fee(state: SpecState) -> dict:
        d = state["decision"]
        return {"fee": {"channels": len(d["channels"]), "fee": 1200.0 * len(d["channels"]) * (1 if d["service"] == "fixed" else 2)}}

    def record_conditions(state: SpecState) -> dict:
        app = state["application"]
        eirp = app["eirp_dbw"]
        if active("k_spec_memory"):
            eirp = _EIRP_LIMIT[app["band_ghz"]] + 10.0
        return {"conditions": {"eirp_dbw": eirp, "band_ghz": app["band_ghz"], "cell": app["cell"]}}

    def file_license(state: SpecState) -> dict:
        app, d = state["application"], state["decision"]
        form = {"ref": app["ref"], "applicant": app["applicant"], "licensee_id": d["licensee_id"], "service": d["service"],
                "band_ghz": app["band_ghz"], "cell": app["cell"], "channels": d["channels"],
                "fee": state["fee"]["fee"], "eirp_dbw": state["conditions"]["eirp_dbw"]}
        return {"log": [issue_license.invoke({"application": form})]}

    g = StateGraph(SpecState)
    for name, fn in [("parse_application", parse_application), ("triage", triage), ("fixed_desk", fixed_desk),
                     ("broadcast_desk", broadcast_desk), ("compute_fee", compute_fee),
                     ("record_conditions", record_conditions), ("file_license", file_license)]:
        g.add_node(name, fn)
    g.add_edge(START, "parse_application")
    g.add_edge("parse_application", "triage")
    g.add_conditional_edges("triage", lambda s: s["desk"], {"fixed": "fixed_desk", "broadcast": "broadcast_desk"})
    g.add_edge("fixed_desk", "compute_fee")
    g.add_edge("broadcast_desk", "compute_fee")
    g.add_edge("compute_fee", "record_conditions")
    g.add_edge("record_conditions", "file_license")
    g.add_edge("file_license", END)
    return g.compile()


def spectrum_agent(clients: dict[str, Any], given: dict[str, Any], path: Path) -> None:
    tracer = TrajdebugTracer(path=str(path), name="spectrum-licensing", task=f"license application {given['ref']}")
    _spectrum_graph(clients["base_url"]).invoke({"application": given, "log": []}, config={"callbacks": [tracer]})


SPECTRUM_INPUTS = [
    {"ref": "APP-7741", "applicant": "Keller Broadband Ltd", "band": "23 GHz", "cell": "K7", "channel_range": "9-12", "eirp_dbw": 41.0},
    {"ref": "APP-7702", "applicant": "Marsh Utilities", "band": "18 GHz", "cell": "K7", "channel_range": "4-6", "eirp_dbw": 44.0},
    {"ref": "APP-7715", "applicant": "Tern Radio Coop", "band": "0.6 GHz", "cell": "B2", "channel_range": "30-31", "eirp_dbw": 52.0},
    {"ref": "APP-7720", "applicant": "Orca Mining", "band": "23 GHz", "cell": "M4", "channel_range": "1-2", "eirp_dbw": 38.0},
    {"ref": "APP-7733", "applicant": "Pell Rail", "band": "18 GHz", "cell": "P1", "channel_range": "7-9", "eirp_dbw": 47.5},
]
_FILED = {a["ref"]: a["channel_range"] for a in SPECTRUM_INPUTS}
