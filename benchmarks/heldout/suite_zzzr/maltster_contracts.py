"""A maltster's barley contract desk, recorded with trajdebug's own API (route sdk).

Shape: input -> model drafts the terms (JSON) -> parser -> a loop over the grower's lots
(lab analysis with a gateway that needs a second attempt for some lots, normalisation,
a grade written into run.state per lot) -> weighbridge -> price board -> contract
register (a downstream tool that raises) -> the maltster's spec check (raises) -> output.
"""

from __future__ import annotations

import json

from openai import OpenAI

import trajdebug

NAME = "maltster-contract-desk"
ROUTE = "sdk"
DOMAIN = "a maltster's barley contracts"
SHAPE = "linear pipeline with a per-lot loop (tool with retry, conversion, run.state write), 14-27 steps"
SWITCH = None

BOARD = {"Laureate": 214.0, "Concerto": 208.0, "Planet": 219.5, "Diablo": 211.0}
LAB = {  # lot -> (nitrogen g/kg, moisture %, germination %)
    "HX-11": (16.8, 13.2, 98), "HX-12": (17.1, 13.6, 97), "HX-13": (16.2, 12.9, 99),
    "BR-40": (17.6, 13.9, 96), "BR-41": (16.9, 14.1, 98),
    "WD-07": (15.8, 12.7, 99), "WD-08": (16.4, 13.0, 97), "WD-09": (17.0, 13.3, 98), "WD-10": (16.6, 13.8, 97),
    "KL-21": (17.3, 13.4, 98), "KL-22": (16.0, 12.8, 99),
    "MO-31": (16.7, 13.1, 97), "MO-32": (17.2, 13.5, 98), "MO-33": (16.1, 13.0, 99), "MO-34": (16.9, 13.7, 96),
    "MO-35": (16.5, 13.2, 98),
}
WEIGHTS = {"HX-11": 71.5, "HX-12": 68.0, "HX-13": 73.0, "BR-40": 88.25, "BR-41": 91.75, "WD-07": 40.0,
           "WD-08": 42.5, "WD-09": 39.0, "WD-10": 41.0, "KL-21": 120.0, "KL-22": 96.5, "MO-31": 30.0,
           "MO-32": 31.5, "MO-33": 29.0, "MO-34": 33.25, "MO-35": 30.75}
SLOW_GATEWAY = {"BR-40", "WD-08", "MO-33"}

INPUTS = [
    {"grower": "Hallam Farm", "variety": "Laureate", "lots": ["HX-11", "HX-12", "HX-13"], "tonnage": 212.5,
     "price_per_tonne": 214.0, "harvest": 2026},
    {"grower": "Brook Rise", "variety": "Concerto", "lots": ["BR-40", "BR-41"], "tonnage": 180.0,
     "price_per_tonne": 208.0, "harvest": 2026},
    {"grower": "Weald Downs", "variety": "Planet", "lots": ["WD-07", "WD-08", "WD-09", "WD-10"], "tonnage": 162.5,
     "price_per_tonne": 219.5, "harvest": 2026},
    {"grower": "Kellow Lane", "variety": "Diablo", "lots": ["KL-21", "KL-22"], "tonnage": 216.5,
     "price_per_tonne": 211.0, "harvest": 2026},
    {"grower": "Moorend", "variety": "Laureate", "lots": ["MO-31", "MO-32", "MO-33", "MO-34", "MO-35"],
     "tonnage": 154.5, "price_per_tonne": 214.0, "harvest": 2026},
]

CASES = [
    {"id": "zzzr-malt-unit", "input": 4, "switch": "protein_scale", "kind": "unit_error",
     "root": ("normalise_analysis", 2), "failure": ("check_contract_spec", 1),
     "desc": "The second lot's protein was computed from nitrogen in g/kg without dividing by ten, so it reads 107.5% instead of 10.75%."},
    {"id": "zzzr-malt-tonnage", "input": 0, "switch": "tonnage_int", "kind": "lossy_parsing",
     "root": ("read_terms", 1), "failure": ("check_contract_spec", 1),
     "desc": "Reading the drafted terms cut the contract tonnage 212.5 to the whole number 212, which no longer matches the weighbridge."},
    {"id": "zzzr-malt-price", "input": 2, "switch": "price_made_up", "kind": "hallucinated_value",
     "root": ("draft_terms", 1), "failure": ("register_contract", 1),
     "desc": "The model drafted a price of 241.50 per tonne for Planet that the grower's request never stated (it asked 219.50)."},
    {"id": "zzzr-malt-grade", "input": 2, "switch": "grade_key", "kind": "bad_memory_write",
     "root": ("grade_lot", 3), "failure": ("check_contract_spec", 1),
     "desc": "The grade of lot WD-09 was filed under lot WD-08's key, over WD-08's own grade, so WD-08 has no grade of its own on file."},
    {"id": "zzzr-malt-season", "input": 1, "switch": "last_season", "kind": "stale_data",
     "root": ("lab_analysis", 3), "failure": ("check_contract_spec", 1),
     "desc": "The lab service answered lot BR-41 with its sample from the 2025 harvest instead of this year's."},
]

_client: OpenAI | None = None
_attempts: dict[str, int] = {}


def policy(request):
    req = json.loads(request.body["messages"][-1]["content"].split("\n", 1)[1])
    price = req["price_per_tonne"]
    if SWITCH == "price_made_up":
        price = 241.5
    return json.dumps({"grower": req["grower"], "variety": req["variety"], "tonnage": f"{req['tonnage']}",
                       "price_per_tonne": price, "harvest": req["harvest"], "lots": req["lots"]})


@trajdebug.step(kind="input")
def receive_contract_request(request: dict) -> dict:
    return request


@trajdebug.step(kind="llm")
def draft_terms(messages: list[dict]) -> str:
    reply = _client.chat.completions.create(model="maltings-drafter", messages=messages)
    return reply.choices[0].message.content


@trajdebug.step(kind="parse")
def read_terms(text: str) -> dict:
    terms = json.loads(text)
    if SWITCH == "tonnage_int":
        terms["tonnage"] = int(float(terms["tonnage"]))
    else:
        terms["tonnage"] = float(terms["tonnage"])
    return terms


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def lab_analysis(lot: str, harvest: int) -> dict:
    _attempts[lot] = _attempts.get(lot, 0) + 1
    if lot in SLOW_GATEWAY and _attempts[lot] == 1:
        raise ConnectionError(f"lab gateway did not answer for {lot}")
    nitrogen, moisture, germ = LAB[lot]
    season = harvest
    if SWITCH == "last_season" and lot == "BR-41":
        nitrogen, moisture, germ, season = 19.4, 15.2, 91, harvest - 1
    return {"lot": lot, "harvest": season, "nitrogen_g_per_kg": nitrogen, "moisture_pct": moisture,
            "germination_pct": germ}


@trajdebug.step(kind="other")
def normalise_analysis(analysis: dict, index: int) -> dict:
    divisor = 10.0
    if SWITCH == "protein_scale" and index == 1:
        divisor = 1.0
    protein = round(analysis["nitrogen_g_per_kg"] / divisor * 6.25, 2)
    return {"lot": analysis["lot"], "harvest": analysis["harvest"], "protein_pct": protein,
            "moisture_pct": analysis["moisture_pct"], "germination_pct": analysis["germination_pct"]}


@trajdebug.step(kind="state")
def grade_lot(sample: dict, lots: list[str], index: int) -> str:
    grade = "malting" if sample["germination_pct"] >= 96 else "feed"
    key = lots[index]
    if SWITCH == "grade_key" and index == 2:
        key = lots[index - 1]
    trajdebug.current_run().state[f"grade:{key}"] = {**sample, "grade": grade}
    return grade


@trajdebug.step(kind="tool")
def weighbridge_total(lots: list[str]) -> dict:
    return {"lots": lots, "net_tonnes": round(sum(WEIGHTS[x] for x in lots), 2)}


@trajdebug.step(kind="tool")
def price_board(variety: str) -> dict:
    base = BOARD[variety]
    return {"variety": variety, "low": base - 10.0, "high": base + 10.0}


@trajdebug.step(kind="tool")
def register_contract(terms: dict, board: dict) -> dict:
    if not board["low"] <= terms["price_per_tonne"] <= board["high"]:
        raise ValueError(f"price {terms['price_per_tonne']:.2f} per tonne is outside the board band for "
                         f"{board['variety']} ({board['low']:.2f}-{board['high']:.2f})")
    return {"contract": f"MC-{terms['grower'][:3].upper()}-{terms['harvest']}", "registered": True}


@trajdebug.step(kind="condition")
def check_contract_spec(terms: dict, weighed: dict) -> dict:
    state = trajdebug.current_run().state
    for lot in terms["lots"]:
        sample = state.get(f"grade:{lot}")
        if sample is None or sample["lot"] != lot:
            raise ValueError(f"lot {lot} has no grade on file")
        if sample["harvest"] != terms["harvest"]:
            raise ValueError(f"lot {lot} analysis is from harvest {sample['harvest']}, contract is harvest {terms['harvest']}")
        if not 9.5 <= sample["protein_pct"] <= 11.5:
            raise ValueError(f"lot {lot} protein {sample['protein_pct']}% outside the 9.5-11.5% band")
        if sample["moisture_pct"] > 14.5:
            raise ValueError(f"lot {lot} moisture {sample['moisture_pct']}% above 14.5%")
    if abs(terms["tonnage"] - weighed["net_tonnes"]) > 0.05:
        raise ValueError(f"contract tonnage {terms['tonnage']} does not match weighbridge {weighed['net_tonnes']}")
    return {"accepted": True, "lots": len(terms["lots"])}


@trajdebug.step(kind="output")
def issue_contract(terms: dict, registered: dict, spec: dict) -> str:
    return (f"{registered['contract']}: {terms['grower']} {terms['variety']} {terms['tonnage']} t "
            f"at {terms['price_per_tonne']:.2f}/t, {spec['lots']} lots accepted")


def record(server, given: dict, path) -> None:
    global _client
    _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _attempts.clear()
    try:
        with trajdebug.run(NAME, path=str(path), task=f"barley contract, {given['grower']}, {given['variety']}"):
            request = receive_contract_request(given)
            text = draft_terms([
                {"role": "system", "content": "Draft a barley supply contract as JSON from the grower's request."},
                {"role": "user", "content": "Grower request:\n" + json.dumps(request)},
            ])
            terms = read_terms(text)
            for i, lot in enumerate(terms["lots"]):
                analysis = lab_analysis(lot, terms["harvest"])
                sample = normalise_analysis(analysis, i)
                grade_lot(sample, terms["lots"], i)
            weighed = weighbridge_total(terms["lots"])
            board = price_board(terms["variety"])
            registered = register_contract(terms, board)
            spec = check_contract_spec(terms, weighed)
            issue_contract(terms, registered, spec)
    except Exception:
        pass
