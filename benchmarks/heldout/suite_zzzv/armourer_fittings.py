"""Armourer's fitting appointments: otlp route. Spans of the agent's own (OpenInference kinds) and
the instrumented OpenAI client: the request, a router picking the plate or mail bench, a memory
tool for the customer's file, the measurement cards (retriever), the armoury shelves (a tool that
scans each shelf), the model's fitting plan, a parser, the workshop calendar (retried once on a
dropped connection), the booking, and a model-written confirmation letter."""
from __future__ import annotations

import json

from otlp_rig import attrs, set_output, traced

from trajdebug.testing import Reply

NAME = "fitting-appointments"
ROUTE = "otlp"
DOMAIN = "armourer's fitting appointments"
SHAPE = "request -> bench router -> memory write -> measurement cards (retriever) -> shelf scans (tool with 3-4 child tools) -> plan (llm) -> parse -> calendar (retry) -> booking -> letter (llm); 15-16 spans"
SWITCHES = {"plan_notes_as_list": False, "helm_shelf_timeout": False, "cuirass_to_mail": False,
            "plan_short_slot": False, "file_last_event": False}

CARDS = {
    "Ravensworth": [{"measured_on": "2026-03-02", "chest_cm": 104, "neck_cm": 41, "arm_cm": 64}],
    "de Vere": [{"measured_on": "2025-09-14", "chest_cm": 96, "neck_cm": 38, "arm_cm": 61}],
    "Ashdown": [{"measured_on": "2026-06-20", "chest_cm": 112, "neck_cm": 44, "arm_cm": 67}],
    "Moncrieff": [{"measured_on": "2026-01-11", "chest_cm": 100, "neck_cm": 40, "arm_cm": 63}],
    "Tallis": [{"measured_on": "2026-08-03", "chest_cm": 92, "neck_cm": 36, "arm_cm": 59}],
}
SHELVES = {"plate": ["cuirass", "pauldrons", "vambraces"], "mail": ["hauberk", "coif", "chausses"], "helm": ["close helm", "barbute"],
           "hands": ["gauntlets"]}
PLATE = {"cuirass", "pauldrons", "vambraces", "close helm", "barbute", "gauntlets"}
PREVIOUS_EVENT = {"Moncrieff": "2026-06-13"}
TODAY = "2026-11-07"

INPUTS = [
    {"task": "fitting, Ravensworth, cuirass and pauldrons for the December tourney", "customer": "Ravensworth", "pieces": ["cuirass", "pauldrons"], "event": "2026-12-12"},
    {"task": "fitting, de Vere, hauberk and coif", "customer": "de Vere", "pieces": ["hauberk", "coif"], "event": "2026-12-05"},
    {"task": "fitting, Ashdown, full harness", "customer": "Ashdown", "pieces": ["cuirass", "pauldrons", "vambraces", "gauntlets", "close helm"], "event": "2027-01-16"},
    {"task": "fitting, Moncrieff, barbute and gauntlets", "customer": "Moncrieff", "pieces": ["barbute", "gauntlets"], "event": "2026-12-19"},
    {"task": "fitting, Tallis, chausses", "customer": "Tallis", "pieces": ["chausses"], "event": "2026-12-08"},
]
CASES = [
    {"id": "zv31", "input": 0, "switch": "plan_notes_as_list", "kind": "format_drift",
     "root": ("ChatCompletion", 1, "llm"), "failure": ("ChatCompletion", 2),
     "description": "The model's fitting plan gave its notes for the customer as a list of objects instead of a text, and the letter request that carried them was refused by the model API."},
    {"id": "zv32", "input": 2, "switch": "helm_shelf_timeout", "kind": "swallowed_error",
     "root": ("armoury_shelves", 1, "tool"), "failure": ("book_fitting", 1),
     "description": "The helm shelf scan timed out and the shelf listing went on without it, so the harness plan had no close helm to fit."},
    {"id": "zv33", "input": 0, "switch": "cuirass_to_mail", "kind": "wrong_routing",
     "root": ("choose_bench", 1, "other"), "failure": ("book_fitting", 1),
     "description": "The bench router sent a cuirass and pauldrons fitting to the mail bench, which has no plate stand."},
    {"id": "zv34", "input": 2, "switch": "plan_short_slot", "kind": "plan_error",
     "root": ("ChatCompletion", 1, "llm"), "failure": ("book_fitting", 1),
     "description": "The model planned a 45 minute fitting for a five-piece harness, where the bench needs 20 minutes a piece."},
    {"id": "zv35", "input": 3, "switch": "file_last_event", "kind": "bad_memory_write",
     "root": ("customer_file", 1, "tool"), "failure": ("book_fitting", 1),
     "description": "The customer file was written with the date of Moncrieff's June event instead of this request's December one, so the calendar offered a fitting day in June, already past."},
]


def policy(request):
    msgs = request.body["messages"]
    for i, m in enumerate(msgs):  # the API's own request validation
        if isinstance(m["content"], list) and any(not isinstance(p, dict) or "type" not in p for p in m["content"]):
            return Reply(status=400, error=f"Invalid value for 'messages[{i}].content': each content part needs a 'type'.")
    system = msgs[0]["content"]
    data = json.loads(msgs[1]["content"])
    if system.startswith("Write"):
        return f"Dear {data['customer']}, your fitting is on {data['day']} at {data['time']} for {data['minutes']} minutes. {data['notes']}"
    pieces = [p for p in data["request"]["pieces"] if p in data["available"]]
    card = data["cards"][0]
    minutes = 20 * len(pieces) + 15
    if SWITCHES["plan_short_slot"]:
        minutes = 45
    notes = f"Bring a padded arming doublet; chest {card['chest_cm']} cm."
    if SWITCHES["plan_notes_as_list"]:
        notes = [{"note": "arming doublet"}, {"note": f"chest {card['chest_cm']} cm"}]
    return json.dumps({"pieces": pieces, "minutes": minutes, "measured_on": card["measured_on"],
                       "before": data["file"]["event"], "notes": notes})


def record(inp, path, server):
    with traced(NAME, path, server.base_url) as (tracer, client):
        with tracer.start_as_current_span(NAME, attributes=attrs("AGENT", {"task": inp["task"]}, metadata=json.dumps({"task": inp["task"]}))) as top:
            request = {k: inp[k] for k in ("customer", "pieces", "event")}
            with tracer.start_as_current_span("fitting_request", attributes=attrs("CHAIN", request, request)):
                pass
            with tracer.start_as_current_span("choose_bench", attributes=attrs("CHAIN", {"pieces": request["pieces"]})) as s:
                bench = "plate" if any(p in PLATE for p in request["pieces"]) else "mail"
                if SWITCHES["cuirass_to_mail"] and "cuirass" in request["pieces"]:
                    bench = "mail"
                set_output(s, {"bench": bench})
            with tracer.start_as_current_span("customer_file", attributes=attrs("TOOL", {"customer": request["customer"], "event": request["event"]})) as s:
                event = PREVIOUS_EVENT.get(request["customer"]) if SWITCHES["file_last_event"] else None
                file = {"customer": request["customer"], "event": event or request["event"], "bench": bench}
                set_output(s, {"written": file})
            with tracer.start_as_current_span("measurement_cards", attributes=attrs("RETRIEVER", {"customer": request["customer"]})) as s:
                cards = CARDS[request["customer"]]
                for i, c in enumerate(cards):
                    s.set_attribute(f"retrieval.documents.{i}.document.id", f"{request['customer']}-{c['measured_on']}")
                    s.set_attribute(f"retrieval.documents.{i}.document.content", json.dumps(c))
            with tracer.start_as_current_span("armoury_shelves", attributes=attrs("TOOL", {"pieces": request["pieces"]})) as s:
                available = []
                for shelf, items in SHELVES.items():
                    try:
                        with tracer.start_as_current_span("scan_shelf", attributes=attrs("TOOL", {"shelf": shelf})) as sc:
                            if SWITCHES["helm_shelf_timeout"] and shelf == "helm":
                                raise TimeoutError("helm shelf reader did not answer in 5 s")
                            set_output(sc, items)
                            available += items
                    except TimeoutError:
                        continue
                set_output(s, {"available": available})
            ask = {"request": request, "available": available, "cards": cards, "file": file}
            reply = client.chat.completions.create(model="fake-model", messages=[
                {"role": "system", "content": "Plan the armour fitting: pieces, minutes, notes. Answer JSON."},
                {"role": "user", "content": json.dumps(ask)}])
            text = reply.choices[0].message.content
            with tracer.start_as_current_span("read_fitting_plan", attributes=attrs("CHAIN", {"text": text})) as s:
                plan = set_output(s, json.loads(text))
            slot = None
            for attempt in (1, 2):
                try:
                    with tracer.start_as_current_span("workshop_calendar", attributes=attrs(
                            "TOOL", {"bench": bench, "before": plan["before"], "minutes": plan["minutes"]}, attempt=attempt)) as s:
                        if attempt == 1:
                            raise ConnectionError("calendar service closed the connection")
                        day = f"{plan['before'][:8]}0{3 if plan['before'][8:] > '05' else 1}"
                        slot = set_output(s, {"day": day, "time": "10:00"})
                    break
                except ConnectionError:
                    continue
            with tracer.start_as_current_span("book_fitting", attributes=attrs("TOOL", {"plan": plan, "slot": slot, "bench": bench})) as s:
                if bench == "mail" and any(p in PLATE for p in request["pieces"]):
                    raise ValueError(f"the mail bench has no plate stand for {', '.join(p for p in request['pieces'] if p in PLATE)}")
                missing = [p for p in request["pieces"] if p not in plan["pieces"]]
                if missing:
                    raise ValueError(f"request lists {', '.join(missing)}, the fitting plan has none")
                if plan["minutes"] < 20 * len(plan["pieces"]):
                    raise ValueError(f"{plan['minutes']} minutes booked for {len(plan['pieces'])} pieces, the bench needs 20 a piece")
                if slot["day"] < TODAY:
                    raise ValueError(f"fitting day {slot['day']} has already passed (today is {TODAY})")
                if slot["day"] >= request["event"]:
                    raise ValueError(f"fitting on {slot['day']} is not before the event on {request['event']}")
                booking = set_output(s, {"booked": slot, "minutes": plan["minutes"]})
            letter = client.chat.completions.create(model="fake-model", messages=[
                {"role": "system", "content": "Write the fitting confirmation letter."},
                {"role": "user", "content": json.dumps({"customer": request["customer"], "day": slot["day"], "time": slot["time"],
                                                        "minutes": booking["minutes"], "notes": "see below"})},
                {"role": "user", "content": plan["notes"]}])
            set_output(top, {"letter": letter.choices[0].message.content})
