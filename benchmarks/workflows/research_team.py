"""Workflow: a multi-agent research team (a lead agent and parallel researcher sub-agents).

The lead plans one assignment per market (LLM), writes its selection criteria
to shared state, and runs a researcher sub-agent per market in a thread pool.
Each researcher searches the document store, reads the best document, takes
notes (LLM) and files them in the team's shared notes.  The lead then decides
how to rank (a branch), recommends a market from the notes and the criteria,
and a reviewer fact-checks the recommendation against the documents.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import trajdebug
from benchmarks.faults import Case, Injector, TransientError
from benchmarks.workflows._base import CheckFailed, Result, record


NAME = "research-team"
FAULTS = ("subagent-wrong", "race", "bad-tool-args", "wrong-branch", "wrong-state-value", "truncated-output")
MARKETS = ("solar", "batteries", "hydrogen", "geothermal", "wind", "nuclear", "biofuel")


class Library:
    """A document store: one market report per market (and a near-duplicate older one)."""

    def __init__(self, inj: Injector, markets: list[str]) -> None:
        self.docs: dict[str, str] = {}
        self.facts: dict[str, tuple[float, float]] = {}
        for m in markets:
            size, growth = round(inj.rng.uniform(5, 120), 1), round(inj.rng.uniform(2, 30), 1)
            self.facts[m] = (size, growth)
            self.docs[f"{m}-2025"] = (
                f"Market report 2025: {m}. The global {m} market reached {size} billion USD in 2025. "
                f"Analysts expect annual growth of {growth} percent through 2030. Risks: supply chains, policy."
            )
            self.docs[f"{m}-2021"] = (
                f"Market report 2021: {m}. The global {m} market reached {round(size * 0.6, 1)} billion USD in 2021. "
                f"Analysts expect annual growth of {round(growth * 1.5, 1)} percent through 2025."
            )


class ScriptedModel:
    """A deterministic stand-in for the LLMs of the lead and the researchers."""

    def __init__(self, inj: Injector) -> None:
        self.inj = inj

    def plan(self, question: str) -> str:
        markets = re.findall(r"\b(" + "|".join(MARKETS) + r")\b", question)
        tasks: list[dict[str, Any]] = [
            {"agent": "researcher", "args": {"market": m, "year": 2025}} for m in markets
        ]
        if self.inj.on("bad-tool-args"):
            tasks[self.inj.rng.randrange(len(tasks))]["args"]["year"] = 2021
        return json.dumps(tasks)

    def take_notes(self, market: str, doc: str) -> dict[str, Any]:
        size = re.search(r"reached ([\d.]+) billion USD in (\d{4})", doc)
        growth = re.search(r"growth of ([\d.]+) percent", doc)
        return {
            "market": market,
            "size_busd": float(size.group(1)) if size else None,
            "year": int(size.group(2)) if size else None,
            "growth_pct": float(growth.group(1)) if growth else None,
        }


class Team:
    """The lead, the researchers and the reviewer: decorated functions; no ``deps=``."""

    def __init__(self, inj: Injector, lib: Library, wrong_market: str) -> None:
        self.inj, self.lib, self.llm = inj, lib, ScriptedModel(inj)
        self.wrong_market = wrong_market
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(2, timeout=5)

    # -- a researcher sub-agent ----------------------------------------------------

    @trajdebug.retry(attempts=3, on=(TransientError,), reason="policy: retry resets")
    @trajdebug.step(kind="retrieval")
    def search_docs(self, market: str, year: int) -> list[str]:
        self.inj.transient(f"search {market}")
        return sorted(d for d in self.lib.docs if d.startswith(market) and d.endswith(str(year)))

    @trajdebug.step(kind="tool")
    def read_doc(self, doc_id: str) -> str:
        text = self.lib.docs[doc_id]
        if doc_id.startswith(self.wrong_market) and self.inj.on("truncated-output"):
            text = text[: text.index("Analysts")]  # the reader's page limit cut the document
        return text

    @trajdebug.step(kind="llm")
    def take_notes(self, market: str, doc: str) -> dict[str, Any]:
        notes = self.llm.take_notes(market, doc)
        if market == self.wrong_market and self.inj.on("subagent-wrong"):
            # The researcher misreads the percentage as a fraction (12.3 percent -> 1.23).
            notes["growth_pct"] = round(notes["growth_pct"] / 10, 2)
        return notes

    @trajdebug.step(kind="state")
    def file_notes(self, notes: dict[str, Any], state: Any, race: bool) -> int:
        if race:
            filed = dict(state.get("notes", {}))
            self.barrier.wait()  # both researchers read the notes before either writes: no lock
            filed[notes["market"]] = notes
            if any(m not in filed for m in state.get("notes", {})):
                self.inj.on("race")  # this write loses the other researcher's notes
            state["notes"] = filed
            return len(filed)
        with self.lock:
            state["notes"] = {**state.get("notes", {}), notes["market"]: notes}
            return len(state["notes"])

    @trajdebug.step(kind="agent", agent="researcher")
    def researcher(self, market: str, year: int, state: Any, race: bool) -> dict[str, Any]:
        docs = self.search_docs(market, year)
        notes: dict[str, Any] = self.take_notes(market, self.read_doc(docs[0]))
        self.file_notes(notes, state, race)
        return notes

    # -- the lead -----------------------------------------------------------------------

    @trajdebug.step(kind="input")
    def receive_question(self, question: str) -> str:
        return question

    @trajdebug.step(kind="llm")
    def plan(self, question: str) -> str:
        return self.llm.plan(question)

    @trajdebug.step(kind="parse")
    def parse_tasks(self, text: str) -> list[dict[str, Any]]:
        return [t["args"] for t in json.loads(text)]

    @trajdebug.step(kind="state")
    def set_criteria(self, question: str, state: Any) -> dict[str, Any]:
        floor = float(re.search(r"at least ([\d.]+) billion", question).group(1))  # type: ignore[union-attr]
        if self.inj.on("wrong-state-value"):
            floor *= 10  # a unit slip: the floor is written in hundreds of millions
        state["criteria"] = {"min_size_busd": floor, "horizon": 2030}
        return dict(state["criteria"])

    @trajdebug.step(kind="other")
    def recommend(self, state: Any, rank_by: str) -> dict[str, Any]:
        crit = state["criteria"]
        notes = state["notes"]
        years = {m: n["year"] for m, n in notes.items()}
        ok = [n for n in notes.values() if (n["size_busd"] or 0) >= crit["min_size_busd"]]
        self.inj.warning("two notes cite the same analyst house")
        if not ok:
            return {"market": None, "why": "no market passes the size floor", "considered": years}
        best = max(ok, key=lambda n: n[rank_by] or 0)
        return {"market": best["market"], "why": f"highest {rank_by}", "considered": years, "notes": best}

    @trajdebug.step(kind="agent", agent="reviewer")
    def review(self, question: str, rec: dict[str, Any]) -> dict[str, Any]:
        checked: dict[str, Any] = self.fact_check(question, rec)
        return checked

    @trajdebug.step(kind="output")
    def fact_check(self, question: str, rec: dict[str, Any]) -> dict[str, Any]:
        markets = re.findall(r"\b(" + "|".join(MARKETS) + r")\b", question)
        floor = float(re.search(r"at least ([\d.]+) billion", question).group(1))  # type: ignore[union-attr]
        eligible = [m for m in markets if self.lib.facts[m][0] >= floor]
        right = max(eligible, key=lambda m: self.lib.facts[m][1]) if eligible else None
        problems = []
        missing = [m for m in markets if m not in rec.get("considered", [])]
        if missing:
            problems.append(f"markets never compared: {', '.join(missing)}")
        old = [f"{m} ({y})" for m, y in rec.get("considered", {}).items() if y != 2025]
        if old:
            problems.append(f"notes from outdated reports: {', '.join(old)}")
        if rec["market"] != right:
            problems.append(
                f"recommended {rec['market']}, but the reports make {right} the fastest-growing eligible market"
            )
        if problems:
            raise CheckFailed("review failed: " + "; ".join(problems))
        return rec

    @trajdebug.step(kind="agent", agent="lead")
    def lead(self, question: str, state: Any) -> dict[str, Any]:
        q = self.receive_question(question)
        tasks = self.parse_tasks(self.plan(q))
        self.set_criteria(q, state)
        race = self.inj.fault == "race"
        with trajdebug.ContextThreadPoolExecutor(max_workers=2) as pool:
            futures = [
                pool.submit(self.researcher, t["market"], t["year"], state, race and i < 2)
                for i, t in enumerate(tasks)
            ]
            results = [f.result() for f in futures]
        with trajdebug.step(
            "choose_ranking", kind="condition", input={"question": q, "results": len(results)}
        ) as decision:
            rank_by = "growth_pct" if "fastest-growing" in q else "size_busd"
            if self.inj.on("wrong-branch"):
                rank_by = "size_busd" if rank_by == "growth_pct" else "growth_pct"
            decision.output = rank_by
        with trajdebug.branch(decision):
            rec = self.recommend(state, rank_by)
        return dict(self.review(q, rec))


def run(case: Case) -> Result:
    """Run the workflow once for ``case``.

    The data are drawn (from the seed) so that each fault changes the answer:
    a fault that changes nothing makes no failing case.
    """
    for attempt in range(200):
        c = (
            case
            if attempt == 0
            else Case(case.workflow, case.fault, case.seed * 1000 + attempt, case.distractors)
        )
        inj = Injector(c)
        markets = inj.rng.sample(MARKETS, inj.rng.randint(3, 5))
        lib = Library(inj, markets)
        floor = round(inj.rng.uniform(4, 12), 1)
        eligible = sorted((m for m in markets if lib.facts[m][0] >= floor), key=lambda m: -lib.facts[m][1])
        if len(eligible) < 2:
            continue
        best = eligible[0]
        if (
            best != max(eligible, key=lambda m: lib.facts[m][0])
            and lib.facts[best][0] < floor * 10
            and lib.facts[eligible[1]][1] > lib.facts[best][1] / 10 + 0.5
        ):
            break
    if case.fault == "race":
        # The two racing researchers are the first two; the winner's notes are among those that can be lost.
        markets.remove(best)
        markets.insert(0, best)
    inj.case = case  # the ground truth names the case asked for
    question = (
        f"Of {', '.join(markets)}: which is the fastest-growing market of at least {floor} billion USD?"
    )
    team = Team(inj, lib, best)
    r = record(NAME, inj, lambda run: team.lead(question, run.state), metadata={"task": question})
    return Result(r)
