"""3D printing bureau: order intake, mesh analysis loop, material lookup, slicer sub-agent, printer booking (openai_agents)."""

from __future__ import annotations

import json
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .common import Case, brain, last_user, tool_results
from .kit import active

NAME = "print-bureau-desk"
ROUTE = "openai_agents"
DOMAIN = "3D printing bureau"
SHAPE = "desk agent: order fetch, per-part mesh loop, material lookup, slicer agent-as-tool, printer reservation, job submit"

ORDERS = {
    "ORD-5521": {"customer": "Voss Robotics", "material": "PA12", "parts": ["bracket_a.stl", "hinge_b.stl", "cover_c.stl"], "layer_mm": 0.1},
    "ORD-5530": {"customer": "Lindqvist Audio", "material": "PETG", "parts": ["knob_d.stl", "grille_e.stl"], "layer_mm": 0.2},
    "ORD-5502": {"customer": "Harrow Labs", "material": "PLA", "parts": ["clip_f.stl"], "layer_mm": 0.2},
    "ORD-5507": {"customer": "Ostrava Bikes", "material": "PA12", "parts": ["mount_g.stl", "cap_h.stl"], "layer_mm": 0.15},
    "ORD-5511": {"customer": "Pike Marine", "material": "PETG", "parts": ["float_i.stl"], "layer_mm": 0.1},
    "ORD-5515": {"customer": "Quill Design", "material": "PLA", "parts": ["stand_j.stl", "tray_k.stl"], "layer_mm": 0.3},
}
MESH = {"bracket_a.stl": 18.4, "hinge_b.stl": 6.2, "cover_c.stl": 41.0, "knob_d.stl": 3.1, "grille_e.stl": 22.5,
        "clip_f.stl": 1.8, "mount_g.stl": 12.0, "cap_h.stl": 2.4, "float_i.stl": 55.0, "stand_j.stl": 30.2,
        "tray_k.stl": 27.7}
MATERIAL = {"PA12": {"g_per_cm3": 1.01, "eur_per_g": 0.19, "printer": "SLS-2"},
            "PETG": {"g_per_cm3": 1.27, "eur_per_g": 0.06, "printer": "FDM-4"},
            "PLA": {"g_per_cm3": 1.24, "eur_per_g": 0.04, "printer": "FDM-1"}}
INPUTS = {k: {"order": k} for k in ORDERS}
REFS = ["ORD-5502", "ORD-5507", "ORD-5511", "ORD-5515"]

CASES = [
    Case("print_invented_volume", "pb1", "hallucinated_value", "ORD-5521", ("generation fake-model", 10, "llm"),
         ("submit_job", 1), "The desk model writes a total volume of 96 cm3 into the job that no mesh analysis reported."),
    Case("print_material_lookup_args", "pb2", "wrong_tool_args", "ORD-5530", ("generation fake-model", 4, "llm"),
         ("submit_job", 1), "The desk model asks the material lookup for PLA although the order specifies PETG."),
    Case("print_slicer_layer", "pb3", "tool_ignores_argument", "ORD-5521", ("slice_model", 1, "tool"),
         ("submit_job", 1),
         "The slicing service ignores the requested layer height and slices at its 0.2 mm default."),
    Case("print_slicer_other_order", "pb4", "subagent_wrong_entity", "ORD-5530", ("generation fake-model", 5, "llm"),
         ("submit_job", 1), "The desk model hands the slicer sub-agent another order's number, so the slice belongs to ORD-5502."),
    Case("print_order_parts_cut", "pb5", "truncated_result", "ORD-5521", ("fetch_order", 1, "tool"),
         ("submit_job", 1),
         "The order service returns only the first part of a multi-part order, so fewer parts are sliced than ordered."),
]


@brain("bureau")
def _desk(body: dict):
    done = tool_results(body)
    names = [n for n, _ in done]
    order_id = json.loads(last_user(body))["order"]
    if not done:
        return Reply(tool_calls=(tool_call("fetch_order", {"order_id": order_id}),))
    order = json.loads(done[0][1])
    meshes = [json.loads(c) for n, c in done if n == "analyse_mesh"]
    if len(meshes) < len(order["parts"]):
        return Reply(tool_calls=(tool_call("analyse_mesh", {"file": order["parts"][len(meshes)]}),))
    volume = round(sum(m["cm3"] for m in meshes), 1)
    if "lookup_material" not in names:
        mat = order["material"]
        if active("pb2"):
            mat = "PLA"
        return Reply(tool_calls=(tool_call("lookup_material", {"material": mat}),))
    material = json.loads(dict(done)["lookup_material"])
    if "slicer" not in names:
        oid = order_id
        if active("pb4"):
            oid = "ORD-5502"
        return Reply(tool_calls=(tool_call("slicer", {"input": json.dumps({"order": oid, "layer_mm": order["layer_mm"]})}),))
    sliced = json.loads(dict(done)["slicer"])
    if "reserve_printer" not in names:
        return Reply(tool_calls=(tool_call("reserve_printer", {"printer": material["printer"], "hours": sliced["hours"]}),))
    if "submit_job" not in names:
        if active("pb1"):
            volume = 96.0
        grams = round(volume * material["g_per_cm3"], 1)
        return Reply(tool_calls=(tool_call("submit_job", {"job_json": json.dumps({
            "order": order_id, "material": material["material"], "parts": len(meshes), "volume_cm3": volume,
            "grams": grams, "price_eur": round(grams * material["eur_per_g"], 2), "sliced": sliced,
            "booking": json.loads(dict(done)["reserve_printer"])})}),))
    return f"Job for {order_id} submitted: {dict(done)['submit_job']}"


@brain("slicer")
def _slicer(body: dict):
    done = tool_results(body)
    req = json.loads(last_user(body))
    if not done:
        return Reply(tool_calls=(tool_call("slice_model", {"order": req["order"], "layer_mm": req["layer_mm"]}),))
    return done[0][1]


@function_tool
def fetch_order(order_id: str) -> str:
    """Fetch an order from the bureau's order book."""
    o = dict(ORDERS[order_id])
    if active("pb5"):
        o["parts"] = o["parts"][:1]
    return json.dumps({"order": order_id, **o})


@function_tool
def analyse_mesh(file: str) -> str:
    """Analyse an uploaded STL mesh: volume and watertightness."""
    return json.dumps({"file": file, "cm3": MESH[file], "watertight": True})


@function_tool
def lookup_material(material: str) -> str:
    """Material data sheet: density, price and which printer runs it."""
    return json.dumps({"material": material, **MATERIAL[material]})


@function_tool
def slice_model(order: str, layer_mm: float) -> str:
    """Slice every part of an order at a layer height; returns layers and machine hours."""
    layer = layer_mm
    if active("pb3"):
        layer = 0.2
    vol = sum(MESH[p] for p in ORDERS[order]["parts"])
    return json.dumps({"order": order, "layer_mm": layer, "parts": len(ORDERS[order]["parts"]),
                       "hours": round(vol * 0.02 / layer, 1)})


@function_tool
def reserve_printer(printer: str, hours: float) -> str:
    """Reserve machine time on a printer."""
    return json.dumps({"printer": printer, "hours": hours, "slot": "2026-12-07T08:00"})


@function_tool(failure_error_function=None)
def submit_job(job_json: str) -> str:
    """Submit the print job (a JSON document) to production control."""
    job = json.loads(job_json)
    o = ORDERS[job["order"]]
    errs = []
    if job["material"] != o["material"]:
        errs.append(f"material {job['material']} does not match order material {o['material']}")
    if job["parts"] != len(o["parts"]):
        errs.append(f"job lists {job['parts']} parts, order {job['order']} has {len(o['parts'])}")
    if job["sliced"]["order"] != job["order"]:
        errs.append(f"slice file belongs to {job['sliced']['order']}, not {job['order']}")
    if job["sliced"]["layer_mm"] != o["layer_mm"]:
        errs.append(f"sliced at {job['sliced']['layer_mm']} mm, order specifies {o['layer_mm']} mm")
    mesh_total = round(sum(MESH[p] for p in o["parts"]), 1)
    if job["parts"] == len(o["parts"]) and abs(job["volume_cm3"] - mesh_total) > 0.05:
        errs.append(f"volume {job['volume_cm3']} cm3 differs from mesh analysis total {mesh_total} cm3")
    if errs:
        raise ValueError("production control rejected job (422): " + "; ".join(errs))
    return json.dumps({"job": f"JOB-{job['order']}", "queued": True})


def record(inp: dict, path: Path, server) -> None:
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model="fake-model", openai_client=client)
    slicer = Agent(name="slicer", instructions="[agent:slicer] Slice the order's parts and report hours.",
                   tools=[slice_model], model=model)
    desk = Agent(name="bureau_desk", model=model,
                 instructions="[agent:bureau] You run the print bureau desk: quote, slice, book and submit jobs.",
                 tools=[fetch_order, analyse_mesh, lookup_material,
                        slicer.as_tool(tool_name="slicer", tool_description="Slicing specialist"),
                        reserve_printer, submit_job])
    proc = TrajdebugProcessor(path=str(path), name=NAME, task=f"produce order {inp['order']}")
    set_trace_processors([proc])
    try:
        Runner.run_sync(desk, json.dumps(inp), run_config=RunConfig(workflow_name=NAME), max_turns=30)
    except Exception as exc:  # noqa: BLE001
        if "rejected" not in str(exc):
            raise
