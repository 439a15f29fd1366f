"""Radio spectrum licence allocation (OTLP/OpenInference spans): band plan, register, LLM channel proposal, coordination sub-agent, licence draft, fee, licence issue."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .common import OtelRecorder, client, request_text
from .kit import active

AGENT = "spectrum-licence-allocator"
ROUTE = "otlp"
DOMAIN = "radio spectrum licence allocation"
SHAPE = "OTLP: intake -> application tool -> band plan retriever -> assignment register tool -> LLM channel proposal -> parse -> coordination sub-agent (interference check loop) -> licence draft -> fee -> issue licence tool"

APPS = {
    "A": {"app": "APP-5510", "applicant": "Fenmoor Wireless", "band": "3.8-4.2 GHz", "bw": 40, "region": "North", "power": 38, "start": 2027, "term": 5},
    "B": {"app": "APP-5533", "applicant": "Kestrel Mesh", "band": "26 GHz", "bw": 200, "region": "East", "power": 30, "start": 2027, "term": 3},
    "R1": {"app": "APP-5402", "applicant": "Tarn Broadband", "band": "3.8-4.2 GHz", "bw": 20, "region": "West", "power": 34, "start": 2026, "term": 5},
    "R2": {"app": "APP-5419", "applicant": "Ouse Rail", "band": "26 GHz", "bw": 400, "region": "North", "power": 28, "start": 2027, "term": 3},
    "R3": {"app": "APP-5447", "applicant": "Pennine Ports", "band": "3.4-3.8 GHz", "bw": 40, "region": "East", "power": 40, "start": 2027, "term": 5},
    "R4": {"app": "APP-5468", "applicant": "Skerry Fibre", "band": "3.8-4.2 GHz", "bw": 60, "region": "East", "power": 36, "start": 2026, "term": 5},
}
INPUTS = APPS
REFS = ["R1", "R2", "R3", "R4"]
PLANS = {
    "3.4-3.8 GHz": {"band": "3.4-3.8 GHz", "lo": 3400, "hi": 3800, "step": 20, "max_eirp_dbm": 44, "fee_per_mhz_year": 60},
    "3.8-4.2 GHz": {"band": "3.8-4.2 GHz", "lo": 3800, "hi": 4200, "step": 20, "max_eirp_dbm": 42, "fee_per_mhz_year": 80},
    "26 GHz": {"band": "26 GHz", "lo": 24250, "hi": 27500, "step": 200, "max_eirp_dbm": 36, "fee_per_mhz_year": 5},
}
LIVE = {("North", "3.8-4.2 GHz"): [(3800, "2025-02-01"), (3820, "2025-02-01"), (3920, "2026-11-12"), (3940, "2026-11-12")],
        ("East", "26 GHz"): [(24250, "2025-06-01"), (24650, "2026-10-03")]}


def limit_dbm(region: str, ch: int) -> int:
    return 36 if (region == "North" and 3800 <= ch < 3900) else 45


def policy(request: Any) -> str:
    system, text = request_text(request)
    if "channel planner" in system:
        plan = json.loads(re.search(r"PLAN (\{.*?\})", text).group(1))
        taken = set(json.loads(re.search(r"TAKEN (\[.*?\])", text).group(1)))
        bw = int(re.search(r"BW (\d+)", text).group(1))
        n = max(1, bw // plan["step"])
        blocks, ch = [], plan["lo"]
        while ch + n * plan["step"] <= plan["hi"] and len(blocks) < 3:
            block = [ch + i * plan["step"] for i in range(n)]
            if not taken & set(block):
                blocks.append(block)
                ch += n * plan["step"]
            else:
                ch += plan["step"]
        eirp = plan["max_eirp_dbm"] + 3 if active("spectrum_04") else plan["max_eirp_dbm"]
        return json.dumps({"candidates": blocks, "max_eirp_dbm": eirp})
    return "{}"


def record(key: str, path: Path, base_url: str) -> None:
    a = APPS[key]
    rec = OtelRecorder("spectrum-licensing")
    llm = client(base_url)
    try:
        with rec.span(AGENT, "AGENT", {"application": a["app"]}, **{"agent.name": AGENT}) as root:
            with rec.span("intake_application", "CHAIN", {"app": a["app"]}) as sp:
                req = rec.out(sp, {"app": a["app"], "received": "2026-12-05"})
            with rec.span("fetch_application", "TOOL", {"app": req["app"]}, **{"tool.name": "fetch_application"}) as sp:
                app = rec.out(sp, dict(a))
            with rec.span("retrieve_band_plan", "RETRIEVER", app["band"]) as sp:
                ranked = sorted(PLANS, key=lambda b: (b != app["band"], b))
                if active("spectrum_02"):
                    ranked = sorted(PLANS, key=lambda b: (b[:2] != app["band"][:2], b))
                plan = rec.out(sp, {"documents": [PLANS[ranked[0]]]})["documents"][0]
            with rec.span("query_assignments", "TOOL", {"region": app["region"], "band": app["band"]}, **{"tool.name": "query_assignments"}) as sp:
                rows = LIVE.get((app["region"], app["band"]), [])
                as_of = "2026-12-05"
                if active("spectrum_05"):
                    as_of = "2026-09-30"
                taken = rec.out(sp, {"as_of": as_of, "assigned_mhz": [ch for ch, since in rows if since <= as_of]})
            text = rec.llm("propose_channels", llm, [
                {"role": "system", "content": "You are the channel planner. Propose free channel blocks as JSON."},
                {"role": "user", "content": f"APP {app['app']} BW {app['bw']} REGION {app['region']} PLAN {json.dumps(plan)} TAKEN {json.dumps(taken['assigned_mhz'])}"},
            ], AGENT)
            with rec.span("parse_proposal", "CHAIN", text) as sp:
                proposal = rec.out(sp, json.loads(text))
            chosen = None
            with rec.span("coordination_agent", "AGENT", {"candidates": proposal["candidates"]}, **{"agent.name": "coordination_agent"}) as sub:
                for block in proposal["candidates"]:
                    ok = True
                    for ch in block:
                        with rec.span("interference_check", "TOOL", {"channel_mhz": ch, "region": app["region"], "power_dbm": app["power"]},
                                      **{"tool.name": "interference_check"}) as sp:
                            power = 30 if active("spectrum_01") else app["power"]
                            res = rec.out(sp, {"channel_mhz": ch, "margin_db": limit_dbm(app["region"], ch) - power})
                        if res["margin_db"] < 0:
                            ok = False
                            break
                    if ok:
                        chosen = block
                        break
                rec.out(sub, {"block": chosen})
            with rec.span("draft_licence", "CHAIN", {"app": app["app"]}) as sp:
                lic = rec.out(sp, {"app": app["app"], "licensee": app["applicant"], "region": app["region"], "block_mhz": chosen,
                                   "eirp_dbm": proposal["max_eirp_dbm"],
                                   "term_years": app["term"]})
            with rec.span("compute_fee", "CHAIN", {"bw": app["bw"], "start": app["start"], "term": app["term"]}) as sp:
                end_year = app["start"] + app["term"] - 1
                years = end_year - app["start"] if active("spectrum_03") else end_year - app["start"] + 1
                fee = rec.out(sp, {"app": lic["app"], "years": years, "end_year": end_year, "fee_gbp": years * app["bw"] * plan["fee_per_mhz_year"]})
            with rec.span("issue_licence", "TOOL", {"licence": lic, "fee": fee}, **{"tool.name": "issue_licence"}) as sp:
                true_plan = PLANS[app["band"]]
                for ch in lic["block_mhz"]:
                    if not true_plan["lo"] <= ch < true_plan["hi"]:
                        raise RuntimeError(f"register 422: {ch} MHz is outside the applied band {app['band']} for {app['app']}")
                    holder = [since for c, since in LIVE.get((app["region"], app["band"]), []) if c == ch]
                    if holder:
                        raise RuntimeError(f"register 409: {ch} MHz in {app['region']} already assigned since {holder[0]}")
                    if app["power"] > limit_dbm(app["region"], ch):
                        raise RuntimeError(f"coordination 422: {app['power']} dBm on {ch} MHz in {app['region']} exceeds the {limit_dbm(app['region'], ch)} dBm border limit")
                if lic["eirp_dbm"] > true_plan["max_eirp_dbm"]:
                    raise RuntimeError(f"register 422: licence EIRP {lic['eirp_dbm']} dBm above the {app['band']} limit of {true_plan['max_eirp_dbm']} dBm")
                tariff = app["term"] * app["bw"] * true_plan["fee_per_mhz_year"]
                if fee["fee_gbp"] != tariff:
                    raise RuntimeError(f"payments 422: fee {fee['fee_gbp']} GBP does not match tariff {tariff} GBP for a {app['term']}-year term")
                rec.out(sp, {"licence": f"L-{app['app'][4:]}", "status": "issued"})
            rec.out(root, {"licence": f"L-{app['app'][4:]}"})
    except RuntimeError:
        pass
    rec.write(path)


CASES = [
    dict(case="spectrum_01", fault_kind="tool_ignores_argument", input="A", root=("interference_check", 1, "tool"), failure=("issue_licence", 1),
         description="The interference check ignores the power it is given and evaluates every channel at 30 dBm, so a block under a border limit passes coordination and the register refuses it."),
    dict(case="spectrum_02", fault_kind="wrong_retrieval", input="A", root=("retrieve_band_plan", 1, "retrieval"), failure=("issue_licence", 1),
         description="The band plan retriever matches on the band's leading digits and returns the 3.4-3.8 GHz plan, so the licence names channels outside the applied band."),
    dict(case="spectrum_03", fault_kind="off_by_one", input="B", root=("compute_fee", 1, "other"), failure=("issue_licence", 1),
         description="The fee step subtracts the start year from the inclusive end year, charging one year fewer than the licence term."),
    dict(case="spectrum_04", fault_kind="hallucinated_value", input="B", root=("propose_channels", 1, "llm"), failure=("issue_licence", 1),
         description="The channel planner states an EIRP limit that is not in the band plan it was given, and the licence carries it above the band's limit."),
    dict(case="spectrum_05", fault_kind="stale_data", input="A", root=("query_assignments", 1, "tool"), failure=("issue_licence", 1),
         description="The assignment register answers from its September snapshot, missing two November assignments, so the allocator picks a block already held."),
]
