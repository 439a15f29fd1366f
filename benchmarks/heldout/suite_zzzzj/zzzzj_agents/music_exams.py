"""A private music teaching studio's exam-entry assistant: enters pupils for a graded-exam session.

Route: the OpenTelemetry SDK with OpenInference attributes, exported as OTLP JSON. Shape: a root AGENT span;
model extracts the entries from the teacher's email -> CHAIN parser -> per pupil an AGENT span (syllabus
RETRIEVER, pupil TOOL, prompt CHAIN, model picks the pieces) -> model schedules with parallel tool calls
(exam slots and accompanists) -> the board's submission TOOL -> model summary.
"""

from __future__ import annotations

import json
import re

from trajdebug.testing import Reply, tool_call

from . import common, otel

NAME = "music-exam-entries"
ROUTE = "otlp"
DOMAIN = "private music teaching studio: graded practical exam entries"
SHAPE = "OTLP: root agent, extraction llm + chain parser, per-pupil agent spans (retriever, tool, chain, llm), parallel tool calls, submission"
SWITCH = None

PIECES = ["Minuet in G", "Allegro in F", "The Swan", "Arabesque", "Gavotte", "Romance", "Sarabande", "Habanera",
          "Toccatina", "Nocturne", "Bourree", "Scherzo", "Barcarolle", "Tarantella", "Siciliano", "Humoresque"]
INSTRUMENTS = {"piano": "PNO", "violin": "VLN", "flute": "FLT", "cello": "VCL", "clarinet": "CLT", "singing": "SNG"}
VENUES = [{"venue_id": "VEN-112", "name": "St Cecilia's Hall", "date": "2025-06-14"},
          {"venue_id": "VEN-131", "name": "Northgate Music Centre", "date": "2025-06-21"}]
THEORY_DATE = "2025-06-07"


def _syllabus(instrument: str, grade: int, year: str) -> dict:
    code = INSTRUMENTS[instrument]
    k = (sum(map(ord, instrument)) + grade) % 8
    pool = PIECES[8:] if year == "2023-2024" else PIECES[:8]
    return {"instrument": instrument, "grade": grade, "syllabus": year,
            "entry_code": f"{code}-{grade}-{year[2:4]}", "pieces": [pool[(k + i) % 8] for i in range(4)]}


DOCS = [_syllabus(i, g, y) for y in ("2023-2024", "2025-2026") for i in INSTRUMENTS for g in range(1, 9)]

INPUTS = [
    {"request_id": "mx-41", "teacher": "Ms Hart", "email": "Entries for the June session please:\n"
     "- Ellie Jones, piano, grade 5\n- Ivy Chen, violin, grade 6 (needs accompanist)\n- Ravi Patel, flute, grade 4 (needs accompanist)"},
    {"request_id": "mx-42", "teacher": "Mr Doyle", "email": "Please enter:\n"
     "- Sam Cooper, cello, grade 3 (needs accompanist)\n- Grace Lin, piano, grade 7\n- Noah Fitz, clarinet, grade 5 (needs accompanist)"},
    {"request_id": "mx-43", "teacher": "Mrs Obi", "email": "June entries:\n"
     "- Zoe Adams, singing, grade 4 (needs accompanist)\n- Leo Park, piano, grade 2\n- Amy Stone, violin, grade 5 (needs accompanist)"},
    {"request_id": "mx-44", "teacher": "Ms Verma", "email": "Hello, entries below:\n"
     "- Finn Moore, flute, grade 6 (needs accompanist)\n- Ada Rossi, piano, grade 4\n- Kit Lowe, cello, grade 5 (needs accompanist)"},
    {"request_id": "mx-45", "teacher": "Mr Quinn", "email": "For the summer session:\n"
     "- Maya Dunn, clarinet, grade 3 (needs accompanist)\n- Ben Hale, piano, grade 6\n- Isla Roy, violin, grade 4 (needs accompanist)"},
]
PUPILS = {}
for _n, _inp in enumerate(INPUTS):
    for _m, _line in enumerate(re.findall(r"- ([A-Za-z ]+),", _inp["email"])):
        PUPILS[_line] = {"pupil_id": f"PU-{410 + _n * 10 + _m}", "theory_grade": 5}

CASES = [
    {"id": "G1", "input": 3, "fault_kind": "context_pollution",
     "root": ("compose_prompt", 2), "failure": ("submit_entries", 1),
     "description": "The piece-selection prompt for Ada Rossi still held Finn Moore's flute syllabus from the previous "
                    "pupil, so the model chose flute pieces for a piano entry and the board refused them."},
    {"id": "G2", "input": 4, "fault_kind": "wrong_tool_args",
     "root": ("schedule_entries", 1), "failure": ("submit_entries", 1),
     "description": "The scheduling model booked the accompanists for 2025-06-07, the theory exam date in its prompt, "
                    "instead of the practical date 2025-06-14, and the submission found the dates apart."},
    {"id": "G3", "input": 0, "fault_kind": "lossy_parsing",
     "root": ("parse_entries", 1), "failure": ("submit_entries", 1),
     "description": "The entry parser compared the accompanist flag with the text 'yes' and lost the model's boolean "
                    "true, so no accompanist was booked and the board refused Ivy Chen's violin entry."},
    {"id": "G4", "input": 1, "fault_kind": "hallucinated_value",
     "root": ("schedule_entries", 1), "failure": ("book_slot", 1),
     "description": "The scheduling model booked the first slot at venue VEN-118, which is not among the venues it "
                    "was given (VEN-112, VEN-131), and the slot booking refused it."},
    {"id": "G5", "input": 2, "fault_kind": "wrong_retrieval",
     "root": ("syllabus_search", 1), "failure": ("submit_entries", 1),
     "description": "The syllabus search ranked the withdrawn 2023-2024 singing syllabus first, so the entry used code "
                    "SNG-4-23 and its pieces and the board refused the submission."},
]


def brain(request):
    system = common.system_text(request)
    user = common.user_text(request)
    if system.startswith("Extract"):
        out = []
        for name, inst, grade, rest in re.findall(r"- ([A-Za-z ]+), (\w+), grade (\d)(.*)", user):
            out.append({"pupil": name, "instrument": inst, "grade": int(grade), "accompanist": "accompanist" in rest})
        return json.dumps({"entries": out})
    if system.startswith("Choose"):
        syllabi = [json.loads(m["content"]) for m in common.messages(request) if m["role"] == "user"]
        first = syllabi[0]
        return json.dumps({"pieces": first["syllabus"]["pieces"][:3], "entry_code": first["syllabus"]["entry_code"]})
    if system.startswith("Schedule"):
        if common.tool_results(request):
            return "Scheduled."
        brief = json.loads(user)
        venue = brief["venues"][0]
        calls = []
        for i, e in enumerate(brief["entries"]):
            vid = "VEN-118" if (SWITCH == "G4" and i == 0) else venue["venue_id"]
            calls.append(tool_call("book_slot", {"pupil_id": e["pupil_id"], "venue_id": vid, "date": venue["date"]}))
        for e in brief["entries"]:
            if e["accompanist"]:
                day = brief["theory_date"] if SWITCH == "G2" else venue["date"]
                calls.append(tool_call("book_accompanist", {"pupil_id": e["pupil_id"], "date": day}))
        return Reply(tool_calls=tuple(calls))
    if system.startswith("Summarise"):
        d = json.loads(user)
        return f"{d['teacher']}: {d['count']} entries accepted, reference {d['reference']}."
    return "Sorry, I can't help with that."


def syllabus_search(instrument: str, grade: int) -> list[dict]:
    hits = [d for d in DOCS if d["instrument"] == instrument and d["grade"] == grade]
    scored = [{"id": f"SYL-{d['entry_code']}", "content": d, "score": 0.92 if d["syllabus"] == "2025-2026" else 0.74}
              for d in hits]
    if SWITCH == "G5":
        scored = [{**s, "score": 0.88} for s in scored]  # the year filter is not applied: equal scores
    return sorted(scored, key=lambda s: -s["score"])


def get_pupil_record(pupil: str) -> dict:
    return {"pupil": pupil, **PUPILS[pupil]}


def book_slot(pupil_id: str, venue_id: str, date: str) -> dict:
    venue = next((v for v in VENUES if v["venue_id"] == venue_id), None)
    if venue is None:
        raise LookupError(f"no exam venue {venue_id} in the June session")
    return {"pupil_id": pupil_id, "venue_id": venue_id, "date": date, "time": f"{9 + int(pupil_id[-1])}:20"}


def book_accompanist(pupil_id: str, date: str) -> dict:
    return {"pupil_id": pupil_id, "accompanist": "Mr L. Ferris", "date": date}


def submit_entries(entries: list) -> dict:
    for e in entries:
        current = _syllabus(e["instrument"], e["grade"], "2025-2026")
        if e["entry_code"].split("-")[:2] != current["entry_code"].split("-")[:2]:
            raise ValueError(f"entry code {e['entry_code']} for {e['pupil']} is not a {e['instrument']} grade {e['grade']} code")
        if e["entry_code"] != current["entry_code"]:
            raise ValueError(f"entry code {e['entry_code']} for {e['pupil']} belongs to a withdrawn syllabus")
        off = [p for p in e["pieces"] if p not in current["pieces"]]
        if off:
            raise ValueError(f"{e['pupil']}: {', '.join(off)} not on the {e['instrument']} grade {e['grade']} list")
        if e["instrument"] != "piano" and not e.get("accompanist_date"):
            raise ValueError(f"{e['pupil']}: {e['instrument']} grade {e['grade']} needs an accompanist; none booked")
        if e.get("accompanist_date") and e["accompanist_date"] != e["slot_date"]:
            raise ValueError(f"{e['pupil']}: accompanist booked for {e['accompanist_date']}, exam on {e['slot_date']}")
    return {"reference": f"JUN25-{entries[0]['pupil_id']}", "count": len(entries)}


SCHEDULE_TOOLS = [common.tool_spec("book_slot", "Book an exam slot.", {"pupil_id": "string", "venue_id": "string", "date": "string"}),
                  common.tool_spec("book_accompanist", "Book the studio accompanist.", {"pupil_id": "string", "date": "string"})]


def record(inp: dict, path: str) -> None:
    t = otel.tracer("music-exam-entries")
    otel.begin()
    try:
        with otel.span(t, NAME, "AGENT", {"teacher": inp["teacher"], "email": inp["email"]},
                       metadata=json.dumps({"task": f"{inp['teacher']} June entries", "request_id": inp["request_id"]})):
            answer = otel.llm(t, "extract_entries", [
                {"role": "system", "content": "Extract the exam entries as JSON {entries: [{pupil, instrument, grade, accompanist}]}."},
                {"role": "user", "content": inp["email"]}])
            with otel.span(t, "parse_entries", "CHAIN", {"text": answer["content"]}) as s:
                raw = json.loads(answer["content"])["entries"]
                entries = []
                for e in raw:
                    acc = bool(e["accompanist"])
                    if SWITCH == "G3":
                        acc = str(e["accompanist"]).lower() == "yes"
                    entries.append({"pupil": e["pupil"].strip(), "instrument": e["instrument"].lower(),
                                    "grade": int(e["grade"]), "accompanist": acc})
                otel.done(s, entries)
            history: list[dict] = []
            for e in entries:
                with otel.span(t, "prepare_entry", "AGENT", e) as s:
                    docs = otel.retriever(t, "syllabus_search", f"{e['instrument']} grade {e['grade']} syllabus",
                                          syllabus_search(e["instrument"], e["grade"]))
                    pupil = otel.tool(t, "get_pupil_record", get_pupil_record, {"pupil": e["pupil"]})
                    with otel.span(t, "compose_prompt", "CHAIN", {"pupil": e["pupil"], "doc": docs[0]["id"]}) as c:
                        turn = {"role": "user", "content": json.dumps({"pupil": e["pupil"], "syllabus": docs[0]["content"]})}
                        msgs = [{"role": "system", "content": "Choose three pieces from the syllabus for this pupil. JSON."}]
                        if SWITCH == "G1":
                            msgs += history
                        msgs.append(turn)
                        otel.done(c, msgs)
                    history = [turn]
                    pick = json.loads(otel.llm(t, "choose_pieces", msgs)["content"])
                    e.update(pupil_id=pupil["pupil_id"], pieces=pick["pieces"], entry_code=pick["entry_code"])
                    otel.done(s, e)
            plan = otel.llm(t, "schedule_entries", [
                {"role": "system", "content": "Schedule the practical exams and accompanists with the tools."},
                {"role": "user", "content": json.dumps({"entries": [{k: e[k] for k in ("pupil_id", "accompanist")} for e in entries],
                                                        "venues": VENUES, "theory_date": THEORY_DATE})}],
                SCHEDULE_TOOLS)
            by_id = {e["pupil_id"]: e for e in entries}
            for call in plan["tool_calls"]:
                fn = book_slot if call["name"] == "book_slot" else book_accompanist
                res = otel.tool(t, call["name"], fn, call["arguments"], call["id"])
                key = "slot_date" if call["name"] == "book_slot" else "accompanist_date"
                by_id[res["pupil_id"]][key] = res["date"]
            receipt = otel.tool(t, "submit_entries", submit_entries, {"entries": entries})
            otel.llm(t, "write_summary", [{"role": "system", "content": "Summarise the submission for the teacher."},
                                          {"role": "user", "content": json.dumps({"teacher": inp["teacher"], **receipt})}])
    finally:
        otel.write(path)
