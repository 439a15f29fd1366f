"""The HTML report: one self-contained file with the waterfall, the graph, the root causes and the errors.

The file needs nothing but a browser: the style sheet and the script are
inline (package data in ``report/assets/``, split by concern and joined
here), and the run is embedded as JSON in a ``<script
type="application/json">`` block that the script reads with ``JSON.parse``
and renders with DOM calls and ``textContent`` only.  Nothing from a run is
ever markup, a URL or code:

* the JSON is escaped so that no value can close its ``<script>`` element
  (``<``, ``>``, ``&`` and the JavaScript line separators become ``\\uXXXX``);
* a Content-Security-Policy allows exactly the inline script and style by
  their SHA-256 hashes and nothing else (no network, no other script, no
  plugin, no form target), so even markup that slipped through would not run.

`report_data` is the embedded document (the run, ``Analysis.to_dict()``, the
error lifecycle, the verification, the graph's layouts, the LLM steps'
conversations); unknown fields the analysis gains later are shown generically
by the page.  A step is opened by its link, ``#step=ID`` (``links.js``).
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from trajdebug.analysis import Analysis
from trajdebug.core.codec import dumps
from trajdebug.core.collector import collector_paused
from trajdebug.core.model import TRUNCATED_KEY, Run, Step
from trajdebug.report.graph import graph_views
from trajdebug.report.json import error_to_dict, step_to_dict


SCHEMA = 1
"""Version of the embedded document."""
VALUE_LIMIT = 32_768
"""A step's input, output or attributes larger than this (as JSON) are embedded truncated."""
SCRIPTS = (
    "core.js",
    "tree.js",
    "links.js",
    "chat.js",
    "waterfall.js",
    "layout.js",
    "graph.js",
    "panels.js",
    "search.js",
    "ask.js",
    "main.js",
)
"""The page's script, by concern, in load order."""
STYLES = ("report.css",)
"""The page's style sheet."""
SCORE_ASSETS = ("scores.js", "scores.css")
"""The scores' own script and style (the score table, the inspector's score section, serve's score form), kept
apart from the lists above so that the panels and the scores change without touching each other; the script
defines what main.js and the inspector call, so it loads just before main.js (`page_parts`)."""

_JSON_ESCAPES = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def _asset(name: str) -> str:
    return resources.files("trajdebug.report").joinpath("assets", name).read_text(encoding="utf-8")


def _capped(value: Any) -> Any:
    """A value as embedded: whole up to `VALUE_LIMIT` bytes of JSON, else the recorder's truncation marker."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str) and len(value) <= VALUE_LIMIT // 4:
        return value
    text = dumps(value).decode("utf-8", "replace")
    if len(text) <= VALUE_LIMIT:
        return value
    return {TRUNCATED_KEY: len(text), "head": text[:VALUE_LIMIT]}


def _step(s: Step) -> dict[str, Any]:
    d = step_to_dict(s)
    for key in ("input", "output", "attributes"):
        d[key] = _capped(d[key])
    return d


# Paused collector: the document's tens of thousands of dicts and lists all stay alive until it is
# written, and each collection they triggered re-traversed them and the whole analysis (a third of the
# rendering's CPU on a 10,001-step run).
@collector_paused()
def report_data(
    analysis: Analysis,
    *,
    verification: Mapping[str, Any] | None = None,
    source: str | None = None,
    ask_endpoint: str | None = None,
    same_input: Mapping[str, Any] | None = None,
    score_endpoint: str | None = None,
) -> dict[str, Any]:
    """The document the report embeds: the run, its analysis, its errors, the graph views and
    what the "find the cause" panel needs (`trajdebug.report.question.ask_data`).

    Args:
        analysis: The run's analysis (``trajdebug.analysis.analyze``); its ``run``
            (with inferred dependencies) is the run shown.
        verification: ``Verification.to_dict()`` of the root causes, when verified by replay.
        source: Where the run came from, for the header.
        ask_endpoint: The URL the panel posts answers to (``trajdebug serve``); None: the page
            runs the search itself and offers the answers as a download.
        same_input: The passing run of the same input and where the two runs part
            (`trajdebug.replay.diffview.parting`), when the caller found one; without it, the analysis's
            first same-input reference is named alone (`same_input_doc`).
        score_endpoint: The URL the score form posts to (``trajdebug serve``); None: the scores are shown, with
            no form (a report file cannot store one).
    """
    from trajdebug.report.analysis import compared_note, verdict_note
    from trajdebug.report.chat import chat_views
    from trajdebug.report.errors import errors_markdown
    from trajdebug.report.question import ask_data

    run: Run = analysis.run
    lifecycle = analysis.error_report
    doc = analysis.to_dict()
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "generator": _version(),
        "source": source,
        "run": {
            "run_id": run.run_id,
            "name": run.name,
            "outcome": run.outcome,
            "failure_reason": run.failure_reason,
            "start_ns": run.start_ns,
            "end_ns": run.end_ns,
            "continues": run.continues,
            "metadata": _capped(dict(run.metadata)),
            "steps": [_step(s) for s in run.steps],
            "errors": [error_to_dict(e) for e in run.errors],
        },
        "analysis": doc,
        # The two sentences `trajdebug analyze` prints about the ranking as a whole, in its words: what the
        # evidence was compared with, and the verdict (None when no learned model ranked the run).
        "summary": {"compared": compared_note(analysis), "verdict": verdict_note(analysis)},
        "lifecycle": lifecycle.to_dict() if lifecycle is not None else None,
        "errors_markdown": errors_markdown(lifecycle, run) if lifecycle is not None else None,
        "verification": dict(verification) if verification is not None else None,
        "graph": graph_views(run, focus=_slice(doc)),
        "usage": _usage(run),
        # LLM steps as conversations (`trajdebug.report.chat`): only what the normalisation changed.
        "chat": chat_views(run, _capped),
        "ask": ask_data(analysis, ask_endpoint) if run.outcome != "success" else None,
        "same_input": same_input_doc(analysis, same_input),
        "short_ids": short_ids(analysis, (same_input or {}).get("run_id")),
        **scores_doc(run, score_endpoint),
    }
    return data


def short_ids(analysis: Any, parted: str | None = None) -> dict[str, str]:
    """The other runs the page names (passing runs compared, earlier turns, a dependency's run) by the prefix
    `analyze` shows them by: unique among the source's run ids (`trajdebug.report.analysis.shown_id`), where a cut
    to 12 characters could read as another run's (newuser65); ``parted``: the same-input run the caller found."""
    from trajdebug.report.analysis import shown_id

    run = analysis.run
    named = {
        run.run_id,
        *analysis.references,
        *analysis.same_input,
        *(r.run_id for r in analysis.previous or ()),
    }
    named |= {d.run_id for s in run.steps for d in s.deps if d.run_id} | ({parted} if parted else set())
    return {rid: shown_id(analysis, rid) for rid in sorted(named)}


def scores_doc(run: Run, endpoint: str | None) -> dict[str, Any]:
    """What the score table, the inspector's score section and serve's score form read: the run's scores
    (`trajdebug.scores`, a step's naming it) and where the form posts (None: no form)."""
    from trajdebug.core.schema import score_to_dict

    return {"scores": [score_to_dict(s) for s in run.scores], "score_endpoint": endpoint}


def same_input_doc(analysis: Analysis, parting: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What the overview says of a passing run of the same input: ``parting`` (the run, how it was matched,
    where the runs part) with whether the ranking compared it (one of `Analysis.references`); without
    ``parting``, the analysis's first same-input reference by its id alone; None when there is none, and for a
    run that passed (as `analyze` pairs only a run that did not with one: the page then says nothing of one)."""
    if analysis.run.outcome == "success":
        return None
    if parting is None:
        if not analysis.same_input:
            return None
        parting = {"run_id": analysis.same_input[0]}
    return {**parting, "compared": parting.get("run_id") in analysis.references, "references": len(analysis.references)}


SLICE_PATH = 24
"""Steps of one candidate's path the slice view shows: its first 8 and last 16 (a longer path's middle
is collapsed with the rest of the run)."""


def _slice(doc: Mapping[str, Any], top: int = 3) -> list[str]:
    """The failure's slice as the graph opens on it (from ``Analysis.to_dict()``): the paths of the top
    candidates and the failing steps."""
    out: list[str] = []
    for c in (doc.get("root_causes") or [])[:top]:
        if not c.get("run_id"):
            path = [str(s) for s in c.get("path") or [c.get("step_id")] if s]
            out += path if len(path) <= SLICE_PATH else [*path[:8], *path[-(SLICE_PATH - 8) :]]
    out += [str(f["step_id"]) for f in doc.get("failures") or [] if f.get("step_id")]
    return list(dict.fromkeys(out))


def _usage(run: Run) -> dict[str, Any]:
    """Model, tokens and cost of the run and of each LLM step that states them (`trajdebug.usage`)."""
    from trajdebug.usage import default_prices, step_usage, total_usage

    prices = default_prices()
    steps = {s.step_id: step_usage(s, prices) for s in run.steps}
    return {
        "run": total_usage(steps.values()).to_dict(),
        "steps": {k: u.to_dict() for k, u in steps.items() if u is not None},
    }


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"trajdebug {version('trajdebug')}"
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "trajdebug"


def embed_json(data: Any) -> str:
    """JSON safe to place inside a ``<script type="application/json">`` element.

    No value can end the element or open a comment there: every ``<``, ``>``
    and ``&`` is written as a ``\\uXXXX`` escape (valid JSON, read back as
    the same string by ``JSON.parse``), as are U+2028 and U+2029.
    """
    # One C-speed ``replace`` per character escaped (``str.translate`` with a dict calls back per character:
    # seconds on a large run's report).
    text = dumps(data).decode("utf-8")
    for code, escape in _JSON_ESCAPES.items():
        text = text.replace(chr(code), escape)
    return text


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def page_parts() -> tuple[str, str]:
    """The page's style sheet and script, joined from the package's assets."""
    style = "\n".join(_asset(n) for n in (*STYLES, SCORE_ASSETS[1]))
    body = "\n".join(_asset(n) for n in (*SCRIPTS[:-1], SCORE_ASSETS[0], SCRIPTS[-1]))
    script = '"use strict";\n(function () {\n' + body + "\n})();\n"
    return style, script


def content_security_policy(style: str, script: str, *, connect: bool = False) -> str:
    """The policy of a report page: its own inline script and style (by hash), nothing else; with
    ``connect``, requests to the page's own server too (the "find the cause" panel of ``trajdebug serve``)."""
    connect_src = "connect-src 'self'; " if connect else ""
    return (
        f"default-src 'none'; {connect_src}"
        f"script-src '{_sha256(script)}'; "
        f"style-src '{_sha256(style)}'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def report_html(
    analysis: Analysis,
    *,
    verification: Mapping[str, Any] | None = None,
    source: str | None = None,
    nav: Sequence[tuple[str, str]] = (),
    ask_endpoint: str | None = None,
    same_input: Mapping[str, Any] | None = None,
    score_endpoint: str | None = None,
) -> str:
    """The report of one run as a self-contained HTML page.

    Args:
        analysis: The run's analysis.
        verification: ``Verification.to_dict()``, when the root causes were verified by replay.
        source: Where the run came from (shown in the header).
        nav: ``(label, href)`` links for the page's header (the web UI's navigation);
            both are escaped; hrefs must be the caller's own relative URLs.
        ask_endpoint: Where the "find the cause" panel posts answers (``trajdebug serve``).
        same_input: The passing run of the same input and where the runs part (`report_data`).
        score_endpoint: Where the score form posts (``trajdebug serve``; `report_data`).
    """
    style, script = page_parts()
    data = report_data(
        analysis,
        verification=verification,
        source=source,
        ask_endpoint=ask_endpoint,
        same_input=same_input,
        score_endpoint=score_endpoint,
    )
    run = analysis.run
    title = f"trajdebug: {run.name or run.run_id} ({run.outcome})"
    links = "".join(
        f'<a href="{html.escape(href, quote=True)}">{html.escape(label)}</a>' for label, href in nav
    )
    template = _asset("report.html")
    parts = {
        "{{CSP}}": html.escape(content_security_policy(style, script, connect=ask_endpoint is not None), quote=True),
        "{{TITLE}}": html.escape(title),
        "{{STYLE}}": style,
        "{{NAV}}": links,
        "{{DATA}}": embed_json(data),
        "{{SCRIPT}}": script,
    }
    # One pass over the template so a value can never be taken for a later placeholder.
    out: list[str] = []
    rest = template
    while rest:
        i = rest.find("{{")
        if i < 0:
            out.append(rest)
            break
        j = rest.find("}}", i)
        if j < 0:
            out.append(rest)
            break
        key = rest[i : j + 2]
        out.append(rest[:i])
        out.append(parts.get(key, key))
        rest = rest[j + 2 :]
    return "".join(out)


def write_report(
    path: str | Path,
    analysis: Analysis,
    *,
    verification: Mapping[str, Any] | None = None,
    source: str | None = None,
    same_input: Mapping[str, Any] | None = None,
) -> Path:
    """Write the HTML report of one run (see `report_html`) and return its path.

    Raises:
        OSError: the file cannot be written.
    """
    target = Path(path)
    text = report_html(analysis, verification=verification, source=source, same_input=same_input)
    target.write_text(text, encoding="utf-8")
    return target


__all__ = [
    "SCHEMA",
    "content_security_policy",
    "embed_json",
    "page_parts",
    "report_data",
    "report_html",
    "same_input_doc",
    "write_report",
]
