"""A parachute rigger's reserve repacks: a LangGraph tool-calling loop (ChatOpenAI.bind_tools + ToolNode,
with a parallel pair of tool calls), the repack card kept in the graph's state, a pydantic schema check and
the rigger's log API at the end.

Shape: intake (ChatOpenAI extraction) -> parse_intake -> agent <-> tools (reserve_log; aad_service_dates +
seal_stock in parallel; canopy_spec) -> remember_card -> schedule_due -> validate_card -> file_card
(rigger_log).  About 25-28 steps.
"""

from __future__ import annotations

import json
import operator
import re
from datetime import date, timedelta
from typing import Annotated, Literal, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from pydantic import BaseModel
from zd_common import payload

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call


NAME = "rigger-repacks"
SHORT = "rigger"
ROUTE = "langgraph"
DOMAIN = "parachute rigger's repacks"
SHAPE = "StateGraph tool-calling loop with ToolNode (one parallel pair), state-held card, pydantic check, log API; 25-28 steps"

SPEC_FOR_MAIN_CANOPY = False
LOG_LAST_PAGE = False
SPEC_WEIGHT_IN_KG = False
INTAKE_DAY_FIRST_DATES = False
CARD_KEEPS_LAST_PACK_DATE = False
SWITCHES = [
    "SPEC_FOR_MAIN_CANOPY",
    "LOG_LAST_PAGE",
    "SPEC_WEIGHT_IN_KG",
    "INTAKE_DAY_FIRST_DATES",
    "CARD_KEEPS_LAST_PACK_DATE",
]

TODAY = "2026-06-14"
CANOPIES = {
    "PD 160R": {"canopy": "PD 160R", "type": "reserve", "max_exit_weight_lb": 220},
    "PD 143R": {"canopy": "PD 143R", "type": "reserve", "max_exit_weight_lb": 190},
    "Smart 150": {"canopy": "Smart 150", "type": "reserve", "max_exit_weight_lb": 225},
    "Optimum 176": {"canopy": "Optimum 176", "type": "reserve", "max_exit_weight_lb": 254},
    "Sabre3 170": {"canopy": "Sabre3 170", "type": "main", "max_exit_weight_lb": 245},
    "Pilot 168": {"canopy": "Pilot 168", "type": "main", "max_exit_weight_lb": 235},
    "Safire 3 149": {"canopy": "Safire 3 149", "type": "main", "max_exit_weight_lb": 210},
    "Crossfire 3 139": {"canopy": "Crossfire 3 139", "type": "main", "max_exit_weight_lb": 195},
}


def _log(serial, n, start_year):
    return [
        {"serial": serial, "repack": i + 1, "date": f"{start_year + i // 2}-{'03' if i % 2 else '09'}-12"}
        for i in range(n)
    ]


LOGS = {
    "R-5521": _log("R-5521", 9, 2022),
    "R-1180": _log("R-1180", 6, 2023),
    "R-7702": _log("R-7702", 11, 2021),
    "R-3094": _log("R-3094", 4, 2024),
    "R-6613": _log("R-6613", 7, 2022),
}
AADS = {
    "CY-2231": "2027-02-01",
    "CY-4410": "2028-05-01",
    "VG-0917": "2026-11-15",
    "CY-8832": "2027-09-30",
    "VG-2204": "2029-01-20",
}

INPUTS = [
    {
        "text": "Repack: container Javelin J3 JV-2231, main Sabre3 170, reserve PD 160R serial R-5521, AAD CY-2231, "
        "jumper K. Moss 86 kg, last repack 2026-03-12"
    },
    {
        "text": "Repack: container Vector V3 VV-1180, main Pilot 168, reserve Smart 150 serial R-1180, AAD CY-4410, "
        "jumper A. Patel 78 kg, last repack 2026-01-12"
    },
    {
        "text": "Repack: container Mirage G4 MG-7702, main Safire 3 149, reserve PD 143R serial R-7702, AAD VG-0917, "
        "jumper L. Brandt 70 kg, last repack 2026-03-12"
    },
    {
        "text": "Repack: container Infinity IN-3094, main Crossfire 3 139, reserve PD 143R serial R-3094, AAD CY-8832, "
        "jumper S. Okafor 82 kg, last repack 2025-11-20"
    },
    {
        "text": "Repack: container Javelin J4 JV-6613, main Pilot 168, reserve Optimum 176 serial R-6613, AAD VG-2204, "
        "jumper M. Rossi 95 kg, last repack 2026-02-28"
    },
]

CASES = [
    {
        "input": 1,
        "switch": "SPEC_FOR_MAIN_CANOPY",
        "fault_kind": "wrong_tool_args",
        "root": ("ChatOpenAI", 4, "llm"),
        "failure": ("validate_card", 1),
        "description": "The packing model asked canopy_spec for the main canopy, Pilot 168, instead of the reserve "
        "Smart 150.",
    },
    {
        "input": 0,
        "switch": "LOG_LAST_PAGE",
        "fault_kind": "truncated_result",
        "root": ("reserve_log", 1, "tool"),
        "failure": ("rigger_log", 1),
        "description": "The reserve log service returned only its last page of three entries, so the repack was "
        "numbered 4 instead of 10.",
    },
    {
        "input": 4,
        "switch": "SPEC_WEIGHT_IN_KG",
        "fault_kind": "unit_error",
        "root": ("canopy_spec", 1, "tool"),
        "failure": ("validate_card", 1),
        "description": "The canopy spec service gave the reserve's maximum exit weight in kilograms under the "
        "pounds field (115 for 254 lb).",
    },
    {
        "input": 2,
        "switch": "INTAKE_DAY_FIRST_DATES",
        "fault_kind": "format_drift",
        "root": ("ChatOpenAI", 1, "llm"),
        "failure": ("schedule_due", 1),
        "description": "The intake model wrote the last repack date day first (12/03/2026) instead of ISO.",
    },
    {
        "input": 3,
        "switch": "CARD_KEEPS_LAST_PACK_DATE",
        "fault_kind": "bad_memory_write",
        "root": ("remember_card", 1, "other"),
        "failure": ("validate_card", 1),
        "description": "The card written to the graph's state kept the previous repack date (2025-11-20) as the "
        "packing date instead of today's.",
    },
]


class Repack(TypedDict, total=False):
    request: str
    messages: Annotated[list[AnyMessage], add_messages]
    job: dict
    card: dict
    due: dict
    filed: Annotated[list, operator.add]


class RepackCard(BaseModel):
    container: str
    reserve_serial: str
    reserve_canopy: str
    reserve_type: Literal["reserve"]
    max_exit_weight_lb: float
    exit_weight_lb: float
    repack_number: int
    packed_on: date
    next_due: date
    aad_next_service: date
    seal: str


@tool
def reserve_log(serial: str) -> list:
    """Every logged repack of a reserve canopy, oldest first."""
    entries = LOGS[serial]
    return entries[-3:] if LOG_LAST_PAGE else list(entries)


@tool
def aad_service_dates(aad: str) -> dict:
    """Next maintenance date of an automatic activation device."""
    return {"aad": aad, "next_service": AADS[aad]}


@tool
def seal_stock(rigger: str) -> dict:
    """The rigger's seal and the thread batch on the bench."""
    return {"rigger": rigger, "seal": "RS-07 lead", "thread": "B-1142"}


@tool
def canopy_spec(canopy: str) -> dict:
    """Manufacturer's data for a canopy."""
    spec = dict(CANOPIES[canopy])
    if SPEC_WEIGHT_IN_KG:
        spec["max_exit_weight_lb"] = round(spec["max_exit_weight_lb"] * 0.4536)
    return spec


@tool
def rigger_log(card: dict) -> dict:
    """File a repack card with the national rigger log."""
    logged = LOGS[card["reserve_serial"]][-1]["repack"]
    if card["repack_number"] != logged + 1:
        raise ValueError(
            f"rigger log refused card for {card['reserve_serial']}: repack number "
            f"{card['repack_number']} does not follow logged repack {logged}"
        )
    return {"filed": True, "entry": f"{card['reserve_serial']}#{card['repack_number']}"}


TOOLS = [reserve_log, aad_service_dates, seal_stock, canopy_spec]


def _tool_results(messages):
    names = {}
    for m in messages:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
    out = {}
    for m in messages:
        if m.get("role") == "tool":
            out[names[m["tool_call_id"]]] = json.loads(m["content"])
    return out


def policy(request):
    messages = request.body.get("messages") or []
    first = next(m["content"] for m in messages if m["role"] == "user")
    if first.startswith("Extract"):
        m = re.search(
            r"container (.+?) ([A-Z]{2}-\d+), main (.+?), reserve (.+?) serial (R-\d+), AAD (\S+), "
            r"jumper (.+?) (\d+) kg, last repack (\d{4})-(\d\d)-(\d\d)",
            first,
        )
        y, mo, d = m.group(9), m.group(10), m.group(11)
        last = f"{d}/{mo}/{y}" if INTAKE_DAY_FIRST_DATES else f"{y}-{mo}-{d}"
        return json.dumps(
            {
                "container": f"{m.group(1)} {m.group(2)}",
                "main": m.group(3),
                "reserve": m.group(4),
                "reserve_serial": m.group(5),
                "aad": m.group(6),
                "jumper": m.group(7),
                "exit_weight_kg": int(m.group(8)),
                "last_repack": last,
            }
        )
    job = payload(first)
    got = _tool_results(messages)
    if "reserve_log" not in got:
        return Reply(tool_calls=(tool_call("reserve_log", {"serial": job["reserve_serial"]}),))
    if "aad_service_dates" not in got:
        return Reply(
            tool_calls=(
                tool_call("aad_service_dates", {"aad": job["aad"]}),
                tool_call("seal_stock", {"rigger": "R-07"}),
            )
        )
    if "canopy_spec" not in got:
        canopy = job["main"] if SPEC_FOR_MAIN_CANOPY else job["reserve"]
        return Reply(tool_calls=(tool_call("canopy_spec", {"canopy": canopy}),))
    spec, log = got["canopy_spec"], got["reserve_log"]
    return json.dumps(
        {
            "container": job["container"],
            "reserve_serial": job["reserve_serial"],
            "reserve_canopy": spec["canopy"],
            "reserve_type": spec["type"],
            "max_exit_weight_lb": spec["max_exit_weight_lb"],
            "exit_weight_lb": round(job["exit_weight_kg"] * 2.2046, 1),
            "repack_number": len(log) + 1,
            "aad_next_service": got["aad_service_dates"]["next_service"],
            "seal": got["seal_stock"]["seal"],
        }
    )


def build(llm):
    planner = llm.bind_tools(TOOLS)

    def intake(state: Repack) -> dict:
        reply = llm.invoke(
            [SystemMessage("Extract the repack job as JSON."), HumanMessage("Extract " + state["request"])]
        )
        return {"messages": [reply]}

    def parse_intake(state: Repack) -> dict:
        job = json.loads(state["messages"][-1].content)
        return {"job": job, "messages": [HumanMessage("Repack job " + json.dumps(job))]}

    def agent(state: Repack) -> dict:
        convo = [
            SystemMessage(
                "You are a senior rigger. Gather the reserve log, AAD dates, seal and the reserve "
                "canopy's spec, then answer the repack card as JSON."
            )
        ]
        convo += list(state["messages"][1:])
        return {"messages": [planner.invoke(convo)]}

    def more_tools(state: Repack) -> str:
        return "tools" if state["messages"][-1].tool_calls else "remember_card"

    def remember_card(state: Repack) -> dict:
        card = json.loads(state["messages"][-1].content)
        card["packed_on"] = state["job"]["last_repack"] if CARD_KEEPS_LAST_PACK_DATE else TODAY
        return {"card": card}

    def schedule_due(state: Repack) -> dict:
        last = date.fromisoformat(state["job"]["last_repack"])
        packed = date.fromisoformat(state["card"]["packed_on"])
        due = min(packed + timedelta(days=180), date.fromisoformat(state["card"]["aad_next_service"]))
        return {"due": {"previous": last.isoformat(), "next_due": due.isoformat()}}

    def validate_card(state: Repack) -> dict:
        card = RepackCard(**state["card"], next_due=state["due"]["next_due"])
        if card.reserve_type != "reserve":
            raise ValueError("card is not for a reserve")
        if card.exit_weight_lb > card.max_exit_weight_lb:
            raise ValueError(
                f"exit weight {card.exit_weight_lb} lb is over the {card.reserve_canopy} limit of "
                f"{card.max_exit_weight_lb} lb"
            )
        if card.next_due <= date.fromisoformat(TODAY):
            raise ValueError(f"next due {card.next_due} is not after today's repack {TODAY}")
        return {}

    def file_card(state: Repack) -> dict:
        return {"filed": [rigger_log.invoke({"card": state["card"]})]}

    g = StateGraph(Repack)
    for fn in (intake, parse_intake, agent, remember_card, schedule_due, validate_card, file_card):
        g.add_node(fn.__name__, fn)
    g.add_node("tools", ToolNode(TOOLS))
    g.add_edge(START, "intake")
    g.add_edge("intake", "parse_intake")
    g.add_edge("parse_intake", "agent")
    g.add_conditional_edges("agent", more_tools, ["tools", "remember_card"])
    g.add_edge("tools", "agent")
    g.add_edge("remember_card", "schedule_due")
    g.add_edge("schedule_due", "validate_card")
    g.add_edge("validate_card", "file_card")
    g.add_edge("file_card", END)
    return g.compile()


def record(inp, path, server):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["text"])
    try:
        build(llm).invoke({"request": inp["text"]}, config={"callbacks": [tracer]})
    except Exception:  # noqa: BLE001
        pass
