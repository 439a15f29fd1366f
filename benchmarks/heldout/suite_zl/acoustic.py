"""Acoustic panel installation (otlp): room scan -> treatment plan -> panel maths -> booking -> install crew sub-agent -> RT60 commissioning."""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

from .common import Otlp, last_user
from .kit import active

NAME = "acoustic-panel-installer"
ROUTE = "otlp"
PANEL_SABINS = 0.648  # 1.2 m x 0.6 m panel, alpha 0.9
INPUTS = {
    "studio_b": {"site": "Studio B, Dockside Media", "room": "DM-B", "target_rt60": 0.35, "start": "2026-12-08"},
    "lecture_3": {"site": "Lecture room 3, Fernhill College", "room": "FC-3", "target_rt60": 0.6, "start": "2026-12-14"},
    "ref1": {"site": "Podcast booth 2, Lantern Audio", "room": "LA-2", "target_rt60": 0.3, "start": "2026-12-09"},
    "ref2": {"site": "Meeting room 5, Orbis House", "room": "OH-5", "target_rt60": 0.5, "start": "2026-12-10"},
    "ref3": {"site": "Rehearsal room, Kestrel Music", "room": "KM-R", "target_rt60": 0.45, "start": "2026-12-15"},
    "ref4": {"site": "Control room A, Dockside Media", "room": "DM-A", "target_rt60": 0.4, "start": "2026-12-16"},
}
SCANS = {
    "DM-B": {"l": 6.2, "w": 4.8, "h": 3.0, "scanned": "2026-11-30"},
    "FC-3": {"l": 9.0, "w": 7.0, "h": 3.2, "scanned": "2026-11-18"},
    "LA-2": {"l": 3.0, "w": 2.4, "h": 2.6, "scanned": "2026-10-02"},
    "OH-5": {"l": 7.0, "w": 5.0, "h": 2.8, "scanned": "2026-09-12"},
    "KM-R": {"l": 6.0, "w": 5.5, "h": 3.4, "scanned": "2026-11-02"},
    "DM-A": {"l": 5.0, "w": 4.2, "h": 3.0, "scanned": "2026-11-29"},
}
ARCHIVED_SCANS = {"DM-B": {"l": 4.9, "w": 4.8, "h": 3.0, "scanned": "2024-03-11"},
                  "FC-3": {"l": 7.5, "w": 7.0, "h": 3.2, "scanned": "2023-08-21"}}
OTHER_SITE_NOTE = "Site note (Orbis House, room OH-2): ceiling has sprinkler heads, do not mount ceiling clouds"


def policy(request: Any) -> str:
    text = last_user(request)
    if text.startswith("TREAT"):
        surfaces = ["rear_wall", "side_walls", "ceiling"]
        if active("ac_plan"):
            surfaces = ["rear_wall", "side_walls"]
        return json.dumps({"surfaces": surfaces, "panel": "1200x600 mineral wool, alpha 0.9"})
    if text.startswith("CREW"):
        d = json.loads(text[4:])
        blocked = any("do not mount ceiling" in n for n in d["notes"]) and d["surface"] == "ceiling"
        return json.dumps({"surface": d["surface"], "action": "skip" if blocked else "mount", "count": 0 if blocked else d["count"]})
    return "ok"


def absorption(scan: dict) -> tuple[float, float]:
    vol = scan["l"] * scan["w"] * scan["h"]
    area = 2 * (scan["l"] * scan["w"] + scan["l"] * scan["h"] + scan["w"] * scan["h"])
    return vol, area * 0.06


def run_case(ctx: dict, inp: str, path: str) -> None:
    client = ctx["client"]
    job = INPUTS[inp]
    o = Otlp("acoustic-installer")
    try:
        with o.span("acoustic_install_job", "AGENT", job, session__id=f"job-{inp}"):
            with o.span("job_intake", "CHAIN", job) as s:
                s.value = {"room": job["room"], "target_rt60": job["target_rt60"]}
            with o.span("fetch_room_scan", "TOOL", {"room": job["room"]}, tool__name="fetch_room_scan") as s:
                scan = dict(ARCHIVED_SCANS[job["room"]] if active("ac_stale") else SCANS[job["room"]])
                s.value = scan
            plan = json.loads(o.llm("plan_treatment", client, [
                {"role": "system", "content": "You plan acoustic treatment for rooms."},
                {"role": "user", "content": "TREAT" + json.dumps({"scan": scan, "target_rt60": job["target_rt60"]})}]))
            with o.span("panel_count", "CHAIN", {"scan": scan, "target_rt60": job["target_rt60"]}) as s:
                vol, a0 = absorption(scan)
                need = 0.161 * vol / job["target_rt60"] - a0
                n = max(0, math.ceil(need / PANEL_SABINS))
                s.value = {"volume_m3": round(vol, 2), "existing_sabins": round(a0, 2), "panels": n}
            caps = {"rear_wall": int(scan["w"] * scan["h"] * 0.5 / 0.72), "side_walls": 2 * int(scan["l"] * scan["h"] * 0.35 / 0.72),
                    "ceiling": int(scan["l"] * scan["w"] * 0.6 / 0.72)}
            with o.span("allocate_panels", "CHAIN", {"panels": n, "surfaces": plan["surfaces"], "capacity": caps}) as s:
                alloc, left = {}, n
                for surf in plan["surfaces"]:
                    alloc[surf] = min(left, caps[surf])
                    left -= alloc[surf]
                s.value = alloc
            fixings = {}
            for surf in alloc:
                with o.span("fetch_fixings", "TOOL", {"surface": surf, "panels": alloc[surf]}, tool__name="fetch_fixings") as s:
                    try:
                        if surf == "ceiling" and active("ac_swallow"):
                            raise TimeoutError("fixings API: read timed out after 10 s")
                        kit = {"type": "cloud hangers" if surf == "ceiling" else "impaling clips", "sets": alloc[surf]}
                    except TimeoutError:
                        kit = {"type": "none", "sets": 0}
                    fixings[surf] = kit
                    s.value = kit
            with o.span("install_window", "CHAIN", {"panels": n, "start": job["start"]}) as s:
                days = max(1, math.ceil(n / 10))
                start = dt.date.fromisoformat(job["start"])
                end = start + dt.timedelta(days=days if active("ac_obo") else days - 1)
                window = {"start": start.isoformat(), "end": end.isoformat(), "crew_days": days}
                s.value = window
            with o.span("book_crew", "TOOL", window, tool__name="book_crew") as s:
                span_days = (dt.date.fromisoformat(window["end"]) - dt.date.fromisoformat(window["start"])).days + 1
                if span_days != window["crew_days"]:
                    raise RuntimeError(f"HTTP 400 Bad Request: {{\"error\": \"date range {window['start']}..{window['end']} covers {span_days} days but crew_days={window['crew_days']}\"}}")
                s.value = {"booking": f"CRW-{job['room']}-{window['start']}", "days": span_days}
            with o.span("build_crew_notes", "CHAIN", {"site": job["site"]}) as s:
                notes = [f"{job['site']}: access via loading bay, lift available"]
                if active("ac_context"):
                    notes.append(OTHER_SITE_NOTE)
                s.value = notes
            installed = 0
            with o.span("install_crew", "AGENT", {"alloc": alloc}):
                for surf, count in alloc.items():
                    act = json.loads(o.llm("crew_decision", client, [
                        {"role": "user", "content": "CREW" + json.dumps({"surface": surf, "count": count, "notes": notes})}]))
                    with o.span("mount_panels", "TOOL", {"surface": surf, "count": act["count"], "fixings": fixings[surf]}, tool__name="mount_panels") as s:
                        mounted = min(act["count"], fixings[surf]["sets"])
                        installed += mounted
                        s.value = {"surface": surf, "mounted": mounted}
            with o.span("commissioning_rt60", "TOOL", {"room": job["room"], "target_rt60": job["target_rt60"], "installed": installed}, tool__name="measure_rt60") as s:
                vol, a0 = absorption(SCANS[job["room"]])
                rt = round(0.161 * vol / (a0 + installed * PANEL_SABINS), 3)
                s.value = {"rt60_s": rt, "installed": installed}
                if rt > job["target_rt60"] + 0.005 or installed < n:
                    raise RuntimeError(f"commissioning failed: measured RT60 {rt} s exceeds spec {job['target_rt60']} s ({installed} of {n} panels installed)")
    except RuntimeError:
        pass
    o.write(path)


CASES = [
    ("ac_stale", "stale_data", "studio_b", "fetch_room_scan", 1, "tool", "commissioning_rt60", 1,
     "The room scan lookup returns the 2024 scan from before the room was extended, so too few panels are specified."),
    ("ac_obo", "off_by_one", "lecture_3", "install_window", 1, "other", "book_crew", 1,
     "The install window's end date adds the full day count to the start date, one day past the crew days."),
    ("ac_swallow", "swallowed_error", "studio_b", "fetch_fixings", 3, "tool", "commissioning_rt60", 1,
     "A timeout fetching ceiling fixings is caught and replaced by an empty kit, so the ceiling clouds are never mounted."),
    ("ac_context", "context_pollution", "lecture_3", "build_crew_notes", 1, "other", "commissioning_rt60", 1,
     "The crew notes include a note from another site forbidding ceiling clouds, which the crew model obeys."),
    ("ac_plan", "plan_error", "studio_b", "plan_treatment", 1, "llm", "commissioning_rt60", 1,
     "The treatment plan leaves out the ceiling, so the walls cannot hold the panels the room needs."),
]
REFS = ["ref1", "ref2", "ref3", "ref4"]
