"""The graph views of the HTML report: whole, collapsed by parent, by agent."""

from __future__ import annotations

from benchmarks.report_html import agent_run

from trajdebug.core.model import Dependency, Run, Step
from trajdebug.report.graph import COLLAPSE_AT, graph_views, place


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


def test_only_the_view_the_graph_opens_on_is_laid_out_and_place_lays_out_the_others() -> None:
    """A large run ships its other views as nodes and edges only (the page lays them out when opened);
    `place` gives one positions in every node, a route from source to target on every edge and an extent."""
    run = agent_run(2_000, agents=8)
    g = graph_views(run, focus=[run.steps[-1].step_id])
    assert g["default"] == "slice" and "width" in g["views"]["slice"]
    assert "x" in g["views"]["slice"]["nodes"][0]
    others = [v for k, v in g["views"].items() if k != "slice"]
    assert len(others) > 8
    assert all("width" not in v and all("x" not in n for n in v["nodes"]) for v in others)
    assert all("pts" not in e for v in others for e in v["edges"])
    view = place(g["views"]["overview"])
    assert view["width"] > 0
    for e in view["edges"]:
        src, dst = view["nodes"][e["s"]], view["nodes"][e["t"]]
        assert e["pts"][0] == [src["x"], src["y"]] and e["pts"][-1] == [dst["x"], dst["y"]]
