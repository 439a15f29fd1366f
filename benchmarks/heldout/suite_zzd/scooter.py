"""Electric scooter impound (OpenTelemetry spans with OpenInference conventions, as OTLP/JSON).

A council impound desk agent reads a batch of tow reports, parses each one, looks up the operator from the
frame number, builds the case context, lets the model classify the violation, records custody, fetches the
storage days from the yard, computes the fees, hands the notices to an operator liaison agent (its own model
call and a notice tool per operator) and issues the release invoices through the council's payments API,
which validates them against the yard log and the frame registry.
"""

from __future__ import annotations

import json
from pathlib import Path

from openai import OpenAI

from .common import Case, OtlpRecording, span_io
from .kit import active

AGENT = "scooter-impound-desk"
ROUTE = "otlp"
DOMAIN = "electric scooter impound"
SHAPE = "OTLP: tow-report tool, per-report parse → lookup → context → llm classify → custody loop, yard tool, fees, liaison sub-agent with notice tools, invoices"

OPERATORS = {"VLT": "Voltra", "ZPP": "Zippa", "BRD": "Birdie"}
RESTRICTED = {"Station Forecourt", "Castle Green"}
TOW_FEE = {"OB-1": 75.0, "RZ-3": 120.0, "AB-2": 60.0}
BATCHES = {  # report id | frame | location | reason | yard bay | storage days
    "IMP-0311": ["0311-01|VLT8K2231|Harbour St|blocking tactile paving|B-03|2",
                 "0311-02|ZPP4Q0917|Station Forecourt|parked in no-parking zone|B-04|1",
                 "0311-03|BRD2M5520|Mill Rd|left on its side across footway|B-05|3",
                 "0311-04|VLT8K2290|Quay Walk|abandoned over 72 h|B-06|5",
                 "0311-05|ZPP4Q1002|Castle Green|ridden into pedestrian zone and left|B-07|1",
                 "0311-06|BRD2M5588|Harbour St|blocking bus stop|B-08|2"],
    "IMP-0318": ["0318-01|BRD2M6001|Castle Green|parked on the lawn|B-11|1",
                 "0318-02|VLT8K2402|Mill Rd|blocking dropped kerb|B-12|2",
                 "0318-03|ZPP4Q1133|Harbour St|blocking tactile paving|B-13|4",
                 "0318-04|VLT8K2415|Quay Walk|abandoned over 72 h|B-14|6",
                 "0318-05|ZPP4Q1140|Station Forecourt|parked in no-parking zone|B-15|1"],
    "IMP-0304": ["0304-01|ZPP4Q0801|Mill Rd|blocking dropped kerb|B-01|2",
                 "0304-02|VLT8K2105|Station Forecourt|parked in no-parking zone|B-02|1",
                 "0304-03|BRD2M5401|Quay Walk|abandoned over 72 h|B-09|4"],
    "IMP-0325": ["0325-01|VLT8K2510|Harbour St|blocking bus stop|B-16|1",
                 "0325-02|BRD2M6120|Mill Rd|left on its side across footway|B-17|2",
                 "0325-03|BRD2M6133|Castle Green|parked on the lawn|B-18|3",
                 "0325-04|ZPP4Q1201|Quay Walk|abandoned over 72 h|B-19|7"],
    "IMP-0401": ["0401-01|ZPP4Q1310|Station Forecourt|parked in no-parking zone|B-02|2",
                 "0401-02|ZPP4Q1322|Harbour St|blocking tactile paving|B-03|1"],
    "IMP-0408": ["0408-01|BRD2M6250|Quay Walk|abandoned over 72 h|B-05|3",
                 "0408-02|VLT8K2601|Mill Rd|blocking dropped kerb|B-06|1",
                 "0408-03|ZPP4Q1405|Castle Green|ridden into pedestrian zone and left|B-07|2",
                 "0408-04|VLT8K2633|Harbour St|blocking bus stop|B-08|1",
                 "0408-05|BRD2M6271|Mill Rd|blocking dropped kerb|B-09|2"],
}
INPUTS = {k: k for k in BATCHES}
REFS = ["IMP-0304", "IMP-0325", "IMP-0401", "IMP-0408"]

CASES = [
    Case("zzd-scooter-01", "bad_memory_write", "scooter.custody_bay", "IMP-0311", "record_custody", 2,
         "issue_release_invoices", 1, "From the second report on, custody is written with the previous scooter's "
         "bay, so ZPP4Q0917's release invoice gives bay B-03 while the yard has it in B-04."),
    Case("zzd-scooter-02", "subagent_wrong_entity", "scooter.liaison_merge", "IMP-0318", "ChatCompletion", 6,
         "issue_release_invoices", 1, "The liaison agent's model addresses Zippa's scooters to Voltra, and the "
         "invoices are billed to the operator that was notified."),
    Case("zzd-scooter-03", "context_pollution", "scooter.carry_notes", "IMP-0311", "build_case_context", 3,
         "issue_release_invoices", 1, "The case context for report 0311-03 keeps the previous report's Station "
         "Forecourt note, so the model classifies a Mill Rd tow as a restricted-zone violation."),
    Case("zzd-scooter-04", "swallowed_error", "scooter.notice_503", "IMP-0318", "send_notice", 3,
         "issue_release_invoices", 1, "The notice to the last operator fails with a 503 that the notice tool "
         "catches and reports as sent, so no notice is on record when the invoices go out."),
    Case("zzd-scooter-05", "truncated_result", "scooter.report_page", "IMP-0311", "read_tow_reports", 1,
         "issue_release_invoices", 1, "The tow-report feed answers only its first page of four reports, so two "
         "towed scooters in the yard get no invoice."),
]


def _policy(request):
    messages = request.body["messages"]
    system, data = messages[0]["content"], json.loads(messages[-1]["content"])
    if system.startswith("Classify the impound violation"):
        places = [n["location"] for n in data["context"]]
        if any(p in RESTRICTED for p in places):
            code = "RZ-3"
        elif "abandoned" in data["report"]["reason"]:
            code = "AB-2"
        else:
            code = "OB-1"
        return json.dumps({"report": data["report"]["report"], "code": code})
    if system.startswith("You are the operator liaison"):
        notices: dict[str, list] = {}
        for case in data["cases"]:
            operator = case["operator"]
            if active("scooter.liaison_merge") and operator == "Zippa":
                operator = "Voltra"
            notices.setdefault(operator, []).append(case["frame"])
        return json.dumps({"notices": [{"operator": o, "frames": f} for o, f in sorted(notices.items())]})
    raise ValueError("unexpected prompt")


class PaymentsError(RuntimeError):
    pass


def record(server, key: str, path: Path) -> None:
    server.use(_policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    yard = {line.split("|")[1]: line.split("|") for line in BATCHES[key]}
    sent: dict[str, list] = {}

    def chat(system: str, payload: dict) -> dict:
        reply = client.chat.completions.create(model="impound-model", messages=[
            {"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}])
        return json.loads(reply.choices[0].message.content)

    def invoice_api(invoices: list[dict]) -> dict:
        if len(invoices) != len(yard):
            raise PaymentsError(f"HTTP 422 Unprocessable Entity: batch {key} has {len(yard)} scooters in the yard "
                                f"log, {len(invoices)} invoices submitted")
        for inv in invoices:
            row = yard[inv["frame"]]
            registered = OPERATORS[inv["frame"][:3]]
            if inv["operator"] != registered:
                raise PaymentsError(f"HTTP 422 Unprocessable Entity: invoice {inv['invoice']} billed to "
                                    f"{inv['operator']}; frame {inv['frame']} is registered to {registered}")
            if inv["bay"] != row[4]:
                raise PaymentsError(f"HTTP 409 Conflict: invoice {inv['invoice']} gives collection bay {inv['bay']} "
                                    f"for {inv['frame']}; yard log has bay {row[4]}")
            if (inv["code"] == "RZ-3") != (row[2] in RESTRICTED):
                raise PaymentsError(f"HTTP 422 Unprocessable Entity: code {inv['code']} for {inv['frame']} does "
                                    f"not fit tow location '{row[2]}'")
            if inv["frame"] not in sent.get(inv["operator"], []):
                raise PaymentsError(f"HTTP 409 Conflict: no delivered notice on record for {inv['operator']} "
                                    f"frame {inv['frame']}; invoices require prior notice")
        return {"status": 201, "batch": key, "invoices": len(invoices),
                "total_eur": round(sum(i["amount_eur"] for i in invoices), 2)}

    def tool_span(tracer, name, args, fn):
        with tracer.start_as_current_span(name) as s:
            s.set_attribute("tool.name", name)
            out = fn()
            span_io(s, "TOOL", args, out)
            return out

    with OtlpRecording(path, AGENT) as tracer:
        try:
            with tracer.start_as_current_span(AGENT) as root:
                span_io(root, "AGENT", {"batch": key})
                root.set_attribute("agent.name", AGENT)

                def feed():
                    rows = list(BATCHES[key])
                    if active("scooter.report_page"):
                        rows = rows[:4]
                    return {"batch": key, "reports": rows}

                reports = tool_span(tracer, "read_tow_reports", {"batch": key}, feed)["reports"]
                cases, custody, notes = [], {}, []
                last_bay = None
                for raw in reports:
                    with tracer.start_as_current_span("parse_tow_report") as s:
                        rid, frame, location, reason, bay, _ = raw.split("|")
                        report = {"report": rid, "frame": frame, "location": location, "reason": reason, "bay": bay}
                        span_io(s, "CHAIN", {"line": raw}, report)
                    operator = tool_span(tracer, "lookup_operator", {"frame": frame},
                                         lambda: {"frame": frame, "operator": OPERATORS[frame[:3]]})["operator"]
                    with tracer.start_as_current_span("build_case_context") as s:
                        note = {"report": rid, "location": location}
                        notes = [*notes, note] if active("scooter.carry_notes") else [note]
                        span_io(s, "CHAIN", report, {"context": notes})
                    verdict = chat("Classify the impound violation from the report and its context notes: "
                                   "OB-1 obstruction, RZ-3 restricted zone, AB-2 abandoned. Answer JSON.",
                                   {"report": report, "context": notes})
                    with tracer.start_as_current_span("record_custody") as s:
                        where = last_bay if active("scooter.custody_bay") and last_bay else bay
                        custody[frame] = {"bay": where, "operator": operator, "code": verdict["code"]}
                        span_io(s, "CHAIN", {"frame": frame, "bay": bay}, {"custody": frame, **custody[frame]})
                        last_bay = bay
                    cases.append({"frame": frame, "operator": operator, "code": verdict["code"]})
                days = tool_span(tracer, "storage_days", {"frames": [c["frame"] for c in cases]},
                                 lambda: {"days": {f: int(yard[f][5]) for f in (c["frame"] for c in cases)}})["days"]
                with tracer.start_as_current_span("compute_fees") as s:
                    fees = {c["frame"]: round(TOW_FEE[c["code"]] + 12.5 * days[c["frame"]], 2) for c in cases}
                    span_io(s, "CHAIN", {"cases": cases, "days": days}, {"fees_eur": fees})
                with tracer.start_as_current_span("operator_liaison") as sub:
                    sub.set_attribute("agent.name", "operator_liaison")
                    plan = chat("You are the operator liaison: group the impounded scooters into one notice per "
                                "operator. Answer JSON.", {"batch": key, "cases": cases})
                    for notice in plan["notices"]:
                        def send(notice=notice):
                            try:
                                if active("scooter.notice_503") and notice is plan["notices"][-1]:
                                    raise ConnectionError("503 Service Unavailable from operator notice gateway")
                                sent[notice["operator"]] = list(notice["frames"])
                                return {"operator": notice["operator"], "notice": f"N-{key}-{notice['operator'][:3]}",
                                        "frames": notice["frames"], "sent": True}
                            except ConnectionError:
                                return {"operator": notice["operator"], "notice": None, "frames": notice["frames"],
                                        "sent": True}
                        tool_span(tracer, "send_notice", notice, send)
                    span_io(sub, "AGENT", {"cases": len(cases)}, plan)
                billed = {f: n["operator"] for n in plan["notices"] for f in n["frames"]}
                with tracer.start_as_current_span("issue_release_invoices") as s:
                    s.set_attribute("tool.name", "issue_release_invoices")
                    invoices = [{"invoice": f"INV-{key}-{c['frame']}", "frame": c["frame"], "operator": billed[c["frame"]],
                                 "bay": custody[c["frame"]]["bay"], "code": c["code"], "amount_eur": fees[c["frame"]]}
                                for c in cases]
                    span_io(s, "TOOL", {"invoices": invoices})
                    result = invoice_api(invoices)
                    span_io(s, "TOOL", None, result)
                root.set_attribute("output.value", json.dumps(result))
        except PaymentsError:
            pass
