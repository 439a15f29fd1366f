"""The layered (Sugiyama-style) layout of the report's dependency graph."""

from __future__ import annotations

import itertools
import random

from trajdebug.report.layout import NODE_GAP, layered_layout


def _random_dag(n: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    edges = []
    for v in range(1, n):
        for _ in range(rng.randint(0, 2)):
            edges.append((rng.randint(max(0, v - 25), v - 1), v))
    return edges


def test_every_edge_points_to_a_later_layer() -> None:
    """Longest-path layering puts each consumer in a column right of everything it depends on."""
    edges = _random_dag(300, 1)
    lay = layered_layout(300, edges)
    for u, v in edges:
        assert lay.layer[u] < lay.layer[v]
        assert lay.x[u] < lay.x[v]


def test_nodes_of_a_layer_keep_their_distance() -> None:
    """Coordinate assignment never puts two nodes of one column closer than the node gap."""
    lay = layered_layout(300, _random_dag(300, 2))
    by_layer: dict[int, list[float]] = {}
    for i, layer in enumerate(lay.layer):
        by_layer.setdefault(layer, []).append(lay.y[i])
    for ys in by_layer.values():
        ys.sort()
        assert all(b - a >= NODE_GAP - 1e-6 for a, b in itertools.pairwise(ys))


def test_crossing_reduction_untangles_interleaved_chains() -> None:
    """Two chains given in an interleaved order are drawn side by side with no crossing."""
    # Chain A: 0 -> 3 -> 4 -> 7; chain B: 1 -> 2 -> 5 -> 6 (indexes interleave the layers' order).
    edges = [(0, 3), (1, 2), (3, 5), (2, 4), (5, 7), (4, 6)]
    assert layered_layout(8, edges, sweeps=0).crossings > 0
    assert layered_layout(8, edges).crossings == 0


def test_sweeps_reduce_crossings_on_a_random_graph() -> None:
    """Median sweeps leave far fewer crossings than the input order."""
    edges = _random_dag(500, 3)
    before = layered_layout(500, edges, sweeps=0).crossings
    after = layered_layout(500, edges).crossings
    assert after < before / 2


def test_a_chain_is_drawn_straight() -> None:
    """Each node of a chain sits level with its neighbour: one row."""
    lay = layered_layout(6, [(i, i + 1) for i in range(5)])
    assert len(set(lay.y)) == 1


def test_long_edges_route_through_every_layer_they_cross() -> None:
    """An edge spanning layers gets one bend point per layer crossed; past the budget it is straight."""
    edges = [(0, 1), (1, 2), (2, 3), (0, 3)]
    routed = layered_layout(4, edges)
    assert len(routed.routes[3].points) == 4
    straight = layered_layout(4, edges, dummy_budget=0)
    assert len(straight.routes[3].points) == 2


def test_an_edge_against_the_order_is_drawn_reversed_not_dropped() -> None:
    """A cycle (an imported trace) still lays out: the back edge keeps its direction from source to target."""
    lay = layered_layout(3, [(0, 1), (1, 2), (2, 0)])
    back = lay.routes[2]
    assert (back.source, back.target) == (2, 0)
    assert back.points[0] == (lay.x[2], lay.y[2]) and back.points[-1] == (lay.x[0], lay.y[0])
