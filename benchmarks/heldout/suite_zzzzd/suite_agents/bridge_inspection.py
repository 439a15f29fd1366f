"""bridge-inspection: a state bridge office's routine-inspection reporting agent (OpenTelemetry + OpenInference).

The structure's element inventory and its vertical-clearance survey are fetched; a model turns the
inspector's field notes into element condition states and findings; each inventory element is routed
to its component (deck, superstructure, substructure) by an evaluator and written to the inspection
memory; when a primary member lost section, a load-rating sub-agent (section properties, the rating
engine, a model's summary) rates it; the component ratings are rolled up from the memory, a model
writes the narrative and the National Bridge Inventory submission tool checks the report.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from openai import OpenAI

from .common import Case, first_json, last_user, system_of
from .otlp_common import OtlpAgent

RUN_NAME = "bridge-inspection"
ROUTE = "otlp"
DOMAIN = "state bridge office: routine element-level inspection to the National Bridge Inventory"
SHAPE = "spans: inventory tool -> clearance tool -> llm extraction -> parse chain -> per-element evaluator (component route) + memory write -> load-rating sub-agent (tool, tool, llm) -> roll-up chain -> llm narrative -> NBI tool"

SWITCH: str | None = None


def _on(tag: str) -> bool:
    return SWITCH == tag  # the one place SWITCH is read


ELEMENTS = {
    12: ("Reinforced Concrete Deck", "sq ft"), 510: ("Wearing Surface", "sq ft"), 301: ("Pourable Joint Seal", "ft"),
    331: ("Reinforced Concrete Bridge Railing", "ft"), 107: ("Steel Open Girder/Beam", "ft"),
    109: ("Prestressed Concrete Open Girder/Beam", "ft"), 515: ("Steel Protective Coating", "sq ft"),
    310: ("Elastomeric Bearing", "each"), 215: ("Reinforced Concrete Abutment", "ft"), 234: ("Reinforced Concrete Pier Cap", "ft"),
    205: ("Reinforced Concrete Column", "each"),
}
COMPONENT = {12: "deck", 510: "deck", 301: "deck", 331: "deck", 107: "superstructure", 109: "superstructure",
             515: "superstructure", 310: "superstructure", 215: "substructure", 234: "substructure", 205: "substructure"}
PARENT = {515: 107, 510: 12}
PAGE_SIZE = 8

# structure -> inventory (element, quantity, description), clearance in metres as surveyed, field findings
BRIDGES: dict[str, dict[str, Any]] = {
    "27004": {"name": "TH 55 over Minnehaha Creek", "feature": "waterway", "clearance_m": None, "shape": "W33x130",
              "elements": [(12, 6840, "cast-in-place deck"), (331, 520, "type F barrier"), (301, 114, "pourable seals at both ends"),
                           (107, 1560, "Steel Open Girder/Beam, spans 1-3 deck girders G1-G6"), (310, 24, "laminated pads"),
                           (215, 148, "stub abutments"), (234, 96, "pier caps 1-2")],
              "cs": {12: (6200, 560, 80, 0), 331: (480, 40, 0, 0), 301: (60, 40, 14, 0), 107: (1380, 150, 30, 0),
                     310: (20, 4, 0, 0), 215: (130, 18, 0, 0), 234: (80, 16, 0, 0)},
              "loss": []},
    "62512": {"name": "CSAH 9 over I-94", "feature": "highway", "clearance_m": 4.94, "shape": None,
              "elements": [(12, 9120, "deck on prestressed beams"), (510, 9120, "low-slump overlay"), (331, 610, "type F barrier"),
                           (109, 2240, "MN54 prestressed beams"), (310, 32, "laminated pads"), (215, 176, "integral abutments"),
                           (234, 120, "pier caps"), (205, 8, "round columns")],
              "cs": {12: (8700, 420, 0, 0), 510: (8300, 760, 60, 0), 331: (600, 10, 0, 0), 109: (2180, 60, 0, 0), 310: (32, 0, 0, 0),
                     215: (160, 16, 0, 0), 234: (110, 10, 0, 0), 205: (8, 0, 0, 0)},
              "loss": []},
    "19005": {"name": "TH 3 over BNSF railway", "feature": "railroad", "clearance_m": 7.25, "shape": "W36x150",
              "elements": [(12, 7400, "cast-in-place deck"), (331, 540, "type J barrier"), (107, 1420, "rolled beams G1-G5"),
                           (515, 2100, "lead-based coating, 1986"), (310, 20, "steel rocker bearings replaced 2009"),
                           (215, 150, "cantilever abutments"), (234, 84, "pier caps")],
              "cs": {12: (6900, 420, 80, 0), 331: (500, 40, 0, 0), 107: (1180, 160, 80, 0), 515: (1300, 500, 300, 0),
                     310: (16, 4, 0, 0), 215: (140, 10, 0, 0), 234: (70, 14, 0, 0)},
              "loss": [("G3", 107, 38, "bottom flange and web at pier 2, 6 ft long")]},
    "73022": {"name": "CR 75 over Sauk River", "feature": "waterway", "clearance_m": None, "shape": "W30x108",
              "elements": [(12, 5200, "cast-in-place deck"), (331, 460, "type F barrier"), (301, 96, "pourable seals"),
                           (107, 1240, "rolled beams G1-G5"), (515, 1860, "zinc system, 2004"), (310, 20, "laminated pads"),
                           (215, 128, "stub abutments"), (234, 72, "pier caps")],
              "cs": {12: (4900, 300, 0, 0), 331: (440, 20, 0, 0), 301: (80, 16, 0, 0), 107: (1100, 120, 20, 0),
                     515: (1500, 300, 60, 0), 310: (18, 2, 0, 0), 215: (120, 8, 0, 0), 234: (66, 6, 0, 0)},
              "loss": [("G1", 107, 12, "web at abutment 1 bearing")]},
    "86801": {"name": "I-94 ramp over TH 10", "feature": "highway", "clearance_m": 5.12, "shape": None,
              "elements": [(12, 11800, "deck on prestressed beams"), (510, 11800, "epoxy chip seal"), (301, 210, "strip seals"),
                           (331, 760, "type F barrier"), (109, 2960, "MN63 prestressed beams"), (310, 40, "laminated pads"),
                           (215, 190, "integral abutments"), (234, 144, "pier caps"), (205, 12, "round columns"),
                           (234, 46, "pier 3 cap extension (2015)")],
              "cs": {12: (11200, 600, 0, 0), 510: (10900, 800, 100, 0), 301: (170, 40, 0, 0), 331: (740, 20, 0, 0),
                     109: (2900, 60, 0, 0), 310: (38, 2, 0, 0), 215: (180, 10, 0, 0), 234: (176, 14, 0, 0), 205: (12, 0, 0, 0)},
              "loss": []},
}
DESIGN = {"W33x130": {"area_in2": 38.3, "sx_in3": 406}, "W36x150": {"area_in2": 44.3, "sx_in3": 504},
          "W30x108": {"area_in2": 31.7, "sx_in3": 299}}

INPUTS: list[dict[str, Any]] = [
    {"task": f"routine inspection bridge {sid} ({b['name']}), 2024", "structure": sid} for sid, b in BRIDGES.items()
]

CASES = [
    Case("bi1", 1, "clearance-metres", "unit_error", ("clearance_survey", 1), ("nbi_submit", 1),
         "The clearance survey tool passed the crew's 4.94 m underclearance over I-94 on as 4.94 ft, and the NBI "
         "submission refused an underclearance far below the legal height with no sign on record."),
    Case("bi2", 0, "keyword-route", "wrong_routing", ("route_element", 4), ("nbi_submit", 1),
         "The element evaluator routed the steel girders (element 107, described as deck girders) to the deck "
         "component, so the deck rating rested on a superstructure element and the NBI submission refused it."),
    Case("bi3", 4, "inventory-page", "truncated_result", ("inventory_lookup", 1), ("nbi_submit", 1),
         "The inventory tool returned the first page of eight elements only, so the report left out the ramp's "
         "columns (element 205) and the NBI submission refused it as incomplete."),
    Case("bi4", 2, "section-timeout", "swallowed_error", ("load_rating_agent", 1), ("nbi_submit", 1),
         "The section-properties service timed out and the load-rating sub-agent went on with the gross section, "
         "so the rating ignored girder G3's 38 % section loss and the NBI submission refused it."),
    Case("bi5", 3, "parent-key", "bad_memory_write", ("inspection_memory.write", 5), ("nbi_submit", 1),
         "The memory write for the protective coating (element 515) used its parent element's key, so the girders' "
         "record was replaced by the coating's square feet and the NBI check found 107's quantity over its inventory."),
]

# --------------------------------------------------------------------------------------------------
# The model's side.
# --------------------------------------------------------------------------------------------------


def brain(request: Any) -> Any:
    messages = request.body["messages"]
    system = system_of(messages)
    user = last_user(messages)
    if system.startswith("Extract the element condition states"):
        elements, losses = [], []
        for line in user.splitlines():
            m = re.match(r"E(\d+) .*?: CS1 ([\d,]+), CS2 ([\d,]+), CS3 ([\d,]+), CS4 ([\d,]+)", line)
            if m:
                elements.append({"element": int(m.group(1)),
                                 "cs": [int(m.group(i).replace(",", "")) for i in range(2, 6)]})
            l = re.match(r"Section loss: (\w+) \(E(\d+)\) (\d+)% (.*)$", line)
            if l:
                losses.append({"member": l.group(1), "element": int(l.group(2)), "pct": int(l.group(3)), "where": l.group(4)})
        return json.dumps({"elements": elements, "section_loss": losses})
    if system.startswith("Summarise the load rating"):
        data = first_json(user)
        return (f"Operating rating factor {data['rf_operating']:.2f}, inventory {data['rf_inventory']:.2f} for {data['member']} "
                f"({data['section_loss_pct']} % section loss). " + ("No posting required." if data["rf_inventory"] >= 1.0 else
                                                                   "Posting recommended."))
    if system.startswith("Write the inspection narrative"):
        data = first_json(user)
        return (f"Routine inspection of {data['structure']}: deck {data['items']['58']}, superstructure "
                f"{data['items']['59']}, substructure {data['items']['60']}. " + " ".join(data.get("remarks", [])))
    return "?"


# --------------------------------------------------------------------------------------------------
# The agent.
# --------------------------------------------------------------------------------------------------

_otel = OtlpAgent("bridge-inspection-reporting", "dot.bridge.inspection")
_client: OpenAI | None = None
_model = "fake-model"


def setup(server: Any) -> None:
    global _client, _model
    _otel.instrument()
    _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _model = server.model


def teardown() -> None:
    global _client
    _otel.uninstrument()
    if _client is not None:
        _client.close()
    _client = None


def _chat(system: str, user: str) -> str:
    reply = _client.chat.completions.create(model=_model, temperature=0,
                                            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}])
    return reply.choices[0].message.content


def _notes(sid: str) -> str:
    b = BRIDGES[sid]
    lines = [f"Bridge {sid} {b['name']} - routine inspection 2024-08-14, inspector T. Lindqvist (team leader)"]
    for el, qty, desc in b["elements"]:
        if el in b["cs"] and not any(e == el for e, _q, _d in b["elements"][: b["elements"].index((el, qty, desc))]):
            c = b["cs"][el]
            lines.append(f"E{el} {ELEMENTS[el][0]} ({desc}): CS1 {c[0]:,}, CS2 {c[1]:,}, CS3 {c[2]:,}, CS4 {c[3]:,}")
    for member, el, pct, where in b["loss"]:
        lines.append(f"Section loss: {member} (E{el}) {pct}% {where}")
    lines.append("Photos 1-46 uploaded to the structure file.")
    return "\n".join(lines)


def _inventory(sid: str) -> dict:
    b = BRIDGES[sid]
    merged: dict[int, dict[str, Any]] = {}
    for el, qty, desc in b["elements"]:
        if el in merged:
            merged[el]["quantity"] += qty
            merged[el]["description"] += f"; {desc}"
        else:
            merged[el] = {"element": el, "name": ELEMENTS[el][0], "unit": ELEMENTS[el][1], "quantity": qty,
                          "description": f"{ELEMENTS[el][0]}: {desc}" if not desc.startswith(ELEMENTS[el][0]) else desc,
                          **({"parent": PARENT[el]} if el in PARENT else {})}
    return {"structure": sid, "name": b["name"], "feature_under": b["feature"], "elements": list(merged.values())}


def _route(element: dict) -> str:
    if _on("keyword-route"):
        for word in ("deck", "girder", "beam", "abutment", "pier", "column"):
            if word in element["description"].lower():
                return {"deck": "deck", "girder": "superstructure", "beam": "superstructure", "abutment": "substructure",
                        "pier": "substructure", "column": "substructure"}[word]
    return COMPONENT[element["element"]]


def _rating(cs: list[int]) -> int:
    total = sum(cs) or 1
    if cs[3] > 0:
        return 4
    if cs[2] / total > 0.10:
        return 5
    if cs[2] > 0 or cs[1] / total > 0.20:
        return 6
    return 7


class SectionServiceTimeout(TimeoutError):
    pass


def _section_service(shape: str, loss_pct: float) -> dict:
    if _on("section-timeout"):
        raise SectionServiceTimeout(f"section properties service did not answer for {shape} within 15 s")
    d = DESIGN[shape]
    f = 1 - loss_pct / 100
    return {"shape": shape, "section_loss_pct": loss_pct, "area_in2": round(d["area_in2"] * f, 2), "sx_in3": round(d["sx_in3"] * f, 1)}


def _nbi_submit(sid: str, report: dict) -> dict:
    inv = {e["element"]: e for e in _inventory(sid)["elements"]}
    for rec in report["elements"]:
        limit = inv.get(rec["element"], {}).get("quantity", 0)
        if sum(rec["cs"]) > limit:
            raise ValueError(f"{sid}: element {rec['element']} reports {sum(rec['cs']):,} {inv[rec['element']]['unit']} in "
                             f"condition states; the inventory quantity is {limit:,}")
    covered = {rec["element"] for rec in report["elements"]}
    missing = sorted(set(inv) - covered)
    if missing:
        raise ValueError(f"{sid}: the report covers {len(covered)} of the {len(inv)} inventory elements (missing "
                         f"{', '.join(map(str, missing))})")
    for item, comp in (("58", "deck"), ("59", "superstructure"), ("60", "substructure")):
        for el in report["sources"][item]:
            if COMPONENT[el] != comp:
                raise ValueError(f"{sid}: item {item} ({comp}) rests on element {el} {ELEMENTS[el][0]}, a "
                                 f"{COMPONENT[el]} element")
    for loss in report["section_loss"]:
        if loss["pct"] >= 25:
            used = (report.get("load_rating") or {}).get("section_loss_pct", 0)
            if used < loss["pct"]:
                raise ValueError(f"{sid}: the load rating used {used} % section loss; the inspection recorded {loss['pct']} % "
                                 f"on {loss['member']} (element {loss['element']})")
    feature = BRIDGES[sid]["feature"]
    if feature in ("highway", "railroad"):
        need = 14.0 if feature == "highway" else 23.0
        if report["item_54b_ft"] < need:
            raise ValueError(f"{sid}: item 54B underclearance {report['item_54b_ft']} ft is below {need} ft over the "
                             f"{feature} and no low-clearance signing is recorded")
    return {"structure": sid, "status": "accepted", "submission": f"NBI-2024-{sid}"}


def run_once(inp: dict, path: Path) -> None:
    sid = inp["structure"]
    o = _otel
    try:
        with o.span(RUN_NAME, "AGENT", input=f"Routine inspection report for bridge {sid}", agent__name="inspection-reporter",
                    metadata={"task": inp["task"], "structure": sid}) as root:
            with o.span("inventory_lookup", "TOOL", input={"structure": sid, "page": 1}, tool__name="inventory_lookup") as s:
                inv = {**_inventory(sid), "page": 1, "next_page": None}
                if _on("inventory-page"):
                    inv = {**inv, "elements": inv["elements"][:PAGE_SIZE], "next_page": 2}
                s.output = inv
            feature = inv["feature_under"]
            with o.span("clearance_survey", "TOOL", input={"structure": sid}, tool__name="clearance_survey") as s:
                metres = BRIDGES[sid]["clearance_m"]
                if metres is None:
                    s.output = {"structure": sid, "feature_under": feature, "underclearance_ft": None, "note": "waterway"}
                else:
                    ft = metres if _on("clearance-metres") else round(metres / 0.3048, 1)
                    s.output = {"structure": sid, "feature_under": feature, "underclearance_ft": ft, "survey": "2024-08-14 total station"}
                clearance = s.output
            extracted = _chat("Extract the element condition states and findings from the inspector's notes as JSON.", _notes(sid))
            with o.span("read_findings", "CHAIN", input=extracted) as s:
                findings = json.loads(extracted)
                s.output = findings
            cs_by = {e["element"]: e["cs"] for e in findings["elements"]}
            memory: dict[int, dict[str, Any]] = {}
            for el in inv["elements"]:
                with o.span("route_element", "EVALUATOR", input=el) as s:
                    component = _route(el)
                    s.output = {"element": el["element"], "component": component}
                with o.span("inspection_memory.write", "CHAIN", input={"element": el["element"], "component": component,
                                                                       "cs": cs_by.get(el["element"])}) as s:
                    key = el.get("parent", el["element"]) if _on("parent-key") else el["element"]
                    memory[key] = {"element": key, "component": component, "cs": cs_by.get(el["element"], [0, 0, 0, 0]),
                                   "unit": el["unit"]}
                    s.output = {"key": f"{sid}/E{key}", "stored": memory[key]}
            load_rating = None
            primary = [l for l in findings["section_loss"] if l["element"] in (107, 109)]
            if primary:
                worst = max(primary, key=lambda l: l["pct"])
                shape = BRIDGES[sid]["shape"]
                with o.span("load_rating_agent", "AGENT", input={"member": worst["member"], "shape": shape,
                                                                 "section_loss_pct": worst["pct"]}, agent__name="load-rating") as agent:
                    used_loss = worst["pct"]
                    try:
                        with o.span("section_properties", "TOOL", input={"shape": shape, "section_loss_pct": used_loss},
                                    tool__name="section_properties") as s:
                            props = _section_service(shape, used_loss)
                            s.output = props
                    except TimeoutError:
                        used_loss = 0
                        props = {"shape": shape, "section_loss_pct": 0, **DESIGN[shape]}
                    with o.span("load_rating_engine", "TOOL", input={"member": worst["member"], "section": props, "vehicle": "HL-93"},
                                tool__name="load_rating_engine") as s:
                        capacity = props["sx_in3"] * 50 / 12
                        dead = 640.0 if shape != "W33x130" else 520.0
                        live = 410.0
                        s.output = {"member": worst["member"], "rf_inventory": round((capacity - dead) / (live * 1.75), 2),
                                    "rf_operating": round((capacity - dead) / (live * 1.35), 2)}
                        rating = s.output
                    summary = _chat("Summarise the load rating for the file.",
                                    json.dumps({**rating, "section_loss_pct": used_loss}))
                    load_rating = {**rating, "section_loss_pct": used_loss, "summary": summary}
                    agent.output = load_rating
            with o.span("component_ratings", "CHAIN", input={"memory": list(memory.values())}) as s:
                items, sources = {}, {}
                for item, comp in (("58", "deck"), ("59", "superstructure"), ("60", "substructure")):
                    recs = [m for m in memory.values() if m["component"] == comp]
                    items[item] = min((_rating(m["cs"]) for m in recs), default=9)
                    sources[item] = [m["element"] for m in recs]
                s.output = {"items": items, "sources": sources}
            narrative = _chat("Write the inspection narrative.", json.dumps({
                "structure": f"{sid} {inv['name']}", "items": items,
                "remarks": [f"{l['member']} section loss {l['pct']} % ({l['where']})" for l in findings["section_loss"]]}))
            report = {"structure": sid, "elements": list(memory.values()), "items": items, "sources": sources,
                      "section_loss": findings["section_loss"], "load_rating": load_rating,
                      "item_54b_ft": clearance["underclearance_ft"], "narrative": narrative}
            with o.span("nbi_submit", "TOOL", input=report, tool__name="nbi_submit") as s:
                s.output = _nbi_submit(sid, report)
            root.output = s.output
    except Exception:  # noqa: BLE001 - the spans record it; the generator checks the outcome
        pass
    o.write(path)
