"""Tests for model, tokens and cost of LLM steps and runs (`trajdebug.usage`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import trajdebug
from trajdebug.core.model import Run, Step
from trajdebug.testing import FakeModelServer, capture_runs
from trajdebug.usage import PRICES_ENV, Price, Prices, default_prices, load_prices, run_usage, step_usage


def _llm(attrs: dict[str, Any], *, sid: str = "s1", output: Any = None) -> Step:
    return Step(step_id=sid, name="call", kind="llm", attributes=attrs, output=output)


class TestPrices:
    def test_dated_snapshot_is_priced_as_its_model(self) -> None:
        """A dated snapshot is priced by its longest entry, and a provider prefix is ignored."""
        prices = default_prices()
        assert prices.lookup("gpt-4o-2024-08-06") == prices.lookup("gpt-4o")
        assert prices.lookup("gpt-4o-mini-2024-07-18") == prices.lookup("gpt-4o-mini")
        assert prices.lookup("openai/gpt-4o") == prices.lookup("gpt-4o")

    def test_a_longer_name_is_not_a_dated_snapshot(self) -> None:
        """gpt-4 does not price gpt-4o-like names that only share its letters, and unknown models have no price."""
        prices = Prices({"gpt-4": Price(30.0, 60.0)})
        assert prices.lookup("gpt-4o") is None
        assert prices.lookup("gpt-4-0613") == Price(30.0, 60.0)
        assert prices.lookup("fake-model") is None

    def test_cost_is_per_million_tokens(self) -> None:
        """Cost = prompt x input + completion x output, per million tokens."""
        prices = Prices({"m": Price(2.0, 8.0)})
        assert prices.cost("m", 1_000_000, 500_000) == pytest.approx(6.0)
        assert prices.cost("m", None, None) is None

    def test_user_file_overrides_packaged_entries(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """$TRAJDEBUG_PRICES (TOML or JSON) replaces the packaged entry of a model and adds new ones."""
        toml = tmp_path / "prices.toml"
        toml.write_text(
            '[models."gpt-4o"]\ninput = 1.0\noutput = 1.0\n[models."fake-model"]\ninput = 3\noutput = 5\n'
        )
        monkeypatch.setenv(PRICES_ENV, str(toml))
        assert default_prices().lookup("gpt-4o") == Price(1.0, 1.0)
        assert default_prices().lookup("fake-model") == Price(3.0, 5.0)
        assert default_prices().lookup("gpt-4o-mini") is not None
        js = tmp_path / "prices.json"
        js.write_text(json.dumps({"models": {"x": {"input": 1, "output": 2}}}))
        assert load_prices(js).lookup("x") == Price(1.0, 2.0)

    def test_a_bad_price_file_says_which_entry(self, tmp_path: Path) -> None:
        """A price that is not a number is an error naming the model."""
        bad = tmp_path / "p.toml"
        bad.write_text('[models."m"]\ninput = "cheap"\n')
        with pytest.raises(ValueError, match="'m'"):
            load_prices(bad)


class TestStepUsage:
    def test_stated_cost_is_kept(self) -> None:
        """A cost the source states wins over the price table."""
        u = step_usage(_llm({"llm.model": "gpt-4o", "llm.usage.prompt_tokens": 10, "llm.usage.cost": 0.5}))
        assert u is not None and u.cost == 0.5 and u.total_tokens == 10

    def test_openinference_cost_attribute_becomes_llm_usage_cost(self) -> None:
        """OpenInference llm.cost.total and GenAI gen_ai.usage.cost are read as llm.usage.cost."""
        from trajdebug.core.chat import span_envelope

        assert span_envelope({"llm.cost.total": 0.25})["llm.usage.cost"] == 0.25
        assert span_envelope({"gen_ai.usage.cost": "0.1"})["llm.usage.cost"] == 0.1
        assert "llm.usage.cost" not in span_envelope({"llm.cost.total": "n/a"})

    def test_non_llm_step_without_usage_has_none(self) -> None:
        """A tool step states no usage."""
        assert (
            step_usage(Step(step_id="t", name="tool", kind="tool", output={"usage": {"prompt_tokens": 3}}))
            is None
        )

    def test_run_sums_tokens_and_costs_of_its_calls(self) -> None:
        """A run's usage is the sum of its LLM steps' tokens and costs, with the models used."""
        prices = Prices({"a": Price(1.0, 2.0)})
        run = Run(
            run_id="r",
            name="r",
            steps=(
                _llm(
                    {"llm.model": "a", "llm.usage.prompt_tokens": 100, "llm.usage.completion_tokens": 10},
                    sid="1",
                ),
                _llm(
                    {"llm.model": "b", "llm.usage.prompt_tokens": 5, "llm.usage.completion_tokens": 5},
                    sid="2",
                ),
            ),
        )
        u = run_usage(run, prices)
        assert (u.calls, u.prompt_tokens, u.completion_tokens, u.total_tokens) == (2, 105, 15, 120)
        assert u.cost == pytest.approx(120 / 1_000_000)
        assert u.models == ("a", "b")


def _chat(base_url: str, prompt: str) -> dict[str, Any]:
    import urllib.request

    body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]}).encode()
    req = urllib.request.Request(f"{base_url}/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        result: dict[str, Any] = json.loads(resp.read())
    return result


class TestRecorded:
    def test_usage_recorded_on_a_step_handle(self) -> None:
        """s.usage(...) records model and tokens; the cost is priced from the model when read."""
        with capture_runs() as cap, trajdebug.run("agent"), trajdebug.step("plan", kind="llm") as s:
            s.usage(model="gpt-4o", prompt_tokens=1000, completion_tokens=100)
        [run] = cap
        [u] = [step_usage(x) for x in run.steps]
        assert u is not None and (u.model, u.prompt_tokens, u.completion_tokens, u.total_tokens) == (
            "gpt-4o",
            1000,
            100,
            1100,
        )
        price = default_prices().lookup("gpt-4o")
        assert price is not None
        assert u.cost == pytest.approx((1000 * price.input + 100 * price.output) / 1e6)

    def test_openai_response_returned_by_an_llm_step(self) -> None:
        """An llm step that returns the server's response carries the response's model and usage."""
        with FakeModelServer(["four", "five"]) as server, capture_runs() as cap, trajdebug.run("agent"):
            answers = []
            for q in ("2+2?", "2+3?"):
                with trajdebug.step("ask", kind="llm") as s:
                    answers.append(_chat(server.base_url, q))
                    s.output = answers[-1]
        [run] = cap
        u = run_usage(run)
        assert u.calls == 2
        assert u.prompt_tokens == sum(a["usage"]["prompt_tokens"] for a in answers)
        assert u.completion_tokens == sum(a["usage"]["completion_tokens"] for a in answers)
        assert u.model == "gpt-4o-mini" and u.cost is not None and u.cost > 0

    def test_show_keeps_the_runs_usage_whole_on_a_narrow_terminal(self, tmp_path: Path) -> None:
        """On an 80-column terminal, `trajdebug show`'s header puts the run's usage on a line of its own rather
        than breaking it at a space: the LLM call count stays beside its noun (nu25: "69.9ms  9" then "LLM calls
        1,343 tok")."""
        from click.testing import CliRunner

        from trajdebug.cli import cli

        path = tmp_path / "runs.jsonl"
        with FakeModelServer(["four", "five", "six"]) as server, trajdebug.run("arrears-letter-agent", path=path):
            for q in ("2+2?", "2+3?", "3+3?"):
                with trajdebug.step("ChatCompletion", kind="llm") as s:
                    s.output = _chat(server.base_url, q)
        trajdebug.flush()
        out = CliRunner().invoke(cli, ["show", str(path)], env={"COLUMNS": "80"}, terminal_width=80)
        lines = out.output.splitlines()
        assert lines[0].startswith("run ") and lines[0].rstrip().endswith("ms")
        assert lines[1].startswith("  3 LLM calls") and " tok (" in lines[1]
        assert all(len(line) <= 80 for line in lines[:2])

    def test_show_prints_tokens_and_cost(self, tmp_path: Path) -> None:
        """`trajdebug show` prints each LLM step's tokens and the run's total cost; --json carries usage."""
        from click.testing import CliRunner

        from trajdebug.cli import cli

        path = tmp_path / "runs.jsonl"
        with trajdebug.run("agent", path=path), trajdebug.step("plan", kind="llm") as s:
            s.usage(model="gpt-4o", prompt_tokens=1000, completion_tokens=200)
        trajdebug.flush()
        out = CliRunner().invoke(cli, ["show", str(path)])
        assert out.exit_code == 0, out.output
        assert "1,200 tok (1,000 in, 200 out)" in out.output
        assert "$0.0045" in out.output
        data = json.loads(CliRunner().invoke(cli, ["show", str(path), "--json"]).output)
        assert data["runs"][0]["usage"]["total_tokens"] == 1200


def test_a_small_cost_is_written_in_fixed_notation_with_two_significant_digits() -> None:
    """A cost below $0.0001 reads ``$0.000049``, never ``$4.9e-05`` (nu64b: `show` printed ``$5e-05``)."""
    from trajdebug.usage import format_cost

    assert [format_cost(c) for c in (5e-05, 4.9e-05, 8.6e-05, 1e-07, 0.0123, 12.345)] == [
        "$0.00005",
        "$0.000049",
        "$0.000086",
        "$0.0000001",
        "$0.0123",
        "$12.35",
    ]
