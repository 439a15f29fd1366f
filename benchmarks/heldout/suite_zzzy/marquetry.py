"""Marquetry workshop: OpenInference + OpenTelemetry spans written as OTLP JSON. A long loop over the
pieces of a pattern (stock lookup, a shading router, a cut per piece), a border sub-agent with its own
model call, sheet layout, press booking and a panel check; 25-60 spans."""
from __future__ import annotations

import json
import re

from common import Otlp, client, last_user, system_text

NAME = "marquetry-panels"
ROUTE = "otlp"
DOMAIN = "marquetry workshop"
SHAPE = ("OTLP: pattern model call -> parser -> loop over 6-12 pieces (veneer stock tool, shading router, cut) -> "
         "border sub-agent (model + spec tool) -> sheet layout -> press booking -> panel check; 27-39 spans")
SWITCH = None

VENEER = {"pear": 14, "sycamore": 20, "walnut": 9, "box": 6, "bog oak": 4, "harewood": 11, "tulipwood": 5, "ebony": 7}
BORDERS = {"MP-88": {"stringing": "box and ebony", "width_mm": 6}, "MP-86": {"stringing": "tulipwood", "width_mm": 9},
           "MP-91": {"stringing": "harewood", "width_mm": 5}, "MP-93": {"stringing": "box", "width_mm": 4},
           "MP-97": {"stringing": "ebony", "width_mm": 3}, "MP-89": {"stringing": "walnut", "width_mm": 8}}
LEAF_CM2 = 600

PANELS = {
    "MP-88": ("Rose spray tabletop, 480 cm2: petals in pear 40 cm2 x3 shaded, leaves in sycamore 35 cm2 x2, "
              "stem in walnut 20 cm2, ground in bog oak 270 cm2", 480),
    "MP-91": ("Shell fan box lid, 300 cm2: fan in harewood 30 cm2 x4 shaded, hinge in box 10 cm2, ground in walnut 170 cm2", 300),
    "MP-93": ("Tulip door panel, 360 cm2: bloom in tulipwood 25 cm2 x2 shaded, leaves in sycamore 20 cm2 x3, "
              "stem in box 10 cm2, ground in pear 240 cm2", 360),
    "MP-97": ("Star parquetry tray, 520 cm2: points in harewood 20 cm2 x8, centre in ebony 15 cm2, "
              "ground in sycamore 345 cm2", 520),
    "MP-89": ("Bird roundel, 250 cm2: wing in pear 18 cm2 x2 shaded, body in harewood 30 cm2, eye in ebony 4 cm2, "
              "branch in walnut 20 cm2, ground in sycamore 160 cm2", 250),
}
INPUTS = [{"panel": p, "brief": b} for p, (b, _) in PANELS.items()]

CASES = [
    {"id": "zzzy-marquetry-1", "input": 0, "switch": "mm2", "fault_kind": "format_drift",
     "root": ("ChatCompletion", 1), "failure": ("panel_check", 1),
     "description": "The pattern model gives the stem's size as area_mm2 instead of area_cm2, and the parser reads the missing key as zero."},
    {"id": "zzzy-marquetry-2", "input": 1, "switch": "catalogue", "fault_kind": "swallowed_error",
     "root": ("veneer_stock", 5), "failure": ("book_press", 1),
     "description": "The veneer stock lookup for box hits a catalogue error, catches it and answers with an empty list of leaves."},
    {"id": "zzzy-marquetry-3", "input": 2, "switch": "border", "fault_kind": "subagent_wrong_entity",
     "root": ("ChatCompletion", 2), "failure": ("panel_check", 1),
     "description": "The border sub-agent's model asks for the stringing spec of panel MP-86 instead of MP-93."},
    {"id": "zzzy-marquetry-4", "input": 3, "switch": "pieces", "fault_kind": "lossy_parsing",
     "root": ("read_pattern", 1), "failure": ("panel_check", 1),
     "description": "The pattern parser reads the repeat count of the star points as one piece and drops the other seven."},
    {"id": "zzzy-marquetry-5", "input": 4, "switch": "shade", "fault_kind": "wrong_routing",
     "root": ("shading_route", 2), "failure": ("panel_check", 1),
     "description": "The shading router sends the second wing piece to the plain cut although the pattern marks it for sand shading."},
]


def policy(request):
    system = system_text(request)
    user = last_user(request)
    if system.startswith("Border"):
        panel = re.search(r"MP-\d+", user).group(0)
        if SWITCH == "border":
            panel = "MP-86"
        return json.dumps({"panel": panel})
    pieces = []
    for name, species, area, times, shaded in re.findall(r"(\w+) in ([a-z ]+?) (\d+) cm2(?: x(\d+))?( shaded)?", user):
        p = {"piece": name, "species": species, "area_cm2": int(area), "count": int(times or 1), "shaded": bool(shaded)}
        if SWITCH == "mm2" and name == "stem":
            p["area_mm2"] = p.pop("area_cm2") * 100
        pieces.append(p)
    return json.dumps({"pieces": pieces})


def run_one(inp, server, path):
    o = Otlp(NAME)
    oa = client(server)
    panel = inp["panel"]
    try:
        with o.span(NAME, "AGENT", inp, metadata=json.dumps({"task": f"marquetry panel {panel}"})) as top:
            reply = oa.chat.completions.create(model=server.model, messages=[
                {"role": "system", "content": "List the pieces of the marquetry pattern as JSON."},
                {"role": "user", "content": inp["brief"]}]).choices[0].message.content
            with o.span("read_pattern", "CHAIN", {"text": reply}) as s:
                pieces = []
                for p in json.loads(reply)["pieces"]:
                    n = 1 if SWITCH == "pieces" else p["count"]
                    for k in range(n):
                        pieces.append({"piece": f"{p['piece']} {k + 1}", "species": p["species"],
                                       "area_cm2": p.get("area_cm2", 0), "shaded": p["shaded"]})
                s["out"] = pieces
            cuts = []
            for piece in pieces:
                with o.span("veneer_stock", "TOOL", {"species": piece["species"]}) as s:
                    try:
                        if SWITCH == "catalogue" and piece["species"] == "box":
                            raise LookupError("catalogue page for box not found")
                        leaves = [f"{piece['species'][:3].upper()}-{i + 1}" for i in range(VENEER[piece["species"]])]
                    except LookupError:
                        leaves = []
                    s["out"] = {"species": piece["species"], "leaves": leaves}
                with o.span("shading_route", "CHAIN", {"piece": piece["piece"], "shaded": piece["shaded"]}) as s:
                    route = "sand_shade" if piece["shaded"] else "plain_cut"
                    if SWITCH == "shade" and piece["piece"] == "wing 2":
                        route = "plain_cut"
                    s["out"] = {"route": route}
                with o.span(route, "CHAIN", {"piece": piece["piece"], "leaf": leaves[0] if leaves else None}) as s:
                    cut = {"piece": piece["piece"], "species": piece["species"], "area_cm2": piece["area_cm2"],
                           "leaf": leaves[0] if leaves else None, "shaded": route == "sand_shade"}
                    cuts.append(cut)
                    s["out"] = cut
            with o.span("border_maker", "AGENT", {"panel": panel}) as sub:
                spec_req = oa.chat.completions.create(model=server.model, messages=[
                    {"role": "system", "content": "Border maker: name the panel whose stringing spec to fetch, as JSON."},
                    {"role": "user", "content": f"Border for panel {panel}"}]).choices[0].message.content
                want = json.loads(spec_req)["panel"]
                with o.span("border_spec", "TOOL", {"panel": want}) as s:
                    spec = dict(BORDERS[want], panel=want)
                    s["out"] = spec
                sub["out"] = spec
            with o.span("sheet_layout", "CHAIN", {"cuts": len(cuts)}) as s:
                by_leaf = {}
                for c in cuts:
                    by_leaf.setdefault(c["leaf"], 0)
                    by_leaf[c["leaf"]] += c["area_cm2"]
                s["out"] = {"leaves": by_leaf}
            with o.span("book_press", "TOOL", {"panel": panel, "leaves": list(by_leaf)}) as s:
                if None in by_leaf:
                    raise RuntimeError(f"press booking for {panel}: a piece has no veneer leaf to lay up")
                s["out"] = {"press": "P2", "slot": "Thursday 09:00"}
            with o.span("panel_check", "CHAIN", {"panel": panel}) as s:
                total = sum(c["area_cm2"] for c in cuts)
                want_area = PANELS[panel][1]
                if total != want_area:
                    raise AssertionError(f"{panel}: cut pieces cover {total} cm2 of the {want_area} cm2 panel")
                if spec["panel"] != panel:
                    raise AssertionError(f"{panel}: border stringing is the spec for {spec['panel']}")
                brief = inp["brief"]
                for c in cuts:
                    name = c["piece"].rsplit(" ", 1)[0]
                    if re.search(rf"{name} in [a-z ]+ \d+ cm2(?: x\d+)? shaded", brief) and not c["shaded"]:
                        raise AssertionError(f"{panel}: {c['piece']} was cut plain, the pattern asks for sand shading")
                s["out"] = {"ok": True, "area_cm2": total}
            top["out"] = {"panel": panel, "press": "P2"}
    finally:
        o.write(path)
