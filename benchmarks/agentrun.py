"""A realistic tool-heavy agent, recorded with the SDK at any length: the speed benchmarks' recorded runs.

A ticket-triage agent loops over a queue: a model plans each ticket (JSON with
tool arguments), a search tool returns records, a parser keeps some fields, a
state write stores the decision, a pricing tool converts an amount; every so
often a tool fails and is retried.  The last step checks the totals and raises,
so the run is a failed run to analyze.  ``steps`` is approximate (6 per ticket).
"""

from __future__ import annotations

import json
import random
from typing import Any

import trajdebug
from trajdebug.core.model import Run
from trajdebug.record.sinks import MemorySink


@trajdebug.step(kind="llm")
def plan(ticket: dict[str, Any]) -> str:
    return json.dumps({"action": "search", "query": ticket["subject"], "limit": 5, "customer": ticket["customer"]})


@trajdebug.step(kind="tool")
def search(query: str, limit: int, customer: str, rng: random.Random) -> list[dict[str, Any]]:
    return [
        {"id": f"KB-{rng.randint(1000, 9999)}", "title": f"{query} answer {i}", "score": round(rng.random(), 3), "customer": customer}
        for i in range(limit)
    ]


@trajdebug.step(kind="parse")
def pick(hits: list[dict[str, Any]]) -> dict[str, Any]:
    best = max(hits, key=lambda h: h["score"])
    return {"id": best["id"], "title": best["title"]}


@trajdebug.step(kind="tool")
def price(amount: float, currency: str) -> dict[str, Any]:
    return {"amount_eur": round(amount * 0.92, 2), "from": currency}


@trajdebug.step(kind="condition")
def check(total: float, expected: float) -> None:
    if abs(total - expected) > 0.01:
        raise ValueError(f"totals check failed: {total:.2f} EUR booked, {expected:.2f} EUR expected")


def record(steps: int = 10_000, seed: int = 7) -> Run:
    """Record one failed run of about ``steps`` steps (6 per ticket) into memory."""
    rng = random.Random(seed)
    sink = MemorySink()
    total = expected = 0.0
    handle = trajdebug.run("ticket-triage", sinks=[sink], task="triage the queue")
    try:
        with handle as r:
            for i in range(max(1, steps // 6)):
                ticket = {"subject": f"refund request {i}", "customer": f"C-{rng.randint(100, 999)}"}
                args = json.loads(plan(ticket))
                hits = search(args["query"], args["limit"], args["customer"], rng)
                chosen = pick(hits)
                r.state[f"decision/{i}"] = chosen["id"]
                amount = round(rng.uniform(5, 200), 2)
                eur = price(amount, "USD")
                expected += round(amount * 0.92, 2)
                total += eur["amount_eur"] * (1.1 if i == steps // 12 else 1.0)  # one silent mispricing
            check(total, expected)
    except ValueError:
        pass  # the run failed: that is the point
    loaded: Run = handle.load()
    return loaded


__all__ = ["record"]
