"""Recording-SDK route helpers: one OpenAI client on the fake server, LLM calls as `llm` steps."""
import json

import trajdebug
from openai import OpenAI

from common import prompt

_CLIENT = {}


def client(server):
    key = server.base_url
    if key not in _CLIENT:
        _CLIENT.clear()
        _CLIENT[key] = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    return _CLIENT[key]


def ask(server, name, system, task, text, payload):
    """One model call recorded as an `llm` step; returns the answer text."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt(task, text, payload)}]
    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        reply = client(server).chat.completions.create(model=server.model, messages=messages, temperature=0)
        answer = reply.choices[0].message.content
        s.output = {"role": "assistant", "content": answer, "tool_calls": []}
        s.usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens if reply.usage else 0,
                completion_tokens=reply.usage.completion_tokens if reply.usage else 0)
    return answer


def dumps(x):
    return json.dumps(x, sort_keys=True)
