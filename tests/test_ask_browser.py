"""The "find the cause" panel in real Chromium: in a report file (the search runs in the page) and
under ``trajdebug serve`` (the search runs on the server, which stores each answer)."""

from __future__ import annotations

import dataclasses
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from trajdebug.analysis import analyze
from trajdebug.answers import import_answers
from trajdebug.core.model import Run
from trajdebug.demo import run_demo
from trajdebug.report.html import write_report
from trajdebug.serve import Server
from trajdebug.sources.load import load_runs


def wrong_steps(run: Run) -> set[str]:
    """The truth about the demo run: its planted root and every step downstream of it are wrong."""
    out = {run.metadata["fault"]["step_id"]}
    changed = True
    while changed:
        changed = False
        for s in run.steps:
            if s.step_id not in out and any(d.step_id in out for d in s.deps):
                out.add(s.step_id)
                changed = True
    return out


def answer_until_root(page: Any, run: Run, *, stop_after: int | None = None, keys: bool = False) -> list[str]:
    """Answer the panel's questions truthfully until it shows the root (or ``stop_after`` answers),
    with the buttons or (``keys``) the terminal's keys y and n."""
    wrong = wrong_steps(run)
    asked: list[str] = []
    for _ in range(len(run.steps) + 1):
        page.wait_for_selector("#ask-question, #ask-result")
        if page.query_selector("#ask-result") is not None or (stop_after is not None and len(asked) >= stop_after):
            return asked
        sid = page.get_attribute("#ask-question", "data-step")
        asked.append(sid)
        if keys:
            page.keyboard.press("n" if sid in wrong else "y")
        else:
            page.click(f'#ask-question button[data-answer="{"wrong" if sid in wrong else "correct"}"]')
        page.wait_for_function(
            "sid => !document.querySelector('#ask-question') || document.querySelector('#ask-question').dataset.step !== sid",
            arg=sid,
        )
    raise AssertionError("the panel never reached a root")


def test_the_report_file_finds_the_planted_root_in_the_page_and_offers_the_answers(
    page: Any, tmp_path: Path
) -> None:
    """Answered truthfully, the static report's panel ends at the demo's planted root, certain; its
    download is accepted by `trajdebug answers import` and stores every answer with the run."""
    src = tmp_path / "demo.jsonl"
    run = run_demo(path=src, workdir=tmp_path)
    report = write_report(tmp_path / "report.html", analyze(load_runs(src)[0]))
    page.goto(report.as_uri())
    page.click('#tabs [data-tab="ask"]')
    asked = answer_until_root(page, run)
    root = run.metadata["fault"]["step_id"]
    assert page.get_attribute("#ask-result", "data-root") == root
    assert page.get_attribute("#ask-result", "data-certain") == "true"
    assert "Path to the failure" in page.text_content("#ask-result")
    with page.expect_download() as info:
        page.click("#ask-download")
    download = tmp_path / "answers.jsonl"
    info.value.save_as(download)
    stored = import_answers(src, download)
    assert [a.step_id for a in stored] == asked
    assert {a.step_id for a in load_runs(src)[0].answers} == set(asked)
    assert page.errors == []


def test_serve_stores_each_answer_and_resumes_after_a_restart(page: Any, tmp_path: Path) -> None:
    """Under serve each answer is posted and stored; after serve restarts the panel goes on from the
    stored answers (never asking one again) and reaches the planted root."""
    db = tmp_path / "runs.db"
    run = run_demo(store=db, workdir=tmp_path)
    root = run.metadata["fault"]["step_id"]
    with Server(db, port=0) as srv:
        page.goto(f"{srv.url}runs/{run.run_id}")
        page.click('#tabs [data-tab="ask"]')
        first = answer_until_root(page, run, stop_after=1)
    assert [a.step_id for a in load_runs(db, run_id=run.run_id)[0].answers] == first
    with Server(db, port=0) as srv:
        page.goto(f"{srv.url}runs/{run.run_id}")
        page.click('#tabs [data-tab="ask"]')
        rest = answer_until_root(page, run)
    assert not set(first) & set(rest)
    assert page.get_attribute("#ask-result", "data-root") == root
    assert page.get_attribute("#ask-result", "data-certain") == "true"
    assert len(load_runs(db, run_id=run.run_id)[0].answers) == len(first) + len(rest)
    assert page.errors == []


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_serve_refuses_an_answer_that_is_not_json_from_its_own_page(tmp_path: Path) -> None:
    """A form post (not JSON), another site's Origin, an unknown word or step: 400, nothing stored."""
    db = tmp_path / "runs.db"
    run = run_demo(store=db, workdir=tmp_path)
    sid = run.steps[2].step_id
    good = json.dumps({"step_id": sid, "answer": "wrong"}).encode()
    with Server(db, port=0) as srv:
        url = f"{srv.url}api/runs/{run.run_id}/ask"
        host = f"127.0.0.1:{srv.port}"
        assert _post(url, b"step_id=x&answer=wrong", {"Content-Type": "application/x-www-form-urlencoded"})[0] == 400
        assert _post(url, good, {"Content-Type": "application/json", "Origin": "http://evil.example"})[0] == 400
        bad_word = json.dumps({"step_id": sid, "answer": "maybe"}).encode()
        assert _post(url, bad_word, {"Content-Type": "application/json"})[0] == 400
        no_step = json.dumps({"step_id": "nope", "answer": "wrong"}).encode()
        assert _post(url, no_step, {"Content-Type": "application/json"})[0] == 400
        assert load_runs(db, run_id=run.run_id)[0].answers == ()
        status, state = _post(url, good, {"Content-Type": "application/json", "Origin": f"http://{host}"})
    assert status == 200 and [a["step_id"] for a in state["answers"]] == [sid]


def test_the_page_asks_what_the_python_search_asks_on_every_demo_fault(page: Any, tmp_path: Path) -> None:
    """The page's port of the selection rule asks the same steps in the same order as GuidedSearch
    (prior strategy) and ends at the same root, on each of the demo's faults, answered truthfully."""
    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer
    from trajdebug.demo import FAULTS

    for fault in FAULTS:
        src = tmp_path / f"{fault}.jsonl"
        (tmp_path / fault).mkdir()
        run = run_demo(fault, path=src, workdir=tmp_path / fault)
        analysis = analyze(load_runs(src)[0])
        wrong = wrong_steps(run)
        search = GuidedSearch(analysis)
        python: list[str] = []
        while (sid := search.next_question()) is not None:
            python.append(sid)
            search.answer(Answer(sid, sid not in wrong, "person"))
        expected = search.result()
        page.goto(write_report(tmp_path / f"{fault}.html", analysis).as_uri())
        page.click('#tabs [data-tab="ask"]')
        if expected.failure is None:
            assert page.query_selector("#ask-question") is None, fault
            continue
        assert answer_until_root(page, run) == python, fault
        assert page.get_attribute("#ask-result", "data-root") == (expected.root or ""), fault
        assert page.get_attribute("#ask-result", "data-certain") == str(expected.certain).lower(), fault


def test_planted_markup_in_a_question_stays_text(page: Any, tmp_path: Path, hostile_run: Run) -> None:
    """<script>, onerror= and javascript: in a questioned step's name, input and output, and in its
    producers, are shown as text by the panel, in the report file and under serve; nothing runs."""
    from trajdebug.store import Store

    planted = "<script>window.__pwned"

    report = write_report(tmp_path / "hostile.html", analyze(hostile_run))
    db = tmp_path / "hostile.db"
    Store(db).save_run(hostile_run)
    with Server(db, port=0) as srv:
        for url in (report.as_uri(), f"{srv.url}runs/{hostile_run.run_id}"):
            page.goto(url)
            page.click('#tabs [data-tab="ask"]')
            shown = 0
            for _ in range(len(hostile_run.steps)):
                page.wait_for_selector("#ask-question, #ask-result")
                if page.query_selector("#ask-question") is None:
                    break
                shown += 1
                assert planted in (page.text_content("#ask-question") or "")
                sid = page.get_attribute("#ask-question", "data-step")
                page.click('#ask-question button[data-answer="correct"]')
                page.wait_for_function(
                    "sid => !document.querySelector('#ask-question') || document.querySelector('#ask-question').dataset.step !== sid",
                    arg=sid,
                )
            assert shown >= 1 and page.evaluate("window.__pwned") is None
            assert page.locator("#ask img").count() == 0 and page.locator("#ask script").count() == 0
    assert page.errors == [] and page.dialogs == []


def test_a_report_written_after_some_answers_starts_from_them(page: Any, tmp_path: Path) -> None:
    """A report of a run with a stored answer never asks that step; its questions (answered with the
    keys y and n) are the rest of what the Python search asks from the same answers, and it ends at
    the planted root."""
    import trajdebug
    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer

    src = tmp_path / "demo.jsonl"
    run = run_demo(path=src, workdir=tmp_path)
    wrong = wrong_steps(run)
    first = GuidedSearch(analyze(load_runs(src)[0])).next_question()
    assert first is not None
    trajdebug.save_answer(src, run.run_id, Answer(first, first not in wrong, "person"))
    analysis = analyze(load_runs(src)[0])
    search = GuidedSearch(analysis, analysis.run.answers)
    python = []
    while (sid := search.next_question()) is not None:
        python.append(sid)
        search.answer(Answer(sid, sid not in wrong, "person"))
    page.goto(write_report(tmp_path / "report.html", analysis).as_uri())
    page.click('#tabs [data-tab="ask"]')
    asked = answer_until_root(page, run, keys=True)
    assert first not in asked and asked == python
    assert page.get_attribute("#ask-result", "data-root") == run.metadata["fault"]["step_id"]


def test_on_a_2000_step_run_the_page_asks_what_python_asks(page: Any, tmp_path: Path) -> None:
    """On a 2,000-step run (a root planted mid-slice, answered truthfully) the page asks the Python
    search's questions in its order and names the planted root (its speed is measured in benchmarks/, not here)."""
    from benchmarks.report_html import agent_run

    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer

    run = agent_run(2_000, agents=8)
    analysis = analyze(run)
    search = GuidedSearch(analysis)
    assert len(search.ids) > 1000
    planted = search.ids[len(search.ids) // 2]
    wrong = {planted}
    for sid in search.ids:  # topological order: a step is wrong when a producer of it is
        if any(search.ids[p] in wrong for p in search.parents[search.index[sid]]):
            wrong.add(sid)
    python: list[str] = []
    while (sid := search.next_question()) is not None:
        python.append(sid)
        search.answer(Answer(sid, sid not in wrong, "person"))
    page.goto(write_report(tmp_path / "big.html", analysis).as_uri())
    page.click('#tabs [data-tab="ask"]')
    asked: list[str] = []
    for _ in range(len(python) + 1):
        page.wait_for_selector("#ask-question, #ask-result")
        if page.query_selector("#ask-result") is not None:
            break
        sid = page.get_attribute("#ask-question", "data-step")
        asked.append(sid)
        page.click(f'#ask-question button[data-answer="{"wrong" if sid in wrong else "correct"}"]')
        page.wait_for_function(
            "sid => !document.querySelector('#ask-question') || document.querySelector('#ask-question').dataset.step !== sid",
            arg=sid,
        )
    assert asked == python
    assert page.get_attribute("#ask-result", "data-root") == search.result().root == planted


def test_serve_with_a_token_stores_an_answer_only_with_the_token(tmp_path: Path) -> None:
    """A server with a token refuses an answer without it (401) and stores one that carries it."""
    db = tmp_path / "runs.db"
    run = run_demo(store=db, workdir=tmp_path)
    sid = run.steps[2].step_id
    body = json.dumps({"step_id": sid, "answer": "correct"}).encode()
    with Server(db, port=0, token="s3cret-token") as srv:
        url = f"http://127.0.0.1:{srv.port}/api/runs/{run.run_id}/ask"
        req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
        try:
            urllib.request.urlopen(req, timeout=10)
            status = 200
        except urllib.error.HTTPError as exc:
            status = exc.code
        assert status == 401
        assert load_runs(db, run_id=run.run_id)[0].answers == ()
        ok, _ = _post(url, body, {"Content-Type": "application/json", "Authorization": "Bearer s3cret-token"})
    assert ok == 200 and [a.step_id for a in load_runs(db, run_id=run.run_id)[0].answers] == [sid]


def test_the_page_audits_a_proof_over_inferred_inputs_as_python_does(page: Any, tmp_path: Path) -> None:
    """A run whose edges were inferred and whose root was never tied to its consumer: Python's search
    audits the wrong proof and reaches the planted root; the page asks the same steps and ends there."""
    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer, Dependency, Step

    def step(sid: str, name: str, out: str, start: int, *deps: str) -> Step:
        return Step(sid, name, "tool", input={"q": name}, output=out, start_ns=start, end_ns=start + 1,
                    deps=tuple(Dependency(d, origin="inferred") for d in deps))

    run = Run("r1", "gap", 0, 20, "failure", "quota exceeded", steps=(
        step("a", "load_account", "acct-7", 0),
        step("c", "lookup_quota", "quota=5", 2),
        step("b", "plan_batch", "batch of 9", 4, "a"),
        step("f", "submit_batch", "rejected", 6, "b"),
    ))
    wrong = {"c", "b", "f"}
    analysis = analyze(run)
    search = GuidedSearch(analysis)
    python: list[str] = []
    while (sid := search.next_question()) is not None:
        python.append(sid)
        search.answer(Answer(sid, sid not in wrong, "person"))
    expected = search.result()
    assert expected.audited and (expected.root, expected.certain) == ("c", True)
    page.goto(write_report(tmp_path / "gapped.html", analysis).as_uri())
    page.click('#tabs [data-tab="ask"]')
    asked: list[str] = []
    for _ in range(len(run.steps) + 1):
        page.wait_for_selector("#ask-question, #ask-result")
        if page.query_selector("#ask-result") is not None:
            break
        sid = page.get_attribute("#ask-question", "data-step")
        asked.append(sid)
        page.click(f'#ask-question button[data-answer="{"wrong" if sid in wrong else "correct"}"]')
        page.wait_for_function(
            "sid => !document.querySelector('#ask-question') || document.querySelector('#ask-question').dataset.step !== sid",
            arg=sid,
        )
    assert asked == python
    assert page.get_attribute("#ask-result", "data-root") == "c"


# -- three-valued answers (Naish 1997): the page's port of _verdicts.Verdicts -------------------------------

SEARCH_JS = Path(__file__).resolve().parents[1] / "src" / "trajdebug" / "report" / "assets" / "search.js"
_STATES = """([src, A, seq]) => {
  const eng = new Function(src + "; return guidedEngine;")()(A);
  return seq.map(([s, c, a]) => {
    eng.next();  // as the page does before each answer (an audit ties what it asked to the proof)
    eng.answer(s, c, a);
    const r = eng.result();
    return { root: r.root, certain: r.certain, cands: r.candidates.map((x) => x[0]).sort(),
             conflict: r.conflict.length > 0, implied: r.implied.map((v) => v.step).sort(), done: eng.next() === null };
  });
}"""


_ASKS = """([src, A, truth]) => {
  const eng = new Function(src + "; return guidedEngine;")()(A);
  const asked = [];
  for (let k = 0; k <= 2 * A.ids.length; k++) {
    const s = eng.next();
    if (!s) break;
    asked.push(s);
    eng.answer(s, truth[s][0], truth[s][1]);
  }
  const r = eng.result();
  return { asked, root: r.root, certain: r.certain };
}"""


def _random_run(rng: Any, n: int, containers: bool) -> Run:
    from trajdebug.core.model import Dependency, Step

    steps = []
    for k in range(n):
        picks = sorted(rng.sample(range(k), min(k, rng.randint(0, 2))))
        deps = tuple(Dependency(f"s{j}", origin=rng.choice(["tracked", "inferred"])) for j in picks)
        parent = f"s{rng.randrange(k)}" if containers and k and rng.random() < 0.3 else None
        # Some steps relay an input whole (a pass-through): a correct answer about one implies its input.
        out = steps[picks[0]].output if picks and rng.random() < 0.3 else f"out {k} " * 5
        steps.append(Step(f"s{k}", f"step{k}", rng.choice(["tool", "llm", "parse"]), input={"k": k},
                          output=out, start_ns=k * 10, end_ns=k * 10 + 5, deps=deps, parent_id=parent))
    # Some containers pass a child's output on unchanged (a graph node around a model call): not asked.
    last = {s.parent_id: s.output for s in steps if s.parent_id}
    steps = [dataclasses.replace(s, output=last[s.step_id]) if s.step_id in last and rng.random() < 0.5 else s
             for s in steps]
    return Run("r1", "random", 0, n * 10, "failure", "boom", steps=tuple(steps))


def _python_states(analysis: Any, truth: dict[str, tuple[bool | None, bool | None]]) -> tuple[list[Any], list[Any]]:
    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer

    search = GuidedSearch(analysis)
    seq: list[Any] = []
    states: list[Any] = []
    while (sid := search.next_question()) is not None:
        correct, admissible = truth[sid]
        search.answer(Answer(sid, correct, "person", admissible=admissible))
        seq.append([sid, correct, admissible])
        r = search.result()
        implied = sorted(a.step_id for a in r.implied)  # carried whole, or vouched by an erroneous answer
        states.append({"root": r.root, "certain": r.certain, "cands": sorted(s for s, _ in r.candidates),
                       "conflict": bool(r.conflict), "implied": implied, "done": search.next_question() is None})
    return seq, states


def test_the_page_search_stands_where_python_stands_after_every_three_valued_answer(page: Any) -> None:
    """On 140 random DAGs (some with containers, some passing a child's output on, some steps relaying an
    input whole) answered with random three-valued answers, the page's search holds, after each answer
    Python's search was given, the same candidates, root, certainty, implied inputs (carried, vouched, or
    a child's answer standing for its container) and doneness (a conflict is one on both sides)."""
    import random

    from trajdebug.report.question import ask_data

    src = SEARCH_JS.read_text(encoding="utf-8")
    labels = [(True, None), (False, True), (False, False), (False, None), (None, None)]
    three = carried = stands = 0
    for seed in range(140):
        rng = random.Random(seed)
        n = rng.randint(3, 14)
        run = _random_run(rng, n, containers=seed % 2 == 0)
        truth = {s.step_id: rng.choice(labels) for s in run.steps}
        analysis = analyze(run)
        stands += len(ask_data(analysis)["stands"] or ()) and 1
        seq, want = _python_states(analysis, truth)
        three += sum(1 for _, c, a in seq if c is False and a is not None)
        got = page.evaluate(_STATES, [src, json.loads(json.dumps(ask_data(analysis))), seq])
        carried += len(want[-1]["implied"]) if want else 0
        for k, (w, g) in enumerate(zip(want, got, strict=True)):
            if w["conflict"] and g["conflict"]:  # the page names both sides; Python re-asks
                w = {**w, "cands": None, "root": None, "done": None}
                g = {**g, "cands": None, "root": None, "done": None}
            assert g == w, (seed, seq[: k + 1])
    # The answers exercised both kinds of wrong, implied inputs, and containers passing a child's output on.
    assert three > 100 and carried > 10 and stands > 10


def _three_valued_truth(run: Run) -> dict[str, str]:
    """The demo's truth, three-valued: the planted root is wrong by its own fault, what it feeds is wrong
    for a wrong input, the rest correct (the page's data-answer words)."""
    root = run.metadata["fault"]["step_id"]
    return {sid: ("erroneous" if sid == root else "inadmissible") for sid in wrong_steps(run)}


KEYS = {"correct": "y", "erroneous": "o", "inadmissible": "i", "wrong": "n"}
"""The terminal's keys, as the page reads them."""


def _answer_page(page: Any, pick: Any, limit: int) -> list[str]:
    asked: list[str] = []
    for _ in range(limit):
        page.wait_for_selector("#ask-question, #ask-result")
        if page.query_selector("#ask-result") is not None:
            return asked
        sid = page.get_attribute("#ask-question", "data-step")
        asked.append(sid)
        pick(sid)
        page.wait_for_function(
            "sid => !document.querySelector('#ask-question') || document.querySelector('#ask-question').dataset.step !== sid",
            arg=sid,
        )
    raise AssertionError("the panel never reached a root")


def test_three_valued_buttons_ask_what_python_asks_and_the_download_keeps_admissible(page: Any, tmp_path: Path) -> None:
    """On each demo fault, answered with the two kinds of wrong (buttons, or the keys o and i), the page
    asks what GuidedSearch asks from the same three-valued answers and ends at the same root, saying an
    erroneous answer proved it; its download, imported, stores each answer's `admissible`."""
    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer
    from trajdebug.demo import FAULTS

    for n, fault in enumerate(FAULTS):
        src = tmp_path / f"{fault}.jsonl"
        (tmp_path / fault).mkdir()
        run = run_demo(fault, path=src, workdir=tmp_path / fault)
        truth = _three_valued_truth(run)
        analysis = analyze(load_runs(src)[0])
        search = GuidedSearch(analysis)
        python: list[str] = []
        while (sid := search.next_question()) is not None:
            python.append(sid)
            word = truth.get(sid, "correct")
            search.answer(Answer(sid, word == "correct", "person", admissible={"erroneous": True, "inadmissible": False}.get(word)))
        expected = search.result()
        page.goto(write_report(tmp_path / f"{fault}.html", analysis).as_uri())
        page.click('#tabs [data-tab="ask"]')
        if expected.failure is None:
            continue
        if n % 2:
            asked = _answer_page(page, lambda sid, t=truth: page.keyboard.press(KEYS[t.get(sid, "correct")]), len(run.steps) + 1)
        else:
            asked = _answer_page(page, lambda sid, t=truth: page.click(f'#ask-question button[data-answer="{t.get(sid, "correct")}"]'), len(run.steps) + 1)
        assert asked == python, fault
        assert page.get_attribute("#ask-result", "data-root") == (expected.root or ""), fault
        assert page.get_attribute("#ask-result", "data-certain") == str(expected.certain).lower(), fault
        if expected.certain and truth.get(expected.root or "") == "erroneous":
            assert "answered wrong for the inputs it was given" in (page.text_content("#ask-result") or ""), fault
        with page.expect_download() as info:
            page.click("#ask-download")
        download = tmp_path / f"{fault}.answers.jsonl"
        info.value.save_as(download)
        stored = {a.step_id: a.admissible for a in import_answers(src, download)}
        assert stored == {s: {"erroneous": True, "inadmissible": False}.get(truth.get(s, "correct")) for s in asked}, fault
        reloaded = {a.step_id: (a.correct, a.admissible) for a in load_runs(src)[0].answers}
        assert reloaded == {s: (truth.get(s, "correct") == "correct", stored[s]) for s in asked}, fault
    assert page.errors == []


def test_an_erroneous_leaf_is_proven_by_one_answer_and_an_inadmissible_step_is_never_the_root(page: Any, tmp_path: Path) -> None:
    """On a chain load -> plan -> submit (the failure): 'wrong, its own fault' on plan proves it in one
    answer, its input vouched for in the proof; 'wrong, given a wrong input' on plan sends the search to
    load, which is the root and plan never is; Python's search asks the same."""
    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer, Dependency, Step

    def step(sid: str, name: str, start: int, *deps: str) -> Step:
        return Step(sid, name, "tool", input={"q": name}, output=f"{name} output value", start_ns=start,
                    end_ns=start + 1, deps=tuple(Dependency(d) for d in deps))

    run = Run("r1", "chain", 0, 20, "failure", "rejected", steps=(
        step("a", "load_account", 0), step("b", "plan_batch", 4, "a"), step("f", "submit_batch", 6, "b"),
    ))
    analysis = analyze(run, model=None)  # the hand prior: "one answer" needs plan_batch asked first, not the model's order
    for truth, root in (({"b": "erroneous"}, "b"), ({"b": "inadmissible", "a": "erroneous"}, "a"),
                        ({"b": "inadmissible", "a": "wrong"}, "a")):
        search = GuidedSearch(analysis)
        python: list[str] = []
        while (sid := search.next_question()) is not None:
            python.append(sid)
            word = truth.get(sid, "correct")
            search.answer(Answer(sid, word == "correct", "person", admissible={"erroneous": True, "inadmissible": False}.get(word)))
        page.goto(write_report(tmp_path / "chain.html", analysis).as_uri())
        page.click('#tabs [data-tab="ask"]')
        asked = _answer_page(page, lambda sid, t=truth: page.click(f'#ask-question button[data-answer="{t.get(sid, "correct")}"]'), 5)
        assert asked == python and search.result().root == root, truth
        assert page.get_attribute("#ask-result", "data-root") == root
        assert page.get_attribute("#ask-result", "data-certain") == "true"
        text = page.text_content("#ask-result") or ""
        if truth == {"b": "erroneous"}:
            assert asked == ["b"] and "implied: load_account" not in text
            assert "correct load_account" in text and "plan_batch" in text and "for the inputs it was given" in text
        assert "b" not in (page.get_attribute("#ask-result", "data-root") or "") or root == "b"


def test_a_container_answered_erroneous_is_searched_among_its_children(page: Any, tmp_path: Path) -> None:
    """An agent step enclosing two tool calls, stored answered 'wrong, its own fault': its children stay
    suspects (its external input is vouched for, never asked) and the page, as Python, goes on to the
    faulty child."""
    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer, Dependency, Step

    def step(sid: str, name: str, kind: str, start: int, *deps: str, parent: str | None = None) -> Step:
        return Step(sid, name, kind, input={"q": name}, output=f"{name} output value", start_ns=start, end_ns=start + 9,
                    deps=tuple(Dependency(d, origin="tracked") for d in deps), parent_id=parent)

    run = Run("r1", "nested", 0, 90, "failure", "rejected", steps=(
        step("in", "read_request", "tool", 0),
        step("ag", "planner", "agent", 10, "in", "t1", "t2"),
        step("t1", "search_catalog", "tool", 11, "in", parent="ag"),
        step("t2", "price_items", "tool", 13, "t1", parent="ag"),
        step("f", "submit_order", "tool", 40, "ag"),
    ), answers=(Answer("ag", False, "person", 1, admissible=True),))  # stored: the page starts from it
    truth = {"t2": "erroneous", "t1": "correct", "in": "correct"}
    analysis = analyze(run)
    search = GuidedSearch(analysis, analysis.run.answers)
    python: list[str] = []
    while (sid := search.next_question()) is not None:
        python.append(sid)
        word = truth.get(sid, "correct")
        search.answer(Answer(sid, word == "correct", "person", admissible={"erroneous": True}.get(word)))
    assert search.result().root == "t2" and python and "in" not in python
    page.goto(write_report(tmp_path / "nested.html", analysis).as_uri())
    page.click('#tabs [data-tab="ask"]')
    asked = _answer_page(page, lambda sid: page.click(f'#ask-question button[data-answer="{truth[sid]}"]'), 6)
    assert asked == python
    assert page.get_attribute("#ask-result", "data-root") == "t2"
    assert page.get_attribute("#ask-result", "data-certain") == "true"


def test_serve_posts_the_kind_of_wrong_and_stores_it(page: Any, tmp_path: Path) -> None:
    """Under serve the buttons 'wrong, its own fault' and 'wrong, given a wrong input' post erroneous and
    inadmissible: the stored answers carry admissible, and the search ends at the planted root."""
    db = tmp_path / "runs.db"
    run = run_demo(store=db, workdir=tmp_path)
    truth = _three_valued_truth(run)
    with Server(db, port=0) as srv:
        page.goto(f"{srv.url}runs/{run.run_id}")
        page.click('#tabs [data-tab="ask"]')
        asked = _answer_page(page, lambda sid: page.click(f'#ask-question button[data-answer="{truth.get(sid, "correct")}"]'), len(run.steps) + 1)
        text = page.text_content("#ask-result") or ""
    assert page.get_attribute("#ask-result", "data-root") == run.metadata["fault"]["step_id"]
    stored = {a.step_id: (a.correct, a.admissible) for a in load_runs(db, run_id=run.run_id)[0].answers}
    kinds = {"erroneous": (False, True), "inadmissible": (False, False), "correct": (True, None)}
    assert stored == {s: kinds[truth.get(s, "correct")] for s in asked}
    assert any(a is not None for _, a in stored.values())
    if stored.get(run.metadata["fault"]["step_id"]) == (False, True):
        assert "answered wrong for the inputs it was given" in text
    assert page.errors == []


def test_planted_markup_in_the_three_valued_proof_stays_text(page: Any, tmp_path: Path, hostile_run: Run) -> None:
    """Every question of a run with planted markup answered 'wrong, its own fault': the help, the answers
    and the proof (names of the root and of the inputs it vouched for) show the markup as text; nothing runs."""
    page.goto(write_report(tmp_path / "hostile3.html", analyze(hostile_run)).as_uri())
    page.click('#tabs [data-tab="ask"]')
    _answer_page(page, lambda sid: page.keyboard.press("o"), len(hostile_run.steps) + 1)
    assert "wrong (its own fault)" in (page.text_content("#ask") or "")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#ask img").count() == 0 and page.locator("#ask script").count() == 0
    assert page.errors == [] and page.dialogs == []


def test_the_page_asks_what_python_asks_on_random_runs_two_and_three_valued(page: Any) -> None:
    """On 150 random DAGs of up to 40 steps, answered truthfully two-valued, truthfully three-valued (the
    planted root erroneous, what it feeds inadmissible) and at random, the page's search asks Python's
    questions in Python's order and ends at the same root (Python re-asks a conflict; the page stops)."""
    import random

    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer
    from trajdebug.report.question import ask_data

    src = SEARCH_JS.read_text(encoding="utf-8")
    labels = [(True, None), (False, True), (False, False), (False, None), (None, None)]
    for seed in range(150):
        rng = random.Random(seed)
        n = rng.randint(3, 40)
        run = _random_run(rng, n, containers=seed % 2 == 1)
        root = f"s{rng.randrange(n - 1)}"
        wrong = {root}
        for s in run.steps:
            if any(d.step_id in wrong for d in s.deps):
                wrong.add(s.step_id)
        mode = seed % 3
        truth: dict[str, tuple[bool | None, bool | None]] = {
            s.step_id: rng.choice(labels) if mode == 2
            else (True, None) if s.step_id not in wrong
            else (False, None) if mode == 0
            else (False, s.step_id == root)
            for s in run.steps
        }
        analysis = analyze(run)
        search = GuidedSearch(analysis)
        python: list[str] = []
        while (sid := search.next_question()) is not None:
            python.append(sid)
            search.answer(Answer(sid, truth[sid][0], "person", admissible=truth[sid][1]))
        expected = search.result()
        got = page.evaluate(_ASKS, [src, json.loads(json.dumps(ask_data(analysis))), {k: list(v) for k, v in truth.items()}])
        if expected.conflict:  # Python re-asks the two sides once; the page names them
            assert python[: len(got["asked"])] == got["asked"] and got["root"] is None, seed
            continue
        assert (got["asked"], got["root"], got["certain"]) == (python, expected.root, expected.certain), seed


# -- since fix38a: `earlier` skips the step's consumers, `proven`, conflict sides, answers about the failure ---

_STATES_NAMED = """([src, A, seq]) => {
  const eng = new Function(src + "; return guidedEngine;")()(A);
  return seq.map(([s, c, a]) => {
    eng.next();
    eng.answer(s, c, a);
    const r = eng.result();
    return { root: r.root, certain: r.certain, cands: r.candidates.map((x) => x[0]).sort(), conflict: r.conflict,
             implied: r.implied.map((v) => v.step).sort(), misled: r.misled || [], next: eng.next() };
  });
}"""


def _named_states(analysis: Any, seq: list[Any], audit: int | None = None) -> list[Any]:
    """Python's search after each answer of ``seq`` (asking before each, as the page does): the conflict by name."""
    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer

    search = GuidedSearch(analysis, analysis.run.answers, **({} if audit is None else {"audit": audit}))
    out = []
    for sid, correct, admissible in seq:
        search.next_question()
        search.answer(Answer(sid, correct, "person", admissible=admissible))
        r = search.result()
        nxt = search.next_question()
        out.append({"root": r.root, "certain": r.certain, "conflict": list(r.conflict),
                    "cands": [] if r.conflict else sorted(s for s, _ in r.candidates),
                    "implied": sorted(a.step_id for a in r.implied), "misled": list(r.misled),
                    "next": None if r.conflict else nxt})
    return out


def _page_states(page: Any, analysis: Any, seq: list[Any], audit: int | None = None) -> list[Any]:
    from trajdebug.report.question import ask_data

    data = json.loads(json.dumps(ask_data(analysis)))
    if audit is not None:
        data["audit"] = audit
    got = page.evaluate(_STATES_NAMED, [SEARCH_JS.read_text(encoding="utf-8"), data, seq])
    for g in got:
        if g["conflict"]:  # Python re-asks a conflict; the page names both sides and stops
            g["next"] = None
    return list(got)


def _failed(steps: Any, failure: str, answers: Any = ()) -> Any:
    """An analysis of ``steps`` whose failure is ``failure`` (named, not detected: the shapes below are bare)."""
    from trajdebug.analysis import Analysis
    from trajdebug.analysis._detect import Failure
    from trajdebug.analysis._localize import Localization, SearchStats

    run = Run("r1", "t", 0, 99, "failure", steps=tuple(steps), answers=tuple(answers))
    loc = Localization([], SearchStats(len(steps), len(steps), 0.0), failures=(Failure(failure, "outcome", "x", "x", "final"),))
    return Analysis(run, loc.failures, loc)


def test_an_unfed_inadmissible_step_never_makes_the_failure_certain_in_the_page_as_in_python(page: Any) -> None:
    """fetch -> convert -> check (the failure), convert answered 'given a wrong input' and fetch correct, with
    distinct, tied and missing start times: the page, as Python, proves no root and names the conflict
    check against convert (never check against itself), after every answer; also when two sources answered
    about the failure."""
    from trajdebug.core.model import Answer, Dependency, Step

    seq = [["c1", False, False], ["c0", True, None]]
    for starts in ((1, 2, 3), (1, 2, 2), (0, 0, 0)):
        for answers in ((), (Answer("c2", False, "oracle:x", 1, admissible=True), Answer("c2", False, "person", 2))):
            analysis = _failed([
                Step("c0", "fetch", "tool", output=1, start_ns=starts[0], end_ns=starts[0]),
                Step("c1", "convert", "other", output=2, deps=(Dependency("c0"),), start_ns=starts[1], end_ns=starts[1]),
                Step("c2", "check", "other", output=None, status="error", deps=(Dependency("c1"),),
                     start_ns=starts[2], end_ns=starts[2]),
            ], "c2", answers)
            want = _named_states(analysis, seq)
            assert want[-1]["conflict"] == ["c2", "c1"] and not want[-1]["certain"], starts
            assert _page_states(page, analysis, seq) == want, (starts, answers)
    assert page.errors == []


def test_a_failure_enclosing_an_inadmissible_child_is_not_certain_in_the_page_as_in_python(page: Any) -> None:
    """An agent step (the failure, started first) encloses load and compute; compute answered 'given a wrong
    input', load correct: the page, as Python, with the audit off and on, stands where Python stands after
    every answer and never calls the failure a certain root."""
    from trajdebug.core.model import Dependency, Step

    analysis = _failed([
        Step("F", "agent", "agent", output={"x": 1}, status="error", start_ns=0, end_ns=9, deps=(Dependency("B"),)),
        Step("A", "load", "tool", parent_id="F", output=5, start_ns=1, end_ns=2),
        Step("B", "compute", "other", parent_id="F", output=7, start_ns=3, end_ns=4),
    ], "F")
    seq = [["B", False, False], ["A", True, None]]
    for audit in (0, None):
        want = _named_states(analysis, seq, audit)
        assert not any(w["certain"] and w["root"] == "F" for w in want), audit
        assert _page_states(page, analysis, seq, audit) == want, audit
    assert page.errors == []


def test_a_wrapper_passing_a_right_childs_value_on_unconverted_is_asked_in_the_page_as_in_python(page: Any) -> None:
    """read -> to_metres (a wrapper answering with its child's output unchanged) -> plan -> validate, the
    child right and the wrapper wrong: the page, as Python, asks the wrapper after its child and proves it
    the root; with the child wrong, neither asks the wrapper and both prove the child."""
    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer, Dependency, Step
    from trajdebug.report.question import ask_data

    raw = {"depth_ft": 12.5, "site": "north basin"}
    analysis = _failed([
        Step("r", "read_gauge", "tool", output=raw, start_ns=0, end_ns=1),
        Step("w", "to_metres", "agent", output=dict(raw), deps=(Dependency("r"),), start_ns=1, end_ns=5),
        Step("c", "fetch_reading", "tool", output=dict(raw), deps=(Dependency("r"),), start_ns=2, end_ns=3,
             parent_id="w"),
        Step("m", "plan", "llm", output={"dive": "go"}, deps=(Dependency("w"),), start_ns=6, end_ns=7),
        Step("f", "validate", "tool", output="rejected", deps=(Dependency("m"),), start_ns=8, end_ns=9),
    ], "f")
    src = SEARCH_JS.read_text(encoding="utf-8")
    for right, root in (({"r", "c"}, "w"), ({"r"}, "c")):
        truth = {s.step_id: [s.step_id in right, None] for s in analysis.run.steps}
        search = GuidedSearch(analysis)
        python: list[str] = []
        while (sid := search.next_question()) is not None:
            python.append(sid)
            search.answer(Answer(sid, truth[sid][0], "person"))
        expected = search.result()
        assert (expected.root, expected.certain) == (root, True)
        assert ("w" in python) == ("c" in right)
        got = page.evaluate(_ASKS, [src, json.loads(json.dumps(ask_data(analysis))), truth])
        assert (got["asked"], got["root"], got["certain"]) == (python, root, True), right
    assert page.errors == []


def test_the_page_stands_where_python_stands_with_coarse_clocks_and_unrecorded_inputs(page: Any) -> None:
    """On 150 random DAGs whose start times are tied or missing, some inputs left unrecorded and (every
    third) the failure enclosing steps, answered with random three-valued answers, the page's search holds
    Python's root, certainty, candidates, conflict sides, implied inputs and next question after each answer."""
    import random

    from trajdebug.core.model import Dependency, Step

    labels = [(True, None), (False, True), (False, False), (False, False), (False, None), (None, None)]
    unfed = certain_false = 0
    for seed in range(150):
        rng = random.Random(1000 + seed)
        n = rng.randint(3, 12)
        clock = seed % 3  # distinct, coarse (three steps a tick), none
        steps = []
        for k in range(n):
            picks = sorted(rng.sample(range(k), min(k, rng.randint(0, 2))))
            if picks and rng.random() < 0.25:
                picks = picks[1:]  # an input the recording missed
            at = (k * 10, (k // 3) * 10, 0)[clock]
            parent = f"s{n - 1}" if seed % 3 == 2 and k < n - 1 and rng.random() < 0.4 else None
            steps.append(Step(f"s{k}", f"step{k}", rng.choice(["tool", "llm"]), input={"k": k}, output=f"out {k} " * 4,
                              start_ns=at, end_ns=at + 5, deps=tuple(Dependency(f"s{j}") for j in picks), parent_id=parent,
                              status="error" if k == n - 1 else "ok"))
        if seed % 3 == 2:  # the failure encloses steps: it started first
            steps[-1] = Step(f"s{n - 1}", "agent", "agent", input={"k": n - 1}, output="boom", start_ns=0, end_ns=99,
                             deps=steps[-1].deps, status="error")
        analysis = _failed(steps, f"s{n - 1}")
        truth = {s.step_id: rng.choice(labels) for s in steps}
        from trajdebug.analysis import GuidedSearch
        from trajdebug.core.model import Answer

        search = GuidedSearch(analysis)
        seq: list[Any] = []
        while (sid := search.next_question()) is not None and len(seq) <= 2 * n:
            seq.append([sid, *truth[sid]])
            search.answer(Answer(sid, truth[sid][0], "person", admissible=truth[sid][1]))
        if not seq:
            continue
        want = _named_states(analysis, seq)
        unfed += sum(1 for _, c, a in seq if c is False and a is False)
        certain_false += sum(1 for w in want if not w["certain"] and w["root"] is not None and not w["conflict"])
        got = _page_states(page, analysis, seq)
        for k, (w, g) in enumerate(zip(want, got, strict=True)):
            assert g == w, (seed, seq[: k + 1])
    assert unfed > 50 and certain_false > 20
    assert page.errors == []


def test_only_a_persons_erroneous_answer_spares_the_audit_in_the_page_as_in_python(page: Any) -> None:
    """A step over inferred inputs stored erroneous by a function oracle is still audited (the page asks the
    unrecorded earlier step, as Python does); stored erroneous by a person, it is not, in both."""
    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer, Dependency, Step

    def step(sid: str, name: str, start: int, *deps: str) -> Step:
        return Step(sid, name, "tool", input={"q": name}, output=f"{name} out", start_ns=start, end_ns=start + 1,
                    deps=tuple(Dependency(d, origin="inferred") for d in deps))

    steps = [step("a", "load_account", 0), step("c", "lookup_quota", 2), step("b", "plan_batch", 4, "a"),
             step("f", "submit_batch", 6, "b")]
    asks = {}
    for by in ("oracle:x", "person"):
        analysis = _failed(steps, "f", (Answer("b", False, by, 1, admissible=True),))
        search = GuidedSearch(analysis, analysis.run.answers)
        seq: list[Any] = []
        while (sid := search.next_question()) is not None and len(seq) < 6:
            seq.append([sid, sid != "c" and sid not in ("b", "f"), None])
            search.answer(Answer(sid, seq[-1][1], "person"))
        asks[by] = [s for s, _, _ in seq]
        if seq:
            assert _page_states(page, analysis, seq) == _named_states(analysis, seq), by
        else:
            from trajdebug.report.question import ask_data

            eng = "([src, A]) => new Function(src + '; return guidedEngine;')()(A).next()"
            assert page.evaluate(eng, [SEARCH_JS.read_text(encoding="utf-8"), json.loads(json.dumps(ask_data(analysis)))]) is None
    assert "c" in asks["oracle:x"] and "c" not in asks["person"]
    assert page.errors == []


# -- since ask45: the container that called a misled step (since ask46b: named likeliest, never certain) ---------


def _oven(stored: Any = ()) -> Any:
    """A proofing node (a container) calls set_oven with a temperature it worked out itself; set_oven's recorded
    input (the recipe) is right; the bake check fails on what the proofing node returned."""
    from trajdebug.core.model import Dependency, Step

    return _failed([
        Step("r", "recipe", "tool", output={"bread": "rye", "oven_c": 230}, start_ns=0, end_ns=1),
        Step("p", "proofing", "agent", output={"baked": {"oven_c": 180}}, deps=(Dependency("r"),), start_ns=2, end_ns=9),
        Step("o", "set_oven", "tool", parent_id="p", input={"oven_c": 180}, output={"oven_c": 180, "ok": True},
             deps=(Dependency("r"),), start_ns=3, end_ns=4),
        Step("f", "bake_check", "other", output=None, status="error", deps=(Dependency("p"),), start_ns=10, end_ns=11),
    ], "f", stored)


def test_a_container_that_called_a_misled_step_is_named_never_proven_in_the_page_as_in_python(page: Any) -> None:
    """The child answered inadmissible, its input and its caller's right or not, then (when a tie asks it again)
    answered alike, otherwise or not at all, also over stored answers: after every answer the page holds
    Python's root, certainty, candidates, conflict, implied inputs, misled children and next question; the
    caller is often named through the child, never certain."""
    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer

    words = [(True, None), (False, True), (False, False), (False, None), (None, None)]
    proven = named = 0
    for stored in ((), (Answer("o", False, "person", 1, admissible=False),), (Answer("o", True, "model:m", 1),)):
        analysis = _oven(stored)
        for first in words:
            for second in words:
                for third in words[:3]:
                    search = GuidedSearch(analysis, analysis.run.answers)
                    seq: list[Any] = []
                    times: dict[str, int] = {}
                    while (sid := search.next_question()) is not None and len(seq) < 12:
                        k = times[sid] = times.get(sid, 0) + 1
                        said = {"o": (first, second, third)[min(k, 3) - 1]}.get(sid, (True, None) if sid == "r" else (False, True))
                        seq.append([sid, *said])
                        search.answer(Answer(sid, said[0], "person", admissible=said[1]))
                    want = _named_states(analysis, seq)
                    assert _page_states(page, analysis, seq) == want, (stored, seq)
                    o_said = [x[1:] for x in seq if x[0] == "o"]
                    misled = bool(o_said) and all(x == [False, False] for x in o_said)
                    proven += misled and want[-1]["root"] == "p" and want[-1]["certain"]
                    named += misled and want[-1]["root"] == "p" and want[-1]["misled"] == ["o"]
    assert proven == 0 and named > 3, (proven, named)
    assert page.errors == []


# -- since ask45b: a container's proof needs every step that may have fed its child to be a node, cleared ------------


def _greenhouse(before: Any) -> Any:
    """A watering node (a container) calls set_valve, whose recorded input (the soil lookup) is right; the
    yield check fails on what the watering node returned; ``before`` ran first, outside the failure's slice."""
    from trajdebug.core.model import Dependency, Step

    return _failed([
        Step("s", "soil_lookup", "tool", output={"bed": "b4", "litres": 12}, start_ns=0, end_ns=1),
        *before,
        Step("w", "watering", "agent", output={"watered": {"litres": 40}}, deps=(Dependency("s"),), start_ns=20, end_ns=29),
        Step("v", "set_valve", "tool", parent_id="w", input={"litres": 40}, output={"litres": 40, "ok": True},
             deps=(Dependency("s"),), start_ns=21, end_ns=22),
        Step("y", "yield_check", "other", output=None, status="error", deps=(Dependency("w"),), start_ns=30, end_ns=31),
    ], "y")


def test_a_container_whose_child_a_step_the_search_never_asks_may_have_fed_is_not_certain_in_the_page_as_in_python(
    page: Any,
) -> None:
    """A planner outside the slice (a container, never asked) may have fed the valve: however the valve and the
    watering node are answered, the page holds Python's root, certainty, candidates, conflict, implied inputs
    and next question after every answer, and never calls the watering node certain; with a memo outside the
    slice in its place (a leaf: the audit asks it), both hold the same states too (the page's document is built
    with the default audit, so only that is compared)."""
    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer, Step

    planner = (Step("p", "irrigation_planner", "agent", output={"planned": True}, start_ns=2, end_ns=9),
               Step("p1", "forecast_read", "tool", parent_id="p", output={"rain_mm": 0}, start_ns=3, end_ns=4))
    memo = (Step("m", "memo_write", "tool", output={"saved": True}, start_ns=2, end_ns=9),)
    words = [(True, None), (False, True), (False, False), (False, None)]
    runs = checked = 0
    for before in (planner, memo):
        analysis = _greenhouse(before)
        for audit in (None,):
            for w_said in words:
                for v_said in words:
                    search = GuidedSearch(analysis, **({} if audit is None else {"audit": audit}))
                    seq: list[Any] = []
                    while (sid := search.next_question()) is not None and len(seq) < 10:
                        said = {"w": w_said, "v": v_said}.get(sid, (True, None))
                        seq.append([sid, *said])
                        search.answer(Answer(sid, said[0], "person", admissible=said[1]))
                    want = _named_states(analysis, seq, audit)
                    assert _page_states(page, analysis, seq, audit) == want, (before[0].step_id, audit, seq)
                    runs += 1
                    if w_said == (False, True) and v_said == (False, False) and before is planner:
                        checked += 1
                        assert (want[-1]["root"], want[-1]["certain"]) == ("w", False), want[-1]
    assert runs == 32 and checked == 1
    assert page.errors == []


def test_the_page_names_a_container_through_a_step_it_gave_a_wrong_input_never_certain(page: Any, tmp_path: Path) -> None:
    """The watering node answered 'wrong, its own fault' and the valve it called 'wrong, given a wrong input' (the
    truthful pattern): the report page, as Python, ends on the watering node as the likeliest root, not certain,
    naming the valve as what points at it (never that its inputs were right) and listing the valve's answer;
    with a planner outside the slice that may have fed the valve too."""
    from trajdebug.analysis import guided_search
    from trajdebug.core.model import Answer, Step

    truth = {"w": "erroneous", "v": "inadmissible"}
    planner = (Step("p", "irrigation_planner", "agent", output={"planned": True}, start_ns=2, end_ns=9),
               Step("p1", "forecast_read", "tool", parent_id="p", output={"rain_mm": 0}, start_ns=3, end_ns=4))
    said = {"w": (False, True), "v": (False, False)}

    def person(step: Step, run: Any) -> Answer:
        correct, admissible = said.get(step.step_id, (True, None))
        return Answer(step.step_id, correct, "person", admissible=admissible)

    for before in ((), planner):
        analysis = analyze(_greenhouse(before).run)
        page.goto(write_report(tmp_path / f"greenhouse{len(before)}.html", analysis).as_uri())
        page.click('#tabs [data-tab="ask"]')
        asked = _answer_page(page, lambda sid: page.click(f'#ask-question button[data-answer="{truth.get(sid, "correct")}"]'), 8)
        g = guided_search(analysis, person)
        assert (g.root, g.certain, g.misled) == ("w", False, ("v",))
        assert page.get_attribute("#ask-result", "data-root") == "w", asked
        assert page.get_attribute("#ask-result", "data-certain") == "false", asked
        text = page.text_content("#ask-result") or ""
        assert "for the inputs it was given, and those were right" not in text
        assert asked.count("v") == 1 and "likeliest, not certain: it called set_valve" in text, text
        assert "which was given a wrong input" in text and text.count("wrong (given a wrong input) set_valve") == 1, text
    assert page.errors == []


# -- since ask46: every container around the child, and every step that ran with it, may have fed it -----------------


def _garden(reads: str, *extra: Any) -> Any:
    """The greenhouse run with the watering node inside a garden agent (an output of its own: it may have written
    the valve's amount to shared state before it called the watering node); the yield check reads ``reads``."""
    import dataclasses

    from trajdebug.core.model import Dependency, Step

    agent = Step("a", "garden_agent", "agent", output={"report": "beds watered"}, start_ns=10, end_ns=29)
    steps = [dataclasses.replace(s, parent_id="a") if s.step_id == "w" else s for s in _greenhouse(()).run.steps]
    steps = [dataclasses.replace(s, deps=(Dependency(reads),)) if s.step_id == "y" else s for s in steps]
    return _failed([*steps[:1], agent, *steps[1:], *extra], "y")


def test_a_container_inside_an_agent_or_beside_a_concurrent_writer_is_not_certain_in_the_page_as_in_python(
    page: Any,
) -> None:
    """The garden agent around the watering node (no node when the yield check reads the watering node; a node when
    it reads the agent) and a memo written while the valve ran may each have fed the valve: however the agent, the
    watering node and the valve are answered, the page holds Python's root, certainty, candidates, conflict, implied
    inputs and next question after every answer; answered truthfully (the agent or the memo erroneous, the watering
    node erroneous, the valve inadmissible), neither calls the watering node certain."""
    import dataclasses

    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer, Step

    run = _greenhouse(()).run
    memo = Step("m", "memo_write", "tool", output={"saved": True}, start_ns=22, end_ns=23)
    concurrent = _failed([*(dataclasses.replace(s, end_ns=24) if s.step_id == "v" else s for s in run.steps), memo], "y")
    words = [(True, None), (False, True), (False, False), (False, None)]
    runs = checked = 0
    for name, analysis in (("outside", _garden("w")), ("node", _garden("a")), ("concurrent", concurrent)):
        for w_said in words:
            for v_said in words:
                search = GuidedSearch(analysis)
                seq: list[Any] = []
                while (sid := search.next_question()) is not None and len(seq) < 10:
                    said = {"w": w_said, "v": v_said, "a": (False, True), "m": (False, True)}.get(sid, (True, None))
                    seq.append([sid, *said])
                    search.answer(Answer(sid, said[0], "person", admissible=said[1]))
                want = _named_states(analysis, seq)
                assert _page_states(page, analysis, seq) == want, (name, seq)
                runs += 1
                if w_said == (False, True) and v_said == (False, False):
                    checked += 1
                    assert not (want[-1]["root"] == "w" and want[-1]["certain"]), (name, want[-1])
    assert runs == 48 and checked == 3
    assert page.errors == []


def test_the_page_asks_what_python_asks_on_random_runs_with_loops_of_parents(page: Any) -> None:
    """On 60 random runs with containers where a step is made its own parent or a child of its own descendant (a
    loop of parents), the page reads the enclosing steps Python reads (none for a looping step) and, answered
    truthfully three-valued, asks Python's questions in Python's order and ends at the same root."""
    import random

    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer
    from trajdebug.report.question import ask_data

    src = SEARCH_JS.read_text(encoding="utf-8")
    for seed in range(60):
        rng = random.Random(seed)
        n = rng.randint(4, 30)
        run = _random_run(rng, n, containers=True)
        by = {s.step_id: s for s in run.steps}
        a = f"s{rng.randrange(n - 1)}"
        below = [s.step_id for s in run.steps if s.parent_id == a]
        by[a] = dataclasses.replace(by[a], parent_id=rng.choice([a, *below]))
        run = dataclasses.replace(run, steps=tuple(by[s.step_id] for s in run.steps))
        root = f"s{rng.randrange(n - 1)}"
        wrong = {root}
        for s in run.steps:
            if any(d.step_id in wrong for d in s.deps):
                wrong.add(s.step_id)
        truth = {s.step_id: (True, None) if s.step_id not in wrong else (False, s.step_id == root) for s in run.steps}
        analysis = analyze(run)
        search = GuidedSearch(analysis)
        data = json.loads(json.dumps(ask_data(analysis)))
        up = data["up"] or [-1] * len(search.ids)
        assert up == [e[0] if (e := search.carrier.enclosing(i)) else -1 for i in range(len(search.ids))], seed
        if a in search.index and by[a].parent_id == a:
            assert up[search.index[a]] == -1, seed  # its own parent: at the top level
        python: list[str] = []
        while (sid := search.next_question()) is not None:
            python.append(sid)
            search.answer(Answer(sid, truth[sid][0], "person", admissible=truth[sid][1]))
        expected = search.result()
        got = page.evaluate(_ASKS, [src, data, {k: list(v) for k, v in truth.items()}])
        if expected.conflict:
            assert python[: len(got["asked"])] == got["asked"] and got["root"] is None, seed
            continue
        assert (got["asked"], got["root"], got["certain"]) == (python, expected.root, expected.certain), seed


def test_the_page_proves_a_root_with_no_recorded_input_only_by_an_audit_answered_correct_per_proof(page: Any) -> None:
    """rev49a HIGH 1 and MEDIUM 2: a failing booking with no recorded input after three lookups.  Its audit answered
    "don't know" proves nothing in the page, as in Python (a "don't know" clears no step that may have fed it);
    with one audit question a proof, the lookup it finds wrong is audited in turn and proven by a correct answer."""
    from trajdebug.core.model import Step

    steps = [Step(s, "lookup", "tool", output={"id": s}, start_ns=2 * k, end_ns=2 * k + 1) for k, s in enumerate("acb")]
    steps.append(Step("z", "book", "tool", output=None, start_ns=99, end_ns=100, status="error"))
    analysis = _failed(steps, "z")
    unsure = [["b", None, None], ["c", None, None]]
    python = _named_states(analysis, unsure)
    assert python == _page_states(page, analysis, unsure)
    assert [(s["root"], s["certain"], s["next"]) for s in python] == [("z", False, "c"), ("z", False, None)]
    found = [["b", False, None], ["c", True, None]]
    python = _named_states(analysis, found, audit=1)
    assert python == _page_states(page, analysis, found, audit=1)
    assert [(s["root"], s["certain"], s["next"]) for s in python] == [("b", False, "c"), ("b", True, None)]


def test_a_root_the_answers_place_shows_their_word_in_place_of_the_rankings_confidence(page: Any, tmp_path: Path) -> None:
    """In the report's ranked list, a root a person's answers prove reads "proved root" with no confidence, and
    one answers an automatic oracle took part in single out reads so, as the terminal tags them, and a step
    those answers cleared reads "set aside" with the ranking's confidence named so (nu25 F10: a proved root
    shown "structural root, confidence 1%"; nu26 F8: "suspect" above "cleared by the answers")."""
    from tests.builders import quote_runs

    from trajdebug.analysis import ReferenceOracle, guided_search, settled
    from trajdebug.core.model import Answer

    good, bad = quote_runs()
    a = analyze(bad, references=[good])
    answers = [Answer("5", False, "person", admissible=False), Answer("4", False, "person", admissible=True)]
    proved = settled(dataclasses.replace(a, guided=guided_search(a, lambda step, run: None, answers=answers)))
    singled = settled(dataclasses.replace(a, guided=guided_search(a, ReferenceOracle(good))))
    for analysis, word in ((proved, "proved root"), (singled, "singled out by the answers, not a person's: no proof")):
        page.goto(write_report(tmp_path / "report.html", analysis).as_uri())
        first = page.locator("ol.causes li.cause").first
        assert first.locator(".badge").inner_text() == word
        assert first.locator(".c-conf").count() == 0
        assert page.locator("ol.causes li.cause").nth(1).locator(".c-conf").count() == (word != "proved root")
    # A step the reference's answers cleared is set aside, not a suspect, with the ranking's confidence named (nu26 F8).
    page.goto(write_report(tmp_path / "report.html", singled).as_uri())
    badges = [page.locator("ol.causes li.cause").nth(i) for i in range(page.locator("ol.causes li.cause").count())]
    aside = [b for b in badges if b.locator(".badge").inner_text() == "set aside by the answers, not a person's: no proof"]
    assert aside and all(b.locator(".c-conf").inner_text().startswith("the ranking's confidence ") for b in aside)
    assert page.errors == []
