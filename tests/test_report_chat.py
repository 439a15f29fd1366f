"""LLM steps as conversations in the step inspector (`trajdebug.report.chat`, the report's ``chat.js``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.builders import step

from trajdebug.analysis import analyze
from trajdebug.core.model import Run, Step
from trajdebug.report.chat import chat_view, chat_views
from trajdebug.report.html import write_report
from trajdebug.serve import Server
from trajdebug.store import Store


MARKUP = '<script>window.__pwned = "chat"</script><img src=x onerror="window.__pwned = 1"><b>bold</b>'
"""Markup in a message: it must be shown as text and never run."""

OPENAI_IN = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": "You are the refund agent."},
        {"role": "user", "content": "Refund A103 " + MARKUP},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id": "A103"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"status": "delivered"}'},
    ],
}
OPENAI_OUT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o-mini",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "A103 is refunded."}}],
    "usage": {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57},
}
RESPONSES_IN = {
    "model": "gpt-4o-mini",
    "input": [
        {"role": "user", "content": "Where is A104?"},
        {"type": "function_call", "call_id": "fc_1", "name": "track", "arguments": '{"order": "A104"}'},
        {"type": "function_call_output", "call_id": "fc_1", "output": "in transit"},
    ],
}
RESPONSES_OUT = {
    "object": "response",
    "id": "resp_1",
    "output": [{"type": "function_call", "call_id": "fc_2", "name": "notify", "arguments": '{"user": "dan"}'}],
}
LANGCHAIN_IN = [
    {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "SystemMessage"], "kwargs": {"content": "Be brief."}},
    {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "HumanMessage"], "kwargs": {"content": "hi"}},
]
LANGCHAIN_OUT = {"generations": [[{"message": {"type": "ai", "content": "hello"}, "text": "hello"}]]}
OPENINFERENCE_ATTRS = {
    "llm.input_messages.0.message.role": "user",
    "llm.input_messages.0.message.content": "What is my balance?",
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.content": "12 EUR",
}


def _llm(sid: str, start: int, inp: Any, out: Any, **attrs: Any) -> Step:
    return step(sid, "call_" + sid, "llm", start, inp, out, attributes=attrs)


def _shapes_run() -> Run:
    """One run with an LLM step in each shape the importers and integrations produce, the last one failing."""
    steps = (
        _llm("s1", 10, OPENAI_IN, OPENAI_OUT),
        _llm("s2", 20, RESPONSES_IN, RESPONSES_OUT),
        _llm("s3", 30, LANGCHAIN_IN, LANGCHAIN_OUT),
        _llm("s4", 40, None, None, **OPENINFERENCE_ATTRS),
        _llm("s5", 50, {"prompt": "Summarise " + MARKUP}, "Sure! " + MARKUP),
        step("s6", "use", "parse", 60, "x", None, "s5", status="error"),
    )
    return Run("r-chat", "chat-shapes", start_ns=1, end_ns=100, outcome="failure", failure_reason="broke", steps=steps)


def test_a_raw_openai_call_becomes_its_messages_with_the_tool_call_tied_to_its_result() -> None:
    """An OpenAI Chat Completions request and response read as system, user, assistant (a parsed tool call) and tool messages and the assistant's answer."""
    view = chat_view(_llm("s1", 1, OPENAI_IN, OPENAI_OUT))
    assert view is not None
    assert [m["role"] for m in view["messages"]] == ["system", "user", "assistant", "tool"]
    assert view["messages"][2]["tool_calls"] == [{"id": "call_1", "name": "lookup_order", "arguments": {"order_id": "A103"}}]
    assert view["messages"][3]["tool_call_id"] == "call_1"
    assert view["output"]["content"] == "A103 is refunded."


def test_responses_langchain_and_openinference_shapes_read_as_messages() -> None:
    """The Responses API's items, LangChain's serialized messages and OpenInference's flattened attributes all read as role and text."""
    views = chat_views(_shapes_run())
    assert [m["role"] for m in views["s2"]["messages"]] == ["user", "assistant", "tool"]
    assert views["s2"]["output"]["tool_calls"] == [{"id": "fc_2", "name": "notify", "arguments": {"user": "dan"}}]
    assert [(m["role"], m["content"]) for m in views["s3"]["messages"]] == [("system", "Be brief."), ("user", "hi")]
    assert views["s3"]["output"]["content"] == "hello"
    assert views["s4"]["messages"] == [{"role": "user", "content": "What is my balance?"}]
    assert views["s4"]["output"]["content"] == "12 EUR"
    assert "s6" not in views


def test_a_step_already_in_the_convention_is_not_embedded_twice() -> None:
    """An LLM step whose input and output already follow the convention is read from the step itself (no copy)."""
    inp = {"messages": [{"role": "user", "content": "hi"}]}
    out = {"role": "assistant", "content": "yo", "tool_calls": []}
    assert chat_view(_llm("s", 1, inp, out)) == {"same_input": True, "same_output": True}


def _open_step(page: Any, url: str, step_id: str) -> Any:
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    page.click(f'.wf-row[data-step="{step_id}"]')
    return page.locator("#inspector .chat")


def test_the_report_shows_an_llm_step_as_a_conversation_with_its_usage_and_the_raw_json_one_click_away(
    page: Any, tmp_path: Path
) -> None:
    """The inspector shows an OpenAI call's messages by role, the tool call's name and arguments, the tool result tied to the call, the answer, tokens, and the raw JSON in a folded section."""
    path = write_report(tmp_path / "chat.html", analyze(_shapes_run(), model=None))
    chat = _open_step(page, path.as_uri(), "s1")
    assert chat.locator(".msg").evaluate_all("ns => ns.map(n => n.dataset.role)") == [
        "system", "user", "assistant", "tool", "assistant",
    ]
    call = chat.locator(".tool-call").first
    assert call.locator(".tc-name").text_content() == "lookup_order"
    assert "A103" in (call.locator(".tc-args").text_content() or "")
    assert (chat.locator(".msg.role-tool .tc-ref").text_content() or "").strip() == "lookup_order call_1"
    assert "A103 is refunded." in (chat.locator(".msg-out").text_content() or "")
    assert "50 in, 7 out tokens" in (chat.locator(".chat-usage").text_content() or "")
    raw = page.locator("#inspector details.i-raw")
    assert not raw.evaluate("d => d.open")
    raw.locator(":scope > summary").click()
    assert "chatcmpl-1" in (raw.text_content() or "")
    assert page.errors == []


def test_message_markup_is_shown_as_text_and_never_runs(page: Any, tmp_path: Path) -> None:
    """<script>, an onerror image and tags in a user message and a model's answer show as text, build no element and run nothing."""
    path = write_report(tmp_path / "chat.html", analyze(_shapes_run(), model=None))
    for sid in ("s1", "s5"):
        chat = _open_step(page, path.as_uri(), sid)
        assert MARKUP in (chat.text_content() or "")
        assert chat.locator("script, img, b").count() == 0
    assert (page.locator("#inspector .msg-out").text_content() or "").endswith("Sure! " + MARKUP)
    assert page.evaluate("() => window.__pwned") is None
    assert page.dialogs == [] and page.errors == []


@pytest.mark.parametrize(("sid", "roles"), [("s2", ["user", "assistant", "tool", "assistant"]), ("s4", ["user", "assistant"])])
def test_serves_run_page_renders_responses_and_openinference_steps_as_conversations(
    page: Any, tmp_path: Path, sid: str, roles: list[str]
) -> None:
    """serve's run page (the report, live) renders a Responses API call and an OpenInference span from a store as messages by role."""
    db = tmp_path / "chat.db"
    Store(db).save_run(_shapes_run())
    with Server(db, port=0) as srv:
        chat = _open_step(page, f"{srv.url}runs/r-chat", sid)
        assert chat.locator(".msg").evaluate_all("ns => ns.map(n => n.dataset.role)") == roles
    assert page.errors == []
