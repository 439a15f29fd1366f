"""Weather station calibration (otlp route): compare a station's sensors with a travelling reference,
compute offsets, reduce pressure to sea level (sub-agent), review and submit the calibration certificate."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from . import kit
from .common import Agent, Case, last_user_json
from .otel import Spans, export, instrumented_client, provider

STATIONS = {
    "WS-Brockhill": {"class": "A", "elevation_m": 412, "lat": 54.2, "offsets": {"T-1": 0.18, "H-1": -1.3,
                                                                                   "P-1": 0.42, "W-1": 0.21}},
    "WS-Saltmere": {"class": "A", "elevation_m": 18, "lat": 52.9, "offsets": {"T-1": -0.07, "H-1": 2.1,
                                                                                "P-1": -0.3, "W-1": -0.12}},
    "WS-Gorsey Top": {"class": "A", "elevation_m": 268, "lat": 53.4, "offsets": {"T-1": 0.05, "H-1": 0.8,
                                                                                   "P-1": 0.12, "W-1": 0.3}},
    "WS-Fenwick": {"class": "A", "elevation_m": 4, "lat": 52.6, "offsets": {"T-1": -0.22, "H-1": -0.6,
                                                                             "P-1": 0.25, "W-1": 0.05}},
    "WS-Castle Rigg": {"class": "A", "elevation_m": 351, "lat": 54.6, "offsets": {"T-1": 0.11, "H-1": 1.7,
                                                                                   "P-1": -0.18, "W-1": -0.2}},
    "WS-Dunmere": {"class": "A", "elevation_m": 96, "lat": 50.5, "offsets": {"T-1": 0.0, "H-1": -2.2,
                                                                              "P-1": 0.35, "W-1": 0.14}},
}
SENSORS = [("T-1", "air temperature", "C"), ("H-1", "relative humidity", "%RH"), ("P-1", "station pressure", "hPa"),
           ("W-1", "wind speed", "m/s")]
BASE = {"T-1": 12.4, "H-1": 71.0, "P-1": 0.0, "W-1": 4.6}
PROCEDURES = [
    {"procedure": "CAL-B-1", "title": "Class B marine buoy field check", "class": "B", "points_required": 5},
    {"procedure": "CAL-A-3", "title": "Class A land station comparison with travelling standard", "class": "A",
     "points_required": 10},
]
NOISE = [0.03, -0.02, 0.01, -0.04, 0.02, 0.0, -0.01, 0.04, -0.03, 0.0, 0.02, -0.02]
PAGE = 5
KNOTS = 1.943844


class CertificateRejected(Exception):
    """The calibration registry's error answer."""


def _station_p(elev: float) -> float:
    return round(1013.0 * math.exp(-elev / (29.27 * 288.15)), 1)


def readings(station: str, sensor: str, n: int) -> list[dict]:
    st = STATIONS[station]
    base = _station_p(st["elevation_m"]) if sensor == "P-1" else BASE[sensor]
    out = []
    for i in range(n):
        ref = round(base + 0.1 * i, 2)
        out.append({"i": i, "reference": ref, "sensor": round(ref + st["offsets"][sensor] + NOISE[i], 2)})
    return out


def true_offset(station: str, sensor: str) -> float:
    rows = readings(station, sensor, 10)
    return round(sum(r["sensor"] - r["reference"] for r in rows) / len(rows), 2)


def policy(request: Any) -> str:
    p = last_user_json(request.body)
    if p.get("task") == "review":
        d = p["draft"]
        offsets = dict(d["offsets"])
        if kit.active("wx.hallucinated_value") and "H-1" in offsets:
            offsets["H-1"] = -2.4
        return json.dumps({"offsets": offsets, "msl_hpa": d["msl_hpa"], "sensors": d["sensors"],
                           "points": d["points"], "remarks": "offsets within adjustable range; no drift trend"})
    return "{}"


def record(job: dict, out: Path, base_url: str) -> None:
    prov, exp = provider("station-calibration")
    exp.clear()
    client = instrumented_client(base_url, prov)
    sp = Spans(prov, "calibration")
    attempts = {"elevation": 0}
    try:
        with sp.span("station-calibration", "AGENT", input=job, **{"agent.name": "calibration-desk"}) as top:
            with sp.span("receive_job", "CHAIN", input=job) as s:
                s["output"] = {"job": job["job"], "station": job["station"], "sensors": [x[0] for x in SENSORS]}
            with sp.span("fetch_station_meta", "TOOL", input={"station": job["station"]},
                         **{"tool.name": "fetch_station_meta"}) as s:
                st = STATIONS[job["station"]]
                meta = {"station": job["station"], "class": st["class"], "lat": st["lat"]}
                s["output"] = meta
            with sp.span("retrieve_procedure", "RETRIEVER", input={"query": f"class {meta['class']} land station "
                                                                              "comparison procedure"}) as s:
                proc = next(d for d in PROCEDURES if d["class"] == meta["class"])
                if kit.active("wx.wrong_retrieval"):
                    proc = PROCEDURES[0]
                s["output"] = [proc]
            results = []
            for sensor, label, unit in SENSORS:
                rows: list = []
                page = 1
                while len(rows) < proc["points_required"]:
                    with sp.span("fetch_readings", "TOOL", input={"station": job["station"], "sensor": sensor,
                                                                 "page": page}, **{"tool.name": "fetch_readings"}) as s:
                        chunk = readings(job["station"], sensor, 10)[(page - 1) * PAGE: page * PAGE]
                        if sensor == "W-1" and kit.active("wx.format_drift"):
                            chunk = [{**r, "sensor": f"{r['sensor'] * KNOTS:.1f} kn"} for r in chunk]
                        s["output"] = {"sensor": sensor, "page": page, "rows": chunk, "more": page * PAGE < 10}
                        rows.extend(chunk)
                    page += 1
                with sp.span("parse_readings", "CHAIN", input={"sensor": sensor, "rows": rows}) as s:
                    parsed = [{"reference": float(r["reference"]),
                               "sensor": float(str(r["sensor"]).split()[0])} for r in rows]
                    s["output"] = parsed
                with sp.span("compute_offset", "CHAIN", input={"sensor": sensor, "rows": parsed}) as s:
                    off = round(sum(r["sensor"] - r["reference"] for r in parsed) / len(parsed), 2)
                    res = {"sensor": sensor, "label": label, "unit": unit, "offset": off, "points": len(parsed),
                           "station_mean": round(sum(r["reference"] for r in parsed) / len(parsed), 2)}
                    s["output"] = res
                results.append(res)
            with sp.span("pressure_reduction", "AGENT", input={"station": job["station"]},
                         **{"agent.name": "pressure-reduction"}) as sub:
                elev = None
                while elev is None:
                    try:
                        with sp.span("get_station_elevation", "TOOL", input={"station": job["station"]},
                                     **{"tool.name": "get_station_elevation"}) as s:
                            attempts["elevation"] += 1
                            try:
                                if attempts["elevation"] == 1:
                                    raise TimeoutError("elevation service: 504 Gateway Timeout")
                            except TimeoutError:
                                if kit.active("wx.swallowed_error"):
                                    s["output"] = {"station": job["station"], "elevation_m": 0}
                                    elev = 0
                                else:
                                    raise
                            if elev is None:
                                elev = STATIONS[job["station"]]["elevation_m"]
                                s["output"] = {"station": job["station"], "elevation_m": elev}
                    except TimeoutError:
                        continue
                with sp.span("reduce_to_msl", "CHAIN", input={"elevation_m": elev}) as s:
                    p = next(r for r in results if r["sensor"] == "P-1")
                    msl = round(p["station_mean"] * math.exp(elev / (29.27 * 288.15)), 1)
                    s["output"] = {"msl_hpa": msl}
                sub["output"] = s["output"]
            with sp.span("assemble_certificate", "CHAIN", input={"results": results, "msl_hpa": msl}) as s:
                start = 1 if kit.active("wx.off_by_one") else 0
                listed = [results[i] for i in range(start, len(results))]
                draft = {"job": job["job"], "procedure": proc["procedure"], "sensors": [r["sensor"] for r in listed],
                         "offsets": {r["sensor"]: r["offset"] for r in listed},
                         "points": {r["sensor"]: r["points"] for r in listed}, "msl_hpa": msl}
                s["output"] = draft
            r = client.chat.completions.create(model="gpt-4o-mini", temperature=0, messages=[
                {"role": "system", "content": "Review the calibration certificate draft and return it as JSON."},
                {"role": "user", "content": json.dumps({"task": "review", "draft": draft})}])
            cert = json.loads(r.choices[0].message.content or "{}")
            with sp.span("submit_certificate", "TOOL", input={"job": job["job"], "certificate": cert},
                         **{"tool.name": "submit_certificate"}) as s:
                s["output"] = _submit(job, cert)
            top["output"] = s["output"]
    except CertificateRejected:
        pass
    finally:
        client.close()
    export(exp, out)


def _submit(job: dict, cert: dict) -> dict:
    station = job["station"]
    errors = []
    for sensor, label, unit in SENSORS:
        if sensor not in cert["sensors"]:
            errors.append(f"certificate lacks {label} sensor {sensor} calibrated in job {job['job']}")
            continue
        if cert["points"][sensor] < 10:
            errors.append(f"{sensor} comparison has {cert['points'][sensor]} points; procedure CAL-A-3 requires 10")
        want = true_offset(station, sensor)
        got = cert["offsets"][sensor]
        if abs(got - want) > 0.05:
            errors.append(f"{sensor} offset {got:+.2f} {unit} differs from the comparison mean {want:+.2f} {unit}")
    p_mean = sum(r["reference"] for r in readings(station, "P-1", 10)) / 10
    expect = round(p_mean * math.exp(STATIONS[station]["elevation_m"] / (29.27 * 288.15)), 1)
    if abs(cert["msl_hpa"] - expect) > 0.5:
        errors.append(f"reduced pressure {cert['msl_hpa']} hPa inconsistent with station elevation "
                      f"{STATIONS[station]['elevation_m']} m (expected {expect} hPa)")
    if errors:
        raise CertificateRejected("HTTP 422 Unprocessable Entity: " + json.dumps({"job": job["job"], "errors": errors}))
    return {"certificate": f"CC-{job['job'][3:]}", "status": "registered"}


INPUTS = {
    "A": {"job": "CJ-6604", "station": "WS-Brockhill"},
    "B": {"job": "CJ-6611", "station": "WS-Saltmere"},
    "C": {"job": "CJ-6617", "station": "WS-Gorsey Top"},
    "D": {"job": "CJ-6620", "station": "WS-Fenwick"},
    "E": {"job": "CJ-6628", "station": "WS-Castle Rigg"},
    "F": {"job": "CJ-6633", "station": "WS-Dunmere"},
}

AGENT = Agent(
    name="weather_calibration", module="weather_calibration.py", route="otlp", domain="weather station calibration",
    shape="OTel/OpenInference spans: job -> station meta tool -> procedure retriever -> per-sensor paged readings "
          "loop, parse, offset -> pressure-reduction sub-agent (elevation tool with retry, MSL) -> certificate "
          "-> LLM review (instrumented OpenAI) -> submit certificate",
    inputs=INPUTS, refs=("C", "D", "E", "F"), policy=policy, record=record,
    cases=(
        Case("zze_wx_01", "wx.wrong_retrieval", "wrong_retrieval", "B", ("retrieve_procedure", 1, "retrieval"),
             ("submit_certificate", 1), "The marine buoy procedure is retrieved for a class A land station."),
        Case("zze_wx_02", "wx.off_by_one", "off_by_one", "A", ("assemble_certificate", 1, "other"),
             ("submit_certificate", 1), "The certificate loop starts at the second sensor."),
        Case("zze_wx_03", "wx.hallucinated_value", "hallucinated_value", "B", ("ChatCompletion", 1, "llm"),
             ("submit_certificate", 1), "The review model returns a humidity offset no reading supports."),
        Case("zze_wx_04", "wx.swallowed_error", "swallowed_error", "A", ("get_station_elevation", 1, "tool"),
             ("submit_certificate", 1), "The elevation lookup hides a 504 and answers an elevation of 0 m."),
        Case("zze_wx_05", "wx.format_drift", "format_drift", "B", ("fetch_readings", 7, "tool"),
             ("submit_certificate", 1), "The wind readings arrive as knot strings and are parsed as metres per second."),
    ),
)
