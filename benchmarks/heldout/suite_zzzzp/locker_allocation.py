"""locker-dispatch: assigns a click-and-collect batch's parcels to pickup lockers and notifies customers (openai_agents)."""
from __future__ import annotations

import ast
import asyncio
import json

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from common import messages_of, server, system_of
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME, ROUTE = "locker-dispatch", "openai_agents"
DOMAIN = "click-and-collect: assigning a store's pickup batch to parcel lockers and sending pickup codes"
SHAPE = "Agents SDK: dispatcher looping over orders (locker search, reservation + memory write in parallel), a notifier sub-agent run as a tool with parallel lookups and sends, closing check tool"
SWITCH = None


def _on(case):
    return SWITCH == case


LOCKERS = [("L-01", "S"), ("L-02", "S"), ("L-03", "M"), ("L-04", "M"), ("L-05", "M"), ("L-06", "L"), ("L-07", "L"), ("L-08", "L")]
RANK = {"S": 0, "M": 1, "L": 2}
ORDERS = {
    "O-501": ("M", "CU-7001"), "O-502": ("S", "CU-7002"),
    "O-511": ("L", "CU-7011"), "O-512": ("M", "CU-7012"), "O-513": ("S", "CU-7013"),
    "O-521": ("S", "CU-7021"), "O-522": ("L", "CU-7022"),
    "O-531": ("M", "CU-7031"), "O-532": ("L", "CU-7032"), "O-533": ("S", "CU-7033"),
    "O-541": ("L", "CU-7041"), "O-542": ("S", "CU-7042"),
}
BATCHES = {"B-1": ["O-501", "O-502"], "B-2": ["O-511", "O-512", "O-513"], "B-3": ["O-521", "O-522"],
           "B-4": ["O-531", "O-532", "O-533"], "B-5": ["O-541", "O-542"]}
RUN = {"reserved": {}, "memory": {}, "sent": {}}

INPUTS = [{"task": f"assign lockers for batch {b} at store ST-9", "text": f"Assign lockers for pickup batch {b} at store ST-9 and notify the customers."}
          for b in BATCHES]

CASES = [
    {"id": "zzzzp_lk_notify_neighbour", "input": 0, "fault_kind": "subagent_wrong_entity",
     "root": ("notifier", 2, "agent"), "failure": ("close_batch", 1),
     "description": "the notifier sub-agent looks up O-501's customer for both orders, so O-502's pickup code goes to CU-7001 and close_batch finds CU-7002 without a code."},
    {"id": "zzzzp_lk_previous_order_arg", "input": 1, "fault_kind": "wrong_tool_args",
     "root": ("generation fake-model", 5, "llm"), "failure": ("reserve_locker", 2),
     "description": "the dispatcher model calls reserve_locker for O-512's locker with order_id O-511 (the order it just handled), and the reservation service refuses a second locker for O-511."},
    {"id": "zzzzp_lk_memory_short_id", "input": 2, "fault_kind": "bad_memory_write",
     "root": ("save_assignment", 2, "tool"), "failure": ("close_batch", 1),
     "description": "save_assignment stores O-522's locker as the door number '6' rather than L-06, and close_batch finds the assignment memory disagreeing with the reservation ledger."},
    {"id": "zzzzp_lk_batch_page", "input": 3, "fault_kind": "truncated_result",
     "root": ("get_batch", 1, "tool"), "failure": ("close_batch", 1),
     "description": "get_batch returns only the first page (2 of 3 orders) of batch B-4 with no next-page marker read, so O-533 is never assigned and close_batch refuses to close."},
    {"id": "zzzzp_lk_size_ignored", "input": 4, "fault_kind": "tool_ignores_argument",
     "root": ("find_lockers", 1, "tool"), "failure": ("close_batch", 1),
     "description": "find_lockers ignores its size argument and lists the free lockers smallest first, so O-541's large parcel is reserved into S locker L-01 and close_batch finds it does not fit."},
]

DISPATCH = "You are the locker dispatcher. Get the batch, then for each order find a locker of its size and reserve it (saving the assignment), then ask notifier to send the codes, then close the batch."
NOTIFY = "You are notifier. Look up each order's customer, then send each customer their pickup code."


def _parse(out):
    try:
        return json.loads(out)
    except ValueError:
        return ast.literal_eval(out)


def _calls(request):
    names, out = {}, []
    for m in messages_of(request):
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = (tc["function"]["name"], json.loads(tc["function"]["arguments"] or "{}"))
        if m.get("role") == "tool":
            name, args = names.get(m.get("tool_call_id"), (None, {}))
            out.append((name, args, _parse(m.get("content"))))
    return out


def brain(request):
    sysmsg, done = system_of(request), _calls(request)
    if sysmsg.startswith("You are notifier"):
        ask = json.loads([m["content"] for m in messages_of(request) if m.get("role") == "user"][-1])
        looked = [r for n, a, r in done if n == "lookup_customer"]
        if not looked:
            ids = [o["order_id"] for o in ask["orders"]]
            if _on("zzzzp_lk_notify_neighbour"):
                ids = [ids[0]] * len(ids)
            return Reply(tool_calls=tuple(tool_call("lookup_customer", {"order_id": i}) for i in ids))
        if not any(n == "send_pickup_code" for n, a, r in done):
            return Reply(tool_calls=tuple(tool_call("send_pickup_code", {"customer_id": c["customer_id"], "order_id": o["order_id"],
                                                                          "locker_id": o["locker_id"]})
                                          for c, o in zip(looked, ask["orders"])))
        return json.dumps({"sent": [{"customer_id": r["customer_id"], "order_id": r["order_id"]}
                                    for n, a, r in done if n == "send_pickup_code"]})
    batch = next((r for n, a, r in done if n == "get_batch"), None)
    if batch is None:
        bid = messages_of(request)[1]["content"].split("batch ")[1].split(" ")[0]
        return Reply(tool_calls=(tool_call("get_batch", {"batch_id": bid, "store": "ST-9"}),))
    reserved = [r for n, a, r in done if n == "reserve_locker"]
    for order in batch["orders"]:
        if any(r["order_id"] == order["order_id"] for r in reserved):
            continue
        found = [(a, r) for n, a, r in done if n == "find_lockers" and a["order_id"] == order["order_id"]]
        if not found:
            return Reply(tool_calls=(tool_call("find_lockers", {"store": "ST-9", "size": order["size"], "order_id": order["order_id"]}),))
        locker = found[0][1]["lockers"][0]["locker_id"]
        oid = order["order_id"]
        if _on("zzzzp_lk_previous_order_arg") and reserved:
            oid = reserved[-1]["order_id"]
        return Reply(tool_calls=(tool_call("reserve_locker", {"locker_id": locker, "order_id": oid}),
                                 tool_call("save_assignment", {"order_id": order["order_id"], "locker_id": locker})))
    if not any(n == "notifier" for n, a, r in done):
        orders = [{"order_id": r["order_id"], "locker_id": r["locker_id"]} for r in reserved]
        return Reply(tool_calls=(tool_call("notifier", {"input": json.dumps({"orders": orders})}),))
    if not any(n == "close_batch" for n, a, r in done):
        return Reply(tool_calls=(tool_call("close_batch", {"batch_id": batch["batch_id"]}),))
    return f"Batch {batch['batch_id']} closed."


@function_tool(failure_error_function=None)
def get_batch(batch_id: str, store: str) -> dict:
    """The orders of a pickup batch with their parcel sizes (paged)."""
    ids = BATCHES[batch_id]
    page = 2 if _on("zzzzp_lk_batch_page") else 25
    return {"batch_id": batch_id, "store": store, "orders": [{"order_id": o, "size": ORDERS[o][0]} for o in ids[:page]],
            "next_page": 2 if len(ids) > page else None}


@function_tool(failure_error_function=None)
def find_lockers(store: str, size: str, order_id: str) -> dict:
    """Free lockers at a store that fit a parcel size, smallest fit first."""
    free = [(l, s) for l, s in LOCKERS if l not in RUN["reserved"].values()]
    if not _on("zzzzp_lk_size_ignored"):
        free = [(l, s) for l, s in free if RANK[s] >= RANK[size]]
    free.sort(key=lambda ls: RANK[ls[1]])
    return {"store": store, "lockers": [{"locker_id": l, "size": s} for l, s in free[:3]]}


@function_tool(failure_error_function=None)
def reserve_locker(locker_id: str, order_id: str) -> dict:
    """Reserve a locker for an order."""
    if order_id in RUN["reserved"]:
        raise ValueError(f"{order_id} already holds locker {RUN['reserved'][order_id]}")
    RUN["reserved"][order_id] = locker_id
    return {"order_id": order_id, "locker_id": locker_id, "code": f"{sum(map(ord, order_id + locker_id)) % 9000 + 1000}"}


@function_tool(failure_error_function=None)
def save_assignment(order_id: str, locker_id: str) -> dict:
    """Remember which locker an order went to (the batch's assignment memory)."""
    value = locker_id.split("-")[1].lstrip("0") if _on("zzzzp_lk_memory_short_id") and order_id == "O-522" else locker_id
    RUN["memory"][order_id] = value
    return {"saved": order_id, "locker": value}


@function_tool(failure_error_function=None)
def lookup_customer(order_id: str) -> dict:
    """The customer who placed an order."""
    return {"order_id": order_id, "customer_id": ORDERS[order_id][1]}


@function_tool(failure_error_function=None)
def send_pickup_code(customer_id: str, order_id: str, locker_id: str) -> dict:
    """Text a customer their locker and pickup code."""
    RUN["sent"].setdefault(customer_id, []).append(order_id)
    return {"customer_id": customer_id, "order_id": order_id, "status": "delivered"}


@function_tool(failure_error_function=None)
def close_batch(batch_id: str) -> dict:
    """Check every order of the batch is reserved, fits, is remembered and notified, then close it."""
    size_of = dict(LOCKERS)
    for oid in BATCHES[batch_id]:
        if oid not in RUN["reserved"]:
            raise ValueError(f"batch {batch_id}: {oid} has no locker ({len(RUN['reserved'])} of {len(BATCHES[batch_id])} assigned)")
        locker = RUN["reserved"][oid]
        if RANK[size_of[locker]] < RANK[ORDERS[oid][0]]:
            raise ValueError(f"batch {batch_id}: {oid}'s {ORDERS[oid][0]} parcel does not fit locker {locker} ({size_of[locker]})")
        if RUN["memory"].get(oid) != locker:
            raise ValueError(f"batch {batch_id}: assignment memory has {oid} in {RUN['memory'].get(oid)!r}, ledger has {locker}")
        cust = ORDERS[oid][1]
        if oid not in RUN["sent"].get(cust, []):
            raise ValueError(f"batch {batch_id}: customer {cust} of {oid} has no pickup code")
    return {"batch_id": batch_id, "closed": True}


def agents(client):
    model = OpenAIChatCompletionsModel(model=server().model, openai_client=client)
    notifier = Agent(name="notifier", instructions=NOTIFY, model=model, tools=[lookup_customer, send_pickup_code])
    return Agent(name="locker_dispatcher", instructions=DISPATCH, model=model, tools=[
        get_batch, find_lockers, reserve_locker, save_assignment,
        notifier.as_tool(tool_name="notifier", tool_description="Sends pickup codes to the batch's customers."), close_batch])


async def _go(inp: dict) -> None:
    client = AsyncOpenAI(base_url=server().base_url, api_key="not-needed", max_retries=0)
    try:
        await Runner.run(agents(client), inp["text"], run_config=RunConfig(workflow_name=NAME), max_turns=20)
    finally:
        await client.close()  # closed inside its own event loop


def run(inp: dict, path: str) -> None:
    RUN["reserved"], RUN["memory"], RUN["sent"] = {}, {}, {}
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp["task"])])
    try:
        asyncio.run(_go(inp))
    finally:
        set_trace_processors([])
