"""The recorded nondeterministic boundary of a run: what replay serves back.

A replay is deterministic only if every nondeterministic input is served from
the recording and everything else is recomputed (rr, O'Callahan et al. 2017).
The boundary is the steps marked replayable: LLM calls, tool calls and
retrievals by kind, plus any step declared with ``attributes={"replayable":
True}`` (the clock, randomness; see `replayable`).  Their recorded outputs
are the responses; nothing beyond the run itself is needed, so any recorded
run can be replayed.

Each entry is keyed by the step's *name path* (the names of its enclosing
steps and its own), its *ordinal* among the steps with that path, and a
*fingerprint* of its request (its bound arguments).  Lookup follows vcrpy's
playback semantics: the first not-yet-played entry with the same path and
fingerprint (the replayed run's first), so identical requests replay their
responses in recorded order, however concurrency orders the calls.  A miss reports the closest recorded
request and the arguments that differ (vcrpy's
``find_requests_with_most_matches``).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trajdebug.core.model import REPR_KEY, Run, Step


BOUNDARY_KINDS: frozenset[str] = frozenset({"llm", "tool", "retrieval"})
"""Step kinds whose responses are served on replay unless a step opts out."""

REPLAYABLE_ATTR = "replayable"
"""Step attribute that puts a step on the boundary (True) or takes it off (False)."""

STATE_VALUES_ATTR = "state_values"
"""Step attribute holding the values of the ``run.state`` keys the step wrote
(captured by the replay controller, so a served or patched step can redo its writes)."""

Path = tuple[str, ...]


def is_boundary(
    kind: str, attributes: Mapping[str, Any] | None, kinds: frozenset[str] = BOUNDARY_KINDS
) -> bool:
    """Whether a step with this kind and these attributes is on the replay boundary."""
    flag = attributes.get(REPLAYABLE_ATTR) if attributes else None
    if flag is not None:
        return bool(flag)
    return kind in kinds


def _normalize(value: Any) -> Any:
    # A repr marker holds ``repr(obj)``, which may carry a memory address or
    # mutable contents: keep only the type so equal requests compare equal.
    if isinstance(value, dict):
        if REPR_KEY in value:
            return {REPR_KEY: value.get("type")}
        return {str(k): _normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalize(v) for v in value]
    return value


def canonical(value: Any) -> str:
    """A request as canonical JSON (sorted keys, repr markers reduced to their type)."""
    return json.dumps(
        _normalize(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )


def fingerprint(value: Any) -> str:
    """A short stable hash of a request's canonical JSON."""
    return hashlib.blake2b(canonical(value).encode("utf-8"), digest_size=8).hexdigest()


def step_paths(run: Run) -> dict[str, tuple[Path, int]]:
    """Map each step id to its name path and its ordinal among the steps with that path."""
    steps = run.step_map()
    paths: dict[str, Path] = {}

    def path_of(sid: str, depth: int = 0) -> Path:
        known = paths.get(sid)
        if known is not None:
            return known
        s = steps[sid]
        parent = s.parent_id
        # A parent outside the run (a remote parent) ends the path; so does a
        # pathological depth (a parent cycle in a hand-written file).
        base = path_of(parent, depth + 1) if parent is not None and parent in steps and depth < 256 else ()
        p = (*base, s.name)
        paths[sid] = p
        return p

    counts: dict[Path, int] = {}
    out: dict[str, tuple[Path, int]] = {}
    for s in run.steps:
        p = path_of(s.step_id)
        n = counts.get(p, 0)
        counts[p] = n + 1
        out[s.step_id] = (p, n)
    return out


@dataclass(frozen=True, slots=True)
class Entry:
    """One recorded boundary call."""

    run_id: str
    """The run it was recorded in."""
    step: Step
    """The recorded step (its output is the response; its error, if any, is re-raised)."""
    path: Path
    """Names of the enclosing steps and the step's own name."""
    ordinal: int
    """Position among the run's steps with the same path (call order)."""
    fingerprint: str
    """Hash of the recorded request."""
    raised: bool = False
    """True when the recorded step raised (replay re-raises it) rather than returning."""


@dataclass(frozen=True, slots=True)
class Closest:
    """The recorded request nearest to one that was not recorded."""

    step_id: str
    """The recorded step."""
    run_id: str
    """Its run."""
    path: Path
    """Its name path."""
    ordinal: int
    """Its ordinal."""
    similarity: float
    """Similarity of the two requests' canonical JSON, in [0, 1]."""
    differing: tuple[str, ...]
    """Top-level argument names whose values differ."""

    def to_dict(self) -> dict[str, Any]:
        """The match as JSON data."""
        return {
            "step_id": self.step_id,
            "run_id": self.run_id,
            "path": list(self.path),
            "ordinal": self.ordinal,
            "similarity": round(self.similarity, 3),
            "differing": list(self.differing),
        }


@dataclass(slots=True)
class Cassette:
    """The boundary calls of one or more recorded runs, ready to be played back.

    The first run is the one being replayed; further runs (a passing run of the
    same agent) are consulted after it, so a request that the patch changed
    into one the passing run made is served its recorded response too.
    """

    entries: list[Entry] = field(default_factory=list)
    """All entries, the replayed run's first, each run in start order."""
    kinds: frozenset[str] = BOUNDARY_KINDS
    """The boundary step kinds."""
    played: set[int] = field(default_factory=set)
    """Indexes of entries already served."""
    _by_path: dict[Path, list[int]] = field(default_factory=dict)

    @classmethod
    def from_runs(cls, runs: Sequence[Run], kinds: Iterable[str] = BOUNDARY_KINDS) -> Cassette:
        """Build the cassette of these runs' boundary steps (first run first)."""
        cas = cls(kinds=frozenset(kinds))
        for run in runs:
            keys = step_paths(run)
            reported = {e.error_id for e in run.errors if e.attributes.get("reported")}
            for s in run.steps:
                if not is_boundary(s.kind, s.attributes, cas.kinds):
                    continue
                path, ordinal = keys[s.step_id]
                cas._by_path.setdefault(path, []).append(len(cas.entries))
                raised = s.status == "error" and s.error is not None and s.error.error_id not in reported
                cas.entries.append(
                    Entry(run.run_id, s, path, ordinal, fingerprint(s.input), raised and s.output is None)
                )
        return cas

    def reset(self) -> None:
        """Forget what was played (before a new replay)."""
        self.played.clear()

    def lookup(self, path: Path, ordinal: int, fp: str) -> Entry | None:
        """The entry to serve for a request, marked played; None when nothing matches.

        Identical requests get their responses in recorded order, the replayed
        run's before a passing run's.  The call order is not consulted: calls of
        one path started from concurrent workers interleave differently on every
        run, and a retried request's failed attempt must still come before its
        successful one.

        Args:
            path: The request's name path.
            ordinal: Its call order among requests with that path (unused for matching).
            fp: Its fingerprint.
        """
        first_run = self.entries[0].run_id if self.entries else None
        best: int | None = None
        for i in self._by_path.get(path, ()):
            if i in self.played:
                continue
            e = self.entries[i]
            if e.fingerprint == fp:
                if e.run_id == first_run:
                    best = i
                    break
                if best is None:
                    best = i
        if best is None:
            return None
        self.played.add(best)
        return self.entries[best]

    def closest(self, path: Path, request: Any) -> Closest | None:
        """The recorded request most similar to ``request``: same path first, then any."""
        idxs = list(self._by_path.get(path, ())) or list(range(len(self.entries)))
        if not idxs:
            return None
        want = canonical(request)
        best: tuple[float, int] | None = None
        for i in idxs[:200]:
            e = self.entries[i]
            sm = difflib.SequenceMatcher(None, want, canonical(e.step.input), autojunk=False)
            if best is not None and sm.real_quick_ratio() <= best[0]:
                continue
            ratio = sm.ratio()
            if best is None or ratio > best[0]:
                best = (ratio, i)
        assert best is not None
        e = self.entries[best[1]]
        return Closest(
            e.step.step_id, e.run_id, e.path, e.ordinal, best[0], _differing(request, e.step.input)
        )


def _differing(a: Any, b: Any) -> tuple[str, ...]:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        keys = sorted(set(a) | set(b), key=str)
        return tuple(str(k) for k in keys if canonical(a.get(k)) != canonical(b.get(k)))
    return () if canonical(a) == canonical(b) else ("(value)",)


def replayable(fn: Callable[..., Any] | None = None, *, name: str | None = None, kind: str = "other") -> Any:
    """Record a function as a step on the replay boundary (the clock, randomness, an I/O read).

    Example:
        ```python
        @trajdebug.replay.replayable
        def now() -> float:
            return time.time()
        ```

    On replay the recorded value is served instead of calling the function.
    """
    from trajdebug.record.recorder import step

    def deco(f: Callable[..., Any]) -> Any:
        return step(name or f.__name__, kind=kind, attributes={REPLAYABLE_ATTR: True})(f)

    return deco(fn) if fn is not None else deco


__all__ = [
    "BOUNDARY_KINDS",
    "REPLAYABLE_ATTR",
    "STATE_VALUES_ATTR",
    "Cassette",
    "Closest",
    "Entry",
    "canonical",
    "fingerprint",
    "is_boundary",
    "replayable",
    "step_paths",
]
