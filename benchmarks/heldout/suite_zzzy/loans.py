"""Tapestry conservator's loans: trajdebug SDK, the longest agent. A model plans the checks, a condition
sub-agent per tapestry (resolve, report fetch retried on a dropped connection, model fragility rating, note in
run.state), two venue tools in parallel, a display router, a model choosing valuation tool calls in a loop,
crate building, courier booking and the loan committee's check; 30-62 steps."""
from __future__ import annotations

import json
import re

import trajdebug

from common import chat, last_user

NAME = "tapestry-loans"
ROUTE = "sdk"
DOMAIN = "tapestry conservator's loans"
SHAPE = ("SDK: model plan -> parser -> per tapestry a condition sub-agent (resolve, retried report fetch, model "
         "rating, run.state note) -> parallel venue climate + courier quote -> per tapestry display router + crate -> "
         "model-chosen valuation calls -> courier booking -> committee check; 30-62 steps")
SWITCH = None
_SERVER = [None]

OBJECTS = {
    "T-101": {"title": "Hunt of the Unicorn II", "width_m": 3.6, "tears": 0, "value_eur": 2_400_000},
    "T-102": {"title": "Hunt of the Unicorn IV", "width_m": 3.9, "tears": 3, "value_eur": 2_900_000},
    "T-103": {"title": "Hunt of the Unicorn VI", "width_m": 3.4, "tears": 1, "value_eur": 2_100_000},
    "T-210": {"title": "Verdure with Herons", "width_m": 2.8, "tears": 0, "value_eur": 650_000},
    "T-211": {"title": "Verdure with Swans", "width_m": 2.9, "tears": 2, "value_eur": 720_000},
    "T-305": {"title": "Triumph of Fame", "width_m": 4.4, "tears": 4, "value_eur": 3_800_000},
    "T-306": {"title": "Triumph of Time", "width_m": 4.3, "tears": 0, "value_eur": 3_500_000},
    "T-412": {"title": "Months: April", "width_m": 2.2, "tears": 0, "value_eur": 410_000},
    "T-413": {"title": "Months: May", "width_m": 2.3, "tears": 1, "value_eur": 430_000},
    "T-414": {"title": "Months: June", "width_m": 2.2, "tears": 5, "value_eur": 460_000},
}
GBP_PER_EUR = 0.85
VENUES = {"Musee de Cluny, Paris": {"rh": 50, "lux": 50, "km": 310}, "Burrell Collection, Glasgow": {"rh": 52, "lux": 50, "km": 980},
          "Rijksmuseum, Amsterdam": {"rh": 48, "lux": 50, "km": 210}, "Museo del Tessuto, Prato": {"rh": 55, "lux": 50, "km": 1150},
          "MAK, Vienna": {"rh": 50, "lux": 50, "km": 1080}}

INPUTS = [
    {"loan": "LN-2026-14", "venue": "Musee de Cluny, Paris", "titles": ["Hunt of the Unicorn II", "Hunt of the Unicorn IV", "Hunt of the Unicorn VI"],
     "declared_eur": 7_400_000},
    {"loan": "LN-2026-15", "venue": "Burrell Collection, Glasgow", "titles": ["Verdure with Herons", "Verdure with Swans"], "declared_eur": 1_370_000},
    {"loan": "LN-2026-16", "venue": "Rijksmuseum, Amsterdam", "titles": ["Triumph of Fame", "Triumph of Time"], "declared_eur": 7_300_000},
    {"loan": "LN-2026-17", "venue": "MAK, Vienna", "titles": ["Months: April", "Months: May", "Months: June", "Verdure with Herons",
                                                                 "Hunt of the Unicorn II", "Triumph of Time"], "declared_eur": 7_850_000},
    {"loan": "LN-2026-18", "venue": "Museo del Tessuto, Prato", "titles": ["Months: May", "Months: June", "Verdure with Swans"],
     "declared_eur": 1_610_000},
]

CASES = [
    {"id": "zzzy-loans-1", "input": 1, "switch": "plan", "fault_kind": "plan_error",
     "root": ("plan_checks", 1), "failure": ("book_courier", 1),
     "description": "The planning model leaves the venue climate survey out of the plan, so the courier booking has no climate certificate to attach."},
    {"id": "zzzy-loans-2", "input": 0, "switch": "series", "fault_kind": "context_pollution",
     "root": ("fetch_condition_report", 3), "failure": ("committee_check", 1),
     "description": "The condition report fetch for Hunt of the Unicorn IV returns the whole series' reports, and the rating model reads the first, tear-free one."},
    {"id": "zzzy-loans-3", "input": 3, "switch": "resolve", "fault_kind": "subagent_wrong_entity",
     "root": ("resolve_object", 3), "failure": ("committee_check", 1),
     "description": "The condition sub-agent resolves Months: June to the catalogue entry of Months: April, so its report and rating are for the other hanging."},
    {"id": "zzzy-loans-4", "input": 2, "switch": "currency", "fault_kind": "wrong_tool_args",
     "root": ("choose_action", 2), "failure": ("committee_check", 1),
     "description": "The valuation model asks for the value of Triumph of Time in GBP while the loan is declared in EUR."},
    {"id": "zzzy-loans-5", "input": 4, "switch": "route", "fault_kind": "wrong_routing",
     "root": ("route_display", 2), "failure": ("build_crate", 2),
     "description": "The display router sends Months: June, with five open tears, to a vertical hang instead of the slant board."},
]


def policy(request):
    system = request.body["messages"][0]["content"]
    user = last_user(request)
    if system.startswith("Plan"):
        checks = ["condition", "climate", "courier", "valuation"]
        if SWITCH == "plan":
            checks.remove("climate")
        return json.dumps({"checks": checks})
    if system.startswith("Rate"):
        reports = json.loads(user)["reports"]
        tears = reports[0]["open_tears"]
        return json.dumps({"fragility": "fragile" if tears >= 2 else "sound", "open_tears": tears})
    if system.startswith("Value"):
        state = json.loads(user)
        left = [o for o in state["objects"] if o not in state["valued"]]
        if not left:
            return json.dumps({"tool": "done"})
        cur = "EUR"
        if SWITCH == "currency" and OBJECTS[left[0]]["title"] == "Triumph of Time":
            cur = "GBP"
        return json.dumps({"tool": "insurance_value", "args": {"object": left[0], "currency": cur}})
    return "{}"


@trajdebug.step(kind="input")
def loan_request(request: dict) -> dict:
    return request


@trajdebug.step(kind="llm")
def plan_checks(request: dict) -> str:
    return chat(_SERVER[0], "Plan the loan checks; answer JSON {checks: [...]}", json.dumps(request))


@trajdebug.step(kind="parse")
def read_plan(text: str) -> list:
    return json.loads(text)["checks"]


@trajdebug.step(kind="other")
def resolve_object(title: str) -> str:
    key = title.split(":")[0] if SWITCH == "resolve" and title.endswith("June") else title
    return next(k for k, v in OBJECTS.items() if v["title"].startswith(key))


_FETCHES = {"n": 0}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def fetch_condition_report(object_id: str) -> dict:
    _FETCHES["n"] += 1
    if _FETCHES["n"] == 2:
        raise ConnectionError("collection database closed the connection")
    o = OBJECTS[object_id]
    report = {"object": object_id, "title": o["title"], "open_tears": o["tears"], "surveyed": "2026-03"}
    if SWITCH == "series" and o["title"] == "Hunt of the Unicorn IV":
        series = [{"object": k, "title": v["title"], "open_tears": v["tears"], "surveyed": "2026-03"}
                  for k, v in OBJECTS.items() if v["title"].startswith("Hunt")]
        return {"reports": series}
    return {"reports": [report]}


@trajdebug.step(kind="llm")
def rate_fragility(report: dict) -> dict:
    return json.loads(chat(_SERVER[0], "Rate the tapestry's fragility from its condition report; JSON.", json.dumps(report)))


@trajdebug.step(kind="state")
def note_condition(title: str, object_id: str, rating: dict) -> dict:
    notes = trajdebug.current_run().state.setdefault("condition", {})
    notes[title] = {"object": object_id, **rating}
    return notes[title]


@trajdebug.step(kind="agent")
def condition_assessor(title: str) -> dict:
    object_id = resolve_object(title)
    report = fetch_condition_report(object_id)
    rating = rate_fragility(report)
    return note_condition(title, object_id, rating)


@trajdebug.step(kind="tool")
def venue_climate(venue: str) -> dict:
    v = VENUES[venue]
    return {"venue": venue, "rh_percent": v["rh"], "lux": v["lux"], "certificate": "CL-" + venue[:3].upper()}


@trajdebug.step(kind="tool")
def courier_quote(venue: str, crates: int) -> dict:
    return {"venue": venue, "crates": crates, "eur": 1800 + VENUES[venue]["km"] * 4 * crates}


@trajdebug.step(kind="condition")
def route_display(title: str, note: dict) -> str:
    mode = "slant_board" if note["fragility"] == "fragile" else "vertical_hang"
    if SWITCH == "route" and title == "Months: June":
        mode = "vertical_hang"
    return mode


@trajdebug.step(kind="tool")
def build_crate(title: str, mode: str, width_m: float, open_tears: int) -> dict:
    if mode == "vertical_hang" and open_tears >= 2:
        raise RuntimeError(f"crate for {title}: a roll crate for hanging cannot take a tapestry with {open_tears} open tears; needs a flat tray")
    return {"title": title, "crate": "flat tray" if mode == "slant_board" else "roll", "length_m": round(width_m + 0.4, 1)}


@trajdebug.step(kind="llm")
def choose_action(state: dict) -> dict:
    return json.loads(chat(_SERVER[0], "Value each object for insurance; answer one tool call as JSON.", json.dumps(state)))


def insurance_value(object: str, currency: str) -> dict:
    eur = OBJECTS[object]["value_eur"]
    return {"object": object, "currency": currency, "value": round(eur * (GBP_PER_EUR if currency == "GBP" else 1))}


@trajdebug.step(kind="other")
def sum_valuation(values: list) -> dict:
    return {"total": sum(v["value"] for v in values), "lines": len(values)}


@trajdebug.step(kind="tool")
def book_courier(loan: str, quote: dict, climate: dict | None, crates: list) -> dict:
    if climate is None:
        raise RuntimeError(f"courier booking for {loan}: no climate certificate for the venue, the courier will not load textiles")
    return {"loan": loan, "booking": f"CR-{loan[-2:]}", "crates": len(crates)}


@trajdebug.step(kind="other")
def committee_check(request: dict, valuation: dict, crates: list) -> dict:
    notes = trajdebug.current_run().state["condition"]
    for title in request["titles"]:
        o = next(v for v in OBJECTS.values() if v["title"] == title)
        if notes[title]["open_tears"] != o["tears"]:
            raise AssertionError(f"{title}: condition note gives {notes[title]['open_tears']} open tears, the object file records {o['tears']}")
    if valuation["total"] != request["declared_eur"]:
        raise AssertionError(f"{request['loan']}: insured total {valuation['total']:,} does not match the declared {request['declared_eur']:,} EUR")
    return {"approved": True}


@trajdebug.step(kind="output")
def loan_agreement(request: dict, booking: dict) -> str:
    return f"Loan {request['loan']} to {request['venue']} approved; courier {booking['booking']}."


def run_one(inp, server, path):
    _SERVER[0] = server
    _FETCHES["n"] = 0
    with trajdebug.run(NAME, path=path, task=f"loan {inp['loan']}"):
        req = loan_request(inp)
        checks = read_plan(plan_checks(req))
        notes = {t: condition_assessor(t) for t in req["titles"]}
        climate = None
        with trajdebug.ContextThreadPoolExecutor(max_workers=2) as pool:
            fq = pool.submit(courier_quote, req["venue"], len(req["titles"]))
            fc = pool.submit(venue_climate, req["venue"]) if "climate" in checks else None
            quote = fq.result()
            climate = fc.result() if fc else None
        crates = []
        for t in req["titles"]:
            mode = route_display(t, notes[t])
            o = next(v for v in OBJECTS.values() if v["title"] == t)
            crates.append(build_crate(t, mode, o["width_m"], notes[t]["open_tears"]))
        ids = [notes[t]["object"] for t in req["titles"]]
        values, valued = [], []
        while True:
            action = choose_action({"objects": ids, "valued": valued})
            if action["tool"] == "done":
                break
            with trajdebug.step(action["tool"], kind="tool", input=action["args"]) as s:
                s.output = insurance_value(**action["args"])
            values.append(s.output)
            valued.append(action["args"]["object"])
        valuation = sum_valuation(values)
        booking = book_courier(req["loan"], quote, climate, crates)
        committee_check(req, valuation, crates)
        loan_agreement(req, booking)
