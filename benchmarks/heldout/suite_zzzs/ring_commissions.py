"""A goldsmith's ring commissions, recorded with trajdebug's own API (run.state holds the spec)."""
from __future__ import annotations

import json
import math
import re

import trajdebug

from suite_common import chat, client, last_user

RUN_NAME = "ring-commission-desk"
ROUTE = "sdk"
DOMAIN = "goldsmith's ring commissions"
SHAPE = ("~20 steps: intake, model reads the brief, parse, spec kept in run.state, size chart, metal price with "
         "a retry, stone retrieval, choice, weight and cost sheet, 4 bench bookings, mould order, model drafts the "
         "quote, approval check")

SWITCHES = ["PRICE_PER_OUNCE", "CHART_SHIFT", "SUPPLIER_QUIET", "KARAT_GUESS", "SPEC_KEYS_SWAPPED"]
PRICE_PER_OUNCE = CHART_SHIFT = SUPPLIER_QUIET = KARAT_GUESS = SPEC_KEYS_SWAPPED = False

INPUTS = [
    {"commission": "RC-3101", "client": "Ines Albrecht", "budget_eur": 2400,
     "brief": "18k yellow gold band, US size 7, 4 mm wide, one oval sapphire, engrave 'I & M'"},
    {"commission": "RC-3102", "client": "Tomas Ridley", "budget_eur": 1900,
     "brief": "14k white gold signet, US size 10, 6 mm wide, no stone"},
    {"commission": "RC-3103", "client": "Maren Oduya", "budget_eur": 3200,
     "brief": "yellow gold solitaire, US size 5.5, 3 mm wide, round diamond"},
    {"commission": "RC-3104", "client": "Lio Castell", "budget_eur": 2600,
     "brief": "18k rose gold band, US size 8.5, 5 mm wide, small emerald"},
    {"commission": "RC-3105", "client": "Hana Pirkko", "budget_eur": 1500,
     "brief": "14k yellow gold stacking ring, US size 6, 2 mm wide, no stone, engrave '2019'"},
]

BRIEFS = {
    "RC-3101": {"metal": "yellow gold", "karat": 18, "us_size": 7.0, "band_mm": 4.0, "stone": "sapphire", "engraving": "I & M"},
    "RC-3102": {"metal": "white gold", "karat": 14, "us_size": 10.0, "band_mm": 6.0, "stone": None, "engraving": None},
    "RC-3103": {"metal": "yellow gold", "karat": None, "us_size": 5.5, "band_mm": 3.0, "stone": "diamond", "engraving": None},
    "RC-3104": {"metal": "rose gold", "karat": 18, "us_size": 8.5, "band_mm": 5.0, "stone": "emerald", "engraving": None},
    "RC-3105": {"metal": "yellow gold", "karat": 14, "us_size": 6.0, "band_mm": 2.0, "stone": None, "engraving": "2019"},
}

# half-size steps from US 3: inner diameter in mm
SIZE_TABLE = [14.1, 14.5, 14.9, 15.3, 15.7, 16.1, 16.5, 16.9, 17.3, 17.7, 18.1, 18.5, 19.0, 19.4, 19.8, 20.2, 20.6, 21.0]
GOLD_EUR_PER_G = {14: 41.6, 18: 53.5, 22: 65.4}
ALLOYS_IN_STOCK = {("yellow gold", 14), ("yellow gold", 18), ("white gold", 14), ("rose gold", 18), ("white gold", 18)}
DENSITY = {14: 13.1, 18: 15.6, 22: 17.7}
STONES = {
    "sapphire": [{"lot": "SA-17", "carat": 0.62, "eur": 640}, {"lot": "SA-22", "carat": 0.80, "eur": 910}],
    "diamond": [{"lot": "DI-04", "carat": 0.30, "eur": 1150}, {"lot": "DI-09", "carat": 0.41, "eur": 1690}],
    "emerald": [{"lot": "EM-31", "carat": 0.25, "eur": 480}],
}
BENCH = ["wax model", "casting", "setting", "polish"]


def policy(request):
    prompt = last_user(request)
    m = re.search(r"RC-\d{4}", prompt)
    cid = m.group(0) if m else ""
    if prompt.startswith("Read this ring commission"):
        spec = dict(BRIEFS[cid])
        if KARAT_GUESS and spec["karat"] is None:
            spec["karat"] = 22
        return json.dumps(spec)
    if prompt.startswith("Write the client's quote"):
        data = json.loads(prompt.split("\n", 1)[1])
        return (f"Dear {data['client']}, your {data['karat']}k {data['metal']} ring comes to "
                f"{data['total_eur']:.2f} EUR including bench work.")
    return "Noted."


_flaky = {"n": 0}


def build(server):
    cl = client(server)

    @trajdebug.step(kind="input")
    def take_commission(commission: dict) -> dict:
        return dict(commission)

    @trajdebug.step(kind="llm")
    def read_brief(commission: dict) -> str:
        msg = chat(cl, server, [
            {"role": "system", "content": "You read goldsmith commissions into JSON: metal, karat (null when not given), us_size, band_mm, stone, engraving."},
            {"role": "user", "content": f"Read this ring commission {commission['commission']}: {commission['brief']}"},
        ])
        return msg.content

    @trajdebug.step(kind="parse")
    def parse_brief(text: str) -> dict:
        spec = json.loads(text)
        if spec.get("karat") is None:
            spec["karat"] = 18
        return spec

    @trajdebug.step(kind="state")
    def remember_spec(spec: dict) -> None:
        kept = dict(spec)
        if SPEC_KEYS_SWAPPED:
            kept["band_mm"] = spec["us_size"]
        trajdebug.current_run().state["spec"] = kept

    @trajdebug.step(kind="tool")
    def size_chart(us_size: float) -> dict:
        i = int(round((us_size - 3.0) * 2))
        if CHART_SHIFT:
            i += 1
        return {"us_size": us_size, "inner_mm": SIZE_TABLE[i]}

    @trajdebug.retry(attempts=2, on=(ConnectionError,))
    @trajdebug.step(kind="tool")
    def metal_price(metal: str, karat: int) -> dict:
        _flaky["n"] += 1
        if _flaky["n"] % 2 == 1:
            raise ConnectionError("bullion feed did not answer")
        per_g = GOLD_EUR_PER_G[karat]
        if PRICE_PER_OUNCE:
            per_g = round(per_g * 31.1035, 2)
        return {"metal": metal, "karat": karat, "eur_per_g": per_g}

    @trajdebug.step(kind="retrieval")
    def stone_search(stone: str | None, budget_eur: float) -> list:
        if not stone:
            return []
        try:
            if SUPPLIER_QUIET:
                raise TimeoutError("stone dealer feed timed out")
            return [s for s in STONES[stone] if s["eur"] <= budget_eur * 0.6]
        except TimeoutError:
            return []

    @trajdebug.step(kind="condition")
    def choose_stone(candidates: list) -> dict | None:
        return min(candidates, key=lambda s: s["eur"]) if candidates else None

    @trajdebug.step(kind="other")
    def band_weight(chart: dict) -> dict:
        spec = trajdebug.current_run().state["spec"]
        thickness = 1.6
        circumference = math.pi * (chart["inner_mm"] + thickness)
        grams = circumference * spec["band_mm"] * thickness * DENSITY[spec["karat"]] / 1000
        return {"grams": round(grams, 2), "inner_mm": chart["inner_mm"], "band_mm": spec["band_mm"]}

    @trajdebug.step(kind="other")
    def cost_sheet(weight: dict, price: dict, stone: dict | None) -> dict:
        metal = weight["grams"] * price["eur_per_g"] * 1.15
        labour = 380.0
        stone_eur = stone["eur"] if stone else 0.0
        return {"metal_eur": round(metal, 2), "stone_eur": stone_eur, "labour_eur": labour,
                "total_eur": round(metal + stone_eur + labour, 2)}

    @trajdebug.step(kind="tool")
    def book_bench(stage: str, commission: str) -> dict:
        spec = trajdebug.current_run().state["spec"]
        if stage == "casting" and (spec["metal"], spec["karat"]) not in ALLOYS_IN_STOCK:
            raise RuntimeError(f"casting room has no {spec['karat']}k {spec['metal']} alloy in stock")
        return {"commission": commission, "stage": stage, "slot": f"week {BENCH.index(stage) + 2}"}

    @trajdebug.step(kind="tool")
    def order_wax_mould(weight: dict) -> dict:
        spec = trajdebug.current_run().state["spec"]
        expected = SIZE_TABLE[int(round((spec["us_size"] - 3.0) * 2))]
        if abs(weight["inner_mm"] - expected) > 0.1:
            raise ValueError(f"mould house: inner diameter {weight['inner_mm']} mm does not match US size {spec['us_size']} ({expected} mm)")
        if weight["band_mm"] > 6.5:
            raise ValueError(f"mould house: band width {weight['band_mm']} mm is over the 6.5 mm shank limit")
        return {"mould": f"WM-{int(weight['inner_mm'] * 10)}-{int(weight['band_mm'] * 10)}", "days": 4}

    @trajdebug.step(kind="llm")
    def draft_quote(commission: dict, spec: dict, costs: dict) -> str:
        payload = {"client": commission["client"], "metal": spec["metal"], "karat": spec["karat"], "total_eur": costs["total_eur"]}
        return chat(cl, server, [{"role": "user", "content": "Write the client's quote.\n" + json.dumps(payload)}]).content

    @trajdebug.step(kind="condition", attributes={"final": True})
    def approve_quote(commission: dict, costs: dict, stone: dict | None, text: str) -> dict:
        spec = trajdebug.current_run().state["spec"]
        if spec.get("stone") and stone is None:
            raise ValueError(f"brief asks for a {spec['stone']}, the quote lists no stone")
        if costs["total_eur"] > commission["budget_eur"]:
            raise ValueError(f"quote {costs['total_eur']:.2f} EUR is over the client's budget of {commission['budget_eur']} EUR")
        return {"approved": True, "total_eur": costs["total_eur"]}

    return locals()


def record(inp, path, server):
    server.use(policy)
    _flaky["n"] = 0
    f = build(server)
    try:
        with trajdebug.run(RUN_NAME, path=path, task=f"ring commission {inp['commission']}") as run:
            c = f["take_commission"](inp)
            spec = f["parse_brief"](f["read_brief"](c))
            f["remember_spec"](spec)
            chart = f["size_chart"](spec["us_size"])
            price = f["metal_price"](spec["metal"], spec["karat"])
            stone = f["choose_stone"](f["stone_search"](spec["stone"], c["budget_eur"]))
            weight = f["band_weight"](chart)
            costs = f["cost_sheet"](weight, price, stone)
            for stage in BENCH:
                f["book_bench"](stage, c["commission"])
            f["order_wax_mould"](weight)
            text = f["draft_quote"](c, spec, costs)
            f["approve_quote"](c, costs, stone, text)
    except (ValueError, RuntimeError):
        pass


CASES = [
    {"id": "zzzs-ring-01", "input": 0, "switch": "PRICE_PER_OUNCE", "fault_kind": "unit_error",
     "root": {"name": "metal_price", "occurrence": 2, "kind": "tool"}, "failure": {"name": "approve_quote", "occurrence": 1},
     "description": "The bullion feed's retried answer gives the 18k price per troy ounce in the eur_per_g field, so the metal cost is about 31 times too high."},
    {"id": "zzzs-ring-02", "input": 3, "switch": "CHART_SHIFT", "fault_kind": "off_by_one",
     "root": {"name": "size_chart", "occurrence": 1, "kind": "tool"}, "failure": {"name": "order_wax_mould", "occurrence": 1},
     "description": "The size chart reads the row one half-size above US 8.5, giving 19.0 mm instead of 18.5 mm inner diameter."},
    {"id": "zzzs-ring-03", "input": 0, "switch": "SUPPLIER_QUIET", "fault_kind": "swallowed_error",
     "root": {"name": "stone_search", "occurrence": 1, "kind": "retrieval"}, "failure": {"name": "approve_quote", "occurrence": 1},
     "description": "The stone search caught a dealer-feed timeout and answered an empty list as if no sapphire fitted the budget."},
    {"id": "zzzs-ring-04", "input": 2, "switch": "KARAT_GUESS", "fault_kind": "hallucinated_value",
     "root": {"name": "read_brief", "occurrence": 1, "kind": "llm"}, "failure": {"name": "book_bench", "occurrence": 2},
     "description": "The model reading RC-3103 states 22 karat although the brief names no karat (the house default is 18k)."},
    {"id": "zzzs-ring-05", "input": 1, "switch": "SPEC_KEYS_SWAPPED", "fault_kind": "bad_memory_write",
     "root": {"name": "remember_spec", "occurrence": 1, "kind": "state"}, "failure": {"name": "order_wax_mould", "occurrence": 1},
     "description": "The spec kept in run state has the ring size 10 stored as the band width, so the band is recorded as 10 mm wide instead of 6 mm."},
]
