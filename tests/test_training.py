"""Fitting the learned ranker: trees exported to plain Python, warm starts, and a corpus that refuses the held-out suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from trajdebug.analysis.learned import Model, softmax


pytest.importorskip("sklearn")

from trajdebug import training


def _cases(feature: str, n: int = 12) -> list[tuple[list[dict[str, float]], list[int]]]:
    """Runs of three steps where the root is the one step with ``feature`` set."""
    return [([{feature: 0.0, "noise": i % 3}, {feature: 1.0, "noise": (i + 1) % 3}, {"noise": 2.0}], [0, 1, 0]) for i in range(n)]


def test_a_fitted_model_ranks_the_separating_feature_first() -> None:
    """Fitted on runs whose root has feature x, the plain-Python model puts the x step first in a new run."""
    m = training.fit(_cases("x"), seed=1, params={"n_estimators": 10, "max_depth": 2, "min_samples_leaf": 1})
    probs = softmax([m.raw(r) for r in [{"x": 0.0}, {"x": 1.0}, {}]])
    assert max(range(3), key=probs.__getitem__) == 1
    assert "x" in m.feature_names


def test_a_lambdarank_model_exported_to_plain_python_ranks_the_separating_feature_first() -> None:
    """LambdaMART trees exported to the plain format rank the separating feature first."""
    pytest.importorskip("lightgbm")
    params = {**training.LAMBDARANK_PARAMS, "n_estimators": 10, "min_child_samples": 1, "subsample": 1.0, "colsample_bytree": 1.0}
    m = training.fit(_cases("x"), seed=1, params=params)
    probs = softmax([m.raw(r) for r in [{"x": 0.0, "noise": 1.0}, {"x": 1.0, "noise": 1.0}, {"noise": 2.0}]])
    assert max(range(3), key=probs.__getitem__) == 1


def _conflict(n_x: int, n_y: int) -> list[tuple[list[dict[str, float]], list[int]]]:
    """``n_x`` runs whose root is the x step, then ``n_y`` runs whose root is the y step (one step has each)."""
    run = [{"x": 1.0, "y": 0.0}, {"x": 0.0, "y": 1.0}]
    return [(run, [1, 0])] * n_x + [(run, [0, 1])] * n_y


@pytest.mark.parametrize("objective", ["lambdarank", "pointwise"])
def test_case_weights_decide_which_source_the_model_follows(objective: str) -> None:
    """Two sources disagree; unweighted, the bigger one wins; weighted so each counts alike, the heavier weight wins."""
    if objective == "lambdarank":
        pytest.importorskip("lightgbm")
        params = {**training.LAMBDARANK_PARAMS, "n_estimators": 10, "min_child_samples": 1, "subsample": 1.0,
                  "colsample_bytree": 1.0, "offset": 0.0}
    else:
        params = {"n_estimators": 10, "max_depth": 1, "min_samples_leaf": 1}
    cases = _conflict(30, 10)
    plain = training.fit(cases, seed=1, params=params)
    assert plain.raw({"x": 1.0}) > plain.raw({"y": 1.0})
    weighted = training.fit(cases, seed=1, params=params, weights=[0.2] * 30 + [3.0] * 10)
    assert weighted.raw({"y": 1.0}) > weighted.raw({"x": 1.0})
    with pytest.raises(ValueError, match="weights"):
        training.fit(cases, params=params, weights=[1.0])


def test_the_hand_rank_prior_is_one_tree_giving_offset_over_rank() -> None:
    """With ``offset`` a, a model with no other signal scores a step a / (its hand rank)."""
    pytest.importorskip("lightgbm")
    tree = training._offset_tree(3.0)
    m = training.assemble(0.0, 1.0, [tree])
    for rank in (1, 2, 3, 7, 20):
        assert m.raw({"hand_rank_inv": 1 / rank}) == pytest.approx(3.0 / rank)
    assert m.raw({"hand_rank_inv": 1 / 40}) == pytest.approx(3.0 / 21)


def test_warm_start_keeps_the_prior_and_learns_the_new_agent() -> None:
    """Boosting on from a prior keeps its trees first (and its calibration) and learns what the prior did not know."""
    prior = training.fit(_cases("x"), seed=1, params={"n_estimators": 5, "max_depth": 2, "min_samples_leaf": 1})
    prior = Model(prior.feature_names, prior.init, prior.rate, prior.trees, confident=0.7, platt=(0.1, 1.0, 0.0, 0.5),
                  confident_references=0.6, platt_references=(0.3, 1.0, 0.0, 0.5))
    fitted = training.fit(_cases("y"), seed=1, prior=prior)
    assert len(fitted.trees) > len(prior.trees) and fitted.confident == 0.7 and fitted.platt == prior.platt
    assert fitted.confident_references == 0.6 and fitted.platt_references == prior.platt_references
    assert fitted.raw({"y": 1.0}) > fitted.raw({"y": 0.0})
    assert fitted.trees[: len(prior.trees)] == tuple(
        tuple((fitted.feature_names.index(prior.feature_names[f]) if f >= 0 else -1, th, lo, hi, v) for f, th, lo, hi, v in t)
        for t in prior.trees
    )


def test_a_prior_without_positives_to_learn_from_is_returned_as_it_is() -> None:
    """No labelled root among the cases: the prior comes back unchanged."""
    prior = Model(("x",), 0.0, 1.0, ())
    assert training.fit([([{"x": 1.0}], [0])], prior=prior) is prior


def test_the_corpus_refuses_a_held_out_suite_before_generating_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """benchmarks.corpus.suite never reads or generates a suite named in HELD_OUT (suites zzzzr and zzzzs, written blind)."""
    import benchmarks.corpus as corpus

    for name in ("suite_zzzzr", "suite_zzzzs"):
        with pytest.raises(ValueError, match="held out"):
            next(corpus.suite(name, tmp_path))
    assert not any(tmp_path.iterdir())


def test_the_suites_scored_once_are_trained_on_and_said_to_be_development() -> None:
    """Suites b to zzzzq are in the corpus, blind.STATUS no longer calls them held out; suites zzzzr and zzzzs are held out."""
    from benchmarks.blind import STATUS, held_out
    from benchmarks.corpus import DEV_SUITES, HELD_OUT

    for name in ("suite_b", "suite_c", "suite_e", "suite_f", "suite_g", "suite_h", "suite_i", "suite_j", "suite_k", "suite_l", "suite_m", "suite_n", "suite_o", "suite_p", "suite_q", "suite_r", "suite_s", "suite_t", "suite_u", "suite_v", "suite_w", "suite_x", "suite_y", "suite_z", "suite_za", "suite_zb", "suite_zc", "suite_zd", "suite_ze", "suite_zf", "suite_zg", "suite_zh", "suite_zi", "suite_zj", "suite_zk", "suite_zl", "suite_zm", "suite_zn", "suite_zo", "suite_zp", "suite_zq", "suite_zr", "suite_zs", "suite_zt", "suite_zu", "suite_zv", "suite_zw", "suite_zx", "suite_zy", "suite_zz", "suite_zza", "suite_zzb", "suite_zzc", "suite_zzd", "suite_zze", "suite_zzf", "suite_zzg", "suite_zzh", "suite_zzi", "suite_zzj", "suite_zzk", "suite_zzl", "suite_zzm", "suite_zzn", "suite_zzo", "suite_zzp", "suite_zzq", "suite_zzr", "suite_zzs", "suite_zzt", "suite_zzu", "suite_zzv", "suite_zzw", "suite_zzx", "suite_zzy", "suite_zzz", "suite_zzza", "suite_zzzb", "suite_zzzc", "suite_zzzd", "suite_zzze", "suite_zzzf", "suite_zzzg", "suite_zzzh", "suite_zzzi", "suite_zzzj", "suite_zzzk", "suite_zzzl", "suite_zzzm", "suite_zzzn", "suite_zzzo", "suite_zzzp", "suite_zzzq", "suite_zzzr", "suite_zzzs", "suite_zzzt", "suite_zzzu", "suite_zzzv", "suite_zzzw", "suite_zzzx", "suite_zzzy", "suite_zzzz", "suite_zzzza", "suite_zzzzb", "suite_zzzzc", "suite_zzzzd", "suite_zzzze", "suite_zzzzf", "suite_zzzzg", "suite_zzzzh", "suite_zzzzi", "suite_zzzzj", "suite_zzzzk", "suite_zzzzl", "suite_zzzzm", "suite_zzzzn", "suite_zzzzo", "suite_zzzzp", "suite_zzzzq"):
        assert name in DEV_SUITES and name not in HELD_OUT
        assert not held_out(name)
        assert STATUS[name].startswith("development (scored once held out on 2026-")
    assert "its misses studied since 2026-12-02" in STATUS["suite_i"]
    assert "its misses studied since 2026-12-02" in STATUS["suite_j"]
    assert "its misses studied since 2026-12-03" in STATUS["suite_k"]
    assert "its misses studied since 2026-12-03" in STATUS["suite_l"]
    assert "its misses studied since 2026-12-03" in STATUS["suite_m"]
    assert "its misses studied since 2026-12-03" in STATUS["suite_n"]
    assert "its misses studied since 2026-12-03" in STATUS["suite_o"]
    assert HELD_OUT == frozenset({"suite_zzzzr", "suite_zzzzs"}) and all(map(held_out, HELD_OUT))
    assert not HELD_OUT & set(DEV_SUITES)
    assert not any(held_out(name) for name in DEV_SUITES)


def test_a_balanced_recipe_weighs_every_suite_alike_and_drops_features_by_prefix() -> None:
    """balance=1: each suite's cases weigh the same in all (mean 1); drop leaves out the named feature families."""
    from benchmarks.corpus import Case
    from benchmarks.learning import Recipe

    def case(suite: str) -> Case:
        return Case(suite, "sdk", "f", "a", suite, [(None, "s1")], [(None, "s1")], [{"ranker:x": 1.0, "pos": 0.5}])

    cases = [case("big")] * 9 + [case("small")] * 3
    w = Recipe(balance=1.0).weights(cases)
    assert w is not None and sum(w[:9]) == pytest.approx(sum(w[9:])) and sum(w) == pytest.approx(len(cases))
    assert Recipe().weights(cases) is None
    assert Recipe(drop=("ranker:",)).rows(cases[0]) == [{"pos": 0.5}]


def test_a_recipe_dropping_text_lengths_never_reads_the_lengths_a_route_sets() -> None:
    """Runs whose root is the one step with a long output: a recipe dropping `TEXT_LENGTHS` reads no text length,
    the same recipe keeping them does (a length measures how a route serializes steps, not what went wrong)."""
    from benchmarks.corpus import Case
    from benchmarks.learning import RECIPE, TEXT_LENGTHS, Recipe, fit

    def case(i: int) -> Case:
        rows = [{"output_log": 2.0 + (i % 3) / 10, "input_log": 3.0, "hand_rank_inv": 1.0},
                {"output_log": 6.0 + (i % 4) / 10, "input_log": 5.0, "hand_rank_inv": 0.5},
                {"output_log": 1.0, "input_log": 3.0, "hand_rank_inv": 1 / 3}]
        keys = [(None, f"s{j}") for j in range(3)]
        return Case("bakery", "sdk", "f", "oven", f"c{i}", [keys[1]], keys, rows)

    cases = [case(i) for i in range(40)]
    dropped = Recipe(RECIPE.params, RECIPE.balance, TEXT_LENGTHS, RECIPE.cap, RECIPE.boost, RECIPE.group)
    kept = Recipe(RECIPE.params, RECIPE.balance, (), RECIPE.cap, RECIPE.boost, RECIPE.group)
    assert not set(TEXT_LENGTHS) & set(fit(cases, recipe=dropped).feature_names)
    assert set(TEXT_LENGTHS) & set(fit(cases, recipe=kept).feature_names)


def test_a_capped_recipe_shrinks_only_the_suites_bigger_than_the_cap() -> None:
    """cap=3: a suite of 9 cases weighs as much as 3 cases in all, a suite of 2 keeps 1 a case (before the mean is 1)."""
    from benchmarks.corpus import Case
    from benchmarks.learning import Recipe

    def case(suite: str) -> Case:
        return Case(suite, "sdk", "f", "a", suite, [(None, "s1")], [(None, "s1")], [{"pos": 0.5}])

    w = Recipe(cap=3).weights([case("big")] * 9 + [case("small")] * 2)
    assert w is not None
    assert sum(w[:9]) / sum(w[9:]) == pytest.approx(3 / 2)
    assert w[9] == pytest.approx(3 * w[0])


def test_a_boosted_source_weighs_that_many_times_more_after_balance() -> None:
    """boost=(("lone", 3),): a case of the lone source weighs three times one of a same-sized other source."""
    from benchmarks.corpus import Case
    from benchmarks.learning import Recipe

    def case(suite: str) -> Case:
        return Case(suite, "sdk", "f", "a", suite, [(None, "s1")], [(None, "s1")], [{"pos": 0.5}])

    w = Recipe(balance=0.5, boost=(("lone", 3.0),)).weights([case("many")] * 4 + [case("lone")] * 4)
    assert w is not None and w[4] == pytest.approx(3 * w[0]) and sum(w) == pytest.approx(8)
    assert Recipe(boost=(("lone", 2.0),)).weights([case("many"), case("lone")]) == pytest.approx([2 / 3, 4 / 3])


def test_a_recipe_grouped_by_route_balances_routes_not_suites() -> None:
    """group="route", balance=1: two suites on one route share one route's weight; a lone route weighs as much."""
    from benchmarks.corpus import Case
    from benchmarks.learning import Recipe

    def case(suite: str, route: str) -> Case:
        return Case(suite, route, "f", "a", suite, [(None, "s1")], [(None, "s1")], [{"pos": 0.5}])

    cases = [case("one", "graph")] * 3 + [case("two", "graph")] * 3 + [case("log", "transcript")] * 2
    w = Recipe(balance=1.0, group="route").weights(cases)
    assert w is not None and sum(w[:6]) == pytest.approx(sum(w[6:]))


def test_run_relative_features_mark_the_earliest_ranked_steps_whatever_the_hand_order() -> None:
    """The variant search's derived features: order by position among the ranked steps, and who comes first."""
    from benchmarks.train_variants import relative

    rows = [{"pos_from_start": 0.8, "agent_change": 1.0}, {"pos_from_start": 0.2}, {"kind:llm": 1.0}]
    out = relative(rows)
    assert out[1]["rel_first"] == 1.0 and "rel_first" not in out[0]
    assert out[0]["rel_first_agent_change"] == 1.0 and out[0]["rel_order"] == 0.5
    assert "rel_order" not in out[2] and rows[1] == {"pos_from_start": 0.2}


def test_the_nested_confident_threshold_is_chosen_without_the_fold_it_is_scored_on() -> None:
    """A threshold that is right only on the rows it was chosen on shows as wrong nested: each fold is
    scored at the threshold the other folds chose."""
    from benchmarks.train import nested, threshold

    conf = [0.9, 0.5, 0.9, 0.8]
    ok = [True, False, False, True]
    assert threshold(conf[:2], ok[:2], min_rows=1) == 0.9
    assert nested(conf, ok, ["a", "a", "b", "b"], min_rows=1) == (0.0, 0.25)


def test_a_confident_threshold_must_select_enough_cases_or_there_is_none() -> None:
    """One right case at the top is no 90 % claim: below `MIN_SUPPORT` cases the threshold is `NEVER`."""
    from benchmarks.train import MIN_SUPPORT, NEVER, threshold

    assert threshold([0.99, 0.5, 0.4], [True, False, False]) == NEVER
    conf = [0.9] * MIN_SUPPORT + [0.5] * 10
    ok = [True] * MIN_SUPPORT + [False] * 10
    assert threshold(conf, ok) == 0.9


def test_platt_coefficients_weigh_zero_for_the_terms_a_calibrator_does_not_read() -> None:
    """A margin-only calibrator exports ``(a, 0, 0, d)``: the shipped model's Platt form reads it as it was fitted."""
    from types import SimpleNamespace

    from benchmarks.train import _platt

    rows = [{"top_p": 0.5, "probs": [0.5, p2], "case": SimpleNamespace(rows=[0, 1]), "top_ok": p2 < 0.2}
            for p2 in (0.05, 0.1, 0.15, 0.25, 0.3, 0.4) for _ in range(3)]
    _a, b, c, d = _platt(rows, "m")
    assert (b, c) == (0.0, 0.0) and d > 0


def test_a_platt_calibrator_reading_the_hand_score_weighs_it_and_older_models_read_as_before() -> None:
    """The hand score is a fifth Platt coefficient: a model that has it weighs a best candidate's evidence, one
    fitted before (four coefficients) calibrates exactly as it did."""
    old = Model((), 0.0, 1.0, (), platt=(0.1, 1.0, -0.2, 0.3))
    new = Model((), 0.0, 1.0, (), platt=(0.1, 1.0, -0.2, 0.3, 2.0))
    assert old.calibrate(0.6, 5, 1.0, hand=0.9) == old.calibrate(0.6, 5, 1.0)
    assert new.calibrate(0.6, 5, 1.0, hand=0.9) > new.calibrate(0.6, 5, 1.0, hand=0.1)


def _blind_rows(suite: str, n: int, right_share: float) -> list[dict[str, object]]:
    """Out-of-fold rows of one suite: the best candidate right when its hand score is high."""
    from types import SimpleNamespace

    out: list[dict[str, object]] = []
    for i in range(n):
        hand = (i % 10) / 10
        ok = hand >= 1 - right_share
        rows = [{"hand_score": hand}, {"hand_score": 0.05}]
        case = SimpleNamespace(suite=suite, rows=rows, with_references=lambda i=i: i % 2 == 1)
        out.append({"case": case, "probs": [0.6, 0.4], "top_p": 0.6, "top_ok": ok, "fold": "0"})
    return out


def test_the_blind_calibration_reads_only_framework_suites_and_learns_the_hand_score() -> None:
    """The shipped calibration is fitted on the framework suites alone (the fault-injection suite is not where
    the verdict is used) and, the probability alike everywhere, separates right from wrong by the hand score."""
    from benchmarks.train import _platt, blind

    rows = [*_blind_rows("suite_a", 60, 0.5), *_blind_rows("suite_b", 60, 0.5), *_blind_rows("quality", 200, 1.0)]
    b = blind(rows)
    assert b["n"] == 120 and set(b["by_suite"]) == {"suite_a", "suite_b"}
    assert b["top1"] == 0.5
    *_, e = _platt(rows[:120], "pnmh")
    assert e > 0


def test_each_suite_is_scored_at_the_threshold_chosen_without_it() -> None:
    """A suite whose confident cases are all wrong cannot lend its rows to its own threshold: the per-suite
    check counts it at the threshold the other suites chose."""
    from benchmarks.train import blind

    good = [r for s in ("suite_a", "suite_b", "suite_d", "suite_e") for r in _blind_rows(s, 60, 0.5)]
    bad = _blind_rows("suite_c", 60, 0.5)
    for r in bad:
        r["top_ok"] = not r["top_ok"]
    b = blind([*good, *bad])
    c = b["by_suite"]["suite_c"]
    assert c["confident"] > 0 and c["right"] == 0


def _setting_rows(suite: str, n: int) -> list[dict[str, object]]:
    """Out-of-fold rows of one suite in both settings: with references the best candidate is right from a hand
    score of 0.5, alone only from 0.8 (at one confidence a run alone is right less often)."""
    from types import SimpleNamespace

    out: list[dict[str, object]] = []
    for i in range(n):
        hand, refs = (i % 10) / 10, i % 20 >= 10
        rows = [{"hand_score": hand}, {"hand_score": 0.05}]
        case = SimpleNamespace(suite=suite, rows=rows, with_references=lambda refs=refs: refs)
        out.append({"case": case, "probs": [0.6, 0.4], "top_p": 0.6, "top_ok": hand >= (0.5 if refs else 0.8), "fold": "0"})
    return out


def test_a_threshold_per_setting_lets_runs_with_references_be_confident_sooner() -> None:
    """A calibrator reading the setting, with a threshold per setting, calls a run with references confident at a
    hand score a run alone needs more for, and each setting's nested precision is reported."""
    from benchmarks.train import SETTING_TERMS, _verdicts

    rows = [r for s in ("suite_a", "suite_b", "suite_c", "suite_d") for r in _setting_rows(s, 100)]
    v = _verdicts(rows, SETTING_TERMS, split=True)
    alone, refs = v["settings"]["alone"], v["settings"]["references"]
    assert refs["coverage"] > alone["coverage"] > 0
    assert alone["nested_precision"] == 1.0 and refs["nested_precision"] == 1.0
    assert v["settings"]["pooled"]["nested_confident"] == alone["nested_confident"] + refs["nested_confident"]


def test_the_threshold_per_setting_is_kept_only_when_precise_in_each_setting_and_covering_no_fewer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """blind keeps one threshold unless the per-setting rule is at least 90 % precise nested in both settings and
    its pooled nested coverage is no lower; kept, the model's references threshold is the per-setting one."""
    from benchmarks import train

    def fake(prec_alone: float, cov: float, split: bool) -> dict[str, object]:
        settings = {"alone": {"nested_precision": prec_alone}, "references": {"nested_precision": 0.93}}
        return {"nested_coverage": cov, "settings": settings, "confident": 0.8, "confident_references": 0.7, "split": split}

    for prec_alone, cov, kept in ((0.91, 0.25, True), (0.89, 0.25, False), (0.91, 0.19, False)):
        monkeypatch.setattr(train, "_verdicts", lambda rows, terms, split, p=prec_alone, c=cov: fake(
            p, c if split else 0.2, split))
        b = train.blind([])
        assert b["by_setting"]["kept"] is kept
        assert b["confident_references"] == (0.7 if kept else None)


def test_train_group_route_fits_every_fold_and_the_final_model_with_the_shipped_recipe_counted_by_route(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``--group route`` changes only the recipe's group: every cross-validation and the final fit get
    `RECIPE` counted by route, and the model's meta says so; without it they get `RECIPE` itself."""
    from collections import defaultdict
    from dataclasses import replace

    from benchmarks import corpus, learning, train

    seen: list[object] = []
    monkeypatch.setattr(learning, "cross_validate", lambda cases, split, recipe=None, **kw: seen.append(recipe) or [])
    monkeypatch.setattr(train, "_calibration", lambda k5: {"bins": [], "ece": 0.0, "likely": 0.5, "method": "isotonic"})
    monkeypatch.setattr(train, "blind", lambda loso: defaultdict(float))
    monkeypatch.setattr(train, "final", lambda cases, oof, cal, meta, recipe=None: seen.append(recipe) or Model((), 0.0, 1.0, ()))
    monkeypatch.setattr(train, "diagram", lambda *a: None)
    monkeypatch.setattr(train, "_render_docs", lambda *a: 0)
    monkeypatch.setattr(learning, "tells", lambda cases: {})
    monkeypatch.setattr(corpus, "load", lambda path: [])
    monkeypatch.setattr(train, "RESULTS", tmp_path / "results.json")
    monkeypatch.setattr(Model, "to_dict", lambda self: {})
    (tmp_path / "corpus.jsonl").write_text("")
    args = ["--corpus", str(tmp_path / "corpus.jsonl"), "--out", str(tmp_path / "m.json"), "--card", str(tmp_path / "c.md")]
    for extra, want in (([], learning.RECIPE), (["--group", "route"], replace(learning.RECIPE, group="route"))):
        seen.clear()
        assert train.main(args + extra) == 0
        assert seen == [want] * 4
        assert train.json.loads(train.RESULTS.read_text())["meta"]["group"] == want.group


def _recal_rows(suites: tuple[str, ...] = ("suite_zj", "suite_zk", "suite_zl"), per: int = 60) -> list[object]:
    """Rows of a few suites: a surer best candidate (a higher probability) is right more often, in both settings."""
    from benchmarks.recalibrate import Row

    rows = []
    for s in suites:
        for i in range(per):
            p = 0.05 + 0.9 * i / per
            ok = (i >= per // 2) != (i in (3, 4, per - 2, per - 1))
            rows.append(Row(s, f"{s}/{i}", bool(i % 2), p, 8, float(i % 4), (i % 5) / 5, ok))
    return rows


def test_recalibration_never_fits_on_the_suite_it_scores() -> None:
    """Leave one suite out: every row is scored by a calibrator fitted on rows of the other suites only, and the
    fit of every suite sees all the others."""
    from benchmarks.recalibrate import leave_one_suite_out

    rows = _recal_rows()
    fitted: list[set[str]] = []

    def spy(rs: object) -> Model:
        suites = {r.suite for r in rs}  # type: ignore[attr-defined]
        fitted.append(suites)
        return Model((), 0.0, 1.0, (), meta={"suites": sorted(suites)})

    models = leave_one_suite_out(rows, spy)  # type: ignore[arg-type]
    assert len(models) == len(rows) and len(fitted) == 3
    for r, m in zip(rows, models, strict=True):
        assert r.suite not in m.meta["suites"]  # type: ignore[attr-defined, index]
        assert len(m.meta["suites"]) == 2  # type: ignore[index]


def test_recalibration_fits_a_threshold_per_setting_and_keeps_the_trees() -> None:
    """The refit is a Platt calibrator on the shipped terms with a ``confident`` threshold for each setting; the
    recalibrated model keeps its trees and features (so every ranking) and the calibrator it replaced."""
    from benchmarks.recalibrate import fit, recalibrated

    rows = _recal_rows()
    m = fit(rows)  # type: ignore[arg-type]
    assert m.platt is not None and len(m.platt) == 5 and m.platt[1] > 0
    assert m.confident_references is not None and 0.5 < m.confident < 1 and 0.5 < m.confident_references < 1
    shipped = Model(("x",), 0.0, 1.0, (((-1, 0.0, 0, 0, 1.0),),), platt=(0.0, 1.0, 0.0, 0.0, 0.0), confident=0.8,
                    meta={"cases": {}})
    res = {"final": {"platt": list(m.platt), "confident": m.confident, "confident_references": m.confident_references},
           "suites": ["suite_zj"], "rows": len(rows), "terms": "pnmh"}
    new = recalibrated(shipped, res)
    assert new.trees == shipped.trees and new.feature_names == shipped.feature_names
    assert new.platt == m.platt and new.confident_references == m.confident_references
    assert new.meta is not None and new.meta["recalibrated"]["before"]["confident"] == 0.8


def test_recalibration_ships_only_when_every_condition_of_the_rule_holds() -> None:
    """Nested precision >= 89.5 %, nested ECE <= 0.05, and above the shipped calibrator's precision: all three."""
    from benchmarks.recalibrate import decide

    def res(prec: float, err: float) -> dict[str, object]:
        return {"pooled": {"precision": prec, "ece": err}}

    assert decide(res(0.85, 0.08), res(0.90, 0.04))[0]
    assert not decide(res(0.85, 0.08), res(0.89, 0.04))[0]
    assert not decide(res(0.85, 0.08), res(0.90, 0.06))[0]
    assert not decide(res(0.91, 0.03), res(0.90, 0.04))[0]


def test_the_recalibration_reads_only_suites_the_model_never_trained_on() -> None:
    """The rows' suites are framework suites absent from the model's training data, never a held-out one."""
    from benchmarks.corpus import HELD_OUT
    from benchmarks.learning import FRAMEWORK
    from benchmarks.recalibrate import unseen_suites

    m = Model((), 0.0, 1.0, (), meta={"cases": {"suite_a": 80, "suite_zj": 80}})
    suites = unseen_suites(m)
    assert "suite_a" not in suites and "suite_zj" not in suites and "suite_zk" in suites
    assert all(s in FRAMEWORK and s not in HELD_OUT for s in suites)


def test_the_shipped_model_thresholds_load_and_are_the_ones_the_recalibration_measures() -> None:
    """model.json's `confident` threshold(s) load within the verdict's range, and the calibrator the
    recalibration measures as shipped is the file's own (or the one a recalibration recorded it replaced)."""
    from benchmarks.recalibrate import shipped_calibrator

    from trajdebug.analysis.learned import load_model

    m = load_model("default")
    assert m is not None and m.platt is not None
    assert m.likely < m.confident <= 1.01
    assert m.confident_references is None or m.likely < m.confident_references <= 1.01
    base = shipped_calibrator(m)
    before = ((m.meta or {}).get("recalibrated") or {}).get("before")
    assert (base.platt, base.confident) == ((tuple(before["platt"]), before["confident"]) if before else (m.platt, m.confident))


def test_against_the_shipped_model_each_source_is_scored_by_a_model_that_never_saw_it() -> None:
    """Round 56's rule: the shipped model's stored left-out row where it trained on a source, its plain predictions
    where it never saw the suite; the retrained recipe's and the hand ranking's from the new results."""
    from benchmarks import train
    from benchmarks.corpus import Case

    def case(suite: str, i: int, root_first: bool) -> Case:
        keys = [(None, "a"), (None, "b")]
        return Case(suite, "r", "f", "x", f"{suite}/{i}", [keys[0] if root_first else keys[1]], keys,
                    [{"hand_score": 1.0}, {"hand_score": 0.5}])

    cases = [case("suite_a", i, i < 3) for i in range(4)] + [case("suite_zzf", i, i < 1) for i in range(4)]
    row = {"n": 4.0, "learned_top1": 0.5, "hand_top1": 0.75, "won": 0.0, "lost": 1.0}
    res = {"loso": {"all": {**row, "n": 8.0}, "suite_a": row, "suite_zzf": {**row, "learned_top1": 0.25, "hand_top1": 0.25}},
           "loro": {"all": {**row, "n": 8.0, "learned_top1": 0.6, "hand_top1": 0.5}},
           "loso_framework": {"all": {**row, "learned_top1": 0.6, "hand_top1": 0.5}},
           "kfold": {"whowhen": {"learned_top1": 0.4}},
           "calibration": {"ece": 0.04, "nested_precision": 0.9, "precision_confident": 0.9, "coverage_confident": 0.2,
                           "nested_coverage": 0.2}}
    stored = {"loso": {"suite_a": {"n": 4.0, "learned_top1": 1.0}}}
    # No trees: every step scores alike, so the shipped model's plain best candidate is the hand ranking's first.
    shipped = Model((), 0.0, 1.0, (), meta={"cases": {"suite_a": 4}})
    a = train.against_shipped(cases, res, stored, shipped, ["suite_zzf"])
    assert a["per_source"]["suite_a"] == {"n": 4, "retrained": 2, "hand": 3, "shipped": 4, "shipped_n": 4, "shipped_from": "stored"}
    assert a["per_source"]["suite_zzf"] == {"n": 4, "retrained": 1, "hand": 1, "shipped": 1, "shipped_n": 4, "shipped_from": "plain"}
    assert a["all"]["retrained"] == 3 and a["all"]["shipped"] == 5 and a["newest"]["shipped"] == 1
    assert not a["checks"]["over_all"] and a["checks"]["newest"] and not a["checks"]["by_suite"] and a["checks"]["by_route"]
    assert not a["ship"]
    assert any(line.startswith("ship: no") for line in train._against_lines(a, res))


def test_against_the_shipped_model_on_suites_neither_model_saw() -> None:
    """Round 57's ninth condition: on fresh suites the final retrained model's plain best candidate against the
    shipped model's (and the hand ranking's first); the newest suites are those of the corpus."""
    from benchmarks import train
    from benchmarks.corpus import Case

    def case(suite: str, i: int, root_first: bool) -> Case:
        keys = [(None, "a"), (None, "b")]
        return Case(suite, "r", "f", "x", f"{suite}/{i}", [keys[0] if root_first else keys[1]], keys,
                    [{"hand_score": 1.0}, {"hand_score": 0.5}])

    cases = [case("suite_zzf", i, i < 1) for i in range(4)]
    row = {"n": 4.0, "learned_top1": 0.25, "hand_top1": 0.25, "won": 0.0, "lost": 0.0}
    res = {"loso": {"all": row, "suite_zzf": row}, "loro": {"all": row}, "loso_framework": {"all": row},
           "kfold": {"whowhen": {"learned_top1": 0.4}},
           "calibration": {"ece": 0.04, "nested_precision": 0.9, "precision_confident": 0.9, "coverage_confident": 0.2,
                           "nested_coverage": 0.2}}
    shipped = Model((), 0.0, 1.0, (), meta={"cases": {}})
    # One tree that prefers the step of the lower hand score: the second.
    retrained = Model(("hand_score",), 0.0, 1.0, (((0, 0.75, 1, 2, 0.0), (-1, 0.0, 0, 0, 1.0), (-1, 0.0, 0, 0, -1.0)),))
    fresh = [case("suite_zzzf", i, i == 3) for i in range(4)] + [case("suite_zzzg", 0, True)]
    a = train.against_shipped(cases, res, {"loso": {}}, shipped, ["suite_zzf", "suite_zzzf"], fresh, retrained)
    assert a["newest_suites"] == ["suite_zzf"] and a["newest"]["n"] == 4
    assert a["fresh"]["suite_zzzf"] == {"n": 4, "retrained": 3, "shipped": 1, "hand": 1}
    assert a["fresh"]["all"] == {"n": 5, "retrained": 3, "shipped": 2, "hand": 2}
    assert a["checks"]["fresh"]
    from benchmarks.recalibrate import row

    assert [train.plain_ok(c, m) for c in fresh for m in (shipped, retrained)] == [
        row(c, m).ok for c in fresh for m in (shipped, retrained)]
    assert any(line.startswith("fresh (suite_zzzf, suite_zzzg") for line in train._against_lines(a, res))
    b = train.against_shipped(cases, res, {"loso": {}}, retrained, ["suite_zzf"], fresh, shipped)
    assert not b["checks"]["fresh"] and not b["ship"]


def test_a_boost_given_on_the_command_line_replaces_the_recipes() -> None:
    """``--boost SUITE=X`` (round 57): that source's multiplier replaced, the rest of the recipe kept."""
    from dataclasses import replace

    from benchmarks import learning, train

    assert train.recipe() == learning.RECIPE
    assert train.recipe(None, ["whowhen=4.45"]) == replace(learning.RECIPE, boost=(("whowhen", 4.45),))
    assert train.recipe("route", ["tau=3"]).boost == (*learning.RECIPE.boost, ("tau", 3.0))


def test_cross_validation_fits_each_fold_as_fit_does_from_the_matrix_built_once() -> None:
    """`benchmarks.learning._Folds` hands each fold its rows and its own vocabulary's columns of the corpus's
    matrix: the model is the one `benchmarks.learning.fit` gives on the fold's cases (a feature one fold never
    sees is no column of its model)."""
    from benchmarks import learning
    from benchmarks.corpus import Case

    cases = []
    for i in range(24):
        extra = {"only_b": float(i % 2)} if i % 3 == 1 else {}
        rows = [{"hand_rank_inv": 1.0, "sep": 0.0, "noise": float(i % 5), "output_log": 3.0},
                {"hand_rank_inv": 0.5, "sep": 1.0, "noise": float(i % 7), **extra},
                {"hand_rank_inv": 1 / 3, "noise": float(i % 3)}]
        keys = [(None, "a"), (None, "b"), (None, "c")]
        cases.append(Case(f"s{i % 3}", "r", "f", f"g{i % 6}", f"c{i}", [keys[1]], keys, rows))
    folds = learning._Folds(cases, None, None)
    for f in ("s0", "s1", "s2"):
        train = [i for i, c in enumerate(cases) if c.suite != f]
        want = learning.fit([cases[i] for i in train])
        assert folds.fit(train, learning.SEED).to_dict() == want.to_dict()
