"""Hot sauce co-packing runs: OpenTelemetry spans with OpenInference conventions, written as OTLP/JSON."""
from __future__ import annotations

import json
import re

from openai import OpenAI

from . import otlpkit
from .kit import active

AGENT, ROUTE, EXT = "hotsauce-copack-runs", "otlp", "json"
DOMAIN = "hot sauce co-packing runs"
SHAPE = "PO -> model extract -> parse -> recipe retrieval -> batch scaling -> stock per ingredient -> QA sub-agent (pH history, model review) -> order shortfall -> model plans line -> reserve -> book line -> batch sheet"

INPUTS = {
    "ember": "Co-pack PO from Ember & Salt: 2400 bottles of Habanero Mango, 150 ml each, ready by 2026-12-12.",
    "blaze": "Co-pack PO from Blaze Co: 1800 bottles of Chipotle Lime, 250 ml each, ready by 2026-12-15.",
    "r1": "Co-pack PO from Ember & Salt: 1200 bottles of Ghost Garlic, 100 ml each, ready by 2026-12-11.",
    "r2": "Co-pack PO from Red Fern: 3000 bottles of Chipotle Lime, 150 ml each, ready by 2026-12-18.",
    "r3": "Co-pack PO from Blaze Co: 900 bottles of Habanero Mango, 250 ml each, ready by 2026-12-14.",
    "r4": "Co-pack PO from Red Fern: 2000 bottles of Ghost Garlic, 150 ml each, ready by 2026-12-16.",
}
REFS = ["r1", "r2", "r3", "r4"]
RECIPES = [
    {"recipe": "R-HM-01", "client": "Ember & Salt", "sauce": "Habanero Mango", "per_litre_kg": {"habanero": 0.09, "mango": 0.35, "vinegar": 0.3}},
    {"recipe": "R-HM-02", "client": "Blaze Co", "sauce": "Habanero Mango", "per_litre_kg": {"habanero": 0.14, "mango": 0.3, "vinegar": 0.3}},
    {"recipe": "R-CL-01", "client": "Blaze Co", "sauce": "Chipotle Lime", "per_litre_kg": {"chipotle": 0.08, "lime": 0.2, "vinegar": 0.35}},
    {"recipe": "R-CL-02", "client": "Red Fern", "sauce": "Chipotle Lime", "per_litre_kg": {"chipotle": 0.06, "lime": 0.25, "vinegar": 0.35}},
    {"recipe": "R-GG-01", "client": "Ember & Salt", "sauce": "Ghost Garlic", "per_litre_kg": {"ghost pepper": 0.02, "garlic": 0.2, "vinegar": 0.4}},
    {"recipe": "R-GG-02", "client": "Red Fern", "sauce": "Ghost Garlic", "per_litre_kg": {"ghost pepper": 0.03, "garlic": 0.15, "vinegar": 0.4}},
]
STOCK_NOW = {"habanero": 40.0, "mango": 500.0, "vinegar": 900.0, "chipotle": 30.0, "lime": 400.0, "ghost pepper": 20.0, "garlic": 300.0}
STOCK_LAST_WEEK = {**STOCK_NOW, "chipotle": 60.0}
BUSY = {("L2", "2026-12-14")}

CASES = [
    ("zh-hotsauce-01", "unit_error", "ember", ("scale_batch", 1, "other"), "order_ingredient",
     "scale_batch divides millilitres by 100 instead of 1000, so the supplier order for the shortfall exceeds the weekly allocation."),
    ("zh-hotsauce-02", "stale_data", "blaze", ("ingredient_stock", 1, "tool"), "reserve_ingredients",
     "ingredient_stock answers from last week's stock count, so chipotle looks sufficient until the reservation."),
    ("zh-hotsauce-03", "swallowed_error", "blaze", ("book_line", 1, "tool"), "submit_batch_sheet",
     "book_line swallows the line scheduler's 409 and returns a tentative booking, which the batch sheet cannot confirm."),
    ("zh-hotsauce-04", "lossy_parsing", "ember", ("parse_po", 1, "other"), "submit_batch_sheet",
     "parse_po drops the bottle size, so the batch is scaled and labelled at the 250 ml default."),
    ("zh-hotsauce-05", "wrong_retrieval", "ember", ("recipe_search", 1, "retrieval"), "submit_batch_sheet",
     "recipe_search returns another client's Habanero Mango recipe, and the batch sheet refuses a recipe the PO's client does not own."),
]


def policy(request):
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Extract"):
        m = re.search(r"from (.+?): (\d+) bottles of (.+?), (\d+) ml each, ready by ([\d-]+)", user)
        return json.dumps({"client": m.group(1), "bottles": int(m.group(2)), "sauce": m.group(3),
                           "bottle_ml": int(m.group(4)), "due": m.group(5)})
    if system.startswith("Review"):
        data = json.loads(user)
        ok = all(3.2 <= r["ph"] <= 3.8 for r in data["history"])
        return json.dumps({"release": "approve" if ok else "hold", "reason": f"{len(data['history'])} past batches in range"})
    if system.startswith("Plan"):
        data = json.loads(user)
        line = "L1" if data["litres"] <= 300 else "L2"
        day = str(int(data["due"][-2:]) - 1).zfill(2)
        return json.dumps({"line": line, "date": data["due"][:-2] + day, "shift": "early"})
    return "{}"


def _kind(k):
    return {"openinference.span.kind": k}


class LineBusy(Exception):
    pass


def record(key: str, fault: str | None, out, server) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    tracer, spans, provider = otlpkit.tracer_for("copack-planner-service")
    text = INPUTS[key]

    def llm(name, system, user):
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        with tracer.start_as_current_span(name) as sp:
            r = client.chat.completions.create(model=server.model, messages=messages)
            answer = r.choices[0].message.content
            sp.set_attributes(otlpkit.llm_attrs(messages, answer, r.model))
        return answer

    def span(name, kind, inp):
        return tracer.start_as_current_span(name, attributes={**_kind(kind), "input.value": json.dumps(inp),
                                                              "input.mime_type": "application/json"})

    def done(sp, output):
        sp.set_attribute("output.value", json.dumps(output))
        sp.set_attribute("output.mime_type", "application/json")

    try:
        with tracer.start_as_current_span(AGENT, attributes={**_kind("AGENT"), "input.value": text, "agent.name": AGENT}) as root:
            raw = llm("extract_po", "Extract the purchase order as JSON.", text)
            with span("parse_po", "CHAIN", {"text": raw}) as sp:
                data = json.loads(raw)
                po = {"client": data["client"], "bottles": data["bottles"], "sauce": data["sauce"], "due": data["due"],
                      "bottle_ml": data.get("bottle_ml", 250)}
                if active("zh-hotsauce-04"):
                    po["bottle_ml"] = 250
                done(sp, po)
            with span("recipe_search", "RETRIEVER", {"query": f"{po['sauce']} for {po['client']}"}) as sp:
                hits = [r for r in RECIPES if r["sauce"] == po["sauce"]]
                if not active("zh-hotsauce-05"):
                    hits.sort(key=lambda r: r["client"] != po["client"])
                else:
                    hits.sort(key=lambda r: r["recipe"], reverse=True)
                for i, h in enumerate(hits):
                    sp.set_attribute(f"retrieval.documents.{i}.document.id", h["recipe"])
                    sp.set_attribute(f"retrieval.documents.{i}.document.content", json.dumps(h))
                recipe = hits[0]
                done(sp, hits)
            with span("scale_batch", "CHAIN", {"po": po, "recipe": recipe["recipe"]}) as sp:
                litres = po["bottles"] * po["bottle_ml"] / (100 if active("zh-hotsauce-01") else 1000)
                need = {k: round(v * litres, 1) for k, v in recipe["per_litre_kg"].items()}
                batch = {"litres": litres, "ingredients_kg": need}
                done(sp, batch)
            stock = {}
            for ing, kg in need.items():
                with span("ingredient_stock", "TOOL", {"ingredient": ing}) as sp:
                    table = STOCK_LAST_WEEK if active("zh-hotsauce-02") else STOCK_NOW
                    stock[ing] = table[ing]
                    done(sp, {"ingredient": ing, "on_hand_kg": table[ing], "counted": "2026-12-04"})
            short = {k: v for k, v in need.items() if v > stock[k]}
            with tracer.start_as_current_span("qa_agent", attributes={**_kind("AGENT"), "input.value": po["sauce"]}) as qa:
                with span("ph_history", "TOOL", {"sauce": po["sauce"]}) as sp:
                    history = [{"batch": f"{recipe['recipe']}-B{i}", "ph": 3.4 + i * 0.05} for i in range(3)]
                    done(sp, history)
                review = json.loads(llm("qa_review", "Review the pH history and decide release.",
                                        json.dumps({"sauce": po["sauce"], "history": history})))
                qa.set_attribute("output.value", json.dumps(review))
            incoming = {}
            for ing, kg in short.items():
                with span("order_ingredient", "TOOL", {"ingredient": ing, "kg": round(kg - stock[ing], 1)}) as sp:
                    incoming[ing] = round(kg - stock[ing], 1)
                    if incoming[ing] > 50:
                        raise ValueError(f"422 Unprocessable Entity: {{\"error\": \"over_allocation\", \"ingredient\": \"{ing}\", "
                                         f"\"requested_kg\": {incoming[ing]}, \"weekly_allocation_kg\": 50}}")
                    done(sp, {"ingredient": ing, "kg": incoming[ing], "arrives": "2026-12-08", "status": "confirmed"})
            plan = json.loads(llm("plan_line", "Plan the filling line and date as JSON.",
                                  json.dumps({"litres": batch["litres"], "due": po["due"]})))
            with span("reserve_ingredients", "TOOL", {"ingredients_kg": need}) as sp:
                for ing, kg in need.items():
                    if kg > STOCK_NOW[ing] + incoming.get(ing, 0):
                        raise ValueError(f"409 Conflict: {{\"error\": \"insufficient_stock\", \"ingredient\": \"{ing}\", "
                                         f"\"requested_kg\": {kg}, \"on_hand_kg\": {STOCK_NOW[ing]}}}")
                done(sp, {"reserved": need})
            with span("book_line", "TOOL", plan) as sp:
                try:
                    if (plan["line"], plan["date"]) in BUSY:
                        raise LineBusy(f"409 line {plan['line']} is booked on {plan['date']}")
                    booking = {"line": plan["line"], "date": plan["date"], "status": "confirmed", "ref": f"LB-{plan['line']}-{plan['date'][-2:]}"}
                except LineBusy:
                    if active("zh-hotsauce-03"):
                        booking = {"line": plan["line"], "date": plan["date"], "status": "tentative", "ref": None}
                    else:
                        booking = {"line": "L3", "date": plan["date"], "status": "confirmed", "ref": f"LB-L3-{plan['date'][-2:]}"}
                done(sp, booking)
            with span("submit_batch_sheet", "TOOL", {"po": po, "recipe": recipe["recipe"], "booking": booking}) as sp:
                ordered_ml = ORDERED_ML[po["client"], po["sauce"], po["bottles"]]
                if recipe["client"] != po["client"]:
                    raise ValueError(f"batch sheet rejected: recipe {recipe['recipe']} belongs to {recipe['client']}, PO client is {po['client']}")
                if po["bottle_ml"] != ordered_ml:
                    raise ValueError(f"batch sheet rejected: fill volume {po['bottle_ml']} ml does not match the PO's {ordered_ml} ml")
                if booking["status"] != "confirmed":
                    raise ValueError(f"batch sheet rejected: line {booking['line']} on {booking['date']} has no confirmed booking")
                done(sp, {"batch_sheet": f"BS-{recipe['recipe']}-{booking['date']}"})
            root.set_attribute("output.value", "batch sheet submitted")
    except ValueError:
        pass
    otlpkit.write(spans, provider, out)


ORDERED_ML = {}
for _v in INPUTS.values():
    _m = re.search(r"from (.+?): (\d+) bottles of (.+?), (\d+) ml", _v)
    ORDERED_ML[_m.group(1), _m.group(3), int(_m.group(2))] = int(_m.group(4))
