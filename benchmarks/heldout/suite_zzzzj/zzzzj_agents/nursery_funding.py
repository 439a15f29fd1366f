"""A nursery's termly funded-hours claim to the local authority (early years entitlement headcount).

Route: trajdebug's own recorder (JSONL). Shape: claim request -> roster retrieval -> a loop over the
children (record, eligibility-code parse, attendance, context for the model kept in run.state, model
classifies the funding stream, hours arithmetic) -> a top-up invoicing sub-agent (rate card, pricing per
child, model drafts the parent letters) -> claim file -> validation -> submission to the authority portal.
"""

from __future__ import annotations

import json
from datetime import date

import trajdebug

from . import common

NAME = "nursery-funding-claim"
ROUTE = "sdk"
DOMAIN = "early years childcare: termly funded-hours claim to the local authority"
SHAPE = "retrieval, loop over 5 children (tool, parse, tool, run.state memory, llm, arithmetic), sub-agent, validation, submission"
SWITCH = None

TERM = {"id": "summer-2025", "start": date(2025, 4, 1), "weeks": 12}
CAPS = {"universal_15": 15, "extended_30": 30, "two_year_old": 15}
TWO_YEAR_NOTE = "two-year-old offer: family receives Universal Credit, place funded by the council"

# setting -> term -> children (id, name, dob, eligibility code, hours per week booked, notes)
ROSTERS = {
    "Little Acorns Nursery": {
        "summer-2025": [("C-101", "Ava Brown", "2022-11-02", "", 15, [TWO_YEAR_NOTE]),
                        ("C-102", "Leo Grant", "2021-06-14", "5001 2345 678", 40, ["collected by grandmother on Fridays"]),
                        ("C-103", "Maya Singh", "2020-12-01", "", 15, []),
                        ("C-104", "Oscar Hale", "2021-09-30", "5012 3456 789", 32, ["nut allergy, epipen in office"]),
                        ("C-106", "Isla Ward", "2021-02-17", "", 20, [])],
        "spring-2025": [("C-101", "Ava Brown", "2022-11-02", "", 15, [TWO_YEAR_NOTE]),
                        ("C-102", "Leo Grant", "2021-06-14", "5001 2345 678", 40, ["collected by grandmother on Fridays"]),
                        ("C-103", "Maya Singh", "2020-12-01", "", 15, []),
                        ("C-104", "Oscar Hale", "2021-09-30", "5012 3456 789", 32, ["nut allergy, epipen in office"]),
                        ("C-112", "Finn Doyle", "2020-10-05", "5077 1200 431", 30, ["moving to Leeds at Easter"])],
    },
    "Bramble Lane Childminding": {
        "summer-2025": [("C-201", "Noah Price", "2021-04-22", "5044 0021 918", 30, []),
                        ("C-202", "Ella Marsh", "2022-09-09", "", 10, [TWO_YEAR_NOTE]),
                        ("C-203", "Ruby Lane", "2020-11-30", "0533 8812 004", 35, ["speech and language referral"]),
                        ("C-204", "Alfie Cole", "2021-08-08", "", 15, [])],
    },
    "Riverside Day Nursery": {
        "summer-2025": [("C-301", "Zara Ahmed", "2021-01-19", "5090 4411 207", 30, []),
                        ("C-302", "Jack Wood", "2021-07-03", "", 18, []),
                        ("C-303", "Mila Novak", "2022-10-25", "", 15, [TWO_YEAR_NOTE]),
                        ("C-304", "Theo Park", "2020-09-12", "5066 7310 552", 36, ["eczema cream twice daily"]),
                        ("C-305", "Lily Evans", "2021-05-27", "", 15, [])],
    },
    "St Anne's Pre-school": {
        "summer-2025": [("C-401", "Harry Moss", "2021-03-11", "", 15, []),
                        ("C-402", "Poppy Reid", "2022-12-04", "", 15, [TWO_YEAR_NOTE]),
                        ("C-403", "Arlo Quinn", "2021-10-21", "5020 9981 330", 30, []),
                        ("C-404", "Evie Shah", "2020-10-08", "", 15, ["EAL: Gujarati at home"])],
    },
    "Oak Tree Nursery": {
        "summer-2025": [("C-501", "Freya Long", "2021-02-02", "5088 1203 774", 38, []),
                        ("C-502", "Ethan Ball", "2020-12-29", "", 15, []),
                        ("C-503", "Sienna Fox", "2021-11-16", "5055 3021 689", 34, ["sleeps 12:30-13:30"]),
                        ("C-504", "Reggie Hunt", "2022-08-21", "", 15, [TWO_YEAR_NOTE])],
    },
}
ATTENDANCE_SPRING = {"C-304": {"weeks": 13, "hours_per_week": 36, "as_of": "2025-03-28"}}
RATE_CARD = [("0-1y", 7.10), ("1-2y", 6.90), ("2-3y", 6.60), ("3-4y", 6.20), ("4-5y", 6.00)]

INPUTS = [
    {"request_id": "claim-0412", "setting": "Little Acorns Nursery", "room": "Pre-school", "term": "summer-2025"},
    {"request_id": "claim-0413", "setting": "Bramble Lane Childminding", "room": "Home", "term": "summer-2025"},
    {"request_id": "claim-0414", "setting": "Riverside Day Nursery", "room": "Rainbow room", "term": "summer-2025"},
    {"request_id": "claim-0415", "setting": "St Anne's Pre-school", "room": "Main hall", "term": "summer-2025"},
    {"request_id": "claim-0416", "setting": "Oak Tree Nursery", "room": "Acorn room", "term": "summer-2025"},
]

CASES = [
    {"id": "B1", "input": 0, "fault_kind": "wrong_retrieval",
     "root": ("find_roster", 1), "failure": ("submit_claim", 1),
     "description": "The roster search returned the spring-2025 roster of Little Acorns (same setting and room), so "
                    "a child who left at Easter was claimed for the summer term and the portal refused the claim."},
    {"id": "B2", "input": 1, "fault_kind": "lossy_parsing",
     "root": ("parse_eligibility_code", 3), "failure": ("validate_claim", 1),
     "description": "The eligibility-code parser turned the 30-hours code into an integer, dropping its leading "
                    "zero (0533 8812 004 became 5338812004), and claim validation rejected the 10-digit code."},
    {"id": "B3", "input": 2, "fault_kind": "stale_data",
     "root": ("fetch_attendance", 4), "failure": ("validate_claim", 1),
     "description": "The attendance service answered for C-304 from a cached spring-term snapshot (13 weeks, as of "
                    "28 March), so the claim asked for 13 funded weeks in a 12-week term."},
    {"id": "B4", "input": 3, "fault_kind": "context_pollution",
     "root": ("compose_child_context", 3), "failure": ("validate_claim", 1),
     "description": "The child context for Arlo Quinn kept the previous child's two-year-old funding note, so the "
                    "model put a 3-year-old on the two-year-old offer and validation rejected the stream."},
    {"id": "B5", "input": 4, "fault_kind": "truncated_result",
     "root": ("fetch_rate_card", 1), "failure": ("price_topup", 1),
     "description": "The rate card came back as its first page only (three of five age bands), so pricing the "
                    "top-up hours of a 4-year-old found no rate for the 4-5y band."},
]


def brain(request):
    system = common.system_text(request)
    user = common.user_text(request)
    if system.startswith("Decide the funding stream"):
        ctx = json.loads(user)
        notes = " ".join(ctx["notes"]).lower()
        if "two-year-old offer" in notes:
            return json.dumps({"stream": "two_year_old", "reason": "council-funded two-year-old place"})
        if ctx["eligibility_code"]:
            return json.dumps({"stream": "extended_30", "reason": "valid 30-hours code"})
        return json.dumps({"stream": "universal_15", "reason": "universal entitlement for 3 and 4 year olds"})
    if system.startswith("Draft"):
        lines = json.loads(user)
        return "\n".join(f"Dear parent of {x['name']}: {x['topup_hours']} additional hours this term at "
                         f"{x['rate']:.2f} GBP/h, total {x['amount']:.2f} GBP." for x in lines) or "No top-ups."
    return "Sorry, I can't help with that."


def _age(dob: str) -> int:
    d = date.fromisoformat(dob)
    s = TERM["start"]
    return s.year - d.year - ((s.month, s.day) < (d.month, d.day))


@trajdebug.step(kind="input")
def load_claim_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="retrieval")
def find_roster(query: str, setting: str, term: str) -> dict:
    docs = [{"setting": s, "term": t, "children": [c[0] for c in kids]}
            for s, terms in ROSTERS.items() for t, kids in terms.items() if s == setting]
    newest_first = sorted(docs, key=lambda d: d["term"] != term)
    if SWITCH == "B1":
        newest_first = sorted(docs, key=lambda d: d["term"])  # alphabetical: spring before summer
    return newest_first[0]


def _child(child_id: str) -> tuple:
    for terms in ROSTERS.values():
        for kids in terms.values():
            for c in kids:
                if c[0] == child_id:
                    return c
    raise KeyError(child_id)


@trajdebug.step(kind="tool")
def fetch_child_record(child_id: str) -> dict:
    cid, name, dob, code, hours, notes = _child(child_id)
    return {"child_id": cid, "name": name, "dob": dob, "eligibility_code": code, "notes": list(notes)}


@trajdebug.step(kind="parse")
def parse_eligibility_code(raw: str) -> dict:
    if not raw:
        return {"code": None}
    digits = raw.replace(" ", "")
    if SWITCH == "B2":
        return {"code": str(int(digits))}
    return {"code": digits}


@trajdebug.step(kind="tool")
def fetch_attendance(child_id: str, term: str) -> dict:
    if SWITCH == "B3" and child_id in ATTENDANCE_SPRING:
        return {"child_id": child_id, **ATTENDANCE_SPRING[child_id]}
    cid, name, dob, code, hours, notes = _child(child_id)
    weeks = 0 if "moving" in " ".join(notes) else TERM["weeks"]
    return {"child_id": child_id, "weeks": weeks, "hours_per_week": hours, "as_of": "2025-07-18"}


@trajdebug.step(kind="state")
def compose_child_context(child: dict, code: dict, carried_notes: list) -> dict:
    notes = list(child["notes"])
    if SWITCH == "B4":
        notes = carried_notes + notes
    ctx = {"child_id": child["child_id"], "age": _age(child["dob"]), "eligibility_code": code["code"], "notes": notes}
    trajdebug.current_run().state[f"child:{child['child_id']}"] = ctx
    return ctx


@trajdebug.step(kind="llm")
def classify_funding(messages: list[dict]) -> dict:
    return common.complete(messages)


@trajdebug.step(kind="other")
def compute_funded_hours(child_id: str, decision: dict, attendance: dict) -> dict:
    stream = json.loads(decision["content"])["stream"]
    per_week = min(attendance["hours_per_week"], CAPS[stream])
    return {"child_id": child_id, "stream": stream, "weeks": attendance["weeks"], "funded_per_week": per_week,
            "funded_hours": per_week * attendance["weeks"],
            "topup_hours": (attendance["hours_per_week"] - per_week) * attendance["weeks"]}


@trajdebug.step(kind="tool")
def fetch_rate_card(setting: str) -> list[dict]:
    bands = [{"band": b, "hourly": r} for b, r in RATE_CARD]
    if SWITCH == "B5":
        return bands[:3]  # first page of the paginated endpoint
    return bands


@trajdebug.step(kind="tool")
def price_topup(line: dict, rate_card: list[dict]) -> dict:
    band = f"{line['age']}-{line['age'] + 1}y"
    rates = {r["band"]: r["hourly"] for r in rate_card}
    if band not in rates:
        raise KeyError(f"no hourly rate for band {band} (child {line['child_id']}, {line['topup_hours']} top-up hours)")
    return {**line, "rate": rates[band], "amount": round(rates[band] * line["topup_hours"], 2)}


@trajdebug.step(kind="llm")
def draft_letters(messages: list[dict]) -> dict:
    return common.complete(messages)


@trajdebug.step(kind="agent")
def invoice_topups(setting: str, lines: list[dict]) -> dict:
    card = fetch_rate_card(setting)
    priced = [price_topup(line, card) for line in lines if line["topup_hours"] > 0]
    letters = draft_letters([{"role": "system", "content": "Draft one line per parent for the top-up invoice."},
                             {"role": "user", "content": json.dumps(priced)}])
    return {"invoices": priced, "letters": letters["content"]}


@trajdebug.step(kind="parse")
def build_claim_file(setting: str, term: str, lines: list[dict], codes: dict) -> dict:
    return {"provider": setting, "term": term,
            "children": [{**{k: line[k] for k in ("child_id", "age", "stream", "weeks", "funded_hours")},
                          "eligibility_code": codes.get(line["child_id"])} for line in lines]}


@trajdebug.step(kind="tool")
def validate_claim(claim: dict) -> dict:
    for c in claim["children"]:
        if c["weeks"] > TERM["weeks"]:
            raise ValueError(f"{c['child_id']}: {c['weeks']} funded weeks claimed, {claim['term']} has {TERM['weeks']}")
        if c["stream"] == "two_year_old" and c["age"] != 2:
            raise ValueError(f"{c['child_id']}: stream two_year_old is not valid for a child aged {c['age']}")
        if c["stream"] == "extended_30" and (not c["eligibility_code"] or len(c["eligibility_code"]) != 11):
            raise ValueError(f"{c['child_id']}: 30-hours eligibility code {c['eligibility_code']} must have 11 digits")
    return {"valid": True, "children": len(claim["children"])}


@trajdebug.step(kind="tool")
def submit_claim(claim: dict) -> dict:
    registered = {c[0] for c in ROSTERS[claim["provider"]][claim["term"]]}
    for c in claim["children"]:
        if c["child_id"] not in registered:
            raise LookupError(f"child {c['child_id']} has no {claim['term']} registration at {claim['provider']}")
    total = sum(c["funded_hours"] for c in claim["children"])
    return {"reference": f"EYE-{sum(map(ord, claim['provider'])) * 7 % 9000 + 1000}", "funded_hours": total}


@trajdebug.step(kind="output")
def summarise_claim(receipt: dict, invoices: dict) -> str:
    return f"Claim {receipt['reference']} submitted: {receipt['funded_hours']} funded hours; {len(invoices['invoices'])} top-up invoices."


def record(inp: dict, path: str) -> None:
    with trajdebug.run(NAME, task=f"{inp['setting']} {inp['term']} funded hours claim", path=path,
                       metadata={"request_id": inp["request_id"]}):
        req = load_claim_request(inp)
        roster = find_roster(f"{req['setting']} {req['room']} roster {req['term']}", req["setting"], req["term"])
        lines, codes, carried = [], {}, []
        for child_id in roster["children"]:
            child = fetch_child_record(child_id)
            code = parse_eligibility_code(child["eligibility_code"])
            attendance = fetch_attendance(child_id, req["term"])
            ctx = compose_child_context(child, code, carried)
            carried = list(child["notes"])
            decision = classify_funding([
                {"role": "system", "content": "Decide the funding stream for this child: universal_15, extended_30 "
                                              "or two_year_old. Answer JSON {stream, reason}."},
                {"role": "user", "content": json.dumps(ctx)}])
            hours = compute_funded_hours(child_id, decision, attendance)
            codes[child_id] = code["code"]
            lines.append({**hours, "age": ctx["age"], "name": child["name"]})
        invoices = invoice_topups(req["setting"], lines)
        claim = build_claim_file(req["setting"], req["term"], lines, codes)
        validate_claim(claim)
        receipt = submit_claim(claim)
        summarise_claim(receipt, invoices)
