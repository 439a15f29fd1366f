"""Carnival float building: plan a float's sections and register it with the parade committee (OTLP/JSON)."""
from __future__ import annotations

import json
import re

from .common import Case, Otlp, last_user, policy
from .kit import active, planted
from .scrapyard import _append

AGENT, ROUTE, DOMAIN = "float-builder", "otlp", "carnival float building"
SHAPE = "brief -> LLM section plan -> per-section LLM design + spec parse + materials retrieval -> totals -> LLM safety sign-off -> register"
MODEL = "zt-floats"

FLOATS = {
    "FL-Dragon": {"theme": "dragon boat", "riders": 6, "sections": ["cab", "deck", "tail"], "workshop": "WS-4"},
    "FL-Reef": {"theme": "coral reef", "riders": 8, "sections": ["cab", "deck", "arch", "tail"], "workshop": "WS-2"},
    "FL-Comet": {"theme": "comet", "riders": 2, "sections": ["cab", "tail"], "workshop": "WS-1"},
    "FL-Harvest": {"theme": "harvest", "riders": 4, "sections": ["cab", "deck"], "workshop": "WS-3"},
    "FL-Jungle": {"theme": "jungle", "riders": 5, "sections": ["cab", "deck", "tail"], "workshop": "WS-5"},
    "FL-Castle": {"theme": "castle", "riders": 3, "sections": ["cab", "arch"], "workshop": "WS-6"},
}
REFS = ["FL-Comet", "FL-Harvest", "FL-Jungle", "FL-Castle"]
DIMS = {"cab": (2.4, 2.6), "deck": (4.2, 1.9), "arch": (2.0, 3.9), "tail": (3.1, 2.2)}
CERTS = {"WS-1": "FC-1108", "WS-2": "FC-2291", "WS-3": "FC-3307", "WS-4": "FC-4415", "WS-5": "FC-5520", "WS-6": "FC-6602"}
MAX_LEN, MAX_H = 14.0, 4.2


@policy(MODEL)
def _model(msgs):
    sys = msgs[0]["content"]
    req = json.loads(last_user(msgs))
    if sys.startswith("Plan"):
        secs = list(req["required_sections"]) + (["safety_rails"] if req["riders"] else [])
        if active("flo_plan"):
            secs = [s for s in secs if s != "safety_rails"]
        return json.dumps({"sections": secs})
    if sys.startswith("Design"):
        sec = req["section"]
        length, height = DIMS.get(sec, (0.0, 1.1))
        riders = req["riders_here"]
        if active("flo_format") and sec == "deck":
            return f"section={sec}; length={length * 100:.0f}cm; height={height * 100:.0f}cm; riders={riders}"
        return f"section={sec}; length={length}m; height={height}m; riders={riders}"
    cert = req["certificates_on_file"][0]
    if active("flo_halluc"):
        cert = "FC-2219"
    return json.dumps({"signed_off": True, "fire_certificate": cert, "notes": "extinguishers at cab and tail"})


def record(path, float_id: str, fault_id: str | None) -> None:
    o = Otlp("float-builder")
    f = FLOATS[float_id]
    with planted(fault_id):
        try:
            with o.span(AGENT, "AGENT", input=f"build and register float {float_id}", **{"agent.name": AGENT}) as top:
                with o.span("fetch_brief", "TOOL", input={"float": float_id}, **{"tool.name": "fetch_brief"}) as b:
                    brief = b.output = {"float": float_id, "theme": f["theme"], "riders": f["riders"],
                                        "required_sections": f["sections"], "workshop": f["workshop"]}
                plan = json.loads(o.llm("plan_sections", MODEL, [
                    {"role": "system", "content": "Plan the float's sections. Answer JSON."},
                    {"role": "user", "content": json.dumps(brief)}]))
                specs = []
                per = {s: 0 for s in plan["sections"]}
                seats = [s for s in plan["sections"] if s in ("deck", "arch", "tail")] or plan["sections"][:1]
                for i in range(f["riders"]):
                    per[seats[i % len(seats)]] += 1
                for sec in plan["sections"]:
                    text = o.llm("design_section", MODEL, [
                        {"role": "system", "content": "Design one float section; answer key=value pairs."},
                        {"role": "user", "content": json.dumps({"float": float_id, "section": sec, "riders_here": per[sec]})}])
                    with o.span("parse_spec", "CHAIN", input=text) as b:
                        fields = dict(kv.split("=") for kv in text.split("; "))
                        num = lambda s: float(re.match(r"[0-9.]+", s).group())  # noqa: E731
                        riders = fields["riders"]
                        spec = {"section": fields["section"], "length_m": num(fields["length"]),
                                "height_m": num(fields["height"]), "riders": int(riders)}
                        if active("flo_lossy") and sec == "tail":
                            spec.pop("riders")
                        b.output = spec
                    with o.span("materials_catalogue", "RETRIEVER", input={"query": f"{sec} frame materials"}) as b:
                        b.output = [{"item": "steel box section 40mm", "for": sec}, {"item": "marine ply 18mm", "for": sec}]
                    specs.append(spec)
                with o.span("sum_dimensions", "CHAIN", input=specs) as b:
                    first = 1 if active("flo_obo") else 0
                    totals = b.output = {"length_m": round(sum(s["length_m"] for s in specs[first:]), 2),
                                         "height_m": max(s["height_m"] for s in specs),
                                         "riders": sum(s.get("riders", 0) for s in specs)}
                sign = json.loads(o.llm("safety_signoff", MODEL, [
                    {"role": "system", "content": "Sign off float safety; cite the workshop's fire certificate. JSON."},
                    {"role": "user", "content": json.dumps({"float": float_id, "totals": totals,
                                                            "certificates_on_file": [CERTS[f["workshop"]]]})}]))
                reg = {"float": float_id, "sections": [s["section"] for s in specs], "totals": totals,
                       "fire_certificate": sign["fire_certificate"], "specs": specs}
                with o.span("register_float", "TOOL", input=reg, **{"tool.name": "register_float"}) as b:
                    if f["riders"] and "safety_rails" not in reg["sections"]:
                        raise ValueError("parade committee API 422: a float carrying riders needs a safety_rails section (regulation 7.3)")
                    if reg["totals"]["height_m"] > MAX_H:
                        raise ValueError(f"parade committee API 422: height {reg['totals']['height_m']} m exceeds the route clearance of {MAX_H} m")
                    drawn = round(sum(s["length_m"] for s in reg["specs"]), 2)
                    if reg["totals"]["length_m"] != drawn or drawn > MAX_LEN:
                        raise ValueError(f"parade committee API 422: declared length {reg['totals']['length_m']} m, section drawings total {drawn} m (limit {MAX_LEN} m)")
                    if reg["totals"]["riders"] != f["riders"]:
                        raise ValueError(f"parade committee API 409: {reg['totals']['riders']} riders declared, rider registry for {float_id} lists {f['riders']}")
                    if reg["fire_certificate"] != CERTS[f["workshop"]]:
                        raise ValueError(f"parade committee API 404: fire certificate {reg['fire_certificate']} not found for workshop {f['workshop']}")
                    b.output = {"registered": True, "parade_slot": f"P-{float_id[3:]}"}
                top.output = b.output
        except Exception:
            pass
    _append(o, path)


CASES = [
    Case("zt_floats_1", "flo_format", "format_drift", "FL-Dragon", "design_section", 2, "register_float", 1,
         "The deck's design answer switches from metres to centimetres, which the spec parser reads as metres."),
    Case("zt_floats_2", "flo_plan", "plan_error", "FL-Reef", "plan_sections", 1, "register_float", 1,
         "The section plan leaves out the safety_rails section a float with riders needs."),
    Case("zt_floats_3", "flo_obo", "off_by_one", "FL-Reef", "sum_dimensions", 1, "register_float", 1,
         "The length total starts its loop at index 1 and leaves the first section (the cab) out."),
    Case("zt_floats_4", "flo_lossy", "lossy_parsing", "FL-Dragon", "parse_spec", 3, "register_float", 1,
         "The spec parser drops the tail section's riders field, so the rider total comes out short."),
    Case("zt_floats_5", "flo_halluc", "hallucinated_value", "FL-Reef", "safety_signoff", 1, "register_float", 1,
         "The safety sign-off cites fire certificate FC-2219, which is not the certificate on file it was given."),
]
