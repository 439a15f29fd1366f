"""Pet sitting: book a week of home visits with a care sheet (OpenAI Agents SDK + trajdebug processor)."""
from __future__ import annotations

import json

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor

from .common import Case, Reply, last_user, obj, policy, server, tool_call, tool_results
from .kit import active, planted

AGENT, ROUTE, DOMAIN = "petsit-booker", "openai_agents", "pet sitting"
SHAPE = "client -> pets -> care-sheet sub-agent (as tool, meds) -> sitter search -> quote -> book visits"
MODEL = "zt-petsit"

CLIENTS = {
    "C-880": {"address": "3 Wren Close", "pets": [{"name": "Biscuit", "species": "cat", "meds": {"insulin": 4}}], "days": 7},
    "C-912": {"address": "27 Alder Row", "pets": [{"name": "Moss", "species": "cat", "meds": {"thyroxine": 1}},
                                                  {"name": "Pip", "species": "dog", "meds": {}}], "days": 5},
    "C-101": {"address": "9 Birch Lane", "pets": [{"name": "Rolo", "species": "dog", "meds": {}}], "days": 3},
    "C-202": {"address": "14 Elm Road", "pets": [{"name": "Tansy", "species": "cat", "meds": {}}], "days": 4},
    "C-303": {"address": "6 Quay Street", "pets": [{"name": "Fig", "species": "rabbit", "meds": {}}], "days": 6},
    "C-404": {"address": "2 Mill Yard", "pets": [{"name": "Juno", "species": "dog", "meds": {"carprofen": 2}}], "days": 5},
}
REFS = ["C-101", "C-202", "C-303", "C-404"]
SITTERS = [{"id": "S-12", "species": ["dog"]}, {"id": "S-15", "species": ["cat", "dog", "rabbit"]}]
MAIN_SYS = "You book pet sitting visits."
SUB_SYS = "You write care sheets from vet medication records."


@policy(MODEL)
def _model(msgs):
    sys = msgs[0].get("content", "") if msgs else ""
    res = tool_results(msgs)
    if sys.startswith(SUB_SYS):
        pets = json.loads(last_user(msgs))["pets"]
        if not res:
            return Reply(tool_calls=tuple(tool_call("med_schedule", {"pet": p}) for p in pets))
        sheet = []
        for r in map(obj, res):
            meds = dict(r["meds"])
            sheet.append({"pet": r["pet"], "meds": meds, "visits_per_day": 2 if meds else 1})
        return json.dumps({"care_sheet": sheet})
    cid = last_user(msgs).split(":")[-1].strip()
    n = len(res)
    if n == 0:
        return Reply(tool_calls=(tool_call("get_client", {"client_id": cid}),))
    client = obj(res[0])
    key_at = client["address"]
    for note in client.get("notes", []):
        if note.startswith("key:"):
            key_at = note.split(":", 1)[1].strip()
    if n == 1:
        return Reply(tool_calls=(tool_call("care_sheet_writer", {"input": json.dumps({"pets": [p["name"] for p in client["pets"]]})}),))
    sheet = json.loads(res[1])["care_sheet"] if res[1].startswith("{") else obj(res[1])["care_sheet"]
    species = sorted({p["species"] for p in client["pets"]})
    if n == 2:
        return Reply(tool_calls=(tool_call("find_sitter", {"species": species}),))
    sitter = obj(res[2])
    visits = sum(s["visits_per_day"] for s in sheet) * client["days"]
    if n == 3:
        return Reply(tool_calls=(tool_call("quote_visits", {"visits": visits}),))
    quote = obj(res[3])
    if n == 4:
        if active("pet_halluc"):
            sheet = [dict(e, meds={k: 6 for k in e["meds"]}) for e in sheet]
        return Reply(tool_calls=(tool_call("book_visits", {
            "client_id": cid, "sitter_id": sitter["sitter_id"], "key_address": key_at, "care_sheet": json.dumps(sheet),
            "total": quote["total"]}),))
    return "Booked."


def _pets(name):
    return next(p for c in CLIENTS.values() for p in c["pets"] if p["name"] == name)


@function_tool
def get_client(client_id: str) -> str:
    """Fetch the client's profile and notes."""
    c = CLIENTS[client_id]
    notes = [f"key: {c['address']}", "gate sticks in wet weather"]
    if active("pet_ctx"):
        notes.append("key: 14 Elm Road (left with neighbour)")
    return json.dumps({"client_id": client_id, "address": c["address"], "pets": c["pets"], "days": c["days"], "notes": notes})


@function_tool
def med_schedule(pet: str) -> str:
    """Read the pet's medication schedule from the vet portal."""
    try:
        if active("pet_swallow") and _pets(pet)["meds"]:
            raise LookupError(f"vet portal: record for {pet} locked by clinic")
        meds = _pets(pet)["meds"]
    except LookupError:
        meds = {}
    return json.dumps({"pet": pet, "meds": meds})


@function_tool
def find_sitter(species: list[str]) -> str:
    """Find a free sitter certified for all the given species."""
    pool = SITTERS if active("pet_ignore") else [s for s in SITTERS if set(species) <= set(s["species"])]
    return json.dumps({"sitter_id": pool[0]["id"]})


@function_tool
def quote_visits(visits: int) -> str:
    """Price the visits."""
    total = visits * 18.5
    return json.dumps({"visits": visits, "total": f"{total:.2f}".replace(".", ",") if active("pet_format") else total})


@function_tool(failure_error_function=None)
def book_visits(client_id: str, sitter_id: str, key_address: str, care_sheet: str, total: float | str) -> str:
    """Book the visits in the scheduling system."""
    c = CLIENTS[client_id]
    sheet = json.loads(care_sheet)
    if not isinstance(total, (int, float)):
        raise ValueError(f"booking API 400: field 'total' must be a number, got {total!r}")
    if key_address != c["address"]:
        raise ValueError(f"booking API 422: key handover address '{key_address}' is not on file for {client_id}")
    sitter = next(s for s in SITTERS if s["id"] == sitter_id)
    for p in c["pets"]:
        if p["species"] not in sitter["species"]:
            raise ValueError(f"booking API 409: sitter {sitter_id} is not certified for {p['species']}s")
        entry = next(e for e in sheet if e["pet"] == p["name"])
        if entry["meds"] != p["meds"]:
            raise ValueError(f"booking API 422: care sheet medication for {p['name']} {entry['meds']} does not match "
                             f"the vet record {p['meds']}")
    return json.dumps({"booking": f"PS-{client_id}", "sitter": sitter_id})


def _agents():
    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=AsyncOpenAI(base_url=server().base_url, api_key="test", max_retries=0))
    writer = Agent(name="care_sheet_agent", instructions=SUB_SYS, model=model, tools=[med_schedule])
    return Agent(name="booker", instructions=MAIN_SYS, model=model, tools=[
        get_client, writer.as_tool(tool_name="care_sheet_writer", tool_description="Write the care sheet."),
        find_sitter, quote_visits, book_visits])


def record(path, cid: str, fault_id: str | None) -> None:
    proc = TrajdebugProcessor(path=str(path), name=AGENT, task=f"book pet sitting for client {cid}")
    set_trace_processors([proc])
    with planted(fault_id):
        try:
            Runner.run_sync(_agents(), f"Book sitting for client: {cid}", run_config=RunConfig(workflow_name=AGENT))
        except Exception:
            pass


CASES = [
    Case("zt_petsit_1", "pet_halluc", "hallucinated_value", "C-880", "generation zt-petsit", 7, "book_visits", 1,
         "The booker writes an insulin dose of 6 units into the booking's care sheet where the care-sheet writer said 4."),
    Case("zt_petsit_2", "pet_ignore", "tool_ignores_argument", "C-912", "find_sitter", 1, "book_visits", 1,
         "The sitter search ignores its species argument and returns a dog-only sitter for a household with a cat."),
    Case("zt_petsit_3", "pet_format", "format_drift", "C-880", "quote_visits", 1, "book_visits", 1,
         "The quote tool starts answering the total as a comma-decimal string instead of a number."),
    Case("zt_petsit_4", "pet_ctx", "context_pollution", "C-912", "get_client", 1, "book_visits", 1,
         "The client profile's notes carry another household's key note, which the booker uses as key address."),
    Case("zt_petsit_5", "pet_swallow", "swallowed_error", "C-880", "med_schedule", 1, "book_visits", 1,
         "The medication lookup catches the vet portal's lock error and answers an empty schedule."),
]
