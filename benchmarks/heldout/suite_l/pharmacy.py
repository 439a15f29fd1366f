"""Pharmacy compounding agent (OpenAI Agents SDK): an intake pharmacist hands each order to a compounding room.

The intake agent routes an order to sterile (IV, parenteral) or non-sterile compounding (oral, topical).
The compounding agent reads the e-prescription, the patient's chart notes, then the stock product and the
patient in one parallel turn, writes the compounding worksheet and asks the release system to release
the batch (which checks the room, the dose against the order and the stock product).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from benchmarks.heldout.suite_l import agents_route
from benchmarks.heldout.suite_l.kit import Case, active


AGENT = "pharmacy-compounding"
ROUTE = "openai_agents"
DOMAIN = "pharmacy compounding"

PRESCRIPTIONS = {
    "RX-5521": {
        "patient": "MRN-2208",
        "drug": "vancomycin",
        "sig": "15 mg/kg IV q12h",
        "route": "IV",
        "diluent": "NS",
    },
    "RX-5530": {
        "patient": "MRN-3140",
        "drug": "amphotericin B",
        "sig": "1 mg/kg IV daily",
        "route": "IV",
        "diluent": "D5W",
    },
    "RX-5547": {
        "patient": "MRN-4471",
        "drug": "cefazolin",
        "sig": "2 g IV q8h",
        "route": "IV",
        "diluent": "NS",
    },
    "RX-5552": {
        "patient": "MRN-1902",
        "drug": "omeprazole",
        "sig": "1 mg/kg PO daily",
        "route": "PO",
        "diluent": "sodium bicarbonate 8.4%",
    },
    "RX-5568": {
        "patient": "MRN-3140",
        "drug": "vancomycin",
        "sig": "10 mg/kg IV q8h",
        "route": "IV",
        "diluent": "NS",
    },
    "RX-5574": {
        "patient": "MRN-5530",
        "drug": "gentamicin",
        "sig": "5 mg/kg IV daily",
        "route": "IV",
        "diluent": "NS",
    },
    "RX-5583": {
        "patient": "MRN-1902",
        "drug": "cefazolin",
        "sig": "1 g IV q8h",
        "route": "IV",
        "diluent": "NS",
    },
    "RX-5590": {
        "patient": "MRN-4471",
        "drug": "omeprazole",
        "sig": "20 mg PO daily",
        "route": "PO",
        "diluent": "sodium bicarbonate 8.4%",
    },
    "RX-5612": {
        "patient": "MRN-2208",
        "drug": "gentamicin",
        "sig": "4 mg/kg IV daily",
        "route": "IV",
        "diluent": "NS",
    },
}
PATIENTS = {"MRN-2208": 48.0, "MRN-3140": 71.5, "MRN-4471": 84.0, "MRN-1902": 12.5, "MRN-5530": 63.0}
STOCK = {
    ("vancomycin", "500 mg"): {"product": "VAN-500", "mg_per_ml": 50.0},
    ("vancomycin", "1 g"): {"product": "VAN-1G", "mg_per_ml": 100.0},
    ("amphotericin B", "50 mg"): {"product": "AMB-50", "mg_per_ml": 5.0},
    ("cefazolin", "1 g"): {"product": "CFZ-1G", "mg_per_ml": 100.0},
    ("cefazolin", "2 g"): {"product": "CFZ-2G", "mg_per_ml": 200.0},
    ("omeprazole", "20 mg"): {"product": "OME-20", "mg_per_ml": 2.0},
    ("gentamicin", "80 mg"): {"product": "GEN-80", "mg_per_ml": 40.0},
}
VIAL = {
    "vancomycin": "1 g",
    "amphotericin B": "50 mg",
    "cefazolin": "2 g",
    "omeprazole": "20 mg",
    "gentamicin": "80 mg",
}
CHART_NOTES = {
    "MRN-2208": ["2026-05-02 renal function stable", "weight 48 kg on admission"],
    "MRN-3140": ["2026-05-01 weight 71.5 kg", "no known allergies"],
    "MRN-4471": ["weight 84 kg", "penicillin allergy: rash"],
    "MRN-1902": ["paediatric: weight 12.5 kg", "NG tube in place"],
    "MRN-5530": ["weight 63 kg", "trough due before 3rd dose"],
}
_WORKSHEETS: dict[str, dict[str, Any]] = {}


def _ordered_mg(rx: dict[str, Any], weight: float) -> float:
    amount, unit = re.match(r"([\d.]+) (mg/kg|mg|g)", rx["sig"]).groups()
    return {"mg/kg": float(amount) * weight, "mg": float(amount), "g": float(amount) * 1000}[unit]


def get_prescription(rx_id: str) -> str:
    """The e-prescription, its dosing instruction parsed into amount and unit."""
    rx = PRESCRIPTIONS[rx_id]
    pattern = r"([\d.]+) ?(mg/kg|mg)" if active("pharmacy.sig_units") else r"([\d.]+) ?(mg/kg|mg|g)\b"
    m = re.search(pattern, rx["sig"]) or re.match(r"([\d.]+)()", rx["sig"])
    amount, unit = m.group(1), m.group(2) or "mg"
    return json.dumps(
        {
            "rx_id": rx_id,
            **rx,
            "dose": {"amount": float(amount), "unit": unit},
            "frequency": rx["sig"].split()[-1],
        }
    )


def get_chart_notes(patient_id: str) -> str:
    """Recent chart notes of a patient (the ward's note store)."""
    notes = CHART_NOTES[patient_id]
    if active("pharmacy.ward_notes"):
        notes = [n for pid, ns in CHART_NOTES.items() if pid != patient_id for n in ns][:3] + notes
    return json.dumps({"patient_id": patient_id, "notes": notes})


def lookup_stock(drug: str, vial: str) -> str:
    """The stock product of a drug in a vial size, with its concentration after reconstitution."""
    if active("pharmacy.vial_size"):
        vial = next(v for d, v in STOCK if d == drug)
    return json.dumps({"drug": drug, "vial": vial, **STOCK[(drug, vial)]})


def get_patient(patient_id: str) -> str:
    """The patient's record: weight in kg."""
    return json.dumps({"patient_id": patient_id, "weight_kg": PATIENTS[patient_id]})


def write_worksheet(
    rx_id: str, room: str, product: str, dose_mg: float, volume_ml: float, diluent: str
) -> str:
    """Write the compounding worksheet of a batch."""
    ws_id = f"WS-{rx_id[3:]}-{len(_WORKSHEETS) + 301}"
    _WORKSHEETS[ws_id] = {
        "rx_id": rx_id,
        "room": room,
        "product": product,
        "dose_mg": dose_mg,
        "volume_ml": volume_ml,
        "diluent": diluent,
    }
    return json.dumps({"worksheet_id": ws_id, **_WORKSHEETS[ws_id]})


def release_batch(worksheet_id: str) -> str:
    """Ask the pharmacy release system to release a compounded batch (it checks the worksheet against the order)."""
    ws = _WORKSHEETS[worksheet_id]
    rx = PRESCRIPTIONS[ws["rx_id"]]
    if rx["route"] == "IV" and ws["room"] != "sterile":
        raise ValueError(
            f"release system: {worksheet_id} is an IV admixture; only batches from the sterile cleanroom (USP <797>) are releasable"
        )
    stock = STOCK[(rx["drug"], VIAL[rx["drug"]])]
    if ws["product"] != stock["product"]:
        raise ValueError(
            f"release system: {worksheet_id} draws from {ws['product']}; the order is verified against {stock['product']}"
        )
    want = _ordered_mg(rx, PATIENTS[rx["patient"]])
    if abs(ws["dose_mg"] - want) > 0.05 * want:
        raise ValueError(
            f"release system: dose {ws['dose_mg']:g} mg on {worksheet_id} differs from the ordered {want:g} mg ({rx['sig']})"
        )
    if ws["diluent"] != rx["diluent"]:
        raise ValueError(
            f"release system: {rx['drug']} on {worksheet_id} is to be diluted in {rx['diluent']}, worksheet says {ws['diluent']}"
        )
    return json.dumps(
        {"worksheet_id": worksheet_id, "status": "released", "label": f"{rx['drug']} {ws['dose_mg']:g} mg"}
    )


INTAKE_SYS = "You are the pharmacy intake desk. Hand IV and other parenteral orders to Sterile Compounding, oral and topical ones to Nonsterile Compounding."
ROOM_SYS = {
    "sterile": "You compound in the sterile cleanroom.",
    "nonsterile": "You compound in the nonsterile room.",
}
WORK_SYS = " Read the prescription and chart notes, look up the stock vial and the patient together, write the worksheet, then release the batch."


def _weight(notes: list[str], patient: dict[str, Any]) -> float:
    for note in notes:
        m = re.search(r"weight ([\d.]+) kg", note)
        if m:
            return float(m.group(1))
    return patient["weight_kg"]


def _room_turn(room: str, messages: list[dict[str, Any]]) -> Any:
    from trajdebug.testing import Reply, tool_call

    rx_id = re.search(r"RX-\d+", next(m["content"] for m in messages if m["role"] == "user")).group(0)
    done = agents_route.tool_results_since_handoff(messages)
    if not done:
        return Reply(tool_calls=(tool_call("get_prescription", {"rx_id": rx_id}),))
    rx = agents_route.parse(done[0])
    if len(done) == 1:
        return Reply(tool_calls=(tool_call("get_chart_notes", {"patient_id": rx["patient"]}),))
    if len(done) == 2:
        return Reply(
            tool_calls=(
                tool_call("lookup_stock", {"drug": rx["drug"], "vial": VIAL[rx["drug"]]}),
                tool_call("get_patient", {"patient_id": rx["patient"]}),
            )
        )
    notes, stock, patient = (agents_route.parse(m) for m in done[1:4])
    if len(done) == 4:
        dose = rx["dose"]
        mg = {
            "mg/kg": dose["amount"] * _weight(notes["notes"], patient),
            "mg": dose["amount"],
            "g": dose["amount"] * 1000,
        }[dose["unit"]]
        diluent = rx["diluent"]
        if active("pharmacy.diluent_plan") and rx["drug"] == "amphotericin B":
            diluent = "NS"
        return Reply(
            tool_calls=(
                tool_call(
                    "write_worksheet",
                    {
                        "rx_id": rx_id,
                        "room": room,
                        "product": stock["product"],
                        "dose_mg": round(mg, 1),
                        "volume_ml": round(mg / stock["mg_per_ml"], 2),
                        "diluent": diluent,
                    },
                ),
            )
        )
    ws = agents_route.parse(done[4])
    if len(done) == 5:
        return Reply(tool_calls=(tool_call("release_batch", {"worksheet_id": ws["worksheet_id"]}),))
    return f"Released {ws['worksheet_id']}: {ws['dose_mg']:g} mg {rx['drug']} in {ws['diluent']}."


def policy(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    messages = request.body["messages"]
    system = messages[0]["content"]
    if system == INTAKE_SYS:
        text = messages[-1]["content"]
        sterile = " IV " in f" {text} "
        if active("pharmacy.room_handoff"):
            sterile = "q8h" not in text and sterile
        names = [t["function"]["name"] for t in request.body.get("tools", [])]
        target = next(n for n in names if ("non" in n) != sterile)
        return Reply(tool_calls=(tool_call(target, {}),))
    for room, prefix in ROOM_SYS.items():
        if system == prefix + WORK_SYS:
            return _room_turn(room, messages)
    return "Please contact the pharmacy."


def _agent(server: Any) -> Any:
    from agents import Agent, function_tool

    model = agents_route.model(server)
    fns = (get_prescription, get_chart_notes, lookup_stock, get_patient, write_worksheet, release_batch)
    rooms = [
        Agent(
            name=f"{room.capitalize()} Compounding",
            instructions=prefix + WORK_SYS,
            model=model,
            tools=[function_tool(fn, failure_error_function=None) for fn in fns],
        )
        for room, prefix in ROOM_SYS.items()
    ]
    return Agent(name="Pharmacy Intake", instructions=INTAKE_SYS, handoffs=rooms, model=model)


def record(server: Any, path: Path, inp: dict[str, Any]) -> None:
    """Record one run of the agent on ``inp`` into ``path`` (a failure is recorded, not raised)."""
    server.use(policy)
    agents_route.run(_agent(server), inp["text"], path, AGENT)


def _req(rx_id: str) -> dict[str, Any]:
    rx = PRESCRIPTIONS[rx_id]
    return {"text": f"Compound {rx_id}: {rx['drug']} {rx['sig']} for {rx['patient']}"}


CASES = [
    Case(
        "pharmacy_01",
        "pharmacy.room_handoff",
        "wrong_routing",
        "generation gpt-4o-mini",
        "transfer_to_non",
        _req("RX-5547"),
    ),
    Case(
        "pharmacy_02",
        "pharmacy.vial_size",
        "tool_ignores_argument",
        "lookup_stock",
        "VAN-500",
        _req("RX-5521"),
    ),
    Case(
        "pharmacy_03",
        "pharmacy.ward_notes",
        "context_pollution",
        "get_chart_notes",
        "renal function stable",
        _req("RX-5568"),
    ),
    Case(
        "pharmacy_04",
        "pharmacy.sig_units",
        "lossy_parsing",
        "get_prescription",
        '"unit": "mg"',
        _req("RX-5583"),
    ),
    Case(
        "pharmacy_05",
        "pharmacy.diluent_plan",
        "plan_error",
        "generation gpt-4o-mini",
        '"diluent": "NS"',
        _req("RX-5530"),
    ),
]
REFS = [_req("RX-5552"), _req("RX-5574"), _req("RX-5590"), _req("RX-5612")]
