"""Notary appointments: the trajdebug recording SDK with a per-signer identity sub-agent."""
from __future__ import annotations

import json
import re

import trajdebug
from openai import OpenAI

from .kit import active

AGENT, ROUTE, EXT = "notary-appointment-desk", "sdk", "jsonl"
DOMAIN = "notary appointments"
SHAPE = "classify -> requirements -> identity sub-agent per signer (search, pick, ID check, model summary) -> office slots -> context -> model proposes -> model drafts booking -> book -> journal -> confirm"

INPUTS = {
    "okafor": "Schedule a notary appointment for Dana Okafor and Lee Okafor to sign a power of attorney at the Elm St office, Thursday afternoon.",
    "brandt": "Schedule a notary appointment for Hanna Brandt and Milo Brandt to sign a deed of sale at the Oak Ave office, Tuesday morning.",
    "r1": "Schedule a notary appointment for Ravi Menon and Asha Menon to sign a deed of sale at the Elm St office, Monday morning.",
    "r2": "Schedule a notary appointment for Greta Solberg and Ivo Solberg to sign a power of attorney at the Oak Ave office, Wednesday afternoon.",
    "r3": "Schedule a notary appointment for Paul Achebe and Nia Achebe to sign a deed of sale at the Elm St office, Friday afternoon.",
    "r4": "Schedule a notary appointment for June Park and Theo Park to sign a power of attorney at the Oak Ave office, Thursday morning.",
}
REFS = ["r1", "r2", "r3", "r4"]
CLIENTS = [
    {"client": "C-1180", "name": "Dana Okafor", "id_number": "DL-5521-0931", "expires": "2029-03-01"},
    {"client": "C-4410", "name": "Lea Okafor", "id_number": "DL-7730-1204", "expires": "2028-06-30"},
    {"client": "C-4412", "name": "Lee Okafor", "id_number": "PP-3318-2271", "expires": "2031-01-15"},
    {"client": "C-2044", "name": "Hanna Brandt", "id_number": "DL-9014-4410", "expires": "2030-08-09"},
    {"client": "C-2051", "name": "Milo Brandt", "id_number": "DL-9015-1187", "expires": "2027-11-20"},
    {"client": "C-3107", "name": "Ravi Menon", "id_number": "PP-1203-8842", "expires": "2032-02-02"},
    {"client": "C-3108", "name": "Asha Menon", "id_number": "PP-1204-5521", "expires": "2032-02-02"},
    {"client": "C-5120", "name": "Greta Solberg", "id_number": "DL-4402-0098", "expires": "2029-12-12"},
    {"client": "C-5121", "name": "Ivo Solberg", "id_number": "DL-4403-7761", "expires": "2028-04-04"},
    {"client": "C-6033", "name": "Paul Achebe", "id_number": "DL-6610-3345", "expires": "2030-05-05"},
    {"client": "C-6034", "name": "Nia Achebe", "id_number": "DL-6611-9902", "expires": "2031-07-07"},
    {"client": "C-7001", "name": "June Park", "id_number": "PP-8810-4432", "expires": "2029-09-09"},
    {"client": "C-7002", "name": "Theo Park", "id_number": "PP-8811-1209", "expires": "2030-10-10"},
]
DAYS = {"Monday": "Mon", "Tuesday": "Tue", "Wednesday": "Wed", "Thursday": "Thu", "Friday": "Fri"}
TAKEN = {("Elm St", "Thu 14:00")}
REQUIREMENTS = {"power of attorney": {"witnesses": 2, "id": "government photo ID", "fee_cents": 4500},
                "deed of sale": {"witnesses": 1, "id": "government photo ID", "fee_cents": 6000}}

CASES = [
    ("zh-notary-01", "hallucinated_value", "okafor", ("summarize_identity", 1, "llm"), "write_journal_entry",
     "summarize_identity states an ID number the client record does not hold, and the notary journal rejects the entry."),
    ("zh-notary-02", "stale_data", "okafor", ("fetch_office_slots", 1, "tool"), "book_appointment",
     "fetch_office_slots answers from yesterday's calendar snapshot, so the proposed Thursday slot is already taken at booking."),
    ("zh-notary-03", "wrong_tool_args", "brandt", ("draft_booking", 1, "llm"), "book_appointment",
     "draft_booking leaves the second signer out of the booking arguments and the booking API refuses the signer count."),
    ("zh-notary-04", "subagent_wrong_entity", "okafor", ("pick_client", 2, "other"), "write_journal_entry",
     "the identity sub-agent for Lee Okafor picks Lea Okafor's client record, which the journal refuses as a non-signer."),
    ("zh-notary-05", "context_pollution", "brandt", ("assemble_context", 1, "other"), "confirm_appointment",
     "assemble_context appends the previous caller's note, so the model proposes that caller's day and confirmation fails."),
]


def policy(request):
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Classify"):
        m = re.search(r"for (\w+ \w+) and (\w+ \w+) to sign a (.+?) at the (.+?) office, (\w+) (\w+)\.", user)
        return json.dumps({"signers": [m.group(1), m.group(2)], "document": m.group(3), "office": m.group(4),
                           "day": m.group(5), "part": m.group(6)})
    if system.startswith("Summarize"):
        rec = json.loads(user)
        id_number = rec["id_number"]
        if rec["name"] == "Dana Okafor" and active("zh-notary-01"):
            id_number = "DL-5521-0913"
        return f"{rec['name']} (client {rec['client']}) holds {rec['id_kind']} {id_number}, valid until {rec['expires']}."
    if system.startswith("Propose"):
        mentions = re.findall(r"(Monday|Tuesday|Wednesday|Thursday|Friday) (morning|afternoon)", user)
        day, part = mentions[-1]
        slots = json.loads(user.split("SLOTS:", 1)[1])
        for s in slots:
            hour = int(s.split()[1][:2])
            if s.startswith(DAYS[day]) and (hour < 12) == (part == "morning"):
                return f"Proposed slot: {s}"
        return "Proposed slot: none"
    if system.startswith("Draft"):
        data = json.loads(user)
        signers = data["signers"]
        if active("zh-notary-03"):
            signers = signers[:1]
        return json.dumps({"office": data["office"], "slot": data["slot"], "signers": signers,
                           "witnesses": data["witnesses"]})
    return "Unsupported request."


def record(key: str, fault: str | None, out, server) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    text = INPUTS[key]

    def chat(system: str, user: str) -> str:
        r = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": system}, {"role": "user", "content": user}])
        return r.choices[0].message.content

    @trajdebug.step(kind="input")
    def intake(message: str) -> dict:
        return {"caller": "phone line 2", "message": message}

    @trajdebug.step(kind="llm")
    def classify_request(req: dict) -> str:
        return chat("Classify the notary request as JSON.", req["message"])

    @trajdebug.step(kind="parse")
    def parse_request(raw: str) -> dict:
        return json.loads(raw)

    @trajdebug.step(kind="retrieval")
    def lookup_requirements(document: str) -> dict:
        return {"document": document, **REQUIREMENTS[document]}

    @trajdebug.step(kind="tool")
    def search_client_records(name: str) -> list[dict]:
        last = name.split()[1]
        return [dict(c) for c in CLIENTS if c["name"].endswith(last)]

    @trajdebug.step(kind="other")
    def pick_client(name: str, matches: list[dict]) -> dict:
        if active("zh-notary-04"):
            first = name.split()[0]
            return next(c for c in matches if c["name"].split()[0][:2] == first[:2])
        return next(c for c in matches if c["name"] == name)

    @trajdebug.step(kind="tool")
    def check_id_document(rec: dict) -> dict:
        return {**rec, "id_kind": "passport" if rec["id_number"].startswith("PP") else "driving licence",
                "valid": rec["expires"] > "2026-12-31"}

    @trajdebug.step(kind="llm")
    def summarize_identity(checked: dict) -> str:
        return chat("Summarize the signer's verified identity.", json.dumps(checked))

    @trajdebug.step(kind="agent")
    def verify_signer(name: str) -> dict:
        matches = search_client_records(name)
        rec = pick_client(name, matches)
        checked = check_id_document(rec)
        summary = summarize_identity(checked)
        return {"name": name, "client": rec["client"], "summary": summary}

    @trajdebug.step(kind="tool")
    def fetch_office_slots(office: str) -> list[str]:
        slots = [f"{d} {h}" for d in DAYS.values() for h in ("09:30", "14:00", "15:30")]
        if active("zh-notary-02"):
            return slots
        return [s for s in slots if (office, s) not in TAKEN]

    @trajdebug.step(kind="state")
    def remember_calendar(office: str, slots: list[str]) -> None:
        trajdebug.current_run().state["calendar"] = {"office": office, "slots": slots}

    @trajdebug.step(kind="other")
    def assemble_context(request: dict) -> str:
        cal = trajdebug.current_run().state["calendar"]
        ctx = f"Request: {request['document']} for {', '.join(request['signers'])}, {request['day']} {request['part']}."
        if active("zh-notary-05"):
            ctx += " Previous caller note: asked for Friday afternoon."
        return ctx + " SLOTS:" + json.dumps(cal["slots"])

    @trajdebug.step(kind="llm")
    def propose_slot(context: str) -> str:
        return chat("Propose one slot that fits the request.", context)

    @trajdebug.step(kind="parse")
    def parse_slot(answer: str) -> str:
        return answer.split(":", 1)[1].strip()

    @trajdebug.step(kind="llm")
    def draft_booking(payload: dict) -> str:
        return chat("Draft the booking call arguments as JSON.", json.dumps(payload))

    @trajdebug.step(kind="tool")
    def book_appointment(args: dict, required: dict) -> dict:
        if (args["office"], args["slot"]) in TAKEN:
            raise RuntimeError(f"409 Conflict: {{\"error\": \"slot_taken\", \"office\": \"{args['office']}\", \"slot\": \"{args['slot']}\"}}")
        if len(args["signers"]) != 2:
            raise RuntimeError(f"422 Unprocessable Entity: {{\"error\": \"signer_count\", \"document\": \"{required['document']}\", \"signers\": {len(args['signers'])}}}")
        return {"appointment": f"NA-{args['office'][:3].upper()}-{args['slot'].replace(' ', '-')}", **args}

    @trajdebug.step(kind="tool")
    def write_journal_entry(appointment: dict, identities: list[dict], request: dict) -> dict:
        by_client = {c["client"]: c for c in CLIENTS}
        for ident in identities:
            rec = by_client[ident["client"]]
            if rec["name"] not in request["signers"]:
                raise ValueError(f"journal entry rejected: client {rec['client']} ({rec['name']}) is not a signer on the {request['document']}")
            if rec["id_number"] not in ident["summary"]:
                raise ValueError(f"journal entry rejected: ID number for client {rec['client']} does not match the ID on file")
        return {"journal": f"J-{appointment['appointment']}", "entries": len(identities)}

    @trajdebug.step(kind="output")
    def confirm_appointment(appointment: dict, request: dict) -> str:
        day, hour = appointment["slot"].split()
        if day != DAYS[request["day"]] or (int(hour[:2]) < 12) != (request["part"] == "morning"):
            raise ValueError(f"appointment {appointment['slot']} does not match the requested {request['day']} {request['part']}")
        return f"Booked {appointment['appointment']} for {' and '.join(request['signers'])}."

    try:
        with trajdebug.run(AGENT, path=str(out), task=text):
            req = intake(text)
            request = parse_request(classify_request(req))
            required = lookup_requirements(request["document"])
            identities = [verify_signer(n) for n in request["signers"]]
            slots = fetch_office_slots(request["office"])
            remember_calendar(request["office"], slots)
            context = assemble_context(request)
            slot = parse_slot(propose_slot(context))
            payload = {"office": request["office"], "slot": slot, "witnesses": required["witnesses"],
                       "signers": [i["client"] for i in identities]}
            args = json.loads(draft_booking(payload))
            appointment = book_appointment(args, required)
            write_journal_entry(appointment, identities, request)
            confirm_appointment(appointment, request)
    except (ValueError, RuntimeError):
        pass
