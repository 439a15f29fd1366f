"""Orthotics clinic: custom insole lab (otlp route). A model extracts measurements from the clinician's form,
a second model call plans the work-up, a foot work-up sub-agent runs per planned foot (pressure map retrieval,
size lookup, arch and posting tools, the gait service retried once), a model writes the fabrication spec (the
API refuses out-of-limit prescriptions), a schema check reads the spec and the milling job is submitted."""
import json

from openai import OpenAI
from opentelemetry.trace import Status, StatusCode

from otel_support import attrs, dump, set_out, tracer
from trajdebug.testing import Reply

NAME = "insole-lab"
ROUTE = "otlp"
DOMAIN = "orthotics clinic's insoles"
SHAPE = "OTel spans: extraction model + parser, planning model, per-foot sub-agent spans (retriever, tools, retried gait tool), spec model that may be refused, schema check, milling tool"
ACTIVE = None

EU_LENGTH_MM = {36: 232, 37: 238, 38: 245, 39: 251, 40: 258, 41: 265, 42: 271, 43: 278, 44: 285, 45: 291}
MAPS = {
    ("P-31", "left"): {"map": "PM-31L", "heel_kpa": 310, "medial_kpa": 240}, ("P-31", "right"): {"map": "PM-31R", "heel_kpa": 295, "medial_kpa": 180},
    ("P-32", "left"): {"map": "PM-32L", "heel_kpa": 260, "medial_kpa": 150}, ("P-32", "right"): {"map": "PM-32R", "heel_kpa": 270, "medial_kpa": 160},
    ("P-33", "left"): {"map": "PM-33L", "heel_kpa": 350, "medial_kpa": 290}, ("P-33", "right"): {"map": "PM-33R", "heel_kpa": 340, "medial_kpa": 200},
    ("P-34", "left"): {"map": "PM-34L", "heel_kpa": 280, "medial_kpa": 200}, ("P-34", "right"): {"map": "PM-34R", "heel_kpa": 300, "medial_kpa": 260},
    ("P-35", "left"): {"map": "PM-35L", "heel_kpa": 330, "medial_kpa": 210}, ("P-35", "right"): {"map": "PM-35R", "heel_kpa": 320, "medial_kpa": 215},
}
FORMS = {
    "P-31": "Patient P-31, EU 41, overpronation, navicular drop 11 mm, heel pain left.",
    "P-32": "Patient P-32, EU 38, plantar fasciitis, navicular drop 6 mm.",
    "P-33": "Patient P-33, EU 44, overpronation, navicular drop 13 mm, runner.",
    "P-34": "Patient P-34, EU 39, overpronation, navicular drop 9 mm, right knee pain.",
    "P-35": "Patient P-35, EU 42, plantar fasciitis, navicular drop 7 mm, diabetic.",
}
INPUTS = [{"patient": p, "form": f} for p, f in FORMS.items()]
FLAKY_GAIT = {"P-33"}


def policy(request):
    msgs = request.body["messages"]
    prompt = msgs[-1]["content"]
    head, body = prompt.split("\n", 1)
    if head.startswith("Extract"):
        words = body.replace(",", "").split()
        drop = int(words[words.index("drop") + 1])
        data = {"patient": words[1], "eu_size": int(words[3]), "condition": "overpronation" if "overpronation" in body else "plantar fasciitis",
                "navicular_drop_mm": drop}
        if ACTIVE == "hallucinated_value" and data["patient"] == "P-34":
            data["navicular_drop_mm"] = 19
        return json.dumps(data)
    if head.startswith("Plan"):
        m = json.loads(body)
        feet = ["left", "right"]
        if ACTIVE == "plan_error" and m["patient"] == "P-31":
            feet = ["left"]
        return json.dumps({"feet": feet, "shell": "EVA 45" if m["condition"] == "overpronation" else "poron 30"})
    if head.startswith("Write the fabrication spec"):
        job = json.loads(body)
        for ins in job["insoles"]:
            if not 0 <= ins["posting_deg"] <= 8:
                return Reply(status=400, error=f"invalid_request_error: posting of {ins['posting_deg']} degrees is outside the prescribing limits")
        spec = {"patient": job["patient"], "shell": job["shell"], "insoles": [
            {"side": i["side"], "length_mm": i["length_mm"], "arch_mm": i["arch_mm"], "posting_deg": i["posting_deg"], "map": i["map"]}
            for i in job["insoles"]]}
        return json.dumps(spec)
    return "?"


def run_one(server, inp, path):
    t = tracer("insole-lab")
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)

    def chat(system, user):
        r = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": system}, {"role": "user", "content": user}])
        return r.choices[0].message.content

    try:
        with t.start_as_current_span(NAME, attributes=attrs("AGENT", inp)) as top:
            with t.start_as_current_span("intake_form", attributes=attrs("CHAIN", inp)) as s:
                form = inp["form"]
                set_out(s, {"form": form})
            text = chat("You read clinicians' forms.", "Extract the measurements as JSON.\n" + form)
            with t.start_as_current_span("read_measurements", attributes=attrs("CHAIN", text)) as s:
                m = json.loads(text)
                set_out(s, m)
            plan = json.loads(chat("You plan insole work-ups.", "Plan the work-up.\n" + json.dumps(m)))
            insoles = []
            for side in plan["feet"]:
                with t.start_as_current_span("foot_workup", attributes=attrs("AGENT", {"patient": m["patient"], "side": side})) as w:
                    map_side = side
                    if ACTIVE == "subagent_wrong_entity" and side == "right":
                        map_side = "left"
                    with t.start_as_current_span("pressure_map", attributes=attrs("RETRIEVER", {"patient": m["patient"], "side": map_side})) as s:
                        pm = dict(MAPS[(m["patient"], map_side)], side=map_side)
                        set_out(s, pm)
                    with t.start_as_current_span("size_lookup", attributes=attrs("TOOL", {"eu_size": m["eu_size"]})) as s:
                        size = m["eu_size"] + (1 if ACTIVE == "off_by_one" else 0)
                        length = EU_LENGTH_MM[size]
                        set_out(s, {"eu_size": m["eu_size"], "length_mm": length})
                    with t.start_as_current_span("arch_support", attributes=attrs("TOOL", {"navicular_drop_mm": m["navicular_drop_mm"]})) as s:
                        arch = round(12 + 0.8 * m["navicular_drop_mm"], 1)
                        set_out(s, {"arch_mm": arch})
                    posting = None
                    for attempt in (1, 2):
                        with t.start_as_current_span("gait_posting", attributes=attrs("TOOL", {"medial_kpa": pm["medial_kpa"], "drop_mm": m["navicular_drop_mm"], "attempt": attempt})) as s:
                            try:
                                if m["patient"] in FLAKY_GAIT and side == "left" and attempt == 1:
                                    s.set_status(Status(StatusCode.ERROR, "gait service timed out"))
                                    set_out(s, {"answered": False})
                                    continue
                                if ACTIVE == "swallowed_error" and m["patient"] == "P-35" and side == "right":
                                    raise TimeoutError("gait model busy")
                                posting = round(max(0.0, (pm["medial_kpa"] - 150) / 25 + (m["navicular_drop_mm"] - 6) * 0.3), 1)
                            except TimeoutError:
                                posting = 0.0
                            set_out(s, {"posting_deg": posting})
                            break
                    ins = {"side": side, "length_mm": length, "arch_mm": arch, "posting_deg": posting, "map": pm["map"]}
                    set_out(w, ins)
                    insoles.append(ins)
            with t.start_as_current_span("patient_record", attributes=attrs("TOOL", {"patient": m["patient"], "insoles": insoles})) as s:
                set_out(s, {"saved": m["patient"], "count": len(insoles)})
            spec_text = chat("You write fabrication specs for the milling room.", "Write the fabrication spec.\n" + json.dumps(
                {"patient": m["patient"], "shell": plan["shell"], "insoles": insoles}))
            with t.start_as_current_span("spec_schema_check", attributes=attrs("CHAIN", spec_text)) as s:
                spec = json.loads(spec_text)
                sides = sorted(i["side"] for i in spec["insoles"])
                if sides != ["left", "right"]:
                    raise ValueError(f"spec for {spec['patient']} has insoles {sides}; a pair is required")
                for i in spec["insoles"]:
                    if not i["map"].endswith(i["side"][0].upper()):
                        raise ValueError(f"{i['side']} insole built on pressure map {i['map']}")
                    foot = EU_LENGTH_MM[m["eu_size"]]
                    if abs(i["length_mm"] - foot) > 5:
                        raise ValueError(f"{i['side']} insole {i['length_mm']} mm for a {foot} mm EU {m['eu_size']} last")
                    if m["condition"] == "overpronation" and not 2 <= i["posting_deg"] <= 8:
                        raise ValueError(f"{i['side']} medial posting {i['posting_deg']} deg outside 2-8 for overpronation")
                    if m["condition"] == "plantar fasciitis" and i["posting_deg"] < 1 and i["side"] == "right" and foot > 260:
                        raise ValueError(f"{i['side']} insole posted {i['posting_deg']} deg; plantar fasciitis on an EU {m['eu_size']} last needs at least 1 deg of heel offload")
                set_out(s, {"valid": True})
            with t.start_as_current_span("submit_to_milling", attributes=attrs("TOOL", spec)) as s:
                set_out(s, {"job": "ML-" + m["patient"][2:], "queued": True})
            set_out(top, {"patient": m["patient"], "job": "ML-" + m["patient"][2:]})
    finally:
        dump(path)


def _c(n, kind, inp, root, occ, rkind, failure, desc):
    return {"id": f"zzzq-insole-{n}", "kind": kind, "switch": kind, "input": inp,
            "root": {"name": root, "occurrence": occ, "kind": rkind}, "failure": failure, "description": desc}


G = "ChatCompletion"
CASES = [
    _c(1, "plan_error", 0, G, 2, "llm", "spec_schema_check",
       "The planning model schedules a work-up for the left foot only."),
    _c(2, "off_by_one", 1, "size_lookup", 1, "tool", "spec_schema_check",
       "The size lookup reads the last length of the next EU size up."),
    _c(3, "hallucinated_value", 3, G, 1, "llm", G,
       "The extraction model reports a navicular drop of 19 mm where the form says 9 mm."),
    _c(4, "swallowed_error", 4, "gait_posting", 2, "tool", "spec_schema_check",
       "The gait posting tool hides a busy gait model for the right foot and answers zero degrees."),
    _c(5, "subagent_wrong_entity", 2, "foot_workup", 2, "agent", "spec_schema_check",
       "The right-foot work-up sub-agent fetches the left foot's pressure map."),
]
