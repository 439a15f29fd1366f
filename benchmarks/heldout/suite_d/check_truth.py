"""Check a generated suite D against what `trajdebug show --json` lists (and `trajdebug runs --json` for the
reference files): python benchmarks/heldout/suite_d/check_truth.py OUTDIR

For every case: failed.<ext> holds exactly one run, failed, with the truth's run id; the root and the
failure step exist under their names and occurrences (start order) with the recorded kind; the failure
step is where the error occurred; with_refs.<ext> holds that run plus at least five successful runs of
the same agent.  Uses only the CLI's output (no analysis command)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def cli(*args: str) -> dict:
    exe = Path(sys.executable).with_name("trajdebug")
    out = subprocess.run([str(exe), *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def nth(steps: list[dict], name: str, occurrence: int) -> dict:
    same = sorted((s for s in steps if s["name"] == name), key=lambda s: s["start_ns"])
    assert len(same) >= occurrence, f"no occurrence {occurrence} of {name!r}"
    return same[occurrence - 1]


def check(outdir: Path) -> None:
    index = json.loads((outdir / "index.json").read_text())
    kinds: dict[str, int] = {}
    for entry in index:
        truth = json.loads((outdir / entry["truth"]).read_text())
        shown = cli("show", str(outdir / entry["failed"]), "--json")["runs"]
        assert len(shown) == 1, f"{entry['case_id']}: {len(shown)} runs in failed file"
        run = shown[0]
        assert run["outcome"] == "failure" and run["run_id"] == truth["failed_run_id"], entry["case_id"]
        assert run["name"] == truth["agent"], entry["case_id"]
        root = nth(run["steps"], truth["root"]["name"], truth["root"]["occurrence"])
        assert root["kind"] == truth["root"]["kind"] and root["status"] == "ok", entry["case_id"]
        if root["kind"] == "llm":
            llms = sorted((s for s in run["steps"] if s["kind"] == "llm"), key=lambda s: s["start_ns"])
            assert llms.index(root) + 1 == truth["root"]["llm_index"], entry["case_id"]
        fail = nth(run["steps"], truth["failure_step"]["name"], truth["failure_step"]["occurrence"])
        assert fail["status"] == "error", entry["case_id"]
        occurred = [e for e in run["errors"] if e["step_id"] == fail["step_id"]]
        assert occurred, f"{entry['case_id']}: no error occurred at the failure step"
        assert truth["hops"] >= 2, entry["case_id"]
        refs = cli("runs", str(outdir / entry["with_refs"]), "--json")
        refs = refs["runs"] if isinstance(refs, dict) else refs
        ok = [r for r in refs if r["outcome"] == "success" and r["name"] == truth["agent"]]
        bad = [r for r in refs if r["outcome"] == "failure"]
        assert len(ok) >= 5 and len(bad) == 1 and len(refs) == len(ok) + 1, f"{entry['case_id']}: refs {len(ok)}/{len(bad)}"
        assert bad[0]["run_id"] == truth["failed_run_id"], entry["case_id"]
        kinds[truth["fault_kind"]] = kinds.get(truth["fault_kind"], 0) + 1
        print(f"ok  {entry['case_id']:28s} root {truth['root']['name']}#{truth['root']['occurrence']} "
              f"-> {truth['failure_step']['name']}#{truth['failure_step']['occurrence']} ({truth['hops']} hops)")
    print(f"{len(index)} cases checked; fault kinds: {json.dumps(kinds, sort_keys=True)}")


if __name__ == "__main__":
    check(Path(sys.argv[1]))
