"""Puppet workshop (otlp route): plan a marionette commission, order timber, quote and confirm with the theatre.
Traced with OpenTelemetry spans in the OpenInference conventions."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

from .common import Case, OtlpTrace, last_user_text, system_text, write_otlp
from .kit import active

AGENT = "puppet-workshop-planner"
ROUTE = "otlp"
EXT = "json"
BASE_URL = ""

WORKSHOP = {"account": "MER-4471", "address": "Unit 3, Tanner Yard, Bristol BS2"}
SHEETS = {
    "C-881": [("Punch", 62, 11), ("Judy", 58, 11), ("Constable", 60, 9), ("Crocodile", 75, 7), ("Baby", 30, 5)],
    "C-902": [("Pinocchio", 70, 13), ("Geppetto", 66, 11), ("Cricket", 24, 6), ("Fox", 55, 9)],
    "C-760": [("Anansi", 50, 9), ("Tiger", 72, 8), ("Snake", 90, 12)],
    "C-915": [("Mermaid", 64, 10), ("Sea Witch", 68, 11), ("Crab", 26, 8)],
    "C-933": [("Old Man", 60, 11), ("Turnip", 40, 3), ("Dog", 38, 8), ("Cat", 34, 8)],
    "C-947": [("Dragon", 95, 14), ("Knight", 63, 11), ("Princess", 60, 11), ("Jester", 57, 12)],
}
PAINTS = {
    "C-881": ["Flake White No.1", "Vermilion Hue", "Prussian Blue"],
    "C-902": ["Raw Umber", "Titanium White", "Flake White No.1"],
    "C-760": ["Yellow Ochre", "Ivory Black"], "C-915": ["Cobalt Teal", "Titanium White"],
    "C-933": ["Burnt Sienna", "Sap Green"], "C-947": ["Cadmium Red Hue", "Flake White No.1"],
}
LEAD = {"Flake White No.1"}
INPUTS = {
    "punch": {"commission": "C-881", "theatre": "Seafront Punch & Judy", "theatre_address": "Pier Kiosk 2, Weymouth DT4",
              "children_handle": True, "start": "2026-07-06"},
    "pinocchio": {"commission": "C-902", "theatre": "Little Angel Theatre", "theatre_address": "14 Dagmar Passage, London N1",
                  "children_handle": True, "start": "2026-08-03"},
    "ref_anansi": {"commission": "C-760", "theatre": "Tropic Puppet Co", "theatre_address": "2 Mill Lane, Leeds LS2",
                   "children_handle": False, "start": "2026-05-04"},
    "ref_mermaid": {"commission": "C-915", "theatre": "Harbourside Marionettes", "theatre_address": "Quay St, Bristol BS1",
                    "children_handle": True, "start": "2026-09-07"},
    "ref_turnip": {"commission": "C-933", "theatre": "Village Hall Puppets", "theatre_address": "Church Rd, Frome BA11",
                   "children_handle": True, "start": "2026-06-01"},
    "ref_dragon": {"commission": "C-947", "theatre": "Castle Theatre", "theatre_address": "Castle Green, Ludlow SY8",
                   "children_handle": False, "start": "2026-10-05"},
}
HOURS_PER_WEEK = 30


class ProcurementError(Exception):
    """The theatre's procurement portal refused the commission confirmation."""


def policy(request):
    sys_t, user = system_text(request), last_user_text(request)
    if "plan the carving" in sys_t:
        c = json.loads(user.split("CHARACTER:", 1)[1])
        body = [round(c["height_cm"] * 0.4, 1), round(c["height_cm"] * 0.18, 1), round(c["height_cm"] * 0.14, 1)]
        head = [round(c["height_cm"] * 0.16, 1)] * 3
        return json.dumps({"character": c["name"], "body_cm": body, "head_cm": head, "hours": 6 + c["joints"] * 1.5})
    if "write the quote" in sys_t:
        f = json.loads(user.split("FACTS:", 1)[1])
        deliver = f["ready"]
        if active("puppet.hv_delivery"):
            deliver = (date.fromisoformat(f["start"]) + timedelta(days=14)).isoformat()
        return json.dumps({"commission": f["commission"], "price_gbp": round(f["hours"] * 42 + f["timber_gbp"], 2),
                           "delivery": deliver, "figures": f["figures"]})
    return "?"


def _paint_register(paints: list[str]) -> dict:
    if active("puppet.se_register"):
        raise ConnectionError("paint safety register: 502 Bad Gateway")
    return {p: ("lead carbonate" if p in LEAD else "clear") for p in paints}


def _run(tr: OtlpTrace, key: str) -> None:
    job = INPUTS[key]
    with tr.span(AGENT, "AGENT", job, agent__name=AGENT) as root:
        with tr.span("receive_commission", "CHAIN", job) as s:
            com = s.out(dict(job))
        with tr.span("fetch_character_sheets", "TOOL", {"commission": com["commission"]}, tool__name="fetch_character_sheets") as s:
            rows = [{"name": n, "height_cm": h, "joints": j} for n, h, j in SHEETS[com["commission"]]]
            if active("puppet.tr_sheets"):
                rows = rows[:3]
            sheets = s.out({"commission": com["commission"], "characters": rows})
        plans = []
        with tr.span("carving_planner", "AGENT", sheets, agent__name="carving_planner") as planner:
            for ch in sheets["characters"]:
                text = tr.llm("plan_carving", BASE_URL, "You plan the carving of one marionette: blocks and hours.",
                              "CHARACTER:" + json.dumps(ch))
                with tr.span("size_block", "CHAIN", text) as s:
                    plan = json.loads(text)
                    per_in = 25.4 if active("puppet.ue_inches") else 2.54
                    plan["body_in"] = [round(v / per_in, 2) for v in plan["body_cm"]]
                    plan["head_in"] = [round(v / per_in, 2) for v in plan["head_cm"]]
                    plans.append(s.out(plan))
            planner.out({"figures": len(plans), "hours": sum(p["hours"] for p in plans)})
        with tr.span("vet_paints", "CHAIN", {"paints": PAINTS[com["commission"]], "children_handle": com["children_handle"]}) as s:
            paints = list(PAINTS[com["commission"]])
            try:
                verdicts = _paint_register(paints)
                if com["children_handle"]:
                    paints = ["Titanium White" if verdicts[p] == "lead carbonate" else p for p in paints]
            except ConnectionError:
                pass
            s.out({"paints": paints})
        with tr.span("build_timber_request", "CHAIN", {"plans": len(plans)}) as s:
            deliver_to = com["theatre_address"] if active("puppet.wta_deliver") else WORKSHOP["address"]
            request = s.out({"account": WORKSHOP["account"], "species": "lime", "deliver_to": deliver_to,
                             "blocks_in": [p["body_in"] for p in plans] + [p["head_in"] for p in plans]})
        with tr.span("order_timber", "TOOL", request, tool__name="order_timber") as s:
            volume = sum(a * b * c for a, b, c in request["blocks_in"])
            timber = s.out({"order": f"TO-{com['commission'][2:]}-{len(request['blocks_in'])}", "deliver_to": request["deliver_to"],
                            "blocks": request["blocks_in"], "board_in3": round(volume, 1), "gbp": round(12 + volume * 0.05, 2)})
        with tr.span("schedule_build", "CHAIN", {"start": com["start"], "plans": [p["hours"] for p in plans]}) as s:
            hours = sum(p["hours"] for p in plans)
            weeks = -(-hours // HOURS_PER_WEEK)
            sched = s.out({"hours": hours, "weeks": weeks,
                           "ready": (date.fromisoformat(com["start"]) + timedelta(weeks=weeks)).isoformat()})
        quote_text = tr.llm("write_quote", BASE_URL, "You write the quote for the theatre as JSON.",
                            "FACTS:" + json.dumps({"commission": com["commission"], "hours": sched["hours"], "ready": sched["ready"],
                                                   "start": com["start"], "timber_gbp": timber["gbp"], "figures": len(plans)}))
        with tr.span("confirm_commission", "TOOL", {"commission": com["commission"], "quote": quote_text},
                     tool__name="confirm_commission") as s:
            s.out(_confirm(com, json.loads(quote_text), plans, paints, timber, sched))
        root.out({"commission": com["commission"], "confirmed": True})


def _confirm(com: dict, quote: dict, plans: list[dict], paints: list[str], timber: dict, sched: dict) -> dict:
    errs = []
    cast = {n: h for n, h, _ in SHEETS[com["commission"]]}
    if quote["figures"] != len(cast):
        errs.append(f"quote covers {quote['figures']} figures; commission {com['commission']} casts {len(cast)}")
    for p in plans:
        need = round(cast[p["character"]] * 0.35 / 2.54, 1)
        if p["body_in"][0] < need:
            errs.append(f"{p['character']}: body block {p['body_in'][0]} in is shorter than {need} in for a {cast[p['character']]} cm figure")
    if com["children_handle"]:
        for paint in paints:
            if paint in LEAD:
                errs.append(f"paint '{paint}' (lead carbonate) is not permitted on figures handled by children")
    if timber["deliver_to"] != WORKSHOP["address"]:
        errs.append(f"timber order {timber['order']} ships to '{timber['deliver_to']}', not the workshop on file")
    if quote["delivery"] < sched["ready"]:
        errs.append(f"quoted delivery {quote['delivery']} is before the build can finish ({sched['weeks']} weeks from {com['start']})")
    if errs:
        raise ProcurementError("procurement portal rejected confirmation (HTTP 400): " + "; ".join(errs[:4]))
    return {"po": f"PO-{com['commission']}", "price_gbp": quote["price_gbp"], "delivery": quote["delivery"]}


def record_many(keys: list[str], path: Path) -> None:
    tr = OtlpTrace(AGENT)
    for key in keys:
        try:
            _run(tr, key)
        except ProcurementError:
            pass
    write_otlp(tr.take(), path)


def record(key: str, path: Path) -> None:
    record_many([key], path)


REFS = ["ref_anansi", "ref_mermaid", "ref_turnip", "ref_dragon"]


def _c(n, kind, fid, key, root, occ, desc):
    return Case(f"zo_puppet_{n}", AGENT, ROUTE, kind, fid, key, root, occ, "confirm_commission", 1, desc)


CASES = [
    _c(1, "truncated_result", "puppet.tr_sheets", "punch", "fetch_character_sheets", 1,
       "fetch_character_sheets returns only the first three of the five characters."),
    _c(2, "swallowed_error", "puppet.se_register", "punch", "vet_paints", 1,
       "vet_paints swallows a 502 from the paint safety register and keeps the lead white on a children's set."),
    _c(3, "wrong_tool_args", "puppet.wta_deliver", "pinocchio", "build_timber_request", 1,
       "build_timber_request sets the timber delivery address to the theatre instead of the workshop."),
    _c(4, "hallucinated_value", "puppet.hv_delivery", "pinocchio", "write_quote", 1,
       "the quote model states a delivery date two weeks after the start, which no schedule figure supports."),
    _c(5, "unit_error", "puppet.ue_inches", "pinocchio", "size_block", 1,
       "size_block divides centimetres by 25.4 instead of 2.54, so every body block is ordered ten times too short."),
]
