"""University financial-aid office: disbursing a batch of scholarship awards (OpenTelemetry + OpenInference, OTLP JSON)."""
from __future__ import annotations

import json

from . import common

RUN_NAME = "aid-office-disbursement"
ROUTE = "otlp"
DOMAIN = "university financial-aid office: term disbursement of named scholarships"
SHAPE = ("OpenInference spans: award roster tool, policy retrieval, a loop over the batch's students (enrollment "
         "tool, account step with a bursar sub-tool, award calculation, installment split, payment router), a "
         "disbursement memo by the model, a loop of ledger postings (tool), a summary by the model")
SWITCH = None

STUDENTS = {
    "S-1042": {"credits": 13, "balance": 0.0, "bank": True, "award": 2500.0},
    "S-1088": {"credits": 15, "balance": 1240.0, "bank": True, "award": 3000.0},
    "S-1107": {"credits": 12, "balance": 860.0, "bank": True, "award": 2000.0},
    "S-1131": {"credits": 16, "balance": 0.0, "bank": False, "award": 1500.0},
    "S-1150": {"credits": 14, "balance": 0.0, "bank": True, "award": 2500.0},
    "S-1163": {"credits": 12, "balance": 0.0, "bank": True, "award": 1000.0},
    "S-1177": {"credits": 9, "balance": 0.0, "bank": True, "award": 2000.0},
    "S-1194": {"credits": 15, "balance": 310.0, "bank": True, "award": 2500.0},
    "S-1208": {"credits": 12, "balance": 0.0, "bank": True, "award": 3000.0},
}
POLICIES = [
    {"id": "POL-MS-2025", "award": "Harmon Merit Scholarship", "full_time_credits": 12, "cap": 3000.0, "installments": 2},
    {"id": "POL-MG-2025", "award": "Harmon Merit Grant", "full_time_credits": 15, "cap": 3000.0, "installments": 2},
    {"id": "POL-FS-2025", "award": "First-Generation Scholars Award", "full_time_credits": 12, "cap": 2500.0, "installments": 2},
    {"id": "POL-EN-2025", "award": "Engineering Access Award", "full_time_credits": 12, "cap": 3000.0, "installments": 3},
]

INPUTS = [
    {"task": "fall 2025 batch B-31, Harmon Merit Scholarship", "batch": {"id": "B-31", "award": "Harmon Merit Scholarship", "term": "2025FA",
                                                                        "students": ["S-1042", "S-1131", "S-1150", "S-1208"]}},
    {"task": "fall 2025 batch B-32, First-Generation Scholars Award", "batch": {"id": "B-32", "award": "First-Generation Scholars Award", "term": "2025FA",
                                                                               "students": ["S-1088", "S-1163", "S-1177"]}},
    {"task": "fall 2025 batch B-33, Engineering Access Award", "batch": {"id": "B-33", "award": "Engineering Access Award", "term": "2025FA",
                                                                        "students": ["S-1107", "S-1042", "S-1194", "S-1131", "S-1208"]}},
    {"task": "fall 2025 batch B-34, Harmon Merit Scholarship", "batch": {"id": "B-34", "award": "Harmon Merit Scholarship", "term": "2025FA",
                                                                        "students": ["S-1088", "S-1107", "S-1163"]}},
    {"task": "fall 2025 batch B-35, First-Generation Scholars Award", "batch": {"id": "B-35", "award": "First-Generation Scholars Award", "term": "2025FA",
                                                                               "students": ["S-1150", "S-1194", "S-1177", "S-1042"]}},
]

CASES = [
    {"id": "aid_installments", "input": 2, "switch": "split_range", "fault_kind": "off_by_one",
     "root": ("split_installments", 1), "failure": ("ledger_post", 1),
     "description": "Splitting S-1107's Engineering Access Award over three installments, the loop schedules only two, so the postings carry 1,333.34 of a 2,000.00 award."},
    {"id": "aid_policy_lookup", "input": 0, "switch": "award_family_match", "fault_kind": "wrong_retrieval",
     "root": ("policy_search", 1), "failure": ("ledger_post", 1),
     "description": "The policy search returns the Harmon Merit Grant policy (15 credits full time) for the Harmon Merit Scholarship, so S-1042 with 13 credits is paid half the award."},
    {"id": "aid_bursar_timeout", "input": 3, "switch": "bursar_quick_timeout", "fault_kind": "swallowed_error",
     "root": ("student_account", 1), "failure": ("ledger_post", 1),
     "description": "The account step gives the bursar service 1 s, catches its timeout for S-1088 and reports a zero balance, so the 1,240.00 owed is not applied before payment."},
    {"id": "aid_memo_amounts", "input": 1, "switch": "currency_strings", "fault_kind": "format_drift",
     "root": ("ChatCompletion", 1), "failure": ("ledger_post", 1),
     "description": "The disbursement memo from the model gives amounts as currency text ('$1,250.00') where the ledger takes numbers."},
    {"id": "aid_payment_route", "input": 4, "switch": "bank_first", "fault_kind": "wrong_routing",
     "root": ("route_payment", 2), "failure": ("ledger_post", 2),
     "description": "The payment router checks for bank details before the student's balance and sends S-1194, who owes 310.00, to direct deposit instead of applying the award to the account first."},
]


def record(server, inp: dict, path: str) -> None:
    t = common.otlp_tracer(RUN_NAME)
    batch = inp["batch"]
    try:
        with common.ospan(t, RUN_NAME, "AGENT", {"batch": batch["id"]}, **{"agent.name": RUN_NAME,
                          "metadata": json.dumps({"task": inp["task"]})}) as top:
            with common.ospan(t, "award_roster", "TOOL", {"batch": batch["id"], "term": batch["term"]}) as o:
                roster = o.set([{"student": s, "award_amount": STUDENTS[s]["award"]} for s in batch["students"]])
            with common.ospan(t, "policy_search", "RETRIEVER", {"query": batch["award"]}) as o:
                if SWITCH == "award_family_match":
                    key = " ".join(batch["award"].split()[:2])
                    hits = [p for p in POLICIES if p["award"].startswith(key)]
                    hits.sort(key=lambda p: -p["full_time_credits"])
                else:
                    hits = [p for p in POLICIES if p["award"] == batch["award"]]
                policy = o.set(hits)[0]
            lines = []
            for entry in roster:
                sid = entry["student"]
                with common.ospan(t, "enrollment_check", "TOOL", {"student": sid, "term": batch["term"]}) as o:
                    enr = o.set({"student": sid, "credits": STUDENTS[sid]["credits"], "status": "registered"})
                with common.ospan(t, "student_account", "CHAIN", {"student": sid}) as o:
                    budget = 1.0 if SWITCH == "bursar_quick_timeout" else 10.0
                    try:
                        with common.ospan(t, "bursar_balance", "TOOL", {"student": sid, "timeout_s": budget}) as b:
                            if STUDENTS[sid]["balance"] and budget < 2.0:
                                raise TimeoutError(f"bursar API: no answer for {sid} within {budget}s")
                            bal = b.set({"student": sid, "balance": STUDENTS[sid]["balance"]})["balance"]
                    except TimeoutError:
                        bal = 0.0
                    acct = o.set({"student": sid, "balance": bal, "bank_on_file": STUDENTS[sid]["bank"]})
                with common.ospan(t, "award_calc", "CHAIN", {"award": entry, "credits": enr["credits"], "policy": policy}) as o:
                    factor = 1.0 if enr["credits"] >= policy["full_time_credits"] else 0.5
                    amount = o.set(round(min(entry["award_amount"], policy["cap"]) * factor, 2))
                with common.ospan(t, "split_installments", "CHAIN", {"amount": amount, "installments": policy["installments"]}) as o:
                    n = policy["installments"]
                    each = round(amount / n, 2)
                    stop = n if SWITCH == "split_range" and sid == "S-1107" else n + 1
                    parts = [each if k < n else round(amount - each * (n - 1), 2) for k in range(1, stop)]
                    parts = o.set(parts)
                with common.ospan(t, "route_payment", "CHAIN", {"student": sid, "balance": acct["balance"], "bank_on_file": acct["bank_on_file"]}) as o:
                    if SWITCH == "bank_first":
                        route = "direct_deposit" if acct["bank_on_file"] else ("apply_to_account" if acct["balance"] > 0 else "paper_check")
                    else:
                        route = "apply_to_account" if acct["balance"] > 0 else ("direct_deposit" if acct["bank_on_file"] else "paper_check")
                    o.set(route)
                lines.append({"student": sid, "installments": parts, "route": route, "award_letter": entry["award_amount"],
                              "credits": enr["credits"]})
            memo = common.chat(server, [{"role": "system", "content": "You write the disbursement memo for a scholarship batch. Answer JSON with lines."},
                                        {"role": "user", "content": json.dumps({"batch": batch["id"], "award": batch["award"], "lines": lines})}])
            posted = []
            for line in json.loads(memo["content"])["lines"]:
                with common.ospan(t, "ledger_post", "TOOL", line) as o:
                    sid = line["student"]
                    total = 0.0
                    for part in line["installments"]:
                        if not isinstance(part, (int, float)):
                            raise TypeError(f"ledger: installment {part!r} for {sid} is not a number")
                        total += part
                    pol = next(p for p in POLICIES if p["award"] == batch["award"])
                    expected = min(STUDENTS[sid]["award"], pol["cap"]) * (1.0 if STUDENTS[sid]["credits"] >= pol["full_time_credits"] else 0.5)
                    if abs(total - expected) > 0.01:
                        raise ValueError(f"ledger: {sid} installments total {total:,.2f}; award letter {STUDENTS[sid]['award']:,.2f} "
                                         f"at {STUDENTS[sid]['credits']} credits gives {expected:,.2f}")
                    if STUDENTS[sid]["balance"] > 0 and line["route"] != "apply_to_account":
                        raise ValueError(f"ledger: {sid} owes {STUDENTS[sid]['balance']:,.2f}; aid must apply to the account before {line['route']}")
                    posted.append(o.set({"student": sid, "posted": round(total, 2), "route": line["route"]}))
            common.chat(server, [{"role": "system", "content": "You summarise a posted scholarship batch for the aid director."},
                                 {"role": "user", "content": json.dumps({"batch": batch["id"], "posted": posted})}])
            top.set({"batch": batch["id"], "posted": len(posted)})
    finally:
        common.otlp_flush(path)


def brain(request):
    system = common.chat_system(request)
    user = json.loads(common.chat_user(request) or "{}")
    if "disbursement memo" in system:
        out = []
        for ln in user["lines"]:
            parts = ln["installments"]
            if SWITCH == "currency_strings":
                parts = [f"${p:,.2f}" for p in parts]
            out.append({"student": ln["student"], "installments": parts, "route": ln["route"]})
        return json.dumps({"batch": user["batch"], "lines": out})
    if "summarise a posted" in system:
        total = sum(p["posted"] for p in user["posted"])
        return f"Batch {user['batch']}: {len(user['posted'])} students posted, {total:,.2f} in total."
    return "{}"
