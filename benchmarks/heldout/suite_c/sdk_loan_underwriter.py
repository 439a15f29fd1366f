"""loan_underwriter: a batch underwriting job for personal-loan applications (recorded with the
trajdebug SDK: a planning model, a retried credit-bureau call, an ``income_verifier`` sub-agent,
a decision model, and notes kept in ``run.state`` across the batch).

per application: plan_review (llm: which checks, which income path) -> bureau_pull (retried on
timeouts) -> verify_income (agent: payroll_lookup -> parse_paystub, or tax_transcript_income) ->
compute_dti -> compose_decision_prompt -> decide (llm) -> policy_gate (credit policy) -> record_note.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from harness import FAULT, AgentSpec, Case

import trajdebug


APPLICATIONS = {
    "L-9001": {"name": "Jordan Avery", "employment": "W-2 salaried", "employer": "Northgate Health", "debts": 1150, "new_payment": 1320},
    "L-9002": {"name": "Priscilla Nwosu", "employment": "self-employed", "employer": "Nwosu Design Studio", "debts": 640, "new_payment": 910},
    "L-9003": {"name": "Mark Feldman", "employment": "W-2 salaried", "employer": "Crescent Logistics", "debts": 2100, "new_payment": 1450},
    "L-9004": {"name": "Lena Kowalczyk", "employment": "W-2 salaried", "employer": "Bright Harbor Schools", "debts": 480, "new_payment": 560},
    "L-9005": {"name": "Tariq Hassan", "employment": "self-employed", "employer": "Hassan Plumbing LLC", "debts": 900, "new_payment": 1100},
    "L-9006": {"name": "Beatriz Souza", "employment": "W-2 salaried", "employer": "Pinnacle Insurance", "debts": 1700, "new_payment": 1250},
    "L-9007": {"name": "Owen McAllister", "employment": "W-2 salaried", "employer": "Redline Motors", "debts": 600, "new_payment": 780},
    "L-9008": {"name": "Grace Liu", "employment": "W-2 salaried", "employer": "Summit Analytics", "debts": 950, "new_payment": 1180},
    "L-9009": {"name": "Samuel Ortiz", "employment": "W-2 salaried", "employer": "Copperline Utilities", "debts": 2900, "new_payment": 1500},
    "L-9010": {"name": "Hana Yoshida", "employment": "W-2 salaried", "employer": "Lakeside Medical", "debts": 520, "new_payment": 700},
}
BUREAU = {"L-9001": 748, "L-9002": 712, "L-9003": 681, "L-9004": 776, "L-9005": 695, "L-9006": 703, "L-9007": 731,
          "L-9008": 758, "L-9009": 690, "L-9010": 765}
FLAKY_BUREAU = {"L-9002", "L-9006", "L-9008"}  # the bureau times out once on these
PAYROLL = {  # (applicant, employer) -> monthly gross, as the payroll network reports it
    ("L-9001", "Northgate Health"): 9_400, ("L-9003", "Crescent Logistics"): 11_200, ("L-9004", "Bright Harbor Schools"): 5_100,
    ("L-9006", "Pinnacle Insurance"): 8_900, ("L-9007", "Redline Motors"): 6_300, ("L-9008", "Summit Analytics"): 10_400,
    ("L-9009", "Copperline Utilities"): 9_800, ("L-9010", "Lakeside Medical"): 7_200,
}
PREVIOUS_EMPLOYER = {"L-9007": ("Westfield Auto Body", 3_650), "L-9009": ("Copperline Temp Services", 4_100)}
TAX_TRANSCRIPTS = {"L-9002": 8_300, "L-9005": 7_600}  # Schedule C net, monthly
DTI_CEILING = 43.0


class BureauTimeout(Exception):
    """The credit bureau did not answer in time."""


class UnderwritingError(Exception):
    """A credit-policy or data check stopped the batch."""


# -- the scripted models -------------------------------------------------------------------------------------


def fake_llm_plan(summary: str) -> str:
    FAULT.llm_tick()
    app_id = re.search(r"(L-\d{4})", summary).group(1)
    salaried = "W-2" in summary
    path = "w2" if salaried else "self_employed"
    if FAULT.on("salaried_planned_as_self_employed") and salaried and "overtime" in summary:
        path = "self_employed"  # "variable overtime and side income" read as self-employment
        FAULT.fire_llm('"income_path": "self_employed"')
    plan = {"application": app_id, "steps": ["bureau_pull", "verify_income", "compute_dti", "decide"], "income_path": path}
    return json.dumps(plan)


def fake_llm_decide(prompt: str) -> str:
    FAULT.llm_tick()
    app_id = re.search(r"Application (L-\d{4})", prompt).group(1)
    dti = float(re.search(r"DTI[^\d]*([\d.]+)%", prompt).group(1))  # the first DTI figure in the prompt
    score = int(re.search(r"bureau score (\d+)", prompt).group(1))
    if dti <= DTI_CEILING and score >= 660:
        tier = "A" if score >= 740 else "B" if score >= 700 else "C"
        return json.dumps({"application": app_id, "decision": "approve", "rate_tier": tier, "dti_cited": dti,
                           "rationale": f"DTI {dti}% within policy, score {score}"})
    return json.dumps({"application": app_id, "decision": "decline", "rate_tier": None, "dti_cited": dti,
                       "rationale": f"DTI {dti}% or score {score} outside policy"})


# -- steps -----------------------------------------------------------------------------------------------------


@trajdebug.step(kind="llm")
def plan_review(summary: str) -> str:
    return fake_llm_plan(summary)


_bureau_attempts: dict[str, int] = {}


@trajdebug.retry(attempts=3, on=(BureauTimeout,), reason="bureau timeout: retry")
@trajdebug.step(kind="tool")
def bureau_pull(application_id: str) -> dict[str, Any]:
    n = _bureau_attempts[application_id] = _bureau_attempts.get(application_id, 0) + 1
    if application_id in FLAKY_BUREAU and n == 1:
        raise BureauTimeout(f"Equilink gateway timed out after 8s for {application_id}")
    return {"application_id": application_id, "bureau_score": BUREAU[application_id], "bureau": "Equilink", "open_tradelines": 6}


@trajdebug.step(kind="tool")
def payroll_lookup(applicant_id: str, employer: str) -> str:
    FAULT.tick("payroll_lookup")
    if FAULT.on("payroll_ignores_employer") and applicant_id in PREVIOUS_EMPLOYER:
        prev, gross = PREVIOUS_EMPLOYER[applicant_id]  # the most recent record on file, whoever the employer
        FAULT.fire_tool("payroll_lookup", prev)
        return f"PAYSTUB | employee {applicant_id} | employer {prev} | period 2026-01 | gross monthly USD {gross:,}.00"
    gross = PAYROLL[(applicant_id, employer)]
    return f"PAYSTUB | employee {applicant_id} | employer {employer} | period 2026-01 | gross monthly USD {gross:,}.00"


@trajdebug.step(kind="parse")
def parse_paystub(stub: str) -> dict[str, Any]:
    employer = re.search(r"employer ([^|]+?) \|", stub).group(1)
    gross = float(re.search(r"USD ([\d,.]+)", stub).group(1).replace(",", ""))
    return {"employer": employer, "monthly_income": gross, "source": "payroll"}


@trajdebug.step(kind="tool")
def tax_transcript_income(applicant_id: str) -> dict[str, Any]:
    net = TAX_TRANSCRIPTS.get(applicant_id)
    return {"applicant_id": applicant_id, "schedule_c_monthly": net or 0, "note": None if net else "no Schedule C filed for 2024"}


@trajdebug.step(kind="agent", agent="income_verifier")
def verify_income(application: dict[str, Any], income_path: str) -> dict[str, Any]:
    if income_path == "w2":
        return parse_paystub(payroll_lookup(application["id"], application["employer"]))
    t = tax_transcript_income(application["id"])
    return {"employer": application["employer"], "monthly_income": float(t["schedule_c_monthly"]), "source": "tax transcript"}


@trajdebug.step(kind="tool")
def compute_dti(debts: float, new_payment: float, income: dict[str, Any]) -> dict[str, Any]:
    if income["monthly_income"] <= 0:
        raise UnderwritingError(
            f"cannot compute DTI: verified monthly income is {income['monthly_income']:.0f} (source: {income['source']})"
        )
    return {"dti_pct": round((debts + new_payment) / income["monthly_income"] * 100, 1)}


@trajdebug.step(kind="other")
def compose_decision_prompt(application: dict[str, Any], bureau: dict[str, Any], dti: dict[str, Any]) -> str:
    FAULT.tick("compose_decision_prompt")
    notes = trajdebug.current_run().state.get("notes", [])
    relevant = [n for n in notes if n.startswith(application["id"])]
    if FAULT.on("notes_not_filtered") and notes:
        relevant = list(notes)  # every note of the batch, not only this application's
        FAULT.fire_tool("compose_decision_prompt", relevant[0], kind="other")
    lines = [f"Application {application['id']} ({application['name']}, {application['employment']})."]
    if relevant:
        lines.append("Underwriter notes: " + " / ".join(relevant))
    lines.append(f"Computed DTI: {dti['dti_pct']}%; bureau score {bureau['bureau_score']}.")
    lines.append("Decide approve or decline under the 43% DTI ceiling; answer in JSON.")
    return "\n".join(lines)


@trajdebug.step(kind="llm")
def decide(prompt: str) -> str:
    return fake_llm_decide(prompt)


@trajdebug.step(kind="tool")
def policy_gate(application: dict[str, Any], income: dict[str, Any], dti: dict[str, Any], decision: dict[str, Any]) -> dict[str, Any]:
    if income["employer"] != application["employer"]:
        raise UnderwritingError(
            f"{application['id']}: income was verified at {income['employer']}, but the applicant declares employment with "
            f"{application['employer']}; file cannot be decided"
        )
    if decision["decision"] == "approve" and dti["dti_pct"] > DTI_CEILING:
        raise UnderwritingError(
            f"{application['id']}: approval recorded at a computed DTI of {dti['dti_pct']}% (decision cites {decision['dti_cited']}%); "
            f"policy CP-4 caps DTI at {DTI_CEILING:g}%"
        )
    return {"application": application["id"], "final": decision["decision"], "tier": decision["rate_tier"]}


@trajdebug.step(kind="state")
def record_note(application: dict[str, Any], dti: dict[str, Any], outcome: dict[str, Any]) -> None:
    state = trajdebug.current_run().state
    notes = list(state.get("notes", []))
    notes.append(f"{application['id']}: DTI {dti['dti_pct']}%, {outcome['final']}" + (f" tier {outcome['tier']}" if outcome["tier"] else ""))
    state["notes"] = notes


def underwrite(app_id: str, declared: dict[str, Any]) -> dict[str, Any]:
    app = {"id": app_id, **APPLICATIONS[app_id], **declared}
    plan = json.loads(plan_review(f"{app_id}: {app['name']}, {app['employment']} at {app['employer']}"
                                  + ("; variable overtime and side income declared" if app.get("overtime") else "")))
    bureau = bureau_pull(app_id)
    income = verify_income(app, plan["income_path"])
    dti = compute_dti(app["debts"], app["new_payment"], income)
    decision = json.loads(decide(compose_decision_prompt(app, bureau, dti)))
    outcome = policy_gate(app, income, dti, decision)
    record_note(app, dti, outcome)
    return outcome


def execute(inp: dict[str, Any], path: Path, key: str) -> str:
    _bureau_attempts.clear()
    declared = inp.get("declared", {})
    with trajdebug.run("loan_underwriter", path=path, task=f"underwrite batch {inp['batch']}", agent="loan_underwriter",
                       metadata={"suite": "heldout-c", "batch": inp["batch"]}) as run:
        for app_id in inp["applications"]:
            underwrite(app_id, declared.get(app_id, {}))
    return run.run_id


SPEC = AgentSpec(
    name="loan_underwriter",
    route="sdk",
    domain="consumer lending / loan underwriting",
    summary="trajdebug SDK, batch loop: plan_review (llm) -> bureau_pull (trajdebug.retry) -> verify_income sub-agent "
            "(payroll_lookup -> parse_paystub | tax_transcript_income) -> compute_dti -> compose_decision_prompt -> decide (llm) "
            "-> policy_gate -> record_note (run.state)",
    execute=execute,
    passing=[
        {"batch": "B-0301", "applications": ["L-9001", "L-9002"]},
        {"batch": "B-0302", "applications": ["L-9004", "L-9005", "L-9006"]},
        {"batch": "B-0303", "applications": ["L-9008", "L-9010"]},
        {"batch": "B-0304", "applications": ["L-9003", "L-9004"]},
        {"batch": "B-0305", "applications": ["L-9006", "L-9002", "L-9001"]},
    ],
    cases=[
        Case(
            slug="overtime_planned_as_self_employment",
            input={"batch": "B-0311", "applications": ["L-9004", "L-9008"], "declared": {"L-9008": {"overtime": True}}},
            fault="salaried_planned_as_self_employed",
            fault_kind="wrong_routing",
            description="For Grace Liu, a salaried employee who declares overtime and side income, the planning model "
                        "picks the self-employed income path. The income_verifier sub-agent pulls a tax transcript with no "
                        "Schedule C, returns zero income, and compute_dti refuses to compute.",
            failure="compute_dti",
            path=["tax_transcript_income", "compute_dti"],
        ),
        Case(
            slug="payroll_answers_for_previous_employer",
            input={"batch": "B-0312", "applications": ["L-9001", "L-9007"]},
            fault="payroll_ignores_employer",
            fault_kind="tool_ignores_argument",
            description="payroll_lookup ignores the employer it is asked about and returns Owen McAllister's most recent "
                        "record on file, from his previous employer; the paystub is parsed and passed on as verified income, "
                        "and the credit-policy gate stops the file on the employer mismatch.",
            failure="policy_gate",
            path=["parse_paystub", "policy_gate"],
        ),
        Case(
            slug="previous_application_notes_in_prompt",
            input={"batch": "B-0313", "applications": ["L-9004", "L-9009"]},
            fault="notes_not_filtered",
            fault_kind="context_pollution",
            description="compose_decision_prompt puts every note of the batch into the prompt, including the previous "
                        "application's 'L-9004: DTI 20.4%, approve'. The decision model cites that DTI and approves Samuel "
                        "Ortiz, whose own DTI is 44.9 %; the credit-policy gate refuses the approval.",
            failure="policy_gate",
            path=["decide", "policy_gate"],
        ),
    ],
)
