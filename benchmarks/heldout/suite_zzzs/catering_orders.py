"""A patisserie's catering orders, traced with OpenTelemetry: OpenInference spans for the model calls (the openai
client instrumented), the agent's own spans for parsing, routing, a menu retriever, per-dish yield tools, an order
book (memory) write, totals, supplier and rota tools, and the confirmation check. Exported as OTLP JSON."""
from __future__ import annotations

import json

from opentelemetry.trace import Status, StatusCode

from suite_common import chat, client, last_user, otlp, otlp_write, set_output, span_attrs

RUN_NAME = "catering-order-desk"
ROUTE = "otlp"
DOMAIN = "patisserie's catering orders"
SHAPE = ("~16-22 spans: model reads the enquiry, parse chain, kitchen router, menu retriever, a yield tool per dish, "
         "order-book write, ingredient totals, supplier order, kitchen rota, model drafts the confirmation, "
         "confirmation check")

SWITCHES = ["BUTTER_GRAMS", "BOOK_RECEIVED_DATE", "DIET_DROPPED", "ROUTE_BY_EVENT", "MENU_TOP_TWO"]
BUTTER_GRAMS = BOOK_RECEIVED_DATE = DIET_DROPPED = ROUTE_BY_EVENT = MENU_TOP_TWO = False

INPUTS = [
    {"enquiry": "PC-901", "received": "2026-11-20", "text": "Wedding on 12 Dec 2026 for 180 guests: macarons, "
     "opera slices, fruit tartlets, choux; 12 guests gluten-free."},
    {"enquiry": "PC-902", "received": "2026-11-21", "text": "Office party 5 Dec 2026, 60 people: eclairs, madeleines, lemon tarts."},
    {"enquiry": "PC-903", "received": "2026-11-22", "text": "Christening 19 Dec 2026, 45 guests: choux, financiers, fruit tartlets; 4 vegan."},
    {"enquiry": "PC-904", "received": "2026-11-23", "text": "Gala dinner 9 Jan 2027, 220 covers: opera slices, macarons, mille-feuille."},
    {"enquiry": "PC-905", "received": "2026-11-24", "text": "Book launch 14 Dec 2026, 70 guests: madeleines, macarons, eclairs, lemon tarts."},
]
READ = {
    "PC-901": {"event": "wedding", "date": "2026-12-12", "guests": 180, "dishes": ["macarons", "opera slices", "fruit tartlets", "choux"], "dietary": {"gluten-free": 12}},
    "PC-902": {"event": "office party", "date": "2026-12-05", "guests": 60, "dishes": ["eclairs", "madeleines", "lemon tarts"], "dietary": {}},
    "PC-903": {"event": "christening", "date": "2026-12-19", "guests": 45, "dishes": ["choux", "financiers", "fruit tartlets"], "dietary": {"vegan": 4}},
    "PC-904": {"event": "gala dinner", "date": "2027-01-09", "guests": 220, "dishes": ["opera slices", "macarons", "mille-feuille"], "dietary": {}},
    "PC-905": {"event": "book launch", "date": "2026-12-14", "guests": 70, "dishes": ["madeleines", "macarons", "eclairs", "lemon tarts"], "dietary": {}},
}
MENU = {
    "macarons": {"portions_per_batch": 60, "butter_kg": 0.0, "flour_kg": 0.0, "almond_kg": 0.9},
    "opera slices": {"portions_per_batch": 40, "butter_kg": 1.1, "flour_kg": 0.3, "almond_kg": 0.5},
    "fruit tartlets": {"portions_per_batch": 36, "butter_kg": 0.8, "flour_kg": 1.2, "almond_kg": 0.2},
    "choux": {"portions_per_batch": 50, "butter_kg": 0.6, "flour_kg": 0.7, "almond_kg": 0.0},
    "eclairs": {"portions_per_batch": 40, "butter_kg": 0.6, "flour_kg": 0.7, "almond_kg": 0.0},
    "madeleines": {"portions_per_batch": 48, "butter_kg": 0.9, "flour_kg": 0.9, "almond_kg": 0.0},
    "lemon tarts": {"portions_per_batch": 30, "butter_kg": 0.7, "flour_kg": 1.0, "almond_kg": 0.1},
    "financiers": {"portions_per_batch": 48, "butter_kg": 1.0, "flour_kg": 0.4, "almond_kg": 0.6},
    "mille-feuille": {"portions_per_batch": 32, "butter_kg": 1.4, "flour_kg": 1.1, "almond_kg": 0.0},
}
KITCHENS = {"plated": 250, "buffet": 150, "boxed": 80}
DAIRY_DROP_LIMIT_KG = 60
ORDER_BOOK: dict = {}


def policy(request):
    prompt = last_user(request)
    if prompt.startswith("Read this catering enquiry"):
        cid = prompt.split()[4].rstrip(":")
        return json.dumps(READ[cid])
    if prompt.startswith("Draft the confirmation"):
        d = json.loads(prompt.split("\n", 1)[1])
        return f"Dear client, we confirm {d['guests']} covers on {d['date']} from our {d['kitchen']} kitchen: {', '.join(d['dishes'])}."
    return "ok"


def record(inp, path, server):
    server.use(policy)
    ORDER_BOOK.clear()
    provider, _ = otlp()
    tracer = provider.get_tracer("catering-order-desk")
    cl = client(server)
    try:
        with tracer.start_as_current_span(RUN_NAME, attributes=span_attrs("AGENT", inp, **{"agent.name": RUN_NAME, "session.id": inp["enquiry"]})):
            text = chat(cl, server, [{"role": "system", "content": "You read patisserie catering enquiries into JSON."},
                                     {"role": "user", "content": f"Read this catering enquiry {inp['enquiry']}: {inp['text']}"}]).content
            with tracer.start_as_current_span("parse_enquiry", attributes=span_attrs("CHAIN", text)) as sp:
                raw = json.loads(text)
                order = {"event": raw["event"], "date": raw["date"], "guests": int(raw["guests"]), "dishes": list(raw["dishes"])}
                if not DIET_DROPPED:
                    order["dietary"] = dict(raw["dietary"])
                else:
                    order["dietary"] = {k: v for k, v in raw["dietary"].items() if k in ("vegan", "vegetarian")}
                set_output(sp, order)
            with tracer.start_as_current_span("route_kitchen", attributes=span_attrs("CHAIN", {"event": order["event"], "guests": order["guests"]})) as sp:
                if ROUTE_BY_EVENT:
                    kitchen = "plated" if order["event"] in ("gala dinner",) else ("boxed" if order["guests"] < 100 or order["event"] == "wedding" else "buffet")
                else:
                    kitchen = "plated" if order["guests"] > 150 else ("buffet" if order["guests"] > 50 else "boxed")
                set_output(sp, kitchen)
            with tracer.start_as_current_span("menu_search", attributes=span_attrs("RETRIEVER", {"dishes": order["dishes"]})) as sp:
                hits = [d for d in order["dishes"] if d in MENU]
                if MENU_TOP_TWO:
                    hits = hits[:2]
                for i, d in enumerate(hits):
                    sp.set_attribute(f"retrieval.documents.{i}.document.id", d)
                    sp.set_attribute(f"retrieval.documents.{i}.document.content", json.dumps({"dish": d, **MENU[d]}))
                    sp.set_attribute(f"retrieval.documents.{i}.document.score", 1.0 - i * 0.05)
            yields = {}
            for i, d in enumerate(hits):
                with tracer.start_as_current_span("recipe_yield", attributes=span_attrs("TOOL", {"dish": d, "guests": order["guests"]}, **{"tool.name": "recipe_yield"})) as sp:
                    card = MENU[d]
                    batches = -(-order["guests"] // card["portions_per_batch"])
                    butter = card["butter_kg"]
                    if BUTTER_GRAMS and i == 1:
                        butter = butter * 1000
                    yields[d] = {"batches": batches, "butter_kg": butter, "flour_kg": card["flour_kg"], "almond_kg": card["almond_kg"]}
                    set_output(sp, {"dish": d, **yields[d]})
            with tracer.start_as_current_span("order_book_write", attributes=span_attrs("TOOL", {"enquiry": inp["enquiry"]}, **{"tool.name": "order_book_write"})) as sp:
                entry = {"enquiry": inp["enquiry"], "date": inp["received"] if BOOK_RECEIVED_DATE else order["date"],
                         "guests": order["guests"], "dishes": list(yields), "dietary": order["dietary"], "kitchen": kitchen}
                ORDER_BOOK[inp["enquiry"]] = entry
                set_output(sp, entry)
            with tracer.start_as_current_span("ingredient_totals", attributes=span_attrs("CHAIN", yields)) as sp:
                totals = {k: round(sum(y["batches"] * y[k] for y in yields.values()), 2) for k in ("butter_kg", "flour_kg", "almond_kg")}
                set_output(sp, totals)
            with tracer.start_as_current_span("supplier_order", attributes=span_attrs("TOOL", totals, **{"tool.name": "supplier_order"})) as sp:
                if totals["butter_kg"] > DAIRY_DROP_LIMIT_KG:
                    raise ValueError(f"dairy: {totals['butter_kg']} kg of butter is over the {DAIRY_DROP_LIMIT_KG} kg drop limit")
                set_output(sp, {"po": "PO-" + inp["enquiry"][3:], **totals})
            book = ORDER_BOOK[inp["enquiry"]]
            with tracer.start_as_current_span("kitchen_rota", attributes=span_attrs("TOOL", {"kitchen": book["kitchen"], "date": book["date"], "guests": book["guests"]}, **{"tool.name": "kitchen_rota"})) as sp:
                if book["guests"] > KITCHENS[book["kitchen"]]:
                    raise ValueError(f"rota: the {book['kitchen']} kitchen turns out {KITCHENS[book['kitchen']]} covers a day, the order has {book['guests']}")
                set_output(sp, {"kitchen": book["kitchen"], "date": book["date"], "chefs": 2 + book["guests"] // 60})
            text = chat(cl, server, [{"role": "user", "content": "Draft the confirmation:\n" + json.dumps(
                {"guests": book["guests"], "date": book["date"], "kitchen": book["kitchen"], "dishes": book["dishes"]})}]).content
            with tracer.start_as_current_span("confirm_order", attributes=span_attrs("TOOL", {"enquiry": inp["enquiry"], "letter": text}, **{"tool.name": "confirm_order"})) as sp:
                asked = READ[inp["enquiry"]]
                missing = [d for d in asked["dishes"] if d not in book["dishes"]]
                if missing:
                    raise ValueError(f"confirmation: enquiry {inp['enquiry']} asks for {', '.join(missing)}, not on the order")
                if book["dietary"] != asked["dietary"]:
                    raise ValueError(f"confirmation: enquiry {inp['enquiry']} asks for {asked['dietary']} special covers, order has {book['dietary']}")
                if book["date"] != asked["date"]:
                    raise ValueError(f"confirmation: event on {asked['date']}, order booked for {book['date']}")
                set_output(sp, {"confirmed": inp["enquiry"]})
    except ValueError:
        pass
    otlp_write(path)


CASES = [
    {"id": "zzzs-cater-01", "input": 0, "switch": "BUTTER_GRAMS", "fault_kind": "unit_error",
     "root": {"name": "recipe_yield", "occurrence": 2, "kind": "tool"}, "failure": {"name": "supplier_order", "occurrence": 1},
     "description": "The yield of the opera slices gives their butter in grams (1100) in the butter_kg field, so the butter total runs to thousands of kilograms."},
    {"id": "zzzs-cater-02", "input": 2, "switch": "BOOK_RECEIVED_DATE", "fault_kind": "bad_memory_write",
     "root": {"name": "order_book_write", "occurrence": 1, "kind": "tool"}, "failure": {"name": "confirm_order", "occurrence": 1},
     "description": "The order book entry for PC-903 is written with the date the enquiry came in (2026-11-22) instead of the christening's date (2026-12-19)."},
    {"id": "zzzs-cater-03", "input": 0, "switch": "DIET_DROPPED", "fault_kind": "lossy_parsing",
     "root": {"name": "parse_enquiry", "occurrence": 1, "kind": "other"}, "failure": {"name": "confirm_order", "occurrence": 1},
     "description": "The enquiry parser keeps only vegan and vegetarian counts and drops the 12 gluten-free covers of PC-901."},
    {"id": "zzzs-cater-04", "input": 0, "switch": "ROUTE_BY_EVENT", "fault_kind": "wrong_routing",
     "root": {"name": "route_kitchen", "occurrence": 1, "kind": "other"}, "failure": {"name": "kitchen_rota", "occurrence": 1},
     "description": "The kitchen router sends the 180-guest wedding to the boxed kitchen (80 covers a day) by event type instead of to the plated kitchen."},
    {"id": "zzzs-cater-05", "input": 4, "switch": "MENU_TOP_TWO", "fault_kind": "truncated_result",
     "root": {"name": "menu_search", "occurrence": 1, "kind": "retrieval"}, "failure": {"name": "confirm_order", "occurrence": 1},
     "description": "The menu search returns only its first two hits, so eclairs and lemon tarts of PC-905 never reach the order."},
]
