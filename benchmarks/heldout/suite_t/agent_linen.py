"""otlp route: hospital linen-service dispatch desk (OpenInference AGENT, CHAIN, RETRIEVER and TOOL spans; instrumented openai client)."""
import json
import re

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from trajdebug.testing import FakeModelServer

from . import agent_costume as _otel
from . import kit


NAME = "linen-dispatch-desk"
TODAY = "2026-09-22"

HOSPITALS = {  # wards -> occupied beds today
    "St Anne's Hospital": {"Ward 2A": 28, "Ward 3C": 24, "Ward 4B": 30, "Maternity": 18},
    "St Anne's Hospice": {"Cedar": 12, "Willow": 10},
    "Riverside General": {"Ward 1": 32, "Ward 5": 26, "ICU": 12},
    "Moorgate Infirmary": {"Ward A": 22, "Ward B": 25, "Ward C": 19},
    "Kingsbridge Community": {"Elm": 16, "Oak": 14},
    "Lowther Royal": {"Ward 7": 30, "Ward 8": 27, "Ward 9": 21, "Day Unit": 12},
    "Hadley Cottage Hospital": {"North": 14, "South": 12},
    "Fairmead District": {"Ward 10": 24, "Ward 11": 26, "Ward 12": 20},
    "Bellhaven Clinic": {"Blue": 11, "Green": 13},
}
CONTRACTS = [{"id": f"CT-{i + 101}", "customer": h, "items": ["sheet", "pillowcase", "blanket", "towel", "gown"]}
             for i, h in enumerate(HOSPITALS)]
STOCK = [{"item": "sheet", "on_hand": 900}, {"item": "pillowcase", "on_hand": 700}, {"item": "blanket", "on_hand": 400},
         {"item": "towel", "on_hand": 800}, {"item": "gown", "on_hand": 500}]
_Span = _otel._Span


def census(hospital, ward, day):
    beds = HOSPITALS[hospital][ward]
    return beds if day == TODAY else beds - 7


def search_contracts(hospital):
    with _Span("search_contracts", "RETRIEVER", {"query": hospital}) as s:
        words = set(re.findall(r"\w+", hospital.lower()))
        scored = sorted(CONTRACTS, key=lambda c: -len(words & set(re.findall(r"\w+", c["customer"].lower()))))
        if kit.active("linen.retrieve"):
            scored = [c for c in scored if c["customer"] != hospital] + [c for c in scored if c["customer"] == hospital]
        else:
            scored = [c for c in scored if c["customer"] == hospital] + [c for c in scored if c["customer"] != hospital]
        return s.out({"documents": scored[:2]})


def fetch_census(hospital, ward):
    with _Span("fetch_ward_census", "TOOL", {"hospital": hospital, "ward": ward}) as s:
        day = "2026-09-20" if kit.active("linen.census") else TODAY
        return s.out({"ward": ward, "occupied_beds": census(hospital, ward, day), "as_of": day})


def estimate(client, model, ward, cen):
    msgs = [{"role": "system", "content": "You are a linen planner. Estimate clean linen sets for one ward. Answer JSON."},
            {"role": "user", "content": "ESTIMATE\n" + json.dumps({"ward": ward, "census": cen})}]
    reply = client.chat.completions.create(model=model, messages=msgs)
    return json.loads(reply.choices[0].message.content)


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    data = json.loads(prompt.split("\n", 1)[1])
    ward = data["ward"]
    deliver = "06:00"
    if kit.active("linen.drift") and ward in ("Ward 9", "ICU", "Ward C"):
        deliver = "6am"
    return json.dumps({"ward": ward, "sets": data["census"]["occupied_beds"] * 2, "deliver_by": deliver})


def remember(memory, ward_names, i, est):
    with _Span("remember_ward", "CHAIN", {"ward": est["ward"], "sets": est["sets"]}) as s:
        key = est["ward"]
        if kit.active("linen.memory") and i == 2:
            key = ward_names[1]
        memory[key] = est
        return s.out({"stored_under": key, "ward": est["ward"], "sets": est["sets"], "deliver_by": est["deliver_by"]})


def fetch_stock():
    with _Span("fetch_stock", "TOOL", {"warehouse": "Eastside laundry"}) as s:
        items = STOCK[:3] if kit.active("linen.stock") else STOCK
        return s.out({"warehouse": "Eastside laundry", "items": items})


def run_agent(hospital, path):
    if not _otel._instrumented:
        OpenAIInstrumentor().instrument(tracer_provider=_otel._provider)
        _otel._instrumented = True
    _otel._exporter.clear()
    with FakeModelServer(policy) as server:
        client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        try:
            with _Span(NAME, "AGENT", {"hospital": hospital}) as top:
                with _Span("read_request", "CHAIN", {"hospital": hospital}) as s:
                    req = s.out({"hospital": hospital, "wards": list(HOSPITALS[hospital]), "date": TODAY})
                with _Span("fetch_par_levels", "TOOL", {"hospital": hospital}) as s:
                    s.out({"hospital": hospital, "sets_per_bed": 2, "delivery_window": "05:30-06:30"})
                contract = search_contracts(req["hospital"])["documents"][0]
                memory = {}
                for i, ward in enumerate(req["wards"]):
                    with _Span("plan_ward", "CHAIN", {"ward": ward}) as pw:
                        cen = fetch_census(req["hospital"], ward)
                        est = estimate(client, server.model, ward, cen)
                        pw.out(remember(memory, req["wards"], i, est))
                stock = fetch_stock()
                with _Span("build_manifest", "CHAIN", {"contract": contract["id"], "wards": len(memory)}) as s:
                    lines = [{"ward": w, "sets": e["sets"], "deliver_by": e["deliver_by"]} for w, e in memory.items()]
                    alloc = {it["item"]: sum(line["sets"] for line in lines) for it in stock["items"] if it["item"] in contract["items"]}
                    manifest = s.out({"contract": contract["id"], "customer": contract["customer"], "lines": lines, "allocation": alloc})
                with _Span("submit_dispatch", "TOOL", manifest) as s:
                    if manifest["customer"] != req["hospital"]:
                        raise ValueError(f"dispatch API 409: contract {manifest['contract']} is not held by the delivery address")
                    got = {line["ward"]: line for line in manifest["lines"]}
                    for w in req["wards"]:
                        if w not in got:
                            raise ValueError(f"dispatch API 422: no manifest line for {w}")
                        if not re.fullmatch(r"\d\d:\d\d", got[w]["deliver_by"]):
                            raise ValueError(f"dispatch API 422: lines[{w}].deliver_by is not a valid time")
                        need = census(req["hospital"], w, TODAY) * 2
                        if abs(got[w]["sets"] - need) > 0.15 * need:
                            raise ValueError(f"dispatch API 409: {w} quantity outside tolerance of the ward's bed board")
                    for item in ["sheet", "pillowcase", "blanket", "towel", "gown"]:
                        if item not in manifest["allocation"]:
                            raise ValueError(f"picking system 409: no allocation for {item} on contract {manifest['contract']}")
                    s.out({"dispatch": f"DS-{manifest['contract']}-{TODAY}"})
                top.out({"dispatch": f"DS-{manifest['contract']}"})
        except ValueError:
            pass
    spans = _otel._exporter.get_finished_spans()
    with open(path, "w") as f:
        json.dump(MessageToDict(encode_spans(spans)), f)


FAULTS = [
    ("wrong_retrieval", "linen.retrieve", "St Anne's Hospital", "search_contracts", '"documents": [{"id": "CT-102"'),
    ("stale_data", "linen.census", "Lowther Royal", "fetch_ward_census", "2026-09-20"),
    ("format_drift", "linen.drift", "Riverside General", "ChatCompletion", "6am"),
    ("bad_memory_write", "linen.memory", "Fairmead District", "remember_ward", '"stored_under": "Ward 11", "ward": "Ward 12"'),
    ("truncated_result", "linen.stock", "Moorgate Infirmary", "fetch_stock", '"on_hand": 400}]'),
]
REFS = ["Kingsbridge Community", "Hadley Cottage Hospital", "Bellhaven Clinic", "St Anne's Hospice"]
