"""openai_agents route: the real OpenAI Agents SDK (Agent + Runner + function tools, a check sub-agent used as
a tool), talking to the fake model server's Responses endpoint, recorded with TrajdebugProcessor.

The model (the scripted brain below) drives the job: it reads the tools' results and calls the next tool with
the arguments it chose (the item's quantity it read from the note, the plan, the summary it wrote)."""
from __future__ import annotations

import ast
import asyncio
import json
import re
import socket

import httpx

from agents import (Agent as SdkAgent, RunConfig, Runner, function_tool, set_default_openai_api,
                    set_default_openai_client, set_tracing_disabled)
from agents.exceptions import UserError
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from core import ValidationFailed
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

CHECK_PREFIX = "You run the check for one flagged item."


def _lit(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None


def _calls(body):
    """(name, args, output) of every tool call the conversation holds, in order."""
    calls, outs = [], {}
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            calls.append((item["call_id"], item["name"], json.loads(item.get("arguments") or "{}")))
        elif item.get("type") == "function_call_output":
            outs[item["call_id"]] = item.get("output")
    return [(n, a, outs.get(cid)) for cid, n, a in calls]


def _user_text(body):
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("role") == "user":
            c = item.get("content")
            return c if isinstance(c, str) else " ".join(p.get("text", "") for p in c)
    return ""


def brain_for(A):
    V = A.v

    def check_brain(body):
        done = _calls(body)
        if not done:
            p = json.loads(_user_text(body))
            target = json.loads(A.answer("resolve", {"flag": p["flag"], "ids": p["ids"]}))["id"]
            return Reply(tool_calls=(tool_call(V["sub_tool"], {"item_id": target}),))
        rec = _lit(done[-1][2])
        return A.answer("summarise", {"record": rec, "date": rec["checked"]})

    def main_brain(body):
        done = _calls(body)
        names = [n for n, _, _ in done]
        out = {n: _lit(o) for n, _, o in done if _lit(o) is not None}
        ref = re.search(r"\b[A-Z]{2}-\d{4}\b", _user_text(body)).group(0)
        call = lambda name, **args: Reply(tool_calls=(tool_call(name, args),))  # noqa: E731
        if V["request"] not in names:
            return call(V["request"], ref=ref)
        req = out[V["request"]]
        if V["catalog"] not in names:
            return call(V["catalog"], ref=ref, date=req["date"])
        if V["parse_plan"] not in names:
            plan = A.answer("plan", {"ref": ref, "items": [{"id": it["id"], "qty": it["qty"]} for it in req["items"]]})
            return call(V["parse_plan"], plan_text=plan)
        if V["sub"] not in names:
            return call(V["sub"], input=json.dumps({"flag": req["flag"], "ids": [it["id"] for it in req["items"]]}))
        order = out[V["parse_plan"]]
        by_id = {it["id"]: it for it in req["items"]}
        parsed = [_lit(o) for n, _, o in done if n == V["parse_est"]]
        quoted = [_lit(o) for n, _, o in done if n == V["tool"] and _lit(o) is not None]
        j = len(quoted)
        if j < len(order):
            item = by_id[order[j]]
            if len(parsed) == j:
                history = [A.note_for(by_id[i]) for i in order[:j]][-2:]
                est = A.answer("estimate", {"position": j, "item": item["id"], "note": A.note_for(item),
                                            "neighbour": order[(j + 1) % len(order)], "history": history})
                return call(V["parse_est"], text=est, position=j)
            return call(V["tool"], item_id=parsed[j]["id"], qty=parsed[j]["qty"], position=j,
                        line_for=item["id"])
        if V["total"] not in names:
            return call(V["total"])
        if V["route"] not in names:
            return call(V["route"], total=out[V["total"]]["total"])
        if V["validate"] not in names:
            note = A.answer("note", {"ref": ref, "lines": len(order), "total": out[V["total"]]["total"],
                                     "channel": out[V["route"]]["channel"]})
            return call(V["validate"], summary=note, check=[o for n, _, o in done if n == V["sub"]][-1])
        return f"{ref} closed: {out[V['validate']]}"

    def brain(request):
        body = request.body
        if str(body.get("instructions") or "").startswith(CHECK_PREFIX):
            return check_brain(body)
        return main_brain(body)

    return brain


def build(A, inp, model):
    V = A.v
    ctx: dict = {"lines": {}, "attempts": {}}

    def read_request(ref: str) -> dict:
        ctx["cap"] = A.store_cap(inp["cap"])
        return {"ref": inp["ref"], "date": inp["date"], A.cap_noun: inp["cap"], "flag": inp["flag"],
                "items": [dict(it, note=A.note_for(it)) for it in inp["items"]]}

    def catalogue(ref: str, date: str) -> dict:
        ctx["catalogue"] = A.catalogue(inp)
        return ctx["catalogue"]

    def set_order(plan_text: str) -> list:
        ctx["order"] = A.parse_plan(plan_text)
        return ctx["order"]

    def parse_qty(text: str, position: int) -> dict:
        return A.parse_estimate(text, position)

    def quote(item_id: str, qty: int, position: int, line_for: str) -> dict:
        ctx["attempts"][position] = ctx["attempts"].get(position, 0) + 1
        if position == V.get("flaky", 1) and ctx["attempts"][position] == 1:
            raise ConnectionError(f"{V['tool']} connection reset")
        q = A.quote(item_id, qty, position)
        item = next(it for it in inp["items"] if it["id"] == line_for)
        entry = A.lookup_rate(ctx["catalogue"], item)
        ctx["lines"][line_for] = A.line(line_for, entry, A.convert(q, position))
        return ctx["lines"][line_for]

    def hold(item_id: str) -> dict:
        return A.hold_record(inp, item_id)

    def total() -> dict:
        ctx["total"] = A.total(list(ctx["lines"].values()))
        return {"total": ctx["total"]}

    def choose(total: float) -> dict:
        ctx["channel"] = A.channel(total, ctx["cap"])
        return {"channel": ctx["channel"]}

    def validate(summary: str, check: str) -> dict:
        return A.validate(inp, list(ctx["lines"].values()), json.loads(check), ctx["total"], ctx["channel"], summary)

    t = lambda fn, name, **kw: function_tool(fn, name_override=name, **kw)  # noqa: E731
    checker = SdkAgent(name=V["sub"] + "_agent", model=model, tools=[t(hold, V["sub_tool"])],
                       instructions=f"{CHECK_PREFIX} Resolve the item, fetch its record, summarise as JSON.")
    tools = [t(read_request, V["request"]), t(catalogue, V["catalog"]), t(set_order, V["parse_plan"]),
             t(parse_qty, V["parse_est"]), t(quote, V["tool"]),
             checker.as_tool(tool_name=V["sub"], tool_description="Run the check for the flagged item."),
             t(total, V["total"]), t(choose, V["route"]), t(validate, V["validate"], failure_error_function=None)]
    return SdkAgent(name=A.name.split("-")[0] + "_desk", model=model, tools=tools,
                    instructions=f"You {A.v['task']}. Work item by item with the tools, then validate.")


def record(A, inp, path, server):
    server.use(brain_for(A))
    set_tracing_disabled(False)
    transport = httpx.AsyncHTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    set_default_openai_client(AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0,
                                          http_client=httpx.AsyncClient(transport=transport)))
    set_default_openai_api("responses")
    set_trace_processors([TrajdebugProcessor(path=str(path), task=f"{A.v['task']} {inp['ref']}")])
    agent = build(A, inp, server.model)
    try:
        asyncio.run(Runner.run(agent, f"Please {A.v['task']} {inp['ref']}.", max_turns=120,
                               run_config=RunConfig(workflow_name=A.name)))
    except UserError as e:  # the SDK wraps what a tool without an error function raised
        if not isinstance(e.__cause__, ValidationFailed):
            raise
    finally:
        set_trace_processors([])


LLM_POINTS = {"plan": "parse_plan", "estimate": "parse_est", "resolve": "sub_tool", "note": "validate"}
CODE_POINTS = {"hold": "sub_tool", "catalogue": "catalog", "cap": "request", "parse_plan": "parse_plan", "parse_estimate": "parse_est",
               "quote": "tool", "convert": "tool", "route": "route", "total": "total"}


def root_of(A, case, steps=None):
    """(name, occurrence) of the root. An LLM root is the model turn that issued the tool call it decided."""
    V, idx, p = A.v, case.get("index", 0), case["point"]
    per_item = p in ("estimate", "parse_estimate", "convert", "quote")
    if p == "convert" and idx >= V.get("flaky", 1):
        idx += 0  # the retried attempt is counted below with the quote's
    tool = V[LLM_POINTS.get(p) or CODE_POINTS[p]]
    occ = idx + 1 if per_item else 1
    if p == "quote" and idx >= V.get("flaky", 1):
        occ += 1
    if p not in LLM_POINTS:
        return tool, occ
    seen = 0
    for i, s in enumerate(steps):
        if s.name == tool:
            seen += 1
            if seen == occ:
                prev = [t for t in steps[:i] if t.kind == "llm"][-1]
                n = sum(1 for t in steps[:i] if t.name == prev.name and t.kind == "llm")
                return prev.name, n
    raise AssertionError(f"no tool step {tool} #{occ}")


def failure_of(A, case):
    return A.v["validate"], 1
