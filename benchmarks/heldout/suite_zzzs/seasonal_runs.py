"""A confectionery's seasonal production runs: the OpenAI Agents SDK, one planner agent that writes a plan,
calls a recipe-scaling agent as a tool per run, keeps notes with memory tools (remember / recall), books kettles
(a busy answer the model retries) and releases the schedule to the floor, whose check is the last step."""
from __future__ import annotations

import ast
import asyncio
import json
import math

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors

from trajdebug.integrations.openai_agents import TrajdebugProcessor

from suite_common import Reply, async_client, tool_call

RUN_NAME = "seasonal-run-planner"
ROUTE = "openai_agents"
DOMAIN = "confectionery's seasonal runs"
SHAPE = ("~35-50 steps: calendar tool, plan tool, per run a recipe-scaling sub-agent called as a tool (its own "
         "model calls and recipe-card tool) then a memory write, one recall, kettle booking retried after a busy "
         "answer, release to the floor (schedule check), final answer")

SWITCHES = ["SCALER_SIMILAR_NAME", "RECALL_ARCHIVE", "PLAN_SKIPS_RUN", "LAST_YEAR_CALENDAR", "BAKERY_CARD"]
SCALER_SIMILAR_NAME = RECALL_ARCHIVE = PLAN_SKIPS_RUN = LAST_YEAR_CALENDAR = BAKERY_CARD = False

INPUTS = [
    {"season": "winter", "year": 2026, "today": "2026-11-02", "kettle_hours": 60},
    {"season": "easter", "year": 2027, "today": "2027-02-01", "kettle_hours": 45},
    {"season": "valentine", "year": 2027, "today": "2027-01-05", "kettle_hours": 30},
    {"season": "autumn fair", "year": 2026, "today": "2026-08-20", "kettle_hours": 40},
    {"season": "christmas market", "year": 2026, "today": "2026-10-15", "kettle_hours": 70},
]
CALENDAR = {
    "winter": [("candy canes", 120, "11-18"), ("peppermint bark", 80, "11-25"), ("fudge", 60, "12-02")],
    "easter": [("nougat", 50, "03-01"), ("marzipan eggs", 70, "03-08"), ("fudge", 40, "03-12")],
    "valentine": [("rose creams", 40, "01-20"), ("truffle hearts", 55, "01-27")],
    "autumn fair": [("toffee apples", 90, "09-05"), ("fudge", 80, "09-10"), ("brittle", 45, "09-14")],
    "christmas market": [("gingerbread", 100, "11-20"), ("marzipan fruits", 60, "11-27"), ("candy canes", 90, "12-01"), ("nougat", 40, "12-04")],
}
CARDS = {
    "candy canes": {"batch_kg": 15, "hours": 2.0, "sugar_ratio": 0.85},
    "peppermint bark": {"batch_kg": 20, "hours": 1.5, "sugar_ratio": 0.55},
    "peppermint creams": {"batch_kg": 25, "hours": 1.0, "sugar_ratio": 0.75},
    "fudge": {"batch_kg": 20, "hours": 2.5, "sugar_ratio": 0.6},
    "fudge bakery block": {"batch_kg": 5, "hours": 2.5, "sugar_ratio": 0.6},
    "nougat": {"batch_kg": 10, "hours": 3.0, "sugar_ratio": 0.45},
    "marzipan eggs": {"batch_kg": 25, "hours": 1.5, "sugar_ratio": 0.5},
    "rose creams": {"batch_kg": 20, "hours": 1.5, "sugar_ratio": 0.75},
    "truffle hearts": {"batch_kg": 15, "hours": 2.0, "sugar_ratio": 0.3},
    "toffee apples": {"batch_kg": 30, "hours": 1.5, "sugar_ratio": 0.35},
    "brittle": {"batch_kg": 15, "hours": 1.0, "sugar_ratio": 0.7},
    "gingerbread": {"batch_kg": 40, "hours": 2.0, "sugar_ratio": 0.35},
    "marzipan fruits": {"batch_kg": 20, "hours": 2.0, "sugar_ratio": 0.5},
}
MEMORY: dict = {}
ARCHIVE = "\n".join(f"2025 season log line {i}: kettle K{i % 4 + 1} cleaned, run {i} packed, floor temperature 18.{i % 10} C, "
                    f"notes copied from the paper book page {i // 40}" for i in range(1400))
CONTEXT_LIMIT = 60000
_busy = {"n": 0}


def _calls_and_results(msgs):
    ids, calls, res = {}, [], []
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            ids[tc["id"]] = tc["function"]["name"]
            calls.append((tc["function"]["name"], json.loads(tc["function"]["arguments"] or "{}")))
        if m.get("role") == "tool":
            res.append((ids.get(m["tool_call_id"]), m["content"]))
    return calls, res


def _lit(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def policy(request):
    msgs = request.body["messages"]
    if len(json.dumps(msgs)) > CONTEXT_LIMIT:
        return Reply(status=400, error="This model's maximum context length is 16385 tokens; the messages hold more.")
    system = msgs[0]["content"]
    user = next(m["content"] for m in msgs if m["role"] == "user")
    calls, res = _calls_and_results(msgs)
    names = [c[0] for c in calls]
    if system.startswith("You scale"):
        product, kg = user.split(";")[0].split(":")[1].strip(), float(user.split(";")[1].split(":")[1])
        if "recipe_card" not in names:
            ask = product
            if SCALER_SIMILAR_NAME and product == "peppermint bark":
                ask = "peppermint creams"
            return Reply(tool_calls=(tool_call("recipe_card", {"product": ask}),))
        card = _lit(res[-1][1])
        batches = math.ceil(kg / card["batch_kg"])
        return json.dumps({"product": card["product"], "kg": kg, "batches": batches,
                           "kettle_hours": batches * card["hours"], "sugar_kg": round(kg * card["sugar_ratio"], 1)})
    order = json.loads(user.split("\n", 1)[1])
    if "season_calendar" not in names:
        return Reply(tool_calls=(tool_call("season_calendar", {"season": order["season"], "year": order["year"]}),))
    cal = _lit(next(r for n, r in res if n == "season_calendar"))
    if "write_plan" not in names:
        runs = [{"product": r["product"], "kg": r["kg"], "date": r["date"]} for r in cal["runs"]]
        if PLAN_SKIPS_RUN:
            runs = runs[:1] + runs[2:]
        return Reply(tool_calls=(tool_call("write_plan", {"runs": runs}),))
    plan = next(a for n, a in calls if n == "write_plan")["runs"]
    scaled = [_lit(r) for n, r in res if n == "recipe_scaler"]
    remembered = [a for n, a in calls if n == "remember"]
    if len(remembered) < len(scaled):
        s = json.loads(scaled[-1]) if isinstance(scaled[-1], str) else scaled[-1]
        return Reply(tool_calls=(tool_call("remember", {"key": f"run:{s['product']}", "note": json.dumps(s)}),))
    if len(scaled) < len(plan):
        r = plan[len(scaled)]
        return Reply(tool_calls=(tool_call("recipe_scaler", {"input": f"product: {r['product']}; kg: {r['kg']}"}),))
    if "recall" not in names:
        return Reply(tool_calls=(tool_call("recall", {"prefix": "run:"}),))
    notes = _lit(next(r for n, r in res if n == "recall"))
    schedule = [{**json.loads(v), "date": next((p["date"] for p in plan if p["product"] == json.loads(v)["product"]), None)}
                for k, v in notes["notes"].items() if k.startswith("run:")]
    kettle_results = [r for n, r in res if n == "book_kettles"]
    if not kettle_results or kettle_results[-1].startswith("An error"):
        return Reply(tool_calls=(tool_call("book_kettles", {"schedule": schedule}),))
    if "release_to_floor" not in names:
        return Reply(tool_calls=(tool_call("release_to_floor", {"season": order["season"], "year": order["year"], "today": order["today"],
                                                                 "kettle_hours": order["kettle_hours"], "schedule": schedule}),))
    return f"{order['season']} {order['year']}: {len(schedule)} runs released to the floor."


@function_tool(failure_error_function=None)
def season_calendar(season: str, year: int) -> dict:
    """The runs the season calendar lists: product, kg and date."""
    y = year - 1 if LAST_YEAR_CALENDAR else year
    return {"season": season, "runs": [{"product": p, "kg": kg, "date": f"{y}-{d}"} for p, kg, d in CALENDAR[season]]}


@function_tool(failure_error_function=None, strict_mode=False)
def write_plan(runs: list[dict]) -> dict:
    """Write the production plan for the season."""
    return {"planned": len(runs)}


@function_tool(failure_error_function=None)
def recipe_card(product: str) -> dict:
    """The recipe card of a product: batch size, kettle hours per batch, sugar ratio."""
    name = "fudge bakery block" if (BAKERY_CARD and product == "fudge") else product
    return {"product": product, "card": name, **CARDS[name]}


@function_tool(failure_error_function=None)
def remember(key: str, note: str) -> dict:
    """Keep a note in the planner's memory."""
    MEMORY[key] = note
    return {"saved": key}


@function_tool(failure_error_function=None)
def recall(prefix: str) -> dict:
    """Read back the notes whose key starts with the prefix."""
    notes = {k: v for k, v in MEMORY.items() if k.startswith(prefix)}
    if RECALL_ARCHIVE:
        notes = {**notes, "archive:2025": ARCHIVE}
    return {"notes": notes}


@function_tool(strict_mode=False)
def book_kettles(schedule: list[dict]) -> dict:
    """Book kettle time for the schedule."""
    _busy["n"] += 1
    if _busy["n"] == 1:
        raise RuntimeError("kettle planner is busy, try again")
    return {"booked": [s["product"] for s in schedule], "hours": sum(s["kettle_hours"] for s in schedule)}


@function_tool(failure_error_function=None, strict_mode=False)
def release_to_floor(season: str, year: int, today: str, kettle_hours: float, schedule: list[dict]) -> dict:
    """Release the season's schedule to the production floor (the floor system checks it first)."""
    listed = [p for p, _, _ in CALENDAR[season]]
    got = [s["product"] for s in schedule]
    for p in listed:
        if p not in got:
            raise ValueError(f"floor system: calendar run {p!r} has no kettle slot in the schedule")
    for s in schedule:
        if s["date"] is None or s["date"] < today:
            raise ValueError(f"floor system: {s['product']} dated {s['date']} is before today ({today})")
    hours = sum(s["kettle_hours"] for s in schedule)
    if hours > kettle_hours:
        raise ValueError(f"floor system: schedule needs {hours:g} kettle hours, the season window has {kettle_hours}")
    return {"released": len(schedule), "hours": hours}


def build(server, oa):
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=oa)
    scaler = Agent(name="recipe_scaler", model=model, tools=[recipe_card],
                   instructions="You scale a recipe card to the kilograms asked and answer batches, kettle hours and sugar as JSON.")
    return Agent(name="run_planner", model=model,
                 instructions="You plan the confectionery's seasonal runs: calendar, plan, scale each run, keep notes, book kettles, release.",
                 tools=[season_calendar, write_plan,
                        scaler.as_tool(tool_name="recipe_scaler", tool_description="Scale one run's recipe."),
                        remember, recall, book_kettles, release_to_floor])


def record(inp, path, server):
    server.use(policy)
    MEMORY.clear()
    _busy["n"] = 0
    set_trace_processors([TrajdebugProcessor(path=path, name=RUN_NAME, task=f"{inp['season']} {inp['year']} runs")])

    async def go():
        oa = async_client(server)
        try:
            await Runner.run(build(server, oa), "Plan these seasonal runs:\n" + json.dumps(inp), max_turns=40,
                             run_config=RunConfig(workflow_name=RUN_NAME))
        finally:
            await oa.close()

    try:
        asyncio.run(go())
    except Exception:  # noqa: BLE001 - the run's failure is in the trace
        pass
    finally:
        set_trace_processors([])


CASES = [
    {"id": "zzzs-season-01", "input": 0, "switch": "SCALER_SIMILAR_NAME", "fault_kind": "subagent_wrong_entity",
     "root": {"name": "generation fake-model", "occurrence": 8, "kind": "llm"}, "failure": {"name": "release_to_floor", "occurrence": 1},
     "description": "Asked to scale peppermint bark, the recipe-scaling agent looks up and scales the peppermint creams card instead."},
    {"id": "zzzs-season-02", "input": 4, "switch": "RECALL_ARCHIVE", "fault_kind": "context_pollution",
     "root": {"name": "recall", "occurrence": 1, "kind": "tool"}, "failure": {"name": "generation fake-model", "occurrence": "last"},
     "description": "The recall of the run notes also returns last season's whole floor log, which pushes the planner's next request past the model's context limit."},
    {"id": "zzzs-season-03", "input": 3, "switch": "PLAN_SKIPS_RUN", "fault_kind": "plan_error",
     "root": {"name": "generation fake-model", "occurrence": 2, "kind": "llm"}, "failure": {"name": "release_to_floor", "occurrence": 1},
     "description": "The planner's plan leaves out the second calendar run (80 kg of fudge), so it is never scaled or scheduled."},
    {"id": "zzzs-season-04", "input": 1, "switch": "LAST_YEAR_CALENDAR", "fault_kind": "stale_data",
     "root": {"name": "season_calendar", "occurrence": 1, "kind": "tool"}, "failure": {"name": "release_to_floor", "occurrence": 1},
     "description": "The season calendar for Easter 2027 answers with the 2026 dates of the previous year's calendar."},
    {"id": "zzzs-season-05", "input": 3, "switch": "BAKERY_CARD", "fault_kind": "wrong_retrieval",
     "root": {"name": "recipe_card", "occurrence": 2, "kind": "tool"}, "failure": {"name": "release_to_floor", "occurrence": 1},
     "description": "The recipe card lookup for fudge returns the bakery-block card (5 kg batches instead of 20 kg), so fudge needs 16 kettle batches instead of 4."},
]
