"""Allotment society lettings: a LangGraph graph routes a request, gathers plot facts with tools, drafts and sends an offer."""

from __future__ import annotations

import json
from datetime import date
from typing import Annotated, Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import FakeModelServer, Reply, tool_call

from .. import kit


AGENT = "allotment-lettings"
ROUTE = "langgraph"
EXT = "jsonl"

SITES = {
    "Hilltop": {"vacant": [{"plot": "9", "size": "full"}], "waiting": [
        {"id": "W-0912", "name": "Bea Quartey", "since": "2019-03-02"}, {"id": "W-1044", "name": "Ansel Hart", "since": "2020-07-15"},
        {"id": "W-0987", "name": "Cyd Morrow", "since": "2019-11-20"}, {"id": "W-1101", "name": "Dilys Penn", "since": "2021-01-08"}]},
    "Brookside": {"vacant": [{"plot": "3A", "size": "half"}], "waiting": [
        {"id": "W-2210", "name": "Femi Ade", "since": "2020-02-11"}, {"id": "W-2231", "name": "Gus Lowe", "since": "2021-05-30"}]},
    "Orchard End": {"vacant": [{"plot": "17", "size": "full"}], "waiting": [
        {"id": "W-3302", "name": "Hana Ilic", "since": "2018-09-09"}, {"id": "W-3340", "name": "Ivo Marsh", "since": "2019-04-21"}]},
    "Millrace": {"vacant": [{"plot": "22", "size": "half"}], "waiting": [
        {"id": "W-4410", "name": "Jem Okoro", "since": "2020-10-10"}, {"id": "W-4477", "name": "Kit Vance", "since": "2022-03-03"},
        {"id": "W-4402", "name": "Lin Shao", "since": "2020-06-01"}, {"id": "W-4490", "name": "Mo Reyes", "since": "2023-02-14"}]},
}
TARIFF = {"full": {"terms": "T-FULL-2026", "rent": 46.5}, "half": {"terms": "T-HALF-2026", "rent": 23.25}}
SOIL = {"9": "2026-02-11", "3A": "2025-11-03", "17": "2026-01-20", "22": "2025-09-30"}

REQUESTS = {
    "a1": "Transfer: tenant Ada Moss (M-2231, plot 14) asks to move to the vacant plot at Hilltop. Request TR-0419.",
    "a2": "New letting: offer the vacant plot at Brookside to the next applicant.",
    "a3": "New letting: offer the vacant plot at Millrace to the next applicant.",
    "a4": "New letting: offer the vacant plot at Orchard End to the next applicant.",
    "a5": "New letting: offer the vacant plot at Hilltop to the next applicant.",
    "a6": "Transfer: tenant Noel Price (M-3105, plot 6) asks to move to the vacant plot at Orchard End. Request TR-0433.",
    "a7": "Transfer: tenant Ola Berg (M-1870, plot 2) asks to move to the vacant plot at Brookside. Request TR-0440.",
    "a8": "New letting: offer the vacant plot at Hilltop to the next applicant. Note: committee reminder sent.",
    "a9": "Transfer: tenant Pia Stone (M-2690, plot 11) asks to move to the vacant plot at Millrace. Request TR-0452.",
}

FAULTS = [
    {"id": "al-a", "kind": "wrong_routing", "order": "a1", "root": "ChatOpenAI", "marker": "route=new_plot;"},
    {"id": "al-b", "kind": "hallucinated_value", "order": "a4", "root": "ChatOpenAI", "marker": "27B"},
    {"id": "al-c", "kind": "truncated_result", "order": "a3", "root": "waiting_list", "marker": "page 1 of 2"},
    {"id": "al-d", "kind": "format_drift", "order": "a5", "root": "soil_report", "marker": "11/02/2026"},
    {"id": "al-e", "kind": "wrong_retrieval", "order": "a6", "root": "tenancy_terms", "marker": "T-HALF-2026"},
]
REFS = ["a2", "a7", "a8", "a9"]


class RegistryRefused(RuntimeError):
    pass


RegistryRefused.__module__ = "society_registry"


def _site(text: str) -> str:
    return text.split("vacant plot at ")[1].split(".")[0].split(" to ")[0]


@tool
def waiting_list(site: str) -> str:
    """The site's waiting list."""
    entries = sorted(SITES[site]["waiting"], key=lambda e: e["name"])
    if kit.active("al-c"):
        return json.dumps({"site": site, "entries": entries[:2], "note": "page 1 of 2"})
    return json.dumps({"site": site, "entries": entries, "note": "complete"})


@tool
def plot_register(site: str) -> str:
    """Vacant plots at a site."""
    return json.dumps({"site": site, "vacant": SITES[site]["vacant"]})


@tool
def soil_report(plot: str) -> str:
    """The latest soil test for a plot."""
    tested = SOIL[plot]
    if kit.active("al-d"):
        tested = f"{tested[8:10]}/{tested[5:7]}/{tested[:4]}"
    return json.dumps({"plot": plot, "lead_mg_kg": 112, "ph": 6.8, "tested": tested})


@tool
def tenancy_terms(size: str) -> str:
    """The tenancy terms and rent for a plot size."""
    key = "half" if kit.active("al-e") else size
    return json.dumps({"terms": TARIFF[key]["terms"], "rent": TARIFF[key]["rent"], "notice_weeks": 4})


TOOLS = [waiting_list, plot_register, soil_report, tenancy_terms]


def _tool_results(msgs: list) -> dict:
    results = {m.get("tool_call_id"): m.get("content") for m in msgs if m.get("role") == "tool"}
    out = {}
    for m in msgs:
        for c in (m.get("tool_calls") or []) if m.get("role") == "assistant" else []:
            if c["id"] in results:
                out[c["function"]["name"]] = json.loads(results[c["id"]])
    return out


def policy(request: Any) -> Reply | str:
    msgs = (request.body or {}).get("messages") or []
    system = str(msgs[0].get("content") or "")
    user = next(str(m.get("content")) for m in msgs if m.get("role") == "user")
    if system.startswith("Classify"):
        text = user.split("REQUEST: ")[1]
        route = "transfer" if text.startswith("Transfer") else "new_plot"
        if kit.active("al-a"):
            route = "new_plot"
        return f"route={route}; site={_site(text)}"
    if system.startswith("Draft"):
        facts = json.loads(user.split("FACTS: ")[1])
        plot = "27B" if kit.active("al-b") else facts["plot"]
        return f"Dear {facts['to']}, the society offers you plot {plot} at {facts['site']} on terms {facts['terms']}, rent {facts['rent']:.2f} a year."
    text = user.split("REQUEST: ")[1].split("\n")[0]
    route = user.split("ROUTE: ")[1].split(";")[0].split("=")[1]
    site = _site(text)
    got = _tool_results(msgs)
    if route == "new_plot" and "waiting_list" not in got:
        return Reply(tool_calls=(tool_call("waiting_list", {"site": site}),))
    if "plot_register" not in got:
        return Reply(tool_calls=(tool_call("plot_register", {"site": site}),))
    plot = got["plot_register"]["vacant"][0]
    if "soil_report" not in got:
        return Reply(tool_calls=(tool_call("soil_report", {"plot": plot["plot"]}), tool_call("tenancy_terms", {"size": plot["size"]})))
    return f"Facts gathered for plot {plot['plot']} at {site}."


class State(TypedDict, total=False):
    request: str
    route: str
    fees: list
    messages: Annotated[list, add_messages]
    facts: dict
    letter: str


def build(base_url: str):
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=base_url, api_key="sk-local", max_retries=0, temperature=0)
    desk_llm = llm.bind_tools(TOOLS)

    def classify(state: State) -> dict:
        reply = llm.invoke([SystemMessage("Classify the lettings request: route=transfer|new_plot; site=..."), HumanMessage(f"REQUEST: {state['request']}")])
        return {"route": str(reply.content)}

    def transfer_prep(state: State) -> dict:
        return {"fees": [{"item": "transfer admin", "amount": 10.0}]}

    def join_prep(state: State) -> dict:
        return {"fees": [{"item": "joining fee", "amount": 15.0}, {"item": "key deposit", "amount": 20.0}]}

    def desk(state: State) -> dict:
        msgs = state.get("messages") or [SystemMessage("You are the lettings desk: gather the facts for the offer."),
                                          HumanMessage(f"REQUEST: {state['request']}\nROUTE: {state['route']}")]
        reply = desk_llm.invoke(msgs)
        return {"messages": ([] if state.get("messages") else msgs) + [reply]}

    def collect(state: State) -> dict:
        got = {}
        for m in state["messages"]:
            if isinstance(m, ToolMessage):
                got[m.name] = json.loads(m.content)
        site = _site(state["request"])
        if "waiting_list" in got:
            first = min(got["waiting_list"]["entries"], key=lambda e: e["since"])
            to, member = first["name"], first["id"]
        else:
            to = state["request"].split("tenant ")[1].split(" (")[0]
            member = state["request"].split("(")[1].split(",")[0]
        plot = got["plot_register"]["vacant"][0]
        return {"facts": {"to": to, "member": member, "site": site, "plot": plot["plot"], "size": plot["size"],
                          "terms": got["tenancy_terms"]["terms"], "rent": got["tenancy_terms"]["rent"],
                          "soil_tested": got["soil_report"]["tested"], "fees": state["fees"]}}

    def draft_offer(state: State) -> dict:
        reply = llm.invoke([SystemMessage("Draft the offer letter from the facts."), HumanMessage("FACTS: " + json.dumps(state["facts"]))])
        return {"letter": str(reply.content)}

    def offer_check(state: State) -> dict:
        tested = date.fromisoformat(state["facts"]["soil_tested"])
        if (date(2026, 4, 2) - tested).days > 365:
            raise RegistryRefused(f"offer check: soil test for plot {state['facts']['plot']} is older than 12 months")
        return {}

    def send_offer(state: State) -> dict:
        f, req = state["facts"], state["request"]
        site = SITES[f["site"]]
        plot_no = state["letter"].split("plot ")[1].split(" ")[0]
        vacant = {p["plot"]: p for p in site["vacant"]}
        if plot_no not in vacant:
            raise RegistryRefused(f"society registry 404: no vacant plot {plot_no} at {f['site']}")
        if "Request TR-" in req and f["member"] != req.split("(")[1].split(",")[0]:
            tr = req.split("Request ")[1].rstrip(".")
            raise RegistryRefused(f"society registry 409: {tr} holds plot {plot_no} at {f['site']} for a transfer; offer to {f['member']} refused")
        if "Request TR-" not in req:
            top = min(site["waiting"], key=lambda e: e["since"])
            if f["member"] != top["id"]:
                raise RegistryRefused(f"society registry 409: {top['id']} has waited since {top['since']}; offer to {f['member']} out of turn")
        tariff = TARIFF[vacant[plot_no]["size"]]
        if f["terms"] != tariff["terms"]:
            raise RegistryRefused(f"society registry 422: plot {plot_no} is let on {tariff['terms']}, offer cites {f['terms']}")
        return {}

    g = StateGraph(State)
    for name, fn in [("classify", classify), ("transfer_prep", transfer_prep), ("join_prep", join_prep), ("desk", desk),
                     ("collect", collect), ("draft_offer", draft_offer), ("offer_check", offer_check), ("send_offer", send_offer)]:
        g.add_node(name, fn)
    g.add_node("tools", ToolNode(TOOLS))
    g.add_edge(START, "classify")
    g.add_conditional_edges("classify", lambda s: "transfer_prep" if "route=transfer" in s["route"] else "join_prep", ["transfer_prep", "join_prep"])
    g.add_edge("transfer_prep", "desk")
    g.add_edge("join_prep", "desk")
    g.add_conditional_edges("desk", tools_condition, {"tools": "tools", END: "collect"})
    g.add_edge("tools", "desk")
    g.add_edge("collect", "draft_offer")
    g.add_edge("draft_offer", "offer_check")
    g.add_edge("offer_check", "send_offer")
    g.add_edge("send_offer", END)
    return g.compile()


_CTX: dict = {}


def setup():
    server = FakeModelServer(policy).start()
    _CTX.update(server=server, graph=build(server.base_url))
    return server


def teardown(server) -> None:
    server.stop()
    _CTX.clear()


def record(key: str, path) -> None:
    text = REQUESTS[key]
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=text)
    try:
        _CTX["graph"].invoke({"request": text}, config={"callbacks": [tracer]})
    except (RegistryRefused, ValueError):
        pass
