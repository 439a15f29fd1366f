"""Prior-authorization reviewer at a pharmacy benefit manager (trajdebug's own recorder)."""
from __future__ import annotations

import json
import re

import trajdebug

from . import common

RUN_NAME = "pbm-prior-auth"
ROUTE = "sdk"
DOMAIN = "pharmacy benefit manager: prior authorization of GLP-1 prescriptions"
SHAPE = ("request intake, a review plan by the model and its parser, an eligibility sub-agent (member search, "
         "model check, state write), a formulary lookup, dose parsing and a limit check, a loop over the plan's "
         "evidence checks where the model picks a tool and its arguments, a step-therapy rule, a determination "
         "letter by the model, a completeness check, claim pricing")
SWITCH = None

MEMBERS = {
    "ALVAREZ": [{"member_id": "M-5521-01", "name": "Ramon Alvarez", "relationship": "self", "dob": "1968-07-02"},
                {"member_id": "M-5521-02", "name": "Jordan Alvarez", "relationship": "child", "dob": "2001-11-19"}],
    "OKONKWO": [{"member_id": "M-7310-01", "name": "Adaeze Okonkwo", "relationship": "self", "dob": "1975-03-30"}],
    "LINDQVIST": [{"member_id": "M-2088-01", "name": "Per Lindqvist", "relationship": "self", "dob": "1959-09-14"},
                  {"member_id": "M-2088-02", "name": "Ingrid Lindqvist", "relationship": "spouse", "dob": "1961-01-08"}],
    "MBEKI": [{"member_id": "M-4402-01", "name": "Thandiwe Mbeki", "relationship": "self", "dob": "1983-05-21"}],
    "HARGROVE": [{"member_id": "M-9915-01", "name": "Colin Hargrove", "relationship": "self", "dob": "1971-12-12"},
                 {"member_id": "M-9915-02", "name": "Dana Hargrove", "relationship": "spouse", "dob": "1973-04-04"}],
}
CLAIMS = {  # pharmacy fills: (member, drug class) -> days ago
    "M-5521-02": [("metformin", 64), ("metformin", 34), ("lisinopril", 20)],
    "M-5521-01": [("atorvastatin", 40)],
    "M-7310-01": [("metformin", 150), ("metformin", 120), ("metformin", 90)],
    "M-2088-02": [("metformin", 160), ("glipizide", 45)],
    "M-4402-01": [("metformin", 25)],
    "M-9915-01": [("metformin", 95), ("metformin", 65)],
}
CHART = {
    "M-5521-02": "A1c 8.4% on 2025-02-11 despite metformin 1000 mg BID; BMI 34.",
    "M-7310-01": "A1c 7.9% on 2025-01-20; metformin stopped for GI intolerance after 3 months.",
    "M-2088-02": "A1c 8.8% on 2025-03-02; metformin and glipizide, inadequate control.",
    "M-4402-01": "A1c 9.1% on 2025-03-15; metformin 500 mg BID since 2024.",
    "M-9915-01": "A1c 8.1% on 2025-02-27; metformin ER 2000 mg daily.",
}
FORMULARY = {
    2025: {"semaglutide": {"ndc": "0169-4525", "tier": 3, "pa": True, "step": "metformin", "max_mg_week": 2.0},
           "dulaglutide": {"ndc": "0002-1433", "tier": 3, "pa": True, "step": "metformin", "max_mg_week": 4.5},
           "liraglutide": {"ndc": "0169-4060", "tier": 3, "pa": True, "step": "metformin", "max_mg_week": 12.6},
           "tirzepatide": {"ndc": "0002-1506", "tier": 3, "pa": True, "step": "metformin", "max_mg_week": 15.0}},
    2024: {"semaglutide": {"ndc": "0169-4525", "tier": 2, "pa": True, "step": "metformin", "max_mg_week": 2.0},
           "dulaglutide": {"ndc": "0002-1433", "tier": 2, "pa": True, "step": "metformin", "max_mg_week": 4.5},
           "liraglutide": {"ndc": "0169-4060", "tier": 2, "pa": True, "step": "metformin", "max_mg_week": 12.6},
           "tirzepatide": {"ndc": "0002-1506", "tier": 2, "pa": True, "step": "metformin", "max_mg_week": 15.0}},
}
COPAY = {2025: {2: 35.0, 3: 70.0}, 2024: {2: 25.0, 3: 60.0}}

INPUTS = [
    {"task": "PA semaglutide for Jordan Alvarez", "request": {
        "member_id": "M-5521-02", "last_name": "ALVAREZ", "drug": "semaglutide", "sig": "0.5 mg subcutaneously once weekly",
        "diagnosis": "E11.65", "prescriber_npi": "1457390021", "plan_year": 2025}},
    {"task": "PA dulaglutide for Adaeze Okonkwo", "request": {
        "member_id": "M-7310-01", "last_name": "OKONKWO", "drug": "dulaglutide", "sig": "1.5 mg subcutaneously once weekly",
        "diagnosis": "E11.9", "prescriber_npi": "1306992214", "plan_year": 2025}},
    {"task": "PA semaglutide for Ingrid Lindqvist", "request": {
        "member_id": "M-2088-02", "last_name": "LINDQVIST", "drug": "semaglutide", "sig": "250 mcg subcutaneously once weekly",
        "diagnosis": "E11.65", "prescriber_npi": "1588120476", "plan_year": 2025}},
    {"task": "PA liraglutide for Thandiwe Mbeki", "request": {
        "member_id": "M-4402-01", "last_name": "MBEKI", "drug": "liraglutide", "sig": "1.8 mg subcutaneously daily",
        "diagnosis": "E11.9", "prescriber_npi": "1922047730", "plan_year": 2025}},
    {"task": "PA tirzepatide for Colin Hargrove", "request": {
        "member_id": "M-9915-01", "last_name": "HARGROVE", "drug": "tirzepatide", "sig": "5 mg subcutaneously once weekly",
        "diagnosis": "E11.65", "prescriber_npi": "1740213398", "plan_year": 2025}},
]

CASES = [
    {"id": "pa_dose_units", "input": 2, "switch": "dose_number_only", "fault_kind": "unit_error",
     "root": ("parse_dose", 1), "failure": ("dose_limit_check", 1),
     "description": "The dose parser keeps the number of a 250 mcg weekly sig and reads it as milligrams, so the weekly dose comes out at 250 mg against a 2 mg label maximum."},
    {"id": "pa_formulary_cache", "input": 4, "switch": "formulary_cache", "fault_kind": "stale_data",
     "root": ("formulary_lookup", 1), "failure": ("price_claim", 1),
     "description": "The formulary lookup answers from last plan year's cached table (tirzepatide at tier 2), and claim pricing for 2025 refuses a tier 2 copay for a tier 3 drug."},
    {"id": "pa_claims_lookback", "input": 1, "switch": "short_lookback", "fault_kind": "wrong_tool_args",
     "root": ("choose_query", 1), "failure": ("step_therapy_rule", 1),
     "description": "The model queries pharmacy claims with a 30-day lookback instead of the 180 days the step-therapy rule reads, so the member's metformin fills 90 to 150 days ago are not found."},
    {"id": "pa_plan_checks", "input": 3, "switch": "plan_skips_history", "fault_kind": "plan_error",
     "root": ("plan_review", 1), "failure": ("validate_determination", 1),
     "description": "The review plan lists no step-therapy check for liraglutide, so the determination is written without that criterion and the completeness check refuses it."},
    {"id": "pa_family_member", "input": 0, "switch": "subscriber_first", "fault_kind": "subagent_wrong_entity",
     "root": ("eligibility_agent", 1), "failure": ("step_therapy_rule", 1),
     "description": "The eligibility sub-agent resolves the request to the family's subscriber M-5521-01 instead of the dependent M-5521-02, whose claims hold no metformin fill."},
]

QUERY_TOOLS = [
    common.fn("query_claims", "Pharmacy claims of a member", {"member_id": "string", "drug_class": "string", "lookback_days": "integer"}),
    common.fn("search_chart_notes", "Search the prescriber's chart notes", {"member_id": "string", "query": "string"}),
]


@trajdebug.step(kind="input")
def receive_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="llm")
def plan_review(server, messages: list[dict]) -> dict:
    return common.chat(server, messages)


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> list[str]:
    return [c.strip() for c in json.loads(text)["checks"]]


@trajdebug.step(kind="tool")
def search_members(last_name: str) -> list[dict]:
    return [dict(m) for m in MEMBERS[last_name]]


@trajdebug.step(kind="llm")
def confirm_coverage(server, messages: list[dict]) -> dict:
    return common.chat(server, messages)


def eligibility_agent(server, req: dict) -> dict:
    with trajdebug.step("eligibility_agent", kind="agent", input={"member_id": req["member_id"], "last_name": req["last_name"]}) as ag:
        found = search_members(req["last_name"])
        if SWITCH == "subscriber_first":
            member = next(m for m in found if m["relationship"] == "self")
        else:
            member = next(m for m in found if m["member_id"] == req["member_id"])
        msg = confirm_coverage(server, [{"role": "system", "content": "You confirm pharmacy coverage. Answer JSON."},
                                        {"role": "user", "content": json.dumps({"member": member, "drug": req["drug"]})}])
        cover = json.loads(msg["content"])
        result = {**member, "plan": cover["plan"], "active": cover["active"]}
        trajdebug.current_run().state["member"] = result
        ag.output = result
    return ag.output


@trajdebug.step(kind="tool")
def formulary_lookup(drug: str, plan_year: int) -> dict:
    year = plan_year
    if SWITCH == "formulary_cache":
        year = plan_year - 1
    entry = dict(FORMULARY[year][drug])
    return {"drug": drug, **entry, "source": "formulary-service", "fetched": "2025-03-28"}


@trajdebug.step(kind="parse")
def parse_dose(sig: str) -> dict:
    m = re.match(r"([\d.]+)\s*(mg|mcg)\b.*?(once weekly|daily)", sig)
    amount, unit, freq = float(m.group(1)), m.group(2), m.group(3)
    mg = amount / 1000 if unit == "mcg" and SWITCH != "dose_number_only" else amount
    per_week = mg * (7 if freq == "daily" else 1)
    return {"dose_mg": mg, "frequency": freq, "mg_per_week": round(per_week, 3)}


@trajdebug.step(kind="condition")
def dose_limit_check(dose: dict, formulary: dict) -> bool:
    if dose["mg_per_week"] > formulary["max_mg_week"]:
        raise ValueError(f"{formulary['drug']}: {dose['mg_per_week']} mg/week exceeds the labeled maximum "
                         f"{formulary['max_mg_week']} mg/week")
    return True


@trajdebug.step(kind="llm")
def choose_query(server, messages: list[dict]) -> dict:
    return common.chat(server, messages, tools=QUERY_TOOLS)


def run_query(call: dict) -> dict:
    args = json.loads(call["function"]["arguments"])
    name = call["function"]["name"]
    with trajdebug.step(name, kind="tool" if name == "query_claims" else "retrieval", input=call) as s:
        if name == "query_claims":
            fills = [{"drug_class": d, "days_ago": ago} for d, ago in CLAIMS.get(args["member_id"], [])
                     if d == args["drug_class"] and ago <= args["lookback_days"]]
            s.output = {"member_id": args["member_id"], "lookback_days": args["lookback_days"], "fills": fills}
        else:
            s.output = {"member_id": args["member_id"], "notes": [CHART.get(args["member_id"], "")]}
    return s.output


@trajdebug.step(kind="condition")
def step_therapy_rule(formulary: dict, claims: dict) -> dict:
    needed = formulary["step"]
    if not claims["fills"]:
        raise ValueError(f"step therapy: no {needed} fill for {claims['member_id']} in the last 180 days")
    return {"met": True, "fills": len(claims["fills"])}


@trajdebug.step(kind="llm")
def write_determination(server, messages: list[dict]) -> dict:
    return common.chat(server, messages)


@trajdebug.step(kind="condition")
def validate_determination(letter: str, formulary: dict, assessed: list[str]) -> dict:
    if formulary["tier"] >= 3 and "step_therapy" not in assessed:
        raise ValueError(f"determination for {formulary['drug']} (tier {formulary['tier']}) lacks the "
                         f"step_therapy criterion")
    if "APPROVED" not in letter:
        raise ValueError("determination letter states no decision")
    return {"complete": True, "criteria": assessed}


@trajdebug.step(kind="tool")
def price_claim(ndc: str, tier: int, plan_year: int, member_id: str) -> dict:
    live = {v["ndc"]: v["tier"] for v in FORMULARY[plan_year].values()}
    if live[ndc] != tier:
        raise ValueError(f"claims engine: NDC {ndc} is tier {live[ndc]} in plan year {plan_year}; "
                         f"request priced tier {tier} (copay {COPAY[plan_year][tier]:.2f})")
    return {"member_id": member_id, "ndc": ndc, "copay": COPAY[plan_year][tier]}


def record(server, inp: dict, path: str) -> None:
    with trajdebug.run(RUN_NAME, path=path, task=inp["task"]) as run:
        req = receive_request(inp["request"])
        plan_msg = plan_review(server, [{"role": "system", "content": "You plan a prior authorization review. Answer JSON {\"checks\": [...]}."},
                                        {"role": "user", "content": json.dumps({"drug": req["drug"], "diagnosis": req["diagnosis"], "sig": req["sig"]})}])
        checks = parse_plan(plan_msg["content"])
        member = eligibility_agent(server, req)
        form = formulary_lookup(req["drug"], req["plan_year"])
        assessed = ["eligibility", "formulary"]
        evidence: dict = {}
        for check in checks:
            if check == "dose":
                dose_limit_check(parse_dose(req["sig"]), form)
                assessed.append("dose")
            elif check in ("step_therapy", "clinical_notes"):
                turn = choose_query(server, [
                    {"role": "system", "content": f"You gather evidence for the {check} criterion. Call one tool."},
                    {"role": "user", "content": json.dumps({"member_id": run.state["member"]["member_id"], "drug": req["drug"],
                                                            "step_drug": form["step"], "criterion": check})}])
                evidence[check] = run_query(turn["tool_calls"][0])
                if check == "step_therapy":
                    step_therapy_rule(form, evidence[check])
                assessed.append(check)
        letter = write_determination(server, [
            {"role": "system", "content": "You write the prior authorization determination letter."},
            {"role": "user", "content": json.dumps({"member": member, "drug": req["drug"], "evidence": evidence, "assessed": assessed})}])
        validate_determination(letter["content"], form, assessed)
        price_claim(form["ndc"], form["tier"], req["plan_year"], member["member_id"])


def brain(request):
    from trajdebug.testing import Reply, tool_call

    system = common.chat_system(request)
    user = json.loads(common.chat_user(request) or "{}")
    if "plan a prior authorization" in system:
        checks = ["step_therapy", "clinical_notes", "dose"]
        if SWITCH == "plan_skips_history" and user["drug"] == "liraglutide":
            checks = ["clinical_notes", "dose"]
        return json.dumps({"checks": checks})
    if "confirm pharmacy coverage" in system:
        return json.dumps({"plan": "Commercial PPO Rx 2025", "active": True, "member": user["member"]["member_id"]})
    if "gather evidence" in system:
        if user["criterion"] == "step_therapy":
            days = 30 if SWITCH == "short_lookback" else 180
            return Reply(tool_calls=(tool_call("query_claims", {"member_id": user["member_id"], "drug_class": user["step_drug"],
                                                                "lookback_days": days}),))
        return Reply(tool_calls=(tool_call("search_chart_notes", {"member_id": user["member_id"], "query": "A1c glycemic control"}),))
    if "determination letter" in system:
        m = user["member"]
        return (f"APPROVED: {user['drug']} for {m['name']} ({m['member_id']}), criteria met: {', '.join(user['assessed'])}. "
                f"Authorization valid 12 months.")
    return "Unable to process."
