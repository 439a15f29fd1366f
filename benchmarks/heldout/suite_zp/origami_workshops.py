"""Origami workshops: plans a venue's series of folding sessions, finds each model's diagram, sizes the
paper from the supplier's stock, has a kit builder sub-agent reserve the paper and confirms the series
with the venue (OpenTelemetry spans, OpenInference conventions, exported as OTLP/JSON)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from openai import OpenAI

from .common import ApiError, Case, OtelRun, last_user_json
from .kit import active

NAME = "origami-series-planner"
ROUTE = "otlp"
DOMAIN = "origami workshops"
SHAPE = "load booking -> plan model -> per session: diagram retriever, parse sheet spec, remember session -> paper stock tool -> parse stock -> kit-builder sub-agent (colour model, reserve per session) -> count kits -> confirm series"

INPUTS: dict[str, dict[str, Any]] = {
    "library": {"series": "OW-311", "venue": "Northgate Arts Hall", "attendees": 12, "level": "beginner",
                "models": ["crane", "jumping frog", "lily"], "dates": ["2027-05-04", "2027-05-11", "2027-05-18"]},
    "school": {"series": "OW-318", "venue": "St Anne's Primary", "attendees": 24, "level": "beginner",
               "models": ["jumping frog", "fortune teller", "crane"], "dates": ["2027-06-01", "2027-06-08", "2027-06-15"]},
    "club": {"series": "OW-322", "venue": "Fold Club Studio", "attendees": 8, "level": "intermediate",
             "models": ["lily", "kusudama unit"], "dates": ["2027-05-06", "2027-05-13"]},
    "museum": {"series": "OW-327", "venue": "Harbour Museum", "attendees": 16, "level": "beginner",
               "models": ["fortune teller", "crane"], "dates": ["2027-07-02", "2027-07-09"]},
    "care": {"series": "OW-330", "venue": "Elmwood Care Home", "attendees": 10, "level": "beginner",
             "models": ["lily", "jumping frog"], "dates": ["2027-07-05", "2027-07-12"]},
    "festival": {"series": "OW-334", "venue": "Riverside Festival Tent", "attendees": 30, "level": "beginner",
                 "models": ["crane", "fortune teller", "jumping frog"], "dates": ["2027-08-14", "2027-08-15", "2027-08-16"]},
}
MAIN = ("library", "school")
REFS = ("club", "museum", "care", "festival")

CASES = [
    Case("orw-1", "format_drift", "library", ("paper_stock", 1), ("confirm_workshop_series", 1),
         "The paper supplier starts quoting sheet sizes in inches, which the stock parser reads as centimetres."),
    Case("orw-2", "bad_memory_write", "school", ("remember_session", 2), ("confirm_workshop_series", 1),
         "The second session's plan is remembered under the first session's number, so one session ends up with no model."),
    Case("orw-3", "wrong_retrieval", "library", ("find_model_diagram", 1), ("confirm_workshop_series", 1),
         "The diagram search for the crane returns the advanced 3D crane, which the venue rejects for a beginners' session."),
    Case("orw-4", "off_by_one", "school", ("count_kits", 1), ("confirm_workshop_series", 1),
         "The kit count leaves out one attendee per session."),
    Case("orw-5", "lossy_parsing", "library", ("parse_sheet_spec", 3), ("confirm_workshop_series", 1),
         "The sheet-spec parser drops the 'x 2' multiplier of the lily's diagram, so its kits hold one sheet per attendee instead of two."),
]

DIAGRAMS = {
    "crane": [{"id": "DG-101", "title": "Traditional crane", "level": "beginner", "spec": "Sheets: 1 x 15 cm square"},
              {"id": "DG-188", "title": "3D crane (Lang)", "level": "advanced", "spec": "Sheets: 1 x 25 cm square"}],
    "jumping frog": [{"id": "DG-120", "title": "Jumping frog", "level": "beginner", "spec": "Sheets: 1 x 7.5 x 12.5 cm card"}],
    "lily": [{"id": "DG-133", "title": "Lily with stem", "level": "beginner", "spec": "Sheets: 2 x 15 cm square"}],
    "fortune teller": [{"id": "DG-140", "title": "Fortune teller", "level": "beginner", "spec": "Sheets: 1 x 20 cm square"}],
    "kusudama unit": [{"id": "DG-170", "title": "Kusudama unit", "level": "intermediate", "spec": "Sheets: 6 x 7.5 cm square"}],
}
STOCK_CM = [15, 20, 25, 7.5]
RANK = {"beginner": 0, "intermediate": 1, "advanced": 2}


def policy(req: Any) -> str:
    p = last_user_json(req.body)
    if p.get("task") == "plan":
        return json.dumps({"sessions": [{"session": i + 1, "model": m, "date": d} for i, (m, d) in enumerate(zip(p["models"], p["dates"]))]})
    if p.get("task") == "colours":
        return json.dumps({"colours": ["kami red", "indigo", "saffron"][: 1 + p["session"] % 3]})
    return "{}"


def record(inp_id: str, out: Path, base_url: str) -> None:
    b = INPUTS[inp_id]
    client = OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    o = OtelRun(NAME)
    memory: dict[int, dict] = {}
    try:
        with o.span(NAME, "AGENT", {"series": b["series"], "venue": b["venue"]}, **{"agent.name": NAME}) as root:
            with o.span("load_booking", "CHAIN", b["series"]) as sp:
                booking = o.output(sp, json.loads(json.dumps(b)))
            plan = o.llm("plan_sessions", client, "You plan origami workshop series.",
                         {"task": "plan", "models": booking["models"], "dates": booking["dates"], "level": booking["level"]})
            for i, s in enumerate(plan["sessions"]):
                with o.span("find_model_diagram", "RETRIEVER", f"{s['model']} diagram for {booking['level']} folders") as sp:
                    hits = [dict(d) for d in DIAGRAMS[s["model"]]]
                    if active("orw-3") and s["model"] == "crane":
                        hits.sort(key=lambda d: d["id"], reverse=True)  # embedding ranks the 3D crane first
                    top = o.retrieved(sp, [{"id": h["id"], "content": json.dumps(h)} for h in hits])[0]
                diagram = json.loads(top["content"])
                with o.span("parse_sheet_spec", "CHAIN", diagram["spec"]) as sp:
                    m = re.match(r"Sheets: (\d+) x ([\d.]+)", diagram["spec"])
                    per = 1 if active("orw-5") else int(m.group(1))
                    spec = o.output(sp, {"sheets_per_person": per, "size_cm": float(m.group(2))})
                with o.span("remember_session", "CHAIN", {"session": s["session"], "diagram": diagram["id"]}) as sp:
                    key = s["session"] - 1 if active("orw-2") and s["session"] > 1 else s["session"]
                    memory[key] = {"model": s["model"], "date": s["date"], "diagram": diagram["id"], "level": diagram["level"], **spec}
                    o.output(sp, {"stored_as": key, "sessions_known": sorted(memory)})
            with o.span("paper_stock", "TOOL", {"supplier": "Washi & Co", "sizes": "square"}, **{"tool.name": "paper_stock"}) as sp:
                sizes = [f"{round(c / 2.54, 1)} in" if active("orw-1") else f"{c} cm" for c in STOCK_CM]
                stock_text = o.output(sp, "In stock: " + ", ".join(sizes))
            with o.span("parse_stock", "CHAIN", stock_text) as sp:
                stock = o.output(sp, [float(x) for x in re.findall(r"([\d.]+) (?:cm|in)", stock_text)])
            with o.span("kit_builder", "AGENT", {"sessions": sorted(memory)}, **{"agent.name": "kit_builder"}):
                reservations = []
                for n in sorted(memory):
                    colours = o.llm("choose_colours", client, "You choose paper colours for workshop kits.", {"task": "colours", "session": n})
                    size = memory[n]["size_cm"]
                    with o.span("reserve_paper", "TOOL", {"session": n, "size": size, "colours": colours["colours"]}, **{"tool.name": "reserve_paper"}) as sp:
                        match = min(stock, key=lambda c: abs(c - size))
                        reservations.append(o.output(sp, {"session": n, "size_cm": match, "reservation": f"WP-{booking['series']}-{n}"}))
            with o.span("count_kits", "CHAIN", {"attendees": booking["attendees"], "sessions": len(memory)}) as sp:
                per_session = booking["attendees"] - 1 if active("orw-4") else booking["attendees"]
                kits = o.output(sp, {str(n): {"kits": per_session, "sheets": per_session * memory[n]["sheets_per_person"]} for n in sorted(memory)})
            order = {"series": booking["series"], "sessions": {str(n): memory[n] for n in sorted(memory)}, "kits": kits, "paper": reservations}
            with o.span("confirm_workshop_series", "TOOL", order, **{"tool.name": "confirm_workshop_series"}) as sp:
                for k in range(1, len(booking["models"]) + 1):
                    sess = order["sessions"].get(str(k))
                    if sess is None:
                        raise ApiError(422, {"error": "session_incomplete", "detail": f"series {booking['series']}: session {k} has no model"})
                    if RANK[sess["level"]] > RANK[booking["level"]]:
                        raise ApiError(422, {"error": "level", "detail": f"session {k} uses {sess['diagram']} ({sess['level']}); the series is for {booking['level']} folders"})
                    need = booking["attendees"] * int(re.match(r"Sheets: (\d+)", next(d for d in DIAGRAMS[sess["model"]] if d["id"] == sess["diagram"])["spec"]).group(1))
                    if kits[str(k)]["kits"] != booking["attendees"]:
                        raise ApiError(422, {"error": "kit_count", "detail": f"session {k} has {booking['attendees']} attendees and {kits[str(k)]['kits']} kits"})
                    if kits[str(k)]["sheets"] < need:
                        raise ApiError(422, {"error": "sheets_short", "detail": f"session {k} needs {need} sheets; kits hold {kits[str(k)]['sheets']}"})
                    paper = next(r for r in reservations if r["session"] == k)
                    if paper["size_cm"] != sess["size_cm"]:
                        raise ApiError(409, {"error": "paper_size", "detail": f"reservation {paper['reservation']} is for {paper['size_cm']} cm sheets; {sess['diagram']} needs {sess['size_cm']} cm"})
                o.output(sp, {"status": 201, "series": booking["series"], "sessions": len(order["sessions"])})
            o.output(root, {"confirmed": booking["series"]})
    except ApiError:
        pass
    o.write(out)
