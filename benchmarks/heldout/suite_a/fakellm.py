"""A fake OpenAI-compatible model server on 127.0.0.1.

It speaks the Chat Completions HTTP protocol (``POST /v1/chat/completions``) well
enough for ``openai``, ``langchain_openai.ChatOpenAI`` and the Agents SDK's
``OpenAIChatCompletionsModel``.  What the "model" answers is decided by a
*policy*: a Python callable that reads the request (messages and tools) and
returns either text or tool calls.  The generator swaps the policy per run.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Reply:
    """What the fake model says: ``text`` and/or ``calls`` [(tool name, arguments dict)]."""

    def __init__(self, text: str | None = None, calls: list[tuple[str, dict[str, Any]]] | None = None):
        self.text = text
        self.calls = calls or []


Policy = Callable[[dict[str, Any]], Reply]


class _Handler(BaseHTTPRequestHandler):
    server: FakeModelServer  # type: ignore[assignment]

    def log_message(self, *args: Any) -> None:  # silence
        return

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(
                200, {"object": "list", "data": [{"id": "fake-gpt", "object": "model", "owned_by": "me"}]}
            )
        else:
            self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
            return
        try:
            reply = self.server.answer(body)
        except Exception as exc:  # noqa: BLE001 - a broken policy is a 500, like a real outage
            self._send(500, {"error": {"message": f"policy failed: {exc!r}", "type": "server_error"}})
            return
        self._send(200, self.server.completion(body, reply))

    def _send(self, code: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class FakeModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.policy: Policy | None = None
        self._n = 0
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def use(self, policy: Policy) -> None:
        """Answer with ``policy`` from now on; call ids restart so runs are reproducible."""
        with self._lock:
            self.policy = policy
            self._n = 0
            self.requests = []

    def answer(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            assert self.policy is not None, "no policy installed"
            return self.policy(body)

    def completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        with self._lock:
            self._n += 1
            n = self._n
        msg: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.calls:
            msg["tool_calls"] = [
                {
                    "id": f"call_{n:03d}_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for i, (name, args) in enumerate(reply.calls)
            ]
        prompt_tokens = sum(len(str(m.get("content") or "")) for m in body.get("messages", [])) // 4
        completion_tokens = len(json.dumps(msg)) // 4
        return {
            "id": f"chatcmpl-fake{n:04d}",
            "object": "chat.completion",
            "created": 1764442000 + n,
            "model": body.get("model", "fake-gpt"),
            "system_fingerprint": "fp_fake",
            "choices": [
                {
                    "index": 0,
                    "message": msg,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if reply.calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def close(self) -> None:
        self.shutdown()
        self.server_close()


# -- helpers policies use to read a conversation -------------------------------------


def text_of(m: dict[str, Any]) -> str:
    c = m.get("content")
    if isinstance(c, list):
        return " ".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
    return str(c or "")


def user_text(body: dict[str, Any]) -> str:
    """The latest user message."""
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user":
            return text_of(m)
    return ""


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(text_of(m) for m in body.get("messages", []) if m.get("role") in ("system", "developer"))


def tool_results(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """(tool name, parsed result) of every tool message, oldest first."""
    names: dict[str, str] = {}
    out: list[tuple[str, Any]] = []
    for m in body.get("messages", []):
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
        if m.get("role") == "tool":
            raw = text_of(m)
            try:
                val = json.loads(raw)
            except ValueError:
                val = raw
            out.append((names.get(m.get("tool_call_id", ""), "?"), val))
    return out


def last_result(body: dict[str, Any], tool: str) -> Any:
    for name, val in reversed(tool_results(body)):
        if name == tool:
            return val
    return None


def called(body: dict[str, Any]) -> list[str]:
    """Names of the tools already called in this conversation."""
    return [c["function"]["name"] for m in body.get("messages", []) for c in (m.get("tool_calls") or [])]


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t.get("function", {}).get("name") for t in body.get("tools") or []]


def find(pattern: str, text: str, default: str | None = None, flags: int = re.I) -> str | None:
    m = re.search(pattern, text, flags)
    return m.group(1) if m else default


def call_args(body: dict[str, Any], tool: str) -> list[dict[str, Any]]:
    """Arguments of every earlier call of ``tool`` in the conversation, oldest first."""
    out = []
    for m in body.get("messages", []):
        for c in m.get("tool_calls") or []:
            if c["function"]["name"] == tool:
                try:
                    out.append(json.loads(c["function"]["arguments"] or "{}"))
                except ValueError:
                    out.append({})
    return out
