"""A small chat helper for the SDK agents: the openai client against the local model server."""
from __future__ import annotations

from openai import OpenAI


def client_for(server) -> OpenAI:
    return OpenAI(base_url=server.base_url, api_key="local-key", max_retries=0)


def ask(client: OpenAI, system: str, user: str) -> str:
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        temperature=0,
    )
    return reply.choices[0].message.content or ""


def last_user(request) -> str:
    msgs = request.body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else " ".join(p.get("text", "") for p in c)
    return ""
