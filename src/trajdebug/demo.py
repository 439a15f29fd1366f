"""The bundled demo: a SQL reporting agent with injectable faults.

The agent answers a sales question the way a real one would: plan, read the
schema, write SQL, run it on a real SQLite database (created by the demo),
parse the rows, keep totals in shared state, compute growth, write a report,
and check the answer before returning it.  Its "LLM" is `ScriptedLLM`, a
deterministic scripted stand-in (no network, no model): it derives its
answers from its prompts, so a wrong input upstream produces a wrong output
downstream exactly as a real model would pass it on.

Each fault corrupts one step; the failure surfaces several steps later.  The
run's metadata records the fault and the step id where it was injected: the
ground truth for tests and benchmarks.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trajdebug
from trajdebug.core.model import Run


if TYPE_CHECKING:
    from trajdebug.replay import Verification


QUESTION = "What was our revenue per region in 2025-Q3, and which region grew most compared with 2025-Q2?"
REGIONS = ("north", "south", "east", "west")
MONTHS = ("2025-04", "2025-05", "2025-06", "2025-07", "2025-08", "2025-09")

FAULTS: dict[str, str] = {
    "bad-sql-filter": "write_sql (LLM) drops 2025-Q2 from the WHERE clause; growth fails 4 steps later (default)",
    "wrong-column": "write_sql (LLM) sums a column that does not exist; run_sql fails, retries cannot help",
    "truncated-rows": "run_sql (tool) returns only the first rows; the report misses regions",
    "parse-drops-items": "parse_rows (parse) 'repairs' rows by dropping those it cannot read; totals go wrong",
    "stale-state": "save_totals (state) writes 2025-Q2 totals under 2025-Q3; growth reads as zero",
    "bad-plan": "plan (LLM) picks units instead of revenue; every later step is consistent but the answer is wrong",
}
DEFAULT_FAULT = "bad-sql-filter"
TOOL_TIMEOUT = 30.0
"""Seconds a database call may take (a bounded tool step, as production agents declare them)."""


class ScriptedLLM:
    """A scripted stand-in for an LLM (deterministic; derives its answers from its prompts).

    It is not a model: each method reads the prompt it is given and writes the
    reply a competent model would, except where a fault tells it to err.
    """

    def __init__(self, fault: str | None = None) -> None:
        self.fault = fault

    def plan(self, question: str) -> str:
        metric = "units" if self.fault == "bad-plan" else ("revenue" if "revenue" in question else "units")
        quarters = re.findall(r"\d{4}-Q[1-4]", question)
        return json.dumps({"metric": metric, "group_by": "region", "quarters": sorted(set(quarters))})

    def write_sql(self, plan: str, schema: str) -> str:
        p = json.loads(plan)
        column = {"revenue": "amount", "units": "quantity"}[p["metric"]]
        if self.fault == "wrong-column":
            column = "revenue_usd"
        if column not in schema and self.fault != "wrong-column":
            column = "amount"
        quarters = list(p["quarters"])
        if self.fault == "bad-sql-filter":
            quarters = quarters[-1:]
        qlist = ", ".join(f"'{q}'" for q in quarters)
        return (
            f"SELECT region, quarter, SUM({column}) AS total FROM orders "
            f"WHERE quarter IN ({qlist}) GROUP BY region, quarter ORDER BY region, quarter"
        )

    def write_report(self, metric: str, totals: dict[str, dict[str, float]], growth: dict[str, float]) -> str:
        best = max(growth, key=lambda r: growth[r]) if growth else "none"
        lines = [f"{metric.capitalize()} by region, 2025-Q3 (growth vs 2025-Q2):"]
        for region in sorted(totals):
            q3 = totals[region].get("2025-Q3", 0.0)
            lines.append(f"- {region}: {q3:,.2f} ({growth.get(region, 0.0):+.1%})")
        lines.append(f"Strongest growth: {best}.")
        return "\n".join(lines)


def create_sales_db(path: Path, seed: int = 7) -> str:
    """Create the demo's sales database and return its schema (DDL)."""
    schema = (
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, region TEXT NOT NULL, month TEXT NOT NULL, "
        "quarter TEXT NOT NULL, quantity INTEGER NOT NULL, amount REAL NOT NULL)"
    )
    rng = random.Random(seed)
    conn = sqlite3.connect(path)
    try:
        conn.execute("DROP TABLE IF EXISTS orders")
        conn.execute(schema)
        rows = []
        for region in REGIONS:
            base = rng.uniform(800, 1500)
            trend = rng.uniform(0.98, 1.12)
            for i, month in enumerate(MONTHS):
                quarter = "2025-Q2" if month <= "2025-06" else "2025-Q3"
                for _ in range(3):
                    qty = rng.randint(5, 40)
                    amount = round(base * trend**i * rng.uniform(0.9, 1.1) / 3, 2)
                    rows.append((region, month, quarter, qty, amount))
        conn.executemany(
            "INSERT INTO orders (region, month, quarter, quantity, amount) VALUES (?, ?, ?, ?, ?)", rows
        )
        conn.commit()
    finally:
        conn.close()
    return schema


class SalesAgent:
    """The demo agent.  Every step is recorded with `trajdebug.step`; no ``deps=`` anywhere:
    the dependency graph comes from automatic capture."""

    def __init__(self, db_path: Path, llm: ScriptedLLM, fault: str | None = None) -> None:
        self.db_path = db_path
        self.llm = llm
        self.fault = fault
        self.injected_at: str | None = None

    def _mark(self, fault: str) -> None:
        # Ground truth: the step where this fault was injected.
        if self.fault == fault:
            s = trajdebug.current_step()
            if s is not None:
                self.injected_at = s.id

    @trajdebug.step(kind="input")
    def receive_question(self, question: str) -> str:
        return question

    @trajdebug.step(kind="llm")
    def plan(self, question: str) -> str:
        self._mark("bad-plan")
        return self.llm.plan(question)

    @trajdebug.step(kind="tool", timeout=TOOL_TIMEOUT)
    def get_schema(self, table: str) -> str:
        conn = sqlite3.connect(self.db_path)
        try:
            row = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
        finally:
            conn.close()
        return str(row[0]) if row else ""

    @trajdebug.step(kind="llm")
    def write_sql(self, plan: str, schema: str) -> str:
        self._mark("bad-sql-filter")
        self._mark("wrong-column")
        return self.llm.write_sql(plan, schema)

    @trajdebug.retry(
        attempts=2, on=(sqlite3.OperationalError,), reason="policy: retry transient database errors"
    )
    @trajdebug.step(kind="tool", timeout=TOOL_TIMEOUT)
    def run_sql(self, sql: str) -> list[dict[str, Any]]:
        self._mark("truncated-rows")
        conn = sqlite3.connect(self.db_path)
        try:
            cur = conn.execute(sql)
            cols = [c[0] for c in cur.description]
            rows = [dict(zip(cols, r)) for r in cur.fetchall()]
        finally:
            conn.close()
        if self.fault == "truncated-rows":
            rows = rows[:3]
        return rows

    @trajdebug.step(kind="parse")
    def parse_rows(self, rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
        self._mark("parse-drops-items")
        totals: dict[str, dict[str, float]] = {}
        for i, row in enumerate(rows):
            if self.fault == "parse-drops-items" and i % 3 == 1:
                continue  # "repaired": rows it thought malformed are silently dropped
            totals.setdefault(str(row["region"]), {})[str(row["quarter"])] = float(row["total"])
        return totals

    @trajdebug.step(kind="state")
    def save_totals(self, totals: dict[str, dict[str, float]], state: Any) -> int:
        self._mark("stale-state")
        for region, by_quarter in totals.items():
            if self.fault == "stale-state" and "2025-Q2" in by_quarter:
                by_quarter = {**by_quarter, "2025-Q3": by_quarter["2025-Q2"]}
            state[f"totals/{region}"] = by_quarter
        return len(totals)

    @trajdebug.step(kind="other")
    def compute_growth(self, regions: list[str], state: Any) -> dict[str, float]:
        growth = {}
        for region in regions:
            by_quarter = state[f"totals/{region}"]
            growth[region] = by_quarter["2025-Q3"] / by_quarter["2025-Q2"] - 1.0
        return growth

    @trajdebug.step(kind="llm")
    def write_report(self, metric: str, totals: dict[str, dict[str, float]], growth: dict[str, float]) -> str:
        return self.llm.write_report(metric, totals, growth)

    @trajdebug.step(kind="output")
    def final_answer(self, question: str, report: str) -> str:
        problems = []
        if "revenue" in question.lower() and not report.lower().startswith("revenue"):
            problems.append("the report does not answer with revenue")
        missing = [r for r in REGIONS if f"- {r}:" not in report]
        if missing:
            problems.append(f"the report misses regions: {', '.join(missing)}")
        if re.search(r"\(\+0\.0%\)", report) and report.count("+0.0%") >= len(REGIONS) - 1:
            problems.append("no region shows any growth, which the raw data contradicts")
        if problems:
            raise ValueError("answer check failed: " + "; ".join(problems))
        return report

    @trajdebug.step(kind="agent")
    def answer(self, question: str, state: Any) -> str:
        q = self.receive_question(question)
        plan = self.plan(q)
        schema = self.get_schema("orders")
        sql = self.write_sql(plan, schema)
        rows = self.run_sql(sql)
        totals = self.parse_rows(rows)
        self.save_totals(totals, state)
        regions = sorted(totals)
        growth = self.compute_growth(regions, state)
        report = self.write_report(json.loads(plan)["metric"], totals, growth)
        return self.final_answer(q, report)


def demo_agent(question: str = QUESTION, *, db: str, fault: str | None = None) -> str:
    """The demo's entry point: answer ``question`` from the sales database at ``db``.

    Call it inside a recorded run (`run_demo` does); `trajdebug.replay` re-executes
    it with the arguments recorded in the run's ``entry`` metadata.  The database
    is recreated (deterministically) when it no longer exists.

    Args:
        question: The question.
        db: Path of the SQLite sales database.
        fault: One of `FAULTS`, or None for a clean run.
    """
    db_path = Path(db)
    if not db_path.exists():
        create_sales_db(db_path)
    agent = SalesAgent(db_path, ScriptedLLM(fault), fault)
    run = trajdebug.current_run()
    if run is None or not getattr(run, "_active", False):
        return str(agent.answer(question, {}))
    run.metadata["fault"] = {"name": fault, "step_id": None}
    try:
        return str(agent.answer(question, run.state))
    finally:
        # The fault's step is known only once it ran: record it for the readers.
        run.add_metadata(fault={"name": fault, "step_id": agent.injected_at})


def run_demo(
    fault: str | None = DEFAULT_FAULT,
    *,
    store: Any = None,
    path: Any = None,
    sinks: Any = (),
    workdir: Path | None = None,
) -> Run:
    """Run the demo agent once (recorded) and return the recorded run.

    Args:
        fault: One of `FAULTS`, or None for a clean run.
        store: Where to record (default: the default store).
        path: A JSONL file to record to instead.
        sinks: Extra sinks.
        workdir: Where to create the sales database (a temporary directory by default).

    Raises:
        ValueError: an unknown fault name.
    """
    if fault is not None and fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; choose one of: {', '.join(FAULTS)}")
    wd = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="trajdebug-demo-"))
    db_path = wd / "sales.db"
    schema = create_sales_db(db_path)
    metadata = {
        "task": QUESTION,
        "agent": "sales-report-agent",
        "version": "1.0",
        "llm": "ScriptedLLM (deterministic scripted stand-in, not a model)",
        "sqlite_schema": schema,
        "sqlite_db": str(db_path),
        "model": "scripted",
        "seed": 7,
        # The replayable entry point and its arguments (`trajdebug.replay.engine.ENTRY_KEY`).
        "entry": {
            "target": "trajdebug.demo:demo_agent",
            "args": [],
            "kwargs": {"question": QUESTION, "db": str(db_path), "fault": fault},
        },
    }
    if store is None and path is None and not sinks:
        store = trajdebug.Store()
    handle = trajdebug.run("sales-report", store=store, path=path, sinks=sinks, metadata=metadata)
    try:
        with handle:
            demo_agent(QUESTION, db=str(db_path), fault=fault)
    except Exception:  # noqa: BLE001 - the failure is what the demo is about; it is recorded
        pass
    recorded: Run = handle.load()
    return recorded


def verify_demo(
    run: Run, analysis: Any, *, store: Any = None, top: int = 3, samples: int = 1
) -> Verification:
    """Verify the demo run's root-cause candidates by replay (``trajdebug demo`` calls this).

    The corrections come from a passing run of the same agent: the demo agent
    run without its fault, recorded (into ``store`` too) with the values its
    state steps write.  The demo's LLM is a deterministic scripted stand-in, so
    one replay per patch decides (``samples=1``).

    Args:
        run: The failing demo run.
        analysis: Its analysis (``.root_causes``: candidates with ``.step_id``).
        store: Where to save the passing run and the replays.
        top: How many candidates to check.
        samples: Replays per patch with live calls.
    """
    from trajdebug.replay import ENTRY_KEY, record, verify

    md = run.metadata
    entry = md.get(ENTRY_KEY)
    if isinstance(entry, Mapping) and isinstance(entry.get("kwargs"), Mapping):
        kwargs = dict(entry["kwargs"])
    else:
        db = md.get("sqlite_db")
        if not isinstance(db, str):
            return Verification(run.run_id, (), 0, "the run is not a demo run (no sqlite_db in its metadata)")
        fault = md.get("fault")
        kwargs = {
            "question": md.get("task") or QUESTION,
            "db": db,
            "fault": fault.get("name") if isinstance(fault, Mapping) else None,
        }
    passing = record(
        demo_agent,
        kwargs={**kwargs, "fault": None},
        name=run.name,
        store=store,
        metadata={"agent": md.get("agent"), "reference_for": run.run_id},
    )
    if passing.outcome != "success":
        return Verification(run.run_id, (), 0, "the demo agent without its fault did not pass")
    return verify(
        demo_agent,
        run,
        list(getattr(analysis, "root_causes", analysis)),
        passing=[passing],
        top=top,
        samples=samples,
        store=store,
        kwargs=kwargs,
    )


__all__ = [
    "verify_demo",
    "DEFAULT_FAULT",
    "FAULTS",
    "QUESTION",
    "SalesAgent",
    "ScriptedLLM",
    "create_sales_db",
    "demo_agent",
    "run_demo",
]
