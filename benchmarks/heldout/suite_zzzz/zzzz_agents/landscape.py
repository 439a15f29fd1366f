"""Garden landscaping quotes (otlp route): a client's request -> the model's job extraction -> parser ->
site survey -> crew routing -> per-feature materials and supplier prices (a loop) -> crew calendar ->
quote and its check -> permit lookup -> skip hire -> the model's proposal -> crew booking."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from ._common import chat, system_text, user_text
from ._otlp import Tracing


NAME = "garden-landscape-quotes"
ROUTE = "otlp"
DOMAIN = "garden landscaping, site quotes"
SHAPE = "OTel spans: llm extraction, parser, survey tool, crew router, per-feature loop (materials calc + supplier price tool), crew calendar, quote + check, permit tool, skip hire tool, llm proposal, crew booking tool"
SWITCH = None


def _switched(name: str) -> bool:
    return SWITCH == name


INPUTS = [
    {"task": "quote 14 Elm Row", "request": "Quote for 14 Elm Row: new lawn 12 m x 8 m, a sandstone patio 4 m x 3 m, and a beech hedge along 10 m. Start week 2026-W16."},
    {"task": "quote 3 Mill Lane", "request": "Quote for 3 Mill Lane: new lawn 9 m x 6 m and a beech hedge along 14 m. Start week 2026-W17."},
    {"task": "quote 27 Park Crescent", "request": "Quote for 27 Park Crescent: a porcelain patio 6 m x 4 m and a gravel path 15 m x 1 m. Start week 2026-W16."},
    {"task": "quote 8 Quarry Road", "request": "Quote for 8 Quarry Road: a sandstone patio 5 m x 4 m, new lawn 10 m x 7 m. Start week 2026-W18."},
    {"task": "quote 61 Orchard Way", "request": "Quote for 61 Orchard Way: a gravel path 20 m x 1 m, a beech hedge along 18 m, new lawn 8 m x 5 m. Start week 2026-W17."},
]

SURVEYS = {  # address -> (current survey, the one before)
    "14 Elm Row": ({"surveyed": "2026-02-10", "garden_m2": 180, "access_m": 1.1, "road_frontage": True}, None),
    "3 Mill Lane": ({"surveyed": "2026-02-18", "garden_m2": 120, "access_m": 2.5, "road_frontage": False}, None),
    "27 Park Crescent": ({"surveyed": "2026-03-02", "garden_m2": 140, "access_m": 0.9, "road_frontage": True}, None),
    "8 Quarry Road": ({"surveyed": "2026-03-05", "garden_m2": 150, "access_m": 1.6, "road_frontage": False}, None),
    "61 Orchard Way": ({"surveyed": "2026-03-09", "garden_m2": 170, "access_m": 1.3, "road_frontage": False},
                       {"surveyed": "2019-06-11", "garden_m2": 55, "access_m": 1.3, "road_frontage": False}),
}
PRICES = {"turf": 6.5, "topsoil": 48.0, "sandstone": 58.0, "porcelain": 64.0, "MOT type 1": 42.0, "gravel": 55.0,
          "membrane": 1.2, "beech whips": 2.9, "edging": 7.5}
CREWS = {"hard": ["Stone-1", "Stone-2"], "soft": ["Green-1"]}
CERTIFIED = {"Stone-1": {"patio", "path", "lawn", "hedge"}, "Stone-2": {"patio", "path"}, "Green-1": {"lawn", "hedge"}}
DAY_RATE = 640.0


def brain(request):
    system = system_text(request)
    if system.startswith("Extract the landscaping job"):
        text = user_text(request)
        features = []
        for m in re.finditer(r"(new lawn|(?:a )?(sandstone|porcelain) patio|(?:a )?gravel path) (\d+) m x (\d+) m", text):
            name = "lawn" if "lawn" in m.group(1) else "patio" if "patio" in m.group(1) else "path"
            feat = {"feature": name, "length_m": int(m.group(3)), "width_m": int(m.group(4))}
            if m.group(2):
                feat["material"] = m.group(2)
            features.append(feat)
        for m in re.finditer(r"beech hedge along (\d+) m", text):
            features.append({"feature": "hedge", "length_m": int(m.group(1))})
        return json.dumps({"address": re.search(r"Quote for (.+?):", text).group(1),
                           "week": re.search(r"\d{4}-W\d{2}", text).group(0), "features": features})
    if system.startswith("Write the client proposal"):
        q = json.loads(user_text(request))
        return (f"Dear client, for {q['address']} we propose " + ", ".join(q["features"]) +
                f" for {q['total']:.2f} GBP, crew {q['crew']} from {q['week']}.")
    return "Sorry?"


def parse_job(content: str) -> dict:
    job = json.loads(content)
    feats = [{**f, "area_m2": f["length_m"] * f.get("width_m", 0)} for f in job["features"]]
    return {"address": job["address"], "week": job["week"], "features": feats}


def site_survey(address: str) -> dict:
    current, before = SURVEYS[address]
    rec = before if (_switched("survey-archive") and before) else current
    return {"address": address, **rec}


def route_crew(job: dict) -> dict:
    hard = {"patio", "path"}
    feats = [f["feature"] for f in job["features"]]
    team = "hard" if any(f in hard for f in feats) else "soft"
    if _switched("crew-majority"):
        team = "hard" if sum(f in hard for f in feats) > len(feats) / 2 else "soft"
    return {"team": team, "crew": CREWS[team][0], "features": feats}


def materials(feature: dict) -> list[dict]:
    f, area = feature["feature"], feature["area_m2"]
    if f == "lawn":
        return [{"item": "turf", "qty": math.ceil(area * 1.05), "unit": "m2"}, {"item": "topsoil", "qty": math.ceil(area * 0.1), "unit": "m3"}]
    if f == "hedge":
        return [{"item": "beech whips", "qty": feature["length_m"] * 5, "unit": "plant"}]
    depth_mm = 150 if f == "patio" else 100
    sub_base = round(area * depth_mm / 1000, 2)
    if _switched("depth-mm"):
        sub_base = round(area * depth_mm / 100, 2)
    top = feature.get("material", "gravel")
    items = [{"item": "MOT type 1", "qty": sub_base, "unit": "m3"}, {"item": "membrane", "qty": area, "unit": "m2"}]
    if f == "patio":
        items.append({"item": top, "qty": math.ceil(area * 1.1), "unit": "m2"})
    else:
        items += [{"item": "gravel", "qty": round(area * 0.05, 2), "unit": "m3"}, {"item": "edging", "qty": 2 * feature["length_m"], "unit": "m"}]
    return items


def supplier_prices(items: list[str]) -> dict:
    rows = {i: PRICES[i] for i in items}
    if _switched("price-page") and len(rows) > 4:
        rows = dict(list(rows.items())[:4])
    return {"supplier": "Northern Aggregates", "gbp_per_unit": rows}


def crew_calendar(crew: str, week: str) -> dict:
    return {"crew": crew, "week": week, "free_days": 5}


def compute_quote(items: list[dict], prices: dict, days: int) -> dict:
    lines = []
    for it in items:
        if it["item"] not in prices["gbp_per_unit"]:
            raise KeyError(f"no supplier price for {it['item']}")
        lines.append({**it, "gbp": round(it["qty"] * prices["gbp_per_unit"][it["item"]], 2)})
    materials_gbp = round(sum(line["gbp"] for line in lines), 2)
    return {"lines": lines, "materials": materials_gbp, "labour": days * DAY_RATE, "total": round(materials_gbp + days * DAY_RATE, 2)}


def check_quote(job: dict, survey: dict, quote: dict) -> dict:
    area = sum(f["area_m2"] for f in job["features"])
    if area > survey["garden_m2"]:
        raise ValueError(f"features cover {area} m2, the surveyed garden at {job['address']} is {survey['garden_m2']} m2")
    sub = sum(line["qty"] for line in quote["lines"] if line["item"] == "MOT type 1")
    if sub > 0.2 * survey["garden_m2"]:
        raise ValueError(f"{sub} m3 of MOT type 1 for a {survey['garden_m2']} m2 garden")
    return {"ok": True, "area_m2": area}


def permit_lookup(address: str, skip_on_road: bool) -> dict:
    try:
        if _switched("council-timeout"):
            raise TimeoutError("council permits API did not answer")
        needed = skip_on_road
    except TimeoutError:
        needed = False
    return {"address": address, "permit_needed": needed, "permit": f"SP-{len(address) * 37}" if needed else None}


def book_skip(address: str, on_road: bool, permit: dict) -> dict:
    if on_road and not permit["permit"]:
        raise ValueError(f"skip hire: a road skip at {address} needs a council permit number")
    return {"skip": "8 yd", "address": address, "permit": permit["permit"]}


def book_crew(crew: str, week: str, features: list[str]) -> dict:
    missing = [f for f in features if f not in CERTIFIED[crew]]
    if missing:
        raise ValueError(f"{crew} is not certified for {', '.join(missing)} work")
    return {"crew": crew, "week": week, "booked": True}


def record(inp: dict, out: Path, ctx) -> None:
    t = _tracing()
    with t.recording(out):
        try:
            with t.agent(NAME, inp["task"], inp["request"]):
                answer = chat([{"role": "system", "content": "Extract the landscaping job as JSON."},
                               {"role": "user", "content": inp["request"]}])
                job = t.step("parse_job", "CHAIN", parse_job, answer["content"])
                survey = t.step("site_survey", "TOOL", site_survey, job["address"])
                crew = t.step("route_crew", "CHAIN", route_crew, job)
                items: list[dict] = []
                for feature in job["features"]:
                    items += t.step("materials", "CHAIN", materials, feature)
                names = list(dict.fromkeys(i["item"] for i in items))
                prices = t.step("supplier_prices", "TOOL", supplier_prices, names)
                cal = t.step("crew_calendar", "TOOL", crew_calendar, crew["crew"], job["week"])
                days = min(cal["free_days"], 2 + len(job["features"]))
                quote = t.step("compute_quote", "CHAIN", compute_quote, items, prices, days)
                t.step("check_quote", "GUARDRAIL", check_quote, job, survey, quote)
                on_road = survey["access_m"] < 1.2 and survey["road_frontage"]
                permit = t.step("permit_lookup", "TOOL", permit_lookup, job["address"], on_road)
                t.step("book_skip", "TOOL", book_skip, job["address"], on_road, permit)
                chat([{"role": "system", "content": "Write the client proposal."},
                      {"role": "user", "content": json.dumps({"address": job["address"], "features": crew["features"],
                                                              "total": quote["total"], "crew": crew["crew"], "week": job["week"]})}])
                t.step("book_crew", "TOOL", book_crew, crew["crew"], job["week"], crew["features"])
        except (ValueError, KeyError):
            pass


_t: list[Tracing] = []


def _tracing() -> Tracing:
    if not _t:
        _t.append(Tracing(NAME))
    return _t[0]


CASES = [
    {"id": "landscape_1", "input": 0, "switch": "price-page", "kind": "truncated_result",
     "root": ("supplier_prices", 1), "failure": ("compute_quote", 1),
     "description": "The supplier price list answers only its first four items, so the quote finds no price for the patio's sandstone."},
    {"id": "landscape_2", "input": 4, "switch": "crew-majority", "kind": "wrong_routing",
     "root": ("route_crew", 1), "failure": ("book_crew", 1),
     "description": "The crew router sends the job to the soft-landscaping crew because most features are soft, and the booking finds Green-1 not certified for the gravel path."},
    {"id": "landscape_3", "input": 4, "switch": "survey-archive", "kind": "stale_data",
     "root": ("site_survey", 1), "failure": ("check_quote", 1),
     "description": "The site survey lookup answers the 2019 survey, from before the garden was extended, and the quote check finds the features larger than the garden."},
    {"id": "landscape_4", "input": 2, "switch": "depth-mm", "kind": "unit_error",
     "root": ("materials", 1), "failure": ("check_quote", 1),
     "description": "The patio's sub-base depth in millimetres is divided by 100 instead of 1000, so the quote orders 51 m3 of MOT type 1 and its check refuses it."},
    {"id": "landscape_5", "input": 2, "switch": "council-timeout", "kind": "swallowed_error",
     "root": ("permit_lookup", 1), "failure": ("book_skip", 1),
     "description": "The permit lookup swallows the council API's timeout and answers that no permit is needed, and the skip hire refuses a road skip without a permit number."},
]
