"""A tapestry restorer's commissions (route: otlp, OpenTelemetry SDK + OpenInference, OTLP/JSON file)."""

from __future__ import annotations

import json
import math

from openai import OpenAI

import kit
from common import chat_policy, otel, span_io, task_prompt, write_otlp

NAME = "tapestry-commissions"
ROUTE = "otlp"
DOMAIN = "tapestry restorer: commissions"
SHAPE = "OTel spans: enquiry, extract LLM, parse, catalogue tool, per-area survey/cost loop, scheduling sub-agent (plan LLM, parse, bench booking), workshop routing, costing, commission memo write/read, quote LLM, filing, validator"

TAPESTRIES = {
    "T-OAK": {"id": "T-OAK", "title": "Oak and Stag verdure", "fibre": "wool", "century": 17, "areas": [("upper border", 620), ("stag", 410), ("lower border", 540), ("sky", 300)]},
    "T-SILK": {"id": "T-SILK", "title": "Garden of Pomona", "fibre": "silk", "century": 18, "areas": [("figure of Pomona", 380), ("fruit basket", 260), ("left border", 450), ("fountain", 210), ("sky", 330)]},
    "T-HUNT": {"id": "T-HUNT", "title": "Boar hunt fragment", "fibre": "wool", "century": 16, "areas": [("hounds", 350), ("rider", 290), ("border", 500)]},
    "T-MIL": {"id": "T-MIL", "title": "Millefleurs panel", "fibre": "wool and silk", "century": 16, "areas": [("flowers left", 420), ("unicorn", 380), ("flowers right", 430), ("border", 610)]},
    "T-ARR": {"id": "T-ARR", "title": "Arras armorial", "fibre": "wool", "century": 15, "areas": [("shield", 260), ("mantling", 330), ("motto scroll", 180)]},
    "T-SEA": {"id": "T-SEA", "title": "Seascape with galleons", "fibre": "silk", "century": 18, "areas": [("galleon", 400), ("waves", 520), ("harbour", 360), ("sky", 280)]},
}
TREATMENT_RATE = {"wool": 1.6, "silk": 2.4, "wool and silk": 2.1}  # GBP per cm2
SERVICES = ["surface clean", "consolidation", "lining", "hanging system"]

INPUTS = [
    {"client": "Hartwell Hall Trust", "tapestry": "T-OAK", "deadline": "2026-11-30", "enquiry": "Oak and Stag verdure (T-OAK), 17th c. wool: surface clean, consolidation, lining, hanging system. Needed back by 30 November 2026."},
    {"client": "Mrs E. Pargeter", "tapestry": "T-SILK", "deadline": "2027-01-29", "enquiry": "Garden of Pomona (T-SILK), silk: surface clean, consolidation, lining. Return by 29 January 2027."},
    {"client": "St Botolph's PCC", "tapestry": "T-HUNT", "deadline": "2026-10-16", "enquiry": "Boar hunt fragment (T-HUNT): consolidation, lining, hanging system; back for the patronal festival, 16 October 2026."},
    {"client": "Museum of the Marches", "tapestry": "T-MIL", "deadline": "2027-03-05", "enquiry": "Millefleurs panel (T-MIL): surface clean, consolidation, lining, hanging system. Exhibition opens 5 March 2027."},
    {"client": "Lord Aldersey", "tapestry": "T-ARR", "deadline": "2026-12-11", "enquiry": "Arras armorial (T-ARR): surface clean, consolidation. Return by 11 December 2026."},
    {"client": "Harbour Guild", "tapestry": "T-SEA", "deadline": "2027-02-19", "enquiry": "Seascape with galleons (T-SEA), silk: consolidation, lining, hanging system. Return by 19 February 2027."},
]

C = "zzr_tap_"
CASES = [
    {"id": C + "01", "input": 3, "fault_kind": "lossy_parsing", "root": ("parse_schedule", 1), "failure": ("validate_commission", 1),
     "description": "The schedule parser keeps only the first line of each phase cell and drops the hanging-system phase the planner listed on a continuation line."},
    {"id": C + "02", "input": 0, "fault_kind": "hallucinated_value", "root": ("ChatCompletion", 3), "failure": ("validate_commission", 1),
     "description": "The quote letter the model writes states a completion date two weeks before any date the schedule holds."},
    {"id": C + "03", "input": 4, "fault_kind": "bad_memory_write", "root": ("save_commission", 1), "failure": ("validate_commission", 1),
     "description": "The commission memo is written with the enquiry's first-listed service count as the area count, so the memo records two treated areas for the three-area Arras armorial."},
    {"id": C + "04", "input": 1, "fault_kind": "wrong_routing", "root": ("route_workshop", 1), "failure": ("validate_commission", 1),
     "description": "The workshop router matches on the tapestry's century instead of its fibre and sends an 18th-century silk to the wet-cleaning workshop."},
    {"id": C + "05", "input": 2, "fault_kind": "off_by_one", "root": ("total_cost", 1), "failure": ("validate_commission", 1),
     "description": "The costing step sums the treated areas from index 1, leaving the first area (the hounds) out of the quoted price."},
]


def brain(inp):
    t = TAPESTRIES[inp["tapestry"]]

    def extract(p):
        services = [s for s in SERVICES if s in inp["enquiry"]]
        return {"tapestry": inp["tapestry"], "client": inp["client"], "services": services, "deadline": inp["deadline"]}

    def plan(p):
        weeks = {"surface clean": 2, "consolidation": 6, "lining": 3, "hanging system": 1}
        rows, start = [], 0
        for s in p["services"]:
            rows.append(f"{s}: weeks {start + 1}-{start + weeks[s]}")
            start += weeks[s]
        text = "\n".join(rows)
        if "hanging system" in p["services"]:
            text = text.replace("\nhanging system:", "\n  and hanging system:")
        return {"start": "2026-06-01", "weeks": start, "phases": text}

    def quote(p):
        done = p["completion"]
        if kit.on(C + "02"):
            y, m, d = map(int, done.split("-"))
            d = d - 14 if d > 14 else d + 14
            m = m if d < 15 or p["completion"][8:] <= "14" else m - 1
            done = f"{y}-{m:02d}-{d:02d}"
        return f"Dear {p['client']}, we can restore {p['title']} for GBP {p['total']:,.2f}; completion by {done}."

    return chat_policy({"extract": extract, "plan_schedule": plan, "write_quote": quote})


def record(server, inp, path):
    from datetime import date, timedelta

    server.use(brain(inp))
    provider, spans = otel()
    tracer = provider.get_tracer(NAME)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)

    def ask(task, payload):
        r = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": "You are the conservation studio's assistant."},
            {"role": "user", "content": task_prompt(task, payload)}])
        return r.choices[0].message.content

    def step(name, kind, value, fn):
        with tracer.start_as_current_span(name) as sp:
            out = fn()
            span_io(sp, kind, value, out)
            return out

    memory: dict = {}
    try:
        with tracer.start_as_current_span(NAME) as root:
            span_io(root, "AGENT", {"enquiry": inp["enquiry"]})
            root.set_attribute("session.id", f"commission-{inp['tapestry']}")
            enquiry = step("receive_enquiry", "CHAIN", {"client": inp["client"]}, lambda: inp["enquiry"])
            raw = ask("extract", {"enquiry": enquiry})
            request = step("parse_enquiry", "CHAIN", {"text": raw}, lambda: json.loads(raw))
            record_ = step("lookup_tapestry", "TOOL", {"id": request["tapestry"]}, lambda: json.loads(json.dumps(TAPESTRIES[request["tapestry"]])))
            areas = []
            for name, cm2 in record_["areas"]:
                survey = step("survey_area", "TOOL", {"tapestry": record_["id"], "area": name},
                              lambda: {"area": name, "cm2": cm2, "loss": "weft loss" if cm2 > 400 else "abrasion"})
                areas.append(step("cost_area", "CHAIN", survey,
                                  lambda: dict(survey, cost=round(survey["cm2"] * TREATMENT_RATE[record_["fibre"]], 2))))
            with tracer.start_as_current_span("scheduling") as sub:
                span_io(sub, "AGENT", {"services": request["services"]})
                plan_raw = ask("plan_schedule", {"services": request["services"], "deadline": request["deadline"]})

                def parse_schedule():
                    plan = json.loads(plan_raw)
                    phases = []
                    for line in plan["phases"].split("\n"):
                        if kit.on(C + "01") and line.startswith(" "):
                            continue
                        phases.append(line.strip().removeprefix("and ").split(":")[0])
                    return {"start": plan["start"], "weeks": plan["weeks"], "phases": phases}

                schedule = step("parse_schedule", "CHAIN", {"text": plan_raw}, parse_schedule)
                bench = step("book_bench", "TOOL", {"start": schedule["start"], "weeks": schedule["weeks"]},
                             lambda: {"bench": "B2", "from": schedule["start"],
                                      "to": (date.fromisoformat(schedule["start"]) + timedelta(weeks=schedule["weeks"])).isoformat()})
                span_io(sub, "AGENT", None, {"schedule": schedule, "bench": bench})

            def route():
                if kit.on(C + "04"):
                    return "wet-cleaning workshop" if record_["century"] >= 17 else "conservation studio"
                return "conservation studio" if "silk" in record_["fibre"] else "wet-cleaning workshop"

            workshop = step("route_workshop", "CHAIN", {"fibre": record_["fibre"], "century": record_["century"]}, route)

            def total():
                first = 1 if kit.on(C + "05") else 0
                return {"areas": len(areas), "total": round(sum(a["cost"] for a in areas[first:]), 2)}

            cost = step("total_cost", "CHAIN", {"areas": areas}, total)

            def save():
                n_areas = len(request["services"]) if kit.on(C + "03") else len(areas)
                memory["commission"] = {"client": inp["client"], "tapestry": record_["id"], "areas": n_areas, "total": cost["total"],
                                        "workshop": workshop, "completion": bench["to"]}
                return memory["commission"]

            step("save_commission", "CHAIN", {"client": inp["client"]}, save)
            memo = step("load_commission", "CHAIN", {"key": "commission"}, lambda: dict(memory["commission"]))
            letter = ask("write_quote", {"client": memo["client"], "title": record_["title"], "total": memo["total"], "completion": memo["completion"]})
            filed = step("file_quote", "TOOL", {"client": memo["client"]}, lambda: {"ref": f"Q-{record_['id']}-26", "chars": len(letter)})

            def validate():
                if memo["areas"] != len(record_["areas"]):
                    raise ValueError(f"memo lists {memo['areas']} treated areas, survey found {len(record_['areas'])}")
                if "silk" in record_["fibre"] and memo["workshop"] != "conservation studio":
                    raise ValueError(f"{record_['fibre']} tapestry {record_['id']} routed to the {memo['workshop']}")
                missing = [s for s in request["services"] if s not in schedule["phases"]]
                if missing:
                    raise ValueError(f"schedule has no phase for {missing}")
                due = round(sum(c * TREATMENT_RATE[record_["fibre"]] for _, c in record_["areas"]), 2)
                if abs(memo["total"] - due) > 0.01:
                    raise ValueError(f"quoted total GBP {memo['total']} differs from the surveyed GBP {due}")
                if memo["completion"] > inp["deadline"]:
                    raise ValueError(f"completion {memo['completion']} is after the deadline {inp['deadline']}")
                if memo["completion"] not in letter:
                    raise ValueError(f"quote letter does not state the scheduled completion {memo['completion']}")
                return {"status": "consistent", "quote": filed["ref"]}

            step("validate_commission", "CHAIN", {"memo": memo}, validate)
    except ValueError:
        pass
    finally:
        write_otlp(spans, path)
