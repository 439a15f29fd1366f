"""Route 4: agents recorded with the trajdebug SDK (``trajdebug.run``, ``@trajdebug.step``), plain Python fake LLMs.

Three agents:

* ``expense_claims``  - files an employee's travel expense claim from an e-mail and scanned receipts.
* ``apartment_hunter`` - finds a rental that fits a household and books a viewing.
* ``payroll_batch``   - runs one pay period for a small company and writes the bank file.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

from harness import AgentSpec, Case

import trajdebug
from trajdebug.testing import deterministic


FAULTS: set[str] = set()


def _record(name: str, out: Path, key: str, task: str, agent: str):
    random.seed(f"run-id/{key}")
    return trajdebug.run(name, path=out, task=task, agent=agent, version="2025.11")


class ReconciliationError(RuntimeError):
    pass


class PolicyViolation(ValueError):
    pass


# =====================================================================================
# expense_claims
# =====================================================================================

CLAIMS: dict[str, dict[str, Any]] = {
    "CLM-2291": {
        "employee": "E104",
        "receipts": [
            "HOTEL MONTEREY OSAKA\n2025-03-04\nRoom 3 nights\nTOTAL JPY 48,600",
            "Kuromon Market Sushi\n2025-03-05\nDinner, client meeting\nTOTAL JPY 9,800",
            "JR WEST Shinkansen\n2025-03-06\nOsaka-Kyoto return\nTOTAL JPY 2,860",
        ],
    },
    "CLM-2219": {
        "employee": "E117",
        "receipts": [
            "Lufthansa\n2025-02-11\nFRA-BER economy\nTOTAL EUR 212.40",
            "Hotel Adlon Berlin\n2025-02-12\nRoom 1 night\nTOTAL EUR 1,310.00",
        ],
    },
    "CLM-2304": {
        "employee": "E104",
        "receipts": [
            "Delta Air Lines\n2025-04-02\nSEA-JFK economy\nTOTAL USD 1,284.60",
            "Pod 51 Hotel\n2025-04-03\nRoom 2 nights\nTOTAL USD 418.00",
            "Joe's Pizza\n2025-04-03\nLunch\nTOTAL USD 23.75",
        ],
    },
    "CLM-2188": {
        "employee": "E104",
        "receipts": [
            "Alaska Airlines\n2025-01-20\nSEA-SFO\nTOTAL USD 310.20",
            "Hotel Zetta\n2025-01-21\nRoom 1 night\nTOTAL USD 289.00",
        ],
    },
    "CLM-2330": {
        "employee": "E121",
        "receipts": [
            "British Airways\n2025-05-14\nLHR-EDI\nTOTAL GBP 164.00",
            "The Balmoral\n2025-05-15\nRoom 2 nights\nTOTAL GBP 1,120.00",
            "Dishoom Edinburgh\n2025-05-15\nDinner with client\nTOTAL GBP 86.50",
        ],
    },
    "CLM-2275": {
        "employee": "E121",
        "receipts": [
            "Eurostar\n2025-03-01\nLondon-Paris\nTOTAL GBP 139.00",
            "Le Marais Bistro\n2025-03-01\nDinner\nTOTAL EUR 64.20",
        ],
    },
    "CLM-2342": {
        "employee": "E130",
        "receipts": [
            "Air Canada\n2025-06-09\nYVR-YYZ\nTOTAL CAD 612.00",
            "Fairmont Royal York\n2025-06-10\nRoom 2 nights\nTOTAL CAD 1,038.00",
        ],
    },
    "CLM-2350": {
        "employee": "E117",
        "receipts": [
            "Uber\n2025-06-18\nAirport ride\nTOTAL EUR 48.30",
            "Motel One Munich\n2025-06-18\nRoom 1 night\nTOTAL EUR 139.00",
            "Augustiner Keller\n2025-06-18\nTeam dinner\nTOTAL EUR 212.80",
        ],
    },
    "CLM-2361": {
        "employee": "E142",
        "receipts": [
            "ANA\n2025-07-02\nHND-ITM\nTOTAL JPY 25,400",
            "Daiwa Roynet Hotel\n2025-07-02\nRoom 1 night\nTOTAL JPY 13,900",
        ],
    },
    "CLM-2367": {
        "employee": "E142",
        "receipts": [
            "United\n2025-07-21\nSFO-ORD\nTOTAL USD 402.10",
            "The Langham Chicago\n2025-07-22\nRoom 1 night\nTOTAL USD 515.00",
        ],
    },
    "CLM-2372": {
        "employee": "E155",
        "receipts": [
            "Iberia\n2025-08-03\nMAD-BCN\nTOTAL EUR 96.00",
            "Hotel Arts Barcelona\n2025-08-03\nRoom 2 nights\nTOTAL EUR 742.00",
            "Cerveceria Catalana\n2025-08-04\nTapas with client\nTOTAL EUR 58.40",
        ],
    },
}
PREVIOUS_CLAIM = {"E104": "CLM-2188", "E121": "CLM-2275", "E117": "CLM-2219", "E142": "CLM-2361"}
USD_PER = {"USD": 1.0, "EUR": 1.08, "GBP": 1.27, "CAD": 0.73}
USD_PER_100_JPY = 0.67  # treasury publishes the yen rate per 100 JPY
CATEGORY_CAPS = {"airfare": 2500.0, "lodging": 450.0, "meals": 120.0, "ground": 200.0}
APPROVAL_LIMIT = {
    "E104": 3000.0,
    "E117": 2500.0,
    "E121": 3500.0,
    "E130": 2200.0,
    "E142": 2000.0,
    "E155": 2000.0,
}


def _true_usd(claim_id: str) -> float:
    total = 0.0
    for text in CLAIMS[claim_id]["receipts"]:
        cur, amt = re.search(r"TOTAL (\w{3}) ([\d,\.]+)", text).groups()  # type: ignore[union-attr]
        v = float(amt.replace(",", ""))
        total += v * USD_PER_100_JPY / 100 if cur == "JPY" else v * USD_PER[cur]
    return round(total, 2)


CARD_FEED = {cid: _true_usd(cid) for cid in CLAIMS}  # what the corporate card provider reports


@trajdebug.step(kind="llm")
def extract_claim_ref(email: str) -> dict[str, Any]:
    """Fake LLM: reads the employee's e-mail and returns the claim reference it mentions."""
    m = re.search(r"CLM-(\d{4})", email)
    claim = m.group(0) if m else None
    if claim and "misread_claim_id" in FAULTS:
        d = m.group(1)  # type: ignore[union-attr]
        claim = f"CLM-{d[:2]}{d[3]}{d[2]}"  # transposes the last two digits
    return {"claim_id": claim, "intent": "file_expense_claim", "confidence": 0.93}


_RECEIPT_CACHE: dict[str, dict[str, Any]] = {}


@trajdebug.step(kind="tool")
def fetch_receipts(claim_id: str, employee: str) -> dict[str, Any]:
    """Receipt vault lookup, with a per-employee cache in front of it."""
    if "stale_receipt_cache" in FAULTS:
        # the cache is keyed by employee, so an earlier claim's scan comes back
        cached = _RECEIPT_CACHE.get(employee)
        if cached is not None:
            return dict(cached, claim_id=claim_id)
    claim = CLAIMS[claim_id]
    return {"claim_id": claim_id, "employee": claim["employee"], "receipts": list(claim["receipts"])}


@trajdebug.step(kind="condition")
def verify_owner(employee: str, claim: dict[str, Any]) -> bool:
    if claim["employee"] != employee:
        raise PermissionError(
            f"claim {claim['claim_id']} was filed by {claim['employee']}, not by requester {employee}"
        )
    return True


@trajdebug.step(kind="parse")
def parse_receipt(text: str) -> dict[str, Any]:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    m = re.search(r"TOTAL\s+([A-Z]{3})\s+([0-9][0-9,\.]*)", text)
    assert m, text
    currency, raw = m.groups()
    if "thousands_cutoff" in FAULTS:
        amount = float(re.match(r"[0-9\.]+", raw).group(0))  # type: ignore[union-attr]
    else:
        amount = float(raw.replace(",", ""))
    return {"vendor": lines[0], "date": lines[1], "memo": lines[2], "currency": currency, "amount": amount}


@trajdebug.step(kind="llm")
def categorize(vendor: str, memo: str) -> str:
    """Fake LLM: expense category from vendor and memo."""
    t = f"{vendor} {memo}".lower()
    if any(
        w in t for w in ("air", "lufthansa", "delta", "united", "iberia", "ana", "british", "economy", "-")
    ) and not any(w in t for w in ("hotel", "room", "ride", "lunch", "dinner")):
        return "airfare"
    if any(w in t for w in ("hotel", "room", "motel", "inn", "balmoral", "fairmont", "langham")):
        return "lodging"
    if any(w in t for w in ("uber", "ride", "taxi", "shinkansen", "eurostar", "jr ")):
        return "ground"
    return "meals"


@trajdebug.step(kind="tool")
def fx_convert(amount: float, currency: str) -> float:
    if currency == "JPY":
        rate = USD_PER_100_JPY if "yen_rate_per_100" in FAULTS else USD_PER_100_JPY / 100
        return round(amount * rate, 2)
    return round(amount * USD_PER[currency], 2)


@trajdebug.step(kind="tool")
def apply_policy(category: str, usd: float, date: str) -> dict[str, Any]:
    cap = CATEGORY_CAPS[category]
    return {"category": category, "date": date, "usd": usd, "reimbursable": round(min(usd, cap * 3), 2)}


@trajdebug.step(kind="tool")
def reconcile_card_feed(employee: str, claim_id: str, lines: list[dict[str, Any]]) -> dict[str, Any]:
    claimed = round(sum(ln["usd"] for ln in lines), 2)
    charged = CARD_FEED[claim_id]
    if abs(claimed - charged) > max(1.0, 0.02 * charged):
        raise ReconciliationError(
            f"{claim_id}: receipts add up to ${claimed:,.2f} but the corporate card shows ${charged:,.2f} for {employee}"
        )
    return {"claimed": claimed, "charged": charged, "delta": round(claimed - charged, 2)}


@trajdebug.step(kind="tool")
def submit_claim(employee: str, claim_id: str, lines: list[dict[str, Any]]) -> dict[str, Any]:
    total = round(sum(ln["reimbursable"] for ln in lines), 2)
    if total > APPROVAL_LIMIT[employee]:
        raise PolicyViolation(f"claim {claim_id} needs director approval: ${total:,.2f} over limit")
    return {"claim_id": claim_id, "status": "submitted", "reimbursable": total}


@trajdebug.step(kind="agent")
def handle_expense_email(employee: str, email: str) -> dict[str, Any]:
    ref = extract_claim_ref(email)
    claim = fetch_receipts(ref["claim_id"], employee)
    verify_owner(employee, claim)
    lines = []
    for text in claim["receipts"]:
        rec = parse_receipt(text)
        category = categorize(rec["vendor"], rec["memo"])
        usd = fx_convert(rec["amount"], rec["currency"])
        lines.append(apply_policy(category, usd, rec["date"]))
    reconcile_card_feed(employee, ref["claim_id"], lines)
    return submit_claim(employee, ref["claim_id"], lines)


def run_expense(inp: dict[str, Any], fault: str | None, out: Path, key: str) -> None:
    FAULTS.clear()
    if fault:
        FAULTS.add(fault)
    _RECEIPT_CACHE.clear()
    prev = PREVIOUS_CLAIM.get(inp["employee"])
    if prev:  # yesterday's session left the employee's last claim in the cache
        _RECEIPT_CACHE[inp["employee"]] = {
            "employee": inp["employee"],
            "receipts": list(CLAIMS[prev]["receipts"]),
        }
    with (
        deterministic(),
        _record("expense-claims", out, key, "file an expense claim from e-mail", "expense_claims"),
    ):
        handle_expense_email(inp["employee"], inp["email"])


def expense_agent() -> AgentSpec:
    def email(cid: str, extra: str) -> str:
        return f"Hi finance team,\n{extra} The receipts are attached under {cid}.\nThanks!"

    passing = [
        {"employee": "E117", "email": email("CLM-2219", "Back from the Berlin offsite.")},
        {"employee": "E130", "email": email("CLM-2342", "Toronto customer visit, flights and hotel.")},
        {"employee": "E117", "email": email("CLM-2350", "Munich trade fair expenses.")},
        {"employee": "E142", "email": email("CLM-2367", "Chicago partner summit.")},
        {"employee": "E155", "email": email("CLM-2372", "Barcelona sales trip, three receipts.")},
        {"employee": "E104", "email": email("CLM-2188", "Quick SF trip in January.")},
    ]
    cases = [
        Case(
            "misread_claim_id",
            {"employee": "E104", "email": email("CLM-2291", "Osaka customer workshop, please reimburse.")},
            "misread_claim_id",
            "wrong_tool_args",
            "The extraction LLM transposes the last two digits of the claim number (CLM-2291 -> CLM-2219); "
            "the vault returns another employee's claim and the ownership check refuses it.",
            [("extract_claim_ref", 1), ("fetch_receipts", 1), ("verify_owner", 1)],
            "llm",
        ),
        Case(
            "yen_rate_per_100",
            {"employee": "E104", "email": email("CLM-2291", "Osaka customer workshop, please reimburse.")},
            "yen_rate_per_100",
            "unit_scale",
            "fx_convert applies the treasury's per-100-yen rate to single yen, so the Osaka hotel is 100x too "
            "expensive; the card reconciliation rejects the claim.",
            [("fx_convert", 1), ("apply_policy", 1), ("reconcile_card_feed", 1)],
            "tool",
        ),
        Case(
            "thousands_cutoff",
            {"employee": "E121", "email": email("CLM-2330", "Edinburgh board meeting.")},
            "thousands_cutoff",
            "lossy_parse",
            "The receipt parser stops at the thousands separator: GBP 1,120.00 is read as 1.0; after "
            "conversion and policy the claim no longer matches the card feed.",
            [("parse_receipt", 2), ("fx_convert", 2), ("apply_policy", 2), ("reconcile_card_feed", 1)],
            "parse",
        ),
        Case(
            "stale_receipt_cache",
            {"employee": "E104", "email": email("CLM-2304", "New York conference in April.")},
            "stale_receipt_cache",
            "stale_data",
            "fetch_receipts serves the employee's January claim from a cache keyed by employee instead of "
            "claim; the owner check passes, the totals then disagree with the card feed.",
            [
                ("fetch_receipts", 1),
                ("parse_receipt", 1),
                ("fx_convert", 1),
                ("apply_policy", 1),
                ("reconcile_card_feed", 1),
            ],
            "tool",
        ),
    ]
    return AgentSpec("expense_claims", "sdk", "HR / travel expenses", "jsonl", run_expense, passing, cases)


# =====================================================================================
# apartment_hunter
# =====================================================================================

LISTINGS: list[dict[str, Any]] = [
    # Hoboken
    {
        "id": "HB-101",
        "city": "Hoboken",
        "rent": 2350,
        "bedrooms": 2,
        "pets": True,
        "sqft": 880,
        "status": "available",
        "laundry": True,
    },
    {
        "id": "HB-114",
        "city": "Hoboken",
        "rent": 2290,
        "bedrooms": 2,
        "pets": False,
        "sqft": 960,
        "status": "available",
        "laundry": True,
    },
    {
        "id": "HB-120",
        "city": "Hoboken",
        "rent": 3900,
        "bedrooms": 3,
        "pets": True,
        "sqft": 1350,
        "status": "available",
        "laundry": True,
    },
    {
        "id": "HB-131",
        "city": "Hoboken",
        "rent": 2150,
        "bedrooms": 1,
        "pets": True,
        "sqft": 640,
        "status": "available",
        "laundry": False,
    },
    # Jersey City
    {
        "id": "JC-205",
        "city": "Jersey City",
        "rent": 2480,
        "bedrooms": 2,
        "pets": True,
        "sqft": 910,
        "status": "available",
        "laundry": True,
    },
    {
        "id": "JC-212",
        "city": "Jersey City",
        "rent": 2700,
        "bedrooms": 3,
        "pets": True,
        "sqft": 1180,
        "status": "available",
        "laundry": True,
    },
    {
        "id": "JC-219",
        "city": "Jersey City",
        "rent": 2650,
        "bedrooms": 3,
        "pets": True,
        "sqft": 1100,
        "status": "available",
        "laundry": True,
    },
    {
        "id": "JC-230",
        "city": "Jersey City",
        "rent": 1950,
        "bedrooms": 1,
        "pets": False,
        "sqft": 600,
        "status": "available",
        "laundry": True,
    },
    {
        "id": "JC-244",
        "city": "Jersey City",
        "rent": 2890,
        "bedrooms": 3,
        "pets": False,
        "sqft": 1240,
        "status": "available",
        "laundry": True,
    },
    # Astoria
    {
        "id": "AS-301",
        "city": "Astoria",
        "rent": 2100,
        "bedrooms": 2,
        "pets": True,
        "sqft": 820,
        "status": "available",
        "laundry": False,
    },
    {
        "id": "AS-318",
        "city": "Astoria",
        "rent": 2600,
        "bedrooms": 2,
        "pets": True,
        "sqft": 990,
        "status": "available",
        "laundry": True,
    },
    {
        "id": "AS-325",
        "city": "Astoria",
        "rent": 1850,
        "bedrooms": 1,
        "pets": True,
        "sqft": 560,
        "status": "available",
        "laundry": False,
    },
    {
        "id": "AS-340",
        "city": "Astoria",
        "rent": 3100,
        "bedrooms": 3,
        "pets": True,
        "sqft": 1300,
        "status": "available",
        "laundry": True,
    },
    # Brooklyn (Park Slope)
    {
        "id": "PS-402",
        "city": "Park Slope",
        "rent": 3350,
        "bedrooms": 2,
        "pets": True,
        "sqft": 1010,
        "status": "available",
        "laundry": True,
    },
    {
        "id": "PS-415",
        "city": "Park Slope",
        "rent": 2990,
        "bedrooms": 2,
        "pets": True,
        "sqft": 900,
        "status": "available",
        "laundry": False,
    },
]
LEASED_YESTERDAY = {"JC-212", "AS-318"}
_LISTING_CACHE: dict[str, dict[str, Any]] = {}


@trajdebug.step(kind="llm")
def complete(prompt: str) -> str:
    """Fake LLM: the same completion endpoint for every prompt; answers as JSON."""
    if prompt.startswith("EXTRACT"):
        req = prompt.split("\n", 1)[1]
        budget = re.search(r"\$([\d,]+)", req).group(1).replace(",", "")  # type: ignore[union-attr]
        if "budget_digit_swap" in FAULTS:
            budget = budget[1] + budget[0] + budget[2:]  # 2,400 read as 4,200
        beds = int(re.search(r"(\d) ?(?:bed|br)", req, re.I).group(1))  # type: ignore[union-attr]
        city = re.search(r"in ([A-Z][a-z]+(?: [A-Z][a-z]+)?)", req).group(1)  # type: ignore[union-attr]
        pets = bool(re.search(r"\b(dogs?|cats?|pets?)\b", req, re.I)) and not re.search(
            r"\bno pets\b", req, re.I
        )
        return json.dumps({"city": city, "max_rent": int(budget), "min_bedrooms": beds, "pets": pets})
    if prompt.startswith("RANK"):
        body = json.loads(prompt.split("\n", 1)[1])
        cands = body["candidates"]
        # prefers space and laundry, then price
        best = max(cands, key=lambda c: (c["bedrooms"], c["laundry"], c["sqft"], -c["rent"]))
        return json.dumps(
            {"choice": best["id"], "why": f"{best['bedrooms']}BR, {best['sqft']} sqft in {best['city']}"}
        )
    raise ValueError("unknown prompt")


@trajdebug.step(kind="parse")
def parse_criteria(raw: str) -> dict[str, Any]:
    data = json.loads(raw)
    return {
        "city": data["city"],
        "max_rent": int(data["max_rent"]),
        "min_bedrooms": int(data["min_bedrooms"]),
        "pets": bool(data["pets"]),
    }


@trajdebug.step(kind="tool")
def search_listings(city: str, max_rent: int, min_bedrooms: int, pets: bool) -> list[dict[str, Any]]:
    hits = []
    for li in LISTINGS:
        if li["city"] != city or li["rent"] > max_rent or li["bedrooms"] < min_bedrooms:
            continue
        if pets and not li["pets"] and "pets_filter_ignored" not in FAULTS:
            continue
        hits.append({"id": li["id"], "city": li["city"], "rent": li["rent"], "bedrooms": li["bedrooms"]})
    return hits


@trajdebug.step(kind="tool")
def get_listing(listing_id: str) -> dict[str, Any]:
    if "stale_listing_cache" in FAULTS and listing_id in _LISTING_CACHE:
        return dict(_LISTING_CACHE[listing_id])
    li = next(x for x in LISTINGS if x["id"] == listing_id)
    status = "leased" if li["id"] in LEASED_YESTERDAY else li["status"]
    return dict(li, status=status)


@trajdebug.step(kind="retrieval")
def load_session(user: str) -> list[dict[str, Any]]:
    """Earlier shortlists of this user (the agent's memory)."""
    return list(SESSIONS.get(user, []))


@trajdebug.step(kind="other")
def assemble_context(
    criteria: dict[str, Any], memory: list[dict[str, Any]], details: list[dict[str, Any]]
) -> str:
    """Builds the ranking prompt: current candidates plus anything remembered about this search area."""
    cands = [d for d in details if d["status"] == "available"]
    for item in memory:
        same_area = "memory_city_unfiltered" in FAULTS or item["city"] == criteria["city"]
        if same_area and item["rent"] <= criteria["max_rent"] and item["id"] not in {c["id"] for c in cands}:
            cands.append(item)
    return "RANK\n" + json.dumps({"household": criteria, "candidates": cands})


@trajdebug.step(kind="tool")
def affordability_check(listing: dict[str, Any], monthly_income: int) -> dict[str, Any]:
    ratio = listing["rent"] / monthly_income
    if ratio > 0.36:
        raise PolicyViolation(
            f"{listing['id']} at ${listing['rent']:,}/mo is {ratio:.0%} of income; landlord requires at most 36%"
        )
    return {"listing": listing["id"], "rent_to_income": round(ratio, 3)}


@trajdebug.step(kind="tool")
def schedule_viewing(listing_id: str, city: str, has_pets: bool, day: str) -> dict[str, Any]:
    li = next(x for x in LISTINGS if x["id"] == listing_id)
    if li["id"] in LEASED_YESTERDAY:
        raise RuntimeError(f"viewing refused: {listing_id} was leased and is off the market")
    if li["city"] != city:
        raise ValueError(f"agent office for {city} cannot book {listing_id}: that unit is in {li['city']}")
    if has_pets and not li["pets"]:
        raise PolicyViolation(
            f"{listing_id}: building rules do not allow pets; application would be rejected"
        )
    return {"listing": listing_id, "slot": f"{day} 17:30", "confirmed": True}


SESSIONS: dict[str, list[dict[str, Any]]] = {
    "u-maya": [
        {
            "id": "JC-244",
            "city": "Jersey City",
            "rent": 2890,
            "bedrooms": 3,
            "pets": False,
            "sqft": 1240,
            "laundry": True,
            "status": "available",
        },
    ],
    "u-omar": [
        {
            "id": "PS-415",
            "city": "Park Slope",
            "rent": 2990,
            "bedrooms": 2,
            "pets": True,
            "sqft": 900,
            "laundry": False,
            "status": "available",
        },
    ],
    "u-lena": [
        {
            "id": "AS-340",
            "city": "Astoria",
            "rent": 3100,
            "bedrooms": 3,
            "pets": True,
            "sqft": 1300,
            "laundry": True,
            "status": "available",
        },
    ],
}


@trajdebug.step(kind="agent")
def find_apartment(user: str, request: str, monthly_income: int, day: str) -> dict[str, Any]:
    raw = complete("EXTRACT\n" + request)
    crit = parse_criteria(raw)
    hits = search_listings(crit["city"], crit["max_rent"], crit["min_bedrooms"], crit["pets"])
    if not hits:
        return {"status": "no_match", "criteria": crit}
    details = [get_listing(h["id"]) for h in hits[:3]]
    memory = load_session(user)
    prompt = assemble_context(crit, memory, details)
    pick = json.loads(complete(prompt))
    chosen = next(c for c in [*details, *memory] if c["id"] == pick["choice"])
    affordability_check(chosen, monthly_income)
    return schedule_viewing(chosen["id"], crit["city"], crit["pets"], day)


def run_apartment(inp: dict[str, Any], fault: str | None, out: Path, key: str) -> None:
    FAULTS.clear()
    if fault:
        FAULTS.add(fault)
    _LISTING_CACHE.clear()
    for lid in LEASED_YESTERDAY:  # cached last week, before they were leased
        _LISTING_CACHE[lid] = dict(next(x for x in LISTINGS if x["id"] == lid))
    with (
        deterministic(),
        _record("apartment-hunt", out, key, "shortlist a rental and book a viewing", "apartment_hunter"),
    ):
        find_apartment(inp["user"], inp["request"], inp["income"], inp["day"])


def apartment_agent() -> AgentSpec:
    passing = [
        {
            "user": "u-kim",
            "request": "Looking for a 1 bed in Hoboken, max $2,200, we have a cat.",
            "income": 6200,
            "day": "Tue",
        },
        {
            "user": "u-raj",
            "request": "1 bedroom in Jersey City up to $2,000 please, no pets.",
            "income": 6000,
            "day": "Wed",
        },
        {
            "user": "u-ana",
            "request": "Need 2 br in Astoria, budget $2,200, small dog.",
            "income": 6500,
            "day": "Thu",
        },
        {
            "user": "u-lee",
            "request": "Any 1 bed in Astoria under $1,900 with room for a cat.",
            "income": 5400,
            "day": "Fri",
        },
        {
            "user": "u-tom",
            "request": "2 bed in Park Slope, our ceiling is $3,000, dog friendly.",
            "income": 9000,
            "day": "Sat",
        },
        {
            "user": "u-omar",
            "request": "Our family needs a 3 bed in Astoria, $3,200 max, one cat.",
            "income": 9200,
            "day": "Mon",
        },
    ]
    cases = [
        Case(
            "budget_digit_swap",
            {
                "user": "u-ivy",
                "request": "Looking for a 2 bed in Hoboken, max $2,400, we have a dog.",
                "income": 6800,
                "day": "Tue",
            },
            "budget_digit_swap",
            "wrong_tool_args",
            "The extraction call reads the $2,400 budget as 4,200; the search then admits a $3,900 three-bedroom, "
            "the ranking call prefers it and the affordability check rejects it.",
            [
                ("complete", 1),
                ("parse_criteria", 1),
                ("search_listings", 1),
                ("get_listing", 2),
                ("assemble_context", 1),
                ("complete", 2),
                ("affordability_check", 1),
            ],
            "llm",
        ),
        Case(
            "pets_filter_ignored",
            {
                "user": "u-sam",
                "request": "2 bed in Hoboken please, up to $2,400, two cats.",
                "income": 7200,
                "day": "Wed",
            },
            "pets_filter_ignored",
            "tool_ignores_arg",
            "search_listings drops the pets filter; the bigger no-pets unit HB-114 wins the ranking and the "
            "viewing request is refused by building rules.",
            [
                ("search_listings", 1),
                ("get_listing", 2),
                ("assemble_context", 1),
                ("complete", 2),
                ("schedule_viewing", 1),
            ],
            "tool",
        ),
        Case(
            "stale_listing_cache",
            {
                "user": "u-nia",
                "request": "Family of four, 3 bed in Jersey City, up to $2,800, we have a dog.",
                "income": 8200,
                "day": "Thu",
            },
            "stale_listing_cache",
            "stale_data",
            "get_listing serves last week's cached record of JC-212 (still 'available'); it is ranked first and "
            "the viewing is refused because the unit was leased.",
            [("get_listing", 1), ("assemble_context", 1), ("complete", 2), ("schedule_viewing", 1)],
            "tool",
        ),
        Case(
            "memory_city_unfiltered",
            {
                "user": "u-maya",
                "request": "2 bed in Hoboken, max $2,950 all in, no pets.",
                "income": 9500,
                "day": "Fri",
            },
            "memory_city_unfiltered",
            "context_pollution",
            "assemble_context carries the user's earlier Jersey City shortlist (JC-244) into the ranking prompt "
            "for a Hoboken search; the model picks it and the Hoboken office cannot book it.",
            [("assemble_context", 1), ("complete", 2), ("schedule_viewing", 1)],
            "other",
        ),
    ]
    return AgentSpec("apartment_hunter", "sdk", "real-estate rentals", "jsonl", run_apartment, passing, cases)


# =====================================================================================
# payroll_batch
# =====================================================================================

PAYROLL_COMPANIES: dict[str, dict[str, Any]] = {
    "northwind": {
        "schedule": "biweekly",
        "employees": [
            # id, name, type, hourly rate in cents or annual salary in dollars, YTD gross before this period
            {"id": "E201", "name": "Ada Park", "type": "salaried", "annual": 182000, "ytd": 172400.0},
            {"id": "E202", "name": "Ben Ortiz", "type": "hourly", "rate_cents": 2850, "ytd": 31200.0},
            {"id": "E203", "name": "Cy Moreau", "type": "hourly", "rate_cents": 3175, "ytd": 40550.0},
            {"id": "E204", "name": "Dee Walsh", "type": "salaried", "annual": 96000, "ytd": 70800.0},
        ],
        "hours": {"E201": (80, 0), "E202": (80, 6.5), "E203": (72, 12), "E204": (80, 0)},
    },
    "bluebird": {
        "schedule": "biweekly",
        "employees": [
            {"id": "E301", "name": "Eli Grant", "type": "hourly", "rate_cents": 2275, "ytd": 18900.0},
            {"id": "E302", "name": "Fay Chen", "type": "salaried", "annual": 176000, "ytd": 171500.0},
            {"id": "E303", "name": "Gus Novak", "type": "salaried", "annual": 72000, "ytd": 51000.0},
        ],
        "hours": {"E301": (76, 9), "E302": (80, 0), "E303": (80, 0)},
    },
    "cedarline": {
        "schedule": "monthly",
        "employees": [
            {"id": "E401", "name": "Hal Ito", "type": "salaried", "annual": 120000, "ytd": 90000.0},
            {"id": "E402", "name": "Ivy Stone", "type": "hourly", "rate_cents": 4100, "ytd": 52000.0},
            {"id": "E403", "name": "Jo Reyes", "type": "hourly", "rate_cents": 2600, "ytd": 23000.0},
        ],
        "hours": {"E401": (168, 0), "E402": (160, 14), "E403": (150, 4)},
    },
    "harborview": {
        "schedule": "biweekly",
        "employees": [
            {"id": "E501", "name": "Kai Berg", "type": "hourly", "rate_cents": 3300, "ytd": 28000.0},
            {"id": "E502", "name": "Lia Duarte", "type": "hourly", "rate_cents": 2950, "ytd": 26500.0},
            {"id": "E503", "name": "Mo Haddad", "type": "salaried", "annual": 104000, "ytd": 80000.0},
        ],
        "hours": {"E501": (80, 3), "E502": (78, 0), "E503": (80, 0)},
    },
    "quarry": {
        "schedule": "monthly",
        "employees": [
            {"id": "E601", "name": "Nell Shaw", "type": "salaried", "annual": 84000, "ytd": 63000.0},
            {"id": "E602", "name": "Otto Lind", "type": "hourly", "rate_cents": 3600, "ytd": 44000.0},
        ],
        "hours": {"E601": (168, 0), "E602": (168, 10)},
    },
    "meridian": {
        "schedule": "biweekly",
        "employees": [
            {"id": "E701", "name": "Pia Holt", "type": "salaried", "annual": 190000, "ytd": 175000.0},
            {"id": "E702", "name": "Quin Adler", "type": "hourly", "rate_cents": 2400, "ytd": 15500.0},
            {"id": "E703", "name": "Rue Sato", "type": "salaried", "annual": 88000, "ytd": 59000.0},
        ],
        "hours": {"E701": (80, 0), "E702": (80, 8), "E703": (80, 0)},
    },
    "lumen": {
        "schedule": "biweekly",
        "employees": [
            {"id": "E901", "name": "Uma Patel", "type": "salaried", "annual": 112000, "ytd": 86000.0},
            {"id": "E902", "name": "Vic Romero", "type": "hourly", "rate_cents": 3125, "ytd": 33800.0},
            {"id": "E903", "name": "Wes Young", "type": "hourly", "rate_cents": 2680, "ytd": 29900.0},
        ],
        "hours": {"E901": (80, 0), "E902": (80, 4), "E903": (70, 0)},
    },
    "oakridge": {
        "schedule": "monthly",
        "employees": [
            {"id": "E911", "name": "Xia Lin", "type": "salaried", "annual": 150000, "ytd": 125000.0},
            {"id": "E912", "name": "Yusuf Kaya", "type": "hourly", "rate_cents": 2990, "ytd": 47000.0},
        ],
        "hours": {"E911": (168, 0), "E912": (160, 6)},
    },
    "pinecrest": {
        "schedule": "biweekly",
        "employees": [
            {"id": "E921", "name": "Zoe Grant", "type": "hourly", "rate_cents": 2210, "ytd": 20100.0},
            {"id": "E922", "name": "Abe Moss", "type": "salaried", "annual": 178500, "ytd": 170200.0},
            {"id": "E923", "name": "Bea Nunez", "type": "hourly", "rate_cents": 3560, "ytd": 36400.0},
        ],
        "hours": {"E921": (80, 2.5), "E922": (80, 0), "E923": (76, 0)},
    },
    "tidewater": {
        "schedule": "biweekly",
        "employees": [
            {"id": "E801", "name": "Sol Vance", "type": "hourly", "rate_cents": 2700, "ytd": 21000.0},
            {"id": "E802", "name": "Tara Quinn", "type": "hourly", "rate_cents": 3450, "ytd": 30500.0},
        ],
        "hours": {"E801": (80, 5), "E802": (64, 0)},
    },
}
SS_WAGE_BASE = 176100.0
SS_RATE, MEDICARE_RATE = 0.062, 0.0145
PERIODS = {"biweekly": 26, "monthly": 12}
TRANSFER_LIMIT = 25000.0
CONTRACT_TYPES: dict[str, str] = {
    e["id"]: e["type"] for c in PAYROLL_COMPANIES.values() for e in c["employees"]
}
BADGE_HOURS: dict[str, float] = {
    eid: r + o for c in PAYROLL_COMPANIES.values() for eid, (r, o) in c["hours"].items()
}


@trajdebug.step(kind="tool")
def export_timesheets(company: str) -> str:
    c = PAYROLL_COMPANIES[company]
    rows = ["employee_id,name,pay_type,regular_hours,overtime_hours,rate_cents,annual_salary"]
    for e in c["employees"]:
        reg, ot = c["hours"][e["id"]]
        rows.append(
            f"{e['id']},{e['name']},{e['type']},{reg},{ot},{e.get('rate_cents', '')},{e.get('annual', '')}"
        )
    return "\n".join(rows)


@trajdebug.step(kind="parse")
def parse_timesheets(csv_text: str) -> list[dict[str, Any]]:
    lines = csv_text.strip().splitlines()
    header = lines[0].split(",")
    if "ot_column_dropped" in FAULTS:
        header = [h for h in header if h != "overtime_hours"]  # schema v1 mapping, no overtime column
    out = []
    for ln in lines[1:]:
        cells = ln.split(",")
        if "ot_column_dropped" in FAULTS:
            cells = cells[:4] + cells[5:]
        row = dict(zip(header, cells))
        out.append(
            {
                "employee_id": row["employee_id"],
                "pay_type": row["pay_type"],
                "regular_hours": float(row["regular_hours"]),
                "overtime_hours": float(row.get("overtime_hours") or 0),
                "rate_cents": int(row["rate_cents"]) if row["rate_cents"] else None,
                "annual_salary": float(row["annual_salary"]) if row["annual_salary"] else None,
            }
        )
    return out


@trajdebug.step(kind="llm")
def choose_pay_schedule(memo: str) -> str:
    """Fake LLM: reads the payroll memo and answers with the pay schedule to run."""
    text = memo.lower()
    answer = (
        "monthly" if "month" in text and "bi-weekly" not in text and "biweekly" not in text else "biweekly"
    )
    if "schedule_misrouted" in FAULTS:
        answer = "monthly" if answer == "biweekly" else "biweekly"
    return f"Schedule: {answer}. Reason: the memo describes a {answer} cycle."


@trajdebug.step(kind="tool")
def compute_gross(row: dict[str, Any], schedule: str) -> dict[str, Any]:
    if row["pay_type"] == "salaried":
        gross = row["annual_salary"] / PERIODS[schedule]
        hours = row["regular_hours"]
    else:
        rate = row["rate_cents"] / 100
        if "rate_cents_as_dollars" in FAULTS and row["overtime_hours"] > 0:
            rate = float(row["rate_cents"])  # the overtime path reads the raw column
        gross = rate * row["regular_hours"] + 1.5 * rate * row["overtime_hours"]
        hours = row["regular_hours"] + row["overtime_hours"]
    return {"employee_id": row["employee_id"], "gross": round(gross, 2), "hours_paid": hours}


@trajdebug.step(kind="tool")
def tax_withholding(employee_id: str, gross: float, ytd: float) -> dict[str, Any]:
    ss_room = max(0.0, SS_WAGE_BASE - ytd)
    ss = min(gross, ss_room) * SS_RATE
    medicare = gross * MEDICARE_RATE
    federal = gross * (0.22 if gross * 26 > 100000 else 0.12)
    total = round(ss + medicare + federal, 2)
    return {"employee_id": employee_id, "withheld": total, "net": round(gross - total, 2), "ss": round(ss, 2)}


@trajdebug.step(kind="state")
def update_ytd(state: Any, employee_id: str, gross: float, roster: list[str]) -> float:
    key_id = employee_id
    if "ytd_key_shift" in FAULTS:
        # looks the key up by roster position, off by one after a hire was inserted
        key_id = roster[(roster.index(employee_id) + 1) % len(roster)]
    new = round(state[f"ytd:{employee_id}"] + gross, 2)
    state[f"ytd:{key_id}"] = new
    return new


@trajdebug.step(kind="condition")
def validate_batch(lines: list[dict[str, Any]], schedule: str) -> dict[str, Any]:
    for ln in lines:
        eid = ln["employee_id"]
        if abs(ln["hours_paid"] - BADGE_HOURS[eid]) > 0.25:
            raise ValueError(
                f"{eid}: paying {ln['hours_paid']}h but the badge system logged {BADGE_HOURS[eid]}h"
            )
        if CONTRACT_TYPES[eid] == "salaried":
            emp = next(e for c in PAYROLL_COMPANIES.values() for e in c["employees"] if e["id"] == eid)
            expected = emp["annual"] / PERIODS[ln["company_schedule"]]
            if abs(ln["gross"] - expected) > 1:
                raise ValueError(
                    f"{eid}: salary installment {ln['gross']:.2f} differs from contract {expected:.2f}"
                )
        master_ytd = next(
            e["ytd"] for c in PAYROLL_COMPANIES.values() for e in c["employees"] if e["id"] == eid
        )
        if master_ytd < SS_WAGE_BASE and ln["ss"] == 0:
            raise ValueError(
                f"{eid}: no social security withheld although HR master data puts YTD wages at {master_ytd:,.0f}, below the {SS_WAGE_BASE:,.0f} base"
            )
    return {"checked": len(lines), "schedule": schedule}


@trajdebug.step(kind="tool")
def build_bank_file(company: str, lines: list[dict[str, Any]]) -> str:
    out = []
    for ln in lines:
        if ln["net"] > TRANSFER_LIMIT:
            raise OverflowError(
                f"{company}: net transfer {ln['net']:,.2f} to {ln['employee_id']} exceeds the bank's single-payment limit"
            )
        out.append(f"{ln['employee_id']};{ln['net']:.2f}")
    return "\n".join(out)


@trajdebug.step(kind="agent")
def run_payroll(company: str, memo: str) -> str:
    r = trajdebug.current_run()
    state = r.state  # type: ignore[union-attr]
    c = PAYROLL_COMPANIES[company]
    for e in c["employees"]:
        state[f"ytd:{e['id']}"] = e["ytd"]
    roster = [e["id"] for e in c["employees"]]
    csv_text = export_timesheets(company)
    rows = parse_timesheets(csv_text)
    answer = choose_pay_schedule(memo)
    schedule = re.search(r"Schedule: (\w+)", answer).group(1)  # type: ignore[union-attr]
    lines = []
    for row in rows:
        g = compute_gross(row, schedule)
        tax = tax_withholding(row["employee_id"], g["gross"], state[f"ytd:{row['employee_id']}"])
        update_ytd(state, row["employee_id"], g["gross"], roster)
        lines.append({**g, **tax, "company_schedule": c["schedule"]})
    bank = build_bank_file(company, lines)
    validate_batch(lines, schedule)
    return bank


def run_payroll_agent(inp: dict[str, Any], fault: str | None, out: Path, key: str) -> None:
    FAULTS.clear()
    if fault:
        FAULTS.add(fault)
    with deterministic(), _record("payroll-batch", out, key, "run the period's payroll", "payroll_batch"):
        run_payroll(inp["company"], inp["memo"])


def payroll_agent() -> AgentSpec:
    passing = [
        {"company": "lumen", "memo": "Regular bi-weekly run, period ending Nov 14."},
        {"company": "cedarline", "memo": "Month-end payroll for October."},
        {"company": "pinecrest", "memo": "Biweekly payroll, nothing unusual."},
        {"company": "quarry", "memo": "Monthly salaries and hourly wages for October."},
        {"company": "tidewater", "memo": "Bi-weekly cycle, two hourly staff."},
        {"company": "oakridge", "memo": "Monthly payroll; Yusuf has overtime."},
    ]
    cases = [
        Case(
            "ot_column_dropped",
            {"company": "northwind", "memo": "Bi-weekly run; Ben and Cy logged overtime."},
            "ot_column_dropped",
            "lossy_parse",
            "parse_timesheets maps the CSV with the old schema and drops the overtime column (defaults to 0); "
            "gross pay omits overtime and the badge-hours check fails.",
            [("parse_timesheets", 1), ("compute_gross", 2), ("validate_batch", 1)],
            "parse",
        ),
        Case(
            "rate_cents_as_dollars",
            {"company": "bluebird", "memo": "Biweekly payroll, Eli has overtime this time."},
            "rate_cents_as_dollars",
            "unit_scale",
            "compute_gross reads the hourly rate column in cents as dollars on the overtime path; Eli's pay is "
            "100x and the bank file builder refuses the transfer.",
            [("compute_gross", 1), ("tax_withholding", 1), ("build_bank_file", 1)],
            "tool",
        ),
        Case(
            "ytd_key_shift",
            {"company": "meridian", "memo": "Biweekly payroll for period 24."},
            "ytd_key_shift",
            "bad_memory_write",
            "update_ytd writes Pia's year-to-date gross (over the social-security wage base) under Quin's key; "
            "Quin's withholding then skips social security and the batch validation flags the rate.",
            [("update_ytd", 1), ("tax_withholding", 2), ("validate_batch", 1)],
            "state",
        ),
        Case(
            "schedule_misrouted",
            {
                "company": "harborview",
                "memo": "Bi-weekly payroll; remember Mo's raise is already in the system.",
            },
            "schedule_misrouted",
            "wrong_routing",
            "The schedule call answers 'monthly' for a bi-weekly company; salaried pay is computed as 1/12 of the "
            "salary and the contract check on installments fails.",
            [("choose_pay_schedule", 1), ("compute_gross", 3), ("validate_batch", 1)],
            "llm",
        ),
    ]
    return AgentSpec("payroll_batch", "sdk", "HR / payroll", "jsonl", run_payroll_agent, passing, cases)


def agents() -> list[AgentSpec]:
    return [expense_agent(), apartment_agent(), payroll_agent()]
