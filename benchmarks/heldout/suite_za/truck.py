"""Food-truck permits (openai_agents route): an intake agent hands off to a permit clerk that files a street-trading permit."""
from __future__ import annotations

import asyncio
import json

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from trajdebug.integrations.openai_agents import TrajdebugProcessor

from .kit import active

AGENT = "food-truck-permit-desk"
ROUTE = "openai_agents"

PITCHES = {"P-12": {"zone": "Riverside", "street": "Quay Walk"}, "P-30": {"zone": "Old Town", "street": "Mint Row"},
           "P-07": {"zone": "Riverside", "street": "Mill Steps"}, "P-44": {"zone": "Parkside", "street": "Lime Ave"}}
VENDORS = {"V-31": {"cert": "FC-1187", "home_zone": "Old Town"}, "V-08": {"cert": "FC-0942", "home_zone": "Parkside"},
           "V-52": {"cert": "FC-2203", "home_zone": "Riverside"}, "V-19": {"cert": "FC-1550", "home_zone": "Old Town"},
           "V-77": {"cert": "FC-3012", "home_zone": "Parkside"}}
RULES = {2026: {"Riverside": "22:00", "Old Town": "21:00", "Parkside": "20:00"},
         2024: {"Riverside": "23:00", "Old Town": "23:00", "Parkside": "21:00"}}
RATE = {"Riverside": 60.0, "Old Town": 50.0, "Parkside": 40.0}
INPUTS = {
    "main": {"vendor": "V-31", "pitch": "P-12", "days": 3, "year": 2026},
    "ref1": {"vendor": "V-08", "pitch": "P-44", "days": 2, "year": 2026},
    "ref2": {"vendor": "V-52", "pitch": "P-30", "days": 4, "year": 2026},
    "ref3": {"vendor": "V-19", "pitch": "P-07", "days": 1, "year": 2026},
    "ref4": {"vendor": "V-77", "pitch": "P-12", "days": 5, "year": 2026},
}

FAULTS = {
    "truck_route": dict(kind="wrong_routing", root=("generation gpt-4o-mini", 1), failure=("submit_permit", 1), hops=3,
                        description="the intake model hands a first-time application to the renewal clerk, which "
                                    "files a renewal the permit office refuses."),
    "truck_hall": dict(kind="hallucinated_value", root=("generation gpt-4o-mini", 6), failure=("submit_permit", 1),
                       hops=1, description="the clerk model fills the fire certificate with a number no tool "
                                           "returned, and the permit office has no such certificate on file."),
    "truck_args": dict(kind="wrong_tool_args", root=("generation gpt-4o-mini", 5), failure=("submit_permit", 1),
                       hops=3, description="the clerk model prices the fee for the vendor's home zone instead of "
                                           "the pitch's zone, so the fee does not match the pitch rate."),
    "truck_stale": dict(kind="stale_data", root=("zoning_rules", 1), failure=("submit_permit", 1), hops=2,
                        description="zoning_rules serves the 2024 rulebook, so the clerk requests trading hours "
                                    "past the current curfew."),
    "truck_ignore": dict(kind="tool_ignores_argument", root=("fee_calc", 1), failure=("submit_permit", 1), hops=2,
                         description="fee_calc ignores the number of days and prices one day, so the fee does not "
                                     "cover the trading days requested."),
}


def _tool_outputs(messages):
    out = []
    for m in messages:
        if m.get("role") == "tool":
            try:
                out.append(json.loads(m["content"]))
            except (ValueError, TypeError):
                out.append({"text": m.get("content")})
    return out


def _request(messages):
    for m in messages:
        if m.get("role") == "user":
            return json.loads(m["content"])
    return {}


def policy(messages, tools):
    system = messages[0]["content"]
    req = _request(messages)
    outs = [o for o in _tool_outputs(messages) if "assistant" not in o]
    if system.startswith("Intake"):
        return [("transfer_to_renewal_clerk" if active("truck_route") else "transfer_to_new_permit_clerk", {})]
    if system.startswith("Renewal"):
        if not outs:
            return [("lookup_permit", {"vendor": req["vendor"]})]
        if len(outs) == 1:
            return [("submit_permit", {"vendor": req["vendor"], "pitch": req["pitch"], "kind": "renewal",
                                       "permit_no": outs[0].get("permit_no") or "", "days": req["days"],
                                       "hours_until": "21:00", "fire_cert": "", "fee_eur": 0.0})]
        return "Renewal filed."
    n = len(outs)
    if n == 0:
        return [("lookup_pitch", {"pitch": req["pitch"]})]
    if n == 1:
        return [("check_fire_cert", {"vendor": req["vendor"]})]
    pitch, cert = outs[0], outs[1]
    if n == 2:
        return [("zoning_rules", {"zone": pitch["zone"], "year": req["year"]})]
    if n == 3:
        zone = cert["home_zone"] if active("truck_args") else pitch["zone"]
        return [("fee_calc", {"zone": zone, "days": req["days"]})]
    if n == 4:
        curfew = outs[2]["curfew"]
        return [("submit_permit", {"vendor": req["vendor"], "pitch": req["pitch"], "kind": "new", "permit_no": "",
                                   "days": req["days"], "hours_until": curfew,
                                   "fire_cert": "FC-2291" if active("truck_hall") else cert["cert"],
                                   "fee_eur": outs[3]["fee_eur"]})]
    return f"Permit filed: {outs[4].get('permit_no')}"


@function_tool
def lookup_pitch(pitch: str) -> str:
    """Look up a trading pitch: its zone and street."""
    return json.dumps({"pitch": pitch, **PITCHES[pitch]})


@function_tool
def check_fire_cert(vendor: str) -> str:
    """Check the vendor's gas and fire safety certificate."""
    return json.dumps({"vendor": vendor, **VENDORS[vendor], "valid_until": "2027-03-31"})


@function_tool
def zoning_rules(zone: str, year: int) -> str:
    """Street-trading rules for a zone in a given year."""
    book = 2024 if active("truck_stale") else year
    return json.dumps({"zone": zone, "rulebook": book, "curfew": RULES[book][zone], "max_days": 7})


@function_tool
def fee_calc(zone: str, days: int) -> str:
    """Permit fee for trading in a zone for a number of days."""
    d = 1 if active("truck_ignore") else days
    return json.dumps({"zone": zone, "days": d, "fee_eur": RATE[zone] * d})


@function_tool
def lookup_permit(vendor: str) -> str:
    """Find the vendor's current street-trading permit."""
    return json.dumps({"vendor": vendor, "permit_no": None, "note": "no permit on record"})


class PermitRejected(Exception):
    pass


@function_tool(failure_error_function=None)
def submit_permit(vendor: str, pitch: str, kind: str, permit_no: str, days: int, hours_until: str,
                  fire_cert: str, fee_eur: float) -> str:
    """File the street-trading permit with the council."""
    zone = PITCHES[pitch]["zone"]
    if kind == "renewal" and not permit_no:
        raise PermitRejected(f'HTTP 422 {{"error": "renewal requires an existing permit number; vendor {vendor} '
                             f'holds none"}}')
    if fire_cert != VENDORS[vendor]["cert"]:
        raise PermitRejected(f'HTTP 422 {{"error": "fire certificate {fire_cert} not on file for vendor {vendor}"}}')
    if hours_until > RULES[2026][zone]:
        raise PermitRejected(f'HTTP 422 {{"error": "trading until {hours_until} breaks the {zone} curfew of '
                             f'{RULES[2026][zone]}"}}')
    due = RATE[zone] * days
    if abs(fee_eur - due) > 0.001:
        raise PermitRejected(f'HTTP 402 {{"error": "fee {fee_eur:.2f} EUR does not match {days} days at '
                             f'{zone} rate ({due:.2f} EUR)"}}')
    return json.dumps({"permit_no": f"STP-{vendor[2:]}{pitch[2:]}", "status": "issued"})


def record(base_url: str, inp: dict, path: str) -> None:
    client = AsyncOpenAI(base_url=base_url, api_key="sk-local-test", max_retries=0)
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    clerk = Agent(name="new_permit_clerk", model=model,
                  instructions="New permit clerk: check the pitch, certificate, zoning and fee, then file.",
                  tools=[lookup_pitch, check_fire_cert, zoning_rules, fee_calc, submit_permit])
    renew = Agent(name="renewal_clerk", model=model,
                  instructions="Renewal clerk: find the current permit and file its renewal.",
                  tools=[lookup_permit, submit_permit])
    intake = Agent(name="intake_desk", model=model, handoffs=[clerk, renew],
                   instructions="Intake desk: read the application and hand it to the right clerk.")
    set_trace_processors([TrajdebugProcessor(path=path, name=AGENT, task=f"permit for {inp['vendor']} at {inp['pitch']}")])
    try:
        asyncio.run(Runner.run(intake, json.dumps(inp), max_turns=12, run_config=RunConfig(workflow_name=AGENT)))
    except Exception:
        pass
