"""Rocking-horse restorer (openai_agents route): a counter agent with parallel lookups that hands off to the carver
or the painter; the workshop agent prices parts, consults a dappling specialist run as a tool, files a job card in
a memory tool and issues the estimate through a tool that refuses an estimate it cannot stand behind."""
from __future__ import annotations

import asyncio
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor

NAME = "rocking-horse-restoration"
ROUTE = "openai_agents"
DOMAIN = "a rocking-horse restorer"
SHAPE = "counter agent (parallel register+survey lookups) -> hand-off to carver or painter -> parts pricing, dappling specialist agent-as-tool, job-card memory, estimate tool"
SWITCH = None

INPUTS = [
    "Horse RH-1907 (Ayres, 1907) came in with a split foreleg and a flaking coat. Owner: Mrs Pell.",
    "Horse RH-1932 (Lines Bros, 1932): mane and tail gone, paint rubbed through. Owner: D. Okoro.",
    "Horse RH-1885 (Collinson, 1885): cracked bow rocker and a loose ear. Owner: the Hartley family.",
    "Horse RH-1951 (Haddon, 1951): tack missing, glass eyes lost. Owner: Mr Vance.",
    "Horse RH-1899 (Ayres, 1899): back leg snapped at the hock, saddle torn. Owner: Greta Sund.",
]
REGISTER = {
    "RH-1907": {"maker": "Ayres", "hands": 11, "last_visit": 2021, "coat": "dapple grey"},
    "RH-1932": {"maker": "Lines Bros", "hands": 9, "last_visit": 2016, "coat": "dapple grey"},
    "RH-1885": {"maker": "Collinson", "hands": 12, "last_visit": 2010, "coat": "bay"},
    "RH-1951": {"maker": "Haddon", "hands": 8, "last_visit": 2024, "coat": "skewbald"},
    "RH-1899": {"maker": "Ayres", "hands": 11, "last_visit": 2019, "coat": "dapple grey"},
}
SURVEY = {
    "RH-1907": {"carving": ["foreleg"], "paint": ["coat"], "tack": []},
    "RH-1932": {"carving": [], "paint": ["coat"], "tack": ["mane", "tail"]},
    "RH-1885": {"carving": ["bow rocker", "ear"], "paint": [], "tack": []},
    "RH-1951": {"carving": [], "paint": [], "tack": ["bridle", "saddle", "glass eyes"]},
    "RH-1899": {"carving": ["hind leg"], "paint": [], "tack": ["saddle"]},
}
PRICES = {"foreleg": 240, "hind leg": 260, "bow rocker": 380, "ear": 60, "coat": 420, "mane": 95, "tail": 70,
          "bridle": 55, "saddle": 140, "glass eyes": 48}
DAPPLE = {"RH-1907": {"pattern": "Ayres round dapple", "hours": 22}, "RH-1932": {"pattern": "Lines stencil", "hours": 14},
          "RH-1899": {"pattern": "Ayres round dapple", "hours": 20}, "RH-1885": {"pattern": "none", "hours": 0},
          "RH-1951": {"pattern": "none", "hours": 0}}
CARDS: dict = {}


@function_tool
def horse_register(horse_id: str) -> str:
    """Maker, size in hands, last visit and coat of a registered horse."""
    return json.dumps({"horse_id": horse_id} | REGISTER[horse_id])


@function_tool
def condition_survey(horse_id: str) -> str:
    """The bench survey of what needs carving, painting and new tack."""
    s = dict(SURVEY[horse_id])
    if SWITCH == "last-visit" and horse_id == "RH-1885":
        s = {"carving": ["ear"], "paint": [], "tack": [], "surveyed": 2010}
    return json.dumps({"horse_id": horse_id} | s)


@function_tool
def price_parts(horse_id: str, items: list[str]) -> str:
    """Workshop price per item of work."""
    priced = {}
    for item in items:
        try:
            if SWITCH == "tack-supplier" and item == "mane":
                raise ConnectionError("horsehair supplier catalogue unreachable")
            priced[item] = PRICES[item]
        except ConnectionError:
            continue
    return json.dumps({"horse_id": horse_id, "prices": priced, "total": sum(priced.values())})


@function_tool
def paint_archive(horse_id: str) -> str:
    """The original dappling pattern and repaint hours recorded for a horse."""
    return json.dumps({"horse_id": horse_id} | DAPPLE[horse_id])


@function_tool
def file_job_card(horse_id: str, owner: str, work: list[str], total: int, paint_hours: int) -> str:
    """Write the job card for the bench."""
    earlier = [h for h in CARDS if h != horse_id]
    on_card = owner
    if SWITCH == "card-owner" and earlier:
        on_card = CARDS[earlier[-1]]["owner"]
    CARDS[horse_id] = {"owner": on_card, "work": work, "total": total, "paint_hours": paint_hours}
    return json.dumps({"filed": horse_id})


def _issue(horse_id: str, owner: str) -> str:
    card = CARDS[horse_id]
    survey = SURVEY[horse_id]
    needed = survey["carving"] + survey["paint"] + survey["tack"]
    missing = [w for w in needed if w not in card["work"]]
    if missing:
        raise ValueError(f"estimate for {horse_id} leaves out {', '.join(missing)} found at the bench")
    if sum(PRICES[w] for w in card["work"]) != card["total"]:
        raise ValueError(f"estimate for {horse_id}: total {card['total']} is not the sum of its items")
    coat = REGISTER[horse_id]["coat"]
    if "coat" in card["work"] and coat.startswith("dapple") and card["paint_hours"] < 10:
        raise ValueError(f"estimate for {horse_id}: {card['paint_hours']} h cannot repaint a {coat} coat")
    if card["owner"] != owner:
        raise ValueError(f"estimate for {horse_id} made out to {card['owner']}, the horse belongs to {owner}")
    weeks = 2 + len(card["work"])
    return json.dumps({"horse_id": horse_id, "owner": owner, "total": card["total"], "weeks": weeks})


issue_estimate = function_tool(_issue, name_override="issue_estimate", failure_error_function=None,
                               description_override="Issue the signed estimate from the job card.")


def _tool_results(msgs):
    names = {}
    for m in msgs:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
    out = {}
    for m in msgs:
        if m["role"] == "tool":
            out.setdefault(names.get(m["tool_call_id"], "?"), []).append(m["content"])
    return out


def brain(request):
    from trajdebug.testing import Reply, tool_call
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    user = next(m["content"] for m in msgs if m["role"] == "user")
    res = _tool_results(msgs)
    if system.startswith("You look up a horse's original paintwork"):
        horse = user.split("horse ", 1)[1].split(" ", 1)[0].strip(".,")
        if "paint_archive" not in res:
            return Reply(tool_calls=(tool_call("paint_archive", {"horse_id": horse}),))
        rec = json.loads(res["paint_archive"][0])
        return json.dumps({"horse_id": rec["horse_id"], "pattern": rec["pattern"], "hours": rec["hours"]})
    horse = user.split("Horse ", 1)[1].split(" ", 1)[0]
    owner = user.split("Owner: ", 1)[1].rstrip(".")
    if system.startswith("You are the front counter"):
        if "condition_survey" not in res:
            return Reply(tool_calls=(tool_call("horse_register", {"horse_id": horse}), tool_call("condition_survey", {"horse_id": horse})))
        survey = json.loads(res["condition_survey"][0])
        target = "carver" if survey["carving"] else "painter"
        if SWITCH == "handoff" and horse == "RH-1899":
            target = "painter"
        return Reply(tool_calls=(tool_call(f"transfer_to_{target}", {}),))
    survey = json.loads(res["condition_survey"][0])
    reg = json.loads(res["horse_register"][0])
    work = survey["carving"] + survey["paint"] + survey["tack"]
    if system.startswith("You are the painter"):
        work = survey["paint"] + survey["tack"]
    if "price_parts" not in res:
        return Reply(tool_calls=(tool_call("price_parts", {"horse_id": horse, "items": work}),))
    if "dappling_specialist" not in res:
        ask = horse
        if SWITCH == "sibling" and horse == "RH-1907":
            ask = "RH-1885"
        return Reply(tool_calls=(tool_call("dappling_specialist", {"input": f"Original paintwork of horse {ask} ({reg['maker']})."}),))
    if "file_job_card" not in res:
        priced = json.loads(res["price_parts"][0])
        paint = json.loads(res["dappling_specialist"][0])
        return Reply(tool_calls=(tool_call("file_job_card", {"horse_id": horse, "owner": owner, "work": list(priced["prices"]),
                                                             "total": priced["total"], "paint_hours": paint["hours"]}),))
    if "issue_estimate" not in res:
        return Reply(tool_calls=(tool_call("issue_estimate", {"horse_id": horse, "owner": owner}),))
    est = json.loads(res["issue_estimate"][0])
    return f"Estimate for {horse}: {est['total']} GBP, ready in {est['weeks']} weeks."


def agents_for(model):
    specialist = Agent(name="dappling_specialist", model=model, tools=[paint_archive],
                       instructions="You look up a horse's original paintwork and answer with JSON: pattern and hours.")
    as_tool = specialist.as_tool(tool_name="dappling_specialist", tool_description="Original dappling and repaint hours of a horse.")
    shop_tools = [price_parts, as_tool, file_job_card, issue_estimate]
    carver = Agent(name="carver", model=model, tools=shop_tools,
                   instructions="You are the carver. Price the bench work, ask the dappling specialist, file the job card, issue the estimate.")
    painter = Agent(name="painter", model=model, tools=shop_tools,
                    instructions="You are the painter. Price the paint and tack work, ask the dappling specialist, file the job card, issue the estimate.")
    counter = Agent(name="counter", model=model, tools=[horse_register, condition_survey], handoffs=[carver, painter],
                    instructions="You are the front counter. Look the horse up and survey it, then hand it to the carver or the painter.")
    return counter


async def _run(inp, server):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client)
    set_default_openai_api("chat_completions")
    try:
        await Runner.run(agents_for(server.model), inp, run_config=RunConfig(workflow_name=NAME), max_turns=20)
    finally:
        await client.close()


def record(inp, path, server):
    horse = inp.split("Horse ", 1)[1].split(" ", 1)[0]
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"restoration estimate for {horse}")])
    try:
        asyncio.run(_run(inp, server))
    finally:
        set_trace_processors([])


CASES = [
    {"id": "horse-hind-leg-painter", "input": 4, "switch": "handoff", "kind": "wrong_routing",
     "root": ("generation fake-model", 2), "root_holds": "transfer_to_painter", "failure": ("issue_estimate", 1),
     "description": "The counter model hands RH-1899, whose hind leg needs carving, to the painter instead of the carver."},
    {"id": "horse-specialist-sibling", "input": 0, "switch": "sibling", "kind": "subagent_wrong_entity",
     "root": ("generation fake-model", 4), "root_holds": "RH-1885", "failure": ("issue_estimate", 1),
     "description": "The carver asks the dappling specialist about RH-1885 instead of RH-1907, so the job card carries 0 repaint hours for a dapple grey coat."},
    {"id": "horse-old-survey", "input": 2, "switch": "last-visit", "kind": "stale_data",
     "root": ("condition_survey", 1), "failure": ("issue_estimate", 1),
     "description": "The condition survey tool answers with the 2010 visit's findings, which miss the cracked bow rocker found on the bench now."},
    {"id": "horse-mane-unpriced", "input": 1, "switch": "tack-supplier", "kind": "swallowed_error",
     "root": ("price_parts", 1), "failure": ("issue_estimate", 1),
     "description": "Pricing skips the mane when the horsehair catalogue does not answer and reports the rest as a complete price list."},
    {"id": "horse-card-owner", "input": 3, "switch": "card-owner", "kind": "bad_memory_write",
     "root": ("file_job_card", 1), "failure": ("issue_estimate", 1),
     "description": "Filing the job card for RH-1951 stores the owner of the horse filed before it instead of Mr Vance."},
]

