"""Travel visas (route: langgraph): prepare a household's visa applications and lodge them together.

A LangGraph graph: ``intake`` has a model list the applicants; ``applicants`` runs a sub-agent per
applicant (its own compiled graph: fetch the passport, have a model fill the form from the running
conversation, check the form); ``research`` retrieves the visa rules and extracts the required
documents; ``book`` books a consulate appointment; ``lodge`` assembles the dossier and submits it.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any, TypedDict

from benchmarks.heldout.suite_h._common import (
    Agent,
    Fault,
    ModelReplyError,
    active,
    last_user,
    record_langgraph,
)
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph


NAME = "visa-assistant"

# id -> (name, born, employer or None, documents on file)
PEOPLE: dict[str, tuple[str, str, str | None, tuple[str, ...]]] = {
    "A-1": ("Jana Novak", "1983-04-11", "Vltava Logistics", ("employment letter: Vltava Logistics",)),
    "A-2": ("Petr Novak", "1981-09-30", "Brno Steelworks", ("employment letter: Brno Steelworks",)),
    "A-3": ("Tomas Novak", "2009-05-02", None, ("school enrolment",)),
    "B-1": ("Ines Duarte", "1990-01-21", "Porto Ceramics", ("employment letter: Porto Ceramics",)),
    "C-1": ("Malik Haddad", "1975-07-14", "Haddad Dental", ("employment letter: Haddad Dental",)),
    "C-2": ("Lina Haddad", "2012-02-08", None, ("school enrolment",)),
    "D-1": ("Sven Berg", "1968-11-03", None, ("pension statement",)),
    "D-2": ("Karin Berg", "1970-06-19", "Uppsala Library", ("employment letter: Uppsala Library",)),
    "E-1": ("Aiko Tanabe", "1995-03-27", "Kobe Robotics", ("employment letter: Kobe Robotics",)),
    "E-2": ("Ren Tanabe", "1997-12-01", None, ("university enrolment",)),
}
PASSPORTS = {pid: f"CZ{7700 + i * 37}" for i, pid in enumerate(PEOPLE)}
RULES = {
    ("japan", "family visit"): "Japan family visit visa: passport, application form, photo, invitation letter, "
                               "proof of relationship. Fee 3000 JPY.",
    ("japan", "business"): "Japan business visa: passport, application form, photo, letter of guarantee. "
                           "Fee 3000 JPY.",
    ("india", "tourist"): "India tourist visa: passport, application form, photo, return ticket. Fee 40 USD.",
    ("brazil", "family visit"): "Brazil family visit visa: passport, application form, photo, invitation letter, "
                                "proof of relationship. Fee 80 USD.",
}
MANDATORY = {"family visit": {"invitation letter", "proof of relationship"}, "tourist": {"return ticket"}}


class ConsulateRejected(RuntimeError):
    """The consulate's e-visa portal refused the dossier."""


class VisaRules(BaseRetriever):
    """The consulates' published visa rules, searched by country and visa type."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        words = set(query.lower().split())
        country = next(c for c, _ in RULES if c in words)
        kind = "family visit" if "family" in words else "business" if "business" in words else "tourist"
        if active("visa-rules-business") and country == "japan":
            kind = "business"  # the index ranks the business page first
        return [Document(page_content=RULES[(country, kind)], metadata={"country": country, "type": kind})]


@tool
def fetch_passport(applicant: str, holder_id: str) -> dict:
    """The passport on file for a household member."""
    name, born, _, _ = PEOPLE[holder_id]
    return {"for": applicant, "holder": name, "born": born, "number": PASSPORTS[holder_id]}


@tool
def book_appointment(consulate: str, week: str, party_size: int) -> dict:
    """Book a consulate appointment for a party."""
    slots = 1 if active("visa-slot-party") else party_size
    return {"consulate": consulate, "week": week, "slots": slots, "ref": f"APT-{week}-{consulate[:3].upper()}"}


@tool
def submit_application(dossier: dict) -> dict:
    """Lodge the household's applications on the consulate's e-visa portal."""
    missing = MANDATORY.get(dossier["visa_type"], set()) - set(dossier["documents"])
    if missing:
        raise ConsulateRejected(f"{dossier['visa_type']} applications require: {', '.join(sorted(missing))}")
    if dossier["appointment"]["slots"] < len(dossier["forms"]):
        raise ConsulateRejected(f"appointment {dossier['appointment']['ref']} admits "
                                f"{dossier['appointment']['slots']} applicant(s), {len(dossier['forms'])} lodged")
    numbers = [f["passport"] for f in dossier["forms"]]
    for form in dossier["forms"]:
        if form["born"] != PEOPLE[form["applicant"]][1]:
            raise ConsulateRejected(f"{form['applicant']}: date of birth {form['born']} does not match the passport "
                                    f"record")
        if numbers.count(form["passport"]) > 1:
            raise ConsulateRejected(f"passport {form['passport']} appears on more than one application")
        employer = form.get("employer")
        if employer and f"employment letter: {employer}" not in PEOPLE[form["applicant"]][3]:
            raise ConsulateRejected(f"{form['applicant']} declares employer {employer} without an employment "
                                    f"letter from it")
    return {"lodged": len(dossier["forms"]), "status": "received"}


def _parse_applicants(text: str) -> list[str]:
    return [a["id"] for a in json.loads(text)["applicants"]]


def _parse_form(text: str) -> dict[str, Any]:
    return json.loads(text)


def _check_form(form: dict[str, Any]) -> dict[str, Any]:
    complete = all(form.get(k) for k in ("applicant", "name", "passport", "born"))
    return {"applicant": form["applicant"], "complete": complete}


def _extract_requirements(docs: list[Document]) -> list[str]:
    body = docs[0].page_content.split(":", 1)[1].split(".")[0]
    return [d.strip() for d in body.split(",")]


parse_applicants = RunnableLambda(_parse_applicants, name="parse_applicants")
parse_form = RunnableLambda(_parse_form, name="parse_form")
check_form = RunnableLambda(_check_form, name="check_form")
extract_requirements = RunnableLambda(_extract_requirements, name="extract_requirements")


class Sub(TypedDict, total=False):
    applicant: str
    household: list[str]
    history: list[Any]
    passport: dict[str, Any]
    form: dict[str, Any]


class State(TypedDict, total=False):
    request: str
    trip: dict[str, Any]
    applicants: list[str]
    history: list[Any]
    forms: list[dict[str, Any]]
    requirements: list[str]
    appointment: dict[str, Any]


def applicant_agent(llm: ChatOpenAI) -> Any:
    def passport(state: Sub) -> dict[str, Any]:
        holder = state["applicant"]
        if active("visa-sibling-passport") and holder == state["household"][-1]:
            holder = state["household"][0]  # the household's lead applicant
        return {"passport": fetch_passport.invoke({"applicant": state["applicant"], "holder_id": holder})}

    def fill(state: Sub) -> dict[str, Any]:
        name, born, employer, _ = PEOPLE[state["applicant"]]
        ask = (f"Fill the visa form for applicant {state['applicant']}: {name}, born {born}, passport "
               f"{state['passport']['number']}." + (f" Employer: {employer}." if employer else ""))
        history = [*state["history"], ("user", ask)]
        reply = llm.invoke([("system", "Fill visa forms as JSON."), *history])
        form = parse_form.invoke(reply.content)
        check_form.invoke(form)
        return {"form": form, "history": [*history, ("assistant", reply.content)]}

    g = StateGraph(Sub)
    g.add_node("passport", passport)
    g.add_node("fill", fill)
    g.add_edge(START, "passport")
    g.add_edge("passport", "fill")
    g.add_edge("fill", END)
    return g.compile(name="applicant_agent")


def build(llm: ChatOpenAI) -> Any:
    sub = applicant_agent(llm)

    def intake(state: State) -> dict[str, Any]:
        reply = llm.invoke([("user", f"Extract the applicants: {state['request']}")])
        return {"applicants": parse_applicants.invoke(reply.content)}

    def applicants(state: State) -> dict[str, Any]:
        forms, carried = [], []
        for pid in state["applicants"]:
            out = sub.invoke({"applicant": pid, "household": state["applicants"], "history": carried})
            forms.append(out["form"])
            # each applicant's form is filled in a fresh conversation
            carried = out["history"] if active("visa-shared-history") else []
        return {"forms": forms}

    def research(state: State) -> dict[str, Any]:
        trip = state["trip"]
        docs = VisaRules().invoke(f"{trip['country']} {trip['visa_type']} visa requirements",
                                  config={"run_name": "visa_rules"})
        return {"requirements": extract_requirements.invoke(docs)}

    def book(state: State) -> dict[str, Any]:
        trip = state["trip"]
        return {"appointment": book_appointment.invoke({"consulate": trip["consulate"], "week": trip["week"],
                                                        "party_size": len(state["forms"])})}

    def lodge(state: State) -> dict[str, Any]:
        docs = set(state["requirements"]) & {"invitation letter", "proof of relationship", "return ticket",
                                             "letter of guarantee"}
        dossier = {"visa_type": state["trip"]["visa_type"], "documents": sorted(docs), "forms": state["forms"],
                   "appointment": state["appointment"]}
        submit_application.invoke({"dossier": dossier})
        return {}

    g = StateGraph(State)
    order = [("intake", intake), ("applicants", applicants), ("research", research), ("book", book),
             ("lodge", lodge)]
    for name, fn in order:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    for (a, _), (b, _) in itertools.pairwise(order):
        g.add_edge(a, b)
    g.add_edge("lodge", END)
    return g.compile()


def policy(request: Any) -> str:
    prompt = last_user(request)
    if prompt.startswith("Extract the applicants"):
        ids = re.findall(r"\(([A-E]-\d)\)", prompt)
        return json.dumps({"applicants": [{"id": i} for i in ids]})
    found = re.findall(r"applicant ([A-E]-\d): ([^,]+), born ([\d-]+), passport (\w+)", prompt)
    if found:
        pid, name, born, number = found[0]
        employers = [m for msg in request.body["messages"] if msg.get("role") == "user"
                     for m in re.findall(r"Employer: ([^.]+)\.", str(msg.get("content")))]
        if active("visa-form-birthdate") and pid == "A-2":
            born = "1981-03-09"  # the model writes a date of birth of its own
        form = {"applicant": pid, "employer": employers[-1] if employers else None, "name": name, "born": born,
                "passport": number}
        return json.dumps(form)
    raise ModelReplyError(prompt)


def record(server: Any, item: dict[str, Any], path: Path) -> None:
    server.use(policy)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    people = ", ".join(f"{PEOPLE[p][0]} ({p})" for p in item["people"])
    request = f"{item['trip']['visa_type']} visas to {item['trip']['country']} for {people}"
    record_langgraph(NAME, path, request, build(llm), {"request": request, "trip": item["trip"]})


def _trip(country: str, visa_type: str, consulate: str, week: str) -> dict[str, str]:
    return {"country": country, "visa_type": visa_type, "consulate": consulate, "week": week}


AGENT = Agent(
    name=NAME,
    route="langgraph",
    domain="travel visas",
    record=record,
    failing={"people": ["A-1", "A-2", "A-3"], "trip": _trip("japan", "family visit", "prague", "2027-W03")},
    references=(
        {"people": ["B-1"], "trip": _trip("india", "tourist", "lisbon", "2027-W05")},
        {"people": ["C-1", "C-2"], "trip": _trip("brazil", "family visit", "amman", "2027-W02")},
        {"people": ["D-1", "D-2"], "trip": _trip("japan", "family visit", "stockholm", "2027-W07")},
        {"people": ["E-1", "E-2"], "trip": _trip("india", "tourist", "osaka", "2027-W04")},
    ),
    faults=(
        Fault("visa-shared-history", "context_pollution", "ChatOpenAI",
              '"applicant": "A-3", "employer": "Brno Steelworks"', "submit_application",
              "The third applicant's form is filled in a conversation that still holds the previous applicant's "
              "messages, and the model copies that applicant's employer into it."),
        Fault("visa-rules-business", "wrong_retrieval", "visa_rules", "letter of guarantee", "submit_application",
              "The visa-rules retriever returns the business-visa page instead of the family-visit page, so the "
              "dossier lacks the invitation letter and proof of relationship."),
        Fault("visa-slot-party", "tool_ignores_argument", "book_appointment", '"slots": 1', "submit_application",
              "book_appointment ignores party_size and books a single slot for a household of three."),
        Fault("visa-sibling-passport", "subagent_wrong_entity", "fetch_passport",
              '"for": "A-3", "holder": "Jana Novak"', "submit_application",
              "The applicant sub-agent for the child fetches the first household member's passport instead of "
              "the child's own, and the portal finds the passport on two applications."),
        Fault("visa-form-birthdate", "hallucinated_value", "ChatOpenAI", '"born": "1981-03-09"',
              "submit_application",
              "The form-filling model writes a date of birth for the second applicant that its prompt does not "
              "hold, and the portal finds it differs from the passport record."),
    ),
)
