"""The HTML report of a large run: its size, the time to build it, and its time to first render in Chromium.

The run is recorded by the real recorder: a research team of sub-agents,
each looping model call → search tool → parse, a flaky tool retried, and a
failure at the end whose root lies in one agent's parse step.  The report is
written, opened from disk in headless Chromium (the system's package, driven
by Playwright) and timed from navigation start to the first paint of the
waterfall and to the page being ready (``body[data-ready]``); then the
graph tab is opened and timed, then the biggest ticket of the overview (the collapsed group or chunk
whose view has the most nodes and edges: the page lays it out when it is first opened), and the
waterfall scrolled to its end.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trajdebug.core.model import Run


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
GOAL_S = 2.0
"""The issue's goal: a 10,000-step run opens in under 2 s in Chromium."""


def agent_run(steps: int = 10_000, *, agents: int = 20, seed: int = 7) -> Run:
    """A failed multi-agent run of about ``steps`` steps, recorded by the real recorder."""
    import random

    import trajdebug
    from trajdebug.testing import capture_runs, deterministic

    rng = random.Random(seed)
    per_agent = max(3, (steps - 4 - agents) // agents)
    loops = per_agent // 3
    bad_agent = agents // 2
    with deterministic(), capture_runs() as runs:
        try:
            with (
                trajdebug.run("research-team", metadata={"tags": ["benchmark"], "version": "2.1"}),
                trajdebug.step("orchestrator", kind="agent"),
            ):
                with trajdebug.step("plan", kind="llm", input={"question": "market size of X"}) as plan:
                    plan.output = f"Split into {agents} sub-questions."
                finals = []
                for a in range(agents):
                    name = f"researcher-{a}"
                    with trajdebug.step(name, kind="agent", agent=name, deps=[plan]):
                        prev: Any = plan
                        for i in range(loops):
                            with trajdebug.step("think", kind="llm", agent=name, deps=[prev]) as think:
                                think.input = {"prompt": f"step {i} of sub-question {a}"}
                                think.output = f"search for figure {i} of region {a} " + "x" * rng.randint(20, 200)
                            hits = [{"title": f"doc {i}.{k}", "value": rng.random()} for k in range(3)]
                            with trajdebug.step("search", kind="tool", agent=name, deps=[think]) as search:
                                search.output = hits
                            with trajdebug.step("parse", kind="parse", agent=name, deps=[search]) as parse:
                                values = [d["value"] for d in hits]
                                if a == bad_agent and i == loops - 1:
                                    values = values[:1]  # the planted fault: drops results
                                parse.output = {"n": len(values), "mean": sum(values) / len(values)}
                            prev = parse
                        finals.append((prev, len(values)))
                with trajdebug.step("fetch_prices", kind="tool", attempt=1) as first:
                    first.error("HTTP 503 from the price service", type="HTTPError")
                with trajdebug.step("fetch_prices", kind="tool", attempt=2, retry_of=first) as second:
                    second.output = {"price": 12.5}
                counts = [n for _, n in finals]
                with trajdebug.step("combine", kind="llm", deps=[*(f for f, _ in finals), second]) as comb:
                    comb.output = {"counts": counts}
                with trajdebug.step("check", kind="condition", deps=[comb]):
                    if min(counts) < 3:
                        raise ValueError(f"incomplete research: an agent returned {min(counts)} results")
        except ValueError:
            pass
    return runs[0]


@dataclass(frozen=True, slots=True)
class ReportTiming:
    """One measured report."""

    steps: int
    """Steps in the run."""
    bytes: int
    """Size of the HTML file."""
    build_s: float
    """Time to analyze the run and write the report (Python)."""
    first_paint_s: float
    """Navigation start to the first contentful paint in Chromium (median of the trials)."""
    ready_s: float
    """Navigation start to the page having drawn the waterfall and panels (median)."""
    graph_s: float
    """Opening the graph tab (median)."""
    scroll_s: float
    """Scrolling the waterfall to its last step and drawing it (median)."""
    ticket_s: float
    """Opening the overview's biggest ticket: clicking its node to its view drawn, laid out in the page (median)."""
    ticket_nodes: int
    """Nodes of that ticket's view."""
    trials: int
    """Page loads measured."""

    def to_dict(self) -> dict[str, Any]:
        """As JSON data."""
        return {k: getattr(self, k) for k in self.__slots__}


def measure(steps: int = 10_000, *, trials: int = 3) -> ReportTiming:
    """Build the report of an ``agent_run(steps)`` and time it in Chromium."""
    from playwright.sync_api import sync_playwright

    from trajdebug.analysis import analyze
    from trajdebug.report.html import report_data, write_report

    run = agent_run(steps)
    t0 = time.perf_counter()
    analysis = analyze(run)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_report(Path(tmp) / "report.html", analysis)
        build = time.perf_counter() - t0
        size = path.stat().st_size
        views = report_data(analysis)["graph"]["views"]
        tickets = [v for v in views.values() if v["parent"] == "overview"]
        big = max(tickets, key=lambda v: len(v["nodes"]) + len(v["edges"]))
        at = [n["id"] for n in views["overview"]["nodes"]].index(big["id"][2:])
        paint, ready, graph, scroll, ticket = [], [], [], [], []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for _ in range(trials):
                page = browser.new_page(viewport={"width": 1500, "height": 900})
                page.goto(path.as_uri())
                page.wait_for_selector("body[data-ready]")
                page.wait_for_timeout(100)
                times = page.evaluate(
                    """() => {
                        const fcp = performance.getEntriesByName('first-contentful-paint')[0];
                        return {fcp: fcp ? fcp.startTime : null, ready: window.__readyAt || null};
                    }"""
                )
                paint.append((times["fcp"] or 0) / 1000)
                ready.append((times["ready"] or 0) / 1000)
                t = time.perf_counter()
                page.click("#tabs [data-tab=graph]")
                page.wait_for_selector("#graph .node")
                graph.append(time.perf_counter() - t)
                page.select_option("#graph select", "overview")
                t = time.perf_counter()
                page.locator(f'#graph .node[data-node="{at}"]').dispatch_event("click")
                page.wait_for_function(f"() => document.querySelectorAll('#graph .node').length === {len(big['nodes'])}")
                ticket.append(time.perf_counter() - t)
                t = time.perf_counter()
                page.evaluate("() => { const s = document.querySelector('.wf-scroll'); s.scrollTop = s.scrollHeight; }")
                page.click("#tabs [data-tab=waterfall]")
                page.wait_for_selector(".wf-row[data-step]")
                scroll.append(time.perf_counter() - t)
                page.close()
            browser.close()
    return ReportTiming(
        steps=len(run.steps),
        bytes=size,
        build_s=round(build, 3),
        first_paint_s=round(statistics.median(paint), 3),
        ready_s=round(statistics.median(ready), 3),
        graph_s=round(statistics.median(graph), 3),
        scroll_s=round(statistics.median(scroll), 3),
        ticket_s=round(statistics.median(ticket), 3),
        ticket_nodes=len(big["nodes"]),
        trials=trials,
    )


def run_report_html(*, quick: bool = False, progress: Any = None) -> list[ReportTiming]:
    """The section's measurements: reports of 1,000 and 10,000 steps (1,000 only with ``quick``)."""
    sizes = (1_000,) if quick else (1_000, 10_000)
    out = []
    for n in sizes:
        if progress:
            progress(f"report_html: {n} steps")
        out.append(measure(n, trials=2 if quick else 3))
    return out


__all__ = ["GOAL_S", "ReportTiming", "agent_run", "measure", "run_report_html"]
