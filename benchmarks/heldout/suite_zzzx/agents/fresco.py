"""Fresco conservator's site visits (otlp route): OpenInference-instrumented model calls and spans of the
agent's own, exported as OTLP JSON; a visit plan from the model, then a loop over wall zones (archive
retriever, probe tool, a model grading each zone, a grade parser) and a report step that asserts."""
from __future__ import annotations

import json

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

NAME = "fresco-site-visits"
ROUTE = "otlp"
DOMAIN = "a fresco conservator's site visits"
SHAPE = "OTLP spans: plan model call, loop over 5-9 wall zones (archive retriever, moisture probe tool, grading model call, grade parser), treatment schedule, report with assertions"
SWITCH = None

SITES = {
    "San Rocco apse": {"zones": ["Z1 north lunette", "Z2 north vault", "Z3 apse conch", "Z4 south vault", "Z5 south lunette", "Z6 dado"], "plaster": "lime"},
    "Villa Tiberi loggia": {"zones": ["L1 east bay", "L2 centre bay", "L3 west bay", "L4 frieze", "L5 ceiling tondo"], "plaster": "lime"},
    "Oratorio dei Bianchi": {"zones": ["O1 altar wall", "O2 left wall", "O3 right wall", "O4 entrance wall", "O5 vault web", "O6 vault rib", "O7 lunette", "O8 dado", "O9 window splay"], "plaster": "gypsum-lime"},
    "Palazzo Merli sala": {"zones": ["P1 overdoor", "P2 fireplace wall", "P3 long wall", "P4 cove", "P5 ceiling"], "plaster": "lime"},
    "Santa Brigida crypt": {"zones": ["C1 east niche", "C2 west niche", "C3 barrel vault", "C4 steps wall", "C5 reliquary arch", "C6 floor band", "C7 pier"], "plaster": "lime"},
}
INPUTS = [{"visit": f"FV-{50 + i}", "site": s, "date": f"2027-0{i + 2}-1{i}"} for i, s in enumerate(SITES)]
ARCHIVE = {}
for _site, _info in SITES.items():
    for _n, _z in enumerate(_info["zones"]):
        ARCHIVE[(_site, _z)] = {"site": _site, "zone": _z, "last_grade": 1 + (_n * 7 + len(_site)) % 3, "surveyed": 2022,
                                "notes": "salt bloom along lower edge" if "dado" in _z or "floor" in _z else "stable paint layer"}
ARCHIVE[("Ognissanti sacristy", "C3 barrel vault")] = {"site": "Ognissanti sacristy", "zone": "C3 barrel vault", "last_grade": 4,
                                                       "surveyed": 2009, "notes": "extensive lifting, facing tissue applied"}


def moisture(site, zone):
    return round(2.0 + (len(zone) * 13 + len(site) * 7) % 40 / 10, 1)


def brain(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    user = json.loads(msgs[-1]["content"])
    if system.startswith("Plan the site visit"):
        return json.dumps({"order": user["zones"], "probe_depth_mm": 20, "kit": ["moisture meter", "UV torch", "raking light"]})
    if system.startswith("Grade the zone"):
        grade = 1 if user["probe"]["moisture_pct"] < 4 else 2 if user["probe"]["moisture_pct"] < 5.5 else 3
        grade = max(grade, user["archive"][0]["last_grade"] if user["archive"] else 1)
        grade = min(grade, 4)
        moist = user["probe"]["moisture_pct"]
        if SWITCH == "invented-reading" and user["zone"] == "L3 west bay":
            moist = 9.8
            grade = 3
        answer = {"zone": user["zone"], "grade": grade, "moisture_pct": moist, "action": ["monitor", "consolidate", "desalinate", "face and remove"][grade - 1]}
        if SWITCH == "roman" and user["zone"].startswith("P"):
            answer["grade"] = ["I", "II", "III", "IV"][grade - 1]
        return "Assessment: " + json.dumps(answer)
    return "?"


def _grade_of(text):
    data = json.loads(text.split("Assessment:", 1)[1])
    g = data["grade"]
    if isinstance(g, str):
        g = int("".join(c for c in g if c.isdigit()) or 1)
    return data | {"grade": int(g)}


def record(inp, path, server):
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "fresco-desk"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("fresco-desk")
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    site = SITES[inp["site"]]
    try:
        with tracer.start_as_current_span(NAME, attributes={"openinference.span.kind": "AGENT", "input.value": json.dumps(inp),
                                                            "metadata": json.dumps({"task": f"site visit {inp['visit']} at {inp['site']}"})}):
            plan_text = client.chat.completions.create(model=server.model, messages=[
                {"role": "system", "content": "Plan the site visit: zone order, probe depth, kit."},
                {"role": "user", "content": json.dumps({"site": inp["site"], "zones": site["zones"]})}]).choices[0].message.content
            plan = json.loads(plan_text)
            order = plan["order"]
            if SWITCH == "zones-short" and inp["site"] == "Oratorio dei Bianchi":
                order = order[:-1]
            with tracer.start_as_current_span("read_plan", attributes={"openinference.span.kind": "CHAIN", "input.value": plan_text,
                                                                       "output.value": json.dumps(order)}):
                pass
            graded = []
            for zone in order:
                with tracer.start_as_current_span("assess_zone", attributes={"openinference.span.kind": "CHAIN", "input.value": zone}) as zs:
                    key = (inp["site"], zone)
                    if SWITCH == "other-site" and key == ("Santa Brigida crypt", "C3 barrel vault"):
                        key = ("Ognissanti sacristy", "C3 barrel vault")
                    docs = [ARCHIVE[key]]
                    attrs = {"openinference.span.kind": "RETRIEVER", "input.value": f"{inp['site']} / {zone}"}
                    for i, d in enumerate(docs):
                        attrs[f"retrieval.documents.{i}.document.id"] = f"{d['site']}/{d['zone']}"
                        attrs[f"retrieval.documents.{i}.document.content"] = json.dumps(d)
                    with tracer.start_as_current_span("condition_archive", attributes=attrs):
                        pass
                    probe = {"zone": zone, "depth_mm": plan["probe_depth_mm"], "moisture_pct": moisture(inp["site"], zone)}
                    m = probe["moisture_pct"]
                    probe["readings"] = [round(m - 0.1, 1), m, round(m + 0.1, 1)]
                    if SWITCH == "probe-log" and inp["site"] == "San Rocco apse" and zone == "Z6 dado":
                        probe["readings"] = probe["readings"][:1]
                    with tracer.start_as_current_span("moisture_probe", attributes={"openinference.span.kind": "TOOL",
                            "input.value": json.dumps({"zone": zone, "depth_mm": plan["probe_depth_mm"]}), "output.value": json.dumps(probe)}):
                        pass
                    text = client.chat.completions.create(model=server.model, messages=[
                        {"role": "system", "content": "Grade the zone 1 to 4 from the probe and the archive."},
                        {"role": "user", "content": json.dumps({"zone": zone, "probe": probe, "archive": docs})}]).choices[0].message.content
                    with tracer.start_as_current_span("read_grade", attributes={"openinference.span.kind": "CHAIN", "input.value": text}) as ps:
                        g = _grade_of(text)
                        ps.set_attribute("output.value", json.dumps(g))
                    graded.append(g | {"probe": probe, "archive_grade": docs[0]["last_grade"], "archive_site": docs[0]["site"]})
                    zs.set_attribute("output.value", json.dumps(g))
            with tracer.start_as_current_span("treatment_schedule", attributes={"openinference.span.kind": "CHAIN",
                                                                                "input.value": json.dumps(graded)}) as ts:
                days = {1: 0.5, 2: 2, 3: 5, 4: 9}
                schedule = [{"zone": g["zone"], "days": days[g["grade"]], "action": g["action"]} for g in graded]
                ts.set_attribute("output.value", json.dumps(schedule))
            with tracer.start_as_current_span("visit_report", attributes={"openinference.span.kind": "CHAIN",
                                                                          "input.value": json.dumps({"visit": inp, "schedule": schedule})}) as rs:
                assessed = {g["zone"] for g in graded}
                missing = [z for z in site["zones"] if z not in assessed]
                assert not missing, f"{inp['visit']}: zones not assessed: {', '.join(missing)}"
                for g in graded:
                    assert g["archive_site"] == inp["site"], f"{inp['visit']}: {g['zone']} assessed against the {g['archive_site']} record"
                    assert abs(g["moisture_pct"] - g["probe"]["moisture_pct"]) < 0.05, \
                        f"{inp['visit']}: {g['zone']} reported at {g['moisture_pct']}% moisture, the probe read {g['probe']['moisture_pct']}%"
                    action = ["monitor", "consolidate", "desalinate", "face and remove"][g["grade"] - 1]
                    assert action == g["action"], f"{inp['visit']}: {g['zone']} graded {g['grade']} but marked for {g['action']}"
                    assert g["grade"] >= g["archive_grade"] - 1, \
                        f"{inp['visit']}: {g['zone']} graded {g['grade']}, archive had {g['archive_grade']} in {ARCHIVE.get((inp['site'], g['zone']), {}).get('surveyed')}"
                    if True:
                        assert len(g["probe"]["readings"]) >= 3, f"{inp['visit']}: {g['zone']} has {len(g['probe']['readings'])} probe reading(s), three are required"
                total = sum(s["days"] for s in schedule)
                rs.set_attribute("output.value", json.dumps({"visit": inp["visit"], "days": total}))
    except Exception:
        pass
    finally:
        OpenAIInstrumentor().uninstrument()
    with open(path, "w") as f:
        json.dump(MessageToDict(encode_spans(exporter.get_finished_spans())), f)


CASES = [
    {"id": "fresco-neighbour-record", "input": 4, "switch": "other-site", "kind": "wrong_retrieval",
     "root": ("condition_archive", 3), "root_holds": "C3 barrel vault", "failure": ("visit_report", 1),
     "description": "The archive lookup for the crypt's C3 barrel vault returns the Ognissanti sacristy's record of a zone with the same name."},
    {"id": "fresco-moisture-invented", "input": 1, "switch": "invented-reading", "kind": "hallucinated_value",
     "root": ("ChatCompletion", 4), "root_holds": "L3 west bay", "failure": ("visit_report", 1),
     "description": "The grading model reports 9.8% moisture for the loggia's west bay, a reading the probe never gave."},
    {"id": "fresco-last-zone", "input": 2, "switch": "zones-short", "kind": "off_by_one",
     "root": ("read_plan", 1), "failure": ("visit_report", 1),
     "description": "Reading the plan stops one zone early, so the Oratorio's window splay is never assessed."},
    {"id": "fresco-probe-once", "input": 0, "switch": "probe-log", "kind": "truncated_result",
     "root": ("moisture_probe", 6), "root_holds": "Z6 dado", "failure": ("visit_report", 1),
     "description": "The probe log for the apse dado comes back with a single reading where the probe takes three."},
    {"id": "fresco-roman-grade", "input": 3, "switch": "roman", "kind": "format_drift",
     "root": ("ChatCompletion", 2), "root_holds": "P1 overdoor", "failure": ("visit_report", 1),
     "description": "The grading model answers the sala's grades in Roman numerals, which the grade reader, keeping only digits, reads as grade 1."},
]
