"""Residential solar quoting (OpenAI Agents SDK, recorded by `TrajdebugProcessor`): a surveyor agent
looks up the customer and the roof (in parallel), asks the irradiance of every roof segment in one
turn, sizes the array and hands off to a financing agent, which runs the credit check and the price
in one turn and issues the quote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from benchmarks.heldout.suite_i._kit import Case, active, calls_so_far, outputs_so_far, system_of
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import FakeModelServer, Reply, tool_call


NAME = "solar-quote-desk"
ROUTE = "openai_agents"

# customer -> (co-signer, site, annual usage kWh, credit band)
CUSTOMERS = {
    "C-5512": ("C-5521", "S-88", 7600, "A"), "C-5521": ("C-5512", "S-88", 7600, "C"),
    "C-6103": ("C-6130", "S-91", 5200, "B"), "C-6130": ("C-6103", "S-91", 5200, "D"),
    "C-7020": ("C-7002", "S-17", 9100, "A"), "C-7002": ("C-7020", "S-17", 9100, "B"),
    "C-4410": ("C-4401", "S-23", 4300, "B"), "C-4401": ("C-4410", "S-23", 4300, "A"),
    "C-3308": ("C-3380", "S-40", 6400, "A"), "C-3380": ("C-3308", "S-40", 6400, "B"),
    "C-2255": ("C-2525", "S-52", 8000, "B"), "C-2525": ("C-2255", "S-52", 8000, "A"),
    "C-1907": ("C-1970", "S-64", 3900, "A"), "C-1970": ("C-1907", "S-64", 3900, "C"),
    "C-8816": ("C-8861", "S-75", 6900, "A"), "C-8861": ("C-8816", "S-75", 6900, "B"),
}
# site -> roof segments (id, area m2, azimuth)
ROOFS = {
    "S-88": [("south", 22, 180), ("east", 14, 95), ("west", 16, 265)],
    "S-91": [("main", 30, 170), ("garage", 12, 200)],
    "S-17": [("east", 12, 90), ("southwest", 18, 220), ("south", 30, 185)],
    "S-23": [("main", 24, 160)],
    "S-40": [("south", 20, 175), ("west", 18, 270)],
    "S-52": [("south", 24, 180), ("east", 16, 100), ("north", 10, 10)],
    "S-64": [("main", 18, 190), ("porch", 8, 150)],
    "S-75": [("south", 22, 190), ("east", 20, 85)],
}
INPUTS = {"quote-5512": "C-5512", "quote-6103": "C-6103", "quote-7020": "C-7020", "quote-4410": "C-4410",
          "quote-1970": "C-1970",
          "ref-3308": "C-3308", "ref-2255": "C-2255", "ref-1907": "C-1907", "ref-8816": "C-8816"}
REFS = ("ref-3308", "ref-2255", "ref-1907", "ref-8816")
PANEL_KW = 0.4

CASES = (
    Case("solar-cosigner", "sq_cosigner", "subagent_wrong_entity", "quote-5512", "generation finance-v1",
         '"customer_id": "C-5521"',
         "After the hand-off the financing agent runs the credit check on the co-signer C-5521 instead of the customer C-5512."),
    Case("solar-panels", "sq_panels", "hallucinated_value", "quote-6103", "generation finance-v1", '"panels": 32',
         "The financing agent issues the quote for 32 panels, a count no sizing or price result holds (the array has 12)."),
    Case("solar-roof", "sq_roof", "truncated_result", "quote-7020", "get_roof_segments", '"count": 2, "page": 1',
         "The roof survey API returns the first page of S-17's segments only (2 of 3), so the array is sized on too little roof."),
    Case("solar-daily", "sq_daily", "unit_error", "quote-1970", "get_irradiance", '"kwh_per_kwp": 3.04',
         "The irradiance service answers S-64's main roof in kWh per kWp per day (3.04) where a yearly figure (1,108) is expected."),
    Case("solar-credit", "sq_credit", "plan_error", "quote-4410", "generation finance-v1",
         '"tool_calls": [{"arguments": {"kw"',
         "The financing agent's plan for its turn drops the credit check and only prices the system."),
)


class QuoteRejected(RuntimeError):
    """The quoting back office refused a request."""

    __module__ = "solarops.backoffice"


def _yield(azimuth: int) -> int:
    """kWh per kWp per year by orientation (south best)."""
    return round(1150 - 4.2 * abs(180 - azimuth))


# -- the scripted model ----------------------------------------------------------------------------


def _surveyor(request: Any, customer: str) -> Reply | str:
    done, out = [n for n, _ in calls_so_far(request)], outputs_so_far(request)
    if "get_customer" not in done:
        return Reply(tool_calls=(tool_call("get_customer", {"customer_id": customer}),
                                 tool_call("get_roof_segments", {"site_id": CUSTOMERS[customer][1], "page": 1})))
    if "get_irradiance" not in done:
        roof = out["get_roof_segments"][0]
        return Reply(tool_calls=tuple(tool_call("get_irradiance", {"site_id": roof["site"], "segment": s["segment"],
                                                                   "azimuth": s["azimuth"]}) for s in roof["segments"]))
    if "size_array" not in done:
        areas = {s["segment"]: s["area_m2"] for s in out["get_roof_segments"][0]["segments"]}
        segs = [{"segment": r["segment"], "area_m2": areas[r["segment"]], "kwh_per_kwp": r["kwh_per_kwp"]}
                for r in out["get_irradiance"]]
        return Reply(tool_calls=(tool_call("size_array", {"segments": segs,
                                                          "target_kwh": out["get_customer"][0]["annual_kwh"]}),))
    return Reply(tool_calls=(tool_call("transfer_to_financing", {}),))


def _financing(request: Any, customer: str) -> Reply | str:
    done, out = [n for n, _ in calls_so_far(request)], outputs_so_far(request)
    size = out["size_array"][0]
    if "price_system" not in done:
        price = tool_call("price_system", {"kw": size["kw"], "panels": size["panels"]})
        if active("sq_credit") and customer == "C-4410":
            return Reply(tool_calls=(price,))
        who = CUSTOMERS[customer][0] if active("sq_cosigner") and customer == "C-5512" else customer
        return Reply(tool_calls=(tool_call("credit_check", {"customer_id": who}), price))
    if "issue_quote" not in done:
        panels = 32 if active("sq_panels") and customer == "C-6103" else size["panels"]
        credit = out.get("credit_check", [{"check_id": None}])[0]
        return Reply(tool_calls=(tool_call("issue_quote", {
            "customer_id": customer, "panels": panels, "price_id": out["price_system"][0]["price_id"],
            "credit_check_id": credit["check_id"], "annual_kwh": size["annual_kwh"]}),))
    quote = out["issue_quote"][0]
    return f"Quote {quote['quote_id']} issued: {quote['panels']} panels, {quote['total_usd']:,} USD."


def policy(request: Any) -> Reply | str:
    first_user = next(m for m in request.body["messages"] if m["role"] == "user")
    customer = json.loads(first_user["content"])["customer_id"]
    if system_of(request).startswith("You finance"):
        return _financing(request, customer)
    return _surveyor(request, customer)


# -- the tools -------------------------------------------------------------------------------------


@function_tool(failure_error_function=None)
def get_customer(customer_id: str) -> str:
    """The customer's site, co-signer and annual electricity usage."""
    cosigner, site, usage, _ = CUSTOMERS[customer_id]
    return json.dumps({"customer_id": customer_id, "site": site, "cosigner": cosigner, "annual_kwh": usage})


@function_tool(failure_error_function=None)
def get_roof_segments(site_id: str, page: int) -> str:
    """The roof segments of a site from the survey (paged)."""
    segments = [{"segment": s, "area_m2": a, "azimuth": z} for s, a, z in ROOFS[site_id]]
    if active("sq_roof") and site_id == "S-17":
        segments = segments[:2]
    return json.dumps({"site": site_id, "page": page, "segments": segments, "count": len(segments)})


@function_tool(failure_error_function=None)
def get_irradiance(site_id: str, segment: str, azimuth: int) -> str:
    """Expected yield of a roof segment, kWh per kWp per year."""
    value: float = _yield(azimuth)
    if active("sq_daily") and (site_id, segment) == ("S-64", "main"):
        value = round(value / 365, 2)
    return json.dumps({"site": site_id, "segment": segment, "kwh_per_kwp": value})


@function_tool(failure_error_function=None, strict_mode=False)
def size_array(segments: list[dict[str, Any]], target_kwh: int) -> str:
    """Size a panel array to cover a yearly usage target, best segments first."""
    panels, kwh = 0, 0.0
    for seg in sorted(segments, key=lambda s: -s["kwh_per_kwp"]):
        for _ in range(seg["area_m2"] // 2):
            if kwh >= target_kwh:
                break
            panels += 1
            kwh += PANEL_KW * seg["kwh_per_kwp"]
    if kwh < 0.8 * target_kwh:
        raise QuoteRejected(f"the surveyed roof holds {panels} panels ({kwh:,.0f} kWh a year), under 80% of "
                            f"the {target_kwh:,} kWh usage target")
    return json.dumps({"panels": panels, "kw": round(panels * PANEL_KW, 1), "annual_kwh": round(kwh)})


@function_tool(failure_error_function=None)
def credit_check(customer_id: str) -> str:
    """Run a soft credit check."""
    band = CUSTOMERS[customer_id][3]
    return json.dumps({"check_id": f"CC-{customer_id[2:]}", "customer_id": customer_id, "band": band})


@function_tool(failure_error_function=None)
def price_system(kw: float, panels: int) -> str:
    """Price an array: panels, inverter, labour."""
    return json.dumps({"price_id": f"PR-{panels}-{round(kw * 10)}", "panels": panels, "total_usd": round(panels * 610 + 2400)})


@function_tool(failure_error_function=None)
def issue_quote(customer_id: str, panels: int, price_id: str, credit_check_id: str | None, annual_kwh: int) -> str:
    """Issue a signed quote to the customer."""
    if credit_check_id is None:
        raise QuoteRejected(f"no credit decision on file for {customer_id}: a quote needs a credit check")
    if credit_check_id != f"CC-{customer_id[2:]}":
        raise QuoteRejected(f"credit check {credit_check_id} was run for another applicant than {customer_id}")
    priced = int(price_id.split("-")[1])
    if panels != priced:
        raise QuoteRejected(f"price {price_id} covers {priced} panels, the quote asks for {panels}")
    return json.dumps({"quote_id": f"Q-{customer_id[2:]}-{panels}", "panels": panels, "total_usd": panels * 610 + 2400})


# -- the run ---------------------------------------------------------------------------------------


def record(server: FakeModelServer, input_id: str, path: Path) -> None:
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    finance = Agent(name="financing", instructions="You finance residential solar: credit check, price, quote.",
                    tools=[credit_check, price_system, issue_quote],
                    model=OpenAIChatCompletionsModel(model="finance-v1", openai_client=client))
    surveyor = Agent(name="surveyor", instructions="You survey a customer's roof and size a solar array.",
                     tools=[get_customer, get_roof_segments, get_irradiance, size_array], handoffs=[finance],
                     model=OpenAIChatCompletionsModel(model="survey-v2", openai_client=client))
    set_trace_processors([TrajdebugProcessor(path=str(path), name=NAME, task=f"solar quote {input_id}")])
    request = json.dumps({"customer_id": INPUTS[input_id], "request": "Quote a rooftop array for this customer."})
    try:
        Runner.run_sync(surveyor, request, max_turns=12, run_config=RunConfig(workflow_name=NAME))
    except Exception as exc:
        if "QuoteRejected" not in repr(exc.__cause__) and "Error running tool" not in str(exc):
            raise
