"""Corsetiere's fittings (otlp route): OpenInference-instrumented OpenAI client plus the studio's own spans; block retrieval, a loop of fittings (measure, model reads the client's remarks, parse, apply to the client file), boning, cutting check."""
import json
import re

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

NAME = "corset-fitting-assistant"
ROUTE = "otlp"
DOMAIN = "corsetiere's fittings"
SHAPE = "intake -> block retriever -> grade -> 3 fittings x (measure, model reading, parse, apply to client file) -> boning -> cutting check"
SWITCH = set()

BLOCKS = [
    {"id": "CB-U1", "style": "underbust", "panels": 6, "size_range": [60, 75]},
    {"id": "CB-O2", "style": "overbust", "panels": 6, "size_range": [60, 80]},
    {"id": "CB-U3", "style": "underbust", "panels": 7, "size_range": [70, 90]},
    {"id": "CB-O4", "style": "overbust", "panels": 7, "size_range": [75, 95]},
    {"id": "CB-W5", "style": "waspie", "panels": 5, "size_range": [58, 80]},
]
INPUTS = [
    {"client": "Ms Delacroix", "style": "underbust", "waist": 72.0, "hip": 98.0, "target_waist": 68.0,
     "remarks": ["Pinch a little: take in 2 cm at the waist.", "Still roomy, take in 3 cm more.", "Too tight to sit, let out 1 cm."]},
    {"client": "Mx Harrow", "style": "overbust", "waist": 80.0, "hip": 104.0, "target_waist": 74.5,
     "remarks": ["Take in 4 cm at the waist.", "Take in 2.5 cm.", "Let out 0.5 cm, it bites at the ribs."]},
    {"client": "Mrs Okonjo", "style": "underbust", "waist": 84.0, "hip": 110.0, "target_waist": 79.0,
     "remarks": ["Take in 3 cm.", "Take in 1.5 cm.", "Take in 0.5 cm."]},
    {"client": "Miss Verlaine", "style": "waspie", "waist": 66.0, "hip": 92.0, "target_waist": 62.5,
     "remarks": ["Take in 2 cm.", "Let out 1.5 cm, I cannot breathe.", "Take in 3 cm."]},
    {"client": "Lady Amersham", "style": "overbust", "waist": 76.0, "hip": 100.0, "target_waist": 70.0,
     "remarks": ["Take in 3 cm.", "Take in 2 cm.", "Take in 1 cm."]},
]
CASES = [
    {"id": "zzzu_corset_block", "input": 0, "switch": "block_rank", "kind": "wrong_retrieval",
     "root": ("find_block_pattern", 1), "failure": "cutting_check",
     "desc": "The block search put the overbust CB-O2 first for an underbust commission, and that block was graded and fitted through to cutting."},
    {"id": "zzzu_corset_reading", "input": 4, "switch": "reading_four", "kind": "hallucinated_value",
     "root": ("ChatCompletion", 2), "failure": "cutting_check",
     "desc": "Reading the second fitting, the model noted a 4 cm take-in where the client asked for 2 cm, so the waist came out 2 cm under target."},
    {"id": "zzzu_corset_sign", "input": 3, "switch": "sign_lost", "kind": "lossy_parsing",
     "root": ("read_adjustment", 2), "failure": "cutting_check",
     "desc": "Parsing the second fitting kept the 1.5 cm but lost that it was a let-out, so the waist was taken in instead."},
    {"id": "zzzu_corset_bones", "input": 2, "switch": "bone_count", "kind": "off_by_one",
     "root": ("order_bones", 1), "failure": "cutting_check",
     "desc": "The boning order counted seams from the second panel on, one pair of steels short of the channels."},
    {"id": "zzzu_corset_file", "input": 1, "switch": "file_field", "kind": "bad_memory_write",
     "root": ("apply_adjustment", 2), "failure": "cutting_check",
     "desc": "The second fitting's new waist was written into the client file's hip field, leaving a hip spring the pattern cannot cut."},
]


def policy(request):
    remark = request.body["messages"][-1]["content"].split("\n", 1)[1]
    m = re.search(r"(take in|let out) ([0-9.]+) cm", remark, re.I)
    verb, cm = m.group(1).lower(), float(m.group(2))
    if "reading_four" in SWITCH and "Take in 2 cm" in remark:
        cm = 4.0
    return f"Adjustment: {verb} {cm} cm at the waist."


def _span(tracer, name, kind, inp, fn):
    with tracer.start_as_current_span(name, attributes={"openinference.span.kind": kind,
                                                        "input.value": json.dumps(inp), "input.mime_type": "application/json"}) as sp:
        out = fn()
        sp.set_attribute("output.value", json.dumps(out))
        sp.set_attribute("output.mime_type", "application/json")
        return out


def run_one(server, inp, path):
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer(NAME)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    file = {}
    try:
        with tracer.start_as_current_span(NAME, attributes={"openinference.span.kind": "AGENT", "agent.name": NAME,
                                                            "input.value": json.dumps({"client": inp["client"], "style": inp["style"]})}):
            def intake():
                file.update({"client": inp["client"], "style": inp["style"], "waist": inp["waist"], "hip": inp["hip"],
                             "target_waist": inp["target_waist"]})
                return dict(file)
            _span(tracer, "take_measurements", "TOOL", {"client": inp["client"]}, intake)

            def find():
                def score(b):
                    s = (b["style"] == inp["style"]) * 2 + (b["size_range"][0] <= inp["waist"] <= b["size_range"][1])
                    if "block_rank" in SWITCH and b["id"] == "CB-O2":
                        s += 3
                    return s
                return sorted(BLOCKS, key=lambda b: -score(b))[:2]
            with tracer.start_as_current_span("find_block_pattern", attributes={
                    "openinference.span.kind": "RETRIEVER", "input.value": f"{inp['style']} block, waist {inp['waist']} cm"}) as sp:
                found = find()
                for i, b in enumerate(found):
                    sp.set_attribute(f"retrieval.documents.{i}.document.id", b["id"])
                    sp.set_attribute(f"retrieval.documents.{i}.document.content", json.dumps(b))
            block = found[0]
            graded = _span(tracer, "grade_pattern", "CHAIN", {"block": block["id"], "waist": inp["waist"]},
                           lambda: {"block": block["id"], "style": block["style"], "panels": block["panels"],
                                    "panel_waist_cm": round(inp["waist"] / (2 * block["panels"]), 2)})
            for n, remark in enumerate(inp["remarks"], 1):
                _span(tracer, "record_fitting", "TOOL", {"fitting": n, "client": inp["client"]},
                      lambda: {"fitting": n, "waist_now": file["waist"], "remark": remark})
                reply = client.chat.completions.create(model=server.model, messages=[
                    {"role": "system", "content": "Read the client's remark at a corset fitting as one waist adjustment."},
                    {"role": "user", "content": f"Fitting {n} remark:\n{remark}"}])
                text = reply.choices[0].message.content

                def parse(text=text, n=n):
                    m = re.search(r"(take in|let out) ([0-9.]+) cm", text)
                    cm = float(m.group(2))
                    delta = -cm if m.group(1) == "take in" else cm
                    if "sign_lost" in SWITCH and n == 2:
                        delta = -abs(cm)
                    return {"waist_change_cm": delta}
                adj = _span(tracer, "read_adjustment", "CHAIN", {"text": text}, parse)

                def apply(adj=adj, n=n):
                    new = round(file["waist"] + adj["waist_change_cm"], 1)
                    if "file_field" in SWITCH and n == 2:
                        file["hip"] = new
                    else:
                        file["waist"] = new
                    return dict(file)
                _span(tracer, "apply_adjustment", "CHAIN", {"fitting": n, **adj}, apply)

            def bones():
                seams = 2 * graded["panels"]
                start = 2 if "bone_count" in SWITCH else 1
                steels = [f"seam {i}" for i in range(start, seams + 1)]
                return {"steels": len(steels), "length_cm": 28 if graded["style"] != "waspie" else 18}
            boned = _span(tracer, "order_bones", "TOOL", {"panels": graded["panels"], "style": graded["style"]}, bones)

            def check():
                if graded["style"] != inp["style"]:
                    raise ValueError(f"block {graded['block']} is {graded['style']}; the commission is {inp['style']}")
                if abs(file["waist"] - inp["target_waist"]) > 0.5:
                    raise ValueError(f"waist {file['waist']} cm after fittings; agreed target {inp['target_waist']} cm")
                if file["hip"] - file["waist"] < 15:
                    raise ValueError(f"hip spring {file['hip'] - file['waist']:.1f} cm is under the 15 cm this block cuts")
                if boned["steels"] != 2 * graded["panels"]:
                    raise ValueError(f"{2 * graded['panels']} bone channels, {boned['steels']} steels ordered")
                return {"cut": True, "waist": file["waist"]}
            _span(tracer, "cutting_check", "GUARDRAIL", {"client": inp["client"]}, check)
    except Exception:
        pass
    finally:
        OpenAIInstrumentor().uninstrument()
    with open(path, "w") as f:
        json.dump(MessageToDict(encode_spans(spans.get_finished_spans())), f)
