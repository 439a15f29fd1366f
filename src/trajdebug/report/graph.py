"""The dependency graph as the HTML report draws it: views, collapsed groups, laid-out nodes and edges.

A run of a few dozen steps is drawn whole.  A larger one stays legible by
collapsing: the overview shows the steps down to the deepest nesting level
that keeps it under `COLLAPSE_AT` nodes, and each step whose subtree is
hidden becomes a *group* node (an agent, a sub-agent, a loop) with a view of
its own one click away.  A flat run too wide even at its top level is cut into
consecutive *chunks* of steps in start order.  Runs with several agents also
get a view with one node per agent.  Edges between the members of two nodes
are merged into one, keeping their kinds, how they were obtained (the
strongest origin) and the highest confidence.  The view the graph opens on is
laid out here by `trajdebug.report.layout`; every other view is shipped as
nodes and edges and laid out by the page's port of the same algorithm
(``assets/layout.js``) the first time it is opened: a large run has hundreds
of groups, and laying each out ahead of time was most of the report's own cost.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trajdebug.core.model import Run, Step
from trajdebug.report.layout import layered_layout


COLLAPSE_AT = 120
"""A view with more nodes than this is collapsed by parent (or cut into chunks)."""
FULL_LIMIT = 1500
"""Runs up to this many steps also get the view of every step."""
CHUNKS = 24
"""Chunks a level too wide to show is cut into (each opens as a view of its own)."""
EXTERNAL_LIMIT = 40
"""Most outside steps a group's view shows as boundary nodes."""
SLICE_GROUPS = 40
"""Most collapsed groups the slice view shows; beyond, the steps outside the slice are grouped by agent."""
_ORIGIN_RANK = {"tracked": 3, "declared": 2, "inferred": 1}


@dataclass(frozen=True, slots=True)
class _Node:
    """A node of a view before layout."""

    key: str
    """Unique within the view."""
    kind: str
    """``step``, ``group``, ``chunk``, ``external`` or ``agent``."""
    step: str | None
    """The step it stands for (the group's own step), if any."""
    label: str
    """What the node says."""
    members: tuple[str, ...] = ()
    """For a chunk: its top-level steps."""
    size: int = 1
    """Steps it stands for."""


class _Tree:
    """Parents, children, depths and subtree sizes of a run's steps."""

    def __init__(self, run: Run) -> None:
        self.steps: dict[str, Step] = {s.step_id: s for s in run.steps}
        self.order: dict[str, int] = {s.step_id: i for i, s in enumerate(run.steps)}
        """Each step's place in the run (once per run: every view sorts by it)."""
        self.children: dict[str | None, list[str]] = defaultdict(list)
        for s in run.steps:
            parent = s.parent_id if s.parent_id in self.steps and s.parent_id != s.step_id else None
            self.children[parent].append(s.step_id)
        self.consumers: dict[str, list[str]] = defaultdict(list)
        for s in run.steps:
            for d in s.deps:
                if d.run_id in (None, run.run_id):
                    self.consumers[d.step_id].append(s.step_id)
        self.size: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        # Children start after their parent: reverse start order visits children first.
        for s in reversed(run.steps):
            kids = self.children.get(s.step_id, ())
            self.size[s.step_id] = 1 + sum(self.size.get(k, 0) for k in kids)
            self.errors[s.step_id] = (s.status == "error") + sum(self.errors.get(k, 0) for k in kids)

    def descendants(self, roots: Iterable[str]) -> list[str]:
        """The roots and everything under them, depth first."""
        out: list[str] = []
        stack = list(reversed(list(roots)))
        while stack:
            sid = stack.pop()
            out.append(sid)
            stack.extend(reversed(self.children.get(sid, ())))
        return out


def _label(s: Step) -> str:
    return s.name


def _scope_nodes(tree: _Tree, top: Sequence[str]) -> list[_Node]:
    """The nodes of a view over the subtrees of ``top``: expanded as deep as `COLLAPSE_AT` allows."""
    if len(top) > COLLAPSE_AT:
        per = -(-len(top) // CHUNKS)
        out = []
        for i in range(0, len(top), per):
            part = tuple(top[i : i + per])
            first, last = tree.steps[part[0]], tree.steps[part[-1]]
            size = sum(tree.size[s] for s in part)
            label = f"{len(part)} steps: {first.name} … {last.name}" if len(part) > 1 else first.name
            out.append(_Node(f"c:{part[0]}", "chunk", None, label, part, size))
        return out
    # levels[d]: the steps at relative depth d.
    levels: list[list[str]] = [list(top)]
    while True:
        nxt = [k for sid in levels[-1] for k in tree.children.get(sid, ())]
        if not nxt:
            break
        levels.append(nxt)
    shown, depth = 0, 0
    for d, lev in enumerate(levels):
        if shown + len(lev) > COLLAPSE_AT and d > 0:
            break
        shown += len(lev)
        depth = d
    out = []
    for d in range(depth + 1):
        for sid in levels[d]:
            s = tree.steps[sid]
            if d == depth and tree.children.get(sid):
                out.append(_Node(sid, "group", sid, _label(s), (), tree.size[sid]))
            else:
                out.append(_Node(sid, "step", sid, _label(s)))
    return out


def _edges(
    run_id: str, tree: _Tree, members: Iterable[str], rep: Mapping[str, str]
) -> dict[tuple[str, str], dict[str, Any]]:
    """Dependencies between the members of a view's nodes, merged per node pair."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for sid in members:
        dst = rep.get(sid)
        if dst is None:
            continue
        for d in tree.steps[sid].deps:
            if d.run_id not in (None, run_id) or d.step_id not in tree.steps:
                continue
            src = rep.get(d.step_id, f"x:{d.step_id}")
            if src == dst:
                continue
            e = merged.get((src, dst))
            if e is None:
                merged[(src, dst)] = {"kinds": [d.kind], "origin": d.origin, "conf": d.confidence, "n": 1}
                continue
            if d.kind not in e["kinds"]:
                e["kinds"].append(d.kind)
            if _ORIGIN_RANK[d.origin] > _ORIGIN_RANK[e["origin"]]:
                e["origin"] = d.origin
            e["conf"] = max(e["conf"], d.confidence)
            e["n"] += 1
    return merged


def _view(
    view_id: str, title: str, nodes: list[_Node], edges: Mapping[tuple[str, str], dict[str, Any]], parent: str | None
) -> dict[str, Any]:
    """A view as the page reads it, not laid out yet (see `place`)."""
    keys = [n.key for n in nodes]
    known = set(keys)
    out_nodes = []
    for n in nodes:
        node: dict[str, Any] = {"id": n.key, "type": n.kind, "label": n.label}
        if n.step is not None:
            node["step"] = n.step
        if n.members:
            node["members"] = list(n.members)
        if n.size != 1:
            node["size"] = n.size
        out_nodes.append(node)
    at = {k: i for i, k in enumerate(keys)}
    out_edges = [
        {"s": at[src], "t": at[dst], **e, "conf": round(e["conf"], 2)}
        for (src, dst), e in edges.items()
        if src in known and dst in known
    ]
    return {"id": view_id, "title": title, "parent": parent, "nodes": out_nodes, "edges": out_edges}


def place(view: dict[str, Any]) -> dict[str, Any]:
    """Lay ``view`` out (`layered_layout`): ``x`` and ``y`` on its nodes, the route ``pts`` on its edges,
    ``width``, ``height`` and ``crossings`` on itself, rounded to 0.1.  The page's ``place`` does the same
    with ``assets/layout.js`` for the views the report ships without positions."""
    lay = layered_layout(len(view["nodes"]), [(e["s"], e["t"]) for e in view["edges"]])
    for i, node in enumerate(view["nodes"]):
        node["x"], node["y"] = round(lay.x[i], 1), round(lay.y[i], 1)
    for edge, route in zip(view["edges"], lay.routes, strict=True):
        edge["pts"] = [[round(x, 1), round(y, 1)] for x, y in route.points]
    view.update(width=round(lay.width, 1), height=round(lay.height, 1), crossings=lay.crossings)
    return view


def _scope_view(
    run: Run, tree: _Tree, view_id: str, title: str, top: Sequence[str], parent: str | None, views: dict[str, Any]
) -> None:
    """Add the view over ``top``'s subtrees, and recursively one per group or chunk in it."""
    nodes = _scope_nodes(tree, top)
    rep: dict[str, str] = {}
    inside: list[str] = []
    for n in nodes:
        if n.kind == "step":
            rep[n.key] = n.key
            inside.append(n.key)
        else:
            roots = n.members if n.kind == "chunk" else (n.step,)
            for sid in tree.descendants([r for r in roots if r is not None]):
                rep[sid] = n.key
                inside.append(sid)
    if parent is None:
        edges = _edges(run.run_id, tree, inside, rep)
    else:
        # Outside steps this scope reads from or feeds, as boundary nodes.
        outside: dict[str, None] = {}
        for sid in inside:
            for d in tree.steps[sid].deps:
                if d.step_id in tree.steps and d.step_id not in rep and d.run_id in (None, run.run_id):
                    outside[d.step_id] = None
        for sid in inside:
            for user in tree.consumers.get(sid, ()):
                if user not in rep:
                    outside[user] = None
        ext = list(outside)[:EXTERNAL_LIMIT]
        for sid in ext:
            nodes.append(_Node(f"x:{sid}", "external", sid, tree.steps[sid].name))
            rep[sid] = f"x:{sid}"
        keep = set(rep.values())
        edges = {k: v for k, v in _edges(run.run_id, tree, [*inside, *ext], rep).items() if k[0] in keep}
    # Order nodes by start time so the layout's tie-breaks follow the run.
    order = tree.order
    nodes.sort(key=lambda n: order.get(n.step or (n.members[0] if n.members else ""), 0))
    views[view_id] = _view(view_id, title, nodes, edges, parent)
    for n in nodes:
        if n.kind == "group" and n.step is not None:
            _scope_view(run, tree, f"g:{n.step}", n.label, tree.children[n.step], view_id, views)
        elif n.kind == "chunk":
            _scope_view(run, tree, f"g:{n.key}", n.label, n.members, view_id, views)


def _agent_view(run: Run, tree: _Tree) -> dict[str, Any] | None:
    agents = list(dict.fromkeys(s.agent or "(no agent)" for s in run.steps))
    if len(agents) < 2:
        return None
    rep = {s.step_id: f"a:{s.agent or '(no agent)'}" for s in run.steps}
    counts: dict[str, int] = defaultdict(int)
    for s in run.steps:
        counts[rep[s.step_id]] += 1
    nodes = [_Node(f"a:{a}", "agent", None, a, (), counts[f"a:{a}"]) for a in agents]
    return _view("agents", "by agent", nodes, _edges(run.run_id, tree, tree.steps, rep), None)


def _slice_view(run: Run, tree: _Tree, focus: Iterable[str]) -> dict[str, Any] | None:
    """The failure's slice: the steps on the paths from the top candidates to the failures, each shown,
    and every other step collapsed into its outermost ancestor outside the slice (by agent when those
    are more than `SLICE_GROUPS`); a group opens the overview's view of it when there is one."""
    keep = dict.fromkeys(sid for sid in focus if sid in tree.steps)
    if not keep:
        return None
    rep: dict[str, str] = {sid: sid for sid in keep}
    outer: dict[str, str] = {}
    for s in run.steps:
        if s.step_id in keep:
            continue
        top, cur, hops = s.step_id, s.parent_id, 0
        while cur is not None and cur in tree.steps and cur not in keep and cur != top and hops < 10_000:
            top, cur, hops = cur, tree.steps[cur].parent_id, hops + 1
        outer[s.step_id] = top
    tops = list(dict.fromkeys(outer.values()))
    by_agent = len(tops) > SLICE_GROUPS
    nodes = [_Node(sid, "step", sid, _label(tree.steps[sid])) for sid in keep]
    sizes: dict[str, int] = defaultdict(int)
    for sid, top in outer.items():
        key = f"a:{tree.steps[sid].agent or '(no agent)'}" if by_agent else top
        rep[sid] = key
        sizes[key] += 1
    for key in dict.fromkeys(rep[sid] for sid in outer):
        if by_agent:
            nodes.append(_Node(key, "agent", None, f"other steps of {key[2:]}", (), sizes[key]))
        else:
            nodes.append(_Node(key, "group", key, _label(tree.steps[key]), (), sizes[key]))
    order = {s.step_id: i for i, s in enumerate(run.steps)}
    nodes.sort(key=lambda n: order.get(n.step or "", len(order)))
    edges = _edges(run.run_id, tree, list(tree.steps), rep)
    return _view("slice", "the failure's slice (the rest collapsed)", nodes, edges, None)


def graph_views(run: Run, focus: Iterable[str] = ()) -> dict[str, Any]:
    """Every view of the run's dependency graph as JSON data for the report, the default one laid out.

    Returns:
        ``{"default": view id, "views": {id: view}}``; a view has ``nodes``
        (``id``, ``type``, ``label``, ``step``, ``members``, ``size``), ``edges`` (``s`` and
        ``t`` node indexes, ``kinds``, ``origin``, ``conf``, ``n`` merged dependencies) and
        its ``parent`` view; the default view also its layout (`place`: node ``x`` and ``y``,
        edge ``pts`` the route, ``width``, ``height``, ``crossings``), the others get theirs
        in the page.

    ``focus`` (the failure's slice: the steps on the paths from the top candidates to the failures)
    adds the ``slice`` view, the default for a run of more than `COLLAPSE_AT` steps.
    """
    tree = _Tree(run)
    views: dict[str, Any] = {}
    top = tree.children.get(None, [])
    if len(run.steps) <= FULL_LIMIT:
        rep = {sid: sid for sid in tree.steps}
        nodes = [_Node(s.step_id, "step", s.step_id, _label(s)) for s in run.steps]
        views["all"] = _view("all", "every step", nodes, _edges(run.run_id, tree, tree.steps, rep), None)
    if len(run.steps) > COLLAPSE_AT or "all" not in views:
        _scope_view(run, tree, "overview", "overview (collapsed by parent)", top, None, views)
    agents = _agent_view(run, tree)
    if agents is not None:
        views["agents"] = agents
    default = "overview" if "overview" in views else "all"
    focused = _slice_view(run, tree, focus) if len(run.steps) > COLLAPSE_AT else None
    if focused is not None:
        views["slice"] = focused
        default = "slice"
    # Only the view the graph tab opens on is laid out here (a bounded size: it is collapsed); the others
    # (a 1,000-step run's every-step view, a large run's hundreds of groups) by the page when first opened.
    place(views[default])
    return {"default": default, "views": views}


__all__ = ["COLLAPSE_AT", "FULL_LIMIT", "graph_views", "place"]
