"""Counterfactual replay: the cassette, the engine, verification of root causes."""

from __future__ import annotations

import itertools
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import trajdebug
from trajdebug.core.model import Run
from trajdebug.demo import FAULTS, demo_agent, run_demo, verify_demo
from trajdebug.record.sinks import MemorySink
from trajdebug.replay import (
    Cassette,
    Correction,
    ReplayError,
    fingerprint,
    record,
    replay,
    replayable,
    verify,
)
from trajdebug.replay.cassette import step_paths
from trajdebug.replay.engine import forward_slice
from trajdebug.replay.verify import Verifier
from trajdebug.store import Store


# -- a small agent whose boundary calls count themselves ------------------------------------

CALLS: Counter[str] = Counter()
TEMPS = {"paris": 21, "oslo": 9}
FLAKY = itertools.count()


@trajdebug.step(kind="llm")
def pick_city(question: str) -> str:
    CALLS["pick_city"] += 1
    return "oslo" if "cold" in question else "paris"


@trajdebug.step(kind="tool")
def weather(city: str) -> dict[str, Any]:
    CALLS["weather"] += 1
    return {"city": city, "temp": TEMPS[city]}


@trajdebug.step(kind="tool")
def headlines(topic: str) -> list[str]:
    CALLS["headlines"] += 1
    return [f"{topic}: markets calm", f"{topic}: rain expected"]


@trajdebug.step(kind="llm")
def write_answer(report: dict[str, Any], news: list[str]) -> str:
    CALLS["write_answer"] += 1
    return f"{report['city']} is {report['temp']}C; {len(news)} headlines"


@trajdebug.step(kind="output")
def check(answer: str) -> str:
    if not answer.startswith("paris"):
        raise ValueError(f"wrong city in {answer!r}")
    return answer


def city_agent(question: str) -> str:
    """Entry point: the answer must be about Paris; a 'cold' question makes the LLM pick Oslo."""
    city = pick_city(question)
    report = weather(city)
    news = headlines("europe")
    return check(write_answer(report, news))


@trajdebug.step(kind="llm")
def flaky_llm(prompt: str) -> str:
    # A stand-in for a sampled model: alternates between a good and a bad reply.
    return "good" if next(FLAKY) % 2 == 0 else "bad"


@trajdebug.step(kind="output")
def accept(reply: str) -> str:
    if reply != "good":
        raise ValueError("bad reply")
    return reply


@trajdebug.step(kind="llm")
def draft(topic: str) -> str:
    return "bad draft"


def flaky_agent(topic: str) -> str:
    """Entry point: a draft, then a sampled LLM call whose reply is checked."""
    return accept(flaky_llm(draft(topic)))


@replayable
def now_ms() -> int:
    CALLS["now_ms"] += 1
    return 1000 * CALLS["now_ms"]


@trajdebug.step(kind="tool")
def lookup(key: str) -> str:
    CALLS["lookup"] += 1
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"SELECT {key} FROM nowhere")  # always fails: no such table
    finally:
        conn.close()
    return "unreachable"


def clock_agent(label: str) -> str:
    """Entry point: reads the clock, then a tool whose failure is handled by a fallback."""
    t = now_ms()
    try:
        value = lookup(label)
    except sqlite3.OperationalError:
        value = "fallback"
    return f"{label}@{t}:{value}"


@pytest.fixture(autouse=True)
def _reset() -> None:
    CALLS.clear()


def _step(run: Run, name: str, n: int = 0) -> str:
    return [s for s in run.steps if s.name == name][n].step_id


class TestCassette:
    """Recorded boundary calls keyed by path, call order and request fingerprint."""

    def test_fingerprint_ignores_key_order_and_repr_addresses(self) -> None:
        """Equal requests hash equal whatever their key order or repr text; different ones differ."""
        a = {"x": 1, "obj": {"__trajdebug_repr__": "<Foo at 0x1>", "type": "Foo"}}
        b = {"obj": {"__trajdebug_repr__": "<Foo at 0x2>", "type": "Foo"}, "x": 1}
        assert fingerprint(a) == fingerprint(b)
        assert fingerprint(a) != fingerprint({**a, "x": 2})

    def test_repeated_calls_get_increasing_ordinals(self) -> None:
        """Steps with the same name path are numbered in call order."""

        def twice(q: str) -> None:
            pick_city(q)
            pick_city(q + " cold")

        run = record(twice, ["q"])
        keys = sorted(step_paths(run).values())
        assert keys == [(("pick_city",), 0), (("pick_city",), 1)]

    def test_closest_request_names_the_differing_argument(self) -> None:
        """A miss reports the nearest recorded request of the same path and which arguments differ."""
        run = record(city_agent, ["a cold day?"])
        cas = Cassette.from_runs([run])
        near = cas.closest(("weather",), {"city": "paris"})
        assert near is not None
        assert near.step_id == _step(run, "weather")
        assert near.differing == ("city",)


class TestReplay:
    """`replay` re-executes the entry point, serving, patching or running each step."""

    def test_unpatched_replay_serves_every_boundary_call(self) -> None:
        """With no patch, no boundary call runs live and the run fails exactly as recorded."""
        run = record(city_agent, ["a cold day?"])
        assert run.outcome == "failure"
        CALLS.clear()
        r = replay(city_agent, run)
        assert not CALLS
        assert r.deterministic and not r.passed
        assert r.served == 4

    def test_patch_flips_the_failure_and_reports_live_calls(self) -> None:
        """Patching the LLM's pick re-runs the calls downstream live and the failure is gone."""
        run = record(city_agent, ["a cold day?"])
        r = replay(city_agent, run, {_step(run, "pick_city"): "paris"})
        assert r.passed
        assert r.run.outcome == "success"
        assert sorted(c.name for c in r.live_calls) == ["weather", "write_answer"]
        assert r.run.metadata["replay_of"] == run.run_id
        assert [c["name"] for c in r.run.metadata["live_calls"]] == ["weather", "write_answer"]

    def test_steps_outside_the_forward_slice_never_run_live(self) -> None:
        """Even in live mode, a tool the patch cannot reach is served: its call counter does not move."""
        run = record(city_agent, ["a cold day?"])
        sid = _step(run, "pick_city")
        assert _step(run, "headlines") not in forward_slice(run, [sid])
        CALLS.clear()
        r = replay(city_agent, run, {sid: "paris"}, mode="live")
        assert CALLS["headlines"] == 0
        assert CALLS["pick_city"] == 0
        assert CALLS["weather"] == 1 and CALLS["write_answer"] == 1
        assert r.passed

    def test_replayed_run_is_stored_and_linked(self, tmp_path: Path) -> None:
        """The replayed run lands in the store with replay_of, patch and live_calls metadata."""
        run = record(city_agent, ["a cold day?"])
        store = Store(tmp_path / "r.db")
        r = replay(city_agent, run, {_step(run, "pick_city"): "paris"}, store=store)
        back = store.load_run(r.run.run_id)
        assert back.metadata["replay_of"] == run.run_id
        assert back.metadata["patch"][_step(run, "pick_city")]["output"] == "paris"
        assert len(back.metadata["live_calls"]) == 2
        assert back.outcome == "success"

    def test_strict_mode_stops_at_the_first_divergence(self) -> None:
        """A strict replay reports the unrecorded call and the closest recorded request."""
        run = record(city_agent, ["a cold day?"])
        r = replay(city_agent, run, {_step(run, "pick_city"): "paris"}, mode="strict")
        assert not r.passed
        assert r.run.outcome == "incomplete"
        div = r.first_divergence
        assert div is not None and div.name == "weather"
        assert div.closest is not None and div.closest.step_id == _step(run, "weather")
        assert div.closest.differing == ("city",)
        assert "weather" in (r.stopped or "")

    def test_passing_run_calls_are_served_too(self) -> None:
        """A request the patch changed into one a passing run made is served from that run."""
        bad = record(city_agent, ["a cold day?"])
        good = record(city_agent, ["a warm day?"])
        CALLS.clear()
        r = replay(city_agent, bad, {_step(bad, "pick_city"): "paris"}, mode="strict", passing=[good])
        assert r.passed and r.deterministic
        assert not CALLS

    def test_recorded_exception_is_raised_again_with_its_type(self) -> None:
        """A tool that raised is replayed by raising the same exception class, so handlers still match."""
        run = record(clock_agent, ["x"])
        assert run.outcome == "success"
        CALLS.clear()
        r = replay(clock_agent, run)
        assert CALLS["lookup"] == 0
        assert r.passed
        assert r.run.steps[-1].name == "lookup" and r.run.steps[-1].status == "error"
        assert r.run.steps[-1].error is not None and r.run.steps[-1].error.type == "OperationalError"

    def test_declared_clock_is_served_from_the_recording(self) -> None:
        """A step declared replayable (the clock) returns its recorded value on replay."""
        run = record(clock_agent, ["x"])
        CALLS["now_ms"] = 41  # a live call now would return 42000
        r = replay(clock_agent, run)
        assert CALLS["now_ms"] == 41
        assert _step(r.run, "now_ms") and r.run.step(_step(r.run, "now_ms")).output == 1000

    def test_patch_redoes_state_writes(self) -> None:
        """A state step patched with a Correction carrying state writes changes what later steps read."""
        run = run_demo("stale-state", sinks=[MemorySink()])
        good = record(demo_agent, kwargs={**run.metadata["entry"]["kwargs"], "fault": None})
        g = good.step(_step(good, "save_totals"))
        assert g.attributes["state_values"]
        sid = _step(run, "save_totals")
        assert not replay(demo_agent, run, {sid: g.output}).passed
        assert replay(demo_agent, run, {sid: Correction(g.output, g.attributes["state_values"])}).passed

    def test_unknown_step_and_missing_arguments_are_clear_errors(self) -> None:
        """A patch naming no step of the run, or a run without recorded arguments, raises ReplayError."""
        run = record(city_agent, ["a cold day?"])
        with pytest.raises(ReplayError, match="no step 'nope'"):
            replay(city_agent, run, {"nope": 1})
        plain = trajdebug.run("plain", sinks=[MemorySink()])
        with plain:
            city_agent("a warm day?")
        with pytest.raises(ReplayError, match="does not record its entry point"):
            replay(city_agent, plain.load())
        assert replay(city_agent, plain.load(), args=["a warm day?"]).passed

    def test_package_is_callable_as_replay(self) -> None:
        """``trajdebug.replay_run(agent, run, patch=...)`` is the replay function; ``trajdebug.replay`` is the package."""
        run = record(city_agent, ["a cold day?"])
        # mypy sees the package, not the callable module it becomes at import time.
        r = trajdebug.replay_run(city_agent, run, patch={_step(run, "pick_city"): "paris"})
        assert r.passed


class TestVerify:
    """Candidates verified, refuted or unresolved by replay."""

    @pytest.mark.parametrize("fault", list(FAULTS))
    def test_injected_step_is_verified_and_a_victim_refuted(self, fault: str) -> None:
        """For each demo fault the injected step is verified and a downstream victim refuted."""
        run = run_demo(fault, sinks=[MemorySink()])
        injected = run.metadata["fault"]["step_id"]
        good = record(demo_agent, kwargs={**run.metadata["entry"]["kwargs"], "fault": None})
        v = Verifier(demo_agent, run, passing=[good], samples=1)
        parents = {s.parent_id for s in run.steps}
        downstream = [
            s.step_id
            for s in run.steps
            if s.step_id in forward_slice(run, [injected])
            and s.step_id != injected
            and s.step_id not in parents
            and v.correction_for(s.step_id) is not None
        ]
        victim = downstream[-1]
        result = verify(demo_agent, run, [injected, victim], passing=[good], samples=1)
        by_id = {c.step_id: c for c in result.checks}
        assert by_id[injected].status == "verified"
        assert by_id[victim].status == "refuted"
        assert result.verified is not None and result.verified.step_id == injected

    def test_verify_demo_with_the_analysis(self, tmp_path: Path) -> None:
        """verify_demo verifies the analysis's top candidate, stores the replays and summarizes."""
        from trajdebug.analysis._pipeline import analyze

        store = Store(tmp_path / "demo.db")
        run = run_demo("bad-sql-filter", store=store)
        v = verify_demo(run, analyze(run), store=store)
        assert v.verified is not None
        assert v.verified.step_id == run.metadata["fault"]["step_id"]
        assert v.summary().startswith("verified by replay: patching write_sql#")
        replays = [r for r in store.load_runs() if r.metadata.get("replay_of") == run.run_id]
        assert replays and all("live_calls" in r.metadata for r in replays)
        assert v.to_dict()["verified"] == v.verified.step_id

    def test_nondeterministic_step_is_unresolved_with_counts(self) -> None:
        """A patch whose downstream replays disagree is unresolved, with the pass and fail counts."""
        run = record(flaky_agent, ["t"])
        for _ in range(2):  # make sure the recorded run is the failing kind
            if run.outcome == "failure":
                break
            run = record(flaky_agent, ["t"])
        assert run.outcome == "failure"
        result = verify(
            flaky_agent, run, [_step(run, "draft")], fixer=lambda s, r: "good draft", samples=3, mode="live"
        )
        check_ = result.checks[0]
        assert check_.status == "unresolved"
        assert check_.trial is not None
        assert len(check_.trial.replays) == 3
        assert {check_.trial.passed, check_.trial.failed} == {1, 2}
        assert "of 3 replays pass" in check_.reason

    def test_no_correction_is_unresolved_and_same_output_refuted(self) -> None:
        """Without any correction a candidate is unresolved; with a passing run identical there, refuted."""
        bad = record(city_agent, ["a cold day?"])
        good = record(city_agent, ["a warm day?"])
        alone = verify(city_agent, bad, [_step(bad, "headlines")])
        assert alone.checks[0].status == "unresolved"
        with_good = verify(city_agent, bad, [_step(bad, "headlines")], passing=[good])
        assert with_good.checks[0].status == "refuted"

    def test_unpatchable_step_is_unresolved(self) -> None:
        """A patch on a step the re-execution cannot intercept (a context-manager step) is unresolved."""

        def agent(q: str) -> str:
            with trajdebug.step("inline", kind="llm") as s:
                s.output = "x"
            return check(pick_city(q))

        run = record(agent, ["a cold day?"])
        result = verify(agent, run, [_step(run, "inline")], fixer=lambda s, r: "y")
        assert result.checks[0].status == "unresolved"
        assert "never reached" in result.checks[0].reason


# -- agents whose calls carry inputs their arguments do not show ------------------------------

ORDER = {"reverse": False}
KV: dict[str, str] = {}


@trajdebug.step(kind="tool")
def forecast(city: str) -> str:
    CALLS["forecast"] += 1
    return f"{city}: {'rain' if city == 'oslo' else 'sun'}"


def two_city_agent(a: str, b: str) -> str:
    """Entry point: the calls' start order depends on something outside the arguments (like threads)."""
    cities = [b, a] if ORDER["reverse"] else [a, b]
    out = {c: forecast(c) for c in cities}
    if "rain" in out["oslo"]:
        raise ValueError("rain in oslo")
    return out["oslo"]


@trajdebug.step(kind="llm")
def choose(question: str) -> dict[str, str]:
    return {"value": "bad" if "old" in question else "good"}


@trajdebug.step(kind="tool")
def put(config: dict[str, str]) -> bool:
    KV["x"] = config["value"]
    trajdebug.writes("kv:x")
    return True


@trajdebug.step(kind="tool")
def get() -> str:
    CALLS["get"] += 1
    trajdebug.reads("kv:x")
    return KV["x"]


def kv_agent(question: str) -> str:
    """Entry point: a value goes through an external store; the reader's request is empty."""
    put(choose(question))
    return check_good(get())


@trajdebug.step(kind="output")
def check_good(value: str) -> str:
    if value != "good":
        raise ValueError(f"got {value!r}")
    return value


@trajdebug.step(kind="llm")
def word(question: str) -> str:
    return "abc" if "short" in question else "abcd"


@trajdebug.step(kind="tool")
def measure(n: int) -> dict[str, bool]:
    return {"long": n >= 3}


@trajdebug.step(kind="tool")
def report(result: dict[str, bool]) -> str:
    CALLS["report"] += 1
    return "long" if result["long"] else "short"


def length_agent(question: str) -> str:
    """Entry point: a number derived from the LLM's reply carries no recorded edge (small ints are shared)."""
    return report(measure(len(word(question))))


@trajdebug.step(kind="llm")
def noisy_pick(question: str) -> str:
    s = trajdebug.current_step()
    assert s is not None
    s.error("model: a deprecated parameter was ignored", type="Warning")
    s.fallback(None, "harmless warning, ignored")
    return "oslo" if "cold" in question else "paris"


def noisy_agent(question: str) -> str:
    """Entry point: the LLM reports a harmless warning on every call."""
    return check(noisy_pick(question))


class TestHiddenInputs:
    """Replay stays faithful when a call's arguments do not tell the whole story."""

    def test_patch_follows_the_request_when_calls_start_in_another_order(self) -> None:
        """Calls of one path that start in another order than recorded are aligned by their request."""
        ORDER["reverse"] = False
        run = record(two_city_agent, ["paris", "oslo"])
        assert run.outcome == "failure"
        oslo = next(s.step_id for s in run.steps if s.name == "forecast" and s.input == {"city": "oslo"})
        ORDER["reverse"] = True
        try:
            r = replay(two_city_agent, run, {oslo: "oslo: sun"})
        finally:
            ORDER["reverse"] = False
        assert r.passed
        patched = [c for c in r.calls if c.mode == "patched"]
        assert [r.run.step(c.step_id).input for c in patched] == [{"city": "oslo"}]
        assert CALLS["forecast"] == 2  # only the recording ran them; the replay served paris

    def test_reader_of_changed_state_runs_live(self) -> None:
        """A call downstream of the patch through declared state is re-run, not served its old response."""
        run = record(kv_agent, ["the old value?"])
        assert run.outcome == "failure"
        reader = _step(run, "get")
        assert any(d.kind == "state" for d in run.step(reader).deps)
        CALLS.clear()
        r = replay(kv_agent, run, {_step(run, "choose"): {"value": "good"}})
        assert r.passed
        assert CALLS["get"] == 1
        reasons = {c.name: c.reason for c in r.live_calls}
        assert reasons["get"] == "reads or writes state that the patch changed"

    def test_changed_request_outside_the_slice_extends_it(self) -> None:
        """A call whose request changed although no recorded edge reaches it puts its own slice downstream."""
        run = record(length_agent, ["a short word"])
        sid = _step(run, "word")
        assert _step(run, "measure") not in forward_slice(run, [sid])
        CALLS.clear()
        r = replay(length_agent, run, {sid: "abcd"}, mode="live")
        assert r.passed
        assert CALLS["report"] == 1  # its request did not change, but its input's producer was downstream
        assert sorted(c.name for c in r.live_calls) == ["measure", "report"]
        assert r.divergences and r.divergences[0].name == "measure"

    def test_passing_step_with_a_reported_warning_supplies_a_correction(self) -> None:
        """A passing run's step that reported a harmless warning still returned a usable output."""
        bad = record(noisy_agent, ["a cold day?"])
        good = record(noisy_agent, ["a warm day?"])
        pick = _step(good, "noisy_pick")
        assert good.outcome == "success" and good.step(pick).status == "error"
        v = verify(noisy_agent, bad, [_step(bad, "noisy_pick")], passing=[good], samples=1)
        assert v.checks[0].status == "verified", v.checks[0].reason


# -- corrections come from a passing run of the same input ------------------------------------

FX_BUG = {"on": True}
HOTELS = {"new york": ("Brooklyn Loft", 185.0, "USD"), "lisbon": ("Alfama House", 98.0, "EUR")}


@trajdebug.step(kind="llm")
def extract_trip(request: str) -> dict[str, Any]:
    return {"city": request, "nights": 4, "budget": 1200.0}


@trajdebug.step(kind="tool")
def find_hotel(city: str) -> dict[str, Any]:
    name, price, currency = HOTELS[city]
    return {"name": name, "price": price, "currency": currency}


@trajdebug.step(kind="other")
def convert_price(hotel: dict[str, Any], eur_per_unit: float) -> dict[str, Any]:
    price = hotel["price"] / eur_per_unit if FX_BUG["on"] else hotel["price"] * eur_per_unit  # planted
    return {**hotel, "price": round(price, 2), "currency": "EUR"}


@trajdebug.step(kind="other")
def trip_total(hotel: dict[str, Any], nights: int) -> float:
    return round(hotel["price"] * nights + 420.0, 2)


@trajdebug.step(kind="output")
def check_budget(total: float, budget: float) -> bool:
    if total > budget:
        raise ValueError(f"total {total:.2f} EUR exceeds budget {budget:.2f} EUR")
    return True


def plan_trip(request: str) -> bool:
    trip = extract_trip(request)
    hotel = find_hotel(trip["city"])
    rate = 0.92 if hotel["currency"] == "USD" else 1.0
    return check_budget(trip_total(convert_price(hotel, rate), trip["nights"]), trip["budget"])


def test_verify_takes_corrections_only_from_a_passing_run_of_the_same_input(tmp_path: Path) -> None:
    """A passing run of another request cannot refute the cause; one of the same request verifies it."""
    from trajdebug.api import analyze_source

    db = tmp_path / "trip.db"
    bad = record(plan_trip, ["new york"], store=db)
    other = record(plan_trip, ["lisbon"], store=db)
    assert (bad.outcome, other.outcome) == ("failure", "success")
    [v] = analyze_source(db, bad.run_id, verify=plan_trip, samples=1).verifications
    convert = next(c for c in v.checks if c.name == "convert_price")
    assert convert.status == "unresolved" and "no passing run of the same input" in convert.reason
    assert all(c.status != "refuted" for c in v.checks)
    assert v.passing_run is None
    FX_BUG["on"] = False
    try:
        fixed = record(plan_trip, ["new york"], store=db)
    finally:
        FX_BUG["on"] = True
    [v] = analyze_source(db, bad.run_id, verify=plan_trip, samples=1).verifications
    assert v.passing_run == fixed.run_id
    assert v.verified is not None and v.verified.name == "convert_price"


# -- record() of an entry point that opens its own run ----------------------------------------


def own_run_trip(request: str) -> bool:
    """An agent as users write it: it opens its own named run, with a task and a store of its own."""
    with trajdebug.run("trip-planner", task=request, store="agent-own.db") as run:
        run.state["request"] = request
        return plan_trip(request)


def own_run_quiet(request: str) -> str:
    """An entry point that catches its run's failure after the run's block (a CLI's main)."""
    try:
        own_run_trip(request)
    except ValueError as exc:
        return f"FAILED: {exc}"
    return "ok"


def test_record_of_an_agent_with_its_own_run_stores_the_run_it_returns(tmp_path: Path) -> None:
    """The agent's trajdebug.run joins the recorded run: one stored run, the one returned, with the agent's
    name and task, the entry arguments, every step, and nothing written to the agent's or the default store."""
    db = tmp_path / "trip.db"
    run = record(own_run_trip, ["new york"], store=db)
    with Store(db) as st:
        [stored] = [st.load_run(s.run_id) for s in st.list_runs()]
    assert stored.run_id == run.run_id and run.outcome == stored.outcome == "failure"
    assert (stored.name, stored.metadata["task"]) == ("trip-planner", "new york")
    assert stored.metadata["entry"]["args"] == ["new york"]
    assert [s.name for s in stored.steps][:2] == ["extract_trip", "find_hotel"] and len(stored.steps) == 5
    assert not (tmp_path / "agent-own.db").exists() and not (tmp_path / "trajdebug.db").exists()
    [error] = stored.errors
    assert [c.stage for c in error.stages] == ["occurred", "failed"]


def test_record_name_and_task_win_over_the_agents_own(tmp_path: Path) -> None:
    """record(name=, task=) name the run and give its task even when the agent's run says otherwise."""
    run = record(own_run_trip, ["lisbon"], name="trips", task="a weekend in Lisbon")
    assert (run.name, run.metadata["task"], run.outcome) == ("trips", "a weekend in Lisbon", "success")


def test_a_failure_caught_after_the_agents_run_block_still_fails_the_recorded_run() -> None:
    """The entry point catches the exception its own run ended with: the recorded run failed all the same."""
    run = record(own_run_quiet, ["new york"])
    assert run.outcome == "failure" and "exceeds budget" in (run.failure_reason or "")
    [error] = run.errors
    assert [c.stage for c in error.stages] == ["occurred", "failed"]


def test_replay_of_an_agent_with_its_own_run_patches_and_passes(tmp_path: Path) -> None:
    """Replaying such a run re-executes it into the replay run (not the agent's store) and the patch holds."""
    run = record(own_run_trip, ["new york"])
    convert = _step(run, "convert_price")
    fixed = {"name": "Brooklyn Loft", "price": 170.2, "currency": "EUR"}
    r = trajdebug.replay_run(own_run_trip, run, patch={convert: fixed})
    assert r.passed and r.run.name == "trip-planner" and len(r.run.steps) == len(run.steps)
    assert not (tmp_path / "agent-own.db").exists()
