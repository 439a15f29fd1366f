"""Coastal erosion monitoring (otlp): quarterly cliff-retreat report filed to a council hazard register."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .common import Case, last_user, register_policy
from .kit import active
from .otlputil import Tracing

AGENT, ROUTE, DOMAIN, EXT = "coastal_erosion_monitor", "otlp", "coastal erosion monitoring", "json"
SHAPE = "parse -> transect retriever -> survey profile + parse per transect -> baseline -> retreat rates -> LLM risk classes -> storm analyst sub-agent (log, LLM summary, archive cross-check) -> register rows -> file"

SITES = {"HAPPISBURGH": ("HAP", 6, 1.1), "TRIMINGHAM": ("TRI", 5, 0.6), "HEMSBY": ("HEM", 5, 0.9), "OVERSTRAND": ("OVS", 4, 0.4),
         "MUNDESLEY": ("MUN", 5, 0.3), "WEYBOURNE": ("WEY", 4, 0.2), "SIDESTRAND": ("SID", 6, 0.5)}
STORMS = {"Q1 2026": ["Ingunn", "Jocelyn", "Kathleen"], "Q4 2025": ["Bert", "Conall"], "Q3 2025": [], "Q2 2025": ["Amy"]}
INPUTS = {
    "happisburgh": "Quarterly cliff retreat report: site HAPPISBURGH, quarter Q1 2026",
    "trimingham": "Quarterly cliff retreat report: site TRIMINGHAM, quarter Q1 2026",
    "r1": "Quarterly cliff retreat report: site OVERSTRAND, quarter Q4 2025",
    "r2": "Quarterly cliff retreat report: site MUNDESLEY, quarter Q3 2025",
    "r3": "Quarterly cliff retreat report: site WEYBOURNE, quarter Q2 2025",
    "r4": "Quarterly cliff retreat report: site SIDESTRAND, quarter Q1 2026",
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    Case("zu_coast_01", "coast.transect_set", "wrong_retrieval", "happisburgh", "fetch_transects", 1, "retrieval", "file_hazard_register", 1,
         "The transect retriever matches on the site's first letter and returns Hemsby's transects for Happisburgh."),
    Case("zu_coast_02", "coast.register_units", "unit_error", "trimingham", "format_register_rows", 1, "other", "file_hazard_register", 1,
         "The register rows convert metres per year to centimetres with a factor of ten."),
    Case("zu_coast_03", "coast.profile_format", "format_drift", "happisburgh", "get_survey_profile", 4, "tool", "file_hazard_register", 1,
         "The survey service returns one cliff-top position with a decimal comma, which the parser reads as a value a hundred times larger."),
    Case("zu_coast_04", "coast.baseline_epoch", "stale_data", "trimingham", "get_baseline", 1, "tool", "file_hazard_register", 1,
         "The baseline service returns the 2019 survey instead of the previous quarter's, so retreat rates are inflated."),
    Case("zu_coast_05", "coast.storm_timeout", "swallowed_error", "trimingham", "storm_log", 1, "tool", "cross_check_met_archive", 1,
         "The storm log call times out, the client returns an empty log without raising, and the archive cross-check finds the count missing."),
]


def _loss(site: str, i: int) -> float:
    return round(SITES[site][2] * (0.6 + 0.15 * i), 2)  # metres lost this quarter


def _position(site: str, i: int) -> float:
    return round(80.0 - 3 * i, 2)  # previous quarter's cliff top, metres from the 1990 baseline line


def _policy(body: dict) -> str:
    system = body["messages"][0]["content"]
    data = json.loads(last_user(body))
    if "Classify" in system:
        return json.dumps({t: ("red" if r > 3.0 else "amber" if r > 1.5 else "green") for t, r in sorted(data["rates_m_yr"].items())})
    names = data.get("storms", [])
    return json.dumps({"named_storms": len(names), "summary": f"{len(names)} named storms: {', '.join(names) or 'none'}"})


register_policy("coast", _policy)


def _run(t: Tracing, text: str) -> None:
    with t.span("erosion_monitor", "AGENT", text) as root:
        with t.span("parse_request", "CHAIN", text) as sp:
            m = re.search(r"site (\w+), quarter (Q\d \d{4})", text)
            req = t.out(sp, {"site": m.group(1), "quarter": m.group(2)})
        site, quarter = req["site"], req["quarter"]
        with t.span("fetch_transects", "RETRIEVER", {"query": f"transects {site}"}) as sp:
            src = site
            if active("coast.transect_set"):
                src = sorted(s for s in SITES if s[0] == site[0] and s != site)[0]
            prefix, n, _ = SITES[src]
            ids = [f"{prefix}-{i + 1:02d}" for i in range(n)]
            for k, tid in enumerate(ids):
                sp.set_attribute(f"retrieval.documents.{k}.document.id", tid)
                sp.set_attribute(f"retrieval.documents.{k}.document.content", f"transect {tid} ({src})")
            t.out(sp, ids)
        src_site = next(s for s, v in SITES.items() if v[0] == ids[0][:3])
        positions = {}
        for i, tid in enumerate(ids):
            with t.span("get_survey_profile", "TOOL", {"transect": tid, "quarter": quarter}, **{"tool.name": "get_survey_profile"}) as sp:
                now = round(_position(src_site, i) - _loss(src_site, i), 2)
                val: object = now
                if i == 3 and active("coast.profile_format"):
                    val = f"{now:.2f}".replace(".", ",")
                prof = t.out(sp, {"transect": tid, "cliff_top_m": val, "epoch": quarter, "method": "lidar"})
            with t.span("parse_profile", "CHAIN", prof) as sp:
                positions[tid] = t.out(sp, float(str(prof["cliff_top_m"]).replace(",", "")))
        with t.span("get_baseline", "TOOL", {"transects": ids, "epoch": "previous quarter"}, **{"tool.name": "get_baseline"}) as sp:
            older = 5.5 if active("coast.baseline_epoch") else 0.0
            base = t.out(sp, {tid: round(_position(src_site, i) + older, 2) for i, tid in enumerate(ids)})
        with t.span("compute_retreat", "CHAIN", {"now": positions, "baseline": base}) as sp:
            rates = t.out(sp, {tid: round((base[tid] - positions[tid]) / 0.25, 2) for tid in ids})
        classes = json.loads(t.llm("classify_risk", "[coast] Classify each transect's risk.", {"rates_m_yr": rates}))
        with t.span("storm_analyst", "AGENT", {"quarter": quarter}, **{"agent.name": "storm_analyst"}):
            with t.span("storm_log", "TOOL", {"quarter": quarter}, **{"tool.name": "storm_log"}) as sp:
                try:
                    if active("coast.storm_timeout"):
                        raise TimeoutError("storm log service timed out")
                    log = {"storms": STORMS[quarter]}
                except TimeoutError:
                    log = {"storms": []}
                t.out(sp, log)
            summary = json.loads(t.llm("summarize_storms", "[coast] Summarise the storm log.", log))
            with t.span("cross_check_met_archive", "TOOL", {"quarter": quarter, "named_storms": summary["named_storms"]},
                        **{"tool.name": "cross_check_met_archive"}) as sp:
                expected = len(STORMS[quarter])
                if summary["named_storms"] != expected:
                    raise ValueError(f"Met archive check: {summary['named_storms']} named storms reported for {quarter}, archive lists {expected}")
                t.out(sp, {"ok": True})
        with t.span("format_register_rows", "CHAIN", {"rates_m_yr": rates, "classes": classes}) as sp:
            factor = 10 if active("coast.register_units") else 100
            rows = t.out(sp, [{"transect": tid, "retreat_cm_yr": round(rates[tid] * factor, 1), "risk": classes[tid]} for tid in ids])
        with t.span("file_hazard_register", "TOOL", {"site": site, "quarter": quarter, "rows": rows},
                    **{"tool.name": "file_hazard_register"}) as sp:
            prefix = SITES[site][0]
            for i, row in enumerate(rows):
                if not row["transect"].startswith(prefix):
                    raise ValueError(f"HTTP 422 hazard register: transect {row['transect']} is not registered to site {site}")
                surveyed = round(_loss(site, i) / 0.25 * 100, 1)
                if abs(row["retreat_cm_yr"] - surveyed) > 0.02 * surveyed:
                    raise ValueError(f"HTTP 422 hazard register: {row['transect']} retreat {row['retreat_cm_yr']} cm/yr disagrees with "
                                     f"survey office value {surveyed} cm/yr")
            t.out(sp, {"status": "filed", "ref": f"HR-{site[:3]}-{quarter.replace(' ', '')}"})
        t.out(root, "filed")


def record(key: str, path: Path) -> None:
    t = Tracing(AGENT, f"{path.parent.name}/{path.name}/{key}")
    try:
        _run(t, INPUTS[key])
    except ValueError:
        pass
    t.write(path)
