"""A coin dealer's valuations and sales (route: sdk, recorded with trajdebug's own recorder)."""

from __future__ import annotations

import json
import re

import trajdebug
from openai import OpenAI

import kit
from common import chat_policy, task_prompt

NAME = "coin-valuations"
ROUTE = "sdk"
DOMAIN = "coin dealer: valuations and sales"
SHAPE = "extract lots, fx lookup, per-lot catalogue/value loop, market-comparables sub-agent, melt floor, totals, letter, validator"

CATALOGUE = {
    "S.3958": {"ref": "S.3958", "name": "Victoria sovereign 1887 jubilee head", "metal": "gold", "weight_g": 7.99, "purity": 0.9167, "by_grade": {"VF": 480, "EF": 560, "UNC": 720}},
    "S.3959": {"ref": "S.3959", "name": "Victoria sovereign 1888 jubilee head", "metal": "gold", "weight_g": 7.99, "purity": 0.9167, "by_grade": {"VF": 470, "EF": 545, "UNC": 680}},
    "S.4106": {"ref": "S.4106", "name": "Edward VII half crown 1905", "metal": "silver", "weight_g": 14.14, "purity": 0.925, "by_grade": {"VF": 1450, "EF": 2900, "UNC": 5200}},
    "S.3937": {"ref": "S.3937", "name": "Victoria crown 1887", "metal": "silver", "weight_g": 28.28, "purity": 0.925, "by_grade": {"VF": 55, "EF": 110, "UNC": 240}},
    "S.4265": {"ref": "S.4265", "name": "George V florin 1911", "metal": "silver", "weight_g": 11.31, "purity": 0.925, "by_grade": {"VF": 22, "EF": 48, "UNC": 95}},
    "S.3866": {"ref": "S.3866", "name": "Victoria half sovereign 1853", "metal": "gold", "weight_g": 3.99, "purity": 0.9167, "by_grade": {"VF": 260, "EF": 390, "UNC": 610}},
    "S.4004": {"ref": "S.4004", "name": "Victoria shilling 1893, small obverse", "metal": "silver", "weight_g": 5.65, "purity": 0.925, "by_grade": {"VF": 30, "EF": 75, "UNC": 160}},
}
SPOT_GBP_PER_OZ = {"gold": 1910.0, "silver": 23.5}
TROY_OZ_G = 31.1035
FX = {"EUR": 1.17, "USD": 1.27}

INPUTS = [
    {"client": "M. Harrow", "currency": "EUR", "lots": [("S.3958", "EF"), ("S.3937", "VF"), ("S.4265", "UNC"), ("S.4004", "EF"), ("S.3866", "VF")]},
    {"client": "R. Osei", "currency": "USD", "lots": [("S.4106", "VF"), ("S.3958", "VF"), ("S.4265", "EF"), ("S.3937", "EF")]},
    {"client": "L. Brandt", "currency": "EUR", "lots": [("S.3866", "EF"), ("S.4004", "VF"), ("S.3959", "UNC"), ("S.4265", "VF")]},
    {"client": "P. Nakamura", "currency": "USD", "lots": [("S.3937", "UNC"), ("S.3958", "UNC"), ("S.4004", "UNC")]},
    {"client": "D. Achebe", "currency": "EUR", "lots": [("S.4265", "EF"), ("S.3959", "EF"), ("S.3866", "UNC"), ("S.3937", "VF"), ("S.4106", "EF")]},
    {"client": "K. Lindqvist", "currency": "USD", "lots": [("S.4004", "EF"), ("S.3866", "VF"), ("S.3958", "EF")]},
]

C = "zzr_coin_"
CASES = [
    {"id": C + "01", "input": 0, "fault_kind": "lossy_parsing", "root": ("parse_lots", 1), "failure": ("validate_sale", 1),
     "description": "The lot parser splits descriptions on commas and drops the shilling lot whose description holds one, so the invoice covers four of five consigned lots."},
    {"id": C + "02", "input": 1, "fault_kind": "swallowed_error", "root": ("fx_rate", 1), "failure": ("validate_sale", 1),
     "description": "The exchange-rate tool catches a timeout of the rate feed and returns a rate of 1.0 as if it were live, so the USD total equals the GBP total."},
    {"id": C + "03", "input": 2, "fault_kind": "subagent_wrong_entity", "root": ("search_auctions", 1), "failure": ("validate_sale", 1),
     "description": "The comparables sub-agent searches auction records for S.3958 (the 1887 sovereign) instead of the consigned S.3959, and its adjusted estimate follows the other coin."},
    {"id": C + "04", "input": 3, "fault_kind": "unit_error", "root": ("melt_floor", 1), "failure": ("validate_sale", 1),
     "description": "The melt floor treats the catalogue weight in grams as troy ounces, so the bullion floor of the lots exceeds their numismatic estimate."},
    {"id": C + "05", "input": 4, "fault_kind": "hallucinated_value", "root": ("write_valuation", 1), "failure": ("validate_sale", 1),
     "description": "The valuation letter the model writes states a total estimate that appears nowhere in the computed figures."},
]


def brain(inp):
    def extract(p):
        return {"lots": [{"ref": r, "grade": g, "description": CATALOGUE[r]["name"]} for r, g in inp["lots"]]}

    def comps_query(p):
        ref = p["lot"]["ref"]
        return {"ref": ref, "grade": p["lot"]["grade"], "since": "2025-01-01"}

    def letter(p):
        total = p["total_gbp"]
        if kit.on(C + "05"):
            total = round(total * 1.085 + 40)
        return (f"Dear {p['client']},\nThank you for your consignment of {p['lots']} coins. "
                f"Our total estimate is GBP {total:,.0f} ({p['currency']} {p['converted']:,.0f}).\nKind regards")

    return chat_policy({"extract_lots": extract, "comps_query": comps_query, "write_valuation": letter})


def _ask(client, model, name, payload):
    messages = [{"role": "system", "content": "You are the valuation desk's assistant."},
                {"role": "user", "content": task_prompt(name, payload)}]
    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        reply = client.chat.completions.create(model=model, messages=messages)
        s.output = {"role": "assistant", "content": reply.choices[0].message.content}
    return s.output


@trajdebug.step(kind="input")
def read_request(request: dict) -> str:
    lots = "; ".join(f"{CATALOGUE[r]['name']} ({r}), {g}" for r, g in request["lots"])
    return f"Consignment from {request['client']} for valuation and sale, settle in {request['currency']}: {lots}"


@trajdebug.step(kind="parse")
def parse_lots(message: dict) -> list:
    data = json.loads(message["content"])
    lots = []
    for lot in data["lots"]:
        if kit.on(C + "01") and len(lot["description"].split(",")) > 1:
            continue
        lots.append({"ref": lot["ref"], "grade": lot["grade"]})
    return lots


class RateFeedTimeout(Exception):
    pass


def _rate_feed(currency: str, attempt: int) -> float:
    if kit.on(C + "02"):
        raise RateFeedTimeout("rate feed timed out")
    return FX[currency]


@trajdebug.step(kind="tool")
def fx_rate(currency: str) -> dict:
    try:
        rate = _rate_feed(currency, 1)
    except RateFeedTimeout:
        rate = 1.0
    return {"base": "GBP", "quote": currency, "rate": rate}


@trajdebug.step(kind="tool")
def lookup_catalogue(ref: str) -> dict:
    return json.loads(json.dumps(CATALOGUE[ref]))


@trajdebug.step(kind="other")
def value_lot(lot: dict, entry: dict) -> dict:
    return {"ref": lot["ref"], "grade": lot["grade"], "metal": entry["metal"], "weight_g": entry["weight_g"],
            "purity": entry["purity"], "estimate_gbp": entry["by_grade"][lot["grade"]]}


@trajdebug.step(kind="parse")
def parse_query(message: dict) -> dict:
    return json.loads(message["content"])


@trajdebug.step(kind="tool")
def search_auctions(query: dict) -> list:
    entry = CATALOGUE[query["ref"]]
    base = entry["by_grade"][query["grade"]]
    return [{"ref": query["ref"], "sale": f"2025-{m:02d}", "hammer_gbp": round(base * f)} for m, f in ((3, 0.96), (6, 1.04), (9, 1.02))]


@trajdebug.step(kind="other")
def adjust_estimate(valued: dict, comps: list) -> dict:
    mean = sum(c["hammer_gbp"] for c in comps) / len(comps)
    return dict(valued, estimate_gbp=round(mean), comps_ref=comps[0]["ref"])


@trajdebug.step(kind="other")
def melt_floor(lots: list) -> list:
    out = []
    for v in lots:
        oz = v["weight_g"] if kit.on(C + "04") else v["weight_g"] / TROY_OZ_G
        out.append(dict(v, melt_gbp=round(oz * v["purity"] * SPOT_GBP_PER_OZ[v["metal"]], 2)))
    return out


@trajdebug.step(kind="other")
def totals(lots: list) -> dict:
    return {"lots": len(lots), "total_gbp": sum(v["estimate_gbp"] for v in lots)}


@trajdebug.step(kind="tool")
def convert_total(total: dict, fx: dict) -> dict:
    return {"currency": fx["quote"], "amount": round(total["total_gbp"] * fx["rate"], 2)}


@trajdebug.step(kind="tool")
def file_letter(client: str, letter: dict) -> dict:
    return {"client": client, "document": "VAL-" + "".join(w[0] for w in client.split()) + "-2026", "pages": 1 + len(letter["content"]) // 1800}


@trajdebug.step(kind="tool")
def schedule_sale(filed: dict, total: dict) -> dict:
    return {"sale": "2026-06-14", "lots": total["lots"], "document": filed["document"]}


@trajdebug.step(kind="condition")
def validate_sale(request: dict, lots: list, total: dict, converted: dict, letter: dict) -> str:
    if total["lots"] != len(request["lots"]):
        raise ValueError(f"invoice covers {total['lots']} lots, consignment has {len(request['lots'])}")
    for v in lots:
        if v["melt_gbp"] > v["estimate_gbp"]:
            raise ValueError(f"{v['ref']} estimate GBP {v['estimate_gbp']} is below its melt floor GBP {v['melt_gbp']}")
        if v.get("comps_ref", v["ref"]) != v["ref"]:
            raise ValueError(f"{v['ref']} was priced on auction records of {v['comps_ref']}")
    ratio = converted["amount"] / total["total_gbp"]
    if not 1.05 <= ratio <= 1.4:
        raise ValueError(f"{converted['currency']} {converted['amount']} is {ratio:.2f} times GBP {total['total_gbp']}, outside the plausible rate band")
    stated = re.search(r"GBP ([\d,]+)", letter["content"])
    if not stated or int(stated.group(1).replace(",", "")) != total["total_gbp"]:
        raise ValueError(f"letter states GBP {stated.group(1) if stated else '?'}, computed total is GBP {total['total_gbp']}")
    return "ok"


def record(server, inp, path):
    server.use(brain(inp))
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with trajdebug.run(NAME, task=f"value and sell {len(inp['lots'])} coins for {inp['client']}", path=path) as run:
            text = read_request(inp)
            lots = parse_lots(_ask(client, server.model, "extract_lots", {"request": text}))
            valued = []
            for lot in lots:
                entry = lookup_catalogue(lot["ref"])
                valued.append(value_lot(lot, entry))
            top = max(range(len(valued)), key=lambda i: valued[i]["estimate_gbp"])
            with trajdebug.step("market_comps", kind="agent", input={"lot": valued[top]}) as sub:
                q = parse_query(_ask(client, server.model, "comps_query", {"lot": {"ref": valued[top]["ref"], "grade": valued[top]["grade"]}}))
                if kit.on(C + "03"):
                    q = dict(q, ref="S.3958")
                comps = search_auctions(q)
                sub.output = adjust_estimate(valued[top], comps)
            valued[top] = sub.output
            fx = fx_rate(inp["currency"])
            run.state["lots"] = valued
            total = totals(valued)
            converted = convert_total(total, fx)
            floored = melt_floor(valued)
            letter = _ask(client, server.model, "write_valuation", {"client": inp["client"], "lots": total["lots"], "total_gbp": total["total_gbp"],
                                                                    "currency": converted["currency"], "converted": converted["amount"]})
            filed = file_letter(inp["client"], letter)
            schedule_sale(filed, total)
            validate_sale(inp, floored, total, converted, letter)
    except ValueError:
        pass
