"""Workflow: web research -> extract -> store -> summarize.

plan searches (LLM) -> search (tool) -> fetch the pages in parallel (a
thread pool; retried on connection resets and timeouts, a timeout falling back
to the cache) while registering each source in shared state -> extract facts
as JSON (LLM) -> parse them leniently -> keep them in state -> store them in
a real SQLite database -> summarize (LLM) -> verify the summary against the
pages and the requested year.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from typing import Any

import trajdebug
from benchmarks.faults import Case, Injector, ToolTimeout, TransientError
from benchmarks.workflows._base import CheckFailed, Result, record


NAME = "web-research"
FAULTS = (
    "bad-tool-args",
    "masked-retry-stale",
    "json-repair-drop",
    "truncated-output",
    "race",
    "wrong-state-value",
)
COMPANIES = ("acme", "globex", "initech", "umbrella", "hooli", "vandelay", "stark", "wayne", "tyrell")
YEAR = 2025


def _page(company: str, year: int, revenue: float, employees: int) -> str:
    return (
        f"{company.title()} Inc. annual report {year}. Overview of the year and outlook. "
        f"Revenue for fiscal {year} was {revenue:.1f} million USD, driven by new contracts. "
        f"The company employed {employees} people at year end. Forward-looking statements follow."
    )


class Web:
    """A small deterministic web: the current and last-year annual report of each company."""

    def __init__(self, inj: Injector, companies: list[str]) -> None:
        self.pages: dict[str, str] = {}
        self.cache: dict[str, str] = {}
        for c in companies:
            rev, emp = round(inj.rng.uniform(50, 900), 1), inj.rng.randint(120, 9000)
            self.pages[f"https://{c}.example/ir/{YEAR}"] = _page(c, YEAR, rev, emp)
            self.pages[f"https://{c}.example/ir/{YEAR - 1}"] = _page(
                c, YEAR - 1, round(rev * 0.8, 1), emp - 40
            )
            # What a crawler cached last year under the current URL.
            self.cache[f"https://{c}.example/ir/{YEAR}"] = _page(c, YEAR - 1, round(rev * 0.8, 1), emp - 40)


class ScriptedModel:
    """A deterministic stand-in for the LLM."""

    def __init__(self, inj: Injector) -> None:
        self.inj = inj

    def plan(self, task: str) -> str:
        names = re.findall(r"\b(" + "|".join(COMPANIES) + r")\b", task)
        year = int(re.search(r"\b(20\d\d)\b", task).group(1))  # type: ignore[union-attr]
        calls: list[dict[str, Any]] = [
            {"tool": "search", "args": {"query": f"{n} annual report", "year": year}} for n in names
        ]
        if self.inj.on("bad-tool-args"):
            calls[self.inj.rng.randrange(len(calls))]["args"]["year"] = year - 1
        return json.dumps(calls)

    def extract(self, pages: list[str]) -> str:
        facts = []
        for p in pages:
            name = re.match(r"(\w+) Inc\.", p)
            year = re.search(r"annual report (\d{4})", p)
            rev = re.search(r"was ([\d.]+) million", p)
            emp = re.search(r"employed (\d+) people", p)
            facts.append(
                {
                    "company": name.group(1).lower() if name else None,
                    "year": int(year.group(1)) if year else None,
                    "revenue_musd": float(rev.group(1)) if rev else None,
                    "employees": int(emp.group(1)) if emp else None,
                }
            )
        text = json.dumps(facts)
        if self.inj.on("json-repair-drop"):
            # The model forgets to close one object: the item no longer parses.
            k = self.inj.rng.randrange(len(facts))
            item = json.dumps(facts[k])
            text = text.replace(item, item[:-1] + ",", 1)
        return text

    def summarize(self, facts: dict[str, dict[str, Any]]) -> str:
        lines = [f"Research summary, fiscal {YEAR}:"]
        for c, f in sorted(facts.items()):
            emp = f["employees"] if f["employees"] is not None else "unknown"
            lines.append(f"- {c}: revenue {f['revenue_musd']} million USD in {f['year']}, {emp} employees")
        return "\n".join(lines)


class ResearchAgent:
    """The agent: decorated functions calling each other; no ``deps=``."""

    def __init__(self, inj: Injector, web: Web, db: sqlite3.Connection) -> None:
        self.inj, self.web, self.db, self.llm = inj, web, db, ScriptedModel(inj)
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(2, timeout=5)
        self.calls: dict[str, int] = {}
        self.stale_url = self.cut_url = ""
        """The URL whose fetch times out (masked-retry-stale) or is cut off (truncated-output)."""
        self.timed_out: dict[str, bool] = {}

    @trajdebug.step(kind="input")
    def receive_task(self, task: str) -> str:
        return task

    @trajdebug.step(kind="llm")
    def plan(self, task: str) -> str:
        return self.llm.plan(task)

    @trajdebug.step(kind="parse")
    def parse_calls(self, text: str) -> list[dict[str, Any]]:
        return list(json.loads(text))

    @trajdebug.step(kind="tool")
    def search(self, query: str, year: int) -> list[str]:
        company = query.split()[0]
        return [u for u in self.web.pages if u.startswith(f"https://{company}.") and u.endswith(str(year))]

    @trajdebug.retry(attempts=3, on=(TransientError, ToolTimeout), reason="policy: retry resets and timeouts")
    @trajdebug.step(kind="tool")
    def fetch(self, url: str) -> str:
        n = self.calls[url] = self.calls.get(url, 0) + 1
        if n == 1:
            if self.inj.fault == "masked-retry-stale" and url == self.stale_url:
                raise ToolTimeout(f"GET {url}: read timed out after 10 s")
            self.inj.transient(f"fetch {url}")
        if n > 1 and self.timed_out.get(url) and self.inj.on("masked-retry-stale"):
            return self.web.cache[url]  # serve the cached copy rather than fail
        page = self.web.pages[url]
        if url == self.cut_url and self.inj.on("truncated-output"):
            page = page[: page.index("The company employed")]  # the response body was cut off
        return page

    @trajdebug.step(kind="state")
    def register_source(self, url: str, state: Any, race: bool) -> int:
        if race:
            sources = list(state.get("sources", []))
            self.barrier.wait()  # both workers read before either writes: no lock
            sources.append(url)
            current = state.get("sources", [])
            if any(u not in sources for u in current):
                self.inj.on("race")  # this write loses the other worker's update
            state["sources"] = sources
            return len(sources)
        with self.lock:
            state["sources"] = [*state.get("sources", []), url]
            return len(state["sources"])

    @trajdebug.step(kind="agent")
    def gather(self, url: str, state: Any, race: bool) -> str:
        page = self.fetch(url)
        self.register_source(url, state, race)
        return page

    @trajdebug.step(kind="llm")
    def extract(self, pages: list[str]) -> str:
        return self.llm.extract(pages)

    @trajdebug.step(kind="parse")
    def parse_facts(self, text: str) -> list[dict[str, Any]]:
        try:
            return list(json.loads(text))
        except json.JSONDecodeError:
            # Lenient repair: keep the objects that parse on their own, drop the rest.
            items = []
            for chunk in re.findall(r"\{[^{}]*\}", text):
                try:
                    items.append(json.loads(chunk))
                except json.JSONDecodeError:
                    continue
            return items

    @trajdebug.step(kind="state")
    def keep_facts(self, facts: list[dict[str, Any]], state: Any) -> list[str]:
        names = []
        bad = self.inj.rng.randrange(len(facts)) if facts and self.inj.on("wrong-state-value") else None
        for i, f in enumerate(facts):
            if f["company"] is None:
                continue
            value = dict(f)
            if i == bad:
                # Thousands recorded as millions.
                value["revenue_musd"] = round(value["revenue_musd"] * 1000, 1)
            state[f"facts/{f['company']}"] = value
            names.append(f["company"])
        self.inj.warning("facts cache nearly full (81%)")
        return names

    @trajdebug.step(kind="tool")
    def store(self, names: list[str], state: Any) -> int:
        registered = state["sources"]
        n = 0
        for c in names:
            if any(u.startswith(f"https://{c}.") for u in registered):
                f = state[f"facts/{c}"]
                self.db.execute(
                    "INSERT INTO facts VALUES (?, ?, ?, ?)", (c, f["year"], f["revenue_musd"], f["employees"])
                )
                n += 1
        trajdebug.writes("db:facts")
        return n

    @trajdebug.step(kind="tool")
    def load_stored(self) -> dict[str, dict[str, Any]]:
        trajdebug.reads("db:facts")
        rows = self.db.execute("SELECT company, year, revenue, employees FROM facts").fetchall()
        return {r[0]: {"year": r[1], "revenue_musd": r[2], "employees": r[3]} for r in rows}

    @trajdebug.step(kind="llm")
    def summarize(self, facts: dict[str, dict[str, Any]]) -> str:
        return self.llm.summarize(facts)

    @trajdebug.step(kind="output")
    def verify(self, task: str, summary: str, pages: dict[str, str]) -> str:
        problems = []
        for c in re.findall(r"\b(" + "|".join(COMPANIES) + r")\b", task):
            m = re.search(rf"- {c}: revenue ([\d.]+) million USD in (\d+), (\w+) employees", summary)
            if m is None:
                problems.append(f"{c} is missing from the summary")
                continue
            if int(m.group(2)) != YEAR:
                problems.append(f"{c}'s figures are for {m.group(2)}, not {YEAR}")
            truth = pages[f"https://{c}.example/ir/{YEAR}"]
            if f"was {m.group(1)} million" not in truth:
                problems.append(f"{c}'s revenue {m.group(1)} does not match its {YEAR} report")
            if m.group(3) == "unknown":
                problems.append(f"{c}'s headcount is missing")
        if problems:
            raise CheckFailed("summary check failed: " + "; ".join(problems[:3]))
        return summary

    @trajdebug.step(kind="agent")
    def research(self, task: str, state: Any) -> str:
        t = self.receive_task(task)
        calls = self.parse_calls(self.plan(t))
        urls = [u for c in calls for u in self.search(**c["args"])]
        race = self.inj.fault == "race"
        with trajdebug.ContextThreadPoolExecutor(max_workers=2) as pool:
            pages = list(pool.map(lambda u: self.gather(u, state, race and u in urls[:2]), urls))
        facts = self.parse_facts(self.extract(pages))
        names = self.keep_facts(facts, state)
        self.store(names, state)
        summary = self.summarize(self.load_stored())
        return self.verify(t, summary, self.web.pages)


def run(case: Case) -> Result:
    """Run the workflow once for ``case``."""
    inj = Injector(case)
    companies = inj.rng.sample(COMPANIES, inj.rng.randint(3, 5))
    task = f"Find the {YEAR} revenue and headcount of {', '.join(companies)} and summarize them."
    web = Web(inj, companies)
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute("CREATE TABLE facts (company TEXT, year INTEGER, revenue REAL, employees INTEGER)")
    agent = ResearchAgent(inj, web, db)
    target = f"https://{inj.rng.choice(companies)}.example/ir/{YEAR}"
    agent.stale_url = agent.cut_url = target
    agent.timed_out = {target: case.fault == "masked-retry-stale"}
    try:
        r = record(NAME, inj, lambda run: agent.research(task, run.state), metadata={"task": task})
    finally:
        db.close()
    return Result(r)
