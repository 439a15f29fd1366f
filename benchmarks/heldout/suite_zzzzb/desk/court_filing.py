"""Court e-filing clerk for a litigation office (trajdebug's own recorder)."""
from __future__ import annotations

import datetime as dt
import json

import trajdebug

from . import common

RUN_NAME = "court-filing-clerk"
ROUTE = "sdk"
DOMAIN = "litigation office: e-filing motions and responses in federal court"
SHAPE = ("intake, a model turn with two parallel tool calls (docket, local rules retrieval), a state write, "
         "a deadline computation, a loop over exhibits with a converter sub-tool, cover sheet by the model and a "
         "parser, a fee quote with a retried payment gateway, a page/fee check, calendar sync, submission, "
         "a confirmation by the model")
SWITCH = None

DOCKETS = {
    "2:24-cv-00381": {"case_no": "2:24-cv-00381", "judge": "Hon. R. Castellano",
                      "parties": ["Marden Logistics Inc.", "Harlow Freight LLC"], "counsel": {"Harlow Freight LLC": "4471"}},
    "1:25-cv-01127": {"case_no": "1:25-cv-01127", "judge": "Hon. P. Okafor",
                      "parties": ["Greenvale Township", "Ostrander Paving Co."], "counsel": {"Ostrander Paving Co.": "4471"}},
    "5:24-cv-00902": {"case_no": "5:24-cv-00902", "judge": "Hon. L. Brandt",
                      "parties": ["Kessler Dental Group PC", "Northfield Imaging Supply"], "counsel": {"Kessler Dental Group PC": "4471"}},
    "2:25-cv-00044": {"case_no": "2:25-cv-00044", "judge": "Hon. R. Castellano",
                      "parties": ["Ames Hollow HOA", "Pruett Roofing LLC"], "counsel": {"Pruett Roofing LLC": "4471"}},
    "3:24-cv-02260": {"case_no": "3:24-cv-02260", "judge": "Hon. M. Whitcombe",
                      "parties": ["Delacroix Hospitality Group", "Tern Point Marina"], "counsel": {"Delacroix Hospitality Group": "4471"}},
}

RULE_DOCS = [
    {"id": "vtd-lr-7", "court": "U.S. District Court, District of Vermont", "title": "L.R. 7 Motions",
     "rules": {"page_limit": 25, "reply_page_limit": 10, "fee": {"motion": 0.0, "pro hac vice": 250.0}}},
    {"id": "vtb-lbr-9013", "court": "U.S. Bankruptcy Court, District of Vermont", "title": "L.B.R. 9013 Motions",
     "rules": {"page_limit": 20, "reply_page_limit": 10, "fee": {"motion": 199.0, "pro hac vice": 250.0}}},
    {"id": "nhd-lr-7.1", "court": "U.S. District Court, District of New Hampshire", "title": "L.R. 7.1 Motions",
     "rules": {"page_limit": 25, "reply_page_limit": 10, "fee": {"motion": 0.0, "pro hac vice": 100.0}}},
    {"id": "nhd-lr-83.2", "court": "U.S. District Court, District of New Hampshire", "title": "L.R. 83.2 Admission",
     "rules": {"page_limit": 25, "reply_page_limit": 10, "fee": {"motion": 0.0, "pro hac vice": 100.0}}},
]

INPUTS = [
    {"task": "file opposition to motion to compel, Marden v. Harlow",
     "request": {"case_ref": "2:24-cv-00381", "court": "U.S. District Court, District of Vermont", "client": "Harlow Freight LLC",
                 "doc_type": "motion", "title": "Opposition to Motion to Compel", "served_on": "2025-03-06",
                 "response_days": 14, "service": "electronic", "pages": 18,
                 "attachments": [{"name": "exhibit_a_emails.pdf", "mb": 4.2}, {"name": "exhibit_b_logs.pdf", "mb": 2.0},
                                 {"name": "exhibit_c_invoices.pdf", "mb": 31.5}]}},
    {"task": "file motion for summary judgment, Greenvale v. Ostrander",
     "request": {"case_ref": "1:25-cv-01127", "court": "U.S. District Court, District of New Hampshire", "client": "Ostrander Paving Co.",
                 "doc_type": "motion", "title": "Motion for Summary Judgment", "served_on": "2025-04-01",
                 "response_days": 21, "service": "mail", "pages": 24,
                 "attachments": [{"name": "exhibit_1_contract.pdf", "mb": 1.1}, {"name": "exhibit_2_survey.pdf", "mb": 12.4}]}},
    {"task": "file response to motion to dismiss, Kessler v. Northfield",
     "request": {"case_ref": "5:24-cv-00902", "court": "U.S. District Court, District of Vermont", "client": "Kessler Dental Group PC",
                 "doc_type": "motion", "title": "Response to Motion to Dismiss", "served_on": "2025-02-13",
                 "response_days": 14, "service": "electronic", "pages": 22,
                 "attachments": [{"name": "exhibit_a_lease.pdf", "mb": 0.8}, {"name": "exhibit_b_invoices.pdf", "mb": 3.3},
                                 {"name": "exhibit_c_photos.pdf", "mb": 18.0}, {"name": "exhibit_d_decl.pdf", "mb": 0.4}]}},
    {"task": "file motion to extend discovery, Ames Hollow v. Pruett",
     "request": {"case_ref": "2:25-cv-00044", "court": "U.S. District Court, District of Vermont", "client": "Pruett Roofing LLC",
                 "doc_type": "motion", "title": "Motion to Extend Discovery Deadline", "served_on": "2025-05-09",
                 "response_days": 7, "service": "electronic", "pages": 6,
                 "attachments": [{"name": "exhibit_a_schedule.pdf", "mb": 0.3}, {"name": "exhibit_b_letters.pdf", "mb": 2.7}]}},
    {"task": "file reply in support of motion in limine, Delacroix v. Tern Point",
     "request": {"case_ref": "3:24-cv-02260", "court": "U.S. District Court, District of New Hampshire", "client": "Delacroix Hospitality Group",
                 "doc_type": "motion", "title": "Reply in Support of Motion in Limine", "served_on": "2025-01-17",
                 "response_days": 14, "service": "mail", "pages": 9,
                 "attachments": [{"name": "exhibit_1_report.pdf", "mb": 6.6}, {"name": "exhibit_2_depo.pdf", "mb": 9.9},
                                 {"name": "exhibit_3_photos.pdf", "mb": 22.8}]}},
]

CASES = [
    {"id": "court_deadline_count", "input": 0, "switch": "count_from_service_day", "fault_kind": "off_by_one",
     "root": ("compute_deadline", 1), "failure": ("docket_calendar_sync", 1),
     "description": "The deadline computation counts the day of service as day one, so the response date lands a day early and the court calendar refuses it."},
    {"id": "court_rules_lookup", "input": 2, "switch": "court_name_tokens", "fault_kind": "wrong_retrieval",
     "root": ("search_local_rules", 1), "failure": ("final_check", 1),
     "description": "The local-rules search ranks the bankruptcy court's motion rule first for a district court filing, so its 20-page limit is applied to a 22-page response."},
    {"id": "court_cover_case_no", "input": 3, "switch": "cover_digits", "fault_kind": "hallucinated_value",
     "root": ("draft_cover_sheet", 1), "failure": ("submit_filing", 1),
     "description": "The model writes the case number on the cover sheet as 2:25-cv-00004, a number no docket record holds, and CM/ECF cannot find the case."},
    {"id": "court_exhibit_conversion", "input": 4, "switch": "short_convert_timeout", "fault_kind": "swallowed_error",
     "root": ("check_attachment", 3), "failure": ("submit_filing", 1),
     "description": "The exhibit check gives the PDF/A converter a 5 s budget, catches its timeout on the large photo exhibit and reports the exhibit as converted, so submission rejects the file."},
    {"id": "court_party_memory", "input": 1, "switch": "first_listed_party", "fault_kind": "bad_memory_write",
     "root": ("remember_case", 1), "failure": ("submit_filing", 1),
     "description": "The case memory records the first party on the docket (the opposing township) as the client, and submission refuses a filing for a party this counsel does not represent."},
]

CLERK_TOOLS = [
    common.fn("lookup_docket", "Docket record of a case", {"case_no": "string"}),
    common.fn("search_local_rules", "Search the court's local rules", {"court": "string", "topic": "string"}),
]


# ---- steps ----------------------------------------------------------------------------

@trajdebug.step(kind="input")
def intake(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="llm")
def plan_filing(server, messages: list[dict]) -> dict:
    return common.chat(server, messages, tools=CLERK_TOOLS)


def lookup_docket_tool(case_no: str) -> dict:
    return json.loads(json.dumps(DOCKETS[case_no]))


def search_local_rules_tool(court: str, topic: str) -> list[dict]:
    scored = []
    for doc in RULE_DOCS:
        if SWITCH == "court_name_tokens":
            words = set(court.lower().replace(",", "").split()) - {"u.s.", "court"}
            have = set(doc["court"].lower().replace(",", "").split())
            score = len(words & have) / len(words) + (0.2 if doc["rules"]["fee"]["motion"] else 0.0)
        else:
            score = 1.0 if doc["court"] == court else 0.0
        score += 0.1 if topic.lower().rstrip("s") in doc["title"].lower() else 0.0
        scored.append({"id": doc["id"], "title": doc["title"], "court": doc["court"], "score": round(score, 3),
                       "rules": doc["rules"]})
    scored.sort(key=lambda d: -d["score"])
    return scored[:2]


@trajdebug.step(kind="state")
def remember_case(docket: dict, client: str) -> dict:
    if SWITCH == "first_listed_party":
        ours = docket["parties"][0]
    else:
        ours = next(p for p in docket["parties"] if p == client)
    memo = {"case_no": docket["case_no"], "judge": docket["judge"], "our_party": ours,
            "opposing": [p for p in docket["parties"] if p != ours]}
    trajdebug.current_run().state["case"] = memo
    return memo


@trajdebug.step(kind="other")
def compute_deadline(served_on: str, response_days: int, service: str) -> str:
    day = dt.date.fromisoformat(served_on)
    day = day - dt.timedelta(days=1) if SWITCH == "count_from_service_day" else day
    extra = 3 if service == "mail" else 0
    due = day + dt.timedelta(days=response_days + extra)
    return _roll_weekend(due).isoformat()


def _roll_weekend(due: dt.date) -> dt.date:
    while due.weekday() >= 5:
        due += dt.timedelta(days=1)
    return due


@trajdebug.step(kind="tool")
def convert_pdfa(name: str, mb: float, budget_s: float) -> dict:
    needed = round(0.4 * mb, 1)
    if needed > budget_s:
        raise TimeoutError(f"pdfa converter: {name} needs about {needed}s, budget {budget_s}s")
    return {"name": name, "pdfa": "PDF/A-1b", "mb": round(mb * 0.85, 2)}


@trajdebug.step(kind="other")
def check_attachment(attachment: dict) -> dict:
    budget = 30.0
    budget = 5.0 if SWITCH == "short_convert_timeout" else budget
    try:
        converted = convert_pdfa(attachment["name"], attachment["mb"], budget)
    except TimeoutError:
        converted = {"name": attachment["name"], "pdfa": "PDF/A-1b", "mb": attachment["mb"]}
    return {"name": attachment["name"], "format": converted["pdfa"], "mb": converted["mb"], "redacted": True,
            "source_mb": attachment["mb"]}


@trajdebug.step(kind="llm")
def draft_cover_sheet(server, messages: list[dict]) -> dict:
    return common.chat(server, messages)


@trajdebug.step(kind="parse")
def parse_cover_sheet(text: str) -> dict:
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    data = json.loads(body)
    return {"case_no": data["case_no"], "party": data["party"], "title": data["title"],
            "response_due": data["response_due"], "pages": int(data["pages"]), "exhibits": list(data["exhibits"])}


GATEWAY = {"calls": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def quote_fee(court: str, doc_type: str, fee_table: dict) -> dict:
    GATEWAY["calls"] += 1
    if GATEWAY["calls"] == 1:
        raise ConnectionError("pay.gov gateway reset the connection")
    return {"court": court, "doc_type": doc_type, "amount": fee_table.get(doc_type, 0.0), "currency": "USD"}


@trajdebug.step(kind="condition")
def final_check(cover: dict, rules: dict, fee: dict, request: dict) -> dict:
    if cover["pages"] > rules["page_limit"]:
        raise ValueError(f"{cover['title']}: {cover['pages']} pages, limit {rules['page_limit']} pages")
    if fee["amount"] != rules["fee"].get(request["doc_type"], 0.0):
        raise ValueError(f"fee {fee['amount']:.2f} does not match the schedule")
    return {"pages_ok": True, "fee": fee["amount"]}


@trajdebug.step(kind="tool")
def docket_calendar_sync(case_no: str, event: str, date: str, served_on: str, days: int, service: str) -> dict:
    court_date = dt.date.fromisoformat(served_on) + dt.timedelta(days=days + (3 if service == "mail" else 0))
    court_date = _roll_weekend(court_date)
    if date != court_date.isoformat():
        raise ValueError(f"court calendar: {event} in {case_no} is due {court_date.isoformat()} "
                         f"(served {served_on}, {days} days, {service} service); request gave {date}")
    return {"case_no": case_no, "event": event, "date": date, "calendar_id": f"CAL-{case_no[-5:]}-{date[5:7]}{date[8:]}"}


@trajdebug.step(kind="tool")
def submit_filing(cover: dict, exhibits: list[dict], case: dict) -> dict:
    if cover["case_no"] not in DOCKETS:
        raise LookupError(f"CM/ECF: no case {cover['case_no']} in this district")
    docket = DOCKETS[cover["case_no"]]
    if docket["counsel"].get(case["our_party"]) != "4471":
        raise PermissionError(f"CM/ECF: bar no. 4471 is not counsel of record for {case['our_party']} in {cover['case_no']}")
    for ex in exhibits:
        if ex["mb"] >= ex["source_mb"] and ex["mb"] > 10:
            raise ValueError(f"CM/ECF: {ex['name']} is not a valid PDF/A-1b file ({ex['mb']} MB, fonts not embedded)")
    return {"receipt": f"NEF-{cover['case_no'][-5:]}-{len(exhibits)}", "docket_entry": 40 + len(exhibits)}


@trajdebug.step(kind="llm")
def confirm_message(server, messages: list[dict]) -> dict:
    return common.chat(server, messages)


# ---- the agent ------------------------------------------------------------------------

def record(server, inp: dict, path: str) -> None:
    GATEWAY["calls"] = 0
    with trajdebug.run(RUN_NAME, path=path, task=inp["task"]) as run:
        req = intake(inp["request"])
        msgs = [{"role": "system", "content": "You are the e-filing clerk of a litigation office. Gather the docket and the local rules before filing."},
                {"role": "user", "content": json.dumps(req)}]
        turn = plan_filing(server, msgs)
        results = {}
        for call in turn["tool_calls"]:
            args = json.loads(call["function"]["arguments"])
            name = call["function"]["name"]
            kind = "retrieval" if name == "search_local_rules" else "tool"
            with trajdebug.step(name, kind=kind, input=call) as s:
                s.output = results[name] = (lookup_docket_tool(**args) if name == "lookup_docket" else search_local_rules_tool(**args))
        docket = results["lookup_docket"]
        rules = results["search_local_rules"][0]["rules"]
        case = remember_case(docket, req["client"])
        due = compute_deadline(req["served_on"], req["response_days"], req["service"])
        exhibits = [check_attachment(a) for a in req["attachments"]]
        cover_msgs = [{"role": "system", "content": "You prepare the cover sheet of a filing. Answer with JSON only."},
                      {"role": "user", "content": json.dumps({"docket": docket, "client": case["our_party"], "title": req["title"],
                                                               "response_due": due, "pages": req["pages"],
                                                               "exhibits": [e["name"] for e in exhibits]})}]
        cover = parse_cover_sheet(draft_cover_sheet(server, cover_msgs)["content"])
        fee = quote_fee(req["court"], req["doc_type"], rules["fee"])
        final_check(cover, rules, fee, req)
        docket_calendar_sync(cover["case_no"], "response", cover["response_due"], req["served_on"], req["response_days"], req["service"])
        receipt = submit_filing(cover, exhibits, run.state["case"])
        confirm_message(server, [{"role": "system", "content": "You write the filing confirmation to the supervising attorney."},
                                 {"role": "user", "content": json.dumps({"receipt": receipt, "cover": cover, "fee": fee})}])


# ---- the model ------------------------------------------------------------------------

def brain(request):
    from trajdebug.testing import Reply, tool_call

    system = common.chat_system(request)
    user = common.chat_user(request)
    if "e-filing clerk" in system:
        req = json.loads(user)
        return Reply(tool_calls=(tool_call("lookup_docket", {"case_no": req["case_ref"]}),
                                 tool_call("search_local_rules", {"court": req["court"], "topic": "motions"})))
    if "cover sheet" in system:
        info = json.loads(user)
        case_no = info["docket"]["case_no"]
        if SWITCH == "cover_digits":
            case_no = case_no[:-2] + "04"
        return json.dumps({"case_no": case_no, "party": info["client"], "title": info["title"],
                           "judge": info["docket"]["judge"], "response_due": info["response_due"],
                           "pages": info["pages"], "exhibits": info["exhibits"]})
    if "confirmation" in system:
        info = json.loads(user)
        return (f"Filed {info['cover']['title']} in {info['cover']['case_no']} (receipt {info['receipt']['receipt']}, "
                f"docket entry {info['receipt']['docket_entry']}). Fee {info['fee']['amount']:.2f} USD. "
                f"Response due {info['cover']['response_due']}.")
    return "I can only help with filings."
