"""Seaweed harvesting: a licensed wild-harvest co-operative's weekly planning agent (OTLP route: the
OpenTelemetry SDK with OpenInference attributes, the `openai` client instrumented by OpenInference,
exported as OTLP/JSON).

For a buyer's order the agent reads the harvest licence, the quota ledger and the tide table,
surveys each licensed zone in a sub-agent (fallow register, biomass survey, the model's
assessment, parse), has the model plan the trips, parses the plan, has the model brief the crew,
writes the harvest log, compiles the landing declaration, has the model write the notice to the
regulator and checks the plan against the licence before it is filed.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import kit
from _shared import Case, OtlpTracing, chat_text, first_json, messages, system_text, user_text
from openai import OpenAI


AGENT = "kelp-harvest"
ROUTE = "otlp"
DOMAIN = "seaweed harvesting"
EXT = "json"
SHAPE = (
    "licence -> quota ledger -> tide table (retried) -> per zone sub-agent (fallow register, biomass survey, model "
    "assessment, parse) -> model trip plan -> parse -> model crew briefing -> harvest log -> declaration -> "
    "model notice -> validator span"
)

LICENCES = {
    "CEL-118": {
        "holder": "Uist Seaweed Co-operative",
        "port": "Lochmaddy",
        "vessel": "MV Sgarbh",
        "capacity_t": 5.0,
        "cut_height_cm": 20,
        "zones": [
            ("NU-1", "Loch Maddy East Skerries", "Ascophyllum nodosum", 48.0),
            ("NU-2", "Loch Maddy East", "Ascophyllum nodosum", 36.0),
            ("NU-3", "Sound of Harris South", "Ascophyllum nodosum", 40.0),
            ("NU-4", "Loch Eport", "Fucus serratus", 18.0),
        ],
    },
    "CEL-204": {
        "holder": "Mull Wild Harvest Ltd",
        "port": "Tobermory",
        "vessel": "Cuan Glas",
        "capacity_t": 3.5,
        "cut_height_cm": 25,
        "zones": [
            ("ML-1", "Loch Na Keal North", "Ascophyllum nodosum", 30.0),
            ("ML-2", "Calgary Bay Reef", "Laminaria hyperborea", 22.0),
            ("ML-3", "Loch Tuath", "Ascophyllum nodosum", 34.0),
        ],
    },
    "CEL-311": {
        "holder": "Orkney Tangle Collective",
        "port": "Stromness",
        "vessel": "Brinna",
        "capacity_t": 5.0,
        "cut_height_cm": 20,
        "zones": [
            ("OR-1", "Hoy Sound Inner", "Ascophyllum nodosum", 55.0),
            ("OR-2", "Bay of Ireland", "Fucus vesiculosus", 25.0),
            ("OR-3", "Scapa Flow West", "Ascophyllum nodosum", 45.0),
        ],
    },
}
FALLOW = {  # zone name -> (last cut, fallow until)
    "Loch Maddy East Skerries": ("2021-05-14", "2024-05-14"),
    "Loch Maddy East": ("2023-06-02", "2026-06-02"),
    "Sound of Harris South": ("2020-08-20", "2023-08-20"),
    "Loch Eport": ("2022-04-11", "2024-04-11"),
    "Loch Na Keal North": ("2021-07-01", "2024-07-01"),
    "Calgary Bay Reef": ("2020-09-15", "2024-09-15"),
    "Loch Tuath": ("2024-05-20", "2027-05-20"),
    "Hoy Sound Inner": ("2021-06-30", "2024-06-30"),
    "Bay of Ireland": ("2022-03-09", "2024-03-09"),
    "Scapa Flow West": ("2020-05-05", "2023-05-05"),
}
BIOMASS = {  # zone -> (kg/m2, bed area ha)
    "NU-1": (14.0, 2.6),
    "NU-2": (16.5, 1.8),
    "NU-3": (12.0, 3.1),
    "NU-4": (6.5, 1.2),
    "ML-1": (11.0, 2.2),
    "ML-2": (9.0, 1.5),
    "ML-3": (13.5, 2.0),
    "OR-1": (15.5, 3.4),
    "OR-2": (7.0, 1.6),
    "OR-3": (12.5, 2.9),
}
LANDED_LIVE = {
    "NU-1": 31.5,
    "NU-2": 0.0,
    "NU-3": 12.0,
    "NU-4": 3.0,
    "ML-1": 8.0,
    "ML-2": 4.5,
    "ML-3": 0.0,
    "OR-1": 22.0,
    "OR-2": 9.5,
    "OR-3": 16.0,
}
LANDED_LAST_WEEK = {**LANDED_LIVE, "NU-1": 19.5, "NU-3": 6.0}

ORDERS: dict[str, dict[str, Any]] = {
    "KH-301": {
        "licence": "CEL-118",
        "buyer": "Hebridean Alginates",
        "week": "2025-03-10",
        "days": 5,
        "order_t": 20.0,
    },
    "KH-302": {
        "licence": "CEL-118",
        "buyer": "Atlantic Kelp Meal",
        "week": "2025-03-17",
        "days": 5,
        "order_t": 18.0,
    },
    "KH-303": {
        "licence": "CEL-311",
        "buyer": "Orkney Organic Feeds",
        "week": "2025-03-10",
        "days": 5,
        "order_t": 21.0,
    },
    "KH-304": {
        "licence": "CEL-204",
        "buyer": "Mull Seaweed Baths",
        "week": "2025-03-17",
        "days": 4,
        "order_t": 9.0,
    },
    "KH-305": {
        "licence": "CEL-311",
        "buyer": "Viking Biostimulants",
        "week": "2025-03-24",
        "days": 5,
        "order_t": 16.0,
    },
    "KH-306": {
        "licence": "CEL-204",
        "buyer": "Isle of Mull Cheese",
        "week": "2025-03-10",
        "days": 4,
        "order_t": 6.0,
    },
    "KH-307": {
        "licence": "CEL-118",
        "buyer": "Uist Distillers (botanicals)",
        "week": "2025-03-24",
        "days": 5,
        "order_t": 8.0,
    },
    "KH-308": {
        "licence": "CEL-311",
        "buyer": "Stromness Garden Supplies",
        "week": "2025-03-17",
        "days": 4,
        "order_t": 12.0,
    },
    "KH-309": {
        "licence": "CEL-204",
        "buyer": "Hebridean Alginates",
        "week": "2025-03-24",
        "days": 4,
        "order_t": 11.0,
    },
}

CASES = [
    Case(
        "zzi-kelp-1",
        "kelp.register_match",
        "KH-302",
        "wrong_retrieval",
        ("fallow_register", 2, "tool"),
        ("validate_plan", 1),
        "The fallow register search returns the first zone whose name contains 'Loch Maddy East', the "
        "Skerries record, so the fallow Loch Maddy East bed (cut 2023) is planned for harvest.",
    ),
    Case(
        "zzi-kelp-2",
        "kelp.ledger_cache",
        "KH-301",
        "stale_data",
        ("quota_ledger", 1, "tool"),
        ("validate_plan", 1),
        "The quota ledger answers from last week's copy, before 12 t were landed from NU-1 and 6 t from NU-3, "
        "so NU-1 is planned past its 48 t annual quota.",
    ),
    Case(
        "zzi-kelp-3",
        "kelp.plan_rows",
        "KH-303",
        "lossy_parsing",
        ("parse_plan", 1, "other"),
        ("validate_plan", 1),
        "The plan parser drops the last table row as if it were a totals line, so the plan lands one trip "
        "short of the buyer's 21 t order.",
    ),
    Case(
        "zzi-kelp-4",
        "kelp.briefing_height",
        "KH-304",
        "hallucinated_value",
        ("ChatCompletion", 5, "llm"),
        ("validate_plan", 1),
        "The model's crew briefing tells the crew to cut at 15 cm above the holdfast, a figure found nowhere "
        "in its input (the licence says 25 cm).",
    ),
    Case(
        "zzi-kelp-5",
        "kelp.log_overwrite",
        "KH-305",
        "bad_memory_write",
        ("update_harvest_log", 1, "other"),
        ("validate_plan", 1),
        "The harvest log writer assigns each trip's tonnes to its zone instead of adding them, so a zone with "
        "several trips is logged with its last trip only.",
    ),
]
REFERENCE_INPUTS = ["KH-306", "KH-307", "KH-308", "KH-309"]


class LicenceBreach(ValueError):
    """The plan breaks the harvest licence."""


def _days(order: dict) -> list[str]:
    start = dt.date.fromisoformat(order["week"])
    return [(start + dt.timedelta(days=i)).isoformat() for i in range(order["days"])]


def _low_waters(date: str, port: str) -> list[str]:
    """The day's daylight low waters (a synthetic tide: 12 h 25 min apart, 50 minutes later each day)."""
    base = {"Lochmaddy": 5 * 60 + 10, "Tobermory": 6 * 60 + 35, "Stromness": 4 * 60 + 50}[port]
    n = (dt.date.fromisoformat(date) - dt.date(2025, 3, 1)).days
    first = (base + 50 * n) % 745
    if first < 6 * 60:
        first += 745
    times = [first] + ([first + 745] if first + 745 < 23 * 60 else [])
    return [f"{m // 60:02d}:{m % 60:02d}" for m in times]


_tide_calls = {"n": 0, "flaky": False}


# -- the agent's tools and steps (each a span) -------------------------------------------------------------------


class Harvest:
    def __init__(self, tracing: OtlpTracing, client: Any, key: str) -> None:
        self.t, self.client, self.key = tracing, client, key
        self.order = ORDERS[key]
        self.log: dict[str, dict] = {}

    def tool(self, name: str, args: dict, fn) -> Any:
        with self.t.span(name, "TOOL", input=args) as s:
            s.output = fn(**args)
        return s.output

    def llm(self, system: str, user: str) -> str:
        return chat_text(self.client, system, user)

    # tools
    @staticmethod
    def get_licence(licence: str) -> dict:
        lic = LICENCES[licence]
        return {
            "licence": licence,
            "holder": lic["holder"],
            "port": lic["port"],
            "vessel": lic["vessel"],
            "capacity_t": lic["capacity_t"],
            "cut_height_cm": lic["cut_height_cm"],
            "zones": [
                {"zone": z, "name": n, "species": sp, "annual_quota_t": q} for z, n, sp, q in lic["zones"]
            ],
        }

    @staticmethod
    def quota_ledger(licence: str) -> dict:
        zones = [z for z, *_ in LICENCES[licence]["zones"]]
        if kit.on("kelp.ledger_cache"):
            return {
                "licence": licence,
                "as_of": "2025-03-03",
                "landed_t": {z: LANDED_LAST_WEEK[z] for z in zones},
            }
        return {"licence": licence, "as_of": "2025-03-09", "landed_t": {z: LANDED_LIVE[z] for z in zones}}

    @staticmethod
    def tide_table(port: str, dates: list) -> dict:
        calls = _tide_calls
        calls["n"] += 1
        if calls["flaky"] and calls["n"] == 1:
            raise TimeoutError("UKHO Admiralty tides API: no answer in 10 s")
        return {
            "port": port,
            "low_waters": [{"date": d, "time": t} for d in dates for t in _low_waters(d, port)],
        }

    @staticmethod
    def fallow_register(zone_name: str) -> dict:
        if kit.on("kelp.register_match"):
            name = next(n for n in FALLOW if zone_name.lower() in n.lower())
        else:
            name = zone_name
        last, until = FALLOW[name]
        return {"zone_name": name, "last_cut": last, "fallow_until": until}

    @staticmethod
    def biomass_survey(zone: str) -> dict:
        density, area = BIOMASS[zone]
        return {"zone": zone, "density_kg_m2": density, "bed_area_ha": area, "method": "quadrat, 2024 autumn"}


SYS_ASSESS = (
    "You assess one seaweed bed for this week's harvest. From the fallow register and the biomass survey decide "
    'whether it may be cut and the sustainable cut (25% of standing biomass). Answer JSON: {"zone", "available", '
    '"sustainable_t", "reason"}.'
)
SYS_PLAN = (
    "Plan this week's harvest trips to meet the order from the available zones, within each zone's sustainable "
    "cut and remaining quota, one trip per low water, each trip within the vessel's capacity. Answer a table with "
    "the header 'zone | date | low water | species | tonnes', one row per trip."
)
SYS_BRIEF = (
    "Write the crew briefing for this week's trips: zones, dates, low water times and the cutting rule from the "
    "licence (minimum cut height above the holdfast)."
)
SYS_NOTICE = "Write the weekly harvest notice to Marine Scotland for the declaration below, stating the total wet tonnes."


def survey_zone(h: Harvest, zone: dict, first_day: str) -> dict:
    with h.t.span("survey_zone", "AGENT", input={"zone": zone["zone"], "name": zone["name"]}) as s:
        register = h.tool("fallow_register", {"zone_name": zone["name"]}, Harvest.fallow_register)
        survey = h.tool("biomass_survey", {"zone": zone["zone"]}, Harvest.biomass_survey)
        raw = h.llm(
            SYS_ASSESS,
            json.dumps(
                {"zone": zone["zone"], "harvest_from": first_day, "register": register, "survey": survey}
            ),
        )
        with h.t.span("parse_assessment", "CHAIN", input=raw) as p:
            data = first_json(raw)
            p.output = {
                "zone": zone["zone"],
                "available": bool(data["available"]),
                "sustainable_t": float(data["sustainable_t"]),
                "reason": data.get("reason", ""),
            }
        s.output = p.output
    return p.output


def parse_plan(h: Harvest, raw: str) -> list[dict]:
    with h.t.span("parse_plan", "CHAIN", input=raw) as s:
        lines = [ln for ln in raw.strip().split("\n") if ln.strip()]
        rows = lines[1:-1] if kit.on("kelp.plan_rows") else lines[1:]
        trips = []
        for ln in rows:
            zone, date, low, species, tonnes = [c.strip() for c in ln.split("|")]
            trips.append(
                {"zone": zone, "date": date, "low_water": low, "species": species, "tonnes": float(tonnes)}
            )
        s.output = trips
    return trips


def update_harvest_log(h: Harvest, trips: list[dict]) -> dict:
    with h.t.span("update_harvest_log", "CHAIN", input=trips) as s:
        for trip in trips:
            entry = h.log.setdefault(trip["zone"], {"species": trip["species"], "tonnes": 0.0, "trips": 0})
            if kit.on("kelp.log_overwrite"):
                entry["tonnes"] = trip["tonnes"]
            else:
                entry["tonnes"] = round(entry["tonnes"] + trip["tonnes"], 2)
            entry["trips"] += 1
        s.output = h.log
    return h.log


def compile_declaration(h: Harvest, licence: dict, log: dict) -> dict:
    with h.t.span("compile_declaration", "CHAIN", input={"licence": licence["licence"], "log": log}) as s:
        zones = [{"zone": z, **v} for z, v in sorted(log.items())]
        s.output = {
            "licence": licence["licence"],
            "holder": licence["holder"],
            "week": h.order["week"],
            "vessel": licence["vessel"],
            "zones": zones,
            "total_t": round(sum(z["tonnes"] for z in zones), 2),
        }
    return s.output


def validate_plan(
    h: Harvest, licence: dict, tides: dict, trips: list[dict], briefing: str, declaration: dict, notice: str
) -> None:
    with h.t.span("validate_plan", "CHAIN", input={"licence": licence["licence"], "trips": len(trips)}) as s:
        lic = LICENCES[licence["licence"]]
        names = {z: n for z, n, _sp, _q in lic["zones"]}
        quota = {z: q for z, _n, _sp, q in lic["zones"]}
        first = h.order["week"]
        for trip in trips:
            until = FALLOW[names[trip["zone"]]][1]
            if until > first:
                raise LicenceBreach(
                    f"{trip['zone']} ({names[trip['zone']]}) is fallow until {until}; trip planned "
                    f"{trip['date']}"
                )
        for z in quota:
            planned = round(sum(t["tonnes"] for t in trips if t["zone"] == z), 2)
            if planned and planned + LANDED_LIVE[z] > quota[z]:
                raise LicenceBreach(
                    f"{z}: {planned} t planned + {LANDED_LIVE[z]} t landed exceeds the {quota[z]} t "
                    f"annual quota"
                )
        total = round(sum(t["tonnes"] for t in trips), 2)
        if total < h.order["order_t"]:
            raise LicenceBreach(f"plan lands {total} t; {h.order['buyer']} ordered {h.order['order_t']} t")
        low = {(w["date"], w["time"]) for w in tides["low_waters"]}
        for trip in trips:
            if (trip["date"], trip["low_water"]) not in low:
                raise LicenceBreach(
                    f"trip {trip['zone']} {trip['date']} at {trip['low_water']} is not at a low water"
                )
            if trip["tonnes"] > lic["capacity_t"]:
                raise LicenceBreach(
                    f"trip {trip['zone']} {trip['date']} {trip['tonnes']} t over the vessel's "
                    f"{lic['capacity_t']} t"
                )
        if f"{lic['cut_height_cm']} cm" not in briefing:
            raise LicenceBreach(
                f"crew briefing does not give the licence's {lic['cut_height_cm']} cm minimum cut height"
            )
        for z in declaration["zones"]:
            planned = round(sum(t["tonnes"] for t in trips if t["zone"] == z["zone"]), 2)
            if abs(z["tonnes"] - planned) > 0.01:
                raise LicenceBreach(
                    f"declaration lists {z['tonnes']} t for {z['zone']}; the trips plan {planned} t"
                )
        if f"{declaration['total_t']} t" not in notice:
            raise LicenceBreach(f"notice does not state the declared total {declaration['total_t']} t")
        s.output = {"ok": True, "total_t": total}


# -- the fake model -------------------------------------------------------------------------------------------------


def brain(key: str):
    def policy(request):
        msgs = messages(request)
        system, user = system_text(msgs), user_text(msgs)
        if system == SYS_ASSESS:
            d = first_json(user)
            reg, sv = d["register"], d["survey"]
            if reg["fallow_until"] > d["harvest_from"]:
                return json.dumps(
                    {
                        "zone": d["zone"],
                        "available": False,
                        "sustainable_t": 0,
                        "reason": f"fallow until {reg['fallow_until']}",
                    }
                )
            standing = sv["density_kg_m2"] * sv["bed_area_ha"] * 10
            return json.dumps(
                {
                    "zone": d["zone"],
                    "available": True,
                    "sustainable_t": round(standing * 0.25, 1),
                    "reason": f"standing crop about {standing:.0f} t",
                }
            )
        if system == SYS_PLAN:
            d = first_json(user)
            left, cap = d["order_t"], d["capacity_t"]
            slots = list(d["low_waters"])
            rows = []
            for z in d["zones"]:
                if not z["available"] or left <= 0:
                    continue
                take = round(min(z["sustainable_t"], z["remaining_t"], left), 1)
                left = round(left - take, 1)
                while take > 0 and slots:
                    t = round(min(cap, take), 1)
                    lw = slots.pop(0)
                    rows.append(f"{z['zone']} | {lw['date']} | {lw['time']} | {z['species']} | {t}")
                    take = round(take - t, 1)
            return "zone | date | low water | species | tonnes\n" + "\n".join(rows)
        if system == SYS_BRIEF:
            d = first_json(user)
            height = d["cut_height_cm"]
            if kit.on("kelp.briefing_height"):
                height = 15
            lines = [
                f"- {t['date']}: {t['zone']}, low water {t['low_water']}, {t['tonnes']} t" for t in d["trips"]
            ]
            return (
                "Crew briefing, week of "
                + d["week"]
                + ":\n"
                + "\n".join(lines)
                + f"\nCut by hand with sickles, leaving at least {height} cm above the holdfast. "
                "Bag nets tagged by zone; no cutting in the last hour before high water."
            )
        if system == SYS_NOTICE:
            d = first_json(user)
            return (
                f"Weekly harvest notice, licence {d['licence']} ({d['holder']}), week of {d['week']}: "
                f"{len(d['zones'])} zone(s), total {d['total_t']} t wet weight, landed by {d['vessel']}."
            )
        raise ValueError(f"unexpected prompt: {system[:60]}")

    return policy


# -- one run ----------------------------------------------------------------------------------------------------------

_tracing: OtlpTracing | None = None


def record(key: str, out: Path, server: Any) -> None:
    """Run the agent once on order `key`, writing its trace to the OTLP/JSON file `out`."""
    global _tracing
    if _tracing is None:
        _tracing = OtlpTracing("kelp-harvest-planner")
    server.use(brain(key))
    _tide_calls.update(n=0, flaky=key in ("KH-301", "KH-304", "KH-307"))
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    h = Harvest(_tracing, client, key)
    order = h.order
    try:
        with (
            _tracing.traced(out),
            _tracing.span(
                AGENT, "AGENT", input=f"plan harvest {key} for {order['buyer']}", **{"agent.name": AGENT}
            ) as root,
        ):
            licence = h.tool("get_licence", {"licence": order["licence"]}, Harvest.get_licence)
            ledger = h.tool("quota_ledger", {"licence": order["licence"]}, Harvest.quota_ledger)
            days = _days(order)
            for attempt in (1, 2, 3):
                try:
                    tides = h.tool("tide_table", {"port": licence["port"], "dates": days}, Harvest.tide_table)
                    break
                except TimeoutError:
                    if attempt == 3:
                        raise
            zones = []
            for z in licence["zones"]:
                a = survey_zone(h, z, days[0])
                remaining = round(z["annual_quota_t"] - ledger["landed_t"][z["zone"]], 1)
                zones.append(
                    {
                        **z,
                        "available": a["available"],
                        "sustainable_t": a["sustainable_t"],
                        "remaining_t": remaining,
                    }
                )
            raw = h.llm(
                SYS_PLAN,
                json.dumps(
                    {
                        "order_t": order["order_t"],
                        "capacity_t": licence["capacity_t"],
                        "zones": zones,
                        "low_waters": tides["low_waters"],
                    }
                ),
            )
            trips = parse_plan(h, raw)
            briefing = h.llm(
                SYS_BRIEF,
                json.dumps(
                    {"week": order["week"], "cut_height_cm": licence["cut_height_cm"], "trips": trips}
                ),
            )
            log = update_harvest_log(h, trips)
            declaration = compile_declaration(h, licence, log)
            notice = h.llm(SYS_NOTICE, json.dumps(declaration))
            validate_plan(h, licence, tides, trips, briefing, declaration, notice)
            root.output = {"trips": len(trips), "total_t": declaration["total_t"]}
    except LicenceBreach:
        pass
