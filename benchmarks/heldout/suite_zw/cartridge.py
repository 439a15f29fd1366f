"""Printer cartridge recycling: an OpenAI Agents SDK intake agent with a grading agent-as-tool and a credit hand-off."""

from __future__ import annotations

import json

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.exceptions import UserError
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .common import Case, system_text, tool_results
from .kit import active

NAME = "cartridge-rebate-desk"
ROUTE = "openai_agents"
DOMAIN = "printer cartridge recycling"
EXT = "jsonl"
SHAPE = ("intake agent: manifest tool -> weigh tool -> rate tool -> grading agent-as-tool (inspect tool) -> "
         "hand-off to credit agent -> issue_rebate_credit")

BOXES = {
    "B-71": {"brand": "Brother", "skus": ["TN-2420"] * 5 + ["TN-243C", "TN-243M", "TN-243Y"], "grams": 3400,
             "cracked": 1},
    "B-17": {"brand": "Brother", "skus": ["TN-2420"] * 3, "grams": 1300, "cracked": 0},
    "H-09": {"brand": "HP", "skus": ["HP-305"] * 6 + ["HP-303XL"] * 2, "grams": 1900, "cracked": 2},
    "C-22": {"brand": "Canon", "skus": ["PG-545"] * 4, "grams": 900, "cracked": 0},
    "E-40": {"brand": "Epson", "skus": ["T-603"] * 9, "grams": 1100, "cracked": 1},
    "K-12": {"brand": "Kyocera", "skus": ["TK-5240"] * 3, "grams": 2700, "cracked": 0},
    "S-05": {"brand": "Samsung", "skus": ["MLT-D111"] * 5, "grams": 3900, "cracked": 1},
}
RATES = {"Brother": 0.45, "HP": 0.60, "Canon": 0.35, "Epson": 0.20, "Kyocera": 0.80, "Samsung": 0.55}
WEIGHT_BONUS_PER_KG = 0.10
INPUTS = {"b71": "B-71", "h09": "H-09", "c22": "C-22", "e40": "E-40", "k12": "K-12", "s05": "S-05"}
REFS = ["c22", "e40", "k12", "s05"]

CASES = [
    Case("zw_cart_grams", "unit_error", "b71", "weigh_shipment", 1, "tool", "issue_rebate_credit", 1,
         "The scale tool reports the box weight in grams under a kilogram field, so the weight bonus is 1000x."),
    Case("zw_cart_rate", "hallucinated_value", "h09", "generation recycling-model", 8, "llm", "issue_rebate_credit", 1,
         "The credit agent's model states a rebate rate of 0.85 EUR per unit that no tool returned."),
    Case("zw_cart_othbox", "subagent_wrong_entity", "b71", "generation recycling-model", 5, "llm", "issue_rebate_credit", 1,
         "The grading sub-agent inspects the sibling box B-17 and reports its grades for B-71."),
    Case("zw_cart_ratefail", "swallowed_error", "h09", "get_rebate_rate", 1, "tool", "issue_rebate_credit", 1,
         "The rate tool catches a rate-table error and answers 0.0 EUR per unit as if it were the schedule."),
    Case("zw_cart_page", "truncated_result", "b71", "lookup_cartridge_manifest", 1, "tool", "issue_rebate_credit", 1,
         "The manifest tool returns only the first page of five cartridges of the box's eight."),
]


class CreditRejected(RuntimeError):
    pass


def _policy(req):
    body = req.body or {}
    sys = system_text(body)
    done = tool_results(body)
    if "grading" in sys:
        msgs = body.get("messages") or []
        box = json.loads(next(m["content"] for m in msgs if m["role"] == "user"))["box_id"]
        if not done:
            target = "B-17" if (box == "B-71" and active("zw_cart_othbox")) else box
            return Reply(tool_calls=(tool_call("inspect_box", {"box_id": target}),))
        rep = done[-1]
        return json.dumps({"box_id": box, "grade_a": rep["intact"], "grade_c": rep["cracked"],
                           "inspected_box": rep["box_id"]})
    if "credit" in sys:
        if any(isinstance(d, dict) and d.get("status") == "issued" for d in done):
            return "Credit issued."
        man = next(d for d in done if "skus" in d)
        weight = next(d for d in done if "weight_kg" in d)
        rate = next(d for d in done if "rate_eur" in d)["rate_eur"]
        grade = next(d for d in done if "grade_a" in d)
        if active("zw_cart_rate"):
            rate = 0.85
        units = grade["grade_a"]
        credit = round(units * rate + weight["weight_kg"] * WEIGHT_BONUS_PER_KG, 2)
        return Reply(tool_calls=(tool_call("issue_rebate_credit", {
            "box_id": man["box_id"], "units": units, "manifest_units": len(man["skus"]), "rate_eur": rate,
            "weight_kg": weight["weight_kg"], "credit_eur": credit, "grading_box": grade["inspected_box"]}),))
    box = json.loads(next(m["content"] for m in body["messages"] if m["role"] == "user"))["box_id"]
    if len(done) == 0:
        return Reply(tool_calls=(tool_call("lookup_cartridge_manifest", {"box_id": box}),))
    if len(done) == 1:
        return Reply(tool_calls=(tool_call("weigh_shipment", {"box_id": box}),))
    if len(done) == 2:
        return Reply(tool_calls=(tool_call("get_rebate_rate", {"brand": done[0]["brand"]}),))
    if len(done) == 3:
        return Reply(tool_calls=(tool_call("grade_box", {"input": json.dumps({"box_id": box})}),))
    return Reply(tool_calls=(tool_call("transfer_to_credit_agent", {}),))


@function_tool
def lookup_cartridge_manifest(box_id: str) -> str:
    """The cartridges declared in a returned box."""
    b = BOXES[box_id]
    skus = b["skus"][:5] if active("zw_cart_page") else b["skus"]
    return json.dumps({"box_id": box_id, "brand": b["brand"], "skus": skus})


@function_tool
def weigh_shipment(box_id: str) -> str:
    """The weighed box in kilograms."""
    g = BOXES[box_id]["grams"]
    kg = float(g) if active("zw_cart_grams") else round(g / 1000.0, 2)
    return json.dumps({"box_id": box_id, "weight_kg": kg})


@function_tool
def get_rebate_rate(brand: str) -> str:
    """The rebate per intact cartridge for a brand, in EUR."""
    try:
        if active("zw_cart_ratefail"):
            raise LookupError(f"rate table for brand {brand} is locked for the quarterly update")
        rate = RATES[brand]
    except LookupError:
        rate = 0.0
    return json.dumps({"brand": brand, "rate_eur": rate})


@function_tool
def inspect_box(box_id: str) -> str:
    """Grade the cartridges in a box: intact or cracked."""
    b = BOXES[box_id]
    return json.dumps({"box_id": box_id, "intact": len(b["skus"]) - b["cracked"], "cracked": b["cracked"]})


@function_tool(failure_error_function=None)
def issue_rebate_credit(box_id: str, units: int, manifest_units: int, rate_eur: float, weight_kg: float,
                        credit_eur: float, grading_box: str) -> str:
    """Issue the rebate credit note for a box (validated by the billing API)."""
    b = BOXES[box_id]
    if grading_box != box_id:
        raise CreditRejected(f"422: grading report for box {grading_box} cannot be attached to box {box_id}")
    if manifest_units != len(b["skus"]):
        raise CreditRejected(f"409: credit covers {manifest_units} manifest units; intake scan of box {box_id} "
                             f"counted {len(b['skus'])}")
    if weight_kg > 30:
        raise CreditRejected(f"422: weight {weight_kg} kg exceeds the 30 kg courier box limit (box {box_id})")
    if rate_eur != RATES[b["brand"]]:
        raise CreditRejected(f"422: rate {rate_eur:.2f} EUR/unit does not match the {b['brand']} schedule "
                             f"({RATES[b['brand']]:.2f} EUR/unit)")
    return json.dumps({"status": "issued", "credit_note": f"CN-{box_id}", "credit_eur": credit_eur})


def build(server):
    client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)

    def model():
        return OpenAIChatCompletionsModel(model="recycling-model", openai_client=client)

    grading = Agent(name="grading_agent", instructions="You are the grading bench. Inspect the box, report grades.",
                    tools=[inspect_box], model=model())
    credit = Agent(name="credit_agent", instructions="You issue the credit note for a graded box.",
                   tools=[issue_rebate_credit], model=model())
    intake = Agent(name="intake_agent", instructions="You run recycling intake for returned cartridge boxes.",
                   tools=[lookup_cartridge_manifest, weigh_shipment, get_rebate_rate,
                          grading.as_tool(tool_name="grade_box", tool_description="Grade a box's cartridges.")],
                   handoffs=[credit], model=model())
    return intake


def record(inp_id: str, path: str, server) -> None:
    server.use(_policy)
    processor = TrajdebugProcessor(path=path, name=NAME, task=f"rebate for box {INPUTS[inp_id]}")
    set_trace_processors([processor])
    agent = build(server)
    try:
        Runner.run_sync(agent, json.dumps({"box_id": INPUTS[inp_id]}),
                        run_config=RunConfig(workflow_name=NAME, tracing_disabled=False))
    except UserError as exc:
        if not isinstance(exc.__cause__, CreditRejected):
            raise
