"""consular-appointments: a consulate's visa appointment desk (openai_agents route).

OpenAI Agents SDK: a triage agent hands off to the visa desk (or the passport-renewal desk); the visa
desk looks the applicant up and checks the passport in parallel, lists interview slots, runs a
document-checking sub-agent as a tool beside a fee quote, and books the interview.
"""
from __future__ import annotations

import asyncio
import re

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from common import Reply, responses_results, responses_user, system_text, tool_call
from trajdebug.integrations.openai_agents import TrajdebugProcessor

NAME = "consular-appointments"
ROUTE = "openai_agents"
DOMAIN = "consulate visa interview appointments"
SHAPE = "triage agent -> hand-off -> visa desk: parallel lookup/passport tools -> slots tool -> document sub-agent as a tool + fee tool in parallel -> booking tool"
SWITCH = None

APPLICANTS = {
    "A-3301": {"name": "Noor Haddad", "visa_type": "F-1", "post": "LDN", "passport_no": "P7781204",
               "passport_expires": "2031-05-02", "form_passport_expires": "2031-05-02", "household": ["A-3302", "A-3301"],
               "ds160": "AA00C4R7"},
    "A-3302": {"name": "Samir Haddad", "visa_type": "F-2", "post": "LDN", "passport_no": "P7781377",
               "passport_expires": "2030-11-19", "form_passport_expires": "2030-11-19", "household": ["A-3302", "A-3301"],
               "ds160": "AA00C5K2"},
    "A-4410": {"name": "Kenji Mori", "visa_type": "H-1B", "post": "MAN", "passport_no": "TZ1180442",
               "passport_expires": "2032-02-14", "form_passport_expires": "2032-02-14", "household": ["A-4410"],
               "ds160": "AA00D1M9"},
    "A-5127": {"name": "Ana Sousa", "visa_type": "F-1", "post": "MAN", "passport_no": "CB883104",
               "passport_expires": "2033-08-30", "form_passport_expires": "2026-02-11", "household": ["A-5127"],
               "ds160": "AA00E7P3"},
    "A-6093": {"name": "Olu Adeyemi", "visa_type": "J-1", "post": "LDN", "passport_no": "B09917261",
               "passport_expires": "2030-04-01", "form_passport_expires": "2030-04-01", "household": ["A-6093"],
               "ds160": "AA00F2Q8"},
    "A-7005": {"name": "Mei Lin", "visa_type": "B1/B2", "post": "LDN", "passport_no": "E55310982",
               "passport_expires": "2029-09-09", "form_passport_expires": "2029-09-09", "household": ["A-7005"],
               "ds160": "AA00G9T1", "prior_visa": "B1/B2 2019"},
}
SLOTS = [
    {"slot": "LDN-0412", "post": "LDN", "category": "B1/B2", "date": "2027-01-11"},
    {"slot": "LDN-0415", "post": "LDN", "category": "F/J/M", "date": "2027-01-12"},
    {"slot": "LDN-0420", "post": "LDN", "category": "F/J/M", "date": "2027-01-14"},
    {"slot": "MAN-0107", "post": "MAN", "category": "B1/B2", "date": "2027-01-08"},
    {"slot": "MAN-0110", "post": "MAN", "category": "F/J/M", "date": "2027-01-13"},
    {"slot": "MAN-0118", "post": "MAN", "category": "H/L", "date": "2027-01-19"},
]
CATEGORY = {"F-1": "F/J/M", "F-2": "F/J/M", "J-1": "F/J/M", "H-1B": "H/L", "B1/B2": "B1/B2"}
FEES = {"F/J/M": 185.0, "H/L": 205.0, "B1/B2": 185.0}

INPUTS = [
    {"task": "student visa interview for A-3301", "text": "I am applicant A-3301 and need an interview for my F-1 student visa."},
    {"task": "work visa interview for A-4410", "text": "Applicant A-4410 here, I need an H-1B visa interview at the Manchester post."},
    {"task": "student visa interview for A-5127", "text": "Hello, I'm A-5127. Please book my F-1 visa interview."},
    {"task": "exchange visitor interview for A-6093", "text": "Applicant A-6093, J-1 exchange visitor, I would like an interview slot."},
    {"task": "spouse visa interview for A-3302", "text": "I am A-3302, applying for an F-2 visa as a dependant spouse; please book an interview."},
]


# ------------------------------------------------------------------ the model's side
def brain(request):
    system = system_text(request)
    user = responses_user(request)
    results = responses_results(request)
    if system.startswith("Route"):
        target = "transfer_to_renewal_desk" if SWITCH == "E5" else "transfer_to_visa_desk"
        if "transfer_to_visa_desk" in results or "transfer_to_renewal_desk" in results:
            return "Transferred."
        return Reply(tool_calls=(tool_call(target, {}),))
    aid = re.search(r"A-\d{4}", user).group(0)
    if system.startswith("Check the documents"):
        if "fetch_file" not in results:
            who = APPLICANTS[aid]["household"][0] if SWITCH == "E3" else aid
            return Reply(tool_calls=(tool_call("fetch_file", {"applicant_id": who}),))
        f = results["fetch_file"][0]
        return f"Documents complete for {f['applicant_id']}: DS-160 {f['ds160']}, photo ok, SEVIS ok."
    if system.startswith("Renew"):
        if "lookup_applicant" not in results:
            return Reply(tool_calls=(tool_call("lookup_applicant", {"applicant_id": aid}),))
        if "open_renewal" not in results:
            return Reply(tool_calls=(tool_call("open_renewal", {"applicant_id": aid}),))
        return "Renewal opened."
    # the visa desk
    if "lookup_applicant" not in results:
        return Reply(tool_calls=(tool_call("lookup_applicant", {"applicant_id": aid}),
                                 tool_call("check_passport", {"applicant_id": aid})))
    app, pp = results["lookup_applicant"][0], results["check_passport"][0]
    if "list_slots" not in results:
        return Reply(tool_calls=(tool_call("list_slots", {"post": app["post"], "visa_type": app["visa_type"]}),))
    if "check_documents" not in results:
        return Reply(tool_calls=(tool_call("check_documents", {"input": f"Check the file of applicant {aid}."}),
                                 tool_call("quote_fee", {"visa_type": app["visa_type"]})))
    if "book_appointment" not in results:
        ds160 = re.search(r"DS-160 (\w+)", str(results["check_documents"][0])).group(1)
        passport_no = "P7781240" if SWITCH == "E2" else pp["passport_no"]
        return Reply(tool_calls=(tool_call("book_appointment", {
            "applicant_id": aid, "slot": results["list_slots"][0][0]["slot"], "passport_no": passport_no,
            "passport_expires": pp["expires"], "ds160": ds160, "fee": results["quote_fee"][0]["fee"]}),))
    b = results["book_appointment"][0]
    return f"Your interview is booked: {b['slot']} on {b['date']}. Bring your passport and the DS-160 confirmation."


# ------------------------------------------------------------------ tools
@function_tool
def lookup_applicant(applicant_id: str) -> dict:
    """The applicant's case: name, visa type, post."""
    a = APPLICANTS[applicant_id]
    return {"applicant_id": applicant_id, "name": a["name"], "visa_type": a["visa_type"], "post": a["post"]}


def _passport_registry(applicant_id):
    if SWITCH == "E4":
        raise TimeoutError("passport registry did not answer in 3 s")
    a = APPLICANTS[applicant_id]
    return {"applicant_id": applicant_id, "passport_no": a["passport_no"], "expires": a["passport_expires"], "source": "registry"}


@function_tool
def check_passport(applicant_id: str) -> dict:
    """Passport number and expiry from the passport registry."""
    try:
        return _passport_registry(applicant_id)
    except TimeoutError:
        a = APPLICANTS[applicant_id]
        return {"applicant_id": applicant_id, "passport_no": a["passport_no"], "expires": a["form_passport_expires"],
                "source": "application form"}


@function_tool
def list_slots(post: str, visa_type: str) -> list:
    """Open interview slots at a post for a visa type, earliest first."""
    rows = [s for s in SLOTS if s["post"] == post]
    if SWITCH != "E1":
        rows = [s for s in rows if s["category"] == CATEGORY[visa_type]]
    return sorted(rows, key=lambda s: s["date"])


@function_tool
def quote_fee(visa_type: str) -> dict:
    """The application fee for a visa type."""
    return {"visa_type": visa_type, "fee": FEES[CATEGORY[visa_type]], "currency": "USD"}


@function_tool
def fetch_file(applicant_id: str) -> dict:
    """The applicant's document file."""
    a = APPLICANTS[applicant_id]
    return {"applicant_id": applicant_id, "name": a["name"], "ds160": a["ds160"], "photo": "ok", "sevis": "ok"}


@function_tool(failure_error_function=None)
def book_appointment(applicant_id: str, slot: str, passport_no: str, passport_expires: str, ds160: str, fee: float) -> dict:
    """Book an interview slot."""
    a = APPLICANTS[applicant_id]
    s = next(x for x in SLOTS if x["slot"] == slot)
    if s["category"] != CATEGORY[a["visa_type"]]:
        raise ValueError(f"booking refused: slot {slot} is reserved for {s['category']} interviews; the application is {a['visa_type']}")
    if passport_no != a["passport_no"]:
        raise ValueError(f"booking refused: passport number {passport_no} does not match the record of {applicant_id}")
    if passport_expires < s["date"]:
        raise ValueError(f"booking refused: passport expiry {passport_expires} is before the interview date {s['date']}")
    if ds160 != a["ds160"]:
        raise ValueError(f"booking refused: DS-160 confirmation {ds160} does not belong to applicant {applicant_id}")
    return {"slot": slot, "date": s["date"], "applicant_id": applicant_id, "status": "booked"}


@function_tool(failure_error_function=None)
def open_renewal(applicant_id: str) -> dict:
    """Open a visa renewal (interview waiver) case."""
    a = APPLICANTS[applicant_id]
    if not a.get("prior_visa"):
        raise ValueError(f"renewal refused: applicant {applicant_id} holds no prior visa; a renewal cannot be opened")
    return {"renewal": f"RN-{applicant_id}", "status": "open"}


def agents_for(model):
    checker = Agent(name="document_checker", instructions="Check the documents of the applicant named.", model=model,
                    tools=[fetch_file])
    visa = Agent(name="visa_desk", instructions="Book visa interviews. Use the tools.", model=model,
                 tools=[lookup_applicant, check_passport, list_slots,
                        checker.as_tool(tool_name="check_documents", tool_description="Check the applicant's documents."),
                        quote_fee, book_appointment])
    renewal = Agent(name="renewal_desk", instructions="Renew visas without interview. Use the tools.", model=model,
                    tools=[lookup_applicant, open_renewal])
    return Agent(name="triage", instructions="Route the applicant to the right desk.", model=model, handoffs=[visa, renewal])


def execute(inp, server, path):
    async def main():
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(client)
        try:
            await Runner.run(agents_for(server.model), inp["text"], run_config=RunConfig(workflow_name=NAME))
        finally:
            await client.close()

    set_default_openai_api("responses")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp["task"])])
    try:
        asyncio.run(main())
    except Exception as exc:  # the SDK wraps a tool's exception in its own error types
        if "refused" not in str(exc) and "refused" not in str(getattr(exc, "__cause__", "")):
            raise
    finally:
        set_trace_processors([])


CASES = [
    {"id": "zc61-consular-1", "input": 0, "switch": "E1", "fault_kind": "tool_ignores_argument",
     "root": {"name": "list_slots", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "book_appointment", "occurrence": 1},
     "description": "The slot listing ignores its visa_type argument and answers every London slot, so the earliest one, LDN-0412 for B1/B2 interviews, is offered for an F-1 student."},
    {"id": "zc61-consular-2", "input": 3, "switch": "E2", "fault_kind": "hallucinated_value",
     "root": {"name": "response", "occurrence": 7, "kind": "llm"},
     "failure": {"name": "book_appointment", "occurrence": 1},
     "description": "The visa desk model books with passport number P7781240, a number no tool returned, instead of the registry's B09917261."},
    {"id": "zc61-consular-3", "input": 0, "switch": "E3", "fault_kind": "subagent_wrong_entity",
     "root": {"name": "document_checker", "occurrence": 1, "kind": "agent"},
     "failure": {"name": "book_appointment", "occurrence": 1},
     "description": "The document-checking sub-agent opens the file of the household's first member, A-3302, and reports that spouse's DS-160 AA00C5K2 for applicant A-3301."},
    {"id": "zc61-consular-4", "input": 2, "switch": "E4", "fault_kind": "swallowed_error",
     "root": {"name": "check_passport", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "book_appointment", "occurrence": 1},
     "description": "The passport check catches a registry timeout and answers the expiry typed on the application form (2026-02-11), from an old passport, as if the registry had said it."},
    {"id": "zc61-consular-5", "input": 1, "switch": "E5", "fault_kind": "wrong_routing",
     "root": {"name": "response", "occurrence": 1, "kind": "llm"},
     "failure": {"name": "open_renewal", "occurrence": 1},
     "description": "The triage model hands a first-time H-1B applicant to the renewal desk instead of the visa desk."},
]
