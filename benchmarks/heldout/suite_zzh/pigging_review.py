"""Pipeline pigging inspections (OpenTelemetry + OpenInference, exported as OTLP/JSON): reviews an in-line
inspection run and plans the digs.

Shape: an AGENT span per run: run record, segment, MAOP and feature listing (tools) -> odometer normalisation
(CHAIN) -> per feature: wall thickness from the pipe book (tool, retried on a timeout) and remaining strength
(tool) -> a `dig_planner` sub-agent (OpenInference-instrumented model call + parser) -> the model writes the
review summary -> `validate_review` (EVALUATOR: the integrity rules, raising).
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Any


sys.path.insert(0, str(Path(__file__).resolve().parent))

import kit
from common import MODEL, chat_messages, oi_span, otlp_capture, system_text, text_of


NAME = "pigging-review"
ROUTE = "otlp"
DOMAIN = "pipeline pigging inspections"
EXT = "json"
SHAPE = ("OTLP: AGENT span, run/segment/MAOP/feature tools, odometer CHAIN, per feature wall-thickness (retried) "
         "and remaining-strength tools, dig_planner sub-agent (LLM + parser), LLM summary, EVALUATOR validator; "
         "17-25 spans")

FT = 0.3048
SEGMENTS = {
    "L-12-S3": {"od_mm": 610.0, "nominal_wt_mm": 9.5, "smys_mpa": 359.0, "length_m": 19400,
                "maop": [("2012-05-01", 9930), ("2023-08-01", 7930)]},
    "L-07-S1": {"od_mm": 508.0, "nominal_wt_mm": 7.9, "smys_mpa": 359.0, "length_m": 12800,
                "maop": [("2010-01-01", 8270)]},
    "L-15-S2": {"od_mm": 762.0, "nominal_wt_mm": 11.1, "smys_mpa": 414.0, "length_m": 24100,
                "maop": [("2015-03-01", 8450)]},
}
# girth weld -> wall thickness where the pipe book differs from the segment's nominal
PIPE_BOOK = {"GW-1460": 7.1, "GW-0812": 8.7, "GW-2210": 12.7, "GW-0333": 7.1}


def _f(fid, kind, pos, gw, depth, length, width=60, clock="6:00"):
    return {"feature": fid, "type": kind, "odometer": pos, "girth_weld": gw, "depth_pct": depth,
            "length_mm": length, "width_mm": width, "clock": clock}


RUNS: dict[str, dict[str, Any]] = {
    "ILI-2024-031": {"segment": "L-07-S1", "date": "2024-05-14", "vendor": "Rosen", "odometer_unit": "ft",
                     "slow_welds": [], "features": [
                         _f("F-0311", "metal_loss", 4120, "GW-0104", 34, 80), _f("F-0312", "metal_loss", 11870, "GW-0290", 52, 140),
                         _f("F-0313", "metal_loss", 26949, "GW-0655", 61, 180), _f("F-0314", "metal_loss", 30110, "GW-0733", 28, 60),
                         _f("F-0315", "metal_loss", 38640, "GW-0941", 45, 110)]},
    "ILI-2024-034": {"segment": "L-12-S3", "date": "2024-06-03", "vendor": "Baker Hughes", "odometer_unit": "m",
                     "slow_welds": ["GW-1460"], "features": [
                         _f("F-0341", "metal_loss", 2210.4, "GW-0180", 31, 90), _f("F-0342", "metal_loss", 6805.0, "GW-0566", 47, 150),
                         _f("F-0343", "metal_loss", 11873.2, "GW-0980", 39, 100), _f("F-0344", "metal_loss", 17702.6, "GW-1460", 55, 260),
                         _f("F-0345", "metal_loss", 18240.9, "GW-1502", 22, 40)]},
    "ILI-2024-038": {"segment": "L-12-S3", "date": "2024-07-22", "vendor": "Rosen", "odometer_unit": "m",
                     "slow_welds": [], "features": [
                         _f("F-0381", "metal_loss", 1450.2, "GW-0120", 36, 120), _f("F-0382", "metal_loss", 5320.7, "GW-0444", 49, 200),
                         _f("F-0383", "metal_loss", 9988.0, "GW-0830", 58, 180), _f("F-0384", "metal_loss", 14410.5, "GW-1190", 27, 70)]},
    "ILI-2024-041": {"segment": "L-15-S2", "date": "2024-08-09", "vendor": "T.D. Williamson", "odometer_unit": "m",
                     "slow_welds": [], "features": [
                         _f("F-0411", "metal_loss", 3320.0, "GW-0276", 41, 130), _f("F-0412", "dent", 8214.6, "GW-0684", 3, 210),
                         _f("F-0413", "metal_loss", 12051.3, "GW-1003", 57, 240), _f("F-0414", "dent", 15880.1, "GW-1322", 2, 150),
                         _f("F-0415", "metal_loss", 21766.8, "GW-1812", 33, 90)]},
    "ILI-2024-045": {"segment": "L-07-S1", "date": "2024-09-17", "vendor": "Baker Hughes", "odometer_unit": "m",
                     "slow_welds": [], "features": [
                         _f("F-0451", "metal_loss", 820.5, "GW-0068", 62, 60), _f("F-0452", "metal_loss", 1975.0, "GW-0164", 64, 70),
                         _f("F-0453", "metal_loss", 3410.8, "GW-0284", 61, 50), _f("F-0454", "metal_loss", 5066.3, "GW-0422", 66, 80),
                         _f("F-0455", "metal_loss", 7290.4, "GW-0607", 63, 65), _f("F-0456", "metal_loss", 9120.9, "GW-0760", 65, 75),
                         _f("F-0457", "metal_loss", 11455.2, "GW-0954", 83, 160)]},
    # reference runs
    "ILI-2024-012": {"segment": "L-15-S2", "date": "2024-02-20", "vendor": "Rosen", "odometer_unit": "ft",
                     "slow_welds": ["GW-0510"], "features": [
                         _f("F-0121", "metal_loss", 9840, "GW-0250", 38, 110), _f("F-0122", "dent", 20310, "GW-0510", 2, 120),
                         _f("F-0123", "metal_loss", 20450, "GW-0510", 49, 170), _f("F-0124", "metal_loss", 51200, "GW-1290", 29, 60),
                         _f("F-0125", "metal_loss", 70980, "GW-1790", 63, 220)]},
    "ILI-2024-017": {"segment": "L-12-S3", "date": "2024-03-11", "vendor": "Baker Hughes", "odometer_unit": "m",
                     "slow_welds": [], "features": [
                         _f("F-0171", "metal_loss", 3302.1, "GW-0270", 44, 140), _f("F-0172", "metal_loss", 8110.6, "GW-0812", 53, 190),
                         _f("F-0173", "metal_loss", 12640.0, "GW-1040", 81, 90), _f("F-0174", "metal_loss", 16075.3, "GW-1322", 35, 75)]},
    "ILI-2024-022": {"segment": "L-07-S1", "date": "2024-04-02", "vendor": "T.D. Williamson", "odometer_unit": "m",
                     "slow_welds": ["GW-0333"], "features": [
                         _f("F-0221", "metal_loss", 4015.8, "GW-0333", 46, 160), _f("F-0222", "dent", 6630.2, "GW-0550", 3, 180),
                         _f("F-0223", "metal_loss", 9950.4, "GW-0829", 38, 100), _f("F-0224", "metal_loss", 12210.0, "GW-1015", 57, 130)]},
    "ILI-2024-026": {"segment": "L-15-S2", "date": "2024-04-29", "vendor": "Rosen", "odometer_unit": "m",
                     "slow_welds": [], "features": [
                         _f("F-0261", "metal_loss", 2875.0, "GW-0240", 71, 260), _f("F-0262", "metal_loss", 10440.7, "GW-0870", 42, 120),
                         _f("F-0263", "metal_loss", 15318.2, "GW-2210", 55, 200), _f("F-0264", "metal_loss", 23002.9, "GW-1915", 30, 80)]},
}

CASES = [
    {"case": "zzh_pig_01", "switch": "pig.odometer_ft", "input": "ILI-2024-031", "fault_kind": "unit_error",
     "root": ("normalize_odometer", 1), "failure": ("validate_review", 1),
     "description": "Odometer normalisation takes the Rosen run's feet as metres, so features are placed up to "
                    "3.3 times too far down the line, F-0313 at 26,949 m on a 12,800 m segment."},
    {"case": "zzh_pig_02", "switch": "pig.wall_default", "input": "ILI-2024-034", "fault_kind": "swallowed_error",
     "root": ("wall_thickness", 4), "failure": ("validate_review", 1),
     "description": "The pipe-book tool catches the timeout on girth weld GW-1460 and answers the segment's "
                    "nominal 9.5 mm, so F-0344 on the 7.1 mm replacement spool is assessed as thicker pipe."},
    {"case": "zzh_pig_03", "switch": "pig.maop_cache", "input": "ILI-2024-038", "fault_kind": "stale_data",
     "root": ("maop_lookup", 1), "failure": ("validate_review", 1),
     "description": "The MAOP look-up answers from its cached record of 2012, 9,930 kPa, missing the 2023-08-01 "
                    "derating of L-12-S3 to 7,930 kPa."},
    {"case": "zzh_pig_04", "switch": "pig.type_filter", "input": "ILI-2024-041", "fault_kind": "tool_ignores_argument",
     "root": ("fetch_features", 1), "failure": ("validate_review", 1),
     "description": "The feature listing ignores feature_type='metal_loss' and returns the run's two dents too, "
                    "which are then put through the metal-loss strength assessment."},
    {"case": "zzh_pig_05", "switch": "pig.dig_tokens", "input": "ILI-2024-045", "fault_kind": "truncated_result",
     "root": ("ChatCompletion", 1), "failure": ("validate_review", 1),
     "description": "The dig planner's completion is capped at 60 tokens and stops mid-list, so the last line, "
                    "F-0457 (83 % deep, immediate), never reaches the dig list."},
]
REFS = ["ILI-2024-012", "ILI-2024-017", "ILI-2024-022", "ILI-2024-026"]

_CALLS: dict[str, int] = {}


class ReviewRejected(Exception):
    """The inspection review breaks an integrity rule."""


class PipeBookTimeout(TimeoutError):
    """The pipe-book service did not answer."""


def current_maop(segment: str, date: str) -> tuple[str, int]:
    return [m for m in SEGMENTS[segment]["maop"] if m[0] <= date][-1]


def failure_pressure_kpa(depth_pct: float, length_mm: float, wt_mm: float, od_mm: float, smys_mpa: float) -> float:
    """Modified B31G (0.85 dL) predicted failure pressure."""
    flow = smys_mpa + 69.0
    z = length_mm ** 2 / (od_mm * wt_mm)
    m = math.sqrt(1 + 0.6275 * z - 0.003375 * z * z) if z <= 50 else 0.032 * z + 3.3
    d_t = depth_pct / 100
    return 2 * flow * wt_mm / od_mm * (1 - 0.85 * d_t) / (1 - 0.85 * d_t / m) * 1000


def classify(depth_pct: float, fpr: float) -> str:
    if depth_pct >= 80 or fpr < 1.10:
        return "immediate"
    if depth_pct >= 60 or fpr < 1.39:
        return "scheduled"
    return "monitor"


# -- the model ------------------------------------------------------------------------------------------


def brain(request: Any) -> Any:
    from trajdebug.testing import Reply

    messages = chat_messages(request)
    system = system_text(messages)
    user = json.loads(text_of(messages[-1]))
    if system.startswith("You plan excavations"):
        rows = sorted((f for f in user["features"] if classify(f["depth_pct"], f["fpr"]) != "monitor"),
                      key=lambda f: f["position_m"])
        text = "\n".join(f"{f['feature']} | {classify(f['depth_pct'], f['fpr'])} | {f['position_m']:,.1f} m | "
                         f"depth {f['depth_pct']}% | FPR {f['fpr']:.2f}" for f in rows) or "no digs"
        limit = (request.body or {}).get("max_tokens") or (request.body or {}).get("max_completion_tokens")
        if limit and len(text) > 4 * limit:
            return Reply(text=text[: 4 * limit], finish_reason="length")
        return text
    if system.startswith("You write inspection review summaries"):
        return (f"Run {user['run_id']} on {user['segment']}: {user['assessed']} metal-loss features assessed, "
                f"{user['immediate']} immediate and {user['scheduled']} scheduled digs.")
    return "Unsupported request."


# -- tools -------------------------------------------------------------------------------------------------


def pipe_book(segment: str, girth_weld: str, run_id: str) -> float:
    key = f"wt:{girth_weld}"
    _CALLS[key] = _CALLS.get(key, 0) + 1
    if girth_weld in RUNS[run_id]["slow_welds"] and _CALLS[key] == 1:
        raise PipeBookTimeout(f"pipe book: no answer for {girth_weld} within 10 s")
    return PIPE_BOOK.get(girth_weld, SEGMENTS[segment]["nominal_wt_mm"])


def parse_dig_list(text: str) -> list[dict]:
    digs = []
    for line in text.splitlines():
        m = re.match(r"^(F-\d+) \| (immediate|scheduled) \| ([\d,.]+) m \| depth (\d+)% \| FPR ([\d.]+)$", line.strip())
        if m:
            digs.append({"feature": m.group(1), "priority": m.group(2), "position_m": float(m.group(3).replace(",", "")),
                         "depth_pct": int(m.group(4)), "fpr": float(m.group(5))})
    return digs


def validate(review: dict) -> None:
    seg = SEGMENTS[review["segment"]]
    for f in review["features"]:
        if not 0 <= f["position_m"] <= seg["length_m"]:
            raise ReviewRejected(f"feature {f['feature']} at {f['position_m']:,.1f} m lies beyond the "
                                 f"{seg['length_m']:,} m of segment {review['segment']}")
    for f in review["features"]:
        if f["type"] != "metal_loss":
            raise ReviewRejected(f"feature {f['feature']} is a {f['type']}; it was assessed with the metal-loss "
                                 "(modified B31G) method")
    for f in review["features"]:
        book = PIPE_BOOK.get(f["girth_weld"], seg["nominal_wt_mm"])
        if abs(f["wt_mm"] - book) > 1e-6:
            raise ReviewRejected(f"feature {f['feature']} at {f['girth_weld']} lies on {book} mm wall per the pipe "
                                 f"book; it was assessed with {f['wt_mm']} mm")
    day, maop = current_maop(review["segment"], review["date"])
    if review["maop_kpa"] != maop:
        raise ReviewRejected(f"assessment used MAOP {review['maop_kpa']:,} kPa; {review['segment']} has been at "
                             f"{maop:,} kPa since {day}")
    listed = {d["feature"]: d["priority"] for d in review["digs"]}
    for f in review["features"]:
        need = classify(f["depth_pct"], f["fpr"])
        if need == "immediate" and listed.get(f["feature"]) != "immediate":
            raise ReviewRejected(f"feature {f['feature']} ({f['depth_pct']}% deep, FPR {f['fpr']:.2f}) needs an "
                                 f"immediate dig; the dig list has {listed.get(f['feature'], 'no entry')}")


def record(run_id: str, path: Path, server: Any) -> None:
    from openai import OpenAI

    _CALLS.clear()
    client = OpenAI(base_url=server.base_url, api_key="integrity-local", max_retries=0)
    run = RUNS[run_id]
    with otlp_capture(path, "integrity-review") as tracer:
        try:
            with oi_span(tracer, NAME, "AGENT", {"run_id": run_id, "task": "review in-line inspection run"},
                         **{"agent.name": NAME}) as root:
                with oi_span(tracer, "fetch_run", "TOOL", {"run_id": run_id}) as s:
                    info = s.output = {"run_id": run_id, "segment": run["segment"], "date": run["date"],
                                       "vendor": run["vendor"], "tool": "MFL", "odometer_unit": run["odometer_unit"],
                                       "features_reported": len(run["features"])}
                with oi_span(tracer, "fetch_segment", "TOOL", {"segment": info["segment"]}) as s:
                    seg = SEGMENTS[info["segment"]]
                    segment = s.output = {"segment": info["segment"], **{k: seg[k] for k in (
                        "od_mm", "nominal_wt_mm", "smys_mpa", "length_m")}}
                with oi_span(tracer, "maop_lookup", "TOOL", {"segment": info["segment"], "as_of": info["date"]}) as s:
                    if kit.on("pig.maop_cache"):
                        day, maop = SEGMENTS[info["segment"]]["maop"][0]  # the record cached at first use
                    else:
                        day, maop = current_maop(info["segment"], info["date"])
                    s.output = {"segment": info["segment"], "maop_kpa": maop, "effective": day}
                with oi_span(tracer, "fetch_features", "TOOL", {"run_id": run_id, "feature_type": "metal_loss"}) as s:
                    rows = [dict(f) for f in run["features"]
                            if kit.on("pig.type_filter") or f["type"] == "metal_loss"]
                    s.output = {"run_id": run_id, "feature_type": "metal_loss", "features": rows}
                with oi_span(tracer, "normalize_odometer", "CHAIN", {"unit": info["odometer_unit"],
                                                                     "features": rows}) as s:
                    factor = FT if info["odometer_unit"] == "ft" else 1.0
                    if kit.on("pig.odometer_ft"):
                        factor = 1.0
                    features = [{**f, "position_m": round(f["odometer"] * factor, 1)} for f in rows]
                    s.output = features
                assessed = []
                for f in features:
                    wt = None
                    for _attempt in range(3):
                        try:
                            with oi_span(tracer, "wall_thickness", "TOOL", {"segment": info["segment"],
                                                                            "girth_weld": f["girth_weld"]}) as s:
                                try:
                                    wt = pipe_book(info["segment"], f["girth_weld"], run_id)
                                except PipeBookTimeout:
                                    if not kit.on("pig.wall_default"):
                                        raise
                                    wt = segment["nominal_wt_mm"]
                                s.output = {"girth_weld": f["girth_weld"], "wt_mm": wt}
                            break
                        except PipeBookTimeout:
                            continue
                    args = {"feature": f["feature"], "depth_pct": f["depth_pct"], "length_mm": f["length_mm"],
                            "wt_mm": wt, "od_mm": segment["od_mm"], "smys_mpa": segment["smys_mpa"], "maop_kpa": maop}
                    with oi_span(tracer, "remaining_strength", "TOOL", args) as s:
                        pf = failure_pressure_kpa(f["depth_pct"], f["length_mm"], wt, segment["od_mm"],
                                                  segment["smys_mpa"])
                        s.output = {"feature": f["feature"], "failure_pressure_kpa": round(pf), "fpr": round(pf / maop, 3)}
                    assessed.append({**f, "wt_mm": wt, "fpr": round(pf / maop, 3)})
                with oi_span(tracer, "dig_planner", "AGENT", {"run_id": run_id, "features": len(assessed)},
                             **{"agent.name": "dig_planner"}) as sub:
                    reply = client.chat.completions.create(
                        model=MODEL, temperature=0, max_tokens=60 if kit.on("pig.dig_tokens") else 400,
                        messages=[{"role": "system", "content": "You plan excavations from assessed ILI features: "
                                                                "list immediate and scheduled digs in line order, "
                                                                "'F-id | priority | position m | depth % | FPR'."},
                                  {"role": "user", "content": json.dumps({"segment": info["segment"], "features": [
                                      {k: a[k] for k in ("feature", "position_m", "depth_pct", "fpr")}
                                      for a in assessed]})}])
                    text = reply.choices[0].message.content or ""
                    with oi_span(tracer, "parse_dig_list", "CHAIN", text) as s:
                        digs = s.output = parse_dig_list(text)
                    sub.output = digs
                summary = client.chat.completions.create(model=MODEL, temperature=0, messages=[
                    {"role": "system", "content": "You write inspection review summaries for the integrity engineer."},
                    {"role": "user", "content": json.dumps({
                        "run_id": run_id, "segment": info["segment"], "assessed": len(assessed),
                        "immediate": sum(d["priority"] == "immediate" for d in digs),
                        "scheduled": sum(d["priority"] == "scheduled" for d in digs)})}]).choices[0].message.content
                review = {"run_id": run_id, "segment": info["segment"], "date": info["date"], "maop_kpa": maop,
                          "features": assessed, "digs": digs, "summary": summary}
                with oi_span(tracer, "validate_review", "EVALUATOR", {"run_id": run_id, "features": len(assessed),
                                                                      "digs": len(digs)}) as s:
                    validate(review)
                    s.output = {"approved": True}
                root.output = {"run_id": run_id, "digs": digs}
        except ReviewRejected:
            pass
