"""Neighbourhood participatory-budgeting vote count run by volunteer counters: tally sheets of each ballot box
are read, checked against the register, and the projects that fit the pot are funded and announced.

Route: otlp (the OpenTelemetry SDK with OpenInference attributes; the model calls traced by
openinference-instrumentation-openai; exported as one OTLP JSON document). Shape: input, planning model call and
its parser, project-list retriever, a loop over ballot boxes (scan tool, tally parser), tabulation, register tool,
two guardrails, a funding decision, a publishing tool, a tool-calling model (notify tool) and a final audit.
"""

from __future__ import annotations

import json
import re

import _common
from _common import chat, fn_tool, last_user_json, messages_of, set_output, span_attrs, system_of, write_otlp

NAME = "pb-vote-count"
ROUTE = "otlp"
DOMAIN = "participatory-budgeting neighbourhood vote count (volunteer counters)"
SHAPE = ("input, llm plan + parser, retriever, per-box tool/parse loop, tabulation, register tool, 2 guardrails, "
         "funding condition, publish tool, tool-calling llm + tool, final audit")
SWITCH = None

WARDS = {
    "Castle": {"budget": 22000, "neighbour": "Eastgate", "projects": {
        "C-01": ("Skate ramp by the leisure centre", 9000, 300), "C-02": ("Community piano", 2500, 150),
        "C-03": ("Wildflower verges", 3000, 220), "C-04": ("Homework club laptops", 7000, 260),
        "C-05": ("Cycle rack", 1200, 100)}},
    "Eastgate": {"budget": 30000, "neighbour": "Westgate", "projects": {
        "E-01": ("Community orchard", 8000, 280), "E-02": ("Skate park lighting and resurfacing at Bank Road", 18500, 330),
        "E-03": ("Library garden benches", 4200, 190), "E-04": ("Youth football kit", 6000, 150),
        "E-05": ("Play street closures", 3500, 120)}},
    "Westgate": {"budget": 18000, "neighbour": "Eastgate", "projects": {
        "W-01": ("Pond clean-up", 5000, 200), "W-02": ("Men's shed tools", 3000, 140),
        "W-03": ("Heritage trail signs", 7000, 180), "W-04": ("Allotment water butts", 1500, 90)}},
    "Northfield": {"budget": 25000, "neighbour": "Holme", "projects": {
        "N-01": ("Community fridge", 6000, 240), "N-02": ("Benches on Hill Lane", 3000, 160),
        "N-03": ("Mural at the underpass by the railway station entrance", 9000, 270),
        "N-04": ("Dementia-friendly cafe kit", 4500, 200), "N-05": ("Cycle repair stand", 1800, 110)}},
    "Holme": {"budget": 15000, "neighbour": "Northfield", "projects": {
        "H-01": ("Village hall gutters", 6000, 210), "H-02": ("Bus stop timetable screens", 5500, 150),
        "H-03": ("Play park swings", 4500, 190), "H-04": ("Litter pickers and hoops", 900, 80),
        "H-05": ("Footpath lighting along the old railway line to school", 7500, 260)}},
    "Riverside": {"budget": 20000, "neighbour": "Castle", "projects": {
        "R-01": ("Riverbank planting", 7000, 280), "R-02": ("Kayak club storage", 8500, 310),
        "R-03": ("Street tree pits", 5000, 200), "R-04": ("Youth podcast studio", 6500, 250),
        "R-05": ("Warm space heaters for the chapel hall and annexe", 4000, 120)}},
}
BOXES = {"B1": ("community centre", 0.4), "B2": ("library", 0.3), "B3": ("school gate", 0.2), "postal": ("postal", 0.1)}
ORDER = ["B1", "B2", "B3", "postal"]

INPUTS = [{"task": f"count the {w} participatory budgeting vote, 2025 cycle", "ward": w}
          for w in ("Castle", "Eastgate", "Northfield", "Holme", "Riverside")]

CASES = [
    {"id": "pb_count-1", "input": 0, "kind": "off_by_one",
     "root": ("select_winners", 1, "condition"), "failure": ("publish_results", 1),
     "what": "the funding cut took ranked[:i + 1], including C-05 (the first project that does not fit)",
     "description": "The funding step kept the projects up to and including the first one that no longer fits "
                    "the pot, so the published total of 22,700 exceeds the 22,000 budget."},
    {"id": "pb_count-2", "input": 1, "kind": "wrong_retrieval",
     "root": ("fetch_project_list", 1, "retrieval"), "failure": ("tabulate", 1),
     "what": "the project-list search returned Westgate's ballot (W-01..W-04) for Eastgate",
     "description": "The project-list retriever returned the neighbouring Westgate ballot for Eastgate, so the "
                    "tally sheets' project codes are not on the list when the votes are tabulated."},
    {"id": "pb_count-3", "input": 2, "kind": "plan_error",
     "root": ("ChatCompletion", 1, "llm"), "failure": ("check_turnout", 1),
     "what": "the count plan left out the postal box ('counted by the council later')",
     "description": "The counting plan left the postal ballots out as if the council counted them separately, so "
                    "the ballots counted fall short of the register's turnout."},
    {"id": "pb_count-4", "input": 3, "kind": "lossy_parsing",
     "root": ("parse_tally_sheet", 1, "parse"), "failure": ("audit_marks", 1),
     "what": "the tally parser drops H-05, whose name wraps onto a second line on the sheet (104 marks in B1)",
     "description": "The tally-sheet parser read line by line and dropped the footpath-lighting project whose name "
                    "wraps onto a second line, so the community-centre box's marks no longer add up."},
    {"id": "pb_count-5", "input": 4, "kind": "wrong_tool_args",
     "root": ("ChatCompletion", 2, "llm"), "failure": ("final_audit", 1),
     "what": "the announcing model notified the top three by votes (R-02, R-01, R-04) instead of the funded R-02, R-01, R-05",
     "description": "The announcing model called notify_project_leads with the top three projects by votes rather "
                    "than the funded ones, so the final audit finds an unfunded project notified."},
]


def _sheet(ward: str, box: str) -> str:
    label, weight = BOXES[box]
    lines, marks = [], 0
    for code, (name, _cost, base) in WARDS[ward]["projects"].items():
        votes = round(base * weight)
        marks += votes
        dots = "." * max(3, 40 - len(name))
        if len(name) > 34:  # the sheet template wraps long names
            cut = name.rfind(" ", 0, 34)
            lines.append(f"{code} {name[:cut]}")
            lines.append(f"     {name[cut + 1:]} {dots} {votes}")
        else:
            lines.append(f"{code} {name} {dots} {votes}")
    ballots = -(-marks // 3) + 7
    return "\n".join([f"BOX {box} {label}  ballots: {ballots}"] + lines + [f"Total marks: {marks}"])


def _turnout(ward: str) -> int:
    return sum(int(re.search(r"ballots: (\d+)", _sheet(ward, b)).group(1)) for b in ORDER)


NOTIFY = fn_tool("notify_project_leads", "Tell the leads of funded projects they won.",
                 {"project_ids": {"type": "array", "items": {"type": "string"}}})


def execute(inp: dict, out_path: str) -> None:
    tracer = _common.otlp_tracer(NAME)
    try:
        _run(tracer, inp)
    except (ValueError, RuntimeError, KeyError):
        pass
    write_otlp(out_path)


def _span(tracer, name, kind, value_in, td_kind=None, **extra):
    return tracer.start_as_current_span(name, attributes=span_attrs(kind, value_in, td_kind=td_kind, **extra))


def _run(tracer, inp: dict) -> None:
    ward = inp["ward"]
    with _span(tracer, NAME, "AGENT", inp, metadata=json.dumps({"task": inp["task"]})) as top:
        with _span(tracer, "load_count_request", "CHAIN", inp, td_kind="input") as s:
            req = {"ward": ward, "budget": WARDS[ward]["budget"], "boxes_available": ORDER, "max_marks": 3}
            set_output(s, req)
        plan_reply = chat([
            {"role": "system", "content": "You plan a participatory budgeting count: which ballot boxes to count, "
                                          "the marks allowed per ballot and the pot. Answer JSON."},
            {"role": "user", "content": json.dumps(req)},
        ])
        with _span(tracer, "read_plan", "CHAIN", plan_reply["content"], td_kind="parse") as s:
            plan = json.loads(plan_reply["content"])
            set_output(s, plan)
        with _span(tracer, "fetch_project_list", "RETRIEVER", {"query": f"{ward} PB ballot 2025"}) as s:
            source = ward
            if SWITCH == "pb_count-2":
                source = WARDS[ward]["neighbour"]  # the nearest ballot by text similarity
            projects = {c: {"name": n, "cost": cost} for c, (n, cost, _) in WARDS[source]["projects"].items()}
            set_output(s, {"ballot": f"{source} 2025", "projects": projects})
        sheets = {}
        for box in plan["boxes"]:
            with _span(tracer, "fetch_box_scan", "TOOL", {"ward": ward, "box": box},
                       **{"tool.name": "fetch_box_scan"}) as s:
                text = _sheet(ward, box)
                set_output(s, text)
            with _span(tracer, "parse_tally_sheet", "CHAIN", text, td_kind="parse") as s:
                lines = text.splitlines()
                if not (SWITCH == "pb_count-4" and box == "B1"):
                    joined = []
                    for line in lines:  # a continuation line belongs to the project above it
                        if line.startswith("     ") and joined:
                            joined[-1] = joined[-1] + " " + line.strip()
                        else:
                            joined.append(line)
                    lines = joined
                counts = {}
                for line in lines[1:-1]:
                    m = re.match(r"^([A-Z]-\d\d) .*?\.+ (\d+)$", line)
                    if m:
                        counts[m.group(1)] = int(m.group(2))
                parsed = {"box": box, "ballots": int(re.search(r"ballots: (\d+)", lines[0]).group(1)),
                          "counts": counts, "total_marks": int(lines[-1].split(": ")[1])}
                sheets[box] = parsed
                set_output(s, parsed)
        with _span(tracer, "tabulate", "CHAIN", {"boxes": list(sheets), "projects": sorted(projects)}) as s:
            totals = {c: 0 for c in projects}
            for sh in sheets.values():
                for code, n in sh["counts"].items():
                    if code not in totals:
                        raise KeyError(f"tally sheet {sh['box']} has project {code}, which is not on the ballot list "
                                       f"({', '.join(sorted(projects))})")
                    totals[code] += n
            set_output(s, totals)
        with _span(tracer, "fetch_register_turnout", "TOOL", {"ward": ward},
                   **{"tool.name": "fetch_register_turnout"}) as s:
            turnout = {"ward": ward, "ballots_issued": _turnout(ward)}
            set_output(s, turnout)
        with _span(tracer, "check_turnout", "GUARDRAIL", {"counted": [sh["ballots"] for sh in sheets.values()],
                                                          "register": turnout}) as s:
            counted = sum(sh["ballots"] for sh in sheets.values())
            if counted != turnout["ballots_issued"]:
                raise ValueError(f"{counted} ballots counted; the register shows {turnout['ballots_issued']} issued")
            set_output(s, {"counted": counted})
        with _span(tracer, "audit_marks", "GUARDRAIL", {b: sh["total_marks"] for b, sh in sheets.items()}) as s:
            for sh in sheets.values():
                if sum(sh["counts"].values()) != sh["total_marks"]:
                    raise ValueError(f"box {sh['box']}: {sum(sh['counts'].values())} marks read, sheet total says "
                                     f"{sh['total_marks']}")
            set_output(s, {"boxes_ok": len(sheets)})
        with _span(tracer, "select_winners", "CHAIN", {"totals": totals, "budget": plan["budget"]},
                   td_kind="condition") as s:
            ranked = sorted(totals, key=lambda c: -totals[c])
            funded, spent = [], 0
            for i, code in enumerate(ranked):
                cost = projects[code]["cost"]
                if spent + cost > plan["budget"]:
                    if SWITCH == "pb_count-1":
                        funded = ranked[: i + 1]
                        spent = sum(projects[c]["cost"] for c in funded)
                        break
                    continue
                funded.append(code)
                spent += cost
            decision = {"ranking": ranked, "funded": funded, "spent": spent}
            set_output(s, decision)
        with _span(tracer, "publish_results", "TOOL", decision, **{"tool.name": "publish_results"}) as s:
            if decision["spent"] > WARDS[ward]["budget"]:
                raise ValueError(f"funded total {decision['spent']:,} exceeds the {WARDS[ward]['budget']:,} pot")
            set_output(s, {"published": f"pb.example.org/{ward.lower()}/2025"})
        messages = [
            {"role": "system", "content": "You announce participatory budgeting results: notify the leads of the "
                                          "funded projects, then write one line for the noticeboard."},
            {"role": "user", "content": json.dumps({"ward": ward, "ranking": ranked, "funded": funded,
                                                    "votes": totals})},
        ]
        first = chat(messages, tools=[NOTIFY])
        call = first["tool_calls"][0]
        args = json.loads(call["function"]["arguments"])
        with _span(tracer, "notify_project_leads", "TOOL", args, **{"tool.name": "notify_project_leads",
                                                                    "tool.id": call["id"]}) as s:
            sent = {"notified": args["project_ids"]}
            set_output(s, sent)
        line = chat(messages + [first, {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(sent)}])
        with _span(tracer, "final_audit", "GUARDRAIL", {"funded": funded, "notified": sent["notified"]}) as s:
            extra = sorted(set(sent["notified"]) - set(funded))
            if extra or set(funded) - set(sent["notified"]):
                raise ValueError(f"notified {', '.join(extra) or 'none'} not funded; funded but not notified: "
                                 f"{', '.join(sorted(set(funded) - set(sent['notified']))) or 'none'}")
            set_output(s, {"ok": True})
        set_output(top, line["content"])


def brain(request):
    system = system_of(request)
    msgs = messages_of(request)
    if system.startswith("You plan a participatory"):
        req = last_user_json(request)
        boxes = list(req["boxes_available"])
        if SWITCH == "pb_count-3":
            boxes = [b for b in boxes if b != "postal"]  # "postal votes are verified and counted by the council"
        return json.dumps({"boxes": boxes, "max_marks": req["max_marks"], "budget": req["budget"]})
    if system.startswith("You announce"):
        if msgs[-1]["role"] == "tool":
            d = json.loads(msgs[1]["content"])
            return f"{d['ward']} has funded {len(d['funded'])} projects this year: thank you for voting."
        d = json.loads(msgs[1]["content"])
        ids = d["funded"]
        if SWITCH == "pb_count-5":
            ids = d["ranking"][: len(d["funded"])]
        from trajdebug.testing import Reply, tool_call

        return Reply(tool_calls=(tool_call("notify_project_leads", {"project_ids": ids}),))
    return "Unknown request."
