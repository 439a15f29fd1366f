"""Kennel boarding desk (route: openai_agents).

The real OpenAI Agents SDK against the fake model server (Chat Completions): a front desk looks the
owner up and hands off to the boarding desk or the daycare desk; the boarding desk asks a vaccination
clerk (an agent run as a tool) for the dog's certificate, checks availability and price with two
parallel tool calls, then reserves a kennel run through the kennel's booking API.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import contextmanager

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from agents import set_tracing_disabled
from openai import AsyncOpenAI
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import FakeModelServer, Reply, tool_call

import kit

AGENT = "kennel-boarding-desk"
ROUTE = "openai_agents"
DOMAIN = "kennel boarding"
SHAPE = "front desk (owner lookup) -> hand-off to boarding or daycare desk -> vaccination clerk (agent as tool, vet-record tool) -> parallel availability + price -> reservation API"

OWNERS = {
    "OW-2231": {"name": "Morag Duthie", "dogs": [("D-4471", "Biscuit", "medium"), ("D-4472", "Bramble", "large")],
                "last_stay_run": "R-L07"},
    "OW-2240": {"name": "Iain Baird", "dogs": [("D-4490", "Skye", "small")], "last_stay_run": "R-S02"},
    "OW-2256": {"name": "Fiona Keir", "dogs": [("D-4513", "Tam", "large"), ("D-4514", "Nell", "medium")],
                "last_stay_run": "R-L04"},
    "OW-2263": {"name": "Callum Reid", "dogs": [("D-4530", "Bonnie", "giant")], "last_stay_run": "R-G01"},
    "OW-2270": {"name": "Aileen Moffat", "dogs": [("D-4547", "Rua", "medium"), ("D-4548", "Pip", "small")],
                "last_stay_run": "R-M01"},
    "OW-2288": {"name": "Euan Lindsay", "dogs": [("D-4566", "Jura", "large")], "last_stay_run": "R-L02"},
    "OW-2295": {"name": "Kirsty Nairn", "dogs": [("D-4581", "Moss", "medium"), ("D-4582", "Fern", "medium")],
                "last_stay_run": "R-M06"},
    "OW-2301": {"name": "Duncan Ure", "dogs": [("D-4599", "Corrie", "small")], "last_stay_run": "R-S05"},
}
RATES = {"small": 24.0, "medium": 29.0, "large": 34.0}  # per night, GBP
WALK = 6.0


def _dog(owner: str, name: str) -> tuple[str, str, str]:
    return next(d for d in OWNERS[owner]["dogs"] if d[1] == name)


def vet_record(dog_id: str) -> dict:
    n = int(dog_id[2:])
    return {"dog_id": dog_id, "certificate": f"VC-{n * 3 % 9000 + 1000}", "practice": "Strathmore Vets",
            "kennel_cough_until": f"2027-{n % 9 + 2:02d}-15", "dhpp_until": f"2027-{n % 7 + 4:02d}-01"}


def _inp(owner: str, dog: str, start: str, nights: int, service: str = "boarding", walks: bool = True) -> dict:
    return {"owner_id": owner, "dog": dog, "service": service, "start": start, "nights": nights, "daily_walk": walks}


REFS = [
    _inp("OW-2240", "Skye", "2026-12-18", 4),
    _inp("OW-2270", "Pip", "2026-12-09", 1, service="daycare", walks=False),
    _inp("OW-2288", "Jura", "2026-12-22", 6, walks=False),
    _inp("OW-2301", "Corrie", "2026-12-27", 3),
]


# ---------------------------------------------------------------- the scripted model

def _results(messages: list[dict]) -> dict[str, list]:
    names = {}
    for m in messages:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
    out: dict[str, list] = {}
    for m in messages:
        if m.get("role") == "tool":
            text = m["content"] if isinstance(m["content"], str) else "".join(p.get("text", "") for p in m["content"])
            try:
                val = json.loads(text)
            except ValueError:
                val = text
            out.setdefault(names.get(m["tool_call_id"], "?"), []).append(val)
    return out


def _request(messages: list[dict]) -> dict:
    for m in messages:
        if m.get("role") == "user" and str(m.get("content", "")).startswith("{"):
            return json.loads(m["content"])
    return {}


def brain(request):
    messages = request.body["messages"]
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    seen = _results(messages)
    req = _request(messages)
    if system.startswith("You are the front desk"):
        if "lookup_owner" not in seen:
            return Reply(tool_calls=(tool_call("lookup_owner", {"owner_id": req["owner_id"]}),))
        target = "transfer_to_daycare_desk" if req["service"] == "daycare" else "transfer_to_boarding_desk"
        if kit.active("kn-route-daycare"):
            target = "transfer_to_daycare_desk"
        return Reply(tool_calls=(tool_call(target, {}),))
    if system.startswith("You are the vaccination clerk"):
        ask = json.loads(messages[-1]["content"]) if messages[-1]["role"] == "user" else {}
        if "fetch_vet_record" not in seen:
            dog_id = ask["dog_id"]
            if kit.active("kn-clerk-sibling"):
                owner = OWNERS[ask["owner_id"]]
                dog_id = next(d[0] for d in owner["dogs"] if d[0] != ask["dog_id"])
            return Reply(tool_calls=(tool_call("fetch_vet_record", {"dog_id": dog_id}),))
        rec = seen["fetch_vet_record"][-1]
        until = rec["kennel_cough_until"]
        if kit.active("kn-clerk-until"):
            until = "2027-08-31"
        return json.dumps({"dog_id": rec["dog_id"], "certificate": rec["certificate"], "kennel_cough_until": until,
                           "status": "in date"})
    owner = seen.get("lookup_owner", [{}])[-1]
    dog = next((d for d in owner.get("dogs", []) if d["name"] == req.get("dog")), None)
    if system.startswith("You are the daycare desk"):
        if "book_daycare" not in seen:
            return Reply(tool_calls=(tool_call("book_daycare", {"dog_id": dog["dog_id"], "date": req["start"],
                                                                "days": req["nights"]}),))
        return f"Daycare booked for {req['dog']}: {seen['book_daycare'][-1]['ref']}."
    if system.startswith("You are the boarding desk"):
        if "vaccination_clerk" not in seen:
            return Reply(tool_calls=(tool_call("vaccination_clerk", {"input": json.dumps(
                {"owner_id": req["owner_id"], "dog_id": dog["dog_id"], "dog": dog["name"]})}),))
        if "check_availability" not in seen:
            extras = ["daily walk"] if req["daily_walk"] else []
            return Reply(tool_calls=(
                tool_call("check_availability", {"size": dog["size"], "start": req["start"], "nights": req["nights"]}),
                tool_call("quote_price", {"size": dog["size"], "nights": req["nights"], "extras": extras}),
            ))
        if "reserve_run" not in seen:
            vacc = seen["vaccination_clerk"][-1]
            run_id = seen["check_availability"][-1]["runs"][0]
            if kit.active("kn-run-from-notes"):
                run_id = owner["notes"]["last_stay_run"]
            return Reply(tool_calls=(tool_call("reserve_run", {
                "dog_id": dog["dog_id"], "run": run_id, "start": req["start"], "nights": req["nights"],
                "total_gbp": seen["quote_price"][-1]["total_gbp"], "certificate": vacc["certificate"],
                "kennel_cough_until": vacc["kennel_cough_until"]}),))
        res = seen["reserve_run"][-1]
        return f"{req['dog']} is booked into run {res['run']} from {req['start']} for {req['nights']} nights ({res['ref']})."
    raise ValueError("unknown agent")


# ---------------------------------------------------------------- tools

@function_tool
def lookup_owner(owner_id: str) -> str:
    """Look up a kennel customer and their dogs."""
    o = OWNERS[owner_id]
    return json.dumps({"owner_id": owner_id, "name": o["name"],
                       "dogs": [{"dog_id": i, "name": n, "size": s} for i, n, s in o["dogs"]],
                       "notes": {"last_stay_run": o["last_stay_run"], "feeds": "twice daily"}})


@function_tool
def fetch_vet_record(dog_id: str) -> str:
    """Fetch a dog's vaccination record from the vet practice."""
    return json.dumps(vet_record(dog_id))


@function_tool
def check_availability(size: str, start: str, nights: int) -> str:
    """Free kennel runs of the right size for the whole stay."""
    day = int(start[-2:])
    prefix = {"small": "S", "medium": "M", "large": "L", "giant": "L"}[size]
    runs = [f"R-{prefix}{(day + k) % 8 + 1:02d}" for k in range(3)]
    return json.dumps({"start": start, "nights": nights, "runs": runs})


@function_tool
def quote_price(size: str, nights: int, extras: list[str]) -> str:
    """Price a stay from the tariff."""
    try:
        rate = RATES[size]
    except KeyError:
        if not kit.active("kn-quote-default"):
            rate = RATES["large"] + 8.0  # giant breeds: large rate plus surcharge
        else:
            rate = 0.0
    total = nights * (rate + (WALK if "daily walk" in extras else 0.0))
    return json.dumps({"nights": nights, "nightly_gbp": rate, "total_gbp": round(total, 2)})


def _tariff(size: str, nights: int) -> float:
    return nights * RATES.get(size, RATES["large"] + 8.0)


@function_tool(failure_error_function=None)
def reserve_run(dog_id: str, run: str, start: str, nights: int, total_gbp: float, certificate: str,
                kennel_cough_until: str) -> str:
    """Reserve a kennel run in the booking system."""
    rec = vet_record(dog_id)
    if certificate != rec["certificate"]:
        raise RuntimeError(f"412 Precondition Failed: certificate {certificate} is not registered to {dog_id}")
    if kennel_cough_until != rec["kennel_cough_until"]:
        raise RuntimeError(f"412 Precondition Failed: certificate {certificate} does not match the practice register")
    day = int(start[-2:])
    free = {f"R-{p}{(day + k) % 8 + 1:02d}" for p in "SML" for k in range(3)}
    if run not in free:
        raise RuntimeError(f"409 Conflict: run {run} is occupied on {start}")
    if total_gbp < nights * RATES["small"]:
        raise RuntimeError(f"402 Payment Required: deposit cannot be taken on a total of {total_gbp:.2f} GBP")
    return json.dumps({"status": "reserved", "run": run, "ref": f"BK-{dog_id[2:]}-{day:02d}{nights}"})


@function_tool(failure_error_function=None)
def book_daycare(dog_id: str, date: str, days: int) -> str:
    """Book daycare days (no overnight stay)."""
    if days > 1:
        raise RuntimeError(f"422 Unprocessable Entity: daycare is booked per day; {days} consecutive days need a boarding reservation")
    return json.dumps({"status": "booked", "ref": f"DC-{dog_id[2:]}-{date[-2:]}"})


def build(model) -> Agent:
    clerk = Agent(name="vaccination_clerk", model=model, tools=[fetch_vet_record],
                  instructions="You are the vaccination clerk. Fetch the dog's record and report its certificate as JSON.")
    boarding = Agent(name="boarding_desk", model=model,
                     instructions="You are the boarding desk. Check vaccinations, availability and price, then reserve.",
                     tools=[clerk.as_tool("vaccination_clerk", "Check a dog's vaccinations."), check_availability,
                            quote_price, reserve_run])
    daycare = Agent(name="daycare_desk", model=model, tools=[book_daycare],
                    instructions="You are the daycare desk. Book daycare days.")
    return Agent(name="front_desk", model=model, tools=[lookup_owner], handoffs=[boarding, daycare],
                 instructions="You are the front desk of a boarding kennel. Look up the owner, then hand off.")


@contextmanager
def session():
    with FakeModelServer(brain, model="desk-model") as server:
        yield server


async def _run(server, inp: dict) -> None:
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        front = build(OpenAIChatCompletionsModel(model="desk-model", openai_client=client))
        await Runner.run(front, json.dumps(inp), run_config=RunConfig(workflow_name=AGENT))
    finally:
        await client.close()


def record(server, inp: dict, path) -> None:
    proc = TrajdebugProcessor(path=str(path), name=AGENT, task=f"{inp['service']} for {inp['dog']} from {inp['start']}")
    set_tracing_disabled(False)
    set_trace_processors([proc])
    try:
        asyncio.run(_run(server, inp))
    except Exception:
        pass
    finally:
        set_trace_processors([])


CASES = [
    {"case": "w_kennel_1", "fault": "kn-clerk-sibling", "kind": "subagent_wrong_entity",
     "input": _inp("OW-2231", "Biscuit", "2026-12-19", 5), "root": "generation desk-model", "marker": '"dog_id": "D-4472"'},
    {"case": "w_kennel_2", "fault": "kn-route-daycare", "kind": "wrong_routing",
     "input": _inp("OW-2256", "Tam", "2026-12-12", 3, walks=False), "root": "generation desk-model", "marker": "transfer_to_daycare_desk"},
    {"case": "w_kennel_3", "fault": "kn-run-from-notes", "kind": "context_pollution",
     "input": _inp("OW-2295", "Fern", "2026-12-24", 7), "root": "generation desk-model", "marker": "R-M06"},
    {"case": "w_kennel_4", "fault": "kn-quote-default", "kind": "swallowed_error",
     "input": _inp("OW-2263", "Bonnie", "2026-12-23", 4), "root": "quote_price", "marker": '"nightly_gbp": 0.0'},
    {"case": "w_kennel_5", "fault": "kn-clerk-until", "kind": "hallucinated_value",
     "input": _inp("OW-2231", "Bramble", "2026-12-05", 2, walks=False), "root": "generation desk-model", "marker": "2027-08-31"},
]
