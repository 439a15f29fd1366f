"""A fake OpenAI-compatible model server on 127.0.0.1.

It is `trajdebug.testing.FakeModelServer` (the Chat Completions HTTP protocol,
``POST /v1/chat/completions``), which serves ``openai``,
``langchain_openai.ChatOpenAI`` and the Agents SDK's ``OpenAIChatCompletionsModel``.  What the "model" answers is decided by a
*policy*: a Python callable that reads the request (messages and tools) and
returns either text or tool calls.  The generator swaps the policy per run.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

from trajdebug import testing


class Reply:
    """What the fake model says: ``text`` and/or ``calls`` [(tool name, arguments dict)]."""

    def __init__(self, text: str | None = None, calls: list[tuple[str, dict[str, Any]]] | None = None):
        self.text = text
        self.calls = calls or []


Policy = Callable[[dict[str, Any]], Reply]


class FakeModelServer:
    """The suite's model: `trajdebug.testing.FakeModelServer` answering from the installed policy.

    The shared server speaks HTTP; this class keeps what the suite records the same as
    when it had a server of its own: its call ids, token counts and error bodies.
    """

    def __init__(self) -> None:
        self.policy: Policy | None = None
        self._n = 0
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self._http = testing.FakeModelServer(self._respond, model="fake-gpt").start()

    @property
    def base_url(self) -> str:
        return self._http.base_url

    def _respond(self, request: testing.Request) -> dict[str, Any] | testing.Reply:
        body = request.body if isinstance(request.body, dict) else {}
        try:
            reply = self.answer(body)
        except Exception as exc:  # noqa: BLE001 - a broken policy is a 500, like a real outage
            error = {"error": {"message": f"policy failed: {exc!r}", "type": "server_error"}}
            return testing.Reply(status=500, raw=json.dumps(error))
        return self.completion(body, reply)

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
        self._http.stop()


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
