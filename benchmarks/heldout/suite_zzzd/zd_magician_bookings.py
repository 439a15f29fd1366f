"""A stage magician's bookings: OpenAI Agents SDK on Chat Completions with a front desk that hands off to one
of two booking agents, a venue scout sub-agent run as a tool, and a structured confirmation whose schema checks
the stage against the illusions.

Shape: front_desk (enquiry_lookup, hand-off) -> corporate_bookings | private_parties (diary_check +
illusion_kit in parallel, venue_scout sub-agent (venue_details), rider_text, quote_fee, hold_date,
issue_contract, book_transport, structured BookingConfirmation).  About 35-45 steps.
"""

from __future__ import annotations

import ast
import asyncio
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from pydantic import BaseModel, model_validator

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call


NAME = "magician-bookings"
SHORT = "magician"
ROUTE = "openai_agents"
DOMAIN = "stage magician's bookings"
SHAPE = "Agents SDK: front desk with hand-off to one of two booking agents, sub-agent as tool, parallel pair, structured output check; 35-40 steps"

RIDER_WITH_ARCHIVE = False
SCOUT_READS_OLD_VENUE = False
DESK_SENDS_TO_PRIVATE = False
DIARY_TIMEOUT_READS_FREE = False
KIT_FROM_LAST_SEASON = False
SWITCHES = [
    "RIDER_WITH_ARCHIVE",
    "SCOUT_READS_OLD_VENUE",
    "DESK_SENDS_TO_PRIVATE",
    "DIARY_TIMEOUT_READS_FREE",
    "KIT_FROM_LAST_SEASON",
]

ENQUIRIES = {
    "ENQ-501": {
        "client": "Hargreaves Ltd",
        "segment": "corporate",
        "date": "2026-09-12",
        "venue": "The Grand, Harrogate",
        "guests": 220,
        "show": "Grand Illusions",
        "po": "PO-88412",
        "notes": "Client saw the show at The Grand, Brighton last year.",
    },
    "ENQ-502": {
        "client": "Fenwick family",
        "segment": "private",
        "date": "2026-08-22",
        "venue": "Ashcombe Barn",
        "guests": 90,
        "show": "Close-up Parlour",
        "po": None,
        "notes": "Wedding reception, after dinner.",
    },
    "ENQ-503": {
        "client": "Northern Rail Trust",
        "segment": "corporate",
        "date": "2026-10-03",
        "venue": "Albert Hall, Nottingham",
        "guests": 400,
        "show": "Grand Illusions",
        "po": "PO-20931",
        "notes": "Annual gala.",
    },
    "ENQ-504": {
        "client": "Mrs Okoro",
        "segment": "private",
        "date": "2026-07-18",
        "venue": "Riverside Marquee",
        "guests": 60,
        "show": "Family Matinee",
        "po": None,
        "notes": "Twins' tenth birthday.",
    },
    "ENQ-505": {
        "client": "Castleford Rotary",
        "segment": "corporate",
        "date": "2026-11-21",
        "venue": "Civic Hall, Castleford",
        "guests": 150,
        "show": "Mind and Mystery",
        "po": "PO-5510",
        "notes": "Charity dinner.",
    },
}
VENUES = {
    "The Grand, Harrogate": {"stage_depth_m": 7.5, "get_in": "dock door 2.4 m", "power": "63A three-phase"},
    "The Grand, Brighton": {"stage_depth_m": 4.2, "get_in": "side door 1.8 m", "power": "32A"},
    "Ashcombe Barn": {"stage_depth_m": 3.0, "get_in": "barn doors", "power": "16A"},
    "Albert Hall, Nottingham": {"stage_depth_m": 9.0, "get_in": "lift 3 m", "power": "125A three-phase"},
    "Riverside Marquee": {"stage_depth_m": 4.0, "get_in": "open side", "power": "generator"},
    "Civic Hall, Castleford": {"stage_depth_m": 6.0, "get_in": "rear ramp", "power": "32A"},
}
KITS = {
    "Grand Illusions": {
        "props": ["Vanishing Piano", "Levitation frame", "Sword cabinet"],
        "stage_depth_m": 6.0,
    },
    "Close-up Parlour": {"props": ["card table", "cups and balls"], "stage_depth_m": 2.0},
    "Family Matinee": {
        "props": ["rabbit hutch", "colour-change silks", "balloon cannon"],
        "stage_depth_m": 3.0,
    },
    "Mind and Mystery": {"props": ["blackboard", "sealed envelopes", "Zig-zag lady"], "stage_depth_m": 4.0},
}
KITS_LAST_SEASON = {
    "Mind and Mystery": {"props": ["blackboard", "sealed envelopes", "Zig-zag cabinet"], "stage_depth_m": 4.0}
}
STORE = {
    "Vanishing Piano",
    "Levitation frame",
    "Sword cabinet",
    "card table",
    "cups and balls",
    "rabbit hutch",
    "colour-change silks",
    "balloon cannon",
    "blackboard",
    "sealed envelopes",
    "Zig-zag lady",
}
HELD = {("Ashcombe Barn", "2026-07-18"): "Lambert christening"}
CREW = {
    "2026-09-12": ["Dee", "Sam"],
    "2026-08-22": ["Sam"],
    "2026-10-03": ["Dee", "Sam", "Ravi"],
    "2026-07-18": ["Ravi"],
    "2026-11-21": ["Dee"],
}
FEES = {"corporate": 14.0, "private": 9.0}
ARCHIVE = [
    {"show": f"Show {i}", "venue": f"Venue {i % 37}", "notes": "standard rider, two crew, " * 8}
    for i in range(600)
]

INPUTS = [{"enquiry": e} for e in ("ENQ-501", "ENQ-502", "ENQ-503", "ENQ-504", "ENQ-505")]

CASES = [
    {
        "input": 2,
        "switch": "RIDER_WITH_ARCHIVE",
        "fault_kind": "context_pollution",
        "root": ("rider_text", 1, "tool"),
        "failure": ("generation fake-model", 8),
        "description": "The rider tool returned the show's rider together with the whole archive of 600 past shows, "
        "and the next model request went over the context limit.",
    },
    {
        "input": 0,
        "switch": "SCOUT_READS_OLD_VENUE",
        "fault_kind": "subagent_wrong_entity",
        "root": ("generation fake-model", 5, "llm"),
        "failure": ("turn 10", 1),
        "description": "The venue scout sub-agent looked up The Grand, Brighton (named in the client's notes) "
        "instead of The Grand, Harrogate.",
    },
    {
        "input": 4,
        "switch": "DESK_SENDS_TO_PRIVATE",
        "fault_kind": "wrong_routing",
        "root": ("generation fake-model", 2, "llm"),
        "failure": ("issue_contract", 1),
        "description": "The front desk handed a corporate enquiry (Castleford Rotary) to the private parties agent.",
    },
    {
        "input": 3,
        "switch": "DIARY_TIMEOUT_READS_FREE",
        "fault_kind": "swallowed_error",
        "root": ("diary_check", 1, "tool"),
        "failure": ("book_transport", 1),
        "description": "The diary check caught the crew calendar's timeout and answered an empty crew list for "
        "2026-07-18.",
    },
    {
        "input": 4,
        "switch": "KIT_FROM_LAST_SEASON",
        "fault_kind": "stale_data",
        "root": ("illusion_kit", 1, "tool"),
        "failure": ("book_transport", 1),
        "description": "The kit list for Mind and Mystery came from last season's manifest, which still has the "
        "Zig-zag cabinet sold in February.",
    },
]


class BookingConfirmation(BaseModel):
    client: str
    venue: str
    date: str
    show: str
    fee_gbp: float
    stage_depth_m: float
    stage_needed_m: float
    contract: str

    @model_validator(mode="after")
    def stage_fits(self):
        if self.stage_depth_m < self.stage_needed_m:
            raise ValueError(
                f"stage depth {self.stage_depth_m} m at {self.venue} is less than the "
                f"{self.stage_needed_m} m {self.show} needs"
            )
        return self


class _CalendarTimeout(Exception):
    pass


def _crew_calendar(day):
    if DIARY_TIMEOUT_READS_FREE:
        raise _CalendarTimeout("crew calendar did not answer in 5 s")
    return list(CREW.get(day, []))


@function_tool(failure_error_function=None)
def enquiry_lookup(enquiry: str) -> dict:
    """The enquiry as the client filled it in."""
    return {"enquiry": enquiry, **ENQUIRIES[enquiry]}


@function_tool(failure_error_function=None)
def diary_check(venue: str, day: str) -> dict:
    """Whether the magician's diary and the venue are free on a day."""
    try:
        crew = _crew_calendar(day)
    except Exception:  # noqa: BLE001
        crew = []
    return {"venue": venue, "day": day, "free": (venue, day) not in HELD, "crew": crew}


@function_tool(failure_error_function=None)
def illusion_kit(show: str) -> dict:
    """The props a show travels with and the stage depth it needs."""
    kit = KITS_LAST_SEASON.get(show) if KIT_FROM_LAST_SEASON else None
    return {"show": show, **(kit or KITS[show])}


@function_tool(failure_error_function=None)
def venue_details(venue: str) -> dict:
    """Technical details of a venue."""
    return {"venue": venue, **VENUES[venue]}


@function_tool(failure_error_function=None)
def rider_text(show: str) -> dict:
    """The technical rider to send with the contract."""
    rider = {"show": show, "rider": f"{show}: two crew, blackout, one 16A socket stage left, 90 min get-in."}
    if RIDER_WITH_ARCHIVE:
        rider["archive"] = ARCHIVE
    return rider


@function_tool(failure_error_function=None)
def quote_fee(show: str, guests: int, segment: str) -> dict:
    """The fee for a show."""
    base = {"Grand Illusions": 2400, "Close-up Parlour": 650, "Family Matinee": 480, "Mind and Mystery": 900}[
        show
    ]
    return {"show": show, "segment": segment, "fee_gbp": base + FEES[segment] * guests}


@function_tool(failure_error_function=None)
def hold_date(venue: str, day: str) -> dict:
    """Put a hold on the venue's diary for the day."""
    held = HELD.get((venue, day))
    if held:
        raise RuntimeError(f"{venue} is already held on {day} for {held}")
    return {"venue": venue, "day": day, "hold": f"H-{day.replace('-', '')}"}


@function_tool(failure_error_function=None)
def issue_contract(client: str, template: str, fee_gbp: float, purchase_order: str) -> dict:
    """Issue the contract from a template (corporate or private)."""
    if ENQUIRY_SEGMENT.get(client) == "corporate" and (template != "corporate" or not purchase_order):
        raise ValueError(
            f"{client} is a corporate client: the accounts office needs a corporate contract with a "
            f"purchase order, got a {template} contract with purchase order '{purchase_order}'"
        )
    return {"contract": f"C-{len(client):02d}{int(fee_gbp)}", "template": template}


@function_tool(failure_error_function=None)
def book_transport(props: list[str], day: str, crew: list[str]) -> dict:
    """Book the van and pull the props from the store."""
    if not crew:
        raise RuntimeError(f"no crew rostered on {day} to drive the van")
    for p in props:
        if p not in STORE:
            raise LookupError(f"prop '{p}' is not in the store")
    return {"van": "Luton 3.5t", "day": day, "props": len(props), "driver": crew[0]}


ENQUIRY_SEGMENT = {e["client"]: e["segment"] for e in ENQUIRIES.values()}


def _results(messages):
    names = {}
    for m in messages:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
    out = {}
    for m in messages:
        if m.get("role") == "tool":
            name = names[m["tool_call_id"]]
            try:
                out[name] = ast.literal_eval(m["content"])
            except (ValueError, SyntaxError):
                out[name] = json.loads(m["content"]) if m["content"].startswith("{") else m["content"]
    return out


def policy(request):
    messages = request.body.get("messages") or []
    if len(json.dumps(messages)) > 60000:
        return Reply(
            status=400,
            error="This model's maximum context length is 16385 tokens; the messages "
            "resulted in 31022 tokens. Please reduce the length of the messages.",
        )
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    got = _results(messages)
    if system.startswith("Venue scout"):
        ask = json.loads(next(m["content"] for m in messages if m["role"] == "user"))
        if "venue_details" not in got:
            venue = ask["venue"]
            if SCOUT_READS_OLD_VENUE and "The Grand, Brighton" in ask.get("notes", ""):
                venue = "The Grand, Brighton"
            return Reply(tool_calls=(tool_call("venue_details", {"venue": venue}),))
        v = got["venue_details"]
        return json.dumps({"venue": v["venue"], "stage_depth_m": v["stage_depth_m"], "get_in": v["get_in"]})
    if system.startswith("Front desk"):
        enquiry = next(m["content"] for m in messages if m["role"] == "user")
        if "enquiry_lookup" not in got:
            return Reply(tool_calls=(tool_call("enquiry_lookup", {"enquiry": enquiry}),))
        seg = got["enquiry_lookup"]["segment"]
        if DESK_SENDS_TO_PRIVATE and got["enquiry_lookup"]["client"] == "Castleford Rotary":
            seg = "private"
        target = "transfer_to_corporate_bookings" if seg == "corporate" else "transfer_to_private_parties"
        return Reply(tool_calls=(tool_call(target, {}),))
    template = "corporate" if system.startswith("Corporate") else "private"
    e = got["enquiry_lookup"]
    if "diary_check" not in got:
        return Reply(
            tool_calls=(
                tool_call("diary_check", {"venue": e["venue"], "day": e["date"]}),
                tool_call("illusion_kit", {"show": e["show"]}),
            )
        )
    if "venue_scout" not in got:
        return Reply(
            tool_calls=(
                tool_call("venue_scout", {"input": json.dumps({"venue": e["venue"], "notes": e["notes"]})}),
            )
        )
    if "rider_text" not in got:
        return Reply(tool_calls=(tool_call("rider_text", {"show": e["show"]}),))
    if "quote_fee" not in got:
        return Reply(
            tool_calls=(
                tool_call("quote_fee", {"show": e["show"], "guests": e["guests"], "segment": template}),
            )
        )
    if "hold_date" not in got:
        return Reply(tool_calls=(tool_call("hold_date", {"venue": e["venue"], "day": e["date"]}),))
    if "issue_contract" not in got:
        return Reply(
            tool_calls=(
                tool_call(
                    "issue_contract",
                    {
                        "client": e["client"],
                        "template": template,
                        "fee_gbp": got["quote_fee"]["fee_gbp"],
                        "purchase_order": e["po"] or "",
                    },
                ),
            )
        )
    if "book_transport" not in got:
        return Reply(
            tool_calls=(
                tool_call(
                    "book_transport",
                    {
                        "props": got["illusion_kit"]["props"],
                        "day": e["date"],
                        "crew": got["diary_check"]["crew"],
                    },
                ),
            )
        )
    scout = got["venue_scout"] if isinstance(got["venue_scout"], dict) else json.loads(got["venue_scout"])
    return json.dumps(
        {
            "client": e["client"],
            "venue": scout["venue"],
            "date": e["date"],
            "show": e["show"],
            "fee_gbp": got["quote_fee"]["fee_gbp"],
            "stage_depth_m": scout["stage_depth_m"],
            "stage_needed_m": got["illusion_kit"]["stage_depth_m"],
            "contract": got["issue_contract"]["contract"],
        }
    )


def _agents():
    scout = Agent(
        name="venue_scout",
        model="fake-model",
        tools=[venue_details],
        instructions="Venue scout: look up the venue you are given and report its stage depth and get-in.",
    )
    tools = [
        diary_check,
        illusion_kit,
        scout.as_tool(tool_name="venue_scout", tool_description="Scout a venue's stage and get-in."),
        rider_text,
        quote_fee,
        hold_date,
        issue_contract,
        book_transport,
    ]
    corporate = Agent(
        name="corporate_bookings",
        model="fake-model",
        tools=tools,
        output_type=BookingConfirmation,
        instructions="Corporate bookings: check the diary and kit, scout the venue, quote, hold the date, "
        "issue the contract with the client's purchase order, book transport, confirm.",
    )
    private = Agent(
        name="private_parties",
        model="fake-model",
        tools=tools,
        output_type=BookingConfirmation,
        instructions="Private parties: check the diary and kit, scout the venue, quote, hold the date, "
        "issue a private contract, book transport, confirm.",
    )
    desk = Agent(
        name="front_desk",
        model="fake-model",
        tools=[enquiry_lookup],
        handoffs=[corporate, private],
        instructions="Front desk: read the enquiry and hand it to corporate bookings or private parties.",
    )
    return desk


async def _go(start, server):
    llm = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(llm, use_for_tracing=False)
    try:
        return await start()
    finally:
        await llm.close()


def record(inp, path, server):
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"book enquiry {inp['enquiry']}")])
    try:
        asyncio.run(
            _go(
                lambda: Runner.run(
                    _agents(), inp["enquiry"], run_config=RunConfig(workflow_name=NAME), max_turns=20
                ),
                server,
            )
        )
    except Exception:  # noqa: BLE001
        pass
    finally:
        set_trace_processors([])
