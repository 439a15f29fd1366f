"""Astrolabe replica maker: a long OTLP trace, a model plan, plates cut per latitude, then a per-star loop (catalogue, precession, placement, engraving)."""

from __future__ import annotations

import json
import math

from openai import OpenAI

NAME = "alidade-astrolabe-replicas"
ROUTE = "otlp"
DOMAIN = "astrolabe replica maker"
SHAPE = "OTLP, long: model plan, parse, projection router, 1-3 plates (cut + almucantars), rete plan, loop over 7-11 stars x 4 spans (catalogue retriever, precession, placement, engraving), model-written certificate, QA tool; 35-58 spans"
ON: set[str] = set()

STARS = {
    "Aldebaran": (68.98, 16.51), "Altair": (297.70, 8.87), "Alnair": (332.06, -46.96), "Arcturus": (213.92, 19.18),
    "Betelgeuse": (88.79, 7.41), "Capella": (79.17, 46.00), "Deneb": (310.36, 45.28), "Pollux": (116.33, 28.03),
    "Procyon": (114.83, 5.22), "Regulus": (152.09, 11.97), "Rigel": (78.63, -8.20), "Sirius": (101.29, -16.72),
    "Spica": (201.30, -11.16), "Vega": (279.23, 38.78), "Antares": (247.35, -26.43), "Fomalhaut": (344.41, -29.62),
    "Achernar": (24.43, -57.24), "Canopus": (95.99, -52.70), "Acrux": (186.65, -63.10), "Hadar": (210.96, -60.37),
}
INPUTS = [
    {"commission": "AR-71", "patron": "Oxford reading room", "latitudes": [51.75], "stars": ["Aldebaran", "Altair", "Arcturus", "Betelgeuse", "Capella", "Deneb", "Vega"], "diameter_mm": 180},
    {"commission": "AR-72", "patron": "Toledo school", "latitudes": [39.86, 41.9], "stars": ["Altair", "Arcturus", "Pollux", "Procyon", "Regulus", "Rigel", "Sirius", "Spica", "Vega"], "diameter_mm": 220},
    {"commission": "AR-73", "patron": "Cape Town collector", "latitudes": [-33.92], "stars": ["Achernar", "Canopus", "Acrux", "Hadar", "Sirius", "Antares", "Fomalhaut", "Rigel"], "diameter_mm": 200},
    {"commission": "AR-74", "patron": "Samarkand museum", "latitudes": [39.65, 41.3, 37.0], "stars": ["Aldebaran", "Altair", "Arcturus", "Capella", "Deneb", "Pollux", "Regulus", "Sirius", "Spica", "Vega", "Antares"], "diameter_mm": 240},
    {"commission": "AR-75", "patron": "Lisbon naval school", "latitudes": [38.72], "stars": ["Altair", "Betelgeuse", "Capella", "Procyon", "Rigel", "Sirius", "Vega", "Fomalhaut"], "diameter_mm": 200},
]

CASES = [
    {"id": "astr-01", "input": 3, "switch": "a", "kind": "off_by_one", "root": ("plan_rete", 1, "other"), "failure": ("qa_check", 1),
     "description": "The rete plan builds its pointer list from the second star on, so Aldebaran never gets a pointer and the final inspection finds the rete one star short."},
    {"id": "astr-02", "input": 3, "switch": "b", "kind": "unit_error", "root": ("precess", 11, "other"), "failure": ("engrave_pointer", 11),
     "description": "The precession step for Antares adds its correction in arcminutes as if they were degrees, pushing the star four degrees south, and the engraver finds its pointer off the rete."},
    {"id": "astr-03", "input": 4, "switch": "c", "kind": "wrong_retrieval", "root": ("star_catalogue", 1, "retrieval"), "failure": ("engrave_pointer", 1),
     "description": "The catalogue search for Altair returns Alnair, a southern star, whose pointer falls outside the rete of a Lisbon plate."},
    {"id": "astr-04", "input": 1, "switch": "d", "kind": "tool_ignores_argument", "root": ("cut_plate", 2, "tool"), "failure": ("qa_check", 1),
     "description": "The plate cutter ignores the latitude it is given for the second plate and cuts the workshop's default 51.5 degree plate, which the final inspection rejects."},
    {"id": "astr-05", "input": 2, "switch": "e", "kind": "wrong_routing", "root": ("choose_projection", 1, "other"), "failure": ("engrave_pointer", 1),
     "description": "The projection router sends a Cape Town (southern) commission down the northern projection, so the first southern star's pointer lands off the rete."},
]


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    data = json.loads(msgs[-1]["content"])
    if system.startswith("Plan"):
        return json.dumps({"plates": [{"latitude": lat} for lat in data["latitudes"]], "stars": data["stars"], "diameter_mm": data["diameter_mm"]})
    return (f"Certificate: a {data['diameter_mm']} mm brass astrolabe for {data['patron']}, {len(data['plates'])} plate(s), "
            f"{len(data['pointers'])} star pointers, epoch 2030.")


def record(inp: dict, path, ctx) -> None:
    provider, spans = ctx.otel()
    spans.clear()
    tracer = provider.get_tracer("alidade-workshop")
    client = OpenAI(base_url=ctx.server.base_url, api_key="not-needed", max_retries=0)

    def span(name, kind, value):
        return tracer.start_as_current_span(name, attributes={"openinference.span.kind": kind, "input.value": json.dumps(value), "input.mime_type": "application/json"})

    def done(sp, out):
        sp.set_attribute("output.value", json.dumps(out))
        sp.set_attribute("output.mime_type", "application/json")
        return out

    def chat(system, payload):
        r = client.chat.completions.create(model="fake-model", messages=[{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}])
        return r.choices[0].message.content

    try:
        with span(NAME, "AGENT", inp) as top:
            with span("read_commission", "CHAIN", inp) as sp:
                com = done(sp, dict(inp))
            text = chat("Plan the astrolabe: plates and star pointers as JSON.", com)
            with span("parse_plan", "CHAIN", {"text": text}) as sp:
                plan = done(sp, json.loads(text))
            with span("choose_projection", "CHAIN", {"latitudes": [p["latitude"] for p in plan["plates"]]}) as sp:
                south = all(p["latitude"] < 0 for p in plan["plates"])
                if "e" in ON:
                    south = False
                proj = done(sp, {"projection": "south polar stereographic" if south else "north polar stereographic", "pole": -1 if south else 1})
            plates = []
            for i, p in enumerate(plan["plates"]):
                with span("cut_plate", "TOOL", {"latitude": p["latitude"], "diameter_mm": plan["diameter_mm"]}) as sp:
                    lat = p["latitude"]
                    if "d" in ON and i == 1:
                        lat = 51.5
                    plate = done(sp, {"plate": i + 1, "latitude": lat, "diameter_mm": plan["diameter_mm"]})
                with span("engrave_almucantars", "TOOL", {"plate": plate["plate"], "latitude": plate["latitude"]}) as sp:
                    done(sp, {"plate": plate["plate"], "circles": 18})
                plates.append(plate)
            with span("plan_rete", "CHAIN", {"stars": plan["stars"]}) as sp:
                start = 1 if "a" in ON else 0
                rete = done(sp, {"pointers": [{"n": k + 1, "star": s} for k, s in enumerate(plan["stars"][start:])]})
            # the replica's rete reaches 30 degrees past the equator, in declination
            limit = -30.0
            pointers = []
            for ptr in rete["pointers"]:
                with span("star_catalogue", "RETRIEVER", {"query": ptr["star"]}) as sp:
                    name = ptr["star"]
                    if "c" in ON and name == "Altair":
                        name = "Alnair"
                    ra, dec = STARS[name]
                    sp.set_attribute("retrieval.documents.0.document.id", name)
                    sp.set_attribute("retrieval.documents.0.document.content", json.dumps({"star": name, "ra": ra, "dec": dec, "epoch": 2000}))
                    entry = {"star": name, "ra": ra, "dec": dec}
                with span("precess", "CHAIN", {**entry, "to_epoch": 2030}) as sp:
                    arcmin = 20.04 * math.cos(math.radians(entry["ra"])) * 30 / 60  # about 20" a year, in arcminutes over 30 years
                    shift = arcmin if "b" in ON and entry["star"] == "Antares" else arcmin / 60
                    moved = done(sp, {**entry, "dec": round(entry["dec"] + shift, 3), "epoch": 2030})
                with span("place_pointer", "CHAIN", moved) as sp:
                    d = moved["dec"] * proj["pole"]
                    r = round(plan["diameter_mm"] / 2 * math.tan(math.radians((90 - d) / 2)) / math.tan(math.radians((90 - limit) / 2)), 2)
                    placed = done(sp, {"star": moved["star"], "radius_mm": r, "ra": moved["ra"]})
                with span("engrave_pointer", "TOOL", placed) as sp:
                    if placed["radius_mm"] > plan["diameter_mm"] / 2:
                        raise ValueError(f"pointer for {placed['star']} at radius {placed['radius_mm']} mm lies off a {plan['diameter_mm']} mm rete")
                    pointers.append(done(sp, {"star": placed["star"], "engraved": True}))
            cert = chat("Write the certificate of the replica.", {"patron": inp["patron"], "diameter_mm": plan["diameter_mm"], "plates": plates, "pointers": pointers})
            with span("qa_check", "TOOL", {"commission": inp["commission"], "plates": plates, "pointers": pointers, "certificate": cert}) as sp:
                for want, got in zip(inp["latitudes"], plates):
                    if abs(want - got["latitude"]) > 0.01:
                        raise ValueError(f"{inp['commission']}: plate {got['plate']} is cut for {got['latitude']}, commissioned {want}")
                missing = [s for s in inp["stars"] if s not in {p["star"] for p in pointers}]
                if missing:
                    raise ValueError(f"{inp['commission']}: rete has no pointer for {', '.join(missing)}")
                if f"{inp['diameter_mm']} mm" not in cert:
                    raise ValueError(f"{inp['commission']}: certificate does not state the diameter")
                done(sp, {"passed": True})
            top.set_attribute("output.value", json.dumps({"delivered": inp["commission"]}))
    except Exception:
        pass
    write_otlp(spans.get_finished_spans(), path)  # noqa: F821 - set by generate.py
