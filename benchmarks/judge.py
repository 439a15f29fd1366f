"""``python -m benchmarks.judge``: what the model on top costs, and the bounds its combination rule allows.

No real model is reachable here, so this does not measure how good a model's
verdicts are.  It measures what does not depend on the model, on the
fault-injection suite (`benchmarks.quality`: six workflows, every fault, a few
seeds), each run judged through the real client against a chat-completions
server on 127.0.0.1 (`trajdebug.testing.FakeModelServer`):

- **cost**: tokens sent per run (the client's estimate, four characters a
  token: the fake server's own count is of words) and the wall time the judge
  adds when the model answers instantly (shortlist, redaction, prompts, HTTP,
  validation, combination);
- **bounds** of the combination rule (default weight 0.5): an *oracle* model
  (decisive, confidence 0.9, on the injected step when it is shortlisted;
  sound elsewhere) gives the best top-1 a model can reach; an *adversary*
  (confidence 1.0 decisive on the best-ranked wrong candidate, sound on every
  other step, the injected one included) the worst; a *failing* endpoint (HTTP 500) must leave the deterministic
  ranking exactly as it was.  Every variant must keep the injected step in the
  candidates whenever the deterministic ranking had it.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.quality import cases
from benchmarks.workflows import WORKFLOWS
from trajdebug.analysis import Analysis, analyze
from trajdebug.judge import Judge, JudgeConfig
from trajdebug.judge.client import messages_tokens
from trajdebug.judge.prompts import Redaction, verdict_messages
from trajdebug.judge.shortlist import Shortlist, failure_of, task_of
from trajdebug.testing import FakeModelServer, Reply, judge_script


TOP = 5
"""Candidates per run (``trajdebug analyze``'s default)."""


@dataclass(slots=True)
class Tally:
    """Ranks of the injected step per variant, and the costs."""

    ranks: dict[str, list[int | None]] = field(default_factory=dict)
    total: list[int] = field(default_factory=list)
    estimated: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    shortlisted: int = 0
    runs: int = 0
    lost: int = 0
    changed: int = 0

    def rank(self, variant: str, rank: int | None) -> None:
        self.ranks.setdefault(variant, []).append(rank)


def _rank(a: Analysis, truth: str | None) -> int | None:
    ids = [c.step_id for c in a.root_causes]
    return ids.index(truth) + 1 if truth in ids else None


def _verdicts(short: Shortlist, truth_label: str | None, oracle: bool) -> Callable[[str, str], dict[str, Any]]:
    # The adversary backs the best-ranked wrong candidate: the verdict that hurts most.
    ranked = sorted((e for e in short if e.rank is not None), key=lambda e: e.rank or 0)
    wrong = next((e.label for e in ranked if e.label != truth_label), None)

    def f(label: str, name: str) -> dict[str, Any]:
        hit = label == truth_label if oracle else label == wrong
        conf = 0.9 if oracle else 1.0
        return {"verdict": "decisive" if hit else "sound", "confidence": conf, "fix_removes_failure": hit}

    return f


def run(seeds: int) -> Tally:
    """Judge every case of the suite with each variant."""
    t = Tally()
    for case in cases(seeds):
        res = WORKFLOWS[case.workflow].run(case)
        truth = res.fault.get("step_id")
        # The hand ranking: the learned model (the default since round 42) is trained on these cases.
        base = analyze(res.run, top=TOP, previous=res.previous, model=None)
        if not base.root_causes:
            continue
        t.runs += 1
        t.rank("deterministic", _rank(base, truth))
        cfg = JudgeConfig(base_url="http://127.0.0.1:1/v1", model="bench", cache=None, expectation=False, explain=False)
        short = Shortlist(base, cfg.shortlist, cfg.max_steps)
        labels = {e.label: e.step.step_id for e in short}
        truth_label = next((lab for lab, sid in labels.items() if sid == truth), None)
        t.shortlisted += truth_label is not None
        t.estimated.append(
            messages_tokens(verdict_messages(task_of(base.run), failure_of(base), short, Redaction(), cfg.value_chars))
        )
        scripts: dict[str, Any] = {
            "oracle": judge_script(_verdicts(short, truth_label, True)),
            "adversary": judge_script(_verdicts(short, truth_label, False)),
            "failing": lambda _r: Reply(status=500),
        }
        for variant, script in scripts.items():
            full = variant == "oracle"  # the three questions, for the cost; the bounds need only the verdicts
            with FakeModelServer(script) as server:
                judge = Judge(
                    JudgeConfig(base_url=server.base_url, model="bench", cache=None, retries=0, expectation=full, explain=full)
                )
                t0 = time.perf_counter()
                judged, _ = judge.judge(base)
                elapsed = time.perf_counter() - t0
            if full:
                t.total.append(sum(messages_tokens(r.body["messages"]) for r in server.requests))
            t.rank(variant, _rank(judged, truth))
            if _rank(base, truth) is not None and _rank(judged, truth) is None:
                t.lost += 1
            if variant == "failing" and judged.to_dict()["root_causes"] != base.to_dict()["root_causes"]:
                t.changed += 1
            if full:
                t.seconds.append(elapsed)
    return t


def _top(ranks: list[int | None], k: int) -> float:
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks) if ranks else 0.0


def report(t: Tally, seeds: int) -> str:
    """The results as Markdown."""

    def q(xs: list[float], p: float) -> float:
        return sorted(xs)[min(len(xs) - 1, int(p * len(xs)))] if xs else 0.0

    lines = [
        f"{t.runs} failed runs of the fault-injection suite ({seeds} seeds per workflow and fault), top {TOP}; "
        f"the injected step was shortlisted in {t.shortlisted} ({t.shortlisted / max(t.runs, 1):.0%}).",
        "",
        "| ranking | top-1 | top-3 | top-5 |",
        "|---|---|---|---|",
    ]
    for variant, ranks in t.ranks.items():
        lines.append(f"| {variant} | {_top(ranks, 1):.0%} | {_top(ranks, 3):.0%} | {_top(ranks, 5):.0%} |")
    lines += [
        "",
        f"Injected steps lost from the candidates: {t.lost}; rankings a failing endpoint changed: {t.changed}.",
        f"Verdict question: {statistics.mean(t.estimated):.0f} tokens on average (client estimate, "
        f"4 characters a token), 95th percentile {q([float(x) for x in t.estimated], 0.95):.0f}, "
        f"largest {max(t.estimated)}.",
        f"All three questions (expectation, verdicts, explanation): {statistics.mean(t.total):.0f} tokens on average, "
        f"largest {max(t.total)}.",
        f"Time the judge adds per run (three questions) with an instant model: {statistics.mean(t.seconds) * 1000:.1f} ms on average, "
        f"95th percentile {q(t.seconds, 0.95) * 1000:.1f} ms.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run and print the Markdown."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.judge", description=__doc__)
    p.add_argument("--seeds", type=int, default=2, help="seeds per workflow and fault (default 2)")
    a = p.parse_args(argv)
    print(report(run(a.seeds), a.seeds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["main", "report", "run"]

