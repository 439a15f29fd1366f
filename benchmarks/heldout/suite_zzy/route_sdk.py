"""sdk route: trajdebug's own recorder (`trajdebug.run`, `trajdebug.step`), one JSONL file per recording."""
from __future__ import annotations

import json
from contextlib import contextmanager

import trajdebug
from openai import OpenAI

from core import ValidationFailed, fast_client
from flow import failure_of, root_of, run_job  # noqa: F401


class _Rec:
    @contextmanager
    def step(self, name, kind, input=None):
        with trajdebug.step(name, kind=kind, input=input) as s:
            yield s


def record(A, inp, path, server):
    server.use(A.chat_brain)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0, http_client=fast_client())

    def ask(name, role, payload):
        msgs = [{"role": "system", "content": f"role: {role}"},
                {"role": "user", "content": json.dumps(payload)}]
        with trajdebug.step(name, kind="llm", input={"messages": msgs}) as s:
            r = client.chat.completions.create(model=server.model, messages=msgs, temperature=0)
            s.output = {"role": "assistant", "content": r.choices[0].message.content}
        return s.output["content"]

    try:
        with trajdebug.run(A.name, path=str(path), task=f"{A.v['task']} {inp['ref']}") as run:
            run_job(A, inp, _Rec(), run.state, ask)
    except ValidationFailed:
        pass
