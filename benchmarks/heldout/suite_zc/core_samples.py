"""Mine core-sample logging (otlp route): a drill hole's core boxes are logged and sent for assay."""

from __future__ import annotations

import json
import re

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from .common import Case
from .kit import active

AGENT = "core-sample-logger"
ROUTE = "otlp"
EXT = "json"

INPUTS = {
    "dh0412": {"hole": "DH-0412", "from_m": 100.0, "to_m": 118.0, "boxes": 6},
    "dh0519": {"hole": "DH-0519", "from_m": 240.0, "to_m": 252.0, "boxes": 4},
}
REFS = [
    {"hole": "DH-0301", "from_m": 50.0, "to_m": 62.0, "boxes": 4},
    {"hole": "DH-0388", "from_m": 75.0, "to_m": 90.0, "boxes": 5},
    {"hole": "DH-0455", "from_m": 130.0, "to_m": 139.0, "boxes": 3},
    {"hole": "DH-0602", "from_m": 300.0, "to_m": 315.0, "boxes": 5},
]

CASES = [
    Case("zc36", "zc-mc-1", "context_pollution", "dh0412", ("build_log_context", 1), ("submit_assay_batch", 1),
         "build_log_context adds the previous hole's logging header, and the model copies its BIF lithology unit into this hole's summary."),
    Case("zc37", "zc-mc-2", "plan_error", "dh0412", ("ChatCompletion", 1), ("submit_assay_batch", 1),
         "The model's sampling plan skips the metre 112-113, leaving a gap in the sample intervals."),
    Case("zc38", "zc-mc-3", "wrong_retrieval", "dh0519", ("retrieve_assay_protocol", 1), ("submit_assay_batch", 1),
         "The protocol search returns the copper ICP-OES protocol for a gold hole."),
    Case("zc39", "zc-mc-4", "swallowed_error", "dh0519", ("read_magsus", 3), ("submit_assay_batch", 1),
         "read_magsus catches the meter's out-of-range error for box 3 and returns 0.0 as the reading."),
    Case("zc40", "zc-mc-5", "truncated_result", "dh0412", ("scan_core_box", 4), ("check_tray_manifest", 4),
         "The core scanner's answer for box 4 is cut after two intervals, so the box's last interval is never logged."),
]

HOLES = {
    "DH-0412": {"commodity": "Au", "prev_hole": "DH-0411"}, "DH-0519": {"commodity": "Au", "prev_hole": "DH-0518"},
    "DH-0301": {"commodity": "Cu", "prev_hole": "DH-0300"}, "DH-0388": {"commodity": "Au", "prev_hole": "DH-0387"},
    "DH-0455": {"commodity": "Cu", "prev_hole": "DH-0454"}, "DH-0602": {"commodity": "Au", "prev_hole": "DH-0601"},
}
PROTOCOLS = {"Au": {"protocol": "AU-FA50", "method": "fire assay 50 g"},
             "Cu": {"protocol": "CU-ICP4", "method": "ICP-OES four-acid"}}
LITHOLOGY = ["BAS", "DOL", "QV", "BAS", "SCH", "QV"]


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    if prompt.startswith("Plan the sampling intervals"):
        job = json.loads(prompt.split("\n", 1)[1])
        start, end = job["from_m"], job["to_m"]
        intervals = []
        m = start
        while m < end:
            intervals.append([m, m + 1.0])
            m += 1.0
        if active("zc-mc-2") and len(intervals) > 13:
            intervals.pop(12)
        return json.dumps({"intervals": intervals, "blank_every": 10})
    if prompt.startswith("Write the lithology summary"):
        units = sorted(set(re.findall(r"\b(BAS|DOL|QV|SCH|BIF|GRN)\b", prompt.split("\n", 1)[1])))
        return "Units logged: " + ", ".join(units)
    return "No answer."


class AssayLabRejected(Exception):
    pass


def record(inp: dict, path: str, server) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": AGENT}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("core-logger")
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    hole = inp["hole"]

    def span(name: str, kind: str, given, work):
        attrs = {"openinference.span.kind": kind, "input.value": json.dumps(given), "input.mime_type": "application/json"}
        with tracer.start_as_current_span(name, attributes=attrs) as sp:
            out = work()
            sp.set_attribute("output.value", json.dumps(out))
            sp.set_attribute("output.mime_type", "application/json")
            return out

    def ask(prompt: str) -> str:
        reply = client.chat.completions.create(model=server.model, messages=[{"role": "user", "content": prompt}])
        return reply.choices[0].message.content

    def retrieve_protocol(commodity: str) -> list[dict]:
        key = "Cu" if active("zc-mc-3") else commodity
        return [{"document": f"QA/QC manual section {PROTOCOLS[key]['protocol']}", **PROTOCOLS[key]}]

    def scan_core_box(box: int) -> dict:
        per = (inp["to_m"] - inp["from_m"]) / inp["boxes"]
        top = inp["from_m"] + per * (box - 1)
        rows = []
        m = top
        while m < top + per - 1e-9:
            rows.append({"from": round(m, 2), "to": round(min(m + 1.0, top + per), 2),
                         "lith": LITHOLOGY[(box + len(rows)) % len(LITHOLOGY)], "recovery_pct": 96})
            m += 1.0
        if box == 4 and active("zc-mc-5"):
            rows = rows[:2]
        return {"box": box, "intervals": rows}

    def read_magsus(box: int) -> dict:
        raw = 0.0 if box == 3 else 0.8 + box * 0.35  # box 3: strongly magnetic, the meter saturates
        if raw == 0.0:
            if active("zc-mc-4"):
                try:
                    raise OverflowError("magsus meter reading out of range on high-sensitivity setting")
                except OverflowError:
                    return {"box": box, "magsus_si": 0.0}
            raw = 42.5  # re-read on the low-sensitivity setting
        return {"box": box, "magsus_si": raw}

    def build_log_context(boxes: list[dict]) -> str:
        lines = []
        if active("zc-mc-1"):
            lines.append(f"[{HOLES[hole]['prev_hole']} header] units: BIF, GRN; collar 4417.2 N")
        for b in boxes:
            lines.append(f"box {b['box']}: " + " ".join(r["lith"] for r in b["intervals"]))
        return "\n".join(lines)

    def check_tray_manifest(b: dict) -> dict:
        per = (inp["to_m"] - inp["from_m"]) / inp["boxes"]
        expected = int(-(-per // 1))
        if len(b["intervals"]) != expected:
            raise AssayLabRejected(f"tray manifest {hole}: box {b['box']} lists {expected} intervals, "
                                   f"log has {len(b['intervals'])}")
        return {"hole": hole, "box": b["box"], "manifest": "matched"}

    def submit_assay_batch(plan: dict, protocol: dict, boxes: list[dict], magsus: list[dict], summary: str) -> dict:
        errors = []
        ivs = plan["intervals"]
        for (a0, a1), (b0, b1) in zip(ivs, ivs[1:]):
            if b0 != a1:
                errors.append(f"sample intervals not contiguous: gap {a1:.1f}-{b0:.1f} m")
        if protocol["protocol"] != PROTOCOLS[HOLES[hole]["commodity"]]["protocol"]:
            errors.append(f"protocol {protocol['protocol']} ({protocol['method']}) is not accepted for a "
                          f"{HOLES[hole]['commodity']} batch")
        for m in magsus:
            if not 0.01 <= m["magsus_si"] <= 100:
                errors.append(f"box {m['box']}: magsus {m['magsus_si']} SI outside calibrated range 0.01-100")
        logged = {r["lith"] for b in boxes for r in b["intervals"]}
        units = set(summary.removeprefix("Units logged: ").split(", "))
        if units - logged:
            errors.append(f"summary lists units {sorted(units - logged)} not present in the {hole} interval log")
        if errors:
            raise AssayLabRejected("LIMS 400 Bad Request: " + json.dumps({"hole": hole, "errors": errors}))
        return {"batch": f"AB-{hole}", "samples": len(ivs)}

    try:
        with tracer.start_as_current_span(AGENT, attributes={"openinference.span.kind": "AGENT",
                                                              "input.value": json.dumps(inp), "agent.name": AGENT}) as root:
            info = span("fetch_drill_hole", "TOOL", {"hole": hole}, lambda: {"hole": hole, **HOLES[hole]})
            docs = span("retrieve_assay_protocol", "RETRIEVER", {"query": f"assay protocol {info['commodity']}"},
                        lambda: retrieve_protocol(info["commodity"]))
            plan = json.loads(ask("Plan the sampling intervals for this run:\n" + json.dumps(inp)))
            boxes, magsus = [], []
            with tracer.start_as_current_span("box_logger", attributes={"openinference.span.kind": "AGENT",
                                                                         "agent.name": "box_logger"}):
                for box in range(1, inp["boxes"] + 1):
                    boxes.append(span("scan_core_box", "TOOL", {"hole": hole, "box": box}, lambda: scan_core_box(box)))
                    span("check_tray_manifest", "CHAIN", {"hole": hole, "box": box},
                         lambda: check_tray_manifest(boxes[-1]))
                    magsus.append(span("read_magsus", "TOOL", {"hole": hole, "box": box}, lambda: read_magsus(box)))
            context = span("build_log_context", "CHAIN", {"boxes": [b["box"] for b in boxes]},
                           lambda: build_log_context(boxes))
            summary = ask("Write the lithology summary for this log:\n" + context)
            out = span("submit_assay_batch", "TOOL", {"hole": hole, "samples": len(plan["intervals"])},
                       lambda: submit_assay_batch(plan, docs[0], boxes, magsus, summary))
            root.set_attribute("output.value", json.dumps(out))
    except AssayLabRejected:
        pass
    finally:
        OpenAIInstrumentor().uninstrument()
    with open(path, "w", encoding="utf-8") as f:
        json.dump(MessageToDict(encode_spans(exporter.get_finished_spans())), f)
