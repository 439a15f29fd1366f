"""Nuclear medicine hot lab: Tc-99m elution, kit preparation and patient dose dispensing (route: sdk).

The agent parses the day's RIS export, reads the generator, asks the model for an elution and kit plan,
parses it, then for each elution elutes the generator and checks molybdenum breakthrough, prepares each
kit from the eluate and checks its radiochemical purity. For each patient in slot order a router picks
the adult or the paediatric path (the paediatric one asks the model for a weight-based dose, which looks
the weight up on the ward by a tool call), the dose is drawn from its vial at the slot time and
labelled. A release check verifies every dispensed dose before the syringes leave the hot lab.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import trajdebug

from .common import chat_step, dumps, last_user_json, system_text, tool_calls, tool_spec
from trajdebug.testing import Reply, tool_call

NAME = "radiopharmacy-hotlab"
ROUTE = "sdk"
DOMAIN = "nuclear medicine hot lab: elute the Tc-99m generator, prepare kits, dispense patient doses"
SHAPE = (
    "input, RIS-export parser, generator tool, planning model call, plan parser, loop over elutions "
    "(elution and Mo-99 tools) and kits (kit and purity tools), loop over patients (router, paediatric "
    "dose model call with a ward-weight tool call, draw and label tools), release check, output; 34-41 steps per passing run"
)

SWITCH: str | None = None


def _case(key: str) -> bool:
    """The one place the case switch is read."""
    return SWITCH == key


HALF_LIFE_H = 6.01
KIT_CAP = {"MDP": 8000, "MAA": 1500, "MIBI": 8000, "DTPA": 4000}
KIT_VOLUME_ML = 5.0
DEAD_VOLUME_ML = 0.1
MIN_DRAW_ML = 0.05
EANM_BASE = {"MDP": 35.0, "DTPA": 34.0, "MAA": 5.6, "MIBI": 63.0}
ELUTIONS = {"E1": ("07:30", "07:45"), "E2": ("12:00", "12:15")}


def eanm(study: str, kg: float) -> float:
    """The paediatric activity for a body weight (the department's EANM card, as a curve)."""
    return round(EANM_BASE[study] * (1 + 0.16 * kg), 0)


def decay(hours: float) -> float:
    return 0.5 ** (hours / HALF_LIFE_H)


def _dh(a: str, b: str) -> float:
    """Hours from a to b (HH:MM)."""
    return (datetime.strptime(b, "%H:%M") - datetime.strptime(a, "%H:%M")).total_seconds() / 3600


WARD_WEIGHTS = {"P-77145": 32.0, "P-77150": 19.4, "P-77171": 41.5}
GENERATORS = {
    "2025-06-02": 19200,
    "2025-06-03": 18500,
    "2025-06-04": 17600,
    "2025-06-05": 16800,
    "2025-06-06": 16100,
}

INPUTS = [
    {
        "id": "mon0602",
        "task": "hot lab dispensing for Monday 2 June (generator G-3391)",
        "worklist": {
            "date": "2025-06-02",
            "generator": "G-3391",
            "ris_export": "\n".join(
                [
                    "patient|study|slot|activity|age|weight|list",
                    "P-77101|MDP bone|08:45|800 MBq|67y|81.0 kg|adult",
                    "P-77102|MIBI rest|09:15|400 MBq|58y|92.5 kg|adult",
                    "P-77103|MDP bone|09:30|800 MBq|71y|64.0 kg|adult",
                    "P-77104|MIBI stress|11:15|1 100 MBq|58y|92.5 kg|adult",
                    "P-77105|MAA lung|11:45|100 MBq|44y|70.2 kg|adult",
                    "P-77106|MDP bone|13:30|600 MBq|80y|52.0 kg|adult",
                ]
            ),
        },
    },
    {
        "id": "tue0603",
        "task": "hot lab dispensing for Tuesday 3 June (generator G-3391)",
        "worklist": {
            "date": "2025-06-03",
            "generator": "G-3391",
            "ris_export": "\n".join(
                [
                    "patient|study|slot|activity|age|weight|list",
                    "P-77120|MDP bone|08:30|800 MBq|62y|77.0 kg|adult",
                    "P-77121|DTPA renal|09:00|300 MBq|49y|68.0 kg|adult",
                    "P-77122|MDP bone|10:00|800 MBq|55y|88.0 kg|adult",
                    "P-77123|MAA lung|10:30|100 MBq|73y|61.0 kg|adult",
                    "P-77124|MDP bone|14:00|800 MBq|69y|70.5 kg|adult",
                ]
            ),
        },
    },
    {
        "id": "wed0604",
        "task": "hot lab dispensing for Wednesday 4 June (generator G-3391)",
        "worklist": {
            "date": "2025-06-04",
            "generator": "G-3391",
            "ris_export": "\n".join(
                [
                    "patient|study|slot|activity|age|weight|list",
                    "P-77140|MDP bone|08:40|800 MBq|74y|79.0 kg|adult",
                    "P-77145|MDP bone|09:10|500 MBq|11y|32.0 kg|adult",
                    "P-77141|DTPA renal|09:45|300 MBq|38y|59.0 kg|adult",
                    "P-77142|MDP bone|10:20|800 MBq|66y|83.5 kg|adult",
                    "P-77143|MAA lung|11:00|100 MBq|81y|55.0 kg|adult",
                    "P-77144|MDP bone|13:45|800 MBq|59y|90.0 kg|adult",
                ]
            ),
        },
    },
    {
        "id": "thu0605",
        "task": "hot lab dispensing for Thursday 5 June (generator G-3391)",
        "worklist": {
            "date": "2025-06-05",
            "generator": "G-3391",
            "ris_export": "\n".join(
                [
                    "patient|study|slot|activity|age|weight|list",
                    "P-77160|MDP bone|08:30|800 MBq|63y|72.0 kg|adult",
                    "P-77150|MDP bone|09:20|EANM|6y||paediatric",
                    "P-77161|MIBI rest|09:50|400 MBq|52y|101.0 kg|adult",
                    "P-77162|MDP bone|10:40|800 MBq|77y|66.0 kg|adult",
                    "P-77171|DTPA renal|11:10|EANM|13y|41.5 kg|paediatric",
                    "P-77163|MIBI stress|12:45|1 100 MBq|52y|101.0 kg|adult",
                ]
            ),
        },
    },
    {
        "id": "fri0606",
        "task": "hot lab dispensing for Friday 6 June (generator G-3391)",
        "worklist": {
            "date": "2025-06-06",
            "generator": "G-3391",
            "ris_export": "\n".join(
                [
                    "patient|study|slot|activity|age|weight|list",
                    "P-77180|MDP bone|08:45|800 MBq|70y|75.0 kg|adult",
                    "P-77181|MDP bone|09:30|800 MBq|64y|82.0 kg|adult",
                    "P-77182|MAA lung|09:50|100 MBq|58y|66.0 kg|adult",
                    "P-77183|MDP bone|10:15|800 MBq|72y|69.0 kg|adult",
                    "P-77184|MDP bone|13:30|800 MBq|61y|94.0 kg|adult",
                    "P-77185|MDP bone|14:15|800 MBq|79y|58.0 kg|adult",
                    "P-77186|MDP bone|15:00|800 MBq|67y|71.0 kg|adult",
                ]
            ),
        },
    },
]

CASES = [
    {
        "case": "hotlab_ris_thousands",
        "input": "mon0602",
        "switch": "first_token_activity",
        "fault_kind": "lossy_parsing",
        "root": ("parse_worklist", 1),
        "failure": ("draw_dose", 4),
        "description": "The RIS-export parser reads only the first token of '1 100 MBq', so P-77104's MIBI stress dose "
        "becomes 1 MBq; the plan and the kit go ahead and the draw of a 0.01 mL dose is refused.",
    },
    {
        "case": "hotlab_calibrator_mci",
        "input": "tue0603",
        "switch": "calibrator_in_mci",
        "fault_kind": "unit_error",
        "root": ("elute", 1),
        "failure": ("prepare_kit", 2),
        "description": "The first elution's calibrator reading is taken in mCi (500) and stored as MBq, so the eluate "
        "looks 37 times weaker and the second kit finds too little eluate left for its activity.",
    },
    {
        "case": "hotlab_child_on_adult_list",
        "input": "wed0604",
        "switch": "route_by_list",
        "fault_kind": "wrong_routing",
        "root": ("route_patient", 2),
        "failure": ("release_doses", 1),
        "description": "The router sent P-77145, an 11-year-old booked on the adult bone list, down the adult "
        "fixed-dose path by the list name instead of the age, so 500 MBq is drawn and the release "
        "check stops it above the weight-based paediatric maximum.",
    },
    {
        "case": "hotlab_pending_weight",
        "input": "thu0605",
        "switch": "assume_weight",
        "fault_kind": "hallucinated_value",
        "root": ("dose_model", 1),
        "failure": ("release_doses", 1),
        "description": "For P-77150, whose weight the RIS lists as pending, the dose model answered at once with a "
        "28 kg weight it was never given instead of asking the ward; the release check finds the ward "
        "weight is 19.4 kg.",
    },
    {
        "case": "hotlab_single_elution",
        "input": "fri0606",
        "switch": "one_morning_kit",
        "fault_kind": "plan_error",
        "root": ("plan_elution", 1),
        "failure": ("draw_dose", 7),
        "description": "The plan serves the whole day's bone scans from one 07:45 MDP kit instead of a second "
        "afternoon kit; the vial is capped at 8,000 MBq and by 15:00 it cannot give the last 800 MBq.",
    },
]


class _Lab:
    def __init__(self, date: str) -> None:
        self.date = date
        self.eluates: dict[str, dict] = {}
        self.vials: dict[str, dict] = {}
        self.noise = 0


LAB: _Lab | None = None


# --- steps ------------------------------------------------------------------------------------


@trajdebug.step(kind="input")
def receive_worklist(worklist: dict) -> dict:
    return dict(worklist)


def _activity(text: str) -> float | None:
    if text == "EANM":
        return None
    number = text.replace("MBq", "").strip()
    if _case("first_token_activity"):
        return float(number.split()[0])
    return float(number.replace(" ", "").replace(",", ""))


@trajdebug.step(kind="parse")
def parse_worklist(ris_export: str) -> list[dict]:
    lines = ris_export.strip().splitlines()
    head = lines[0].split("|")
    rows = []
    for line in lines[1:]:
        f = dict(zip(head, line.split("|")))
        rows.append(
            {
                "patient": f["patient"],
                "study": f["study"].split()[0],
                "protocol": f["study"],
                "slot": f["slot"],
                "activity_mbq": _activity(f["activity"]),
                "age": int(f["age"].rstrip("y")),
                "weight_kg": float(f["weight"].replace("kg", "")) if f["weight"].strip() else None,
                "list": f["list"],
            }
        )
    return sorted(rows, key=lambda r: r["slot"])


@trajdebug.step(kind="tool")
def generator_status(generator: str, date: str) -> dict:
    return {
        "generator": generator,
        "expected_eluate_mbq_0730": GENERATORS[date],
        "eluate_volume_ml": 10.0,
        "expected_eluate_mbq_1200": round(GENERATORS[date] * 0.46),
    }


@trajdebug.step(kind="parse")
def read_plan(plan_message: dict) -> dict:
    plan = json.loads(plan_message["content"])
    for kit in plan["kits"]:
        kit["activity_mbq"] = float(kit["activity_mbq"])
    return plan


@trajdebug.step(kind="tool")
def elute(generator: str, elution: str, at: str) -> dict:
    assert LAB is not None
    mbq = float(GENERATORS[LAB.date] if elution == "E1" else round(GENERATORS[LAB.date] * 0.46))
    reading = mbq
    if _case("calibrator_in_mci") and elution == "E1":
        reading = round(mbq / 37.0, 1)
    LAB.eluates[elution] = {"mbq": mbq, "left_ml": 10.0}
    return {"elution": elution, "generator": generator, "at": at, "eluate_mbq": reading, "volume_ml": 10.0}


@trajdebug.step(kind="tool")
def moly_check(elution: dict) -> dict:
    mo_kbq = 8.9 if elution["elution"] == "E1" else 4.1
    ratio = round(mo_kbq / elution["eluate_mbq"], 4)
    if ratio > 0.15:
        raise ValueError(f"Mo-99 breakthrough {ratio} kBq/MBq above 0.15")
    return {"elution": elution["elution"], "mo99_kbq": mo_kbq, "kbq_per_mbq": ratio, "pass": True}


@trajdebug.step(kind="tool")
def prepare_kit(kit: dict, elution: dict) -> dict:
    assert LAB is not None
    need_ml = round(kit["activity_mbq"] / elution["eluate_mbq"] * elution["volume_ml"], 2)
    left = LAB.eluates[elution["elution"]]["left_ml"]
    if need_ml > left:
        raise ValueError(
            f"{kit['vial']} needs {need_ml} mL of eluate for {kit['activity_mbq']:.0f} MBq; "
            f"{left} mL of elution {elution['elution']} is left"
        )
    LAB.eluates[elution["elution"]]["left_ml"] = round(left - need_ml, 2)
    LAB.vials[kit["vial"]] = {
        "mbq": kit["activity_mbq"],
        "prepared": kit["prepare_at"],
        "left_ml": KIT_VOLUME_ML,
    }
    return {
        "vial": kit["vial"],
        "kit": kit["kit"],
        "activity_mbq": kit["activity_mbq"],
        "eluate_ml": need_ml,
        "volume_ml": KIT_VOLUME_ML,
        "prepared": kit["prepare_at"],
    }


@trajdebug.step(kind="tool")
def rcp_test(vial: str) -> dict:
    return {"vial": vial, "radiochemical_purity_pct": 97.8 if vial.startswith("MAA") else 98.6, "pass": True}


@trajdebug.step(kind="condition")
def route_patient(row: dict) -> str:
    if _case("route_by_list"):
        return "paediatric" if row["list"] == "paediatric" else "adult"
    return "paediatric" if row["age"] < 16 else "adult"


@trajdebug.step(kind="tool")
def ward_weight(patient: str) -> dict:
    return {"patient": patient, "weight_kg": WARD_WEIGHTS[patient], "weighed": "ward scales, today 07:10"}


@trajdebug.step(kind="tool")
def draw_dose(vial: str, patient: str, activity_mbq: float, slot: str) -> dict:
    assert LAB is not None
    v = LAB.vials[vial]
    conc = v["mbq"] * decay(_dh(v["prepared"], slot)) / KIT_VOLUME_ML
    ml = round(activity_mbq / conc, 3)
    if ml < MIN_DRAW_ML:
        raise ValueError(
            f"{patient}: {activity_mbq:.0f} MBq is {ml} mL of {vial}, below the "
            f"{MIN_DRAW_ML} mL the syringe can deliver"
        )
    if ml > v["left_ml"] - DEAD_VOLUME_ML:
        raise ValueError(
            f"{vial} holds {conc * (v['left_ml'] - DEAD_VOLUME_ML):.0f} MBq usable at {slot}; "
            f"{patient} needs {activity_mbq:.0f} MBq"
        )
    v["left_ml"] -= ml
    LAB.noise = (LAB.noise + 7) % 5
    measured = round(activity_mbq * (0.98 + 0.01 * LAB.noise), 0)
    return {"patient": patient, "vial": vial, "volume_ml": ml, "measured_mbq": measured, "at": slot}


@trajdebug.step(kind="tool")
def label_syringe(dose: dict) -> dict:
    return {
        "label": f"{dose['patient']} Tc-99m {dose['measured_mbq']:.0f} MBq @ {dose['at']}",
        "printed": True,
    }


@trajdebug.step(kind="condition")
def release_doses(doses: list, rows: list) -> dict:
    by = {r["patient"]: r for r in rows}
    for d in doses:
        row = by[d["patient"]]
        if row["age"] < 16:
            ward = WARD_WEIGHTS.get(d["patient"])
            used = d.get("weight_kg")
            if used is None:
                raise ValueError(
                    f"{d['patient']} is {row['age']} years old and was dispensed "
                    f"{d['measured_mbq']:.0f} MBq without a weight-based dose "
                    f"(paediatric maximum for {ward} kg: {eanm(row['study'], ward) * 1.1:.0f} MBq)"
                )
            if abs(used - ward) > 1.0:
                raise ValueError(f"{d['patient']}: dose calculated for {used} kg; ward weight is {ward} kg")
        if abs(d["measured_mbq"] - d["prescribed_mbq"]) > 0.1 * d["prescribed_mbq"]:
            raise ValueError(
                f"{d['patient']}: measured {d['measured_mbq']} MBq vs {d['prescribed_mbq']} prescribed"
            )
    return {"released": [d["patient"] for d in doses], "count": len(doses)}


@trajdebug.step(kind="output")
def dispensing_record(release: dict, doses: list) -> dict:
    return {
        "released": release["count"],
        "doses": [f"{d['patient']} {d['measured_mbq']:.0f} MBq" for d in doses],
    }


PLAN_SYSTEM = (
    "You are the hot-lab radiopharmacist. Plan the day's Tc-99m elutions (E1 07:30, E2 12:00 when "
    "needed) and kits. Each kit vial is prepared 15 minutes after its elution and must hold the "
    "decay-corrected activity of its patients plus 15%, at most the vial cap. Answer JSON "
    '{"kits": [{"vial", "kit", "elution", "prepare_at", "patients", "activity_mbq"}]}.'
)
DOSE_SYSTEM = (
    "You calculate paediatric activities from the department's EANM card. Use the child's measured "
    'weight; call ward_weight when the weight is missing. Answer JSON {"patient", "weight_kg", '
    '"activity_mbq"}.'
)
WEIGHT_TOOL = tool_spec(
    "ward_weight", "The child's weight from the ward scales.", {"patient": {"type": "string"}}
)


def agent(worklist: dict, client: Any, model: str) -> dict:
    global LAB
    LAB = _Lab(worklist["date"])
    wl = receive_worklist(worklist)
    rows = parse_worklist(wl["ris_export"])
    gen = generator_status(wl["generator"], wl["date"])
    plan = read_plan(
        chat_step(
            client,
            model,
            "plan_elution",
            [
                {"role": "system", "content": PLAN_SYSTEM},
                {
                    "role": "user",
                    "content": dumps(
                        {"date": wl["date"], "generator": gen, "patients": rows, "vial_cap_mbq": KIT_CAP}
                    ),
                },
            ],
        )
    )
    vial_of: dict[str, str] = {}
    for elution in ("E1", "E2"):
        kits = [k for k in plan["kits"] if k["elution"] == elution]
        if not kits:
            continue
        el = elute(wl["generator"], elution, ELUTIONS[elution][0])
        moly_check(el)
        for kit in kits:
            prepare_kit(kit, el)
            rcp_test(kit["vial"])
            for p in kit["patients"]:
                vial_of[p] = kit["vial"]
    doses = []
    for row in rows:
        path = route_patient(row)
        weight = None
        activity = row["activity_mbq"]
        if path == "paediatric":
            messages = [
                {"role": "system", "content": DOSE_SYSTEM},
                {
                    "role": "user",
                    "content": dumps({k: row[k] for k in ("patient", "study", "age", "weight_kg")}),
                },
            ]
            answer = chat_step(client, model, "dose_model", messages, tools=[WEIGHT_TOOL])
            for call in tool_calls(answer):
                got = ward_weight(**call["args"])
                messages = messages + [
                    answer,
                    {"role": "tool", "tool_call_id": call["id"], "content": dumps(got)},
                ]
                answer = chat_step(client, model, "dose_model", messages, tools=[WEIGHT_TOOL])
            calc = json.loads(answer["content"])
            weight, activity = calc["weight_kg"], calc["activity_mbq"]
        dose = draw_dose(vial_of[row["patient"]], row["patient"], activity, row["slot"])
        label_syringe(dose)
        doses.append({**dose, "prescribed_mbq": activity, "weight_kg": weight})
    release = release_doses(doses, rows)
    return dispensing_record(release, doses)


def record(inp: dict, path: str, ctx: Any) -> None:
    try:
        with trajdebug.run(NAME, task=inp["task"], path=path):
            agent(inp["worklist"], ctx.client, ctx.model)
    except ValueError:
        pass


# --- the model --------------------------------------------------------------------------------


def _kit_plan(data: dict) -> list[dict]:
    rows = data["patients"]
    caps = data["vial_cap_mbq"]
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        elution = "E1" if r["slot"] < "12:00" or _case("one_morning_kit") else "E2"
        groups.setdefault((r["study"], elution), []).append(r)
    kits = []
    for n, ((study, elution), members) in enumerate(sorted(groups.items(), key=lambda g: (g[0][1], g[0][0]))):
        prep = ELUTIONS[elution][1]
        need = 0.0
        for r in members:
            a = (
                r["activity_mbq"]
                if r["activity_mbq"] is not None
                else eanm(study, r["weight_kg"] or 30.0) * 1.1
            )
            need += a / decay(_dh(prep, r["slot"]))
        activity = min(round(need * 1.15, -1), caps[study])
        kits.append(
            {
                "vial": f"{study}-{elution}",
                "kit": study,
                "elution": elution,
                "prepare_at": prep,
                "patients": [r["patient"] for r in members],
                "activity_mbq": activity,
            }
        )
    return kits


def brain(request: Any) -> Any:
    system = system_text(request)
    if system == PLAN_SYSTEM:
        data = last_user_json(request)
        return json.dumps({"kits": _kit_plan(data)})
    if system == DOSE_SYSTEM:
        msgs = request.body["messages"]
        child = json.loads(msgs[1]["content"])
        weight = child["weight_kg"]
        if msgs[-1]["role"] == "tool":
            weight = json.loads(msgs[-1]["content"])["weight_kg"]
        if weight is None:
            if _case("assume_weight"):
                weight = 28.0
            else:
                return Reply(tool_calls=(tool_call("ward_weight", {"patient": child["patient"]}),))
        return json.dumps(
            {"patient": child["patient"], "weight_kg": weight, "activity_mbq": eanm(child["study"], weight)}
        )
    return "I cannot help with that."
