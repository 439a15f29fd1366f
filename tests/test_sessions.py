"""Tests for sessions: the runs of one conversation or user session (`trajdebug.sessions`)."""

from __future__ import annotations

from pathlib import Path

import trajdebug
from trajdebug.core.model import Run
from trajdebug.sessions import earlier_in_session, group_sessions, session_in, session_of
from trajdebug.testing import capture_runs


def _run(rid: str, session: str | None, start: int, outcome: str = "success") -> Run:
    md = {"session": session} if session is not None else {}
    return Run(rid, "chat", start_ns=start, end_ns=start + 5, outcome=outcome, metadata=md)  # type: ignore[arg-type]


def test_run_session_argument_is_recorded_in_metadata() -> None:
    """trajdebug.run(session=...) records the session the run belongs to."""
    with capture_runs() as cap, trajdebug.run("chat", session="conv-1"):
        pass
    [run] = cap
    assert session_of(run) == "conv-1"


def test_sessions_group_runs_in_start_order_and_count_failures() -> None:
    """Runs of one session are listed oldest first with their failures; runs of no session are left out."""
    runs = [_run("b", "s", 20, "failure"), _run("a", "s", 10), _run("c", "t", 5), _run("d", None, 1)]
    s, t = group_sessions(runs)
    assert (s.session_id, s.run_ids, s.failures, s.last_ns) == ("s", ("a", "b"), 1, 25)
    assert t.run_ids == ("c",)


def test_earlier_in_session_only_reads_the_same_session_before_the_run() -> None:
    """The earlier runs of a run's session: same session, started before it."""
    runs = [_run("a", "s", 10), _run("x", "t", 11), _run("b", "s", 20), _run("c", "s", 30)]
    assert [r.run_id for r in earlier_in_session(runs[2], runs)] == ["a"]
    assert earlier_in_session(_run("z", None, 50), runs) == []


def test_session_values_that_name_nothing_are_ignored() -> None:
    """An empty, boolean or structured value is no session."""
    assert [session_in({"session": v}) for v in ("", True, {"a": 1}, None, 7)] == [None, None, None, None, "7"]


def test_openinference_session_id_becomes_the_run_session(tmp_path: Path) -> None:
    """An OTLP trace whose spans carry OpenInference session.id is a run of that session."""
    import json

    from trajdebug.sources.formats import import_path

    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "name": "agent",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [
            {"key": "openinference.span.kind", "value": {"stringValue": "AGENT"}},
            {"key": "session.id", "value": {"stringValue": "conv-42"}},
        ],
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    [run] = import_path(path).runs
    assert session_of(run) == "conv-42"
