"""Hospital porter dispatch: an OpenAI Agents SDK dispatcher handing off to isolation or standard escort agents."""

from __future__ import annotations

import json

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.exceptions import UserError
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .common import Case, system_text, tool_results
from .kit import active

NAME = "porter-dispatch"
ROUTE = "openai_agents"
DOMAIN = "hospital porter dispatch"
EXT = "jsonl"
SHAPE = ("dispatcher: request tool -> bed board tool -> porter roster tool -> hand-off to isolation or standard "
         "escort agent: equipment tool -> dispatch_porter")

REQUESTS = {
    "TR-5512": {"mrn": "448812", "to": "MRI 1", "isolation": True, "weight_kg": 162, "equipment": "wheelchair"},
    "TR-5520": {"mrn": "301177", "to": "Fracture Clinic", "isolation": False, "weight_kg": 74, "equipment": "trolley"},
    "TR-5531": {"mrn": "552090", "to": "Endoscopy", "isolation": False, "weight_kg": 81, "equipment": "wheelchair"},
    "TR-5540": {"mrn": "610342", "to": "CT Scanner 2", "isolation": True, "weight_kg": 66, "equipment": "trolley"},
    "TR-5548": {"mrn": "719005", "to": "Discharge Lounge", "isolation": False, "weight_kg": 140,
                "equipment": "wheelchair"},
    "TR-5559": {"mrn": "820411", "to": "Theatre 3", "isolation": False, "weight_kg": 90, "equipment": "trolley"},
}
BED_BOARD = {"448812": ("7B-12", "South"), "301177": ("3A-04", "North"), "552090": ("5C-09", "South"),
             "610342": ("2D-01", "North"), "719005": ("6A-11", "South"), "820411": ("4B-07", "North")}
DEST_ZONE = {"MRI 1": "North", "Fracture Clinic": "South", "Endoscopy": "North", "CT Scanner 2": "South",
             "Discharge Lounge": "North", "Theatre 3": "South"}
PORTERS = {"North": ["P-14", "P-22"], "South": ["P-31", "P-09"]}
EQUIPMENT = {("wheelchair", False): ("WC-STD-14", 136), ("wheelchair", True): ("WC-BAR-02", 250),
             ("trolley", False): ("TR-STD-07", 180), ("trolley", True): ("TR-BAR-01", 320)}
INPUTS = {k.lower().replace("-", ""): k for k in REQUESTS}
REFS = ["tr5531", "tr5540", "tr5548", "tr5559"]

CASES = [
    Case("zw_port_route", "wrong_routing", "tr5512", "generation porter-model", 4, "llm", "dispatch_porter", 1,
         "The dispatcher hands an isolation request to the standard escort agent."),
    Case("zw_port_ward", "stale_data", "tr5520", "locate_patient", 1, "tool", "dispatch_porter", 1,
         "The bed-board tool answers from a cached snapshot of the patient's previous admission, bed 9C-02."),
    Case("zw_port_pickup", "wrong_tool_args", "tr5520", "generation porter-model", 6, "llm", "dispatch_porter", 1,
         "The escort agent's model fills the pickup argument with the destination instead of the patient's bed."),
    Case("zw_port_notes", "context_pollution", "tr5512", "get_transport_request", 1, "tool", "dispatch_porter", 1,
         "The request tool returns notes threaded from another job (TR-5540), and the dispatcher takes that job's "
         "destination."),
    Case("zw_port_chair", "tool_ignores_argument", "tr5512", "check_equipment", 1, "tool", "dispatch_porter", 1,
         "The equipment tool ignores bariatric=true and returns a standard wheelchair rated to 136 kg."),
]


class DispatchRejected(RuntimeError):
    pass


def _policy(req):
    body = req.body or {}
    sys = system_text(body)
    done = tool_results(body)
    request = next((d for d in done if "request_id" in d and "mrn" in d), None)
    if "escort" in sys:
        started = [d for d in done if "equipment_id" in d or "dispatched" in d]
        located = next(d for d in done if "bed" in d)
        roster = next(d for d in done if "porters" in d)
        if not started:
            return Reply(tool_calls=(tool_call("check_equipment", {"kind": request["equipment"],
                                                                   "bariatric": request["weight_kg"] > 135}),))
        if len(started) == 1:
            dest = request["to"]
            for line in request.get("notes", []):
                if line.startswith("Destination changed to "):
                    dest = line.removeprefix("Destination changed to ").split(" (")[0]
            pickup = dest if active("zw_port_pickup") else located["bed"]
            return Reply(tool_calls=(tool_call("dispatch_porter", {
                "request_id": request["request_id"], "porter": roster["porters"][0], "pickup": pickup,
                "destination": dest, "equipment_id": started[0]["equipment_id"],
                "protocol": "isolation" if "isolation" in sys else "standard"}),))
        return "Porter dispatched."
    rid = json.loads(next(m["content"] for m in body["messages"] if m["role"] == "user"))["request_id"]
    if len(done) == 0:
        return Reply(tool_calls=(tool_call("get_transport_request", {"request_id": rid}),))
    if len(done) == 1:
        return Reply(tool_calls=(tool_call("locate_patient", {"mrn": request["mrn"]}),))
    if len(done) == 2:
        return Reply(tool_calls=(tool_call("list_available_porters", {"zone": done[1]["zone"]}),))
    iso = request["isolation"] and not active("zw_port_route")
    return Reply(tool_calls=(tool_call("transfer_to_isolation_escort" if iso else "transfer_to_standard_escort", {}),))


@function_tool
def get_transport_request(request_id: str) -> str:
    """A transport request from the ward system."""
    r = REQUESTS[request_id]
    notes = ["Patient ready from 10:15"]
    if active("zw_port_notes"):
        notes.append("Destination changed to CT Scanner 2 (ward clerk, TR-5540)")
    return json.dumps({"request_id": request_id, **r, "notes": notes})


@function_tool
def locate_patient(mrn: str) -> str:
    """The patient's current bed from the bed board."""
    bed, zone = BED_BOARD[mrn]
    if active("zw_port_ward"):
        bed, zone = "9C-02", "North"
    return json.dumps({"mrn": mrn, "bed": bed, "zone": zone})


@function_tool
def list_available_porters(zone: str) -> str:
    """Porters free now in a zone."""
    return json.dumps({"zone": zone, "porters": PORTERS[zone]})


@function_tool
def check_equipment(kind: str, bariatric: bool) -> str:
    """Reserve transport equipment; bariatric asks for a heavy-duty model."""
    if active("zw_port_chair"):
        bariatric = False
    eq, rated = EQUIPMENT[(kind, bariatric)]
    return json.dumps({"equipment_id": eq, "rated_kg": rated})


@function_tool(failure_error_function=None)
def dispatch_porter(request_id: str, porter: str, pickup: str, destination: str, equipment_id: str,
                    protocol: str) -> str:
    """Dispatch a porter job (validated by the dispatch service)."""
    r = REQUESTS[request_id]
    bed, zone = BED_BOARD[r["mrn"]]
    if r["isolation"] and protocol != "isolation":
        raise DispatchRejected(f"409 Conflict: request {request_id} requires the isolation protocol; job was "
                               f"raised as '{protocol}'")
    if pickup != bed:
        raise DispatchRejected(f"422 Unprocessable Entity: pickup '{pickup}' does not match the bed board for MRN "
                               f"{r['mrn']} ({bed})")
    if destination != r["to"]:
        raise DispatchRejected(f"422 Unprocessable Entity: destination '{destination}' does not match request "
                               f"{request_id} ('{r['to']}')")
    if porter not in PORTERS[zone]:
        raise DispatchRejected(f"409 Conflict: porter {porter} is not rostered in zone {zone}")
    rated = next(v[1] for v in EQUIPMENT.values() if v[0] == equipment_id)
    if rated < r["weight_kg"]:
        raise DispatchRejected(f"422 Unprocessable Entity: equipment {equipment_id} is rated to {rated} kg; patient "
                               f"weight is {r['weight_kg']} kg")
    return json.dumps({"dispatched": True, "job": f"J-{request_id}", "porter": porter})


def build(server):
    client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)

    def model():
        return OpenAIChatCompletionsModel(model="porter-model", openai_client=client)

    iso = Agent(name="isolation_escort", instructions="You are the escort desk for isolation transfers.",
                tools=[check_equipment, dispatch_porter], model=model())
    std = Agent(name="standard_escort", instructions="You are the escort desk for standard transfers.",
                tools=[check_equipment, dispatch_porter], model=model())
    return Agent(name="dispatcher", instructions="You are hospital porter dispatch. Gather facts, then hand off.",
                 tools=[get_transport_request, locate_patient, list_available_porters], handoffs=[iso, std],
                 model=model())


def record(inp_id: str, path: str, server) -> None:
    server.use(_policy)
    rid = INPUTS[inp_id]
    processor = TrajdebugProcessor(path=path, name=NAME, task=f"dispatch a porter for {rid}")
    set_trace_processors([processor])
    try:
        Runner.run_sync(build(server), json.dumps({"request_id": rid}),
                        run_config=RunConfig(workflow_name=NAME, tracing_disabled=False))
    except UserError as exc:
        if not isinstance(exc.__cause__, DispatchRejected):
            raise
