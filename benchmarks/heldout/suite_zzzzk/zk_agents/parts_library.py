"""Orchestral music library: rent and prepare performance parts for a concert programme (OpenAI Agents SDK route)."""

from __future__ import annotations

import ast
import asyncio
import datetime as dt
import json
import math

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

import common
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

RUN_NAME = "orchestra-parts-library"
ROUTE = "openai_agents"
DOMAIN = "orchestral music library: rental parts for a concert programme (editions, holds, string part counts)"
SHAPE = "Agents SDK (chat completions): planner turn with parallel lookups, catalogue searches per work, rental checks, part counting, hand-off to a rental-desk agent that orders per work"
SWITCH = None

EDITIONS = {
    "Sibelius: Symphony No. 5": {"edition": "BH-SIB5-R", "publisher": "Breitkopf rental", "sets": 2},
    "Britten: Four Sea Interludes": {"edition": "BH-BRI-SEA", "publisher": "Boosey rental", "sets": 1},
    "Grieg: Holberg Suite": {"edition": "PE-GRI-HOL", "publisher": "Peters rental", "sets": 3},
    "Saariaho: Ciel d'hiver": {"edition": "CH-SAA-CIEL", "publisher": "Chester rental", "sets": 1},
    "Elgar: Serenade for Strings": {"edition": "NO-ELG-SER", "publisher": "Novello rental", "sets": 2},
    "Dvořák: Czech Suite": {"edition": "BA-DVO-CZ", "publisher": "Bärenreiter rental", "sets": 2},
}
ON_HIRE = {"BH-BRI-SEA": "2026-05-30"}  # set out with another orchestra until
ROSTERS = {
    "C-2611": {"vn1": 14, "vn2": 12, "va": 10, "vc": 8, "db": 6},
    "C-2612": {"vn1": 12, "vn2": 10, "va": 9, "vc": 7, "db": 5},
    "C-2613": {"vn1": 10, "vn2": 8, "va": 6, "vc": 6, "db": 4},
    "C-2614": {"vn1": 14, "vn2": 12, "va": 10, "vc": 8, "db": 6},
    "C-2615": {"vn1": 8, "vn2": 8, "va": 6, "vc": 5, "db": 3},
}
INPUTS = [
    {"concert": "C-2611", "date": "2026-03-14", "works": ["Sibelius: Symphony No. 5", "Grieg: Holberg Suite"]},
    {"concert": "C-2612", "date": "2026-04-02", "works": ["Elgar: Serenade for Strings", "Dvořák: Czech Suite"]},
    {"concert": "C-2613", "date": "2026-06-20", "works": ["Britten: Four Sea Interludes", "Grieg: Holberg Suite",
                                                          "Saariaho: Ciel d'hiver"]},
    {"concert": "C-2614", "date": "2026-05-09", "works": ["Sibelius: Symphony No. 5", "Saariaho: Ciel d'hiver"]},
    {"concert": "C-2615", "date": "2026-02-21", "works": ["Grieg: Holberg Suite", "Elgar: Serenade for Strings"]},
]
HOLDS: set = set()


@function_tool
def lookup_programme(concert_id: str) -> dict:
    """The concert's date and works."""
    inp = next(i for i in INPUTS if i["concert"] == concert_id)
    return {"concert": concert_id, "date": inp["date"], "works": inp["works"]}


@function_tool
def get_roster(concert_id: str) -> dict:
    """String players booked for the concert, per section."""
    roster, season = ROSTERS[concert_id], "2025/26"
    if SWITCH == "zk-parts-2":
        roster, season = {"vn1": 12, "vn2": 10, "va": 8, "vc": 8, "db": 5}, "2024/25"
    return {"concert": concert_id, "season": season, "strings": roster}


@function_tool
def search_catalogue(work: str) -> list:
    """Search the rental catalogue for a work's performance material."""
    hits = [{"work": w, **e} for w, e in EDITIONS.items() if w == work]
    if SWITCH == "zk-parts-1" and work.startswith("Grieg"):
        hits = [{"work": f"{w} (arr. {k})", **e, "notes": "full listing " * 40} for w, e in EDITIONS.items()
                for k in range(60)] + hits
    return hits


@function_tool
def check_rental(edition: str, concert_date: str) -> dict:
    """Availability of a rental set for a concert date; places a hold when available."""
    busy = ON_HIRE.get(edition)
    available = busy is None or busy < concert_date
    checked = "2026-01-12"
    if available:
        HOLDS.add(edition)
    return {"edition": edition, "available": available, "as_of": checked, "hold": available}


@function_tool(strict_mode=False)
def count_parts(concert_id: str, strings: dict) -> dict:
    """String parts needed: one part per desk of two players."""
    desks = {s: math.ceil(n / 2) for s, n in strings.items()}
    if SWITCH == "zk-parts-3":
        desks = {s: n // 2 for s, n in strings.items()}
    return {"concert": concert_id, "string_parts": desks}


@function_tool(failure_error_function=None, strict_mode=False)
def order_parts(concert_id: str, edition: str, ship_by: str, string_parts: dict) -> dict:
    """Order a rental set with its string parts, shipped by a date."""
    date = dt.date.fromisoformat(ship_by)
    busy = ON_HIRE.get(edition)
    inp = next(i for i in INPUTS if i["concert"] == concert_id)
    if busy and busy >= inp["date"]:
        raise ValueError(f"rental set {edition} is out with another orchestra until {busy}")
    if edition not in HOLDS:
        raise ValueError(f"no hold on rental set {edition}: check availability before ordering")
    for sec, n in ROSTERS[concert_id].items():
        if string_parts.get(sec, 0) < math.ceil(n / 2):
            raise ValueError(f"{edition}: {string_parts.get(sec, 0)} {sec} parts for {n} players")
    return {"order": f"ORD-{edition}-{concert_id[2:]}", "ship_by": date.isoformat(), "parts": string_parts}


def _history(request):
    calls, outs = [], {}
    for m in request.body.get("messages") or []:
        for tc in m.get("tool_calls") or []:
            calls.append((tc["id"], tc["function"]["name"], json.loads(tc["function"]["arguments"] or "{}")))
        if m.get("role") == "tool":
            outs[m["tool_call_id"]] = m.get("content")
    done = []
    for cid, name, args in calls:
        out = outs.get(cid)
        try:
            val = ast.literal_eval(out) if out else None
        except (ValueError, SyntaxError):
            val = out
        done.append((name, args, val))
    plan = next((m["content"] for m in request.body["messages"] if m.get("role") == "assistant"
                 and isinstance(m.get("content"), str) and m["content"].startswith("Plan:")), "")
    return done, plan


def brain(request):
    if len(json.dumps(request.body)) > 60000:
        return Reply(status=400, error="This model's maximum context length is 16385 tokens. However, your "
                                       "messages resulted in 21874 tokens. Please reduce the length of the messages.")
    system = common.system_of(request)
    done, plan = _history(request)
    names = [d[0] for d in done]
    ask = json.loads(next(m["content"] for m in request.body["messages"] if m["role"] == "user"))
    cid = ask["concert"]
    if system.startswith("You are the rental desk"):
        if "order_parts" in names:
            return "Orders placed for every work."
        prog = next(d[2] for d in done if d[0] == "lookup_programme")
        eds = [d[2][-1]["edition"] for d in done if d[0] == "search_catalogue"]
        parts = next(d[2] for d in done if d[0] == "count_parts")["string_parts"]
        ship = (dt.date.fromisoformat(prog["date"]) - dt.timedelta(days=21))
        ship_s = ship.strftime("%d/%m/%Y") if SWITCH == "zk-parts-5" else ship.isoformat()
        return Reply(tool_calls=tuple(tool_call("order_parts", {"concert_id": cid, "edition": e, "ship_by": ship_s,
                                                                "string_parts": parts}) for e in eds))
    if not done:
        steps = ["lookup_programme", "get_roster", "search_catalogue", "check_rental", "count_parts", "rental desk"]
        if SWITCH == "zk-parts-4":
            steps.remove("check_rental")
        return Reply(text="Plan: " + " -> ".join(steps),
                     tool_calls=(tool_call("lookup_programme", {"concert_id": cid}), tool_call("get_roster", {"concert_id": cid})))
    prog = next(d[2] for d in done if d[0] == "lookup_programme")
    if "search_catalogue" not in names:
        return Reply(tool_calls=tuple(tool_call("search_catalogue", {"work": w}) for w in prog["works"]))
    if "check_rental" not in names and "check_rental" in plan:
        eds = [d[2][-1]["edition"] for d in done if d[0] == "search_catalogue"]
        return Reply(tool_calls=tuple(tool_call("check_rental", {"edition": e, "concert_date": prog["date"]}) for e in eds))
    if "count_parts" not in names:
        roster = next(d[2] for d in done if d[0] == "get_roster")
        return Reply(tool_calls=(tool_call("count_parts", {"concert_id": cid, "strings": roster["strings"]}),))
    return Reply(tool_calls=(tool_call("transfer_to_rental_desk", {}),))


def _agents():
    client = AsyncOpenAI(base_url=common.SERVER.base_url, api_key="not-needed", max_retries=0)  # one per event loop
    model = OpenAIChatCompletionsModel(model=common.MODEL, openai_client=client)
    desk = Agent(name="rental_desk", model=model, tools=[order_parts],
                 instructions="You are the rental desk: order each work's rental set with the counted string parts.")
    return Agent(name="librarian", model=model, handoffs=[desk], model_settings=ModelSettings(parallel_tool_calls=True),
                 instructions="You are the orchestra librarian: find editions, check rental sets, count string parts, "
                              "then hand over to the rental desk.",
                 tools=[lookup_programme, get_roster, search_catalogue, check_rental, count_parts])


def record(inp: dict, path: str) -> None:
    HOLDS.clear()
    set_trace_processors([TrajdebugProcessor(path=path, name=RUN_NAME, task=f"parts for concert {inp['concert']}")])
    try:
        asyncio.run(Runner.run(_agents(), json.dumps({"concert": inp["concert"]}), run_config=RunConfig(workflow_name=RUN_NAME)))
    except Exception:  # noqa: BLE001 - the run records how it ended
        pass
    finally:
        set_trace_processors([])


CASES = [
    {"case": "zk-parts-1", "input": 4, "switch": "zk-parts-1", "fault_kind": "context_pollution",
     "root": ("search_catalogue", 1, "tool"), "failure": ("generation fake-model", 3),
     "description": "The catalogue search for the Holberg Suite answers with hundreds of arrangement listings "
                    "alongside the edition, and the next model call is refused for exceeding the context length."},
    {"case": "zk-parts-2", "input": 0, "switch": "zk-parts-2", "fault_kind": "stale_data",
     "root": ("get_roster", 1, "tool"), "failure": ("order_parts", 1),
     "description": "The roster service answers last season's string roster (12 first violins, 8 violas) instead "
                    "of this concert's 14 and 10, so too few string parts are counted and the rental order is refused."},
    {"case": "zk-parts-3", "input": 1, "switch": "zk-parts-3", "fault_kind": "off_by_one",
     "root": ("count_parts", 1, "tool"), "failure": ("order_parts", 1),
     "description": "The part counter rounds desks down, giving 4 viola parts for 9 violists, and the rental "
                    "order is refused."},
    {"case": "zk-parts-4", "input": 0, "switch": "zk-parts-4", "fault_kind": "plan_error",
     "root": ("generation fake-model", 1, "llm"), "failure": ("order_parts", 1),
     "description": "The librarian's plan leaves out the rental check, so no hold is placed on the sets and the "
                    "rental desk's orders are refused."},
    {"case": "zk-parts-5", "input": 3, "switch": "zk-parts-5", "fault_kind": "format_drift",
     "root": ("generation fake-model", 6, "llm"), "failure": ("order_parts", 1),
     "description": "The rental desk model writes the ship-by date as 18/04/2026 instead of the ISO date the "
                    "ordering tool takes, which cannot read it."},
]
