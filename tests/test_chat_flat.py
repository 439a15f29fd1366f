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


# -- one pass over the names (`_spans.scan`) --------------------------------------------------

_ENVELOPE_NAMES = [
    "gen_ai.response.model", "llm.model_name", "gen_ai.request.model", "llm.provider", "gen_ai.system",
    "llm.token_count.prompt", "gen_ai.usage.input_tokens", "llm.token_count.total", "llm.cost.total",
    "gen_ai.usage.cost", "gen_ai.response.finish_reasons", "llm.finish_reason", "gen_ai.response.id",
    "gen_ai.request.temperature", "gen_ai.request.max_tokens", "llm.invocation_parameters",
    "llm.tools.1.tool.json_schema", "llm.tools.0.tool.json_schema", "gen_ai.tool.definitions", "other.name",
]  # fmt: skip
_ENVELOPE_VALUES: list[Any] = [
    None, "", "gpt-4o", "12", 12, 0.5, -1.0, "n/a", True, ["stop"], '["length"]', '{"temperature": 0.1}',
    '{"name": "lookup"}', '{"type": "function", "function": {"name": "search"}}',
]  # fmt: skip


def _envelope_by_rule(attrs: dict[str, Any]) -> dict[str, Any]:
    """The envelope as the rule states it: for each target in order, its names in order, the first usable
    value; then the parameters and the tools (the reading before names were scanned once)."""
    from trajdebug.core.chat._messages import _int, _json_or_none, plain, tool_names
    from trajdebug.core.chat._spans import _GENAI_PARAM, _SPAN_KEYS, _cost

    env: dict[str, Any] = {}
    for target, sources in _SPAN_KEYS:
        for k in sources:
            v = attrs.get(k)
            if v is None or v == "":
                continue
            if target == "llm.usage.cost":
                v = _cost(v)
            elif target.startswith("llm.usage."):
                v = _int(v)
            if v is None:
                continue
            if target == "llm.finish_reason":
                v = plain(_json_or_none(v) if isinstance(v, str) and v.startswith("[") else v)
                v = v[0] if isinstance(v, list) and v else v
            env[target] = v
            break
    params = attrs.get("llm.invocation_parameters")
    params = _json_or_none(params) if isinstance(params, str) else params
    p: dict[str, Any] = dict(params) if isinstance(params, dict) else {}
    for k, v in attrs.items():
        m = _GENAI_PARAM.match(k)
        if m and v is not None:
            p.setdefault(m.group(1), v)
    p.pop("model", None)
    if p:
        env["llm.invocation_parameters"] = p
    schemas = sorted((k, v) for k, v in attrs.items() if k.startswith("llm.tools.") and k.endswith(".tool.json_schema"))
    names = tool_names([v for _, v in schemas])
    defs = attrs.get("gen_ai.tool.definitions")
    if not names and defs is not None:
        names = tool_names(_json_or_none(defs) if isinstance(defs, str) else defs)
    if names:
        env["llm.tools"] = names
    return env


class TestOnePass:
    @settings(max_examples=400, deadline=None)
    @given(
        st.lists(
            st.tuples(st.sampled_from(_ENVELOPE_NAMES), st.sampled_from(_ENVELOPE_VALUES)), min_size=0, max_size=12
        )
    )
    def test_the_envelope_is_each_targets_first_usable_value(self, entries: list[tuple[str, Any]]) -> None:
        """Whatever envelope names a span holds, in any order, with values missing, empty or unusable, the
        envelope read from one pass over the names is the rule's: per target, its names in order, the first
        usable value."""
        from trajdebug.core.chat import span_envelope

        attrs = dict(entries)
        assert span_envelope(attrs) == _envelope_by_rule(attrs)

    @settings(max_examples=300, deadline=None)
    @given(
        st.lists(
            st.tuples(
                st.sampled_from(["llm.input_messages", "llm.output_messages", "gen_ai.prompt", "gen_ai.completion"]),
                st.sampled_from(_INDEXES[:3]),
                st.sampled_from(["message.role", "message.content", "role", "content", *_SUFFIXES[2:5]]),
                st.sampled_from(_VALUES[:8]),
            ),
            min_size=0,
            max_size=10,
        ),
        st.sampled_from([None, '[{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]', "[]", "x"]),
    )
    def test_messages_read_in_one_pass_are_those_of_each_convention_in_turn(
        self, entries: list[tuple[str, str, str, Any]], genai: Any
    ) -> None:
        """A span mixing OpenInference's flattened messages, the indexed GenAI names and GenAI's JSON messages
        reads the same messages whether its names were scanned once or each convention was tried by its own
        pass (`flat_messages`, then the general way)."""
        from trajdebug.core.chat._spans import _as_assistant, _default_role

        attrs: dict[str, Any] = {f"{p}.{i}.{s}": v for p, i, s, v in entries}
        if genai is not None:
            attrs["gen_ai.input.messages"] = attrs["gen_ai.output.messages"] = genai

        def by_pass(prefix: str, role: str, genai_key: str, indexed: str) -> Any:
            got = flat_messages(attrs, prefix, role)
            if got is not None:
                return got
            for value in (unflatten(attrs, prefix), _json(attrs.get(genai_key)), unflatten(attrs, indexed)):
                if isinstance(value, str) and value:
                    return value
                if isinstance(value, list) and value:
                    return normalize_messages([_default_role(v, role) for v in value])
            return None

        ins, out = by_pass("llm.input_messages", "user", "gen_ai.input.messages", "gen_ai.prompt"), by_pass(
            "llm.output_messages", "assistant", "gen_ai.output.messages", "gen_ai.completion"
        )
        if isinstance(ins, str):
            ins = [{"role": "user", "content": ins}]
        if isinstance(out, str):
            out = {"role": "assistant", "content": out}
        elif out:
            out = _as_assistant(next((m for m in out if m["role"] == "assistant"), out[0]))
        else:
            out = None
        assert messages_from_attributes(attrs) == (ins, out)


def _json(value: Any) -> Any:
    import json

    try:
        return json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return None
