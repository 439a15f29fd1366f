"""Luthier workshop desk: OpenAI Agents SDK agents (a parts clerk as a tool, a hand-off to billing) quote repairs."""

from __future__ import annotations

import json
from typing import Any

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    function_tool,
    set_trace_processors,
)
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import FakeModelServer, Reply, tool_call

from .. import kit


AGENT = "luthier-desk"
ROUTE = "openai_agents"
EXT = "jsonl"

TICKETS = {
    "T-5208": {"customer": "Mireille Okafor", "instrument": "cello", "size": "4/4", "task": "bridge replacement", "part": "bridge"},
    "T-5280": {"customer": "Gideon Lasky", "instrument": "cello", "size": "4/4", "task": "bridge replacement", "part": "bridge"},
    "T-5311": {"customer": "Hanne Sorvik", "instrument": "violin", "size": "3/4", "task": "restring", "part": "string set"},
    "T-5342": {"customer": "Paulo Teixeira", "instrument": "viola", "size": "16in", "task": "seam regluing", "part": "hide glue"},
    "T-5367": {"customer": "Aiko Brandt", "instrument": "violin", "size": "4/4", "task": "soundpost setting", "part": "soundpost"},
    "T-5390": {"customer": "Rosalind Achebe", "instrument": "cello", "size": "4/4", "task": "fingerboard dressing", "part": "fingerboard oil"},
    "T-5403": {"customer": "Emil Varga", "instrument": "double bass", "size": "3/4", "task": "bridge adjusters", "part": "bridge adjusters"},
    "T-5429": {"customer": "Nadia Ferreira", "instrument": "violin", "size": "1/2", "task": "peg refitting", "part": "peg set"},
    "T-5455": {"customer": "Tobias Wren", "instrument": "viola", "size": "15.5in", "task": "crack repair", "part": "cleat spruce"},
}
PARTS = [
    {"sku": "BR-CE-44", "part": "bridge", "instrument": "cello", "size": "4/4", "price": 68.0},
    {"sku": "BR-VA-41", "part": "bridge", "instrument": "viola", "size": "16in", "price": 44.0},
    {"sku": "ST-VN-44", "part": "string set", "instrument": "violin", "size": "4/4", "price": 58.0},
    {"sku": "ST-VN-34", "part": "string set", "instrument": "violin", "size": "3/4", "price": 52.0},
    {"sku": "GL-HD-01", "part": "hide glue", "instrument": "any", "size": "any", "price": 9.5},
    {"sku": "SP-VN-44", "part": "soundpost", "instrument": "violin", "size": "4/4", "price": 12.0},
    {"sku": "FO-CE-00", "part": "fingerboard oil", "instrument": "cello", "size": "any", "price": 7.0},
    {"sku": "BA-DB-34", "part": "bridge adjusters", "instrument": "double bass", "size": "3/4", "price": 38.0},
    {"sku": "PG-VN-12", "part": "peg set", "instrument": "violin", "size": "1/2", "price": 31.0},
    {"sku": "PG-VN-44", "part": "peg set", "instrument": "violin", "size": "4/4", "price": 34.0},
    {"sku": "CL-SP-00", "part": "cleat spruce", "instrument": "any", "size": "any", "price": 6.0},
]
LABOUR = {"bridge replacement": 2.5, "restring": 0.75, "seam regluing": 1.5, "soundpost setting": 1.0, "fingerboard dressing": 2.0, "bridge adjusters": 1.25, "peg refitting": 3.0, "crack repair": 4.0}

FAULTS = [
    {"id": "lu-a", "kind": "subagent_wrong_entity", "order": "T-5208", "root": "generation gpt-4o-mini", "marker": "T-5280"},
    {"id": "lu-b", "kind": "tool_ignores_argument", "order": "T-5311", "root": "search_parts", "marker": "ST-VN-44"},
    {"id": "lu-c", "kind": "format_drift", "order": "T-5455", "root": "estimate_labour", "marker": "4:00"},
    {"id": "lu-d", "kind": "context_pollution", "order": "T-5429", "root": "lookup_ticket", "marker": "PG-VN-44"},
    {"id": "lu-e", "kind": "wrong_retrieval", "order": "T-5390", "root": "search_parts", "marker": "BR-CE-44"},
]
REFS = ["T-5342", "T-5367", "T-5403", "T-5280"]

RESERVED: dict[str, list[str]] = {}


class ServiceRefused(RuntimeError):
    pass


ServiceRefused.__module__ = "workshop_api"


# -- tools --------------------------------------------------------------------------------

@function_tool(failure_error_function=None)
def lookup_ticket(ticket: str) -> str:
    """The workshop ticket: customer, instrument, size, task and the part it needs."""
    t = dict(TICKETS[ticket])
    t["ticket"] = ticket
    t["bench_notes"] = ["received at front desk", "case and bow checked in"]
    if kit.active("lu-d"):
        t["bench_notes"].append("T-5430 (Nadia's 4/4): pegs slipping, fit PG-VN-44")
    return json.dumps(t)


@function_tool(failure_error_function=None)
def search_parts(part: str, instrument: str, size: str) -> str:
    """Search the parts catalogue."""
    hits = [p for p in PARTS if p["part"] == part and p["instrument"] in (instrument, "any")
            and (kit.active("lu-b") or p["size"] in (size, "any"))]
    if kit.active("lu-e"):
        hits = [p for p in PARTS if p["part"] == "bridge" and p["instrument"] == instrument]
    return json.dumps({"hits": hits[:3]})


@function_tool(failure_error_function=None)
def reserve_part(sku: str, ticket: str) -> str:
    """Reserve a part from stock against a workshop ticket."""
    RESERVED.setdefault(ticket, []).append(sku)
    return json.dumps({"reserved": sku, "ticket": ticket, "bin": "B" + sku[-2:]})


@function_tool(failure_error_function=None)
def estimate_labour(task: str, instrument: str) -> str:
    """Bench hours for a repair task."""
    hours = LABOUR[task]
    if kit.active("lu-c"):
        return json.dumps({"task": task, "bench_time": f"{int(hours)}:{int(hours % 1 * 60):02d}"})
    return json.dumps({"task": task, "labour_hours": hours})


@function_tool(failure_error_function=None)
def customer_account(customer: str) -> str:
    """The customer's account with the workshop."""
    return json.dumps({"customer": customer, "account": "C-" + str(sum(map(ord, customer)) % 9000 + 1000), "rate": 65.0})


@function_tool(failure_error_function=None)
def issue_quote(ticket: str, account: str, skus: list[str], labour_hours: float) -> str:
    """Issue the repair quote to the customer."""
    held = RESERVED.get(ticket, [])
    missing = [s for s in skus if s not in held]
    if missing:
        raise ServiceRefused(f"quote service 422: {', '.join(missing)} not reserved against {ticket}")
    if labour_hours < 0.5:
        raise ServiceRefused(f"quote service 422: {ticket} has {labour_hours} bench hours, minimum bench charge is 0.5 h")
    t = TICKETS[ticket]
    for sku in skus:
        part = next(p for p in PARTS if p["sku"] == sku)
        if part["part"] != t["part"]:
            raise ServiceRefused(f"quote service 422: {sku} ({part['part']}) is not on the parts list for {t['task']} ({ticket})")
        if part["instrument"] not in ("any", t["instrument"]) or part["size"] not in ("any", t["size"]):
            raise ServiceRefused(f"quote service 422: {sku} is a {part['size']} {part['instrument']} part, {ticket} is a {t['size']} {t['instrument']}")
    parts = sum(p["price"] for p in PARTS if p["sku"] in skus)
    return json.dumps({"quote": "Q-" + ticket[2:], "total": round(parts + labour_hours * 65.0, 2)})


# -- the scripted model -------------------------------------------------------------------

def _calls(msgs: list) -> list[tuple[str, dict, Any]]:
    """(tool name, arguments, result or None) for each call in the conversation so far."""
    results = {m.get("tool_call_id"): m.get("content") for m in msgs if m.get("role") == "tool"}
    out = []
    for m in msgs:
        for c in (m.get("tool_calls") or []) if m.get("role") == "assistant" else []:
            out.append((c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"), results.get(c["id"])))
    return out


def _result(calls, name):
    for n, _, r in reversed(calls):
        if n == name and r is not None:
            try:
                return json.loads(r)
            except ValueError:
                return r
    return None


def policy(request: Any) -> Reply | str:
    msgs = (request.body or {}).get("messages") or []
    system = str(msgs[0].get("content") or "") if msgs else ""
    calls = _calls(msgs)
    names = [c[0] for c in calls]
    user = next(str(m.get("content")) for m in msgs if m.get("role") == "user")
    if system.startswith("You are the parts clerk"):
        ticket = user.split("ticket ")[1].split()[0].rstrip(".:")
        part = user.split("Find and reserve: ")[1].split(" for ")[0]
        inst, size = user.split(" for ")[1].split(" (")[0], user.split("(")[1].split(")")[0]
        if "search_parts" not in names:
            return Reply(tool_calls=(tool_call("search_parts", {"part": part, "instrument": inst, "size": size}),))
        if "reserve_part" not in names:
            hits = _result(calls, "search_parts")["hits"]
            target = "T-5280" if kit.active("lu-a") else ticket
            return Reply(tool_calls=(tool_call("reserve_part", {"sku": hits[0]["sku"], "ticket": target}),))
        r = _result(calls, "reserve_part")
        return f"Reserved {r['reserved']} on {r['ticket']} (bin {r['bin']})."
    ticket = user.split("Ticket ")[1].split()[0].rstrip(".:")
    if system.startswith("You are the workshop desk"):
        if "lookup_ticket" not in names:
            return Reply(tool_calls=(tool_call("lookup_ticket", {"ticket": ticket}),))
        t = _result(calls, "lookup_ticket")
        if "parts_clerk" not in names:
            part, size = t["part"], t["size"]
            for note in t["bench_notes"]:
                if "fit " in note:  # the model takes the note at its word
                    size = note.split("(")[1].split("'s ")[1].split(")")[0]
            return Reply(tool_calls=(
                tool_call("estimate_labour", {"task": t["task"], "instrument": t["instrument"]}),
                tool_call("parts_clerk", {"input": f"Find and reserve: {part} for {t['instrument']} ({size}) on ticket {ticket}."}),
            ))
        return Reply(tool_calls=(tool_call("transfer_to_billing_clerk", {}),))
    # billing clerk
    t = _result(calls, "lookup_ticket")
    if "customer_account" not in names:
        return Reply(tool_calls=(tool_call("customer_account", {"customer": t["customer"]}),))
    if "issue_quote" not in names:
        clerk = _result(calls, "parts_clerk")
        sku = str(clerk).split("Reserved ")[1].split()[0]
        labour = _result(calls, "estimate_labour")
        acct = _result(calls, "customer_account")["account"]
        return Reply(tool_calls=(tool_call("issue_quote", {"ticket": ticket, "account": acct, "skus": [sku], "labour_hours": labour.get("labour_hours", 0.0)}),))
    q = _result(calls, "issue_quote")
    return f"Quote {q['quote']} sent to {t['customer']}: {q['total']:.2f} EUR."


# -- the agents ---------------------------------------------------------------------------

_CTX: dict = {}


def setup():
    server = FakeModelServer(policy).start()
    client = AsyncOpenAI(base_url=server.base_url, api_key="sk-local", max_retries=0)
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    clerk = Agent(name="Parts clerk", instructions="You are the parts clerk: search the catalogue and reserve the part on the ticket.",
                  tools=[search_parts, reserve_part], model=model)
    billing = Agent(name="Billing clerk", instructions="You are the billing clerk: quote the repair to the customer.",
                    tools=[customer_account, issue_quote], model=model)
    desk = Agent(name="Workshop desk", instructions="You are the workshop desk: read the ticket, get the part and the bench time, then hand over to billing.",
                 tools=[lookup_ticket, estimate_labour, clerk.as_tool(tool_name="parts_clerk", tool_description="Find and reserve a part.")],
                 handoffs=[billing], model=model)
    _CTX.update(server=server, desk=desk)
    return server


def teardown(server) -> None:
    server.stop()
    _CTX.clear()


def record(key: str, path) -> None:
    RESERVED.clear()
    processor = TrajdebugProcessor(path=str(path), name=AGENT, task=f"Quote the repair on ticket {key}")
    set_trace_processors([processor])
    try:
        Runner.run_sync(_CTX["desk"], f"Ticket {key}: please prepare the repair quote.",
                        run_config=RunConfig(workflow_name=AGENT))
    except Exception:  # noqa: BLE001 - the SDK wraps the service's refusal; the run records it
        pass
    finally:
        set_trace_processors([])
