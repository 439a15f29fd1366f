"""Bicycle repair desk (sdk route): a repair ticket -> a tool-calling triage loop (customer, service
history, parts catalogue) -> diagnosis parser -> a labour sub-agent -> parallel part pricing -> bench day
-> quote check -> quote sent."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import trajdebug
from trajdebug.testing import Reply, tool_call

from ._common import chat, fn, system_text, tool_results, user_text


NAME = "bike-repair-desk"
ROUTE = "sdk"
DOMAIN = "bicycle repair workshop, repair quotes"
SHAPE = "tool-calling triage loop with memory, diagnosis parser, labour sub-agent (llm + tool), parallel price lookups, bench booking, quote check"
SWITCH = None


def _switched(name: str) -> bool:
    return SWITCH == name


INPUTS = [
    {"task": "ticket T-311 Ines Duarte", "ticket": {"id": "T-311", "customer": "C-88", "bike": "Trek Domane SL5", "symptom": "gears skip under load on the rear cassette", "dropped_off": "2026-03-02"}},
    {"task": "ticket T-312 Omar Haddad", "ticket": {"id": "T-312", "customer": "C-41", "bike": "Brompton C Line", "symptom": "rear brake squeals and stops late", "dropped_off": "2026-03-03"}},
    {"task": "ticket T-313 Lea Brandt", "ticket": {"id": "T-313", "customer": "C-17", "bike": "Cube Kathmandu Hybrid", "symptom": "front hydraulic brake lever sinks to the bar", "dropped_off": "2026-03-04"}},
    {"task": "ticket T-314 Sam Okafor", "ticket": {"id": "T-314", "customer": "C-52", "bike": "Specialized Rockhopper", "symptom": "chain slips and the cassette teeth look worn", "dropped_off": "2026-03-04"}},
    {"task": "ticket T-315 Mia Kowalski", "ticket": {"id": "T-315", "customer": "C-09", "bike": "Gazelle Ultimate C8", "symptom": "rear tyre keeps going flat", "dropped_off": "2026-03-05"}},
]

CUSTOMERS = {
    "C-88": {"name": "Ines Duarte", "bikes": ["Brompton C Line", "Trek Domane SL5"], "loyalty": 0.05},
    "C-41": {"name": "Omar Haddad", "bikes": ["Brompton C Line"], "loyalty": 0.0},
    "C-17": {"name": "Lea Brandt", "bikes": ["Cube Kathmandu Hybrid", "Gazelle Ultimate C8"], "loyalty": 0.1},
    "C-52": {"name": "Sam Okafor", "bikes": ["Specialized Rockhopper"], "loyalty": 0.0},
    "C-09": {"name": "Mia Kowalski", "bikes": ["Gazelle Ultimate C8"], "loyalty": 0.05},
}
BIKES = {
    "Trek Domane SL5": {"drivetrain": "shimano-11", "brakes": "hydraulic-disc", "labor_class": "road"},
    "Brompton C Line": {"drivetrain": "brompton-6", "brakes": "rim", "labor_class": "folding"},
    "Cube Kathmandu Hybrid": {"drivetrain": "shimano-10", "brakes": "hydraulic-disc", "labor_class": "ebike"},
    "Specialized Rockhopper": {"drivetrain": "shimano-9", "brakes": "hydraulic-disc", "labor_class": "mtb"},
    "Gazelle Ultimate C8": {"drivetrain": "shimano-nexus-8", "brakes": "hydraulic-rim", "labor_class": "city"},
}
HISTORY = {
    "C-88": [{"date": "2025-10-11", "bike": "Trek Domane SL5", "work": "chain replaced"}],
    "C-41": [{"date": "2025-06-20", "bike": "Brompton C Line", "work": "brake blocks replaced"}],
    "C-17": [{"date": "2025-09-02", "bike": "Cube Kathmandu Hybrid", "work": "motor firmware update"}],
    "C-52": [],
    "C-09": [{"date": "2025-12-01", "bike": "Gazelle Ultimate C8", "work": "tyre replaced"}],
}
CATALOG = [
    {"sku": "CS-HG700-11", "name": "Shimano 105 11-speed cassette 11-34", "fits": ["shimano-11"], "price": 54.0},
    {"sku": "CS-HG400-9", "name": "Shimano Alivio 9-speed cassette 11-34", "fits": ["shimano-9"], "price": 29.0},
    {"sku": "CS-HG500-10", "name": "Shimano Deore 10-speed cassette 11-42", "fits": ["shimano-10"], "price": 38.0},
    {"sku": "CN-HG601", "name": "Shimano 11-speed chain", "fits": ["shimano-11"], "price": 32.0},
    {"sku": "CN-HG53", "name": "Shimano 9-speed chain", "fits": ["shimano-9"], "price": 21.0},
    {"sku": "BP-BROMPTON", "name": "Brompton brake blocks, pair", "fits": ["rim"], "price": 14.0},
    {"sku": "BK-MINERAL", "name": "Shimano mineral oil bleed kit", "fits": ["hydraulic-disc"], "price": 22.0},
    {"sku": "BK-MAGURA", "name": "Magura Royal Blood bleed kit", "fits": ["hydraulic-rim"], "price": 25.0},
    {"sku": "TY-MARATHON", "name": "Schwalbe Marathon Plus 28 tyre", "fits": ["shimano-nexus-8", "rim", "hydraulic-rim"], "price": 39.0},
    {"sku": "TU-28", "name": "inner tube 28 inch", "fits": ["shimano-nexus-8", "hydraulic-rim"], "price": 7.0},
]
RATES = {"road": 48.0, "folding": 44.0, "ebike": 62.0, "mtb": 50.0, "city": 45.0}
OPEN_DAYS = {0, 1, 2, 3, 4, 5}  # Monday..Saturday
NEEDS = {"gears skip": ("cassette", "chain"), "squeals": ("brake blocks",), "sinks": ("bleed kit",),
         "chain slips": ("cassette", "chain"), "flat": ("tyre", "inner tube")}
PART_WORDS = {"cassette": "cassette", "chain": "chain", "brake blocks": "brake blocks", "bleed kit": "bleed kit",
              "tyre": "tyre", "inner tube": "inner tube"}


# ---- model -------------------------------------------------------------------------------------------

def brain(request):
    system = system_text(request)
    if system.startswith("You are the triage assistant"):
        ticket = json.loads(user_text(request))
        done = dict(tool_results(request))
        if "lookup_customer" not in done:
            return Reply(tool_calls=(tool_call("lookup_customer", {"customer_id": ticket["customer"]}),
                                     tool_call("service_history", {"customer_id": ticket["customer"]})))
        msgs = request.body["messages"]
        # the model reads every ticket in its context; the bike is the one of the latest ticket
        tickets = [json.loads(m["content"]) for m in msgs[1:] if m["role"] == "user" and m["content"].startswith("{")]
        bike = tickets[-1]["bike"]
        parts = []
        for t in tickets:
            parts += [p for k, v in NEEDS.items() if k in t["symptom"] for p in v if p not in parts]
        searched = [json.loads(c) for n, c in tool_results(request) if n == "parts_catalog"]
        if len(searched) < len(parts):
            return Reply(tool_calls=tuple(tool_call("parts_catalog", {"query": f"{p} for {bike}"}) for p in parts))
        skus = [hits[0]["sku"] for hits in searched]
        return json.dumps({"bike": bike, "cause": tickets[-1]["symptom"], "parts": skus, "hours": 0.5 * len(skus) + 0.25})
    if system.startswith("You estimate bench labour"):
        brief = json.loads(user_text(request))
        done = tool_results(request)
        if not done:
            return Reply(tool_calls=(tool_call("labor_rates", {"bike": brief["bike"]}),))
        rate = json.loads(done[-1][1])
        return json.dumps({"bike": rate["bike"], "hours": brief["hours"], "rate": rate["rate"],
                           "labor": round(brief["hours"] * rate["rate"], 2)})
    return "I only handle repair tickets."


TRIAGE_TOOLS = [fn("lookup_customer", "Customer record and bikes on file.", customer_id="string"),
                fn("service_history", "Past workshop jobs of a customer.", customer_id="string"),
                fn("parts_catalog", "Search the parts catalogue.", query="string")]


# ---- steps -------------------------------------------------------------------------------------------

@trajdebug.step(kind="input")
def intake_ticket(ticket: dict) -> dict:
    return ticket


@trajdebug.step(kind="state")
def load_memory(ticket: dict) -> list[dict]:
    notes = trajdebug.current_run().state.setdefault("desk_notes", [])
    if _switched("desk-notes"):
        return [{"role": "user", "content": json.dumps(INPUTS[2]["ticket"])}]
    return list(notes)


@trajdebug.step(kind="llm")
def triage_model(messages: list[dict], tools: list[dict]) -> dict:
    return chat(messages, tools)


def lookup_customer(customer_id: str) -> dict:
    return {"customer_id": customer_id, **CUSTOMERS[customer_id]}


def service_history(customer_id: str) -> list[dict]:
    return HISTORY[customer_id]


def parts_catalog(query: str) -> list[dict]:
    part, bike = query.split(" for ", 1)
    spec = BIKES[bike]
    hits = [c for c in CATALOG if PART_WORDS[part] in c["name"].lower()]
    if _switched("catalog-rank"):
        return hits[:3]
    return sorted(hits, key=lambda c: not (spec["drivetrain"] in c["fits"] or spec["brakes"] in c["fits"]))[:3]


TOOLS = {"lookup_customer": lookup_customer, "service_history": service_history, "parts_catalog": parts_catalog}


@trajdebug.step(kind="parse")
def parse_diagnosis(content: str) -> dict:
    data = json.loads(content)
    return {"bike": data["bike"], "cause": data["cause"], "parts": list(data["parts"]), "hours": float(data["hours"])}


@trajdebug.step(kind="llm")
def estimate_labor(messages: list[dict], tools: list[dict]) -> dict:
    return chat(messages, tools)


@trajdebug.step(kind="tool")
def labor_rates(bike: str) -> dict:
    return {"bike": bike, "class": BIKES[bike]["labor_class"], "rate": RATES[BIKES[bike]["labor_class"]]}


@trajdebug.step(kind="agent")
def labor_estimator(brief: dict) -> dict:
    system = {"role": "system", "content": "You estimate bench labour. Call labor_rates, then answer JSON."}
    bike = brief["bike"] if brief["bike"] in brief["customer_bikes"] else brief["customer_bikes"][0]
    if _switched("first-bike"):
        bike = brief["customer_bikes"][0]
    task = {"ticket": brief["ticket"], "bike": bike, "hours": brief["hours"]}
    messages = [system, {"role": "user", "content": json.dumps(task)}]
    tools = [fn("labor_rates", "Hourly bench rate for a bike.", bike="string")]
    while True:
        answer = estimate_labor(messages, tools)
        if not answer.get("tool_calls"):
            return json.loads(answer["content"])
        messages.append(answer)
        for call in answer["tool_calls"]:
            result = labor_rates(**json.loads(call["function"]["arguments"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})


@trajdebug.step(kind="tool")
def part_price(sku: str, drivetrain: str, brakes: str) -> dict:
    part = next(c for c in CATALOG if c["sku"] == sku)
    try:
        if _switched("price-feed"):
            raise TimeoutError(f"supplier price feed timed out for {sku}")
        price = part["price"]
    except TimeoutError:
        price = 0.0
    return {"sku": sku, "price": price, "fits": part["fits"], "in_stock": True}


@trajdebug.step(kind="other")
def pick_bench_day(dropped_off: str, queue_days: int) -> str:
    day = date.fromisoformat(dropped_off)
    counted = 0
    while counted < queue_days:
        day += timedelta(days=1)
        if day.weekday() in OPEN_DAYS:
            counted += 1
    if _switched("queue-days"):
        day += timedelta(days=1)
    return day.isoformat()


@trajdebug.step(kind="tool")
def book_bench(day: str, ticket_id: str) -> dict:
    if date.fromisoformat(day).weekday() not in OPEN_DAYS:
        raise ValueError(f"bench calendar: the workshop is closed on {date.fromisoformat(day):%A %Y-%m-%d}")
    return {"ticket": ticket_id, "bench_day": day, "mechanic": "Rui"}


@trajdebug.step(kind="other")
def build_quote(ticket: dict, prices: list[dict], labor: dict, customer: dict) -> dict:
    parts = round(sum(p["price"] for p in prices), 2)
    total = round((parts + labor["labor"]) * (1 - customer["loyalty"]), 2)
    quote = {"ticket": ticket["id"], "bike": labor["bike"], "parts": parts, "labor": labor["labor"], "total": total}
    trajdebug.current_run().state["quote"] = quote
    return quote


@trajdebug.step(kind="condition")
def check_quote(quote: dict, ticket: dict, prices: list[dict]) -> dict:
    if quote["bike"] != ticket["bike"]:
        raise ValueError(f"quote {ticket['id']}: labour is for {quote['bike']}, the ticket is for {ticket['bike']}")
    spec = BIKES[ticket["bike"]]
    for p in prices:
        if spec["drivetrain"] not in p["fits"] and spec["brakes"] not in p["fits"]:
            raise ValueError(f"quote {ticket['id']}: {p['sku']} does not fit {ticket['bike']} ({spec['drivetrain']}, {spec['brakes']})")
    for p in prices:
        if p["price"] <= 0:
            raise ValueError(f"quote {ticket['id']}: {p['sku']} priced at {p['price']:.2f} EUR")
    if not 20 <= quote["total"] <= 400:
        raise ValueError(f"quote {ticket['id']}: total {quote['total']} outside the desk's range")
    return {"approved": True}


@trajdebug.step(kind="tool")
def send_quote(quote: dict, customer: dict, bench: dict) -> str:
    return f"sms to {customer['name']}: {quote['bike']} repair {quote['total']:.2f} EUR, bench day {bench['bench_day']}"


def record(inp: dict, out: Path, ctx) -> None:
    ticket_in = inp["ticket"]
    try:
        with trajdebug.run(NAME, task=inp["task"], path=str(out)):
            ticket = intake_ticket(ticket_in)
            memory = load_memory(ticket)
            messages = [{"role": "system", "content": "You are the triage assistant of a bike workshop. Use the tools, then answer JSON."},
                        *memory, {"role": "user", "content": json.dumps(ticket)}]
            found: dict = {}
            for _ in range(6):
                answer = triage_model(messages, TRIAGE_TOOLS)
                if not answer.get("tool_calls"):
                    break
                messages.append(answer)
                for call in answer["tool_calls"]:
                    args = json.loads(call["function"]["arguments"])
                    with trajdebug.step(call["function"]["name"], kind="retrieval" if call["function"]["name"] == "parts_catalog" else "tool",
                                        input=args) as s:
                        s.output = TOOLS[call["function"]["name"]](**args)
                    found.setdefault(call["function"]["name"], s.output)
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(s.output)})
            diagnosis = parse_diagnosis(answer["content"])
            customer = found["lookup_customer"]
            labor = labor_estimator({"ticket": ticket["id"], "bike": diagnosis["bike"], "hours": diagnosis["hours"],
                                     "customer_bikes": customer["bikes"]})
            spec = BIKES[ticket["bike"]]
            with trajdebug.ContextThreadPoolExecutor(max_workers=3) as pool:
                prices = list(pool.map(lambda sku: part_price(sku, spec["drivetrain"], spec["brakes"]), diagnosis["parts"]))
            day = pick_bench_day(ticket["dropped_off"], 2)
            bench = book_bench(day, ticket["id"])
            quote = build_quote(ticket, prices, labor, customer)
            check_quote(quote, ticket, prices)
            send_quote(quote, customer, bench)
    except ValueError:
        pass


CASES = [
    {"id": "bikeshop_1", "input": 0, "switch": "first-bike", "kind": "subagent_wrong_entity",
     "root": ("labor_estimator", 1), "failure": ("check_quote", 1),
     "description": "The labour sub-agent briefs its model with the customer's first bike on file (a Brompton) instead of the Trek on the ticket, and the quote check refuses the quote."},
    {"id": "bikeshop_2", "input": 3, "switch": "catalog-rank", "kind": "wrong_retrieval",
     "root": ("parts_catalog", 1), "failure": ("check_quote", 1),
     "description": "The catalogue search ranks cassettes by price, so the diagnosis takes an 11-speed cassette for a 9-speed Rockhopper and the quote check finds it does not fit."},
    {"id": "bikeshop_3", "input": 1, "switch": "desk-notes", "kind": "context_pollution",
     "root": ("load_memory", 1), "failure": ("check_quote", 1),
     "description": "The desk memory hands the triage model another customer's hydraulic-brake ticket, so it diagnoses a bleed kit for a rim-brake Brompton."},
    {"id": "bikeshop_4", "input": 4, "switch": "queue-days", "kind": "off_by_one",
     "root": ("pick_bench_day", 1), "failure": ("book_bench", 1),
     "description": "The bench day is counted one day past the queue length and lands on a Sunday, when the workshop is closed."},
    {"id": "bikeshop_5", "input": 2, "switch": "price-feed", "kind": "swallowed_error",
     "root": ("part_price", 1), "failure": ("check_quote", 1),
     "description": "The part-price lookup catches the supplier feed's timeout and answers a price of 0.00, which the quote check refuses."},
]
