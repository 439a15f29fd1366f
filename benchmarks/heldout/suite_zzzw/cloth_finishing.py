"""Fuller's cloth finishing: the OpenAI Agents SDK, a clerk agent with parallel tool calls that hands off to a foreman."""
from __future__ import annotations

import ast
import asyncio
import json
import re

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME, ROUTE, EXT = "fulling-mill", "openai_agents", "jsonl"
DOMAIN = "fuller's cloth finishing"
SHAPE = "two agents: mill clerk (order book, parallel piece register calls, shrinkage table) hands off to finishing foreman (parallel stock bookings, parallel tenter frames, docket); or to the dyehouse (20-35 steps)"
SWITCH = None

ORDERS = {
    "W-311": {"clothier": "Hebden clothiers", "cloth": "broadcloth", "pieces": ["HB-1", "HB-2", "HB-3"]},
    "W-312": {"clothier": "Ripponden weavers", "cloth": "kersey", "pieces": ["RW-7", "RW-8"]},
    "W-313": {"clothier": "Heptonstall co-op", "cloth": "serge", "pieces": ["HC-2", "HC-4", "HC-5"]},
    "W-314": {"clothier": "Mytholm looms", "cloth": "broadcloth", "pieces": ["ML-1", "ML-2"]},
    "W-315": {"clothier": "Colden mill", "cloth": "kersey", "pieces": ["CM-3", "CM-4", "CM-6", "CM-9"]},
}
LOOM_YARDS = {"HB-1": 24.0, "HB-2": 26.0, "HB-3": 25.0, "RW-7": 18.0, "RW-8": 19.0, "HC-2": 30.0, "HC-4": 28.0,
              "HC-5": 29.0, "ML-1": 22.0, "ML-2": 23.0, "CM-3": 17.0, "CM-4": 18.0, "CM-6": 17.5, "CM-9": 16.5}
SHRINK = {"broadcloth": 0.18, "kersey": 0.12, "serge": 0.08}
SHRINK_1790 = {"broadcloth": 0.10, "kersey": 0.12, "serge": 0.08}

INPUTS = [
    {"key": "w311", "text": "Order W-311 from Hebden clothiers: full, teazle and shear, finish each piece to 20 yards, undyed."},
    {"key": "w312", "text": "Order W-312 from Ripponden weavers: full and teazle, finish each piece to 16 yards, undyed."},
    {"key": "w313", "text": "Order W-313 from Heptonstall co-op: full and shear, finish each piece to 27 yards, undyed."},
    {"key": "w314", "text": "Order W-314 from Mytholm looms: full, teazle and shear, finish each piece to 18.5 yards, undyed."},
    {"key": "w315", "text": "Order W-315 from Colden mill: full only, finish each piece to 15 yards, undyed."},
]

CASES = [
    {"id": "zzzw_cloth_01", "input": 0, "switch": "register_ells", "fault_kind": "unit_error",
     "root": {"name": "piece_register", "occurrence": 2}, "failure": {"name": "tenter_frame", "occurrence": 2},
     "description": "The piece register gives piece HB-2's loom length in ells rather than yards, so its fulled length is booked short."},
    {"id": "zzzw_cloth_02", "input": 3, "switch": "old_table", "fault_kind": "stale_data",
     "root": {"name": "shrinkage_table", "occurrence": 1}, "failure": {"name": "tenter_frame", "occurrence": 1},
     "description": "The shrinkage table serves the 1790 broadcloth figure of 10% instead of this season's 18%."},
    {"id": "zzzw_cloth_03", "input": 2, "switch": "tenter_dup", "fault_kind": "wrong_tool_args",
     "root": {"name": "generation fake-model", "occurrence": 6}, "failure": {"name": "issue_docket", "occurrence": 1},
     "description": "The foreman's model sends piece HC-2's id in both of the first two tenter frame calls, so HC-4 is never tentered."},
    {"id": "zzzw_cloth_04", "input": 1, "switch": "to_dyehouse", "fault_kind": "wrong_routing",
     "root": {"name": "generation fake-model", "occurrence": 4}, "failure": {"name": "dye_vat", "occurrence": 1},
     "description": "The clerk's model hands an undyed order to the dyehouse instead of the finishing foreman."},
    {"id": "zzzw_cloth_05", "input": 4, "switch": "book_page", "fault_kind": "truncated_result",
     "root": {"name": "order_book", "occurrence": 1}, "failure": {"name": "issue_docket", "occurrence": 1},
     "description": "The order book returns only the first page of pieces, three of W-315's four."},
]


@function_tool
def order_book(order_no: str) -> dict:
    """The clothier, cloth and pieces of an order."""
    o = dict(ORDERS[order_no])
    if SWITCH == "book_page":
        o["pieces"] = o["pieces"][:3]
    return o


@function_tool
def piece_register(piece_id: str) -> dict:
    """The loom length of a piece as it came from the weaver."""
    if SWITCH == "register_ells" and piece_id == "HB-2":
        return {"piece": piece_id, "loom_length": round(LOOM_YARDS[piece_id] * 36 / 45, 1)}
    return {"piece": piece_id, "loom_length": LOOM_YARDS[piece_id]}


@function_tool
def shrinkage_table(cloth: str) -> dict:
    """How much a cloth shrinks in the fulling stocks, as a fraction of its length."""
    table = SHRINK_1790 if SWITCH == "old_table" else SHRINK
    return {"cloth": cloth, "shrink": table[cloth]}


@function_tool
def book_stocks(piece_id: str, hours: float) -> dict:
    """Book a piece into the fulling stocks."""
    return {"piece": piece_id, "hours": hours, "stocks": "north" if hours > 9 else "south"}


@function_tool(failure_error_function=None)
def tenter_frame(piece_id: str, fulled_yards: float, target_yards: float) -> dict:
    """Stretch a fulled piece on the tenter to its finished length; the tenterer measures it first."""
    cloth = next(o["cloth"] for o in ORDERS.values() if piece_id in o["pieces"])
    measured = round(LOOM_YARDS[piece_id] * (1 - SHRINK[cloth]), 1)
    if abs(measured - fulled_yards) > 0.3:
        raise ValueError(f"piece {piece_id} measures {measured} yd off the stocks, the booking says {fulled_yards} yd")
    if target_yards > measured * 1.05:
        raise ValueError(f"piece {piece_id} cannot stretch from {measured} to {target_yards} yd")
    return {"piece": piece_id, "finished_yards": target_yards, "tenter": f"T{len(piece_id)}"}


@function_tool(failure_error_function=None)
def issue_docket(order_no: str, tentered: list[str]) -> dict:
    """The finishing docket; the counting house checks every piece of the order was finished."""
    expected = ORDERS[order_no]["pieces"]
    missing = [p for p in expected if p not in tentered]
    if missing:
        raise ValueError(f"docket for {order_no} lacks pieces {missing}: finished {sorted(set(tentered))}")
    return {"order": order_no, "pieces": len(expected), "docket": f"D-{order_no}"}


@function_tool(failure_error_function=None)
def dye_vat(piece_id: str, colour: str) -> dict:
    """Put a piece into a dye vat."""
    vats = {"woad": 1, "madder": 2, "weld": 3}
    if colour not in vats:
        raise ValueError(f"no vat holds {colour!r} for piece {piece_id}")
    return {"piece": piece_id, "vat": vats[colour]}


def _results(msgs):
    names = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = (tc["function"]["name"], json.loads(tc["function"]["arguments"] or "{}"))
    out = []
    for m in msgs:
        if m.get("role") == "tool":
            name, args = names[m["tool_call_id"]]
            try:
                val = ast.literal_eval(m["content"])
            except Exception:
                val = m["content"]
            out.append((name, args, val))
    return out


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    user = next(m["content"] for m in msgs if m["role"] == "user")
    order_no = re.search(r"Order (W-\d+)", user).group(1)
    target = float(re.search(r"to ([\d.]+) yards", user).group(1))
    res = _results(msgs)
    got = {n for n, _, _ in res}
    book = next((v for n, _, v in res if n == "order_book"), None)
    if system.startswith("You are the mill clerk"):
        if "order_book" not in got:
            return Reply(tool_calls=(tool_call("order_book", {"order_no": order_no}),))
        if "piece_register" not in got:
            return Reply(tool_calls=tuple(tool_call("piece_register", {"piece_id": p}) for p in book["pieces"]))
        if "shrinkage_table" not in got:
            return Reply(tool_calls=(tool_call("shrinkage_table", {"cloth": book["cloth"]}),))
        dest = "dyehouse" if SWITCH == "to_dyehouse" else "finishing_foreman"
        return Reply(tool_calls=(tool_call(f"transfer_to_{dest}", {}),))
    if system.startswith("You are the dyehouse"):
        if "dye_vat" not in got:
            colour = re.search(r"yards, (\w+)\.", user).group(1)
            return Reply(tool_calls=tuple(tool_call("dye_vat", {"piece_id": p, "colour": colour}) for p in book["pieces"]))
        return "Dyed."
    if system.startswith("You are the finishing foreman"):
        shrink = next(v["shrink"] for n, _, v in res if n == "shrinkage_table")
        lengths = {v["piece"]: v["loom_length"] for n, _, v in res if n == "piece_register"}
        fulled = {p: round(y * (1 - shrink), 1) for p, y in lengths.items()}
        if "book_stocks" not in got:
            return Reply(tool_calls=tuple(tool_call("book_stocks", {"piece_id": p, "hours": round(y / 2.5, 1)})
                                          for p, y in lengths.items()))
        if "tenter_frame" not in got:
            ids = list(fulled)
            if SWITCH == "tenter_dup":
                ids[1] = ids[0]
            return Reply(tool_calls=tuple(tool_call("tenter_frame", {"piece_id": p, "fulled_yards": fulled[p],
                                                                     "target_yards": target}) for p in ids))
        if "issue_docket" not in got:
            done = [v["piece"] for n, _, v in res if n == "tenter_frame"]
            return Reply(tool_calls=(tool_call("issue_docket", {"order_no": order_no, "tentered": done}),))
        return f"Order {order_no} finished to {target} yards a piece."
    return "Unknown desk."


async def _go(client, agent, text):
    try:
        await Runner.run(agent, text, run_config=RunConfig(workflow_name=NAME), max_turns=12)
    finally:
        await client.close()


def record(server, inp, path):
    server.use(policy)
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    foreman = Agent(name="finishing_foreman", model=model, tools=[book_stocks, tenter_frame, issue_docket],
                    instructions="You are the finishing foreman. Book the stocks, tenter every piece, issue the docket.")
    dyer = Agent(name="dyehouse", model=model, tools=[dye_vat],
                 instructions="You are the dyehouse. Dye each piece the colour of the order.")
    clerk = Agent(name="mill_clerk", model=model, tools=[order_book, piece_register, shrinkage_table],
                  handoffs=[foreman, dyer],
                  instructions="You are the mill clerk. Look up the order, its pieces and shrinkage, then pass it on.")
    proc = TrajdebugProcessor(path=str(path), name=NAME, task=f"finishing: {inp['text']}")
    set_trace_processors([proc])
    try:
        asyncio.run(_go(client, clerk, inp["text"]))
    except Exception:
        pass
    finally:
        set_trace_processors([])
