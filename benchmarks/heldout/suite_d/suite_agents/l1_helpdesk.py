"""helpdesk-triage: an IT service-desk agent as a hand-built LangGraph StateGraph.  It loads the ticket
thread (with the requester's device on file), a model triages it (category, asset tag, summary), the
graph routes to the hardware, network or access desk, each a model-and-tools loop (CMDB, warranty, RMA,
VPN, MFA), and the ticket is closed.  ChatOpenAI against a fake model server; LangChain tracer."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import Annotated, Any

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph_route import chat_model, record_graph
from suite_common import FAULT, Agent, Case, Loc, called_tools, messages_of, results_of, system_text, text_of
from typing_extensions import TypedDict

from trajdebug.testing import FakeModelServer, Reply, tool_call


NAME = "helpdesk-triage"
MODEL = "gpt-4o-mini"

CMDB = {
    "LT-40817": {"model": "ThinkPad X1 Carbon G11", "serial": "PF-4A7KD2", "owner": "k.nakamura", "status": "in use"},
    "LT-40871": {"model": "ThinkPad T14 G4", "serial": "PF-4B1QX9", "owner": "p.ramos", "status": "in use"},
    "LT-52290": {"model": "Dell Latitude 7440", "serial": "DL-3M1ZA8", "owner": "m.osei", "status": "in use"},
    "LT-47702": {"model": "ThinkPad X1 Carbon G10", "serial": "PF-3X9WE1", "owner": "j.alvarez", "status": "in use"},
    "LT-31120": {"model": "ThinkPad T480", "serial": "PF-1C2RT5", "owner": "j.alvarez", "status": "retired"},
    "LT-48810": {"model": "MacBook Pro 14 M3", "serial": "C02ZK3LQ", "owner": "a.becker", "status": "in use"},
    "LT-50133": {"model": "Dell Latitude 5440", "serial": "DL-2H7PL4", "owner": "s.ivanova", "status": "in use"},
    "LT-45521": {"model": "ThinkPad T14s G4", "serial": "PF-4C8MN3", "owner": "d.okoro", "status": "in use"},
}
# the CMDB read cache: LT-52290's display assembly and mainboard were swapped last week (new service tag)
CMDB_CACHE = {"LT-52290": {**CMDB["LT-52290"], "serial": "DL-2K9QX1"}}

TICKETS = {
    "INC-3107": ("k.nakamura", "VPN keeps dropping every ten minutes on my laptop since Monday's update. Asset tag LT-40817."),
    "INC-3122": ("k.nakamura", "Several keys on my laptop LT-40817 are dead (E, R and T). Spilled nothing, they just stopped."),
    "INC-3140": ("m.osei", "The screen of laptop LT-52290 flickers and then goes black, even on the docking station."),
    "INC-3155": ("j.alvarez", "My laptop's battery is swelling and the trackpad is lifting. Please replace it urgently."),
    "INC-3201": ("a.becker", "Since this morning the VPN disconnects whenever I join a video call. Laptop LT-48810."),
    "INC-3202": ("s.ivanova", "I got a new phone and can't approve MFA prompts anymore, please reset my MFA."),
    "INC-3203": ("d.okoro", "The fan on my laptop is grinding loudly and the laptop shuts down when hot."),
    "INC-3204": ("k.nakamura", "VPN won't reconnect after sleep, I have to reboot each time. Laptop LT-40817."),
    "INC-3205": ("s.ivanova", "Laptop LT-50133 does not charge anymore: the charging light stays off with two different chargers."),
}
DEVICE_ON_FILE = {"k.nakamura": "LT-40817", "m.osei": "LT-52290", "j.alvarez": "LT-47702", "a.becker": "LT-48810",
                  "s.ivanova": "LT-50133", "d.okoro": "LT-45521"}
PAST_TICKETS = {"j.alvarez": ["INC-2231 (closed 2023-11-02): battery replaced on LT-31120; device later retired."],
                "k.nakamura": ["INC-2987 (closed 2025-01-14): VPN profile re-pushed to LT-40817."]}
HARDWARE_WORDS = ("battery", "screen", "keys", "keyboard", "fan", "charge", "trackpad")


class ServiceRequestRefused(RuntimeError):
    pass


# -- tools ------------------------------------------------------------------------------------------


@tool
def lookup_asset(asset_tag: str) -> str:
    """Look an asset up in the CMDB: model, serial (service tag), owner and status."""
    record = CMDB_CACHE[asset_tag] if FAULT.on("cmdb_cache") and asset_tag in CMDB_CACHE else CMDB[asset_tag]
    return json.dumps({"asset_tag": asset_tag, **record})


@tool
def check_warranty(serial: str) -> str:
    """Warranty status of a device by serial number."""
    return json.dumps({"serial": serial, "warranty_until": "2026-09-30", "status": "active"})


@tool
def create_rma(asset_tag: str, serial: str, requester: str, fault_description: str) -> str:
    """Open a hardware repair (RMA) with the vendor; the vendor runs remote diagnostics first."""
    asset = CMDB[asset_tag]
    if asset["status"] == "retired":
        raise ServiceRequestRefused("Vendor portal refused the RMA: the device is no longer in service")
    if asset["owner"] != requester:
        raise ServiceRequestRefused("Vendor portal refused the RMA: requester and registered user differ")
    if serial != asset["serial"]:
        raise ServiceRequestRefused("Vendor portal refused the RMA: service tag unknown for this device")
    if not any(w in fault_description.lower() for w in HARDWARE_WORDS):
        raise ServiceRequestRefused("Vendor portal refused the RMA: remote diagnostics passed, no hardware fault found")
    return json.dumps({"rma": f"RMA-{serial[-4:]}", "courier": "next business day"})


@tool
def vpn_sessions(user: str) -> str:
    """Recent VPN sessions of a user with disconnect reasons."""
    return json.dumps({"user": user, "disconnects_7d": 23, "top_reason": "DPD timeout", "client": "GlobalConnect 6.1.2"})


@tool
def push_vpn_profile(asset_tag: str, profile: str) -> str:
    """Push a VPN client profile to a managed device."""
    return json.dumps({"asset_tag": asset_tag, "profile": profile, "status": "queued"})


@tool
def reset_mfa(user: str) -> str:
    """Reset a user's MFA enrolment so they can register a new device."""
    return json.dumps({"user": user, "mfa": "reset", "enrolment_link_sent": True})


DESK_TOOLS = {"hardware": [lookup_asset, check_warranty, create_rma],
              "network": [lookup_asset, vpn_sessions, push_vpn_profile],
              "access": [reset_mfa]}


# -- the fake model -----------------------------------------------------------------------------------


def brain(request: Any) -> Any:
    msgs = messages_of(request)
    system = system_text(msgs)
    user = [text_of(m) for m in msgs if m.get("role") == "user"][-1]
    if "You triage IT tickets" in system:
        ticket = user.split("Latest message:", 1)[1]
        low = ticket.lower()
        if "mfa" in low or "password" in low:
            category = "access"
        elif "vpn" in low and not FAULT.on("vpn_as_hardware"):
            category = "network"
        else:
            category = "hardware"
        tags = re.findall(r"LT-\d{5}", ticket) or re.findall(r"LT-\d{5}", user)
        tag = tags[-1] if tags else None
        if FAULT.on("tag_transposed") and tag == "LT-40817":
            tag = "LT-40871"
        summary = ticket.strip().split(". ")[0].rstrip(".")
        return json.dumps({"category": category, "asset_tag": tag, "summary": summary,
                           "urgency": "high" if "urgent" in low else "normal"})
    calls = called_tools(msgs)
    done = {n for n, _a, r in calls if r is not None}
    info = dict(re.findall(r"(\w+): (.+)", user))
    tag, requester, summary = info.get("Asset"), info.get("Requester"), info.get("Summary", "")
    if "hardware desk" in system:
        if "lookup_asset" not in done:
            return Reply(tool_calls=(tool_call("lookup_asset", {"asset_tag": tag}),))
        asset = results_of(msgs, "lookup_asset")[-1]
        if "check_warranty" not in done:
            return Reply(tool_calls=(tool_call("check_warranty", {"serial": asset["serial"]}),))
        if "create_rma" not in done:
            return Reply(tool_calls=(tool_call("create_rma", {"asset_tag": tag, "serial": asset["serial"],
                                                              "requester": requester, "fault_description": summary}),))
        rma = results_of(msgs, "create_rma")[-1]
        return f"Repair {rma['rma']} opened for {tag}; the courier collects it {rma['courier']}."
    if "network desk" in system:
        if "lookup_asset" not in done:
            return Reply(tool_calls=(tool_call("lookup_asset", {"asset_tag": tag}),))
        if "vpn_sessions" not in done:
            return Reply(tool_calls=(tool_call("vpn_sessions", {"user": requester}),))
        if "push_vpn_profile" not in done:
            return Reply(tool_calls=(tool_call("push_vpn_profile", {"asset_tag": tag, "profile": "always-on-dpd60"}),))
        return f"A VPN profile with a longer keep-alive was pushed to {tag}; please reconnect after it installs."
    if "access desk" in system:
        if "reset_mfa" not in done:
            return Reply(tool_calls=(tool_call("reset_mfa", {"user": requester}),))
        return "Your MFA was reset; follow the enrolment link we e-mailed to register the new phone."
    return "Please describe the problem."


# -- the graph ---------------------------------------------------------------------------------------


class TicketState(TypedDict, total=False):
    ticket_id: str
    requester: str
    thread: list[str]
    triage_raw: str
    triage: dict[str, Any]
    messages: Annotated[list[AnyMessage], add_messages]
    resolution: str


def build(base_url: str) -> Any:
    llm = chat_model(base_url, MODEL)

    def load_thread(state: TicketState) -> dict[str, Any]:
        requester, text = TICKETS[state["ticket_id"]]
        thread = [f"Requester: {requester}", f"Device on file: {DEVICE_ON_FILE[requester]}"]
        if FAULT.on("past_tickets_in_thread"):
            thread += [f"Earlier ticket: {t}" for t in PAST_TICKETS.get(requester, [])]
        thread.append(f"Latest message: {text}")
        return {"requester": requester, "thread": thread}

    def triage(state: TicketState) -> dict[str, Any]:
        ai = llm.invoke([SystemMessage("You triage IT tickets. Return JSON with category (hardware, network, access), "
                                       "asset_tag, summary and urgency."), HumanMessage("\n".join(state["thread"]))])
        return {"triage_raw": ai.content}

    def parse_triage(state: TicketState) -> dict[str, Any]:
        return {"triage": json.loads(state["triage_raw"])}

    def route(state: TicketState) -> str:
        return f"{state['triage']['category']}_desk"

    def desk(category: str):
        bound = llm.bind_tools(DESK_TOOLS[category])

        def node(state: TicketState) -> dict[str, Any]:
            msgs = list(state.get("messages") or [])
            new: list[Any] = []
            if not msgs:
                t = state["triage"]
                new = [SystemMessage(f"You are the {category} desk of the IT service desk. Resolve the ticket with "
                                     "your tools, then tell the requester what happens next."),
                       HumanMessage(f"Ticket: {state['ticket_id']}\nRequester: {state['requester']}\n"
                                    f"Asset: {t['asset_tag']}\nSummary: {t['summary']}\nUrgency: {t['urgency']}")]
            ai = bound.invoke(msgs + new)
            return {"messages": [*new, ai]}

        node.__name__ = f"{category}_desk"
        return node

    def after_desk(state: TicketState) -> str:
        last = state["messages"][-1]
        return "tools" if getattr(last, "tool_calls", None) else "close_ticket"

    def close_ticket(state: TicketState) -> dict[str, Any]:
        return {"resolution": state["messages"][-1].content}

    g = StateGraph(TicketState)
    g.add_node("load_thread", load_thread)
    g.add_node("triage", triage)
    g.add_node("parse_triage", parse_triage)
    g.add_node("close_ticket", close_ticket)
    g.add_edge(START, "load_thread")
    g.add_edge("load_thread", "triage")
    g.add_edge("triage", "parse_triage")
    g.add_conditional_edges("parse_triage", route, {f"{c}_desk": f"{c}_desk" for c in DESK_TOOLS})
    for c, tools in DESK_TOOLS.items():
        g.add_node(f"{c}_desk", desk(c))
        g.add_node(f"{c}_tools", ToolNode(tools, handle_tool_errors=False))
        g.add_conditional_edges(f"{c}_desk", after_desk, {"tools": f"{c}_tools", "close_ticket": "close_ticket"})
        g.add_edge(f"{c}_tools", f"{c}_desk")
    g.add_edge("close_ticket", END)
    return g.compile()


@contextmanager
def session():
    with FakeModelServer(brain, model=MODEL) as server:
        graph = build(server.base_url)

        def record(ticket_id: str, path: str) -> BaseException | None:
            return record_graph(graph, {"ticket_id": ticket_id}, path, NAME, f"resolve {ticket_id}",
                                (ServiceRequestRefused,))

        yield record


AGENT = Agent(
    name=NAME,
    route="langgraph",
    domain="IT helpdesk",
    summary="load the ticket thread, a model triages it, parse, route to the hardware/network/access desk "
    "(model + ToolNode loop: CMDB, warranty, RMA, VPN, MFA), close the ticket",
    features=["conditional routing", "tool loops"],
    passing=["INC-3201", "INC-3202", "INC-3203", "INC-3204", "INC-3205"],
    session=session,
    cases=[
        Case(
            "d-help-vpn-hardware",
            "INC-3107",
            "vpn_as_hardware",
            "wrong_routing",
            "The triage model files a VPN problem as a hardware fault; the graph routes it to the hardware desk, "
            "which opens an RMA that the vendor refuses after remote diagnostics pass.",
            [Loc("ChatOpenAI", 1, "hardware"), Loc("parse_triage"), Loc("ChatOpenAI", 4, "create_rma"),
             Loc("create_rma")],
        ),
        Case(
            "d-help-tag-transposed",
            "INC-3122",
            "tag_transposed",
            "wrong_tool_args",
            "The triage model transposes the asset tag (LT-40817 read as LT-40871, a colleague's laptop); the "
            "hardware desk looks up and files the repair for that laptop and the vendor refuses it.",
            [Loc("ChatOpenAI", 1, "LT-40871"), Loc("parse_triage"), Loc("ChatOpenAI", 2, "LT-40871"),
             Loc("lookup_asset"), Loc("ChatOpenAI", 4), Loc("create_rma")],
        ),
        Case(
            "d-help-cmdb-cache",
            "INC-3140",
            "cmdb_cache",
            "stale_data",
            "The CMDB lookup answers from a read cache that predates last week's mainboard swap, so the laptop's "
            "old service tag is used for the repair and the vendor does not recognise it.",
            [Loc("lookup_asset", 1, "DL-2K9QX1"), Loc("ChatOpenAI", 4, "DL-2K9QX1"), Loc("create_rma")],
        ),
        Case(
            "d-help-old-ticket",
            "INC-3155",
            "past_tickets_in_thread",
            "context_pollution",
            "Loading the thread also pulls in the requester's closed tickets; one mentions a retired laptop "
            "(LT-31120), the triage model takes that tag, and the repair is filed for a device no longer in service.",
            [Loc("load_thread", 1, "LT-31120"), Loc("ChatOpenAI", 1, "LT-31120"), Loc("parse_triage"),
             Loc("ChatOpenAI", 2), Loc("lookup_asset"), Loc("ChatOpenAI", 4), Loc("create_rma")],
        ),
    ],
)
