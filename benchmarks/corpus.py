"""The training corpus of the learned ranker: every labelled failure we may learn from, as features.

One `Case` per failed run whose root cause is known: the features of every
step the analysis ranked (`trajdebug.analysis.features`), in the hand
ranker's order, and the keys of the truth steps.  Sources (docs/model-card.md):

- ``quality``: the fault-injection suite (benchmarks/quality.py, 540 cases, recording SDK);
- ``tau``: AgentRx's annotated tau-bench failures (../shared/data/agentrx-tau, message logs);
- ``whowhen``: the Algorithm-Generated Who&When logs (../shared/data/who-and-when-ag, MIT, transcripts);
- ``suite_dev``, ``suite_a``, ``suite_d``: the development blind suites, alone and with references;
- ``suite_b``, ``suite_c``, ``suite_e``, ``suite_f``, ``suite_g``, ``suite_h``, ``suite_i``, ``suite_j``, ``suite_k``, ``suite_l``, ``suite_m``, ``suite_n``, ``suite_o``, ``suite_p``, ``suite_q``, ``suite_r``, ``suite_s``, ``suite_t``, ``suite_u``, ``suite_v``, ``suite_w``, ``suite_x``, ``suite_y``, ``suite_z``, ``suite_za``, ``suite_zb``, ``suite_zc``, ``suite_zd``, ``suite_ze``, ``suite_zf``, ``suite_zg``, ``suite_zh``, ``suite_zi``, ``suite_zj``, ``suite_zk``, ``suite_zl``, ``suite_zm``, ``suite_zn``, ``suite_zo``, ``suite_zp``, ``suite_zq``, ``suite_zr``, ``suite_zs``, ``suite_zt``, ``suite_zu``, ``suite_zv``, ``suite_zw``, ``suite_zx``, ``suite_zy``, ``suite_zz``, ``suite_zza``, ``suite_zzb``, ``suite_zzc``, ``suite_zzd``, ``suite_zze``, ``suite_zzf``, ``suite_zzg``, ``suite_zzh``, ``suite_zzi``, ``suite_zzj``, ``suite_zzk``, ``suite_zzl``, ``suite_zzm``, ``suite_zzn``, ``suite_zzo``, ``suite_zzp``, ``suite_zzq``, ``suite_zzr``, ``suite_zzs``, ``suite_zzt``, ``suite_zzu``, ``suite_zzv``, ``suite_zzw``, ``suite_zzx``, ``suite_zzy``, ``suite_zzz``, ``suite_zzza``, ``suite_zzzb``, ``suite_zzzc``, ``suite_zzzd``, ``suite_zzze``, ``suite_zzzf``, ``suite_zzzg``, ``suite_zzzh``, ``suite_zzzi``, ``suite_zzzj``, ``suite_zzzk``, ``suite_zzzl``, ``suite_zzzm``, ``suite_zzzn``, ``suite_zzzo``, ``suite_zzzp``, ``suite_zzzq``, ``suite_zzzr``, ``suite_zzzs``, ``suite_zzzt``, ``suite_zzzu``, ``suite_zzzv``, ``suite_zzzw``: the blind suites
  written by outsiders on the real frameworks (LangGraph, OpenAI Agents SDK, OpenInference/OTLP, the SDK),
  each scored once held out, then development suites (`benchmarks.blind.STATUS`; suite_i since 2026-12-02,
  its misses studied; suite_j since 2026-12-02, its misses studied; suite_k, suite_l, suite_m, suite_n and suite_o since 2026-12-03, their misses studied; suite_p to suite_w since 2026-12-03, suite_x to suite_zm since 2026-12-04, suite_zn to suite_zzi since 2026-12-05, suite_zzj to suite_zzzi since 2026-12-06, suite_zzzj to suite_zzzzq since 2026-12-07, scored once).

The still-held-out suites (`HELD_OUT`: suite_zzzzr and suite_zzzzs, written blind on 2026-12-07) are never read here:
`suite` refuses them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trajdebug.analysis import Analysis
from trajdebug.analysis._pipeline import analyze
from trajdebug.analysis.features import Key, features


ALL = 100_000
"""``top`` that keeps every ranked step as a candidate."""

DEV_SUITES = (
    "suite_dev", "suite_a", "suite_d", "suite_b", "suite_c", "suite_e", "suite_f", "suite_g", "suite_h", "suite_i",
    "suite_j", "suite_k", "suite_l", "suite_m", "suite_n", "suite_o", "suite_p", "suite_q", "suite_r", "suite_s",
    "suite_t", "suite_u", "suite_v", "suite_w", "suite_x", "suite_y", "suite_z", "suite_za",
    "suite_zb", "suite_zc", "suite_zd", "suite_ze", "suite_zf", "suite_zg",
    "suite_zh", "suite_zi", "suite_zj", "suite_zk", "suite_zl", "suite_zm", "suite_zn", "suite_zo",
    "suite_zp", "suite_zq", "suite_zr", "suite_zs", "suite_zt", "suite_zu", "suite_zv", "suite_zw",
    "suite_zx", "suite_zy", "suite_zz", "suite_zza", "suite_zzb", "suite_zzc", "suite_zzd", "suite_zze",
    "suite_zzf", "suite_zzg", "suite_zzh", "suite_zzi", "suite_zzj", "suite_zzk", "suite_zzl", "suite_zzm",
    "suite_zzn", "suite_zzo", "suite_zzp", "suite_zzq", "suite_zzr", "suite_zzs",
    "suite_zzt", "suite_zzu", "suite_zzv", "suite_zzw", "suite_zzx", "suite_zzy",
    "suite_zzz", "suite_zzza", "suite_zzzb", "suite_zzzc", "suite_zzzd", "suite_zzze", "suite_zzzf", "suite_zzzg", "suite_zzzh", "suite_zzzi", "suite_zzzj", "suite_zzzk", "suite_zzzl", "suite_zzzm", "suite_zzzn", "suite_zzzo", "suite_zzzp", "suite_zzzq", "suite_zzzr", "suite_zzzs", "suite_zzzt", "suite_zzzu", "suite_zzzv", "suite_zzzw", "suite_zzzx", "suite_zzzy", "suite_zzzz", "suite_zzzza", "suite_zzzzb", "suite_zzzzc", "suite_zzzzd", "suite_zzzze", "suite_zzzzf", "suite_zzzzg", "suite_zzzzh", "suite_zzzzi", "suite_zzzzj", "suite_zzzzk", "suite_zzzzl", "suite_zzzzm", "suite_zzzzn", "suite_zzzzo", "suite_zzzzp", "suite_zzzzq",
)
"""The blind suites we may train on (b to i since 2026-12-02, each scored once held out before)."""

HELD_OUT: frozenset[str] = frozenset({"suite_zzzzr", "suite_zzzzs"})
"""The still-held-out suites: never trained on, never read or generated by the corpus."""


def _shared() -> Path:
    root = Path(__file__).resolve().parent.parent
    for base in (root.parent, root.parent.parent):
        if (base / "shared" / "data").exists():
            return base / "shared" / "data"
    return root.parent / "shared" / "data"


WHOWHEN = _shared() / "who-and-when-ag"
"""Where the Who&When Algorithm-Generated logs live."""


@dataclass(slots=True)
class Case:
    """One labelled failed run."""

    suite: str
    """Where it comes from (a leave-one-suite-out group)."""
    route: str
    """How it was recorded (a leave-one-route-out group)."""
    fault: str
    """Its fault kind (``tau``/``whowhen`` for the public sets)."""
    agent: str
    """The agent or workflow (tasks of one agent share a fold)."""
    case_id: str
    """A readable id."""
    truth: list[Key]
    """The truth steps (several when one message became several steps)."""
    keys: list[Key] = field(default_factory=list)
    """Every ranked step, in the hand ranker's order."""
    rows: list[dict[str, float]] = field(default_factory=list)
    """Each ranked step's features."""

    def with_references(self) -> bool:
        """Whether the run was analysed with its agent's passing runs as references (a blind suite's second setting,
        `suite`); what `trajdebug.analysis.learned` reads as the run having references."""
        return self.case_id.endswith("/with_refs")

    def labels(self) -> list[int]:
        """1 for a truth step, else 0, in ranking order."""
        truth = set(self.truth)
        return [int(k in truth) for k in self.keys]

    def to_dict(self) -> dict[str, Any]:
        """JSON data (one line of the corpus cache)."""
        return {
            "suite": self.suite,
            "route": self.route,
            "fault": self.fault,
            "agent": self.agent,
            "case_id": self.case_id,
            "truth": [list(k) for k in self.truth],
            "keys": [list(k) for k in self.keys],
            "rows": self.rows,
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Case:
        """A case from its JSON data."""
        return Case(
            d["suite"], d["route"], d["fault"], d["agent"], d["case_id"],
            [(k[0], k[1]) for k in d["truth"]], [(k[0], k[1]) for k in d["keys"]], d["rows"],
        )


def _fill(case: Case, a: Analysis) -> Case:
    feats = features(a)
    case.keys = list(feats)
    case.rows = [feats[k] for k in case.keys]
    return case


def quality(seeds: int = 15) -> Iterator[Case]:
    """The fault-injection suite: every workflow x fault x seed."""
    from benchmarks.quality import cases
    from benchmarks.workflows import WORKFLOWS

    for c in cases(seeds):
        res = WORKFLOWS[c.workflow].run(c)
        sid = res.fault.get("step_id")
        if sid is None:
            continue
        own = {s.step_id for s in res.run.steps}
        where = None if sid in own else next((r.run_id for r in res.previous if sid in r.step_map()), None)
        # The hand ranking's order: every feature is read off it.
        a = analyze(res.run, top=ALL, previous=res.previous, model=None)
        yield _fill(Case("quality", "sdk", str(c.fault), c.workflow, c.case_id, [(where, sid)]), a)


def tau() -> Iterator[Case]:
    """AgentRx's tau-bench failures: the truth is every step imported from the annotated message."""
    from benchmarks.tau import DATA, _user
    from trajdebug.sources.formats import import_path

    gt = json.loads((DATA / "tau_ground_truth.json").read_text())
    by_task = {r.metadata.get("task_id"): r for r in import_path(DATA / "tau_dataset_failed.json").runs}
    for entry in gt:
        run = by_task.get(entry["trajectory_id"])
        if run is None:
            continue
        steps = {f["failure_id"]: int(f["step_number"]) for f in entry["failures"]}
        msg = steps[entry["root_cause"]["failure_id"]] - 1
        truth: list[Key] = [(None, s.step_id) for s in run.steps if s.source_index == msg]
        # The hand ranking's order: every feature is read off it.
        a = analyze(run, top=ALL, model=None)
        yield _fill(Case("tau", "messages", "tau", _user(run.metadata) or "?", f"tau/{entry['trajectory_id']}", truth), a)


def whowhen(data: Path = WHOWHEN) -> Iterator[Case]:
    """Who&When Algorithm-Generated: the truth is the step of the decisive message (``mistake_step``)."""
    from trajdebug.sources.formats import import_path

    for p in sorted(data.glob("*.json"), key=lambda q: int(q.stem) if q.stem.isdigit() else 0):
        d = json.loads(p.read_text())
        msg = int(d["mistake_step"])
        for run in import_path(p).runs:
            truth: list[Key] = [(None, s.step_id) for s in run.steps if s.source_index == msg]
            # The hand ranking's order: every feature is read off it.
            a = analyze(run, top=ALL, model=None)
            yield _fill(Case("whowhen", "transcript", "whowhen", str(d.get("question_ID", p.stem)), f"ww/{p.stem}", truth), a)


def suite(name: str, workdir: Path, progress: Callable[[str], None] = print) -> Iterator[Case]:
    """A development blind suite, each case alone and with references (two cases)."""
    from benchmarks.blind import FAULT_NAMES, SETTINGS, _cases, _source, generate, route_name, truth_step
    from trajdebug.api import analyze_source

    if name in HELD_OUT:
        raise ValueError(f"{name} is held out: never trained on")
    root = generate(name, workdir, progress)
    for t in _cases(root):
        for setting in SETTINGS:
            src = _source(root / t["case_id"], "failed" if setting == "alone" else "with_refs")
            try:
                # The hand ranking's order: every feature is read off it.
                [a] = analyze_source(src, t["failed_run_id"], top=ALL, model=None).analyses
            except Exception as exc:  # noqa: BLE001 - one broken case is skipped and said
                progress(f"{name}/{t['case_id']}: skipped ({type(exc).__name__})")
                continue
            sid = truth_step(a.run, t["root"])
            route = route_name(name, t.get("route"))
            fault = FAULT_NAMES.get(str(t.get("fault_kind", "?")), str(t.get("fault_kind", "?")))
            truth: list[Key] = [] if sid is None else [(None, sid)]
            yield _fill(Case(name, route, fault, str(t.get("agent", "?")), f"{name}/{t['case_id']}/{setting}", truth), a)


def build(workdir: Path, progress: Callable[[str], None] = print) -> list[Case]:
    """The whole corpus, in a fixed order."""
    out: list[Case] = []
    sources: list[tuple[str, Callable[[], Iterator[Case]]]] = [
        ("quality", quality),
        ("tau", tau),
        ("whowhen", whowhen),
        *[(s, lambda s=s: suite(s, workdir, progress)) for s in DEV_SUITES],  # type: ignore[misc]
    ]
    for name, fn in sources:
        n0 = len(out)
        out.extend(fn())
        progress(f"corpus: {name}: {len(out) - n0} cases")
    return out


def save(cases: list[Case], path: Path) -> None:
    """Write the corpus as JSON lines."""
    path.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in cases))


def load(path: Path) -> list[Case]:
    """Read a corpus written by `save`."""
    return [Case.from_dict(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


__all__ = ["DEV_SUITES", "HELD_OUT", "Case", "build", "load", "save"]
