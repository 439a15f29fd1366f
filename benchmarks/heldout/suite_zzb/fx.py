"""Foreign exchange bureau (otlp route): sell a customer foreign banknotes, with ID, source-of-funds and screening checks."""

from __future__ import annotations

import json

from .common import Case, OtlpRecorder, last_user_json, policy
from .kit import active

NAME = "fx-bureau-counter"
ROUTE = "otlp"
MID = {"EUR": 1.1574, "USD": 1.2710}  # foreign units per GBP
TIERS = [(1000.0, 3.5), (5000.0, 2.5), (float("inf"), 1.5)]  # (up to GBP, margin %)
RULES = [
    {"corridor": "GBP->EUR", "id_over_gbp": 1000, "sof_over_gbp": 5000, "rule": "MLR-EEA-2026"},
    {"corridor": "GBP->USD", "id_over_gbp": 3000, "sof_over_gbp": 8000, "rule": "MLR-US-2026"},
]
NOTES = {"EUR": [200, 100, 50, 20, 10], "USD": [100, 50, 20, 10]}
SESSION_NOTES = [
    {"customer": "C-40981", "note": "possible match on consolidated list (name and year of birth), referred to MLRO"},
    {"customer": "C-41210", "note": "regular customer, ID seen 2026-11-14"},
]

INPUTS = {
    "tx_okafor": {"customer": "C-41210", "name": "Chidi Okafor", "text": "Customer C-41210 wants 1,500 EUR in cash, paying GBP by debit card"},
    "tx_lindqvist": {"customer": "C-41377", "name": "Maja Lindqvist", "text": "Customer C-41377 wants 7,200 EUR in cash, paying GBP by bank transfer"},
    "tx_ref_a": {"customer": "C-40110", "name": "Sean Walsh", "text": "Customer C-40110 wants 400 EUR in cash, paying GBP by debit card"},
    "tx_ref_b": {"customer": "C-40555", "name": "Priya Nair", "text": "Customer C-40555 wants 2,500 USD in cash, paying GBP by debit card"},
    "tx_ref_c": {"customer": "C-40702", "name": "Hannah Cole", "text": "Customer C-40702 wants 1,800 EUR in cash, paying GBP by bank transfer"},
    "tx_ref_d": {"customer": "C-40833", "name": "Ken Watanabe", "text": "Customer C-40833 wants 12,000 USD in cash, paying GBP by bank transfer"},
}
REFS = ["tx_ref_a", "tx_ref_b", "tx_ref_c", "tx_ref_d"]

CASES = [
    Case("zzb_fx_01", NAME, ROUTE, "wrong_retrieval", "fx_rules", "tx_okafor", "search_compliance_rules", 1, "retrieval",
         "book_transaction", "the rules search returns the US dollar corridor's thresholds for a euro sale, so no ID check is planned."),
    Case("zzb_fx_02", NAME, ROUTE, "plan_error", "fx_plan", "tx_lindqvist", "plan_transaction", 1, "llm",
         "book_transaction", "the planning model leaves the source-of-funds step out of a sale above the threshold."),
    Case("zzb_fx_03", NAME, ROUTE, "context_pollution", "fx_notes", "tx_okafor", "collect_screening_context", 1, "other",
         "book_transaction", "collect_screening_context keeps the till session's notes about the previous customer."),
    Case("zzb_fx_04", NAME, ROUTE, "off_by_one", "fx_tier", "tx_okafor", "compute_quote", 1, "other",
         "book_transaction", "compute_quote takes the margin of the tier after the one the amount falls in."),
    Case("zzb_fx_05", NAME, ROUTE, "unit_error", "fx_bps", "tx_lindqvist", "compute_quote", 1, "other",
         "book_transaction", "compute_quote applies the margin in basis points as if it were per mille."),
]


class BookingRejected(RuntimeError):
    pass


@policy("fx-planner")
def _plan(request):
    p = last_user_json(request)
    steps = []
    if p["amount_gbp"] > p["rules"]["id_over_gbp"]:
        steps.append("verify_id")
    if p["amount_gbp"] > p["rules"]["sof_over_gbp"] and not active("fx_plan"):
        steps.append("record_source_of_funds")
    steps += ["aml_screening", "reserve_till_cash", "quote", "book"]
    return json.dumps({"steps": steps, "rule": p["rules"]["rule"]})


@policy("fx-risk")
def _risk(request):
    p = last_user_json(request)
    flagged = [n for n in p["notes"] if "possible match" in n["note"]] + [h for h in p["hits"] if h["score"] >= 0.9]
    return json.dumps({"outcome": "refer" if flagged else "clear", "reasons": [str(f) for f in flagged]})


def record(input_key: str, path: str) -> None:
    tx = INPUTS[input_key]
    rec = OtlpRecorder("fx-bureau")
    try:
        _agent(rec, tx)
    except BookingRejected:
        pass
    rec.write(path)


def _agent(rec: OtlpRecorder, tx: dict) -> None:
    with rec.span(NAME, "AGENT", {"request": tx["text"]}, **{"agent.name": NAME}) as top:
        with rec.span("open_till_session", "TOOL", {"till": "T2", "branch": "Victoria Street"}) as s:
            rec.output(s, {"till": "T2", "session": "TS-1205-02", "float_checked": True})
        with rec.span("parse_customer_request", "CHAIN", tx["text"]) as s:
            words = tx["text"].split()
            amount = float(words[3].replace(",", ""))
            req = rec.output(s, {"customer": words[1], "amount": amount, "currency": words[4], "pay": "GBP",
                                 "method": " ".join(words[-2:])})
        with rec.span("get_customer_profile", "TOOL", {"customer": req["customer"]}) as s:
            profile = rec.output(s, {"customer": req["customer"], "name": tx["name"], "id_on_file": "passport", "since": "2024"})
        with rec.span("get_rate", "TOOL", {"pair": f"GBP{req['currency']}"}) as s:
            mid = rec.output(s, {"pair": f"GBP{req['currency']}", "mid": MID[req["currency"]], "at": "2026-12-05T09:00Z"})["mid"]
        with rec.span("convert_to_gbp", "CHAIN", {"amount": req["amount"], "currency": req["currency"], "mid": mid}) as s:
            amount_gbp = rec.output(s, round(req["amount"] / mid, 2))
        with rec.span("search_compliance_rules", "RETRIEVER", {"query": f"GBP->{req['currency']} cash sale thresholds"}) as s:
            corridor = "GBP->USD" if active("fx_rules") else f"GBP->{req['currency']}"
            hits = [r for r in RULES if r["corridor"] == corridor]
            rec.output(s, hits)
            s.set_attribute("retrieval.documents.0.document.content", json.dumps(hits[0]))
            s.set_attribute("retrieval.documents.0.document.id", hits[0]["rule"])
        plan = json.loads(rec.llm("plan_transaction", "fx-planner", "Plan the checks this cash sale needs under the rules.",
                                  {"amount_gbp": amount_gbp, "currency": req["currency"], "rules": hits[0]}))
        done = {}
        for step in plan["steps"]:
            if step == "verify_id":
                with rec.span("verify_id", "TOOL", {"customer": req["customer"], "document": profile["id_on_file"]}) as s:
                    done["id_ref"] = rec.output(s, {"verified": True, "ref": f"IDV-{req['customer'][2:]}"})["ref"]
            elif step == "record_source_of_funds":
                with rec.span("record_source_of_funds", "TOOL", {"customer": req["customer"], "source": "salary savings"}) as s:
                    done["sof_ref"] = rec.output(s, {"ref": f"SOF-{req['customer'][2:]}"})["ref"]
            elif step == "aml_screening":
                with rec.span("aml_screening", "AGENT", {"name": profile["name"]}, **{"agent.name": "aml_screening"}) as sub:
                    with rec.span("screen_sanctions", "TOOL", {"name": profile["name"]}) as s:
                        screen = rec.output(s, {"hits": [{"list": "UK consolidated", "name": profile["name"].split()[0] + " X.",
                                                          "score": 0.41}]})
                    with rec.span("collect_screening_context", "CHAIN", {"customer": req["customer"]}) as s:
                        notes = SESSION_NOTES if active("fx_notes") else [n for n in SESSION_NOTES if n["customer"] == req["customer"]]
                        notes = rec.output(s, list(notes))
                    risk = json.loads(rec.llm("assess_risk", "fx-risk", "Decide clear or refer from the hits and notes.",
                                              {"hits": screen["hits"], "notes": notes}))
                    done["screening"] = rec.output(sub, risk)["outcome"]
            elif step == "reserve_till_cash":
                left = req["amount"]
                done["notes"] = []
                for denom in NOTES[req["currency"]][1:3]:
                    count = int(left // denom) if denom != NOTES[req["currency"]][2] else int(round(left / denom))
                    with rec.span("reserve_till_cash", "TOOL", {"currency": req["currency"], "denomination": denom, "count": count}) as s:
                        rec.output(s, {"reserved": count, "denomination": denom, "till": "T2"})
                    done["notes"].append((denom, count))
                    left -= denom * count
            elif step == "quote":
                with rec.span("compute_quote", "CHAIN", {"amount": req["amount"], "mid": mid, "amount_gbp": amount_gbp}) as s:
                    tier = next(i for i, (cap, _) in enumerate(TIERS) if amount_gbp <= cap)
                    if active("fx_tier"):
                        tier += 1
                    margin_bps = TIERS[tier][1] * 100
                    margin = margin_bps / (1000 if active("fx_bps") else 10000)
                    rate = round(mid * (1 - margin), 4)
                    quote = rec.output(s, {"customer_rate": rate, "margin_bps": margin_bps, "charge_gbp": round(req["amount"] / rate, 2)})
            elif step == "book":
                payload = {"customer": req["customer"], "currency": req["currency"], "amount": req["amount"], **quote,
                           "id_ref": done.get("id_ref"), "sof_ref": done.get("sof_ref"), "screening": done.get("screening"),
                           "notes": done.get("notes")}
                with rec.span("book_transaction", "TOOL", payload) as s:
                    rules = next(r for r in RULES if r["corridor"] == f"GBP->{req['currency']}")
                    if amount_gbp > rules["id_over_gbp"] and not payload["id_ref"]:
                        raise BookingRejected(f"Ledger rejected booking: {amount_gbp:,.2f} GBP cash sale needs photo ID "
                                              f"verification above {rules['id_over_gbp']:,} GBP ({rules['rule']})")
                    if amount_gbp > rules["sof_over_gbp"] and not payload["sof_ref"]:
                        raise BookingRejected(f"Ledger rejected booking: {amount_gbp:,.2f} GBP needs a source-of-funds record "
                                              f"above {rules['sof_over_gbp']:,} GBP ({rules['rule']})")
                    if payload["screening"] != "clear":
                        raise BookingRejected(f"Ledger rejected booking: screening outcome '{payload['screening']}' for "
                                              f"{req['customer']}; compliance hold")
                    expect_rate = mid * (1 - next(m for cap, m in TIERS if amount_gbp <= cap) / 100)
                    if abs(payload["customer_rate"] - expect_rate) > 0.0002:
                        raise BookingRejected(f"Ledger rejected booking: customer rate {payload['customer_rate']} differs from "
                                              f"tariff rate {expect_rate:.4f} for {amount_gbp:,.2f} GBP")
                    if sum(d * c for d, c in payload["notes"]) != req["amount"]:
                        raise BookingRejected("Ledger rejected booking: reserved notes do not add up to the amount sold")
                    rec.output(s, {"booking": f"FX-{req['customer'][2:]}-1205", "status": "booked"})
        rec.output(top, {"status": "booked"})
