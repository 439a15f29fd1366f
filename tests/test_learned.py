"""The learned ranker: features of ranked steps, the plain-Python model, calibration, verdicts, re-ranking."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import trajdebug
from trajdebug.analysis import analyze, learned
from trajdebug.analysis.features import features, ranked_keys
from trajdebug.analysis.learned import (
    DEFAULT_PATH,
    MARGIN_CAP,
    Model,
    load_model,
    margins,
    model_from_dict,
    rerank,
    softmax,
)
from trajdebug.core.model import Run, Step
from trajdebug.sources.load import load_runs


@trajdebug.step(kind="tool")
def lookup(city: str) -> dict[str, object]:
    return {"city": city, "rate": 0.0}  # the planted fault: a zero rate


@trajdebug.step(kind="llm")
def plan(city: str) -> str:
    return city.upper()


@trajdebug.step(kind="tool")
def price(info: dict[str, object], nights: int) -> float:
    return float(info["rate"]) * nights  # type: ignore[arg-type]


@trajdebug.step(kind="output")
def check(total: float) -> float:
    if total <= 0:
        raise ValueError(f"total {total} is not positive")
    return total


def _record(path: Path) -> Run:
    with pytest.raises(ValueError), trajdebug.run("booking", path=path):
        check(price(lookup(plan("paris")), 3))
    [run] = load_runs(path)
    return run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return _record(tmp_path_factory.mktemp("learned") / "runs.jsonl")


def _stump(feature: str, threshold: float, left: float, right: float) -> Model:
    """A one-split model: ``left`` when the feature is at most ``threshold``, else ``right``."""
    return Model((feature,), 0.0, 1.0, (((0, threshold, 1, 2, 0.0), (-1, 0.0, -1, -1, left), (-1, 0.0, -1, -1, right)),))


def test_every_ranked_step_gets_features_in_hand_order(run: Run) -> None:
    """features() has one mapping per ranked step; the hand ranker's first step has rank feature 1."""
    a = analyze(run, top=100_000)
    f = features(a)
    assert list(f) == ranked_keys(a)
    assert len(f) == len(a.localization.ranking)
    first = next(iter(f.values()))
    assert first["hand_rank_inv"] == 1.0 and first["hand_top"] == 1.0


def test_position_and_kind_features_follow_the_run(run: Run) -> None:
    """The run's first step is flagged first, with position 0 and its kind one-hot."""
    a = analyze(run, top=100_000)
    f = features(a)
    firsts = [(k, v) for k, v in f.items() if v.get("is_first")]
    for (_, sid), v in firsts:
        assert sid == a.run.steps[0].step_id
        assert v["pos_from_start"] == 0.0
        assert v[f"kind:{a.run.steps[0].kind}"] == 1.0


def test_speaker_change_is_seen() -> None:
    """A step whose agent differs from the previous step's has agent_change 1; the same agent's has 0."""
    steps = (
        Step("a", "ask", kind="llm", agent="planner", output="find the rate"),
        Step("b", "answer", kind="llm", agent="coder", output="rate is 0", deps=()),
        Step("c", "final", kind="output", agent="coder", output="0", status="error"),
    )
    run = Run("r", "chat", outcome="failure", steps=steps)
    f = features(analyze(run, top=100_000))
    by_sid = {sid: v for (_, sid), v in f.items()}
    if "b" in by_sid:
        assert by_sid["b"]["agent_change"] == 1.0
    if "c" in by_sid:
        assert by_sid["c"]["agent_change"] == 0.0
    assert by_sid, "nothing ranked"


def test_a_tree_walks_left_at_or_below_the_threshold() -> None:
    """raw() adds rate x the leaf value the features lead to (missing features read 0)."""
    m = _stump("x", 0.5, -1.0, 2.0)
    assert (m.raw({"x": 0.5}), m.raw({"x": 0.6}), m.raw({})) == (-1.0, 2.0, -1.0)


def test_calibration_interpolates_and_clips() -> None:
    """Calibration is piecewise linear between its knots and flat beyond them."""
    m = Model((), 0.0, 1.0, (), calibration=((0.2, 0.6), (0.1, 0.9)))
    assert m.calibrate(0.0) == 0.1 and m.calibrate(1.0) == 0.9
    assert m.calibrate(0.4) == pytest.approx(0.5)


def test_verdict_thresholds() -> None:
    """At or above `confident`: confident; at or above `likely`: likely; else (or no confidence): unsure."""
    m = Model((), 0.0, 1.0, (), confident=0.8, likely=0.5)
    assert [m.verdict(c) for c in (0.8, 0.79, 0.5, 0.49, None)] == ["confident", "likely", "likely", "unsure", "unsure"]


def test_a_run_with_references_is_judged_by_its_own_confident_threshold() -> None:
    """With `confident_references` set, a run analysed with references is confident from that threshold and a
    run alone only from `confident`; without it, one threshold serves both."""
    m = Model((), 0.0, 1.0, (), confident=0.8, likely=0.5, confident_references=0.6)
    assert [m.verdict(0.7), m.verdict(0.7, references=True), m.verdict(0.55, references=True)] == [
        "likely", "confident", "likely"]
    one = Model((), 0.0, 1.0, (), confident=0.8)
    assert one.verdict(0.7, references=True) == "likely" and one.verdict(0.8, references=True) == "confident"


def test_the_references_threshold_round_trips_and_an_older_file_has_one_threshold() -> None:
    """A model file keeps the threshold for runs with references; a file written without one reads None."""
    m = Model((), 0.0, 1.0, (), confident=0.8, confident_references=0.65)
    back = model_from_dict(json.loads(json.dumps(m.to_dict())))
    assert back.confident_references == 0.65 and back.confident == 0.8
    old = m.to_dict()
    old["thresholds"] = {"confident": 0.8, "likely": 0.5}
    assert model_from_dict(old).confident_references is None


def test_a_platt_references_term_moves_only_runs_analysed_with_references() -> None:
    """The sixth Platt coefficient weighs whether the run had references; a model of five reads both settings alike."""
    five = Model((), 0.0, 1.0, (), platt=(0.1, 1.0, -0.2, 0.3, 0.5))
    six = Model((), 0.0, 1.0, (), platt=(0.1, 1.0, -0.2, 0.3, 0.5, 1.5))
    assert five.calibrate(0.6, 5, 1.0, 0.4, references=True) == five.calibrate(0.6, 5, 1.0, 0.4)
    assert six.calibrate(0.6, 5, 1.0, 0.4) == five.calibrate(0.6, 5, 1.0, 0.4)
    assert six.calibrate(0.6, 5, 1.0, 0.4, references=True) > six.calibrate(0.6, 5, 1.0, 0.4)


def test_a_run_with_references_reads_its_own_platt_coefficients() -> None:
    """With `platt_references` set, a run analysed with references is calibrated by those coefficients and a run
    alone by `platt`; the file keeps them, and a file written without them reads None (one calibrator for both)."""
    m = Model((), 0.0, 1.0, (), platt=(0.0, 1.0, 0.0, 0.0, 0.0), platt_references=(2.0, 1.0, 0.0, 0.0, 0.0))
    assert m.calibrate(0.5, 5) == pytest.approx(0.5)
    assert m.calibrate(0.5, 5, references=True) == pytest.approx(1 / (1 + math.exp(-2.0)))
    back = model_from_dict(json.loads(json.dumps(m.to_dict())))
    assert back.platt_references == m.platt_references and back.calibrate(0.5, 5, references=True) == m.calibrate(
        0.5, 5, references=True)
    one = m.to_dict()
    del one["platt_references"]
    assert model_from_dict(one).platt_references is None


def test_the_shipped_model_is_never_confident_of_a_run_alone() -> None:
    """On suites its trees never saw, no confidence of a run analysed alone was right 90 % of the time, so the
    shipped model says at most `likely` of one; with references a sure enough best candidate is `confident`."""
    m = load_model()
    assert m is not None and m.confident > 1.0 and m.confident_references is not None
    assert m.verdict(0.999) == "likely" and m.verdict(0.999, references=True) == "confident"
    assert m.verdict(m.confident_references - 1e-6, references=True) == "likely"


def test_rerank_reads_whether_the_analysis_had_references(run: Run) -> None:
    """The same ranked steps are more confident, and judged by the references threshold, when the analysis
    compared the run with passing runs of its agent."""
    from dataclasses import replace

    a = analyze(run, top=100_000)
    m = replace(_stump("hand_rank_rel", 0.999, 0.0, 5.0), platt=(0.0, 0.0, 0.0, 0.0, 0.0, 2.0), confident=0.95,
                confident_references=0.8)
    alone, refs = rerank(a, m), rerank(replace(a, references=("passing-1",)), m)
    assert [c.step_id for c in refs.root_causes] == [c.step_id for c in alone.root_causes]
    assert alone.root_causes[0].confidence == pytest.approx(0.5) and alone.verdict == "likely"
    assert refs.root_causes[0].confidence == pytest.approx(1 / (1 + math.exp(-2.0))) and refs.verdict == "confident"


def test_softmax_sums_to_one_and_keeps_order() -> None:
    """Within a run, probabilities sum to 1 and follow the log-odds."""
    p = softmax([1.0, 3.0, -2.0])
    assert sum(p) == pytest.approx(1.0) and p[1] > p[0] > p[2]


def test_model_round_trips_through_json() -> None:
    """model_from_dict(to_dict(m)) scores as m does."""
    m = _stump("x", 1.0, 0.3, -0.4)
    back = model_from_dict(json.loads(json.dumps(m.to_dict())))
    assert back.raw({"x": 2.0}) == m.raw({"x": 2.0}) and back.feature_names == m.feature_names


def test_rerank_orders_by_the_model_and_sets_confidence_and_verdict(run: Run) -> None:
    """A model that prefers the last-ranked step puts it first; every candidate gets a confidence."""
    a = analyze(run, top=100_000)
    assert len(a.root_causes) >= 2
    m = _stump("hand_rank_rel", 0.999, 0.0, 5.0)
    b = rerank(a, m)
    assert b.root_causes[0].step_id == a.root_causes[-1].step_id
    assert all(c.confidence is not None for c in b.root_causes)
    assert b.verdict in ("confident", "likely", "unsure")
    d = b.to_dict()
    assert d["verdict"] == b.verdict and d["root_causes"][0]["confidence"] == b.root_causes[0].confidence


def test_a_calibrator_reading_the_hand_score_changes_confidences_but_not_the_order(run: Run) -> None:
    """The order is the trees' probability: a Platt term on the hand score, however heavy, only says how sure
    to be, so the last-ranked step the trees prefer stays first."""
    from dataclasses import replace

    a = analyze(run, top=100_000)
    m = _stump("hand_rank_rel", 0.999, 0.0, 5.0)
    heavy = replace(m, platt=(0.0, 1.0, 0.0, 0.0, 50.0))
    b, h = rerank(a, m), rerank(a, heavy)
    assert [c.step_id for c in h.root_causes] == [c.step_id for c in b.root_causes]
    assert h.root_causes[0].step_id == a.root_causes[-1].step_id
    assert [c.confidence for c in h.root_causes] != [c.confidence for c in b.root_causes]


def test_shipped_model_is_small_and_used_by_analyze(run: Run) -> None:
    """The shipped model is under 300 KB; analyze(model="default") keeps `top` candidates with confidences."""
    assert DEFAULT_PATH.stat().st_size < 300_000
    assert load_model("default") is load_model(DEFAULT_PATH)
    a = analyze(run, top=2, model="default")
    assert len(a.root_causes) <= 2
    assert all(c.confidence is not None and 0.0 <= c.confidence <= 1.0 for c in a.root_causes)
    assert a.verdict in ("confident", "likely", "unsure")


def test_analyze_ranks_with_the_shipped_model_unless_told_none(run: Run) -> None:
    """Since the model beat the hand ranking by suite and by route left out, analyze uses it unless model=None."""
    default, hand = analyze(run, top=2), analyze(run, top=2, model=None)
    assert default.verdict in ("confident", "likely", "unsure")
    assert all(c.confidence is not None for c in default.root_causes)
    assert hand.verdict is None and all(c.confidence is None for c in hand.root_causes)


def test_unsure_text_says_what_would_settle_it(run: Run) -> None:
    """When the verdict is unsure, the text names a passing run of the same input and --judge."""
    from dataclasses import replace

    from trajdebug.report.analysis import analysis_lines, analysis_markdown

    a = analyze(run, top=100_000)
    never_sure = replace(_stump("hand_top", 0.5, 0.0, 1.0), likely=1.5, confident=2.0)
    text = " ".join(" ".join(analysis_lines(rerank(a, never_sure, top=3))).split())  # as read, not as wrapped
    assert "verdict: unsure" in text and "passing run of the same input" in text and "--judge" in text
    sure = replace(_stump("hand_top", 0.5, 0.0, 1.0), likely=0.0, confident=0.0)
    md = analysis_markdown(rerank(a, sure, top=3))
    assert "verdict: confident" in md and "--judge" not in md


def test_platt_calibration_is_monotone_in_the_probability() -> None:
    """With Platt scaling, a higher normalized score never gets a lower confidence."""
    m = Model((), 0.0, 1.0, (), platt=(0.2, 1.3, -0.4))
    confs = [m.calibrate(p, 10) for p in (0.01, 0.2, 0.5, 0.9, 0.999)]
    assert confs == sorted(confs) and all(0.0 < c < 1.0 for c in confs)


def test_platt_with_a_margin_term_is_surer_of_a_clear_winner_than_of_a_near_tie() -> None:
    """The fourth Platt coefficient weighs the margin over the runner-up: the same probability reads
    surer when the next step is far behind, and a model file keeps all four coefficients."""
    m = Model((), 0.0, 1.0, (), platt=(-1.0, 0.5, 0.0, 0.8))
    assert m.calibrate(0.5, 10, margin=3.0) > m.calibrate(0.5, 10, margin=0.1)
    assert model_from_dict(m.to_dict()).platt == (-1.0, 0.5, 0.0, 0.8)
    three = Model((), 0.0, 1.0, (), platt=(0.2, 1.3, -0.4))
    assert three.calibrate(0.5, 10, margin=5.0) == three.calibrate(0.5, 10)


def test_margins_are_the_log_ratio_to_the_best_other_step() -> None:
    """The best step's margin is over the runner-up (positive), every other step's is behind the best
    (negative); a lone step reads the cap."""
    ms = margins([0.6, 0.3, 0.1])
    assert ms[0] == pytest.approx(math.log(2.0)) and ms[1] == pytest.approx(math.log(0.5))
    assert ms[2] == pytest.approx(math.log(0.1 / 0.6))
    assert margins([1.0]) == [MARGIN_CAP]


def test_nothing_ranked_means_no_verdict(tmp_path: Path) -> None:
    """A run where nothing failed has no candidates and no verdict, with a model too."""
    path = tmp_path / "ok.jsonl"
    with trajdebug.run("fine", path=path):
        plan("rome")
    [ok] = load_runs(path)
    a = analyze(ok, model="default")
    assert (a.root_causes, a.verdict) == ([], None)


def test_a_candidates_own_features_are_merged_under_ranker_names(run: Run) -> None:
    """Every ranked step's own `features` (the evidence stages) join its row under ``ranker:`` names,
    so a same-named feature of this module keeps its own scale."""
    a = analyze(run)
    every = a.localization.ranked_all
    assert len(every) >= len(a.root_causes) > 0
    rows = features(a)
    for c in every:
        row = rows[(c.run_id, c.step_id)]
        assert {f"ranker:{k}" for k in c.features} <= set(row)
        assert all(row[f"ranker:{k}"] == float(v) for k, v in c.features.items())


def test_raw_all_scores_every_row_as_raw_does_walking_each_cell_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """raw_all gives each row exactly raw()'s log-odds, on the shipped model and on rows at, between and beyond
    its thresholds, and walks the trees once per cell of thresholds (rows between the same thresholds share it)."""
    import random

    m = load_model("default")
    assert m is not None
    rng = random.Random(3)
    cut = learned.splits(m)
    assert cut is not None
    rows: list[dict[str, float]] = []
    for k in range(400):
        row: dict[str, float] = {}
        for i, ts in zip(cut.used, cut.cuts, strict=True):
            t = rng.choice(ts)
            row[m.feature_names[i]] = rng.choice((t, t + 1e-9, t - 1e-9, t * 2.0, 0.0, -t))
        rows.append(row)
        rows.append(dict(row))  # the same row again: the same cell
        if k % 50 == 0:
            rows.append({**row, m.feature_names[0]: math.nan})  # no cell: walked on its own
    walked: list[int] = []
    real = Model._walk
    monkeypatch.setattr(Model, "_walk", lambda self, x: (walked.append(1), real(self, x))[1])
    got = m.raw_all(rows)
    assert len(walked) == len({cut.cell([float(r.get(n, 0.0)) for n in m.feature_names]) for r in rows if not any(
        math.isnan(v) for v in r.values())}) + 8
    monkeypatch.setattr(Model, "_walk", real)
    want = [m.raw(r) for r in rows]
    assert [repr(v) for v in got] == [repr(v) for v in want]


def test_a_model_with_a_nan_threshold_is_walked_row_by_row() -> None:
    """A threshold no value is ordered against (NaN: every comparison false) leaves raw_all to raw()."""
    m = Model(("x",), 0.0, 1.0, (((0, math.nan, 1, 2, 0.0), (-1, 0.0, -1, -1, -1.0), (-1, 0.0, -1, -1, 2.0)),))
    assert learned.splits(m) is None
    assert m.raw_all([{"x": 0.0}, {"x": 5.0}]) == [m.raw({"x": 0.0}), m.raw({"x": 5.0})] == [2.0, 2.0]


def test_features_read_the_pipelines_graph_only_when_it_is_of_the_analyzed_run(run: Run) -> None:
    """features() with the analyzed run's own graph equals features() building one; a graph of another run (here
    the same steps without their edges, whose fan-in differs) is not used."""
    from dataclasses import replace

    from trajdebug.core.graph import DependencyGraph

    a = analyze(run, model=None)
    assert features(a, DependencyGraph(a.run)) == features(a)
    bare = DependencyGraph(replace(a.run, steps=tuple(replace(s, deps=()) for s in a.run.steps)))
    assert any(len(bare.parents(s.step_id)) != len(DependencyGraph(a.run).parents(s.step_id)) for s in a.run.steps)
    assert features(a, bare) == features(a)


def _cand(sid: str, faulty: float = 1.0, **evidence: float) -> learned.Candidate:
    """A candidate whose features carry ``evidence:<signal>`` values (keyword names: ``__`` for ``:``, ``_`` for
    ``-``) and ``faulty``."""
    feats = {"evidence:" + k.replace("__", ":").replace("_", "-"): v for k, v in evidence.items()}
    return learned.Candidate(sid, 1.0, (), (), features={**feats, "faulty": faulty})


def test_one_comparison_with_other_inputs_does_not_make_a_best_candidate_confident() -> None:
    """A best candidate whose only evidence is one comparison with passing runs of other inputs (a relay of a
    wrong value upstream differs from them as much) is at most likely; a passing run of the same input, or any
    finding about this run alone beside the comparison, leaves the verdict to the confidence (round 58)."""
    quiet = _cand("b", faulty=0.0)
    assert learned.elsewhere_only([_cand("a", reference__grounded=0.59), quiet])
    assert learned.elsewhere_only([_cand("a", reference__grounded=0.59)])
    assert not learned.elsewhere_only([_cand("a", reference__same_input=0.75), quiet])
    assert not learned.elsewhere_only([_cand("a", reference__grounded=0.5, llm_output=0.3), quiet])
    assert not learned.elsewhere_only([_cand("a", reference__kept=0.5, lineage__dropped=0.45), quiet])
    assert not learned.elsewhere_only([_cand("a", reference__grounded=0.0, llm_output=0.3), quiet])


def test_comparisons_with_other_inputs_beside_a_faulty_runner_up_do_not_make_a_best_candidate_confident() -> None:
    """Several comparisons with other inputs' passing runs stand when the runner-up is not faulty; beside a
    runner-up faulty on its own evidence they single out neither."""
    top = _cand("a", reference__zero=0.57, reference__ratio=0.28)
    assert not learned.elsewhere_only([top, _cand("b", faulty=0.0, lineage__dropped=0.1)])
    assert learned.elsewhere_only([top, _cand("b", faulty=1.0, lineage__dropped=0.48)])
    assert not learned.elsewhere_only([top])


def test_a_best_candidate_with_no_evidence_or_sound_findings_only_is_not_judged_here() -> None:
    """No evidence signal at all (a structural lead) is the calibration's to judge, and a sound finding is no
    evidence signal: neither is demoted by this rule."""
    bare = learned.Candidate("a", 1.0, (), (), features={"sound:reference:grounded": 0.0, "faulty": 0.0})
    assert learned.evidence_signals(bare) == set()
    assert not learned.elsewhere_only([bare, _cand("b")])
    assert not learned.elsewhere_only([])


def test_rerank_says_likely_where_the_confidence_alone_would_say_confident(run: Run) -> None:
    """The same confident-enough best candidate is confident with its own finding and likely with one comparison
    with other inputs only; the order and confidences do not change."""
    from dataclasses import replace

    a = analyze(run, top=100_000)
    m = replace(_stump("hand_rank_rel", 0.999, 0.0, 5.0), likely=0.0, confident=0.0)
    loc = a.localization
    first = rerank(a, m).root_causes[0].step_id

    def with_evidence(**ev: float) -> object:
        mine = {"evidence:" + k.replace("__", ":").replace("_", "-"): v for k, v in ev.items()}
        ranked = tuple(
            replace(c, features={
                **{k: v for k, v in c.features.items() if not k.startswith("evidence:")},
                **(mine if c.step_id == first else {"faulty": 0.0}),
            })
            for c in loc.ranked_all
        )
        return rerank(replace(a, localization=replace(loc, ranked_all=ranked)), m)

    own = with_evidence(llm_output=0.4)
    other = with_evidence(reference__grounded=0.6)
    assert own.verdict == "confident" and other.verdict == "likely"  # type: ignore[attr-defined]
    assert [c.step_id for c in other.root_causes] == [c.step_id for c in own.root_causes]  # type: ignore[attr-defined]
    assert other.root_causes[0].step_id == first  # type: ignore[attr-defined]
    assert learned.ELSEWHERE_NOTE in other.root_causes[0].reasons  # type: ignore[attr-defined]
    assert learned.ELSEWHERE_NOTE not in own.root_causes[0].reasons  # type: ignore[attr-defined]
