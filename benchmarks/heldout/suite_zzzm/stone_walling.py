"""Dry stone walling crew (openai_agents): an intake agent hands off to an estimator or the repair crew; the
estimator runs parallel per-section tool calls, calls a quarry buyer agent as a tool, and ends in a typed quote."""
import ast
import asyncio
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client, set_tracing_disabled
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from pydantic import BaseModel, model_validator

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME, ROUTE, DOMAIN = "drystone-wall-estimates", "openai_agents", "dry stone walling crew"
SHAPE = "intake agent -> hand-off -> estimator: survey, N parallel stone_needed calls, quarry buyer agent-as-tool (stock + reserve), delivery check, typed WallQuote output"
ON: set = set()

INPUTS = [
    {"enquiry": "New field wall at High Fold farm, Malham: limestone, double-skinned, please quote."},
    {"enquiry": "Please quote a new boundary wall at Greystones, Haworth, in gritstone."},
    {"enquiry": "Quote for a new sheepfold wall at Low Fold farm, Malham, limestone."},
    {"enquiry": "New roadside wall at Beck Side, Coniston, slate stone, quote wanted."},
    {"enquiry": "Quote a new garden wall at Mill House, Haworth, gritstone please."},
]
CASES = [
    {"id": "zzzm-26", "input": 3, "switch": "route_repair", "kind": "wrong_routing",
     "root": ("generation wall-model", 1, "llm"), "failure": ("inspect_gap", 1),
     "description": "The intake model hands a new-build enquiry to the repair crew instead of the estimator."},
    {"id": "zzzm-27", "input": 1, "switch": "buyer_stone", "kind": "subagent_wrong_entity",
     "root": ("generation wall-model", 5, "llm"), "failure": ("site_delivery_check", 1),
     "description": "The quarry buyer agent checks stock and reserves at Oxenhope Quarry (sandstone) instead of Haworth Moor Quarry for a gritstone job."},
    {"id": "zzzm-28", "input": 0, "switch": "swap_args", "kind": "wrong_tool_args",
     "root": ("generation wall-model", 3, "llm"), "failure": ("reserve_stone", 1),
     "description": "In one of the parallel per-section calls the estimator passes the section's length as its height."},
    {"id": "zzzm-29", "input": 2, "switch": "site_match", "kind": "wrong_retrieval",
     "root": ("survey_wall_run", 1, "tool"), "failure": ("site_delivery_check", 1),
     "description": "The survey lookup matches on the village and returns the High Fold survey for a Low Fold job."},
    {"id": "zzzm-30", "input": 4, "switch": "courses", "kind": "off_by_one",
     "root": ("stone_needed", 2, "tool"), "failure": ("turn 6", 1),
     "description": "The stone calculator counts one course more than the section's height holds for the second section."},
]
SURVEYS = {
    "High Fold": {"site": "High Fold", "postcode": "BD24 9AA", "sections": [{"id": "A", "length_m": 42, "height_m": 1.4}, {"id": "B", "length_m": 18, "height_m": 1.2}]},
    "Greystones": {"site": "Greystones", "postcode": "BD22 8QS", "sections": [{"id": "A", "length_m": 25, "height_m": 1.5}, {"id": "B", "length_m": 12, "height_m": 1.5}, {"id": "C", "length_m": 9, "height_m": 1.1}]},
    "Low Fold": {"site": "Low Fold", "postcode": "BD24 9PX", "sections": [{"id": "A", "length_m": 14, "height_m": 1.3}, {"id": "B", "length_m": 14, "height_m": 1.3}]},
    "Beck Side": {"site": "Beck Side", "postcode": "LA21 8DU", "sections": [{"id": "A", "length_m": 30, "height_m": 1.2}]},
    "Mill House": {"site": "Mill House", "postcode": "BD22 0DT", "sections": [{"id": "A", "length_m": 8, "height_m": 1.0}, {"id": "B", "length_m": 6, "height_m": 1.0}]},
}
STONE = {"limestone": "Malham Cove Quarry", "gritstone": "Haworth Moor Quarry", "slate stone": "Coniston Old Man Quarry"}
STOCK_T = {"Malham Cove Quarry": 160, "Haworth Moor Quarry": 90, "Coniston Old Man Quarry": 70, "Oxenhope Quarry": 120}
_job: dict = {}


def _site(text):
    return next(s for s in SURVEYS if s in text)


def _stone(text):
    return next(s for s in STONE if s in text)


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    user = next(m["content"] for m in msgs if m["role"] == "user")
    names, res, calls = {}, {}, {}
    for m in msgs:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
            calls[c["id"]] = json.loads(c["function"]["arguments"])
        if m["role"] == "tool":
            n = names[m["tool_call_id"]]
            try:
                val = ast.literal_eval(m["content"])
            except (ValueError, SyntaxError):
                val = m["content"]
            res.setdefault(n, []).append(val)
    if system.startswith("You take walling enquiries"):
        target = "transfer_to_repair_crew" if ("route_repair" in ON or "repair" in user.lower()) else "transfer_to_estimator"
        return Reply(tool_calls=(tool_call(target, {}),))
    if system.startswith("You buy stone"):
        job = json.loads(user)
        if "quarry_stock" not in res:
            quarry = STONE[job["stone"]]
            if "buyer_stone" in ON:
                quarry = "Oxenhope Quarry"
            return Reply(tool_calls=(tool_call("quarry_stock", {"quarry": quarry}),))
        if "reserve_stone" not in res:
            st = res["quarry_stock"][0]
            return Reply(tool_calls=(tool_call("reserve_stone", {"quarry": st["quarry"], "tonnes": job["tonnes"]}),))
        return json.dumps(res["reserve_stone"][0])
    if system.startswith("You repair"):
        return Reply(tool_calls=(tool_call("inspect_gap", {"site": _site(user)}),))
    # estimator
    site, stone = _site(user), _stone(user)
    if "survey_wall_run" not in res:
        return Reply(tool_calls=(tool_call("survey_wall_run", {"site": site}),))
    if "stone_needed" not in res:
        secs = res["survey_wall_run"][0]["sections"]
        out = []
        for i, s in enumerate(secs):
            h = s["length_m"] if ("swap_args" in ON and i == 0) else s["height_m"]
            out.append(tool_call("stone_needed", {"section": s["id"], "length_m": s["length_m"], "height_m": h}))
        return Reply(tool_calls=tuple(out))
    tonnes = round(sum(r["tonnes"] for r in res["stone_needed"]), 1)
    if "buy_stone" not in res:
        return Reply(tool_calls=(tool_call("buy_stone", {"input": json.dumps({"stone": stone, "tonnes": tonnes})}),))
    if "site_delivery_check" not in res:
        return Reply(tool_calls=(tool_call("site_delivery_check", {"site": site, "reservation": str(res["buy_stone"][0]),
                                                                    "survey_postcode": res["survey_wall_run"][0]["postcode"]}),))
    resv = json.loads(res["buy_stone"][0]) if isinstance(res["buy_stone"][0], str) else res["buy_stone"][0]
    heights = {x["id"]: x["height_m"] for x in res["survey_wall_run"][0]["sections"]}
    lines = [{"section": r["section"], "height_m": heights[r["section"]], "courses": r["courses"], "tonnes": r["tonnes"]}
             for r in res["stone_needed"]]
    return json.dumps({"site": site, "stone": stone, "tonnes": tonnes, "quarry": resv["quarry"], "sections": lines,
                       "price_gbp": round(tonnes * 95 + sum(s["length_m"] for s in res["survey_wall_run"][0]["sections"]) * 60)})


@function_tool(failure_error_function=None)
def survey_wall_run(site: str) -> dict:
    """The crew's survey of a wall run: sections with length and height in metres."""
    key = site
    if "site_match" in ON:
        key = next(k for k in SURVEYS if k.split()[-1] == site.split()[-1])
    _job["postcode"] = SURVEYS[site]["postcode"]
    return json.loads(json.dumps(SURVEYS[key]))


@function_tool(failure_error_function=None)
def stone_needed(section: str, length_m: float, height_m: float) -> dict:
    """Tonnes of walling stone for a double-skinned section: courses of 0.15 m, 0.16 t per course per metre."""
    courses = round(height_m / 0.15)
    if "courses" in ON and section == "B":
        courses += 1
    return {"section": section, "courses": courses, "tonnes": round(courses * length_m * 0.16, 1)}


@function_tool(failure_error_function=None)
def quarry_stock(quarry: str) -> dict:
    """Stone a quarry has ready to load, in tonnes."""
    stone = {v: k for k, v in STONE.items()}.get(quarry, "sandstone")
    return {"quarry": quarry, "stone": stone, "ready_t": STOCK_T[quarry]}


@function_tool(failure_error_function=None)
def reserve_stone(quarry: str, tonnes: float) -> dict:
    """Reserve stone at a quarry for collection."""
    if tonnes > STOCK_T[quarry]:
        raise ValueError(f"{quarry} has {STOCK_T[quarry]} t ready, cannot reserve {tonnes} t")
    stone = {v: k for k, v in STONE.items()}.get(quarry, "sandstone")
    return {"quarry": quarry, "stone": stone, "tonnes": tonnes, "ref": f"RS-{quarry[:3].upper()}-{int(tonnes * 10)}"}


@function_tool(failure_error_function=None)
def site_delivery_check(site: str, reservation: str, survey_postcode: str) -> dict:
    """Haulage desk check before booking a wagon: stone and delivery address against the job."""
    resv = json.loads(reservation) if reservation.startswith("{\"") else ast.literal_eval(reservation)
    wanted = _job["stone"]
    if resv["stone"] != wanted:
        raise ValueError(f"haulage refuses: reservation {resv['ref']} is {resv['stone']}, the job at {site} is {wanted}")
    if survey_postcode != SURVEYS[site]["postcode"]:
        raise ValueError(f"haulage refuses: survey postcode {survey_postcode} is not the delivery address of {site}")
    return {"site": site, "wagon": "8-wheeler tipper", "ref": resv["ref"]}


@function_tool(failure_error_function=None)
def inspect_gap(site: str) -> dict:
    """Repair crew: look up the reported gap in an existing wall."""
    raise LookupError(f"no existing wall or reported gap on record at {site}; repair crew cannot price it")


class SectionLine(BaseModel):
    section: str
    height_m: float
    courses: int
    tonnes: float


class WallQuote(BaseModel):
    site: str
    stone: str
    tonnes: float
    quarry: str
    price_gbp: int
    sections: list[SectionLine]

    @model_validator(mode="after")
    def _positive(self):
        if self.tonnes <= 0 or self.price_gbp <= 0:
            raise ValueError("quote needs positive tonnage and price")
        for line in self.sections:
            if line.courses != round(line.height_m / 0.15):
                raise ValueError(f"section {line.section}: {line.courses} courses do not build a {line.height_m} m wall at 150 mm a course")
        return self


def run_one(inp, path, server):
    _job.clear()
    _job["stone"] = _stone(inp["enquiry"])
    set_tracing_disabled(False)
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp["enquiry"])])
    buyer = Agent(name="quarry_buyer", instructions="You buy stone for the crew: check stock, then reserve.", model="wall-model",
                  tools=[quarry_stock, reserve_stone])
    estimator = Agent(name="estimator", instructions="You estimate new walls: survey, stone per section, buy stone, check delivery.",
                      model="wall-model", output_type=WallQuote,
                      tools=[survey_wall_run, stone_needed, buyer.as_tool(tool_name="buy_stone", tool_description="Buy stone from a quarry."),
                             site_delivery_check])
    repair = Agent(name="repair_crew", instructions="You repair gaps in existing walls.", model="wall-model", tools=[inspect_gap])
    intake = Agent(name="wall_intake", instructions="You take walling enquiries and pass them to the right team.", model="wall-model",
                   handoffs=[estimator, repair])

    async def go():
        client = AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        set_default_openai_client(client)
        try:
            await Runner.run(intake, inp["enquiry"], run_config=RunConfig(workflow_name=NAME))
        finally:
            await client.close()

    try:
        asyncio.run(go())
    except Exception:
        pass
    finally:
        set_trace_processors([])
