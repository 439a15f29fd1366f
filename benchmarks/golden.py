"""Golden rankings: the analysis's top candidates on every benchmark case, to prove a change kept them.

``python -m benchmarks.golden OUT.json`` writes, for the blind suites (both settings), the fault-injection
suite (2 seeds) and the tau-bench runs, each case's top-5 step names with their ranks;
``python -m benchmarks.golden --compare A.json B.json`` lists the cases whose ranking changed.
``--full`` also keeps every analysis's whole ``trajdebug analyze --json`` document (scores, reasons,
paths, failures, error chains; ids replaced by their order of appearance, elapsed time left out), so a
speed change can prove it kept more than the top five.  A speed
change to the analysis must leave the file unchanged (or explain each difference; the fault suite's `race`
cases record parallel threads, so their rankings may differ from one recording to the next).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pickle
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def collect(workdir: Path, *, full: bool = False) -> dict[str, Any]:
    """Every case's top-5 (step name and occurrence), keyed by suite and case.

    With ``full``, also every analysis's whole document (`_full_documents`), under ``full/<n>``.
    """
    if full:
        with _full_documents() as docs:
            out = collect(workdir)
        out.update({f"full/{i:04d}": d for i, d in enumerate(docs)})
        return out
    from benchmarks.blind import SETTINGS, _cases, _source, generate
    from benchmarks.faults import Case, distractors_for
    from benchmarks.quality import analyse, cases
    from benchmarks.tau import run_tau
    from benchmarks.workflows import WORKFLOWS
    from trajdebug.api import analyze_source

    out: dict[str, Any] = {}
    for suite in ("suite_dev", "suite_a", "suite_b"):
        root = generate(suite, workdir, progress=lambda _: None)
        for truth in _cases(root):
            for setting in SETTINGS:
                src = _source(root / truth["case_id"], "failed" if setting == "alone" else "with_refs")
                # The hand ranking: the learned model (the default since round 42) is trained on these cases.
                a = analyze_source(src, truth["failed_run_id"], top=5, model=None).analyses[0]
                out[f"{suite}/{truth['case_id']}/{setting}"] = _names(a.run, [c.step_id for c in a.root_causes])
    # The fault suite's runs are recorded once per workdir and reused: its parallel workflows record
    # different runs each time, so comparing two analyses needs the same runs.
    frozen = workdir / "fault-runs.pickle"
    if frozen.exists():
        recorded = pickle.loads(frozen.read_bytes())
    else:
        recorded = []
        for case in cases(2):
            res = WORKFLOWS[case.workflow].run(Case(case.workflow, case.fault, case.seed, distractors_for(case.seed)))
            recorded.append((case, res.run, list(res.previous)))
        frozen.write_bytes(pickle.dumps(recorded))
    for case, recorded_run, previous in recorded:
        run, _, loc = analyse(recorded_run, previous=previous)
        steps = {s.step_id: s for r in previous for s in r.steps}
        steps.update(run.step_map())
        out[f"fault/{case.workflow}/{case.fault}/{case.seed}"] = [steps[c.step_id].name for c in loc.candidates[:5]]
    for c in run_tau().cases:
        out[f"tau/{c.task_id}"] = c.rankings["trajdebug"][:5]
    return out


_HEX_ID = re.compile(r"\b[0-9a-f]{12,32}\b|(?<=#)[0-9a-f]{6}\b|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


@contextlib.contextmanager
def _full_documents() -> Iterator[list[Any]]:
    """Record the document of every analysis run meanwhile, with recorded ids made stable.

    Recorded ids are random, so each id is replaced by its order of first
    appearance in the document; the elapsed time is dropped.
    """
    from trajdebug import api as pipeline
    from trajdebug.analysis import _pipeline

    docs: list[Any] = []
    real = _pipeline.analyze

    def recording(*args: Any, **kwargs: Any) -> Any:
        a = real(*args, **kwargs)
        d = a.to_dict()
        d["stats"].pop("seconds", None)
        seen: dict[str, str] = {}
        text = _HEX_ID.sub(lambda m: seen.setdefault(m.group(0), f"<id{len(seen)}>"), json.dumps(d, sort_keys=True))
        docs.append(json.loads(text))
        return a

    _pipeline.analyze = recording
    pipeline.analyze = recording  # type: ignore[attr-defined]
    try:
        yield docs
    finally:
        _pipeline.analyze = real
        pipeline.analyze = real  # type: ignore[attr-defined]


def _names(run: Any, ids: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    occ: dict[str, int] = {}
    for s in run.steps:
        seen[s.name] = seen.get(s.name, 0) + 1
        occ[s.step_id] = seen[s.name]
    by_id = {s.step_id: s for s in run.steps}
    return [f"{by_id[i].name}#{occ[i]}" for i in ids if i in by_id]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.golden")
    p.add_argument("out", nargs="?")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"))
    p.add_argument(
        "--workdir", type=Path, help="where the suites are generated and the fault runs recorded (reused if there)"
    )
    p.add_argument("--full", action="store_true", help="also keep every analysis's whole document")
    a = p.parse_args(argv)
    if a.compare:
        x, y = (json.loads(Path(f).read_text()) for f in a.compare)
        diff = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
        for k in diff:
            print(f"{k}: {x.get(k)} -> {y.get(k)}")
        print(f"{len(diff)} of {len(set(x) | set(y))} cases changed")
        return 1 if diff else 0
    data = collect(a.workdir or Path(tempfile.mkdtemp(prefix="trajdebug-golden-")), full=a.full)
    Path(a.out or "golden.json").write_text(json.dumps(data, indent=0, sort_keys=True))
    print(f"{len(data)} cases written", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
