"""Tests for the LLM-step convention (`trajdebug.core.chat`), on the SDKs' own types where they exist."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types import Message as AnthropicMessage
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from trajdebug.core.chat import (
    ENVELOPE_KEYS,
    messages_from_attributes,
    normalize_llm_step,
    normalize_messages,
    parse_arguments,
    unminted,
)


CHAT_REQUEST = {
    "model": "gpt-4o",
    "temperature": 0.2,
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "4 C"},
    ],
    "tools": [{"type": "function", "function": {"name": "weather", "parameters": {}}}],
}
CHAT_RESPONSE = {
    "id": "chatcmpl-9",
    "object": "chat.completion",
    "created": 1_700_000_123,
    "model": "gpt-4o-2024-08-06",
    "system_fingerprint": "fp_1",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "logprobs": None,
            "message": {"role": "assistant", "content": "4 C in Oslo.", "refusal": None},
        }
    ],
    "usage": {"prompt_tokens": 48, "completion_tokens": 5, "total_tokens": 53},
}
MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Oslo?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}],
    },
    {"role": "tool", "content": "4 C", "tool_call_id": "c1"},
]


def _idempotent(inp: Any, out: Any, attrs: dict[str, Any]) -> None:
    again_in, again_out, again_attrs = normalize_llm_step(inp, out, attrs)
    assert (again_in, again_out, again_attrs) == (inp, out, {})


class TestOpenAIChatCompletions:
    """Request bodies and responses, as dicts and as the SDK's pydantic objects."""

    def test_request_and_response_become_messages_and_envelope(self) -> None:
        """Messages in, the first choice out; model, usage, id, times, parameters and tools become attributes."""
        inp, out, attrs = normalize_llm_step(CHAT_REQUEST, ChatCompletion.model_validate(CHAT_RESPONSE))
        assert inp == {"messages": MESSAGES}
        assert out == {"role": "assistant", "content": "4 C in Oslo.", "tool_calls": []}
        assert attrs == {
            "llm.model": "gpt-4o-2024-08-06",
            "llm.invocation_parameters": {"temperature": 0.2},
            "llm.tools": ["weather"],
            "llm.response_id": "chatcmpl-9",
            "llm.created": 1_700_000_123,
            "llm.system_fingerprint": "fp_1",
            "llm.usage.prompt_tokens": 48,
            "llm.usage.completion_tokens": 5,
            "llm.usage.total_tokens": 53,
            "llm.finish_reason": "stop",
        }
        assert set(attrs) <= set(ENVELOPE_KEYS)
        _idempotent(inp, out, attrs)

    def test_streamed_chunks_are_joined(self) -> None:
        """Streamed chunks give one message: content deltas joined, tool-call argument pieces joined and parsed."""
        base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        chunks = [
            {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Look"}}]},
            {**base, "choices": [{"index": 0, "delta": {"content": "ing"}}]},
            {**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "k", "function": {"name": "f", "arguments": '{"a"'}}]}}]},
            {**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]  # fmt: skip
        _, out, attrs = normalize_llm_step(None, chunks)
        assert out == {
            "role": "assistant",
            "content": "Looking",
            "tool_calls": [{"id": "k", "name": "f", "arguments": {"a": 1}}],
        }
        assert attrs["llm.finish_reason"] == "tool_calls"

    def test_arguments_that_are_not_json_stay_raw(self) -> None:
        """Arguments holding a JSON object are parsed; anything else stays the raw string."""
        assert parse_arguments('{"q": "x"}') == {"q": "x"}
        assert parse_arguments("{broken") == "{broken"
        assert parse_arguments("5") == "5"
        assert parse_arguments({"q": 1}) == {"q": 1}


class TestResponsesAPI:
    """Input items and output items of the Responses API."""

    def test_items_become_messages(self) -> None:
        """function_call items are assistant tool calls, function_call_output items tool messages, instructions the system message."""
        request = {
            "model": "gpt-4o",
            "instructions": "Help.",
            "input": [
                {"role": "user", "content": "who is ana?"},
                {"type": "function_call", "call_id": "k1", "name": "lookup", "arguments": '{"name": "ana"}', "id": "fc1"},
                {"type": "function_call", "call_id": "k2", "name": "lookup", "arguments": '{"name": "bo"}', "id": "fc2"},
                {"type": "function_call_output", "call_id": "k1", "output": "u-1"},
            ],
            "tools": [{"type": "function", "name": "lookup", "parameters": {}}],
        }  # fmt: skip
        response = Response.model_validate(
            {
                "id": "resp_1", "object": "response", "created_at": 1_700_000_000, "model": "gpt-4o-2024",
                "status": "completed", "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                "output": [{"type": "message", "id": "m", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": "ana is u-1", "annotations": []}]}],
                "usage": {"input_tokens": 30, "output_tokens": 4, "total_tokens": 34,
                          "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
            }
        )  # fmt: skip
        inp, out, attrs = normalize_llm_step(request, response)
        assert inp["messages"] == [
            {"role": "system", "content": "Help."},
            {"role": "user", "content": "who is ana?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "k1", "name": "lookup", "arguments": {"name": "ana"}},
                    {"id": "k2", "name": "lookup", "arguments": {"name": "bo"}},
                ],
            },
            {"role": "tool", "content": "u-1", "tool_call_id": "k1"},
        ]
        assert out == {"role": "assistant", "content": "ana is u-1", "tool_calls": []}
        assert attrs["llm.model"] == "gpt-4o-2024"
        assert attrs["llm.usage.total_tokens"] == 34
        assert attrs["llm.tools"] == ["lookup"]
        _idempotent(inp, out, attrs)

    def test_output_items_alone(self) -> None:
        """A bare list of output items (the Agents SDK's response output) is one assistant message."""
        items = [
            {
                "type": "function_call",
                "call_id": "k",
                "name": "f",
                "arguments": "{}",
                "id": "x",
                "status": "completed",
            }
        ]
        assert normalize_llm_step(None, items)[1] == {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "k", "name": "f", "arguments": {}}],
        }


class TestAnthropicMessages:
    """Content blocks of the Messages API, with the SDK's types."""

    def test_blocks(self) -> None:
        """tool_use blocks are tool calls, tool_result blocks tool messages, the system prompt the first message."""
        request = {
            "model": "claude-x",
            "max_tokens": 100,
            "system": "Be brief.",
            "messages": [
                {"role": "user", "content": "Weather in Oslo?"},
                {"role": "assistant", "content": [{"type": "text", "text": "Checking."}, {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Oslo"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "4 C"}]}]},
            ],
        }  # fmt: skip
        response = AnthropicMessage.model_validate(
            {
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x-2025",
                "content": [{"type": "text", "text": "4 C."}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 20, "output_tokens": 3},
            }
        )  # fmt: skip
        inp, out, attrs = normalize_llm_step(request, response)
        assert inp["messages"] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": "Checking.", "tool_calls": [{"id": "t1", "name": "weather", "arguments": {"city": "Oslo"}}]},
            {"role": "tool", "content": "4 C", "tool_call_id": "t1"},
        ]  # fmt: skip
        assert out == {"role": "assistant", "content": "4 C.", "tool_calls": []}
        assert attrs["llm.finish_reason"] == "end_turn"
        assert attrs["llm.usage.total_tokens"] == 23
        assert attrs["llm.invocation_parameters"] == {"max_tokens": 100}
        _idempotent(inp, out, attrs)


class TestLangChain:
    """LangChain message objects."""

    def test_messages_and_ai_message(self) -> None:
        """AIMessage.tool_calls become tool calls and ToolMessage a tool message; response metadata becomes the envelope."""
        history = [
            SystemMessage("Be brief."),
            HumanMessage("Weather in Oslo?"),
            AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": "c1"}]),
            ToolMessage("4 C", tool_call_id="c1"),
        ]
        answer = AIMessage(
            "4 C in Oslo.",
            response_metadata={
                "model_name": "gpt-4o-2024",
                "finish_reason": "stop",
                "system_fingerprint": "fp",
            },
            usage_metadata={"input_tokens": 48, "output_tokens": 5, "total_tokens": 53},
            id="chatcmpl-1",
        )
        inp, out, attrs = normalize_llm_step(history, answer)
        assert inp == {"messages": MESSAGES}
        assert out == {"role": "assistant", "content": "4 C in Oslo.", "tool_calls": []}
        assert attrs["llm.model"] == "gpt-4o-2024"
        assert attrs["llm.response_id"] == "chatcmpl-1"
        assert attrs["llm.usage.prompt_tokens"] == 48
        _idempotent(inp, out, attrs)


class TestSpanAttributes:
    """OpenInference and OpenTelemetry GenAI attributes."""

    def test_openinference_flattened(self) -> None:
        """Flattened messages win over input.value; their tool-call arguments (a JSON string) are parsed."""
        attrs = {
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Weather in Oslo?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "weather",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city": "Oslo"}',
            "llm.model_name": "gpt-4o",
            "llm.system": "openai",
            "llm.token_count.prompt": 48,
            "llm.invocation_parameters": '{"temperature": 0}',
            "llm.tools.0.tool.json_schema": json.dumps({"type": "function", "function": {"name": "weather"}}),
        }
        inp, out, extra = normalize_llm_step(None, None, attrs)
        assert inp == {"messages": [{"role": "user", "content": "Weather in Oslo?"}]}
        assert out == {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}],
        }
        assert extra == {
            "llm.model": "gpt-4o",
            "llm.provider": "openai",
            "llm.usage.prompt_tokens": 48,
            "llm.invocation_parameters": {"temperature": 0},
            "llm.tools": ["weather"],
        }
        _idempotent(inp, out, {**attrs, **extra})

    def test_genai_current_parts(self) -> None:
        """gen_ai.input/output.messages with parts: text, tool_call, tool_call_response."""
        attrs = {
            "gen_ai.input.messages": json.dumps(
                [
                    {"role": "user", "parts": [{"type": "text", "content": "Weather?"}]},
                    {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}]},
                    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "4 C"}]},
                ]
            ),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "4 C."}], "finish_reason": "stop"}]),
            "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be brief."}]),
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.response.model": "gpt-4o-2024",
            "gen_ai.provider.name": "openai",
            "gen_ai.usage.input_tokens": 10,
            "gen_ai.response.finish_reasons": ["stop"],
            "gen_ai.request.temperature": 0.5,
        }  # fmt: skip
        inp, out, extra = normalize_llm_step(None, None, attrs)
        assert inp["messages"] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}]},
            {"role": "tool", "content": "4 C", "tool_call_id": "c1"},
        ]  # fmt: skip
        assert out == {"role": "assistant", "content": "4 C.", "tool_calls": []}
        assert extra["llm.model"] == "gpt-4o-2024"
        assert extra["llm.finish_reason"] == "stop"
        assert extra["llm.invocation_parameters"] == {"temperature": 0.5}

    def test_genai_deprecated_names_and_events(self) -> None:
        """Indexed gen_ai.prompt/completion attributes, and the deprecated message events."""
        attrs = {
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "hi",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.tool_calls.0.id": "c1",
            "gen_ai.completion.0.tool_calls.0.name": "f",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"x": 1}',
        }
        assert messages_from_attributes(attrs) == (
            [{"role": "user", "content": "hi"}],
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "name": "f", "arguments": {"x": 1}}],
            },
        )
        events = [
            ("gen_ai.system.message", 1, {"content": "Be brief."}),
            ("gen_ai.user.message", 2, {"content": "hi"}),
            ("gen_ai.choice", 3, {"index": 0, "finish_reason": "stop", "message": '{"content": "hello"}'}),
        ]
        assert messages_from_attributes({}, events) == (
            [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
            {"role": "assistant", "content": "hello", "tool_calls": []},
        )


class TestPassThrough:
    """Values in no known shape."""

    @pytest.mark.parametrize("value", [None, 42, {"query": "x"}, [1, 2], {"rows": [{"a": 1}]}, b"raw"])
    def test_unknown_values_pass_unchanged(self, value: Any) -> None:
        """Anything not an LLM request or response comes back as it was, and nothing raises."""
        assert normalize_llm_step(value, value) == (value, value, {})

    def test_plain_prompt_and_completion_strings(self) -> None:
        """A prompt string is one user message; a completion string the assistant's content."""
        assert normalize_llm_step("hi", "hello") == (
            {"messages": [{"role": "user", "content": "hi"}]},
            {"role": "assistant", "content": "hello", "tool_calls": []},
            {},
        )

    def test_lists_of_non_messages_are_not_messages(self) -> None:
        """A list of records is data, not a conversation."""
        assert normalize_messages([{"id": 1, "name": "x"}]) is None


class TestUnminted:
    """What a provider mints per call, left out so that two calls asked and answered alike compare equal."""

    @staticmethod
    def completion(rid: str, call_id: str, created: int, tokens: int, berth: str) -> dict[str, Any]:
        call = {"id": call_id, "type": "function", "function": {"name": "moor", "arguments": json.dumps({"berth": berth})}}
        return {
            "id": rid,
            "object": "chat.completion",
            "created": created,
            "model": "gpt-4o",
            "system_fingerprint": f"fp_{created}",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [call]}}],
            "usage": {"prompt_tokens": tokens, "completion_tokens": 9, "total_tokens": tokens + 9},
        }

    def test_two_responses_differing_only_in_minted_fields_are_equal_and_the_model_and_arguments_stay(self) -> None:
        """Chat Completions answers differing in response id, creation time, usage, fingerprint and tool-call id
        read alike; the model and the call's arguments are still there, and other arguments still differ."""
        a = unminted(self.completion("chatcmpl-1", "call_a", 100, 40, "B7"))
        b = unminted(self.completion("chatcmpl-2", "call_b", 200, 41, "B7"))
        c = unminted(self.completion("chatcmpl-2", "call_b", 200, 41, "C2"))
        assert a == b != c
        assert a["model"] == "gpt-4o" and "B7" in a["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]

    def test_anthropic_and_responses_ids_go_but_a_tool_use_input_stays(self) -> None:
        """An Anthropic message's id, usage and tool-use id, a tool result's ``tool_use_id`` and Responses API
        items' ids go; the tool's input (an ``id`` field in it included) and the model stay."""
        use = {"type": "tool_use", "id": "toolu_9", "name": "hold_seat", "input": {"id": "S-14"}}
        msg = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": [use], "usage": {"input_tokens": 3}}
        assert unminted(msg) == {
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "content": [{"type": "tool_use", "name": "hold_seat", "input": {"id": "S-14"}}],
        }
        result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "held"}]}
        assert unminted(result) == {"role": "user", "content": [{"type": "tool_result", "content": "held"}]}
        resp = {"id": "resp_1", "object": "response", "created_at": 5, "model": "o4", "output": [
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "hold_seat", "arguments": "{}"}
        ]}
        assert unminted(resp) == {"object": "response", "model": "o4", "output": [{"type": "function_call", "name": "hold_seat", "arguments": "{}"}]}

    def test_a_request_keeps_what_was_asked_and_every_message(self) -> None:
        """A request keeps its model, parameters and all its messages (none cut, however many); only the
        ``tool_call_id`` of a tool result and the ids of the calls in its history go."""
        history = [{"role": "user", "content": f"reading {i}"} for i in range(300)]
        history += [
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_7", "name": "gauge", "arguments": {"id": "G-2"}}]},
            {"role": "tool", "tool_call_id": "call_7", "content": "2.5 m"},
        ]
        out = unminted({"model": "gpt-4o-mini", "temperature": 0, "messages": history})
        assert out["model"] == "gpt-4o-mini" and out["temperature"] == 0 and len(out["messages"]) == 302
        assert out["messages"][300]["tool_calls"] == [{"name": "gauge", "arguments": {"id": "G-2"}}]
        assert out["messages"][301] == {"role": "tool", "content": "2.5 m"}

    @pytest.mark.parametrize(
        "call",
        [
            {"tool": "water_zone", "args": {"zone": "A", "litres": 32.0}, "id": "call_21_0"},
            {"id": "call_9", "type": "function", "function": {"name": "water_zone", "arguments": '{"zone": "A"}'}},
            {"id": "call_9", "name": "water_zone", "arguments": {"zone": "A"}},
            {"tool": "water_zone", "tool_input": {"zone": "A"}, "tool_call_id": "call_9", "log": ""},
        ],
    )
    def test_a_tool_call_a_step_returns_by_itself_loses_its_id_and_keeps_its_tool_and_arguments(
        self, call: dict[str, Any]
    ) -> None:
        """A tool call a model step returns on its own or in a list (not inside a response or a message), in
        the schema of a model API or of LangChain, reads alike whatever id the API gave it (nu63); its tool
        and arguments stay."""
        other = {k: ("call_77" if k in ("id", "tool_call_id") else v) for k, v in call.items()}
        assert unminted(call) == unminted(other) != call
        assert unminted([call]) == [unminted(call)] == unminted([other])
        assert {k: v for k, v in call.items() if k not in ("id", "tool_call_id")} == unminted(call)

    @pytest.mark.parametrize(
        "value",
        [
            {"type": "refund", "id": "KT-900", "urgency": "normal"},
            {"name": "Ada", "id": "u-7", "team": "ops"},
            [{"index": 3, "id": "doc-7", "score": 0.9}] * 250,
            {"role": "admin", "id": "u-1", "created": 5},
            {"model": "roadster", "created": 1999, "usage": "weekend"},
            "call_1",
        ],
    )
    def test_parsed_content_is_never_touched(self, value: Any) -> None:
        """A record or list the model answered with (a ``type``, ``id``, ``index``, ``model`` or ``role`` field
        of it is what it said) comes back whole, its lists uncut."""
        assert unminted(value) == value


class _Dict(dict):  # type: ignore[type-arg]
    """A mapping that is not exactly a dict: read only by the general way (`_convert_plain`'s shortcut
    takes exact dicts), with the same meaning."""


_PART_KEYS = ["type", "content", "text", "refusal", "id", "name"]
_PART_VALUES: list[Any] = ["text", "tool_call", "input_text", "hi", "", "\u00e9t\u00e9", 3, None, ["a"], {"a": 1}]
_ROLES: list[Any] = ["user", "Assistant", "human", "model", "tool", "weird", "", 5, None]


def _outcome(convert: Any, value: Any) -> Any:
    """What ``convert`` makes of ``value``, or the type of what it raised (a part of an unhashable type)."""
    try:
        return convert(value)
    except Exception as exc:  # noqa: BLE001 - the general way's error is compared, whatever it is
        return type(exc)


class TestGenAITextParts:
    @settings(max_examples=500, deadline=None)
    @given(
        st.sampled_from(_ROLES),
        st.lists(
            st.one_of(
                st.dictionaries(st.sampled_from(_PART_KEYS), st.sampled_from(_PART_VALUES), max_size=3),
                st.builds(
                    lambda text, more: {"type": "text", "content": text, **more},
                    st.sampled_from(["a", "b c", "", 7, None]),
                    st.dictionaries(st.sampled_from(_PART_KEYS[2:]), st.sampled_from(_PART_VALUES), max_size=1),
                ),
                st.sampled_from(["bare", 4, None]),
            ),
            max_size=4,
        ),
        st.dictionaries(st.sampled_from(["content", "tool_call_id", "name", "id", "type"]), st.just("x"), max_size=1),
    )
    def test_the_shortcut_gives_what_the_general_way_gives(
        self, role: Any, parts: list[Any], extra: dict[str, Any]
    ) -> None:
        """A GenAI message of text parts (the common form) and everything near it (another key, a part of
        another type or with another field, a text that is not a string, a role an alias or not a string)
        converts to exactly what the general way makes of it."""
        from trajdebug.core.chat._messages import _convert_plain

        msg = {"role": role, "parts": parts, **extra}
        assert _outcome(_convert_plain, msg) == _outcome(_convert_plain, _Dict(msg))
        assert _outcome(normalize_messages, [msg]) == _outcome(normalize_messages, [_Dict(msg)])

    def test_text_parts_are_one_message_of_their_texts_joined(self) -> None:
        """The common form reads as one message: its role's alias, its texts joined by a line (none: no content)."""
        from trajdebug.core.chat._messages import _convert_plain

        two = {"role": "Human", "parts": [{"type": "text", "content": "a"}, {"type": "text", "content": "b"}]}
        assert _convert_plain(two) == [{"role": "user", "content": "a\nb"}]
        assert _convert_plain({"role": "model", "parts": []}) == [{"role": "assistant", "content": None}]
