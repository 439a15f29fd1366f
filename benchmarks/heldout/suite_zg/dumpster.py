"""Dumpster rental order desk, recorded with the trajdebug SDK."""

from __future__ import annotations

import json
from pathlib import Path

import trajdebug
from openai import OpenAI

from .kit import active

AGENT = "dumpster-rental"
ROUTE = "sdk"
DOMAIN = "dumpster rental"
SHAPE = "geocode -> permit rules (retrieval) -> parse permit -> rate per size -> tonnage (LLM) -> weight check -> size (LLM) -> drop-off sub-agent -> invoice -> order state -> submit"
EXT = "jsonl"

PERMIT_DOCS = [
    {"id": "doc-il-spr", "city": "Springfield, IL",
     "text": "Street placement permit required: yes; max days: 7; fee: $65; permit prefix: SPI-"},
    {"id": "doc-or-spr", "city": "Springfield, OR",
     "text": "Street placement permit required: yes; max days: 21; fee: $40; permit prefix: SPO-"},
    {"id": "doc-il-dec", "city": "Decatur, IL",
     "text": "Street placement permit required: no; max days: 30; fee: $0; permit prefix: DEC-"},
]
TARIFF = {"10yd": 289.0, "20yd": 427.0, "30yd": 512.0}
LAST_SEASON = {"10yd": 265.0, "20yd": 389.0, "30yd": 470.0}
RATING_T = {"10yd": 2.0, "20yd": 4.0, "30yd": 6.0}
INPUTS = {
    "a": {"order": "DR-5521", "address": "14 Elm Row, Springfield, IL", "debris": "kitchen remodel: cabinets, drywall, flooring",
          "placement": "street", "days": 5, "dropoff": "2026-08-05", "sizes": ["10yd", "20yd", "30yd"]},
    "b": {"order": "DR-5580", "address": "3 Mill Lane, Springfield, IL", "debris": "garage clear-out: furniture, boxes, a sofa",
          "placement": "street", "days": 6, "dropoff": "2026-08-12", "sizes": ["10yd", "20yd"]},
    "r1": {"order": "DR-5402", "address": "88 Oak St, Decatur, IL", "debris": "roof tear-off: shingles", "placement": "driveway",
           "days": 10, "dropoff": "2026-07-20", "sizes": ["20yd", "30yd"]},
    "r2": {"order": "DR-5433", "address": "2 Birch Ct, Springfield, IL", "debris": "yard waste: branches, soil bags",
           "placement": "street", "days": 4, "dropoff": "2026-07-24", "sizes": ["10yd", "20yd"]},
    "r3": {"order": "DR-5460", "address": "51 Pine Ave, Decatur, IL", "debris": "basement clean-out: boxes, old carpet",
           "placement": "driveway", "days": 7, "dropoff": "2026-07-28", "sizes": ["10yd", "20yd", "30yd"]},
    "r4": {"order": "DR-5490", "address": "7 Cedar Rd, Springfield, IL", "debris": "bathroom remodel: tile, vanity",
           "placement": "street", "days": 3, "dropoff": "2026-08-01", "sizes": ["10yd", "20yd"]},
}
REFS = ["r1", "r2", "r3", "r4"]
_HEAVY = {"tile": 1.2, "shingles": 3.1, "concrete": 9.0, "drywall": 1.4, "soil": 1.5}


def policy(request):
    msgs = request.body["messages"]
    task = msgs[0]["content"].split(":", 1)[0]
    data = json.loads(msgs[-1]["content"])
    if task == "TONNAGE":
        text = " ".join([data["debris"], *data.get("notes", [])])
        tons = 0.8 + sum(v for k, v in _HEAVY.items() if k in text)
        return json.dumps({"estimated_tons": round(tons, 1)})
    if task == "SIZE":
        fits = [s for s in data["sizes"] if RATING_T[s] >= data["estimated_tons"]]
        return json.dumps({"size": fits[0] if fits else data["sizes"][-1]})
    if task == "TRUCK":
        trucks = [t for t in data["trucks"] if data["size"] in t["carries"]]
        return json.dumps({"truck": trucks[0]["id"]})
    return "{}"


def record(server, inp: dict, out: Path) -> None:
    client = OpenAI(base_url=server.base_url, api_key="local", max_retries=0)
    rate_cache = {k: {"size": k, "price": v, "season": "2025"} for k, v in LAST_SEASON.items()}

    def chat(name: str, system: str, payload: dict) -> dict:
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}]
        with trajdebug.step(name, kind="llm", input={"messages": msgs}) as s:
            reply = client.chat.completions.create(model=server.model, messages=msgs)
            s.output = {"role": "assistant", "content": reply.choices[0].message.content}
        return json.loads(s.output["content"])

    @trajdebug.step(kind="tool")
    def geocode_address(address: str) -> dict:
        street, city, state = [p.strip() for p in address.split(",")]
        return {"street": street, "city": f"{city}, {state}", "zone": "R2"}

    @trajdebug.step(kind="retrieval")
    def search_permit_rules(city: str) -> list:
        if active("dump-4"):
            name = city.split(",")[0]
            return [d for d in PERMIT_DOCS if d["city"].startswith(name)][-1:]
        return [d for d in PERMIT_DOCS if d["city"] == city]

    @trajdebug.step(kind="parse")
    def extract_permit(docs: list) -> dict:
        fields = dict(part.split(": ", 1) for part in docs[0]["text"].split("; "))
        permit = {"required": fields["Street placement permit required"] == "yes",
                  "fee": float(fields["fee"].lstrip("$")), "prefix": fields["permit prefix"], "city": docs[0]["city"]}
        if not active("dump-2"):
            permit["max_days"] = int(fields["max days"])
        return permit

    @trajdebug.step(kind="tool")
    def get_rate(size: str, season: str) -> dict:
        if size == "20yd" and active("dump-1"):
            return rate_cache[size]
        return {"size": size, "price": TARIFF[size], "season": season}

    @trajdebug.step(kind="condition")
    def check_weight_limit(estimate: dict) -> str:
        heaviest = max(RATING_T.values())
        if estimate["estimated_tons"] > heaviest:
            raise ValueError(f"estimated load {estimate['estimated_tons']} t exceeds the heaviest container "
                             f"rating ({heaviest} t)")
        return "within rating"

    @trajdebug.step(kind="tool")
    def check_yard_stock(size: str, date: str) -> list:
        return [{"id": "TR-2", "carries": ["10yd", "20yd"]}, {"id": "TR-4", "carries": ["20yd", "30yd"]}]

    @trajdebug.step(kind="agent")
    def schedule_dropoff(size: str, date: str) -> dict:
        trucks = check_yard_stock(size, date)
        truck = chat("pick_truck", "TRUCK: pick a truck that carries the container", {"size": size, "trucks": trucks})
        return {"truck": truck["truck"], "date": date}

    @trajdebug.step(kind="other")
    def compute_invoice(rate: dict, permit: dict, days: int, placement: str) -> dict:
        fee = permit["fee"] if placement == "street" and permit["required"] else 0.0
        extra_days = max(0, days - 7) * 12.0
        return {"container": rate["price"], "permit_fee": fee, "extra_days": extra_days,
                "total": rate["price"] + fee + extra_days, "max_days": permit.get("max_days", 30)}

    @trajdebug.step(kind="state")
    def save_order(order: str, slot: dict, days: int) -> dict:
        y, m, d = slot["date"].split("-")
        pickup_day = int(d) + days
        record_ = {"order": order, "dropoff": slot["date"], "pickup": f"{y}-{m}-{pickup_day:02d}", "truck": slot["truck"]}
        if active("dump-5"):
            record_["pickup"] = slot["date"]
        trajdebug.current_run().state["order"] = record_
        return record_

    @trajdebug.step(kind="tool")
    def submit_rental(payload: dict) -> dict:
        order = trajdebug.current_run().state["order"]
        if order["pickup"] <= order["dropoff"]:
            raise RuntimeError(f"HTTP 400 from dispatch: pickup {order['pickup']} is not after drop-off {order['dropoff']}")
        current = TARIFF[payload["size"]]
        if payload["invoice"]["container"] != current:
            raise RuntimeError(f"HTTP 409 from billing: quoted container price {payload['invoice']['container']:.2f} "
                               f"does not match tariff {current:.2f} for {payload['size']}")
        if payload["placement"] == "street" and payload["days"] > 0:
            city_rules = next(d for d in PERMIT_DOCS if d["city"] == payload["city"])
            limit = int(city_rules["text"].split("max days: ")[1].split(";")[0])
            if payload["invoice"]["max_days"] != limit:
                raise RuntimeError(f"HTTP 422 from permits: street placement for {payload['city']} is limited to "
                                   f"{limit} days, order states {payload['invoice']['max_days']}")
            if not payload["permit"]["prefix"].startswith(city_rules["text"].split("prefix: ")[1]):
                raise RuntimeError(f"HTTP 422 from permits: permit prefix {payload['permit']['prefix']} is not issued by "
                                   f"{payload['city']}")
        return {"order": payload["order"], "status": "scheduled"}

    with trajdebug.run(AGENT, path=str(out), task=f"rent a dumpster for order {inp['order']}") as run:
        with trajdebug.step("read_order", kind="input") as s:
            s.output = dict(inp)
        place = geocode_address(inp["address"])
        permit = extract_permit(search_permit_rules(place["city"]))
        rates = {size: get_rate(size, "2026") for size in inp["sizes"]}
        notes = ["previous order DR-5519 at 16 Elm Row: concrete slab breakout, 3 pallets of block"] \
            if active("dump-3") else []
        estimate = chat("estimate_tonnage", "TONNAGE: estimate the debris weight in tonnes",
                        {"debris": inp["debris"], "notes": notes, "address": inp["address"]})
        check_weight_limit(estimate)
        size = chat("choose_size", "SIZE: choose the smallest container rated for the load",
                    {"sizes": inp["sizes"], "estimated_tons": estimate["estimated_tons"]})["size"]
        slot = schedule_dropoff(size, inp["dropoff"])
        invoice = compute_invoice(rates[size], permit, inp["days"], inp["placement"])
        save_order(inp["order"], slot, inp["days"])
        submit_rental({"order": inp["order"], "size": size, "city": place["city"], "placement": inp["placement"],
                       "days": inp["days"], "invoice": invoice, "permit": permit})
        run.state["done"] = True


CASES_SPEC = [
    ("dump-1", "stale_data", "a", "get_rate", '"season": "2025"', "submit_rental",
     "The rate lookup for the 20yd container answers last season's cached tariff, which billing rejects at submission."),
    ("dump-2", "lossy_parsing", "b", "extract_permit", "SPI-", "submit_rental",
     "The permit parser drops the city's maximum street-placement days, so the invoice states the 30-day default."),
    ("dump-3", "context_pollution", "a", "estimate_tonnage", "11.2", "check_weight_limit",
     "The tonnage estimate is given another customer's concrete job notes and estimates a load no container is rated for."),
    ("dump-4", "wrong_retrieval", "b", "search_permit_rules", "doc-or-spr", "submit_rental",
     "The permit rules search matches the city name only and returns Springfield, OR rules for a Springfield, IL address."),
    ("dump-5", "bad_memory_write", "a", "save_order", '"order"', "submit_rental",
     "The order write stores the drop-off date as the pickup date instead of adding the rental days."),
]
