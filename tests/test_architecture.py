"""The package's floors hold: no import cycles, lazy imports included, and lower floors never import higher ones.

import-linter (run in CI from `pyproject.toml`) checks the contracts on the
import graph; this test reads the same contracts to prove its floors agree with
them and adds what import-linter does not see: any cycle between modules fails,
and a forbidden import is forbidden even when made only for type checking.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PKG = "trajdebug"

FLOORS: tuple[tuple[str, ...], ...] = (
    (
        "trajdebug.core",
        "trajdebug.core.model",
        "trajdebug.core.graph",
        "trajdebug.core.collector",
        "trajdebug.core.plugins",
        "trajdebug.core.chat",
        "trajdebug.core.escape",
        "trajdebug.core.values",
        "trajdebug.core.mentions",
        "trajdebug.core.payloads",
    ),
    (
        "trajdebug.core.jsonl",
        "trajdebug.core.ledger",
        "trajdebug.core.codec",
        "trajdebug.core.schema",
        "trajdebug.core.redaction",
        "trajdebug.core.lifecycle",
    ),
    ("trajdebug.sidefile", "trajdebug.usage", "trajdebug.sessions", "trajdebug.search"),
    ("trajdebug.sources.formats", "trajdebug.store"),
    ("trajdebug.analysis", "trajdebug.record", "trajdebug.sources.load"),
    ("trajdebug.report", "trajdebug.training", "trajdebug.marks", "trajdebug.answers"),
    ("trajdebug.replay", "trajdebug.scores"),
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


def _imports(module: str, path: Path, known: set[str], pkg: str, *, typing_too: bool = False) -> Iterator[str]:
    """Every module of ``pkg`` that ``module`` imports at run time, wherever the import statement sits
    (``typing_too``: and those made only for type checking)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if not typing_too and isinstance(node, ast.If) and _type_checking(node):
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


def _graph(root: Path = SRC, pkg: str = PKG, *, typing_too: bool = False) -> dict[str, set[str]]:
    mods = _modules(root, pkg)
    known = set(mods)
    return {m: {i for i in _imports(m, p, known, pkg, typing_too=typing_too) if i != m} for m, p in mods.items()}


def _contracts() -> list[dict[str, Any]]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return list(tomllib.load(f)["tool"]["importlinter"]["contracts"])


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _layers() -> list[list[list[str]]]:
    """The top-level layers contract of pyproject, from the ground up: each layer's groups of
    independent siblings (``|``), each group's modules (``:``)."""
    (floors,) = [c for c in _contracts() if c["type"] == "layers" and not c.get("containers")]
    return [
        [[m.strip() for m in group.split(":")] for group in layer.split("|")]
        for layer in reversed(floors["layers"])
    ]


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


def _layer(module: str, layers: list[list[list[str]]]) -> int:
    best, depth = -1, -1
    for level, groups in enumerate(layers):
        for p in (m for g in groups for m in g):
            if _within(module, p) and len(p) > depth:
                best, depth = level, len(p)
    return best


def test_floors_agree_with_the_import_linter_contract() -> None:
    """A module on a higher layer of pyproject's contract sits on a higher floor here, and every module has a layer."""
    layers = _layers()
    named = {m for groups in layers for g in groups for m in g}
    # A package that only holds rooms of several floors (``trajdebug.sources``) has none itself.
    mods = sorted(m for m in _graph() if not any(n.startswith(m + ".") for n in named))
    layer = {m: _layer(m, layers) for m in mods}
    floor = {m: _floor(m) for m in mods}
    # ``python -m trajdebug`` is a door, not a room: the contract leaves it out.
    assert [m for m in mods if layer[m] < 0] == ["trajdebug.__main__"]
    mods.remove("trajdebug.__main__")
    bad = sorted(
        f"{a} (layer {layer[a]}, floor {floor[a]}) vs {b} (layer {layer[b]}, floor {floor[b]})"
        for a in mods
        for b in mods
        if layer[a] > layer[b] and floor[a] <= floor[b]
    )
    assert bad == []


def test_independent_rooms_never_import_each_other_lazy_imports_included() -> None:
    """Siblings the contracts declare independent (``|`` on a layer, an independence contract) share no import."""
    rooms = [[g[0] for g in groups] for groups in _layers() if len(groups) > 1]
    rooms += [list(c["modules"]) for c in _contracts() if c["type"] == "independence"]
    assert len(rooms) >= 3
    graph = _graph()
    bad = sorted(
        f"{m} imports {i}"
        for group in rooms
        for m, deps in graph.items()
        for i in deps
        for a in group
        for b in group
        if a != b and _within(m, a) and _within(i, b)
    )
    assert bad == []


def test_forbidden_imports_absent_even_for_type_checking() -> None:
    """The recorder and the foreign formats never import the analysis: not lazily, not for type checking."""
    forbidden = [c for c in _contracts() if c["type"] == "forbidden"]
    assert any("trajdebug.record" in c["source_modules"] and "trajdebug.analysis" in c["forbidden_modules"] for c in forbidden)
    graph = _graph(typing_too=True)
    bad = sorted(
        f"{m} imports {i}"
        for c in forbidden
        for m, deps in graph.items()
        if any(_within(m, s) for s in c["source_modules"])
        for i in deps
        if any(_within(i, f) for f in c["forbidden_modules"])
    )
    assert bad == []
