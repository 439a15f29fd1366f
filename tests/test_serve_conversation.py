"""A session as a conversation in serve (`trajdebug.serve.conversation`): turns in order, each run page linked to its neighbours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.builders import step

import trajdebug
from trajdebug.core.model import Run
from trajdebug.serve import Server
from trajdebug.serve.conversation import answer_text, user_text


MARKUP = '<script>window.__pwned = "turn"</script><img src=x onerror="window.__pwned = 1"><i>it</i>'


def _run(*steps: Any, **kw: Any) -> Run:
    return Run("r", "agent", start_ns=1, end_ns=99, outcome="success", steps=tuple(steps), **kw)


def test_a_turn_reads_its_input_and_output_steps() -> None:
    """A run with input and output steps says the input step's text and the last output step's text."""
    run = _run(
        step("a", "user_message", "input", 1, {"text": "Refund A103", "user": "dan"}, None),
        step("b", "plan", "llm", 2, {"messages": [{"role": "user", "content": "x"}]}, "plan it"),
        step("c", "final_answer", "output", 3, {"text": "Done."}, "Done, refunded."),
    )
    assert (user_text(run), answer_text(run)) == ("Refund A103", "Done, refunded.")


def test_a_turn_of_an_agent_function_reads_its_top_level_steps_input_and_output() -> None:
    """A run whose one top-level step is the agent says that step's input and output."""
    run = _run(
        step("a", "agent", "agent", 1, {"question": "Where is A104?"}, "In transit."),
        step("b", "call", "llm", 2, "q", "In transit.", parent_id="a"),
    )
    assert (user_text(run), answer_text(run)) == ("Where is A104?", "In transit.")


def test_a_turn_of_llm_calls_reads_the_user_message_and_the_answer_the_run_ended_with() -> None:
    """Without input/output steps, the first call's last user message and the last call's answer (any shape) are the turn."""
    request = {"model": "m", "messages": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "hi there"}]}
    response = {"choices": [{"message": {"role": "assistant", "content": "Hello!"}}]}
    run = _run(step("a", "first", "llm", 1, request, "thinking"), step("b", "tool", "tool", 2, 1, 2), step("c", "last", "llm", 3, "x", response))
    assert (user_text(run), answer_text(run)) == ("hi there", "Hello!")


def test_a_run_that_ended_in_work_after_its_last_call_answered_nothing() -> None:
    """A failed run whose last LLM call was followed by other steps has no answer (the call answered the agent)."""
    run = _run(step("a", "ask", "llm", 1, "q", "call the tool"), step("b", "tool", "tool", 2, 1, None, status="error"))
    assert answer_text(run) is None


@pytest.fixture
def chat_store(tmp_path: Path) -> tuple[Path, list[str]]:
    """A session of three turns recorded by the real recorder (the second failed, with markup in its
    question) and a run of another session."""
    path = tmp_path / "chat.db"
    questions = ["Refund A103?", "Why not? " + MARKUP, "Thanks"]
    ids = []
    for i, q in enumerate(questions):
        with trajdebug.run("desk", store=path, session="s-9") as r:
            with trajdebug.step("user_message", kind="input", input={"text": q}):
                pass
            with trajdebug.step("answer", kind="llm", input={"messages": [{"role": "user", "content": q}]}) as s:
                s.output = {"role": "assistant", "content": f"answer {i + 1}"}
                s.usage(model="gpt-4o", prompt_tokens=100, completion_tokens=10)
            with trajdebug.step("final_answer", kind="output", input={"text": f"answer {i + 1}"}) as o:
                o.output = f"answer {i + 1}"
            if i == 1:
                r.fail("did not explain")
        ids.append(r.run_id)
    with trajdebug.run("desk", store=path, session="other"):
        pass
    trajdebug.flush()
    return path, ids


def test_a_sessions_page_shows_its_turns_as_a_conversation(page: Any, chat_store: tuple[Path, list[str]]) -> None:
    """/sessions/ID lists the session's runs oldest first, each with the user's message, the answer, outcome, cost and a link to the run; markup stays text."""
    path, ids = chat_store
    with Server(path, port=0) as srv:
        page.goto(srv.url + "sessions/s-9")
        turns = page.locator("#turns .turn")
        assert turns.evaluate_all("ns => ns.map(n => n.dataset.run)") == ids
        assert turns.locator(".bubble.user .said").all_text_contents() == ["Refund A103?", "Why not? " + MARKUP, "Thanks"]
        assert turns.locator(".bubble.answer .said").all_text_contents() == ["answer 1", "answer 2", "answer 3"]
        assert turns.locator(".turn-head .outcome").all_text_contents() == ["success", "failure", "success"]
        assert all(c.startswith("$") for c in turns.locator(".cost").all_text_contents())
        assert "did not explain" in (turns.nth(1).locator(".why").text_content() or "")
        assert turns.locator("script, img, i").count() == 0
        turns.nth(1).locator("a.run-link").click()
        page.wait_for_url("**/runs/" + ids[1])
        page.wait_for_selector("body[data-ready]")
        assert page.evaluate("() => window.__pwned") is None
    assert page.errors == [] and page.dialogs == []


def test_a_run_page_links_to_its_session_and_the_turns_before_and_after(page: Any, chat_store: tuple[Path, list[str]]) -> None:
    """The middle turn's run page names its session and place, and its links lead to the turns before and after and to the session."""
    path, ids = chat_store
    with Server(path, port=0) as srv:
        page.goto(srv.url + "runs/" + ids[1])
        page.wait_for_selector("body[data-ready]")
        nav = page.locator("#nav a")
        assert nav.all_text_contents()[-3:] == ["session s-9 (turn 2 of 3)", "← turn 1", "turn 3 →"]
        page.click("#nav >> text=turn 3 →")
        page.wait_for_url("**/runs/" + ids[2])
        page.wait_for_selector("body[data-ready]")
        assert page.locator("#nav a").all_text_contents()[-2:] == ["session s-9 (turn 3 of 3)", "← turn 2"]
        page.click("#nav >> text=session s-9 (turn 3 of 3)")
        page.wait_for_url("**/sessions/s-9#turn-3")
        assert page.locator("#turns .turn:target").get_attribute("data-run") == ids[2]
    assert page.errors == []
