"""Pressure vessel fabrication shop floor: review of the ultrasonic (UT) inspection of every weld of a vessel
against the code's acceptance criteria, repair travellers for rejected welds, and the NDT report.

Route: the OpenTelemetry SDK with OpenInference attributes (the openai client instrumented by
openinference-instrumentation-openai, tools, parsers, memory writes and a repair sub-agent as spans of the
agent's own), exported as OTLP JSON.
"""

from __future__ import annotations

import json

from common import calls_of, chat, otlp_span, set_output, tool_specs  # noqa: F401
from trajdebug.testing import Reply, tool_call

RUN_NAME = "weld-ut-review"
ROUTE = "otlp"
DOMAIN = "pressure vessel fabrication: UT weld inspection review and repairs"
SHAPE = "OTel spans: input, weld-map tool, loop over 6 welds (UT report tool, parser, model -> criteria tool -> model, memory write), router, repair sub-agent (model, traveller tool), report tool"
SWITCH = None


def _welds(shell_t, nozzle_t):
    return [{"weld": "L-1", "type": "longitudinal seam", "thickness_mm": shell_t}, {"weld": "L-2", "type": "longitudinal seam", "thickness_mm": shell_t},
            {"weld": "C-1", "type": "circumferential seam", "thickness_mm": shell_t}, {"weld": "C-2", "type": "circumferential seam", "thickness_mm": shell_t},
            {"weld": "N-1", "type": "nozzle", "thickness_mm": nozzle_t}, {"weld": "N-2", "type": "nozzle", "thickness_mm": nozzle_t}]


VESSELS = {
    "V-2101": {"shell": 38, "nozzle": 16, "reject": {"C-2": 15.0}},
    "V-2102": {"shell": 25, "nozzle": 14, "reject": {"L-2": 10.5}},
    "V-2103": {"shell": 44, "nozzle": 18, "reject": {"N-1": 9.0}},
    "V-2104": {"shell": 32, "nozzle": 12, "reject": {"N-2": 8.0}},
    "V-2105": {"shell": 50, "nozzle": 20, "reject": {"C-1": 21.0}},
}
INPUTS = [{"task": f"UT review of vessel {v} (shell {d['shell']} mm)", "vessel": v, "code": "ASME VIII-1", "inspector": "T. Haddad"} for v, d in VESSELS.items()]

CASES = [
    {"id": "weld_neighbour_repair", "input": 0, "kind": "subagent_wrong_entity",
     "root": ("repair_planner", 1, "agent"), "failure": ("submit_report", 1),
     "what": "the repair sub-agent resolves the rejected weld C-2 by its map position and plans the repair of C-1",
     "description": "The repair planner sub-agent looked the rejected weld up by position in the weld map and planned the excavation of seam C-1 instead of C-2, which the NDT report refuses."},
    {"id": "weld_archive_503", "input": 1, "kind": "swallowed_error",
     "root": ("fetch_ut_report", 2, "tool"), "failure": ("submit_report", 1),
     "what": "the archive answered 503 for L-2 and the tool returned an empty indication list",
     "description": "The UT archive answered HTTP 503 for seam L-2 and the report fetch returned an empty list of indications, so the weld holding a rejectable 10.5 mm indication was accepted."},
    {"id": "weld_shell_thickness", "input": 2, "kind": "wrong_tool_args",
     "root": ("ChatCompletion", 9, "llm"), "failure": ("submit_report", 1),
     "what": "for nozzle weld N-1 the model asks for criteria at the shell thickness 44 mm instead of 18 mm",
     "description": "Evaluating nozzle weld N-1 the model requested acceptance criteria for the 44 mm shell instead of the 18 mm nozzle, so a 9 mm indication passed against a 14.7 mm allowance."},
    {"id": "weld_finding_key", "input": 3, "kind": "bad_memory_write",
     "root": ("record_finding", 6, "state"), "failure": ("submit_report", 1),
     "what": "the rejected finding of N-2 is written under key N-1",
     "description": "The memory write for nozzle weld N-2 stored its rejection under the key of N-1, so the repair traveller went to the acceptable weld N-1 and N-2 was left without a finding."},
    {"id": "weld_indication_length", "input": 4, "kind": "hallucinated_value",
     "root": ("ChatCompletion", 6, "llm"), "failure": ("submit_report", 1),
     "what": "the model's verdict gives the C-1 indication as 12.5 mm; the UT report says 21.0 mm",
     "description": "The model's verdict on seam C-1 gave its governing indication as 12.5 mm, a length the UT report does not hold (21.0 mm), and accepted the weld."},
]


def _switch(case_id: str) -> bool:
    return SWITCH == case_id


def _allowed(t):
    return 6.0 if t < 19 else (round(t / 3, 1) if t <= 57 else 19.0)


def _indications(vessel, weld):
    rej = VESSELS[vessel]["reject"]
    out = [{"id": f"{weld}-1", "type": "slag", "length_mm": 3.0 + (len(weld) + int(weld[-1])) % 3, "depth_mm": 7.5}]
    if weld in rej:
        out.append({"id": f"{weld}-2", "type": "slag", "length_mm": rej[weld], "depth_mm": 11.0})
    return out


# ----------------------------------------------------------------------------------------------- the model
def brain(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    ctx = json.loads(msgs[1]["content"])
    if system.startswith("You plan weld repairs"):
        return json.dumps({"repairs": [{"weld": w["weld"], "method": "excavate by arc-air gouging, MT the cavity, reweld, re-UT"} for w in ctx["welds"]]})
    last = msgs[-1]
    if last["role"] != "tool":
        t = ctx["thickness_mm"]
        if SWITCH == "weld_shell_thickness" and ctx["type"] == "nozzle":
            t = ctx["shell_thickness_mm"]
        return Reply(tool_calls=(tool_call("acceptance_criteria", {"thickness_mm": t, "weld_type": ctx["type"]}),))
    crit = json.loads(last["content"])
    worst = max(ctx["indications"], key=lambda i: i["length_mm"], default=None)
    length = worst["length_mm"] if worst else 0.0
    if SWITCH == "weld_indication_length" and ctx["weld"] == "C-1":
        length = 12.5
    status = "reject" if length > crit["max_length_mm"] else "accept"
    return json.dumps({"weld": ctx["weld"], "status": status, "governing_length_mm": length, "allowed_mm": crit["max_length_mm"]})


# ----------------------------------------------------------------------------------------------- spans
ENV = None


def receive_job(inp):
    with otlp_span(ENV, "receive_job", "CHAIN", inp, td_kind="input") as sp:
        out = dict(inp)
        set_output(sp, out)
    return out


def get_weld_map(vessel):
    with otlp_span(ENV, "get_weld_map", "TOOL", {"vessel": vessel}, **{"tool.name": "get_weld_map"}) as sp:
        v = VESSELS[vessel]
        out = {"vessel": vessel, "shell_thickness_mm": v["shell"], "welds": _welds(v["shell"], v["nozzle"])}
        set_output(sp, out)
    return out


def fetch_ut_report(vessel, weld):
    with otlp_span(ENV, "fetch_ut_report", "TOOL", {"vessel": vessel, "weld": weld}, **{"tool.name": "fetch_ut_report"}) as sp:
        try:
            if weld == "L-2" and _switch("weld_archive_503"):
                raise ConnectionError(f"UT archive answered HTTP 503 for {vessel}/{weld}")
            out = {"vessel": vessel, "weld": weld, "technique": "PAUT", "report": "\n".join(
                f"{i['id']}|{i['type']}|{i['length_mm']}|{i['depth_mm']}" for i in _indications(vessel, weld))}
        except ConnectionError:
            out = {"vessel": vessel, "weld": weld, "technique": "PAUT", "report": ""}
        set_output(sp, out)
    return out


def parse_indications(report):
    with otlp_span(ENV, "parse_indications", "CHAIN", report, td_kind="parse") as sp:
        out = []
        for line in report["report"].splitlines():
            iid, typ, length, depth = line.split("|")
            out.append({"id": iid, "type": typ, "length_mm": float(length), "depth_mm": float(depth)})
        set_output(sp, out)
    return out


def acceptance_criteria(call):
    with otlp_span(ENV, "acceptance_criteria", "TOOL", call["args"], **{"tool.name": "acceptance_criteria", "tool.id": call["id"]}) as sp:
        t = call["args"]["thickness_mm"]
        out = {"thickness_mm": t, "max_length_mm": _allowed(t), "cracks": "reject", "lack_of_fusion": "reject"}
        set_output(sp, out)
    return out


def record_finding(memory, weld, verdict, order):
    with otlp_span(ENV, "record_finding", "CHAIN", {"weld": weld, "verdict": verdict}, td_kind="state") as sp:
        key = weld
        if _switch("weld_finding_key") and weld == "N-2":
            key = order[order.index(weld) - 1]
        memory[key] = {"status": verdict["status"], "governing_length_mm": verdict["governing_length_mm"]}
        set_output(sp, {"key": key, "findings": dict(memory)})
    return memory


def route_repairs(memory):
    with otlp_span(ENV, "route_repairs", "GUARDRAIL", {"findings": memory}) as sp:
        out = sorted(w for w, f in memory.items() if f["status"] == "reject")
        set_output(sp, out)
    return out


def create_traveller(vessel, repair):
    with otlp_span(ENV, "create_traveller", "TOOL", {"vessel": vessel, **repair}, **{"tool.name": "create_traveller"}) as sp:
        out = {"traveller": f"RT-{vessel}-{repair['weld']}", "weld": repair["weld"], "status": "open"}
        set_output(sp, out)
    return out


def repair_planner(vessel, rejected, weld_map):
    with otlp_span(ENV, "repair_planner", "AGENT", {"vessel": vessel, "rejected": rejected}, **{"agent.name": "repair_planner"}) as sp:
        order = [w["weld"] for w in weld_map["welds"]]
        if _switch("weld_neighbour_repair"):
            targets = [weld_map["welds"][order.index(r) - 1] for r in rejected]
        else:
            targets = [weld_map["welds"][order.index(r)] for r in rejected]
        answer = chat(ENV, [{"role": "system", "content": "You plan weld repairs for rejected welds. Answer JSON."},
                            {"role": "user", "content": json.dumps({"vessel": vessel, "welds": targets})}])
        plan = json.loads(answer["content"])
        travellers = [create_traveller(vessel, r) for r in plan["repairs"]]
        set_output(sp, {"travellers": travellers})
    return travellers


def submit_report(vessel, memory, travellers):
    with otlp_span(ENV, "submit_report", "TOOL", {"vessel": vessel, "findings": memory, "travellers": travellers}, **{"tool.name": "submit_report"}) as sp:
        v = VESSELS[vessel]
        repaired = {t["weld"] for t in travellers}
        for w in _welds(v["shell"], v["nozzle"]):
            name = w["weld"]
            f = memory.get(name)
            inds = _indications(vessel, name)
            worst = max(i["length_mm"] for i in inds)
            allowed = _allowed(w["thickness_mm"])
            if f is None:
                raise ValueError(f"NDT report: weld {name} of {vessel} has no finding")
            if f["status"] == "accept" and f["governing_length_mm"] == 0.0:
                raise ValueError(f"NDT report: weld {name} of {vessel} accepted with no UT indication record on file (scan plan requires 100% volumetric)")
            if f["status"] == "accept" and worst > allowed:
                raise ValueError(f"NDT report: indication {worst} mm on {name} exceeds {allowed} mm allowed for t={w['thickness_mm']} mm, weld reported accepted")
            if name in repaired and worst <= allowed:
                raise ValueError(f"NDT report: repair traveller RT-{vessel}-{name} issued for weld {name}, whose UT record is acceptable")
            if worst > allowed and name not in repaired:
                raise ValueError(f"NDT report: rejected weld {name} of {vessel} has no repair traveller")
        out = {"report": f"NDT-{vessel}-UT", "welds": len(memory), "repairs": sorted(repaired)}
        set_output(sp, out)
    return out


def execute(inp: dict, env, run) -> None:
    global ENV
    ENV = env
    job = receive_job(inp)
    weld_map = get_weld_map(job["vessel"])
    order = [w["weld"] for w in weld_map["welds"]]
    memory = {}
    for w in weld_map["welds"]:
        report = fetch_ut_report(job["vessel"], w["weld"])
        inds = parse_indications(report)
        msgs = [{"role": "system", "content": "You evaluate UT indications of a weld against ASME VIII-1 acceptance criteria. Call acceptance_criteria, then answer JSON."},
                {"role": "user", "content": json.dumps({**w, "shell_thickness_mm": weld_map["shell_thickness_mm"], "indications": inds})}]
        ask = chat(env, msgs, tools=["acceptance_criteria"])
        [call] = calls_of(ask)
        crit = acceptance_criteria(call)
        final = chat(env, msgs + [ask, {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(crit)}])
        record_finding(memory, w["weld"], json.loads(final["content"]), order)
    rejected = route_repairs(memory)
    travellers = repair_planner(job["vessel"], rejected, weld_map) if rejected else []
    submit_report(job["vessel"], memory, travellers)
