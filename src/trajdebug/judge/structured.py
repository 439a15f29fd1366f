"""Structured answers within a token budget: JSON out of the model's text, checked against a schema.

A `Session` is one analysis's conversation with the model.  Each question
(`Session.ask`) is

1. **budgeted**: its prompt (estimated) plus the longest answer it asks for
   must fit in what the analysis has left, or it is not sent;
2. **parsed**: the answer's JSON, read leniently (a fenced block, or the first
   object in the text: small models wrap their JSON in prose);
3. **validated** against the question's JSON schema (`validate`: the subset of
   JSON Schema the judge's schemas use);
4. **repaired once**: an invalid answer is sent back with what was wrong and
   the model gets one more attempt; a second invalid answer is a `JudgeError`.

The session tallies what went out (tokens sent and received, requests,
answers from the cache) for ``--judge`` to print.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trajdebug.judge.client import ChatModel, Completion, JudgeError, messages_tokens


REPAIR = (
    "Your answer could not be used: {problem}. Answer again with only the JSON object, "
    "following the schema given, and nothing else."
)
"""The repair message sent after an invalid answer (once per question)."""

_FENCE = re.compile(r"```(?:json)?\s*\n?(.*?)```", re.DOTALL | re.IGNORECASE)


class BudgetExceeded(JudgeError):
    """A question that would spend more tokens than the analysis has left (it was not sent)."""


def parse_json(text: str) -> Any:
    """The JSON value in a model's answer: the whole text, a fenced block, or the outermost object in it.

    Raises:
        ValueError: no JSON value could be read (the message says why, briefly).
    """
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    error = "empty answer"
    for c in candidates:
        if not c:
            continue
        try:
            return json.loads(c)
        except ValueError as exc:
            error = f"not JSON ({exc.args[0] if exc.args else exc})"
    raise ValueError(error)


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
}


def validate(value: Any, schema: Mapping[str, Any], where: str = "$") -> list[str]:
    """What in ``value`` breaks ``schema`` (empty when it conforms), at most a few problems.

    The subset of JSON Schema the judge's schemas use: ``type`` (one or a
    list), ``properties``, ``required``, ``additionalProperties: false``,
    ``items``, ``minItems``, ``maxItems``, ``enum``, ``minimum``, ``maximum``,
    ``minLength``, ``maxLength``.
    """
    problems: list[str] = []
    _check(value, schema, where, problems)
    return problems[:5]


def _is(value: Any, kind: str) -> bool:
    if kind in ("number", "integer") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(kind, (object,)))


def _check(value: Any, schema: Mapping[str, Any], where: str, out: list[str]) -> None:
    kinds = schema.get("type")
    if kinds is not None:
        names = [kinds] if isinstance(kinds, str) else list(kinds)
        if not any(_is(value, k) for k in names):
            out.append(f"{where} must be {' or '.join(names)}")
            return
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where} must be one of {', '.join(json.dumps(e) for e in schema['enum'])}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            out.append(f"{where} must be at least {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            out.append(f"{where} must be at most {schema['maximum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            out.append(f"{where} must not be empty")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            out.append(f"{where} must be at most {schema['maxLength']} characters")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            out.append(f"{where} must have at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            out.append(f"{where} must have at most {schema['maxItems']} items")
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, v in enumerate(value):
                _check(v, items, f"{where}[{i}]", out)
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key in schema.get("required") or ():
            if key not in value:
                out.append(f"{where}.{key} is missing")
        if schema.get("additionalProperties") is False:
            for key in value:
                if key not in props:
                    out.append(f"{where}.{key} is not a field of the schema")
        for key, sub in props.items():
            if key in value:
                _check(value[key], sub, f"{where}.{key}", out)


@dataclass(slots=True)
class Tally:
    """What one analysis sent to the model and got back."""

    requests: int = 0
    """HTTP requests that went out (retries, repairs and failed requests included)."""
    cached: int = 0
    """Questions answered from the on-disk cache (nothing sent)."""
    repairs: int = 0
    """Invalid answers sent back for one more attempt."""
    tokens_sent: int = 0
    """Prompt tokens that went out (as the endpoint counted them; estimated for requests that failed)."""
    tokens_received: int = 0
    """Answer tokens that came back."""
    skipped: list[str] = field(default_factory=list)
    """Questions not sent because the budget did not allow them."""

    def add(self, c: Completion) -> None:
        """Count one answer."""
        if c.cached:
            self.cached += 1
        else:
            self.requests += c.requests
            self.tokens_sent += c.prompt_tokens + c.retried_tokens
            self.tokens_received += c.completion_tokens

    def failed(self, e: JudgeError) -> None:
        """Count the requests of a question that failed: they went out all the same."""
        self.requests += e.requests
        self.tokens_sent += e.sent

    def to_dict(self) -> dict[str, Any]:
        """The tally as JSON data."""
        return {
            "requests": self.requests,
            "cached": self.cached,
            "repairs": self.repairs,
            "tokens_sent": self.tokens_sent,
            "tokens_received": self.tokens_received,
            "skipped": list(self.skipped),
        }


class Session:
    """One analysis's questions to a model, within a token budget.

    Args:
        model: The model (`trajdebug.judge.client.ChatClient` or any `ChatModel`).
        budget: Tokens this analysis may spend (prompts plus the answers asked for).
        max_answer_tokens: The longest answer asked for per question.
    """

    def __init__(self, model: ChatModel, budget: int, max_answer_tokens: int) -> None:
        self.model = model
        self.budget = budget
        self.max_answer_tokens = max_answer_tokens
        self.tally = Tally()

    @property
    def left(self) -> int:
        """Tokens still available to this analysis."""
        return self.budget - self.tally.tokens_sent - self.tally.tokens_received

    def fits(self, messages: Sequence[Mapping[str, Any]]) -> bool:
        """Whether a question of these messages (and its longest answer) fits in the budget left."""
        return messages_tokens(messages) + self.max_answer_tokens <= self.left

    def ask(self, what: str, messages: Sequence[Mapping[str, Any]], schema: Mapping[str, Any]) -> Any:
        """Ask one question and return its validated JSON answer.

        Args:
            what: The question's name (the schema's name; shown in problems).
            messages: The chat messages.
            schema: The JSON schema the answer must follow.

        Raises:
            BudgetExceeded: the question does not fit in the budget (nothing sent).
            JudgeError: the endpoint failed, or the answer was invalid twice.
        """
        conversation = [dict(m) for m in messages]
        for attempt in range(2):
            if not self.fits(conversation):
                needed = messages_tokens(conversation) + self.max_answer_tokens
                self.tally.skipped.append(what)
                raise BudgetExceeded(f"{what}: needs about {needed} tokens, {max(self.left, 0)} left in the budget")
            checked: dict[str, Any] = {}

            def accept(text: str, checked: dict[str, Any] = checked) -> bool:
                checked["value"], checked["problem"] = _read(text, schema)
                return checked["problem"] is None

            try:
                answer = self.model(
                    conversation, schema=schema, name=what, max_tokens=self.max_answer_tokens, accept=accept
                )
            except JudgeError as exc:
                self.tally.failed(exc)
                raise
            except Exception as exc:
                # A plugged-in model's own failure is the model failing, not the analysis.
                raise JudgeError(f"{what}: the model failed ({type(exc).__name__}: {exc})") from exc
            self.tally.add(answer)
            if "problem" not in checked:  # a backend that did not call accept
                accept(answer.text)
            if checked["problem"] is None:
                return checked["value"]
            if attempt == 0:
                self.tally.repairs += 1
                conversation += [
                    {"role": "assistant", "content": answer.text[:4000]},
                    {"role": "user", "content": REPAIR.format(problem=checked["problem"])},
                ]
        raise JudgeError(f"{what}: the model's answer was invalid twice ({checked['problem']})")


def _read(text: str, schema: Mapping[str, Any]) -> tuple[Any, str | None]:
    """The answer's JSON value and what is wrong with it (None when nothing is)."""
    try:
        value = parse_json(text)
    except ValueError as exc:
        return None, str(exc)
    problems = validate(value, schema)
    return value, "; ".join(problems) if problems else None


__all__ = ["REPAIR", "BudgetExceeded", "Session", "Tally", "parse_json", "validate"]
