"""The local web UI: ``trajdebug serve``.

A Starlette application (`create_app`) over a `Catalog` of the runs of one
source, served by uvicorn (`Server`): the run list with filters and
full-text search, each run's HTML report built live, and two runs compared
side by side.  Needs the ``serve`` extra (``pip install 'trajdebug[serve]'``).
"""

from __future__ import annotations

from trajdebug.serve.app import create_app
from trajdebug.serve.catalog import Catalog, Query, RunEntry
from trajdebug.serve.server import Server, is_loopback


__all__ = ["Catalog", "Query", "RunEntry", "Server", "create_app", "is_loopback"]
