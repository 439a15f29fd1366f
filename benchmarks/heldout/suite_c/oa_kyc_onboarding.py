"""kyc_onboarding: a bank's know-your-customer onboarding agent (OpenAI Agents SDK, with a
``document_examiner`` sub-agent exposed to the officer through ``Agent.as_tool``).

kyc_officer: get_application -> verify_identity_document (sub-agent: list_household_documents ->
fetch_document -> extract_id_fields -> JSON verdict) -> sanctions_screen -> risk_rating ->
open_account (core banking, which refuses an onboarding whose evidence does not hold together).
"""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path
from typing import Any

from fakellm import Reply, last_result, system_prompt, user_text
from harness import FAULT, AgentSpec, Case
from routes import agents_model, install, run_agents


TODAY = date(2026, 2, 24)

APPLICATIONS = {
    "K-2201": {"name": "Daniel Okafor", "birth_date": "1988-07-14", "country": "NG", "occupation": "civil engineer", "annual_income": 64_000, "household": "H-77"},
    "K-2214": {"name": "Ingrid Solberg", "birth_date": "1979-03-02", "country": "NO", "occupation": "dentist", "annual_income": 118_000, "household": "H-81"},
    "K-2230": {"name": "Jun Watanabe", "birth_date": "1994-11-21", "country": "JP", "occupation": "product designer", "annual_income": 87_000, "household": "H-82"},
    "K-2245": {"name": "Fatima Zahra Benali", "birth_date": "1990-01-09", "country": "MA", "occupation": "pharmacist", "annual_income": 52_000, "household": "H-83"},
    "K-2258": {"name": "Lucas Moreau", "birth_date": "1985-06-30", "country": "FR", "occupation": "sommelier", "annual_income": 45_000, "household": "H-84"},
    "K-2262": {"name": "Carlos Mendes", "birth_date": "1982-04-17", "country": "PT", "occupation": "electrician", "annual_income": 39_000, "household": "H-85"},
    "K-2277": {"name": "Aiko Tanaka", "birth_date": "1991-12-05", "country": "JP", "occupation": "data scientist", "annual_income": 96_000, "household": "H-86"},
    "K-2289": {"name": "Samuel Boateng", "birth_date": "1986-08-23", "country": "GH", "occupation": "accountant", "annual_income": 58_000, "household": "H-87"},
    "K-2293": {"name": "Elif Yilmaz", "birth_date": "1993-05-28", "country": "TR", "occupation": "architect", "annual_income": 61_000, "household": "H-88"},
}

# Identity documents on file per household (the bank keeps joint-account households together).
DOCUMENTS = {
    "H-77": [("DOC-7701", "Maria Okafor", "passport", "OKAFOR", "MARIA", "1990/02/11", "A07733120"),
             ("DOC-7702", "Daniel Okafor", "passport", "OKAFOR", "DANIEL", "1988/07/14", "A09912345")],
    "H-81": [("DOC-8101", "Ingrid Solberg", "passport", "SOLBERG", "INGRID", "02.03.1979", "NO3381920")],
    "H-82": [("DOC-8201", "Jun Watanabe", "passport", "WATANABE", "JUN", "1994/11/21", "TR4419008")],
    "H-83": [("DOC-8301", "Fatima Zahra Benali", "national id", "BENALI", "FATIMA ZAHRA", "1990/01/09", "BK229817")],
    "H-84": [("DOC-8401", "Lucas Moreau", "national id", "MOREAU", "LUCAS", "1985/06/30", "FR1200934")],
    "H-85": [("DOC-8501", "Carlos Mendes", "citizen card", "MENDES", "CARLOS", "17.04.1982", "PT88120034")],
    "H-86": [("DOC-8601", "Aiko Tanaka", "passport", "TANAKA", "AIKO", "1991/12/05", "TZ0091183")],
    "H-87": [("DOC-8701", "Esi Boateng", "passport", "BOATENG", "ESI", "1988/10/02", "G3300127"),
             ("DOC-8702", "Samuel Boateng", "passport", "BOATENG", "SAMUEL", "1986/08/23", "G3300456")],
    "H-88": [("DOC-8801", "Elif Yilmaz", "passport", "YILMAZ", "ELIF", "1993/05/28", "U12093348")],
}
DOC_INDEX = {d[0]: d for docs in DOCUMENTS.values() for d in docs}

# Screening results the screening gateway cached from earlier customer reviews.
SCREEN_CACHE = {("Elif Yilmaz", "1993-05-28"): {"screening_id": "SCR-2025-118842", "screened_on": "2025-11-30"}}


class OnboardingRefused(Exception):
    """Core banking refused to open the account."""


def build_tools() -> dict[str, Any]:
    from agents import function_tool

    @function_tool
    def get_application(application_id: str) -> str:
        """Fetch an account application: applicant, birth date, country, occupation, income, household."""
        FAULT.tick("get_application")
        return json.dumps({"application_id": application_id, **APPLICATIONS[application_id]})

    @function_tool
    def list_household_documents(household_id: str) -> str:
        """List the identity documents on file for a household."""
        FAULT.tick("list_household_documents")
        return json.dumps([{"doc_id": d[0], "holder": d[1], "type": d[2]} for d in DOCUMENTS[household_id]])

    @function_tool
    def fetch_document(doc_id: str) -> str:
        """Fetch the OCR text of one identity document."""
        FAULT.tick("fetch_document")
        d = DOC_INDEX[doc_id]
        return (f"IDENTITY DOCUMENT ({d[2].upper()})\nSurname: {d[3]}\nGiven names: {d[4]}\n"
                f"Date of birth: {d[5]}\nDocument no: {d[6]}\nDate of expiry: 2031/02/03")

    @function_tool
    def extract_id_fields(ocr_text: str) -> str:
        """Parse the OCR text of an identity document into fields (full_name, birth_date ISO, document_number)."""
        FAULT.tick("extract_id_fields")
        surname = re.search(r"Surname: (.+)", ocr_text).group(1).strip()
        given = re.search(r"Given names: (.+)", ocr_text).group(1).strip()
        raw_dob = re.search(r"Date of birth: (.+)", ocr_text).group(1).strip()
        m = re.fullmatch(r"(\d{4})/(\d{2})/(\d{2})", raw_dob)
        dob = f"{m.group(1)}-{m.group(2)}-{m.group(3)}" if m else None
        if dob is None:
            m = re.fullmatch(r"(\d{2})\.(\d{2})\.(\d{4})", raw_dob)
            if m and not FAULT.on("dotted_dates_unparsed"):
                dob = f"{m.group(3)}-{m.group(2)}-{m.group(1)}"
        if dob is None:
            dob = "1900-01-01"  # placeholder so the record validates downstream
            if FAULT.on("dotted_dates_unparsed"):
                FAULT.fire_tool("extract_id_fields", dob)
        name = " ".join(w.capitalize() for w in f"{given} {surname}".split())
        return json.dumps({"full_name": name, "birth_date": dob,
                           "document_number": re.search(r"Document no: (\S+)", ocr_text).group(1)})

    @function_tool
    def sanctions_screen(full_name: str, birth_date: str, country: str) -> str:
        """Screen a person against sanctions and PEP lists."""
        FAULT.tick("sanctions_screen")
        cached = SCREEN_CACHE.get((full_name, birth_date))
        if cached and FAULT.on("screening_cache_reused"):
            FAULT.fire_tool("sanctions_screen", cached["screened_on"])
            return json.dumps({"subject": full_name, "birth_date": birth_date, "result": "clear", "pep": False, **cached})
        sid = f"SCR-2026-{sum(map(ord, full_name + birth_date)) * 37 % 900000 + 100000}"
        return json.dumps({"subject": full_name, "birth_date": birth_date, "result": "clear", "pep": False,
                           "screening_id": sid, "screened_on": TODAY.isoformat()})

    @function_tool
    def risk_rating(country: str, occupation: str, annual_income: float, pep: bool) -> str:
        """Customer risk tier from country, occupation, income and PEP status."""
        FAULT.tick("risk_rating")
        tier = "standard" if not pep and annual_income < 250_000 else "enhanced"
        return json.dumps({"tier": tier, "review_in_months": 36 if tier == "standard" else 12})

    @function_tool(failure_error_function=None)
    def open_account(application_id: str, verified_name: str, verified_birth_date: str, document_number: str,
                     screening_id: str, screened_on: str, screened_name: str, risk_tier: str) -> str:
        """Open the account in core banking with the KYC evidence."""
        FAULT.tick("open_account")
        app = APPLICATIONS[application_id]
        if verified_name != app["name"]:
            raise OnboardingRefused(
                f"identity evidence for {application_id} names {verified_name}, but the applicant is {app['name']}"
            )
        if verified_birth_date != app["birth_date"]:
            raise OnboardingRefused(
                f"{application_id}: birth date on the verified ID ({verified_birth_date}) disagrees with the application ({app['birth_date']})"
            )
        age_days = (TODAY - date.fromisoformat(screened_on)).days
        if age_days > 30:
            raise OnboardingRefused(
                f"screening {screening_id} was run {age_days} days ago ({screened_on}); policy KYC-7 requires a screen from the last 30 days"
            )
        if screened_name != app["name"]:
            raise OnboardingRefused(f"screening {screening_id} covers {screened_name}, not {app['name']}")
        return json.dumps({"account": f"ACC-{application_id[2:]}-01", "status": "open", "tier": risk_tier})

    return {"officer": [get_application, sanctions_screen, risk_rating, open_account],
            "examiner": [list_household_documents, fetch_document, extract_id_fields]}


# -- the scripted model ------------------------------------------------------------------------------


def examiner_policy(body: dict[str, Any]) -> Reply:
    ask = user_text(body)
    household = re.search(r"household (H-\d+)", ask).group(1)
    name = re.search(r"applicant (.+?)[.;,]", ask).group(1)
    docs = last_result(body, "list_household_documents")
    raw = last_result(body, "fetch_document")
    fields = last_result(body, "extract_id_fields")
    if docs is None:
        return Reply(tool_calls=[("list_household_documents", {"household_id": household})])
    if raw is None:
        pick = next(d for d in docs if d["holder"] == name)
        if FAULT.on("examiner_takes_first_passport") and docs[0] is not pick and docs[0]["type"] == "passport":
            pick = docs[0]  # first passport in the household folder
            FAULT.fire_llm(pick["doc_id"])
        return Reply(tool_calls=[("fetch_document", {"doc_id": pick["doc_id"]})])
    if fields is None:
        return Reply(tool_calls=[("extract_id_fields", {"ocr_text": raw})])
    return Reply(content=json.dumps({"verified": True, **fields}))


def officer_policy(body: dict[str, Any]) -> Reply:
    app_id = re.search(r"\b(K-\d{4})\b", user_text(body)).group(1)
    app = last_result(body, "get_application")
    ver = last_result(body, "verify_identity_document")
    scr = last_result(body, "sanctions_screen")
    risk = last_result(body, "risk_rating")
    opened = last_result(body, "open_account")
    if app is None:
        return Reply(tool_calls=[("get_application", {"application_id": app_id})])
    if ver is None:
        return Reply(tool_calls=[("verify_identity_document", {
            "input": f"Verify the identity document in household {app['household']} for applicant {app['name']}; return the parsed fields."})])
    if scr is None:
        return Reply(tool_calls=[("sanctions_screen", {"full_name": ver["full_name"], "birth_date": ver["birth_date"], "country": app["country"]})])
    if risk is None:
        return Reply(tool_calls=[("risk_rating", {"country": app["country"], "occupation": app["occupation"],
                                                  "annual_income": app["annual_income"], "pep": scr["pep"]})])
    if opened is None:
        return Reply(tool_calls=[("open_account", {
            "application_id": app_id, "verified_name": ver["full_name"], "verified_birth_date": ver["birth_date"],
            "document_number": ver["document_number"], "screening_id": scr["screening_id"], "screened_on": scr["screened_on"],
            "screened_name": scr["subject"], "risk_tier": risk["tier"]})])
    return Reply(content=f"Account {opened['account']} opened for {app['name']} ({risk['tier']} risk).")


def policy(body: dict[str, Any]) -> Reply:
    if system_prompt(body).startswith("You are the document examiner"):
        return examiner_policy(body)
    return officer_policy(body)


def build_agents() -> Any:
    from agents import Agent

    tools = build_tools()
    examiner = Agent(
        name="document_examiner",
        instructions="You are the document examiner. Find the applicant's own identity document in the household folder, "
                     "fetch it, parse it with extract_id_fields and answer with the parsed fields as JSON.",
        tools=tools["examiner"],
        model=agents_model("gpt-4.1-mini"),
    )
    return Agent(
        name="kyc_officer",
        instructions="You are a KYC officer at Fjord & Bay Bank. Verify identity through the document examiner, screen the "
                     "verified identity, rate the risk, then open the account with the evidence.",
        tools=[tools["officer"][0],
               examiner.as_tool(tool_name="verify_identity_document",
                                tool_description="Ask the document examiner to verify the applicant's identity document."),
               *tools["officer"][1:]],
        model=agents_model("gpt-4.1"),
    )


def execute(inp: dict[str, Any], path: Path, key: str) -> str:
    install(policy)
    return run_agents(build_agents(), inp["message"], path, workflow="kyc_onboarding", key=key)


SPEC = AgentSpec(
    name="kyc_onboarding",
    route="openai_agents",
    domain="banking KYC",
    summary="Agents SDK: kyc_officer with document_examiner sub-agent (as_tool): get_application -> verify_identity_document "
            "-> sanctions_screen -> risk_rating -> open_account",
    execute=execute,
    passing=[
        {"message": "Please onboard application K-2214 (personal current account)."},
        {"message": "New joint-household applicant, application K-2230. Run KYC and open the account."},
        {"message": "KYC for K-2245 please; customer is waiting in branch."},
        {"message": "Open a savings account for application K-2258 once KYC clears."},
        {"message": "Application K-2289 needs onboarding today."},
    ],
    cases=[
        Case(
            slug="examiner_reads_spouse_passport",
            input={"message": "Onboard application K-2201 (joint household, spouse already a customer)."},
            fault="examiner_takes_first_passport",
            fault_kind="subagent_wrong_entity",
            description="Inside the document_examiner sub-agent, the model opens the first passport in household H-77 "
                        "(the spouse, Maria Okafor) instead of Daniel's. The sub-agent returns Maria's parsed fields as "
                        "verified; the officer screens and submits them and core banking refuses the name mismatch.",
            failure="open_account",
            path=["fetch_document", "generation gpt-4.1-mini", "extract_id_fields", "generation gpt-4.1-mini",
                  "verify_identity_document", "generation gpt-4.1", "open_account"],
        ),
        Case(
            slug="dotted_birth_date_defaulted",
            input={"message": "Please run KYC on K-2262 and open the account."},
            fault="dotted_dates_unparsed",
            fault_kind="lossy_parsing",
            description="extract_id_fields does not recognise the Portuguese card's dotted birth date (17.04.1982) and "
                        "fills the placeholder 1900-01-01 without saying so; the examiner reports it as verified, the "
                        "officer screens with it and core banking refuses the birth-date mismatch.",
            failure="open_account",
            path=["generation gpt-4.1-mini", "verify_identity_document", "generation gpt-4.1", "open_account"],
        ),
        Case(
            slug="screening_served_from_cache",
            input={"message": "Onboard application K-2293 — customer previously held a card with us."},
            fault="screening_cache_reused",
            fault_kind="stale_data",
            description="sanctions_screen returns the cached November 2025 result for Elif Yilmaz instead of screening "
                        "again; the officer submits that screening and core banking refuses it as older than 30 days.",
            failure="open_account",
            path=["generation gpt-4.1", "open_account"],
        ),
    ],
)
