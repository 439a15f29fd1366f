"""Lens grinder's prescription desk: a dispensing agent turns an order into a grinding job (OpenAI Agents SDK).

Shape: one Agent (Chat Completions) with five function tools; the model reads the prescription and
the frame in parallel tool calls, then decentration, blank stock and the grinding job in turn; the
lab's job check (a tool that raises) fails the run.
"""

from __future__ import annotations

import ast
import asyncio

from agents import (
    Agent,
    ModelSettings,
    RunConfig,
    Runner,
    function_tool,
    set_default_openai_api,
    set_default_openai_client,
)
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call


NAME = "lens-grinding-desk"
ROUTE = "openai_agents"
DOMAIN = "lens grinder's spectacle prescriptions"
SHAPE = "single SDK agent, model-driven tool loop with one parallel pair of tool calls, tool-side job check (~13 steps)"

SW = dict.fromkeys(("index_from_frame", "frame_cm", "other_vision_stock", "invented_add", "rx_sign"), False)

INPUTS = [
    "Grinding order: patient P-221, frame ES-52, 1.67 single vision",
    "Grinding order: patient P-318, frame TR-49, 1.6 progressive",
    "Grinding order: patient P-407, frame KL-55, 1.5 single vision",
    "Grinding order: patient P-512, frame ES-52, 1.74 single vision",
    "Grinding order: patient P-630, frame RB-50, 1.6 progressive",
]

RX = {
    "P-221": "R SPH -2.25 CYL -0.75 AX 180 | L SPH -2.00 CYL -0.50 AX 170 | PD 63 | ADD none",
    "P-318": "R SPH +1.50 CYL -0.25 AX 90 | L SPH +1.75 CYL -0.50 AX 85 | PD 61 | ADD +2.00",
    "P-407": "R SPH -0.75 CYL -1.25 AX 15 | L SPH -1.00 CYL -1.00 AX 160 | PD 66 | ADD none",
    "P-512": "R SPH -6.50 CYL -1.50 AX 5 | L SPH -6.25 CYL -1.75 AX 175 | PD 64 | ADD none",
    "P-630": "R SPH -1.25 CYL -0.50 AX 100 | L SPH -1.50 CYL -0.75 AX 80 | PD 60 | ADD +1.75",
}
FRAMES = {
    "ES-52": {"eye_mm": 52, "bridge_mm": 18, "index_hint": "1.6"},
    "TR-49": {"eye_mm": 49, "bridge_mm": 20, "index_hint": "1.5"},
    "KL-55": {"eye_mm": 55, "bridge_mm": 17, "index_hint": "1.6"},
    "RB-50": {"eye_mm": 50, "bridge_mm": 21, "index_hint": "1.6"},
}
BLANKS = {
    ("1.5", "sv"): [55, 65, 70],
    ("1.6", "sv"): [60, 65, 70, 75],
    ("1.67", "sv"): [65, 70, 75],
    ("1.74", "sv"): [65, 70, 75],
    ("1.5", "pal"): [65, 70],
    ("1.6", "pal"): [65, 70, 75],
    ("1.67", "pal"): [70, 75],
    ("1.74", "pal"): [70],
}


def _eye(text: str) -> dict:
    p = text.split()
    return {"sph": float(p[2]), "cyl": float(p[4]), "axis": int(p[6])}


@function_tool(failure_error_function=None)
def read_prescription(patient_id: str) -> dict:
    """The optometrist's prescription on file for a patient, as structured values."""
    r, left, pd, add = [part.strip() for part in RX[patient_id].split("|")]
    rx = {
        "patient": patient_id,
        "right": _eye(r),
        "left": _eye(left),
        "pd_mm": float(pd.split()[1]),
        "add": None if add.endswith("none") else float(add.split()[1]),
    }
    if SW["rx_sign"]:
        rx["right"]["cyl"] = float(r.split()[4].lstrip("+-"))
    return rx


@function_tool(failure_error_function=None)
def frame_measurements(frame_code: str) -> dict:
    """Boxed eye size and bridge of a frame from the frame catalogue."""
    f = FRAMES[frame_code]
    if SW["frame_cm"]:
        return {
            "frame": frame_code,
            "eye": f["eye_mm"] / 10,
            "bridge": f["bridge_mm"] / 10,
            "index_hint": f["index_hint"],
        }
    return {"frame": frame_code, "eye": f["eye_mm"], "bridge": f["bridge_mm"], "index_hint": f["index_hint"]}


@function_tool(failure_error_function=None)
def compute_decentration(pd_mm: float, eye_size: float, bridge: float) -> dict:
    """Per-eye decentration and the smallest uncut blank that will cover the frame."""
    frame_pd = eye_size + bridge
    dec = round((frame_pd - pd_mm) / 2, 1)
    return {"decentration": dec, "min_blank": round(eye_size + 2 * abs(dec) + 2)}


@function_tool(failure_error_function=None)
def blank_stock(index: str, design: str, min_diameter: float) -> list:
    """Uncut lens blanks in stock for an index and design ('sv' or 'pal'), at least min_diameter across."""
    if SW["other_vision_stock"]:
        design = "pal" if design == "sv" else "sv"
    return [
        {
            "blank": f"{design.upper()}-{index.replace('.', '')}-{d}",
            "index": index,
            "design": design,
            "diameter": d,
        }
        for d in BLANKS[(index, design)]
        if d >= min_diameter
    ]


@function_tool(failure_error_function=None)
def submit_grinding_job(
    patient_id: str,
    frame_code: str,
    blank: str,
    index: str,
    right_cyl: float,
    left_cyl: float,
    add: float,
    decentration: float,
) -> str:
    """Send the job to the generator; the lab checks it against the order before cutting."""
    rx = RX[patient_id]
    f = FRAMES[frame_code]
    ordered_index = _orders[patient_id]["index"]
    if index != ordered_index:
        raise ValueError(
            f"blank {blank} is index {index}; the order for {patient_id} is index {ordered_index}"
        )
    design = blank.split("-")[0].lower()
    if design != _orders[patient_id]["design"]:
        raise ValueError(
            f"blank {blank} is a {design} blank; {patient_id} ordered {_orders[patient_id]['design']}"
        )
    if right_cyl > 0 or left_cyl > 0:
        raise ValueError(
            f"cylinder {right_cyl:+.2f}/{left_cyl:+.2f} is not in minus-cylinder form for {patient_id}"
        )
    if abs(decentration) > 8:
        raise ValueError(f"decentration {decentration} mm for {frame_code} is outside the edger's 8 mm range")
    if add and "ADD none" in rx:
        raise ValueError(f"add {add:+.2f} on a single vision job for {patient_id}")
    pd = float(rx.split("PD ")[1].split()[0])
    need = f["eye_mm"] + 2 * abs((f["eye_mm"] + f["bridge_mm"] - pd) / 2) + 2
    diameter = int(blank.rsplit("-", 1)[1])
    if diameter < need:
        raise ValueError(f"blank {blank} ({diameter} mm) cannot cut frame {frame_code}: needs {need:.0f} mm")
    return f"job accepted: {patient_id} {blank} for {frame_code}"


_orders: dict = {}


def _results(request) -> dict:
    names, out = {}, {}
    for m in request.body.get("messages", []):
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            try:
                out[names.get(m["tool_call_id"])] = ast.literal_eval(m["content"])
            except (ValueError, SyntaxError):
                out[names.get(m["tool_call_id"])] = m["content"]
    return out


def policy(request):
    user = next(m["content"] for m in request.body["messages"] if m["role"] == "user")
    parts = user.split(": ", 1)[1].split(", ")
    patient, frame = parts[0].split()[1], parts[1].split()[1]
    index, design = parts[2].split(" ", 1)
    design = "pal" if design == "progressive" else "sv"
    res = _results(request)
    if "read_prescription" not in res:
        return Reply(
            tool_calls=(
                tool_call("read_prescription", {"patient_id": patient}),
                tool_call("frame_measurements", {"frame_code": frame}),
            )
        )
    rx, fr = res["read_prescription"], res["frame_measurements"]
    if "compute_decentration" not in res:
        return Reply(
            tool_calls=(
                tool_call(
                    "compute_decentration",
                    {"pd_mm": rx["pd_mm"], "eye_size": fr["eye"], "bridge": fr["bridge"]},
                ),
            )
        )
    if "blank_stock" not in res:
        use_index = fr["index_hint"] if SW["index_from_frame"] else index
        return Reply(
            tool_calls=(
                tool_call(
                    "blank_stock",
                    {
                        "index": use_index,
                        "design": design,
                        "min_diameter": res["compute_decentration"]["min_blank"],
                    },
                ),
            )
        )
    if "submit_grinding_job" not in res:
        blank = res["blank_stock"][0]
        add = rx["add"] or 0.0
        if SW["invented_add"]:
            add = 1.25
        return Reply(
            tool_calls=(
                tool_call(
                    "submit_grinding_job",
                    {
                        "patient_id": patient,
                        "frame_code": frame,
                        "blank": blank["blank"],
                        "index": blank["index"],
                        "right_cyl": rx["right"]["cyl"],
                        "left_cyl": rx["left"]["cyl"],
                        "add": add,
                        "decentration": res["compute_decentration"]["decentration"],
                    },
                ),
            )
        )
    return f"Grinding job queued for {patient}: {res['submit_grinding_job']}."


AGENT = Agent(
    name="dispensing_optician",
    instructions="Turn grinding orders into lab jobs using the tools.",
    model="fake-model",
    tools=[read_prescription, frame_measurements, compute_decentration, blank_stock, submit_grinding_job],
    model_settings=ModelSettings(parallel_tool_calls=True),
)


_loop = asyncio.new_event_loop()
_clients: dict = {}


def record(inp: str, server, dest: str) -> None:
    parts = inp.split(": ", 1)[1].split(", ")
    index, design = parts[2].split(" ", 1)
    _orders[parts[0].split()[1]] = {"index": index, "design": "pal" if design == "progressive" else "sv"}
    if server.base_url not in _clients:
        _clients[server.base_url] = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(_clients[server.base_url])
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=dest, name=NAME, task=inp)])
    try:
        _loop.run_until_complete(
            Runner.run(AGENT.clone(model=server.model), inp, run_config=RunConfig(workflow_name=NAME))
        )
    except Exception:  # noqa: BLE001  (the recorded run keeps the failure; the generator checks it)
        pass
    finally:
        set_trace_processors([])


CASES = [
    {
        "id": "lens_index_hint",
        "input": 0,
        "switch": "index_from_frame",
        "fault_kind": "wrong_tool_args",
        "root": ("generation fake-model", 3, "llm"),
        "failure": ("submit_grinding_job", 1),
        "description": "The model searches blank stock with the frame catalogue's suggested index 1.6 instead of the ordered 1.67.",
    },
    {
        "id": "lens_frame_cm",
        "input": 2,
        "switch": "frame_cm",
        "fault_kind": "unit_error",
        "root": ("frame_measurements", 1, "tool"),
        "failure": ("submit_grinding_job", 1),
        "description": "The frame catalogue answers eye size and bridge in centimetres, so the smallest blank worked out from them is far too small.",
    },
    {
        "id": "lens_design_stock",
        "input": 1,
        "switch": "other_vision_stock",
        "fault_kind": "wrong_retrieval",
        "root": ("blank_stock", 1, "tool"),
        "failure": ("submit_grinding_job", 1),
        "description": "The blank stock search returns single vision blanks for a progressive order.",
    },
    {
        "id": "lens_add_power",
        "input": 3,
        "switch": "invented_add",
        "fault_kind": "hallucinated_value",
        "root": ("generation fake-model", 4, "llm"),
        "failure": ("submit_grinding_job", 1),
        "description": "The model puts an add of +1.25 on the job although the prescription has no add.",
    },
    {
        "id": "lens_cyl_sign",
        "input": 4,
        "switch": "rx_sign",
        "fault_kind": "lossy_parsing",
        "root": ("read_prescription", 1, "tool"),
        "failure": ("submit_grinding_job", 1),
        "description": "Reading the prescription text drops the minus sign of the right eye's cylinder.",
    },
]
