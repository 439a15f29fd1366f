"""Agent 3 (openai_agents route): typeface licensing desk on the OpenAI Agents SDK.

Shape: front desk agent (customer lookup) hands off to the licensing desk, which searches the EULA,
counts active seats (a paginated tool), asks the pricing desk (a sub-agent run as a tool, with its own
price-list tool) for a quote, then issues the licence on the foundry's licence server.
Chat Completions model against the FakeModelServer; recorded by TrajdebugProcessor.
"""

from __future__ import annotations

import json
import math
from contextlib import contextmanager
from typing import Any, Iterator

from . import kit
from .common import Fault

AGENT = "typeface_licensing"
ROUTE = "openai_agents"
EXT = "jsonl"
RUN_NAME = "typeface-licensing"
DOMAIN = "Typeface licensing"
SHAPE = "hand-off front desk -> licensing desk; EULA search, paginated seat count, pricing sub-agent as_tool with its own tool, licence server"

PRICES = {"Halden Serif": 38.0, "Halden Sans": 29.0, "Orbit Mono": 45.0, "Quarto Display": 52.0, "Vellum Text": 33.0}
EULA = {
    "web": [{"clause": "WF-2.1", "doc": "Webfont EULA", "licence_type": "webfont",
             "text": "Webfont licences are priced per 10 seats of the licensee's design team and list every serving domain."}],
    "desktop": [{"clause": "DT-3.4", "doc": "Desktop EULA", "licence_type": "desktop",
                 "text": "Desktop licences are priced per workstation install; no web serving is permitted."}],
    "app": [{"clause": "AP-1.2", "doc": "App EULA", "licence_type": "app",
             "text": "App licences embed the font files in one app bundle per licence."}],
}
PAGE = 12


class LicenceRefused(RuntimeError):
    pass


LicenceRefused.__module__ = "foundry_licensing.client"

_run: dict[str, Any] = {}


def _customers(cid: str) -> dict:
    return {"C-1042": ("Linden Press", 52), "C-1177": ("Marlowe Studio", 23), "C-1290": ("Northlight Media", 37),
            "C-1318": ("Osprey Books", 61), "C-1402": ("Pellworth & Co", 14), "C-1466": ("Quill Agency", 29),
            "C-1533": ("Redshank Games", 46), "C-1591": ("Saltire News", 71), "C-1620": ("Tarn Digital", 18)}[cid]


def _tools():
    from agents import function_tool

    @function_tool
    def lookup_customer(customer_id: str) -> str:
        """Account record of a customer."""
        name, _ = _customers(customer_id)
        notes = [f"{customer_id}: invoices to accounts payable, net 30"]
        if kit.active("tf_context_pollution"):
            notes.append("Ticket from C-2231 (Brightwater Ltd): please license Orbit Mono for our 3 domains")
        return json.dumps({"customer": customer_id, "name": name, "region": "UK", "notes": notes})

    @function_tool
    def search_eula_clauses(usage: str) -> str:
        """EULA clauses for a kind of use (web, desktop, app)."""
        key = usage
        if kit.active("tf_wrong_retrieval"):
            key = "desktop"
        return json.dumps({"query": usage, "results": EULA[key]})

    @function_tool
    def count_active_seats(customer_id: str, family: str) -> str:
        """Active design-team seats using a family, counted over the paginated seat registry."""
        total = _customers(customer_id)[1]
        pages = math.ceil(total / PAGE)
        last = range(1, pages) if kit.active("tf_off_by_one") else range(1, pages + 1)
        seats = sum(min(PAGE, total - (p - 1) * PAGE) for p in last)
        return json.dumps({"customer": customer_id, "family": family, "active_seats": seats, "pages": pages})

    @function_tool
    def get_price_list(family: str, licence_type: str, seats: int) -> str:
        """Foundry price list entry and a quote id."""
        units = math.ceil(seats / 10)
        qid = f"Q-{kit.seed(family, licence_type, seats) % 9000 + 1000}"
        amount = round(PRICES[family] * units * (1.0 if licence_type == "webfont" else 1.4), 2)
        _run["quotes"][qid] = {"family": family, "licence_type": licence_type, "seats": seats, "amount": amount}
        return json.dumps({"quote_id": qid, "family": family, "licence_type": licence_type, "units": units, "amount_gbp": amount})

    @function_tool(failure_error_function=None)
    def issue_licence(customer_id: str, family: str, licence_type: str, seats: int, domains: list[str], quote_id: str) -> str:
        """Issue the licence on the foundry's licence server."""
        po = _run["po"]
        q = _run["quotes"].get(quote_id)
        if q is None:
            raise LicenceRefused(f"licence server 404: quote {quote_id} not found")
        if family != po["family"]:
            raise LicenceRefused(f"licence server 422: purchase order {po['po']} does not cover {family}")
        if licence_type != po["licence_type"]:
            raise LicenceRefused(f"licence server 422: purchase order {po['po']} authorises {po['licence_type']} use, not {licence_type}")
        if q["family"] != family:
            raise LicenceRefused(f"licence server 409: quote {quote_id} was priced for another family")
        active = _customers(customer_id)[1]
        if seats < active:
            raise LicenceRefused(f"licence server 422: {seats} seats is below the {active} active seats on record")
        return json.dumps({"licence": f"LIC-{kit.seed(customer_id, family) % 900000 + 100000}", "status": "issued"})

    return lookup_customer, search_eula_clauses, count_active_seats, get_price_list, issue_licence


def _results(msgs: list[dict]) -> dict[str, Any]:
    names = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
    out = {}
    for m in msgs:
        if m.get("role") == "tool":
            try:
                out[names.get(m.get("tool_call_id"))] = json.loads(m["content"])
            except (TypeError, ValueError):
                out[names.get(m.get("tool_call_id"))] = m["content"]
    return out


def _policy(request):
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    res = _results(msgs)
    users = [m["content"] for m in msgs if m["role"] == "user"]
    if system.startswith("You are the pricing desk"):
        ask = json.loads(users[-1])
        if "get_price_list" not in res:
            family = ask["family"]
            if kit.active("tf_subagent_wrong_entity"):
                family = family.split()[0] + " Sans"
            return Reply(tool_calls=(tool_call("get_price_list", {"family": family, "licence_type": ask["licence_type"],
                                                                   "seats": ask["seats"]}),))
        q = res["get_price_list"]
        return json.dumps({"quote_id": q["quote_id"], "amount_gbp": q["amount_gbp"], "family": q["family"]})
    req = json.loads(users[0])
    if system.startswith("You are the front desk"):
        if "lookup_customer" not in res:
            return Reply(tool_calls=(tool_call("lookup_customer", {"customer_id": req["customer"]}),))
        return Reply(tool_calls=(tool_call("transfer_to_licensing_desk", {}),))
    # licensing desk
    family = req["family"]
    for note in res.get("lookup_customer", {}).get("notes", []):
        if "please license " in note:
            family = note.split("please license ")[1].split(" for ")[0]
    if "search_eula_clauses" not in res:
        return Reply(text="Plan: read the EULA terms, count the active seats, get a quote, then issue the licence.",
                     tool_calls=(tool_call("search_eula_clauses", {"usage": req["usage"]}),))
    ltype = res["search_eula_clauses"]["results"][0]["licence_type"]
    skip_count = kit.active("tf_plan_error")
    if "count_active_seats" not in res and not skip_count:
        return Reply(tool_calls=(tool_call("count_active_seats", {"customer_id": req["customer"], "family": family}),))
    seats = req["po_seats"] if skip_count else res["count_active_seats"]["active_seats"]
    if "quote_price" not in res:
        text = ("Plan: the purchase order already states the seats, so quote and issue for those." if skip_count
                else None)
        return Reply(text=text, tool_calls=(tool_call("quote_price", {"input": json.dumps(
            {"family": family, "licence_type": ltype, "seats": seats})}),))
    if "issue_licence" not in res:
        quote = res["quote_price"] if isinstance(res["quote_price"], dict) else json.loads(res["quote_price"])
        return Reply(tool_calls=(tool_call("issue_licence", {
            "customer_id": req["customer"], "family": family, "licence_type": ltype, "seats": seats,
            "domains": req["domains"], "quote_id": quote["quote_id"]}),))
    return f"Licence {res['issue_licence']['licence']} issued for {family} ({ltype}, {seats} seats)."


@contextmanager
def session() -> Iterator[None]:
    from trajdebug.testing import FakeModelServer

    with FakeModelServer(_policy, model="gpt-4o-mini") as server:
        _run["base_url"] = server.base_url
        _run["tools"] = _tools()
        try:
            yield
        finally:
            _run.clear()


def run_once(inp: dict, path: str) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, set_trace_processors, set_tracing_disabled
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    lookup_customer, search_eula_clauses, count_active_seats, get_price_list, issue_licence = _run["tools"]
    client = AsyncOpenAI(base_url=_run["base_url"], api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    pricing = Agent(name="pricing_desk", model=model, tools=[get_price_list],
                    instructions="You are the pricing desk. Price the requested licence from the price list and answer JSON.")
    licensing = Agent(name="licensing_desk", model=model,
                      instructions="You are the licensing desk. Check the EULA, count seats, get a quote, issue the licence.",
                      tools=[search_eula_clauses, count_active_seats,
                             pricing.as_tool(tool_name="quote_price", tool_description="Quote a licence price."),
                             issue_licence])
    front = Agent(name="front_desk", model=model, handoffs=[licensing], tools=[lookup_customer],
                  instructions="You are the front desk of a type foundry. Look up the customer, then hand off.")
    _run["quotes"] = {}
    _run["po"] = {"po": inp["po"], "family": inp["family"], "licence_type": {"web": "webfont"}.get(inp["usage"], inp["usage"])}
    set_tracing_disabled(False)
    set_trace_processors([TrajdebugProcessor(path=path, name=RUN_NAME)])
    task = f"license {inp['family']} for {inp['customer']} ({inp['usage']})"
    try:
        Runner.run_sync(front, json.dumps(inp), max_turns=20,
                        run_config=RunConfig(workflow_name=RUN_NAME, trace_metadata={"task": task}))
    except Exception as exc:  # the licence server's refusal, as the SDK re-raises it
        if "licence server" not in str(exc):
            raise
    set_trace_processors([])


def _req(cid: str, family: str, usage: str, po_seats: int) -> dict:
    return {"customer": cid, "family": family, "usage": usage, "domains": [f"www.{_customers(cid)[0].split()[0].lower()}.example"],
            "po": f"PO-{kit.seed(cid) % 9000 + 1000}", "po_seats": po_seats}


_IN = {
    "entity": _req("C-1042", "Halden Serif", "web", 60),
    "obo": _req("C-1290", "Vellum Text", "web", 40),
    "pollution": _req("C-1466", "Quarto Display", "web", 30),
    "plan": _req("C-1533", "Halden Serif", "web", 25),
    "retrieval": _req("C-1177", "Vellum Text", "web", 25),
}

FAULTS = [
    Fault("typefaces_1", "tf_subagent_wrong_entity", "subagent_wrong_entity", "generation gpt-4o-mini", "Halden Sans", _IN["entity"]),
    Fault("typefaces_2", "tf_off_by_one", "off_by_one", "count_active_seats", '"active_seats": 36', _IN["obo"]),
    Fault("typefaces_3", "tf_context_pollution", "context_pollution", "lookup_customer", "C-2231", _IN["pollution"]),
    Fault("typefaces_4", "tf_plan_error", "plan_error", "generation gpt-4o-mini", "already states the seats", _IN["plan"]),
    Fault("typefaces_5", "tf_wrong_retrieval", "wrong_retrieval", "search_eula_clauses", "Desktop EULA", _IN["retrieval"]),
]

REFS = [_req("C-1318", "Orbit Mono", "web", 70), _req("C-1402", "Halden Sans", "web", 14),
        _req("C-1591", "Quarto Display", "web", 80), _req("C-1620", "Vellum Text", "web", 20)]
