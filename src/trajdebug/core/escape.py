"""One escaping function for everything printed: untrusted text is shown, never obeyed.

Step names, outputs, error messages, run ids and file names come from agents,
models, tools and imported traces.  Printed raw, a control character in them
is an instruction to the terminal: ESC sequences clear the screen, set the
window title or open an OSC 8 hyperlink that swallows what follows; C1
controls (U+0080–U+009F) do the same on some terminals; CR and BS overwrite
what was printed; BEL rings; bidirectional overrides (U+202E) reorder what
the reader sees.  `visible` turns each of them into a visible escape
(``\\x1b``, ``\\u202e``) and keeps everything else, newline and tab
included.

Every terminal and Markdown output goes through it: `markup` for rich
markup strings, `markdown` for Markdown text, `json_text` for ``--json``
output (which stays valid JSON), and `VisibleHook`, installed on the CLI's
console, as a last guard for anything a renderer forgot.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any


def _table() -> dict[int, str]:
    table: dict[int, str] = {}
    for cp in [*range(0x20), 0x7F, *range(0x80, 0xA0)]:
        if cp not in (0x09, 0x0A):
            table[cp] = f"\\x{cp:02x}"
    # Bidirectional formatting (Unicode TR #9): embeddings, overrides, isolates, marks;
    # line and paragraph separators (some terminals break lines on them).
    for cp in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029):
        table[cp] = f"\\u{cp:04x}"
    return table


_VISIBLE = _table()
_UNSAFE = re.compile("[" + "".join(re.escape(chr(c)) for c in _VISIBLE) + "]")


def visible(text: Any) -> str:
    """``text`` with every control character (C0 but newline and tab, DEL, C1, ESC) and bidi
    control shown as a visible escape; any other value is turned into text first."""
    s: str = text if isinstance(text, str) else str(text)
    if _UNSAFE.search(s) is None:
        return s
    return s.translate(_VISIBLE)


def one_line(text: Any) -> str:
    """`visible` text with newlines and tabs shown as ``\\n`` and ``\\t`` (for table cells)."""
    return visible(text).replace("\n", "\\n").replace("\t", "\\t")


def cut_where_differs(text: str, other: str | None, limit: int) -> str:
    """``text`` in at most ``limit`` characters; beside ``other`` (what the other side had), cut around where the two
    first differ, a quarter of the line of what both had and then the difference: two long values alike at their
    head would otherwise read as equal.  Shared by `trajdebug diff`, ``--ask``'s group questions and the same-input
    reason."""
    if len(text) <= limit:
        return text
    start = 0
    if other is not None:
        same = next((i for i, (a, b) in enumerate(zip(text, other)) if a != b), min(len(text), len(other)))
        if same > limit - limit // 4:
            start = same - limit // 4
    head = "…" if start else ""
    body = text[start:]
    return head + (body if len(body) + len(head) <= limit else body[: limit - 1 - len(head)] + "…")


def markup(text: Any) -> str:
    """`visible` text escaped for rich markup (``[`` cannot open a tag)."""
    from rich.markup import escape

    return escape(visible(text))


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")


def markdown(text: Any) -> str:
    """`visible` text escaped for Markdown, on one line (table cells, list items)."""
    return _MD_SPECIAL.sub(r"\\\1", visible(text).replace("\r", " ").replace("\n", " "))


def md_code(text: Any) -> str:
    """`visible` text as a Markdown code span (an id, a path)."""
    body = visible(text).replace("\n", " ").replace("|", "\\|")
    fence = "`" * (max((len(m) for m in re.findall(r"`+", body)), default=0) + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{fence}{pad}{body}{pad}{fence}"


_JSON_UNSAFE = re.compile("[" + "".join(re.escape(chr(c)) for c in _VISIBLE if c >= 0x7F) + "]")


def json_text(text: str) -> str:
    """JSON text with the controls a JSON encoder leaves raw (DEL, C1, bidi) written as ``\\u`` escapes.

    The result decodes to the same data; it just cannot drive a terminal it is printed on.
    """
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def lines(texts: Iterable[Any]) -> list[str]:
    """`visible` applied to each line."""
    return [visible(t) for t in texts]


class _Visible:
    """A renderable whose text segments are passed through `visible` (style and control segments untouched)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.segment import Segment

        for seg in console.render(self.inner, options):
            if seg.control or _UNSAFE.search(seg.text) is None:
                yield seg
            else:
                yield Segment(seg.text.translate(_VISIBLE), seg.style, seg.control)

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        return Measurement.get(console, options, self.inner)


def render_hook() -> Any:
    """A rich render hook: whatever is printed on a console carrying it goes through `visible`.

    Renderers escape their own text (so widths are right); this hook is the guard
    that makes a forgotten call harmless.  (Built on first use: rich loads only
    when something is printed.)
    """
    from rich.console import RenderHook

    class VisibleHook(RenderHook):
        def process_renderables(self, renderables: list[Any]) -> list[Any]:
            return [_Visible(r) for r in renderables]

    return VisibleHook()


__all__ = ["cut_where_differs", "json_text", "lines", "markdown", "markup", "md_code", "one_line", "render_hook", "visible"]
