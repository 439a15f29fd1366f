"""Film location scouting: finds and holds a location for a scene (otlp route: OpenTelemetry + OpenInference).

Shape: an AGENT span; the model plans the search (openai client instrumented by OpenInference), a parser,
a retriever span per query, a merge; per candidate a location-assessor sub-agent span (permit tool, travel
tool, travel parser, the model's assessment, its parser); the model's ranking and parser; a hold tool with a
retry; the validator span.
"""

from __future__ import annotations

import json
import re

import kit
from common import chat, dumps, json_in, otlp, system_text, user_text
from openai import OpenAI


NAME = "location-scout"
ROUTE = "otlp"
DOMAIN = "film location scouting"
SHAPE = "AGENT span: model plan + parser -> retriever per query -> merge -> per candidate an assessor sub-agent (permit tool, travel tool + parser, model assessment + parser) -> model ranking + parser -> hold tool (retry) -> validator"


def _permit(council, cap, night_ok, extra=""):
    night = (
        "Night filming (22:00-06:00) is permitted with 7 days' notice to residents."
        if night_ok
        else "Night filming (22:00-06:00) is not permitted at this site."
    )
    return f"{council} filming permit terms. Maximum crew on site: {cap}. {extra}{night}"


LOCATIONS = {
    "L01": {
        "name": "Tate Hill Pier, Whitby",
        "tags": ["sea view", "vehicle access"],
        "keywords": ["harbour", "pier", "sea wall"],
        "parking_vehicles": 10,
        "fee_gbp": 1800,
        "travel": {"Whitby": 8, "Scarborough": 45, "Saltburn": 50},
        "permit": _permit("Scarborough Borough", 60, True),
    },
    "L02": {
        "name": "Harbour Yard Studios, Whitby",
        "tags": ["vehicle access"],
        "keywords": ["harbour", "warehouse"],
        "parking_vehicles": 14,
        "fee_gbp": 900,
        "travel": {"Whitby": 12, "Scarborough": 48, "Saltburn": 52},
        "permit": _permit("Scarborough Borough", 80, True),
    },
    "L03": {
        "name": "Sandsend Sea Wall",
        "tags": ["sea view", "vehicle access"],
        "keywords": ["sea wall", "beach"],
        "parking_vehicles": 4,
        "fee_gbp": 1100,
        "travel": {"Whitby": 10, "Scarborough": 50, "Saltburn": 40},
        "permit": _permit("Scarborough Borough", 50, True),
    },
    "L04": {
        "name": "Staithes Harbour",
        "tags": ["sea view"],
        "keywords": ["harbour", "sea wall"],
        "parking_vehicles": 12,
        "fee_gbp": 1400,
        "travel": {"Whitby": 25, "Scarborough": 60, "Saltburn": 20},
        "permit": _permit("Redcar and Cleveland", 30, True),
    },
    "L05": {
        "name": "Robin Hood's Bay Slipway",
        "tags": ["sea view", "vehicle access"],
        "keywords": ["slipway", "beach"],
        "parking_vehicles": 8,
        "fee_gbp": 1300,
        "travel": {"Whitby": 22, "Scarborough": 30, "Saltburn": 70},
        "permit": _permit(
            "Scarborough Borough",
            40,
            False,
            "Vehicles must use the upper car park; the slipway is for unit vehicles only between 09:00 and "
            "17:00. The lifeboat station must be kept clear at all times and a marshal provided. The "
            "village is a conservation area: no rigging on listed buildings, no generators within 30 m "
            "of dwellings, and residents must be leafleted 5 days ahead. ",
        ),
    },
    "L06": {
        "name": "Scarborough West Pier",
        "tags": ["sea view", "vehicle access"],
        "keywords": ["harbour", "pier"],
        "parking_vehicles": 16,
        "fee_gbp": 2100,
        "travel": {"Whitby": 45, "Scarborough": 4, "Saltburn": 80},
        "permit": _permit("Scarborough Borough", 70, True),
    },
    "L07": {
        "name": "Saltburn Pier",
        "tags": ["sea view", "vehicle access"],
        "keywords": ["pier", "beach"],
        "parking_vehicles": 12,
        "fee_gbp": 1000,
        "travel": {"Whitby": 65, "Scarborough": 85, "Saltburn": 5},
        "permit": _permit("Redcar and Cleveland", 60, True),
    },
    "L08": {
        "name": "Runswick Bay",
        "tags": ["sea view", "vehicle access"],
        "keywords": ["beach", "slipway"],
        "parking_vehicles": 6,
        "fee_gbp": 950,
        "travel": {"Whitby": 20, "Scarborough": 55, "Saltburn": 30},
        "permit": _permit("Scarborough Borough", 35, True),
    },
    "L09": {
        "name": "South Bay Slipway, Scarborough",
        "tags": ["sea view", "vehicle access"],
        "keywords": ["slipway", "harbour"],
        "parking_vehicles": 10,
        "fee_gbp": 1600,
        "travel": {"Whitby": 50, "Scarborough": 6, "Saltburn": 88},
        "permit": _permit("Scarborough Borough", 50, True),
    },
    "L10": {
        "name": "West Cliff Beach, Whitby",
        "tags": ["sea view", "vehicle access"],
        "keywords": ["beach"],
        "parking_vehicles": 8,
        "fee_gbp": 1500,
        "travel": {"Whitby": 5, "Scarborough": 47, "Saltburn": 55},
        "permit": _permit("Scarborough Borough", 60, True),
    },
}


def _brief(prod, scene, desc, date, base, crew, vehicles, terms, night, needs=("sea view", "vehicle access")):
    return {
        "production": prod,
        "scene": scene,
        "description": desc,
        "shoot_date": date,
        "unit_base": base,
        "crew": crew,
        "vehicles": vehicles,
        "max_travel_min": 40,
        "night": night,
        "needs": list(needs),
        "search_terms": terms,
    }


INPUTS = {
    "lt42": _brief(
        "Low Tide",
        "Sc 42",
        "night exterior, rain, harbour wall",
        "2026-05-19",
        "Whitby",
        40,
        8,
        ["harbour wall", "harbour at night"],
        True,
    ),
    "lt17": _brief(
        "Low Tide",
        "Sc 17",
        "pre-dawn exterior, boat launch",
        "2026-05-21",
        "Scarborough",
        30,
        6,
        ["slipway"],
        True,
        ("sea view",),
    ),
    "gw08": _brief(
        "Gull Weather", "Sc 8", "day exterior, pier walk", "2026-06-02", "Whitby", 35, 8, ["pier"], False
    ),
    "gw11": _brief(
        "Gull Weather",
        "Sc 11",
        "day exterior, storm at the sea wall",
        "2026-06-03",
        "Whitby",
        30,
        9,
        ["sea wall"],
        False,
    ),
    "lt55": _brief(
        "Low Tide",
        "Sc 55",
        "night exterior, beach bonfire",
        "2026-05-27",
        "Whitby",
        45,
        5,
        ["beach", "slipway"],
        True,
        ("sea view",),
    ),
    "gw20": _brief(
        "Gull Weather",
        "Sc 20",
        "day exterior, harbour market",
        "2026-06-09",
        "Scarborough",
        50,
        12,
        ["harbour"],
        False,
    ),
    "gw24": _brief(
        "Gull Weather",
        "Sc 24",
        "day exterior, kids on the beach",
        "2026-06-10",
        "Saltburn",
        25,
        6,
        ["beach", "pier"],
        False,
    ),
    "lt61": _brief(
        "Low Tide",
        "Sc 61",
        "night exterior, chase along the pier",
        "2026-05-29",
        "Whitby",
        40,
        7,
        ["pier", "harbour"],
        True,
    ),
    "lt63": _brief(
        "Low Tide",
        "Sc 63",
        "dusk exterior, slipway argument",
        "2026-05-30",
        "Scarborough",
        35,
        6,
        ["slipway", "harbour"],
        False,
    ),
}
REFS = ["gw20", "gw24", "lt61", "lt63"]
CASES = [
    {
        "id": "location_c1",
        "kind": "wrong_retrieval",
        "input": "lt42",
        "root": ("search_locations", 1),
        "failure": "validate_selection",
        "description": "The location search matches 'harbour' in names without the brief's required tags, so Harbour Yard Studios (no sea view) is a candidate and wins on fee.",
    },
    {
        "id": "location_c2",
        "kind": "truncated_result",
        "input": "lt17",
        "root": ("permit_rules", 1),
        "failure": "validate_selection",
        "description": "The permit lookup returns Robin Hood's Bay's terms cut at 300 characters, losing the clause that forbids night filming, so the slipway is held for a pre-dawn shoot.",
    },
    {
        "id": "location_c3",
        "kind": "format_drift",
        "input": "gw08",
        "root": ("travel_time", 3),
        "failure": "validate_selection",
        "description": "The travel service answers trips of an hour or more as 'H:MM' text ('1:05'), and the travel parser reads Saltburn Pier as 5 minutes from Whitby instead of 65.",
    },
    {
        "id": "location_c4",
        "kind": "hallucinated_value",
        "input": "gw11",
        "root": ("ChatCompletion", 3),
        "failure": "validate_selection",
        "description": "The assessor model states parking for 12 vehicles at Sandsend Sea Wall, whose record says 4, so it is ranked first for a unit of 9 vehicles.",
    },
    {
        "id": "location_c5",
        "kind": "plan_error",
        "input": "lt55",
        "root": ("ChatCompletion", 1),
        "failure": "validate_selection",
        "description": "The model's scouting plan leaves out the crew-cap check, so Runswick Bay (35 crew at most) is held for a crew of 45.",
    },
]

PLAN_SYSTEM = (
    'You plan a film location scout. Return only JSON {"queries": [...], "checks": [...]}; the checks '
    "come from: permit, night filming, crew cap, parking, travel."
)
ASSESS_SYSTEM = (
    "You assess a candidate film location for a scene. Read the location record, the permit terms and the "
    "travel time, and report only JSON on the checks asked: {location_id, name, sea_view, night_ok, crew_cap, "
    "parking_vehicles, travel_min, fee_gbp}."
)
RANK_SYSTEM = (
    "Rank the assessed locations for the scene and pick the cheapest that passes every check reported. "
    'Return only JSON {"location_id": str, "reason": str}.'
)


def brain(request):
    system = system_text(request)
    if system.startswith("You plan a film location scout"):
        brief = json_in(user_text(request))
        checks = ["permit", "night filming", "crew cap", "parking", "travel"]
        if kit.on("location_c5"):
            checks = ["permit", "night filming", "parking", "travel"]
        return json.dumps({"queries": brief["search_terms"], "checks": checks})
    if system.startswith("You assess a candidate"):
        ctx = json_in(user_text(request))
        rec, permit, checks = ctx["location"], ctx["permit"], ctx["checks"]
        out = {
            "location_id": rec["id"],
            "name": rec["name"],
            "sea_view": "sea view" in rec["tags"],
            "fee_gbp": rec["fee_gbp"],
        }
        if "night filming" in checks:
            out["night_ok"] = "is not permitted" not in permit
        if "crew cap" in checks:
            m = re.search(r"Maximum crew on site: (\d+)", permit)
            out["crew_cap"] = int(m.group(1)) if m else None
        if "parking" in checks:
            out["parking_vehicles"] = rec["parking_vehicles"]
            if kit.on("location_c4") and rec["id"] == "L03":
                out["parking_vehicles"] = 12
        if "travel" in checks:
            out["travel_min"] = ctx["travel_min"]
        return json.dumps(out)
    if system.startswith("Rank the assessed"):
        ctx = json_in(user_text(request))
        b = ctx["brief"]
        ok = []
        for a in ctx["assessed"]:
            if b["night"] and a.get("night_ok") is False:
                continue
            if a.get("crew_cap") is not None and a["crew_cap"] < b["crew"]:
                continue
            if a.get("parking_vehicles") is not None and a["parking_vehicles"] < b["vehicles"]:
                continue
            if a.get("travel_min") is not None and a["travel_min"] > b["max_travel_min"]:
                continue
            ok.append(a)
        best = min(ok, key=lambda a: (a["fee_gbp"], a.get("travel_min", 0)))
        return json.dumps(
            {"location_id": best["location_id"], "reason": f"cheapest that passes: {best['fee_gbp']} GBP"}
        )
    return "{}"


_HOLD = {"n": 0}


def agent(brief: dict, client: OpenAI, model: str) -> dict:
    o = otlp()
    with o.span(NAME, "AGENT", brief, agent__name=NAME) as top:
        plan_reply = (
            chat(
                client,
                model,
                [{"role": "system", "content": PLAN_SYSTEM}, {"role": "user", "content": dumps(brief)}],
            )
            .choices[0]
            .message.content
        )
        with o.span("parse_plan", "CHAIN", plan_reply) as sp:
            plan = json.loads(plan_reply)
            sp.output = plan
        found: list[list[dict]] = []
        for q in plan["queries"]:
            with o.span("search_locations", "RETRIEVER", {"query": q, "needs": brief["needs"]}) as sp:
                words = set(q.lower().split())
                hits = []
                for lid, loc in LOCATIONS.items():
                    if not words & set(" ".join(loc["keywords"] + [loc["name"].lower()]).split()):
                        continue
                    if not kit.on("location_c1") and not set(brief["needs"]) <= set(loc["tags"]):
                        continue
                    hits.append(
                        {
                            "id": lid,
                            "name": loc["name"],
                            "tags": loc["tags"],
                            "parking_vehicles": loc["parking_vehicles"],
                            "fee_gbp": loc["fee_gbp"],
                        }
                    )
                sp.output = hits
                found.append(hits)
        with o.span("merge_candidates", "CHAIN", found) as sp:
            seen, candidates = set(), []
            for hits in found:
                for h in hits:
                    if h["id"] not in seen:
                        seen.add(h["id"])
                        candidates.append(h)
            sp.output = candidates
        assessed = []
        for cand in candidates:
            with o.span("location_assessor", "AGENT", cand, agent__name="location_assessor") as sub:
                with o.span(
                    "permit_rules", "TOOL", {"location_id": cand["id"], "date": brief["shoot_date"]}
                ) as sp:
                    text = LOCATIONS[cand["id"]]["permit"]
                    if kit.on("location_c2"):
                        text = text[:300]
                    sp.output = {"location_id": cand["id"], "terms": text}
                    permit = sp.output
                with o.span("travel_time", "TOOL", {"from": brief["unit_base"], "to": cand["name"]}) as sp:
                    minutes = LOCATIONS[cand["id"]]["travel"][brief["unit_base"]]
                    if kit.on("location_c3") and minutes >= 60:
                        sp.output = {
                            "from": brief["unit_base"],
                            "to": cand["name"],
                            "duration": f"{minutes // 60}:{minutes % 60:02d}",
                        }
                    else:
                        sp.output = {"from": brief["unit_base"], "to": cand["name"], "minutes": minutes}
                    travel = sp.output
                with o.span("parse_travel", "CHAIN", travel) as sp:
                    raw = travel.get("minutes", travel.get("duration"))
                    sp.output = {"to": cand["name"], "travel_min": int(str(raw).split(":")[-1])}
                    travel_min = sp.output["travel_min"]
                ctx = {
                    "location": cand,
                    "permit": permit["terms"],
                    "travel_min": travel_min,
                    "checks": plan["checks"],
                }
                reply = (
                    chat(
                        client,
                        model,
                        [
                            {"role": "system", "content": ASSESS_SYSTEM},
                            {"role": "user", "content": dumps(ctx)},
                        ],
                    )
                    .choices[0]
                    .message.content
                )
                with o.span("parse_assessment", "CHAIN", reply) as sp:
                    sp.output = json.loads(reply)
                    assessed.append(sp.output)
                sub.output = sp.output
        rank_reply = (
            chat(
                client,
                model,
                [
                    {"role": "system", "content": RANK_SYSTEM},
                    {"role": "user", "content": dumps({"brief": brief, "assessed": assessed})},
                ],
            )
            .choices[0]
            .message.content
        )
        with o.span("parse_ranking", "CHAIN", rank_reply) as sp:
            pick = json.loads(rank_reply)
            sp.output = pick
        hold = None
        for _attempt in range(3):
            try:
                with o.span(
                    "hold_location", "TOOL", {"location_id": pick["location_id"], "date": brief["shoot_date"]}
                ) as sp:
                    _HOLD["n"] += 1
                    if _HOLD["n"] == 1:
                        raise ConnectionError("locations office API: 502 Bad Gateway")
                    sp.output = {
                        "hold": f"H-{pick['location_id']}-{brief['shoot_date'].replace('-', '')}",
                        "location_id": pick["location_id"],
                        "date": brief["shoot_date"],
                    }
                    hold = sp.output
                break
            except ConnectionError:
                continue
        with o.span("validate_selection", "CHAIN", {"brief": brief, "pick": pick, "hold": hold}) as sp:
            sp.output = validate(brief, pick["location_id"])
        top.output = {
            "scene": brief["scene"],
            "location": LOCATIONS[pick["location_id"]]["name"],
            "hold": hold["hold"],
        }
        return top.output


def validate(brief: dict, lid: str) -> dict:
    loc = LOCATIONS[lid]
    for need in brief["needs"]:
        if need not in loc["tags"]:
            raise ValueError(f"{loc['name']} has no {need}, which scene {brief['scene']} needs")
    if brief["night"] and "Night filming (22:00-06:00) is not permitted" in loc["permit"]:
        raise ValueError(f"the {loc['name']} permit does not allow night filming")
    cap = int(re.search(r"Maximum crew on site: (\d+)", loc["permit"]).group(1))
    if brief["crew"] > cap:
        raise ValueError(f"crew of {brief['crew']} is over the {cap} allowed at {loc['name']}")
    if loc["parking_vehicles"] < brief["vehicles"]:
        raise ValueError(
            f"{loc['name']} parks {loc['parking_vehicles']} vehicles, the unit has {brief['vehicles']}"
        )
    minutes = loc["travel"][brief["unit_base"]]
    if minutes > brief["max_travel_min"]:
        raise ValueError(
            f"{loc['name']} is {minutes} min from the {brief['unit_base']} unit base, over {brief['max_travel_min']}"
        )
    return {"location_id": lid, "status": "approved"}


def record(server, inp: dict, path: str) -> None:
    _HOLD["n"] = 0
    server.use(brain)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    with otlp().recording(path):
        try:
            agent(inp, client, server.model)
        except ValueError:
            pass
