"""Where a converted framework trace goes: the active trajdebug run, a store, a JSONL file."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from trajdebug.core.model import Run


def deliver(
    run: Run, *, store: Any = None, path: Path | None = None, lock: threading.Lock | None = None
) -> None:
    """Write a converted run.

    With no ``store`` or ``path``, and a trajdebug run active in this context
    (``with trajdebug.run(...)``), the trace joins that run under the current
    step.  Otherwise it is saved whole to the store and/or appended to the file.
    """
    if store is None and path is None:
        from trajdebug.record import current_run

        active = current_run()
        if active is not None and getattr(active, "_active", False):
            active.merge(run)
        return
    if store is not None:
        from trajdebug.store import Store

        if isinstance(store, Store):
            store.save_run(run)
        else:
            with Store(store) as st:
                st.save_run(run)
    if path is not None:
        from trajdebug.core.codec import dumps_str
        from trajdebug.core.jsonl import run_to_records

        guard = lock or threading.Lock()
        with guard, path.open("a", encoding="utf-8") as fh:
            for rec in run_to_records(run):
                fh.write(dumps_str(rec) + "\n")
