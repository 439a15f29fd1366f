"""Canyoning guide service: a model plans the descent, then a loop over every section (gauge reading with a
retry, anchor log retrieval, model assessment, assessment parser), a route choice, equipment, the trip log and
a model briefing, and the trip plan filed with the park office; OpenInference + OpenTelemetry as OTLP JSON (otlp)."""
from __future__ import annotations

import json
import re

from openai import OpenAI

from otlp_kit import Trace
from trajdebug.testing import Reply

NAME = "canyon-guide-desk"
ROUTE = "otlp"
DOMAIN = "canyoning guide service"
SHAPE = "OTLP, long loop: planning model call + plan parser, then per section a gauge tool (one retried after a timeout), anchor log retriever, assessment model call and parser (6 to 12 sections, 30 to 60 spans), route choice chain, equipment tool, trip log tool, briefing model call, filing tool"
SWITCH = None

NAMES = ["Entry Slot", "Green Pool", "Keyhole", "Cathedral", "Twin Falls", "Narrows", "Black Chute", "Echo Room",
         "Fern Ledge", "Last Drop", "Mossy Step", "Exit Gorge"]


def canyon(code: str, n: int) -> list:
    out = []
    for i in range(n):
        anchors = [f"{code}{i + 1}-A{j + 1}" for j in range(2 + (i % 2))]
        out.append({"id": f"{code}{i + 1}", "name": NAMES[i], "rappel_m": 8 + (i * 5) % 22, "anchors": anchors,
                    "flow_m3s": round(0.4 + ((i * 3) % 7) / 10, 2)})
    return out


CANYONS = {
    "Rio Claro": canyon("RC", 6),
    "Barranco Mascun": canyon("BM", 9),
    "Val Bodengo": canyon("VB", 12),
    "Gorge du Verdon": canyon("GV", 8),
    "Canyon del Sol": canyon("CS", 7),
}
LIMITS = {"beginner": 1.0, "intermediate": 1.5, "advanced": 2.5}
INPUTS = [
    {"canyon": "Rio Claro", "date": "2027-07-03", "level": "beginner", "group": 6},
    {"canyon": "Barranco Mascun", "date": "2027-07-10", "level": "intermediate", "group": 5},
    {"canyon": "Val Bodengo", "date": "2027-07-17", "level": "advanced", "group": 4},
    {"canyon": "Gorge du Verdon", "date": "2027-07-24", "level": "beginner", "group": 8},
    {"canyon": "Canyon del Sol", "date": "2027-07-31", "level": "intermediate", "group": 6},
]

CASES = [
    {"id": "zzzh-canyon-01", "input": 1, "switch": "log", "fault_kind": "tool_ignores_argument",
     "root": "fetch_trip_log", "root_occurrence": 1, "failure": "ChatCompletion",
     "description": "The trip log lookup ignored its limit of 5 entries and returned the whole season of Barranco Mascun descents, so the briefing request was refused for its length."},
    {"id": "zzzh-canyon-02", "input": 2, "switch": "flow", "fault_kind": "unit_error",
     "root": "gauge_reading", "root_occurrence": 4, "failure": "file_trip_plan",
     "description": "The gauge reading for section VB3 (Keyhole) came back in litres per second (1000) in the cubic-metres-per-second field."},
    {"id": "zzzh-canyon-03", "input": 3, "switch": "route", "fault_kind": "wrong_routing",
     "root": "route_choice", "root_occurrence": 1, "failure": "file_trip_plan",
     "description": "The route choice put a beginner group of eight on the standard line of the Gorge du Verdon instead of the family line."},
    {"id": "zzzh-canyon-04", "input": 2, "switch": "plan", "fault_kind": "plan_error",
     "root": "ChatCompletion", "root_occurrence": 1, "failure": "file_trip_plan",
     "description": "The descent plan for Val Bodengo left out section VB9 (Fern Ledge), so that section was never gauged, inspected or assessed."},
    {"id": "zzzh-canyon-05", "input": 4, "switch": "anchors", "fault_kind": "truncated_result",
     "root": "anchor_log", "root_occurrence": 6, "failure": "file_trip_plan",
     "description": "The anchor log for section CS6 (Narrows) returned only its first two inspections, omitting anchor CS6-A3."},
]

_attempts: dict = {}


def policy(request):
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Plan the descent"):
        d = json.loads(user)
        ids = [s["id"] for s in d["sections"]]
        if SWITCH == "plan" and len(ids) > 9:
            ids.remove(ids[8])
        return json.dumps({"canyon": d["canyon"], "sections": ids})
    if system.startswith("Assess the section"):
        d = json.loads(user)
        return (f"Section {d['section']['id']} ({d['section']['name']}): flow {d['gauge']['flow_m3s']} m3/s, "
                f"rappel {d['section']['rappel_m']} m, anchors inspected: {', '.join(a['anchor'] for a in d['anchors'])}.")
    if system.startswith("Brief the group"):
        if len(user) > 12000:
            return Reply(status=400, error="This model's maximum context length is 8192 tokens; the messages hold more.")
        d = json.loads(user)
        return f"Briefing for {d['canyon']} on {d['date']}: {d['route']} line, {len(d['sections'])} sections, meet 07:00."
    return "Sorry."


def record(server, inp, path):
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    trace = Trace(NAME)
    guide = CANYONS[inp["canyon"]]
    _attempts.clear()

    def chat(system, payload):
        return client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}]).choices[0].message.content

    def gauge(section, date):
        key = section
        _attempts[key] = _attempts.get(key, 0) + 1
        if section.endswith("2") and len(section) == 3 and _attempts[key] == 1:
            raise TimeoutError(f"gauge station for {section} did not answer in 5 s")
        s = next(x for x in guide if x["id"] == section)
        flow = s["flow_m3s"]
        if SWITCH == "flow" and section == "VB3":
            flow = flow * 1000
        return {"section": section, "flow_m3s": flow, "at": f"{date}T06:00"}

    def anchors(section):
        s = next(x for x in guide if x["id"] == section)
        docs = [{"anchor": a, "inspected": "2027-05-12", "state": "sound"} for a in s["anchors"]]
        if SWITCH == "anchors" and section == "CS6":
            docs = docs[:2]
        return docs

    try:
        with trace, trace.span(NAME, "AGENT", f"Plan the {inp['canyon']} descent on {inp['date']}") as top:
            plan_text = chat("Plan the descent: list the sections in order as JSON.",
                             {"canyon": inp["canyon"], "sections": [{"id": s["id"], "name": s["name"]} for s in guide]})
            plan = trace.call("read_plan", "CHAIN", lambda text: json.loads(text), plan_text)
            assessed = []
            for sid in plan["sections"]:
                section = next(x for x in guide if x["id"] == sid)
                for attempt in (1, 2):
                    try:
                        reading = trace.call("gauge_reading", "TOOL", gauge, {"section": sid, "date": inp["date"]})
                        break
                    except TimeoutError:
                        if attempt == 2:
                            raise
                with trace.span("anchor_log", "RETRIEVER", {"section": sid}) as box:
                    docs = anchors(sid)
                    box.documents([{"id": d["anchor"], "content": json.dumps(d)} for d in docs])
                text = chat("Assess the section from the gauge and the anchor log.",
                            {"section": section, "gauge": reading, "anchors": docs})

                def read_assessment(text):
                    m = re.match(r"Section (\S+) \((.+?)\): flow ([\d.]+) m3/s, rappel (\d+) m, anchors inspected: (.+)\.$", text)
                    return {"section": m.group(1), "flow_m3s": float(m.group(3)), "rappel_m": int(m.group(4)),
                            "anchors": m.group(5).split(", ")}

                assessed.append(trace.call("read_assessment", "CHAIN", read_assessment, text))

            def choose(level, group, max_rappel):
                line = "family" if level == "beginner" else "standard"
                if SWITCH == "route":
                    line = "standard"
                return {"line": line, "max_rappel_m": max_rappel if line == "standard" else min(max_rappel, 15)}

            route = trace.call("route_choice", "CHAIN", choose, {"level": inp["level"], "group": inp["group"],
                                                                  "max_rappel": max(a["rappel_m"] for a in assessed)})
            kit = trace.call("equipment_list", "TOOL", lambda line, group, max_rappel_m: {
                "ropes_m": 2 * max_rappel_m + 10, "harnesses": group + 1, "helmets": group + 1, "line": line},
                {"line": route["line"], "group": inp["group"], "max_rappel_m": route["max_rappel_m"]})

            def trip_log(canyon, limit):
                entries = [{"date": f"2027-{4 + i // 28:02d}-{1 + i % 28:02d}", "canyon": canyon, "party": 4 + i % 5,
                            "note": f"descent {i + 1}: water clear, all anchors used, exit by the {NAMES[i % 12]} path"}
                           for i in range(160)]
                if SWITCH == "log":
                    return {"entries": entries}
                return {"entries": entries[-limit:]}

            log = trace.call("fetch_trip_log", "TOOL", trip_log, {"canyon": inp["canyon"], "limit": 5})
            briefing = chat("Brief the group from the plan, the route and the recent trips.",
                            {"canyon": inp["canyon"], "date": inp["date"], "route": route["line"],
                             "sections": plan["sections"], "recent": log["entries"]})

            def file_plan(canyon, date, level, route, sections, briefing):
                for s in guide:
                    got = next((a for a in sections if a["section"] == s["id"]), None)
                    if got is None:
                        raise ValueError(f"{canyon}: section {s['id']} ({s['name']}) has no assessment in the trip plan")
                    missing = [a for a in s["anchors"] if a not in got["anchors"]]
                    if missing:
                        raise ValueError(f"{canyon}: anchor {missing[0]} has no inspection on record this season")
                    if got["flow_m3s"] > LIMITS[level]:
                        raise ValueError(f"{canyon}: section {s['id']} flow {got['flow_m3s']:g} m3/s is above the {LIMITS[level]} m3/s limit for {level} groups")
                if level == "beginner" and route["line"] != "family":
                    raise ValueError(f"{canyon}: a {level} group cannot be filed on the {route['line']} line")
                return {"filed": f"{canyon}/{date}", "sections": len(sections)}

            trace.call("file_trip_plan", "TOOL", file_plan, {"canyon": inp["canyon"], "date": inp["date"], "level": inp["level"],
                                                             "route": route, "sections": assessed, "briefing": briefing})
            top.output(briefing)
    finally:
        trace.write(path)
