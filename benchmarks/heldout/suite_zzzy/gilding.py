"""Gilder's restoration jobs: LangGraph with a prompt | model | JSON parser chain, a retriever, a supplier call
retried on a dropped connection, an estimating subgraph that loops over sections, graph-state memory."""
from __future__ import annotations

import json
import re
from typing import TypedDict

from langchain_core.documents import Document
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply

NAME = "gilding-restoration"
ROUTE = "langgraph"
DOMAIN = "gilder's restoration jobs"
SHAPE = ("StateGraph: survey chain (prompt | model | JSON parser) -> records retriever -> memory note -> "
         "leaf price with a retried connection -> estimating subgraph looping over sections -> client letter "
         "(model) -> leaf order tool -> release check; 24-32 steps")
SWITCH = None

JOBS = {
    "GF-0412": {"ticket": "Frame GF-0412, Regency mirror: losses on top rail 180 cm2, left stile 95 cm2, right stile 110 cm2, "
                          "crest 60 cm2. 4 damaged areas. Original 23.5 ct water gilding.", "carat": "23.5"},
    "GF-0421": {"ticket": "Frame GF-0421, Victorian overmantel: losses on cornice 240 cm2, frieze 130 cm2. "
                          "2 damaged areas. Original 22 ct oil gilding.", "carat": "22"},
    "GF-0533": {"ticket": "Frame GF-0533, Louis XV panel: losses on cartouche 45 cm2, lower rail 150 cm2, left stile 70 cm2. "
                          "3 damaged areas. Original 23.5 ct water gilding.", "carat": "23.5"},
    "GF-0610": {"ticket": "Frame GF-0610, pier glass: losses on pediment 85 cm2. 1 damaged areas. Original 24 ct water gilding.", "carat": "24"},
    "GF-0777": {"ticket": "Frame GF-0777, altar frame: losses on top rail 300 cm2, base 210 cm2, left pilaster 120 cm2, "
                          "right pilaster 115 cm2, finial 35 cm2. 5 damaged areas. Original 23.5 ct water gilding.", "carat": "23.5"},
}
RECORDS = {
    "GF-0412": [("1998 survey: original surface 23.5 ct water gilt on red bole", "23.5", "red"),
                ("1931 repair: cornice patch in 22 ct oil gilding", "22", "yellow")],
    "GF-0421": [("2004 survey: original surface 22 ct oil gilt", "22", "yellow")],
    "GF-0533": [("2011 survey: original surface 23.5 ct water gilt on grey bole", "23.5", "grey")],
    "GF-0610": [("1987 survey: original surface 24 ct water gilt on red bole", "24", "red")],
    "GF-0777": [("2015 survey: original surface 23.5 ct water gilt on red bole", "23.5", "red"),
                ("1952 repair: base regilt in 22 ct", "22", "yellow")],
}
LEAF_BOOK_EUR = {"22": 38.0, "23.5": 52.0, "24": 61.0}
CM2_PER_BOOK = 70.0

INPUTS = [{"frame": f, "ticket": j["ticket"]} for f, j in JOBS.items()]

CASES = [
    {"id": "zzzy-gilding-1", "input": 1, "switch": "records", "fault_kind": "wrong_retrieval",
     "root": ("conservation_records", 1), "failure": ("release_check", 1),
     "description": "The records search returns the file of the neighbouring frame GF-0412, so the job carries 23.5 ct where the overmantel is 22 ct oil gilt."},
    {"id": "zzzy-gilding-2", "input": 4, "switch": "length", "fault_kind": "truncated_result",
     "root": ("ChatOpenAI", 1), "failure": ("release_check", 1),
     "description": "The survey model's answer is cut off by its length limit after two sections and the JSON parser keeps the partial list."},
    {"id": "zzzy-gilding-3", "input": 2, "switch": "books", "fault_kind": "tool_ignores_argument",
     "root": ("leaf_price", 3), "failure": ("release_check", 1),
     "description": "The leaf price tool ignores the number of books asked for and prices a single book."},
    {"id": "zzzy-gilding-4", "input": 0, "switch": "memory", "fault_kind": "bad_memory_write",
     "root": ("note_treatment", 1), "failure": ("release_check", 1),
     "description": "The treatment note stores the carat of the 1931 cornice patch instead of the original surface."},
    {"id": "zzzy-gilding-5", "input": 4, "switch": "cursor", "fault_kind": "off_by_one",
     "root": ("plan_sections", 1), "failure": ("release_check", 1),
     "description": "The estimating loop starts its section cursor at 1, so the first section is never estimated."},
]


class Records(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager=None):
        frame = re.search(r"GF-\d{4}", query).group(0)
        if SWITCH == "records":
            frame = frame[:-2] + frame[-1] + frame[-2]  # digits read across
        return [Document(page_content=t, metadata={"frame": frame, "carat": c, "bole": b}) for t, c, b in RECORDS[frame]]


conservation_records = Records().with_config(run_name="conservation_records")
_ATTEMPTS = {"n": 0}


@tool
def leaf_price(carat: str, books: int) -> str:
    """Price of gold leaf books from the beater, for a carat and number of books."""
    _ATTEMPTS["n"] += 1
    if _ATTEMPTS["n"] % 2 == 1:
        raise ConnectionError("leaf beater price service dropped the connection")
    n = 1 if SWITCH == "books" else books
    return json.dumps({"carat": carat, "books": books, "total_eur": round(LEAF_BOOK_EUR[carat] * n, 2)})


@tool
def order_leaf(carat: str, books: int) -> str:
    """Order gold leaf books from the beater; returns the invoice."""
    return json.dumps({"carat": carat, "books": books, "invoice_eur": round(LEAF_BOOK_EUR[carat] * books, 2)})


def policy(request):
    msgs = request.body["messages"]
    user = msgs[-1]["content"]
    if user.startswith("Survey"):
        pairs = re.findall(r"([a-z][a-z ]+?) (\d+) cm2", user.split("losses on ")[1])
        gold = re.search(r"Original ([\d.]+) ct (\w+)", user)
        body = '{"carat": "%s", "method": "%s", "sections": [' % (gold.group(1), gold.group(2))
        items = ['{"section": "%s", "area_cm2": %s}' % (s.strip(), a) for s, a in pairs]
        if SWITCH == "length":
            return Reply(text=body + ", ".join(items[:2]) + ", ", finish_reason="length")
        return body + ", ".join(items) + "]}"
    m = re.search(r"(\d+) leaf books, ([\d.]+) EUR", user)
    return f"Dear client, the regilding needs {m.group(1)} books of leaf, {m.group(2)} EUR in leaf. We will begin on approval."


class Est(TypedDict, total=False):
    sections: list
    cursor: int
    lines: list
    books: int


def estimating_graph():
    def plan_sections(s: Est) -> dict:
        return {"cursor": 1 if SWITCH == "cursor" else 0, "lines": []}

    def estimate_section(s: Est) -> dict:
        sec = s["sections"][s["cursor"]]
        books = max(1, -(-int(sec["area_cm2"]) // int(CM2_PER_BOOK)))
        return {"lines": s["lines"] + [{"section": sec["section"], "area_cm2": sec["area_cm2"], "books": books}],
                "cursor": s["cursor"] + 1}

    def sum_books(s: Est) -> dict:
        return {"books": sum(l["books"] for l in s["lines"])}

    g = StateGraph(Est)
    g.add_node("plan_sections", plan_sections)
    g.add_node("estimate_section", estimate_section)
    g.add_node("sum_books", sum_books)
    g.add_edge(START, "plan_sections")
    g.add_edge("plan_sections", "estimate_section")
    g.add_conditional_edges("estimate_section", lambda s: "estimate_section" if s["cursor"] < len(s["sections"]) else "sum_books",
                            ["estimate_section", "sum_books"])
    g.add_edge("sum_books", END)
    return g.compile()


class Job(TypedDict, total=False):
    frame: str
    ticket: str
    survey: dict
    records: list
    memory: dict
    leaf_quote: dict
    estimate: dict
    letter: str
    invoice: dict


def make_graph(llm):
    survey_chain = (ChatPromptTemplate.from_messages([("system", "You survey gilded frames. Answer JSON."), ("user", "Survey: {ticket}")])
                    | llm | JsonOutputParser())
    price = leaf_price.with_retry(retry_if_exception_type=(ConnectionError,), stop_after_attempt=2, wait_exponential_jitter=False)
    estimator = estimating_graph()

    def survey(s: Job) -> dict:
        return {"survey": survey_chain.invoke({"ticket": s["ticket"]})}

    def look_up_records(s: Job) -> dict:
        docs = conservation_records.invoke(f"treatment history {s['frame']}")
        return {"records": [dict(d.metadata, text=d.page_content) for d in docs]}

    def note_treatment(s: Job) -> dict:
        rec = s["records"][-1] if SWITCH == "memory" else s["records"][0]
        return {"memory": {"carat": rec["carat"], "bole": rec["bole"], "source": rec["text"][:4]}}

    def estimate(s: Job) -> dict:
        out = estimator.invoke({"sections": s["survey"]["sections"]})
        return {"estimate": {"lines": out["lines"], "books": out["books"]}}

    def quote_leaf(s: Job) -> dict:
        q = json.loads(price.invoke({"carat": s["memory"]["carat"], "books": s["estimate"]["books"]}))
        return {"leaf_quote": q}

    def client_letter(s: Job) -> dict:
        msg = llm.invoke([("system", "Write a short client letter."),
                          ("user", f"Frame {s['frame']}: {s['estimate']['books']} leaf books, {s['leaf_quote']['total_eur']:.2f} EUR in leaf.")])
        return {"letter": msg.content}

    def place_order(s: Job) -> dict:
        return {"invoice": json.loads(order_leaf.invoke({"carat": s["memory"]["carat"], "books": s["estimate"]["books"]}))}

    def release_check(s: Job) -> dict:
        job = JOBS[s["frame"]]
        if s["memory"]["carat"] != job["carat"]:
            raise AssertionError(f"{s['frame']}: leaf ordered in {s['memory']['carat']} ct, the original surface is {job['carat']} ct")
        reported = int(re.search(r"(\d+) damaged areas", s["ticket"]).group(1))
        if len(s["estimate"]["lines"]) != reported:
            raise AssertionError(f"{s['frame']}: estimate covers {len(s['estimate']['lines'])} sections, the ticket reports {reported} damaged areas")
        if abs(s["invoice"]["invoice_eur"] - s["leaf_quote"]["total_eur"]) > 0.01:
            raise AssertionError(f"{s['frame']}: leaf invoice {s['invoice']['invoice_eur']:.2f} EUR, the client was quoted {s['leaf_quote']['total_eur']:.2f} EUR")
        return {}

    g = StateGraph(Job)
    for n, f in [("survey", survey), ("look_up_records", look_up_records), ("note_treatment", note_treatment),
                 ("estimate", estimate), ("quote_leaf", quote_leaf), ("client_letter", client_letter),
                 ("place_order", place_order), ("release_check", release_check)]:
        g.add_node(n, f)
    order = ["survey", "look_up_records", "note_treatment", "estimate", "quote_leaf", "client_letter", "place_order", "release_check"]
    g.add_edge(START, order[0])
    for a, b in zip(order, order[1:]):
        g.add_edge(a, b)
    g.add_edge(order[-1], END)
    return g.compile()


def run_one(inp, server, path):
    _ATTEMPTS["n"] = 0
    llm = ChatOpenAI(base_url=server.base_url, api_key="local", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"regilding {inp['frame']}")
    make_graph(llm).invoke({"frame": inp["frame"], "ticket": inp["ticket"]}, config={"callbacks": [tracer]})
