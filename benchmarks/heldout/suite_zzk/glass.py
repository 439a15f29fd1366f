"""Stained glass restoration: a quoting agent for church window commissions (route: sdk).

Reads the commission, fetches the window's register record, measures it, has a model
extract the panels from the condition survey, assesses each panel (glass stock, labour
estimate), runs a conservation sub-agent for the listing conditions, prices the quote,
drafts the cover letter and checks the quote against the studio's rules.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import common
import kit
from openai import OpenAI

import trajdebug


NAME = "glass-restoration-quoter"
ROUTE = "sdk"
DOMAIN = "stained glass restoration"
SHAPE = (
    "input, register tool, measure, state write, model extraction + parser, per-panel sub-agent "
    "(stock tool with retry, model estimate, parser, state write), conservation sub-agent "
    "(search, model pick, conditions tool, model summary), lead price, pricing, letter, validator"
)

QUOTE_DATE = "2026-04-14"

# -- the heritage register, the glass supplier, the listing service ----------------------------------

REGISTER: dict[str, dict[str, Any]] = {
    "HEM-N2": {
        "church": "St Mary, Hemsby",
        "listing": "LB-1051172",
        "grade": "II*",
        "width_mm": 900,
        "height_mm": 1800,
        "panel_count": 4,
    },
    "HEM-S1": {
        "church": "St Mary, Hemsby",
        "listing": "LB-1051172",
        "grade": "II*",
        "width_mm": 760,
        "height_mm": 2100,
        "panel_count": 4,
    },
    "WTN-E1": {
        "church": "All Saints, Wighton",
        "listing": "LB-1077205",
        "grade": "I",
        "width_mm": 1400,
        "height_mm": 2600,
        "panel_count": 6,
    },
    "BRK-W3": {
        "church": "St Peter, Brooke",
        "listing": "LB-1169842",
        "grade": "II",
        "width_mm": 620,
        "height_mm": 1500,
        "panel_count": 3,
    },
    "LDN-N4": {
        "church": "Holy Trinity, Loddon",
        "listing": "LB-1050338",
        "grade": "I",
        "width_mm": 840,
        "height_mm": 2200,
        "panel_count": 4,
    },
    "CAW-S2": {
        "church": "St Agnes, Cawston",
        "listing": "LB-1304311",
        "grade": "I",
        "width_mm": 1000,
        "height_mm": 2400,
        "panel_count": 5,
    },
    "SAL-N1": {
        "church": "St Peter and St Paul, Salle",
        "listing": "LB-1050911",
        "grade": "I",
        "width_mm": 700,
        "height_mm": 1900,
        "panel_count": 3,
    },
    "REP-S3": {
        "church": "St Andrew, Reepham",
        "listing": "LB-1372590",
        "grade": "II*",
        "width_mm": 880,
        "height_mm": 1700,
        "panel_count": 4,
    },
    "AYL-E2": {
        "church": "St Michael, Aylsham",
        "listing": "LB-1050560",
        "grade": "I",
        "width_mm": 1200,
        "height_mm": 2000,
        "panel_count": 5,
    },
}

# Other listed entries on the same sites (what a listing search also finds).
SITE_ENTRIES: dict[str, list[dict[str, str]]] = {
    "St Mary, Hemsby": [
        {"listing": "LB-1051173", "name": "Lychgate to St Mary", "kind": "gate"},
        {"listing": "LB-1051174", "name": "Churchyard cross", "kind": "monument"},
    ],
    "All Saints, Wighton": [{"listing": "LB-1077206", "name": "Boundary wall", "kind": "wall"}],
    "St Peter, Brooke": [{"listing": "LB-1169843", "name": "Tomb of J. Kett", "kind": "monument"}],
    "Holy Trinity, Loddon": [{"listing": "LB-1050339", "name": "Loddon lychgate", "kind": "gate"}],
    "St Agnes, Cawston": [
        {"listing": "LB-1304312", "name": "Guild chapel ruin", "kind": "ruin"},
        {"listing": "LB-1304313", "name": "Cawston churchyard gate", "kind": "gate"},
    ],
    "St Peter and St Paul, Salle": [
        {"listing": "LB-1050912", "name": "Salle churchyard cross", "kind": "monument"}
    ],
    "St Andrew, Reepham": [{"listing": "LB-1372591", "name": "Reepham church room", "kind": "hall"}],
    "St Michael, Aylsham": [{"listing": "LB-1050561", "name": "Repton tomb", "kind": "monument"}],
}

GLASS_PRICES = {  # current supplier catalogue, GBP per square metre
    "ruby": (412.0, "2026-03-30"),
    "pot-metal blue": (296.0, "2026-03-30"),
    "streaky amber": (238.0, "2026-03-30"),
    "flashed green": (318.0, "2026-03-30"),
    "white antique": (146.0, "2026-03-30"),
    "murrey": (356.0, "2026-03-30"),
}
CACHED_PRICES = {  # the supplier client's on-disk cache from the last full catalogue download
    "ruby": (338.0, "2025-06-18"),
    "pot-metal blue": (251.0, "2025-06-18"),
    "streaky amber": (204.0, "2025-06-18"),
    "flashed green": (270.0, "2025-06-18"),
    "white antique": (129.0, "2025-06-18"),
    "murrey": (301.0, "2025-06-18"),
}
LEAD_PRICE_PER_M = 7.85


def _panels(spec: str) -> list[dict[str, Any]]:
    """'A1 upper 0.34 ruby 2 3 failing; ...' -> panel dicts."""
    out = []
    for part in spec.split(";"):
        pid, tier, area, colour, missing, cracks, lead = part.split()
        out.append(
            {
                "panel": pid,
                "tier": tier,
                "area_m2": float(area),
                "colour": colour.replace("_", " "),
                "missing_pieces": int(missing),
                "cracks": int(cracks),
                "lead": lead,
            }
        )
    return out


INPUTS: dict[str, dict[str, Any]] = {
    "hemsby-n2": {
        "commission": "C-2611",
        "window_id": "HEM-N2",
        "client": "PCC of St Mary, Hemsby",
        "panels": _panels(
            "A1 upper 0.34 ruby 2 3 failing; A2 upper 0.34 pot-metal_blue 0 4 fair; "
            "B1 lower 0.36 white_antique 1 2 fair; B2 lower 0.36 streaky_amber 3 1 failing"
        ),
    },
    "wighton-e1": {
        "commission": "C-2614",
        "window_id": "WTN-E1",
        "client": "PCC of All Saints, Wighton",
        "panels": _panels(
            "T1 upper 0.52 murrey 1 2 fair; T2 upper 0.52 ruby 0 5 failing; "
            "T3 upper 0.52 white_antique 2 0 sound; M1 lower 0.61 flashed_green 1 1 fair; "
            "M2 lower 0.61 pot-metal_blue 0 3 fair; M3 lower 0.61 white_antique 4 2 failing"
        ),
    },
    "brooke-w3": {
        "commission": "C-2620",
        "window_id": "BRK-W3",
        "client": "PCC of St Peter, Brooke",
        "panels": _panels(
            "L1 lower 0.27 streaky_amber 1 2 fair; L2 lower 0.27 white_antique 0 1 sound; "
            "L3 lower 0.27 ruby 2 2 failing"
        ),
    },
    "loddon-n4": {
        "commission": "C-2623",
        "window_id": "LDN-N4",
        "client": "Loddon Parish Council",
        "panels": _panels(
            "A upper 0.41 flashed_green 1 3 fair; B upper 0.41 murrey 2 2 failing; "
            "C lower 0.42 white_antique 0 2 fair; D lower 0.42 ruby 1 4 fair"
        ),
    },
    "cawston-s2": {
        "commission": "C-2630",
        "window_id": "CAW-S2",
        "client": "Friends of St Agnes, Cawston",
        "panels": _panels(
            "1a upper 0.40 pot-metal_blue 1 2 fair; 1b upper 0.40 streaky_amber 2 1 failing; "
            "2a lower 0.48 ruby 0 3 fair; 2b lower 0.48 white_antique 3 2 failing; "
            "2c lower 0.48 flashed_green 1 0 sound"
        ),
    },
    "salle-n1": {
        "commission": "C-2601",
        "window_id": "SAL-N1",
        "client": "Churches Conservation Trust",
        "panels": _panels(
            "P1 lower 0.38 white_antique 0 2 fair; P2 lower 0.38 murrey 1 1 fair; "
            "P3 lower 0.38 pot-metal_blue 2 3 failing"
        ),
    },
    "reepham-s3": {
        "commission": "C-2604",
        "window_id": "REP-S3",
        "client": "PCC of St Andrew, Reepham",
        "panels": _panels(
            "N1 upper 0.33 ruby 1 1 fair; N2 upper 0.33 flashed_green 0 2 sound; "
            "S1 lower 0.36 streaky_amber 2 3 failing; S2 lower 0.36 white_antique 1 0 fair"
        ),
    },
    "aylsham-e2": {
        "commission": "C-2607",
        "window_id": "AYL-E2",
        "client": "PCC of St Michael, Aylsham",
        "panels": _panels(
            "U1 upper 0.38 murrey 0 2 fair; U2 upper 0.38 ruby 1 3 fair; "
            "L1 lower 0.50 white_antique 2 1 failing; L2 lower 0.50 pot-metal_blue 0 2 fair; "
            "L3 lower 0.50 streaky_amber 1 4 failing"
        ),
    },
    "hemsby-s1": {
        "commission": "C-2609",
        "window_id": "HEM-S1",
        "client": "PCC of St Mary, Hemsby",
        "panels": _panels(
            "A1 upper 0.34 white_antique 1 1 fair; A2 upper 0.34 murrey 0 2 fair; "
            "B1 lower 0.40 ruby 2 2 failing; B2 lower 0.40 flashed_green 1 3 fair"
        ),
    },
}
REFS = ["salle-n1", "reepham-s3", "aylsham-e2", "hemsby-s1"]

CASES = [
    {
        "id": "glass-units",
        "input": "hemsby-n2",
        "kind": "unit_error",
        "root": ("measure_window", 1),
        "failure": ("validate_quote", 1),
        "description": "measure_window converts the register's millimetres with a factor of 100, so the window's "
        "area comes out 100 times too large and the panels appear to cover under 1% of it.",
    },
    {
        "id": "glass-price-date",
        "input": "wighton-e1",
        "kind": "stale_data",
        "root": ("lookup_glass_stock", 4),
        "failure": ("validate_quote", 1),
        "description": "For panel M1 the glass stock lookup answers from the supplier client's cached 2025 catalogue, "
        "so the flashed green price is dated 2025-06-18, outside the quote's 180-day price window.",
    },
    {
        "id": "glass-lines",
        "input": "loddon-n4",
        "kind": "bad_memory_write",
        "root": ("record_panel", 3),
        "failure": ("validate_quote", 1),
        "description": "record_panel stores panel C's line under panel B's key, overwriting B, so the quote "
        "prices 3 panels of the 4 the register lists.",
    },
    {
        "id": "glass-tiers",
        "input": "cawston-s2",
        "kind": "lossy_parsing",
        "root": ("parse_panels", 1),
        "failure": ("validate_quote", 1),
        "description": "parse_panels keeps only the first JSON block of the extraction (the upper lights) and drops "
        "the lower lights' block, so 2 of the window's 5 panels are quoted.",
    },
    {
        "id": "glass-listing",
        "input": "brooke-w3",
        "kind": "subagent_wrong_entity",
        "root": ("pick_listing", 1),
        "failure": ("validate_quote", 1),
        "description": "The conservation sub-agent's model picks the listed tomb in the churchyard instead of the "
        "church, so the conditions cite LB-1169843 while the window is listed under LB-1169842.",
    },
]


# -- the scripted model ---------------------------------------------------------------------------------


def brain(request: Any) -> str:
    system, prompt = common.system_text(request), common.last_user(request)
    if system.startswith("You extract panels"):
        panels = common.payload(prompt, "SURVEY")
        tiers: dict[str, list[dict[str, Any]]] = {}
        for p in panels:
            tiers.setdefault(p["tier"], []).append(
                {k: p[k] for k in ("panel", "area_m2", "colour", "missing_pieces", "cracks", "lead")}
            )
        parts = [
            f"{tier.capitalize()} lights:\n```json\n{json.dumps(rows)}\n```" for tier, rows in tiers.items()
        ]
        return "Panels read from the survey.\n\n" + "\n\n".join(parts)
    if system.startswith("You estimate bench hours"):
        panel = common.payload(prompt, "PANEL")
        hours = 3.0 + 1.5 * panel["missing_pieces"] + 0.5 * panel["cracks"]
        hours += {"failing": 6.0, "fair": 2.0}.get(panel["lead"], 0.5)
        return (
            f"Hours: {hours:.1f}\nMethod: clean, consolidate paint, replace {panel['missing_pieces']} pieces."
        )
    if system.startswith("You pick the listing"):
        entries = common.payload(prompt, "ENTRIES")
        church = next(e for e in entries if e["kind"] == "church")
        pick = church
        if kit.on("glass-listing"):
            pick = next(e for e in entries if e["kind"] != "church")
        return f"Listing: {pick['listing']} ({pick['name']})"
    if system.startswith("You summarise consent"):
        cond = common.payload(prompt, "CONDITIONS")
        return f"Consent under {cond['listing']}: " + "; ".join(cond["conditions"]) + "."
    if system.startswith("You write cover letters"):
        quote = common.payload(prompt, "QUOTE")
        return (
            f"Dear {quote['client']},\n\nPlease find our quotation {quote['commission']} for the conservation "
            f"of window {quote['window_id']}: {len(quote['lines'])} panels, total GBP {quote['total']:.2f} "
            f"excluding VAT.\n\nYours sincerely,\nFenland Glass Studio"
        )
    return "I cannot help with that."


# -- the agent --------------------------------------------------------------------------------------------

client: OpenAI | None = None
_supplier_calls: dict[str, int] = {}


def _ask(system: str, prompt: str) -> str:
    reply = client.chat.completions.create(
        model=common.MODEL,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
    )
    return reply.choices[0].message.content


@trajdebug.step(kind="input")
def receive_commission(commission: dict) -> dict:
    return commission


@trajdebug.step(kind="tool")
def fetch_window_record(window_id: str) -> dict:
    return {"window_id": window_id, **copy.deepcopy(REGISTER[window_id])}


@trajdebug.step(kind="other")
def measure_window(record: dict) -> dict:
    per_metre = 100 if kit.on("glass-units") else 1000
    width_m, height_m = record["width_mm"] / per_metre, record["height_mm"] / per_metre
    return {"area_m2": round(width_m * height_m, 4), "perimeter_m": round(2 * (width_m + height_m), 3)}


@trajdebug.step(kind="state")
def remember_window(record: dict, measures: dict) -> dict:
    window = {**record, **measures}
    trajdebug.current_run().state["window"] = window
    trajdebug.current_run().state["lines"] = {}
    return window


@trajdebug.step(kind="llm")
def extract_panels(survey: list) -> str:
    return _ask(
        "You extract panels from a stained glass condition survey as JSON, grouped by tier.",
        "Extract every panel with area, main colour, missing pieces, cracks and lead condition.\n"
        f"SURVEY: {json.dumps(survey)}",
    )


@trajdebug.step(kind="parse")
def parse_panels(text: str) -> list:
    blocks = common.json_blocks(text)
    if kit.on("glass-tiers"):
        blocks = blocks[:1]
    return [panel for block in blocks for panel in block]


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def lookup_glass_stock(colour: str) -> dict:
    _supplier_calls[colour] = _supplier_calls.get(colour, 0) + 1
    if colour == "streaky amber" and _supplier_calls[colour] == 1:
        raise ConnectionError("supplier catalogue API timed out after 10 s")
    price, as_of = GLASS_PRICES[colour]
    if kit.on("glass-price-date") and colour == "flashed green":
        price, as_of = CACHED_PRICES[colour]
    return {"colour": colour, "supplier": "Hartley Wood Antique", "price_per_m2": price, "as_of": as_of}


@trajdebug.step(kind="llm")
def estimate_labour(panel: dict, stock: dict) -> str:
    return _ask(
        "You estimate bench hours for conserving one stained glass panel.",
        f"Glass available: {stock['colour']} at GBP {stock['price_per_m2']}/m2.\nPANEL: {json.dumps(panel)}",
    )


@trajdebug.step(kind="parse")
def parse_estimate(text: str) -> float:
    first = text.splitlines()[0]
    return float(first.split(":", 1)[1])


@trajdebug.step(kind="state")
def record_panel(panel: dict, stock: dict, hours: float) -> dict:
    lines = trajdebug.current_run().state["lines"]
    key = panel["panel"]
    if kit.on("glass-lines") and key == "C":
        key = list(lines)[-1]
    line = {
        "panel": panel["panel"],
        "area_m2": panel["area_m2"],
        "colour": stock["colour"],
        "glass_m2": round(panel["area_m2"] * min(1.0, 0.15 * max(1, panel["missing_pieces"])), 3),
        "price_per_m2": stock["price_per_m2"],
        "price_as_of": stock["as_of"],
        "hours": hours,
        "releading": panel["lead"] == "failing",
    }
    lines[key] = line
    return {key: line}


@trajdebug.step(kind="agent")
def assess_panel(panel: dict) -> dict:
    stock = lookup_glass_stock(panel["colour"])
    text = estimate_labour(panel, stock)
    hours = parse_estimate(text)
    return record_panel(panel, stock, hours)


@trajdebug.step(kind="tool")
def search_listings(church: str) -> list:
    record = next(r for r in REGISTER.values() if r["church"] == church)
    return [
        {"listing": record["listing"], "name": f"Church of {church}", "kind": "church"},
        *SITE_ENTRIES[church],
    ]


@trajdebug.step(kind="llm")
def pick_listing(church: str, entries: list) -> str:
    return _ask(
        "You pick the listing entry that covers a church's windows.",
        f"Church: {church}\nENTRIES: {json.dumps(entries)}",
    )


@trajdebug.step(kind="tool")
def fetch_listing_conditions(listing: str) -> dict:
    return {
        "listing": listing,
        "authority": "Historic England",
        "conditions": [
            "like-for-like glass only",
            "paint consolidation with Paraloid B72",
            "photographic record before removal",
        ],
    }


@trajdebug.step(kind="llm")
def summarise_conditions(conditions: dict) -> str:
    return _ask("You summarise consent conditions for a quote.", f"CONDITIONS: {json.dumps(conditions)}")


@trajdebug.step(kind="agent")
def conservation_review(window: dict) -> dict:
    entries = search_listings(window["church"])
    picked = pick_listing(window["church"], entries)
    listing = picked.split(":", 1)[1].split()[0]
    conditions = fetch_listing_conditions(listing)
    summary = summarise_conditions(conditions)
    return {"listing": conditions["listing"], "summary": summary}


@trajdebug.step(kind="tool")
def fetch_lead_price() -> dict:
    return {"material": "H-section lead came 8 mm", "price_per_m": LEAD_PRICE_PER_M, "as_of": "2026-04-01"}


@trajdebug.step(kind="other")
def price_quote(commission: dict, conservation: dict, lead: dict) -> dict:
    state = trajdebug.current_run().state
    window, lines = state["window"], state["lines"]
    rows = []
    for line in lines.values():
        glass = line["glass_m2"] * line["price_per_m2"]
        labour = line["hours"] * 48.0
        came_m = line["area_m2"] * 9.0 if line["releading"] else 0.0
        rows.append(
            {
                **line,
                "glass_cost": round(glass, 2),
                "labour_cost": round(labour, 2),
                "lead_cost": round(came_m * lead["price_per_m"], 2),
            }
        )
    total = sum(r["glass_cost"] + r["labour_cost"] + r["lead_cost"] for r in rows) + 640.0
    return {
        "commission": commission["commission"],
        "client": commission["client"],
        "window_id": window["window_id"],
        "lines": rows,
        "scaffold_and_fixing": 640.0,
        "total": round(total, 2),
        "listing": conservation["listing"],
        "consent": conservation["summary"],
        "quote_date": QUOTE_DATE,
    }


@trajdebug.step(kind="llm")
def draft_cover_letter(quote: dict) -> str:
    return _ask("You write cover letters for conservation quotes.", f"QUOTE: {json.dumps(quote)}")


@trajdebug.step(kind="condition")
def validate_quote(quote: dict) -> bool:
    from datetime import date

    window = trajdebug.current_run().state["window"]
    if len(quote["lines"]) != window["panel_count"]:
        raise ValueError(
            f"quote {quote['commission']} prices {len(quote['lines'])} panels; the register lists "
            f"{window['panel_count']} for window {window['window_id']}"
        )
    panel_area = sum(line["area_m2"] for line in quote["lines"])
    share = panel_area / window["area_m2"]
    if not 0.7 <= share <= 1.0:
        raise ValueError(
            f"panels cover {share:.1%} of window {window['window_id']} "
            f"({panel_area:.2f} of {window['area_m2']} m2)"
        )
    quoted = date.fromisoformat(quote["quote_date"])
    for line in quote["lines"]:
        age = (quoted - date.fromisoformat(line["price_as_of"])).days
        if age > 180:
            raise ValueError(
                f"glass price for {line['colour']} (panel {line['panel']}) dated {line['price_as_of']}, "
                f"{age} days before the quote date {quote['quote_date']}"
            )
    if quote["listing"] != window["listing"]:
        raise ValueError(
            f"consent conditions cite {quote['listing']}; window {window['window_id']} is listed "
            f"under {window['listing']}"
        )
    return True


def quote_window(commission: dict) -> dict:
    commission = receive_commission(commission)
    record = fetch_window_record(commission["window_id"])
    window = remember_window(record, measure_window(record))
    panels = parse_panels(extract_panels(commission["panels"]))
    for panel in panels:
        assess_panel(panel)
    conservation = conservation_review(window)
    quote = price_quote(commission, conservation, fetch_lead_price())
    draft_cover_letter(quote)
    validate_quote(quote)
    return quote


def record(server: Any, key: str, path: Path) -> None:
    global client
    server.use(brain)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _supplier_calls.clear()
    commission = copy.deepcopy(INPUTS[key])
    try:
        with trajdebug.run(NAME, path=str(path), task=f"quote commission {commission['commission']}"):
            quote_window(commission)
    except ValueError:
        pass
