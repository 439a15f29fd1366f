"""Botanical garden plant loans (OpenAI Agents SDK, Responses API): prepares an outgoing specimen loan.

Shape: an intake `Agent` asks a `loan_planner` sub-agent (agent as a tool) for the checklist, then hands off to
the domestic or the international loans desk. The desk finds the accession, asks a `condition_assessor`
sub-agent (with its own horticulture-log tool), checks phytosanitary and CITES rules when abroad, drafts the
agreement and runs `validate_loan` (the garden's loan policy, raising), then answers.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any


sys.path.insert(0, str(Path(__file__).resolve().parent))

import kit
from common import MODEL, chat_messages, system_text, text_of, tool_calls_made


NAME = "plant-loans"
ROUTE = "openai_agents"
DOMAIN = "botanical garden plant loans"
EXT = "jsonl"
SHAPE = ("Agents SDK (Responses API): intake agent with a loan_planner sub-agent tool, hand-off to a domestic or "
         "international desk agent; accession search, condition_assessor sub-agent (horticulture-log tool), "
         "phytosanitary and CITES tools, agreement draft, validator tool; 32-41 steps")

HOME_COUNTRY = "US"

TAXA = {
    "Nepenthes rajah": {"family": "Nepenthaceae", "cites": "I"},
    "Nepenthes rafflesiana": {"family": "Nepenthaceae", "cites": "II"},
    "Amorphophallus titanum": {"family": "Araceae", "cites": None},
    "Victoria amazonica": {"family": "Nymphaeaceae", "cites": None},
    "Paphiopedilum rothschildianum": {"family": "Orchidaceae", "cites": "I"},
    "Welwitschia mirabilis": {"family": "Welwitschiaceae", "cites": None},
    "Quercus alba": {"family": "Fagaceae", "cites": None},
    "Ariocarpus kotschoubeyanus": {"family": "Cactaceae", "cites": "I"},
}

ACCESSIONS = {
    "2017-0522": {"taxon": "Nepenthes rajah", "collection": "living", "status": "alive", "location": "Highland House",
                  "valuation_usd": 9500, "year": 2017},
    "2017-0252": {"taxon": "Nepenthes rafflesiana", "collection": "living", "status": "alive",
                  "location": "Lowland House", "valuation_usd": 1200, "year": 2017},
    "2009-0311": {"taxon": "Amorphophallus titanum", "collection": "living", "status": "alive",
                  "location": "Tropical House", "valuation_usd": 18000, "year": 2009},
    "1998-0147": {"taxon": "Amorphophallus titanum", "collection": "living", "status": "dead 2021-06-02",
                  "location": "Tropical House (former)", "valuation_usd": 0, "year": 1998},
    "2019-0088": {"taxon": "Victoria amazonica", "collection": "living", "status": "alive", "location": "Lily Pool",
                  "valuation_usd": 4200, "year": 2019},
    "2021-0419": {"taxon": "Victoria amazonica", "collection": "living", "status": "alive",
                  "location": "Propagation Range", "valuation_usd": 3800, "year": 2021},
    "2015-0730": {"taxon": "Paphiopedilum rothschildianum", "collection": "living", "status": "alive",
                  "location": "Orchid Range", "valuation_usd": 7600, "year": 2015},
    "2006-0194": {"taxon": "Welwitschia mirabilis", "collection": "living", "status": "alive",
                  "location": "Desert House", "valuation_usd": 12500, "year": 2006},
    "H-448102": {"taxon": "Quercus alba", "collection": "herbarium", "status": "mounted sheet",
                 "location": "Herbarium cabinet 41", "valuation_usd": 300, "year": 1934},
    "2012-0655": {"taxon": "Ariocarpus kotschoubeyanus", "collection": "living", "status": "alive",
                  "location": "Cactus House", "valuation_usd": 2100, "year": 2012},
}
LOGS = {
    "2017-0522": [("2024-08-02", "repotted in live sphagnum, new pitchers forming"), ("2024-10-11", "vigorous")],
    "2017-0252": [("2024-09-15", "vigorous, 14 pitchers")],
    "2009-0311": [("2024-07-20", "dormant tuber 61 kg, firm"), ("2024-10-01", "leaf emerging")],
    "1998-0147": [("2021-06-02", "tuber rot, plant removed")],
    "2019-0088": [("2024-09-30", "pads 1.8 m, flowering")],
    "2021-0419": [("2024-10-05", "young plant, 6 pads")],
    "2015-0730": [("2024-09-12", "two growths, spike forming")],
    "2006-0194": [("2024-08-28", "leaves healthy, cone set")],
    "H-448102": [("2023-02-14", "sheet remounted, label verified")],
    "2012-0655": [("2024-10-02", "firm, flowering")],
}

REQUESTS = {
    "LR-118": {"borrower": "Atlanta Botanical Garden", "city": "Atlanta", "country": "US",
               "taxon": "Nepenthes rajah", "material": "living", "months": 6, "purpose": "conservation display"},
    "LR-121": {"borrower": "Missouri Botanical Garden", "city": "St. Louis", "country": "US",
               "taxon": "Amorphophallus titanum", "material": "living", "months": 9, "purpose": "flowering study"},
    "LR-124": {"borrower": "Royal Botanic Garden Edinburgh", "city": "Edinburgh", "country": "GB",
               "ship_via": "its partner office in Boston, MA", "taxon": "Victoria amazonica", "material": "living",
               "months": 6, "purpose": "research display"},
    "LR-127": {"borrower": "Singapore Botanic Gardens", "city": "Singapore", "country": "SG",
               "taxon": "Paphiopedilum rothschildianum", "material": "living", "months": 12,
               "purpose": "pollination research"},
    "LR-130": {"borrower": "Denver Botanic Gardens", "city": "Denver", "country": "US",
               "taxon": "Welwitschia mirabilis", "material": "living", "months": 8, "purpose": "desert exhibit"},
    # reference requests
    "LR-101": {"borrower": "Harvard University Herbaria", "city": "Cambridge, MA", "country": "US",
               "taxon": "Quercus alba", "material": "herbarium", "months": 6, "purpose": "taxonomic revision"},
    "LR-104": {"borrower": "Jardín Botánico Culiacán", "city": "Culiacán", "country": "MX",
               "taxon": "Ariocarpus kotschoubeyanus", "material": "living", "months": 10, "purpose": "reintroduction"},
    "LR-107": {"borrower": "Chicago Botanic Garden", "city": "Glencoe, IL", "country": "US",
               "taxon": "Amorphophallus titanum", "material": "living", "months": 4, "purpose": "flowering event"},
    "LR-110": {"borrower": "Royal Botanic Gardens, Kew", "city": "Richmond", "country": "GB",
               "taxon": "Victoria amazonica", "material": "living", "months": 6, "purpose": "glasshouse display"},
}
PHYTO = {"GB": {"phytosanitary_certificate": True, "import_permit": True},
         "SG": {"phytosanitary_certificate": True, "import_permit": True},
         "MX": {"phytosanitary_certificate": True, "import_permit": False}}
FLAKY_PHYTO = {"LR-127", "LR-110"}
MAX_MONTHS = {"living": 12, "herbarium": 12}

CASES = [
    {"case": "zzh_plnt_01", "switch": "plant.assessor_id", "input": "LR-118", "fault_kind": "subagent_wrong_entity",
     "root": ("response", 6), "failure": ("validate_loan", 1),
     "description": "The condition_assessor sub-agent looks up the horticulture log of 2017-0252 (Nepenthes "
                    "rafflesiana) instead of 2017-0522, so the condition report attached is another plant's."},
    {"case": "zzh_plnt_02", "switch": "plant.search_order", "input": "LR-121", "fault_kind": "wrong_retrieval",
     "root": ("find_accession", 1), "failure": ("validate_loan", 1),
     "description": "The accession search orders equal-scoring hits by accession number, so 'Amorphophallus "
                    "titanum' returns 1998-0147, which died in 2021, instead of the living 2009-0311."},
    {"case": "zzh_plnt_03", "switch": "plant.route_shipping", "input": "LR-124", "fault_kind": "wrong_routing",
     "root": ("response", 3), "failure": ("validate_loan", 1),
     "description": "The intake model hands the Edinburgh request to the domestic desk because of its Boston "
                    "shipping office, so no phytosanitary certificate or import permit is arranged for the UK."},
    {"case": "zzh_plnt_04", "switch": "plant.checklist_cites", "input": "LR-127", "fault_kind": "plan_error",
     "root": ("response", 2), "failure": ("validate_loan", 1),
     "description": "The loan_planner's checklist for the Singapore orchid loan leaves out the CITES check, so "
                    "the desk never asks for the Appendix I permit of Paphiopedilum rothschildianum."},
    {"case": "zzh_plnt_05", "switch": "plant.insurance_figure", "input": "LR-130", "fault_kind": "hallucinated_value",
     "root": ("response", 8), "failure": ("validate_loan", 1),
     "description": "Drafting the agreement, the desk model writes an insurance value of USD 5,000, a figure no "
                    "tool gave; the accession is valued at USD 12,500."},
]
REFS = ["LR-101", "LR-104", "LR-107", "LR-110"]

_CALLS: dict[str, int] = {}
_INPUT: dict[str, Any] = {}


class LoanPolicyError(Exception):
    """The agreement breaks the garden's loan policy."""


# -- the model ------------------------------------------------------------------------------------------


def _results(messages: list[dict]) -> tuple[dict[str, list[tuple[dict, Any]]], list[tuple[str, dict]]]:
    calls = tool_calls_made(messages)
    ids = [c.get("id") for m in messages for c in (m.get("tool_calls") or [])]
    outputs = {m.get("tool_call_id"): text_of(m) for m in messages if m.get("role") == "tool"}
    done: dict[str, list[tuple[dict, Any]]] = {}
    failed = []
    for (name, args), cid in zip(calls, ids, strict=True):
        if cid not in outputs:
            continue
        raw = outputs[cid]
        if raw.startswith("An error occurred"):
            failed.append((name, args))
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        done.setdefault(name, []).append((args, value))
    ok = [a for entries in done.values() for a, _ in entries]
    return done, [(n, a) for n, a in failed if a not in ok]


def _request_of(messages: list[dict]) -> tuple[str, dict]:
    first = text_of(next(m for m in messages if m.get("role") == "user"))
    rid = re.search(r"(LR-\d+)", first).group(1)
    return rid, REQUESTS[rid]


def _intake(messages: list[dict]) -> Any:
    from trajdebug.testing import Reply, tool_call

    rid, req = _request_of(messages)
    done, _ = _results(messages)
    if "loan_planner" not in done:
        return Reply(tool_calls=(tool_call("loan_planner", {"input": json.dumps({"request": rid, **req})}),))
    abroad = req["country"] != HOME_COUNTRY
    if kit.on("plant.route_shipping") and "ship_via" in req:
        abroad = False
    return Reply(tool_calls=(tool_call("transfer_to_international_desk" if abroad else "transfer_to_domestic_desk",
                                       {}),))


def _planner(messages: list[dict]) -> str:
    req = json.loads(text_of([m for m in messages if m.get("role") == "user"][-1]))
    steps = ["find accession", "condition report"]
    if req["country"] != HOME_COUNTRY:
        steps.append("phytosanitary")
        if TAXA[req["taxon"]]["cites"] and not kit.on("plant.checklist_cites"):
            steps.append("cites")
    steps += ["draft agreement", "validate"]
    return json.dumps({"request": req["request"], "checklist": steps})


def _assessor(messages: list[dict]) -> Any:
    from trajdebug.testing import Reply, tool_call

    ask = text_of([m for m in messages if m.get("role") == "user"][-1])
    accession = re.search(r"accession (\S+?)[ ,(]", ask).group(1)
    done, _ = _results(messages)
    if "horticulture_log" not in done:
        look = accession
        if kit.on("plant.assessor_id") and accession == "2017-0522":
            look = "2017-0252"
        return Reply(tool_calls=(tool_call("horticulture_log", {"accession": look}),))
    log = done["horticulture_log"][0][1]
    return json.dumps({"accession": log["accession"], "taxon": log["taxon"], "last_entry": log["entries"][-1],
                       "condition": "good", "fit_to_travel": True})


def _desk(messages: list[dict], abroad: bool) -> Any:
    from trajdebug.testing import Reply, tool_call

    rid, req = _request_of(messages)
    done, retry = _results(messages)
    if retry:
        return Reply(tool_calls=tuple(tool_call(n, a) for n, a in retry))
    checklist = done["loan_planner"][0][1]["checklist"]
    if "find_accession" not in done:
        return Reply(tool_calls=(tool_call("find_accession", {"query": req["taxon"], "collection": req["material"]}),))
    acc = done["find_accession"][0][1]["results"][0]
    if "condition_assessor" not in done:
        return Reply(tool_calls=(tool_call("condition_assessor", {
            "input": f"Assess accession {acc['accession']} ({acc['taxon']}) for a {req['months']}-month loan."}),))
    pending = []
    if abroad and "phytosanitary" in checklist and "phyto_requirements" not in done:
        pending.append(tool_call("phyto_requirements", {"country": req["country"]}))
    if abroad and "cites" in checklist and "cites_status" not in done:
        pending.append(tool_call("cites_status", {"taxon": req["taxon"]}))
    if pending:
        return Reply(tool_calls=tuple(pending))
    if "draft_agreement" not in done:
        permits = []
        if "phyto_requirements" in done:
            phyto = done["phyto_requirements"][0][1]
            permits.append("phytosanitary certificate")
            if phyto["import_permit"]:
                permits.append(f"import permit ({req['country']})")
        if "cites_status" in done and done["cites_status"][0][1]["appendix"]:
            permits.append(f"CITES export permit (Appendix {done['cites_status'][0][1]['appendix']})")
        insured = acc["valuation_usd"]
        if kit.on("plant.insurance_figure"):
            insured = 5000
        report = done["condition_assessor"][0][1]
        terms = {"request": rid, "borrower": req["borrower"], "country": req["country"], "accession": acc["accession"],
                 "taxon": acc["taxon"], "collection": req["material"], "months": req["months"],
                 "insurance_usd": insured, "permits": permits, "condition_report": report}
        return Reply(tool_calls=(tool_call("draft_agreement", {"terms_json": json.dumps(terms)}),))
    if "validate_loan" not in done:
        return Reply(tool_calls=(tool_call("validate_loan", {"agreement_json": json.dumps(done["draft_agreement"][0][1])}),))
    return (f"Loan {rid} to {req['borrower']} is ready for signature: accession "
            f"{done['draft_agreement'][0][1]['accession']}, {req['months']} months.")


def brain(request: Any) -> Any:
    messages = chat_messages(request)
    system = system_text(messages)
    if system.startswith("You receive incoming loan requests"):
        return _intake(messages)
    if system.startswith("You write loan checklists"):
        return _planner(messages)
    if system.startswith("You assess plant condition"):
        return _assessor(messages)
    if system.startswith("You run the domestic loans desk"):
        return _desk(messages, abroad=False)
    if system.startswith("You run the international loans desk"):
        return _desk(messages, abroad=True)
    return "I cannot help with that."


# -- tools -------------------------------------------------------------------------------------------------


def _tools() -> dict[str, Any]:
    from agents import function_tool

    @function_tool
    def find_accession(query: str, collection: str) -> str:
        """Search the garden's accession records by taxon name.

        Args:
            query: Taxon name or part of it.
            collection: 'living' or 'herbarium'.
        """
        words = set(query.lower().split())
        hits = []
        for acc, rec in ACCESSIONS.items():
            if rec["collection"] != collection:
                continue
            score = len(words & set(rec["taxon"].lower().split()))
            if score:
                hits.append((score, acc, rec))
        if kit.on("plant.search_order"):
            hits.sort(key=lambda h: (-h[0], h[1]))
        else:
            hits.sort(key=lambda h: (-h[0], h[2]["status"] != "alive" and h[2]["collection"] == "living",
                                     -h[2]["year"], h[1]))
        return json.dumps({"query": query, "results": [{"accession": a, **{k: r[k] for k in (
            "taxon", "collection", "status", "location", "valuation_usd")}} for _, a, r in hits[:3]]})

    @function_tool
    def horticulture_log(accession: str) -> str:
        """The horticulture log entries of an accession.

        Args:
            accession: The accession number.
        """
        return json.dumps({"accession": accession, "taxon": ACCESSIONS[accession]["taxon"],
                           "entries": [{"date": d, "note": n} for d, n in LOGS[accession]]})

    @function_tool
    def phyto_requirements(country: str) -> str:
        """Phytosanitary paperwork a destination country requires for live plant material.

        Args:
            country: ISO country code.
        """
        _CALLS["phyto"] = _CALLS.get("phyto", 0) + 1
        if _INPUT["request"] in FLAKY_PHYTO and _CALLS["phyto"] == 1:
            raise ConnectionError("APHIS PCIT lookup timed out")
        return json.dumps({"country": country, **PHYTO[country]})

    @function_tool
    def cites_status(taxon: str) -> str:
        """The CITES appendix of a taxon (None when not listed).

        Args:
            taxon: The taxon name.
        """
        return json.dumps({"taxon": taxon, "appendix": TAXA[taxon]["cites"]})

    @function_tool
    def draft_agreement(terms_json: str) -> str:
        """Draft the loan agreement from its terms.

        Args:
            terms_json: The terms as JSON.
        """
        terms = json.loads(terms_json)
        return json.dumps({**terms, "agreement_no": f"AGR-{terms['request'][3:]}-2024", "status": "draft"})

    @function_tool(failure_error_function=None)
    def validate_loan(agreement_json: str) -> str:
        """Check a draft loan agreement against the garden's loan policy.

        Args:
            agreement_json: The draft agreement as JSON.
        """
        a = json.loads(agreement_json)
        rec = ACCESSIONS[a["accession"]]
        if a["collection"] == "living" and rec["status"] != "alive":
            raise LoanPolicyError(f"accession {a['accession']} ({rec['taxon']}) is recorded '{rec['status']}'; "
                                  "only living plants can go out on a living loan")
        if a["condition_report"].get("accession") != a["accession"]:
            other = a["condition_report"].get("accession")
            raise LoanPolicyError(f"condition report covers {other} ({ACCESSIONS[other]['taxon']}); the loan is for "
                                  f"{a['accession']} ({rec['taxon']})")
        if a["country"] != HOME_COUNTRY and a["collection"] == "living":
            needs = ["phytosanitary certificate"]
            if PHYTO[a["country"]]["import_permit"]:
                needs.append(f"import permit ({a['country']})")
            for n in needs:
                if n not in a["permits"]:
                    raise LoanPolicyError(f"loan of live {rec['taxon']} to {a['borrower']} ({a['country']}) needs a "
                                          f"{n}; the agreement lists {a['permits']}")
            appendix = TAXA[rec["taxon"]]["cites"]
            if appendix and not any(p.startswith("CITES") for p in a["permits"]):
                raise LoanPolicyError(f"{rec['taxon']} is CITES Appendix {appendix}; the agreement to "
                                      f"{a['borrower']} ({a['country']}) lists no CITES permit")
        if a["insurance_usd"] < rec["valuation_usd"]:
            raise LoanPolicyError(f"insurance value USD {a['insurance_usd']:,} is below the valuation of "
                                  f"{a['accession']}, USD {rec['valuation_usd']:,}")
        if a["months"] > MAX_MONTHS[a["collection"]]:
            raise LoanPolicyError(f"loan period {a['months']} months over the {MAX_MONTHS[a['collection']]}-month limit")
        return "agreement complies with the loan policy"

    return {f.name: f for f in (find_accession, horticulture_log, phyto_requirements, cites_status,
                                draft_agreement, validate_loan)}


async def _run(rid: str, path: Path, server: Any) -> None:
    from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, set_trace_processors
    from agents.exceptions import AgentsException
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    req = REQUESTS[rid]
    client = AsyncOpenAI(base_url=server.base_url, api_key="garden-local", max_retries=0)
    model = OpenAIResponsesModel(model=MODEL, openai_client=client)
    t = _tools()
    planner = Agent(name="loan_planner", model=model,
                    instructions="You write loan checklists for outgoing specimen loans. Answer JSON {request, checklist}.")
    assessor = Agent(name="condition_assessor", model=model, tools=[t["horticulture_log"]],
                     instructions="You assess plant condition for travel from the horticulture log. Answer JSON.")
    assess_tool = assessor.as_tool(tool_name="condition_assessor",
                                   tool_description="Condition report of an accession for a loan.")
    common_tools = [t["find_accession"], assess_tool, t["draft_agreement"], t["validate_loan"]]
    domestic = Agent(name="domestic_desk", model=model, tools=common_tools,
                     instructions="You run the domestic loans desk: accession, condition report, agreement, validation.")
    international = Agent(name="international_desk", model=model,
                          tools=[*common_tools, t["phyto_requirements"], t["cites_status"]],
                          instructions="You run the international loans desk: accession, condition report, "
                                       "phytosanitary and CITES paperwork per the checklist, agreement, validation.")
    intake = Agent(name="intake", model=model, handoffs=[domestic, international],
                   tools=[planner.as_tool(tool_name="loan_planner", tool_description="Checklist for a loan request.")],
                   instructions="You receive incoming loan requests: get the checklist, then hand off to the domestic "
                                "or the international loans desk by where the material goes.")
    processor = TrajdebugProcessor(path=path, name=NAME)
    set_trace_processors([processor])
    via = f", shipping via {req['ship_via']}" if "ship_via" in req else ""
    task = (f"Loan request {rid} from {req['borrower']}, {req['city']} ({req['country']}){via}: {req['material']} "
            f"material of {req['taxon']} for {req['months']} months, purpose: {req['purpose']}.")
    try:
        await Runner.run(intake, task, max_turns=20,
                         run_config=RunConfig(workflow_name=NAME, trace_metadata={"task": task}))
    except AgentsException:
        pass
    finally:
        await client.close()


def record(rid: str, path: Path, server: Any) -> None:
    _CALLS.clear()
    _INPUT["request"] = rid
    asyncio.run(_run(rid, path, server))
