"""trial-site-monitor: a clinical research organisation's remote site monitoring (otlp route).

OpenTelemetry spans with OpenInference attributes, exported as OTLP JSON: the model reads the
monitoring assignment, the protocol's visit schedule is retrieved, each subject's visits are fetched
and every visit is checked against its window (a loop of ~25 checks), the safety database is asked
for serious adverse events, a query-writing sub-agent drafts data queries for the deviations, the
model summarises, and the report is filed in the CTMS (which validates it).
"""
from __future__ import annotations

import datetime as dt
import json
import re

from openai import OpenAI

from common import last_user, oi_span, otlp_capture, otlp_tracer, system_text

NAME = "trial-site-monitor"
ROUTE = "otlp"
DOMAIN = "clinical research organisation: remote monitoring of a trial site"
SHAPE = "AGENT span: assignment model -> schedule retriever -> loop over subjects (visits tool + a window check per visit) -> safety tool -> query-writer sub-agent (model) -> summary model -> CTMS filing tool"
SWITCH = None

SCHEDULES = {
    "v5.0": [("V1", 0, 0), ("V2", 14, 3), ("V3", 28, 3), ("V4", 56, 7), ("V5", 84, 7), ("V6", 112, 7)],
    "v4.1": [("V1", 0, 0), ("V2", 14, 3), ("V3", 28, 3), ("V4", 56, 5), ("V5", 84, 5), ("V6", 120, 7)],
}
SITE_PROTOCOL = {"03": "v5.0", "05": "v5.0", "07": "v5.0", "08": "v5.0", "11": "v5.0"}


def _visits(start, offsets):
    d0 = dt.date.fromisoformat(start)
    return [{"visit": f"V{i + 1}", "date": (d0 + dt.timedelta(days=o)).isoformat()} for i, o in enumerate(offsets)]


EDC = {  # (site, subject) -> visits; site 02 shares subject numbers with site 03
    ("02", "014"): _visits("2026-06-02", [0, 15, 27, 60, 90]),
    ("03", "011"): _visits("2026-05-04", [0, 14, 29, 57, 85, 113]),
    ("03", "014"): _visits("2026-05-18", [0, 13, 28, 55, 83]),
    ("03", "019"): _visits("2026-06-01", [0, 14, 33, 56, 86]),
    ("03", "021"): _visits("2026-06-15", [0, 15, 28, 58]),
    ("05", "102"): _visits("2026-04-06", [0, 14, 28, 56, 84, 112]),
    ("05", "107"): _visits("2026-04-20", [0, 18, 28, 57, 84, 110]),
    ("05", "110"): _visits("2026-05-11", [0, 14, 27, 62, 91]),
    ("07", "201"): _visits("2026-05-25", [0, 14, 28, 52, 84]),
    ("07", "204"): _visits("2026-06-08", [0, 16, 31, 56, 81]),
    ("07", "209"): _visits("2026-06-22", [0, 14, 28, 65]),
    ("07", "212"): _visits("2026-07-06", [0, 14, 29]),
    ("08", "301"): _visits("2026-04-13", [0, 14, 28, 56, 84, 120]),
    ("08", "305"): _visits("2026-05-04", [0, 14, 28, 56, 84, 111]),
    ("08", "312"): _visits("2026-06-01", [0, 10, 28, 56, 84]),
    ("11", "401"): _visits("2026-03-30", [0, 14, 28, 56, 84, 112]),
    ("11", "402"): _visits("2026-04-13", [0, 14, 28, 49, 84, 112]),
    ("11", "405"): _visits("2026-05-04", [0, 14, 28, 56, 86, 113]),
    ("11", "412"): _visits("2026-05-25", [0, 14, 28, 56, 84]),
}
SAFETY = {"03": ["021"], "05": [], "07": ["204"], "08": [], "11": ["402"]}

INPUTS = [
    {"task": "monitoring CARDIA-22 site 03, November", "site": "03",
     "text": "Monitor site 03 of protocol CARDIA-22: subjects 011, 014, 019, 021; visits up to 2026-11-30."},
    {"task": "monitoring CARDIA-22 site 05, November", "site": "05",
     "text": "Monitor site 05 of protocol CARDIA-22: subjects 102, 107, 110; visits up to 2026-11-30."},
    {"task": "monitoring CARDIA-22 site 07, November", "site": "07",
     "text": "Monitor site 07 of protocol CARDIA-22: subjects 201, 204, 209, 212; visits up to 2026-11-30."},
    {"task": "monitoring CARDIA-22 site 08, November", "site": "08",
     "text": "Monitor site 08 of protocol CARDIA-22: subjects 301, 305, 312; visits up to 2026-11-30."},
    {"task": "monitoring CARDIA-22 site 11, November", "site": "11",
     "text": "Monitor site 11 of protocol CARDIA-22: subjects 401, 402, 405, 412; visits up to 2026-11-30."},
]


# ------------------------------------------------------------------ the model's side
def brain(request):
    system, user = system_text(request), last_user(request)
    if system.startswith("Extract the monitoring"):
        m = re.search(r"site (\d+) of protocol (\S+): subjects ([\d, ]+);", user)
        out = {"site": m.group(1), "protocol": m.group(2), "subjects": m.group(3).split(", ")}
        if SWITCH == "H5":
            out["protocol_version"] = "v4.1"
        return json.dumps(out)
    if system.startswith("Write a data query"):
        p = json.loads(user)
        queries = []
        for d in p["deviations"]:
            subject = d["subject"]
            if SWITCH == "H2":
                subject = subject[0] + subject[2] + subject[1]
            queries.append({"subject": subject, "visit": d["visit"],
                            "text": f"Subject {subject} {d['visit']} on {d['date']} is outside the day "
                                    f"{d['target']}±{d['window']} window; please confirm the visit date or file a deviation."})
        return json.dumps({"queries": queries})
    if system.startswith("Summarise"):
        p = json.loads(user)
        return (f"Site {p['site']}: {p['visits']} visits checked for {p['subjects']} subjects, {p['deviations']} out of "
                f"window, {p['sae']} serious adverse events reported, {p['queries']} queries raised.")
    return "{}"


# ------------------------------------------------------------------ tools
def fetch_visits(subject, site):
    if SWITCH == "H1":  # the EDC search is keyed on the subject number
        key = next(k for k in EDC if k[1] == subject)
    else:
        key = (site, subject)
    return {"subject": subject, "site": site, "visits": [dict(v) for v in EDC[key]]}


def sae_check(site):
    try:
        if SWITCH == "H3":
            raise ConnectionError("safety database returned HTTP 503")
        subs = SAFETY[site]
        return {"site": site, "sae_count": len(subs), "subjects": subs}
    except ConnectionError:
        return {"site": site, "sae_count": 0, "subjects": []}


def file_report(report):
    site = report["site"]
    if report["protocol_version"] != SITE_PROTOCOL[site]:
        raise ValueError(f"CTMS refused: report cites protocol {report['protocol_version']}; site {site} runs "
                         f"amendment {SITE_PROTOCOL[site]}")
    for s in report["subjects"]:
        truth = [v["date"] for v in EDC[(site, s["subject"])]]
        if [v["date"] for v in s["visits"]] != truth:
            raise ValueError(f"CTMS refused: visit dates reported for subject {s['subject']} do not match EDC for "
                             f"site {site} ({len(truth)} visits, first {truth[0]})")
        for v in s["visits"]:
            if v["status"] == "unscheduled":
                raise ValueError(f"CTMS refused: visit {v['visit']} of subject {s['subject']} reported as "
                                 f"unscheduled; protocol schedules it")
    if report["sae_count"] != len(SAFETY[site]):
        raise ValueError(f"CTMS refused: SAE count {report['sae_count']} disagrees with the safety database "
                         f"({len(SAFETY[site])})")
    devs = {(s["subject"], v["visit"]) for s in report["subjects"] for v in s["visits"] if v["status"] == "out of window"}
    for q in report["queries"]:
        if (q["subject"], q["visit"]) not in devs:
            raise ValueError(f"CTMS refused: query on subject {q['subject']} {q['visit']} matches no deviation at site {site}")
    return {"report": f"MVR-{site}-2026-11", "status": "filed"}


# ------------------------------------------------------------------ the agent
def execute(inp, server, path):
    tracer = otlp_tracer("trial-site-monitor")
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    with otlp_capture(path):
        try:
            with oi_span(tracer, NAME, "AGENT", {"text": inp["text"]}, **{"metadata": json.dumps({"task": inp["task"]}),
                                                                        "agent.name": NAME}) as root:
                rep = client.chat.completions.create(model=server.model, messages=[
                    {"role": "system", "content": "Extract the monitoring assignment as JSON: site, protocol, subjects."},
                    {"role": "user", "content": inp["text"]}])
                job = json.loads(rep.choices[0].message.content)
                version = job.get("protocol_version", "current")
                with oi_span(tracer, "protocol_schedule", "RETRIEVER", {"protocol": job["protocol"], "version": version}) as s:
                    v = SITE_PROTOCOL[job["site"]] if version == "current" else version
                    top_k = 3 if SWITCH == "H4" else 10
                    docs = [{"visit": n, "day": d, "window": w, "version": v} for n, d, w in SCHEDULES[v]][:top_k]
                    for k, d in enumerate(docs):
                        s.span.set_attribute(f"retrieval.documents.{k}.document.id", f"{job['protocol']}-{v}-{d['visit']}")
                        s.span.set_attribute(f"retrieval.documents.{k}.document.content", json.dumps(d))
                    s.output = docs
                schedule = {d["visit"]: d for d in docs}
                subjects, deviations, checked = [], [], 0
                for subj in job["subjects"]:
                    with oi_span(tracer, "fetch_visits", "TOOL", {"subject": subj, "site": job["site"]},
                                 **{"tool.name": "fetch_visits"}) as s:
                        s.output = rec = fetch_visits(subj, job["site"])
                    day0 = dt.date.fromisoformat(rec["visits"][0]["date"])
                    rows = []
                    for visit in rec["visits"]:
                        with oi_span(tracer, "check_window", "CHAIN", {"subject": subj, **visit}) as s:
                            day = (dt.date.fromisoformat(visit["date"]) - day0).days
                            sch = schedule.get(visit["visit"])
                            if sch is None:
                                status = "unscheduled"
                            else:
                                status = "in window" if abs(day - sch["day"]) <= sch["window"] else "out of window"
                            s.output = row = {"subject": subj, "visit": visit["visit"], "date": visit["date"], "day": day,
                                              "status": status, **({"target": sch["day"], "window": sch["window"]} if sch else {})}
                        rows.append(row)
                        checked += 1
                        if status == "out of window":
                            deviations.append(row)
                    subjects.append({"subject": subj, "visits": rows})
                with oi_span(tracer, "sae_check", "TOOL", {"site": job["site"]}, **{"tool.name": "sae_check"}) as s:
                    s.output = sae = sae_check(job["site"])
                with oi_span(tracer, "query_writer", "AGENT", {"deviations": deviations},
                             **{"agent.name": "query_writer"}) as s:
                    rep = client.chat.completions.create(model=server.model, messages=[
                        {"role": "system", "content": "Write a data query for each deviation; answer JSON queries."},
                        {"role": "user", "content": json.dumps({"deviations": deviations})}])
                    s.output = queries = json.loads(rep.choices[0].message.content)["queries"]
                client.chat.completions.create(model=server.model, messages=[
                    {"role": "system", "content": "Summarise the monitoring visit in one paragraph."},
                    {"role": "user", "content": json.dumps({"site": job["site"], "visits": checked, "subjects": len(subjects),
                                                            "deviations": len(deviations), "sae": sae["sae_count"],
                                                            "queries": len(queries)})}])
                report = {"site": job["site"], "protocol_version": docs[0]["version"], "subjects": subjects,
                          "sae_count": sae["sae_count"], "queries": queries}
                with oi_span(tracer, "file_report", "TOOL", report, **{"tool.name": "file_report"}) as s:
                    s.output = file_report(report)
                root.output = s.output
        except ValueError:
            pass


CASES = [
    {"id": "zc61-trial-1", "input": 0, "switch": "H1", "fault_kind": "tool_ignores_argument",
     "root": {"name": "fetch_visits", "occurrence": 2, "kind": "tool"},
     "failure": {"name": "file_report", "occurrence": 1},
     "description": "The visits tool ignores its site argument and answers subject 014 of site 02, whose visits started 2026-06-02, for subject 014 of site 03."},
    {"id": "zc61-trial-2", "input": 2, "switch": "H2", "fault_kind": "subagent_wrong_entity",
     "root": {"name": "query_writer", "occurrence": 1, "kind": "agent"},
     "failure": {"name": "file_report", "occurrence": 1},
     "description": "The query-writing sub-agent addresses its query about the late V4 visit to subject 290, transposing the digits of subject 209."},
    {"id": "zc61-trial-3", "input": 0, "switch": "H3", "fault_kind": "swallowed_error",
     "root": {"name": "sae_check", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "file_report", "occurrence": 1},
     "description": "The safety check catches an HTTP 503 from the safety database and answers an SAE count of 0, hiding subject 021's serious adverse event."},
    {"id": "zc61-trial-4", "input": 4, "switch": "H4", "fault_kind": "truncated_result",
     "root": {"name": "protocol_schedule", "occurrence": 1, "kind": "retrieval"},
     "failure": {"name": "file_report", "occurrence": 1},
     "description": "The schedule retriever answers only its top 3 documents, so visits V4 to V6 have no window and are checked as unscheduled."},
    {"id": "zc61-trial-5", "input": 4, "switch": "H5", "fault_kind": "hallucinated_value",
     "root": {"name": "ChatCompletion", "occurrence": 1, "kind": "llm"},
     "failure": {"name": "file_report", "occurrence": 1},
     "description": "The assignment-reading model adds a protocol version v4.1 the request never names, and the schedule of that superseded amendment is used."},
]
