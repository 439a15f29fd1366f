"""flood-warden-evacuation: a civil defence flood cell agent reads a river gauge, forecasts the peak,
picks the evacuation zones, builds a street-by-street manifest from the vulnerable-persons register,
allocates rest centres and issues the evacuation order (traced with OpenTelemetry + OpenInference)."""
from __future__ import annotations

import json
import re

from .common import OtlpRecorder, client, last_user, system_text

NAME = "flood-warden-evacuation"
ROUTE = "otlp"
DOMAIN = "civil defence flood cell: gauge to evacuation zones, manifest and rest centres"
SHAPE = "OTLP: gauge tool -> llm peak forecast (OpenAI instrumented) -> parse -> zone router -> street retriever per zone -> register tool per street -> state manifest -> rest-centre tool -> allocation -> llm brief -> order check"
SWITCH = None

THRESHOLDS = [("A", 3.0), ("B", 3.8), ("C", 4.5)]
TOWNS = {
    "Bewdley": {"level": 3.6, "cached": 3.1, "trend": 0.08, "streets": {"A": ["Severnside North", "Severnside South", "Dog Lane", "Wribbenhall Quay"], "B": ["Load Street", "Kidderminster Road", "Stourport Road", "Beales Corner"], "C": ["Lax Lane", "High Street", "Westbourne Street"]}},
    "Upton": {"level": 2.9, "cached": 2.9, "trend": 0.05, "streets": {"A": ["Waterside", "Hanley Road", "Old Street"], "B": ["Church Street", "New Street", "Court Street"], "C": ["School Lane", "Rectory Road"]}},
    "Tewkesbury": {"level": 4.2, "cached": 3.6, "trend": 0.06, "streets": {"A": ["Mill Street", "Quay Street", "St Mary's Lane"], "B": ["Church Street", "Gander Lane", "Mythe Road"], "C": ["Barton Street", "Chance Street", "Oldbury Road"]}},
    "Shrewsbury": {"level": 3.2, "cached": 3.0, "trend": 0.03, "streets": {"A": ["Frankwell Quay", "Smithfield Road", "Victoria Quay"], "B": ["Coleham Head", "Longden Coleham", "Abbey Foregate"], "C": ["Castle Foregate", "Chester Street"]}},
    "Ironbridge": {"level": 2.6, "cached": 2.5, "trend": 0.10, "streets": {"A": ["The Wharfage", "Dale End", "Waterloo Street"], "B": ["Tontine Hill", "High Street", "Wesley Road"], "C": ["Church Hill", "Hodge Bower"]}},
}
REST_CENTRES = {"Bewdley": [("Bewdley Leisure Centre", 180, True), ("St Anne's Hall", 60, False)],
                "Upton": [("Upton Memorial Hall", 120, True)],
                "Tewkesbury": [("Tewkesbury Academy", 300, True), ("Watson Hall", 90, False)],
                "Shrewsbury": [("Quantum Sports Hall", 250, True), ("Shirehall", 150, True)],
                "Ironbridge": [("Coalbrookdale Institute", 110, True), ("Ironbridge Sports Club", 40, False)]}


def _households(street):
    return 8 + (sum(map(ord, street)) % 23)


def _vulnerable(street):
    return sum(map(ord, street)) % 4


INPUTS = [
    {"task": "Bewdley gauge 3.6 m rising, evacuation call", "town": "Bewdley"},
    {"task": "Upton gauge 2.9 m rising, evacuation call", "town": "Upton"},
    {"task": "Tewkesbury gauge 4.2 m rising, evacuation call", "town": "Tewkesbury"},
    {"task": "Shrewsbury gauge 3.2 m rising, evacuation call", "town": "Shrewsbury"},
    {"task": "Ironbridge gauge 2.6 m rising, evacuation call", "town": "Ironbridge"},
]
CASES = [
    {"id": "zq_flood_1", "input": 0, "fault_kind": "stale_data", "root": ("read_gauge", 1), "root_kind": "tool",
     "failure": ("issue_order", 1),
     "description": "The gauge tool answers the 3 hour old cached reading for Bewdley (3.1 m, not 3.6 m), so the forecast peak (4.06 m) stays under zone C's 4.5 m and the order leaves zone C out."},
    {"id": "zq_flood_2", "input": 3, "fault_kind": "bad_memory_write", "root": ("save_manifest", 1), "root_kind": "state",
     "failure": ("issue_order", 1),
     "description": "The manifest saved to the flood cell's memory keeps households per street but drops the register's vulnerable residents, so no accessible transport is booked for Shrewsbury's registered residents."},
    {"id": "zq_flood_3", "input": 4, "fault_kind": "wrong_routing", "root": ("select_zones", 1), "root_kind": "condition",
     "failure": ("issue_order", 1),
     "description": "The zone router decides on the current Ironbridge level (2.6 m) instead of the forecast peak (3.8 m), so the order covers zone A only where zones A and B are needed."},
    {"id": "zq_flood_4", "input": 1, "fault_kind": "hallucinated_value", "root": ("ChatCompletion", 1), "root_kind": "llm",
     "failure": ("issue_order", 1),
     "description": "The forecasting model states a peak of 3.85 m for Upton that its inputs do not give (2.9 m rising 0.05 m an hour for 12 h is 3.5 m), so zone B is added and the order is refused against the 3.5 m forecast."},
    {"id": "zq_flood_5", "input": 2, "fault_kind": "truncated_result", "root": ("load_streets", 2), "root_kind": "retrieval",
     "failure": ("issue_order", 1),
     "description": "The street retriever for Tewkesbury zone B returns only its first two streets, so Mythe Road's households are missing from the manifest the order is checked against."},
]


def brain(request):
    sys_ = system_text(request)
    user = last_user(request)
    if "forecast" in sys_:
        g = json.loads(user)
        peak = round(g["level_m"] + g["trend_m_per_h"] * 12, 2)
        if SWITCH == "zq_flood_4":
            peak = 3.85
        return json.dumps({"station": g["station"], "peak_m": peak, "hours_to_peak": 12})
    if "brief" in sys_:
        o = json.loads(user)
        return f"Wardens: evacuate zones {', '.join(o['zones'])} ({o['households']} households). Rest centres: " + \
            "; ".join(f"{c['centre']} {c['people']}" for c in o["allocation"]) + "."
    return "Noted."


def record(inp, server, path):
    town = inp["town"]
    t = TOWNS[town]
    rec = OtlpRecorder(NAME)
    llm = client(server)
    memory = {}
    try:
        _run(inp, server, rec, llm, t, town, memory)
    finally:
        rec.write(path)


def _run(inp, server, rec, llm, t, town, memory):
    with rec.instrumented(), rec.step(NAME, "agent", input=inp["task"], metadata={"task": inp["task"]}):
        with rec.step("read_gauge", "tool", input={"station": town}) as s:
            level = t["cached"] if SWITCH == "zq_flood_1" else t["level"]  # the telemetry cache answers first
            s.output = gauge = {"station": town, "level_m": level, "trend_m_per_h": t["trend"]}
        reply = llm.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": "You forecast the river peak as JSON."},
            {"role": "user", "content": json.dumps(gauge)}]).choices[0].message.content
        with rec.step("parse_forecast", "parse", input=reply) as s:
            s.output = fc = json.loads(reply)
        with rec.step("select_zones", "condition", input={"peak_m": fc["peak_m"], "level_m": gauge["level_m"]}) as s:
            basis = fc["peak_m"]
            if SWITCH == "zq_flood_3":
                basis = gauge["level_m"]  # the level the wardens see on the board
            s.output = zones = [z for z, th in THRESHOLDS if basis >= th] or ["A"]
        manifest = []
        for z in zones:
            with rec.step("load_streets", "retrieval", input={"town": town, "zone": z}) as s:
                streets = list(t["streets"][z])
                if SWITCH == "zq_flood_5" and z == "B":
                    streets = streets[:2]
                s.output = streets
            for st in streets:
                with rec.step("check_register", "tool", input={"street": st}) as s:
                    s.output = row = {"street": st, "households": _households(st), "vulnerable": _vulnerable(st)}
                manifest.append(row)
        with rec.step("save_manifest", "state", input=manifest) as s:
            rows = manifest
            if SWITCH == "zq_flood_2":
                rows = [{"street": r["street"], "households": r["households"]} for r in manifest]
            memory["manifest"] = rows
            s.output = {"streets": len(rows), "households": sum(r["households"] for r in rows)}
        with rec.step("list_rest_centres", "tool", input={"town": town}) as s:
            s.output = centres = [{"centre": c, "capacity": cap, "accessible": acc} for c, cap, acc in REST_CENTRES[town]]
        with rec.step("allocate", "other", input={"manifest": memory["manifest"], "centres": centres}) as s:
            people = sum(r["households"] for r in memory["manifest"]) * 2 // 5  # two in five households need a place
            alloc, left = [], people
            for c in sorted(centres, key=lambda c: not c["accessible"]):
                n = min(left, c["capacity"])
                if n:
                    alloc.append({"centre": c["centre"], "people": n})
                left -= n
            transport = sum(r.get("vulnerable", 0) for r in memory["manifest"])
            s.output = plan = {"zones": zones, "households": sum(r["households"] for r in memory["manifest"]),
                               "allocation": alloc, "accessible_transport": transport}
        brief = llm.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": "You brief the flood wardens."},
            {"role": "user", "content": json.dumps(plan)}]).choices[0].message.content
        with rec.step("issue_order", "tool", input={"plan": plan, "brief": brief}) as s:
            peak = t["level"] + t["trend"] * 12
            need = [z for z, th in THRESHOLDS if peak >= th] or ["A"]
            if need != plan["zones"]:
                raise RuntimeError(f"order refused: forecast peak {peak:.2f} m at {town} needs zones {', '.join(need)}, order covers {', '.join(plan['zones'])}")
            hh = sum(_households(st) for z in need for st in t["streets"][z])
            if hh != plan["households"]:
                raise RuntimeError(f"order refused: register holds {hh} households in zones {', '.join(need)}, manifest {plan['households']}")
            vul = sum(_vulnerable(st) for z in need for st in t["streets"][z])
            if vul != plan["accessible_transport"]:
                raise RuntimeError(f"order refused: {vul} registered vulnerable residents, accessible transport for {plan['accessible_transport']}")
            s.output = {"order": f"EVAC-{town[:3].upper()}-{len(need)}", "status": "issued"}
