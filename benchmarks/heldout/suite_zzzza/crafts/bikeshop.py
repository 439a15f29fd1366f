"""A bicycle workshop's intake desk (trajdebug's own recorder): a repair ticket to a diagnosis, parts,
stock with a flaky warehouse gateway, a quoting sub-agent, a bench booking and a final check."""

from __future__ import annotations

import json
import re

import trajdebug

from . import common

NAME = "spoke-and-chain-workshop"
ROUTE = "sdk"
DOMAIN = "bicycle repair workshop: ticket to diagnosis, parts, quote and bench"
SHAPE = "ticket -> notes retrieval -> llm diagnose -> parse -> route(condition) -> loop(find part, stock w/ retry) -> quote sub-agent(rates, compute, llm) -> reserve -> job card state -> bench -> final check -> notify"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


INPUTS = {
    "lena": "Ticket T-301, Lena Marsh: Trek FX 2 hybrid, 700c wheels. Rear brake squeals, gears skip on the small cogs. Budget 120.",
    "omar": "Ticket T-302, Omar Haddad: Riese Charger 4 GT, 27.5 wheels. E-bike motor cuts out on hills, front tyre worn. Budget 260.",
    "kai": "Ticket T-303, Kai Lindqvist: Brompton C Line folding, 16 wheels. Rear tyre keeps going flat, shifter cable frayed. Budget 80.",
    "sofia": "Ticket T-304, Sofia Reyes: Specialized Rockhopper MTB, 29 wheels. Front tyre worn, brakes spongy. Budget 150.",
    "dev": "Ticket T-305, Dev Patel: Gazelle Ultimate e-bike, 700c wheels. Chain rusty, battery not charging. Budget 200.",
}

CASES = [
    {"id": "bikeshop_household_notes", "input": "lena", "switch": "household_notes", "fault_kind": "context_pollution",
     "root": ("recall_notes", 1), "failure": ("find_part", 3),
     "description": "Recalling notes by household address brought in a partner's Bosch e-bike visit, and the diagnosis added a speed-sensor job the Trek hybrid cannot take."},
    {"id": "bikeshop_bench_router", "input": "omar", "switch": "router_field", "fault_kind": "wrong_routing",
     "root": ("route_ticket", 1), "failure": ("schedule_bench", 1),
     "description": "The router looked for 'e-bike' only in the bike's model name, sent the Riese Charger motor job to bench-1, and the bench booking refused motor work there."},
    {"id": "bikeshop_gateway_timeout", "input": "kai", "switch": "gateway_timeout", "fault_kind": "swallowed_error",
     "root": ("check_stock", 3), "root_has": "CBL-SH-2100", "failure": ("reserve_parts", 1),
     "description": "The stock check for the shifter cable timed out at the warehouse gateway and answered a shelf count of 1 instead of raising, so reserving the cable later found none."},
    {"id": "bikeshop_tyre_size", "input": "sofia", "switch": "size_ignored", "fault_kind": "tool_ignores_argument",
     "root": ("find_part", 1), "failure": ("final_check", 1),
     "description": "The parts search dropped the 29-inch wheel size and returned its first tyre, a 700x32 road tyre, which the fit check rejected."},
    {"id": "bikeshop_quote_ticket", "input": "dev", "switch": "latest_ticket", "fault_kind": "subagent_wrong_entity",
     "root": ("quote_subagent", 1), "failure": ("final_check", 1),
     "description": "The quoting sub-agent priced the most recently opened ticket on the board (T-304) instead of T-305, and the final check found the quote on another ticket."},
]

NOTES = {
    "Lena Marsh": ["2024-09: new bar tape, Trek FX 2"],
    "Omar Haddad": ["2024-11: motor firmware update"],
    "Kai Lindqvist": ["2025-01: puncture, rear, Schwalbe Marathon 16"],
    "Sofia Reyes": [],
    "Dev Patel": ["2024-06: chain replaced"],
}
HOUSEHOLD = {"Lena Marsh": ["2025-02 (J. Marsh): Bosch CX speed sensor error 503, magnet realigned"]}
CATALOG = [
    {"sku": "TYR-700-32", "part": "tyre", "wheel": "700c", "price": 34.0},
    {"sku": "TYR-275-24", "part": "tyre", "wheel": "27.5", "price": 41.0},
    {"sku": "TYR-29-22", "part": "tyre", "wheel": "29", "price": 44.0},
    {"sku": "TYR-16-135", "part": "tyre", "wheel": "16", "price": 29.0},
    {"sku": "PAD-RIM-2", "part": "brake pads", "wheel": "any", "price": 12.0},
    {"sku": "PAD-HYD-4", "part": "hydraulic bleed kit", "wheel": "any", "price": 18.0},
    {"sku": "CAS-11-32", "part": "cassette", "wheel": "any", "price": 39.0},
    {"sku": "CBL-SH-2100", "part": "shifter cable", "wheel": "any", "price": 7.5},
    {"sku": "CHN-9", "part": "chain", "wheel": "any", "price": 22.0},
    {"sku": "MOT-DIAG", "part": "motor diagnostics", "wheel": "any", "price": 0.0},
    {"sku": "BAT-CHK", "part": "battery check", "wheel": "any", "price": 0.0},
]
STOCK = {"TYR-700-32": 6, "TYR-275-24": 2, "TYR-29-22": 3, "TYR-16-135": 4, "PAD-RIM-2": 10, "PAD-HYD-4": 2,
         "CAS-11-32": 3, "CBL-SH-2100": 0, "CHN-9": 8, "MOT-DIAG": 99, "BAT-CHK": 99}
RESTOCK = {"CBL-SH-2100": "2025-05-21"}
LABOUR = {"tyre": 12.0, "brake pads": 15.0, "hydraulic bleed kit": 30.0, "cassette": 20.0, "shifter cable": 18.0,
          "chain": 10.0, "motor diagnostics": 45.0, "battery check": 25.0, "speed sensor": 20.0}
BOARD = ["T-301", "T-302", "T-303", "T-305", "T-304"]  # open tickets in the order they were opened

DIAG_SYS = "You are a bicycle mechanic. From the ticket and the shop notes, list the jobs as JSON: {\"jobs\": [{\"part\": ...}]}."
QUOTE_SYS = "Write a short customer quote from the priced lines."


def brain(request):
    system = common.system_of(request)
    user = common.last_user(request)
    if system.startswith("You are a bicycle mechanic"):
        text = user.lower()
        jobs = []
        rules = [("squeal", "brake pads"), ("skip", "cassette"), ("tyre", "tyre"), ("flat", "tyre"),
                 ("shifter cable", "shifter cable"), ("spongy", "hydraulic bleed kit"), ("rusty", "chain"),
                 ("motor", "motor diagnostics"), ("battery", "battery check")]
        for word, part in rules:
            if word in text.split("notes:")[0] and part not in [j["part"] for j in jobs]:
                jobs.append({"part": part})
        if "speed sensor" in text:
            jobs.append({"part": "speed sensor", "why": "notes mention a speed sensor error"})
        return json.dumps({"jobs": jobs})
    if system.startswith("Write a short customer quote"):
        data = json.loads(user)
        return f"Quote for {data['ticket']}: {len(data['lines'])} jobs, total {data['total']:.2f} incl. labour."
    return "Sorry?"


@trajdebug.step(kind="input")
def intake_ticket(text: str) -> dict:
    m = re.match(r"Ticket (T-\d+), ([^:]+): (.+?), ([\d.c]+) wheels\. (.+) Budget (\d+)\.", text)
    return {"ticket": m.group(1), "customer": m.group(2), "bike": m.group(3), "wheel": m.group(4),
            "symptoms": m.group(5), "budget": float(m.group(6)), "text": text}


@trajdebug.step(kind="retrieval")
def recall_notes(customer: str) -> list[str]:
    notes = list(NOTES.get(customer, []))
    if _on("household_notes"):
        notes += HOUSEHOLD.get(customer, [])
    return notes


@trajdebug.step(kind="llm")
def diagnose(messages: list[dict]) -> dict:
    return common.chat(messages)


@trajdebug.step(kind="parse")
def parse_jobs(answer: dict) -> list[dict]:
    return [{"part": j["part"]} for j in json.loads(answer["content"])["jobs"]]


@trajdebug.step(kind="condition")
def route_ticket(ticket: dict, jobs: list[dict]) -> str:
    where = ticket["bike"] if _on("router_field") else ticket["text"]
    electric = "e-bike" in where.lower()
    return "e-bench" if electric else "bench-1"


@trajdebug.step(kind="retrieval")
def find_part(part: str, wheel: str) -> dict:
    for row in CATALOG:
        if row["part"] == part and (row["wheel"] in ("any", wheel) or _on("size_ignored")):
            return dict(row)
    raise LookupError(f"no catalog part '{part}' for {wheel} wheels")


GATEWAY = {"calls": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def check_stock(sku: str) -> dict:
    GATEWAY["calls"] += 1
    if GATEWAY["calls"] == 1:
        raise ConnectionError("warehouse gateway reset the connection")
    if _on("gateway_timeout") and sku == "CBL-SH-2100":
        try:
            raise TimeoutError("warehouse gateway timed out after 5 s")
        except TimeoutError:
            return {"sku": sku, "on_hand": 1, "source": "shelf count"}
    return {"sku": sku, "on_hand": STOCK[sku], "source": "warehouse", "restock": RESTOCK.get(sku)}


@trajdebug.step(kind="tool")
def labour_rates(parts: list[str]) -> dict:
    return {p: LABOUR[p] for p in parts}


@trajdebug.step(kind="other")
def compute_quote(ticket: str, parts: list[dict], rates: dict) -> dict:
    lines = [{"sku": p["sku"], "part": p["part"], "amount": p["price"] + rates[p["part"]]} for p in parts]
    return {"ticket": ticket, "lines": lines, "total": round(sum(l["amount"] for l in lines), 2)}


@trajdebug.step(kind="llm")
def write_quote(messages: list[dict]) -> dict:
    return common.chat(messages)


@trajdebug.step(kind="agent")
def quote_subagent(ticket: str, parts: list[dict]) -> dict:
    ref = ticket
    if _on("latest_ticket"):
        ref = BOARD[-1]
    rates = labour_rates([p["part"] for p in parts])
    quote = compute_quote(ref, parts, rates)
    text = write_quote([{"role": "system", "content": QUOTE_SYS}, {"role": "user", "content": json.dumps(quote)}])
    return {**quote, "text": text["content"]}


@trajdebug.step(kind="tool")
def order_part(sku: str, restock: str | None) -> dict:
    return {"sku": sku, "po": f"PO-{sku}", "due": restock or "2025-05-23"}


@trajdebug.step(kind="tool")
def reserve_parts(stock: list[dict], orders: list[dict]) -> dict:
    ordered = {o["sku"] for o in orders}
    for row in stock:
        if row["sku"] not in ordered and STOCK[row["sku"]] < 1:
            raise RuntimeError(f"cannot reserve {row['sku']}: 0 on hand in the warehouse")
    return {"reserved": [row["sku"] for row in stock if row["sku"] not in ordered], "on_order": sorted(ordered)}


@trajdebug.step(kind="state")
def save_job_card(ticket: dict, bench: str, quote: dict) -> dict:
    card = {"ticket": ticket["ticket"], "bench": bench, "quote_total": quote["total"]}
    trajdebug.current_run().state["job_card"] = card
    return card


@trajdebug.step(kind="tool")
def schedule_bench(bench: str, parts: list[dict]) -> dict:
    if bench != "e-bench" and any(p["part"] in ("motor diagnostics", "battery check") for p in parts):
        raise PermissionError(f"{bench} is not certified for e-bike motor and battery work")
    return {"bench": bench, "slot": "2025-05-20 09:00"}


@trajdebug.step(kind="condition")
def final_check(ticket: dict, parts: list[dict], quote: dict) -> str:
    for p in parts:
        if p["wheel"] not in ("any", ticket["wheel"]):
            raise ValueError(f"{p['sku']} fits {p['wheel']} wheels, ticket {ticket['ticket']} has {ticket['wheel']}")
    if quote["ticket"] != ticket["ticket"]:
        raise ValueError(f"quote is for ticket {quote['ticket']}, not {ticket['ticket']}")
    if quote["total"] > ticket["budget"]:
        raise ValueError(f"quote {quote['total']:.2f} over the budget {ticket['budget']:.2f}")
    return "ok"


@trajdebug.step(kind="tool")
def notify_customer(ticket: str, slot: dict, quote: dict) -> str:
    return f"{ticket}: booked {slot['slot']} on {slot['bench']}, {quote['text']}"


def record(key: str, path: str) -> None:
    GATEWAY["calls"] = 0
    text = INPUTS[key]
    try:
        with trajdebug.run(NAME, task=text, path=path):
            ticket = intake_ticket(text)
            notes = recall_notes(ticket["customer"])
            answer = diagnose([{"role": "system", "content": DIAG_SYS},
                               {"role": "user", "content": ticket["text"] + "\nShop notes: " + json.dumps(notes)}])
            jobs = parse_jobs(answer)
            bench = route_ticket(ticket, jobs)
            parts, stock = [], []
            for job in jobs:
                part = find_part(job["part"], ticket["wheel"])
                parts.append(part)
                stock.append(check_stock(part["sku"]))
            orders = [order_part(row["sku"], row.get("restock")) for row in stock if row["on_hand"] < 1]
            quote = quote_subagent(ticket["ticket"], parts)
            reserve_parts(stock, orders)
            save_job_card(ticket, bench, quote)
            slot = schedule_bench(bench, parts)
            final_check(ticket, parts, quote)
            notify_customer(ticket["ticket"], slot, quote)
    except Exception:
        pass
