"""The side file of a foreign source: answers kept beside a trace trajdebug never rewrites.

An OTLP JSON export, a message log or a transcript is read-only to trajdebug;
the answers given to its runs (``answer`` records, ``docs/format.md``) are
appended to ``SOURCE.answers.jsonl`` beside it (beside the folder, for a folder
of traces).  The file is trajdebug JSONL holding only ``answer`` and ``score`` records, and
`trajdebug.sources.load.read_source` applies it whenever it reads the source.  A
store or a trajdebug JSONL file keeps its answers among the run's own records
(`trajdebug.answers`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path

from trajdebug.core.jsonl import FormatError, ReadResult, read_jsonl, read_lines
from trajdebug.core.model import Answer, Run
from trajdebug.core.schema import latest_answers


SIDE_SUFFIX = ".answers.jsonl"
"""What the side file of a foreign source adds to its name."""


def side_file(source: str | Path) -> Path:
    """Where the answers to the runs of a foreign source are kept: ``SOURCE.answers.jsonl`` beside it."""
    path = Path(source)
    return path.with_name(path.name + SIDE_SUFFIX)


def read_answers(path: str | Path) -> tuple[dict[str, list[Answer]], list[FormatError]]:
    """The ``answer`` records of a trajdebug JSONL file (a side file, or the report's download), by
    run id, with what could not be read."""
    result = read_jsonl(path)
    return {r.run_id: list(r.answers) for r in result.runs if r.answers}, result.problems


def parse_answers(text: str, source: str = "answers") -> list[Answer]:
    """The answers in JSON lines of ``answer`` records given as text (a POST body, a download)."""
    result = read_lines(text.splitlines(), source)
    return [a for r in result.runs for a in r.answers]


def with_answers(runs: Iterable[Run], answers: dict[str, list[Answer]]) -> list[Run]:
    """The runs with these answers added to theirs (the latest per step and answerer wins)."""
    out = []
    for run in runs:
        more = answers.get(run.run_id)
        out.append(dataclasses.replace(run, answers=latest_answers([*run.answers, *more])) if more else run)
    return out


def with_side_answers(source: str | Path, result: ReadResult) -> ReadResult:
    """A foreign source's runs with the answers and scores (`trajdebug.scores`) of its side file, when there
    is one."""
    side = side_file(source)
    if not side.is_file():
        return result
    try:
        read = read_jsonl(side)
        answers = {r.run_id: list(r.answers) for r in read.runs if r.answers}
        scores = {r.run_id: r.scores for r in read.runs if r.scores}
        problems = read.problems
    except (OSError, FormatError) as exc:
        answers, scores, problems = {}, {}, [FormatError(f"{side}: answers not read ({exc})")]
    runs = [
        dataclasses.replace(r, scores=(*r.scores, *scores[r.run_id])) if r.run_id in scores else r
        for r in with_answers(result.runs, answers)
    ]
    return ReadResult(runs, [*result.problems, *problems])


__all__ = ["SIDE_SUFFIX", "parse_answers", "read_answers", "side_file", "with_answers", "with_side_answers"]
