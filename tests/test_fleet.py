"""Tests of the fleet job: signatures, groups, spectrum ranking, the local engine, reports and plots."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from trajdebug.cli import cli
from trajdebug.core.model import Run, Step
from trajdebug.fleet import GroupTable, Signature, Spectrum, dstar, normalize, ochiai, run_fleet, signature_of
from trajdebug.fleet.groups import Finding, group_from_dict
from trajdebug.fleet.plots import plot_group_sizes, plot_timeline
from trajdebug.fleet.render import fleet_markdown
from trajdebug.store import Store


def _fault_kinds(store: Path) -> dict[str, str | None]:
    with Store(store) as st:
        return {rid: (st.load_run(rid).metadata.get("fault") or {}).get("type") for rid in st.run_ids()}


def _injected_names(store: Path) -> dict[str, set[str]]:
    """Per fault kind, the names of the steps it was injected into."""
    out: dict[str, set[str]] = {}
    with Store(store) as st:
        for rid in st.run_ids():
            run = st.load_run(rid)
            fault = run.metadata.get("fault") or {}
            steps = run.step_map()
            if fault.get("step_id") in steps:
                out.setdefault(str(fault.get("type")), set()).add(steps[fault["step_id"]].name)
    return out


def test_group_is_named_after_the_cause_leading_through_a_failure_step() -> None:
    """A failing step ranked first yields the name to an upstream candidate whose path runs through it
    (or through another call of the same step); a failing step nothing leads through stays the root."""
    from trajdebug.fleet.signature import root_candidate

    failures = [{"step_id": "t1"}, {"step_id": "t2"}]
    top = {"step_id": "t2", "name": "run_tests", "path": ["t2", "end"]}
    other = {"step_id": "t1", "name": "run_tests", "path": ["t1", "end"]}
    writer = {"step_id": "w", "name": "write_code", "path": ["w", "t1", "end"]}
    names = {"t1": "run_tests", "t2": "run_tests", "w": "write_code"}
    doc = {"failures": failures, "root_causes": [top, other, writer]}
    assert root_candidate(doc, names) is writer
    assert root_candidate(doc) is top  # without names, t1 is another step
    through = {"step_id": "w", "name": "write_code", "path": ["w", "t2", "end"]}
    assert root_candidate({"failures": failures, "root_causes": [top, through]}) is through
    alone = {"step_id": "s", "name": "search", "path": ["s", "x"]}
    assert root_candidate({"failures": failures, "root_causes": [top, alone]}) is top


def test_a_failure_step_the_analysis_calls_a_root_yields_only_to_another_root() -> None:
    """A tool that timed out by itself (the analysis labels it a root) names its group though a suspect's
    path runs through it; a root upstream of it (faulty by its own evidence, as code that calls an API that
    does not exist) still takes the name, and a failure step labelled a suspect yields as before."""
    from trajdebug.fleet.signature import root_candidate

    failures = [{"step_id": "pay"}]
    suspect = {"step_id": "lookup", "name": "lookup_order", "path": ["lookup", "pay"], "structural": False}
    timed_out = {"step_id": "pay", "name": "issue_refund", "path": ["pay"], "structural": True}
    assert root_candidate({"failures": failures, "root_causes": [timed_out, suspect]}) is timed_out
    writer = {**suspect, "step_id": "w", "name": "write_code", "path": ["w", "pay"], "structural": True}
    assert root_candidate({"failures": failures, "root_causes": [timed_out, suspect, writer]}) is writer
    raised_on_input = {**timed_out, "structural": False}
    assert root_candidate({"failures": failures, "root_causes": [raised_on_input, suspect]}) is suspect


def test_normalize_replaces_ids_numbers_timestamps_and_quoted_values() -> None:
    """Ids, numbers, hashes, timestamps and quoted values become placeholders; words stay."""
    text = "KeyError: '2025-Q2' at row 17 of run 4bf92f3577b34da6 at 2026-11-30T20:31:06Z (uuid 123e4567-e89b-12d3-a456-426614174000)"
    assert normalize(text) == "KeyError: <v> at row <n> of run <id> at <ts> (uuid <id>)"
    assert normalize("step_3 took 1.5e3 ms") == "step_<n> took <n> ms"


def test_normalize_keeps_an_identifier_whose_letters_and_digits_run_together() -> None:
    """Digits run together with letters are part of a name, never a number to mask: "order A103" stays whole,
    where "refund 129900.0 EUR" is still masked (nu64b: `fleet` showed "A103" as "A1<n>")."""
    assert normalize("why the A103 refund of 129900.0 EUR was refused (gpt4o, x-42)") == (
        "why the A103 refund of <n> EUR was refused (gpt4o, x-<n>)"
    )


def test_signature_ignores_ids_and_numbers_but_not_the_root() -> None:
    """Two analyses differing only in ids and numbers share a group; another root step does not."""

    def analysis(step_id: str, msg: str, root_name: str) -> dict[str, object]:
        return {
            "failures": [
                {
                    "step_id": "f" + step_id,
                    "detector": "step-error",
                    "signature": "exception:KeyError",
                    "message": msg,
                }
            ],
            "root_causes": [
                {
                    "step_id": step_id,
                    "name": root_name,
                    "kind": "tool",
                    "agent": None,
                    "reasons": [f"returned {len(msg)} rows; its query yields 8 on the database"],
                    "path": [step_id, "x" + step_id, "f" + step_id],
                }
            ],
        }

    kinds_a = {"a1": "tool", "xa1": "parse", "fa1": "llm"}
    kinds_b = {"b2": "tool", "xb2": "parse", "fb2": "llm"}
    a = signature_of(analysis("a1", "KeyError: '2025-Q3'", "run_sql"), "sql-agent", kinds_a)
    b = signature_of(analysis("b2", "KeyError: '2024-Q1' again", "run_sql"), "sql-agent", kinds_b)
    c = signature_of(analysis("b2", "KeyError: '2024-Q1'", "fetch"), "sql-agent", kinds_b)
    assert a == b and a.group_id == b.group_id
    assert a.path == "tool>parse>llm" and a.evidence == "returned <n> rows"
    assert c.group_id != a.group_id
    assert Signature.from_dict(a.to_dict()) == a


def test_signature_prefers_the_analysis_signals_when_present() -> None:
    """A candidate's ``signals`` name the evidence kind, whatever its reasons say."""
    data = {
        "failures": [{"step_id": "s2", "signature": "json"}],
        "root_causes": [
            {
                "step_id": "s1",
                "name": "plan",
                "kind": "llm",
                "signals": ["lineage", "diagnoser:json"],  # strongest first
                "reasons": ["anything at all 42"],
                "path": ["s1", "s2"],
            }
        ],
    }
    sig = signature_of(data, "agent", {"s1": "llm", "s2": "parse"})
    assert sig.evidence == "lineage"  # the family of the strongest signal


def test_path_shape_collapses_repeated_kinds() -> None:
    """A loop that ran three times and one that ran once give the same path shape."""
    base = {"failures": [{"step_id": "z", "signature": "run-failure"}]}
    long = {
        **base,
        "root_causes": [{"step_id": "a", "name": "n", "kind": "llm", "path": ["a", "b", "c", "d", "z"]}],
    }
    short = {**base, "root_causes": [{"step_id": "a", "name": "n", "kind": "llm", "path": ["a", "b", "z"]}]}
    kinds = {"a": "llm", "b": "tool", "c": "tool", "d": "tool", "z": "output"}
    assert signature_of(long, "x", kinds).path == signature_of(short, "x", kinds).path == "llm>tool>output"


def _finding(run_id: str, start: int, sig: Signature, critical: bool = False) -> Finding:
    return Finding(
        run_id, sig.agent, start, sig, "CRITICAL" if critical else "ERROR", critical, "s1", f"boom {start}"
    )


def test_group_table_counts_and_merges_in_any_order() -> None:
    """Counts, first/last seen, critical share and examples do not depend on arrival order or partitioning."""
    s1 = Signature("a", "tool", "fetch", "-", "exception:Timeout", "x", "tool")
    s2 = Signature("a", "llm", "plan", "-", "json", "y", "llm>parse")
    findings = [_finding(f"r{i}", 1000 + i, s1 if i % 3 else s2, critical=i % 2 == 0) for i in range(30)]
    one = GroupTable()
    one.extend(findings)
    left, right = GroupTable(), GroupTable()
    left.extend(findings[::-1][:13])
    right.extend(findings[::-1][13:])
    left.merge(right)
    assert one.to_dict() == left.to_dict()
    g1 = one.groups[s1.group_id]
    assert (g1.count, g1.first_seen_ns, g1.last_seen_ns) == (20, 1001, 1029)
    assert [r for _, r, _ in g1.examples] == ["r1", "r2", "r4"]
    assert group_from_dict(g1.to_dict()).to_dict() == g1.to_dict()


def test_groups_rank_recent_and_critical_before_merely_large() -> None:
    """A smaller group of critical, recent failures outranks a larger group last seen weeks ago."""
    old = Signature("a", "tool", "old", "-", "e", "-", "-")
    hot = Signature("a", "tool", "hot", "-", "e", "-", "-")
    day = 86_400 * 10**9
    t = GroupTable()
    t.extend(_finding(f"o{i}", i, old) for i in range(20))
    t.extend(_finding(f"h{i}", 30 * day + i, hot, critical=True) for i in range(6))
    assert [g.signature.root_name for g in t.ranked()] == ["hot", "old"]


def test_ochiai_and_dstar_follow_their_formulas() -> None:
    """Ochiai is ef/sqrt((ef+nf)(ef+ep)); DStar is ef²/(ep+nf)."""
    assert ochiai(4, 1, 2) == pytest.approx(4 / (6 * 5) ** 0.5)
    assert dstar(4, 1, 2) == pytest.approx(16 / 3)
    assert ochiai(0, 3, 5) == 0.0


def _run(run_id: str, outcome: str, task: str, output: object) -> Run:
    steps = (
        Step("s1", "plan", "llm", output={"query": "q"}),
        Step("s2", "search", "tool", output=output),
    )
    return Run(run_id, "agent", outcome=outcome, metadata={"task": task}, steps=steps)  # type: ignore[arg-type]


def test_spectrum_ranks_what_failing_runs_have_that_passing_runs_do_not() -> None:
    """An empty tool result seen in failing runs only tops the ranking; steps every run has are left out."""
    sp = Spectrum()
    for i in range(10):
        sp.add_run(_run(f"f{i}", "failure", "t", []), failed=True)
        sp.add_run(_run(f"p{i}", "success", "t", ["hit"]), failed=False)
    top = sp.rank()
    assert top[0].description == "search returned empty"
    assert (top[0].ef, top[0].ep, top[0].ochiai) == (10, 0, 1.0)
    assert all(not s.feature.startswith("step:") for s in top)


def test_spectrum_is_stratified_by_task() -> None:
    """A step only the often-failing task runs is not blamed when, within each task, it does not predict failure."""
    sp = Spectrum()
    for i in range(20):
        # task "hard" fails 3 of 4 runs and always runs step "extra"; task "easy" never runs it.
        hard = Run(
            f"h{i}",
            "agent",
            outcome="failure" if i % 4 else "success",
            metadata={"task": "hard"},
            steps=(
                Step("s1", "extra", "tool", output="x"),
                Step("s2", "lookup", "tool", output=[] if i % 4 else ["y"]),
            ),
        )
        easy = Run(
            f"e{i}",
            "agent",
            outcome="failure" if i % 10 == 0 else "success",
            metadata={"task": "easy"},
            steps=(Step("s2", "lookup", "tool", output=[] if i % 10 == 0 else ["y"]),),
        )
        sp.add_run(hard, hard.outcome == "failure")
        sp.add_run(easy, easy.outcome == "failure")
    features = [s.feature for s in sp.rank(top=10)]
    assert features[0] == "empty:lookup"
    assert "step:-/tool/extra" not in features


def test_spectrum_derives_lacking_keys() -> None:
    """'Output lacks key K' counts runs that ran the step without K, from two counters."""
    sp = Spectrum()
    for _ in range(6):
        sp.add("a", None, True, {"step:-/parse/extract", "key:extract:title"})
        sp.add("a", None, False, {"step:-/parse/extract", "key:extract:title", "key:extract:date"})
    top = sp.rank()
    assert top[0].feature == "lacks:extract:date" and (top[0].ef, top[0].ep) == (6, 0)


def test_fleet_groups_each_injected_fault_of_the_generated_fleet(fleet_store: Path) -> None:
    """On recorded runs of the benchmark agents, every failed run is grouped and each fault kind's largest
    group holds most of that kind's runs; a parallel run gives the same groups."""
    report = run_fleet([fleet_store], workers=1, keep_findings=True)
    kinds = _fault_kinds(fleet_store)
    assert report.runs == len(kinds)
    failed = [rid for rid, k in kinds.items() if k]
    assert report.groups.failed == len(report.findings or []) > 0
    assert {f.run_id for f in report.findings or []} <= set(kinds)
    assert not report.problems
    by_kind: dict[str, Counter[str]] = {}
    for f in report.findings or []:
        by_kind.setdefault(str(kinds[f.run_id]), Counter())[f.group_id] += 1
    assert len(by_kind) >= 6 and len(failed) >= len(report.findings or [])
    for kind, groups in by_kind.items():
        assert groups.most_common(1)[0][1] / sum(groups.values()) >= 0.8, kind
    parallel = run_fleet([fleet_store], workers=2)
    assert parallel.groups.to_dict() == report.groups.to_dict()
    assert parallel.workers == 2
    # Titles name the root, not where the failure showed: the main group of all but at most one
    # fault kind is named after the step the fault was injected into.
    injected = _injected_names(fleet_store)
    titled = {g.group_id: g.signature.root_name for g in report.groups.groups.values()}
    named = [kind for kind, groups in by_kind.items() if titled[groups.most_common(1)[0][0]] in injected[kind]]
    assert len(named) >= len(by_kind) - 1, (named, by_kind.keys())


def test_fleet_groups_on_the_injected_step_when_asked(fleet_store: Path) -> None:
    """``root_from`` groups on the step the metadata names (the injected step), separating grouping from ranking."""
    report = run_fleet([fleet_store], workers=1, root_from="fault.step_id")
    names = {g.signature.root_name for g in report.groups.groups.values()}
    assert names <= {"classify", "lookup_order", "write_sql", "run_sql", "fetch", "extract", "write_code"}
    assert all(g.signature.evidence == "-" for g in report.groups.groups.values())


def test_fleet_reports_the_share_verified_by_replay(tmp_path: Path, fleet_store: Path) -> None:
    """A replay of a failed run that patched its root step and passed counts as verified; replays are not fleet runs."""
    store = tmp_path / "s.db"
    shutil.copy(fleet_store, store)
    first = run_fleet([store], workers=1, keep_findings=True)
    target = next(f for f in first.findings or [] if f.root_step)
    with Store(store) as st:
        original = st.load_run(target.run_id)
        replay = Run(
            "r" * 32,
            original.name,
            start_ns=original.start_ns + 1,
            outcome="success",
            metadata={"replay_of": target.run_id, "patch": {target.root_step: {"output": 1}}},
            steps=original.steps,
        )
        st.save_run(replay)
    again = run_fleet([store], workers=1)
    g = again.groups.groups[target.group_id]
    assert (g.replayed, g.verified) == (1, 1) and g.verified_share == 1.0
    assert again.runs == first.runs


def test_fleet_names_unreadable_sources_and_keeps_the_rest(tmp_path: Path, fleet_store: Path) -> None:
    """A file that is no trace is named in the problems; the store beside it is still grouped."""
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(fleet_store, folder / "a.db")
    (folder / "notes.json").write_text("{not json", encoding="utf-8")
    report = run_fleet([folder], workers=1)
    assert report.groups.failed > 0
    assert any("notes.json" in p for p in report.problems)


def test_fleet_command_prints_json_markdown_and_plots(tmp_path: Path, fleet_store: Path) -> None:
    """`trajdebug fleet --json` gives ranked groups and the spectrum; markdown is one alert per group; plots are PNGs."""
    r = CliRunner().invoke(
        cli, ["fleet", str(fleet_store), "--json", "--workers", "1", "--plots", str(tmp_path / "p")]
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["failed"] == sum(g["count"] for g in data["groups"])
    assert {
        "group_id",
        "title",
        "count",
        "critical",
        "first_seen_ns",
        "last_seen_ns",
        "examples",
        "verified_share",
    } <= set(data["groups"][0])
    assert data["spectrum"] and {"ochiai", "dstar", "ef", "ep"} <= set(data["spectrum"][0])
    for name in ("timeline.png", "groups.png"):
        assert (tmp_path / "p" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = CliRunner().invoke(cli, ["fleet", str(fleet_store), "--format", "markdown", "--workers", "1"])
    assert md.exit_code == 0
    assert md.stdout.count("\n## #") == len(data["groups"])
    assert "What failing runs have that passing runs don't" in md.stdout
    text = CliRunner().invoke(cli, ["fleet", str(fleet_store), "--workers", "1"])
    assert text.exit_code == 0 and data["groups"][0]["group_id"] in text.stdout


def test_fleet_markdown_escapes_run_content() -> None:
    """Names and messages from runs cannot inject Markdown (links, HTML, table breaks)."""
    sig = Signature("evil|agent", "tool", "<script>x</script>", "-", "e", "-", "-")
    t = GroupTable()
    t.add(Finding("r1", "evil|agent", 1, sig, "ERROR", False, "s", "[click](http://x) `code`"))

    class _Report:
        groups = t
        runs = 1

        def suspects(self) -> list[object]:
            return []

    md = fleet_markdown(_Report())
    assert "<script>" not in md and "[click](" not in md and "evil|agent" not in md
    assert "\\<script\\>" in md


def test_plots_write_svg_and_refuse_other_formats(tmp_path: Path) -> None:
    """The suffix picks the format; anything but .png or .svg is refused with the file named."""
    sig = Signature("a", "tool", "fetch", "-", "e", "-", "-")
    t = GroupTable()
    t.extend(_finding(f"r{i}", i * 3_600 * 10**9, sig) for i in range(50))
    out = plot_timeline(list(t.groups.values()), tmp_path / "t.svg")
    assert out.read_text(encoding="utf-8").lstrip().startswith(("<?xml", "<svg"))
    with pytest.raises(ValueError, match=r"t\.pdf"):
        plot_group_sizes(list(t.groups.values()), tmp_path / "t.pdf")


def test_fleet_groups_the_demo_made_fleet_with_its_replay_verifications(tmp_path: Path) -> None:
    """Runs made by `trajdebug demo` (verified by replay) group by fault, with the verified share; the
    demo's reference runs and replays are not counted as runs of the fleet."""
    store = tmp_path / "demo.db"
    for args in (
        ["--fault", "wrong-column"],
        ["--fault", "wrong-column"],
        ["--fault", "truncated-rows"],
        ["--clean"],
    ):
        r = CliRunner().invoke(cli, ["demo", *args, "--store", str(store), "--json"])
        assert r.exit_code == 0, r.output
    out = CliRunner().invoke(cli, ["fleet", str(store), "--json", "--workers", "1"])
    data = json.loads(out.stdout)
    assert (data["runs"], data["failed"]) == (4, 3)
    sizes = sorted(g["count"] for g in data["groups"])
    assert sizes == [1, 2]
    big = next(g for g in data["groups"] if g["count"] == 2)
    assert big["signature"]["root_name"] == "write_sql" and "OperationalError" in big["signature"]["error"]
    assert big["replayed"] == 2 and big["verified_share"] == 1.0


def test_fleet_reads_otlp_exports_to_the_same_groups(tmp_path: Path, fleet_store: Path) -> None:
    """The fleet exported as OTLP/JSON (a folder holding the file) groups exactly as the store does."""
    (tmp_path / "otlp").mkdir()
    r = CliRunner().invoke(
        cli, ["export", str(fleet_store), "--to", "otlp", "-o", str(tmp_path / "otlp" / "spans.json")]
    )
    assert r.exit_code == 0, r.output
    from_store = run_fleet([fleet_store], workers=1)
    from_otlp = run_fleet([tmp_path / "otlp"], workers=1)
    assert (from_otlp.runs, from_otlp.problems) == (from_store.runs, [])
    assert from_otlp.groups.counts() == from_store.groups.counts()


def _priced_store(path: Path) -> tuple[float, float]:
    """Six runs in three sessions, two failing the same way; returns (cost of all, cost of the failed)."""
    import trajdebug
    from trajdebug.usage import run_usage

    for i in range(6):
        with trajdebug.run("priced", store=path, session=f"s{i % 3}") as r:
            with trajdebug.step("ask", kind="llm") as s:
                s.usage(model="gpt-4o", prompt_tokens=1000 * (i + 1), completion_tokens=10)
                s.output = "42" if i % 3 else "forty-two"
            if i % 3 == 0:
                with pytest.raises(ValueError), trajdebug.step("parse", kind="parse"):
                    raise ValueError("not a number")
                r.fail("parse failed")
    trajdebug.flush()
    runs = Store(path).load_runs()
    return sum(run_usage(r).cost or 0 for r in runs), sum(
        run_usage(r).cost or 0 for r in runs if r.outcome == "failure"
    )


def test_fleet_reports_cost_of_failure_groups_and_counts_sessions(tmp_path: Path) -> None:
    """Each group carries its members' LLM cost and sessions; the fleet its total cost and failed sessions."""
    total, failed = _priced_store(tmp_path / "p.db")
    report = run_fleet([tmp_path / "p.db"], workers=1)
    [group] = report.groups.ranked()
    assert group.cost == pytest.approx(failed) and len(group.sessions) == 1
    d = report.to_dict()
    assert d["cost"] == pytest.approx(total, rel=1e-5) and d["failed_cost"] == pytest.approx(failed, rel=1e-5)
    assert d["sessions"] == {"sessions": 3, "failed": 1}
    assert d["groups"][0]["sessions"] == 1
    md = fleet_markdown(report)
    assert "LLM cost" in md and "3 sessions, 1 with a failed run" in md


def test_timeline_bucket_follows_the_time_span() -> None:
    """An hour of failures is bucketed by the minute, a day by the hour... and a quarter by the week."""
    from trajdebug.fleet.plots import timeline_bucket

    base = 29_000_000  # minutes since the epoch
    assert timeline_bucket([base, base + 59]) == (1, "minute")
    assert timeline_bucket([base, base + 24 * 60 - 1])[1] == "hour"
    assert timeline_bucket([base, base + 30 * 1440])[1] == "day"
    assert timeline_bucket([base, base + 90 * 1440])[1] == "week"


def test_two_hundred_runs_in_an_hour_plot_as_many_bars(tmp_path: Path) -> None:
    """200 failures within one hour are drawn per minute (many bars), not as one bar for the day."""
    sig = Signature("a", "tool", "fetch", "-", "e", "-", "-")
    t = GroupTable()
    t.extend(_finding(f"r{i}", 1_789_999_980 * 10**9 + i * 18 * 10**9, sig) for i in range(200))
    [g] = t.groups.values()
    assert len(g.timeline) == 60 and sum(g.hourly().values()) == 200
    from trajdebug.fleet.plots import timeline_bucket

    assert timeline_bucket(list(g.timeline)) == (1, "minute")
    assert plot_timeline([g], tmp_path / "t.png").stat().st_size > 0


def test_spectrum_table_keeps_the_whole_feature_on_a_narrow_terminal() -> None:
    """On an 80-column terminal, a long spectrum feature is wrapped, not cut to ~20 characters."""
    import re as _re

    from rich.console import Console

    from trajdebug.fleet.engine import FleetReport
    from trajdebug.fleet.render import render_fleet

    spectrum = Spectrum()
    long = "returned:lookup_customer_account_history:empty-result-after-retry"
    for i in range(10):
        spectrum.add("agent", None, i < 5, {long} if i < 5 else set())
    report = FleetReport(GroupTable(), spectrum, ["x"], runs=10)
    out = Console(width=80, record=True, force_terminal=False)
    render_fleet(report, out)
    text = _re.sub(r"[\s│|]+", "", out.export_text())
    assert next(s.description for s in report.suspects()).replace(" ", "") in text
