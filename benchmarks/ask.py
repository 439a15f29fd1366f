"""Ask, don't guess: the guided search with an oracle simulated from a fault-free control run.

For every case of the fault-injection suite (`benchmarks.quality`) the
workflow is recorded twice with the same seed: with the fault, and as its
fault-free twin (`benchmarks.workflows._base.reference`: same data and task,
injector disarmed).  A simulated oracle answers the guided search's questions
(`trajdebug.analysis.guided_search`) from the twin: a step's output is
*correct* when it equals the same step's output in the twin (aligned by name
and occurrence), and *wrong* otherwise at or after the injected step (in start
order); a difference before it is the world's noise, answered correct.

Reported: the root found (the search ends certain on the injected step) with
a truthful oracle, on the cases whose injected step lies in the failure's
backward slice over the recorded and inferred edges; questions asked, median
and p90, for the three strategies (``prior``: divide and query weighted by
the ranker's suspicion; ``top-down``; ``linear``: a backward scan); and the
root found with 10 % of the answers flipped at random, plain and with
``recheck`` (the answers that prove a root asked twice, a third time on a tie).

Both oracles, side by side: the **two-valued** one above (correct / wrong) and
a **three-valued** one (Naish 1997, `Answer.admissible`) that knows the same
truth: the injected step, and a step enclosing it, are *erroneous* (wrong for
the inputs they were given); every other wrong step is *inadmissible* (it was
given a wrong value); the rest correct.  Its noisy form replaces 10 % of the
answers with one of the other two at random.  The two are never pooled.

On the blind suites of a generated workdir, totals only (never a case line):
``PYTHONPATH=src:. python -m benchmarks.ask suite_o suite_p --workdir DIR``.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.faults import Case
from benchmarks.quality import SEEDS_FULL, SEEDS_QUICK, cases
from trajdebug.analysis import STRATEGIES, Analysis, GuidedSearch, analyze, guided_search
from trajdebug.core.model import Answer, Run, Step


FLIP = 0.10
"""Share of answers flipped in the noisy setting."""
NOISY_REPEATS = 3
"""Noisy searches per case (different flips)."""


@dataclass(slots=True)
class AskCase:
    """What one case gave."""

    case_id: str
    steps: int
    on_graph: bool
    questions: dict[str, int] = field(default_factory=dict)
    found: dict[str, bool] = field(default_factory=dict)
    noisy: list[bool] = field(default_factory=list)
    noisy_recheck: list[bool] = field(default_factory=list)
    noisy_recheck_questions: list[int] = field(default_factory=list)
    skipped: str | None = None
    three: dict[str, Any] = field(default_factory=dict)
    """The same searches with the three-valued oracle: ``questions``, ``found``, ``noisy``,
    ``noisy_recheck``, ``noisy_recheck_questions`` (the fields above, by name)."""


def _key(run: Run) -> dict[str, tuple[str, int]]:
    seen: dict[str, int] = {}
    out = {}
    for s in run.steps:
        k = seen.get(s.name, 0)
        seen[s.name] = k + 1
        out[s.step_id] = (s.name, k)
    return out


def control_oracle(
    run: Run, control: Run, root: str, *, flip: float = 0.0, rng: random.Random | None = None
) -> Callable[[Step, Run], bool]:
    """The simulated oracle: equal to the control's same step -> correct; else wrong at or after ``root``,
    or when it encloses the root (a container started before its children and returns what they made)."""
    from trajdebug.analysis._oracles import effect, same_output

    keys = _key(run)
    twins = {k: control.step(sid) for sid, k in _key(control).items()}
    pos = {s.step_id: i for i, s in enumerate(run.steps)}
    at = pos[root]
    parent = {s.step_id: s.parent_id for s in run.steps}
    enclosing: set[str] = set()
    up = parent.get(root)
    while up is not None and up not in enclosing:
        enclosing.add(up)
        up = parent.get(up)
    noise = rng or random.Random(0)

    def oracle(step: Step, _run: Run) -> bool:
        twin = twins.get(keys[step.step_id])
        same = twin is not None and twin.status == step.status and same_output(effect(step), effect(twin))
        truth = same or (pos[step.step_id] < at and step.step_id not in enclosing)
        if flip and noise.random() < flip:
            truth = not truth
        return truth

    return oracle


ERRONEOUS, INADMISSIBLE, CORRECT = "erroneous", "inadmissible", "correct"
_LABELS = (ERRONEOUS, INADMISSIBLE, CORRECT)


def control_oracle3(
    run: Run, control: Run, root: str, *, flip: float = 0.0, rng: random.Random | None = None
) -> Callable[[Step, Run], Answer]:
    """The three-valued simulated oracle: what `control_oracle` calls wrong is *erroneous* on the root and
    on a step enclosing it, *inadmissible* elsewhere; with ``flip``, that share of the answers is replaced
    by one of the other two labels at random.  It answers as ``person``: it stands for a person pressing
    ``o`` / ``i`` at `--ask` (only a person says which inputs were right, `analysis._verdicts`), so an
    erroneous answer of it spares the audit as a person's does; the two-valued oracle stays ``oracle:control``."""
    truthful = control_oracle(run, control, root)
    parent = {s.step_id: s.parent_id for s in run.steps}
    own = {root}
    up = parent.get(root)
    while up is not None and up not in own:
        own.add(up)
        up = parent.get(up)
    noise = rng or random.Random(0)

    def oracle(step: Step, _run: Run) -> Answer:
        label = CORRECT if truthful(step, _run) else ERRONEOUS if step.step_id in own else INADMISSIBLE
        if flip and noise.random() < flip:
            label = noise.choice([x for x in _LABELS if x != label])
        if label == CORRECT:
            return Answer(step.step_id, True, "person")
        return Answer(step.step_id, False, "person", admissible=label == ERRONEOUS)

    return oracle


def run_case(case: Case) -> AskCase:
    """Record the case and its twin, analyse, and search with each strategy and with noise."""
    from benchmarks.workflows import WORKFLOWS, reference

    res = WORKFLOWS[case.workflow].run(case)
    run = res.run
    truth = res.fault.get("step_id")
    out = AskCase(case.case_id, len(run.steps), False)
    if run.outcome != "failure" or truth is None or truth not in {s.step_id for s in run.steps}:
        out.skipped = "no failure, or the root is in an earlier turn"
        return out
    twin = reference(case)
    if twin.outcome != "success":
        out.skipped = "the fault-free twin fails too"
        return out
    # The hand ranking: the learned model (the default since round 42) is trained on these cases.
    a: Analysis = analyze(run, top=10, previous=res.previous, model=None)
    out.steps = len(a.run.steps)
    _search(out, a, twin, truth, case.case_id)
    return out


def heldout_case(case_dir: Path, truth: dict[str, Any]) -> AskCase:
    """One case of a blind suite: its failed run analysed alone, the oracle from ``control.*`` beside it."""
    from benchmarks.blind import _source, truth_step
    from trajdebug.api import analyze_source
    from trajdebug.sources.load import load_runs

    out = AskCase(str(truth.get("case_id")), 0, False)
    try:
        control_path = _source(case_dir, "control")
    except FileNotFoundError:
        out.skipped = "no control run written beside the case"
        return out
    # The hand ranking: the learned model (the default since round 42) is trained on these cases.
    [a] = analyze_source(_source(case_dir, "failed"), truth["failed_run_id"], top=10, model=None).analyses
    controls = [r for r in load_runs(control_path) if r.outcome == "success"]
    sid = truth_step(a.run, truth["root"])
    out.steps = len(a.run.steps)
    if sid is None or not controls:
        out.skipped = "truth step not in the recorded run, or no passing control"
        return out
    _search(out, a, controls[-1], sid, str(truth.get("case_id")))
    return out


def _search(out: AskCase, a: Analysis, twin: Run, truth: str, seed: str) -> None:
    out.on_graph = truth in GuidedSearch(a, audit=0).index  # the recorded slice, before any audit
    for strategy in STRATEGIES:
        g = guided_search(a, control_oracle(a.run, twin, truth), strategy=strategy, timeout=None)
        out.questions[strategy] = g.asked
        out.found[strategy] = g.certain and g.root == truth
    for i in range(NOISY_REPEATS):
        g = guided_search(
            a, control_oracle(a.run, twin, truth, flip=FLIP, rng=random.Random(f"{seed}:{i}")), timeout=None
        )
        out.noisy.append(g.certain and g.root == truth)
        oracle = control_oracle(a.run, twin, truth, flip=FLIP, rng=random.Random(f"{seed}:{i}"))
        g = guided_search(a, oracle, timeout=None, recheck=True)
        out.noisy_recheck.append(g.certain and g.root == truth)
        out.noisy_recheck_questions.append(g.asked)
    _search3(out, a, twin, truth, seed)


def _search3(out: AskCase, a: Analysis, twin: Run, truth: str, seed: str) -> None:
    """`_search` with the three-valued oracle (its own draws of noise), into ``out.three``."""
    t: dict[str, Any] = {"questions": {}, "found": {}, "noisy": [], "noisy_recheck": [], "noisy_recheck_questions": []}
    for strategy in STRATEGIES:
        g = guided_search(a, control_oracle3(a.run, twin, truth), strategy=strategy, timeout=None)
        t["questions"][strategy] = g.asked
        t["found"][strategy] = g.certain and g.root == truth
    for i in range(NOISY_REPEATS):
        for recheck in (False, True):
            oracle = control_oracle3(a.run, twin, truth, flip=FLIP, rng=random.Random(f"{seed}:{i}:3"))
            g = guided_search(a, oracle, timeout=None, recheck=recheck)
            t["noisy_recheck" if recheck else "noisy"].append(g.certain and g.root == truth)
            if recheck:
                t["noisy_recheck_questions"].append(g.asked)
    out.three = t


def run_heldout(suite: str, workdir: Path, progress: Callable[[str], None] = print) -> list[AskCase]:
    """A blind suite generated afresh (its generator writes ``control.*``) and searched case by case."""
    from benchmarks.blind import _cases, generate

    root = generate(suite, workdir, progress)
    return [heldout_case(root / str(t["case_id"]), t) for t in _cases(root)]


def _pct(xs: list[bool]) -> float | None:
    return round(100 * sum(xs) / len(xs), 1) if xs else None


def _p90(xs: list[int]) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return float(s[min(len(s) - 1, round(0.9 * (len(s) - 1)))])


def summarize(rows: list[AskCase], lo: int = 0, hi: int = 10**9) -> dict[str, Any]:
    """Root found and questions per strategy over the cases on the graph with ``lo <= steps <= hi``; the
    three-valued oracle's, the same way, under ``three_valued``."""
    used = [r for r in rows if r.skipped is None and r.on_graph and lo <= r.steps <= hi]
    out = _summary(used)
    if any(r.three for r in used):
        out["three_valued"] = _summary([AskCase(r.case_id, r.steps, True, **r.three) for r in used if r.three])
    return out


def _summary(used: list[AskCase]) -> dict[str, Any]:
    out: dict[str, Any] = {"cases": len(used)}
    for s in STRATEGIES:
        qs = [r.questions[s] for r in used]
        out[s] = {
            "found_pct": _pct([r.found[s] for r in used]),
            "median": statistics.median(qs) if qs else None,
            "p90": _p90(qs),
        }
    out["noisy_found_pct"] = _pct([x for r in used for x in r.noisy])
    out["noisy_recheck_found_pct"] = _pct([x for r in used for x in r.noisy_recheck])
    rq = [q for r in used for q in r.noisy_recheck_questions]
    out["noisy_recheck_median"] = statistics.median(rq) if rq else None
    out["noisy_recheck_p90"] = _p90(rq)
    return out


def _three_cell(b: dict[str, Any]) -> str:
    t = b.get("three_valued")
    if not t:
        return "– | –"
    p = t["prior"]
    return f"{p['found_pct']} %, {p['median']} / {p['p90']} | {t['noisy_recheck_found_pct']} %"


def judge_cost(n: int = 12) -> dict[str, Any]:
    """The model as oracle, end to end against `trajdebug.testing.FakeModelServer`: requests and tokens per question.

    The fake server answers from the fault-free twin by the step name in the prompt (wrong when a step
    of that name is wrong), so this measures the plumbing and its cost, not a model's judgment.
    """
    import json
    import re

    from benchmarks.workflows import WORKFLOWS, reference
    from trajdebug.judge import JudgeConfig, JudgeOracle
    from trajdebug.testing import FakeModelServer

    asked = tokens = found = runs = 0
    for c in cases(1)[:n]:
        res = WORKFLOWS[c.workflow].run(c)
        truth = res.fault.get("step_id")
        if res.run.outcome != "failure" or truth not in res.run.step_map():
            continue
        twin = reference(c)
        # The hand ranking: the learned model (the default since round 42) is trained on these cases.
        a = analyze(res.run, top=10, previous=res.previous, model=None)
        oracle = control_oracle(a.run, twin, truth)
        wrong_names = {s.name for s in a.run.steps if not oracle(s, a.run)}

        def script(req: Any, wrong: set[str] = wrong_names) -> str:
            text = json.dumps(req.body)
            m = re.search(r"named <data>(.*?)</data>", text)
            bad = m is not None and m.group(1) in wrong
            return json.dumps({"correct": not bad, "reason": "differs from the expected value" if bad else "ok"})

        with FakeModelServer(script) as server:
            judge = JudgeOracle.of(JudgeConfig(base_url=server.base_url, model="fake", cache=None, backoff=0.001))
            g = guided_search(a, judge, timeout=30.0)
        runs += 1
        asked += g.asked
        tokens += judge.tokens
        found += g.certain and g.root == truth
    return {
        "runs": runs,
        "questions": asked,
        "tokens_per_question": round(tokens / asked) if asked else None,
        "found_pct": round(100 * found / runs, 1) if runs else None,
    }


HELDOUT = ("suite_g", "suite_f", "suite_e", "suite_c", "suite_b", "suite_a", "suite_d", "suite_dev")
"""The blind suites, held out first (`benchmarks.blind.STATUS`)."""


def _suite(rows: list[AskCase]) -> dict[str, Any]:
    done = [r for r in rows if r.skipped is None]
    return {
        "recorded": len(rows),
        "with_control": len(done),
        "on_graph": sum(1 for r in done if r.on_graph),
        "all": summarize(rows),
        "10-60 steps": summarize(rows, 10, 60),
        "steps_median": statistics.median([r.steps for r in done]) if done else None,
        "skipped": sorted({r.skipped for r in rows if r.skipped}),
    }


def run_ask(
    *,
    quick: bool = False,
    progress: Callable[[str], None] = print,
    heldout: Sequence[str] = HELDOUT,
    workdir: Path | None = None,
) -> dict[str, Any]:
    """The section's data: per-suite summaries (all sizes and 10–60 steps) and the skipped cases.

    Held-out suites are measured, never studied: only their totals are kept
    (no list of their missed cases).
    """
    from benchmarks._common import machine
    from benchmarks.blind import STATUS

    t0 = time.perf_counter()
    rows = []
    todo = cases(SEEDS_QUICK if quick else SEEDS_FULL)
    for i, c in enumerate(todo):
        rows.append(run_case(c))
        if i % 20 == 0:
            progress(f"ask: {i + 1}/{len(todo)} cases")
    suites = {"fault-injection (benchmarks/workflows, development)": _suite(rows)}
    where = workdir or Path(tempfile.mkdtemp(prefix="trajdebug-ask-"))
    for name in heldout:
        try:
            found = run_heldout(name, where, progress)
        except Exception as exc:  # noqa: BLE001 - a suite that cannot be generated is reported, not fatal
            suites[f"{name} ({STATUS.get(name, '?')})"] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            continue
        suites[f"{name} ({STATUS.get(name, '?')})"] = _suite(found)
    done = [r for r in rows if r.skipped is None]
    progress("ask: the judge as oracle against the fake model server")
    return {
        "judge": judge_cost(),
        "date": machine()["date"],
        "quick": quick,
        "seconds": round(time.perf_counter() - t0, 1),
        "suites": suites,
        "missed": [r.case_id for r in done if r.on_graph and not r.found.get("prior")][:20],
    }


def render_section(data: dict[str, Any]) -> list[str]:
    """The section of docs/benchmarks.md (it comes first)."""
    lines = [
        "## Ask, don't guess: the guided search with a simulated oracle",
        "",
        f"`python -m benchmarks --only ask{' --quick' if data.get('quick') else ''}` ({data['date']}, "
        f"{data['seconds']} s; machine below). Each case is recorded with its fault and as its fault-free twin "
        "(same seed, data and task); the oracle answers from the twin: a step's output equal to the twin's same "
        "step (name and occurrence) is correct, a different one wrong at or after the injected step. *Found*: the "
        "search ends **certain** on the injected step. Cases counted: the injected step lies in the failure's "
        "backward slice. Noisy: 10 % of answers flipped at random (3 draws per case); *recheck* asks the answers "
        "that prove a root a second time (a third on a tie).",
        "",
    ]
    lines += [
        "| suite | cases on the graph | truthful: found (prior) | questions median / p90 (prior) | "
        "top-down median / p90 | linear median / p90 | noisy: found (prior + recheck) | "
        "three-valued: found, median / p90 (prior) | three-valued noisy: found (prior + recheck) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for suite, s in data["suites"].items():
        if "error" in s or not s.get("on_graph"):
            continue
        b = s["all"]
        lines.append(
            f"| {suite} | {b['cases']} | {b['prior']['found_pct']} % | {b['prior']['median']} / {b['prior']['p90']} | "
            f"{b['top-down']['median']} / {b['top-down']['p90']} | {b['linear']['median']} / {b['linear']['p90']} | "
            f"{b['noisy_recheck_found_pct']} % | {_three_cell(b)} |"
        )
    lines += [
        "",
        "*Three-valued*: the same truth told as Naish's answers (`Answer.admissible`): the injected step and a "
        "step enclosing it *erroneous*, every other wrong step *inadmissible*; its noisy form replaces 10 % of "
        "the answers with one of the other two. The two oracles are never pooled.",
        "",
        "Why the truthful oracle misses some roots: the simulated oracle calls *wrong* every step after the "
        "root whose output differs from the twin's, and a step whose recorded inputs do not carry the wrong "
        "value (a tool that observes a world the agent changed, an edge the recording missed) then looks like "
        "a root: wrong, with all its recorded inputs correct. The `prior` strategy asks the ranking's "
        "suspects first and proves the true root before it meets such a step more often than the "
        "structure-only strategies do; `top-down` and `linear` coincide on these runs (the deepest wrong "
        "step's latest input is the latest open step).",
        "",
    ]
    for suite, s in data["suites"].items():
        if "error" in s:
            lines += [f"### {suite}", "", f"not measured: {s['error']}", ""]
            continue
        if not s["on_graph"]:
            lines += [f"### {suite}", "", f"{s['recorded']} cases; none measurable ({', '.join(s['skipped'])}).", ""]
            continue
        lines += [
            f"### {suite}",
            "",
            f"{s['recorded']} cases recorded, {s['with_control']} with a passing twin, {s['on_graph']} with the root "
            f"on the recorded graph; median run {s['steps_median']} steps.",
            "",
            "| runs | cases | strategy | root found (truthful) | questions median | p90 |",
            "|---|---|---|---|---|---|",
        ]
        for band in ("all", "10-60 steps"):
            b = s[band]
            for strat in STRATEGIES:
                x = b[strat]
                lines.append(
                    f"| {band} | {b['cases']} | {strat} | {x['found_pct']} % | {x['median']} | {x['p90']} |"
                )
        lines += [
            "",
            "| runs | noisy (10 % flipped): found, prior | found, prior + recheck | recheck questions median / p90 |",
            "|---|---|---|---|",
        ]
        for band in ("all", "10-60 steps"):
            b = s[band]
            lines.append(
                f"| {band} | {b['noisy_found_pct']} % | {b['noisy_recheck_found_pct']} % | "
                f"{b['noisy_recheck_median']} / {b['noisy_recheck_p90']} |"
            )
        lines.append("")
    j = data.get("judge")
    if j:
        lines += [
            f"**The model as oracle** (plumbing and cost): `trajdebug.judge.JudgeOracle` against "
            f"`trajdebug.testing.FakeModelServer` answering by step name from the twin, on {j['runs']} runs: "
            f"{j['questions']} questions, {j['tokens_per_question']} tokens per question (prompt and answer), "
            f"root found {j['found_pct']} %.",
            "",
        ]
    lines += [
        "Goals (issue 22): truthful root found 100 % of the cases on the graph; questions median ≤ 3 and "
        "p90 ≤ 6 on 10–60-step runs; noisy root found ≥ 85 %. The blind suites' generators write their fault-free "
        "twin beside each case as `control.*`; their failed run is analysed alone (the prior from the ranking "
        "without references).",
        "",
    ]
    return lines


def guided_lines(label: str, summary: dict[str, Any]) -> list[str]:
    """One line per oracle (two-valued, then three-valued), so the two are never mistaken for each other."""
    out = []
    for name, b in (("two-valued", summary), ("three-valued", summary.get("three_valued"))):
        if not b:
            continue
        p = b["prior"]
        out.append(
            f"{label:8} {name:12} found {p['found_pct']}% (of {b['cases']} on the graph), median {p['median']}, "
            f"p90 {p['p90']}; 10 % flipped: {b['noisy_found_pct']}%, recheck: {b['noisy_recheck_found_pct']}% "
            f"(median {b['noisy_recheck_median']}, p90 {b['noisy_recheck_p90']})"
        )
    return out


def _main() -> None:
    import argparse
    import json

    p = argparse.ArgumentParser(prog="python -m benchmarks.ask", description="The guided search on generated suites (totals only).")
    p.add_argument("suites", nargs="+")
    p.add_argument("--workdir", type=Path, required=True, help="where the suites are (generated there when missing)")
    p.add_argument("--json", action="store_true", help="one JSON summary per suite instead of lines")
    a = p.parse_args()
    for name in a.suites:
        s = _suite(run_heldout(name, a.workdir, lambda _msg: None))
        if a.json:
            print(json.dumps({"suite": name, **s}), flush=True)
        else:
            for line in guided_lines(name, s["all"]):
                print(line, flush=True)


if __name__ == "__main__":
    _main()


__all__ = ["HELDOUT", "AskCase", "control_oracle", "control_oracle3", "guided_lines", "heldout_case", "render_section", "run_ask", "run_case", "run_heldout", "summarize"]
