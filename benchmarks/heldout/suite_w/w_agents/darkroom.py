"""Darkroom film lab (route: otlp).

The ``openai`` client instrumented by openinference-instrumentation-openai, plus the lab's own
OpenInference spans (AGENT, CHAIN, TOOL, RETRIEVER), exported in memory and written as OTLP/JSON.
The model plans the processing batches; per batch the lab reads the chemistry sheet, works out times
and temperature, asks the model which processor line to load, runs the processor, reads the control
strip and checks it; then it closes the order and drafts the customer's message.
"""

from __future__ import annotations

import json
from contextlib import contextmanager

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from trajdebug.testing import FakeModelServer

import kit

AGENT = "darkroom-lab"
ROUTE = "otlp"
DOMAIN = "darkroom film processing"
SHAPE = "order tool -> batch plan (llm) -> per batch: chemistry retriever, times (code), line choice (llm), processor tool, control-strip tool, QC check -> close order tool -> customer note (llm)"

FILMS = {
    "Portra 400": "C-41", "Ektar 100": "C-41", "Gold 200": "C-41", "Ektachrome E100": "E-6", "Velvia 50": "E-6",
    "Provia 100F": "E-6", "HP5 Plus": "BW", "Tri-X 400": "BW", "Delta 3200": "BW",
}
SHEETS = {
    "C-41": {"process": "C-41", "developer": "3:15", "temp": "37.8 C / 100.0 F", "sequence": "DEV>BLX>FIX>WASH>STAB", "line": "LINE-C41"},
    "E-6": {"process": "E-6", "developer": "6:00", "temp": "38.0 C / 100.4 F", "sequence": "FD>RV>CD>PB>BL>FIX>WASH>STAB", "line": "LINE-E6"},
    "BW": {"process": "BW", "developer": "9:00", "temp": "20.0 C / 68.0 F", "sequence": "DEV>STOP>FIX>WASH", "line": "LINE-BW"},
}
LINE_MAX_C = {"LINE-C41": 40.0, "LINE-E6": 40.0, "LINE-BW": 26.0}


def _inp(order: str, rolls: list[tuple[str, str, int]]) -> dict:
    return {"order_id": order, "rolls": [{"roll": f"{order}-{i + 1}", "film": f, "format": fmt, "push": p}
                                         for i, (f, fmt, p) in enumerate(rolls)]}


REFS = [
    _inp("DK-7101", [("Portra 400", "120", 0), ("HP5 Plus", "35mm", 1)]),
    _inp("DK-7104", [("Velvia 50", "120", 0), ("Provia 100F", "35mm", 0), ("Gold 200", "35mm", 0)]),
    _inp("DK-7110", [("Tri-X 400", "35mm", 0), ("Delta 3200", "120", 0)]),
    _inp("DK-7115", [("Ektar 100", "120", 0), ("Portra 400", "35mm", 1), ("Tri-X 400", "35mm", 2)]),
]


# ---------------------------------------------------------------- the scripted model

def brain(request):
    messages = request.body["messages"]
    system, msg = messages[0]["content"], json.loads(messages[-1]["content"])
    if system.startswith("PLAN"):
        batches: dict[str, list] = {}
        for r in msg["rolls"]:
            batches.setdefault(FILMS[r["film"]], []).append(r["roll"])
        out = []
        for proc, rolls in batches.items():
            seq = SHEETS[proc]["sequence"]
            if proc == "C-41" and kit.active("dk-plan-sequence"):
                seq = "DEV>BLX>WASH>STAB"
            out.append({"batch": f"{proc}-{msg['order_id'][-4:]}", "process": proc, "rolls": rolls, "sequence": seq})
        return json.dumps({"order_id": msg["order_id"], "batches": out})
    if system.startswith("LINE"):
        line = SHEETS[msg["process"]]["line"]
        if msg["process"] == "E-6" and kit.active("dk-line-choice"):
            line = "LINE-C41"
        return json.dumps({"batch": msg["batch"], "line": line, "reason": "matching chemistry"})
    if system.startswith("NOTE"):
        return f"Hello, your order {msg['order_id']} is processed: {msg['rolls']} rolls ready for collection."
    raise ValueError("unknown prompt")


# ---------------------------------------------------------------- the lab

class Lab:
    def __init__(self, tracer, client: OpenAI) -> None:
        self.tracer, self.client = tracer, client

    def span(self, name: str, kind: str, inp):
        return self.tracer.start_as_current_span(name, attributes={
            "openinference.span.kind": kind, "input.value": json.dumps(inp), "input.mime_type": "application/json"})

    @staticmethod
    def out(span, value) -> None:
        span.set_attribute("output.value", json.dumps(value))
        span.set_attribute("output.mime_type", "application/json")

    def tool(self, name: str, fn, **kwargs):
        with self.span(name, "TOOL", kwargs) as s:
            s.set_attribute("tool.name", name)
            value = fn(**kwargs)
            self.out(s, value)
            return value

    def ask(self, system: str, payload: dict) -> str:
        reply = self.client.chat.completions.create(
            model="lab-model", messages=[{"role": "system", "content": system},
                                         {"role": "user", "content": json.dumps(payload)}])
        return reply.choices[0].message.content


def fetch_order(order_id: str, orders: dict) -> dict:
    return dict(orders[order_id], status="received")


def chemistry_sheet(process: str) -> list[dict]:
    try:
        if process == "BW":
            raise TimeoutError("sheet store timed out")  # the B&W sheets live on the old file server
        return [{"id": f"sheet-{process}", "text": json.dumps(SHEETS[process])}]
    except TimeoutError:
        if kit.active("dk-sheet-cache"):
            return [{"id": "sheet-cache", "text": json.dumps(SHEETS["C-41"])}]
        return [{"id": f"sheet-{process}-mirror", "text": json.dumps(SHEETS[process])}]


def compute_times(sheet: dict, push: int) -> dict:
    mm, ss = sheet["developer"].split(":")
    seconds = int(mm) * 60 + int(ss)
    seconds = int(seconds * (1 + 0.3 * push))
    c_text, f_text = sheet["temp"].split(" / ")
    temp = float(f_text.split()[0]) if kit.active("dk-temp-field") else float(c_text.split()[0])
    return {"process": sheet["process"], "developer_s": seconds, "temp_c": temp, "sequence": sheet["sequence"]}


_RUNS = {"n": 0}


def run_processor(line: str, batch: str, rolls: list, sequence: str, developer_s: int, temp_c: float) -> dict:
    if temp_c > LINE_MAX_C[line]:
        raise RuntimeError(f"{line}: setpoint {temp_c} C above line maximum {LINE_MAX_C[line]} C, load aborted")
    _RUNS["n"] += 1
    return {"line": line, "batch": batch, "run_no": f"{line[5:]}-{1000 + _RUNS['n']}", "rolls": len(rolls),
            "sequence": sequence, "status": "complete"}


def read_control_strip(run: dict, process: str, line: str) -> dict:
    patches = [0.21, 0.48, 0.93, 1.41, 1.86]
    if "FIX" not in run["sequence"]:
        patches = [p + 1.64 for p in patches]
    if process == "E-6" and line != "LINE-E6":
        patches = [round(p * 0.55 + 0.4, 2) for p in patches]
    text = ",".join(f"{p:.2f}" for p in patches)
    if kit.active("dk-strip-page"):
        text = text[:16]
    return {"run_no": run["run_no"], "strip": f"CS-{process}", "patches": text}


def qc_check(strip: dict) -> dict:
    vals = [float(v) for v in strip["patches"].split(",") if v]
    dmin, contrast = vals[0], vals[-1] - vals[0]
    if dmin > 0.35:
        raise RuntimeError(f"control strip {strip['strip']} on {strip['run_no']}: D-min {dmin:.2f} outside tolerance (max 0.35)")
    if not 1.3 <= contrast <= 1.9:
        raise RuntimeError(f"control strip {strip['strip']} on {strip['run_no']}: contrast {contrast:.2f} outside tolerance 1.30-1.90")
    return {"dmin": dmin, "contrast": round(contrast, 2), "pass": True}


def close_order(order_id: str, batches: list) -> dict:
    return {"order_id": order_id, "status": "ready", "rolls": sum(b["rolls"] for b in batches)}


def run_agent(lab: Lab, inp: dict) -> None:
    orders = {inp["order_id"]: inp}
    with lab.span(AGENT, "AGENT", {"order_id": inp["order_id"]}) as root:
        order = lab.tool("fetch_order", lambda order_id: fetch_order(order_id, orders), order_id=inp["order_id"])
        plan = json.loads(lab.ask("PLAN the processing batches for this film order.", order))
        push = {r["roll"]: r["push"] for r in order["rolls"]}
        done = []
        for b in plan["batches"]:
            with lab.span("process_batch", "CHAIN", b) as bs:
                with lab.span("chemistry_sheet", "RETRIEVER", {"query": f"{b['process']} process sheet"}) as rs:
                    docs = chemistry_sheet(b["process"])
                    for i, d in enumerate(docs):
                        rs.set_attribute(f"retrieval.documents.{i}.document.id", d["id"])
                        rs.set_attribute(f"retrieval.documents.{i}.document.content", d["text"])
                    lab.out(rs, docs)
                sheet = json.loads(docs[0]["text"])
                sheet["sequence"] = b["sequence"]
                with lab.span("compute_times", "CHAIN", {"sheet": sheet, "push": max(push[r] for r in b["rolls"])}) as cs:
                    times = compute_times(sheet, max(push[r] for r in b["rolls"]))
                    lab.out(cs, times)
                choice = json.loads(lab.ask("LINE: choose the processor line for this batch.",
                                            {"batch": b["batch"], "process": b["process"]}))
                run = lab.tool("run_processor", run_processor, line=choice["line"], batch=b["batch"], rolls=b["rolls"],
                               sequence=times["sequence"], developer_s=times["developer_s"], temp_c=times["temp_c"])
                strip = lab.tool("read_control_strip", read_control_strip, run=run, process=b["process"],
                                 line=choice["line"])
                with lab.span("qc_check", "CHAIN", strip) as qs:
                    qc = qc_check(strip)
                    lab.out(qs, qc)
                lab.out(bs, {"batch": b["batch"], "run_no": run["run_no"], "qc": qc})
                done.append(run)
        closed = lab.tool("close_order", close_order, order_id=inp["order_id"], batches=done)
        note = lab.ask("NOTE to the customer.", closed)
        lab.out(root, {"order_id": inp["order_id"], "note": note})


@contextmanager
def session():
    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": AGENT}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    try:
        with FakeModelServer(brain, model="lab-model") as server:
            client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
            yield Lab(provider.get_tracer(AGENT), client), spans
    finally:
        OpenAIInstrumentor().uninstrument()


def record(env, inp: dict, path) -> None:
    lab, spans = env
    spans.clear()
    try:
        run_agent(lab, inp)
    except Exception:
        pass
    body = MessageToDict(encode_spans(spans.get_finished_spans()))
    with open(path, "w") as f:
        json.dump(body, f)
    spans.clear()


CASES = [
    {"case": "w_darkroom_1", "fault": "dk-plan-sequence", "kind": "plan_error",
     "input": _inp("DK-7122", [("Tri-X 400", "35mm", 0), ("Portra 400", "120", 0), ("Gold 200", "35mm", 1)]),
     "root": "ChatCompletion", "marker": "BLX>WASH"},
    {"case": "w_darkroom_2", "fault": "dk-line-choice", "kind": "wrong_routing",
     "input": _inp("DK-7127", [("HP5 Plus", "120", 0), ("Ektachrome E100", "35mm", 0)]),
     "root": "ChatCompletion", "marker": "LINE-C41"},
    {"case": "w_darkroom_3", "fault": "dk-sheet-cache", "kind": "swallowed_error",
     "input": _inp("DK-7131", [("Velvia 50", "120", 0), ("Delta 3200", "35mm", 1)]),
     "root": "chemistry_sheet", "marker": "sheet-cache"},
    {"case": "w_darkroom_4", "fault": "dk-temp-field", "kind": "unit_error",
     "input": _inp("DK-7136", [("Ektar 100", "120", 0), ("Provia 100F", "120", 0)]),
     "root": "compute_times", "marker": '"temp_c": 100.0'},
    {"case": "w_darkroom_5", "fault": "dk-strip-page", "kind": "truncated_result",
     "input": _inp("DK-7142", [("Gold 200", "35mm", 0), ("HP5 Plus", "35mm", 0), ("Velvia 50", "120", 0)]),
     "root": "read_control_strip", "marker": '0.93,1"'},
]
