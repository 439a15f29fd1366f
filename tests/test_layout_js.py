"""The page's port of the layered layout (``report/assets/layout.js``) against ``report/layout.py``, in Chromium.

A large run's group and chunk views ship unlaid and are laid out in the page when first opened: the port
must give what Python gives on the same graph (layers, order within each layer, coordinates, routes).
"""

from __future__ import annotations

import random
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from trajdebug.report.layout import layered_layout


_JS = resources.files("trajdebug.report").joinpath("assets", "layout.js").read_text(encoding="utf-8")
_CALL = "(args) => {\n" + _JS + "\nreturn args.map(([n, edges, opts]) => layeredLayout(n, edges, opts));\n}"


def _random_graph(n: int, seed: int, *, back: float = 0.0, reach: int = 25) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    edges = []
    for v in range(1, n):
        for _ in range(rng.randint(0, 3)):
            u = rng.randint(max(0, v - reach), v - 1)
            edges.append((v, u) if rng.random() < back else (u, v))
    return edges


CASES: list[tuple[str, int, list[tuple[int, int]], dict[str, int]]] = [
    ("empty", 0, [], {}),
    ("lonely nodes", 5, [], {}),
    ("a chain", 6, [(i, i + 1) for i in range(5)], {}),
    ("a cycle and a self-loop", 4, [(0, 1), (1, 2), (2, 0), (3, 3), (2, 3)], {}),
    ("duplicates and long edges", 8, [(0, 7), (0, 7), (0, 1), (1, 2), (2, 3), (3, 7), (0, 4), (4, 5), (5, 6)], {}),
    ("crossings to undo", 8, [(0, 5), (1, 4), (2, 7), (3, 6), (0, 6), (3, 4)], {}),
    ("long edges past the dummy budget", 60, _random_graph(60, 3, reach=50), {"dummy_budget": 15}),
    ("a random DAG", 160, _random_graph(160, 1), {}),
    ("a random graph with back edges", 160, _random_graph(160, 2, back=0.2), {}),
    ("a wide fan", 120, [(0, v) for v in range(1, 60)] + [(v, 60 + v % 60) for v in range(1, 60)], {}),
    ("no sweeps", 40, _random_graph(40, 4), {"sweeps": 0}),
]


def _opts(opts: dict[str, int]) -> dict[str, int]:
    return {"dummyBudget" if k == "dummy_budget" else k: v for k, v in opts.items()}


def _order(layer: tuple[int, ...] | list[int], y: tuple[float, ...] | list[float]) -> list[list[int]]:
    """Each layer's nodes, top to bottom."""
    out: dict[int, list[int]] = {}
    for v in sorted(range(len(layer)), key=lambda v: (layer[v], y[v])):
        out.setdefault(layer[v], []).append(v)
    return [out[k] for k in sorted(out)]


def test_the_pages_layout_is_pythons_layout(page: Any) -> None:
    """On every generated graph (cycles, self-loops, duplicates, long edges, a dummy budget exceeded) the
    page's layeredLayout gives Python's layers, order within each layer, positions, routes and crossings."""
    got = page.evaluate(_CALL, [[n, [list(e) for e in edges], _opts(o)] for _, n, edges, o in CASES])
    for (name, n, edges, opts), js in zip(CASES, got, strict=True):
        py = layered_layout(n, edges, **opts)  # type: ignore[arg-type]
        assert js["layer"] == list(py.layer), name
        assert _order(js["layer"], js["y"]) == _order(py.layer, py.y), name
        assert js["crossings"] == py.crossings, name
        assert js["x"] == pytest.approx(list(py.x), abs=1e-6), name
        assert js["y"] == pytest.approx(list(py.y), abs=1e-6), name
        assert js["width"] == pytest.approx(py.width) and js["height"] == pytest.approx(py.height), name
        assert len(js["routes"]) == len(py.routes), name
        for r, pr in zip(js["routes"], py.routes, strict=True):
            assert (r["source"], r["target"]) == (pr.source, pr.target), name
            assert [tuple(p) for p in r["points"]] == [pytest.approx(p, abs=1e-6) for p in pr.points], name


def test_a_chunk_opened_in_the_report_is_drawn_where_python_would_place_it(page: Any, tmp_path: Path) -> None:
    """A 1,500-step report (a ticket agent writing state, its top level cut into chunks) ships the chunks'
    views without positions; the page lays the opened one out, every node where Python's layout puts it."""
    from benchmarks.agentshapes import record_shape

    from trajdebug.analysis import analyze
    from trajdebug.report.html import report_data, write_report

    analysis = analyze(record_shape("state", 1_500))
    views = report_data(analysis)["graph"]["views"]
    laid = {
        v["id"]: layered_layout(len(v["nodes"]), [(e["s"], e["t"]) for e in v["edges"]])
        for v in views.values()
        if v["parent"] == "overview"
    }
    target = views[max(laid, key=lambda k: len(set(laid[k].y)))]
    py = laid[target["id"]]
    assert "x" not in target["nodes"][0] and "pts" not in target["edges"][0] and "width" not in target
    path = write_report(tmp_path / "big.html", analysis)
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready]")
    page.click("#tabs [data-tab=graph]")
    page.select_option("#graph select", "overview")
    at = [n["id"] for n in views["overview"]["nodes"]].index(target["id"][2:])
    page.locator(f'#graph .node[data-node="{at}"]').dispatch_event("click")
    page.wait_for_function(f"() => document.querySelectorAll('#graph .node').length === {len(target['nodes'])}")
    shown = page.eval_on_selector_all("#graph .node", "gs => gs.map((g) => g.getAttribute('transform'))")
    for i, transform in enumerate(shown):
        x, y = (float(t) for t in re.findall(r"-?[\d.]+", transform))
        assert (x + 75, y + 12) == (pytest.approx(py.x[i], abs=0.06), pytest.approx(py.y[i], abs=0.06))
    assert len(set(py.y)) > 10  # a layout with something to get wrong: many rows, not a chain
    assert page.errors == []
