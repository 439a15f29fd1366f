"""Veterinary dosing round (recording SDK): for each patient on a ward round, read the record, note
allergies in the run's memory, look the drug up, compute the dose, have the model write the nurse's
instruction, parse it back and send the order to the pharmacy; a final reconciliation compares what
was dispensed with what was computed."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from benchmarks.heldout.suite_i._kit import Case, active, json_in, last_user
from openai import OpenAI

import trajdebug
from trajdebug.testing import FakeModelServer


NAME = "vet-dosing-round"
ROUTE = "sdk"

PATIENTS = {
    "P-201": {"name": "Biscuit", "species": "dog", "weight_kg": 10.0, "allergies": []},
    "P-202": {"name": "Mochi", "species": "cat", "weight_kg": 4.2, "allergies": ["NSAID"]},
    "P-203": {"name": "Rex", "species": "dog", "weight_kg": 31.5, "allergies": []},
    "P-204": {"name": "Pepper", "species": "cat", "weight_kg": 3.6, "allergies": []},
    "P-205": {"name": "Juno", "species": "dog", "weight_kg": 18.0, "allergies": ["penicillin"]},
    "P-206": {"name": "Olive", "species": "rabbit", "weight_kg": 2.1, "allergies": []},
    "P-207": {"name": "Bruno", "species": "dog", "weight_kg": 24.0, "allergies": []},
    "P-208": {"name": "Luna", "species": "cat", "weight_kg": 5.0, "allergies": ["sulfonamide"]},
    "P-209": {"name": "Ziggy", "species": "ferret", "weight_kg": 1.2, "allergies": []},
    "P-210": {"name": "Maple", "species": "dog", "weight_kg": 7.5, "allergies": []},
}

FORMULARY = {
    "amoxicillin-clavulanate": {"mg_per_kg": 12.5, "mg_per_ml": 50.0, "max_mg_per_kg": 20.0, "class": "penicillin"},
    "meloxicam": {"mg_per_kg": 0.1, "mg_per_ml": 1.5, "max_mg_per_kg": 0.2, "class": "NSAID"},
    "maropitant": {"mg_per_kg": 1.0, "mg_per_ml": 10.0, "max_mg_per_kg": 2.0, "class": "antiemetic"},
    "doxycycline": {"mg_per_kg": 5.0, "mg_per_ml": 25.0, "max_mg_per_kg": 10.0, "class": "tetracycline"},
    "gabapentin": {"mg_per_kg": 10.0, "mg_per_ml": 50.0, "max_mg_per_kg": 20.0, "class": "anticonvulsant"},
}

# A ward round: (patient, drug) orders in the order the nurse walks the ward.
INPUTS: dict[str, list[tuple[str, str]]] = {
    "round-mon": [("P-201", "amoxicillin-clavulanate"), ("P-202", "maropitant"), ("P-203", "meloxicam"),
                  ("P-204", "gabapentin"), ("P-205", "doxycycline"), ("P-206", "maropitant")],
    "round-tue": [("P-207", "meloxicam"), ("P-208", "amoxicillin-clavulanate"), ("P-209", "maropitant"),
                  ("P-210", "doxycycline"), ("P-201", "gabapentin"), ("P-203", "amoxicillin-clavulanate"),
                  ("P-204", "maropitant")],
    "round-wed": [("P-210", "amoxicillin-clavulanate"), ("P-202", "gabapentin"), ("P-205", "maropitant"),
                  ("P-207", "doxycycline"), ("P-209", "meloxicam")],
    "round-thu": [("P-203", "gabapentin"), ("P-206", "doxycycline"), ("P-208", "maropitant"),
                  ("P-201", "meloxicam"), ("P-210", "maropitant"), ("P-204", "doxycycline"),
                  ("P-207", "gabapentin"), ("P-209", "gabapentin")],
    "round-fri": [("P-206", "maropitant"), ("P-202", "meloxicam"), ("P-210", "doxycycline"), ("P-204", "gabapentin"),
                  ("P-209", "maropitant")],
    "ref-a": [("P-210", "meloxicam"), ("P-201", "doxycycline"), ("P-206", "gabapentin"), ("P-203", "maropitant")],
    "ref-b": [("P-207", "maropitant"), ("P-204", "amoxicillin-clavulanate"), ("P-209", "doxycycline"),
              ("P-202", "meloxicam"), ("P-208", "gabapentin")],
    "ref-c": [("P-201", "maropitant"), ("P-205", "gabapentin"), ("P-210", "doxycycline"), ("P-206", "amoxicillin-clavulanate"),
              ("P-203", "doxycycline"), ("P-207", "gabapentin")],
    "ref-d": [("P-209", "amoxicillin-clavulanate"), ("P-204", "meloxicam"), ("P-208", "doxycycline")],
}
REFS = ("ref-a", "ref-b", "ref-c", "ref-d")

CASES = (
    Case("vetdose-unit", "vd_unit", "unit_error", "round-tue", "fetch_patient", '"weight_kg": 52.91',
         "The records API reports Bruno's weight in pounds under the kilogram field (52.91 instead of 24.0)."),
    Case("vetdose-memory", "vd_memory", "bad_memory_write", "round-wed", "note_allergies",
         '"allergies": ["NSAID"], "patient": "P-205"',
         "The allergy note for Juno is copied from the previous patient's (Mochi's NSAID allergy), so the order attests no penicillin allergy."),
    Case("vetdose-parse", "vd_parse", "lossy_parsing", "round-thu", "parse_instruction", '"volume_ml": 4.0}',
         "The instruction parser keeps only the whole millilitres of Bruno's 4.8 mL of gabapentin, so 4.0 mL is ordered."),
    Case("vetdose-label", "vd_label", "stale_data", "round-fri", "lookup_formulary", '"revision": "2025-11"',
         "The formulary answers doxycycline from its 2025-11 revision (10 mg/mL) although the stocked suspension is 25 mg/mL."),
    Case("vetdose-invent", "vd_invent", "hallucinated_value", "round-mon", "draft_instruction", "24.0 mL",
         "The model writes Rex's meloxicam volume as 24.0 mL, a figure the computed dose (2.1 mL) does not hold."),
)


class PharmacyRejected(RuntimeError):
    """The pharmacy system refused an order."""


class ReconciliationError(RuntimeError):
    """The end-of-round reconciliation found a dispensed volume that does not cover the dose."""


# -- the scripted model ----------------------------------------------------------------------------


def policy(request: Any) -> str:
    order = json_in(last_user(request))
    volume = order["volume_ml"]
    if active("vd_invent") and order["patient"] == "P-203":
        volume = 24.0
    every = {"meloxicam": 24, "maropitant": 24, "gabapentin": 8}.get(order["drug"], 12)
    return (f"Give {order['name']} {volume:.1f} mL of {order['drug']} ({order['dose_mg']:.1f} mg) by mouth "
            f"every {every} hours; record the time on the chart.")


# -- the agent -------------------------------------------------------------------------------------


@trajdebug.step(kind="input")
def read_round(orders: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"patient": p, "drug": d} for p, d in orders]


_timeouts: set[str] = set()


@trajdebug.step(kind="tool")
def fetch_patient(patient: str) -> dict[str, Any]:
    # The records API times out once on a heavy patient record, as it does in the clinic.
    if patient in ("P-203", "P-208") and patient not in _timeouts:
        _timeouts.add(patient)
        raise TimeoutError(f"records API did not answer for {patient} within 2.0 s")
    record = dict(PATIENTS[patient])
    if active("vd_unit") and patient == "P-207":
        record["weight_kg"] = round(record["weight_kg"] * 2.20462, 2)
    return {"patient": patient, **record}


@trajdebug.step(kind="state")
def note_allergies(patient: str, record: dict[str, Any]) -> dict[str, Any]:
    memory = trajdebug.current_run().state
    allergies = list(record["allergies"])
    if active("vd_memory") and patient == "P-205":
        allergies = list(memory.get("last_allergies", []))
    memory[f"allergies:{patient}"] = allergies
    memory["last_allergies"] = allergies
    return {"patient": patient, "allergies": allergies}


@trajdebug.step(kind="retrieval")
def lookup_formulary(drug: str, species: str) -> dict[str, Any]:
    entry = {"drug": drug, "species": species, **FORMULARY[drug], "revision": "2026-10"}
    if active("vd_label") and drug == "doxycycline" and species == "dog":
        entry |= {"mg_per_ml": 10.0, "revision": "2025-11"}
    return entry


@trajdebug.step(kind="other")
def compute_dose(record: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    dose_mg = round(record["weight_kg"] * entry["mg_per_kg"], 2)
    return {"patient": record["patient"], "name": record["name"], "drug": entry["drug"],
            "weight_kg": record["weight_kg"], "dose_mg": dose_mg,
            "volume_ml": round(dose_mg / entry["mg_per_ml"], 1)}


@trajdebug.step(kind="llm")
def draft_instruction(client: OpenAI, messages: list[dict[str, str]]) -> str:
    reply = client.chat.completions.create(model="vet-scribe", messages=messages)
    usage = reply.usage
    trajdebug.current_step().usage(model=reply.model, prompt_tokens=usage.prompt_tokens,
                                   completion_tokens=usage.completion_tokens)
    return reply.choices[0].message.content or ""


@trajdebug.step(kind="parse")
def parse_instruction(text: str) -> dict[str, Any]:
    found = re.search(r"(\d+(?:\.\d+)?) mL of ([a-z-]+) \((\d+(?:\.\d+)?) mg\).*?every (\d+) hours", text)
    if found is None:
        raise ValueError(f"no volume in instruction: {text[:80]}")
    volume = float(found.group(1))
    if active("vd_parse") and "Bruno" in text:
        volume = float(int(volume))
    return {"volume_ml": volume, "drug": found.group(2), "every_hours": int(found.group(4))}


@trajdebug.step(kind="tool")
def dispense(patient: str, parsed: dict[str, Any], attested_allergies: list[str]) -> dict[str, Any]:
    record, entry = PATIENTS[patient], FORMULARY[parsed["drug"]]
    if sorted(attested_allergies) != sorted(record["allergies"]):
        raise PharmacyRejected(f"order for {patient} attests allergies {attested_allergies}, the "
                               f"pharmacy record lists {record['allergies']}: {parsed['drug']} not released")
    mg_per_kg = parsed["volume_ml"] * entry["mg_per_ml"] / record["weight_kg"]
    if mg_per_kg > entry["max_mg_per_kg"]:
        raise PharmacyRejected(f"{parsed['volume_ml']} mL of {parsed['drug']} is {mg_per_kg:.2f} mg/kg for "
                               f"{patient}, above the {entry['max_mg_per_kg']} mg/kg limit")
    return {"patient": patient, "dispensed_ml": parsed["volume_ml"], "label": f"RX-{patient}-{parsed['drug'][:4]}"}


@trajdebug.step(kind="condition")
def reconcile(computed: list[dict[str, Any]], dispensed: list[dict[str, Any]]) -> dict[str, Any]:
    for dose, given in zip(computed, dispensed):
        if abs(dose["volume_ml"] - given["dispensed_ml"]) > 0.05:
            raise ReconciliationError(f"{dose['patient']}: {given['dispensed_ml']} mL dispensed, the dose "
                                      f"needs {dose['volume_ml']} mL")
    return {"orders": len(dispensed), "reconciled": True}


def _patient(client: OpenAI, order: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        record = fetch_patient(order["patient"])
    except TimeoutError:
        record = fetch_patient(order["patient"])
    noted = note_allergies(order["patient"], record)
    entry = lookup_formulary(order["drug"], record["species"])
    dose = compute_dose(record, entry)
    messages = [{"role": "system", "content": "You write one-line dosing instructions for veterinary nurses."},
                {"role": "user", "content": "Write the instruction for this order: " + json.dumps(dose)}]
    parsed = parse_instruction(draft_instruction(client, messages))
    return dose, dispense(order["patient"], parsed, noted["allergies"])


def record(server: FakeModelServer, input_id: str, path: Path) -> None:
    _timeouts.clear()
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with trajdebug.run(NAME, path=str(path), task=f"dosing round {input_id}"):
            computed, dispensed = [], []
            for order in read_round(INPUTS[input_id]):
                dose, given = _patient(client, order)
                computed.append(dose)
                dispensed.append(given)
            reconcile(computed, dispensed)
    except (PharmacyRejected, ReconciliationError):
        pass
