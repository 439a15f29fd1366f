"""Shoe repair kiosks: the morning dispatch of repair tickets across three kiosks (openai_agents route, Responses API).

Shape: an Agents SDK coordinator: the model saves a plan, then per kiosk lists the tickets and the parts
stock (two tools in one turn), assigns each ticket a lane and a promised date, and writes the workshop
tickets to memory; a courier sub-agent run as a tool reads the memory and books the van; then the validator tool.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re

import kit
from agents import (
    Agent,
    ModelSettings,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    function_tool,
    set_trace_processors,
)
from common import result_json, system_text, tool_history, user_text
from openai import AsyncOpenAI
from pydantic import BaseModel

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call


NAME = "kiosk-dispatch-coordinator"
ROUTE = "openai_agents"
DOMAIN = "shoe repair kiosks"
SHAPE = "Agents SDK coordinator (Responses API): plan tool, per kiosk tickets + stock (parallel), assignment, memory write; courier sub-agent (as tool: recall, van booking); validator tool"

KIOSKS = {"K1": "Central Station", "K2": "Market Hall", "K3": "Airport Arrivals"}
SERVICES = {  # lane, days, part needed
    "heel": ("kiosk", 0, "heel_block"),
    "key": ("kiosk", 0, None),
    "zip": ("kiosk", 1, "zip_20cm"),
    "glued resole": ("kiosk", 2, "rubber_sole"),
    "welted resole": ("workshop", 7, None),
    "stitching": ("workshop", 5, None),
}
PART_WAIT_DAYS = 3


def _t(tid, service, shoe):
    return {"ticket": tid, "service": service, "shoe": shoe}


def _day(date, k1, k2, k3, stock_today, stock_yesterday, note=None):
    return {
        "date": date,
        "tickets": {"K1": k1, "K2": k2, "K3": k3},
        "stock": stock_today,
        "stock_yesterday": stock_yesterday,
        "note": note,
    }


FULL = {"heel_block": 20, "zip_20cm": 6, "rubber_sole": 8}
INPUTS = {
    "d0309": _day(
        "2026-03-09",
        [
            _t("T-1101", "heel", "court shoe"),
            _t("T-1102", "welted resole", "brogue"),
            _t("T-1103", "key", "-"),
        ],
        [_t("T-2101", "zip", "ankle boot"), _t("T-2102", "heel", "loafer")],
        [_t("T-3101", "glued resole", "trainer"), _t("T-3102", "stitching", "holdall")],
        {k: dict(FULL) for k in KIOSKS},
        {k: dict(FULL) for k in KIOSKS},
    ),
    "d0310": _day(
        "2026-03-10",
        [_t("T-1111", "heel", "boot"), _t("T-1112", "zip", "jacket")],
        [
            _t("T-2111", "welted resole", "chelsea boot"),
            _t("T-2112", "key", "-"),
            _t("T-2113", "heel", "stiletto"),
        ],
        [_t("T-3111", "heel", "court shoe")],
        {k: dict(FULL) for k in KIOSKS},
        {k: dict(FULL) for k in KIOSKS},
        note=("K1", "T-1111 (heel): customer will collect at Market Hall on 2026-03-11."),
    ),
    "d0311": _day(
        "2026-03-11",
        [_t("T-1121", "glued resole", "trainer"), _t("T-1122", "key", "-")],
        [_t("T-2121", "glued resole", "deck shoe"), _t("T-2122", "heel", "brogue")],
        [_t("T-3121", "zip", "boot")],
        {"K1": dict(FULL), "K2": {**FULL, "rubber_sole": 0}, "K3": dict(FULL)},
        {k: dict(FULL) for k in KIOSKS},
    ),
    "d0312": _day(
        "2026-03-12",
        [_t("T-1131", "heel", "boot"), _t("T-1132", "stitching", "satchel")],
        [_t("T-2131", "key", "-"), _t("T-2132", "welted resole", "oxford")],
        [_t("T-3131", "zip", "jacket"), _t("T-3132", "heel", "loafer")],
        {k: dict(FULL) for k in KIOSKS},
        {k: dict(FULL) for k in KIOSKS},
    ),
    "d0313": _day(
        "2026-03-13",
        [_t("T-1141", "welted resole", "derby"), _t("T-1142", "heel", "court shoe")],
        [_t("T-2141", "stitching", "rucksack"), _t("T-2142", "zip", "boot")],
        [_t("T-3141", "key", "-")],
        {k: dict(FULL) for k in KIOSKS},
        {k: dict(FULL) for k in KIOSKS},
    ),
    "d0316": _day(
        "2026-03-16",
        [_t("T-1151", "key", "-"), _t("T-1152", "stitching", "wallet")],
        [_t("T-2151", "heel", "boot"), _t("T-2152", "glued resole", "trainer")],
        [_t("T-3151", "welted resole", "brogue"), _t("T-3152", "zip", "holdall")],
        {"K1": dict(FULL), "K2": dict(FULL), "K3": {**FULL, "zip_20cm": 0}},
        {"K1": dict(FULL), "K2": dict(FULL), "K3": {**FULL, "zip_20cm": 0}},
    ),
    "d0317": _day(
        "2026-03-17",
        [_t("T-1161", "heel", "stiletto"), _t("T-1162", "welted resole", "boot")],
        [_t("T-2161", "key", "-")],
        [_t("T-3161", "glued resole", "trainer"), _t("T-3162", "heel", "loafer")],
        {k: dict(FULL) for k in KIOSKS},
        {k: dict(FULL) for k in KIOSKS},
        note=("K2", "T-2161 (key): customer will collect at Market Hall on 2026-03-18."),
    ),
    "d0318": _day(
        "2026-03-18",
        [_t("T-1171", "zip", "coat")],
        [_t("T-2171", "stitching", "bag"), _t("T-2172", "heel", "boot")],
        [_t("T-3171", "heel", "court shoe"), _t("T-3172", "key", "-")],
        {k: dict(FULL) for k in KIOSKS},
        {k: dict(FULL) for k in KIOSKS},
    ),
    "d0319": _day(
        "2026-03-19",
        [_t("T-1181", "glued resole", "trainer"), _t("T-1182", "heel", "loafer")],
        [_t("T-2181", "welted resole", "brogue")],
        [_t("T-3181", "stitching", "holdall"), _t("T-3182", "zip", "boot")],
        {"K1": {**FULL, "rubber_sole": 0}, "K2": dict(FULL), "K3": dict(FULL)},
        {"K1": {**FULL, "rubber_sole": 0}, "K2": dict(FULL), "K3": dict(FULL)},
    ),
}
REFS = ["d0316", "d0317", "d0318", "d0319"]
CASES = [
    {
        "id": "shoe_c1",
        "kind": "plan_error",
        "input": "d0309",
        "root": ("response", 1),
        "failure": "validate_dispatch",
        "description": "The model's saved plan lists only K1 and K2, so the Airport kiosk's tickets T-3101 and T-3102 are never assigned.",
    },
    {
        "id": "shoe_c2",
        "kind": "context_pollution",
        "input": "d0310",
        "root": ("list_tickets", 2),
        "failure": "validate_dispatch",
        "description": "Market Hall's ticket list carries Central Station's handover note about T-1111, and the model assigns T-1111 at K2 as well as at K1.",
    },
    {
        "id": "shoe_c3",
        "kind": "stale_data",
        "input": "d0311",
        "root": ("parts_stock", 2),
        "failure": "validate_dispatch",
        "description": "Market Hall's parts stock is served from yesterday's count (8 rubber soles, none today), so T-2121's glued resole is promised in 2 days instead of 5.",
    },
    {
        "id": "shoe_c4",
        "kind": "wrong_routing",
        "input": "d0312",
        "root": ("response", 6),
        "failure": "validate_dispatch",
        "description": "The model sends T-2132's welted resole to the kiosk lane with a same-week glued-resole promise instead of to the workshop.",
    },
    {
        "id": "shoe_c5",
        "kind": "bad_memory_write",
        "input": "d0313",
        "root": ("remember", 2),
        "failure": "validate_dispatch",
        "description": "The memory tool files Market Hall's workshop tickets under K1, overwriting T-1141, so the van never collects T-1141 and is sent to K1 for T-2141.",
    },
]


class Assignment(BaseModel):
    ticket: str
    lane: str
    promised: str


class Stop(BaseModel):
    kiosk: str
    tickets: list[str]


STATE: dict = {"day": None, "memory": {}, "assigned": [], "van": None, "last_kiosk": None}


@function_tool
def save_plan(kiosks: list[str], steps: list[str]) -> str:
    """Save the dispatch plan for today: the kiosks to cover, in order, and the steps per kiosk."""
    return json.dumps({"saved": True, "kiosks": kiosks, "steps": steps})


@function_tool
def list_tickets(kiosk: str) -> str:
    """Open repair tickets at a kiosk, with the shift handover notes."""
    day = STATE["day"]
    notes = []
    note = day.get("note")
    if note and (note[0] == kiosk or (kit.on("shoe_c2") and kiosk == "K2")):
        notes.append(note[1])
    return json.dumps(
        {"kiosk": kiosk, "date": day["date"], "tickets": day["tickets"][kiosk], "handover_notes": notes}
    )


@function_tool
def parts_stock(kiosk: str) -> str:
    """Parts in stock at a kiosk now."""
    day = STATE["day"]
    stock = day["stock_yesterday"] if kit.on("shoe_c3") and kiosk == "K2" else day["stock"]
    return json.dumps({"kiosk": kiosk, "parts": stock[kiosk]})


@function_tool
def assign_repairs(kiosk: str, assignments: list[Assignment]) -> str:
    """Assign a kiosk's tickets: each {ticket, lane: kiosk|workshop, promised: YYYY-MM-DD}."""
    for a in assignments:
        STATE["assigned"].append({"kiosk": kiosk, **a.model_dump()})
    return json.dumps({"kiosk": kiosk, "assigned": len(assignments)})


@function_tool
def remember(kiosk: str, workshop_tickets: list[str]) -> str:
    """Write a kiosk's workshop tickets to the shared notes the courier reads."""
    key = kiosk
    if kit.on("shoe_c5") and STATE["last_kiosk"] is not None:
        key = STATE["last_kiosk"]
    STATE["memory"][key] = list(workshop_tickets)
    STATE["last_kiosk"] = key
    return json.dumps({"kiosk": kiosk, "filed_under": key, "noted": len(workshop_tickets)})


@function_tool
def recall_notes() -> str:
    """The workshop tickets noted for each kiosk today."""
    return json.dumps(STATE["memory"])


@function_tool
def book_van(date: str, stops: list[Stop]) -> str:
    """Book the workshop van: stops [{kiosk, tickets}]."""
    STATE["van"] = {"date": date, "stops": [x.model_dump() for x in stops]}
    return json.dumps({"van": "V2", "date": date, "stops": len(stops)})


@function_tool(failure_error_function=None)
def validate_dispatch(date: str) -> str:
    """Check today's dispatch against the repair rules before the kiosks open."""
    day = STATE["day"]
    by_ticket: dict[str, list[dict]] = {}
    for a in STATE["assigned"]:
        by_ticket.setdefault(a["ticket"], []).append(a)
    pickups = {(s["kiosk"], t) for s in (STATE["van"] or {"stops": []})["stops"] for t in s["tickets"]}
    today = dt.date.fromisoformat(date)
    for kiosk, tickets in day["tickets"].items():
        for t in tickets:
            got = by_ticket.get(t["ticket"], [])
            if not got:
                raise ValueError(f"{t['ticket']} at {kiosk} ({KIOSKS[kiosk]}) has no assignment")
            if len(got) > 1:
                raise ValueError(f"{t['ticket']} is assigned at {', '.join(a['kiosk'] for a in got)}")
            a = got[0]
            lane, days, part = SERVICES[t["service"]]
            if a["kiosk"] != kiosk:
                raise ValueError(f"{t['ticket']} is held at {kiosk} but assigned at {a['kiosk']}")
            if a["lane"] != lane:
                raise ValueError(
                    f"{t['ticket']} ({t['service']}) must go to the {lane} lane, not {a['lane']}"
                )
            if part and day["stock"][kiosk].get(part, 0) == 0:
                days += PART_WAIT_DAYS
            earliest = (today + dt.timedelta(days=days)).isoformat()
            if a["promised"] < earliest:
                raise ValueError(
                    f"{t['ticket']} ({t['service']}) promised {a['promised']}, cannot be ready before {earliest}"
                )
            if lane == "workshop" and (kiosk, t["ticket"]) not in pickups:
                raise ValueError(f"workshop ticket {t['ticket']} at {kiosk} has no van pickup")
    for kiosk, ticket in pickups:
        if ticket not in {t["ticket"] for t in day["tickets"][kiosk]}:
            raise ValueError(f"the van is sent to {kiosk} for {ticket}, which is not held there")
    return json.dumps({"date": date, "tickets": len(by_ticket), "status": "dispatched"})


COORD_INSTRUCTIONS = (
    "You coordinate the morning dispatch of a chain of shoe repair kiosks. Save a plan first, then "
    "for each kiosk list its tickets and parts stock, assign every ticket a lane and a promised date, "
    "and note the workshop tickets for the courier. Then ask the courier planner and validate."
)
COURIER_INSTRUCTIONS = (
    "You plan the workshop van run for the shoe repair kiosks. Read the notes, book the van with "
    "one stop per kiosk that has workshop tickets, then answer with a one-line summary."
)


def _assign(day: dict, kiosk: str, listing: dict, stock: dict) -> list[dict]:
    today = dt.date.fromisoformat(day["date"])
    out = []
    for t in listing["tickets"]:
        lane, days, part = SERVICES[t["service"]]
        if kit.on("shoe_c4") and t["service"] == "welted resole":
            lane, days, part = SERVICES["glued resole"]
        if part and stock["parts"].get(part, 0) == 0:
            days += PART_WAIT_DAYS
        out.append(
            {"ticket": t["ticket"], "lane": lane, "promised": (today + dt.timedelta(days=days)).isoformat()}
        )
    for note in listing["handover_notes"]:
        m = re.match(r"(T-\d+) \(([a-z ]+)\): customer will collect at .+ on (\d{4}-\d\d-\d\d)", note)
        tid, service, when = m.group(1), m.group(2), m.group(3)
        known = [a for a in out if a["ticket"] == tid]
        if known:
            known[0]["promised"] = max(known[0]["promised"], when)
        else:
            out.append({"ticket": tid, "lane": SERVICES[service][0], "promised": when})
    return out


def coordinator_policy(day: dict):
    def coordinator(request):
        hist = tool_history(request)
        done: dict = {}
        for name, args, res in hist:
            if not res.startswith("An error occurred"):
                done[(name, args.get("kiosk"))] = result_json(res)
        if ("save_plan", None) not in done:
            kiosks = ["K1", "K2"] if kit.on("shoe_c1") else ["K1", "K2", "K3"]
            return Reply(
                tool_calls=(
                    tool_call(
                        "save_plan",
                        {
                            "kiosks": kiosks,
                            "steps": ["list_tickets", "parts_stock", "assign_repairs", "remember"],
                        },
                    ),
                )
            )
        plan = done[("save_plan", None)]["kiosks"]
        for k in plan:
            if ("list_tickets", k) not in done:
                return Reply(
                    tool_calls=(
                        tool_call("list_tickets", {"kiosk": k}),
                        tool_call("parts_stock", {"kiosk": k}),
                    )
                )
            if ("assign_repairs", k) not in done:
                assignments = _assign(day, k, done[("list_tickets", k)], done[("parts_stock", k)])
                return Reply(
                    tool_calls=(tool_call("assign_repairs", {"kiosk": k, "assignments": assignments}),)
                )
            if ("remember", k) not in done:
                ws = [
                    t["ticket"]
                    for t in done[("list_tickets", k)]["tickets"]
                    if SERVICES[t["service"]][0] == "workshop"
                ]
                return Reply(tool_calls=(tool_call("remember", {"kiosk": k, "workshop_tickets": ws}),))
        if ("courier_planner", None) not in done:
            return Reply(
                tool_calls=(
                    tool_call("courier_planner", {"input": f"Plan the workshop van run for {day['date']}."}),
                )
            )
        if ("validate_dispatch", None) not in done:
            return Reply(tool_calls=(tool_call("validate_dispatch", {"date": day["date"]}),))
        return f"Dispatch for {day['date']} is done."

    def courier(request):
        hist = tool_history(request)
        done = {name: result_json(res) for name, _a, res in hist}
        date = re.search(r"\d{4}-\d\d-\d\d", user_text(request)).group(0)
        if "recall_notes" not in done:
            return Reply(tool_calls=(tool_call("recall_notes", {}),))
        if "book_van" not in done:
            stops = [{"kiosk": k, "tickets": v} for k, v in sorted(done["recall_notes"].items()) if v]
            return Reply(tool_calls=(tool_call("book_van", {"date": date, "stops": stops}),))
        return f"Van V2 booked for {date} with {done['book_van']['stops']} stops."

    def brain(request):
        if system_text(request).startswith("You plan the workshop van run"):
            return courier(request)
        return coordinator(request)

    return brain


def record(server, inp: dict, path: str) -> None:
    STATE.update(day=inp, memory={}, assigned=[], van=None, last_kiosk=None)
    server.use(coordinator_policy(inp))
    asyncio.run(_record(server, inp, path))


async def _record(server, inp: dict, path: str) -> None:
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIResponsesModel(model=server.model, openai_client=client)
    settings = ModelSettings(temperature=0)
    courier = Agent(
        name="courier_planner",
        instructions=COURIER_INSTRUCTIONS,
        model=model,
        model_settings=settings,
        tools=[recall_notes, book_van],
    )
    coordinator = Agent(
        name="dispatch_coordinator",
        instructions=COORD_INSTRUCTIONS,
        model=model,
        model_settings=settings,
        tools=[
            save_plan,
            list_tickets,
            parts_stock,
            assign_repairs,
            remember,
            courier.as_tool(
                tool_name="courier_planner", tool_description="Plan and book the workshop van run."
            ),
            validate_dispatch,
        ],
    )
    processor = TrajdebugProcessor(path=path, name=NAME, task=f"dispatch the repair tickets of {inp['date']}")
    set_trace_processors([processor])
    try:
        await Runner.run(
            coordinator,
            f"Run the dispatch for {inp['date']} across kiosks K1, K2 and K3.",
            max_turns=30,
            run_config=RunConfig(workflow_name=NAME),
        )
    except Exception as exc:  # the validator's rejection ends the run
        if "validate_dispatch" not in str(exc):
            raise
    finally:
        set_trace_processors([])
        await client.close()
