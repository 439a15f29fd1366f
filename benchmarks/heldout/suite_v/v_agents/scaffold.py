"""Scaffold hire desk (route: openai_agents).

The OpenAI Agents SDK against the fake model server: a hire-desk agent looks the
site up, asks a load-calculator sub-agent (Agent.as_tool: site drawings, component
table) for the component list, checks two depots' stock in parallel, runs the TG20
design check, then hands off to a booking agent that quotes, reserves stock and
books the delivery.  Recorded by TrajdebugProcessor.
"""

from __future__ import annotations

import asyncio
import json
import math
import re

import httpx
from agents import Agent, RunConfig, Runner, function_tool
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from benchmarks.heldout.suite_v import kit
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import FakeModelServer, Reply, tool_call

NAME = "scaffold-hire-desk"
ROUTE = "openai_agents"
DOMAIN = "scaffolding hire"
SHAPE = "hire desk agent: site lookup, load-calculator sub-agent as a tool (drawings, component table), two parallel stock checks, design check; hand-off to a booking agent: quote, reserve, delivery"

SITES = {
    "S-7721": {"customer": "Harrow Build Ltd", "gate": "Tanner Row", "old_gate": "Mill Lane", "updated": "2026-11-20",
               "nearest": "East", "run_m": 12.5, "lifts": 3, "duty": "general purpose"},
    "S-4518": {"customer": "Quayside Homes", "gate": "Dock Road", "old_gate": "Dock Road", "updated": "2026-06-01",
               "nearest": "North", "run_m": 17.5, "lifts": 4, "duty": "general purpose"},
    "S-4581": {"customer": "Ravel Roofing", "gate": "Ash Close", "old_gate": "Ash Close", "updated": "2026-03-12",
               "nearest": "North", "run_m": 5.0, "lifts": 2, "duty": "light"},
    "S-3302": {"customer": "Penn & Daughters", "gate": "Orchard Way", "old_gate": "Orchard Way", "updated": "2026-08-19",
               "nearest": "East", "run_m": 10.0, "lifts": 4, "duty": "general purpose"},
    "S-6140": {"customer": "Northgate Church", "gate": "Vicarage Lane", "old_gate": "Vicarage Lane", "updated": "2026-02-03",
               "nearest": "East", "run_m": 7.5, "lifts": 2, "duty": "light"},
    "S-2219": {"customer": "Marlow Civic Trust", "gate": "Station Yard", "old_gate": "Station Yard", "updated": "2026-09-09",
               "nearest": "North", "run_m": 15.0, "lifts": 3, "duty": "heavy"},
    "S-9034": {"customer": "Wren Lofts", "gate": "Bell Street", "old_gate": "Bell Street", "updated": "2026-05-30",
               "nearest": "North", "run_m": 20.0, "lifts": 2, "duty": "general purpose"},
    "S-5157": {"customer": "Tolley Masonry", "gate": "Kiln Lane", "old_gate": "Kiln Lane", "updated": "2026-07-14",
               "nearest": "East", "run_m": 12.5, "lifts": 2, "duty": "general purpose"},
    "S-8806": {"customer": "Yew Tree School", "gate": "Field Gate", "old_gate": "Field Gate", "updated": "2026-04-22",
               "nearest": "North", "run_m": 10.0, "lifts": 3, "duty": "light"},
}
STOCK = {"North": {"standards": 160, "ledgers": 420, "transoms": 260, "boards": 340},
         "East": {"standards": 90, "ledgers": 260, "transoms": 150, "boards": 60}}
PRICES = {"standards": 1.20, "ledgers": 0.80, "transoms": 0.60, "boards": 0.95}
ITEMS = ("standards", "ledgers", "transoms", "boards")


def hire(site: str, start: str, weeks: int) -> dict:
    return {"site": site, "start": start, "weeks": weeks}


REFS = [hire("S-3302", "2026-12-02", 4), hire("S-2219", "2026-12-03", 8), hire("S-9034", "2026-12-09", 3),
        hire("S-8806", "2026-12-10", 5)]

CASES = [
    {"fault": "scaffold.drawings_site", "kind": "subagent_wrong_entity", "root": "generation scaffold-desk-1", "marker": "S-4581",
     "input": hire("S-4518", "2026-12-07", 6)},
    {"fault": "scaffold.reserve_start", "kind": "wrong_tool_args", "root": "generation scaffold-desk-1", "marker": "2026-12-21",
     "input": hire("S-6140", "2026-12-14", 4)},
    {"fault": "scaffold.stock_depot", "kind": "tool_ignores_argument", "root": "check_stock",
     "marker": "East depot stock: standards 160", "input": hire("S-7721", "2026-12-08", 6)},
    {"fault": "scaffold.price_gap", "kind": "swallowed_error", "root": "quote_price", "marker": "x 0.00",
     "input": hire("S-5157", "2026-12-11", 3)},
    {"fault": "scaffold.site_cache", "kind": "stale_data", "root": "lookup_site", "marker": "Mill Lane",
     "input": hire("S-7721", "2026-12-15", 8)},
]


def components(run_m: float, lifts: int) -> dict:
    bays = math.ceil(run_m / 2.5)
    return {"standards": (bays + 1) * 2, "ledgers": bays * 2 * (lifts + 1), "transoms": (bays + 1) * lifts,
            "boards": bays * 5 * lifts}


def items_text(items: dict) -> str:
    return ", ".join(f"{k} {items[k]}" for k in ITEMS)


def parse_items(text: str) -> dict:
    return {k: int(re.search(rf"{k} (\d+)", text).group(1)) for k in ITEMS}


# -- the scripted model --------------------------------------------------------------------

def _calls(messages: list[dict]) -> list[tuple[str, dict, str | None]]:
    """(tool name, arguments, result text) for every tool call so far."""
    results = {m.get("tool_call_id"): m.get("content") for m in messages if m.get("role") == "tool"}
    out = []
    for m in messages:
        for c in m.get("tool_calls") or []:
            out.append((c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"), results.get(c["id"])))
    return out


def _result(calls, name: str, **match) -> str | None:
    for n, args, res in calls:
        if n == name and all(args.get(k) == v for k, v in match.items()):
            return res
    return None


def policy(request):
    messages = request.body["messages"]
    system = messages[0]["content"] if messages[0]["role"] in ("system", "developer") else ""
    calls = _calls(messages)
    user = next(m["content"] for m in messages if m["role"] == "user")
    if system.startswith("You calculate scaffold loads"):
        site = re.search(r"Site (S-\d{4})", user).group(1)
        drawings = _result(calls, "site_drawings")
        if drawings is None:
            ask = site
            if kit.active("scaffold.drawings_site"):
                ask = site[:4] + site[5] + site[4]
            return Reply(tool_calls=(tool_call("site_drawings", {"site_id": ask}),))
        d = json.loads(drawings)
        table = _result(calls, "component_table")
        if table is None:
            return Reply(tool_calls=(tool_call("component_table", {"run_m": d["run_m"], "lifts": d["lifts"],
                                                                   "duty": d["duty"]}),))
        return f"Load for {d['site']}: {table}"
    req = json.loads(re.search(r"(\{.*\})", user).group(1))
    site = json.loads(_result(calls, "lookup_site") or "{}")
    load = _result(calls, "calculate_load")
    if system.startswith("You run the scaffold hire desk"):
        if not site:
            return Reply(tool_calls=(tool_call("lookup_site", {"site_id": req["site"]}),))
        if load is None:
            return Reply(tool_calls=(tool_call("calculate_load", {
                "input": f"Site {req['site']}: elevation run {site['run_m']} m, {site['lifts']} lifts, {site['duty']} duty"}),))
        items = items_text(parse_items(load))
        if _result(calls, "check_stock") is None:
            return Reply(tool_calls=(tool_call("check_stock", {"depot": "North", "items": items}),
                                     tool_call("check_stock", {"depot": "East", "items": items})))
        if _result(calls, "tg20_check") is None:
            return Reply(tool_calls=(tool_call("tg20_check", {"run_m": site["run_m"], "lifts": site["lifts"],
                                                              "items": items}),))
        return Reply(tool_calls=(tool_call("transfer_to_booking_desk", {}),))
    if system.startswith("You book scaffold hires"):
        items = parse_items(load)
        need = items_text(items)
        order = [site["nearest_depot"], "North" if site["nearest_depot"] == "East" else "East"]
        depot = order[1]
        for dep in order:
            have = parse_items(_result(calls, "check_stock", depot=dep))
            if all(have[k] >= items[k] for k in ITEMS):
                depot = dep
                break
        quote = _result(calls, "quote_price")
        if quote is None:
            return Reply(tool_calls=(tool_call("quote_price", {"items": need, "weeks": req["weeks"]}),))
        qid = re.search(r"(Q-\d+)", quote).group(1)
        res = _result(calls, "reserve_stock")
        if res is None:
            start = req["start"]
            if kit.active("scaffold.reserve_start"):
                start = start[:8] + f"{int(start[8:]) + 7:02d}"
            return Reply(tool_calls=(tool_call("reserve_stock", {"depot": depot, "items": need, "start": start,
                                                                 "quote_id": qid}),))
        rid = re.search(r"(R-[\w-]+)", res).group(1)
        booked = _result(calls, "book_delivery")
        if booked is None:
            return Reply(tool_calls=(tool_call("book_delivery", {"site_id": req["site"], "gate": site["gate"],
                                                                 "date": req["start"], "reservation": rid}),))
        return f"Booked: {booked}"
    return "I cannot help with that."


# -- tools ---------------------------------------------------------------------------------

def make_agents(model, world: dict):
    @function_tool
    def lookup_site(site_id: str) -> str:
        """Look a customer site up in the site register."""
        s = SITES[site_id]
        gate, updated = s["gate"], s["updated"]
        if kit.active("scaffold.site_cache"):
            gate, updated = s["old_gate"], "2026-10-02"
        return json.dumps({"site": site_id, "customer": s["customer"], "gate": gate, "access_updated": updated,
                           "nearest_depot": s["nearest"], "run_m": s["run_m"], "lifts": s["lifts"], "duty": s["duty"]})

    @function_tool
    def site_drawings(site_id: str) -> str:
        """Fetch the elevation drawings of a site."""
        s = SITES[site_id]
        return json.dumps({"site": site_id, "elevation": "front", "run_m": s["run_m"], "lifts": s["lifts"],
                           "duty": s["duty"], "drawing": f"DWG-{site_id[2:]}-A"})

    @function_tool
    def component_table(run_m: float, lifts: int, duty: str) -> str:
        """Component quantities for a tube-and-fitting independent scaffold."""
        return items_text(components(run_m, lifts))

    @function_tool
    def check_stock(depot: str, items: str) -> str:
        """Stock on hand at a depot for the items asked."""
        source = "North" if kit.active("scaffold.stock_depot") else depot
        st = STOCK[source]
        return f"{depot} depot stock: " + ", ".join(f"{k} {st[k]}" for k in ITEMS) + " (as of 07:30)"

    @function_tool(failure_error_function=None)
    def tg20_check(run_m: float, lifts: int, items: str) -> str:
        """Design check of the component list against the TG20 compliance sheet."""
        want = components(run_m, lifts)
        have = parse_items(items)
        for k in ITEMS:
            if have[k] < want[k]:
                raise ValueError(f"TG20 compliance sheet: a {run_m} m run at {lifts} lifts needs {want[k]} {k}, "
                                 f"the design lists {have[k]}")
        return f"TG20 compliance sheet: {run_m} m x {lifts} lifts compliant"

    @function_tool
    def quote_price(items: str, weeks: int) -> str:
        """Price the hire from the weekly price list."""
        have = parse_items(items)
        lines, total = [], 0.0
        for k in ITEMS:
            try:
                if k == "boards" and kit.active("scaffold.price_gap"):
                    raise KeyError("price list: no current rate for boards")
                rate = PRICES[k]
            except KeyError:
                rate = 0.0
            lines.append(f"{k} {have[k]} x {rate:.2f}")
            total += have[k] * rate * weeks
        qid = f"Q-{4400 + sum(have.values())}"
        world["quote"] = round(total, 2)
        return f"Quote {qid}: " + ", ".join(lines) + f" per week; {weeks} weeks; total {total:,.2f} GBP"

    @function_tool(failure_error_function=None)
    def reserve_stock(depot: str, items: str, start: str, quote_id: str) -> str:
        """Reserve the items at a depot from a start date against a quote."""
        have = parse_items(items)
        for k in ITEMS:
            if have[k] > STOCK[depot][k]:
                raise RuntimeError(f"{depot} depot: {have[k]} {k} requested, {STOCK[depot][k]} in stock")
        weeks = world["weeks"]
        listed = round(sum(have[k] * PRICES[k] for k in ITEMS) * weeks, 2)
        if world.get("quote", 0.0) < listed - 0.01:
            raise RuntimeError(f"depot system: quote {quote_id} total {world['quote']:,.2f} GBP is below the list value "
                               f"of the reserved items ({listed:,.2f} GBP); re-quote before reserving")
        rid = f"R-{depot[0]}{start.replace('-', '')[2:]}"
        world["reservation"] = {"id": rid, "depot": depot, "start": start}
        return f"Reservation {rid} at {depot} from {start}"

    @function_tool(failure_error_function=None)
    def book_delivery(site_id: str, gate: str, date: str, reservation: str) -> str:
        """Book the haulier to deliver a reservation to the site gate."""
        s = SITES[site_id]
        r = world.get("reservation") or {}
        if gate != s["gate"]:
            raise RuntimeError(f"haulier: {gate} gate at {site_id} closed to deliveries since {s['updated']}; booking refused")
        if r.get("start") != date:
            raise RuntimeError(f"haulier: reservation {reservation} at {r.get('depot')} starts {r.get('start')}; "
                               f"nothing to load on {date}")
        return f"Delivery D-{reservation[2:]} on {date} to {gate} gate, 7.5 t flatbed"

    calculator = Agent(
        name="load_calculator",
        instructions="You calculate scaffold loads: read the site drawings, then the component table, and answer with the component list.",
        model=model, tools=[site_drawings, component_table],
    )
    booking = Agent(
        name="booking_desk",
        instructions="You book scaffold hires: quote, reserve stock at a depot that has it, and book the delivery.",
        model=model, tools=[quote_price, reserve_stock, book_delivery],
    )
    desk = Agent(
        name="hire_desk",
        instructions="You run the scaffold hire desk: look the site up, get the load calculated, check depot stock, check the design, then hand off to booking.",
        model=model,
        tools=[lookup_site, calculator.as_tool(tool_name="calculate_load",
                                               tool_description="Calculate the scaffold components for a site."),
               check_stock, tg20_check],
        handoffs=[booking],
    )
    return desk


class Harness:
    def __enter__(self):
        self.server = FakeModelServer(policy, model="scaffold-desk-1").__enter__()
        return self

    def __exit__(self, *exc):
        set_trace_processors([])
        self.server.__exit__(*exc)

    def record(self, inp: dict, path) -> None:
        processor = TrajdebugProcessor(path=str(path), name=NAME)
        set_trace_processors([processor])

        async def go():
            client = AsyncOpenAI(base_url=self.server.base_url, api_key="not-needed", max_retries=0,
                                 http_client=httpx.AsyncClient(verify=False))  # plain http on 127.0.0.1
            model = OpenAIChatCompletionsModel(model="scaffold-desk-1", openai_client=client)
            world = {"weeks": inp["weeks"]}
            desk = make_agents(model, world)
            try:
                await Runner.run(desk, f"Hire request {json.dumps(inp)}", max_turns=20,
                                 run_config=RunConfig(workflow_name=NAME,
                                                      trace_metadata={"task": f"hire for {inp['site']} from {inp['start']}"}))
            except Exception:
                pass
            finally:
                await client.close()

        asyncio.run(go())
        set_trace_processors([])
