"""The error lifecycle's bisected search for the steps an error's message was handed to finds exactly what a scan of
every step of the run finds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from trajdebug.core.lifecycle.report import handed_to
from trajdebug.core.model import Step


def _naive(message: str, raised: Step, later: list[Step], texts: dict[str, str]) -> Iterator[str]:
    """The scan the bisection replaced (every step of the run, for every error), kept as the reference."""
    text = json.dumps(message, ensure_ascii=False)[1:-1].strip()
    after = raised.end_ns if raised.end_ns is not None else raised.start_ns
    for t in (t for t in later if t.start_ns >= after and t.step_id != raised.step_id) if len(text) >= 4 else ():
        if t.step_id not in texts:
            texts[t.step_id] = json.dumps(t.input, ensure_ascii=False, default=str)
        if text in texts[t.step_id]:
            yield t.step_id
        if t.kind == "llm":
            break


_MESSAGES = st.sampled_from(["boom", "ab", "timeout on fetch", 'quote "x"', "  pad  "])


@st.composite
def _steps(draw: Any) -> list[Step]:
    steps = []
    for i in range(draw(st.integers(1, 16))):
        start = draw(st.integers(0, 20))  # ties and equal ends often
        end = draw(st.one_of(st.none(), st.integers(start, start + 6)))
        said = draw(st.one_of(st.none(), _MESSAGES))
        kind = draw(st.sampled_from(["tool", "llm", "other"]))
        sid = f"s{draw(st.integers(0, 4)) if draw(st.integers(0, 9)) == 0 else i}"  # now and then a repeated id
        steps.append(Step(sid, f"t{i}", kind, input={"m": f"error: {said}"} if said else {"q": i}, start_ns=start, end_ns=end))
    return sorted(steps, key=lambda t: t.start_ns)


@settings(max_examples=400, deadline=None)
@given(_steps(), _MESSAGES, st.data())
def test_bisected_handed_to_equals_the_scan(later: list[Step], message: str, data: Any) -> None:
    """On random runs (steps sorted by start, ties, untimed ends, repeated ids), every step that raised is handed
    to the same steps, in the same order, with the same texts kept, either way."""
    raised = data.draw(st.sampled_from(later))
    got_texts: dict[str, str] = {}
    want_texts: dict[str, str] = {}
    got = list(handed_to(message, raised, later, got_texts))
    assert got == list(_naive(message, raised, later, want_texts))
    assert got_texts == want_texts


def test_the_bisection_finds_a_model_told_the_error_after_thousands_of_steps() -> None:
    """A model given the error text after 5,000 earlier steps is found (equal on a long run, not only small ones)."""
    steps = [Step(f"s{i}", "tool", "tool", input={"q": i}, start_ns=10 * i, end_ns=10 * i + 5) for i in range(5000)]
    raised = steps[4000]
    told = Step("m", "model", "llm", input=[{"role": "tool", "content": "error: fetch timed out"}], start_ns=40_006)
    later = sorted([*steps, told], key=lambda t: t.start_ns)
    assert list(handed_to("fetch timed out", raised, later, {})) == ["m"]
    assert list(handed_to("fetch timed out", raised, later, {})) == list(_naive("fetch timed out", raised, later, {}))
