"""Shoemaker's resoling service: OpenInference-instrumented openai client plus the shop's own spans, exported as OTLP JSON."""
from __future__ import annotations

import json
import re

from openai import OpenAI

import otel_common
from otel_common import span

NAME, ROUTE, EXT = "cobbler-resole-desk", "otlp", "json"
DOMAIN = "shoemaker's resoling service"
SHAPE = "short straight line: ticket, model assessment, parse, address book, two stock retrievers, last fitting, welt stitching, labour quote, model job card, parcel scale, carrier booking, final inspection (8-14 spans; fewer when a check stops it)"
SWITCH = None

ADDRESSES = {
    "Ruth Sowden": {"street": "4 Windsor Rd", "town": "Hebden Bridge", "postcode": "HX7 8LF",
                    "previous": {"street": "11 Rochdale Rd", "town": "Todmorden", "postcode": "OL14 7LA"}},
    "Amos Crabtree": {"street": "2 Mill Fold", "town": "Mytholmroyd", "postcode": "HX7 5AA"},
    "Edith Hirst": {"street": "9 Bank Top", "town": "Heptonstall", "postcode": "HX7 7LY"},
    "Walter Greenwood": {"street": "31 Market St", "town": "Todmorden", "postcode": "OL14 5AB"},
    "May Uttley": {"street": "6 Cragg Vale", "town": "Mytholmroyd", "postcode": "HX7 5TB"},
}
TOWN_POSTCODES = {"Hebden Bridge": "HX7 8", "Mytholmroyd": "HX7 5", "Heptonstall": "HX7 7", "Todmorden": "OL14"}
SOLES = [
    {"blank": "oak-bark leather sole", "material": "leather", "sizes": [7, 8, 9, 10, 11], "grams": 180},
    {"blank": "moulded commando unit", "material": "rubber", "sizes": [7, 8, 9, 10, 11], "grams": 260},
    {"blank": "crepe sheet", "material": "crepe", "sizes": [6, 7, 8, 9, 10], "grams": 220},
]
HEELS = [{"heel": "stacked leather heel", "material": "leather", "grams": 90},
         {"heel": "rubber top-piece", "material": "rubber", "grams": 40}]
WELT_OK = {"goodyear": {"leather", "rubber", "crepe"}, "blake": {"leather"}, "cemented": {"rubber", "crepe"}}
BOOT_GRAMS = {"Chelsea boots": 1200, "brogues": 900, "work boots": 1700, "walking boots": 1500, "derby shoes": 850}

INPUTS = [
    {"key": "r88", "customer": "Ruth Sowden", "text": "Ticket R-88 for Ruth Sowden: Chelsea boots, size 9, goodyear welt, leather sole worn through, leather heel worn, post back home."},
    {"key": "r89", "customer": "Amos Crabtree", "text": "Ticket R-89 for Amos Crabtree: work boots, size 11, goodyear welt, rubber sole worn thin, rubber heel worn, post back home."},
    {"key": "r90", "customer": "Edith Hirst", "text": "Ticket R-90 for Edith Hirst: brogues, size 7, blake welt, leather sole worn thin, leather heel worn, post back home."},
    {"key": "r91", "customer": "Walter Greenwood", "text": "Ticket R-91 for Walter Greenwood: walking boots, size 10, cemented welt, rubber sole worn through, rubber heel worn, post back home."},
    {"key": "r92", "customer": "May Uttley", "text": "Ticket R-92 for May Uttley: derby shoes, size 8, goodyear welt, crepe sole worn thin, rubber heel worn, post back home."},
]

CASES = [
    {"id": "zzzw_sole_01", "input": 2, "switch": "model_size", "fault_kind": "hallucinated_value",
     "root": {"name": "ChatCompletion", "occurrence": 1}, "failure": {"name": "last_fitting", "occurrence": 1},
     "description": "The assessing model gives the brogues as size 8 though the ticket says size 7."},
    {"id": "zzzw_sole_02", "input": 0, "switch": "sole_any", "fault_kind": "wrong_retrieval",
     "root": {"name": "sole_stock", "occurrence": 1}, "failure": {"name": "final_inspection", "occurrence": 1},
     "description": "The sole stock search ranks the rubber commando unit first for a leather sole request."},
    {"id": "zzzw_sole_03", "input": 1, "switch": "scale_grams", "fault_kind": "unit_error",
     "root": {"name": "parcel_scale", "occurrence": 1}, "failure": {"name": "carrier_booking", "occurrence": 1},
     "description": "The parcel scale reports grams in the field the carrier reads as kilograms."},
    {"id": "zzzw_sole_04", "input": 0, "switch": "old_address", "fault_kind": "stale_data",
     "root": {"name": "address_book", "occurrence": 1}, "failure": {"name": "carrier_booking", "occurrence": 1},
     "description": "The address book answers Ruth Sowden's previous Todmorden address instead of her current one in Hebden Bridge."},
    {"id": "zzzw_sole_05", "input": 3, "switch": "half_sole", "fault_kind": "plan_error",
     "root": {"name": "ChatCompletion", "occurrence": 1}, "failure": {"name": "final_inspection", "occurrence": 1},
     "description": "The assessing model plans a half sole for a sole worn through, which needs a full sole."},
]


def policy(request):
    msgs = request.body["messages"]
    prompt = msgs[-1]["content"]
    if prompt.startswith("Assess this repair"):
        t = prompt.split("\n", 1)[1]
        size = int(re.search(r"size (\d+)", t).group(1))
        if SWITCH == "model_size":
            size += 1
        sole = re.search(r"(\w+) sole worn (through|thin)", t)
        plan = "full sole" if sole.group(2) == "through" else "half sole"
        if SWITCH == "half_sole":
            plan = "half sole"
        return json.dumps({"item": re.search(r": ([a-zA-Z ]+), size", t).group(1), "size": size,
                           "welt": re.search(r"(\w+) welt", t).group(1), "sole": sole.group(1),
                           "heel": re.search(r"(\w+) heel worn", t).group(1), "sole_plan": plan})
    if prompt.startswith("Write the job card"):
        d = json.loads(prompt.split("\n", 1)[1])
        return (f"JOB CARD {d['ticket']}: {d['sole_plan']} in {d['sole']['blank']}, {d['heel']['heel']}, "
                f"{d['labour']['hours']} h, post to {d['address']['street']}, {d['address']['town']} {d['address']['postcode']}")
    return "Not a repair."


def record(server, inp, path):
    server.use(policy)
    provider = otel_common.setup()
    tracer = provider.get_tracer("cobbler")
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with span(tracer, NAME, "AGENT", inp["text"], **{"agent.name": NAME}) as top:
            with span(tracer, "read_ticket", "CHAIN", {"customer": inp["customer"], "ticket": inp["text"]}) as s:
                ticket_no = re.search(r"Ticket (R-\d+)", inp["text"]).group(1)
                s["out"] = {"ticket": ticket_no, "customer": inp["customer"]}
            r = client.chat.completions.create(model=server.model, messages=[
                {"role": "system", "content": "You assess shoe repairs and answer JSON."},
                {"role": "user", "content": "Assess this repair.\n" + inp["text"]}])
            raw = r.choices[0].message.content
            with span(tracer, "parse_assessment", "CHAIN", raw) as s:
                a = json.loads(raw)
                s["out"] = a
            with span(tracer, "address_book", "TOOL", {"customer": inp["customer"]}, **{"tool.name": "address_book"}) as s:
                rec = ADDRESSES[inp["customer"]]
                addr = rec["previous"] if SWITCH == "old_address" and "previous" in rec else {k: rec[k] for k in ("street", "town", "postcode")}
                s["out"] = addr
            with span(tracer, "sole_stock", "RETRIEVER", {"material": a["sole"], "size": a["size"]}) as s:
                hits = [x for x in SOLES if a["size"] in x["sizes"]]
                hits.sort(key=lambda x: (0 if x["material"] == a["sole"] else 1))
                if SWITCH == "sole_any":
                    hits.sort(key=lambda x: -x["grams"])
                s["out"] = hits
                sole = hits[0]
            with span(tracer, "heel_stock", "RETRIEVER", {"material": a["heel"]}) as s:
                heel = next(h for h in HEELS if h["material"] == a["heel"])
                s["out"] = [heel]
            with span(tracer, "last_fitting", "TOOL", {"item": a["item"], "size": a["size"], "customer": inp["customer"]},
                      **{"tool.name": "last_fitting"}) as s:
                on_ticket = int(re.search(r"size (\d+)", inp["text"]).group(1))
                if a["size"] != on_ticket:
                    raise ValueError(f"size {a['size']} last does not fit the {a['item']} of ticket {ticket_no}: the uppers are size {on_ticket}")
                s["out"] = {"last": f"{a['item']} last {a['size']}"}
            with span(tracer, "welt_stitching", "TOOL", {"welt": a["welt"], "blank": sole["blank"]}, **{"tool.name": "welt_stitching"}) as s:
                if sole["material"] not in WELT_OK[a["welt"]]:
                    raise ValueError(f"a {a['welt']} welt cannot take a {sole['material']} sole")
                s["out"] = {"stitched": True, "welt": a["welt"]}
            with span(tracer, "labour_quote", "TOOL", {"plan": a["sole_plan"], "heel": heel["heel"]}, **{"tool.name": "labour_quote"}) as s:
                hours = (2.5 if a["sole_plan"] == "full sole" else 1.5) + 0.5
                labour = {"hours": hours, "price": round(hours * 18.0 + 12, 2)}
                s["out"] = labour
            r = client.chat.completions.create(model=server.model, messages=[
                {"role": "user", "content": "Write the job card.\n" + json.dumps(
                    {"ticket": ticket_no, "sole_plan": a["sole_plan"], "sole": sole, "heel": heel, "labour": labour, "address": addr})}])
            card = r.choices[0].message.content
            with span(tracer, "parcel_scale", "TOOL", {"item": a["item"]}, **{"tool.name": "parcel_scale"}) as s:
                grams = BOOT_GRAMS[a["item"]] + 2 * (sole["grams"] + heel["grams"]) + 350
                weight = grams if SWITCH == "scale_grams" else round(grams / 1000, 2)
                s["out"] = {"weight_kg": weight}
            with span(tracer, "carrier_booking", "TOOL", {"card": card, "weight_kg": weight}, **{"tool.name": "carrier_booking"}) as s:
                m = re.search(r"post to (.+?), ([A-Za-z ]+?) ([A-Z]{1,2}\d+ \d[A-Z]{2})$", card)
                town, postcode = m.group(2), m.group(3)
                if weight > 30:
                    raise RuntimeError(f"carrier refused the parcel: {weight} kg is over the 30 kg limit")
                home = ADDRESSES[inp["customer"]]
                if town != home["town"] or not postcode.startswith(TOWN_POSTCODES[town]):
                    raise RuntimeError(f"carrier refused the label: {postcode} {town} does not match the account address of {inp['customer']}")
                s["out"] = {"consignment": f"YC{ticket_no[2:]}{len(card)}", "kg": weight}
            with span(tracer, "final_inspection", "CHAIN", {"card": card, "ticket": inp["text"]}) as s:
                worn = re.search(r"(\w+) sole worn (through|thin)", inp["text"])
                needs = "full sole" if worn.group(2) == "through" else "half sole"
                assert needs in card, f"sole worn {worn.group(2)} needs a {needs}: {card}"
                blank = re.search(r"sole in (.+?), ", card).group(1)
                looks = {"leather": ("leather",), "rubber": ("rubber", "commando"), "crepe": ("crepe",)}[worn.group(1)]
                assert any(w in blank for w in looks), f"ticket asks for a {worn.group(1)} sole, card fits {blank}"
                s["out"] = "passed"
            top["out"] = card
    except Exception:
        pass
    finally:
        client.close()
    otel_common.dump(path)
