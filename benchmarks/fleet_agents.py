"""Four small agents for the fleet benchmark, written with the recording SDK, with injectable faults.

Each agent is a handful of decorated steps the way a user writes them (no
``deps=``: dependencies come from automatic capture).  Their "LLM" steps are
deterministic stand-ins that derive replies from their inputs, so a wrong
value upstream surfaces downstream as it would with a real model.  Each
agent has its own fault kinds; `inject` marks the step being recorded as the
ground truth (its id and name go into the run's metadata ``fault``).

- ``support-bot``: classify (llm) → lookup_order (tool) → find_policy (retrieval) → draft_reply (llm) → check_reply
- ``sql-analyst``: plan (llm) → write_sql (llm) → run_sql (tool, a real SQLite database) → summarize (llm) → check_summary
- ``web-researcher``: search (tool) → fetch (tool, retried) → extract (parse) → answer (llm)
- ``coder``: write_code (llm) → run_tests (tool), up to three rounds with feedback
"""

from __future__ import annotations

import contextvars
import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import trajdebug


class CheckFailed(ValueError):
    """An agent's own check on its answer failed."""


class ToolTimeout(TimeoutError):
    """A tool call timed out."""


@dataclass(slots=True)
class Fault:
    """The fault a run injects, and where it was injected once it was."""

    kind: str | None
    """The fault kind, or None for a clean run."""
    rng: random.Random
    """The run's random source."""
    step_id: str | None = None
    """The injected step's id."""
    step: str | None = None
    """The injected step's name."""
    transient: set[str] = field(default_factory=set)
    """Sites that already failed once (the transient-error distractor)."""
    flaky: bool = False
    """Whether the run carries a transient-error distractor (a retry recovers it)."""
    version: str = "1.0"
    """The agent's version (1.1 rewords its refund policy: an output change for the same input)."""


_FAULT: contextvars.ContextVar[Fault] = contextvars.ContextVar("fleet_fault")


def inject(kind: str) -> bool:
    """Whether the current run injects ``kind`` here; the first place that does is the ground truth."""
    f = _FAULT.get()
    if f.kind != kind or f.step_id is not None:
        return False
    s = trajdebug.current_step()
    if s is None:  # pragma: no cover - every call site is inside a step
        raise RuntimeError(f"fault {kind!r} asked for outside a step")
    f.step_id = s.id
    f.step = s.name
    return True


def _persisting(kind: str) -> bool:
    """Whether ``kind`` was injected earlier in the run (a model that keeps making the same mistake)."""
    f = _FAULT.get()
    return f.kind == kind and f.step_id is not None


# -- support-bot -----------------------------------------------------------------------------

_INTENTS = {"shipping": "where is my order", "refund": "i want my money back", "cancel": "please cancel"}
_POLICIES = {
    "shipping": ["Orders ship within 2 business days.", "Tracking links are sent by email."],
    "refund": ["Refunds are issued within 14 days of return."],
    "cancel": ["Orders can be cancelled until they ship."],
}


@trajdebug.step(kind="llm")
def classify(message: str) -> str:
    intent = next((k for k, v in _INTENTS.items() if v in message.lower()), "shipping")
    if inject("classify-wrong"):
        intent = {"shipping": "refund", "refund": "cancel", "cancel": "shipping"}[intent]
    return intent


@trajdebug.step(kind="tool")
def lookup_order(order_id: str) -> dict[str, Any]:
    rng = _FAULT.get().rng
    order = {
        "order_id": order_id,
        "status": rng.choice(["shipped", "packed", "delivered"]),
        "eta_days": rng.randint(1, 6),
    }
    if inject("order-api-empty"):
        return {}
    if inject("stale-cache"):
        order = {**order, "status": "delivered", "cached": True}
    return order


@trajdebug.step(kind="retrieval")
def find_policy(intent: str) -> list[str]:
    policy = list(_POLICIES[intent])
    if intent == "refund" and _FAULT.get().version == "1.1":
        policy = ["Refunds are issued within 30 days of return."]
    return policy


@trajdebug.step(kind="llm")
def draft_reply(intent: str, order: dict[str, Any], policy: list[str]) -> str:
    return f"Re: {intent}. Your order {order['order_id']} is {order['status']}. {policy[0]}"


@trajdebug.step(kind="condition")
def check_reply(message: str, reply: str, order: dict[str, Any]) -> bool:
    want = next((k for k, v in _INTENTS.items() if v in message.lower()), "shipping")
    if f"Re: {want}." not in reply:
        raise CheckFailed(f"the reply answers another question than {want!r}")
    if order.get("cached") and order.get("status") == "delivered":
        raise CheckFailed("the reply says delivered but the carrier has no delivery scan")
    return True


def support_bot(task: str, rng: random.Random) -> str:
    order_id = f"A{rng.randint(10000, 99999)}"
    message = f"Hi, {_INTENTS[task]}? Order {order_id}."
    intent = classify(message)
    order = lookup_order(order_id)
    policy = find_policy(intent)
    reply = draft_reply(intent, order, policy)
    check_reply(message, reply, order)
    return reply


# -- sql-analyst -----------------------------------------------------------------------------

_REGIONS = ("north", "south", "east", "west")
_DB: dict[str, sqlite3.Connection] = {}


def _db() -> sqlite3.Connection:
    conn = _DB.get("sales")
    if conn is None:
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        conn.execute("CREATE TABLE sales (region TEXT, year INTEGER, amount REAL, units INTEGER)")
        r = random.Random(11)
        conn.executemany(
            "INSERT INTO sales VALUES (?, ?, ?, ?)",
            [
                (g, y, round(r.uniform(100, 900), 2), r.randint(1, 50))
                for g in _REGIONS
                for y in (2024, 2025)
                for _ in range(5)
            ],
        )
        _DB["sales"] = conn
    return conn


@trajdebug.step(kind="llm")
def plan(question: str) -> dict[str, Any]:
    metric = "units" if "units" in question else "amount"
    year = 2024 if "2024" in question else 2025
    return {"metric": metric, "year": year}


@trajdebug.step(kind="llm")
def write_sql(spec: dict[str, Any]) -> str:
    column = spec["metric"]
    if inject("bad-column"):
        column = f"{column}_usd"
    return (
        f"SELECT region, SUM({column}) FROM sales WHERE year = {spec['year']} GROUP BY region ORDER BY region"
    )


@trajdebug.step(kind="tool")
def run_sql(sql: str) -> list[list[Any]]:
    rows = [list(r) for r in _db().execute(sql).fetchall()]
    if inject("truncated-rows"):
        rows = rows[:1]
    return rows


@trajdebug.step(kind="llm")
def summarize(rows: list[list[Any]]) -> dict[str, Any]:
    return {
        "regions": len(rows),
        "total": round(sum(r[1] for r in rows), 2),
        "top": max(rows, key=lambda r: r[1])[0],
    }


@trajdebug.step(kind="condition")
def check_summary(summary: dict[str, Any]) -> bool:
    if summary["regions"] != len(_REGIONS):
        raise CheckFailed(f"expected {len(_REGIONS)} regions in the summary, got {summary['regions']}")
    return True


def sql_analyst(task: str, rng: random.Random) -> dict[str, Any]:
    spec = plan(task)
    sql = write_sql(spec)
    rows = run_sql(sql)
    summary = summarize(rows)
    check_summary(summary)
    return summary


# -- web-researcher --------------------------------------------------------------------------


@trajdebug.step(kind="tool")
def search(query: str) -> list[str]:
    slug = "-".join(query.lower().split()[:3])
    return [f"https://example.org/{slug}/{i}" for i in range(3)]


@trajdebug.retry(attempts=3, on=(ToolTimeout, ConnectionError))
@trajdebug.step(kind="tool")
def fetch(url: str) -> str:
    f = _FAULT.get()
    if f.flaky and "fetch" not in f.transient:
        f.transient.add("fetch")
        raise ConnectionError(f"{url}: connection reset by peer")
    if inject("fetch-timeout") or _persisting("fetch-timeout"):
        raise ToolTimeout(f"{url}: no response after 30 s")
    return f"<h1>Report on {url.rsplit('/', 2)[-2]}</h1><time>2025-0{f.rng.randint(1, 9)}-1{f.rng.randint(0, 9)}</time><p>Growth was {f.rng.randint(2, 40)}%.</p>"


@trajdebug.step(kind="parse")
def extract(page: str) -> dict[str, str]:
    title = page.split("<h1>")[1].split("</h1>")[0]
    date = page.split("<time>")[1].split("</time>")[0]
    claim = page.split("<p>")[1].split("</p>")[0]
    facts = {"title": title, "date": date, "claim": claim}
    if inject("parse-drops"):
        del facts["date"]
    return facts


@trajdebug.step(kind="llm")
def answer(question: str, facts: dict[str, str]) -> str:
    return f"As of {facts['date']}: {facts['claim']} ({facts['title']})"


def web_researcher(task: str, rng: random.Random) -> str:
    urls = search(task)
    page = fetch(urls[0])
    facts = extract(page)
    return answer(task, facts)


# -- coder -----------------------------------------------------------------------------------


@trajdebug.step(kind="llm")
def write_code(task: str, feedback: str) -> str:
    fn = "sorted"
    if inject("wrong-api") or _persisting("wrong-api"):
        fn = "sorted_by"
    return f"def solve(xs):\n    return {fn}(xs, key=abs)\n"


@trajdebug.step(kind="tool")
def run_tests(code: str) -> dict[str, Any]:
    # The test runner is simulated by reading the code (nothing generated is executed).
    if "sorted_by(" in code:
        return {"passed": False, "log": "NameError: name 'sorted_by' is not defined"}
    return {"passed": True, "log": "3 passed"}


def coder(task: str, rng: random.Random) -> str:
    feedback = ""
    for _ in range(3):
        code = write_code(task, feedback)
        result = run_tests(code)
        if result["passed"]:
            return code
        feedback = result["log"]
    raise CheckFailed(f"tests still failing after 3 rounds: {feedback}")


@dataclass(frozen=True, slots=True)
class Agent:
    """One benchmark agent."""

    name: str
    """The run name."""
    body: Callable[[str, random.Random], Any]
    """The agent: ``body(task, rng)``."""
    tasks: tuple[str, ...]
    """The tasks it is given."""
    faults: tuple[str, ...]
    """Its fault kinds (injected in version 1.0 and 1.1)."""
    new_faults: tuple[str, ...] = ()
    """Fault kinds only version 1.1 has (a regression)."""


AGENTS: tuple[Agent, ...] = (
    Agent(
        "support-bot",
        support_bot,
        ("shipping", "refund", "cancel"),
        ("order-api-empty", "classify-wrong"),
        ("stale-cache",),
    ),
    Agent(
        "sql-analyst",
        sql_analyst,
        (
            "total amount per region in 2025",
            "total units per region in 2024",
            "total amount per region in 2024",
        ),
        ("bad-column", "truncated-rows"),
    ),
    Agent(
        "web-researcher",
        web_researcher,
        ("market growth of solar panels", "market growth of heat pumps", "market growth of e-bikes"),
        ("fetch-timeout", "parse-drops"),
    ),
    Agent("coder", coder, ("sort by absolute value", "sort numbers by magnitude"), ("wrong-api",)),
)
"""The agents, by run name."""

FAULT_STEPS: dict[str, str] = {
    "classify-wrong": "classify",
    "order-api-empty": "lookup_order",
    "stale-cache": "lookup_order",
    "bad-column": "write_sql",
    "truncated-rows": "run_sql",
    "fetch-timeout": "fetch",
    "parse-drops": "extract",
    "wrong-api": "write_code",
}
"""The step each fault kind is injected in."""


def run_agent(agent: Agent, task: str, fault: Fault, **run_kwargs: Any) -> Any:
    """Record one run of an agent with a fault (or none); returns the finished `RunHandle`'s run.

    The agent's failure is recorded, not raised.
    """
    token = _FAULT.set(fault)
    handle = trajdebug.run(agent.name, task=task, **run_kwargs)
    try:
        with handle as run:
            try:
                agent.body(task, fault.rng)
            finally:
                truth = {"type": fault.kind, "step_id": fault.step_id, "step": fault.step}
                run.metadata["fault"] = truth
                run._emit({"t": "meta", "metadata": {"fault": truth}})
    except Exception:  # noqa: BLE001 - the failure is recorded; it is what the benchmark is about
        pass
    finally:
        _FAULT.reset(token)
    return handle


__all__ = ["AGENTS", "FAULT_STEPS", "Agent", "CheckFailed", "Fault", "ToolTimeout", "inject", "run_agent"]
