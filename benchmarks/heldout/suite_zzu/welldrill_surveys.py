"""Well-drilling contractor: survey a site, pick a drill point, read nearby borehole logs, check the abstraction permit,
cost the borehole and report (otlp route: OpenTelemetry spans with OpenInference attributes)."""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kit
from harness import Brain, OtlpRun, chat_prompt, payload

NAME, ROUTE, DOMAIN = "welldrill-survey", "otlp", "a well-drilling contractor's surveys"
SHAPE = "OTel spans: site tool, per-point loop (geology, depth, setback tools), point choice, log retrieval, LLM interpretation + parse, permit sub-agent (rules tool, LLM, parse), cost tool, LLM report, validator"

DISTRICTS = {"Ashford": "chalk", "Ashford Carbonell": "sandstone", "Wye": "chalk", "Tenterden": "clay-sand", "Ludlow": "sandstone"}
LOGS = {"chalk": [(38, 1200), (42, 1400), (35, 1100)], "sandstone": [(64, 600), (71, 520), (58, 700)], "clay-sand": [(52, 900), (47, 950), (55, 880)]}
RATE_PER_M = 145.0
RULES_NOW = {"licence_over_m3_day": 10}
RULES_2019 = {"licence_over_m3_day": 20}
SITES = [("Ashford", "domestic", 3.0), ("Ashford", "irrigation", 14.0), ("Wye", "irrigation", 12.5), ("Ludlow", "domestic", 2.5), ("Tenterden", "irrigation", 16.0),
         ("Wye", "domestic", 4.0), ("Ludlow", "irrigation", 11.0), ("Tenterden", "domestic", 3.5), ("Ashford", "domestic", 2.0)]


def make_site(i: int) -> dict:
    district, use, demand = SITES[i]
    points = [{"point": f"P{k + 1}", "depth_adj_m": 4 - (i * 3 + k * 5) % 9, "septic_m": 40 - k * 14 + i % 3} for k in range(3)]
    return {"survey": f"WS-{510 + i}", "district": district, "use": use, "demand_m3_day": demand, "points": points}


def expected_depth(site, point) -> float:
    logs = LOGS[DISTRICTS[site["district"]]]
    return round(sum(d for d, _ in logs) / len(logs) + point["depth_adj_m"], 1)


brain = Brain()


@brain.on("interpret")
def _interpret(request, text):
    d = payload(text)
    depth = round(sum(l["depth_m"] for l in d["logs"]) / len(d["logs"]) + d["adj_m"], 1)
    yld = round(sum(l["yield_l_h"] for l in d["logs"]) / len(d["logs"]))
    return json.dumps({"aquifer": d["logs"][0]["aquifer"], "expected_depth_m": depth, "expected_yield": f"{yld:,} l/h", "casing_m": round(depth * 0.4, 1)})


@brain.on("permit")
def _permit(request, text):
    d = payload(text)
    need = d["demand_m3_day"] > d["rules"]["licence_over_m3_day"]
    return f"licence_required={'yes' if need else 'no'}; threshold={d['rules']['licence_over_m3_day']} m3/day"


@brain.on("report")
def _report(request, text):
    d = payload(text)
    return f"Survey {d['survey']}: drill at {d['point']} to about {d['depth_m']} m in {d['aquifer']}; estimate {d['cost']:.2f} GBP; licence {'required' if d['licence'] else 'not required'}."


def record(server, i: int) -> dict:
    site = make_site(i)
    server.use(brain)
    t = OtlpRun(NAME, server.base_url)
    sysmsg = "You are the hydrogeologist's assistant at a well-drilling contractor."
    try:
        with t.span(NAME, "AGENT", {"survey": site["survey"]}):
            info = t.call("get_site", "TOOL", {"survey": site["survey"]}, lambda: {k: site[k] for k in ("survey", "district", "use", "demand_m3_day")})
            checked = []
            for k, p in enumerate(site["points"]):
                geo = t.call("point_geology", "TOOL", {"point": p["point"], "district": info["district"]}, lambda: {"point": p["point"], "aquifer": DISTRICTS[info["district"]]})
                depth = t.call("estimate_depth", "TOOL", {"point": p["point"], "aquifer": geo["aquifer"]}, lambda: {"point": p["point"], "depth_m": expected_depth(site, p)})

                def setback(p=p):
                    if kit.on("zzu_welldrill_04") and p["septic_m"] < 15:
                        try:
                            raise TimeoutError("GIS layer for septic tanks timed out")
                        except TimeoutError:
                            return {"point": p["point"], "clear": True, "septic_m": None}
                    return {"point": p["point"], "clear": p["septic_m"] >= 15, "septic_m": p["septic_m"]}
                sb = t.call("setback_check", "TOOL", {"point": p["point"]}, setback)
                checked.append({**depth, "clear": sb["clear"]})
            choice = t.call("choose_point", "CHAIN", {"points": checked}, lambda: min((c for c in checked if c["clear"]), key=lambda c: c["depth_m"]))
            point = next(p for p in site["points"] if p["point"] == choice["point"])

            def search():
                district = info["district"]
                if kit.on("zzu_welldrill_01"):
                    district = next(d for d in DISTRICTS if d.startswith(district) and d != district) if any(d.startswith(district) and d != district for d in DISTRICTS) else "Ludlow"
                aq = DISTRICTS[district]
                return [{"log": f"BH-{aq[:2].upper()}{n}", "aquifer": aq, "depth_m": dd, "yield_l_h": y} for n, (dd, y) in enumerate(LOGS[aq])]
            logs = t.call("search_borehole_logs", "RETRIEVER", {"district": info["district"], "point": choice["point"]}, search)
            raw = t.ask(sysmsg, chat_prompt("interpret", "Interpret the nearby logs for the chosen point as JSON.", {"logs": logs, "adj_m": point["depth_adj_m"]}))

            def parse():
                d = json.loads(raw)
                y = d["expected_yield"].split()[0]
                y = int(y.split(",")[0]) if kit.on("zzu_welldrill_02") else int(y.replace(",", ""))
                return {"aquifer": d["aquifer"], "depth_m": d["expected_depth_m"], "yield_l_h": y, "casing_m": d["casing_m"]}
            interp = t.call("parse_interpretation", "CHAIN", {"text": raw}, parse)
            with t.span("permit_check", "AGENT", {"demand_m3_day": info["demand_m3_day"]}):
                rules = t.call("abstraction_rules", "TOOL", {"use": info["use"]}, lambda: dict(RULES_2019 if kit.on("zzu_welldrill_05") else RULES_NOW))
                ans = t.ask(sysmsg, chat_prompt("permit", "Is an abstraction licence required?", {"demand_m3_day": info["demand_m3_day"], "rules": rules}))
                permit = t.call("parse_permit", "CHAIN", {"text": ans}, lambda: {"licence": ans.startswith("licence_required=yes")})
            cost = t.call("cost_estimate", "TOOL", {"depth_m": interp["depth_m"], "rate_per_m": RATE_PER_M},
                          lambda: {"depth_m": interp["depth_m"], "cost": round(interp["depth_m"] * (RATE_PER_M / 3.281 if kit.on("zzu_welldrill_03") else RATE_PER_M) + 850, 2)})
            report = t.ask(sysmsg, chat_prompt("report", "Write the survey summary.", {"survey": site["survey"], "point": choice["point"], "depth_m": interp["depth_m"],
                                                                                     "aquifer": interp["aquifer"], "cost": cost["cost"], "licence": permit["licence"]}))

            def validate():
                p = point
                if p["septic_m"] < 15:
                    raise ValueError(f"{site['survey']}: {p['point']} is {p['septic_m']} m from a septic tank (minimum 15 m)")
                aq = DISTRICTS[site["district"]]
                if interp["aquifer"] != aq or abs(interp["depth_m"] - expected_depth(site, p)) > 0.05:
                    raise ValueError(f"{site['survey']}: report gives {interp['depth_m']} m in {interp['aquifer']}, the {site['district']} survey gives {expected_depth(site, p)} m in {aq}")
                need_l_h = site["demand_m3_day"] * 1000 / 24
                if interp["yield_l_h"] < need_l_h:
                    raise ValueError(f"{site['survey']}: expected yield {interp['yield_l_h']} l/h below the {need_l_h:.0f} l/h the demand needs over 24 h")
                if permit["licence"] != (site["demand_m3_day"] > RULES_NOW["licence_over_m3_day"]):
                    raise ValueError(f"{site['survey']}: {site['demand_m3_day']} m3/day abstraction, licence marked {'required' if permit['licence'] else 'not required'}")
                want = round(interp["depth_m"] * RATE_PER_M + 850, 2)
                if abs(cost["cost"] - want) > 0.01:
                    raise ValueError(f"{site['survey']}: estimate {cost['cost']:.2f} GBP, {interp['depth_m']} m at {RATE_PER_M:.2f} GBP/m + 850 gives {want:.2f}")
                return "ok"
            t.call("validate_survey", "CHAIN", {"survey": site["survey"], "report": report}, validate)
    except ValueError:
        pass
    return t.doc()


CASES = [
    dict(id="zzu_welldrill_01", kind="wrong_retrieval", root=("search_borehole_logs", 1), failure=("validate_survey", 1), input=1,
         description="The log search matches 'Ashford' to Ashford Carbonell and returns sandstone logs for a chalk site, skewing the depth."),
    dict(id="zzu_welldrill_02", kind="lossy_parsing", root=("parse_interpretation", 1), failure=("validate_survey", 1), input=2,
         description="The interpretation parser reads the yield '1,233 l/h' only up to the thousands comma, so the yield becomes 1 l/h."),
    dict(id="zzu_welldrill_03", kind="unit_error", root=("cost_estimate", 1), failure=("validate_survey", 1), input=3,
         description="The cost tool converts the per-metre drilling rate as if the depth were in feet, underpricing the borehole."),
    dict(id="zzu_welldrill_04", kind="swallowed_error", root=("setback_check", 3), failure=("validate_survey", 1), input=2,
         description="The setback tool catches the GIS timeout and reports the third point clear, so a point 14 m from a septic tank is chosen."),
    dict(id="zzu_welldrill_05", kind="stale_data", root=("abstraction_rules", 1), failure=("validate_survey", 1), input=4,
         description="The permit sub-agent's rules tool returns the 2019 threshold of 20 m3/day, so a 16 m3/day irrigation borehole is marked licence-free."),
]
REFS = [5, 6, 7, 8]
