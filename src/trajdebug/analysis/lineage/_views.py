"""What each step was given and what it produced, as sets of values (atoms).

A `StepView` holds one step's input and output atoms and the text of its input
(for "does the input mention this value" questions).  For an LLM step the
semantic content counts: the messages it was given and the message it
answered with, tool-call arguments included; the envelope (model name, token
counts, ids, timestamps, finish reasons) does not.  A step whose input was
not recorded (an imported span with only an output) is read as having been
given the outputs of the steps it depends on.

Values nobody would trace are left out of the index: booleans, empty strings,
small integers without a field name or a unit, and strings of one or two
characters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trajdebug.core.chat import normalize_llm_step
from trajdebug.core.model import Step
from trajdebug.core.values import Atom, atoms, is_mapping, iter_text, mentions, number_key


ENVELOPE_KEYS = frozenset(
    {
        "model",
        "model_name",
        "usage",
        "id",
        "object",
        "created",
        "system_fingerprint",
        "finish_reason",
        "logprobs",
        "index",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "response_id",
        "service_tier",
        "stop_reason",
        "stop_sequence",
        "token_usage",
        "response_metadata",
        "usage_metadata",
        "invocation_params",
        "type",
        "role",
    }
)
"""Fields of an LLM call's envelope: about the call, not what was said (never read as content)."""

_TEXT_LIMIT = 60_000


def semantic(step: Step, value: Any, depth: int = 0) -> Any:
    """The content of an LLM step's input or output without its envelope (other steps: the value)."""
    if step.kind != "llm" or depth > 8:
        return value
    if is_mapping(value):
        out: dict[str, Any] = {}
        choices = value.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
            # A chat-completions response: the first choice's message is the answer.
            msg = choices[0].get("message") or choices[0].get("delta") or {}
            return semantic(step, msg, depth + 1)
        for k, v in value.items():
            if str(k).lower() in ENVELOPE_KEYS:
                continue
            if k == "function" and isinstance(v, Mapping):
                # A tool call: {"name": ..., "arguments": "<json>"}; the name is a choice, the arguments content.
                out["arguments"] = v.get("arguments")
                out["tool"] = v.get("name")
                continue
            out[str(k)] = semantic(step, v, depth + 1)
        return out
    if isinstance(value, list):
        return [semantic(step, v, depth + 1) for v in value[:200]]
    return value


@dataclass(slots=True)
class StepView:
    """One step's input and output as values."""

    step_id: str
    """The step."""
    inputs: list[Atom]
    """The values it was given."""
    outputs: list[Atom]
    """The values it produced."""
    in_text: str
    """Its input as case-folded text (bounded)."""
    in_keys: set[str] = field(default_factory=set)
    """The keys of its input atoms, plus the numbers its input text mentions (number words included)."""
    out_keys: set[str] = field(default_factory=set)
    """The keys of its output atoms."""
    out_text: str = ""
    """Its output as case-folded text (bounded)."""
    given_by_parents: bool = False
    """True when the step's input was not recorded and its parents' outputs stand in for it."""

    def holds(self, atom: Atom) -> bool:
        """Whether the step's output holds this value (as a value, or written in its text)."""
        if atom.key in self.out_keys:
            return True
        if atom.kind == "number":
            return False
        raw = atom.raw.casefold()
        return len(raw) >= 3 and raw in self.out_text

    def given(self, atom: Atom) -> bool:
        """Whether the step's input holds this value (as a value, or written in its text)."""
        if atom.key in self.in_keys:
            return True
        if atom.kind == "number":
            return False
        raw = atom.raw.casefold()
        return len(raw) >= 3 and raw in self.in_text


def trivial(atom: Atom) -> bool:
    """Whether a value is too common to trace (small counts without a name, one- or two-letter strings)."""
    if atom.kind == "number":
        n = atom.number if atom.number is not None else 0.0
        return atom.field is None and atom.unit is None and n == int(n) and -10 <= n <= 10
    if atom.kind == "text":
        return len(atom.raw.strip()) <= 2
    return False


def build_view(step: Step, parent_outputs: Iterable[Any] = ()) -> StepView:
    """The view of one step (``parent_outputs`` stand in for an input that was not recorded)."""
    given_by_parents = False
    raw_in = step.input
    if raw_in is None or raw_in == {} or raw_in == "":
        raw_in = list(parent_outputs)
        given_by_parents = bool(raw_in)
    raw_out = step.output
    if step.kind == "llm":
        # Runs recorded before the LLM-step convention: read them through it.
        raw_in, raw_out, _ = normalize_llm_step(raw_in, raw_out, step.attributes)
    content_in = semantic(step, raw_in)
    content_out = semantic(step, raw_out)
    ins = [a for a in atoms(content_in) if not trivial(a)]
    outs = [a for a in atoms(content_out) if not trivial(a)]
    text = "\n".join(iter_text(content_in))[:_TEXT_LIMIT]
    out_text = "\n".join(iter_text(content_out))[:_TEXT_LIMIT]
    keys = {a.key for a in ins}
    for m in mentions(text):
        keys.add("n:" + number_key(m.value))
    return StepView(
        step.step_id,
        ins,
        outs,
        text.casefold(),
        keys,
        {a.key for a in outs},
        out_text.casefold(),
        given_by_parents,
    )


__all__ = ["ENVELOPE_KEYS", "StepView", "build_view", "semantic", "trivial"]
