"""Summary mode: hashes, lengths and features instead of content; lineage still connects values by their hashes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import trajdebug
from trajdebug.core.model import Dependency, ErrorInfo, Run, Step
from trajdebug.core.values import SUMMARY_KEY, atoms
from trajdebug.record.summary import Policy, is_summary, summarize_run


# Words that appear only in the content: none may reach the disk in summary mode.
CONTENT = ("Quetzalcoatlus", "Zanzibarville", "Marmalade", "Obsidianworks", "Pangolin")


@trajdebug.step(kind="tool")
def lookup(city: str) -> dict:
    return {"city": city, "supplier": "Obsidianworks Ltd", "price": 1250.5, "currency": "EUR",
            "rows": [{"item": "Marmalade"}, {"item": "Pangolin plush"}]}


@trajdebug.step(kind="llm")
def write(offer: dict) -> str:
    return f"Order from {offer['supplier']} at {offer['price']} EUR for the Quetzalcoatlus exhibit."


def _agent() -> None:
    with trajdebug.step("plan", kind="llm", input={"goal": "furnish the Zanzibarville museum"}) as s:
        s.output = "look up Zanzibarville suppliers"
    offer = lookup("Zanzibarville")
    run = trajdebug.current_run()
    if run is not None:
        with trajdebug.step("remember", kind="state"):
            run.state["supplier"] = offer["supplier"]
    write(offer)


@pytest.mark.parametrize("target", ["runs.jsonl", "runs.db"])
def test_summary_mode_writes_no_step_content(tmp_path: Path, target: str) -> None:
    """A byte scan of the JSONL file or the SQLite store (with its WAL) finds none of the content's words."""
    trajdebug.configure(summary=True)
    where = tmp_path / target
    with trajdebug.run("museum", **({"path": where} if target.endswith(".jsonl") else {"store": where})) as r:
        _agent()
    run = r.load()
    assert 4 == len(run.steps)
    trajdebug.flush(5)
    blob = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("runs."))
    assert [] == [w for w in CONTENT if w.encode() in blob]
    assert all(is_summary(s.output) for s in run.steps if s.output is not None)


def test_a_summary_has_the_documented_features() -> None:
    """Hash, length, type, JSON, top-level keys, rows, numbers and error code are read from the value."""
    p = Policy.compile(("*",), key="k")
    s = p.summarize('{"status": 503, "rows": [1, 2, 3], "detail": "upstream down"}')
    assert s[SUMMARY_KEY] == 1 and len(s["hash"]) == 32
    assert (s["bytes"], s["type"], s["json"], s["keys"], s["rows"], s["error_code"]) == (
        len('{"status": 503, "rows": [1, 2, 3], "detail": "upstream down"}'), "text", True, ["status", "rows", "detail"], 3, 503
    )
    assert [503, 1, 2, 3] == s["numbers"]
    assert "E_QUOTA" == p.summarize({"ok": False, "code": "E_QUOTA", "message": "quota"})["error_code"]
    assert 2 == p.summarize("region,total\nnorth,1\nsouth,2")["rows"]
    assert "numbers" not in Policy.compile(("*",), numbers=False).summarize("costs 12 EUR")


def test_the_hash_is_keyed() -> None:
    """The same value hashes alike under one key and differently under another."""
    a, b, c = Policy.compile(("*",), key="one"), Policy.compile(("*",), key="one"), Policy.compile(("*",), key="two")
    assert a.summarize("yes")["hash"] == b.summarize("yes")["hash"] != c.summarize("yes")["hash"]


def test_lineage_connects_summaries_by_hashes_of_values() -> None:
    """atoms() reads a summary as atoms keyed by hashes: a value passed on shares its key, others do not."""
    p = Policy.compile(("*",))
    produced = p.summarize({"price": 1250.5, "city": "Zanzibarville"})
    consumed = p.summarize("Order at 1250.5 EUR")
    other = p.summarize("Order at 99 EUR")
    keys = lambda v: {a.key for a in atoms(v)}  # noqa: E731
    shared = keys(produced) & keys(consumed)
    assert 1 == len(shared) and next(iter(shared)).startswith("h:")
    assert not keys(produced) & keys(other)
    [num] = [a for a in atoms(consumed) if a.kind == "number"]
    assert (1250.5, "eur") == (num.number, num.unit)


def test_atoms_of_ordinary_content_are_unchanged_by_the_summary_reader() -> None:
    """A dict that merely contains the summary key after other keys, and markers, read as before."""
    assert [] == atoms({"__trajdebug_truncated__": 10, "head": "abc 12"})
    assert ["n:1"] == [a.key for a in atoms({"a": 1, SUMMARY_KEY: 1, "atoms": [["n", "ff"]]})]


def test_malformed_summaries_from_files_are_skipped_entry_by_entry() -> None:
    """Entries of the wrong shape give no atom and raise nothing."""
    v = {SUMMARY_KEY: 1, "atoms": [["x", "a"], "bad", ["n", 3], ["n", "ab", 5, "nan?"], ["s", "cd", "f"]]}
    assert [("h:ab", None), ("h:cd", "f")] == [(a.key, a.field) for a in atoms(v)]


def test_rules_choose_kinds_and_fields() -> None:
    """``tool.output`` summarizes only tool outputs; ``*.attributes`` keeps the recorder's own flags."""
    trajdebug.configure(summary=("tool.output", "*.attributes"))
    with trajdebug.run("museum", path="r.jsonl") as r:
        with trajdebug.step("fetch", kind="tool", input="Zanzibarville", attributes={"note": "Pangolin", "fallback": "x", "n": 3}) as s:
            s.output = "Marmalade"
        with trajdebug.step("say", kind="llm", input="Quetzalcoatlus") as s:
            s.output = "Obsidianworks"
    fetch, say = r.load().steps
    assert "Zanzibarville" == fetch.input and is_summary(fetch.output)
    assert is_summary(fetch.attributes["note"]) and ("x", 3) == (fetch.attributes["fallback"], fetch.attributes["n"])
    assert ("Quetzalcoatlus", "Obsidianworks") == (say.input, say.output)


def test_error_messages_are_summarized_when_asked() -> None:
    """With ``*.error`` the step's error, the error event, and the run's failure reason keep their type, not their text."""
    trajdebug.configure(summary=("*", "*.error"))
    with pytest.raises(KeyError), trajdebug.run("museum", path="r.jsonl") as r, trajdebug.step("fetch", kind="tool"):
        raise KeyError("Zanzibarville")
    run = r.load()
    assert "Zanzibarville" not in Path("r.jsonl").read_text()
    assert "KeyError" == run.steps[0].error.type and run.steps[0].error.message.startswith("[summary ")
    assert run.errors[0].message.startswith("[summary ")


def test_a_bad_rule_summarizes_everything_rather_than_leak(caplog: pytest.LogCaptureFixture) -> None:
    """A rule naming an unknown field is a warning, and every input and output is summarized."""
    trajdebug.configure(summary=("tool.outputs",))
    with trajdebug.run("museum", path="r.jsonl") as r, trajdebug.step("say", kind="llm", input="Quetzalcoatlus"):
        pass
    assert is_summary(r.load().steps[0].input)
    assert any("tool.outputs" in rec.getMessage() for rec in caplog.records)


def test_summarize_run_matches_what_the_recorder_writes() -> None:
    """A run recorded in full and summarized afterwards has the same summaries as one recorded in summary mode."""
    with trajdebug.run("museum", path="full.jsonl") as r1:
        _agent()
    trajdebug.configure(summary=True)
    with trajdebug.run("museum", path="sum.jsonl") as r2:
        _agent()
    later = summarize_run(r1.load())
    assert [s.output for s in later.steps] == [s.output for s in r2.load().steps]
    assert json.dumps([s.input for s in later.steps]) == json.dumps([s.input for s in r2.load().steps])


def test_summaries_are_analyzed_without_error() -> None:
    """A failed run recorded in summary mode is analyzed and localized (the analysis reads summaries)."""
    trajdebug.configure(summary=True)
    def failing() -> None:
        with trajdebug.run("museum", path="r.jsonl"):
            _agent()
            with trajdebug.step("check", kind="condition"):
                raise ValueError("the order is wrong")

    with pytest.raises(ValueError):
        failing()
    [run] = trajdebug.read_jsonl("r.jsonl").runs
    a = trajdebug.analyze(run)
    assert a.localization.candidates


def test_summarize_run_leaves_structure_alone() -> None:
    """Ids, names, kinds, statuses and dependencies survive `summarize_run`."""
    run = Run("r", "n", steps=(Step("a", "fetch", "tool", input="Pangolin", output="Marmalade"),))
    out = summarize_run(run)
    assert (out.steps[0].step_id, out.steps[0].name, out.steps[0].kind) == ("a", "fetch", "tool")
    assert is_summary(out.steps[0].input) and is_summary(out.steps[0].output)


def test_diagnosers_that_read_content_step_aside_on_summaries() -> None:
    """An LLM step that contradicts its input is flagged in full; summarized, only content-free rules judge it."""
    from trajdebug.analysis import SUMMARY_SAFE, analyze

    steps = (
        Step("t", "lookup", "tool", input={"sku": "A-1"}, output={"price": 12.5, "currency": "EUR"}, start_ns=1, end_ns=2),
        Step("l", "quote", "llm", input={"price": 12.5, "currency": "EUR"}, output={"price": 15.0, "currency": "EUR"},
             start_ns=3, end_ns=4, deps=(Dependency("t"),)),
        Step("c", "check", "condition", status="error", error=ErrorInfo("ValueError", "price wrong"), start_ns=5, end_ns=6,
             deps=(Dependency("l"),)),
    )
    run = Run("r1", "shop", 0, 7, "failure", "price wrong", steps=steps)
    full = {c.step_id: c.signals for c in analyze(run).localization.candidates}
    summ = {c.step_id: c.signals for c in analyze(summarize_run(run)).localization.candidates}
    assert "llm-output" in full["l"]
    assert "llm-output" not in summ.get("l", ())
    assert {"step-error", "contract"} <= SUMMARY_SAFE


def test_a_snapshot_kept_as_its_json_bytes_is_summarized_from_its_value(tmp_path: Path) -> None:
    """A dict input the writer embeds as its encoded bytes is summarized as an object with its own keys
    and atoms (the store, schema 2, holds the summary, not the bytes)."""
    trajdebug.configure(summary=True)
    store = tmp_path / "runs.db"
    with trajdebug.run("museum", store=store) as r, trajdebug.step("plan", kind="llm", input={"goal": "Zanzibarville", "budget": 1250.5}) as s:
        s.output = ["Marmalade", "Pangolin"]
    run = trajdebug.Store(store, readonly=True).load_run(r.run_id)
    [step] = run.steps
    assert (step.input["type"], step.input["keys"], step.input["numbers"]) == ("object", ["goal", "budget"], [1250.5])
    assert ("array", 2) == (step.output["type"], step.output["rows"])
    plain = Policy.compile(("*",)).summarize({"goal": "Zanzibarville", "budget": 1250.5})
    assert {a.key for a in atoms(plain)} == {a.key for a in atoms(step.input)}
