"""Gramophone restoration (otlp route): bench-test a machine, price the parts through a buyer sub-agent,
send the customer an estimate. Traced with OpenTelemetry spans in the OpenInference conventions."""

from __future__ import annotations

import json
from pathlib import Path

from .common import Case, OtlpTrace, last_user_text, system_text, write_otlp
from .kit import active

AGENT = "gramophone-workbench"
ROUTE = "otlp"
EXT = "json"
BASE_URL = ""

MANUALS = [
    {"doc": "HMV 102 service sheet", "model": "HMV 102", "spring": "7/8in x 10ft", "soundbox": "No. 4", "gasket_mm": 49},
    {"doc": "HMV 101 service sheet", "model": "HMV 101", "spring": "3/4in x 10ft", "soundbox": "No. 4", "gasket_mm": 49},
    {"doc": "Decca Model 50 service sheet", "model": "Decca 50", "spring": "3/4in x 8ft", "soundbox": "Decca 2", "gasket_mm": 44},
    {"doc": "Columbia 201 service sheet", "model": "Columbia 201", "spring": "7/8in x 12ft", "soundbox": "No. 9", "gasket_mm": 51},
    {"doc": "HMV 130 service sheet", "model": "HMV 130", "spring": "1in x 12ft", "soundbox": "No. 5a", "gasket_mm": 52},
]
BENCH = {  # per machine: component -> (reading, verdict the bench implies)
    "GJ-5521": {"motor": "runs 2 min 40 s per wind (spec 4 min)", "governor": "speed 78.2 rpm, steady",
                "soundbox": "gasket hard, diaphragm cracked", "tonearm": "free swing, airtight", "cabinet": "veneer lift 3 cm"},
    "GJ-5604": {"motor": "runs 4 min 10 s per wind", "governor": "hunting 74-81 rpm",
                "soundbox": "gasket hard, diaphragm sound", "tonearm": "free swing, airtight", "cabinet": "sound"},
    "GJ-5390": {"motor": "runs 4 min 05 s per wind", "governor": "speed 78.0 rpm, steady",
                "soundbox": "gasket supple", "tonearm": "elbow leaks", "cabinet": "sound"},
    "GJ-5712": {"motor": "runs 1 min 50 s per wind", "governor": "speed 77.9 rpm, steady",
                "soundbox": "gasket supple", "tonearm": "free swing, airtight", "cabinet": "veneer lift 1 cm"},
    "GJ-5820": {"motor": "runs 4 min 20 s per wind", "governor": "hunting 72-80 rpm",
                "soundbox": "diaphragm cracked", "tonearm": "free swing, airtight", "cabinet": "sound"},
    "GJ-5903": {"motor": "runs 3 min 00 s per wind", "governor": "speed 78.1 rpm, steady",
                "soundbox": "gasket hard", "tonearm": "free swing, airtight", "cabinet": "sound"},
}
INPUTS = {
    "hmv102": {"job": "GJ-5521", "model": "HMV 102", "customer": "E. Marsh"},
    "columbia": {"job": "GJ-5604", "model": "Columbia 201", "customer": "T. Adeyemi"},
    "ref_decca": {"job": "GJ-5390", "model": "Decca 50", "customer": "P. Hughes"},
    "ref_hmv130": {"job": "GJ-5712", "model": "HMV 130", "customer": "K. Obi"},
    "ref_hmv101": {"job": "GJ-5820", "model": "HMV 101", "customer": "R. Sato"},
    "ref_col": {"job": "GJ-5903", "model": "Columbia 201", "customer": "A. Brandt"},
}
PRICES_2026 = {"mainspring": 38.0, "gasket": 6.5, "diaphragm": 24.0, "governor kit": 19.0, "elbow seal": 4.0, "veneer": 15.0}
PRICES_2024 = {"mainspring": 31.0, "gasket": 5.0, "diaphragm": 19.5, "governor kit": 16.0, "elbow seal": 3.5, "veneer": 12.0}
PART_FOR = {"motor": "mainspring", "governor": "governor kit", "soundbox": "gasket", "tonearm": "elbow seal", "cabinet": "veneer"}


class PortalError(Exception):
    """The customer portal refused the estimate."""


def policy(request):
    sys_t, user = system_text(request), last_user_text(request)
    if "diagnose one component" in sys_t:
        r = json.loads(user.split("READING:", 1)[1])
        text = r["reading"]
        bad = any(w in text for w in ("hard", "cracked", "hunting", "leaks", "lift")) or (
            "per wind" in text and int(text.split()[1]) < 4)
        return f"VERDICT: {'REPLACE' if bad else 'OK'} {r['component']}"
    if "choose a parts supplier" in sys_t:
        return "SUPPLIER: Talking Machine Spares"
    if "write the estimate" in sys_t:
        facts = json.loads(user.split("FACTS:", 1)[1])
        lines = ["ESTIMATE " + facts["job"]]
        for w in facts["work"]:
            if active("gramophone.fd_estimate"):
                lines.append(f"{w['part']} | {w['component']} | {w['action']} | {w['price']:.2f}")
            else:
                lines.append(f"{w['component']} | {w['action']} | {w['part']} | {w['price']:.2f}")
        return "\n".join(lines)
    return "?"


def _run(tr: OtlpTrace, key: str) -> None:
    job = INPUTS[key]
    with tr.span(AGENT, "AGENT", job, agent__name=AGENT) as root:
        with tr.span("intake_job", "CHAIN", job) as s:
            ticket = s.out({**job, "components": list(PART_FOR)})
        with tr.span("lookup_model_specs", "RETRIEVER", job["model"]) as s:
            hits = [m for m in MANUALS if m["model"] == job["model"]]
            if active("gramophone.wret_manual"):
                hits = sorted(MANUALS, key=lambda m: (m["model"] != "HMV 101", m["doc"]))
            spec = s.out(hits[0])
        memory: dict = {}
        for comp in ticket["components"]:
            with tr.span("bench_test", "TOOL", {"job": job["job"], "component": comp}, tool__name="bench_test") as s:
                reading = s.out({"component": comp, "reading": BENCH[job["job"]][comp]})
            verdict = tr.llm("diagnose_component", BASE_URL, "You diagnose one component of a gramophone from its bench reading.",
                             "READING:" + json.dumps(reading))
            with tr.span("log_component", "CHAIN", {"component": comp, "verdict": verdict}) as s:
                action = verdict.split()[1]
                if active("gramophone.bmw_log") and comp == "soundbox":
                    action = "OK"
                memory[comp] = {"action": action, "reading": reading["reading"]}
                s.out(memory[comp])
        needed = [c for c, m in memory.items() if m["action"] == "REPLACE"]
        with tr.span("parts_buyer", "AGENT", {"components": needed}, agent__name="parts_buyer") as buyer:
            supplier = tr.llm("choose_supplier", BASE_URL, "You choose a parts supplier for gramophone parts.",
                              "PARTS:" + json.dumps(needed))
            with tr.span("fetch_parts_prices", "TOOL", {"supplier": supplier, "parts": [PART_FOR[c] for c in needed]},
                         tool__name="fetch_parts_prices") as s:
                table, listed = (PRICES_2024, "PL-2024-11") if active("gramophone.sd_prices") else (PRICES_2026, "PL-2026-03")
                prices = s.out({"list": listed, "prices": {PART_FOR[c]: table[PART_FOR[c]] for c in needed}})
            with tr.span("reserve_parts", "TOOL", {"parts": prices["prices"], "spring": spec["spring"]},
                         tool__name="reserve_parts") as s:
                reservation = s.out({"reservation": f"RS-{job['job'][-4:]}", "spring": spec["spring"],
                                     "parts": sorted(prices["prices"])})
            buyer.out({"prices": prices, "reservation": reservation})
        work = [{"component": c, "action": "REPLACE", "part": PART_FOR[c] if c != "motor" else f"mainspring {spec['spring']}",
                 "price": prices["prices"][PART_FOR[c]]} for c in needed]
        text = tr.llm("write_estimate", BASE_URL, "You write the estimate, one line per component.",
                      "FACTS:" + json.dumps({"job": job["job"], "work": work}))
        with tr.span("parse_estimate", "CHAIN", text) as s:
            lines = []
            for row in text.splitlines()[1:]:
                cells = [c.strip() for c in row.split("|")]
                if active("gramophone.lp_estimate") and len(cells[2].split()) > 1:
                    continue
                lines.append({"component": cells[0], "action": cells[1], "part": cells[2], "price": float(cells[3])})
            s.out(lines)
        with tr.span("send_estimate", "TOOL", {"job": job["job"], "lines": lines, "price_list": prices["list"]},
                     tool__name="send_estimate") as s:
            s.out(_portal(job, lines, prices["list"], memory_readings={c: BENCH[job["job"]][c] for c in PART_FOR}))
        root.out({"job": job["job"], "estimate_lines": len(lines)})


def _portal(job: dict, lines: list[dict], price_list: str, memory_readings: dict) -> dict:
    errs = []
    spec = next(m for m in MANUALS if m["model"] == job["model"])
    comps = {ln["component"] for ln in lines}
    for ln in lines:
        if ln["component"] not in PART_FOR:
            errs.append(f"line '{ln['component']}' names no component of job {job['job']}")
        if ln["component"] == "motor" and spec["spring"] not in ln["part"]:
            errs.append(f"{ln['part']} does not fit the {job['model']} barrel (needs {spec['spring']})")
    for comp, reading in memory_readings.items():
        flagged = any(w in reading for w in ("hard", "cracked", "hunting", "leaks", "lift"))
        if reading.startswith("runs ") and int(reading.split()[1]) < 4:
            flagged = True  # a spring that runs under 4 minutes per wind is tired
        if flagged and comp not in comps:
            errs.append(f"bench report for {comp} ('{reading}') has no estimate line")
    if price_list != "PL-2026-03":
        errs.append(f"price list {price_list} has expired; current list is PL-2026-03")
    if errs:
        raise PortalError("customer portal HTTP 422: " + json.dumps({"job": job["job"], "errors": errs}))
    return {"estimate": f"EST-{job['job'][-4:]}", "total": round(sum(ln["price"] for ln in lines), 2), "sent_to": job["customer"]}


def record_many(keys: list[str], path: Path) -> None:
    tr = OtlpTrace(AGENT)
    for key in keys:
        try:
            _run(tr, key)
        except PortalError:
            pass
    write_otlp(tr.take(), path)


def record(key: str, path: Path) -> None:
    record_many([key], path)


REFS = ["ref_decca", "ref_hmv130", "ref_hmv101", "ref_col"]


def _c(n, kind, fid, key, root, occ, desc):
    return Case(f"zo_gramophone_{n}", AGENT, ROUTE, kind, fid, key, root, occ, "send_estimate", 1, desc)


CASES = [
    _c(1, "format_drift", "gramophone.fd_estimate", "columbia", "write_estimate", 1,
       "the estimate model puts the part before the component in each line, so the columns no longer line up."),
    _c(2, "bad_memory_write", "gramophone.bmw_log", "columbia", "log_component", 3,
       "log_component records the soundbox as OK although its diagnosis said REPLACE."),
    _c(3, "wrong_retrieval", "gramophone.wret_manual", "hmv102", "lookup_model_specs", 1,
       "lookup_model_specs returns the HMV 101 service sheet for an HMV 102, so a 3/4in spring is reserved."),
    _c(4, "stale_data", "gramophone.sd_prices", "hmv102", "fetch_parts_prices", 1,
       "fetch_parts_prices answers from the 2024 price list PL-2024-11."),
    _c(5, "lossy_parsing", "gramophone.lp_estimate", "hmv102", "parse_estimate", 1,
       "parse_estimate skips lines whose part has more than one word, dropping the mainspring line."),
]
