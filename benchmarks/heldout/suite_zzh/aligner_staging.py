"""Orthodontic aligner lab (OpenTelemetry + OpenInference, exported as OTLP/JSON): stages a clear-aligner case.

Shape: an AGENT span per case: case record (tool) -> per arch: scan (tool, retried when the scan server is busy),
prescription (tool), the model turns the doctor's text into movement lines (OpenInference-instrumented OpenAI
call), a parser (CHAIN), staging (CHAIN), an `attachment_planner` sub-agent (model + reader) -> the
manufacturing order (CHAIN) -> the model writes the lab ticket -> `validate_order` (GUARDRAIL: the lab's
staging rules, raising) -> production booking.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Any


sys.path.insert(0, str(Path(__file__).resolve().parent))

import kit
from common import chat_messages, chat_once, oi_span, otlp_capture, system_text, text_of


NAME = "aligner-staging"
ROUTE = "otlp"
DOMAIN = "orthodontic aligner lab"
EXT = "json"
SHAPE = ("OTLP: AGENT span, case tool, per arch scan (retried) + prescription tools, instrumented LLM extraction, "
         "parser and staging CHAIN spans, attachment_planner sub-agent (LLM + reader), order CHAIN, LLM ticket, "
         "trim-line tool, GUARDRAIL validator, production booking; 15-25 spans")

LIMIT = {"mm": 0.25, "deg": 2.0}  # the most a tooth moves per aligner stage
UPPER = [17, 16, 15, 14, 13, 12, 11, 21, 22, 23, 24, 25, 26, 27]
LOWER = [47, 46, 45, 44, 43, 42, 41, 31, 32, 33, 34, 35, 36, 37]
UNIT = {"rotate": "deg", "tip": "deg", "torque": "deg", "extrude": "mm", "intrude": "mm", "translate": "mm"}

# case -> approved stages, missing teeth, per arch: [(tooth, [(movement, amount, direction)])]
CASES_DATA: dict[str, dict[str, Any]] = {
    "AL-4471": {"doctor": "Dr. Ines Varga", "approved": 30, "missing": [], "busy_scan": False, "arches": {
        "upper": [(13, [("rotate", 8.0, "mesial")]), (11, [("translate", 0.75, "mesial")]),
                  (21, [("translate", 0.75, "mesial")])],
        "lower": [(33, [("rotate", 6.0, "distal")]), (43, [("tip", 4.0, "distal")]),
                  (41, [("intrude", 0.5, "")])]}},
    "AL-4480": {"doctor": "Dr. Kwame Asante", "approved": 28, "missing": [25], "busy_scan": True, "arches": {
        "upper": [(12, [("rotate", 9.0, "distal")]), (22, [("translate", 1.0, "labial")]),
                  (24, [("translate", 1.5, "mesial")])],
        "lower": [(32, [("intrude", 0.5, "")]), (42, [("rotate", 6.0, "mesial")])]}},
    "AL-4486": {"doctor": "Dr. Mei Sato", "approved": 30, "missing": [], "busy_scan": False, "arches": {
        "upper": [(23, [("rotate", 8.0, "mesial"), ("extrude", 0.25, "")]), (13, [("tip", 4.0, "mesial")]),
                  (11, [("torque", 6.0, "palatal")])],
        "lower": [(31, [("translate", 0.5, "lingual")]), (41, [("translate", 0.5, "lingual")])]}},
    "AL-4492": {"doctor": "Dr. Ines Varga", "approved": 30, "missing": [], "busy_scan": False, "arches": {
        "upper": [(13, [("rotate", 15.0, "mesial")]), (12, [("translate", 0.5, "labial")]),
                  (22, [("rotate", 4.0, "distal")])],
        "lower": [(43, [("rotate", 6.0, "mesial")]), (33, [("tip", 4.0, "distal")])]}},
    "AL-4497": {"doctor": "Dr. Luis Ortega", "approved": 26, "missing": [36], "busy_scan": True, "arches": {
        "upper": [(23, [("rotate", 12.0, "mesial")]), (21, [("translate", 0.5, "mesial")])],
        "lower": [(44, [("rotate", 6.0, "distal")]), (34, [("intrude", 0.25, "")]),
                  (31, [("translate", 0.5, "labial")])]}},
    # reference cases
    "AL-4402": {"doctor": "Dr. Mei Sato", "approved": 30, "missing": [], "busy_scan": False, "arches": {
        "upper": [(11, [("rotate", 6.0, "mesial")]), (21, [("rotate", 6.0, "distal")]),
                  (13, [("extrude", 0.5, "")])],
        "lower": [(42, [("translate", 0.5, "lingual")]), (32, [("translate", 0.5, "lingual")])]}},
    "AL-4415": {"doctor": "Dr. Kwame Asante", "approved": 24, "missing": [15], "busy_scan": True, "arches": {
        "upper": [(14, [("translate", 1.25, "distal")]), (12, [("rotate", 11.0, "mesial")]),
                  (22, [("tip", 3.0, "mesial")])]}},
    "AL-4423": {"doctor": "Dr. Luis Ortega", "approved": 30, "missing": [], "busy_scan": False, "arches": {
        "upper": [(16, [("translate", 0.5, "distal")]), (26, [("translate", 0.5, "distal")])],
        "lower": [(33, [("rotate", 12.0, "mesial"), ("intrude", 0.25, "")]), (43, [("rotate", 7.0, "distal")])]}},
    "AL-4438": {"doctor": "Dr. Ines Varga", "approved": 22, "missing": [46], "busy_scan": False, "arches": {
        "lower": [(41, [("rotate", 5.0, "mesial")]), (31, [("rotate", 5.0, "distal")]),
                  (44, [("extrude", 0.5, "")])]}},
}

CASES = [
    {"case": "zzh_algn_01", "switch": "aligner.scan_arch", "input": "AL-4471", "fault_kind": "wrong_tool_args",
     "root": ("fetch_scan", 2), "failure": ("validate_order", 1),
     "description": "Inside the arch loop the scan is fetched with the case's first arch, so the lower arch is "
                    "staged against the upper scan."},
    {"case": "zzh_algn_02", "switch": "aligner.stage_range", "input": "AL-4480", "fault_kind": "off_by_one",
     "root": ("compute_staging", 1), "failure": ("validate_order", 1),
     "description": "The staging loop runs range(1, n) instead of range(1, n + 1), so the upper arch's last "
                    "aligner is never made and the longest movement stops one stage short."},
    {"case": "zzh_algn_03", "switch": "aligner.first_movement", "input": "AL-4486", "fault_kind": "lossy_parsing",
     "root": ("parse_prescription", 1), "failure": ("validate_order", 1),
     "description": "The prescription parser keeps only the first movement of each tooth line, dropping the "
                    "0.25 mm extrusion of tooth 23."},
    {"case": "zzh_algn_04", "switch": "aligner.attachment_keys", "input": "AL-4492", "fault_kind": "format_drift",
     "root": ("ChatCompletion", 2), "failure": ("validate_order", 1),
     "description": "The attachment model answers {tooth, attachment: 'rectangular-3mm'} instead of {tooth, type, "
                    "size_mm}, and the reader's defaults turn tooth 13's attachment into none."},
    {"case": "zzh_algn_05", "switch": "aligner.shared_history", "input": "AL-4497", "fault_kind": "context_pollution",
     "root": ("ChatCompletion", 3), "failure": ("validate_order", 1),
     "description": "The lower-arch extraction is sent with the upper arch's conversation still in the messages, "
                    "and the model carries tooth 23's rotation into the lower arch's movement list."},
]
REFS = ["AL-4402", "AL-4415", "AL-4423", "AL-4438"]


class OrderRejected(Exception):
    """The aligner order breaks a staging rule."""


def _fmt(x: float) -> str:
    return f"{x:g}"


def prescription_text(case_id: str, arch: str) -> str:
    rows = []
    for tooth, moves in CASES_DATA[case_id]["arches"][arch]:
        parts = []
        for kind, amount, direction in moves:
            unit = "°" if UNIT[kind] == "deg" else " mm"
            parts.append(f"{kind} {_fmt(amount)}{unit}" + (f" ({direction})" if direction else ""))
        rows.append(f"Tooth {tooth} – " + ", ".join(parts))
    return "\n".join(rows)


def movement_lines(case_id: str, arch: str) -> list[str]:
    out = []
    for tooth, moves in CASES_DATA[case_id]["arches"][arch]:
        out.append(f"{tooth}: " + "; ".join(f"{k} {amount:.2f} {UNIT[k]}" + (f" {d}" if d else "")
                                             for k, amount, d in moves))
    return out


# -- the model ------------------------------------------------------------------------------------------


def brain(request: Any) -> str:
    messages = chat_messages(request)
    system = system_text(messages)
    user = text_of(messages[-1])
    if system.startswith("You convert orthodontic prescriptions"):
        case_id, arch = re.search(r"Case (AL-\d+), (upper|lower) arch", user).groups()
        lines = movement_lines(case_id, arch)
        earlier = [text_of(m) for m in messages[:-1] if m.get("role") == "assistant"]
        if earlier:  # an earlier arch's answer in the conversation
            lines.insert(0, earlier[-1].splitlines()[0])
        return "\n".join(lines)
    if system.startswith("You plan aligner attachments"):
        moves = json.loads(user)["movements"]
        out = []
        for tooth in sorted({m["tooth"] for m in moves}):
            need = any((m["type"] == "rotate" and m["amount"] >= 10) or (m["type"] == "extrude" and m["amount"] >= 0.5)
                       for m in moves if m["tooth"] == tooth)
            if need:
                if kit.on("aligner.attachment_keys"):
                    out.append({"tooth": tooth, "attachment": "rectangular-3mm"})
                else:
                    out.append({"tooth": tooth, "type": "rectangular", "size_mm": 3})
        return json.dumps({"attachments": out})
    if system.startswith("You write lab tickets"):
        order = json.loads(user)
        return (f"Case {order['case']}: " + ", ".join(f"{a} arch {v['stages']} stages" for a, v in order["arches"].items())
                + f"; material {order['material']}.")
    return "Unsupported request."


# -- the agent ---------------------------------------------------------------------------------------------

_CALLS: dict[str, int] = {}


def fetch_scan(case_id: str, arch: str) -> dict:
    _CALLS["scan"] = _CALLS.get("scan", 0) + 1
    if CASES_DATA[case_id]["busy_scan"] and _CALLS["scan"] == 1:
        raise ConnectionError("scan server busy (429), retry later")
    teeth = [t for t in (UPPER if arch == "upper" else LOWER) if t not in CASES_DATA[case_id]["missing"]]
    return {"scan_id": f"SC-{case_id[3:]}-{arch[0].upper()}", "arch": arch, "teeth": teeth}


def parse_prescription(text: str) -> list[dict]:
    moves = []
    for line in text.splitlines():
        m = re.match(r"^(\d\d): (.+)$", line.strip())
        if not m:
            continue
        tooth, rest = int(m.group(1)), m.group(2)
        parts = rest.split("; ")
        if kit.on("aligner.first_movement"):
            parts = parts[:1]
        for part in parts:
            p = re.match(r"(\w+) ([\d.]+) (mm|deg)(?: (\w+))?", part)
            moves.append({"tooth": tooth, "type": p.group(1), "amount": float(p.group(2)), "unit": p.group(3),
                          "direction": p.group(4) or ""})
    return moves


def compute_staging(moves: list[dict]) -> dict:
    n = max((math.ceil(round(m["amount"] / LIMIT[m["unit"]], 6)) for m in moves), default=0)
    last = n if kit.on("aligner.stage_range") else n + 1
    stages = []
    done = [0.0] * len(moves)
    for s in range(1, last):
        step = []
        for i, m in enumerate(moves):
            inc = round(min(LIMIT[m["unit"]], m["amount"] - done[i]), 3)
            if inc > 0:
                done[i] = round(done[i] + inc, 3)
                step.append({"tooth": m["tooth"], "type": m["type"], "inc": inc})
        stages.append({"stage": s, "moves": step})
    return {"stages": len(stages), "plan": stages,
            "totals": [{"tooth": m["tooth"], "type": m["type"], "reached": done[i]} for i, m in enumerate(moves)]}


def read_attachments(text: str) -> list[dict]:
    out = []
    for a in json.loads(text)["attachments"]:
        item = {"tooth": a["tooth"], "type": a.get("type", "none"), "size_mm": a.get("size_mm", 0)}
        if item["type"] != "none":
            out.append(item)
    return out


def validate(order: dict) -> None:
    for arch, plan in order["arches"].items():
        own = set(UPPER if arch == "upper" else LOWER)
        scan = set(plan["scan_teeth"])
        for m in plan["movements"]:
            if m["tooth"] not in own:
                raise OrderRejected(f"{arch} arch plan moves tooth {m['tooth']}, which is not a {arch} tooth")
            if m["tooth"] not in scan:
                raise OrderRejected(f"{arch} arch plan moves tooth {m['tooth']}, which the {arch} scan "
                                    f"{plan['scan_id']} does not hold")
        if len(plan["movements"]) != plan["prescribed_count"]:
            raise OrderRejected(f"{arch} arch stages {len(plan['movements'])} tooth movements; the prescription form "
                                f"lists {plan['prescribed_count']}")
        for t in plan["totals"]:
            want = next(m["amount"] for m in plan["movements"] if m["tooth"] == t["tooth"] and m["type"] == t["type"])
            if abs(t["reached"] - want) > 1e-6:
                raise OrderRejected(f"tooth {t['tooth']} {t['type']} reaches {t['reached']:g} of {want:g} prescribed "
                                    f"by the last {arch} aligner (stage {plan['stages']})")
        if plan["stages"] > order["approved_stages"]:
            raise OrderRejected(f"{arch} arch needs {plan['stages']} stages; {order['approved_stages']} approved")
        have = {a["tooth"] for a in plan["attachments"]}
        for m in plan["movements"]:
            big = (m["type"] == "rotate" and m["amount"] >= 10) or (m["type"] == "extrude" and m["amount"] >= 0.5)
            if big and m["tooth"] not in have:
                raise OrderRejected(f"tooth {m['tooth']} {m['type']} {m['amount']:g} {m['unit']} needs an attachment; "
                                    f"the {arch} arch has attachments on {sorted(have)}")


def record(case_id: str, path: Path, server: Any) -> None:
    from openai import OpenAI

    _CALLS.clear()
    client = OpenAI(base_url=server.base_url, api_key="lab-local", max_retries=0)
    with otlp_capture(path, "aligner-lab") as tracer:
        try:
            with oi_span(tracer, NAME, "AGENT", {"case": case_id, "task": "stage aligner case"},
                         **{"agent.name": NAME}) as root:
                with oi_span(tracer, "fetch_case", "TOOL", {"case_id": case_id}) as s:
                    data = CASES_DATA[case_id]
                    case = {"case_id": case_id, "doctor": data["doctor"], "arches": list(data["arches"]),
                            "approved_stages": data["approved"], "material": "PETG 0.75 mm"}
                    s.output = case
                history: list[dict] = []
                arches: dict[str, Any] = {}
                for arch in case["arches"]:
                    scan_arch = case["arches"][0] if kit.on("aligner.scan_arch") else arch
                    scan = None
                    for _attempt in range(3):
                        try:
                            with oi_span(tracer, "fetch_scan", "TOOL", {"case_id": case_id, "arch": scan_arch}) as s:
                                scan = s.output = fetch_scan(case_id, scan_arch)
                            break
                        except ConnectionError:
                            continue
                    with oi_span(tracer, "fetch_prescription", "TOOL", {"case_id": case_id, "arch": arch}) as s:
                        form = s.output = {"arch": arch, "text": prescription_text(case_id, arch),
                                           "movement_count": sum(len(mv) for _, mv in data["arches"][arch])}
                    ask = [{"role": "system", "content": "You convert orthodontic prescriptions into movement lines: "
                                                         "'<tooth>: <movement> <amount> <mm|deg> [direction]; ...'."},
                           {"role": "user", "content": f"Case {case_id}, {arch} arch:\n{form['text']}"}]
                    messages = history + ask if kit.on("aligner.shared_history") else ask
                    text = chat_once(client, messages)
                    history += [ask[1], {"role": "assistant", "content": text}]
                    with oi_span(tracer, "parse_prescription", "CHAIN", text) as s:
                        moves = s.output = parse_prescription(text)
                    with oi_span(tracer, "compute_staging", "CHAIN", {"arch": arch, "movements": moves}) as s:
                        staging = s.output = compute_staging(moves)
                    with oi_span(tracer, "attachment_planner", "AGENT", {"arch": arch, "movements": moves},
                                 **{"agent.name": "attachment_planner"}) as sub:
                        reply = chat_once(client, [
                            {"role": "system", "content": "You plan aligner attachments: teeth with rotations of 10 "
                                                          "degrees or more or extrusions of 0.5 mm or more get one. "
                                                          "Answer JSON {attachments: [{tooth, type, size_mm}]}."},
                            {"role": "user", "content": json.dumps({"arch": arch, "movements": moves})}])
                        with oi_span(tracer, "read_attachments", "CHAIN", reply) as s:
                            attachments = s.output = read_attachments(reply)
                        sub.output = attachments
                    with oi_span(tracer, "trim_line", "TOOL", {"scan_id": scan["scan_id"], "attachments":
                                                               [a["tooth"] for a in attachments]}) as s:
                        trim = s.output = {"scan_id": scan["scan_id"], "margin_mm": 2.0 if attachments else 1.5,
                                           "style": "scalloped"}
                    arches[arch] = {"scan_id": scan["scan_id"], "trim": trim, "scan_teeth": scan["teeth"], "movements": moves,
                                    "prescribed_count": form["movement_count"], "stages": staging["stages"],
                                    "totals": staging["totals"], "attachments": attachments}
                with oi_span(tracer, "assemble_order", "CHAIN", {"case": case_id, "arches": list(arches)}) as s:
                    order = s.output = {"case": case_id, "approved_stages": case["approved_stages"],
                                        "material": case["material"], "arches": arches}
                ticket = chat_once(client, [
                    {"role": "system", "content": "You write lab tickets for the aligner production floor."},
                    {"role": "user", "content": json.dumps({"case": case_id, "material": order["material"], "arches": {
                        a: {"stages": v["stages"], "attachments": len(v["attachments"])} for a, v in arches.items()}})}])
                with oi_span(tracer, "validate_order", "GUARDRAIL", order) as s:
                    validate(order)
                    s.output = {"approved": True}
                with oi_span(tracer, "book_production", "TOOL", {"case": case_id, "aligners": sum(
                        v["stages"] for v in arches.values())}) as s:
                    s.output = {"case": case_id, "slot": "thermoforming line 2", "ship_by": "5 working days"}
                root.output = {"case": case_id, "ticket": ticket}
        except OrderRejected:
            pass
