"""A hostel's bed allocation (otlp route): arrivals -> per booking (note reading, room-type router, bed assignment
or group allocator sub-agent) -> allocation memory -> keycards -> summary -> validator."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kit  # noqa: E402
from openai import OpenAI  # noqa: E402

AGENT = "hostel-beds"
ROUTE = "otlp"
DOMAIN = "hostel's bed allocation"
SHAPE = "OpenTelemetry spans (OpenInference): arrivals, room inventory, occupancy, per-booking loop (note reading LLM, room-type router, bed assignment or group allocator sub-agent with group resolution, roster, plan LLM, assignment), allocation memory write/read, keycards, check-in summary (LLM), validator"

ROOMS = [("D1", "female-only", 6), ("D2", "mixed", 8), ("D3", "mixed", 10), ("D4", "female-only", 4), ("D5", "mixed", 8)]
BEDS = {f"{r}-{i:02d}": {"room": r, "type": t} for r, t, n in ROOMS for i in range(1, n + 1)}
FIRST = ["Ana", "Bo", "Chidi", "Dora", "Emil", "Femi", "Greta", "Hugo", "Isla", "Jae", "Kofi", "Lena", "Mats", "Noor", "Oli",
         "Priya", "Quinn", "Rosa", "Sven", "Tala"]
SURN = ["Abbott", "Baker", "Costa", "Dahl", "Evans", "Fox", "Gray", "Hale", "Ibsen", "Jones", "Kato", "Lopez"]


def _roster(seed, n):
    return [f"{FIRST[(seed * 3 + i * 7) % 20]} {SURN[(seed + i * 5) % 12]}" for i in range(n)]


def _night(date, seed, bookings):
    out = []
    for k, (kind, pref, beds, group) in enumerate(bookings):
        ref = f"HB-{seed}{k + 1:02d}"
        if kind == "group":
            note = f"Group booking for {group}: {beds} beds together in one room."
            guests = _roster(seed * 10 + k, beds)
        else:
            guests = _roster(seed * 10 + k, beds)
            note = f"{beds} bed{'s' if beds > 1 else ''}, {pref} dorm please" + (", lower bunk if possible." if k % 2 else ".")
        out.append({"ref": ref, "kind": kind, "pref": pref, "beds": beds, "group": group, "guests": guests, "note": note})
    occupied = [b for i, b in enumerate(sorted(BEDS)) if (i * 7 + seed) % 9 == 0]
    return {"date": date, "seed": seed, "bookings": out, "occupied": occupied}


INPUTS = {
    "hostel_01": _night("2026-10-09", 1, [("individual", "mixed", 2, None), ("group", "mixed", 5, "Tarn Valley ramblers"),
                                          ("individual", "mixed", 1, None), ("individual", "mixed", 3, None),
                                          ("individual", "female-only", 2, None)]),
    "hostel_02": _night("2026-10-10", 2, [("individual", "female-only", 2, None), ("group", "mixed", 4, "Bristol uni climbing club"),
                                          ("individual", "mixed", 1, None), ("individual", "mixed", 2, None),
                                          ("group", "mixed", 6, "Chorale de Lyon")]),
    "hostel_03": _night("2026-10-11", 3, [("individual", "mixed", 2, None), ("individual", "female-only", 3, None),
                                          ("group", "mixed", 6, "Hanse cycling tour"), ("individual", "mixed", 1, None),
                                          ("individual", "mixed", 2, None)]),
    "hostel_04": _night("2026-10-12", 4, [("individual", "mixed", 2, None), ("group", "mixed", 6, "St Kilda school trip"),
                                          ("individual", "female-only", 2, None), ("individual", "mixed", 3, None),
                                          ("individual", "mixed", 2, None)]),
    "hostel_05": _night("2026-10-13", 5, [("individual", "female-only", 1, None), ("individual", "mixed", 2, None),
                                          ("group", "mixed", 5, "Ostrava chess club"), ("individual", "mixed", 2, None),
                                          ("individual", "mixed", 3, None)]),
}
# two parties on the night of 2026-10-11 are led by people who share a surname
_h3 = INPUTS["hostel_03"]["bookings"]
_h3[3]["guests"][0] = "Sven " + _h3[1]["guests"][0].split()[-1]

REFS = [
    _night("2026-10-02", 6, [("individual", "mixed", 1, None), ("group", "mixed", 4, "Fell runners north"),
                             ("individual", "female-only", 2, None), ("individual", "mixed", 2, None), ("individual", "mixed", 1, None)]),
    _night("2026-10-03", 7, [("group", "mixed", 6, "Delft film society"), ("individual", "mixed", 2, None),
                             ("individual", "female-only", 3, None), ("individual", "mixed", 1, None), ("group", "mixed", 3, "Cork hurling juniors")]),
    _night("2026-10-04", 8, [("individual", "mixed", 3, None), ("individual", "female-only", 1, None),
                             ("individual", "mixed", 2, None), ("group", "mixed", 5, "Porto surf camp"), ("individual", "mixed", 2, None)]),
    _night("2026-10-05", 9, [("individual", "female-only", 2, None), ("individual", "mixed", 1, None),
                             ("group", "mixed", 4, "Galway poetry circle"), ("individual", "mixed", 2, None), ("individual", "mixed", 1, None)]),
]
CASES = [
    {"case": "hostel_01", "kind": "wrong_routing", "root": {"name": "route_room_type", "occurrence": 5},
     "failure": {"name": "validate_allocation"},
     "description": "The room-type router sends the last booking, two guests asking for a female-only dorm, to the mixed dorms."},
    {"case": "hostel_02", "kind": "subagent_wrong_entity", "root": {"name": "resolve_group", "occurrence": 2},
     "failure": {"name": "validate_allocation"},
     "description": "The group allocator sub-agent resolves Chorale de Lyon to the night's first group (Bristol uni climbing club) and beds that group's four members instead of the choir's six."},
    {"case": "hostel_03", "kind": "bad_memory_write", "root": {"name": "save_allocation"}, "failure": {"name": "validate_allocation"},
     "description": "The allocation memory is keyed by the lead guest's surname, so the two bookings led by a Hale collapse into one and HB-302 loses its beds."},
    {"case": "hostel_04", "kind": "truncated_result", "root": {"name": "issue_keycards"}, "failure": {"name": "validate_allocation"},
     "description": "The keycard service returns its first page of 12 cards for 15 allocated beds and the rest are never issued."},
    {"case": "hostel_05", "kind": "stale_data", "root": {"name": "load_allocation"}, "failure": {"name": "validate_allocation"},
     "description": "The allocation read back for check-in comes from the cache taken before the last booking was saved, so its three guests have no beds."},
]

MEMORY: dict = {}


def brain(inp):
    def read(req):
        text = kit.last_user(req)
        beds = int(re.search(r"(\d+) beds?", text).group(1))
        if text.startswith("Group booking"):
            return json.dumps({"room_type": "group", "beds": beds, "lower_bunks": 0})
        pref = "female-only" if "female-only" in text else "mixed"
        return json.dumps({"room_type": pref, "beds": beds, "lower_bunks": 1 if "lower bunk" in text else 0})

    def plan(req):
        p = kit.json_in(kit.last_user(req))
        return json.dumps({"room": p["room"], "guests": p["roster"]})

    def summary(req):
        p = kit.json_in(kit.last_user(req))
        return f"Tonight: {p['guests']} guests in {p['bookings']} bookings, {p['cards']} keycards issued."

    return kit.Brain({"read_note": read, "group_plan": plan, "summary": summary})


def record(inp: dict, server, path: Path) -> None:
    server.use(brain(inp))
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    ot = kit.Otel(AGENT)
    MEMORY.clear()
    try:
        with ot.span(AGENT, "AGENT", f"allocate beds for arrivals on {inp['date']}", **{"agent.name": AGENT}) as top:
            top.output = _run(ot, client, server.model, inp)
    except ValueError:
        pass  # the validator's rejection ends the trace with an error status; it is exported
    ot.write(path)


def _free(taken, occupied, room_type=None, room=None):
    return [b for b in sorted(BEDS) if b not in taken and b not in occupied
            and (room is None or BEDS[b]["room"] == room) and (room_type is None or BEDS[b]["type"] == room_type)]


def _run(ot, client, model, inp):
    with ot.span("intake", "CHAIN", {"date": inp["date"]}) as s:
        s.output = {"date": inp["date"], "bookings": len(inp["bookings"])}
    with ot.span("fetch_arrivals", "TOOL", {"date": inp["date"]}) as s:
        bookings = [dict(b) for b in inp["bookings"]]
        s.output = {"date": inp["date"], "arrivals": bookings}
    with ot.span("fetch_room_inventory", "TOOL", {"property": "harbour-street"}) as s:
        s.output = {"rooms": [{"room": r, "type": t, "beds": n} for r, t, n in ROOMS]}
    with ot.span("fetch_occupancy", "TOOL", {"date": inp["date"]}) as s:
        occupied = list(inp["occupied"])
        s.output = {"date": inp["date"], "continuing_guests_beds": occupied}
    taken: set = set()
    allocation = []
    for pos, b in enumerate(bookings):
        note = json.loads(ot.llm(client, model, "read_booking_note", "read_note",
                                 "Read the booking note: JSON with room_type, beds, lower_bunks.", b["note"]))
        with ot.span("route_room_type", "CHAIN", {"booking": b["ref"], **note}) as s:
            route = "group_allocator" if note["room_type"] == "group" else note["room_type"]
            if kit.on("hostel_01") and pos == len(bookings) - 1:
                route = "mixed"
            s.output = {"route": route}
        if route == "group_allocator":
            with ot.span("group_allocator", "AGENT", {"booking": b["ref"], "group": b["group"]}, **{"agent.name": "group_allocator"}) as sub:
                with ot.span("resolve_group", "CHAIN", {"booking": b["ref"], "group": b["group"]}) as s:
                    groups = [x for x in bookings if x["kind"] == "group"]
                    g = groups[0] if kit.on("hostel_02") else next(x for x in groups if x["ref"] == b["ref"])
                    s.output = {"group_ref": g["ref"], "group": g["group"]}
                with ot.span("fetch_group_roster", "TOOL", {"group_ref": g["ref"]}) as s:
                    s.output = {"group_ref": g["ref"], "roster": list(g["guests"])}
                    roster = s.output["roster"]
                room = next(r for r, t, n in ROOMS if t == "mixed" and len(_free(taken, occupied, room=r)) >= len(roster))
                gp = json.loads(ot.llm(client, model, "group_plan", "group_plan", "Place the whole group in one room.",
                                       json.dumps({"room": room, "roster": roster})))
                with ot.span("assign_beds", "TOOL", {"room": gp["room"], "guests": gp["guests"]}) as s:
                    beds = _free(taken, occupied, room=gp["room"])[:len(gp["guests"])]
                    s.output = {"booking": b["ref"], "beds": [{"bed": bed, "guest": gu} for bed, gu in zip(beds, gp["guests"])]}
                sub.output = s.output
        else:
            with ot.span("assign_beds", "TOOL", {"room_type": route, "guests": b["guests"]}) as s:
                beds = _free(taken, occupied, room_type=route)[:len(b["guests"])]
                s.output = {"booking": b["ref"], "beds": [{"bed": bed, "guest": gu} for bed, gu in zip(beds, b["guests"])]}
        taken.update(x["bed"] for x in s.output["beds"])
        allocation.append(s.output)
    with ot.span("save_allocation", "TOOL", {"date": inp["date"], "bookings": len(allocation)}) as s:
        snapshot = {a["booking"]: a["beds"] for a in allocation[:-1]}
        store = {}
        for a in allocation:
            lead = a["beds"][0]["guest"].split()[-1] if kit.on("hostel_03") else a["booking"]
            store[lead] = {"booking": a["booking"], "beds": a["beds"]}
        MEMORY["allocation"] = store
        MEMORY["cache"] = {k: {"booking": k, "beds": v} for k, v in snapshot.items()}
        s.output = {"saved": sorted(store)}
    all_beds = [x["bed"] for a in allocation for x in a["beds"]]
    with ot.span("issue_keycards", "TOOL", {"beds": all_beds}) as s:
        cards = [{"bed": bed, "card": f"KC-{inp['seed']}{i:03d}"} for i, bed in enumerate(all_beds)]
        if kit.on("hostel_04"):
            cards = cards[:12]
        s.output = {"cards": cards}
    with ot.span("load_allocation", "TOOL", {"date": inp["date"]}) as s:
        loaded = MEMORY["cache"] if kit.on("hostel_05") else MEMORY["allocation"]
        s.output = {"allocation": list(loaded.values())}
        loaded_alloc = s.output["allocation"]
    text = ot.llm(client, model, "checkin_summary", "summary", "Summarise tonight's check-in for the night desk.",
                  json.dumps({"guests": sum(len(a["beds"]) for a in loaded_alloc), "bookings": len(loaded_alloc), "cards": len(cards)}))
    with ot.span("validate_allocation", "CHAIN", {"date": inp["date"], "summary": text}) as s:
        s.output = _validate(inp, bookings, occupied, loaded_alloc, cards)
    return s.output


def _validate(inp, bookings, occupied, loaded, cards):
    by_ref = {a["booking"]: a for a in loaded}
    seen = set()
    carded = {c["bed"] for c in cards}
    for b in bookings:
        a = by_ref.get(b["ref"])
        if a is None or len(a["beds"]) != b["beds"]:
            got = 0 if a is None else len(a["beds"])
            raise ValueError(f"{inp['date']}: booking {b['ref']} has {got} beds in the allocation, booked {b['beds']}")
        names = {x["guest"] for x in a["beds"]}
        if names != set(b["guests"]):
            raise ValueError(f"{inp['date']}: booking {b['ref']} beds guests {sorted(names)} not on its roster")
        rooms = {BEDS[x["bed"]]["room"] for x in a["beds"]}
        if b["pref"] == "female-only" and any(BEDS[x["bed"]]["type"] != "female-only" for x in a["beds"]):
            raise ValueError(f"{inp['date']}: booking {b['ref']} asked for a female-only dorm, allocated {sorted(rooms)}")
        if b["kind"] == "group" and len(rooms) != 1:
            raise ValueError(f"{inp['date']}: group {b['ref']} split over rooms {sorted(rooms)}")
        for x in a["beds"]:
            if x["bed"] in seen or x["bed"] in occupied:
                raise ValueError(f"{inp['date']}: bed {x['bed']} allocated twice")
            seen.add(x["bed"])
            if x["bed"] not in carded:
                raise ValueError(f"{inp['date']}: no keycard issued for bed {x['bed']} ({b['ref']})")
    return {"date": inp["date"], "status": "ready for check-in", "beds": len(seen)}
