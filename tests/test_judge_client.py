"""The judge's model client against a chat-completions server on 127.0.0.1: retries, timeouts, streaming,
structured output, the cache, the budget and the repair attempt; and its configuration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trajdebug.judge import BudgetExceeded, ChatClient, JudgeConfig, JudgeConfigError, JudgeError, load_config
from trajdebug.judge.client import ResponseCache
from trajdebug.judge.config import require_config
from trajdebug.judge.structured import REPAIR, Session, parse_json, validate
from trajdebug.testing import FakeModelServer, Reply, Request


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["decisive", "sound"]}, "confidence": {"type": "number"}},
    "required": ["verdict", "confidence"],
    "additionalProperties": False,
}
GOOD = json.dumps({"verdict": "decisive", "confidence": 0.8})
ASK = [{"role": "system", "content": "judge"}, {"role": "user", "content": "is S1 wrong?"}]


def config(server: FakeModelServer, **kw: Any) -> JudgeConfig:
    """A configuration for the fake server: no cache, fast backoff (overridable)."""
    return JudgeConfig(**{"base_url": server.base_url, "model": "judge-m", "cache": None, "backoff": 0.001, **kw})


class TestClient:
    """One question to an OpenAI-compatible endpoint, answered once or streamed, retried when it may help."""

    def test_answer_and_usage_come_from_the_endpoint(self) -> None:
        """A plain answer is the message content; tokens are the endpoint's usage counts; the key is a bearer token."""
        with FakeModelServer([GOOD]) as server:
            got = ChatClient(config(server, api_key="sk-test-key-000000000000"))(ASK, schema=SCHEMA)
        assert json.loads(got.text) == {"verdict": "decisive", "confidence": 0.8}
        assert got.prompt_tokens > 0 and got.completion_tokens > 0 and not got.cached
        req = server.requests[0]
        assert req.path == "/v1/chat/completions"
        assert req.headers["authorization"] == "Bearer sk-test-key-000000000000"
        assert req.body["model"] == "judge-m" and req.body["temperature"] == 0.0
        assert req.body["response_format"]["type"] == "json_schema"
        assert req.body["response_format"]["json_schema"]["schema"] == SCHEMA

    def test_streamed_answer_is_joined_with_its_usage(self) -> None:
        """With stream on, the deltas are joined and the usage is read from the last chunk."""
        with FakeModelServer([GOOD]) as server:
            got = ChatClient(config(server, stream=True))(ASK, schema=SCHEMA)
        assert got.text == GOOD
        assert server.requests[0].body["stream"] is True
        assert server.requests[0].body["stream_options"] == {"include_usage": True}
        assert got.completion_tokens == len(GOOD.split()) + 1  # the server's count, not an estimate

    def test_server_errors_are_retried_and_counted(self) -> None:
        """HTTP 503 and 500 are retried (by the openai client); the third attempt's answer is returned, and the
        two failed requests are counted with the tokens they carried."""
        with FakeModelServer([Reply(status=503), Reply(status=500), GOOD]) as server:
            client = ChatClient(config(server, retries=2))
            got = client(ASK)
        assert got.text == GOOD and len(server.requests) == 3
        assert (3, 3, 2 * 13) == (got.requests, client.requests_sent, got.retried_tokens)

    def test_an_answer_that_is_not_json_waits_with_growing_backoff(self) -> None:
        """Bodies that are not JSON are retried here after waits that double, within the configured attempts."""
        waits: list[float] = []
        with FakeModelServer([Reply(raw="{not"), Reply(raw="{not"), GOOD]) as server:
            got = ChatClient(config(server, retries=2, backoff=0.2), sleep=waits.append)(ASK)
        assert got.text == GOOD and len(server.requests) == 3
        assert len(waits) == 2 and 0.1 <= waits[0] <= 0.2 and 0.2 <= waits[1] <= 0.4

    def test_no_key_sends_no_authorization_even_with_openai_api_key_set(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An endpoint configured without a key gets no Authorization header: the user's OPENAI_API_KEY stays home."""
        monkeypatch.setenv("OPENAI_API_KEY", "sk-user-own-openai-key-0000")
        with FakeModelServer([GOOD]) as server:
            ChatClient(config(server))(ASK)
        assert "authorization" not in server.requests[0].headers

    def test_client_errors_are_final_and_named_on_one_line(self) -> None:
        """HTTP 401 is not retried; the error names the endpoint, the status and the server's message."""
        with FakeModelServer([Reply(status=401, error="bad key\nreally")]) as server:
            with pytest.raises(JudgeError) as err:
                ChatClient(config(server, retries=3))(ASK)
            assert str(err.value) == f"{server.base_url}/chat/completions: HTTP 401: bad key really"
        assert len(server.requests) == 1

    def test_a_slow_endpoint_times_out_and_is_retried_then_given_up(self) -> None:
        """An answer slower than the timeout is abandoned, retried, and reported as a timeout."""
        slow = [Reply(text=GOOD, delay=1.0), Reply(text=GOOD, delay=1.0)]
        with FakeModelServer(slow) as server, pytest.raises(JudgeError, match=r"no answer within 0.2 s \(after 2"):
            ChatClient(config(server, timeout=0.2, retries=1))(ASK)
        assert len(server.requests) == 2

    def test_malformed_http_body_is_retried(self) -> None:
        """A body that is not JSON is a transient protocol error: the next attempt's answer is used."""
        with FakeModelServer([Reply(raw="{not json"), GOOD]) as server:
            got = ChatClient(config(server, retries=1))(ASK)
        assert got.text == GOOD and len(server.requests) == 2

    def test_unreachable_endpoint_is_one_line_error(self) -> None:
        """A closed port fails with 'cannot connect' after the retries, naming the endpoint."""
        server = FakeModelServer().start()
        url = server.base_url
        server.stop()
        client = ChatClient(JudgeConfig(url, "m", retries=1, backoff=0.001, cache=None))
        with pytest.raises(JudgeError, match=r"cannot connect .*\(after 2 attempts\)") as err:
            client(ASK)
        assert "\n" not in str(err.value) and url in str(err.value)

    def test_an_endpoint_without_json_schema_gets_json_object_then_the_prompt_only(self) -> None:
        """HTTP 400 to a json_schema response_format lowers it to json_object, then to none; the level sticks."""

        def script(request: Request) -> Reply | str:
            fmt = (request.body.get("response_format") or {}).get("type")
            return Reply(status=400, error="response_format not supported") if fmt else GOOD

        with FakeModelServer(script) as server:
            client = ChatClient(config(server))
            assert client(ASK, schema=SCHEMA).text == GOOD
            assert client(ASK, schema=SCHEMA).text == GOOD
        kinds = [(r.body.get("response_format") or {}).get("type") for r in server.requests]
        assert kinds == ["json_schema", "json_object", None, None]


class TestCache:
    """The on-disk cache: a request answered once is not sent again, and holds no prompt."""

    def test_same_request_is_answered_from_disk(self, tmp_path: Path) -> None:
        """The second identical request is served from the cache: one HTTP request, the answer marked cached."""
        with FakeModelServer([GOOD]) as server:
            first = ChatClient(config(server, cache=tmp_path / "c"))(ASK, schema=SCHEMA)
            again = ChatClient(config(server, cache=tmp_path / "c"))(ASK, schema=SCHEMA)
            other = [*ASK[:1], {"role": "user", "content": "is S2 wrong?"}]
            with pytest.raises(JudgeError):  # a different request is a miss (the script is exhausted)
                ChatClient(config(server, cache=tmp_path / "c", retries=0))(other, schema=SCHEMA)
        assert len(server.requests) == 2
        assert not first.cached and again.cached and again.text == GOOD
        assert again.prompt_tokens == first.prompt_tokens

    def test_cache_keeps_neither_prompt_nor_key(self, tmp_path: Path) -> None:
        """Entries hold the answer and counts only: no message text, no API key; the key is not part of the cache key."""
        secret = "sk-cachekey0000000000000000"
        with FakeModelServer([GOOD]) as server:
            ChatClient(config(server, cache=tmp_path, api_key=secret))(ASK, schema=SCHEMA)
            hit = ChatClient(config(server, cache=tmp_path, api_key="sk-other00000000000000000"))(ASK, schema=SCHEMA)
        assert hit.cached and len(ResponseCache(tmp_path)) == 1
        stored = "".join(p.read_text() for p in tmp_path.rglob("*.json"))
        assert "is S1 wrong" not in stored and secret not in stored

    def test_only_accepted_answers_are_kept(self, tmp_path: Path) -> None:
        """An answer the caller rejects is not cached: the next identical request goes out again."""
        with FakeModelServer(["nonsense", GOOD]) as server:
            client = ChatClient(config(server, cache=tmp_path))
            client(ASK, accept=lambda text: text == GOOD)
            client(ASK, accept=lambda text: text == GOOD)
            assert client(ASK, accept=lambda text: text == GOOD).cached
        assert len(server.requests) == 2

    def test_damaged_entry_is_a_miss(self, tmp_path: Path) -> None:
        """An entry that is not valid JSON is ignored and the question sent again."""
        with FakeModelServer([GOOD, GOOD]) as server:
            ChatClient(config(server, cache=tmp_path))(ASK)
            for p in tmp_path.rglob("*.json"):
                p.write_text("{half")
            assert not ChatClient(config(server, cache=tmp_path))(ASK).cached
        assert len(server.requests) == 2


class TestStructured:
    """JSON answers validated against a schema, one repair attempt, and the token budget."""

    def test_invalid_answer_is_repaired_once(self) -> None:
        """A malformed answer is sent back with what was wrong; the second answer is used."""
        with FakeModelServer(["Sure! {verdict: decisive", GOOD]) as server:
            session = Session(ChatClient(config(server)), 10_000, 200)
            assert session.ask("verdict", ASK, SCHEMA) == {"verdict": "decisive", "confidence": 0.8}
        repair = server.requests[1].body["messages"]
        assert repair[-2] == {"role": "assistant", "content": "Sure! {verdict: decisive"}
        assert repair[-1]["content"].startswith(REPAIR.split("{")[0]) and "not JSON" in repair[-1]["content"]
        assert session.tally.repairs == 1 and session.tally.requests == 2

    def test_schema_violations_are_named_in_the_repair(self) -> None:
        """An answer outside the schema (unknown verdict, missing field) is repaired with the violations named."""
        bad = json.dumps({"verdict": "maybe"})
        with FakeModelServer([bad, GOOD]) as server:
            Session(ChatClient(config(server)), 10_000, 200).ask("verdict", ASK, SCHEMA)
        text = server.requests[1].body["messages"][-1]["content"]
        assert '$.verdict must be one of "decisive", "sound"' in text and "$.confidence is missing" in text

    def test_invalid_twice_is_an_error(self) -> None:
        """Two invalid answers end the question with an error; no third request is made."""
        with FakeModelServer(["no", "still no"]) as server, pytest.raises(JudgeError, match="invalid twice"):
            Session(ChatClient(config(server)), 10_000, 200).ask("verdict", ASK, SCHEMA)
        assert len(server.requests) == 2

    def test_a_question_over_budget_is_not_sent(self) -> None:
        """A question whose prompt and longest answer exceed the budget left is refused before sending."""
        with FakeModelServer([GOOD]) as server:
            session = Session(ChatClient(config(server)), 150, 140)
            with pytest.raises(BudgetExceeded, match="left in the budget"):
                session.ask("verdict", ASK, SCHEMA)
        assert server.requests == [] and session.tally.skipped == ["verdict"]

    def test_spent_tokens_are_taken_from_the_budget(self) -> None:
        """Tokens the endpoint counted are spent; a later question that no longer fits is refused."""
        with FakeModelServer([GOOD, GOOD]) as server:
            session = Session(ChatClient(config(server)), 260, 100)
            session.ask("first", ASK, SCHEMA)
            spent = session.tally.tokens_sent + session.tally.tokens_received
            assert session.left == 260 - spent
            big = [*ASK, {"role": "user", "content": "x " * 400}]
            with pytest.raises(BudgetExceeded):
                session.ask("second", big, SCHEMA)
        assert len(server.requests) == 1

    def test_requests_that_failed_count_as_sent(self) -> None:
        """Retried and failed requests carried the prompt all the same: they are counted as requests and tokens."""
        with FakeModelServer([Reply(status=503), GOOD, Reply(status=500), Reply(status=500)]) as server:
            session = Session(ChatClient(config(server, retries=1)), 10_000, 200)
            answer = session.ask("first", ASK, SCHEMA)
            after_first = (session.tally.requests, session.tally.tokens_sent)
            with pytest.raises(JudgeError, match="HTTP 500"):
                session.ask("second", ASK, SCHEMA)
        assert answer["verdict"] == "decisive" and len(server.requests) == 4
        server_count = len(json.dumps(ASK).split())  # what the fake server reports for the answered request
        failed = 13  # the estimate of the failed request: 4 per message, plus 2 and 3 tokens of content
        assert after_first == (2, server_count + failed)
        assert session.tally.requests == 4 and session.tally.tokens_sent == after_first[1] + 2 * failed

    def test_json_is_read_from_fences_and_prose(self) -> None:
        """A fenced block or an object inside prose is read; text without JSON is an error."""
        assert parse_json('```json\n{"a": 1}\n```') == {"a": 1}
        assert parse_json('Here you go: {"a": [1, 2]} hope it helps') == {"a": [1, 2]}
        with pytest.raises(ValueError, match="not JSON"):
            parse_json("I think S3 is wrong")

    def test_schema_subset(self) -> None:
        """Types, enums, bounds, required and unexpected fields, items and lengths are checked with their place."""
        schema = {
            "type": "object",
            "properties": {
                "xs": {"type": "array", "maxItems": 1, "items": {"type": "integer", "minimum": 0}},
                "s": {"type": ["string", "null"], "minLength": 1},
            },
            "required": ["xs"],
            "additionalProperties": False,
        }
        assert validate({"xs": [3], "s": None}, schema) == []
        assert validate({"xs": [-1, True], "s": "", "z": 1}, schema) == [
            "$.z is not a field of the schema",
            "$.xs must have at most 1 items",
            "$.xs[0] must be at least 0",
            "$.xs[1] must be integer",
            "$.s must not be empty",
        ]
        assert validate([], schema) == ["$ must be object"]


class TestConfig:
    """Off unless configured; the environment, a TOML file and OpenAI's variables when asked."""

    def test_nothing_configured_is_none(self) -> None:
        """With no variable and no file there is no configuration; asking for one says what to set."""
        assert load_config({}) is None
        with pytest.raises(JudgeConfigError, match="TRAJDEBUG_JUDGE_BASE_URL and TRAJDEBUG_JUDGE_MODEL"):
            require_config({})

    def test_openai_variables_only_when_asked(self) -> None:
        """OPENAI_API_KEY alone configures nothing, unless the judge was asked for (then OpenAI's URL is used)."""
        env = {"OPENAI_API_KEY": "sk-openai000000000000000", "TRAJDEBUG_JUDGE_MODEL": "gpt-4o-mini"}
        with pytest.raises(JudgeConfigError, match="no endpoint"):
            load_config(env)
        got = require_config(env)
        assert got.base_url == "https://api.openai.com/v1" and got.api_key == env["OPENAI_API_KEY"]
        assert "sk-openai" not in repr(got)

    def test_environment_over_file(self, tmp_path: Path) -> None:
        """A TOML file sets limits and names the key's variable; the environment's endpoint wins."""
        f = tmp_path / "judge.toml"
        f.write_text(
            '[judge]\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "small"\napi_key_env = "MY_KEY"\n'
            "budget = 5000\nexpectation = false\ncache = false\n"
        )
        got = load_config({"MY_KEY": "k-123456", "TRAJDEBUG_JUDGE_BASE_URL": "http://127.0.0.1:2/v1/"}, path=f)
        assert got is not None
        assert (got.base_url, got.model, got.api_key, got.budget, got.expectation, got.cache) == (
            "http://127.0.0.1:2/v1",
            "small",
            "k-123456",
            5000,
            False,
            None,
        )
        assert got.endpoint == "http://127.0.0.1:2/v1/chat/completions"

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ('api_key = "sk-x"', "field 'api_key': keep keys out of files"),
            ("colour = 1", "unknown field 'colour'"),
            ('base_url = "http://h/v1"\nmodel = "m"\nbudget = "lots"', "field 'budget' must be a number"),
            ('base_url = "http://h/v1"\nmodel = "m"\nweight = 3', r"field 'weight' must lie in \[0, 1\]"),
            ('base_url = "ftp://h"\nmodel = "m"', "is not an http"),
            ("model = [", "not TOML"),
        ],
    )
    def test_bad_file_is_one_line_naming_file_and_field(self, tmp_path: Path, text: str, message: str) -> None:
        """Each mistake in a configuration file is reported on one line naming the file or field."""
        f = tmp_path / "j.toml"
        f.write_text(text)
        with pytest.raises(JudgeConfigError, match=message) as err:
            load_config({}, path=f)
        assert "\n" not in str(err.value)
