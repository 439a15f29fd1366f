"""Seed potato certification (otlp route): a field inspection and lab results become a certified grade."""

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

AGENT = "seed-potato-certifier"
ROUTE = "otlp"
EXT = "json"

INPUTS = {
    "sp2207": {"lot": "SP-2207", "notes": "Walked 3 transects, 1200 plants inspected. Mosaic on 4 plants, "
               "leafroll on 2 plants, blackleg on 5 plants."},
    "sp3119": {"lot": "SP-3119", "notes": "Walked 3 transects, 1500 plants inspected. Mosaic on 3 plants, "
               "leafroll on 0 plants, blackleg on 1 plants."},
}
REFS = [
    {"lot": "SP-1045", "notes": "Walked 3 transects, 1000 plants inspected. Mosaic on 1 plants, leafroll on 1 plants, blackleg on 0 plants."},
    {"lot": "SP-1310", "notes": "Walked 3 transects, 1600 plants inspected. Mosaic on 9 plants, leafroll on 4 plants, blackleg on 6 plants."},
    {"lot": "SP-2588", "notes": "Walked 3 transects, 1200 plants inspected. Mosaic on 2 plants, leafroll on 1 plants, blackleg on 2 plants."},
    {"lot": "SP-4021", "notes": "Walked 3 transects, 2000 plants inspected. Mosaic on 10 plants, leafroll on 6 plants, blackleg on 3 plants."},
]

CASES = [
    Case("zc31", "zc-sp-1", "lossy_parsing", "sp2207", ("parse_inspection", 1), ("issue_certificate", 1),
         "parse_inspection matches only the virus symptom counts and leaves blackleg at zero, so the lot is graded SE instead of E."),
    Case("zc32", "zc-sp-2", "unit_error", "sp3119", ("compute_incidence", 1), ("issue_certificate", 1),
         "compute_incidence divides the field virus percentage by 100 a second time, so the lot is graded as if almost free of virus."),
    Case("zc33", "zc-sp-3", "bad_memory_write", "sp3119", ("record_walk", 3), ("issue_certificate", 1),
         "The closing record_walk replaces the lot's PCR list with the last walk's result instead of appending it, so the mean PCR incidence drops."),
    Case("zc34", "zc-sp-4", "hallucinated_value", "sp3119", ("ChatCompletion", 1), ("parse_inspection", 1),
         "The model reports 3000 plants inspected where the notes say 1500, more than the three transects can hold."),
    Case("zc35", "zc-sp-5", "off_by_one", "sp3119", ("assign_grade", 1), ("issue_certificate", 1),
         "assign_grade returns the grade one row below the first limit the lot meets."),
]

LOTS = {
    "SP-2207": {"variety": "Maris Piper", "grower": "G-118", "hectares": 6.5, "pcr": [0.2, 0.3, 0.1]},
    "SP-3119": {"variety": "King Edward", "grower": "G-240", "hectares": 4.0, "pcr": [0.5, 0.4, 0.05]},
    "SP-1045": {"variety": "Charlotte", "grower": "G-031", "hectares": 3.2, "pcr": [0.1, 0.1, 0.1]},
    "SP-1310": {"variety": "Desiree", "grower": "G-077", "hectares": 8.0, "pcr": [0.6, 0.9, 1.2]},
    "SP-2588": {"variety": "Nicola", "grower": "G-150", "hectares": 5.1, "pcr": [0.3, 0.2, 0.4]},
    "SP-4021": {"variety": "Maris Peer", "grower": "G-212", "hectares": 9.4, "pcr": [0.9, 1.1, 0.7]},
}
GRADES = [("S", 0.5, 0.25), ("SE", 1.0, 0.25), ("E", 2.0, 0.5), ("A", 4.0, 1.0)]  # grade, virus %, blackleg %


def official_grade(lot: str, notes: str) -> tuple[str, float, float]:
    n = [int(x) for x in re.findall(r"(\d+) plants", notes)]
    plants, mosaic, leafroll, blackleg = n[0], n[1], n[2], n[3]
    pcr = LOTS[lot]["pcr"]
    virus = (mosaic + leafroll) / plants * 100 + sum(pcr) / len(pcr)
    black = blackleg / plants * 100
    for grade, vmax, bmax in GRADES:
        if virus <= vmax and black <= bmax:
            return grade, virus, black
    return "reject", virus, black


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    if prompt.startswith("Summarise the inspection notes"):
        notes = prompt.split("\n", 1)[1]
        plants = int(re.search(r"(\d+) plants inspected", notes).group(1))
        if active("zc-sp-4"):
            plants *= 2
        counts = dict(re.findall(r"(Mosaic|leafroll|blackleg) on (\d+) plants", notes))
        return (f"Plants inspected: {plants}\nSymptoms: mosaic={counts['Mosaic']}; leafroll={counts['leafroll']}; "
                f"blackleg={counts['blackleg']}\nTransects: 3")
    return "No summary."


class CertificationRefused(Exception):
    pass


class InspectionSheetError(ValueError):
    pass


def record(inp: dict, path: str, server) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": AGENT}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("seed-certifier")
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)

    def span(name: str, kind: str, given, work):
        attrs = {"openinference.span.kind": kind, "input.value": json.dumps(given), "input.mime_type": "application/json"}
        with tracer.start_as_current_span(name, attributes=attrs) as sp:
            out = work()
            sp.set_attribute("output.value", json.dumps(out))
            sp.set_attribute("output.mime_type", "application/json")
            return out

    memory: dict = {"pcr": []}

    def parse_inspection(text: str) -> dict:
        plants = int(re.search(r"Plants inspected: (\d+)", text).group(1))
        transects = int(re.search(r"Transects: (\d+)", text).group(1))
        if plants > 800 * transects:
            raise InspectionSheetError(f"inspection sheet invalid: {plants} plants over {transects} transects "
                                       f"exceeds the protocol maximum of 800 plants per transect")
        if active("zc-sp-1"):
            symptoms = dict(re.findall(r"(mosaic|leafroll)=(\d+)", text))
        else:
            symptoms = dict(re.findall(r"(\w+)=(\d+)", text))
        return {"plants": plants, **{k: int(symptoms.get(k, 0)) for k in ("mosaic", "leafroll", "blackleg")}}

    def record_walk(walk: int, result: dict) -> dict:
        if walk == 3 and active("zc-sp-3"):  # the closing write of the lot's walk list
            memory["pcr"] = [result["virus_pct"]]
        else:
            memory["pcr"] = memory["pcr"] + [result["virus_pct"]]
        return {"walk": walk, "pcr_so_far": list(memory["pcr"])}

    def compute_incidence(sheet: dict, pcr: list[float]) -> dict:
        field = (sheet["mosaic"] + sheet["leafroll"]) / sheet["plants"] * 100
        if active("zc-sp-2"):
            field = field / 100
        return {"virus_pct": round(field + sum(pcr) / len(pcr), 4),
                "blackleg_pct": round(sheet["blackleg"] / sheet["plants"] * 100, 4)}

    def assign_grade(incidence: dict) -> dict:
        fits = [i for i, (_, vmax, bmax) in enumerate(GRADES)
                if incidence["virus_pct"] <= vmax and incidence["blackleg_pct"] <= bmax]
        i = fits[0] + (1 if active("zc-sp-5") else 0)
        return {"grade": GRADES[i][0], **incidence}

    def issue_certificate(lot: str, grade: str) -> dict:
        official, virus, black = official_grade(lot, inp["notes"])
        if grade != official:
            raise CertificationRefused(
                f"certification service 409: grade {grade} refused for lot {lot}: inspection sheet and laboratory "
                f"record give virus {virus:.2f}% and blackleg {black:.2f}% (grade {official})")
        return {"certificate": f"CERT-{lot}-{grade}", "grade": grade}

    try:
        with tracer.start_as_current_span(AGENT, attributes={"openinference.span.kind": "AGENT",
                                                              "input.value": json.dumps(inp), "agent.name": AGENT}) as root:
            lot = span("fetch_lot_record", "TOOL", {"lot": inp["lot"]},
                       lambda: {k: v for k, v in LOTS[inp["lot"]].items() if k != "pcr"})
            span("check_grower_register", "TOOL", {"grower": lot["grower"]},
                 lambda: {"grower": lot["grower"], "registered": True})
            reply = client.chat.completions.create(model=server.model, messages=[
                {"role": "system", "content": "You are a seed certification assistant."},
                {"role": "user", "content": "Summarise the inspection notes:\n" + inp["notes"]}])
            summary = reply.choices[0].message.content
            sheet = span("parse_inspection", "CHAIN", {"text": summary}, lambda: parse_inspection(summary))
            with tracer.start_as_current_span("lab_liaison", attributes={"openinference.span.kind": "AGENT",
                                                                          "agent.name": "lab_liaison"}):
                for walk in (1, 2, 3):
                    sample = f"{inp['lot']}-W{walk}"
                    result = span("lab_pcr_result", "TOOL", {"sample": sample},
                                  lambda: {"sample": sample, "virus_pct": LOTS[inp["lot"]]["pcr"][walk - 1]})
                    span("record_walk", "CHAIN", {"walk": walk, "result": result}, lambda: record_walk(walk, result))
            incidence = span("compute_incidence", "CHAIN", {"sheet": sheet, "pcr": memory["pcr"]},
                             lambda: compute_incidence(sheet, memory["pcr"]))
            graded = span("assign_grade", "CHAIN", incidence, lambda: assign_grade(incidence))
            out = span("issue_certificate", "TOOL", {"lot": inp["lot"], "grade": graded["grade"]},
                       lambda: issue_certificate(inp["lot"], graded["grade"]))
            root.set_attribute("output.value", json.dumps(out))
    except (CertificationRefused, InspectionSheetError):
        pass
    finally:
        OpenAIInstrumentor().uninstrument()
    with open(path, "w", encoding="utf-8") as f:
        json.dump(MessageToDict(encode_spans(exporter.get_finished_spans())), f)
