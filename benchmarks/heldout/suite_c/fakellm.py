"""A scripted model server speaking the OpenAI Chat Completions protocol on 127.0.0.1.

Every agent of the suite talks to this server through a real client (``langchain_openai``,
the Agents SDK's ``OpenAIChatCompletionsModel``, the ``openai`` client).  The server owns no
script of its own: for each request it asks the *policy* installed for the current run, a
plain Python function that reads the request (model, messages, tools) and returns the
assistant's next message.  Policies read tool results out of the conversation, so a wrong
value returned by a tool travels through the "model" exactly as it would through a real one.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trajdebug import testing


@dataclass
class Reply:
    """What the scripted model says: text, tool calls (name, arguments), or both."""

    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


Policy = Callable[[dict[str, Any]], Reply]


class Session:
    """The state of one agent run as the server sees it: its policy and a request counter."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.requests = 0
        self.call_seq = 0
        self.lock = threading.Lock()


class ScriptedModelServer:
    """``with ScriptedModelServer() as srv: ... srv.base_url ...``; install a policy per run with `session`.

    The HTTP side is `trajdebug.testing.FakeModelServer` (streamed requests get the
    completion as chunks); this class keeps the suite's own ids, token counts and
    error bodies, so what the suite records stays the same.
    """

    def __init__(self) -> None:
        self._session: Session | None = None
        self._http = testing.FakeModelServer(self._respond, model="scripted")

    @property
    def base_url(self) -> str:
        return self._http.base_url

    def __enter__(self) -> ScriptedModelServer:
        self._http.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._http.stop()

    def _respond(self, request: testing.Request) -> dict[str, Any] | testing.Reply:
        try:
            resp, _reply, _n = self._answer(request.body if isinstance(request.body, dict) else {})
        except Exception as exc:  # noqa: BLE001 - a broken policy is a 500, as a real server would answer
            error = {"error": {"message": f"{type(exc).__name__}: {exc}", "type": "server_error"}}
            return testing.Reply(status=500, raw=json.dumps(error))
        return resp

    def session(self, policy: Policy) -> Session:
        self._session = Session(policy)
        return self._session

    # -- protocol ---------------------------------------------------------------------

    def _answer(self, body: dict[str, Any]) -> tuple[dict[str, Any], Reply, int]:
        sess = self._session
        if sess is None:
            raise RuntimeError("no policy installed")
        with sess.lock:
            sess.requests += 1
            n = sess.requests
            reply = sess.policy(body)
            calls = []
            for name, args in reply.tool_calls:
                sess.call_seq += 1
                calls.append(
                    {
                        "id": f"call_{n:02d}{sess.call_seq:03d}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                )
        prompt_tokens = sum(len(str(m.get("content") or "")) // 4 + 4 for m in body.get("messages", []))
        completion_tokens = len(reply.content or "") // 4 + 12 * len(calls) + 1
        message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
        if calls:
            message["tool_calls"] = calls
        resp = {
            "id": f"chatcmpl-sc{n:04d}",
            "object": "chat.completion",
            "created": 1_760_000_000 + n,
            "model": body.get("model", "scripted"),
            "system_fingerprint": "fp_suite_c",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        return resp, reply, n


# -- helpers for policies ---------------------------------------------------------------


def messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return list(body.get("messages") or [])


def text_of(msg: dict[str, Any]) -> str:
    c = msg.get("content")
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return c or ""


def system_prompt(body: dict[str, Any]) -> str:
    return "\n".join(text_of(m) for m in messages(body) if m.get("role") in ("system", "developer"))


def user_text(body: dict[str, Any]) -> str:
    """The first user message."""
    for m in messages(body):
        if m.get("role") == "user":
            return text_of(m)
    return ""


def last_user_text(body: dict[str, Any]) -> str:
    for m in reversed(messages(body)):
        if m.get("role") == "user":
            return text_of(m)
    return ""


def tool_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(tool name, result text) for every tool result so far, in order."""
    names: dict[str, str] = {}
    out = []
    for m in messages(body):
        for tc in m.get("tool_calls") or []:
            names[tc.get("id")] = (tc.get("function") or {}).get("name", "")
        if m.get("role") == "tool":
            out.append((names.get(m.get("tool_call_id"), ""), text_of(m)))
    return out


def last_result(body: dict[str, Any], tool: str) -> Any:
    """The latest result of ``tool``, JSON-decoded when it is JSON."""
    for name, text in reversed(tool_results(body)):
        if name == tool:
            try:
                return json.loads(text)
            except (ValueError, TypeError):
                return text
    return None


def calls_made(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for m in messages(body):
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function") or {}
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            out.append((fn.get("name", ""), args))
    return out


def tool_names(body: dict[str, Any]) -> list[str]:
    return [((t.get("function") or {}).get("name") or t.get("name", "")) for t in body.get("tools") or []]


def wait_tick() -> None:
    """A small pause so that steps recorded by wall clock never share a start time."""
    time.sleep(0.0005)
