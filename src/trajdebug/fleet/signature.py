"""Root-cause signatures: what makes two failed runs "the same failure".

A signature is built from one run's analysis (``Analysis.to_dict()``, the
``trajdebug analyze --json`` shape) and its root-cause candidate:

- the agent (the run's name) and the root step's kind, name and agent;
- the error class or detector of the failure the root explains
  (``exception:KeyError``, ``sql``, ``run-failure``);
- the kind of evidence behind the candidate: its ``signals`` when the analysis
  gives them (``lineage``, ``error``, ``diagnoser:<name>``), else the kind of
  its first specific reason ("returned <n> rows");
- the shape of the dependency path from the root to the failure: the step
  kinds along it, repeats collapsed, so a loop that ran three times and one
  that ran five times give the same shape.

Every part is normalized (`normalize`) so that ids, numbers, hashes,
timestamps and quoted values do not split groups; the group id is a hash of
the normalized signature, so it is stable across runs, machines and time.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


# Order matters: the longer, more specific shapes are replaced before numbers.
_NORMALIZERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"'[^'\n]{0,200}'|\"[^\"\n]{0,200}\"|`[^`\n]{0,200}`"), "<v>"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<id>"),
    (
        re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"),
        "<ts>",
    ),
    (re.compile(r"\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b"), "<ts>"),
    (re.compile(r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b"), "<id>"),
    # A number, not digits inside an identifier: letters and digits run together ("A103", "gpt4") are a name,
    # kept whole (nu64b: the order "A103" was shown as "A1<n>", its first digit taken for part of the name).
    (re.compile(r"(?<![A-Za-z0-9])[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?"), "<n>"),
    (re.compile(r"\s+"), " "),
)

# Reasons that say where a candidate sits rather than what is wrong with it:
# they never name the kind of evidence.
_GENERIC_REASONS = (
    "its inputs",
    "reaches the failure",
    "not a structural root",
    "the path hangs",
    "origin of the",
    "produces what failed",
)
_REASON_CUT = re.compile(r"[:;(,]")


def normalize(text: str, *, limit: int = 120) -> str:
    """Text with ids, numbers, hashes, timestamps and quoted values replaced by placeholders.

    Example:
        ```python
        normalize("KeyError: '2025-Q2' at row 17 of run 4bf92f3577b34da6")
        # "KeyError: <v> at row <n> of run <id>"
        ```
    """
    out = text
    for pattern, repl in _NORMALIZERS:
        out = pattern.sub(repl, out)
    return out.strip()[:limit]


def evidence_kind(candidate: Mapping[str, Any]) -> str:
    """The kind of evidence behind a candidate: its strongest signal's family, else its first specific reason's kind.

    Only the strongest, and only its family (`trajdebug.analysis.family`: omission,
    wrong value, inconsistent, changed answer...): which rule saw one root cause
    varies from run to run (a value that happens to be quoted, a reference that
    happens to hold a case) and would split one cause into many groups.
    """
    from trajdebug.analysis import family

    signals = candidate.get("signals")
    if isinstance(signals, Sequence) and not isinstance(signals, str) and signals:
        return normalize(family(str(signals[0])), limit=40)
    for reason in candidate.get("reasons") or ():
        text = str(reason)
        if text.startswith(_GENERIC_REASONS):
            continue
        head = _REASON_CUT.split(normalize(text), maxsplit=1)[0]
        return " ".join(head.split()[:6]) or "-"
    return "-"


@dataclass(frozen=True, slots=True)
class Signature:
    """The normalized root-cause signature of one failed run."""

    agent: str
    """The agent: the run's name."""
    root_kind: str
    """The root step's kind (``llm``, ``tool``, ...), or ``-`` when no candidate was found."""
    root_name: str
    """The root step's name (normalized)."""
    root_agent: str
    """The agent that ran the root step (``-`` when the run names none)."""
    error: str
    """The error class or detector of the failure the root explains (``exception:KeyError``, ``sql``)."""
    evidence: str
    """The kind of evidence behind the candidate."""
    path: str
    """The step kinds along the dependency path from the root to the failure, repeats collapsed."""

    def key(self) -> str:
        """The signature as one string (what the group id hashes)."""
        return "|".join(
            (
                self.agent,
                self.root_agent,
                self.root_kind,
                self.root_name,
                self.error,
                self.evidence,
                self.path,
            )
        )

    @property
    def group_id(self) -> str:
        """A stable id: the first 12 hex digits of the SHA-256 of `key`."""
        return hashlib.sha256(self.key().encode("utf-8")).hexdigest()[:12]

    def title(self) -> str:
        """One line: ``sales-report: write_sql (llm) → exception:KeyError [lost <v>]``."""
        who = f"{self.root_name} ({self.root_kind})" if self.root_kind != "-" else "no root found"
        if self.root_agent != "-":
            who = f"{self.root_agent}/{who}"
        return f"{self.agent}: {who} → {self.error} [{self.evidence}]"

    def to_dict(self) -> dict[str, str]:
        """As JSON data (with the group id)."""
        return {
            "group_id": self.group_id,
            "agent": self.agent,
            "root_kind": self.root_kind,
            "root_name": self.root_name,
            "root_agent": self.root_agent,
            "error": self.error,
            "evidence": self.evidence,
            "path": self.path,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Signature:
        """The inverse of `to_dict` (the group id is recomputed)."""
        return cls(
            str(data["agent"]),
            str(data["root_kind"]),
            str(data["root_name"]),
            str(data["root_agent"]),
            str(data["error"]),
            str(data["evidence"]),
            str(data["path"]),
        )


def _failure_of(analysis: Mapping[str, Any], path: Sequence[str]) -> Mapping[str, Any] | None:
    """The failure a candidate's path ends at, else the run's first failure."""
    failures = [f for f in analysis.get("failures") or () if isinstance(f, Mapping)]
    if path:
        end = path[-1]
        for f in failures:
            if f.get("step_id") == end:
                return f
    return failures[0] if failures else None


def _path_shape(path: Sequence[str], kinds: Mapping[str, str]) -> str:
    shape: list[str] = []
    for sid in path:
        k = kinds.get(sid, "?")
        if not shape or shape[-1] != k:
            shape.append(k)
    return ">".join(shape) or "-"


def root_candidate(
    analysis: Mapping[str, Any], names: Mapping[str, str] | None = None
) -> Mapping[str, Any] | None:
    """The candidate a failure group is named after: the first root cause, unless it is a step where a
    failure showed and another candidate reaches that failure through it, not being a failure site itself.

    A step that raised on what it was given ranks high (the failure is there), but a group titled
    after it names where the failure showed, not where it began: an upstream candidate whose path
    runs through it is the cause (Zeller's cause-effect chains: the root is the origin, not the
    symptom).  Leading through it means the candidate's path passes the top step or, given the
    step ``names``, another call of the same step where a failure showed too (the same tool called
    twice).  A failure step no other candidate leads through stays the root; so does one the analysis
    labels a root (``structural``: faulty by its own evidence, no suspect input explaining it, as a tool
    that timed out by itself) when what leads through it is only a suspect, ranked by its place on the
    path: the name goes upstream only to a candidate that is a root by its own evidence too.
    """
    causes = [c for c in analysis.get("root_causes") or () if isinstance(c, Mapping)]
    if not causes:
        return None
    top = causes[0]
    sites = {f.get("step_id") for f in analysis.get("failures") or () if isinstance(f, Mapping)}
    if top.get("step_id") not in sites or top.get("run_id"):
        return top
    top_id, top_name = str(top.get("step_id")), top.get("name")
    same = {str(s) for s in sites if names is not None and top_name and names.get(str(s)) == top_name}
    top_is_root = top.get("structural") is True
    for c in causes[1:]:
        path = [str(s) for s in c.get("path") or ()]
        if c.get("step_id") in sites or c.get("run_id"):
            continue
        if top_is_root and c.get("structural") is not True:
            continue  # a suspect does not take a root's name
        if top_id in path[1:] or same & set(path[1:]):
            return c
    return top


def signature_of(
    analysis: Mapping[str, Any],
    run_name: str,
    kinds: Mapping[str, str],
    *,
    root: str | None = None,
    names: Mapping[str, str] | None = None,
) -> Signature:
    """The signature of one analyzed run.

    Args:
        analysis: ``Analysis.to_dict()`` of the run.
        run_name: The run's name (the agent).
        kinds: The kind of each step of the run, by step id (for the path shape).
        root: Take this step as the root instead of the analysis's first
            candidate (the benchmark's injected step, to separate grouping from
            ranking).  Evidence and path shape are outputs of the ranking, so
            such a signature leaves them out (``-``) and names the run's first
            failure.
        names: Step names by id: for a ``root`` that is no candidate, and to tell
            repeated calls of a failing step apart from its causes (`root_candidate`).
    """
    causes = [c for c in analysis.get("root_causes") or () if isinstance(c, Mapping)]
    cand: Mapping[str, Any] | None = root_candidate(analysis, names)
    if root is not None:
        cand = next((c for c in causes if c.get("step_id") == root and not c.get("run_id")), None)
        if cand is None:
            name = (names or {}).get(root, "?")
            cand = {"step_id": root, "name": name, "kind": kinds.get(root, "?"), "path": [], "reasons": []}
    path = [str(s) for s in (cand.get("path") or ())] if cand else []
    failure = _failure_of(analysis, path if root is None else ())
    error = "-"
    if failure is not None:
        error = normalize(str(failure.get("signature") or failure.get("detector") or "-"), limit=60)
    if cand is None:
        return Signature(normalize(run_name, limit=60), "-", "-", "-", error, "-", "-")
    return Signature(
        agent=normalize(run_name, limit=60),
        root_kind=str(cand.get("kind") or "?"),
        root_name=normalize(str(cand.get("name") or "?"), limit=60),
        root_agent=normalize(str(cand.get("agent") or "-"), limit=40),
        error=error,
        evidence=evidence_kind(cand) if root is None else "-",
        path=_path_shape(path, kinds) if root is None else "-",
    )


__all__ = ["Signature", "evidence_kind", "normalize", "root_candidate", "signature_of"]
