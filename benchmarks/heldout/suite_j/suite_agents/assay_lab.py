"""Mining assay lab (route: sdk): a batch of drill-core samples becomes a certificate of analysis.

Parse the chain-of-custody manifest, recall the client's standing instructions, let the model plan
the assay methods, queue the instruments, read their exports (a file share that is sometimes locked,
retried), convert every reading to reporting units, check the field duplicates, let the model draft
the certificate header and upload the certificate to the client's LIMS.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trajdebug

from ..harness import AgentSpec, Fault, active, extract_json, last_user, system_text
from ..routes import openai_client, sdk_chat


NAME = "assay-lab-reporter"
ACCREDITED = {("Au", "FA50-AAS"), ("Cu", "4A-ICP"), ("Ag", "4A-ICP"), ("Zn", "4A-ICP")}
NOTES = {
    "Kestrel Gold Ltd": ["Report Au in g/t to two decimals.", "Email certificates to qaqc@kestrelgold.example."],
    "Kingfisher Gold Corp": ["Report Au in oz/t (troy), three decimals, per the 2019 supply agreement."],
    "Basalt Copper Pty": ["Report Cu in percent; Ag in g/t."],
    "Ironbark Minerals": ["Report Au in g/t; Zn in percent."],
}


def batch(batch_id: str, client: str, hole: str, start: int, extra: dict[int, str], dup: int) -> dict[str, Any]:
    samples = []
    for k in range(10):
        sid = f"{hole}-{start + k:03d}"
        samples.append({"sample": sid, "from_m": 100.0 + 1.5 * k, "analytes": extra.get(k, "Au+Cu")})
    samples.append({"sample": f"{hole}-{start + dup:03d}D", "from_m": 100.0 + 1.5 * dup,
                    "analytes": extra.get(dup, "Au+Cu")})
    return {"batch": batch_id, "client": client, "samples": samples}


INPUTS = [
    batch("KG-0412", "Kestrel Gold Ltd", "DH114", 20, {7: "Au+Cu+Ag"}, 3),
    batch("KG-0415", "Kestrel Gold Ltd", "DH205", 9, {}, 5),
    batch("BC-0087", "Basalt Copper Pty", "BC031", 40, dict.fromkeys(range(10), "Cu+Ag"), 2),
    batch("KG-0418", "Kestrel Gold Ltd", "DH117", 51, {}, 8),
    batch("IM-0230", "Ironbark Minerals", "IB009", 12, dict.fromkeys(range(10), "Au+Zn"), 4),
]
REFS = [
    batch("KG-0421", "Kestrel Gold Ltd", "DH118", 3, {2: "Au+Cu+Ag"}, 6),
    batch("BC-0090", "Basalt Copper Pty", "BC033", 70, dict.fromkeys(range(10), "Cu+Ag"), 1),
    batch("IM-0233", "Ironbark Minerals", "IB011", 30, dict.fromkeys(range(10), "Au+Zn"), 7),
    batch("KG-0424", "Kestrel Gold Ltd", "DH121", 88, {}, 0),
]
BY_BATCH = {b["batch"]: b for b in INPUTS + REFS}
# The sample whose fire-assay reading is over the AAS range (a gravimetric finish reports it).
OVER_RANGE = {"DH205-014": 12.84, "DH205-014D": 12.61}


class FileLocked(OSError):
    pass


class OverRange(ValueError):
    pass


class QCFailure(AssertionError):
    pass


class LimsRejected(RuntimeError):
    pass


def grade(sample: str, analyte: str) -> float:
    base = sample.removesuffix("D")
    h = sum(ord(c) * (i + 3) for i, c in enumerate(base + analyte))
    if analyte == "Au":
        return OVER_RANGE.get(sample, round(0.2 + (h % 470) / 100, 2))
    if analyte in ("Cu", "Zn"):
        return round(0.05 + (h % 180) / 100, 2)
    return round(1 + (h % 90) / 10, 1)


def policy(request: Any) -> str:
    system, user = system_text(request), last_user(request)
    data = extract_json(user)
    if system.startswith("You plan assays"):
        analytes = sorted({a for s in data["samples"] for a in s["analytes"]})
        methods = {a: ("FA50-AAS" if a == "Au" else "4A-ICP") for a in analytes}
        if "Au" in methods and active("ay-plan"):
            methods["Au"] = "4A-ICP"
        return json.dumps({"methods": methods, "note": "fire assay for gold, four-acid digest for base metals"})
    notes = " ".join(data["notes"])
    units = dict.fromkeys(data["analytes"], "g/t")
    for a in data["analytes"]:
        if a in ("Cu", "Zn"):
            units[a] = "%"
    if "Au" in units and "oz/t" in notes:
        units["Au"] = "oz/t"
    return json.dumps({"client": data["client"], "batch": data["batch"], "units": units,
                       "title": f"Certificate of Analysis {data['batch']}"})


@trajdebug.step(kind="input")
def receive_batch(item: dict[str, Any]) -> str:
    lines = [f"CHAIN OF CUSTODY {item['batch']} / {item['client']}"]
    lines += [f"{s['sample']} | {s['from_m']:.1f}-{s['from_m'] + 1.5:.1f} m | {s['analytes']}" for s in item["samples"]]
    return "\n".join(lines)


@trajdebug.step(kind="parse")
def parse_manifest(text: str) -> dict[str, Any]:
    head, *rows = text.splitlines()
    batch_id, client = head.removeprefix("CHAIN OF CUSTODY ").split(" / ")
    samples = []
    for row in rows:
        sid, interval, analytes = (p.strip() for p in row.split("|"))
        if active("ay-analytes"):
            found = re.match(r"([A-Z][a-z])\+([A-Z][a-z])", analytes)
            names = list(found.groups())
        else:
            names = analytes.split("+")
        samples.append({"sample": sid, "analytes": names, "interval": interval})
    return {"batch": batch_id, "client": client, "samples": samples}


@trajdebug.step(kind="retrieval")
def recall_client_notes(client: str) -> list[dict[str, str]]:
    # notes are filed under the client's name; the search index keys them on its second word
    key = client.split()[1] if active("ay-notes") else client
    return [{"client": c, "note": n} for c, notes in NOTES.items() if key in c.split() or c == key for n in notes]


@trajdebug.step(kind="parse")
def parse_assay_plan(text: str) -> dict[str, str]:
    return dict(json.loads(text)["methods"])


@trajdebug.step(kind="tool")
def queue_instrument(method: str, batch_id: str, jobs: list[list[str]]) -> dict[str, Any]:
    return {"queue": method, "batch": batch_id, "accepted": len(jobs), "job": f"{method}-{batch_id}"}


@trajdebug.step(kind="tool")
def read_instrument_export(method: str, jobs: list[list[str]], attempt: int) -> dict[str, Any]:
    if method == "4A-ICP" and attempt == 1:
        raise FileLocked(f"\\\\lab-fs01\\exports\\{method}.csv is locked by the instrument PC")
    rows = []
    for sample, analyte in jobs:
        g = grade(sample, analyte)
        if method == "FA50-AAS":
            # field duplicates are fused from a half charge, so they stay inside the AAS range
            over = g > 10 and not sample.endswith("D")
            rows.append({"sample": sample, "analyte": analyte, "value": "OVR" if over else round(g * 1000),
                         "unit": "ppb", "grav_gpt": g if over else None})
        else:
            rows.append({"sample": sample, "analyte": analyte, "unit": "ppm",
                         "value": round(g * 10000) if analyte in ("Cu", "Zn") else g})
    if method == "4A-ICP" and active("ay-export"):
        rows = rows[:16]
    return {"file": f"{method}.csv", "row_count": len(rows), "rows": rows}


def _to_reporting(row: dict[str, Any]) -> float:
    if row["value"] == "OVR":
        raise OverRange(f"{row['sample']} {row['analyte']} above the AAS calibration range")
    if row["analyte"] in ("Cu", "Zn"):
        return round(row["value"] / 10000, 3)
    return round(row["value"] / 1000, 3) if row["unit"] == "ppb" else float(row["value"])


@trajdebug.step(kind="parse")
def normalize_reading(sample: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {"sample": sample["sample"]}
    for analyte in sample["analytes"]:
        row = next((r for r in rows if r["sample"] == sample["sample"] and r["analyte"] == analyte), None)
        if row is None:
            result[analyte] = None
            continue
        try:
            result[analyte] = _to_reporting(row)
        except OverRange:
            # the gravimetric finish reports samples over the AAS range
            result[analyte] = 10.0 if active("ay-dilution") else row["grav_gpt"]
    return result


@trajdebug.step(kind="condition")
def check_duplicates(results: list[dict[str, Any]]) -> dict[str, Any]:
    by_id = {r["sample"]: r for r in results}
    checked = 0
    for r in results:
        orig = by_id.get(r["sample"].removesuffix("D")) if r["sample"].endswith("D") else None
        if orig is None:
            continue
        for analyte, value in r.items():
            if analyte == "sample" or value is None or orig.get(analyte) is None:
                continue
            diff = abs(value - orig[analyte]) / max((value + orig[analyte]) / 2, 1e-9)
            if diff > 0.1:
                raise QCFailure(f"field duplicate {r['sample']} {analyte} differs {diff:.0%} from its original "
                                f"({value} vs {orig[analyte]}); batch held for re-assay")
            checked += 1
    return {"pairs_checked": checked, "status": "within tolerance"}


@trajdebug.step(kind="tool")
def upload_certificate(header: dict[str, Any], methods: dict[str, str], results: list[dict[str, Any]],
                       manifest: str) -> dict[str, Any]:
    for analyte, method in methods.items():
        if (analyte, method) not in ACCREDITED:
            raise LimsRejected(f"LIMS: {analyte} by {method} is outside the lab's ISO 17025 scope")
    if header["units"].get("Au", "g/t") != "g/t":
        raise LimsRejected(f"LIMS: Au reported in {header['units']['Au']}; the client's contract requires g/t")
    missing = [r["sample"] for r in results if any(v is None for k, v in r.items() if k != "sample")]
    if missing:
        raise LimsRejected(f"LIMS: {len(missing)} samples have no reported value: {', '.join(missing)}")
    for line in manifest.splitlines()[1:]:
        sid, _, analytes = (p.strip() for p in line.split("|"))
        got = next(r for r in results if r["sample"] == sid)
        for a in analytes.split("+"):
            if a not in got:
                raise LimsRejected(f"LIMS: {sid} has {a} on the chain of custody but not on the certificate")
    return {"certificate": f"COA-{header['batch']}", "samples": len(results), "status": "accepted"}


def run(server: Any, item: dict[str, Any], path: Path) -> None:
    server.use(policy)
    client = openai_client(server)
    try:
        with trajdebug.run(NAME, path=str(path), task=f"certify assay batch {item['batch']}"):
            manifest = receive_batch(item)
            batch_ = parse_manifest(manifest)
            notes = recall_client_notes(batch_["client"])
            plan_text = sdk_chat(client, "plan_assays", [
                {"role": "system", "content": "You plan assays for a mining lab. Answer JSON: methods (analyte -> method)."},
                {"role": "user", "content": "Batch: " + json.dumps({"samples": batch_["samples"]})}])
            methods = parse_assay_plan(plan_text)
            by_method: dict[str, list[list[str]]] = {}
            for s in batch_["samples"]:
                for a in s["analytes"]:
                    by_method.setdefault(methods[a], []).append([s["sample"], a])
            rows: list[dict[str, Any]] = []
            for method, jobs in sorted(by_method.items(), reverse=True):
                queue_instrument(method, batch_["batch"], jobs)
                for attempt in (1, 2, 3):
                    try:
                        rows += read_instrument_export(method, jobs, attempt)["rows"]
                        break
                    except FileLocked:
                        continue
            results = [normalize_reading(s, rows) for s in batch_["samples"]]
            check_duplicates(results)
            analytes = sorted({a for s in batch_["samples"] for a in s["analytes"]})
            header_text = sdk_chat(client, "draft_certificate_header", [
                {"role": "system", "content": "You draft certificate headers for an assay lab, following the "
                                              "client's standing notes. Answer JSON: client, batch, units, title."},
                {"role": "user", "content": "Header request: " + json.dumps(
                    {"client": batch_["client"], "batch": batch_["batch"], "analytes": analytes,
                     "notes": [n["note"] for n in notes]})}])
            header = json.loads(header_text)
            upload_certificate(header, methods, results, manifest)
    except (QCFailure, LimsRejected):
        pass


SPEC = AgentSpec(
    name=NAME, route="sdk", domain="mining assay lab", inputs=INPUTS, ref_inputs=REFS, run=run,
    faults=[
        Fault("ay-analytes", "lossy_parsing", 0, "parse_manifest",
              '"sample": "DH114-027", "analytes": ["Au", "Cu"]',
              "a two-analyte pattern drops Ag from the one sample that asked for three"),
        Fault("ay-dilution", "swallowed_error", 1, "normalize_reading", '"Au": 10.0',
              "an over-range reading is capped at the calibration top instead of the gravimetric value"),
        Fault("ay-export", "truncated_result", 2, "read_instrument_export", '"row_count": 16',
              "the ICP export, read again after the file lock, is read short; the LIMS refuses samples with no value"),
        Fault("ay-notes", "context_pollution", 3, "recall_client_notes", "Kingfisher Gold Corp",
              "another client's note joins the recall; the model writes oz/t"),
        Fault("ay-plan", "plan_error", 4, "plan_assays", '\\"Au\\": \\"4A-ICP\\"',
              "the model plans gold by four-acid ICP, outside the accreditation scope"),
    ],
)
