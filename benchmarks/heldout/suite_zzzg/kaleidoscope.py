"""Kaleidoscope maker's commissions: a linear quoting pipeline recorded with trajdebug's own API.

Shape: intake -> model extracts the brief as JSON -> parser -> glass catalogue search -> spec kept in
run.state -> one pricing call per part (tube, each mirror, object chamber, end caps) -> cut plan ->
model drafts the quote -> quote parser -> the workshop's own quote check (raises).
"""

from __future__ import annotations

import json
import re

import trajdebug
from openai import OpenAI

NAME = "kaleidoscope-commissions"
ROUTE = "sdk"
DOMAIN = "kaleidoscope maker's commissions"
SHAPE = "linear pipeline, 15-17 steps: llm extract -> parse -> retrieval -> state write -> per-part pricing loop -> llm quote -> parse -> validator"
SWITCH = None

INPUTS = [
    {"client": "Oona Vashti", "brief": "Tabletop scope for a 40th birthday: 3 mirrors, 30 cm brass tube, "
     "dry dichroic chamber. Budget 620 GBP.", "mirrors": 3, "tube_cm": 30, "material": "brass",
     "chamber": "dry dichroic", "budget": "620 GBP"},
    {"client": "Hallam & Pierce Opticians", "brief": "Shop-window piece: 4 mirrors, 42 cm walnut tube, "
     "liquid oil chamber with glass beads. Budget 1,250 GBP.", "mirrors": 4, "tube_cm": 42,
     "material": "walnut", "chamber": "liquid oil", "budget": "1,250 GBP"},
    {"client": "Ines Carvalho", "brief": "Pocket scope, 2 mirrors, 18 cm copper tube, dry dichroic chamber. "
     "Budget 460 GBP.", "mirrors": 2, "tube_cm": 18, "material": "copper", "chamber": "dry dichroic",
     "budget": "460 GBP"},
    {"client": "Teodor Blum", "brief": "Teleidoscope with 3 mirrors, 25 cm maple tube and a clear lens "
     "end instead of a chamber. Budget 450 GBP.", "mirrors": 3, "tube_cm": 25, "material": "maple",
     "chamber": "lens", "budget": "450 GBP"},
    {"client": "Marisol Ekwueme", "brief": "Anniversary scope: 3 mirrors, 36 cm brass tube, liquid oil "
     "chamber, engraved end cap. Budget 1,080 GBP.", "mirrors": 3, "tube_cm": 36, "material": "brass",
     "chamber": "liquid oil", "budget": "1,080 GBP"},
]

CASES = [
    {"id": "zzzg_kal_01", "input": 1, "switch": 1, "kind": "lossy_parsing",
     "root": ("parse_brief", 1), "failure": ("check_quote", 1),
     "description": "The brief parser reads the budget '1,250 GBP' as 1 GBP by stopping at the thousands "
                    "separator, so the 645.40 GBP quote is rejected as over budget."},
    {"id": "zzzg_kal_02", "input": 0, "switch": 2, "kind": "unit_error",
     "root": ("price_part", 3), "failure": ("check_quote", 1),
     "description": "The parts price list answers the second mirror strip's area in square millimetres "
                    "where square centimetres are meant, pricing that strip a hundred times over."},
    {"id": "zzzg_kal_03", "input": 3, "switch": 3, "kind": "hallucinated_value",
     "root": ("extract_brief", 1), "failure": ("check_quote", 1),
     "description": "The model's extraction states a 52 cm tube for a brief that asks for 25 cm, and the "
                    "52 cm tube is longer than the lathe bed takes."},
    {"id": "zzzg_kal_04", "input": 4, "switch": 4, "kind": "off_by_one",
     "root": ("cut_plan", 1), "failure": ("check_quote", 1),
     "description": "The cut plan counts mirror strips from 1 to below the mirror count, so a 3-mirror "
                    "scope gets only 2 strips in the quote."},
    {"id": "zzzg_kal_05", "input": 2, "switch": 5, "kind": "bad_memory_write",
     "root": ("store_spec", 1), "failure": ("check_quote", 1),
     "description": "The spec written to the run's shared state takes the chamber name of the first "
                    "catalogue hit (liquid oil) instead of the client's dry dichroic chamber."},
]

RATES = {"brass": 4.1, "walnut": 3.2, "copper": 4.8, "maple": 2.6}
CHAMBERS = {"dry dichroic": 120.0, "liquid oil": 165.0, "lens": 70.0}
CATALOGUE = [
    {"sku": "GL-OIL-3", "chamber": "liquid oil", "title": "Oil cell with dichroic flakes"},
    {"sku": "GL-OIL-7", "chamber": "liquid oil", "title": "Mineral oil cell, 7 bead mix"},
    {"sku": "GL-DCH-2", "chamber": "dry dichroic", "title": "Dichroic offcuts, warm set"},
    {"sku": "GL-DCH-5", "chamber": "dry dichroic", "title": "Dichroic offcuts, cool set"},
    {"sku": "GL-LNS-1", "chamber": "lens", "title": "Plano-convex end lens 38 mm"},
]
LATHE_BED_CM = 45


# ---------------------------------------------------------------- model policy

def policy(request):
    messages = request.body["messages"]
    system, user = messages[0]["content"], messages[-1]["content"]
    if system.startswith("Extract"):
        inp = next(i for i in INPUTS if i["client"] in user)
        spec = {"client": inp["client"], "mirrors": inp["mirrors"], "tube_cm": inp["tube_cm"],
                "material": inp["material"], "chamber": inp["chamber"], "budget": inp["budget"]}
        if SWITCH == 3:
            spec["tube_cm"] = 52
        return json.dumps(spec)
    if system.startswith("Write the quote"):
        parts = json.loads(user)
        total = round(sum(p["price_gbp"] for p in parts["parts"]), 2)
        lines = "\n".join(f"- {p['part']}: {p['price_gbp']:.2f} GBP" for p in parts["parts"])
        return (f"Dear {parts['client']},\nthank you for your commission. Itemised:\n{lines}\n"
                f"Total: {total:.2f} GBP. Delivery in six weeks.")
    return "I can only help with commissions."


# ---------------------------------------------------------------- steps

@trajdebug.step(kind="input")
def read_commission(client: str, brief: str) -> dict:
    return {"client": client, "brief": brief}


def make_steps(client: OpenAI, model: str):
    @trajdebug.step(kind="llm")
    def extract_brief(messages: list) -> str:
        reply = client.chat.completions.create(model=model, messages=messages)
        return reply.choices[0].message.content

    @trajdebug.step(kind="llm")
    def draft_quote(messages: list) -> str:
        reply = client.chat.completions.create(model=model, messages=messages)
        return reply.choices[0].message.content

    return extract_brief, draft_quote


@trajdebug.step(kind="parse")
def parse_brief(text: str) -> dict:
    spec = json.loads(text)
    raw = spec.pop("budget")
    amount = raw.split()[0]
    if SWITCH == 1:
        spec["budget_gbp"] = float(amount.split(",")[0])
    else:
        spec["budget_gbp"] = float(amount.replace(",", ""))
    return spec


@trajdebug.step(kind="retrieval")
def search_glass_catalogue(query: str) -> list:
    words = set(query.lower().split())
    hits = [c for c in CATALOGUE if words & set(f"{c['chamber']} {c['title']}".lower().split())]
    return hits[:3]


@trajdebug.step(kind="state")
def store_spec(spec: dict, hits: list) -> dict:
    kept = dict(spec)
    if SWITCH == 5:
        kept["chamber"] = hits[0]["chamber"]
    kept["glass_sku"] = next((h["sku"] for h in hits if h["chamber"] == kept["chamber"]), hits[0]["sku"])
    trajdebug.current_run().state["spec"] = kept
    return kept


@trajdebug.step(kind="tool")
def price_part(part: str, size: dict) -> dict:
    spec = trajdebug.current_run().state["spec"]
    if part == "tube":
        price = round(spec["tube_cm"] * RATES[spec["material"]] * 2.5, 2)
    elif part.startswith("mirror strip"):
        area_cm2 = size["length_cm"] * size["width_cm"]
        if SWITCH == 2 and part == "mirror strip 2":
            area_cm2 = area_cm2 * 100
        price = round(area_cm2 * 0.09 + 14, 2)
    elif part == "object chamber":
        price = CHAMBERS[spec["chamber"]]
    else:
        price = 38.0
    return {"part": part, "price_gbp": price, "size": size}


@trajdebug.step(kind="other")
def cut_plan(mirrors: int, tube_cm: float) -> list:
    length = tube_cm - 2.0
    start = 1
    stop = mirrors if SWITCH == 4 else mirrors + 1
    return [{"strip": k, "length_cm": length, "width_cm": 3.5} for k in range(start, stop)]


@trajdebug.step(kind="parse")
def parse_quote(text: str) -> dict:
    items = re.findall(r"^- (.+): ([0-9.]+) GBP$", text, flags=re.M)
    total = float(re.search(r"Total: ([0-9.]+) GBP", text).group(1))
    return {"items": [{"part": p, "price_gbp": float(v)} for p, v in items], "total_gbp": total}


class QuoteRejected(Exception):
    pass


@trajdebug.step(kind="condition")
def check_quote(quote: dict, brief: str) -> dict:
    spec = trajdebug.current_run().state["spec"]
    strips = [i for i in quote["items"] if i["part"].startswith("mirror strip")]
    if len(strips) != spec["mirrors"]:
        raise QuoteRejected(f"quote lists {len(strips)} mirror strips for a {spec['mirrors']}-mirror scope")
    if spec["tube_cm"] > LATHE_BED_CM:
        raise QuoteRejected(f"tube of {spec['tube_cm']} cm is longer than the {LATHE_BED_CM} cm lathe bed")
    if spec["chamber"] not in brief:
        raise QuoteRejected(f"quote prices a {spec['chamber']} chamber; the brief does not ask for one")
    if quote["total_gbp"] > spec["budget_gbp"]:
        raise QuoteRejected(f"total {quote['total_gbp']:.2f} GBP is over the client's budget of "
                            f"{spec['budget_gbp']:.2f} GBP")
    return {"accepted": True, "total_gbp": quote["total_gbp"]}


@trajdebug.step(kind="output")
def send_quote(client: str, quote_text: str) -> str:
    return f"sent to {client}"


def record(inp: dict, path: str, server) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    extract_brief, draft_quote = make_steps(client, server.model)
    with trajdebug.run(NAME, task=f"quote the commission of {inp['client']}", path=path):
        commission = read_commission(inp["client"], inp["brief"])
        text = extract_brief([
            {"role": "system", "content": "Extract the commission as JSON with client, mirrors, tube_cm, "
                                          "material, chamber and budget."},
            {"role": "user", "content": f"Client: {commission['client']}\n{commission['brief']}"},
        ])
        spec = parse_brief(text)
        hits = search_glass_catalogue(spec["chamber"])
        spec = store_spec(spec, hits)
        strips = cut_plan(spec["mirrors"], spec["tube_cm"])
        parts = [price_part("tube", {"length_cm": spec["tube_cm"]})]
        for strip in strips:
            parts.append(price_part(f"mirror strip {strip['strip']}", strip))
        parts.append(price_part("object chamber", {"sku": spec["glass_sku"]}))
        parts.append(price_part("end caps", {"pair": 1}))
        quote_text = draft_quote([
            {"role": "system", "content": "Write the quote letter from the priced parts."},
            {"role": "user", "content": json.dumps({"client": spec["client"], "parts": parts})},
        ])
        quote = parse_quote(quote_text)
        check_quote(quote, commission["brief"])
        send_quote(spec["client"], quote_text)
