"""Step-by-step alignment of two runs of the same agent (a passing and a failing one).

Steps are matched by their replay key, the name path plus call order (see
`trajdebug.replay.cassette.step_paths`); the two key sequences are aligned
with difflib's matcher, so a step present in only one run (an extra retry, a
branch not taken) shows as inserted or deleted without shifting the rest.

Each matched pair is classified the way delta debugging needs it (Zeller,
"Isolating cause-effect chains", FSE 2002): a step whose request is the same
but whose response differs is an *origin* of the difference; a step whose
request differs merely passes on a difference from upstream.  An ``input``
step records the run's input as its output: in runs given different inputs,
where that differs the run was asked something else (its request differs), no
step made the difference.

Runs given different inputs (`Alignment.inputs_differ`) differ in nearly
every value: compared, they show where the agent behaved otherwise, not which
value went wrong.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from trajdebug.core.chat import unminted
from trajdebug.core.model import Run, Step
from trajdebug.replay.cassette import STATE_VALUES_ATTR, Path, canonical, fingerprint, step_paths


PairStatus = Literal["same", "output", "input", "only-good", "only-bad"]
"""``same``; ``output``: same request, different output (an origin); ``input``: the request
differs (a consequence; for an ``input`` step, the run's input it records); or the step exists in one
run only."""


@dataclass(frozen=True, slots=True)
class Pair:
    """One aligned position of two runs."""

    path: Path
    """The step's name path."""
    ordinal: int
    """Its call order among steps with that path."""
    good: Step | None
    """The step in the passing run (None: only in the failing run)."""
    bad: Step | None
    """The step in the failing run (None: only in the passing run)."""
    status: PairStatus
    """How the two differ."""
    enclosing: bool = False
    """True when the step encloses other steps (its output is derived from theirs); False for one whose
    output differs while every step inside it matched (it computed the difference itself)."""

    @property
    def name(self) -> str:
        """The step's name."""
        return self.path[-1] if self.path else "?"

    @property
    def output_differs(self) -> bool:
        """True when both runs have the step and its outputs or statuses differ."""
        if self.good is None or self.bad is None:
            return False
        return not _same_result(self.good, self.bad)

    def to_dict(self, reported: frozenset[str] = frozenset()) -> dict[str, Any]:
        """The pair as JSON data (``reported``: the runs' errors recorded without raising, `reported_errors`)."""
        return {
            "path": list(self.path),
            "ordinal": self.ordinal,
            "name": self.name,
            "status": self.status,
            "good": self.good.step_id if self.good else None,
            "bad": self.bad.step_id if self.bad else None,
            "output_differs": self.output_differs,
            "good_output": returned(self.good, reported),
            "bad_output": returned(self.bad, reported),
            "bad_error": (
                f"{self.bad.error.type}: {self.bad.error.message}" if self.bad and self.bad.error else None
            ),
        }


def returned(step: Step | None, reported: frozenset[str] = frozenset()) -> Any:
    """What a step returned: None for one that raised with an empty placeholder recorded as its output (the
    LangChain tracer's ``{}`` for a LangGraph node that raised, where trajdebug's recorder writes None), so a
    raised step reads alike from every route (issue 23, nu23).  A step whose error was recorded without
    raising (``reported``: a ``with`` block that overran its timeout, a tool's error payload) returned what it
    recorded, an empty list too (round 50 review)."""
    if step is None or (raised(step, reported) and step.output in ({}, [], "")):
        return None
    return step.output


def raised(step: Step, reported: frozenset[str] = frozenset()) -> bool:
    """Whether a step ended by raising: it has an error, and not one recorded without raising (``reported``)."""
    return step.error is not None and (step.error.error_id is None or step.error.error_id not in reported)


def reported_errors(*runs: Run) -> frozenset[str]:
    """The ids of the runs' errors recorded without raising (``reported``: a tool's error payload, a ``with``
    block that overran its timeout): the step went on and returned what it recorded."""
    return frozenset(e.error_id for r in runs for e in r.errors if e.attributes.get("reported"))


def _content(s: Step, value: Any) -> Any:
    """A model call's request or answer without what its provider mints per call (`unminted`: the response's
    and its tool calls' ids, the ``tool_call_id`` a tool result in its history answers, usage, creation time):
    the same call of the same tool, answered alike, would otherwise differ in every pair of runs.  The model,
    the parameters, every message and what the model answered stay.  Any step: a loopback address's port
    (`_unported`).  Other steps: the value."""
    return _unported(unminted(value) if s.kind == "llm" else value)


_LOOPBACK = re.compile(r"(?i)(://(?:127\.0\.0\.1|localhost|\[::1\])):(\d{1,5})\b")
"""A URL on this machine and its port: a server an agent or its test starts for the run (a fake model, a stub
of a web service) takes a free port each time, so every request naming it differs between two runs of the
same input while nothing the agent did differs.  The match starts at ``://``, not at the scheme: a scheme
scan from every word boundary took quadratic time on a long dotted or hyphenated token.  Only an ephemeral
port (`_EPHEMERAL`) is ignored: a fixed port (a local database, model server, 8080 against 8081) is chosen
by the agent's configuration, and a wrong one is a real difference."""

_EPHEMERAL = 32768
"""The lowest port an operating system hands a server bound to port 0 (Linux 32768-60999; macOS, Windows and
IANA 49152-65535)."""


def _port_free(m: re.Match[str]) -> str:
    return f"{m.group(1)}:PORT" if int(m.group(2)) >= _EPHEMERAL else m.group(0)


def _unported(value: Any, depth: int = 0) -> Any:
    """The value with every loopback URL's ephemeral port written as ``:PORT`` (strings inside lists and dicts
    too)."""
    if isinstance(value, str):
        return _LOOPBACK.sub(_port_free, value) if "://" in value else value
    if depth > 32:
        return value
    if isinstance(value, Mapping):
        return {k: _unported(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_unported(v, depth + 1) for v in value]
    return value


def _same_result(g: Step, b: Step) -> bool:
    def result(s: Step) -> str:
        err = f"{s.error.type}:{s.error.message}" if s.error is not None else ""
        return canonical([s.status, err, _content(s, s.output)])

    if result(g) != result(b):
        return False
    # State values are compared only when both runs captured them (a run
    # recorded without the replay controller has only the keys written).
    gs, bs = g.attributes.get(STATE_VALUES_ATTR), b.attributes.get(STATE_VALUES_ATTR)
    return gs is None or bs is None or canonical(gs) == canonical(bs)


@dataclass(frozen=True, slots=True)
class InputDifference:
    """What the two runs were given, where it differs."""

    what: str
    """Where the input was read: the metadata key (``task``, ``input``...), ``input step NAME`` or ``first step
    NAME's input``."""
    good: Any
    """The passing run's."""
    bad: Any
    """The failing run's."""

    def to_dict(self) -> dict[str, Any]:
        """The difference as JSON data."""
        return {"what": self.what, "good": self.good, "bad": self.bad}


def input_difference(good: Run, bad: Run) -> InputDifference | None:
    """How the inputs of two runs differ (None: the same input, or nothing says what either was given).

    One definition with the analysis (`trajdebug.analysis.reference.same_request`, which pairs a failing run
    with a passing run of the same input for ``analyze``'s ``diff`` hint and the guided search): the metadata's
    ``task`` (``task_id``, ``input``, ``args``), else the first step's input; and with one ``task``, the first
    step's input too (an agent that records one constant task for other requests).  What else an input step
    records (a request id, the time it was received) is no other input."""
    from trajdebug.analysis.reference import given_input, input_key, same_request

    x, y = given_input(good), given_input(bad)
    if (x is None and y is None) or same_request(good, bad):
        # Neither states its input (no task, a first step given nothing): nothing says the inputs differ.
        return None
    key = input_key(good)
    if key is not None and key == input_key(bad):
        where = "first"  # one task, other first inputs
    else:
        where = next((g[0] for g in (x, y) if g is not None and g[0] != "first"), "first")
    what = f"first step {(good.steps or bad.steps)[0].name}'s input" if where == "first" else where
    return InputDifference(what, _stated(good, where), _stated(bad, where))


def _stated(run: Run, where: str) -> Any:
    """A run's input as `given_input` reads it from ``where``: a metadata key, or ``first`` (the first step's input)."""
    if where == "first":
        return run.steps[0].input if run.steps else None
    return run.metadata.get(where)


@dataclass(frozen=True, slots=True)
class Alignment:
    """Two runs aligned step by step."""

    good: Run
    """The passing run."""
    bad: Run
    """The failing run."""
    pairs: tuple[Pair, ...]
    """The aligned positions, in execution order."""

    def counts(self) -> str:
        """What the alignment holds, counted as the header says it: the steps the two runs share (paired), how
        many of those differ, and the steps one run has alone (nu24 read "32 aligned steps" for runs of 29 and
        25 steps: the positions were counted, each step one run has alone as one)."""
        paired = [p for p in self.pairs if p.good is not None and p.bad is not None]
        differ = sum(1 for p in paired if p.status != "same")
        good = sum(1 for p in self.pairs if p.bad is None)
        bad = sum(1 for p in self.pairs if p.good is None)
        out = f"{len(paired)} steps paired, {differ} of them differ"
        alone = [f"{n} only in {side}" for n, side in zip((good, bad), self.side_names(), strict=True) if n]
        return out + (f"; {', '.join(alone)}" if alone else "")

    def side_names(self) -> tuple[str, str]:
        """How GOOD and BAD are named, by their outcomes: ``the passing run`` and ``the failing run`` when GOOD
        passed and BAD failed, else each by its argument and outcome (``GOOD (failed)``, ``BAD (passed)``): the
        names said "passing" of a failed run given as GOOD (nu64b)."""
        if self.good.outcome == "success" and self.bad.outcome == "failure":
            return "the passing run", "the failing run"
        said = {"success": "passed", "failure": "failed"}
        return f"GOOD ({said.get(self.good.outcome, self.good.outcome)})", f"BAD ({said.get(self.bad.outcome, self.bad.outcome)})"

    @property
    def differences(self) -> list[Pair]:
        """The positions where the runs differ."""
        return [p for p in self.pairs if p.status != "same"]

    @property
    def inputs_differ(self) -> InputDifference | None:
        """How the two runs' inputs differ (`input_difference`), None when they were given the same."""
        return input_difference(self.good, self.bad)

    @property
    def first_divergence(self) -> Pair | None:
        """The first position (in execution order) where the runs differ, enclosing steps aside."""
        return next((p for p in self.pairs if p.status != "same" and not p.enclosing), None)

    @property
    def origins(self) -> list[Pair]:
        """Differences that start at a step: same request, different response (no enclosing steps)."""
        return [p for p in self.pairs if p.status == "output" and not p.enclosing]

    def impact(self, pair: Pair) -> list[str]:
        """Steps of the failing run downstream of a difference that differ from the passing run, in execution order.

        Its forward slice over the edges the analysis follows (recorded, inferred
        from content, the lineage's value edges: `trajdebug.analysis.with_followed_edges`),
        so the failing step a changed value reached is in it: a framework trace
        (LangGraph) records which node encloses which, not which node read
        another's output, so the recorded edges alone reach only the enclosing
        steps.  The step itself and the steps enclosing it are left out: they
        differ because they contain it, not downstream of it; so are the steps
        that came out the same as in the passing run (marked ``=``): the
        difference did not change them.
        """
        if pair.bad is None:
            return []
        from trajdebug.replay.engine import ancestors, forward_slice

        run = self.bad
        try:
            from trajdebug.analysis import with_followed_edges

            run = with_followed_edges(run)
        except Exception:  # noqa: BLE001 - no inference (a malformed run): the recorded edges still count
            pass
        sid = pair.bad.step_id
        fwd = forward_slice(run, [sid]) - ancestors(run, [sid])
        unchanged = {p.bad.step_id for p in self.pairs if p.status == "same" and p.bad is not None}
        return [s.step_id for s in self.bad.steps if s.step_id in fwd - unchanged and s.step_id != sid]

    def to_dict(self) -> dict[str, Any]:
        """The alignment as JSON data."""
        first = self.first_divergence
        reported = reported_errors(self.good, self.bad)
        return {
            "good": self.good.run_id,
            "bad": self.bad.run_id,
            "good_outcome": self.good.outcome,
            "bad_outcome": self.bad.outcome,
            "steps": [p.to_dict(reported) for p in self.pairs],
            "differences": len(self.differences),
            "first_divergence": first.to_dict(reported) if first else None,
            "impact": self.impact(first) if first else [],
            "origins": [p.bad.step_id for p in self.origins if p.bad is not None],
            "inputs_differ": None if self.inputs_differ is None else self.inputs_differ.to_dict(),
        }


def align(good: Run, bad: Run) -> Alignment:
    """Align a passing and a failing run of the same agent step by step: by name path and call order, except the
    calls of a retried step (`_retried`), which are paired by what they asked (`_match_keys`)."""
    gk = step_paths(good)
    bk = step_paths(bad)
    retried = _retried(good, gk) | _retried(bad, bk)
    asked = _asked_fields(good, bad, gk, bk, retried)
    g_keys, b_keys = _match_keys(good, gk, retried, asked), _match_keys(bad, bk, retried, asked)
    g_parents = {s.parent_id for s in good.steps}
    b_parents = {s.parent_id for s in bad.steps}
    g_by, b_by = {s.step_id: s for s in good.steps}, {s.step_id: s for s in bad.steps}
    differ = input_difference(good, bad) is not None
    pairs: list[Pair] = []
    sm = difflib.SequenceMatcher(None, g_keys, b_keys, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            for gi, bj in zip(range(i1, i2), range(j1, j2)):
                g, b = good.steps[gi], bad.steps[bj]
                path, ordinal = bk[b.step_id]
                enclosing = g.step_id in g_parents or b.step_id in b_parents
                pairs.append(Pair(path, ordinal, g, b, _status(g, b, g_by, b_by, differ), enclosing))
            continue
        # Replaced or inserted/deleted blocks: a key can still occur on both
        # sides out of order; match those, the rest exists in one run only.
        b_block = {b_keys[j]: bad.steps[j] for j in range(j1, j2)}
        for gi in range(i1, i2):
            g = good.steps[gi]
            key = g_keys[gi]
            b_match = b_block.pop(key, None)
            if b_match is not None:
                enclosing = g.step_id in g_parents or b_match.step_id in b_parents
                path, ordinal = bk[b_match.step_id]
                pairs.append(Pair(path, ordinal, g, b_match, _status(g, b_match, g_by, b_by, differ), enclosing))
            else:
                pairs.append(Pair(*gk[g.step_id], g, None, "only-good", g.step_id in g_parents))
        for b in b_block.values():
            pairs.append(Pair(*bk[b.step_id], None, b, "only-bad", b.step_id in b_parents))
    return Alignment(good, bad, tuple(_own_outputs(good, bad, pairs)))


MatchKey = tuple[Path, Any]
"""What `align` pairs steps by: the name path, and the call order or, for a retried call, what it asked."""


def _retried(run: Run, paths: Mapping[str, tuple[Path, int]]) -> set[Path]:
    """The name paths of ``run`` called again after a call of theirs failed (a retry, by a decorator or a loop):
    their attempts shift the call order, so the two runs' calls are paired by request instead (newuser65: a
    flaky API failing on page 0 in one run and page 2 in the other paired every later page off by one)."""
    failed: set[Path] = set()
    out: set[Path] = set()
    for s in run.steps:
        path = paths[s.step_id][0]
        if path in failed:
            out.add(path)
        if s.status == "error":
            failed.add(path)
    return out


def _asked_fields(
    good: Run, bad: Run, gk: Mapping[str, tuple[Path, int]], bk: Mapping[str, tuple[Path, int]], retried: set[Path]
) -> dict[Path, tuple[str, ...]]:
    """For each retried path, the top-level input fields whose value changes between its calls in either run:
    what one call asks that the others do not (the page), as opposed to what every call of a run is given (the
    window, which differs between the runs when the bug is upstream and would then pair nothing)."""
    seen: dict[tuple[int, Path], dict[str, set[str]]] = {}
    for side, (run, keys) in enumerate(((good, gk), (bad, bk))):
        for s in run.steps:
            path = keys[s.step_id][0]
            if path in retried and isinstance(s.input, Mapping):
                for k, v in s.input.items():
                    seen.setdefault((side, path), {}).setdefault(str(k), set()).add(canonical(v))
    out: dict[Path, tuple[str, ...]] = {}
    for (_, path), fields in seen.items():
        varying = {k for k, vs in fields.items() if len(vs) > 1}
        out[path] = tuple(sorted(set(out.get(path, ())) | varying))
    return out


def _match_keys(
    run: Run, paths: Mapping[str, tuple[Path, int]], retried: set[Path], asked: Mapping[Path, tuple[str, ...]]
) -> list[MatchKey]:
    """Each step's `MatchKey`: its path and call order; for a call of a retried path, its path, what it asked
    (`_asked_fields`), whether it is an attempt that failed and was tried again, and how many calls before it
    were keyed alike.  A failed attempt that was retried thus pairs only with one of the other run's (or with
    nothing), never with its success; the last attempt at a request is the call, paired with the other run's."""
    requests: list[tuple[Path, Any] | None] = []
    for s in run.steps:
        path = paths[s.step_id][0]
        given = s.input if isinstance(s.input, Mapping) else {}
        # No field that varies: every call asked alike, so the calls pair in order.
        requests.append(None if path not in retried else (path, tuple(canonical(given.get(k)) for k in asked.get(path, ()))))
    later: set[tuple[Path, Any]] = set()
    superseded = [False] * len(run.steps)
    for i in range(len(run.steps) - 1, -1, -1):
        req = requests[i]
        if req is not None:
            superseded[i] = run.steps[i].status == "error" and req in later
            later.add(req)
    out: list[MatchKey] = []
    count: dict[tuple[Any, ...], int] = {}
    for i, s in enumerate(run.steps):
        path, ordinal = paths[s.step_id]
        req = requests[i]
        if req is None:
            out.append((path, ordinal))
            continue
        key = (superseded[i], req[1])
        n = count.get(key, 0)
        count[key] = n + 1
        out.append((path, ("asked", *key, n)))
    return out


def _own_outputs(good: Run, bad: Run, pairs: list[Pair]) -> list[Pair]:
    """The pairs, with an enclosing step given the same request whose output differs taken as an origin when
    its own code made the difference: every step inside it matched, or every one inside it that differs was
    asked something else (a nested step's request comes from the step enclosing it, so one that differs inside a
    step whose own request is the same was built by that step: a LangGraph node's routing function reads the
    node's update).  One inside it whose output differs for the same request, or a step one run has alone,
    leaves it enclosing: the difference may have started there."""
    suspects = [i for i, p in enumerate(pairs) if p.enclosing and p.status == "output"]
    if not suspects:
        return pairs
    # Each run walked in its own tree and its steps' statuses kept apart: a step id is unique within a run
    # only (a counter's "1", "2", "3"), so the passing run's "2" must not stand for the failing run's "2".
    kids: dict[tuple[int, str | None], list[str]] = {}
    for side, run in enumerate((good, bad)):
        for s in run.steps:
            kids.setdefault((side, s.parent_id), []).append(s.step_id)
    where: dict[tuple[int, str], int] = {}
    for n, p in enumerate(pairs):
        for side, step in enumerate((p.good, p.bad)):
            if step is not None:
                where[(side, step.step_id)] = n
    for i in suspects:
        p = pairs[i]
        inside = _inside(kids, [(side, step.step_id) for side, step in enumerate((p.good, p.bad)) if step])
        differing = sorted({where[c] for c in inside if c in where and pairs[where[c]].status != "same"})
        # Every one that differs, not the first only: an inner call whose request carries a fresh id or a time
        # always differs as "input", and one after it whose output differs for the same request is an origin of
        # its own (rev52w M2: an audit event before the model call that answered otherwise).
        if inside and all(pairs[d].status == "input" for d in differing):
            pairs[i] = replace(p, enclosing=False)
    return pairs


def _inside(kids: Mapping[tuple[int, str | None], list[str]], top: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The steps inside ``top`` (each ``(side, step id)``), each run's walked in its own tree."""
    inside: list[tuple[int, str]] = []
    todo = list(top)
    # A hand-written file may hold a parent cycle (the loader keeps it with a warning): each step once.
    seen = set(todo)
    while todo:
        side, at = todo.pop()
        for c in kids.get((side, at), ()):
            if (side, c) not in seen:
                seen.add((side, c))
                inside.append((side, c))
                todo.append((side, c))
    return inside


def _status(
    g: Step, b: Step, g_by: Mapping[str, Step], b_by: Mapping[str, Step], inputs_differ: bool
) -> PairStatus:
    if fingerprint(_content(g, g.input)) != fingerprint(_content(b, b.input)) or _state_differs(_state_read(g, g_by), _state_read(b, b_by)):
        return "input"
    if _same_result(g, b):
        return "same"
    # An input step's output is the run's input: in runs given different inputs (`input_difference`), another one
    # is another request, not a difference it made; in runs of the same input it is an origin like any step's.
    return "input" if inputs_differ and g.kind == "input" and b.kind == "input" else "output"


def _state_read(s: Step, by_id: Mapping[str, Step]) -> dict[str, str | None]:
    """What a step read from ``run.state``: each state edge's key with the value its writer left there (the
    writer's recorded state values, canonical), None when the writer recorded none for it.  The step's own
    input does not hold it (a step that reads ``run.state["reading"]`` takes no argument), so two steps with
    the same arguments that read different values were asked different things: a consequence of the
    writer, not an origin."""
    read: dict[str, str | None] = {}
    for d in s.deps:
        if d.kind != "state" or d.key is None or d.run_id is not None:
            continue
        w = by_id.get(d.step_id)
        values = w.attributes.get(STATE_VALUES_ATTR) if w is not None else None
        read[d.key] = canonical(values[d.key]) if isinstance(values, Mapping) and d.key in values else None
    return read


def _state_differs(g: Mapping[str, str | None], b: Mapping[str, str | None]) -> bool:
    """Whether two steps read different state: other keys, or another value under a key both writers
    recorded.  A writer without recorded values (an older recording, a foreign import) says nothing, as
    in `_same_result`: one side's value against the other's silence is no difference."""
    if g.keys() != b.keys():
        return True
    return any(g[k] is not None and b[k] is not None and g[k] != b[k] for k in g)


__all__ = [
    "Alignment",
    "InputDifference",
    "Pair",
    "PairStatus",
    "align",
    "input_difference",
    "raised",
    "reported_errors",
    "returned",
]
