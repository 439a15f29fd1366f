"""Hospital pharmacy aseptic unit: compounding a chemotherapy infusion (route: openai_agents).

OpenAI Agents SDK: the compounder agent reads the prescription and the patient's current parameters
(parallel tool calls), works out the dose and bands it, reads the vial stock and asks the stability
adviser (an agent run as a tool, with its own stability-table tool) in parallel, writes the worksheet,
then hands off to the release pharmacist agent, whose final check compares the worksheet with the
prescription and the stock before the bag is labelled.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
from typing import Any

from agents import (
    Agent,
    RunConfig,
    Runner,
    function_tool,
    handoff,
    set_default_openai_api,
    set_default_openai_client,
)
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.testing import Reply, tool_call

from .common import agents_view

NAME = "aseptic-unit-compounder"
ROUTE = "openai_agents"
DOMAIN = "hospital pharmacy aseptic unit: compound a banded chemotherapy infusion against a prescription"
SHAPE = (
    "Agents SDK: compounder agent (parallel prescription/patient tools, dose-banding tool, parallel vial-stock "
    "tool and stability adviser agent-as-tool with its own tool, worksheet tool), hand-off to the release "
    "pharmacist agent (final check tool, label tool); 35 steps per passing run"
)

SWITCH: str | None = None


def _case(key: str) -> bool:
    """The one place the case switch is read."""
    return SWITCH == key


PRESCRIPTIONS = {
    "RX-55120": {
        "rx_id": "RX-55120",
        "patient_id": "P-30121",
        "drug": "oxaliplatin",
        "basis": "85 mg/m2",
        "mg_per_m2": 85,
        "bsa_m2": 1.87,
        "prescribed_mg": 159,
        "chair": "2025-10-06T10:00",
        "cycle": "C3 D1",
    },
    "RX-55134": {
        "rx_id": "RX-55134",
        "patient_id": "P-30188",
        "drug": "gemcitabine",
        "basis": "1000 mg/m2",
        "mg_per_m2": 1000,
        "bsa_m2": 1.67,
        "prescribed_mg": 1670,
        "chair": "2025-10-06T11:30",
        "cycle": "C2 D8",
    },
    "RX-55141": {
        "rx_id": "RX-55141",
        "patient_id": "P-30204",
        "drug": "paclitaxel",
        "basis": "80 mg/m2",
        "mg_per_m2": 80,
        "bsa_m2": 2.14,
        "prescribed_mg": 171,
        "chair": "2025-10-07T09:30",
        "cycle": "C1 D15",
    },
    "RX-55157": {
        "rx_id": "RX-55157",
        "patient_id": "P-30215",
        "drug": "docetaxel",
        "basis": "75 mg/m2",
        "mg_per_m2": 75,
        "bsa_m2": 1.56,
        "prescribed_mg": 117,
        "chair": "2025-10-07T13:00",
        "cycle": "C4 D1",
    },
    "RX-55163": {
        "rx_id": "RX-55163",
        "patient_id": "P-30230",
        "drug": "carboplatin",
        "basis": "AUC 5",
        "auc": 5,
        "gfr_ml_min": 68,
        "prescribed_mg": 465,
        "chair": "2025-10-08T10:30",
        "cycle": "C2 D1",
    },
}
PATIENTS = {
    "P-30121": {"height_cm": 172, "weight_kg": 73.0, "weighed": "2025-10-02", "gfr_ml_min": 81},
    "P-30188": {"height_cm": 165, "weight_kg": 61.0, "weighed": "2025-10-01", "gfr_ml_min": 74},
    "P-30204": {"height_cm": 180, "weight_kg": 92.0, "weighed": "2025-10-03", "gfr_ml_min": 95},
    "P-30215": {"height_cm": 158, "weight_kg": 55.0, "weighed": "2025-10-03", "gfr_ml_min": 88},
    "P-30230": {"height_cm": 176, "weight_kg": 80.0, "weighed": "2025-10-06", "gfr_ml_min": 68},
}
VIALS = {
    "oxaliplatin": [{"strength": "100 mg/20 mL", "conc_mg_ml": 5.0, "batch": "OX2291", "in_stock": 14}],
    "gemcitabine": [{"strength": "1 g/26.3 mL", "conc_mg_ml": 38.0, "batch": "GM1187", "in_stock": 9}],
    "paclitaxel": [{"strength": "300 mg/50 mL", "conc_mg_ml": 6.0, "batch": "PX0835", "in_stock": 6}],
    "docetaxel": [{"strength": "160 mg/8 mL", "conc_mg_ml": 20.0, "batch": "DX4410", "in_stock": 5}],
    "carboplatin": [{"strength": "450 mg/45 mL", "conc_mg_ml": 10.0, "batch": "CB7702", "in_stock": 11}],
}
STABILITY = {
    "oxaliplatin": {
        "diluent": "glucose 5%",
        "bag_ml": 250,
        "expiry_hours": 48,
        "storage": "2-8 C, protect from light",
    },
    "carboplatin": {"diluent": "sodium chloride 0.9%", "bag_ml": 500, "expiry_hours": 24, "storage": "2-8 C"},
    "gemcitabine": {
        "diluent": "sodium chloride 0.9%",
        "bag_ml": 250,
        "expiry_hours": 24,
        "storage": "room temp",
    },
    "paclitaxel": {
        "diluent": "sodium chloride 0.9%",
        "bag_ml": 250,
        "expiry_hours": 27,
        "storage": "room temp, non-PVC bag, 0.22 micron filter",
    },
    "docetaxel": {"diluent": "sodium chloride 0.9%", "bag_ml": 250, "expiry_hours": 48, "storage": "2-8 C"},
}
ONLY_DILUENT = {"oxaliplatin": "glucose 5%"}

INPUTS = [
    {
        "id": "oxali",
        "task": "compound RX-55120 oxaliplatin for P-30121 (chair 10:00, 6 Oct)",
        "message": "Please compound RX-55120 for patient P-30121, chair at 10:00 today.",
    },
    {
        "id": "gemci",
        "task": "compound RX-55134 gemcitabine for P-30188 (chair 11:30, 6 Oct)",
        "message": "Please compound RX-55134 for patient P-30188, chair at 11:30 today.",
    },
    {
        "id": "pacli",
        "task": "compound RX-55141 paclitaxel for P-30204 (chair 09:30, 7 Oct)",
        "message": "Please compound RX-55141 for patient P-30204, chair at 09:30 today.",
    },
    {
        "id": "doce",
        "task": "compound RX-55157 docetaxel for P-30215 (chair 13:00, 7 Oct)",
        "message": "Please compound RX-55157 for patient P-30215, chair at 13:00 today.",
    },
    {
        "id": "carbo",
        "task": "compound RX-55163 carboplatin for P-30230 (chair 10:30, 8 Oct)",
        "message": "Please compound RX-55163 for patient P-30230, chair at 10:30 today.",
    },
]

CASES = [
    {
        "case": "aseptic_platinum_namesake",
        "input": "oxali",
        "switch": "platinum_namesake",
        "fault_kind": "subagent_wrong_entity",
        "root": ("generation fake-model", 4),
        "failure": ("final_check", 1),
        "description": "Asked about oxaliplatin, the stability adviser sub-agent looked up carboplatin and answered "
        "sodium chloride 0.9%; the worksheet is written with it and the release pharmacist's final "
        "check rejects a chloride diluent for oxaliplatin.",
    },
    {
        "case": "aseptic_round_concentration",
        "input": "gemci",
        "switch": "usual_concentration",
        "fault_kind": "hallucinated_value",
        "root": ("generation fake-model", 6),
        "failure": ("final_check", 1),
        "description": "Writing the gemcitabine worksheet the model used 40 mg/mL, a concentration no tool gave (the "
        "vial stock says 38 mg/mL), so the drawn volume is short; the final check recomputes the dose "
        "from the volume and stops it.",
    },
    {
        "case": "aseptic_weight_in_pounds",
        "input": "pacli",
        "switch": "weight_from_lb_scale",
        "fault_kind": "unit_error",
        "root": ("patient_parameters", 1),
        "failure": ("final_check", 1),
        "description": "The patient-parameters tool returned P-30204's weight from a scale set to pounds (203) as "
        "kilograms, so the BSA and the banded paclitaxel dose come out 50% high; the final check "
        "compares it with the prescription and refuses it.",
    },
    {
        "case": "aseptic_band_per_m2",
        "input": "doce",
        "switch": "band_per_m2",
        "fault_kind": "wrong_tool_args",
        "root": ("generation fake-model", 2),
        "failure": ("final_check", 1),
        "description": "The model called the dose-banding tool with the per-m2 figure (75) as the dose in mg instead "
        "of the 117 mg it had worked out, and the worksheet follows the 80 mg band it got back; the "
        "final check finds it far below the prescription.",
    },
    {
        "case": "aseptic_strength_text",
        "input": "carbo",
        "switch": "concentration_as_text",
        "fault_kind": "format_drift",
        "root": ("vial_stock", 1),
        "failure": ("write_worksheet", 1),
        "description": "The vial-stock service answered the carboplatin concentration as the text '10 mg/mL' instead "
        "of a number; the model carries it into the worksheet call, whose schema rejects it.",
    },
]


class _Unit:
    worksheets: dict[str, dict] = {}
    n = 0


# --- tools ----------------------------------------------------------------------------------------


@function_tool
def get_prescription(rx_id: str) -> str:
    """The clinically screened SACT prescription."""
    return json.dumps(PRESCRIPTIONS[rx_id])


@function_tool
def patient_parameters(patient_id: str) -> str:
    """The patient's latest height, weight and renal function."""
    p = dict(PATIENTS[patient_id])
    if _case("weight_from_lb_scale"):
        p["weight_kg"] = round(p["weight_kg"] * 2.2046, 0)
    return json.dumps({"patient_id": patient_id, **p})


@function_tool
def dose_band(drug: str, dose_mg: float) -> str:
    """The national dose band for a calculated dose."""
    step = 10 if dose_mg < 200 else (20 if dose_mg < 600 else 100)
    band = round(dose_mg / step) * step
    return json.dumps(
        {
            "drug": drug,
            "calculated_mg": dose_mg,
            "band_mg": band,
            "range_mg": [band - step / 2, band + step / 2],
        }
    )


@function_tool
def vial_stock(drug: str) -> str:
    """Vials of a drug in the aseptic unit's stock."""
    vials = [dict(v) for v in VIALS[drug]]
    if _case("concentration_as_text"):
        for v in vials:
            v["conc_mg_ml"] = f"{v['conc_mg_ml']:g} mg/mL"
    return json.dumps({"drug": drug, "vials": vials})


@function_tool
def stability_table(drug: str) -> str:
    """The unit's stability table entry for a drug."""
    return json.dumps({"drug": drug, **STABILITY[drug]})


@function_tool(failure_error_function=None)
def write_worksheet(
    rx_id: str,
    drug: str,
    dose_mg: float,
    conc_mg_ml: float,
    volume_ml: float,
    diluent: str,
    bag_ml: int,
    expiry_hours: int,
) -> str:
    """Write the compounding worksheet for the isolator."""
    _Unit.n += 1
    ws = {
        "worksheet_id": f"WS-{_Unit.n:04d}",
        "rx_id": rx_id,
        "drug": drug,
        "dose_mg": dose_mg,
        "conc_mg_ml": conc_mg_ml,
        "volume_ml": volume_ml,
        "diluent": diluent,
        "bag_ml": bag_ml,
        "expiry_hours": expiry_hours,
    }
    _Unit.worksheets[ws["worksheet_id"]] = ws
    return json.dumps(ws)


def _final_check(worksheet_id: str) -> str:
    ws = _Unit.worksheets[worksheet_id]
    rx = PRESCRIPTIONS[ws["rx_id"]]
    if abs(ws["dose_mg"] - rx["prescribed_mg"]) > 0.10 * rx["prescribed_mg"]:
        raise ValueError(
            f"{worksheet_id}: {ws['dose_mg']:g} mg is more than 10% from the prescribed "
            f"{rx['prescribed_mg']} mg ({rx['basis']})"
        )
    conc = VIALS[ws["drug"]][0]["conc_mg_ml"]
    drawn = ws["volume_ml"] * conc
    if abs(drawn - ws["dose_mg"]) > 0.02 * ws["dose_mg"]:
        raise ValueError(
            f"{worksheet_id}: {ws['volume_ml']} mL of {conc:g} mg/mL {ws['drug']} is {drawn:.0f} mg, "
            f"not the {ws['dose_mg']:g} mg on the worksheet"
        )
    only = ONLY_DILUENT.get(ws["drug"])
    if only and ws["diluent"] != only:
        raise ValueError(f"{worksheet_id}: {ws['drug']} cannot be diluted in {ws['diluent']}; use {only}")
    return json.dumps({"worksheet_id": worksheet_id, "checked": True, "checked_by": "release pharmacist"})


final_check = function_tool(
    _final_check,
    name_override="final_check",
    failure_error_function=None,
    description_override="Check a worksheet against the prescription and the stock.",
)


@function_tool
def label_bag(worksheet_id: str) -> str:
    """Print the bag label."""
    ws = _Unit.worksheets[worksheet_id]
    return json.dumps(
        {
            "label": f"{ws['drug']} {ws['dose_mg']:g} mg in {ws['bag_ml']} mL {ws['diluent']}, "
            f"expires {ws['expiry_hours']} h after preparation",
            "printed": True,
        }
    )


COMPOUNDER = (
    "You are the aseptic unit's compounder. Read the prescription and the patient's parameters, "
    "calculate and band the dose, check vial stock and ask the stability adviser, write the "
    "worksheet, then hand off to the release pharmacist."
)
ADVISER = (
    "You are the stability adviser. Look the drug up in the stability table and answer JSON "
    '{"drug", "diluent", "bag_ml", "expiry_hours", "storage"}.'
)
RELEASER = "You are the release pharmacist. Run the final check on the worksheet, then label the bag."


def build(model: str) -> Agent:
    adviser = Agent(name="stability_adviser", instructions=ADVISER, model=model, tools=[stability_table])
    releaser = Agent(
        name="release_pharmacist", instructions=RELEASER, model=model, tools=[final_check, label_bag]
    )
    return Agent(
        name="compounder",
        instructions=COMPOUNDER,
        model=model,
        tools=[
            get_prescription,
            patient_parameters,
            dose_band,
            vial_stock,
            adviser.as_tool(tool_name="stability_check", tool_description="Ask the stability adviser."),
            write_worksheet,
        ],
        handoffs=[handoff(releaser)],
    )


def record(inp: dict, path: str, ctx: Any) -> None:
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    _Unit.worksheets, _Unit.n = (
        {},
        {"oxali": 10, "gemci": 20, "pacli": 30, "doce": 40, "carbo": 50}[inp["id"]],
    )
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp["task"])])
    logging.getLogger("openai.agents").setLevel(logging.CRITICAL)  # the SDK logs the error it then raises

    async def go() -> None:
        client = AsyncOpenAI(base_url=ctx.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(client)
        try:
            await Runner.run(build(ctx.model), inp["message"], run_config=RunConfig(workflow_name=NAME))
        finally:
            await client.close()

    try:
        asyncio.run(go())
    except Exception as exc:  # Runner.run raised: the trace records the failed run
        if type(exc).__name__ not in ("UserError", "ModelBehaviorError", "ValueError"):
            raise
    finally:
        set_trace_processors([])


# --- the model --------------------------------------------------------------------------------


def _number(value: Any) -> float:
    return (
        float(value) if isinstance(value, (int, float)) else float(re.match(r"[\d.]+", str(value)).group(0))
    )


def brain(request: Any) -> Any:
    instructions, text, got, _ = agents_view(request)
    if instructions == ADVISER:
        if "stability_table" not in got:
            drug = re.search(r"[a-z]+platin|[a-z]+citabine|[a-z]+taxel", text).group(0)
            if _case("platinum_namesake") and drug == "oxaliplatin":
                drug = "carboplatin"
            return Reply(tool_calls=(tool_call("stability_table", {"drug": drug}),))
        entry = got["stability_table"][-1]
        return json.dumps({k: entry[k] for k in ("drug", "diluent", "bag_ml", "expiry_hours", "storage")})
    if instructions == RELEASER:
        ws = got["write_worksheet"][-1]
        if "final_check" not in got:
            return Reply(tool_calls=(tool_call("final_check", {"worksheet_id": ws["worksheet_id"]}),))
        if "label_bag" not in got:
            return Reply(tool_calls=(tool_call("label_bag", {"worksheet_id": ws["worksheet_id"]}),))
        return f"Released and labelled: {got['label_bag'][-1]['label']}."
    if instructions == COMPOUNDER:
        if "get_prescription" not in got:
            rx = re.search(r"RX-\d+", text).group(0)
            pid = re.search(r"P-\d+", text).group(0)
            return Reply(
                tool_calls=(
                    tool_call("get_prescription", {"rx_id": rx}),
                    tool_call("patient_parameters", {"patient_id": pid}),
                )
            )
        rx, pt = got["get_prescription"][-1], got["patient_parameters"][-1]
        if "dose_band" not in got:
            if "auc" in rx:
                dose = rx["auc"] * (pt["gfr_ml_min"] + 25)
            else:
                bsa = math.sqrt(pt["height_cm"] * pt["weight_kg"] / 3600)
                dose = rx["mg_per_m2"] * bsa
            if _case("band_per_m2"):
                dose = rx["mg_per_m2"]
            return Reply(
                tool_calls=(tool_call("dose_band", {"drug": rx["drug"], "dose_mg": round(dose, 1)}),)
            )
        band = got["dose_band"][-1]["band_mg"]
        if "vial_stock" not in got:
            return Reply(
                tool_calls=(
                    tool_call("vial_stock", {"drug": rx["drug"]}),
                    tool_call(
                        "stability_check",
                        {"input": f"{rx['drug']} {band:g} mg infusion: diluent, bag size and shelf life?"},
                    ),
                )
            )
        if "write_worksheet" not in got:
            vial = got["vial_stock"][-1]["vials"][0]
            stab = got["stability_check"][-1]
            conc = vial["conc_mg_ml"]
            if _case("usual_concentration"):
                conc = 40.0
            volume = round(band / _number(conc), 1)
            return Reply(
                tool_calls=(
                    tool_call(
                        "write_worksheet",
                        {
                            "rx_id": rx["rx_id"],
                            "drug": rx["drug"],
                            "dose_mg": band,
                            "conc_mg_ml": conc,
                            "volume_ml": volume,
                            "diluent": stab["diluent"],
                            "bag_ml": stab["bag_ml"],
                            "expiry_hours": stab["expiry_hours"],
                        },
                    ),
                )
            )
        return Reply(tool_calls=(tool_call("transfer_to_release_pharmacist", {}),))
    return "I cannot help with that."
