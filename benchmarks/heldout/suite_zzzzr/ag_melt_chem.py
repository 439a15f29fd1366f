"""Ductile iron foundry: melt chemistry correction of a heat before pouring (Mg treatment and alloy trim of
each ladle), released by the metallurgical check.

Route: the OpenTelemetry SDK with OpenInference attributes (the openai client instrumented by
openinference-instrumentation-openai, the agent's own steps as spans), exported as OTLP JSON.
"""

from __future__ import annotations

import json

from common import chat, otlp_span, set_output

RUN_NAME = "melt-chemistry-correction"
ROUTE = "otlp"
DOMAIN = "ductile iron foundry: melt chemistry correction and pour release"
SHAPE = "OTel spans: input, spectrometer tool, parser, grade-spec retriever, treatment calc, ladle loop (prompt builder, model, parser, scale tool, thermocouple tool), state write, release tool"
SWITCH = None

SPECS = {
    "65-45-12": {"Si": [2.3, 2.8, 2.6], "Cu": [0.0, 0.10, 0.0], "Mg": [0.035, 0.060, 0.045], "mg_recovery_pct": 45, "pour_c": [1370, 1420]},
    "80-55-06": {"Si": [2.2, 2.6, 2.4], "Cu": [0.40, 0.60, 0.50], "Mg": [0.035, 0.060, 0.045], "mg_recovery_pct": 45, "pour_c": [1360, 1410]},
    "60-40-18": {"Si": [2.4, 2.9, 2.7], "Cu": [0.0, 0.05, 0.0], "Mg": [0.035, 0.055, 0.042], "mg_recovery_pct": 45, "pour_c": [1380, 1430]},
}
HEATS = {
    "H26-0311": {"grade": "65-45-12", "base": {"C": 3.62, "Si": 1.20, "Mn": 0.21, "S": 0.012, "Cu": 0.02}, "flag": [], "ladles": [1000, 1000]},
    "H26-0312": {"grade": "60-40-18", "base": {"C": 3.58, "Si": 1.31, "Mn": 0.18, "S": 0.028, "Cu": 0.01}, "flag": ["S"], "ladles": [1000, 950]},
    "H26-0313": {"grade": "65-45-12", "base": {"C": 3.65, "Si": 1.25, "Mn": 0.24, "S": 0.011, "Cu": 0.03}, "flag": [], "ladles": [1200, 1200]},
    "H26-0314": {"grade": "65-45-12", "base": {"C": 3.60, "Si": 1.05, "Mn": 0.20, "S": 0.010, "Cu": 0.02}, "flag": [], "ladles": [1000, 1000]},
    "H26-0315": {"grade": "80-55-06", "base": {"C": 3.55, "Si": 1.15, "Mn": 0.35, "S": 0.013, "Cu": 0.05}, "flag": [], "ladles": [900, 900]},
}
INPUTS = [{"task": f"chemistry correction of heat {h}, grade {v['grade']}", "heat": h, "furnace": "IF-2", "melter": "J. Novak"} for h, v in HEATS.items()]

CASES = [
    {"id": "melt_recovery_percent", "input": 0, "kind": "unit_error",
     "root": ("compute_treatment", 1, "other"), "failure": ("release_pour", 1),
     "what": "the Mg recovery of 45 % is used as 45 instead of 0.45: FeSiMg a hundred times too small",
     "description": "The treatment calculation used the magnesium recovery of 45 percent as a plain 45 instead of 0.45, so each ladle gets a hundredth of the FeSiMg it needs and the release check predicts no residual magnesium."},
    {"id": "melt_flagged_sulfur", "input": 1, "kind": "lossy_parsing",
     "root": ("parse_spectro", 1, "parse"), "failure": ("release_pour", 1),
     "what": "the flagged reading S=0.028* is dropped and sulfur falls back to 0.010",
     "description": "The spectrometer parser dropped the flagged sulfur reading 0.028*, so the treatment was sized for the usual 0.010 sulfur and the residual magnesium comes out under the minimum."},
    {"id": "melt_pearlitic_spec", "input": 2, "kind": "wrong_retrieval",
     "root": ("retrieve_grade_spec", 1, "retrieval"), "failure": ("release_pour", 1),
     "what": "the spec search returns grade 80-55-06 (Cu 0.40-0.60) for a 65-45-12 heat",
     "description": "The grade specification search returned the pearlitic grade 80-55-06 for a ferritic 65-45-12 heat, so the model trimmed copper up to 0.5 percent and the release check refuses it."},
    {"id": "melt_carried_ladle", "input": 3, "kind": "context_pollution",
     "root": ("assemble_prompt", 2, "other"), "failure": ("release_pour", 1),
     "what": "the second ladle's prompt carries the first ladle's exchange; the model adds its FeSi again",
     "description": "The prompt for the second ladle carried the first ladle's exchange, and the model added that ladle's FeSi on top of its own, pushing silicon above the grade maximum."},
    {"id": "melt_additions_text", "input": 4, "kind": "format_drift",
     "root": ("ChatCompletion", 2, "llm"), "failure": ("release_pour", 1),
     "what": "the model answers the second ladle's additions as '2.0 kg' strings instead of numbers",
     "description": "For the second ladle the model wrote its additions as text with units ('2.0 kg') instead of numbers, which passed the parser and fails the release's schema."},
]


def _switch(case_id: str) -> bool:
    return SWITCH == case_id


# ----------------------------------------------------------------------------------------------- the model
def brain(request):
    msgs = request.body["messages"]
    ctx = json.loads(msgs[-1]["content"])
    kg = ctx["ladle_kg"]
    tgt = ctx["spec"]
    si_now = ctx["base"]["Si"] + ctx["treatment_si_pct"]
    fesi = max(0.0, (tgt["Si"][2] - si_now) * kg / 100 / (0.75 * 0.9))
    cu = max(0.0, (tgt["Cu"][2] - ctx["base"]["Cu"]) * kg / 100)
    earlier = [json.loads(m["content"]) for m in msgs[1:-1] if m["role"] == "assistant"]
    fesi += sum(e["additions"]["FeSi75"] for e in earlier)
    adds = {"FeSi75": round(fesi, 1), "Cu": round(cu, 1)}
    if SWITCH == "melt_additions_text" and ctx["ladle"] == 2:
        adds = {k: f"{v} kg" for k, v in adds.items()}
    return json.dumps({"ladle": ctx["ladle"], "additions": adds, "note": f"trim to Si {tgt['Si'][2]}, Cu {tgt['Cu'][2]}"})


# ----------------------------------------------------------------------------------------------- steps (spans)
ENV = None


def receive_heat(inp):
    with otlp_span(ENV, "receive_heat", "CHAIN", inp, td_kind="input") as sp:
        out = {"heat": inp["heat"], "furnace": inp["furnace"], "grade": HEATS[inp["heat"]]["grade"], "ladles_kg": HEATS[inp["heat"]]["ladles"]}
        set_output(sp, out)
    return out


def read_spectrometer(heat):
    with otlp_span(ENV, "read_spectrometer", "TOOL", {"heat": heat, "sample": "S1"}, **{"tool.name": "read_spectrometer"}) as sp:
        h = HEATS[heat]
        raw = ";".join(f"{k}={v:.3f}{'*' if k in h['flag'] else ''}" for k, v in h["base"].items())
        set_output(sp, raw)
    return raw


def parse_spectro(raw):
    with otlp_span(ENV, "parse_spectro", "CHAIN", raw, td_kind="parse") as sp:
        out = {}
        for item in raw.split(";"):
            k, v = item.split("=")
            if v.endswith("*"):
                if _switch("melt_flagged_sulfur"):
                    continue
                v = v[:-1]
            out[k] = float(v)
        out.setdefault("S", 0.010)
        set_output(sp, out)
    return out


def retrieve_grade_spec(grade):
    query = f"ductile iron grade {grade} chemistry limits"
    with otlp_span(ENV, "retrieve_grade_spec", "RETRIEVER", query) as sp:
        ranked = sorted(SPECS, key=lambda g: (g == grade, g[:2] == grade[:2]), reverse=True)
        if _switch("melt_pearlitic_spec"):
            ranked = sorted(SPECS, key=lambda g: (g.split("-")[1] == "55", g == grade), reverse=True)
        docs = [{"grade": g, **SPECS[g]} for g in ranked[:2]]
        for i, d in enumerate(docs):
            sp.set_attribute(f"retrieval.documents.{i}.document.id", f"SPEC-{d['grade']}")
            sp.set_attribute(f"retrieval.documents.{i}.document.content", json.dumps(d))
        set_output(sp, docs)
    return docs


def compute_treatment(chem, spec, ladles):
    with otlp_span(ENV, "compute_treatment", "CHAIN", {"chem": chem, "spec": spec, "ladles_kg": ladles}) as sp:
        rec = spec["mg_recovery_pct"] if _switch("melt_recovery_percent") else spec["mg_recovery_pct"] / 100
        out = []
        for kg in ladles:
            mg_kg = (spec["Mg"][2] + 0.76 * chem["S"]) * kg / 100
            fesimg = mg_kg / (rec * 0.05)
            out.append({"ladle_kg": kg, "FeSiMg": round(fesimg, 1), "si_pct": round(fesimg * 0.45 / kg * 100, 3)})
        set_output(sp, out)
    return out


def assemble_prompt(ladle, kg, chem, spec, treat, history):
    with otlp_span(ENV, "assemble_prompt", "CHAIN", {"ladle": ladle, "history_messages": len(history)}) as sp:
        msgs = [{"role": "system", "content": "You trim ductile iron ladles. Answer JSON: ladle, additions {FeSi75, Cu} in kg, note."}]
        if _switch("melt_carried_ladle"):
            msgs += history
        msgs.append({"role": "user", "content": json.dumps({"ladle": ladle, "ladle_kg": kg, "base": chem, "spec": {k: spec[k] for k in ("Si", "Cu", "Mg")},
                                                            "treatment_si_pct": treat["si_pct"]})})
        set_output(sp, msgs)
    return msgs


def parse_additions(content):
    with otlp_span(ENV, "parse_additions", "CHAIN", content, td_kind="parse") as sp:
        out = json.loads(content)
        set_output(sp, out)
    return out


def weigh_ladle(ladle, kg):
    with otlp_span(ENV, "weigh_ladle", "TOOL", {"ladle": ladle}, **{"tool.name": "weigh_ladle"}) as sp:
        out = {"ladle": ladle, "net_kg": kg + 3}
        set_output(sp, out)
    return out


def read_pour_temperature(ladle, spec):
    with otlp_span(ENV, "read_pour_temperature", "TOOL", {"ladle": ladle}, **{"tool.name": "read_pour_temperature"}) as sp:
        out = {"ladle": ladle, "temp_c": spec["pour_c"][0] + 18 + ladle * 4}
        set_output(sp, out)
    return out


def record_heat(heat, ladles):
    with otlp_span(ENV, "record_heat", "CHAIN", {"heat": heat, "ladles": ladles}, td_kind="state") as sp:
        out = {"heat": heat, "ladles": ladles, "recorded": True}
        set_output(sp, out)
    return out


def release_pour(heat, ladles):
    with otlp_span(ENV, "release_pour", "TOOL", {"heat": heat, "ladles": ladles}, **{"tool.name": "release_pour"}) as sp:
        h = HEATS[heat]
        spec = SPECS[h["grade"]]
        for lad in ladles:
            kg = lad["ladle_kg"]
            for k, v in lad["additions"].items():
                if not isinstance(v, (int, float)):
                    raise TypeError(f"release schema: ladle {lad['ladle']} additions.{k} must be a number of kg, got {v!r}")
            mg = lad["FeSiMg"] * 0.05 * 0.45 / kg * 100 - 0.76 * h["base"]["S"]
            si = h["base"]["Si"] + lad["FeSiMg"] * 0.45 / kg * 100 + lad["additions"]["FeSi75"] * 0.675 / kg * 100
            cu = h["base"]["Cu"] + lad["additions"]["Cu"] / kg * 100
            if not spec["Mg"][0] <= mg <= spec["Mg"][1]:
                raise ValueError(f"heat {heat} ladle {lad['ladle']}: predicted residual Mg {mg:.3f}% outside {spec['Mg'][0]}-{spec['Mg'][1]}% for {h['grade']}")
            if si > spec["Si"][1]:
                raise ValueError(f"heat {heat} ladle {lad['ladle']}: predicted Si {si:.2f}% above {spec['Si'][1]}% max for {h['grade']}")
            if cu > spec["Cu"][1] or cu < spec["Cu"][0]:
                raise ValueError(f"heat {heat} ladle {lad['ladle']}: predicted Cu {cu:.2f}% outside {spec['Cu'][0]}-{spec['Cu'][1]}% for {h['grade']}")
        out = {"heat": heat, "released": True, "ladles": len(ladles)}
        set_output(sp, out)
    return out


def execute(inp: dict, env, run) -> None:
    global ENV
    ENV = env
    heat = receive_heat(inp)
    chem = parse_spectro(read_spectrometer(heat["heat"]))
    spec = retrieve_grade_spec(heat["grade"])[0]
    treatment = compute_treatment(chem, spec, heat["ladles_kg"])
    history, ladles = [], []
    for i, treat in enumerate(treatment, start=1):
        msgs = assemble_prompt(i, treat["ladle_kg"], chem, spec, treat, history)
        answer = chat(env, msgs)
        adds = parse_additions(answer["content"])
        weigh_ladle(i, treat["ladle_kg"])
        read_pour_temperature(i, spec)
        history += [msgs[-1], {"role": "assistant", "content": answer["content"]}]
        ladles.append({"ladle": i, "ladle_kg": treat["ladle_kg"], "FeSiMg": treat["FeSiMg"], "additions": adds["additions"]})
    record_heat(heat["heat"], ladles)
    release_pour(heat["heat"], ladles)
