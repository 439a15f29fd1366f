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
