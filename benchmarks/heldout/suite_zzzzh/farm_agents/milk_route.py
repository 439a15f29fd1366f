"""Dairy co-op milk collection: a tanker route picks up the bulk tanks of member farms, keeps organic and
conventional milk in separate compartments, prices each pickup by components and hands the load to the
plant (trajdebug SDK)."""
from __future__ import annotations

import json
import re

import trajdebug

from ._common import client_for, system, user

NAME = "milk-collection"
ROUTE = "sdk"
DOMAIN = "dairy co-op milk tanker route"
SHAPE = "route planning model call + parser, per-farm loop (retrieval, gateway tool, slip parser, compartment router, tanker state, pricing), manifest context + model call, plant tools"
SWITCH = None


def active(case: str) -> bool:
    return SWITCH == case


FARMS = {
    "F-201": {"organic": True, "mm_to_l": 4.2, "level_mm": 1423, "cached_mm": 1310, "slip": "BF 4.12% PR 3.41% SCC 182k", "temp_c": 3.6},
    "F-207": {"organic": False, "mm_to_l": 3.1, "level_mm": 1180, "cached_mm": 1095, "slip": "BF 3.98% PR 3.30% SCC 215k", "temp_c": 3.9},
    "F-208": {"organic": False, "mm_to_l": 5.0, "level_mm": 1502, "cached_mm": 1460, "slip": "BF 4.30% PR 3.52% SCC 245k", "temp_c": 3.4},
    "F-311": {"organic": False, "mm_to_l": 2.8, "level_mm": 990, "cached_mm": 940, "slip": "BF 4.05% PR 3.38% SCC 168k", "temp_c": 3.8},
    "F-215": {"organic": True, "mm_to_l": 3.6, "level_mm": 1265, "cached_mm": 780, "slip": "BF 4.21% PR 3.45% SCC 131k", "temp_c": 3.5},
    "F-330": {"organic": False, "mm_to_l": 4.4, "level_mm": 1330, "cached_mm": 1300, "slip": "BF 3.92% PR 3.28% SCC 276k", "temp_c": 4.0},
    "F-342": {"organic": True, "mm_to_l": 3.9, "level_mm": 1105, "cached_mm": 1020, "slip": "BF 4.40% PR 3.60% SCC 152k", "temp_c": 3.7},
    "F-356": {"organic": False, "mm_to_l": 3.3, "level_mm": 1210, "cached_mm": 1190, "slip": "BF 4.02% PR 3.36% SCC 198k", "temp_c": 3.9},
}
LAST_UNLOAD = {"TK-12": {"route": "R-2", "pickups": [{"farm": "F-412", "litres": 5210}, {"farm": "F-418", "litres": 3980}]},
               "TK-07": {"route": "R-5", "pickups": [{"farm": "F-520", "litres": 4410}]}}

INPUTS = [
    {"route": "R-3", "date": "2025-11-03", "tanker": "TK-12", "farms": ["F-201", "F-207", "F-208", "F-311", "F-215"]},
    {"route": "R-4", "date": "2025-11-03", "tanker": "TK-07", "farms": ["F-330", "F-342", "F-356"]},
    {"route": "R-3", "date": "2025-11-04", "tanker": "TK-07", "farms": ["F-201", "F-208", "F-215", "F-311"]},
    {"route": "R-6", "date": "2025-11-04", "tanker": "TK-12", "farms": ["F-207", "F-330", "F-342", "F-356", "F-311"]},
    {"route": "R-4", "date": "2025-11-05", "tanker": "TK-12", "farms": ["F-342", "F-356", "F-208"]},
]

CASES = [
    {"id": "zzzzh-milk-1", "input": 0, "kind": "lossy_parsing", "root": ("parse_lab_slip", 4), "root_kind": "parse", "root_has": "F-208",
     "failure": "settle_premiums",
     "what": "The lab slip parser keeps the digits of 'SCC 245k' and drops the thousands suffix, so F-208 is priced in the top somatic-cell tier and the settlement against the plant LIMS is refused."},
    {"id": "zzzzh-milk-2", "input": 3, "kind": "swallowed_error", "root": ("read_bulk_tank", 1), "root_kind": "tool", "root_has": "F-342",
     "failure": "plant_intake_check",
     "what": "The tank gateway of F-342 times out and the reader quietly falls back to the level cached at the previous pickup, so the manifest litres fall short of the plant's flowmeter."},
    {"id": "zzzzh-milk-3", "input": 2, "kind": "wrong_routing", "root": ("route_compartment", 4), "root_kind": "condition", "root_has": "F-311",
     "failure": "plant_intake_check",
     "what": "The compartment router sends conventional F-311 milk to compartment C2, which holds the organic milk, and the plant's intake check refuses the mixed compartment."},
    {"id": "zzzzh-milk-4", "input": 0, "kind": "context_pollution", "root": ("assemble_manifest_context", 1), "root_kind": "other",
     "failure": "submit_manifest",
     "what": "The manifest context merges the tanker's previous unload (route R-2, F-412 and F-418) into today's pickups, the model lists those farms on the R-3 manifest and the plant rejects it."},
    {"id": "zzzzh-milk-5", "input": 1, "kind": "plan_error", "root": ("plan_pickup_order", 1), "root_kind": "llm",
     "failure": "close_route",
     "what": "The route planner leaves F-356 out of the pickup order as an alternate-day farm although the route sheet lists it daily, so closing the route finds a farm without a pickup."},
]


def brain(request):
    sys_ = system(request)
    msg = json.loads(user(request))
    if sys_.startswith("You order the pickups"):
        farms = msg["farms"]
        order = [f["farm"] for f in farms if f["organic"]] + [f["farm"] for f in farms if not f["organic"]]
        skipped = {}
        if active("zzzzh-milk-5"):
            order.remove("F-356")
            skipped["F-356"] = "alternate-day farm, collected 2025-11-02"
        return json.dumps({"order": order, "skipped": skipped, "note": "organic farms first, compartment C2 stays clean"})
    if sys_.startswith("You write the tanker manifest"):
        lines = [{"farm": p["farm"], "litres": p["litres"]} for p in msg["pickups"]]
        return json.dumps({"route": msg["route"], "tanker": msg["tanker"], "lines": lines,
                           "litres_total": sum(p["litres"] for p in lines)})
    return "I cannot help with that."


@trajdebug.step(kind="input")
def receive_route(sheet: dict) -> dict:
    return dict(sheet)


@trajdebug.step(kind="llm")
def plan_pickup_order(messages: list[dict]) -> str:
    return CLIENT.chat.completions.create(model=MODEL, messages=messages).choices[0].message.content


@trajdebug.step(kind="parse")
def parse_order(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="retrieval")
def fetch_farm_record(farm: str) -> dict:
    f = FARMS[farm]
    return {"farm": farm, "organic": f["organic"], "mm_to_l": f["mm_to_l"], "last_pickup_mm": f["cached_mm"]}


def _gateway(farm: str) -> str:
    if farm == "F-342" and active("zzzzh-milk-2"):
        raise TimeoutError(f"tank gateway {farm} did not answer in 5 s")
    f = FARMS[farm]
    return f"level {f['level_mm']} mm, {f['temp_c']} C"


@trajdebug.step(kind="tool")
def read_bulk_tank(record: dict) -> dict:
    try:
        raw = _gateway(record["farm"])
        level = int(re.search(r"level (\d+) mm", raw).group(1))
        temp = float(re.search(r"([\d.]+) C", raw).group(1))
    except TimeoutError:
        level, temp = record["last_pickup_mm"], 4.0
    return {"farm": record["farm"], "level_mm": level, "litres": round(level * record["mm_to_l"]), "temp_c": temp}


@trajdebug.step(kind="parse")
def parse_lab_slip(farm: str, slip: str) -> dict:
    bf = float(re.search(r"BF ([\d.]+)%", slip).group(1))
    pr = float(re.search(r"PR ([\d.]+)%", slip).group(1))
    m = re.search(r"SCC (\d+)(k?)", slip)
    scc = int(m.group(1)) * (1000 if m.group(2) == "k" else 1)
    if active("zzzzh-milk-1") and farm == "F-208":
        scc = int(m.group(1))
    return {"farm": farm, "butterfat_pct": bf, "protein_pct": pr, "scc_per_ml": scc}


@trajdebug.step(kind="condition")
def route_compartment(record: dict) -> str:
    if active("zzzzh-milk-3") and record["farm"] == "F-311":
        return "C2"
    return "C2" if record["organic"] else "C1"


@trajdebug.step(kind="state")
def load_tanker(compartment: str, reading: dict) -> list:
    state = trajdebug.current_run().state
    state.setdefault(f"compartment:{compartment}", [])
    state[f"compartment:{compartment}"] = [*state[f"compartment:{compartment}"], {"farm": reading["farm"], "litres": reading["litres"]}]
    return state[f"compartment:{compartment}"]


def _tier(scc: int) -> str:
    return "A" if scc < 200_000 else "B" if scc < 300_000 else "C"


@trajdebug.step(kind="other")
def price_pickup(reading: dict, lab: dict) -> dict:
    base = 0.412 + (lab["butterfat_pct"] - 4.0) * 0.031 + (lab["protein_pct"] - 3.3) * 0.052
    premium = {"A": 0.008, "B": 0.003, "C": 0.0}[_tier(lab["scc_per_ml"])]
    return {"farm": reading["farm"], "litres": reading["litres"], "eur_per_l": round(base + premium, 4),
            "scc_tier": _tier(lab["scc_per_ml"]), "amount_eur": round(reading["litres"] * (base + premium), 2)}


@trajdebug.step(kind="other")
def assemble_manifest_context(sheet: dict, prices: list[dict]) -> dict:
    pickups = [{"farm": p["farm"], "litres": p["litres"]} for p in prices]
    if active("zzzzh-milk-4"):
        pickups += LAST_UNLOAD[sheet["tanker"]]["pickups"]
    return {"route": sheet["route"], "tanker": sheet["tanker"], "date": sheet["date"], "pickups": pickups}


@trajdebug.step(kind="llm")
def write_manifest(messages: list[dict]) -> str:
    return CLIENT.chat.completions.create(model=MODEL, messages=messages).choices[0].message.content


@trajdebug.step(kind="tool")
def submit_manifest(sheet: dict, manifest: dict) -> dict:
    for line in manifest["lines"]:
        if line["farm"] not in sheet["farms"]:
            raise ValueError(f"plant: manifest of {sheet['tanker']} lists farm {line['farm']}, which is not on route {sheet['route']}")
    return {"manifest": f"MF-{sheet['route']}-{sheet['date']}", "accepted": True}


@trajdebug.step(kind="tool")
def plant_intake_check(manifest: dict, compartments: dict) -> dict:
    measured = sum(round(FARMS[l["farm"]]["level_mm"] * FARMS[l["farm"]]["mm_to_l"]) for l in manifest["lines"])
    if abs(measured - manifest["litres_total"]) > 0.01 * measured:
        raise ValueError(f"plant flowmeter measured {measured} L, manifest {manifest['litres_total']} L: difference over 1%")
    for line in compartments.get("C2", []):
        if not FARMS[line["farm"]]["organic"]:
            raise ValueError(f"compartment C2 (organic) holds {line['litres']} L from {line['farm']}, which is not certified organic")
    return {"received_l": measured, "compartments": sorted(compartments)}


@trajdebug.step(kind="tool")
def settle_premiums(prices: list[dict]) -> dict:
    for p in prices:
        lims = int(re.search(r"SCC (\d+)k", FARMS[p["farm"]]["slip"]).group(1)) * 1000
        if p["scc_tier"] != _tier(lims):
            raise ValueError(f"payments: tier {p['scc_tier']} claimed for {p['farm']}, LIMS reports SCC {lims:,} cells/mL (tier {_tier(lims)})")
    return {"settled": len(prices), "total_eur": round(sum(p["amount_eur"] for p in prices), 2)}


@trajdebug.step(kind="tool")
def close_route(sheet: dict, prices: list[dict]) -> dict:
    done = {p["farm"] for p in prices}
    for farm in sheet["farms"]:
        if farm not in done:
            raise ValueError(f"route {sheet['route']} {sheet['date']}: farm {farm} on the route sheet has no pickup")
    return {"route": sheet["route"], "closed": True}


CLIENT = None
MODEL = "fake-model"


def record(inp: dict, path, server) -> None:
    global CLIENT, MODEL
    CLIENT, MODEL = client_for(server), server.model
    try:
        with trajdebug.run(NAME, task=f"milk collection {inp['route']} {inp['date']} {inp['tanker']}", path=str(path)) as run:
            sheet = receive_route(inp)
            farms = [{"farm": f, "organic": FARMS[f]["organic"]} for f in sheet["farms"]]
            order = parse_order(plan_pickup_order([
                {"role": "system", "content": "You order the pickups of a milk tanker route. Answer JSON: order, skipped, note."},
                {"role": "user", "content": json.dumps({"route": sheet["route"], "date": sheet["date"], "farms": farms})},
            ]))
            prices = []
            for farm in order["order"]:
                with trajdebug.step("pickup", kind="agent", input={"farm": farm}) as s:
                    rec = fetch_farm_record(farm)
                    reading = read_bulk_tank(rec)
                    lab = parse_lab_slip(farm, FARMS[farm]["slip"])
                    comp = route_compartment(rec)
                    load_tanker(comp, reading)
                    price = price_pickup(reading, lab)
                    prices.append(price)
                    s.output = price
            ctx = assemble_manifest_context(sheet, prices)
            manifest = json.loads(write_manifest([
                {"role": "system", "content": "You write the tanker manifest from the pickups. Answer JSON."},
                {"role": "user", "content": json.dumps(ctx)},
            ]))
            submit_manifest(sheet, manifest)
            comps = {k.split(":")[1]: v for k, v in run.state.items() if k.startswith("compartment:")}
            plant_intake_check(manifest, comps)
            settle_premiums(prices)
            close_route(sheet, prices)
    except Exception:
        pass
