"""Plugins registered by entry points: detectors, diagnosers and importers from another package."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from trajdebug.core import plugins
from trajdebug.core.model import Run, Step


@pytest.fixture(name="plugin_pkg")
def _plugin_pkg(tmp_path: Path) -> Iterator[Path]:
    """An installed-looking distribution (a dist-info with entry points) on sys.path."""
    site = tmp_path / "site"
    (site / "myplug").mkdir(parents=True)
    (site / "myplug" / "__init__.py").write_text(
        textwrap.dedent(
            """
            import json
            from trajdebug.analysis._detect import Failure
            from trajdebug.analysis.diagnosers._context import Evidence
            from trajdebug.core.jsonl import ReadResult
            from trajdebug.core.model import Run, Step

            def refund_detector(run, ctx):
                for s in run.steps:
                    if s.name == "refund" and isinstance(s.output, dict) and s.output.get("amount", 0) > 100:
                        yield Failure(s.step_id, "refund-limit", "refund over the limit", "policy")

            def refund_diagnoser(step, ctx):
                if step.name == "approve":
                    yield Evidence(step.step_id, 0.9, "approved without checking the policy", "policy")

            def read_csv_log(path):
                from pathlib import Path
                rows = [line.split(",") for line in Path(path).read_text().splitlines() if line]
                steps = tuple(Step(f"s{i}", name, kind="tool", output=out, source_index=i) for i, (name, out) in enumerate(rows))
                return ReadResult([Run("csv-1", "csv", steps=steps, outcome="failure")], [])
            read_csv_log.sniff = lambda p: str(p).endswith(".csvlog")

            def csv_renderer(analyses):
                return "".join(f"{a.run.run_id},{a.root_causes[0].step_id}\\n" for a in analyses)

            broken = None
            """
        )
    )
    dist = site / "myplug-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: myplug\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[trajdebug.detectors]\nrefund-limit = myplug:refund_detector\n\n"
        "[trajdebug.diagnosers]\npolicy = myplug:refund_diagnoser\n\n"
        "[trajdebug.importers]\ncsvlog = myplug:read_csv_log\nbroken = myplug:missing_name\n\n"
        "[trajdebug.renderers]\ncsv = myplug:csv_renderer\n"
    )
    sys.path.insert(0, str(site))
    for group in plugins.GROUPS:
        plugins.entry_point_callables(group, refresh=True)
    yield site
    sys.path.remove(str(site))
    sys.modules.pop("myplug", None)
    for group in plugins.GROUPS:
        plugins.entry_point_callables(group, refresh=True)


def refund_run() -> Run:
    return Run(
        "r",
        "refunds",
        outcome="failure",
        steps=(
            Step("a", "approve", kind="llm", start_ns=1, end_ns=2, output="approve 250"),
            Step(
                "b",
                "refund",
                kind="tool",
                start_ns=3,
                end_ns=4,
                output={"amount": 250},
                deps=(__import__("trajdebug").Dependency("a"),),
            ),
        ),
    )


class TestPlugins:
    def test_registered_detector_fires(self, plugin_pkg: Path) -> None:
        """A detector from another package's entry point runs with the built-ins."""
        from trajdebug.analysis._detect import detect

        failures = detect(refund_run())
        assert ("b", "refund-limit") in {(f.step_id, f.detector) for f in failures}

    def test_registered_diagnoser_gives_evidence_to_the_search(self, plugin_pkg: Path) -> None:
        """A diagnoser plugin's evidence ranks its step first."""
        from trajdebug.analysis._pipeline import analyze

        analysis = analyze(refund_run())
        assert "a" == analysis.root_causes[0].step_id
        assert any("approved without checking the policy" in r for r in analysis.root_causes[0].reasons)

    def test_registered_importer_reads_its_format(self, plugin_pkg: Path, tmp_path: Path) -> None:
        """An importer plugin is sniffed and used by load_runs; a broken one is skipped with a warning."""
        from trajdebug.sources.load import load_runs

        log = tmp_path / "x.csvlog"
        log.write_text("search,found 3\nrefund,ok\n")
        (run,) = load_runs(log)
        assert ["search", "refund"] == [s.name for s in run.steps]
        assert ["csvlog"] == plugins.plugins()["trajdebug.importers"]

    def test_registered_renderer_formats_analyze_output(self, plugin_pkg: Path, tmp_path: Path) -> None:
        """`trajdebug analyze --format NAME` uses a renderer plugin; an unknown name lists the registered ones."""
        from click.testing import CliRunner

        from trajdebug.cli import cli
        from trajdebug.core.jsonl import write_jsonl

        path = tmp_path / "r.jsonl"
        write_jsonl([refund_run()], path)
        result = CliRunner().invoke(cli, ["analyze", str(path), "--format", "csv"])
        assert 0 == result.exit_code, result.output
        assert "r,a\n" == result.output
        bad = CliRunner().invoke(cli, ["analyze", str(path), "--format", "xml"])
        assert 1 == bad.exit_code
        assert "available: text, markdown, csv" in bad.output

    def test_listing_without_plugins_is_empty(self) -> None:
        """With no plugin installed, every group is empty."""
        assert {g: [] for g in plugins.GROUPS} == plugins.plugins()
        assert {g: [] for g in plugins.GROUPS} == json.loads(json.dumps(plugins.plugins()))


class TestLoadCallable:
    def test_resolves_an_agent_module_in_the_working_directory_and_leaves_sys_path_as_it_was(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """MODULE:FUNCTION resolves a module beside the user's shell; the directory is not left on sys.path."""
        (tmp_path / "my_agent_lc.py").write_text("class Agent:\n    @staticmethod\n    def entry(x):\n        return x\n")
        monkeypatch.chdir(tmp_path)
        before = list(sys.path)
        fn = plugins.load_callable("my_agent_lc:Agent.entry")
        assert 3 == fn(3)
        assert before == sys.path

    @pytest.mark.parametrize(
        ("spec", "message"),
        [
            ("no_colon", "expected MODULE:FUNCTION"),
            ("no_such_module_xyz:f", "cannot import module 'no_such_module_xyz'"),
            ("json:no_such_attr", "has no attribute 'no_such_attr'"),
            ("json:__name__", "is not callable"),
        ],
    )
    def test_a_bad_spec_is_one_line_naming_it(self, spec: str, message: str) -> None:
        """A malformed spec, a missing module or attribute, or a non-callable is one ValueError naming the spec."""
        with pytest.raises(ValueError) as info:
            plugins.load_callable(spec)
        assert message in str(info.value) and spec in str(info.value) and "\n" not in str(info.value)
