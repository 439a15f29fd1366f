"""A client for any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp, LiteLLM).

Built on the ``openai`` client (the ``judge`` extra): ``openai.OpenAI(base_url=...,
api_key=..., timeout=..., max_retries=...)`` sends one request to
``{base_url}/chat/completions`` per question and brings

- a **timeout** per request (this module adds a deadline for a whole streamed answer);
- **retries with exponential backoff** and jitter on connection errors,
  timeouts, HTTP 408, 409, 429 and 5xx (``Retry-After`` honoured); other HTTP
  errors are final.  An answer that is not JSON is retried here, within the
  same number of attempts;

and this module keeps what the judge adds to it:

- **structured output**: the answer's JSON schema goes out as
  ``response_format`` (``json_schema``); an endpoint that rejects it (HTTP 400
  or 422) is asked again with ``json_object``, then with the schema in the
  prompt only, and the client remembers the level that worked;
- **streaming** (server-sent events, usage from the last chunk) or one body;
- the **on-disk cache** (`ResponseCache`): a request already answered is not
  sent again.  Its key is the SHA-256 of the request as sent (endpoint, model,
  messages, sampling and answer-shape parameters) in canonical JSON, never the
  API key; an entry holds the answer and its token counts, not the prompt.
  Only answers the caller accepted (validated) are kept; writes are atomic
  (a temporary file renamed into place) and an unreadable entry is a miss;
- the **count of requests** each question cost, retries included (the token
  budget charges the ones that failed too), read from the HTTP transport.

Any other backend plugs in as a `ChatModel`: a plain callable.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from trajdebug.judge.config import JudgeConfig, Structured


RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
"""HTTP statuses worth another attempt (the ``openai`` client retries them, and any 5xx)."""

_LOWER: dict[str, Structured] = {"json_schema": "json_object", "json_object": "none"}


# -- the on-disk cache ---------------------------------------------------------------------

CACHE_FORMAT = 1
"""Version of a cache entry's layout; entries of another version are misses."""


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    """An answer read from the cache."""

    text: str
    """The model's answer (its message content)."""
    prompt_tokens: int
    """Tokens the request cost when it was sent."""
    completion_tokens: int
    """Tokens the answer cost when it was received."""
    model: str
    """The model that answered, as the endpoint named it."""


def request_key(endpoint: str, body: Mapping[str, Any]) -> str:
    """The cache key of a request: SHA-256 of the endpoint and body in canonical JSON (the key leaves out streaming)."""
    canonical = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    text = json.dumps([CACHE_FORMAT, endpoint, canonical], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ResponseCache:
    """Answers on disk under ``directory``, two hex digits of fan-out, one file per request.

    Args:
        directory: Where the entries live (created on the first write).
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def _file(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedAnswer | None:
        """The stored answer for ``key``, or None (missing, unreadable or of another layout)."""
        try:
            data = json.loads(self._file(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or not isinstance(data.get("text"), str):
            return None
        usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
        return CachedAnswer(
            data["text"],
            _count(usage.get("prompt_tokens")),
            _count(usage.get("completion_tokens")),
            str(data.get("model") or ""),
        )

    def put(self, key: str, answer: CachedAnswer) -> None:
        """Store an answer (best effort: a cache that cannot be written is skipped silently)."""
        target = self._file(key)
        entry = {
            "format": CACHE_FORMAT,
            "text": answer.text,
            "model": answer.model,
            "usage": {"prompt_tokens": answer.prompt_tokens, "completion_tokens": answer.completion_tokens},
        }
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(entry, fh, ensure_ascii=False)
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            # The cache saves tokens; a read-only or full disk must not fail the analysis.
            pass

    def __len__(self) -> int:
        """How many entries the cache holds."""
        if not self.directory.is_dir():
            return 0
        return sum(1 for _ in self.directory.glob("??/*.json"))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


# -- the client ------------------------------------------------------------------------------


class JudgeError(RuntimeError):
    """A question the model could not answer (the message is one line and names the endpoint).

    Args:
        message: What failed.
        requests: HTTP requests that went out for it all the same.
        sent: Tokens those requests carried (estimated).
    """

    def __init__(self, message: str, *, requests: int = 0, sent: int = 0) -> None:
        super().__init__(message)
        self.requests = requests
        self.sent = sent


@dataclass(frozen=True, slots=True)
class Completion:
    """One answer of the model."""

    text: str
    """The answer's text (the assistant message's content)."""
    prompt_tokens: int
    """Tokens the request cost, as the endpoint counted them (estimated when it did not say)."""
    completion_tokens: int
    """Tokens of the answer, as the endpoint counted them (estimated when it did not say)."""
    cached: bool = False
    """True when the answer came from the on-disk cache (nothing was sent)."""
    model: str = ""
    """The model that answered, as the endpoint named it."""
    requests: int = 1
    """HTTP requests it took (retries and rejected answer shapes included; 0 from the cache)."""
    retried_tokens: int = 0
    """Tokens (estimated) the requests that failed before it carried all the same."""


@runtime_checkable
class ChatModel(Protocol):
    """A model the judge can ask: messages in, the answer's text out.

    ``schema`` is the JSON schema the answer must follow (a backend may pass it
    on or ignore it: the judge validates the answer either way); ``name``
    names the schema; ``accept`` tells a backend that keeps answers (a cache)
    which ones are worth keeping.
    """

    endpoint: str
    """Where questions go, as shown to the user (``--judge`` prints it)."""

    def __call__(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        schema: Mapping[str, Any] | None = None,
        name: str = "answer",
        max_tokens: int = 1000,
        accept: Callable[[str], bool] | None = None,
    ) -> Completion: ...


def estimate_tokens(text: str) -> int:
    """A rough token count of text: one per four characters (no tokenizer: the endpoint's model is unknown)."""
    return (len(text) + 3) // 4


def messages_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """A rough token count of a list of chat messages (content plus a few per message)."""
    return sum(4 + estimate_tokens(str(m.get("content") or "")) for m in messages)


class ChatClient:
    """The `ChatModel` of an OpenAI-compatible endpoint described by a `JudgeConfig`, on the ``openai`` client.

    Args:
        config: Endpoint, model, key, timeouts, retries, cache.
        sleep: How to wait before retrying an answer that was not JSON (tests pass a recorder); the ``openai``
            client waits between its own retries.
    """

    def __init__(self, config: JudgeConfig, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config
        self.endpoint = config.endpoint
        self._mode: Structured = config.structured
        self._cache = ResponseCache(config.cache) if config.cache is not None else None
        self._sleep = sleep
        self._rng = random.Random()
        self._transport = _transport()
        self._openai = _client(config, self._transport)
        self._headers = None if config.api_key else {"Authorization": _omit()}
        self.requests_sent = 0
        """HTTP requests that left the process (retries included)."""

    def __call__(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        schema: Mapping[str, Any] | None = None,
        name: str = "answer",
        max_tokens: int = 1000,
        accept: Callable[[str], bool] | None = None,
    ) -> Completion:
        """Ask the endpoint (or the cache) and return the answer.

        An answer goes into the cache only when ``accept`` (if given) takes it:
        the judge keeps only answers that passed validation.

        Raises:
            JudgeError: the endpoint failed after the retries, or answered nothing.
        """
        spent = _Spent()
        while True:
            body = self._body(messages, schema, name, max_tokens)
            key = request_key(self.endpoint, body)
            if self._cache is not None:
                hit = self._cache.get(key)
                if hit is not None:
                    return Completion(hit.text, hit.prompt_tokens, hit.completion_tokens, True, hit.model, 0)
            try:
                completion = self._send(body, messages, spent)
            except _Rejected:
                # The endpoint does not take this response_format: ask with a plainer one.
                self._mode = _LOWER[self._mode]
                continue
            except JudgeError as exc:
                raise JudgeError(str(exc), requests=spent.requests, sent=spent.tokens) from None
            completion = replace(completion, requests=spent.requests + 1, retried_tokens=spent.tokens)
            if self._cache is not None and (accept is None or accept(completion.text)):
                self._cache.put(
                    key,
                    CachedAnswer(completion.text, completion.prompt_tokens, completion.completion_tokens, completion.model),
                )
            return completion

    # -- the request --------------------------------------------------------------------

    def _body(
        self,
        messages: Sequence[Mapping[str, Any]],
        schema: Mapping[str, Any] | None,
        name: str,
        max_tokens: int,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [dict(m) for m in messages],
            "temperature": self.config.temperature,
            "max_tokens": max_tokens,
        }
        if schema is not None and self._mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": dict(schema), "strict": False},
            }
        elif schema is not None and self._mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        if self.config.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def _send(self, body: Mapping[str, Any], messages: Sequence[Mapping[str, Any]], spent: _Spent) -> Completion:
        """Ask through the ``openai`` client (which retries what may succeed later) and read the answer;
        ``spent`` counts the requests that went out and failed."""
        import openai

        attempts, tries = self.config.retries + 1, 0
        while True:
            count, ok = self._transport.start(), False
            try:
                client = self._openai.with_options(max_retries=attempts - tries - 1)
                raw = client.chat.completions.with_raw_response.create(**body, extra_headers=self._headers)
                completion = self._read(raw, messages)
                ok = True
                return completion
            except openai.APIStatusError as exc:
                if exc.status_code in (400, 422) and "response_format" in body:
                    raise _Rejected from None
                detail = _error_message(exc.body)
                last = f"HTTP {exc.status_code}" + (f": {detail}" if detail else "")
                final = exc.status_code not in RETRY_STATUS and exc.status_code < 500
            except openai.APITimeoutError:
                last, final = f"no answer within {self.config.timeout:g} s", False
            except openai.APIConnectionError as exc:
                # Refused before a byte of the request went out: nothing was sent.
                how = "connection failed" if count.sent else "cannot connect"
                last, final = f"{how} ({exc.__cause__ or exc})", False
            except _Malformed as exc:
                last, final = str(exc), False
            finally:
                tries += count.tries
                self.requests_sent += count.tries
                spent.add(messages, count.sent - ok)
            if final:
                raise JudgeError(f"{self.endpoint}: {last}")
            if tries >= attempts:
                raise JudgeError(f"{self.endpoint}: {last} (after {tries} attempt{'s' if tries > 1 else ''})")
            self._sleep(self._backoff(tries - 1))

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: ``backoff * 2**attempt``, times a factor in [0.5, 1]."""
        return float(self.config.backoff * (2**attempt) * (0.5 + self._rng.random() / 2))

    def _read(self, raw: Any, messages: Sequence[Mapping[str, Any]]) -> Completion:
        """The answer of a raw response: server-sent events or one JSON body (read here, so that a body that is
        not the protocol's is named and retried, and content the SDK's models do not expect is still read)."""
        response = raw.http_response
        try:
            if "text/event-stream" in response.headers.get("content-type", ""):
                return self._stream(_lines(response, time.monotonic() + self.config.timeout), messages)
            try:
                payload = json.loads(response.read())
            except ValueError:
                raise _Malformed(f"the answer is not JSON ({len(response.content)} bytes)") from None
        finally:
            response.close()
        return self._completion(payload, messages)

    def _completion(self, payload: Any, messages: Sequence[Mapping[str, Any]]) -> Completion:
        try:
            message = payload["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise _Malformed("the answer has no choices[0].message") from None
        text = _content(message.get("content") if isinstance(message, Mapping) else None)
        if text is None:
            refusal = message.get("refusal") if isinstance(message, Mapping) else None
            raise JudgeError(f"{self.endpoint}: the model answered no text" + (f" (refusal: {refusal})" if refusal else ""))
        usage = payload.get("usage") if isinstance(payload.get("usage"), Mapping) else {}
        return Completion(
            text,
            _tokens(usage.get("prompt_tokens"), messages_tokens(messages)),
            _tokens(usage.get("completion_tokens"), estimate_tokens(text)),
            False,
            str(payload.get("model") or self.config.model),
        )

    def _stream(self, lines: Iterator[str], messages: Sequence[Mapping[str, Any]]) -> Completion:
        parts: list[str] = []
        usage: Mapping[str, Any] = {}
        model = self.config.model
        for line in lines:
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            try:
                chunk = json.loads(data)
            except ValueError:
                raise _Malformed("a streamed chunk is not JSON") from None
            if not isinstance(chunk, Mapping):
                continue
            model = str(chunk.get("model") or model)
            if isinstance(chunk.get("usage"), Mapping):
                usage = chunk["usage"]
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") if isinstance(choice, Mapping) else None
                piece = _content(delta.get("content")) if isinstance(delta, Mapping) else None
                if piece:
                    parts.append(piece)
        text = "".join(parts)
        if not text:
            raise JudgeError(f"{self.endpoint}: the model streamed no text")
        return Completion(
            text,
            _tokens(usage.get("prompt_tokens"), messages_tokens(messages)),
            _tokens(usage.get("completion_tokens"), estimate_tokens(text)),
            False,
            model,
        )


class _Spent:
    """Requests of one question that failed, and the tokens they carried (estimated)."""

    def __init__(self) -> None:
        self.requests = 0
        self.tokens = 0

    def add(self, messages: Sequence[Mapping[str, Any]], n: int = 1) -> None:
        self.requests += n
        self.tokens += n * messages_tokens(messages)


class _Count:
    """The HTTP tries of one call of the ``openai`` client, and how many of them went out."""

    __slots__ = ("sent", "tries")

    def __init__(self) -> None:
        self.tries = 0
        self.sent = 0


def _transport() -> Any:
    """An httpx transport that counts each try of the ``openai`` client (its retries are inside one call) and
    whether the request left the process (a refused connection sent nothing)."""
    import importlib

    try:
        import openai
    except ImportError as exc:
        raise ImportError("the judge needs the openai client (pip install 'trajdebug[judge]')") from exc
    # The HTTP library the openai client is built on (httpx, or httpx2 in its later releases).
    base = next(c for c in openai.DefaultHttpxClient.__mro__ if c.__name__ == "Client")
    httpx: Any = importlib.import_module(base.__module__.split(".")[0])

    class Counting(httpx.HTTPTransport):  # type: ignore[misc]
        count = _Count()

        def start(self) -> _Count:
            self.count = _Count()
            return self.count

        def handle_request(self, request: Any) -> Any:
            count = self.count
            count.tries += 1
            try:
                response = super().handle_request(request)
            except httpx.ConnectError:
                raise
            except Exception:
                count.sent += 1
                raise
            count.sent += 1
            return response

    # No connection outlives its answer: a judge asks a handful of questions per analysis, and a pooled socket
    # would outlive the ChatClient that nobody closes.
    return Counting(limits=httpx.Limits(max_keepalive_connections=0))


def _omit() -> Any:
    import openai

    return openai.Omit()


def _client(config: JudgeConfig, transport: Any) -> Any:
    try:
        import openai
    except ImportError as exc:
        raise ImportError("the judge needs the openai client (pip install 'trajdebug[judge]')") from exc
    return openai.OpenAI(
        base_url=config.base_url,
        # Without a key no Authorization header goes out (`ChatClient._headers`): a key of None would make the
        # client read OPENAI_API_KEY and send the user's OpenAI key to whatever endpoint is configured.
        api_key=config.api_key or "none",
        timeout=config.timeout,
        max_retries=config.retries,
        http_client=openai.DefaultHttpxClient(transport=transport),
    )


class _Rejected(Exception):
    """The endpoint rejected the request's ``response_format`` (HTTP 400 or 422)."""


class _Malformed(Exception):
    """The endpoint's HTTP answer was not the protocol's (retried: proxies fail this way transiently)."""


def _lines(response: Any, deadline: float) -> Iterator[str]:
    """The lines of a streamed answer (an ``httpx.Response``), until the deadline."""
    for line in response.iter_lines():
        if time.monotonic() > deadline:
            raise _Malformed("the streamed answer did not end within the timeout")
        yield line


def _content(value: Any) -> str | None:
    """A message's content as text (a string, or a list of text parts)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [str(p["text"]) for p in value if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
        return "".join(texts) if texts else None
    return None


def _tokens(value: Any, estimate: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else estimate


def _error_message(body: Any) -> str:
    """The error's message from an OpenAI error body (the ``openai`` client hands over its ``error``), one line and short."""
    error = body.get("error", body) if isinstance(body, Mapping) else body
    message = error.get("message") if isinstance(error, Mapping) else error if isinstance(error, str) else None
    return " ".join(str(message).split())[:200] if message else ""


__all__ = [
    "CACHE_FORMAT",
    "RETRY_STATUS",
    "CachedAnswer",
    "ChatClient",
    "ChatModel",
    "Completion",
    "JudgeError",
    "ResponseCache",
    "estimate_tokens",
    "messages_tokens",
    "request_key",
]
