"""Rope access firm's facade inspection agent (otlp route): OpenTelemetry spans with OpenInference attributes."""
from __future__ import annotations

import json

from opentelemetry.trace import Status, StatusCode

import common
import kit

NAME = "facade-inspections"
ROUTE = "otlp"
DOMAIN = "a rope access firm's facade inspections"
SHAPE = "OTel + OpenInference: job + anchor register + weather tools, per-drop loop (notes tool, defect LLM, parse), elevation summary, photo upload, report LLM, repair-spec retriever, format, store, validator span"
EXT = "json"

SPECS = {"spalling": "RS-12 break out, treat rebar, patch with R3 mortar", "render crack": "RS-04 rake out and fill with flexible filler",
         "sealant failure": "RS-07 cut out and reseal joint", "loose tile": "RS-09 remove and re-bed tile", "corroded bracket": "RS-15 replace bracket in A4 steel",
         "efflorescence": "RS-02 dry brush and monitor"}


def _j(jid, building, elevation, drops):
    return {"job": jid, "building": building, "elevation": elevation, "inspected": "2026-11-16",
            "drops": [{"drop": i + 1, "notes": n} for i, n in enumerate(drops)]}


INPUTS = {
    "J-601": _j("J-601", "Harbour View Flats", "south", [["render crack at L3 sill, 1.2 m"], ["sealant failure at window W14"], ["spalling at L5 balcony edge, rebar visible"]]),
    "J-602": _j("J-602", "Castle Mills", "east", [["loose tile at L2"], ["efflorescence below L4 parapet"], ["sealant failure at W3", "render crack at L1"]]),
    "J-603": _j("J-603", "Nordby House", "north", [["corroded bracket at L6 cladding rail"], ["render crack at L2"], ["loose tile at L4"], ["spalling at L1 column"]]),
    "J-604": _j("J-604", "Quayside Tower", "west", [["sealant failure at W22"], ["spalling at L8 slab edge"], ["render crack at L7"]]),
    "J-605": _j("J-605", "Elm Court", "south", [["efflorescence at L1"], ["loose tile at L3"], ["render crack at L2 lintel"]]),
    "J-606": _j("J-606", "St Anne's Hospital", "east", [["render crack at L4"], ["corroded bracket at L2 signage"]]),
    "J-607": _j("J-607", "Granary Wharf", "north", [["spalling at L3 nib"], ["sealant failure at W9"], ["loose tile at L5"]]),
    "J-608": _j("J-608", "Linden Lofts", "west", [["efflorescence at basement wall"], ["render crack at L6"], ["sealant failure at W30"]]),
    "J-609": _j("J-609", "Pier House", "south", [["corroded bracket at L1 balustrade"], ["spalling at L2 soffit"]]),
}
REFS = ["J-606", "J-607", "J-608", "J-609"]
SEVERITY = {"spalling": 4, "corroded bracket": 4, "loose tile": 3, "sealant failure": 2, "render crack": 2, "efflorescence": 1}

CASES = [
    dict(case="zzv_rope_01", fault_kind="wrong_retrieval", input="J-601", root=("repair_specs", 1), failure=("validate_inspection", 1),
         description="The repair-spec retriever matches 'spalling' to the render crack spec, so the balcony edge spall gets a filler repair."),
    dict(case="zzv_rope_02", fault_kind="swallowed_error", input="J-602", root=("upload_photos", 1), failure=("validate_inspection", 1),
         description="The photo upload catches the storage service's 413 for the loose tile photos and returns an empty list of photo links."),
    dict(case="zzv_rope_03", fault_kind="format_drift", input="J-603", root=("ChatCompletion", 5), failure=("validate_inspection", 1),
         description="The report model writes the re-inspection date as 16/05/2027 instead of the ISO date the report template holds."),
    dict(case="zzv_rope_04", fault_kind="off_by_one", input="J-604", root=("summarise_elevation", 1), failure=("validate_inspection", 1),
         description="The elevation summary loops over all drops but the last, so the L7 render crack is left out of the defect count."),
    dict(case="zzv_rope_05", fault_kind="hallucinated_value", input="J-605", root=("ChatCompletion", 3), failure=("validate_inspection", 1),
         description="The defect model reads drop 3's note and adds a corroded bracket the technician never wrote, graded severity 4."),
]

CLI = None


def brain(request):
    prompt = common.last_user(request)
    data = common.payload(prompt)
    if prompt.startswith("List the defects"):
        out = []
        for line in data["notes"]:
            kind = next(k for k in SEVERITY if line.startswith(k))
            out.append({"type": kind, "where": line[len(kind):].strip(" ,"), "severity": SEVERITY[kind], "evidence": line})
        if kit.on("zzv_rope_05") and data["drop"] == 3:
            out.append({"type": "corroded bracket", "where": "at L2 fixings", "severity": 4, "evidence": "bracket corrosion at L2 fixings"})
        return json.dumps({"defects": out})
    if prompt.startswith("Write the inspection report"):
        due = "2027-05-16" if data["worst"] >= 4 else "2027-11-16"
        if kit.on("zzv_rope_03"):
            due = f"{due[8:]}/{due[5:7]}/{due[:4]}"
        return json.dumps({"summary": f"{data['building']} {data['elevation']} elevation: {data['count']} defects, worst grade {data['worst']}.",
                           "reinspect_by": due})
    return "Unclear."


def run_job(ot: common.Otel, job: dict):
    def tool(name, fn, **kw):
        return ot.call(name, "TOOL", fn, **kw)

    def chain(name, fn, **kw):
        return ot.call(name, "CHAIN", fn, **kw)

    with ot.span(NAME, "AGENT", {"job": job["job"]}) as root:
        meta = tool("load_job", lambda job_id: {k: v for k, v in INPUTS[job_id].items() if k != "drops"} | {"drops": len(INPUTS[job_id]["drops"])}, job_id=job["job"])
        tool("anchor_register", lambda building: {"building": building, "anchors_tested": "2026-10-01", "rated_kn": 15}, building=meta["building"])
        tool("weather_window", lambda date: {"date": date, "wind_mps": 7, "ok": True}, date=meta["inspected"])
        defects = []
        for d in job["drops"]:
            notes = tool("drop_notes", lambda job_id, drop: INPUTS[job_id]["drops"][drop - 1]["notes"], job_id=job["job"], drop=d["drop"])
            with ot.span("classify_drop", "CHAIN", {"drop": d["drop"], "notes": notes}) as sp:
                raw = common.ask(CLI, "You grade facade defects for Skyline Rope Access.", "List the defects in these drop notes as JSON.",
                                 {"drop": d["drop"], "notes": notes})
                sp.set_attribute("output.value", raw)
            parsed = chain("parse_defects", lambda raw, drop: [{"drop": drop, **x} for x in json.loads(raw)["defects"]], raw=raw, drop=d["drop"])
            defects.append(parsed)

        def summarise(per_drop):
            n = len(per_drop) - 1 if kit.on("zzv_rope_04") else len(per_drop)
            flat = [x for i in range(n) for x in per_drop[i]]
            return {"count": len(flat), "worst": max(x["severity"] for x in flat), "types": sorted({x["type"] for x in flat}), "defects": flat}

        summary = chain("summarise_elevation", summarise, per_drop=defects)

        def upload(job_id, defects):
            links = []
            for x in defects:
                if x["severity"] >= 3:
                    try:
                        if kit.on("zzv_rope_02") and x["type"] == "loose tile":
                            raise OSError("413 payload too large")
                        links.append(f"https://photos.skyline.example/{job_id}/d{x['drop']}-{x['type'].replace(' ', '-')}.jpg")
                    except OSError:
                        return {"links": []}
            return {"links": links}

        photos = tool("upload_photos", upload, job_id=job["job"], defects=summary["defects"])

        def specs(types):
            out = {}
            for t in types:
                key = "render crack" if (kit.on("zzv_rope_01") and t == "spalling") else t
                out[t] = SPECS[key]
            return out

        with ot.span("write_report", "CHAIN", {"count": summary["count"], "worst": summary["worst"]}) as sp:
            raw = common.ask(CLI, "You write facade inspection reports for Skyline Rope Access.", "Write the inspection report as JSON.",
                             {"building": meta["building"], "elevation": meta["elevation"], "count": summary["count"], "worst": summary["worst"]})
            sp.set_attribute("output.value", raw)
        with ot.span("repair_specs", "RETRIEVER", {"types": summary["types"]}) as sp:
            found = specs(summary["types"])
            for i, (t, spec) in enumerate(found.items()):
                sp.set_attribute(f"retrieval.documents.{i}.document.id", t)
                sp.set_attribute(f"retrieval.documents.{i}.document.content", spec)
        report = chain("format_report", lambda raw, specs, photos: json.loads(raw) | {"repairs": specs, "photos": photos["links"]},
                       raw=raw, specs=found, photos=photos)
        tool("store_report", lambda job_id, report: {"job": job_id, "stored": True, "pages": 3 + len(report["repairs"])}, job_id=job["job"], report=report)

        def validate(job_id, summary, report):
            notes = [n for d in INPUTS[job_id]["drops"] for n in d["notes"]]
            if summary["count"] != len(notes):
                raise ValueError(f"{job_id}: {summary['count']} defects reported, {len(notes)} noted on the ropes")
            for x in summary["defects"]:
                if x["evidence"] not in notes:
                    raise ValueError(f"{job_id}: drop {x['drop']} {x['type']} not in the technician's notes")
                if SPECS[x["type"]][:5] != report["repairs"][x["type"]][:5]:
                    raise ValueError(f"{job_id}: {x['type']} given repair {report['repairs'][x['type']][:5]}, spec {SPECS[x['type']][:5]}")
            big = [x for x in summary["defects"] if x["severity"] >= 3]
            if len(report["photos"]) < len(big):
                raise ValueError(f"{job_id}: {len(big)} grade 3+ defects, {len(report['photos'])} photo links")
            d = report["reinspect_by"]
            if len(d) != 10 or d[4] != "-" or d[7] != "-":
                raise ValueError(f"{job_id}: re-inspection date {d!r} is not YYYY-MM-DD")
            return {"ok": True}

        chain("validate_inspection", validate, job_id=job["job"], summary=summary, report=report)
        root.set_attribute("output.value", json.dumps({"job": job["job"], "status": "issued"}))
        root.set_status(Status(StatusCode.OK))


OT = None


def record(server, key: str, out: str) -> None:
    global CLI, OT
    if OT is None:
        OT = common.Otel(NAME)
    server.use(brain)
    with OT as ot:
        CLI = common.client(server)
        try:
            run_job(ot, INPUTS[key])
        except ValueError:
            pass
    OT.write(out)
