"""Pumpkin patch ticketing (OpenTelemetry / OpenInference spans, imported from OTLP/JSON).

Reads a group booking, has the model read the party, parses it, prices each ticket type, runs an add-on sub-agent
(catalogue retriever, model choice, parser), looks up the day's time slots, checks the capacity at the gate counter
(moving to the next slot when full), issues the tickets, has the model write the confirmation, sends it and validates the booking.
"""
import json
import re

import kit
from common import chat_brain
from otlp_common import Trace

NAME = "pumpkin-tickets"
ROUTE = "otlp"
DOMAIN = "pumpkin patch ticketing"
SHAPE = "booking tool -> party (llm, parse) -> per ticket type: fare tool, line total -> add-on sub-agent (retriever, llm, parse) -> slot retriever -> capacity tool -> issue tool -> confirmation (llm) -> send tool -> validate"
EXT = "json"

FARES = {"adult": 12.5, "child": 8.0, "under3": 0.0}
ADDONS = [{"name": "hayride", "eur": 4.0}, {"name": "corn maze", "eur": 3.5}, {"name": "face painting", "eur": 5.0},
          {"name": "pony ride", "eur": 6.0}, {"name": "apple press", "eur": 2.5}, {"name": "pumpkin carving kit", "eur": 7.0}]
SLOTS = {d: [{"date": d, "slot": s, "capacity": c} for s, c in zip(["10:00", "11:30", "13:00", "14:30"], caps)]
         for d, caps in [("2026-10-10", [40, 25, 12, 30]), ("2026-10-11", [35, 8, 20, 40]),
                         ("2026-10-17", [30, 30, 6, 25]), ("2026-10-18", [20, 15, 40, 10]),
                         ("2026-10-24", [40, 40, 7, 18]), ("2026-10-01", [50, 50, 50, 50])]}
BOOKINGS = {
    "PB-201": {"date": "2026-10-10", "slot": "11:30", "party": "3 adults, 4 children, 1 under 3",
               "addons": ["hayride", "pumpkin carving kit"]},
    "PB-202": {"date": "2026-10-11", "slot": "13:00", "party": "2 adults, 3 children",
               "addons": ["corn maze", "pony ride"]},
    "PB-203": {"date": "2026-10-17", "slot": "10:00", "party": "4 adults, 6 children, 2 under 3",
               "addons": ["hayride", "apple press"]},
    "PB-204": {"date": "2026-10-18", "slot": "14:30", "party": "2 adults, 2 children",
               "addons": ["face painting", "pumpkin carving kit"]},
    "PB-205": {"date": "2026-10-24", "slot": "13:00", "party": "5 adults, 3 children",
               "addons": ["corn maze"]},
    "PB-206": {"date": "2026-10-11", "slot": "10:00", "party": "1 adult, 2 children, 1 under 3",
               "addons": ["hayride", "pony ride"]},
}
INPUTS = {k: k for k in BOOKINGS}

CASES = [
    dict(id="zzx-pumpkin-01", input="PB-203", kind="off_by_one", root=("issue_tickets", 1),
         failure=("validate_booking", 1), line="ticket issue numbers the tickets from one and stops one short"),
    dict(id="zzx-pumpkin-02", input="PB-201", kind="truncated_result", root=("addon_catalogue", 1),
         failure=("validate_booking", 1), line="the add-on catalogue retriever returns only its first page of five"),
    dict(id="zzx-pumpkin-03", input="PB-206", kind="wrong_retrieval", root=("find_slots", 1),
         failure=("validate_booking", 1), line="the slot retriever matches the date by prefix and returns 10 October's slots for 11 October"),
    dict(id="zzx-pumpkin-04", input="PB-204", kind="format_drift", root=("ChatCompletion", 3),
         failure=("validate_booking", 1), line="the confirmation model writes the visit date as day/month/year"),
    dict(id="zzx-pumpkin-05", input="PB-205", kind="swallowed_error", root=("check_capacity", 1),
         failure=("validate_booking", 1),
         line="the capacity check swallows a gate counter timeout and reports the slot as free"),
]


def brain():
    def party(p):
        out = {"adult": 0, "child": 0, "under3": 0}
        for n, what in re.findall(r"(\d+) (adults?|children|child|under 3)", p["party"]):
            out["adult" if what.startswith("adult") else "under3" if what == "under 3" else "child"] += int(n)
        return out

    def addons(p):
        have = {a["name"]: a["eur"] for a in p["catalogue"]}
        return {"chosen": [{"name": a, "eur": have[a], "qty": p["people"]} for a in p["wanted"] if a in have]}

    def confirm(p):
        y, m, d = p["date"].split("-")
        day = f"{d}/{m}/{y}" if kit.on("zzx-pumpkin-04") else p["date"]
        return (f"Booking {p['booking']} confirmed for {day} at {p['slot']}: {p['tickets']} tickets, "
                f"total {p['total_eur']:.2f} EUR.")

    return chat_brain({"party": party, "addons": addons, "confirm": confirm})


SYSTEM = "You are the box office of a pumpkin patch. Answer with JSON unless asked for a message."


def record(bid, path, server):
    t = Trace(NAME, server)
    try:
        with t.span(NAME, "AGENT", {"booking": bid}):
            b = t.step("read_booking", "TOOL", {"booking": bid}, lambda: {"booking": bid, **BOOKINGS[bid]})
            raw = t.ask(SYSTEM, "party", "Read the party.", {"party": b["party"]})
            party = t.step("parse_party", "CHAIN", {"text": raw}, lambda: json.loads(raw))
            people = sum(party.values())
            lines = []
            for kind in ("adult", "child", "under3"):
                fare = t.step("fare_lookup", "TOOL", {"ticket": kind}, lambda k=kind: {"ticket": k, "eur": FARES[k]})
                lines.append(t.step("line_total", "CHAIN", {"fare": fare, "qty": party[kind]},
                                    lambda f=fare, k=kind: {"ticket": k, "qty": party[k],
                                                            "eur": round(f["eur"] * party[k], 2)}))
            with t.span("addon_agent", "AGENT", {"wanted": b["addons"]}):
                cat = t.step("addon_catalogue", "RETRIEVER", {"query": "add-ons 2026"},
                             lambda: ADDONS[:5] if kit.on("zzx-pumpkin-02") else list(ADDONS))
                ans = t.ask(SYSTEM, "addons", "Pick the add-ons for this group.",
                            {"wanted": b["addons"], "catalogue": cat, "people": people})
                addons = t.step("parse_addons", "CHAIN", {"text": ans}, lambda: json.loads(ans)["chosen"])

            def slots():
                if kit.on("zzx-pumpkin-03"):
                    return next(v for d, v in sorted(SLOTS.items()) if d.startswith(b["date"][:9]))
                return SLOTS[b["date"]]
            day_slots = t.step("find_slots", "RETRIEVER", {"date": b["date"]}, slots)
            names = [s["slot"] for s in day_slots]
            for want in names[names.index(b["slot"]):]:
                slot = next(s for s in day_slots if s["slot"] == want)

                def capacity(slot=slot):
                    try:
                        if kit.on("zzx-pumpkin-05"):
                            raise TimeoutError("gate counter did not answer")
                        left = slot["capacity"]
                    except TimeoutError:
                        left = 999
                    return {"slot": slot["slot"], "date": slot["date"], "places_left": left, "party": people}
                cap = t.step("check_capacity", "TOOL", {"date": b["date"], "slot": want}, capacity)
                if cap["places_left"] >= people:
                    break

            def issue():
                start = 1 if kit.on("zzx-pumpkin-01") else 0
                return [f"{bid}-{i + 1:02d}" for i in range(start, people)]
            tickets = t.step("issue_tickets", "TOOL", {"booking": bid, "count": people}, issue)
            total = round(sum(l["eur"] for l in lines) + sum(a["eur"] * a["qty"] for a in addons), 2)
            text = t.ask(SYSTEM, "confirm", "Write the confirmation message.",
                         {"booking": bid, "date": cap["date"], "slot": cap["slot"], "tickets": len(tickets),
                          "total_eur": total})
            sent = t.step("send_confirmation", "TOOL", {"to": bid, "text": text},
                          lambda: {"message_id": f"msg-{bid}", "text": text})

            def validate():
                if len(tickets) != people:
                    raise ValueError(f"{len(tickets)} tickets issued for a party of {people}")
                names = sorted(a["name"] for a in addons)
                if names != sorted(b["addons"]):
                    raise ValueError(f"add-ons {names} booked; the group asked for {sorted(b['addons'])}")
                if cap["date"] != b["date"]:
                    raise ValueError(f"capacity checked for {cap['date']}; the visit is on {b['date']}")
                real = SLOTS[b["date"]]
                left = next(s["capacity"] for s in real if s["slot"] == cap["slot"])
                if people > left:
                    raise ValueError(f"party of {people} booked into {b['date']} {cap['slot']} with {left} places left")
                if b["date"] not in sent["text"]:
                    raise ValueError(f"confirmation '{sent['text']}' does not state the visit date {b['date']}")
                return {"status": "booked", "total_eur": total}
            t.step("validate_booking", "CHAIN", {"booking": bid}, validate)
    except (ValueError, RuntimeError):
        pass
    t.write(path)
