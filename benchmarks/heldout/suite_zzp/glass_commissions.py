"""Glassblowing studio: turns a commission enquiry into a scheduled, priced quote (otlp route: OpenTelemetry SDK
spans with OpenInference attributes, the OpenAI client instrumented, exported as OTLP/JSON)."""

from __future__ import annotations

import json
import math
import re

import kit
from common import Spans, ask, chat_brain, client_for

NAME, ROUTE, DOMAIN = "glass-commission-desk", "otlp", "a glassblowing studio's commissions"
SHAPE = "commission llm + parse, colour retrieval loop, batch-planner sub-agent (llm, parse, per-piece glass estimate, sum), bench routing, furnace schedule + session pick, anneal tool, cover letter llm, price tool + parse, job memory, save, validator"

COLOURS = {"cobalt": 14.0, "amber": 11.0, "clear": 6.0, "sea green": 12.0, "ruby": 21.0}  # GBP per kg
COMMISSIONS = {
    "GC-801": {"client": "Harbour Hotel", "received": "2026-02-02", "deadline": "2026-03-20",
               "pieces": [{"item": "pendant shade", "qty": 6, "diameter_cm": 30}], "colours": ["amber"]},
    "GC-802": {"client": "Dr A. Sato", "received": "2026-02-05", "deadline": "2026-03-06",
               "pieces": [{"item": "platter", "qty": 2, "diameter_cm": 50}, {"item": "bowl", "qty": 4, "diameter_cm": 22}],
               "colours": ["cobalt", "clear"]},
    "GC-803": {"client": "Mill Gallery", "received": "2026-02-09", "deadline": "2026-03-06",
               "pieces": [{"item": "vase", "qty": 10, "diameter_cm": 18}, {"item": "bowl", "qty": 10, "diameter_cm": 26}],
               "colours": ["sea green"]},
    "GC-804": {"client": "Priory Church", "received": "2026-02-11", "deadline": "2026-04-10",
               "pieces": [{"item": "roundel", "qty": 3, "diameter_cm": 45}], "colours": ["ruby", "clear"]},
    "GC-805": {"client": "Fenn & Co", "received": "2026-02-16", "deadline": "2026-03-27",
               "pieces": [{"item": "tumbler", "qty": 60, "diameter_cm": 8}, {"item": "carafe", "qty": 12, "diameter_cm": 14},
                          {"item": "jug", "qty": 10, "diameter_cm": 20}],
               "colours": ["clear"]},
}
SESSIONS = {"standard": ["2026-02-24", "2026-03-03", "2026-03-10", "2026-03-17", "2026-03-24", "2026-03-31"],
            "large": ["2026-02-26", "2026-03-05", "2026-03-12", "2026-03-19", "2026-03-26", "2026-04-02"]}
KG_PER_SESSION, STUDIO_PER_SESSION = 12.0, 380.0
INPUTS = [f"Commission {ref} from {c['client']}: " + ", ".join(f"{p['qty']} x {p['item']} {p['diameter_cm']} cm"
                                                           for p in c["pieces"]) + f", needed by {c['deadline']}."
          for ref, c in COMMISSIONS.items()]
CASES = [
    {"case": "zzp_glass_1", "input": 0, "kind": "unit_error", "root": ("quote_price", 1),
     "failure": ("validate_commission", 1),
     "description": "The pricing tool treats the glass weight it is given in kg as pounds and converts it, undercharging the materials."},
    {"case": "zzp_glass_2", "input": 2, "kind": "off_by_one", "root": ("pick_sessions", 1),
     "failure": ("validate_commission", 1),
     "description": "Session picking slices sessions[1:n+1], skipping the first free furnace session so the last one lands after the deadline."},
    {"case": "zzp_glass_3", "input": 4, "kind": "lossy_parsing", "root": ("parse_price_breakdown", 1),
     "failure": ("validate_commission", 1),
     "description": "The price parser stops at the thousands comma and reads 'GBP 1,140.00' of studio time as 1.00."},
    {"case": "zzp_glass_4", "input": 1, "kind": "wrong_routing", "root": ("assign_bench", 1),
     "failure": ("validate_commission", 1),
     "description": "Bench routing compares the radius, not the diameter, with 40 cm and sends the 50 cm platters to the standard bench."},
    {"case": "zzp_glass_5", "input": 3, "kind": "bad_memory_write", "root": ("remember_job", 1),
     "failure": ("validate_commission", 1),
     "description": "The job memory records the enquiry's received date as the delivery deadline, which the saved quote then promises."},
]
JOB_MEMORY: dict[str, dict] = {}


def _extract(text: str) -> str:
    ref = re.search(r"GC-\d+", text).group(0)
    return json.dumps({"ref": ref, **COMMISSIONS[ref]})


def _pieces(text: str) -> str:
    spec = json.loads(text)
    out = []
    for p in spec["pieces"]:
        d = p["diameter_cm"]
        out.append({"item": p["item"], "qty": p["qty"], "diameter_cm": d,
                    "wall_mm": 6 if d > 40 else 4, "kg_each": round(0.0009 * d ** 2 + 0.15, 3)})
    return json.dumps({"pieces": out})


def _letter(text: str) -> str:
    f = json.loads(text)
    return (f"Dear {f['client']}, thank you for commission {f['ref']}. We have reserved {f['sessions']} furnace "
            f"sessions on the {f['bench']} bench; your formal quote follows.")


BRAIN = chat_brain({"Extract": _extract, "Pieces": _pieces, "Letter": _letter})


def record(server, inp: str, path: str) -> None:
    server.use(BRAIN)
    client = client_for(server)
    sp = Spans(NAME)
    JOB_MEMORY.clear()
    try:
        with sp.span(NAME, "AGENT", inp) as top:
            answer = ask(client, "fake-model", "Extract: the commission as JSON.", inp)
            with sp.span("parse_spec", "CHAIN", answer) as o:
                spec = o.set(json.loads(answer))
            colours = []
            for colour in spec["colours"]:
                with sp.span("colour_catalog", "RETRIEVER", {"query": colour}) as o:
                    colours.append(o.set({"colour": colour, "gbp_per_kg": COLOURS[colour]}))
            with sp.span("batch_planner", "AGENT", {"ref": spec["ref"]}) as planner:
                plan_text = ask(client, "fake-model", "Pieces: wall thickness and glass per piece as JSON.",
                                json.dumps({"pieces": spec["pieces"]}))
                with sp.span("parse_pieces", "CHAIN", plan_text) as o:
                    pieces = o.set(json.loads(plan_text)["pieces"])
                estimates = []
                for p in pieces:
                    with sp.span("estimate_glass_kg", "TOOL", {"item": p["item"], "qty": p["qty"],
                                                               "kg_each": p["kg_each"]}) as o:
                        estimates.append(o.set({"item": p["item"], "kg": round(p["qty"] * p["kg_each"] * 1.15, 2)}))
                with sp.span("sum_glass", "CHAIN", {"estimates": estimates}) as o:
                    glass = o.set({"kg": round(sum(e["kg"] for e in estimates), 2)})
                planner.set(glass)
            with sp.span("assign_bench", "CHAIN", {"pieces": pieces}) as o:
                size = (lambda p: p["diameter_cm"] / 2) if kit.on("zzp_glass_4") else (lambda p: p["diameter_cm"])
                bench = o.set("large" if any(size(p) > 40 for p in pieces) else "standard")
            needed = math.ceil(glass["kg"] / KG_PER_SESSION)
            with sp.span("furnace_schedule", "TOOL", {"bench": bench, "from": spec["received"]}) as o:
                free = o.set([d for d in SESSIONS[bench] if d > spec["received"]])
            with sp.span("pick_sessions", "CHAIN", {"free": free, "needed": needed}) as o:
                picked = o.set(free[1:needed + 1] if kit.on("zzp_glass_2") else free[:needed])
            with sp.span("kiln_anneal_time", "TOOL", {"wall_mm": max(p["wall_mm"] for p in pieces)}) as o:
                o.set({"hours": 10 if max(p["wall_mm"] for p in pieces) > 4 else 6})
            ask(client, "fake-model", "Letter: write the cover letter.",
                json.dumps({"client": spec["client"], "ref": spec["ref"], "sessions": len(picked), "bench": bench}))
            rate = max(c["gbp_per_kg"] for c in colours)
            with sp.span("quote_price", "TOOL", {"glass_kg": glass["kg"], "gbp_per_kg": rate, "sessions": len(picked)}) as o:
                kg = glass["kg"] / 2.2046 if kit.on("zzp_glass_1") else glass["kg"]
                materials = round(kg * rate, 2)
                studio = round(len(picked) * STUDIO_PER_SESSION, 2)
                vat = round((materials + studio) * 0.2, 2)
                quote_text = o.set(f"materials GBP {materials:,.2f}; studio time GBP {studio:,.2f}; VAT GBP {vat:,.2f}")
            with sp.span("parse_price_breakdown", "CHAIN", quote_text) as o:
                pat = r"GBP (\d+(?:\.\d+)?)" if kit.on("zzp_glass_3") else r"GBP ([\d,]+\.\d{2})"
                nums = [float(x.replace(",", "")) for x in re.findall(pat, quote_text)]
                breakdown = o.set({"materials": nums[0], "studio": nums[1], "vat": nums[2],
                                   "total": round(sum(nums), 2)})
            with sp.span("remember_job", "CHAIN", {"ref": spec["ref"]}) as o:
                key = "received" if kit.on("zzp_glass_5") else "deadline"
                JOB_MEMORY[spec["ref"]] = o.set({"client": spec["client"], "deadline": spec[key], "bench": bench,
                                                 "sessions": picked})
            with sp.span("save_quote", "TOOL", {"ref": spec["ref"], **breakdown}) as o:
                mem = JOB_MEMORY[spec["ref"]]
                saved = o.set({"quote": f"Q-{spec['ref'][3:]}", "deliver_by": mem["deadline"], "total": breakdown["total"],
                               "sessions": mem["sessions"]})
            with sp.span("validate_commission", "CHAIN", {"ref": spec["ref"], "quote": saved["quote"]}):
                c = COMMISSIONS[spec["ref"]]
                if any(p["diameter_cm"] > 40 for p in c["pieces"]) and bench != "large":
                    raise ValueError(f"{spec['ref']} has pieces over 40 cm but is on the {bench} bench")
                late = [d for d in saved["sessions"] if d > c["deadline"]]
                if late:
                    raise ValueError(f"furnace sessions {late} fall after the {c['deadline']} deadline")
                if saved["deliver_by"] != c["deadline"] or saved["deliver_by"] < saved["sessions"][-1]:
                    raise ValueError(f"quote {saved['quote']} promises delivery by {saved['deliver_by']}, "
                                     f"last furnace session {saved['sessions'][-1]}")
                exp_materials = round(glass["kg"] * rate, 2)
                exp_total = round(exp_materials + len(picked) * STUDIO_PER_SESSION
                                  + round((exp_materials + len(picked) * STUDIO_PER_SESSION) * 0.2, 2), 2)
                if abs(saved["total"] - exp_total) > 0.05:
                    raise ValueError(f"quote {saved['quote']} totals GBP {saved['total']:.2f}, the price list gives "
                                     f"GBP {exp_total:.2f}")
            top.set(saved)
    except ValueError:
        pass
    with open(path, "w") as fh:
        json.dump(sp.envelope(), fh)
