"""A fake OpenAI-compatible model server on 127.0.0.1 (real HTTP), answering from a policy.

Every test and every benchmark suite that needs a model talks to this one server:
what the "model" answers is passed in (a list of answers, or a policy: a function
of each request), and the wire protocol (Chat Completions, the Responses API,
streamed or not, errors, delays) lives here once.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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
    """A raw body sent as it is, with ``status`` (malformed JSON on demand, or an error body of
    one's own); overrides everything but ``delay``."""


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


Policy = Callable[[Request], "Reply | str | Mapping[str, Any]"]
"""The model's behaviour: a function from each request to its answer.

The answer is a `Reply`, a string (the assistant's text), or a dict sent as the
JSON body unchanged (a ``chat.completion`` dict is sent as chunks when the
request asks for ``stream``).  A policy that raises answers HTTP 500 with the
exception in an OpenAI error object, as a broken backend would."""

Script = Sequence["Reply | str | Mapping[str, Any]"] | Policy
"""What the server answers: a list consumed in order, or a `Policy`."""


def tool_call(name: str, arguments: Any = None) -> tuple[str, Any]:
    """A tool call for `Reply.tool_calls` (``arguments`` defaults to ``{}``)."""
    return (name, {} if arguments is None else arguments)


class FakeModelServer:
    """An OpenAI-compatible model server on 127.0.0.1, answering from a script or a policy.

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
        self._script: Script = script if callable(script) else list(script)
        self._lock = threading.Lock()
        self._counter = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
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

    def use(self, script: Script) -> None:
        """Answer from ``script`` from now on (a suite swaps the policy between runs on one server)."""
        with self._lock:
            self._script = script if callable(script) else list(script)

    def start(self) -> FakeModelServer:
        """Start serving on a random free port, in a daemon thread."""
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
            script = self._script
            if not callable(script):
                if not script:
                    return Reply(status=500, error="script exhausted: the fake model server has no answer left")
                return _as_reply(script.pop(0))  # type: ignore[attr-defined]
        # A policy runs outside the lock: it may be slow, and requests may come in parallel.
        try:
            return _as_reply(script(request))
        except Exception as exc:  # noqa: BLE001 - a broken policy is a 500, as a broken backend would answer
            return Reply(status=500, error=f"policy failed: {exc!r}")

    def _next_id(self) -> int:
        with self._lock:
            return next(self._counter)


def _as_reply(answer: Reply | str | Mapping[str, Any]) -> Reply | Mapping[str, Any]:
    return Reply(text=answer) if isinstance(answer, str) else answer


class _Handler(BaseHTTPRequestHandler):
    """One HTTP exchange with the fake server (one instance per request)."""

    fake: FakeModelServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without this, Nagle and delayed ACKs
    # hold every keep-alive answer back by tens of milliseconds.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests read `FakeModelServer.requests` instead."""

    def do_GET(self) -> None:
        """``GET /v1/models``: the one model, so clients that list models work."""
        self._json(200, {"object": "list", "data": [{"id": self.fake.model, "object": "model"}]})

    def do_POST(self) -> None:
        """Answer a completion request from the script."""
        size = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(size) if size else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = Request("POST", self.path, body, {k.lower(): v for k, v in self.headers.items()})
        answer = self.fake._answer_for(request)
        req = body if isinstance(body, Mapping) else {}
        path = self.path.split("?", 1)[0].rstrip("/")
        if isinstance(answer, Mapping):
            self._mapping(answer, req, path)
            return
        if answer.delay:
            time.sleep(answer.delay)
        if answer.raw is not None:
            self._send(answer.status, answer.raw.encode(), "application/json")
        elif answer.status >= 400:
            self._json(answer.status, {"error": _error_object(answer)})
        elif path.endswith("/responses"):
            response = _responses_body(answer, req, str(req.get("model") or self.fake.model), self.fake._next_id())
            if req.get("stream"):
                self._sse(_responses_events(response))
            else:
                self._json(200, response)
        elif path.endswith("/chat/completions"):
            chat = _chat_body(answer, req, str(req.get("model") or self.fake.model), self.fake._next_id())
            if req.get("stream"):
                self._sse(_chat_chunks(chat, req, split=True), done=True)
            else:
                self._json(200, chat)
        else:
            error = {"message": f"no such endpoint {self.path}", "type": "invalid_request_error"}
            self._json(404, {"error": error})

    def _mapping(self, answer: Mapping[str, Any], req: Mapping[str, Any], path: str) -> None:
        """A dict answer: the body as it is, or its chunks for a streamed chat request."""
        if req.get("stream") and path.endswith("/chat/completions") and answer.get("object") == "chat.completion":
            self._sse(_chat_chunks(answer, req, split=False), done=True)
        else:
            self._json(200, answer)

    def _json(self, status: int, value: Any) -> None:
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


def _error_object(answer: Reply) -> dict[str, Any]:
    kind = "server_error" if answer.status >= 500 else "invalid_request_error"
    return {"message": answer.error, "type": kind, "param": None, "code": None}


def _arguments(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def _usage_counts(req: Mapping[str, Any], text: str | None) -> tuple[int, int]:
    """Token counts: words in the request and in the answer (deterministic, not a tokenizer)."""
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


def _chat_chunks(body: Mapping[str, Any], req: Mapping[str, Any], *, split: bool) -> Iterator[dict[str, Any]]:
    """A ``chat.completion`` body as the chunks of a stream (``split``: text in two pieces)."""
    base = {k: body[k] for k in ("id", "created", "model", "system_fingerprint") if k in body}
    base["object"] = "chat.completion.chunk"
    [choice] = body["choices"]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    yield chunk({"role": "assistant", "content": ""})
    text = message.get("content") or ""
    # Two pieces, so a client really has to join deltas.
    pieces = (text[: len(text) // 2], text[len(text) // 2 :]) if split else (text,)
    for piece in pieces:
        if piece:
            yield chunk({"content": piece})
    for k, call in enumerate(message.get("tool_calls") or ()):
        head = {"index": k, "id": call["id"], "type": "function", "function": {**call["function"], "arguments": ""}}
        yield chunk({"tool_calls": [head]})
        yield chunk({"tool_calls": [{"index": k, "function": {"arguments": call["function"]["arguments"]}}]})
    yield chunk({}, choice.get("finish_reason"))
    if (req.get("stream_options") or {}).get("include_usage") and body.get("usage") is not None:
        yield {**base, "choices": [], "usage": body["usage"]}


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



__all__ = ["FakeModelServer", "Policy", "Reply", "Request", "Script", "tool_call"]
