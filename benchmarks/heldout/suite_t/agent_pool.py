"""sdk route: public swimming-pool chlorine dosing planner (lab results, per-zone loop, run.state log, controller submit)."""

import trajdebug
from trajdebug.testing import deterministic

from . import kit


NAME = "pool-dosing-planner"
TODAY = "2026-07-14"
ZONES = ["main", "learner", "spa"]
SITES = {  # volume m3 per zone, lab free chlorine ppm per zone, dosed earlier today (litres)
    "Riverside Baths": ({"main": 620, "learner": 140, "spa": 9}, {"main": 0.45, "learner": 0.8, "spa": 1.1}, 3.0),
    "Northgate Leisure": ({"main": 540, "learner": 120, "spa": 8}, {"main": 0.9, "learner": 0.6, "spa": 1.4}, 2.5),
    "Castle Lido": ({"main": 880, "learner": 160, "spa": 12}, {"main": 0.7, "learner": 0.95, "spa": 1.2}, 4.0),
    "Millpond Pool": ({"main": 480, "learner": 110, "spa": 7}, {"main": 1.0, "learner": 0.75, "spa": 1.5}, 2.0),
    "Eastfield Centre": ({"main": 700, "learner": 150, "spa": 10}, {"main": 0.65, "learner": 0.9, "spa": 1.3}, 3.5),
    "Bridgend Baths": ({"main": 590, "learner": 130, "spa": 9}, {"main": 0.8, "learner": 0.7, "spa": 1.0}, 3.0),
    "Harefield Pool": ({"main": 510, "learner": 125, "spa": 8}, {"main": 0.85, "learner": 0.8, "spa": 1.25}, 2.5),
    "Kelso Aquatics": ({"main": 760, "learner": 145, "spa": 11}, {"main": 0.6, "learner": 0.85, "spa": 1.35}, 3.5),
    "Westmoor Pool": ({"main": 450, "learner": 100, "spa": 6}, {"main": 0.95, "learner": 0.65, "spa": 1.2}, 2.0),
}
TARGET = 1.5
CONC = 12.5  # % available chlorine of the hypochlorite
CAP_L = 48.0


def dose_litres(volume, cl):
    return round((TARGET - cl) * volume / (CONC * 10), 2)


def history(site):
    earlier = SITES[site][2]
    return [{"at": f"{h:02d}:00", "litres": earlier} for h in (6, 8, 10, 12, 14)]


@trajdebug.step(kind="input")
def read_request(site: str) -> dict:
    return {"site": site, "ask": "plan the afternoon hypochlorite doses for every zone"}


@trajdebug.step(kind="tool")
def fetch_lab_results(site: str) -> str:
    day = "2026-07-12" if kit.active("pool.lab") else TODAY
    cl = SITES[site][1]
    return "\n".join(f"{day}|{z}|free_cl={cl[z] if day == TODAY else cl[z] + 0.6:.2f}ppm|ph=7.4" for z in ZONES)


@trajdebug.step(kind="parse")
def parse_lab(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        day, zone, cl, ph = line.split("|")
        value = float(cl.split("=")[1].rstrip("pm"))
        if kit.active("pool.parse"):
            value = int(value)
        out[zone] = {"free_cl_ppm": value, "ph": float(ph.split("=")[1]), "sampled": day}
    return out


@trajdebug.step(kind="tool")
def fetch_zone(site: str, zone: str) -> dict:
    return {"zone": zone, "volume_m3": SITES[site][0][zone], "pump": f"P-{zone.upper()}"}


@trajdebug.step(kind="other")
def compute_dose(zone: dict, lab: dict) -> dict:
    return {"zone": zone["zone"], "litres": dose_litres(zone["volume_m3"], lab[zone["zone"]]["free_cl_ppm"]),
            "basis": lab[zone["zone"]]["sampled"]}


@trajdebug.step(kind="other")
def plan_pump_call(zone: dict, dose: dict, index: int) -> dict:
    pump = zone["pump"]
    if kit.active("pool.args") and index == 1:
        pump = "P-MAIN"
    return {"pump": pump, "window": f"{15 + index}:00", "litres": dose["litres"]}


@trajdebug.step(kind="tool")
def reserve_pump(call: dict) -> dict:
    return {"pump": call["pump"], "window": call["window"], "status": "held"}


@trajdebug.step(kind="state")
def log_dose(zone: dict, dose: dict, index: int) -> dict:
    key = f"dose:{zone['zone']}"
    if kit.active("pool.memory") and index == 2:
        key = f"dose:{ZONES[0]}"
    trajdebug.current_run().state[key] = dose
    return {"key": key, "zone": zone["zone"], "litres": dose["litres"]}


@trajdebug.step(kind="tool")
def fetch_dosing_history(site: str) -> dict:
    entries = history(site)
    if kit.active("pool.history"):
        entries = entries[:2]
    return {"site": site, "date": TODAY, "entries": entries}


@trajdebug.step(kind="other")
def daily_total(hist: dict) -> dict:
    run = trajdebug.current_run()
    planned = sum(run.state[f"dose:{z}"]["litres"] for z in ZONES if f"dose:{z}" in run.state)
    earlier = sum(e["litres"] for e in hist["entries"])
    return {"earlier_l": earlier, "planned_l": round(planned, 2), "total_l": round(earlier + planned, 2)}


@trajdebug.step(kind="condition")
def check_cap(total: dict) -> dict:
    if total["total_l"] > CAP_L:
        raise ValueError(f"daily hypochlorite total {total['total_l']} L over the {CAP_L} L consent")
    return {"within_cap": True}


@trajdebug.step(kind="tool")
def submit_to_controller(site: str, calls: list, total: dict) -> dict:
    run = trajdebug.current_run()
    pumps = [c["pump"] for c in calls]
    if len(set(pumps)) != len(pumps):
        raise RuntimeError(f"dosing controller 409: pump {pumps[1]} already holds window {calls[0]['window']}")
    for z in ZONES:
        d = run.state.get(f"dose:{z}")
        if d is None or d["zone"] != z:
            raise RuntimeError(f"dosing controller 422: plan has no dose line for the {z} circuit")
        probe = dose_litres(SITES[site][0][z], SITES[site][1][z])
        if abs(d["litres"] - probe) > 0.25 * probe + 0.05:
            raise RuntimeError(f"dosing controller 422: {z} dose of {d['litres']} L disagrees with the circuit probe")
    earlier = sum(e["litres"] for e in history(site))
    if abs(total["earlier_l"] - earlier) > 0.01:
        raise RuntimeError(f"dosing controller 409: declared earlier usage {total['earlier_l']} L does not reconcile with the pump log")
    return {"accepted": len(calls), "ref": f"DC-{site.split()[0].upper()}-{TODAY}"}


@trajdebug.step(kind="output")
def summarise(receipt: dict, total: dict) -> str:
    return f"Doses accepted ({receipt['ref']}): {total['planned_l']} L planned, {total['total_l']} L today."


def run_agent(site: str, path: str) -> None:
    with deterministic():
        try:
            with trajdebug.run(NAME, path=path, task=f"afternoon dosing at {site}"):
                req = read_request(site)
                lab = parse_lab(fetch_lab_results(req["site"]))
                calls = []
                for i, name in enumerate(ZONES):
                    zone = fetch_zone(req["site"], name)
                    dose = compute_dose(zone, lab)
                    call = plan_pump_call(zone, dose, i)
                    reserve_pump(call)
                    calls.append(call)
                    log_dose(zone, dose, i)
                total = daily_total(fetch_dosing_history(req["site"]))
                check_cap(total)
                receipt = submit_to_controller(req["site"], calls, total)
                summarise(receipt, total)
        except (ValueError, RuntimeError):
            pass


FAULTS = [
    ("lossy_parsing", "pool.parse", "Castle Lido", "parse_lab", '"free_cl_ppm": 0,'),
    ("stale_data", "pool.lab", "Riverside Baths", "fetch_lab_results", "2026-07-12"),
    ("wrong_tool_args", "pool.args", "Eastfield Centre", "plan_pump_call", '{"pump": "P-MAIN", "window": "16:00"'),
    ("bad_memory_write", "pool.memory", "Bridgend Baths", "log_dose", '{"key": "dose:main", "zone": "spa"'),
    ("truncated_result", "pool.history", "Kelso Aquatics", "fetch_dosing_history", '"at": "08:00", "litres": 3.5}]'),
]
REFS = ["Northgate Leisure", "Millpond Pool", "Harefield Pool", "Westmoor Pool"]
