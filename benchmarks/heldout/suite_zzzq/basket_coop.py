"""Basketry cooperative: order desk (openai_agents route). A triage agent hands off to a commission desk
or a wholesale desk; the desk calls willow stock and the weavers' roster in parallel, asks a dye-advisor
sub-agent (an agent used as a tool) for a dye recipe, prices the basket and books the weaving."""
import asyncio
import json

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "basket-coop-desk"
ROUTE = "openai_agents"
DOMAIN = "basketry cooperative"
SHAPE = "Agents SDK: triage hand-off to one of two desks, parallel tool calls, an agent-as-tool sub-agent, booking tool that validates"
ACTIVE = None

ORDERS = {
    "BK-701": {"kind": "commission", "style": "frame", "willow": "brown", "bundles": 3, "colour": "walnut", "deadline_week": 6},
    "BK-702": {"kind": "wholesale", "style": "stake-and-strand", "willow": "buff", "bundles": 20, "colour": "natural", "deadline_week": 12},
    "BK-703": {"kind": "commission", "style": "randed", "willow": "green", "bundles": 2, "colour": "indigo", "deadline_week": 5},
    "BK-704": {"kind": "commission", "style": "frame", "willow": "buff", "bundles": 4, "colour": "oak", "deadline_week": 7},
    "BK-705": {"kind": "wholesale", "style": "randed", "willow": "brown", "bundles": 15, "colour": "natural", "deadline_week": 14},
}
STOCK = {"brown": 22, "buff": 30, "green": 5}
ROSTER = [
    {"weaver": "Maud", "styles": ["stake-and-strand"], "free_hours": 30},
    {"weaver": "Ivo", "styles": ["randed", "stake-and-strand"], "free_hours": 12},
    {"weaver": "Tamsin", "styles": ["frame"], "free_hours": 9},
    {"weaver": "Colm", "styles": ["frame", "randed"], "free_hours": 26},
    {"weaver": "Edda", "styles": ["randed"], "free_hours": 40},
]
DYES = {"walnut": "DY-WAL-2", "oak": "DY-OAK-1", "indigo": "DY-IND-3", "natural": "none"}
BOOKED = []


@function_tool
def willow_stock(variety: str) -> str:
    """Bundles of a willow variety in the cooperative's store."""
    return json.dumps({"variety": variety, "bundles": STOCK[variety]})


@function_tool
def weavers_roster(style: str) -> str:
    """Weavers of the cooperative with their styles and free hours this month."""
    try:
        if ACTIVE == "swallowed_error" and style == "randed":
            raise TimeoutError("roster service did not answer in 2 s")
        rows = [dict(r) for r in ROSTER]
    except TimeoutError:
        rows = [{"weaver": "Maud", "styles": ["stake-and-strand"], "free_hours": 30}]
    if ACTIVE == "truncated_result":
        rows = rows[:3]
    return json.dumps({"style": style, "weavers": rows})


@function_tool
def price_basket(style: str, bundles: int, weaver: str) -> str:
    """Price of a basket order."""
    return json.dumps({"style": style, "price": round(bundles * 14.5 + {"frame": 60, "randed": 45}.get(style, 30), 2)})


def _book(order_ref: str, weaver: str, willow: str, bundles: int, dye: str, start_week: int) -> str:
    o = ORDERS[order_ref]
    w = next((r for r in ROSTER if r["weaver"] == weaver), None)
    if w is None or o["style"] not in w["styles"]:
        raise ValueError(f"{weaver} does not weave {o['style']} baskets")
    if o["bundles"] * 1.5 > w["free_hours"]:
        raise ValueError(f"{weaver} has {w['free_hours']} free hours, order {order_ref} needs {o['bundles'] * 1.5}")
    if willow != o["willow"] or STOCK[willow] < o["bundles"]:
        raise ValueError(f"order {order_ref} needs {o['bundles']} bundles of {o['willow']} willow, booking holds {willow}")
    if dye != DYES[o["colour"]]:
        raise ValueError(f"dye {dye} is not the {o['colour']} finish of order {order_ref}")
    if start_week + (2 if o["kind"] == "commission" else 3) > o["deadline_week"]:
        raise ValueError(f"order {order_ref} would finish after week {o['deadline_week']}")
    BOOKED.append(order_ref)
    return json.dumps({"booked": order_ref, "weaver": weaver, "week": start_week})


book_weaving = function_tool(_book, name_override="book_weaving", failure_error_function=None,
                             description_override="Book a weaving slot for an order.")


def _tool_results(messages):
    out = {}
    calls = {}
    for m in messages:
        if m.get("role") == "assistant":
            for tc in m.get("tool_calls") or []:
                calls[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            out[calls.get(m["tool_call_id"], "?")] = m["content"]
    return out


def _order_of(messages):
    for m in messages:
        if m.get("role") == "user" and "BK-" in str(m.get("content")):
            c = str(m["content"])
            i = c.index("BK-")
            return c[i:i + 6]
    return None


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
    ref = _order_of(msgs)
    if system.startswith("You advise on dyes"):
        colour = msgs[-1]["content"].split("colour:", 1)[1].strip().split()[0]
        if ACTIVE == "subagent_wrong_entity" and colour == "walnut":
            colour = "oak"
        return json.dumps({"colour": colour, "recipe": DYES[colour]})
    o = ORDERS[ref]
    if system.startswith("You triage"):
        if any(m.get("role") == "tool" for m in msgs):
            return "Handed over."
        desk = "commission_desk" if o["kind"] == "commission" else "wholesale_desk"
        if ACTIVE == "wrong_routing" and ref == "BK-703":
            desk = "wholesale_desk"
        return Reply(tool_calls=(tool_call(f"transfer_to_{desk}", {}),))
    res = _tool_results(msgs)
    if "willow_stock" not in res:
        variety = o["willow"]
        if ACTIVE == "wrong_tool_args" and ref == "BK-704":
            variety = "brown"
        return Reply(tool_calls=(tool_call("willow_stock", {"variety": variety}),
                                 tool_call("weavers_roster", {"style": o["style"]})))
    if "dye_advisor" not in res:
        return Reply(tool_calls=(tool_call("dye_advisor", {"input": f"order {ref} colour: {o['colour']}"}),))
    roster = json.loads(res["weavers_roster"])["weavers"]
    able = [r for r in roster if o["style"] in r["styles"]] or roster
    weaver = max(able, key=lambda r: r["free_hours"])["weaver"]
    if "price_basket" not in res:
        return Reply(tool_calls=(tool_call("price_basket", {"style": o["style"], "bundles": o["bundles"], "weaver": weaver}),))
    if "book_weaving" not in res:
        stock = json.loads(res["willow_stock"])
        start = 2 if system.startswith("You run the commission") else 8
        return Reply(tool_calls=(tool_call("book_weaving", {
            "order_ref": ref, "weaver": weaver, "willow": stock["variety"], "bundles": o["bundles"],
            "dye": json.loads(res["dye_advisor"])["recipe"], "start_week": start}),))
    booked = json.loads(res["book_weaving"])
    return f"Order {ref} booked with {booked['weaver']} from week {booked['week']}."


def run_one(server, inp, path):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    settings = ModelSettings(parallel_tool_calls=True)
    dye = Agent(name="dye_advisor", instructions="You advise on dyes: answer the recipe for the colour as JSON.", model=model)
    tools = [willow_stock, weavers_roster, price_basket, book_weaving,
             dye.as_tool(tool_name="dye_advisor", tool_description="Dye recipe for a colour.")]
    commission = Agent(name="commission_desk", instructions="You run the commission desk: check stock and weavers, then book.",
                       model=model, tools=tools, model_settings=settings)
    wholesale = Agent(name="wholesale_desk", instructions="You run the wholesale desk: check stock and weavers, then book in the next batch.",
                      model=model, tools=tools, model_settings=settings)
    triage = Agent(name="triage", instructions="You triage basket orders to the right desk.", model=model,
                   handoffs=[commission, wholesale])
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"book basket order {inp['ref']}")])
    async def main():
        try:
            return await Runner.run(triage, f"Please book order {inp['ref']}: {inp['note']}",
                                    run_config=RunConfig(workflow_name=NAME))
        finally:
            await client.close()

    try:
        asyncio.run(main())
    finally:
        set_trace_processors([])


INPUTS = [
    {"ref": "BK-701", "note": "a walnut-stained frame basket"},
    {"ref": "BK-702", "note": "twenty stake-and-strand log baskets for the shop"},
    {"ref": "BK-703", "note": "an indigo randed market basket"},
    {"ref": "BK-704", "note": "an oak-finish frame basket in buff willow"},
    {"ref": "BK-705", "note": "fifteen randed baskets, natural"},
]


def _c(n, kind, inp, root, occ, rkind, failure, desc):
    return {"id": f"zzzq-basket-{n}", "kind": kind, "switch": kind, "input": inp,
            "root": {"name": root, "occurrence": occ, "kind": rkind}, "failure": failure, "description": desc}


G = "generation fake-model"
CASES = [
    _c(1, "wrong_routing", 2, G, 1, "llm", "book_weaving",
       "The triage model hands a commission order to the wholesale desk, which books it in the later batch."),
    _c(2, "wrong_tool_args", 3, G, 2, "llm", "book_weaving",
       "The desk model asks the stock tool for brown willow when the order is for buff willow."),
    _c(3, "swallowed_error", 2, "weavers_roster", 1, "tool", "book_weaving",
       "The roster tool hides a timeout of the roster service and answers a one-weaver fallback list."),
    _c(4, "truncated_result", 4, "weavers_roster", 1, "tool", "book_weaving",
       "The roster tool returns only the first three weavers, leaving out the one with enough free hours."),
    _c(5, "subagent_wrong_entity", 0, G, 4, "llm", "book_weaving",
       "The dye-advisor sub-agent answers the recipe for oak when asked about walnut."),
]
