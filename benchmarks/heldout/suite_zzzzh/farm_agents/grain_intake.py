"""Country grain elevator intake: a grader agent probes and weighs a delivered truck (parallel tool calls),
looks up the grade standard, computes the moisture shrink and hands off to a settlement agent that finds
the grower's contract and posts the settlement (OpenAI Agents SDK)."""
from __future__ import annotations

import asyncio
import json
import re

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, handoff
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from ._common import messages, system, tool_results, user

NAME = "grain-intake"
ROUTE = "openai_agents"
DOMAIN = "country grain elevator intake and settlement"
SHAPE = "grader agent: parallel probe + weighbridge tool calls, grade standard lookup, shrink tool, hand-off to a settlement agent (contract lookup, posting tool)"
SWITCH = None


def active(case: str) -> bool:
    return SWITCH == case


INPUTS = [
    {"ticket": "T-88104", "truck": "TR-31", "crop": "wheat", "grade_class": "milling", "grower_id": "G-2270", "hauler_id": "G-2207"},
    {"ticket": "T-88105", "truck": "TR-12", "crop": "barley", "grade_class": "malting", "grower_id": "G-1408", "hauler_id": "H-0311"},
    {"ticket": "T-88106", "truck": "TR-31", "crop": "canola", "grade_class": "no. 1", "grower_id": "G-2207", "hauler_id": "G-2207"},
    {"ticket": "T-88107", "truck": "TR-44", "crop": "wheat", "grade_class": "feed", "grower_id": "G-0952", "hauler_id": "H-0311"},
    {"ticket": "T-88108", "truck": "TR-09", "crop": "oats", "grade_class": "milling", "grower_id": "G-1733", "hauler_id": "H-0520"},
]

CASES = [
    {"id": "zzzzh-grain-1", "input": 1, "kind": "wrong_tool_args", "root": ("generation fake-model", 3), "root_kind": "llm",
     "failure": "post_settlement",
     "what": "The grader model calls calc_shrink with the standard's maximum moisture (14.5%) as the shrink base instead of the 13.5% shrink base, so the shrink is understated and the settlement system's recheck refuses the ticket."},
    {"id": "zzzzh-grain-2", "input": 4, "kind": "hallucinated_value", "root": ("generation fake-model", 6), "root_kind": "llm",
     "failure": "post_settlement",
     "what": "The settlement model posts the oats at 4.35 $/bu, a price no tool returned (contract C-25-1733 says 4.05), and the posting is refused."},
    {"id": "zzzzh-grain-3", "input": 0, "kind": "lossy_parsing", "root": ("read_probe_sample", 1), "root_kind": "tool",
     "failure": "post_settlement",
     "what": "The probe reader turns the analyzer's 'DKG 1.8' into a whole number, so dockage of 1.0% instead of 1.8% is deducted and the settlement recheck against the analyzer log fails."},
    {"id": "zzzzh-grain-4", "input": 0, "kind": "subagent_wrong_entity", "root": ("generation fake-model", 5), "root_kind": "llm",
     "failure": "post_settlement",
     "what": "After the hand-off the settlement agent looks up the contract of the hauler G-2207 instead of the grower G-2270, and posting the load against the hauler's contract is refused."},
    {"id": "zzzzh-grain-5", "input": 3, "kind": "swallowed_error", "root": ("weigh_truck", 2), "root_kind": "tool", "root_has": "tare",
     "failure": "post_settlement",
     "what": "The tare weighing times out on the scale link and the tool quietly answers the fleet register's tare for TR-44 (410 kg lighter), so the net weight is overstated against the scale log."},
]

ANALYZER = {"T-88104": "MOIST 14.1 TW 79.2 DKG 1.8 FM 0.3", "T-88105": "MOIST 14.9 TW 64.8 DKG 0.9 FM 0.2",
            "T-88106": "MOIST 8.6 TW 66.0 DKG 2.4 FM 0.5", "T-88107": "MOIST 15.2 TW 74.1 DKG 1.2 FM 0.6",
            "T-88108": "MOIST 12.8 TW 51.3 DKG 2.1 FM 0.4"}
SCALE = {"T-88104": (38620, 14680), "T-88105": (35110, 13920), "T-88106": (36240, 14680), "T-88107": (39880, 15230), "T-88108": (31750, 12410)}
FLEET_TARE = {"TR-44": 14820}
STANDARDS = {("wheat", "milling"): (14.5, 13.5), ("barley", "malting"): (14.5, 13.5), ("canola", "no. 1"): (10.0, 8.5),
             ("wheat", "feed"): (16.0, 13.5), ("oats", "milling"): (14.0, 13.0)}
KG_PER_BU = {"wheat": 27.216, "barley": 21.772, "canola": 22.68, "oats": 14.515}
CONTRACTS = {"G-2270": ("C-25-2270", 7.42), "G-2207": ("C-25-2207", 14.10), "G-1408": ("C-25-1408", 6.85),
             "G-0952": ("C-25-0952", 5.96), "G-1733": ("C-25-1733", 4.05)}


def _shrink(net_kg, moisture, base, dockage):
    shrink_pct = max(0.0, moisture - base) * 1.2
    return round(net_kg * (1 - shrink_pct / 100) * (1 - dockage / 100))


@function_tool
def read_probe_sample(ticket: str) -> dict:
    """Moisture, test weight, dockage and foreign material from the probe analyzer."""
    text = ANALYZER[ticket]
    vals = dict(re.findall(r"([A-Z]+) ([\d.]+)", text))
    dockage = float(vals["DKG"])
    if active("zzzzh-grain-3"):
        dockage = float(int(float(vals["DKG"])))
    return {"ticket": ticket, "moisture_pct": float(vals["MOIST"]), "test_weight": float(vals["TW"]),
            "dockage_pct": dockage, "foreign_material_pct": float(vals["FM"])}


def _scale(ticket: str, stage: str) -> int:
    if stage == "tare" and active("zzzzh-grain-5"):
        raise TimeoutError("scale head did not answer on COM3")
    gross, tare = SCALE[ticket]
    return gross if stage == "gross" else tare


@function_tool
def weigh_truck(ticket: str, truck: str, stage: str) -> dict:
    """Weighbridge reading (stage: gross or tare)."""
    try:
        kg = _scale(ticket, stage)
    except TimeoutError:
        kg = FLEET_TARE.get(truck, 14600)
    return {"ticket": ticket, "truck": truck, "stage": stage, "kg": kg}


@function_tool
def lookup_grade_standard(crop: str, grade_class: str) -> dict:
    """Grade standard of a crop and class."""
    mx, base = STANDARDS[(crop, grade_class)]
    return {"crop": crop, "grade_class": grade_class, "max_moisture_pct": mx, "shrink_base_moisture_pct": base, "max_dockage_pct": 3.0}


@function_tool
def calc_shrink(net_kg: int, moisture_pct: float, base_moisture_pct: float, dockage_pct: float) -> dict:
    """Net weight after moisture shrink and dockage."""
    return {"net_kg": net_kg, "settle_kg": _shrink(net_kg, moisture_pct, base_moisture_pct, dockage_pct)}


@function_tool
def lookup_contract(grower_id: str) -> dict:
    """The open delivery contract of a grower."""
    cid, price = CONTRACTS[grower_id]
    return {"grower_id": grower_id, "contract_id": cid, "price_per_bu": price}


@function_tool(failure_error_function=None)
def post_settlement(ticket: str, grower_id: str, contract_id: str, crop: str, settle_kg: int, price_per_bu: float) -> dict:
    """Post the settlement of a ticket to the grain accounting system."""
    inp = next(i for i in INPUTS if i["ticket"] == ticket)
    if CONTRACTS[inp["grower_id"]][0] != contract_id:
        raise ValueError(f"accounting: ticket {ticket} delivered by {inp['grower_id']}, contract {contract_id} is not theirs")
    if abs(CONTRACTS[inp["grower_id"]][1] - price_per_bu) > 0.005:
        raise ValueError(f"accounting: {price_per_bu} $/bu on ticket {ticket}, contract {contract_id} is {CONTRACTS[inp['grower_id']][1]} $/bu")
    gross, tare = SCALE[ticket]
    vals = dict(re.findall(r"([A-Z]+) ([\d.]+)", ANALYZER[ticket]))
    expect = _shrink(gross - tare, float(vals["MOIST"]), STANDARDS[(inp["crop"], inp["grade_class"])][1], float(vals["DKG"]))
    if abs(expect - settle_kg) > 20:
        raise ValueError(f"accounting: ticket {ticket} settles {settle_kg} kg, scale and analyzer logs give {expect} kg")
    bu = settle_kg / KG_PER_BU[crop]
    return {"ticket": ticket, "bushels": round(bu, 1), "amount": round(bu * price_per_bu, 2), "status": "posted"}


def _calls(request):
    out = []
    for m in messages(request):
        for c in m.get("tool_calls") or ():
            out.append(c["function"]["name"])
    return out


def brain(request):
    sys_ = system(request)
    done = dict(tool_results(request))
    load = json.loads(user(request))
    t = load["ticket"]
    if sys_.startswith("You grade grain deliveries"):
        if "read_probe_sample" not in done:
            return Reply(tool_calls=(tool_call("read_probe_sample", {"ticket": t}),
                                     tool_call("weigh_truck", {"ticket": t, "truck": load["truck"], "stage": "gross"}),
                                     tool_call("weigh_truck", {"ticket": t, "truck": load["truck"], "stage": "tare"})))
        if "lookup_grade_standard" not in done:
            return Reply(tool_calls=(tool_call("lookup_grade_standard", {"crop": load["crop"], "grade_class": load["grade_class"]}),))
        if "calc_shrink" not in done:
            weights = {r["stage"]: r["kg"] for n, r in tool_results(request) if n == "weigh_truck"}
            probe, std = done["read_probe_sample"], done["lookup_grade_standard"]
            base = std["shrink_base_moisture_pct"]
            if active("zzzzh-grain-1"):
                base = std["max_moisture_pct"]
            return Reply(tool_calls=(tool_call("calc_shrink", {"net_kg": weights["gross"] - weights["tare"], "moisture_pct": probe["moisture_pct"],
                                                                "base_moisture_pct": base, "dockage_pct": probe["dockage_pct"]}),))
        return Reply(tool_calls=(tool_call("transfer_to_settlement_desk", {}),))
    if sys_.startswith("You settle graded loads"):
        if "lookup_contract" not in done:
            who = load["grower_id"]
            if active("zzzzh-grain-4"):
                who = load["hauler_id"]
            return Reply(tool_calls=(tool_call("lookup_contract", {"grower_id": who}),))
        if "post_settlement" not in done:
            c = done["lookup_contract"]
            price = c["price_per_bu"]
            if active("zzzzh-grain-2"):
                price = 4.35
            return Reply(tool_calls=(tool_call("post_settlement", {"ticket": t, "grower_id": c["grower_id"], "contract_id": c["contract_id"],
                                                                    "crop": load["crop"], "settle_kg": done["calc_shrink"]["settle_kg"],
                                                                    "price_per_bu": price}),))
        p = done["post_settlement"]
        return f"Ticket {t} posted: {p['bushels']} bu, {p['amount']} $."
    return "I cannot help with that."


def record(inp: dict, path, server) -> None:
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0))
    settlement = Agent(name="settlement_desk", instructions="You settle graded loads: find the grower's contract and post the settlement.",
                       model=model, tools=[lookup_contract, post_settlement])
    grader = Agent(name="intake_grader", instructions="You grade grain deliveries at the elevator: probe, weigh, grade, shrink, then hand off to settlement.",
                   model=model, tools=[read_probe_sample, weigh_truck, lookup_grade_standard, calc_shrink], handoffs=[handoff(settlement)])
    proc = TrajdebugProcessor(path=str(path), name=NAME, task=f"grain intake ticket {inp['ticket']}")
    set_trace_processors([proc])
    async def go():
        try:
            await Runner.run(grader, json.dumps(inp), run_config=RunConfig(workflow_name=NAME), max_turns=12)
        finally:
            await model._client.close()

    try:
        asyncio.run(go())
    except Exception:
        pass
    finally:
        set_trace_processors([])
