"""Hearing aid fitting clinic (recording SDK): programs a patient's hearing aids from the latest audiogram.

Shape: intake -> patient record (retried on a gateway timeout) -> audiogram fetch and parse -> model
classifies the loss per ear -> a `fit_ear` sub-agent per ear (targets, model picks a device, catalog
look-up, channel mapping, feedback test, program saved to ``run.state``) -> model writes the notes ->
assemble -> `validate_fitting` (the clinic's fitting rules).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any


sys.path.insert(0, str(Path(__file__).resolve().parent))

import kit
from common import chat_messages, sdk_chat, system_text, text_of

import trajdebug


NAME = "hearing-fitting"
ROUTE = "sdk"
DOMAIN = "hearing aid fitting clinic"
EXT = "jsonl"
SHAPE = ("intake, patient record with retry, audiogram fetch+parse, LLM loss classification, "
         "fit_ear sub-agent per ear (targets, LLM device pick, catalog, channel map, feedback test, "
         "state write), LLM notes, assemble, validator; 18-27 steps")

FREQS = [250, 500, 1000, 2000, 4000, 8000]

DEVICES = {
    "Aria 40 S": {"model": "Aria 40 S", "fit_max_hl": 60, "max_gain_db": 40, "channels_hz": FREQS},
    "Aria 60 M": {"model": "Aria 60 M", "fit_max_hl": 80, "max_gain_db": 55, "channels_hz": FREQS},
    "Aria 75 P": {"model": "Aria 75 P", "fit_max_hl": 95, "max_gain_db": 70, "channels_hz": FREQS},
}
BY_DEGREE = {"mild": "Aria 40 S", "moderate": "Aria 60 M", "moderately-severe": "Aria 75 P", "severe": "Aria 75 P"}


def _ag(date: str, unit: str, left: list[int] | None, right: list[int] | None) -> dict[str, Any]:
    scale = 1000 if unit == "kHz" else 1
    rec: dict[str, Any] = {"test_date": date, "freq_unit": unit, "audiometer": "AD-629" if unit == "Hz" else "Callisto"}
    for ear, vals in (("left", left), ("right", right)):
        if vals is not None:
            rec[ear] = [{"freq": f / scale, "hl_db": v} for f, v in zip(FREQS, vals, strict=True)]
    return rec


PATIENTS: dict[str, dict[str, Any]] = {
    "HA-3107": {"name": "M. Okafor", "born": "1951-04-02", "ears": ["left", "right"], "appointment": "2024-11-12",
                "gateway_hiccup": False,
                "history": [_ag("2023-10-02", "Hz", [15, 20, 30, 40, 50, 55], [20, 25, 35, 45, 55, 60]),
                            _ag("2024-10-21", "kHz", [20, 25, 35, 45, 55, 60], [25, 30, 40, 50, 60, 65])]},
    "HA-3112": {"name": "L. Brandt", "born": "1946-09-17", "ears": ["left", "right"], "appointment": "2024-11-13",
                "gateway_hiccup": True,
                "history": [_ag("2024-09-30", "Hz", [30, 35, 40, 50, 60, 65], [35, 40, 45, 55, 65, 70])]},
    "HA-3120": {"name": "R. Castellano", "born": "1939-12-05", "ears": ["left", "right"], "appointment": "2024-11-12",
                "gateway_hiccup": False,
                "history": [_ag("2023-02-09", "Hz", [25, 30, 40, 45, 55, 60], [30, 35, 40, 50, 55, 60]),
                            _ag("2024-10-30", "Hz", [40, 45, 55, 65, 75, 80], [40, 50, 55, 60, 75, 85])]},
    "HA-3124": {"name": "S. Lindqvist", "born": "1958-06-28", "ears": ["left", "right"], "appointment": "2024-11-14",
                "gateway_hiccup": False,
                "history": [_ag("2024-08-19", "Hz", [25, 30, 35, 45, 55, 60], [30, 40, 45, 50, 60, 70])]},
    "HA-3131": {"name": "D. Haddad", "born": "1949-02-11", "ears": ["left", "right"], "appointment": "2024-11-15",
                "gateway_hiccup": True,
                "history": [_ag("2024-11-01", "Hz", [20, 25, 30, 40, 50, 55], [30, 35, 45, 55, 70, 75])]},
    # reference patients
    "HA-2988": {"name": "J. Mbeki", "born": "1944-03-30", "ears": ["right"], "appointment": "2024-11-11",
                "gateway_hiccup": False,
                "history": [_ag("2024-10-07", "Hz", None, [35, 40, 50, 60, 70, 75])]},
    "HA-3003": {"name": "K. Tanaka", "born": "1955-07-19", "ears": ["left", "right"], "appointment": "2024-11-11",
                "gateway_hiccup": True,
                "history": [_ag("2022-05-10", "Hz", [10, 15, 20, 30, 40, 45], [10, 15, 25, 30, 40, 45]),
                            _ag("2024-09-12", "kHz", [15, 20, 25, 35, 45, 55], [15, 20, 30, 35, 45, 50])]},
    "HA-3056": {"name": "P. Novak", "born": "1941-10-23", "ears": ["left"], "appointment": "2024-11-12",
                "gateway_hiccup": False,
                "history": [_ag("2024-10-15", "Hz", [45, 55, 65, 70, 80, 85], None)]},
    "HA-3078": {"name": "A. Ferreira", "born": "1960-01-08", "ears": ["left", "right"], "appointment": "2024-11-13",
                "gateway_hiccup": False,
                "history": [_ag("2024-07-29", "kHz", [30, 35, 45, 50, 60, 70], [25, 30, 40, 45, 55, 60])]},
}

CASE_IDS = ["zzh_hear_01", "zzh_hear_02", "zzh_hear_03", "zzh_hear_04", "zzh_hear_05"]
CASES = [
    {"case": "zzh_hear_01", "switch": "hearing.khz_scale", "input": "HA-3107", "fault_kind": "unit_error",
     "root": ("parse_audiogram", 1), "failure": ("validate_fitting", 1),
     "description": "The audiogram parser keeps the Callisto audiometer's kHz frequencies as if they were Hz, "
                    "so every ear's thresholds sit at 0.25..8 'Hz' and the channel map puts one gain on all channels."},
    {"case": "zzh_hear_02", "switch": "hearing.programs_replace", "input": "HA-3112", "fault_kind": "bad_memory_write",
     "root": ("save_ear_program", 2), "failure": ("validate_fitting", 1),
     "description": "Saving the right ear's program replaces the whole programs entry in run.state instead of "
                    "adding to it, dropping the left ear's program of a binaural fitting."},
    {"case": "zzh_hear_03", "switch": "hearing.mirror_read", "input": "HA-3120", "fault_kind": "stale_data",
     "root": ("fetch_audiogram", 1), "failure": ("validate_fitting", 1),
     "description": "The audiogram fetch reads the nightly mirror, which still holds the 2023-02-09 audiogram "
                    "instead of the 2024-10-30 test, so the fitting rests on a 21-month-old audiogram."},
    {"case": "zzh_hear_04", "switch": "hearing.channel_range", "input": "HA-3124", "fault_kind": "off_by_one",
     "root": ("map_channels", 1), "failure": ("validate_fitting", 1),
     "description": "The channel mapper loops to len(channels) - 1, so the 8000 Hz channel of the left ear's "
                    "device gets no gain."},
    {"case": "zzh_hear_05", "switch": "hearing.pta_readout", "input": "HA-3131", "fault_kind": "hallucinated_value",
     "root": ("classify_loss", 1), "failure": ("validate_fitting", 1),
     "description": "The classification model states a right-ear pure-tone average of 36 dB HL (the audiogram "
                    "gives 51), calls it mild, and the right ear gets a device whose fitting range stops at 60 dB HL."},
]
REFS = ["HA-2988", "HA-3003", "HA-3056", "HA-3078"]


class FittingRejected(Exception):
    """The fitting breaks a clinic rule."""


# -- the model ------------------------------------------------------------------------------------------


def _degree(pta: float) -> str:
    if pta <= 25:
        return "normal"
    if pta <= 40:
        return "mild"
    if pta <= 55:
        return "moderate"
    if pta <= 70:
        return "moderately-severe"
    return "severe"


def brain(request: Any) -> str:
    messages = chat_messages(request)
    system = system_text(messages)
    user = json.loads(text_of(messages[-1]))
    if system.startswith("You classify hearing loss"):
        out = {}
        for ear, points in user["thresholds"].items():
            ordered = [p["hl_db"] for p in sorted(points, key=lambda p: p["freq"])]
            pta = sum(ordered[1:5]) / 4
            if ear == "right" and kit.on("hearing.pta_readout"):
                pta = round(pta * 0.7)
            out[ear] = {"pta_db": round(pta, 1), "degree": _degree(pta)}
        return json.dumps(out)
    if system.startswith("You select hearing aids"):
        model = BY_DEGREE[user["degree"]]
        return json.dumps({"device": model, "why": f"{user['degree']} loss, {user['ear']} ear"})
    if system.startswith("You write fitting notes"):
        parts = [f"{p['ear']} ear: {p['device']} with {len(p['gains'])} channels programmed" for p in user["programs"]]
        return "Fitting completed. " + "; ".join(parts) + ". Review in four weeks."
    return "I can only help with fitting tasks."


# -- steps -------------------------------------------------------------------------------------------------

_CALLS: dict[str, int] = {}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def load_patient(patient_id: str) -> dict:
    _CALLS["ehr"] = _CALLS.get("ehr", 0) + 1
    p = PATIENTS[patient_id]
    if p["gateway_hiccup"] and _CALLS["ehr"] == 1:
        raise ConnectionError("EHR gateway timed out after 5.0 s")
    return {"patient_id": patient_id, "name": p["name"], "born": p["born"], "ears": list(p["ears"]),
            "appointment": p["appointment"]}


@trajdebug.step(kind="state")
def remember_patient(patient: dict) -> None:
    trajdebug.current_run().state["patient"] = patient


@trajdebug.step(kind="tool")
def fetch_audiogram(patient_id: str) -> dict:
    history = PATIENTS[patient_id]["history"]
    # the nightly mirror's copy, or the audiology system's latest record
    record = history[0] if kit.on("hearing.mirror_read") else history[-1]
    return json.loads(json.dumps(record))


@trajdebug.step(kind="parse")
def parse_audiogram(record: dict) -> dict:
    scale = 1000 if record["freq_unit"] == "kHz" else 1
    if kit.on("hearing.khz_scale"):
        scale = 1
    out: dict[str, Any] = {"test_date": record["test_date"]}
    for ear in ("left", "right"):
        if ear in record:
            points = []
            for p in record[ear]:
                hz = round(p["freq"] * scale, 3)
                points.append({"freq": int(hz) if hz == int(hz) else hz, "hl_db": p["hl_db"]})
            out[ear] = points
    return out


@trajdebug.step(kind="parse")
def parse_classification(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="other")
def compute_targets(ear: str, points: list) -> dict:
    # half-gain rule with a low-frequency cut
    cut = {250: 5, 500: 3}
    return {"ear": ear, "targets": [{"freq": p["freq"], "gain_db": max(0, round(p["hl_db"] / 2) - cut.get(p["freq"], 0))}
                                    for p in points]}


@trajdebug.step(kind="parse")
def parse_device_choice(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="tool")
def lookup_device(model: str) -> dict:
    return json.loads(json.dumps(DEVICES[model]))


@trajdebug.step(kind="other")
def map_channels(targets: dict, device: dict) -> dict:
    channels = device["channels_hz"]
    points = targets["targets"]
    upto = len(channels) - 1 if kit.on("hearing.channel_range") else len(channels)
    gains = []
    for i in range(upto):
        hz = channels[i]
        nearest = min(points, key=lambda p: abs(p["freq"] - hz))
        gains.append({"hz": hz, "gain_db": min(nearest["gain_db"], device["max_gain_db"])})
    return {"ear": targets["ear"], "device": device["model"], "gains": gains}


@trajdebug.step(kind="tool")
def feedback_test(program: dict) -> dict:
    top = max((g["gain_db"] for g in program["gains"]), default=0)
    return {"ear": program["ear"], "margin_db": max(4, 18 - top // 4), "passed": True}


@trajdebug.step(kind="state")
def save_ear_program(ear: str, program: dict, feedback: dict) -> None:
    run = trajdebug.current_run()
    entry = {**program, "feedback_margin_db": feedback["margin_db"]}
    if kit.on("hearing.programs_replace"):
        run.state["programs"] = {ear: entry}
    else:
        run.state["programs"] = {**run.state.get("programs", {}), ear: entry}


@trajdebug.step(kind="agent")
def fit_ear(client: Any, ear: str, points: list, loss: dict) -> dict:
    targets = compute_targets(ear, points)
    prompt = [
        {"role": "system", "content": "You select hearing aids from the clinic catalog: "
                                      + ", ".join(DEVICES) + ". Answer JSON {device, why}."},
        {"role": "user", "content": json.dumps({"ear": ear, "degree": loss["degree"], "pta_db": loss["pta_db"]})},
    ]
    choice = parse_device_choice(sdk_chat(client, "propose_device", prompt))
    device = lookup_device(choice["device"])
    program = map_channels(targets, device)
    feedback = feedback_test(program)
    save_ear_program(ear, program, feedback)
    return program


@trajdebug.step(kind="other")
def assemble_fitting(patient_id: str, audiogram: dict, notes: str) -> dict:
    state = trajdebug.current_run().state
    patient = state["patient"]
    programs = state.get("programs", {})
    return {"patient_id": patient_id, "appointment": patient["appointment"], "ears": patient["ears"],
            "audiogram": audiogram, "programs": {ear: programs.get(ear) for ear in patient["ears"]}, "notes": notes}


@trajdebug.step(kind="condition")
def validate_fitting(fitting: dict) -> dict:
    appt = dt.date.fromisoformat(fitting["appointment"])
    tested = dt.date.fromisoformat(fitting["audiogram"]["test_date"])
    age = (appt - tested).days
    if age > 180:
        raise FittingRejected(f"audiogram dated {tested} is {age} days before the fitting on {appt}; "
                              "the clinic requires one within 180 days")
    for ear in fitting["ears"]:
        program = fitting["programs"].get(ear)
        if program is None:
            raise FittingRejected(f"{ear} ear has no saved program in a fitting for ears {fitting['ears']}")
        device = DEVICES[program["device"]]
        points = {p["freq"]: p["hl_db"] for p in fitting["audiogram"][ear]}
        for hz in device["channels_hz"]:
            if hz not in points:
                raise FittingRejected(f"{ear} ear: audiogram has no threshold at {hz} Hz "
                                      f"(it lists {sorted(points)}); each device channel needs one")
        worst = max(points.values())
        worst_hz = max(points, key=lambda f: points[f])
        if worst > device["fit_max_hl"]:
            raise FittingRejected(f"{ear} ear threshold {worst} dB HL at {worst_hz} Hz exceeds the fitting range "
                                  f"of {device['model']} ({device['fit_max_hl']} dB HL)")
        set_hz = [g["hz"] for g in program["gains"]]
        missing = [hz for hz in device["channels_hz"] if hz not in set_hz]
        if missing:
            raise FittingRejected(f"{ear} program sets {len(set_hz)} of {len(device['channels_hz'])} channels of "
                                  f"{device['model']}; no gain at {missing} Hz")
        for g in program["gains"]:
            if g["gain_db"] > device["max_gain_db"]:
                raise FittingRejected(f"{ear} ear gain {g['gain_db']} dB at {g['hz']} Hz above the device maximum")
    return {"approved": True, "ears": fitting["ears"]}


# -- the agent ---------------------------------------------------------------------------------------------


def record(patient_id: str, path: Path, server: Any) -> None:
    from openai import OpenAI

    _CALLS.clear()
    client = OpenAI(base_url=server.base_url, api_key="clinic-local", max_retries=0)
    appt = PATIENTS[patient_id]["appointment"]
    try:
        with trajdebug.run(NAME, path=path, task=f"fit hearing aids for {patient_id} on {appt}",
                           metadata={"clinic": "Northgate Audiology"}) as run:
            with trajdebug.step("intake", kind="input") as s:
                s.output = {"patient_id": patient_id, "appointment": appt, "visit": "hearing aid fitting"}
            patient = load_patient(patient_id)
            remember_patient(patient)
            audiogram = parse_audiogram(fetch_audiogram(patient_id))
            prompt = [
                {"role": "system", "content": "You classify hearing loss per ear from air-conduction thresholds "
                                              "(pure-tone average of 500-4000 Hz). Answer JSON per ear: "
                                              "{pta_db, degree}."},
                {"role": "user", "content": json.dumps({"thresholds": {e: audiogram[e] for e in patient["ears"]}})},
            ]
            loss = parse_classification(sdk_chat(client, "classify_loss", prompt))
            programs = [fit_ear(client, ear, audiogram[ear], loss[ear]) for ear in patient["ears"]]
            notes = sdk_chat(client, "write_fitting_notes", [
                {"role": "system", "content": "You write fitting notes for the patient file."},
                {"role": "user", "content": json.dumps({"patient_id": patient_id, "programs": programs})},
            ])
            fitting = assemble_fitting(patient_id, audiogram, notes)
            validate_fitting(fitting)
            run.state["status"] = "fitted"
    except FittingRejected:
        pass
