"""Perfume batch compounder (otlp route): formula vault, parser, per-material IFRA/lot/reservation loop,
scaling, a model plans the compounding order, a dispensing loop, a model drafts the certificate, registration."""

from __future__ import annotations

import json

from kit import Case, active
from otlpkit import Tracer, ask, client_for, recording


AGENT = "perfume-batch-compounder"
ROUTE = "otlp"
DOMAIN = "fine-fragrance batch compounding"
SHAPE = "order -> formula vault -> parse -> per-material IFRA limit / lot query / reservation loop (x6) -> scaling -> model plans the order -> dispensing loop (x6) -> model drafts the certificate -> registration"

FORMULAS = {
    "F-ORCHARD": {"text": "Bergamot oil 18.5%; Hedione 22%; Iso E Super 15%; Ambroxan 4.5%; Vanillin 2%; Ethanol 38%", "max_dosage": 20},
    "F-CEDAR": {"text": "Cedarwood oil 12%; Iso E Super 20.5%; Vetiver oil 6.5%; Coumarin 3%; Hedione 10%; Ethanol 48%", "max_dosage": 18},
    "F-SALT": {"text": "Calone 1.5%; Hedione 25%; Ambroxan 6%; Lemon oil 9.5%; Vanillin 1%; Ethanol 57%", "max_dosage": 25},
}
SOLIDS = {"Vanillin", "Coumarin", "Ambroxan"}
IFRA = {"Bergamot oil": 20, "Hedione": 40, "Iso E Super": 25, "Ambroxan": 10, "Vanillin": 5, "Ethanol": 100,
        "Cedarwood oil": 15, "Vetiver oil": 8, "Coumarin": 4, "Calone": 2, "Lemon oil": 12}
HOLD = {"Bergamot oil": "BG-2291"}
ORDERS = {
    "PO-61": {"order": "PO-61", "formula": "F-ORCHARD", "batch_g": 5000},
    "PO-62": {"order": "PO-62", "formula": "F-ORCHARD", "batch_g": 2000},
    "PO-63": {"order": "PO-63", "formula": "F-CEDAR", "batch_g": 3000},
    "PO-64": {"order": "PO-64", "formula": "F-SALT", "batch_g": 4000},
    "PO-65": {"order": "PO-65", "formula": "F-CEDAR", "batch_g": 1500},
    "PO-66": {"order": "PO-66", "formula": "F-SALT", "batch_g": 2500},
}
INPUTS = ORDERS
REFS = ["PO-63", "PO-64", "PO-65", "PO-66"]
CASES = [
    Case("perf.parse", "lossy_parsing", "parse_formula", '"Bergamot oil": 5', "PO-61"),
    Case("perf.cert", "hallucinated_value", "ChatCompletion", "MAX DOSAGE: 35%", "PO-61"),
    Case("perf.scale", "off_by_one", "scale_batch", '"total_g": 3100', "PO-61"),
    Case("perf.lot", "swallowed_error", "reserve_stock", "BG-2291", "PO-62"),
    Case("perf.plan", "plan_error", "ChatCompletion", "Iso E Super > Ambroxan", "PO-62"),
]


def formula_vault(formula: str) -> dict:
    return {"formula": formula, "text": FORMULAS[formula]["text"], "max_dosage_pct": FORMULAS[formula]["max_dosage"]}


def parse_formula(text: str) -> dict:
    import re

    out = {}
    for part in text.split(";"):
        name, pct = part.strip().rsplit(" ", 1)
        out[name] = int(re.search(r"(\d+)%", pct).group(1)) if active("perf.parse") else float(pct.rstrip("%"))
    return out


def ifra_limit(material: str, category: int) -> dict:
    return {"material": material, "category": category, "max_pct": IFRA[material]}


def lot_query(material: str) -> dict:
    lots = [{"lot": HOLD[material], "status": "qc_hold"}] if material in HOLD else []
    lots.append({"lot": f"{material[:2].upper()}-{2300 + len(material)}", "status": "released"})
    return {"material": material, "lots": lots}


def reserve_stock(material: str, lots: list, grams: float) -> dict:
    for lot in lots:
        try:
            if lot["status"] != "released":
                raise RuntimeError(f"lot {lot['lot']} is {lot['status']}")
            return {"material": material, "lot": lot["lot"], "grams": grams, "status": "reserved"}
        except RuntimeError:
            if active("perf.lot"):
                return {"material": material, "lot": lot["lot"], "grams": grams, "status": "reserved"}
            continue
    return {"material": material, "lot": None, "status": "none"}


def scale_batch(pct: dict, batch_g: int) -> dict:
    items = list(pct.items())
    n = len(items) - 1 if active("perf.scale") else len(items)
    grams = {items[i][0]: round(items[i][1] * batch_g / 100, 1) for i in range(n)}
    return {"grams": grams, "total_g": round(sum(grams.values()), 1)}


def dispense(station: str, material: str, grams: float, lot: str, position: int) -> dict:
    if material in SOLIDS and position > 3:
        raise RuntimeError(f"station {station}: solid {material} at position {position} will not dissolve once maceration has begun")
    if lot in HOLD.values():
        raise RuntimeError(f"station {station}: lot {lot} is blocked by quality control")
    return {"material": material, "grams": grams, "lot": lot, "position": position}


def register_batch(order: str, formula: str, pct_total: float, total_g: float, batch_g: int, max_dosage_pct: int) -> dict:
    if abs(pct_total - 100) > 0.01:
        raise ValueError(f"registry: batch {order} formula adds up to {pct_total}%")
    if abs(total_g - batch_g) > 1:
        raise ValueError(f"registry: batch {order} weighs {total_g} g against {batch_g} g ordered")
    if max_dosage_pct != FORMULAS[formula]["max_dosage"]:
        raise ValueError(f"registry: certificate for {order} gives a maximum dosage of {max_dosage_pct}%, the IFRA certificate on file differs")
    return {"order": order, "batch": f"B-{order[3:]}-{formula[2:]}", "status": "registered"}


def brain(request) -> str:
    msgs = request.body["messages"]
    system, data = msgs[0]["content"], json.loads(msgs[-1]["content"])
    if system.startswith("You plan the compounding"):
        mats = list(data["materials"])
        solids = [m for m in mats if m in SOLIDS]
        liquids = [m for m in mats if m not in SOLIDS and m != "Ethanol"]
        order = ["Ethanol", *solids, *liquids]
        if active("perf.plan"):
            order = ["Ethanol", *liquids, *solids]
        return f"ORDER: {' > '.join(order)}\nMACERATE: 21 d"
    if system.startswith("You draft"):
        dose = 35 if active("perf.cert") else data["max_dosage_pct"]
        return f"CERT: IFRA-51 category {data['category']}\nMAX DOSAGE: {dose}%\nLOTS: {', '.join(data['lots'])}"
    return "ok"


def record(inp: str, path, server) -> None:
    server.use(brain)
    client = client_for(server)
    t = Tracer(AGENT)
    with recording(path):
        try:
            with t.span(AGENT, "AGENT", {"task": f"compound batch {inp}"}) as top:
                o = t.call("read_order", "CHAIN", lambda order: dict(ORDERS[order]), order=inp)
                vault = t.call("formula_vault", "TOOL", formula_vault, formula=o["formula"])
                pct = t.call("parse_formula", "CHAIN", parse_formula, text=vault["text"])
                reserved = {}
                for m, p in pct.items():
                    t.call("ifra_limit", "TOOL", ifra_limit, material=m, category=4)
                    lots = t.call("lot_query", "TOOL", lot_query, material=m)
                    reserved[m] = t.call("reserve_stock", "CHAIN", reserve_stock, material=m, lots=lots["lots"],
                                         grams=round(p * o["batch_g"] / 100, 1))
                scaled = t.call("scale_batch", "CHAIN", scale_batch, pct=pct, batch_g=o["batch_g"])
                text = ask(client, server, "You plan the compounding order for a fragrance batch.", {"materials": list(pct)})
                with t.span("read_plan", "CHAIN", {"text": text}) as rp:
                    rp.output = plan = text.splitlines()[0].split(": ", 1)[1].split(" > ")
                for k, m in enumerate(plan, 1):
                    if m in scaled["grams"]:
                        t.call("dispense", "TOOL", dispense, station="M2", material=m, grams=scaled["grams"][m],
                               lot=reserved[m]["lot"], position=k)
                cert = ask(client, server, "You draft the IFRA conformity certificate.",
                           {"category": 4, "max_dosage_pct": vault["max_dosage_pct"], "lots": [r["lot"] for r in reserved.values()]})
                with t.span("read_certificate", "CHAIN", {"text": cert}) as rc:
                    rc.output = dose = int(cert.split("MAX DOSAGE: ")[1].split("%")[0])
                res = t.call("register_batch", "TOOL", register_batch, order=inp, formula=o["formula"],
                             pct_total=round(sum(pct.values()), 2), total_g=scaled["total_g"], batch_g=o["batch_g"],
                             max_dosage_pct=dose)
                top.output = res
        except (ValueError, RuntimeError):
            pass
    client.close()
