"""Workflow: a coding agent's edit-run-read-edit loop (200+ steps).

The agent detects the project's settings (kept in shared state), loads the
test environment from the configuration, runs the whole test suite (retried
on resets), parses the failures, and then, for each failing test: plans a fix
(LLM, a JSON tool call naming file and function), classifies the failure (a
branch: code bug or flaky test), opens the file, writes a patch (LLM), applies
it, runs that test (retried on timeouts, a timeout falling back to the result
cache) and, when it still fails, reads the error and patches again.  Tests
that resist two patches are left for a human.  At the end it runs the whole
suite again and builds the release from the settings it kept in state; the
run fails when tests still fail or the release build is wrong.
"""

from __future__ import annotations

import json
from typing import Any

import trajdebug
from benchmarks.faults import Case, Injector, ToolTimeout, TransientError
from benchmarks.workflows._base import CheckFailed, Result, record


NAME = "coding-loop"
FAULTS = (
    "wrong-state-value",
    "truncated-output",
    "bad-tool-args",
    "masked-retry-stale",
    "env-change",
    "wrong-branch",
)
MODULES = ("billing", "accounts", "reports", "search", "storage", "auth", "mailer", "export")
VERBS = ("parse", "format", "validate", "merge", "total", "round", "split", "normalize", "due_date", "render")
DATE_FUNCS = ("due_date",)


class Repo:
    """A small repository: modules of functions, some buggy, one test per function."""

    def __init__(self, inj: Injector, n_bugs: int) -> None:
        self.files: dict[str, dict[str, dict[str, Any]]] = {}
        for m in MODULES:
            self.files[f"src/{m}.py"] = {
                f"{v}_{m}": {"version": 1, "fixed": True, "hard": False} for v in VERBS
            }
        funcs = [(p, f) for p, fs in self.files.items() for f in fs]
        for p, f in inj.rng.sample(funcs, n_bugs):
            # "hard" bugs need a second patch: the first one the model writes is incomplete.
            self.files[p][f].update(fixed=False, hard=inj.rng.random() < 0.25)
        self.result_cache = {
            f"tests/test_{p[4:-3]}.py::test_{f}": "passed" for p, fs in self.files.items() for f in fs
        }

    def test(self, test_id: str, env: dict[str, str]) -> tuple[str, str]:
        mod, fn = test_id[len("tests/test_") :].split(".py::test_")
        state = self.files[f"src/{mod}.py"][fn]
        if not state["fixed"]:
            return "failed", f"AssertionError: {fn}() returned the wrong value (line {10 + len(fn)})"
        if fn.startswith(DATE_FUNCS) and env.get("TZ") != "UTC":
            return "failed", f"AssertionError: {fn}() is off by one day (TZ={env.get('TZ')})"
        return "passed", ""


class ScriptedModel:
    """A deterministic stand-in for the coding LLM."""

    def __init__(self, inj: Injector, repo: Repo) -> None:
        self.inj, self.repo = inj, repo
        self.tries: dict[str, int] = {}
        self.calls = 0
        self.fault_at = inj.rng.randint(3, 12)

    def plan_fix(self, test_id: str, error: str) -> str:
        mod, fn = test_id[len("tests/test_") :].split(".py::test_")
        path = f"src/{mod}.py"
        self.calls += 1
        if self.calls == self.fault_at and self.inj.on("bad-tool-args"):
            # The planner names a module with a same-named helper: the patch will land there.
            path = f"src/{self.inj.rng.choice([m for m in MODULES if m != mod])}.py"
            fn = fn.rsplit("_", 1)[0] + "_" + path[4:-3]
        return json.dumps({"tool": "apply_patch", "args": {"path": path, "function": fn, "test": test_id}})

    def write_patch(self, path: str, function: str, source: str, error: str) -> str:
        n = self.tries[function] = self.tries.get(function, 0) + 1
        complete = not (self.repo.files[path][function]["hard"] and n == 1)
        fix = "return round(value, 2)" if complete else "return value  # TODO handle the remainder"
        return (
            f"--- a/{path}\n+++ b/{path}\n@@ def {function}(value): @@\n-    return value * 1.0\n+    {fix}\n"
        )


class Coder:
    """The coding agent: decorated functions; no ``deps=``."""

    def __init__(self, inj: Injector, repo: Repo, config: dict[str, str]) -> None:
        self.inj, self.repo, self.config, self.llm = inj, repo, config, ScriptedModel(inj, repo)
        self.runs: dict[str, int] = {}
        self.stale_done = False
        self.fixes = 0
        """Failures taken on so far; counted here, not in the model, because a replay serves
        the model's calls without running them and must still land the fault on the same one."""

    @trajdebug.step(kind="input")
    def receive_task(self, task: str) -> str:
        return task

    @trajdebug.step(kind="tool")
    def read_pyproject(self) -> dict[str, Any]:
        return {
            "project": {"name": "ledger", "requires-python": ">=3.11"},
            "tool": {"pytest": {"addopts": "-q"}},
        }

    @trajdebug.step(kind="state")
    def detect_settings(self, pyproject: dict[str, Any], state: Any) -> dict[str, Any]:
        python = pyproject["project"]["requires-python"].lstrip(">=")
        if self.inj.on("wrong-state-value"):
            python = "3.8"  # read from the stale CI matrix instead of pyproject
        state["settings"] = {"python": python, "name": pyproject["project"]["name"]}
        return dict(state["settings"])

    @trajdebug.step(kind="tool")
    def load_test_env(self) -> dict[str, str]:
        tz = self.config["TZ"]
        if self.inj.on("env-change"):
            tz = "Pacific/Kiritimati"  # the CI image's timezone changed
        trajdebug.uses_env("config:TZ", tz)
        return {"TZ": tz, "PYTHONHASHSEED": "0"}

    @trajdebug.retry(attempts=3, on=(TransientError,), reason="policy: retry resets")
    @trajdebug.step(kind="tool")
    def run_suite(self, env: dict[str, str], final: bool = False) -> str:
        self.inj.transient("run_suite" + ("/final" if final else ""))
        lines = []
        for path, fs in self.repo.files.items():
            for fn in fs:
                tid = f"tests/test_{path[4:-3]}.py::test_{fn}"
                status, err = self.repo.test(tid, env)
                if status == "failed":
                    lines.append(f"FAILED {tid} - {err}")
        out = "\n".join(
            [*lines, f"{len(lines)} failed, {sum(map(len, self.repo.files.values())) - len(lines)} passed"]
        )
        if not final and self.inj.on("truncated-output"):
            cut = out.splitlines()
            out = "\n".join(cut[: max(1, len(cut) // 2)]) + "\n[output truncated]"
        return out

    @trajdebug.step(kind="parse")
    def parse_failures(self, output: str) -> list[dict[str, str]]:
        out = []
        for line in output.splitlines():
            if line.startswith("FAILED "):
                tid, _, err = line[len("FAILED ") :].partition(" - ")
                out.append({"test": tid, "error": err})
        return out

    @trajdebug.step(kind="llm")
    def plan_fix(self, test_id: str, error: str) -> str:
        return self.llm.plan_fix(test_id, error)

    @trajdebug.step(kind="parse")
    def parse_call(self, text: str) -> dict[str, Any]:
        return dict(json.loads(text)["args"])

    @trajdebug.step(kind="tool")
    def open_file(self, path: str, function: str) -> str:
        v = self.repo.files[path][function]["version"]
        return f"# {path} (version {v})\ndef {function}(value):\n    return value * 1.0\n"

    @trajdebug.step(kind="llm")
    def write_patch(self, path: str, function: str, source: str, error: str) -> str:
        return self.llm.write_patch(path, function, source, error)

    @trajdebug.step(kind="tool")
    def apply_patch(self, path: str, function: str, patch: str) -> dict[str, Any]:
        f = self.repo.files[path][function]
        f["version"] += 1
        f["fixed"] = "TODO" not in patch
        return {"ok": True, "path": path, "version": f["version"]}

    @trajdebug.retry(attempts=3, on=(ToolTimeout,), reason="policy: retry timeouts")
    @trajdebug.step(kind="tool")
    def run_test(self, test_id: str, env: dict[str, str], patched: dict[str, Any]) -> dict[str, str]:
        n = self.runs[test_id] = self.runs.get(test_id, 0) + 1
        status, err = self.repo.test(test_id, env)
        stale = self.inj.fault == "masked-retry-stale" and status == "failed" and not self.stale_done
        if stale and n == 1:
            self.stale_done = True
            self.runs[test_id] = -100
            raise ToolTimeout(f"pytest {test_id}: timed out after 60 s")
        if n < 0 and self.inj.on("masked-retry-stale"):
            return {"test": test_id, "status": self.repo.result_cache[test_id], "error": "", "cached": "true"}
        return {"test": test_id, "status": status, "error": err}

    @trajdebug.step(kind="parse")
    def read_error(self, result: dict[str, str]) -> str:
        return result["error"]

    @trajdebug.step(kind="agent")
    def fix_one(self, failure: dict[str, str], env: dict[str, str], state: Any) -> str:
        self.fixes += 1
        call = self.parse_call(self.plan_fix(failure["test"], failure["error"]))
        with trajdebug.step("classify_failure", kind="condition", input={"failure": failure}) as decision:
            kind = (
                "flaky"
                if "timed out" in failure["error"] or "ConnectionError" in failure["error"]
                else "code"
            )
            if self.fixes == self.llm.fault_at and self.inj.on("wrong-branch"):
                kind = "flaky"  # a real bug taken for a flaky test
            decision.output = kind
        with trajdebug.branch(decision):
            if kind == "flaky":
                state[f"skipped/{failure['test']}"] = True
                return "skipped as flaky"
            error = failure["error"]
            for _ in range(2):
                source = self.open_file(call["path"], call["function"])
                patched = self.apply_patch(
                    call["path"],
                    call["function"],
                    self.write_patch(call["path"], call["function"], source, error),
                )
                result = self.run_test(failure["test"], env, patched)
                if result["status"] == "passed":
                    return "fixed"
                error = self.read_error(result)
        state[f"needs-human/{failure['test']}"] = error
        return "left for a human"

    @trajdebug.step(kind="tool")
    def build_release(self, state: Any) -> dict[str, Any]:
        s = state["settings"]
        self.inj.warning("setuptools-scm: no git tag found, using 0.0.0.dev0")
        return {
            "wheel": f"{s['name']}-1.4.0-cp{s['python'].replace('.', '')}-none-any.whl",
            "python": s["python"],
        }

    @trajdebug.step(kind="output")
    def finish(self, final_output: str, wheel: dict[str, Any], pyproject: dict[str, Any]) -> str:
        problems = []
        failed = [line.split()[1] for line in final_output.splitlines() if line.startswith("FAILED ")]
        if failed:
            problems.append(f"{len(failed)} tests still fail: {', '.join(failed[:3])}")
        need = pyproject["project"]["requires-python"].lstrip(">=")
        if wheel["python"] != need:
            problems.append(
                f"release wheel {wheel['wheel']} targets Python {wheel['python']}, the project requires {need}"
            )
        if problems:
            raise CheckFailed("task check failed: " + "; ".join(problems))
        return "all tests pass; release built"

    @trajdebug.step(kind="agent")
    def work(self, task: str, state: Any) -> str:
        self.receive_task(task)
        pyproject = self.read_pyproject()
        self.detect_settings(pyproject, state)
        env = self.load_test_env()
        failures = self.parse_failures(self.run_suite(env))
        for f in failures:
            self.fix_one(f, env, state)
        final = self.run_suite(env, final=True)
        wheel = self.build_release(state)
        return str(self.finish(final, wheel, pyproject))


def run(case: Case) -> Result:
    """Run the workflow once for ``case``."""
    inj = Injector(case)
    repo = Repo(inj, inj.rng.randint(26, 32))
    coder = Coder(inj, repo, {"TZ": "UTC"})
    task = "Make the test suite pass and build the release wheel."
    r = record(NAME, inj, lambda run: coder.work(task, run.state), metadata={"task": task})
    return Result(r)
