"""otlp route: film costume-hire desk (OpenInference spans: AGENT, CHAIN, RETRIEVER, TOOL; instrumented openai client)."""
import json
from datetime import date

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from trajdebug.testing import FakeModelServer

from . import kit


NAME = "costume-hire-desk"

CATALOGUE = [
    {"sku": "CH-1104", "period": "1920s", "garment": "beaded day dress", "sizes": [8, 10, 12, 14]},
    {"sku": "CH-1187", "period": "1920s", "garment": "three-piece lounge suit", "sizes": [38, 40, 42, 44]},
    {"sku": "CH-1215", "period": "1920s", "garment": "cloche hat and coat", "sizes": [10, 12, 14]},
    {"sku": "CH-5512", "period": "1950s", "garment": "swing day dress", "sizes": [8, 10, 12, 14]},
    {"sku": "CH-5590", "period": "1950s", "garment": "single-breasted suit", "sizes": [38, 40, 42, 44]},
    {"sku": "CH-7731", "period": "1970s", "garment": "wide-lapel suit", "sizes": [38, 40, 42]},
    {"sku": "CH-7745", "period": "1970s", "garment": "maxi dress", "sizes": [8, 10, 12]},
    {"sku": "CH-3302", "period": "Regency", "garment": "empire-line gown", "sizes": [8, 10, 12, 14]},
    {"sku": "CH-3318", "period": "Regency", "garment": "tailcoat and breeches", "sizes": [38, 40, 42]},
]
ORDERS = {
    "PR-Gatsby": {"production": "Harbour Lights", "period": "1920s", "pickup": "2026-06-01", "return": "2026-06-14",
                  "cast": [("Ada", "dress", 34.5), ("Bruno", "suit", 40.0), ("Cora", "coat", 36.0)]},
    "PR-Tallis": {"production": "Tallis Road", "period": "1950s", "pickup": "2026-06-03", "return": "2026-06-20",
                  "cast": [("Dee", "dress", 33.0), ("Evan", "suit", 42.0)]},
    "PR-Marlow": {"production": "Marlow End", "period": "1970s", "pickup": "2026-06-05", "return": "2026-06-12",
                  "cast": [("Fay", "dress", 32.5), ("Gil", "suit", 39.5), ("Hal", "suit", 41.0)]},
    "PR-Austen": {"production": "Bath Season", "period": "Regency", "pickup": "2026-06-08", "return": "2026-06-29",
                  "cast": [("Iris", "gown", 34.0), ("Jude", "tailcoat", 40.5)]},
    "PR-Jazz": {"production": "Blue Note Nights", "period": "1920s", "pickup": "2026-06-10", "return": "2026-06-24",
                "cast": [("Kit", "suit", 38.5), ("Lena", "dress", 35.0)]},
    "PR-Diner": {"production": "Route Diner", "period": "1950s", "pickup": "2026-06-12", "return": "2026-06-19",
                 "cast": [("Mo", "suit", 40.5), ("Nell", "dress", 34.0), ("Otto", "suit", 43.0)]},
    "PR-Disco": {"production": "Mirrorball", "period": "1970s", "pickup": "2026-06-15", "return": "2026-07-03",
                 "cast": [("Pia", "dress", 33.5), ("Quin", "suit", 40.0)]},
    "PR-Pemberley": {"production": "North Lodge", "period": "Regency", "pickup": "2026-06-17", "return": "2026-06-30",
                     "cast": [("Rae", "gown", 35.0), ("Sol", "tailcoat", 41.5), ("Tess", "gown", 33.0)]},
    "PR-Speakeasy": {"production": "Back Room", "period": "1920s", "pickup": "2026-06-20", "return": "2026-07-01",
                     "cast": [("Uma", "dress", 34.0), ("Vic", "suit", 41.0), ("Wren", "coat", 35.5)]},
}
WORDS = {"dress": "dress", "suit": "suit", "coat": "coat", "gown": "gown", "tailcoat": "tailcoat"}

_exporter = InMemorySpanExporter()
_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(_exporter))
_tracer = _provider.get_tracer("costume-hire-desk")
_instrumented = False


class _Span:
    def __init__(self, name, kind, value):
        self.cm = _tracer.start_as_current_span(name, attributes={"openinference.span.kind": kind,
                                                                    "input.value": json.dumps(value), "input.mime_type": "application/json"})

    def __enter__(self):
        self.span = self.cm.__enter__()
        return self

    def out(self, value):
        self.span.set_attribute("output.value", json.dumps(value))
        self.span.set_attribute("output.mime_type", "application/json")
        return value

    def __exit__(self, *exc):
        return self.cm.__exit__(*exc)


def search_catalogue(period, garment):
    with _Span("search_catalogue", "RETRIEVER", {"period": period, "garment": garment}) as s:
        want = period
        if kit.active("costume.retrieve") and garment == "dress":
            want = "1950s"
        docs = [c for c in CATALOGUE if c["period"] == want and garment in c["garment"]]
        docs += [c for c in CATALOGUE if c["period"] == want and c not in docs]
        return s.out({"documents": docs[:3]})


def measure(name, chest_in):
    with _Span("convert_measurements", "TOOL", {"performer": name, "chest_in": chest_in}) as s:
        cm = chest_in if kit.active("costume.unit") and name == "Hal" else chest_in * 2.54
        return s.out({"performer": name, "chest_cm": round(cm, 1)})


def size_for(garment, chest_cm):
    if garment in ("suit", "tailcoat"):
        return int(round(chest_cm / 2.54 / 2) * 2)
    return int(max(4, 8 + 2 * round((chest_cm - 81) / 5)))


def choose(client, model, role, docs, meas):
    msgs = [{"role": "system", "content": "You are a wardrobe assistant. Pick one catalogue item and a size. Answer JSON."},
            {"role": "user", "content": "CHOOSE\n" + json.dumps({"role": role, "measurements": meas, "documents": docs})}]
    reply = client.chat.completions.create(model=model, messages=msgs)
    return json.loads(reply.choices[0].message.content)


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    data = json.loads(prompt.split("\n", 1)[1])
    item = data["documents"][0]
    size = size_for(data["role"]["garment"], data["measurements"]["chest_cm"])
    sku = item["sku"]
    if kit.active("costume.halluc") and data["role"]["performer"] == "Vic":
        sku = "CH-1196"
    return json.dumps({"performer": data["role"]["performer"], "sku": sku, "size": size})


def reserve(pick):
    with _Span("reserve_item", "TOOL", pick) as s:
        item = next((c for c in CATALOGUE if c["sku"] == pick["sku"]), None)
        if item is None:
            raise LookupError(f"stock API 404: no item {pick['sku']}")
        if pick["size"] not in item["sizes"]:
            raise ValueError(f"stock API 409: {pick['sku']} not stocked in size {pick['size']}")
        return s.out({"reservation": f"RS-{pick['sku'][3:]}-{pick['size']}", "sku": pick["sku"], "period": item["period"]})


def run_agent(order_id, path):
    global _instrumented
    if not _instrumented:
        OpenAIInstrumentor().instrument(tracer_provider=_provider)
        _instrumented = True
    _exporter.clear()
    order = ORDERS[order_id]
    with FakeModelServer(policy) as server:
        client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        try:
            with _Span(NAME, "AGENT", {"order": order_id}) as top:
                with _Span("read_order", "CHAIN", {"order": order_id}) as s:
                    brief = s.out({"production": order["production"], "period": order["period"], "pickup": order["pickup"],
                                   "return": order["return"], "cast": [{"performer": p, "garment": g, "chest_in": c} for p, g, c in order["cast"]]})
                reservations = []
                for role in brief["cast"]:
                    with _Span("fit_role", "CHAIN", role) as fr:
                        docs = search_catalogue(brief["period"], role["garment"])["documents"]
                        meas = measure(role["performer"], role["chest_in"])
                        pick = choose(client, server.model, role, docs, meas)
                        res = reserve(pick)
                        reservations.append(fr.out(res))
                with _Span("hire_period", "CHAIN", {"pickup": brief["pickup"], "return": brief["return"]}) as s:
                    days = (date.fromisoformat(brief["return"]) - date.fromisoformat(brief["pickup"])).days
                    if not kit.active("costume.days"):
                        days += 1
                    period = s.out({"days": days, "from": brief["pickup"], "to": brief["return"]})
                with _Span("fetch_deposit_rate", "TOOL", {"production": brief["production"]}) as s:
                    if kit.active("costume.swallow"):
                        rate_reply = s.out({"status": 502, "message": "rates service unavailable"})
                    else:
                        rate_reply = s.out({"status": 200, "deposit_per_item": 45.0, "day_rate": 12.5})
                with _Span("price_quote", "CHAIN", {"reservations": len(reservations), "days": period["days"], "rates": rate_reply}) as s:
                    n = len(reservations)
                    deposit = rate_reply.get("deposit_per_item", 0.0) * n
                    day_rate = rate_reply.get("day_rate", 12.5)
                    quote = s.out({"items": n, "days": period["days"], "hire": round(n * day_rate * period["days"], 2), "deposit": deposit})
                with _Span("submit_booking", "TOOL", {"brief": brief, "reservations": reservations, "quote": quote}) as s:
                    for r in reservations:
                        if r["period"] != brief["period"]:
                            raise ValueError(f"production portal 422: {r['sku']} does not match the {brief['period']} design brief")
                    sched = (date.fromisoformat(brief["return"]) - date.fromisoformat(brief["pickup"])).days + 1
                    if quote["days"] != sched:
                        raise ValueError(f"accounts API 409: hire of {quote['days']} days does not match the production schedule")
                    if quote["deposit"] < 40.0 * quote["items"]:
                        raise ValueError(f"payments API 402: deposit {quote['deposit']:.2f} below the minimum for {quote['items']} items")
                    s.out({"booking": f"BK-{order_id}", "total": quote["hire"] + quote["deposit"]})
                top.out({"booking": f"BK-{order_id}"})
        except (ValueError, LookupError):
            pass
    spans = _exporter.get_finished_spans()
    with open(path, "w") as f:
        json.dump(MessageToDict(encode_spans(spans)), f)


FAULTS = [
    ("wrong_retrieval", "costume.retrieve", "PR-Gatsby", "search_catalogue", "CH-5512"),
    ("unit_error", "costume.unit", "PR-Marlow", "convert_measurements", '"chest_cm": 41.0'),
    ("hallucinated_value", "costume.halluc", "PR-Speakeasy", "ChatCompletion", "CH-1196"),
    ("off_by_one", "costume.days", "PR-Disco", "hire_period", '"days": 18,'),
    ("swallowed_error", "costume.swallow", "PR-Pemberley", "price_quote", '"deposit": 0.0'),
]
REFS = ["PR-Tallis", "PR-Austen", "PR-Jazz", "PR-Diner"]
