"""cp-survey: a gas network corrosion engineer's review of a cathodic protection survey (OpenTelemetry, OTLP).

A close-interval potential survey gives every test post's pipe-to-soil potential with the current on and
off; a post whose instant-off potential is less negative than -850 mV (copper/copper sulphate) is not
protected. The agent retrieves the segment map, reads and parses the survey, has the model check the
rectifiers feeding the segment (tool calls with ids) and propose new outputs, writes the findings to the
team's memory store, has a dig-planner sub-agent pick coating-defect excavations from that memory and the
coating survey, then sets the rectifiers and raises the dig orders. OTel spans with OpenInference
attributes; model calls traced by `openinference-instrumentation-openai`; written as OTLP JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ._common import Env, OtlpTrace, first_json, set_documents, set_output, system_of, tool_results

NAME = "cp-survey"
ROUTE = "otlp"
DOMAIN = "gas pipeline corrosion engineering: cathodic protection potentials, rectifiers, coating-defect digs"
SHAPE = ("OTLP/OpenInference: segment-map retriever, survey tool, unit-aware parser, instrumented model with "
         "parallel tool calls (ids) + parser, memory write, dig-planner sub-agent (memory read, "
         "instrumented tool loop), rectifier tool per adjustment, dig-order tool")

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


CRITERION_MV = -850

SEGMENTS = {
    ("GP-114", "S3"): {"km": [6.0, 9.0], "trs": ["TR-07"], "neighbours": "S2 (km 3.0-6.0), S4 (km 9.0-12.5)"},
    ("GP-207", "S1"): {"km": [0.0, 4.0], "trs": ["TR-21"], "neighbours": "S2 (km 4.0-7.5)"},
    ("GP-318", "S2"): {"km": [3.0, 6.0], "trs": ["TR-30", "TR-31"],
                       "neighbours": "S3 (km 6.0-9.5), joined at the Holme Beck crossing"},
    ("GP-422", "S4"): {"km": [11.0, 14.0], "trs": ["TR-44"], "neighbours": "S3 (km 8.0-11.0)"},
    ("GP-530", "S1"): {"km": [0.0, 3.5], "trs": ["TR-05B"], "neighbours": "S2 (km 3.5-6.0)"},
}
# The segment map as indexed before the 2024 rectifier replacement on GP-530.
SEGMENTS_2023 = {("GP-530", "S1"): {"km": [0.0, 3.5], "trs": ["TR-05"], "neighbours": "S2 (km 3.5-6.0)"}}
RECTIFIERS = {"TR-07": (8.0, 10.0, "in service"), "TR-21": (7.5, 10.0, "in service"),
              "TR-12": (14.0, 25.0, "in service"), "TR-30": (6.0, 12.0, "in service"),
              "TR-31": (5.5, 12.0, "in service"), "TR-44": (9.0, 15.0, "in service"),
              "TR-05": (11.0, 15.0, "decommissioned 2024-06-11, replaced by TR-05B"),
              "TR-05B": (12.0, 30.0, "in service")}
# Survey readings: (post, km, on, off) in the unit the logger wrote.
SURVEY = {
    "GP-114": ("V", [("TP-114-31", 6.20, -1.032, -0.912), ("TP-114-32", 6.90, -0.998, -0.861),
                     ("TP-114-33", 7.50, -0.951, -0.838), ("TP-114-34", 8.10, -1.010, -0.874),
                     ("TP-114-35", 8.80, -0.962, -0.845)]),
    "GP-207": ("mV", [("TP-207-11", 0.60, -1105, -871), ("TP-207-12", 1.40, -1062, -842),
                      ("TP-207-13", 2.30, -1090, -866), ("TP-207-14", 3.40, -1048, -836)]),
    "GP-318": ("mV", [("TP-318-21", 3.30, -1120, -902), ("TP-318-22", 4.10, -1044, -839),
                      ("TP-318-23", 4.90, -1080, -858), ("TP-318-24", 5.60, -1031, -833)]),
    "GP-422": ("mV", [("TP-422-41", 11.30, -1098, -880), ("TP-422-42", 12.30, -1040, -829),
                      ("TP-422-43", 12.90, -1071, -856), ("TP-422-45", 13.70, -1035, -841)]),
    "GP-530": ("mV", [("TP-530-01", 0.40, -1150, -905), ("TP-530-02", 1.30, -1060, -846),
                      ("TP-530-03", 2.20, -1075, -861), ("TP-530-04", 3.10, -1049, -840)]),
}
# Coating survey (DCVG) indications: km and % IR.
DEFECTS = {
    ("GP-114", "S3"): [(6.40, 12), (6.88, 18), (7.48, 42), (8.75, 35)],
    ("GP-207", "S1"): [(1.36, 24), (3.45, 38)],
    ("GP-318", "S2"): [(4.08, 27), (5.62, 33)],
    ("GP-318", "S3"): [(6.85, 41), (8.20, 31)],
    ("GP-422", "S4"): [(12.35, 22), (13.72, 36)],
    ("GP-530", "S1"): [(1.28, 29), (3.12, 34)],
}

INPUTS = [
    {"pipeline": "GP-114", "segment": "S3", "survey": "CIPS-2025-09-GP114"},
    {"pipeline": "GP-207", "segment": "S1", "survey": "CIPS-2025-09-GP207"},
    {"pipeline": "GP-318", "segment": "S2", "survey": "CIPS-2025-10-GP318"},
    {"pipeline": "GP-422", "segment": "S4", "survey": "CIPS-2025-10-GP422"},
    {"pipeline": "GP-530", "segment": "S1", "survey": "CIPS-2025-10-GP530"},
]

CASES = [
    {"id": "cp_volts_as_millivolts", "input": 0, "switch": "assume_mv", "fault_kind": "unit_error",
     "root": ("parse_readings", 1), "failure": ("raise_dig_orders", 1),
     "description": "parse_readings takes the survey's volts as millivolts (-0.861 instead of -861 mV), so every "
                    "post reads as unprotected and the dig at km 6.88 by TP-114-32 (-861 mV, protected) is refused."},
    {"id": "cp_rectifier_id", "input": 1, "switch": "tr_transposed", "fault_kind": "wrong_tool_args",
     "root": ("ChatCompletion", 1), "failure": ("set_rectifier_output", 1),
     "description": "the model asks get_rectifier for TR-12 instead of the segment's TR-21, bases the new output "
                    "on TR-12's 14 A and sets TR-21 to 14.7 A, above its 10 A rating."},
    {"id": "cp_neighbour_segment", "input": 2, "switch": "neighbour_segment", "fault_kind": "subagent_wrong_entity",
     "root": ("dig_planner", 1), "failure": ("raise_dig_orders", 1),
     "description": "the dig-planner sub-agent reads the coating survey of the neighbouring segment S3 instead of "
                    "S2 and plans digs at km 6.85 and 8.20, outside GP-318 S2 (km 3.0-6.0)."},
    {"id": "cp_findings_overwrite", "input": 3, "switch": "overwrite_findings", "fault_kind": "bad_memory_write",
     "root": ("save_findings", 1), "failure": ("raise_dig_orders", 1),
     "description": "save_findings overwrites the segment's findings with each post instead of adding it, so "
                    "memory holds only TP-422-45 and no dig is planned at the defect by unprotected TP-422-42."},
    {"id": "cp_segment_map_2023", "input": 4, "switch": "old_map", "fault_kind": "stale_data",
     "root": ("segment_map", 1), "failure": ("set_rectifier_output", 1),
     "description": "the segment_map retriever serves GP-530 S1 from the 2023 index, which names TR-05, "
                    "decommissioned in 2024 and replaced by TR-05B, and the rectifier setting is refused."},
]


def to_mv(value: float, unit: str) -> float:
    return round(value * 1000) if unit == "V" else value


# -- the model ------------------------------------------------------------------------------------------

def _reply(calls):
    from trajdebug.testing import Reply, tool_call

    return Reply(tool_calls=tuple(tool_call(n, a) for n, a in calls))


def _analysis_answer(request: Any) -> Any:
    ctx = json.loads(request.body["messages"][1]["content"])
    results = tool_results(request)
    if not results:
        trs = ctx["segment_map"]["trs"]
        if _on("tr_transposed"):
            trs = ["TR-12" if t == "TR-21" else t for t in trs]
        return _reply([("get_rectifier", {"tr_id": t}) for t in trs])
    under = [p for p in ctx["readings"] if p["off_mv"] > CRITERION_MV]
    shortfall = max((p["off_mv"] - CRITERION_MV for p in under), default=0)
    adjust = []
    for tr_id, res in zip(ctx["segment_map"]["trs"], results):
        present = res["content"]["output_a"]
        if under:
            adjust.append({"tr": tr_id, "from_a": present,
                           "to_a": round(min(present * 1.2, present + 0.05 * shortfall), 1)})
    return json.dumps({"under_protected": [p["tp"] for p in under], "adjust": adjust,
                       "notes": f"{len(under)} of {len(ctx['readings'])} posts below the -850 mV criterion"})


def _dig_answer(request: Any) -> Any:
    ctx = json.loads(request.body["messages"][1]["content"])
    results = tool_results(request)
    if not results:
        seg = ctx["segment"]
        if _on("neighbour_segment"):
            seg = re.search(r"(S\d) \(", ctx["neighbours"]).group(1)
        return _reply([("get_coating_defects", {"pipeline": ctx["pipeline"], "segment": seg})])
    defects = results[0]["content"]["indications"]
    under = ctx["findings"]
    digs = []
    for d in defects:
        near = [p for p in under if abs(p["km"] - d["km"]) <= 0.1]
        if d["ir_pct"] >= 30 or near:
            nearest = min(ctx["posts"], key=lambda p: abs(p["km"] - d["km"]))
            digs.append({"km": d["km"], "ir_pct": d["ir_pct"], "tp": nearest["tp"]})
    return json.dumps({"digs": digs})


def brain(request: Any) -> Any:
    system = system_of(request)
    if system.startswith("You review a cathodic protection survey"):
        return _analysis_answer(request)
    if system.startswith("You plan coating-defect digs"):
        return _dig_answer(request)
    raise ValueError("unexpected prompt")


# -- tools ----------------------------------------------------------------------------------------------

def get_survey_readings(survey: str, pipeline: str) -> str:
    unit, rows = SURVEY[pipeline]
    return "\n".join(f"{tp}, km {km:.2f}, on {on:g} {unit}, off {off:g} {unit}" for tp, km, on, off in rows)


def get_rectifier(tr_id: str) -> dict:
    out, rating, status = RECTIFIERS[tr_id]
    return {"tr": tr_id, "output_a": out, "rating_a": rating, "status": status}


def set_rectifier_output(tr_id: str, amps: float) -> dict:
    out, rating, status = RECTIFIERS[tr_id]
    if status != "in service":
        raise ValueError(f"{tr_id} is {status}: setting refused")
    if amps > rating:
        raise ValueError(f"{amps} A requested exceeds {tr_id}'s {rating:g} A rating")
    return {"tr": tr_id, "output_a": amps, "previous_a": out}


def get_coating_defects(pipeline: str, segment: str) -> dict:
    return {"pipeline": pipeline, "segment": segment,
            "indications": [{"km": km, "ir_pct": ir} for km, ir in DEFECTS[(pipeline, segment)]]}


def raise_dig_orders(pipeline: str, segment: str, digs: list[dict]) -> dict:
    lo, hi = SEGMENTS[(pipeline, segment)]["km"]
    unit, rows = SURVEY[pipeline]
    posts = {tp: (km, to_mv(off, unit)) for tp, km, on, off in rows}
    for d in digs:
        if not lo <= d["km"] <= hi:
            raise ValueError(f"dig at km {d['km']} is not on {pipeline} segment {segment} (km {lo}-{hi})")
        off = posts[d["tp"]][1]
        if d["ir_pct"] < 30 and off <= CRITERION_MV:
            raise ValueError(f"dig at km {d['km']} by {d['tp']}: survey off potential {off} mV meets the -850 mV "
                             f"criterion and the {d['ir_pct']}% IR indication is minor; no dig justified")
    dug = {d["km"] for d in digs}
    for tp, (km, off) in posts.items():
        if off > CRITERION_MV:
            for dkm, ir in DEFECTS[(pipeline, segment)]:
                if abs(dkm - km) <= 0.1 and dkm not in dug:
                    raise ValueError(f"{tp} is below the criterion ({off} mV) with a coating defect at km {dkm}; "
                                     f"no dig ordered there")
    return {"orders": [f"DIG-{pipeline[3:]}-{i + 1}" for i in range(len(digs))]}


# -- the agent ----------------------------------------------------------------------------------------

ANALYSIS_SYSTEM = ("You review a cathodic protection survey: check every rectifier feeding the segment, list the "
                   "posts whose instant-off potential is less negative than -850 mV and propose new rectifier "
                   "outputs (at most +20%). Answer JSON: under_protected, adjust, notes.")
DIG_SYSTEM = ("You plan coating-defect digs for a pipeline segment: read its coating survey, dig every indication "
              "of 30% IR or more and any indication within 100 m of an unprotected post. Answer JSON: digs.")


def _tool(tr: OtlpTrace, name: str, args: dict, fn, **attrs) -> Any:
    with tr.span(name, "TOOL", args, **attrs) as sp:
        return set_output(sp, fn(**args))


def _tool_loop(tr: OtlpTrace, env: Env, messages: list[dict], tools: list[dict], impl: dict) -> str:
    while True:
        r = env.client.chat.completions.create(model=env.model, messages=messages, tools=tools)
        msg = r.choices[0].message
        if not msg.tool_calls:
            return msg.content
        messages.append(msg.model_dump(exclude_none=True))
        for call in msg.tool_calls:
            args = json.loads(call.function.arguments)
            out = _tool(tr, call.function.name, args, impl[call.function.name], tool__id=call.id)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(out)})


def _fn(name: str, description: str, props: dict) -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": {k: {"type": v} for k, v in props.items()}, "required": list(props)}}}


_MEMORY: dict[str, list] = {}


def _agent(tr: OtlpTrace, job: dict, env: Env) -> None:
    key = (job["pipeline"], job["segment"])
    query = f"{job['pipeline']} segment {job['segment']} cathodic protection rectifiers test posts"
    with tr.span("segment_map", "RETRIEVER", query) as sp:
        seg = (SEGMENTS_2023 if _on("old_map") and key in SEGMENTS_2023 else SEGMENTS)[key]
        set_documents(sp, [{"id": f"{job['pipeline']}-{job['segment']}", "score": 0.94,
                            "content": f"{job['pipeline']} {job['segment']}: km {seg['km'][0]}-{seg['km'][1]}, "
                                       f"rectifiers {', '.join(seg['trs'])}; neighbours {seg['neighbours']}",
                            "metadata": dict(seg)}])
    raw = _tool(tr, "get_survey_readings", {"survey": job["survey"], "pipeline": job["pipeline"]}, get_survey_readings)
    with tr.span("parse_readings", "CHAIN", raw) as sp:
        readings = []
        for line in raw.splitlines():
            m = re.match(r"(\S+), km ([\d.]+), on (-?[\d.]+) (m?V), off (-?[\d.]+) (m?V)", line)
            tp, km, on, unit, off, _ = m.groups()
            if _on("assume_mv"):
                unit = "mV"
            readings.append({"tp": tp, "km": float(km), "on_mv": to_mv(float(on), unit),
                             "off_mv": to_mv(float(off), unit)})
        set_output(sp, readings)
    ctx = {"pipeline": job["pipeline"], "segment": job["segment"], "segment_map": seg, "readings": readings}
    answer = _tool_loop(tr, env, [{"role": "system", "content": ANALYSIS_SYSTEM},
                                  {"role": "user", "content": json.dumps(ctx)}],
                        [_fn("get_rectifier", "Present output, rating and status of a transformer-rectifier.",
                             {"tr_id": "string"})], {"get_rectifier": get_rectifier})
    with tr.span("parse_analysis", "CHAIN", answer) as sp:
        analysis = set_output(sp, first_json(answer))
    under = [p for p in readings if p["tp"] in analysis["under_protected"]]
    with tr.span("save_findings", "CHAIN", {"segment": f"{job['pipeline']}/{job['segment']}", "posts": under}) as sp:
        slot = f"{job['pipeline']}/{job['segment']}"
        for p in under:
            entry = {"tp": p["tp"], "km": p["km"], "off_mv": p["off_mv"], "survey": job["survey"]}
            if _on("overwrite_findings"):
                _MEMORY[slot] = [entry]
            else:
                _MEMORY.setdefault(slot, []).append(entry)
        set_output(sp, {"slot": slot, "stored": list(_MEMORY.get(slot, []))})
    brief = {"pipeline": job["pipeline"], "segment": job["segment"]}
    with tr.span("dig_planner", "AGENT", brief, agent__name="dig_planner") as sp:
        findings = _tool(tr, "read_findings", {"slot": f"{job['pipeline']}/{job['segment']}"},
                         lambda slot: list(_MEMORY.get(slot, [])))
        dctx = {**brief, "neighbours": seg["neighbours"], "findings": findings,
                "posts": [{"tp": p["tp"], "km": p["km"]} for p in readings]}
        text = _tool_loop(tr, env, [{"role": "system", "content": DIG_SYSTEM},
                                    {"role": "user", "content": json.dumps(dctx)}],
                          [_fn("get_coating_defects", "DCVG coating survey indications of a pipeline segment.",
                               {"pipeline": "string", "segment": "string"})],
                          {"get_coating_defects": get_coating_defects})
        digs = set_output(sp, first_json(text))["digs"]
    for a in analysis["adjust"]:
        _tool(tr, "set_rectifier_output", {"tr_id": a["tr"], "amps": a["to_a"]}, set_rectifier_output)
    _tool(tr, "raise_dig_orders", {"pipeline": job["pipeline"], "segment": job["segment"], "digs": digs},
          raise_dig_orders)


def run(inp: dict, path: str, env: Env) -> None:
    _MEMORY.clear()
    tr = OtlpTrace(NAME)
    task = f"CP survey review {inp['pipeline']} {inp['segment']} {inp['survey']}"
    try:
        with tr.span(NAME, "AGENT", inp, metadata=json.dumps({"task": task}), agent__name=NAME):
            _agent(tr, inp, env)
    except ValueError:
        pass  # a tool refused: the trace records it
    finally:
        tr.write(path)
