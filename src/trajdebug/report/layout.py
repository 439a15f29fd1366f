"""Layered drawing of a directed acyclic graph (Sugiyama-style): the graph view a report opens on, and the page's reference.

The dependency graph of a run is drawn left to right, upstream steps first,
in the four phases of Sugiyama, Tagawa & Toda ("Methods for visual
understanding of hierarchical system structures", IEEE SMC 1981), as refined
by Gansner, Koutsofios, North & Vo ("A technique for drawing directed
graphs", IEEE TSE 1993):

1. **Cycle removal.** Run graphs are acyclic by construction (a step depends
   on earlier steps), but an imported trace may not be: an edge that goes
   against the given node order is drawn reversed.
2. **Layering** by longest path from the sources, so every edge points to a
   later layer (column).  An edge spanning several layers is split by dummy
   nodes, one per layer crossed, so the next phase sees it; past a budget
   (very long edges in very large graphs) the longest edges are drawn
   straight instead of split.
3. **Crossing reduction** by layer-by-layer sweeps, down then up, ordering
   each layer by the median of its neighbours' positions in the layer just
   placed (Eades & Wormald 1994; the weighted median of Gansner et al.), with
   the barycenter as tie-breaker; the ordering with fewest crossings wins.
   Crossings between two layers are counted as inversions with a Fenwick
   tree, as in Barth, Jünger & Mutzel ("Simple and efficient bilayer cross
   counting", GD 2002).
4. **Coordinate assignment.** Within its layer a node wants the mean position
   of its neighbours; the positions closest to those wishes (least squares)
   that keep the layer's order and a minimum separation are an isotonic
   regression, solved exactly by pool-adjacent-violators (Ayer et al. 1955),
   alternating down and up sweeps.  Dummy nodes count twice so long edges
   run straight.

The result holds plain numbers for the browser to draw.  The report lays out
here only the view its graph opens on; ``assets/layout.js`` is a step-for-step
port that the page runs on any other view when it is first opened (a large
run has hundreds), tested against this module on the same graphs
(``tests/test_layout_js.py``).
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Sequence
from dataclasses import dataclass


NODE_GAP = 34.0
"""Vertical distance between the centres of two nodes of one layer."""
LAYER_GAP = 190.0
"""Horizontal distance between two layers."""
DUMMY_BUDGET = 20_000
"""At most this many dummy nodes; longer edges beyond it are drawn without them."""


@dataclass(frozen=True, slots=True)
class Route:
    """One edge as drawn."""

    source: int
    """Index of the upstream node."""
    target: int
    """Index of the downstream node."""
    points: tuple[tuple[float, float], ...]
    """The polyline from source to target, through the edge's dummy nodes."""


@dataclass(frozen=True, slots=True)
class Layout:
    """Positions of a graph's nodes and routes of its edges."""

    x: tuple[float, ...]
    """Horizontal centre of each node (by index)."""
    y: tuple[float, ...]
    """Vertical centre of each node (by index)."""
    layer: tuple[int, ...]
    """The layer (column) of each node."""
    routes: tuple[Route, ...]
    """The edges, in the order given."""
    crossings: int
    """Edge crossings between adjacent layers after crossing reduction (dummy segments included)."""
    width: float
    """Extent of the drawing."""
    height: float
    """Extent of the drawing."""


def _crossings(upper: Sequence[int], lower_pos: dict[int, int], adj: dict[int, list[int]]) -> int:
    """Crossings between two adjacent layers: inversions of the edge list sorted by upper position."""
    targets: list[int] = []
    for u in upper:
        targets.extend(sorted(lower_pos[v] for v in adj.get(u, ()) if v in lower_pos))
    if len(targets) < 2:
        return 0
    size = max(targets) + 1
    tree = [0] * (size + 1)
    count = 0
    for seen, t in enumerate(targets):
        # Edges seen so far that end strictly right of t cross this one.
        i, le = t + 1, 0
        while i > 0:
            le += tree[i]
            i -= i & -i
        count += seen - le
        i = t + 1
        while i <= size:
            tree[i] += 1
            i += i & -i
    return count


def _median(values: list[float]) -> float:
    """Gansner's weighted median: the middle value, or a weighted middle of the two middle values."""
    values.sort()
    n = len(values)
    m = n // 2
    if n % 2:
        return values[m]
    if n == 2:
        return (values[0] + values[1]) / 2
    left = values[m - 1] - values[0]
    right = values[-1] - values[m]
    if left + right == 0:
        return (values[m - 1] + values[m]) / 2
    return (values[m - 1] * right + values[m] * left) / (left + right)


def _isotonic(wish: list[float], weight: list[float], gap: float) -> list[float]:
    """Positions closest to ``wish`` (weighted least squares) with ``pos[i+1] - pos[i] >= gap``.

    Substituting ``z[i] = pos[i] - i*gap`` turns the separation constraint into
    ``z`` non-decreasing: an isotonic regression, solved by pool-adjacent-violators.
    """
    blocks: list[list[float]] = []  # [weighted sum, weight, count]
    for i, (w, wt) in enumerate(zip(wish, weight, strict=True)):
        blocks.append([(w - i * gap) * wt, wt, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, wt2, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += wt2
            blocks[-1][2] += c
    out: list[float] = []
    for s, wt, c in blocks:
        level = s / wt
        out.extend([level] * int(c))
    return [z + i * gap for i, z in enumerate(out)]


def layered_layout(
    n: int,
    edges: Sequence[tuple[int, int]],
    *,
    sweeps: int = 6,
    node_gap: float = NODE_GAP,
    layer_gap: float = LAYER_GAP,
    dummy_budget: int = DUMMY_BUDGET,
) -> Layout:
    """Lay out nodes ``0..n-1`` in layers, left to right, with few crossings.

    Args:
        n: Number of nodes; their index order is the tie-breaking order (start time).
        edges: ``(upstream, downstream)`` index pairs; duplicates and self-loops are ignored.
        sweeps: Rounds of down-and-up crossing reduction.
        node_gap: Minimum vertical distance between nodes of one layer.
        layer_gap: Horizontal distance between layers.
        dummy_budget: Most dummy nodes to insert for long edges.

    Returns:
        A `Layout` (routes in the order of ``edges``, one per pair, including duplicates).
    """
    # 1. Cycle removal: an edge against the index order is drawn reversed.
    oriented = [(u, v) if u < v else (v, u) for u, v in edges]
    unique = sorted({e for e in oriented if e[0] != e[1]})
    layer = _layering(n, unique)
    node_layer, chain, adj_down = _split_long_edges(unique, layer, dummy_budget)
    adj_up: dict[int, list[int]] = {}
    for a, bs in adj_down.items():
        for b in bs:
            adj_up.setdefault(b, []).append(a)
    depth = max(node_layer, default=-1) + 1
    layers: list[list[int]] = [[] for _ in range(depth)]
    for v in range(len(node_layer)):
        layers[node_layer[v]].append(v)
    layers, best_c = _reduce_crossings(layers, adj_down, adj_up, sweeps)
    ypos = _coordinates(layers, n, len(node_layer), adj_down, adj_up, node_gap)
    xpos = [node_layer[v] * layer_gap for v in range(len(node_layer))]
    routes = []
    for (u, v), (ou, ov) in zip(oriented, edges):
        path = chain.get((u, v), [u, v])
        pts = tuple((xpos[p], ypos[p]) for p in path)
        if (ou, ov) != (u, v):
            pts = tuple(reversed(pts))
        routes.append(Route(ou, ov, pts))
    return Layout(
        x=tuple(xpos[:n]),
        y=tuple(ypos[:n]),
        layer=tuple(layer),
        routes=tuple(routes),
        crossings=best_c,
        width=max(xpos[:n], default=0.0),
        height=max(ypos, default=0.0),
    )


def _layering(n: int, unique: Sequence[tuple[int, int]]) -> list[int]:
    """2. Layering by longest path; nodes in index order are a topological order."""
    preds: list[list[int]] = [[] for _ in range(n)]
    for u, v in unique:
        preds[v].append(u)
    layer = [0] * n
    for v in range(n):
        if preds[v]:
            layer[v] = max(layer[u] for u in preds[v]) + 1
    # Pull sources right, next to their first consumer, so a lone input is not
    # parked in column 0 far from where it is used (Gansner's "balancing").
    succ_min: list[int | None] = [None] * n
    for u, v in unique:
        cur = succ_min[u]
        succ_min[u] = layer[v] if cur is None else min(cur, layer[v])
    for v in range(n):
        sm = succ_min[v]
        if not preds[v] and sm is not None and sm - 1 > layer[v]:
            layer[v] = sm - 1
    return layer


def _split_long_edges(
    unique: Sequence[tuple[int, int]], layer: Sequence[int], dummy_budget: int
) -> tuple[list[int], dict[tuple[int, int], list[int]], dict[int, list[int]]]:
    """Long edges get dummy nodes, the longest skipped first when over budget: every node's layer (dummies
    appended after the real ones), each split edge's chain of nodes, and the downward adjacency."""
    spans = sorted(unique, key=lambda e: layer[e[1]] - layer[e[0]])
    total = 0
    split: set[tuple[int, int]] = set()
    for e in spans:
        extra = layer[e[1]] - layer[e[0]] - 1
        if extra <= 0:
            continue
        if total + extra > dummy_budget:
            break
        total += extra
        split.add(e)
    node_layer = list(layer)
    chain: dict[tuple[int, int], list[int]] = {}
    adj_down: dict[int, list[int]] = {}
    for u, v in unique:
        if (u, v) in split:
            path = [u]
            for col in range(layer[u] + 1, layer[v]):
                node_layer.append(col)
                path.append(len(node_layer) - 1)
            path.append(v)
            chain[(u, v)] = path
            for a, b in itertools.pairwise(path):
                adj_down.setdefault(a, []).append(b)
        elif layer[v] - layer[u] == 1:
            adj_down.setdefault(u, []).append(v)
    return node_layer, chain, adj_down


def _positions(layers: Sequence[Sequence[int]], total: int) -> list[int]:
    pos = [0] * total
    for lay in layers:
        for i, v in enumerate(lay):
            pos[v] = i
    return pos


def _reduce_crossings(
    layers: list[list[int]], adj_down: dict[int, list[int]], adj_up: dict[int, list[int]], sweeps: int
) -> tuple[list[list[int]], int]:
    """3. Crossing reduction by median sweeps (Gansner et al. 1993); the best ordering seen and its count."""
    depth = len(layers)
    pos = _positions(layers, sum(len(lay) for lay in layers))

    def count_all() -> int:
        return sum(_crossings(layers[i], {v: pos[v] for v in layers[i + 1]}, adj_down) for i in range(depth - 1))

    best = [list(lay) for lay in layers]
    best_c = count_all()
    for _ in range(sweeps):
        if best_c == 0:
            break
        for down in (True, False):
            order = range(1, depth) if down else range(depth - 2, -1, -1)
            nbrs = adj_up if down else adj_down
            for i in order:
                keyed = []
                for v in layers[i]:
                    ns = [float(pos[u]) for u in nbrs.get(v, ())]
                    if ns:
                        keyed.append((_median(ns), sum(ns) / len(ns), pos[v], v))
                    else:
                        keyed.append((float(pos[v]), float(pos[v]), pos[v], v))
                keyed.sort()
                layers[i] = [k[3] for k in keyed]
                for j, v in enumerate(layers[i]):
                    pos[v] = j
        c = count_all()
        if c < best_c:
            best_c = c
            best = [list(lay) for lay in layers]
    return best, best_c


def _coordinates(
    layers: Sequence[Sequence[int]],
    n: int,
    total: int,
    adj_down: dict[int, list[int]],
    adj_up: dict[int, list[int]],
    node_gap: float,
) -> list[float]:
    """4. Vertical coordinates: isotonic regression towards the neighbours' mean, sweeping both ways
    (dummy nodes weigh double, so long edges stay straight)."""
    depth = len(layers)
    ypos = [0.0] * total
    for lay in layers:
        for i, v in enumerate(lay):
            ypos[v] = i * node_gap
    weight = [1.0 if v < n else 2.0 for v in range(total)]
    for _ in range(4):
        for down in (True, False):
            order = range(1, depth) if down else range(depth - 2, -1, -1)
            nbrs = adj_up if down else adj_down
            for i in order:
                members = layers[i]
                if len(members) == 1:  # nothing to separate: the neighbours' mean (what `_isotonic` gives)
                    around = nbrs.get(members[0])
                    if around:
                        ypos[members[0]] = sum(ypos[u] for u in around) / len(around)
                    continue
                wish: list[float] = []
                for v in members:
                    around = nbrs.get(v)
                    wish.append(sum(ypos[u] for u in around) / len(around) if around else ypos[v])
                for v, y in zip(members, _isotonic(wish, [weight[v] for v in members], node_gap)):
                    ypos[v] = y
    low = min(ypos, default=0.0)
    return [y - low for y in ypos]


def index_edges(
    ids: Sequence[Hashable], pairs: Sequence[tuple[Hashable, Hashable]]
) -> list[tuple[int, int]]:
    """Turn ``(upstream id, downstream id)`` pairs into index pairs (pairs naming unknown ids are dropped)."""
    at = {k: i for i, k in enumerate(ids)}
    return [(at[a], at[b]) for a, b in pairs if a in at and b in at]


__all__ = ["LAYER_GAP", "NODE_GAP", "Layout", "Route", "index_edges", "layered_layout"]
