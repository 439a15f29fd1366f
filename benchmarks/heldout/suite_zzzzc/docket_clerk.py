"""docket-clerk: a law firm's e-filing clerk (sdk route).

Reads a filing request, extracts its fields with the model, reads the court docket, reviews each entry,
finds the local rule, computes the response deadline, looks up the fee, drafts the cover sheet,
validates the packet and submits it to the court's e-filing service.
"""
from __future__ import annotations

import datetime as dt
import json
import re

from openai import OpenAI

import trajdebug
from common import llm_step, last_user, system_text

NAME = "docket-clerk"
ROUTE = "sdk"
DOMAIN = "law-firm e-filing clerk (court dockets, deadlines, fees)"
SHAPE = "extract (llm) -> parse -> docket tool -> state write -> loop over docket entries -> rule retrieval -> deadline -> fee tool -> cover (llm) -> validation -> e-filing tool"
SWITCH = None

INPUTS = [
    {"task": "motion to compel, 24-CV-0312, Harlow & Stein",
     "text": "File a motion to compel in case 24-CV-0312 for Harlow & Stein LLP. Opposing counsel served their discovery responses by mail on 2026-11-03."},
    {"task": "opposition to summary judgment, 25-CV-1177, Brandt Legal",
     "text": "File an opposition to motion for summary judgment in case 25-CV-1177 for Brandt Legal. The motion was served electronically on 2026-11-09."},
    {"task": "reply brief, 23-CV-0885, Okoye Partners",
     "text": "File a reply brief in case 23-CV-0885 for Okoye Partners. The opposition was served electronically on 2026-11-12."},
    {"task": "motion to dismiss, 26-CV-0040, Vance & Ruiz",
     "text": "File a motion to dismiss in case 26-CV-0040 for Vance & Ruiz. The complaint was served personally on 2026-11-02."},
    {"task": "notice of appeal, 22-CV-2210, Harlow & Stein",
     "text": "File a notice of appeal in case 22-CV-2210 for Harlow & Stein LLP. The judgment was served by mail on 2026-10-30."},
]

DOCKETS = {
    "24-CV-0312": {"judges": ["Amara Okafor"], "service": {"date": "2026-11-03", "method": "mail"},
                   "open_slots": [], "entries": ["complaint", "answer", "scheduling order", "discovery requests",
                                                 "discovery responses", "notice of deposition", "stipulation"]},
    "25-CV-1177": {"judges": ["Paul Lindqvist"], "service": {"date": "2026-11-09", "method": "electronic"},
                   "open_slots": [], "entries": ["complaint", "answer", "scheduling order", "motion for summary judgment",
                                                 "declaration", "proposed order"]},
    "23-CV-0885": {"judges": ["Paul Lindqvist", "Helen Marsh"], "service": {"date": "2026-11-12", "method": "electronic"},
                   "open_slots": [], "entries": ["complaint", "answer", "order of reassignment", "motion to amend",
                                                 "opposition", "declaration", "exhibit list", "notice of hearing"]},
    "26-CV-0040": {"judges": ["Rosa Vance"], "service": {"date": "2026-11-02", "method": "personal"},
                   "open_slots": ["2026-12-17", "2027-01-07"], "entries": ["complaint", "summons", "proof of service",
                                                                          "civil cover sheet", "notice of appearance"]},
    "22-CV-2210": {"judges": ["Amara Okafor"], "service": {"date": "2026-10-30", "method": "mail"},
                   "open_slots": [], "entries": ["complaint", "answer", "pretrial order", "verdict form", "judgment",
                                                 "bill of costs", "notice of entry of judgment", "taxation of costs",
                                                 "satisfaction of costs"]},
}

RULES = [
    {"rule": "L.R. 7-3", "doc_type": "motion to dismiss", "response_days": 21, "fee_code": "MTD"},
    {"rule": "L.R. 37-2", "doc_type": "motion to compel", "response_days": 14, "fee_code": "MTC"},
    {"rule": "L.R. 56-2", "doc_type": "opposition to motion for summary judgment", "response_days": 21, "fee_code": "NOF"},
    {"rule": "L.R. 7-10", "doc_type": "reply brief", "response_days": 7, "fee_code": "NOF"},
    {"rule": "FRAP 4", "doc_type": "notice of appeal", "response_days": 30, "fee_code": "NOA"},
]
FEES = {"MTD": 0.0, "MTC": 0.0, "NOF": 0.0, "NOA": 605.0}
COURT_FEE_CODES = {r["doc_type"]: r["fee_code"] for r in RULES}
METHODS = {"mail": "mail", "electronic": "electronic", "personal": "personal", "hand": "personal"}


def _due(served_on, days, method):
    d = dt.date.fromisoformat(served_on) + dt.timedelta(days=days + (3 if method == "mail" else 0))
    while d.weekday() >= 5:
        d += dt.timedelta(days=1)
    return d.isoformat()


# ------------------------------------------------------------------ the model's side
def brain(request):
    system, user = system_text(request), last_user(request)
    if system.startswith("Extract"):
        m = re.search(r"File an? (.+?) in case (\S+) for (.+?)\. .*?served\b.*?(by mail|electronically|personally) on (\d{4}-\d\d-\d\d)", user)
        method = {"by mail": "mail", "electronically": "electronic", "personally": "personal"}[m.group(4)]
        rec = {"case_no": m.group(2), "doc_type": m.group(1), "firm": m.group(3), "served_on": m.group(5),
               "service_method": method}
        if SWITCH == "A5":
            rec["hearing_date"] = "2026-12-10"
        return json.dumps(rec)
    if system.startswith("Draft"):
        p = json.loads(user)
        lines = [f"CASE {p['case_no']} - {p['doc_type'].upper()}", f"Assigned judge: {p['judge']}",
                 f"Filed by {p['firm']}", f"Service: {p['service_method']} on {p['served_on']}",
                 f"Response due: {p['due']}", f"Fee code {p['fee_code']}: ${p['fee']:.2f}"]
        return "\n".join(lines)
    return "I can only help with filings."


# ------------------------------------------------------------------ steps
@trajdebug.step(kind="input")
def receive_request(text: str, received_at: str) -> dict:
    return {"text": text, "received_at": received_at}


@trajdebug.step(kind="parse")
def parse_filing(content: str) -> dict:
    raw = json.loads(content)
    keep = ["case_no", "doc_type", "firm", "served_on", "service_method", "hearing_date"]
    if SWITCH == "A1":
        keep = ["case_no", "doc_type", "firm", "served_on", "hearing_date"]  # the intake schema of the old form
    rec = {k: raw[k] for k in keep if k in raw}
    rec["doc_type"] = rec["doc_type"].strip().lower()
    rec["service_method"] = METHODS.get(str(rec.get("service_method", "")).lower(), "electronic")
    return rec


@trajdebug.step(kind="tool")
def lookup_docket(case_no: str) -> dict:
    d = DOCKETS[case_no]
    return {"case_no": case_no, "judges": list(d["judges"]), "entries": list(d["entries"]),
            "service": dict(d["service"]), "open_slots": list(d["open_slots"])}


@trajdebug.step(kind="state")
def remember_case(docket: dict, filing: dict) -> dict:
    judge = docket["judges"][0] if SWITCH == "A4" else docket["judges"][-1]
    case = {"case_no": docket["case_no"], "judge": judge, "firm": filing["firm"]}
    trajdebug.current_run().state["case"] = case
    return case


@trajdebug.step(kind="parse")
def review_entry(number: int, text: str) -> dict:
    kind = "order" if "order" in text else "motion" if "motion" in text else "paper"
    return {"entry": number, "type": kind, "text": text, "sets_deadline": kind == "order"}


@trajdebug.step(kind="retrieval")
def find_rule(doc_type: str) -> dict:
    hits = [r for r in RULES if r["doc_type"] == doc_type]
    if SWITCH == "A2":
        prefix = " ".join(doc_type.split()[:2])
        hits = [r for r in RULES if r["doc_type"].startswith(prefix)]
    return dict(hits[0])


@trajdebug.step(kind="other")
def compute_deadline(served_on: str, response_days: int, service_method: str) -> dict:
    days = response_days
    if SWITCH == "A3":
        days = response_days - 1  # counting the day of service as day one
    return {"due": _due(served_on, days, service_method), "days": response_days, "service_method": service_method}


@trajdebug.step(kind="tool")
def fee_lookup(fee_code: str) -> dict:
    return {"fee_code": fee_code, "amount": FEES[fee_code]}


@trajdebug.step(kind="condition")
def validate_packet(filing: dict, docket: dict, cover: str, deadline: dict) -> dict:
    if filing.get("hearing_date") and filing["hearing_date"] not in docket["open_slots"]:
        raise ValueError(f"hearing date {filing['hearing_date']} is not an open slot on the calendar of Judge "
                         f"{docket['judges'][-1]}; open slots: {', '.join(docket['open_slots']) or 'none'}")
    if deadline["due"] < filing["served_on"]:
        raise ValueError("response deadline falls before service")
    return {"checked": ["hearing", "deadline", "cover"], "ok": True}


@trajdebug.step(kind="tool")
def submit_efile(packet: dict) -> dict:
    d = DOCKETS[packet["case_no"]]
    if d["judges"][-1] not in packet["cover"]:
        raise RuntimeError(f"e-filing rejected: case {packet['case_no']} is assigned to Judge {d['judges'][-1]}; "
                           f"the cover sheet names another judge")
    if packet["service_method"] != d["service"]["method"]:
        raise RuntimeError(f"e-filing rejected: certificate of service says {packet['service_method']}, the docket "
                           f"records service by {d['service']['method']} on {d['service']['date']}")
    if packet["fee_code"] != COURT_FEE_CODES[packet["doc_type"]]:
        raise RuntimeError(f"e-filing rejected: fee code {packet['fee_code']} does not apply to a {packet['doc_type']}")
    court_due = _due(d["service"]["date"], next(r["response_days"] for r in RULES if r["doc_type"] == packet["doc_type"]),
                     d["service"]["method"])
    if packet["due"] != court_due:
        raise RuntimeError(f"e-filing rejected: stated response deadline {packet['due']} differs from the court's "
                           f"computed deadline {court_due}")
    return {"envelope": f"EF-{packet['case_no']}-0417", "status": "accepted"}


def execute(inp, server, path):
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with trajdebug.run(NAME, path=path, task=inp["task"]) as run:
            req = receive_request(inp["text"], "2026-11-16T09:12:00Z")
            ans = llm_step("extract_filing", client, server.model, [
                {"role": "system", "content": "Extract the filing as JSON: case_no, doc_type, firm, served_on, service_method."},
                {"role": "user", "content": req["text"]}])
            filing = parse_filing(ans["content"])
            docket = lookup_docket(filing["case_no"])
            case = remember_case(docket, filing)
            reviewed = [review_entry(i + 1, e) for i, e in enumerate(docket["entries"])]
            rule = find_rule(filing["doc_type"])
            deadline = compute_deadline(filing["served_on"], rule["response_days"], filing["service_method"])
            fee = fee_lookup(rule["fee_code"])
            payload = {"case_no": filing["case_no"], "doc_type": filing["doc_type"], "firm": filing["firm"],
                       "judge": run.state["case"]["judge"], "service_method": filing["service_method"],
                       "served_on": filing["served_on"], "due": deadline["due"], "fee_code": fee["fee_code"],
                       "fee": fee["amount"], "entries_reviewed": len(reviewed)}
            cover = llm_step("draft_cover", client, server.model, [
                {"role": "system", "content": "Draft the e-filing cover sheet from the packet."},
                {"role": "user", "content": json.dumps(payload)}])
            validate_packet(filing, docket, cover["content"], deadline)
            submit_efile({**payload, "cover": cover["content"], "case": case})
    except (ValueError, RuntimeError):
        pass


CASES = [
    {"id": "zc61-docket-1", "input": 0, "switch": "A1", "fault_kind": "lossy_parsing",
     "root": {"name": "parse_filing", "occurrence": 1, "kind": "parse"},
     "failure": {"name": "submit_efile", "occurrence": 1},
     "description": "The filing parser keeps a field list without the service method, so service by mail is read as electronic and the court rejects the certificate of service."},
    {"id": "zc61-docket-2", "input": 0, "switch": "A2", "fault_kind": "wrong_retrieval",
     "root": {"name": "find_rule", "occurrence": 1, "kind": "retrieval"},
     "failure": {"name": "submit_efile", "occurrence": 1},
     "description": "The rule search matches on the first two words of the document type and returns the motion-to-dismiss rule for a motion to compel, so the packet carries fee code MTD."},
    {"id": "zc61-docket-3", "input": 4, "switch": "A3", "fault_kind": "off_by_one",
     "root": {"name": "compute_deadline", "occurrence": 1, "kind": "other"},
     "failure": {"name": "submit_efile", "occurrence": 1},
     "description": "The deadline calculation counts the day of service as day one, giving 2026-12-01 instead of 2026-12-02 for the notice of appeal."},
    {"id": "zc61-docket-4", "input": 2, "switch": "A4", "fault_kind": "bad_memory_write",
     "root": {"name": "remember_case", "occurrence": 1, "kind": "state"},
     "failure": {"name": "submit_efile", "occurrence": 1},
     "description": "The case memory stores the first judge of the docket's history (Lindqvist) rather than the judge after reassignment (Marsh), and the cover sheet names him."},
    {"id": "zc61-docket-5", "input": 3, "switch": "A5", "fault_kind": "hallucinated_value",
     "root": {"name": "extract_filing", "occurrence": 1, "kind": "llm"},
     "failure": {"name": "validate_packet", "occurrence": 1},
     "description": "The extraction model adds a hearing date of 2026-12-10 that the request never mentions, which is not an open slot on the judge's calendar."},
]
