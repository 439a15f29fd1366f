"""Felting studio commissions (openai_agents route): one agent loops over the pieces, parallel pattern/shrinkage lookups, memory tools (remember/recall), a wool order API and a final confirmation."""
import ast
import asyncio
import json

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "felt-commission-planner"
ROUTE = "openai_agents"
DOMAIN = "felting studio"
SHAPE = "one agent loop per piece: parallel pattern + shrinkage -> remember plan; then recall -> wool order API -> confirm"
SWITCH = set()

SHRINK = {"merino": 0.30, "corriedale": 0.40, "bergschaf": 0.35, "gotland": 0.25}
GSM = {"slippers": 900, "vessel": 600, "wall hanging": 400, "scarf": 150, "hat": 500}
MEMORY = {}
CREDIT_LIMIT_G = 6000

INPUTS = [
    {"client": "Saoirse Byrne", "pieces": [["slippers", "bergschaf", 26, 10], ["hat", "merino", 58, 22]]},
    {"client": "Gallery Nord", "pieces": [["wall hanging", "gotland", 120, 80], ["vessel", "corriedale", 40, 25],
                                           ["vessel", "corriedale", 30, 20], ["scarf", "merino", 180, 30]]},
    {"client": "Ottilie Marsh", "pieces": [["scarf", "merino", 160, 25], ["scarf", "merino", 160, 25], ["hat", "bergschaf", 56, 20]]},
    {"client": "Hearth & Loom", "pieces": [["slippers", "corriedale", 24, 10], ["slippers", "corriedale", 27, 11],
                                            ["slippers", "bergschaf", 29, 11], ["slippers", "bergschaf", 31, 12],
                                            ["hat", "gotland", 58, 22]]},
    {"client": "Kit Abernethy", "pieces": [["vessel", "gotland", 35, 30], ["wall hanging", "merino", 90, 60]]},
]
CASES = [
    {"id": "zzzu_felting_recall", "input": 3, "switch": "recall_page", "kind": "truncated_result",
     "root": ("recall", 1), "failure": "confirm_commission",
     "desc": "Recalling the piece plans returned only the first page of three entries, so wool was ordered for three of the five slippers and hats."},
    {"id": "zzzu_felting_shrink", "input": 1, "switch": "shrink_arg", "kind": "wrong_tool_args",
     "root": ("generation fake-model", 3), "failure": "confirm_commission",
     "desc": "For the first corriedale vessel the model asked for merino's shrinkage, so its template was cut too small to felt down to 40 cm."},
    {"id": "zzzu_felting_memory", "input": 0, "switch": "memory_kept", "kind": "context_pollution",
     "root": ("recall", 1), "failure": "order_wool",
     "desc": "Recall also returned the previous client's wall-hanging plans left in the studio memory, and the combined wool order ran over the supplier's credit limit."},
    {"id": "zzzu_felting_percent", "input": 2, "switch": "shrink_percent", "kind": "unit_error",
     "root": ("shrinkage", 3), "failure": "order_wool",
     "desc": "The shrinkage table answered bergschaf as 35 (percent) instead of 0.35, giving the hat a negative template and wool weight."},
    {"id": "zzzu_felting_notes", "input": 4, "switch": "note_text", "kind": "format_drift",
     "root": ("generation fake-model", 4), "failure": "order_wool",
     "desc": "On the wall hanging the model stored the template as a '112 x 75 cm' text instead of the numeric fields it used before, which the wool order could not weigh."},
]


def _results(msgs):
    names, out = {}, []
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = (tc["function"]["name"], json.loads(tc["function"]["arguments"]))
        if m["role"] == "tool":
            try:
                val = ast.literal_eval(m["content"])
            except Exception:
                val = m["content"]
            out.append((names[m["tool_call_id"]][0], names[m["tool_call_id"]][1], val))
    return out


def policy(request):
    msgs = request.body["messages"]
    job = json.loads([m for m in msgs if m["role"] == "user"][0]["content"].split("\n", 1)[1])
    res = _results(msgs)
    pieces = job["pieces"]
    remembered = [r for r in res if r[0] == "remember"]
    looked = [r for r in res if r[0] == "pattern_for"]
    i = len(remembered)
    if i < len(pieces):
        item, wool, length, width = pieces[i]
        if len(looked) == i:
            ask = wool
            if "shrink_arg" in SWITCH and i == 1:
                ask = "merino"
            return Reply(tool_calls=(tool_call("pattern_for", {"item": item, "length_cm": length, "width_cm": width}),
                                     tool_call("shrinkage", {"wool": ask})))
        pat = looked[-1][2]
        rate = [r for r in res if r[0] == "shrinkage"][-1][2]["rate"]
        tl = round(pat["length_cm"] / (1 - rate), 1)
        tw = round(pat["width_cm"] / (1 - rate), 1)
        grams = round(tl * tw / 10000 * pat["gsm"] / (1 - rate), 0)
        value = {"item": item, "wool": wool, "template_cm": [tl, tw], "grams": grams}
        if "note_text" in SWITCH and item == "wall hanging":
            value = {"item": item, "wool": wool, "template_cm": f"{tl:.0f} x {tw:.0f} cm", "grams": f"{grams:.0f} g"}
        return Reply(tool_calls=(tool_call("remember", {"key": f"plan:{job['client']}:{i + 1}", "value": json.dumps(value)}),))
    recalled = [r for r in res if r[0] == "recall"]
    if not recalled:
        return Reply(tool_calls=(tool_call("recall", {"prefix": "plan:"}),))
    plans = recalled[0][2]
    ordered = [r for r in res if r[0] == "order_wool"]
    if not ordered:
        lines = {}
        for p in plans:
            g = p["grams"]
            lines[p["wool"]] = lines.get(p["wool"], 0) + g if isinstance(g, (int, float)) else g
        return Reply(tool_calls=(tool_call("order_wool", {"client": job["client"], "lines": json.dumps(lines)}),))
    confirmed = [r for r in res if r[0] == "confirm_commission"]
    if not confirmed:
        return Reply(tool_calls=(tool_call("confirm_commission", {"client": job["client"], "plans": json.dumps(plans)}),))
    return f"Commission for {job['client']} planned: {len(plans)} pieces, wool ordered."


@function_tool(failure_error_function=None)
def pattern_for(item: str, length_cm: float, width_cm: float) -> dict:
    """Finished size and felt weight for a piece."""
    return {"item": item, "length_cm": length_cm, "width_cm": width_cm, "gsm": GSM[item]}


@function_tool(failure_error_function=None)
def shrinkage(wool: str) -> dict:
    """Wet-felting shrinkage of a wool, from the studio's sample book."""
    rate = SHRINK[wool]
    if "shrink_percent" in SWITCH and wool == "bergschaf":
        rate = 35
    return {"wool": wool, "rate": rate}


@function_tool(failure_error_function=None)
def remember(key: str, value: str) -> str:
    """Keep a note in the studio memory."""
    MEMORY[key] = json.loads(value)
    return f"kept {key}"


@function_tool(failure_error_function=None)
def recall(prefix: str) -> list:
    """Notes in the studio memory under a prefix."""
    rows = [v for k, v in MEMORY.items() if k.startswith(prefix)]
    if "recall_page" in SWITCH:
        rows = rows[:3]
    return rows


@function_tool(failure_error_function=None)
def order_wool(client: str, lines: str) -> dict:
    """Order wool tops from the supplier for a commission."""
    wanted = json.loads(lines)
    for wool, grams in wanted.items():
        if not isinstance(grams, (int, float)) or grams <= 0:
            raise ValueError(f"supplier API refused the order: {wool} quantity {grams!r} is not a positive weight in grams")
    if sum(wanted.values()) > CREDIT_LIMIT_G:
        raise PermissionError(f"supplier API refused the order: {sum(wanted.values()):.0f} g is over the {CREDIT_LIMIT_G} g account limit")
    return {"client": client, "order": wanted, "delivery_days": 4}


@function_tool(failure_error_function=None)
def confirm_commission(client: str, plans: str) -> dict:
    """Check the plans against the commission book before work starts."""
    plans = json.loads(plans)
    book = BOOK[client]
    if len(plans) != len(book):
        raise ValueError(f"commission book lists {len(book)} pieces for {client}; {len(plans)} planned")
    for (item, wool, length, width), p in zip(book, plans):
        finished = round(p["template_cm"][0] * (1 - SHRINK[wool]), 1)
        if abs(finished - length) > 0.05 * length:
            raise ValueError(f"{item} in {wool}: template {p['template_cm'][0]} cm felts to {finished} cm, commissioned {length} cm")
    return {"client": client, "confirmed": len(plans)}


BOOK = {i["client"]: i["pieces"] for i in INPUTS}
LAST_CLIENT = {"plan:Gallery Nord:1": {"item": "wall hanging", "wool": "gotland", "template_cm": [160.0, 106.7], "grams": 9100}}


async def _go(server, inp):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    agent = Agent(name="studio_planner", model=model, model_settings=ModelSettings(parallel_tool_calls=True),
                  instructions="You plan felting commissions piece by piece, keep notes, order wool and confirm.",
                  tools=[pattern_for, shrinkage, remember, recall, order_wool, confirm_commission])
    try:
        await Runner.run(agent, "Commission:\n" + json.dumps(inp), max_turns=40, run_config=RunConfig(workflow_name=NAME))
    finally:
        await client.close()


def run_one(server, inp, path):
    MEMORY.clear()
    if "memory_kept" in SWITCH:
        MEMORY.update(LAST_CLIENT)
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"felt commission for {inp['client']}")])
    try:
        asyncio.run(_go(server, inp))
    except Exception:
        pass
    finally:
        set_trace_processors([])
