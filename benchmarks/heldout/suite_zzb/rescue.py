"""Mountain rescue callouts (sdk route): triage a callout, assemble a team and page it."""

from __future__ import annotations

import json

import trajdebug

from .common import Case, chat, policy, last_user_json
from .kit import active

NAME = "mrt-callout-desk"
ROUTE = "sdk"

INPUTS = {
    "co_helvellyn": {"ref": "CO-2231", "grid": "NY 34421 15163", "casualties": 1, "party": 4, "injury": "lower leg fracture, cannot walk",
                     "category": "A", "base_km": {"Patterdale": 9.5, "Keswick": 21.0}},
    "co_scafell": {"ref": "CO-2240", "grid": "NY 21541 07218", "casualties": 1, "party": 3, "injury": "head injury after slip, drowsy",
                   "category": "A", "base_km": {"Wasdale": 7.0, "Keswick": 24.0}},
    "co_blencathra": {"ref": "CO-2244", "grid": "NY 32340 27750", "casualties": 1, "party": 2, "injury": "exhausted, cold, slow walking",
                      "category": "B", "base_km": {"Keswick": 18.0, "Patterdale": 25.0}},
    "co_ref_a": {"ref": "CO-2190", "grid": "NY 32470 12890", "casualties": 1, "party": 2, "injury": "ankle sprain, slow walking",
                 "category": "C", "base_km": {"Patterdale": 6.0, "Keswick": 18.0}},
    "co_ref_b": {"ref": "CO-2201", "grid": "NY 22710 08480", "casualties": 2, "party": 2, "injury": "lost in cloud, cold",
                 "category": "B", "base_km": {"Wasdale": 5.5, "Keswick": 22.0}},
    "co_ref_c": {"ref": "CO-2214", "grid": "NY 39880 13440", "casualties": 1, "party": 5, "injury": "chest pain on ascent",
                 "category": "A", "base_km": {"Patterdale": 8.0, "Keswick": 26.0}},
    "co_ref_d": {"ref": "CO-2220", "grid": "NY 26010 11330", "casualties": 1, "party": 1, "injury": "knee injury, able to hobble",
                 "category": "C", "base_km": {"Wasdale": 9.0, "Keswick": 15.0}},
}
REFS = ["co_ref_a", "co_ref_b", "co_ref_c", "co_ref_d"]
HISTORY = [
    {"ref": "CO-2231", "note": "caller phoned again, casualty cold, party sheltering"},
    {"ref": "CO-2240", "note": "caller line poor, casualty drowsy"},
    {"ref": "CO-2228", "note": "group of 3 injured in rockfall, 3 casualties stretchered"},
]
TEAMS = {"Patterdale": {"team": "PMRT-1", "members": 11}, "Keswick": {"team": "KMRT-2", "members": 14},
         "Wasdale": {"team": "WMRT-1", "members": 9}}

CASES = [
    Case("zzb_rescue_01", NAME, ROUTE, "lossy_parsing", "rescue_grid", "co_helvellyn", "parse_grid_ref", 1, "parse",
         "page_team", "parse_grid_ref keeps only four-figure precision of the caller's ten-figure grid reference."),
    Case("zzb_rescue_02", NAME, ROUTE, "context_pollution", "rescue_ctx", "co_helvellyn", "recall_recent_incidents", 1, "retrieval",
         "page_team", "recall_recent_incidents returns notes from other callouts, and the triage model counts their casualties."),
    Case("zzb_rescue_03", NAME, ROUTE, "wrong_routing", "rescue_route", "co_scafell", "route_asset", 1, "condition",
         "page_team", "route_asset sends a category A casualty by road instead of requesting the helicopter."),
    Case("zzb_rescue_04", NAME, ROUTE, "bad_memory_write", "rescue_mem", "co_scafell", "save_incident", 1, "state",
         "page_team", "save_incident applies its fallback values after the triage, so the incident is stored as category C."),
    Case("zzb_rescue_05", NAME, ROUTE, "unit_error", "rescue_eta", "co_blencathra", "compute_eta", 1, "other",
         "page_team", "compute_eta divides a distance in kilometres by a speed in miles per hour."),
]


@policy("mrt-triage")
def _triage(request):
    p = last_user_json(request)
    casualties = p["casualties"]
    for note in p["recent"]:
        if "casualties" in note["note"]:
            casualties = max(casualties, int(note["note"].split(" casualties")[0].split()[-1]))
    stretchers = casualties if "walk" in p["injury"] and "cannot" in p["injury"] or "drowsy" in p["injury"] \
        or "cold" in p["injury"] or "chest" in p["injury"] else 0
    return json.dumps({"category": p["category"], "casualties": casualties, "stretchers": stretchers,
                       "summary": p["injury"]})


@policy("mrt-teams")
def _teams(request):
    p = last_user_json(request)
    avail = sorted((b for b in p["bases"] if b["available"] >= 6), key=lambda b: b["km"])
    return json.dumps({"team": avail[0]["team"], "base": avail[0]["base"], "members": avail[0]["available"]})


@trajdebug.step(kind="input")
def receive_callout(callout: dict) -> dict:
    return dict(callout)


@trajdebug.step(kind="parse")
def parse_grid_ref(grid: str) -> dict:
    sq, east, north = grid.split()
    if active("rescue_grid"):
        east, north = east[:2], north[:2]
    return {"square": sq, "easting": east, "northing": north, "figures": len(east) + len(north)}


_WEATHER_CALLS = {"n": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def lookup_weather(square: str) -> dict:
    _WEATHER_CALLS["n"] += 1
    if _WEATHER_CALLS["n"] == 1:
        raise ConnectionError("Met Office mountain forecast API: connection reset")
    return {"square": square, "cloud_base_m": 650, "wind_kmh": 35, "flyable": True}


@trajdebug.step(kind="tool")
def log_to_control(ref: str, summary: str) -> dict:
    return {"ref": ref, "logged": True, "log_line": f"{ref}: {summary}"}


@trajdebug.step(kind="retrieval")
def recall_recent_incidents(ref: str) -> list:
    if active("rescue_ctx"):
        return list(HISTORY)
    return [h for h in HISTORY if h["ref"] == ref]


@trajdebug.step(kind="llm")
def triage_callout(callout: dict, recent: list) -> str:
    return chat("mrt-triage", "Triage the callout; give category, casualties and stretchers needed.",
                {"casualties": callout["casualties"], "injury": callout["injury"], "category": callout["category"],
                 "recent": recent})


@trajdebug.step(kind="parse")
def parse_triage(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="state")
def save_incident(ref: str, triage: dict, location: dict) -> None:
    fallback = {"category": "C", "stretchers": 0}
    record = {**triage, **fallback} if active("rescue_mem") else {**fallback, **triage}
    trajdebug.current_run().state["incident"] = {"ref": ref, **record, "location": location}


@trajdebug.step(kind="tool")
def check_base_availability(base: str, km: float) -> dict:
    t = TEAMS[base]
    return {"base": base, "team": t["team"], "available": t["members"] - 3, "km": km}


@trajdebug.step(kind="llm")
def choose_team(bases: list) -> str:
    return chat("mrt-teams", "Choose the nearest team with at least six members available.", {"bases": bases})


@trajdebug.step(kind="agent")
def assemble_team(base_km: dict) -> dict:
    bases = [check_base_availability(b, km) for b, km in base_km.items()]
    return json.loads(choose_team(bases))


@trajdebug.step(kind="condition")
def route_asset(weather: dict) -> str:
    incident = trajdebug.current_run().state["incident"]
    if incident["category"] == "A" and weather["flyable"] and not active("rescue_route"):
        return "helicopter"
    return "road"


@trajdebug.step(kind="other")
def compute_eta(asset: str, km: float) -> dict:
    if asset == "helicopter":
        return {"asset": asset, "eta_min": round(12 + km / 220 * 60)}
    speed_kmh = 30.0
    distance = km * 1.609 if active("rescue_eta") else km
    return {"asset": asset, "eta_min": round(distance / speed_kmh * 60 + 50)}


class PagerError(RuntimeError):
    pass


@trajdebug.step(kind="tool")
def page_team(page: dict) -> dict:
    known = {t["team"] for t in TEAMS.values()}
    if page["team"] not in known:
        raise PagerError(f'HTTP 404 {{"error":"unknown_team","team":"{page["team"]}"}}')
    if page["grid_figures"] < 6:
        raise PagerError(f'HTTP 400 {{"error":"grid_precision","grid":"{page["grid"]}","detail":"6-figure grid or better required"}}')
    if page["stretchers"] > _CURRENT["casualties"]:
        raise PagerError(f'HTTP 409 {{"error":"kit_mismatch","stretchers":{page["stretchers"]},'
                         f'"casualties_reported":{_CURRENT["casualties"]}}}')
    limit = {"A": 60, "B": 90, "C": 150}[page["category"]]
    if page["eta_min"] > limit:
        raise PagerError(f"Dispatch rule R4: ETA {page['eta_min']} min exceeds {limit} min for category {page['category']}")
    return {"paged": page["team"], "incident": page["ref"], "status": "acknowledged"}


_CURRENT: dict = {}


def agent(callout: dict) -> dict:
    c = receive_callout(callout)
    loc = parse_grid_ref(c["grid"])
    weather = lookup_weather(loc["square"])
    recent = recall_recent_incidents(c["ref"])
    triage = parse_triage(triage_callout(c, recent))
    save_incident(c["ref"], triage, loc)
    log_to_control(c["ref"], triage["summary"])
    team = assemble_team(c["base_km"])
    asset = route_asset(weather)
    eta = compute_eta(asset, c["base_km"][team["base"]])
    grid = f"{loc['square']} {loc['easting']} {loc['northing']}"
    return page_team({"ref": c["ref"], "team": team["team"], "grid": grid, "grid_figures": loc["figures"],
                      "stretchers": triage["stretchers"], "category": triage["category"], "eta_min": eta["eta_min"]})


def record(input_key: str, path: str) -> None:
    callout = INPUTS[input_key]
    _CURRENT.clear()
    _CURRENT.update(callout)
    _WEATHER_CALLS["n"] = 0
    try:
        with trajdebug.run(NAME, task=f"callout {callout['ref']} at {callout['grid']}", path=path):
            agent(callout)
    except PagerError:
        pass
