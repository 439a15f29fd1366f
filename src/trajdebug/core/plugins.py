"""Plugins: detectors, diagnosers and importers registered by entry points.

A third-party package adds a plain callable under one of the groups below in
its ``pyproject.toml``; trajdebug finds it through `importlib.metadata`:

```toml
[project.entry-points."trajdebug.diagnosers"]
policy = "my_pkg.diagnosers:policy_violation"
```

| group | callable |
|---|---|
| ``trajdebug.detectors`` | ``(run, ctx) -> Iterable[Failure]`` (`trajdebug.analysis._detect.Detector`) |
| ``trajdebug.diagnosers`` | ``(step, ctx) -> Iterable[Evidence]`` (`trajdebug.analysis.diagnose.Diagnoser`) |
| ``trajdebug.importers`` | ``(path) -> ReadResult`` (`trajdebug.sources.formats.Importer`) |
| ``trajdebug.renderers`` | ``(analyses) -> str`` (`trajdebug.core.plugins.Renderer`; ``trajdebug analyze --format NAME``) |

A plugin that fails to load is skipped with a warning naming it; it never
breaks the built-in ones.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import Any, Protocol


log = logging.getLogger("trajdebug")

GROUPS = ("trajdebug.detectors", "trajdebug.diagnosers", "trajdebug.importers", "trajdebug.renderers")


class Renderer(Protocol):
    """**Protocol:** renders analyses (`trajdebug.analysis._pipeline.Analysis`) as text."""

    def __call__(self, analyses: Sequence[Any], /) -> str: ...


_cache: dict[str, list[tuple[str, Callable[..., Any]]]] = {}


def entry_point_callables(group: str, *, refresh: bool = False) -> list[tuple[str, Callable[..., Any]]]:
    """The ``(name, callable)`` pairs registered under ``group``, loaded once and cached.

    Args:
        group: The entry-point group, e.g. ``"trajdebug.diagnosers"``.
        refresh: Look the entry points up again (after installing a plugin at run time).
    """
    if refresh or group not in _cache:
        found: list[tuple[str, Callable[..., Any]]] = []
        for ep in entry_points(group=group):
            try:
                obj = ep.load()
            except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the built-ins
                log.warning(
                    "trajdebug: plugin %s = %s (group %s) failed to load: %s", ep.name, ep.value, group, exc
                )
                continue
            if not callable(obj):
                log.warning("trajdebug: plugin %s = %s (group %s) is not callable", ep.name, ep.value, group)
                continue
            found.append((ep.name, obj))
        _cache[group] = found
    return list(_cache[group])


def plugins() -> dict[str, list[str]]:
    """The names of the registered plugins per group (for listings)."""
    return {group: [name for name, _ in entry_point_callables(group)] for group in GROUPS}


def load_callable(spec: str, what: str = "entry point") -> Callable[..., Any]:
    """Import ``module:function`` (a dotted attribute path after the colon) with `pkgutil.resolve_name`.

    The current directory is on ``sys.path`` while the module is imported, as
    ``python -m`` would have it, so an agent module next to the user's shell
    resolves; it is taken off again afterwards, so the caller's import path is
    left as it was.

    Raises:
        ValueError: malformed spec, missing module or attribute, not callable
            (the message names the spec and what is wrong, in one line).
    """
    import os
    import pkgutil
    import sys

    mod_name, sep, attr = spec.partition(":")
    if not sep or not mod_name or not attr:
        raise ValueError(f"{spec!r}: expected MODULE:FUNCTION for the {what}")
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        obj: Any = pkgutil.resolve_name(spec)
    except ImportError as exc:
        raise ValueError(f"{spec!r}: cannot import module {mod_name!r} ({exc})") from None
    except AttributeError:
        raise ValueError(f"{spec!r}: module {mod_name!r} has no attribute {attr!r}") from None
    except ValueError as exc:
        raise ValueError(f"{spec!r}: {exc}") from None
    finally:
        if added:
            try:
                sys.path.remove(cwd)
            except ValueError:
                pass
    if not callable(obj):
        raise ValueError(f"{spec!r}: {attr!r} is not callable")
    return obj  # type: ignore[no-any-return]


__all__ = ["load_callable", "GROUPS", "Renderer", "entry_point_callables", "plugins"]
