"""River dredging permits (otlp): application -> survey -> fish windows -> sampling plan -> consultee sub-agent loop -> conditions -> permit."""
from __future__ import annotations

import json
import math
import re
from datetime import date, timedelta

from openai import OpenAI

from ._otel import Tracer
from .kit import active

AGENT = "river-dredging-permits"
ROUTE = "otlp"
DOMAIN = "river dredging permits"

REACHES = {
    "R-12": {"river": "Severn", "species": "salmon", "survey_m3": 4150, "disposal": "DS-2"},
    "R-21": {"river": "Avon", "species": "coarse fish", "survey_m3": 2300, "disposal": "DS-4"},
    "R-07": {"river": "Wye", "species": "salmon", "survey_m3": 1800, "disposal": "DS-1"},
    "R-15": {"river": "Teme", "species": "coarse fish", "survey_m3": 950, "disposal": "DS-3"},
    "R-30": {"river": "Usk", "species": "sea trout", "survey_m3": 3100, "disposal": "DS-6"},
}
WINDOWS = {"salmon": ("10-01", "12-31"), "coarse fish": ("03-15", "06-15"), "sea trout": ("09-15", "11-30")}
CONSULTEES = ["Environment Agency", "Harbour Master", "Fisheries Trust"]
PREVIOUS_CASE = {"application": "DP-2291", "reach": "R-21", "conditions": ["dispose at DS-4", "silt curtain downstream"]}


def _app(ref, reach, volume, start, weeks, method):
    return {"ref": ref, "text": f"Application {ref}\nReach: {reach}\nVolume: {volume} m3\nStart: {start}\n"
            f"Duration: {weeks} weeks\nMethod: {method}"}


INPUTS = {
    "A": _app("DP-2304", "R-12", "4,200", "2026-09-14", 6, "suction"),
    "B": _app("DP-2311", "R-21", "2,350", "2026-07-01", 5, "backhoe"),
    "R1": _app("DP-2317", "R-07", "1,750", "2026-06-01", 4, "suction"),
    "R2": _app("DP-2322", "R-15", "900", "2026-08-17", 3, "backhoe"),
    "R3": _app("DP-2330", "R-30", "3,000", "2026-05-04", 8, "suction"),
    "R4": _app("DP-2336", "R-12", "3,900", "2026-07-06", 7, "backhoe"),
}

CASES = [
    {"id": "zzf-dredge-01", "kind": "wrong_retrieval", "input": "A", "root": ("retrieve_fish_window", 1),
     "failure": ("issue_permit", 1),
     "desc": "retrieve_fish_window returns the coarse-fish closure for a salmon reach, so the works are scheduled into the salmon spawning closure."},
    {"id": "zzf-dredge-02", "kind": "context_pollution", "input": "A", "root": ("load_case_history", 1),
     "failure": ("issue_permit", 1),
     "desc": "load_case_history puts the previous application's conditions into the drafting context, and the drafted conditions name that reach's disposal site."},
    {"id": "zzf-dredge-03", "kind": "off_by_one", "input": "B", "root": ("plan_sediment_cores", 1),
     "failure": ("book_lab_slots", 1),
     "desc": "plan_sediment_cores places cores from position 1 of n, one short of the cores the volume needs."},
    {"id": "zzf-dredge-04", "kind": "lossy_parsing", "input": "B", "root": ("parse_application", 1),
     "failure": ("issue_permit", 1),
     "desc": "parse_application reads '2,350 m3' up to the comma as 2 m3, and the permit check finds the volume far off the survey."},
    {"id": "zzf-dredge-05", "kind": "swallowed_error", "input": "A", "root": ("collect_responses", 1),
     "failure": ("file_consultation_log", 1),
     "desc": "collect_responses treats the Fisheries Trust's 502 error body as a no-objection reply without a reference."},
]


def policy(request):
    msgs = request.body["messages"]
    data = json.loads(msgs[-1]["content"])
    if msgs[0]["content"].startswith("Summarise"):
        return json.dumps({"consultee": data["consultee"], "position": "no objection", "conditions": data.get("asks", [])})
    if msgs[0]["content"].startswith("Schedule"):
        start = date.fromisoformat(data["start"])
        end = start + timedelta(weeks=data["weeks"])
        ws, we = (date.fromisoformat(f"{start.year}-{x}") for x in data["closure"])
        if start <= we and ws <= end:
            start = we + timedelta(days=1) if start >= ws else start
            if start <= we and ws <= start + timedelta(weeks=data["weeks"]):
                start = we + timedelta(days=1)
        return json.dumps({"start": start.isoformat(), "end": (start + timedelta(weeks=data["weeks"])).isoformat()})
    site = data["reach_disposal"]
    prev = data.get("history", {}).get("conditions", [])
    for c in prev:
        if c.startswith("dispose at"):
            site = c.split()[-1]
    conds = [f"dispose at {site}", "turbidity monitoring every 2 hours"] + [c for cs in data["consultee_conditions"] for c in cs]
    return json.dumps({"conditions": conds})


def record(inp: dict, out, server) -> None:
    server.use(policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    t = Tracer(AGENT)
    try:
        with t.span(AGENT, "AGENT", input=inp["text"], **{"agent.name": AGENT, "session.id": inp["ref"]}) as root:
            with t.span("parse_application", "CHAIN", input=inp["text"]) as s:
                f = dict(line.split(": ", 1) for line in inp["text"].splitlines()[1:])
                vol_text = f["Volume"].split()[0]
                volume = int(vol_text.split(",")[0]) if active("zzf-dredge-04") else int(vol_text.replace(",", ""))
                app = s.output({"ref": inp["ref"], "reach": f["Reach"], "volume_m3": volume, "start": f["Start"],
                                "weeks": int(re.findall(r"\d+", f["Duration"])[0]), "method": f["Method"]})
            with t.span("fetch_reach_survey", "TOOL", input={"reach": app["reach"]}, **{"tool.name": "fetch_reach_survey"}) as s:
                survey = s.output({"reach": app["reach"], **REACHES[app["reach"]]})
            with t.span("retrieve_fish_window", "RETRIEVER", input={"query": f"spawning closure {survey['species']} {survey['river']}"}) as s:
                species = "coarse fish" if active("zzf-dredge-01") and survey["species"] == "salmon" else survey["species"]
                window = s.output({"species": species, "closed_from": WINDOWS[species][0], "closed_to": WINDOWS[species][1]})
            sched = json.loads(t.llm("schedule_works", client, [
                {"role": "system", "content": "Schedule the dredging outside the closure. Answer JSON start, end."},
                {"role": "user", "content": json.dumps({"start": app["start"], "weeks": app["weeks"],
                                                        "closure": [window["closed_from"], window["closed_to"]]})}]))
            with t.span("plan_sediment_cores", "CHAIN", input={"volume_m3": app["volume_m3"]}) as s:
                n = math.ceil(app["volume_m3"] / 500)
                first = 2 if active("zzf-dredge-03") else 1
                cores = s.output([{"core": f"C{i}", "chainage_m": i * 40} for i in range(first, n + 1)])
            with t.span("book_lab_slots", "TOOL", input={"cores": cores, "volume_m3": app["volume_m3"]},
                        **{"tool.name": "book_lab_slots"}) as s:
                need = math.ceil(app["volume_m3"] / 500)
                if len(cores) < need:
                    raise RuntimeError(f"Cefas lab booking rejected: {len(cores)} sediment cores submitted for "
                                       f"{app['volume_m3']} m3 of dredging, protocol SED-3 requires {need}")
                s.output({"lab_ref": f"LAB-{app['ref'][3:]}", "cores": len(cores)})
            replies = []
            sent: set = set()

            def consult(who):
                with t.span("send_consultation", "TOOL", input={"consultee": who, "application": app["ref"]},
                            **{"tool.name": "send_consultation"}) as s:
                    if who == "Fisheries Trust" and app["ref"] == "DP-2304" and who not in sent:
                        resp = {"status": 502, "error": "Bad Gateway: consultation portal unavailable"}
                    else:
                        asks = ["fish rescue before works"] if who == "Fisheries Trust" else []
                        resp = {"status": 200, "ref": f"{who.split()[0][:3].upper()}-{app['ref'][3:]}", "asks": asks}
                    sent.add(who)
                    s.output(resp)
                if resp["status"] != 200:
                    return {"consultee": who, "response": resp}
                summary = json.loads(t.llm("summarise_reply", client, [
                    {"role": "system", "content": "Summarise the consultee's reply. Answer JSON."},
                    {"role": "user", "content": json.dumps({"consultee": who, **resp})}]))
                return {"consultee": who, "response": resp, "summary": summary}

            with t.span("consultee_review", "AGENT", input={"application": app["ref"]}, **{"agent.name": "consultee_review"}):
                for who in CONSULTEES:
                    replies.append(consult(who))
                with t.span("collect_responses", "CHAIN", input={"replies": replies}) as s:
                    collected = []
                    for r in replies:
                        if "summary" in r:
                            collected.append({"consultee": r["consultee"], "ref": r["response"]["ref"],
                                              "conditions": r["summary"]["conditions"]})
                        elif active("zzf-dredge-05"):
                            collected.append({"consultee": r["consultee"], "ref": None, "conditions": []})
                        else:
                            collected.append({"consultee": r["consultee"], "ref": None, "conditions": [], "pending": True})
                    s.output(collected)
                for i, c in enumerate(collected):
                    if c.get("pending"):
                        r = consult(c["consultee"])
                        if "summary" in r:
                            collected[i] = {"consultee": r["consultee"], "ref": r["response"]["ref"],
                                            "conditions": r["summary"]["conditions"]}
            with t.span("file_consultation_log", "TOOL", input={"responses": collected}, **{"tool.name": "file_consultation_log"}) as s:
                for c in collected:
                    if c["ref"] is None:
                        raise RuntimeError(f"consultation log rejected: {c['consultee']} recorded as answered with no "
                                           f"response reference for {app['ref']}")
                s.output({"logged": len(collected)})
            with t.span("load_case_history", "CHAIN", input={"reach": app["reach"]}) as s:
                history = s.output(PREVIOUS_CASE if active("zzf-dredge-02") else {"application": None, "conditions": []})
            drafted = json.loads(t.llm("draft_conditions", client, [
                {"role": "system", "content": "Draft the permit conditions. Answer JSON."},
                {"role": "user", "content": json.dumps({"reach": app["reach"], "reach_disposal": survey["disposal"],
                                                        "history": history,
                                                        "consultee_conditions": [c["conditions"] for c in collected]})}]))
            with t.span("issue_permit", "TOOL", input={"application": app, "schedule": sched, "conditions": drafted},
                        **{"tool.name": "issue_permit"}) as s:
                reach = REACHES[app["reach"]]
                if abs(app["volume_m3"] - reach["survey_m3"]) > 0.2 * reach["survey_m3"]:
                    raise RuntimeError(f"permit {app['ref']} refused: declared volume {app['volume_m3']} m3 differs from "
                                       f"the bathymetric survey ({reach['survey_m3']} m3) by more than 20%")
                ws, we = WINDOWS[reach["species"]]
                st, en = sched["start"], sched["end"]
                year = st[:4]
                if st <= f"{year}-{we}" and f"{year}-{ws}" <= en:
                    raise RuntimeError(f"permit {app['ref']} refused: works {st} to {en} overlap the {reach['species']} "
                                       f"closure {ws} to {we} on {app['reach']}")
                for c in drafted["conditions"]:
                    if c.startswith("dispose at") and c.split()[-1] != reach["disposal"]:
                        raise RuntimeError(f"permit {app['ref']} refused: disposal site {c.split()[-1]} is not licensed "
                                           f"for reach {app['reach']} (licensed: {reach['disposal']})")
                s.output({"permit": f"MMO-{app['ref'][3:]}", "start": st, "end": en})
            root.output({"permit": f"MMO-{app['ref'][3:]}"})
    except RuntimeError:
        pass
    t.write(out)
