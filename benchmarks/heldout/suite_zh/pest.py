"""Pest control visits: the OpenAI Agents SDK (triage agent, a species identifier agent-as-tool, hand-off to a planner)."""
from __future__ import annotations

import json
import re

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .kit import active

AGENT, ROUTE, EXT = "pest-visit-planner", "openai_agents", "jsonl"
DOMAIN = "pest control visits"
SHAPE = "triage agent (customer, case history, identifier agent-as-tool) -> hand-off -> treatment planner (site survey, product label) -> issue work order"

INPUTS = {
    "t301": {"ticket": "T-301", "customer": "K-88"},
    "t412": {"ticket": "T-412", "customer": "K-19"},
    "r1": {"ticket": "T-120", "customer": "K-05"},
    "r2": {"ticket": "T-233", "customer": "K-41"},
    "r3": {"ticket": "T-518", "customer": "K-63"},
    "r4": {"ticket": "T-644", "customer": "K-72"},
}
REFS = ["r1", "r2", "r3", "r4"]
TICKETS = {
    "T-301": {"site": "S-301", "pest": "mice", "sibling": "T-302"}, "T-302": {"site": "S-302", "pest": "cockroaches"},
    "T-412": {"site": "S-412", "pest": "cockroaches", "sibling": "T-413"}, "T-413": {"site": "S-413", "pest": "wasps"},
    "T-120": {"site": "S-120", "pest": "wasps", "sibling": "T-121"}, "T-233": {"site": "S-233", "pest": "mice", "sibling": "T-234"},
    "T-518": {"site": "S-518", "pest": "cockroaches", "sibling": "T-519"}, "T-644": {"site": "S-644", "pest": "mice", "sibling": "T-645"},
}
SITES = {"S-301": (120, 360), "S-412": (85, 240), "S-120": (60, 400), "S-233": (140, 210), "S-518": (95, 150), "S-644": (70, 300)}
PRODUCTS = {"mice": ("RODEX-BAIT", 25, 2), "cockroaches": ("BLATTA-GEL", 12, 2), "wasps": ("VESPEX", 40, 1)}

CASES = [
    ("zh-pest-01", "subagent_wrong_entity", "t301", ("lookup_ticket", 1, "tool"), "issue_work_order",
     "the identifier sub-agent's ticket lookup resolves the sibling unit's ticket, so the plan treats cockroaches at a mice site."),
    ("zh-pest-02", "format_drift", "t412", ("product_label", 1, "tool"), "issue_work_order",
     "product_label switches its dose to ml per m2, the planner reads it as ml per 10 m2, and the work order underdoses."),
    ("zh-pest-03", "context_pollution", "t301", ("case_history", 1, "tool"), "issue_work_order",
     "case_history mixes in a neighbouring unit's note asking for the whole plot, and the planner surveys and doses the whole plot."),
    ("zh-pest-04", "plan_error", "t412", ("generation scripted-policy", 9, "llm"), "issue_work_order",
     "the planner's work order has a single visit where the product label requires a follow-up visit."),
    ("zh-pest-05", "tool_ignores_argument", "t301", ("site_survey", 1, "tool"), "issue_work_order",
     "site_survey ignores area_type=interior and returns the whole plot, so the dose exceeds the label maximum."),
]


def _by_tool(msgs):
    names = {}
    for m in msgs:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
    out = {}
    for m in msgs:
        if m["role"] == "tool":
            out[names.get(m["tool_call_id"], "?")] = m["content"]
    return out


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    got = _by_tool(msgs)
    if system.startswith("You identify pests"):
        if "lookup_ticket" not in got:
            return Reply(tool_calls=(tool_call("lookup_ticket", json.loads(msgs[-1]["content"])),))
        return "Species: " + json.loads(got["lookup_ticket"])["pest"]
    job = json.loads(next(m["content"] for m in msgs if m["role"] == "user"))
    if system.startswith("You triage"):
        if "customer_lookup" not in got:
            return Reply(tool_calls=(tool_call("customer_lookup", {"customer": job["customer"]}),))
        site = json.loads(got["customer_lookup"])["site"]
        if "case_history" not in got:
            return Reply(tool_calls=(tool_call("case_history", {"site": site}),))
        if "species_identifier" not in got:
            return Reply(tool_calls=(tool_call("species_identifier", {"input": json.dumps({"ticket": job["ticket"]})}),))
        return Reply(tool_calls=(tool_call("transfer_to_treatment_planner", {}),))
    site = json.loads(got["customer_lookup"])["site"]
    pest = got["species_identifier"].split(": ")[1]
    areas = re.findall(r"treat area: (\w+)", got["case_history"])
    if "site_survey" not in got:
        return Reply(tool_calls=(tool_call("site_survey", {"site": site, "area_type": areas[-1] if areas else "interior"}),))
    if "product_label" not in got:
        return Reply(tool_calls=(tool_call("product_label", {"pest": pest}),))
    if "issue_work_order" not in got:
        label = json.loads(got["product_label"])
        area = json.loads(got["site_survey"])["area_m2"]
        rate = float(re.search(r"([\d.]+) ml", label["dose"]).group(1))
        visits = label["visits"]
        if active("zh-pest-04"):
            visits = 1
        return Reply(tool_calls=(tool_call("issue_work_order", {
            "ticket": job["ticket"], "product": label["product"], "area_m2": area,
            "dose_ml": round(rate * area / 10, 1), "visits": visits}),))
    return "Work order issued: " + got["issue_work_order"]


@function_tool
def customer_lookup(customer: str) -> str:
    """Customer account and site."""
    ticket = CURRENT["ticket"]
    return json.dumps({"customer": customer, "site": TICKETS[ticket]["site"], "ticket": ticket})


@function_tool
def case_history(site: str) -> str:
    """Inspection notes for a site."""
    pest = TICKETS[CURRENT["ticket"]]["pest"]
    notes = [f"{site} 2026-11-20 inspection: signs in kitchen, {pest} reported; treat area: interior"]
    if active("zh-pest-03"):
        notes.append("Unit next door 2026-11-28 inspection: activity along the garden fence; treat area: whole")
    return "\n".join(notes)


@function_tool
def lookup_ticket(ticket: str) -> str:
    """The ticket's reported pest."""
    if active("zh-pest-01"):
        ticket = TICKETS[ticket]["sibling"]
    return json.dumps({"ticket": ticket, **{k: v for k, v in TICKETS[ticket].items() if k != "sibling"}})


@function_tool
def site_survey(site: str, area_type: str) -> str:
    """Treatable area of a site: area_type interior or whole."""
    interior, whole = SITES[site]
    area = interior if area_type == "interior" and not active("zh-pest-05") else whole
    return json.dumps({"site": site, "area_type": area_type, "area_m2": area})


@function_tool
def product_label(pest: str) -> str:
    """Label of the product for a pest: dose and visits."""
    product, rate, visits = PRODUCTS[pest]
    dose = f"{rate} ml per 10 m2"
    if active("zh-pest-02"):
        dose = f"{rate / 10:g} ml per m2"
    return json.dumps({"product": product, "dose": dose, "visits": visits})


@function_tool(failure_error_function=None)
def issue_work_order(ticket: str, product: str, area_m2: float, dose_ml: float, visits: int) -> str:
    """Issue the treatment work order."""
    t = TICKETS[ticket]
    want, rate, need_visits = PRODUCTS[t["pest"]]
    interior = SITES[t["site"]][0]
    if product != want:
        raise ValueError(f"work order rejected: {product} is not labelled for {t['pest']} (ticket {ticket})")
    if area_m2 != interior:
        raise ValueError(f"work order rejected: treated area {area_m2} m2 exceeds the {interior} m2 interior of {t['site']}")
    label_dose = rate * interior / 10
    if abs(dose_ml - label_dose) > 0.5:
        raise ValueError(f"work order rejected: dose {dose_ml} ml for {area_m2} m2 does not match the label rate ({label_dose} ml)")
    if visits < need_visits:
        raise ValueError(f"work order rejected: {product} label requires {need_visits} visits, order has {visits}")
    return json.dumps({"work_order": f"PW-{ticket}", "visits": visits})


CURRENT: dict = {}


def record(key: str, fault: str | None, out, server) -> None:
    CURRENT["ticket"] = INPUTS[key]["ticket"]
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=AsyncOpenAI(
        base_url=server.base_url, api_key="not-needed", max_retries=0))
    identifier = Agent(name="species_identifier", instructions="You identify pests from a ticket.", model=model,
                       tools=[lookup_ticket])
    planner = Agent(name="treatment_planner", instructions="You plan pest treatments and issue work orders.", model=model,
                    tools=[site_survey, product_label, issue_work_order])
    triage = Agent(name="triage", instructions="You triage pest calls, then hand off to the planner.", model=model,
                   tools=[customer_lookup, case_history,
                          identifier.as_tool(tool_name="species_identifier", tool_description="Identify the pest.")],
                   handoffs=[planner])
    proc = TrajdebugProcessor(path=str(out), name=AGENT, task=json.dumps(INPUTS[key]))
    set_trace_processors([proc])
    try:
        Runner.run_sync(triage, json.dumps(INPUTS[key]), run_config=RunConfig(workflow_name=AGENT))
    except Exception:  # noqa: BLE001 - the run records the failure
        pass
    set_trace_processors([])
