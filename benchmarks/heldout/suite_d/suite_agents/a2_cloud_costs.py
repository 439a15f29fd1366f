"""cloud-cost-advisor: a monthly FinOps review on the OpenAI Agents SDK.  An orchestrator (Chat Completions)
loops over a team's cloud accounts and asks an account-analyst sub-agent (an agent used as a tool, on the
Responses API) about each one; the analyst reads the billing export and the rightsizing advice and prices
the savings.  The orchestrator opens savings tickets and posts the review to the finance system, which
reconciles it with the billing export."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import Any

from agents import Agent as SDKAgent
from agents import RunConfig, Runner, function_tool, trace
from agents_route import models, record_trace
from suite_common import FAULT, Agent, Case, Loc, called_tools, messages_of, results_of, system_text, text_of
from typing_extensions import TypedDict

from trajdebug.testing import FakeModelServer, Reply, tool_call


NAME = "cloud-cost-advisor"
MODEL = "gpt-4.1-2025-04-14"

TEAMS = {
    "atlas": {"accounts": ["acct-atlas-prod", "acct-atlas-dev"], "budget_usd": 48000},
    "borealis": {"accounts": ["acct-bor-prod", "acct-bor-data"], "budget_usd": 61000},
    "cygnus": {"accounts": ["acct-cyg-web", "acct-cyg-batch"], "budget_usd": 30000},
    "draco": {"accounts": ["acct-dra-api", "acct-dra-ml"], "budget_usd": 20000},
    "eridani": {"accounts": ["acct-eri-core"], "budget_usd": 15000},
    "fornax": {"accounts": ["acct-for-web", "acct-for-etl"], "budget_usd": 26000},
    "gemini": {"accounts": ["acct-gem-prod", "acct-gem-stage"], "budget_usd": 40000},
    "hydra": {"accounts": ["acct-hyd-ml", "acct-hyd-api"], "budget_usd": 22000},
    "indus": {"accounts": ["acct-ind-app"], "budget_usd": 9000},
}

BILLING = {  # the billing export, per account and month
    ("acct-atlas-prod", "2025-05"): {"EC2": 18900.0, "RDS": 7400.0, "S3": 2140.75, "Other": 2800.0},
    ("acct-atlas-dev", "2025-05"): {"EC2": 4010.4, "RDS": 1210.0, "Other": 900.0},
    ("acct-bor-prod", "2025-04"): {"EC2": 21050.0, "EKS": 6200.0, "Other": 3330.2},
    ("acct-bor-data", "2025-04"): {"Redshift": 14600.0, "S3": 5210.0, "Glue": 2600.0},
    ("acct-bor-data", "2025-06"): {"Redshift": 6130.0, "S3": 2480.55, "Glue": 1260.0},  # month to date
    ("acct-cyg-web", "2025-05"): {"CloudFront": 3900.0, "EC2": 6100.0, "Other": 850.0},
    ("acct-cyg-batch", "2025-05"): {"EC2": 9800.0, "Batch": 2100.0, "S3": 1330.0},
    ("acct-dra-api", "2025-05"): {"Lambda": 2100.0, "API Gateway": 1650.0, "DynamoDB": 1550.0},
    ("acct-dra-ml", "2025-05"): {"EC2": 7900.0, "S3": 900.0, "SageMaker": 600.0},
    ("acct-eri-core", "2025-05"): {"EC2": 7200.0, "RDS": 3100.0, "Other": 1400.0},
    ("acct-for-web", "2025-04"): {"EC2": 8800.0, "ELB": 1200.0, "Other": 640.0},
    ("acct-for-etl", "2025-04"): {"EMR": 9400.0, "S3": 2750.0},
    ("acct-gem-prod", "2025-05"): {"EC2": 19300.0, "RDS": 8800.0, "Other": 2410.0},
    ("acct-gem-stage", "2025-05"): {"EC2": 4300.0, "RDS": 1900.0},
    ("acct-hyd-ml", "2025-05"): {"EC2": 12600.0, "S3": 1400.0, "SageMaker": 3900.0},
    ("acct-hyd-api", "2025-05"): {"Lambda": 2600.0, "DynamoDB": 1900.0},
    ("acct-ind-app", "2025-05"): {"EC2": 5100.0, "RDS": 2600.0, "Other": 700.0},
}
V2_ACCOUNTS = {"acct-bor-data"}  # moved to the v2 billing API
CURRENT_MONTH = "2025-06"
PAYER = {"acct-atlas-dev": {"account": "acct-atlas-shared", "total_usd": 14880.0, "top_service": "NAT Gateway"}}

RIGHTSIZING = {  # the recommendation engine, live
    "acct-atlas-prod": [{"instance_id": "i-0a7f31c2", "type": "m5.4xlarge", "suggested": "m5.2xlarge", "hourly_delta_usd": 0.384}],
    "acct-bor-prod": [{"instance_id": "i-0b11de90", "type": "c5.9xlarge", "suggested": "c5.4xlarge", "hourly_delta_usd": 0.85}],
    "acct-cyg-batch": [{"instance_id": "i-0c9e4a17", "type": "r5.2xlarge", "suggested": "r5.xlarge", "hourly_delta_usd": 0.252}],
    "acct-dra-ml": [{"instance_id": "i-0d3b88f1", "type": "p3.2xlarge", "suggested": "g5.xlarge", "hourly_delta_usd": 2.054}],
    "acct-eri-core": [{"instance_id": "i-0e20c6aa", "type": "m5.2xlarge", "suggested": "m6g.2xlarge", "hourly_delta_usd": 0.076}],
    "acct-for-etl": [{"instance_id": "i-0f44a1b3", "type": "r5.4xlarge", "suggested": "r5.2xlarge", "hourly_delta_usd": 0.504}],
    "acct-gem-prod": [{"instance_id": "i-0a91d2c4", "type": "m5.8xlarge", "suggested": "m5.4xlarge", "hourly_delta_usd": 0.768},
                      {"instance_id": "i-0a91d2c5", "type": "m5.8xlarge", "suggested": "m5.4xlarge", "hourly_delta_usd": 0.768}],
    "acct-hyd-ml": [{"instance_id": "i-0b55e012", "type": "g4dn.4xlarge", "suggested": "g4dn.2xlarge", "hourly_delta_usd": 0.452}],
}
# what the engine's cache still held from the week before (i-0c5512ee was terminated since)
RIGHTSIZING_CACHE = {"acct-cyg-batch": [{"instance_id": "i-0c5512ee", "type": "r5.4xlarge", "suggested": "r5.2xlarge", "hourly_delta_usd": 0.504},
                                        *RIGHTSIZING["acct-cyg-batch"]]}
INVENTORY = {a: {r["instance_id"] for r in recs} for a, recs in RIGHTSIZING.items()}


class FinanceRejected(RuntimeError):
    pass


class AccountTotal(TypedDict):
    account: str
    total_usd: float


# -- tools ---------------------------------------------------------------------------------------


@function_tool(failure_error_function=None)
def get_billing(account_id: str, month: str) -> str:
    """The billing export of a cloud account for a month (YYYY-MM): cost per service in USD."""
    m = CURRENT_MONTH if (FAULT.on("v2_month_dropped") and account_id in V2_ACCOUNTS) else month
    services = BILLING[(account_id, m)]
    out: dict[str, Any] = {"account": account_id, "month": month, "services": services,
                           "total_usd": round(sum(services.values()), 2)}
    if account_id in PAYER:
        out["consolidated_payer"] = PAYER[account_id]
    return json.dumps(out)


@function_tool(failure_error_function=None)
def get_rightsizing(account_id: str) -> str:
    """Rightsizing recommendations of an account: instance, current and suggested type, hourly saving."""
    if FAULT.on("rightsizing_cache") and account_id in RIGHTSIZING_CACHE:
        return json.dumps(RIGHTSIZING_CACHE[account_id])
    return json.dumps(RIGHTSIZING.get(account_id, []))


@function_tool(failure_error_function=None)
def monthly_cost(hourly_usd: float) -> str:
    """Turn an hourly cost (USD) into a monthly cost (USD)."""
    hours = 8760 if FAULT.on("hours_per_year") else 730
    return json.dumps({"hourly_usd": hourly_usd, "monthly_usd": round(hourly_usd * hours, 2)})


@function_tool(failure_error_function=None)
def get_team(team: str) -> str:
    """A team's cloud accounts and monthly budget (USD)."""
    return json.dumps({"team": team, **TEAMS[team]})


def _spend(account: str) -> float:
    months = [m for (a, m) in BILLING if a == account and m != CURRENT_MONTH]
    return round(sum(BILLING[(account, months[0])].values()), 2)


@function_tool(failure_error_function=None)
def create_savings_ticket(account_id: str, instance_ids: list[str], est_monthly_savings_usd: float) -> str:
    """Open a FinOps ticket to rightsize instances; the ticketing system checks it."""
    if not set(instance_ids) <= INVENTORY.get(account_id, set()):
        raise FinanceRejected("FinOps ticketing: one or more instances are not in the current inventory")
    if est_monthly_savings_usd > 0.5 * _spend(account_id):
        raise FinanceRejected("FinOps ticketing: the estimated saving is implausible for this account's spend")
    return json.dumps({"ticket": f"FIN-{abs(sum(map(ord, account_id))) % 9000 + 1000}", "status": "open"})


@function_tool(failure_error_function=None)
def post_cost_review(team: str, month: str, accounts: list[AccountTotal], total_usd: float, over_budget: bool) -> str:
    """Post the team's monthly cost review to the finance system."""
    for a in accounts:
        truth = round(sum(BILLING[(a["account"], month)].values()), 2)
        if abs(float(a["total_usd"]) - truth) > 1.0:
            raise FinanceRejected("Finance system: the review does not reconcile with the billing export")
    if over_budget != (total_usd > TEAMS[team]["budget_usd"]):
        raise FinanceRejected("Finance system: the budget flag is inconsistent")
    return json.dumps({"review": f"REV-{team}-{month}", "status": "filed"})


# -- the fake model ------------------------------------------------------------------------------


def analyst_brain(msgs: list[dict[str, Any]]) -> Any:
    ask = [text_of(m) for m in msgs if m.get("role") == "user"][-1]
    account = re.search(r"acct-[\w-]+", ask).group(0)
    month = re.search(r"\d{4}-\d\d", ask).group(0)
    done = {name for name, _a, r in called_tools(msgs) if r is not None}
    if "get_billing" not in done:
        return Reply(tool_calls=(tool_call("get_billing", {"account_id": account, "month": month}),))
    if "get_rightsizing" not in done:
        return Reply(tool_calls=(tool_call("get_rightsizing", {"account_id": account}),))
    recs = results_of(msgs, "get_rightsizing")[-1]
    if recs and "monthly_cost" not in done:
        hourly = round(sum(r["hourly_delta_usd"] for r in recs), 3)
        return Reply(tool_calls=(tool_call("monthly_cost", {"hourly_usd": hourly}),))
    billing = results_of(msgs, "get_billing")[-1]
    savings = results_of(msgs, "monthly_cost")[-1]["monthly_usd"] if recs else 0.0
    total, top = billing["total_usd"], max(billing["services"], key=billing["services"].get)
    if FAULT.on("report_payer") and "consolidated_payer" in billing:
        total, top = billing["consolidated_payer"]["total_usd"], billing["consolidated_payer"]["top_service"]
    return json.dumps({"account": account, "month": month, "total_usd": total, "top_service": top,
                       "recommendations": [r["instance_id"] for r in recs], "est_monthly_savings_usd": savings})


def orchestrator_brain(msgs: list[dict[str, Any]]) -> Any:
    ask = [text_of(m) for m in msgs if m.get("role") == "user"][-1]
    team = re.search(r"team (\w+)", ask).group(1)
    month = re.search(r"\d{4}-\d\d", ask).group(0)
    calls = called_tools(msgs)
    done = {name for name, _a, r in calls if r is not None}
    if "get_team" not in done:
        return Reply(tool_calls=(tool_call("get_team", {"team": team}),))
    info = results_of(msgs, "get_team")[-1]
    analyses = results_of(msgs, "account_analyst")
    if len(analyses) < len(info["accounts"]):
        acct = info["accounts"][len(analyses)]
        return Reply(tool_calls=(tool_call("account_analyst", {"input": f"Analyse {acct} for {month}."}),))
    ticketed = {args["account_id"] for name, args, _r in calls if name == "create_savings_ticket"}
    for a in analyses:
        if a["recommendations"] and a["est_monthly_savings_usd"] >= 100 and a["account"] not in ticketed:
            return Reply(tool_calls=(tool_call("create_savings_ticket", {
                "account_id": a["account"], "instance_ids": a["recommendations"],
                "est_monthly_savings_usd": a["est_monthly_savings_usd"]}),))
    total = round(sum(a["total_usd"] for a in analyses), 2)
    if "post_cost_review" not in done:
        return Reply(tool_calls=(tool_call("post_cost_review", {
            "team": team, "month": month, "total_usd": total, "over_budget": total > info["budget_usd"],
            "accounts": [{"account": a["account"], "total_usd": a["total_usd"]} for a in analyses]}),))
    top = max(analyses, key=lambda a: a["total_usd"])
    return (f"Team {team} spent USD {total:,.2f} in {month} against a budget of USD {info['budget_usd']:,}. "
            f"Largest account: {top['account']} ({top['top_service']}). Savings tickets: {len(ticketed)}.")


def brain(request: Any) -> Any:
    msgs = messages_of(request)
    if "You are the account analyst" in system_text(msgs):
        return analyst_brain(msgs)
    return orchestrator_brain(msgs)


def build(chat_model: Any, responses_model: Any) -> SDKAgent:
    analyst = SDKAgent(
        name="account_analyst",
        instructions="You are the account analyst. For the account and month you are given, read the billing "
                     "export and the rightsizing recommendations, price the monthly saving, and answer with JSON: "
                     "account, month, total_usd, top_service, recommendations, est_monthly_savings_usd.",
        tools=[get_billing, get_rightsizing, monthly_cost],
        model=responses_model,
    )
    return SDKAgent(
        name="finops_orchestrator",
        instructions="You are the FinOps review orchestrator. Get the team, ask the account analyst about each "
                     "account in turn, open a savings ticket for every saving of USD 100 a month or more, then post "
                     "the cost review to finance and summarise it.",
        tools=[get_team,
               analyst.as_tool(tool_name="account_analyst",
                               tool_description="Analyse one cloud account for one month; returns a JSON report."),
               create_savings_ticket, post_cost_review],
        model=chat_model,
    )


@contextmanager
def session():
    with FakeModelServer(brain, model=MODEL) as server:

        def record(ask: str, path: str) -> BaseException | None:
            async def main() -> None:
                chat_model, responses_model, client = models(server.base_url, MODEL)
                try:
                    with trace(NAME, metadata={"task": ask}):
                        await Runner.run(build(chat_model, responses_model), ask,
                                         run_config=RunConfig(workflow_name=NAME), max_turns=20)
                finally:
                    await client.close()

            return record_trace(NAME, ask, main, path)

        yield record


AGENT = Agent(
    name=NAME,
    route="openai_agents",
    domain="cloud cost management (FinOps)",
    summary="an orchestrator gets the team, calls an account-analyst sub-agent (agent as tool, Responses API) "
    "for each account (billing export, rightsizing, monthly pricing), opens savings tickets and posts the "
    "review to a finance system that reconciles it",
    features=["sub-agents", "loop over accounts"],
    passing=[
        "Run the 2025-05 cost review for team eridani.",
        "Run the 2025-04 cost review for team fornax.",
        "Run the 2025-05 cost review for team gemini.",
        "Run the 2025-05 cost review for team hydra.",
        "Run the 2025-05 cost review for team indus.",
    ],
    session=session,
    cases=[
        Case(
            "d-finops-payer-account",
            "Run the 2025-05 cost review for team atlas.",
            "report_payer",
            "subagent_wrong_entity",
            "Asked about acct-atlas-dev, the analyst sub-agent reports the figures of the consolidated payer "
            "account acct-atlas-shared (USD 14,880, NAT Gateway) that the billing export lists beside it; the "
            "orchestrator posts that total for dev and finance refuses the review.",
            [Loc("response", 7, "14880"), Loc("account_analyst", 2), Loc("generation " + MODEL, 5),
             Loc("post_cost_review")],
        ),
        Case(
            "d-finops-v2-month",
            "Run the 2025-04 cost review for team borealis.",
            "v2_month_dropped",
            "tool_ignores_argument",
            "For accounts on the v2 billing API the billing tool drops the month and returns June's "
            "month-to-date; acct-bor-data is reported at USD 9,870.55 for April and finance refuses the review.",
            [Loc("get_billing", 2, "9870.55"), Loc("response", 7), Loc("account_analyst", 2),
             Loc("generation " + MODEL, 5), Loc("post_cost_review")],
        ),
        Case(
            "d-finops-stale-rightsizing",
            "Run the 2025-05 cost review for team cygnus.",
            "rightsizing_cache",
            "stale_data",
            "The rightsizing engine answers from last week's cache, which still lists i-0c5512ee (terminated "
            "since); the analyst passes it on and the savings ticket is refused.",
            [Loc("get_rightsizing", 2, "i-0c5512ee"), Loc("response", 7), Loc("account_analyst", 2),
             Loc("generation " + MODEL, 4), Loc("create_savings_ticket")],
        ),
        Case(
            "d-finops-hours-year",
            "Run the 2025-05 cost review for team draco.",
            "hours_per_year",
            "unit_error",
            "The pricing tool multiplies the hourly saving by 8,760 (hours in a year) instead of 730 (hours in a "
            "month); the GPU rightsizing on acct-dra-ml is priced at USD 17,993 a month and the ticket is refused.",
            [Loc("monthly_cost", 1, "17993"), Loc("response", 7), Loc("account_analyst", 2),
             Loc("generation " + MODEL, 4), Loc("create_savings_ticket")],
        ),
    ],
)
