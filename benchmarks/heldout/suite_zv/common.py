"""Truth records and the generator's checks."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import trajdebug

FORBIDDEN = re.compile(r"(?<![A-Za-z0-9])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    case: str
    fault_kind: str
    main_input: str
    root: tuple[str, int]
    failure: tuple[str, int]
    description: str


def load(path: Path, route: str):
    if route == "otlp":
        from trajdebug.sources.formats import import_path

        res = import_path(path, "otlp")
        return list(res.runs)
    return list(trajdebug.load_runs(str(path)))


def merge_files(route: str, parts: list[Path], out: Path) -> None:
    if route == "otlp":
        env = {"resourceSpans": []}
        for p in parts:
            env["resourceSpans"].extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps(env))
    else:
        out.write_text("".join(p.read_text() for p in parts))


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index or 0))


def find(run, name: str, occurrence: int):
    same = [s for s in ordered(run) if s.name == name]
    if len(same) < occurrence:
        raise AssertionError(f"step {name!r} #{occurrence} not in run (found {len(same)})")
    return same[occurrence - 1]


def check_words(path: Path) -> None:
    m = FORBIDDEN.search(path.read_text())
    if m:
        s = path.read_text()
        raise AssertionError(f"forbidden word in {path}: {s[max(0, m.start()-60):m.end()+60]!r}")


def check_case(case: Case, agent: str, route: str, case_dir: Path, ext: str) -> dict:
    failed = load(case_dir / f"failed.{ext}", route)
    control = load(case_dir / f"control.{ext}", route)
    refs = load(case_dir / f"with_refs.{ext}", route)
    assert len(failed) == 1 and failed[0].outcome == "failure", (case.case, [r.outcome for r in failed])
    assert len(control) == 1 and control[0].outcome == "success", (case.case, [r.outcome for r in control])
    assert len(refs) == 5, (case.case, len(refs))
    outcomes = sorted(r.outcome for r in refs)
    assert outcomes == ["failure"] + ["success"] * 4, (case.case, outcomes)
    run = failed[0]
    root = find(run, *case.root)
    fail = find(run, *case.failure)
    assert fail.start_ns > root.start_ns, (case.case, "failure does not start after root")
    steps = ordered(run)
    hops = steps.index(fail) - steps.index(root)
    for name in ("failed", "control", "with_refs"):
        check_words(case_dir / f"{name}.{ext}")
    truth = {
        "case": case.case,
        "agent": agent,
        "route": route,
        "fault_kind": case.fault_kind,
        "root": {"name": case.root[0], "occurrence": case.root[1], "kind": root.kind},
        "failure": {"name": case.failure[0], "occurrence": case.failure[1]},
        "hops": hops,
        "description": case.description,
    }
    check_words_text(case.description)
    return truth


def check_words_text(text: str) -> None:
    m = FORBIDDEN.search(text)
    assert not m, text[max(0, m.start()-60):m.end()+60]
