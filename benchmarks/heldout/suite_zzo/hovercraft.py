"""Hovercraft tour operator's trips (otlp route): plans the day's trips from bookings, tides and craft, briefs, manifests."""
from __future__ import annotations

import json

import _rt
import kit

NAME, ROUTE, DOMAIN = "hovercraft-trip-planner", "otlp", "a hovercraft tour operator's trips"
SHAPE = "OpenInference spans: bookings/tide/wind tools, LLM schedule, parse, safety-brief sub-agent (LLM + parse), per-trip craft/pilot loop, fuel plan, manifest, publish, validator"

CRAFT = {"HC-Solent": {"seats": 12, "type": "BHT-12", "burn_lph": 38}, "HC-Gull": {"seats": 20, "type": "AP1-20", "burn_lph": 55},
         "HC-Tern": {"seats": 12, "type": "BHT-12", "burn_lph": 38}}
PILOTS = {"BHT-12": ["R. Avery", "L. Mensah"], "AP1-20": ["K. Doran", "P. Iles"]}
ROUTES = {"Estuary Loop": 1.0, "Seal Sands": 1.5, "Lighthouse Run": 2.0, "Mudflat Sunset": 1.5}


def _input(i: int) -> dict:
    trips = []
    for k, route in enumerate(ROUTES):
        trips.append({"trip": f"T{i}{k}", "route": route, "pax": [9, 16, 11, 7, 18, 12][(i + k) % 6],
                      "depart": f"{10 + 2 * k}:{'30' if (i + k) % 2 else '00'}"})
    return {"date": f"2025-08-{4 + i:02d}", "base": "Southsea", "trips": trips}


INPUTS = [_input(i) for i in range(5)]
CASES = [
    {"id": "hv_c1", "input": 0, "fault_kind": "unit_error", "root": "fuel_plan", "occ": 1, "failure": "validate_day",
     "description": "fuel_plan gives the last trip's fuel in US gallons while the manifest reads litres, leaving it under the reserve."},
    {"id": "hv_c2", "input": 1, "fault_kind": "format_drift", "root": "ChatCompletion", "occ": 2, "failure": "validate_day",
     "description": "The safety-brief model switches to 12-hour times and the reader takes '2:00 PM' as 02:00, outside the tide window."},
    {"id": "hv_c3", "input": 2, "fault_kind": "wrong_tool_args", "root": "assign_pilot", "occ": 4, "failure": "validate_day",
     "description": "assign_pilot is asked for the previous trip's craft type, so the last trip gets a pilot not rated for its hovercraft."},
    {"id": "hv_c4", "input": 3, "fault_kind": "stale_data", "root": "check_craft", "occ": 4, "failure": "validate_day",
     "description": "check_craft answers from the morning's status cache and offers a craft that went to the workshop at noon."},
    {"id": "hv_c5", "input": 4, "fault_kind": "off_by_one", "root": "build_manifest", "occ": 1, "failure": "validate_day",
     "description": "build_manifest starts counting trips at the second one, so the first trip is missing from the manifest."},
]
WORKSHOP = "HC-Tern"


def _policy(inp: dict):
    def brain(request):
        text = _rt.last_user(request)
        if text.startswith("Schedule the trips"):
            trips = json.loads(text.split("\n", 1)[1])
            rows = []
            for t in trips:
                craft = "HC-Gull" if t["pax"] > 12 else ("HC-Solent" if int(t["trip"][-1]) % 2 == 0 else "HC-Tern")
                rows.append(f"{t['trip']};{t['route']};{craft};{t['depart']}")
            return "\n".join(rows)
        if text.startswith("Write the safety brief"):
            rows = json.loads(text.split("\n", 1)[1])
            out = []
            for r in rows:
                h, m = r["depart"].split(":")
                t = f"{int(h) - 12}:{m} PM" if kit.on("hv_c2") and int(h) > 12 else f"{int(h):02d}:{m}"
                out.append(f"{r['trip']} departs {t}: lifejackets, skirt check, radio check")
            return "\n".join(out)
        return "OK"
    return brain


def record(inp: dict, path: str) -> None:
    _rt.SERVER.use(_policy(inp))
    S = _rt.span_call

    def body(tracer, client):
        with _rt.agent_span(tracer, NAME, {"date": inp["date"], "base": inp["base"]}):
            bookings = S(tracer, "read_bookings", "TOOL", {"date": inp["date"]}, lambda: [dict(t) for t in inp["trips"]])
            tide = S(tracer, "tide_forecast", "TOOL", {"port": inp["base"], "date": inp["date"]},
                     lambda: {"window": ["09:30", "18:30"], "high_water": "13:50"})
            S(tracer, "wind_forecast", "TOOL", {"port": inp["base"]}, lambda: {"gust_kt": 18, "limit_kt": 30})
            text = _rt.complete(client, "You schedule hovercraft trips. One line per trip: trip;route;craft;depart.",
                                "Schedule the trips\n" + json.dumps(bookings))

            def parse():
                out = []
                for line in text.splitlines():
                    trip, route, craft, depart = line.split(";")
                    out.append({"trip": trip, "route": route, "craft": craft, "depart": depart})
                return out
            sched = S(tracer, "parse_schedule", "CHAIN", {"text": text}, parse)

            with _rt.agent_span(tracer, "safety_brief", {"trips": [s["trip"] for s in sched]}):
                brief = _rt.complete(client, "You write safety briefs.", "Write the safety brief per trip\n" + json.dumps(sched))

                def read_brief():
                    rows = []
                    for line in brief.splitlines():
                        trip, rest = line.split(" departs ", 1)
                        t = rest.split(": ", 1)[0].replace(" PM", "")
                        rows.append({"trip": trip, "depart": f"{int(t.split(':')[0]):02d}:{t.split(':')[1]}"})
                    return rows
                times = S(tracer, "read_brief", "CHAIN", {"text": brief}, read_brief)

            plan = []
            for k, s in enumerate(sched):
                def check(s=s, k=k):
                    status = "workshop" if s["craft"] == WORKSHOP and inp["date"].endswith("07") else "ready"
                    if kit.on("hv_c4") and k == 3:
                        status = "ready"
                    return {"craft": s["craft"], "status": status, **CRAFT[s["craft"]]}
                craft = S(tracer, "check_craft", "TOOL", {"craft": s["craft"], "date": inp["date"]}, check)
                if craft["status"] != "ready":
                    spare = next(c for c in CRAFT if c != s["craft"] and CRAFT[c]["type"] == craft["type"])
                    craft = S(tracer, "check_craft", "TOOL", {"craft": spare, "date": inp["date"]},
                              lambda spare=spare: {"craft": spare, "status": "ready", **CRAFT[spare]})
                    s = dict(s, craft=spare)

                ctype = craft["type"]
                if kit.on("hv_c3") and k == 3:
                    ctype = CRAFT[sched[2]["craft"]]["type"]
                pilot = S(tracer, "assign_pilot", "TOOL", {"craft_type": ctype, "depart": s["depart"]},
                          lambda ctype=ctype, k=k: {"pilot": PILOTS[ctype][k % 2], "rated": ctype})
                plan.append({**s, "seats": craft["seats"], "status": craft["status"], "burn_lph": craft["burn_lph"], "pilot": pilot["pilot"]})

            def fuel():
                out = {}
                for k, p in enumerate(plan):
                    litres = p["burn_lph"] * ROUTES[p["route"]] * 1.3
                    if kit.on("hv_c1") and k == 3:
                        litres = litres / 3.785
                    out[p["trip"]] = round(litres, 1)
                return out
            fuel_l = S(tracer, "fuel_plan", "CHAIN", {"trips": [(p["trip"], p["craft"], p["route"]) for p in plan]}, fuel)

            def manifest():
                start = 1 if kit.on("hv_c5") else 0
                bt = {t["trip"]: t for t in times}
                return [{**plan[k], "fuel_l": fuel_l[plan[k]["trip"]], "brief_depart": bt[plan[k]["trip"]]["depart"],
                         "pax": next(b["pax"] for b in bookings if b["trip"] == plan[k]["trip"])} for k in range(start, len(plan))]
            man = S(tracer, "build_manifest", "CHAIN", {"trips": len(plan)}, manifest)
            S(tracer, "publish_manifest", "TOOL", {"trips": [m["trip"] for m in man]}, lambda: {"published": len(man)})

            def validate():
                if len(man) != len(bookings):
                    raise ValueError(f"manifest lists {len(man)} trips, {len(bookings)} are booked for {inp['date']}")
                lo, hi = tide["window"]
                for m in man:
                    if m["status"] != "ready" or m["craft"] == WORKSHOP and inp["date"].endswith("07"):
                        raise ValueError(f"{m['trip']}: {m['craft']} is in the workshop")
                    if m["pax"] > m["seats"]:
                        raise ValueError(f"{m['trip']}: {m['pax']} passengers on a {m['seats']}-seat craft")
                    need = CRAFT[m["craft"]]["burn_lph"] * ROUTES[m["route"]] * 1.3
                    if m["fuel_l"] < round(need, 1):
                        raise ValueError(f"{m['trip']}: {m['fuel_l']} l of fuel, route and reserve need {need:.1f} l")
                    if m["pilot"] not in PILOTS[CRAFT[m["craft"]]["type"]]:
                        raise ValueError(f"{m['trip']}: {m['pilot']} is not rated for {CRAFT[m['craft']]['type']}")
                    if not lo <= m["brief_depart"] <= hi:
                        raise ValueError(f"{m['trip']}: briefed departure {m['brief_depart']} outside the tide window {lo}-{hi}")
                return {"ok": True}
            S(tracer, "validate_day", "CHAIN", {"trips": len(man)}, validate)

    _rt.otlp_run(NAME, body, path, seed=json.dumps(inp, sort_keys=True))
