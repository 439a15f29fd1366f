"""A glacier mass-balance survey reduction: from an end-of-season field book (stake readings, snow pits)
to point balances, band balances and the glacier-wide balance submitted to the monitoring database,
cross-checked against the automatic weather station's sonic ranger.

Route: trajdebug's own recorder, JSONL.
"""

from __future__ import annotations

import json
import re
from datetime import date, timedelta

import trajdebug

from .common import complete, json_block, last_user

NAME = "glacier-massbalance"
ROUTE = "sdk"
DOMAIN = "glacier mass-balance monitoring (glaciology field survey)"
SHAPE = (
    "input -> llm reduction plan -> parse -> paged logger tool -> hypsometry retrieval -> loop per stake/pit "
    "(parse line, zone router, density step wrapping a pit-database tool with fallback, balance, state write) "
    "-> logger agreement check -> band and glacier-wide balances -> llm summary -> submit tool -> final check"
)
SWITCH: str | None = None

ICE_DENSITY = 900.0
DEFAULT_SNOW_DENSITY = 350.0  # the winter-survey protocol's value for fresh snow
LOGGER_PAGE_DAYS = 120

FIELD_BOOKS = {
    "kalvbreen-2025": """Glacier: Kalvbreen East | Survey: 2025-09-24 | Previous survey: 2024-09-19 | Logger: AWS-KB1 at S3
S1 | 2480 m | ext_prev 3.10 m | ext_now 5.62 m | snow 0.00 m
S2 | 2560 m | ext_prev 2.80 m | ext_now 4.86 m | snow 0.00 m
S3 | 2640 m | ext_prev 2.35 m | ext_now 3.96 m | snow 0.12 m
S4 | 2730 m | ext_prev 1.90 m | ext_now 2.71 m | snow 0.30 m
S5 | 2815 m | ext_prev 1.20 m | ext_now 1.34 m | snow 0.85 m
P1 | 2905 m | pit | snow 1.62 m""",
    "orties-2025": """Glacier: Glacier des Orties | Survey: 2025-09-17 | Previous survey: 2024-09-12 | Logger: AWS-OR at S2
S1 | 2610 m | ext_prev 2.70 m | ext_now 4.95 m | snow 0.00 m
S2 | 2690 m | ext_prev 2.40 m | ext_now 4.21 m | snow 0.05 m
S3 | 2760 m | ext_prev 1.85 m | ext_now 271 cm | snow 0.00 m
S4 | 2840 m | ext_prev 1.50 m | ext_now 1.92 m | snow 0.40 m
S5 | 2935 m | ext_prev 2.10 m | ext_now 1.05 m | snow 1.05 m
P1 | 3010 m | pit | snow 1.80 m""",
    "lares-2025": """Glacier: Vedretta di Lares Nord | Survey: 2025-09-30 | Previous survey: 2024-10-02 | Logger: AWS-LN at S4
S1 | 2720 m | ext_prev 3.40 m | ext_now 5.30 m | snow 0.00 m
S2 | 2790 m | ext_prev 2.95 m | ext_now 4.61 m | snow 0.00 m
S3 | 2880 m | ext_prev 2.20 m | ext_now 3.49 m | snow 0.10 m
S4 | 2960 m | ext_prev 1.75 m | ext_now 2.66 m | snow 0.20 m
S5 | 3050 m | ext_prev 1.60 m | ext_now 1.71 m | snow 0.70 m
P1 | 3140 m | pit | snow 1.45 m""",
    "rognes-2025": """Glacier: Glacier des Rognes | Survey: 2025-09-22 | Previous survey: 2024-09-20 | Logger: AWS-RG at S1
S1 | 2540 m | ext_prev 2.90 m | ext_now 5.01 m | snow 0.00 m
S2 | 2625 m | ext_prev 2.60 m | ext_now 4.22 m | snow 0.00 m
S3 | 2710 m | ext_prev 2.05 m | ext_now 3.05 m | snow 0.25 m
S4 | 2795 m | ext_prev 1.60 m | ext_now 2.02 m | snow 0.55 m
S5 | 2870 m | ext_prev 2.30 m | ext_now 1.40 m | snow 0.90 m
P1 | 2960 m | pit | snow 1.30 m""",
    "grauferner-2025": """Glacier: Grauferner | Survey: 2025-09-26 | Previous survey: 2024-09-25 | Logger: AWS-GF at S2
S1 | 2650 m | ext_prev 3.05 m | ext_now 5.12 m | snow 0.00 m
S2 | 2710 m | ext_prev 2.50 m | ext_now 4.02 m | snow 0.05 m
S3 | 2790 m | ext_prev 2.10 m | ext_now 3.20 m | snow 0.10 m
S4 | 2850 m | ext_prev 1.90 m | ext_now 2.71 m | snow 0.30 m
S5 | 2930 m | ext_prev 1.40 m | ext_now 1.54 m | snow 0.20 m
P1 | 3020 m | pit | snow 1.25 m""",
}
INPUTS = {k: {"task": f"mass-balance field book {k}: reduce and submit", "field_book": v}
          for k, v in FIELD_BOOKS.items()}

# glacier -> outlines (area per 100 m band, km2), oldest first
OUTLINES = {
    "Kalvbreen East": [
        {"year": 2016, "bands": {"2300-2400": 0.18, "2400-2500": 0.34, "2500-2600": 0.55, "2600-2700": 0.64,
                                 "2700-2800": 0.57, "2800-2900": 0.44, "2900-3000": 0.27}},
        {"year": 2023, "bands": {"2400-2500": 0.22, "2500-2600": 0.48, "2600-2700": 0.61, "2700-2800": 0.55,
                                 "2800-2900": 0.43, "2900-3000": 0.27}},
    ],
    "Glacier des Orties": [
        {"year": 2019, "bands": {"2500-2600": 0.12, "2600-2700": 0.41, "2700-2800": 0.52, "2800-2900": 0.47,
                                 "2900-3000": 0.33, "3000-3100": 0.15}},
        {"year": 2024, "bands": {"2600-2700": 0.36, "2700-2800": 0.50, "2800-2900": 0.46, "2900-3000": 0.33,
                                 "3000-3100": 0.15}},
    ],
    "Vedretta di Lares Nord": [
        {"year": 2015, "bands": {"2600-2700": 0.26, "2700-2800": 0.58, "2800-2900": 0.71, "2900-3000": 0.66,
                                 "3000-3100": 0.49, "3100-3200": 0.21}},
        {"year": 2023, "bands": {"2700-2800": 0.44, "2800-2900": 0.65, "2900-3000": 0.63, "3000-3100": 0.48,
                                 "3100-3200": 0.21}},
    ],
    "Glacier des Rognes": [
        {"year": 2018, "bands": {"2400-2500": 0.10, "2500-2600": 0.38, "2600-2700": 0.52, "2700-2800": 0.49,
                                 "2800-2900": 0.35, "2900-3000": 0.18}},
        {"year": 2024, "bands": {"2500-2600": 0.31, "2600-2700": 0.50, "2700-2800": 0.48, "2800-2900": 0.35,
                                 "2900-3000": 0.18}},
    ],
    "Grauferner": [
        {"year": 2017, "bands": {"2500-2600": 0.14, "2600-2700": 0.40, "2700-2800": 0.51, "2800-2900": 0.45,
                                 "2900-3000": 0.30, "3000-3100": 0.12}},
        {"year": 2023, "bands": {"2600-2700": 0.33, "2700-2800": 0.49, "2800-2900": 0.44, "2900-3000": 0.30,
                                 "3000-3100": 0.12}},
    ],
}
_HYPSO_CACHE = {glacier: outlines[0] for glacier, outlines in OUTLINES.items()}  # loaded with the first survey

# glacier -> band -> (pit, density kg/m3) measured this season
PITS = {
    "Kalvbreen East": {"2600-2700": ("P0", 500), "2700-2800": ("P2", 520), "2800-2900": ("P3", 540),
                       "2900-3000": ("P1", 560)},
    "Glacier des Orties": {"2600-2700": ("P4", 500), "2800-2900": ("P2", 530), "2900-3000": ("P3", 550),
                           "3000-3100": ("P1", 570)},
    "Vedretta di Lares Nord": {"2800-2900": ("P2", 510), "2900-3000": ("P3", 530), "3000-3100": ("P4", 545),
                               "3100-3200": ("P1", 565)},
    "Glacier des Rognes": {"2600-2700": ("P3", 505), "2700-2800": ("P2", 525), "2800-2900": ("P4", 540),
                           "2900-3000": ("P1", 555)},
    "Grauferner": {"2700-2800": ("P2", 515), "2800-2900": ("P3", 540), "2900-3000": ("P4", 550),
                   "3000-3100": ("P1", 560)},
}
# the glacier under the Rognes field book lost its 2700-2800 m pit to a crevasse this year
PITS["Glacier des Rognes"].pop("2700-2800")

CASES = [
    {"n": 1, "input": "kalvbreen-2025", "kind": "truncated_result", "root": ("download_logger", 1),
     "failure": ("check_logger_agreement", 1),
     "description": "The logger download returns only the first 120-day page of AWS-KB1's series, which ends in "
                    "January, so the sonic ranger seems to show a winter rise instead of the season's lowering.",
     "what": "logger series cut to its first page"},
    {"n": 2, "input": "orties-2025", "kind": "unit_error", "root": ("read_stake_line", 3),
     "failure": ("submit_to_database", 1),
     "description": "Stake S3's exposure was booked as 271 cm and the line reader takes the number as metres, "
                    "so S3 seems to have lost 269 m of ice.",
     "what": "271 cm read as 271 m"},
    {"n": 3, "input": "lares-2025", "kind": "stale_data", "root": ("fetch_hypsometry", 1),
     "failure": ("submit_to_database", 1),
     "description": "The hypsometry comes from the cached 2015 outline of Vedretta di Lares Nord instead of the "
                    "2023 one, so the balance is weighted over 2.91 km2 of a glacier now 2.41 km2.",
     "what": "2015 outline used in 2025"},
    {"n": 4, "input": "rognes-2025", "kind": "swallowed_error", "root": ("snow_density_for_stake", 1),
     "failure": ("submit_to_database", 1),
     "description": "When the pit database has no pit in S3's band, the density step gives up on the lookup and "
                    "returns the fresh-snow default of 350 kg/m3 instead of the pit of the next band.",
     "what": "missing pit answered with the 350 kg/m3 default"},
    {"n": 5, "input": "grauferner-2025", "kind": "wrong_routing", "root": ("classify_stake_zone", 4),
     "failure": ("submit_to_database", 1),
     "description": "The zone router sends stake S4 (30 cm of snow over ice whose exposure grew by 0.81 m) to "
                    "the accumulation formula because of its snow depth, dropping its ice melt.",
     "what": "ablation stake routed to the accumulation formula"},
]


# ---------------------------------------------------------------- the model


def brain(request):
    prompt = last_user(request)
    if prompt.startswith("Plan the reduction"):
        head = json_block(prompt)
        return json.dumps({
            "logger": {"station": head["logger"], "from": head["previous_survey"], "to": head["survey"]},
            "outline_year": int(head["survey"][:4]),
            "band_width_m": 100,
            "steps": ["download logger", "hypsometry", "point balances", "logger check", "band balances",
                      "glacier-wide balance", "submit"],
        })
    if prompt.startswith("Summarise the balance"):
        res = json_block(prompt)
        return (f"{res['glacier']}: glacier-wide balance {res['balance_mwe']:+.2f} m w.e. over "
                f"{res['area_km2']:.2f} km2; point balances from {res['min']:+.2f} to {res['max']:+.2f} m w.e.")
    return "Please send the field book."


# ---------------------------------------------------------------- steps


def band_of(elev: float) -> str:
    lo = int(elev // 100 * 100)
    return f"{lo}-{lo + 100}"


@trajdebug.step(kind="input")
def receive_field_book(text: str) -> str:
    return text


@trajdebug.step(kind="llm")
def plan_reduction(messages: list[dict]) -> dict:
    return complete(messages)


@trajdebug.step(kind="parse")
def read_plan(answer: dict) -> dict:
    return json_block(answer["content"])


def _logger_series(station: str, start: str, end: str, stake_change: float) -> list[dict]:
    d0, d1 = date.fromisoformat(start), date.fromisoformat(end)
    days = (d1 - d0).days
    peak_day = (date(d1.year, 5, 10) - d0).days
    peak = 2.1 if stake_change < -1.0 else 2.6
    final = stake_change + 0.03
    out = []
    for i in range(days + 1):
        if i <= peak_day:
            h = peak * (i / peak_day) ** 1.2
        else:
            h = peak + (final - peak) * ((i - peak_day) / (days - peak_day))
        out.append({"date": (d0 + timedelta(days=i)).isoformat(), "surface_m": round(h, 3)})
    return out


LOGGER_TRUTH: dict[str, float] = {}  # station -> season surface change at its stake (the ranger's view)


@trajdebug.step(kind="tool")
def download_logger(station: str, start: str, end: str) -> dict:
    series = _logger_series(station, start, end, LOGGER_TRUTH[station])
    pages = [series[i:i + LOGGER_PAGE_DAYS] for i in range(0, len(series), LOGGER_PAGE_DAYS)]
    readings = list(pages[0])
    cursor = 1
    while cursor < len(pages) and SWITCH != "zze_glacier_1":
        readings.extend(pages[cursor])
        cursor += 1
    return {"station": station, "from": readings[0]["date"], "to": readings[-1]["date"],
            "n": len(readings), "readings": readings}


@trajdebug.step(kind="retrieval")
def fetch_hypsometry(glacier: str, year: int) -> dict:
    if SWITCH == "zze_glacier_3":
        outline = _HYPSO_CACHE[glacier]
    else:
        outline = [o for o in OUTLINES[glacier] if o["year"] <= year][-1]
    return {"glacier": glacier, "outline_year": outline["year"], "bands": dict(outline["bands"])}


@trajdebug.step(kind="parse")
def read_stake_line(line: str) -> dict:
    parts = [p.strip() for p in line.split("|")]
    site, elev = parts[0], float(parts[1].split()[0])

    def metres(field: str) -> float:
        value, unit = re.search(r"([\d.]+)\s*(cm|m)\b", field).groups()
        if unit == "cm" and SWITCH != "zze_glacier_2":
            return round(float(value) / 100.0, 3)
        return float(value)

    if parts[2] == "pit":
        return {"site": site, "elev_m": elev, "pit": True, "snow_m": metres(parts[3])}
    return {"site": site, "elev_m": elev, "pit": False, "ext_prev_m": metres(parts[2]),
            "ext_now_m": metres(parts[3]), "snow_m": metres(parts[4])}


@trajdebug.step(kind="condition")
def classify_stake_zone(site: dict) -> str:
    if site["pit"]:
        return "accumulation"
    if SWITCH == "zze_glacier_5":
        return "accumulation" if site["snow_m"] >= 0.25 else "ablation"
    return "accumulation" if site["ext_now_m"] < site["ext_prev_m"] else "ablation"


@trajdebug.step(kind="tool")
def query_pit_database(glacier: str, band: str, year: int) -> dict:
    pit = PITS[glacier].get(band)
    if pit is None:
        raise LookupError(f"no snow pit in band {band} m on {glacier} for {year}")
    return {"pit": pit[0], "band": band, "density_kg_m3": float(pit[1])}


@trajdebug.step(kind="other")
def snow_density_for_stake(glacier: str, site: str, band: str, year: int) -> dict:
    try:
        pit = query_pit_database(glacier, band, year)
    except LookupError:
        if SWITCH == "zze_glacier_4":
            return {"site": site, "band": band, "density_kg_m3": DEFAULT_SNOW_DENSITY}
        lo = int(band.split("-")[0])
        pit = query_pit_database(glacier, f"{lo + 100}-{lo + 200}", year)
    return {"site": site, "band": band, "density_kg_m3": pit["density_kg_m3"], "pit": pit["pit"]}


@trajdebug.step(kind="other")
def point_balance(site: dict, zone: str, density: dict | None) -> dict:
    rho = density["density_kg_m3"] if density else 0.0
    snow_we = site["snow_m"] * rho / 1000.0
    if zone == "accumulation":
        b, surface = snow_we, site["snow_m"]
    else:
        melt = site["ext_now_m"] - site["ext_prev_m"]
        b, surface = -melt * ICE_DENSITY / 1000.0 + snow_we, -melt + site["snow_m"]
    return {"site": site["site"], "elev_m": site["elev_m"], "band": band_of(site["elev_m"]), "zone": zone,
            "b_mwe": round(b, 3), "surface_change_m": round(surface, 3), "snow_m": site["snow_m"],
            "density_kg_m3": rho}


@trajdebug.step(kind="state")
def record_point(point: dict) -> None:
    state = trajdebug.current_run().state
    state[f"point:{point['site']}"] = point
    state["sites"] = [*state.get("sites", []), point["site"]]


@trajdebug.step(kind="condition")
def check_logger_agreement(logger: dict, stake: str) -> str:
    point = trajdebug.current_run().state[f"point:{stake}"]
    change = logger["readings"][-1]["surface_m"] - logger["readings"][0]["surface_m"]
    if abs(change - point["surface_change_m"]) > 0.25:
        raise ValueError(f"logger {logger['station']} shows a surface change of {change:+.2f} m "
                         f"({logger['from']} to {logger['to']}), stake {stake} {point['surface_change_m']:+.2f} m")
    return f"logger and stake {stake} agree within {abs(change - point['surface_change_m']):.2f} m"


@trajdebug.step(kind="other")
def band_balances(hypsometry: dict) -> dict:
    state = trajdebug.current_run().state
    points = [state[f"point:{s}"] for s in state["sites"]]
    measured: dict[str, list[float]] = {}
    for p in points:
        measured.setdefault(p["band"], []).append(p["b_mwe"])
    mids = {b: int(b.split("-")[0]) + 50 for b in hypsometry["bands"]}
    known = sorted((int(b.split("-")[0]) + 50, sum(v) / len(v)) for b, v in measured.items())
    out = {}
    for band, mid in mids.items():
        if band in measured:
            out[band] = round(sum(measured[band]) / len(measured[band]), 3)
            continue
        below = [k for k in known if k[0] < mid]
        above = [k for k in known if k[0] > mid]
        if below and above:
            (x0, y0), (x1, y1) = below[-1], above[0]
            out[band] = round(y0 + (y1 - y0) * (mid - x0) / (x1 - x0), 3)
        else:
            out[band] = round((below[-1] if below else above[0])[1], 3)
    return {"bands": out, "measured": sorted(measured)}


@trajdebug.step(kind="other")
def glacier_wide_balance(bands: dict, hypsometry: dict) -> dict:
    area = sum(hypsometry["bands"].values())
    b = sum(bands["bands"][k] * a for k, a in hypsometry["bands"].items()) / area
    return {"balance_mwe": round(b, 3), "area_km2": round(area, 3), "outline_year": hypsometry["outline_year"]}


@trajdebug.step(kind="llm")
def draft_summary(messages: list[dict]) -> dict:
    return complete(messages)


@trajdebug.step(kind="tool")
def submit_to_database(glacier: str, year: int, result: dict, bands: dict, points: list[dict]) -> dict:
    registered = OUTLINES[glacier][-1]
    reg_area = sum(registered["bands"].values())
    if abs(result["area_km2"] - reg_area) > 0.01 * reg_area:
        raise ValueError(f"{glacier} {year}: area {result['area_km2']:.2f} km2 does not match the registered "
                         f"{registered['year']} outline ({reg_area:.2f} km2)")
    for p in points:
        if not -8.0 <= p["b_mwe"] <= 4.0:
            raise ValueError(f"{glacier} {year}: point balance at {p['site']} ({p['b_mwe']:+.2f} m w.e.) outside "
                             f"the plausible range -8 to +4 m w.e.")
    for p in points:
        if p["snow_m"] > 0 and p["density_kg_m3"] < 450:
            raise ValueError(f"{glacier} {year}: snow density {p['density_kg_m3']:.0f} kg/m3 at {p['site']} is "
                             f"below 450 kg/m3, the minimum accepted for end-of-season snow")
    measured = [(b, bands["bands"][b]) for b in sorted(bands["measured"])]
    for (b0, v0), (b1, v1) in zip(measured, measured[1:]):
        if v1 < v0 - 0.05:
            raise ValueError(f"{glacier} {year}: balance decreases with elevation between band {b0} m "
                             f"({v0:+.2f} m w.e.) and band {b1} m ({v1:+.2f} m w.e.)")
    return {"accepted": True, "record": f"MB-{glacier[:4].upper()}-{year}", "balance_mwe": result["balance_mwe"]}


@trajdebug.step(kind="condition")
def confirm_submission(receipt: dict, result: dict) -> str:
    if receipt["balance_mwe"] != result["balance_mwe"]:
        raise ValueError("the database holds another balance than the one computed")
    return f"{receipt['record']} stored"


# ---------------------------------------------------------------- the agent


def reduce_survey(book: str) -> dict:
    text = receive_field_book(book)
    lines = text.strip().splitlines()
    head = dict(part.split(": ", 1) for part in lines[0].split(" | "))
    station, logger_stake = head["Logger"].split(" at ")
    glacier, year = head["Glacier"], int(head["Survey"][:4])
    answer = plan_reduction([
        {"role": "system", "content": "You plan glacier mass-balance reductions. Answer with JSON only."},
        {"role": "user", "content": "Plan the reduction of this survey: " + json.dumps(
            {"glacier": glacier, "survey": head["Survey"], "previous_survey": head["Previous survey"],
             "logger": station, "logger_stake": logger_stake, "sites": len(lines) - 1})},
    ])
    plan = read_plan(answer)
    logger = download_logger(plan["logger"]["station"], plan["logger"]["from"], plan["logger"]["to"])
    hypso = fetch_hypsometry(glacier, plan["outline_year"])
    points = []
    for line in lines[1:]:
        site = read_stake_line(line)
        zone = classify_stake_zone(site)
        density = None
        if site["snow_m"] > 0:
            density = snow_density_for_stake(glacier, site["site"], band_of(site["elev_m"]), year)
        point = point_balance(site, zone, density)
        record_point(point)
        points.append(point)
    check_logger_agreement(logger, logger_stake)
    bands = band_balances(hypso)
    result = glacier_wide_balance(bands, hypso)
    draft_summary([
        {"role": "system", "content": "You write the one-line summary of a mass-balance result."},
        {"role": "user", "content": "Summarise the balance: " + json.dumps(
            {"glacier": glacier, **result, "min": min(p["b_mwe"] for p in points),
             "max": max(p["b_mwe"] for p in points)})},
    ])
    receipt = submit_to_database(glacier, year, result, bands, points)
    return {"receipt": receipt, "status": confirm_submission(receipt, result)}


def _true_logger_changes() -> None:
    """What each station's sonic ranger really saw over the season: its stake's surface change."""
    for book in FIELD_BOOKS.values():
        lines = book.strip().splitlines()
        head = dict(part.split(": ", 1) for part in lines[0].split(" | "))
        station, stake = head["Logger"].split(" at ")
        for line in lines[1:]:
            parts = [p.strip() for p in line.split("|")]
            if parts[0] == stake:
                prev, now, snow = (float(re.search(r"[\d.]+", parts[i]).group(0)) for i in (2, 3, 4))
                LOGGER_TRUTH[station] = -(now - prev) + snow


_true_logger_changes()


def execute(key: str, path: str) -> None:
    try:
        with trajdebug.run(NAME, path=path, task=INPUTS[key]["task"]):
            reduce_survey(INPUTS[key]["field_book"])
    except ValueError:
        pass
