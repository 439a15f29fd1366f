"""Audiobook production studio: master narrated chapters and deliver a title to retail (OpenTelemetry/OpenInference route)."""

from __future__ import annotations

import json

import common
from common import span

RUN_NAME = "audiobook-mastering"
ROUTE = "otlp"
DOMAIN = "audiobook production studio: chapter loudness mastering, chapter markers, retail metadata and delivery"
SHAPE = "OTel spans: manuscript retriever, per-chapter loudness tool, mastering-plan LLM + parser, per-chapter mastering tool and QC guardrail, marker builder, notes retriever, blurb LLM, metadata guardrail, upload tool"
SWITCH = None

TITLES = {
    "AB-771": {"title": "The Lantern Keeper", "author": "Ines Faro", "narrator": "Tomas Reyes",
               "chapters": [("Opening", 1510, -22.4, -4.1), ("The Lamp Room", 1890, -24.0, -5.0), ("Fog", 1720, -24.8, -2.2),
                            ("The Inspector", 2010, -21.2, -3.9), ("Low Tide", 1650, -23.1, -4.4)]},
    "AB-772": {"title": "Paper Birds", "author": "Hanna Lund", "narrator": "Ola Berg",
               "chapters": [("One", 1200, -20.0, -3.5), ("Two", 1340, -21.5, -4.2), ("Three", 1280, -22.8, -4.8),
                            ("Four", 1410, -20.9, -3.8)]},
    "AB-773": {"title": "Salt Archive", "author": "Deniz Aksoy", "narrator": "Priya Nair",
               "chapters": [("Prologue", 600, -23.5, -5.2), ("Ledger", 1800, -21.0, -4.0), ("Harbour Master", 1950, -20.4, -3.7),
                            ("Auction", 1700, -22.2, -4.6), ("Epilogue", 700, -24.1, -5.5)]},
    "AB-774": {"title": "Winter Choir", "author": "Mats Eriksen", "narrator": "Claire Dubois",
               "chapters": [("Advent", 1600, -21.8, -4.3), ("Rehearsal", 1750, -19.8, -3.4), ("Solo", 1500, -22.6, -4.7)]},
    "AB-775": {"title": "The Glass Road", "author": "Rui Matos", "narrator": "Ada Okoro",
               "chapters": [("Departure", 1450, -21.1, -3.9), ("Border", 1620, -23.4, -5.1), ("Kiln Town", 1580, -20.6, -3.7),
                            ("Night Bus", 1390, -22.0, -4.5), ("Arrival", 1300, -21.7, -4.0), ("Afterword", 420, -24.5, -5.8)]},
}
INPUTS = [{"title_id": k, "retailer": r} for k, r in zip(TITLES, ("Audible", "Kobo", "Apple Books", "Audible", "Storytel"))]
TARGET_RMS, MAX_PEAK = -20.0, -3.0


def brain(request):
    system = common.system_of(request)
    ask = json.loads(common.last_user(request))
    if system.startswith("You plan audiobook mastering"):
        plan = []
        for m in ask["measurements"]:
            gain = round(TARGET_RMS - m["rms_db"], 1)
            limit = m["peak_db"] + gain > MAX_PEAK
            plan.append({"chapter": m["chapter"], "gain_db": f"{gain:+.1f} dB" if SWITCH == "zk-book-3" else gain,
                         "limiter": limit})
        return json.dumps({"plan": plan})
    if system.startswith("Write the retail description"):
        notes = ask["notes"]
        narrator = notes[-1]["narrator"]
        return (f"{ask['title']} by {ask['author']}, read by {narrator}. {len(ask['chapters'])} chapters of "
                f"quiet suspense.")
    return "ok"


def run_title(inp: dict) -> None:
    t = TITLES[inp["title_id"]]
    with span(RUN_NAME, "AGENT", inp, metadata=json.dumps({"task": f"master and deliver {inp['title_id']} to {inp['retailer']}"})):
        with span("load_manuscript", "RETRIEVER", {"title_id": inp["title_id"]}) as s:
            chapters = [{"id": f"{inp['title_id']}-{i + 1:02d}", "chapter": c[0], "seconds": c[1]}
                        for i, c in enumerate(t["chapters"])]
            if SWITCH == "zk-book-2":
                chapters = chapters[:4]
            s["out"] = chapters
        measurements = []
        for i, ch in enumerate(chapters):
            with span("measure_loudness", "TOOL", {"file": ch["id"]}) as m:
                _, _, rms, peak = t["chapters"][i]
                reading = {"chapter": ch["chapter"], "rms_db": rms, "peak_db": peak}
                if SWITCH == "zk-book-1" and i == 2:
                    reading = {"chapter": ch["chapter"], "rms_db": TARGET_RMS, "peak_db": MAX_PEAK,
                               "meter": "no reading (file lock); defaults used"}
                m["out"] = reading
            measurements.append(m["out"])
        reply = common.CLIENT.chat.completions.create(model=common.MODEL, messages=[
            {"role": "system", "content": "You plan audiobook mastering: gain per chapter to -20 dB RMS, peaks under -3 dB."},
            {"role": "user", "content": json.dumps({"title": t["title"], "measurements": measurements})}])
        with span("parse_mastering_plan", "CHAIN", reply.choices[0].message.content) as p:
            p["out"] = json.loads(reply.choices[0].message.content)["plan"]
        for i, (ch, step) in enumerate(zip(chapters, p["out"])):
            with span("apply_mastering", "TOOL", {"file": ch["id"], **step}) as a:
                if not isinstance(step["gain_db"], (int, float)):
                    raise ValueError(f"gain for {ch['id']} must be a number of dB, got {step['gain_db']!r}")
                _, _, rms, peak = t["chapters"][i]
                out_peak = peak + step["gain_db"]
                if step["limiter"]:
                    out_peak = min(out_peak, MAX_PEAK - 0.5)
                a["out"] = {"file": ch["id"], "rms_db": round(rms + step["gain_db"], 1), "peak_db": round(out_peak, 1)}
            with span("qc_chapter", "GUARDRAIL", a["out"]) as q:
                if a["out"]["peak_db"] > MAX_PEAK or abs(a["out"]["rms_db"] - TARGET_RMS) > 2:
                    raise ValueError(f"{ch['id']} fails retail QC: RMS {a['out']['rms_db']} dB, peak {a['out']['peak_db']} dB "
                                     f"(needs -23..-18 dB RMS, peak under {MAX_PEAK} dB)")
                q["out"] = {"file": ch["id"], "qc": "pass"}
        with span("build_chapter_markers", "CHAIN", {"chapters": chapters}) as b:
            markers, at = [], 0
            for k, ch in enumerate(chapters):
                start = at + (chapters[k]["seconds"] if SWITCH == "zk-book-4" else 0)
                markers.append({"chapter": ch["chapter"], "start_s": start})
                at += ch["seconds"]
            b["out"] = {"markers": markers, "total_s": at}
        with span("load_project_notes", "RETRIEVER", {"title_id": inp["title_id"]}) as n:
            notes = [{"id": f"note-{inp['title_id']}", "narrator": t["narrator"], "title": t["title"]}]
            if SWITCH == "zk-book-5":
                notes.append({"id": "note-AB-772", "narrator": TITLES["AB-772"]["narrator"], "title": TITLES["AB-772"]["title"]})
            n["out"] = notes
        blurb = common.CLIENT.chat.completions.create(model=common.MODEL, messages=[
            {"role": "system", "content": "Write the retail description of the audiobook from the project notes."},
            {"role": "user", "content": json.dumps({"title": t["title"], "author": t["author"], "chapters": [c["chapter"] for c in chapters],
                                                    "notes": n["out"]})}]).choices[0].message.content
        with span("check_metadata", "GUARDRAIL", {"description": blurb, "narrator": t["narrator"]}) as c:
            if t["narrator"] not in blurb:
                raise ValueError(f"description credits a narrator other than {t['narrator']}, who reads this title")
            c["out"] = {"metadata": "pass"}
        with span("upload_to_retailer", "TOOL", {"retailer": inp["retailer"], "files": len(chapters), **b["out"]}) as u:
            expected = len(t["chapters"])
            if len(chapters) != expected:
                raise ValueError(f"{inp['retailer']} rejects {inp['title_id']}: {len(chapters)} audio files, the "
                                 f"table of contents lists {expected}")
            for mk in b["out"]["markers"]:
                if mk["start_s"] >= b["out"]["total_s"]:
                    raise ValueError(f"chapter marker '{mk['chapter']}' at {mk['start_s']} s is past the end of the "
                                     f"book ({b['out']['total_s']} s)")
            u["out"] = {"retailer": inp["retailer"], "status": "in review", "files": len(chapters)}


def record(inp: dict, path: str) -> None:
    common.SPANS.clear()
    try:
        run_title(inp)
    except ValueError:
        pass
    common.otlp_write(path)


CASES = [
    {"case": "zk-book-1", "input": 0, "switch": "zk-book-1", "fault_kind": "swallowed_error",
     "root": ("measure_loudness", 3, "tool"), "failure": ("qc_chapter", 3),
     "description": "The loudness meter cannot read chapter 3 and answers the target values as its reading, so "
                    "the chapter gets no gain or limiting and fails retail QC on its real peak."},
    {"case": "zk-book-2", "input": 4, "switch": "zk-book-2", "fault_kind": "truncated_result",
     "root": ("load_manuscript", 1, "retrieval"), "failure": ("upload_to_retailer", 1),
     "description": "The manuscript lookup returns only the first four of six chapters, and the retailer rejects "
                    "an upload whose file count does not match the table of contents."},
    {"case": "zk-book-3", "input": 2, "switch": "zk-book-3", "fault_kind": "format_drift",
     "root": ("ChatCompletion", 1, "llm"), "failure": ("apply_mastering", 1),
     "description": "The mastering planner writes each gain as text ('+3.5 dB') instead of a number, and the "
                    "mastering tool cannot apply it."},
    {"case": "zk-book-4", "input": 3, "switch": "zk-book-4", "fault_kind": "off_by_one",
     "root": ("build_chapter_markers", 1, "other"), "failure": ("upload_to_retailer", 1),
     "description": "The marker builder starts each chapter at the end of that same chapter (one chapter late), "
                    "so the last marker falls past the end of the book and the upload is rejected."},
    {"case": "zk-book-5", "input": 0, "switch": "zk-book-5", "fault_kind": "context_pollution",
     "root": ("load_project_notes", 1, "retrieval"), "failure": ("check_metadata", 1),
     "description": "The project-notes lookup also returns the notes of Paper Birds, and the description model "
                    "credits that book's narrator Ola Berg instead of Tomas Reyes."},
]
