"""Roller disco's session booking agent (openai_agents route, Chat Completions): triage agent handing off to a desk agent."""
from __future__ import annotations

import ast
import asyncio
import json
import math

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.exceptions import AgentsException
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.testing import Reply, tool_call

import kit

NAME = "roller-disco-sessions"
ROUTE = "openai_agents"
DOMAIN = "a roller disco's sessions"
SHAPE = "Agents SDK (Chat Completions): triage agent (request tool) handing off to a party desk or an adults desk agent; desk: session calendar, skate hire, price, marshal rota, booking hold, validator tool"
EXT = "jsonl"


def _q(rid, group, date, session, kind, sizes, adults):
    return {"request": rid, "group": group, "date": date, "session": session, "kind": kind, "skate_sizes": sizes, "adults_only": adults}


INPUTS = {
    "Q-801": _q("Q-801", 14, "2026-11-21", "evening", "birthday", ["C11", "C12", "C12", "C13", "C13", "1"], False),
    "Q-802": _q("Q-802", 12, "2026-11-22", "matinee", "birthday", ["C10", "C11", "C12", "C12"], False),
    "Q-803": _q("Q-803", 10, "2026-11-28", "late", "hen party", ["5", "5", "6", "6", "7"], True),
    "Q-804": _q("Q-804", 18, "2026-11-29", "matinee", "school club", ["C13", "1", "2", "2", "3", "3"], False),
    "Q-805": _q("Q-805", 9, "2026-12-05", "evening", "birthday", ["C12", "C13", "1", "1"], False),
    "Q-806": _q("Q-806", 16, "2026-12-06", "matinee", "birthday", ["C11", "C11", "C12", "C13"], False),
    "Q-807": _q("Q-807", 8, "2026-12-12", "late", "stag party", ["8", "9", "9", "10"], True),
    "Q-808": _q("Q-808", 11, "2026-12-13", "evening", "scout troop", ["1", "2", "2", "3"], False),
    "Q-809": _q("Q-809", 20, "2026-12-19", "late", "office party", ["5", "6", "7", "8", "9"], True),
}
REFS = ["Q-806", "Q-807", "Q-808", "Q-809"]
LIVE = {r: {"evening": 60 - q["group"], "matinee": 80 - q["group"], "late": 45 - q["group"]} for r, q in INPUTS.items()}
PRICE = {"party": 14.5, "adults": 18.0}
MARSHALS = ["Dee", "Kofi", "Rosa", "Mika", "Jo"]
HOLDS: dict = {}

CASES = [
    dict(case="zzv_disco_01", fault_kind="truncated_result", input="Q-801", root=("marshal_rota", 1), failure=("validate_booking", 1),
         description="The marshal rota tool returns only its first page of two marshals, so a group of 14 beginners gets two marshals where the rule needs three."),
    dict(case="zzv_disco_02", fault_kind="wrong_tool_args", input="Q-802", root=("generation fake-model", 5), failure=("validate_booking", 1),
         description="The desk model prices the party for the four children needing hire skates instead of the twelve in the group."),
    dict(case="zzv_disco_03", fault_kind="wrong_routing", input="Q-803", root=("generation fake-model", 2), failure=("validate_booking", 1),
         description="The triage model hands an adults-only hen party to the children's party desk, which books it on the party package."),
    dict(case="zzv_disco_04", fault_kind="stale_data", input="Q-804", root=("session_calendar", 1), failure=("validate_booking", 1),
         description="The session calendar answers from its season-opening cache, whose per-head rates are last season's, and the school club is priced at 12.50 a head."),
    dict(case="zzv_disco_05", fault_kind="tool_ignores_argument", input="Q-805", root=("skate_hire", 1), failure=("validate_booking", 1),
         description="The skate hire tool ignores the sizes it is given and reserves its default adult sizes for a children's party."),
]


@function_tool
def get_booking_request(request: str) -> dict:
    """The group booking request."""
    return dict(INPUTS[request])


@function_tool
def session_calendar(request: str, date: str, session: str) -> dict:
    """Places left on a session."""
    snap = {"as_of": f"{date} live", "places_left": LIVE[request][session], "rates": dict(PRICE)}
    if kit.on("zzv_disco_04"):
        snap = {"as_of": "season opening cache", "places_left": LIVE[request][session], "rates": {"party": 12.5, "adults": 16.0}}
    return {"date": date, "session": session, **snap}


@function_tool
def skate_hire(request: str, sizes: list[str]) -> dict:
    """Reserve hire skates by size."""
    got = list(sizes)
    if kit.on("zzv_disco_05"):
        got = ["7", "8", "9", "10"][: len(sizes)]
    HOLDS.setdefault(request, {})["skates"] = got
    return {"reserved": got}


@function_tool
def price_session(request: str, package: str, guests: int, rate_eur: float) -> dict:
    """Price of a group package at a per-head rate."""
    eur = round(rate_eur * guests, 2)
    HOLDS.setdefault(request, {})["price"] = {"package": package, "guests": guests, "eur": eur}
    return {"package": package, "guests": guests, "eur": eur}


@function_tool
def marshal_rota(date: str, session: str) -> dict:
    """Floor marshals on shift."""
    page = MARSHALS[:2] if kit.on("zzv_disco_01") else MARSHALS[:4]
    return {"date": date, "session": session, "marshals": page}


@function_tool
def hold_booking(request: str, marshals: list[str], places: int) -> dict:
    """Pencil the group into the session."""
    HOLDS.setdefault(request, {}).update({"marshals": marshals, "places_left": places})
    return {"hold": f"H-{request[2:]}", "marshals": marshals}


def _validate(request: str) -> dict:
    q, h = INPUTS[request], HOLDS.get(request, {})
    if LIVE[request][q["session"]] < q["group"]:
        raise ValueError(f"{request}: {q['group']} skaters held on the {q['date']} {q['session']} with {LIVE[request][q['session']]} places left")
    want = "adults" if q["adults_only"] else "party"
    if h["price"]["package"] != want:
        raise ValueError(f"{request}: {q['kind']} of {q['group']} priced as {h['price']['package']} package, rules say {want}")
    if round(h["price"]["eur"] / h["price"]["guests"], 2) != PRICE[want]:
        raise ValueError(f"{request}: charged {h['price']['eur'] / h['price']['guests']:.2f} EUR a head, {want} rate is {PRICE[want]:.2f}")
    if h["price"]["guests"] != q["group"]:
        raise ValueError(f"{request}: priced for {h['price']['guests']} guests, group of {q['group']}")
    if sorted(h["skates"]) != sorted(q["skate_sizes"]):
        raise ValueError(f"{request}: skates {h['skates']} reserved, sizes asked {q['skate_sizes']}")
    need = math.ceil(q["group"] / 6) if not q["adults_only"] else 1
    if len(h["marshals"]) < need:
        raise ValueError(f"{request}: {len(h['marshals'])} marshals for {q['group']} skaters, {need} needed")
    return {"request": request, "status": "held"}


validate_booking = function_tool(_validate, name_override="validate_booking", failure_error_function=None,
                                 description_override="Check the held booking against the rink's rules.")


def _outputs(messages):
    calls, outs = {}, []
    for m in messages:
        if m.get("role") == "assistant":
            for tc in m.get("tool_calls") or []:
                calls[tc["id"]] = (tc["function"]["name"], json.loads(tc["function"]["arguments"] or "{}"))
        elif m.get("role") == "tool":
            name, args = calls[m["tool_call_id"]]
            try:
                out = ast.literal_eval(m["content"])
            except (ValueError, SyntaxError):
                out = m["content"]
            outs.append((name, args, out))
    return outs


def brain(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
    rid = next(m["content"] for m in msgs if m["role"] == "user").split()[-1]
    outs = _outputs(msgs)
    done = [o[0] for o in outs]
    if system.startswith("Triage"):
        if not outs:
            return Reply(tool_calls=(tool_call("get_booking_request", {"request": rid}),))
        q = outs[0][2]
        desk = "adults_desk" if q["adults_only"] else "party_desk"
        if kit.on("zzv_disco_03"):
            desk = "party_desk"
        return Reply(tool_calls=(tool_call(f"transfer_to_{desk}", {}),))
    q = outs[0][2]
    package = "adults" if system.startswith("Adults") else "party"
    if "session_calendar" not in done:
        return Reply(tool_calls=(tool_call("session_calendar", {"request": rid, "date": q["date"], "session": q["session"]}),))
    if "skate_hire" not in done:
        return Reply(tool_calls=(tool_call("skate_hire", {"request": rid, "sizes": q["skate_sizes"]}),))
    if "price_session" not in done:
        guests = len(q["skate_sizes"]) if kit.on("zzv_disco_02") else q["group"]
        rate = next(o[2] for o in outs if o[0] == "session_calendar")["rates"][package]
        return Reply(tool_calls=(tool_call("price_session", {"request": rid, "package": package, "guests": guests, "rate_eur": rate}),))
    if "marshal_rota" not in done:
        return Reply(tool_calls=(tool_call("marshal_rota", {"date": q["date"], "session": q["session"]}),))
    if "hold_booking" not in done:
        rota = next(o[2] for o in outs if o[0] == "marshal_rota")
        cal = next(o[2] for o in outs if o[0] == "session_calendar")
        need = math.ceil(q["group"] / 6) if not q["adults_only"] else 1
        return Reply(tool_calls=(tool_call("hold_booking", {"request": rid, "marshals": rota["marshals"][:need],
                                                            "places": cal["places_left"] - q["group"]}),))
    if "validate_booking" not in done:
        return Reply(tool_calls=(tool_call("validate_booking", {"request": rid}),))
    return f"Booking {rid} is held."


def record(server, key: str, out: str) -> None:
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    HOLDS.clear()
    server.use(brain)
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=out, name=NAME, task=f"book roller disco request {key}")])
    desk_tools = [session_calendar, skate_hire, price_session, marshal_rota, hold_booking, validate_booking]
    party = Agent(name="party_desk", instructions="Party desk: book children's and family groups on the party package.",
                  model=server.model, tools=desk_tools)
    adults = Agent(name="adults_desk", instructions="Adults desk: book adults-only groups on the adults package.",
                   model=server.model, tools=desk_tools)
    triage = Agent(name="triage", instructions="Triage: read the request, then hand off to the right desk.",
                   model=server.model, tools=[get_booking_request], handoffs=[party, adults])

    async def go():
        cli = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(cli, use_for_tracing=False)
        try:
            await Runner.run(triage, f"New group booking {key}", max_turns=30,
                             run_config=RunConfig(workflow_name=NAME, tracing_disabled=False))
        finally:
            await cli.close()

    try:
        asyncio.run(go())
    except (ValueError, AgentsException):
        pass
    finally:
        set_trace_processors([])
