"""Dovecote restorer: survey, schedule and listed-building consent for a nest-box restoration (otlp route)."""
import json

from openai import OpenAI

from otlp_kit import span, traced_run

NAME, ROUTE, DOMAIN = "dovecote-restoration", "otlp", "dovecote restorer"
SHAPE = "OpenInference spans: survey tool, per-tier counting loop (6-9 tiers), guidance retriever, model schedule, parser, per-phase estimates, consent API that refuses"
SWITCH = None
_CLIENTS = {}

GUIDANCE = {("I", "brick"): {"mortar": "NHL 2 lime", "record_first": True},
            ("II", "brick"): {"mortar": "NHL 3.5 lime", "record_first": False},
            ("I", "stone"): {"mortar": "NHL 2 lime", "record_first": True},
            ("II", "stone"): {"mortar": "NHL 3.5 lime", "record_first": False}}
INPUTS = [
    {"site": "Willington", "grade": "I", "material": "brick", "tiers": 8, "boxes_per_tier": 60, "seed": 3},
    {"site": "Kinwarton", "grade": "I", "material": "stone", "tiers": 6, "boxes_per_tier": 96, "seed": 5},
    {"site": "Bruton", "grade": "II", "material": "stone", "tiers": 7, "boxes_per_tier": 45, "seed": 2},
    {"site": "Hurley", "grade": "II", "material": "brick", "tiers": 9, "boxes_per_tier": 50, "seed": 7},
    {"site": "Dunster", "grade": "I", "material": "stone", "tiers": 6, "boxes_per_tier": 80, "seed": 4},
]
CASES = [
    {"id": "zzzo_d01", "input": 0, "switch": "pages", "fault_kind": "truncated_result",
     "root": ("load_survey", 1, "tool"), "failure": ("consent_application", 1),
     "description": "The survey service returned the first five tiers of eight, so the application covered five tiers."},
    {"id": "zzzo_d02", "input": 3, "switch": "count", "fault_kind": "off_by_one",
     "root": ("count_rebuild", 3, "other"), "failure": ("consent_application", 1),
     "description": "Counting the boxes to rebuild on tier 3 started at the second box and missed the first one."},
    {"id": "zzzo_d03", "input": 1, "switch": "grade", "fault_kind": "wrong_retrieval",
     "root": ("heritage_guidance", 1, "retrieval"), "failure": ("consent_application", 1),
     "description": "The guidance search returned the grade II note for a grade I dovecote, so NHL 3.5 mortar went into the application."},
    {"id": "zzzo_d04", "input": 4, "switch": "record", "fault_kind": "plan_error",
     "root": ("ChatCompletion", 1, "llm"), "failure": ("consent_application", 1),
     "description": "The model's schedule put the photographic record after the rebuilding, where a grade I building needs it first."},
    {"id": "zzzo_d05", "input": 2, "switch": "mix", "fault_kind": "lossy_parsing",
     "root": ("read_schedule", 1, "other"), "failure": ("consent_application", 1),
     "description": "Reading the schedule kept each phase's name and weeks but dropped the mortar, so the application named the yard's default cement-gauged mix."},
]


def damage(inp, tier):
    return [(inp["seed"] * 7 + tier * 13 + b * 5) % 11 < 2 for b in range(inp["boxes_per_tier"])]


def office_record(inp):
    return sum(sum(damage(inp, t)) for t in range(1, inp["tiers"] + 1))


def policy(request):
    data = json.loads(request.body["messages"][-1]["content"])
    phases = [{"phase": "photographic record", "weeks": 1, "mortar": None},
              {"phase": "rake out joints", "weeks": 2, "mortar": None},
              {"phase": "rebuild nest boxes", "weeks": max(2, data["boxes"] // 40), "mortar": data["mortar"]},
              {"phase": "repoint", "weeks": 2, "mortar": data["mortar"]}]
    if SWITCH == "record":
        phases = phases[1:3] + phases[:1] + phases[3:]
    return json.dumps({"site": data["site"], "phases": phases})


def consent_application(tracer, inp, tiers, guidance, schedule, boxes):
    with span(tracer, "consent_application", "TOOL", {"site": inp["site"], "grade": inp["grade"], "tiers": len(tiers),
                                                     "boxes": boxes, "schedule": schedule}) as s:
        if len(tiers) != inp["tiers"]:
            raise PermissionError(f"consent refused: application covers {len(tiers)} of the {inp['tiers']} listed tiers")
        if boxes != office_record(inp):
            raise PermissionError(f"consent refused: {boxes} boxes to rebuild, the 2025 inspection recorded {office_record(inp)}")
        need = GUIDANCE[(inp["grade"], inp["material"])]
        mortars = {p["mortar"] for p in schedule if p["phase"] in ("rebuild nest boxes", "repoint")}
        if mortars != {need["mortar"]}:
            raise PermissionError(f"consent refused: grade {inp['grade']} {inp['material']} takes {need['mortar']}, application names {sorted(mortars)}")
        if need["record_first"] and schedule[0]["phase"] != "photographic record":
            raise PermissionError(f"consent refused: grade {inp['grade']} needs the photographic record before work, schedule starts with {schedule[0]['phase']}")
        s["out"] = {"consent": f"LBC/{inp['site']}/2027", "conditions": 2}
        return s["out"]


def record(inp, server, path):
    if server.base_url not in _CLIENTS:
        _CLIENTS[server.base_url] = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    client = _CLIENTS[server.base_url]
    with traced_run(NAME, path) as tracer:
        try:
            with span(tracer, NAME, "AGENT", {"site": inp["site"], "task": f"restoration of {inp['site']} dovecote"}) as top:
                with span(tracer, "load_survey", "TOOL", {"site": inp["site"]}) as s:
                    tiers = list(range(1, inp["tiers"] + 1))
                    if SWITCH == "pages":
                        tiers = tiers[:5]
                    s["out"] = {"site": inp["site"], "tiers": tiers, "boxes_per_tier": inp["boxes_per_tier"]}
                counts = []
                for t in tiers:
                    with span(tracer, "count_rebuild", "CHAIN", {"tier": t}) as s:
                        marks = damage(inp, t)
                        start = 1 if (SWITCH == "count" and t == 3) else 0
                        s["out"] = {"tier": t, "rebuild": sum(marks[start:])}
                        counts.append(s["out"]["rebuild"])
                with span(tracer, "heritage_guidance", "RETRIEVER", {"grade": inp["grade"], "material": inp["material"]}) as s:
                    grade = "II" if SWITCH == "grade" else inp["grade"]
                    s["out"] = dict(GUIDANCE[(grade, inp["material"])], grade=grade)
                    guidance = s["out"]
                boxes = sum(counts)
                reply = client.chat.completions.create(model=server.model, messages=[
                    {"role": "system", "content": "Schedule the restoration phases. Answer JSON."},
                    {"role": "user", "content": json.dumps({"site": inp["site"], "boxes": boxes, "mortar": guidance["mortar"]})}])
                with span(tracer, "read_schedule", "CHAIN", {"text": reply.choices[0].message.content}) as s:
                    plan = json.loads(reply.choices[0].message.content)
                    keep = ("phase", "weeks") if SWITCH == "mix" else ("phase", "weeks", "mortar")
                    schedule = [{k: p.get(k) for k in keep} for p in plan["phases"]]
                    for p in schedule:
                        p.setdefault("mortar", "cement-gauged 1:1:6" if p["phase"] in ("rebuild nest boxes", "repoint") else None)
                    s["out"] = schedule
                for p in schedule:
                    with span(tracer, "estimate_phase", "TOOL", p) as s:
                        s["out"] = {"phase": p["phase"], "cost_gbp": p["weeks"] * 2150}
                consent = consent_application(tracer, inp, tiers, guidance, schedule, boxes)
                top["out"] = {"consent": consent["consent"], "boxes": boxes}
        except PermissionError:
            pass
