"""Research agent: plans a web query, reads pages, extracts facts, answers."""

from __future__ import annotations

import json
import re

import trajdebug

from .common import llm_meta, mark_failure, mark_flow, mark_root, on


NAME = "research-assistant"
SUMMARY = "Answers factual questions from a small web corpus: plan query, search, fetch, extract, answer."
FAULTS = {
    "query_off_topic": "the planning LLM writes a search query about a different topic with the same name (the explorer instead of the bridge)",
}


class ExtractionFailed(Exception):
    """The extraction step produced no usable value for a requested fact."""


class AnswerCheckFailed(Exception):
    """The final answer disagrees with the reference."""


CORPUS = [
    {
        "url": "https://ex.org/vdg-bridge",
        "title": "Vasco da Gama Bridge - cable-stayed bridge over the Tagus",
        "keywords": {"vasco", "gama", "bridge", "tagus", "lisbon"},
        "text": "The Vasco da Gama Bridge spans the Tagus estuary near Lisbon. It opened in 1998. Total length: 12.3 km.",
    },
    {
        "url": "https://ex.org/vdg-explorer",
        "title": "Vasco da Gama - Portuguese explorer",
        "keywords": {"vasco", "gama", "explorer", "voyage", "india", "navigator"},
        "text": "Vasco da Gama was a Portuguese explorer who reached India by sea in 1498, sailing around the Cape of Good Hope.",
    },
    {
        "url": "https://ex.org/vdg-voyage",
        "title": "The first voyage to India (1497-1499)",
        "keywords": {"vasco", "gama", "voyage", "india", "fleet"},
        "text": "The fleet left Lisbon on 8 July 1497 with four ships and about 170 men.",
    },
    {
        "url": "https://ex.org/mercury-planet",
        "title": "Mercury (planet) - the innermost planet",
        "keywords": {"mercury", "planet", "orbit", "sun", "solar"},
        "text": "Mercury orbits the Sun every 88 days. A solar day on Mercury lasts 176 Earth days. Mean radius: 2439.7 km.",
    },
    {
        "url": "https://ex.org/mercury-element",
        "title": "Mercury (element) - Hg, atomic number 80",
        "keywords": {"mercury", "element", "metal", "hg", "chemistry"},
        "text": "Mercury is a chemical element with symbol Hg and atomic number 80. It is liquid at room temperature; it boils at 356.7 C.",
    },
    {
        "url": "https://ex.org/jaguar-animal",
        "title": "Jaguar - the largest cat of the Americas",
        "keywords": {"jaguar", "cat", "panthera", "animal", "americas"},
        "text": "The jaguar (Panthera onca) can reach about 80 km/h in short bursts. Adults weigh 56 to 96 kg.",
    },
    {
        "url": "https://ex.org/jaguar-cars",
        "title": "Jaguar Cars - British luxury car maker",
        "keywords": {"jaguar", "cars", "coventry", "luxury", "automaker"},
        "text": "Jaguar Cars was founded in 1922 in Blackpool as the Swallow Sidecar Company and is now based in Coventry.",
    },
    {
        "url": "https://ex.org/eiffel",
        "title": "Eiffel Tower",
        "keywords": {"eiffel", "tower", "paris"},
        "text": "The Eiffel Tower in Paris was completed in 1889. It is 330 m tall including antennas.",
    },
    {
        "url": "https://ex.org/danube",
        "title": "Danube",
        "keywords": {"danube", "river", "europe"},
        "text": "The Danube is Europe's second-longest river at 2850 km. It flows into the Black Sea.",
    },
    {
        "url": "https://ex.org/python",
        "title": "Python (programming language)",
        "keywords": {"python", "programming", "language"},
        "text": "Python was first released in 1991 by Guido van Rossum. Python 3.0 was released in 2008.",
    },
    {
        "url": "https://ex.org/everest",
        "title": "Mount Everest",
        "keywords": {"everest", "mountain", "himalaya"},
        "text": "Mount Everest is 8849 m high. It was first climbed in 1953 by Hillary and Tenzing.",
    },
    {
        "url": "https://ex.org/ponte-25",
        "title": "25 de Abril Bridge",
        "keywords": {"25", "abril", "bridge", "lisbon", "tagus"},
        "text": "The 25 de Abril Bridge in Lisbon opened in 1966. Total length: 2.28 km.",
    },
    {
        "url": "https://ex.org/amazon-river",
        "title": "Amazon River",
        "keywords": {"amazon", "river", "brazil"},
        "text": "The Amazon River is about 6400 km long. It discharges into the Atlantic Ocean.",
    },
]

# (right query, off-topic query, facts: name -> regex, reference answer)
QUESTIONS = {
    "q-vdg": (
        "Vasco da Gama bridge Tagus Lisbon",
        "Vasco da Gama explorer voyage India",
        {"opening_year": r"opened in (\d{4})", "length_km": r"length: ([\d.]+) km"},
        {"opening_year": "1998", "length_km": "12.3"},
    ),
    "q-mercury": (
        "Mercury planet solar day orbit",
        "Mercury element metal Hg chemistry",
        {"solar_day_earth_days": r"solar day on Mercury lasts (\d+) Earth days"},
        {"solar_day_earth_days": "176"},
    ),
    "q-jaguar": (
        "jaguar animal cat Panthera speed",
        "Jaguar cars luxury automaker Coventry",
        {"top_speed_kmh": r"about (\d+) km/h"},
        {"top_speed_kmh": "80"},
    ),
    "q-eiffel": ("Eiffel tower Paris height", None, {"height_m": r"It is (\d+) m tall"}, {"height_m": "330"}),
    "q-danube": ("Danube river Europe length", None, {"length_km": r"at (\d+) km"}, {"length_km": "2850"}),
    "q-python": (
        "Python programming language release",
        None,
        {"first_release": r"first released in (\d{4})"},
        {"first_release": "1991"},
    ),
    "q-everest": (
        "Everest mountain Himalaya first ascent",
        None,
        {"first_ascent": r"first climbed in (\d{4})"},
        {"first_ascent": "1953"},
    ),
    "q-ponte25": (
        "25 de Abril bridge Lisbon opening",
        None,
        {"opening_year": r"opened in (\d{4})"},
        {"opening_year": "1966"},
    ),
    "q-amazon": (
        "Amazon river Brazil length",
        None,
        {"length_km": r"about (\d+) km long"},
        {"length_km": "6400"},
    ),
}

FAILING = [
    {
        "fault": "query_off_topic",
        "description": "Bridge question: the planner searches for the explorer; search and fetch return voyage pages; the extraction finds no opening year and the fact parser raises.",
        "input": {"id": "q-vdg", "task": "When did the Vasco da Gama bridge open, and how long is it?"},
    },
    {
        "fault": "query_off_topic",
        "description": "Planet question planned as a chemistry query; pages about the element; the day-length fact is missing and parsing fails.",
        "input": {"id": "q-mercury", "task": "How many Earth days does one solar day on Mercury last?"},
    },
    {
        "fault": "query_off_topic",
        "description": "Jaguar top speed planned as a query about the car maker; extraction has no speed; the fact parser raises.",
        "input": {"id": "q-jaguar", "task": "how fast can a jaguar run?"},
    },
]

PASSING = [
    {"id": "q-eiffel", "task": "How tall is the Eiffel Tower?"},
    {"id": "q-danube", "task": "What's the length of the Danube?"},
    {"id": "q-python", "task": "In which year was Python first released?"},
    {"id": "q-everest", "task": "When was Everest first climbed?"},
    {"id": "q-ponte25", "task": "When did Lisbon's 25 de Abril bridge open?"},
    {"id": "q-amazon", "task": "How long is the Amazon river?"},
]

_CURRENT: dict = {}


@trajdebug.step(kind="llm")
def llm_call(messages: list) -> str:
    """Scripted chat model (plan / extract / answer, by the system prompt)."""
    llm_meta()
    system, user = messages[0]["content"], messages[-1]["content"]
    q = QUESTIONS[_CURRENT["id"]]
    if system.startswith("You plan web searches"):
        query = q[0]
        if on("query_off_topic") and q[1]:
            query = q[1]
            mark_root()
        return json.dumps({"query": query, "facts": list(q[2]), "max_pages": 2})
    if system.startswith("You extract facts"):
        facts = {}
        for name, pattern in q[2].items():
            m = re.search(pattern, user)
            facts[name] = m.group(1) if m else None
        mark_flow()
        return "```json\n" + json.dumps(facts) + "\n```"
    facts = json.loads(user.split("FACTS:", 1)[1])
    return "Answer: " + "; ".join(f"{k.replace('_', ' ')} = {v}" for k, v in facts.items())


@trajdebug.step(kind="parse")
def parse_search_plan(completion: str) -> dict:
    plan = json.loads(completion)
    mark_flow()
    return {"query": plan["query"], "facts": plan["facts"], "max_pages": int(plan.get("max_pages", 2))}


@trajdebug.step(kind="tool")
def web_search(query: str, k: int = 3) -> list:
    words = set(re.findall(r"[a-z0-9]+", query.lower()))
    scored = sorted(CORPUS, key=lambda d: (-len(words & d["keywords"]), d["url"]))
    hits = [{"url": d["url"], "title": d["title"]} for d in scored[:k] if len(words & d["keywords"]) >= 2]
    mark_flow()
    return hits


@trajdebug.step(kind="tool")
def fetch_page(url: str) -> str:
    doc = next(d for d in CORPUS if d["url"] == url)
    if not _CURRENT.get("fetched"):
        _CURRENT["fetched"] = True
        mark_flow()
    return f"<html><title>{doc['title']}</title><body><p>{doc['text']}</p></body></html>"


@trajdebug.step(kind="parse")
def parse_facts(completion: str, wanted: list) -> dict:
    body = completion.strip().removeprefix("```json").removesuffix("```")
    facts = json.loads(body)
    for name in wanted:
        if facts.get(name) in (None, ""):
            mark_failure()
            raise ExtractionFailed(f"no value for '{name}' in the extracted facts {facts}")
    return facts


@trajdebug.step(kind="condition")
def check_answer(answer: str, reference: dict) -> bool:
    for name, value in reference.items():
        if value not in answer:
            raise AnswerCheckFailed(f"answer lacks the reference {name}={value}")
    return True


def run_agent(inp: dict, run) -> str:
    _CURRENT.clear()
    _CURRENT.update(inp)
    plan = parse_search_plan(
        llm_call(
            [
                {
                    "role": "system",
                    "content": "You plan web searches. Reply with JSON {query, facts, max_pages}.",
                },
                {"role": "user", "content": inp["task"]},
            ]
        )
    )
    hits = web_search(plan["query"])
    pages = [fetch_page(h["url"]) for h in hits[: plan["max_pages"]]]
    extraction = llm_call(
        [
            {
                "role": "system",
                "content": "You extract facts from web pages. Reply with a JSON object; use null when a fact is absent.",
            },
            {
                "role": "user",
                "content": f"Question: {inp['task']}\nFacts: {', '.join(plan['facts'])}\n\n"
                + "\n\n".join(pages),
            },
        ]
    )
    facts = parse_facts(extraction, plan["facts"])
    answer = llm_call(
        [
            {"role": "system", "content": "You answer briefly from the facts given."},
            {"role": "user", "content": f"Question: {inp['task']}\nFACTS:{json.dumps(facts)}"},
        ]
    )
    check_answer(answer, QUESTIONS[inp["id"]][3])
    return answer
