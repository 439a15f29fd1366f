"""Customer-support refunds (route: openai_agents): a desk works a shift's refund tickets, then closes it.

Per ticket (one ``Runner.run`` each, in one trace): the desk agent looks the customer
up, asks a refund specialist (a sub-agent called as a tool: it reads the order lines and the
warehouse's return status and works out the amount) and issues the refund through the payment
gateway.  At the end of the shift a closing agent reconciles the refunds with the warehouse.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agents import Agent as SdkAgent
from agents import Runner, function_tool
from benchmarks.heldout.suite_h._common import (
    Agent,
    Fault,
    ModelReplyError,
    active,
    chat_model,
    first_user,
    last_user,
    record_agents_sdk,
    system_of,
    tool_results,
)

from trajdebug.testing import Reply, tool_call


NAME = "refund-desk"

CUSTOMERS: dict[str, dict[str, Any]] = {
    "ana@example.com": {"customer_id": "C-11", "payment_ref": "PM-1011", "orders": ["O-7711"]},
    "ben@example.com": {"customer_id": "C-12", "payment_ref": "PM-1012", "orders": ["O-7720", "O-7722"]},
    "cleo@example.com": {"customer_id": "C-13", "payment_ref": "PM-1013", "orders": ["O-7733"]},
    "dev@example.com": {"customer_id": "C-14", "payment_ref": "PM-1014", "orders": ["O-7741"]},
    "eli@example.com": {"customer_id": "C-15", "payment_ref": "PM-1015", "orders": ["O-7750", "O-7751"]},
    "fay@example.com": {"customer_id": "C-16", "payment_ref": "PM-1016", "orders": ["O-7761"]},
    "gus@example.com": {"customer_id": "C-17", "payment_ref": "PM-1017", "orders": ["O-7771"]},
}


def _line(sku: str, price: float, returned: bool = True) -> dict[str, Any]:
    return {"sku": sku, "price": price, "returned": returned}


# order -> lines now, the payer's payment method, whether the warehouse scanned the return
ORDERS: dict[str, dict[str, Any]] = {
    "O-7711": {"lines": [_line("DESK-LAMP", 39.90), _line("USB-HUB", 18.00, False)], "payer": "PM-1011", "scanned": True},
    "O-7720": {"lines": [_line("OFFICE-CHAIR", 212.00)], "payer": "PM-1012", "scanned": True},
    "O-7722": {"lines": [_line("MUG-SET", 24.50), _line("TEA-TIN", 40.00)], "payer": "PM-1012", "scanned": True},
    "O-7733": {"lines": [_line("RUG-S", 89.00)], "payer": "PM-1013", "scanned": False},
    "O-7741": {"lines": [_line("KETTLE", 45.00)], "payer": "PM-1014", "scanned": True},
    "O-7751": {"lines": [_line("FRAME-A3", 22.00), _line("FRAME-A4", 16.00)], "payer": "PM-1015", "scanned": True},
    "O-7761": {"lines": [_line("BACKPACK", 74.00), _line("BOTTLE", 12.00, False)], "payer": "PM-1016", "scanned": True},
    "O-7771": {"lines": [_line("HEADSET", 129.00)], "payer": "PM-1017", "scanned": False},
}
EARLIER_COPY = {"O-7722": [*ORDERS["O-7722"]["lines"], _line("KETTLE-XL", 45.00)]}  # before a line was cancelled
CANCELLED = {"O-7722": [{"sku": "SPOON-SET", "price": 19.00, "returned": False, "status": "cancelled"}],
             "O-7751": [{"sku": "FRAME-A2", "price": 31.00, "returned": False, "status": "cancelled"}]}
_ledger: list[dict[str, Any]] = []


class ReturnNotFound(LookupError):
    """The warehouse has no scanned return for an order."""


class GatewayRejected(RuntimeError):
    """The payment gateway or the finance ledger refused a refund."""


def _captured(order_id: str) -> float:
    return round(sum(line["price"] for line in ORDERS[order_id]["lines"]), 2)


@function_tool
def lookup_customer(email: str) -> str:
    """The customer account of an e-mail address."""
    c = CUSTOMERS[email]
    return json.dumps({"customer_id": c["customer_id"], "payment_ref": c["payment_ref"], "orders": c["orders"]})


@function_tool
def get_order_lines(order_id: str, include_cancelled: bool) -> str:
    """An order's lines, each with whether the customer returned it (cancelled lines were refunded already)."""
    lines = ORDERS[order_id]["lines"]
    if active("refund-lines-cache") and order_id in EARLIER_COPY:
        lines = EARLIER_COPY[order_id]  # served from the order service's read replica
    if include_cancelled or active("refund-cancelled-lines"):
        lines = [*lines, *CANCELLED.get(order_id, [])]
    return json.dumps({"id": order_id, "lines": lines})


@function_tool
def return_status(order_id: str) -> str:
    """Whether the warehouse received the customer's return."""
    try:
        if not ORDERS[order_id]["scanned"]:
            raise ReturnNotFound(f"warehouse: no return scanned for {order_id}")
    except ReturnNotFound:
        if not active("refund-return-404"):
            raise
    return json.dumps({"order": order_id, "return": "received"})


@function_tool(failure_error_function=None)
def issue_refund(order_id: str, amount: float, payment_ref: str) -> str:
    """Refund an order to the payment method it was paid with."""
    if payment_ref != ORDERS[order_id]["payer"]:
        raise GatewayRejected(f"payment gateway: {payment_ref} was not used to pay {order_id}")
    if amount > _captured(order_id) + 0.005:
        raise GatewayRejected(f"payment gateway: refund {amount:.2f} exceeds the {_captured(order_id):.2f} "
                              f"captured for {order_id}")
    _ledger.append({"order_id": order_id, "amount": amount})
    return json.dumps({"refund": f"R-{order_id[2:]}", "order_id": order_id, "amount": amount, "state": "settled"})


@function_tool(failure_error_function=None)
def reconcile_refunds(shift: str) -> str:
    """Reconcile the shift's refunds with the warehouse's scanned returns."""
    for entry in _ledger:
        if not ORDERS[entry["order_id"]]["scanned"]:
            raise GatewayRejected(f"finance: refund for {entry['order_id']} has no scanned return in the warehouse")
    return json.dumps({"shift": shift, "refunds": len(_ledger), "status": "balanced"})


def _specialist(request: Any) -> Reply | str:
    ask = first_user(request)
    order_id = re.findall(r"Order (O-\d+)", ask)[0]
    if active("refund-older-order"):
        order_id = re.findall(r"orders: (O-\d+)", ask)[0]  # the first order on the account
    done = tool_results(request)
    if "get_order_lines" not in done:
        return Reply(tool_calls=(tool_call("get_order_lines", {"order_id": order_id, "include_cancelled": False}),))
    if "return_status" not in done:
        return Reply(tool_calls=(tool_call("return_status", {"order_id": order_id}),))
    if not isinstance(done["return_status"][-1], dict):
        return "Hold: the return has not reached the warehouse yet."
    lines = done["get_order_lines"][-1]["lines"]
    amount = sum(line["price"] for line in lines if line["returned"] or line.get("status") == "cancelled")
    return f"Refund {amount:.2f} EUR."


def _desk(request: Any) -> Reply | str:
    ticket = last_user(request)
    email, order_id = re.findall(r"customer (\S+@\S+) asks for a refund on order (O-\d+)", ticket)[0]
    done = tool_results(request, since_last_user=True)
    if "lookup_customer" not in done:
        return Reply(tool_calls=(tool_call("lookup_customer", {"email": email}),))
    customer = done["lookup_customer"][-1]
    if "refund_specialist" not in done:
        ask = f"Order {order_id} for customer {customer['customer_id']} (orders: {', '.join(customer['orders'])})."
        return Reply(tool_calls=(tool_call("refund_specialist", {"input": ask}),))
    verdict = str(done["refund_specialist"][-1])
    if verdict.startswith("Hold") or "issue_refund" in done:
        return f"Ticket for {order_id} answered: {verdict}"
    # the payment method as the conversation states it (the first account looked up in it)
    payment_ref = tool_results(request)["lookup_customer"][0]["payment_ref"]
    amount = float(re.findall(r"Refund ([\d.]+) EUR", verdict)[0])
    return Reply(tool_calls=(tool_call("issue_refund", {"order_id": order_id, "amount": amount,
                                                        "payment_ref": payment_ref}),))


def policy(request: Any) -> Reply | str:
    system = system_of(request)
    if system.startswith("You work out refunds"):
        return _specialist(request)
    if system.startswith("You resolve refund tickets"):
        return _desk(request)
    if system.startswith("You close the shift"):
        if "reconcile_refunds" not in tool_results(request):
            return Reply(tool_calls=(tool_call("reconcile_refunds", {"shift": first_user(request).split()[-1]}),))
        return "Shift closed."
    raise ModelReplyError(system)


def build(model: Any) -> tuple[SdkAgent[Any], SdkAgent[Any]]:
    specialist = SdkAgent(name="refund_specialist", instructions="You work out refunds from order lines and returns.",
                          tools=[get_order_lines, return_status], model=model)
    desk = SdkAgent(name="refund_desk", instructions="You resolve refund tickets for the web shop.",
                    tools=[lookup_customer,
                           specialist.as_tool(tool_name="refund_specialist", tool_description="Work out a refund."),
                           issue_refund], model=model)
    closer = SdkAgent(name="shift_closer", instructions="You close the shift: reconcile refunds.",
                      tools=[reconcile_refunds], model=model)
    return desk, closer


def record(server: Any, item: dict[str, Any], path: Path) -> None:
    server.use(policy)
    _ledger.clear()

    async def main() -> None:
        model, client = chat_model(server)
        desk, closer = build(model)
        try:
            history: list[Any] = []
            for email, order_id in item["tickets"]:
                ticket = {"role": "user", "content": f"Ticket: customer {email} asks for a refund on order {order_id}."}
                result = await Runner.run(desk, [*history, ticket])
                # each ticket starts a fresh conversation
                history = result.to_input_list() if active("refund-carry-thread") else []
            await Runner.run(closer, f"Close shift {item['shift']}")
        finally:
            await client.close()

    record_agents_sdk(NAME, path, f"work the refund tickets of shift {item['shift']}", main)


AGENT = Agent(
    name=NAME,
    route="openai_agents",
    domain="customer-support refunds",
    record=record,
    failing={"shift": "S-1129-A", "tickets": [("ana@example.com", "O-7711"), ("ben@example.com", "O-7722"),
                                              ("cleo@example.com", "O-7733")]},
    references=(
        {"shift": "S-1129-B", "tickets": [("dev@example.com", "O-7741"), ("eli@example.com", "O-7751")]},
        {"shift": "S-1129-C", "tickets": [("fay@example.com", "O-7761")]},
        {"shift": "S-1130-A", "tickets": [("gus@example.com", "O-7771"), ("dev@example.com", "O-7741")]},
        {"shift": "S-1130-B", "tickets": [("eli@example.com", "O-7751"), ("fay@example.com", "O-7761")]},
    ),
    faults=(
        Fault("refund-older-order", "subagent_wrong_entity", "generation fake-model", '"order_id": "O-7720"',
              "issue_refund",
              "The refund specialist sub-agent works out the refund for the customer's older order instead of "
              "the ticket's order, and the gateway refuses a refund above the captured amount."),
        Fault("refund-lines-cache", "stale_data", "get_order_lines", "KETTLE-XL", "issue_refund",
              "get_order_lines serves a copy of the order from before one line was cancelled, so the refund "
              "counts the cancelled line and exceeds the captured amount."),
        Fault("refund-return-404", "swallowed_error", "return_status", '"order": "O-7733", "return": "received"',
              "reconcile_refunds",
              "return_status swallows the warehouse's 'no return scanned' error and reports the return as "
              "received, so a refund is issued that finance cannot reconcile."),
        Fault("refund-carry-thread", "context_pollution", "generation fake-model", '"order_id": "O-7722", "payment_ref": "PM-1011"',
              "issue_refund",
              "The desk carries the previous ticket's conversation into the next one, and the model refunds to "
              "the first customer's payment method found in it."),
        Fault("refund-cancelled-lines", "tool_ignores_argument", "get_order_lines", '"status": "cancelled"',
              "issue_refund",
              "get_order_lines ignores include_cancelled=False and returns a line cancelled (and refunded) before "
              "shipping, so the refund counts it again and exceeds the captured amount."),
    ),
)
