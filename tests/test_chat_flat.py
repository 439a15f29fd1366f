"""OpenInference's flattened messages read straight from the attribute names (`flat_messages`): the same
messages as unflattening them and normalizing the value, on the common form and on everything near it."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from trajdebug.core.chat import messages_from_attributes, normalize_messages, unflatten
from trajdebug.core.chat._messages import flat_messages


_SUFFIXES = [
    "message.role",
    "message.content",
    "message.tool_calls.0.tool_call.id",
    "message.tool_calls.0.tool_call.function.name",
    "message.tool_calls.0.tool_call.function.arguments",
    "message.tool_calls.1.tool_call.function.name",
    "message.tool_calls.10.tool_call.function.arguments",
    "message.tool_calls.01.tool_call.id",
    "message.tool_calls.0.tool_call.function",
    "message.tool_calls.0.tool_call",
    "message.tool_calls.0.tool_call.function.name.x",
    "message.tool_calls",
    "message.contents.0.message_content.text",
    "message.name",
    "message",
    "role",
]
_INDEXES = ["0", "1", "2", "10", "01", "x", "\u0661"]
_VALUES: list[Any] = [
    "user", "assistant", "Human", "TOOL", "", "hello", '{"a": 1}', "[1, 2]", " {\"q\": \"x\"} ", "call_1", 3, None,
    ["a", "b"], True,
]  # fmt: skip


def _generic(attrs: dict[str, Any], prefix: str, role: str) -> Any:
    """The general way: unflatten, give each message its default role, normalize."""
    from trajdebug.core.chat._spans import _default_role

    value = unflatten(attrs, prefix)
    if not isinstance(value, list) or not value:
        return None
    return normalize_messages([_default_role(v, role) for v in value])


class TestFlatMessages:
    @settings(max_examples=600, deadline=None)
    @given(
        st.lists(
            st.tuples(st.sampled_from(_INDEXES), st.sampled_from(_SUFFIXES), st.sampled_from(_VALUES)),
            min_size=1,
            max_size=10,
        ),
        st.sampled_from(["user", "assistant"]),
        st.booleans(),
    )
    def test_the_direct_reading_gives_what_the_general_one_gives(
        self, entries: list[tuple[str, str, Any]], role: str, whole: bool
    ) -> None:
        """Whatever is flattened under the prefix (the common form, other fields, odd indexes, values that are
        not strings, the nested value under the prefix itself), the direct reading either declines or gives
        exactly the messages of the general way."""
        prefix = "llm.input_messages"
        attrs: dict[str, Any] = {f"{prefix}.{i}.{s}": v for i, s, v in entries}
        if whole:
            attrs[prefix] = '[{"role": "user", "content": "hi"}]'
        got = flat_messages(attrs, prefix, role)
        if got is not None:
            assert got == _generic(attrs, prefix, role)

    def test_the_common_form_is_read_directly(self) -> None:
        """Roles, contents and tool calls in OpenInference's common form are read without the general way,
        in index order (10 after 2), a role missing taking the default and an alias its role."""
        attrs = {
            "llm.input_messages.10.message.content": "last",
            "llm.input_messages.2.message.role": "human",
            "llm.input_messages.2.message.content": "first",
            "llm.input_messages.10.message.tool_calls.0.tool_call.function.name": "lookup",
            "llm.input_messages.10.message.tool_calls.0.tool_call.function.arguments": '{"id": 4}',
        }
        got = flat_messages(attrs, "llm.input_messages", "user")
        assert got == [
            {"role": "user", "content": "first"},
            {"role": "user", "content": "last", "tool_calls": [{"id": None, "name": "lookup", "arguments": {"id": 4}}]},
        ]
        assert got == _generic(attrs, "llm.input_messages", "user")

    def test_a_span_of_both_conventions_reads_as_before(self) -> None:
        """A span with OpenInference output and GenAI input still reads the GenAI input and the output message."""
        attrs = {
            "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]',
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
        }
        ins, out = messages_from_attributes(attrs)
        assert ins == [{"role": "user", "content": "hi"}]
        assert out == {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "name": "", "arguments": None}]}
