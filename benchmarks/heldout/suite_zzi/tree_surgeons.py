"""Tree surgeons: an arboricultural contractor's quoting agent (SDK route: decorators, `with` steps,
`run.state`, written to a JSONL file).

An enquiry names the trees and the work wanted.  The agent has the model list the trees, checks the
council's Tree Preservation Order register and conservation areas, reads the site survey, assesses
each tree in a sub-agent (species profile, the model's arborist opinion, pricing), estimates the
arisings, picks the plant, has the model plan the crew, books the chipper, builds the quote, has the
model draft the cover letter, files the method statement and checks the quote against the firm's
rules before it is sent.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

import kit
from _shared import Case, ask_model, first_json, messages, money, system_text, user_text
from openai import OpenAI

import trajdebug


AGENT = "arbor-quote"
ROUTE = "sdk"
DOMAIN = "tree surgeons"
EXT = "jsonl"
SHAPE = (
    "enquiry -> model lists trees -> parse -> TPO register -> constraints (state) -> site survey -> "
    "per tree sub-agent (species profile, model opinion, parse, price, line to state) -> arisings -> "
    "plant -> model crew plan -> parse -> chipper booking (retried) -> quote -> model letter -> RAMS -> validator"
)

RATES = {"climber": 52.0, "ground": 34.0, "disposal_per_t": 96.0, "rigging_kit": 120.0, "mewp_day": 340.0}
CONSENT_FEE = 85.0
NOTICE_FEE = 45.0
VAT = 0.20

SPECIES = {
    "oak": {"density": 760, "wood": "hardwood", "notes": "dense; heavy limbs, rig over structures"},
    "ash": {"density": 690, "wood": "hardwood", "notes": "check for ash dieback before climbing"},
    "beech": {"density": 720, "wood": "hardwood", "notes": "brittle when decayed; Meripilus at base common"},
    "sycamore": {"density": 640, "wood": "hardwood", "notes": "sooty bark disease: masks for dismantling"},
    "london plane": {"density": 620, "wood": "hardwood", "notes": "hairs irritate: masks and goggles"},
    "silver birch": {
        "density": 650,
        "wood": "hardwood",
        "notes": "short-lived; decays quickly after pruning",
    },
    "leylandii": {"density": 470, "wood": "softwood", "notes": "fast regrowth only from green wood"},
    "scots pine": {"density": 520, "wood": "softwood", "notes": "resinous; chip separately"},
    "horse chestnut": {"density": 590, "wood": "hardwood", "notes": "bleeding canker common"},
    "lime": {"density": 560, "wood": "hardwood", "notes": "epicormic growth; aphid honeydew"},
    "willow": {"density": 560, "wood": "hardwood", "notes": "wet wood is heavy; pollards well"},
}

# The council's register as it stands today; `_REGISTER_SNAPSHOT` is the nightly copy the office keeps.
REGISTER = {
    "OX9 3BU": {"area": None, "designated": None, "orders": []},
    "OX9 2DP": {"area": "Thame Conservation Area (extension)", "designated": "2025-01-20", "orders": []},
    "HP17 8LT": {"area": None, "designated": None, "orders": [{"order": "TPO 2021/006", "refs": ["T2"]}]},
    "OX33 1JN": {"area": None, "designated": None, "orders": []},
    "HP18 9QA": {"area": None, "designated": None, "orders": [{"order": "TPO 2016/031", "refs": ["T1"]}]},
    "OX44 7UR": {"area": "Great Milton Conservation Area", "designated": "2002-06-11", "orders": []},
    "HP27 0RS": {
        "area": None,
        "designated": None,
        "orders": [{"order": "TPO 2019/044", "refs": ["T1", "T2"]}],
    },
    "OX9 7AB": {"area": None, "designated": None, "orders": []},
    "OX39 4PE": {"area": None, "designated": None, "orders": [{"order": "TPO 2023/002", "refs": ["T3"]}]},
}
_REGISTER_SNAPSHOT_DATE = "2024-09-30"

JOBS: dict[str, dict[str, Any]] = {
    "J-2401": {
        "customer": "Mrs P. Hallam",
        "address": "14 Orchard Rise, Thame",
        "postcode": "OX9 3BU",
        "today": "2025-03-03",
        "start": "2025-03-17",
        "access_width_m": 2.6,
        "overhead_lines": False,
        "trees": [
            {
                "species": "sycamore",
                "height_m": 12,
                "dbh_cm": 38,
                "work": "fell",
                "where": "by the back fence",
                "dist": 9.0,
            },
            {
                "species": "london plane",
                "height_m": 18,
                "dbh_cm": 64,
                "work": "fell",
                "where": "in the front garden",
                "dist": 6.5,
            },
            {
                "species": "silver birch",
                "height_m": 9,
                "dbh_cm": 24,
                "work": "crown lift",
                "where": "beside the drive",
                "dist": 3.0,
            },
        ],
    },
    "J-2402": {
        "customer": "Mr D. Okafor",
        "address": "3 Church Walk, Thame",
        "postcode": "OX9 2DP",
        "today": "2025-03-03",
        "start": "2025-03-24",
        "access_width_m": 1.9,
        "overhead_lines": True,
        "trees": [
            {
                "species": "lime",
                "height_m": 16,
                "dbh_cm": 55,
                "work": "pollard",
                "where": "on the street side",
                "dist": 8.0,
            },
            {
                "species": "leylandii",
                "height_m": 11,
                "dbh_cm": 30,
                "work": "fell",
                "where": "at the end of the garden",
                "dist": 14.0,
            },
        ],
    },
    "J-2403": {
        "customer": "Haddenham Parish Council",
        "address": "Banks Park, Haddenham",
        "postcode": "HP17 8LT",
        "today": "2025-03-04",
        "start": "2025-03-31",
        "access_width_m": 3.2,
        "overhead_lines": False,
        "trees": [
            {
                "species": "ash",
                "height_m": 15,
                "dbh_cm": 48,
                "work": "fell",
                "where": "next to the play area",
                "dist": 12.0,
            },
            {
                "species": "horse chestnut",
                "height_m": 17,
                "dbh_cm": 70,
                "work": "crown reduction",
                "where": "by the pavilion",
                "dist": 7.0,
            },
            {
                "species": "willow",
                "height_m": 10,
                "dbh_cm": 46,
                "work": "pollard",
                "where": "on the brook bank",
                "dist": 20.0,
            },
        ],
    },
    "J-2404": {
        "customer": "Ms R. Castellano",
        "address": "The Old Forge, Wheatley",
        "postcode": "OX33 1JN",
        "today": "2025-03-05",
        "start": "2025-03-19",
        "access_width_m": 2.4,
        "overhead_lines": True,
        "trees": [
            {
                "species": "scots pine",
                "height_m": 19,
                "dbh_cm": 52,
                "work": "fell",
                "where": "leaning over the workshop",
                "dist": 4.0,
            },
            {
                "species": "beech",
                "height_m": 21,
                "dbh_cm": 80,
                "work": "deadwood",
                "where": "in the paddock",
                "dist": 25.0,
            },
        ],
    },
    "J-2405": {
        "customer": "Brill Road Allotments",
        "address": "Brill Road Allotments, Long Crendon",
        "postcode": "HP18 9QA",
        "today": "2025-03-05",
        "start": "2025-04-02",
        "access_width_m": 3.0,
        "overhead_lines": False,
        "trees": [
            {
                "species": "oak",
                "height_m": 18,
                "dbh_cm": 75,
                "work": "crown reduction",
                "where": "at the gate",
                "dist": 10.0,
            },
            {
                "species": "leylandii",
                "height_m": 9,
                "dbh_cm": 26,
                "work": "fell",
                "where": "along plot 12",
                "dist": 15.0,
            },
            {
                "species": "oak",
                "height_m": 13,
                "dbh_cm": 41,
                "work": "crown lift",
                "where": "by the water trough",
                "dist": 18.0,
            },
        ],
    },
    "J-2406": {
        "customer": "Mr & Mrs Lindqvist",
        "address": "Glebe House, Great Milton",
        "postcode": "OX44 7UR",
        "today": "2025-02-10",
        "start": "2025-03-31",
        "access_width_m": 2.8,
        "overhead_lines": False,
        "trees": [
            {
                "species": "beech",
                "height_m": 22,
                "dbh_cm": 85,
                "work": "crown reduction",
                "where": "on the lawn",
                "dist": 16.0,
            },
            {
                "species": "silver birch",
                "height_m": 10,
                "dbh_cm": 28,
                "work": "fell",
                "where": "by the garage",
                "dist": 2.5,
            },
        ],
    },
    "J-2407": {
        "customer": "Chinnor Primary School",
        "address": "Station Road, Chinnor",
        "postcode": "HP27 0RS",
        "today": "2025-02-17",
        "start": "2025-03-10",
        "access_width_m": 3.5,
        "overhead_lines": False,
        "trees": [
            {
                "species": "oak",
                "height_m": 17,
                "dbh_cm": 66,
                "work": "deadwood",
                "where": "over the playground",
                "dist": 11.0,
            },
            {
                "species": "lime",
                "height_m": 14,
                "dbh_cm": 44,
                "work": "crown lift",
                "where": "along the drive",
                "dist": 5.0,
            },
            {
                "species": "sycamore",
                "height_m": 11,
                "dbh_cm": 33,
                "work": "fell",
                "where": "behind the kitchen",
                "dist": 3.5,
            },
        ],
    },
    "J-2408": {
        "customer": "Mr A. Nowak",
        "address": "22 Park Street, Thame",
        "postcode": "OX9 7AB",
        "today": "2025-03-06",
        "start": "2025-03-20",
        "access_width_m": 1.2,
        "overhead_lines": False,
        "trees": [
            {
                "species": "leylandii",
                "height_m": 8,
                "dbh_cm": 22,
                "work": "fell",
                "where": "hedge line, left",
                "dist": 6.0,
            },
            {
                "species": "leylandii",
                "height_m": 8,
                "dbh_cm": 20,
                "work": "fell",
                "where": "hedge line, right",
                "dist": 6.0,
            },
        ],
    },
    "J-2409": {
        "customer": "Watlington Estates",
        "address": "Home Farm, Watlington",
        "postcode": "OX39 4PE",
        "today": "2025-02-24",
        "start": "2025-03-17",
        "access_width_m": 4.0,
        "overhead_lines": True,
        "trees": [
            {
                "species": "ash",
                "height_m": 20,
                "dbh_cm": 58,
                "work": "fell",
                "where": "on the farm track",
                "dist": 30.0,
            },
            {
                "species": "horse chestnut",
                "height_m": 15,
                "dbh_cm": 52,
                "work": "crown reduction",
                "where": "by the barn",
                "dist": 6.0,
            },
            {
                "species": "oak",
                "height_m": 24,
                "dbh_cm": 110,
                "work": "deadwood",
                "where": "in the park",
                "dist": 40.0,
            },
        ],
    },
}

CASES = [
    Case(
        "zzi-tree-1",
        "tree.profile_units",
        "J-2401",
        "unit_error",
        ("species_profile", 2, "retrieval"),
        ("validate_quote", 1),
        "The species library's London plane record holds its density in lb/ft3 (38.7) under a kg/m3 label, "
        "so the plane's arisings are priced at a sixteenth of their weight.",
    ),
    Case(
        "zzi-tree-2",
        "tree.register_snapshot",
        "J-2402",
        "stale_data",
        ("check_tpo_register", 1, "tool"),
        ("validate_quote", 1),
        "The register lookup answers from the office's September snapshot, before Church Walk joined the "
        "conservation area, so no s211 notice is planned and the start date falls inside the notice period.",
    ),
    Case(
        "zzi-tree-3",
        "tree.ref_numbering",
        "J-2403",
        "off_by_one",
        ("parse_trees", 1, "parse"),
        ("validate_quote", 1),
        "The tree parser numbers the trees from T0, so every quote line is one reference off the surveyor's "
        "T1-T3 tags (and T2's TPO and the site distances attach to the neighbouring trees).",
    ),
    Case(
        "zzi-tree-4",
        "tree.letter_total",
        "J-2404",
        "hallucinated_value",
        ("draft_cover_letter", 1, "llm"),
        ("validate_quote", 1),
        "The model's cover letter quotes a price of 4,150.00 that appears nowhere in the quote it was given.",
    ),
    Case(
        "zzi-tree-5",
        "tree.constraint_aliasing",
        "J-2405",
        "bad_memory_write",
        ("record_constraints", 1, "state"),
        ("validate_quote", 1),
        "The constraints writer reuses one dict for every tree, so the state ends with each tree carrying the "
        "last tree's unprotected status and the TPO oak T1 gets no consent application.",
    ),
]
REFERENCE_INPUTS = ["J-2406", "J-2407", "J-2408", "J-2409"]


class QuoteRejected(ValueError):
    """The quote breaks one of the firm's rules."""


SYS_EXTRACT = (
    "You read tree-work enquiries for an arboricultural contractor. List every tree the customer mentions, "
    'in the order mentioned, as JSON: {"trees": [{"species", "height_m", "dbh_cm", "work"}]}. '
    "Work is one of: fell, crown reduction, crown lift, deadwood, pollard."
)
SYS_OPINION = (
    "You are a senior arborist. From the tree, its species profile and the site, give the method and the "
    'effort as JSON: {"method", "climber_hours", "ground_hours", "volume_m3", "rigging"}. volume_m3 is the '
    "timber and brash the work produces."
)
SYS_CREW = (
    "You plan crews for a tree surgery firm (8-hour days). From the start date and the quote lines, give JSON: "
    '{"start", "days", "climbers", "ground"} so that the climbing and ground hours fit the days.'
)
SYS_LETTER = (
    "Write a short cover letter for the quote below to the customer. State the total price including VAT "
    "and the start date exactly as given."
)

_client: Any = None


def _d(s: str) -> dt.date:
    return dt.date.fromisoformat(s)


# -- tools and steps --------------------------------------------------------------------------------------


@trajdebug.step(kind="input")
def receive_request(job_id: str) -> dict:
    job = JOBS[job_id]
    parts = [
        f"the {t['species'].title() if t['species'] != 'london plane' else 'London plane'} {t['where']} "
        f"(about {t['height_m']} m, trunk about {t['dbh_cm']} cm across) - {t['work']}"
        for t in job["trees"]
    ]
    text = (
        f"Hello, this is {job['customer']} at {job['address']}. Could you quote for the following: "
        + "; ".join(parts)
        + f". We would like the work to start on {job['start']} if possible. Thanks."
    )
    return {
        "job_id": job_id,
        "customer": job["customer"],
        "address": job["address"],
        "postcode": job["postcode"],
        "received": job["today"],
        "preferred_start": job["start"],
        "text": text,
    }


def extract_trees(request: dict) -> str:
    return ask_model(_client, "extract_trees", SYS_EXTRACT, request["text"])


@trajdebug.step(kind="parse")
def parse_trees(raw: str) -> list[dict]:
    data = first_json(raw)
    first = 0 if kit.on("tree.ref_numbering") else 1
    trees = []
    for i, t in enumerate(data["trees"], start=first):
        trees.append(
            {
                "ref": f"T{i}",
                "species": str(t["species"]).strip().lower(),
                "height_m": float(t["height_m"]),
                "dbh_cm": float(t["dbh_cm"]),
                "work": str(t["work"]).strip().lower(),
            }
        )
    return trees


@trajdebug.step(kind="tool")
def check_tpo_register(postcode: str, address: str) -> dict:
    entry = REGISTER[postcode]
    if kit.on("tree.register_snapshot"):
        designated = entry["designated"]
        if designated and designated > _REGISTER_SNAPSHOT_DATE:
            entry = {**entry, "area": None, "designated": None}
        return {"postcode": postcode, "address": address, "as_of": _REGISTER_SNAPSHOT_DATE, **entry}
    return {"postcode": postcode, "address": address, "as_of": "2025-03-03", **entry}


@trajdebug.step(kind="state")
def record_constraints(register: dict, trees: list[dict]) -> dict:
    protected = {ref: o["order"] for o in register["orders"] for ref in o["refs"]}
    constraints: dict[str, dict] = {}
    shared: dict = {}
    for tree in trees:
        entry = shared if kit.on("tree.constraint_aliasing") else {}
        entry["tpo"] = protected.get(tree["ref"])
        entry["conservation_area"] = register["area"]
        entry["exempt"] = tree["work"] == "deadwood"
        constraints[tree["ref"]] = entry
    trajdebug.current_run().state["constraints"] = constraints
    return constraints


@trajdebug.step(kind="tool")
def survey_site(job_id: str) -> dict:
    job = JOBS[job_id]
    return {
        "job_id": job_id,
        "surveyor": "K. Mbeki",
        "access_width_m": job["access_width_m"],
        "overhead_lines": job["overhead_lines"],
        "schedule": [
            {"ref": f"T{i}", "species": t["species"], "distance_to_building_m": t["dist"]}
            for i, t in enumerate(job["trees"], start=1)
        ],
    }


@trajdebug.step(kind="retrieval")
def species_profile(species: str) -> dict:
    rec = SPECIES[species]
    density, unit = float(rec["density"]), "kg/m3"
    if kit.on("tree.profile_units") and species == "london plane":
        density = round(density / 16.018, 1)
    return {
        "species": species,
        "density": density,
        "density_unit": unit,
        "wood": rec["wood"],
        "notes": rec["notes"],
    }


@trajdebug.step(kind="parse")
def parse_opinion(raw: str) -> dict:
    data = first_json(raw)
    return {
        "method": str(data["method"]),
        "climber_hours": float(data["climber_hours"]),
        "ground_hours": float(data["ground_hours"]),
        "volume_m3": float(data["volume_m3"]),
        "rigging": bool(data.get("rigging")),
    }


@trajdebug.step(kind="tool")
def price_tree(tree: dict, opinion: dict, profile: dict) -> dict:
    labour = opinion["climber_hours"] * RATES["climber"] + opinion["ground_hours"] * RATES["ground"]
    tonnes = round(opinion["volume_m3"] * profile["density"] / 1000, 2)
    disposal = round(tonnes * RATES["disposal_per_t"], 2)
    rigging = RATES["rigging_kit"] if opinion["rigging"] else 0.0
    return {
        "ref": tree["ref"],
        "species": tree["species"],
        "work": tree["work"],
        "method": opinion["method"],
        "climber_hours": opinion["climber_hours"],
        "ground_hours": opinion["ground_hours"],
        "volume_m3": opinion["volume_m3"],
        "tonnes": tonnes,
        "labour": round(labour, 2),
        "disposal": disposal,
        "rigging": rigging,
        "cost": round(labour + disposal + rigging, 2),
    }


@trajdebug.step(kind="state")
def record_line(line: dict) -> None:
    state = trajdebug.current_run().state
    state[f"line:{line['ref']}"] = line
    state.setdefault("refs", []).append(line["ref"])


@trajdebug.step(kind="agent")
def assess_tree(tree: dict, site: dict) -> dict:
    profile = species_profile(tree["species"])
    spot = next((s for s in site["schedule"] if s["ref"] == tree["ref"]), None)
    payload = {
        "tree": tree,
        "profile": profile,
        "distance_to_building_m": spot["distance_to_building_m"] if spot else None,
        "overhead_lines": site["overhead_lines"],
    }
    raw = ask_model(_client, "arborist_opinion", SYS_OPINION, json.dumps(payload))
    opinion = parse_opinion(raw)
    line = price_tree(tree, opinion, profile)
    record_line(line)
    return line


@trajdebug.step(kind="other")
def estimate_arisings() -> dict:
    state = trajdebug.current_run().state
    lines = [state[f"line:{ref}"] for ref in state["refs"]]
    tonnes = round(sum(ln["tonnes"] for ln in lines), 2)
    volume = round(sum(ln["volume_m3"] for ln in lines), 1)
    return {"tonnes": tonnes, "volume_m3": volume, "loads": max(1, math.ceil(tonnes / 3.5))}


@trajdebug.step(kind="condition")
def select_plant(trees: list[dict], site: dict) -> dict:
    tall = [t["ref"] for t in trees if t["height_m"] > 14 and t["work"] != "deadwood"]
    mewp = bool(tall) and site["access_width_m"] >= 2.4 and not site["overhead_lines"]
    big = any(t["dbh_cm"] > 45 and t["work"] == "fell" for t in trees)
    return {"mewp": mewp, "mewp_for": tall if mewp else [], "chipper": "9-inch" if big else "6-inch"}


@trajdebug.step(kind="parse")
def parse_crew_plan(raw: str) -> dict:
    data = first_json(raw)
    return {
        "start": str(data["start"]),
        "days": int(data["days"]),
        "climbers": int(data["climbers"]),
        "ground": int(data["ground"]),
    }


_depot_calls = {"n": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def reserve_chipper(start: str, days: int, size: str, job_id: str) -> dict:
    _depot_calls["n"] += 1
    if _depot_calls["n"] == 1 and job_id in ("J-2401", "J-2405", "J-2407"):
        raise ConnectionError("hire depot booking API did not answer (read timeout 10 s)")
    end = _d(start) + dt.timedelta(days=days - 1)
    return {
        "booking": f"CH-{job_id[-4:]}-{start.replace('-', '')[4:]}",
        "size": size,
        "from": start,
        "to": end.isoformat(),
        "days": days,
    }


@trajdebug.step(kind="other")
def build_quote(request: dict, plan: dict, plant: dict, booking: dict, arisings: dict) -> dict:
    state = trajdebug.current_run().state
    constraints = state["constraints"]
    lines = [state[f"line:{ref}"] for ref in state["refs"]]
    extras = []
    for ln in lines:
        c = constraints.get(ln["ref"]) or {}
        if c.get("tpo") and not c.get("exempt"):
            extras.append(
                {
                    "item": f"TPO consent application ({c['tpo']}) for {ln['ref']}",
                    "ref": ln["ref"],
                    "cost": CONSENT_FEE,
                }
            )
    area = next((c["conservation_area"] for c in constraints.values() if c.get("conservation_area")), None)
    if area:
        extras.append(
            {"item": f"Section 211 notice to the council ({area})", "ref": None, "cost": NOTICE_FEE}
        )
    if plant["mewp"]:
        extras.append({"item": "MEWP hire", "ref": None, "cost": RATES["mewp_day"] * plan["days"]})
    subtotal = round(sum(ln["cost"] for ln in lines) + sum(e["cost"] for e in extras), 2)
    vat = round(subtotal * VAT, 2)
    return {
        "job_id": request["job_id"],
        "customer": request["customer"],
        "address": request["address"],
        "lines": lines,
        "extras": extras,
        "arisings": arisings,
        "plant": plant,
        "crew": plan,
        "chipper": booking,
        "start": plan["start"],
        "subtotal": subtotal,
        "vat": vat,
        "total": round(subtotal + vat, 2),
    }


def draft_cover_letter(quote: dict) -> str:
    brief = {k: quote[k] for k in ("customer", "address", "start", "subtotal", "vat", "total")}
    return ask_model(_client, "draft_cover_letter", SYS_LETTER, json.dumps(brief))


@trajdebug.step(kind="tool")
def file_rams(quote: dict) -> dict:
    hazards = ["chainsaw work", "falling debris", "public access"]
    if quote["plant"]["mewp"]:
        hazards.append("MEWP outriggers on soft ground")
    if any(ln["rigging"] for ln in quote["lines"]):
        hazards.append("rigging over structures")
    return {"document": f"RAMS-{quote['job_id']}", "hazards": hazards, "filed": True}


@trajdebug.step(kind="condition")
def validate_quote(quote: dict, letter: str, site: dict, received: str) -> dict:
    surveyed = [s["ref"] for s in site["schedule"]]
    quoted = [ln["ref"] for ln in quote["lines"]]
    if quoted != surveyed:
        raise QuoteRejected(
            f"quote lines {', '.join(quoted)} do not match the surveyed trees {', '.join(surveyed)}"
        )
    for ln in quote["lines"]:
        if ln["volume_m3"] >= 0.5:
            density = ln["tonnes"] / ln["volume_m3"]
            if not 0.35 <= density <= 1.10:
                raise QuoteRejected(
                    f"{ln['ref']} ({ln['species']}): {ln['tonnes']} t of arisings for {ln['volume_m3']} m3 "
                    f"is {density:.3f} t/m3, outside 0.35-1.10 t/m3"
                )
    register = REGISTER[JOBS[quote["job_id"]]["postcode"]]
    consented = {e["ref"] for e in quote["extras"] if e["item"].startswith("TPO consent")}
    for order in register["orders"]:
        for ref in order["refs"]:
            line = next((ln for ln in quote["lines"] if ln["ref"] == ref), None)
            if line and line["work"] != "deadwood" and ref not in consented:
                raise QuoteRejected(
                    f"{ref} ({line['species']}, {line['work']}) is protected by {order['order']} "
                    f"but the quote has no consent application for it"
                )
    if register["area"]:
        ends = _d(received) + dt.timedelta(days=42)
        if _d(quote["start"]) < ends:
            raise QuoteRejected(
                f"start {quote['start']} falls inside the six-week s211 notice period for "
                f"{register['area']} (earliest {ends.isoformat()})"
            )
    crew = quote["crew"]
    climbing = sum(ln["climber_hours"] for ln in quote["lines"])
    ground = sum(ln["ground_hours"] for ln in quote["lines"])
    if crew["days"] * 8 * crew["climbers"] < climbing or crew["days"] * 8 * crew["ground"] < ground:
        raise QuoteRejected(
            f"{crew['days']} day(s) with {crew['climbers']} climbers and {crew['ground']} ground staff "
            f"cannot cover {climbing} climbing and {ground} ground hours"
        )
    if quote["chipper"]["from"] != quote["start"] or quote["chipper"]["days"] != crew["days"]:
        raise QuoteRejected(
            f"chipper booked {quote['chipper']['from']} for {quote['chipper']['days']} day(s), "
            f"works {quote['start']} for {crew['days']}"
        )
    expected = round(sum(ln["cost"] for ln in quote["lines"]) + sum(e["cost"] for e in quote["extras"]), 2)
    if (
        abs(expected - quote["subtotal"]) > 0.01
        or abs(quote["total"] - round(expected * (1 + VAT), 2)) > 0.02
    ):
        raise QuoteRejected(
            f"quote total {money(quote['total'])} does not add up from its lines ({money(expected)} + VAT)"
        )
    if money(quote["total"]) not in letter:
        raise QuoteRejected(f"cover letter does not state the quote total {money(quote['total'])}")
    return {"ok": True, "total": quote["total"]}


# -- the fake model -------------------------------------------------------------------------------------


def _opinion(data: dict) -> dict:
    tree, dist = data["tree"], data["distance_to_building_m"]
    h, dbh, work = tree["height_m"], tree["dbh_cm"], tree["work"]
    stem = math.pi * (dbh / 200) ** 2 * h * 0.45
    share = {"fell": 1.6, "crown reduction": 0.32, "crown lift": 0.13, "deadwood": 0.05, "pollard": 0.56}[
        work
    ]
    volume = max(0.2, round(stem * share, 1))
    rate = {"fell": 2.5, "crown reduction": 3.0, "crown lift": 5.0, "deadwood": 6.0, "pollard": 3.5}[work]
    rigging = dist is not None and dist < h and work in ("fell", "crown reduction", "pollard")
    climber = math.ceil(h / rate * (1.5 if rigging else 1.0) * 2) / 2
    ground = math.ceil(climber * 1.2 * 2) / 2 + (2.0 if work == "fell" else 0.0)
    method = {
        "fell": "sectional fell" if rigging else "straight fell",
        "crown reduction": "reduce by 25%",
        "crown lift": "lift to 5.2 m",
        "deadwood": "remove deadwood > 25 mm",
        "pollard": "re-pollard to knuckles",
    }[work]
    return {
        "method": method,
        "climber_hours": climber,
        "ground_hours": ground,
        "volume_m3": volume,
        "rigging": rigging,
    }


def _crew(data: dict) -> dict:
    lines = data["lines"]
    climbing = sum(ln["climber_hours"] for ln in lines)
    ground = sum(ln["ground_hours"] for ln in lines)
    climbers = 2 if climbing > 12 else 1
    crew_ground = 2 if ground > 10 else 1
    days = max(1, math.ceil(max(climbing / climbers, ground / crew_ground) / 8))
    return {"start": data["start"], "days": days, "climbers": climbers, "ground": crew_ground}


def brain(job_id: str):
    job = JOBS[job_id]

    def policy(request):
        msgs = messages(request)
        system, user = system_text(msgs), user_text(msgs)
        if system == SYS_EXTRACT:
            trees = [
                {
                    "species": "London plane"
                    if t["species"] == "london plane"
                    else t["species"].capitalize(),
                    "height_m": t["height_m"],
                    "dbh_cm": t["dbh_cm"],
                    "work": t["work"],
                }
                for t in job["trees"]
            ]
            return json.dumps({"trees": trees})
        if system == SYS_OPINION:
            return json.dumps(_opinion(first_json(user)))
        if system == SYS_CREW:
            return json.dumps(_crew(first_json(user)))
        if system == SYS_LETTER:
            data = first_json(user)
            total = money(data["total"])
            if kit.on("tree.letter_total"):
                total = "4,150.00"
            return (
                f"Dear {data['customer']},\n\nThank you for asking us to look at the trees at {data['address']}. "
                f"Our price for the work described in the enclosed schedule is £{total} including VAT. "
                f"We can start on {data['start']}, weather permitting. The price includes removal of all arisings.\n\n"
                "Kind regards,\nChiltern Tree Care"
            )
        raise ValueError(f"unexpected prompt: {system[:60]}")

    return policy


# -- one run ------------------------------------------------------------------------------------------------


def record(job_id: str, out: Path, server: Any) -> None:
    """Run the agent once on `job_id`, recording into the JSONL file `out`."""
    global _client
    server.use(brain(job_id))
    _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _depot_calls["n"] = 0
    job = JOBS[job_id]
    try:
        with trajdebug.run(AGENT, path=out, task=f"quote tree work {job_id} at {job['address']}") as run:
            request = receive_request(job_id)
            raw = extract_trees(request)
            trees = parse_trees(raw)
            register = check_tpo_register(request["postcode"], request["address"])
            constraints = record_constraints(register, trees)
            site = survey_site(job_id)
            for tree in trees:
                assess_tree(tree, site)
            arisings = estimate_arisings()
            plant = select_plant(trees, site)
            start = request["preferred_start"]
            if any(c["conservation_area"] for c in constraints.values()):
                notice_end = (_d(request["received"]) + dt.timedelta(days=42)).isoformat()
                start = max(start, notice_end)
            lines = []
            for t in trees:
                line = run.state[f"line:{t['ref']}"]
                lines.append(
                    {
                        "ref": t["ref"],
                        "climber_hours": line["climber_hours"],
                        "ground_hours": line["ground_hours"],
                    }
                )
            raw_plan = ask_model(
                _client, "plan_crew", SYS_CREW, json.dumps({"start": start, "lines": lines, "plant": plant})
            )
            plan = parse_crew_plan(raw_plan)
            booking = reserve_chipper(plan["start"], plan["days"], plant["chipper"], job_id)
            quote = build_quote(request, plan, plant, booking, arisings)
            letter = draft_cover_letter(quote)
            file_rams(quote)
            validate_quote(quote, letter, site, request["received"])
    except QuoteRejected:
        pass
