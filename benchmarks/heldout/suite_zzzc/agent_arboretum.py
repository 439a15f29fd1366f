"""Westerleigh Arboretum: the autumn survey update of a compartment's tree records, on the OpenAI Agents
SDK (Chat Completions) with memory tools, a species-expert sub-agent and a structured final report.

Shape: one curator agent, model-driven: memory recall and compartment listing side by side, then survey
readings and register reads in one parallel turn, a species-expert sub-agent (agent as tool, with its own voucher tool) for
trees whose identity is uncertain, a memory write, one register update transaction, then a typed report
(output_type).  ~35-60 steps.
"""

from __future__ import annotations

import asyncio
import json

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.exceptions import AgentsException, UserError
from agents.tracing import set_trace_processors
from openai import APIStatusError, AsyncOpenAI
from pydantic import BaseModel

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from suite_common import messages_of, system_of, text_of

NAME = "westerleigh-tree-records"
ROUTE = "openai_agents"
DOMAIN = "arboretum tree records"
SHAPE = "curator agent: memory recall + listing in parallel -> parallel survey and register reads -> species-expert sub-agent -> memory write -> register update -> typed report"

READING_FROM_LAST_CAMPAIGN = False
LISTING_PREFIX_MATCH = False
MEMORY_KEY_OF_OTHER_COMPARTMENT = False
RECALL_EVERY_COMPARTMENT = False
EXPERT_READS_NEIGHBOUR = False

SPECIES = ["Quercus robur", "Acer campestre", "Fagus sylvatica", "Tilia cordata", "Sorbus torminalis",
           "Carpinus betulus", "Prunus avium", "Taxus baccata", "Juglans regia", "Betula pendula"]


def _trees(compartment: str, n: int, seed: int) -> dict:
    out = {}
    for i in range(n):
        acc = f"{1960 + (seed * 7 + i * 3) % 60}.{seed:02d}{i + 1:02d}"
        girth = 60 + (seed * 37 + i * 53) % 240
        out[acc] = {"compartment": compartment, "species": SPECIES[(seed + i * 3) % len(SPECIES)],
                    "girth_cm": girth, "height_m": round(6 + girth / 18, 1), "uncertain_id": (i + seed) % 5 == 0}
    return out


REGISTER = {}
for comp, n, seed in [("C4", 7, 4), ("C40", 6, 40), ("B2", 9, 12), ("D1", 5, 21), ("A7", 8, 33), ("E3", 6, 8)]:
    REGISTER.update(_trees(comp, n, seed))
LAST_SURVEY = {"C4": "2025-10-09", "C40": "2025-10-10", "B2": "2025-10-02", "D1": "2025-10-21", "A7": "2025-09-30", "E3": "2025-10-15"}
GROWTH = {acc: 1 + (int(acc[-2:]) * 7) % 5 for acc in REGISTER}

INPUTS = [
    {"compartment": "C4", "survey_date": "2026-10-12", "surveyor": "R. Okafor"},
    {"compartment": "B2", "survey_date": "2026-10-05", "surveyor": "H. Lindqvist"},
    {"compartment": "D1", "survey_date": "2026-10-22", "surveyor": "R. Okafor"},
    {"compartment": "A7", "survey_date": "2026-10-01", "surveyor": "M. Sato"},
    {"compartment": "E3", "survey_date": "2026-10-16", "surveyor": "H. Lindqvist"},
]


def _first(comp):
    return sorted(a for a, t in REGISTER.items() if t["compartment"] == comp)


CASES = [
    {"id": "zzzc-arbor-campaign", "input": 1, "switch": "READING_FROM_LAST_CAMPAIGN", "fault_kind": "stale_data",
     "root": {"name": "survey_reading", "occurrence": 4, "kind": "tool"},
     "failure": {"name": "update_register", "occurrence": 1},
     "description": f"The survey reading for {_first('B2')[3]} comes from the 2024 campaign, 3 cm under the girth the register already holds from 2025."},
    {"id": "zzzc-arbor-listing", "input": 0, "switch": "LISTING_PREFIX_MATCH", "fault_kind": "wrong_retrieval",
     "root": {"name": "list_compartment", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "update_register", "occurrence": 1},
     "description": "The compartment listing for C4 matches by prefix and returns the trees of C40, which the register will not update as C4 trees."},
    {"id": "zzzc-arbor-memory", "input": 3, "switch": "MEMORY_KEY_OF_OTHER_COMPARTMENT", "fault_kind": "bad_memory_write",
     "root": {"name": "remember", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "update_register", "occurrence": 1},
     "description": "The memory write for A7's survey lands under compartment C4's key, so the survey date recalled for A7 is the 2025-09-30 one already in the register."},
    {"id": "zzzc-arbor-recall", "input": 2, "switch": "RECALL_EVERY_COMPARTMENT", "fault_kind": "context_pollution",
     "root": {"name": "recall", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "generation fake-model", "occurrence": 8},
     "description": "The memory recall for D1 returns the notes of every compartment since 2019, and the conversation grows past what the model API accepts."},
    {"id": "zzzc-arbor-expert", "input": 4, "switch": "EXPERT_READS_NEIGHBOUR", "fault_kind": "subagent_wrong_entity",
     "root": {"name": "species_expert", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "update_register", "occurrence": 1},
     "description": "The species expert sub-agent reads the voucher of the neighbouring accession and confirms that tree's species for the one it was asked about."},
]
CONTEXT_LIMIT_CHARS = 36000


# ---------------------------------------------------------------- the fake model's behaviour
def _results(msgs):
    out = {}
    for m in msgs:
        if m.get("role") == "tool":
            text = text_of(m)
            try:
                r = json.loads(text)
            except ValueError:
                r = {"result": "text", "text": text}
            out.setdefault(r.get("result", "expert"), []).append(r)
    return out


def policy(request):
    msgs = messages_of(request)
    size = sum(len(text_of(m)) + len(json.dumps(m.get("tool_calls", ""))) for m in msgs)
    if size > CONTEXT_LIMIT_CHARS:
        return Reply(status=400, error=f"This model's maximum context length is {CONTEXT_LIMIT_CHARS // 3} tokens; the messages come to about {size // 3} tokens.")
    system = system_of(request)
    r = _results(msgs)
    first_user = next(text_of(m) for m in msgs if m.get("role") == "user")
    if system.startswith("You confirm tree species"):
        ask = json.loads(first_user)
        if "voucher" not in r:
            acc = ask["accession"]
            if EXPERT_READS_NEIGHBOUR:
                peers = sorted(a for a, t in REGISTER.items() if t["compartment"] == REGISTER[acc]["compartment"])
                acc = peers[(peers.index(acc) + 1) % len(peers)]
            return Reply(tool_calls=(tool_call("herbarium_voucher", {"accession": acc}),))
        v = r["voucher"][0]
        return json.dumps({"accession": ask["accession"], "species": v["species"], "voucher": v["voucher"]})
    if not system.startswith("You keep the arboretum's tree register"):
        return "I keep tree records."
    job = json.loads(first_user.split("Survey:", 1)[1])
    comp = job["compartment"]
    if "listing" not in r:
        return Reply(tool_calls=(tool_call("recall", {"compartment": comp}), tool_call("list_compartment", {"compartment": comp})))
    trees = r["listing"][0]["accessions"]
    if "reading" not in r:
        return Reply(tool_calls=tuple(tool_call("survey_reading", {"accession": a, "campaign": "2026-autumn"}) for a in trees)
                     + tuple(tool_call("register_entry", {"accession": a}) for a in trees))
    entries = {e["accession"]: e for e in r["entry"]}
    unsure = [a for a in trees if entries[a]["uncertain_id"]]
    answers = r.get("expert", [])
    if len(answers) < len(unsure):
        a = unsure[len(answers)]
        return Reply(tool_calls=(tool_call("species_expert", {"input": json.dumps({"accession": a})}),))
    if "remembered" not in r:
        return Reply(tool_calls=(tool_call("remember", {"compartment": comp, "survey_date": job["survey_date"], "surveyor": job["surveyor"]}),))
    if "recalled_survey" not in r:
        return Reply(tool_calls=(tool_call("recall_survey", {"compartment": comp}),))
    survey = r["recalled_survey"][0]
    readings = {x["accession"]: x for x in r["reading"]}
    species = {x["accession"]: x["species"] for x in answers}
    if "updated" not in r:
        return Reply(tool_calls=(tool_call("update_register", {
            "compartment": comp, "survey_date": survey["survey_date"],
            "updates": [{"accession": a, "girth_cm": readings[a]["girth_cm"], "height_m": readings[a]["height_m"],
                         "species": species.get(a, entries[a]["species"])} for a in trees]}),))
    champion = max(trees, key=lambda a: readings[a]["girth_cm"])
    return json.dumps({"compartment": comp, "trees_updated": r["updated"][0]["trees"], "champion": champion,
                       "champion_girth_cm": readings[champion]["girth_cm"]})


# ---------------------------------------------------------------- tools
MEMORY: dict = {}


@function_tool
def recall(compartment: str) -> str:
    """Notes from earlier survey sessions of a compartment."""
    notes = [{"compartment": compartment, "year": y, "note": f"survey of {compartment} done, no felling"} for y in (2023, 2024, 2025)]
    if RECALL_EVERY_COMPARTMENT:
        notes = [{"compartment": c, "year": y, "note": f"survey of {c} done; girths rechecked on {len(REGISTER)} trees; "
                  + "windthrow inspection of the ride edges, bracket fungi noted on old beech, deer guards renewed " * 3}
                 for c in sorted(LAST_SURVEY) for y in range(2019, 2026)] * 2
    return json.dumps({"result": "recall", "notes": notes})


@function_tool
def list_compartment(compartment: str) -> str:
    """Accession numbers of the trees in a compartment."""
    match = (lambda c: c.startswith(compartment) and c != compartment) if LISTING_PREFIX_MATCH else (lambda c: c == compartment)
    return json.dumps({"result": "listing", "accessions": sorted(a for a, t in REGISTER.items() if match(t["compartment"]))})


@function_tool
def survey_reading(accession: str, campaign: str) -> str:
    """The field team's girth and height reading of a tree for a survey campaign."""
    t = REGISTER[accession]
    g = t["girth_cm"] + GROWTH[accession]
    if READING_FROM_LAST_CAMPAIGN and accession == _first("B2")[3]:
        g = t["girth_cm"] - 3
    return json.dumps({"result": "reading", "accession": accession, "girth_cm": g, "height_m": round(6 + g / 18, 1),
                       "condition": "good" if g % 3 else "fair"})


@function_tool
def register_entry(accession: str) -> str:
    """The register's current entry for a tree."""
    t = REGISTER[accession]
    return json.dumps({"result": "entry", "accession": accession, **t, "last_survey": LAST_SURVEY[t["compartment"]]})


@function_tool
def herbarium_voucher(accession: str) -> str:
    """The herbarium voucher that fixes a tree's species."""
    return json.dumps({"result": "voucher", "accession": accession, "species": REGISTER[accession]["species"],
                       "voucher": f"WH-{accession.replace('.', '')}"})


@function_tool
def remember(compartment: str, survey_date: str, surveyor: str) -> str:
    """Keep this survey's details in the curator's memory."""
    key = "C4" if MEMORY_KEY_OF_OTHER_COMPARTMENT else compartment
    MEMORY[key] = {"survey_date": survey_date, "surveyor": surveyor}
    return json.dumps({"result": "remembered", "key": f"survey:{key}"})


@function_tool
def recall_survey(compartment: str) -> str:
    """The survey details kept in memory for a compartment."""
    got = MEMORY.get(compartment) or {"survey_date": LAST_SURVEY[compartment], "surveyor": "unknown"}
    return json.dumps({"result": "recalled_survey", "compartment": compartment, **got})


class TreeUpdate(BaseModel):
    accession: str
    girth_cm: int
    height_m: float
    species: str


@function_tool(failure_error_function=None)
def update_register(compartment: str, survey_date: str, updates: list[TreeUpdate]) -> str:
    """Write the trees' new survey figures to the register, in one transaction."""
    for u in updates:
        t = REGISTER[u.accession]
        if t["compartment"] != compartment:
            raise ValueError(f"register: {u.accession} stands in {t['compartment']}, not {compartment}")
        if survey_date <= LAST_SURVEY[compartment]:
            raise ValueError(f"register: survey of {survey_date} is not newer than the entry of {LAST_SURVEY[compartment]} for {u.accession}")
        if u.girth_cm < t["girth_cm"]:
            raise ValueError(f"register: {u.accession} girth {u.girth_cm} cm is below the {t['girth_cm']} cm already recorded")
        if u.species != t["species"]:
            raise ValueError(f"register: {u.accession} is vouchered as {t['species']}, the update says {u.species}")
    return json.dumps({"result": "updated", "compartment": compartment, "trees": len(updates)})


class CompartmentReport(BaseModel):
    compartment: str
    trees_updated: int
    champion: str
    champion_girth_cm: int


def build(model):
    expert = Agent(name="species_expert", instructions="You confirm tree species from herbarium vouchers.", model=model,
                   tools=[herbarium_voucher])
    return Agent(name="curator", instructions="You keep the arboretum's tree register up to date after each survey.",
                 model=model, output_type=CompartmentReport, model_settings=ModelSettings(parallel_tool_calls=True),
                 tools=[recall, list_compartment, survey_reading, register_entry,
                        expert.as_tool(tool_name="species_expert", tool_description="Confirm one tree's species."),
                        remember, recall_survey, update_register])


async def _run(server, text):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        await Runner.run(build(OpenAIChatCompletionsModel(model=server.model, openai_client=client)), text,
                         run_config=RunConfig(workflow_name=NAME), max_turns=20)
    finally:
        await client.close()


def run_once(server, inp: dict, path: str) -> None:
    MEMORY.clear()
    processor = TrajdebugProcessor(path=path, name=NAME, task=f"record the {inp['survey_date']} survey of compartment {inp['compartment']}")
    set_tracing_disabled(False)
    set_trace_processors([processor])
    try:
        asyncio.run(_run(server, f"Update the register. Survey: {json.dumps(inp)}"))
    except (UserError, APIStatusError, AgentsException):
        pass
    finally:
        set_trace_processors([])
