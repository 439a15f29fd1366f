"""Shared helpers of suite_zzx: the model brain protocol, JSON payload prompts."""
import json
import re

FENCE = re.compile(r"```json\n(.*?)\n```", re.S)


def prompt(task: str, text: str, payload) -> str:
    """A user prompt: a task tag line, prose, and a JSON payload block."""
    return f"[{task}] {text}\n```json\n{json.dumps(payload, sort_keys=True)}\n```"


def read_prompt(text: str):
    m = re.match(r"\[(\w+)\]", text or "")
    body = FENCE.search(text or "")
    return (m.group(1) if m else None), (json.loads(body.group(1)) if body else None)


def chat_brain(handlers):
    """A FakeModelServer policy for Chat Completions: dispatch on the last user message's task tag."""

    def policy(request):
        msgs = request.body.get("messages") or []
        user = [m for m in msgs if m.get("role") == "user"][-1]
        content = user["content"]
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content)
        task, payload = read_prompt(content)
        out = handlers[task](payload)
        return out if isinstance(out, str) else json.dumps(out, sort_keys=True)

    return policy


def loose_json(text: str):
    """Parse a model answer that should be JSON (tolerating a fence)."""
    text = text.strip()
    if text.startswith("```"):
        text = text.strip("`").split("\n", 1)[1]
    return json.loads(text)
