"""Root-cause localization: every step on the failure's backward slice, ranked by its evidence.

The search space is the dynamic slice of the failing steps (Korel & Laski
1988; Agrawal & Horgan 1990) over every kind of edge the run has: recorded,
declared, inferred from content, and the value edges of the run's lineage.
Every step in it is ranked; evidence reorders the slice, it never gates it,
so a silent fault with no local sign is still in the ranking.  Steps that ran
before the failure but that no edge connects to it are ranked after, weakly
(edges are often missing in foreign traces).

A step's score is its structural prior times its evidence:

- **prior**: what kind of step it is (a step that computes or fetches a value
  ahead of an enclosing agent span or the run's input) and how many
  dependencies separate it from the failure (a mild decay, thin slicing as
  weights: Sridharan, Fink & Bodík, PLDI 2007);
- **evidence**, folded by noisy-OR (`trajdebug.analysis._evidence.fold`):
  the failure's **value lineage** (the step that introduced a value the failure
  names or was given, or dropped one it expects; a step that only computed it
  from its inputs passes the blame to its operands: Zeller's stopping rule,
  "faulty, with correct origins"); **local anomalies** of the step's
  transformation (a conflicting field, a damaged number, a dropped column, an
  ungrounded argument); **reference** deviations from the agent's passing
  runs (likely invariants, Ernst et al. 2001; the earliest violation first,
  Sahoo et al. 2013); the **diagnosers'** rules; the **error lifecycle**.

A step that raised because of what it was given (its error names values of
its input) is the symptom: its own evidence is damped so the producer of those
values ranks above it.  A candidate is a structural root (``root=True``) when
its evidence makes it faulty and no step on its path to the failure has
stronger evidence of its own.
"""

from __future__ import annotations

import math
import re
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis._detect import Failure
from trajdebug.analysis._evidence import Evidence, Verdict, fold
from trajdebug.analysis._graph import CHILD_KEY, DependencyGraph
from trajdebug.analysis.diagnosers import (
    STOPWORDS,
    DiagnoseContext,
    Diagnoser,
    environmental,
    is_check,
    registered_diagnosers,
)
from trajdebug.analysis.diagnosers import WORD as _WORD
from trajdebug.analysis.lineage import GENERIC_FIELDS, PROTOCOL_FIELDS, Lineage, anomalies, derivation, slips
from trajdebug.analysis.reference import Profile, producers_of, sibling_profiles, step_key, unseen, violations
from trajdebug.model import BOUNDARY_KINDS, CONTAINER_KINDS, VALUE_DEP_KINDS, Dependency, Run, Step
from trajdebug.values import Atom, Mention, atoms, iter_text, mentions


DEFAULT_WEIGHTS: dict[str, float] = {
    "data": 1.0,  # blame carried per edge kind (thin slicing as weights)
    "state": 0.8,
    "control": 0.5,
    "context": 0.35,
    "env": 0.25,
    "child": 0.9,  # implicit child -> enclosing-step edges
    "hop": 0.95,  # decay per edge, whatever its kind
    "absorb": 0.8,  # share of its blame a faulty-looking step keeps (explaining away)
    "proximity": 0.3,  # exponent of blame in the score: 1 favours steps near the failure, 0 ignores distance
    "focus": 1.3,  # boost of steps producing what failed (JSON for a JSON failure, SQL for SQL)
    "prune": 0.5,  # how much verified-good consumers exonerate a step (Zhang, Gupta & Gupta, PLDI 2006)
    "min_confidence": 0.5,  # edges below this do not keep a step from being a root
    "detached": 0.2,  # reach of a step before the failure that no edge connects to it
    "base": 0.4,  # share of the score a step with no evidence keeps (so blame orders steps with none)
    "symptom": 0.3,  # share of its own evidence a step keeps when it raised on what it was given
    "symptom_rank": 0.6,  # and of its reach: the failure shows there, its cause lies upstream
    "thin": 0.3,  # boost of a step on the failure's thin slice (the origin of a value the failure involves)
    "origin": 1.0,  # thin-slice strength: introduced a value the failure's message names
    "subject_id": 0.6,  # share of "origin" for an id a failure names beside numbers or dates (what it checked)
    "origin_arg": 0.4,  # thin-slice strength: introduced a value the failing step was given
    "elsewhere": 0.6,  # share of its score a step keeps when it was about another listed item than the failure
    "origin_spoken": 0.25,  # thin-slice strength: introduced a value of a field the failure's message speaks of
    "origin_named_arg": 0.7,  # and the failure's message speaks of that value's field
    "dropped": 0.45,  # was given a value the failure expects and did not pass it on
    "dropped_reached": 0.6,  # share of that when the value still reached the failing step by another path
    "llm_dropped": 0.5,  # share of that for a model step
    "expected": 0.5,  # produced, in passing runs, a value the failure expects and no step here produced
    "contradicted": 0.5,  # introduced a number for a quantity the failure states another value of
    "whatif": 0.6,  # one numeric slip in its number turns the run's number into the one the failure expects
    "disagrees": 0.45,  # gave a value the failing check's own source contradicts (same field, same entity)
    "earliest": 1.15,  # boost of the earliest step on the slice that breaks a reference invariant
    "sibling": 0.6,  # weight of a deviation from the step's other calls in the same run (vs passing runs)
    "inherited": 0.5,  # share of a deviation a step keeps when its input already deviated upstream
}
"""Ranking weights; override any of them with ``localize(weights=...)``."""

KIND_PRIOR: dict[str, float] = {"agent": 0.5}
"""Prior of a step by kind (1 when not listed): an agent span is made of its children, which are ranked themselves."""

NAMING_FIELDS = GENERIC_FIELDS | {
    "agent",
    "agent_name",
    "tool_name",
    "function",
    "assignee",
    "owner",
    "to",
    "target",
}
"""Fields whose value names who acts or what is called: a choice of actor, not a value put in place of a task word."""

PROGRAMMING_ERRORS = frozenset(
    {
        "TypeError",
        "NameError",
        "AttributeError",
        "UnboundLocalError",
        "ImportError",
        "ModuleNotFoundError",
        "NotImplementedError",
        "SyntaxError",
        "ZeroDivisionError",
        "RecursionError",
        "IndexError",
    }
)
"""Exception types that say the raising code itself is wrong, rather than what it was given."""

FAILURE_SUSPICION: dict[str, float] = {
    "json": 0.45,
    "sql": 0.45,
    "http": 0.4,
    "empty": 0.4,
    "error-text": 0.45,
}
"""Suspicion a failure adds to the step where it shows, by detector (detectors that judge the step's own output)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A ranked root-cause candidate."""

    step_id: str
    """The step."""
    score: float
    """Ranking score (prior x evidence); comparable within one run."""
    reasons: tuple[str, ...]
    """Why it is suspected, strongest first."""
    path: tuple[str, ...]
    """The dependency path from this step to the failure it explains (step ids, root first)."""
    inferred: tuple[tuple[str, float], ...] = ()
    """Inferred edges the path hangs on, as ``(upstream step id, confidence)``."""
    root: bool = True
    """True when the step's evidence makes it faulty and nothing on its path to the failure is more so."""
    correction: Any = None
    """A suggested corrected output, when a diagnoser proposed one."""
    run_id: str | None = None
    """The run holding the step when it is not the analyzed run (an earlier conversation turn)."""
    signals: tuple[str, ...] = ()
    """The kinds of evidence behind it (``lineage:origin``, ``reference:ratio``, a diagnoser's name...)."""
    confidence: float | None = None
    """The learned ranker's calibrated probability that this is the root (None: the hand ranking alone)."""


@dataclass(frozen=True, slots=True)
class SearchStats:
    """What the localization cost."""

    steps: int
    """Steps in the run."""
    steps_examined: int
    """Steps ranked (each diagnosed once)."""
    seconds: float
    """Wall time of the localization."""
    references: int = 0
    """Passing runs of the agent the ranking compared with."""

    def to_dict(self) -> dict[str, Any]:
        """The stats as JSON data."""
        return {
            "steps": self.steps,
            "steps_examined": self.steps_examined,
            "seconds": round(self.seconds, 6),
            "references": self.references,
        }


@dataclass(frozen=True, slots=True)
class Localization:
    """The result of a localization method."""

    candidates: list[Candidate]
    """Ranked candidates, best first (at most ``top``)."""
    stats: SearchStats
    """Search statistics."""
    method: str = "trajdebug"
    """The method that produced it."""
    failures: tuple[Failure, ...] = field(default=())
    """The failures it started from."""
    ranking: tuple[str, ...] = ()
    """Every ranked step id, best first (the candidates are its head)."""


def _families(failures: Iterable[Failure]) -> set[str]:
    """What kind of output failed: JSON, SQL, an HTTP call, an empty result (focus the search on its producers)."""
    fam: set[str] = set()
    for f in failures:
        sig = f.signature.lower()
        if "json" in sig:
            fam.add("json")
        elif "sql" in sig or "operationalerror" in sig:
            fam.add("sql")
        elif "http" in sig:
            fam.add("http")
        elif sig == "empty":
            fam.add("empty")
    return fam


def _matches(step: Step, families: set[str]) -> bool:
    out = step.output
    if "json" in families and (
        step.attributes.get("expect") == "json" or (isinstance(out, str) and content.looks_like_json(out))
    ):
        return True
    if "sql" in families and content.sql_of(out) is not None:
        return True
    if "http" in families and step.kind in ("tool", "llm"):
        return True
    return "empty" in families and step.kind in ("retrieval", "tool", "parse")


def _verified_good(run: Run) -> set[str]:
    """Steps whose declared checks all passed (their outputs are verified good)."""
    good: set[str] = set()
    for s in run.steps:
        checks = s.attributes.get("checks")
        if (
            isinstance(checks, list)
            and checks
            and all(isinstance(c, Mapping) and c.get("passed") is True for c in checks)
        ):
            good.add(s.step_id)
    return good


_NUM = r"(\d[\d,]*(?:\.\d+)?)"
_RANGE = re.compile(
    rf"(?<![\w.-]){_NUM}\s*[-–]\s*{_NUM}(?![\w.]|-\d)|\bbetween\s+{_NUM}\s+and\s+{_NUM}(?![\w.])", re.I
)
"""A range of numbers in a message ("300-900", "between 5 and 10", *English*): the bounds of a check.
"From 40 to 400" is a change, not a range."""

_TERM = re.compile(r"[a-z][a-z0-9]{2,}")
"""A word of a field name or of a message that may name one (``bin``, ``qty``, ``fee``: three letters or more)."""

_SHORT_STOPWORDS = frozenset(
    ["the", "and", "not", "new", "all", "any", "for", "but", "are", "was", "has", "had", "its", "out", "one", "can", "our", "you", "per", "via", "off", "too", "yet", "nor", "own", "who", "why", "how", "may", "did", "got", "let", "use"]
)
"""Three-letter English function words (*English*), which `STOPWORDS` (four letters and up) leaves in."""


def _terms(text: str) -> set[str]:
    """The words of a text that may name a field or a label: `_TERM`, function words left out, a plural's
    ``s`` cut (*English*)."""
    return {
        w.rstrip("s") for w in _TERM.findall(text.lower()) if w not in STOPWORDS and w not in _SHORT_STOPWORDS
    }


def _trivial_number(a: Atom) -> bool:
    """A small count without a name (1 to 10): too common to say what is wrong."""
    return a.kind == "number" and a.number is not None and a.field is None and a.unit is None and a.number == int(a.number) and -10 <= a.number <= 10


def _field_words(field: str) -> list[str]:
    """The words of a field name (``paid_days_left`` -> paid, days, left), English stop words left out."""
    words = _TERM.findall(field.lower().replace("_", " "))
    return [w for w in words if w not in STOPWORDS and w not in _SHORT_STOPWORDS] or ["\0"]


def _short(x: float) -> str:
    """A number as a reason shows it (four significant digits)."""
    return f"{x:.4g}"


def _written_as(x: float, m: Mention) -> bool:
    """Whether a number is the one a text mentions, as written there (rounded to its digits; a percent as a share)."""
    raw = m.raw.strip().rstrip("%")
    decimals = len(raw.rsplit(".", 1)[1]) if "." in raw else 0
    tol = 0.5 * 10.0**-decimals + 1e-9
    if abs(x - m.value) <= tol:
        return True
    return m.unit == "%" and abs(x * 100 - m.value) <= tol


def _shape(raw: str) -> str:
    """The shape of an identifier or a date: its letters as ``A``, its digits as ``9``."""
    return re.sub(r"[A-Za-z]", "A", re.sub(r"\d", "9", raw.strip()))


def _conversation(step: Step) -> bool:
    """Whether a step is a model call given a conversation (more than three messages) rather than one request."""
    if step.kind != "llm":
        return False
    msgs = step.input.get("messages") if isinstance(step.input, Mapping) else None
    return isinstance(msgs, list) and len(msgs) > 3


def _strongest(evidence: Iterable[Evidence]) -> list[Evidence]:
    """One piece of evidence per signal: the strongest, a little stronger for each further finding (at most +0.1).

    Many values traced to one step say one thing many times: counting each would
    let a step that handled many values outrank one that damaged a single one.
    """
    best: dict[tuple[str, bool], Evidence] = {}
    count: dict[tuple[str, bool], int] = {}
    for e in evidence:
        k = (e.diagnoser, e.sound)
        count[k] = count.get(k, 0) + 1
        if k not in best or e.suspicion > best[k].suspicion:
            best[k] = e
    out = []
    for k, e in best.items():
        n = count[k]
        if n > 1 and not e.sound and e.suspicion > 0:
            e = Evidence(
                e.step_id,
                min(1.0, e.suspicion + min(0.1, 0.03 * (n - 1))),
                e.reason,
                e.diagnoser,
                e.sound,
                e.correction,
            )
        out.append(e)
    return out


def failure_evidence(failures: Iterable[Failure]) -> list[Evidence]:
    """The evidence failures add to the steps where they show."""
    out = []
    for f in failures:
        s = FAILURE_SUSPICION.get(f.detector)
        if s is not None and f.detector == "empty" and f.where == "checkpoint":
            s = 0.15  # an empty tool result says more about the question asked than about the tool
        if s is not None and f.where != "pre":  # a failure in a step's input is not the step's own
            out.append(Evidence(f.step_id, s, f"failure here: {f.message[:160]}", f"failure:{f.detector}"))
    return out


def localize(
    run: Run,
    *,
    failures: Sequence[Failure] | None = None,
    top: int = 5,
    weights: Mapping[str, float] | None = None,
    graph: DependencyGraph | None = None,
    diagnosers: Mapping[str, Diagnoser] | Sequence[Diagnoser] | None = None,
    extra_evidence: Iterable[Evidence] = (),
    sql_schema: str | None = None,
    sql_db: str | None = None,
    budget: int | None = None,
    lineage: Lineage | None = None,
    profile: Profile | None = None,
) -> Localization:
    """Rank the steps most likely to be the root cause of a run's failures.

    Args:
        run: The run.
        failures: Where the run failed (None: run the detectors).
        top: How many candidates to return.
        weights: Overrides of `DEFAULT_WEIGHTS`.
        graph: The run's dependency graph, if already built.
        diagnosers: The diagnosers (None: built-in and registered).
        extra_evidence: Evidence found elsewhere (e.g. error-lifecycle origins).
        sql_schema: DDL of the SQLite database the run's SQL targets.
        sql_db: The SQLite file the run's SQL targets (read-only re-runs of its queries).
        budget: Rank at most this many steps (the nearest to the failure first).
        lineage: The run's value lineage, if already built.
        profile: Likely invariants learned from the agent's passing runs.

    Returns:
        The candidates, best first, the full ranking and statistics.  No failures: no candidates.
    """
    t0 = time.perf_counter()
    g = graph if graph is not None else DependencyGraph(run)
    if failures is None:
        from trajdebug.analysis._detect import detect

        failures = detect(run, sql_schema=sql_schema)
    fails = tuple(f for f in failures if f.step_id in g)
    w = {**DEFAULT_WEIGHTS, **(weights or {})}
    lin = lineage if lineage is not None else Lineage(run)
    ctx = DiagnoseContext.build(
        run,
        g,
        diagnosers=registered_diagnosers() if diagnosers is None else diagnosers,
        sql_schema=sql_schema,
        sql_db=sql_db,
        extra=[*failure_evidence(fails), *extra_evidence],
        failures=fails,
    )
    ctx.lineage = lin
    if not fails:
        return Localization([], SearchStats(len(run.steps), 0, time.perf_counter() - t0), "trajdebug", fails)
    r = _Ranker(run, g, ctx, lin, profile, fails, w)
    ranked = r.rank(budget)
    cands = [r.candidate(sid) for sid in ranked[: max(top, 1)]]
    stats = SearchStats(
        len(run.steps), len(ranked), time.perf_counter() - t0, len(profile.runs) if profile else 0
    )
    return Localization(cands, stats, "trajdebug", fails, tuple(ranked))


class _Ranker:
    """State of one ranking (kept apart so `localize` reads as the algorithm)."""

    def __init__(
        self,
        run: Run,
        g: DependencyGraph,
        ctx: DiagnoseContext,
        lin: Lineage,
        profile: Profile | None,
        failures: Sequence[Failure],
        w: Mapping[str, float],
    ) -> None:
        self.run, self.g, self.ctx, self.lin, self.profile, self.w = run, g, ctx, lin, profile, w
        self.failures = failures
        self.fail_ids = list(dict.fromkeys(f.step_id for f in failures))
        self.dist: dict[str, int] = {}
        self.via: dict[str, tuple[str, Dependency]] = {}
        self.extra: dict[str, list[Evidence]] = {}
        self.verdicts: dict[str, Verdict] = {}
        self.scores: dict[str, float] = {}
        self.has_children = {s.parent_id for s in run.steps if s.parent_id is not None}
        self.blame: dict[str, float] = {}
        self.best_in: dict[str, float] = {}
        self.roots: set[str] = set()
        self.upstream: dict[str, str] = {}
        self.families = _families(failures)
        self.thin: dict[str, tuple[float, str]] = {}
        self.symptoms: set[str] = set()
        self.elsewhere: dict[str, str] = {}
        self.good = _verified_good(run)

    # -- the slice ----------------------------------------------------------------

    def slice(self) -> None:
        """Hop distances from the failures, backward over every edge (BFS), with the edge taken."""
        q: deque[str] = deque()
        for sid in self.fail_ids:
            self.dist[sid] = 0
            q.append(sid)
        while q:
            sid = q.popleft()
            for d in self.g.parents(sid):
                p = d.step_id
                if p not in self.dist:
                    self.dist[p] = self.dist[sid] + 1
                    q.append(p)

    def detached(self) -> list[str]:
        """Steps that started before the last failure but that no edge connects to it."""
        last = max(self.g.position(s) for s in self.fail_ids)
        return [s.step_id for s in self.run.steps[:last] if s.step_id not in self.dist]

    # -- evidence -----------------------------------------------------------------

    def add(self, e: Evidence) -> None:
        self.extra.setdefault(e.step_id, []).append(e)

    def lineage_evidence(self) -> None:
        """The failure's values, traced to the steps that introduced or dropped them."""
        within = set(self.dist)
        for f in self.failures:
            step = self.g.steps[f.step_id]
            pos = self.g.position(f.step_id)
            view = self.lin.view(f.step_id)
            message = f.message if f.message else (step.error.message if step.error else "")
            named = [a for a in atoms(message) if not (a.kind == "text" and len(a.raw) <= 2)]
            seen: set[str] = set()
            # An enclosing step (an agent, a request handler) fails with what a step inside it
            # raised: a value that reached that inner failing step reached the failure.
            inner = [self.lin.view(g.step_id) for g in self.failures if self._inside(g.step_id, f.step_id)]
            bounds = {float(x.replace(",", "")) for m in _RANGE.finditer(message) for x in m.groups() if x}
            quantities = any(a.kind in ("number", "date") and not _trivial_number(a) for a in named)
            for a in named:
                if a.key in seen:
                    continue
                seen.add(a.key)
                # A range the failure checks against ("300-900 kcal") is a limit: traced like any
                # value it names, never a value some step should have passed on.
                limit = a.kind == "number" and a.number in bounds
                reached = view.given(a) or view.holds(a)
                # A message naming an id beside numbers or dates ("reservation R-1 runs 3 to 7
                # June (4 nights)") names what it checked by the id and what is wrong by the rest.
                strength = self.w["origin"] * (self.w["subject_id"] if a.kind == "id" and quantities else 1.0)
                if not reached and any(v.given(a) for v in inner):
                    # It reached the inner step that raised: that failure's own reading
                    # covers the value (nothing on the way to it lost it).
                    self._trace(a, pos, within, strength, f"the failure at {step.name} names")
                    continue
                if reached or self.lin.holders(a.key, pos):
                    self._trace(a, pos, within, strength, f"the failure at {step.name} names")
                if (a.kind == "number" and reached) or limit:
                    continue
                # Not given to the failing step (or, when given, perhaps lost on another path to it):
                # the steps that were given it and did not pass it on.
                self._dropped(a, pos, within, step.name, named, self.w["dropped_reached"] if reached else 1.0)
                if not reached:
                    self._expected(a, pos, within, step.name)
            self._contradicted(message, pos, within, step.name)
            self._whatif(message, named, pos, within, step.name)
            self._disagreeing_sources(f.step_id, message, pos, within, step.name)
            for a in self._task_words(message):
                # A word of the user's request that the failure says is missing: who was
                # given it and did not carry it on (a plan, a query, a model's reading).
                if a.key not in seen:
                    # (The failing step may hold the task itself, to check against it: that is
                    # no path by which the word reached it.)
                    seen.add(a.key)
                    self._dropped(a, pos, within, step.name, named, task_word=True)
            args = [a for a in view.inputs if a.key not in seen and a.field not in PROTOCOL_FIELDS][:60]
            # An argument whose field the message speaks of ("the estimated saving is
            # implausible" for est_monthly_savings_usd) is the one the failure is about.
            said = _terms(message)
            self._spoken_fields(said, pos, within, step.name)
            self._spoken_labels(message, pos, within, step.name)
            for a in args:
                seen.add(a.key)
                spoken = a.field is not None and any(w.rstrip("s") in said for w in _field_words(a.field))
                self._trace(
                    a,
                    pos,
                    within,
                    self.w["origin_named_arg" if spoken else "origin_arg"],
                    f"{step.name}, where the run failed, was given"
                    + (" (the failure speaks of its field)" if spoken else ""),
                )

    def _spoken_fields(self, said: set[str], pos: int, within: set[str], where: str) -> None:
        """Steps that introduced the values of a field the failure speaks of ("a reservation points
        at a bin outside ..."): where those values came from is where to look, weakly, and more
        weakly the more steps wrote that field (a field everyone wrote says little)."""
        by_field: dict[str, dict[str, Atom]] = {}
        for sid in within:
            if self.g.position(sid) >= pos or self.g.steps[sid].kind in CONTAINER_KINDS:
                continue
            for a in self.lin.introduced(sid):
                if (
                    a.kind in ("id", "text")
                    and a.field
                    and a.field.lower() not in NAMING_FIELDS
                    and all(w.rstrip("s") in said for w in _field_words(a.field))
                ):
                    by_field.setdefault(a.field.lower(), {}).setdefault(sid, a)
        for steps in by_field.values():
            if len(steps) > 3:
                continue
            for sid, a in steps.items():
                self._mark(
                    sid,
                    self.w["origin_spoken"] / math.sqrt(len(steps)),
                    f"introduced {a.field}={a.raw}, a field the failure at {where} speaks of",
                )

    def _spoken_labels(self, message: str, pos: int, within: set[str], where: str) -> None:
        """The step that first stated a label the failure's message uses as a word ("no hardware
        fault found" after a model filed ``category=hardware``): the decision the failure speaks
        of.  A label is often one of the options a model was given, so the first step whose
        output states it is taken when it introduced it or is a model choosing it."""
        words = {w for w in _TERM.findall(message.lower()) if w not in STOPWORDS and w not in _SHORT_STOPWORDS}
        first: dict[str, tuple[int, str, Atom]] = {}
        for sid in within:
            p = self.g.position(sid)
            if p >= pos or self.g.steps[sid].kind in CONTAINER_KINDS:
                continue
            for a in self.lin.view(sid).outputs:
                label = a.raw.strip().casefold()
                if (
                    a.kind == "text"
                    and a.field
                    and a.field.lower() not in NAMING_FIELDS
                    and 3 <= len(label) <= 30
                    and label.isalpha()
                    and label in words
                    and (label not in first or p < first[label][0])
                ):
                    first[label] = (p, sid, a)
        for _, sid, a in first.values():
            view = self.lin.view(sid)
            if self.g.steps[sid].kind == "llm" or not view.given(a):
                self._mark(
                    sid,
                    self.w["origin_spoken"],
                    f"first stated {a.field}={a.raw}, a word the failure at {where} uses",
                )

    def _contradicted(self, message: str, pos: int, within: set[str], where: str) -> None:
        """Steps whose output a failure contradicts: it states another value for the quantity they named.

        An environment that refuses an action often says what is true ("has 2 days
        left", "the re-price says 111.08"): a number next to the words of a field
        some step introduced with another value (``paid_days_left=7``) points at
        that step (a stale cache, a wrong conversion), not at the steps that
        merely carried its value on.
        """
        nums = mentions(message, words=False)
        # Each word of the message belongs to the number nearest to it (a message may
        # state several quantities: "total 1,224 exceeds budget 1,200").
        near: dict[int, set[str]] = {}
        for w in _TERM.finditer(message.lower()):
            if nums:
                mid = (w.start() + w.end()) / 2
                i = min(range(len(nums)), key=lambda k: min(abs(mid - nums[k].start), abs(mid - nums[k].end)))
                if min(abs(mid - nums[i].start), abs(mid - nums[i].end)) <= 48:
                    near.setdefault(i, set()).add(w.group(0))
        for i, m in enumerate(nums):
            window = near.get(i, set())
            window |= {w[:-1] for w in window if w.endswith("s")}
            found: list[tuple[str, Atom]] = []
            held = False
            for sid in sorted(within, key=self.g.position):
                if self.g.position(sid) >= pos or self.g.steps[sid].kind in CONTAINER_KINDS:
                    continue
                view = self.lin.view(sid)
                named = [
                    a
                    for a in view.outputs
                    if a.kind == "number"
                    and a.number is not None
                    and a.field
                    and all(w in window or w.rstrip("s") in window for w in _field_words(a.field))
                ]
                if any(_written_as(a.number, m) for a in named if a.number is not None):
                    held = True  # the run had the value the failure states: it restates, not corrects
                    break
                named = [a for a in named if not view.given(a)]
                if len({a.key for a in named}) != 1:
                    continue  # none, or a table of them (which row the failure means is unknown)
                if any(_written_as(a.number, x) for a in named for x in nums if a.number is not None):
                    # The failure states this value too: it compares it with another
                    # (a limit, a second source), it does not correct it.
                    continue
                found.append((sid, named[0]))
            if held or not found or len(found) > 2:
                continue  # restated, no step, or a quantity too common to tell which step it means
            for sid, a in found:
                self.add(
                    Evidence(
                        sid,
                        self.w["contradicted"],
                        f"the failure at {where} says {m.raw.strip()} where it said {a.field}={a.raw}",
                        "lineage:contradicted",
                    )
                )

    def _whatif(self, message: str, named: Sequence[Atom], pos: int, within: set[str], where: str) -> None:
        """The one numeric slip upstream that turns the run's number into the one the failure expected."""
        fview = self.lin.view(self.run.steps[pos].step_id) if pos < len(self.run.steps) else None
        ours = [
            a
            for a in named
            if a.kind == "number"
            and a.number is not None
            and (self.lin.holders(a.key, pos) or (fview is not None and derivation(fview, a) is not None))
        ]
        if not ours:
            return
        for t in mentions(message, words=False):
            for a in ours:
                if a.number is None or _written_as(a.number, t):
                    continue  # the run's own number
                found = slips(self.lin, a, pos, t.value, t.raw, within)
                # (One slip repeated in every call of one step counts once.)
                ways = len({self.g.steps[sl.step_id].name for sl in found})
                if not found or ways > 3:
                    continue  # none, or too many ways to get there to say which
                for sl in found:
                    label = f"{sl.atom.field}={sl.atom.raw}" if sl.atom.field else sl.atom.raw
                    self.add(
                        Evidence(
                            sl.step_id,
                            self.w["whatif"] / ways**0.5,
                            f"its {label} looks {sl.what}: at {_short(sl.fixed)}, the run's {a.raw.strip()} "
                            f"would be the {t.raw.strip()} the failure at {where} expects",
                            "lineage:whatif",
                        )
                    )
                return

    def _disagreeing_sources(self, fid: str, message: str, pos: int, within: set[str], where: str) -> None:
        """Two sources giving the failing check different values of one field for one entity.

        A check that cross-checks what the run acted on against a source it
        consults for itself (a billing record, a re-price) fails when they
        disagree; the source the run acted on, not the check's own witness,
        is the suspect (a stale cache, a wrong lookup).
        """
        view = self.lin.view(fid)
        said = message.casefold()
        by_field: dict[str, dict[str, Atom]] = {}
        for a in view.inputs:
            if a.field and a.kind in ("text", "id", "date") and a.field not in NAMING_FIELDS:
                by_field.setdefault(a.field, {}).setdefault(a.key, a)
        for fld, vals in by_field.items():
            if len(vals) != 2 or not any(len(a.raw) >= 2 and a.raw.casefold() in said for a in vals.values()):
                continue  # not two values, or not what the check complains about
            origins = [self.lin.origin(a, pos, within) for a in vals.values()]
            if any(o.step_id is None for o in origins) or origins[0].step_id == origins[1].step_id:
                continue
            ids = [o.step_id for o in origins if o.step_id is not None]
            outs = [{b.key for b in self.lin.view(sid).outputs if b.kind == "id"} for sid in ids]
            if not outs[0] & outs[1]:
                continue  # not the same entity
            witness = [self._feeds_only(sid, fid) for sid in ids]
            if witness.count(True) != 1:
                continue
            acted, told = (0, 1) if witness[1] else (1, 0)
            self.add(
                Evidence(
                    ids[acted],
                    self.w["disagrees"],
                    f"says {fld}={origins[acted].atom.raw} where {self.g.steps[ids[told]].name}, "
                    f"which the check at {where} consulted, says {origins[told].atom.raw}",
                    "lineage:disagrees",
                )
            )

    def _feeds_only(self, sid: str, fid: str) -> bool:
        """Whether everything that consumed a step's output is the failing step (or encloses it)."""
        users = [c for c, _ in self.g.children(sid) if c != sid]
        return bool(users) and all(c == fid or self._inside(fid, c) for c in users)

    def _inside(self, sid: str, outer: str) -> bool:
        """Whether step `sid` runs inside step `outer` (a descendant in the step tree)."""
        seen = 0
        parent = self.g.steps[sid].parent_id
        while parent is not None and seen < 10_000:
            if parent == outer:
                return True
            step = self.g.steps.get(parent)
            parent = step.parent_id if step is not None else None
            seen += 1
        return False

    def _task_words(self, message: str) -> list[Atom]:
        """Words of a failure message that are words of the run's task, the user's request (English stop words left out)."""
        task = self._task_text()
        if not task:
            return []
        words = set(_WORD.findall(task))
        return [
            Atom("s:" + w, "text", None, None, w)
            for w in dict.fromkeys(_WORD.findall(message.lower()))
            if w in words and w not in STOPWORDS
        ]

    def _task_text(self) -> str:
        md = self.run.metadata
        parts = [
            str(md[k]) for k in ("task", "question", "input", "instruction") if isinstance(md.get(k), str)
        ]
        if not parts:
            first = next((s for s in self.run.steps if s.kind == "input"), None)
            if first is not None:
                parts.append(" ".join(iter_text(first.output if first.output is not None else first.input)))
        return " ".join(parts).lower()[:20_000]

    def _trace(self, a: Atom, pos: int, within: set[str], weight: float, what: str, depth: int = 0) -> None:
        """Mark the steps a failing value came from: its origin, or the origins of the numbers it was computed from.

        Lineage says where to look, not what is wrong: a step that introduced a
        value the failure involves joins the failure's thin slice (a boost of its
        score, `thin`), and its own evidence, or the agent's passing runs, say
        whether it erred.  A step that computed the value from its inputs passes
        the mark to its operands' origins.
        """
        o = self.lin.origin(a, pos, within)
        if o.step_id is None or depth > 2:
            return
        label = f"{a.field}={a.raw}" if a.field else repr(a.raw)
        items = self._total_of_own_items(o.step_id, o.atom) if not o.derived_from else []
        if items:
            # A total a step wrote beside the items it adds up (a day's log and its total):
            # the items came from elsewhere; where they came from is where to look.
            self._mark(o.step_id, weight * 0.4, f"totals {label}, which {what}, from the items it lists")
            opos = self.g.position(o.step_id)
            name = self.g.steps[o.step_id].name
            for op in items:
                self._trace(op, opos, within, weight * 0.85, f"{what} (through {name}'s total)", depth + 1)
            return
        if o.derived_from:
            self._mark(o.step_id, weight * 0.4, f"computed {label}, which {what}, from its inputs")
            opos = self.g.position(o.step_id)
            for op in o.derived_from:
                name = self.g.steps[o.step_id].name
                self._trace(op, opos, within, weight * 0.85, f"{what} (through {name})", depth + 1)
            return
        self._mark(o.step_id, weight * self.lin.rarity(a.key) ** 0.5, f"introduced {label}, which {what}")

    def _total_of_own_items(self, sid: str, total: Atom) -> list[Atom]:
        """The numbers of one field a step's output lists whose sum is another number of that output."""
        if total.kind != "number" or total.number is None:
            return []
        raw = total.raw.strip()
        tol = 0.5 * 10.0 ** -(len(raw.rsplit(".", 1)[1]) if "." in raw else 0) + 1e-9
        groups: dict[str, list[Atom]] = {}
        for b in self.lin.view(sid).outputs:
            if b.kind == "number" and b.number is not None and b.field and b.key != total.key:
                groups.setdefault(b.field, []).append(b)
        for name, parts in groups.items():
            if len(parts) >= 2 and name != total.field and abs(sum(p.number or 0.0 for p in parts) - total.number) <= tol * len(parts):
                return parts
        return []

    def _mark(self, sid: str, strength: float, reason: str) -> None:
        if strength > self.thin.get(sid, (0.0, ""))[0]:
            self.thin[sid] = (strength, reason)

    def _dropped(
        self,
        a: Atom,
        pos: int,
        within: set[str],
        where: str,
        named: Sequence[Atom],
        share: float = 1.0,
        *,
        task_word: bool = False,
    ) -> None:
        """Steps that were given a value the failure expects and did not pass it on (an omission).

        A step that passed on another value the failure names, which it was also
        given, chose between given values rather than lost one: weak evidence.
        """
        cands = [sid for sid in within if self.g.position(sid) < pos]
        if task_word:
            # A task word is traced only through a model that was given the task itself
            # (code reshapes data and drops words; a planner told the task must keep it).
            task = self._task_text()[:200]
            cands = [
                sid
                for sid in cands
                if self.g.steps[sid].kind == "llm" and task and task in self.lin.view(sid).in_text
            ]
        lost = self.lin.droppers(a, cands)
        if task_word and len(lost) > 2:
            # Every turn of a conversation is given the task and rewords it: a loss shared by
            # that many models tells none of them apart.
            return
        substitute: dict[str, Atom] = {}
        if a.kind in ("id", "date"):
            # A lookup is given a key (an id, a date) to find a record by: its answer need
            # not repeat the key, so not repeating it is no loss, unless the answer is about
            # another key of the same shape (another customer's record, another day's slots).
            keep = []
            for sid in lost:
                if self.g.steps[sid].kind != "tool":
                    keep.append(sid)
                    continue
                view = self.lin.view(sid)
                other = next(
                    (
                        b
                        for b in view.outputs
                        if b.kind == a.kind and _shape(b.raw) == _shape(a.raw) and not view.given(b)
                    ),
                    None,
                )
                if other is not None:
                    keep.append(sid)
                    substitute[sid] = other
            lost = keep
        for sid in lost[:4]:
            view = self.lin.view(sid)
            chose = next((b for b in named if b.key != a.key and view.given(b) and view.holds(b)), None)
            weight = share * self.w["dropped"]
            if chose is not None:
                weight *= 0.25
            reason = f"was given {a.raw!r}, which the failure at {where} expects, and did not pass it on"
            if sid in substitute:
                reason += f"; its answer is about {substitute[sid].raw!r} instead"
            if task_word:
                # A planner rephrases: losing a task word says little, unless it put a word of
                # its own in its place.
                instead = next(
                    (
                        b
                        for b in view.outputs
                        if b.kind == "text"
                        and b.field
                        and b.field not in NAMING_FIELDS
                        and b.raw.strip().isalpha()
                        and 3 <= len(b.raw.strip()) <= 20
                        and not view.given(b)
                    ),
                    None,
                )
                weight *= 0.9 if instead is not None else 0.25
                reason = f"was given {a.raw!r}, a word of the task the failure at {where} says is missing, and did not carry it on"
                if instead is not None:
                    reason += (
                        f"; it says {instead.field}={instead.raw!r} instead, a word none of its inputs has"
                    )
            elif _conversation(self.g.steps[sid]):
                # A model given a whole conversation passes on a small part of it by design:
                # losing one value says less than a parser, a tool, or a model given one
                # request (write this query from this plan) losing it.
                weight *= self.w["llm_dropped"]
            if chose is not None:
                reason += f" (it passed on {chose.raw!r}, also given: a choice between given values)"
            self.add(Evidence(sid, weight, reason, "lineage:dropped"))

    def _expected(self, a: Atom, pos: int, within: set[str], where: str) -> None:
        """A value the failure expects that no step of this run produced: who produces it in passing runs?

        When the agent's passing runs have a step whose output held the value
        (a category, an id, a date), that step, here, should have produced it.
        """
        if self.profile is None or a.kind == "number":
            return
        keys = set(producers_of(self.profile, a.key))
        if not keys:
            return
        for sid in sorted(within, key=self.g.position):
            if (
                self.g.position(sid) < pos
                and step_key(self.g.steps[sid]) in keys
                and not self.lin.view(sid).holds(a)
            ):
                self.add(
                    Evidence(
                        sid,
                        self.w["expected"],
                        f"the failure at {where} expects {a.raw!r}; in passing runs this step produced it, here it did not",
                        "reference:expected",
                    )
                )

    def reference_evidence(self, ids: Iterable[str]) -> None:
        """Deviations from the agent's passing runs and from the step's other occurrences in this run.

        The earliest violation on the slice weighs more (Sahoo et al. 2013).
        """
        ids = list(ids)
        siblings = sibling_profiles(self.run, self.lin, {step_key(self.g.steps[s]) for s in ids})
        first: str | None = None
        deviates: dict[str, float] = {}
        chosen = set(ids)
        order = [s for s in self.g.topological_order() if s in chosen]
        for sid in order:
            step = self.g.steps[sid]
            view = self.lin.view(sid)
            found: list[Evidence] = []
            if self.profile is not None:
                found += violations(step, view, self.profile)
                u = unseen(step, self.profile)
                if u is not None:
                    found.append(u)
            own = siblings.get(sid)
            if own is not None:
                found += [
                    Evidence(
                        e.step_id,
                        round(e.suspicion * self.w["sibling"], 3),
                        e.reason.replace("passing occurrences", "other calls in this run").replace(
                            "passing runs", "its other calls in this run"
                        ),
                        "sibling:" + e.diagnoser.split(":", 1)[1],
                        e.sound,
                    )
                    for e in violations(step, view, own)
                ]
            strength = max((e.suspicion for e in found if e.diagnoser != "reference:unseen"), default=0.0)
            # A deviation that came in through an input already deviating is inherited (the
            # infection propagated): the earliest deviation on a chain is the suspect.
            came = [
                d.step_id
                for d in self.g.parents(sid)
                if d.kind in VALUE_DEP_KINDS and deviates.get(d.step_id, 0.0) >= 0.9 * strength > 0
            ]
            if came:
                name = self.g.steps[came[0]].name
                found = [
                    Evidence(
                        e.step_id,
                        round(e.suspicion * self.w["inherited"], 3),
                        f"{e.reason} (its input from {name} already deviated)",
                        e.diagnoser,
                        e.sound,
                    )
                    for e in found
                ]
            if strength > 0:
                deviates[sid] = strength
            for e in found:
                self.add(e)
            if first is None and strength > 0 and not came:
                first = sid
        if first is not None:
            self.extra[first] = [
                Evidence(
                    e.step_id, min(0.95, e.suspicion * self.w["earliest"]), e.reason, e.diagnoser, e.sound
                )
                if e.diagnoser.startswith("reference:")
                else e
                for e in self.extra[first]
            ]

    def local_evidence(self, ids: Iterable[str]) -> None:
        for sid in ids:
            step = self.g.steps[sid]
            for e in anomalies(step, self.lin.view(sid), sid in self.has_children):
                self.add(e)

    # -- scoring ------------------------------------------------------------------

    def symptom(self, step: Step) -> bool:
        """Whether a failing step raised on what it was given rather than by a defect of its own.

        A step of the agent's own code that raises anything but a programming
        error (a validation, a consistency check, a domain exception) judged
        its input; so does any step whose error names values it was given, or
        that is a check.  A programming error (``TypeError``, ``NameError``...)
        raised by code that was given what it always gets is its own defect.
        """
        err = step.error
        if err is None:
            return False
        if is_check(step, err):
            return True
        view = self.lin.view(step.step_id)
        named = [a for a in atoms(err.message) if a.kind != "text" or len(a.raw) > 2]
        if any(view.given(a) for a in named):
            return True
        own = err.type.rsplit(".", 1)[-1] in PROGRAMMING_ERRORS
        if step.kind in ("tool", "retrieval"):
            # A tool refusing what it was given (a business rule, a validation on its side)
            # shows the failure; a tool timing out or crashing is its own (or its service's).
            return not own and not environmental(f"{err.type}: {err.message}")
        if step.kind in BOUNDARY_KINDS:
            return False  # a model failing is judged by its own diagnosers
        return not own

    def verdict(self, sid: str) -> Verdict:
        v = self.verdicts.get(sid)
        if v is None:
            base = self.ctx.verdict(sid)
            ev = _strongest(list(base.evidence) + self.extra.get(sid, []))
            step = self.g.steps[sid]
            declared = all(
                f.detector in ("outcome", "run-failure") for f in self.failures if f.step_id == sid
            )
            if sid in self.fail_ids and (self.symptom(step) or (declared and step.error is None)):
                self.symptoms.add(sid)
                ev = [
                    Evidence(
                        e.step_id,
                        e.suspicion * self.w["symptom"],
                        e.reason,
                        e.diagnoser,
                        e.sound,
                        e.correction,
                    )
                    for e in ev
                ]
                ev.append(
                    Evidence(
                        sid,
                        0.0,
                        "raised on what it was given: where the failure showed, not where it began",
                        "symptom",
                    )
                )
            v = self.verdicts[sid] = fold(sid, ev)
        return v

    def prior(self, sid: str) -> float:
        step = self.g.steps[sid]
        kind = KIND_PRIOR.get(step.kind, 1.0)
        if sid in self.has_children and step.kind not in CONTAINER_KINDS:
            kind *= 0.7  # an enclosing span is made of its children, which are ranked themselves
        return kind

    def edge_weight(self, d: Dependency) -> float:
        kind_w = self.w["child"] if d.key == CHILD_KEY else self.w.get(d.kind, 0.3)
        return kind_w * d.confidence * self.w["hop"]

    def propagate(self, ids: set[str]) -> None:
        """Blame from the failures backward, consumers before producers (one pass, linear).

        A step that looks faulty explains part of the failure itself and passes
        less of it on (explaining away); one that looks sound may have passed an
        infection along unchanged, so it passes its blame on.  Contributions of
        several paths through one step accumulate (noisy-OR).
        """
        absorb = self.w["absorb"]
        for sid in self.fail_ids:
            self.blame[sid] = 1.0
        for sid in reversed(self.g.topological_order()):
            b = self.blame.get(sid, 0.0)
            if b <= 0.0:
                continue
            passed = b * (1.0 - absorb * self.verdict(sid).suspicion) if sid in ids else b
            for d in self.g.parents(sid):
                c = passed * self.edge_weight(d)
                if c <= 0.0:
                    continue
                p = d.step_id
                self.blame[p] = 1.0 - (1.0 - self.blame.get(p, 0.0)) * (1.0 - c)
                if c > self.best_in.get(p, 0.0):
                    self.best_in[p] = c
                    self.via[p] = (sid, d)

    def other_entities(self, ids: Sequence[str]) -> None:
        """Steps about another item of a list the run went through than the one the failure is about.

        An agent that walks a list (accounts of a team, orders of a customer) and fails on
        one item: a step asked about another listed item (``account_id`` acct-2 where the
        failing step was given acct-1, both listed by one earlier step), whose own output
        never reached the failing step, did its part for another item.  An empty answer
        there is no starvation of the failure.
        """
        subject: dict[str, str] = {}
        for f in self.failures:
            if self.g.steps[f.step_id].kind in CONTAINER_KINDS:
                continue
            byfield: dict[str, set[str]] = {}
            for a in self.lin.view(f.step_id).inputs:
                if a.field and a.kind in ("id", "text") and a.field.lower() not in NAMING_FIELDS and len(a.raw) <= 60:
                    byfield.setdefault(a.field, set()).add(a.key)
            subject.update({fld: next(iter(keys)) for fld, keys in byfield.items() if len(keys) == 1})
        if not subject:
            return
        failing = [self.lin.view(f.step_id) for f in self.failures]
        # Per field, once: the values written beside the failing one by the (first 64) steps
        # whose output holds it; a step's other item must be one of them.
        beside = {
            fld: {
                k for p in self.lin.holders(want)[:64] for k in self.lin.view(self.lin.steps[p].step_id).out_keys
            }
            for fld, want in subject.items()
        }
        for sid in ids:
            if sid in self.fail_ids:
                continue
            view = self.lin.view(sid)
            for fld, want in subject.items():
                mine = {a.key: a.raw for a in (*view.inputs, *view.outputs) if a.field == fld}
                if not mine or want in mine:
                    continue
                if not any(k in beside[fld] for k in mine):
                    continue  # not an item listed beside the failing one (a typo, an invented id)
                if any(v.given(a) for a in self.lin.introduced(sid) for v in failing):
                    continue  # its own output reached the failure
                self.elsewhere[sid] = f"about {fld}={next(iter(mine.values()))}, another listed item than the failure's"
                break

    def factor(self, sid: str) -> float:
        """Focus (the step produces what failed, or introduced a value the failure involves) and
        confidence pruning (its output fed verified-good results)."""
        f = 1.0 + self.w["thin"] * self.thin.get(sid, (0.0, ""))[0]
        if sid in self.elsewhere:
            f *= self.w["elsewhere"]
        if self.families and _matches(self.g.steps[sid], self.families):
            f *= self.w["focus"]
        if self.good:
            cons = [c for c, d in self.g.children(sid) if d.kind in VALUE_DEP_KINDS]
            if cons:
                f *= 1.0 - self.w["prune"] * sum(c in self.good for c in cons) / len(cons)
        return f

    def score(self, sid: str) -> float:
        blame = self.blame.get(sid, 0.0)
        reach = blame ** self.w["proximity"] if blame > 0 else self.w["detached"]
        if sid in self.symptoms:
            reach *= self.w["symptom_rank"]
        return (
            reach
            * self.prior(sid)
            * self.factor(sid)
            * (self.w["base"] + (1.0 - self.w["base"]) * self.verdict(sid).suspicion)
        )

    def explains(self, parent: str, sid: str) -> bool:
        """Whether a faulty input accounts for a step's fault: it must be at least as suspect."""
        pv = self.verdict(parent) if parent in self.scores else None
        return pv is not None and pv.faulty and pv.suspicion >= self.verdict(sid).suspicion

    def is_root(self, sid: str) -> bool:
        """Zeller's stopping rule: faulty, and no (confident) input that explains it."""
        if not self.verdict(sid).faulty:
            return False
        floor = self.w["min_confidence"]
        return not any(self.explains(d.step_id, sid) for d in self.g.parents(sid) if d.confidence >= floor)

    def upstream_root(self, sid: str, roots: set[str], depth: int = 8) -> str | None:
        """A root at least as suspect as ``sid`` upstream through steps that look sound (transparent relays)."""
        own = self.verdict(sid).suspicion
        seen = {sid}
        frontier = [sid]
        for _ in range(depth):
            nxt = []
            for cur in frontier:
                for d in self.g.parents(cur):
                    p = d.step_id
                    if p in seen or d.key == CHILD_KEY or p not in self.scores:
                        continue
                    seen.add(p)
                    v = self.verdict(p)
                    if v.faulty:
                        if cur != sid and v.suspicion >= own and p in roots:
                            return p
                        continue
                    nxt.append(p)
            frontier = nxt
            if not frontier:
                break
        return None

    def rank(self, budget: int | None) -> list[str]:
        self.slice()
        on_slice = sorted(self.dist, key=lambda s: (self.dist[s], -self.g.position(s)))
        ids = on_slice + self.detached()
        if budget is not None:
            ids = ids[:budget]
        self.lineage_evidence()
        self.local_evidence(ids)
        self.reference_evidence(ids)
        self.other_entities(ids)
        chosen = set(ids)
        self.propagate(chosen)
        pos = self.g.position
        self.scores = {sid: self.score(sid) for sid in ids}
        # Boosts multiply (thin slice, focus), so a score may pass 1: scale all by the top one
        # when it does, so scores read from 0 to 1 and keep their order and ratios.
        top = max(self.scores.values(), default=0.0)
        if top > 1.0:
            self.scores = {sid: v / top for sid, v in self.scores.items()}
        # A root explains the failure through an edge: a step no edge connects to it may rank, never as a root.
        roots = {sid for sid in ids if sid in self.dist and self.is_root(sid)}
        for sid in list(roots):
            up = self.upstream_root(sid, roots)
            if up is not None:
                roots.discard(sid)
                self.upstream[sid] = up
        self.roots = roots

        def key(s: str) -> tuple[int, float, int, int]:
            return (0 if s in roots else 1, -round(self.scores[s], 9), self.dist.get(s, 10**6), -pos(s))

        return sorted(ids, key=key)

    # -- candidates -----------------------------------------------------------------

    def path(self, sid: str) -> tuple[tuple[str, ...], tuple[tuple[str, float], ...]]:
        path = [sid]
        inferred: list[tuple[str, float]] = []
        cur = sid
        while cur in self.via and len(path) <= len(self.g):
            nxt, d = self.via[cur]
            if d.origin == "inferred":
                inferred.append((cur, round(d.confidence, 3)))
            path.append(nxt)
            cur = nxt
        return tuple(path), tuple(inferred)

    def candidate(self, sid: str) -> Candidate:
        v = self.verdict(sid)
        reasons = [
            e.reason for e in v.evidence if (not e.sound and e.suspicion > 0) or e.diagnoser == "symptom"
        ]
        if sid in self.thin:
            reasons.append(self.thin[sid][1])  # why lineage put it on the failure's thin slice
        path, inferred = self.path(sid)
        root = sid in self.roots
        up = self.upstream.get(sid)
        if up is not None:
            reasons.append(
                f"not a structural root: {self.g.steps[up].name}, further up through steps that look sound, is at least as suspect"
            )
        elif v.faulty and not root:
            bad = [d.step_id for d in self.g.parents(sid) if self.explains(d.step_id, sid)]
            if bad:
                names = ", ".join(self.g.steps[b].name for b in bad[:3])
                reasons.append(f"not a structural root: its input from {names} is also suspect")
        if len(path) > 1:
            failure = self.g.steps[path[-1]]
            hops = len(path) - 1
            reasons.append(
                f"reaches the failure at {failure.name} through {hops} dependenc{'y' if hops == 1 else 'ies'}"
            )
        elif sid not in self.dist:
            reasons.append("ran before the failure; no recorded or inferred edge connects it")
        if self.families and _matches(self.g.steps[sid], self.families):
            reasons.append(f"produces what failed ({', '.join(sorted(self.families))})")
        if sid in self.elsewhere:
            reasons.append(f"less suspect: {self.elsewhere[sid]}")
        if self.good:
            cons = [c for c, d in self.g.children(sid) if d.kind in VALUE_DEP_KINDS and c in self.good]
            if cons:
                reasons.append(f"less suspect: its output also fed {len(cons)} verified-good result(s)")
        if not reasons or all(r.startswith("reaches the failure") for r in reasons):
            reasons.insert(0, "no evidence of its own: ranked by its place in the failure's backward slice")
        for step_id, conf in inferred:
            reasons.append(
                f"the path hangs on an inferred edge from {self.g.steps[step_id].name} (confidence {conf:.2f})"
            )
        signals = tuple(dict.fromkeys(e.diagnoser for e in v.evidence if not e.sound and e.suspicion > 0))
        if sid in self.thin:
            signals += ("lineage:origin",)
        return Candidate(
            sid,
            round(self.scores.get(sid, 0.0), 6),
            tuple(reasons),
            path,
            inferred,
            root,
            v.correction,
            None,
            signals,
        )


__all__ = [
    "DEFAULT_WEIGHTS",
    "FAILURE_SUSPICION",
    "KIND_PRIOR",
    "PROGRAMMING_ERRORS",
    "Candidate",
    "Localization",
    "SearchStats",
    "failure_evidence",
    "localize",
]
