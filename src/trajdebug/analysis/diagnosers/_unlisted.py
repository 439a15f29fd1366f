"""A model answering a field with a value none of the listed values of that field it was given.

A model handed a list to pick from (lots and the tools to run them on, each tool
under ``tool``) that answers ``tool: LTH-07``, where the tools it was given are
``LTH-01`` to ``LTH-03`` and nothing upstream names ``LTH-07``, made that value
up.  A model's JSON answer is left out of the made-up value check
(`trajdebug.analysis.diagnosers._steps.llm_output`): a model *chooses* codes,
ratios and labels, and a choice is no claim.  A field whose values the model
was given as a list is different: the list is the options, and a value outside
it and outside everything upstream is no option.  Read by shape and by field
names shared between the prompt and the answer, never by a list of names:

* the model's prompt holds JSON (whole, or after a short lead-in) with at least
  two distinct values under one field name;
* its answer (JSON) holds, under that field name, a value of one word with a
  digit (an id, a code: words are labels it may coin, a sentence is its own
  writing) that is none of them;
* the value is nowhere in what the model could have read (`upstream_text`).

Like every diagnoser it ranks, it does not prove.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis.diagnosers._context import DiagnoseContext, Evidence
from trajdebug.core.model import Step


UNLISTED = 0.45
_MAX_TEXT = 100_000


def _texts(value: Any) -> Iterator[str]:
    """The strings of a model call's messages (or of its answer), largest structures first read whole."""
    for _, v in content.leaves(value):
        if isinstance(v, str) and 2 < len(v) <= _MAX_TEXT:
            yield v


def _by_field(value: Any) -> dict[str, set[str]]:
    """The string values of the JSON a value's texts hold, by their last field name."""
    out: dict[str, set[str]] = {}
    for t in _texts(value):
        parsed = content.embedded_json(t) if ("{" in t or "[" in t) else None
        if parsed is None:
            continue
        for path, v in content.decoded_leaves(parsed):
            name = path.rsplit(".", 1)[-1].split("[", 1)[0].lower()
            if isinstance(v, str) and name:
                out.setdefault(name, set()).add(v.strip())
    return out


def unlisted_value(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """A model's answer giving a field a value none of the listed values of that field it was given."""
    if step.kind != "llm" or step.status == "error" or step.input is None:
        return
    answered = _by_field(step.output)
    if not answered:
        return
    given = _by_field(step.input)
    hay: str | None = None
    for name, values in answered.items():
        options = given.get(name)
        if not options or len(options) < 2:
            continue
        for v in sorted(values):
            if v in options or len(v) < 3 or not any(c.isdigit() for c in v) or any(c.isspace() for c in v):
                continue  # (a sentence with a number, an explanation, is the model's own writing: no option)
            if hay is None:
                hay = ctx.upstream_text(step)
            if v.lower() in hay:
                continue
            shown = ", ".join(sorted(options)[:4])
            yield Evidence(
                step.step_id,
                UNLISTED,
                f"answered {name}={v!r}, none of the {len(options)} values of {name} it was given ({shown})",
                "unlisted-value",
            )
            return


__all__ = ["UNLISTED", "unlisted_value"]
