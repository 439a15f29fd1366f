"""Dry-stone walling quotes (route otlp): the openai client instrumented by OpenInference, own
AGENT/CHAIN/TOOL/RETRIEVER spans, OTel SDK in memory, written as OTLP/JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path

from benchmarks.heldout.suite_q import kit
from benchmarks.heldout.suite_q.kit import Agent, Case


NAME = "wall-quoter"

JOBS = {
    "Naunton": {"sections": [12.0, 9.5, 14.0, 8.0], "height_m": 1.2, "stone": "Cotswold walling", "postcode": "GL54 3AE"},
    "Snowshill": {"sections": [6.0, 7.5, 11.0, 10.0, 9.0, 5.5, 8.0], "height_m": 1.0, "stone": "Cotswold walling", "postcode": "WR12 7JU"},
    "Malham": {"sections": [15.0, 13.0, 12.5], "height_m": 1.4, "stone": "Yorkshire gritstone", "postcode": "BD23 4DA"},
    "Grassington": {"sections": [7.0, 8.0, 9.0, 6.5, 7.5, 10.0, 8.5, 9.5, 6.0], "height_m": 1.1, "stone": "Yorkshire gritstone", "postcode": "BD23 5AU"},
    "Hartington": {"sections": [10.0, 12.0, 9.0, 11.0, 8.5], "height_m": 1.3, "stone": "Derbyshire limestone", "postcode": "SK17 0AL"},
    "Eyam": {"sections": [9.0, 10.5, 7.0, 8.0, 12.0, 6.0], "height_m": 1.2, "stone": "Derbyshire limestone", "postcode": "S32 5QP"},
    "Ribblehead": {"sections": [8.0, 9.5, 7.0, 10.0, 6.5, 9.0, 8.5, 7.5], "height_m": 1.25, "stone": "Yorkshire gritstone", "postcode": "LA6 3AS"},
    "Kettlewell": {"sections": [9.0, 11.0, 8.5, 10.5, 7.0], "height_m": 1.2, "stone": "Yorkshire gritstone", "postcode": "BD23 5QZ"},
    "Bibury": {"sections": [7.5, 8.0, 6.5, 9.0, 10.0, 8.5], "height_m": 1.1, "stone": "Cotswold walling", "postcode": "GL7 5NW"},
    "Coniston": {"sections": [11.0, 14.0, 9.5, 10.0, 12.5, 8.0, 7.5, 9.0, 10.5, 11.5], "height_m": 1.35, "stone": "Lakeland slate", "postcode": "LA21 8DU"},
}
SPECS = [
    {"doc": "SP-CW-02", "stone": "Cotswold walling", "product": "CW-40", "tonnes_per_m2": 1.1, "course_mm": 150},
    {"doc": "SP-CB-10", "stone": "Cotswold brash", "product": "CB-10", "tonnes_per_m2": 0.9, "course_mm": 100},
    {"doc": "SP-YG-05", "stone": "Yorkshire gritstone", "product": "YG-55", "tonnes_per_m2": 1.3, "course_mm": 175},
    {"doc": "SP-DL-07", "stone": "Derbyshire limestone", "product": "DL-45", "tonnes_per_m2": 1.2, "course_mm": 160},
    {"doc": "SP-LS-03", "stone": "Lakeland slate", "product": "LS-30", "tonnes_per_m2": 1.25, "course_mm": 90},
]
LOOSE_ONLY = {"CB-10"}
SYS_EXTRACT = "Extract the walling job from the enquiry as JSON: site, stone, height_m, postcode, run_m."
SYS_QUOTE = "Write the customer quote in two sentences."


def enquiry(site: str) -> str:
    j = JOBS[site]
    return (f"Hello, we need the field wall at {site} rebuilt, about {sum(j['sections']):g} m in total, "
            f"{j['height_m']:g} m high, in {j['stone']} to match. Delivery to {j['postcode']}. Thanks, the estate office")


def policy(request):
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system == SYS_EXTRACT:
        site = user.split("wall at ")[1].split(" rebuilt")[0]
        j = JOBS[site]
        postcode = j["postcode"]
        if kit.active("wq_halluc"):
            postcode = postcode.split(" ")[0] + " 9ZZ"
        return json.dumps({"site": site, "stone": j["stone"], "height_m": j["height_m"], "postcode": postcode,
                           "run_m": sum(j["sections"])})
    if system == SYS_QUOTE:
        return "Thank you for your enquiry. Our quote for the rebuild is attached with delivery included."
    return "Sorry."


_STATE: dict = {}


def _setup():
    if _STATE:
        return _STATE
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from trajdebug.testing import FakeModelServer

    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": NAME}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    server = FakeModelServer(policy, model="gpt-4o-mini").start()
    _STATE.update(spans=spans, tracer=provider.get_tracer(NAME), server=server, provider=provider)
    return _STATE


class Declined(RuntimeError):
    pass


Declined.__module__ = "walling.clients"


def agent(inp: dict, path: Path) -> None:
    from google.protobuf.json_format import MessageToDict
    from openai import OpenAI
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    st = _setup()
    spans, tracer, server = st["spans"], st["tracer"], st["server"]
    server.use(policy)
    spans.clear()
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    site = inp["site"]

    def span(name, kind, value):
        return tracer.start_as_current_span(name, attributes={
            "openinference.span.kind": kind, "input.value": json.dumps(value), "input.mime_type": "application/json"})

    def out(s, value):
        s.set_attribute("output.value", json.dumps(value))
        s.set_attribute("output.mime_type", "application/json")
        return value

    try:
        with tracer.start_as_current_span(NAME, attributes={
                "openinference.span.kind": "AGENT", "input.value": enquiry(site), "agent.name": NAME}) as root:
            with span("read_enquiry", "CHAIN", {"text": enquiry(site)}) as s:
                text = out(s, {"text": enquiry(site), "channel": "email"})["text"]
            r = client.chat.completions.create(model=server.model, messages=[
                {"role": "system", "content": SYS_EXTRACT}, {"role": "user", "content": text}])
            job = json.loads(r.choices[0].message.content)
            with span("retrieve_specs", "RETRIEVER", {"query": f"{job['stone']} spec sheet"}) as s:
                want = job["stone"]
                if kit.active("wq_retrieval") and want == "Cotswold walling":
                    want = "Cotswold brash"  # nearest neighbour by embedding
                docs = [d for d in SPECS if d["stone"] == want]
                out(s, {"documents": docs})
            spec = docs[0]
            with span("stone_price", "TOOL", {"product": spec["product"]}) as s:
                if kit.active("wq_stale"):
                    price = {"product": spec["product"], "price_per_t": 96.0, "price_list": "2023-Q1"}
                else:
                    price = {"product": spec["product"], "price_per_t": 138.0, "price_list": "2026-Q4"}
                out(s, price)
            with span("plan_courses", "CHAIN", {"height_m": job["height_m"], "course_mm": spec["course_mm"]}) as s:
                n = math.ceil(job["height_m"] * 1000 / spec["course_mm"])
                if kit.active("wq_offbyone"):
                    n += 1
                courses = out(s, {"courses": [f"course {i}" for i in range(1, n + 1)], "coping": True})
            lengths = []
            for k, _ in enumerate(JOBS[site]["sections"], 1):
                with span("measure_section", "TOOL", {"site": site, "section": f"S{k}"}) as s:
                    length = JOBS[site]["sections"][k - 1]
                    if kit.active("wq_unit") and k == 2:
                        length = round(length / 0.3048, 1)  # the surveyor's app set to feet
                    lengths.append(out(s, {"section": f"S{k}", "length_m": length})["length_m"])
            with span("compute_tonnage", "CHAIN", {"lengths_m": lengths, "courses": len(courses["courses"])}) as s:
                area = sum(lengths) * job["height_m"]
                per_course = spec["tonnes_per_m2"] * spec["course_mm"] / 1000
                tonnes = round(area * per_course * len(courses["courses"]) / job["height_m"], 2)
                calc = out(s, {"area_m2": round(area, 2), "tonnes": tonnes})
            with span("book_haulage", "TOOL", {"postcode": job["postcode"], "tonnes": calc["tonnes"]}) as s:
                if job["postcode"] != JOBS[site]["postcode"]:
                    raise Declined("Haulier API: 400 address lookup returned no delivery point")
                out(s, {"haulage": f"HL-{len(site) * 41}", "loads": math.ceil(calc["tonnes"] / 20)})
            with span("order_stone", "TOOL", {"product": spec["product"], "tonnes": calc["tonnes"]}) as s:
                if spec["product"] in LOOSE_ONLY:
                    raise Declined(f"Quarry order desk: product {spec['product']} is sold loose only, "
                                   "palletised order rejected")
                out(s, {"order": f"QO-{spec['product']}-{int(calc['tonnes'])}", "status": "held"})
            total = round(calc["tonnes"] * price["price_per_t"] + 55 * calc["area_m2"], 2)
            r = client.chat.completions.create(model=server.model, messages=[
                {"role": "system", "content": SYS_QUOTE},
                {"role": "user", "content": f"Site {site}, {calc['tonnes']} t of {spec['product']}, total GBP {total}"}])
            with span("check_quote", "TOOL", {"area_m2": calc["area_m2"], "tonnes": calc["tonnes"],
                                              "stated_run_m": job["run_m"]}) as s:
                if abs(sum(lengths) - job["run_m"]) > 0.1 * job["run_m"]:
                    raise Declined("quote check: measured run does not agree with the enquiry")
                layers = math.ceil(job["height_m"] * 1000 / spec["course_mm"])
                limit = spec["tonnes_per_m2"] * layers * spec["course_mm"] / 1000 / job["height_m"]
                if calc["tonnes"] / calc["area_m2"] > limit * 1.02:
                    raise Declined("quote check: stone per square metre above the product's yield")
                out(s, {"ok": True})
            with span("submit_quote", "TOOL", {"site": site, "total_gbp": total,
                                               "price_list": price["price_list"]}) as s:
                if price["price_list"] != "2026-Q4":
                    raise Declined("Merchant API: 409 quote refers to a price list that is no longer current")
                out(s, {"quote": f"Q-{site[:4].upper()}-{int(total)}", "sent": True})
            root.set_attribute("output.value", r.choices[0].message.content)
    except Declined:
        pass
    data = MessageToDict(encode_spans(spans.get_finished_spans()))
    Path(path).write_text(json.dumps(data))


CASES = [
    Case("walling_retrieval", NAME, "otlp", "wrong_retrieval", "wq_retrieval", {"site": "Snowshill"},
         "retrieve_specs", "brash"),
    Case("walling_unit", NAME, "otlp", "unit_error", "wq_unit", {"site": "Grassington"}, "measure_section", "26.2"),
    Case("walling_offbyone", NAME, "otlp", "off_by_one", "wq_offbyone", {"site": "Hartington"}, "plan_courses",
         "course 10"),
    Case("walling_stale", NAME, "otlp", "stale_data", "wq_stale", {"site": "Coniston"}, "stone_price", "2023-Q1"),
    Case("walling_halluc", NAME, "otlp", "hallucinated_value", "wq_halluc", {"site": "Ribblehead"}, None, "9ZZ"),
]
REFS = [{"site": "Eyam"}, {"site": "Malham"}, {"site": "Kettlewell"}, {"site": "Bibury"}]

AGENT = Agent(NAME, "otlp", "json", agent, CASES, REFS)
