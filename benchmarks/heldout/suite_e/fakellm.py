"""A small scripted model server speaking the OpenAI Chat Completions protocol on 127.0.0.1.

Written for suite E; the HTTP side is `trajdebug.testing.FakeModelServer`, which answers
``POST /v1/chat/completions`` (plain JSON, or server-sent events when ``stream`` is
asked for) and ``GET /v1/models`` with the body this module builds.  What it answers
is decided by ``server.brain``, a callable ``brain(body: dict) -> Turn`` that the
agents swap between runs; the brain sees the whole request body (messages, tools)
as the real API would.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from trajdebug import testing


@dataclass
class Turn:
    """One assistant message: text, tool calls (name, arguments dict), or both."""

    text: str | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def say(text: str) -> Turn:
    return Turn(text=text)


def call(tool_name: str, /, **arguments: Any) -> Turn:
    return Turn(calls=[(tool_name, arguments)])


class ScriptedModel:
    """The HTTP server.  ``with ScriptedModel() as m: m.brain = fn; ... m.base_url``."""

    def __init__(self, model: str = "gpt-4o-mini-2024-07-18") -> None:
        self.model = model
        self.brain: Any = lambda body: Turn(text="(no brain configured)")
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._http: testing.FakeModelServer | None = None

    # -- lifecycle ----------------------------------------------------------------------
    def __enter__(self) -> ScriptedModel:
        self._http = testing.FakeModelServer(self._respond, model=self.model).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._http is not None:
            self._http.stop()
            self._http = None

    @property
    def base_url(self) -> str:
        assert self._http is not None, "server not running"
        return self._http.base_url

    def _respond(self, request: testing.Request) -> dict[str, Any] | testing.Reply:
        try:
            return self._complete(request.body if isinstance(request.body, dict) else {})
        except Exception as exc:  # noqa: BLE001 - a broken brain is a 500, as a broken backend would be
            error = {"error": {"message": f"brain failed: {exc}", "type": "server_error"}}
            return testing.Reply(status=500, raw=json.dumps(error))

    # -- completions ----------------------------------------------------------------------
    def _complete(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            n = next(self._ids)
        turn = self.brain(body)
        if isinstance(turn, str):
            turn = Turn(text=turn)
        message: dict[str, Any] = {"role": "assistant", "content": turn.text, "refusal": None}
        if turn.calls:
            message["tool_calls"] = [
                {"id": f"call_{n:04d}{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                for i, (name, args) in enumerate(turn.calls)
            ]
        prompt_chars = sum(len(str(m.get("content") or "")) for m in body.get("messages", []))
        completion_chars = len(turn.text or "") + sum(len(json.dumps(a)) for _, a in turn.calls)
        usage = {
            "prompt_tokens": prompt_chars // 4 + 7,
            "completion_tokens": completion_chars // 4 + 1,
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return {
            "id": f"chatcmpl-suitee{n:06d}",
            "object": "chat.completion",
            "created": 1_720_000_000 + n,
            "model": body.get("model") or self.model,
            "system_fingerprint": "fp_suite_e",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if turn.calls else "stop"}],
            "usage": usage,
        }


# -- helpers the brains share -----------------------------------------------------------------

def messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return list(body.get("messages") or [])


def text_of(msg: dict[str, Any]) -> str:
    content = msg.get("content")
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(text_of(m) for m in messages(body) if m.get("role") in ("system", "developer"))


def first_user(body: dict[str, Any]) -> str:
    for m in messages(body):
        if m.get("role") == "user":
            return text_of(m)
    return ""


def tool_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(tool name, content) for every tool result in the conversation, in order."""
    names: dict[str, str] = {}
    out = []
    for m in messages(body):
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            out.append((names.get(m.get("tool_call_id", ""), "?"), text_of(m)))
    return out


def last_result(body: dict[str, Any], name: str) -> Any:
    """The latest result of tool ``name``, decoded from JSON when it is JSON."""
    found = None
    for n, content in tool_results(body):
        if n == name:
            found = content
    if found is None:
        return None
    try:
        return json.loads(found)
    except ValueError:
        pass
    try:  # some frameworks send a tool's dict result as its Python repr
        import ast

        value = ast.literal_eval(found)
        return value if isinstance(value, (dict, list)) else found
    except (ValueError, SyntaxError):
        return found


def calls_made(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for m in messages(body):
        for tc in m.get("tool_calls") or []:
            try:
                args = json.loads(tc["function"]["arguments"] or "{}")
            except ValueError:
                args = {}
            out.append((tc["function"]["name"], args))
    return out
