"""SDK route: a home EV charger installer that surveys the supply, picks a charger and books the electrician."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trajdebug

from .common import Case, chat, register, reply_json
from .kit import active

NAME = "ev-charger-installer"
ROUTE = "sdk"
DOMAIN = "electric vehicle charger installs"
SHAPE = "supply survey, DNO capacity poll loop, spec retrieval, LLM charger choice, grant sub-agent, cable sizing, booking"
SYSTEM = "[evc] You are an EV charger install planner. Answer JSON."

INPUTS = {
    "ash": {"job": "EVC-3301", "postcode": "LS6 2AB", "fuse_a": 100, "cable_run_m": 14, "car": "Kia EV6", "tariff": "overnight"},
    "birch": {"job": "EVC-3302", "postcode": "YO1 7HH", "fuse_a": 60, "cable_run_m": 22, "car": "Nissan Leaf", "tariff": "flat"},
    "cedar": {"job": "EVC-3303", "postcode": "HG1 1DP", "fuse_a": 100, "cable_run_m": 9, "car": "Tesla Model 3", "tariff": "overnight"},
    "damson": {"job": "EVC-3304", "postcode": "WF1 2QS", "fuse_a": 60, "cable_run_m": 18, "car": "MG4", "tariff": "flat"},
    "elder": {"job": "EVC-3305", "postcode": "BD7 1AY", "fuse_a": 100, "cable_run_m": 27, "car": "VW ID.3", "tariff": "overnight"},
    "fir": {"job": "EVC-3306", "postcode": "HX1 5LT", "fuse_a": 80, "cable_run_m": 12, "car": "Hyundai Kona", "tariff": "overnight"},
}
REF_INPUTS = ["cedar", "damson", "elder", "fir"]
SPECS = [
    {"doc": "spec-zappi-7", "model": "Zappi 7kW", "kw": 7.4, "min_fuse_a": 80, "smart": True},
    {"doc": "spec-pod-3", "model": "Pod Point Solo 3", "kw": 7.0, "min_fuse_a": 60, "smart": True},
    {"doc": "spec-easee-22", "model": "Easee One 22kW", "kw": 22.0, "min_fuse_a": 100, "smart": True, "phase": 3},
    {"doc": "spec-ohme-home", "model": "Ohme Home Pro", "kw": 7.4, "min_fuse_a": 80, "smart": True},
]
_polls: dict[str, int] = {}


def _policy(msgs: list[dict[str, Any]]) -> str:
    p = json.loads(msgs[-1]["content"])
    if p["task"] == "assess_load":
        head = p["survey"]["fuse_a"] - p["survey"]["peak_load_a"]
        return reply_json({"headroom_a": head, "needs_load_balancing": head < 40})
    if p["task"] == "choose_charger":
        docs = [d for d in p["docs"] if d.get("min_fuse_a", 0) <= p["fuse_a"] and d.get("phase", 1) == 1]
        best = sorted(docs, key=lambda d: (-d["kw"], d["model"]))[0]
        return reply_json({"model": best["model"], "kw": best["kw"], "reason": f"fits {p['fuse_a']} A main fuse"})
    if p["task"] == "grant":
        ok = p["property"]["tenure"] in ("owner", "tenant") and p["property"]["off_street"]
        ok = ok and not any("no off-street parking" in n for n in p["notes"])
        return reply_json({"eligible": ok, "amount_gbp": 350 if ok else 0})
    raise ValueError(p["task"])


register("[evc]", _policy)


@trajdebug.step(kind="input")
def take_job(inp: dict) -> dict:
    return dict(inp)


@trajdebug.step(kind="tool")
def check_consent(job: str) -> dict:
    return {"job": job, "landlord_consent": "not required", "gdpr_contact_ok": True}


@trajdebug.step(kind="tool")
def fetch_customer_vehicle(car: str) -> dict:
    return {"car": car, "onboard_charger_kw": 11.0 if "Tesla" in car or "EV6" in car else 7.4, "connector": "Type 2"}


@trajdebug.step(kind="tool")
def fetch_site_survey(job: str, fuse_a: int) -> dict:
    peak = 38 if fuse_a >= 80 else 30
    return {"job": job, "fuse_a": fuse_a, "peak_load_a": peak, "earthing": "TN-C-S", "consumer_unit": "17th ed", "surveyed": "2027-01-04"}


@trajdebug.step(kind="llm")
def assess_load(survey: dict) -> dict:
    messages, text, usage = chat(SYSTEM, {"task": "assess_load", "survey": survey})
    return {"messages": messages, "answer": text}


@trajdebug.retry(attempts=3, on=(TimeoutError,))
@trajdebug.step(kind="tool")
def poll_dno_capacity(postcode: str, requested_kw: float) -> dict:
    _polls[postcode] = _polls.get(postcode, 0) + 1
    if _polls[postcode] == 1:
        raise TimeoutError("DNO connections API did not answer within 5 s")
    cap = 11.0 if postcode.startswith(("LS", "HG", "BD")) else 7.4
    snap = {"postcode": postcode, "max_kw": cap, "as_of": "2027-01-05", "requested_kw": requested_kw}
    if active("evc_stale") and postcode == "YO1 7HH":
        snap = {"postcode": postcode, "max_kw": 11.0, "as_of": "2024-03-18", "requested_kw": requested_kw}
    return snap


@trajdebug.step(kind="retrieval")
def search_specs(query: str, fuse_a: int) -> list[dict]:
    hits = [d for d in SPECS if d["min_fuse_a"] <= fuse_a]
    if active("evc_retrieval") and fuse_a == 60:
        # the brochure index answers instead of the datasheets: no fuse rating on its entries
        hits = [{"doc": d["doc"].replace("spec", "brochure"), "model": d["model"], "kw": d["kw"], "smart": d["smart"]} for d in SPECS if d["kw"] >= 7.0 and "phase" not in d]
    return hits


@trajdebug.step(kind="llm")
def choose_charger(docs: list[dict], fuse_a: int) -> dict:
    messages, text, usage = chat(SYSTEM, {"task": "choose_charger", "docs": docs, "fuse_a": fuse_a})
    return {"messages": messages, "answer": text}


@trajdebug.step(kind="parse")
def parse_choice(reply: dict) -> dict:
    return json.loads(reply["answer"])


@trajdebug.step(kind="tool")
def land_registry_lookup(postcode: str, job: str) -> dict:
    return {"postcode": postcode, "tenure": "owner", "off_street": True, "title": f"WYK{job[-4:]}"}


@trajdebug.step(kind="llm")
def grant_eligibility(prop: dict, notes: list[str]) -> dict:
    payload = {"task": "grant", "property": prop, "notes": notes}
    messages, text, usage = chat(SYSTEM, payload)
    return {"messages": messages, "answer": text}


@trajdebug.step(kind="other")
def size_cable(kw: float, run_m: int) -> dict:
    amps = kw * 1000 / 230
    mm2 = 6 if run_m <= 20 else 10
    drop_pct = round(amps * run_m * (7.3 if mm2 == 6 else 4.4) / 1000 / 230 * 100, 2)
    return {"amps": round(amps, 1), "cable_mm2": mm2, "volt_drop_pct": drop_pct}


@trajdebug.step(kind="tool")
def book_electrician(job: str, charger: dict, cable: dict, dno: dict, grant: dict, fuse_a: int) -> dict:
    if not grant["eligible"]:
        raise RuntimeError(f'HTTP 422 {{"error": "grant_claim_missing", "job": "{job}", "detail": "installer grant scheme requires an eligible claim"}}')
    if dno["as_of"] < "2026-07-01":
        raise RuntimeError(f'HTTP 409 {{"error": "capacity_check_expired", "job": "{job}", "as_of": "{dno["as_of"]}"}}')
    if charger["kw"] > dno["max_kw"]:
        raise RuntimeError(f'HTTP 422 {{"error": "exceeds_network_capacity", "charger_kw": {charger["kw"]}, "max_kw": {dno["max_kw"]}}}')
    spec = next(d for d in SPECS if d["model"] == charger["model"])
    if spec["min_fuse_a"] > fuse_a:
        raise RuntimeError(f"install rejected: {charger['model']} needs a {spec['min_fuse_a']} A main fuse, site has {fuse_a} A")
    if cable["volt_drop_pct"] > 5:
        raise RuntimeError(f"install rejected: voltage drop {cable['volt_drop_pct']}% over the 5% limit")
    return {"booking": f"BK-{job}", "slot": "2027-02-03 AM"}


def _portal_submit(job: str, kw: float, max_kw: float) -> dict:
    if active("evc_swallowed"):
        raise ConnectionError("DNO notification portal returned 503 Service Unavailable")
    return {"reference": f"DNO-{job}", "approved_kw": max_kw}


@trajdebug.step(kind="other")
def notify_dno(job: str, kw: float, dno: dict) -> dict:
    try:
        receipt = _portal_submit(job, kw, dno["max_kw"])
    except ConnectionError:
        receipt = {"reference": None, "approved_kw": 0.0}
    return {"notified": True, "approved_kw": receipt["approved_kw"], "reference": receipt["reference"]}


def record(inp: dict, path: Path) -> None:
    _polls.clear()
    try:
        with trajdebug.run(NAME, path=str(path), task=f"install a home charger for job {inp['job']}") as run:
            job = take_job(inp)
            check_consent(job["job"])
            fetch_customer_vehicle(job["car"])
            survey = fetch_site_survey(job["job"], job["fuse_a"])
            load = json.loads(assess_load(survey)["answer"])
            fuse = job["fuse_a"]
            if active("evc_tool_args"):
                fuse = job["fuse_a"] + survey["peak_load_a"]  # supply plus peak load passed as the fuse rating
            docs = search_specs(f"home charger {job['car']} single phase", fuse)
            choice = parse_choice(choose_charger(docs, fuse))
            dno = poll_dno_capacity(job["postcode"], choice["kw"])
            with trajdebug.step("grant_subagent", kind="agent", input={"job": job["job"]}) as sub:
                prop = land_registry_lookup(job["postcode"], job["job"])
                notes = [f"tariff {job['tariff']}", f"load balancing {load['needs_load_balancing']}"]
                if active("evc_pollution"):
                    notes.append("previous customer EVC-2987: rented flat, no off-street parking, tenure tenant")
                sub.output = json.loads(grant_eligibility(prop, notes)["answer"])
            grant = sub.output
            cable = size_cable(choice["kw"], job["cable_run_m"])
            ack = notify_dno(job["job"], choice["kw"], dno)
            dno = dict(dno, max_kw=ack["approved_kw"])
            book_electrician(job["job"], choice, cable, dno, grant, job["fuse_a"])
    except RuntimeError:
        pass


CASES = [
    Case("evc_01", "evc_tool_args", "wrong_tool_args", "birch", "search_specs", 1, "retrieval",
         "book_electrician", "The spec search is called with the main fuse plus the peak load as the fuse rating instead of the site's 60 A fuse."),
    Case("evc_02", "evc_swallowed", "swallowed_error", "ash", "notify_dno", 1, "other",
         "book_electrician", "A 503 from the DNO notification portal is caught and dropped, and the booking goes ahead with no notified capacity."),
    Case("evc_03", "evc_stale", "stale_data", "birch", "poll_dno_capacity", 0, "tool",
         "book_electrician", "The DNO capacity poll for YO1 answers a 2024 cached snapshot."),
    Case("evc_04", "evc_retrieval", "wrong_retrieval", "birch", "search_specs", 1, "retrieval",
         "book_electrician", "The spec search answers from the brochure index, whose entries carry no fuse rating, instead of the datasheets."),
    Case("evc_05", "evc_pollution", "context_pollution", "ash", "grant_eligibility", 1, "llm",
         "book_electrician", "Another customer's tenancy note is pasted into the grant model's context and it rules the job ineligible."),
]
