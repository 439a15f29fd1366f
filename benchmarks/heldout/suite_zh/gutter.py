"""Gutter cleaning visits: the OpenAI Agents SDK (dispatcher agent with tools, an access surveyor agent as a tool)."""
from __future__ import annotations

import json

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .kit import active

AGENT, ROUTE, EXT = "gutter-visit-dispatcher", "openai_agents", "jsonl"
DOMAIN = "gutter cleaning visits"
SHAPE = "dispatcher agent: property lookup -> job memory -> forecast -> access surveyor agent-as-tool (ladder check) -> quote -> crew roster -> schedule"

INPUTS = {
    "elm": {"customer": "CU-5512", "address": "14 Elm Row", "date": "2026-12-09"},
    "quarry": {"customer": "CU-7730", "address": "3 Quarry Close", "date": "2026-12-10"},
    "r1": {"customer": "CU-1022", "address": "88 Mill Street", "date": "2026-12-08"},
    "r2": {"customer": "CU-3391", "address": "5 Heron Court", "date": "2026-12-11"},
    "r3": {"customer": "CU-4410", "address": "21 Bay View", "date": "2026-12-10"},
    "r4": {"customer": "CU-9007", "address": "7 Orchard Rise", "date": "2026-12-09"},
}
REFS = ["r1", "r2", "r3", "r4"]
PROPERTIES = {
    "14 Elm Row": {"property_id": "P-2290", "storeys": 2, "gutter_m": 38, "downpipes": 4, "adjoining": "P-2291"},
    "3 Quarry Close": {"property_id": "P-4102", "storeys": 3, "gutter_m": 52, "downpipes": 6, "adjoining": "P-4103"},
    "88 Mill Street": {"property_id": "P-1187", "storeys": 1, "gutter_m": 24, "downpipes": 2, "adjoining": "P-1188"},
    "5 Heron Court": {"property_id": "P-3020", "storeys": 2, "gutter_m": 31, "downpipes": 3, "adjoining": "P-3021"},
    "21 Bay View": {"property_id": "P-5561", "storeys": 2, "gutter_m": 44, "downpipes": 4, "adjoining": "P-5562"},
    "7 Orchard Rise": {"property_id": "P-6604", "storeys": 1, "gutter_m": 19, "downpipes": 2, "adjoining": "P-6605"},
}
RAIN_NOW = {"2026-12-09"}
LEAVE = {"C1"}
JOB: dict = {}

CASES = [
    ("zh-gutter-01", "bad_memory_write", "elm", ("remember_job", 1, "tool"), "schedule_visit",
     "remember_job stores the adjoining property's id in the job memory, and scheduling refuses a property that is not at the address."),
    ("zh-gutter-02", "stale_data", "elm", ("rain_forecast", 1, "tool"), "schedule_visit",
     "rain_forecast answers from last week's cached forecast, so the visit is set on a day crews are stood down for rain."),
    ("zh-gutter-03", "wrong_tool_args", "quarry", ("generation scripted-policy", 7, "llm"), "schedule_visit",
     "the dispatcher calls quote_visit with the downpipe count as the gutter length, and scheduling rejects a quote below the job's metres."),
    ("zh-gutter-04", "swallowed_error", "elm", ("crew_roster", 1, "tool"), "schedule_visit",
     "crew_roster swallows the roster service's 503 and returns the default crew list, including a crew on leave."),
    ("zh-gutter-05", "truncated_result", "quarry", ("ladder_check", 1, "tool"), "schedule_visit",
     "ladder_check's equipment list is cut off after the ladder, so the work order lacks the harness a 3-storey job needs."),
]


def _results(msgs):
    return [json.loads(m["content"]) if m["content"].startswith(("{", "[")) else m["content"]
            for m in msgs if m["role"] == "tool"]


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    done = _results(msgs)
    if system.startswith("You check ladder access"):
        if not done:
            data = json.loads(msgs[-1]["content"])
            return Reply(tool_calls=(tool_call("ladder_check", data),))
        return "Equipment: " + ", ".join(done[0]["equipment"])
    job = json.loads(next(m["content"] for m in msgs if m["role"] == "user"))
    steps = [
        lambda: tool_call("lookup_property", {"address": job["address"]}),
        lambda: tool_call("remember_job", {"customer": job["customer"], "property_id": done[0]["property_id"],
                                           "adjoining": done[0]["adjoining"]}),
        lambda: tool_call("rain_forecast", {"date": job["date"]}),
        lambda: tool_call("access_surveyor", {"input": json.dumps({"storeys": done[0]["storeys"]})}),
        lambda: tool_call("quote_visit", {"gutter_m": done[0]["downpipes" if active("zh-gutter-03") else "gutter_m"],
                                          "storeys": done[0]["storeys"]}),
        lambda: tool_call("crew_roster", {"date": done[2]["date"] if done[2]["dry"] else done[2]["next_dry"]}),
    ]
    if len(done) < len(steps):
        return Reply(tool_calls=(steps[len(done)](),))
    if len(done) == len(steps):
        equipment = done[3].split(":", 1)[1].strip().split(", ")
        crew = next(c for c in done[5]["crews"])
        return Reply(tool_calls=(tool_call("schedule_visit", {"date": done[5]["date"], "crew": crew,
                                                              "equipment": equipment, "quote_id": done[4]["quote_id"]}),))
    return f"Visit scheduled: {done[-1]}"


@function_tool
def lookup_property(address: str) -> str:
    """Property record for an address."""
    return json.dumps({"address": address, **PROPERTIES[address]})


@function_tool
def remember_job(customer: str, property_id: str, adjoining: str) -> str:
    """Write the job memory the scheduler reads."""
    JOB["customer"] = customer
    JOB["property_id"] = adjoining if active("zh-gutter-01") else property_id
    return f"job memory saved for {customer}"


@function_tool
def rain_forecast(date: str) -> str:
    """Forecast for a date and the next dry day."""
    rainy = RAIN_NOW if not active("zh-gutter-02") else set()
    nxt = str(int(date[-2:]) + 1).zfill(2)
    return json.dumps({"date": date, "dry": date not in rainy, "next_dry": date[:-2] + nxt, "issued": "2026-12-04T06:00Z"})


@function_tool
def ladder_check(storeys: int) -> str:
    """Access equipment needed for a building height."""
    kit = ["ladder 10.5 m" if storeys >= 2 else "ladder 6 m", "stand-off bracket"]
    if storeys >= 3:
        kit += ["harness", "anchor strap"]
    if active("zh-gutter-05"):
        kit = kit[:2]
    return json.dumps({"storeys": storeys, "equipment": kit})


@function_tool
def quote_visit(gutter_m: float, storeys: int) -> str:
    """Price a cleaning visit."""
    price = round(35 + gutter_m * (1.6 if storeys > 1 else 1.2), 2)
    return json.dumps({"quote_id": f"Q-{int(gutter_m)}-{storeys}", "gutter_m": gutter_m, "price": price})


class RosterDown(Exception):
    pass


@function_tool
def crew_roster(date: str) -> str:
    """Crews available on a date."""
    try:
        if date == "2026-12-10" and JOB_ADDRESS["now"] == "14 Elm Row":
            raise RosterDown("503 roster service unavailable")
        return json.dumps({"date": date, "crews": ["C2", "C3"]})
    except RosterDown:
        if active("zh-gutter-04"):
            return json.dumps({"date": date, "crews": ["C1", "C2", "C3"]})
        return json.dumps({"date": date, "crews": ["C2", "C3"], "source": "manual roster sheet"})


@function_tool(failure_error_function=None)
def schedule_visit(date: str, crew: str, equipment: list[str], quote_id: str) -> str:
    """Create the visit work order (reads the job memory)."""
    prop = PROPERTIES[JOB_ADDRESS["now"]]
    if JOB["property_id"] != prop["property_id"]:
        raise ValueError(f"422 Unprocessable Entity: property {JOB['property_id']} is not at {JOB_ADDRESS['now']}")
    if date in RAIN_NOW:
        raise ValueError(f"409 Conflict: crews are stood down on {date} (rain warning)")
    if crew in LEAVE:
        raise ValueError(f"409 Conflict: crew {crew} is on leave on {date}")
    metres = int(quote_id.split("-")[1])
    if metres != prop["gutter_m"]:
        raise ValueError(f"422 Unprocessable Entity: quote {quote_id} covers {metres} m, property has {prop['gutter_m']} m of gutter")
    if prop["storeys"] >= 3 and "harness" not in equipment:
        raise ValueError(f"422 Unprocessable Entity: {prop['storeys']}-storey job needs a harness; work order lists {', '.join(equipment)}")
    return json.dumps({"work_order": f"WO-{prop['property_id']}-{date}", "crew": crew})


JOB_ADDRESS: dict = {}


def record(key: str, fault: str | None, out, server) -> None:
    JOB.clear()
    JOB_ADDRESS["now"] = INPUTS[key]["address"]
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=AsyncOpenAI(
        base_url=server.base_url, api_key="not-needed", max_retries=0))
    surveyor = Agent(name="access_surveyor", instructions="You check ladder access for a property and list equipment.",
                     model=model, tools=[ladder_check])
    dispatcher = Agent(name="dispatcher", instructions="You schedule gutter cleaning visits with the tools.", model=model,
                       tools=[lookup_property, remember_job, rain_forecast,
                              surveyor.as_tool(tool_name="access_surveyor", tool_description="Ask the access surveyor."),
                              quote_visit, crew_roster, schedule_visit])
    proc = TrajdebugProcessor(path=str(out), name=AGENT, task=json.dumps(INPUTS[key]))
    set_trace_processors([proc])
    try:
        Runner.run_sync(dispatcher, json.dumps(INPUTS[key]), run_config=RunConfig(workflow_name=AGENT))
    except Exception:  # noqa: BLE001 - the run records the failure
        pass
    set_trace_processors([])
