"""Measurement system analysis in a machining plant's metrology lab: a gauge R&R study (3 appraisers x
10 parts x 3 trials) evaluated and written to the gauge register.

Route: the OpenAI Agents SDK (Responses API) recorded by trajdebug's tracing processor. The coordinator agent
asks for the gauge and the drawing tolerance in parallel, reads the study data, computes %GRR with a tool,
asks a reviewer agent (run as a tool, with its own history tool) for a verdict, then updates the register,
whose tool validates the entry and raises.
"""

from __future__ import annotations

import ast
import json
import math

from agents import Agent, RunConfig, Runner, function_tool

from common import first_input_text, fn_outputs, rnd
from trajdebug.testing import Reply, tool_call

RUN_NAME = "gauge-rr-study"
ROUTE = "openai_agents"
OPENAI_API = "responses"
DOMAIN = "machining metrology lab: gauge R&R study and gauge register"
SHAPE = "Agents SDK: coordinator with 2 parallel tool calls, data tool, compute tool, reviewer agent as a tool (own tool + JSON verdict), register tool that validates"
SWITCH = None

GAUGES = {
    "G-1074": {"type": "air gauge", "part": "7731", "characteristic": "OD-1", "study": "MSA-2240", "prev_study": "MSA-2231", "rep": 0.0011, "app": 0.0007},
    "G-2210": {"type": "bore gauge", "part": "4410", "characteristic": "ID-3", "study": "MSA-2244", "prev_study": "MSA-2198", "rep": 0.0016, "app": 0.0006},
    "G-0381": {"type": "CMM probe", "part": "9902", "characteristic": "POS-2", "study": "MSA-2251", "prev_study": "MSA-2170", "rep": 0.0009, "app": 0.0004},
    "G-1047": {"type": "height gauge", "part": "7731", "characteristic": "H-4", "study": "MSA-2256", "prev_study": "MSA-2202", "rep": 0.0030, "app": 0.0020},
    "G-3305": {"type": "micrometer", "part": "5120", "characteristic": "OD-7", "study": "MSA-2260", "prev_study": "MSA-2233", "rep": 0.0012, "app": 0.0010},
}
TOLERANCES = {("7731", "OD-1"): 0.05, ("7731", "OD-2"): 0.20, ("4410", "ID-3"): 0.06, ("4410", "ID-4"): 0.10, ("9902", "POS-2"): 0.04,
              ("9902", "POS-3"): 0.10, ("7731", "H-4"): 0.15, ("7731", "H-5"): 0.50, ("5120", "OD-7"): 0.08, ("5120", "OD-8"): 0.12}

INPUTS = [{"task": f"gauge R&R study {g['study']} for gauge {gid} ({g['type']})", "gauge": gid, "study": g["study"]} for gid, g in GAUGES.items()]

CASES = [
    {"id": "grr_neighbour_tolerance", "input": 0, "kind": "wrong_tool_args",
     "root": ("response", 1, "llm"), "failure": ("update_gauge_register", 1),
     "what": "the model asks for the tolerance of OD-2 (0.20 mm) instead of OD-1 (0.05 mm)",
     "description": "The coordinator asked for the drawing tolerance of characteristic OD-2 instead of OD-1, so %GRR was computed against a tolerance four times too wide and the register refuses the entry."},
    {"id": "grr_latest_study", "input": 1, "kind": "tool_ignores_argument",
     "root": ("get_study_data", 1, "tool"), "failure": ("update_gauge_register", 1),
     "what": "the study data tool returns the gauge's previous study MSA-2198, ignoring study_id MSA-2244",
     "description": "The study data service ignored the requested study id and answered the gauge's previous study, whose data the register refuses to file under study MSA-2244."},
    {"id": "grr_first_page", "input": 2, "kind": "truncated_result",
     "root": ("get_study_data", 1, "tool"), "failure": ("update_gauge_register", 1),
     "what": "the study data comes back as its first page of 60 rows: appraisers A and B only",
     "description": "The study data came back cut at its first page of 60 rows, so appraiser C's measurements are missing and the register refuses a study with two appraisers."},
    {"id": "grr_reviewer_gauge", "input": 4, "kind": "subagent_wrong_entity",
     "root": ("response", 5, "llm"), "failure": ("update_gauge_register", 1),
     "what": "the reviewer agent pulls the history of gauge G-3350 instead of G-3305",
     "description": "The reviewer agent looked up the calibration history of gauge G-3350 instead of G-3305 and signed its verdict for that gauge, which the register refuses for this study."},
    {"id": "grr_verdict_wording", "input": 3, "kind": "format_drift",
     "root": ("response", 6, "llm"), "failure": ("update_gauge_register", 1),
     "what": "the reviewer's status reads 'Marginal - conditionally acceptable' instead of 'marginal'",
     "description": "The reviewer agent answered its status in prose ('Marginal - conditionally acceptable') instead of one of the register's status codes, and the register update rejects it."},
]


def _switch(case_id: str) -> bool:
    return SWITCH == case_id


# ----------------------------------------------------------------------------------------------- the model
def _outs(request) -> list:
    out = []
    for o in fn_outputs(request):
        try:
            out.append(ast.literal_eval(o))
        except (ValueError, SyntaxError):
            out.append(o)
    return out


def brain(request):
    instructions = request.body.get("instructions") or ""
    outs = _outs(request)
    if instructions.startswith("You review"):
        ask = json.loads(first_input_text(request))
        if not outs:
            gid = ask["gauge"]
            if SWITCH == "grr_reviewer_gauge":
                gid = gid[:-2] + gid[-1] + gid[-2]
            return Reply(tool_calls=(tool_call("get_gauge_history", {"gauge_id": gid}),))
        hist = outs[0]
        g = ask["grr_percent"]
        status = "acceptable" if g < 10 else "marginal" if g <= 30 else "unacceptable"
        if SWITCH == "grr_verdict_wording" and status == "marginal":
            status = "Marginal - conditionally acceptable"
        return json.dumps({"gauge": hist["gauge_id"], "status": status, "calibration_due": hist["calibration_due"],
                           "note": f"%GRR {g}, ndc {ask['ndc']}"})
    req = json.loads(first_input_text(request))
    gid, study = req["gauge"], req["study"]
    g = GAUGES[gid]
    if not outs:
        ch = g["characteristic"]
        if SWITCH == "grr_neighbour_tolerance":
            ch = ch[:-1] + str(int(ch[-1]) + 1)
        return Reply(tool_calls=(tool_call("get_gauge", {"gauge_id": gid}),
                                 tool_call("get_tolerance", {"part": g["part"], "characteristic": ch})))
    if len(outs) == 2:
        return Reply(tool_calls=(tool_call("get_study_data", {"study_id": study, "gauge_id": gid}),))
    if len(outs) == 3:
        tol, data = outs[1], outs[2]
        return Reply(tool_calls=(tool_call("compute_grr", {"rows": data["rows"], "tolerance_mm": tol["tolerance_mm"]}),))
    if len(outs) == 4:
        grr = outs[3]
        return Reply(tool_calls=(tool_call("review_study", {"input": json.dumps({"gauge": gid, "study": study, "grr_percent": grr["grr_percent"], "ndc": grr["ndc"]})}),))
    if len(outs) == 5:
        data, grr = outs[2], outs[3]
        verdict = outs[4] if isinstance(outs[4], dict) else json.loads(outs[4])
        return Reply(tool_calls=(tool_call("update_gauge_register", {
            "gauge_id": gid, "study_id": study, "data_study": data["study"], "grr_percent": grr["grr_percent"], "ndc": grr["ndc"],
            "appraisers": grr["appraisers"], "tolerance_mm": grr["tolerance_mm"], "status": verdict["status"], "reviewed_gauge": verdict["gauge"]}),))
    return f"Gauge {gid}: study {study} filed in the register ({outs[-1]['entry']})."


# ----------------------------------------------------------------------------------------------- tools
def _rows(gid: str, study: str) -> list:
    g = GAUGES[gid]
    rows = []
    for oi, op in enumerate("ABC"):
        bias = (oi - 1) * g["app"]
        for p in range(1, 11):
            true = (p - 5.5) * 0.004
            for t in range(1, 4):
                noise = (rnd(study, op, p, t) - 0.5) * 2 * g["rep"] * 1.7
                rows.append([op, p, t, round(true + bias + noise, 5)])
    return rows


@function_tool
def get_gauge(gauge_id: str) -> dict:
    """Gauge register record: type, resolution, calibration status."""
    g = GAUGES[gauge_id]
    return {"gauge_id": gauge_id, "type": g["type"], "resolution_mm": 0.0001, "calibrated": True}


@function_tool
def get_tolerance(part: str, characteristic: str) -> dict:
    """Total drawing tolerance of a characteristic."""
    return {"part": part, "characteristic": characteristic, "tolerance_mm": TOLERANCES[(part, characteristic)]}


@function_tool
def get_study_data(study_id: str, gauge_id: str) -> dict:
    """Measurements of a gauge R&R study: rows of [appraiser, part, trial, deviation_mm]."""
    g = GAUGES[gauge_id]
    study = g["prev_study"] if _switch("grr_latest_study") else study_id
    rows = _rows(gauge_id, study)
    if _switch("grr_first_page"):
        rows = rows[:60]
    return {"study": study, "gauge_id": gauge_id, "rows": rows}


@function_tool
def compute_grr(rows: list[list[float | int | str]], tolerance_mm: float) -> dict:
    """Average-and-range gauge R&R: %GRR of tolerance and number of distinct categories."""
    ops = sorted({r[0] for r in rows})
    parts = sorted({r[1] for r in rows})
    cells = {}
    for op, p, _, v in rows:
        cells.setdefault((op, p), []).append(v)
    ranges = [max(v) - min(v) for v in cells.values()]
    ev = (sum(ranges) / len(ranges)) / 1.693
    op_means = [sum(v for (o, _), vs in cells.items() if o == op for v in vs) / (3 * len(parts)) for op in ops]
    av = (max(op_means) - min(op_means)) / 1.91 if len(ops) > 1 else 0.0
    part_means = [sum(v for (_, p), vs in cells.items() if p == q for v in vs) / (3 * len(ops)) for q in parts]
    pv = (max(part_means) - min(part_means)) / 3.18
    grr = math.sqrt(ev * ev + av * av)
    return {"appraisers": len(ops), "parts": len(parts), "grr_mm": round(grr, 6), "tolerance_mm": tolerance_mm,
            "grr_percent": round(600 * grr / tolerance_mm, 1), "ndc": int(1.41 * pv / grr)}


@function_tool
def get_gauge_history(gauge_id: str) -> dict:
    """Calibration history of a gauge."""
    return {"gauge_id": gauge_id, "last_calibration": "2026-01-14", "calibration_due": "2026-07-14", "repairs": 0}


@function_tool(failure_error_function=None)
def update_gauge_register(gauge_id: str, study_id: str, data_study: str, grr_percent: float, ndc: int, appraisers: int,
                          tolerance_mm: float, status: str, reviewed_gauge: str) -> dict:
    """File a gauge R&R result in the gauge register."""
    g = GAUGES[gauge_id]
    if data_study != study_id:
        raise ValueError(f"register: data of study {data_study} submitted for study {study_id}")
    if appraisers != 3:
        raise ValueError(f"register: study {study_id} requires 3 appraisers x 10 parts x 3 trials; {appraisers} appraisers reported")
    drawing = TOLERANCES[(g["part"], g["characteristic"])]
    if abs(tolerance_mm - drawing) > 1e-9:
        raise ValueError(f"register: %GRR {grr_percent} computed against tolerance {tolerance_mm} mm; {g['part']}-{g['characteristic']} tolerance is {drawing} mm")
    if reviewed_gauge != gauge_id:
        raise ValueError(f"register: review signed for gauge {reviewed_gauge}, study {study_id} is for gauge {gauge_id}")
    if status not in ("acceptable", "marginal", "unacceptable"):
        raise ValueError(f"register: status {status!r} not one of acceptable, marginal, unacceptable")
    return {"entry": f"REG-{gauge_id}-{study_id}", "status": status}


_AGENT = {}


def _agent(model: str) -> Agent:
    if model not in _AGENT:
        reviewer = Agent(name="msa_reviewer", model=model, tools=[get_gauge_history],
                         instructions="You review gauge R&R results against the AIAG MSA criteria. Answer JSON: gauge, status, calibration_due, note.")
        _AGENT[model] = Agent(
            name="msa_coordinator", model=model,
            instructions="You coordinate gauge R&R studies: gather the gauge, tolerance and data, compute %GRR, get a review, file the register entry.",
            tools=[get_gauge, get_tolerance, get_study_data, compute_grr,
                   reviewer.as_tool(tool_name="review_study", tool_description="Ask the MSA reviewer for a verdict."),
                   update_gauge_register])
    return _AGENT[model]


async def execute(inp: dict, env, run) -> None:
    await Runner.run(_agent(env.model), json.dumps({"gauge": inp["gauge"], "study": inp["study"]}),
                     run_config=RunConfig(workflow_name=RUN_NAME))
