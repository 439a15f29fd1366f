"""The ``trajdebug`` command line: a thin layer over the library.

Each command group lives in its own module with a ``register(cli)`` function.
Errors a user can act on (a file that cannot be written, a store on a
read-only mount, a source in no known format) end the command with one line
naming the file and the reason, never a traceback.
"""

from __future__ import annotations

import importlib
import logging
import sqlite3
import sys
from typing import Any

import click


COMMAND_MODULES = (
    "trajdebug.cli._runs",
    "trajdebug.cli._demo",
    "trajdebug.cli._analyze",
    "trajdebug.cli._errors",
    "trajdebug.cli._io",
    "trajdebug.cli._replay",
    "trajdebug.cli._report",
    "trajdebug.cli._serve",
    "trajdebug.cli._mark",
    "trajdebug.cli._fleet",
)


def user_error(exc: BaseException) -> str | None:
    """The one-line message for an error the user can act on, or None for a bug (which keeps its traceback)."""
    from trajdebug.source import SourceError
    from trajdebug.store import StoreError

    if isinstance(exc, (SourceError, StoreError)):
        return str(exc)
    if isinstance(exc, OSError):
        where = exc.filename if exc.filename is not None else "file"
        return f"{where}: {exc.strerror or exc}"
    if isinstance(exc, sqlite3.Error):
        return f"store: {exc}"
    return None


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        from trajdebug.escape import one_line

        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            # Messages quote file names, run ids and reasons: never let them drive the terminal.
            setattr(exc, "message", one_line(exc.message))  # noqa: B010 - Final only to type checkers
            raise
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except (OSError, sqlite3.Error, ValueError, RuntimeError) as exc:
            message = user_error(exc)
            if message is None:
                raise
            raise click.ClickException(one_line(message)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="trajdebug")
def cli() -> None:
    """Debug LLM-agent runs: record, find the root cause of a failure, verify it."""


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(cli)


class _VisibleFormatter(logging.Formatter):
    """Log lines on stderr with control characters shown as escapes (messages quote untrusted names)."""

    def format(self, record: logging.LogRecord) -> str:
        from trajdebug.escape import visible

        return visible(super().format(record))


def main() -> None:
    """Console-script entry point."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_VisibleFormatter("%(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    cli()


__all__ = ["cli", "main", "user_error"]
