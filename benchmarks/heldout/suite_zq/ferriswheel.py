"""Ferris wheel monthly maintenance (OpenTelemetry spans, OpenInference conventions, OTLP/JSON): drive log,
manual retrieval and torque spec, model task plan, gondola rounds, parts sub-agent, work order."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from . import common
from .common import Case, oi_llm, oi_span
from .kit import active

AGENT = "ferriswheel-maintenance"
ROUTE = "otlp"
EXT = "json"
DOMAIN = "ferris wheel maintenance"
SHAPE = ("request, drive-log tool + CSV parser + drive assessment, manual retriever + torque spec + range "
         "check, model task plan, gondola round plan + per-gondola inspections, parts sub-agent (catalogue, "
         "model part choice, order), work-order assembly, validator, inspections API")

LOG_ROWS = {
    "riverside_eye": [("2026-03-01", "2.9"), ("2026-03-04", "3.4"), ("2026-03-08", "3.8"), ("2026-03-11", "7,1"),
                      ("2026-03-15", "4.1"), ("2026-03-22", "3.6")],
    "pier_star": [("2026-03-02", "2.2"), ("2026-03-09", "2,6"), ("2026-03-16", "2.4"), ("2026-03-23", "2.7")],
    "harbour_loop": [("2026-04-01", "1.9"), ("2026-04-08", "5,2"), ("2026-04-15", "4.8")],
    "castle_wheel": [("2026-04-02", "2.1"), ("2026-04-09", "2.3")],
    "bay_view": [("2026-05-03", "3.1"), ("2026-05-10", "3,3"), ("2026-05-17", "2.9")],
    "garden_ring": [("2026-05-04", "4.6"), ("2026-05-11", "3.9")],
}
WHEELS = {
    "riverside_eye": {"name": "Riverside Eye", "model": "HW-60", "gondolas": 8, "month": "2026-03",
                      "findings": {"G3": "door seal cracked"}},
    "pier_star": {"name": "Pier Star", "model": "HW-60", "gondolas": 8, "month": "2026-03",
                  "findings": {"G6": "door seal cracked"}},
    "harbour_loop": {"name": "Harbour Loop", "model": "HW-40", "gondolas": 6, "month": "2026-04",
                     "findings": {"G2": "window latch loose"}},
    "castle_wheel": {"name": "Castle Wheel", "model": "HW-40", "gondolas": 6, "month": "2026-04", "findings": {}},
    "bay_view": {"name": "Bay View", "model": "HW-60", "gondolas": 8, "month": "2026-05",
                 "findings": {"G1": "window latch loose", "G7": "door seal cracked"}},
    "garden_ring": {"name": "Garden Ring", "model": "HW-40", "gondolas": 6, "month": "2026-05",
                    "findings": {"G4": "door seal cracked"}},
}
REFS = ["harbour_loop", "castle_wheel", "bay_view", "garden_ring"]
MANUAL = [
    {"id": "HW-60 s4.2", "model": "HW-60", "text": "Spoke clamp bolts: torque to 185 ft-lbf, re-check after 24 h."},
    {"id": "HW-40 s4.2", "model": "HW-40", "text": "Spoke clamp bolts: torque to 140 ft-lbf, re-check after 24 h."},
    {"id": "HW-60 s7.1", "model": "HW-60", "text": "Drive bearing: inspect when vibration reaches 4.5 mm/s."},
]
TORQUE_RANGE = {"HW-60": (240.0, 260.0), "HW-40": (180.0, 200.0)}
PARTS = {"door seal cracked": "SEAL-G-220", "window latch loose": "LATCH-W-14"}

CASES = [
    Case("zq_ferris_log", "ferris-log", "lossy_parsing", "riverside_eye", ("parse_drive_log", 1),
         ("issue_work_order", 1), "The drive-log parser splits rows on commas and drops the row written with "
                                  "a decimal comma (7,1 mm/s), so no bearing inspection is planned."),
    Case("zq_ferris_manual", "ferris-manual", "wrong_retrieval", "pier_star", ("search_manual", 1),
         ("verify_torque_range", 1), "The manual search ranks the HW-40 section first for an HW-60 wheel, so "
                                     "the torque spec comes from the smaller wheel."),
    Case("zq_ferris_torque", "ferris-torque", "unit_error", "riverside_eye", ("compute_torque_spec", 1),
         ("verify_torque_range", 1), "The torque step takes the manual's ft-lbf figure as newton-metres "
                                     "without converting it."),
    Case("zq_ferris_rounds", "ferris-rounds", "off_by_one", "pier_star", ("plan_gondola_rounds", 1),
         ("validate_work_order", 1), "The round plan numbers gondolas with range(1, n), leaving the last "
                                     "gondola out of the inspections."),
    Case("zq_ferris_parts", "ferris-parts", "hallucinated_value", "riverside_eye", ("select_parts", 1),
         ("order_parts", 1), "The parts model answers a bearing part number that is in neither the findings "
                             "nor the catalogue hits, and the order is refused."),
]

_CLIENT: Any = None


def policy(req: Any) -> Any:
    msgs = common.messages_of(req)
    system = common.system_of(msgs)
    user = common.text_of(msgs[-1].get("content"))
    if system.startswith("You plan ferris wheel maintenance"):
        facts = json.loads(user)
        tasks = ["spoke clamp torque check", "gondola door and latch rounds", "brake test"]
        if facts["drive"]["bearing_check"]:
            tasks.insert(1, "drive bearing inspection")
        return json.dumps({"tasks": tasks})
    if system.startswith("You choose spare parts"):
        facts = json.loads(user)
        parts = [{"part": h["part"], "qty": 1, "for": h["finding"]} for h in facts["hits"]]
        if active("ferris-parts"):
            parts.append({"part": "BRG-6210-HX", "qty": 1, "for": "drive bearing"})
        return json.dumps({"parts": parts})
    return "no answer"


def _log_text(key: str) -> str:
    lines = ["date,vibration_mm_s"]
    for d, v in LOG_ROWS[key]:
        lines.append(f'{d},"{v}"' if "," in v else f"{d},{v}")
    return "\n".join(lines)


def record(key: str) -> None:
    w = WHEELS[key]
    with oi_span("maintenance_planner", "AGENT", {"wheel": w["name"], "month": w["month"]},
                 agent__name=AGENT, session__id=f"{key}-{w['month']}") as root:
        with oi_span("read_request", "CHAIN", {"wheel": key}) as s:
            req = s.output({"wheel": w["name"], "model": w["model"], "gondolas": w["gondolas"], "month": w["month"]})
        with oi_span("fetch_drive_log", "TOOL", {"wheel": w["name"], "month": w["month"]}) as s:
            log_text = s.output(_log_text(key))
        with oi_span("parse_drive_log", "CHAIN", log_text) as s:
            rows = []
            if active("ferris-log"):
                for line in log_text.splitlines()[1:]:
                    parts = line.split(",")
                    if len(parts) == 2:
                        rows.append({"date": parts[0], "mm_s": float(parts[1])})
            else:
                for r in csv.DictReader(io.StringIO(log_text)):
                    rows.append({"date": r["date"], "mm_s": float(r["vibration_mm_s"].replace(",", "."))})
            s.output(rows)
        with oi_span("assess_drive", "CHAIN", rows) as s:
            peak = max(r["mm_s"] for r in rows)
            drive = s.output({"max_mm_s": peak, "bearing_check": peak >= 4.5})
        query = f"spoke clamp torque {w['model']}"
        with oi_span("search_manual", "RETRIEVER", query) as s:
            hits = sorted(MANUAL, key=lambda d: (d["model"] != w["model"], "torque" not in d["text"]))
            if active("ferris-manual"):
                hits = sorted(MANUAL, key=lambda d: "torque" not in d["text"] or d["model"] == w["model"])
            hits = hits[:2]
            for i, d in enumerate(hits):
                s.span.set_attribute(f"retrieval.documents.{i}.document.id", d["id"])
                s.span.set_attribute(f"retrieval.documents.{i}.document.content", d["text"])
            s.output(hits)
        with oi_span("compute_torque_spec", "CHAIN", hits[0]) as s:
            ft_lbf = float(re.search(r"(\d+) ft-lbf", hits[0]["text"]).group(1))
            factor = 1.0 if active("ferris-torque") else 1.3558
            torque = s.output({"source": hits[0]["id"], "torque_nm": round(ft_lbf * factor, 1)})
        with oi_span("verify_torque_range", "CHAIN", {"model": w["model"], **torque}) as s:
            lo, hi = TORQUE_RANGE[w["model"]]
            if not lo <= torque["torque_nm"] <= hi:
                raise ValueError(f"spoke clamp torque {torque['torque_nm']} Nm is outside {lo:.0f}-{hi:.0f} Nm for "
                                 f"wheel model {w['model']}")
            s.output({"ok": True})
        plan = json.loads(oi_llm("plan_tasks", _CLIENT, [
            {"role": "system", "content": "You plan ferris wheel maintenance. Answer JSON with tasks."},
            {"role": "user", "content": json.dumps({"wheel": req, "drive": drive, "torque": torque})}]))
        with oi_span("plan_gondola_rounds", "CHAIN", {"gondolas": w["gondolas"]}) as s:
            stop = w["gondolas"] if active("ferris-rounds") else w["gondolas"] + 1
            rounds = s.output([f"G{i}" for i in range(1, stop)])
        findings = []
        for g in rounds:
            with oi_span("inspect_gondola", "TOOL", {"wheel": w["name"], "gondola": g}) as s:
                note = w["findings"].get(g)
                findings.append(s.output({"gondola": g, "status": "defect" if note else "ok", "note": note}))
        with oi_span("parts_agent", "AGENT", {"findings": [f for f in findings if f["note"]]}, agent__name="parts"):
            notes = sorted({f["note"] for f in findings if f["note"]})
            with oi_span("search_parts_catalogue", "TOOL", {"findings": notes}) as s:
                cat = s.output([{"part": PARTS[n], "finding": n, "stock": 6} for n in notes])
            chosen = json.loads(oi_llm("select_parts", _CLIENT, [
                {"role": "system", "content": "You choose spare parts for the findings. Answer JSON."},
                {"role": "user", "content": json.dumps({"findings": notes, "hits": cat})}], agent="parts"))
            with oi_span("order_parts", "TOOL", chosen) as s:
                known = set(PARTS.values())
                for p in chosen["parts"]:
                    if p["part"] not in known:
                        raise LookupError(f"HTTP 404 from parts-store: {{\"error\": \"unknown part number\", "
                                          f"\"part\": \"{p['part']}\"}}")
                order = s.output({"po": f"PP-{w['month'][2:].replace('-', '')}{len(chosen['parts'])}",
                                  "lines": chosen["parts"]})
        with oi_span("assemble_work_order", "CHAIN", {"plan": plan, "findings": findings}) as s:
            wo = s.output({"wheel": w["name"], "month": w["month"], "tasks": plan["tasks"], "torque": torque,
                           "inspected": [f["gondola"] for f in findings], "parts_po": order["po"]})
        with oi_span("validate_work_order", "CHAIN", wo) as s:
            expected = [f"G{i}" for i in range(1, w["gondolas"] + 1)]
            missing = [g for g in expected if g not in wo["inspected"]]
            if missing:
                raise ValueError(f"inspection record covers {len(wo['inspected'])} of {w['gondolas']} gondolas "
                                 f"(missing {', '.join(missing)})")
            s.output({"ok": True})
        with oi_span("issue_work_order", "TOOL", wo) as s:
            peak_log = max(float(v.replace(",", ".")) for _, v in LOG_ROWS[key])
            if peak_log >= 4.5 and not any("bearing" in t for t in wo["tasks"]):
                raise RuntimeError(f"HTTP 422 from inspections-api: {{\"error\": \"drive bearing inspection "
                                   f"required\", \"telemetry_peak_mm_s\": {peak_log}, \"threshold\": 4.5}}")
            s.output({"work_order": f"WO-{key[:3].upper()}-{w['month']}", "status": "issued"})
        root.output({"work_order": f"WO-{key[:3].upper()}-{w['month']}"})


def setup() -> None:
    global _CLIENT
    common.server().use(policy)
    _CLIENT = common.openai_client()
    common.take_spans()
