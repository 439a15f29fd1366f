"""Lifeguard tower rostering (route: otlp): openai client instrumented by OpenInference plus own spans."""
from __future__ import annotations

import json
from contextlib import contextmanager

from benchmarks.heldout.suite_x import kit

ROUTE = "otlp"
NAME = "lifeguard-roster"

SITES = {
    "kestrel-bay": {"towers": ["T1", "T2", "T3", "T4"], "patrol": "10:00-16:00"},
    "gull-point": {"towers": ["T1", "T2", "T3"], "patrol": "09:00-15:00"},
    "long-strand": {"towers": ["T1", "T2", "T3", "T4", "T5"], "patrol": "11:00-17:00"},
}
FORECASTS = {
    "2026-12-05": {"crowd": "high", "surf_m": 1.2}, "2026-12-06": {"crowd": "moderate", "surf_m": 0.9},
    "2026-12-07": {"crowd": "high", "surf_m": 1.8}, "2026-12-08": {"crowd": "low", "surf_m": 0.6},
    "2026-12-09": {"crowd": "moderate", "surf_m": 1.7}, "2026-12-10": {"crowd": "high", "surf_m": 1.1},
    "2026-12-11": {"crowd": "moderate", "surf_m": 1.0}, "2026-12-12": {"crowd": "high", "surf_m": 2.1},
}
GUARDS = {
    "kestrel-bay": ["G-101", "G-102", "G-103", "G-104", "G-105", "G-106", "G-107", "G-108", "G-109", "G-110"],
    "gull-point": ["G-201", "G-202", "G-203", "G-204", "G-205", "G-206", "G-207"],
    "long-strand": ["G-301", "G-302", "G-303", "G-304", "G-305", "G-306", "G-307", "G-308", "G-309", "G-310", "G-311"],
}
POOL_ONLY = {"G-104", "G-203", "G-306"}
DOCS = {
    "SURF-7": "SURF-7 (surf beaches): staff each tower with 2 guards when the crowd forecast is high or surf "
              "is above 1.5 m, otherwise 1 guard; shifts cover the full patrol window.",
    "POL-POOL-2": "POL-POOL-2 (public pools): staff each chair with 1 guard; rotate every 30 minutes; "
                  "shifts cover the opening hours.",
}
PAGE = 4


def _req(site, date):
    return {"site": site, "date": date}


REFS = [_req("kestrel-bay", "2026-12-05"), _req("gull-point", "2026-12-06"),
        _req("long-strand", "2026-12-08"), _req("gull-point", "2026-12-10")]
CASES = [
    dict(case="lifeguard_wrong_retrieval", fault_kind="wrong_retrieval", fault_id="lifeguard.search",
         input=_req("gull-point", "2026-12-07"), root="search_policy", marker="POL-POOL-2"),
    dict(case="lifeguard_stale_data", fault_kind="stale_data", fault_id="lifeguard.forecast_cache",
         input=_req("kestrel-bay", "2026-12-09"), root="fetch_forecast", marker="2026-12-08T06"),
    dict(case="lifeguard_hallucinated_value", fault_kind="hallucinated_value", fault_id="lifeguard.model_hours",
         input=_req("long-strand", "2026-12-11"), root="ChatCompletion", marker="15:30"),
    dict(case="lifeguard_off_by_one", fault_kind="off_by_one", fault_id="lifeguard.cursor",
         input=_req("kestrel-bay", "2026-12-12"), root="pick_guards", marker="T2=G-102"),
    dict(case="lifeguard_truncated_result", fault_kind="truncated_result", fault_id="lifeguard.paging",
         input=_req("long-strand", "2026-12-07"), root="list_guards", marker="4 listed"),
]


def _staff_needed(forecast: dict) -> int:
    return 2 if forecast["crowd"] == "high" or forecast["surf_m"] > 1.5 else 1


def policy(request):
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    data = json.loads(user)
    if system.startswith("You plan"):
        doc = data["policy"]
        f = data["forecast"]
        n = 2 if "2 guards when" in doc and (f["crowd"] == "high" or f["surf_m"] > 1.5) else 1
        start, end = data["patrol"].split("-")
        if kit.active("lifeguard.model_hours"):
            end = "15:30"
        plan = {"towers": [{"tower": t, "guards": n, "shift": f"{start}-{end}"} for t in data["towers"]]}
        return json.dumps(plan)
    return f"Roster for {data['site']} on {data['date']} is published: {data['crews']}."


class Session:
    def __init__(self):
        from openai import OpenAI
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from trajdebug.testing import FakeModelServer

        self.spans = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": NAME}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.instrumentor = OpenAIInstrumentor()
        self.instrumentor.instrument(tracer_provider=self.provider)
        self.tracer = self.provider.get_tracer(NAME)
        self.server = FakeModelServer(policy, model="gpt-4o-mini").start()
        self.client = OpenAI(base_url=self.server.base_url, api_key="not-needed", max_retries=0)

    def close(self):
        self.server.stop()
        self.instrumentor.uninstrument()


@contextmanager
def session():
    s = Session()
    try:
        yield s
    finally:
        s.close()


def record(sess: Session, path, request) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    sess.spans.clear()
    try:
        _agent(sess, request)
    except (ValueError, RuntimeError):
        pass
    doc = MessageToDict(encode_spans(sess.spans.get_finished_spans()))
    with open(path, "w") as f:
        f.write(json.dumps(doc) + "\n")


def _agent(sess: Session, request: dict) -> None:
    tracer = sess.tracer
    calls: dict[str, int] = {}

    @contextmanager
    def span(name, kind, inp):
        attrs = {"openinference.span.kind": kind, "input.value": json.dumps(inp), "input.mime_type": "application/json"}
        with tracer.start_as_current_span(name, attributes=attrs) as sp:
            box = {}
            yield box
            if "out" in box:
                sp.set_attribute("output.value", json.dumps(box["out"]))
                sp.set_attribute("output.mime_type", "application/json")

    def chat(system, payload):
        reply = sess.client.chat.completions.create(
            model="gpt-4o-mini", temperature=0,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}])
        return reply.choices[0].message.content

    site, date = request["site"], request["date"]
    info = SITES[site]
    with span(NAME, "AGENT", request) as top:
        with span("read_request", "CHAIN", request) as s:
            s["out"] = {"site": site, "date": date, "towers": info["towers"], "patrol": info["patrol"]}
        with span("fetch_forecast", "TOOL", {"site": site, "date": date}) as s:
            if kit.active("lifeguard.forecast_cache"):
                prev = f"2026-12-{int(date[-2:]) - 1:02d}"
                s["out"] = {"date": date, "issued": f"{prev}T06:00", **FORECASTS[prev]}
            else:
                s["out"] = {"date": date, "issued": f"{date}T06:00", **FORECASTS[date]}
            forecast = s["out"]
        with span("search_policy", "RETRIEVER", {"query": f"tower staffing rule for surf beach {site}"}) as s:
            doc = "POL-POOL-2" if kit.active("lifeguard.search") else "SURF-7"
            s["out"] = {"documents": [{"id": doc, "score": 0.82, "text": DOCS[doc]}]}
            policy_doc = s["out"]["documents"][0]
        with span("plan_staffing", "CHAIN", {"site": site}) as s:
            text = chat("You plan lifeguard tower staffing. Answer JSON only: "
                        '{"towers": [{"tower", "guards", "shift"}]}.',
                        {"site": site, "towers": info["towers"], "patrol": info["patrol"],
                         "forecast": {k: forecast[k] for k in ("crowd", "surf_m")}, "policy": policy_doc["text"]})
            s["out"] = {"text": text}
        with span("parse_plan", "CHAIN", {"text": text}) as s:
            plan = json.loads(text)["towers"]
            for t in plan:
                if t["shift"] != info["patrol"]:
                    raise ValueError(f"tower {t['tower']}: shift {t['shift']} does not match the patrol "
                                     f"window {info['patrol']}")
            s["out"] = {"towers": plan}
        with span("list_guards", "TOOL", {"site": site, "date": date, "cert": "surf"}) as s:
            everyone = [g for g in GUARDS[site] if g not in POOL_ONLY]
            rows = everyone[:PAGE] if kit.active("lifeguard.paging") else everyone
            s["out"] = {"guards": rows, "summary": f"{len(rows)} listed"}
            pool = s["out"]["guards"]
        crews, cursor = {}, 0
        for t in plan:
            with span("staff_tower", "CHAIN", {"tower": t["tower"], "guards": t["guards"]}) as tower:
                with span("pick_guards", "CHAIN", {"tower": t["tower"], "needed": t["guards"], "cursor": cursor}) as s:
                    picked = pool[cursor: cursor + t["guards"]]
                    if len(picked) < t["guards"]:
                        raise RuntimeError(f"tower {t['tower']}: {len(picked)} surf-certified guards available, "
                                           f"{t['guards']} needed")
                    step = t["guards"] - 1 if kit.active("lifeguard.cursor") and t["guards"] > 1 else t["guards"]
                    cursor += step
                    s["out"] = {"tower": t["tower"], "crew": "+".join(f"{t['tower']}={g}" for g in picked)}
                for g in picked:
                    with span("check_certificate", "TOOL", {"guard": g}) as s:
                        calls[g] = calls.get(g, 0) + 1
                        s["out"] = {"guard": g, "cert": "surf", "valid_until": "2027-03-31"}
                crews[t["tower"]] = picked
                tower["out"] = {"tower": t["tower"], "crew": picked}
        with span("validate_roster", "CHAIN", {"crews": crews}) as s:
            seen = {}
            for tw, gs in crews.items():
                for g in gs:
                    if g in seen:
                        raise ValueError(f"guard {g} is rostered on {seen[g]} and {tw} for the same window")
                    seen[g] = tw
            s["out"] = {"ok": True, "guards": len(seen)}
        with span("publish_roster", "TOOL", {"site": site, "date": date, "crews": crews}) as s:
            need = _staff_needed(FORECASTS[date])
            for tw, gs in crews.items():
                if len(gs) < need:
                    raise RuntimeError(f"council roster API 422: {site} {tw} has {len(gs)} guard(s); "
                                       f"{need} required for {date}")
            s["out"] = {"status": "published", "roster_id": f"R-{site[:4].upper()}-{date[-2:]}"}
        with span("write_briefing", "CHAIN", {"site": site}) as s:
            s["out"] = {"text": chat("You write the morning briefing for the guards.",
                                     {"site": site, "date": date, "crews": crews})}
        top["out"] = {"roster": crews, "published": True}
