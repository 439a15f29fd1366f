"""sdk route: trout hatchery stocking planner (loop over river reaches, run.state, own checks)."""
import trajdebug
from trajdebug.testing import deterministic

from . import kit


NAME = "trout-stocking-planner"

MANIFEST = {
    "Ashwater": "RW-1|brown|1,250|212 g|Tamar-Wild\nRW-2|rainbow|900|305 g|Kamloops-Triploid\nRW-3|brown|640|188 g|Tamar-Wild",
    "Coldbeck": "RW-1|rainbow|1,100|264 g|Kamloops-Triploid\nRW-2|brown|720|199 g|Eden-Wild",
    "Fenmoor": "RW-1|brown|1,480|231 g|Wye-Wild\nRW-2|rainbow|560|318 g|Kamloops-Triploid\nRW-3|rainbow|410|290 g|Kamloops-Triploid",
    "Holloway": "RW-1|brown|980|207 g|Eden-Wild\nRW-2|brown|860|244 g|Wye-Wild",
    "Larchside": "RW-1|rainbow|1,320|276 g|Kamloops-Triploid\nRW-2|brown|500|215 g|Tamar-Wild",
    "Mardale": "RW-1|brown|1,040|226 g|Eden-Wild\nRW-2|rainbow|770|281 g|Kamloops-Triploid\nRW-3|brown|450|193 g|Wye-Wild",
    "Otterford": "RW-1|brown|1,160|238 g|Tamar-Wild\nRW-2|rainbow|690|297 g|Kamloops-Triploid",
    "Pennock": "RW-1|rainbow|1,210|259 g|Kamloops-Triploid\nRW-2|brown|830|202 g|Eden-Wild",
    "Quarrywell": "RW-1|brown|1,050|221 g|Wye-Wild\nRW-2|brown|640|247 g|Tamar-Wild",
}
REACHES = {
    "Ashwater": ["AW-R1", "AW-R2", "AW-R3"], "Coldbeck": ["CB-R1", "CB-R2"], "Fenmoor": ["FM-R1", "FM-R2", "FM-R3", "FM-R4"],
    "Holloway": ["HW-R1", "HW-R2"], "Larchside": ["LS-R1", "LS-R2", "LS-R3"], "Mardale": ["MD-R1", "MD-R2", "MD-R3"],
    "Otterford": ["OF-R1", "OF-R2"], "Pennock": ["PN-R1", "PN-R2", "PN-R3"], "Quarrywell": ["QW-R1", "QW-R2"],
}
STRAINS = ["Tamar-Wild", "Kamloops-Triploid", "Eden-Wild", "Wye-Wild"]


@trajdebug.step(kind="input")
def read_request(site: str) -> dict:
    return {"site": site, "ask": f"stock the permitted reaches below {site} hatchery this week"}


@trajdebug.step(kind="tool")
def fetch_permit(site: str) -> dict:
    return {"permit": f"EA-{sum(map(ord, site)) * 7}", "site": site, "strains": STRAINS,
            "reaches": REACHES[site], "max_kg_per_km": 160.0}


@trajdebug.step(kind="tool")
def fetch_raceways(site: str) -> str:
    return MANIFEST[site]


@trajdebug.step(kind="parse")
def parse_raceways(text: str) -> list:
    out = []
    for line in text.splitlines():
        rw, species, count, weight, strain = line.split("|")
        if kit.active("hatch.lossy"):
            strain = strain.split("-")[0]
        out.append({"raceway": rw, "species": species, "count": int(count.replace(",", "")),
                    "mean_g": float(weight.split()[0]), "strain": strain})
    return out


@trajdebug.step(kind="tool")
def fetch_reach(reach: str) -> dict:
    n = int(reach[-1])
    return {"reach": reach, "length_km": 2.0 + n * 0.8, "flow_m3s": 3.1 + n * 0.4}


@trajdebug.step(kind="tool")
def fetch_water_quality(reach: str) -> dict:
    if kit.active("hatch.swallow") and reach.endswith("R2"):
        return {"status": 503, "message": "probe gateway timeout", "reach": reach}
    n = int(reach[-1])
    return {"status": 200, "reach": reach, "do_mg_l": round(9.6 - n * 0.3, 1), "temp_c": 11.0 + n * 0.5}


@trajdebug.step(kind="parse")
def read_quality(reply: dict) -> dict:
    try:
        return {"reach": reply["reach"], "do_mg_l": reply["do_mg_l"], "temp_c": reply["temp_c"]}
    except KeyError:
        return {"reach": reply["reach"], "do_mg_l": 0.0, "temp_c": 0.0}


@trajdebug.step(kind="llm")
def choose_raceway(reach: dict, quality: dict, raceways: list) -> dict:
    # scripted planner: warmer reaches get rainbow, cooler get brown
    species = "rainbow" if quality["temp_c"] >= 12.0 else "brown"
    pick = [r for r in raceways if r["species"] == species] or raceways
    return {"reach": reach["reach"], "raceway": pick[0]["raceway"], "reason": f"{species} suits {quality['temp_c']} C"}


@trajdebug.step(kind="other")
def compute_load(reach: dict, choice: dict, raceways: list) -> dict:
    rw = next(r for r in raceways if r["raceway"] == choice["raceway"])
    fish = min(rw["count"] // 2, int(reach["length_km"] * 150))
    grams = fish * rw["mean_g"]
    kg = grams / 100 if kit.active("hatch.unit") else grams / 1000
    return {"reach": reach["reach"], "raceway": rw["raceway"], "strain": rw["strain"], "fish": fish, "load_kg": round(kg, 2),
            "kg_per_km": round(kg / reach["length_km"], 2)}


@trajdebug.step(kind="state")
def remember_release(load: dict, index: int) -> dict:
    run = trajdebug.current_run()
    releases = run.state.get("releases", [])
    entry = dict(load)
    if kit.active("hatch.memory") and index == 1:
        entry["reach"] = releases[0]["reach"]
    releases = [*releases, entry]
    run.state["releases"] = releases
    return entry


@trajdebug.step(kind="other")
def tally_releases() -> dict:
    releases = trajdebug.current_run().state["releases"]
    n = len(releases) - 1 if kit.active("hatch.off") else len(releases)
    counted = releases[:n]
    return {"reaches_counted": n, "fish_total": sum(r["fish"] for r in counted),
            "reaches": [r["reach"] for r in counted]}


@trajdebug.step(kind="condition")
def check_plan(permit: dict, tally: dict) -> dict:
    releases = trajdebug.current_run().state["releases"]
    for r in releases:
        if r["strain"] not in permit["strains"]:
            raise ValueError(f"permit {permit['permit']} does not list strain {r['strain']}")
        if r["kg_per_km"] > permit["max_kg_per_km"]:
            raise ValueError(f"{r['reach']}: stocking density {r['kg_per_km']} kg/km over the permit limit")
    if len({r["reach"] for r in releases}) != len(releases):
        raise ValueError("release schedule lists a reach twice")
    return {"ok": True}


@trajdebug.step(kind="tool")
def fetch_quality_log(reaches: list) -> dict:
    return {"readings": trajdebug.current_run().state["quality"]}


@trajdebug.step(kind="tool")
def submit_stocking_return(permit: dict, tally: dict, quality: dict) -> dict:
    releases = trajdebug.current_run().state["releases"]
    if tally["fish_total"] != sum(r["fish"] for r in releases):
        raise RuntimeError(f"agency portal 422: return total {tally['fish_total']} does not match transport sheets")
    for q in quality["readings"]:
        if q["do_mg_l"] < 4.0:
            raise RuntimeError(f"agency portal 422: oxygen reading {q['do_mg_l']} mg/L at {q['reach']} outside sensor range")
    return {"receipt": f"SR-{permit['permit'][3:]}-{tally['fish_total']}"}


@trajdebug.step(kind="output")
def confirm(receipt: dict, tally: dict) -> str:
    return f"Stocking return {receipt['receipt']} filed: {tally['fish_total']} fish over {tally['reaches_counted']} reaches."


def run_agent(site: str, path: str) -> None:
    with deterministic():
        try:
            with trajdebug.run(NAME, path=path, task=f"weekly stocking for {site}") as run:
                req = read_request(site)
                permit = fetch_permit(req["site"])
                raceways = parse_raceways(fetch_raceways(req["site"]))
                run.state["quality"] = []
                for i, name in enumerate(permit["reaches"]):
                    reach = fetch_reach(name)
                    q = read_quality(fetch_water_quality(name))
                    with trajdebug.step("log_quality", kind="state"):
                        run.state["quality"] = run.state["quality"] + [q]
                    choice = choose_raceway(reach, q, raceways)
                    load = compute_load(reach, choice, raceways)
                    remember_release(load, i)
                tally = tally_releases()
                check_plan(permit, tally)
                receipt = submit_stocking_return(permit, tally, fetch_quality_log(permit["reaches"]))
                confirm(receipt, tally)
        except (ValueError, RuntimeError):
            pass


FAULTS = [  # kind, id, input, root name, marker fn(control-free value)
    ("lossy_parsing", "hatch.lossy", "Ashwater", "parse_raceways", '"strain": "Tamar"'),
    ("unit_error", "hatch.unit", "Fenmoor", "compute_load", '"load_kg": 970.2'),
    ("bad_memory_write", "hatch.memory", "Mardale", "remember_release", '{"reach": "MD-R1", "raceway": "RW-2"'),
    ("off_by_one", "hatch.off", "Pennock", "tally_releases", '"reaches_counted": 2'),
    ("swallowed_error", "hatch.swallow", "Larchside", "read_quality", '"do_mg_l": 0.0'),
]
REFS = ["Coldbeck", "Holloway", "Otterford", "Quarrywell"]
