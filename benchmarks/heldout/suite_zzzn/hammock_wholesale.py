"""Hammock weaver: wholesale order desk (route: openai_agents, Chat Completions)."""
import asyncio
import json

from agents import (Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client)
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "hammock-wholesale-desk"
ROUTE = "openai_agents"
DOMAIN = "hammock weaver's wholesale orders"
SHAPE = "one tool-calling agent: parallel catalogue and loom lookups, then freight quote, then order placement that rejects"
SWITCH = None
SERVER = None

CATALOGUE = {"HM-CORD": {"name": "cotton cord hammock", "unit_eur": 38, "per_bale": 6},
             "HM-SAIL": {"name": "sailcloth hammock", "unit_eur": 52, "per_bale": 4},
             "HM-MACR": {"name": "macrame hammock", "unit_eur": 61, "per_bale": 4},
             "HM-CHLD": {"name": "child's hammock", "unit_eur": 22, "per_bale": 10}}
LOOM_WEEKS = {"HM-CORD": 30, "HM-SAIL": 20, "HM-MACR": 12, "HM-CHLD": 26}
INPUTS = [
    {"task": "wholesale: Harbour Lane Stores, 24 cotton cord", "shop": "Harbour Lane Stores", "lines": [["HM-CORD", 24]], "region": "coast"},
    {"task": "wholesale: Pine & Porch, 8 sailcloth + 20 child's", "shop": "Pine & Porch", "lines": [["HM-SAIL", 8], ["HM-CHLD", 20]], "region": "inland"},
    {"task": "wholesale: Garden Room Co, 12 macrame", "shop": "Garden Room Co", "lines": [["HM-MACR", 12]], "region": "inland"},
    {"task": "wholesale: The Veranda, 18 cotton cord + 4 sailcloth", "shop": "The Veranda", "lines": [["HM-CORD", 18], ["HM-SAIL", 4]], "region": "coast"},
    {"task": "wholesale: Nook & Hollow, 30 child's", "shop": "Nook & Hollow", "lines": [["HM-CHLD", 30]], "region": "islands"},
]
CASES = [
    dict(id="zn16", input=0, switch="dozens", kind="wrong_tool_args", root=("generation fake-model", 3), failure=None,
         desc="The model asked for 24 dozen cotton cord hammocks when the shop ordered 24 hammocks."),
    dict(id="zn17", input=2, switch="unitprice", kind="hallucinated_value", root=("generation fake-model", 3), failure=None,
         desc="The model quoted macrame hammocks at 16 EUR each, a price no catalogue answer gave."),
    dict(id="zn18", input=1, switch="cut", kind="truncated_result", root=("catalogue_search", 1), failure=None,
         desc="The catalogue search returned only its first two entries, leaving out the child's hammock."),
    dict(id="zn19", input=3, switch="region", kind="tool_ignores_argument", root=("freight_quote", 1), failure=None,
         desc="The freight quote priced every order as inland whatever region it was asked for."),
    dict(id="zn20", input=4, switch="loom", kind="swallowed_error", root=("loom_capacity", 1), failure=None,
         desc="The loom schedule lookup failed, was caught, and answered as 40 hammocks weavable."),
]


def _results(msgs):
    out = {}
    ids = {}
    for m in msgs:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                ids[c["id"]] = c["function"]["name"]
        if m.get("role") == "tool":
            out.setdefault(ids.get(m["tool_call_id"]), []).append(m["content"])
    return out


def policy(request):
    msgs = request.body["messages"]
    order = json.loads([m for m in msgs if m.get("role") == "user"][0]["content"])
    done = _results(msgs)
    if "catalogue_search" not in done:
        calls = [tool_call("catalogue_search", {"query": "hammocks"})]
        calls += [tool_call("loom_capacity", {"sku": sku}) for sku, _ in order["lines"]]
        return Reply(tool_calls=tuple(calls))
    if "freight_quote" not in done:
        return Reply(tool_calls=(tool_call("freight_quote", {"bales": sum(q for _, q in order["lines"]) // 4 + 1,
                                                              "region": order["region"]}),))
    if "place_order" not in done:
        import ast
        catalogue = ast.literal_eval(done["catalogue_search"][0])
        freight = ast.literal_eval(done["freight_quote"][0])
        weavable = {d["sku"]: d["weavable"] for d in map(ast.literal_eval, done["loom_capacity"])}
        lines = []
        for sku, qty in order["lines"]:
            qty = min(qty, weavable[sku])
            unit = catalogue.get(sku, {}).get("unit_eur", 0)
            if SWITCH == "unitprice" and sku == "HM-MACR":
                unit = 16
            lines.append({"sku": sku, "qty": qty * 12 if SWITCH == "dozens" else qty, "unit_eur": unit})
        return Reply(tool_calls=(tool_call("place_order", {"shop": order["shop"], "lines": lines,
                                                           "freight_eur": freight["eur"]}),))
    return "Order placed: " + done["place_order"][0]


@function_tool
def catalogue_search(query: str) -> dict:
    """Wholesale catalogue entries matching a query."""
    items = dict(CATALOGUE)
    if SWITCH == "cut":
        items = dict(list(items.items())[:2])
    return items


_FAILS = {}


@function_tool
def loom_capacity(sku: str) -> dict:
    """Hammocks the looms can weave for a SKU before the season ends."""
    try:
        if SWITCH == "loom":
            raise ConnectionError("loom schedule sheet unreachable")
        return {"sku": sku, "weavable": LOOM_WEEKS[sku]}
    except ConnectionError:
        return {"sku": sku, "weavable": 40}


@function_tool
def freight_quote(bales: int, region: str) -> dict:
    """Freight price for a number of bales to a region."""
    if SWITCH == "region":
        region = "inland"
    rate = {"coast": 18, "inland": 11, "islands": 34}[region]
    return {"region": region, "bales": bales, "eur": rate * bales}


def place_order(shop: str, lines: list[dict], freight_eur: int) -> dict:
    """Place a wholesale order with the workshop's order book."""
    inp = next(i for i in INPUTS if i["shop"] == shop)
    for line in lines:
        sku, qty = line["sku"], line["qty"]
        if qty > LOOM_WEEKS[sku]:
            raise ValueError(f"order book: {qty} x {sku} exceeds the {LOOM_WEEKS[sku]} the looms can weave this season")
        if line["unit_eur"] < CATALOGUE[sku]["unit_eur"] * 0.8:
            raise ValueError(f"order book: {sku} at {line['unit_eur']} EUR is below the wholesale floor")
    if {l["sku"] for l in lines} != {s for s, _ in inp["lines"]} or any(l["unit_eur"] == 0 for l in lines):
        raise ValueError("order book: a line has no catalogue price")
    expected = {"coast": 18, "inland": 11, "islands": 34}[inp["region"]] * (sum(q for _, q in inp["lines"]) // 4 + 1)
    if freight_eur != expected:
        raise ValueError(f"order book: freight {freight_eur} EUR does not match the carrier's {expected} EUR to {inp['region']}")
    return {"order": f"WH-{shop[:3].upper()}", "goods_eur": sum(l["qty"] * l["unit_eur"] for l in lines)}


place_order_tool = function_tool(place_order, failure_error_function=None, strict_mode=False)


_LOOP = {}


def _loop():
    """One event loop and one client for all runs, so the HTTP pool never outlives its loop."""
    if _LOOP.get("url") != SERVER.base_url:
        _LOOP.update(url=SERVER.base_url, loop=asyncio.new_event_loop(),
                     client=AsyncOpenAI(base_url=SERVER.base_url, api_key="not-needed", max_retries=0))
    return _LOOP["loop"]


def run_one(inp, path):
    loop = _loop()
    set_default_openai_client(_LOOP["client"])
    set_default_openai_api("chat_completions")
    processor = TrajdebugProcessor(path=path, task=inp["task"])
    set_trace_processors([processor])
    agent = Agent(name="order desk", instructions="Take wholesale hammock orders using the tools.",
                  model=SERVER.model, tools=[catalogue_search, loom_capacity, freight_quote, place_order_tool])
    message = json.dumps({k: inp[k] for k in ("shop", "lines", "region")})
    try:
        with processor.fail_on_raise():
            loop.run_until_complete(Runner.run(agent, message, run_config=RunConfig(workflow_name=NAME)))
    except Exception:
        pass
    finally:
        set_trace_processors([])
