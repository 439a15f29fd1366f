"""Rug cleaning service: plans one day's rug pickups (OTLP route: OpenTelemetry spans, OpenInference attributes)."""

from __future__ import annotations

import json
import re

import kit
from _common import chat_client, dumps, last_user, otlp_dump, otlp_tracer, set_output, span, system_of

NAME = "freshpile-rug-pickups"
ROUTE = "otlp"
DOMAIN = "rug cleaning service: pickups"
SHAPE = ("agent span; load the day's requests; per rug: model reads the description, parse, care-guide "
         "retriever, pricing tool; van schedule tool, van assignment, model plans the route, parse, slot booking "
         "tool, customer texts tool, validator (OpenInference spans exported as OTLP/JSON)")
EXT = "json"

GUIDES = [
    {"material": "art silk (viscose)", "method": "dry foam", "rate_m2": 28.0},
    {"material": "silk", "method": "hand wash", "rate_m2": 45.0},
    {"material": "wool", "method": "immersion wash", "rate_m2": 22.0},
    {"material": "jute", "method": "dry compound", "rate_m2": 18.0},
    {"material": "synthetic", "method": "hot water extraction", "rate_m2": 14.0},
]
BATCHES = [
    dict(day="2026-04-03", booked="2026-04-01", rugs=[
        ("R-11", "Mrs Ade", "Persian wool runner, 10'4\" x 2'8\", tea stain", "wool"),
        ("R-12", "J. Moss", "Kashmiri silk prayer rug, 5'1\" x 3'2\", fringe grubby", "silk"),
        ("R-13", "Kay Lin", "jute flatweave, 6'0\" x 4'0\", muddy paw prints", "jute"),
        ("R-14", "Olu Banks", "synthetic shag, 7'6\" x 5'3\", red wine", "synthetic")]),
    dict(day="2026-04-04", booked="2026-04-02", rugs=[
        ("R-21", "P. Grant", "Turkish wool kilim, 8'6\" x 5'2\", faded", "wool"),
        ("R-22", "Sara Venn", "synthetic runner, 9'0\" x 2'6\", coffee", "synthetic"),
        ("R-23", "Tim Hoy", "wool Berber, 6'7\" x 4'5\", moth damage check", "wool"),
        ("R-24", "Dina Roe", "Indian silk rug, 6'10\" x 4'3\", water mark", "silk"),
        ("R-25", "Al Cray", "jute round, 5'0\" x 5'0\", dusty", "jute")]),
    dict(day="2026-04-06", booked="2026-04-03", rugs=[
        ("R-31", "Nell Fry", "wool Aubusson, 9'2\" x 6'1\", soot", "wool"),
        ("R-32", "Gil Ward", "synthetic hall rug, 4'4\" x 2'7\", mud", "synthetic"),
        ("R-33", "Bea Holt", "art silk rug, 6'0\" x 4'0\", pet stain", "art silk (viscose)"),
        ("R-34", "Ron Ives", "wool Gabbeh, 7'10\" x 5'5\", felt pen", "wool")]),
    dict(day="2026-04-07", booked="2026-04-06", rugs=[
        ("R-42", "Meg Carr", "wool runner, 12'2\" x 2'9\", heavy soil", "wool"),
        ("R-43", "Lou Sand", "synthetic playroom rug, 6'6\" x 4'11\", paint", "synthetic"),
        ("R-44", "Vic Dunn", "jute doormat rug, 3'3\" x 2'2\", sand", "jute"),
        ("R-41", "Ivo Lamb", "silk Qum rug, 7'0\" x 4'7\", candle wax", "silk")]),
    dict(day="2026-04-08", booked="2026-04-07", rugs=[
        ("R-51", "Ann Pole", "wool Heriz, 11'3\" x 8'1\", flood damp", "wool"),
        ("R-52", "Cy Moor", "synthetic rug, 5'3\" x 3'7\", juice", "synthetic"),
        ("R-53", "Hu Tran", "silk Hereke, 4'2\" x 2'10\", fading", "silk"),
        ("R-54", "Eda Kim", "wool Ziegler, 9'9\" x 6'7\", pet odour", "wool"),
        ("R-55", "Bo Lund", "jute runner, 8'0\" x 2'6\", grit", "jute")]),
]
VANS = {"V1": 12.0, "V2": 12.0}  # m2 of rug each van can carry rolled
OFF_ROAD = {"2026-04-08": ["V2"]}
ADDRESSES = {r[0]: "%d %s Road" % (10 + i * 7, ["Elm", "Ash", "Oak", "Yew", "Fir"][i % 5]) for b in BATCHES
             for i, r in enumerate(b["rugs"])}

INPUTS = [{"day": b["day"], "booked": b["booked"], "requests": [
    {"rug": r[0], "customer": r[1], "description": r[2], "address": ADDRESSES[r[0]]} for r in b["rugs"]]}
    for b in BATCHES]
MATERIAL = {r[0]: r[3] for b in BATCHES for r in b["rugs"]}

C_LOSSY, C_RETR, C_ARGS, C_STALE, C_TRUNC = "zzq-rug-1", "zzq-rug-2", "zzq-rug-3", "zzq-rug-4", "zzq-rug-5"
CASES = [
    dict(id=C_LOSSY, input=1, kind="lossy_parsing", root=("parse_rug", 4, "other"), failure=("validate_pickups", 1),
         description="parse_rug's size pattern takes single-digit inches only, so R-24's 6'10\" falls back to "
                     "6 ft and the rug is measured and priced short"),
    dict(id=C_RETR, input=3, kind="wrong_retrieval", root=("care_guide", 4, "retrieval"),
         failure=("validate_pickups", 1),
         description="the care-guide retriever matches 'silk' inside 'art silk (viscose)' and returns that guide "
                     "for R-41's real silk rug, which is then booked for a dry foam clean"),
    dict(id=C_ARGS, input=0, kind="wrong_tool_args", root=("ChatCompletion", 5, "llm"),
         failure=("validate_pickups", 1),
         description="the route-planning model puts the booking date 2026-04-01 in the plan instead of the "
                     "pickup day, and book_slots is called for that date"),
    dict(id=C_STALE, input=4, kind="stale_data", root=("fetch_van_schedule", 1, "tool"),
         failure=("validate_pickups", 1),
         description="fetch_van_schedule answers from the schedule cached the day before, which does not yet "
                     "show van V2 off the road on 2026-04-08"),
    dict(id=C_TRUNC, input=2, kind="truncated_result", root=("book_slots", 1, "tool"), failure=("validate_pickups", 1),
         description="book_slots returns only the first three slot confirmations of the four stops, and the last "
                     "rug is left without a pickup slot"),
]


def _feet(text: str) -> float:
    pattern = r"(\d+)'(\d)\"" if kit.on(C_LOSSY) else r"(\d+)'(\d+)\""
    m = re.match(pattern, text)
    if not m:
        return int(text.split("'")[0]) * 0.3048
    return int(m.group(1)) * 0.3048 + int(m.group(2)) * 0.0254


def _true_area(description: str) -> float:
    a, b = re.findall(r"(\d+)'(\d+)\"", description)
    return round(((int(a[0]) * 12 + int(a[1])) * 0.0254) * ((int(b[0]) * 12 + int(b[1])) * 0.0254), 2)


def brain(request):
    system = system_of(request)
    user = last_user(request)
    if system.startswith("You read rug descriptions"):
        d = json.loads(user)
        sizes = re.findall(r"\d+'\d+\"", d["description"])
        material = MATERIAL[d["rug"]]
        return json.dumps({"rug": d["rug"], "material": material, "length": sizes[0], "width": sizes[1]})
    if system.startswith("You plan the pickup round"):
        d = json.loads(user)
        date = d["booked"] if kit.on(C_ARGS) else d["day"]
        order = sorted(d["stops"], key=lambda s: (s["van"], s["address"]))
        return json.dumps({"date": date, "stops": [{"rug": s["rug"], "van": s["van"]} for s in order]})
    return "I cannot help with that."


def record(server, inp: dict, path: str) -> None:
    server.use(brain)
    client = chat_client(server)
    tracer = otlp_tracer().get_tracer("freshpile")
    try:
        with span(tracer, NAME, "AGENT", {"day": inp["day"], "rugs": len(inp["requests"])}) as root:
            with span(tracer, "load_requests", "CHAIN", inp) as s:
                reqs = [dict(r) for r in inp["requests"]]
                set_output(s, reqs)
            rugs = []
            for r in reqs:
                reply = client.chat.completions.create(model="fake-model", messages=[
                    {"role": "system", "content": "You read rug descriptions. Answer JSON: rug, material, length, width "
                                                  "(feet and inches as written)."},
                    {"role": "user", "content": dumps({"rug": r["rug"], "description": r["description"]})}])
                text = reply.choices[0].message.content
                with span(tracer, "parse_rug", "CHAIN", text) as s:
                    d = json.loads(text)
                    rug = {"rug": d["rug"], "material": d["material"],
                           "area_m2": round(_feet(d["length"]) * _feet(d["width"]), 2)}
                    set_output(s, rug)
                with span(tracer, "care_guide", "RETRIEVER", rug["material"]) as s:
                    if kit.on(C_RETR):
                        hits = [g for g in GUIDES if rug["material"] in g["material"]]
                    else:
                        hits = [g for g in GUIDES if rug["material"] == g["material"]]
                    guide = hits[0]
                    s.set_attribute("retrieval.documents.0.document.content", dumps(guide))
                    s.set_attribute("retrieval.documents.0.document.id", guide["material"])
                    set_output(s, guide)
                with span(tracer, "price_rug", "TOOL", {"rug": rug["rug"], "area_m2": rug["area_m2"],
                                                        "method": guide["method"]}, **{"tool.name": "price_rug"}) as s:
                    rug.update(method=guide["method"], price=round(rug["area_m2"] * guide["rate_m2"], 2),
                               address=r["address"])
                    set_output(s, {"rug": rug["rug"], "price": rug["price"], "method": rug["method"]})
                rugs.append(rug)
            with span(tracer, "fetch_van_schedule", "TOOL", {"date": inp["day"]}, **{"tool.name": "fetch_van_schedule"}) as s:
                as_of = inp["booked"] if kit.on(C_STALE) else inp["day"]
                vans = {"date": inp["day"], "available": [v for v in VANS if v not in OFF_ROAD.get(as_of, [])]}
                set_output(s, vans)
            with span(tracer, "assign_vans", "CHAIN", {"rugs": rugs, "vans": vans}) as s:
                load = {v: 0.0 for v in vans["available"]}
                stops = []
                for rug in sorted(rugs, key=lambda x: -x["area_m2"]):
                    van = min(load, key=lambda v: (load[v], v))
                    load[van] += rug["area_m2"]
                    stops.append({"rug": rug["rug"], "van": van, "address": rug["address"]})
                set_output(s, stops)
            reply = client.chat.completions.create(model="fake-model", messages=[
                {"role": "system", "content": "You plan the pickup round. Answer JSON: date, stops [{rug, van}] in "
                                              "visiting order."},
                {"role": "user", "content": dumps({"day": inp["day"], "booked": inp["booked"], "stops": stops})}])
            text = reply.choices[0].message.content
            with span(tracer, "parse_route", "CHAIN", text) as s:
                plan = json.loads(text)
                set_output(s, plan)
            with span(tracer, "book_slots", "TOOL", {"date": plan["date"], "stops": plan["stops"]},
                      **{"tool.name": "book_slots"}) as s:
                slots = [{"rug": st["rug"], "van": st["van"], "date": plan["date"],
                          "slot": "%02d:00-%02d:00" % (8 + i, 9 + i)} for i, st in enumerate(plan["stops"])]
                if kit.on(C_TRUNC):
                    slots = slots[:3]
                set_output(s, {"confirmed": slots})
            with span(tracer, "notify_customers", "TOOL", {"slots": slots}, **{"tool.name": "notify_customers"}) as s:
                texts = [{"rug": x["rug"], "sms": "FreshPile will collect rug %s on %s, %s." % (x["rug"], x["date"], x["slot"])}
                         for x in slots]
                set_output(s, {"sent": len(texts), "messages": texts})
            with span(tracer, "validate_pickups", "CHAIN", {"day": inp["day"], "rugs": rugs, "slots": slots}) as s:
                for rug in rugs:
                    want = _true_area(next(r["description"] for r in reqs if r["rug"] == rug["rug"]))
                    if abs(rug["area_m2"] - want) > 0.05:
                        raise ValueError("rug %s priced for %.2f m2; it measures %.2f m2" % (rug["rug"], rug["area_m2"], want))
                    if MATERIAL[rug["rug"]] == "silk" and rug["method"] != "hand wash":
                        raise ValueError("silk rug %s booked for %s; silk is hand washed only" % (rug["rug"], rug["method"]))
                by_rug = {x["rug"]: x for x in slots}
                for rug in rugs:
                    if rug["rug"] not in by_rug:
                        raise ValueError("rug %s has no pickup slot on %s" % (rug["rug"], inp["day"]))
                    x = by_rug[rug["rug"]]
                    if x["date"] != inp["day"]:
                        raise ValueError("rug %s slot booked for %s; the pickup day is %s" % (rug["rug"], x["date"], inp["day"]))
                    if x["van"] in OFF_ROAD.get(inp["day"], []):
                        raise ValueError("rug %s is on van %s, which is off the road on %s" % (rug["rug"], x["van"], inp["day"]))
                set_output(s, {"ok": True, "rugs": len(rugs)})
            set_output(root, {"slots": slots})
    except ValueError:
        pass
    otlp_dump(path)
