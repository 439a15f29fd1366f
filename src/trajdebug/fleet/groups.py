"""Failure groups: one finding per failed run, folded into groups by signature.

`finding_of` turns one run's analysis into a `Finding` (a few hundred bytes:
the signature, the severity, the example message); `GroupTable` folds
findings into `Group` counters as they arrive, so grouping any number of runs
holds one entry per *group*, never one per run.  Tables merge (`merge`), which
is how partial results computed on several processes or machines combine.

Groups are ranked by ``count × (1 + 2 × critical share) × 2^(−age / 7 days)``,
where age is how long before the newest failure the group was last seen:
frequent, critical and recent groups come first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trajdebug.fleet.signature import Signature, normalize, root_candidate, signature_of
from trajdebug.sessions import session_of
from trajdebug.usage import run_usage


SEVERITY_ORDER = {"WARN": 0, "ERROR": 1, "CRITICAL": 2}
"""Severities from the error lifecycle report, least first."""

EXAMPLES = 3
"""Example runs kept per group."""

_MINUTE_NS = 60 * 1_000_000_000
_HOUR_NS = 60 * _MINUTE_NS
_HALF_LIFE_NS = 7 * 24 * _HOUR_NS


@dataclass(frozen=True, slots=True)
class Finding:
    """What the fleet keeps of one failed run."""

    run_id: str
    """The run."""
    name: str
    """The run's name (the agent)."""
    start_ns: int
    """When the run started (nanoseconds since the epoch)."""
    signature: Signature
    """Its root-cause signature."""
    severity: str
    """The highest severity in its error report (``ERROR`` when it has no error events)."""
    critical: bool
    """Whether it is a critical failure: a critical error chain or a ``CRITICAL`` error."""
    root_step: str | None
    """The root step's id (None when the analysis found no candidate)."""
    message: str
    """The failure's message (the first failure the analysis reported), cut to 200 characters."""
    task: str | None = None
    """The run's task (metadata ``task``)."""
    version: str | None = None
    """The agent's version (metadata ``version``)."""
    verified: bool | None = None
    """True when a replay patching the root step made the failure go away, False when replays
    of the run exist and none did, None when the run was never replayed."""
    tokens: int | None = None
    """Tokens of the run's LLM calls (`trajdebug.usage`), None when none are stated."""
    cost: float | None = None
    """Cost of the run's LLM calls in US dollars, None when unknown."""
    session: str | None = None
    """The run's session (`trajdebug.sessions`)."""

    @property
    def group_id(self) -> str:
        """The group it belongs to."""
        return self.signature.group_id

    def to_dict(self) -> dict[str, Any]:
        """As JSON data."""
        return {
            "run_id": self.run_id,
            "name": self.name,
            "start_ns": self.start_ns,
            "group_id": self.group_id,
            "signature": self.signature.to_dict(),
            "severity": self.severity,
            "critical": self.critical,
            "root_step": self.root_step,
            "message": self.message,
            "task": self.task,
            "version": self.version,
            "verified": self.verified,
            "tokens": self.tokens,
            "cost": self.cost,
            "session": self.session,
        }


def run_severity(error_report: Any) -> tuple[str, bool]:
    """The highest severity of a run's error report and whether the run failed critically."""
    if error_report is None:
        return "ERROR", False
    severity = "WARN" if getattr(error_report, "errors", ()) else "ERROR"
    critical = False
    for e in getattr(error_report, "errors", ()):
        s = str(getattr(e, "severity", "ERROR"))
        if SEVERITY_ORDER.get(s, 1) > SEVERITY_ORDER.get(severity, 1):
            severity = s
        critical = critical or s == "CRITICAL"
    critical = critical or any(getattr(c, "critical", False) for c in getattr(error_report, "chains", ()))
    if critical:
        severity = "CRITICAL"
    return severity, critical


def finding_of(analysis: Any, *, root: str | None = None) -> Finding:
    """The finding of one analyzed failed run (`trajdebug.analysis.Analysis`).

    Args:
        analysis: The run's analysis.
        root: Group on this step instead of the first candidate (see `signature_of`).
    """
    run = analysis.run
    data = analysis.to_dict()
    kinds = {s.step_id: s.kind for s in run.steps}
    names = {s.step_id: s.name for s in run.steps}
    sig = signature_of(data, run.name, kinds, root=root, names=names)
    severity, critical = run_severity(analysis.error_report)
    failures = data.get("failures") or []
    message = str(failures[0].get("message", "")) if failures else str(run.failure_reason or "")
    named = root_candidate(data, names)
    root_step = root if root is not None else (str(named["step_id"]) if named else None)
    md = run.metadata
    usage = run_usage(run)
    return Finding(
        run_id=run.run_id,
        name=run.name,
        start_ns=run.start_ns,
        signature=sig,
        severity=severity,
        critical=critical,
        root_step=root_step,
        message=message[:200],
        task=None if md.get("task") is None else str(md["task"])[:200],
        version=None if md.get("version") is None else str(md["version"]),
        tokens=usage.total_tokens,
        cost=usage.cost,
        session=session_of(run),
    )


@dataclass(slots=True)
class Group:
    """One failure group and its counters."""

    signature: Signature
    """The signature every member shares."""
    count: int = 0
    """Failed runs in the group."""
    critical: int = 0
    """Of those, critical failures."""
    first_seen_ns: int = 0
    """Start of the earliest member."""
    last_seen_ns: int = 0
    """Start of the latest member."""
    severities: Counter[str] = field(default_factory=Counter)
    """Members by severity."""
    versions: Counter[str] = field(default_factory=Counter)
    """Members by agent version (runs without one are not counted)."""
    examples: list[tuple[int, str, str]] = field(default_factory=list)
    """Up to `EXAMPLES` members as ``(start_ns, run_id, message)``, earliest first."""
    verified: int = 0
    """Members whose root was verified by replay."""
    replayed: int = 0
    """Members that were replayed at all (verified or not)."""
    timeline: Counter[int] = field(default_factory=Counter)
    """Members by the minute they started in (minutes since the epoch; at most one entry per member).
    The JSON gives hours (`hourly`); the plots choose their bucket from the span."""
    cost: float = 0.0
    """What the members' LLM calls cost (US dollars; runs with no known cost count 0)."""
    tokens: int = 0
    """Tokens of the members' LLM calls."""
    sessions: set[str] = field(default_factory=set)
    """The sessions the members belong to."""

    @property
    def group_id(self) -> str:
        """The group's stable id."""
        return self.signature.group_id

    @property
    def severity(self) -> str:
        """The highest severity among the members."""
        return max(self.severities, key=lambda s: SEVERITY_ORDER.get(s, 1), default="ERROR")

    @property
    def verified_share(self) -> float | None:
        """Share of replayed members whose root was verified; None when none was replayed."""
        return self.verified / self.replayed if self.replayed else None

    def title(self) -> str:
        """One line for an alert or a table."""
        example = normalize(self.examples[0][2], limit=1 << 16) if self.examples else ""
        if len(example) > 80:  # shortened on purpose, and says so
            example = example[:79] + "…"
        return self.signature.title() + (f": {example}" if example else "")

    def add(self, f: Finding) -> None:
        """Count one member."""
        self.count += 1
        self.critical += f.critical
        self.severities[f.severity] += 1
        if f.version is not None:
            self.versions[f.version] += 1
        if f.verified is not None:
            self.replayed += 1
            self.verified += f.verified
        if self.count == 1 or f.start_ns < self.first_seen_ns:
            self.first_seen_ns = f.start_ns
        self.last_seen_ns = max(self.last_seen_ns, f.start_ns)
        self.timeline[f.start_ns // _MINUTE_NS] += 1
        self.cost += f.cost or 0.0
        self.tokens += f.tokens or 0
        if f.session is not None:
            self.sessions.add(f.session)
        self._example(f.start_ns, f.run_id, f.message)

    def _example(self, start_ns: int, run_id: str, message: str) -> None:
        # Keep the earliest few (ties by run id), whatever order findings arrive in,
        # so every engine reports the same examples.
        self.examples.append((start_ns, run_id, message))
        self.examples.sort()
        del self.examples[EXAMPLES:]

    def merge(self, other: Group) -> None:
        """Fold another partial count of the same group into this one."""
        if other.count == 0:
            return
        if self.count == 0 or other.first_seen_ns < self.first_seen_ns:
            self.first_seen_ns = other.first_seen_ns
        self.count += other.count
        self.critical += other.critical
        self.severities.update(other.severities)
        self.versions.update(other.versions)
        self.verified += other.verified
        self.replayed += other.replayed
        self.last_seen_ns = max(self.last_seen_ns, other.last_seen_ns)
        self.timeline.update(other.timeline)
        self.cost += other.cost
        self.tokens += other.tokens
        self.sessions |= other.sessions
        for e in other.examples:
            self._example(*e)

    def hourly(self) -> Counter[int]:
        """Members by the hour they started in (hours since the epoch)."""
        out: Counter[int] = Counter()
        for minute, n in self.timeline.items():
            out[minute // 60] += n
        return out

    def score(self, newest_ns: int) -> float:
        """The ranking score (see the module docstring)."""
        age = max(0, newest_ns - self.last_seen_ns)
        return float(self.count * (1 + 2 * self.critical / self.count) * 0.5 ** (age / _HALF_LIFE_NS))

    def to_dict(self) -> dict[str, Any]:
        """As JSON data."""
        return {
            "group_id": self.group_id,
            "title": self.title(),
            "signature": self.signature.to_dict(),
            "count": self.count,
            "critical": self.critical,
            "severity": self.severity,
            "severities": dict(self.severities),
            "versions": dict(self.versions),
            "first_seen_ns": self.first_seen_ns,
            "last_seen_ns": self.last_seen_ns,
            "examples": [{"run_id": r, "start_ns": t, "message": m} for t, r, m in self.examples],
            "replayed": self.replayed,
            "verified": self.verified,
            "verified_share": self.verified_share,
            "timeline": {str(h): n for h, n in sorted(self.hourly().items())},
            "cost": round(self.cost, 6),
            "tokens": self.tokens,
            "sessions": len(self.sessions),
        }


def group_from_dict(d: Mapping[str, Any]) -> Group:
    """The inverse of `Group.to_dict` (the watcher's state file)."""
    g = Group(Signature.from_dict(d["signature"]))
    g.count = int(d.get("count", 0))
    g.critical = int(d.get("critical", 0))
    g.first_seen_ns = int(d.get("first_seen_ns", 0))
    g.last_seen_ns = int(d.get("last_seen_ns", 0))
    g.severities = Counter({str(k): int(v) for k, v in (d.get("severities") or {}).items()})
    g.versions = Counter({str(k): int(v) for k, v in (d.get("versions") or {}).items()})
    g.examples = [
        (int(e["start_ns"]), str(e["run_id"]), str(e.get("message", ""))) for e in d.get("examples") or ()
    ]
    g.replayed = int(d.get("replayed", 0))
    g.verified = int(d.get("verified", 0))
    # The JSON's timeline is hourly: each hour's members are put at its first minute.
    g.timeline = Counter({int(k) * 60: int(v) for k, v in (d.get("timeline") or {}).items()})
    g.cost = float(d.get("cost") or 0.0)
    g.tokens = int(d.get("tokens") or 0)
    return g


class GroupTable:
    """Findings folded into groups as they arrive (memory: one `Group` per group)."""

    def __init__(self) -> None:
        self.groups: dict[str, Group] = {}
        self.failed = 0

    def add(self, finding: Finding) -> Group:
        """Count one finding; returns its group."""
        g = self.groups.get(finding.group_id)
        if g is None:
            g = self.groups[finding.group_id] = Group(finding.signature)
        g.add(finding)
        self.failed += 1
        return g

    def extend(self, findings: Iterable[Finding]) -> None:
        """Count several findings."""
        for f in findings:
            self.add(f)

    def merge(self, other: GroupTable) -> None:
        """Fold another table in (partial results of another process or machine)."""
        for gid, g in other.groups.items():
            mine = self.groups.get(gid)
            if mine is None:
                mine = self.groups[gid] = Group(g.signature)
            mine.merge(g)
        self.failed += other.failed

    def ranked(self) -> list[Group]:
        """The groups, highest score first (ties: larger, then by id)."""
        newest = max((g.last_seen_ns for g in self.groups.values()), default=0)
        return sorted(self.groups.values(), key=lambda g: (-g.score(newest), -g.count, g.group_id))

    def counts(self) -> dict[str, int]:
        """Members per group id."""
        return {gid: g.count for gid, g in self.groups.items()}

    def to_dict(self) -> dict[str, Any]:
        """As JSON data: the ranked groups."""
        return {"failed": self.failed, "groups": [g.to_dict() for g in self.ranked()]}


def verification_index(runs: Iterable[Any]) -> dict[str, tuple[set[str], set[str]]]:
    """From replay runs (metadata ``replay_of`` and ``patch``): per original run, the step ids
    whose patch made the failure go away, and every step id that was patched."""
    out: dict[str, tuple[set[str], set[str]]] = {}
    for r in runs:
        md: Mapping[str, Any] = r.metadata
        orig = md.get("replay_of")
        patch = md.get("patch")
        if not orig or not isinstance(patch, Mapping):
            continue
        passed, tried = out.setdefault(str(orig), (set(), set()))
        tried.update(str(k) for k in patch)
        if r.outcome == "success" and len(patch) == 1:
            passed.update(str(k) for k in patch)
    return out


__all__ = [
    "EXAMPLES",
    "SEVERITY_ORDER",
    "Finding",
    "Group",
    "GroupTable",
    "finding_of",
    "group_from_dict",
    "run_severity",
    "verification_index",
]
