"""Graffiti removal service (LangGraph): read a complaint, look up the site, get a quote from a quoting
sub-graph, book a crew and dispatch the job."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, user_json
from .kit import active

AGENT = "graffiti"
ROUTE = "langgraph"
DOMAIN = "graffiti removal service"
SYSTEM = "[graffiti-desk] You run a council graffiti removal desk. Reply with JSON only."

SITES = {
    "12 Mill Lane": {"site_id": "S-1401", "surface": "brick", "area_m2": 9.5, "zone": "Z2", "heritage": True},
    "14 Mill Lane": {"site_id": "S-1402", "surface": "render", "area_m2": 4.0, "zone": "Z2", "heritage": False},
    "3 Canal Walk": {"site_id": "S-2210", "surface": "concrete", "area_m2": 11.1, "zone": "Z4", "heritage": False},
    "7 Station Rd": {"site_id": "S-3305", "surface": "metal", "area_m2": 3.2, "zone": "Z1", "heritage": False},
    "40 High St": {"site_id": "S-1190", "surface": "brick", "area_m2": 6.0, "zone": "Z1", "heritage": True},
    "2 Park Gate": {"site_id": "S-4021", "surface": "stone", "area_m2": 5.5, "zone": "Z3", "heritage": False},
    "88 Dock Rd": {"site_id": "S-2290", "surface": "concrete", "area_m2": 14.0, "zone": "Z4", "heritage": False},
}
CACHED = {"12 Mill Lane": {"site_id": "S-1401", "surface": "brick", "area_m2": 9.5, "zone": "Z2", "heritage": False,
                           "as_of": "2026-11-02"}}
CREWS = [
    {"crew": "C-3", "zone": "Z2", "skills": ["pressure wash"]},
    {"crew": "C-5", "zone": "Z2", "skills": ["pressure wash", "soft wash", "render repaint"]},
    {"crew": "C-1", "zone": "Z1", "skills": ["pressure wash", "soft wash", "solvent gel"]},
    {"crew": "C-7", "zone": "Z3", "skills": ["soft wash", "solvent gel", "pressure wash"]},
    {"crew": "C-8", "zone": "Z4", "skills": ["pressure wash", "solvent gel"]},
]
METHODS = {"brick": ["pressure wash", "soft wash"], "render": ["render repaint"], "concrete": ["pressure wash"],
           "metal": ["solvent gel"], "stone": ["soft wash"]}

INPUTS = {
    "mill": {"report": "R-7781", "date": "2027-03-08", "queue_prev": "14 Mill Lane",
             "text": "Tags sprayed across the front of 12 Mill Lane, about 9 m2, words are abusive. Brick wall."},
    "canal": {"report": "R-7790", "date": "2027-03-08", "queue_prev": "88 Dock Rd",
              "text": "Large offensive slogan on the underpass wall at 3 Canal Walk, roughly 120 sq ft, concrete."},
    "station": {"report": "R-7795", "date": "2027-03-09", "queue_prev": "40 High St",
                "text": "Stickers and marker tags on the metal bin store at 7 Station Rd, 3 m2."},
    "high": {"report": "R-7801", "date": "2027-03-09", "queue_prev": "7 Station Rd",
             "text": "Spray paint on the old bank at 40 High St, about 65 sq ft, brick facade, offensive."},
    "park": {"report": "R-7810", "date": "2027-03-10", "queue_prev": "3 Canal Walk",
             "text": "Chalk-style paint tags on the stone gate pillar at 2 Park Gate, 5 m2."},
    "dock": {"report": "R-7812", "date": "2027-03-10", "queue_prev": "2 Park Gate",
             "text": "Tags on the warehouse at 88 Dock Rd, 14 m2, concrete, nothing offensive."},
}
REFS = ["station", "high", "park", "dock"]

CASES = [
    Case("gr_cache", AGENT, "stale_data", "site_register", 1, "dispatch_job",
         "site_register answered from a cache that predates the facade's heritage listing", "mill"),
    Case("gr_sub", AGENT, "subagent_wrong_entity", "prepare_quote", 1, "dispatch_job",
         "prepare_quote handed the quoting sub-graph the previous queue entry's address", "mill"),
    Case("gr_ign", AGENT, "tool_ignores_argument", "crew_roster", 1, "dispatch_job",
         "crew_roster ignored the skill filter and the first crew it listed cannot soft wash", "mill"),
    Case("gr_unit", AGENT, "unit_error", "measure_area", 1, "dispatch_job",
         "measure_area took a square-feet figure as square metres", "canal"),
    Case("gr_parse", AGENT, "lossy_parsing", "parse_report", 1, "dispatch_job",
         "parse_report dropped the offensive flag given as text, so the job lost its 24 h priority", "canal"),
]


class DispatchRejected(Exception):
    pass


def policy(body: dict) -> str:
    ask = user_json(body)
    if ask.get("ask") == "extract":
        text = ask["text"]
        addr = next(a for a in SITES if a in text)
        m = re.search(r"(\d+(?:\.\d+)?)\s*(m2|sq ft)", text)
        return json.dumps({"address": addr, "area": f"{m.group(1)} {m.group(2)}",
                           "offensive": "yes" if ("offensive" in text and "nothing offensive" not in text)
                           or "abusive" in text else "no"})
    if ask.get("ask") == "method":
        options = [d["method"] for d in ask["methods"]]
        method = "soft wash" if ask["heritage"] and "soft wash" in options else options[0]
        return json.dumps({"method": method, "rate_eur_m2": {"soft wash": 38, "pressure wash": 22}.get(method, 30)})
    return "{}"


class MethodRetriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [Document(page_content=f"{m} is suitable for {query}", metadata={"method": m})
                for m in METHODS.get(query, [])]


@tool
def site_register(address: str) -> dict:
    """The council's property register entry for an address."""
    if active("gr_cache") and address in CACHED:
        return dict(CACHED[address])
    return {**SITES[address], "as_of": "2027-03-01"}


@tool
def crew_roster(zone: str, skill: str) -> list:
    """Crews working a zone that hold a skill."""
    crews = [c for c in CREWS if c["zone"] == zone]
    if not active("gr_ign"):
        crews = [c for c in crews if skill in c["skills"]]
    return crews


@tool
def dispatch_job(job: dict) -> dict:
    """Create the work order in the council's job system."""
    site = SITES[job["address"]]
    if job["quote"]["site_id"] != site["site_id"]:
        raise DispatchRejected(f"HTTP 409 jobs API: quote {job['quote']['quote_id']} is for site "
                               f"{job['quote']['site_id']}, report {job['report']} is for {site['site_id']}")
    if site["heritage"] and job["quote"]["method"] == "pressure wash":
        raise DispatchRejected(f"HTTP 403 permits: {job['address']} is a listed facade; pressure washing needs "
                               "listed building consent")
    if abs(job["quote"]["area_m2"] - site["area_m2"]) > 0.25 * site["area_m2"]:
        raise DispatchRejected(f"HTTP 422 jobs API: quoted area {job['quote']['area_m2']} m2 does not match the "
                               f"surveyed {site['area_m2']} m2 at {job['address']}")
    text = next(v["text"] for v in INPUTS.values() if v["report"] == job["report"])
    flagged = ("offensive" in text and "nothing offensive" not in text) or "abusive" in text
    if flagged and job["due"] != job["reported"]:
        raise DispatchRejected(f"HTTP 422 jobs API: offensive content must be removed within 24 h; job due "
                               f"{job['due']}, reported {job['reported']}")
    if job["quote"]["method"] not in next(c for c in CREWS if c["crew"] == job["crew"])["skills"]:
        raise DispatchRejected(f"HTTP 422 jobs API: crew {job['crew']} is not certified for "
                               f"{job['quote']['method']}")
    return {"work_order": f"WO-{job['report'][2:]}", "crew": job["crew"]}


class JobState(TypedDict, total=False):
    request: dict
    extract_text: str
    report: dict
    site: dict
    quote_request: dict
    quote: dict
    crew: str
    order: dict


class QuoteState(TypedDict, total=False):
    address: str
    area: str
    methods: list
    site: dict
    choice: dict
    area_m2: float
    quote: dict
    heritage_hint: bool


def build(llm: ChatOpenAI) -> Any:
    retriever = MethodRetriever()

    def q_lookup(state: QuoteState) -> dict:
        site = SITES[state["address"]]
        docs = retriever.invoke(site["surface"])
        return {"site": site, "methods": [d.metadata for d in docs]}

    def q_choose(state: QuoteState) -> dict:
        ask = {"ask": "method", "surface": state["site"]["surface"], "heritage": state["heritage_hint"],
               "methods": state["methods"]}
        msg = llm.invoke([SystemMessage(SYSTEM), HumanMessage(json.dumps(ask))])
        return {"choice": json.loads(msg.content)}

    def measure_area(state: QuoteState) -> dict:
        value, unit = state["area"].split(" ", 1)
        area = float(value)
        if unit == "sq ft" and not active("gr_unit"):
            area = round(area * 0.0929, 1)
        return {"area_m2": area}

    def q_price(state: QuoteState) -> dict:
        c = state["choice"]
        return {"quote": {"quote_id": f"Q-{state['site']['site_id'][2:]}", "site_id": state["site"]["site_id"],
                          "method": c["method"], "area_m2": state["area_m2"],
                          "total_eur": round(c["rate_eur_m2"] * state["area_m2"], 2)}}

    qg = StateGraph(QuoteState)
    for n, f in [("q_lookup", q_lookup), ("q_choose", q_choose), ("measure_area", measure_area),
                 ("q_price", q_price)]:
        qg.add_node(n, f)
    qg.add_edge(START, "q_lookup")
    qg.add_edge("q_lookup", "q_choose")
    qg.add_edge("q_choose", "measure_area")
    qg.add_edge("measure_area", "q_price")
    qg.add_edge("q_price", END)
    quoter = qg.compile()

    def intake(state: JobState) -> dict:
        msg = llm.invoke([SystemMessage(SYSTEM), HumanMessage(json.dumps({"ask": "extract",
                                                                          "text": state["request"]["text"]}))])
        return {"extract_text": msg.content}

    def parse_report(state: JobState) -> dict:
        data = json.loads(state["extract_text"])
        flag = data.get("offensive")
        offensive = flag is True if active("gr_parse") else flag in (True, "yes", "true")
        return {"report": {"address": data["address"], "area": data["area"], "offensive": offensive}}

    def lookup_site(state: JobState) -> dict:
        return {"site": site_register.invoke({"address": state["report"]["address"]})}

    def prepare_quote(state: JobState) -> dict:
        address = state["request"]["queue_prev"] if active("gr_sub") else state["report"]["address"]
        return {"quote_request": {"address": address, "area": state["report"]["area"]}}

    def get_quote(state: JobState) -> dict:
        out = quoter.invoke({**state["quote_request"], "heritage_hint": state["site"]["heritage"]})
        return {"quote": out["quote"]}

    def book_crew(state: JobState) -> dict:
        crews = crew_roster.invoke({"zone": state["site"]["zone"], "skill": state["quote"]["method"]})
        return {"crew": crews[0]["crew"]}

    def dispatch(state: JobState) -> dict:
        req, rep = state["request"], state["report"]
        due = req["date"] if rep["offensive"] else f"{req['date'][:-2]}{int(req['date'][-2:]) + 5:02d}"
        job = {"report": req["report"], "address": rep["address"], "quote": state["quote"], "crew": state["crew"],
               "offensive": rep["offensive"],
               "reported": req["date"], "due": due}
        return {"order": dispatch_job.invoke({"job": job})}

    g = StateGraph(JobState)
    names = [("intake", intake), ("parse_report", parse_report), ("lookup_site", lookup_site),
             ("prepare_quote", prepare_quote), ("get_quote", get_quote), ("book_crew", book_crew),
             ("dispatch", dispatch)]
    for n, f in names:
        g.add_node(n, f)
    g.add_edge(START, "intake")
    for (a, _), (b, _) in zip(names, names[1:]):
        g.add_edge(a, b)
    g.add_edge("dispatch", END)
    return g.compile()


def record(key: str, out: Path, base_url: str) -> None:
    llm = ChatOpenAI(base_url=base_url, api_key="local", model="desk-model", max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=str(out), name="graffiti-dispatcher", task=f"clear report {INPUTS[key]['report']}")
    try:
        build(llm).invoke({"request": INPUTS[key]}, config={"callbacks": [tracer]})
    except DispatchRejected:
        pass
