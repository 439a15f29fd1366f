"""The ``trajdebug`` command line: a thin layer over the library.

Each command group lives in its own module with a ``register(cli)`` function.
"""

from __future__ import annotations

import importlib
import logging
import sys

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


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="trajdebug")
def cli() -> None:
    """Debug LLM-agent runs: record, find the root cause of a failure, verify it."""


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(cli)


def main() -> None:
    """Console-script entry point."""
    logging.basicConfig(format="%(message)s", level=logging.WARNING, stream=sys.stderr)
    cli()


__all__ = ["cli", "main"]
