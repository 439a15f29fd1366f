"""Tabla repair bench: the OpenAI Agents SDK (Chat Completions), a bench lead with parallel inspections, a sub-agent run as a tool, shop memory and an invoice tool."""

from __future__ import annotations

import ast
import asyncio
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "jaipur-tabla-bench"
ROUTE = "openai_agents"
DOMAIN = "tabla repair bench"
SHAPE = "Agents SDK: bench lead over 7 turns (ticket, two parallel drum inspections, head specialist sub-agent as a tool with its own tool, parts stock, shop-memory write, invoice tool, final note); ~30 steps"
ON: set[str] = set()

TICKETS = {
    "T-501": {"customer": "Arjun Mehta", "complaints": ["dayan buzzing", "bayan loose straps"], "scale": "C#"},
    "T-502": {"customer": "Nisha Rao", "complaints": ["dayan flat", "bayan syahi cracked"], "scale": "D"},
    "T-503": {"customer": "Kabir Das", "complaints": ["dayan syahi cracked", "bayan dull"], "scale": "C"},
    "T-504": {"customer": "Meera Iyer", "complaints": ["dayan gajra torn", "bayan loose straps"], "scale": "D#"},
    "T-505": {"customer": "Rohan Sen", "complaints": ["dayan buzzing", "bayan syahi cracked"], "scale": "C#"},
}
INPUTS = [{"ticket": t, "text": f"Work ticket {t}: assess both drums and invoice the repair."} for t in TICKETS]
FINDINGS = {
    "buzzing": ("loose gajra braid", "rebraid gajra"), "flat": ("slack straps", "retension straps"),
    "syahi cracked": ("cracked syahi", "new syahi"), "loose straps": ("stretched straps", "new straps"),
    "dull": ("dry skin", "new head"), "gajra torn": ("torn gajra", "new head"),
}
PRICES = {"rebraid gajra": 900, "retension straps": 400, "new syahi": 1600, "new straps": 1100, "new head": 3200, "tuning": 500}
HEAD_IN = {"dayan": 5.5, "bayan": 9.5}
_memory: dict[str, str] = {}

CASES = [
    {"id": "tab-01", "input": 1, "switch": "a", "kind": "context_pollution", "root": ("fetch_ticket", 1, "tool"), "failure": ("generation fake-model", 2),
     "description": "The ticket lookup returns the ticket together with the bench's whole job history, and the next model call is refused for exceeding the model's context length."},
    {"id": "tab-02", "input": 2, "switch": "b", "kind": "subagent_wrong_entity", "root": ("generation fake-model", 4, "llm"), "root_input": "You are the head specialist", "failure": ("write_invoice", 1),
     "description": "The head specialist sub-agent measures the bayan when it was asked about the dayan, so the invoice gets a 9.5 inch head for the 5.5 inch dayan and the invoice tool refuses it."},
    {"id": "tab-03", "input": 3, "switch": "c", "kind": "truncated_result", "root": ("inspect_drum", 2, "tool"), "root_input": "bayan", "failure": ("write_invoice", 1),
     "description": "The bayan inspection returns its findings list cut to nothing after the first empty page, so the loose straps never get an invoice line and the invoice tool finds a complaint unaddressed."},
    {"id": "tab-04", "input": 0, "switch": "d", "kind": "hallucinated_value", "root": ("generation fake-model", 8, "llm"), "root_input": "parts_stock", "failure": ("write_invoice", 1),
     "description": "The bench lead's model prices the gajra rebraid at 1450 rupees, a figure found in no stock answer, and the invoice tool rejects the price."},
    {"id": "tab-05", "input": 4, "switch": "e", "kind": "bad_memory_write", "root": ("save_tuning_note", 1, "tool"), "failure": ("write_invoice", 1),
     "description": "The shop-memory write files the dayan's tuning target under the bayan's key, so the invoice tool finds no tuning note for the dayan."},
]


@function_tool(failure_error_function=None)
def fetch_ticket(ticket: str) -> dict:
    """The work ticket."""
    found = {"ticket": ticket, **TICKETS[ticket]}
    if "a" in ON:
        found["history"] = [f"{t}-{n}: {c['customer']} {', '.join(c['complaints'])} (closed)" for n in range(400) for t, c in TICKETS.items()]
    return found


@function_tool(failure_error_function=None)
def inspect_drum(drum: str, complaints: list[str]) -> dict:
    """Bench inspection of one drum for the complaints listed."""
    found = [FINDINGS[c.split(" ", 1)[1]][0] for c in complaints if c.startswith(drum)]
    if "c" in ON and drum == "bayan":
        found = found[:0]
    return {"drum": drum, "findings": found}


@function_tool(failure_error_function=None)
def measure_head(drum: str) -> dict:
    """Measure a drum's head diameter in inches."""
    return {"drum": drum, "head_in": HEAD_IN[drum]}


@function_tool(failure_error_function=None)
def parts_stock(items: list[str]) -> dict:
    """Stock and price in rupees of repair items."""
    return {"items": [{"item": i, "inr": PRICES[i], "in_stock": True} for i in items]}


@function_tool(failure_error_function=None)
def save_tuning_note(drum: str, pitch: str) -> str:
    """Save a drum's tuning target in the shop memory."""
    key = drum
    if "e" in ON:
        key = "bayan" if drum == "dayan" else "dayan"
    _memory[key] = pitch
    return f"saved {pitch}"


@function_tool(failure_error_function=None, strict_mode=False)
def write_invoice(ticket: str, lines: list[dict]) -> dict:
    """Write the repair invoice; each line has item, drum, inr (and head_in for a head)."""
    t = TICKETS[ticket]
    for c in t["complaints"]:
        drum, issue = c.split(" ", 1)
        fix = FINDINGS[issue][1]
        if not any(line["drum"] == drum and line["item"] == fix for line in lines):
            raise ValueError(f"invoice {ticket}: complaint '{c}' has no repair line")
    for line in lines:
        if line["item"] in PRICES and line["inr"] != PRICES[line["item"]]:
            raise ValueError(f"invoice {ticket}: {line['item']} at {line['inr']} INR is not the list price")
        if "head_in" in line and line["head_in"] != HEAD_IN[line["drum"]]:
            raise ValueError(f"invoice {ticket}: a {line['head_in']} in head does not fit the {line['drum']}")
    if "dayan" not in _memory:
        raise LookupError(f"invoice {ticket}: no tuning note for the dayan in shop memory")
    return {"invoice": f"INV-{ticket}", "total_inr": sum(line["inr"] for line in lines)}


def _results(msgs):
    out = []
    for m in msgs:
        if m.get("role") == "tool":
            try:
                out.append(ast.literal_eval(m["content"]))
            except (ValueError, SyntaxError):
                out.append(m["content"])
    return out


def policy(request):
    msgs = request.body["messages"]
    if len(json.dumps(msgs)) > 60000:
        return Reply(status=400, error="This model's maximum context length is 16385 tokens. Please reduce the length of the messages.")
    system = msgs[0]["content"]
    res = _results(msgs)
    if system.startswith("You are the head specialist"):
        asked = json.loads(msgs[-1]["content"]) if msgs[-1]["role"] == "user" and msgs[-1]["content"].startswith("{") else {"drum": "dayan"}
        if not res:
            drum = asked["drum"]
            if "b" in ON:
                drum = "bayan" if drum == "dayan" else "dayan"
            return Reply(tool_calls=(tool_call("measure_head", {"drum": drum}),))
        return json.dumps(res[0])
    ticket = next(r for r in res if isinstance(r, dict) and "complaints" in r) if res else None
    if ticket is None:
        user = next(m["content"] for m in msgs if m["role"] == "user")
        return Reply(tool_calls=(tool_call("fetch_ticket", {"ticket": user.split()[2].rstrip(":")}),))
    insp = [r for r in res if isinstance(r, dict) and "findings" in r]
    if not insp:
        return Reply(tool_calls=tuple(tool_call("inspect_drum", {"drum": d, "complaints": ticket["complaints"]}) for d in ("dayan", "bayan")))
    head = next((r for r in res if isinstance(r, dict) and "head_in" in r), None)
    if head is None:
        return Reply(tool_calls=(tool_call("head_specialist", {"input": json.dumps({"drum": "dayan", "ticket": ticket["ticket"]})}),))
    fixes = []
    for f in insp:
        for finding in f["findings"]:
            fix = next(v[1] for v in FINDINGS.values() if v[0] == finding)
            fixes.append((f["drum"], fix))
    stock = next((r for r in res if isinstance(r, dict) and "items" in r), None)
    if stock is None:
        return Reply(tool_calls=(tool_call("parts_stock", {"items": sorted({x for _, x in fixes} | {"tuning"})}),))
    if not any(isinstance(r, str) and r.startswith("saved") for r in res):
        return Reply(tool_calls=(tool_call("save_tuning_note", {"drum": "dayan", "pitch": ticket["scale"] + "4"}),))
    if not any(isinstance(r, dict) and "invoice" in r for r in res):
        price = {i["item"]: i["inr"] for i in stock["items"]}
        if "d" in ON:
            price["rebraid gajra"] = 1450
        lines = [{"item": fix, "drum": drum, "inr": price[fix]} for drum, fix in fixes]
        lines.append({"item": "tuning", "drum": "dayan", "inr": price["tuning"], "head_in": head["head_in"]})
        return Reply(tool_calls=(tool_call("write_invoice", {"ticket": ticket["ticket"], "lines": lines}),))
    inv = next(r for r in res if isinstance(r, dict) and "invoice" in r)
    return f"{inv['invoice']} written: {inv['total_inr']} INR. Both drums ready after tuning to {ticket['scale']}."


def _agents(model: str):
    specialist = Agent(name="head_specialist", instructions="You are the head specialist. Measure the drum you are asked about and report its head size.",
                       model=model, tools=[measure_head])
    return Agent(name="bench_lead", instructions="You are the bench lead of a tabla repair shop. Assess the ticket, consult the head specialist, price the parts, note the tuning and invoice.",
                 model=model, tools=[fetch_ticket, inspect_drum, specialist.as_tool(tool_name="head_specialist", tool_description="Ask the head specialist about one drum."),
                                     parts_stock, save_tuning_note, write_invoice])


def record(inp: dict, path, ctx) -> None:
    _memory.clear()
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=str(path), name=NAME, task=inp["text"])])
    try:
        asyncio.run(_main(ctx.server.base_url, lambda: Runner.run(_agents("fake-model"), inp["text"], run_config=RunConfig(workflow_name=NAME), max_turns=20)))
    except Exception:
        pass
    finally:
        set_trace_processors([])


async def _main(base_url, start):
    client = AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client, use_for_tracing=False)
    try:
        return await start()
    finally:
        await client.close()
