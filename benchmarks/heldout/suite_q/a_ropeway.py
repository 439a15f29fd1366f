"""Ropeway grip inspections (route otlp): openai client instrumented by OpenInference, own spans
including a nested inspector AGENT span, OTel SDK in memory, written as OTLP/JSON."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.heldout.suite_q import kit
from benchmarks.heldout.suite_q.kit import Agent, Case


NAME = "ropeway-maint"

LINES = {
    "Alpenblick 8-MGD": {"model": "D-Line 8", "carriers": 9, "hours": 412, "date": "2026-12-09"},
    "Seegrat 6-CLD": {"model": "LPA 6", "carriers": 6, "hours": 388, "date": "2026-12-10"},
    "Hochmoos 10-MGD": {"model": "D-Line 10", "carriers": 14, "hours": 455, "date": "2026-12-11"},
    "Falkenkar 4-CLF": {"model": "LPA 4", "carriers": 5, "hours": 301, "date": "2026-12-08"},
    "Rothorn 8-MGD": {"model": "D-Line 8", "carriers": 11, "hours": 470, "date": "2026-12-14"},
    "Gamsleiten 6-CLD": {"model": "LPA 6", "carriers": 8, "hours": 366, "date": "2026-12-15"},
    "Kreuzjoch 8-MGD": {"model": "D-Line 8", "carriers": 10, "hours": 398, "date": "2026-12-17"},
    "Lärchwald 4-CLF": {"model": "LPA 4", "carriers": 4, "hours": 287, "date": "2026-12-18"},
    "Weisshang 10-MGD": {"model": "D-Line 10", "carriers": 7, "hours": 420, "date": "2026-12-16"},
}
MANUALS = [
    {"doc": "MAN-DL8-GR", "model": "D-Line 8", "interval_h": 500, "torque_nm": 160},
    {"doc": "MAN-DL10-GR", "model": "D-Line 10", "interval_h": 500, "torque_nm": 175},
    {"doc": "MAN-LPA6-GR", "model": "LPA 6", "interval_h": 450, "torque_nm": 140},
    {"doc": "MAN-LPA4-GR", "model": "LPA 4", "interval_h": 450, "torque_nm": 130},
]
SYS_PLAN = "Plan the grip inspection: answer JSON with carriers (list of ids) and closure_date (YYYY-MM-DD)."
SYS_ORDER = "Write the work order: answer JSON with torque_nm and a one-line instruction."


def policy(request):
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    data = json.loads(user)
    if system == SYS_PLAN:
        line = LINES[data["line"]]
        date = line["date"]
        if kit.active("rw_format"):
            y, m, d = date.split("-")
            date = f"{d}.{m}.{y}"
        return json.dumps({"carriers": [f"C{i:02d}" for i in range(1, line["carriers"] + 1)], "closure_date": date})
    if system == SYS_ORDER:
        torque = data["manual"]["torque_nm"]
        for note in data["notes"]:
            if "torque" in note and "Nm" in note:
                torque = int(note.split("torque ")[1].split(" Nm")[0])
        return json.dumps({"torque_nm": torque, "instruction": "Retorque grip bolts and record spring readings."})
    return "{}"


class Halted(RuntimeError):
    pass


Halted.__module__ = "ropeway.ops"


def agent(inp: dict, path: Path) -> None:
    # one instrumented client for both OTLP agents: the walling agent set the instrumentor up first
    from benchmarks.heldout.suite_q import a_walling
    from google.protobuf.json_format import MessageToDict
    from openai import OpenAI
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    st = a_walling._setup()
    st["server"].use(_combined_policy)
    spans, server = st["spans"], st["server"]
    tracer = st["provider"].get_tracer(NAME)
    spans.clear()
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    line_name = inp["line"]
    line = LINES[line_name]

    def span(name, kind, value):
        return tracer.start_as_current_span(name, attributes={
            "openinference.span.kind": kind, "input.value": json.dumps(value), "input.mime_type": "application/json"})

    def out(s, value):
        s.set_attribute("output.value", json.dumps(value))
        s.set_attribute("output.mime_type", "application/json")
        return value

    def ask(system, payload):
        r = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}])
        return json.loads(r.choices[0].message.content)

    try:
        with tracer.start_as_current_span(NAME, attributes={
                "openinference.span.kind": "AGENT", "agent.name": NAME,
                "input.value": f"Monthly grip inspection for {line_name}"}) as root:
            with span("read_request", "CHAIN", {"text": f"Monthly grip inspection for {line_name}"}) as s:
                out(s, {"line": line_name, "task": "grip inspection", "period": "2026-11"})
            with span("retrieve_manual", "RETRIEVER", {"query": f"{line['model']} detachable grip maintenance"}) as s:
                model = line["model"]
                if kit.active("rw_retrieval"):
                    model = {"D-Line 8": "D-Line 10", "D-Line 10": "D-Line 8", "LPA 6": "LPA 4",
                             "LPA 4": "LPA 6"}[model]  # nearest embedding
                manual = out(s, {"documents": [m for m in MANUALS if m["model"] == model]})["documents"][0]
            with span("operating_hours", "TOOL", {"line": line_name, "since": "2026-11-01"}) as s:
                since = "2026-11-01"
                hours = line["hours"]
                if kit.active("rw_ignore"):
                    since, hours = "2019-05-01", line["hours"] + 17822  # counter since commissioning
                ops = out(s, {"line": line_name, "since": since, "hours": hours})
            with span("compute_due", "CHAIN", {"hours": ops["hours"], "interval_h": manual["interval_h"]}) as s:
                due = out(s, {"remaining_h": manual["interval_h"] - ops["hours"]})
            plan = ask(SYS_PLAN, {"line": line_name, "remaining_h": due["remaining_h"]})
            with tracer.start_as_current_span("carrier_inspector", attributes={
                    "openinference.span.kind": "AGENT", "agent.name": "carrier_inspector",
                    "input.value": json.dumps({"carriers": plan["carriers"]})}) as sub:
                grades = []
                for c in plan["carriers"]:
                    with span("read_grip_force", "TOOL", {"line": line_name, "carrier": c}) as s:
                        k = int(c[1:])
                        force = out(s, {"carrier": c, "kN": round(46.0 + (k * 7 % 5) * 0.6, 1)})
                    with span("grade_grip", "CHAIN", force) as s:
                        grades.append(out(s, {"carrier": c, "grade": "A" if force["kN"] >= 47 else "B"}))
                sub.set_attribute("output.value", json.dumps({"graded": len(grades)}))
            with span("load_shift_notes", "TOOL", {"line": line_name}) as s:
                notes = [f"{line_name}: station bullwheel liner checked", "Night shift: anemometer heater ok"]
                if kit.active("rw_pollute"):
                    notes.append("Gondola Nord (Line 2): grip 14 replaced, torque 210 Nm on new bolts")
                out(s, {"notes": notes})
            order = ask(SYS_ORDER, {"line": line_name, "manual": manual, "notes": notes})
            with span("fetch_wind_forecast", "TOOL", {"line": line_name, "date": plan["closure_date"]}) as s:
                try:
                    if kit.active("rw_swallow"):
                        raise TimeoutError("forecast service timed out")
                    fc = {"gust_kmh": 38, "issued": "2026-12-03T06:00Z"}
                except TimeoutError:
                    fc = {"gust_kmh": 0, "issued": "1970-01-01T00:00Z"}
                out(s, fc)
            with span("safety_check", "TOOL", fc) as s:
                if not fc["issued"].startswith("2026-12"):
                    raise Halted("safety check: no wind forecast issued for the closure window")
                out(s, {"ok": True})
            with span("book_closure", "TOOL", {"line": line_name, "date": plan["closure_date"]}) as s:
                parts = plan["closure_date"].split("-")
                if len(parts) != 3:
                    raise Halted("Operations calendar: 400 Bad Request (closure_date)")
                out(s, {"closure": f"CL-{plan['closure_date']}", "line": line_name})
            with span("submit_work_order", "TOOL", {"line": line_name, "manual": manual["doc"],
                                                    "torque_nm": order["torque_nm"],
                                                    "remaining_h": due["remaining_h"]}) as s:
                sheet = next(m for m in MANUALS if m["model"] == line["model"])
                if due["remaining_h"] < 0:
                    raise Halted(f"Maintenance system: {line_name} locked, grip overhaul interval exceeded")
                if manual["doc"] != sheet["doc"]:
                    raise Halted("Maintenance system: 409 work order references a document not approved "
                                 "for this installation")
                if abs(order["torque_nm"] - sheet["torque_nm"]) > 5:
                    raise Halted("Maintenance system: 422 torque outside the manufacturer sheet")
                out(s, {"work_order": f"WO-{len(line_name) * 53}", "status": "released"})
            root.set_attribute("output.value", json.dumps({"grades": len(grades), "closure": plan["closure_date"]}))
    except Halted:
        pass
    data = MessageToDict(encode_spans(spans.get_finished_spans()))
    Path(path).write_text(json.dumps(data))


def _combined_policy(request):
    from benchmarks.heldout.suite_q import a_walling

    system = request.body["messages"][0]["content"]
    if system in (SYS_PLAN, SYS_ORDER):
        return policy(request)
    return a_walling.policy(request)


CASES = [
    Case("ropeway_retrieval", NAME, "otlp", "wrong_retrieval", "rw_retrieval", {"line": "Seegrat 6-CLD"},
         "retrieve_manual", "MAN-LPA4-GR"),
    Case("ropeway_ignored", NAME, "otlp", "tool_ignores_argument", "rw_ignore", {"line": "Weisshang 10-MGD"},
         "operating_hours", "2019-05-01"),
    Case("ropeway_format", NAME, "otlp", "format_drift", "rw_format", {"line": "Hochmoos 10-MGD"}, None,
         "11.12.2026"),
    Case("ropeway_pollution", NAME, "otlp", "context_pollution", "rw_pollute", {"line": "Falkenkar 4-CLF"},
         "load_shift_notes", "Gondola Nord"),
    Case("ropeway_swallow", NAME, "otlp", "swallowed_error", "rw_swallow", {"line": "Rothorn 8-MGD"},
         "fetch_wind_forecast", "1970-01-01"),
]
REFS = [{"line": "Alpenblick 8-MGD"}, {"line": "Gamsleiten 6-CLD"}, {"line": "Kreuzjoch 8-MGD"},
        {"line": "Lärchwald 4-CLF"}]

AGENT = Agent(NAME, "otlp", "json", agent, CASES, REFS)
