"""Lottery syndicate management: collect stakes, buy the week's lines, claim prizes, file the payout ledger (OTLP)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from .common import Case
from .kit import active
from .llmclient import last_user
from .otlp_common import Traced

AGENT = "lottery-syndicate-manager"
ROUTE = "otlp"
LINE_PRICE = 2.00

SYNDICATES = {
    "SYN-CA-THU": {"name": "Crown & Anchor Thursday", "rule": "equal", "draw": "2026-12-05", "members": {"M-01": 2, "M-02": 4, "M-03": 2, "M-04": 6, "M-05": 2, "M-06": 4}, "prize": 412.00},
    "SYN-MILL-8": {"name": "Mill Lane Eight", "rule": "by_stake", "draw": "2026-12-05", "members": {"M-11": 4, "M-12": 4, "M-13": 2, "M-14": 6, "M-15": 2}, "prize": 96.00},
    "SYN-DEPOT": {"name": "Tram Depot Crew", "rule": "equal", "draw": "2026-11-28", "members": {"M-21": 2, "M-22": 2, "M-23": 4, "M-24": 2}, "prize": 60.00},
    "SYN-NURSE": {"name": "Ward 9 Nurses", "rule": "by_stake", "draw": "2026-11-28", "members": {"M-31": 6, "M-32": 2, "M-33": 2, "M-34": 4, "M-35": 4, "M-36": 2}, "prize": 250.00},
    "SYN-CHOIR": {"name": "St Jude Tenors", "rule": "equal", "draw": "2026-11-21", "members": {"M-41": 4, "M-42": 4, "M-43": 4}, "prize": 36.00},
    "SYN-GARAGE": {"name": "Kwik Garage", "rule": "by_stake", "draw": "2026-11-21", "members": {"M-51": 2, "M-52": 8, "M-53": 2, "M-54": 4}, "prize": 128.00},
}
RULE_DOCS = {
    "equal": "Rule 7: winnings are split equally among every paid-up member, whatever their stake.",
    "by_stake": "Rule 7: winnings are split in proportion to each paid-up member's stake for the draw.",
}


class LedgerRejected(Exception):
    pass


LedgerRejected.__module__ = "syndicate.ledger"


def policy(request):
    prompt = last_user(request)
    if prompt.startswith("Plan the entries"):
        pot = float(re.search(r"pot ([\d.]+) GBP", prompt).group(1))
        lines = int(pot // LINE_PRICE)
        if active("lot-04"):
            lines += 1  # rounds the spend up to a whole extra line
        return json.dumps({"game": "Lotto", "lines": lines, "method": "lucky dip"})
    if prompt.startswith("Claim"):
        ticket = re.search(r"TKT-[\w-]+", prompt).group(0)
        return json.dumps({"action": "claim_prize", "ticket": ticket})
    return "OK"


def statement_line(sid: str, member: str, index: int) -> str:
    amount = SYNDICATES[sid]["members"][member]
    if active("lot-03") and index == 5:
        return f"05/12/2026 | {member} | GBP {amount:.2f} | FPS"  # the second bank's new export layout
    return f"2026-12-01;{member};{amount:.2f};GBP"


def record(sid: str, path: Path, server) -> None:
    server.use(policy)
    syn = SYNDICATES[sid]
    t = Traced(AGENT, server)
    try:
        with t.span(AGENT, "AGENT", input=f"Run the weekly draw for syndicate {sid}", **{"agent.name": AGENT}) as root:
            with t.span("load_members", "CHAIN", input={"syndicate": sid}) as s:
                members = sorted(syn["members"])
                s.output = {"syndicate": sid, "members": members}
            with t.span("lookup_syndicate_rules", "RETRIEVER", input=f"payout rule of syndicate {syn['name']}") as s:
                rule = "by_stake" if (active("lot-01") and syn["rule"] == "equal") else syn["rule"]
                doc = {"syndicate": syn["name"] if rule == syn["rule"] else "Mill Lane Eight", "text": RULE_DOCS[rule], "rule": rule}
                s.output = {"documents": [doc]}
            paid: dict[str, float] = {}
            for i, member in enumerate(members, start=1):
                with t.span("fetch_contribution", "TOOL", input={"member": member, "draw": syn["draw"]}) as s:
                    try:
                        if active("lot-02") and i == 4:
                            raise ConnectionError("bank feed 503 Service Unavailable")
                        line = statement_line(sid, member, i)
                    except ConnectionError:
                        line = f"2026-12-01;{member};0.00;GBP"
                    s.output = line
                with t.span("parse_contribution", "CHAIN", input=line) as s:
                    parts = line.split(";")
                    if len(parts) == 4:
                        amount = float(parts[2])
                    else:
                        amount = float(re.sub(r"[^\d]", "", line.split("|")[0]) or 0)
                    paid[member] = amount
                    s.output = {"member": member, "paid_gbp": amount}
            pot = round(sum(paid.values()), 2)
            plan = json.loads(t.llm("plan_entries", "You manage a lottery syndicate's weekly entries.",
                                    f"Plan the entries for {syn['name']}: pot {pot:.2f} GBP, line price {LINE_PRICE:.2f} GBP, draw {syn['draw']}."))
            with t.span("buy_tickets", "TOOL", input={"syndicate": sid, **plan}) as s:
                spend = plan["lines"] * LINE_PRICE
                if spend > pot:
                    raise LedgerRejected(f"402 Payment Required: basket total {spend:.2f} GBP exceeds syndicate wallet balance {pot:.2f} GBP")
                ticket = f"TKT-{sid[4:]}-{syn['draw'].replace('-', '')}"
                s.output = {"ticket": ticket, "lines": plan["lines"], "spend_gbp": spend}
            with t.span("fetch_draw_results", "TOOL", input={"ticket": ticket, "draw": syn["draw"]}) as s:
                result = {"ticket": ticket, "winning_lines": 1, "prize_gbp": syn["prize"]}
                s.output = result
            with t.span("prize_claims_agent", "AGENT", input={"ticket": ticket}, **{"agent.name": "prize-claims"}) as sub:
                action = json.loads(t.llm("decide_claim", "You claim lottery prizes for syndicates.",
                                          f"Claim the prize on {ticket} ({result['prize_gbp']:.2f} GBP)."))
                with t.span("claim_prize", "TOOL", input=action) as s:
                    claim = {"ticket": action["ticket"], "credited_gbp": result["prize_gbp"], "claim_ref": f"CLM-{ticket[4:]}"}
                    s.output = claim
                sub.output = claim
            with t.span("compute_shares", "CHAIN", input={"paid": paid, "rule": rule, "prize": claim["credited_gbp"]}) as s:
                paid_up = [m for m in members if paid[m] >= LINE_PRICE]
                if active("lot-05"):
                    paid_up = paid_up[1:]
                if rule == "equal":
                    shares = {m: round(claim["credited_gbp"] / len(paid_up), 2) for m in paid_up}
                else:
                    total = sum(paid[m] for m in paid_up)
                    shares = {m: round(claim["credited_gbp"] * paid[m] / total, 2) for m in paid_up}
                s.output = shares
            with t.span("submit_payout_ledger", "TOOL", input={"syndicate": sid, "claim": claim["claim_ref"], "shares": shares}) as s:
                for m in members:
                    if m not in shares:
                        raise LedgerRejected(f"HTTP 422: member {m} paid {syn['members'][m]:.2f} GBP for draw {syn['draw']} but has no share in the ledger")
                stakes = syn["members"]
                if syn["rule"] == "equal":
                    due = {m: round(syn["prize"] / len(stakes), 2) for m in stakes}
                else:
                    due = {m: round(syn["prize"] * stakes[m] / sum(stakes.values()), 2) for m in stakes}
                for m in members:
                    if abs(paid[m] - stakes[m]) > 0.001 and paid[m] > 0:
                        raise LedgerRejected(f"HTTP 422: stake for {m} recorded as {paid[m]:.2f} GBP; bank received {stakes[m]:.2f} GBP")
                for m in members:
                    if abs(shares[m] - due[m]) > 0.011:
                        raise LedgerRejected(f"HTTP 422: share for {m} is {shares[m]:.2f} GBP; rule 7 of '{syn['name']}' ({syn['rule']} split) gives {due[m]:.2f} GBP")
                s.output = {"ledger": f"LDG-{sid[4:]}-{syn['draw']}", "status": "filed"}
            root.output = s.output
    except LedgerRejected:
        pass
    t.write(path)


REF_INPUTS = ["SYN-DEPOT", "SYN-NURSE", "SYN-CHOIR", "SYN-GARAGE"]
CASES = [
    Case("lot-01", "wrong_retrieval", "SYN-CA-THU", ("lookup_syndicate_rules", 1), ("submit_payout_ledger", 1),
         "The rules search returns another syndicate's proportional-split rule instead of this syndicate's equal split."),
    Case("lot-02", "swallowed_error", "SYN-CA-THU", ("fetch_contribution", 4), ("submit_payout_ledger", 1),
         "A bank feed outage for the fourth member is caught and recorded as a zero payment."),
    Case("lot-03", "format_drift", "SYN-MILL-8", ("fetch_contribution", 5), ("submit_payout_ledger", 1),
         "The fifth member's bank line arrives in a new pipe-separated layout and the amount is read from the date."),
    Case("lot-04", "plan_error", "SYN-MILL-8", ("plan_entries", 1), ("buy_tickets", 1),
         "The entry plan buys one more line than the pooled stakes cover."),
    Case("lot-05", "off_by_one", "SYN-CA-THU", ("compute_shares", 1), ("submit_payout_ledger", 1),
         "The share calculation skips the first paid-up member."),
]
