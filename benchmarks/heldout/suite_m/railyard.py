"""Freight train builder (route sdk): waybills -> per-car parse, registry, load check -> yard bulletin ->
model consist -> hazmat placement, length, power, siding -> pull list, train sheet, track warrant."""

from __future__ import annotations

import json
import math

import trajdebug
from suite_m import kit


AGENT = "train-builder"
ROUTE = "sdk"
DOMAIN = "freight rail yard (train make-up)"
SHAPE = "loop over 8-9 waybills (parse, car registry, load check), yard bulletin, model consist, hazmat placement, length, power, siding, then pull list, train sheet and track warrant checks"

# car -> (commodity, gross_t, length_ft, hazmat class or "", track)
CARS = {
    "BNSF 482210": ("corn", 118.2, 59, "", "YD-03"),
    "CSXT 117455": ("soybean meal", 116.9, 59, "", "YD-03"),
    "UTLX 640122": ("LPG", 112.4, 61, "2.1", "YD-09"),
    "NATX 221730": ("plastic pellets", 117.5, 65, "", "YD-12"),
    "TTGX 951004": ("autos", 62.0, 89, "", "YD-05"),
    "GATX 307781": ("caustic soda", 118.8, 46, "8", "YD-09"),
    "CSXT 230118": ("lumber", 109.3, 73, "", "YD-05"),
    "BNSF 519933": ("wheat", 119.0, 59, "", "YD-03"),
    "TILX 30412": ("methanol", 114.6, 57, "3", "YD-14"),
    "ADMX 44120": ("corn oil", 112.9, 52, "", "YD-07"),
    "CORX 8813": ("cement", 118.4, 50, "", "YD-07"),
    "PROX 77305": ("sand", 117.2, 46, "", "YD-12"),
    "DOWX 50921": ("chlorine", 82.1, 48, "2.3", "YD-09"),
    "SHPX 2044": ("fertilizer", 116.0, 55, "", "YD-12"),
}
LIMIT_T = {c: (142.9 if c.startswith(("BNSF", "CSXT", "CORX", "PROX")) else 119.3) for c in CARS}
LIMIT_T["SHPX 2044"] = 112.0
BULLETIN = ["TILX 30412", "ADMX 44120"]
SIDINGS = [("Elkhorn", 600), ("Dry Fork", 660), ("Cedar Gap", 720), ("Bluestem", 800), ("Halley", 1200)]
LOCO_FT, LOCO_HP = 74, 4400


def _train(n: int, dest: str, cars: list[str]) -> dict:
    return {"task": f"Build train M-{n} to {dest} from the yard's waybills", "train": f"M-{n}", "destination": dest, "cars": cars}


INPUTS = [
    _train(417, "Kansas City", ["BNSF 482210", "CSXT 117455", "UTLX 640122", "NATX 221730", "TTGX 951004", "GATX 307781", "CSXT 230118", "BNSF 519933"]),
    _train(418, "Memphis", ["CSXT 117455", "BNSF 482210", "NATX 221730", "CORX 8813", "UTLX 640122", "PROX 77305", "CSXT 230118", "BNSF 519933"]),
    _train(419, "Omaha", ["BNSF 519933", "CORX 8813", "CSXT 230118", "PROX 77305", "GATX 307781", "TTGX 951004", "BNSF 482210", "NATX 221730"]),
    _train(420, "Denver", ["CSXT 230118", "BNSF 482210", "PROX 77305", "NATX 221730", "CORX 8813", "UTLX 640122", "BNSF 519933", "CSXT 117455"]),
    _train(421, "Tulsa", ["BNSF 482210", "CORX 8813", "CSXT 117455", "SHPX 2044", "PROX 77305", "GATX 307781", "BNSF 519933", "NATX 221730", "CSXT 230118"]),
]
REFERENCES = [
    _train(510, "Wichita", ["CORX 8813", "BNSF 519933", "CSXT 117455", "NATX 221730", "PROX 77305", "CSXT 230118", "BNSF 482210", "TTGX 951004"]),
    _train(511, "St. Louis", ["BNSF 482210", "CSXT 117455", "DOWX 50921", "PROX 77305", "CORX 8813", "BNSF 519933", "NATX 221730", "CSXT 230118"]),
    _train(512, "Dallas", ["PROX 77305", "CSXT 230118", "BNSF 519933", "CORX 8813", "NATX 221730", "UTLX 640122", "CSXT 117455", "SHPX 2044"]),
    _train(513, "Little Rock", ["CSXT 117455", "CORX 8813", "BNSF 482210", "GATX 307781", "NATX 221730", "TTGX 951004", "PROX 77305", "BNSF 519933"]),
]

CASES = [
    {"case": "m_railyard_1", "fid": "rail1", "kind": "hallucinated_value", "input": 0, "root": "draft_consist", "marker": "948", "failure": "validate_train_sheet"},
    {"case": "m_railyard_2", "fid": "rail2", "kind": "context_pollution", "input": 1, "root": "draft_consist", "marker": "TILX 30412", "failure": "confirm_pull_list"},
    {"case": "m_railyard_3", "fid": "rail3", "kind": "off_by_one", "input": 2, "root": "compute_train_length", "marker": "576", "failure": "request_track_warrant"},
    {"case": "m_railyard_4", "fid": "rail4", "kind": "stale_data", "input": 3, "root": "lookup_car", "marker": "2026-10-19", "failure": "confirm_pull_list"},
    {"case": "m_railyard_5", "fid": "rail5", "kind": "swallowed_error", "input": 4, "root": "lookup_car", "marker": "129.7", "failure": "validate_train_sheet"},
]


def policy(inp: dict):
    def answer(request) -> str:
        prompt = request.body["messages"][-1]["content"]
        data = json.loads(prompt.split("DATA:", 1)[1])
        cars = sorted(data["cars"], key=lambda c: (c["hazmat"] != "", c["car"]))
        if kit.active("rail2"):
            extra = next(b for b in data["bulletin"] if b["car"] == "TILX 30412")
            cars.insert(3, {k: extra[k] for k in ("car", "gross_t", "length_ft", "hazmat")})
        tons = round(sum(c["gross_t"] for c in cars))
        if kit.active("rail1"):
            tons = tons + 74
        return json.dumps({"order": cars, "trailing_tons": tons, "notes": "placarded cars toward the rear"})

    return answer


@trajdebug.step(kind="tool")
def fetch_waybills(train: dict) -> list[str]:
    lines = []
    for car in train["cars"]:
        commodity, gross, length, haz, _ = CARS[car]
        lines.append(f"WB|{car}|{commodity}|{gross:.1f}|{length}|{haz or '-'}|{train['destination']}")
    return lines


@trajdebug.step(kind="parse")
def parse_waybill(line: str) -> dict:
    _, car, commodity, gross, length, haz, dest = line.split("|")
    return {"car": car, "commodity": commodity, "gross_t": float(gross), "length_ft": int(length),
            "hazmat": "" if haz == "-" else haz, "destination": dest}


class RegistryTimeout(Exception):
    pass


def _registry(car: str) -> dict:
    if car == "SHPX 2044" and kit.active("rail5"):
        raise RegistryTimeout("car registry: read timed out after 2.0 s")
    return {"car": car, "max_gross_t": LIMIT_T[car], "axles": 4, "track": CARS[car][4], "as_of": "2026-12-02"}


@trajdebug.step(kind="tool")
def lookup_car(car: str) -> dict:
    try:
        record = _registry(car)
    except RegistryTimeout:
        record = {"car": car, "max_gross_t": 129.7, "axles": 4, "track": CARS[car][4], "as_of": "2026-12-02"}
    if car == "NATX 221730" and kit.active("rail4"):
        record = {**record, "track": "YD-07", "as_of": "2026-10-19"}
    return record


@trajdebug.step(kind="condition")
def check_car_load(waybill: dict, spec: dict) -> str:
    return "accept" if waybill["gross_t"] <= spec["max_gross_t"] else "hold"


@trajdebug.step(kind="tool")
def yard_bulletin(yard: str) -> list[dict]:
    rows = []
    for car in BULLETIN:
        commodity, gross, length, haz, track = CARS[car]
        rows.append({"car": car, "gross_t": gross, "length_ft": length, "hazmat": haz, "track": track,
                     "note": "held for train Z-902 (Fort Worth)"})
    return rows


@trajdebug.step(kind="llm")
def draft_consist(cars: list[dict], bulletin: list[dict], env) -> dict:
    prompt = ("Order the cars into a consist: placarded cars away from the engines. Give trailing tons.\nDATA:"
              + json.dumps({"cars": cars, "bulletin": bulletin}))
    reply = env.client.chat.completions.create(model="fake-model", messages=[
        {"role": "system", "content": "You are the yardmaster's consist planner."},
        {"role": "user", "content": prompt},
    ])
    trajdebug.current_step().usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                                   completion_tokens=reply.usage.completion_tokens)
    return {"role": "assistant", "content": reply.choices[0].message.content}


@trajdebug.step(kind="parse")
def parse_consist(message: dict) -> dict:
    return json.loads(message["content"])


@trajdebug.step(kind="other")
def place_hazmat(order: list[dict]) -> list[dict]:
    plain = [c for c in order if not c["hazmat"]]
    placarded = [c for c in order if c["hazmat"]]
    head, tail = plain[:5], plain[5:]
    out = head + placarded + tail
    return [{**c, "position": i + 1} for i, c in enumerate(out)]


@trajdebug.step(kind="tool")
def assign_power(trailing_tons: float) -> dict:
    units = max(2, math.ceil(trailing_tons * 1.0 / LOCO_HP * 1.05))
    return {"units": units, "hp": units * LOCO_HP, "model": "ES44AC"}


@trajdebug.step(kind="other")
def compute_train_length(consist: list[dict], units: int) -> dict:
    start = 1 if kit.active("rail3") else 0
    cars_ft = sum(consist[i]["length_ft"] for i in range(start, len(consist)))
    return {"cars": len(consist), "length_ft": cars_ft + units * LOCO_FT}


@trajdebug.step(kind="condition")
def choose_siding(length_ft: int) -> dict:
    name, cap = next((n, c) for n, c in SIDINGS if c >= length_ft)
    return {"siding": name, "capacity_ft": cap}


@trajdebug.step(kind="tool")
def confirm_pull_list(train: str, pulls: list[dict]) -> dict:
    billed = next(t for t in INPUTS + REFERENCES if t["train"] == train)["cars"]
    for p in pulls:
        if p["car"] not in billed:
            raise RuntimeError(f"yard inventory: {p['car']} has no waybill on {train}")
        if p["track"] != CARS[p["car"]][4]:
            raise RuntimeError(f"yard inventory: {p['car']} not found on {p['track']} (last AEI read {CARS[p['car']][4]})")
    return {"train": train, "pull_list": f"PL-{train[2:]}", "cars": len(pulls)}


@trajdebug.step(kind="tool")
def validate_train_sheet(train: str, consist: list[dict], hp: int, declared_tons: float) -> dict:
    tons = sum(CARS[c["car"]][1] for c in consist)
    if abs(declared_tons - tons) > 0.02 * tons:
        raise RuntimeError(f"train sheet {train}: declared {declared_tons} trailing tons, waybilled {tons:.1f} t (limit 2%)")
    for c in consist:
        if CARS[c["car"]][1] > LIMIT_T[c["car"]]:
            raise RuntimeError(f"train sheet {train}: {c['car']} gross {CARS[c['car']][1]} t over its stenciled load limit")
    hpt = hp / tons
    if hpt < 1.0:
        raise RuntimeError(f"train sheet {train}: {hpt:.2f} HP per trailing ton, subdivision minimum 1.00")
    return {"train": train, "tons": round(tons, 1), "hpt": round(hpt, 2)}


@trajdebug.step(kind="tool")
def request_track_warrant(train: str, siding: dict, consist: list[dict], units: int) -> dict:
    actual = sum(CARS[c["car"]][2] for c in consist) + units * LOCO_FT
    if actual > siding["capacity_ft"]:
        raise RuntimeError(f"dispatcher: {train} is {actual} ft, does not clear {siding['siding']} ({siding['capacity_ft']} ft) for the meet")
    return {"warrant": f"TW-{train[2:]}-1", "meet_at": siding["siding"]}


@trajdebug.step(kind="output")
def crew_briefing(train: str, consist: list[dict], power: dict, warrant: dict) -> str:
    return f"{train}: {len(consist)} cars, {power['units']} x {power['model']}, meet at {warrant['meet_at']}"


def execute(inp: dict, env) -> None:
    with trajdebug.step("train_order", kind="input") as s:
        s.output = dict(inp)
    lines = fetch_waybills(inp)
    accepted, tracks = [], {}
    for line in lines:
        wb = parse_waybill(line)
        spec = lookup_car(wb["car"])
        if check_car_load(wb, spec) == "accept":
            accepted.append({k: wb[k] for k in ("car", "gross_t", "length_ft", "hazmat")})
            tracks[wb["car"]] = spec["track"]
    bulletin = yard_bulletin("Argentine")
    for b in bulletin:
        tracks.setdefault(b["car"], b["track"])
    plan = parse_consist(draft_consist(accepted, bulletin, env))
    consist = place_hazmat(plan["order"])
    power = assign_power(plan["trailing_tons"])
    length = compute_train_length(consist, power["units"])
    siding = choose_siding(length["length_ft"])
    confirm_pull_list(inp["train"], [{"car": c["car"], "track": tracks[c["car"]]} for c in consist])
    validate_train_sheet(inp["train"], consist, power["hp"], plan["trailing_tons"])
    warrant = request_track_warrant(inp["train"], siding, consist, power["units"])
    crew_briefing(inp["train"], consist, power, warrant)
