"""Harbour hydrographic survey planner (route: otlp): the openai client instrumented by OpenInference
and the agent's own spans (AGENT, CHAIN, TOOL, RETRIEVER), a nested tide sub-agent with its own model
call, a model choosing the processing pipeline, a per-line clearance loop, calibration and QC tools, and
the harbour authority's plan submission; written as OTLP/JSON."""

from __future__ import annotations

import json
import math
from typing import Any

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from trajdebug.testing import FakeModelServer

from . import kit


NAME = "hydro-survey-planner"
ROUTE = "otlp"
DOMAIN = "harbour hydrographic survey"
SHAPE = "AGENT span with a nested tide sub-agent (own model call); notices, vessel config written to memory and recalled, SV casts, a routing model call, per-line clearance loop, patch test, QC and submission TOOLs"

AREAS = {
    "Berth 7 approach": {"gauges": ["Inner Dock", "Outer Pier"], "gauge": "Inner Dock", "depth_m": (6.5, 14.2), "width_m": 420, "zone": "L4"},
    "Swing basin": {"gauges": ["Outer Pier", "Inner Dock"], "gauge": "Outer Pier", "depth_m": (8.0, 17.6), "width_m": 380, "zone": "L2"},
    "Ro-ro ramp 2": {"gauges": ["Inner Dock", "Lock Head"], "gauge": "Inner Dock", "depth_m": (4.2, 9.8), "width_m": 240, "zone": None},
    "Fish quay": {"gauges": ["Lock Head", "Inner Dock"], "gauge": "Lock Head", "depth_m": (3.1, 7.4), "width_m": 200, "zone": "L3"},
    "Channel bend C3": {"gauges": ["Outer Pier", "Fairway Buoy"], "gauge": "Outer Pier", "depth_m": (9.5, 18.4), "width_m": 460, "zone": "L5"},
    "Marina entrance": {"gauges": ["Lock Head", "Inner Dock"], "gauge": "Lock Head", "depth_m": (2.8, 6.1), "width_m": 160, "zone": None},
    "Tanker berth 1": {"gauges": ["Fairway Buoy", "Outer Pier"], "gauge": "Fairway Buoy", "depth_m": (12.0, 19.5), "width_m": 500, "zone": "L6"},
    "Dry dock sill": {"gauges": ["Inner Dock", "Lock Head"], "gauge": "Inner Dock", "depth_m": (5.0, 8.8), "width_m": 180, "zone": None},
    "Pilot jetty": {"gauges": ["Outer Pier", "Fairway Buoy"], "gauge": "Outer Pier", "depth_m": (7.2, 12.9), "width_m": 300, "zone": "L1"},
}
GAUGES = {"Inner Dock": 3.42, "Outer Pier": 2.81, "Lock Head": 3.95, "Fairway Buoy": 2.57}
LAUNCHES = {"HSL-1": {"gnss_offset_m": [0.42, -1.10, 2.35], "imu_roll_deg": 0.12}, "HSL-2": {"gnss_offset_m": [0.38, -0.95, 2.80], "imu_roll_deg": -0.41}}

INPUTS = {
    "y1": ("Berth 7 approach", "HSL-1"), "y2": ("Swing basin", "HSL-1"), "y3": ("Ro-ro ramp 2", "HSL-2"),
    "y4": ("Fish quay", "HSL-1"), "y5": ("Channel bend C3", "HSL-2"),
    "r1": ("Marina entrance", "HSL-1"), "r2": ("Tanker berth 1", "HSL-2"), "r3": ("Dry dock sill", "HSL-1"), "r4": ("Pilot jetty", "HSL-2"),
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = {
    "hydro_gauge": ("hydro.gauge", "subagent_wrong_entity", "y1", "ChatCompletion"),
    "hydro_notices": ("hydro.notices", "swallowed_error", "y2", "fetch_notices"),
    "hydro_offsets": ("hydro.offsets", "bad_memory_write", "y3", "store_vessel_config"),
    "hydro_pipeline": ("hydro.pipeline", "wrong_routing", "y4", "ChatCompletion"),
    "hydro_casts": ("hydro.casts", "truncated_result", "y5", "fetch_sv_casts"),
}


class SurveyBlocked(RuntimeError):
    pass


SurveyBlocked.__module__ = "survey_ops"


def policy(request) -> Any:
    msgs = request.body["messages"]
    system, facts = msgs[0]["content"], json.loads(msgs[-1]["content"])
    if system.startswith("You pick the tide gauge"):
        gauge = facts["nearest_gauge"]
        if kit.active("hydro.gauge"):
            gauge = next(g for g in facts["gauges"] if g != facts["nearest_gauge"])
            kit.mark(f"use {gauge}")
        return json.dumps({"gauge": gauge, "reason": f"use {gauge} for {facts['area']}"})
    if system.startswith("You choose the processing pipeline"):
        pipe = "multibeam" if facts["order"] == "Special Order" else "single-beam"
        if kit.active("hydro.pipeline"):
            pipe = "single-beam"
            kit.mark("single-beam")
        return json.dumps({"pipeline": pipe})
    if system.startswith("You summarise"):
        return f"Survey plan for {facts['area']}: {facts['lines']} lines submitted as {facts['plan']}."
    return "Sorry."


_ENV: dict = {}


def _env() -> dict:
    if not _ENV:
        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": NAME}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        server = FakeModelServer(policy, model="survey-model")
        server.start()
        _ENV.update(exporter=exporter, provider=provider, tracer=provider.get_tracer(NAME), server=server,
                    client=OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0))
    return _ENV


def _span(tracer, name: str, kind: str, value: Any):
    return tracer.start_as_current_span(name, attributes={"openinference.span.kind": kind, "input.value": json.dumps(value),
                                                         "input.mime_type": "application/json"})


def _out(span, value: Any) -> Any:
    span.set_attribute("output.value", json.dumps(value))
    span.set_attribute("output.mime_type", "application/json")
    return value


def _ask(env: dict, system: str, facts: dict) -> dict | str:
    r = env["client"].chat.completions.create(model=env["server"].model, messages=[
        {"role": "system", "content": system}, {"role": "user", "content": json.dumps(facts)}])
    text = r.choices[0].message.content
    try:
        return json.loads(text)
    except ValueError:
        return text


def run_agent(env: dict, area: str, launch: str) -> None:
    tr = env["tracer"]
    a = AREAS[area]
    memory: dict = {}
    with _span(tr, NAME, "AGENT", {"request": f"plan a Special Order survey of {area} with {launch}"}) as root:
        with _span(tr, "read_request", "CHAIN", {"text": f"{area}, launch {launch}, IHO Special Order"}) as s:
            req = _out(s, {"area": area, "launch": launch, "order": "Special Order"})
        with _span(tr, "fetch_area", "TOOL", {"area": area}) as s:
            _out(s, {"area": area, "min_depth_m": a["depth_m"][0], "max_depth_m": a["depth_m"][1], "width_m": a["width_m"],
                            "gauges": a["gauges"]})
        with _span(tr, "fetch_notices", "TOOL", {"area": area}) as s:
            try:
                if kit.active("hydro.notices"):
                    raise ConnectionError("notices feed: 502 Bad Gateway")
                notices = [{"notice": "NtM 41/2026", "type": "dredging exclusion", "lines_from": a["zone"]}] if a["zone"] else []
            except ConnectionError:
                notices = []
                kit.mark('"notices": []')
            _out(s, {"area": area, "notices": notices})
        with _span(tr, "store_vessel_config", "CHAIN", {"launch": launch}) as s:
            cfg = LAUNCHES[launch]
            if kit.active("hydro.offsets"):
                cfg = LAUNCHES["HSL-2" if launch == "HSL-1" else "HSL-1"]  # the other launch's installation record
                kit.mark(json.dumps(cfg["gnss_offset_m"]))
            memory["vessel_config"] = {"launch": launch, **cfg}
            _out(s, memory["vessel_config"])
        with _span(tr, "tide-agent", "AGENT", {"area": area}) as sub:
            pick = _ask(env, "You pick the tide gauge for a survey area. Answer with JSON.",
                        {"area": area, "gauges": a["gauges"], "nearest_gauge": a["gauge"]})
            with _span(tr, "fetch_tide_gauge", "TOOL", {"gauge": pick["gauge"]}) as s:
                level = _out(s, {"gauge": pick["gauge"], "chart_datum_offset_m": GAUGES[pick["gauge"]]})
            with _span(tr, "reduce_tides", "CHAIN", {"level": level}) as s:
                reduction = _out(s, {"gauge": level["gauge"], "reduction_m": level["chart_datum_offset_m"]})
            _out(sub, reduction)
        casts = None
        for attempt in (1, 2):
            try:
                with _span(tr, "fetch_sv_casts", "TOOL", {"area": area, "attempt": attempt}) as s:
                    if attempt == 1:
                        raise TimeoutError("CTD archive: read timed out")
                    depth = a["depth_m"][1] + 1.0
                    if kit.active("hydro.casts"):
                        depth = 10.0  # the archive returns the first 10 m of each profile
                        kit.mark('"max_depth_m": 10.0')
                    layers = [{"depth_m": round(d, 1), "sv_ms": round(1489.0 + 0.9 * d, 1)} for d in [0.5 * k for k in range(int(depth * 2) + 1)]]
                    casts = _out(s, {"casts": [{"cast": "SV-1", "layers": len(layers), "max_depth_m": round(depth, 1)}]})
                break
            except TimeoutError:
                continue
        with _span(tr, "choose_pipeline", "CHAIN", {"order": req["order"]}) as s:
            pipe = _out(s, _ask(env, "You choose the processing pipeline for a survey. Answer with JSON.",
                                {"area": area, "order": req["order"], "launch": launch}))
        with _span(tr, f"{pipe['pipeline']}_pipeline", "CHAIN", {"pipeline": pipe["pipeline"]}) as sp:
            swath = 3.5 * a["depth_m"][0] if pipe["pipeline"] == "multibeam" else 0.6
            spacing = round(swath * 0.8, 1) if pipe["pipeline"] == "multibeam" else 25.0
            n = math.ceil(a["width_m"] / spacing) if pipe["pipeline"] == "multibeam" else math.ceil(a["width_m"] / 25.0)
            with _span(tr, "plan_lines", "CHAIN", {"spacing_m": spacing, "width_m": a["width_m"]}) as s:
                lines = _out(s, {"lines": [f"L{i + 1}" for i in range(n)], "spacing_m": spacing,
                                 "coverage_pct": min(100, round(100 * swath * n / a["width_m"]))})
            for ln in lines["lines"]:
                with _span(tr, "check_line_clearance", "TOOL", {"line": ln}) as s:
                    _out(s, {"line": ln, "air_draft_ok": True, "ais_traffic": "light"})
            _out(sp, lines)
        with _span(tr, "load_sv_profile", "TOOL", {"casts": casts["casts"]}) as s:
            deepest = max(c["max_depth_m"] for c in casts["casts"])
            if deepest < a["depth_m"][1]:
                raise SurveyBlocked(f"acquisition: sound velocity profile ends at {deepest} m, survey depths reach {a['depth_m'][1]} m")
            _out(s, {"loaded": True})
        with tr.start_as_current_span("recall_vessel_config", attributes={"openinference.span.kind": "RETRIEVER", "input.value": "vessel_config"}) as s:
            cfg = _out(s, memory["vessel_config"])
        with _span(tr, "patch_test", "TOOL", {"launch": launch, "config": cfg}) as s:
            roll = round(abs(cfg["imu_roll_deg"] - LAUNCHES[launch]["imu_roll_deg"]) * 3.4 + 0.03, 2)
            if roll > 0.1:
                raise SurveyBlocked(f"patch test on {launch}: roll residual {roll}° exceeds the 0.10° tolerance")
            _out(s, {"roll_residual_deg": roll, "passed": True})
        with _span(tr, "qc_tide_reduction", "TOOL", {"reduction": reduction, "area": area}) as s:
            diff = round(abs(reduction["reduction_m"] - GAUGES[a["gauge"]]), 2)
            if diff > 0.10:
                raise SurveyBlocked(f"QC: reduced depths on check line CL-2 differ from the benchmark sounding by {diff} m (limit 0.10 m)")
            _out(s, {"check_line": "CL-2", "difference_m": diff})
        with _span(tr, "submit_survey_plan", "TOOL", {"area": area, "lines": lines, "notices": notices}) as s:
            if lines["coverage_pct"] < 100:
                raise SurveyBlocked(f"harbour authority 422: IHO Special Order needs full bathymetric coverage; the plan gives {lines['coverage_pct']}%")
            if a["zone"] and not notices:
                raise SurveyBlocked(f"harbour authority 409: line {a['zone']} crosses the dredging exclusion zone of NtM 41/2026")
            plan = _out(s, {"plan": f"HA-{area[:3].upper()}-{len(lines['lines'])}", "status": "accepted"})
        note = _ask(env, "You summarise survey plans.", {"area": area, "lines": len(lines["lines"]), "plan": plan["plan"]})
        _out(root, {"plan": plan["plan"], "summary": note})


def record(key: str, out: str) -> None:
    env = _env()
    env["exporter"].clear()
    OpenAIInstrumentor().instrument(tracer_provider=env["provider"])
    try:
        run_agent(env, *INPUTS[key])
    except SurveyBlocked:
        pass
    finally:
        OpenAIInstrumentor().uninstrument()
    with open(out, "w") as f:
        f.write(json.dumps(MessageToDict(encode_spans(env["exporter"].get_finished_spans()))))
