"""Flour mill grain intake (OpenTelemetry / OpenInference spans, imported from OTLP/JSON).

Reads the weighbridge ticket of a delivery, samples each lot at the lab, has the model grade it, parses the grade,
assigns a silo, runs a payment sub-agent (market price tool, payment computation, model-written remittance, remittance
parser), compiles the intake record and validates it against the mill's intake rules.
"""
import json

import kit
from common import chat_brain
from otlp_common import Trace

NAME = "grain-intake"
ROUTE = "otlp"
DOMAIN = "flour mill grain intake"
SHAPE = "ticket tool -> per lot: lab tool, grade (llm), parse, silo routing -> payment sub-agent (price tool, compute, remittance llm, parse) -> compile -> validate"
EXT = "json"

LAB = {  # moisture %, protein %, falling number s, tonnes, crop
    "L1": (13.8, 12.9, 320, 28.4, "bread wheat"), "L2": (15.9, 11.2, 260, 26.1, "bread wheat"),
    "L3": (14.2, 13.4, 345, 29.0, "durum"), "L4": (12.9, 10.1, 210, 27.5, "feed wheat"),
    "L5": (16.4, 12.2, 300, 25.8, "bread wheat"), "L6": (13.1, 13.8, 360, 30.2, "durum"),
    "L7": (14.8, 11.9, 290, 24.9, "bread wheat"), "L8": (13.5, 9.8, 190, 28.8, "feed wheat"),
}
PRICE = {"milling": 231.0, "durum": 298.0, "feed": 188.0}
PRICE_YESTERDAY = {"milling": 226.0, "durum": 298.0, "feed": 188.0}
SILO = {"milling": "S1", "durum": "S3", "feed": "S4", "dry": "D1"}
TICKETS = {
    "WB-601": {"farm": "Harrow Farm", "lots": ["L1", "L3", "L4", "L2"]},
    "WB-602": {"farm": "Brook End", "lots": ["L6", "L1", "L7", "L8"]},
    "WB-603": {"farm": "Coldharbour", "lots": ["L3", "L5", "L1", "L4"]},
    "WB-604": {"farm": "Westfield", "lots": ["L7", "L8", "L6", "L1"]},
    "WB-605": {"farm": "Harrow Farm", "lots": ["L4", "L6", "L2", "L7"]},
    "WB-606": {"farm": "Brook End", "lots": ["L1", "L7", "L3", "L8"]},
}
INPUTS = {k: k for k in TICKETS}

CASES = [
    dict(id="zzx-flour-01", input="WB-601", kind="unit_error", root=("lab_sample", 4), failure=("validate_intake", 1),
         line="the lab tool gives lot L2's moisture as a fraction while the grader reads percent"),
    dict(id="zzx-flour-02", input="WB-602", kind="lossy_parsing", root=("parse_remittance", 1),
         failure=("validate_intake", 1), line="the remittance parser drops the thousands separator's tail"),
    dict(id="zzx-flour-03", input="WB-604", kind="wrong_routing", root=("assign_silo", 3),
         failure=("validate_intake", 1), line="the silo router sends the durum lot to the milling silo"),
    dict(id="zzx-flour-04", input="WB-604", kind="hallucinated_value", root=("ChatCompletion", 5),
         failure=("validate_intake", 1), line="the remittance model adds a haulage deduction no tool stated"),
    dict(id="zzx-flour-05", input="WB-605", kind="stale_data", root=("market_price", 1),
         failure=("validate_intake", 1), line="the market price tool answers from yesterday's cached board"),
]


def brain():
    def grade(p):
        if p["moisture_pct"] > 15.0:
            g = "dry"
        elif p["crop"] == "durum":
            g = "durum"
        elif p["protein_pct"] >= 11.0 and p["falling_number_s"] >= 250:
            g = "milling"
        else:
            g = "feed"
        return f"GRADE: {g}; LOT: {p['lot']}"

    def remit(p):
        lines = [f"Lot {l['lot']}: {l['eur']:,.2f} EUR" for l in p["lines"]]
        total = p["total_eur"]
        if kit.on("zzx-flour-04"):
            lines.append("Haulage deduction: -35.00 EUR")
            total -= 35.0
        return "\n".join([f"Remittance to {p['farm']}"] + lines + [f"TOTAL: {total:,.2f} EUR"])

    return chat_brain({"grade": grade, "remit": remit})


SYSTEM = "You are the intake desk of a flour mill."


def record(ticket, path, server):
    t = Trace(NAME, server)
    try:
        with t.span(NAME, "AGENT", {"ticket": ticket}, {"session.id": ticket}):
            tk = t.step("read_ticket", "TOOL", {"ticket": ticket}, lambda: {"ticket": ticket, **TICKETS[ticket]})
            lots = []
            for lot in tk["lots"]:
                def lab(lot=lot):
                    m, p, fn, tonnes, crop = LAB[lot]
                    if kit.on("zzx-flour-01") and lot == "L2":
                        m = round(m / 100, 3)
                    return {"lot": lot, "moisture_pct": m, "protein_pct": p, "falling_number_s": fn,
                            "tonnes": tonnes, "crop": crop}
                sample = t.step("lab_sample", "TOOL", {"lot": lot}, lab)
                answer = t.ask(SYSTEM, "grade", "Grade this lot.", sample)
                graded = t.step("parse_grade", "CHAIN", {"text": answer},
                                lambda a=answer: {k.strip().lower(): v.strip() for k, v in
                                                  (x.split(":") for x in a.split(";"))})

                def route(g=graded, s=sample):
                    grade = g["grade"]
                    if kit.on("zzx-flour-03") and s["crop"] == "durum":
                        grade = "milling" if s["protein_pct"] >= 11.0 else grade
                    return {"lot": g["lot"], "grade": g["grade"], "silo": SILO[grade]}
                silo = t.step("assign_silo", "CHAIN", graded, route)
                lots.append({**sample, **silo})
            with t.span("payment_agent", "AGENT", {"farm": tk["farm"]}):
                board = t.step("market_price", "TOOL", {"date": "2026-08-14"},
                               lambda: dict(PRICE_YESTERDAY if kit.on("zzx-flour-05") else PRICE))
                pay = t.step("compute_payment", "CHAIN", {"lots": lots, "board": board}, lambda: {
                    "lines": [{"lot": l["lot"], "eur": round(l["tonnes"] * board[l["grade"]], 2)}
                              for l in lots if l["grade"] != "dry"],
                    "held_for_drying": [l["lot"] for l in lots if l["grade"] == "dry"]})
                pay["total_eur"] = round(sum(x["eur"] for x in pay["lines"]), 2)
                note = t.ask(SYSTEM, "remit", "Write the remittance note.", {"farm": tk["farm"], **pay})

                def parse_note(n=note):
                    total = n.split("TOTAL: ")[1].split(" EUR")[0]
                    if kit.on("zzx-flour-02"):
                        total = total.split(",")[0]
                    return {"total_eur": float(total.replace(",", "")), "lines": n.count("Lot ")}
                remit = t.step("parse_remittance", "CHAIN", {"text": note}, parse_note)
            record_ = t.step("compile_intake", "CHAIN", {"ticket": ticket}, lambda: {
                "ticket": ticket, "farm": tk["farm"], "lots": lots, "payment": pay, "remittance": remit})

            def validate():
                for l in record_["lots"]:
                    m, p, fn, tonnes, crop = LAB[l["lot"]]
                    if m > 15.0 and l["silo"] != SILO["dry"]:
                        raise ValueError(f"lot {l['lot']} at {m}% moisture went to {l['silo']}, not the dryer")
                    if crop == "durum" and m <= 15.0 and l["silo"] != SILO["durum"]:
                        raise ValueError(f"durum lot {l['lot']} went to silo {l['silo']}")
                for line in record_["payment"]["lines"]:
                    lot = next(x for x in record_["lots"] if x["lot"] == line["lot"])
                    due = round(LAB[lot["lot"]][3] * PRICE[lot["grade"]], 2)
                    if abs(line["eur"] - due) > 0.01:
                        raise ValueError(f"lot {lot['lot']} paid {line['eur']} EUR; today's board gives {due} EUR")
                if abs(record_["remittance"]["total_eur"] - record_["payment"]["total_eur"]) > 0.01:
                    raise ValueError(f"remittance states {record_['remittance']['total_eur']} EUR, payment is "
                                     f"{record_['payment']['total_eur']} EUR")
                return {"status": "accepted"}
            t.step("validate_intake", "CHAIN", {"ticket": ticket}, validate)
    except ValueError:
        pass
    t.write(path)
