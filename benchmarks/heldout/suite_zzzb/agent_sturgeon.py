"""Sturgeon farm: caviar lot grading (recording route: the OpenAI Agents SDK, Chat Completions,
recorded with trajdebug's trace processor).

Shape: an intake agent reads the lot manifest and hands off to the domestic or the export grader;
the grader fetches the grading standard and the tin list in parallel, inspects every tin in one
turn of parallel tool calls, parses the lab sheet, (export: asks for the CITES permit), records the
lot in the farm register and answers a certificate; a second Runner.run in the same trace hands the
certificate to a label printer agent whose tool arguments the SDK checks against their schema.
"""
from __future__ import annotations

import ast
import asyncio
import json
from typing import Literal

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client, trace
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from pydantic import BaseModel

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

RUN_NAME = "caviar-grading"
ROUTE = "openai_agents"
DOMAIN = "a sturgeon farm's caviar grading"
SHAPE = "intake agent (manifest tool) -> hand-off to domestic/export grader -> parallel standard+tins -> parallel tin inspections -> lab-sheet parse -> (permit) -> register tool -> certificate; a second Runner.run in the same trace prints labels (schema-checked tool args); 25-37 steps"

SWITCH = None

INPUTS = [
    {"lot": "L-2611", "note": "Oscietra from pond 4, harvest 2026-11-18"},
    {"lot": "L-2612", "note": "Beluga from pond 1, for the Zurich importer"},
    {"lot": "L-2613", "note": "Sevruga from pond 7"},
    {"lot": "L-2614", "note": "Oscietra from pond 2, for the Tokyo importer"},
    {"lot": "L-2615", "note": "Bester hybrid from pond 9"},
]

CASES = [
    {"id": "zzzb_stur_01", "input": 4, "switch": "handoff_by_pond_size", "kind": "wrong_routing",
     "root": ("generation fake-model", 2), "failure": ("issue_cites_permit", 1),
     "description": "The intake model handed the Bester hybrid lot L-2615, marked for the home market, to the export grader, whose permit request was refused for a hybrid with no export registration."},
    {"id": "zzzb_stur_02", "input": 0, "switch": "tins_range_from_one", "kind": "off_by_one",
     "root": ("list_tins", 1), "failure": ("record_lot", 1),
     "description": "The tin listing started its range one tin late and left out T1, so only 5 of the manifest's 6 tins were graded and the register refused the lot."},
    {"id": "zzzb_stur_03", "input": 3, "switch": "certificate_grade_wording", "kind": "format_drift",
     "root": ("generation fake-model", 8), "failure": ("print_tin_labels", 1),
     "description": "The grader's final certificate wrote the grade as 'Royal 000' instead of the register's code '000', and the label printer's argument schema rejected it."},
    {"id": "zzzb_stur_04", "input": 0, "switch": "standard_nearest_species", "kind": "wrong_retrieval",
     "root": ("find_grading_standard", 1), "failure": ("record_lot", 1),
     "description": "The standards search returned the Sevruga standard (2.5 mm for 000) for an Oscietra lot, the grader graded 000 on it, and the register's Oscietra rule (3.0 mm) refused tin T4 at 2.8 mm."},
    {"id": "zzzb_stur_05", "input": 2, "switch": "lab_comma_dropped", "kind": "lossy_parsing",
     "root": ("parse_lab_sheet", 1), "failure": ("record_lot", 1),
     "description": "The lab-sheet parser dropped the decimal comma, reading salt 3,4 % as 34 %, and the register refused a malossol label at that salt."},
]

MANIFESTS = {
    "L-2611": {"species": "Oscietra", "farm": "Pond 4", "market": "domestic", "tins": 6},
    "L-2612": {"species": "Beluga", "farm": "Pond 1", "market": "export", "tins": 4},
    "L-2613": {"species": "Sevruga", "farm": "Pond 7", "market": "domestic", "tins": 5},
    "L-2614": {"species": "Oscietra", "farm": "Pond 2", "market": "export", "tins": 3},
    "L-2615": {"species": "Bester", "farm": "Pond 9", "market": "domestic", "tins": 4},
}
STANDARDS = {"Oscietra": 3.0, "Beluga": 3.5, "Sevruga": 2.5, "Bester": 2.8}
GRAINS = {"L-2611": [3.1, 3.2, 3.0, 2.8, 3.3, 3.1], "L-2612": [3.6, 3.7, 3.5, 3.8], "L-2613": [2.6, 2.7, 2.5, 2.6, 2.9],
          "L-2614": [3.2, 3.1, 3.4], "L-2615": [2.9, 3.0, 2.8, 3.1]}
LAB = {"L-2611": "salt 3,2 %; moisture 51,0 %", "L-2612": "salt 3,0 %; moisture 50,4 %",
       "L-2613": "salt 3,4 %; moisture 52,1 %", "L-2614": "salt 3,1 %; moisture 50,9 %",
       "L-2615": "salt 3,6 %; moisture 53,0 %"}
EXPORT_REGISTERED = {"Oscietra", "Beluga", "Sevruga"}


@function_tool(failure_error_function=None)
def lot_manifest(lot: str) -> dict:
    """The lot's manifest: species, farm pond, market, tins."""
    return {"lot": lot, **MANIFESTS[lot]}


@function_tool(failure_error_function=None)
def find_grading_standard(species: str) -> dict:
    """Search the grading standards for a species: the minimum grain for grade 000."""
    found = species
    if SWITCH == "standard_nearest_species" and species == "Oscietra":
        found = "Sevruga"
    return {"species": found, "min_grain_000_mm": STANDARDS[found], "min_grain_0_mm": STANDARDS[found] - 0.4}


@function_tool(failure_error_function=None)
def list_tins(lot: str) -> list:
    """The tins packed for a lot."""
    n = MANIFESTS[lot]["tins"]
    first = 2 if SWITCH == "tins_range_from_one" else 1
    return [f"{lot}-T{i}" for i in range(first, n + 1)]


@function_tool(failure_error_function=None)
def inspect_tin(tin: str) -> dict:
    """Grain diameter, colour and firmness of one tin."""
    lot, t = tin.rsplit("-T", 1)
    return {"tin": tin, "grain_mm": GRAINS[lot][int(t) - 1], "colour": "grey-gold", "firm": True}


@function_tool(failure_error_function=None)
def parse_lab_sheet(lot: str) -> dict:
    """Read the lab's sheet for the lot into numbers."""
    out = {"lot": lot}
    for part in LAB[lot].split(";"):
        name, value, _unit = part.split()
        value = value.replace(",", "") if SWITCH == "lab_comma_dropped" else value.replace(",", ".")
        out[f"{name}_pct"] = float(value)
    return out


@function_tool(failure_error_function=None)
def issue_cites_permit(lot: str, species: str) -> dict:
    """Ask the CITES office for an export permit for the lot."""
    if species not in EXPORT_REGISTERED:
        raise ValueError(f"permit refused: {species} (lot {lot}) has no export registration at this farm")
    return {"lot": lot, "permit": f"CH-{lot[2:]}-{species[:3].upper()}"}


class TinReading(BaseModel):
    tin: str
    grain_mm: float
    colour: str
    firm: bool


@function_tool(failure_error_function=None)
def record_lot(lot: str, grade: str, tins: list[TinReading], salt_pct: float, label: str) -> dict:
    """Record the graded lot in the farm register."""
    m = MANIFESTS[lot]
    if len(tins) != m["tins"]:
        raise ValueError(f"register refused {lot}: manifest lists {m['tins']} tins, {len(tins)} graded")
    need = STANDARDS[m["species"]] if grade == "000" else STANDARDS[m["species"]] - 0.4
    for t in tins:
        if t.grain_mm < need:
            raise ValueError(f"register refused {lot}: tin {t.tin.rsplit('-', 1)[1]} at {t.grain_mm} mm is under "
                             f"{need} mm for {m['species']} {grade}")
    if label == "malossol" and salt_pct > 5.0:
        raise ValueError(f"register refused {lot}: malossol label with salt at {salt_pct} %")
    return {"lot": lot, "entry": f"REG-{lot[2:]}-{grade}"}


@function_tool(failure_error_function=None)
def print_tin_labels(lot: str, grade: Literal["000", "0", "1"], tins: int, register_entry: str) -> dict:
    """Print the tin lids' grade labels for a registered lot."""
    return {"lot": lot, "printed": tins, "label": f"{grade} / {register_entry}"}


def _results(messages):
    out = {}
    calls = {}
    for m in messages:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                calls[c["id"]] = c["function"]["name"]
        if m.get("role") == "tool":
            text = m["content"]
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                value = text
            out.setdefault(calls.get(m["tool_call_id"], "?"), []).append(value)
    return out


def policy(request):
    messages = request.body["messages"]
    system = messages[0]["content"]
    user = [m for m in messages if m["role"] == "user"][0]["content"]
    lot = user.split(":")[0]
    got = _results(messages)
    if system.startswith("You print tin labels"):
        if "print_tin_labels" not in got:
            return Reply(tool_calls=(tool_call("print_tin_labels", json.loads(user)),))
        return f"Printed {got['print_tin_labels'][0]['printed']} labels."
    if system.startswith("You take in caviar lots"):
        if "lot_manifest" not in got:
            return Reply(tool_calls=(tool_call("lot_manifest", {"lot": lot}),))
        manifest = got["lot_manifest"][0]
        target = "export" if manifest["market"] == "export" else "domestic"
        if SWITCH == "handoff_by_pond_size" and manifest["tins"] >= 4 and manifest["species"] == "Bester":
            target = "export"
        return Reply(tool_calls=(tool_call(f"transfer_to_{target}_grader", {}),))
    manifest = got["lot_manifest"][0]
    export = system.startswith("You grade export")
    if "find_grading_standard" not in got:
        return Reply(tool_calls=(tool_call("find_grading_standard", {"species": manifest["species"]}),
                                 tool_call("list_tins", {"lot": lot})))
    if "inspect_tin" not in got:
        return Reply(tool_calls=tuple(tool_call("inspect_tin", {"tin": t}) for t in got["list_tins"][0]))
    if "parse_lab_sheet" not in got:
        return Reply(tool_calls=(tool_call("parse_lab_sheet", {"lot": lot}),))
    if export and "issue_cites_permit" not in got:
        return Reply(tool_calls=(tool_call("issue_cites_permit", {"lot": lot, "species": manifest["species"]}),))
    standard = got["find_grading_standard"][0]
    tins = got["inspect_tin"]
    grade = "000" if all(t["grain_mm"] >= standard["min_grain_000_mm"] for t in tins) else "0"
    if "record_lot" not in got:
        lab = got["parse_lab_sheet"][0]
        return Reply(tool_calls=(tool_call("record_lot", {"lot": lot, "grade": grade, "salt_pct": lab["salt_pct"],
                                                          "label": "malossol", "tins": tins}),))
    shown = "Royal 000" if SWITCH == "certificate_grade_wording" and grade == "000" else grade
    return json.dumps({"lot": lot, "species": manifest["species"], "grade": shown, "tins": len(tins),
                       "register_entry": got["record_lot"][0]["entry"]})


def build(model):
    grader_tools = [find_grading_standard, list_tins, inspect_tin, parse_lab_sheet, record_lot]
    domestic = Agent(name="domestic_grader", model=model, tools=grader_tools,
                     instructions="You grade caviar lots for the home market: standard, tins, lab sheet, register.")
    export = Agent(name="export_grader", model=model,
                   tools=grader_tools[:4] + [issue_cites_permit, record_lot],
                   instructions="You grade export caviar lots: standard, tins, lab sheet, CITES permit, register.")
    printer = Agent(name="label_printer", model=model, tools=[print_tin_labels],
                    instructions="You print tin labels from a grading certificate.")
    return printer, Agent(name="lot_intake", model=model, tools=[lot_manifest], handoffs=[domestic, export],
                 instructions="You take in caviar lots: read the manifest, then hand the lot to the right grader.")


async def _run(inp, server):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client)
    set_default_openai_api("chat_completions")
    try:
        printer, intake = build(server.model)
        with trace(RUN_NAME):
            graded = await Runner.run(intake, f"{inp['lot']}: {inp['note']}", run_config=RunConfig(workflow_name=RUN_NAME))
            return await Runner.run(printer, graded.final_output, run_config=RunConfig(workflow_name=RUN_NAME))
    finally:
        await client.close()


def record(inp, path, server):
    processor = TrajdebugProcessor(path=str(path), name=RUN_NAME, task=f"grade caviar lot {inp['lot']}")
    set_trace_processors([processor])
    try:
        asyncio.run(_run(inp, server))
    except Exception as exc:  # the SDK's trace records the failure
        if type(exc).__module__.split(".")[0] != "agents":
            raise
    finally:
        set_trace_processors([])
