"""The guided search's result as text: the root, the answers that prove it, the path to the failure.

Shared by ``trajdebug analyze`` (text and Markdown) and anything else that
prints a `trajdebug.analysis.Guided`; every name and reason is untrusted run
or model content, shown through `trajdebug.core.escape.one_line`.
"""

from __future__ import annotations

from collections.abc import Sequence

from trajdebug.analysis import Guided
from trajdebug.core.escape import one_line
from trajdebug.core.model import Answer
from trajdebug.report.text import answer_word, short


def guided_lines(g: Guided, *, markdown: bool = False, proof: Sequence[Answer] = ()) -> list[str]:
    """The result as lines of text (Markdown bullets with ``markdown=True``); ``proof``: the answers that prove
    the root (`trajdebug.analysis.proof`), counted and named as the ranked list and the verdict count them
    (every answer used, without it)."""
    names = dict(g.names)

    def name(sid: str) -> str:
        # With its short id, as the ranked list names steps: two calls of one tool are told apart (issue 23, nu23).
        label = f"{one_line(names[sid])}#{short(sid)}" if sid in names else one_line(sid)
        return f"`{label}`" if markdown else label

    bullet = "- " if markdown else "  "
    out = ["### Guided search" if markdown else "Guided search"]
    if g.failure is None:
        return [*out, f"{bullet}no failure to search from"]
    clash = " and ".join(name(s) for s in g.clashing)
    if g.conflict:
        one, other = g.conflict
        said = f"the answers about {clash} admit no single root" if clash else "the answers admit no single root"
        out.append(f"{bullet}{said}: the likeliest root is {name(one)} or {name(other)} (take one back to decide)")
    elif clash:
        out.append(f"{bullet}the answers about {clash} disagree, and none outweighs the other (take one back to decide)")
    elif g.root is not None and g.certain:
        # Who answered: a proof an automatic oracle gave is no person's (the verdict stays the ranking's).
        by = list(dict.fromkeys(a.by for a in proof) or g.answerers())
        whose = ", ".join(one_line(b) for b in by)
        n = len(proof) or len(g.questions)
        more = f" ({len(g.questions)} answers in all)" if n != len(g.questions) else ""
        # Answers an automatic oracle took part in single the root out: a lead, worded as the ranked list and
        # the verdict word it (nu25 F10: "proved" here, "not a proof" on the verdict line).
        person = all(b.split(":", 1)[0] == "person" for b in by)
        said = "proved" if person else "singled out"
        lead = "" if person else ", not a person's: no proof"
        out.append(f"{bullet}root: {name(g.root)}, {said} by {n} answer(s) of {whose}{more}{lead}")
    if g.root is not None and not g.conflict and not g.certain:
        left = ", ".join(f"{name(s)} {p:.0%}" for s, p in g.candidates[:5])
        out.append(f"{bullet}not proved yet; likeliest root: {name(g.root)}; candidates: {left}")
    for a in g.questions:
        why = f": {one_line(a.reason)}" if a.reason else ""
        word = answer_word(a)
        out.append(f"{bullet}  {name(a.step_id)} -> {word} (by {one_line(a.by)}){why}")
    if g.path:
        out.append(f"{bullet}path to the failure: " + " -> ".join(name(s) for s in g.path))
    out.extend(f"{bullet}problem: {one_line(p)}" for p in g.problems)
    return out


__all__ = ["guided_lines"]
