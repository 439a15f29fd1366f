"""Kiln firing planner (sdk route): a ceramics studio plans a kiln load and programs the controller."""

from __future__ import annotations

import json

from kit import Case, active

import trajdebug


AGENT = "kiln-firing-planner"
ROUTE = "sdk"
DOMAIN = "ceramics studio kiln firing"
SHAPE = "parse order -> per-glaze catalog loop (F->C, state write) -> kiln status + element check -> shelf packing loop -> load staged in state -> scripted model writes the schedule -> per-segment validation loop -> controller"

CONE_C = {"06": 999, "05": 1031, "04": 1060, "4": 1162, "5": 1186, "6": 1222, "10": 1285}
GLAZES = {  # catalog, in Fahrenheit as the supplier publishes it
    "CELADON-LO": {"max_f": 1886, "ramp_f_h": 270},
    "TENMOKU-LO": {"max_f": 1904, "ramp_f_h": 300},
    "SATIN-WHITE": {"max_f": 1940, "ramp_f_h": 250},
    "COPPER-RED": {"max_f": 1922, "ramp_f_h": 240},
    "ASH-AMBER": {"max_f": 1958, "ramp_f_h": 280},
}
KILNS = {"ELEC-02": {"shelves": 4, "rated_c": 1300, "zones": {1: 11.2, 2: 13.1, 3: 11.4}, "shelf_cm": 24}}


def _order(oid: str, rows: list[tuple[str, str, str, int]]) -> str:
    lines = [f"ORDER {oid} kiln=ELEC-02"]
    lines += [f"{pid} | {clay} | glaze={g} | h={h}cm" for pid, clay, g, h in rows]
    return "\n".join(lines)


INPUTS = {
    "KO-311": _order("KO-311", [("P1", "earthenware cone 06", "CELADON-LO", 18), ("P2", "earthenware cone 06", "TENMOKU-LO", 12),
                                ("P3", "earthenware cone 04", "SATIN-WHITE", 20), ("P4", "earthenware cone 06", "CELADON-LO", 9),
                                ("P5", "earthenware cone 04", "TENMOKU-LO", 15), ("P6", "earthenware cone 06", "SATIN-WHITE", 22),
                                ("P7", "earthenware cone 06", "CELADON-LO", 11)]),
    "KO-312": _order("KO-312", [("Q1", "terracotta cone 04", "COPPER-RED", 16), ("Q2", "terracotta cone 04", "ASH-AMBER", 21),
                                ("Q3", "terracotta cone 05", "COPPER-RED", 8), ("Q4", "terracotta cone 04", "SATIN-WHITE", 14),
                                ("Q5", "terracotta cone 05", "ASH-AMBER", 19), ("Q6", "terracotta cone 04", "COPPER-RED", 10)]),
    "KO-313": _order("KO-313", [("R1", "earthenware cone 04", "SATIN-WHITE", 12), ("R2", "earthenware cone 04", "TENMOKU-LO", 17),
                                ("R3", "earthenware cone 05", "SATIN-WHITE", 21)]),
    "KO-314": _order("KO-314", [("S1", "terracotta cone 05", "ASH-AMBER", 20), ("S2", "terracotta cone 05", "COPPER-RED", 23),
                                ("S3", "terracotta cone 04", "ASH-AMBER", 9), ("S4", "terracotta cone 05", "CELADON-LO", 13),
                                ("S5", "terracotta cone 04", "COPPER-RED", 16)]),
    "KO-315": _order("KO-315", [("T1", "earthenware cone 06", "TENMOKU-LO", 14), ("T2", "earthenware cone 05", "CELADON-LO", 18),
                                ("T3", "earthenware cone 06", "TENMOKU-LO", 22), ("T4", "earthenware cone 06", "SATIN-WHITE", 7)]),
    "KO-316": _order("KO-316", [("U1", "terracotta cone 04", "COPPER-RED", 19), ("U2", "terracotta cone 04", "CELADON-LO", 12),
                                ("U3", "terracotta cone 05", "ASH-AMBER", 15), ("U4", "terracotta cone 04", "TENMOKU-LO", 20),
                                ("U5", "terracotta cone 05", "SATIN-WHITE", 11), ("U6", "terracotta cone 04", "ASH-AMBER", 8)]),
}
REFS = ["KO-313", "KO-314", "KO-315", "KO-316"]
CASES = [
    Case("kiln.parse", "lossy_parsing", "parse_order", '"cone": "6"', "KO-311"),
    Case("kiln.units", "unit_error", "to_celsius", "1886", "KO-311"),
    Case("kiln.memory", "bad_memory_write", "stage_load", "RAKU-3", "KO-312"),
    Case("kiln.shelves", "off_by_one", "assign_shelves", '"shelf": 5', "KO-312"),
    Case("kiln.sensor", "swallowed_error", "element_check", "10.85", "KO-311"),
]


@trajdebug.step(kind="input")
def read_order(text: str) -> str:
    return text


@trajdebug.step(kind="parse")
def parse_order(text: str) -> dict:
    head, *rows = text.splitlines()
    oid, kiln = head.split()[1], head.split("kiln=")[1]
    pieces = []
    for row in rows:
        pid, clay, glaze, h = (c.strip() for c in row.split("|"))
        cone = clay.rsplit("cone ", 1)[1]
        if active("kiln.parse"):
            cone = cone.lstrip("0")  # the leading zero is what makes a low-fire cone
        pieces.append({"piece": pid, "clay": clay.rsplit(" cone", 1)[0], "cone": cone,
                       "glaze": glaze.split("=")[1], "height_cm": int(h[2:-2])})
    return {"order": oid, "kiln": kiln, "pieces": pieces}


@trajdebug.step(kind="tool")
def glaze_catalog(glaze: str) -> dict:
    return {"glaze": glaze, **GLAZES[glaze], "unit": "F"}


@trajdebug.step(kind="parse")
def to_celsius(spec: dict) -> dict:
    max_c = round((spec["max_f"] - 32) * 5 / 9)
    ramp = round(spec["ramp_f_h"] * 5 / 9)
    if active("kiln.units"):
        max_c = spec["max_f"]  # the published figure taken as Celsius
    return {"glaze": spec["glaze"], "max_c": max_c, "ramp_c_h": ramp}


@trajdebug.step(kind="state")
def store_profile(profile: dict) -> None:
    trajdebug.current_run().state[f"profile:{profile['glaze']}"] = profile


@trajdebug.step(kind="tool")
def kiln_status(kiln: str) -> dict:
    zones = [{"zone": z, "ohm": o} for z, o in KILNS[kiln]["zones"].items()]
    zones[1] = {"zone": 2, "error": "thermocouple bus timeout"}
    return {"kiln": kiln, "shelves": KILNS[kiln]["shelves"], "rated_c": KILNS[kiln]["rated_c"], "zones": zones}


@trajdebug.step(kind="tool")
def poll_sensor(kiln: str, zone: int) -> dict:
    return {"kiln": kiln, "zone": zone, "ohm": KILNS[kiln]["zones"][zone]}


@trajdebug.step(kind="other")
def element_check(status: dict) -> dict:
    zones = {}
    for z in status["zones"]:
        if "error" in z:
            if active("kiln.sensor"):
                zones[str(z["zone"])] = 10.85  # nominal element resistance
                continue
            z = poll_sensor(status["kiln"], z["zone"])
        zones[str(z["zone"])] = z["ohm"]
    return {"kiln": status["kiln"], "element_ohm": zones}


@trajdebug.step(kind="other")
def assign_shelves(pieces: list, shelves: int) -> list:
    ordered = sorted(pieces, key=lambda p: -p["height_cm"])
    out = []
    for k, p in enumerate(ordered):
        shelf = k % shelves + (2 if active("kiln.shelves") else 1)
        out.append({"piece": p["piece"], "shelf": shelf})
    return out


@trajdebug.step(kind="tool")
def shelf_clearance(kiln: str, shelf: int, pieces: list) -> dict:
    if shelf > KILNS[kiln]["shelves"]:
        raise LookupError(f"kiln {kiln} inventory: shelf position {shelf} is not installed")
    return {"shelf": shelf, "pieces": pieces, "clearance_cm": KILNS[kiln]["shelf_cm"]}


@trajdebug.step(kind="state")
def stage_load(order: str, kiln: str, layout: list) -> dict:
    staged = {"order": order, "kiln": "RAKU-3" if active("kiln.memory") else kiln,
              "pieces": len(layout), "layout": layout}
    trajdebug.current_run().state["staged_load"] = staged
    return staged


@trajdebug.step(kind="llm")
def write_schedule(messages: list) -> dict:
    ctx = json.loads(messages[-1]["content"])
    peak = max(CONE_C[c] for c in ctx["cones"])
    segs = [{"seg": 1, "ramp_c_h": 80, "target_c": 600}, {"seg": 2, "ramp_c_h": min(ctx["ramps"]), "target_c": peak}]
    segs.append({"seg": 3, "ramp_c_h": 0, "target_c": min(ctx["glaze_max"]) - 20, "hold_min": 10})
    segs.append({"seg": 4, "ramp_c_h": -150, "target_c": 700})
    return {"role": "assistant", "content": json.dumps({"segments": segs})}


@trajdebug.step(kind="parse")
def read_schedule(message: dict) -> list:
    return json.loads(message["content"])["segments"]


@trajdebug.step(kind="condition")
def validate_segment(seg: dict, previous: int) -> str:
    return "ok" if seg["target_c"] != previous else "merge"


@trajdebug.step(kind="tool")
def program_controller(order: str, kiln: str, segments: list, element_ohm: dict) -> dict:
    st = trajdebug.current_run().state
    staged = st["staged_load"]
    if staged["kiln"] != kiln:
        raise RuntimeError(f"controller {staged['kiln']}: no load staged for order {order}")
    k = KILNS[kiln]
    for z, ohm in k["zones"].items():
        rec = element_ohm[str(z)]
        if abs(rec - ohm) / ohm > 0.1:
            raise RuntimeError(f"zone {z} self-test: measured {ohm} ohm, profile says {rec} ohm; program rejected")
    for s in segments:
        if s["target_c"] > k["rated_c"]:
            raise ValueError(f"E-21 segment {s['seg']} target {s['target_c']} C above the {kiln} rating of {k['rated_c']} C")
        if s.get("hold_min") and s["target_c"] < max(x["target_c"] for x in segments) - 150:
            raise ValueError(f"E-34 segment {s['seg']} hold at {s['target_c']} C is more than 150 C under the peak")
    return {"kiln": kiln, "program": f"PRG-{order}", "segments": len(segments), "status": "armed"}


@trajdebug.step(kind="output")
def notify_studio(order: str, program: dict) -> str:
    return f"Order {order}: program {program['program']} armed on {program['kiln']}."


def record(inp: str, path, server=None) -> None:
    try:
        with trajdebug.run(AGENT, task=f"plan the firing for {inp}", path=str(path)) as run:
            order = parse_order(read_order(INPUTS[inp]))
            glazes = sorted({p["glaze"] for p in order["pieces"]})
            for g in glazes:
                store_profile(to_celsius(glaze_catalog(g)))
            status = kiln_status(order["kiln"])
            health = element_check(status)
            layout = assign_shelves(order["pieces"], status["shelves"])
            for shelf in sorted({x["shelf"] for x in layout}):
                shelf_clearance(order["kiln"], shelf, [x["piece"] for x in layout if x["shelf"] == shelf])
            stage_load(order["order"], order["kiln"], layout)
            with trajdebug.step("gather_profiles", kind="state") as s:
                profiles = [run.state[f"profile:{g}"] for g in glazes]
                s.output = profiles
            ctx = {"cones": sorted({p["cone"] for p in order["pieces"]}), "ramps": [p["ramp_c_h"] for p in profiles],
                   "glaze_max": [p["max_c"] for p in profiles]}
            msg = write_schedule([{"role": "system", "content": "You write kiln firing schedules as JSON."},
                                  {"role": "user", "content": json.dumps(ctx)}])
            segs = read_schedule(msg)
            prev = 20
            for seg in segs:
                validate_segment(seg, prev)
                prev = seg["target_c"]
            prog = program_controller(order["order"], order["kiln"], segs, health["element_ohm"])
            notify_studio(order["order"], prog)
    except (RuntimeError, ValueError, LookupError):
        pass
