"""Agent 4 (otlp route): water-well drilling permit desk, traced with OpenInference spans.

Shape: AGENT span over intake -> parcel geocode -> setback rules retrieval -> model extracts the setbacks
-> nearby features, one distance survey each (one retried) -> own setback check -> contamination register
(a transient 503 answered by a second query) -> borehole log -> target aquifer pick -> fee schedule ->
model drafts the application -> permit portal submission.  The openai client is instrumented by
openinference-instrumentation-openai; the rest are spans of our own; OTLP/JSON via the SDK's encoder.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any, Iterator

from . import kit
from .common import Fault

AGENT = "well_permits"
ROUTE = "otlp"
EXT = "json"
RUN_NAME = "well-permit-desk"
DOMAIN = "Water-well drilling permits"
SHAPE = "AGENT span; RETRIEVER, 2 instrumented model calls, per-feature survey loop with a retry, register re-query, own check, portal"

COUNTY_RULES = {
    "Ravensmoor": [("4.2", "septic", 30), ("4.3", "boundary", 3), ("4.5", "watercourse", 10), ("4.9", "seal", 6)],
    "Ravensmere": [("7.1", "septic", 15), ("7.2", "boundary", 2), ("7.4", "watercourse", 8), ("7.7", "seal", 3)],
    "Thornbury": [("2.1", "septic", 25), ("2.2", "boundary", 3), ("2.6", "watercourse", 12), ("2.8", "seal", 5)],
}
NEIGHBOUR = {"Ravensmoor": "Ravensmere", "Thornbury": "Ravensmere"}
FEES = {"2026-04-01": 265.0, "2025-04-01": 240.0}
STRATA = [("Topsoil", 0.6, False), ("Boulder clay", 14.0, False), ("Sherwood sandstone", 62.0, True),
          ("Mercia mudstone", 95.0, False)]


class PortalRefused(RuntimeError):
    pass


class SurveyTimeout(TimeoutError):
    pass


PortalRefused.__module__ = SurveyTimeout.__module__ = "permit_portal.client"


_state: dict[str, Any] = {}


def _policy(request) -> str:
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    ask = json.loads(msgs[-1]["content"])
    if system.startswith("Extract"):
        out = {}
        for doc in ask["documents"]:
            for kind in ("septic", "boundary", "watercourse"):
                if f"from any {kind}" in doc["text"]:
                    out[f"{kind}_m"] = int(doc["text"].split(" at least ")[1].split(" m")[0])
            if "sanitary seal" in doc["text"]:
                out["seal_m"] = int(doc["text"].split(" at least ")[1].split(" m")[0])
        return json.dumps(out)
    if system.startswith("Draft"):
        licence = ask["driller_licence"]
        if kit.active("wp_hallucinated_value"):
            licence = "DL-40417"
        return json.dumps({
            "parcel": ask["parcel"], "driller_licence": licence, "depth_m": ask["target"]["depth_m"],
            "formation": ask["target"]["target_stratum"], "casing": ask["casing"], "fee": ask["fee"],
            "seal_depth_m": ask["seal_m"],
            "statement": f"Domestic supply borehole to {ask['target']['depth_m']} m in {ask['target']['target_stratum']}.",
        })
    return "{}"


@contextmanager
def session() -> Iterator[None]:
    from openai import OpenAI
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from trajdebug.testing import FakeModelServer

    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "well-permit-desk"}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    try:
        with FakeModelServer(_policy, model="gpt-4o-mini") as server:
            _state.update(
                spans=spans,
                tracer=provider.get_tracer("well-permit-desk"),
                client=OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0),
                model=server.model,
            )
            yield
    finally:
        OpenAIInstrumentor().uninstrument()
        _state.clear()


class _Span:
    def __init__(self, span):
        self.span = span

    def out(self, value: Any) -> Any:
        self.span.set_attribute("output.value", json.dumps(value))
        self.span.set_attribute("output.mime_type", "application/json")
        return value


@contextmanager
def span(name: str, kind: str, inp: Any) -> Iterator[_Span]:
    attrs = {"openinference.span.kind": kind, "input.value": json.dumps(inp), "input.mime_type": "application/json"}
    with _state["tracer"].start_as_current_span(name, attributes=attrs) as s:
        yield _Span(s)


def ask_model(system: str, payload: dict) -> dict:
    reply = _state["client"].chat.completions.create(
        model=_state["model"],
        messages=[{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}],
        temperature=0,
    )
    return json.loads(reply.choices[0].message.content)


def features_for(inp: dict) -> list[dict]:
    parcel = inp["parcel"]
    s = kit.seed(parcel)
    return [
        {"id": f"F{s % 90 + 10}", "kind": "septic", "distance_m": inp.get("septic_m", 34 + s % 9)},
        {"id": f"F{s % 90 + 11}", "kind": "boundary", "distance_m": 6 + s % 4},
        {"id": f"F{s % 90 + 12}", "kind": "watercourse", "distance_m": 45 + s % 20},
        {"id": f"F{s % 90 + 13}", "kind": "boundary", "distance_m": 11 + s % 5},
    ]


def run_once(inp: dict, path: str) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    _state["spans"].clear()
    try:
        _agent(inp)
    except PortalRefused:
        pass
    data = MessageToDict(encode_spans(_state["spans"].get_finished_spans()))
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)


def _agent(inp: dict) -> None:
    with span(RUN_NAME, "AGENT", inp) as root:
        with span("intake", "CHAIN", inp) as s:
            app = s.out({"parcel": inp["parcel"], "owner": inp["owner"], "use": "domestic",
                         "driller_licence": inp["licence"], "yield_m3_day": inp["yield"]})
        with span("geocode_parcel", "TOOL", {"parcel": app["parcel"]}) as s:
            geo = s.out({"parcel": app["parcel"], "county": inp["county"],
                         "grid_ref": f"SK {kit.seed(app['parcel']) % 9000 + 1000} {kit.seed(app['parcel'], 'n') % 9000 + 1000}"})
        with span("retrieve_setback_rules", "RETRIEVER", {"query": f"well setback distances {geo['county']}"}) as s:
            county = geo["county"]
            if kit.active("wp_wrong_retrieval"):
                county = NEIGHBOUR[county]
            docs = [{"id": f"{county.lower()}-{sec}", "score": round(0.93 - i * 0.04, 2),
                     "text": (f"{county} County water-well rule {sec}: the sanitary seal shall reach at least {m} m below ground."
                              if k == "seal" else
                              f"{county} County water-well rule {sec}: a new well shall stand at least {m} m from any {k}.")}
                    for i, (sec, k, m) in enumerate(COUNTY_RULES[county])]
            s.out({"documents": docs})
        setbacks = ask_model("Extract the minimum setback distances in metres as JSON.", {"documents": docs})
        with span("list_nearby_features", "TOOL", {"grid_ref": geo["grid_ref"], "radius_m": 100}) as s:
            feats = s.out(features_for(inp))
        measured = []
        for i, f in enumerate(feats):
            for attempt in (1, 2):
                try:
                    with span("survey_distance", "TOOL", {"feature": f["id"], "attempt": attempt}) as s:
                        if i == 1 and attempt == 1:
                            raise SurveyTimeout(f"laser survey service timed out on {f['id']}")
                        measured.append(s.out({"feature": f["id"], "kind": f["kind"], "distance_m": f["distance_m"]}))
                    break
                except SurveyTimeout:
                    continue
        with span("verify_setbacks", "CHAIN", {"setbacks": setbacks, "measured": measured}) as s:
            for m in measured:
                need = setbacks.get(f"{m['kind']}_m", 0)
                if m["distance_m"] < need:
                    raise PortalRefused(f"{m['kind']} {m['feature']} at {m['distance_m']} m is inside the {need} m setback")
            s.out({"checked": len(measured), "ok": True})
        casing = None
        for attempt in (1, 2):
            with span("query_contamination_register", "TOOL", {"grid_ref": geo["grid_ref"], "radius_m": 250}) as s:
                if attempt == 1:
                    reg = s.out({"status": 503, "message": "register backend unavailable, try again", "sites": []})
                else:
                    reg = s.out({"status": 200, "sites": [{"id": f"CR-{kit.seed(geo['grid_ref']) % 9000 + 1000}",
                                                           "distance_m": inp["hazard_m"], "type": "former tannery"}]})
            with span("screen_contamination", "CHAIN", reg) as s:
                if reg["status"] != 200 and not kit.active("wp_swallowed_error"):
                    s.out({"status": "retry", "reason": reg["message"]})
                    continue
                near = [x for x in reg["sites"] if x["distance_m"] <= 250]
                casing = "grouted" if near else "standard"
                s.out({"sites_within_250m": len(near), "casing": casing})
                break
        with span("fetch_borehole_log", "TOOL", {"grid_ref": geo["grid_ref"]}) as s:
            strata = s.out([{"stratum": n, "base_m": d, "water_bearing": w} for n, d, w in STRATA])
        with span("pick_target_aquifer", "CHAIN", {"strata": strata}) as s:
            idx = next(i for i, x in enumerate(strata) if x["water_bearing"])
            if kit.active("wp_off_by_one"):
                idx -= 1
            target = s.out({"target_stratum": strata[idx]["stratum"], "depth_m": strata[idx]["base_m"]})
        with span("fetch_fee_schedule", "TOOL", {"permit": "domestic abstraction borehole"}) as s:
            eff = "2025-04-01" if kit.active("wp_stale_data") else "2026-04-01"
            fee = s.out({"effective": eff, "fee_gbp": FEES[eff]})
        draft = ask_model("Draft the permit application as JSON.", {
            "parcel": app["parcel"], "driller_licence": app["driller_licence"], "target": target,
            "casing": casing, "fee": fee["fee_gbp"], "seal_m": setbacks["seal_m"]})
        with span("submit_permit_application", "TOOL", draft) as s:
            _portal(draft, inp, geo)
            receipt = s.out({"reference": f"WP-{kit.seed(app['parcel'], 'ref') % 90000 + 10000}", "status": "received"})
        root.out({"permit_reference": receipt["reference"]})


def _portal(draft: dict, inp: dict, geo: dict) -> None:
    if draft["driller_licence"] not in ("DL-31872", "DL-20655", "DL-57310"):
        raise PortalRefused(f"permit portal 422: driller licence {draft['driller_licence']} not found in the register")
    if draft["formation"] not in [n for n, _, w in STRATA if w]:
        raise PortalRefused(f"permit portal 422: formation {draft['formation']} is not an aquifer at {geo['grid_ref']}")
    if inp["hazard_m"] <= 250 and draft["casing"] != "grouted":
        raise PortalRefused("permit portal 422: grouted casing required within 250 m of a registered contamination site")
    if draft["fee"] != FEES["2026-04-01"]:
        raise PortalRefused(f"payments 402: {draft['fee']:.2f} GBP does not match the fee due")
    rules = {k: m for _, k, m in COUNTY_RULES[geo["county"]]}
    if draft["seal_depth_m"] < rules["seal"]:
        raise PortalRefused(f"permit portal 422: sanitary seal of {draft['seal_depth_m']} m is shallower than the county minimum")
    for f in features_for(inp):
        if f["kind"] not in rules:
            continue
        if f["distance_m"] < rules[f["kind"]]:
            raise PortalRefused(f"permit portal 422: {f['kind']} {f['id']} at {f['distance_m']} m breaches the county setback")


def _req(parcel: str, county: str, owner: str, licence: str = "DL-31872", hazard_m: int = 400) -> dict:
    return {"parcel": parcel, "county": county, "owner": owner, "licence": licence, "yield": 4.5, "hazard_m": hazard_m}


_IN = {
    "retr": _req("RM-1187", "Ravensmoor", "A. Pryce"),
    "swallow": _req("TB-0442", "Thornbury", "M. Okafor", hazard_m=120),
    "obo": _req("RM-2290", "Ravensmoor", "J. Lind"),
    "stale": _req("TB-0913", "Thornbury", "S. Varga", licence="DL-20655"),
    "halluc": _req("RM-3051", "Ravensmoor", "K. Oduya", hazard_m=180),
}

FAULTS = [
    Fault("wellpermits_1", "wp_wrong_retrieval", "wrong_retrieval", "retrieve_setback_rules", "Ravensmere", _IN["retr"]),
    Fault("wellpermits_2", "wp_swallowed_error", "swallowed_error", "screen_contamination", '"casing": "standard"', _IN["swallow"]),
    Fault("wellpermits_3", "wp_off_by_one", "off_by_one", "pick_target_aquifer", '"target_stratum": "Boulder clay"', _IN["obo"]),
    Fault("wellpermits_4", "wp_stale_data", "stale_data", "fetch_fee_schedule", "2025-04-01", _IN["stale"]),
    Fault("wellpermits_5", "wp_hallucinated_value", "hallucinated_value", "ChatCompletion", "DL-40417", _IN["halluc"]),
]

REFS = [_req("RM-4410", "Ravensmoor", "P. Haas", licence="DL-57310"), _req("TB-1508", "Thornbury", "E. Moss", hazard_m=90),
        _req("RM-0777", "Ravensmoor", "L. Brandt", hazard_m=230), _req("TB-2623", "Thornbury", "R. Silva")]
