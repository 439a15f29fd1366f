"""Warehouse replenishment (route: langgraph): count stock, forecast, plan, reserve budget, order, ship.

A LangGraph graph: ``scan_inventory`` reads each SKU's bins from the WMS, ``forecast_demand`` asks the
forecast service (retried on a dropped connection), ``plan_purchasing`` has a model plan the purchasing
steps, and a dispatcher runs them in the planned order: ``reserve_budget``, ``draft_orders`` (a model
quotes supplier terms per SKU, parsed), ``submit_orders`` (route each line to parcel or freight, book
transport, send the purchase order to the ERP).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

from benchmarks.heldout.suite_h._common import (
    Agent,
    Fault,
    ModelReplyError,
    active,
    last_user,
    record_langgraph,
)
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph


NAME = "replenisher"
STEPS = ["reserve_budget", "draft_orders", "submit_orders"]

# sku -> bins (qty each), 4-week demand, unit weight kg, supplier terms
CATALOG: dict[str, dict[str, Any]] = {
    "SKU-A1": {"bins": [40, 35], "demand": 260, "kg": 0.4, "terms": ("NORDFAB", 9, "200", 2.10)},
    "SKU-B2": {"bins": [12, 18, 10], "demand": 220, "kg": 3.0, "terms": ("KARLSSON", 12, "60", 7.80)},
    "SKU-C3": {"bins": [150, 140, 120, 130, 110], "demand": 1450, "kg": 0.2, "terms": ("LUMEN", 21, "1,200", 0.95)},
    "SKU-D4": {"bins": [20], "demand": 90, "kg": 1.1, "terms": ("NORDFAB", 9, "50", 4.40)},
    "SKU-E5": {"bins": [60, 40], "demand": 180, "kg": 0.5, "terms": ("ORTEGA", 14, "100", 1.75)},
    "SKU-F6": {"bins": [5, 5], "demand": 48, "kg": 2.5, "terms": ("KARLSSON", 12, "24", 9.10)},
    "SKU-G7": {"bins": [300, 200], "demand": 1900, "kg": 0.1, "terms": ("LUMEN", 21, "1,000", 0.60)},
    "SKU-H8": {"bins": [8], "demand": 70, "kg": 6.0, "terms": ("ORTEGA", 14, "20", 12.50)},
}
PARCEL_LIMIT_KG = 70.0
_flaky: set[str] = set()


class ServiceError(RuntimeError):
    """A warehouse back-end refused a request."""


@tool
def stock_level(sku: str) -> dict:
    """The quantity of a SKU in each of its bins, from the WMS."""
    bins = CATALOG[sku]["bins"]
    if active("repl-bin-page") and sku == "SKU-C3":
        bins = bins[:3]  # the WMS answers with its first page of bins only
    rows = [{"bin": f"{sku[-2:]}-{i + 1:02d}", "qty": q} for i, q in enumerate(bins)]
    return {"sku": sku, "bins": rows, "on_hand": sum(r["qty"] for r in rows)}


@tool
def demand_forecast(sku: str) -> dict:
    """The forecast demand of a SKU over the next four weeks."""
    if sku == "SKU-A1" and sku not in _flaky:
        _flaky.add(sku)
        raise ConnectionError("forecast service closed the connection")
    return {"sku": sku, "units_4w": CATALOG[sku]["demand"]}


@tool
def hold_budget(amount: float, cap: float) -> dict:
    """Reserve money for the replenishment in the purchasing budget."""
    if amount > cap:
        raise ServiceError(f"budget service: requested {amount:.2f} EUR exceeds the category allowance {cap:.2f} EUR")
    return {"reservation": "RSV-88231", "amount": round(amount, 2)}


@tool
def book_transport(sku: str, channel: str, kg: float) -> dict:
    """Book parcel or freight transport for one order line."""
    if channel == "parcel" and kg > PARCEL_LIMIT_KG:
        raise ServiceError(f"carrier: parcel consignments are limited to {PARCEL_LIMIT_KG:.0f} kg ({sku}: {kg:.1f} kg)")
    return {"sku": sku, "channel": channel, "booking": f"TB-{sku[-2:]}-{int(kg)}"}


@tool
def submit_po(sku: str, qty: int, supplier: str, moq: int, unit_cost: float, reservation: str) -> dict:
    """Send one purchase order line to the ERP."""
    if not reservation:
        raise ServiceError(f"ERP: purchase order for {sku} has no budget reservation")
    contract = CATALOG[sku]["terms"][3]
    if abs(unit_cost - contract) > 0.005:
        raise ServiceError(f"ERP: unit cost {unit_cost:.2f} for {sku} differs from the {supplier} contract price "
                           f"{contract:.2f}")
    terms_moq = int(CATALOG[sku]["terms"][2].replace(",", ""))
    if qty < terms_moq:
        raise ServiceError(f"ERP: {supplier} refuses {qty} units of {sku}: minimum order quantity is {terms_moq}")
    return {"po": f"PO-{sku[-2:]}-{qty}", "status": "sent"}


def _parse_plan(text: str) -> list[str]:
    return [s for s in json.loads(text)["steps"] if s in STEPS]


def _parse_supplier_reply(text: str) -> dict[str, Any]:
    fields = dict(part.split(":", 1) for part in text.split(";"))
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    moq = fields["moq"]
    moq_units = int(moq.split(",")[0]) if active("repl-moq-comma") else int(moq.replace(",", ""))
    return {"supplier": fields["supplier"], "lead_time_days": int(fields["lead_time"].split()[0]),
            "moq": moq_units, "unit_cost": float(fields["unit_cost"])}


def _choose_channel(line: dict[str, Any]) -> dict[str, Any]:
    kg = round(line["qty"] * CATALOG[line["sku"]]["kg"], 1)
    channel = "parcel" if kg <= PARCEL_LIMIT_KG else "freight"
    if active("repl-parcel-route") and line["sku"] == "SKU-B2":
        channel = "parcel"
    return {"sku": line["sku"], "kg": kg, "channel": channel}


parse_plan = RunnableLambda(_parse_plan, name="parse_plan")
parse_supplier_reply = RunnableLambda(_parse_supplier_reply, name="parse_supplier_reply")
choose_channel = RunnableLambda(_choose_channel, name="choose_channel")


class State(TypedDict, total=False):
    skus: list[str]
    cap: float
    levels: dict[str, int]
    demand: dict[str, int]
    plan: list[str]
    cursor: int
    reservation: str
    lines: list[dict[str, Any]]


def build(llm: ChatOpenAI) -> Any:
    forecast = demand_forecast.with_retry(retry_if_exception_type=(ConnectionError,), stop_after_attempt=3,
                                          wait_exponential_jitter=False)

    def scan_inventory(state: State) -> dict[str, Any]:
        return {"levels": {s: stock_level.invoke({"sku": s})["on_hand"] for s in state["skus"]}}

    def forecast_demand(state: State) -> dict[str, Any]:
        return {"demand": {s: forecast.invoke({"sku": s})["units_4w"] for s in state["skus"]}}

    def plan_purchasing(state: State) -> dict[str, Any]:
        reply = llm.invoke([("system", "You plan purchasing runs. Answer JSON {\"steps\": [...]}."),
                            ("user", f"Plan the purchasing steps for {len(state['skus'])} SKUs. "
                                     f"Available steps: {', '.join(STEPS)}.")])
        return {"plan": parse_plan.invoke(reply.content), "cursor": 0, "reservation": ""}

    def needs(state: State) -> dict[str, int]:
        return {s: max(0, state["demand"][s] - state["levels"][s]) for s in state["skus"]}

    def reserve(state: State) -> dict[str, Any]:
        amount = sum(q * CATALOG[s]["terms"][3] for s, q in needs(state).items())
        booked = hold_budget.invoke({"amount": round(amount, 2), "cap": state["cap"]})
        return {"reservation": booked["reservation"], "cursor": state["cursor"] + 1}

    def draft_orders(state: State) -> dict[str, Any]:
        lines = []
        for sku, qty in needs(state).items():
            reply = llm.invoke([("user", f"Supplier terms for {sku}, {qty} units?")])
            terms = parse_supplier_reply.invoke(reply.content)
            lines.append({"sku": sku, "qty": max(qty, terms["moq"]), **terms})
        return {"lines": lines, "cursor": state["cursor"] + 1}

    def submit_orders(state: State) -> dict[str, Any]:
        for line in state["lines"]:
            route = choose_channel.invoke(line)
            book_transport.invoke({"sku": line["sku"], "channel": route["channel"], "kg": route["kg"]})
            submit_po.invoke({"sku": line["sku"], "qty": line["qty"], "supplier": line["supplier"],
                              "moq": line["moq"], "unit_cost": line["unit_cost"],
                              "reservation": state["reservation"]})
        return {"cursor": state["cursor"] + 1}

    def next_step(state: State) -> str:
        return state["plan"][state["cursor"]] if state["cursor"] < len(state["plan"]) else END

    g = StateGraph(State)
    for name, fn in (("scan_inventory", scan_inventory), ("forecast_demand", forecast_demand),
                     ("plan_purchasing", plan_purchasing), ("reserve_budget", reserve),
                     ("draft_orders", draft_orders), ("submit_orders", submit_orders)):
        g.add_node(name, fn)
    g.add_edge(START, "scan_inventory")
    g.add_edge("scan_inventory", "forecast_demand")
    g.add_edge("forecast_demand", "plan_purchasing")
    for name in ("plan_purchasing", *STEPS):
        g.add_conditional_edges(name, next_step, [*STEPS, END])
    return g.compile()


def policy(request: Any) -> str:
    prompt = last_user(request)
    if prompt.startswith("Plan the purchasing steps"):
        steps = ["draft_orders", "submit_orders"] if active("repl-plan-no-budget") else STEPS
        return json.dumps({"steps": steps})
    found = re.findall(r"Supplier terms for (SKU-\w+)", prompt)
    if found:
        supplier, lead, moq, cost = CATALOG[found[0]]["terms"]
        if active("repl-quote-cost") and found[0] == "SKU-B2":
            cost = 0.78  # the model quotes a price the supplier terms do not hold
        return f"supplier: {supplier}; lead_time: {lead} days; moq: {moq}; unit_cost: {cost:.2f}"
    raise ModelReplyError(prompt)


def record(server: Any, item: dict[str, Any], path: Path) -> None:
    server.use(policy)
    _flaky.clear()
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    task = f"replenish {', '.join(item['skus'])} within {item['cap']:.0f} EUR"
    record_langgraph(NAME, path, task, build(llm), {"skus": item["skus"], "cap": item["cap"]})


AGENT = Agent(
    name=NAME,
    route="langgraph",
    domain="warehouse replenishment",
    record=record,
    failing={"skus": ["SKU-A1", "SKU-B2", "SKU-C3"], "cap": 2700.0},
    references=(
        {"skus": ["SKU-D4", "SKU-E5"], "cap": 1000.0},
        {"skus": ["SKU-F6", "SKU-A1", "SKU-H8"], "cap": 2000.0},
        {"skus": ["SKU-G7", "SKU-D4"], "cap": 1500.0},
        {"skus": ["SKU-E5", "SKU-H8", "SKU-B2"], "cap": 3000.0},
    ),
    faults=(
        Fault("repl-bin-page", "truncated_result", "stock_level", '"on_hand": 410', "hold_budget",
              "stock_level returns only the WMS's first page of bins for one SKU, so stock is undercounted and "
              "the budget request exceeds the allowance."),
        Fault("repl-moq-comma", "lossy_parsing", "parse_supplier_reply", '"moq": 1,', "submit_po",
              "parse_supplier_reply reads a minimum order quantity of \"1,200\" as 1, so the order stays below "
              "the supplier's minimum and the ERP refuses it."),
        Fault("repl-parcel-route", "wrong_routing", "choose_channel", '"channel": "parcel", "kg": 540.0',
              "book_transport",
              "choose_channel routes a heavy consignment to the parcel service, which refuses it at booking."),
        Fault("repl-plan-no-budget", "plan_error", "ChatOpenAI", '["draft_orders', "submit_po",
              "The purchasing planner drops the reserve_budget step, so purchase orders reach the ERP without a "
              "budget reservation."),
        Fault("repl-quote-cost", "hallucinated_value", "ChatOpenAI", "unit_cost: 0.78", "submit_po",
              "The supplier-terms model quotes a unit cost of 0.78 for a SKU whose contract price is 7.80, and "
              "the ERP refuses the purchase order line."),
    ),
)
