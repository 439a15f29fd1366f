"""Hand-painted sign commissions (otlp): brief -> style refs -> layout model -> palette memory -> gilding sub-agent -> permit."""

from __future__ import annotations

import json
import re
from typing import Any

from .common import Otlp, last_user
from .kit import active

NAME = "signwriter-commission"
ROUTE = "otlp"
INPUTS = {
    "bramble": "Fascia for 'Bramble & Finch': 2400 mm x 450 mm, gold leaf lettering, colours oxblood and cream, conservation area",
    "tollgate": "Hanging sign for 'The Tollgate Inn': 900 mm x 700 mm, gold leaf lettering, colours bottle green and ivory, conservation area",
    "ref1": "Fascia for 'Hart Ironmongers': 3000 mm x 500 mm, gold leaf lettering, colours navy and gold, conservation area",
    "ref2": "Fascia for 'Pell Books': 1800 mm x 400 mm, gold leaf lettering, colours black and cream, conservation area",
    "ref3": "Hanging sign for 'The Wheatsheaf': 800 mm x 600 mm, gold leaf lettering, colours maroon and ivory, conservation area",
    "ref4": "Fascia for 'Quill & Ink': 2200 mm x 420 mm, gold leaf lettering, colours teal and cream, conservation area",
}
STYLE_LIBRARY = [
    {"ref": "SL-14", "title": "gold leaf lettering water gilded shaded", "method": "water gilding"},
    {"ref": "SL-22", "title": "vinyl cut lettering gold effect", "method": "vinyl"},
    {"ref": "SL-31", "title": "enamel lettering block shaded", "method": "enamel"},
]


def policy(request: Any) -> str:
    text = last_user(request)
    if text.startswith("LAYOUT"):
        d = json.loads(text[6:])
        h = int(d["panel_h_mm"] * 0.55)
        if active("sg_halluc"):
            h = int(d["panel_h_mm"] * 1.15)
        return json.dumps({"letter_height_mm": h, "lines": 1, "method": d["method"]})
    if text.startswith("GILD"):
        d = json.loads(text[4:])
        return json.dumps({"leaf": "23.5ct loose leaf", "books": max(1, d["area_m2"] * 4 // 1)})
    return "ok"


def run_case(ctx: dict, inp: str, path: str) -> None:
    client = ctx["client"]
    text = INPUTS[inp]
    o = Otlp("signwriter")
    memory: dict = {}
    try:
        with o.span("signwriter_commission", "AGENT", text, session__id=f"sign-{inp}"):
            with o.span("commission_intake", "CHAIN", text) as s:
                s.value = {"brief": text}
            with o.span("parse_brief", "CHAIN", text) as s:
                dims = re.search(r"(\d+) mm x (\d+) mm", text)
                colour_pat = r"colours (\w+(?: \w+)?) and (\w+)" if not active("sg_lossy") else r"colours (\w+)"
                colours = [c for c in re.search(colour_pat, text).groups()]
                brief = {"name": re.search(r"'(.+?)'", text).group(1), "w_mm": int(dims.group(1)), "h_mm": int(dims.group(2)),
                         "colours": colours, "heritage": "conservation area" in text}
                s.value = brief
            with o.span("search_style_library", "RETRIEVER", "gold leaf lettering") as s:
                q = {"gold", "leaf", "lettering"}
                if active("sg_retrieval"):
                    q = {"gold", "lettering", "cut"}
                hits = sorted(STYLE_LIBRARY, key=lambda r: -len(q & set(r["title"].split())))[:2]
                for i, h in enumerate(hits):
                    s.sp.set_attribute(f"retrieval.documents.{i}.document.id", h["ref"])
                    s.sp.set_attribute(f"retrieval.documents.{i}.document.content", json.dumps(h))
                s.value = hits
            method = hits[0]["method"]
            area = round(brief["w_mm"] * brief["h_mm"] / 1e6, 2)
            layout = json.loads(o.llm("plan_layout", client, [
                {"role": "system", "content": "You are a signwriter planning letter layout."},
                {"role": "user", "content": "LAYOUT" + json.dumps({"panel_w_mm": brief["w_mm"], "panel_h_mm": brief["h_mm"], "name": brief["name"], "method": method})}]))
            for c in brief["colours"]:
                with o.span("remember_palette", "CHAIN", {"colour": c}) as s:
                    key = "palette"
                    if active("sg_memory") and c == brief["colours"][-1]:
                        key = "palette_archive"
                    memory.setdefault(key, []).append(c)
                    s.value = {k: list(v) for k, v in memory.items()}
            for c in memory.get("palette", []):
                with o.span("mix_paint", "TOOL", {"colour": c, "litres": 0.5}, tool__name="mix_paint") as s:
                    s.value = {"colour": c, "batch": f"MX-{len(c) * 37}", "litres": 0.5}
            with o.span("gilding_agent", "AGENT", {"area_m2": area}):
                gild = json.loads(o.llm("gilding_plan", client, [{"role": "user", "content": "GILD" + json.dumps({"area_m2": area})}]))
                for coat in ("size", "leaf", "burnish"):
                    with o.span("gilding_pass", "TOOL", {"coat": coat, "leaf": gild["leaf"]}, tool__name="gilding_pass") as s:
                        s.value = {"coat": coat, "ok": True}
            with o.span("mockup_check", "TOOL", {"colours": brief["colours"], "palette": memory.get("palette", [])}, tool__name="mockup_check") as s:
                mixed = memory.get("palette", [])
                s.value = {"approved_colours": 2, "mixed": len(mixed)}
                if len(mixed) != 2:
                    raise RuntimeError(f"ColourScheduleError: consent drawing has 2 colours, paint schedule has {len(mixed)} ({', '.join(mixed)})")
            with o.span("convert_board_size", "CHAIN", {"w_mm": brief["w_mm"], "h_mm": brief["h_mm"]}) as s:
                f = 0.1 if active("sg_unit") else 1.0
                board = {"w_mm": brief["w_mm"] * f, "h_mm": brief["h_mm"] * f, "area_m2": round(brief["w_mm"] * brief["h_mm"] / 1e6, 2)}
                s.value = board
            with o.span("submit_permit", "TOOL", {"board": board, "layout": layout, "method": method, "palette": memory.get("palette", [])}, tool__name="submit_permit") as s:
                errs = []
                if brief["heritage"] and method != "water gilding":
                    errs.append(f"method '{method}' is not permitted on heritage frontages")
                if layout["letter_height_mm"] > board["h_mm"]:
                    errs.append(f"letter_height_mm {layout['letter_height_mm']} exceeds board height {board['h_mm']}")
                if board["w_mm"] < 500:
                    errs.append(f"board width {board['w_mm']} mm below the 500 mm minimum for a registered advertisement")
                if errs:
                    raise RuntimeError("HTTP 400 from planning portal: " + json.dumps({"errors": errs}))
                s.value = {"reference": f"ADV/{brief['name'][:4].upper()}/26", "status": "lodged"}
    except RuntimeError:
        pass
    o.write(path)


CASES = [
    ("sg_retrieval", "wrong_retrieval", "bramble", "search_style_library", 1, "retrieval", "submit_permit", 1,
     "The style search matches the vinyl-cut reference first, so the commission is planned with vinyl instead of water gilding."),
    ("sg_memory", "bad_memory_write", "tollgate", "remember_palette", 2, "other", "mockup_check", 1,
     "The second colour is stored in the archive slot of the palette memory, so only one colour is mixed and scheduled."),
    ("sg_lossy", "lossy_parsing", "bramble", "parse_brief", 1, "other", "mockup_check", 1,
     "The brief parser keeps only the first of the two colours."),
    ("sg_unit", "unit_error", "tollgate", "convert_board_size", 1, "other", "submit_permit", 1,
     "The board conversion treats the millimetre figures as centimetres, so the board is submitted ten times too small."),
    ("sg_halluc", "hallucinated_value", "tollgate", "plan_layout", 1, "llm", "submit_permit", 1,
     "The layout model states a letter height taller than the board, a figure nothing in the brief gives."),
]
REFS = ["ref1", "ref2", "ref3", "ref4"]
