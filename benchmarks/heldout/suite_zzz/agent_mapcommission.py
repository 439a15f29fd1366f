"""Cartographer's map commissions (otlp route): OpenInference spans exported as OTLP JSON. A survey index
retriever, then a loop over every sheet of the commission (sheet tool, model labelling through the
instrumented OpenAI client, label parser, placement), a grid projection, layout and a print proof check.
"""
from __future__ import annotations

import functools
import json

from openai import OpenAI

from suite_common import last_user, otel, span_attrs, write_otlp

NAME = "map-commissions"
ROUTE = "otlp"
DOMAIN = "a cartographer's map commissions"
SHAPE = "OTLP spans: intake, survey index retriever, loop over 6-12 sheets (sheet tool, LLM labelling, label parser, placement), grid projection tool, layout, print proof check; 30-54 spans"
SWITCH = None

SCALE = "1:25000"
HEIGHTS = {f"SX{c}{r}": {f"Tor {c}{r}": 300 + 13 * c + 7 * r,
                         f"Cairn {c}{r}": 200 + 11 * r + 5 * c} for c in range(1, 9) for r in range(1, 9)}
NAMED = {"SX43": {"Black Tor": 612.5, "Cairn 43": 255}, "SX55": {"Hound Tor": 414.0, "Cairn 55": 280}}
HEIGHTS.update(NAMED)

INPUTS = [
    {"client": "Dartmoor Walking Club", "cols": [1, 3], "rows": [1, 2], "title": "Northern Moor"},
    {"client": "Parish of Lydford", "cols": [3, 5], "rows": [2, 4], "title": "Lydford and the Tors"},
    {"client": "Teign Valley Trust", "cols": [4, 6], "rows": [4, 6], "title": "Teign Headwaters"},
    {"client": "Okement Estates", "cols": [6, 8], "rows": [1, 3], "title": "Okement Hill"},
    {"client": "Moor Rescue", "cols": [2, 5], "rows": [5, 7], "title": "Rescue Sectors South"},
]

CASES = [
    {"id": "zzz-map-1", "switch": "index_cols", "input": 4, "kind": "off_by_one",
     "root": ("survey_index", 1), "failure": ("print_proof", 1),
     "description": "The survey index stops one column short of the commission's eastern edge, so sheets SX55, SX56 and SX57 are never drawn."},
    {"id": "zzz-map-2", "switch": "index_series", "input": 0, "kind": "wrong_retrieval",
     "root": ("survey_index", 1), "failure": ("print_proof", 1),
     "description": "The survey index returns the 1:50000 series sheets for a 1:25000 commission."},
    {"id": "zzz-map-3", "switch": "label_int", "input": 1, "kind": "lossy_parsing",
     "root": ("parse_labels", 5), "failure": ("print_proof", 1),
     "description": "The label parser keeps only whole metres, turning Black Tor's 612.5 m spot height into 612 m."},
    {"id": "zzz-map-4", "switch": "label_height", "input": 2, "kind": "hallucinated_value",
     "root": ("ChatCompletion", 5), "failure": ("print_proof", 1),
     "description": "The labelling model gives Hound Tor a height of 448 m; the sheet it was handed says 414 m."},
    {"id": "zzz-map-5", "switch": "grid_km", "input": 3, "kind": "unit_error",
     "root": ("grid_projection", 1), "failure": ("print_proof", 1),
     "description": "The grid projection returns the sheet origins in kilometres instead of metres, so every label lands far outside its sheet."},
]

_tracer = None
_client = None


def span(kind):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            with _tracer.start_as_current_span(fn.__name__, attributes=span_attrs(kind, list(args))) as s:
                out = fn(*args)
                s.set_attribute("output.value", json.dumps(out))
                s.set_attribute("output.mime_type", "application/json")
                return out
        return wrapper
    return deco


@span("CHAIN")
def commission_intake(req):
    return dict(req, scale=SCALE)


@span("RETRIEVER")
def survey_index(cols, rows, scale):
    series = "1:50000" if SWITCH == "index_series" else scale
    last_col = cols[1] - 1 if SWITCH == "index_cols" else cols[1]
    return [{"sheet": f"SX{c}{r}", "series": series, "col": c, "row": r}
            for c in range(cols[0], last_col + 1) for r in range(rows[0], rows[1] + 1)]


@span("TOOL")
def fetch_sheet(sheet):
    return {"sheet": sheet["sheet"], "series": sheet["series"], "spot_heights": HEIGHTS[sheet["sheet"]]}


def label_sheet(data):
    reply = _client.chat.completions.create(
        model="fake-model", temperature=0,
        messages=[{"role": "system", "content": "You label map sheets: list each named feature with its height in metres as JSON."},
                  {"role": "user", "content": "SHEET:" + json.dumps(data)}])
    return reply.choices[0].message.content


@span("CHAIN")
def parse_labels(text):
    labels = json.loads(text)["labels"]
    out = []
    for lab in labels:
        h = float(lab["height"].rstrip(" m"))
        if SWITCH == "label_int" and "." in lab["height"]:
            h = float(int(h))
        out.append({"name": lab["name"], "height_m": h, "sheet": lab["sheet"]})
    return out


@span("CHAIN")
def place_labels(labels, sheet):
    return [dict(lab, dx=120 + 310 * i, dy=400 + 170 * i) for i, lab in enumerate(labels)]


@span("TOOL")
def grid_projection(sheets):
    out = {}
    for s in sheets:
        e, n = 250000 + 5000 * s["col"], 50000 + 5000 * s["row"]
        if SWITCH == "grid_km":
            e, n = e / 1000, n / 1000
        out[s["sheet"]] = {"easting": e, "northing": n}
    return out


@span("CHAIN")
def compose_layout(title, placed, origins):
    labels = []
    for sheet, labs in placed.items():
        o = origins[sheet]
        for lab in labs:
            labels.append(dict(lab, easting=o["easting"] + lab["dx"], northing=o["northing"] + lab["dy"]))
    return {"title": title, "labels": labels, "sheets": sorted(placed)}


@span("GUARDRAIL")
def print_proof(commission, sheets, layout):
    want = {f"SX{c}{r}" for c in range(commission["cols"][0], commission["cols"][1] + 1)
            for r in range(commission["rows"][0], commission["rows"][1] + 1)}
    missing = sorted(want - set(layout["sheets"]))
    if missing:
        raise ValueError(f"proof of {commission['title']}: no sheet drawn for {', '.join(missing)}")
    for s in sheets:
        if s["series"] != commission["scale"]:
            raise ValueError(f"proof of {commission['title']}: sheet {s['sheet']} is from the {s['series']} series, commission is {commission['scale']}")
    for lab in layout["labels"]:
        surveyed = HEIGHTS[lab["sheet"]][lab["name"]]
        if abs(lab["height_m"] - surveyed) > 0.05:
            raise ValueError(f"proof of {commission['title']}: {lab['name']} printed at {lab['height_m']} m, survey register has {surveyed} m")
        col, row = int(lab["sheet"][2]), int(lab["sheet"][3])
        e0, n0 = 250000 + 5000 * col, 50000 + 5000 * row
        if not (e0 <= lab["easting"] < e0 + 5000 and n0 <= lab["northing"] < n0 + 5000):
            raise ValueError(f"proof of {commission['title']}: label {lab['name']} at E{lab['easting']} N{lab['northing']} falls outside sheet {lab['sheet']}")
    return {"proof": "passed", "title": commission["title"], "labels": len(layout["labels"])}


def policy(request):
    data = json.loads(last_user(request).split("SHEET:", 1)[1])
    labels = []
    for name, h in data["spot_heights"].items():
        if SWITCH == "label_height" and name == "Hound Tor":
            h = 448.0
        labels.append({"name": name, "height": f"{h:g} m", "sheet": data["sheet"]})
    return json.dumps({"labels": labels})


def record(inp, path, server):
    global _tracer, _client
    provider, spans = otel()
    spans.clear()
    _tracer = provider.get_tracer("map-commissions")
    _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with _tracer.start_as_current_span(NAME, attributes=dict(span_attrs("AGENT", inp), **{"session.id": inp["client"]})):
            com = commission_intake(inp)
            sheets = survey_index(com["cols"], com["rows"], com["scale"])
            placed = {}
            for sh in sheets:
                data = fetch_sheet(sh)
                labels = parse_labels(label_sheet(data))
                placed[sh["sheet"]] = place_labels(labels, sh["sheet"])
            origins = grid_projection(sheets)
            layout = compose_layout(com["title"], placed, origins)
            print_proof(com, sheets, layout)
    finally:
        provider.force_flush()
        write_otlp(spans, path)
