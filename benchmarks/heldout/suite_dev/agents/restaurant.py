"""Restaurant search agent: plans a search, queries the directory, checks a table, answers."""

from __future__ import annotations

import json
import re

import trajdebug

from .common import llm_meta, mark_failure, mark_flow, mark_root, on


NAME = "restaurant-finder"
SUMMARY = "Recommends a restaurant with a free table; a final check reads the reply and verifies the city."
FAULTS = {
    "city_ignored": "the directory search tool ignores its `city` argument and answers from its default city (Lisbon)",
}


class WrongCityRecommendation(Exception):
    """The reply recommends a place outside the city the user asked about."""


DIRECTORY = [
    {
        "id": "lx-01",
        "name": "Jardim Verde",
        "city": "Lisbon",
        "cuisine": "vegetarian",
        "rating": 4.7,
        "address": "Rua da Rosa 41, Lisbon",
    },
    {
        "id": "lx-02",
        "name": "Horta da Graca",
        "city": "Lisbon",
        "cuisine": "vegetarian",
        "rating": 4.3,
        "address": "Largo da Graca 9, Lisbon",
    },
    {
        "id": "lx-03",
        "name": "Mar do Tejo",
        "city": "Lisbon",
        "cuisine": "seafood",
        "rating": 4.5,
        "address": "Cais do Sodre 12, Lisbon",
    },
    {
        "id": "lx-04",
        "name": "Trattoria Alfama",
        "city": "Lisbon",
        "cuisine": "italian",
        "rating": 4.2,
        "address": "Rua dos Remedios 88, Lisbon",
    },
    {
        "id": "lx-05",
        "name": "Sushi Chiado",
        "city": "Lisbon",
        "cuisine": "japanese",
        "rating": 4.6,
        "address": "Rua Garrett 20, Lisbon",
    },
    {
        "id": "op-01",
        "name": "Folha de Couve",
        "city": "Porto",
        "cuisine": "vegetarian",
        "rating": 4.5,
        "address": "Rua de Cedofeita 210, Porto",
    },
    {
        "id": "op-02",
        "name": "Cantinho do Peixe",
        "city": "Porto",
        "cuisine": "seafood",
        "rating": 4.6,
        "address": "Rua da Reboleira 7, Porto",
    },
    {
        "id": "op-03",
        "name": "Da Terra Baixa",
        "city": "Porto",
        "cuisine": "vegetarian",
        "rating": 4.1,
        "address": "Rua Mouzinho da Silveira 249, Porto",
    },
    {
        "id": "op-04",
        "name": "Marisqueira da Foz",
        "city": "Porto",
        "cuisine": "seafood",
        "rating": 4.3,
        "address": "Avenida Brasil 460, Porto",
    },
    {
        "id": "cb-01",
        "name": "O Pescador",
        "city": "Coimbra",
        "cuisine": "seafood",
        "rating": 4.4,
        "address": "Rua Direita 55, Coimbra",
    },
    {
        "id": "cb-02",
        "name": "Pasta Mondego",
        "city": "Coimbra",
        "cuisine": "italian",
        "rating": 4.3,
        "address": "Avenida Sa da Bandeira 3, Coimbra",
    },
    {
        "id": "fa-01",
        "name": "Forno di Faro",
        "city": "Faro",
        "cuisine": "italian",
        "rating": 4.4,
        "address": "Rua de Santo Antonio 30, Faro",
    },
    {
        "id": "fa-02",
        "name": "Ria Formosa Grill",
        "city": "Faro",
        "cuisine": "seafood",
        "rating": 4.2,
        "address": "Praca Ferreira de Almeida 4, Faro",
    },
    {
        "id": "br-01",
        "name": "Semente",
        "city": "Braga",
        "cuisine": "vegetarian",
        "rating": 4.6,
        "address": "Rua do Souto 61, Braga",
    },
]
FULLY_BOOKED = {("lx-01", "20:00"), ("op-02", "21:00")}

PLANS = {
    "r-opo-veg": {"city": "Porto", "cuisine": "vegetarian", "party": 4, "time": "20:00"},
    "r-cbr-sea": {"city": "Coimbra", "cuisine": "seafood", "party": 2, "time": "19:30"},
    "r-fao-ita": {"city": "Faro", "cuisine": "italian", "party": 6, "time": "20:30"},
    "r-lis-jap": {"city": "Lisbon", "cuisine": "japanese", "party": 2, "time": "21:00"},
    "r-opo-sea": {"city": "Porto", "cuisine": "seafood", "party": 3, "time": "21:00"},
    "r-brg-veg": {"city": "Braga", "cuisine": "vegetarian", "party": 2, "time": "13:00"},
    "r-fao-sea": {"city": "Faro", "cuisine": "seafood", "party": 5, "time": "20:00"},
    "r-cbr-ita": {"city": "Coimbra", "cuisine": "italian", "party": 4, "time": "19:00"},
    "r-lis-veg": {"city": "Lisbon", "cuisine": "vegetarian", "party": 4, "time": "20:00"},
}

FAILING = [
    {
        "fault": "city_ignored",
        "description": "Vegetarian dinner in Porto: the directory returns Lisbon places, the ranker and the reply pick one, the reply check finds a Lisbon address.",
        "input": {
            "id": "r-opo-veg",
            "message": "Looking for a vegetarian spot in Porto tonight, table for 4 around 8pm?",
            "expect_city": "Porto",
        },
    },
    {
        "fault": "city_ignored",
        "description": "Seafood in Coimbra: the search silently answers with Lisbon seafood; the final reply check fails on the city.",
        "input": {
            "id": "r-cbr-sea",
            "message": "any good seafood in coimbra for two, 19:30?",
            "expect_city": "Coimbra",
        },
    },
    {
        "fault": "city_ignored",
        "description": "Italian for six in Faro: Lisbon's trattoria is recommended instead; the reply check fails.",
        "input": {
            "id": "r-fao-ita",
            "message": "We're 6 people in Faro and craving Italian - somewhere for 20:30 please.",
            "expect_city": "Faro",
        },
    },
]

PASSING = [
    {
        "id": "r-lis-jap",
        "message": "Sushi in Lisbon for two at 9pm, something well rated.",
        "expect_city": "Lisbon",
    },
    {"id": "r-opo-sea", "message": "Porto, fish restaurant, 3 people, 21h.", "expect_city": "Porto"},
    {
        "id": "r-brg-veg",
        "message": "Vegetarian lunch in Braga tomorrow at 1pm for two of us",
        "expect_city": "Braga",
    },
    {
        "id": "r-fao-sea",
        "message": "Could you find a seafood restaurant in Faro for 5 at 8 pm?",
        "expect_city": "Faro",
    },
    {"id": "r-cbr-ita", "message": "Italian in Coimbra, party of four, 7pm.", "expect_city": "Coimbra"},
    {"id": "r-lis-veg", "message": "veggie dinner lisbon, 4 people, 20:00", "expect_city": "Lisbon"},
]

_CURRENT: dict = {}


@trajdebug.step(kind="llm")
def plan_search(user_message: str) -> str:
    llm_meta()
    return "Search plan:\n" + json.dumps(PLANS[_CURRENT["id"]], indent=1)


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> dict:
    body = text[text.index("{") :]
    plan = json.loads(body)
    plan["party"] = int(plan["party"])
    return plan


@trajdebug.step(kind="tool")
def search_restaurants(city: str, cuisine: str, limit: int = 5) -> dict:
    where = city
    if on("city_ignored"):
        where = "Lisbon"  # the city filter is dropped; the service falls back to its home city
        mark_root()
    hits = [dict(r) for r in DIRECTORY if r["city"] == where and r["cuisine"] == cuisine][:limit]
    return {"query": {"cuisine": cuisine, "city": city}, "results": hits, "count": len(hits)}


@trajdebug.step(kind="other")
def rank_results(response: dict, party: int) -> list:
    ranked = sorted(response["results"], key=lambda r: (-r["rating"], r["name"]))
    mark_flow()
    return ranked[:3]


@trajdebug.step(kind="tool")
def check_availability(restaurant_id: str, time: str, party: int) -> dict:
    free = (restaurant_id, time) not in FULLY_BOOKED and party <= 8
    return {"restaurant_id": restaurant_id, "time": time, "party": party, "available": free}


@trajdebug.step(kind="llm")
def write_reply(prompt: str) -> str:
    llm_meta()
    m = re.search(r"PICK: (.+?) \| (.+?) \| (\d\d:\d\d)", prompt)
    name, address, time = m.groups()
    mark_flow()
    return f"Good news! {name} ({address}) has a table for you at {time}. Enjoy your meal!"


@trajdebug.step(kind="condition")
def validate_reply(reply: str, city: str) -> bool:
    m = re.search(r"\(([^)]*)\)", reply)
    address = m.group(1) if m else ""
    if not address.endswith(city):
        mark_failure()
        raise WrongCityRecommendation(f"reply sends the user to '{address}', which is not in {city}")
    return True


def run_agent(inp: dict, run) -> str:
    _CURRENT.clear()
    _CURRENT.update(inp)
    plan = parse_plan(plan_search(inp["message"]))
    found = search_restaurants(plan["city"], plan["cuisine"])
    shortlist = rank_results(found, plan["party"])
    chosen = None
    for cand in shortlist:
        if check_availability(cand["id"], plan["time"], plan["party"])["available"]:
            chosen = cand
            break
    if chosen is None:
        reply = "Sorry, nothing is free at that time."
    else:
        prompt = (
            f"User asked: {inp['message']}\nWrite a short friendly reply recommending this place.\n"
            f"PICK: {chosen['name']} | {chosen['address']} | {plan['time']}"
        )
        reply = write_reply(prompt)
    validate_reply(reply, inp["expect_city"])
    return reply
