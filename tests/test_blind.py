"""The blind-suite scorer, and one pipeline: `trajdebug analyze` and `trajdebug.analyze_source` agree on it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from trajdebug.api import analyze_source
from trajdebug.cli import cli


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.blind import (  # noqa: E402
    SAME_INPUT_SETTINGS,
    _cases,
    _source,
    generate,
    main,
    metrics,
    run_blind,
    score_case,
    summary,
    truth_step,
)


@pytest.fixture(scope="module")
def dev_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The development suite's cases, generated once (about a second)."""
    return generate("suite_dev", tmp_path_factory.mktemp("blind"), progress=lambda _: None)


def test_every_case_finds_its_truth_step_and_is_scored(dev_suite: Path) -> None:
    """Each generated case names a step that exists in its failed run, and is ranked in both settings."""
    rows = []
    for truth in _cases(dev_suite):
        for setting in ("alone", "with_refs"):
            r = score_case(dev_suite / truth["case_id"], truth, setting)
            assert r.error is None, (truth["case_id"], r.error)
            rows.append(r)
    m = metrics(rows)
    assert m["alone"]["cases"] == m["with_refs"]["cases"] >= 30
    assert m["alone"]["ranked"] == m["with_refs"]["ranked"] == 1.0


def test_the_same_input_settings_add_the_control_run_as_a_passing_run_of_the_same_input(dev_suite: Path) -> None:
    """``same`` scores the failed run with its control run (the same input, the fault off: it passes) and ``all``
    the with_refs source with it, the control joined as ``refs``: the analysis compares with it as a run of the
    same input, beside the other inputs' runs in ``all``."""
    rows = []
    for truth in _cases(dev_suite)[::4]:
        case = dev_suite / truth["case_id"]
        for setting in SAME_INPUT_SETTINGS:
            r = score_case(case, truth, setting)
            assert r.error is None and r.rank is not None, (truth["case_id"], setting, r.error)
            rows.append(r)
        for stem, others in (("failed", False), ("with_refs", True)):
            [a] = analyze_source(_source(case, stem), truth["failed_run_id"], refs=_source(case, "control")).analyses
            assert len(a.same_input) == 1 and (len(a.references) > 1) is others
    m = metrics(rows)
    assert list(m) == ["same", "all"] and m["same"]["cases"] == m["all"]["cases"] >= 8
    assert summary(rows).startswith("same: top-1 ")


def test_the_settings_scored_are_chosen_and_an_unknown_one_is_refused(dev_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The section's two settings by default; ``--settings`` names others; a misspelt one is an error naming the choices."""
    res = run_blind(["suite_dev"], workdir=dev_suite.parent, progress=lambda _: None, settings=("same",))
    assert {r.setting for r in res["suite_dev"]} == {"same"}
    with pytest.raises(SystemExit):
        main(["suite_dev", "--workdir", str(dev_suite.parent), "--settings", "alone,sme"])
    assert "unknown setting(s) sme: choose among alone, with_refs, same, all" in capsys.readouterr().err


def test_the_cli_and_the_library_give_the_same_analysis(dev_suite: Path) -> None:
    """For every case, `trajdebug analyze SOURCE --run ID --json` ranks the same root causes as analyze_source."""
    for truth in _cases(dev_suite)[::3]:
        src = _source(dev_suite / truth["case_id"], "with_refs")
        lib = analyze_source(src, truth["failed_run_id"], top=5).analyses[0].to_dict()
        out = CliRunner().invoke(cli, ["analyze", str(src), "--run", truth["failed_run_id"], "--top", "5", "--json"])
        assert out.exit_code == 0, out.output
        [doc] = json.loads(out.stdout)["runs"]
        assert [c["step_id"] for c in doc["root_causes"]] == [c["step_id"] for c in lib["root_causes"]]
        assert doc["references"] == lib["references"] and len(doc["references"]) >= 5


def test_truth_is_found_by_name_and_occurrence_or_model_call_index(dev_suite: Path) -> None:
    """A truth names its step by name and occurrence; an LLM step may be named by its index among model calls."""
    truth = next(t for t in _cases(dev_suite) if t["root"].get("llm_index"))
    res = analyze_source(_source(dev_suite / truth["case_id"], "failed"), truth["failed_run_id"])
    run = res.analyses[0].run
    sid = truth_step(run, truth["root"])
    by_index = truth_step(run, {"name": "no such step", "llm_index": truth["root"]["llm_index"]})
    assert sid is not None and sid == by_index


def test_a_suites_own_route_letters_are_pooled_under_the_route_names_and_mean_nothing_elsewhere() -> None:
    """suite_g's route "a" is LangGraph; another suite's "a" stays "a"; authors' spellings map to one name."""
    from benchmarks.blind import route_name

    assert route_name("suite_g", "a") == "langgraph" and route_name("suite_g", "d") == "sdk"
    assert route_name("suite_b", "a") == "a"
    assert route_name("suite_b", "agents_sdk") == "openai_agents"
    assert route_name("suite_b", None) == "?"


def test_a_generator_written_as_a_module_is_run_as_one() -> None:
    """A suite whose generate.py uses relative imports with no script shim runs as ``-m``; a script stays a script."""
    from benchmarks.blind import HERE, _generator

    modules = [s.name for s in HERE.iterdir() if (s / "generate.py").exists() and _generator(s.name)[0] == "-m"]
    scripts = [s.name for s in HERE.iterdir() if (s / "generate.py").exists() and _generator(s.name)[0] != "-m"]
    assert modules and scripts
    for name in modules:
        text = (HERE / name / "generate.py").read_text()
        assert "from ." in text and "__package__ =" not in text


def test_a_generator_failing_twice_is_named_with_its_last_error_and_the_other_suites_are_still_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A suite whose generator exits non-zero twice is reported by name with its last stderr line, its stderr kept,
    and `run_blind` goes on without it."""
    import benchmarks.blind as blind

    code = "import sys; sys.stderr.write('Traceback\\nAssertionError: case c7 did not fail\\n'); sys.exit(3)"
    monkeypatch.setattr(blind, "_generator", lambda suite: ["-c", code])
    said: list[str] = []
    with pytest.raises(blind.GenerationError, match=r"suite_x: .*failed twice \(exit 3\): AssertionError: case c7"):
        blind.generate("suite_x", tmp_path, progress=said.append)
    assert (tmp_path / "suite_x.generate-1.err").read_text().endswith("did not fail\n")
    assert (tmp_path / "suite_x.generate-2.err").exists()
    assert blind.run_blind(["suite_y"], workdir=tmp_path, progress=said.append) == {}
    assert any("not scored" in line and "suite_y" in line for line in said)


def test_a_generator_that_fails_once_is_run_again_and_its_output_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A generator that fails on its first attempt and succeeds on its second yields the suite's folder."""
    import benchmarks.blind as blind

    marker = tmp_path / "tried"
    code = (
        "import sys, pathlib; m = pathlib.Path(sys.argv[1]); out = pathlib.Path(sys.argv[2])\n"
        "if not m.exists():\n    m.write_text('1'); sys.exit(1)\n"
        "(out / 'index.json').write_text('{\"cases\": []}')"
    )
    monkeypatch.setattr(blind, "_generator", lambda suite: ["-c", code, str(marker)])
    said: list[str] = []
    dest = blind.generate("suite_x", tmp_path / "wd", progress=said.append)
    assert (dest / "index.json").exists() and marker.exists()
    assert any("again" in line for line in said)
