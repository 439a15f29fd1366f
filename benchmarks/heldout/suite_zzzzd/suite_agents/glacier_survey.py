"""glacier-survey: an end-of-season glacier mass-balance survey agent (trajdebug's own recorder, JSONL).

The field team's notes (stake readings, snow pits) are parsed; a model reads them with last year's
equilibrium-line altitude and plans the survey (the ELA, which snow pit serves which accumulation
stake); a density sub-agent reads the pit logs and has a model work out each pit's column density.
Each stake then gets its history, a zone decision (ablation or accumulation), a point balance and a
memory entry.  The balance table is collected, the hypsometry fetched, the balance interpolated over
the elevation bands and summed, a model writes the note, and the submission is validated against the
World Glacier Monitoring Service's rules.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import trajdebug
from openai import OpenAI

from .common import Case, first_json, last_user, system_of

RUN_NAME = "glacier-survey"
ROUTE = "sdk"
DOMAIN = "glacier mass-balance programme: end-of-season stake and snow-pit survey"
SHAPE = "parse notes -> llm plan -> parse -> density sub-agent (tool + llm per pit) -> per-stake loop (tool, condition + branch, code, state) -> state collect -> retrieval -> tool -> code -> llm -> final check"

SWITCH: str | None = None


def _on(tag: str) -> bool:
    return SWITCH == tag  # the one place SWITCH is read


ICE_DENSITY = 0.9

# glacier code -> outline and climate of the season
GLACIERS: dict[str, dict[str, Any]] = {
    "HEF": {"name": "Hintereisferner", "min_m": 2450, "max_m": 3700, "area_km2": 6.42, "ela_m": 3190, "grad": 0.0062},
    "KWF": {"name": "Kesselwandferner", "min_m": 2750, "max_m": 3500, "area_km2": 3.61, "ela_m": 3120, "grad": 0.0055},
    "VEF": {"name": "Vernagtferner", "min_m": 2800, "max_m": 3600, "area_km2": 6.95, "ela_m": 3240, "grad": 0.0058},
    "JAM": {"name": "Jamtalferner", "min_m": 2450, "max_m": 3150, "area_km2": 2.74, "ela_m": 2980, "grad": 0.0066},
    "GPL": {"name": "Goldbergkees", "min_m": 2400, "max_m": 3050, "area_km2": 1.36, "ela_m": 2910, "grad": 0.0071},
}

# Pits of every site the field tablet knows (site, pit) -> where it was dug and its layers.
PITS: dict[tuple[str, str], dict[str, Any]] = {
    ("HEF", "P1"): {"elev_m": 3260, "x": 632410, "y": 5186320, "layers": [(0, 40, 0.36), (40, 95, 0.44), (95, 150, 0.49)]},
    ("HEF", "P2"): {"elev_m": 3420, "x": 633980, "y": 5185110, "layers": [(0, 55, 0.38), (55, 120, 0.45), (120, 205, 0.50)]},
    ("KWF", "P1"): {"elev_m": 3210, "x": 635870, "y": 5190210, "layers": [(0, 50, 0.39), (50, 130, 0.47)]},
    ("KWF", "P2"): {"elev_m": 3330, "x": 636720, "y": 5190930, "layers": [(0, 60, 0.41), (60, 160, 0.52)]},
    ("VEF", "P1"): {"elev_m": 3300, "x": 637510, "y": 5191880, "layers": [(0, 45, 0.37), (45, 140, 0.46)]},
    ("VEF", "P2"): {"elev_m": 3450, "x": 638240, "y": 5192640, "layers": [(0, 60, 0.40), (60, 190, 0.48)]},
    ("JAM", "P1"): {"elev_m": 3040, "x": 582330, "y": 5191650, "layers": [(0, 35, 0.35), (35, 110, 0.45)]},
    ("GPL", "P1"): {"elev_m": 2960, "x": 365220, "y": 5213980, "layers": [(0, 30, 0.34), (30, 95, 0.43)]},
}

# The team's tablet keeps the pit-log site of its previous survey day.
TABLET_SESSION = {"site": "KWF", "opened": "2024-09-17T07:40"}

# (stake, elevation, x, y, fresh snow cm, history name when the stake was redrilled)
StakeRow = tuple[str, int, int, int, int, str | None]

CAMPAIGNS: list[dict[str, Any]] = [
    {"code": "HEF", "date": "2024-09-18", "team": "K. Brunner, L. Moser", "pits": ["P1", "P2"], "snowline": 3190,
     "stakes": [("S02", 2620, 628410, 5181020, 0, None), ("S05", 2710, 629130, 5181790, 0, None),
                ("S08b", 2840, 630020, 5182650, 3, "S08"), ("S10", 2990, 630950, 5183610, 0, None),
                ("S13", 3280, 632550, 5186180, 0, None), ("S15", 3430, 633890, 5185240, 0, None)],
     "thousands_dot": "S05"},
    {"code": "KWF", "date": "2024-09-17", "team": "K. Brunner, L. Moser", "pits": ["P1", "P2"], "snowline": 3120,
     "stakes": [("K03", 2860, 634020, 5188150, 0, None), ("K06", 2970, 634660, 5188840, 4, None),
                ("K09", 3060, 635210, 5189560, 0, None), ("K12", 3220, 635920, 5190140, 0, None),
                ("K14", 3340, 636650, 5190880, 0, None)],
     "thousands_dot": None},
    {"code": "VEF", "date": "2024-09-20", "team": "T. Egger, M. Siebers", "pits": ["P1", "P2"], "snowline": 3240,
     "stakes": [("V01", 2870, 634800, 5189310, 0, None), ("V04", 2990, 635520, 5190020, 0, None),
                ("V07", 3110, 636330, 5190850, 5, None), ("V09", 3190, 636980, 5191420, 0, None),
                ("V11", 3310, 637600, 5191940, 0, None), ("V14", 3460, 638310, 5192580, 0, None)],
     "thousands_dot": "V04"},
    {"code": "JAM", "date": "2024-09-24", "team": "A. Fischer, B. Seiser", "pits": ["P1"], "snowline": 2980,
     "stakes": [("J1", 2520, 580210, 5188340, 0, None), ("J3", 2640, 580820, 5189120, 2, None),
                ("J5", 2760, 581270, 5189980, 0, None), ("J7", 2870, 581760, 5190760, 0, None),
                ("J9", 3050, 582410, 5191580, 0, None)],
     "thousands_dot": None},
    {"code": "GPL", "date": "2024-09-26", "team": "A. Fischer, B. Seiser", "pits": ["P1"], "snowline": 2910,
     "stakes": [("G2", 2480, 363140, 5211020, 0, None), ("G4", 2590, 363620, 5211830, 0, None),
                ("G6", 2700, 364080, 5212540, 6, None), ("G8", 2820, 364610, 5213260, 0, None),
                ("G9", 2970, 365180, 5213910, 0, None)],
     "thousands_dot": "G8"},
]


def _point_balance(code: str, elev: float) -> float:
    g = GLACIERS[code]
    return g["grad"] * (elev - g["ela_m"])


def _pit_density(site: str, pit: str) -> float:
    layers = PITS[(site, pit)]["layers"]
    depth = sum(b - t for t, b, _ in layers)
    return sum((b - t) * d for t, b, d in layers) / depth


def _notes(c: dict[str, Any]) -> str:
    """The field notes as the team typed them on the tablet."""
    code = c["code"]
    lines = [f"{GLACIERS[code]['name']} end-of-season survey {c['date']}, team: {c['team']}",
             f"transient snowline ~{c['snowline']} m"]
    for stake, elev, _x, _y, fresh, _hist in c["stakes"]:
        elev_txt = f"{elev // 1000}.{elev % 1000:03d}" if stake == c["thousands_dot"] else str(elev)
        b = _point_balance(code, elev)
        if b < 0:
            prev = 0.8 + (sum(map(ord, stake)) % 7) / 10
            exposed = prev + (-b) / ICE_DENSITY
            snow = f"snow {fresh} cm fresh" if fresh else "snow 0 cm"
            lines.append(f"{stake} {elev_txt} m a.s.l.: {exposed:.2f} m exposed (prev {prev:.2f}), {snow}")
        else:
            site_pits = [p for p in c["pits"]]
            pit = min(site_pits, key=lambda p: abs(PITS[(code, p)]["elev_m"] - elev))
            depth = b / _pit_density(code, pit) * 100
            lines.append(f"{stake} {elev_txt} m a.s.l.: snow {depth:.0f} cm above summer surface")
    for pit in c["pits"]:
        lines.append(f"{pit} {PITS[(code, pit)]['elev_m']} m a.s.l. pit: profile logged on tablet")
    return "\n".join(lines)


INPUTS: list[dict[str, Any]] = [
    {"task": f"mass balance {GLACIERS[c['code']]['name']} {c['date'][:4]} end-of-season survey", "campaign": c}
    for c in CAMPAIGNS
]

CASES = [
    Case("gs1", 0, "stake-key", "bad_memory_write", ("remember_stake", 3), ("wgms_validate", 1),
         "The stake memory stored redrilled stake S08b's point balance under its predecessor's name S08, so the "
         "balance table lacked S08b and the submission check refused it."),
    Case("gs2", 1, "band-page", "truncated_result", ("hypsometry_fetch", 1), ("wgms_validate", 1),
         "The hypsometry fetch kept only the first page of elevation bands, so the bands summed to less than the "
         "glacier outline and the submission check refused the glacier-wide balance."),
    Case("gs3", 2, "fresh-snow-zone", "wrong_routing", ("classify_zone", 3), ("snow_balance", 1),
         "The zone decision sent ablation stake V07 to the accumulation branch because of 5 cm of fresh snow, and "
         "the snow-balance step found no pit planned for it."),
    Case("gs4", 4, "notes-decimal", "lossy_parsing", ("parse_field_notes", 1), ("interpolate_balance", 1),
         "The field-notes parser read stake G8's elevation '2.820 m' (a thousands dot) as 2.82 m, and the "
         "interpolation over elevation bands found a stake below the glacier."),
    Case("gs5", 3, "pit-site", "subagent_wrong_entity", ("density_desk", 1), ("snow_balance", 1),
         "The density sub-agent read pit P1 from the tablet's previous site, Kesselwandferner, instead of "
         "Jamtalferner, and the snow balance of J9 was refused for a pit kilometres away."),
]

# --------------------------------------------------------------------------------------------------
# The model's side.
# --------------------------------------------------------------------------------------------------


def brain(request: Any) -> Any:
    messages = request.body["messages"]
    system = system_of(messages)
    data = first_json(last_user(messages))
    if system.startswith("You plan a glacier survey"):
        ela = data["snowline_m"]
        pit_for = {}
        for r in data["readings"]:
            if r["kind"] == "snow" and r["elev_m"] >= ela - 50:
                pit = min(data["pits"], key=lambda p: abs(p["elev_m"] - r["elev_m"]))
                pit_for[r["stake"]] = pit["pit"]
        return json.dumps({"ela_m": ela, "pit_for": pit_for, "note": "stakes below the snowline by exposure, above by pit density"})
    if system.startswith("You read snow-pit profiles"):
        layers = data["layers"]
        depth = sum(l["bottom_cm"] - l["top_cm"] for l in layers)
        rho = sum((l["bottom_cm"] - l["top_cm"]) * l["density"] for l in layers) / depth
        return f"Column mean density {rho:.3f} g/cm3 over {depth} cm ({len(layers)} layers), no ice lenses noted."
    if system.startswith("You write the season note"):
        return (f"{data['glacier']}: glacier-wide balance {data['balance_mwe']:+.2f} m w.e., ELA {data['ela_m']} m, "
                f"AAR {data['aar']:.2f}. {data['stakes']} stakes and {data['pits']} pits.")
    return "Unknown request."


# --------------------------------------------------------------------------------------------------
# The agent.
# --------------------------------------------------------------------------------------------------

_client: OpenAI | None = None
_model = "fake-model"
_campaign: dict[str, Any] = {}


def setup(server: Any) -> None:
    global _client, _model
    _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _model = server.model


def teardown() -> None:
    global _client
    if _client is not None:
        _client.close()
    _client = None


def _chat(messages: list[dict[str, Any]]) -> dict[str, Any]:
    reply = _client.chat.completions.create(model=_model, messages=messages, temperature=0)
    trajdebug.current_step().usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                                   completion_tokens=reply.usage.completion_tokens)
    return reply.choices[0].message.model_dump(exclude_none=True)


@trajdebug.step(kind="input")
def campaign_upload(glacier: str, date: str, notes: str) -> dict:
    return {"glacier": glacier, "date": date, "notes": notes}


_LINE = re.compile(r"^(?P<stake>[A-Z]\d+b?) (?P<elev>[\d.]+) m a\.s\.l\.: (?P<rest>.*)$")


def _elevation(raw: str) -> float:
    if _on("notes-decimal"):
        return float(raw)
    return float(raw.replace(".", "")) if re.fullmatch(r"\d\.\d{3}", raw) else float(raw)


@trajdebug.step(kind="parse")
def parse_field_notes(upload: dict) -> list[dict]:
    readings = []
    for line in upload["notes"].splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        rest = m.group("rest")
        r: dict[str, Any] = {"stake": m.group("stake"), "elev_m": _elevation(m.group("elev"))}
        if "exposed" in rest:
            e = re.search(r"([\d.]+) m exposed \(prev ([\d.]+)\), snow (\d+) cm", rest)
            r.update(kind="exposure", exposed_m=float(e.group(1)), prev_m=float(e.group(2)), snow_cm=int(e.group(3)))
        else:
            r.update(kind="snow", snow_cm=int(re.search(r"snow (\d+) cm", rest).group(1)))
        readings.append(r)
    return readings


@trajdebug.step(kind="llm")
def survey_plan(messages: list[dict]) -> dict:
    return _chat(messages)


@trajdebug.step(kind="parse")
def read_survey_plan(answer: dict) -> dict:
    plan = json.loads(answer["content"])
    return {"ela_m": int(plan["ela_m"]), "pit_for": dict(plan["pit_for"])}


@trajdebug.step(kind="tool")
def pit_log(site: str, pit: str) -> dict:
    p = PITS[(site, pit)]
    return {"site": site, "pit": pit, "elev_m": p["elev_m"], "x": p["x"], "y": p["y"],
            "layers": [{"top_cm": t, "bottom_cm": b, "density": d} for t, b, d in p["layers"]]}


@trajdebug.step(kind="llm")
def density_model(messages: list[dict]) -> dict:
    return _chat(messages)


@trajdebug.step(kind="agent")
def density_desk(site: str, pits: list[str]) -> dict:
    """The density sub-agent: each pit's log from the tablet, its column density from a model."""
    out = {}
    session_site = TABLET_SESSION["site"] if _on("pit-site") else site
    for pit in pits:
        log = pit_log(session_site, pit)
        answer = density_model([
            {"role": "system", "content": "You read snow-pit profiles and give the column mean density."},
            {"role": "user", "content": json.dumps({"pit": pit, "layers": log["layers"]})},
        ])
        rho = float(re.search(r"density ([\d.]+)", answer["content"]).group(1))
        out[pit] = {"pit": f"{log['site']}-{pit}", "density": rho, "x": log["x"], "y": log["y"]}
    return out


@trajdebug.step(kind="tool")
def stake_history(site: str, stake: str) -> dict:
    row = next(s for s in _campaign["stakes"] if s[0] == stake)
    name = row[5] or stake
    return {"stake": name, "site": site, "x": row[2], "y": row[3], "installed": "2021-06-" + str(10 + len(name)),
            **({"redrilled": "2024-06-12", "current_name": stake} if row[5] else {})}


def classify_zone(reading: dict, ela_m: int) -> tuple[str, Any]:
    """The zone decision, as a step the branch below it depends on."""
    with trajdebug.step("classify_zone", kind="condition", input={"reading": reading, "ela_m": ela_m}) as decision:
        if _on("fresh-snow-zone"):
            zone = "accumulation" if reading["snow_cm"] > 0 else "ablation"
        else:
            zone = "accumulation" if reading["kind"] == "snow" and reading["elev_m"] >= ela_m - 50 else "ablation"
        decision.output = zone
    return zone, decision


@trajdebug.step(kind="other")
def ice_melt(reading: dict) -> dict:
    melt = reading["exposed_m"] - reading["prev_m"]
    return {"stake": reading["stake"], "balance_mwe": round(-melt * ICE_DENSITY, 3), "method": "stake exposure"}


@trajdebug.step(kind="other")
def snow_balance(reading: dict, history: dict, plan: dict, densities: dict) -> dict:
    stake = reading["stake"]
    pit_id = plan["pit_for"].get(stake)
    if pit_id is None:
        raise LookupError(f"no snow pit is planned for stake {stake} ({reading['elev_m']:.0f} m)")
    pit = densities[pit_id]
    dist = math.hypot(pit["x"] - history["x"], pit["y"] - history["y"])
    if dist > 1500:
        raise ValueError(f"pit {pit['pit']} lies {dist / 1000:.1f} km from stake {stake}; the survey rule allows 1.5 km")
    return {"stake": stake, "balance_mwe": round(reading["snow_cm"] / 100 * pit["density"], 3),
            "method": f"snow depth x density ({pit['pit']})"}


@trajdebug.step(kind="state")
def remember_stake(stake: str, reading: dict, history: dict, point: dict) -> None:
    key = history["stake"] if _on("stake-key") else stake
    trajdebug.current_run().state[f"stake:{key}"] = {"stake": key, "elev_m": reading["elev_m"],
                                                     "balance_mwe": point["balance_mwe"], "method": point["method"]}


@trajdebug.step(kind="other")
def collect_table() -> list[dict]:
    state = trajdebug.current_run().state
    return sorted((state[k] for k in list(state) if k.startswith("stake:")), key=lambda r: r["elev_m"])


@trajdebug.step(kind="retrieval")
def hypsometry_fetch(site: str, dem: str = "DEM 2023 (5 m)", page_size: int = 6) -> dict:
    g = GLACIERS[site]
    lo = g["min_m"] // 100 * 100
    bands = list(range(lo, g["max_m"], 100))
    weights = [math.sin(math.pi * (i + 0.5) / len(bands)) ** 0.7 for i in range(len(bands))]
    total = sum(weights)
    rows = [{"band_m": b, "area_km2": round(g["area_km2"] * w / total, 4)} for b, w in zip(bands, weights)]
    if _on("band-page"):
        return {"site": site, "dem": dem, "bands": rows[:page_size], "page": 1, "pages": 2}
    return {"site": site, "dem": dem, "bands": rows, "page": 1, "pages": 1}


@trajdebug.step(kind="tool")
def interpolate_balance(table: list[dict], hypsometry: dict) -> list[dict]:
    g = GLACIERS[hypsometry["site"]]
    for r in table:
        if not g["min_m"] - 50 <= r["elev_m"] <= g["max_m"]:
            raise ValueError(f"stake {r['stake']} at {r['elev_m']} m lies outside the glacier's elevation range "
                             f"({g['min_m']}–{g['max_m']} m)")
    zs = [r["elev_m"] for r in table]
    bs = [r["balance_mwe"] for r in table]
    out = []
    for band in hypsometry["bands"]:
        z = band["band_m"] + 50
        if z <= zs[0]:
            b = bs[0] + (bs[1] - bs[0]) / (zs[1] - zs[0]) * (z - zs[0])
        elif z >= zs[-1]:
            b = bs[-1] + (bs[-1] - bs[-2]) / (zs[-1] - zs[-2]) * (z - zs[-1])
        else:
            i = max(j for j in range(len(zs)) if zs[j] <= z)
            b = bs[i] + (bs[i + 1] - bs[i]) / (zs[i + 1] - zs[i]) * (z - zs[i])
        out.append({"band_m": band["band_m"], "area_km2": band["area_km2"], "balance_mwe": round(b, 3)})
    return out


@trajdebug.step(kind="other")
def glacier_wide_balance(bands: list[dict], ela_m: int) -> dict:
    area = sum(b["area_km2"] for b in bands)
    total = sum(b["area_km2"] * b["balance_mwe"] for b in bands) / area
    acc = sum(b["area_km2"] for b in bands if b["balance_mwe"] > 0)
    return {"balance_mwe": round(total, 3), "area_km2": round(area, 3), "aar": round(acc / area, 2), "ela_m": ela_m}


@trajdebug.step(kind="llm")
def season_note(messages: list[dict]) -> dict:
    return _chat(messages)


@trajdebug.step(kind="condition", attributes={"final": True})
def wgms_validate(site: str, result: dict, table: list[dict], readings: list[dict]) -> str:
    g = GLACIERS[site]
    names = {r["stake"] for r in table}
    for r in readings:
        if r["stake"] not in names:
            raise ValueError(f"stake {r['stake']} was surveyed but is not in the balance table ({', '.join(sorted(names))})")
    if abs(result["area_km2"] - g["area_km2"]) > 0.01 * g["area_km2"]:
        raise ValueError(f"elevation bands cover {result['area_km2']} km²; the {g['name']} outline has {g['area_km2']} km²")
    if not -4.0 <= result["balance_mwe"] <= 2.0:
        raise ValueError(f"glacier-wide balance {result['balance_mwe']} m w.e. outside the plausible range")
    return "ready for WGMS submission"


def run_once(inp: dict, path: Path) -> None:
    c = inp["campaign"]
    _campaign.clear()
    _campaign.update(c)
    site = c["code"]
    try:
        with trajdebug.run(RUN_NAME, path=str(path), task=inp["task"]):
            upload = campaign_upload(GLACIERS[site]["name"], c["date"], _notes(c))
            readings = parse_field_notes(upload)
            answer = survey_plan([
                {"role": "system", "content": "You plan a glacier survey: give the ELA and assign a snow pit to every "
                                              "accumulation stake, as JSON."},
                {"role": "user", "content": json.dumps({
                    "glacier": upload["glacier"], "snowline_m": c["snowline"], "readings": readings,
                    "pits": [{"pit": p, "elev_m": PITS[(site, p)]["elev_m"]} for p in c["pits"]]})},
            ])
            plan = read_survey_plan(answer)
            densities = density_desk(site, c["pits"])
            for r in readings:
                history = stake_history(site, r["stake"])
                zone, decision = classify_zone(r, plan["ela_m"])
                with trajdebug.branch(decision):
                    if zone == "ablation":
                        point = ice_melt(r)
                    else:
                        point = snow_balance(r, history, plan, densities)
                remember_stake(r["stake"], r, history, point)
            table = collect_table()
            hyps = hypsometry_fetch(site)
            bands = interpolate_balance(table, hyps)
            result = glacier_wide_balance(bands, plan["ela_m"])
            season_note([
                {"role": "system", "content": "You write the season note of a mass-balance programme."},
                {"role": "user", "content": json.dumps({"glacier": upload["glacier"], **result, "stakes": len(table),
                                                        "pits": len(densities)})},
            ])
            wgms_validate(site, result, table, readings)
    except Exception:  # noqa: BLE001 - the run records it; the generator checks the outcome
        pass
