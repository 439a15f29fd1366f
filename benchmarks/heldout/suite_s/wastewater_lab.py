"""Wastewater effluent compliance returns (otlp route): manifest, permit retrieval, per-sample LIMS results
and normalisation, a register kept in memory, a model-written assessment, own checks, the regulator portal."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.heldout.suite_s import kit
from benchmarks.heldout.suite_s._otel import Traced
from openai import OpenAI


AGENT = "effluent-returns"
ROUTE = "otlp"
EXT = "json"
DOMAIN = "wastewater treatment effluent compliance returns"
SHAPE = "AGENT root; manifest tool (paged), permit RETRIEVER, per-sample LIMS tool + normalise CHAIN + register CHAIN (memory), flow tool, model assessment (instrumented openai), own check CHAIN, custody tool, portal upload tool"

PERMITS = {
    "Millbrook West": {"permit": "EPR-WB-2213", "limits": {"BOD": 25, "TSS": 35, "NH4": 5}, "dwf_m3": 9000, "min_final": 2},
    "Millbrook East": {"permit": "EPR-WB-2231", "limits": {"BOD": 20, "TSS": 30, "NH4": 3}, "dwf_m3": 6000, "min_final": 2},
    "Ashford Vale": {"permit": "EPR-AV-1042", "limits": {"BOD": 25, "TSS": 45, "NH4": 8}, "dwf_m3": 4200, "min_final": 2},
    "Coldwater Bridge": {"permit": "EPR-CB-3307", "limits": {"BOD": 15, "TSS": 25, "NH4": 2}, "dwf_m3": 12000, "min_final": 3},
}
FLOW = {"Millbrook West": 8420, "Millbrook East": 5310, "Ashford Vale": 3880, "Coldwater Bridge": 10950}


def _samples(site: str, week: int, n: int):
    points = ["inlet", "final", "inlet", "final", "storm", "final", "inlet"]
    code = "".join(w[0] for w in site.split())
    out = []
    for i in range(n):
        day = 9 + (i % 5)
        out.append({"id": f"S-{code}{week}{i + 1:02d}", "point": points[i], "taken": f"2026-03-{day:02d}T0{8 + i % 2}:40",
                    "BOD": 6 + (week + 3 * i) % 9, "TSS": 10 + (week * 2 + i) % 15, "NH4": round(0.4 + ((week + i) % 7) * 0.2, 1)})
    return out


def _week(site, week, n):
    return {"site": site, "week": week, "samples": _samples(site, week, n)}


CASES = [
    {"case": "effluent_permit_lookup", "fault": "ew1", "kind": "wrong_retrieval", "root": "permit_limits",
     "fail": "check_loads", "marker": "EPR-WB-2231", "input": _week("Millbrook West", 11, 5)},
    {"case": "effluent_manifest_page", "fault": "ew2", "kind": "truncated_result", "root": "sample_manifest",
     "fail": "portal_upload", "marker": "cur_p2", "input": _week("Ashford Vale", 11, 7)},
    {"case": "effluent_flow_figure", "fault": "ew3", "kind": "hallucinated_value", "root": "ChatCompletion",
     "fail": "check_loads", "marker": "12500", "input": _week("Coldwater Bridge", 12, 6)},
    {"case": "effluent_register_point", "fault": "ew4", "kind": "bad_memory_write", "root": "update_register",
     "fail": "portal_upload", "marker": "S-MW1204/inlet", "input": _week("Millbrook West", 12, 5)},
    {"case": "effluent_lims_timestamps", "fault": "ew5", "kind": "format_drift", "root": "lims_result",
     "fail": "portal_upload", "marker": "03/09/2026", "input": _week("Millbrook East", 11, 6)},
]
REFS = [_week("Millbrook West", 10, 5), _week("Ashford Vale", 10, 6), _week("Coldwater Bridge", 11, 7), _week("Millbrook East", 12, 5)]

T = Traced(AGENT)


class PortalError(RuntimeError):
    pass


def policy(request):
    msgs = request.body["messages"]
    data = json.loads(msgs[-1]["content"])
    exceed = [f"{r['id']}:{a}" for r in data["results"] if r["point"] == "final"
              for a, lim in data["limits"].items() if r[a] > lim]
    flow = 12500 if kit.active("ew3") else data["flow_m3_day"]
    return json.dumps({"site": data["site"], "flow_m3_day": flow, "exceedances": exceed,
                       "compliant": not exceed, "note": f"{len(data['results'])} samples assessed"})


def record(week: dict, path: Path, server) -> None:
    server.use(policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    site, wk, samples = week["site"], week["week"], week["samples"]
    lims = {s["id"]: s for s in samples}

    def sample_manifest(site: str, week: int) -> dict:
        page = samples[:4]
        if len(samples) > 4 and not kit.active("ew2"):
            page = samples  # the second page, fetched with the cursor
            return {"site": site, "week": week, "samples": [{"id": s["id"], "point": s["point"]} for s in page], "next": None}
        return {"site": site, "week": week, "samples": [{"id": s["id"], "point": s["point"]} for s in page],
                "next": "cur_p2" if len(samples) > 4 else None}

    def permit_limits(query: str) -> dict:
        name = site
        if kit.active("ew1"):
            name = "Millbrook East" if site == "Millbrook West" else site
        p = PERMITS[name]
        return {"documents": [{"id": p["permit"], "site": name, "score": 0.91,
                               "content": {"permit": p["permit"], "limits_mg_l": p["limits"], "dwf_m3": p["dwf_m3"],
                                           "min_final_per_week": p["min_final"]}}]}

    def lims_result(sample_id: str) -> dict:
        s = lims[sample_id]
        taken = s["taken"]
        if kit.active("ew5"):
            d, t = taken.split("T")
            y, m, dd = d.split("-")
            taken = f"{m}/{dd}/{y} {t}"
        return {"sample": sample_id, "taken": taken, "analytes": [
            {"name": "BOD", "value": s["BOD"], "unit": "mg/L"}, {"name": "TSS", "value": s["TSS"], "unit": "mg/L"},
            {"name": "NH4", "value": s["NH4"] * 1000, "unit": "ug/L"}]}

    def normalise(raw: dict, point: str) -> dict:
        out = {"id": raw["sample"], "point": point, "taken": raw["taken"]}
        for a in raw["analytes"]:
            out[a["name"]] = a["value"] / 1000 if a["unit"] == "ug/L" else a["value"]
        return out

    def daily_flow(site: str, week: int) -> dict:
        return {"site": site, "week": week, "mean_m3_day": FLOW[site]}

    def custody_form(site: str, week: int) -> dict:
        return {"form": f"COC-{site.split()[0][:3].upper()}-{week}", "samples_sent": len(samples)}

    def portal_upload(ret: dict) -> dict:
        permit = PERMITS[site]["permit"]
        if ret["permit"] != permit:
            raise PortalError(f"EA portal 422: permit {ret['permit']} is not held by {site} (holder of record: {permit})")
        if ret["samples_reported"] != ret["custody_samples"]:
            raise PortalError(f"EA portal 422: return lists {ret['samples_reported']} samples, custody form {ret['custody_form']} lists {ret['custody_samples']}")
        finals = [r for r in ret["register"] if r.endswith("/final")]
        if len(finals) < PERMITS[site]["min_final"]:
            raise PortalError(f"EA portal 422: {len(finals)} final effluent samples for week {ret['week']}, permit requires {PERMITS[site]['min_final']}")
        for r in ret["results"]:
            if len(r["taken"]) != 16 or r["taken"][4] != "-":
                raise PortalError(f"EA portal 400: results[{r['id']}].taken_at is not an ISO 8601 timestamp")
        return {"receipt": f"EA-{permit}-{ret['week']}", "status": "accepted"}

    try:
        with T.session(path), T.span(AGENT, "AGENT", {"site": site, "week": wk}) as top:
            manifest = T.tool("sample_manifest", sample_manifest, {"site": site, "week": wk})
            permit = T.tool("permit_limits", permit_limits, {"query": f"discharge permit limits {site}"}, kind="RETRIEVER")
            doc = permit["documents"][0]["content"]
            register: list[str] = []
            results = []
            for item in manifest["samples"]:
                with T.span("process_sample", "CHAIN", {"sample": item["id"]}) as proc:
                    raw = T.tool("lims_result", lims_result, {"sample_id": item["id"]})
                    with T.span("normalise_result", "CHAIN", {"raw": raw, "point": item["point"]}) as sp:
                        res = normalise(raw, item["point"])
                        sp.set(res)
                    with T.span("update_register", "CHAIN", {"sample": res["id"], "point": res["point"]}) as sp:
                        point = res["point"]
                        if kit.active("ew4") and results and res["id"].endswith("04"):
                            point = results[-1]["point"]
                        register.append(f"{res['id']}/{point}")
                        sp.set({"register": list(register)})
                    results.append(res)
                    proc.set(res)
            flow = T.tool("daily_flow", daily_flow, {"site": site, "week": wk})
            with T.span("assess", "CHAIN", {"site": site}) as sp:
                payload = {"site": site, "limits": doc["limits_mg_l"], "flow_m3_day": flow["mean_m3_day"],
                           "results": results}
                reply = client.chat.completions.create(model="compliance-model", messages=[
                    {"role": "system", "content": "You assess a week of effluent results against the permit. Answer JSON."},
                    {"role": "user", "content": json.dumps(payload)}])
                assessment = json.loads(reply.choices[0].message.content)
                sp.set(assessment)
            with T.span("check_loads", "CHAIN", {"flow_m3_day": assessment["flow_m3_day"], "dwf_m3": doc["dwf_m3"]}) as sp:
                if assessment["flow_m3_day"] > doc["dwf_m3"]:
                    raise PortalError(f"load check: reported flow {assessment['flow_m3_day']} m3/d is above the consented dry weather flow {doc['dwf_m3']} m3/d")
                sp.set({"ok": True})
            custody = T.tool("custody_form", custody_form, {"site": site, "week": wk})
            ret = {"permit": doc["permit"], "week": wk, "samples_reported": len(results), "custody_form": custody["form"],
                   "custody_samples": custody["samples_sent"], "register": register, "results": results,
                   "assessment": assessment}
            receipt = T.tool("portal_upload", portal_upload, {"ret": ret})
            top.set(receipt)
    except PortalError:
        pass
