"""Borehole drilling contractor: prices a water borehole for an enquiry (otlp route)."""
from __future__ import annotations

import json

import kit
from common import Otlp, block, client, last_user, parse_block

NAME = "borehole-quotes"
ROUTE = "otlp"
DOMAIN = "a borehole drilling contractor's quotes"
SHAPE = "OpenInference spans: get_enquiry, site_survey sub-agent (pick_site llm, bgs_logs, summarise llm, parse_geology), design llm + parse_design, casing_length, get_rates, stratum_cost per stratum, pump_selection, remember_job, assemble_quote, quote_letter llm, validate_quote"

SITES = {
    "SY7 0LP": [("topsoil", 2), ("boulder_clay", 14), ("mudstone", 40), ("sandstone", 30)],
    "SY7 0LQ": [("topsoil", 1), ("boulder_clay", 9), ("mudstone", 25), ("sandstone", 25)],
    "LD1 5RT": [("topsoil", 3), ("gravel", 12), ("sandstone", 45), ("siltstone", 20)],
    "HR3 6AB": [("topsoil", 1), ("boulder_clay", 20), ("limestone", 50)],
    "NP8 1XY": [("topsoil", 2), ("gravel", 8), ("mudstone", 30), ("sandstone", 40)],
    "SA20 0DD": [("topsoil", 2), ("boulder_clay", 10), ("siltstone", 35), ("sandstone", 28)],
    "CF44 9JJ": [("topsoil", 1), ("gravel", 15), ("limestone", 60)],
    "LD2 3NN": [("topsoil", 2), ("boulder_clay", 12), ("mudstone", 20), ("limestone", 44)],
    "SY15 6QA": [("topsoil", 3), ("gravel", 10), ("siltstone", 30), ("sandstone", 36)],
}
AQUIFER = {"sandstone", "limestone"}
RATES_2026 = {"topsoil": 40.0, "boulder_clay": 95.0, "gravel": 88.0, "mudstone": 104.0, "siltstone": 110.0,
              "sandstone": 118.0, "limestone": 126.0}
RATES_2025 = {k: round(v * 0.92, 2) for k, v in RATES_2026.items()}
PUMPS = [("SP-2", 600, 60), ("SP-3", 900, 80), ("SP-5", 1200, 100), ("SP-8", 1800, 120), ("SP-11", 2400, 150)]
CASING_PER_M = 22.0


def _enq(ref, postcode, yield_lph, prev):
    return {"ref": ref, "postcode": postcode, "yield_lph": yield_lph, "recent": [prev, postcode]}


CASES = [
    {"id": "zzn_bore_01", "kind": "unit_error", "input": _enq("Q-3101", "SY7 0LP", 900, "HR3 6AB"),
     "root": ("assemble_quote", 1), "failure": ("validate_quote", 1),
     "desc": "assemble_quote prices the drilling line from the design depth in feet (282 ft) as if it were metres."},
    {"id": "zzn_bore_02", "kind": "stale_data", "input": _enq("Q-3102", "LD1 5RT", 1100, "NP8 1XY"),
     "root": ("get_rates", 1), "failure": ("validate_quote", 1),
     "desc": "get_rates serves the cached 2025 rate sheet, 8% below the 2026 rates, so every stratum is priced low."},
    {"id": "zzn_bore_03", "kind": "truncated_result", "input": _enq("Q-3103", "HR3 6AB", 1500, "SY7 0LP"),
     "root": ("pump_selection", 1), "failure": ("validate_quote", 1),
     "desc": "pump_selection reads only the first page of the pump catalogue (three models), so the 1500 l/h site gets the 1200 l/h SP-5."},
    {"id": "zzn_bore_04", "kind": "subagent_wrong_entity", "input": _enq("Q-3104", "SY7 0LP", 800, "SY7 0LQ"),
     "root": ("ChatCompletion", 1), "failure": ("validate_quote", 1),
     "desc": "The site survey sub-agent picks the neighbouring enquiry's site SY7 0LQ, so the design follows that site's log and stops short of the aquifer at SY7 0LP."},
    {"id": "zzn_bore_05", "kind": "bad_memory_write", "input": _enq("Q-3105", "NP8 1XY", 1000, "LD1 5RT"),
     "root": ("remember_job", 1), "failure": ("validate_quote", 1),
     "desc": "remember_job stores the casing length (40 m) as the job's depth, and the quote is assembled from that job record."},
]
REFS = [_enq("Q-3001", "SA20 0DD", 900, "CF44 9JJ"), _enq("Q-3002", "CF44 9JJ", 1600, "SA20 0DD"),
        _enq("Q-3003", "LD2 3NN", 700, "SY15 6QA"), _enq("Q-3004", "SY15 6QA", 1200, "LD2 3NN")]


def brain(request):
    title, p = parse_block(last_user(request))
    if title == "PICK_SITE":
        site = p["enquiry_postcode"]
        if kit.on("zzn_bore_04"):
            site = [s for s in p["recent"] if s != site][0]
        return json.dumps({"postcode": site})
    if title == "GEOLOGY":
        return json.dumps({"strata": [{"rock": r, "thickness_m": t} for r, t in p["log"]["strata"]]})
    if title == "DESIGN":
        depth, top = 0, 0
        for s in p["strata"]:
            depth += s["thickness_m"]
            if s["rock"] in AQUIFER:
                depth = top + s["thickness_m"]
                break
            top += s["thickness_m"]
        unstable = sum(s["thickness_m"] for s in p["strata"] if s["rock"] in ("topsoil", "boulder_clay", "gravel", "mudstone"))
        return json.dumps({"depth_m": depth, "depth_ft": round(depth * 3.281), "unstable_m": unstable, "diameter_mm": 150})
    if title == "LETTER":
        return f"Dear customer, our quote {p['quote']['ref']} for a {p['quote']['depth_m']} m borehole is {p['quote']['total']:.2f} GBP."
    raise ValueError(title)


def get_enquiry(ref, enquiry):
    return dict(enquiry)


def bgs_logs(postcode):
    return {"postcode": postcode, "strata": SITES[postcode]}


def parse_geology(text):
    return json.loads(text)["strata"]


def parse_design(text):
    return json.loads(text)


def casing_length(design):
    return {"casing_m": design["unstable_m"], "cost": round(design["unstable_m"] * CASING_PER_M, 2)}


def get_rates(year):
    if kit.on("zzn_bore_02"):
        return {"sheet": "2025", "rates": RATES_2025}
    return {"sheet": str(year), "rates": RATES_2026}


def stratum_cost(rock, metres, rates):
    return {"rock": rock, "metres": metres, "cost": round(metres * rates["rates"][rock], 2)}


def pump_selection(yield_lph, head_m):
    catalogue = PUMPS[:3] if kit.on("zzn_bore_03") else PUMPS
    fits = [p for p in catalogue if p[1] >= yield_lph and p[2] >= head_m]
    model, flow, head = fits[0] if fits else catalogue[-1]
    return {"model": model, "flow_lph": flow, "head_m": head, "price": 400 + flow * 0.5}


def remember_job(ref, design, casing, pump):
    depth = design["depth_m"]
    if kit.on("zzn_bore_05"):
        depth = casing["casing_m"]
    JOBS[ref] = {"depth_m": depth, "pump": pump["model"], "casing_m": casing["casing_m"]}
    return JOBS[ref]


JOBS: dict = {}


def assemble_quote(ref, design, casing, strata_costs, pump):
    job = JOBS[ref]
    depth = job["depth_m"]
    if kit.on("zzn_bore_01"):
        depth = design["depth_ft"]
    per_m = sum(c["cost"] for c in strata_costs) / max(1, sum(c["metres"] for c in strata_costs))
    drilling = round(depth * per_m, 2)
    total = round(drilling + casing["cost"] + pump["price"] + 650.0, 2)
    return {"ref": ref, "depth_m": depth, "drilling": drilling, "casing": casing["cost"], "pump": pump["model"],
            "pump_price": pump["price"], "mobilisation": 650.0, "total": total}


def validate_quote(enquiry, quote, letter):
    strata = SITES[enquiry["postcode"]]
    top = 0
    for rock, t in strata:
        if rock in AQUIFER:
            break
        top += t
    need = top + dict(strata)[rock]
    if quote["depth_m"] != need:
        raise ValueError(f"quote {quote['ref']} drills {quote['depth_m']} m; the log for {enquiry['postcode']} puts the bottom of the {rock} aquifer at {need} m")
    drilling, left = 0.0, need
    for r, t in strata:
        m = min(t, left)
        drilling += m * RATES_2026[r]
        left -= m
        if left <= 0:
            break
    if abs(quote["drilling"] - round(drilling, 2)) > 1.0:
        raise ValueError(f"drilling line {quote['drilling']:.2f} GBP differs from {drilling:.2f} GBP at the 2026 rates")
    model = [p for p in PUMPS if p[0] == quote["pump"]][0]
    if model[1] < enquiry["yield_lph"]:
        raise ValueError(f"pump {model[0]} gives {model[1]} l/h; the enquiry needs {enquiry['yield_lph']} l/h")
    if f"{quote['total']:.2f}" not in letter:
        raise ValueError(f"letter does not state the quoted total {quote['total']:.2f}")
    return {"ok": True}


def record(inp, path, server):
    server.use(brain)
    o = Otlp("borehole-quotes")
    cli = client(server)
    JOBS.clear()

    def llm(title, **parts):
        r = cli.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": block(title, **parts)}])
        return r.choices[0].message.content

    try:
        with o.span(NAME, "AGENT", {"ref": inp["ref"]}):
            enq = o.call("get_enquiry", "TOOL", get_enquiry, {"ref": inp["ref"], "enquiry": inp})
            with o.span("site_survey", "AGENT", {"postcode": enq["postcode"]}) as sp:
                site = json.loads(llm("PICK_SITE", enquiry_postcode=enq["postcode"], recent=enq["recent"]))["postcode"]
                log = o.call("bgs_logs", "RETRIEVER", bgs_logs, {"postcode": site})
                strata = o.call("parse_geology", "CHAIN", parse_geology, {"text": llm("GEOLOGY", log=log)})
                sp.set_attribute("output.value", json.dumps(strata))
            design = o.call("parse_design", "CHAIN", parse_design, {"text": llm("DESIGN", strata=strata)})
            casing = o.call("casing_length", "CHAIN", casing_length, {"design": design})
            rates = o.call("get_rates", "TOOL", get_rates, {"year": 2026})
            costs, left = [], design["depth_m"]
            for s in strata:
                m = min(s["thickness_m"], left)
                if m <= 0:
                    break
                costs.append(o.call("stratum_cost", "CHAIN", stratum_cost, {"rock": s["rock"], "metres": m, "rates": rates}))
                left -= m
            pump = o.call("pump_selection", "TOOL", pump_selection, {"yield_lph": enq["yield_lph"], "head_m": design["depth_m"]})
            o.call("remember_job", "CHAIN", remember_job, {"ref": enq["ref"], "design": design, "casing": casing, "pump": pump})
            quote = o.call("assemble_quote", "CHAIN", assemble_quote,
                           {"ref": enq["ref"], "design": design, "casing": casing, "strata_costs": costs, "pump": pump})
            letter = llm("LETTER", quote=quote)
            o.call("validate_quote", "CHAIN", validate_quote, {"enquiry": enq, "quote": quote, "letter": letter})
    finally:
        o.close(path)
