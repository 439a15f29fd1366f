"""promo_pricer: weekly promotion pricing for an electronics retailer (``openai`` client instrumented
with openinference-instrumentation-openai; the application's own AGENT / CHAIN / TOOL spans; OTLP JSON).

weekly_promo (AGENT): fetch_catalog -> parse_catalog_csv (CHAIN) -> per SKU a price_sku CHAIN:
competitor_price -> the model proposes a promo price (JSON, one running pricing chat) ->
parse_promo_json (CHAIN) -> record_promo (CHAIN, writes the promo book); then margin_guard reads
the promo book; the model publishes with publish_promotions (the pricing engine, which enforces
the merchandising rules).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any

from fakellm import Reply, last_result, messages, text_of
from harness import FAULT, AgentSpec, Case
from oi_spans import chain_span, span, tool_span
from routes import install, openai_client, otel_tracer, otlp_run


CATALOG = {
    "tv": [("TV-55Q", '55" QLED TV', "1,299.00", "872.40", 34), ("TV-43F", '43" Full HD TV', "379.00", "251.10", 80),
           ("TV-65O", '65" OLED TV', "2,199.00", "1,544.00", 12)],
    "audio": [("AU-SB2", "Dolby Atmos soundbar", "249.00", "162.00", 55), ("AU-BT7", "Portable speaker", "129.00", "71.50", 140),
              ("AU-NC9", "Noise-cancelling headphones", "349.00", "221.80", 60)],
    "laptops": [("LP-13C", '13" Chromebook', "429.00", "298.00", 45), ("LP-14A", '14" ultrabook', "1,049.00", "781.00", 22),
                ("LP-15G", '15" gaming laptop', "1,599.00", "1,188.00", 9)],
    "kitchen": [("KT-AF5", "5 L air fryer", "149.00", "88.00", 200), ("KT-EM2", "Espresso machine", "699.00", "452.00", 31),
                ("KT-BL1", "High-speed blender", "99.00", "54.00", 75)],
    "wearables": [("WR-W5", "Smartwatch 5", "399.00", "248.00", 66), ("WR-F2", "Fitness band 2", "79.00", "38.00", 310),
                  ("WR-E1", "Wireless earbuds", "179.00", "97.00", 150)],
    "cameras": [("CM-AC1", "Action camera", "329.00", "214.00", 48), ("CM-L35", "35 mm f/1.8 lens", "449.00", "301.00", 27),
                ("CM-M50", "Mirrorless camera body", "1,149.00", "840.00", 14)],
    "smart-home": [("SH-TH3", "Smart thermostat", "229.00", "142.00", 90), ("SH-DB1", "Video doorbell", "179.00", "104.00", 120),
                   ("SH-HB2", "Smart home hub", "129.00", "77.00", 64)],
    "monitors": [("MN-27Q", '27" QHD monitor', "329.00", "219.00", 40), ("MN-32U", '32" 4K monitor', "599.00", "402.00", 18),
                 ("MN-24F", '24" FHD monitor', "149.00", "96.00", 120)],
}
COMPETITOR = {
    "TV-55Q": 1149.00, "TV-43F": 349.00, "TV-65O": 1999.00, "AU-SB2": 229.00, "AU-BT7": 119.00, "AU-NC9": 299.00,
    "LP-13C": 399.00, "LP-14A": 999.00, "LP-15G": 1499.00, "KT-AF5": 129.00, "KT-EM2": 649.00, "KT-BL1": 89.00,
    "WR-W5": 369.00, "WR-F2": 69.00, "WR-E1": 159.00, "CM-M50": 1099.00, "CM-L35": 429.00, "CM-AC1": 299.00,
    "SH-TH3": 199.00, "SH-DB1": 169.00, "SH-HB2": 99.00, "MN-27Q": 309.00, "MN-32U": 549.00, "MN-24F": 139.00,
}
MIN_MARGIN_PCT = 4.0


class PublishRejected(Exception):
    """The pricing engine refused the promotion sheet."""


# -- tools and chains -----------------------------------------------------------------------------------


def fetch_catalog(category: str) -> str:
    FAULT.tick("fetch_catalog")
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    w.writerow(["sku", "name", "regular_price", "unit_cost", "stock"])
    for row in CATALOG[category]:
        w.writerow(row)
    return out.getvalue()


def _money(text: str) -> float:
    if FAULT.on("price_stops_at_comma"):
        return float(re.match(r"[\d.]+", text).group(0))  # "1,299.00" -> 1.0
    return float(text.replace(",", ""))


def parse_catalog_csv(text: str) -> list[dict[str, Any]]:
    FAULT.tick("parse_catalog_csv")
    rows = []
    for r in csv.DictReader(io.StringIO(text)):
        rows.append({"sku": r["sku"], "name": r["name"], "regular_price": _money(r["regular_price"]),
                     "unit_cost": _money(r["unit_cost"]), "stock": int(r["stock"])})
    if FAULT.on("price_stops_at_comma"):
        cut = [r for r in rows if r["regular_price"] < 10]
        if cut:
            FAULT.fire_tool("parse_catalog_csv", f'"regular_price": {cut[0]["regular_price"]}', kind="parse")
    return rows


def competitor_price(sku: str) -> dict[str, Any]:
    FAULT.tick("competitor_price")
    return {"sku": sku, "competitor": "ValueVolt", "price": COMPETITOR[sku]}


def parse_promo_json(text: str) -> dict[str, Any]:
    FAULT.tick("parse_promo_json")
    obj = json.loads(re.search(r"\{.*\}", text, flags=re.S).group(0))
    return {"sku": obj["sku"], "promo_price": float(obj["promo_price"])}


PROMO_BOOK: dict[str, dict[str, Any]] = {}


def record_promo(entry: dict[str, Any]) -> dict[str, Any]:
    """Write one SKU's promo into the promo book (prices are stored as shelf prices)."""
    FAULT.tick("record_promo")
    price = entry["promo_price"]
    if FAULT.on("promo_book_rounds_to_whole") and price != round(price):
        price = float(round(price))  # the "shelf price" normaliser rounds to whole units
        if not FAULT.fired:
            FAULT.fire_tool("record_promo", f'"promo_price": {price}', kind="other")
    PROMO_BOOK[entry["sku"]] = {"sku": entry["sku"], "promo_price": price, "regular_price": entry["regular_price"],
                                "unit_cost": entry["unit_cost"]}
    return PROMO_BOOK[entry["sku"]]


def margin_guard(skus: list[str]) -> dict[str, Any]:
    FAULT.tick("margin_guard")
    items = []
    for sku in skus:
        e = PROMO_BOOK[sku]
        margin = (e["promo_price"] - e["unit_cost"]) / e["promo_price"] * 100 if e["promo_price"] else -100.0
        items.append({**e, "margin_pct": round(margin, 1)})
    return {"items": items}


def publish_promotions(week: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    FAULT.tick("publish_promotions")
    for it in items:
        sku, promo, regular = it["sku"], float(it["promo_price"]), float(it["regular_price"])
        cost = next(float(r[3].replace(",", "")) for rows in CATALOG.values() for r in rows if r[0] == sku)
        if promo >= regular:
            raise PublishRejected(f"{sku}: promo {promo:.2f} is not below the regular price {regular:.2f}")
        margin = (promo - cost) / promo * 100
        if margin < MIN_MARGIN_PCT:
            raise PublishRejected(f"{sku}: promo {promo:.2f} leaves {margin:.1f}% margin on a {cost:.2f} unit cost (floor {MIN_MARGIN_PCT}%)")
        if f"{promo:.2f}"[-3:] != ".99":
            raise PublishRejected(f"{sku}: shelf price {promo:.2f} breaks the .99 price-ending rule for promotional tickets")
    return {"published": True, "week": week, "items": len(items), "batch": f"PB-{week}-{len(items):02d}"}


PUBLISH_TOOL = [{"type": "function", "function": {
    "name": "publish_promotions", "description": "Publish the week's promotion sheet to the pricing engine.",
    "parameters": {"type": "object", "properties": {"week": {"type": "string"}, "items": {"type": "array", "items": {"type": "object"}}},
                   "required": ["week", "items"]}}}]

PRICER = ("You price weekly promotions for Circuit Lane Electronics. For each SKU, propose a promotional shelf price: take the "
          "target discount off the regular price, never above the competitor's price minus one pound, and end it in .99. "
          'Answer with JSON {"sku": ..., "promo_price": ..., "rationale": ...}.')
PUBLISHER = "You publish the promotion sheet with publish_promotions, using the margin guard's figures as they are."


# -- the scripted model -------------------------------------------------------------------------------------


def promo_for(regular: float, competitor: float, discount_pct: float) -> float:
    x = min(regular * (1 - discount_pct / 100), competitor - 1.0)
    return math.floor(x) - 0.01 if x >= 1 else round(x, 2)


def policy(body: dict[str, Any]) -> Reply:
    msgs = messages(body)
    if msgs[0]["content"].startswith("You publish"):
        guard = json.loads(re.search(r"Margin guard: (\{.*\})", text_of(msgs[1]), flags=re.S).group(1))
        week = re.search(r"week (\S+)", text_of(msgs[1])).group(1)
        if last_result(body, "publish_promotions") is not None:
            return Reply(content=f"Week {week} promotions are live.")
        return Reply(tool_calls=[("publish_promotions", {"week": week, "items": [
            {k: it[k] for k in ("sku", "promo_price", "regular_price", "margin_pct")} for it in guard["items"]]})])
    ask = text_of(msgs[-1])
    sku = re.search(r"SKU (\S+)", ask).group(1)
    regular = float(re.search(r"regular price ([\d.]+)", ask).group(1))
    comp = float(re.search(r"competitor price ([\d.]+)", ask).group(1))
    disc = float(re.search(r"target discount ([\d.]+)%", ask).group(1))
    if FAULT.on("competitor_price_from_previous_sku"):
        earlier = [text_of(m) for m in msgs if m.get("role") == "user"][:-1]
        if len(earlier) == 1:  # pricing the second SKU, with the first still in the chat
            prev = float(re.search(r"competitor price ([\d.]+)", earlier[-1]).group(1))
            if promo_for(regular, prev, disc) != promo_for(regular, comp, disc):
                comp = prev
                FAULT.fire_llm(f'"promo_price": {promo_for(regular, comp, disc)}')
    promo = promo_for(regular, comp, disc)
    return Reply(content=json.dumps({"sku": sku, "promo_price": promo,
                                     "rationale": f"{disc:g}% off {regular:.2f}, matched under competitor {comp:.2f}"}))


# -- the agent ---------------------------------------------------------------------------------------------


def price_week(req: dict[str, Any]) -> str:
    tracer = otel_tracer("circuitlane.promo_pricer")
    client = openai_client()
    PROMO_BOOK.clear()
    with span(tracer, "weekly_promo", "AGENT", input=req, agent__name="promo_pricer") as root:
        csv_text = tool_span(tracer, "fetch_catalog", {"category": req["category"]}, fetch_catalog)
        rows = chain_span(tracer, "parse_catalog_csv", csv_text, parse_catalog_csv)
        chat: list[dict[str, Any]] = [{"role": "system", "content": PRICER}]
        for row in rows:
            with span(tracer, "price_sku", "CHAIN", input={"sku": row["sku"]}) as ps:
                comp = tool_span(tracer, "competitor_price", {"sku": row["sku"]}, competitor_price)
                chat.append({"role": "user", "content": f"SKU {row['sku']} ({row['name']}): regular price {row['regular_price']:.2f}, "
                                                        f"competitor price {comp['price']:.2f}, target discount {req['discount_pct']}%."})
                resp = client.chat.completions.create(model="gpt-4o-mini", messages=chat, temperature=0)
                content = resp.choices[0].message.content
                chat.append({"role": "assistant", "content": content})
                promo = chain_span(tracer, "parse_promo_json", content, parse_promo_json)
                ps.output(chain_span(tracer, "record_promo", {**promo, "regular_price": row["regular_price"],
                                                              "unit_cost": row["unit_cost"]}, record_promo))
        guard = tool_span(tracer, "margin_guard", {"skus": [r["sku"] for r in rows]}, margin_guard)
        pub: list[dict[str, Any]] = [{"role": "system", "content": PUBLISHER},
                                     {"role": "user", "content": f"Publish week {req['week']}.\nMargin guard: {json.dumps(guard)}"}]
        for _ in range(4):
            resp = client.chat.completions.create(model="gpt-4o-mini", messages=pub, tools=PUBLISH_TOOL, temperature=0)
            msg = resp.choices[0].message
            if not msg.tool_calls:
                return root.output(msg.content)
            pub.append({"role": "assistant", "content": msg.content, "tool_calls": [tc.model_dump(exclude_none=True) for tc in msg.tool_calls]})
            for tc in msg.tool_calls:
                out = tool_span(tracer, "publish_promotions", json.loads(tc.function.arguments), publish_promotions, call_id=tc.id)
                pub.append({"role": "tool", "tool_call_id": tc.id, "content": json.dumps(out)})
        raise RuntimeError("publisher did not finish")


def execute(inp: dict[str, Any], path: Path, key: str) -> str:
    install(policy)
    return otlp_run(lambda: price_week(inp), path, key=key)


SPEC = AgentSpec(
    name="promo_pricer",
    route="otlp",
    domain="retail pricing and promotions",
    summary="openai + OpenInference: weekly_promo AGENT: fetch_catalog, parse_catalog_csv, per-SKU price_sku CHAIN "
            "(competitor_price, ChatCompletion, parse_promo_json, record_promo), margin_guard, ChatCompletion -> publish_promotions",
    execute=execute,
    ext="json",
    passing=[
        {"category": "audio", "week": "2026-W12", "discount_pct": 15},
        {"category": "kitchen", "week": "2026-W12", "discount_pct": 20},
        {"category": "wearables", "week": "2026-W13", "discount_pct": 15},
        {"category": "tv", "week": "2026-W13", "discount_pct": 12},
        {"category": "monitors", "week": "2026-W14", "discount_pct": 10},
    ],
    cases=[
        Case(
            slug="price_cut_at_thousands_separator",
            input={"category": "laptops", "week": "2026-W14", "discount_pct": 10},
            fault="price_stops_at_comma",
            fault_kind="lossy_parsing",
            description="parse_catalog_csv reads money with a pattern that stops at the thousands separator: the "
                        "ultrabook's 1,049.00 regular price becomes 1.0 (the gaming laptop's too). The model prices the "
                        "ultrabook at 0.90, the promo book and the margin guard carry it, and the pricing engine rejects the sheet.",
            failure="publish_promotions",
            path=["ChatCompletion", "parse_promo_json", "record_promo", "margin_guard", "ChatCompletion", "publish_promotions"],
        ),
        Case(
            slug="shelf_price_rounded_in_promo_book",
            input={"category": "smart-home", "week": "2026-W15", "discount_pct": 10},
            fault="promo_book_rounds_to_whole",
            fault_kind="bad_memory_write",
            description="record_promo's shelf-price normaliser rounds the price it writes into the promo book to whole "
                        "pounds (198.99 -> 199.0). margin_guard reads the book, the model publishes its figures and the "
                        "pricing engine rejects the .99 price-ending rule.",
            failure="publish_promotions",
            path=["margin_guard", "ChatCompletion", "publish_promotions"],
        ),
        Case(
            slug="previous_competitor_price_matched",
            input={"category": "cameras", "week": "2026-W15", "discount_pct": 5},
            fault="competitor_price_from_previous_sku",
            fault_kind="context_pollution",
            description="In the running pricing chat, the model prices the 35 mm lens against the previous SKU's "
                        "competitor price (the action camera's 299.00) instead of the lens's own 429.00, offering it at "
                        "297.99, below its 301.00 cost; the promo book and margin guard carry it and the pricing engine "
                        "rejects the margin.",
            failure="publish_promotions",
            path=["parse_promo_json", "record_promo", "margin_guard", "ChatCompletion", "publish_promotions"],
        ),
    ],
)
