"""A type foundry's casting desk on the OpenAI Agents SDK (route openai_agents).

Shape: a desk agent checks the matrix inventory and hands off to one of two casters (the
Monotype caster or the hand-mould caster, by point size); the caster calls a proof-reader
agent as a tool (a nested Runner.run), parses its proof sheet with a sort-count tool, weighs
the metal and books the casting, and answers a structured casting ticket (output_type).
Chat Completions against the fake server.  13-17 steps.
"""

from __future__ import annotations

import asyncio
import json
import re

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from pydantic import BaseModel

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "typefoundry-casting-desk"
ROUTE = "openai_agents"
DOMAIN = "a type foundry's font castings"
SHAPE = "desk agent with a two-way hand-off, an agent used as a tool, sequential tools, structured output; 13-17 steps"
SWITCH = None

MATRICES = {
    "Baskerville": {"case": "MC-14", "sizes": [10, 12, 14, 18, 24]},
    "Caslon Old Face": {"case": "MC-03", "sizes": [8, 10, 12, 14, 36, 48]},
    "Gill Sans": {"case": "MC-22", "sizes": [12, 18, 24, 36, 48, 72]},
    "Bodoni": {"case": "MC-31", "sizes": [10, 12, 36, 60]},
}

RETIRED = {"MC-09": "emptied on 2026-10-02 when the Bodoni matrices were re-cut into case MC-31"}

INPUTS = [
    {"job": "TF-880", "printer": "Kestrel Press", "face": "Baskerville", "size_pt": 14, "specimen": "Café crème, façade"},
    {"job": "TF-881", "printer": "Loom Street Printers", "face": "Gill Sans", "size_pt": 48, "specimen": "RAILWAY"},
    {"job": "TF-882", "printer": "Hedgerow Editions", "face": "Caslon Old Face", "size_pt": 12, "specimen": "Thou art"},
    {"job": "TF-883", "printer": "Kestrel Press", "face": "Bodoni", "size_pt": 36, "specimen": "Opéra"},
    {"job": "TF-884", "printer": "Anvil Broadsides", "face": "Gill Sans", "size_pt": 18, "specimen": "Notice of sale"},
]

CASES = [
    {"id": "zzzr-type-proof", "input": 2, "switch": "proof_prose", "kind": "format_drift",
     "root": ("generation typefoundry-model", 4), "failure": ("sort_count", 1),
     "desc": "The proof reader answered its proof sheet as a sentence listing the letters instead of the JSON sheet the caster reads."},
    {"id": "zzzr-type-accents", "input": 0, "switch": "ascii_sorts", "kind": "lossy_parsing",
     "root": ("sort_count", 1), "failure": ("cast_order", 1),
     "desc": "The sort count kept only plain ASCII letters, dropping é, è and ç from the Baskerville fount."},
    {"id": "zzzr-type-caster", "input": 4, "switch": "hand_mould", "kind": "wrong_routing",
     "root": ("generation typefoundry-model", 2), "failure": ("cast_order", 1),
     "desc": "The desk handed an 18pt Gill Sans job to the hand-mould caster, whose work starts at 36pt."},
    {"id": "zzzr-type-archive", "input": 1, "switch": "proof_archive", "kind": "context_pollution",
     "root": ("proof_reader", 1), "failure": ("generation typefoundry-model", 5),
     "desc": "The proof reader's answer carried the foundry's whole archive of earlier proof sheets, and the caster's next model request was refused as too long."},
    {"id": "zzzr-type-matrix", "input": 3, "switch": "old_stocktake", "kind": "stale_data",
     "root": ("matrix_inventory", 1), "failure": ("cast_order", 1),
     "desc": "The matrix inventory answered from the June stocktake, naming case MC-09 for Bodoni, which was emptied in October when the matrices moved to MC-31."},
]


class CastingTicket(BaseModel):
    job: str
    face: str
    size_pt: int
    matrix_case: str
    sorts: int
    metal_lb: float
    caster: str


def _tool_results(messages):
    names, out = {}, {}
    for m in messages:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            out[names.get(m["tool_call_id"])] = m["content"]
    return out


def policy(request):
    messages = request.body["messages"]
    system = messages[0]["content"]
    user = next(m["content"] for m in messages if m["role"] == "user")
    if sum(len(str(m.get("content") or "")) for m in messages) > 20000:
        return Reply(status=400, error="This model's maximum context length is 16385 tokens; the messages are too long.")
    if system.startswith("You proof"):
        letters = sorted(set(ch for ch in json.loads(user)["specimen"] if ch.isalpha()))
        if SWITCH == "proof_prose":
            return "Proof pulled; letters needed are " + ", ".join(letters) + "."
        return json.dumps({"sheet": "proof", "letters": letters})
    job = json.loads(user)
    done = _tool_results(messages)
    if system.startswith("You run the casting desk"):
        if "matrix_inventory" not in done:
            return Reply(tool_calls=(tool_call("matrix_inventory", {"face": job["face"], "size_pt": job["size_pt"]}),))
        hand = job["size_pt"] >= 36
        if SWITCH == "hand_mould":
            hand = True
        return Reply(tool_calls=(tool_call("transfer_to_hand_caster" if hand else "transfer_to_monotype_caster", {}),))
    caster = "hand mould" if system.startswith("You cast by hand") else "monotype"
    matrix = json.loads(done["matrix_inventory"])
    if "proof_reader" not in done:
        return Reply(tool_calls=(tool_call("proof_reader", {"input": json.dumps({"face": job["face"], "specimen": job["specimen"]})}),))
    if "sort_count" not in done:
        return Reply(tool_calls=(tool_call("sort_count", {"proof_sheet": done["proof_reader"], "size_pt": job["size_pt"]}),))
    sorts = json.loads(done["sort_count"])
    if "cast_order" not in done:
        return Reply(tool_calls=(tool_call("cast_order", {"job": job["job"], "face": job["face"], "size_pt": job["size_pt"],
                                                          "matrix_case": matrix["case"], "caster": caster,
                                                          "sorts": json.dumps(sorts["sorts"]), "specimen": job["specimen"]}),))
    booked = json.loads(done["cast_order"])
    return json.dumps({"job": job["job"], "face": job["face"], "size_pt": job["size_pt"], "matrix_case": matrix["case"],
                       "sorts": len(sorts["sorts"]), "metal_lb": booked["metal_lb"], "caster": caster})


@function_tool(failure_error_function=None)
def matrix_inventory(face: str, size_pt: int) -> str:
    """The matrix case for a face and whether it is in the foundry."""
    m = MATRICES[face]
    stocktake = {"taken": "2026-11-30", "cases": {f: v["case"] for f, v in MATRICES.items()}}
    if SWITCH == "old_stocktake":
        stocktake = {"taken": "2026-06-30", "cases": {**stocktake["cases"], "Bodoni": "MC-09"}}
    return json.dumps({"face": face, "case": stocktake["cases"][face], "sizes": m["sizes"], "stocktake": stocktake["taken"]})


@function_tool(failure_error_function=None)
def sort_count(proof_sheet: str, size_pt: int) -> str:
    """Read the proof sheet into the sorts to cast and how many of each."""
    sheet = json.loads(proof_sheet)
    letters = sheet["letters"]
    if SWITCH == "ascii_sorts":
        letters = [ch for ch in letters if re.fullmatch(r"[A-Za-z]", ch)]
    per_sort = 120 if size_pt <= 14 else 60 if size_pt <= 24 else 20
    return json.dumps({"sorts": {ch: per_sort for ch in letters}})


@function_tool(failure_error_function=None)
def cast_order(job: str, face: str, size_pt: int, matrix_case: str, caster: str, sorts: str, specimen: str) -> str:
    """Book the casting of a fount (sorts: the sort count sheet as JSON)."""
    sorts = json.loads(sorts)
    if caster == "hand mould" and size_pt < 36:
        raise ValueError(f"hand-mould work is 36pt and up; {size_pt}pt {face} for {job} goes to the Monotype")
    if matrix_case in RETIRED:
        raise ValueError(f"matrix case {matrix_case} was {RETIRED[matrix_case]}; cannot cast {job} from it")
    if MATRICES[face]["case"] != matrix_case:
        raise ValueError(f"{face} matrices are not in case {matrix_case}")
    missing = sorted(set(ch for ch in specimen if ch.isalpha()) - set(sorts))
    if missing:
        raise ValueError(f"fount for {job} has no sorts for {', '.join(missing)} in its specimen")
    metal = round(sum(sorts.values()) * size_pt * 0.0009, 2)
    return json.dumps({"job": job, "caster": caster, "metal_lb": metal, "slot": "Monday pour"})


def _proof_output(run_result) -> str:
    text = str(run_result.final_output)
    if SWITCH == "proof_archive":
        archive = "\n".join(f"proof TF-{700 + i}: " + json.dumps({"letters": list("ABCDEFGHIJKLMNOPQRSTUVWXYZ" * 8)})
                            for i in range(90))
        text = text + "\n" + archive
    return text


def record(server, given: dict, path) -> None:
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model="typefoundry-model", openai_client=client)
    proof = Agent(name="proof_reader", model=model, instructions="You proof a specimen and list the letters it needs as JSON.")
    proof_tool = proof.as_tool(tool_name="proof_reader", tool_description="Pull a proof of the specimen.",
                               custom_output_extractor=lambda r: asyncio.sleep(0, _proof_output(r)))
    tools = [proof_tool, sort_count, cast_order]
    monotype = Agent(name="monotype_caster", model=model, tools=tools, output_type=CastingTicket,
                     instructions="You cast on the Monotype: proof, count the sorts, book the casting.")
    hand = Agent(name="hand_caster", model=model, tools=tools, output_type=CastingTicket,
                 instructions="You cast by hand mould: proof, count the sorts, book the casting.")
    desk = Agent(name="casting_desk", model=model, tools=[matrix_inventory], handoffs=[monotype, hand],
                 instructions="You run the casting desk: check the matrices, then hand the job to the right caster.")
    processor = TrajdebugProcessor(path=str(path), name=NAME, task=f"casting {given['job']} for {given['printer']}")
    set_trace_processors([processor])

    async def go():
        try:
            await Runner.run(desk, json.dumps(given), run_config=RunConfig(workflow_name=NAME))
        except Exception:
            pass
        finally:
            await client.close()

    try:
        asyncio.run(go())
    finally:
        set_trace_processors([])
