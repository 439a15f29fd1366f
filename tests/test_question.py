"""report.question: the guided search's questions and its end, as the terminal shows them."""


def test_a_step_id_ending_in_a_control_sequence_is_shown_escaped_in_the_search_end() -> None:
    """The guided search's end names steps by the tail of their id: a control sequence there (the id is the
    agent's data) is printed visible, never sent raw to the terminal."""
    import io

    from rich.console import Console

    from trajdebug.analysis import Guided
    from trajdebug.core.model import Run, Step
    from trajdebug.report.question import render_guided

    bad = "kiln-load\x1b[2J"
    run = Run(
        run_id="r", name="pottery", steps=(Step(step_id=bad, name="load", kind="tool", status="error"),)
    )
    buf = io.StringIO()
    guided = Guided(failure=bad, root=bad, certain=True, questions=(), candidates=(), path=(bad,))
    render_guided(guided, run, Console(file=buf, force_terminal=True, width=120))
    assert "\x1b[2J" not in buf.getvalue() and "\\x1b" in buf.getvalue()


def test_the_proof_of_a_root_with_no_recorded_input_lists_its_own_audit_never_another_proofs() -> None:
    """LOW 4 (rev49a): the failing step's audit asked ``x`` (correct) and found ``b`` (wrong, no recorded input),
    whose own audit asked ``c`` (correct): b's proof lists its answer and c, not x, asked to test another
    proof; and it says no input of b was recorded, never that every input it consumed was answered correct."""
    import io

    from rich.console import Console

    from trajdebug.analysis import Guided
    from trajdebug.core.model import Answer, Run, Step
    from trajdebug.report.question import proving, render_guided

    steps = tuple(Step(s, n, "tool", start_ns=k) for k, (s, n) in enumerate([("x", "rate"), ("c", "hotel"), ("b", "fx"), ("z", "book")]))
    run = Run(run_id="r", name="trip", steps=steps)
    said = (Answer("x", True, "person", 1, asked="audit:z"), Answer("b", False, "person", 2, asked="audit:z"),
            Answer("c", True, "person", 3, asked="audit:b"))
    guided = Guided(failure="z", root="b", certain=True, questions=said, candidates=(), path=("b", "z"), audited=("x", "b", "c"))
    assert [a.step_id for a in proving(guided, run)] == ["b", "c"]
    buf = io.StringIO()
    render_guided(guided, run, Console(file=buf, width=300))
    text = buf.getvalue()
    assert "no input of it was recorded" in text and "every input it consumed" not in text and "rate #" not in text
