"""Velodrome track sessions (otlp route): licences, templates, coach plan, timing sub-agent, track routing, slot booking."""
from __future__ import annotations

import json

from .common import Case, last_user, run_otlp
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "velodrome-sessions", "otlp", "velodrome track sessions", "json"
SHAPE = "per rider: licence, parse, roster write -> eligibility -> session templates -> coach prompt -> plan (llm) + parse -> timing desk sub-agent -> route track -> track slots -> submit booking"

LICENCES = {
    "R-1": "cat=Elite; track_accreditation=yes; expires=2027-03-01",
    "R-2": "cat=U23; track_accreditation=yes; expires=2027-06-30",
    "R-3": "cat=Elite; track_accreditation=yes; expires=2026-10-31",
    "R-4": "cat=Junior; track_accreditation=yes; expires=2027-01-15",
    "R-5": "cat=Masters; track_accreditation=yes; expires=2026-11-30",
    "R-6": "cat=Elite; track_accreditation=yes; expires=2028-02-01",
}
TEMPLATES = {
    "sprint": [{"block": "neutral warm-up", "min": 20}, {"block": "flying 200 m", "min": 30}, {"block": "standing starts", "min": 25},
               {"block": "cool-down", "min": 15}],
    "endurance": [{"block": "neutral warm-up", "min": 20}, {"block": "team pursuit efforts", "min": 45}, {"block": "points race", "min": 30},
                  {"block": "cool-down", "min": 15}],
}
SLOTS = {"main_track": ["07:00", "09:00", "11:00", "13:00", "15:00", "17:00"], "training_track": ["08:00", "10:00", "12:00", "14:00"]}
TODAY = "2026-12-05"

INPUTS = {
    "sprint": {"team": "Northside Wheelers", "team_id": "T-44", "riders": ["R-1", "R-2", "R-3", "R-4"], "type": "sprint", "slot": "15:00"},
    "endur": {"team": "Harbour CC", "team_id": "T-51", "riders": ["R-6", "R-5", "R-2", "R-1"], "type": "endurance", "slot": "17:00"},
}
REFS = [
    {"team": "Vale Velo", "team_id": "T-12", "riders": ["R-2", "R-6"], "type": "sprint", "slot": "09:00"},
    {"team": "Eastgate RT", "team_id": "T-37", "riders": ["R-1", "R-4", "R-6"], "type": "endurance", "slot": "13:00"},
    {"team": "Kingsway Juniors", "team_id": "T-08", "riders": ["R-4", "R-2"], "type": "endurance", "slot": "10:00"},
    {"team": "Millrace CC", "team_id": "T-29", "riders": ["R-6", "R-1", "R-2", "R-4"], "type": "sprint", "slot": "17:00"},
]

CASES = [
    Case("velo_licence", "lossy_parsing", "sprint", "parse_licence", 3, "other", "submit_track_booking", 1,
         "The licence parser keeps only the first two fields, so an expired licence reads as valid and the rider stays on the roster."),
    Case("velo_prompt", "context_pollution", "sprint", "build_coach_prompt", 1, "other", "submit_track_booking", 1,
         "The coach prompt carries the previous team's derny-pacing note, and the plan adds a derny block."),
    Case("velo_timing", "subagent_wrong_entity", "endur", "reserve_timing", 1, "tool", "submit_track_booking", 1,
         "The timing desk sub-agent reserves the transponder block under the previous team's id."),
    Case("velo_route", "wrong_routing", "sprint", "route_track", 1, "other", "submit_track_booking", 1,
         "The track router sends a sprint session to the training track."),
    Case("velo_slots", "truncated_result", "endur", "fetch_track_slots", 1, "tool", "submit_track_booking", 1,
         "The slot listing comes back cut after the first page, and the booking falls back to the last slot it saw."),
]


def policy(req):
    system, user = last_user(req)
    data = json.loads(user)
    if system.startswith("You are the track coach"):
        blocks = [t["block"] for t in data["templates"]]
        if any("derny" in n for n in data.get("notes", [])):
            blocks.insert(2, "derny pacing")
        return json.dumps({"blocks": blocks, "riders": data["riders"]})
    if system.startswith("You run the timing desk"):
        return json.dumps({"package": "transponders" if data["riders"] <= 6 else "transponders+loop", "team_id": data["team_id"]})
    return "ok"


def _parse_licence(text: str) -> dict:
    fields = [f.strip() for f in text.split(";")]
    if active("velo_licence"):
        fields = fields[:2]
    out = dict(f.split("=", 1) for f in fields)
    return {"category": out["cat"], "accredited": out.get("track_accreditation") == "yes", "expires": out.get("expires", "")}


def _submit(b: dict) -> dict:
    errs = []
    for r in b["riders"]:
        exp = LICENCES[r].rsplit("=", 1)[1]
        if exp < TODAY:
            errs.append(f"rider {r} licence expired {exp}")
    if "derny pacing" in b["blocks"]:
        errs.append("derny pacing requires a licensed derny driver; none is on the booking")
    if b["type"] == "sprint" and b["track"] != "main_track":
        errs.append(f"flying 200 m efforts are not run on the {b['track'].replace('_', ' ')}")
    if b["timing"]["team_id"] != b["team_id"]:
        errs.append(f"timing block {b['timing']['block']} is held by {b['timing']['team_id']}, not {b['team_id']}")
    if b["slot"] != b["requested_slot"]:
        errs.append(f"slot {b['slot']} differs from requested slot {b['requested_slot']}")
    if errs:
        raise RuntimeError("track office API 422: " + "; ".join(errs))
    return {"booking": f"VB-{b['team_id'][2:]}-{b['slot'].replace(':', '')}", "status": "confirmed"}


def flow(ctx, inp):
    req = ctx.step("read_request", "input", inp, lambda: dict(inp))
    roster = {}
    for rid in req["riders"]:
        text = ctx.step("verify_licence", "tool", {"rider": rid}, lambda: LICENCES[rid])
        lic = ctx.step("parse_licence", "parse", {"text": text}, lambda: _parse_licence(text))

        def store():
            roster[rid] = lic
            return {"stored": rid, "roster": len(roster)}
        ctx.step("store_rider", "state", {"rider": rid, "licence": lic}, store)
    riders = ctx.step("eligible_riders", "condition", {"roster": roster},
                      lambda: [r for r, lic in roster.items() if lic["accredited"] and (not lic["expires"] or lic["expires"] >= TODAY)])
    templates = ctx.step("fetch_session_templates", "retrieval", {"type": req["type"]}, lambda: TEMPLATES[req["type"]])

    def prompt():
        notes = [f"{len(riders)} riders, {req['type']} session"]
        if active("velo_prompt"):
            notes.append("add derny pacing after warm-up (Eastgate RT request)")
        return {"team": req["team"], "riders": riders, "templates": templates, "notes": notes}
    coach_in = ctx.step("build_coach_prompt", "other", {"team": req["team"]}, prompt)
    text = ctx.llm("plan_session", "You are the track coach. Answer JSON blocks.", coach_in)
    plan = ctx.step("parse_plan", "parse", {"text": text}, lambda: json.loads(text))
    with ctx.agent("timing_desk", {"team_id": req["team_id"], "riders": len(riders)}):
        pkg = json.loads(ctx.llm("choose_timing_package", "You run the timing desk. Answer JSON.",
                                 {"team_id": req["team_id"], "riders": len(riders)}))
        who = "T-37" if active("velo_timing") else pkg["team_id"]
        timing = ctx.step("reserve_timing", "tool", {"team_id": who, "package": pkg["package"]},
                          lambda: {"block": f"TB-{who[2:]}-{len(riders)}", "team_id": who})
    track = ctx.step("route_track", "condition", {"type": req["type"], "riders": len(riders)},
                     lambda: "training_track" if (active("velo_route") or (req["type"] == "endurance" and len(riders) <= 2)) else "main_track")
    slots = ctx.step("fetch_track_slots", "tool", {"track": track},
                     lambda: SLOTS[track][:3] if active("velo_slots") else list(SLOTS[track]))
    slot = req["slot"] if req["slot"] in slots else slots[-1]
    booking = {"team_id": req["team_id"], "riders": riders, "blocks": plan["blocks"], "type": req["type"], "track": track,
               "timing": timing, "slot": slot, "requested_slot": req["slot"]}
    return ctx.step("submit_track_booking", "tool", booking, lambda: _submit(booking))


def record(server, inp, path):
    run_otlp(AGENT, flow, server, inp, path, task=f"track session for {inp['team']}")
