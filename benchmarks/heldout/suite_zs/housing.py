"""Student housing allocation (OpenTelemetry / OpenInference spans): route an application to a pool, check the
deposit, read the case notes, let a room-matcher sub-agent pick a room across halls, and submit the allocation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openai import OpenAI

from .common import Case, Spans, json_policy
from .kit import active

AGENT = "student-housing-allocator"
ROUTE = "otlp"
DOMAIN = "student housing allocation"
SHAPE = "intake, pool router, deposit check, notes retriever, room-matcher sub-agent (inventory per hall + model choice), allocation API"

ROOMS = {
    "Alder Hall": {"pool": "first_year", "rooms": {"AH-G02": (158.0, True), "AH-104": (149.0, False), "AH-211": (152.0, False)}},
    "Cedar Court": {"pool": "first_year", "rooms": {"CC-G01": (171.0, True), "CC-118": (162.0, False), "CC-305": (166.0, False)}},
    "Elm Row House": {"pool": "first_year", "rooms": {"ER-014": (139.0, False), "ER-022": (141.0, False)}},
    "Birch Court": {"pool": "returner", "rooms": {"BC-101": (128.0, False), "BC-G03": (135.0, True), "BC-207": (131.0, False)}},
    "Hazel Yard": {"pool": "returner", "rooms": {"HY-012": (145.0, False), "HY-G01": (150.0, True)}},
}
LET = {"AH-104": "S-88012"}  # let yesterday evening
STUDENTS = {
    "S-90031": {"year": 1, "access": False, "deposit_due": 0.0},
    "S-90057": {"year": 1, "access": False, "deposit_due": 250.0},
    "S-90102": {"year": 1, "access": True, "deposit_due": 0.0},
    "S-90140": {"year": 1, "access": False, "deposit_due": 0.0},
    "S-70210": {"year": 2, "access": False, "deposit_due": 0.0},
    "S-70388": {"year": 3, "access": True, "deposit_due": 0.0},
}
INPUTS = {"A": {"student": "S-90031", "halls": ["Alder Hall", "Cedar Court"], "max_rent": 165.0},
          "B": {"student": "S-90057", "halls": ["Cedar Court", "Elm Row House"], "max_rent": 170.0}}
REFS = [{"student": "S-90102", "halls": ["Alder Hall", "Cedar Court"], "max_rent": 175.0},
        {"student": "S-90140", "halls": ["Elm Row House", "Alder Hall"], "max_rent": 150.0},
        {"student": "S-70210", "halls": ["Birch Court", "Hazel Yard"], "max_rent": 140.0},
        {"student": "S-70388", "halls": ["Hazel Yard", "Birch Court"], "max_rent": 160.0}]
CASES = [
    Case("zs_housing_1", "hsg.rent", "hallucinated_value", "B", "choose_room", 1, "llm", "submit_allocation", 1,
         "The room-matcher model states a weekly rent for its chosen room that the inventory does not give."),
    Case("zs_housing_2", "hsg.snapshot", "stale_data", "A", "fetch_room_inventory", 1, "tool", "submit_allocation", 1,
         "The inventory for the first hall comes from yesterday's snapshot and still lists a room let since."),
    Case("zs_housing_3", "hsg.pool", "wrong_routing", "A", "route_application", 1, "other", "submit_allocation", 1,
         "The router sends a first-year application to the returners' pool."),
    Case("zs_housing_4", "hsg.deposit", "swallowed_error", "B", "check_deposit", 1, "tool", "submit_allocation", 1,
         "The deposit check catches a finance API timeout and reports the deposit as paid, so it is never charged."),
    Case("zs_housing_5", "hsg.notes", "context_pollution", "A", "search_applicant_notes", 1, "retrieval", "submit_allocation", 1,
         "The notes search brings in another student's accessibility note, and the matcher picks an accessible room."),
]


def _choose(p: dict) -> dict:
    need_access = any("accessible" in n for n in p["notes"])
    for hall in p["halls"]:
        rooms = [r for r in p["inventory"][hall] if r["accessible"] == need_access and r["rent"] <= p["max_rent"]]
        if rooms:
            best = min(rooms, key=lambda r: (r["rent"], r["room"]))
            rent = best["rent"] - 13.0 if active("hsg.rent") else best["rent"]
            return {"hall": hall, "room": best["room"], "weekly_rent": rent}
    return {"hall": None, "room": None, "weekly_rent": None}


policy = json_policy({"choose_room": _choose})


def _submit(offer: dict) -> dict:
    st = STUDENTS[offer["student"]]
    if st["deposit_due"] > 0 and offer["student"] not in _PAID:
        raise RuntimeError(f"allocation API 402: {offer['student']} has an unpaid deposit of {st['deposit_due']:.2f} GBP; "
                           f"allocation blocked")
    hall = ROOMS[offer["hall"]]
    if hall["pool"] == "returner" and st["year"] == 1:
        raise RuntimeError(f"allocation API 422: {offer['hall']} rooms are for returning students; {offer['student']} is in year 1")
    if offer["room"] in LET:
        raise RuntimeError(f"allocation API 409: room {offer['room']} is already let to {LET[offer['room']]}")
    rent, accessible = hall["rooms"][offer["room"]]
    if accessible and not st["access"]:
        raise RuntimeError(f"allocation API 422: room {offer['room']} is reserved for students with an accessibility "
                           f"assessment; {offer['student']} has none")
    if abs(rent - offer["weekly_rent"]) > 0.005:
        raise RuntimeError(f"allocation API 422: weekly rent {offer['weekly_rent']:.2f} GBP does not match the 2026/27 "
                           f"rent of {rent:.2f} GBP for {offer['room']}")
    return {"status": "allocated", "offer": f"OF-{offer['student']}-{offer['room']}"}


_PAID: set = set()


def record(inp: dict, dest: Path, server: Any) -> None:
    _PAID.clear()
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    sp = Spans(AGENT)
    try:
        with sp.span(AGENT, "AGENT", inp, **{"agent.name": AGENT}) as top:
            with sp.span("read_application", "CHAIN", inp) as b:
                app = b["out"] = {**inp, "year": STUDENTS[inp["student"]]["year"]}
            with sp.span("lookup_student_record", "TOOL", {"student": app["student"]},
                         **{"tool.name": "lookup_student_record"}) as b:
                b["out"] = {"student": app["student"], "year": app["year"], "status": "enrolled", "course_weeks": 42}
            with sp.span("verify_identity", "TOOL", {"student": app["student"]}, **{"tool.name": "verify_identity"}) as b:
                b["out"] = {"student": app["student"], "verified": True, "method": "university SSO"}
            with sp.span("route_application", "CHAIN", {"student": app["student"], "year": app["year"]}) as b:
                pool = "first_year" if app["year"] == 1 else "returner"
                if active("hsg.pool"):
                    pool = "returner"
                route = b["out"] = {"pool": pool}
            with sp.span("check_deposit", "TOOL", {"student": app["student"]}, **{"tool.name": "check_deposit"}) as b:
                try:
                    if active("hsg.deposit"):
                        raise TimeoutError("finance API did not answer within 3 s")
                    due = STUDENTS[app["student"]]["deposit_due"]
                    b["out"] = {"student": app["student"], "deposit_paid": due == 0, "due_gbp": due}
                except TimeoutError:
                    b["out"] = {"student": app["student"], "deposit_paid": True, "due_gbp": 0.0}
                deposit = b["out"]
            with sp.span("search_applicant_notes", "RETRIEVER", {"query": f"notes for {app['student']}"}) as b:
                notes = [f"{app['student']}: prefers a quiet floor"]
                if STUDENTS[app["student"]]["access"]:
                    notes.append(f"{app['student']}: needs an accessible ground-floor room (assessment on file)")
                if active("hsg.notes"):
                    notes.append("S-90102: needs an accessible ground-floor room (assessment on file)")
                b["out"] = {"documents": notes}
            if not deposit["deposit_paid"]:
                with sp.span("charge_deposit", "TOOL", {"student": app["student"], "amount_gbp": deposit["due_gbp"]},
                             **{"tool.name": "charge_deposit"}) as b:
                    _PAID.add(app["student"])
                    b["out"] = {"student": app["student"], "charged_gbp": deposit["due_gbp"], "card": "on file"}
            with sp.span("fetch_term_calendar", "TOOL", {"term": "2026/27"}, **{"tool.name": "fetch_term_calendar"}) as b:
                b["out"] = {"term": "2026/27", "arrival": "2026-09-19", "weeks": 42}
            with sp.span("room_matcher", "AGENT", {"halls": app["halls"], "pool": route["pool"]},
                         **{"agent.name": "room_matcher"}) as sub:
                inventory = {}
                halls = app["halls"] if route["pool"] == "first_year" else [h for h, v in ROOMS.items() if v["pool"] == "returner"]
                for i, hall in enumerate(halls):
                    with sp.span("fetch_room_inventory", "TOOL", {"hall": hall, "pool": route["pool"]},
                                 **{"tool.name": "fetch_room_inventory"}) as b:
                        let = {} if i == 0 and active("hsg.snapshot") else LET
                        rooms = [{"room": r, "rent": v[0], "accessible": v[1]} for r, v in ROOMS[hall]["rooms"].items()
                                 if r not in let]
                        inventory[hall] = b["out"] = rooms
                    with sp.span("score_hall", "CHAIN", {"hall": hall, "rooms": len(rooms)}) as b:
                        b["out"] = {"hall": hall, "preference_rank": i + 1, "free_rooms": len(rooms)}
                choice = sp.llm("choose_room", client, "choose_room", {"halls": halls, "inventory": inventory,
                                                                      "notes": notes, "max_rent": app["max_rent"]})
                sub["out"] = choice
            offer = {"student": app["student"], **choice, "term": "2026/27", "weeks": 42}
            with sp.span("submit_allocation", "TOOL", offer, **{"tool.name": "submit_allocation"}) as b:
                b["out"] = _submit(offer)
            top["out"] = b["out"]
    except RuntimeError:
        pass
    sp.save(dest)
