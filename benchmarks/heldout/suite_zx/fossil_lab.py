"""Fossil preparation lab: turns a specimen ticket into a preparation work order (recording SDK)."""

from __future__ import annotations

import json
from pathlib import Path

import trajdebug

from . import kit
from .common import ApiError, Case, sdk_llm

AGENT, ROUTE, DOMAIN = "fossil_lab", "sdk", "fossil preparation lab"
RUN_NAME, MODEL = "fossil-prep-lab", "prep-planner-1"
SHAPE = "ticket -> protocol search -> plan (llm) -> parse -> per stage: stock, dose, log -> hours -> conservator review sub-agent (llm) -> submit work order"

PROTOCOLS = {
    "sandstone": {"protocol": "P-SS-3", "matrix": "sandstone", "method": "mechanical air-scribe preparation",
                  "stages": [["mechanical", "carbide scribe tips", 0.0004], ["consolidation", "Paraloid B-72", 0.05],
                             ["repair", "cyanoacrylate", 0.002], ["moulding", "silicone rubber", 0.08]]},
    "limestone": {"protocol": "P-LS-2", "matrix": "limestone", "method": "acetic acid preparation",
                  "stages": [["acid bath", "acetic acid 5%", 0.9], ["consolidation", "Paraloid B-72", 0.04],
                             ["neutralise", "sodium bicarbonate", 0.01], ["repair", "cyanoacrylate", 0.002]]},
    "mudstone": {"protocol": "P-MS-1", "matrix": "mudstone", "method": "dry mechanical preparation",
                 "stages": [["mechanical", "carbide scribe tips", 0.0003], ["consolidation", "Paraloid B-72", 0.07],
                            ["repair", "cyanoacrylate", 0.003], ["jacket", "plaster bandage", 0.02]]},
    "shale": {"protocol": "P-SH-4", "matrix": "shale", "method": "split-and-scribe preparation",
              "stages": [["splitting", "carbide scribe tips", 0.0002], ["consolidation", "Paraloid B-72", 0.06],
                         ["repair", "cyanoacrylate", 0.002], ["backing", "epoxy putty", 0.01]]},
    "ironstone": {"protocol": "P-IS-2", "matrix": "ironstone", "method": "pneumatic preparation",
                  "stages": [["mechanical", "carbide scribe tips", 0.0006], ["consolidation", "Paraloid B-72", 0.03],
                             ["repair", "cyanoacrylate", 0.002], ["moulding", "silicone rubber", 0.06]]},
}
STOCK = {"carbide scribe tips": (40, "g"), "Paraloid B-72": (2.5, "kg"), "cyanoacrylate": (500, "g"),
         "silicone rubber": (900, "g"), "acetic acid 5%": (9000, "g"), "sodium bicarbonate": (3000, "g"),
         "plaster bandage": (400, "g"), "epoxy putty": (300, "g")}
REGISTER = {"NHM-PV-R-4412", "NHM-PI-C-0877", "NHM-PI-T-1203", "NHM-PI-E-0356", "NHM-PV-R-2290", "NHM-PB-F-0611"}

INPUTS = {
    "ichthyosaur": {"ticket": "FPL-2027-031", "accession": "NHM-PV-R-4412", "taxon": "Ichthyosaurus communis",
                    "matrix": "sandstone", "block_cm3": 5200, "budget_hours": 90},
    "ammonite": {"ticket": "FPL-2027-036", "accession": "NHM-PI-C-0877", "taxon": "Dactylioceras commune",
                 "matrix": "mudstone", "block_cm3": 1800, "budget_hours": 40},
    "trilobite": {"ticket": "FPL-2027-012", "accession": "NHM-PI-T-1203", "taxon": "Calymene blumenbachii",
                  "matrix": "shale", "block_cm3": 900, "budget_hours": 30},
    "crinoid": {"ticket": "FPL-2027-019", "accession": "NHM-PI-E-0356", "taxon": "Pentacrinites fossilis",
                "matrix": "limestone", "block_cm3": 2400, "budget_hours": 50},
    "plesiosaur": {"ticket": "FPL-2027-022", "accession": "NHM-PV-R-2290", "taxon": "Plesiosaurus dolichodeirus",
                   "matrix": "mudstone", "block_cm3": 7600, "budget_hours": 120},
    "fern": {"ticket": "FPL-2027-027", "accession": "NHM-PB-F-0611", "taxon": "Pecopteris miltonii",
             "matrix": "ironstone", "block_cm3": 600, "budget_hours": 25},
}
REFS = ["trilobite", "crinoid", "plesiosaur", "fern"]

CASES = [
    Case("zx_fossil_1", "fossil.protocol_match", "wrong_retrieval", "ichthyosaur", ("fetch_protocol", 1, "retrieval"),
         ("submit_work_order", 1), "The protocol search matches on the matrix suffix and returns the ironstone protocol for a sandstone block."),
    Case("zx_fossil_2", "fossil.stock_units", "unit_error", "ammonite", ("dose_stage", 2, "other"),
         ("submit_work_order", 1), "dose_stage takes the consolidant stock in kg as grams, so the work order shows 2.5 g available."),
    Case("zx_fossil_3", "fossil.plan_slice", "off_by_one", "ichthyosaur", ("parse_plan", 1, "parse"),
         ("submit_work_order", 1), "parse_plan slices the stage list one short and drops the last protocol stage."),
    Case("zx_fossil_4", "fossil.stage_log", "bad_memory_write", "ammonite", ("log_stage", 3, "state"),
         ("submit_work_order", 1), "log_stage for the third stage stores the previous stage's consumable in the lab log."),
    Case("zx_fossil_5", "fossil.review_accession", "hallucinated_value", "ichthyosaur", ("review_signoff", 1, "llm"),
         ("submit_work_order", 1), "The conservator review model signs off an accession number with two digits swapped."),
]


def policy(messages: list[dict]) -> str:
    system, user = messages[0]["content"], messages[-1]["content"]
    if system.startswith("You plan"):
        proto = json.loads(user.split("PROTOCOL:", 1)[1].split("\nBLOCK:", 1)[0])
        cm3 = int(user.split("BLOCK:", 1)[1].split()[0])
        stages = [{"stage": s, "material": m, "hours": round(4 + cm3 / 400 * (i + 1) / 2, 1)}
                  for i, (s, m, _r) in enumerate(proto["stages"])]
        return json.dumps({"protocol": proto["protocol"], "stages": stages})
    acc = user.split("ACCESSION:", 1)[1].split()[0]
    if kit.active("fossil.review_accession"):
        acc = acc[:-2] + acc[-1] + acc[-2]
    return json.dumps({"accession": acc, "signed_off": True, "note": "Block stable; proceed as planned."})


@trajdebug.step(kind="input")
def read_ticket(ticket: dict) -> dict:
    return dict(ticket)


@trajdebug.step(kind="retrieval")
def fetch_protocol(matrix: str) -> dict:
    if kit.active("fossil.protocol_match"):
        hits = [p for key, p in sorted(PROTOCOLS.items()) if key.endswith(matrix[-5:])]
        return json.loads(json.dumps(hits[0]))
    return json.loads(json.dumps(PROTOCOLS[matrix]))


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> list[dict]:
    stages = json.loads(text)["stages"]
    n = len(stages) - 1 if kit.active("fossil.plan_slice") else len(stages)
    return [dict(s) for s in stages[:n]]


@trajdebug.step(kind="tool")
def check_consumables(material: str) -> dict:
    qty, unit = STOCK[material]
    return {"material": material, "on_hand": qty, "unit": unit, "store": "prep-lab cabinet B"}


@trajdebug.step(kind="other")
def dose_stage(stage: dict, rate_g_per_cm3: float, block_cm3: int, stock: dict) -> dict:
    on_hand = stock["on_hand"]
    if stock["unit"] == "kg" and not kit.active("fossil.stock_units"):
        on_hand = on_hand * 1000
    return {"stage": stage["stage"], "material": stage["material"], "amount_g": round(rate_g_per_cm3 * block_cm3, 1),
            "available_g": on_hand, "hours": stage["hours"]}


@trajdebug.step(kind="state")
def log_stage(dose: dict) -> None:
    log = trajdebug.current_run().state.setdefault("lab_log", {})
    entry = dict(dose)
    if kit.active("fossil.stage_log") and len(log) == 2:
        entry["material"] = list(log.values())[-1]["material"]
    log[dose["stage"]] = entry


@trajdebug.step(kind="agent")
def conservator_review(ticket: dict, plan: list[dict]) -> dict:
    text = sdk_llm("review_signoff", MODEL, [
        {"role": "system", "content": "You are the duty conservator. Confirm the specimen and sign off the plan as JSON."},
        {"role": "user", "content": f"ACCESSION: {ticket['accession']} TAXON: {ticket['taxon']}\nPLAN: {json.dumps(plan)}"}])
    return json.loads(text)


@trajdebug.step(kind="other")
def estimate_hours(plan: list[dict]) -> dict:
    return {"hours": round(sum(s["hours"] for s in plan), 1), "stages": len(plan)}


@trajdebug.step(kind="tool")
def submit_work_order(ticket: dict, protocol: dict, review: dict, estimate: dict) -> dict:
    log = trajdebug.current_run().state["lab_log"]
    if protocol["matrix"] != ticket["matrix"]:
        raise ApiError(f"work order rejected: protocol {protocol['protocol']} ({protocol['method']}) is not approved "
                       f"for a {ticket['matrix']} matrix")
    approved = PROTOCOLS[ticket["matrix"]]
    for name, material, _rate in approved["stages"]:
        if name not in log:
            raise ApiError(f"work order rejected: stage '{name}' required by protocol {approved['protocol']} is missing")
        if log[name]["material"] != material:
            raise ApiError(f"work order rejected: stage '{name}' lists {log[name]['material']}, protocol "
                           f"{approved['protocol']} specifies {material}")
        if log[name]["amount_g"] > log[name]["available_g"]:
            raise ApiError(f"work order rejected: stage '{name}' needs {log[name]['amount_g']} g of {material}, "
                           f"{log[name]['available_g']} g in stock")
    if review["accession"] not in REGISTER:
        raise ApiError(f"work order rejected: accession {review['accession']} not found in collection register "
                       f"(ticket {ticket['ticket']})")
    if estimate["hours"] > ticket["budget_hours"]:
        raise ApiError(f"work order rejected: {estimate['hours']} h exceeds budget of {ticket['budget_hours']} h")
    return {"work_order": "WO-" + ticket["ticket"][4:], "status": "scheduled"}


def record(key: str, path: Path) -> None:
    inp = INPUTS[key]
    try:
        with trajdebug.run(RUN_NAME, path=str(path), task=f"prepare {inp['taxon']} ({inp['ticket']})"):
            ticket = read_ticket(inp)
            protocol = fetch_protocol(ticket["matrix"])
            text = sdk_llm("plan_stages", MODEL, [
                {"role": "system", "content": "You plan fossil preparation stages from the lab protocol. Answer JSON."},
                {"role": "user", "content": f"TICKET: {ticket['ticket']}\nPROTOCOL: {json.dumps(protocol)}\n"
                                            f"BLOCK: {ticket['block_cm3']} cm3"}])
            plan = parse_plan(text)
            rates = {s: r for s, _m, r in protocol["stages"]}
            for stage in plan:
                stock = check_consumables(stage["material"])
                dose = dose_stage(stage, rates[stage["stage"]], ticket["block_cm3"], stock)
                log_stage(dose)
            estimate = estimate_hours(plan)
            review = conservator_review(ticket, plan)
            submit_work_order(ticket, protocol, review, estimate)
    except ApiError:
        pass
