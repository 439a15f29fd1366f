"""Rodeo event scheduling: builds a performance's schedule and publishes it (OpenAI Agents SDK)."""

from __future__ import annotations

import json
from pathlib import Path

from agents import Agent, function_tool

from . import kit
from .common import Case, agents_model, run_agents, tool_results

AGENT, ROUTE, DOMAIN = "rodeo_schedule", "openai_agents", "rodeo event scheduling"
RUN_NAME, MODEL = "rodeo-scheduler", "rodeo-desk-5"
SHAPE = "scheduler agent loop: arena slots, entries per event, stock draw, vet clearance per animal -> stock contractor agent-as-tool -> publish schedule"

SLOTS = {d: [f"A-{d[5:7]}{d[8:]}-{h}" for h in ("0900", "1030", "1400", "1530")]
         for d in ("2027-07-03", "2027-07-04", "2027-07-23", "2027-07-24", "2027-06-12", "2027-06-19", "2027-08-07", "2027-08-14")}
ANIMALS = {"saddle bronc": ["Red Rooster", "Sundance Kid", "Cactus Flower", "Short Fuse"],
           "bareback": ["Red Rocket", "Tumbleweed", "Night Shift", "Copper Penny"],
           "bull riding": ["Dust Devil", "Ironside", "Big Sky", "Grave Digger"]}
VET = {a: {"certificate": f"VC-{3000 + i * 17}", "expires": "2028-05-30"} for i, a in enumerate(sum(ANIMALS.values(), []))}
CACHED_VET = {"Dust Devil": {"certificate": "VC-2291", "expires": "2027-05-30"}}
RIDERS = ["Wade Sundell", "Zeke Thurston", "Ryder Wright", "Stetson Wright", "Tim O'Connell", "Kaycee Feild",
          "Shad Mayfield", "Caleb Smidt", "Riley Webb", "Tyson Durfey", "Cory Solomon", "Haven Meged", "Marty Yates",
          "Sage Kimzey", "Jess Lockwood", "Josh Frost"]

INPUTS = {
    "cody": {"rodeo": "Cody Stampede", "day": "2027-07-04", "rough": "saddle bronc", "timed": "tie-down roping", "n": (3, 8)},
    "cheyenne": {"rodeo": "Cheyenne Frontier Days", "day": "2027-07-24", "rough": "bull riding", "timed": "team roping", "n": (3, 12)},
    "reno": {"rodeo": "Reno Rodeo", "day": "2027-06-19", "rough": "bareback", "timed": "steer wrestling", "n": (3, 9)},
    "greeley": {"rodeo": "Greeley Stampede", "day": "2027-07-03", "rough": "bull riding", "timed": "tie-down roping", "n": (3, 7)},
    "prescott": {"rodeo": "Prescott Frontier Days", "day": "2027-06-12", "rough": "saddle bronc", "timed": "team roping", "n": (3, 10)},
    "ellensburg": {"rodeo": "Ellensburg Rodeo", "day": "2027-08-14", "rough": "bareback", "timed": "breakaway roping", "n": (3, 6)},
}
REFS = ["reno", "greeley", "prescott", "ellensburg"]

CASES = [
    Case("zx_rodeo_1", "rodeo.publish_day", "wrong_tool_args", "cheyenne", ("generation rodeo-desk-5", 11, "llm"),
         ("publish_schedule", 1), "The scheduler model calls publish_schedule with the day before the performance."),
    Case("zx_rodeo_2", "rodeo.draw_event", "tool_ignores_argument", "cody", ("get_stock_draw", 1, "tool"),
         ("publish_schedule", 1), "get_stock_draw ignores the event and returns the bareback draw for saddle bronc."),
    Case("zx_rodeo_3", "rodeo.vet_cache", "stale_data", "cheyenne", ("check_vet_clearance", 1, "tool"),
         ("publish_schedule", 1), "check_vet_clearance answers from last season's cache with a certificate that has since expired."),
    Case("zx_rodeo_4", "rodeo.contractor_ask", "subagent_wrong_entity", "cody", ("generation rodeo-desk-5", 8, "llm"),
         ("publish_schedule", 1), "The scheduler asks the stock contractor agent about Red Rocket instead of the headline horse Red Rooster."),
    Case("zx_rodeo_5", "rodeo.entries_page", "truncated_result", "cheyenne", ("get_entries", 2, "tool"),
         ("publish_schedule", 1), "get_entries returns only the first page of ten team roping entries out of twelve paid."),
]


def _inp(day: str) -> dict:
    return next(v for v in INPUTS.values() if v["day"] == day)


def _entries(inp: dict, event: str) -> list[str]:
    k = 0 if event == inp["rough"] else 1
    start = (len(inp["rodeo"]) + k * 5) % len(RIDERS)
    return [RIDERS[(start + i) % len(RIDERS)] for i in range(inp["n"][k])]


@function_tool
def get_arena_slots(day: str) -> str:
    """Free arena slots on a day."""
    return json.dumps({"day": day, "slots": SLOTS[day][:2]})


@function_tool
def get_entries(rodeo: str, event: str) -> str:
    """Paid entries for an event of a rodeo."""
    inp = next(v for v in INPUTS.values() if v["rodeo"] == rodeo)
    names = _entries(inp, event)
    if kit.active("rodeo.entries_page"):
        names = names[:10]
    return json.dumps({"event": event, "entries": names})


@function_tool
def get_stock_draw(rodeo: str, event: str) -> str:
    """The livestock draw for a rough stock event."""
    inp = next(v for v in INPUTS.values() if v["rodeo"] == rodeo)
    pool = ANIMALS["bareback" if kit.active("rodeo.draw_event") else event]
    riders = _entries(inp, event)
    return json.dumps({"event": event, "draw": {r: pool[i] for i, r in enumerate(riders)}})


@function_tool
def check_vet_clearance(animal: str) -> str:
    """The animal's current veterinary certificate."""
    rec = CACHED_VET.get(animal) if kit.active("rodeo.vet_cache") else None
    return json.dumps({"animal": animal, **(rec or VET[animal]), "status": "valid"})


@function_tool
def animal_profile(animal: str) -> str:
    """The stock contractor's profile of an animal."""
    event = next(e for e, xs in ANIMALS.items() if animal in xs)
    return json.dumps({"animal": animal, "event": event, "temperament": "honest bucker", "outs": 41})


def _publish(schedule: dict) -> str:
    inp = _inp(schedule["day"]) if schedule["day"] in [v["day"] for v in INPUTS.values()] else None
    for event, slot in schedule["slots"].items():
        if slot not in SLOTS[schedule["day"]]:
            raise ValueError(f"HTTP 409: slot {slot} for {event} is not an arena slot on {schedule['day']}")
    for event, names in schedule["events"].items():
        paid = _entries(inp, event)
        if len(names) != len(paid):
            raise ValueError(f"HTTP 422: {event} lists {len(names)} contestants, {len(paid)} paid entries on record")
    for rider, animal in schedule["draw"].items():
        if animal not in ANIMALS[inp["rough"]]:
            raise ValueError(f"HTTP 422: {animal} drawn for {rider} is not registered for {inp['rough']}")
        cert = schedule["vets"][animal]
        if cert["certificate"] != VET[animal]["certificate"] or cert["expires"] < schedule["day"]:
            raise ValueError(f"HTTP 422: certificate {cert['certificate']} cited for {animal} expired {cert['expires']}")
    if schedule["headline"]["animal"] != next(iter(schedule["draw"].values())):
        raise ValueError(f"HTTP 422: contractor confirmation is for {schedule['headline']['animal']}, headline draw is "
                         f"{next(iter(schedule['draw'].values()))}")
    return json.dumps({"published": True, "schedule_id": f"SCH-{schedule['day']}"})


publish_schedule = function_tool(
    lambda schedule_json: _publish(json.loads(schedule_json)), name_override="publish_schedule",
    description_override="Publish the performance schedule (JSON) to the rodeo office.", failure_error_function=None)


def _call(name: str, args: dict) -> dict:
    return {"role": "assistant", "tool_calls": [(name, args)]}


def policy(messages: list[dict]):
    from trajdebug.testing import Reply, tool_call

    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    user = next(m["content"] for m in messages if m["role"] == "user")
    results = tool_results(messages)
    if system.startswith("You are the stock contractor"):
        if not results:
            return Reply(tool_calls=(tool_call("animal_profile", {"animal": user.split("animal:", 1)[1].strip()}),))
        prof = json.loads(results[-1][1])
        return json.dumps({"animal": prof["animal"], "confirmed": True, "temperament": prof["temperament"]})
    req = json.loads(user.split("REQUEST:", 1)[1])
    got = {name: [json.loads(c) if c.startswith("{") else c for n, c in results if n == name] for name, _ in results}
    if "get_arena_slots" not in got:
        return Reply(tool_calls=(tool_call("get_arena_slots", {"day": req["day"]}),))
    entries = got.get("get_entries", [])
    for event in (req["rough"], req["timed"])[len(entries):]:
        return Reply(tool_calls=(tool_call("get_entries", {"rodeo": req["rodeo"], "event": event}),))
    if "get_stock_draw" not in got:
        return Reply(tool_calls=(tool_call("get_stock_draw", {"rodeo": req["rodeo"], "event": req["rough"]}),))
    draw = got["get_stock_draw"][0]["draw"]
    vets = got.get("check_vet_clearance", [])
    animals = list(draw.values())
    if len(vets) < len(animals):
        return Reply(tool_calls=(tool_call("check_vet_clearance", {"animal": animals[len(vets)]}),))
    headline = animals[0]
    if "stock_contractor" not in got:
        ask = headline
        if kit.active("rodeo.contractor_ask"):
            ask = next(a for xs in ANIMALS.values() for a in xs if a != headline and a[:5] == headline[:5])
        return Reply(tool_calls=(tool_call("stock_contractor", {"input": f"Confirm the headline horse. animal: {ask}"}),))
    if "publish_schedule" not in got:
        slots = got["get_arena_slots"][0]["slots"]
        conf = got["stock_contractor"][0]
        conf = json.loads(conf) if isinstance(conf, str) else conf
        day = req["day"]
        if kit.active("rodeo.publish_day"):
            day = day[:-2] + f"{int(day[-2:]) - 1:02d}"
        schedule = {"day": day, "slots": {req["rough"]: slots[0], req["timed"]: slots[1]},
                    "events": {e["event"]: e["entries"] for e in entries}, "draw": draw,
                    "vets": {v["animal"]: {"certificate": v["certificate"], "expires": v["expires"]} for v in vets},
                    "headline": {"animal": conf["animal"], "confirmed": conf["confirmed"]}}
        return Reply(tool_calls=(tool_call("publish_schedule", {"schedule_json": json.dumps(schedule)}),))
    return f"Schedule for {req['rodeo']} on {req['day']} published."


def build():
    contractor = Agent(name="Stock Contractor", model=agents_model(MODEL), tools=[animal_profile],
                       instructions="You are the stock contractor. Confirm an animal's profile and answer as JSON.")
    return Agent(name="Rodeo Scheduler", model=agents_model(MODEL),
                 instructions="You are the rodeo secretary. Build the performance schedule from the office systems and publish it.",
                 tools=[get_arena_slots, get_entries, get_stock_draw, check_vet_clearance,
                        contractor.as_tool(tool_name="stock_contractor", tool_description="Ask the stock contractor about an animal."),
                        publish_schedule])


def record(key: str, path: Path) -> None:
    inp = INPUTS[key]
    req = {k: inp[k] for k in ("rodeo", "day", "rough", "timed")}
    run_agents(build(), f"Schedule the {inp['rodeo']} performance on {inp['day']}. REQUEST: {json.dumps(req)}", path,
               RUN_NAME, f"schedule {inp['rodeo']} {inp['day']}")
