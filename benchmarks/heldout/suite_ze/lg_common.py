"""What the two LangGraph agents share: the chat model pointed at the local server, and a JSON parser."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.output_parsers import BaseOutputParser

from .common import base_url


def chat_model(model: str, **kw: Any) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=model, base_url=base_url(), api_key="sk-test-local", max_retries=0, temperature=0, **kw)


class FencedJsonParser(BaseOutputParser[dict]):
    """Reads the first JSON object in a model's answer (fenced or bare)."""

    def parse(self, text: str) -> dict:
        body = text.split("```json", 1)[1].split("```", 1)[0] if "```json" in text else text
        return json.loads(body[body.index("{") : body.rindex("}") + 1])
