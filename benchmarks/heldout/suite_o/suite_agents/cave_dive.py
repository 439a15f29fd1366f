"""Cave-diving plan filing (OpenAI Agents SDK, recorded by TrajdebugProcessor).

A dive-desk triage agent hands off to a technical or a recreational planner.  The technical planner
calls the survey and the divers' certifications in parallel, asks a site-research sub-agent (as_tool)
for the siphon status, asks a gas-planning sub-agent (as_tool, its own gas-table tool), then files the
plan with the dive authority, whose refusal ends the run.
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.heldout.suite_o import kit

from trajdebug.testing import Reply, tool_call


NAME = "cave-dive-desk"
ROUTE = "openai_agents"
DOMAIN = "cave-diving expedition plans"
SHAPE = "Agents SDK: triage -> hand-off to one of two planners; parallel tool calls; two as_tool sub-agents (one with its own tool); filing tool that raises"

CAVES = {
    "Gouffre de Pierre-Saint": {
        "survey": "Entrance pool 6.0 m | Sump 1: 38.4 m, 210 m | Sump 2: 61.7 m, 480 m",
        "objective_m": 61.7,
        "penetration_m": 480,
        "closed": [],
    },
    "Keld Head": {
        "survey": "Entrance 4.5 m | Sump 1: 23.8 m, 390 m | Sump 2: 29.6 m, 760 m",
        "objective_m": 29.6,
        "penetration_m": 760,
        "closed": [],
    },
    "Ressel East": {
        "survey": "Entrance 3.0 m | Sump 1: 27.1 m, 180 m | Sump 2: 48.9 m, 520 m",
        "objective_m": 48.9,
        "penetration_m": 520,
        "closed": ["2026-05-03"],
    },
    "Ressel": {
        "survey": "Entrance 3.0 m | Sump 1: 31.5 m, 260 m | Sump 2: 52.2 m, 610 m",
        "objective_m": 52.2,
        "penetration_m": 610,
        "closed": [],
    },
    "Wookey Deep": {
        "survey": "Entrance 5.5 m | Sump 1: 44.0 m, 300 m | Sump 2: 58.3 m, 650 m",
        "objective_m": 58.3,
        "penetration_m": 650,
        "closed": [],
    },
    "Porth Tarn": {
        "survey": "Entrance 2.0 m | Sump 1: 12.6 m, 140 m | Sump 2: 18.9 m, 330 m",
        "objective_m": 18.9,
        "penetration_m": 330,
        "closed": [],
    },
}

DIVERS = {
    "A. Moreau": "hypoxic",
    "R. Lindqvist": "normoxic",
    "T. Okafor": "hypoxic",
    "J. Brennan": "hypoxic",
    "S. Varga": "normoxic",
    "L. Castell": "hypoxic",
    "M. Iwata": "hypoxic",
}

INPUTS = {
    "pierre": {
        "cave": "Gouffre de Pierre-Saint",
        "date": "2026-05-02",
        "planned_depth_m": 62,
        "bottom_min": 35,
        "team": ["A. Moreau", "T. Okafor"],
        "return": "out-and-back",
    },
    "keld": {
        "cave": "Keld Head",
        "date": "2026-05-09",
        "planned_depth_m": 30,
        "bottom_min": 50,
        "team": ["R. Lindqvist", "S. Varga"],
        "return": "out-and-back",
    },
    "ressel_e": {
        "cave": "Ressel East",
        "date": "2026-05-03",
        "planned_depth_m": 49,
        "bottom_min": 40,
        "team": ["J. Brennan", "L. Castell"],
        "return": "out-and-back",
    },
    "wookey": {
        "cave": "Wookey Deep",
        "date": "2026-05-16",
        "planned_depth_m": 58,
        "bottom_min": 30,
        "team": ["M. Iwata", "R. Lindqvist"],
        "return": "out-and-back",
    },
    "porth": {
        "cave": "Porth Tarn",
        "date": "2026-05-17",
        "planned_depth_m": 19,
        "bottom_min": 45,
        "team": ["S. Varga", "J. Brennan"],
        "return": "out-and-back",
    },
    "ressel": {
        "cave": "Ressel",
        "date": "2026-05-23",
        "planned_depth_m": 52,
        "bottom_min": 40,
        "team": ["T. Okafor", "A. Moreau"],
        "return": "out-and-back",
    },
}

FAULTS = [
    {
        "id": "cave.site_entity",
        "kind": "subagent_wrong_entity",
        "input": "ressel_e",
        "root": "generation fake-model",
        "marker": '"Ressel"',
        "note": "the site-research sub-agent checks the siphon of Ressel instead of Ressel East",
    },
    {
        "id": "cave.triage_route",
        "kind": "wrong_routing",
        "input": "pierre",
        "root": "generation fake-model",
        "marker": "transfer_to_recreational_planner",
        "note": "triage hands a 62 m dive to the recreational planner",
    },
    {
        "id": "cave.survey_parse",
        "kind": "lossy_parsing",
        "input": "wookey",
        "root": "get_cave_survey",
        "marker": "44.0",
        "note": "the survey parser keeps only the first sump",
    },
    {
        "id": "cave.return_plan",
        "kind": "plan_error",
        "input": "ressel",
        "root": "generation fake-model",
        "marker": "one-way",
        "note": "the planner asks the gas planner for a one-way trip on an out-and-back dive",
    },
    {
        "id": "cave.cert_timeout",
        "kind": "swallowed_error",
        "input": "wookey",
        "root": "get_diver_cert",
        "marker": "team-sheet",
        "note": "the certification lookup times out for one diver and falls back on the team sheet without saying so",
    },
]

_CALL: dict[str, Any] = {}


def task(inp: dict) -> str:
    return f"File a dive plan for {inp['cave']} on {inp['date']} to {inp['planned_depth_m']} m for {', '.join(inp['team'])}"


def _parse_survey(text: str) -> dict:
    parts = [p.strip() for p in text.split("|")]
    sumps = [p for p in parts if p.startswith("Sump")]
    if kit.active("cave.survey_parse"):
        sumps = sumps[:1]
    last = sumps[-1].split(":")[1].split(",")
    return {
        "sumps": len(sumps),
        "max_depth_m": float(last[0].strip().split()[0]),
        "penetration_m": int(last[1].strip().split()[0]),
    }


def _mix(depth: float, trimix: str) -> str:
    if depth > 50:
        return "TX15/55" if trimix == "hypoxic" else "TX18/45"
    return "EAN32" if depth <= 33 else "TX21/35"


def build(base_url: str) -> Any:
    from agents import Agent, OpenAIChatCompletionsModel, function_tool
    from openai import AsyncOpenAI

    model = OpenAIChatCompletionsModel(
        model="fake-model", openai_client=AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
    )

    @function_tool
    def get_cave_survey(cave: str) -> str:
        """The registered survey of a cave, parsed."""
        return json.dumps({"cave": cave, **_parse_survey(CAVES[cave]["survey"])})

    @function_tool
    def get_diver_cert(diver: str) -> str:
        """A diver's trimix certification from the training registry."""
        if diver == "R. Lindqvist" and kit.active("cave.cert_timeout"):
            try:
                raise TimeoutError("registry did not answer in 5 s")
            except TimeoutError:
                return json.dumps(
                    {"diver": diver, "cave": "full cave", "trimix": "hypoxic", "source": "team-sheet"}
                )
        return json.dumps(
            {"diver": diver, "cave": "full cave", "trimix": DIVERS[diver], "source": "registry"}
        )

    @function_tool
    def get_siphon_status(cave: str) -> str:
        """Flow and gate status of a cave's siphon on a date."""
        date = _CALL["inp"]["date"]
        shut = date in CAVES[cave]["closed"]
        return json.dumps(
            {
                "cave": cave,
                "date": date,
                "flow": "flood" if shut else "low",
                "gate": "shut" if shut else "open",
            }
        )

    @function_tool
    def get_site_briefing(cave: str) -> str:
        """The site briefing for visiting teams: access, parking, line state."""
        return json.dumps(
            {
                "cave": cave,
                "access": "landowner key at the farm",
                "line": "permanent line to the first sump",
                "notes": "sign the book at the entrance",
            }
        )

    @function_tool
    def gas_table(depth_m: float, bottom_min: int, penetration_m: int, trip: str, trimix: str) -> str:
        """Back-gas and stage volumes for a dive, within the team's trimix certification."""
        mix = _mix(depth_m, trimix)
        factor = 1 if trip == "one-way" else 2
        litres = int((depth_m / 10 + 1) * 20 * (bottom_min + penetration_m * factor / 12) * 1.5)
        return json.dumps({"mix": mix, "depth_m": depth_m, "litres": litres, "trip": trip})

    @function_tool(failure_error_function=None)
    def file_dive_plan(cave: str, date: str, depth_m: float, mix: str, team: list[str], litres: int) -> str:
        """File the plan with the dive authority."""
        c = CAVES[cave]
        if date in c["closed"]:
            raise RuntimeError(f"dive authority: 423 {cave} closed on {date} (siphon gate shut, flood flow)")
        fo2 = {"EAN32": 0.32, "TX21/35": 0.21, "TX15/55": 0.15, "TX18/45": 0.18}[mix]
        ppo2 = round(fo2 * (c["objective_m"] / 10 + 1), 2)
        if ppo2 > 1.4:
            raise RuntimeError(
                f"dive authority: 422 {mix} gives ppO2 {ppo2} at the registered objective; plan refused"
            )
        for d in team:
            if mix == "TX15/55" and DIVERS[d] != "hypoxic":
                raise RuntimeError(f"dive authority: 403 {d} holds no hypoxic trimix certification")
        need = int(
            (c["objective_m"] / 10 + 1)
            * 20
            * (_CALL["inp"]["bottom_min"] + c["penetration_m"] * 2 / 12)
            * 1.5
        )
        if litres < need:
            raise RuntimeError(
                f"dive authority: 422 gas plan of {litres} l below the thirds reserve for the registered route"
            )
        return json.dumps({"filed": True, "ref": f"DA-{date.replace('-', '')}-{len(team)}"})

    researcher = Agent(
        name="site_researcher",
        instructions="You check siphon and flow status for a cave.",
        model=model,
        tools=[get_siphon_status],
    )
    gas = Agent(
        name="gas_planner",
        instructions="You plan gas for a cave dive with the gas table.",
        model=model,
        tools=[gas_table],
    )
    sub = [
        researcher.as_tool("site_research", "Siphon status of a cave."),
        gas.as_tool("plan_gas", "Gas plan for a dive."),
    ]
    technical = Agent(
        name="technical_planner",
        instructions="You plan technical cave dives and file them.",
        model=model,
        tools=[get_cave_survey, get_diver_cert, *sub, file_dive_plan],
    )
    recreational = Agent(
        name="recreational_planner",
        instructions="You plan recreational cavern dives and file them.",
        model=model,
        tools=[get_cave_survey, get_diver_cert, get_site_briefing, file_dive_plan],
    )
    triage = Agent(
        name="dive_desk",
        instructions="You are the dive desk. Send each request to the right planner.",
        model=model,
        handoffs=[technical, recreational],
    )
    return triage


def policy(request: Any) -> Any:
    c = kit.Convo(request)
    req = _CALL["inp"]
    if c.system.startswith("You are the dive desk"):
        if c.called("transfer_to_technical_planner") or c.called("transfer_to_recreational_planner"):
            return "Handed over."
        tech = req["planned_depth_m"] > 40 and not kit.active("cave.triage_route")
        return Reply(
            tool_calls=(
                tool_call(
                    "transfer_to_technical_planner" if tech else "transfer_to_recreational_planner", {}
                ),
            )
        )
    if c.system.startswith("You check siphon"):
        if not c.called("get_siphon_status"):
            cave = req["cave"]
            if kit.active("cave.site_entity"):
                cave = cave.split()[0]
            return Reply(tool_calls=(tool_call("get_siphon_status", {"cave": cave}),))
        return c.called("get_siphon_status")[-1][1] or "{}"
    if c.system.startswith("You plan gas"):
        if not c.called("gas_table"):
            ask = json.loads(c.user)
            return Reply(tool_calls=(tool_call("gas_table", ask),))
        return c.called("gas_table")[-1][1] or "{}"
    survey_calls = [(a, r) for a, r in c.called("get_cave_survey")]
    if not survey_calls:
        calls = [tool_call("get_cave_survey", {"cave": req["cave"]})] + [
            tool_call("get_diver_cert", {"diver": d}) for d in req["team"]
        ]
        return Reply(tool_calls=tuple(calls))
    survey = c.result("get_cave_survey")
    if c.system.startswith("You plan technical"):
        if not c.called("site_research"):
            return Reply(
                tool_calls=(
                    tool_call(
                        "site_research", {"input": f"Siphon status for {req['cave']} on {req['date']}"}
                    ),
                )
            )
        status = c.result("site_research")
        if isinstance(status, dict) and status.get("gate") == "shut":
            return "Siphon gate shut; no plan filed."
        if not c.called("plan_gas"):
            trip = "one-way" if kit.active("cave.return_plan") else req["return"]
            certs = [json.loads(r)["trimix"] for _, r in c.called("get_diver_cert") if r]
            level = "hypoxic" if all(x == "hypoxic" for x in certs) else "normoxic"
            ask = {
                "depth_m": survey["max_depth_m"],
                "bottom_min": req["bottom_min"],
                "penetration_m": survey["penetration_m"],
                "trip": trip,
                "trimix": level,
            }
            return Reply(
                text=f"Gas for a {trip} trip to {survey['max_depth_m']} m.",
                tool_calls=(tool_call("plan_gas", {"input": json.dumps(ask)}),),
            )
        g = c.result("plan_gas")
        mix, litres = g["mix"], g["litres"]
    else:
        if not c.called("get_site_briefing"):
            return Reply(tool_calls=(tool_call("get_site_briefing", {"cave": req["cave"]}),))
        mix = "EAN32"
        litres = int(
            (survey["max_depth_m"] / 10 + 1)
            * 20
            * (req["bottom_min"] + survey["penetration_m"] * 2 / 12)
            * 1.5
        )
    if not c.called("file_dive_plan"):
        return Reply(
            tool_calls=(
                tool_call(
                    "file_dive_plan",
                    {
                        "cave": req["cave"],
                        "date": req["date"],
                        "depth_m": survey["max_depth_m"],
                        "mix": mix,
                        "team": req["team"],
                        "litres": litres,
                    },
                ),
            )
        )
    return f"Plan filed: {c.result('file_dive_plan')}"


def execute(base_url: str, inp: dict) -> None:
    from agents import RunConfig, Runner

    _CALL.clear()
    _CALL["inp"] = inp
    Runner.run_sync(
        build(base_url),
        json.dumps({k: inp[k] for k in ("cave", "date", "planned_depth_m", "team")}),
        run_config=RunConfig(workflow_name=NAME),
    )
