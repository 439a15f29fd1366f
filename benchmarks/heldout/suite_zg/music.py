"""Sheet music publishing desk: OpenTelemetry spans with OpenInference conventions, exported as OTLP/JSON."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from .kit import active

AGENT = "score-publisher"
ROUTE = "otlp"
DOMAIN = "sheet music publishing"
SHAPE = "intake -> manuscript (tool) -> parse -> engrave per part (tool) -> proof parts -> catalog search (retriever) -> blurb (LLM) -> review -> credits (LLM) -> price (tool) -> register edition"
EXT = "json"

WORKS = {
    "W-118": {"title": "Harbour Suite", "composer": "Ilse Marren", "text": "title=Harbour Suite; key=Eb major; time=6/8; "
              "measures=212; parts=fl,ob,cl,bn,hn", "ensemble": "wind quintet"},
    "W-124": {"title": "Three Lanterns", "composer": "Tomas Vidal", "text": "title=Three Lanterns; key=A minor; time=3/4; "
              "measures=148; parts=vn1,vn2,va,vc", "ensemble": "string quartet"},
    "W-097": {"title": "Low Tide", "composer": "Ilse Marren", "text": "title=Low Tide; key=D major; time=4/4; "
              "measures=96; parts=fl,cl,hn", "ensemble": "wind trio"},
    "W-101": {"title": "Salt Roads", "composer": "Ade Olowe", "text": "title=Salt Roads; key=G major; time=2/4; "
              "measures=130; parts=vn1,vn2,va,vc", "ensemble": "string quartet"},
    "W-105": {"title": "Glass Weather", "composer": "Tomas Vidal", "text": "title=Glass Weather; key=F major; time=5/8; "
              "measures=176; parts=fl,ob,cl,bn,hn", "ensemble": "wind quintet"},
    "W-110": {"title": "Ferry Songs", "composer": "Ade Olowe", "text": "title=Ferry Songs; key=C major; time=3/8; "
              "measures=88; parts=cl,bn", "ensemble": "wind duo"},
}
TRANSPOSE = {"cl": "Bb", "hn": "F", "fl": "C", "ob": "C", "bn": "C", "vn1": "C", "vn2": "C", "va": "C", "vc": "C"}
CATALOG = {"W-118": ["SM-4410", "SM-4411"], "W-124": ["SM-4502"], "W-097": [], "W-101": ["SM-4301"],
           "W-105": [], "W-110": ["SM-4200"]}
ISMN = {"W-118": "979-0-2600-4412-3", "W-124": "979-0-2600-4503-8", "W-097": "979-0-2600-4120-7",
        "W-101": "979-0-2600-4302-7", "W-105": "979-0-2600-4150-4", "W-110": "979-0-2600-4201-3"}
INPUTS = {k: {"work_id": k, "format": "score and parts"} for k in WORKS}
INPUTS["a"], INPUTS["b"] = INPUTS["W-118"], INPUTS["W-124"]
REFS = ["W-097", "W-101", "W-105", "W-110"]


def policy(request):
    msgs = request.body["messages"]
    task = msgs[0]["content"].split(":", 1)[0]
    data = json.loads(msgs[-1]["content"])
    if task == "BLURB":
        ensemble = data["ensemble"]
        for note in data.get("recent", []):
            ensemble = note["ensemble"]
        return json.dumps({"blurb": f"{data['title']} by {data['composer']}, for {ensemble}, {data['measures']} bars in {data['key']}.",
                           "ensemble": ensemble})
    if task == "CREDITS":
        ismn = data["ismn"]
        if active("mus-5"):
            ismn = "979-0-2600-4413-0"
        return json.dumps({"credit_line": f"Edited by the house; engraving {data['edition']}", "ismn": ismn,
                           "edition": data["edition"]})
    return "{}"


def record(server, inp: dict, out: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "score-publisher"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("score-publisher")
    client = OpenAI(base_url=server.base_url, api_key="local", max_retries=0)
    work_id = inp["work_id"]

    @contextmanager
    def span(name: str, kind: str, given):
        attrs = {"openinference.span.kind": kind, "input.value": json.dumps(given), "input.mime_type": "application/json"}
        with tracer.start_as_current_span(name, attributes=attrs) as sp:
            box: dict = {}
            yield box
            if "out" in box:
                sp.set_attribute("output.value", json.dumps(box["out"]))
                sp.set_attribute("output.mime_type", "application/json")

    def llm(name: str, system: str, payload: dict) -> dict:
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}]
        attrs = {"openinference.span.kind": "LLM", "llm.model_name": "publisher-llm",
                 "input.value": json.dumps({"messages": msgs}), "input.mime_type": "application/json"}
        for i, m in enumerate(msgs):
            attrs[f"llm.input_messages.{i}.message.role"] = m["role"]
            attrs[f"llm.input_messages.{i}.message.content"] = m["content"]
        with tracer.start_as_current_span(name, attributes=attrs) as sp:
            reply = client.chat.completions.create(model="publisher-llm", messages=msgs)
            text = reply.choices[0].message.content
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            sp.set_attribute("output.value", text)
            sp.set_attribute("llm.token_count.prompt", reply.usage.prompt_tokens if reply.usage else 0)
        return json.loads(text)

    try:
        with tracer.start_as_current_span(AGENT, attributes={"openinference.span.kind": "AGENT", "agent.name": AGENT,
                                                              "input.value": json.dumps(inp)}):
            with span("intake_submission", "CHAIN", inp) as s:
                s["out"] = {"work_id": work_id, "format": inp["format"]}
            with span("fetch_manuscript", "TOOL", {"work_id": work_id}) as s:
                s["out"] = {"work_id": work_id, "meta": WORKS[work_id]["text"]}
            with span("parse_manuscript", "CHAIN", s["out"]) as p:
                meta = dict(kv.split("=", 1) for kv in s["out"]["meta"].split("; "))
                meta["parts"] = meta["parts"].split(",")
                meta["measures"] = int(meta["measures"])
                p["out"] = meta
            engraved = []
            for part in meta["parts"]:
                key = TRANSPOSE[part]
                if part == "cl" and active("mus-3"):
                    key = TRANSPOSE["fl"]
                args = {"part": part, "measures": meta["measures"], "written_key": key}
                with span("engrave_part", "TOOL", args) as e:
                    e["out"] = {"part": part, "file": f"{work_id}-{part}.pdf", "written_key": key,
                                "pages": 2 + meta["measures"] // 60}
                engraved.append(e["out"])
            with span("proof_parts", "CHAIN", {"parts": engraved}) as pr:
                for e in engraved:
                    if e["written_key"] != TRANSPOSE[e["part"]]:
                        raise ValueError(f"proof check: part {e['part']} is written in {e['written_key']}, "
                                         f"the instrument reads in {TRANSPOSE[e['part']]}")
                pr["out"] = {"parts_ok": len(engraved)}
            with span("search_catalog", "RETRIEVER", {"query": f"editions of {work_id}"}) as c:
                editions = CATALOG[work_id][:-1] if active("mus-2") else CATALOG[work_id]
                c["out"] = {"documents": [{"id": e, "work_id": work_id} for e in editions]}
            edition = f"SM-{int(editions[-1][3:]) + 1}" if editions else f"SM-{4000 + int(work_id[2:])}"
            recent = [{"work_id": "W-124", "ensemble": "string quartet"}] if active("mus-1") else []
            blurb = llm("write_blurb", "BLURB: write the catalog blurb",
                        {"title": WORKS[work_id]["title"], "composer": WORKS[work_id]["composer"], "key": meta["key"],
                         "measures": meta["measures"], "ensemble": WORKS[work_id]["ensemble"], "recent": recent})
            with span("review_blurb", "CHAIN", blurb) as rv:
                if blurb["ensemble"] != WORKS[work_id]["ensemble"]:
                    raise ValueError(f"metadata review: blurb lists '{blurb['ensemble']}', the score's parts make a "
                                     f"{WORKS[work_id]['ensemble']}")
                rv["out"] = {"approved": True}
            credits = llm("write_credits", "CREDITS: credit line and identifiers",
                          {"edition": edition, "ismn": ISMN[work_id], "title": WORKS[work_id]["title"]})
            with span("price_edition", "TOOL", {"edition": edition, "pages": sum(e["pages"] for e in engraved)}) as pe:
                price = round(8.0 + 0.9 * sum(e["pages"] for e in engraved), 2)
                pe["out"] = {"edition": edition, "price": f"EUR {price:.2f}".replace(".", ",") if active("mus-4") else price,
                             "currency": "EUR"}
            listing = {"edition": edition, "work_id": work_id, "ismn": credits["ismn"], "price": pe["out"]["price"],
                       "blurb": blurb["blurb"], "parts": [e["file"] for e in engraved]}
            with span("register_edition", "TOOL", listing) as rg:
                if not isinstance(listing["price"], (int, float)):
                    raise ValueError(f"HTTP 400 from catalog: price {listing['price']!r} is not a decimal number")
                if listing["edition"] in CATALOG[work_id]:
                    raise ValueError(f"HTTP 409 from catalog: catalog number {listing['edition']} is already assigned")
                if listing["ismn"] != ISMN[work_id]:
                    raise ValueError(f"HTTP 422 from catalog: ISMN {listing['ismn']} is not allocated to {work_id}")
                rg["out"] = {"edition": edition, "status": "registered"}
    except ValueError:
        pass
    provider.shutdown()
    out.write_text(json.dumps(MessageToDict(encode_spans(exporter.get_finished_spans()))))


CASES_SPEC = [
    ("mus-1", "context_pollution", "a", "write_blurb", "string quartet", "review_blurb",
     "The blurb prompt carries another work's recent submission note, and the blurb takes its string-quartet scoring."),
    ("mus-2", "stale_data", "a", "search_catalog", "SM-4410", "register_edition",
     "The catalog search answers from an index that misses the latest edition, so the next catalog number is one already assigned."),
    ("mus-3", "wrong_tool_args", "a", "engrave_part", '"part": "cl"', "proof_parts",
     "The clarinet part is sent to engraving with the flute's written key instead of B-flat."),
    ("mus-4", "format_drift", "b", "price_edition", "EUR ", "register_edition",
     "The pricing tool answers the price as a localized string instead of a number, which the catalog refuses."),
    ("mus-5", "hallucinated_value", "b", "write_credits", "4413", "register_edition",
     "The credits model states an ISMN that none of its inputs hold."),
]
