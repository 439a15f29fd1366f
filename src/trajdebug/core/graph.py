"""The dependency graph of one run: typed edges, slices, a topological order.

A run's steps and their `Dependency` edges form a dynamic dependence graph in
the sense of Agrawal & Horgan (PLDI 1990): one node per executed step, one edge
per value (or decision, or state, or context) that actually flowed.  Slicing it
backward from a failing step gives the steps that could have caused the
failure (Korel & Laski 1988); slicing forward from a step gives everything it
could have affected (the blast radius of an error, and what a replay must
re-execute).

Edges point from the consumer to its producer (``step.deps``).  Edges to steps
of *other* runs (``Dependency.run_id`` set, the ``context`` edges of a
conversation) are not nodes of this graph; they are kept apart in
`DependencyGraph.external`.

Hierarchy.  An enclosing step (an ``agent`` step, or any step with children)
produces its output from its children, but recorders seldom write that down as
an edge.  With ``hierarchy=True`` (the default) the graph adds an implicit
``data`` edge from each child into its parent, with ``key=CHILD_KEY``, so a
backward search that starts at a failed agent step walks into the steps that
built its output, and a forward slice of a child reaches the agent's consumers.
No parent -> child edge is added: the children consume the agent's *input*, not
its output, and such an edge would close a cycle with the child -> parent one.
A step on a parent cycle (its own parent, or its parent's parent...) has no
enclosing step (`DependencyGraph.parent`): a hand-written or merged file may
hold one, and its child edges would close a cycle the dependencies never had,
whose cut (below) would then take ordinary child edges downstream of it too.
Retries (``retry_of``) are not edges either: an attempt does not consume the
previous attempt's output.

Broken links.  Partial exports routinely hold an edge to a step that is not
there, and hand-written or merged runs may hold a cycle.  Neither is fatal: a
dangling edge is left out, a cycle is cut at its own edges that point back
against finish order (the steps downstream of it keep theirs), a parent cycle
adds no edge (above), and each is named
in `DependencyGraph.problems` (``strict=True`` raises `GraphError` instead).

Cost.  Building is O(V + E).  Acyclicity is proved in O(E) when every edge goes
from an earlier-finishing producer to a later-finishing consumer, which is the
case for any recorded run; otherwise (hand-made or imported runs without
timestamps) Kahn's algorithm runs once and names the steps of any cycle.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

from trajdebug.core.model import Dependency, DepKind, Run, Step


CHILD_KEY = "(child)"
"""The ``key`` of the implicit child -> parent edges added with ``hierarchy=True``."""
WHOLE_INPUT_KEY = "(input)"
"""The ``key`` of an inferred edge whose producer made a step's whole input (a record handed on as
the input of an enclosing step: every field of it came from there)."""


class GraphError(ValueError):
    """A run whose dependencies do not form a graph: a cycle or a dependency on a missing step.

    The message names the steps; `steps` holds their ids.
    """

    def __init__(self, message: str, steps: Iterable[str]) -> None:
        super().__init__(message)
        self.steps: tuple[str, ...] = tuple(steps)
        """The ids of the offending steps (the cycle, or the steps with dangling edges)."""


_EMPTY: tuple[Dependency, ...] = ()
_SHOWN = 5
"""How many steps a problem line names (a cycle, a parent loop, dangling edges), the rest counted."""
_NO_CHILDREN: tuple[tuple[str, Dependency], ...] = ()


class DependencyGraph:
    """The typed dependency graph of one run.

    Args:
        run: The run.
        hierarchy: Add implicit child -> parent ``data`` edges (see the module docstring).
        strict: Raise on a dangling edge or a cycle instead of leaving it out.

    Raises:
        GraphError: with ``strict=True``, a step depends on a step that is not
            in the run, or the dependencies form a cycle.
    """

    __slots__ = (
        "_children",
        "_external",
        "_looping",
        "_order",
        "_parents",
        "_pos",
        "hierarchy",
        "problems",
        "run",
        "steps",
        "strict",
    )

    def __init__(self, run: Run, *, hierarchy: bool = True, strict: bool = False) -> None:
        self.run = run
        self.hierarchy = hierarchy
        self.strict = strict
        self.problems: list[str] = []
        """What was left out to make a graph: dangling edges, edges that closed a cycle (one line each)."""
        self.steps: dict[str, Step] = {s.step_id: s for s in run.steps}
        """The run's steps by id."""
        self._pos: dict[str, int] = {s.step_id: i for i, s in enumerate(run.steps)}
        self._parents: dict[str, tuple[Dependency, ...]] = {}
        self._external: dict[str, tuple[Dependency, ...]] = {}
        self._children: dict[str, tuple[tuple[str, Dependency], ...]] | None = None
        self._order: list[str] | None = None
        self._looping: frozenset[str] = _looping(self.steps)
        if self._looping:
            self._report_looping()
        self._build()

    # -- construction --------------------------------------------------------

    def _report_looping(self) -> None:
        # A parent cycle adds no edge (see the module docstring), so no cut names it:
        # say it here, in the loader's words, for runs that never met the loader.
        loop = [sid for sid in self.steps if sid in self._looping]
        shown = ", ".join(repr(sid) for sid in loop[:_SHOWN])
        if len(loop) > _SHOWN:
            shown += f" and {len(loop) - _SHOWN} more"
        msg = f"run {self.run.run_id}: steps {shown} are their own ancestors (a parent cycle)"
        if self.strict:
            raise GraphError(msg, loop)
        self.problems.append(msg + "; shown at the top level")

    def _build(self) -> None:
        steps = self.steps
        pos = self._pos
        run_id = self.run.run_id
        missing: list[str] = []
        extra: dict[str, list[Dependency]] = {}
        if self.hierarchy:
            looping = self._looping
            for s in self.run.steps:
                if s.parent_id is not None and s.parent_id in steps and s.step_id not in looping:
                    extra.setdefault(s.parent_id, []).append(
                        Dependency(s.step_id, "data", "declared", 1.0, CHILD_KEY)
                    )
        parents = self._parents
        # Every edge from an earlier-started step proves the graph acyclic for
        # free; the loop that checks edges resolve checks that too.
        by_start = not extra
        for i, s in enumerate(self.run.steps):
            deps = s.deps
            for d in deps:
                p = pos.get(d.step_id)
                if p is None or p >= i or (d.run_id is not None and d.run_id != run_id):
                    break
            else:
                if deps:
                    parents[s.step_id] = deps
                more = extra.get(s.step_id)
                if more:
                    parents[s.step_id] = (*deps, *more)
                continue
            keep: list[Dependency] = []
            ext: list[Dependency] = []
            for d in deps:
                if d.run_id is not None and d.run_id != run_id:
                    ext.append(d)
                elif d.step_id in steps:
                    keep.append(d)
                    if pos[d.step_id] >= i:
                        by_start = False
                else:
                    missing.append(f"{s.step_id} ({s.name}) -> {d.step_id}")
            if ext:
                self._external[s.step_id] = tuple(ext)
            deps = (*keep, *extra.get(s.step_id, ()))
            if deps:
                parents[s.step_id] = deps
        if missing:
            hidden = len(missing) - _SHOWN
            shown = ", ".join(missing[:_SHOWN]) + (f" and {hidden} more" if hidden > 0 else "")
            msg = f"run {run_id}: {len(missing)} dependenc{'y' if len(missing) == 1 else 'ies'} on a missing step: {shown}"
            if self.strict:
                raise GraphError(msg, [m.split(" ", 1)[0] for m in missing])
            self.problems.append(msg + " (left out)")
        if by_start:
            self._order = list(steps)
        else:
            self._check_acyclic()

    def _check_acyclic(self) -> None:
        # Every edge from an earlier-finishing producer to a later-finishing
        # consumer (ties broken by start order) proves the graph acyclic in
        # O(E log V), and that order is then a topological order; only runs
        # that break it (no timestamps) pay for Kahn's algorithm.
        inf = float("inf")
        ranked = sorted(
            self.steps.values(),
            key=lambda s: (inf if s.end_ns is None else s.end_ns, self._pos[s.step_id]),
        )
        rank = {s.step_id: i for i, s in enumerate(ranked)}
        for sid, deps in self._parents.items():
            k = rank[sid]
            for d in deps:
                if rank[d.step_id] >= k:
                    self._order = self._kahn()
                    return
        self._order = [s.step_id for s in ranked]

    def _kahn(self) -> list[str]:
        indeg = {sid: len(self._parents.get(sid, _EMPTY)) for sid in self.steps}
        children = self._children_map()
        queue = deque(sid for sid in self.steps if indeg[sid] == 0)
        order: list[str] = []
        while queue:
            sid = queue.popleft()
            order.append(sid)
            for child, _ in children.get(sid, _NO_CHILDREN):
                indeg[child] -= 1
                if indeg[child] == 0:
                    queue.append(child)
        if len(order) < len(self.steps):
            stuck = {sid for sid, n in indeg.items() if n > 0}
            cyc = self._find_cycle(stuck)
            names = " -> ".join(f"{sid} ({self.steps[sid].name})" for sid in cyc[:_SHOWN])
            if len(cyc) > _SHOWN:  # a long cycle named whole made a problem line of megabytes
                names += f" -> ... ({len(cyc) - 1} steps)"
            msg = f"run {self.run.run_id}: dependency cycle: {names}"
            if self.strict:
                raise GraphError(msg, cyc)
            # Cut, inside each strongly connected part of the stuck steps (a cycle, or
            # cycles sharing steps), every edge from a later-finishing producer to an
            # earlier-finishing consumer (ties, and steps with no end, by start order:
            # `_check_acyclic`'s key): what is left of a part follows that total order
            # and the parts close no cycle among themselves, so none is left.  Finish,
            # not start: a child starts after its container but finishes before it, so
            # a child edge survives and the cycle loses the other edge (a container
            # writes shared state its child reads).  The steps merely downstream of a
            # cycle keep every edge (a child is listed after the container it feeds).
            key = self._finish_key
            part = _components(stuck, self._parents)
            cut = 0
            for sid in stuck:
                deps = self._parents.get(sid, _EMPTY)
                mine, k = part[sid], key(sid)
                keep = tuple(d for d in deps if not (part.get(d.step_id) == mine and key(d.step_id) >= k))
                cut += len(deps) - len(keep)
                if keep:
                    self._parents[sid] = keep
                else:
                    self._parents.pop(sid, None)
            self._children = None
            self.problems.append(f"{msg} (cut {cut} edge{'s' if cut != 1 else ''} against finish order)")
            return self._kahn()
        return order

    def _finish_key(self, sid: str) -> tuple[float, int]:
        end = self.steps[sid].end_ns
        return (float("inf") if end is None else end, self._pos[sid])

    def _find_cycle(self, stuck: set[str]) -> list[str]:
        # Every step left with in-degree > 0 after Kahn lies on or behind a
        # cycle; walking parents inside that set must revisit a step.
        start = min(stuck, key=self._pos.__getitem__)
        seen: dict[str, int] = {}
        path: list[str] = []
        sid = start
        while sid not in seen:
            seen[sid] = len(path)
            path.append(sid)
            sid = next(d.step_id for d in self._parents.get(sid, _EMPTY) if d.step_id in stuck)
        cyc = path[seen[sid] :]
        cyc.reverse()  # producer first
        return [*cyc, cyc[0]]

    def _children_map(self) -> dict[str, tuple[tuple[str, Dependency], ...]]:
        if self._children is None:
            acc: dict[str, list[tuple[str, Dependency]]] = {}
            for sid, deps in self._parents.items():
                for d in deps:
                    lst = acc.get(d.step_id)
                    if lst is None:
                        acc[d.step_id] = [(sid, d)]
                    else:
                        lst.append((sid, d))
            self._children = {k: tuple(v) for k, v in acc.items()}
        return self._children

    # -- queries --------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.steps)

    def __contains__(self, step_id: object) -> bool:
        return step_id in self.steps

    def position(self, step_id: str) -> int:
        """The step's index in the run's start order."""
        return self._pos[step_id]

    def parent(self, step_id: str) -> str | None:
        """The step enclosing this one as the analysis sees it: its recorded parent, or None when that is
        not a step of the run or the step lies on a parent cycle (shown at the top level, as the loader says)."""
        up = self.steps[step_id].parent_id
        return up if up is not None and up in self.steps and step_id not in self._looping else None

    def parents(self, step_id: str) -> tuple[Dependency, ...]:
        """The edges into this step from the steps it consumed (within this run)."""
        return self._parents.get(step_id, _EMPTY)

    def children(self, step_id: str) -> tuple[tuple[str, Dependency], ...]:
        """The steps that consumed this step, as ``(consumer_id, edge)`` pairs."""
        return self._children_map().get(step_id, _NO_CHILDREN)

    def external(self, step_id: str) -> tuple[Dependency, ...]:
        """The edges from this step into steps of other runs (conversation context)."""
        return self._external.get(step_id, _EMPTY)

    def edge_count(self) -> int:
        """The number of edges within the run (implicit hierarchy edges included)."""
        return sum(len(d) for d in self._parents.values())

    def _check_ids(self, step_ids: Sequence[str]) -> None:
        bad = [sid for sid in step_ids if sid not in self.steps]
        if bad:
            raise GraphError(f"run {self.run.run_id} has no step {', '.join(map(repr, bad))}", bad)

    def backward_slice(self, step_ids: Iterable[str], kinds: Iterable[DepKind] | None = None) -> set[str]:
        """The steps that could have affected these steps, the steps themselves included.

        Args:
            step_ids: The slicing criteria.
            kinds: Follow only edges of these kinds (None: all).  ``{"data"}``
                gives a thin slice (Sridharan, Fink & Bodík, PLDI 2007).

        Raises:
            GraphError: an id is not a step of the run.
        """
        seeds = list(step_ids)
        self._check_ids(seeds)
        allowed = None if kinds is None else frozenset(kinds)
        seen = set(seeds)
        stack = seeds
        parents = self._parents
        while stack:
            for d in parents.get(stack.pop(), _EMPTY):
                p = d.step_id
                if p not in seen and (allowed is None or d.kind in allowed):
                    seen.add(p)
                    stack.append(p)
        return seen

    def forward_slice(self, step_ids: Iterable[str], kinds: Iterable[DepKind] | None = None) -> set[str]:
        """The steps these steps could have affected, the steps themselves included.

        Args:
            step_ids: The slicing criteria.
            kinds: Follow only edges of these kinds (None: all).

        Raises:
            GraphError: an id is not a step of the run.
        """
        seeds = list(step_ids)
        self._check_ids(seeds)
        allowed = None if kinds is None else frozenset(kinds)
        children = self._children_map()
        seen = set(seeds)
        stack = seeds
        while stack:
            for c, d in children.get(stack.pop(), _NO_CHILDREN):
                if c not in seen and (allowed is None or d.kind in allowed):
                    seen.add(c)
                    stack.append(c)
        return seen

    def topological_order(self) -> list[str]:
        """All step ids, every producer before its consumers (start order where that already holds)."""
        assert self._order is not None  # set by the acyclicity check in the constructor
        return list(self._order)

    def edge_kinds(self) -> frozenset[str]:
        """The kinds of edge present in the run (``"child"`` for implicit hierarchy edges)."""
        kinds = {d.kind if d.key != CHILD_KEY else "child" for deps in self._parents.values() for d in deps}
        return frozenset(kinds)

    def roots(self) -> list[str]:
        """The steps with no parents in this run, in start order."""
        return [sid for sid in self.steps if sid not in self._parents]

    def sinks(self) -> list[str]:
        """The steps nobody in this run consumed, in start order."""
        children = self._children_map()
        return [sid for sid in self.steps if sid not in children]


def _components(nodes: set[str], parents: dict[str, tuple[Dependency, ...]]) -> dict[str, int]:
    """The strongly connected components of the edges among ``nodes`` (step -> component number): Tarjan's
    algorithm (1972), iterative so that a long cycle needs no deep recursion, O(V + E)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    part: dict[str, int] = {}
    stack: list[str] = []
    for root in nodes:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        work = [(root, iter(parents.get(root, _EMPTY)))]
        while work:
            v, edges = work[-1]
            for d in edges:
                w = d.step_id
                if w not in nodes:
                    continue
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    work.append((w, iter(parents.get(w, _EMPTY))))
                    break
                if w not in part:  # still on the stack: in v's component
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    u = work[-1][0]
                    low[u] = min(low[u], low[v])
                if low[v] == index[v]:
                    n = len(part)
                    while True:
                        w = stack.pop()
                        part[w] = n
                        if w == v:
                            break
    return part


def _looping(steps: dict[str, Step]) -> frozenset[str]:
    """The steps on a parent cycle (each its own parent, or its parent's parent...), in O(V).

    Only the cycle itself: a step whose chain of parents runs into a cycle keeps its own parent."""
    out: set[str] = set()
    done: set[str] = set()
    for start, s in steps.items():
        up = s.parent_id
        if up is None or up in done or up not in steps:  # the common case: no walk (a parent listed first)
            done.add(start)
            continue
        if start in done:
            continue
        at: dict[str, int] = {}  # the current walk: step -> its place on it
        path: list[str] = []
        cur: str | None = start
        while cur is not None and cur in steps and cur not in done and cur not in at:
            at[cur] = len(path)
            path.append(cur)
            cur = steps[cur].parent_id
        if cur is not None and cur in at:
            out.update(path[at[cur] :])
        done.update(path)
    return frozenset(out)


def final_step(run: Run) -> Step | None:
    """The step that produced the run's final output.

    In order: a step marked ``attributes["final"]``; the last ``output`` step; the
    single top-level step (the root agent); the last top-level step to finish.
    """
    if not run.steps:
        return None
    output: Step | None = None
    for s in reversed(run.steps):
        if s.attributes and s.attributes.get("final"):
            return s
        if output is None and s.kind == "output":
            output = s
    if output is not None:
        return output
    top = [s for s in run.steps if s.parent_id is None]
    if len(top) == 1:
        return top[0]
    best, best_key = None, None
    for i, s in enumerate(top or run.steps):
        key = (s.end_ns if s.end_ns is not None else s.start_ns, i)
        if best_key is None or key > best_key:
            best, best_key = s, key
    return best


__all__ = ["CHILD_KEY", "WHOLE_INPUT_KEY", "DependencyGraph", "GraphError", "final_step"]
