"""Gradual rollout: each agent's recording mode from a file re-read at run start, the environment, the settings."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

import trajdebug
from trajdebug.record import rollout
from trajdebug.testing import capture_runs


def _record(name: str, agent: str | None = None) -> None:
    with trajdebug.run(name, agent=agent), trajdebug.step("fetch", kind="tool", input="what the agent read") as s:
        s.output = "what the tool said"


def _write(path: Path, text: str) -> None:
    path.write_text(text)
    # A new modification time even on coarse-grained file systems.
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_the_file_sets_each_agents_mode_and_is_reread_at_run_start(tmp_path: Path) -> None:
    """An agent listed ``off`` records nothing; after the file changes, its next run records in summary mode."""
    f = tmp_path / "rollout.toml"
    _write(f, 'default = "full"\n[agents]\nbilling = "off"\n')
    trajdebug.configure(rollout_file=str(f))
    with capture_runs() as runs:
        _record("billing")
        _record("support")
    assert ["support"] == [r.name for r in runs]
    _write(f, 'default = "full"\n[agents]\nbilling = "summary"\n')
    with capture_runs() as runs:
        _record("billing")
    [run] = runs
    assert "summary" == run.metadata["recording"]["mode"]
    assert run.steps[0].output["__trajdebug_summary__"] == 1


def test_the_agent_name_wins_over_the_run_name_and_patterns_match(tmp_path: Path) -> None:
    """``agent=`` chooses the entry; fnmatch patterns match agent names."""
    f = tmp_path / "rollout.json"
    _write(f, '{"default": "off", "agents": {"sup*": {"mode": "sampled", "sample_rate": 1.0}}}')
    trajdebug.configure(rollout_file=str(f))
    with capture_runs() as runs:
        _record("run-a", agent="support-eu")
        _record("support-eu")
        _record("other")
    assert ["run-a", "support-eu"] == [r.name for r in runs]
    assert "file:" + str(f) == runs[0].metadata["recording"]["source"]


def test_the_environment_sets_modes_when_no_file_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """``TRAJDEBUG_ROLLOUT`` gives modes per agent, and a bare mode for everyone else."""
    monkeypatch.setenv("TRAJDEBUG_ROLLOUT", "billing=off, full")
    with capture_runs() as runs:
        _record("billing")
        _record("support")
    assert ["support"] == [r.name for r in runs]
    assert rollout.Plan("full", source="env") == rollout.plan_for("support")


def test_a_broken_file_keeps_the_last_good_version(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A syntax error is one warning naming the file and line; the previous entries stay in force."""
    f = tmp_path / "rollout.toml"
    _write(f, '[agents]\nbilling = "off"\n')
    trajdebug.configure(rollout_file=str(f))
    assert "off" == rollout.plan_for("billing").mode
    _write(f, '[agents]\nbilling = "off\n')
    with caplog.at_level(logging.WARNING, logger="trajdebug"):
        assert "off" == rollout.plan_for("billing").mode
        assert "off" == rollout.plan_for("billing").mode
    lines = [r.getMessage() for r in caplog.records]
    assert 1 == len(lines)
    assert str(f) in lines[0] and "line 2" in lines[0]


def test_a_bad_entry_is_named_and_the_others_are_kept(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An unknown mode or a rate outside [0, 1] is one warning naming the field."""
    f = tmp_path / "rollout.toml"
    _write(f, '[agents]\na = "loud"\nb = { mode = "sampled", sample_rate = 3 }\nc = "summary"\n')
    with caplog.at_level(logging.WARNING, logger="trajdebug"):
        entries = rollout.parse_file(f)
    assert {"c": rollout.Entry("summary")} == entries
    text = " ".join(r.getMessage() for r in caplog.records)
    assert "agents.a" in text and "agents.b" in text


def test_sampled_without_a_rate_keeps_the_default_share() -> None:
    """``sampled`` alone keeps 10 % of successful runs; ``sampled:0.5`` keeps half."""
    import os as _os

    for spec, rate in (("sampled", rollout.SAMPLED_DEFAULT_RATE), ("sampled:0.5", 0.5)):
        _os.environ["TRAJDEBUG_ROLLOUT"] = spec
        try:
            assert rate == rollout.plan_for("any").sample_rate
        finally:
            del _os.environ["TRAJDEBUG_ROLLOUT"]


def test_plain_settings_record_as_before() -> None:
    """Without any rollout or production setting, runs carry no recording metadata."""
    assert not rollout.configured()
    with capture_runs() as runs:
        _record("support")
    assert "recording" not in runs[0].metadata


def test_the_file_is_read_only_when_it_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run starts with an unchanged file cost one stat, not a parse."""
    f = tmp_path / "rollout.toml"
    _write(f, 'default = "full"\n')
    trajdebug.configure(rollout_file=str(f))
    calls = []
    real = rollout.parse_file
    monkeypatch.setattr(rollout, "parse_file", lambda p: calls.append(p) or real(p))
    rollout._FILE.stamp = None
    for _ in range(20):
        rollout.plan_for("x")
    assert 1 == len(calls)
