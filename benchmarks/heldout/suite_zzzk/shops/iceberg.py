"""Iceberg-watching boat tour (otlp route): a short departure check. Manifest and vessel tools, an ice
chart retriever, a sea-state tool, a route-scout sub-agent (its own model call and plotting tool), a
trip-memory write, a fuel gauge read retried once, the captain's briefing model call, the departure manifest
check, the coast guard notices tool, and the port's departure clearance as the last word."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys

from openai import OpenAI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otel_route  # noqa: E402

NAME = "iceberg-tour-ops"
ROUTE = "otlp"
DOMAIN = "an iceberg-watching boat tour"
SHAPE = "short departure check (~15 spans): manifest + vessel tools, ice chart retriever, sea state, route-scout sub-agent (model + plotting tool), memory write, fuel read retried once, briefing model, manifest assertions, notices tool, clearance"
SWITCH = None

VESSELS = {"MS Sermeq": {"capacity": 48, "max_wind_kn": 25}, "MS Narsaq": {"capacity": 12, "max_wind_kn": 18}}
BERGS = {"B-17": (69.21, -51.18), "B-21": (69.25, -51.30), "B-08": (69.18, -51.12), "B-30": (69.23, -51.24)}
INPUTS = [
    {"departure": "ILU-0612-0900", "vessel": "MS Sermeq", "berg": "B-17", "passengers": 41, "date": "2027-06-12", "area": "Disko Bay"},
    {"departure": "ILU-0612-1400", "vessel": "MS Narsaq", "berg": "B-21", "passengers": 11, "date": "2027-06-12", "area": "Disko Bay"},
    {"departure": "ILU-0613-0900", "vessel": "MS Sermeq", "berg": "B-08", "passengers": 36, "date": "2027-06-13", "area": "Icefjord mouth"},
    {"departure": "ILU-0613-2200", "vessel": "MS Narsaq", "berg": "B-30", "passengers": 12, "date": "2027-06-13", "area": "Disko Bay"},
    {"departure": "ILU-0614-1000", "vessel": "MS Sermeq", "berg": "B-17", "passengers": 44, "date": "2027-06-14", "area": "Icefjord mouth"},
]
WIND_KN = {"2027-06-12": 14, "2027-06-13": 11, "2027-06-14": 16}

CASES = [
    {"id": "zzzk-iceberg-1", "input": 0, "switch": "kmh_in_knots", "kind": "unit_error",
     "root": ("sea_state", 1), "failure": ("issue_manifest", 1),
     "description": "The sea state tool puts the wind speed in km/h (26) into its knots field, over the vessel's 25 kn limit."},
    {"id": "zzzk-iceberg-2", "input": 2, "switch": "yesterdays_chart", "kind": "stale_data",
     "root": ("ice_chart", 1), "failure": ("issue_manifest", 1),
     "description": "The ice chart lookup serves the chart from the previous day's satellite pass, 27.5 hours old at departure."},
    {"id": "zzzk-iceberg-3", "input": 3, "switch": "scout_other_berg", "kind": "subagent_wrong_entity",
     "root": ("ChatCompletion", 1), "failure": ("issue_manifest", 1),
     "description": "The route scout sub-agent plots the route to berg B-21, the afternoon boat's target, instead of the B-30 this night departure sold."},
    {"id": "zzzk-iceberg-4", "input": 1, "switch": "notices_timeout", "kind": "swallowed_error",
     "root": ("coast_guard_notices", 1), "failure": ("request_clearance", 1),
     "description": "The coast guard notices tool hides a timeout and reports no active notices, though a navigation warning covers Disko Bay that afternoon."},
    {"id": "zzzk-iceberg-5", "input": 4, "switch": "other_vessel_capacity", "kind": "bad_memory_write",
     "root": ("remember_trip", 1), "failure": ("request_clearance", 1),
     "description": "The trip memory for MS Sermeq is written with the other vessel's passenger capacity (12), and the clearance request carries it."},
]


def policy(request):
    msgs = request.body["messages"]
    ask = json.loads(msgs[-1]["content"])
    if msgs[0]["content"].startswith("Scout"):
        berg = ask["berg"]
        if SWITCH == "scout_other_berg":
            berg = "B-21"
        return json.dumps({"berg": berg, "standoff_m": 300, "waypoints": 4})
    return f"Briefing: {ask['passengers']} aboard {ask['vessel']}, wind {ask['wind_kn']} kn, heading for {ask['berg']}."


def record(inp, path, server):
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    span = otel_route.span
    memory: dict = {}
    with otel_route.traced_run(path, "iceberg-tours") as tracer:
        try:
            with span(tracer, NAME, "AGENT", inp):
                with span(tracer, "booking_manifest", "TOOL", {"departure": inp["departure"]}) as s:
                    manifest = s.done({"departure": inp["departure"], "passengers": inp["passengers"], "berg": inp["berg"]})
                with span(tracer, "vessel_register", "TOOL", {"vessel": inp["vessel"]}) as s:
                    vessel = s.done({"vessel": inp["vessel"], **VESSELS[inp["vessel"]]})
                with span(tracer, "ice_chart", "RETRIEVER", {"area": inp["area"], "date": inp["date"]}) as s:
                    sails = dt.datetime.fromisoformat(f"{inp['date']}T{inp['departure'][-4:-2]}:00")
                    issued = (sails - dt.timedelta(hours=3, minutes=30)).isoformat(timespec="minutes")
                    if SWITCH == "yesterdays_chart":
                        issued = (sails - dt.timedelta(hours=27, minutes=30)).isoformat(timespec="minutes")
                    chart = s.done({"area": inp["area"], "issued": issued,
                                    "bergs": [{"id": b, "lat": p[0], "lon": p[1]} for b, p in BERGS.items()]})
                with span(tracer, "sea_state", "TOOL", {"area": inp["area"], "date": inp["date"]}) as s:
                    wind = WIND_KN[inp["date"]]
                    if SWITCH == "kmh_in_knots":
                        wind = round(wind * 1.852)
                    sea = s.done({"wind_kn": wind, "swell_m": 0.6})
                with span(tracer, "route_scout", "AGENT", {"berg": manifest["berg"], "chart_issued": chart["issued"]}) as scout:
                    reply = client.chat.completions.create(model=server.model, messages=[
                        {"role": "system", "content": "Scout a route to the berg with a 300 m standoff. Answer JSON {berg, standoff_m, waypoints}."},
                        {"role": "user", "content": json.dumps({"berg": manifest["berg"], "bergs": chart["bergs"]})}])
                    pick = json.loads(reply.choices[0].message.content)
                    with span(tracer, "plot_route", "TOOL", pick) as s:
                        lat, lon = BERGS[pick["berg"]]
                        route = s.done({"target": pick["berg"], "end": [lat, lon], "standoff_m": pick["standoff_m"],
                                        "nm": round(abs(lat - 69.22) * 60 + abs(lon + 51.10) * 21, 1)})
                    scout.done(route)
                with span(tracer, "remember_trip", "CHAIN", {"departure": inp["departure"], "vessel": vessel, "route": route}) as s:
                    capacity = vessel["capacity"]
                    if SWITCH == "other_vessel_capacity":
                        capacity = next(v["capacity"] for n, v in VESSELS.items() if n != vessel["vessel"])
                    memory[inp["departure"]] = {"vessel": vessel["vessel"], "capacity": capacity, "target": route["target"]}
                    s.done(memory[inp["departure"]])
                for attempt in (1, 2):
                    try:
                        with span(tracer, "fuel_gauge", "TOOL", {"vessel": vessel["vessel"], "attempt": attempt}) as s:
                            if attempt == 1:
                                raise ConnectionError("gauge telemetry link dropped")
                            fuel = s.done({"litres": 910, "needed": round(route["nm"] * 9 + 120)})
                        break
                    except ConnectionError:
                        continue
                briefing = client.chat.completions.create(model=server.model, messages=[
                    {"role": "system", "content": "Write the captain's briefing in one line."},
                    {"role": "user", "content": json.dumps({"passengers": manifest["passengers"], "vessel": vessel["vessel"],
                                                            "wind_kn": sea["wind_kn"], "berg": route["target"]})}])
                with span(tracer, "issue_manifest", "CHAIN", {"manifest": manifest, "sea": sea, "chart": chart["issued"],
                                                             "route": route, "briefing": briefing.choices[0].message.content}) as s:
                    assert sea["wind_kn"] <= vessel["max_wind_kn"], f"wind {sea['wind_kn']} kn over {vessel['vessel']}'s {vessel['max_wind_kn']} kn limit"
                    age_h = round((sails - dt.datetime.fromisoformat(chart["issued"])).total_seconds() / 3600, 1)
                    assert age_h <= 12, f"ice chart issued {chart['issued']} is {age_h} h old at departure, limit 12 h"
                    assert route["target"] == manifest["berg"], f"route ends at {route['target']}, the departure sold {manifest['berg']}"
                    assert fuel["litres"] >= fuel["needed"], f"fuel {fuel['litres']} l under the {fuel['needed']} l needed"
                    sheet = s.done({"departure": inp["departure"], "passengers": manifest["passengers"], "target": route["target"]})
                with span(tracer, "coast_guard_notices", "TOOL", {"area": inp["area"], "date": inp["date"]}) as s:
                    active = ["NW-88 drifting growlers, Disko Bay, 2027-06-12 12:00-18:00"] if inp["departure"] == "ILU-0612-1400" else []
                    try:
                        if SWITCH == "notices_timeout":
                            raise TimeoutError("notices service timed out")
                        notices = active
                    except TimeoutError:
                        notices = []
                    s.done({"area": inp["area"], "active": notices})
                if notices:
                    with span(tracer, "hold_departure", "TOOL", {"departure": inp["departure"], "notices": notices}) as s:
                        s.done({"held": inp["departure"], "rebook": "next sailing after the warning lapses"})
                    return
                with span(tracer, "request_clearance", "TOOL", {"sheet": sheet, "trip": memory[inp["departure"]]}) as s:
                    trip = memory[inp["departure"]]
                    if sheet["passengers"] > trip["capacity"]:
                        raise ValueError(f"{sheet['passengers']} passengers over the declared capacity {trip['capacity']} of {trip['vessel']}")
                    if inp["departure"] == "ILU-0612-1400":
                        raise ValueError("departure refused: navigation warning NW-88 active in Disko Bay 12:00-18:00")
                    s.done({"cleared": sheet["departure"]})
        except (ValueError, AssertionError):
            pass
