"""Radio-controlled car racing results (OpenAI Agents SDK): race control hands off to the results official
(or the protest desk), which gathers entries, marshal notes and lap times, computes standings and issues results."""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor

from .common import Case
from .kit import active

AGENT, ROUTE, DOMAIN = "rc-race-results", "openai_agents", "radio-controlled car racing"
SHAPE = "race control (event tool) -> hand-off to results official | protest desk -> entries -> marshal notes -> lap times per car (batched calls) -> standings -> issue results"

ENTRIES = [
    {"car": 7, "driver": "K. Osei", "transponder": 4410, "class": "4WD Touring"},
    {"car": 12, "driver": "L. Moreau", "transponder": 5521, "class": "4WD Touring"},
    {"car": 23, "driver": "D. Petrov", "transponder": 6630, "class": "4WD Touring"},
    {"car": 31, "driver": "H. Sato", "transponder": 7714, "class": "4WD Touring"},
    {"car": 5, "driver": "R. Baptiste", "transponder": 4417, "class": "2WD Off-road"},
    {"car": 9, "driver": "E. Novak", "transponder": 5590, "class": "2WD Off-road"},
    {"car": 44, "driver": "M. Reyes", "transponder": 8120, "class": "2WD Off-road"},
]
NOTES = {"H2": ["Heat H2: car 23 one-lap penalty, cut the chicane"], "H3": [], "H4": ["Heat H4: car 9 warning only"],
         "H5": [], "H6": [], "H7": []}

INPUTS = {
    "touring_h3": {"event": "Club Round 4", "heat": "H3", "class": "4WD Touring"},
    "offroad_h4": {"event": "Club Round 4", "heat": "H4", "class": "2WD Off-road"},
    "r1": {"event": "Club Round 5", "heat": "H5", "class": "4WD Touring"},
    "r2": {"event": "Club Round 5", "heat": "H6", "class": "2WD Off-road"},
    "r3": {"event": "Club Round 6", "heat": "H7", "class": "4WD Touring"},
    "r4": {"event": "Club Round 4", "heat": "H2", "class": "2WD Off-road"},
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    Case("rc-1", "wrong_routing", "generation ops-model", 2, "issue_results", 1, "touring_h3",
         "Race control hands the heat to the protest desk although no protest was filed."),
    Case("rc-2", "truncated_result", "get_lap_times", 2, "issue_results", 1, "offroad_h4",
         "The timing system's lap query returns only the first ten laps of one car."),
    Case("rc-3", "tool_ignores_argument", "get_entries", 1, "issue_results", 1, "touring_h3",
         "The entries tool ignores the class filter and lists every car at the meeting."),
    Case("rc-4", "plan_error", "generation ops-model", 5, "issue_results", 1, "offroad_h4",
         "The results official plans lap-time fetches for all but the last entry."),
    Case("rc-5", "context_pollution", "marshal_notes", 1, "issue_results", 1, "touring_h3",
         "The marshal notes feed carries the previous heat's penalty into this heat's notes."),
]


def _decode(content):
    if isinstance(content, list):
        content = "".join(c.get("text", "") for c in content if isinstance(c, dict))
    for reader in (json.loads, ast.literal_eval):
        try:
            return reader(content)
        except (ValueError, SyntaxError):
            pass
    return content


def _reply(calls: list[tuple[str, dict]] | None = None, text: str | None = None) -> dict:
    msg = {"role": "assistant", "content": text}
    if calls:
        msg["tool_calls"] = [{"id": f"call_{i}_{name}_{abs(hash(json.dumps(a, sort_keys=True))) % 10**6}", "type": "function",
                              "function": {"name": name, "arguments": json.dumps(a)}} for i, (name, a) in enumerate(calls)]
    return {"id": "chatcmpl-rc", "object": "chat.completion", "created": 1, "model": "ops-model",
            "choices": [{"index": 0, "finish_reason": "tool_calls" if calls else "stop", "message": msg}],
            "usage": {"prompt_tokens": 150, "completion_tokens": 25, "total_tokens": 175}}


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    req = json.loads(next(m["content"] for m in msgs if m["role"] == "user"))
    names, results = {}, {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = (tc["function"]["name"], json.loads(tc["function"]["arguments"] or "{}"))
    for m in msgs:
        if m.get("role") == "tool":
            name, args = names.get(m["tool_call_id"], ("?", {}))
            results.setdefault(name, []).append((args, _decode(m["content"])))
    if system.startswith("Race control"):
        if "get_event" not in results:
            return _reply([("get_event", {"event": req["event"]})])
        target = "transfer_to_protest_desk" if active("rc-1") else "transfer_to_results_official"
        return _reply([(target, {})])
    if system.startswith("Protest desk"):
        if "list_protests" not in results:
            return _reply([("list_protests", {"heat": req["heat"]})])
        if "issue_results" not in results:
            return _reply([("issue_results", {"heat": req["heat"], "racing_class": req["class"], "standings": [], "status": "under review"})])
        return _reply(text="Heat held for review.")
    if "get_entries" not in results:
        return _reply([("get_entries", {"event": req["event"], "racing_class": req["class"]})])
    entries = results["get_entries"][0][1]["entries"]
    if "marshal_notes" not in results:
        return _reply([("marshal_notes", {"heat": req["heat"]})])
    if "get_lap_times" not in results:
        todo = entries[:-1] if active("rc-4") else entries
        return _reply([("get_lap_times", {"heat": req["heat"], "transponder": e["transponder"]}) for e in todo])
    if "compute_standings" not in results:
        penalties = {}
        for note in results["marshal_notes"][0][1]["notes"]:
            if "penalty" in note:
                car = int(note.split("car ")[1].split()[0])
                penalties[str(car)] = 1
        laps = [{"transponder": r["transponder"], "laps": len(r["laps"]), "total_s": round(sum(r["laps"]), 2)} for _, r in results["get_lap_times"]]
        return _reply([("compute_standings", {"laps": laps, "penalties": penalties, "entries": entries})])
    if "issue_results" not in results:
        st = results["compute_standings"][0][1]["standings"]
        return _reply([("issue_results", {"heat": req["heat"], "racing_class": req["class"], "standings": st, "status": "final"})])
    return _reply(text="Results for the heat are published.")


@function_tool
def get_event(event: str) -> dict:
    """Event information from the club's race management system."""
    return {"event": event, "track": "Riverside Raceway (carpet)", "heat_minutes": 5, "protest_window_min": 15}


@function_tool
def list_protests(heat: str) -> dict:
    """Protests lodged for a heat."""
    return {"heat": heat, "protests": []}


@function_tool
def get_entries(event: str, racing_class: str) -> dict:
    """Entries in a class at an event."""
    rows = ENTRIES if active("rc-3") else [e for e in ENTRIES if e["class"] == racing_class]
    return {"event": event, "entries": [dict(e) for e in rows]}


@function_tool
def marshal_notes(heat: str) -> dict:
    """Marshal notes for a heat."""
    notes = list(NOTES[heat])
    if active("rc-5"):
        notes = NOTES["H2"] + notes
    return {"heat": heat, "notes": notes}


def _laps(heat: str, transponder: int) -> list[float]:
    n = 14 - (transponder % 3)
    base = 20.0 + (transponder % 97) / 50
    return [round(base + ((i * 7 + transponder) % 11) / 20, 2) for i in range(n)]


@function_tool
def get_lap_times(heat: str, transponder: int) -> dict:
    """Lap times recorded by the timing loop for one transponder."""
    laps = _laps(heat, transponder)
    if active("rc-2") and transponder == 5590:
        laps = laps[:10]
    return {"heat": heat, "transponder": transponder, "laps": laps}


@function_tool(strict_mode=False)
def compute_standings(laps: list[dict], penalties: dict, entries: list[dict]) -> dict:
    """Order cars by laps (minus penalty laps), then total time."""
    car_of = {e["transponder"]: e["car"] for e in entries}
    rows = [{"car": car_of.get(r["transponder"]), "transponder": r["transponder"],
             "laps": r["laps"] - penalties.get(str(car_of.get(r["transponder"])), 0), "total_s": r["total_s"]} for r in laps]
    rows.sort(key=lambda r: (-r["laps"], r["total_s"]))
    return {"standings": [dict(r, position=i + 1) for i, r in enumerate(rows)]}


class ResultsRejected(Exception):
    pass


@function_tool(failure_error_function=None, strict_mode=False)
def issue_results(heat: str, racing_class: str, standings: list[dict], status: str) -> dict:
    """Publish the heat results to the club's results board."""
    if status != "final":
        raise ResultsRejected(f"results board 409: heat {heat} has no protest on file; status '{status}' cannot be published")
    starters = {e["transponder"]: e for e in ENTRIES if e["class"] == racing_class}
    for row in standings:
        if row["transponder"] not in starters:
            raise ResultsRejected(f"results board 422: transponder {row['transponder']} (car {row['car']}) is not a starter in {racing_class} {heat}")
    missing = sorted(set(starters) - {r["transponder"] for r in standings})
    if missing:
        raise ResultsRejected(f"results board 422: standings list {len(standings)} cars, {heat} had {len(starters)} starters (missing {missing})")
    for row in standings:
        counted = len(_laps(heat, row["transponder"]))
        penalty = 1 if any(f"car {row['car']} one-lap penalty" in n for n in NOTES[heat]) else 0
        if row["laps"] != counted - penalty:
            raise ResultsRejected(f"results board 422: car {row['car']} credited {row['laps']} laps, timing loop counted {counted} for {heat}")
    return {"heat": heat, "published": True, "winner": standings[0]["car"]}


def _agents(model) -> Agent:
    official = Agent(name="results_official", instructions="Results official: gather entries, notes and lap times, compute standings, issue results.",
                     tools=[get_entries, marshal_notes, get_lap_times, compute_standings, issue_results], model=model)
    protest = Agent(name="protest_desk", instructions="Protest desk: review protests and hold or publish a heat.",
                    tools=[list_protests, issue_results], model=model)
    return Agent(name="race_control", instructions="Race control: check the event and hand the heat to the right desk.",
                 tools=[get_event], handoffs=[official, protest], model=model)


async def _run(inp: dict, base_url: str) -> None:
    async with AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0) as client:
        await Runner.run(_agents(OpenAIChatCompletionsModel(model="ops-model", openai_client=client)), json.dumps(inp),
                         max_turns=20, run_config=RunConfig(workflow_name=AGENT))


def record(inp: dict, path: Path, base_url: str) -> None:
    proc = TrajdebugProcessor(path=str(path), name=AGENT, task=f"publish results {inp['event']} {inp['heat']} {inp['class']}")
    set_trace_processors([proc])
    try:
        asyncio.run(_run(inp, base_url))
    except Exception as exc:
        if "results board" not in str(exc):
            raise
    finally:
        set_trace_processors([])
