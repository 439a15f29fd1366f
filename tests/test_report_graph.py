"""The graph views of the HTML report: whole, collapsed by parent, by agent."""

from __future__ import annotations

from benchmarks.report_html import agent_run

from trajdebug.core.model import Dependency, Run, Step
from trajdebug.report.graph import COLLAPSE_AT, graph_views


def _run(steps: list[Step]) -> Run:
    return Run("r1", "t", steps=tuple(steps), outcome="failure")


def test_a_small_run_is_drawn_whole() -> None:
    """Up to COLLAPSE_AT steps the default view has one node per step and one edge per dependency."""
    steps = [
        Step("a", "plan", "llm", start_ns=1),
        Step("b", "search", "tool", start_ns=2, deps=(Dependency("a", "data", "tracked"),)),
        Step("c", "parse", "parse", start_ns=3, deps=(Dependency("b", "data", "inferred", 0.7),)),
    ]
    g = graph_views(_run(steps))
    view = g["views"][g["default"]]
    assert [n["id"] for n in view["nodes"]] == ["a", "b", "c"]
    edges = {(view["nodes"][e["s"]]["id"], view["nodes"][e["t"]]["id"]): e for e in view["edges"]}
    assert set(edges) == {("a", "b"), ("b", "c")}
    assert edges[("b", "c")]["origin"] == "inferred" and edges[("b", "c")]["conf"] == 0.7


def test_a_large_run_collapses_by_parent_and_each_group_opens_as_a_view() -> None:
    """A 2,000-step team run shows its sub-agents as groups; each group's view holds its steps."""
    run = agent_run(2_000, agents=8)
    g = graph_views(run)
    assert g["default"] == "overview"
    overview = g["views"]["overview"]
    assert len(overview["nodes"]) <= COLLAPSE_AT
    groups = [n for n in overview["nodes"] if n["type"] == "group"]
    assert {n["label"] for n in groups} >= {f"researcher-{i}" for i in range(8)}
    for n in groups:
        sub = g["views"][f"g:{n['id']}"]
        assert sub["parent"] == "overview"
        assert len(sub["nodes"]) <= COLLAPSE_AT + 40
    # Every step is reachable: counted once in the overview's nodes (a group stands for its subtree).
    assert sum(n.get("size", 1) for n in overview["nodes"]) == len(run.steps)


def test_merged_edges_keep_every_kind_and_the_strongest_origin() -> None:
    """Edges between two groups merge: kinds united, tracked beats inferred, count kept."""
    steps = [
        Step("p", "team-a", "agent", start_ns=1, agent="a"),
        Step("x", "w", "tool", parent_id="p", start_ns=2, agent="a"),
        Step("q", "team-b", "agent", start_ns=3, agent="b"),
        Step("y", "r", "llm", parent_id="q", start_ns=4, agent="b", deps=(
            Dependency("x", "data", "inferred", 0.6),
            Dependency("p", "state", "tracked"),
        )),
    ]
    view = graph_views(_run(steps))["views"]["agents"]
    assert [n["label"] for n in view["nodes"]] == ["a", "b"]
    (edge,) = view["edges"]
    assert edge["kinds"] == ["data", "state"] and edge["origin"] == "tracked" and edge["n"] == 2
