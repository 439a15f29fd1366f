"""Insurance claims triage (route: openai_agents): triage a batch of claims, adjust each, close the batch.

Per claim (one ``Runner.run`` each, all in one trace): a triage agent reads the claim and its policy
and hands off to the property or the motor adjuster; the adjuster estimates the damage and reserves
a payout against the policy.  A batch supervisor then screens the batch and submits it to the claims
ledger, which reconciles every reserve with the first notice of loss and the loss assessor's report.
"""

from __future__ import annotations

import json
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
    record_agents_sdk,
    system_of,
    tool_results,
)

from trajdebug.testing import Reply, tool_call


NAME = "claims-triage"
RATES = {"storm": 85.0, "fire": 140.0, "flood": 95.0, "hail": 60.0}

# claim -> first notice of loss; area as measured by the loss assessor
CLAIMS: dict[str, dict[str, Any]] = {
    "CL-31": {"policy": "HP-31", "line": "home", "peril": "hail", "area_m2": 40},
    "CL-32": {"policy": "HP-32", "line": "home", "peril": "fire", "area_m2": 65},
    "CL-33": {"policy": "HP-33", "line": "home", "peril": "flood", "area_m2": 120},
    "CL-41": {"policy": "MP-41", "line": "motor", "vehicle": "VW Golf 2019", "damage_eur": 3900.0},
    "CL-42": {"policy": "HP-42", "line": "home", "peril": "hail", "area_m2": 80},
    "CL-51": {"policy": "HP-51", "line": "home", "peril": "fire", "area_m2": 22},
    "CL-52": {"policy": "MP-52", "line": "motor", "vehicle": "Skoda Octavia 2021", "damage_eur": 2650.0},
    "CL-61": {"policy": "HP-61", "line": "home", "peril": "storm", "area_m2": 140},
    "CL-71": {"policy": "MP-71", "line": "motor", "vehicle": "Toyota Yaris 2017", "damage_eur": 1480.0},
    "CL-72": {"policy": "HP-72", "line": "home", "peril": "flood", "area_m2": 55},
}
HOME = ["storm", "fire", "flood", "hail"]
POLICIES = {c["policy"]: {"coverages": HOME if c["line"] == "home" else ["collision"], "limit": 30000.0}
            for c in CLAIMS.values()}
_ledger: dict[str, dict[str, Any]] = {}


class LedgerRejected(RuntimeError):
    """The claims ledger refused a reserve or a batch."""


@function_tool
def get_claim(claim_id: str) -> str:
    """The first notice of loss of a claim."""
    return json.dumps({"claim_id": claim_id, **CLAIMS[claim_id]})


@function_tool
def get_policy(policy_id: str) -> str:
    """A policy's coverages and limit."""
    policy = POLICIES[policy_id]
    if active("claims-policy-cache") and policy_id == "HP-33":
        policy = {**policy, "limit": 10000.0}  # the policy service's cached copy from before the upgrade
    return json.dumps({"policy_id": policy_id, **policy})


@function_tool
def estimate_damage(claim_id: str, peril: str, area_m2: float) -> str:
    """Estimate a property loss from the peril and the damaged area."""
    area = 50.0 if active("claims-area-default") and claim_id == "CL-33" else area_m2
    amount = round(RATES[peril] * area, 2)
    _ledger.setdefault(claim_id, {}).update(estimate=amount, peril=peril, area_m2=area)
    return json.dumps({"claim_id": claim_id, "peril": peril, "area_m2": area, "estimate_eur": amount})


@function_tool
def estimate_vehicle_damage(claim_id: str) -> str:
    """Estimate a motor loss from the garage's quote."""
    amount = float(CLAIMS[claim_id].get("damage_eur", 0.0))
    _ledger.setdefault(claim_id, {}).update(estimate=amount, peril="collision")
    return json.dumps({"claim_id": claim_id, "estimate_eur": amount})


@function_tool(failure_error_function=None)
def reserve_payout(claim_id: str, policy_id: str, coverage: str, amount: float) -> str:
    """Reserve a payout for a claim against its policy."""
    policy = POLICIES[policy_id]
    if coverage not in policy["coverages"]:
        raise LedgerRejected(f"policy {policy_id} has no {coverage} coverage")
    if amount > policy["limit"]:
        raise LedgerRejected(f"reserve {amount:.2f} exceeds the limit of policy {policy_id}")
    _ledger.setdefault(claim_id, {}).update(reserve=amount)
    return json.dumps({"claim_id": claim_id, "reserve_eur": amount, "status": "reserved"})


@function_tool
def fraud_screen(batch_id: str) -> str:
    """Screen a batch's claims for fraud indicators."""
    return json.dumps({"batch_id": batch_id, "flags": 0, "screened": len(_ledger)})


@function_tool(failure_error_function=None)
def submit_batch(batch_id: str) -> str:
    """Submit the batch's reserves to the claims ledger."""
    for claim_id, entry in sorted(_ledger.items()):
        fnol = CLAIMS[claim_id]
        if fnol["line"] == "home" and entry.get("peril") != fnol["peril"]:
            raise LedgerRejected(f"{claim_id}: estimate made for {entry.get('peril')}, loss notified as {fnol['peril']}")
        if fnol["line"] == "home" and entry.get("area_m2") != fnol["area_m2"]:
            raise LedgerRejected(f"{claim_id}: estimate covers {entry.get('area_m2')} m2, the assessor measured "
                                 f"{fnol['area_m2']} m2")
        if abs(entry.get("reserve", 0.0) - entry.get("estimate", -1.0)) > 0.005:
            raise LedgerRejected(f"{claim_id}: reserve {entry.get('reserve', 0.0):.2f} differs from the adjuster's "
                                 f"estimate {entry.get('estimate', 0.0):.2f}")
    return json.dumps({"batch_id": batch_id, "claims": len(_ledger), "status": "posted"})


def build(model: Any) -> tuple[SdkAgent[Any], SdkAgent[Any]]:
    prop = SdkAgent(name="property_adjuster", instructions="You adjust property claims: estimate, then reserve.",
                    tools=[estimate_damage, reserve_payout], model=model)
    motor = SdkAgent(name="motor_adjuster", instructions="You adjust motor claims: estimate, then reserve.",
                     tools=[estimate_vehicle_damage, reserve_payout], model=model)
    triage = SdkAgent(name="triage", instructions="You triage insurance claims: read claim and policy, then hand off.",
                      tools=[get_claim, get_policy], handoffs=[prop, motor], model=model)
    supervisor = SdkAgent(name="batch_supervisor", instructions="You close claim batches: screen, then submit.",
                          tools=[fraud_screen, submit_batch], model=model)
    return triage, supervisor


def _triage(request: Any, done: dict[str, list[Any]]) -> Reply:
    claim_id = first_user(request).split()[-1]
    if "get_claim" not in done:
        return Reply(tool_calls=(tool_call("get_claim", {"claim_id": claim_id}),))
    claim = done["get_claim"][-1]
    if "get_policy" not in done:
        return Reply(tool_calls=(tool_call("get_policy", {"policy_id": claim["policy"]}),))
    line = claim["line"]
    if active("claims-motor-handoff") and claim_id == "CL-33":
        line = "motor"
    target = "transfer_to_property_adjuster" if line == "home" else "transfer_to_motor_adjuster"
    return Reply(tool_calls=(tool_call(target, {}),))


def _adjust(request: Any, done: dict[str, list[Any]]) -> Reply | str:
    claim = done["get_claim"][-1]
    estimates = done.get("estimate_damage") or done.get("estimate_vehicle_damage")
    if not estimates:
        if "motor" in system_of(request):
            return Reply(tool_calls=(tool_call("estimate_vehicle_damage", {"claim_id": claim["claim_id"]}),))
        peril = "storm" if active("claims-peril-arg") and claim["claim_id"] == "CL-33" else claim["peril"]
        args = {"claim_id": claim["claim_id"], "peril": peril, "area_m2": claim["area_m2"]}
        return Reply(tool_calls=(tool_call("estimate_damage", args),))
    if "reserve_payout" not in done:
        amount = min(estimates[-1]["estimate_eur"], done["get_policy"][-1]["limit"])
        if active("claims-reserve-amount") and claim["claim_id"] == "CL-33":
            amount = 14100.0  # the model restates the estimate of 11400.00 with two digits swapped
        coverage = "collision" if "motor" in system_of(request) else claim["peril"]
        args = {"claim_id": claim["claim_id"], "policy_id": claim["policy"], "coverage": coverage, "amount": amount}
        return Reply(tool_calls=(tool_call("reserve_payout", args),))
    return f"Reserved {done['reserve_payout'][-1]['reserve_eur']:.2f} EUR for {claim['claim_id']}."


def policy(request: Any) -> Reply | str:
    system, done = system_of(request), tool_results(request)
    if system.startswith("You triage"):
        return _triage(request, done)
    if system.startswith("You adjust"):
        return _adjust(request, done)
    if system.startswith("You close"):
        batch_id = first_user(request).split()[-1]
        if "fraud_screen" not in done:
            return Reply(tool_calls=(tool_call("fraud_screen", {"batch_id": batch_id}),))
        if "submit_batch" not in done:
            return Reply(tool_calls=(tool_call("submit_batch", {"batch_id": batch_id}),))
        return f"Batch {batch_id} posted."
    raise ModelReplyError(system)


def record(server: Any, item: dict[str, Any], path: Path) -> None:
    server.use(policy)
    _ledger.clear()

    async def main() -> None:
        model, client = chat_model(server)
        triage, supervisor = build(model)
        try:
            for claim_id in item["claims"]:
                await Runner.run(triage, f"New claim {claim_id}")
            await Runner.run(supervisor, f"Close batch {item['batch']}")
        finally:
            await client.close()

    record_agents_sdk(NAME, path, f"triage batch {item['batch']} ({len(item['claims'])} claims)", main)


AGENT = Agent(
    name=NAME,
    route="openai_agents",
    domain="insurance claims triage",
    record=record,
    failing={"batch": "B-2611-03", "claims": ["CL-31", "CL-32", "CL-33"]},
    references=(
        {"batch": "B-2611-04", "claims": ["CL-41", "CL-42"]},
        {"batch": "B-2611-05", "claims": ["CL-51", "CL-52"]},
        {"batch": "B-2611-06", "claims": ["CL-61"]},
        {"batch": "B-2611-07", "claims": ["CL-71", "CL-72"]},
    ),
    faults=(
        Fault("claims-peril-arg", "wrong_tool_args", "generation fake-model", '"peril": "storm"',
              "submit_batch",
              "The property adjuster calls estimate_damage for a flood claim with peril \"storm\", and the "
              "ledger finds the estimate does not match the notified loss."),
        Fault("claims-reserve-amount", "hallucinated_value", "generation fake-model", "14100", "submit_batch",
              "The adjuster model reserves 14100 EUR, a figure no tool returned (the estimate was 11400), and "
              "the ledger's reconciliation refuses the batch."),
        Fault("claims-area-default", "tool_ignores_argument", "estimate_damage", '"area_m2": 50.0',
              "submit_batch",
              "estimate_damage ignores the area_m2 it is given and estimates 50 m2, which the ledger finds "
              "against the assessor's 120 m2."),
        Fault("claims-motor-handoff", "wrong_routing", "generation fake-model", "transfer_to_motor_adjuster", "reserve_payout",
              "The triage model hands a home flood claim to the motor adjuster, whose collision reserve the "
              "policy does not cover."),
        Fault("claims-policy-cache", "stale_data", "get_policy", '"limit": 10000.0', "submit_batch",
              "get_policy serves a cached copy of the policy from before its limit was raised, so the adjuster "
              "caps the reserve below the estimate and the ledger refuses the batch."),
    ),
)
