"""The fleet benchmark: grouping quality on a generated fleet, speed, 100,000 runs, the Dask path.

``python -m benchmarks --only fleet`` runs it (``--quick``: 600 runs and
10,000 for the scale test).  Measured:

1. **Grouping quality** on the generator's fleet (`benchmarks.fleetgen`, at
   least 2,000 recorded runs): purity (share of failed runs whose group's
   majority fault kind is their own) and completeness (share of failed runs in
   the largest group of their fault kind; inverse purity), once grouping on
   the analysis's top candidate and once on the injected step, so that a
   limit of the root-cause ranking and a limit of the grouping are told
   apart; and whether the largest group of each fault kind names the injected
   step.
2. **Speed**: failed runs analyzed per second on one process and on every
   core, per core.
3. **Scale**: the recorded runs restamped into a store of 100,000 runs, grouped
   on every core in a child process whose wall time and peak memory (the
   parent's and the largest worker's resident set) are reported.
4. **Distributed**: the fleet exported as Parquet and grouped on a local Dask
   cluster: the same groups as the single-machine path, and the time.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from benchmarks.fleet_agents import FAULT_STEPS
from benchmarks.fleetgen import generate, restamp, write_store
from trajdebug.fleet.engine import FleetReport, default_workers, run_fleet
from trajdebug.store import Store


ROOT = Path(__file__).resolve().parent.parent


def _kinds(store: Path) -> dict[str, str]:
    with Store(store) as st:
        out = {}
        for rid in st.run_ids():
            fault = st.load_run(rid).metadata.get("fault") or {}
            if fault.get("type"):
                out[rid] = str(fault["type"])
    return out


def purity(report: FleetReport, kinds: Mapping[str, str]) -> dict[str, Any]:
    """Purity and completeness of the report's groups against the injected fault kinds."""
    findings = [f for f in report.findings or [] if f.run_id in kinds]
    by_group: dict[str, Counter[str]] = {}
    by_kind: dict[str, Counter[str]] = {}
    for f in findings:
        by_group.setdefault(f.group_id, Counter())[kinds[f.run_id]] += 1
        by_kind.setdefault(kinds[f.run_id], Counter())[f.group_id] += 1
    n = len(findings) or 1
    pure = sum(c.most_common(1)[0][1] for c in by_group.values()) / n
    complete = sum(c.most_common(1)[0][1] for c in by_kind.values()) / n
    names = {gid: g.signature.root_name for gid, g in report.groups.groups.items()}
    per_kind = {}
    for kind, c in sorted(by_kind.items()):
        gid, size = c.most_common(1)[0]
        per_kind[kind] = {
            "runs": sum(c.values()),
            "groups": len(c),
            "top_group": gid,
            "top_group_share": round(size / sum(c.values()), 4),
            "top_group_root": names.get(gid),
            "injected_step": FAULT_STEPS.get(kind),
            "names_injected_step": names.get(gid) == FAULT_STEPS.get(kind),
        }
    return {
        "failed": len(findings),
        "groups": len(by_group),
        "purity": round(pure, 4),
        "completeness": round(complete, 4),
        "by_kind": per_kind,
    }


_SCALE_JOB = """
import json, os, sys, threading, time
from trajdebug.fleet.engine import run_fleet

def tree_rss():
    # Resident sets of this process and its descendants (the forkserver and its workers), from /proc.
    parent, rss = {}, {}
    for pid in os.listdir('/proc'):
        if pid.isdigit():
            try:
                with open(f'/proc/{pid}/stat') as fh:
                    parent[int(pid)] = int(fh.read().rsplit(')', 1)[1].split()[1])
                with open(f'/proc/{pid}/statm') as fh:
                    rss[int(pid)] = int(fh.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
            except (OSError, ValueError, IndexError):
                pass
    me, tree = os.getpid(), set()
    frontier = [me]
    while frontier:
        p = frontier.pop()
        tree.add(p)
        frontier += [c for c, pp in parent.items() if pp == p and c not in tree]
    return rss.get(me, 0), max((rss.get(p, 0) for p in tree - {me}), default=0), sum(rss.get(p, 0) for p in tree)

peak = [0, 0, 0]
done = threading.Event()
def sample():
    while not done.is_set():
        for i, v in enumerate(tree_rss()):
            peak[i] = max(peak[i], v)
        done.wait(0.25)
threading.Thread(target=sample, daemon=True).start()
t = time.perf_counter()
r = run_fleet([sys.argv[1]], workers=int(sys.argv[2]))
secs = time.perf_counter() - t
done.set()
mib = 2 ** 20
print(json.dumps({'seconds': secs, 'runs': r.runs, 'failed': r.groups.failed, 'groups': len(r.groups.groups),
                  'problems': len(r.problems), 'parent_rss_mib': peak[0] / mib, 'worker_rss_mib': peak[1] / mib,
                  'total_rss_mib': peak[2] / mib}))
"""


def _scale(store: Path, workers: int) -> dict[str, Any]:
    """Group a store in a child process; its wall time and peak memory (sampled from /proc every 0.25 s)."""
    out = subprocess.run(
        [sys.executable, "-c", _SCALE_JOB, str(store), str(workers)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    data: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


def parallel_bench(
    runs: int = 10_000,
    part_counts: tuple[int, ...] = (1, 2, 4, 8),
    *,
    recorded: int = 400,
    progress: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Dask with 2 workers against the local engine on ``runs`` runs, and the scaling with the number of parts.

    ``recorded`` runs of the fleet agents are recorded, restamped into ``runs`` runs, stored and
    exported as Parquet datasets of each part count.  One `LocalCluster` of two single-threaded
    worker processes (no dashboard) serves every measurement, so its start (reported apart) is not
    in the times.  Each dataset is grouped with one task per part (``split=False``) and with the
    engine's split (parts sliced by run to twice the workers); the local engine groups the store
    on two processes.
    """
    from distributed import LocalCluster

    from trajdebug.fleet.distributed import run_fleet_dask
    from trajdebug.fleet.parquet import iter_dataset, write_dataset

    out: dict[str, Any] = {"runs": runs, "recorded": recorded, "workers": 2}
    with tempfile.TemporaryDirectory(prefix="trajdebug-parallel-") as tmp:
        base = Path(tmp) / "base.db"
        progress(f"parallel: recording {recorded} runs, restamped into {runs:,}")
        generate(base, recorded)
        with Store(base) as st:
            rec = [st.load_run(r) for r in st.run_ids()]
        store = Path(tmp) / "fleet.db"
        write_store(restamp(rec, runs), store, batch=500)
        progress("parallel: local engine, 2 processes")
        local = run_fleet([store], workers=2)
        out["local_seconds"] = round(local.seconds, 2)
        out["failed"] = local.groups.failed
        t0 = time.perf_counter()
        cluster = LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            worker_dashboard_address=None,
            scheduler_kwargs={"dashboard": False},
        )  # type: ignore[no-untyped-call]
        out["cluster_start_seconds"] = round(time.perf_counter() - t0, 2)
        rows = []
        try:
            dumped = Path(tmp) / "all"
            write_dataset((r for r in iter_store(store)), dumped, part_size=runs, part_rows=10**12)
            every = list(iter_dataset(dumped))
            for parts in part_counts:
                ds = Path(tmp) / f"ds{parts}"
                write_dataset(every, ds, part_size=-(-runs // parts), part_rows=10**12)
                for split in (False, True):
                    progress(f"parallel: dask, {parts} part(s), split={split}")
                    rep = run_fleet_dask(ds, address=cluster.scheduler_address, split=split)
                    rows.append(
                        {
                            "parts": parts,
                            "split": split,
                            "seconds": round(rep.seconds, 2),
                            "speedup_vs_local": round(local.seconds / rep.seconds, 2),
                            "same_groups": rep.groups.to_dict() == local.groups.to_dict(),
                        }
                    )
        finally:
            cluster.close()  # type: ignore[no-untyped-call]
        out["dask"] = rows
        # Measured again last: the cluster's workers stay warm between its measurements (imports,
        # caches), the local engine starts a fresh pool each time; the machine's load drifts too.
        progress("parallel: local engine again, 2 processes")
        again = run_fleet([store], workers=2)
        out["local_seconds_after"] = round(again.seconds, 2)
    return out


def iter_store(path: Path) -> Any:
    """The runs of a store, one at a time."""
    with Store(path) as st:
        for rid in st.run_ids():
            yield st.load_run(rid)


def run_fleet_bench(*, quick: bool = False, progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the fleet benchmark (see the module docstring); returns its results."""
    n = 600 if quick else 2400
    big = 10_000 if quick else 100_000
    cores = default_workers()
    out: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "quick": quick,
        "cores": cores,
    }
    with tempfile.TemporaryDirectory(prefix="trajdebug-fleet-") as tmp:
        store = Path(tmp) / "fleet.db"
        progress(f"fleet: recording {n} runs of the fleet agents")
        t0 = time.perf_counter()
        generate(store, n)
        out["generate"] = {"runs": n, "seconds": round(time.perf_counter() - t0, 2)}
        kinds = _kinds(store)
        out["fault_kinds"] = dict(sorted(Counter(kinds.values()).items()))

        progress("fleet: grouping on one process and on every core")
        one = run_fleet([store], workers=1, keep_findings=True)
        every = run_fleet([store], workers=cores, keep_findings=True)
        truth = run_fleet([store], workers=cores, keep_findings=True, root_from="fault.step_id")
        out["same_groups_parallel"] = one.groups.to_dict() == every.groups.to_dict()
        out["quality_top_candidate"] = purity(every, kinds)
        out["quality_injected_step"] = purity(truth, kinds)
        out["spectrum"] = [s.to_dict() for s in every.suspects(3)]
        out["speed"] = {
            "runs": one.runs,
            "failed": one.groups.failed,
            "one_process_seconds": round(one.seconds, 3),
            "all_cores_seconds": round(every.seconds, 3),
            "failed_per_second_one_core": round(one.groups.failed / one.seconds, 1),
            "runs_per_second_one_core": round(one.runs / one.seconds, 1),
            "failed_per_second_per_core_all": round(every.groups.failed / every.seconds / cores, 1),
        }

        progress("fleet: exporting Parquet and grouping on a local Dask cluster")
        from trajdebug.fleet.distributed import run_fleet_dask
        from trajdebug.fleet.engine import export_source
        from trajdebug.fleet.parquet import group_counts

        t0 = time.perf_counter()
        export_source(store, Path(tmp) / "ds", analyses=True)
        export_s = time.perf_counter() - t0
        dask = run_fleet_dask(Path(tmp) / "ds", workers=cores)
        t0 = time.perf_counter()
        duck = group_counts(Path(tmp) / "ds")
        duck_s = time.perf_counter() - t0
        out["distributed"] = {
            "engine": "dask.distributed LocalCluster",
            "workers": dask.workers,
            "export_seconds": round(export_s, 2),
            "seconds": round(dask.seconds, 2),
            "same_groups": dask.groups.to_dict() == one.groups.to_dict(),
            "duckdb_group_counts_seconds": round(duck_s, 3),
            "duckdb_same_counts": {g["group_id"]: g["count"] for g in duck} == one.groups.counts(),
        }

        progress(f"fleet: restamping into a store of {big:,} runs")
        with Store(store) as st:
            recorded = [st.load_run(r) for r in st.run_ids()]
        big_store = Path(tmp) / "big.db"
        t0 = time.perf_counter()
        write_store(restamp(recorded, big), big_store, batch=500)
        fill_s = time.perf_counter() - t0
        del recorded
        progress(f"fleet: grouping {big:,} stored runs on {cores} processes")
        scale = _scale(big_store, cores)
        scale.update(
            {
                "stored_runs": big,
                "store_mib": round(os.path.getsize(big_store) / 2**20, 1),
                "fill_seconds": round(fill_s, 1),
                "workers": cores,
            }
        )
        out["scale"] = {k: round(v, 2) if isinstance(v, float) else v for k, v in scale.items()}
    out["bench_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def render_parallel(d: Mapping[str, Any]) -> list[str]:
    """The parallel measurement as a Markdown table."""
    lines = [
        f"{d['runs']:,} runs ({d['failed']:,} failed; {d['recorded']} recorded runs restamped), local engine on "
        f"2 processes: {d['local_seconds']} s first, {d.get('local_seconds_after', '-')} s measured again last "
        f"(speedups below are against the first). Dask `LocalCluster`, 2 single-threaded workers (started once in "
        f"{d['cluster_start_seconds']} s, not included; warm after the first measurement):",
        "",
        "| parts | tasks | seconds | speedup vs local | same groups |",
        "|---|---|---|---|---|",
    ]
    for r in d["dask"]:
        tasks = "one per part" if not r["split"] else "split to 4+"
        lines.append(
            f"| {r['parts']} | {tasks} | {r['seconds']} | {r['speedup_vs_local']}× | {'yes' if r['same_groups'] else '**no**'} |"
        )
    return lines


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def render_section(d: Mapping[str, Any]) -> list[str]:
    """The fleet section of docs/benchmarks.md."""
    q, t, s, dist, sc = (
        d["quality_top_candidate"],
        d["quality_injected_step"],
        d["speed"],
        d["distributed"],
        d["scale"],
    )
    lines = [
        "## 7. Fleet: grouping failures across runs",
        "",
        f"Run {d['date']}{' (quick)' if d.get('quick') else ''} with `python -m benchmarks --only fleet`. "
        f"The generator (`benchmarks/fleetgen.py`) recorded {d['generate']['runs']:,} runs of four small agents "
        "(`benchmarks/fleet_agents.py`: support-bot, sql-analyst, web-researcher, coder) with the recording SDK "
        f"in {d['generate']['seconds']} s: {s['failed']} failed with one of "
        f"{len(d['fault_kinds'])} injected fault kinds, the rest passed (some after a retried transient error).",
        "",
        "### Grouping quality against the injected fault kinds",
        "",
        "| grouped on | failed runs | groups | purity | completeness |",
        "|---|---|---|---|---|",
        f"| the analysis's top candidate | {q['failed']} | {q['groups']} | {_pct(q['purity'])} | {_pct(q['completeness'])} |",
        f"| the injected step (ground truth) | {t['failed']} | {t['groups']} | {_pct(t['purity'])} | {_pct(t['completeness'])} |",
        "",
        "Purity: share of failed runs whose group's majority fault kind is their own. Completeness (inverse "
        "purity): share of failed runs in the largest group of their fault kind. The second row groups on the "
        "injected step instead of the localization's answer (evidence and path left out of the signature), so the "
        "difference between the rows is what the root-cause ranking costs the grouping.",
        "",
        "| fault kind | runs | groups | largest group's share | its root | injected step | names it |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, k in q["by_kind"].items():
        lines.append(
            f"| `{kind}` | {k['runs']} | {k['groups']} | {_pct(k['top_group_share'])} | `{k['top_group_root']}` | "
            f"`{k['injected_step']}` | {'yes' if k['names_injected_step'] else '**no**'} |"
        )
    named = sum(k["names_injected_step"] for k in q["by_kind"].values())
    lines += [
        "",
        f"The largest group of {named} of {len(q['by_kind'])} fault kinds names the injected step "
        "(grouping on the top candidate).",
        "",
        "### Speed and scale",
        "",
        "| measure | value |",
        "|---|---|",
        f"| failed runs analyzed per second, one process | {s['failed_per_second_one_core']} |",
        f"| runs read (and their spectrum counted) per second, one process | {s['runs_per_second_one_core']} |",
        f"| failed runs analyzed per second per core, {d['cores']} processes (pool start included) | {s['failed_per_second_per_core_all']} |",
        f"| same groups on 1 and {d['cores']} processes | {'yes' if d['same_groups_parallel'] else '**no**'} |",
        f"| {sc['stored_runs']:,} stored runs ({sc['store_mib']} MiB store, {sc['failed']:,} failed) grouped on "
        f"{sc['workers']} processes | {sc['seconds']} s ({sc['groups']} groups) |",
        f"| that job's runs read per second per core / failed runs analyzed per second per core | "
        f"{sc['runs'] / sc['seconds'] / sc['workers']:.0f} / {sc['failed'] / sc['seconds'] / sc['workers']:.0f} |",
        f"| peak memory of that job: parent / largest worker / all its processes (RSS) | "
        f"{sc['parent_rss_mib']:.0f} / {sc['worker_rss_mib']:.0f} / {sc['total_rss_mib']:.0f} MiB |",
        f"| Parquet export of the {d['generate']['runs']:,} runs with analyses | {dist['export_seconds']} s |",
        f"| Dask ({dist['engine']}, {dist['workers']} workers, start included) | {dist['seconds']} s |",
        f"| Dask path gives the single-machine groups | {'yes' if dist['same_groups'] else '**no**'} |",
        f"| DuckDB group counts over the analyses table (same as Python: {'yes' if dist['duckdb_same_counts'] else '**no**'}) | {dist['duckdb_group_counts_seconds']} s |",
        "",
        f"The {sc['stored_runs']:,}-run store is the recorded runs copied under new run ids and start times "
        f"(filled in {sc['fill_seconds']} s). The job streams: the parent holds the run ids and a few units of "
        "64 runs in flight, workers load their own runs from the store, and the aggregates grow with groups and "
        "features, not runs. This machine's two cores are shared with other work, so times vary run to run.",
        "",
        "Top of the spectrum ranking (what failing runs have that passing runs don't):",
        "",
        "| agent | feature | Ochiai | DStar | failing | passing |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {x['agent']} | {x['description']} | {x['ochiai']:.3f} | {x['dstar']:.1f} | {x['ef']}/{x['failing']} | {x['ep']}/{x['passing']} |"
        for x in d["spectrum"]
    ]
    lines.append("")
    return lines


__all__ = ["purity", "render_section", "run_fleet_bench"]


if __name__ == "__main__":  # python -m benchmarks.fleet --parallel RUNS
    import argparse

    ap = argparse.ArgumentParser(description="The fleet's parallel measurement (Dask vs the local engine).")
    ap.add_argument("--parallel", type=int, default=2_000, metavar="RUNS", help="Runs (up to 10,000).")
    ap.add_argument("--parts", default="1,2,4,8", help="Part counts, comma-separated.")
    a = ap.parse_args()
    result = parallel_bench(min(a.parallel, 10_000), tuple(int(x) for x in a.parts.split(",")))
    print(json.dumps(result, indent=1))
    print("\n".join(render_parallel(result)))
