"""Bridge inspection (OpenTelemetry / OpenInference spans): plan a principal inspection report from the asset
register, strain gauges and a span-assessor sub-agent, and file it with the highway authority's asset system."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from openai import OpenAI

from .common import Case, Spans, json_policy
from .kit import active

AGENT = "bridge-inspection-reporter"
ROUTE = "otlp"
DOMAIN = "bridge inspection"
SHAPE = "intake, register retriever, strain gauges, span-assessor sub-agent (photos, model, parser per span), load rating, model summary, report build, asset system filing"

STRUCTURES = {
    "BR-114": {"name": "Afon Leri Bridge", "spans": 3, "capacity_kn": 400, "material": "masonry arch", "last_pi": "2020-06-11"},
    "BR-141": {"name": "Afon Lerry Footbridge", "spans": 1, "capacity_kn": 60, "material": "steel truss", "last_pi": "2022-03-02"},
    "BR-207": {"name": "Mill Leat Bridge", "spans": 2, "capacity_kn": 260, "material": "reinforced concrete", "last_pi": "2019-09-20"},
    "BR-233": {"name": "Station Road Overbridge", "spans": 4, "capacity_kn": 440, "material": "prestressed concrete", "last_pi": "2021-05-14"},
    "BR-305": {"name": "Tanyard Lane Bridge", "spans": 2, "capacity_kn": 180, "material": "masonry arch", "last_pi": "2020-10-01"},
    "BR-318": {"name": "Quay Swing Bridge", "spans": 1, "capacity_kn": 320, "material": "steel plate girder", "last_pi": "2021-08-08"},
    "BR-402": {"name": "Church Brook Culvert Bridge", "spans": 1, "capacity_kn": 150, "material": "masonry arch", "last_pi": "2019-04-17"},
}
CRACKS = {("BR-114", 2): "0.4", ("BR-207", 1): "0.25", ("BR-233", 3): "0.35", ("BR-305", 2): "0.15"}
INPUTS = {"A": {"structure": "BR-114", "inspector": "K. Hughes", "date": "2026-11-18"},
          "B": {"structure": "BR-207", "inspector": "M. Evans", "date": "2026-11-25"}}
REFS = [{"structure": "BR-233", "inspector": "K. Hughes", "date": "2026-10-07"},
        {"structure": "BR-305", "inspector": "M. Evans", "date": "2026-10-21"},
        {"structure": "BR-318", "inspector": "S. Pryce", "date": "2026-09-30"},
        {"structure": "BR-402", "inspector": "S. Pryce", "date": "2026-11-04"}]
CASES = [
    Case("zs_bridge_1", "brg.register", "wrong_retrieval", "A", "search_asset_register", 1, "retrieval", "file_inspection_report", 1,
         "The register search returns the record of a similarly named footbridge, so the report describes one span."),
    Case("zs_bridge_2", "brg.gauge", "swallowed_error", "B", "read_strain_gauges", 1, "tool", "file_inspection_report", 1,
         "A strain gauge feed times out inside the gauge tool, which returns no readings for that span instead of failing."),
    Case("zs_bridge_3", "brg.crack", "lossy_parsing", "A", "parse_assessment", 2, "other", "file_inspection_report", 1,
         "The assessment parser drops the leading zero and decimal point of a crack width, reading 0.4 mm as 4 mm."),
    Case("zs_bridge_4", "brg.load", "unit_error", "B", "derive_weight_limit", 1, "other", "file_inspection_report", 1,
         "The weight limit takes the capacity in kilonewtons as tonnes, posting a limit the structure cannot carry."),
    Case("zs_bridge_5", "brg.index", "off_by_one", "A", "build_report", 1, "other", "file_inspection_report", 1,
         "The report numbers the spans from zero while the register numbers them from one."),
]


def _assess(p: dict) -> dict:
    width = p["crack_mm"]
    score = 2 if width is None else 3 if float(width) <= 0.3 else 4
    text = f"Span {p['span']}: condition score {score}."
    if width is not None:
        text += f" Crack width {width} mm at the crown; monitor."
    return {"assessment": text}


def _summary(p: dict) -> dict:
    worst = max(s["score"] for s in p["spans"])
    return {"summary": f"{p['structure']} principal inspection: worst span score {worst}.", "priority": "high" if worst >= 4 else "routine"}


policy = json_policy({"assess_span": _assess, "summarise": _summary})


def _file(rep: dict) -> dict:
    s = STRUCTURES[rep["structure"]]
    ids = [x["span"] for x in rep["spans"]]
    if sorted(ids) != list(range(1, s["spans"] + 1)):
        raise RuntimeError(f"asset system 422: span ids {ids} do not match the elements of {rep['structure']} "
                           f"(spans 1-{s['spans']})")
    for x in rep["spans"]:
        if x["strain_readings"] < 3:
            raise RuntimeError(f"asset system 422: span {x['span']} condition score lacks strain evidence "
                               f"({x['strain_readings']} readings, minimum 3)")
        if x["crack_mm"] is not None and x["crack_mm"] > 1.0 and x["score"] < 5:
            raise RuntimeError(f"asset system 422: span {x['span']} crack width {x['crack_mm']} mm recorded with condition "
                               f"score {x['score']} (widths over 1.0 mm need score 5 and a restriction)")
    cap_t = s["capacity_kn"] / 9.81
    if rep["weight_limit_t"] > cap_t:
        raise RuntimeError(f"asset system 422: posted weight limit {rep['weight_limit_t']} t exceeds the assessed "
                           f"capacity of {cap_t:.1f} t for {rep['structure']}")
    return {"status": "filed", "record": f"PI-{rep['structure']}-{rep['date']}"}


def record(inp: dict, dest: Path, server: Any) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    sp = Spans(AGENT)
    try:
        with sp.span(AGENT, "AGENT", inp, **{"agent.name": AGENT}) as top:
            with sp.span("read_work_order", "CHAIN", inp) as b:
                order = b["out"] = {**inp, "kind": "principal inspection"}
            with sp.span("search_asset_register", "RETRIEVER", {"query": f"structure {order['structure']}"}) as b:
                sid = order["structure"]
                if active("brg.register"):
                    sid = next(k for k in STRUCTURES if k != sid and k[:4] == sid[:4] and sorted(k) == sorted(sid))
                asset = b["out"] = {"structure": sid, **STRUCTURES[sid]}
            with sp.span("check_access_permit", "TOOL", {"structure": order["structure"], "date": order["date"]},
                         **{"tool.name": "check_access_permit"}) as b:
                b["out"] = {"permit": f"TM-{order['structure']}-{order['date'][5:7]}", "lane_closure": "06:00-15:00"}
            with sp.span("fetch_traffic_counts", "TOOL", {"structure": order["structure"]},
                         **{"tool.name": "fetch_traffic_counts"}) as b:
                b["out"] = {"aadt": 4200 + 10 * asset["capacity_kn"], "hgv_share": 0.07}
            with sp.span("read_strain_gauges", "TOOL", {"structure": order["structure"], "spans": asset["spans"]},
                         **{"tool.name": "read_strain_gauges"}) as b:
                gauges = {}
                for n in range(1, asset["spans"] + 1):
                    try:
                        if n == 1 and active("brg.gauge"):
                            raise TimeoutError(f"gauge logger G{n} did not answer")
                        gauges[str(n)] = [round(110 + 7 * n + i * 1.5, 1) for i in range(4)]
                    except TimeoutError:
                        gauges[str(n)] = []
                b["out"] = {"microstrain": gauges}
            spans = []
            with sp.span("span_assessor", "AGENT", {"structure": order["structure"], "spans": asset["spans"]},
                         **{"agent.name": "span_assessor"}) as sub:
                for n in range(1, asset["spans"] + 1):
                    with sp.span("fetch_drone_photos", "TOOL", {"structure": order["structure"], "span": n},
                                 **{"tool.name": "fetch_drone_photos"}) as b:
                        photos = b["out"] = {"span": n, "photos": [f"{order['structure']}-S{n}-{i}.jpg" for i in range(3)],
                                             "crack_mm": CRACKS.get((order["structure"], n))}
                    with sp.span("read_previous_defects", "TOOL", {"structure": order["structure"], "span": n},
                                 **{"tool.name": "read_previous_defects"}) as b:
                        b["out"] = {"span": n, "defects": [f"{order['structure']}/S{n}: pointing loss (2020)"]}
                    text = sp.llm("assess_span", client, "assess_span", {"span": n, "crack_mm": photos["crack_mm"],
                                                                        "photos": photos["photos"]})
                    with sp.span("parse_assessment", "CHAIN", text) as b:
                        score = int(re.search(r"score (\d)", text["assessment"]).group(1))
                        width = re.search(r"Crack width ([\d.]+) mm", text["assessment"])
                        crack = None
                        if width:
                            raw = width.group(1)
                            crack = float(raw.replace("0.", "", 1)) if active("brg.crack") else float(raw)
                        b["out"] = {"span": n, "score": score, "crack_mm": crack}
                    spans.append(b["out"])
                sub["out"] = {"assessed": len(spans)}
            with sp.span("derive_weight_limit", "CHAIN", {"capacity_kn": asset["capacity_kn"]}) as b:
                divisor = 1 if active("brg.load") else 9.81
                limit = b["out"] = {"weight_limit_t": round(asset["capacity_kn"] / divisor * 0.9, 1)}
            summary = sp.llm("summarise_report", client, "summarise", {"structure": order["structure"], "spans": spans})
            with sp.span("build_report", "CHAIN", {"spans": spans, "limit": limit}) as b:
                rows = []
                for i, s in enumerate(spans):
                    label = i if active("brg.index") else i + 1
                    rows.append({**s, "span": label, "strain_readings": len(gauges[str(i + 1)])})
                report = b["out"] = {"structure": order["structure"], "date": order["date"], "spans": rows,
                                     "weight_limit_t": limit["weight_limit_t"], "inspector": order["inspector"]}
            with sp.span("file_inspection_report", "TOOL", {**report, "summary": summary["summary"]},
                         **{"tool.name": "file_inspection_report"}) as b:
                b["out"] = _file(report)
            top["out"] = b["out"]
    except RuntimeError:
        pass
    sp.save(dest)
