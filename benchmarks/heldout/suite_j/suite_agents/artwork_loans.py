"""Museum artwork loans (route: langgraph): a borrowing museum's request becomes a registered loan.

A LangGraph graph: parse the request, a research agent (model + tools, parallel tool calls) reads
each artwork's record and condition report, the loan policies are retrieved per medium, a courier
sub-graph (its own model and shipping tool) plans crates, insurance is quoted, the model drafts the
agreement, the registrar's system registers it, and a final check compares insurance with the loan.
"""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from ..harness import AgentSpec, Fault, active, extract_json, last_user, system_text, tool_results
from ..routes import chat_openai


NAME = "artwork-loan-coordinator"

ART = {
    "1987.44": ("Harbour at Dusk", "painting", 4_200_000),
    "1987.45": ("Harbour at Dawn", "painting", 3_900_000),
    "1921.7": ("Portrait of a Weaver", "painting", 6_400_000),
    "1921.17": ("Study of Hands", "work on paper", 180_000),
    "1955.203": ("Salt Marsh, Etching", "work on paper", 95_000),
    "1955.204": ("Salt Marsh II, Etching", "work on paper", 88_000),
    "2003.12": ("Blue Interior", "painting", 2_750_000),
    "1899.3": ("River Mill", "painting", 1_300_000),
    "1968.88": ("Night Study", "work on paper", 240_000),
    "2011.5": ("Field, Late August", "painting", 980_000),
}
RULES = {"painting": {"max_lux": 150, "rh": [45, 55]}, "work on paper": {"max_lux": 50, "rh": [45, 55]}}
POLICY_DOCS = [
    Document(page_content="Paintings and panels: display at 150 lux or less, relative humidity 45-55%.",
             metadata={"policy": "LP-04", "medium": "painting", "max_lux": 150}),
    Document(page_content="Works on paper (prints, drawings, etchings): display at 50 lux or less, "
                          "relative humidity 45-55%.", metadata={"policy": "LP-07", "medium": "work on paper",
                                                                   "max_lux": 50}),
]


def loan(ref: str, borrower: str, city: str, start: str, end: str, days: int, works: list[str]) -> dict[str, Any]:
    return {"ref": ref, "borrower": borrower, "city": city, "start": start, "end": end, "days": days,
            "works": works}


INPUTS = [
    loan("LN-2026-031", "Musée des Confluences", "Lyon", "2026-05-02", "2026-08-30", 120, ["1955.203", "1955.204"]),
    loan("LN-2026-034", "Kunsthal Rotterdam", "Rotterdam", "2026-04-10", "2026-07-09", 90,
         ["1987.44", "1921.7", "2003.12"]),
    loan("LN-2026-036", "Ateneum", "Helsinki", "2026-06-01", "2026-09-29", 120, ["1987.45", "1899.3"]),
    loan("LN-2026-040", "National Gallery of Ireland", "Dublin", "2026-03-20", "2026-07-18", 120,
         ["2011.5", "1968.88"]),
    loan("LN-2026-041", "Moderna Museet", "Stockholm", "2026-09-01", "2026-11-30", 90, ["2003.12"]),
]
REFS = [
    loan("LN-2026-027", "Museo Thyssen", "Madrid", "2026-02-14", "2026-05-14", 89, ["1899.3", "2011.5"]),
    loan("LN-2026-029", "Städel Museum", "Frankfurt", "2026-10-01", "2027-01-29", 120, ["1921.17"]),
    loan("LN-2026-043", "Art Institute of Chicago", "Chicago", "2026-05-15", "2026-08-13", 90,
         ["1987.44", "1987.45"]),
    loan("LN-2026-045", "Tate Liverpool", "Liverpool", "2026-07-01", "2026-09-29", 90, ["1968.88", "1955.203"]),
]


class RegistrarRejected(RuntimeError):
    pass


class LoanCheckFailed(AssertionError):
    pass


# -- the model -------------------------------------------------------------------------------------


def policy(request: Any) -> str | Any:
    from trajdebug.testing import Reply, tool_call

    system, user = system_text(request), last_user(request)
    if system.startswith("You research artworks"):
        works = extract_json(user)["works"]
        done = [name for name, _ in tool_results(request)]
        if "get_artwork_record" not in done:
            return Reply(tool_calls=tuple(tool_call("get_artwork_record", {"accession": a}) for a in works))
        if "get_condition_report" not in done:
            asked = ["1921.17" if a == "1921.7" and active("aw-args") else a for a in works]
            return Reply(tool_calls=tuple(tool_call("get_condition_report", {"accession": a}) for a in asked))
        results = [json.loads(c) for _, c in tool_results(request)]
        records = {r["accession"]: r for r in results if "title" in r}
        reports = [r for r in results if "condition" in r]
        out = []
        for a, rep in zip(works, reports):
            out.append({"accession": a, "title": records[a]["title"], "medium": records[a]["medium"],
                        "condition": rep["condition"], "valuation_usd": rep["valuation_usd"]})
        return json.dumps({"artworks": out})
    if system.startswith("You plan crates"):
        data = extract_json(user)
        crates = []
        for k, a in enumerate(data["works"]):
            if k == 0 and active("aw-courier"):
                a = data["collection_neighbours"].get(a, a)
            crates.append({"crate": f"C{k + 1}", "accession": a, "type": "climate-controlled"})
        return json.dumps({"crates": crates, "courier": "museum courier accompanies"})
    data = extract_json(user)
    start, end = data["start"], data["end"]
    if active("aw-dates"):
        start, end = (f"{d[8:10]}/{d[5:7]}/{d[0:4]}" for d in (start, end))
    return json.dumps({"loan": data["ref"], "borrower": data["borrower"], "loan_start": start, "loan_end": end,
                       "display": data["display"], "insurance": data["insurance"]})


# -- tools -----------------------------------------------------------------------------------------


@tool
def get_artwork_record(accession: str) -> dict:
    """The collection record of an artwork: title, medium."""
    title, medium, _ = ART[accession]
    return {"accession": accession, "title": title, "medium": medium}


@tool
def get_condition_report(accession: str) -> dict:
    """The latest condition report of an artwork, with its current valuation."""
    _, _, value = ART[accession]
    return {"accession": accession, "condition": "stable, fit to travel", "valuation_usd": value,
            "examined": "2026-01-15"}


@tool
def quote_shipping(crates: list[dict], destination: str) -> dict:
    """Quote fine-art shipping for the crates to the destination city."""
    return {"carrier": "Hasenkamp", "destination": destination, "crates": [c["accession"] for c in crates],
            "quote_eur": 4200 + 1850 * len(crates)}


@tool
def quote_insurance(total_value_usd: int, venue_city: str, days: int) -> dict:
    """Quote nail-to-nail insurance for the loan period."""
    covered = 30 if active("aw-insure") else days
    return {"policy": f"NTN-{venue_city[:3].upper()}-{total_value_usd // 1000}", "insured_usd": total_value_usd,
            "coverage_days": covered, "premium_usd": round(total_value_usd * 0.0011 * covered / 30)}


@tool
def register_loan(agreement: dict, works: list[str], crates: list[str], display: list[dict]) -> dict:
    """Register the loan agreement with the registrar's collection system."""
    for key in ("loan_start", "loan_end"):
        v = agreement[key]
        if len(v) != 10 or v[4] != "-" or v[7] != "-":
            raise RegistrarRejected(f"registrar: {key} '{v}' is not an ISO 8601 date (YYYY-MM-DD)")
    for a in crates:
        if a not in works:
            raise RegistrarRejected(f"registrar: crate manifest lists {a}, which is not on loan {agreement['loan']}")
    for d in display:
        limit = RULES[ART[d["accession"]][1]]["max_lux"]
        if d["max_lux"] > limit:
            raise RegistrarRejected(f"registrar: {d['accession']} is a {ART[d['accession']][1]}; display light "
                                    f"must stay at or below {limit} lux, agreement says {d['max_lux']}")
    insured = agreement["insurance"]["insured_usd"]
    value = sum(ART[a][2] for a in works)
    if insured < value:
        raise RegistrarRejected(f"registrar: insured value {insured:,} USD is below the collection valuation "
                                f"{value:,} USD for loan {agreement['loan']}")
    return {"loan": agreement["loan"], "status": "registered", "works": works}


class PolicyRetriever(BaseRetriever):
    """Loan policies, searched by medium."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        ranked = sorted(POLICY_DOCS, key=lambda d: -sum(w in d.page_content.lower() for w in query.lower().split()))
        if active("aw-policy"):
            # ranked by policy number alone
            ranked = sorted(POLICY_DOCS, key=lambda d: d.metadata["policy"])
        return ranked[:1]


# -- the graph -------------------------------------------------------------------------------------


class LoanState(TypedDict, total=False):
    request: str
    loan: dict
    messages: Annotated[list[AnyMessage], add_messages]
    artworks: list
    display: Annotated[list, operator.add]
    shipping: dict
    insurance: dict
    agreement: dict
    registration: dict


class CourierState(TypedDict, total=False):
    works: list
    destination: str
    crates: list
    shipping: dict


def parse_loan_request(text: str) -> dict[str, Any]:
    fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    return {"ref": fields["Loan"], "borrower": fields["Borrower"], "city": fields["Venue"],
            "start": fields["From"], "end": fields["To"], "days": int(fields["Days"]),
            "works": fields["Works"].split(", ")}


def parse_research(text: str) -> list[dict[str, Any]]:
    return list(json.loads(text)["artworks"])


def build(llm: Any) -> Any:
    research_llm = llm.bind_tools([get_artwork_record, get_condition_report])
    retriever = PolicyRetriever().with_config(run_name="search_loan_policies")

    def plan_crates(state: CourierState) -> dict:
        neighbours = {a: n for a in state["works"] for n in ART if n != a and n.rsplit(".", 1)[0] == a.rsplit(".", 1)[0]}
        msg = llm.invoke([SystemMessage("You plan crates for outgoing loans. Answer JSON: crates, courier."),
                          HumanMessage("Crating: " + json.dumps({"works": state["works"],
                                                                  "collection_neighbours": neighbours}))])
        return {"crates": json.loads(msg.content)["crates"]}

    def ship(state: CourierState) -> dict:
        return {"shipping": quote_shipping.invoke({"crates": state["crates"], "destination": state["destination"]})}

    sub = StateGraph(CourierState)
    sub.add_node("plan_crates", plan_crates)
    sub.add_node("quote_shipping", ship)
    sub.add_edge(START, "plan_crates")
    sub.add_edge("plan_crates", "quote_shipping")
    sub.add_edge("quote_shipping", END)
    courier = sub.compile()

    def intake(state: LoanState) -> dict:
        parsed = RunnableLambda(parse_loan_request, name="parse_loan_request").invoke(state["request"])
        return {"loan": parsed, "messages": [
            SystemMessage("You research artworks for a loan: read each record and condition report, then answer JSON."),
            HumanMessage("Loan works: " + json.dumps({"works": parsed["works"]}))]}

    def research_agent(state: LoanState) -> dict:
        return {"messages": [research_llm.invoke(state["messages"])]}

    def collect(state: LoanState) -> dict:
        return {"artworks": RunnableLambda(parse_research, name="parse_research").invoke(state["messages"][-1].content)}

    def check_policy(state: LoanState) -> dict:
        display = []
        for art in state["artworks"]:
            [doc] = retriever.invoke(f"loan policy for {art['medium']} display light")
            display.append({"accession": art["accession"], "max_lux": doc.metadata["max_lux"],
                            "policy": doc.metadata["policy"]})
        return {"display": display}

    def courier_planner(state: LoanState) -> dict:
        out = courier.invoke({"works": state["loan"]["works"], "destination": state["loan"]["city"]})
        return {"shipping": out["shipping"]}

    def insure(state: LoanState) -> dict:
        total = sum(a["valuation_usd"] for a in state["artworks"])
        return {"insurance": quote_insurance.invoke({"total_value_usd": total, "venue_city": state["loan"]["city"],
                                                     "days": state["loan"]["days"]})}

    def draft_agreement(state: LoanState) -> dict:
        ask = {**{k: state["loan"][k] for k in ("ref", "borrower", "start", "end")},
               "display": state["display"], "insurance": state["insurance"]}
        msg = llm.invoke([SystemMessage("You draft loan agreements. Answer JSON with ISO dates."),
                          HumanMessage("Agreement terms: " + json.dumps(ask))])
        return {"agreement": json.loads(msg.content)}

    def register(state: LoanState) -> dict:
        return {"registration": register_loan.invoke({
            "agreement": state["agreement"], "works": state["loan"]["works"],
            "crates": state["shipping"]["crates"], "display": state["agreement"]["display"]})}

    def final_check(state: LoanState) -> dict:
        covered, days = state["insurance"]["coverage_days"], state["loan"]["days"]
        if covered < days:
            raise LoanCheckFailed(f"insurance {state['insurance']['policy']} covers {covered} days; "
                                  f"loan {state['loan']['ref']} runs {days} days nail to nail")
        return {}

    g = StateGraph(LoanState)
    for name, fn in [("intake", intake), ("research_agent", research_agent),
                     ("tools", ToolNode([get_artwork_record, get_condition_report])), ("collect", collect),
                     ("check_policy", check_policy), ("courier_planner", courier_planner), ("insure", insure),
                     ("draft_agreement", draft_agreement), ("register", register), ("final_check", final_check)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "research_agent")
    g.add_conditional_edges("research_agent", tools_condition, {"tools": "tools", END: "collect"})
    g.add_edge("tools", "research_agent")
    for a, b in [("collect", "check_policy"), ("check_policy", "courier_planner"), ("courier_planner", "insure"),
                 ("insure", "draft_agreement"), ("draft_agreement", "register"), ("register", "final_check"),
                 ("final_check", END)]:
        g.add_edge(a, b)
    return g.compile()


_GRAPHS: dict[str, Any] = {}


def run(server: Any, item: dict[str, Any], path: Path) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    server.use(policy)
    llm = chat_openai(server)
    if _GRAPHS.get("llm") is not llm:
        _GRAPHS.update(llm=llm, graph=build(llm))
    graph = _GRAPHS["graph"]
    request = (f"Loan: {item['ref']}\nBorrower: {item['borrower']}\nVenue: {item['city']}\nFrom: {item['start']}\n"
               f"To: {item['end']}\nDays: {item['days']}\nWorks: {', '.join(item['works'])}")
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"arrange loan {item['ref']} to {item['borrower']}")
    try:
        graph.invoke({"request": request}, config={"callbacks": [tracer]})
    except (RegistrarRejected, LoanCheckFailed):
        pass


SPEC = AgentSpec(
    name=NAME, route="langgraph", domain="museum artwork loans", inputs=INPUTS, ref_inputs=REFS, run=run,
    faults=[
        Fault("aw-policy", "wrong_retrieval", 0, "search_loan_policies", "Paintings and panels",
              "the policy search returns the paintings policy for etchings; the registrar refuses 150 lux"),
        Fault("aw-args", "wrong_tool_args", 1, "ChatOpenAI", '"accession": "1921.17"',
              "the model asks for the condition report of 1921.17, not 1921.7; the valuation is too low"),
        Fault("aw-courier", "subagent_wrong_entity", 2, "ChatOpenAI", '\\"accession\\": \\"1987.44\\"',
              "the courier sub-graph crates the neighbouring accession 1987.44"),
        Fault("aw-insure", "tool_ignores_argument", 3, "quote_insurance", '"coverage_days": 30',
              "the insurer's quote ignores the loan days; the final check compares coverage with the loan"),
        Fault("aw-dates", "format_drift", 4, "ChatOpenAI", "01/09/2026",
              "the model writes day-first dates; the registrar refuses them"),
    ],
)
