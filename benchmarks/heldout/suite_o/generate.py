"""Generate suite O: python benchmarks/heldout/suite_o/generate.py OUT [agent ...]

Per case OUT/<case>/: failed.<ext>, control.<ext>, with_refs.<ext>, truth.json; and OUT/index.json.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any


HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path[:] = [
    p for p in sys.path if Path(p or ".").resolve() != HERE
]  # the SDK's package is also named `agents`
for p in (str(ROOT), str(ROOT / "src")):
    if p not in sys.path:
        sys.path.insert(0, p)
os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OTEL_SDK_DISABLED", "false")

from benchmarks.heldout.suite_o import kit  # noqa: E402


AGENTS = [
    "organ_tuner",
    "curling_ice",
    "falconry",
    "canal_locks",
    "cave_dive",
    "fossil_lab",
    "orchid_nursery",
    "ice_road",
]
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}


def load_agent(name: str) -> Any:
    return importlib.import_module(f"benchmarks.heldout.suite_o.suite_agents.{name}")


# -- recording one run, per route ----------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        from trajdebug.testing import FakeModelServer

        self.server = FakeModelServer(lambda r: "idle").start()
        self._otel: Any = None
        self._agents_ready = False

    def close(self) -> None:
        self.server.stop()

    def record(self, agent: Any, key: str, path: Path) -> None:
        inp = agent.INPUTS[key]
        seed = zlib.crc32(f"{agent.NAME}/{key}/{path.name}/{sorted(kit._ON)}".encode())
        if hasattr(agent, "policy"):
            self.server.use(agent.policy)
        getattr(self, f"_{agent.ROUTE}")(agent, inp, path, seed)

    def _sdk(self, agent: Any, inp: dict, path: Path, seed: int) -> None:
        import trajdebug
        from trajdebug.testing import deterministic

        with deterministic(prefix=f"{seed:08x}"):
            try:
                with trajdebug.run(agent.NAME, path=str(path), task=agent.task(inp), agent=agent.NAME):
                    agent.run(inp)
            except Exception:  # noqa: BLE001 - the run records it
                pass
        trajdebug.flush()

    def _langgraph(self, agent: Any, inp: dict, path: Path, seed: int) -> None:
        from trajdebug.integrations.langchain import TrajdebugTracer

        tracer = TrajdebugTracer(path=str(path), name=agent.NAME, task=agent.task(inp))
        try:
            agent.invoke(self.server.base_url, inp, [tracer])
        except Exception:  # noqa: BLE001 - the tracer records it
            pass

    def _openai_agents(self, agent: Any, inp: dict, path: Path, seed: int) -> None:
        from agents import set_trace_processors

        from trajdebug.integrations.openai_agents import TrajdebugProcessor

        processor = TrajdebugProcessor(path=str(path), name=agent.NAME, task=agent.task(inp))
        set_trace_processors([processor])
        try:
            agent.execute(self.server.base_url, inp)
        except Exception:  # noqa: BLE001 - the processor records it
            pass
        set_trace_processors([])

    def _otlp(self, agent: Any, inp: dict, path: Path, seed: int) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        otel = self._otel_setup()
        otel["ids"].reseed(seed)
        otel["exporter"].clear()
        from openai import OpenAI

        client = OpenAI(base_url=self.server.base_url, api_key="not-needed", max_retries=0)
        try:
            agent.execute(client, otel["tracer"], inp)
        except Exception:  # noqa: BLE001 - the spans record it
            pass
        otel["provider"].force_flush()
        spans = sorted(otel["exporter"].get_finished_spans(), key=lambda s: (s.start_time, s.context.span_id))
        envelope = MessageToDict(encode_spans(spans))
        path.write_text(json.dumps(envelope))

    def _otel_setup(self) -> dict:
        if self._otel is not None:
            return self._otel
        import random

        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from opentelemetry.sdk.trace.id_generator import IdGenerator

        class SeededIds(IdGenerator):
            def __init__(self) -> None:
                self.rng = random.Random(0)

            def reseed(self, seed: int) -> None:
                self.rng = random.Random(seed)

            def generate_span_id(self) -> int:
                return self.rng.getrandbits(64) or 1

            def generate_trace_id(self) -> int:
                return self.rng.getrandbits(128) or 1

        ids = SeededIds()
        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource({"service.name": "suite-o-agents"}), id_generator=ids)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        self._otel = {
            "ids": ids,
            "exporter": exporter,
            "provider": provider,
            "tracer": provider.get_tracer("suite_o"),
        }
        return self._otel


# -- truth -----------------------------------------------------------------------------------------


def ordered_steps(run: Any) -> list[Any]:
    return [s for _, s in sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns or 0, p[0]))]


def out_text(step: Any) -> str:
    return json.dumps(step.output, ensure_ascii=False)


def truth_for(case: str, agent: Any, fault: dict, failed_path: Path, control_path: Path) -> dict:
    from trajdebug.sources.load import load_runs

    [run] = load_runs(failed_path)
    [control] = load_runs(control_path)
    assert run.outcome == "failure", (case, run.outcome, run.failure_reason)
    assert control.outcome == "success", (case, "control", control.outcome, control.failure_reason)
    steps = ordered_steps(run)
    marker = fault["marker"]
    roots = [i for i, s in enumerate(steps) if s.name == fault["root"] and marker in out_text(s)]
    assert roots, (case, "no step holds the marker", fault["root"], marker)
    ri = roots[0]
    root = steps[ri]
    same = [s for s in steps[: ri + 1] if s.name == root.name]
    llm_index = sum(1 for s in steps[:ri] if s.kind == "llm") + 1 if root.kind == "llm" else None
    for s in control.steps:
        if s.name == root.name:
            assert marker not in out_text(s), (case, "control holds the marker", s.name)
    failed = [e for e in run.errors if any(st.stage == "failed" for st in e.stages)]
    assert len(failed) == 1, (case, "failed errors", len(failed))
    fi = next(i for i, s in enumerate(steps) if s.step_id == failed[0].step_id)
    fstep = steps[fi]
    assert fi > ri and (fstep.start_ns or 0) > (root.start_ns or 0), (case, "failure before root")
    parents = {s.parent_id for s in steps if s.parent_id}
    hops = sum(1 for s in steps[ri + 1 : fi + 1] if s.step_id not in parents and s.kind != "agent")
    assert hops >= 1, (case, "hops")
    return {
        "case": case,
        "agent": agent.NAME,
        "route": agent.ROUTE,
        "fault_kind": fault["kind"],
        "root": {
            "name": root.name,
            "occurrence": len(same),
            "kind": root.kind,
            "llm_index": llm_index,
        },
        "failure_step": {
            "name": fstep.name,
            "occurrence": sum(1 for s in steps[: fi + 1] if s.name == fstep.name),
        },
        "hops": hops,
    }


def check_vocabulary(path: Path) -> None:
    text = path.read_text()
    if path.suffix == ".json":
        doc = json.loads(text)
        for rs in doc.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for sp in ss.get("spans", []):
                    for k in ("traceId", "spanId", "parentSpanId"):
                        sp.pop(k, None)
                    for link in sp.get("links", []) or []:
                        link.pop("traceId", None)
                        link.pop("spanId", None)
        text = json.dumps(doc)
    m = kit.TABOO.search(text)
    assert m is None, (str(path), text[max(0, m.start() - 80) : m.end() + 80])


def merge(paths: list[Path], dest: Path, ext: str) -> None:
    if ext == "jsonl":
        dest.write_text("".join(p.read_text() for p in paths))
    else:
        spans: list[Any] = []
        for p in paths:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        dest.write_text(json.dumps({"resourceSpans": spans}))


def generate(out: Path, names: list[str]) -> list[dict]:
    from trajdebug.sources.load import load_runs

    out.mkdir(parents=True, exist_ok=True)
    rec = Recorder()
    index: list[dict] = []
    tmp = Path(tempfile.mkdtemp(prefix="suite_o_"))
    try:
        for name in names:
            agent = load_agent(name)
            ext = EXT[agent.ROUTE]
            clean: dict[str, Path] = {}
            for key in agent.INPUTS:
                clean[key] = tmp / f"{name}-{key}.{ext}"
                rec.record(agent, key, clean[key])
                check_vocabulary(clean[key])
                [ref] = load_runs(clean[key])
                assert ref.outcome == "success", (name, key, ref.outcome, ref.failure_reason)
            for n, fault in enumerate(agent.FAULTS, 1):
                case = f"{name}_{n}"
                cdir = out / case
                if cdir.exists():
                    shutil.rmtree(cdir)
                cdir.mkdir()
                failed = cdir / f"failed.{ext}"
                with kit.planted(fault["id"]):
                    rec.record(agent, fault["input"], failed)
                shutil.copyfile(clean[fault["input"]], cdir / f"control.{ext}")
                refs = [k for k in agent.INPUTS if k != fault["input"]][:4]
                assert len(refs) == 4, (case, refs)
                merge([failed, *(clean[k] for k in refs)], cdir / f"with_refs.{ext}", ext)
                for f in (failed, cdir / f"control.{ext}", cdir / f"with_refs.{ext}"):
                    check_vocabulary(f)
                truth = truth_for(case, agent, fault, failed, cdir / f"control.{ext}")
                runs = load_runs(cdir / f"with_refs.{ext}")
                assert len(runs) == 5, (case, len(runs))
                assert sorted(r.outcome for r in runs) == ["failure"] + ["success"] * 4, (
                    case,
                    [r.outcome for r in runs],
                )
                (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                index.append({k: truth[k] for k in ("case", "agent", "route", "fault_kind", "hops")})
    finally:
        rec.close()
        shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"suite": "suite_o", "cases": index}, indent=2) + "\n")
    return index


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    unknown = [n for n in names if n not in AGENTS]
    if unknown:
        print(f"unknown agents: {unknown}; known: {AGENTS}")
        return 2
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    t0 = time.perf_counter()
    index = generate(out, names)
    print(f"suite_o: {len(index)} cases in {time.perf_counter() - t0:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
