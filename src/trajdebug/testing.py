"""Helpers for testing code that records with trajdebug (and for trajdebug's own tests).

Example:
    ```python
    from trajdebug.testing import capture_runs, deterministic

    def test_agent_records_its_tool_call():
        with deterministic(), capture_runs() as runs:
            my_agent("question")
        assert [s.name for s in runs[0].steps] == ["plan", "search", "answer"]
    ```
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from trajdebug.core.jsonl import RunBuilder
from trajdebug.core.model import Run
from trajdebug.record import config as _config
from trajdebug.record import context as _ctx
from trajdebug.record import recorder as _rec
from trajdebug.record import runs as _runs
from trajdebug.record.sinks import MemorySink


class IncrementalClock:
    """A clock that advances by a fixed step on every read (1 ms by default)."""

    def __init__(self, start_ns: int = 1_700_000_000_000_000_000, step_ns: int = 1_000_000) -> None:
        self.now = start_ns
        self.step_ns = step_ns

    def __call__(self) -> int:
        self.now += self.step_ns
        return self.now


@contextmanager
def deterministic(
    *, clock: IncrementalClock | None = None, prefix: str = "00000000"
) -> Iterator[IncrementalClock]:
    """Deterministic step ids (``00000000`` + a counter from 1) and clock for the block.

    Step ids become ``0000000000000001``, ``0000000000000002``, ...; every
    timestamp read advances the clock by 1 ms.  Restores the real ones after.
    """
    clock = clock or IncrementalClock()
    saved = (_rec._now, _rec._next_seq, _ctx._now, _ctx._next_seq, _config._prefix)
    seq = itertools.count(1).__next__
    _rec._now = _ctx._now = clock
    _rec._next_seq = _ctx._next_seq = seq
    _config._prefix = prefix
    try:
        yield clock
    finally:
        _rec._now, _rec._next_seq, _ctx._now, _ctx._next_seq, _config._prefix = saved


class CapturedRuns(list[Run]):
    """The runs recorded inside `capture_runs` (filled when the block ends)."""

    def __init__(self) -> None:
        super().__init__()
        self.sink = MemorySink()

    def refresh(self) -> CapturedRuns:
        """Rebuild the list from the records captured so far (runs still open read as incomplete)."""
        from trajdebug.record.writer import flush

        flush()
        builder = RunBuilder("capture_runs")
        for rec in self.sink.records:
            builder.add(rec)
        self[:] = builder.runs()
        return self


@contextmanager
def capture_runs() -> Iterator[CapturedRuns]:
    """Capture every run recorded in the block in memory instead of the configured sinks.

    Runs that name their own ``store=``/``path=`` still write there too.
    """
    captured = CapturedRuns()
    saved = _runs.RunHandle.__init__

    def patched(self: Any, name: str, **kwargs: Any) -> None:
        sinks = list(kwargs.pop("sinks", ()) or ())
        sinks.append(captured.sink)
        saved(self, name, sinks=sinks, **kwargs)

    _runs.RunHandle.__init__ = patched  # type: ignore[method-assign]
    try:
        yield captured
    finally:
        _runs.RunHandle.__init__ = saved  # type: ignore[method-assign]
        captured.refresh()


# -- a fake model server ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted model answer, rendered in the protocol of the endpoint that was called."""

    text: str | None = None
    """The assistant's text (None: no text, only tool calls)."""
    tool_calls: tuple[tuple[str, Any], ...] = ()
    """Tool calls as (tool name, arguments): a dict (sent as JSON) or a string (sent as it is)."""
    finish_reason: str | None = None
    """The finish reason (default: ``tool_calls`` when there are calls, else ``stop``)."""
    delay: float = 0.0
    """Seconds to wait before answering."""
    status: int = 200
    """An HTTP error status to answer with instead (the body is an OpenAI error object)."""
    error: str = "fake server error"
    """The error message sent with an error ``status``."""
    raw: str | None = None
    """A raw body sent as it is (malformed JSON on demand); overrides everything but ``delay``."""


@dataclass(frozen=True, slots=True)
class Request:
    """One request the fake server received."""

    method: str
    """The HTTP method."""
    path: str
    """The request path (``/v1/chat/completions``, ``/v1/responses``)."""
    body: Any
    """The decoded JSON body (None when there was none or it was not JSON)."""
    headers: dict[str, str]
    """The request headers (lowercase names)."""


Script = Sequence["Reply | str | Mapping[str, Any]"] | Callable[[Request], "Reply | str | Mapping[str, Any]"]
"""What the server answers: a list consumed in order, or a function of each request.

Each answer is a `Reply`, a string (the assistant's text), or a dict sent as the
JSON body unchanged."""


def tool_call(name: str, arguments: Any = None) -> tuple[str, Any]:
    """A tool call for `Reply.tool_calls` (``arguments`` defaults to ``{}``)."""
    return (name, {} if arguments is None else arguments)


class FakeModelServer:
    """An OpenAI-compatible model server on 127.0.0.1, answering from a script.

    It speaks the Chat Completions protocol (``POST /v1/chat/completions``,
    streamed as server-sent events when the request asks for ``stream``) and the
    Responses API (``POST /v1/responses``, streamed or not), records every
    request in `requests`, and can answer with HTTP errors, delays or malformed
    JSON (see `Reply`).  Point any OpenAI client at `base_url`; nothing leaves
    the machine.

    Example:
        ```python
        from openai import OpenAI
        from trajdebug.testing import FakeModelServer, Reply, tool_call

        with FakeModelServer([Reply(tool_calls=(tool_call("search", {"q": "x"}),)), "done"]) as server:
            client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
            ...
        assert server.requests[0].body["messages"][0]["role"] == "user"
        ```

    Args:
        script: The answers (see `Script`).  When a list runs out, the server
            answers HTTP 500 "script exhausted".
        model: The model name answered when the request names none.
    """

    def __init__(self, script: Script = (), *, model: str = "fake-model") -> None:
        self.requests: list[Request] = []
        self.model = model
        self._script = script if callable(script) else list(script)
        self._lock = threading.Lock()
        self._counter = itertools.count(1)
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client (``http://127.0.0.1:PORT/v1``).

        Raises:
            RuntimeError: the server is not running.
        """
        if self._server is None:
            raise RuntimeError("the fake model server is not running (use it as a context manager)")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FakeModelServer:
        """Start serving on a random free port, in a daemon thread."""
        from http.server import ThreadingHTTPServer

        handler = type("_Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            # A short poll interval: stop() waits for the serving loop to notice.
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="fake-model-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _answer_for(self, request: Request) -> Reply | Mapping[str, Any]:
        with self._lock:
            self.requests.append(request)
            if callable(self._script):
                answer: Any = self._script(request)
            elif self._script:
                answer = self._script.pop(0)
            else:
                answer = Reply(status=500, error="script exhausted: the fake model server has no answer left")
        return Reply(text=answer) if isinstance(answer, str) else answer

    def _next_id(self) -> int:
        with self._lock:
            return next(self._counter)


class _Handler(BaseHTTPRequestHandler):
    """One HTTP exchange with the fake server (one instance per request)."""

    fake: FakeModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests read `FakeModelServer.requests` instead."""

    def do_GET(self) -> None:
        """``GET /v1/models``: the one model, so clients that list models work."""
        self._json(200, {"object": "list", "data": [{"id": self.fake.model, "object": "model"}]})

    def do_POST(self) -> None:
        """Answer a completion request from the script."""
        import json

        size = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(size) if size else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = Request("POST", self.path, body, {k.lower(): v for k, v in self.headers.items()})
        answer = self.fake._answer_for(request)
        if isinstance(answer, Mapping):
            self._json(200, answer)
            return
        if answer.delay:
            time.sleep(answer.delay)
        if answer.raw is not None:
            self._send(200, answer.raw.encode(), "application/json")
            return
        if answer.status >= 400:
            error = {
                "message": answer.error,
                "type": "server_error" if answer.status >= 500 else "invalid_request_error",
                "param": None,
                "code": None,
            }
            self._json(answer.status, {"error": error})
            return
        req = body if isinstance(body, Mapping) else {}
        model = str(req.get("model") or self.fake.model)
        n = self.fake._next_id()
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/responses"):
            response = _responses_body(answer, req, model, n)
            if req.get("stream"):
                self._sse(_responses_events(response))
            else:
                self._json(200, response)
        elif path.endswith("/chat/completions"):
            if req.get("stream"):
                self._sse(_chat_chunks(answer, req, model, n), done=True)
            else:
                self._json(200, _chat_body(answer, req, model, n))
        else:
            self._json(
                404, {"error": {"message": f"no such endpoint {self.path}", "type": "invalid_request_error"}}
            )

    def _json(self, status: int, value: Any) -> None:
        import json

        self._send(status, json.dumps(value).encode(), "application/json")

    def _send(self, status: int, data: bytes, ctype: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up first (a timeout under test): nobody is left to answer.
            self.close_connection = True

    def _sse(self, events: Iterable[Mapping[str, Any]], *, done: bool = False) -> None:
        import json

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for ev in events:
            name = ev.get("type") if not done else None
            head = f"event: {name}\n" if name else ""
            self.wfile.write(f"{head}data: {json.dumps(ev)}\n\n".encode())
            self.wfile.flush()
        if done:
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()


def _arguments(args: Any) -> str:
    import json

    return args if isinstance(args, str) else json.dumps(args)


def _usage_counts(req: Mapping[str, Any], text: str | None) -> tuple[int, int]:
    """Token counts: words in the request and in the answer (deterministic, not a tokenizer)."""
    import json

    return len(json.dumps(req.get("messages", req.get("input", ""))).split()), len((text or "").split()) + 1


def _finish(answer: Reply) -> str:
    return answer.finish_reason or ("tool_calls" if answer.tool_calls else "stop")


def _chat_body(answer: Reply, req: Mapping[str, Any], model: str, n: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.text, "refusal": None}
    if answer.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{n}_{k}",
                "type": "function",
                "function": {"name": name, "arguments": _arguments(args)},
            }
            for k, (name, args) in enumerate(answer.tool_calls)
        ]
    prompt, completion = _usage_counts(req, answer.text)
    return {
        "id": f"chatcmpl-fake{n}",
        "object": "chat.completion",
        "created": 1_700_000_000 + n,
        "model": model,
        "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(answer), "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _chat_chunks(answer: Reply, req: Mapping[str, Any], model: str, n: int) -> Iterator[dict[str, Any]]:
    base = {
        "id": f"chatcmpl-fake{n}",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000 + n,
        "model": model,
        "system_fingerprint": "fp_fake",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    yield chunk({"role": "assistant", "content": ""})
    text = answer.text or ""
    # Two pieces, so a client really has to join deltas.
    for piece in (text[: len(text) // 2], text[len(text) // 2 :]) if text else ():
        if piece:
            yield chunk({"content": piece})
    for k, (name, args) in enumerate(answer.tool_calls):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": k,
                        "id": f"call_{n}_{k}",
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
        )
        yield chunk({"tool_calls": [{"index": k, "function": {"arguments": _arguments(args)}}]})
    yield chunk({}, _finish(answer))
    if (req.get("stream_options") or {}).get("include_usage"):
        prompt, completion = _usage_counts(req, answer.text)
        yield {
            **base,
            "choices": [],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


def _responses_body(answer: Reply, req: Mapping[str, Any], model: str, n: int) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if answer.text is not None:
        output.append(
            {
                "type": "message",
                "id": f"msg_fake{n}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": answer.text, "annotations": []}],
            }
        )
    for k, (name, args) in enumerate(answer.tool_calls):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_fake{n}_{k}",
                "call_id": f"call_{n}_{k}",
                "name": name,
                "arguments": _arguments(args),
                "status": "completed",
            }
        )
    prompt, completion = _usage_counts(req, answer.text)
    return {
        "id": f"resp_fake{n}",
        "object": "response",
        "created_at": 1_700_000_000 + n,
        "status": "completed",
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": req.get("tool_choice") or "auto",
        "tools": list(req.get("tools") or []),
        "temperature": req.get("temperature"),
        "top_p": req.get("top_p"),
        "instructions": req.get("instructions"),
        "metadata": {},
        "error": None,
        "incomplete_details": None,
        "text": {"format": {"type": "text"}},
        "truncation": "disabled",
        "usage": {
            "input_tokens": prompt,
            "output_tokens": completion,
            "total_tokens": prompt + completion,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _responses_events(response: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    seq = itertools.count()
    pending = {**response, "status": "in_progress", "output": [], "usage": None}
    yield {"type": "response.created", "sequence_number": next(seq), "response": pending}
    for i, item in enumerate(response["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield {
                "type": "response.output_item.added",
                "sequence_number": next(seq),
                "output_index": i,
                "item": {**item, "status": "in_progress", "content": []},
            }
            part = {"type": "output_text", "text": "", "annotations": []}
            yield {
                "type": "response.content_part.added",
                "sequence_number": next(seq),
                "output_index": i,
                "item_id": item["id"],
                "content_index": 0,
                "part": part,
            }
            yield {
                "type": "response.output_text.delta",
                "sequence_number": next(seq),
                "output_index": i,
                "item_id": item["id"],
                "content_index": 0,
                "delta": text,
                "logprobs": [],
            }
            yield {
                "type": "response.output_text.done",
                "sequence_number": next(seq),
                "output_index": i,
                "item_id": item["id"],
                "content_index": 0,
                "text": text,
                "logprobs": [],
            }
            yield {
                "type": "response.content_part.done",
                "sequence_number": next(seq),
                "output_index": i,
                "item_id": item["id"],
                "content_index": 0,
                "part": item["content"][0],
            }
        else:
            yield {
                "type": "response.output_item.added",
                "sequence_number": next(seq),
                "output_index": i,
                "item": {**item, "arguments": "", "status": "in_progress"},
            }
            yield {
                "type": "response.function_call_arguments.delta",
                "sequence_number": next(seq),
                "output_index": i,
                "item_id": item["id"],
                "delta": item["arguments"],
            }
            yield {
                "type": "response.function_call_arguments.done",
                "sequence_number": next(seq),
                "output_index": i,
                "item_id": item["id"],
                "arguments": item["arguments"],
            }
        yield {
            "type": "response.output_item.done",
            "sequence_number": next(seq),
            "output_index": i,
            "item": item,
        }
    yield {"type": "response.completed", "sequence_number": next(seq), "response": response}


# -- a scripted judge ---------------------------------------------------------------------

JudgeVerdict = Callable[[str, str], "Mapping[str, Any] | None"]
"""A verdict for one shortlisted step, from its label (``S3``) and name; None leaves it out."""


def judge_script(
    verdict: JudgeVerdict,
    *,
    outline: Mapping[str, Any] | str | None = None,
    explanation: Mapping[str, Any] | str | None = None,
) -> Callable[[Request], Reply | str]:
    """A `FakeModelServer` script that answers the judge's three questions (`trajdebug.judge.prompts`).

    The verdict question is answered with ``{"verdicts": [...]}``, one entry per
    shortlisted step for which ``verdict(label, name)`` returns fields
    (``verdict``, ``confidence``, ``fix_removes_failure``, ``departs``,
    ``reason``; missing ones default to a sound verdict of confidence 0.5).
    The expectation and explanation questions get ``outline`` and
    ``explanation`` (dicts sent as JSON, strings as they are: malformed
    answers on demand); without them a minimal valid answer.

    Example:
        ```python
        script = judge_script(lambda label, name: {"verdict": "decisive"} if name == "fetch" else None)
        with FakeModelServer(script) as server:
            analyze_source(path, judge=JudgeConfig(server.base_url, "m", cache=None))
        ```
    """
    import json
    import re

    from trajdebug.judge.prompts import EXPECTATION_SYSTEM, EXPLANATION_SYSTEM

    heading = re.compile(r"^### (S\d+): (.*?) \(", re.MULTILINE)

    def answer(request: Request) -> Reply | str:
        messages = (request.body or {}).get("messages") or [{}]
        system = str(messages[0].get("content") or "")
        if system == EXPECTATION_SYSTEM:
            value: Any = outline if outline is not None else {"steps": [{"step": "solve it", "key_values": []}]}
            return value if isinstance(value, str) else json.dumps(value)
        if system == EXPLANATION_SYSTEM:
            value = explanation if explanation is not None else {"cause": "other", "explanation": "unclear"}
            return value if isinstance(value, str) else json.dumps(value)
        user = str(messages[1].get("content") or "") if len(messages) > 1 else ""
        verdicts = []
        for label, name in heading.findall(user):
            fields = verdict(label, name)
            if fields is None:
                continue
            verdicts.append(
                {
                    "step": label,
                    "verdict": "sound",
                    "confidence": 0.5,
                    "fix_removes_failure": False,
                    "departs": None,
                    "reason": f"{name} looks fine",
                    **fields,
                }
            )
        return json.dumps({"verdicts": verdicts})

    return answer


__all__ = [
    "CapturedRuns",
    "FakeModelServer",
    "IncrementalClock",
    "Reply",
    "Request",
    "Script",
    "JudgeVerdict",
    "capture_runs",
    "deterministic",
    "judge_script",
    "tool_call",
]
