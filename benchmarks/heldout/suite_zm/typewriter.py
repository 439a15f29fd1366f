"""Typewriter repair bench (OpenAI Agents SDK): a repair-desk triage agent with ticket history and memory tools
hands off to a platen or escapement bench agent, which opens a work order, searches parts and quotes."""
from __future__ import annotations

import json

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .common import Case, policy, tool_results
from .kit import active

NAME, ROUTE, DOMAIN = "typewriter-repair", "openai_agents", "typewriter repair"
SHAPE = "triage agent (ticket history, memory write) -> hand-off to platen/escapement bench agent (memory read, machine record, work order, per-part search loop, quote_repair)"

MACHINES = {
    "OL-554128": {"model": "Olympia SM9", "owner": "Ivan Petrov"},
    "OL-554120": {"model": "Olympia SM3", "owner": "Edith Moore"},
    "HE-300871": {"model": "Hermes 3000", "owner": "Raul Vega"},
    "HE-300877": {"model": "Hermes Baby", "owner": "Hana Sato"},
    "SC-510233": {"model": "Smith-Corona Galaxie", "owner": "Lucy Chen"},
    "RE-220019": {"model": "Remington Quiet-Riter", "owner": "Omar Haddad"},
    "BR-118840": {"model": "Brother Deluxe", "owner": "Greta Olsen"},
}
NEEDS = {"platen": ["platen", "feed roller"], "escapement": ["escapement wheel", "drawband"]}
SYMPTOMS = {"platen slipping": "platen", "paper not feeding": "platen", "keys skipping": "escapement",
            "carriage not advancing": "escapement"}
INPUTS = {
    "A": {"customer": "Edith Moore", "symptom": "platen slipping"},
    "B": {"customer": "Raul Vega", "symptom": "carriage not advancing"},
    "R1": {"customer": "Lucy Chen", "symptom": "keys skipping"},
    "R2": {"customer": "Omar Haddad", "symptom": "paper not feeding"},
    "R3": {"customer": "Greta Olsen", "symptom": "carriage not advancing"},
    "R4": {"customer": "Ivan Petrov", "symptom": "platen slipping"},
}
REFS = ["R1", "R2", "R3", "R4"]

CASES = [
    Case("zm_type_1", "wrong_routing", "A", ("generation tw-triage-1", 3, "llm"), ("quote_repair", 1),
         "triage hands a platen complaint to the escapement bench", "type.route"),
    Case("zm_type_2", "tool_ignores_argument", "B", ("parts_search", 1, "tool"), ("quote_repair", 1),
         "parts_search ignores the model argument and returns generic part numbers", "type.ignore"),
    Case("zm_type_3", "bad_memory_write", "A", ("remember", 1, "tool"), ("quote_repair", 1),
         "remember stores the serial with its last digit cut, so the bench later loads another machine", "type.memory"),
    Case("zm_type_4", "context_pollution", "B", ("ticket_history", 1, "tool"), ("quote_repair", 1),
         "the ticket history mixes in a neighbour's ticket and triage takes that machine's serial", "type.pollute"),
    Case("zm_type_5", "plan_error", "A", ("generation tw-bench-1", 3, "llm"), ("quote_repair", 1),
         "the bench's work order plans only the platen and leaves out the feed roller", "type.plan"),
]

_MEMORY: dict[str, str] = {}


@function_tool
def ticket_history(customer: str) -> str:
    """Past repair tickets of a customer."""
    own = [{"ticket": f"T-{i}", "serial": s, "customer": m["owner"]} for i, (s, m) in enumerate(MACHINES.items())
           if m["owner"] == customer]
    if active("type.pollute"):
        own.append({"ticket": "T-99", "serial": "HE-300877", "customer": "Hana Sato", "note": "same street, dropped off together"})
    return json.dumps({"tickets": own})


@function_tool
def remember(key: str, value: str) -> str:
    """Write a value to the desk's shared memory."""
    _MEMORY[key] = value[:-1] if active("type.memory") else value
    return json.dumps({"saved": key})


@function_tool
def recall(key: str) -> str:
    """Read a value from the desk's shared memory."""
    return json.dumps({"key": key, "value": _MEMORY.get(key)})


@function_tool
def machine_record(serial: str) -> str:
    """Workshop record of a machine, looked up by serial (prefix search)."""
    for s, m in MACHINES.items():
        if s.startswith(serial):
            return json.dumps({"serial": s, **m})
    return json.dumps({"serial": serial, "model": None})


@function_tool
def open_work_order(serial: str, bench: str, parts: list[str]) -> str:
    """Open a work order with the planned parts."""
    return json.dumps({"order": f"WO-{serial}", "bench": bench, "parts": parts})


@function_tool
def parts_search(model: str, part: str) -> str:
    """Find a part number for a typewriter model."""
    code = "GEN" if active("type.ignore") else "".join(w[0] for w in model.replace("-", " ").split()).upper()
    return json.dumps({"part": part, "number": f"P-{code}-{part.replace(' ', '').upper()}", "fits": model})


def _quote(customer: str, symptom: str, serial: str, bench: str, part_numbers: list[str]) -> str:
    m = MACHINES.get(serial, {"model": None, "owner": None})
    problems = []
    if m["owner"] != customer:
        problems.append(f"serial {serial} is registered to {m['owner']}, not {customer}")
    want = SYMPTOMS[symptom]
    if bench != f"{want}-bench":
        problems.append(f"symptom '{symptom}' is {want} work, quoted by {bench}")
    code = "".join(w[0] for w in str(m["model"]).replace("-", " ").split()).upper()
    expected = [f"P-{code}-{p.replace(' ', '').upper()}" for p in NEEDS[want]]
    missing = [p for p in expected if p not in part_numbers]
    if missing:
        problems.append(f"quote for {m['model']} lacks part numbers {', '.join(missing)}")
    if problems:
        raise ValueError("quote rejected by workshop ledger: " + "; ".join(problems))
    return json.dumps({"quote": f"Q-{serial}", "parts": len(part_numbers)})


quote_repair = function_tool(_quote, name_override="quote_repair", failure_error_function=None)


def _ctx(msgs):
    return json.loads(next(m["content"] for m in msgs if m["role"] == "user"))


@policy("tw_triage")
def _triage(msgs):
    q, res = _ctx(msgs), dict(tool_results(msgs))
    if "ticket_history" not in res:
        return Reply(tool_calls=(tool_call("ticket_history", {"customer": q["customer"]}),))
    if "remember" not in res:
        serial = res["ticket_history"]["tickets"][-1]["serial"]
        return Reply(tool_calls=(tool_call("remember", {"key": "serial", "value": serial}),))
    area = SYMPTOMS[q["symptom"]]
    if active("type.route"):
        area = "escapement" if area == "platen" else "platen"
    return Reply(tool_calls=(tool_call(f"transfer_to_{area}_bench", {}),))


def _bench(area):
    def pol(msgs):
        q, results = _ctx(msgs), tool_results(msgs)
        res = dict(results)
        if "recall" not in res:
            return Reply(tool_calls=(tool_call("recall", {"key": "serial"}),))
        if "machine_record" not in res:
            return Reply(tool_calls=(tool_call("machine_record", {"serial": res["recall"]["value"]}),))
        rec = res["machine_record"]
        if "open_work_order" not in res:
            parts = NEEDS[area][:1] if active("type.plan") else NEEDS[area]
            return Reply(tool_calls=(tool_call("open_work_order", {"serial": rec["serial"], "bench": f"{area}-bench", "parts": parts}),))
        wo = res["open_work_order"]
        found = [v for k, v in results if k == "parts_search"]
        if len(found) < len(wo["parts"]):
            return Reply(tool_calls=(tool_call("parts_search", {"model": rec["model"], "part": wo["parts"][len(found)]}),))
        if "quote_repair" not in res:
            return Reply(tool_calls=(tool_call("quote_repair", {"customer": q["customer"], "symptom": q["symptom"], "serial": rec["serial"],
                                                                 "bench": f"{area}-bench", "part_numbers": [f["number"] for f in found]}),))
        return "Quoted: " + json.dumps(res["quote_repair"])
    return pol


policy("tw_platen")(_bench("platen"))
policy("tw_escapement")(_bench("escapement"))


def record(key, out, base_url):
    _MEMORY.clear()
    client = AsyncOpenAI(base_url=base_url, api_key="local", max_retries=0)
    bench_model = OpenAIChatCompletionsModel(model="tw-bench-1", openai_client=client)
    tools = [recall, machine_record, open_work_order, parts_search, quote_repair]
    settings = ModelSettings(parallel_tool_calls=False)
    platen = Agent(name="platen_bench", instructions="[desk:tw_platen] Platen and paper-feed repairs.", tools=tools,
                   model=bench_model, model_settings=settings)
    escapement = Agent(name="escapement_bench", instructions="[desk:tw_escapement] Escapement and carriage repairs.",
                       tools=tools, model=bench_model, model_settings=settings)
    triage = Agent(name="repair-desk", instructions="[desk:tw_triage] Triage typewriter repairs, then hand off.",
                   tools=[ticket_history, remember], handoffs=[platen, escapement],
                   model=OpenAIChatCompletionsModel(model="tw-triage-1", openai_client=client), model_settings=settings)
    proc = TrajdebugProcessor(path=str(out), name=NAME, task="quote a typewriter repair")
    set_trace_processors([proc])
    Runner.run_sync(triage, json.dumps(INPUTS[key]), max_turns=30, run_config=RunConfig(workflow_name=NAME))
