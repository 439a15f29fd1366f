"""Wind tunnel test bookings (recording SDK): plan a test matrix, pick a tunnel and a window, book it."""

from __future__ import annotations

import json
from pathlib import Path

import trajdebug
from openai import OpenAI

from .common import Case, sdk_chat, user_json
from .kit import active

AGENT = "wind_tunnel"
ROUTE = "sdk"
DOMAIN = "wind tunnel test bookings"
SYSTEM = "[wind-tunnel] You are the test engineer of an aerodynamics lab. Answer with JSON only."

INPUTS = {
    "aerolis": {"client": "Aerolis Dynamics", "article": "WS-12 wing section", "span_mm": 900, "speed_kmh": 180,
                "angles": [-4, 0, 4, 8, 12], "week": "2027-W08"},
    "voltcar": {"client": "Voltcar", "article": "VC-4 hatchback 1:4", "span_mm": 700, "speed_kmh": 144,
                "angles": [0, 5, 10], "week": "2027-W09"},
    "skyrise": {"client": "Skyrise Architects", "article": "SR-9 tower model", "span_mm": 600, "speed_kmh": 108,
                "angles": [0, 45, 90, 135], "week": "2027-W08"},
    "helix": {"client": "Helix Drones", "article": "HX-2 rotor arm", "span_mm": 450, "speed_kmh": 126,
              "angles": [0, 6], "week": "2027-W10"},
    "petrel": {"client": "Petrel Helmets", "article": "PT-1 aero helmet", "span_mm": 320, "speed_kmh": 72,
               "angles": [-10, 0, 10, 20], "week": "2027-W09"},
    "marlin": {"client": "Marlin Sails", "article": "MS-5 genoa section", "span_mm": 1000, "speed_kmh": 162,
               "angles": [10, 20, 30], "week": "2027-W10"},
}
REFS = ["skyrise", "helix", "petrel", "marlin"]

SPECS = {
    "T1": {"tunnel": "T1", "max_speed": 60, "unit": "m/s", "section_mm": 2000, "rate_eur_h": 900},
    "T2": {"tunnel": "T2", "max_speed": 250, "unit": "km/h", "section_mm": 2400, "rate_eur_h": 1100},
    "T3": {"tunnel": "T3", "max_speed": 160, "unit": "km/h", "section_mm": 3000, "rate_eur_h": 520},
}
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri"]
HELD_NOW = {("T1", "2027-W09", "Mon"), ("T2", "2027-W09", "Mon"), ("T3", "2027-W09", "Mon")}
CERTS = {"WS-12": "LC-3301", "VC-4": "LC-3390", "SR-9": "LC-2875", "HX-2": "LC-3012", "PT-1": "LC-2990",
         "MS-5": "LC-3104"}

CASES = [
    Case("wt_unit", AGENT, "unit_error", "normalize_specs", 1, "submit_booking",
         "normalize_specs kept T3's km/h rating as m/s, so the slow tunnel was chosen and booked", "aerolis"),
    Case("wt_obo", AGENT, "off_by_one", "parse_plan", 1, "submit_booking",
         "parse_plan counted the matrix from its second run, so the booked window is one hour short", "aerolis"),
    Case("wt_plan", AGENT, "plan_error", "plan_campaign", 1, "submit_booking",
         "the model's test matrix left out the tare run the facility requires", "aerolis"),
    Case("wt_cal", AGENT, "stale_data", "fetch_calendar", 2, "submit_booking",
         "the calendar came from last week's cached snapshot, so a held Monday looked free", "voltcar"),
    Case("wt_cert", AGENT, "swallowed_error", "review_certificate", 1, "submit_booking",
         "review_certificate took the registry's timeout payload as a pass instead of asking again", "voltcar"),
]


class BookingRejected(Exception):
    pass


def policy(body: dict) -> str:
    ask = user_json(body)
    if ask.get("ask") == "matrix":
        req = ask["request"]
        runs = [{"label": "tare", "angle": 0}] + [{"label": "sweep", "angle": a} for a in req["angles"]]
        if active("wt_plan"):
            runs = runs[1:]
        return json.dumps({"runs": runs, "speed_ms": round(req["speed_kmh"] / 3.6, 1), "hours_per_run": 1,
                           "setup_hours": 1})
    if ask.get("ask") == "confirm":
        b = ask["booking"]
        return json.dumps({"subject": f"Tunnel {b['tunnel']} held for {b['article']}",
                           "window": f"{b['day']} {b['start']:02d}:00-{b['end']:02d}:00",
                           "contact": "bookings@aerolab.example"})
    return "{}"


@trajdebug.step(kind="input")
def read_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> dict:
    plan = json.loads(text)
    runs = plan["runs"]
    counted = runs[1:] if active("wt_obo") else runs
    plan["hours"] = len(counted) * plan["hours_per_run"] + plan["setup_hours"]
    return plan


@trajdebug.step(kind="tool")
def get_tunnel_spec(tunnel: str) -> dict:
    return dict(SPECS[tunnel])


@trajdebug.step(kind="other")
def normalize_specs(specs: list[dict]) -> list[dict]:
    out = []
    for s in specs:
        speed = s["max_speed"]
        if s["unit"] == "km/h" and not active("wt_unit"):
            speed = round(speed / 3.6, 1)
        out.append({"tunnel": s["tunnel"], "max_ms": speed, "section_mm": s["section_mm"],
                    "rate_eur_h": s["rate_eur_h"]})
    return out


@trajdebug.step(kind="condition")
def choose_tunnel(specs: list[dict], plan: dict, request: dict) -> dict:
    fits = [s for s in specs if s["max_ms"] >= plan["speed_ms"] and s["section_mm"] >= 2 * request["span_mm"]]
    return min(fits, key=lambda s: s["rate_eur_h"])


_calls = {"calendar": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def fetch_calendar(tunnel: str, week: str) -> dict:
    _calls["calendar"] += 1
    if _calls["calendar"] == 1:
        raise ConnectionError("calendar service reset the connection")
    cached = active("wt_cal")
    held = [] if cached else [d for d in DAYS if (tunnel, week, d) in HELD_NOW]
    return {"tunnel": tunnel, "week": week, "as_of": "2027-02-15T07:00Z" if cached else "2027-02-22T07:00Z",
            "free": [{"day": d, "from": 8, "to": 18} for d in DAYS if d not in held]}


@trajdebug.step(kind="other")
def pick_window(calendar: dict, plan: dict) -> dict:
    for w in calendar["free"]:
        if w["to"] - w["from"] >= plan["hours"]:
            return {"day": w["day"], "start": w["from"], "end": w["from"] + plan["hours"]}
    raise BookingRejected("no free window long enough this week")


@trajdebug.step(kind="state")
def hold_slot(tunnel: dict, window: dict, request: dict) -> dict:
    slot = {"tunnel": tunnel["tunnel"], "week": request["week"], **window,
            "article": request["article"].split()[0]}
    trajdebug.current_run().state["slot"] = slot
    return slot


@trajdebug.step(kind="parse")
def parse_confirmation(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="other")
def price_booking(slot: dict, tunnel: dict) -> dict:
    hours = slot["end"] - slot["start"]
    return {"hours": hours, "rate_eur_h": tunnel["rate_eur_h"], "total_eur": hours * tunnel["rate_eur_h"]}


@trajdebug.step(kind="tool")
def check_model_cert(article: str, attempt_no: int) -> dict:
    if attempt_no == 1 and article == "VC-4":
        return {"status": 504, "error": "certificate registry gateway timeout"}
    return {"status": 200, "article": article, "certificate": CERTS[article], "valid_until": "2027-12-31"}


@trajdebug.step(kind="other")
def review_certificate(reply: dict, article: str) -> dict:
    if reply.get("status") == 200:
        return {"article": article, "certificate": reply["certificate"]}
    if active("wt_cert"):
        return {"article": article, "certificate": None, "note": "registry slow, proceeding"}
    again = check_model_cert(article, 2)
    return {"article": article, "certificate": again["certificate"]}


@trajdebug.step(kind="tool")
def submit_booking(slot: dict, plan: dict, tunnel_id: str, cert: dict, quote: dict) -> dict:
    spec = SPECS[tunnel_id]
    rated = spec["max_speed"] / 3.6 if spec["unit"] == "km/h" else spec["max_speed"]
    if plan["speed_ms"] > rated:
        raise BookingRejected(f"HTTP 422 booking API: requested airspeed {plan['speed_ms']} m/s exceeds "
                              f"{tunnel_id} rated airspeed {rated:.1f} m/s")
    if not any(r["label"] == "tare" for r in plan["runs"]):
        raise BookingRejected("HTTP 422 booking API: test matrix has no tare run; one is required per model")
    needed = len(plan["runs"]) * plan["hours_per_run"] + plan["setup_hours"]
    if slot["end"] - slot["start"] < needed:
        raise BookingRejected(f"HTTP 422 booking API: window {slot['start']:02d}:00-{slot['end']:02d}:00 is "
                              f"{slot['end'] - slot['start']} h, the test matrix needs {needed} h")
    if (tunnel_id, slot["week"], slot["day"]) in HELD_NOW:
        raise BookingRejected(f"HTTP 409 booking API: {tunnel_id} {slot['week']} {slot['day']} is already held "
                              "by booking BK-5521")
    if not cert.get("certificate"):
        raise BookingRejected(f"HTTP 403 booking API: no valid load certificate on file for {slot['article']}")
    return {"booking": f"BK-{6000 + len(slot['article']) * 7}", "total_eur": quote["total_eur"]}


def record(key: str, out: Path, base_url: str) -> None:
    client = OpenAI(base_url=base_url, api_key="local", max_retries=0)
    request = INPUTS[key]
    _calls["calendar"] = 0
    try:
        with trajdebug.run("wind-tunnel-booker", path=str(out), task=f"book tunnel time for {request['article']}"):
            req = read_request(request)
            text = sdk_chat(client, "plan_campaign", SYSTEM, json.dumps({"ask": "matrix", "request": req}))
            plan = parse_plan(text)
            specs = [get_tunnel_spec(t) for t in ("T1", "T2", "T3")]
            norm = normalize_specs(specs)
            tunnel = choose_tunnel(norm, plan, req)
            calendar = fetch_calendar(tunnel["tunnel"], req["week"])
            window = pick_window(calendar, plan)
            slot = hold_slot(tunnel, window, req)
            conf_text = sdk_chat(client, "draft_confirmation", SYSTEM, json.dumps({"ask": "confirm", "booking": slot}))
            conf = parse_confirmation(conf_text)
            quote = price_booking(slot, tunnel)
            reply = check_model_cert(slot["article"], 1)
            cert = review_certificate(reply, slot["article"])
            trajdebug.current_run().state["confirmation"] = conf
            submit_booking(slot, plan, tunnel["tunnel"], cert, quote)
    except BookingRejected:
        pass

