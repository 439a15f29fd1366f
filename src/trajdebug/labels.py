"""Root-cause labels on a user's own runs: store them, measure the analysis on them, fit a model to them.

A label says "the root cause of this failed run is that step".  `label`
appends one record to ``SOURCE.labels.jsonl`` beside the source (a sidecar,
so any source can be labelled, foreign traces included, and the source
itself is never rewritten); the latest label of a run wins, as the latest
``mark`` does.  A record::

    {"t": "label", "run_id": "...", "step_id": "...", "time_ns": 1733100000000000000}

`evaluate` reports how ``analyze`` does on the labelled runs (top-1, top-3,
and with a learned model its calibration); `fit` fits a model on them with
the shipped model as the prior (`trajdebug.training.fit`, a warm start), so
a handful of labels of one agent adjusts the ranking to it without
forgetting the rest.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trajdebug.answers import forget_answers
from trajdebug.core import redaction
from trajdebug.core.model import Answer, Run
from trajdebug.core.schema import redact_record
from trajdebug.sources.load import SourceError, load_runs, select_run


if TYPE_CHECKING:
    from trajdebug.analysis.learned import Model

# The analysis (`analyze_source`, the learned model) is imported by the functions that analyze, not here:
# `import` and `export` read the labels sidecar of every source they copy, and loading the analysis for
# that cost about 0.08 s of CPU per command (0.3 s before its bytecode is cached), some 200 modules.

ALL = 100_000
"""``top`` that keeps every ranked step."""


def sidecar(source: str | Path) -> Path:
    """Where a source's labels live: ``SOURCE.labels.jsonl`` beside it."""
    p = Path(source)
    return p.with_name(p.name + ".labels.jsonl")


def _step(run: Run, step: str) -> str:
    """The step named by ``step``: its id, a unique id prefix, a unique step name, or the short id every
    command prints (``#000007``, ``remember_ringer#000007``: the id's last characters, 4 or more), which is
    what a person copies from `analyze`, `show` or the answers' own label line."""
    ids = [s.step_id for s in run.steps]
    if step in ids:
        return step
    name, _, short = step.rpartition("#") if "#" in step else ("", "", "")
    ending = short or step
    # Every reading of the text at once: a bare ending that is also another step's id prefix (or name) names
    # two steps, and taking one of them silently would label the wrong root.
    readings = (
        [i for i in ids if i.startswith(step)]
        + [s.step_id for s in run.steps if s.name == step]
        + [s.step_id for s in run.steps if len(ending) >= 4 and s.step_id.endswith(ending) and name in ("", s.name)]
    )
    hits = list(dict.fromkeys(readings))
    if len(hits) == 1:
        return hits[0]
    what = "matches several steps" if hits else "matches no step"
    raise SourceError(f"run {run.run_id}: {step!r} {what} (give a step id, the short id shown as #000007, or a unique name)")


def label(source: str | Path, run_id: str, step: str, *, by: str = "person") -> tuple[str, str]:
    """Record that ``step`` is the root cause of run ``run_id`` in ``source``; returns ``(run id, step id)``.

    ``by`` says where the label came from (``person``; ``answers`` when the guided
    search's answers proved it), so taking the answers back can take it back too.

    Raises:
        SourceError: no such source, run or step (or the step is ambiguous).
    """
    runs = load_runs(source)
    [run] = select_run(source, runs, run_id)
    sid = _step(run, step)
    latest = _records(source).get(run.run_id)
    # The same label again (an --ask session re-run after it converged) is already the run's label: the
    # side file keeps one line per change, not one per session.
    if latest is None or latest.get("step_id") != sid or latest.get("by") != by:
        _append(source, {"t": "label", "run_id": run.run_id, "step_id": sid, "by": by, "time_ns": time.time_ns()})
    return run.run_id, sid


def prove(source: str | Path, run_id: str, root: str | None) -> str | None:
    """Make the run's label the one its answers prove now: ``root`` (a step id), or none when they prove none.

    A label the answers wrote (``by="answers"``) says what they proved when it was written; answers given
    since, taken back, or read by a stricter search may prove another root or none.  So the run's earlier
    answers labels are dropped from the side file (a person's are kept) and ``root``'s written in their
    place: a proven root replaces them, and with none the label is withdrawn (a person's earlier label, if
    any, is the run's label again).  Rewritten whole (a new file moved into place), so a reader never sees
    two labels of the answers for one run, the wrong one first.  ``run_id`` is the run's full id.

    Returns ``"labelled"``, ``"withdrawn"`` or None (nothing changed).
    """
    latest = _records(source).get(run_id)
    mine = latest is not None and latest.get("by") == "answers"
    if root is None and not (mine and latest and latest.get("step_id")):
        return None
    if root is not None and mine and latest and latest.get("step_id") == root:
        return None
    _drop(source, run_id, "answers")
    if root is None:
        return "withdrawn"
    _append(source, {"t": "label", "run_id": run_id, "step_id": root, "by": "answers", "time_ns": time.time_ns()})
    return "labelled"


def _drop(source: str | Path, run_id: str, by: str) -> None:
    """Rewrite the side file without run ``run_id``'s label records by ``by`` (other lines kept as they are)."""
    import os

    path = sidecar(source)
    try:
        lines = path.read_bytes().splitlines(keepends=True)
    except FileNotFoundError:
        return
    kept = []
    for raw in lines:
        try:
            rec = json.loads(raw.decode("utf-8"))
        except ValueError:
            rec = None
        if isinstance(rec, dict) and rec.get("t") == "label" and rec.get("run_id") == run_id and rec.get("by") == by:
            continue
        kept.append(raw if raw.endswith(b"\n") else raw + b"\n")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(b"".join(kept))
    os.replace(tmp, path)


def _append(source: str | Path, rec: dict[str, Any]) -> None:
    with sidecar(source).open("a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")


def _records(source: str | Path, problems: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """The latest label record of each run (a record with no step takes the label back).

    A line that does not decode or is not a label record is skipped, and so is a file that cannot be read
    (a directory, no permission); each is noted in ``problems`` (when given) with the file and line: a
    damaged sidecar loses its damaged lines, never the labels around them nor the command that reads it.
    """
    path = sidecar(source)
    out: dict[str, dict[str, Any]] = {}
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return out
    except OSError as exc:
        if problems is not None:
            problems.append(f"{path}: labels not read ({exc.strerror or exc})")
        return out
    for n, raw in enumerate(data.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw.decode("utf-8"))
        except ValueError:  # not UTF-8 (UnicodeDecodeError) or not JSON
            rec = None
        if isinstance(rec, dict) and rec.get("t") == "label" and isinstance(rec.get("run_id"), str):
            out[rec["run_id"]] = rec
        elif problems is not None:
            problems.append(f"{path}:{n}: not a label record, skipped")
    return out


def labels(source: str | Path) -> dict[str, str]:
    """Each labelled run's root step (the latest label of a run wins); empty without a sidecar."""
    return {rid: str(rec["step_id"]) for rid, rec in _records(source).items() if rec.get("step_id")}


@dataclass(frozen=True, slots=True)
class Carried:
    """What `carry` did with the labels of the runs an import or export wrote."""

    carried: int = 0
    kept: int = 0
    """Runs whose label the destination already had, newer than the source's, and kept."""
    problems: tuple[str, ...] = ()
    """Lines of either sidecar that were skipped (file and line), or a sidecar that could not be read."""


def carry(source: str | Path, dest: str | Path, roots: Mapping[str, str], *, anew: bool = False) -> Carried:
    """Copy the labels of runs written from ``source`` into ``dest`` to ``dest``'s sidecar.

    ``roots``: each copied run's labelled root, as `labels` gave it for ``source`` (the ids as read), kept
    only when the written run still holds that step.  A label lives beside its source, so without this a
    run imported into another file or store (an OTLP export read back, a JSONL file moved into a store)
    arrived unlabelled and ``eval``/``fit`` on the destination saw none.

    The record is redacted as the runs are written (`redact_record`, the process policy), so it names the
    run and step by the ids the destination holds, and a secret in an id is never written in clear.  It
    keeps its own time: a run the destination labels the same is left alone, and one it labels otherwise
    keeps the destination's label when that is newer (a correction made there survives a re-run import).
    ``anew``: the destination's runs file was written anew (a JSONL or OTLP file, not a store), so its
    sidecar is too: the labels of the runs it held before described runs that are gone.

    Raises:
        OSError: the destination's sidecar cannot be written.
    """
    if Path(source).resolve() == Path(dest).resolve():
        return Carried()
    problems: list[str] = []
    recs = _records(source, problems)
    have = {} if anew else _records(dest, problems)
    red = redaction.redactor()
    out, kept = [], 0
    for rid, sid in roots.items():
        src = recs.get(rid)
        if src is None:
            continue
        when = src.get("time_ns")
        rec: dict[str, Any] = {"t": "label", "run_id": rid, "step_id": sid, "by": str(src.get("by", "person")),
                               "time_ns": when if type(when) is int else time.time_ns()}
        rec = redact_record(red, rec) if red is not None else rec
        old = have.get(rec["run_id"])
        if old is not None and old.get("step_id") == rec["step_id"]:
            continue
        if old is not None and _time(old) >= rec["time_ns"]:
            kept += 1
            continue
        out.append(rec)
    path = sidecar(dest)
    if anew and (out or path.exists()):
        path.write_text("".join(json.dumps(r) + "\n" for r in out), encoding="utf-8")
    else:
        for r in out:
            _append(dest, r)
    return Carried(len(out), kept, tuple(problems))


def _time(rec: Mapping[str, Any]) -> int:
    t = rec.get("time_ns")
    return t if type(t) is int else 0


def forget(source: str | Path, run_id: str, steps: Sequence[str] = ()) -> tuple[list[Answer], bool]:
    """Take back a run's stored answers (all, or those about ``steps``) and the label they proved.

    Returns the answers withdrawn and whether the run's label was taken back
    (only a label the answers proved, ``by="answers"``; a person's label stays).
    """
    gone = forget_answers(source, run_id, steps=steps)
    if not gone:
        return gone, False
    rid = _resolved(source, run_id)
    rec = _records(source).get(rid)
    if rec is None or not rec.get("step_id") or rec.get("by") != "answers":
        return gone, False
    _append(source, {"t": "label", "run_id": rid, "step_id": None, "by": "answers", "time_ns": time.time_ns()})
    return gone, True


def _resolved(source: str | Path, run_id: str) -> str:
    from trajdebug.answers import AnswerLog

    return AnswerLog(source, run_id).run_id


@dataclass(frozen=True, slots=True)
class LabelResult:
    """How the analysis ranked one labelled run's root."""

    run_id: str
    step_id: str
    rank: int | None
    """1-based rank of the labelled step (None: not ranked)."""
    confidence: float | None = None
    """The learned model's confidence in its best candidate (None: no model)."""
    step_name: str | None = None
    """The labelled step's name (None: the step is not in the run as loaded)."""


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The analysis on a source's labelled runs."""

    results: tuple[LabelResult, ...]
    model: str | None = None
    missing: tuple[str, ...] = field(default=())
    """Labelled runs no longer in the source."""
    fitted: int = 0
    """How many of the measured runs the model was fit on (`fit` records them): on those its score says how
    well it learned them, not how it ranks runs it never saw."""
    source_ids: tuple[str, ...] = field(default=(), compare=False, repr=False)
    """Every run id of the source, to show a run id by its prefix unique among them (`trajdebug.core.shortids`)."""

    def top(self, k: int) -> float | None:
        """Share of labelled runs whose root is in the first ``k`` (None: no labelled run)."""
        rs = self.results
        return sum(1 for r in rs if r.rank is not None and r.rank <= k) / len(rs) if rs else None

    def calibration_error(self) -> float | None:
        """Mean |confidence - right| of the best candidate (a Brier-like gap; None without a model)."""
        rs = [r for r in self.results if r.confidence is not None]
        if not rs:
            return None
        return sum(abs(r.confidence - (r.rank == 1)) for r in rs if r.confidence is not None) / len(rs)

    def to_dict(self, hand: Evaluation | None = None) -> dict[str, Any]:
        """JSON data (``trajdebug eval --json``).  ``rank`` is the measured ranking's (the model's, or the hand
        ranking's without one); each run also names both, ``model_rank`` (None without a model) and
        ``hand_rank`` (from ``hand``, the hand ranking measured on the same runs; this one when it has no
        model), as the text's "hand ranking N, model M" does (nu26 F12: only the model's rank was given)."""
        hand = self if self.model is None else hand
        by_hand = {} if hand is None else {r.run_id: r.rank for r in hand.results}
        return {
            "labelled": len(self.results),
            "model": self.model,
            "top1": self.top(1),
            "top3": self.top(3),
            **({} if hand is None else {"hand_top1": hand.top(1), "hand_top3": hand.top(3)}),
            "calibration_error": self.calibration_error(),
            "missing": list(self.missing),
            "fitted_on": self.fitted,
            "runs": [
                {"run_id": r.run_id, "step_id": r.step_id, "step_name": r.step_name, "rank": r.rank,
                 "model_rank": None if self.model is None else r.rank, "hand_rank": by_hand.get(r.run_id),
                 "confidence": r.confidence}
                for r in self.results
            ],
        }


def evaluate(
    source: str | Path, model: str | Path | Model | None = None, refs: Sequence[str | Path] = ()
) -> Evaluation:
    """Analyze every labelled run of ``source`` (with ``model``, if any) and place its labelled root; ``refs``:
    more files whose passing runs the analysis compares with, as ``analyze --refs`` takes them (without them, a
    passing run had to be copied into the labelled source to measure the ranking with references: nu24, F8)."""
    from trajdebug.analysis.learned import Model, load_model
    from trajdebug.api import analyze_source

    runs = load_runs(source)
    have = {r.run_id for r in runs}
    marked = labels(source)
    out = []
    for run_id, sid in marked.items():
        if run_id not in have:
            continue
        [a] = analyze_source(source, run_id, top=ALL, runs=runs, model=model, guided=False, refs=refs).analyses
        ranking = list(a.localization.ranking)
        conf = a.root_causes[0].confidence if a.root_causes else None
        name = next((s.name for s in a.run.steps if s.step_id == sid), None)
        out.append(LabelResult(run_id, sid, ranking.index(sid) + 1 if sid in ranking else None, conf, name))
    name = None if model is None else str(model) if not isinstance(model, Model) else "model"
    loaded = load_model(model) if model is not None else None
    seen = set(_fitted_runs(loaded.meta)) if loaded is not None else set()
    fitted = sum(1 for r in out if r.run_id in seen)
    return Evaluation(tuple(out), name, tuple(r for r in marked if r not in have), fitted, tuple(have))


def cases(source: str | Path) -> list[tuple[list[dict[str, float]], list[int]]]:
    """The labelled runs as training cases: each ranked step's features, 1 for the labelled step."""
    from trajdebug.analysis.features import features
    from trajdebug.api import analyze_source

    runs = load_runs(source)
    out = []
    for run_id, sid in labels(source).items():
        if run_id not in {r.run_id for r in runs}:
            continue
        # The hand ranking's order: the model's features (and its prior) are read off it, not off a model's.
        [a] = analyze_source(source, run_id, top=ALL, runs=runs, guided=False, model=None).analyses
        feats = features(a)
        keys = list(feats)
        ys = [int(k == (None, sid)) for k in keys]
        if any(ys):
            out.append(([feats[k] for k in keys], ys))
    return out


def fit(source: str | Path, prior: str | Path | Model | None = "default", *, seed: int = 0) -> Model:
    """A model fitted on ``source``'s labelled runs, boosting on from ``prior`` (needs the ``train`` extra).

    Raises:
        SourceError: no labelled run of the source is ranked.
    """
    from trajdebug.analysis.learned import load_model
    from trajdebug.training import fit as fit_trees

    data = cases(source)
    if not data:
        raise SourceError(f"{source}: no labelled run whose root the analysis ranks (label some with `trajdebug label`)")
    model = fit_trees(data, seed=seed, prior=load_model(prior))
    # The runs it was fit on, so that `evaluate` can say when it is measured on them.  A model boosted on from
    # a prior keeps the prior's trees, and with them what they learned: the prior's runs are counted too.
    have = {r.run_id for r in load_runs(source)}
    learned = set(_fitted_runs(model.meta))  # the prior's meta, kept by the warm start (`training.fit`)
    runs = sorted(learned | {r for r in labels(source) if r in have})
    meta = model.meta if isinstance(model.meta, Mapping) else {}
    # ``cases``: the labelled runs of this source it learned from (those whose root the analysis ranks), the one
    # count `trajdebug fit` reports, in text and JSON.
    return replace(model, meta={**meta, "fitted_on": {"source": str(source), "runs": runs, "cases": len(data)}})


def _fitted_runs(meta: object) -> list[str]:
    """The run ids a model's ``meta.fitted_on`` records; none when it records none or in another shape (a file
    edited by hand or written by another tool is read, not trusted)."""
    fitted = meta.get("fitted_on") if isinstance(meta, Mapping) else None
    runs = fitted.get("runs") if isinstance(fitted, Mapping) else None
    return [r for r in runs if isinstance(r, str)] if isinstance(runs, list) else []


__all__ = ["Carried", "Evaluation", "LabelResult", "evaluate", "fit", "label", "labels", "prove", "sidecar"]
