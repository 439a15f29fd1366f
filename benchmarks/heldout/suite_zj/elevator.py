"""Elevator inspection (OpenTelemetry/OpenInference spans exported as OTLP/JSON): plan the inspection, then a lift_inspector sub-agent per lift reads the controller log, runs the tests, assesses and files each certificate."""

from __future__ import annotations

import json
import re

from . import common, kit

NAME = "elevator-inspection"
ROUTE = "otlp"
DOMAIN = "elevator inspection"
EXT = "json"
DESK = "elevator"
SHAPE = "OTLP: roster + site access -> work order -> inspection plan (llm + parse) -> per lift: lift_inspector sub-agent (controller log tool, event log parse, test loop with retry, assessment llm, register lookup) -> file certificate"

SITES = {
    "WO-3301": {"site": "Harbour View Tower", "lifts": [
        {"lift": "L1", "drive": "traction", "rated_kg": 1000, "log": "E12 door reopen x3; E07 level error x2; E40 overspeed governor trip x1"},
        {"lift": "L2", "drive": "hydraulic", "rated_kg": 630, "log": "E07 level error x1"}]},
    "WO-3320": {"site": "Elm Street Clinic", "lifts": [
        {"lift": "P1", "drive": "traction", "rated_kg": 1600, "log": "E12 door reopen x5; E55 brake wear warning x2"},
        {"lift": "P2", "drive": "traction", "rated_kg": 1000, "log": "E12 door reopen x1"}]},
    "WO-3290": {"site": "Mill Court", "lifts": [{"lift": "M1", "drive": "hydraulic", "rated_kg": 450, "log": "E07 level error x1"}]},
    "WO-3293": {"site": "Riverside Library", "lifts": [{"lift": "R1", "drive": "traction", "rated_kg": 800, "log": "E12 door reopen x2"},
                                                      {"lift": "R2", "drive": "traction", "rated_kg": 800, "log": ""}]},
    "WO-3297": {"site": "Station Car Park", "lifts": [{"lift": "S1", "drive": "traction", "rated_kg": 1275, "log": "E40 overspeed governor trip x2"}]},
    "WO-3299": {"site": "Old Granary Flats", "lifts": [{"lift": "G1", "drive": "hydraulic", "rated_kg": 630, "log": "E12 door reopen x1; E07 level error x1"},
                                                      {"lift": "G2", "drive": "hydraulic", "rated_kg": 630, "log": ""}]},
}
REGISTER_TODAY = {"L1": "2026-03-31", "L2": "2026-03-31", "P1": "2025-09-30", "P2": "2026-01-31", "M1": "2026-02-28",
                  "R1": "2026-04-30", "R2": "2026-04-30", "S1": "2026-03-15", "G1": "2026-05-31", "G2": "2026-05-31"}
REGISTER_CACHED = dict(REGISTER_TODAY, P2="2025-07-31")
NEEDS_REVIEW = {"E40", "E55"}

INPUTS = {"A": "WO-3301", "B": "WO-3320", "R1": "WO-3290", "R2": "WO-3293", "R3": "WO-3297", "R4": "WO-3299"}
REFS = ["R1", "R2", "R3", "R4"]

CASES = [
    common.Case("zj-elevator-01", "lossy_parsing", "A", "parse_event_log", 1, "file_certificate", 1,
                "The event log parser keeps only the first two entries, so the overspeed governor trip never reaches the assessment."),
    common.Case("zj-elevator-02", "hallucinated_value", "B", "assess_lift", 2, "file_certificate", 2,
                "The assessment model states a rated load of 1250 kg for lift P2, which neither the work order nor the tests give."),
    common.Case("zj-elevator-03", "swallowed_error", "B", "read_controller_log", 1, "file_certificate", 1,
                "The controller log read for P1 times out and the error body is read as an empty log, hiding the brake wear warnings."),
    common.Case("zj-elevator-04", "stale_data", "B", "certificate_register", 2, "file_certificate", 2,
                "The certificate register lookup for P2 is served from a cached copy whose expiry date predates the last renewal."),
    common.Case("zj-elevator-05", "plan_error", "A", "plan_inspection", 1, "file_certificate", 1,
                "The inspection plan leaves the brake test out for traction lifts, and the certificate is filed without it."),
]


@common.policy(DESK)
def _policy(messages: list[dict]) -> str:
    system, user = messages[0]["content"].lower(), json.loads(messages[-1]["content"])
    if "plan the inspection" in system:
        plan = {}
        for lift in user["lifts"]:
            tests = ["door_force", "levelling", "load"]
            if lift["drive"] == "traction" and not kit.active("elevator.plan_error"):
                tests.append("brake")
            plan[lift["lift"]] = tests
        return json.dumps({"tests": plan})
    codes = {e["code"] for e in user["events"]}
    verdict = "refer" if codes & NEEDS_REVIEW else "pass"
    rated = user["lift"]["rated_kg"]
    if user["lift"]["lift"] == "P2" and kit.active("elevator.hallucinated_value"):
        rated = 1250
    return json.dumps({"lift": user["lift"]["lift"], "verdict": verdict, "rated_kg": rated,
                       "note": f"{len(user['events'])} event types, tests {', '.join(sorted(user['tests']))}"})


_TIMEOUTS = {"n": 0}


def run_once(inp: str, path) -> None:
    rec = common.OtlpRecorder(NAME, session=f"inspection-{inp}")
    rec.desk = DESK
    try:
        with rec.span(NAME, "AGENT", input={"work_order": inp}, **{"agent.name": NAME}) as top:
            _inspect(rec, inp)
            top.output = "certificates filed"
    finally:
        rec.write(path)


def _inspect(rec, wo: str) -> None:
    with rec.span("inspector_roster", "TOOL", input={"work_order": wo}, **{"tool.name": "inspector_roster"}) as s:
        s.output = {"inspector": "K. Brandt", "licence": "LI-5521", "valid_until": "2027-01-31"}
    with rec.span("site_access", "TOOL", input={"work_order": wo, "site": SITES[wo]["site"]}, **{"tool.name": "site_access"}) as s:
        s.output = {"site": SITES[wo]["site"], "window": "08:00-12:00", "keyholder": "caretaker"}
    with rec.span("fetch_work_order", "TOOL", input={"work_order": wo}, **{"tool.name": "fetch_work_order"}) as s:
        s.output = order = {"work_order": wo, "site": SITES[wo]["site"],
                            "lifts": [{k: v for k, v in lift.items() if k != "log"} for lift in SITES[wo]["lifts"]]}
    text = rec.llm("plan_inspection", "Plan the inspection tests per lift. Answer JSON {tests}.", order)
    with rec.span("parse_plan", "CHAIN", input=text) as s:
        s.output = plan = json.loads(text)["tests"]
    for lift in order["lifts"]:
        with rec.span("lift_inspector", "AGENT", input=lift, **{"agent.name": "lift_inspector"}) as sub:
            sub.output = _lift(rec, wo, lift, plan[lift["lift"]])


def _lift(rec, wo: str, lift: dict, tests: list) -> dict:
    raw = SITES[wo]["lifts"][[x["lift"] for x in SITES[wo]["lifts"]].index(lift["lift"])]["log"]
    with rec.span("read_controller_log", "TOOL", input={"lift": lift["lift"]}, **{"tool.name": "read_controller_log"}) as s:
        if lift["lift"] == "P1" and kit.active("elevator.swallowed_error"):
            s.output = {"error": "504 Gateway Timeout: controller bridge did not answer"}
        else:
            s.output = {"lift": lift["lift"], "log": raw}
    body = s.output
    with rec.span("parse_event_log", "CHAIN", input=body) as s:
        text = body.get("log", "")
        parts = [p.strip() for p in text.split(";") if p.strip()]
        if kit.active("elevator.lossy_parsing"):
            parts = parts[:2]
        events = []
        for p in parts:
            m = re.match(r"(E\d+) (.+) x(\d+)", p)
            events.append({"code": m.group(1), "what": m.group(2), "count": int(m.group(3))})
        s.output = events
    results = {}
    for test in tests:
        with rec.span("run_test", "TOOL", input={"lift": lift["lift"], "test": test}, **{"tool.name": "run_test"}) as s:
            s.output = results[test] = {"test": test, "result": "ok", "value": 1.0}
    text = rec.llm("assess_lift", "Assess the lift from its events and tests. Answer JSON {lift, verdict, rated_kg, note}.",
                   {"lift": lift, "events": events, "tests": results})
    with rec.span("parse_assessment", "CHAIN", input=text) as s:
        s.output = verdict = json.loads(text)
    with rec.span("certificate_register", "TOOL", input={"lift": lift["lift"]}, **{"tool.name": "certificate_register"}) as s:
        table = REGISTER_CACHED if kit.active("elevator.stale_data") else REGISTER_TODAY
        s.output = reg = {"lift": lift["lift"], "current_expiry": table[lift["lift"]]}
    with rec.span("file_certificate", "TOOL", input={"lift": lift["lift"], "verdict": verdict, "previous_expiry": reg["current_expiry"], "tests": sorted(results)},
                  **{"tool.name": "file_certificate"}) as s:
        truth = next(x for x in SITES[wo]["lifts"] if x["lift"] == lift["lift"])
        errs = []
        codes = {m.group(1) for m in re.finditer(r"(E\d+)", truth["log"])}
        if codes & NEEDS_REVIEW and verdict["verdict"] == "pass":
            errs.append(f"controller reports {', '.join(sorted(codes & NEEDS_REVIEW))} since last visit; a pass needs an engineer's review")
        if truth["drive"] == "traction" and "brake" not in results:
            errs.append("traction lift certificate requires a brake test record")
        if verdict["rated_kg"] != truth["rated_kg"]:
            errs.append(f"rated load {verdict['rated_kg']} kg differs from the plate ({truth['rated_kg']} kg)")
        if reg["current_expiry"] != REGISTER_TODAY[lift["lift"]]:
            errs.append(f"previous certificate expiry {reg['current_expiry']} does not match the register ({REGISTER_TODAY[lift['lift']]})")
        if errs:
            raise RuntimeError(f"certificate authority rejected {lift['lift']} (HTTP 400): " + "; ".join(errs))
        s.output = {"certificate": f"CERT-{wo[3:]}-{lift['lift']}", "verdict": verdict["verdict"]}
    return s.output
