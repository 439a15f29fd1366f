"""Scriptorium: a clerk agent takes a manuscript copying commission, consults a librarian sub-agent for the
exemplar, sizes and quotes the copy, notes it in the commission book, and hands off to the scheduling scribe.

Route: the real OpenAI Agents SDK (Chat Completions against the fake server), recorded with TrajdebugProcessor.
"""

from __future__ import annotations

import ast
import asyncio
import datetime as dt
import json
import math

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

import suite_common as sc

RUN_NAME = "scriptorium-commission-desk"
ROUTE = "openai_agents"
DOMAIN = "scriptorium's manuscript copying commissions"
SHAPE = "Agents SDK: clerk agent -> librarian agent run as a tool (search tool) -> parallel folio count + commission-book note -> quote tool -> hand-off to a scheduling scribe agent (recall tool, booking tool that raises) (26-31 steps)"
ACTIVE = None

INPUTS = [
    {"id": "CM-401", "text": "Commission CM-401 for Abbess Hild: copy the Bruges Book of Hours in gothic rotunda with 12 illuminated initials, ready by 2027-06-30."},
    {"id": "CM-402", "text": "Commission CM-402 for Master Tull: copy the Herbal of Salerno in carolingian minuscule with 4 illuminated initials, ready by 2027-04-15."},
    {"id": "CM-403", "text": "Commission CM-403 for the Guild of Vintners: copy the Vintners' Charter in textura with 2 illuminated initials, ready by 2027-03-01."},
    {"id": "CM-404", "text": "Commission CM-404 for Lady Orm: copy the Paris Book of Hours in textura with 20 illuminated initials, ready by 2027-09-30."},
    {"id": "CM-405", "text": "Commission CM-405 for Brother Aldo: copy the Psalter of Saint Gall in gothic rotunda with 6 illuminated initials, ready by 2027-04-30."},
]
ORDER_BOOK = {
    "CM-401": {"title": "Bruges Book of Hours", "script": "gothic rotunda", "illuminations": 12, "deadline": "2027-06-30"},
    "CM-402": {"title": "Herbal of Salerno", "script": "carolingian minuscule", "illuminations": 4, "deadline": "2027-04-15"},
    "CM-403": {"title": "Vintners' Charter", "script": "textura", "illuminations": 2, "deadline": "2027-03-01"},
    "CM-404": {"title": "Paris Book of Hours", "script": "textura", "illuminations": 20, "deadline": "2027-09-30"},
    "CM-405": {"title": "Psalter of Saint Gall", "script": "gothic rotunda", "illuminations": 6, "deadline": "2027-04-30"},
}
EXEMPLARS = [
    {"exemplar_id": "EX-11", "title": "Bruges Book of Hours", "words": 41000},
    {"exemplar_id": "EX-12", "title": "Paris Book of Hours", "words": 52000},
    {"exemplar_id": "EX-20", "title": "Herbal of Salerno", "words": 30000},
    {"exemplar_id": "EX-31", "title": "Vintners' Charter", "words": 6000},
    {"exemplar_id": "EX-40", "title": "Psalter of Saint Gall", "words": 36000},
    {"exemplar_id": "EX-41", "title": "Psalter of Saint Denis", "words": 47000},
]
WORDS_PER_FOLIO = {"gothic rotunda": 520, "carolingian minuscule": 380, "textura": 300}
FOLIOS_PER_WEEK = {"gothic rotunda": 6, "carolingian minuscule": 8, "textura": 5}
START = dt.date(2027, 1, 4)
QUOTES: dict = {}
BOOK: dict = {}

CASES = [
    {"id": "zzzf_scriptorium_01", "input": 0, "switch": "librarian_pick", "fault_kind": "subagent_wrong_entity",
     "root": ("generation fake-model", 3), "failure": "book_scribe",
     "description": "The librarian sub-agent answers with the Paris Book of Hours exemplar when the commission names the Bruges one, and the booking finds the exemplar does not match the commission."},
    {"id": "zzzf_scriptorium_02", "input": 4, "switch": "density_default", "fault_kind": "tool_ignores_argument",
     "root": ("count_folios", 1), "failure": "book_scribe",
     "description": "The folio count uses the textura density whatever script it is given, so a rotunda copy is sized at far more folios and cannot be finished by the deadline."},
    {"id": "zzzf_scriptorium_03", "input": 3, "switch": "no_initials", "fault_kind": "wrong_tool_args",
     "root": ("generation fake-model", 5), "failure": "book_scribe",
     "description": "The clerk model calls the quote tool with zero illuminated initials although the commission asks for twenty, so the booking finds the quote short of the ordered work."},
    {"id": "zzzf_scriptorium_04", "input": 1, "switch": "skip_quote", "fault_kind": "plan_error",
     "root": ("generation fake-model", 5), "failure": "book_scribe",
     "description": "The clerk model hands the commission to the scheduling scribe before asking for a quote, and the scribe cannot book a commission that has no quote."},
    {"id": "zzzf_scriptorium_05", "input": 2, "switch": "note_received", "fault_kind": "bad_memory_write",
     "root": ("note_commission", 1), "failure": "book_scribe",
     "description": "The commission-book note stores the date the commission was taken in place of its deadline, and the scribe schedules against a date already past."},
]


def _results(request):
    out = {}
    for name, content in sc.tool_results(request):
        try:
            out[name] = ast.literal_eval(content)
        except (ValueError, SyntaxError):
            try:
                out[name] = json.loads(content)
            except ValueError:
                out[name] = content
    return out


def _commission_id(request):
    for m in request.body.get("messages") or []:
        if m.get("role") == "user" and "Commission CM-" in str(m.get("content")):
            return str(m["content"]).split("Commission ")[1].split(" ")[0]
    return None


def policy(request):
    system = sc.system_of(request)
    res = _results(request)
    if system.startswith("You are the scriptorium's librarian"):
        title = sc.last_user(request)
        if "find_exemplar" not in res:
            return Reply(tool_calls=(tool_call("find_exemplar", {"title": title}),))
        hits = res["find_exemplar"]
        pick = hits[1] if ACTIVE == "librarian_pick" and len(hits) > 1 else hits[0]
        return json.dumps(pick)
    cid = _commission_id(request)
    order = ORDER_BOOK[cid]
    if system.startswith("You are the commission clerk"):
        if "librarian" not in res:
            return Reply(tool_calls=(tool_call("librarian", {"input": order["title"]}),))
        ex = res["librarian"]
        if "count_folios" not in res:
            return Reply(tool_calls=(
                tool_call("count_folios", {"words": ex["words"], "script": order["script"]}),
                tool_call("note_commission", {"commission_id": cid, "exemplar_id": ex["exemplar_id"],
                                              "script": order["script"], "deadline": order["deadline"]}),
            ))
        if "quote_commission" not in res and ACTIVE != "skip_quote":
            n = 0 if ACTIVE == "no_initials" else order["illuminations"]
            return Reply(tool_calls=(tool_call("quote_commission", {
                "commission_id": cid, "folios": res["count_folios"]["folios"], "script": order["script"], "illuminations": n}),))
        if "transfer_to_scheduling_scribe" not in res:
            return Reply(tool_calls=(tool_call("transfer_to_scheduling_scribe", {}),))
    if system.startswith("You are the scheduling scribe"):
        if "recall_commission" not in res:
            return Reply(tool_calls=(tool_call("recall_commission", {"commission_id": cid}),))
        if "book_scribe" not in res:
            note = res["recall_commission"]
            return Reply(tool_calls=(tool_call("book_scribe", {
                "commission_id": cid, "exemplar_id": note["exemplar_id"], "folios": res["count_folios"]["folios"],
                "script": note["script"], "deadline": note["deadline"]}),))
        b = res["book_scribe"]
        return f"Booked {b['scribe']} for {cid}: {b['weeks']} weeks, ready {b['ready']}."
    return "I cannot help with that."


@function_tool
def find_exemplar(title: str) -> list:
    """Search the library's shelf list for exemplars matching a title."""
    words = set(title.lower().replace("'", "").split()) - {"of", "the", "book"}
    scored = []
    for ex in EXEMPLARS:
        ew = set(ex["title"].lower().replace("'", "").split())
        overlap = len(words & ew)
        if overlap:
            scored.append((-overlap, ex["exemplar_id"], ex))
    return [dict(e) for _, _, e in sorted(scored)]


@function_tool
def count_folios(words: int, script: str) -> dict:
    """Number of folios a copy of so many words takes in the given script."""
    used = "textura" if ACTIVE == "density_default" else script
    return {"folios": math.ceil(words / WORDS_PER_FOLIO[used]), "script": script}


@function_tool
def note_commission(commission_id: str, exemplar_id: str, script: str, deadline: str) -> dict:
    """Write the commission's particulars into the commission book."""
    entry = {"exemplar_id": exemplar_id, "script": script,
             "deadline": "2027-01-02" if ACTIVE == "note_received" else deadline, "taken": "2027-01-02"}
    BOOK[commission_id] = entry
    return {"noted": commission_id}


@function_tool
def recall_commission(commission_id: str) -> dict:
    """Read a commission's particulars back from the commission book."""
    return dict(BOOK[commission_id])


@function_tool
def quote_commission(commission_id: str, folios: int, script: str, illuminations: int) -> dict:
    """Price a copy: vellum and scribe time per folio, plus illuminated initials."""
    per = {"gothic rotunda": 3.4, "carolingian minuscule": 2.9, "textura": 3.8}[script]
    q = {"quote_id": "Q-" + commission_id[3:], "folios": folios, "illuminations": illuminations,
         "total_florins": round(folios * per + illuminations * 6.5, 2)}
    QUOTES[commission_id] = q
    return q


@function_tool(failure_error_function=None)
def book_scribe(commission_id: str, exemplar_id: str, folios: int, script: str, deadline: str) -> dict:
    """Book a scribe's weeks for a quoted commission."""
    order = ORDER_BOOK[commission_id]
    quote = QUOTES.get(commission_id)
    if quote is None:
        raise ValueError(f"{commission_id} has no accepted quote; the desk cannot book a scribe without one")
    ex = next(e for e in EXEMPLARS if e["exemplar_id"] == exemplar_id)
    if ex["title"] != order["title"]:
        raise ValueError(f"exemplar {exemplar_id} is the {ex['title']}; {commission_id} orders the {order['title']}")
    if quote["illuminations"] != order["illuminations"]:
        raise ValueError(f"quote {quote['quote_id']} prices {quote['illuminations']} illuminated initials; {commission_id} orders {order['illuminations']}")
    weeks = math.ceil(folios / FOLIOS_PER_WEEK[script])
    ready = START + dt.timedelta(weeks=weeks)
    if ready > dt.date.fromisoformat(deadline):
        raise ValueError(f"{folios} folios of {script} take {weeks} weeks: ready {ready.isoformat()}, after the deadline {deadline}")
    return {"scribe": "Brother Anselm" if script == "textura" else "Sister Maud", "weeks": weeks, "ready": ready.isoformat()}


def record(inp: dict, path: str) -> None:
    QUOTES.clear()
    BOOK.clear()
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=RUN_NAME, task=f"commission {inp['id']}")])
    librarian = Agent(name="librarian", model=sc.model(), tools=[find_exemplar],
                      instructions="You are the scriptorium's librarian. Find the exemplar for the title and answer its record as JSON.")
    scribe = Agent(name="scheduling_scribe", model=sc.model(), tools=[recall_commission, book_scribe],
                   instructions="You are the scheduling scribe. Recall the commission and book a scribe.")
    clerk = Agent(name="commission_clerk", model=sc.model(),
                  instructions="You are the commission clerk. Find the exemplar, size, note and quote the commission, then hand it to the scheduling scribe.",
                  tools=[librarian.as_tool(tool_name="librarian", tool_description="Ask the librarian for an exemplar by title."),
                         count_folios, note_commission, quote_commission],
                  handoffs=[scribe])
    async def go():
        client = AsyncOpenAI(base_url=sc.base_url(), api_key="not-needed", max_retries=0)
        set_default_openai_client(client)
        try:
            await Runner.run(clerk, inp["text"], run_config=RunConfig(workflow_name=RUN_NAME))
        finally:
            await client.close()

    try:
        asyncio.run(go())
    finally:
        set_trace_processors([])
