"""Funeral arrangements planner (sdk route): turns a family's enquiry into a priced service quote."""

from __future__ import annotations

import json
from pathlib import Path

import kit
from harness import CheckFailed, chat_policy, record_sdk, sdk_chat
from openai import OpenAI

import trajdebug


NAME = "funeral-arranger"
ROUTE = "sdk"
DOMAIN = "funeral planning (arranging services and quotes)"
SHAPE = ("enquiry -> LLM extraction + parse -> LLM plan + parse -> per component supplier search + pricing "
         "(retry) -> venue sub-agent (availability, LLM choice, parse, hold) -> state write -> quote -> VAT -> "
         "LLM letter -> validator")

INPUTS = [
    {"family": "Okafor", "deceased": "Grace Okafor", "service": "burial", "rite": "Anglican", "date": "2027-03-12",
     "attendees": 120, "budget": 9800, "extras": ["hearse", "flowers", "catering"], "region": "Leeds"},
    {"family": "Lindqvist", "deceased": "Erik Lindqvist", "service": "cremation", "rite": "Humanist",
     "date": "2027-04-02", "attendees": 45, "budget": 5200, "extras": ["flowers", "catering"], "region": "York"},
    {"family": "Papadakis", "deceased": "Eleni Papadakis", "service": "burial", "rite": "Greek Orthodox",
     "date": "2027-02-19", "attendees": 180, "budget": 14500, "extras": ["hearse", "flowers", "catering"],
     "region": "Leeds"},
    {"family": "Brennan", "deceased": "Patrick Brennan", "service": "burial", "rite": "Catholic",
     "date": "2027-05-07", "attendees": 90, "budget": 8700, "extras": ["hearse", "catering"], "region": "York"},
    {"family": "Haddad", "deceased": "Samir Haddad", "service": "cremation", "rite": "Humanist",
     "date": "2027-01-28", "attendees": 60, "budget": 6100, "extras": ["hearse", "flowers", "catering"],
     "region": "Leeds"},
    {"family": "Moreau", "deceased": "Claire Moreau", "service": "cremation", "rite": "Catholic",
     "date": "2027-06-11", "attendees": 70, "budget": 7300, "extras": ["hearse", "flowers"], "region": "York"},
    {"family": "Nakamura", "deceased": "Hiro Nakamura", "service": "burial", "rite": "Anglican",
     "date": "2027-03-26", "attendees": 40, "budget": 6900, "extras": ["hearse", "flowers", "catering"],
     "region": "York"},
]

CASES = [
    {"id": "zzl_funeral_1", "input": 0, "kind": "off_by_one", "root": ("parse_plan", 1),
     "failure": ("validate_quote", 1),
     "description": "The plan parser slices off the last listed component, so the officiant is never sourced "
                    "and the quote has no officiant line."},
    {"id": "zzl_funeral_2", "input": 2, "kind": "wrong_retrieval", "root": ("search_suppliers", 4),
     "failure": ("validate_quote", 1),
     "description": "The officiant search matches on the word 'Orthodox' loosely and returns a Russian Orthodox "
                    "priest for a Greek Orthodox service."},
    {"id": "zzl_funeral_3", "input": 4, "kind": "unit_error", "root": ("price_component", 4),
     "failure": ("validate_quote", 1),
     "description": "The caterer's price arrives in pence and is read as pounds, so the catering line is "
                    "a hundred times too high."},
    {"id": "zzl_funeral_4", "input": 3, "kind": "hallucinated_value", "root": ("choose_venue", 1),
     "failure": ("validate_quote", 1),
     "description": "The venue-choosing model answers with a service date the family never asked for, and the "
                    "hold is made on that date."},
    {"id": "zzl_funeral_5", "input": 6, "kind": "bad_memory_write", "root": ("save_selection", 1),
     "failure": ("validate_quote", 1),
     "description": "The selection written to run state keeps the first venue offered instead of the venue "
                    "that was held."},
]

SUPPLIERS = {
    "hearse": [{"id": "HS-11", "name": "Aire Valley Hearses", "region": "Leeds", "tags": ["hearse"]},
               {"id": "HS-24", "name": "Minster Carriage Co", "region": "York", "tags": ["hearse"]}],
    "flowers": [{"id": "FL-03", "name": "Kirkgate Florist", "region": "Leeds", "tags": ["flowers"]},
                {"id": "FL-08", "name": "Shambles Blooms", "region": "York", "tags": ["flowers"]}],
    "catering": [{"id": "CT-40", "name": "Headrow Kitchen", "region": "Leeds", "tags": ["catering"]},
                 {"id": "CT-52", "name": "Ouse Bridge Catering", "region": "York", "tags": ["catering"]}],
    "officiant": [
        {"id": "OF-1", "name": "Rev. Alison Pike", "region": "Leeds", "tags": ["Anglican"]},
        {"id": "OF-2", "name": "Fr. Dmitri Volkov", "region": "Leeds", "tags": ["Russian Orthodox"]},
        {"id": "OF-3", "name": "Fr. Nikolaos Stavrou", "region": "Leeds", "tags": ["Greek Orthodox"]},
        {"id": "OF-4", "name": "Celebrant Jo Marsh", "region": "Leeds", "tags": ["Humanist"]},
        {"id": "OF-5", "name": "Fr. Declan Rourke", "region": "York", "tags": ["Catholic"]},
        {"id": "OF-6", "name": "Celebrant Ruth Hale", "region": "York", "tags": ["Humanist"]},
        {"id": "OF-7", "name": "Rev. Mark Ellery", "region": "York", "tags": ["Anglican"]},
    ],
}
# price list: (pricing basis, amount); catering is quoted per head in pence by the caterers' system
PRICES = {"HS-11": ("flat", 650.0), "HS-24": ("flat", 720.0), "FL-03": ("flat", 340.0), "FL-08": ("flat", 295.0),
          "CT-40": ("head_pence", 1450), "CT-52": ("head_pence", 1320), "OF-1": ("flat", 220.0),
          "OF-2": ("flat", 260.0), "OF-3": ("flat", 260.0), "OF-4": ("flat", 240.0), "OF-5": ("flat", 210.0),
          "OF-6": ("flat", 230.0), "OF-7": ("flat", 220.0)}
VENUES = {
    "Leeds": [{"venue_id": "V-L2", "name": "St Anne's Hall", "capacity": 200, "fee": 2600.0},
              {"venue_id": "V-L1", "name": "Roundhay Chapel", "capacity": 80, "fee": 1400.0},
              {"venue_id": "V-L3", "name": "Lawnswood Chapel", "capacity": 130, "fee": 1900.0}],
    "York": [{"venue_id": "V-Y2", "name": "Clifton Rooms", "capacity": 150, "fee": 2100.0},
             {"venue_id": "V-Y1", "name": "Fulford Chapel", "capacity": 60, "fee": 1250.0}],
}
BURIAL_PLOT = 2300.0
CREMATION_FEE = 980.0
VAT = 0.2
_flaky = {"calls": 0}


def _brain(inp: dict):
    def answer(system: str, user: str, messages: list[dict]):
        if system.startswith("Extract"):
            keys = ("deceased", "service", "rite", "date", "attendees", "budget", "extras", "region")
            return json.dumps({k: inp[k] for k in keys})
        if system.startswith("Plan"):
            req = json.loads(user.split("\n", 1)[1])
            comps = ["venue"] + [e for e in ("hearse", "flowers", "catering") if e in req["extras"]] + ["officiant"]
            return json.dumps({"components": comps})
        if system.startswith("Choose"):
            opts = json.loads(user.split("OPTIONS:", 1)[1])
            best = min((o for o in opts if o["capacity"] >= inp["attendees"]), key=lambda o: o["fee"])
            day = inp["date"]
            if kit.on("zzl_funeral_4"):
                day = day[:-2] + f"{int(day[-2:]) + 1:02d}"
            return f"I recommend {best['name']}.\n" + json.dumps({"venue_id": best["venue_id"], "date": day,
                                                                  "time": "11:00"})
        if system.startswith("Write"):
            return (f"Dear {inp['family']} family, please find attached our proposal for the service for "
                    f"{inp['deceased']}. We will call you to go through each item.")
        return "I can help with funeral arrangements."

    return chat_policy(answer)


@trajdebug.step(kind="input")
def read_enquiry(inp: dict) -> str:
    extras = ", ".join(inp["extras"])
    return (f"From the {inp['family']} family: we would like a {inp['service']} service ({inp['rite']}) for "
            f"{inp['deceased']} on {inp['date']} in {inp['region']}, about {inp['attendees']} guests, "
            f"with {extras}. Our budget is GBP {inp['budget']}.")


@trajdebug.step(kind="parse")
def parse_requirements(text: str) -> dict:
    req = json.loads(text)
    req["attendees"] = int(req["attendees"])
    req["budget"] = float(req["budget"])
    trajdebug.current_run().state["requirements"] = req
    return req


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> list[str]:
    comps = json.loads(text)["components"]
    if kit.on("zzl_funeral_1"):
        comps = comps[0:len(comps) - 1]
    return [c.strip().lower() for c in comps]


@trajdebug.step(kind="retrieval")
def search_suppliers(component: str, region: str, rite: str) -> list[dict]:
    pool = [s for s in SUPPLIERS[component] if s["region"] == region]
    if component == "officiant":
        if kit.on("zzl_funeral_2"):
            word = rite.split()[-1]
            pool = [s for s in pool if any(word in t for t in s["tags"])]
        else:
            pool = [s for s in pool if rite in s["tags"]]
    return [dict(s) for s in pool]


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def price_component(supplier_id: str, component: str, attendees: int) -> dict:
    if supplier_id.startswith("HS"):
        _flaky["calls"] += 1
        if _flaky["calls"] % 2 == 1:
            raise ConnectionError(f"supplier gateway for {supplier_id} did not answer")
    basis, amount = PRICES[supplier_id]
    if basis == "head_pence":
        per_head = amount / 100.0
        if kit.on("zzl_funeral_3"):
            per_head = float(amount)
        return {"supplier_id": supplier_id, "component": component, "amount": round(per_head * attendees, 2),
                "basis": f"{attendees} guests"}
    return {"supplier_id": supplier_id, "component": component, "amount": amount, "basis": "flat"}


@trajdebug.step(kind="tool")
def check_venue_availability(region: str, date: str, attendees: int) -> list[dict]:
    return [dict(v) for v in VENUES[region]]


@trajdebug.step(kind="parse")
def parse_venue_choice(text: str) -> dict:
    return json.loads(text[text.index("{"):])


@trajdebug.step(kind="tool")
def hold_venue(choice: dict) -> dict:
    return {"hold_ref": f"H-{choice['venue_id']}-{choice['date'].replace('-', '')}", "venue_id": choice["venue_id"],
            "date": choice["date"], "time": choice["time"]}


@trajdebug.step(kind="agent")
def arrange_venue(client, req: dict) -> dict:
    options = check_venue_availability(req["region"], req["date"], req["attendees"])
    text = sdk_chat(client, "choose_venue", [
        {"role": "system", "content": "Choose the venue: the cheapest one that seats every guest on the date."},
        {"role": "user", "content": f"Guests: {req['attendees']}, date {req['date']}.\nOPTIONS:{json.dumps(options)}"},
    ])
    choice = parse_venue_choice(text)
    hold = hold_venue(choice)
    return {"options": options, "hold": hold}


@trajdebug.step(kind="state")
def save_selection(venue: dict, lines: list[dict]) -> dict:
    held = venue["hold"]
    venue_id = held["venue_id"]
    if kit.on("zzl_funeral_5"):
        venue_id = venue["options"][0]["venue_id"]
    info = next(v for v in venue["options"] if v["venue_id"] == venue_id)
    sel = {"venue_id": venue_id, "venue_name": info["name"], "venue_fee": info["fee"], "date": held["date"],
           "time": held["time"], "hold_ref": held["hold_ref"], "lines": lines}
    trajdebug.current_run().state["selection"] = sel
    return sel


@trajdebug.step(kind="other")
def assemble_quote() -> dict:
    state = trajdebug.current_run().state
    req, sel = state["requirements"], state["selection"]
    base = BURIAL_PLOT if req["service"] == "burial" else CREMATION_FEE
    items = [{"item": req["service"], "amount": base}, {"item": f"venue {sel['venue_name']}", "amount": sel["venue_fee"]}]
    items += [{"item": ln["component"], "supplier_id": ln["supplier_id"], "amount": ln["amount"]} for ln in sel["lines"]]
    return {"items": items, "venue_id": sel["venue_id"], "hold_ref": sel["hold_ref"], "date": sel["date"],
            "net": round(sum(i["amount"] for i in items), 2)}


@trajdebug.step(kind="tool")
def apply_vat(quote: dict) -> dict:
    vat = round(quote["net"] * VAT, 2)
    return {**quote, "vat": vat, "total": round(quote["net"] + vat, 2)}


@trajdebug.step(kind="condition")
def validate_quote(quote: dict, req: dict, letter: str) -> dict:
    comps = {i["item"] for i in quote["items"]}
    for extra in req["extras"] + ["officiant"]:
        if extra not in comps:
            raise CheckFailed(f"quote has no line for '{extra}' requested by the family")
    off = next(i for i in quote["items"] if i["item"] == "officiant")
    tags = next(s["tags"] for s in SUPPLIERS["officiant"] if s["id"] == off["supplier_id"])
    if req["rite"] not in tags:
        raise CheckFailed(f"officiant {off['supplier_id']} leads {tags[0]} services, family asked for {req['rite']}")
    if quote["date"] != req["date"]:
        raise CheckFailed(f"quote books the service on {quote['date']}, family asked for {req['date']}")
    if not quote["hold_ref"].startswith(f"H-{quote['venue_id']}-"):
        raise CheckFailed(f"quote venue {quote['venue_id']} does not match venue hold {quote['hold_ref']}")
    if quote["total"] > req["budget"]:
        raise CheckFailed(f"quote total GBP {quote['total']:.2f} exceeds the family's budget GBP {req['budget']:.2f}")
    return {"ok": True, "total": quote["total"]}


def record(server, inp: dict, path: Path) -> None:
    server.use(_brain(inp))
    _flaky["calls"] = 0
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)

    def body(run):
        text = read_enquiry(inp)
        extracted = sdk_chat(client, "extract_requirements", [
            {"role": "system", "content": "Extract the funeral requirements as JSON."},
            {"role": "user", "content": text}])
        req = parse_requirements(extracted)
        plan_text = sdk_chat(client, "plan_arrangements", [
            {"role": "system", "content": "Plan the service components to source, as JSON."},
            {"role": "user", "content": "Requirements:\n" + json.dumps(req)}])
        comps = parse_plan(plan_text)
        lines = []
        for comp in comps:
            if comp == "venue":
                continue
            found = search_suppliers(comp, req["region"], req["rite"])
            lines.append(price_component(found[0]["id"], comp, req["attendees"]))
        venue = arrange_venue(client, req)
        save_selection(venue, lines)
        quote = apply_vat(assemble_quote())
        letter = sdk_chat(client, "write_family_letter", [
            {"role": "system", "content": "Write a short, warm cover letter for the quote."},
            {"role": "user", "content": json.dumps(quote)}])
        validate_quote(quote, run.state["requirements"], letter)

    record_sdk(body, NAME, f"quote a {inp['service']} service for the {inp['family']} family", path)
