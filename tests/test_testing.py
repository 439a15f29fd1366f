"""trajdebug.testing: deterministic ids and clock, capturing runs in users' tests."""

from __future__ import annotations

from pathlib import Path

import pytest

import trajdebug
from trajdebug.testing import IncrementalClock, capture_runs, deterministic


@trajdebug.step(kind="tool")
def lookup(q: str) -> str:
    return f"result for {q}"


def agent() -> None:
    with trajdebug.run("agent"):
        lookup("a")
        lookup("b")


class TestDeterministic:
    def test_ids_and_clock_repeat_exactly(self) -> None:
        """Two recordings under deterministic() have identical step ids and times."""
        results = []
        for _ in range(2):
            with deterministic(), capture_runs() as runs:
                agent()
            results.append([(s.step_id, s.start_ns, s.end_ns) for s in runs[0].steps])
        assert results[0] == results[1]
        assert ["0000000000000001", "0000000000000002"] == [r[0] for r in results[0]]

    def test_clock_steps_by_a_millisecond(self) -> None:
        """IncrementalClock advances by its step on every read."""
        clock = IncrementalClock(start_ns=0, step_ns=1_000_000)
        assert [1_000_000, 2_000_000] == [clock(), clock()]

    def test_real_ids_come_back_after_the_block(self) -> None:
        """Outside deterministic() ids are random-prefixed again."""
        with deterministic():
            pass
        with capture_runs() as runs:
            agent()
        assert not runs[0].steps[0].step_id.startswith("00000000")


class TestCaptureRuns:
    def test_captures_without_touching_the_default_store(self, tmp_path: Path) -> None:
        """capture_runs() keeps runs in memory; no ./trajdebug.db appears."""
        with capture_runs() as runs:
            agent()
        assert ["agent"] == [r.name for r in runs]
        assert ["lookup", "lookup"] == [s.name for s in runs[0].steps]
        assert not (tmp_path / "trajdebug.db").exists()

    def test_refresh_shows_a_run_still_open(self) -> None:
        """refresh() inside the block shows what was recorded so far, as incomplete."""
        with capture_runs() as runs, trajdebug.run("open"):
            lookup("x")
            runs.refresh()
            assert "incomplete" == runs[0].outcome
            assert 1 == len(runs[0].steps)


class TestFakeModelServer:
    """The fake model server, driven by the real openai client over 127.0.0.1."""

    def test_chat_completions_with_tool_calls_and_recorded_requests(self) -> None:
        """A scripted tool call comes back as the SDK's tool-call objects, and the request is recorded."""
        from openai import OpenAI

        from trajdebug.testing import FakeModelServer, Reply, tool_call

        with (
            FakeModelServer([Reply(tool_calls=(tool_call("search", {"q": "oslo"}),))]) as server,
            OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
        ):
            r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        [call] = r.choices[0].message.tool_calls or []
        assert (call.function.name, call.function.arguments) == ("search", '{"q": "oslo"}')
        assert r.choices[0].finish_reason == "tool_calls"
        assert r.model == "m"
        [req] = server.requests
        assert (req.path, req.body["messages"]) == (
            "/v1/chat/completions",
            [{"role": "user", "content": "hi"}],
        )

    def test_chat_completions_streamed(self) -> None:
        """With stream=True the answer arrives as SSE chunks the SDK joins, usage last when asked for."""
        from openai import OpenAI

        from trajdebug.testing import FakeModelServer

        with (
            FakeModelServer(["hello there"]) as server,
            OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
        ):
            chunks = list(
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}], stream=True,
                    stream_options={"include_usage": True},
                )
            )  # fmt: skip
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "hello there"
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 3

    def test_responses_api_plain_and_streamed(self) -> None:
        """The Responses API answers with output items, and the streamed form gives the same final response."""
        from openai import OpenAI

        from trajdebug.testing import FakeModelServer, Reply, tool_call

        script = ["plain answer", Reply(text="look", tool_calls=(tool_call("f", {"a": 1}),))]
        with (
            FakeModelServer(script) as server,
            OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
        ):
            assert client.responses.create(model="m", input="hi").output_text == "plain answer"
            with client.responses.stream(model="m", input="hi") as stream:
                final = stream.get_final_response()
        assert [item.type for item in final.output] == ["message", "function_call"]
        assert final.output_text == "look"
        assert [r.body["input"] for r in server.requests] == ["hi", "hi"]

    def test_errors_delays_and_malformed_json_on_demand(self) -> None:
        """An HTTP error status reaches the client as its error class; a raw body that is not JSON fails to parse."""
        import time

        import openai

        from trajdebug.testing import FakeModelServer, Reply

        with (
            FakeModelServer(
                [Reply(status=429, error="slow down"), Reply(raw="{not json"), Reply(text="late", delay=0.2)]
            ) as server,
            openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
        ):
            msgs = [{"role": "user", "content": "hi"}]
            with pytest.raises(openai.RateLimitError, match="slow down"):
                client.chat.completions.create(model="m", messages=msgs)  # type: ignore[arg-type]
            with pytest.raises(ValueError, match="property name"):
                client.chat.completions.create(model="m", messages=msgs)  # type: ignore[arg-type]
            t0 = time.monotonic()
            assert (
                client.chat.completions.create(model="m", messages=msgs).choices[0].message.content == "late"
            )  # type: ignore[arg-type]
            assert time.monotonic() - t0 >= 0.2
            with pytest.raises(openai.InternalServerError, match="script exhausted"):
                client.chat.completions.create(model="m", messages=msgs)  # type: ignore[arg-type]

    def test_a_callable_script_answers_from_the_request(self) -> None:
        """A function of the request chooses each answer."""
        from openai import OpenAI

        from trajdebug.testing import FakeModelServer, Request

        def echo(request: Request) -> str:
            return f"you said {request.body['messages'][-1]['content']}"

        with (
            FakeModelServer(echo) as server,
            OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
        ):
            answers = [
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": w}])
                .choices[0]
                .message.content
                for w in ("a", "b")
            ]
        assert answers == ["you said a", "you said b"]

    def test_a_policy_swapped_between_runs_answers_from_then_on(self) -> None:
        """`use` replaces the policy on a running server: the next request is answered by the new one."""
        from openai import OpenAI

        from trajdebug.testing import FakeModelServer

        msgs = [{"role": "user", "content": "hi"}]
        with (
            FakeModelServer(lambda request: "first") as server,
            OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
        ):
            before = client.chat.completions.create(model="m", messages=msgs)  # type: ignore[arg-type]
            server.use(lambda request: "second")
            after = client.chat.completions.create(model="m", messages=msgs)  # type: ignore[arg-type]
        assert [before.choices[0].message.content, after.choices[0].message.content] == ["first", "second"]

    def test_a_policy_that_raises_is_a_server_error(self) -> None:
        """A policy's exception reaches the client as HTTP 500 naming it, as a broken backend would answer."""
        import openai

        from trajdebug.testing import FakeModelServer, Request

        def broken(request: Request) -> str:
            raise KeyError("no such account")

        with (
            FakeModelServer(broken) as server,
            openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
            pytest.raises(openai.InternalServerError, match="no such account"),
        ):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])

    def test_a_raw_body_goes_out_with_its_status(self) -> None:
        """A raw body with an error status is sent as it is: the client sees that status and that body."""
        import openai

        from trajdebug.testing import FakeModelServer, Reply

        own = '{"error": {"message": "backend on fire", "type": "server_error"}}'
        with (
            FakeModelServer([Reply(status=503, raw=own)]) as server,
            openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
            pytest.raises(openai.InternalServerError, match="backend on fire") as caught,
        ):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert caught.value.status_code == 503

    def test_a_completion_dict_is_streamed_as_chunks(self) -> None:
        """A whole chat.completion dict answers a streamed request as chunks that join to the same message."""
        from openai import OpenAI

        from trajdebug.testing import FakeModelServer

        call = {"id": "call_7", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
        body = {
            "id": "chatcmpl-own",
            "object": "chat.completion",
            "created": 1,
            "model": "own",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "look", "tool_calls": [call]},
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        }
        with (
            FakeModelServer([body, body]) as server,
            OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
        ):
            msgs = [{"role": "user", "content": "hi"}]
            plain = client.chat.completions.create(model="m", messages=msgs)  # type: ignore[arg-type]
            chunks = list(
                client.chat.completions.create(
                    model="m", messages=msgs, stream=True, stream_options={"include_usage": True},  # type: ignore[arg-type]
                )
            )  # fmt: skip
        assert plain.id == "chatcmpl-own" and plain.usage is not None and plain.usage.total_tokens == 7
        deltas = [c.choices[0].delta for c in chunks if c.choices]
        assert "".join(d.content or "" for d in deltas) == "look"
        calls = [tc for d in deltas for tc in d.tool_calls or ()]
        assert (calls[0].id, "".join(tc.function.arguments or "" for tc in calls if tc.function)) == (
            "call_7",
            '{"a": 1}',
        )
        assert {c.id for c in chunks} == {"chatcmpl-own"}
        assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 7

    def test_base_url_needs_a_running_server(self) -> None:
        """Asking a stopped server for its URL says what is wrong."""
        from trajdebug.testing import FakeModelServer

        with pytest.raises(RuntimeError, match="not running"):
            _ = FakeModelServer().base_url


class TestRecordingAgainstTheFakeServer:
    """The recording SDK around an agent whose model is the fake server."""

    def test_ten_clean_runs_report_no_failure(self) -> None:
        """Ten clean recorded runs of a tool-calling agent: every one analyzes as a success with no failure."""
        import json

        from openai import OpenAI

        from trajdebug.analysis import analyze
        from trajdebug.testing import FakeModelServer, Reply, Request, tool_call

        def script(request: Request) -> Reply | str:
            msgs = request.body["messages"]
            if msgs[-1]["role"] == "tool":
                return f"Result: {msgs[-1]['content']}"
            return Reply(tool_calls=(tool_call("find_user", {"name": msgs[-1]["content"].split()[-1]}),))

        @trajdebug.step(kind="tool")
        def find_user(name: str) -> str:
            return f"u-{len(name)}{name}"

        names = ["ana", "bo", "carla", "dmitri", "eve", "farid", "gus", "hana", "ivo", "jun"]
        with (
            FakeModelServer(script) as server,
            OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
            capture_runs() as runs,
        ):

            @trajdebug.step(kind="llm")
            def ask(messages: list[dict[str, object]]) -> dict[str, object]:
                reply = client.chat.completions.create(model="gpt-4o", messages=messages)  # type: ignore[arg-type]
                return reply.choices[0].message.model_dump(exclude_none=True)

            for name in names:
                with trajdebug.run("support", task=name):
                    messages: list[dict[str, object]] = [{"role": "user", "content": f"who is {name}"}]
                    answer = ask(messages)
                    for call in answer.get("tool_calls", []):  # type: ignore[union-attr]
                        result = find_user(**json.loads(call["function"]["arguments"]))
                        messages += [answer, {"role": "tool", "tool_call_id": call["id"], "content": result}]
                        answer = ask(messages)
        reports = [analyze(r) for r in runs]
        assert [(a.outcome, a.failures) for a in reports] == [("success", ())] * 10
