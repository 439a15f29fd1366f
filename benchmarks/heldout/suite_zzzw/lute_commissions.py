"""Lute maker's commissions: the OpenAI Agents SDK, a commission desk calling two sub-agents as tools (in parallel) and a contract schema check."""
from __future__ import annotations

import ast
import asyncio
import json
import re

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from pydantic import BaseModel, Field

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME, ROUTE, EXT = "lute-commission-desk", "openai_agents", "jsonl"
DOMAIN = "lute maker's commissions"
SHAPE = "orchestrator: parallel form reader and client file, then course plan in parallel with a wood-buyer sub-agent run as a tool (timber yard), then a rose-carver sub-agent (pattern book), pricing, contract with a schema and signed-form check (33-35 steps)"
SWITCH = None

CLIENTS = {
    "Tobias Lark": {"deposit_paid": 150.0, "history": ["2021: 6-course lute in G"]},
    "Hester Wray": {"deposit_paid": 200.0, "history": []},
    "Jem Hesketh": {"deposit_paid": 120.0, "history": ["2023: cittern repair"]},
    "Mercy Calloway": {"deposit_paid": 180.0, "history": []},
    "Ned Fairclough": {"deposit_paid": 100.0, "history": ["2020: 7-course lute in A"]},
}
LOTS = [
    {"lot": "Y-3", "species": "yew", "ribs": 15, "earmarked": "Jem Hesketh"},
    {"lot": "Y-4", "species": "yew", "ribs": 14, "earmarked": None},
    {"lot": "M-1", "species": "maple", "ribs": 13, "earmarked": None},
    {"lot": "P-2", "species": "plum", "ribs": 11, "earmarked": None},
    {"lot": "Y-5", "species": "yew", "ribs": 11, "earmarked": "Tobias Lark"},
]
ROSES = {"Venere": {"diameter_mm": 75, "hours": 14}, "Tieffenbrucker": {"diameter_mm": 68, "hours": 18},
         "Star of David": {"diameter_mm": 62, "hours": 9}, "Frei": {"diameter_mm": 80, "hours": 16}}
NOTES = ["G", "D", "A", "F", "C", "G", "F", "Eb", "D", "C", "Bb", "F#"]

INPUTS = [
    {"key": "lark", "text": "Commission for Tobias Lark: 8-course lute at pitch G, 60 cm string length, back of yew in 11 ribs, rose Venere."},
    {"key": "wray", "text": "Commission for Hester Wray: 10-course lute at pitch F#, 66 cm string length, back of maple in 13 ribs, rose Tieffenbrucker."},
    {"key": "hesketh", "text": "Commission for Jem Hesketh: 6-course lute at pitch A, 58 cm string length, back of yew in 15 ribs, rose Star of David."},
    {"key": "calloway", "text": "Commission for Mercy Calloway: 7-course lute at pitch Eb, 62 cm string length, back of plum in 11 ribs, rose Frei."},
    {"key": "fairclough", "text": "Commission for Ned Fairclough: 8-course lute at pitch A, 61 cm string length, back of yew in 13 ribs, rose Venere."},
]

SIGNED_FORMS = {re.search(r"for ([A-Z][a-z]+ [A-Z][a-z]+)", i["text"]).group(1): i["text"] for i in INPUTS}

CASES = [
    {"id": "zzzw_lute_01", "input": 4, "switch": "first_yew_lot", "fault_kind": "subagent_wrong_entity",
     "root": {"name": "generation fake-model", "occurrence": 4}, "failure": {"name": "draw_contract", "occurrence": 1},
     "description": "The wood buyer sub-agent reserves yew lot Y-3, which is earmarked for another client's commission."},
    {"id": "zzzw_lute_02", "input": 0, "switch": "rose_cm", "fault_kind": "format_drift",
     "root": {"name": "generation fake-model", "occurrence": 7}, "failure": {"name": "draw_contract", "occurrence": 1},
     "description": "The rose carver sub-agent reports the rose as 7.5 cm instead of in millimetres, and the desk reads a 7 mm rose."},
    {"id": "zzzw_lute_03", "input": 1, "switch": "form_natural", "fault_kind": "lossy_parsing",
     "root": {"name": "read_commission_form", "occurrence": 1}, "failure": {"name": "draw_contract", "occurrence": 1},
     "description": "The commission form reader keeps only the letter of the pitch, reading F# as F."},
    {"id": "zzzw_lute_04", "input": 3, "switch": "course_cut", "fault_kind": "truncated_result",
     "root": {"name": "course_plan", "occurrence": 1}, "failure": {"name": "draw_contract", "occurrence": 1},
     "description": "The course plan comes back without its last course, six of the seven asked for."},
    {"id": "zzzw_lute_05", "input": 2, "switch": "deposit_guess", "fault_kind": "hallucinated_value",
     "root": {"name": "generation fake-model", "occurrence": 8}, "failure": {"name": "draw_contract", "occurrence": 1},
     "description": "The desk's model writes a deposit of 150 into the pricing call though Jem Hesketh's file shows 120 paid."},
]


class Contract(BaseModel):
    client: str
    courses: int = Field(ge=6, le=14)
    pitch: str = Field(pattern=r"^[A-G](#|b)?$")
    string_length_mm: int = Field(ge=500, le=750)
    back_lot: str
    rose_diameter_mm: int = Field(ge=40, le=120)
    price: float
    deposit: float


@function_tool
def read_commission_form(form: str) -> dict:
    """Read a commission form into its fields."""
    pat = r"pitch ([A-G])" if SWITCH == "form_natural" else r"pitch ([A-G](?:#|b)?)"
    return {"client": re.search(r"for ([A-Z][a-z]+ [A-Z][a-z]+)", form).group(1),
            "courses": int(re.search(r"(\d+)-course", form).group(1)), "pitch": re.search(pat, form).group(1),
            "string_length_mm": int(re.search(r"(\d+) cm", form).group(1)) * 10,
            "back": re.search(r"back of (\w+)", form).group(1), "ribs": int(re.search(r"(\d+) ribs", form).group(1)),
            "rose": re.search(r"rose ([A-Za-z ]+)\.", form).group(1)}


@function_tool
def client_file(client: str) -> dict:
    """The client's file: deposit paid and earlier work."""
    return {"client": client, **CLIENTS[client]}


@function_tool
def course_plan(courses: int, pitch: str) -> dict:
    """Plan the courses of a lute from its top course pitch."""
    start = NOTES.index(pitch) if pitch in NOTES else 0
    plan = [{"course": i + 1, "note": NOTES[(start + i) % len(NOTES)], "strings": 1 if i == 0 else 2} for i in range(courses)]
    if SWITCH == "course_cut":
        plan = plan[:-1]
    return {"pitch": pitch, "courses": plan}


@function_tool
def timber_yard(species: str) -> dict:
    """Lots of tonewood in the yard for a species."""
    return {"lots": [lot for lot in LOTS if lot["species"] == species]}


@function_tool
def pattern_book(pattern: str) -> dict:
    """A rose pattern from the pattern book."""
    return {"pattern": pattern, **ROSES[pattern]}


@function_tool
def price_commission(courses: int, ribs: int, rose_hours: int, deposit: float) -> dict:
    """Price a commission and the balance after the deposit."""
    price = 900 + courses * 85 + ribs * 20 + rose_hours * 22
    return {"price": float(price), "deposit": deposit, "balance": float(price) - deposit}


@function_tool(failure_error_function=None)
def draw_contract(contract_json: str) -> dict:
    """Draw the commission contract; it is checked against the contract schema and the workshop's books."""
    c = Contract.model_validate_json(contract_json)
    signed = SIGNED_FORMS[c.client]
    signed_pitch = re.search(r"pitch ([A-G](?:#|b)?)", signed).group(1)
    signed_courses = int(re.search(r"(\d+)-course", signed).group(1))
    if c.pitch != signed_pitch or c.courses != signed_courses:
        raise ValueError(f"contract for {c.client} reads {c.courses}-course at {c.pitch}; the signed form says {signed_courses}-course at {signed_pitch}")
    paid = CLIENTS[c.client]["deposit_paid"]
    if abs(c.deposit - paid) > 0.01:
        raise ValueError(f"contract for {c.client} states a deposit of {c.deposit}, the ledger holds {paid}")
    lot = next(x for x in LOTS if x["lot"] == c.back_lot)
    if lot["earmarked"] not in (None, c.client):
        raise ValueError(f"lot {lot['lot']} is earmarked for {lot['earmarked']}, not {c.client}")
    return {"contract": f"LC-{c.client.split()[1]}-{c.courses}", "balance": c.price - c.deposit}


def _tool_results(msgs):
    names = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
    out = {}
    for m in msgs:
        if m.get("role") == "tool":
            try:
                val = ast.literal_eval(m["content"])
            except Exception:
                val = m["content"]
            out[names[m["tool_call_id"]]] = val
    return out


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    user = next(m["content"] for m in msgs if m["role"] == "user")
    res = _tool_results(msgs)
    if system.startswith("You buy tonewood"):
        if "timber_yard" not in res:
            return Reply(tool_calls=(tool_call("timber_yard", {"species": re.search(r"back of (\w+)", user).group(1)}),))
        client = re.search(r"for ([A-Z][a-z]+ [A-Z][a-z]+)", user).group(1)
        ribs = int(re.search(r"(\d+) ribs", user).group(1))
        lots = [x for x in res["timber_yard"]["lots"] if x["ribs"] >= ribs]
        if SWITCH != "first_yew_lot":
            lots = [x for x in lots if x["earmarked"] in (None, client)]
        return f"Reserved lot {lots[0]['lot']} ({lots[0]['species']}, {lots[0]['ribs']} ribs) for {client}."
    if system.startswith("You carve roses"):
        if "pattern_book" not in res:
            return Reply(tool_calls=(tool_call("pattern_book", {"pattern": re.search(r"rose ([A-Za-z ]+)$", user).group(1)}),))
        p = res["pattern_book"]
        if SWITCH == "rose_cm":
            return f"Rose {p['pattern']}: diameter {p['diameter_mm'] / 10} cm, {p['hours']} hours of carving."
        return f"Rose {p['pattern']}: diameter_mm {p['diameter_mm']}, {p['hours']} hours of carving."
    if system.startswith("You are the commission desk"):
        if "read_commission_form" not in res:
            client = re.search(r"for ([A-Z][a-z]+ [A-Z][a-z]+)", user).group(1)
            return Reply(tool_calls=(tool_call("read_commission_form", {"form": user}), tool_call("client_file", {"client": client})))
        form = res["read_commission_form"]
        if "course_plan" not in res:
            return Reply(tool_calls=(
                tool_call("course_plan", {"courses": form["courses"], "pitch": form["pitch"]}),
                tool_call("wood_buyer", {"input": f"for {form['client']}: back of {form['back']}, {form['ribs']} ribs"})))
        if "rose_carver" not in res:
            return Reply(tool_calls=(tool_call("rose_carver", {"input": f"for {form['client']}: rose {form['rose']}"}),))
        rose = res["rose_carver"]
        dia = int(re.search(r"diameter(?:_mm)? (\d+)", rose).group(1))
        hours = int(re.search(r"(\d+) hours", rose).group(1))
        deposit = res["client_file"]["deposit_paid"]
        if "price_commission" not in res:
            if SWITCH == "deposit_guess":
                deposit = 150.0
            return Reply(tool_calls=(tool_call("price_commission", {"courses": form["courses"], "ribs": form["ribs"],
                                                                    "rose_hours": hours, "deposit": deposit}),))
        if "draw_contract" not in res:
            price = res["price_commission"]
            lot = re.search(r"lot (\S+)", res["wood_buyer"]).group(1)
            c = {"client": form["client"], "courses": len(res["course_plan"]["courses"]), "pitch": res["course_plan"]["pitch"],
                 "string_length_mm": form["string_length_mm"], "back_lot": lot, "rose_diameter_mm": dia,
                 "price": price["price"], "deposit": price["deposit"]}
            return Reply(tool_calls=(tool_call("draw_contract", {"contract_json": json.dumps(c)}),))
        return f"Contract {res['draw_contract']['contract']} drawn."
    return "?"


async def _go(client, agent, text):
    try:
        await Runner.run(agent, text, run_config=RunConfig(workflow_name=NAME), max_turns=10)
    finally:
        await client.close()


def record(server, inp, path):
    server.use(policy)
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    wood = Agent(name="wood_buyer", model=model, tools=[timber_yard],
                 instructions="You buy tonewood for the workshop's commissions. Reserve a lot with enough ribs.")
    rose = Agent(name="rose_carver", model=model, tools=[pattern_book],
                 instructions="You carve roses. Look up the pattern and give its diameter and hours.")
    desk = Agent(name="commission_desk", model=model, instructions="You are the commission desk of a lute workshop.",
                 tools=[read_commission_form, client_file, course_plan,
                        wood.as_tool(tool_name="wood_buyer", tool_description="Reserve tonewood for a back."),
                        rose.as_tool(tool_name="rose_carver", tool_description="Plan the carved rose."),
                        price_commission, draw_contract])
    set_trace_processors([TrajdebugProcessor(path=str(path), name=NAME, task=f"lute commission: {inp['text']}")])
    try:
        asyncio.run(_go(client, desk, inp["text"]))
    except Exception:
        pass
    finally:
        set_trace_processors([])
