"""Oyster-bed leases (otlp route): checks a foreshore bed and an applicant's holdings, drafts terms via a sub-agent, submits the lease."""
from __future__ import annotations

import json

from . import fakellm
from .kit import active
from .otlpkit import Recorder

AGENT = "oyster-bed-lease-officer"
ROUTE = "otlp"

BEDS = {"OB-114": {"area": "24000 m2", "zone": "intertidal", "class": "B", "estuary": "Fal"},
        "OB-207": {"area": "18000 m2", "zone": "subtidal", "class": "A", "estuary": "Helford"},
        "OB-031": {"area": "9500 m2", "zone": "intertidal", "class": "A", "estuary": "Fal"},
        "OB-322": {"area": "31000 m2", "zone": "subtidal", "class": "B", "estuary": "Tamar"},
        "OB-090": {"area": "12000 m2", "zone": "intertidal", "class": "B", "estuary": "Tamar"}}
OLD_CLASS = {"OB-114": "A"}
RULES = {"intertidal": {"doc": "RULE-IT-4", "text": "Intertidal beds: rent 120 GBP per ha per year; term at most "
                                                    "10 years; holdings cap 5.0 ha per leaseholder."},
         "subtidal": {"doc": "RULE-ST-2", "text": "Subtidal beds: rent 95 GBP per ha per year; term at most "
                                                  "15 years; holdings cap 8.0 ha per leaseholder."}}
RATE = {"intertidal": 120.0, "subtidal": 95.0}
MAX_TERM = {"intertidal": 10, "subtidal": 15}
CAP = {"intertidal": 5.0, "subtidal": 8.0}
LEASES = {"L-501": 1.1, "L-502": 0.8, "L-503": 0.5, "L-610": 2.0, "L-611": 1.5, "L-700": 0.9, "L-801": 1.2,
          "L-802": 0.7}
HOLDERS = {"H-19": ["L-501", "L-502", "L-503"], "H-22": ["L-610", "L-611"], "H-30": ["L-700"],
           "H-41": ["L-801", "L-802"], "H-55": []}
INPUTS = {
    "main": {"applicant": "H-19", "bed": "OB-114", "term_years": 10},
    "ref1": {"applicant": "H-22", "bed": "OB-207", "term_years": 12},
    "ref2": {"applicant": "H-30", "bed": "OB-031", "term_years": 8},
    "ref3": {"applicant": "H-41", "bed": "OB-322", "term_years": 15},
    "ref4": {"applicant": "H-55", "bed": "OB-090", "term_years": 10},
}

FAULTS = {
    "oyster_mem": dict(kind="bad_memory_write", root=("record_holding", 3), failure=("submit_lease", 1), hops=3,
                       description="record_holding overwrites the running holdings total with the last lease's "
                                   "area, so the holdings declared with the lease do not match the registry."),
    "oyster_retr": dict(kind="wrong_retrieval", root=("search_lease_rules", 1), failure=("submit_lease", 1), hops=3,
                        description="search_lease_rules returns the subtidal rule for an intertidal bed, so the "
                                    "rent is computed at the subtidal rate."),
    "oyster_unit": dict(kind="unit_error", root=("parse_survey", 1), failure=("submit_lease", 1), hops=4,
                        description="parse_survey divides square metres by 1000 instead of 10000, so the declared "
                                    "area is ten times the surveyed area."),
    "oyster_stale": dict(kind="stale_data", root=("water_classification", 1), failure=("submit_lease", 1), hops=3,
                         description="water_classification returns the 2023 class A grading, so the terms omit "
                                     "the depuration plan that class B waters require."),
    "oyster_hall": dict(kind="hallucinated_value", root=("draft_terms", 1), failure=("submit_lease", 1), hops=2,
                        description="draft_terms states a 25-year term that neither the application nor the rule "
                                    "gives, and the registry refuses it."),
}


def policy(messages, tools):
    req = json.loads(fakellm.last_user(messages))
    term = 25 if active("oyster_hall") else req["term_years"]
    return json.dumps({"bed": req["bed"], "term_years": term, "depuration_plan": req["water_class"] == "B",
                       "conditions": ["mark bed corners with withies", "annual stock return"]})


def run_agent(rec: Recorder, inp: dict) -> None:
    with rec.span(AGENT, "AGENT", inp) as top:
        app = rec.step("read_application", "CHAIN", lambda: dict(inp), inp)

        def survey(bed):
            return {"bed": bed, "area": BEDS[bed]["area"], "zone": BEDS[bed]["zone"], "estuary": BEDS[bed]["estuary"]}

        raw = rec.tool("fetch_bed_survey", survey, {"bed": app["bed"]})

        def parse():
            value, unit = raw["area"].split()
            ha = float(value) / (1000 if active("oyster_unit") else 10000) if unit == "m2" else float(value)
            return {"bed": raw["bed"], "area_ha": round(ha, 2), "zone": raw["zone"]}

        bed = rec.step("parse_survey", "CHAIN", parse, raw)

        def rules(query):
            zone = "subtidal" if active("oyster_retr") else bed["zone"]
            return [{"id": RULES[zone]["doc"], "text": RULES[zone]["text"], "score": 0.91}]

        docs = rec.step("search_lease_rules", "RETRIEVER", lambda: rules(f"{bed['zone']} oyster bed lease rent"),
                        f"{bed['zone']} oyster bed lease rent")

        def classify(bed_id):
            grade = OLD_CLASS.get(bed_id, BEDS[bed_id]["class"]) if active("oyster_stale") else BEDS[bed_id]["class"]
            return {"bed": bed_id, "class": grade, "as_of": "2023-05-01" if active("oyster_stale") else "2026-10-01"}

        water = rec.tool("water_classification", classify, {"bed_id": app["bed"]})

        def parse_rule():
            text = docs[0]["text"]
            rent = float(text.split("rent ")[1].split(" ")[0])
            term = int(text.split("term at most ")[1].split(" ")[0])
            cap = float(text.split("holdings cap ")[1].split(" ")[0])
            return {"rent_per_ha": rent, "max_term": term, "cap_ha": cap}

        rule = rec.step("parse_rule", "CHAIN", parse_rule, docs)
        total = 0.0
        for lease_id in HOLDERS[app["applicant"]]:
            lease = rec.tool("fetch_lease", lambda lease: {"lease": lease, "area_ha": LEASES[lease]}, {"lease": lease_id})

            def write(lease=lease, prev=total):
                new = lease["area_ha"] if (active("oyster_mem") and lease["lease"] == "L-503") else prev + lease["area_ha"]
                return {"holdings_ha": round(new, 2)}

            total = rec.step("record_holding", "CHAIN", write, {"lease": lease, "holdings_ha": total})["holdings_ha"]

        def cap_check():
            after = round(total + bed["area_ha"], 2)
            return {"holdings_after_ha": after, "within_cap": total < rule["cap_ha"]}

        cap = rec.step("check_holdings_cap", "CHAIN", cap_check, {"holdings_ha": total, "area_ha": bed["area_ha"]})
        with rec.span("terms_drafter", "AGENT", {"bed": app["bed"]}, agent="terms_drafter"):
            text = rec.llm("draft_terms", "You draft oyster-bed lease terms as JSON.",
                           json.dumps({"bed": app["bed"], "term_years": app["term_years"], "water_class": water["class"],
                                       "rule": docs[0]["text"]}))
            terms = rec.step("parse_terms", "CHAIN", lambda: json.loads(text), text, **{"agent.name": "terms_drafter"})
        rent = rec.step("compute_rent", "CHAIN", lambda: {"rent_gbp": round(bed["area_ha"] * rule["rent_per_ha"], 2)},
                        {"area_ha": bed["area_ha"], "rent_per_ha": rule["rent_per_ha"]})

        def submit(**payload):
            b = BEDS[payload["bed"]]
            surveyed = float(b["area"].split()[0]) / 10000
            held = sum(LEASES[x] for x in HOLDERS[payload["applicant"]])
            if abs(payload["area_ha"] - surveyed) > 0.01:
                raise RuntimeError(f"HTTP 422 declared area {payload['area_ha']} ha does not match surveyed area "
                                   f"{surveyed} ha for {payload['bed']}")
            if abs(payload["existing_holdings_ha"] - held) > 0.01:
                raise RuntimeError(f"HTTP 422 declared holdings {payload['existing_holdings_ha']} ha do not match "
                                   f"registered holdings {held:.1f} ha for {payload['applicant']}")
            if held + surveyed > CAP[b["zone"]]:
                raise RuntimeError(f"HTTP 409 applicant {payload['applicant']} would hold {held + surveyed:.1f} ha, "
                                   f"cap {CAP[b['zone']]} ha")
            if b["class"] == "B" and not payload["depuration_plan"]:
                raise RuntimeError(f"HTTP 422 bed {payload['bed']} lies in class B waters; a depuration plan is required")
            if payload["term_years"] > MAX_TERM[b["zone"]]:
                raise RuntimeError(f"HTTP 422 term {payload['term_years']} years exceeds the {MAX_TERM[b['zone']]}-year "
                                   f"maximum for {b['zone']} beds")
            due = round(surveyed * RATE[b["zone"]], 2)
            if abs(payload["rent_gbp"] - due) > 0.01:
                raise RuntimeError(f"HTTP 422 rent {payload['rent_gbp']:.2f} GBP does not match {surveyed} ha at the "
                                   f"{b['zone']} rate ({due:.2f} GBP)")
            return {"lease": f"LS-{payload['bed'][3:]}", "status": "granted"}

        if not cap["within_cap"]:
            top.set_output({"status": "declined", "reason": "holdings cap"})
            return
        result = rec.tool("submit_lease", submit, {"applicant": app["applicant"], "bed": app["bed"],
                                                   "area_ha": bed["area_ha"], "existing_holdings_ha": total,
                                                   "term_years": terms["term_years"],
                                                   "depuration_plan": terms["depuration_plan"],
                                                   "rent_gbp": rent["rent_gbp"]})
        top.set_output(result)


def record(base_url: str, inp: dict, path: str) -> None:
    rec = Recorder(AGENT, AGENT, base_url)
    try:
        run_agent(rec, inp)
    except RuntimeError:
        pass
    rec.write(path)
