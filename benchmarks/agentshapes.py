"""Agent-shaped recorded runs for the speed benchmarks: state writers, tool loops, nested sub-agents, chat payloads.

`benchmarks.agentrun` writes its state in the run's body, so no step is a
state writer and the analysis of shared state is never exercised.  These
shapes are recorded with the SDK, as an agent records them:

- ``state``: a ticket agent whose ``book`` step reads and rewrites one shared
  ledger (``run.state["ledger"]``, the last 20 entries) and a per-customer key,
  so every ticket has a state writer of the same keys;
- ``tools``: a model calls tools in a loop (search, fetch, up to 4 rounds,
  a failure retried now and then) before it answers;
- ``subagents``: an orchestrator delegates each task to a researcher
  sub-agent (``kind="agent"``) with its own model and tool steps, itself
  nesting a checker sub-agent.

With ``chat=True`` every model step takes a list of chat messages (about 5 KB)
and returns an assistant message with tool calls and usage, as chat APIs do.
Every run ends with a failed totals check, so it is a failed run to analyze.
``steps`` is approximate.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import trajdebug
from trajdebug.core.model import Run
from trajdebug.record.sinks import MemorySink


_RNG = [random.Random(7)]
"""The recording's random source (a global, so that it is no step's input)."""

_FILLER = (
    "You are a careful support agent. Follow the policy: verify the customer, look up the order, "
    "never promise a refund above the limit, cite the knowledge-base article you used. "
)


def chat_messages(i: int, rng: random.Random, size: int = 5000) -> list[dict[str, Any]]:
    """A chat request of about ``size`` bytes: a system prompt, earlier turns, the user's message."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": (_FILLER * 12)[:1500]}]
    turn = 0
    while sum(len(m["content"]) for m in msgs) < size - 400:
        msgs.append(
            {
                "role": "user",
                "content": f"Ticket {i}.{turn}: order O-{rng.randint(10000, 99999)} " + _FILLER[:500],
            }
        )
        msgs.append(
            {"role": "assistant", "content": f"Looked up order {turn} for ticket {i}. " + _FILLER[:400]}
        )
        turn += 1
    msgs.append(
        {"role": "user", "content": f"Please resolve ticket {i} for customer C-{rng.randint(100, 999)}."}
    )
    return msgs


def assistant_message(i: int, rng: random.Random, tool: str = "search") -> dict[str, Any]:
    """A chat response: an assistant message with one tool call, and the usage."""
    args = {"query": f"refund policy ticket {i}", "limit": 5}
    return {
        "id": f"chatcmpl-{i:08d}",
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": f"I will search the knowledge base for ticket {i}.",
                    "tool_calls": [
                        {
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {"name": tool, "arguments": json.dumps(args)},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 1200 + rng.randint(0, 50), "completion_tokens": 40, "total_tokens": 1240},
    }


def _model(i: int, rng: random.Random, chat: bool, subject: str) -> Any:
    """What a model step takes (chat messages, or a short prompt)."""
    return chat_messages(i, rng) if chat else f"Plan the next action for: {subject}"


@trajdebug.step(kind="llm")
def plan(prompt: Any, i: int, chat: bool) -> Any:
    rng = _RNG[0]
    if chat:
        return assistant_message(i, rng)
    return json.dumps({"action": "search", "query": f"refund request {i}", "limit": 3})


@trajdebug.step(kind="tool")
def search(query: str, limit: int) -> list[dict[str, Any]]:
    rng = _RNG[0]
    return [
        {
            "id": f"KB-{rng.randint(1000, 9999)}",
            "title": f"{query} answer {k}",
            "score": round(rng.random(), 3),
        }
        for k in range(limit)
    ]


@trajdebug.step(kind="tool")
def fetch(doc: str, attempt: int) -> dict[str, Any]:
    if attempt == 0 and doc.endswith("7"):
        raise TimeoutError(f"fetch {doc} timed out")
    return {"doc": doc, "text": f"Article {doc}: refunds up to 100 EUR are approved by the agent."}


@trajdebug.step(kind="state")
def book(ticket: int, amount: float, customer: str) -> float:
    run = trajdebug.current_run()
    assert run is not None
    ledger = list(run.state.get("ledger", []))[-19:]
    ledger.append({"ticket": ticket, "amount": amount})
    run.state["ledger"] = ledger
    run.state[f"customer/{customer}"] = amount
    return amount


@trajdebug.step(kind="tool")
def price(amount: float, currency: str) -> dict[str, Any]:
    return {"amount_eur": round(amount * 0.92, 2), "from": currency}


@trajdebug.step(kind="condition")
def check(total: float, expected: float) -> None:
    if abs(total - expected) > 0.01:
        raise ValueError(f"totals check failed: {total:.2f} EUR booked, {expected:.2f} EUR expected")


def _state_ticket(i: int, rng: random.Random, chat: bool, bad: bool) -> tuple[float, float]:
    plan(_model(i, rng, chat, f"ticket {i}"), i, chat)
    hits = search(f"refund request {i}", 3)
    amount = round(rng.uniform(5, 200), 2)
    book(i, amount, f"C-{rng.randint(100, 130)}")
    eur = price(amount, "USD")
    return eur["amount_eur"] * (1.1 if bad else 1.0) + 0 * len(hits), round(amount * 0.92, 2)


def _fetch(doc: str) -> None:
    try:
        fetch(doc, 0)
    except TimeoutError:
        fetch(doc, 1)


def _tools_ticket(i: int, rng: random.Random, chat: bool, bad: bool) -> tuple[float, float]:
    for rounds in range(1 + i % 4):
        plan(_model(i, rng, chat, f"ticket {i} round {rounds}"), i, chat)
        hits = search(f"refund request {i}", 2)
        for h in hits[:1]:
            _fetch(h["id"])
    amount = round(rng.uniform(5, 200), 2)
    eur = price(amount, "USD")
    return eur["amount_eur"] * (1.1 if bad else 1.0), round(amount * 0.92, 2)


@trajdebug.step(kind="agent")
def checker(i: int, chat: bool) -> dict[str, Any]:
    rng = _RNG[0]
    plan(_model(i, rng, chat, f"check ticket {i}"), i, chat)
    return {"ticket": i, "checked": True}


@trajdebug.step(kind="agent")
def researcher(i: int, chat: bool, bad: bool) -> dict[str, Any]:
    rng = _RNG[0]
    plan(_model(i, rng, chat, f"research ticket {i}"), i, chat)
    hits = search(f"refund request {i}", 2)
    checker(i, chat)
    amount = round(rng.uniform(5, 200), 2)
    eur = price(amount, "USD")
    return {
        "ticket": i,
        "best": hits[0]["id"],
        "amount_eur": eur["amount_eur"] * (1.1 if bad else 1.0),
        "amount": amount,
    }


def _subagent_ticket(i: int, rng: random.Random, chat: bool, bad: bool) -> tuple[float, float]:
    out = researcher(i, chat, bad)
    return out["amount_eur"], round(out["amount"] * 0.92, 2)


SHAPES: dict[str, tuple[Callable[[int, random.Random, bool, bool], tuple[float, float]], float]] = {
    "state": (_state_ticket, 4.0),
    "tools": (_tools_ticket, 8.7),
    "subagents": (_subagent_ticket, 6.0),
}
"""Each shape's ticket, and about how many steps one ticket records."""


def record_shape(shape: str, steps: int = 10_000, *, chat: bool = False, seed: int = 7) -> Run:
    """Record one failed run of about ``steps`` steps of this shape into memory."""
    ticket, per = SHAPES[shape]
    rng = _RNG[0] = random.Random(seed)
    sink = MemorySink()
    # Every step recorded: a busy machine must not shorten the run (the writer's backlog bound drops steps).
    trajdebug.configure(backlog_seconds=None, max_buffer=max(100_000, 2 * steps), max_buffer_bytes=1 << 40)
    n = max(2, int(steps / per))
    total = expected = 0.0
    handle = trajdebug.run(f"agent-{shape}", sinks=[sink], task="resolve the ticket queue")
    try:
        with handle:
            for i in range(n):
                got, want = ticket(i, rng, chat, i == n // 2)
                total += got
                expected += want
            check(total, expected)
    except ValueError:
        pass  # the run failed: that is the point
    trajdebug.flush()  # leaving the run waits at most `close_timeout` for the writer: a long run needs more
    loaded: Run = handle.load()
    return loaded


__all__ = ["SHAPES", "assistant_message", "chat_messages", "record_shape"]
