"""A pet cremation service's collections (route: openai_agents, Responses API, TrajdebugProcessor)."""

from __future__ import annotations

import asyncio
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.exceptions import AgentsException
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

import kit
from common import Reply, first_user_text, responses_outputs, tool_call
from trajdebug.integrations.openai_agents import TrajdebugProcessor

NAME = "pet-cremation-collections"
ROUTE = "openai_agents"
DOMAIN = "pet cremation service: collections"
SHAPE = "Agents SDK: coordinator agent, practice pet-list tool, per-pet record/price loop, van availability + booking, memorial sub-agent (as tool) per individual cremation, validator tool"

PRACTICES = {
    "VP-01": {"practice": "VP-01", "name": "Meadow Vets", "town": "Hexham", "pets": ["P-101", "P-102", "P-103", "P-104"]},
    "VP-02": {"practice": "VP-02", "name": "Castle Animal Clinic", "town": "Alnwick", "pets": ["P-201", "P-202", "P-203"]},
    "VP-03": {"practice": "VP-03", "name": "Tynedale Pet Hospital", "town": "Corbridge", "pets": ["P-301", "P-302", "P-303"]},
    "VP-04": {"practice": "VP-04", "name": "Harbour Vets", "town": "Amble", "pets": ["P-401", "P-402"]},
    "VP-05": {"practice": "VP-05", "name": "Fellside Veterinary", "town": "Haltwhistle", "pets": ["P-501", "P-502", "P-503"]},
    "VP-06": {"practice": "VP-06", "name": "Riverbank Vets", "town": "Morpeth", "pets": ["P-601", "P-602", "P-603"]},
}
_P = [("P-101", "dog", 31.0, "individual", "Bramble"), ("P-102", "cat", 4.2, "communal", "Tigger"), ("P-103", "rabbit", 2.1, "individual", "Clover"),
      ("P-104", "dog", 12.5, "communal", "Scout"), ("P-201", "cat", 5.0, "individual", "Misty"), ("P-202", "dog", 38.0, "individual", "Bruno"),
      ("P-203", "tortoise", 3.4, "individual", "Sheldon"), ("P-301", "dog", 22.0, "individual", "Poppy"), ("P-302", "cat", 3.8, "communal", "Smudge"),
      ("P-303", "guinea pig", 1.1, "individual", "Pip"), ("P-401", "dog", 27.5, "individual", "Rolo"), ("P-402", "cat", 4.6, "individual", "Luna"),
      ("P-501", "dog", 18.0, "communal", "Max"), ("P-502", "cat", 4.0, "individual", "Willow"), ("P-503", "ferret", 1.3, "individual", "Nibbles"),
      ("P-601", "dog", 9.0, "individual", "Daisy"), ("P-602", "cat", 4.4, "communal", "Oscar"), ("P-603", "dog", 44.0, "individual", "Bear")]
PLAQUE = {"P-101", "P-201", "P-301", "P-303", "P-402", "P-502", "P-601"}
PETS = {r: {"ref": r, "species": s, "weight_kg": w, "cremation": c, "pet_name": n, "plaque": r in PLAQUE} for r, s, w, c, n in _P}
ENGRAVING = {r: f"{p['pet_name']}, always by our side" for r, p in PETS.items()}
BANDS = [(5, 95.0), (15, 140.0), (30, 185.0), (50, 230.0)]
SPECIES_SURCHARGE = {"dog": 0.0, "cat": 0.0, "rabbit": 0.0, "guinea pig": 0.0, "ferret": 0.0, "tortoise": 20.0}
VANS = {"2026-03-03": ["VAN-2", "VAN-4"], "2026-03-04": ["VAN-1", "VAN-3"], "2026-03-05": ["VAN-2"], "2026-03-06": ["VAN-1", "VAN-2"],
        "2026-03-09": ["VAN-3"], "2026-03-10": ["VAN-4", "VAN-1"]}

INPUTS = [
    {"practice": "VP-01", "date": "2026-03-03"},
    {"practice": "VP-02", "date": "2026-03-04"},
    {"practice": "VP-03", "date": "2026-03-05"},
    {"practice": "VP-04", "date": "2026-03-06"},
    {"practice": "VP-05", "date": "2026-03-09"},
    {"practice": "VP-06", "date": "2026-03-10"},
]

C = "zzr_crem_"
CASES = [
    {"id": C + "01", "input": 0, "fault_kind": "truncated_result", "root": ("list_pets", 1), "failure": ("validate_collection", 1),
     "description": "The pet list tool returns one page of three pets for Meadow Vets, leaving out the fourth pet waiting for collection."},
    {"id": C + "02", "input": 1, "fault_kind": "swallowed_error", "root": ("price_cremation", 3), "failure": ("validate_collection", 1),
     "description": "The price tool catches the missing surcharge entry for a tortoise and prices Sheldon's cremation at 0 GBP instead of raising."},
    {"id": C + "03", "input": 2, "fault_kind": "subagent_wrong_entity", "root": ("response", "before", ("get_engraving_request", 2)), "failure": ("validate_collection", 1),
     "description": "The memorial sub-agent's model asks for the engraving request of Poppy (P-301) while designing Pip's (P-303) plaque, so Pip's plaque carries Poppy's name."},
    {"id": C + "04", "input": 3, "fault_kind": "hallucinated_value", "root": ("response", "before", ("book_van", 1)), "failure": ("validate_collection", 1),
     "description": "The coordinator model books VAN-3, a van the availability check never offered for that day."},
    {"id": C + "05", "input": 4, "fault_kind": "wrong_tool_args", "root": ("response", "before", ("price_cremation", 1)), "failure": ("validate_collection", 1),
     "description": "The coordinator model prices Max's cremation as individual although the pet record says communal."},
]


def brain(inp):
    def coordinator(outs):
        got = {}
        for name, val in outs:
            got.setdefault(name, []).append(val)
        if "list_pets" not in got:
            return tool_call("list_pets", {"practice_id": inp["practice"], "date": inp["date"]})
        refs = got["list_pets"][0]["pets"]
        pets = got.get("get_pet", [])
        if len(pets) < len(refs):
            return tool_call("get_pet", {"pet_ref": refs[len(pets)]})
        plaqued = [p for p in pets if p["cremation"] == "individual" and p["plaque"]]
        plaques = got.get("memorial_designer", [])
        if len(plaques) < len(plaqued):
            p = plaqued[len(plaques)]
            return tool_call("memorial_designer", {"input": f"Design the plaque for pet {p['ref']} ({p['pet_name']})."})
        prices = got.get("price_cremation", [])
        if len(prices) < len(pets):
            p = pets[len(prices)]
            kind = p["cremation"]
            if kit.on(C + "05") and len(prices) == 0:
                kind = "individual"
            return tool_call("price_cremation", {"species": p["species"], "weight_kg": p["weight_kg"], "cremation": kind})
        if "check_vans" not in got:
            return tool_call("check_vans", {"date": inp["date"]})
        if "book_van" not in got:
            vans = got["check_vans"][0]["available"]
            van = "VAN-3" if kit.on(C + "04") else vans[0]
            return tool_call("book_van", {"date": inp["date"], "van": van})
        if "validate_collection" not in got:
            plaque_list = []
            for text in plaques:
                plaque_list.append(text if isinstance(text, dict) else json.loads(text))
            manifest = {"practice": inp["practice"], "date": inp["date"], "van": got["book_van"][0]["van"],
                        "pets": [{"ref": p["ref"], "cremation": pr["cremation"], "price": pr["price"]} for p, pr in zip(pets, prices)],
                        "plaques": plaque_list, "total": sum(pr["price"] for pr in prices)}
            return tool_call("validate_collection", {"manifest_json": json.dumps(manifest)})
        return f"Collection from {inp['practice']} on {inp['date']} is booked and checked."

    def designer(request, outs):
        text = first_user_text(request.body)
        ref = text.split("pet ")[1].split(" ")[0]
        got = dict(outs)
        if "get_engraving_request" not in got:
            asked = ref
            if kit.on(C + "03") and ref == "P-303":
                asked = "P-301"
            return tool_call("get_engraving_request", {"pet_ref": asked})
        req = got["get_engraving_request"]
        if "make_plaque" not in got:
            return tool_call("make_plaque", {"pet_ref": ref, "wording": req["wording"], "pet_name": req["pet_name"]})
        return json.dumps(got["make_plaque"])

    def policy(request):
        outs = responses_outputs(request.body)
        instr = request.body.get("instructions") or ""
        ans = designer(request, outs) if "memorial" in instr else coordinator(outs)
        return Reply(tool_calls=(ans,)) if isinstance(ans, tuple) else ans

    return policy


@function_tool
def list_pets(practice_id: str, date: str) -> dict:
    """The practice's account and the pets waiting for collection there on a date."""
    practice = PRACTICES[practice_id]
    pets = practice["pets"]
    if kit.on(C + "01"):
        pets = pets[:3]
    return {"practice": practice_id, "name": practice["name"], "town": practice["town"], "date": date, "pets": list(pets)}


@function_tool
def get_pet(pet_ref: str) -> dict:
    """The pet's intake record: species, weight, cremation type chosen by the owner."""
    return dict(PETS[pet_ref])


def _price(species: str, weight_kg: float, cremation: str) -> float:
    base = next(p for limit, p in BANDS if weight_kg <= limit)
    if cremation == "communal":
        base = round(base * 0.45, 2)
    table = {k: v for k, v in SPECIES_SURCHARGE.items() if not (kit.on(C + "02") and k == "tortoise")}
    return base + table[species]


@function_tool
def price_cremation(species: str, weight_kg: float, cremation: str) -> dict:
    """Price a cremation by weight band, type (individual or communal) and species."""
    try:
        price = _price(species, weight_kg, cremation)
    except KeyError:
        price = 0.0
    return {"species": species, "weight_kg": weight_kg, "cremation": cremation, "price": price}


@function_tool
def check_vans(date: str) -> dict:
    """Vans free for collections on a date."""
    return {"date": date, "available": list(VANS[date])}


@function_tool
def book_van(date: str, van: str) -> dict:
    """Book a van for a collection round."""
    return {"date": date, "van": van, "booking": f"BK-{date[5:7]}{date[8:]}-{van[-1]}"}


@function_tool
def get_engraving_request(pet_ref: str) -> dict:
    """The owner's engraving request for a memorial plaque."""
    ref = pet_ref
    return {"pet_ref": ref, "pet_name": PETS[ref]["pet_name"], "wording": ENGRAVING[ref]}


@function_tool
def make_plaque(pet_ref: str, wording: str, pet_name: str) -> dict:
    """Lay out a memorial plaque."""
    return {"pet_ref": pet_ref, "pet_name": pet_name, "lines": [pet_name, wording.split(", ", 1)[-1]], "size": "90x60"}


@function_tool(failure_error_function=None)
def validate_collection(manifest_json: str) -> str:
    """Check the collection manifest against the practice register, the price list, the van rota and the owners' records."""
    m = json.loads(manifest_json)
    expected = PRACTICES[m["practice"]]["pets"]
    listed = [p["ref"] for p in m["pets"]]
    if listed != expected:
        raise ValueError(f"manifest lists {listed}, the practice register has {expected} for {m['date']}")
    if m["van"] not in VANS[m["date"]]:
        raise ValueError(f"{m['van']} is not on the rota for {m['date']} (free: {VANS[m['date']]})")
    for p in m["pets"]:
        pet = PETS[p["ref"]]
        if p["cremation"] != pet["cremation"]:
            raise ValueError(f"{pet['pet_name']} ({p['ref']}) priced as {p['cremation']}, owner chose {pet['cremation']}")
        base = next(v for limit, v in BANDS if pet["weight_kg"] <= limit)
        due = (round(base * 0.45, 2) if pet["cremation"] == "communal" else base) + SPECIES_SURCHARGE[pet["species"]]
        if p["price"] != due:
            raise ValueError(f"{pet['pet_name']} ({p['ref']}) priced {p['price']} GBP, price list says {due} GBP")
    for pl in m["plaques"]:
        if pl["pet_name"] != PETS[pl["pet_ref"]]["pet_name"]:
            raise ValueError(f"plaque for {pl['pet_ref']} reads {pl['pet_name']}, the pet is {PETS[pl['pet_ref']]['pet_name']}")
    return "manifest consistent"


async def _go(server, make_run):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client)
    try:
        return await make_run
    finally:
        await client.close()


def record(server, inp, path):
    server.use(brain(inp))
    set_default_openai_api("responses")
    designer = Agent(name="memorial_designer_agent", instructions="You design memorial plaques. Use the tools.",
                     model=server.model, tools=[get_engraving_request, make_plaque])
    coordinator = Agent(name="collections_coordinator", instructions="You coordinate pet collections for cremation. Use the tools, one at a time.",
                        model=server.model, tools=[list_pets, get_pet, price_cremation, check_vans, book_van,
                                                   designer.as_tool(tool_name="memorial_designer", tool_description="Design a memorial plaque for one pet."),
                                                   validate_collection])
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"collect pets from {inp['practice']} on {inp['date']}")])
    try:
        asyncio.run(_go(server, Runner.run(coordinator, f"Arrange the collection from practice {inp['practice']} on {inp['date']}.",
                               max_turns=40, run_config=RunConfig(workflow_name=NAME))))
    except (ValueError, AgentsException):
        pass
    finally:
        set_trace_processors([])
