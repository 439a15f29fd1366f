"""Diagnosers: is this step's output wrong, and why do we think so?

A diagnoser is a plain callable ``(step, ctx) -> Iterable[Evidence]``.  Each
piece of evidence carries a suspicion contribution in [0, 1] and a reason a
person can read; ``sound=True`` evidence says an aspect of the step checked
out.  Diagnosers are rules, not oracles: they rank, they do not prove.

`DiagnoseContext.verdict` folds the evidence of a step into one local
suspicion (a noisy-OR of the contributions, damped when some aspect checked
out) and a faulty / sound call at `FAULTY_THRESHOLD`.  That call is what the
localizer's stopping rule uses: a step diagnosed faulty whose inputs are all
diagnosed sound is a root-cause candidate (Zeller, *Why Programs Fail*,
"Tracking Failure Origins").

The built-in diagnosers live in `trajdebug.analysis.diagnosers._steps`; more can be
registered under the entry-point group ``trajdebug.diagnosers``.  `DiagnoseContext.verdict` runs on a step
only the diagnosers whose declaration (`trajdebug.analysis.diagnosers._reads.Reads`) admits it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from trajdebug.analysis import _content as content
from trajdebug.analysis import _numerals as numerals
from trajdebug.analysis._evidence import FAULTY_THRESHOLD, Evidence, Verdict, fold
from trajdebug.analysis._sql import schema_from_metadata
from trajdebug.analysis.diagnosers._reads import DiagnoserIndex
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.core.graph import DependencyGraph
from trajdebug.core.model import Run, Step
from trajdebug.core.values import SUMMARY_KEY, is_mapping


if TYPE_CHECKING:
    from trajdebug.analysis._detect import Failure


class Diagnoser(Protocol):
    """A step diagnoser: a plain callable."""

    def __call__(self, step: Step, ctx: DiagnoseContext, /) -> Iterable[Evidence]: ...


INPUT_TEXT_KEPT = 16_384
"""The longest input text kept for the whole diagnosis (characters).  A chat model's prompt holds the
conversation so far, up to the recorder's truncation each: keeping every prompt's text would double a chat
run's memory, so only the last long one read is kept (its own step's diagnosers read it one after another),
and a long one is built again when read after another (an enclosing step, a state reader, a lookup's
input); most inputs are short and read by many steps."""

SUMMARY_SAFE: frozenset[str] = frozenset({"step-error", "contract", "external-input", "race", "retry-divergence"})
"""Diagnosers that read no content (statuses, errors, timing, state keys, equality of outputs), so they also
judge steps recorded in summary mode (`trajdebug.record.summary`); the others step aside on such steps.
A plugin diagnoser that reads summaries says so with an attribute ``reads_summaries = True``."""


def _summarized(value: Any) -> bool:
    # A summary's first key is the marker (`trajdebug.core.values.SUMMARY_KEY`).
    return is_mapping(value) and bool(value) and next(iter(value)) == SUMMARY_KEY


@dataclass(slots=True)
class DiagnoseContext:
    """What diagnosers share: the run, its graph, the SQL schema, caches.

    Args:
        run: The run.
        graph: Its dependency graph.
        diagnosers: The diagnosers to run (`trajdebug.analysis.diagnosers.registered_diagnosers`).
        sql_schema: DDL of the SQLite database the run's SQL targets.
        extra: Evidence found elsewhere (failures, the error lifecycle), by step id.
        failures: The run's failures (diagnosers trace the values they name).
    """

    run: Run
    graph: DependencyGraph
    diagnosers: Sequence[tuple[str, Diagnoser]] = ()
    sql_schema: str | None = None
    sql_db: str | None = None
    """The SQLite file the run's SQL targets, when the user named it (queries are re-run read-only)."""
    extra: Mapping[str, Sequence[Evidence]] = field(default_factory=dict)
    failures: Sequence[Failure] = ()
    diagnosed: int = 0
    """How many steps have been diagnosed so far (each counted once)."""
    lineage: Any = None
    """The run's value lineage (`trajdebug.analysis.lineage.Lineage`), when the localizer built one."""
    lexicon: Lexicon = ENGLISH
    """The words and phrases the diagnosers read (`trajdebug.analysis.lexicon`)."""
    contrast: Any = None
    """The agent's passing runs, to weigh findings they show as often at nothing
    (`trajdebug.analysis.reference.Contrast`), when the analysis has references."""
    _verdicts: dict[str, Verdict] = field(default_factory=dict)
    _texts: dict[str, str] = field(default_factory=dict)
    _flags: dict[str, bool] = field(default_factory=dict)
    _values: list[tuple[str, bool, str]] | None = None
    _errored_consumers: dict[str, list[tuple[str, Any]]] | None = None
    _memo: dict[str, Any] = field(default_factory=dict)
    _step_facts: dict[str, tuple[Step, Any]] = field(default_factory=dict)
    _index: DiagnoserIndex | None = None

    @classmethod
    def build(
        cls,
        run: Run,
        graph: DependencyGraph | None = None,
        *,
        diagnosers: Mapping[str, Diagnoser] | Sequence[Diagnoser] | None = None,
        sql_schema: str | None = None,
        sql_db: str | None = None,
        extra: Iterable[Evidence] = (),
        failures: Sequence[Failure] = (),
        lexicon: Lexicon = ENGLISH,
    ) -> DiagnoseContext:
        """Prepare a context (the graph is built when not given)."""
        g = graph if graph is not None else DependencyGraph(run)
        if diagnosers is None:
            chosen = []
        elif isinstance(diagnosers, Mapping):
            chosen = list(diagnosers.items())
        else:
            chosen = [(getattr(d, "__name__", type(d).__name__), d) for d in diagnosers]
        by_step: dict[str, list[Evidence]] = {}
        for e in extra:
            by_step.setdefault(e.step_id, []).append(e)
        schema = sql_schema or schema_from_metadata(run.metadata)
        return cls(run, g, chosen, schema, sql_db, by_step, tuple(failures), lexicon=lexicon)

    def step(self, step_id: str) -> Step:
        """The step with this id."""
        return self.graph.steps[step_id]

    def verdict(self, step_id: str) -> Verdict:
        """Diagnose a step (once; later calls return the cached verdict)."""
        v = self._verdicts.get(step_id)
        if v is None:
            self.diagnosed += 1
            step = self.graph.steps[step_id]
            found: list[Evidence] = []
            # (`rules`, read in place: its generator was resumed once per rule of every step of the run.)
            attributes = step.attributes
            summarized = _summarized(step.input) or _summarized(step.output)
            for name, fn, attribute in self._rule_index().for_step(step, summarized):
                if attribute is not None and attribute not in attributes:
                    continue
                for e in fn(step, self):
                    found.append(e if e.diagnoser else _named(e, name))
            if self.contrast is not None and found:
                found = self.contrast.apply(step, found, self.graph.steps)
            v = self._verdicts[step_id] = fold(step_id, [*self.extra.get(step_id, ()), *found])
        return v

    def rules(self, step: Step, *, summarized: bool = False) -> Iterator[tuple[str, Diagnoser]]:
        """The diagnosers that can fire on a step, in order: those whose declaration (`Reads`) excludes it are
        left out, and with ``summarized`` (the step was recorded in summary mode) those that read content."""
        for name, fn, attribute in self._rule_index().for_step(step, summarized):
            if attribute is None or attribute in step.attributes:
                yield name, fn

    def _rule_index(self) -> DiagnoserIndex:
        """The diagnosers indexed by what they read, built on first use (`rules` and the verdict loop read it)."""
        if self._index is None:
            self._index = DiagnoserIndex(self.diagnosers, self, SUMMARY_SAFE)
        return self._index

    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """A run-wide fact computed once and shared by the diagnosers (``compute()`` on first use)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def failure_words(self) -> frozenset[str]:
        """The whole words of the run's failure messages (lower case, singular, three letters or more), function
        words left out: a word is matched whole, never inside another (``was`` is no part of ``washer``)."""

        def words() -> frozenset[str]:
            lex = self.lexicon
            common = lex.stopwords | lex.short_stopwords
            said = " ".join(f.message for f in self.failures).casefold()
            return frozenset(lex.singular(w) for w in _MESSAGE_WORD.findall(said) if len(w) >= 3 and w not in common)

        found: frozenset[str] = self.memo("failure-words", words)
        return found

    def step_fact(self, step: Step, key: str, compute: Callable[[], Any]) -> Any:
        """A fact about one step that several diagnosers read (its arguments parsed, its answer's records),
        computed once for them all: a step's diagnosers run one after another, so the last step's facts are
        all that is kept (``compute()`` again for another step; the value must not be changed by its readers)."""
        hit = self._step_facts.get(key)
        if hit is not None and hit[0] is step:
            return hit[1]
        value = compute()
        self._step_facts[key] = (step, value)
        return value

    def children(self, step_id: str) -> list[Step]:
        """The steps whose parent is this step, in run order (`Run.children`, from an index made once per run)."""
        index: dict[str | None, list[Step]] = self.memo("children", lambda: _children_index(self.run))
        return index.get(step_id, [])

    def known(self, step_id: str) -> Verdict | None:
        """The verdict of a step if it has been diagnosed already (no new work)."""
        return self._verdicts.get(step_id)

    def has_state_edges(self) -> bool:
        """Whether any step of the run consumed shared state (lets diagnosers skip consumer lookups)."""
        f = self._flags.get("state")
        if f is None:
            f = self._flags["state"] = "state" in self.graph.edge_kinds()
        return f

    def has_errors(self) -> bool:
        """Whether any step of the run ended with an error."""
        f = self._flags.get("errors")
        if f is None:
            f = self._flags["errors"] = any(s.status == "error" for s in self.run.steps)
        return f

    def errored_consumers(self, step_id: str) -> list[tuple[str, Any]]:
        """The consumers of a step that ended with an error, as ``(consumer_id, edge)``.

        Indexed from the errored steps alone, so a run with few errors never
        pays for the full children map.
        """
        if self._errored_consumers is None:
            idx: dict[str, list[tuple[str, Any]]] = {}
            for s in self.run.steps:
                if s.status == "error":
                    for d in self.graph.parents(s.step_id):
                        idx.setdefault(d.step_id, []).append((s.step_id, d))
            self._errored_consumers = idx
        return self._errored_consumers.get(step_id, [])

    def recorded_edges(self) -> bool:
        """Whether the run's edges were recorded (tracked or declared), not only inferred.

        A declared ``state`` edge (a graph's channel: which key a step read, from which writer) is not counted:
        it says which state a step read, not where each of its values came from, so the run's values were
        not tracked by it.
        """
        f = self._flags.get("recorded")
        if f is None:
            f = self._flags["recorded"] = any(
                d.origin != "inferred" and not (d.kind == "state" and d.origin == "declared")
                for s in self.run.steps
                for d in s.deps
            )
        return f

    def failure_values(self) -> list[tuple[str, bool, str]]:
        """The values the failures name, as ``(value, quoted, where)``.

        Quoted values (``KeyError: '2025-Q2'``) and the words of a failure message
        that also occur in the run's task (``"does not answer with revenue"``):
        what the failure misses, to be traced back to where it was lost.
        """
        if self._values is None:
            self._values = _failure_values(self.run, self.failures, self.graph.steps, lexicon=self.lexicon)
        return self._values

    def has_checks(self) -> bool:
        """Whether any step of the run recorded contract checks."""
        f = self._flags.get("checks")
        if f is None:
            f = self._flags["checks"] = any("checks" in s.attributes for s in self.run.steps)
        return f

    def cut_short(self, step: Step) -> bool:
        """Whether the run's failure interrupted this step (`trajdebug.analysis._failures.cut_short`)."""
        from trajdebug.analysis._failures import cut_short

        return cut_short(step, self.graph.steps, self.failures)

    def text(self, step_id: str) -> str:
        """A step's output as lower-case text (cached)."""
        t = self._texts.get(step_id)
        if t is None:
            t = self._texts[step_id] = content.text_of(self.graph.steps[step_id].output).lower()
        return t

    def written_text(self, step_id: str, key: str) -> str:
        """What a step wrote to a shared-state key, as lower-case text (cached; empty when no value was
        recorded): a reader given a ``state`` edge took that value, not the writer's return value (often None)."""
        cache = "\0st:" + step_id + "\0" + key
        t = self._texts.get(cache)
        if t is None:
            vals = self.graph.steps[step_id].attributes.get("state_values")
            found = vals.get(key) if isinstance(vals, Mapping) else None
            t = self._texts[cache] = "" if found is None else content.text_of(found).lower()
        return t

    def input_text(self, step: Step) -> str:
        """A step's input as lower-case text, the recorder's markers left out (cached): what a step was given."""
        key = "\0in:" + step.step_id
        t = self._texts.get(key)
        if t is None:
            last = self._step_facts.get("\0in")
            if last is not None and last[0] is step:
                return str(last[1])
            t = content.unmarked_text(step.input).lower()
            if len(t) <= INPUT_TEXT_KEPT:
                self._texts[key] = t
            else:  # kept until another long input is read
                self._step_facts["\0in"] = (step, t)
        return t

    def upstream_text(self, step: Step, *, own_input: bool = True) -> str:
        """Lower-case text of what a step could have taken its values from (`upstream_parts`, one a line): kept
        for the step's other diagnosers, which read it too."""
        key = "\0up-text" if own_input else "\0up-text-given"
        text: str = self.step_fact(step, key, lambda: "\n".join(self.upstream_parts(step, own_input=own_input)))
        return text

    def upstream_forms(self, step: Step, *, own_input: bool = True) -> set[str]:
        """`numerals.number_forms` of `upstream_text`, read part by part: a part is the output of a parent or the
        input of an enclosing step, read by many steps, and its numbers are found once per run.  The same set:
        no number spans the line between two parts, and a line's end bounds a number as the text's end does."""
        memo: dict[str, frozenset[str]] = self.memo("number-forms", dict)
        if len(memo) >= 1 << 14:  # (parts are the run's texts: a bound on a long run's all the same)
            memo.clear()
        out: set[str] = set()
        for part in self.upstream_parts(step, own_input=own_input):
            forms = memo.get(part)
            if forms is None:
                forms = frozenset(numerals.number_forms(part))
                if len(part) <= INPUT_TEXT_KEPT:  # (a longer one, a long prompt, is read by its own step alone)
                    memo[part] = forms
            out.update(forms)
        return out

    def upstream_parts(self, step: Step, *, own_input: bool = True) -> tuple[str, ...]:
        """The lower-case texts of what a step could have taken its values from.

        Its own input (optional), the outputs of the steps it depends on, and the
        run's task metadata, and the inputs of the steps enclosing it.  Also the outputs of the steps that ran just before it:
        up to 200 for an LLM step whose prompt was not kept (a chat log: the model
        saw the conversation so far), up to 20 for a step with no edges at all in a
        run without recorded edges (an imported trace).
        """
        parts: list[str] = []
        if own_input:
            # (A repr marker snapshots an object as it was at the step's end: not an input.)
            parts.append(self.input_text(step))
        parents = self.graph.parents(step.step_id)
        for d in parents:
            parts.append(self.text(d.step_id))
            if d.kind == "state" and d.key:
                parts.append(self.written_text(d.step_id, d.key))
        window = 0
        if step.kind == "llm" and step.input is None:
            # The prompt was not kept (a chat log): the model saw the conversation so far.
            window = 200
        elif not parents and not step.deps and not self.recorded_edges():
            window = 20
        if window:
            pos = self.graph.position(step.step_id)
            for s in self.run.steps[max(0, pos - window) : pos]:
                if s.kind != "agent":
                    parts.append(self.text(s.step_id))
        # What an enclosing step (an agent, a request handler) was given, everything inside it
        # was given: its client id, its date, its request.
        parent, hops = step.parent_id, 0
        while parent is not None and hops < 32:
            outer = self.graph.steps.get(parent)
            if outer is None:
                break
            parts.append(self.input_text(outer))
            parent, hops = outer.parent_id, hops + 1
        # (The run's task is the same for every step: written out once.)
        parts.extend(self.memo("task-texts", self._task_texts))
        return tuple(parts)

    def _task_texts(self) -> tuple[str, ...]:
        meta = self.run.metadata
        return tuple(content.text_of(meta[k]).lower() for k in ("task", "input", "question", "instruction") if k in meta)


_QUOTED = re.compile(r"'([^'\n]{2,80})'|\"([^\"\n]{2,80})\"")
_WORD = re.compile(r"[a-z][a-z0-9_-]{3,}")

_MESSAGE_WORD = re.compile(r"[^\W\d_]\w*")
"""A word of a failure's message (`DiagnoseContext.failure_words`)."""


def _failure_values(
    run: Run, failures: Sequence[Failure], steps: Mapping[str, Step], *, lexicon: Lexicon = ENGLISH
) -> list[tuple[str, bool, str]]:
    task = " ".join(
        content.text_of(run.metadata[k]).lower()
        for k in ("task", "question", "input", "instruction")
        if k in run.metadata
    )
    task_words = set(_WORD.findall(task))
    out: dict[str, tuple[str, bool, str]] = {}
    for f in failures:
        where = steps[f.step_id].name if f.step_id in steps else f.step_id
        given = content.text_of(steps[f.step_id].input).lower() if f.step_id in steps else ""
        for m in _QUOTED.finditer(f.message):
            v = (m.group(1) or m.group(2) or "").strip()
            if given and v.lower() in given:
                continue  # the failing step had it: the failure names it, it does not miss it
            if v and v.lower() not in out:
                out[v.lower()] = (v, True, where)
        for w in _WORD.findall(f.message.lower()):
            if w in task_words and w not in lexicon.stopwords and w not in out:
                out[w] = (w, False, where)
    return list(out.values())


def _children_index(run: Run) -> dict[str | None, list[Step]]:
    index: dict[str | None, list[Step]] = {}
    for s in run.steps:
        index.setdefault(s.parent_id, []).append(s)
    return index


def _named(e: Evidence, name: str) -> Evidence:
    return Evidence(e.step_id, e.suspicion, e.reason, name, e.sound, e.correction, e.values, own=e.own)


__all__ = [
    "FAULTY_THRESHOLD",
    "DiagnoseContext",
    "Diagnoser",
    "Evidence",
    "Verdict",
    "fold",
]
