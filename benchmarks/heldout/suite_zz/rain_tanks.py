"""Rainwater tank installation (OpenTelemetry + OpenInference, OTLP/JSON): survey the property, size the
tank from rainfall, pick a product with a model, route and book the crew, check stock or size a pump, and
place the order with the rebate."""

from __future__ import annotations

import json
import re
from pathlib import Path

from openai import OpenAI

from .common import Case, OISpans, user_json
from .kit import active

AGENT = "rain_tanks"
ROUTE = "otlp"
DOMAIN = "rainwater tank installation"
SYSTEM = "[rain-tanks] You choose rainwater harvesting tanks for installers. Reply with JSON only."

PROPS = {
    "terrace": {"address": "14 Weir Terrace", "postcode": "BS3 1PL", "roof_m2": 62, "placement": "above-ground",
                "lift_m": 0, "week": "2027-W18"},
    "farmhouse": {"address": "Highfield Farmhouse", "postcode": "EX20 2QT", "roof_m2": 180, "placement": "underground",
                  "lift_m": 0, "week": "2027-W19"},
    "bungalow": {"address": "3 Linden Close", "postcode": "NR4 7TJ", "roof_m2": 120, "placement": "above-ground",
                 "lift_m": 6, "week": "2027-W18"},
    "cottage": {"address": "Rose Cottage", "postcode": "GL7 5AA", "roof_m2": 75, "placement": "above-ground",
                "lift_m": 0, "week": "2027-W20"},
    "barn": {"address": "Old Barn, Coombe", "postcode": "TQ9 6NS", "roof_m2": 180, "placement": "underground",
             "lift_m": 4, "week": "2027-W21"},
    "school": {"address": "Elm Park School", "postcode": "LS6 3HB", "roof_m2": 150, "placement": "above-ground",
               "lift_m": 9, "week": "2027-W19"},
    "chapel": {"address": "Chapel House", "postcode": "CF5 2LN", "roof_m2": 95, "placement": "underground",
               "lift_m": 0, "week": "2027-W22"},
}
INPUTS = PROPS
REFS = ["cottage", "barn", "school", "chapel"]
RAIN = {"BS3": 820, "EX20": 1250, "NR4": 610, "GL7": 760, "TQ9": 1100, "LS6": 700, "CF5": 1150}
CATALOGUE = [
    {"sku": "SL-1500", "type": "above-ground", "litres": 1500}, {"sku": "SL-2500", "type": "above-ground", "litres": 2500},
    {"sku": "SL-3500", "type": "above-ground", "litres": 3500}, {"sku": "SL-5000", "type": "above-ground", "litres": 5000},
    {"sku": "UG-3000", "type": "underground", "litres": 3000}, {"sku": "UG-5000", "type": "underground", "litres": 5000},
    {"sku": "UG-7500", "type": "underground", "litres": 7500}, {"sku": "UG-10000", "type": "underground", "litres": 10000},
    {"sku": "UG-12000", "type": "underground", "litres": 12000},
]
LIVE_STOCK = {"UG-10000": 0}
PUMPS = [{"pump": "P-12", "head_m": 12}, {"pump": "P-20", "head_m": 20}, {"pump": "P-30", "head_m": 30}]
CREWS = {"UG": ["underground", "above-ground"], "AG": ["above-ground"]}

CASES = [
    Case("rt_fmt", AGENT, "format_drift", "rainfall_stats", 1, "submit_order",
         "rainfall_stats answered rainfall as a text in metres, and sizing read 0.82 as millimetres", "terrace"),
    Case("rt_crew", AGENT, "swallowed_error", "confirm_crew", 1, "submit_order",
         "confirm_crew took the crew calendar's lock error as a booking instead of asking again", "terrace"),
    Case("rt_stock", AGENT, "stale_data", "check_stock", 1, "submit_order",
         "check_stock answered from the nightly depot snapshot that still listed the tank in stock", "farmhouse"),
    Case("rt_route", AGENT, "wrong_routing", "route_installation", 1, "submit_order",
         "route_installation sent an underground tank to the above-ground crew", "farmhouse"),
    Case("rt_pump", AGENT, "unit_error", "size_pump", 1, "submit_order",
         "size_pump converted a lift already in metres as if it were feet and chose a pump too weak", "bungalow"),
]


class OrderRejected(Exception):
    pass


def _rule_litres(prop: dict) -> float:
    return prop["roof_m2"] * RAIN[prop["postcode"].split()[0]] * 0.8 * 0.05


def policy(body: dict) -> str:
    ask = user_json(body)
    if ask.get("ask") == "pick":
        fits = [p for p in ask["products"] if p["litres"] >= ask["target_litres"]]
        pick = min(fits, key=lambda p: p["litres"]) if fits else max(ask["products"], key=lambda p: p["litres"])
        return json.dumps({"sku": pick["sku"], "litres": pick["litres"], "reason": "smallest that meets the target"})
    return "{}"


def record(key: str, out: Path, base_url: str) -> None:
    client = OpenAI(base_url=base_url, api_key="local", max_retries=0)
    prop = INPUTS[key]
    oi = OISpans("rain-tank-installer")
    calendar = {"calls": 0}
    try:
        with oi.span("rain-tank-installer", "AGENT", f"rainwater tank for {prop['address']}",
                     **{"agent.name": "rain-tank-installer"}) as top:
            with oi.span("get_property", "TOOL", {"address": prop["address"]}, **{"tool.name": "get_property"}) as s:
                s.output = survey = dict(prop)
            with oi.span("check_planning_rules", "TOOL", {"postcode": survey["postcode"], "placement":
                         survey["placement"]}, **{"tool.name": "check_planning_rules"}) as s:
                s.output = {"permitted_development": True, "max_height_m": 2.5 if survey["placement"] ==
                            "above-ground" else None}
            with oi.span("estimate_demand", "CHAIN", {"address": survey["address"]}) as s:
                s.output = {"toilet_flushes_day": 12, "garden_l_day": 40, "demand_l_year": (12 * 6 + 40) * 365}
            with oi.span("rainfall_stats", "TOOL", {"postcode": survey["postcode"]}, **{"tool.name": "rainfall_stats"}) as s:
                mm = RAIN[survey["postcode"].split()[0]]
                s.output = stats = ({"annual_rainfall": f"{mm / 1000:.2f} m"} if active("rt_fmt")
                                    else {"annual_mm": mm, "years": "1991-2020"})
            with oi.span("size_tank", "CHAIN", {"roof_m2": survey["roof_m2"], "rainfall": stats}) as s:
                rain = stats.get("annual_mm")
                if rain is None:
                    rain = float(re.findall(r"[\d.]+", str(stats.get("annual_rainfall")))[0])
                yearly = survey["roof_m2"] * rain * 0.8
                s.output = sizing = {"annual_yield_l": round(yearly), "target_litres": max(round(yearly * 0.05), 1000)}
            with oi.span("search_catalogue", "RETRIEVER", f"{survey['placement']} tanks") as s:
                s.output = products = [p for p in CATALOGUE if p["type"] == survey["placement"]]
            text = oi.llm(client, "recommend_tank", SYSTEM, json.dumps(
                {"ask": "pick", "target_litres": sizing["target_litres"], "products": products}))
            with oi.span("parse_recommendation", "CHAIN", text) as s:
                data = json.loads(text)
                s.output = product = next(p for p in CATALOGUE if p["sku"] == data["sku"])
            for supplier in ("Aquaharvest", "TankDirect"):
                with oi.span("supplier_price", "TOOL", {"supplier": supplier, "sku": product["sku"]},
                             **{"tool.name": "supplier_price"}) as s:
                    s.output = {"supplier": supplier, "sku": product["sku"],
                                "price_gbp": product["litres"] // 4 + (120 if supplier == "TankDirect" else 95)}
            with oi.span("route_installation", "CHAIN", {"product": product, "property": survey}) as s:
                crew = "UG" if product["type"] == "underground" else "AG"
                if active("rt_route"):
                    crew = "UG" if survey["lift_m"] > 0 else "AG"
                s.output = {"crew_type": crew}

            def book(n: int) -> dict:
                with oi.span("book_crew", "TOOL", {"crew": crew, "week": survey["week"], "attempt": n},
                             **{"tool.name": "book_crew"}) as b:
                    calendar["calls"] += 1
                    if survey["address"].startswith("14") and calendar["calls"] == 1:
                        b.output = {"error": "calendar locked by another dispatcher, try again"}
                    else:
                        b.output = {"booking": f"CB-{crew}-{survey['week'][-2:]}{len(survey['address'])}",
                                    "crew": crew}
                return b.output

            reply = book(1)
            with oi.span("confirm_crew", "CHAIN", reply) as s:
                if "error" in reply:
                    reply = ({"booking": None, "crew": crew} if active("rt_crew") else book(2))
                s.output = crew_booking = reply
            if product["type"] == "underground":
                for _ in range(3):
                    with oi.span("check_stock", "TOOL", {"sku": product["sku"]}, **{"tool.name": "check_stock"}) as s:
                        snapshot = active("rt_stock")
                        qty = 4 if snapshot else LIVE_STOCK.get(product["sku"], 6)
                        s.output = stock = {"sku": product["sku"], "available": qty,
                                            "as_of": "2027-04-01T02:00Z" if snapshot else "2027-04-28T09:12Z"}
                    if stock["available"] > 0:
                        break
                    with oi.span("swap_product", "CHAIN", {"sku": product["sku"], "products": products}) as s:
                        bigger = [p for p in products if p["litres"] > product["litres"]]
                        s.output = product = min(bigger, key=lambda p: p["litres"])
            pump = None
            if survey["lift_m"] > 0:
                with oi.span("size_pump", "CHAIN", {"lift_m": survey["lift_m"], "pumps": PUMPS}) as s:
                    lift = survey["lift_m"] * 0.3048 if active("rt_pump") else survey["lift_m"]
                    need = lift + 10
                    s.output = pump = min((p for p in PUMPS if p["head_m"] >= need), key=lambda p: p["head_m"])
            order = {"address": survey["address"], "sku": product["sku"], "crew": crew_booking, "pump": pump}
            with oi.span("submit_order", "TOOL", order, **{"tool.name": "submit_order"}) as s:
                s.output = _submit(prop, order)
            top.output = s.output
    except OrderRejected:
        pass
    oi.write(out)


def _submit(prop: dict, order: dict) -> dict:
    product = next(p for p in CATALOGUE if p["sku"] == order["sku"])
    rule = _rule_litres(prop)
    if not 0.9 * rule <= product["litres"] <= 1.6 * rule + 1500:
        raise OrderRejected(f"HTTP 422 rebate scheme: {product['sku']} holds {product['litres']} L; the 5% rule "
                            f"gives {rule:,.0f} L for a {prop['roof_m2']} m2 roof")
    if not order["crew"].get("booking"):
        raise OrderRejected("HTTP 409 orders API: no crew booking reference on the order")
    if product["type"] not in CREWS[order["crew"]["crew"]]:
        raise OrderRejected(f"HTTP 422 orders API: crew type {order['crew']['crew']} is not certified for "
                            f"{product['type']} installation")
    if LIVE_STOCK.get(product["sku"], 6) == 0:
        raise OrderRejected(f"HTTP 409 depot: {product['sku']} is out of stock (0 available since 2027-04-02)")
    if prop["lift_m"] > 0:
        need = prop["lift_m"] + 10
        if order["pump"] is None or order["pump"]["head_m"] < need:
            raise OrderRejected(f"HTTP 422 orders API: pump {order['pump'] and order['pump']['pump']} is too weak "
                                f"for a {prop['lift_m']} m lift plus 10 m toilet pressure ({need} m head)")
    return {"order": f"RT-{4400 + len(prop['address'])}", "status": "placed"}
