"""A rugby club's match-day catering (otlp route): OpenTelemetry spans with OpenInference attributes."""
import json
import math

from openai import OpenAI
from opentelemetry.trace import Status, StatusCode

import kit
from common import brain_from, otlp, set_out, span_attrs

NAME, ROUTE, DOMAIN = "rugby-matchday-catering", "otlp", "a rugby club's match-day catering"
SHAPE = "OpenInference spans: LLM request reader + parser, fixture and ticket tools, covers forecast, LLM menu + parser, per-dish price tool and recipe scaling, bar sub-agent (LLM, keg stock tool, bar order), supplier routing, order tool, LLM summary + parser, validator tool"

FIXTURES = {"M-11": {"opponent": "Harlow Hawks", "date": "2027-09-11", "kickoff": "15:00", "capacity": 900},
            "M-12": {"opponent": "Redbridge RFC", "date": "2027-09-18", "kickoff": "14:30", "capacity": 900},
            "M-13": {"opponent": "Saxon Park", "date": "2027-10-02", "kickoff": "15:00", "capacity": 900},
            "M-14": {"opponent": "Marshfield", "date": "2027-10-09", "kickoff": "19:45", "capacity": 900},
            "M-15": {"opponent": "Old Collegians", "date": "2027-10-16", "kickoff": "15:00", "capacity": 900},
            "M-21": {"opponent": "Dockside RFC", "date": "2027-08-28", "kickoff": "15:00", "capacity": 900},
            "M-22": {"opponent": "Kingsmead", "date": "2027-09-04", "kickoff": "14:00", "capacity": 900},
            "M-23": {"opponent": "Vale Wanderers", "date": "2027-10-23", "kickoff": "15:00", "capacity": 900},
            "M-24": {"opponent": "Northgate", "date": "2027-10-30", "kickoff": "13:30", "capacity": 900}}
SOLD = {"M-11": 610, "M-12": 455, "M-13": 720, "M-14": 380, "M-15": 540, "M-21": 300, "M-22": 510, "M-23": 640, "M-24": 250}
DISHES = {"burger": (24, 1.10), "chilli": (30, 0.85), "pasty": (20, 1.40), "veggie curry": (25, 0.90), "hot dog": (40, 0.60)}
KEGS = {"M-11": 6, "M-12": 5, "M-13": 3, "M-14": 4, "M-15": 7, "M-21": 6, "M-22": 2, "M-23": 5, "M-24": 4}
KEGS_LAST_WEEK = 9
CASH_AND_CARRY_LIMIT = 400.0
PINTS_PER_KEG = 88


def _req(mid, menu):
    return {"match_id": mid, "menu": menu, "text": f"Cater match {mid}: {', '.join(menu)}; order by Thursday."}


INPUTS = {"m1": _req("M-11", ["burger", "chilli", "veggie curry"]), "m2": _req("M-12", ["pasty", "hot dog"]),
          "m3": _req("M-13", ["burger", "pasty", "veggie curry"]), "m4": _req("M-14", ["chilli", "hot dog"]),
          "m5": _req("M-15", ["burger", "veggie curry", "hot dog"]),
          "r1": _req("M-21", ["burger", "chilli"]), "r2": _req("M-22", ["pasty", "veggie curry", "hot dog"]),
          "r3": _req("M-23", ["burger", "hot dog"]), "r4": _req("M-24", ["chilli", "pasty"])}
REFS = ["r1", "r2", "r3", "r4"]
CASES = [
    {"id": "zzs_rugby_kickoff_clock", "kind": "format_drift", "input": "m4", "root": ("ChatCompletion", 4),
     "failure": ("check_catering_order", 1),
     "description": "The summary writer gives the evening kick-off as '7.45pm' instead of 19:45, which the parser reads as 07:45."},
    {"id": "zzs_rugby_supplier_route", "kind": "wrong_routing", "input": "m1", "root": ("route_order", 1),
     "failure": ("check_catering_order", 1),
     "description": "The supplier router compares the order total against the cash-and-carry limit in pence, so a GBP 700 order is sent to cash and carry."},
    {"id": "zzs_rugby_tray_count", "kind": "off_by_one", "input": "m3", "root": ("scale_recipe", 3),
     "failure": ("check_catering_order", 1),
     "description": "Recipe scaling floors the tray count for veggie curry, ordering one tray fewer than the covers need."},
    {"id": "zzs_rugby_covers_claim", "kind": "hallucinated_value", "input": "m5", "root": ("ChatCompletion", 4),
     "failure": ("check_catering_order", 1),
     "description": "The summary writer states 650 expected covers, a figure neither the ticket sales nor the forecast gave."},
    {"id": "zzs_rugby_keg_count", "kind": "stale_data", "input": "m2", "root": ("keg_stock", 1),
     "failure": ("check_catering_order", 1),
     "description": "The cellar count returns last week's nine kegs, so the bar orders no beer for a match that needs more."},
]


def covers_for(mid):
    return math.ceil(SOLD[mid] * 1.15)


def brain():
    def read(p, _):
        return json.dumps({"match_id": p["match_id"], "menu": p["menu"]})

    def menu(p, _):
        return json.dumps([{"dish": d, "share": round(1 / len(p["menu"]), 3)} for d in p["menu"]])

    def bar(p, _):
        return json.dumps({"pints_per_head": 1.2, "covers": p["covers"]})

    def summary(p, _):
        kickoff = p["kickoff"]
        if kit.on("zzs_rugby_kickoff_clock"):
            h, m = kickoff.split(":")
            kickoff = f"{int(h) - 12}.{m}pm" if int(h) > 12 else kickoff
        covers = 650 if kit.on("zzs_rugby_covers_claim") else p["covers"]
        return json.dumps({"match": p["match_id"], "kickoff": kickoff, "covers": covers, "supplier": p["supplier"],
                           "total_gbp": p["total_gbp"]})

    return brain_from({"read": read, "menu": menu, "bar": bar, "summary": summary})


def record(server, inp, path):
    server.use(brain())
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    tr = otlp().tracer(NAME)

    def ask(task, payload):
        r = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": f"#{task}"}, {"role": "user", "content": json.dumps(payload)}])
        return r.choices[0].message.content

    def span(name, kind, inp_):
        return tr.start_as_current_span(name, attributes=span_attrs(kind, inp_))

    try:
        with tr.start_as_current_span(NAME, attributes=span_attrs("AGENT", {"request": inp["text"]})) as root:
            text = ask("read", {"match_id": inp["match_id"], "menu": inp["menu"], "text": inp["text"]})
            with span("parse_request", "CHAIN", {"text": text}) as s:
                req = json.loads(text)
                set_out(s, req)
            mid = req["match_id"]
            with span("get_fixture", "TOOL", {"match_id": mid}) as s:
                fx = dict(FIXTURES[mid])
                set_out(s, fx)
            with span("ticket_sales", "TOOL", {"match_id": mid}) as s:
                sold = {"match_id": mid, "sold": SOLD[mid]}
                set_out(s, sold)
            with span("forecast_covers", "CHAIN", {"sold": sold["sold"], "walk_up": 0.15}) as s:
                covers = math.ceil(sold["sold"] * 1.15)
                set_out(s, {"covers": covers})
            menu = ask("menu", {"menu": req["menu"], "covers": covers})
            with span("parse_menu", "CHAIN", {"text": menu}) as s:
                dishes = json.loads(menu)
                set_out(s, dishes)
            with tr.start_as_current_span("bar_agent", attributes=span_attrs("AGENT", {"match_id": mid, "covers": covers})) as bar:
                plan = json.loads(ask("bar", {"covers": covers, "kickoff": fx["kickoff"]}))
                with span("keg_stock", "TOOL", {"cellar": "main", "match_id": mid}) as s:
                    kegs = KEGS_LAST_WEEK if kit.on("zzs_rugby_keg_count") else KEGS[mid]
                    set_out(s, {"kegs": kegs})
                with span("bar_order", "CHAIN", {"plan": plan, "kegs": kegs}) as s:
                    need = math.ceil(plan["covers"] * plan["pints_per_head"] / PINTS_PER_KEG)
                    bar_order = {"kegs": max(0, need - kegs), "kegs_on_hand": kegs}
                    set_out(s, bar_order)
                set_out(bar, bar_order)
            lines = []
            for d in dishes:
                with span("supplier_price", "TOOL", {"dish": d["dish"]}) as s:
                    per_tray, price = DISHES[d["dish"]]
                    quote = {"dish": d["dish"], "portions_per_tray": per_tray, "gbp_per_portion": price}
                    set_out(s, quote)
                with span("scale_recipe", "CHAIN", {"quote": quote, "covers": covers, "share": d["share"]}) as s:
                    portions = covers * d["share"]
                    if kit.on("zzs_rugby_tray_count") and d["dish"] == "veggie curry":
                        trays = int(portions // per_tray)
                    else:
                        trays = math.ceil(portions / per_tray)
                    line = {"dish": d["dish"], "trays": trays, "gbp": round(trays * per_tray * price, 2)}
                    set_out(s, line)
                lines.append(line)
            total = round(sum(l["gbp"] for l in lines), 2)
            with span("route_order", "CHAIN", {"total_gbp": total, "limit_gbp": CASH_AND_CARRY_LIMIT}) as s:
                amount = total / 100 if kit.on("zzs_rugby_supplier_route") else total
                supplier = "cash_and_carry" if amount <= CASH_AND_CARRY_LIMIT else "wholesaler"
                set_out(s, {"supplier": supplier})
            with span("place_order", "TOOL", {"supplier": supplier, "lines": lines, "kegs": bar_order["kegs"]}) as s:
                order = {"order": f"CO-{mid}", "supplier": supplier, "lines": lines, "kegs": bar_order["kegs"],
                         "total_gbp": total, "deliver": fx["date"]}
                set_out(s, order)
            summary = ask("summary", {"match_id": mid, "kickoff": fx["kickoff"], "covers": covers,
                                      "supplier": supplier, "total_gbp": total})
            with span("parse_summary", "CHAIN", {"text": summary}) as s:
                doc = json.loads(summary)
                k = doc["kickoff"]
                if k.endswith("pm") or k.endswith("am"):
                    h, m = k[:-2].split(".")
                    k = f"{int(h):02d}:{m}"
                doc["kickoff"] = k
                set_out(s, doc)
            with span("check_catering_order", "TOOL", {"order": order, "summary": doc}) as s:
                f = FIXTURES[inp["match_id"]]
                want_covers = covers_for(inp["match_id"])
                if doc["kickoff"] != f["kickoff"]:
                    raise ValueError(f"summary kick-off {doc['kickoff']}, fixture {inp['match_id']} kicks off {f['kickoff']}")
                if doc["covers"] != want_covers:
                    raise ValueError(f"summary states {doc['covers']} covers, {SOLD[inp['match_id']]} tickets give {want_covers}")
                if order["supplier"] == "cash_and_carry" and order["total_gbp"] > CASH_AND_CARRY_LIMIT:
                    raise ValueError(f"GBP {order['total_gbp']:.2f} order sent to cash and carry (limit GBP {CASH_AND_CARRY_LIMIT:.0f})")
                for l in order["lines"]:
                    per_tray = DISHES[l["dish"]][0]
                    portions = want_covers / len(inp["menu"])
                    if l["trays"] * per_tray < portions:
                        raise ValueError(f"{l['trays']} trays of {l['dish']} feed {l['trays'] * per_tray}, {portions:.0f} portions needed")
                need = math.ceil(want_covers * 1.2 / PINTS_PER_KEG)
                if order["kegs"] + KEGS[inp["match_id"]] < need:
                    raise ValueError(f"{order['kegs']} kegs ordered, cellar holds {KEGS[inp['match_id']]}, {need} needed")
                set_out(s, {"ok": True})
            set_out(root, {"order": order["order"], "summary": doc})
    finally:
        otlp().dump(path)
