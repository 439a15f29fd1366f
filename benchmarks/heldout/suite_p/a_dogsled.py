"""Sled-dog race resupply planner (otlp route): checkpoints, a rulebook retriever, trail report, a model
plans the food drops, a per-checkpoint ration and staging loop, a model summary, the race marshal's sign-off."""

from __future__ import annotations

import json

from kit import Case, active
from otlpkit import Tracer, ask, client_for, recording


AGENT = "sled-dog-resupply"
ROUTE = "otlp"
DOMAIN = "long-distance sled-dog race food drops"
SHAPE = "entry -> checkpoint list -> rulebook retriever -> trail report -> model plans drops -> per-checkpoint info/ration/stage loop (x6) -> model summary -> marshal sign-off"

ROUTE_CPS = {
    "north": ["Skwentna", "Finger Lake", "Rainy Pass", "Rohn", "Nikolai", "McGrath", "Takotna", "Ophir"],
    "south": ["Yentna", "Skwentna", "Finger Lake", "Rainy Pass", "Rohn", "Nikolai"],
}
LEG_H = {"Skwentna": 9, "Finger Lake": 7, "Rainy Pass": 6, "Rohn": 8, "Nikolai": 12, "McGrath": 7, "Takotna": 4,
         "Ophir": 6, "Yentna": 5}
ENTRIES = {
    "T-08": {"team": "T-08", "musher": "A. Koenig", "dogs": 14, "route": "south"},
    "T-11": {"team": "T-11", "musher": "R. Sato", "dogs": 16, "route": "south"},
    "T-15": {"team": "T-15", "musher": "M. Olsen", "dogs": 16, "route": "north"},
    "T-21": {"team": "T-21", "musher": "J. Pike", "dogs": 12, "route": "north"},
    "T-23": {"team": "T-23", "musher": "L. Diaz", "dogs": 14, "route": "south"},
    "T-30": {"team": "T-30", "musher": "E. Watt", "dogs": 10, "route": "north"},
}
INPUTS = ENTRIES
REFS = ["T-15", "T-21", "T-23", "T-30"]
CASES = [
    Case("sled.rules", "wrong_retrieval", "search_rulebook", "CB300-R12", "T-08"),
    Case("sled.plan", "plan_error", "ChatCompletion", "Finger Lake > Rohn", "T-08"),
    Case("sled.list", "truncated_result", "list_checkpoints", "4 checkpoints", "T-08"),
    Case("sled.units", "unit_error", "ration_calc", "kg_per_dog_h 0.25", "T-11"),
    Case("sled.trail", "stale_data", "trail_conditions", "2026-12-01", "T-11"),
]
RULES = [
    {"id": "IR-36", "race": "Iditarod-style 1000", "text": "Each team takes one 24 hour layover at a checkpoint of its choice."},
    {"id": "IR-14", "race": "Iditarod-style 1000", "text": "A food drop bag may not exceed 40 kg."},
    {"id": "CB300-R12", "race": "Copper Basin 300", "text": "Each team takes an 8 hour layover at any checkpoint."},
]
RACE_DAY = "2026-12-03"


def list_checkpoints(route: str) -> dict:
    cps = ROUTE_CPS[route]
    if active("sled.list"):
        cps = cps[:4]  # the race API's first page
    return {"route": route, "checkpoints": cps, "summary": f"{len(cps)} checkpoints"}


def search_rulebook(query: str, k: int) -> list:
    if active("sled.rules"):
        return [RULES[2], RULES[1]]
    return [RULES[0], RULES[1]][:k]


def trail_conditions(route: str) -> dict:
    day = "2026-12-01" if active("sled.trail") else RACE_DAY
    return {"route": route, "report_date": day, "closures": [], "snow": "packed"}


def checkpoint_info(checkpoint: str) -> dict:
    return {"checkpoint": checkpoint, "leg_hours": LEG_H[checkpoint], "hay": True}


def ration_calc(dogs: int, leg_hours: int, checkpoint: str) -> dict:
    rate_lb = 0.25  # the feeding table: lb of kibble and meat per dog per running hour
    rate = rate_lb if active("sled.units") else round(rate_lb * 0.4536, 3)
    return {"checkpoint": checkpoint, "kg": round(dogs * leg_hours * rate, 1), "basis": f"kg_per_dog_h {rate}"}


def stage_drop(team: str, checkpoint: str, kg: float) -> dict:
    if kg > 40:
        raise ValueError(f"depot {checkpoint}: drop bag for {team} weighs {kg} kg, bags are limited to 40 kg")
    return {"team": team, "checkpoint": checkpoint, "bag": f"{team}-{checkpoint[:3].upper()}", "kg": kg}


def marshal_signoff(team: str, route: str, bags: list, layover_h: int, trail_report: str) -> dict:
    if trail_report != RACE_DAY:
        raise RuntimeError(f"race marshal: trail report of {trail_report} has been replaced; team {team} must re-plan against today's report")
    staged = {b["checkpoint"] for b in bags}
    missing = [c for c in ROUTE_CPS[route] if c not in staged]
    if missing:
        raise RuntimeError(f"race marshal: team {team} has no food drop at {', '.join(missing)}")
    if layover_h < 24:
        raise RuntimeError(f"race marshal: team {team} declares a {layover_h} h layover; the race requires 24 h")
    return {"team": team, "status": "cleared", "bags": len(bags)}


def brain(request) -> str:
    msgs = request.body["messages"]
    system, data = msgs[0]["content"], json.loads(msgs[-1]["content"])
    if system.startswith("You plan food drops"):
        cps = list(data["checkpoints"])
        if active("sled.plan"):
            cps = [c for c in cps if c != "Rainy Pass"] if "Rainy Pass" in cps else cps
        layover = 24 if any("24 hour" in r["text"] for r in data["rules"]) else 8
        return f"DROPS: {' > '.join(cps)}\nLAYOVER: {layover} h at {cps[len(cps) // 2]}"
    if system.startswith("You summarise"):
        return f"Team {data['team']}: {len(data['bags'])} bags staged, {sum(b['kg'] for b in data['bags']):.1f} kg in all."
    return "ok"


def record(inp: str, path, server) -> None:
    server.use(brain)
    client = client_for(server)
    t = Tracer(AGENT)
    entry = ENTRIES[inp]
    with recording(path):
        try:
            with t.span(AGENT, "AGENT", {"task": f"plan food drops for {inp}"}) as top:
                e = t.call("read_entry", "CHAIN", lambda team: dict(ENTRIES[team]), team=inp)
                cps = t.call("list_checkpoints", "TOOL", list_checkpoints, route=e["route"])
                rules = t.call("search_rulebook", "RETRIEVER", search_rulebook, query="layover and drop bag rules", k=2)
                trail = t.call("trail_conditions", "TOOL", trail_conditions, route=e["route"])
                text = ask(client, server, "You plan food drops for a sled-dog race team.",
                           {"team": inp, "dogs": e["dogs"], "checkpoints": cps["checkpoints"], "rules": rules, "trail": trail})
                with t.span("parse_plan", "CHAIN", {"text": text}) as o:
                    lines = dict(line.split(": ", 1) for line in text.splitlines())
                    o.output = plan = {"drops": lines["DROPS"].split(" > "), "layover_h": int(lines["LAYOVER"].split()[0])}
                bags = []
                for cp in plan["drops"]:
                    info = t.call("checkpoint_info", "TOOL", checkpoint_info, checkpoint=cp)
                    r = t.call("ration_calc", "CHAIN", ration_calc, dogs=entry["dogs"], leg_hours=info["leg_hours"], checkpoint=cp)
                    bags.append(t.call("stage_drop", "TOOL", stage_drop, team=inp, checkpoint=cp, kg=r["kg"]))
                note = ask(client, server, "You summarise a team's staged drops.", {"team": inp, "bags": bags})
                res = t.call("marshal_signoff", "TOOL", marshal_signoff, team=inp, route=e["route"], bags=bags,
                             layover_h=plan["layover_h"], trail_report=trail["report_date"])
                top.output = {"note": note, "signoff": res}
        except (ValueError, RuntimeError):
            pass
    client.close()
