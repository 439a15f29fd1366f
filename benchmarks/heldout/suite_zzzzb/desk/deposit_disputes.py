"""Tenancy deposit scheme: adjudicating end-of-tenancy deposit disputes (OpenTelemetry + OpenInference, OTLP JSON)."""
from __future__ import annotations

import json

from . import common

RUN_NAME = "deposit-dispute-desk"
ROUTE = "otlp"
DOMAIN = "tenancy deposit protection scheme: end-of-tenancy deposit disputes"
SHAPE = ("OpenInference spans: claim intake, a model that classifies the claim, lease, inspection and invoice OCR "
         "tools, an invoice parser, a loop depreciating each claimed item, invoice reconciliation, a track router and "
         "its tool, statute retrieval, a decision drafted by the model, citation, guidance and escrow tools, a notice "
         "by the model")
SWITCH = None

LEASES = {
    "T-88120": {"deposit": 2150.0, "start": "2023-09-01", "rent": 1720.0, "renewed": "2024-09-01"},
    "T-77341": {"deposit": 1400.0, "start": "2022-03-01", "rent": 1150.0, "renewed": None},
    "T-90456": {"deposit": 1800.0, "start": "2021-06-15", "rent": 1500.0, "renewed": "2023-06-15"},
    "T-65209": {"deposit": 975.0, "start": "2023-01-10", "rent": 850.0, "renewed": None},
    "T-71833": {"deposit": 2600.0, "start": "2020-11-01", "rent": 2100.0, "renewed": "2024-11-01"},
}
PRIOR_LEASES = {"T-88120": {"deposit": 1900.0, "start": "2023-09-01", "rent": 1580.0, "renewed": None},
                "T-90456": {"deposit": 1500.0, "start": "2021-06-15", "rent": 1250.0, "renewed": None},
                "T-71833": {"deposit": 2300.0, "start": "2020-11-01", "rent": 1900.0, "renewed": None}}
LIFESPAN = {"carpet": 8, "paintwork": 5, "oven": 10, "blinds": 6, "sofa": 7, "cleaning": 0}
SECTIONS = [
    {"id": "DPA-s.12", "text": "The landlord must prove loss; fair wear and tear is not chargeable."},
    {"id": "DPA-s.14(2)", "text": "Deductions for damaged items are limited to the item's remaining useful life."},
    {"id": "DPA-s.17", "text": "Cleaning costs may be deducted to restore the check-in standard."},
    {"id": "DPA-s.21", "text": "Undisputed amounts are released within 10 days of the decision."},
]

INPUTS = [
    {"task": "dispute D-5012, tenancy T-88120", "claim": {
        "dispute": "D-5012", "tenancy": "T-88120", "claimed": 1150.0, "tenant_offer": 300.0,
        "items": [{"item": "carpet", "age": 4, "age_unit": "years"}, {"item": "paintwork", "age": 30, "age_unit": "months"},
                  {"item": "cleaning", "age": 0, "age_unit": "months"}],
        "invoices": ["Carpet World INV-221\ncarpet replacement 780.00\nfitting 120.00\nTotal 900.00",
                     "BrightPaint INV-87\npaintwork lounge 180.00\nTotal 180.00",
                     "Spotless Ltd INV-3302\ncleaning 70.00\nTotal 70.00"]}},
    {"task": "dispute D-5019, tenancy T-77341", "claim": {
        "dispute": "D-5019", "tenancy": "T-77341", "claimed": 420.0, "tenant_offer": 150.0,
        "items": [{"item": "oven", "age": 6, "age_unit": "years"}, {"item": "cleaning", "age": 0, "age_unit": "months"}],
        "invoices": ["KitchenCare INV-19\noven repair 300.00\nTotal 300.00", "Spotless Ltd INV-3340\ncleaning 120.00\nTotal 120.00"]}},
    {"task": "dispute D-5027, tenancy T-90456", "claim": {
        "dispute": "D-5027", "tenancy": "T-90456", "claimed": 1240.0, "tenant_offer": 600.0,
        "items": [{"item": "sofa", "age": 18, "age_unit": "months"}, {"item": "blinds", "age": 3, "age_unit": "years"},
                  {"item": "carpet", "age": 24, "age_unit": "months"}],
        "invoices": ["Home Furnish INV-552\nsofa 650.00\ndelivery 40.00\nTotal 690.00",
                     "BlindFix INV-8\nblinds 150.00\nTotal 150.00", "Carpet World INV-240\ncarpet 400.00\nTotal 400.00"]}},
    {"task": "dispute D-5031, tenancy T-65209", "claim": {
        "dispute": "D-5031", "tenancy": "T-65209", "claimed": 260.0, "tenant_offer": 100.0,
        "items": [{"item": "paintwork", "age": 1, "age_unit": "years"}, {"item": "cleaning", "age": 0, "age_unit": "months"}],
        "invoices": ["BrightPaint INV-95\npaintwork hall 160.00\nTotal 160.00", "Spotless Ltd INV-3371\ncleaning 100.00\nTotal 100.00"]}},
    {"task": "dispute D-5040, tenancy T-71833", "claim": {
        "dispute": "D-5040", "tenancy": "T-71833", "claimed": 980.0, "tenant_offer": 200.0,
        "items": [{"item": "carpet", "age": 36, "age_unit": "months"}, {"item": "oven", "age": 2, "age_unit": "years"},
                  {"item": "cleaning", "age": 0, "age_unit": "months"}],
        "invoices": ["Carpet World INV-260\ncarpet 560.00\nTotal 560.00", "KitchenCare INV-31\noven door 330.00\nTotal 330.00",
                     "Spotless Ltd INV-3390\ncleaning 90.00\nTotal 90.00"]}},
]

CASES = [
    {"id": "deposit_invoice_lines", "input": 2, "switch": "first_line_only", "fault_kind": "lossy_parsing",
     "root": ("parse_invoices", 1), "failure": ("reconcile_invoices", 1),
     "description": "The invoice parser keeps only the first priced line of each invoice, dropping the 40.00 sofa delivery, so the parsed items no longer add up to the invoice totals."},
    {"id": "deposit_track_choice", "input": 0, "switch": "offer_as_amount", "fault_kind": "wrong_routing",
     "root": ("route_dispute", 1), "failure": ("open_fast_track", 1),
     "description": "The track router compares the tenant's 300.00 offer instead of the 850.00 in dispute with the 750.00 fast-track limit and sends the dispute to fast track."},
    {"id": "deposit_lease_version", "input": 4, "switch": "original_lease", "fault_kind": "stale_data",
     "root": ("lease_lookup", 1), "failure": ("escrow_release", 1),
     "description": "The lease lookup returns the tenancy's original 2020 lease with a 2,300.00 deposit, not the 2024 renewal's 2,600.00, and the escrow release does not match the balance held."},
    {"id": "deposit_decision_citation", "input": 1, "switch": "cite_from_memory", "fault_kind": "hallucinated_value",
     "root": ("ChatCompletion", 2), "failure": ("cite_check", 1),
     "description": "The drafted decision cites DPA-s.14(4), a section the statute search never returned, and the citation check refuses it."},
    {"id": "deposit_item_age", "input": 2, "switch": "age_as_months", "fault_kind": "unit_error",
     "root": ("depreciate_item", 2), "failure": ("guidance_check", 1),
     "description": "Depreciating the blinds, the age of 3 years is read as 3 months, so nearly the whole 150.00 is charged against the guidance's limit for six-year blinds."},
]


def _parse_money(line: str) -> float:
    return float(line.rsplit(" ", 1)[1])


def record(server, inp: dict, path: str) -> None:
    t = common.otlp_tracer(RUN_NAME)
    claim0 = inp["claim"]
    try:
        with common.ospan(t, RUN_NAME, "AGENT", {"dispute": claim0["dispute"]}, **{"agent.name": RUN_NAME,
                          "metadata": json.dumps({"task": inp["task"]})}) as top:
            with common.ospan(t, "load_claim", "CHAIN", claim0) as o:
                claim = o.set(json.loads(json.dumps(claim0)))
            common.chat(server, [{"role": "system", "content": "You classify deposit dispute claims. Answer JSON."},
                                 {"role": "user", "content": json.dumps({"items": [i["item"] for i in claim["items"]], "claimed": claim["claimed"]})}])
            with common.ospan(t, "lease_lookup", "TOOL", {"tenancy": claim["tenancy"]}) as o:
                lease = dict(LEASES[claim["tenancy"]])
                if SWITCH == "original_lease" and claim["tenancy"] in PRIOR_LEASES:
                    lease = dict(PRIOR_LEASES[claim["tenancy"]])
                o.set({"tenancy": claim["tenancy"], **lease})
            with common.ospan(t, "inspection_report", "TOOL", {"tenancy": claim["tenancy"]}) as o:
                report = o.set({"tenancy": claim["tenancy"], "items": [dict(i, condition="damaged" if i["item"] != "cleaning" else "below check-in standard") for i in claim["items"]]})
            with common.ospan(t, "invoice_ocr", "TOOL", {"dispute": claim["dispute"], "files": len(claim["invoices"])}) as o:
                texts = o.set(list(claim["invoices"]))
            with common.ospan(t, "parse_invoices", "CHAIN", texts) as o:
                lines = []
                for text in texts:
                    priced = [ln for ln in text.splitlines()[1:] if not ln.startswith("Total")]
                    if SWITCH == "first_line_only":
                        priced = priced[:1]
                    for ln in priced:
                        name = ln.rsplit(" ", 1)[0]
                        lines.append({"invoice": text.splitlines()[0], "line": name, "amount": _parse_money(ln)})
                o.set(lines)
            deductions = []
            for item in report["items"]:
                cost = sum(ln["amount"] for ln in lines if ln["line"].split()[0] == item["item"] or
                           (ln["invoice"].split()[0] in ("Home", "Carpet", "BlindFix", "KitchenCare", "BrightPaint") and
                            item["item"] in ln["invoice"].lower().replace("furnish", "sofa").replace("kitchencare", "oven").replace("blindfix", "blinds")
                            and ln["line"].split()[0] != item["item"] and ln["line"] in ("delivery", "fitting")))
                with common.ospan(t, "depreciate_item", "CHAIN", {"item": item, "cost": cost}) as o:
                    life = LIFESPAN[item["item"]]
                    if SWITCH == "age_as_months":
                        years = item["age"] / 12
                    else:
                        years = item["age"] / 12 if item["age_unit"] == "months" else float(item["age"])
                    share = 1.0 if life == 0 else max(0.0, 1 - years / life)
                    deductions.append(o.set({"item": item["item"], "cost": cost, "age_years": round(years, 2),
                                             "landlord": round(cost * share, 2)}))
            with common.ospan(t, "reconcile_invoices", "CHAIN", {"lines": lines, "invoices": texts}) as o:
                totals = sum(_parse_money(text.splitlines()[-1]) for text in texts)
                parsed = round(sum(ln["amount"] for ln in lines), 2)
                if abs(parsed - totals) > 0.005:
                    raise ValueError(f"reconcile: parsed invoice lines total {parsed:.2f}, invoice totals {totals:.2f}")
                o.set({"total": totals})
            with common.ospan(t, "route_dispute", "CHAIN", {"claimed": claim["claimed"], "tenant_offer": claim["tenant_offer"]}) as o:
                disputed = claim["claimed"] - claim["tenant_offer"]
                amount = claim["tenant_offer"] if SWITCH == "offer_as_amount" else disputed
                track = o.set("fast_track" if amount <= 750 else "adjudication")
            with common.ospan(t, f"open_{track}", "TOOL", {"dispute": claim["dispute"], "disputed": disputed}) as o:
                if track == "fast_track" and disputed > 750:
                    raise ValueError(f"fast track: dispute {claim['dispute']} is {disputed:,.2f} in dispute; fast track takes up to 750.00")
                o.set({"dispute": claim["dispute"], "track": track, "adjudicator": "A-17" if track == "adjudication" else "FT-3"})
            with common.ospan(t, "statute_search", "RETRIEVER", {"query": "deductions damaged items cleaning wear and tear"}) as o:
                docs = o.set([s for s in SECTIONS if s["id"] != "DPA-s.21"])
            msg = common.chat(server, [{"role": "system", "content": "You draft the adjudicator's deposit decision. Answer JSON with landlord, tenant, citations, reasons."},
                                       {"role": "user", "content": json.dumps({"deposit": lease["deposit"], "deductions": deductions, "authorities": docs})}])
            decision = json.loads(msg["content"])
            with common.ospan(t, "cite_check", "TOOL", {"citations": decision["citations"]}) as o:
                known = {d["id"] for d in docs}
                bad = [c for c in decision["citations"] if c not in known]
                if bad:
                    raise ValueError(f"citation check: {', '.join(bad)} not among the authorities retrieved")
                o.set({"ok": True})
            with common.ospan(t, "guidance_check", "TOOL", {"deductions": deductions}) as o:
                for d, item in zip(deductions, claim["items"]):
                    life = LIFESPAN[d["item"]]
                    yrs = item["age"] / 12 if item["age_unit"] == "months" else item["age"]
                    allowed = d["cost"] if life == 0 else round(d["cost"] * max(0.0, 1 - yrs / life), 2)
                    if d["landlord"] > allowed + 0.01:
                        raise ValueError(f"guidance: {d['item']} deduction {d['landlord']:.2f} exceeds {allowed:.2f} "
                                         f"allowed for a {yrs:g}-year-old item (lifespan {life} years)")
                o.set({"ok": True})
            with common.ospan(t, "escrow_release", "TOOL", {"tenancy": claim["tenancy"], "landlord": decision["landlord"], "tenant": decision["tenant"]}) as o:
                held = LEASES[claim["tenancy"]]["deposit"]
                if abs(decision["landlord"] + decision["tenant"] - held) > 0.005:
                    raise ValueError(f"escrow: release {decision['landlord']:.2f} + {decision['tenant']:.2f} does not equal "
                                     f"the {held:.2f} held for {claim['tenancy']}")
                o.set({"released": held, "reference": f"ESC-{claim['dispute']}"})
            common.chat(server, [{"role": "system", "content": "You write the decision notice to landlord and tenant."},
                                 {"role": "user", "content": json.dumps(decision)}])
            top.set({"dispute": claim["dispute"], "landlord": decision["landlord"], "tenant": decision["tenant"]})
    finally:
        common.otlp_flush(path)


def brain(request):
    system = common.chat_system(request)
    user = json.loads(common.chat_user(request) or "{}")
    if "classify deposit dispute" in system:
        return json.dumps({"category": "damage and cleaning" if "cleaning" in user["items"] else "damage", "claimed": user["claimed"]})
    if "deposit decision" in system:
        landlord = round(sum(d["landlord"] for d in user["deductions"]), 2)
        cites = ["DPA-s.12", "DPA-s.14(2)"] + (["DPA-s.17"] if any(d["item"] == "cleaning" for d in user["deductions"]) else [])
        if SWITCH == "cite_from_memory":
            cites[1] = "DPA-s.14(4)"
        return json.dumps({"landlord": landlord, "tenant": round(user["deposit"] - landlord, 2), "citations": cites,
                           "reasons": "Deductions limited to remaining useful life; cleaning to check-in standard."})
    if "decision notice" in system:
        return (f"Decision: {user['landlord']:.2f} to the landlord and {user['tenant']:.2f} to the tenant, "
                f"released within 10 days (citing {', '.join(user['citations'])}).")
    return "{}"
