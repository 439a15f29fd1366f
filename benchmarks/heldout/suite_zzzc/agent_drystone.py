"""Coping & Through: quotes for dry-stone walling jobs, traced with OpenInference + OpenTelemetry (OTLP JSON).

Shape: an enquiry extraction model call and its parse, then three nested agent spans: a survey agent
(per 10 m section: a site-measure tool and a volume span), a materials agent (quarry price sheet
retriever, a model that picks the quarry with a tool call, a delivery-slot tool), a planning model
call with its parse, a labour-rates tool, pricing, and a final quote check.  ~20-35 spans.
"""

from __future__ import annotations

import json
import math
import re

from opentelemetry.trace import Status, StatusCode

from suite_common import client, last_user, otlp, payload_after, system_of, write_otlp
from trajdebug.testing import Reply, tool_call

NAME = "coping-and-through-quotes"
ROUTE = "otlp"
DOMAIN = "dry-stone walling contractor's quotes"
SHAPE = "OTLP: extract model + parse -> survey agent (loop: measure tool, volume) -> materials agent (price-sheet retriever, picking model with tool call, delivery tool) -> plan model + parse -> rates tool -> pricing -> quote check"

FEATURES_FIRST_ONLY = False
PRICE_SHEET_CUT = False
RATES_LAST_YEAR = False
QUARRY_NAME_MADE_UP = False
GANG_PLAN_SHORT = False

QUARRIES = {
    "Calder": [("Woodhouse Delph", "gritstone", 118.0), ("Scout Moor", "gritstone", 124.0), ("Cragg Vale", "sandstone", 96.0),
               ("Bank Top", "limestone", 88.0)],
    "Dales": [("Threshfield", "limestone", 84.0), ("Swinden", "limestone", 90.0), ("Burnsall", "gritstone", 121.0)],
    "Cotswolds": [("Guiting", "limestone", 132.0), ("Farmington", "limestone", 128.0)],
}
REGION = {"Hebden Bridge": "Calder", "Todmorden": "Calder", "Grassington": "Dales", "Malham": "Dales", "Naunton": "Cotswolds"}
FEATURES = {"cripple hole": 45.0, "stile": 220.0, "gate stoop": 160.0, "water smoot": 60.0, "cheek end": 140.0}
RATES = {2026: {"waller_day": 215.0, "labourer_day": 150.0}, 2024: {"waller_day": 190.0, "labourer_day": 130.0}}
GUILD_MINIMUM_2026 = 205.0
METRES_PER_PERSON_DAY = 2.5

INPUTS = [
    "Rebuild 38 m of collapsed field wall, 1.4 m high, gritstone, with two cripple holes and a stile. Site near Hebden Bridge.",
    "New limestone boundary wall, 22 m long and 1.2 m high, one gate stoop and a cheek end, at Grassington.",
    "Repair 14 m of gritstone wall 1.5 m high with a water smoot, Todmorden.",
    "Cotswold limestone garden wall, 9 m long, 0.9 m high, with a cheek end. Naunton.",
    "Rebuild 51 m of limestone wall, 1.3 m high, two stiles and a water smoot, near Malham.",
]
CASES = [
    {"id": "zzzc-drystone-features", "input": 0, "switch": "FEATURES_FIRST_ONLY", "fault_kind": "lossy_parsing",
     "root": {"name": "parse_enquiry", "occurrence": 1, "kind": "other"},
     "failure": {"name": "check_quote", "occurrence": 1},
     "description": "Parsing the extracted enquiry keeps only the first feature, the cripple holes, and drops the stile the customer asked for."},
    {"id": "zzzc-drystone-sheet", "input": 2, "switch": "PRICE_SHEET_CUT", "fault_kind": "truncated_result",
     "root": {"name": "quarry_price_sheet", "occurrence": 1, "kind": "retrieval"},
     "failure": {"name": "check_quote", "occurrence": 1},
     "description": "The Calder price sheet comes back cut after its first rows, only Cragg Vale sandstone and Bank Top limestone, so no gritstone quarry is on offer for a gritstone repair."},
    {"id": "zzzc-drystone-rates", "input": 1, "switch": "RATES_LAST_YEAR", "fault_kind": "stale_data",
     "root": {"name": "labour_rates", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "check_quote", "occurrence": 1},
     "description": "The labour-rate lookup serves the 2024 day rates, 190 GBP for a waller, under the 205 GBP guild minimum for 2026."},
    {"id": "zzzc-drystone-quarry", "input": 4, "switch": "QUARRY_NAME_MADE_UP", "fault_kind": "hallucinated_value",
     "root": {"name": "ChatCompletion", "occurrence": 2, "kind": "llm"},
     "failure": {"name": "delivery_slot", "occurrence": 1},
     "description": "The materials model orders from Malham Cove Quarry, a name on none of the price-sheet rows it was given."},
    {"id": "zzzc-drystone-gang", "input": 3, "switch": "GANG_PLAN_SHORT", "fault_kind": "plan_error",
     "root": {"name": "ChatCompletion", "occurrence": 3, "kind": "llm"},
     "failure": {"name": "check_quote", "occurrence": 1},
     "description": "The work plan gives the Naunton garden wall one waller for one day, 2.5 m of walling against the 9 m to build."},
]


# ---------------------------------------------------------------- the fake model's behaviour
def policy(request):
    system = system_of(request)
    prompt = last_user(request)
    if system.startswith("Extract the walling job"):
        length = float(re.search(r"(\d+) m (?:of|long)", prompt).group(1))
        height = float(re.search(r"([\d.]+) m high", prompt).group(1))
        stone = next(s for s in ("gritstone", "limestone", "sandstone") if s in prompt.lower())
        site = next(p for p in REGION if p in prompt)
        feats = []
        for f in FEATURES:
            m = re.search(r"(a|an|one|two|three) " + f, prompt)
            if m:
                feats.append({"feature": f, "count": {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}[m.group(1)]})
        return json.dumps({"length_m": length, "height_m": height, "stone": stone, "site": site, "features": feats})
    if system.startswith("Choose the quarry"):
        need = payload_after(prompt, "Need:")
        rows = payload_after(prompt, "Price sheet:")
        fit = sorted((r for r in rows if r["stone"] == need["stone"]), key=lambda r: r["gbp_per_tonne"])
        pick = fit[0]["quarry"] if fit else rows[0]["quarry"]
        if QUARRY_NAME_MADE_UP:
            pick = "Malham Cove Quarry"
        return Reply(tool_calls=(tool_call("order_stone", {"quarry": pick, "tonnes": need["tonnes"]}),))
    if system.startswith("Plan the walling work"):
        job = payload_after(prompt, "Job:")
        gang = 2 if job["length_m"] > 12 else 1
        days = math.ceil(job["length_m"] / (METRES_PER_PERSON_DAY * gang))
        if GANG_PLAN_SHORT:
            days = 1
        return json.dumps({"gang": {"wallers": gang, "labourers": 1 if gang > 1 else 0}, "days": days,
                           "sequence": ["strip out", "footings", "build", "cope"]})
    return "I quote dry-stone walling."


# ---------------------------------------------------------------- the agent
def _span(tracer, name, kind, inp):
    return tracer.start_as_current_span(name, attributes={
        "openinference.span.kind": kind, "input.value": json.dumps(inp), "input.mime_type": "application/json"})


def _out(span, value):
    span.set_attribute("output.value", json.dumps(value))
    span.set_attribute("output.mime_type", "application/json")
    return value


def _chat(server, system, user, **kw):
    reply = client(server).chat.completions.create(model=server.model, messages=[
        {"role": "system", "content": system}, {"role": "user", "content": user}], **kw)
    return reply.choices[0].message


ORDER_TOOL = [{"type": "function", "function": {"name": "order_stone", "description": "Order walling stone from a quarry.",
                                                "parameters": {"type": "object", "properties": {"quarry": {"type": "string"}, "tonnes": {"type": "number"}},
                                                               "required": ["quarry", "tonnes"]}}}]


def quote(server, tracer, enquiry: str):
    with tracer.start_as_current_span(NAME, attributes={"openinference.span.kind": "AGENT", "agent.name": NAME, "input.value": enquiry}) as top:
        text = _chat(server, "Extract the walling job as JSON: length_m, height_m, stone, site, features.", enquiry).content
        with _span(tracer, "parse_enquiry", "CHAIN", {"text": text}) as s:
            raw = json.loads(text)
            feats = raw["features"][:1] if FEATURES_FIRST_ONLY else raw["features"]
            job = _out(s, {**raw, "features": feats, "length_m": float(raw["length_m"]), "height_m": float(raw["height_m"])})
        with tracer.start_as_current_span("survey_agent", attributes={"openinference.span.kind": "AGENT", "agent.name": "survey_agent"}):
            sections, done = [], 0.0
            while done < job["length_m"]:
                run = min(10.0, job["length_m"] - done)
                with _span(tracer, "site_measure", "TOOL", {"site": job["site"], "from_m": done, "to_m": done + run}) as s:
                    m = _out(s, {"from_m": done, "length_m": run, "height_m": job["height_m"],
                                 "batter": "1 in 6", "fallen_pct": 40 + int(done * 7) % 50})
                with _span(tracer, "section_volume", "CHAIN", {"section": m}) as s:
                    face = m["length_m"] * m["height_m"]
                    sections.append(_out(s, {"from_m": done, "face_m2": round(face, 2), "tonnes": round(face * 1.25, 2)}))
                done += run
            tonnes = round(sum(x["tonnes"] for x in sections), 1)
        with tracer.start_as_current_span("materials_agent", attributes={"openinference.span.kind": "AGENT", "agent.name": "materials_agent"}):
            region = REGION[job["site"]]
            with _span(tracer, "quarry_price_sheet", "RETRIEVER", {"region": region}) as s:
                rows = [{"quarry": q, "stone": st, "gbp_per_tonne": p} for q, st, p in QUARRIES[region]]
                if PRICE_SHEET_CUT:
                    rows = rows[2:]
                _out(s, {"region": region, "rows": rows})
            msg = _chat(server, "Choose the quarry and order the stone with the order_stone tool.",
                        f"Need: {json.dumps({'stone': job['stone'], 'tonnes': tonnes})}\nPrice sheet: {json.dumps(rows)}", tools=ORDER_TOOL)
            order = json.loads(msg.tool_calls[0].function.arguments)
            with _span(tracer, "delivery_slot", "TOOL", order) as s:
                known = {q: (st, p) for q, st, p in QUARRIES[region]}
                if order["quarry"] not in known:
                    raise LookupError(f"haulier: no collection point for {order['quarry']} in {region}")
                stone, price = known[order["quarry"]]
                lorries = math.ceil(order["tonnes"] / 18)
                delivery = _out(s, {"quarry": order["quarry"], "stone": stone, "gbp_per_tonne": price, "lorries": lorries,
                                    "delivery_gbp": 185.0 * lorries, "date": "2027-01-11"})
        plan_text = _chat(server, "Plan the walling work: gang, days, sequence as JSON.", f"Job: {json.dumps(job)}").content
        with _span(tracer, "parse_plan", "CHAIN", {"text": plan_text}) as s:
            plan = _out(s, json.loads(plan_text))
        with _span(tracer, "labour_rates", "TOOL", {"year": 2026, "region": region}) as s:
            year = 2024 if RATES_LAST_YEAR else 2026
            rates = _out(s, {"year": year, **RATES[year]})
        with _span(tracer, "price_quote", "CHAIN", {"job": job, "plan": plan, "rates": rates, "delivery": delivery}) as s:
            labour = plan["days"] * (plan["gang"]["wallers"] * rates["waller_day"] + plan["gang"]["labourers"] * rates["labourer_day"])
            stone_cost = tonnes * delivery["gbp_per_tonne"] + delivery["delivery_gbp"]
            extras = sum(FEATURES[f["feature"]] * f["count"] for f in job["features"])
            q = _out(s, {"labour_gbp": labour, "stone_gbp": round(stone_cost, 2), "features_gbp": extras,
                         "total_gbp": round(labour + stone_cost + extras, 2), "stone": delivery["stone"], "days": plan["days"],
                         "wallers": plan["gang"]["wallers"], "features": [f["feature"] for f in job["features"]],
                         "waller_day": rates["waller_day"]})
        with _span(tracer, "check_quote", "CHAIN", {"enquiry": enquiry, "quote": q}) as s:
            asked = [f for f in FEATURES if f in enquiry or f + "s" in enquiry]
            missing = [f for f in asked if f not in q["features"]]
            assert not missing, f"quote leaves out the {', '.join(missing)} the enquiry asks for"
            assert q["stone"] in enquiry.lower(), f"quote prices {q['stone']}, the enquiry is for {job['stone']}"
            assert q["waller_day"] >= GUILD_MINIMUM_2026, f"waller day rate {q['waller_day']:.0f} GBP is under the {GUILD_MINIMUM_2026:.0f} GBP guild minimum"
            reach = q["days"] * q["wallers"] * METRES_PER_PERSON_DAY
            assert reach >= job["length_m"], f"{q['days']} day(s) for {q['wallers']} waller(s) builds {reach} m, the job is {job['length_m']} m"
            _out(s, {"ok": True, "total_gbp": q["total_gbp"]})
        top.set_attribute("output.value", f"Quote: {q['total_gbp']:.2f} GBP, {q['days']} days, stone from {delivery['quarry']}.")
        top.set_status(Status(StatusCode.OK))


def run_once(server, inp: str, path: str) -> None:
    provider, exporter = otlp()
    exporter.clear()
    tracer = provider.get_tracer("coping-and-through")
    try:
        quote(server, tracer, inp)
    except (AssertionError, LookupError):
        pass
    write_otlp(exporter, path)
