"""Oracles for the guided search: how one is called safely, a passing run, the checks written in the agent.

An oracle answers whether a step's output is right (what the run needed there; wrong also when it passed on a wrong input)
(`trajdebug.analysis.Oracle`); a wrong answer may say whether the step's inputs were right (`Answer.admissible`,
Naish's three-valued answers: only a person says so; a check or a passing run cannot).  `Caller` calls any oracle so that a bug in it
is never the search's crash: one that raises, hangs past a timeout (it runs in
a worker thread) or returns anything but True, False, None or an `Answer`
counts as don't know, and the search reports it.

Two oracles need nothing but recorded data and the process:

- `ReferenceOracle`: a passing run of the same input.  Steps are aligned by
  name and occurrence (the k-th call of ``extract`` with the k-th); an output
  equal to the aligned step's is correct (a model's answer read without what
  its provider mints per call, `trajdebug.core.chat.unminted`: the response's
  and tool calls' ids, creation time, usage, system fingerprint), a different
  one wrong, a step with no counterpart unknown.
- `ExpectationOracle`: the checks the agent registered in this process
  (``trajdebug.expect(name, check)``, ``expect=`` on ``trajdebug.step``),
  looked up by the step's name and run on its recorded output.  Recorded data
  only names the step: no code it names is ever imported or run.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import replace
from typing import Any

from trajdebug.core.chat import unminted
from trajdebug.core.model import Answer, Run, Step


def oracle_name(oracle: Any) -> str:
    """The ``by`` of an oracle's answers: its ``by`` attribute, else ``oracle:<module:qualname>``."""
    by = getattr(oracle, "by", None)
    if isinstance(by, str) and by:
        return by
    mod = getattr(oracle, "__module__", None) or "?"
    name = getattr(oracle, "__qualname__", None) or type(oracle).__qualname__
    return f"oracle:{mod}:{name}"


class Caller:
    """Calls one oracle safely: in a worker thread bounded by a timeout, anything but a verdict is don't-know."""

    def __init__(self, oracle: Any, timeout: float | None) -> None:
        self.oracle = oracle
        self.by = oracle_name(oracle)
        self.timeout = None if getattr(oracle, "interactive", False) else timeout
        self.dead = False

    def __call__(self, step: Step, run: Run, problems: list[str]) -> Answer:
        now = time.time_ns()
        if self.dead:
            return Answer(step.step_id, None, self.by, now)
        box: list[Any] = []

        def call() -> None:
            try:
                box.append(("ok", self.oracle(step, run)))
            except Exception as e:  # noqa: BLE001 - an oracle's own bug is don't-know, never a crash
                box.append(("err", f"{type(e).__name__}: {e}"))

        if self.timeout is None:
            call()
        else:
            t = threading.Thread(target=call, name="trajdebug-oracle", daemon=True)
            t.start()
            t.join(self.timeout)
            if not box:
                # A hung oracle is left behind (threads cannot be killed) and not asked again.
                self.dead = True
                problems.append(f"{self.by} did not answer within {self.timeout:g} s (not asked again)")
                return Answer(step.step_id, None, self.by, now)
        kind, value = box[0]
        if kind == "err":
            problems.append(f"{self.by} raised on {step.name} ({step.step_id}): {value}")
            return Answer(step.step_id, None, self.by, now)
        if isinstance(value, Answer):
            adm = value.admissible if value.correct is False and isinstance(value.admissible, bool) else None
            if value.admissible is not None and not isinstance(value.admissible, bool):
                problems.append(f"{self.by} gave admissible={value.admissible!r} on {step.name}, not True/False/None")
            return Answer(step.step_id, value.correct, value.by or self.by, value.at_ns or now, value.reason,
                          admissible=adm)
        if value is None or isinstance(value, bool):
            return Answer(step.step_id, value, self.by, now)
        problems.append(
            f"{self.by} returned {type(value).__name__} on {step.name} ({step.step_id}), not True/False/None"
        )
        return Answer(step.step_id, None, self.by, now)


def ask(callers: Sequence[Caller], step: Step, run: Run, problems: list[str]) -> Answer:
    """Ask the oracles in order of trust; the first that knows answers (a more trusted one overrides).

    A person is not asked about a step whose output a passing run of the same input also produced: that
    output is what the run needed there as surely as the passing run passed, and a person's questions are
    the scarce ones (a step that differs from the passing run still goes to the person first)."""
    early: dict[int, Answer] = {}
    if any(getattr(c.oracle, "interactive", False) for c in callers):
        for k, c in enumerate(callers):
            if isinstance(c.oracle, ReferenceOracle):
                early[k] = same = c(step, run, problems)
                if same.correct is True:
                    return same
    last: Answer | None = None
    for k, c in enumerate(callers):
        a = early[k] if k in early else c(step, run, problems)
        if a.correct is not None:
            return a
        last = last or a
    return last or Answer(step.step_id, None, "oracle:none", time.time_ns())


def occurrences(run: Run) -> dict[str, tuple[str, int]]:
    """Each step's ``(name, k)``: its name and how many steps of that name started before it."""
    seen: dict[str, int] = {}
    out: dict[str, tuple[str, int]] = {}
    for s in run.steps:
        k = seen.get(s.name, 0)
        seen[s.name] = k + 1
        out[s.step_id] = (s.name, k)
    return out


def same_output(a: Any, b: Any) -> bool:
    """Outputs equal as JSON values (key order ignored)."""
    if a == b:
        return True
    try:
        return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return False


def effect(step: Step) -> Any:
    """What a step produced: its output, and the values it wrote to shared state (``state_values``) if any."""
    written = step.attributes.get("state_values") if isinstance(step.attributes, Mapping) else None
    return step.output if written is None else (step.output, written)


def _answered(step: Step) -> Any:
    """`effect`, a model call's output read without the ids its provider minted for it (`unminted`)."""
    if step.kind != "llm":
        return effect(step)
    return effect(replace(step, output=unminted(step.output)))


class Carrier:
    """Which inputs a step's output relays whole: the implied answers of the guided search.

    A step answered correct vouches for an input only when it is a pure relay of it: its output equals the
    input's (a pass-through), or it encloses the input (a container, a wrapper around a sub-agent) and one
    whole part of its output is the input's output (a tool node's message holding a tool's answer).  A step
    that merely quotes an input beside its own verdict (a check returning the stale quote it flagged) may be
    right while the quoted value is wrong, so it implies nothing.  The input's output must be at least `MIN`
    characters of JSON (a short value recurs by chance).
    """

    MIN = 16
    PARTS = 10_000
    """Parts of one output read at most: a container's answer is bounded like any value, but a huge one
    (a whole document store relayed) should cost a question, not the search's time."""

    def __init__(self, steps: Sequence[Step], parent_of: Mapping[str, str | None]) -> None:
        self._steps = steps
        self._parent_of = parent_of
        self._canon: dict[int, str | None] = {}
        self._parts: dict[int, set[str]] = {}
        self._at: dict[str, int] | None = None

    def _canonical(self, i: int) -> str | None:
        if i not in self._canon:
            try:
                self._canon[i] = json.dumps(effect(self._steps[i]), sort_keys=True, default=str)
            except (TypeError, ValueError, RecursionError):
                self._canon[i] = None
        return self._canon[i]

    def _whole_parts(self, j: int) -> set[str]:
        """Step ``j``'s output's parts, each whole: every nested value as canonical JSON, every string as it is."""
        if j not in self._parts:
            parts: set[str] = set()
            todo = [effect(self._steps[j])]
            while todo and len(parts) < self.PARTS:
                v = todo.pop()
                if isinstance(v, str):
                    parts.add(v)
                    continue
                try:
                    parts.add(json.dumps(v, sort_keys=True, default=str))
                except (TypeError, ValueError, RecursionError):
                    continue
                if isinstance(v, Mapping):
                    todo.extend(v.values())
                elif isinstance(v, (list, tuple)):
                    todo.extend(v)
            self._parts[j] = parts
        return self._parts[j]

    def enclosing(self, p: int) -> list[int]:
        """The steps (by index) enclosing step ``p``, nearest first: one walk up its chain of parents, through
        parents that are not among the steps (O(nesting depth), where asking `encloses` of every step costs
        steps x depth)."""
        if self._at is None:
            self._at = {s.step_id: i for i, s in enumerate(self._steps)}
        out: list[int] = []
        sid = self._steps[p].step_id
        up, seen = self._parent_of.get(sid), {sid}
        while up is not None and up not in seen:
            seen.add(up)
            j = self._at.get(up)
            if j is not None:
                out.append(j)
            up = self._parent_of.get(up)
        return out

    def encloses(self, j: int, p: int) -> bool:
        """True when step ``j`` encloses step ``p`` (a parent, or a parent's parent, of it): `enclosing`, the one
        definition (never a step itself, even on a parent cycle)."""
        return j in self.enclosing(p)

    def carries(self, j: int, p: int) -> bool:
        """True when step ``j``'s output relays step ``p``'s whole output (see the class docstring)."""
        mine, part = self._canonical(j), self._canonical(p)
        if mine is None or part is None or len(part) < self.MIN:
            return False
        if mine == part:
            return True
        if not self.encloses(j, p):
            return False
        parts = self._whole_parts(j)
        value = effect(self._steps[p])
        if isinstance(value, str):
            return value in parts
        forms = {part, json.dumps(value, default=str), json.dumps(value, separators=(",", ":"), default=str)}
        return not forms.isdisjoint(parts)

    def passes(self) -> dict[int, int]:
        """Pass-through containers: each step whose output equals one of its direct children's whole output
        (at least `MIN` characters of JSON) -> that child (the latest-started, when several are equal).

        Such a container adds nothing to the value a question would show: its output *is* the child's.
        The guided search asks the child first and lets a wrong answer stand for the container; a right
        one leaves the container to be asked (it may have been meant to change the value: `GuidedSearch._stand`)."""
        at = {s.step_id: i for i, s in enumerate(self._steps)}
        out: dict[int, int] = {}
        for k, s in enumerate(self._steps):
            c = at.get(self._parent_of.get(s.step_id) or "")
            if c is None or self._steps[c].output is None:
                continue
            mine, part = self._canonical(c), self._canonical(k)
            if mine is not None and mine == part and len(mine) >= self.MIN and (c not in out or s.start_ns >= self._steps[out[c]].start_ns):
                out[c] = k
        return out

    def implied(self, i: int, parents: Sequence[Sequence[int]], known: Container[int]) -> list[tuple[int, int]]:
        """``(input, carried by)`` for every input not in ``known`` that step ``i`` (answered correct) carries,
        and, each such input being correct in turn, the inputs it carries."""
        out: list[tuple[int, int]] = []
        seen: set[int] = set()
        todo = [i]
        while todo:
            j = todo.pop()
            for p in parents[j]:
                if p in known or p in seen or not self.carries(j, p):
                    continue
                seen.add(p)
                out.append((p, j))
                todo.append(p)
        return out


class ReferenceOracle:
    """A passing run of the same input as oracle: the same step's output there is the expected one."""

    def __init__(self, reference: Run) -> None:
        self.reference = reference
        self.by = f"reference:{reference.run_id}"
        self._steps = {key: reference.step(sid) for sid, key in occurrences(reference).items()}
        self._keys: dict[str, dict[str, tuple[str, int]]] = {}

    def __call__(self, step: Step, run: Run) -> bool | None:
        keys = self._keys.get(run.run_id)
        if keys is None:
            keys = self._keys[run.run_id] = occurrences(run)
        key = keys.get(step.step_id)
        twin = None if key is None else self._steps.get(key)
        if twin is None:
            return None
        if (twin.status == "error") != (step.status == "error"):
            return False
        # A model's answer is compared without what its provider mints: a new tool-call id and response id
        # for every call, so the same call of the same tool differs there in every run.  Only those: a field
        # of what it answered (a record's ``id`` or ``type``) is its answer, and a wrong one is wrong.
        return same_output(_answered(step), _answered(twin))


class ExpectationOracle:
    """The in-process checks registered for step names, run on a step's recorded output.

    A check returns True (as expected), False (not), None (cannot tell); an
    `AssertionError` it raises is False with its message as the reason.  A check
    may take the step's input too (a relative check: the output judged against
    what the step was given).  Either kind is two-valued: a failing relative
    check says the output does not fit the *recorded* input, not that the input
    was right (a precondition broken upstream fails every postcondition), nor
    anything of an input the recording missed, so it vouches for no input.
    """

    def __init__(self, checks: Mapping[str, Callable[..., Any]]) -> None:
        self.checks = dict(checks)
        self.by = "check:expect"

    def __call__(self, step: Step, run: Run) -> Answer | None:
        check = self.checks.get(step.name)
        if check is None:
            return None
        by = f"check:{step.name}"
        try:
            verdict = check(step.output, step.input) if _takes_input(check) else check(step.output)
        except AssertionError as e:
            return Answer(step.step_id, False, by, time.time_ns(), str(e) or "expectation failed")
        if verdict is None:
            return Answer(step.step_id, None, by, time.time_ns())
        return Answer(step.step_id, bool(verdict), by, time.time_ns())

    def covers(self, run: Run) -> bool:
        """True when some step of the run has a check."""
        return any(s.name in self.checks for s in run.steps)


def _takes_input(check: Callable[..., Any]) -> bool:
    """True when a check takes two positional arguments: the output, then the step's recorded input."""
    import inspect

    try:
        params = list(inspect.signature(check).parameters.values())
    except (TypeError, ValueError):
        return False  # a builtin or C callable: called with the output alone
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2


__all__ = ["Caller", "ExpectationOracle", "ReferenceOracle", "ask", "effect", "occurrences", "oracle_name", "same_output"]
