"""Importers of foreign agent traces, and the OTLP exporter.

`import_path` reads a file (or, for OTLP, a directory of files) in any known
format into `trajdebug.core.model.Run` objects; `sniff` tells the format from the
content.  Built-in formats:

``otlp``        OpenTelemetry OTLP/JSON ``resourceSpans`` (`trajdebug.sources.formats.otlp`)
``openai``      OpenAI-style message logs (`trajdebug.sources.formats.messages`)
``transcript``  multi-agent ``{role, name, content}`` transcripts (`trajdebug.sources.formats.transcript`)

More formats plug in through the ``trajdebug.importers`` entry point group: an
entry point names a callable ``(path) -> ReadResult``; if the callable has a
``sniff(path) -> bool`` attribute, auto-detection consults it too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, runtime_checkable

from trajdebug.core.jsonl import FormatError, ReadResult


ENTRY_POINT_GROUP = "trajdebug.importers"
"""Entry point group of third-party importers."""


@runtime_checkable
class Importer(Protocol):
    """Reads one source into runs; malformed records become problems, the rest still load."""

    def __call__(self, path: Path, /) -> ReadResult:
        """Import ``path``.

        Raises:
            FormatError: nothing at all could be read from ``path``.
        """
        ...


def _otlp(path: Path) -> ReadResult:
    from trajdebug.sources.formats.otlp import read_otlp

    return read_otlp(path)


def _openai(path: Path) -> ReadResult:
    from trajdebug.sources.formats.messages import read_messages

    return read_messages(path)


def _transcript(path: Path) -> ReadResult:
    from trajdebug.sources.formats.transcript import read_transcript

    return read_transcript(path)


IMPORTERS: dict[str, Importer] = {"otlp": _otlp, "openai": _openai, "transcript": _transcript}
"""Built-in importers by format name (see `importers` for the plugins too)."""

ALIASES = {
    "otel": "otlp",
    "opentelemetry": "otlp",
    "messages": "openai",
    "chat": "openai",
    "multi-agent": "transcript",
}
"""Other names accepted for ``fmt``."""


def importers() -> dict[str, Importer]:
    """All importers: the built-in ones and those registered under ``trajdebug.importers``.

    Built-in names win over a plugin of the same name.
    """
    from trajdebug.core.plugins import entry_point_callables

    found: dict[str, Importer] = {}
    for name, fn in entry_point_callables(ENTRY_POINT_GROUP):
        found[name] = fn
    found.update(IMPORTERS)
    return found


def format_names() -> list[str]:
    """The names accepted by `import_path` (aliases excluded)."""
    return sorted(importers())


def sniff(path: str | Path) -> str | None:
    """Tell the format of a file (or of a directory of OTLP files) from its content.

    Returns:
        ``"otlp"``, ``"openai"``, ``"transcript"``, the name of a plugin format
        whose ``sniff`` accepts the file, or None: not a foreign format (a
        trajdebug JSONL file, a store) or not recognised.
    """
    from trajdebug.sources.formats._common import sniff_head

    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.suffix in (".json", ".jsonl") and f.is_file())
        return "otlp" if files and all(sniff(f) == "otlp" for f in files) else None
    head = sniff_head(p).lstrip("\ufeff \t\r\n")
    if head[:1] not in ("{", "["):
        return _sniff_plugins(p)
    first_line = head.split("\n", 1)[0]
    if '"v"' in first_line and '"t"' in first_line and '"run_id"' in first_line:
        return None  # trajdebug's own records
    if '"resourceSpans"' in head or '"resource_spans"' in head:
        return "otlp"
    from trajdebug.sources.formats.otel_console import looks_like_console

    if looks_like_console(head):
        return "otlp"  # the OTel SDK's ConsoleSpanExporter output, which the OTLP importer reads too
    if '"role"' in head:
        from trajdebug.sources.formats.transcript import looks_like_transcript

        return "transcript" if looks_like_transcript(p) else "openai"
    return _sniff_plugins(p)


def _sniff_plugins(p: Path) -> str | None:
    for name, fn in importers().items():
        check: Callable[[Path], bool] | None = getattr(fn, "sniff", None)
        if check is not None:
            try:
                if check(p):
                    return name
            except Exception:  # noqa: BLE001 - a plugin's sniffer failing means "not mine"
                continue
    return None


def import_path(path: str | Path, fmt: str | None = None) -> ReadResult:
    """Import the runs in ``path``, in format ``fmt`` or the sniffed one.

    Raises:
        FormatError: the format is unknown or cannot be told, or nothing at all
            could be read (the message names the file and the record).
    """
    p = Path(path)
    if not p.exists():
        raise FormatError("no such file or directory", source=str(p))
    if fmt is None:
        fmt = sniff(p)
        if fmt is None:
            raise FormatError(
                f"cannot tell the format; pass one of {', '.join(format_names())} (--from)", source=str(p)
            )
    name = ALIASES.get(fmt.lower(), fmt.lower())
    table = importers()
    if name not in table:
        raise FormatError(f"unknown format {fmt!r}; known: {', '.join(format_names())}", source=str(p))
    return table[name](p)


__all__ = [
    "ALIASES",
    "ENTRY_POINT_GROUP",
    "IMPORTERS",
    "Importer",
    "format_names",
    "import_path",
    "importers",
    "sniff",
]
