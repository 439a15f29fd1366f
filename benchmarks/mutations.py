"""The mutation harness: the fault suite's planted faults, re-recorded through other routes.

`benchmarks.quality` plants each fault kind into a step of a workflow's run and
records it with the SDK.  A model trained on those runs alone could learn the
SDK's shape instead of the fault; here each faulty run also travels the other
recording routes a user's runs arrive by, and is analyzed as read back:

- ``jsonl``: written by the recorder's file format (`trajdebug.core.jsonl.write_jsonl`) and read back;
- ``otlp``: exported as OTLP/JSON (`trajdebug.sources.formats.export`) and imported (`trajdebug.sources.formats.otlp`);
- ``transcript``: one message per step (speaker, output text, an error as text), imported as a
  multi-agent transcript: no recorded edges, kinds or error objects survive, only turns and text.

The truth step keeps its id through jsonl and OTLP; in a transcript it is the
step of its message.  ``python -m benchmarks.mutations --corpus FILE`` also runs
the "no tells" check (issue 23): a model trained on planted faults alone (every
route) is scored on the written sources of a corpus (the development blind
suites, tau, Who&When), beside the hand ranking and chance.  Held-out suites
are never read.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks import corpus as corpus_mod
from benchmarks.corpus import ALL, Case, _fill
from trajdebug.analysis._content import text_of
from trajdebug.analysis._pipeline import analyze
from trajdebug.core.model import Run


ROUTES = ("jsonl", "otlp", "transcript")
"""The routes a planted fault is re-recorded through (the SDK route is the fault suite itself)."""


def _jsonl(run: Run, previous: Sequence[Run], path: Path) -> tuple[Run, list[Run]]:
    from trajdebug.core.jsonl import write_jsonl
    from trajdebug.sources.load import read_source

    write_jsonl([*previous, run], path)
    return _split(read_source(path).runs, run.run_id)


def _otlp(run: Run, previous: Sequence[Run], path: Path) -> tuple[Run, list[Run]]:
    from trajdebug.sources.formats.export import write_otlp
    from trajdebug.sources.formats.otlp import read_otlp

    write_otlp([*previous, run], path)
    return _split(read_otlp(path).runs, run.run_id)


def _split(runs: Sequence[Run], run_id: str) -> tuple[Run, list[Run]]:
    """The failed run (by id) and the others, in order."""
    [failed] = [r for r in runs if r.run_id == run_id]
    return failed, [r for r in runs if r.run_id != run_id]


def transcript_of(run: Run) -> dict[str, Any]:
    """The run as a transcript: one message per step, the speaker its agent (else its name), an error as text."""
    history = []
    for s in run.steps:
        text = text_of(s.output, 20_000)
        if s.error is not None:
            text = f"{text}\n{s.error.type}: {s.error.message}".strip()
        history.append({"role": "assistant", "name": s.agent or s.name, "content": text})
    return {"history": history, "outcome": run.outcome, "failure_reason": run.failure_reason}


def _transcript(run: Run, path: Path) -> Run:
    from trajdebug.sources.formats import import_path

    path.write_text(json.dumps(transcript_of(run)))
    [out] = import_path(path, "transcript").runs
    return out


def mutants(seeds: int = 3, routes: Sequence[str] = ROUTES, workdir: Path | None = None) -> Iterator[Case]:
    """Every fault-suite case (workflow x fault x seed) re-recorded through each route, as a labelled case."""
    from benchmarks.quality import cases
    from benchmarks.workflows import WORKFLOWS

    tmp = workdir or Path(tempfile.mkdtemp(prefix="trajdebug-mutations-"))
    for c in cases(seeds):
        res = WORKFLOWS[c.workflow].run(c)
        sid = res.fault.get("step_id")
        index = next((i for i, s in enumerate(res.run.steps) if s.step_id == sid), None)
        for route in routes:
            where = tmp / f"{c.case_id.replace('/', '_')}.{route}"
            if route == "transcript":
                if index is None:  # the planted step is in an earlier turn: a transcript holds one run
                    continue
                run = _transcript(res.run, where.with_suffix(".json"))
                truth = [(None, s.step_id) for s in run.steps if s.source_index == index]
                # The hand ranking: the learned model (the default since round 42) is trained on these cases.
                a = analyze(run, top=ALL, model=None)
            else:
                run, previous = (_jsonl if route == "jsonl" else _otlp)(res.run, res.previous, where)
                own = {s.step_id for s in run.steps}
                home = None if sid in own else next((r.run_id for r in previous if sid in r.step_map()), None)
                truth = [(home, str(sid))]
                # The hand ranking: the learned model (the default since round 42) is trained on these cases.
                a = analyze(run, top=ALL, previous=previous, model=None)
            yield _fill(Case("mutations", route, str(c.fault), c.workflow, f"{c.case_id}/{route}", truth), a)


def no_tells(planted: Sequence[Case], written: Sequence[Case]) -> dict[str, dict[str, float]]:
    """Trained on planted faults alone, scored on each written source (`benchmarks.learning.tells`)."""
    from benchmarks import learning as L

    return L.tells([*planted, *written], sources=frozenset({c.suite for c in planted}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.mutations", description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, help="write the mutated cases (JSON lines; read when present)")
    ap.add_argument("--corpus", type=Path, help="a training corpus (benchmarks.train --corpus): run the no-tells check")
    args = ap.parse_args(argv)
    if args.out is not None and args.out.exists():
        planted = corpus_mod.load(args.out)
    else:
        planted = list(mutants(args.seeds))
        if args.out is not None:
            corpus_mod.save(planted, args.out)
    counts: dict[str, int] = {}
    for c in planted:
        counts[c.route] = counts.get(c.route, 0) + 1
    print(f"mutations: {len(planted)} cases {counts}")
    if args.corpus is not None:
        base = corpus_mod.load(args.corpus)
        planted = [*planted, *(c for c in base if c.suite == "quality")]
        written = [c for c in base if c.suite != "quality"]
        print(json.dumps(no_tells(planted, written), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
