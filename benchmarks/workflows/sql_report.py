"""Workflow: a SQL reporting agent (monthly revenue per product category).

plan (LLM, emits a tool call as JSON) -> parse the plan -> read the schema ->
write SQL (LLM) -> run it on a real SQLite database (retried on transient
errors) -> parse rows -> keep totals in ``run.state`` -> read the currency
configuration -> decide the report's granularity -> summarize from state ->
write the report (LLM) -> check it against control totals from the database.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

import trajdebug
from benchmarks.faults import Case, Injector, TransientError
from benchmarks.workflows._base import CheckFailed, Result, record


NAME = "sql-report"
FAULTS = (
    "bad-tool-args",
    "json-repair-drop",
    "truncated-output",
    "wrong-state-value",
    "env-change",
    "wrong-branch",
)
CATEGORIES = ("books", "garden", "toys", "kitchen", "sports", "music", "office", "pets")
QUARTERS = {
    "2025-Q1": ("2025-01", "2025-02", "2025-03"),
    "2025-Q2": ("2025-04", "2025-05", "2025-06"),
    "2025-Q3": ("2025-07", "2025-08", "2025-09"),
    "2025-Q4": ("2025-10", "2025-11", "2025-12"),
}
SCHEMA = "CREATE TABLE sales (id INTEGER PRIMARY KEY, category TEXT, month TEXT, amount REAL)"
FX = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79}


def _database(inj: Injector, cats: list[str]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.execute(SCHEMA)
    rows = []
    for c in cats:
        base = inj.rng.uniform(2_000, 9_000)
        for months in QUARTERS.values():
            for m in months:
                for _ in range(2):
                    rows.append((c, m, round(base * inj.rng.uniform(0.6, 1.4) / 2, 2)))
    conn.executemany("INSERT INTO sales (category, month, amount) VALUES (?, ?, ?)", rows)
    return conn


class ScriptedModel:
    """A deterministic stand-in for the LLM: it derives its replies from its prompts."""

    def __init__(self, inj: Injector) -> None:
        self.inj = inj

    def plan(self, question: str) -> str:
        quarter = re.search(r"\d{4}-Q[1-4]", question).group(0)  # type: ignore[union-attr]
        cats = re.findall(r"\b(" + "|".join(CATEGORIES) + r")\b", question)
        months = list(QUARTERS[quarter])
        if self.inj.on("bad-tool-args"):
            # The planner confuses the quarter: the tool call asks for the previous one.
            prev = f"2025-Q{int(quarter[-1]) - 1 or 4}"
            months = list(QUARTERS[prev])
        text = json.dumps(
            {"tool": "sales_report", "args": {"months": months, "categories": cats, "metric": "revenue"}}
        )
        if self.inj.on("json-repair-drop"):
            # The model's JSON loses a comma between two list items.
            k = self.inj.rng.randrange(1, len(cats))
            text = text.replace(f'"{cats[k - 1]}", "{cats[k]}"', f'"{cats[k - 1]}" "{cats[k]}"')
        return text

    def write_sql(self, plan: dict[str, Any], schema: str) -> str:
        args = plan["args"]
        col = "amount" if "amount" in schema else "total"
        months = ", ".join(f"'{m}'" for m in args["months"])
        cats = ", ".join(f"'{c}'" for c in args["categories"])
        return (
            f"SELECT category, month, SUM({col}) AS total FROM sales WHERE month IN ({months}) "
            f"AND category IN ({cats}) GROUP BY category, month ORDER BY category, month"
        )

    def write_report(self, summary: dict[str, Any]) -> str:
        lines = [f"Revenue report ({summary['currency']}, {summary['granularity']}):"]
        for cat, by_month in sorted(summary["totals"].items()):
            parts = ", ".join(f"{m}: {v:,.2f}" for m, v in sorted(by_month.items()))
            lines.append(f"- {cat}: {parts} (total {sum(by_month.values()):,.2f})")
        return "\n".join(lines)


class ReportAgent:
    """The agent.  No ``deps=`` anywhere: the graph comes from automatic capture."""

    def __init__(self, inj: Injector, conn: sqlite3.Connection, config: dict[str, str]) -> None:
        self.inj, self.conn, self.config, self.llm = inj, conn, config, ScriptedModel(inj)

    @trajdebug.step(kind="input")
    def receive_request(self, question: str) -> str:
        return question

    @trajdebug.step(kind="llm")
    def plan(self, question: str) -> str:
        return self.llm.plan(question)

    @trajdebug.step(kind="parse")
    def parse_plan(self, text: str) -> dict[str, Any]:
        try:
            return dict(json.loads(text))
        except json.JSONDecodeError:
            # Lenient repair: keep the list items that parse, drop the rest.
            fixed = re.sub(r'"(\w+)" "(\w+)"', r'"\2"', text)
            return dict(json.loads(fixed))

    @trajdebug.step(kind="tool")
    def get_schema(self, table: str) -> str:
        row = self.conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
        self.inj.warning("sqlite: no index on sales(month); the query will scan the table")
        return str(row[0])

    @trajdebug.step(kind="llm")
    def write_sql(self, plan: dict[str, Any], schema: str) -> str:
        return self.llm.write_sql(plan, schema)

    @trajdebug.retry(attempts=3, on=(TransientError,), reason="policy: retry transient database errors")
    @trajdebug.step(kind="tool")
    def run_sql(self, sql: str) -> list[dict[str, Any]]:
        self.inj.transient("run_sql")
        cur = self.conn.execute(sql)
        cols = [c[0] for c in cur.description]
        rows = [dict(zip(cols, r)) for r in cur.fetchall()]
        if self.inj.on("truncated-output"):
            rows = rows[: len(rows) - 1 - self.inj.rng.randrange(3)]  # a result page limit cut the tail
        return rows

    @trajdebug.step(kind="parse")
    def parse_rows(self, rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
        totals: dict[str, dict[str, float]] = {}
        for r in rows:
            totals.setdefault(str(r["category"]), {})[str(r["month"])] = float(r["total"])
        return totals

    @trajdebug.step(kind="state")
    def save_totals(self, totals: dict[str, dict[str, float]], state: Any) -> list[str]:
        wrong = self.inj.rng.choice(sorted(totals)) if self.inj.on("wrong-state-value") else None
        for cat, by_month in totals.items():
            if cat == wrong:
                by_month = {m: v * 100 for m, v in by_month.items()}  # cents written where dollars belong
            state[f"totals/{cat}"] = by_month
        return sorted(totals)

    @trajdebug.step(kind="tool")
    def load_config(self, key: str) -> str:
        value = self.config[key]
        if self.inj.on("env-change"):
            value = "EUR"  # the deployment's configuration changed under the agent
        trajdebug.uses_env(f"config:{key}", value)
        return value

    @trajdebug.step(kind="tool")
    def fx_rate(self, currency: str) -> float:
        return FX[currency]

    @trajdebug.step(kind="other")
    def summarize(
        self, categories: list[str], state: Any, rate: float, granularity: str, currency: str
    ) -> dict[str, Any]:
        totals = {}
        for cat in categories:
            by_month = {m: round(v * rate, 2) for m, v in state[f"totals/{cat}"].items()}
            totals[cat] = (
                by_month if granularity == "monthly" else {"quarter": round(sum(by_month.values()), 2)}
            )
        return {"totals": totals, "granularity": granularity, "currency": currency}

    @trajdebug.step(kind="llm")
    def write_report(self, summary: dict[str, Any]) -> str:
        return self.llm.write_report(summary)

    @trajdebug.step(kind="tool")
    def control_totals(self, months: list[str], categories: list[str]) -> dict[str, float]:
        q = ",".join("?" * len(months))
        c = ",".join("?" * len(categories))
        rows = self.conn.execute(
            f"SELECT category, SUM(amount) FROM sales WHERE month IN ({q}) AND category IN ({c}) GROUP BY category",
            (*months, *categories),
        ).fetchall()
        return {str(k): round(float(v), 2) for k, v in rows}

    @trajdebug.step(kind="output")
    def check_report(self, question: str, report: str, control: dict[str, float], months: list[str]) -> str:
        problems = []
        for cat, total in control.items():
            m = re.search(rf"- {cat}: (.*) \(total ([\d,.]+)\)", report)
            if m is None:
                problems.append(f"category {cat} is missing")
                continue
            if abs(float(m.group(2).replace(",", "")) - total) > 0.01 * total:
                problems.append(f"{cat} total {m.group(2)} does not match the database ({total:,.2f})")
            if "per month" in question and any(mo not in m.group(1) for mo in months):
                problems.append(f"{cat} lacks the monthly breakdown")
        if problems:
            raise CheckFailed("report check failed: " + "; ".join(problems[:3]))
        return report

    @trajdebug.step(kind="agent")
    def answer(self, question: str, state: Any) -> str:
        q = self.receive_request(question)
        plan = self.parse_plan(self.plan(q))
        schema = self.get_schema("sales")
        rows = self.run_sql(self.write_sql(plan, schema))
        totals = self.parse_rows(rows)
        cats = self.save_totals(totals, state)
        currency = self.load_config("REPORT_CURRENCY")
        rate = self.fx_rate(currency)
        with trajdebug.step("choose_granularity", kind="condition", input={"question": q}) as decision:
            monthly = "per month" in q or len(plan["args"]["months"]) <= 3
            if self.inj.on("wrong-branch"):
                monthly = not monthly
            decision.output = granularity = "monthly" if monthly else "quarterly"
        with trajdebug.branch(decision):
            summary = self.summarize(cats, state, rate, granularity, currency)
        report = self.write_report(summary)
        quarter = re.search(r"\d{4}-Q[1-4]", q).group(0)  # type: ignore[union-attr]
        wanted = re.findall(r"\b(" + "|".join(CATEGORIES) + r")\b", q)
        control = self.control_totals(list(QUARTERS[quarter]), wanted)
        return self.check_report(q, report, control, list(QUARTERS[quarter]))


def run(case: Case) -> Result:
    """Run the workflow once for ``case``."""
    inj = Injector(case)
    cats = inj.rng.sample(CATEGORIES, inj.rng.randint(4, 6))
    quarter = inj.rng.choice(("2025-Q2", "2025-Q3", "2025-Q4"))
    question = f"Revenue per month for {', '.join(cats)} in {quarter}, in our reporting currency."
    conn = _database(inj, cats)
    agent = ReportAgent(inj, conn, {"REPORT_CURRENCY": "USD"})
    try:
        r = record(
            NAME,
            inj,
            lambda run: agent.answer(question, run.state),
            metadata={"task": question, "sql_schema": SCHEMA},
        )
    finally:
        conn.close()
    return Result(r)
