"""Invasive knotweed removal (OpenTelemetry + OpenInference, OTLP/JSON): survey stands, retrieve guidance,
plan treatment with a model, get contractor quotes in a sub-agent, schedule seasons, notify neighbours and
submit the management plan."""

from __future__ import annotations

import json
from pathlib import Path

from openai import OpenAI

from .common import Case, OISpans, user_json
from .kit import active

AGENT = "knotweed"
ROUTE = "otlp"
DOMAIN = "invasive knotweed removal"
SYSTEM = "[knotweed] You plan Japanese knotweed management for a remediation firm. Reply with JSON only."

SITES = {
    "brook": {"site": "K-221", "address": "22 Brook Lane", "type": "residential", "stands": [
        {"stand": "ST-1", "area_m2": 14, "water_m": 40}, {"stand": "ST-2", "area_m2": 6, "water_m": 4},
        {"stand": "ST-3", "area_m2": 9, "water_m": 25}]},
    "railway": {"site": "K-310", "address": "Lineside MP 12.4 Down", "type": "lineside", "stands": [
        {"stand": "ST-1", "area_m2": 30, "water_m": 200}, {"stand": "ST-2", "area_m2": 18, "water_m": 150},
        {"stand": "ST-3", "area_m2": 22, "water_m": 180}, {"stand": "ST-4", "area_m2": 11, "water_m": 210}]},
    "garden": {"site": "K-232", "address": "5 Orchard Row", "type": "residential", "stands": [
        {"stand": "ST-1", "area_m2": 8, "water_m": 90}]},
    "canal": {"site": "K-240", "address": "Towpath Cottage", "type": "residential", "stands": [
        {"stand": "ST-1", "area_m2": 12, "water_m": 3}, {"stand": "ST-2", "area_m2": 5, "water_m": 60}]},
    "sidings": {"site": "K-318", "address": "Lineside MP 3.1 Up", "type": "lineside", "stands": [
        {"stand": "ST-1", "area_m2": 40, "water_m": 300}, {"stand": "ST-2", "area_m2": 12, "water_m": 8}]},
    "school": {"site": "K-251", "address": "Hillside Primary", "type": "residential", "stands": [
        {"stand": "ST-1", "area_m2": 20, "water_m": 70}, {"stand": "ST-2", "area_m2": 7, "water_m": 65}]},
}
INPUTS = SITES
REFS = ["garden", "canal", "sidings", "school"]
GUIDANCE = [
    {"doc": "PCA-AQ-04", "topic": "watercourse", "product": "Glyphomax Aqua", "text": "Within 10 m of water use an "
     "aquatic-approved glyphosate by stem dosing."},
    {"doc": "PCA-GEN-01", "topic": "general", "product": "Glyphomax Pro", "text": "Foliar spray in late summer, "
     "three growing seasons minimum."},
    {"doc": "PCA-GDN-02", "topic": "garden", "product": "Glyfos Garden", "text": "Small garden stands: foliar spray."},
]
AQUATIC = {"Glyphomax Aqua"}
CONTRACTORS = [{"contractor": "Rootline Ltd", "licence": "PA6-20114"}, {"contractor": "Greenbank Invasives",
                                                                         "licence": "PA6-31877"}]
PRIOR_NOTES = [{"site": "K-219", "address": "9 Mill Race Close", "note": "neighbours at 7 and 11 notified"}]

CASES = [
    Case("kn_ret", AGENT, "wrong_retrieval", "retrieve_guidance", 1, "submit_management_plan",
         "the guidance search left out the watercourse term and returned garden guidance for a stand 4 m from water",
         "brook"),
    Case("kn_ctx", AGENT, "context_pollution", "build_notice_context", 1, "submit_management_plan",
         "the notice context carried the previous site's notes and the drafted notice named that address", "brook"),
    Case("kn_hal", AGENT, "hallucinated_value", "compose_submission", 1, "submit_management_plan",
         "the form-filling model wrote a spraying licence number that no quote carried", "brook"),
    Case("kn_obo", AGENT, "off_by_one", "schedule_visits", 1, "submit_management_plan",
         "schedule_visits stopped one season early, planning two growing seasons instead of three", "railway"),
    Case("kn_trunc", AGENT, "truncated_result", "get_site_survey", 1, "submit_management_plan",
         "the survey API cut its stand list at two rows, so the plan left stands out", "railway"),
]


class PlanRejected(Exception):
    pass


def policy(body: dict) -> str:
    ask = user_json(body)
    if ask.get("ask") == "treat":
        docs = ask["guidance"]
        plan = []
        for s in ask["stands"]:
            near = s["water_m"] <= 10
            doc = next((d for d in docs if d["topic"] == "watercourse"), None) if near else None
            doc = doc or docs[-1] if near else next((d for d in docs if d["topic"] != "watercourse"), docs[0])
            plan.append({"stand": s["stand"], "method": "stem dosing" if near else "foliar spray",
                         "product": doc["product"]})
        return json.dumps({"treatments": plan})
    if ask.get("ask") == "pick":
        q = min(ask["quotes"], key=lambda q: q["price_eur"])
        return json.dumps({"contractor": q["contractor"], "licence": q["licence"], "price_eur": q["price_eur"]})
    if ask.get("ask") == "notice":
        addr = [n["address"] for n in ask["context"] if "address" in n][-1]
        return json.dumps({"notice": f"Knotweed treatment at {addr} starts in May; please keep pets away from "
                                     "marked stands."})
    if ask.get("ask") == "form":
        licence = ask["contractor"]["licence"]
        if active("kn_hal"):
            licence = "PA6-99812"
        return json.dumps({"site": ask["site"], "contractor": ask["contractor"]["contractor"], "licence": licence,
                           "notice": ask["notice"]})
    return "{}"


def record(key: str, out: Path, base_url: str) -> None:
    client = OpenAI(base_url=base_url, api_key="local", max_retries=0)
    site = INPUTS[key]
    oi = OISpans("knotweed-planner")
    try:
        with oi.span("knotweed-planner", "AGENT", f"management plan for {site['site']}",
                     **{"agent.name": "knotweed-planner", "session.id": f"kw-{site['site']}"}) as top:
            with oi.span("get_site_survey", "TOOL", {"site": site["site"]}, **{"tool.name": "get_site_survey"}) as s:
                stands = site["stands"][:2] if active("kn_trunc") else site["stands"]
                s.output = survey = {"site": site["site"], "address": site["address"], "type": site["type"],
                                     "stands": [dict(x) for x in stands]}
            for st in survey["stands"]:
                with oi.span("measure_stand", "TOOL", {"site": site["site"], "stand": st["stand"]},
                             **{"tool.name": "measure_stand"}) as m:
                    m.output = {"stand": st["stand"], "height_m": round(1.2 + st["area_m2"] / 25, 1),
                                "crowns": st["area_m2"] // 3}
            with oi.span("check_protected_species", "TOOL", {"site": site["site"]},
                         **{"tool.name": "check_protected_species"}) as m:
                m.output = {"site": site["site"], "nesting_birds": site["type"] == "lineside", "bats": False}
            with oi.span("normalise_stands", "CHAIN", survey) as s:
                s.output = stands = sorted(survey["stands"], key=lambda x: x["water_m"])
            terms = ["knotweed"] + (["watercourse"] if any(x["water_m"] <= 10 for x in stands) else [])
            terms += ["garden"] if site["type"] == "residential" else ["general"]
            with oi.span("retrieve_guidance", "RETRIEVER", " ".join(terms)) as s:
                wanted = [t for t in terms if not (active("kn_ret") and t == "watercourse")]
                docs = [d for d in GUIDANCE if d["topic"] in wanted]
                if "watercourse" not in wanted and "garden" in wanted:
                    docs = [d for d in GUIDANCE if d["topic"] == "garden"]
                for i, d in enumerate(docs):
                    s.raw.set_attribute(f"retrieval.documents.{i}.document.id", d["doc"])
                    s.raw.set_attribute(f"retrieval.documents.{i}.document.content", d["text"])
                s.output = docs
            text = oi.llm(client, "plan_treatment", SYSTEM, json.dumps({"ask": "treat", "stands": stands,
                                                                         "guidance": docs}))
            with oi.span("parse_treatment", "CHAIN", text) as s:
                s.output = treatments = json.loads(text)["treatments"]
            with oi.span("contractor_quotes", "AGENT", {"site": site["site"], "stands": len(treatments)},
                         **{"agent.name": "contractor-quotes"}) as sub:
                quotes = []
                for c in CONTRACTORS:
                    with oi.span("get_quote", "TOOL", {"contractor": c["contractor"], "treatments": treatments},
                                 **{"tool.name": "get_quote"}) as q:
                        area = sum(x["area_m2"] for x in stands)
                        q.output = {**c, "price_eur": area * (55 if c["licence"].endswith("4") else 61) + 300}
                        quotes.append(q.output)
                pick = json.loads(oi.llm(client, "pick_contractor", SYSTEM, json.dumps({"ask": "pick",
                                                                                        "quotes": quotes})))
                sub.output = pick
            with oi.span("schedule_visits", "CHAIN", {"treatments": treatments, "start_year": 2027}) as s:
                last = 2027 + 2 if active("kn_obo") else 2027 + 3
                s.output = visits = [{"season": y, "stands": [t["stand"] for t in treatments]}
                                     for y in range(2027, last)]
            notice = None
            if site["type"] == "residential":
                with oi.span("build_notice_context", "CHAIN", {"site": site["site"]}) as s:
                    ctx = [{"site": site["site"], "address": site["address"], "note": "new instruction"}]
                    if active("kn_ctx"):
                        ctx = ctx + PRIOR_NOTES
                    s.output = ctx
                notice = json.loads(oi.llm(client, "draft_notice", SYSTEM, json.dumps(
                    {"ask": "notice", "context": ctx})))["notice"]
                form = json.loads(oi.llm(client, "compose_submission", SYSTEM, json.dumps(
                    {"ask": "form", "site": site["site"], "contractor": pick, "notice": notice})))
            else:
                form = {"site": site["site"], "contractor": pick["contractor"], "licence": pick["licence"],
                        "notice": None}
            payload = {"form": form, "treatments": treatments, "visits": visits}
            with oi.span("submit_management_plan", "TOOL", payload, **{"tool.name": "submit_management_plan"}) as s:
                s.output = _submit(site, payload)
            top.output = s.output
    except PlanRejected:
        pass
    oi.write(out)


def _submit(site: dict, payload: dict) -> dict:
    covered = {t["stand"] for t in payload["treatments"]}
    missing = [x["stand"] for x in site["stands"] if x["stand"] not in covered]
    if missing:
        raise PlanRejected(f"HTTP 422 plan registry: plan treats {len(covered)} of {len(site['stands'])} stands "
                           f"recorded at {site['site']}; missing {', '.join(missing)}")
    for t in payload["treatments"]:
        stand = next(x for x in site["stands"] if x["stand"] == t["stand"])
        if stand["water_m"] <= 10 and t["product"] not in AQUATIC:
            raise PlanRejected(f"HTTP 422 plan registry: {t['product']} is not approved within 10 m of water "
                               f"({t['stand']} is {stand['water_m']} m from the watercourse)")
    if len(payload["visits"]) < 3:
        raise PlanRejected(f"HTTP 422 plan registry: plan covers {len(payload['visits'])} growing seasons; "
                           "the PCA code requires at least 3")
    if payload["form"]["licence"] not in {c["licence"] for c in CONTRACTORS}:
        raise PlanRejected(f"HTTP 422 plan registry: licence {payload['form']['licence']} is not on the "
                           "NPTC register")
    if site["type"] == "residential" and site["address"] not in (payload["form"]["notice"] or ""):
        raise PlanRejected(f"HTTP 422 plan registry: neighbour notice does not name {site['address']}")
    return {"plan": f"KMP-{site['site'][2:]}-2027", "status": "registered"}
