"""Shellfish depuration plant: plans the purification cycle of a harvested lot, checks the tanks, samples
the lot for E. coli and files the movement document with the shellfish registry (trajdebug SDK)."""
from __future__ import annotations

import json
import math

import trajdebug

from ._common import client_for, system, user

NAME = "depuration-release"
ROUTE = "sdk"
DOMAIN = "shellfish depuration plant (oysters, mussels, clams)"
SHAPE = "registry retrieval, planning model call + parser, parallel tank checks, state log, sample loop, lab tool loop, routing, note model call, registry filing"
SWITCH = None


def active(case: str) -> bool:
    return SWITCH == case


INPUTS = [
    {"lot": "DP-0412", "area": "WB-3", "species": "Pacific oyster", "bags": 46, "harvested": "2025-10-14T06:10", "harvester": "H-17"},
    {"lot": "DP-0413", "area": "KL-1", "species": "blue mussel", "bags": 72, "harvested": "2025-10-14T07:45", "harvester": "H-04"},
    {"lot": "DP-0414", "area": "SN-2", "species": "native oyster", "bags": 34, "harvested": "2025-10-14T08:20", "harvester": "H-22"},
    {"lot": "DP-0415", "area": "WB-5", "species": "hard clam", "bags": 38, "harvested": "2025-10-14T09:05", "harvester": "H-17"},
    {"lot": "DP-0416", "area": "KL-4", "species": "blue mussel", "bags": 55, "harvested": "2025-10-14T10:30", "harvester": "H-09"},
]

CASES = [
    {"id": "zzzzh-dep-1", "input": 0, "kind": "unit_error", "root": ("check_tank", 2), "root_kind": "tool", "root_has": "T2",
     "failure": "log_haccp_record",
     "what": "The second tank's sensor gateway reports the water temperature in Fahrenheit (56.1) where the plant log expects Celsius, so the HACCP log rejects 56.1 C as out of range."},
    {"id": "zzzzh-dep-2", "input": 3, "kind": "stale_data", "root": ("lookup_area_classification", 1), "root_kind": "retrieval",
     "failure": "file_movement_document",
     "what": "The area lookup serves the cached 2024 record of WB-5 (class A, 24 h) although the area was reclassified B in August 2025, so the 24 h cycle is refused by the registry."},
    {"id": "zzzzh-dep-3", "input": 1, "kind": "hallucinated_value", "root": ("plan_cycle", 1), "root_kind": "llm",
     "failure": "check_tank",
     "what": "The planning model assigns the mussels to tank T5, which the plant does not have (it listed T1-T4 as free), and the tank controller cannot find it."},
    {"id": "zzzzh-dep-4", "input": 4, "kind": "off_by_one", "root": ("pick_sample_bags", 1), "root_kind": "other",
     "failure": "file_movement_document",
     "what": "The sampling plan takes bags // 10 instead of one sample per started ten bags, so a 55-bag lot gets 5 samples instead of 6 and the registry refuses the document."},
    {"id": "zzzzh-dep-5", "input": 2, "kind": "bad_memory_write", "root": ("record_cycle", 1), "root_kind": "state",
     "failure": "file_movement_document",
     "what": "The cycle record stores the bag count of the first tank (17) as the lot's bag count instead of 34, so the movement document for 34 bags does not match the depuration log."},
]

AREAS = {
    "WB-3": {"class": "B", "since": "2023-04-01", "min_hours": 42},
    "KL-1": {"class": "B", "since": "2022-11-15", "min_hours": 42},
    "SN-2": {"class": "A", "since": "2021-06-01", "min_hours": 24},
    "WB-5": {"class": "B", "since": "2025-08-01", "min_hours": 42},
    "KL-4": {"class": "B", "since": "2024-02-20", "min_hours": 42},
}
AREA_CACHE_2024 = {"WB-5": {"class": "A", "since": "2019-05-01", "min_hours": 24, "cached": "2024-11-02"}}
TANKS = {"T1": 30, "T2": 30, "T3": 24, "T4": 24}
ECOLI = {"DP-0412": [80, 110, 45, 130, 90], "DP-0413": [140, 60, 200, 110, 90, 70, 130, 50],
         "DP-0414": [20, 45, 60, 35], "DP-0415": [90, 130, 70, 110], "DP-0416": [100, 80, 150, 60, 120, 90]}


def brain(request):
    sys_ = system(request)
    msg = json.loads(user(request))
    if sys_.startswith("You plan depuration cycles"):
        bags, free = msg["lot"]["bags"], msg["free_tanks"]
        tanks, left = [], bags
        for t in free:
            if left <= 0:
                break
            tanks.append(t)
            left -= TANKS[t]
        if active("zzzzh-dep-3"):
            tanks[-1] = "T5"
        share = [bags // len(tanks) + (1 if i < bags % len(tanks) else 0) for i in range(len(tanks))]
        return json.dumps({"tanks": tanks, "bags_per_tank": share, "hours": msg["classification"]["min_hours"],
                           "salinity_target_ppt": 30 if "oyster" in msg["lot"]["species"] else 28})
    if sys_.startswith("You write release notes"):
        c = msg["cycle"]
        return (f"Lot {c['lot']} ({c['bags']} bags) depurated {c['hours']} h in {', '.join(c['tanks'])}; "
                f"{len(msg['samples'])} E. coli samples, max {max(s['mpn'] for s in msg['samples'])} MPN/100 g. Cleared for dispatch.")
    return "I cannot help with that."


@trajdebug.step(kind="input")
def receive_lot(lot: dict) -> dict:
    return dict(lot)


@trajdebug.step(kind="retrieval")
def lookup_area_classification(area: str, on: str) -> dict:
    rec = AREAS[area]
    if area in AREA_CACHE_2024 and active("zzzzh-dep-2"):
        rec = AREA_CACHE_2024[area]  # the registry mirror answered from its cache
    return {"area": area, **rec}


@trajdebug.step(kind="llm")
def plan_cycle(messages: list[dict]) -> str:
    reply = CLIENT.chat.completions.create(model=MODEL, messages=messages)
    return reply.choices[0].message.content


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> dict:
    plan = json.loads(text)
    plan["tanks"] = [t.strip().upper() for t in plan["tanks"]]
    return plan


@trajdebug.step(kind="tool")
def check_tank(tank: str) -> dict:
    if tank not in TANKS:
        raise KeyError(f"tank {tank} not found on the plant controller (known: {', '.join(TANKS)})")
    temp = {"T1": 13.2, "T2": 13.4, "T3": 12.9, "T4": 13.1}[tank]
    reading = {"tank": tank, "water_temp": temp, "salinity_ppt": 29.6, "uv_lamps_ok": True, "capacity_bags": TANKS[tank]}
    if tank == "T2" and active("zzzzh-dep-1"):
        reading["water_temp"] = round(temp * 9 / 5 + 32, 1)  # the T2 gateway's firmware reports its default unit
    return reading


@trajdebug.step(kind="state")
def record_cycle(lot: dict, plan: dict, tanks: list[dict]) -> dict:
    bags = lot["bags"]
    if active("zzzzh-dep-5"):
        bags = plan["bags_per_tank"][0]
    cycle = {"lot": lot["lot"], "bags": bags, "tanks": plan["tanks"], "hours": plan["hours"],
             "filled": "2025-10-14T12:00", "temps_c": [t["water_temp"] for t in tanks]}
    trajdebug.current_run().state["cycle"] = cycle
    return cycle


@trajdebug.step(kind="tool")
def log_haccp_record(cycle: dict, species: str) -> dict:
    for tank, temp in zip(cycle["tanks"], cycle["temps_c"]):
        if not 8.0 <= temp <= 25.0:
            raise ValueError(f"HACCP log: tank {tank} water {temp} C outside the 8-25 C range for {species}")
    return {"entry": f"HACCP-{cycle['lot']}", "ok": True}


@trajdebug.step(kind="other")
def pick_sample_bags(bags: int) -> list[int]:
    n = math.ceil(bags / 10)
    if active("zzzzh-dep-4"):
        n = bags // 10
    step = bags / n
    return [int(i * step) + 1 for i in range(n)]


@trajdebug.step(kind="tool")
def lab_ecoli(lot: str, bag: int, k: int) -> dict:
    return {"lot": lot, "bag": bag, "mpn": ECOLI[lot][k]}


@trajdebug.step(kind="condition")
def assess_samples(samples: list[dict]) -> str:
    return "release" if all(s["mpn"] <= 230 for s in samples) else "hold"


@trajdebug.step(kind="llm")
def draft_release_note(messages: list[dict]) -> str:
    reply = CLIENT.chat.completions.create(model=MODEL, messages=messages)
    return reply.choices[0].message.content


@trajdebug.step(kind="tool")
def file_movement_document(lot: dict, classification_area: str, note: str) -> dict:
    cycle = trajdebug.current_run().state["cycle"]
    truth = AREAS[classification_area]
    if cycle["hours"] < truth["min_hours"]:
        raise ValueError(f"registry: area {classification_area} is class {truth['class']} since {truth['since']}: "
                         f"{truth['min_hours']} h depuration required, lot {lot['lot']} logged {cycle['hours']} h")
    if cycle["bags"] != lot["bags"]:
        raise ValueError(f"registry: movement document for {lot['bags']} bags, depuration log of {lot['lot']} records {cycle['bags']} bags")
    need = math.ceil(lot["bags"] / 10)
    if len(cycle["samples"]) < need:
        raise ValueError(f"registry: lot {lot['lot']} of {lot['bags']} bags needs {need} E. coli samples, {len(cycle['samples'])} logged")
    return {"document": f"MD-{lot['lot'][3:]}-25", "status": "filed"}


CLIENT = None
MODEL = "fake-model"


def record(inp: dict, path, server) -> None:
    global CLIENT, MODEL
    CLIENT, MODEL = client_for(server), server.model
    try:
        with trajdebug.run(NAME, task=f"depuration release, lot {inp['lot']}", path=str(path)) as run:
            lot = receive_lot(inp)
            cls = lookup_area_classification(lot["area"], on=lot["harvested"][:10])
            free = [t for t in TANKS]
            text = plan_cycle([
                {"role": "system", "content": "You plan depuration cycles. Answer JSON: tanks, bags_per_tank, hours, salinity_target_ppt."},
                {"role": "user", "content": json.dumps({"lot": lot, "classification": cls, "free_tanks": free})},
            ])
            plan = parse_plan(text)
            with trajdebug.step("check_tanks", kind="agent", input=plan["tanks"]) as s:
                with trajdebug.ContextThreadPoolExecutor(max_workers=4) as pool:
                    tanks = list(pool.map(check_tank, plan["tanks"]))
                s.output = tanks
            cycle = record_cycle(lot, plan, tanks)
            log_haccp_record(cycle, lot["species"])
            bags = pick_sample_bags(lot["bags"])
            samples = [lab_ecoli(lot["lot"], b, k) for k, b in enumerate(bags)]
            decision = assess_samples(samples)
            with trajdebug.step("close_cycle", kind="state", input={"decision": decision, "samples": samples}) as s:
                run.state["cycle"] = {**run.state["cycle"], "samples": samples, "decision": decision}
                s.output = run.state["cycle"]
            note = draft_release_note([
                {"role": "system", "content": "You write release notes for depurated shellfish lots."},
                {"role": "user", "content": json.dumps({"cycle": s.output, "samples": samples})},
            ])
            file_movement_document(lot, cls["area"], note)
    except Exception:
        pass
