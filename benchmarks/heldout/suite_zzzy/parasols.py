"""Parasol maker's commissions: OpenAI Agents SDK (Chat Completions), a desk agent that hands off to a
frame workshop agent; tools called one per turn and two in parallel; the last tool files the commission."""
from __future__ import annotations

import ast
import asyncio
import json
import math

from agents import (Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client,
                    set_tracing_disabled)
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "parasol-commissions"
ROUTE = "openai_agents"
DOMAIN = "parasol maker's commissions"
SHAPE = ("Agents SDK: desk agent (commission lookup) hands off to frame workshop agent (canopy geometry, "
         "two parallel stock tools, rib reservation, filing tool that checks the commission); 24 spans")
SWITCH = None

COMMISSIONS = {
    "PC-118": {"client": "Hotel Miramar", "diameter_cm": 180, "ribs": 12, "fabric": "ivory cotton drill", "frame": "ash"},
    "PC-121": {"client": "Mme Duval", "diameter_cm": 90, "ribs": 8, "fabric": "black silk faille", "frame": "bamboo"},
    "PC-124": {"client": "Theatre Royal props", "diameter_cm": 110, "ribs": 16, "fabric": "red silk moire", "frame": "malacca"},
    "PC-127": {"client": "Lena Sato", "diameter_cm": 85, "ribs": 8, "fabric": "white linen", "frame": "bamboo"},
    "PC-130": {"client": "Cafe Lorca", "diameter_cm": 240, "ribs": 12, "fabric": "olive canvas", "frame": "ash"},
}
EARLIER = {"PC-124": {"ref": "PC-069", "client": "Theatre Royal props", "diameter_cm": 150, "ribs": 16,
                      "fabric": "red silk moire", "frame": "malacca"}}
BOLTS = {
    "ivory cotton drill": [("D-11", 2.4), ("D-12", 6.0), ("D-14", 9.5)],
    "black silk faille": [("F-02", 0.8), ("F-05", 2.2)],
    "red silk moire": [("M-31", 0.4), ("M-33", 0.5), ("M-34", 0.7), ("M-35", 0.6), ("M-37", 3.0)],
    "white linen": [("L-07", 1.9)],
    "olive canvas": [("C-20", 4.0), ("C-22", 12.0)],
    "white linen union": [("LU-03", 5.0)],
}
RIBS = {"ash": 40, "bamboo": 60, "malacca": 24}
RIB_LEDGER: dict = {}

INPUTS = [{"ref": ref, "message": f"Please prepare commission {ref} for the workshop."} for ref in COMMISSIONS]

CASES = [
    {"id": "zzzy-parasols-1", "input": 2, "switch": "history", "fault_kind": "context_pollution",
     "root": ("get_commission", 1), "failure": ("file_commission", 1),
     "description": "The commission lookup also returns the client's earlier 150 cm commission, and the canopy is sized from that record."},
    {"id": "zzzy-parasols-2", "input": 2, "switch": "page", "fault_kind": "truncated_result",
     "root": ("fabric_stock", 1), "failure": ("file_commission", 1),
     "description": "The fabric stock listing stops after the first page of bolts, so the only bolt long enough for the canopy is missing."},
    {"id": "zzzy-parasols-3", "input": 4, "switch": "inches", "fault_kind": "unit_error",
     "root": ("canopy_geometry", 1), "failure": ("file_commission", 1),
     "description": "The canopy geometry tool gives the rib length in inches while everything downstream reads centimetres."},
    {"id": "zzzy-parasols-4", "input": 0, "switch": "supplier", "fault_kind": "swallowed_error",
     "root": ("reserve_ribs", 1), "failure": ("file_commission", 1),
     "description": "The rib reservation swallows the supplier's timeout and reports zero ribs reserved as a normal answer."},
    {"id": "zzzy-parasols-5", "input": 3, "switch": "search", "fault_kind": "wrong_retrieval",
     "root": ("fabric_stock", 1), "failure": ("file_commission", 1),
     "description": "The fabric stock search matches white linen union for white linen by a loose name match and returns its bolts."},
]


@function_tool
def get_commission(ref: str) -> dict:
    """The commission record for a reference."""
    rec = dict(COMMISSIONS[ref], ref=ref)
    if SWITCH == "history" and ref in EARLIER:
        return {"records": [EARLIER[ref], rec]}
    return {"records": [rec]}


@function_tool
def canopy_geometry(diameter_cm: int, ribs: int) -> dict:
    """Rib length and cloth area for a canopy."""
    rib_cm = round(diameter_cm / 2 * 1.08, 1)
    area = round(math.pi * (diameter_cm / 200) ** 2 * 1.15, 2)
    if SWITCH == "inches":
        rib_cm = round(rib_cm / 2.54, 1)
    return {"rib_length_cm": rib_cm, "cloth_m2": area, "panels": ribs}


@function_tool
def fabric_stock(fabric: str) -> dict:
    """Bolts of a fabric in the store, with metres left on each."""
    if SWITCH == "search":
        name = max((k for k in BOLTS if fabric in k), key=len)
    else:
        name = fabric
    bolts = BOLTS[name]
    if SWITCH == "page":
        bolts = bolts[:4]
    return {"fabric": name, "bolts": [{"bolt": b, "metres": m} for b, m in bolts]}


@function_tool
def rib_stock(frame: str) -> dict:
    """Rib blanks in store for a frame wood."""
    return {"frame": frame, "blanks": RIBS[frame]}


@function_tool
def reserve_ribs(frame: str, count: int, length_cm: float) -> dict:
    """Reserve rib blanks cut to length with the rib supplier."""
    try:
        if SWITCH == "supplier":
            raise TimeoutError("rib supplier did not answer in 10 s")
        RIB_LEDGER[frame] = count
        return {"frame": frame, "reserved": count, "length_cm": length_cm}
    except TimeoutError:
        return {"frame": frame, "reserved": 0, "length_cm": length_cm}


def _file(ref: str, fabric: str, bolt: str, metres_needed: float, ribs_reserved: int, rib_length_cm: float) -> dict:
    c = COMMISSIONS[ref]
    if fabric != c["fabric"]:
        raise ValueError(f"{ref}: cut sheet says {fabric}, the client ordered {c['fabric']}")
    metres = dict(sum(BOLTS.values(), []))
    if metres.get(bolt, 0) < metres_needed:
        raise ValueError(f"{ref}: bolt {bolt} holds {metres.get(bolt, 0)} m, the canopy needs {metres_needed} m")
    if ribs_reserved < c["ribs"]:
        raise ValueError(f"{ref}: {ribs_reserved} ribs reserved for a {c['ribs']}-rib frame")
    expect = round(c["diameter_cm"] / 2 * 1.08, 1)
    if abs(rib_length_cm - expect) > 1:
        raise ValueError(f"{ref}: ribs cut to {rib_length_cm} cm for a {c['diameter_cm']} cm canopy")
    return {"ref": ref, "filed": True, "bolt": bolt}


file_commission = function_tool(_file, name_override="file_commission",
                                description_override="File the commission with the workshop; checks it first.",
                                failure_error_function=None)


def _outputs(messages):
    out = {}
    calls = {}
    for m in messages:
        for tc in m.get("tool_calls") or []:
            calls[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            name = calls.get(m.get("tool_call_id"))
            try:
                out[name] = ast.literal_eval(m["content"])
            except Exception:
                out[name] = m["content"]
    return out


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
    got = _outputs(msgs)
    if system.startswith("You run the commission desk"):
        if "get_commission" not in got:
            user = next(m["content"] for m in msgs if m["role"] == "user")
            ref = user.split("commission ")[1].split()[0]
            return Reply(tool_calls=(tool_call("get_commission", {"ref": ref}),))
        return Reply(tool_calls=(tool_call("transfer_to_frame_workshop", {}),))
    rec = dict(got["get_commission"]["records"][0])
    user = next(m["content"] for m in msgs if m["role"] == "user")
    rec["ref"] = user.split("commission ")[1].split()[0]
    if "canopy_geometry" not in got:
        return Reply(tool_calls=(tool_call("canopy_geometry", {"diameter_cm": rec["diameter_cm"], "ribs": rec["ribs"]}),))
    geo = got["canopy_geometry"]
    if "fabric_stock" not in got:
        return Reply(tool_calls=(tool_call("fabric_stock", {"fabric": rec["fabric"]}),
                                 tool_call("rib_stock", {"frame": rec["frame"]})))
    if "reserve_ribs" not in got:
        return Reply(tool_calls=(tool_call("reserve_ribs", {"frame": rec["frame"], "count": rec["ribs"],
                                                            "length_cm": geo["rib_length_cm"]}),))
    if "file_commission" not in got:
        need = round(geo["cloth_m2"] / 1.4 * 1.1, 2)  # 140 cm cloth width, 10% seam allowance
        stock = got["fabric_stock"]
        bolt = max(stock["bolts"], key=lambda b: b["metres"])
        return Reply(tool_calls=(tool_call("file_commission", {
            "ref": rec["ref"], "fabric": stock["fabric"], "bolt": bolt["bolt"], "metres_needed": need,
            "ribs_reserved": got["reserve_ribs"]["reserved"], "rib_length_cm": geo["rib_length_cm"]}),))
    return f"Commission {rec['ref']} filed: bolt {got['file_commission']['bolt']}."


async def _run(agent, inp, server):
    client = AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0)
    set_default_openai_client(client, use_for_tracing=False)
    try:
        return await Runner.run(agent, inp["message"], run_config=RunConfig(workflow_name=NAME))
    finally:
        await client.close()


def run_one(inp, server, path):
    set_tracing_disabled(False)
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, task=f"commission {inp['ref']}")])
    workshop = Agent(name="frame_workshop", model=server.model,
                     instructions="You are the frame workshop. Size the canopy, check stock, reserve ribs, file the commission.",
                     tools=[canopy_geometry, fabric_stock, rib_stock, reserve_ribs, file_commission])
    desk = Agent(name="commission_desk", model=server.model,
                 instructions="You run the commission desk. Look the commission up, then hand it to the frame workshop.",
                 tools=[get_commission], handoffs=[workshop])
    try:
        asyncio.run(_run(desk, inp, server))
    finally:
        set_trace_processors([])
        RIB_LEDGER.clear()
