"""The dependency graph: typed edges, slices, hierarchy, topological order, input errors."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajdebug.core.graph import CHILD_KEY, DependencyGraph, GraphError
from trajdebug.core.model import Dependency, Run, Step


def _run(*steps: Step) -> Run:
    return Run("r", "test", steps=steps)


def _diamond() -> Run:
    # a -> b (data), a -> c (control), b, c -> d; e stands apart.
    return _run(
        Step("a", "a", start_ns=1, end_ns=2),
        Step("b", "b", deps=(Dependency("a", "data"),), start_ns=3, end_ns=4),
        Step("c", "c", deps=(Dependency("a", "control"),), start_ns=5, end_ns=6),
        Step("d", "d", deps=(Dependency("b", "data"), Dependency("c", "state")), start_ns=7, end_ns=8),
        Step("e", "e", start_ns=9, end_ns=10),
    )


class TestEdges:
    def test_parents_and_children_mirror_each_other(self) -> None:
        """Every parent edge shows up as a child edge of the producer."""
        g = DependencyGraph(_diamond())
        assert [d.step_id for d in g.parents("d")] == ["b", "c"]
        assert sorted(c for c, _ in g.children("a")) == ["b", "c"]
        assert g.children("d") == ()
        assert g.parents("a") == ()
        assert g.edge_count() == 4

    def test_edges_to_other_runs_are_external(self) -> None:
        """A context edge into another run is kept apart, not treated as a missing step."""
        run = _run(Step("a", "a", deps=(Dependency("x", "context", run_id="earlier"),)))
        g = DependencyGraph(run)
        assert g.parents("a") == ()
        assert [d.run_id for d in g.external("a")] == ["earlier"]

    def test_roots_and_sinks(self) -> None:
        """Roots have no parents, sinks no consumers, both in start order."""
        g = DependencyGraph(_diamond())
        assert g.roots() == ["a", "e"]
        assert g.sinks() == ["d", "e"]


class TestSlices:
    def test_backward_slice_is_the_ancestors_and_the_criterion(self) -> None:
        """The backward slice of d holds everything that could affect it, d included."""
        assert DependencyGraph(_diamond()).backward_slice(["d"]) == {"a", "b", "c", "d"}

    def test_thin_slice_follows_only_chosen_kinds(self) -> None:
        """Restricting to data edges drops the step reached only through state and control edges (thin slicing)."""
        assert DependencyGraph(_diamond()).backward_slice(["d"], kinds=["data"]) == {"a", "b", "d"}

    def test_forward_slice_is_the_blast_radius(self) -> None:
        """The forward slice of a holds every step it could have affected."""
        g = DependencyGraph(_diamond())
        assert g.forward_slice(["a"]) == {"a", "b", "c", "d"}
        assert g.forward_slice(["a"], kinds=["control"]) == {"a", "c"}

    def test_unknown_criterion_is_an_error_naming_it(self) -> None:
        """Slicing from a step that does not exist raises GraphError naming the id."""
        with pytest.raises(GraphError, match="nope") as info:
            DependencyGraph(_diamond()).backward_slice(["nope"])
        assert info.value.steps == ("nope",)


class TestHierarchy:
    def _agent_run(self) -> Run:
        return _run(
            Step("ag", "agent", "agent", start_ns=1, end_ns=100),
            Step("c1", "child1", parent_id="ag", start_ns=2, end_ns=3),
            Step("c2", "child2", parent_id="ag", deps=(Dependency("c1"),), start_ns=4, end_ns=5),
            Step("out", "out", deps=(Dependency("ag"),), start_ns=101, end_ns=102),
        )

    def test_children_feed_their_agent(self) -> None:
        """With hierarchy on, an agent step depends on its children through implicit edges."""
        g = DependencyGraph(self._agent_run())
        implicit = [d for d in g.parents("ag") if d.key == CHILD_KEY]
        assert sorted(d.step_id for d in implicit) == ["c1", "c2"]
        assert g.backward_slice(["out"]) == {"out", "ag", "c1", "c2"}
        assert "out" in g.forward_slice(["c1"])

    def test_hierarchy_edges_can_be_turned_off(self) -> None:
        """With hierarchy off, the agent's backward slice stops at the agent."""
        g = DependencyGraph(self._agent_run(), hierarchy=False)
        assert g.parents("ag") == ()
        assert g.backward_slice(["out"]) == {"out", "ag"}


    def test_a_step_that_is_its_own_parent_leaves_the_child_edges_downstream_of_it_alone(self) -> None:
        """A step recorded as its own parent gets no child edge and no enclosing step, and a container whose
        child reads it still takes that child's output (no cycle is cut; the parent cycle is named)."""
        g = DependencyGraph(
            _run(
                Step("tide", "read_tide", parent_id="tide", start_ns=1, end_ns=2),
                Step("voyage", "plan_voyage", "agent", start_ns=3, end_ns=20),
                Step("course", "chart_course", parent_id="voyage", deps=(Dependency("tide"),), start_ns=4, end_ns=9),
                Step("sail", "set_sail", deps=(Dependency("voyage"),), start_ns=21, end_ns=22),
            )
        )
        assert [d.step_id for d in g.parents("voyage")] == ["course"] and g.parents("tide") == ()
        assert g.parent("tide") is None and g.parent("course") == "voyage"
        assert len(g.problems) == 1 and "'tide' are their own ancestors" in g.problems[0]
        assert g.backward_slice(["sail"]) == {"sail", "voyage", "course", "tide"}

    def test_a_loop_of_parents_loses_only_the_loops_own_child_edges(self) -> None:
        """On a loop of parents (a inside b inside a) the looping steps get no child edge and no parent, while a
        step inside the loop keeps its edge into its parent; the order needs no cut."""
        g = DependencyGraph(
            _run(
                Step("hive", "tend_hive", "agent", parent_id="yard", start_ns=1, end_ns=9),
                Step("yard", "walk_yard", "agent", parent_id="hive", start_ns=2, end_ns=8),
                Step("comb", "cut_comb", parent_id="hive", start_ns=3, end_ns=4),
                Step("jar", "fill_jar", deps=(Dependency("hive"),), start_ns=10, end_ns=11),
            )
        )
        assert [d.step_id for d in g.parents("hive")] == ["comb"] and g.parents("yard") == ()
        assert (g.parent("hive"), g.parent("yard"), g.parent("comb")) == (None, None, "hive")
        assert g.topological_order().index("comb") < g.topological_order().index("hive")

    def test_a_loop_of_parents_is_named_in_problems_and_raises_when_strict(self) -> None:
        """A loop of parents adds no edge but is still named in problems (a few of its steps, the rest counted),
        and strict=True raises GraphError listing every looping step."""
        n = 40
        run = _run(*(Step(f"k{i}", "knot", parent_id=f"k{(i + 1) % n}") for i in range(n)), Step("rope", "coil"))
        g = DependencyGraph(run)
        assert len(g.problems) == 1 and "parent cycle" in g.problems[0]
        assert "'k0', 'k1', 'k2', 'k3', 'k4' and 35 more" in g.problems[0] and "k5'" not in g.problems[0]
        with pytest.raises(GraphError, match="parent cycle") as info:
            DependencyGraph(run, strict=True)
        assert set(info.value.steps) == {f"k{i}" for i in range(n)}

    def test_a_deep_chain_and_a_long_loop_of_parents_build_without_recursion(self) -> None:
        """A chain of parents 20,000 deep keeps every child edge, and a loop of 20,000 parents drops all its own."""
        n = 20_000
        chain = DependencyGraph(_run(*(Step(f"d{i}", "dig", parent_id=f"d{i - 1}" if i else None) for i in range(n))))
        assert chain.edge_count() == n - 1 and chain.parent(f"d{n - 1}") == f"d{n - 2}"
        loop = DependencyGraph(_run(*(Step(f"d{i}", "dig", parent_id=f"d{(i - 1) % n}") for i in range(n))))
        assert loop.edge_count() == 0 and loop.parent("d0") is None and len(loop.problems) == 1


class TestInputErrors:
    def test_dependency_on_a_missing_step_names_both(self) -> None:
        """A dangling edge is left out and named in problems; strict=True raises GraphError naming both ends."""
        run = _run(Step("a", "alpha", deps=(Dependency("ghost"),)), Step("b", "beta", deps=(Dependency("a"),)))
        g = DependencyGraph(run)
        assert g.parents("a") == () and g.backward_slice(["b"]) == {"a", "b"}
        assert len(g.problems) == 1 and "a (alpha) -> ghost" in g.problems[0]
        with pytest.raises(GraphError, match=r"a \(alpha\) -> ghost") as info:
            DependencyGraph(run, strict=True)
        assert info.value.steps == ("a",)

    def test_cycle_names_its_steps(self) -> None:
        """A cycle with no timestamps is cut against start order and named in problems; strict=True raises
        GraphError listing it."""
        run = _run(
            Step("a", "a", deps=(Dependency("c"),)),
            Step("b", "b", deps=(Dependency("a"),)),
            Step("c", "c", deps=(Dependency("b"),)),
            Step("d", "d", deps=(Dependency("c"),)),
        )
        g = DependencyGraph(run)
        assert g.parents("a") == ()  # the edge a <- c points back in start order: cut
        assert g.backward_slice(["d"]) == {"a", "b", "c", "d"}
        assert g.topological_order() == ["a", "b", "c", "d"]
        assert len(g.problems) == 1 and "cycle" in g.problems[0]
        with pytest.raises(GraphError, match="cycle") as info:
            DependencyGraph(run, strict=True)
        assert set(info.value.steps) == {"a", "b", "c"}

    def test_a_dependency_cycle_upstream_leaves_the_child_edges_downstream_of_it_alone(self) -> None:
        """Only the edges of a cycle are cut: a container whose child reads a step of a dependency cycle still
        takes that child's output, though the child is listed after the container."""
        g = DependencyGraph(
            _run(
                Step("gauge", "read_gauge", deps=(Dependency("valve"),)),
                Step("valve", "turn_valve", deps=(Dependency("gauge"),)),
                Step("pump", "run_pump", "agent"),
                Step("flow", "log_flow", parent_id="pump", deps=(Dependency("valve"),)),
                Step("tank", "fill_tank", deps=(Dependency("pump"),)),
            )
        )
        assert [d.step_id for d in g.parents("pump")] == ["flow"] and g.parents("gauge") == ()
        assert len(g.problems) == 1 and "(cut 1 edge " in g.problems[0]
        assert g.backward_slice(["tank"]) == {"tank", "pump", "flow", "valve", "gauge"}

    def test_a_child_reading_state_its_container_wrote_keeps_its_edge_into_the_container(self) -> None:
        """When a container writes state its child then reads (a two-step cycle with the child edge), the cut
        takes the container -> child read, not the child edge: the child finishes first, so the container still
        takes the child's output."""
        g = DependencyGraph(
            _run(
                Step("loom", "set_loom", start_ns=1, end_ns=2),
                Step("weave", "weave_cloth", "agent", deps=(Dependency("loom"),), start_ns=3, end_ns=20),
                Step("dye", "mix_dye", parent_id="weave", deps=(Dependency("weave", "state"),), start_ns=5, end_ns=9),
                Step("bolt", "roll_bolt", deps=(Dependency("weave"),), start_ns=21, end_ns=22),
            )
        )
        assert [d.step_id for d in g.parents("weave")] == ["loom", "dye"] and g.parents("dye") == ()
        assert len(g.problems) == 1 and "(cut 1 edge against finish order)" in g.problems[0]
        assert g.backward_slice(["bolt"]) == {"bolt", "weave", "dye", "loom"}

    def test_a_cycle_through_a_container_keeps_its_childs_edge(self) -> None:
        """A cycle running through a container, its child and a later consumer of the container loses only the
        edge that runs against finish order (the child's read of the later step), never the child edge."""
        g = DependencyGraph(
            _run(
                Step("kiln", "fire_kiln", "agent", start_ns=1, end_ns=20),
                Step("glaze", "mix_glaze", parent_id="kiln", deps=(Dependency("crate"),), start_ns=3, end_ns=9),
                Step("crate", "pack_crate", deps=(Dependency("kiln"),), start_ns=21, end_ns=25),
            )
        )
        assert [d.step_id for d in g.parents("kiln")] == ["glaze"] and g.parents("glaze") == ()
        assert "(cut 1 edge " in g.problems[0] and g.topological_order() == ["glaze", "kiln", "crate"]

    def test_a_long_cycle_is_named_by_its_first_steps_only(self) -> None:
        """A dependency cycle of many steps is named by a few of them and its length, not step by step."""
        n = 500
        g = DependencyGraph(_run(*(Step(f"c{i}", "link", deps=(Dependency(f"c{(i + 1) % n}"),)) for i in range(n))))
        assert len(g.problems) == 1 and f"({n} steps)" in g.problems[0] and len(g.problems[0]) < 300

    def test_self_dependency_is_a_cycle(self) -> None:
        """A step that depends on itself is a one-step cycle: cut, and named."""
        g = DependencyGraph(_run(Step("a", "a", deps=(Dependency("a"),))))
        assert g.parents("a") == () and "cycle" in g.problems[0]
        with pytest.raises(GraphError, match="cycle") as info:
            DependencyGraph(_run(Step("a", "a", deps=(Dependency("a"),))), strict=True)
        assert set(info.value.steps) == {"a"}


@st.composite
def dags(draw: st.DrawFn) -> Run:
    """Random DAGs whose step order and timestamps may disagree with the edges."""
    n = draw(st.integers(1, 25))
    seed = draw(st.integers(0, 10_000))
    timestamps = draw(st.sampled_from(["ordered", "zero", "shuffled"]))
    rng = random.Random(seed)
    topo = list(range(n))
    steps = []
    for i in topo:
        k = rng.randint(0, min(i, 3))
        deps = tuple(
            Dependency(f"s{p}", rng.choice(["data", "control", "state"])) for p in rng.sample(range(i), k)
        )
        end = i * 10 + 5 if timestamps == "ordered" else 0
        steps.append(Step(f"s{i}", f"n{i}", deps=deps, start_ns=end - 5 if end else 0, end_ns=end))
    if timestamps == "shuffled":
        rng.shuffle(steps)
    return _run(*steps)


def _closure(run: Run, start: str) -> set[str]:
    by_id = run.step_map()
    seen = {start}
    frontier = [start]
    while frontier:
        nxt = []
        for sid in frontier:
            for d in by_id[sid].deps:
                if d.step_id not in seen:
                    seen.add(d.step_id)
                    nxt.append(d.step_id)
        frontier = nxt
    return seen


class TestProperties:
    @settings(max_examples=60, deadline=None)
    @given(dags())
    def test_topological_order_puts_producers_first(self, run: Run) -> None:
        """Whatever the recorded order, every producer comes before its consumers."""
        g = DependencyGraph(run)
        order = g.topological_order()
        assert sorted(order) == sorted(s.step_id for s in run.steps)
        pos = {sid: i for i, sid in enumerate(order)}
        for s in run.steps:
            for d in g.parents(s.step_id):
                assert pos[d.step_id] < pos[s.step_id]

    @settings(max_examples=80, deadline=None)
    @given(st.integers(0, 10_000), st.integers(2, 30))
    def test_a_cycle_is_cut_only_at_its_own_edges_and_no_cycle_is_left(self, seed: int, n: int) -> None:
        """On random graphs with dependencies both ways and parents anywhere (loops of parents too), with or
        without end times, every kept producer comes first in the order, and every edge left out closed a cycle
        (its consumer reaches back to its producer over the edges the graph would have)."""
        rng = random.Random(seed)
        timed = rng.random() < 0.5
        steps = [
            Step(f"s{i}", "step", deps=tuple(Dependency(f"s{j}") for j in rng.sample(range(n), rng.randint(0, 2))),
                 parent_id=f"s{rng.randrange(n)}" if rng.random() < 0.3 else None,
                 start_ns=i, end_ns=rng.randrange(n, 3 * n) if timed else None)
            for i in range(n)
        ]
        g = DependencyGraph(_run(*steps))
        up: dict[str, set[str]] = {s.step_id: {d.step_id for d in s.deps} for s in steps}
        for s in steps:
            if g.parent(s.step_id) is not None:
                up[s.parent_id or ""].add(s.step_id)  # a child feeds its parent
        order = {sid: i for i, sid in enumerate(g.topological_order())}
        for sid, producers in up.items():
            kept = {d.step_id for d in g.parents(sid)}
            assert kept <= producers and all(order[p] < order[sid] for p in kept)
            for p in producers - kept:
                assert p == sid or _reaches(up, p, sid), (seed, sid, p)

    @settings(max_examples=60, deadline=None)
    @given(dags())
    def test_slices_match_a_naive_closure_and_are_dual(self, run: Run) -> None:
        """The backward slice equals the transitive closure; b is downstream of a iff a is upstream of b."""
        g = DependencyGraph(run)
        ids = [s.step_id for s in run.steps]
        for sid in ids:
            assert g.backward_slice([sid]) == _closure(run, sid)
        a = ids[0]
        fwd = g.forward_slice([a])
        for b in ids:
            assert (b in fwd) == (a in g.backward_slice([b]))


def _reaches(up: dict[str, set[str]], start: str, target: str) -> bool:
    """True when ``target`` is among the producers of ``start``, transitively."""
    seen, todo = {start}, [start]
    while todo:
        for p in up.get(todo.pop(), ()):
            if p == target:
                return True
            if p not in seen:
                seen.add(p)
                todo.append(p)
    return False
