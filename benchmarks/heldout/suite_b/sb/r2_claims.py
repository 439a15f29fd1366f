"""Claims desk (OpenAI Agents SDK with handoffs and an agent used as a tool, insurance claims).

An intake agent routes a claim to the motor or the property adjuster.  The
adjuster reads the claim, the policy in force and the damage figure, asks a
records clerk (a sub-agent exposed as a tool) who the payee is, and issues the
payment.  The payments service re-checks coverage, payee and amount.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents import Agent, function_tool

from sb.agkit import run_agent
from sb.fakellm import Conversation, Reply, call, say
from sb.harness import Case, failing, faulty, tick


AGENT = "claims-desk"
ROUTE = "openai-agents"
DOMAIN = "insurance claims"

CUSTOMERS = {
    "CUS-3391": {"name": "Javier Alvarez", "policies": ["HO-31007"]},
    "CUS-3319": {"name": "Julia Alvarez", "policies": ["AU-55012"]},
    "CUS-2045": {"name": "Ken Watanabe", "policies": ["AU-61200"]},
    "CUS-5502": {"name": "Priya Raman", "policies": ["AU-70331"]},
    "CUS-9034": {"name": "Liam O'Connor", "policies": ["AU-80112"]},
    "CUS-7781": {"name": "Olu Adeyemi", "policies": ["HO-20418"]},
    "CUS-6610": {"name": "Mei Chen", "policies": ["HO-44120"]},
    "CUS-4420": {"name": "Sara Lind", "policies": ["AU-90210"]},
    "CUS-1188": {"name": "Diego Costa", "policies": ["AU-33001", "HO-50077"]},
}
POLICIES = {
    "AU-55012": {
        "holder": "CUS-3319",
        "line": "motor",
        "coverages": {"collision": {"limit": 25000, "deductible": 500}},
    },
    "AU-61200": {
        "holder": "CUS-2045",
        "line": "motor",
        "coverages": {"collision": {"limit": 40000, "deductible": 250}},
    },
    "AU-70331": {
        "holder": "CUS-5502",
        "line": "motor",
        "coverages": {"collision": {"limit": 30000, "deductible": 750}},
    },
    "AU-80112": {
        "holder": "CUS-9034",
        "line": "motor",
        "coverages": {"collision": {"limit": 20000, "deductible": 400}},
    },
    "AU-90210": {
        "holder": "CUS-4420",
        "line": "motor",
        "coverages": {"collision": {"limit": 35000, "deductible": 500}},
    },
    "AU-33001": {
        "holder": "CUS-1188",
        "line": "motor",
        "coverages": {"collision": {"limit": 15000, "deductible": 300}},
    },
    "HO-31007": {
        "holder": "CUS-3391",
        "line": "home",
        "coverages": {"dwelling": {"limit": 250000, "deductible": 1000}},
    },
    "HO-20418": {
        "holder": "CUS-7781",
        "line": "home",
        "coverages": {"dwelling": {"limit": 300000, "deductible": 1500}},
    },
    "HO-44120": {
        "holder": "CUS-6610",
        "line": "home",
        "coverages": {"dwelling": {"limit": 180000, "deductible": 2000}},
    },
    "HO-50077": {
        "holder": "CUS-1188",
        "line": "home",
        "coverages": {"dwelling": {"limit": 220000, "deductible": 1000}},
    },
}
# The policy cache keeps the term before the last renewal for a few policies.
PRIOR_TERM = {
    "AU-61200": {"collision": {"limit": 40000, "deductible": 1000}},
    "HO-44120": {"dwelling": {"limit": 150000, "deductible": 5000}},
}
CLAIMS = {
    "CLM-24-1001": {
        "policy_no": "AU-55012",
        "line": "motor",
        "claimant": "J. Alvarez",
        "amount": 4126.50,
        "story": "hit a bollard in a car park",
    },
    "CLM-24-1002": {
        "policy_no": "AU-61200",
        "line": "motor",
        "claimant": "K. Watanabe",
        "amount": 7310.00,
        "story": "side-swiped on the ring road",
    },
    "CLM-24-1003": {
        "policy_no": "AU-70331",
        "line": "motor",
        "claimant": "P. Raman",
        "amount": 2890.75,
        "story": "hail dents on bonnet and roof",
    },
    "CLM-24-1004": {
        "policy_no": "AU-80112",
        "line": "motor",
        "claimant": "L. O'Connor",
        "amount": 3400.00,
        "story": "reversed into the garage door pillar, rear bumper and tail light smashed",
    },
    "CLM-24-1010": {
        "policy_no": "HO-20418",
        "line": "home",
        "claimant": "O. Adeyemi",
        "amount": 18250.00,
        "story": "burst pipe flooded the kitchen",
    },
    "CLM-24-1011": {
        "policy_no": "AU-90210",
        "line": "motor",
        "claimant": "S. Lind",
        "amount": 5120.40,
        "story": "rear-ended at traffic lights",
    },
    "CLM-24-1012": {
        "policy_no": "HO-44120",
        "line": "home",
        "claimant": "M. Chen",
        "amount": 9400.00,
        "story": "storm tore off roof tiles",
    },
    "CLM-24-1013": {
        "policy_no": "AU-33001",
        "line": "motor",
        "claimant": "D. Costa",
        "amount": 1675.25,
        "story": "cracked windscreen from gravel",
    },
    "CLM-24-1014": {
        "policy_no": "HO-31007",
        "line": "home",
        "claimant": "J. Alvarez",
        "amount": 6300.00,
        "story": "kitchen fire damaged cabinets",
    },
    "CLM-24-1015": {
        "policy_no": "HO-44120",
        "line": "home",
        "claimant": "M. Chen",
        "amount": 12800.00,
        "story": "fallen tree crushed the garden wall",
    },
}
LINE_COVERAGE = {"motor": "collision", "home": "dwelling"}


@function_tool(failure_error_function=None)
def get_claim(claim_id: str) -> str:
    """The claim file: policy number, line of business, claimant as written on the form, and the story."""
    tick("get_claim")
    c = CLAIMS[claim_id]
    return json.dumps(
        {
            "claim_id": claim_id,
            "policy_no": c["policy_no"],
            "line": c["line"],
            "claimant": c["claimant"],
            "story": c["story"],
        }
    )


@function_tool(failure_error_function=None)
def get_policy(policy_no: str) -> str:
    """The policy in force: holder, line and coverages with limits and deductibles."""
    tick("get_policy")
    p = POLICIES[policy_no]
    cov = p["coverages"]
    if faulty("policy_prior_term", "get_policy"):
        cov = PRIOR_TERM[policy_no]  # cache entry from before the renewal
    return json.dumps({"policy_no": policy_no, "holder": p["holder"], "line": p["line"], "coverages": cov})


@function_tool(failure_error_function=None)
def damage_estimate(claim_id: str) -> str:
    """The approved repair estimate of the body shop network for a motor claim, in US dollars."""
    tick("damage_estimate")
    amount = CLAIMS[claim_id]["amount"]
    if faulty("estimate_in_cents", "damage_estimate"):
        amount = round(amount * 100)  # the shop API switched to integer cents; the field name stayed
    return json.dumps({"claim_id": claim_id, "estimate_usd": amount, "shop": "AutoFix Partners"})


@function_tool(failure_error_function=None)
def inspection_report(claim_id: str) -> str:
    """The loss adjuster's inspection report for a property claim, with the agreed repair cost in US dollars."""
    tick("inspection_report")
    c = CLAIMS[claim_id]
    cost = c["amount"] if c["line"] == "home" else 0.0
    return json.dumps({"claim_id": claim_id, "repair_cost_usd": cost, "inspected": c["line"] == "home"})


@function_tool(failure_error_function=None)
def find_customers(name: str) -> str:
    """Customers whose surname matches; each with id, full name and policies."""
    tick("find_customers")
    surname = name.split()[-1].lower()
    rows = [{"customer_id": k, **v} for k, v in CUSTOMERS.items() if v["name"].split()[-1].lower() == surname]
    return json.dumps({"query": name, "matches": rows})


@function_tool(failure_error_function=None)
def issue_payment(claim_id: str, payee_id: str, coverage: str, amount: float, deductible: float) -> str:
    """Issue a claim payment from a coverage, net of the deductible applied."""
    tick("issue_payment")
    c = CLAIMS[claim_id]
    p = POLICIES[c["policy_no"]]
    if coverage not in p["coverages"]:
        failing("issue_payment")
        raise ValueError(
            f"{c['policy_no']} is a {p['line']} policy with no {coverage} coverage; cannot pay {claim_id} from it"
        )
    if payee_id != p["holder"]:
        failing("issue_payment")
        raise PermissionError(
            f"payee {payee_id} is not the holder of {c['policy_no']} (holder {p['holder']})"
        )
    cov = p["coverages"][coverage]
    if deductible != cov["deductible"]:
        failing("issue_payment")
        raise ValueError(
            f"deductible {deductible:.2f} applied, but {c['policy_no']} carries {cov['deductible']:.2f} this term"
        )
    expected = round(min(c["amount"] - cov["deductible"], cov["limit"]), 2)
    if abs(amount - expected) > 0.01:
        failing("issue_payment")
        raise ValueError(
            f"payment {amount:,.2f} for {claim_id} does not reconcile with the approved loss (expected {expected:,.2f})"
        )
    return json.dumps({"payment_id": f"PAY-{claim_id[-4:]}", "amount": amount, "payee_id": payee_id})


def build(model: Any) -> Agent[Any]:
    clerk = Agent(
        name="records_clerk",
        instructions="You are the records clerk. Identify the customer who holds the given policy and answer "
        'with JSON {"customer_id": ..., "name": ...}.',
        tools=[find_customers],
        model=model,
    )
    lookup = clerk.as_tool(
        tool_name="lookup_claimant", tool_description="Ask the records clerk who the claimant is."
    )
    motor = Agent(
        name="motor_adjuster",
        instructions="You settle motor claims: read the claim, the policy, the body shop estimate, identify the "
        "payee with the records clerk, then pay min(estimate - deductible, limit) from collision coverage.",
        tools=[get_claim, get_policy, damage_estimate, lookup, issue_payment],
        model=model,
    )
    home = Agent(
        name="property_adjuster",
        instructions="You settle home claims: read the claim, the policy, the inspection report, identify the "
        "payee with the records clerk, then pay min(repair cost - deductible, limit) from dwelling coverage.",
        tools=[get_claim, get_policy, inspection_report, lookup, issue_payment],
        model=model,
    )
    return Agent(
        name="claims_intake",
        instructions="You route new claims: motor vehicle damage to the motor adjuster, damage to homes and "
        "buildings to the property adjuster.",
        handoffs=[motor, home],
        model=model,
    )


def policy(conv: Conversation) -> Reply:
    t = conv.task
    if "route new claims" in conv.system:
        motor = CLAIMS[t["claim_id"]]["line"] == "motor"
        if conv.fault == "route_garage_to_property":
            return call("transfer_to_property_adjuster", faulty=True)
        return call("transfer_to_motor_adjuster" if motor else "transfer_to_property_adjuster")
    if "You are the records clerk" in conv.system:
        if conv.called("find_customers") == 0:
            name = conv.user.split("claimant ", 1)[1].split(" on policy", 1)[0]
            return call("find_customers", name=name)
        policy_no = conv.user.split("on policy ", 1)[1].split()[0].rstrip(".?")
        matches = conv.result("find_customers")["matches"]
        if conv.fault == "clerk_first_match" and len(matches) > 1:
            pick = matches[0]
            return say(json.dumps({"customer_id": pick["customer_id"], "name": pick["name"]}), faulty=True)
        pick = next(m for m in matches if policy_no in m["policies"])
        return say(json.dumps({"customer_id": pick["customer_id"], "name": pick["name"]}))
    home = "settle home claims" in conv.system
    if conv.called("get_claim") == 0:
        return call("get_claim", claim_id=t["claim_id"])
    claim = conv.result("get_claim")
    if conv.called("get_policy") == 0:
        return call("get_policy", policy_no=claim["policy_no"])
    pol = conv.result("get_policy")
    figure_tool = "inspection_report" if home else "damage_estimate"
    if conv.called(figure_tool) == 0:
        return call(figure_tool, claim_id=t["claim_id"])
    if conv.called("lookup_claimant") == 0:
        return call(
            "lookup_claimant", input=f"Who is claimant {claim['claimant']} on policy {claim['policy_no']}?"
        )
    if conv.called("issue_payment") == 0:
        fig = conv.result(figure_tool)
        loss = fig["repair_cost_usd"] if home else fig["estimate_usd"]
        coverage = "dwelling" if home else "collision"
        cov = pol["coverages"].get(coverage, {"limit": 0, "deductible": 0})
        payee = conv.result("lookup_claimant")["customer_id"]
        return call(
            "issue_payment",
            claim_id=t["claim_id"],
            payee_id=payee,
            coverage=coverage,
            amount=round(min(loss - cov["deductible"], cov["limit"]), 2),
            deductible=cov["deductible"],
        )
    pay = conv.result("issue_payment")
    return say(f"Paid {pay['amount']:,.2f} to {pay['payee_id']} ({pay['payment_id']}).")


def run(task: dict[str, Any], path: Path) -> Any:
    c = CLAIMS[task["claim_id"]]
    text = f"New claim {task['claim_id']} from {c['claimant']}: {c['story']}. Please settle it."
    return run_agent(build, text, path, workflow="claims-desk", metadata={"claim": task["claim_id"]})


PASSING = [
    {"claim_id": c} for c in ("CLM-24-1010", "CLM-24-1011", "CLM-24-1012", "CLM-24-1013", "CLM-24-1014")
]

CASES = [
    Case(
        id="claims-garage-routed-to-property",
        task={"claim_id": "CLM-24-1004"},
        fault="route_garage_to_property",
        fault_kind="wrong_routing",
        description="The intake model reads 'garage door' and hands a motor claim to the property adjuster, who "
        "finds no inspection and pays from dwelling coverage that the motor policy does not have; the payments "
        "service refuses.",
        root="llm",
        evidence="transfer_to_property_adjuster",
        path=["llm", "get_policy", "llm", "issue_payment"],
        failure="issue_payment",
    ),
    Case(
        id="claims-estimate-in-cents",
        task={"claim_id": "CLM-24-1003"},
        fault="estimate_in_cents",
        fault_kind="unit_scale_error",
        description="damage_estimate returns integer cents under the estimate_usd field (289075 for $2,890.75). "
        "The adjuster caps the payout at the collision limit and the payments service finds it does not "
        "reconcile with the approved loss.",
        root="damage_estimate",
        evidence="289075",
        path=["damage_estimate", "llm", "issue_payment"],
        failure="issue_payment",
    ),
    Case(
        id="claims-prior-term-deductible",
        task={"claim_id": "CLM-24-1002"},
        fault="policy_prior_term",
        fault_kind="stale_data",
        description="get_policy answers from a cache holding the term before renewal (deductible 1,000 instead "
        "of 250); the adjuster nets the old deductible and the payments service rejects it.",
        root="get_policy",
        evidence="1000",
        path=["get_policy", "llm", "issue_payment"],
        failure="issue_payment",
    ),
    Case(
        id="claims-clerk-wrong-alvarez",
        task={"claim_id": "CLM-24-1001"},
        fault="clerk_first_match",
        fault_kind="wrong_entity_subagent",
        description="Asked who 'J. Alvarez' on AU-55012 is, the records clerk takes the first surname match, "
        "Javier Alvarez (CUS-3391), instead of Julia, the policy holder; the adjuster pays him and the payments "
        "service rejects a payee who does not hold the policy.",
        root="llm",
        evidence="CUS-3391",
        path=["llm", "llm", "issue_payment"],
        failure="issue_payment",
    ),
    Case(
        id="claims-home-prior-term",
        task={"claim_id": "CLM-24-1015"},
        fault="policy_prior_term",
        fault_kind="stale_data",
        description="For a home claim, get_policy serves the pre-renewal term of HO-44120 (deductible 5,000, limit "
        "150,000); the property adjuster nets 5,000 and the payment is rejected against the term in force.",
        root="get_policy",
        evidence="5000",
        path=["get_policy", "llm", "issue_payment"],
        failure="issue_payment",
    ),
]
