"""Trapeze academy: showcase act sign-off through the OpenAI Agents SDK, with two agents used as tools.

Shape: head-coach agent -> roster search tool -> rigging engineer (an agent as a tool: parallel anchor and
load tools, then a written rig report) -> medical officer (an agent as a tool: parallel clearance calls, then a
JSON list) -> rehearsal booking tool -> structured final output (a pydantic schema with the academy's checks).
"""
from __future__ import annotations

import ast
import asyncio
import json
import re

from pydantic import BaseModel, model_validator

from suitecommon import read_prompt

RUN_NAME = "trapeze-showcase-signoff"
ROUTE = "openai_agents"
DOMAIN = "trapeze academy"
SHAPE = "orchestrator agent with two agents-as-tools (each with parallel tool calls), a booking tool, structured output validated by a schema"

ACTIVE = ""

ACTS = [
    {"act": "Swallow Flight", "troupe": "junior", "apparatus": "flying trapeze", "height_m": 5.0, "anchor": "beam S1",
     "performers": [{"name": "Emma Moreau", "kg": 41}, {"name": "Sami Haddad", "kg": 45}]},
    {"act": "Swallow Flight", "troupe": "senior", "apparatus": "flying trapeze", "height_m": 8.5, "anchor": "beam N2",
     "performers": [{"name": "Lea Moreau", "kg": 54}, {"name": "Tariq Haddad", "kg": 78}, {"name": "Jun Park", "kg": 61}]},
    {"act": "Double Comet", "troupe": "senior", "apparatus": "double trapeze", "height_m": 6.5, "anchor": "beam N1",
     "performers": [{"name": "Ines Duarte", "kg": 57}, {"name": "Karl Weiss", "kg": 82}]},
    {"act": "Silver Pendulum", "troupe": "senior", "apparatus": "swinging trapeze", "height_m": 7.0, "anchor": "beam N2",
     "performers": [{"name": "Noor Saleh", "kg": 59}]},
    {"act": "Catcher's Ladder", "troupe": "senior", "apparatus": "flying trapeze", "height_m": 9.0, "anchor": "beam N3",
     "performers": [{"name": "Ola Berg", "kg": 88}, {"name": "Mira Sato", "kg": 52}, {"name": "Luca Bianchi", "kg": 70}, {"name": "Zoe Adler", "kg": 49}]},
    {"act": "Moth Spiral", "troupe": "senior", "apparatus": "static trapeze", "height_m": 5.5, "anchor": "beam S2",
     "performers": [{"name": "Hana Novak", "kg": 55}, {"name": "Eli Fischer", "kg": 63}]},
]
ANCHORS_KG = {"beam N1": 2400, "beam N2": 2000, "beam N3": 2600, "beam S1": 1200, "beam S2": 1500}
CLEARED = {"Lea Moreau", "Tariq Haddad", "Jun Park", "Emma Moreau", "Sami Haddad", "Ines Duarte", "Karl Weiss", "Noor Saleh",
           "Ola Berg", "Mira Sato", "Luca Bianchi", "Zoe Adler", "Hana Novak", "Eli Fischer"}
ROSTER_NOTES = {"Ines Duarte": "cleared", "Ines Duarte-Reyes": "wrist strain, not cleared until 2026-12-20"}

INPUTS = [
    {"act": "Swallow Flight", "troupe": "senior", "showcase": "Winter Showcase, 2026-12-18"},
    {"act": "Double Comet", "troupe": "senior", "showcase": "Winter Showcase, 2026-12-18"},
    {"act": "Silver Pendulum", "troupe": "senior", "showcase": "Winter Showcase, 2026-12-18"},
    {"act": "Catcher's Ladder", "troupe": "senior", "showcase": "Winter Showcase, 2026-12-18"},
    {"act": "Moth Spiral", "troupe": "senior", "showcase": "Winter Showcase, 2026-12-18"},
]
CASES = [
    {"id": "tra_junior_roster", "input": 0, "switch": "first_match", "kind": "wrong_retrieval",
     "root": ("roster_search", 1), "failure": ("book_rehearsal", 1),
     "description": "The roster search returns the junior troupe's Swallow Flight, with its 5 m height and beam S1, for the senior act."},
    {"id": "tra_medical_name", "input": 1, "switch": "similar_name", "kind": "subagent_wrong_entity",
     "root": ("generation fake-model", 6), "failure": ("book_rehearsal", 1),
     "description": "The medical officer checks Ines Duarte-Reyes, a different performer, instead of Ines Duarte, and reports her as not cleared."},
    {"id": "tra_rig_tonnes", "input": 3, "switch": "load_tonnes", "kind": "format_drift",
     "root": ("generation fake-model", 4), "failure": ("turn 5", 1),
     "description": "The rigging engineer's report switches from kilograms to '0.8 t', and the coach copies 0.8 as the rig load in kilograms."},
    {"id": "tra_anchor_sensor", "input": 2, "switch": "anchor_default", "kind": "swallowed_error",
     "root": ("anchor_rating", 1), "failure": ("book_rehearsal", 1),
     "description": "The anchor rating tool catches a load-cell read error and answers the 3,000 kg catalogue rating for beam N2."},
    {"id": "tra_plan_spotters", "input": 4, "switch": "plan_no_net", "kind": "plan_error",
     "root": ("generation fake-model", 8), "failure": ("book_rehearsal", 1),
     "description": "The head coach's rehearsal plan lists spotters and crash mats but leaves out the safety net the rig report requires above 5 m."},
]


class ActPlan(BaseModel):
    act: str
    performers: list[str]
    rig_load_kg: float
    net: bool
    rehearsal: str

    @model_validator(mode="after")
    def academy_rules(self):
        if self.rig_load_kg < 100:
            raise ValueError(f"rig load {self.rig_load_kg} kg is below any loaded trapeze rig")
        if not self.net:
            raise ValueError(f"{self.act}: a safety net is required for every rig above 5 m")
        return self


def roster_search_impl(act: str, troupe: str) -> dict:
    hits = [a for a in ACTS if a["act"] == act and a["troupe"] == troupe]
    if ACTIVE == "first_match":
        hits = [a for a in ACTS if a["act"] == act]
    return dict(hits[0])


def anchor_rating_impl(anchor: str) -> dict:
    try:
        if ACTIVE == "anchor_default":
            raise OSError(f"load cell on {anchor} did not answer")
        rated = ANCHORS_KG[anchor]
    except OSError:
        rated = 3000
    return {"anchor": anchor, "rated_kg": rated}


def rig_load_impl(performers_kg: list[float], height_m: float) -> dict:
    dynamic = round(sum(performers_kg) * (2.5 if height_m > 6 else 2.0) + 120, 1)
    return {"static_kg": sum(performers_kg), "dynamic_kg": dynamic}


def clearance_impl(performer: str) -> dict:
    status = ROSTER_NOTES.get(performer, "cleared" if performer in CLEARED else "not on file")
    return {"performer": performer, "status": status}


def book_rehearsal_impl(act: str, anchor: str, anchor_rated_kg: float, rig_load_kg: float, cleared: list[str], performers: list[str], height_m: float, safety: list[str]) -> dict:
    if height_m > 5 and "net" not in safety:
        raise ValueError(f"rehearsal for {act} refused: {height_m} m rig needs a safety net, plan lists {', '.join(safety)}")
    if set(cleared) != set(performers):
        missing = sorted(set(performers) - set(cleared))
        raise ValueError(f"rehearsal for {act} refused: {', '.join(missing)} not medically cleared")
    limit = ANCHORS_KG[anchor]
    if anchor_rated_kg != limit:
        raise ValueError(f"rehearsal for {act} refused: rig report cites {anchor_rated_kg:,.0f} kg for {anchor}, its certificate says {limit:,} kg")
    if rig_load_kg > limit:
        raise ValueError(f"rehearsal for {act} refused: dynamic load {rig_load_kg} kg above the {limit} kg rating of {anchor}")
    if height_m < 6 and act in ("Swallow Flight", "Catcher's Ladder"):
        raise ValueError(f"rehearsal for {act} refused: flying trapeze catch height {height_m} m below the 6 m catch frame")
    return {"act": act, "slot": "2026-12-15 18:00, big top"}


def _outputs(request) -> dict:
    names, out = {}, {}
    for m in request.body["messages"]:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m["role"] == "tool":
            try:
                value = ast.literal_eval(m["content"])
            except (ValueError, SyntaxError):
                value = m["content"]
            out.setdefault(names.get(m["tool_call_id"], "?"), []).append(value)
    return out


def policy(request):
    from trajdebug.testing import Reply, tool_call

    system, _ = read_prompt(request)
    user = [m for m in request.body["messages"] if m["role"] == "user"][0]["content"]
    got = _outputs(request)
    if system.startswith("You are the head coach"):
        req = json.loads(user)
        if "roster_search" not in got:
            return Reply(tool_calls=(tool_call("roster_search", {"act": req["act"], "troupe": req["troupe"]}),))
        act = got["roster_search"][0]
        if "rigging_engineer" not in got:
            return Reply(tool_calls=(tool_call("rigging_engineer", {"input": json.dumps(
                {"anchor": act["anchor"], "height_m": act["height_m"], "performers_kg": [p["kg"] for p in act["performers"]]})}),))
        report = got["rigging_engineer"][0]
        m = re.search(r"dynamic load ([\d.,]+) (kg|t)", report)
        load = float(m.group(1).replace(",", ""))
        net = "net required" in report
        rated = float(re.search(r"anchor rated ([\d,]+) kg", report).group(1).replace(",", ""))
        if "medical_officer" not in got:
            return Reply(tool_calls=(tool_call("medical_officer", {"input": json.dumps({"performers": [p["name"] for p in act["performers"]]})}),))
        medical = got["medical_officer"][0]
        cleared = (json.loads(medical) if isinstance(medical, str) else medical)["cleared"]
        safety = (["net"] if net else []) + ["spotters", "crash mats"]
        if ACTIVE == "plan_no_net":
            safety = ["spotters", "crash mats"]
        if "book_rehearsal" not in got:
            return Reply(tool_calls=(tool_call("book_rehearsal", {"act": act["act"], "anchor": act["anchor"], "anchor_rated_kg": rated, "rig_load_kg": load,
                                                                   "cleared": cleared, "performers": [p["name"] for p in act["performers"]],
                                                                   "height_m": act["height_m"], "safety": safety}),))
        return json.dumps({"act": act["act"], "performers": cleared, "rig_load_kg": load, "net": net,
                           "rehearsal": got["book_rehearsal"][0]["slot"]})
    if system.startswith("You are the rigging engineer"):
        req = json.loads(user)
        if "anchor_rating" not in got:
            return Reply(tool_calls=(tool_call("anchor_rating", {"anchor": req["anchor"]}),
                                     tool_call("rig_load", {"performers_kg": req["performers_kg"], "height_m": req["height_m"]})))
        rated, load = got["anchor_rating"][0]["rated_kg"], got["rig_load"][0]["dynamic_kg"]
        shown = f"{load:,.1f} kg"
        if ACTIVE == "load_tonnes":
            shown = f"{load / 1000:.1f} t"
        verdict = "within" if load <= rated else "above"
        return (f"Rig report for {req['anchor']}: dynamic load {shown}, anchor rated {rated:,} kg ({verdict} rating); "
                f"{'net required' if req['height_m'] > 5 else 'crash mats only'}.")
    if system.startswith("You are the medical officer"):
        req = json.loads(user)
        if "clearance" not in got:
            names = list(req["performers"])
            if ACTIVE == "similar_name":
                names = [n + "-Reyes" if n == "Ines Duarte" else n for n in names]
            return Reply(tool_calls=tuple(tool_call("clearance", {"performer": n}) for n in names))
        cleared = [c["performer"] for c in got["clearance"] if c["status"] == "cleared"]
        return json.dumps({"cleared": cleared})
    raise ValueError(f"no answer for {system[:40]}")


def build(model):
    from agents import Agent, function_tool

    @function_tool
    def roster_search(act: str, troupe: str) -> dict:
        """The academy's act roster: apparatus, height, anchor and performers."""
        return roster_search_impl(act, troupe)

    @function_tool
    def anchor_rating(anchor: str) -> dict:
        """Rated working load of a ceiling anchor."""
        return anchor_rating_impl(anchor)

    @function_tool
    def rig_load(performers_kg: list[float], height_m: float) -> dict:
        """Static and dynamic load of a rig."""
        return rig_load_impl(performers_kg, height_m)

    @function_tool
    def clearance(performer: str) -> dict:
        """Medical clearance of one performer."""
        return clearance_impl(performer)

    @function_tool(failure_error_function=None)
    def book_rehearsal(act: str, anchor: str, anchor_rated_kg: float, rig_load_kg: float, cleared: list[str], performers: list[str], height_m: float, safety: list[str]) -> dict:
        """Book a rehearsal slot in the big top (the safety office checks the act)."""
        return book_rehearsal_impl(act, anchor, anchor_rated_kg, rig_load_kg, cleared, performers, height_m, safety)

    rigging = Agent(name="rigging_engineer", model=model, tools=[anchor_rating, rig_load],
                    instructions="You are the rigging engineer: rate the anchor, compute the load, write the rig report.")
    medical = Agent(name="medical_officer", model=model, tools=[clearance],
                    instructions="You are the medical officer: check each performer's clearance, answer JSON.")
    return Agent(name="head_coach", model=model, output_type=ActPlan,
                 instructions="You are the head coach signing off a showcase act.",
                 tools=[roster_search,
                        rigging.as_tool(tool_name="rigging_engineer", tool_description="Ask the rigging engineer for a rig report."),
                        medical.as_tool(tool_name="medical_officer", tool_description="Ask the medical officer who is cleared."),
                        book_rehearsal])


def record(server, inp: dict, path: str) -> None:
    from agents import OpenAIChatCompletionsModel, RunConfig, Runner
    from agents.tracing import set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    server.use(policy)
    processor = TrajdebugProcessor(path=path, name=RUN_NAME, task=f"showcase sign-off {inp['act']}")

    async def go():
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        try:
            model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
            await Runner.run(build(model), json.dumps(inp), run_config=RunConfig(workflow_name=RUN_NAME))
        finally:
            await client.close()

    set_trace_processors([processor])
    try:
        asyncio.run(go())
    except Exception:
        pass
    finally:
        set_trace_processors([])
