"""Fireworks display permits (OpenAI Agents SDK): a planner agent with survey, inventory and lot tools,
a wind analyst agent used as a tool, and the permit filing."""
from __future__ import annotations

import json

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .common import Case, policy, tool_results
from .kit import active

NAME, ROUTE, DOMAIN = "fireworks-permits", "openai_agents", "fireworks displays"
SHAPE = "planner agent: site survey tool -> wind analyst agent-as-tool (met tool) -> shell inventory tool -> per-lot recall check loop -> file_permit"

SITES = {
    "Pier West": {"max_shell_in": 4, "spectator_m": 120, "wind": 18},
    "Castle Lawn": {"max_shell_in": 3, "spectator_m": 90, "wind": 12},
    "Pier East": {"max_shell_in": 5, "spectator_m": 150, "wind": 27},
    "Quarry Rim": {"max_shell_in": 6, "spectator_m": 180, "wind": 9},
    "River Bend": {"max_shell_in": 3, "spectator_m": 95, "wind": 14},
    "Old Airfield": {"max_shell_in": 6, "spectator_m": 200, "wind": 22},
}
SHELLS = [{"lot": f"L-{200 + i}", "caliber_in": c} for i, c in enumerate([2, 3, 3, 4, 5, 6])]
RECALLED = {"L-201"}
INPUTS = {"A": "Pier West", "B": "Castle Lawn", "R1": "Quarry Rim", "R2": "River Bend", "R3": "Old Airfield", "R4": "Pier West"}
REFS = ["R1", "R2", "R3", "R4"]

CASES = [
    Case("zm_fire_1", "hallucinated_value", "A", ("generation fw-planner-1", 8, "llm"), ("file_permit", 1),
         "the planner states a spectator distance in the permit that the site survey never gave", "fire.halluc"),
    Case("zm_fire_2", "wrong_tool_args", "B", ("generation fw-planner-1", 3, "llm"), ("file_permit", 1),
         "the planner asks the inventory for shells up to 4 in rather than the site's 3 in maximum caliber", "fire.args"),
    Case("zm_fire_3", "subagent_wrong_entity", "A", ("generation fw-wind-1", 1, "llm"), ("file_permit", 1),
         "the wind analyst reads the met station of Pier East instead of Pier West", "fire.entity"),
    Case("zm_fire_4", "swallowed_error", "B", ("check_lot", 2, "tool"), ("file_permit", 1),
         "the recall lookup times out and check_lot reports the lot clear", "fire.swallow"),
    Case("zm_fire_5", "format_drift", "A", ("met_reading", 1, "tool"), ("file_permit", 1),
         "the met service answers wind in knots under a new field and the analyst passes the number on as km/h", "fire.drift"),
]


@function_tool
def site_survey(site: str) -> str:
    """Survey data for a launch site."""
    s = SITES[site]
    return json.dumps({"site": site, "max_shell_in": s["max_shell_in"], "spectator_m": s["spectator_m"]})


@function_tool
def met_reading(station: str) -> str:
    """Current wind at a met station."""
    w = SITES[station]["wind"]
    if active("fire.drift"):
        return json.dumps({"station": station, "wind": f"{round(w / 1.852)} kt"})
    return json.dumps({"station": station, "wind_kmh": w})


@function_tool
def shell_inventory(max_caliber_in: int) -> str:
    """Shell lots in the magazine up to a caliber."""
    return json.dumps({"lots": [s for s in SHELLS if s["caliber_in"] <= max_caliber_in]})


@function_tool
def check_lot(lot: str) -> str:
    """Check a shell lot against the recall register."""
    if lot in RECALLED and active("fire.swallow"):
        try:
            raise TimeoutError("recall register did not answer in 3s")
        except TimeoutError:
            return json.dumps({"lot": lot, "status": "clear"})
    return json.dumps({"lot": lot, "status": "recalled" if lot in RECALLED else "clear"})


def _permit_impl(site: str, max_shell_in: int, spectator_m: int, wind_kmh: float, lots: list[str]) -> str:
    s, problems = SITES[site], []
    if spectator_m != s["spectator_m"]:
        problems.append(f"declared spectator distance {spectator_m} m does not match the survey on file ({s['spectator_m']} m)")
    big = [x["lot"] for x in SHELLS if x["lot"] in lots and x["caliber_in"] > s["max_shell_in"]]
    if big:
        problems.append(f"lots {', '.join(big)} exceed the site's {s['max_shell_in']} in shell limit")
    if abs(wind_kmh - s["wind"]) > 3:
        problems.append(f"declared wind {wind_kmh} km/h; fire marshal's station reads {s['wind']} km/h")
    bad = sorted(set(lots) & RECALLED)
    if bad:
        problems.append(f"lots under recall notice: {', '.join(bad)}")
    if problems:
        raise ValueError("permit office returned 422: " + "; ".join(problems))
    return json.dumps({"permit": f"FW-{site[:3].upper()}-{len(lots)}", "status": "granted"})


file_permit = function_tool(_permit_impl, name_override="file_permit", failure_error_function=None)


@policy("fw_wind")
def _wind(msgs):
    res = tool_results(msgs)
    if not res:
        q = next(m["content"] for m in msgs if m["role"] == "user")
        station = "Pier East" if active("fire.entity") and q == "Pier West" else q
        return Reply(tool_calls=(tool_call("met_reading", {"station": station}),))
    r = res[-1][1]
    kmh = r.get("wind_kmh", None)
    if kmh is None:
        kmh = float(r["wind"].split()[0])
    return json.dumps({"site": r["station"], "wind_kmh": kmh})


@policy("fw_plan")
def _plan(msgs):
    res = dict(tool_results(msgs))
    site = next(m["content"] for m in msgs if m["role"] == "user")
    if "site_survey" not in res:
        return Reply(tool_calls=(tool_call("site_survey", {"site": site}),))
    sv = res["site_survey"]
    if "wind_analyst" not in res:
        return Reply(tool_calls=(tool_call("wind_analyst", {"input": site}),))
    wind = res["wind_analyst"]
    if "shell_inventory" not in res:
        cal = 4 if active("fire.args") else sv["max_shell_in"]
        return Reply(tool_calls=(tool_call("shell_inventory", {"max_caliber_in": cal}),))
    lots = [x["lot"] for x in res["shell_inventory"]["lots"]]
    checked = [v for k, v in tool_results(msgs) if k == "check_lot"]
    if len(checked) < len(lots):
        return Reply(tool_calls=(tool_call("check_lot", {"lot": lots[len(checked)]}),))
    if "file_permit" not in res:
        clear = [c["lot"] for c in checked if c["status"] == "clear"]
        dist = 150 if active("fire.halluc") else sv["spectator_m"]
        return Reply(tool_calls=(tool_call("file_permit", {"site": site, "max_shell_in": sv["max_shell_in"], "spectator_m": dist,
                                                           "wind_kmh": wind["wind_kmh"], "lots": clear}),))
    return "Permit filed: " + json.dumps(res["file_permit"])


def record(key, out, base_url):
    client = AsyncOpenAI(base_url=base_url, api_key="local", max_retries=0)
    model = OpenAIChatCompletionsModel(model="fw-planner-1", openai_client=client)
    analyst = Agent(name="wind-analyst", instructions="[desk:fw_wind] Read the met station for the site; answer JSON.",
                    tools=[met_reading], model=OpenAIChatCompletionsModel(model="fw-wind-1", openai_client=client))
    planner = Agent(name="fireworks-planner", model=model,
                    instructions="[desk:fw_plan] Plan a fireworks display permit: survey, wind, shells, recall checks, then file.",
                    tools=[site_survey, analyst.as_tool(tool_name="wind_analyst", tool_description="Wind for a site"),
                           shell_inventory, check_lot, file_permit],
                    model_settings=ModelSettings(parallel_tool_calls=False))
    proc = TrajdebugProcessor(path=str(out), name=NAME, task="file a fireworks display permit")
    set_trace_processors([proc])
    Runner.run_sync(planner, INPUTS[key], max_turns=30, run_config=RunConfig(workflow_name=NAME))
