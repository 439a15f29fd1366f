"""A fake chat model behind the real OpenAI Chat Completions HTTP protocol, on 127.0.0.1.

Each agent provides a *policy*: a plain function that reads the conversation the
client sent (system prompt, user request, earlier tool calls and their results)
and returns the next assistant message, either tool calls or text.  The policy is
how the "model" behaves; a fault switched on in the scenario makes it answer
wrongly at one point, and the server remembers which request that was.
"""

from __future__ import annotations

import ast
import json
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trajdebug import testing


@dataclass
class Reply:
    """What the fake model answers: text, tool calls, and whether the answer is the injected fault."""

    content: str | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    faulty: bool = False


def call(_tool: str, faulty: bool = False, **args: Any) -> Reply:
    return Reply(calls=[(_tool, args)], faulty=faulty)


def calls(*pairs: tuple[str, dict[str, Any]], faulty: bool = False) -> Reply:
    return Reply(calls=list(pairs), faulty=faulty)


def say(text: str, faulty: bool = False) -> Reply:
    return Reply(content=text, faulty=faulty)


class Conversation:
    """The request as the model sees it."""

    def __init__(self, body: dict[str, Any], scenario: Scenario) -> None:
        self.body = body
        self.messages: list[dict[str, Any]] = body.get("messages") or []
        self.tools = [t.get("function", {}).get("name") for t in body.get("tools") or []]
        self.scenario = scenario
        self.task = scenario.task
        self.fault = scenario.fault
        issued: dict[str, tuple[str, dict[str, Any]]] = {}
        self.results: list[tuple[str, dict[str, Any], Any]] = []
        for m in self.messages:
            for c in m.get("tool_calls") or []:
                fn = c.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = {}
                issued[c.get("id")] = (fn.get("name"), args)
            if m.get("role") == "tool":
                name, args = issued.get(m.get("tool_call_id"), ("?", {}))
                self.results.append((name, args, _maybe_json(_text(m.get("content")))))

    @property
    def system(self) -> str:
        return "\n".join(
            _text(m.get("content")) for m in self.messages if m.get("role") in ("system", "developer")
        )

    @property
    def user(self) -> str:
        users = [_text(m.get("content")) for m in self.messages if m.get("role") == "user"]
        return users[-1] if users else ""

    @property
    def users(self) -> list[str]:
        return [_text(m.get("content")) for m in self.messages if m.get("role") == "user"]

    def result(self, name: str, nth: int = -1) -> Any:
        """The parsed result of the latest (or nth) call of a tool, None when not called yet."""
        found = [r for n, _a, r in self.results if n == name]
        if not found:
            return None
        try:
            return found[nth]
        except IndexError:
            return None

    def called(self, name: str) -> int:
        return sum(1 for n, _a, _r in self.results if n == name)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def _maybe_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:  # the Agents SDK sends str(dict) for a tool that returned a dict
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


@dataclass
class Scenario:
    policy: Callable[[Conversation], Reply]
    task: dict[str, Any]
    fault: str | None = None
    log: list[dict[str, Any]] = field(default_factory=list)


class FakeModelServer:
    """`trajdebug.testing.FakeModelServer` answering ``POST /v1/chat/completions`` from the current scenario."""

    def __init__(self) -> None:
        self.scenario: Scenario | None = None
        self._lock = threading.Lock()
        self._seq = 0
        self._http = testing.FakeModelServer(self._respond, model="fake-model")

    @property
    def base_url(self) -> str:
        return self._http.base_url

    def start(self) -> FakeModelServer:
        self._http.start()
        return self

    def stop(self) -> None:
        self._http.stop()

    def _respond(self, request: testing.Request) -> dict[str, Any] | testing.Reply:
        body = request.body if isinstance(request.body, dict) else {}
        try:
            return self.complete(body)
        except Exception as exc:  # noqa: BLE001 - a policy bug shows up as a 500 the client reports
            traceback.print_exc()
            error = {"error": {"message": f"fake model crashed: {exc!r}", "type": "server_error"}}
            return testing.Reply(status=500, raw=json.dumps(error))

    def use(
        self, policy: Callable[[Conversation], Reply], task: dict[str, Any], fault: str | None
    ) -> Scenario:
        with self._lock:
            self.scenario = Scenario(policy, task, fault)
            return self.scenario

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            scenario = self.scenario
            self._seq += 1
            seq = self._seq
        if scenario is None:
            raise RuntimeError("no scenario loaded")
        conv = Conversation(body, scenario)
        reply = scenario.policy(conv)
        scenario.log.append({"index": len(scenario.log) + 1, "faulty": reply.faulty})
        msg: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
        finish = "stop"
        if reply.calls:
            allowed = set(conv.tools)
            for name, _ in reply.calls:
                if allowed and name not in allowed:
                    raise RuntimeError(
                        f"policy called {name!r}, not among the tools offered: {sorted(allowed)}"
                    )
            msg["tool_calls"] = [
                {
                    "id": f"call_{seq:04d}_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for i, (name, args) in enumerate(reply.calls)
            ]
            finish = "tool_calls"
        prompt_tokens = sum(len(_text(m.get("content")).split()) for m in conv.messages) + 12
        completion_tokens = len((reply.content or "").split()) + 8 * len(reply.calls) + 1
        return {
            "id": f"chatcmpl-fake{seq:06d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake-model"),
            "choices": [{"index": 0, "message": msg, "finish_reason": finish, "logprobs": None}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
            "system_fingerprint": "fp_heldout_b",
        }
