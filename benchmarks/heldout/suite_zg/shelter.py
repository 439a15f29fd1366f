"""Animal shelter adoptions: the OpenAI Agents SDK with a triage hand-off to species teams and a home-visit sub-agent as a tool."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .kit import active

AGENT = "shelter-adoptions"
ROUTE = "openai_agents"
DOMAIN = "animal shelter adoptions"
SHAPE = "triage agent: application -> hand-off to dog/cat team -> search -> animal record -> home-visit sub-agent (as tool) -> fee -> file adoption"
EXT = "jsonl"

ANIMALS = {
    "A-2231": {"species": "dog", "name": "Biscuit", "breed": "beagle mix", "weight_kg": 11.0, "age_years": 4},
    "A-2236": {"species": "dog", "name": "Juno", "breed": "collie", "weight_kg": 19.5, "age_years": 2},
    "A-2238": {"species": "dog", "name": "Moss", "breed": "terrier", "weight_kg": 7.5, "age_years": 9},
    "A-2241": {"species": "dog", "name": "Tank", "breed": "shepherd mix", "weight_kg": 33.0, "age_years": 3},
    "A-2244": {"species": "dog", "name": "Pepper", "breed": "lab mix", "weight_kg": 28.0, "age_years": 1},
    "A-3107": {"species": "cat", "name": "Olive", "breed": "tabby", "weight_kg": 4.1, "age_years": 3},
    "A-3112": {"species": "cat", "name": "Sable", "breed": "bombay", "weight_kg": 3.6, "age_years": 6},
}
APPLICATIONS = {
    "AP-610": {"application_id": "AP-610", "applicant_id": "P-451", "surname": "Okafor", "species": "dog", "animal_id": "A-2244"},
    "AP-633": {"application_id": "AP-633", "applicant_id": "P-502", "surname": "Lindqvist", "species": "dog", "animal_id": "A-2241"},
    "AP-580": {"application_id": "AP-580", "applicant_id": "P-377", "surname": "Haddad", "species": "cat", "animal_id": "A-3112"},
    "AP-588": {"application_id": "AP-588", "applicant_id": "P-390", "surname": "Moreau", "species": "dog", "animal_id": "A-2231"},
    "AP-592": {"application_id": "AP-592", "applicant_id": "P-402", "surname": "Tanaka", "species": "cat", "animal_id": "A-3107"},
    "AP-601": {"application_id": "AP-601", "applicant_id": "P-433", "surname": "Reyes", "species": "dog", "animal_id": "A-2236"},
}
VISITS = [
    {"report_id": "HV-77", "applicant_id": "P-415", "surname": "Okafor", "result": "fenced yard, approved"},
    {"report_id": "HV-81", "applicant_id": "P-451", "surname": "Okafor", "result": "flat, approved for dogs under 30 kg"},
    {"report_id": "HV-84", "applicant_id": "P-502", "surname": "Lindqvist", "result": "house with yard, approved"},
    {"report_id": "HV-60", "applicant_id": "P-377", "surname": "Haddad", "result": "approved"},
    {"report_id": "HV-62", "applicant_id": "P-390", "surname": "Moreau", "result": "approved"},
    {"report_id": "HV-65", "applicant_id": "P-402", "surname": "Tanaka", "result": "approved"},
    {"report_id": "HV-70", "applicant_id": "P-433", "surname": "Reyes", "result": "approved"},
]
INPUTS = {k: {"application_id": k} for k in APPLICATIONS}
INPUTS["a"], INPUTS["b"] = INPUTS["AP-610"], INPUTS["AP-633"]
REFS = ["AP-580", "AP-588", "AP-592", "AP-601"]


def _fee(weight_kg: float, age_years: int, species: str) -> float:
    if species == "cat":
        return 60.0
    if age_years >= 8:
        return 50.0
    return 175.0 if weight_kg >= 25 else 120.0 if weight_kg >= 10 else 95.0


def _results(msgs: list) -> dict:
    got: dict = {}
    for m in msgs:
        if m["role"] != "tool" or not m["content"].startswith("{"):
            continue
        data = json.loads(m["content"])
        for key, marker in (("application", "applicant_id"), ("search", "results"), ("record", "breed"),
                            ("visit", "visit"), ("fee", "fee"), ("filed", "status")):
            if marker in data:
                got[key] = data
                break
    return got


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    got = _results(msgs)
    if system.startswith("HOMEVISIT"):
        ask = json.loads(msgs[1]["content"])
        if "visit" not in got:
            return Reply(tool_calls=(tool_call("find_home_visit", {"surname": ask["surname"], "applicant_id": ask["applicant_id"]}),))
        return json.dumps({"visit": got["visit"]["visit"]})
    if system.startswith("TRIAGE"):
        if "application" not in got:
            return Reply(tool_calls=(tool_call("get_application", {"application_id": msgs[-1]["content"].split()[-1]}),))
        team = "cat_team" if active("sh-1") or got["application"]["species"] == "cat" else "dog_team"
        return Reply(tool_calls=(tool_call(f"transfer_to_{team}", {}),))
    app = got["application"]
    species = "cat" if system.startswith("CATS") else "dog"
    if "search" not in got:
        return Reply(tool_calls=(tool_call("search_animals", {"species": species}),))
    if "record" not in got:
        ids = [r["animal_id"] for r in got["search"]["results"]]
        pick = app["animal_id"] if app["animal_id"] in ids else ids[0]
        return Reply(tool_calls=(tool_call("get_animal_record", {"animal_id": pick}),))
    rec = got["record"]
    if "visit" not in got and not active("sh-4"):
        return Reply(tool_calls=(tool_call("home_visit", {"input": json.dumps(
            {"applicant_id": app["applicant_id"], "surname": app["surname"]})}),))
    if "fee" not in got:
        return Reply(tool_calls=(tool_call("compute_fee", {"animal_id": rec["animal_id"], "species": rec["species"],
                                                           "weight_kg": rec.get("weight_kg", 0.0), "age_years": rec["age_years"]}),))
    if "filed" not in got:
        visit = got.get("visit", {}).get("visit", {})
        return Reply(tool_calls=(tool_call("file_adoption", {
            "application_id": app["application_id"], "animal_id": rec["animal_id"], "fee": got["fee"]["fee"],
            "home_report_id": visit.get("report_id", "")}),))
    return f"Adoption {app['application_id']} filed."


def record(server, inp: dict, out: Path) -> None:
    @function_tool
    def get_application(application_id: str) -> str:
        """Read an adoption application."""
        return json.dumps(APPLICATIONS[application_id])

    @function_tool
    def search_animals(species: str) -> str:
        """Animals available for adoption, by species."""
        found = [{"animal_id": k, "name": v["name"], "breed": v["breed"]} for k, v in ANIMALS.items() if v["species"] == species]
        if active("sh-5"):
            found = found[:3]
        return json.dumps({"species": species, "results": found})

    @function_tool
    def get_animal_record(animal_id: str) -> str:
        """The shelter's record of one animal."""
        rec = {"animal_id": animal_id, **ANIMALS[animal_id]}
        if active("sh-3"):
            rec["weight"] = f"{round(rec.pop('weight_kg') * 2.2046)} lb"
        return json.dumps(rec)

    @function_tool
    def find_home_visit(surname: str, applicant_id: str) -> str:
        """Home-visit report of an applicant."""
        hits = [v for v in VISITS if v["surname"] == surname]
        if not active("sh-2"):
            hits = [v for v in hits if v["applicant_id"] == applicant_id]
        return json.dumps({"visit": hits[0]})

    @function_tool
    def compute_fee(animal_id: str, species: str, weight_kg: float, age_years: int) -> str:
        """Adoption fee for an animal."""
        return json.dumps({"animal_id": animal_id, "fee": _fee(weight_kg, age_years, species)})

    @function_tool(failure_error_function=None)
    def file_adoption(application_id: str, animal_id: str, fee: float, home_report_id: str) -> str:
        """File the adoption with the shelter's records system."""
        app = APPLICATIONS[application_id]
        if animal_id != app["animal_id"]:
            raise RuntimeError(f"HTTP 422 from records: application {application_id} is for {app['animal_id']}, "
                               f"filing names {animal_id}")
        visit = next((v for v in VISITS if v["report_id"] == home_report_id), None)
        if visit is None:
            raise RuntimeError(f"HTTP 422 from records: application {application_id} has no home visit report")
        if visit["applicant_id"] != app["applicant_id"]:
            raise RuntimeError(f"HTTP 422 from records: home visit {home_report_id} belongs to {visit['applicant_id']}, "
                               f"not applicant {app['applicant_id']}")
        a = ANIMALS[animal_id]
        due = _fee(a["weight_kg"], a["age_years"], a["species"])
        if fee != due:
            raise RuntimeError(f"HTTP 422 from records: fee {fee:.2f} does not match the tier for {animal_id} ({due:.2f})")
        return json.dumps({"application_id": application_id, "status": "filed"})

    async def main() -> None:
        client = AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0)
        visit_agent = Agent(name="home_visit_desk", instructions="HOMEVISIT: fetch the applicant's home-visit report",
                            model=OpenAIChatCompletionsModel(model="shelter-homevisit", openai_client=client),
                            tools=[find_home_visit])
        team_tools = [search_animals, get_animal_record,
                      visit_agent.as_tool(tool_name="home_visit", tool_description="Home-visit report of an applicant"),
                      compute_fee, file_adoption]
        dog_team = Agent(name="dog_team", instructions="DOGS: place dogs with approved applicants",
                         model=OpenAIChatCompletionsModel(model="shelter-team", openai_client=client), tools=team_tools)
        cat_team = Agent(name="cat_team", instructions="CATS: place cats with approved applicants",
                         model=OpenAIChatCompletionsModel(model="shelter-team", openai_client=client), tools=team_tools)
        triage = Agent(name="triage", instructions="TRIAGE: read the application and hand it to the right team",
                       model=OpenAIChatCompletionsModel(model="shelter-triage", openai_client=client),
                       tools=[get_application], handoffs=[dog_team, cat_team])
        try:
            await Runner.run(triage, f"Process application {inp['application_id']}", max_turns=20,
                             run_config=RunConfig(workflow_name=AGENT))
        finally:
            await client.close()

    set_trace_processors([TrajdebugProcessor(path=str(out), name=AGENT, task=f"adoption {inp['application_id']}")])
    try:
        asyncio.run(main())
    finally:
        set_trace_processors([])


CASES_SPEC = [
    ("sh-1", "wrong_routing", "a", "generation shelter-triage", "transfer_to_cat_team", "file_adoption",
     "The triage model hands a dog application to the cat team, which can only file a cat for it."),
    ("sh-2", "subagent_wrong_entity", "a", "find_home_visit", "HV-77", "file_adoption",
     "The home-visit sub-agent's lookup matches on surname only and reports another Okafor's visit."),
    ("sh-3", "format_drift", "b", "get_animal_record", " lb", "file_adoption",
     "The animal record answers weight as a pounds string instead of weight_kg, so the fee is tiered on no weight."),
    ("sh-4", "plan_error", "b", "generation shelter-team", "compute_fee", "file_adoption",
     "The dog team's model goes from the animal record straight to the fee and never asks for the home visit."),
    ("sh-5", "truncated_result", "a", "search_animals", "A-2238", "file_adoption",
     "The animal search answers only its first three dogs, so the applicant's chosen dog is missing and another is picked."),
]
