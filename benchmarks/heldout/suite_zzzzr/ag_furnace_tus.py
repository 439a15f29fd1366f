"""Heat-treat furnace temperature uniformity survey (AMS2750 TUS) in an aerospace forging plant.

Route: trajdebug's own recorder (sdk). Plans the survey temperatures with a model, reads the field test
instrument's logger per setpoint, applies the survey thermocouples' calibration corrections, computes the
uniformity, keeps the results in run.state, drafts the certificate with a model and checks it against the
furnace class before issuing it.
"""

from __future__ import annotations

import json

import trajdebug
from common import chat, rnd

RUN_NAME = "furnace-tus-survey"
ROUTE = "sdk"
DOMAIN = "heat treatment: AMS2750 furnace temperature uniformity survey"
SHAPE = "input, record lookup, model plan + parser, retriever, unit normalizer, logger loop, state write, model draft + parser, class check, issuing tool"
SWITCH = None

FURNACES = {
    "F-03": {"type": "vacuum", "class": 2, "tol_f": 10, "range_f": [1000, 2200], "volume_cuft": 64, "tc_required": 9},
    "F-11": {"type": "pit carburizing", "class": 3, "tol_f": 15, "range_f": [1200, 1600], "volume_cuft": 150, "tc_required": 9},
    "F-12": {"type": "box tempering", "class": 2, "tol_f": 10, "range_f": [300, 900], "volume_cuft": 40, "tc_required": 9},
    "F-07": {"type": "car-bottom", "class": 5, "tol_f": 25, "range_f": [1100, 1650], "volume_cuft": 410, "tc_required": 15},
    "F-15": {"type": "integral quench", "class": 3, "tol_f": 15, "range_f": [1450, 1700], "volume_cuft": 96, "tc_required": 9},
}
CERT_UNITS = {"F-12": "C"}  # the survey thermocouples of F-12 were calibrated by a lab reporting in Celsius

INPUTS = [
    {"task": "quarterly TUS, vacuum furnace F-03", "furnace": "F-03", "requested_by": "M. Okafor", "instrument": "FTI-2207"},
    {"task": "quarterly TUS, pit furnace F-11", "furnace": "F-11", "requested_by": "M. Okafor", "instrument": "FTI-2207"},
    {"task": "semiannual TUS, tempering furnace F-12", "furnace": "F-12", "requested_by": "L. Brandt", "instrument": "FTI-1985"},
    {"task": "annual TUS, car-bottom furnace F-07", "furnace": "F-07", "requested_by": "L. Brandt", "instrument": "FTI-1985"},
    {"task": "quarterly TUS, integral quench furnace F-15", "furnace": "F-15", "requested_by": "R. Iyer", "instrument": "FTI-2207"},
]

CASES = [
    {"id": "tus_survey_span", "input": 0, "kind": "plan_error",
     "root": ("plan_survey", 1, "llm"), "failure": ("check_class", 1),
     "what": "the plan surveys only 1000 F and 2200 F, 1200 F apart, with no intermediate temperature",
     "description": "The model planned the vacuum furnace survey at the two ends of its range only, leaving 1200 F between survey temperatures, which the class check rejects."},
    {"id": "tus_logger_celsius", "input": 1, "kind": "tool_ignores_argument",
     "root": ("read_logger", 2, "tool"), "failure": ("check_class", 1),
     "what": "the logger export for 1600 F comes back in Celsius although unit=F was asked",
     "description": "The logger export for the 1600 F setpoint returned its native Celsius values despite the unit argument, so the uniformity check sees readings hundreds of degrees low."},
    {"id": "tus_correction_offset", "input": 2, "kind": "unit_error",
     "root": ("normalize_corrections", 1, "parse"), "failure": ("check_class", 1),
     "what": "Celsius correction factors converted like temperatures (x1.8 + 32) instead of like differences (x1.8)",
     "description": "The Celsius correction factors of the survey thermocouples were converted as absolute temperatures, adding about 32 F to every corrected reading."},
    {"id": "tus_results_overwrite", "input": 3, "kind": "bad_memory_write",
     "root": ("record_results", 1, "state"), "failure": ("check_class", 1),
     "what": "only the last setpoint's results are kept in the survey record",
     "description": "The survey record kept in run state holds only the last setpoint's results, so the class check finds a planned survey temperature missing."},
    {"id": "tus_first_channel", "input": 4, "kind": "off_by_one",
     "root": ("apply_corrections", 1, "other"), "failure": ("check_class", 1),
     "what": "channel 1 skipped as if it were a header row: 8 of 9 thermocouples corrected",
     "description": "Applying the corrections started from the second logger channel, dropping thermocouple 1 from every setpoint, so fewer thermocouples are reported than the furnace volume requires."},
]


def _switch(case_id: str) -> bool:
    return SWITCH == case_id


# ----------------------------------------------------------------------------------------------- the model
def brain(request):
    system = request.body["messages"][0]["content"]
    user = request.body["messages"][-1]["content"]
    if system.startswith("You plan"):
        rec = json.loads(user)
        lo, hi = rec["range_f"]
        points = [lo]
        span = hi - lo
        if SWITCH != "tus_survey_span":
            steps = -(-span // 600)
            points += [lo + round(span * i / steps / 10) * 10 for i in range(1, steps)]
        points.append(hi)
        return json.dumps({"furnace": rec["furnace"], "setpoints_f": points, "soak_minutes": 30,
                           "note": f"class {rec['class']} survey, {rec['tc_required']} survey thermocouples"})
    if system.startswith("You draft"):
        data = json.loads(user)
        return json.dumps({
            "furnace": data["furnace"], "class": data["class"],
            "surveyed_f": [r["setpoint_f"] for r in data["results"]],
            "max_over_f": max(r["max_over_f"] for r in data["results"]),
            "max_under_f": min(r["max_under_f"] for r in data["results"]),
            "instrument": data["instrument"], "statement": "Furnace meets its class at every surveyed temperature.",
        })
    return "I need the survey record."


# ----------------------------------------------------------------------------------------------- steps
@trajdebug.step(kind="input")
def receive_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="tool")
def fetch_furnace_record(furnace: str) -> dict:
    return {"furnace": furnace, **FURNACES[furnace]}


@trajdebug.step(kind="llm")
def plan_survey(messages: list[dict]) -> dict:
    return chat(ENV, messages)


@trajdebug.step(kind="parse")
def parse_plan(answer: dict) -> dict:
    plan = json.loads(answer["content"])
    plan["setpoints_f"] = [int(p) for p in plan["setpoints_f"]]
    return plan


@trajdebug.step(kind="retrieval")
def fetch_tc_corrections(furnace: str, tc_count: int) -> dict:
    units = CERT_UNITS.get(furnace, "F")
    scale = 1 / 1.8 if units == "C" else 1.0
    corr = {f"TC{i}": round((rnd(furnace, "corr", i) - 0.5) * 3.0 * scale, 1) for i in range(1, tc_count + 1)}
    return {"certificate": f"CAL-{furnace}-2611", "units": units, "corrections": corr}


@trajdebug.step(kind="parse")
def normalize_corrections(cert: dict) -> dict:
    if cert["units"] == "F":
        return {"units": "F", "corrections": dict(cert["corrections"])}
    if _switch("tus_correction_offset"):
        conv = {k: round(v * 1.8 + 32, 1) for k, v in cert["corrections"].items()}
    else:
        conv = {k: round(v * 1.8, 1) for k, v in cert["corrections"].items()}
    return {"units": "F", "corrections": conv}


@trajdebug.step(kind="tool")
def read_logger(furnace: str, setpoint_f: int, tc_count: int, unit: str = "F") -> dict:
    tol = FURNACES[furnace]["tol_f"]
    rows = []
    for i in range(1, tc_count + 1):
        hi = setpoint_f + round((rnd(furnace, setpoint_f, i, "hi") * 0.55) * tol, 1)
        lo = setpoint_f - round((rnd(furnace, setpoint_f, i, "lo") * 0.55) * tol, 1)
        rows.append({"channel": i, "min": lo, "max": hi})
    native_c = furnace == "F-11" and setpoint_f == 1600 and _switch("tus_logger_celsius")
    if unit == "C" or native_c:
        rows = [{"channel": r["channel"], "min": round((r["min"] - 32) / 1.8, 1), "max": round((r["max"] - 32) / 1.8, 1)}
                for r in rows]
    return {"furnace": furnace, "setpoint_f": setpoint_f, "soak_minutes": 30, "rows": rows}


@trajdebug.step(kind="other")
def apply_corrections(readings: list[dict], corrections: dict) -> list[dict]:
    out = []
    for block in readings:
        rows = block["rows"]
        start = 1 if _switch("tus_first_channel") else 0
        fixed = []
        for r in rows[start:]:
            c = corrections["corrections"][f"TC{r['channel']}"]
            fixed.append({"tc": r["channel"], "min": round(r["min"] + c, 1), "max": round(r["max"] + c, 1)})
        out.append({"setpoint_f": block["setpoint_f"], "rows": fixed})
    return out


@trajdebug.step(kind="other")
def compute_uniformity(block: dict) -> dict:
    sp = block["setpoint_f"]
    return {
        "setpoint_f": sp,
        "tc_count": len(block["rows"]),
        "max_over_f": round(max(r["max"] for r in block["rows"]) - sp, 1),
        "max_under_f": round(min(r["min"] for r in block["rows"]) - sp, 1),
        "hottest_tc": max(block["rows"], key=lambda r: r["max"])["tc"],
        "coldest_tc": min(block["rows"], key=lambda r: r["min"])["tc"],
    }


@trajdebug.step(kind="state")
def record_results(furnace: str, results: list[dict]) -> dict:
    run = trajdebug.current_run()
    kept = results[-1:] if _switch("tus_results_overwrite") else list(results)
    record = {"furnace": furnace, "results": kept}
    run.state["tus_record"] = record
    return record


@trajdebug.step(kind="llm")
def draft_certificate(messages: list[dict]) -> dict:
    return chat(ENV, messages)


@trajdebug.step(kind="parse")
def parse_certificate(answer: dict) -> dict:
    return json.loads(answer["content"])


@trajdebug.step(kind="condition")
def check_class(furnace: dict, plan: dict, certificate: dict) -> dict:
    record = trajdebug.current_run().state["tus_record"]
    tol = furnace["tol_f"]
    pts = plan["setpoints_f"]
    lo, hi = furnace["range_f"]
    if pts[0] > lo or pts[-1] < hi:
        raise ValueError(f"survey temperatures {pts} do not cover the qualified range {lo}-{hi} F")
    for a, b in zip(pts, pts[1:]):
        if b - a > 600:
            raise ValueError(f"survey temperatures {a} F and {b} F are {b - a} F apart; at most 600 F allowed between survey temperatures")
    done = [r["setpoint_f"] for r in record["results"]]
    missing = [p for p in pts if p not in done]
    if missing:
        raise ValueError(f"survey record for {furnace['furnace']} holds {len(done)} of {len(pts)} planned setpoints (missing {', '.join(f'{m} F' for m in missing)})")
    for r in record["results"]:
        if r["tc_count"] < furnace["tc_required"]:
            raise ValueError(f"{r['tc_count']} survey thermocouples reported at {r['setpoint_f']} F; {furnace['furnace']} ({furnace['volume_cuft']} cu ft) requires {furnace['tc_required']}")
        if r["max_over_f"] > tol or r["max_under_f"] < -tol:
            worst = r["max_over_f"] if abs(r["max_over_f"]) >= abs(r["max_under_f"]) else r["max_under_f"]
            raise ValueError(f"deviation {worst:+.1f} F at setpoint {r['setpoint_f']} F outside class {furnace['class']} limit +/-{tol} F")
    return {"furnace": furnace["furnace"], "class": furnace["class"], "passed": True, "surveyed_f": done}


@trajdebug.step(kind="tool")
def issue_certificate(certificate: dict, verdict: dict) -> dict:
    return {"certificate_id": f"TUS-{verdict['furnace']}-{len(verdict['surveyed_f'])}{verdict['class']}", "status": "issued"}


ENV = None


def execute(inp: dict, env, run) -> None:
    global ENV
    ENV = env
    req = receive_request(inp)
    furnace = fetch_furnace_record(req["furnace"])
    answer = plan_survey([
        {"role": "system", "content": "You plan AMS2750 temperature uniformity surveys. Answer JSON: furnace, setpoints_f, soak_minutes, note."},
        {"role": "user", "content": json.dumps(furnace)},
    ])
    plan = parse_plan(answer)
    cert = fetch_tc_corrections(furnace["furnace"], furnace["tc_required"])
    corr = normalize_corrections(cert)
    readings = [read_logger(furnace["furnace"], sp, furnace["tc_required"], unit="F") for sp in plan["setpoints_f"]]
    corrected = apply_corrections(readings, corr)
    results = [compute_uniformity(block) for block in corrected]
    record = record_results(furnace["furnace"], results)
    draft = draft_certificate([
        {"role": "system", "content": "You draft TUS certificates from the survey record. Answer JSON."},
        {"role": "user", "content": json.dumps({**record, "class": furnace["class"], "instrument": req["instrument"]})},
    ])
    certificate = parse_certificate(draft)
    verdict = check_class(furnace, plan, certificate)
    issue_certificate(certificate, verdict)
