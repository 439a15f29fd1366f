"""Tests of `benchmarks.ceiling`: each variant leaves out only the work it names; a child measures one run."""

from __future__ import annotations

import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
# `pytest` run without `python -m` does not put the repo root, where `benchmarks` lives, on the path.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.ceiling import _options, _record, child  # noqa: E402


def test_variants_leave_out_what_they_name() -> None:
    assert _options("source") == {}
    assert _options("nodiag") == {"diagnosers": {}}
    assert _options("bare") == {"diagnosers": {}, "model": None}
    assert _options("bare_noinfer") == {"diagnosers": {}, "model": None, "infer": False}


def test_child_times_the_analysis_and_its_floor(tmp_path: Path) -> None:
    path = _record("tools", 60, tmp_path)
    out = child(path, "bare_noinfer")
    assert out["steps"] > 10 and out["floor"] > 0 and out["total"] > 0
    assert out["stages"]["infer_edges"] < out["total"]
    assert "trace_values" in out["stages"]


def test_child_leaves_the_pipeline_as_it_was(tmp_path: Path) -> None:
    from trajdebug.analysis import _pipeline

    before = _pipeline.run_stages
    child(_record("state", 40, tmp_path), "nodiag")
    assert _pipeline.run_stages is before
