"""A model call as a recorded `llm` step (the OpenAI client against the fake server)."""

from __future__ import annotations

import json
from typing import Any

import trajdebug
from openai import OpenAI

from .common import server

_CLIENT: OpenAI | None = None


def client() -> OpenAI:
    global _CLIENT
    if _CLIENT is None:
        _CLIENT = OpenAI(base_url=server().base_url, api_key="test", max_retries=0)
    return _CLIENT


def ask(name: str, system: str, user: Any, *, deps: list | None = None) -> str:
    msgs = [{"role": "system", "content": system},
            {"role": "user", "content": user if isinstance(user, str) else json.dumps(user, sort_keys=True)}]
    with trajdebug.step(name, kind="llm", input=msgs, deps=deps or []) as s:
        r = client().chat.completions.create(model="gpt-4o-mini", messages=msgs)
        text = r.choices[0].message.content or ""
        s.usage(model=r.model, prompt_tokens=r.usage.prompt_tokens, completion_tokens=r.usage.completion_tokens)
        s.output = {"role": "assistant", "content": text}
    return text
