"""Toy library loans (openai_agents route): a loans desk agent with lookup tools, a condition inspector
sub-agent called as a tool (its own Runner.run with an inspection log tool), and a loan tool that refuses.
"""
from __future__ import annotations

import ast
import asyncio
import datetime as dt
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

import trajdebug
from suite_common import system_text, tool_results
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "toy-loans"
ROUTE = "openai_agents"
DOMAIN = "a toy library's loans"
SHAPE = "Agents SDK: loans desk with member and catalogue tools, a condition inspector sub-agent run as a tool (its own model calls and inspection log tool), loan tool whose argument schema and own checks refuse; failure by a refusing tool, a schema check or the model API rejecting an oversized request; 8-21 steps"
SWITCH = None

MEMBERS = {"M-1042": ("Priya Shah", "2027-03-01"), "M-0877": ("Colm Byrne", "2027-01-15"), "M-1190": ("Hana Ito", "2026-12-20"),
           "M-0563": ("Ruth Abbey", "2027-06-30"), "M-1311": ("Dev Patel", "2027-02-11")}
CACHED = {"M-1190": "2027-03-20"}  # the member cache's copy, from before the membership was shortened to a term
TOYS = {f"T-{n:04d}": {"toy": name, "age": age} for n, name, age in [
    (412, "wooden marble run", "4+"), (415, "balance bike", "3+"), (508, "duplo farm", "2+"), (511, "duplo train", "2+"),
    (620, "magnetic tiles", "3+"), (733, "kitchen set", "3+"), (734, "kitchen set (small)", "3+"), (801, "microscope kit", "8+")]}
FILLER = {f"T-{n:04d}": {"toy": f"jigsaw {n}", "age": "5+", "pieces": 100 + n % 400} for n in range(1000, 1450)}
RECALLED = {"T-0511": "magnet coupling recall (supplier notice 2026-11)"}
INSPECTIONS = {"T-0412": "complete, 0 parts missing", "T-0415": "brakes adjusted", "T-0508": "complete",
               "T-0511": "complete", "T-0620": "complete, 48 tiles", "T-0733": "complete", "T-0734": "complete",
               "T-0801": "complete, slides present"}
PROMPT_LIMIT = 12000

INPUTS = [
    {"member": "M-1042", "toy": "wooden marble run", "weeks": 3},
    {"member": "M-0877", "toy": "duplo train", "weeks": 2},
    {"member": "M-1190", "toy": "magnetic tiles", "weeks": 3},
    {"member": "M-0563", "toy": "kitchen set", "weeks": 2},
    {"member": "M-1311", "toy": "microscope kit", "weeks": 4},
]
# duplo train is under recall in the catalogue's own record: the desk declines it (a passing run that lends nothing)

CASES = [
    {"id": "zzz-toy-1", "switch": "catalogue_all", "input": 0, "kind": "context_pollution",
     "root": ("toy_catalogue", 1), "failure": ("generation fake-model", 2),
     "description": "The catalogue search returns the whole catalogue of 458 toys instead of the match, and the next model request is too long for the model API."},
    {"id": "zzz-toy-2", "switch": "inspect_other", "input": 3, "kind": "subagent_wrong_entity",
     "root": ("generation fake-model", 3), "failure": ("issue_loan", 1),
     "description": "The condition inspector sub-agent looks up the small kitchen set T-0734 instead of T-0733 and reports that one's check."},
    {"id": "zzz-toy-3", "switch": "member_cache", "input": 2, "kind": "stale_data",
     "root": ("member_lookup", 1), "failure": ("issue_loan", 1),
     "description": "The member lookup answers from a cache that still holds Hana Ito's old expiry of 2027-03-20; her membership now ends 2026-12-20, so the loan runs past it."},
    {"id": "zzz-toy-4", "switch": "expiry_style", "input": 4, "kind": "format_drift",
     "root": ("member_lookup", 1), "failure": ("issue_loan", 1),
     "description": "The member lookup gives Dev Patel's expiry as '11 Feb 2027' instead of 2027-02-11, and the desk passes that text on as the loan's due date, which the loan system's schema refuses."},
    {"id": "zzz-toy-5", "switch": "recall_quiet", "input": 1, "kind": "swallowed_error",
     "root": ("inspection_log", 1), "failure": ("issue_loan", 1),
     "description": "The inspection log cannot reach the recall register, and reports the duplo train as clear instead of saying so."},
]

_loans_checked: dict = {}


@function_tool
def member_lookup(member: str) -> dict:
    """A member's name and membership expiry."""
    name, expiry = MEMBERS[member]
    if SWITCH == "member_cache" and member in CACHED:
        expiry = CACHED[member]
    if SWITCH == "expiry_style" and member == "M-1311":
        expiry = dt.date.fromisoformat(expiry).strftime("%d %b %Y")
    return {"member": member, "name": name, "expires": expiry}


@function_tool
def toy_catalogue(query: str) -> list:
    """Search the toy catalogue by name."""
    if SWITCH == "catalogue_all":
        return [dict(v, id=k) for k, v in {**TOYS, **FILLER}.items()]
    return [dict(v, id=k) for k, v in TOYS.items() if v["toy"] == query]


@function_tool
def inspection_log(toy_id: str) -> dict:
    """The last return inspection of a toy, with any recall notice."""
    entry = {"toy_id": toy_id, "inspection": INSPECTIONS[toy_id], "inspected": "2026-12-02"}
    try:
        if SWITCH == "recall_quiet":
            raise ConnectionError("recall register unavailable")
        entry["recall"] = RECALLED.get(toy_id)
    except ConnectionError:
        entry["recall"] = None
    _loans_checked[toy_id] = entry
    return entry


def _issue(member: str, toy_id: str, weeks: int, due: dt.date) -> dict:
    name, expiry = MEMBERS[member]
    if toy_id not in _loans_checked:
        raise RuntimeError(f"{toy_id} has no return inspection on file for this loan")
    if RECALLED.get(toy_id):
        raise RuntimeError(f"{toy_id} is withdrawn: {RECALLED[toy_id]}")
    if due.isoformat() > expiry:
        raise RuntimeError(f"loan of {toy_id} due {due} runs past {member}'s membership expiry {expiry}")
    return {"loan": f"L-{member[-4:]}-{toy_id[-4:]}", "member": member, "toy_id": toy_id, "due": due.isoformat()}


issue_loan = function_tool(_issue, name_override="issue_loan", description_override="Issue a loan on the library system.",
                           failure_error_function=None)


def _due(weeks: int, expires: str) -> str:
    due = dt.date(2026, 12, 6) + dt.timedelta(weeks=weeks)
    return min(due.isoformat(), expires)


def policy(request):
    body_len = len(json.dumps(request.body))
    if body_len > PROMPT_LIMIT:
        return Reply(status=400, error=f"This model's maximum context length is 8192 tokens; the request holds {body_len // 4} tokens.")
    sysmsg = system_text(request)
    res = {}
    for r in tool_results(request):
        try:
            res[r["name"]] = ast.literal_eval(r["content"])
        except (ValueError, SyntaxError):
            res[r["name"]] = r["content"]
    user = next(m["content"] for m in request.body["messages"] if m["role"] == "user")
    if "condition inspector" in sysmsg:
        toy_id = user.split("toy ", 1)[1].split()[0]
        if "inspection_log" not in res:
            if SWITCH == "inspect_other" and toy_id == "T-0733":
                toy_id = "T-0734"
            return Reply(tool_calls=(tool_call("inspection_log", {"toy_id": toy_id}),))
        log = res["inspection_log"]
        return f"{log['toy_id']}: {log['inspection']}; recall: {log['recall'] or 'none'}. Fit to lend."
    req = json.loads(user.split("LOAN:", 1)[1])
    if "toy_catalogue" not in res:
        return Reply(tool_calls=(tool_call("member_lookup", {"member": req["member"]}),
                                 tool_call("toy_catalogue", {"query": req["toy"]})))
    toy = res["toy_catalogue"][0]
    if "condition_inspector" not in res:
        return Reply(tool_calls=(tool_call("condition_inspector", {"input": f"Inspect toy {toy['id']} ({toy['toy']}) before loan."}),))
    if "condition_inspector" in res and "recall: none" not in str(res["condition_inspector"]):
        return f"{toy['toy']} cannot be lent: {res['condition_inspector']}"
    if "issue_loan" not in res:
        due = _due(req["weeks"], res["member_lookup"]["expires"])
        return Reply(tool_calls=(tool_call("issue_loan", {"member": req["member"], "toy_id": toy["id"], "weeks": req["weeks"], "due": due}),))
    return f"Loan {res['issue_loan']['loan']} issued, due back {res['issue_loan']['due']}."


async def _main(inp, server):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client)
    set_default_openai_api("chat_completions")
    inspector = Agent(name="condition_inspector", model="fake-model", tools=[inspection_log],
                      instructions="You are the condition inspector. Read the toy's inspection log and say whether it is fit to lend.")
    desk = Agent(name="loans_desk", model="fake-model",
                 tools=[member_lookup, toy_catalogue,
                        inspector.as_tool(tool_name="condition_inspector", tool_description="Inspect a toy before it is lent."),
                        issue_loan],
                 instructions="You are the loans desk of the toy library. Check the member, find the toy, have it inspected, issue the loan.")
    try:
        return await Runner.run(desk, "New loan. LOAN:" + json.dumps(inp), run_config=RunConfig(workflow_name=NAME))
    finally:
        await client.close()


def record(inp, path, server):
    _loans_checked.clear()
    processor = TrajdebugProcessor(path=path, name=NAME, task=f"lend the {inp['toy']} to {inp['member']} for {inp['weeks']} weeks")
    set_trace_processors([processor])
    try:
        asyncio.run(_main(inp, server))
    except Exception as exc:
        # the app's own record of a run the SDK raised out of, when the trace does not already say it failed
        run = processor.to_run()
        if run is not None and run.outcome != "failure":
            trajdebug.mark(path, run.run_id, failed=f"the loans desk stopped: {exc}")
        raise
    finally:
        set_trace_processors([])
