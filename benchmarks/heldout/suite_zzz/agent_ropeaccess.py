"""Rope-access window-cleaning crew (otlp route): OpenInference spans exported as OTLP JSON. Job sheet and
anchor register lookups, a wind forecast tool that succeeds on its second attempt, a model drop plan read by
a parser, per-drop rigging checks, crew assignment and a rescue-plan gate that refuses the job.
"""
from __future__ import annotations

import functools
import json

from openai import OpenAI

from suite_common import last_user, otel, span_attrs, write_otlp

NAME = "rope-access-jobs"
ROUTE = "otlp"
DOMAIN = "a rope-access window-cleaning crew"
SHAPE = "OTLP spans: job sheet tool, anchor register retriever, wind forecast tool with a failed first attempt, LLM drop plan, plan parser, rigging check per drop (3-5), crew assignment, rescue-plan gate; 8-14 spans"
SWITCH = None

BUILDINGS = {
    "Harbour House": {"height_m": 42, "drops": ["N1", "N2", "E1", "E2"], "anchors": {"N1": "A-11", "N2": "A-12", "E1": "A-21", "E2": "A-22"}},
    "Quayside Tower": {"height_m": 68, "drops": ["S1", "S2", "S3"], "anchors": {"S1": "Q-01", "S2": "Q-02", "S3": "Q-03"}},
    "Mercer Court": {"height_m": 30, "drops": ["W1", "W2", "W3", "W4", "W5"], "anchors": {"W1": "M-1", "W2": "M-2", "W3": "M-3", "W4": "M-4", "W5": "M-5"}},
    "Old Mill Lofts": {"height_m": 24, "drops": ["N1", "S1", "S2"], "anchors": {"N1": "L-7", "S1": "L-8", "S2": "L-9"}},
    "Arden Plaza": {"height_m": 55, "drops": ["E1", "E2", "E3", "E4"], "anchors": {"E1": "P-31", "E2": "P-32", "E3": "P-33", "E4": "P-34"}},
}
TESTED = {a: "2026-05-14" for b in BUILDINGS.values() for a in b["anchors"].values()}
TESTED_BEFORE = {"Q-02": "2025-09-30"}
WIND = {"2026-12-09": {"low": 14, "high": 31}, "2026-12-10": {"low": 11, "high": 22}, "2026-12-11": {"low": 9, "high": 19},
        "2026-12-12": {"low": 18, "high": 41}, "2026-12-14": {"low": 21, "high": 35}}
ROPE_M = {"standard": 50, "long": 80}
MAX_ROOF_WIND = 32  # km/h at the working height

INPUTS = [
    {"building": "Harbour House", "date": "2026-12-10", "crew": ["Kim", "Osei", "Lund"]},
    {"building": "Quayside Tower", "date": "2026-12-11", "crew": ["Kim", "Rahman", "Lund"]},
    {"building": "Mercer Court", "date": "2026-12-09", "crew": ["Osei", "Rahman"]},
    {"building": "Old Mill Lofts", "date": "2026-12-14", "crew": ["Lund", "Kim"]},
    {"building": "Arden Plaza", "date": "2026-12-10", "crew": ["Rahman", "Osei", "Kim"]},
]

CASES = [
    {"id": "zzz-rope-1", "switch": "anchor_cert_cache", "input": 1, "kind": "stale_data",
     "root": ("anchor_register", 1), "failure": ("rescue_plan_gate", 1),
     "description": "The anchor register answers from last year's copy, where anchor Q-02 still shows its 2025-09-30 test instead of its retest of 2026-05-14."},
    {"id": "zzz-rope-2", "switch": "rope_len", "input": 4, "kind": "format_drift",
     "root": ("ChatCompletion", 1), "failure": ("rig_check", 1),
     "description": "The drop plan gives rope lengths in feet with a unit suffix (213ft for a 65 m drop) where metres were asked for, and the plan parser keeps the digits as metres."},
    {"id": "zzz-rope-3", "switch": "wind_default", "input": 3, "kind": "tool_ignores_argument",
     "root": ("wind_forecast", 2), "failure": ("rescue_plan_gate", 1),
     "description": "The wind forecast ignores the 24 m working height it is asked for and returns the gusts for its default 60 m, 35 km/h instead of 21."},
    {"id": "zzz-rope-4", "switch": "anchors_first", "input": 2, "kind": "truncated_result",
     "root": ("anchor_register", 1), "failure": ("rig_check", 4),
     "description": "The anchor register returns only its first three anchors for Mercer Court, so drops W4 and W5 have no anchor."},
    {"id": "zzz-rope-5", "switch": "crew_solo", "input": 3, "kind": "plan_error",
     "root": ("ChatCompletion", 1), "failure": ("rescue_plan_gate", 1),
     "description": "The drop plan puts one technician on the ropes with no one at the top for rescue cover."},
]

_tracer = None
_client = None
_attempts = {"wind": 0}


def span(kind):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            with _tracer.start_as_current_span(fn.__name__, attributes=span_attrs(kind, list(args))) as s:
                out = fn(*args)
                s.set_attribute("output.value", json.dumps(out))
                s.set_attribute("output.mime_type", "application/json")
                return out
        return wrapper
    return deco


@span("TOOL")
def job_sheet(building, date):
    b = BUILDINGS[building]
    return {"building": building, "date": date, "height_m": b["height_m"], "drops": list(b["drops"])}


@span("RETRIEVER")
def anchor_register(building):
    anchors = [{"drop": d, "anchor": a, "tested": TESTED_BEFORE.get(a, TESTED[a]) if SWITCH == "anchor_cert_cache" else TESTED[a]}
               for d, a in BUILDINGS[building]["anchors"].items()]
    if SWITCH == "anchors_first":
        anchors = anchors[:3]
    return anchors


@span("TOOL")
def wind_forecast(date, height_m):
    _attempts["wind"] += 1
    if _attempts["wind"] == 1:
        raise TimeoutError("forecast service did not answer within 5 s")
    w = WIND[date]
    if SWITCH == "wind_default":
        height_m = 60
    speed = w["low"] if height_m < 40 else w["high"]
    return {"date": date, "height_m": height_m, "gust_kmh": speed}


def plan_drops(job, anchors, wind, crew):
    reply = _client.chat.completions.create(
        model="fake-model", temperature=0,
        messages=[{"role": "system", "content": "You plan rope-access drops for window cleaning. Answer JSON: drops with rope lengths in metres, roles for the crew."},
                  {"role": "user", "content": "JOB:" + json.dumps({"job": job, "anchors": anchors, "wind": wind, "crew": crew})}])
    return reply.choices[0].message.content


@span("CHAIN")
def parse_drop_plan(text):
    plan = json.loads(text)
    drops = [{"drop": d["drop"], "rope_m": float(str(d["rope"]).rstrip("m ")) if str(d["rope"]).replace(".", "").isdigit() or str(d["rope"]).endswith("m") else float("".join(ch for ch in str(d["rope"]) if ch.isdigit() or ch == "."))}
             for d in plan["drops"]]
    return {"drops": drops, "roles": plan["roles"]}


@span("TOOL")
def rig_check(drop, anchor, rope_m, height_m):
    if anchor is None:
        raise RuntimeError(f"drop {drop}: no tested anchor on the register to rig from")
    if rope_m > ROPE_M["long"]:
        raise RuntimeError(f"drop {drop}: {rope_m} m of rope asked for, the longest rope in the van is {ROPE_M['long']} m")
    if rope_m < height_m + 5:
        raise RuntimeError(f"drop {drop}: {rope_m} m of rope does not reach the ground from {height_m} m")
    return {"drop": drop, "anchor": anchor["anchor"], "rope": "long" if rope_m > ROPE_M["standard"] else "standard", "ok": True}


@span("CHAIN")
def assign_crew(plan, rigs):
    return {"on_rope": [r for r, role in plan["roles"].items() if role == "rope"],
            "top_cover": [r for r, role in plan["roles"].items() if role == "top"], "drops": [r["drop"] for r in rigs]}


@span("GUARDRAIL")
def rescue_plan_gate(job, anchors, wind, crew_plan):
    for a in anchors:
        if a["tested"] < "2025-12-10":
            raise PermissionError(f"anchor {a['anchor']} last tested {a['tested']}, over 12 months before {job['date']}")
    if wind["gust_kmh"] > MAX_ROOF_WIND:
        raise PermissionError(f"gusts of {wind['gust_kmh']} km/h at {job['height_m']} m on {job['date']}, limit {MAX_ROOF_WIND}")
    if not crew_plan["top_cover"]:
        raise PermissionError(f"no rescue cover at the top for {', '.join(crew_plan['on_rope'])} at {job['building']}")
    return {"permit": f"RA-{job['date'][5:].replace('-', '')}-{job['building'][:3].upper()}", "drops": crew_plan["drops"]}


def policy(request):
    data = json.loads(last_user(request).split("JOB:", 1)[1])
    job, crew = data["job"], data["crew"]
    drops = []
    for a in data["anchors"]:
        rope = job["height_m"] + 10
        rope_txt = f"{round(rope * 3.28)}ft" if SWITCH == "rope_len" else rope
        drops.append({"drop": a["drop"], "rope": rope_txt})
    roles = {name: ("top" if i == 0 else "rope") for i, name in enumerate(crew)}
    if SWITCH == "crew_solo":
        roles = {name: "rope" for name in crew}
    return json.dumps({"drops": drops, "roles": roles})


def record(inp, path, server):
    global _tracer, _client
    provider, spans = otel()
    spans.clear()
    _tracer = provider.get_tracer("rope-access")
    _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _attempts["wind"] = 0
    try:
        with _tracer.start_as_current_span(NAME, attributes=span_attrs("AGENT", inp)):
            job = job_sheet(inp["building"], inp["date"])
            anchors = anchor_register(inp["building"])
            try:
                wind = wind_forecast(inp["date"], job["height_m"])
            except TimeoutError:
                wind = wind_forecast(inp["date"], job["height_m"])
            plan = parse_drop_plan(plan_drops(job, anchors, wind, inp["crew"]))
            by_drop = {a["drop"]: a for a in anchors}
            rigs = [rig_check(d, by_drop.get(d), next((p["rope_m"] for p in plan["drops"] if p["drop"] == d), 0.0), job["height_m"])
                    for d in job["drops"]]
            crew_plan = assign_crew(plan, rigs)
            rescue_plan_gate(job, anchors, wind, crew_plan)
    finally:
        provider.force_flush()
        write_otlp(spans, path)
