"""Salt mine tours (otlp): booking email -> safety rules -> air readings per level -> route plan -> lift runs -> guide sub-agent -> booking."""
from __future__ import annotations

import json
import math
import re

from openai import OpenAI

from ._otel import Tracer
from .kit import active

AGENT = "salt-mine-tours"
ROUTE = "otlp"
DOMAIN = "salt mine tours"

RULES = {
    "Chapel Route": {"doc": "SOP-7 Chapel Route", "levels": [-1, -2], "max_group": 40, "min_age": 6, "step_free": True},
    "Miners' Trail": {"doc": "SOP-9 Miners' Trail", "levels": [-2], "max_group": 25, "min_age": 12, "step_free": False},
    "Brine Lake": {"doc": "SOP-11 Brine Lake", "levels": [-3], "max_group": 20, "min_age": 10, "step_free": False},
}
AIR_NOW = {-1: {"o2_pct": 20.8, "co2_ppm": 900, "status": "open"}, -2: {"o2_pct": 20.6, "co2_ppm": 1100, "status": "open"},
           -3: {"o2_pct": 20.1, "co2_ppm": 2600, "status": "closed: ventilation works (notice MV-12)"}}
AIR_CACHED = {-3: {"o2_pct": 20.7, "co2_ppm": 1200, "status": "open"}}
GUIDES = [("Ola", ["pl", "en"]), ("Marek", ["pl"]), ("Jan", ["pl", "en"]), ("Ewa", ["pl", "en", "fr"]),
          ("Tomasz", ["pl", "en"]), ("Kasia", ["pl", "de", "en"]), ("Piotr", ["pl", "it"]), ("Lena", ["de", "pl"])]
LIFT_KG = 1200


def _mail(ref, group, size, date, lang, youngest, wheelchairs, route_pref):
    return {"ref": ref, "text": f"Booking {ref} for {group}: {size} visitors on {date}, tour in {lang}. Youngest visitor "
            f"{youngest} years. Wheelchair users: {wheelchairs}. Interested in: {route_pref}."}


INPUTS = {
    "A": _mail("SM-808", "Gymnasium Lindenhof", 34, "2026-05-14", "de", 14, 0, "Miners' Trail"),
    "B": _mail("SM-815", "Rotary Club Lyon", 18, "2026-05-16", "fr", 45, 1, "Chapel Route"),
    "C": _mail("SM-811", "Salzburg Geology Society", 14, "2026-05-15", "de", 16, 0, "Brine Lake"),
    "R1": _mail("SM-820", "Leeds Walking Group", 22, "2026-05-18", "en", 30, 0, "Miners' Trail"),
    "R2": _mail("SM-826", "Scuola Dante", 16, "2026-05-19", "it", 11, 0, "Chapel Route"),
    "R3": _mail("SM-831", "Berliner Seniorenkreis", 28, "2026-05-21", "de", 62, 2, "Chapel Route"),
    "R4": _mail("SM-837", "Krakow Photo Society", 12, "2026-05-22", "pl", 25, 0, "Miners' Trail"),
}

CASES = [
    {"id": "zzf-salt-01", "kind": "context_pollution", "input": "A", "root": ("assemble_guide_context", 1),
     "failure": ("create_booking", 1),
     "desc": "assemble_guide_context carries the previous booking's French-language note into the guide matcher's context, so a French guide is picked for a German tour."},
    {"id": "zzf-salt-02", "kind": "wrong_retrieval", "input": "B", "root": ("retrieve_route_rules", 1),
     "failure": ("create_booking", 1),
     "desc": "retrieve_route_rules returns the Miners' Trail procedure for a Chapel Route request, so a wheelchair user is booked on a route with steps."},
    {"id": "zzf-salt-03", "kind": "unit_error", "input": "A", "root": ("compute_lift_runs", 1),
     "failure": ("reserve_lift", 1),
     "desc": "compute_lift_runs reads the cage capacity in pounds as kilograms and plans too few lift runs for the group."},
    {"id": "zzf-salt-04", "kind": "stale_data", "input": "C", "root": ("read_air_quality", 3),
     "failure": ("create_booking", 1),
     "desc": "read_air_quality serves last week's cached reading for level -3, hiding the ventilation closure the booking system enforces."},
    {"id": "zzf-salt-05", "kind": "truncated_result", "input": "A", "root": ("guide_roster", 1),
     "failure": ("match_guide", 1),
     "desc": "guide_roster returns only the first five guides of the day, none of whom speaks German."},
]

DESK_MEMORY = {"last_booking": "SM-801", "language": "fr", "group": "Lycée Saint-Exupéry"}


def policy(request):
    msgs = request.body["messages"]
    data = json.loads(msgs[-1]["content"])
    if msgs[0]["content"].startswith("Choose a tour route"):
        req = data["request"]
        rule = data["rules"]
        route = rule["name"]
        if req["youngest"] < rule["min_age"] or req["size"] > rule["max_group"]:
            route = "Chapel Route"
        return json.dumps({"route": route, "levels": rule["levels"] if route == rule["name"] else RULES[route]["levels"],
                           "reason": "fits group and age limits"})
    lang = data.get("language_note") or data["language"]
    pick = next((g for g in data["guides"] if lang in g["languages"]), data["guides"][0])
    return json.dumps({"guide": pick["name"], "language": lang})


def record(inp: dict, out, server) -> None:
    server.use(policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    t = Tracer(AGENT)
    try:
        with t.span(AGENT, "AGENT", input=inp["text"], **{"agent.name": AGENT, "session.id": inp["ref"]}) as root:
            with t.span("parse_booking_email", "CHAIN", input=inp["text"]) as s:
                m = re.search(r"Booking (\S+) for (.+?): (\d+) visitors on (\S+), tour in (\w+)\. Youngest visitor (\d+) years\. "
                              r"Wheelchair users: (\d+)\. Interested in: (.+)\.$", inp["text"])
                req = s.output({"ref": m[1], "group": m[2], "size": int(m[3]), "date": m[4], "language": m[5],
                                "youngest": int(m[6]), "wheelchairs": int(m[7]), "route_pref": m[8]})
            query = req["route_pref"] if not req["wheelchairs"] else "Chapel Route"
            with t.span("retrieve_route_rules", "RETRIEVER", input={"query": f"group rules {query}"}) as s:
                name = "Miners' Trail" if active("zzf-salt-02") else query
                rules = s.output({"name": name, **RULES[name]})
            plan = json.loads(t.llm("plan_route", client, [
                {"role": "system", "content": "Choose a tour route for the group within the safety rules. Answer JSON."},
                {"role": "user", "content": json.dumps({"request": req, "rules": rules})}]))
            air = {}
            for level in (-1, -2, -3):
                with t.span("read_air_quality", "TOOL", input={"level": level}, **{"tool.name": "read_air_quality"}) as s:
                    reading = AIR_CACHED[level] if (active("zzf-salt-04") and level in AIR_CACHED) else AIR_NOW[level]
                    air[level] = s.output({"level": level, **reading})
            with t.span("check_route_air", "CHAIN", input={"levels": plan["levels"], "air": air}) as s:
                usable = all(air[lv]["status"] == "open" for lv in plan["levels"])
                if not usable:
                    plan = {"route": "Chapel Route", "levels": RULES["Chapel Route"]["levels"], "reason": "air"}
                s.output({"usable": usable, "plan": plan})
            with t.span("lift_spec", "TOOL", input={"shaft": "Daniłowicz"}, **{"tool.name": "lift_spec"}) as s:
                spec = s.output({"cage_capacity": 2645, "unit": "lb", "max_persons": 15})
            with t.span("compute_lift_runs", "CHAIN", input={"size": req["size"], "spec": spec}) as s:
                cap_kg = spec["cage_capacity"] if active("zzf-salt-03") else spec["cage_capacity"] * 0.4536
                per_run = min(spec["max_persons"] * 3, int(cap_kg // 80))
                runs = s.output({"per_run": per_run, "runs": math.ceil(req["size"] / per_run)})
            with t.span("reserve_lift", "TOOL", input={"date": req["date"], **runs}, **{"tool.name": "reserve_lift"}) as s:
                need = math.ceil(req["size"] / spec["max_persons"])
                if runs["runs"] < need:
                    raise RuntimeError(f"lift reservation refused: {req['size']} visitors need {need} cage runs of at most "
                                       f"{spec['max_persons']} persons, {runs['runs']} requested")
                s.output({"reserved": f"LR-{req['ref'][3:]}", "runs": runs["runs"]})
            with t.span("guide_matcher", "AGENT", input=req, **{"agent.name": "guide_matcher"}):
                with t.span("guide_roster", "TOOL", input={"date": req["date"]}, **{"tool.name": "guide_roster"}) as s:
                    rows = GUIDES[:5] if active("zzf-salt-05") else GUIDES
                    roster = s.output([{"name": n, "languages": ls} for n, ls in rows])
                with t.span("match_guide", "CHAIN", input={"language": req["language"], "roster": roster}) as s:
                    speakers = [g for g in roster if req["language"] in g["languages"]]
                    if not speakers:
                        raise RuntimeError(f"no guide on the {req['date']} roster speaks '{req['language']}' "
                                           f"({len(roster)} guides checked)")
                    s.output(speakers)
                with t.span("assemble_guide_context", "CHAIN", input={"request": req}) as s:
                    ctx = {"language": req["language"], "guides": speakers + [g for g in roster if g not in speakers]}
                    if active("zzf-salt-01"):
                        ctx["language_note"] = DESK_MEMORY["language"]
                    s.output(ctx)
                guide = json.loads(t.llm("pick_guide", client, [
                    {"role": "system", "content": "Pick the guide for the tour. Answer JSON."},
                    {"role": "user", "content": json.dumps(ctx)}]))
            with t.span("create_booking", "TOOL", input={"request": req, "plan": plan, "guide": guide},
                        **{"tool.name": "create_booking"}) as s:
                rule = RULES[plan["route"]]
                if req["wheelchairs"] and not rule["step_free"]:
                    raise RuntimeError(f"booking {req['ref']} refused: {req['wheelchairs']} wheelchair user(s) on "
                                       f"{plan['route']}, which is not step-free ({rule['doc']})")
                for lv in plan["levels"]:
                    if AIR_NOW[lv]["status"] != "open":
                        raise RuntimeError(f"booking {req['ref']} refused: level {lv} is {AIR_NOW[lv]['status']}")
                langs = dict(GUIDES)[guide["guide"]]
                if req["language"] not in langs:
                    raise RuntimeError(f"booking {req['ref']} refused: guide {guide['guide']} does not lead tours in "
                                       f"'{req['language']}' (speaks {', '.join(langs)})")
                s.output({"booking": f"TB-{req['ref'][3:]}", "route": plan["route"], "guide": guide["guide"]})
            root.output({"booking": f"TB-{req['ref'][3:]}"})
    except RuntimeError:
        pass
    t.write(out)
