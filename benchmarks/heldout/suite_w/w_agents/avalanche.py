"""Avalanche bulletin agent (route: sdk).

Plans the zones of a forecast region, reads each zone's snow station, keeps a per-zone record in run
state, rates every zone with the model, drafts the bulletin, checks it and publishes it to the
regional bulletin service (which validates it).
"""

from __future__ import annotations

import json
from contextlib import contextmanager

import trajdebug
from openai import OpenAI
from trajdebug.testing import FakeModelServer

import kit

AGENT = "avalanche-bulletin"
ROUTE = "sdk"
DOMAIN = "avalanche forecasting"
SHAPE = "plan (llm) -> per zone: station fetch, parse, state write -> history lookup -> per zone rating (llm) -> draft (llm) -> own check -> publish API"

REGIONS = {
    "Glen Coe": {"code": "GC", "top_m": 1150, "zones": 3},
    "Lochaber": {"code": "LO", "top_m": 1345, "zones": 4},
    "Cairngorms": {"code": "CG", "top_m": 1309, "zones": 3},
    "Creag Meagaidh": {"code": "CM", "top_m": 1130, "zones": 3},
    "Torridon": {"code": "TO", "top_m": 1054, "zones": 3},
    "Northern Cairngorms": {"code": "NC", "top_m": 1296, "zones": 4},
    "Southern Cairngorms": {"code": "SC", "top_m": 1155, "zones": 3},
    "Arrochar": {"code": "AR", "top_m": 1011, "zones": 3},
    "Ben Nevis": {"code": "BN", "top_m": 1345, "zones": 4},
}
ASPECTS = ["NE", "E", "SE", "N", "NW"]


def _inp(region: str, day: int) -> dict:
    return {"region": region, "date": f"2026-12-{day:02d}"}


REFS = [_inp("Glen Coe", 1), _inp("Cairngorms", 2), _inp("Torridon", 1), _inp("Arrochar", 2)]


def readings(region: str, zone: int) -> dict:
    r = list(REGIONS).index(region)
    return {
        "hs_cm": 95 + 17 * zone + 11 * r,
        "hn24_cm": 9 + 3 * zone + 2 * r,
        "hn72_cm": 31 + 5 * zone + 4 * r,
        "ta_c": -round(3.2 + 1.7 * zone + 0.9 * r, 1),
        "wind_kmh": 22 + 6 * zone + r,
        "wind_dir": ["SW", "W", "NW", "S"][zone % 4],
    }


def station_id(region: str, zone: int) -> str:
    return f"{REGIONS[region]['code']}-{101 + zone}"


# ---------------------------------------------------------------- the scripted model (policy)

def _user(request) -> dict:
    return json.loads(request.body["messages"][-1]["content"])


def _system(request) -> str:
    return request.body["messages"][0]["content"]


def brain(request):
    sys_prompt, msg = _system(request), _user(request)
    if sys_prompt.startswith("PLAN"):
        region = msg["region"]
        zones = []
        for z in range(REGIONS[region]["zones"]):
            st = station_id(region, z)
            if z == 1 and kit.active("av-plan-station"):
                st = station_id(list(REGIONS)[list(REGIONS).index(region) - 4], z)
            zones.append({"zone": f"{REGIONS[region]['code']}{z + 1}", "station": st})
        return json.dumps({"region": region, "zones": zones})
    if sys_prompt.startswith("RATE"):
        rec = msg["record"]
        load = rec["new_snow_cm"] + rec["wind_kmh"] / 4
        danger = 1 + (load > 15) + (load > 30) + (rec["new_snow_cm"] >= 45) + (load > 60)
        problem = "wet snow" if rec["air_temp_c"] > 0 else ("wind slab" if rec["wind_kmh"] >= 30 else "storm slab")
        top = msg["region_top_m"]
        band_from = top - 250
        if msg["zone"].endswith("3") and kit.active("av-rate-band"):
            band_from = top + 380
        return json.dumps({"zone": msg["zone"], "danger": int(danger), "problem": problem,
                           "aspects": ASPECTS[: 2 + danger % 3], "elevation_from_m": band_from})
    if sys_prompt.startswith("DRAFT"):
        worst = max(z["danger"] for z in msg["ratings"])
        return json.dumps({"headline": f"Danger up to level {worst} in {msg['region']}",
                           "issue_no": msg["previous"]["issue_no"] + 1, "date": msg["date"],
                           "zones": msg["ratings"]})
    raise ValueError("unknown prompt")


# ---------------------------------------------------------------- the agent

def _ask(client: OpenAI, name: str, system: str, payload: dict) -> dict:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}]
    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        reply = client.chat.completions.create(model="forecast-model", messages=messages)
        msg = reply.choices[0].message
        s.output = {"role": "assistant", "content": msg.content, "tool_calls": []}
        s.usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens, completion_tokens=reply.usage.completion_tokens)
    return json.loads(msg.content)


@trajdebug.step(kind="tool")
def fetch_station(station: str, date: str) -> str:
    code, num = station.split("-")
    region = next(r for r, v in REGIONS.items() if v["code"] == code)
    z = int(num) - 101
    v = readings(region, z)
    return (f"STN {station} {date}T06:00Z HS={v['hs_cm']}cm HN24={v['hn24_cm']}cm HN72={v['hn72_cm']}cm "
            f"TA={v['ta_c']}C FF={v['wind_kmh']}km/h DD={v['wind_dir']}")


@trajdebug.step(kind="parse")
def parse_readings(raw: str) -> dict:
    fields = dict(tok.split("=", 1) for tok in raw.split() if "=" in tok)
    ta = fields["TA"].rstrip("C")
    if kit.active("av-parse-sign"):
        ta = ta.lstrip("-")
    return {
        "station": raw.split()[1],
        "hs_cm": int(fields["HS"].rstrip("cm")),
        "hn24_cm": int(fields["HN24"].rstrip("cm")),
        "hn72_cm": int(fields["HN72"].rstrip("cm")),
        "air_temp_c": float(ta),
        "wind_kmh": int(fields["FF"].split("km")[0]),
        "wind_dir": fields["DD"],
    }


@trajdebug.step(kind="state")
def record_zone(zone: str, obs: dict) -> dict:
    rec = {"zone": zone, "station": obs["station"], "snow_depth_cm": obs["hs_cm"],
           "new_snow_cm": obs["hn24_cm"], "air_temp_c": obs["air_temp_c"], "wind_kmh": obs["wind_kmh"]}
    if zone.endswith("2") and kit.active("av-record-72h"):
        rec["new_snow_cm"] = obs["hn72_cm"]
    trajdebug.current_run().state[f"zone:{zone}"] = rec
    return rec


@trajdebug.step(kind="retrieval")
def load_previous_bulletin(region: str, date: str) -> dict:
    code = REGIONS[region]["code"]
    day = int(date[-2:])
    issue = 4400 + 40 * list(REGIONS).index(region) + day
    prev_date = f"2026-11-{29 + day:02d}" if day <= 1 else f"2026-12-{day - 1:02d}"
    if kit.active("av-history-season"):
        issue, prev_date = issue - 37, prev_date.replace("2026", "2025")
    return {"region": code, "issue_no": issue, "date": prev_date, "max_danger": 2}


@trajdebug.step(kind="condition")
def check_bulletin(draft: dict, plan: dict, region: str) -> dict:
    zones = {z["zone"] for z in plan["zones"]}
    assert {z["zone"] for z in draft["zones"]} == zones, "bulletin does not cover every planned zone"
    for z in plan["zones"]:
        if not z["station"].startswith(REGIONS[region]["code"] + "-"):
            raise ValueError(f"zone {z['zone']}: station {z['station']} is outside the {region} network")
    return {"ok": True, "zones": len(zones)}


@trajdebug.step(kind="tool")
def publish_bulletin(bulletin: dict, region: str) -> dict:
    top = REGIONS[region]["top_m"]
    code = REGIONS[region]["code"]
    latest = 4400 + 40 * list(REGIONS).index(region) + int(bulletin["date"][-2:]) - 1
    if bulletin["issue_no"] <= latest:
        raise RuntimeError(f"409 Conflict: issue {bulletin['issue_no']} already published for {code}")
    for z in bulletin["zones"]:
        if z["elevation_from_m"] > top:
            raise RuntimeError(f"422 Unprocessable Entity: zones[{z['zone']}].elevation_from_m={z['elevation_from_m']} above highest summit {top} m")
        if z["problem"] == "wet snow":
            raise RuntimeError(f"422 Unprocessable Entity: zones[{z['zone']}].problem 'wet snow' conflicts with the freezing level (400 m) below the zone")
        if z["danger"] >= 4:
            raise RuntimeError(f"403 Forbidden: danger level {z['danger']} in {z['zone']} needs a second forecaster's sign-off")
    return {"status": 201, "issue_no": bulletin["issue_no"], "url": f"https://bulletins.example.org/{code}/{bulletin['issue_no']}"}


def run_agent(client: OpenAI, inp: dict) -> dict:
    with trajdebug.step("receive_request", kind="input") as s:
        s.output = dict(inp)
    plan = _ask(client, "plan_zones", "PLAN the zones and their snow stations for this region.", inp)
    for z in plan["zones"]:
        raw = fetch_station(z["station"], inp["date"])
        obs = parse_readings(raw)
        record_zone(z["zone"], obs)
    previous = load_previous_bulletin(inp["region"], inp["date"])
    ratings = []
    with trajdebug.step("rate_zones", kind="agent"):
        for z in plan["zones"]:
            with trajdebug.step("read_zone", kind="state") as s:
                rec = trajdebug.current_run().state[f"zone:{z['zone']}"]
                s.output = rec
            ratings.append(_ask(client, "rate_zone", "RATE the avalanche danger of this zone.",
                                {"zone": z["zone"], "record": rec, "region_top_m": REGIONS[inp["region"]]["top_m"]}))
    draft = _ask(client, "draft_bulletin", "DRAFT the bulletin from the zone ratings.",
                 {"region": inp["region"], "date": inp["date"], "previous": previous, "ratings": ratings})
    check_bulletin(draft, plan, inp["region"])
    return publish_bulletin(draft, inp["region"])


@contextmanager
def session():
    with FakeModelServer(brain, model="forecast-model") as server:
        yield OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


def record(client, inp: dict, path) -> None:
    try:
        with trajdebug.run(AGENT, task=f"avalanche bulletin for {inp['region']} on {inp['date']}", path=str(path)):
            run_agent(client, inp)
    except Exception:
        pass


CASES = [
    {"case": "w_avalanche_1", "fault": "av-parse-sign", "kind": "lossy_parsing", "input": _inp("Lochaber", 3),
     "root": "parse_readings", "marker": '"air_temp_c": 4.1'},
    {"case": "w_avalanche_2", "fault": "av-history-season", "kind": "stale_data", "input": _inp("Ben Nevis", 4),
     "root": "load_previous_bulletin", "marker": "2025-12-03"},
    {"case": "w_avalanche_3", "fault": "av-rate-band", "kind": "hallucinated_value", "input": _inp("Creag Meagaidh", 2),
     "root": "rate_zone", "marker": "1510"},
    {"case": "w_avalanche_4", "fault": "av-record-72h", "kind": "bad_memory_write", "input": _inp("Northern Cairngorms", 3),
     "root": "record_zone", "marker": '"new_snow_cm": 56'},
    {"case": "w_avalanche_5", "fault": "av-plan-station", "kind": "wrong_tool_args", "input": _inp("Southern Cairngorms", 1),
     "root": "plan_zones", "marker": "CG-102"},
]
