"""Maple sugarhouse batching: reads the day's evaporator draw-offs, has a model plan the drum lots, grades and
routes each draw-off (drum or reboil), sizes and fills the drums, keeps the drum inventory, has a model draft
the bulk buyer's lot labels and submits the lots (OpenTelemetry + OpenInference, OTLP JSON)."""
from __future__ import annotations

import json
import math

from ._common import client_for, system, user
from ._otlp import Tracing

NAME = "sugarhouse-batch"
ROUTE = "otlp"
DOMAIN = "maple syrup sugarhouse, bulk drum lots"
SHAPE = "draw-off tool, planning model call (instrumented OpenAI client), per-draw-off loop (grade chain, routing chain, reboil tool), drum sizing chain, per-drum loop (fill tool, inventory memory write), inventory reconcile tool, label model call, buyer tool"
SWITCH = None


def active(case: str) -> bool:
    return SWITCH == case


INPUTS = [
    {"producer": "P-118", "permit": "QC-2291", "day": "2026-03-18"},
    {"producer": "P-118", "permit": "QC-2291", "day": "2026-03-21"},
    {"producer": "P-118", "permit": "QC-2291", "day": "2026-03-26"},
    {"producer": "P-118", "permit": "QC-2291", "day": "2026-04-02"},
    {"producer": "P-118", "permit": "QC-2291", "day": "2026-04-07"},
]

CASES = [
    {"id": "zzzzh-sugar-1", "input": 1, "kind": "off_by_one", "root": ("size_drums", 1), "root_kind": "other", "root_has": "Amber",
     "failure": "fill_drum",
     "what": "Drum sizing divides the Amber lot's 452 L by the 200 L drum with floor division, so two drums get 226 L each and the first fill overflows its drum."},
    {"id": "zzzzh-sugar-2", "input": 3, "kind": "bad_memory_write", "root": ("update_inventory", 2), "root_kind": "other",
     "failure": "reconcile_inventory",
     "what": "The inventory write for the second drum records the whole lot's litres (356) instead of the drum's share (178), so the day's inventory disagrees with the drum scale."},
    {"id": "zzzzh-sugar-3", "input": 0, "kind": "hallucinated_value", "root": ("ChatCompletion", 2), "root_kind": "llm",
     "failure": "submit_to_buyer",
     "what": "The label model writes producer permit QC-2219, a number given nowhere (the permit is QC-2291), and the buyer refuses the labels."},
    {"id": "zzzzh-sugar-4", "input": 2, "kind": "wrong_routing", "root": ("route_drawoff", 4), "root_kind": "other", "root_has": "65.4",
     "failure": "submit_to_buyer",
     "what": "The draw-off router lets draw-off 4 at 65.4 Brix go to the drum line instead of reboiling, and the buyer's Brix check refuses the lot it went into."},
    {"id": "zzzzh-sugar-5", "input": 4, "kind": "plan_error", "root": ("ChatCompletion", 1), "root_kind": "llm",
     "failure": "submit_to_buyer",
     "what": "The planning model groups the draw-offs into lots by time of day (morning, afternoon) instead of by grade, so one lot mixes Golden and Amber syrup and the buyer refuses it."},
]

DRAWOFFS = {
    "2026-03-18": [(96, 66.8, 78.0), (104, 67.1, 76.5), (88, 66.9, 74.0), (110, 67.0, 71.2), (92, 66.6, 68.0)],
    "2026-03-21": [(118, 66.9, 69.0), (120, 67.2, 66.5), (102, 66.8, 63.0), (112, 67.0, 60.4), (90, 67.1, 48.0)],
    "2026-03-26": [(100, 67.0, 55.0), (95, 66.7, 53.2), (105, 67.3, 51.0), (87, 65.4, 50.2), (98, 66.9, 47.5)],
    "2026-04-02": [(90, 67.0, 44.0), (86, 66.8, 41.5), (92, 67.1, 39.0), (88, 66.9, 36.2)],
    "2026-04-07": [(84, 66.9, 80.1), (91, 67.0, 77.4), (96, 66.8, 72.0), (100, 67.2, 70.5), (93, 66.7, 68.8), (89, 67.0, 66.0)],
}
DRUM_L = 200


def grade_of(t):
    return "Golden" if t >= 75 else "Amber" if t >= 50 else "Dark" if t >= 25 else "Very dark"


def brain(request):
    sys_ = system(request)
    ask = json.loads(user(request))
    if sys_.startswith("You plan drum lots"):
        ok = ask["drawoffs"]
        lots = {}
        if active("zzzzh-sugar-5"):
            half = len(ok) // 2
            lots = {"morning": [d["id"] for d in ok[:half]], "afternoon": [d["id"] for d in ok[half:]]}
        else:
            for d in ok:
                lots.setdefault(d["grade"], []).append(d["id"])
        return json.dumps({"lots": [{"lot": f"{ask['day'][5:].replace('-', '')}-{k}", "drawoffs": v} for k, v in lots.items()]})
    if sys_.startswith("You write bulk buyer labels"):
        permit = ask["permit"]
        if active("zzzzh-sugar-3"):
            permit = "QC-2219"
        return json.dumps({"labels": [{"drum": d["drum"], "lot": d["lot"], "grade": d["grade"], "litres": d["litres"],
                                       "producer": ask["producer"], "permit": permit} for d in ask["drums"]]})
    return "I cannot help with that."


def record(inp: dict, path, server) -> None:
    tr = Tracing(NAME)
    client = client_for(server)
    inventory: dict = {}
    with tr.recording(path):
        try:
            with tr.span(NAME, "AGENT", inp, metadata=json.dumps({"task": f"drum lots {inp['producer']} {inp['day']}"})) as top:
                with tr.span("read_drawoffs", "TOOL", {"day": inp["day"]}) as out:
                    draws = out([{"id": i + 1, "litres": l, "brix": b, "transmittance": t} for i, (l, b, t) in enumerate(DRAWOFFS[inp["day"]])])
                kept = []
                for d in draws:
                    with tr.span("grade_drawoff", "CHAIN", d) as out:
                        g = out({**d, "grade": grade_of(d["transmittance"])})
                    with tr.span("route_drawoff", "CHAIN", g) as out:
                        ok = g["brix"] >= 66.0
                        if active("zzzzh-sugar-4"):
                            ok = g["brix"] >= 65.0  # the threshold of the light-syrup sheet
                        route = out("drum" if ok else "reboil")
                    if route == "reboil":
                        with tr.span("send_to_reboil", "TOOL", {"drawoff": d["id"], "litres": d["litres"]}) as out:
                            out({"drawoff": d["id"], "queued": "finishing pan"})
                    else:
                        kept.append(g)
                plan = json.loads(client.chat.completions.create(model=server.model, messages=[
                    {"role": "system", "content": "You plan drum lots from graded draw-offs. Answer JSON."},
                    {"role": "user", "content": json.dumps({"day": inp["day"], "drawoffs": kept})}]).choices[0].message.content)
                by_id = {d["id"]: d for d in kept}
                drums = []
                n = 0
                for lot in plan["lots"]:
                    members = [by_id[i] for i in lot["drawoffs"]]
                    with tr.span("size_drums", "CHAIN", {"lot": lot["lot"], "grades": sorted({m["grade"] for m in members}),
                                                         "litres": sum(m["litres"] for m in members)}) as out:
                        total = sum(m["litres"] for m in members)
                        count = math.ceil(total / DRUM_L)
                        if active("zzzzh-sugar-1"):
                            count = max(1, total // DRUM_L)
                        shares = [total // count + (1 if k < total % count else 0) for k in range(count)]
                        sized = out({"lot": lot["lot"], "total": total, "shares": shares})
                    for share in sized["shares"]:
                        n += 1
                        drum = f"D-{inp['day'][5:7]}{inp['day'][8:]}-{n}"
                        with tr.span("fill_drum", "TOOL", {"drum": drum, "litres": share}) as out:
                            if share > DRUM_L:
                                raise ValueError(f"drum {drum}: {share} L assigned, capacity {DRUM_L} L")
                            out({"drum": drum, "scale_l": share})
                        with tr.span("update_inventory", "CHAIN", {"drum": drum, "lot": lot["lot"], "litres": share}) as out:
                            litres = share
                            if active("zzzzh-sugar-2") and n == 2:
                                litres = sized["total"]
                            inventory[drum] = {"lot": lot["lot"], "litres": litres,
                                               "grades": sorted({m["grade"] for m in members}),
                                               "min_brix": min(m["brix"] for m in members)}
                            out(inventory[drum])
                        drums.append({"drum": drum, "lot": lot["lot"], "litres": share})
                with tr.span("reconcile_inventory", "TOOL", inventory) as out:
                    for d in drums:
                        if inventory[d["drum"]]["litres"] != d["litres"]:
                            raise ValueError(f"inventory lists {inventory[d['drum']]['litres']} L in {d['drum']}, drum scale {d['litres']} L")
                    out({"drums": len(drums), "litres": sum(d["litres"] for d in drums)})
                ctx = [{**d, "grade": "/".join(inventory[d["drum"]]["grades"])} for d in drums]
                labels = json.loads(client.chat.completions.create(model=server.model, messages=[
                    {"role": "system", "content": "You write bulk buyer labels for syrup drums. Answer JSON."},
                    {"role": "user", "content": json.dumps({"producer": inp["producer"], "permit": inp["permit"], "drums": ctx})}]).choices[0].message.content)
                with tr.span("submit_to_buyer", "TOOL", labels) as out:
                    for lab in labels["labels"]:
                        if lab["permit"] != "QC-2291":
                            raise ValueError(f"buyer: permit {lab['permit']} is not registered to producer {lab['producer']}")
                        rec = inventory[lab["drum"]]
                        if len(rec["grades"]) > 1:
                            raise ValueError(f"buyer: drum {lab['drum']} mixes grades {' and '.join(rec['grades'])}")
                        if rec["min_brix"] < 66.0:
                            raise ValueError(f"buyer: drum {lab['drum']} holds syrup at {rec['min_brix']} Brix, minimum 66.0")
                    top(out({"accepted": len(labels["labels"])}))
        except Exception:
            pass
