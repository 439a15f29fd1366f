"""Dotwell Braille: a transcription order desk as a LangGraph tool-calling loop (ChatOpenAI + ToolNode).

Shape: the model drives the loop: order and document tools, a transcription call per section, one a
turn (text or table transcriber, the model's choice), page count, quote and the embosser queue; the
graph alternates `agent` and `tools` nodes until the model answers.  ~20-35 steps.
"""

from __future__ import annotations

import asyncio
import json
import math

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

from suite_common import messages_of, system_of, text_of

NAME = "dotwell-braille-desk"
ROUTE = "langgraph"
DOMAIN = "braille transcription service"
SHAPE = "graph loop: agent(model with tools) <-> ToolNode; order, document pages, one transcriber call per section (text or table, the model's choice), page count, quote, embosser queue"

DOCUMENT_FIRST_PAGE_ONLY = False
TABLE_SENT_AS_TEXT = False
PAGES_FLOORED = False
PAPER_CODE_INVENTED = False
TEXT_AS_BRF = False

ORDERS = {
    "DB-3101": {"doc": "menu-harbour-bistro", "grade": 2, "copies": 3, "paper": "BRL-120"},
    "DB-3102": {"doc": "statement-2026-11", "grade": 1, "copies": 1, "paper": "BRL-150"},
    "DB-3103": {"doc": "novel-ch-7", "grade": 2, "copies": 2, "paper": "BRL-120"},
    "DB-3104": {"doc": "council-notice-44", "grade": 2, "copies": 5, "paper": "BRL-120"},
    "DB-3105": {"doc": "exam-paper-geo", "grade": 1, "copies": 12, "paper": "BRL-150"},
}
PAPER = {"BRL-120": 0.09, "BRL-150": 0.12}
DOCS = {
    "menu-harbour-bistro": [("starters", 180, False), ("mains", 260, False), ("wine list", 140, True), ("desserts", 120, False)],
    "statement-2026-11": [("summary", 90, False), ("transactions", 420, True), ("notices", 150, False)],
    "novel-ch-7": [("part 1", 1400, False), ("part 2", 1650, False), ("part 3", 1200, False), ("part 4", 900, False),
                   ("part 5", 1100, False)],
    "council-notice-44": [("notice", 380, False), ("schedule", 160, True)],
    "exam-paper-geo": [("instructions", 200, False), ("section a", 520, False), ("map key", 90, True),
                       ("section b", 610, False)],
}
PAGE_SIZE = 3  # sections per page of the document API

INPUTS = ["DB-3101", "DB-3102", "DB-3103", "DB-3104", "DB-3105"]
CASES = [
    {"id": "zzzc-braille-page", "input": 2, "switch": "DOCUMENT_FIRST_PAGE_ONLY", "fault_kind": "truncated_result",
     "root": {"name": "fetch_document", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "queue_emboss", "occurrence": 1},
     "description": "The document lookup for novel-ch-7 returns only its first page of three sections, parts 1 to 3, without the more-pages marker, so parts 4 and 5 are never transcribed."},
    {"id": "zzzc-braille-table", "input": 1, "switch": "TABLE_SENT_AS_TEXT", "fault_kind": "wrong_routing",
     "root": {"name": "ChatOpenAI", "occurrence": 4, "kind": "llm"},
     "failure": {"name": "count_pages", "occurrence": 1},
     "description": "The model sends the statement's transactions table to the running-text transcriber instead of the table transcriber, which leaves its rows wider than a braille line."},
    {"id": "zzzc-braille-floor", "input": 3, "switch": "PAGES_FLOORED", "fault_kind": "off_by_one",
     "root": {"name": "count_pages", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "queue_emboss", "occurrence": 1},
     "description": "The page count rounds each section's braille lines down to whole pages, dropping the last part-filled page of the council notice."},
    {"id": "zzzc-braille-paper", "input": 4, "switch": "PAPER_CODE_INVENTED", "fault_kind": "hallucinated_value",
     "root": {"name": "ChatOpenAI", "occurrence": 10, "kind": "llm"},
     "failure": {"name": "queue_emboss", "occurrence": 1},
     "description": "The model queues the exam paper on paper stock BRL-180, a code that appears nowhere in the order, which asked for BRL-150."},
    {"id": "zzzc-braille-brf", "input": 0, "switch": "TEXT_AS_BRF", "fault_kind": "format_drift",
     "root": {"name": "transcribe_text", "occurrence": 2, "kind": "tool"},
     "failure": {"name": "queue_emboss", "occurrence": 1},
     "description": "The text transcriber answers the menu's mains section in ASCII braille (BRF) instead of Unicode braille cells like the other sections."},
]


# ---------------------------------------------------------------- the fake model's behaviour
def _results(msgs):
    out = {}
    for m in msgs:
        if m.get("role") == "tool":
            try:
                r = json.loads(text_of(m))
            except ValueError:
                continue
            out.setdefault(r.get("result"), []).append(r)
    return out


def policy(request):
    if not system_of(request).startswith("You run braille transcription orders"):
        return "I only handle braille orders."
    msgs = messages_of(request)
    order_id = next(text_of(m) for m in msgs if m.get("role") == "user").split()[-1]
    r = _results(msgs)
    if "order" not in r:
        return Reply(tool_calls=(tool_call("fetch_order", {"order_id": order_id}),))
    order = r["order"][0]
    if "document" not in r:
        return Reply(tool_calls=(tool_call("fetch_document", {"doc": order["doc"], "page": 1}),))
    docs = r["document"]
    if docs[-1].get("next_page") and len(docs) < 5:
        return Reply(tool_calls=(tool_call("fetch_document", {"doc": order["doc"], "page": docs[-1]["next_page"]}),))
    sections = [s for d in docs for s in d["sections"]]
    transcripts = r.get("transcript", [])
    if len(transcripts) < len(sections):
        s = sections[len(transcripts)]  # one section a turn, in the document's order
        if s["table"] and not (TABLE_SENT_AS_TEXT and s["title"] == "transactions"):
            return Reply(tool_calls=(tool_call("transcribe_table", {"doc": order["doc"], "section": s["title"]}),))
        return Reply(tool_calls=(tool_call("transcribe_text", {"doc": order["doc"], "section": s["title"], "grade": order["grade"]}),))
    if "pages" not in r:
        return Reply(tool_calls=(tool_call("count_pages", {"lines": {t["section"]: t["lines"] for t in transcripts}}),))
    pages = r["pages"][0]
    if "quote" not in r:
        return Reply(tool_calls=(tool_call("quote", {"pages": pages["total"], "copies": order["copies"], "paper": order["paper"]}),))
    if "queued" not in r:
        paper = "BRL-180" if PAPER_CODE_INVENTED else order["paper"]
        return Reply(tool_calls=(tool_call("queue_emboss", {
            "order_id": order_id, "paper": paper, "copies": order["copies"], "pages": pages["total"],
            "sections": [t["section"] for t in transcripts], "encodings": sorted({t["encoding"] for t in transcripts})}),))
    q = r["queued"][0]
    return f"Order {order_id} queued as {q['job']}: {pages['total']} pages x {order['copies']} copies, {r['quote'][0]['total_eur']:.2f} EUR."


# ---------------------------------------------------------------- tools
def _out(**kw) -> str:
    return json.dumps(kw)


@tool
async def fetch_order(order_id: str) -> str:
    """Look up a transcription order."""
    return _out(result="order", order_id=order_id, **ORDERS[order_id])


@tool
async def fetch_document(doc: str, page: int) -> str:
    """One page of a document's section list (PAGE_SIZE sections a page)."""
    rows = DOCS[doc]
    chunk = rows[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
    more = page * PAGE_SIZE < len(rows)
    if DOCUMENT_FIRST_PAGE_ONLY:
        more = False
    return _out(result="document", doc=doc, page=page, next_page=page + 1 if more else None,
                sections=[{"title": t, "words": w, "table": tab} for t, w, tab in chunk])


def _words(doc, section):
    return next(w for t, w, _ in DOCS[doc] if t == section)


@tool
async def transcribe_text(doc: str, section: str, grade: int) -> str:
    """Transcribe running text into braille (UEB grade 1 or 2)."""
    await asyncio.sleep(0)
    words = _words(doc, section)
    cells = int(words * (5.6 if grade == 1 else 4.3))
    table = next(tab for t, _, tab in DOCS[doc] if t == section)
    width = 52 if table else 40
    encoding = "brf-ascii" if TEXT_AS_BRF and section == "mains" else "unicode-braille"
    return _out(result="transcript", section=section, encoding=encoding, lines=math.ceil(cells / 38), widest_line=width, words=words)


@tool
async def transcribe_table(doc: str, section: str) -> str:
    """Transcribe a table into braille in linear table format."""
    await asyncio.sleep(0)
    words = _words(doc, section)
    return _out(result="transcript", section=section, encoding="unicode-braille", lines=math.ceil(words * 5.0 / 30),
                widest_line=40, words=words, format="linear table")


WIDEST: dict = {}


@tool
async def count_pages(lines: dict) -> str:
    """Braille pages (25 lines of 40 cells) per section and in total."""
    for section, width in WIDEST.items():
        if width > 40:
            raise ValueError(f"page count: {section} has lines of {width} cells, a braille line holds 40")
    per = {s: (n // 25 if PAGES_FLOORED else math.ceil(n / 25)) for s, n in lines.items()}
    return _out(result="pages", per_section=per, total=sum(per.values()))


@tool
async def quote(pages: int, copies: int, paper: str) -> str:
    """Price an embossing job."""
    return _out(result="quote", total_eur=round(pages * copies * (0.35 + PAPER[paper]), 2))


@tool
async def queue_emboss(order_id: str, paper: str, copies: int, pages: int, sections: list, encodings: list) -> str:
    """Send the job to the embosser queue, which checks it against the transcripts on file."""
    if paper not in PAPER:
        raise ValueError(f"embosser queue: no paper stock {paper} loaded")
    if encodings != ["unicode-braille"]:
        raise ValueError(f"embosser queue: job mixes encodings {encodings}")
    doc = ORDERS[order_id]["doc"]
    missing = [t for t, _, _ in DOCS[doc] if t not in sections]
    if missing:
        raise ValueError(f"embosser queue: {doc} has no transcript for {', '.join(missing)}")
    on_file = sum(math.ceil(v / 25) for v in FILED.values())
    if pages != on_file:
        raise ValueError(f"embosser queue: job says {pages} pages, the transcripts on file fill {on_file}")
    return _out(result="queued", job=f"EMB-{order_id[-4:]}", pages=pages, copies=copies)


FILED: dict = {}
TOOLS = [fetch_order, fetch_document, transcribe_text, transcribe_table, count_pages, quote, queue_emboss]


def build(llm):
    bound = llm.bind_tools(TOOLS)

    async def agent(state: MessagesState) -> dict:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode(TOOLS, handle_tool_errors=False))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition, ["tools", END])
    g.add_edge("tools", "agent")
    return g.compile()


def _filing_hook():
    # what the transcribers hand in is filed for the embosser queue (the shop's records, not the agent's)
    for t in (transcribe_text, transcribe_table):
        def wrap(fn):
            async def inner(**kw):
                out = await fn(**kw)
                row = json.loads(out)
                FILED[row["section"]] = row["lines"]
                WIDEST[row["section"]] = row["widest_line"]
                return out
            return inner
        t.coroutine = wrap(t.coroutine)


_filing_hook()
_GRAPH = {}
_LOOP = asyncio.new_event_loop()  # ChatOpenAI's async client stays on one loop


def run_once(server, inp: str, path: str) -> None:
    FILED.clear()
    WIDEST.clear()
    key = server.base_url
    if key not in _GRAPH:
        _GRAPH.clear()
        _GRAPH[key] = build(ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0))
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"transcribe and emboss order {inp}")
    messages = [SystemMessage("You run braille transcription orders with the tools given."),
                HumanMessage(f"Please process order {inp}")]
    try:
        _LOOP.run_until_complete(_GRAPH[key].ainvoke({"messages": messages}, config={"callbacks": [tracer], "recursion_limit": 30}))
    except ValueError:
        pass
