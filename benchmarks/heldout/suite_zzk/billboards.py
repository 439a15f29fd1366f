"""Billboard leasing: a campaign booking graph for an outdoor media owner (route: langgraph).

A StateGraph reads the client's brief with a model, searches the site inventory, has a model
shortlist sites (with reserves), holds one site per pass (live availability, hold tool) until
enough are held, has a model read each held site's rate card into a quote line, prices the
campaign, runs a credit-desk sub-graph on the contract party, builds the contract and
checks it against the sales rules.
"""

from __future__ import annotations

import json
import operator
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Any, TypedDict

import common
import kit
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph


NAME = "billboard-lease-desk"
ROUTE = "langgraph"
DOMAIN = "billboard leasing"
SHAPE = (
    "StateGraph: model reads the brief, inventory search tool, model shortlist, hold loop (availability and "
    "hold tools per candidate, conditional edge), quote loop (rate card tool, model reads it), pricing node, "
    "credit-desk sub-graph (model resolves the party, credit tool, decision), contract node, validator node"
)

CYCLE_START = {
    "2026-C04": "2026-03-09",
    "2026-C05": "2026-04-06",
    "2026-C06": "2026-05-04",
    "2026-C07": "2026-06-01",
    "2026-C08": "2026-06-29",
    "2026-C09": "2026-07-27",
}
CYCLES = list(CYCLE_START)

# site id -> (region, format, illuminated, weekly impacts, weekly rate in pence)
SITES: dict[str, tuple[str, str, bool, int, int]] = {
    "BB-1101": ("Leeds", "48-sheet", True, 182000, 118000),
    "BB-1102": ("Leeds", "48-sheet", False, 240000, 96000),
    "BB-1103": ("Leeds", "48-sheet", True, 151000, 104000),
    "BB-1104": ("Leeds", "48-sheet", True, 133000, 98000),
    "BB-1105": ("Leeds", "48-sheet", True, 120000, 91000),
    "BB-1106": ("Leeds", "96-sheet", True, 210000, 185000),
    "BB-1107": ("Leeds", "96-sheet", True, 176000, 162000),
    "BB-1108": ("Leeds", "96-sheet", True, 158000, 150000),
    "BB-2201": ("Manchester", "48-sheet", True, 205000, 126000),
    "BB-2202": ("Manchester", "48-sheet", True, 188000, 119000),
    "BB-2203": ("Manchester", "48-sheet", True, 164000, 108000),
    "BB-2204": ("Manchester", "48-sheet", True, 141000, 99000),
    "BB-2205": ("Manchester", "96-sheet", False, 262000, 171000),
    "BB-2206": ("Manchester", "96-sheet", True, 219000, 192000),
    "BB-2207": ("Manchester", "96-sheet", True, 190000, 174000),
    "BB-2208": ("Manchester", "96-sheet", True, 172000, 166000),
    "BB-3301": ("Bristol", "48-sheet", True, 149000, 97000),
    "BB-3302": ("Bristol", "48-sheet", True, 137000, 93000),
    "BB-3303": ("Bristol", "48-sheet", True, 125000, 88000),
    "BB-3304": ("Bristol", "48-sheet", True, 118000, 84000),
    "BB-3305": ("Bristol", "48-sheet", False, 166000, 79000),
}
BOOKED = {  # live booking ledger: site -> cycles already sold
    "BB-1101": ["2026-C05"],
    "BB-1103": ["2026-C06"],
    "BB-2201": ["2026-C04"],
    "BB-2202": ["2026-C07"],
    "BB-2206": ["2026-C05", "2026-C06"],
    "BB-3301": ["2026-C08"],
    "BB-3302": ["2026-C06"],
    "BB-1106": ["2026-C07"],
}
SOLD_THIS_MORNING = {"BB-2202": "2026-C05"}  # not yet in last night's availability snapshot

COMPANIES = {
    "Hollow Oak Cider Ltd": {"number": "09412877", "rating": "A", "limit_gbp": 250000},
    "Brightside Media Ltd": {"number": "07733120", "rating": "C", "limit_gbp": 40000},
    "Pennine Building Society": {"number": "IP00214R", "rating": "A", "limit_gbp": 500000},
    "Northern Lights Opticians": {"number": "11823004", "rating": "B", "limit_gbp": 120000},
    "Castlegate Media": {"number": "06655201", "rating": "B", "limit_gbp": 90000},
    "Severn Valley Rail": {"number": "02210987", "rating": "A", "limit_gbp": 300000},
    "Kestrel Outdoor Agency": {"number": "08899310", "rating": "B", "limit_gbp": 60000},
    "Mossley Mills Furniture": {"number": "05521890", "rating": "B", "limit_gbp": 150000},
    "Tidewell Energy": {"number": "12004417", "rating": "A", "limit_gbp": 400000},
    "Avon Foodhall": {"number": "10077213", "rating": "B", "limit_gbp": 140000},
    "Calder Dental Group": {"number": "09300042", "rating": "A", "limit_gbp": 200000},
}


def _brief(
    ref: str,
    advertiser: str,
    agency: str | None,
    region: str,
    fmt: str,
    lit: bool,
    cycle: str,
    cycles: int,
    sites: int,
    budget: int,
) -> dict[str, Any]:
    via = f" through {agency}" if agency else ""
    text = (
        f"Brief {ref}: {advertiser}{via} wants {sites} {fmt} sites in {region}"
        f"{', illuminated only' if lit else ''}, from cycle {cycle} for {cycles} cycle(s). "
        f"Approved budget GBP {budget:,}."
    )
    return {
        "ref": ref,
        "text": text,
        "fields": {
            "ref": ref,
            "advertiser": advertiser,
            "agency": agency,
            "region": region,
            "format": fmt,
            "illuminated": lit,
            "start_cycle": cycle,
            "start_date": CYCLE_START[cycle],
            "cycles": cycles,
            "sites": sites,
            "budget_gbp": budget,
        },
    }


INPUTS: dict[str, dict[str, Any]] = {
    "hollow-oak": _brief(
        "OB-5520",
        "Hollow Oak Cider Ltd",
        "Brightside Media Ltd",
        "Leeds",
        "48-sheet",
        True,
        "2026-C06",
        1,
        3,
        20000,
    ),
    "pennine": _brief(
        "OB-5524", "Pennine Building Society", None, "Manchester", "48-sheet", True, "2026-C05", 1, 3, 22000
    ),
    "northern-lights": _brief(
        "OB-5527",
        "Northern Lights Opticians",
        "Castlegate Media",
        "Leeds",
        "48-sheet",
        True,
        "2026-C04",
        1,
        3,
        18000,
    ),
    "severn": _brief(
        "OB-5531",
        "Severn Valley Rail",
        "Kestrel Outdoor Agency",
        "Bristol",
        "48-sheet",
        True,
        "2026-C07",
        2,
        3,
        30000,
    ),
    "mossley": _brief(
        "OB-5533", "Mossley Mills Furniture", None, "Manchester", "96-sheet", True, "2026-C06", 1, 2, 18000
    ),
    "tidewell": _brief(
        "OB-5508", "Tidewell Energy", None, "Leeds", "96-sheet", True, "2026-C05", 1, 2, 20000
    ),
    "avon": _brief(
        "OB-5511",
        "Avon Foodhall",
        "Kestrel Outdoor Agency",
        "Bristol",
        "48-sheet",
        False,
        "2026-C06",
        1,
        3,
        16000,
    ),
    "calder": _brief(
        "OB-5514", "Calder Dental Group", None, "Manchester", "48-sheet", True, "2026-C04", 2, 2, 24000
    ),
    "hollow-oak-summer": _brief(
        "OB-5517",
        "Hollow Oak Cider Ltd",
        "Brightside Media Ltd",
        "Bristol",
        "48-sheet",
        True,
        "2026-C08",
        1,
        3,
        16000,
    ),
}
REFS = ["tidewell", "avon", "calder", "hollow-oak-summer"]

CASES = [
    {
        "id": "billboards-credit",
        "input": "hollow-oak",
        "kind": "subagent_wrong_entity",
        "root": ("party_resolver", 1),
        "failure": ("validate_contract", 1),
        "description": "The credit desk's model resolves the contract party to the buying agency Brightside Media Ltd "
        "instead of the advertiser Hollow Oak Cider Ltd, so the credit check covers the other company.",
    },
    {
        "id": "billboards-ledger",
        "input": "pennine",
        "kind": "stale_data",
        "root": ("site_availability", 2),
        "failure": ("validate_contract", 1),
        "description": "Availability for BB-2202 is read from last night's snapshot, which misses this morning's sale "
        "of cycle 2026-C05, so the hold lands on 2026-C06 while the contract books 2026-C05.",
    },
    {
        "id": "billboards-lit",
        "input": "northern-lights",
        "kind": "tool_ignores_argument",
        "root": ("search_sites", 1),
        "failure": ("validate_contract", 1),
        "description": "search_sites ignores illuminated=True and returns the unlit BB-1102, which the shortlist "
        "takes for its impacts, on an illuminated-only brief.",
    },
    {
        "id": "billboards-dates",
        "input": "severn",
        "kind": "format_drift",
        "root": ("rate_reader", 3),
        "failure": ("validate_contract", 1),
        "description": "On its third quote line the rate-reading model writes the start date as 01/06/2026 instead of "
        "ISO, and the lenient date reader takes it month-first, so BB-3304 starts 2026-01-06.",
    },
    {
        "id": "billboards-pence",
        "input": "mossley",
        "kind": "unit_error",
        "root": ("price_campaign", 1),
        "failure": ("validate_contract", 1),
        "description": "price_campaign reads the rate card's pence as pounds, so the campaign totals GBP 1,360,000 "
        "against an approved GBP 18,000.",
    },
]


# -- the scripted model -------------------------------------------------------------------------------------


def brain(request: Any) -> str:
    system, prompt = common.system_text(request), common.last_user(request)
    if system.startswith("You read outdoor media briefs"):
        brief = next(b for b in INPUTS.values() if b["text"] in prompt)
        return json.dumps(brief["fields"])
    if system.startswith("You shortlist billboard sites"):
        sites, campaign = common.payload(prompt, "SITES"), common.payload(prompt, "CAMPAIGN")
        ranked = sorted(sites, key=lambda s: (-s["weekly_impacts"], s["site"]))
        n = campaign["sites"]
        return json.dumps(
            {"sites": [s["site"] for s in ranked[:n]], "reserves": [s["site"] for s in ranked[n : n + 2]]}
        )
    if system.startswith("You read rate cards"):
        rate, campaign = common.payload(prompt, "RATE"), common.payload(prompt, "CAMPAIGN")
        start = campaign["start_date"]
        if kit.on("billboards-dates") and rate["site"] == "BB-3304":
            start = date.fromisoformat(start).strftime("%d/%m/%Y")
        return json.dumps(
            {
                "site": rate["site"],
                "start": start,
                "weeks": 4 * campaign["cycles"],
                "weekly_rate_pence": rate["weekly_rate_pence"],
            }
        )
    if system.startswith("You name the legal party"):
        fields = common.payload(prompt, "BRIEF")
        party = fields["advertiser"]
        if kit.on("billboards-credit") and fields.get("agency"):
            party = fields["agency"]
        return json.dumps({"party": party})
    return "{}"


# -- tools ----------------------------------------------------------------------------------------------------


def _site(site_id: str) -> dict[str, Any]:
    region, fmt, lit, impacts, _rate = SITES[site_id]
    return {"site": site_id, "region": region, "format": fmt, "illuminated": lit, "weekly_impacts": impacts}


@tool
def search_sites(region: str, format: str, illuminated: bool) -> list:
    """Search the site inventory by region, format and illumination."""
    hits = [_site(s) for s, v in SITES.items() if v[0] == region and v[1] == format]
    if illuminated and not kit.on("billboards-lit"):
        hits = [h for h in hits if h["illuminated"]]
    return hits


@tool
def site_availability(site_id: str) -> dict:
    """The cycles already sold on a site."""
    booked = list(BOOKED.get(site_id, []))
    as_of = "2026-02-18T08:40"
    if site_id in SOLD_THIS_MORNING:
        booked.append(SOLD_THIS_MORNING[site_id])
        if kit.on("billboards-ledger"):
            booked.remove(SOLD_THIS_MORNING[site_id])
            as_of = "2026-02-17T23:00"
    return {"site": site_id, "booked": sorted(booked), "as_of": as_of}


@tool
def place_hold(site_id: str, cycle: str) -> dict:
    """Place a 48-hour hold on a site for a cycle (the next free cycle when that one is sold)."""
    sold = set(BOOKED.get(site_id, [])) | (
        {SOLD_THIS_MORNING[site_id]} if site_id in SOLD_THIS_MORNING else set()
    )
    held = next(c for c in CYCLES[CYCLES.index(cycle) :] if c not in sold)
    return {"hold": f"H-{site_id[3:]}-{held[-3:]}", "site": site_id, "cycle": held, "expires": "48h"}


@tool
def rate_card(site_id: str) -> dict:
    """The site's rate card (weekly rate in pence, excluding VAT)."""
    return {"site": site_id, "weekly_rate_pence": SITES[site_id][4], "production_included": True}


@tool
def credit_lookup(company: str) -> dict:
    """The credit bureau's record of a company."""
    c = COMPANIES[company]
    return {
        "company": company,
        "company_number": c["number"],
        "rating": c["rating"],
        "limit_gbp": c["limit_gbp"],
        "check": f"CR-{c['number'][-4:]}",
    }


# -- the graph -----------------------------------------------------------------------------------------------


class Credit(TypedDict, total=False):
    brief: dict
    party: str
    record: dict
    decision: dict


class Desk(TypedDict, total=False):
    brief: str
    campaign: dict
    found: list
    candidates: list
    cursor: int
    held: Annotated[list, operator.add]
    quote_cursor: int
    lines: Annotated[list, operator.add]
    pricing: dict
    credit: dict
    contract: dict


def _read_date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        return datetime.strptime(text, "%m/%d/%Y").date()


def build(llm: ChatOpenAI) -> Any:
    brief_reader = llm.with_config(run_name="brief_reader")
    site_picker = llm.with_config(run_name="site_picker")
    rate_reader = llm.with_config(run_name="rate_reader")
    party_resolver = llm.with_config(run_name="party_resolver")

    def resolve_party(state: Credit) -> dict:
        reply = party_resolver.invoke(
            [
                ("system", "You name the legal party a media contract is signed with, as JSON."),
                ("user", f"BRIEF: {json.dumps(state['brief'])}"),
            ]
        )
        return {"party": json.loads(reply.content)["party"]}

    def check_credit(state: Credit) -> dict:
        return {"record": credit_lookup.invoke({"company": state["party"]})}

    def decide_credit(state: Credit) -> dict:
        rec = state["record"]
        return {"decision": {**rec, "approved": rec["rating"] in ("A", "B")}}

    sub = StateGraph(Credit)
    sub.add_node("resolve_party", resolve_party)
    sub.add_node("check_credit", check_credit)
    sub.add_node("decide_credit", decide_credit)
    sub.add_edge(START, "resolve_party")
    sub.add_edge("resolve_party", "check_credit")
    sub.add_edge("check_credit", "decide_credit")
    sub.add_edge("decide_credit", END)
    credit_desk = sub.compile(name="credit_desk")

    def read_brief(state: Desk) -> dict:
        reply = brief_reader.invoke(
            [("system", "You read outdoor media briefs into JSON fields."), ("user", state["brief"])]
        )
        return {"campaign": json.loads(reply.content)}

    def search_inventory(state: Desk) -> dict:
        c = state["campaign"]
        return {
            "found": search_sites.invoke(
                {"region": c["region"], "format": c["format"], "illuminated": c["illuminated"]}
            )
        }

    def shortlist(state: Desk) -> dict:
        reply = site_picker.invoke(
            [
                ("system", "You shortlist billboard sites for a campaign (most impacts first), as JSON."),
                ("user", f"CAMPAIGN: {json.dumps(state['campaign'])}\nSITES: {json.dumps(state['found'])}"),
            ]
        )
        picked = json.loads(reply.content)
        return {"candidates": picked["sites"] + picked["reserves"], "cursor": 0}

    def hold_next(state: Desk) -> dict:
        site = state["candidates"][state["cursor"]]
        cycle = state["campaign"]["start_cycle"]
        wanted = CYCLES[CYCLES.index(cycle) : CYCLES.index(cycle) + state["campaign"]["cycles"]]
        calendar = site_availability.invoke({"site_id": site})
        if set(wanted) & set(calendar["booked"]):
            return {"cursor": state["cursor"] + 1}
        hold = place_hold.invoke({"site_id": site, "cycle": cycle})
        return {
            "held": [{"site": site, "cycle": cycle, "hold": hold["hold"], "hold_cycle": hold["cycle"]}],
            "cursor": state["cursor"] + 1,
        }

    def more_holds(state: Desk) -> str:
        enough = len(state.get("held", [])) >= state["campaign"]["sites"]
        return "quote_site" if enough or state["cursor"] >= len(state["candidates"]) else "hold_next"

    def quote_site(state: Desk) -> dict:
        i = state.get("quote_cursor", 0)
        site = state["held"][i]["site"]
        card = rate_card.invoke({"site_id": site})
        reply = rate_reader.invoke(
            [
                ("system", "You read rate cards into quote lines, as JSON."),
                ("user", f"CAMPAIGN: {json.dumps(state['campaign'])}\nRATE: {json.dumps(card)}"),
            ]
        )
        line = json.loads(reply.content)
        line["start"] = _read_date(line["start"]).isoformat()
        return {"lines": [line], "quote_cursor": i + 1}

    def more_quotes(state: Desk) -> str:
        return "quote_site" if state["quote_cursor"] < len(state["held"]) else "price_campaign"

    def price_campaign(state: Desk) -> dict:
        per_pound = 1 if kit.on("billboards-pence") else 100
        rows = [
            {**line, "cost_gbp": round(line["weekly_rate_pence"] / per_pound * line["weeks"], 2)}
            for line in state["lines"]
        ]
        impacts = sum(SITES[r["site"]][3] * r["weeks"] for r in rows)
        total = round(sum(r["cost_gbp"] for r in rows), 2)
        return {
            "pricing": {
                "rows": rows,
                "total_gbp": total,
                "impacts": impacts,
                "cpm_gbp": round(total / impacts * 1000, 2),
            }
        }

    def credit_check(state: Desk) -> dict:
        out = credit_desk.invoke({"brief": state["campaign"]})
        return {"credit": out["decision"]}

    def build_contract(state: Desk) -> dict:
        c = state["campaign"]
        return {
            "contract": {
                "ref": c["ref"],
                "party": c["advertiser"],
                "agency": c.get("agency"),
                "sites": [
                    {**h, **next(r for r in state["pricing"]["rows"] if r["site"] == h["site"])}
                    for h in state["held"]
                ],
                "total_gbp": state["pricing"]["total_gbp"],
                "credit_check": state["credit"]["check"],
            }
        }

    def validate_contract(state: Desk) -> dict:
        contract, campaign, credit = state["contract"], state["campaign"], state["credit"]
        if len(contract["sites"]) != campaign["sites"]:
            raise ValueError(
                f"contract {contract['ref']} holds {len(contract['sites'])} sites; the brief asks for "
                f"{campaign['sites']}"
            )
        for s in contract["sites"]:
            if campaign["illuminated"] and not SITES[s["site"]][2]:
                raise ValueError(
                    f"contract {contract['ref']} includes {s['site']}, an unlit site, on an "
                    f"illuminated-only brief"
                )
            if s["hold_cycle"] != s["cycle"]:
                raise ValueError(
                    f"contract {contract['ref']} books {s['site']} for cycle {s['cycle']} but hold "
                    f"{s['hold']} is for cycle {s['hold_cycle']}"
                )
            if s["start"] != campaign["start_date"]:
                raise ValueError(
                    f"contract {contract['ref']}: {s['site']} starts {s['start']}; the campaign starts "
                    f"{campaign['start_date']}"
                )
        if contract["total_gbp"] > campaign["budget_gbp"]:
            raise ValueError(
                f"contract {contract['ref']} totals GBP {contract['total_gbp']:,.2f}, over the approved "
                f"budget of GBP {campaign['budget_gbp']:,}"
            )
        if credit["company"] != contract["party"]:
            raise ValueError(
                f"credit check {credit['check']} covers {credit['company']}; the contract party is "
                f"{contract['party']}"
            )
        return {}

    g = StateGraph(Desk)
    for fn in (
        read_brief,
        search_inventory,
        shortlist,
        hold_next,
        quote_site,
        price_campaign,
        credit_check,
        build_contract,
        validate_contract,
    ):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "read_brief")
    g.add_edge("read_brief", "search_inventory")
    g.add_edge("search_inventory", "shortlist")
    g.add_edge("shortlist", "hold_next")
    g.add_conditional_edges("hold_next", more_holds, ["hold_next", "quote_site"])
    g.add_conditional_edges("quote_site", more_quotes, ["quote_site", "price_campaign"])
    g.add_edge("price_campaign", "credit_check")
    g.add_edge("credit_check", "build_contract")
    g.add_edge("build_contract", "validate_contract")
    g.add_edge("validate_contract", END)
    return g.compile(name=NAME)


def record(server: Any, key: str, path: Path) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    server.use(brain)
    llm = ChatOpenAI(
        base_url=server.base_url, api_key="not-needed", model=common.MODEL, max_retries=0, temperature=0
    )
    brief = INPUTS[key]
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"book campaign {brief['ref']}")
    try:
        build(llm).invoke({"brief": brief["text"]}, config={"callbacks": [tracer], "recursion_limit": 60})
    except ValueError:
        pass
