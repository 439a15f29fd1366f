"""The package's floors hold: no import cycles, lazy imports included, and lower floors never import higher ones.

import-linter (run in CI from `pyproject.toml`) checks the layer contract on the
import graph; this test adds what it does not see: imports inside functions count
too (a lazy import is still a dependency), and any cycle between modules fails.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PKG = "trajdebug"

FLOORS: tuple[tuple[str, ...], ...] = (
    ("trajdebug.core.model", "trajdebug.core.plugins", "trajdebug.core.chat", "trajdebug.core.escape", "trajdebug.core.values"),
    ("trajdebug.core.jsonl", "trajdebug.core.codec", "trajdebug.core.schema", "trajdebug.core.redaction", "trajdebug.sidefile", "trajdebug.usage", "trajdebug.sessions"),
    ("trajdebug.analysis",),
    ("trajdebug.sources.formats", "trajdebug.report", "trajdebug.store", "trajdebug.training"),
    ("trajdebug.record", "trajdebug.sources.load", "trajdebug.marks", "trajdebug.answers"),
    ("trajdebug.replay",),
    ("trajdebug.integrations", "trajdebug.api", "trajdebug.judge", "trajdebug.fleet", "trajdebug.serve", "trajdebug.lint", "trajdebug.ask"),
    ("trajdebug.labels",),
    ("trajdebug.cli", "trajdebug.demo", "trajdebug.testing", "trajdebug", "trajdebug.__main__"),
)
"""Floors from the ground up: a module may import its own floor and the ones below, never above."""


def _modules(root: Path, pkg: str) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in (root / pkg).rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(module: str, path: Path, known: set[str], pkg: str) -> Iterator[str]:
    """Every module of ``pkg`` that ``module`` imports at run time, wherever the import statement sits."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _type_checking(node):
            skip.update(id(n) for b in node.body for n in ast.walk(b))
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == pkg:
                    yield _resolve(alias.name, known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_pkg else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            if base.split(".")[0] != pkg:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield sub if sub in known else _resolve(base, known)


def _resolve(name: str, known: set[str]) -> str:
    while name not in known and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _graph(root: Path = SRC, pkg: str = PKG) -> dict[str, set[str]]:
    mods = _modules(root, pkg)
    known = set(mods)
    return {m: {i for i in _imports(m, p, known, pkg) if i != m} for m, p in mods.items()}


def _floor(module: str) -> int:
    best, depth = -1, -1
    for level, prefixes in enumerate(FLOORS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > depth:
                best, depth = level, len(p)
    return best


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan 1972)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles_lazy_imports_included() -> None:
    """No two modules of the package import each other, directly or through others, even inside functions."""
    assert _cycles(_graph()) == []


def test_the_benchmark_runner_has_no_import_cycles() -> None:
    """No two modules of ``benchmarks/`` import each other, directly or through others, even inside functions."""
    assert _cycles(_graph(ROOT, "benchmarks")) == []


def test_every_module_sits_on_a_floor() -> None:
    """Every module of the package is assigned a floor (a new top-level module must be placed)."""
    assert [m for m in _graph() if _floor(m) < 0] == []


def test_lower_floors_never_import_higher_ones() -> None:
    """A module imports only modules on its own floor or below (lazy imports included)."""
    bad = sorted(
        f"{m} (floor {_floor(m)}) imports {i} (floor {_floor(i)})"
        for m, deps in _graph().items()
        for i in deps
        if _floor(i) > _floor(m)
    )
    assert bad == []


@pytest.mark.parametrize("pkg", ["trajdebug.analysis", "trajdebug.record", "trajdebug.replay"])
def test_no_private_module_imported_from_outside_its_package(pkg: str) -> None:
    """Private modules (``_name``) of a package are imported only from inside that package."""
    graph = _graph()
    bad = sorted(
        f"{m} imports {i}"
        for m, deps in graph.items()
        if not (m == pkg or m.startswith(pkg + "."))
        for i in deps
        if i.startswith(pkg + ".") and any(part.startswith("_") for part in i[len(pkg) + 1 :].split("."))
    )
    assert bad == []
