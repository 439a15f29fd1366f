"""What every converter into the model shares: edges, error events, times, LLM content.

The importers (`trajdebug.sources.formats.otlp`, `.messages`, `.transcript`) and the
framework integrations (`trajdebug.integrations.langchain`, `.openai_agents`)
build `trajdebug.core.model` objects from someone else's trace.  They declare only
what the source states: a tool-call id, a span link, an addressed agent, turn
order.  They do not infer dependencies from content; the analysis does that
once, when it reads the run (`trajdebug.analysis.analyze`).

Public so that third-party importers (the ``trajdebug.importers`` entry point
group) and integrations can use the same conventions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from trajdebug.core.chat import normalize_llm_step
from trajdebug.core.codec import loads  # at the top: an import in a function costs a call per value
from trajdebug.core.model import Dependency, ErrorEvent, StageChange
from trajdebug.core.payloads import error_payload


# -- LLM steps --------------------------------------------------------------------


def llm_content(
    input: Any,
    output: Any,
    attributes: Mapping[str, Any],
    *,
    events: Sequence[tuple[str, int, Mapping[str, Any]]] = (),
) -> tuple[Any, Any, dict[str, Any]]:
    """An LLM call's (input, output, attributes) in the convention of `trajdebug.core.chat`.

    The input becomes ``{"messages": [...]}``, the output the assistant's
    message, and the call's envelope (model, usage, ids, finish reason, ...)
    joins the attributes as ``llm.*`` keys.
    """
    inp, out, extra = normalize_llm_step(input, output, attributes, events=events)
    return inp, out, {**attributes, **extra}


# -- dependencies and errors ------------------------------------------------


def declared(step_id: str, kind: str = "data", key: str | None = None) -> Dependency:
    """An edge explicit in the source (a tool-call id, a span link, an addressed agent)."""
    return Dependency(step_id=step_id, kind=kind, origin="declared", confidence=1.0, key=key)  # type: ignore[arg-type]


def inferred(step_id: str, kind: str, confidence: float) -> Dependency:
    """A heuristic edge (turn order, nearest preceding call): origin ``inferred``, confidence < 1."""
    return Dependency(step_id=step_id, kind=kind, origin="inferred", confidence=confidence)  # type: ignore[arg-type]


def add_deps(deps: tuple[Dependency, ...], new: Iterable[Dependency], own_id: str) -> tuple[Dependency, ...]:
    """Append edges, dropping self-loops and edges already present for the same (step, kind)."""
    seen = {(d.step_id, d.kind, d.run_id) for d in deps}
    out = list(deps)
    for d in new:
        k = (d.step_id, d.kind, d.run_id)
        if d.step_id == own_id or k in seen:
            continue
        seen.add(k)
        out.append(d)
    return tuple(out)


def error_event(
    error_id: str,
    step_id: str,
    type_: str,
    message: str,
    time_ns: int,
    *,
    recovered_at: tuple[str, int, str] | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> ErrorEvent:
    """An error that occurred at ``step_id``, optionally recovered at (step, time, reason)."""
    stages = [StageChange("occurred", step_id, time_ns)]
    if recovered_at is not None:
        stages.append(StageChange("recovered", recovered_at[0], recovered_at[1], recovered_at[2]))
    return ErrorEvent(
        error_id=error_id,
        step_id=step_id,
        type=type_,
        message=message,
        stages=tuple(stages),
        attributes=dict(attributes or {}),
    )


_ERROR_TEXT = re.compile(
    r"^\s*(?:Error\b|ERROR\b|Exception\b|Traceback \(most recent call last\)|\w+(?:Error|Exception):)"
)


def error_text(content: Any) -> str | None:
    """The error a tool returned *as data*, if its result reads as one.

    Tools often report failure in their result instead of raising ("Error: user
    not found"); the content is the only signal.  Only the start of the text is
    examined, so a result that merely mentions an error is not one.
    """
    if isinstance(content, Mapping):
        err = content.get("error")
        if isinstance(err, str) and err.strip():
            return err.strip()
        if isinstance(err, Mapping) and err.get("message"):
            return str(err["message"])
        # A result that flags itself (``isError``, ``success: false``...) says so in the protocol's own fields.
        return error_payload(content)
    if isinstance(content, str) and _ERROR_TEXT.match(content):
        return content.strip()
    return None


def error_type_of(text: str) -> str:
    """A short error kind from an error text ("ValueError: x" -> "ValueError")."""
    m = re.match(r"\s*(\w+(?:Error|Exception))\b", text)
    return m.group(1) if m else "ToolError"


# -- values -------------------------------------------------------------------


def maybe_json(value: Any) -> Any:
    """Decode a string that holds a JSON object or array; return anything else unchanged."""
    if isinstance(value, str):
        s = value.strip()
        if s[:1] in ("{", "[") and s[-1:] in ("}", "]"):
            try:
                return loads(s)
            except ValueError:
                return value
    return value


def text_of(content: Any) -> str:
    """The text of a message content: a string, or the text parts of a parts list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(p) for p in content)
    if isinstance(content, Mapping):
        for key in ("text", "content", "value"):
            if isinstance(content.get(key), str):
                return str(content[key])
        return ""
    return str(content)


def time_ns(value: Any) -> int | None:
    """Nanoseconds since the epoch from an ISO-8601 string or epoch seconds / ns; None if absent or unreadable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        v = float(value)
        # Seconds, milliseconds, microseconds or nanoseconds: pick by magnitude.
        for scale, limit in ((1e9, 1e11), (1e6, 1e14), (1e3, 1e17)):
            if abs(v) < limit:
                return int(v * scale)
        return int(v)
    if isinstance(value, str):
        s = value.strip()
        if s.isdigit():
            return time_ns(int(s))
        try:
            dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
        except ValueError:
            return None
        if dt.tzinfo is None:
            from datetime import UTC

            dt = dt.replace(tzinfo=UTC)
        return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000
    return None


__all__ = [
    "add_deps",
    "declared",
    "error_event",
    "error_text",
    "error_type_of",
    "inferred",
    "llm_content",
    "maybe_json",
    "text_of",
    "time_ns",
]
