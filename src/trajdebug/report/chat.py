"""LLM steps as a conversation for the step inspector: the messages a call read and the message it answered.

The report (and ``trajdebug serve``'s run page, which is the report) shows an
LLM step's input as its messages (system, user, assistant, tool) and its
output as the assistant's message with its tool calls.  The shapes come from
the one normalisation the project has (`trajdebug.core.chat.normalize_llm_step`:
OpenAI Chat Completions and Responses, Anthropic, LangChain messages,
OpenInference ``llm.input_messages.*``, GenAI, the recorder's own), run here at
read time because a store may hold runs recorded before a source was
normalised, and because importers keep some shapes as they came.

Only what the normalisation changed is embedded (`chat_views`): a step already
in the convention is read from its own input and output by the page, so the
document does not carry every conversation twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from trajdebug.core.chat import input_messages, normalize_llm_step, tool_names
from trajdebug.core.model import Run, Step


def chat_view(step: Step, cap: Callable[[Any], Any] = lambda v: v) -> dict[str, Any] | None:
    """What the inspector shows of one LLM step as a conversation, or None (not an LLM step).

    Returns:
        ``messages`` (the normalised input messages, or None when the input has no known shape) and
        ``output`` (the assistant's message, or None) when they differ from the recorded input and
        output, ``tools`` (the names of the tools offered, when stated), and ``same_input`` /
        ``same_output`` (True: the page reads the step's own value, already in the convention).
        ``cap`` cuts a large value as the report embeds it.
    """
    if step.kind != "llm":
        return None
    try:
        new_in, new_out, _ = normalize_llm_step(step.input, step.output, step.attributes)
    except Exception:  # noqa: BLE001 - a shape the normalisation trips on is shown as the raw tree
        return None
    messages = input_messages(new_in) if isinstance(new_in, Mapping) and "messages" in new_in else None
    out: dict[str, Any] = {}
    if messages is not None and new_in == step.input:
        out["same_input"] = True
    else:
        out["messages"] = None if messages is None else cap(messages)
    is_message = isinstance(new_out, Mapping) and new_out.get("role") == "assistant"
    if is_message and new_out == step.output:
        out["same_output"] = True
    else:
        out["output"] = cap(dict(new_out)) if is_message else None
    tools = tool_names(step.attributes.get("llm.tools"))
    if tools:
        out["tools"] = tools
    return out


def chat_views(run: Run, cap: Callable[[Any], Any] = lambda v: v) -> dict[str, dict[str, Any]]:
    """`chat_view` of each LLM step of a run, by step id."""
    views = {}
    for s in run.steps:
        v = chat_view(s, cap)
        if v is not None:
            views[s.step_id] = v
    return views


__all__ = ["chat_view", "chat_views"]
