"""Fishing vessel landing declaration: fetches the trip's electronic logbook, totals it per species, looks
up species codes and conversion factors, reads the auction's landing tally, converts each species to live
weight and checks the vessel's quota, has a model draft the declaration, validates it and submits it to the
fisheries authority (OpenTelemetry + OpenInference, OTLP JSON)."""
from __future__ import annotations

import json

from trajdebug.testing import Reply

from ._common import client_for, system, user
from ._otlp import Tracing

NAME = "catch-declaration"
ROUTE = "otlp"
DOMAIN = "demersal fishing vessel landing declaration"
SHAPE = "logbook tool, totals chain, species-code retriever, tally tool, per-species loop (conversion + quota tools), drafting model call (instrumented OpenAI client), validation chain, authority tool"
SWITCH = None


def active(case: str) -> bool:
    return SWITCH == case


INPUTS = [
    {"vessel": "BF-214", "trip": "TR-0931", "port": "harbour N3", "landed": "2025-02-17"},
    {"vessel": "BF-077", "trip": "TR-0932", "port": "harbour N3", "landed": "2025-02-17"},
    {"vessel": "SO-502", "trip": "TR-0933", "port": "harbour S1", "landed": "2025-02-18"},
    {"vessel": "BF-214", "trip": "TR-0940", "port": "harbour N3", "landed": "2025-02-24"},
    {"vessel": "SO-611", "trip": "TR-0941", "port": "harbour S1", "landed": "2025-02-24"},
]

CASES = [
    {"id": "zzzzh-catch-1", "input": 2, "kind": "wrong_retrieval", "root": ("lookup_species_codes", 1), "root_kind": "retrieval",
     "failure": "submit_declaration",
     "what": "The species-code search returns the gutted head-on conversion factor for hake (1.11) although SO-502 landed it gutted head-off (1.32), so the declared live weight is short of the authority's computation."},
    {"id": "zzzzh-catch-2", "input": 0, "kind": "format_drift", "root": ("ChatCompletion", 1), "root_kind": "llm",
     "failure": "validate_declaration",
     "what": "The drafting model writes the live weights as text with units ('3,286 kg') instead of numbers, which the declaration schema rejects."},
    {"id": "zzzzh-catch-3", "input": 1, "kind": "unit_error", "root": ("read_landing_tally", 1), "root_kind": "tool",
     "failure": "submit_declaration",
     "what": "The auction tally reports the monkfish of BF-077 in pounds (2646) as if kilograms, so the landed weight is more than twice the logbook estimate of 1,240 kg and the authority refuses the declaration."},
    {"id": "zzzzh-catch-4", "input": 3, "kind": "stale_data", "root": ("check_quota", 1), "root_kind": "tool", "root_has": "HKE",
     "failure": "assert_within_quota",
     "what": "The quota check answers from the 10 February snapshot (hake 1,240 kg left), taken before the 2,000 kg hake lease of 12 February, so the 2,420 kg live hake is refused as over quota."},
    {"id": "zzzzh-catch-5", "input": 4, "kind": "truncated_result", "root": ("fetch_logbook", 1), "root_kind": "tool",
     "failure": "submit_declaration",
     "what": "The logbook fetch returns only the first part of the split ERS message (hauls 1-4 of 7), so the logbook estimate for megrim is far below the landed tally."},
]

HAULS = {
    "TR-0931": [("HKE", 900), ("MON", 310), ("HKE", 1100), ("LEZ", 240), ("HKE", 1000), ("MON", 200)],
    "TR-0932": [("MON", 640), ("HKE", 820), ("MON", 600), ("LEZ", 410)],
    "TR-0933": [("HKE", 1500), ("HKE", 1200), ("POK", 700), ("HKE", 1300)],
    "TR-0940": [("HKE", 1200), ("MON", 400), ("HKE", 980)],
    "TR-0941": [("LEZ", 600), ("MON", 300), ("LEZ", 550), ("HKE", 400), ("LEZ", 700), ("LEZ", 650), ("MON", 280)],
}
TALLY = {"TR-0931": {"HKE": 2960, "MON": 505, "LEZ": 236}, "TR-0932": {"MON": 1200, "HKE": 800, "LEZ": 402},
         "TR-0933": {"HKE": 3950, "POK": 690}, "TR-0940": {"HKE": 2180, "MON": 385}, "TR-0941": {"LEZ": 2480, "MON": 570, "HKE": 395}}
PRESENTATION = {"SO-502": "gutted head-off"}
FACTORS = {("HKE", "gutted head-on"): 1.11, ("HKE", "gutted head-off"): 1.32, ("MON", "gutted head-on"): 1.22,
           ("LEZ", "gutted head-on"): 1.06, ("POK", "gutted head-on"): 1.19, ("POK", "gutted head-off"): 1.45}
NAMES = {"HKE": "European hake", "MON": "anglerfish", "LEZ": "megrim", "POK": "saithe"}
QUOTA = {("BF-214", "2025-02-17"): {"HKE": 4400, "MON": 2000, "LEZ": 900},
         ("BF-077", "2025-02-17"): {"MON": 4500, "HKE": 2500, "LEZ": 1500},
         ("SO-502", "2025-02-18"): {"HKE": 9000, "POK": 2500},
         ("BF-214", "2025-02-24"): {"HKE": 3240, "MON": 1380},
         ("SO-611", "2025-02-24"): {"LEZ": 4000, "MON": 1500, "HKE": 1000}}
SNAPSHOT_0210 = {"BF-214": {"HKE": 1240, "MON": 1380}}


def brain(request):
    if not system(request).startswith("You draft landing declarations"):
        return "I cannot help with that."
    ask = json.loads(user(request))
    lines = []
    for ln in ask["lines"]:
        live = ln["live_kg"]
        if active("zzzzh-catch-2"):
            live = f"{live:,} kg"
        lines.append({"species": ln["code"], "presentation": ln["presentation"], "landed_kg": ln["landed_kg"], "live_kg": live})
    return json.dumps({"vessel": ask["vessel"], "trip": ask["trip"], "port": ask["port"], "landed": ask["landed"], "lines": lines})


def _live_expected(inp, code):
    pres = PRESENTATION.get(inp["vessel"], "gutted head-on")
    return round(TALLY[inp["trip"]][code] * FACTORS[(code, pres)])


def record(inp: dict, path, server) -> None:
    tr = Tracing(NAME)
    client = client_for(server)
    with tr.recording(path):
        try:
            with tr.span(NAME, "AGENT", inp, metadata=json.dumps({"task": f"landing declaration {inp['vessel']} {inp['trip']}"})) as top:
                with tr.span("fetch_logbook", "TOOL", {"trip": inp["trip"]}) as out:
                    hauls = HAULS[inp["trip"]]
                    if active("zzzzh-catch-5"):
                        hauls = hauls[:4]  # part 1 of the ERS message
                    hauls = out([{"haul": i + 1, "species": s, "est_kg": kg} for i, (s, kg) in enumerate(hauls)])
                with tr.span("total_logbook", "CHAIN", hauls) as out:
                    est = {}
                    for h in hauls:
                        est[h["species"]] = est.get(h["species"], 0) + h["est_kg"]
                    out(est)
                pres = PRESENTATION.get(inp["vessel"], "gutted head-on")
                with tr.span("lookup_species_codes", "RETRIEVER", {"species": sorted(est), "presentation": pres}) as out:
                    docs = []
                    for code in sorted(set(est) | set(TALLY[inp["trip"]])):
                        p = pres
                        if active("zzzzh-catch-1") and code == "HKE":
                            p = "gutted head-on"  # nearest match in the factor index
                        docs.append({"code": code, "name": NAMES[code], "presentation": p, "factor": FACTORS[(code, p)]})
                    out(docs)
                codes = {d["code"]: d for d in docs}
                with tr.span("read_landing_tally", "TOOL", {"trip": inp["trip"], "port": inp["port"]}) as out:
                    tally = dict(TALLY[inp["trip"]])
                    if active("zzzzh-catch-3"):
                        tally["MON"] = round(tally["MON"] * 2.2046)  # this auction's scale exports pounds
                    out(tally)
                lines = []
                for code, kg in tally.items():
                    with tr.span("species_line", "CHAIN", {"code": code, "landed_kg": kg}) as line_out:
                        with tr.span("convert_to_live_weight", "TOOL", {"code": code, "landed_kg": kg, "factor": codes[code]["factor"]}) as out:
                            live = out({"code": code, "live_kg": round(kg * codes[code]["factor"])})["live_kg"]
                        with tr.span("check_quota", "TOOL", {"vessel": inp["vessel"], "code": code, "live_kg": live}) as out:
                            left = QUOTA[(inp["vessel"], inp["landed"])]
                            if active("zzzzh-catch-4"):
                                left = SNAPSHOT_0210[inp["vessel"]]
                            q = out({"code": code, "remaining_kg": left[code], "within": live <= left[code]})
                        with tr.span("assert_within_quota", "CHAIN", q) as out:
                            if not q["within"]:
                                raise ValueError(f"quota: {code} landing {live} kg live over the {q['remaining_kg']} kg left")
                            out(True)
                        lines.append(line_out({"code": code, "presentation": codes[code]["presentation"], "landed_kg": kg, "live_kg": live}))
                reply = client.chat.completions.create(model=server.model, messages=[
                    {"role": "system", "content": "You draft landing declarations as JSON from the checked lines."},
                    {"role": "user", "content": json.dumps({**inp, "lines": lines})}])
                text = reply.choices[0].message.content
                with tr.span("validate_declaration", "CHAIN", {"draft": text}) as out:
                    decl = json.loads(text)
                    for ln in decl["lines"]:
                        for k in ("landed_kg", "live_kg"):
                            if not isinstance(ln[k], (int, float)):
                                raise TypeError(f"declaration line {ln['species']}: {k} must be a number, got {ln[k]!r}")
                    out(decl)
                with tr.span("submit_declaration", "TOOL", decl) as out:
                    left = QUOTA[(inp["vessel"], inp["landed"])]
                    for ln in decl["lines"]:
                        code = ln["species"]
                        logged = est.get(code, 0)
                        if abs(ln["landed_kg"] - logged) > 0.1 * max(logged, 1):
                            raise ValueError(f"authority: {code} landed {ln['landed_kg']} kg, logbook estimate {logged} kg: over the 10% margin")
                        if abs(ln["live_kg"] - _live_expected(inp, code)) > 5:
                            raise ValueError(f"authority: {code} live weight {ln['live_kg']} kg declared, {_live_expected(inp, code)} kg from {TALLY[inp['trip']][code]} kg {PRESENTATION.get(inp['vessel'], 'gutted head-on')}")
                        if ln["live_kg"] > left[code]:
                            raise ValueError(f"authority: {code} {ln['live_kg']} kg over the vessel's remaining quota of {left[code]} kg")
                    out({"declaration": f"LD-{inp['trip']}", "status": "accepted"})
                top(decl["lines"])
        except Exception:
            pass
