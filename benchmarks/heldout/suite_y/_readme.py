"""Print the agents and cases tables for README.md from a generated OUT folder (python _readme.py OUT)."""
import importlib
import json
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[3] / "src"), str(Path(__file__).resolve().parents[3])]
from benchmarks.heldout.suite_y.generate import AGENTS  # noqa: E402

out = Path(sys.argv[1])
print("| agent | route | domain | shape |\n|---|---|---|---|")
for name in AGENTS:
    m = importlib.import_module(f"benchmarks.heldout.suite_y.{name}")
    print(f"| {m.AGENT} (`{name}.py`, run name `{m.RUN_NAME}`) | {m.ROUTE} | {m.DOMAIN} | {m.SHAPE} |")
print("\n| case | route | fault kind | root (name #occurrence, kind) | failure step | hops |\n|---|---|---|---|---|---|")
for c in json.loads((out / "index.json").read_text())["cases"]:
    t = json.loads((out / c["case"] / "truth.json").read_text())
    r, f = t["root"], t["failure_step"]
    li = f", llm #{r['llm_index']}" if r["llm_index"] else ""
    print(f"| {c['case']} | {c['route']} | {c['fault_kind']} | `{r['name']}` #{r['occurrence']}, {r['kind']}{li} | `{f['name']}` #{f['occurrence']} | {c['hops']} |")
