"""Brass instrument rental (OpenAI Agents SDK, a triage agent handing off to two desks).

The rental desk agent reads a rental request and hands it off to the school programme desk or the private
rentals desk. The desk opens a work order from the request, checks the account, checks stock per line,
reserves serials, notes each reservation in the shop's reservation ledger (the run context), fetches the
rate card and creates the rental contract through the shop system, which validates it against the purchase
order register and the stock book.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from agents import Agent, AgentsException, OpenAIChatCompletionsModel, RunConfig, RunContextWrapper, Runner, \
    function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from pydantic import BaseModel

from trajdebug.integrations.openai_agents import TrajdebugProcessor

from .common import Case, tool_history
from .kit import active

AGENT = "brass-rental-desk"
ROUTE = "openai_agents"
DOMAIN = "brass instrument rental"
SHAPE = "Agents SDK: triage agent with hand-offs to two desks; desk runs a work order, stock, reserve, ledger, rates, contract"

STOCK = {  # serial -> (instrument, size)
    "TP-1101": ("trumpet", "standard"), "TP-1102": ("trumpet", "standard"), "TP-1103": ("trumpet", "standard"),
    "TP-1104": ("trumpet", "standard"), "TB-2210": ("trombone", "tenor"), "TB-2211": ("trombone", "tenor"),
    "TB-2290": ("trombone", "bass"), "TU-3307": ("tuba", "3/4"), "TU-3308": ("tuba", "3/4"),
    "TU-4402": ("tuba", "4/4"), "HN-5501": ("french horn", "single"), "HN-5502": ("french horn", "double"),
    "EU-6601": ("euphonium", "standard"), "CN-7701": ("cornet", "standard"), "CN-7702": ("cornet", "standard"),
}
RATES = {"trumpet": 19.0, "trombone": 22.0, "tuba": 48.0, "french horn": 39.0, "euphonium": 35.0, "cornet": 17.0}
ORDERS = {
    "PO-HC-8841": ("Hillcrest Middle School", "SCH-0192", 3, [("trumpet", "standard", 3), ("trombone", "tenor", 2),
                                                              ("tuba", "3/4", 1)]),
    "PO-RV-1207": ("Riverside Academy", "SCH-0417", 6, [("trumpet", "standard", 2), ("tuba", "3/4", 2),
                                                       ("french horn", "double", 1)]),
    "PO-OK-3310": ("Oakfield Primary", "SCH-0231", 3, [("cornet", "standard", 2), ("euphonium", "standard", 1)]),
    "PO-WL-0552": ("Westlake High School", "SCH-0588", 9, [("trombone", "bass", 1), ("tuba", "4/4", 1),
                                                          ("trumpet", "standard", 1)]),
    "PO-SJ-7720": ("St John's Juniors", "SCH-0604", 3, [("cornet", "standard", 1), ("trumpet", "standard", 2)]),
    "PO-BM-4415": ("Brookmead College", "SCH-0710", 12, [("french horn", "single", 1), ("trombone", "tenor", 1)]),
}
INPUTS = {k: k for k in ORDERS}
REFS = ["PO-OK-3310", "PO-WL-0552", "PO-SJ-7720", "PO-BM-4415"]
GEN = "generation brass-desk-model"

CASES = [
    Case("zzd-brass-01", "wrong_routing", "brass.private_desk", "PO-HC-8841", GEN, 1,
         "create_rental_contract", 1, "The rental desk hands a school purchase order to the private rentals "
         "desk, which writes a private-programme contract the shop system refuses for a school account."),
    Case("zzd-brass-02", "tool_ignores_argument", "brass.size_ignored", "PO-HC-8841", "check_inventory", 3,
         "create_rental_contract", 1, "The stock check ignores the size argument and offers a 4/4 tuba for the "
         "3/4 line, which is reserved and put on the contract."),
    Case("zzd-brass-03", "bad_memory_write", "brass.ledger_key", "PO-RV-1207", "note_reservation", 2,
         "create_rental_contract", 1, "The ledger write for line 2 stores line 1's serials, so the contract has "
         "the trumpets twice and no tubas."),
    Case("zzd-brass-04", "wrong_tool_args", "brass.term_annual", "PO-RV-1207", GEN, 14,
         "create_rental_contract", 1, "The desk calls the contract tool with a 12-month term where the purchase "
         "order says 6 months."),
    Case("zzd-brass-05", "plan_error", "brass.plan_qty", "PO-HC-8841", GEN, 2,
         "create_rental_contract", 1, "The work order the desk opens plans 2 trumpets for a purchase order of 3, "
         "and the rest of the run follows that plan."),
]


def _policy(request):
    from trajdebug.testing import Reply, tool_call

    messages = request.body["messages"]
    system = messages[0]["content"]
    user = next(m["content"] for m in messages if m["role"] == "user")
    po = re.search(r"(PO-[A-Z]{2}-\d{4})", user).group(1)
    if system.startswith("You are the rental desk"):
        school = "School" in user or "Academy" in user or "College" in user or "Primary" in user or "Juniors" in user
        target = "transfer_to_school_programme_desk" if school else "transfer_to_private_rentals_desk"
        if active("brass.private_desk"):
            target = "transfer_to_private_rentals_desk"
        return Reply(tool_calls=(tool_call(target, {}),))
    program = "school" if "school programme" in system else "private"
    done = tool_history(messages)
    names = [n for n, _, _ in done]
    results = {n: json.loads(r) for n, _, r in done}
    if "open_work_order" not in names:
        lines = [{"line": i + 1, "instrument": m.group(2), "size": m.group(3), "qty": int(m.group(1))}
                 for i, m in enumerate(re.finditer(r"(\d+) ([a-z ]+?) \(([\w/]+)\)", user))]
        if active("brass.plan_qty"):
            lines[0]["qty"] -= 1
        return Reply(tool_calls=(tool_call("open_work_order", {"po": po, "program": program, "lines": lines}),))
    work = results["open_work_order"]
    account = re.search(r"account (SCH-\d{4})", user).group(1)
    if program == "school" and "check_school_account" not in names:
        return Reply(tool_calls=(tool_call("check_school_account", {"account": account}),))
    for line in work["lines"]:
        n = line["line"]
        stock = [json.loads(r) for nm, a, r in done if nm == "check_inventory" and a["line"] == n]
        if not stock:
            return Reply(tool_calls=(tool_call("check_inventory", {"line": n, "instrument": line["instrument"],
                                                                   "size": line["size"]}),))
        held = [json.loads(r) for nm, a, r in done if nm == "reserve_instrument" and a["line"] == n]
        if not held:
            return Reply(tool_calls=(tool_call("reserve_instrument", {
                "line": n, "serials": stock[0]["available"][:line["qty"]]}),))
        if not [a for nm, a, r in done if nm == "note_reservation" and a["line"] == n]:
            return Reply(tool_calls=(tool_call("note_reservation", {"line": n, "serials": held[0]["held"]}),))
    if "get_rate_card" not in names:
        return Reply(tool_calls=(tool_call("get_rate_card", {
            "program": program, "instruments": sorted({ln["instrument"] for ln in work["lines"]})}),))
    if "create_rental_contract" not in names:
        rates = results["get_rate_card"]["monthly"]
        total = sum(rates[ln["instrument"]] * ln["qty"] for ln in work["lines"])
        term = int(re.search(r"term (\d+) months", user).group(1))
        if active("brass.term_annual"):
            term = 12
        return Reply(tool_calls=(tool_call("create_rental_contract", {
            "account": account, "po": po, "program": program, "term_months": term,
            "monthly_total": round(total, 2)}),))
    return f"Contract {results['create_rental_contract']['contract']} created for {po}."


class ShopSystemError(RuntimeError):
    pass


class WorkLine(BaseModel):
    line: int
    instrument: str
    size: str
    qty: int


@function_tool
def open_work_order(ctx: RunContextWrapper[dict], po: str, program: str, lines: list[WorkLine]) -> str:
    """Open a work order for a rental request: one line per instrument type."""
    lines = [ln.model_dump() for ln in lines]
    ctx.context["work_order"] = {"po": po, "program": program, "lines": lines}
    return json.dumps({"work_order": f"WO-{po[3:]}", "lines": lines})


@function_tool
def check_school_account(account: str) -> str:
    """Look up a school account's standing."""
    return json.dumps({"account": account, "type": "school", "standing": "good", "credit_limit": 2500.0})


@function_tool
def check_inventory(line: int, instrument: str, size: str) -> str:
    """Serials in stock for an instrument of a size."""
    wanted = None if active("brass.size_ignored") else size
    available = sorted(s for s, (inst, sz) in STOCK.items() if inst == instrument and (wanted is None or sz == wanted))
    if wanted is None:
        available.sort(key=lambda s: STOCK[s][1] != "4/4")
    return json.dumps({"line": line, "instrument": instrument, "available": available})


@function_tool
def reserve_instrument(line: int, serials: list[str]) -> str:
    """Hold serials for a rental (the hold lasts 48 hours)."""
    return json.dumps({"line": line, "held": serials, "hold_expires": "48h"})


@function_tool
def note_reservation(ctx: RunContextWrapper[dict], line: int, serials: list[str]) -> str:
    """Write a line's reserved serials into the shop's reservation ledger."""
    ledger = ctx.context.setdefault("ledger", {})
    key = line
    if active("brass.ledger_key") and line > 1:
        serials = ledger[line - 1]
    ledger[key] = list(serials)
    return json.dumps({"ledger_line": key, "serials": ledger[key]})


@function_tool
def get_rate_card(program: str, instruments: list[str]) -> str:
    """Monthly rental rates for a programme."""
    factor = 1.0 if program == "school" else 1.35
    return json.dumps({"program": program, "monthly": {i: round(RATES[i] * factor, 2) for i in instruments}})


@function_tool(failure_error_function=None)
def create_rental_contract(ctx: RunContextWrapper[dict], account: str, po: str, program: str, term_months: int,
                           monthly_total: float) -> str:
    """Create the rental contract in the shop system from the reservation ledger."""
    school, acct, term, lines = ORDERS[po]
    ledger = ctx.context.get("ledger", {})
    if program != "school" and account.startswith("SCH-"):
        raise ShopSystemError(f"HTTP 422 Unprocessable Entity: programme '{program}' requires an individual "
                              f"renter; account {account} is a school account ({po})")
    if term_months != term:
        raise ShopSystemError(f"HTTP 422 Unprocessable Entity: term {term_months} months differs from purchase "
                              f"order {po} ({term} months)")
    seen: dict[str, int] = {}
    for n, (inst, size, qty) in enumerate(lines, start=1):
        serials = ledger.get(n, [])
        for s in serials:
            if s in seen:
                raise ShopSystemError(f"HTTP 409 Conflict: serial {s} appears on contract lines {seen[s]} and {n}")
            seen[s] = n
            if STOCK[s] != (inst, size):
                raise ShopSystemError(f"HTTP 422 Unprocessable Entity: serial {s} is a {STOCK[s][1]} {STOCK[s][0]}; "
                                      f"{po} line {n} orders {inst} size {size}")
        if len(serials) != qty:
            raise ShopSystemError(f"HTTP 422 Unprocessable Entity: {po} line {n} ({inst}) quantity {qty}, "
                                  f"contract holds {len(serials)}")
    return json.dumps({"contract": f"RC-{po[3:]}", "monthly_total": monthly_total, "term_months": term_months})


def record(server, key: str, path: Path) -> None:
    server.use(_policy)
    school, account, term, lines = ORDERS[key]
    text = ", ".join(f"{q} {i} ({s})" for i, s, q in lines)
    request = f"Purchase order {key} from {school} (account {account}): {text}, term {term} months."
    processor = TrajdebugProcessor(path=str(path), name=AGENT, task=f"rental contract for {key}")
    set_trace_processors([processor])

    async def main() -> None:
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        model = OpenAIChatCompletionsModel(model="brass-desk-model", openai_client=client)
        tools = [open_work_order, check_inventory, reserve_instrument, note_reservation, get_rate_card,
                 create_rental_contract]
        school_desk = Agent(name="school_programme_desk", model=model, tools=[check_school_account, *tools],
                            instructions="You run the school programme desk: open a work order, check the account, "
                                         "reserve stock line by line, note it in the ledger, price it and create "
                                         "the contract.")
        private_desk = Agent(name="private_rentals_desk", model=model, tools=tools,
                             instructions="You run the private rentals desk: open a work order, reserve stock line "
                                          "by line, note it in the ledger, price it and create the contract.")
        desk = Agent(name="rental_desk", model=model, handoffs=[school_desk, private_desk],
                     instructions="You are the rental desk. Hand each request to the right desk.")
        try:
            await Runner.run(desk, request, context={}, run_config=RunConfig(workflow_name=AGENT), max_turns=30)
        except AgentsException as exc:
            if not isinstance(exc.__cause__, ShopSystemError):
                raise
        finally:
            await client.close()

    try:
        asyncio.run(main())
    finally:
        set_trace_processors([])
