"""Mosaic tiling commissions studio (OpenTelemetry spans, OpenInference conventions, OTLP/JSON)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from . import common
from .common import Case
from .kit import active

NAME = "mosaic-commission-studio"
ROUTE = "otlp"
DOMAIN = "mosaic tiling commissions"
SHAPE = "receive brief -> read_brief (llm) -> parse_brief -> palette_search per colour (retriever) -> grout_advisor sub-agent (llm + tool) -> build_prompt -> compose_proposal (llm) -> tile_count -> stock_check per colour (tool, retry) -> submit_commission"
MODEL = "mosaic-studio-1"
PITCH_CM = 1.2
PER_BOX = 1000

CATALOGUE = [
    {"sku": "SM-201", "material": "smalti", "colour": "cobalt"}, {"sku": "CER-114", "material": "ceramic", "colour": "cobalt"},
    {"sku": "SM-204", "material": "smalti", "colour": "ochre"}, {"sku": "CER-131", "material": "ceramic", "colour": "ochre"},
    {"sku": "SM-207", "material": "smalti", "colour": "white"}, {"sku": "GL-310", "material": "glass", "colour": "white"},
    {"sku": "SM-290", "material": "smalti", "colour": "gold"}, {"sku": "GL-322", "material": "glass", "colour": "gold"},
    {"sku": "SM-215", "material": "smalti", "colour": "terracotta"}, {"sku": "CER-140", "material": "ceramic", "colour": "terracotta"},
    {"sku": "GL-305", "material": "glass", "colour": "teal"}, {"sku": "SM-222", "material": "smalti", "colour": "teal"},
    {"sku": "CER-150", "material": "ceramic", "colour": "black"}, {"sku": "GL-330", "material": "glass", "colour": "black"},
]
PREVIOUS = {"client": "Ashdown Primary School", "commission": "MC-0871", "wall_cm": [200, 160]}

INPUTS = [
    {"commission": "MC-0904", "client": "Harlow Library Trust", "wall_cm": [160, 150], "material": "smalti",
     "palette": "cobalt, ochre, white and gold", "flaky": "ochre"},
    {"commission": "MC-0911", "client": "St Anne's Chapel", "wall_cm": [120, 200], "material": "smalti",
     "palette": "teal, terracotta and white", "flaky": None},
    {"commission": "MC-0889", "client": "Riverside Cafe", "wall_cm": [90, 60], "material": "glass",
     "palette": "teal, gold and black", "flaky": None},
    {"commission": "MC-0893", "client": "Mill Lane Surgery", "wall_cm": [140, 100], "material": "ceramic",
     "palette": "cobalt, ochre and terracotta", "flaky": "cobalt"},
    {"commission": "MC-0897", "client": "Quay Street Flats", "wall_cm": [200, 120], "material": "smalti",
     "palette": "gold and white", "flaky": None},
    {"commission": "MC-0900", "client": "Oak House Hotel", "wall_cm": [110, 110], "material": "ceramic",
     "palette": "black, terracotta and ochre", "flaky": None},
]

CASES = [
    Case("zn_mosaic_1", "wrong_retrieval", 0, "palette_search", 1, "submit_commission",
         "palette_search for cobalt drops the material filter and returns the ceramic tile CER-114 for a smalti commission."),
    Case("zn_mosaic_2", "context_pollution", 1, "build_prompt", 1, "submit_commission",
         "build_prompt appends the studio's previous commission brief, and the proposal takes that brief's wall size."),
    Case("zn_mosaic_3", "swallowed_error", 0, "stock_check", 5, "submit_commission",
         "the stock check for the last colour catches the warehouse's 503 and records the boxes as reserved."),
    Case("zn_mosaic_4", "off_by_one", 1, "tile_count", 1, "submit_commission",
         "tile_count counts the rows with range(1, rows) and leaves one row of the panel without tesserae."),
    Case("zn_mosaic_5", "lossy_parsing", 0, "parse_brief", 1, "submit_commission",
         "parse_brief splits the palette on commas only, so 'white and gold' becomes one colour and gold is lost."),
]


def _inp(text: str) -> dict:
    return next(i for i in INPUTS if i["commission"] in text)


def _grid(wall: list[int]) -> tuple[int, int]:
    return math.ceil(wall[1] / PITCH_CM), math.ceil(wall[0] / PITCH_CM)


@common.policy(MODEL)
def _policy(body: dict) -> str:
    system = body["messages"][0]["content"]
    user = common.first_user(body)
    if "read commission briefs" in system:
        inp = _inp(user)
        return json.dumps({"commission": inp["commission"], "client": inp["client"],
                           "wall": f"{inp['wall_cm'][0]} x {inp['wall_cm'][1]} cm", "material": inp["material"],
                           "palette": inp["palette"]})
    if "grout" in system:
        data = common.data_block(body)
        dark = any(c in ("cobalt", "black", "teal") for c in data["colours"])
        return json.dumps({"grout": "charcoal" if dark else "pale grey", "width_mm": 2})
    walls = re.findall(r"Wall: (\d+) x (\d+) cm", user)
    w, h = map(int, walls[-1])
    inp = _inp(user)
    return json.dumps({"commission": inp["commission"], "area_m2": round(w * h / 10000, 2),
                       "summary": f"A {inp['material']} panel in {inp['palette']}, {w} x {h} cm."})


def record(path: Path, inp: dict) -> None:
    ot = common.Otlp("mosaic-studio")
    try:
        _run(ot, inp)
    finally:
        ot.write(path)


def _run(ot: common.Otlp, inp: dict) -> None:
    with ot.span("mosaic_commission", "AGENT", input=f"commission {inp['commission']}", agent__name=NAME) as top:
        with ot.span("receive_brief", "CHAIN", input={"commission": inp["commission"]}) as s:
            s.output = brief = (f"Commission {inp['commission']} for {inp['client']}: a {inp['material']} mosaic on a "
                                f"wall {inp['wall_cm'][0]} cm wide and {inp['wall_cm'][1]} cm high, palette "
                                f"{inp['palette']}.")
        raw = ot.llm("read_brief", MODEL, "You read commission briefs and answer JSON.", brief)
        with ot.span("parse_brief", "CHAIN", input=raw) as s:
            b = json.loads(raw)
            parts = [p.strip() for p in b["palette"].split(",")]
            colours = []
            for p in parts:
                colours.extend([p] if active("zn_mosaic_5") else [x.strip() for x in p.split(" and ")])
            w, h = map(int, re.findall(r"\d+", b["wall"])[:2])
            s.output = parsed = {"commission": b["commission"], "client": b["client"], "wall_cm": [w, h],
                                 "material": b["material"], "colours": colours}
        skus = {}
        for n, colour in enumerate(parsed["colours"]):
            query = {"text": colour, "material": parsed["material"]}
            if active("zn_mosaic_1") and n == 0:
                query = {"text": colour}
            with ot.span("palette_search", "RETRIEVER", input=query) as s:
                words = set(colour.split())
                hits = [c for c in CATALOGUE if c["colour"] in words and c["material"] == query.get("material", c["material"])]
                hits.sort(key=lambda c: c["sku"])
                s.output = [{"id": c["sku"], "content": f"{c['material']} tessera, {c['colour']}", "score": 0.9}
                            for c in hits[:3]]
            skus[colour] = hits[0]["sku"]
        with ot.span("grout_advisor", "AGENT", input={"colours": parsed["colours"]}, agent__name="grout_advisor") as g:
            advice = json.loads(ot.llm("advise_grout", MODEL, "You advise on grout for mosaics. Answer JSON.",
                                       f"DATA:{json.dumps({'colours': parsed['colours'], 'material': parsed['material']})}"))
            with ot.span("grout_catalogue", "TOOL", input=advice) as s:
                s.output = grout = {"sku": "GR-" + ("C2" if advice["grout"] == "charcoal" else "P1"), **advice}
            g.output = grout
        with ot.span("build_prompt", "CHAIN", input=parsed) as s:
            lines = [f"Commission {parsed['commission']} for {parsed['client']}.",
                     f"Wall: {parsed['wall_cm'][0]} x {parsed['wall_cm'][1]} cm", f"Palette: {', '.join(parsed['colours'])}"]
            if active("zn_mosaic_2"):
                lines += [f"Earlier commission {PREVIOUS['commission']} for {PREVIOUS['client']}:",
                          f"Wall: {PREVIOUS['wall_cm'][0]} x {PREVIOUS['wall_cm'][1]} cm"]
            s.output = prompt = "\n".join(lines)
        proposal = json.loads(ot.llm("compose_proposal", MODEL, "You write mosaic proposals as JSON.", prompt))
        with ot.span("tile_count", "CHAIN", input={"wall_cm": parsed["wall_cm"], "colours": parsed["colours"]}) as s:
            rows, cols = _grid(parsed["wall_cm"])
            counted_rows = len(range(1, rows)) if active("zn_mosaic_4") else len(range(rows))
            total = counted_rows * cols
            share = {c: total // len(parsed["colours"]) for c in parsed["colours"]}
            share[parsed["colours"][0]] += total - sum(share.values())
            s.output = counts = {"rows": counted_rows, "cols": cols, "tesserae": total, "per_colour": share}
        reserved = {}
        for n, colour in enumerate(parsed["colours"]):
            boxes = math.ceil(counts["per_colour"][colour] / PER_BOX)
            for attempt in (1, 2):
                try:
                    with ot.span("stock_check", "TOOL", input={"sku": skus[colour], "boxes": boxes}) as s:
                        if colour == inp["flaky"] and attempt == 1:
                            raise ConnectionError("warehouse API connection reset")
                        try:
                            if active("zn_mosaic_3") and n == len(parsed["colours"]) - 1:
                                raise RuntimeError("HTTP 503 Service Unavailable from stock service")
                            held = {"sku": skus[colour], "boxes": boxes, "hold": f"H-{skus[colour]}-{boxes}"}
                        except RuntimeError:
                            held = {"sku": skus[colour], "boxes": boxes, "hold": f"H-{skus[colour]}-{boxes}", "pending": True}
                        s.output = {k: v for k, v in held.items() if k != "pending"}
                    break
                except ConnectionError:
                    continue
            reserved[colour] = held
        order = {"commission": parsed["commission"], "material": parsed["material"], "grout": grout["sku"],
                 "area_m2": proposal["area_m2"], "lines": [
                     {"colour": c, "sku": r["sku"], "boxes": r["boxes"], "tesserae": counts["per_colour"][c],
                      "hold": r["hold"], "confirmed": not r.get("pending")} for c, r in reserved.items()]}
        with ot.span("submit_commission", "TOOL", input=order) as s:
            s.output = _submit(order)
        top.output = s.output


def _submit(order: dict) -> dict:
    """The studio's order system: checks the commission order against the signed brief and the warehouse."""
    inp = next(i for i in INPUTS if i["commission"] == order["commission"])
    signed = [x.strip() for p in inp["palette"].split(",") for x in p.split(" and ")]
    if len(order["lines"]) != len(signed):
        raise ValueError(f"HTTP 422: order has {len(order['lines'])} palette lines but signed brief "
                         f"{order['commission']} names {len(signed)} ({', '.join(signed)})")
    for line in order["lines"]:
        mat = next(c["material"] for c in CATALOGUE if c["sku"] == line["sku"])
        if mat != inp["material"]:
            raise ValueError(f"HTTP 422: tile {line['sku']} is {mat}; commission {order['commission']} specifies "
                             f"{inp['material']} throughout")
    area = round(inp["wall_cm"][0] * inp["wall_cm"][1] / 10000, 2)
    if abs(order["area_m2"] - area) > 0.01:
        raise ValueError(f"HTTP 422: proposal area {order['area_m2']:.2f} m2 differs from the surveyed wall "
                         f"{area:.2f} m2")
    rows, cols = _grid(inp["wall_cm"])
    have = sum(line["tesserae"] for line in order["lines"])
    if have < rows * cols:
        raise ValueError(f"HTTP 422: ordered tesserae ({have}) cover {have // cols} of {rows} rows of the "
                         f"{inp['wall_cm'][0]} x {inp['wall_cm'][1]} cm panel")
    for line in order["lines"]:
        if not line["confirmed"]:
            raise ValueError(f"HTTP 409: no stock reservation {line['hold']} found for {line['sku']}; 0 boxes held")
    return {"status": "accepted", "commission": order["commission"], "studio_ref": "ST-" + order["commission"][3:]}
