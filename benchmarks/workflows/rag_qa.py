"""Workflow: retrieval-augmented question answering over two conversation turns.

A support assistant answers a customer over two turns, each recorded as its
own run (the second ``continues`` the first).  Turn 1 loads the customer's
profile, remembers the facts it needs later (LLM -> memory store), and
answers a returns question; turn 2 recalls the memory and answers a shipping
question.  Each answer is retrieval-augmented: rewrite the question into a
search request (LLM, JSON) -> parse it -> route it to an index (a branch) ->
open the index named by the configuration -> retrieve -> answer (LLM) ->
check the answer against the policy of record.
"""

from __future__ import annotations

import json
import re
from typing import Any

import trajdebug
from benchmarks.faults import Case, Injector, TransientError
from benchmarks.workflows._base import CheckFailed, Result, record


NAME = "rag-qa"
FAULTS = ("stale-fact", "bad-tool-args", "json-repair-drop", "wrong-branch", "truncated-output", "env-change")
REGIONS = ("EU", "US", "UK")
TIERS = ("gold", "silver", "bronze")
PRODUCTS = ("headphones", "kettle", "backpack", "monitor", "desk lamp", "blender")


class Policies:
    """The policy of record and its two index versions (v2 current, v1 outdated)."""

    def __init__(self, inj: Injector) -> None:
        self.returns = {r: inj.rng.choice((14, 21, 28, 30, 45)) for r in REGIONS}
        # Distinct fees: a wrong tier must give a wrong answer.
        fees = inj.rng.sample((0.0, 2.99, 3.99, 4.99, 6.99, 7.99, 9.99), len(TIERS))
        self.shipping = dict(zip(TIERS, fees))
        self.index: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for version, bump in (("v2", 0), ("v1", 7)):
            self.index[version] = {
                "returns": [
                    {
                        "id": f"{version}-returns-{r}",
                        "meta": {"region": r},
                        "text": f"Returns policy ({r}): items can be returned within {self.returns[r] + bump} days of delivery. "
                        f"Refunds are issued within 5 business days after the item arrives at our warehouse.",
                    }
                    for r in REGIONS
                ],
                "shipping": [
                    {
                        "id": f"{version}-shipping-{t}",
                        "meta": {"tier": t},
                        "text": f"Shipping for {t} members: standard shipping costs {self.shipping[t] + bump / 7:.2f} USD per order. "
                        f"Express shipping is available in most regions for an extra fee.",
                    }
                    for t in TIERS
                ],
            }


class ScriptedModel:
    """A deterministic stand-in for the LLM."""

    def __init__(self, inj: Injector) -> None:
        self.inj = inj

    def remember(self, profile: dict[str, Any]) -> str:
        facts = {"customer": profile["id"], "tier": profile["tier"], "region": profile["region"]}
        if self.inj.on("stale-fact"):
            facts["tier"] = next(t for t in TIERS if t != profile["tier"])  # misremembers the tier
        return json.dumps(facts)

    def rewrite(self, question: str, facts: dict[str, Any]) -> str:
        topic = "returns" if "return" in question else "shipping"
        filters = {"region": facts["region"]} if topic == "returns" else {"tier": facts["tier"]}
        if self.inj.on("bad-tool-args"):
            key = next(iter(filters))
            options = REGIONS if key == "region" else TIERS
            filters[key] = next(o for o in options if o != filters[key])
        text = json.dumps({"query": question.lower().rstrip("?"), "topic": topic, "filters": filters})
        if self.inj.on("json-repair-drop"):
            text = text.replace('"filters": {', '"filters": {,')  # a stray comma inside the filters
        return text

    def answer(self, question: str, chunks: list[dict[str, Any]]) -> str:
        for c in chunks:
            m = re.search(r"within (\d+) days", c["text"]) or re.search(r"costs ([\d.]+) USD", c["text"])
            if m:
                unit = "days" if "days" in m.group(0) else "USD"
                return f"{m.group(1)} {unit} (source: {c['id']})"
        return "I could not find that in our policies."


class Assistant:
    """The assistant: decorated functions; no ``deps=``."""

    def __init__(self, inj: Injector, pol: Policies, config: dict[str, str], memory: dict[str, str]) -> None:
        self.inj, self.pol, self.config, self.memory, self.llm = inj, pol, config, memory, ScriptedModel(inj)

    @trajdebug.step(kind="input")
    def receive(self, message: str) -> str:
        return message

    @trajdebug.step(kind="tool")
    def load_profile(self, customer: str, profiles: dict[str, dict[str, Any]]) -> dict[str, Any]:
        return dict(profiles[customer])

    @trajdebug.step(kind="llm")
    def remember_facts(self, profile: dict[str, Any]) -> str:
        return self.llm.remember(profile)

    @trajdebug.step(kind="tool")
    def save_memory(self, customer: str, facts: str) -> bool:
        self.memory[customer] = facts
        trajdebug.writes(f"memory:{customer}")
        return True

    @trajdebug.step(kind="tool")
    def recall_memory(self, customer: str) -> dict[str, Any]:
        trajdebug.reads(f"memory:{customer}")
        return dict(json.loads(self.memory[customer]))

    @trajdebug.step(kind="llm")
    def rewrite_query(self, question: str, facts: dict[str, Any]) -> str:
        return self.llm.rewrite(question, facts)

    @trajdebug.step(kind="parse")
    def parse_request(self, text: str) -> dict[str, Any]:
        try:
            return dict(json.loads(text))
        except json.JSONDecodeError:
            # Lenient repair: drop the nested object that does not parse.
            return dict(json.loads(re.sub(r',\s*"filters": \{[^}]*\}', "", text)))

    @trajdebug.step(kind="tool")
    def open_index(self, topic: str) -> dict[str, Any]:
        version = self.config["KB_INDEX_VERSION"]
        if self.inj.on("env-change"):
            version = "v1"  # the deployment's config now points at last year's index snapshot
        trajdebug.uses_env("config:KB_INDEX_VERSION", version)
        self.inj.warning(f"index {version}/{topic} was built with an older tokenizer")
        return {"version": version, "topic": topic, "size": len(self.pol.index[version][topic])}

    @trajdebug.retry(attempts=3, on=(TransientError,), reason="policy: retry resets")
    @trajdebug.step(kind="retrieval")
    def retrieve(self, index: dict[str, Any], query: str, filters: dict[str, Any]) -> list[dict[str, Any]]:
        self.inj.transient("retrieve")
        chunks = self.pol.index[index["version"]][index["topic"]]
        words = set(query.split())
        scored = sorted(
            chunks,
            key=lambda c: (
                -sum(c["meta"].get(k) == v for k, v in filters.items()),
                -len(words & set(c["text"].lower().split())),
                c["id"],
            ),
        )
        hits = [dict(c) for c in scored[:2]]
        if self.inj.on("truncated-output"):
            for h in hits:
                h["text"] = h["text"][:28] + "..."  # the retriever's snippet limit
        return hits

    @trajdebug.step(kind="llm")
    def answer(self, question: str, chunks: list[dict[str, Any]]) -> str:
        return self.llm.answer(question, chunks)

    @trajdebug.step(kind="output")
    def check_answer(self, question: str, answer: str, profile: dict[str, Any]) -> str:
        expected = (
            f"{self.pol.returns[profile['region']]} days"
            if "return" in question
            else f"{self.pol.shipping[profile['tier']]:.2f} USD"
        )
        if not answer.startswith(expected):
            raise CheckFailed(
                f"answer check failed: said {answer.split(' (')[0]!r}, the policy of record says {expected!r}"
            )
        return answer

    @trajdebug.step(kind="agent")
    def respond(self, question: str, facts: dict[str, Any], profile: dict[str, Any]) -> str:
        req = self.parse_request(self.rewrite_query(question, facts))
        with trajdebug.step("route", kind="condition", input={"request": req}) as decision:
            topic = req["topic"]
            if self.inj.on("wrong-branch"):
                topic = "returns" if topic == "shipping" else "shipping"
            decision.output = topic
        with trajdebug.branch(decision):
            index = self.open_index(topic)
            chunks = self.retrieve(index, req["query"], req.get("filters", {}))
        return str(self.check_answer(question, self.answer(question, chunks), profile))

    def turn1(self, customer: str, profiles: dict[str, dict[str, Any]], product: str) -> str:
        q = self.receive(f"Hi, I am customer {customer}. What is the return window for my {product}?")
        profile = self.load_profile(customer, profiles)
        self.save_memory(customer, self.remember_facts(profile))
        facts = {"region": profile["region"], "tier": profile["tier"]}
        return str(self.respond(q, facts, profile))

    def turn2(self, customer: str, profiles: dict[str, dict[str, Any]]) -> str:
        q = self.receive("Thanks. And how much is standard shipping for me?")
        facts = self.recall_memory(customer)
        return str(self.respond(q, facts, profiles[customer]))


def run(case: Case) -> Result:
    """Run the two turns for ``case`` (turn 2 continues turn 1)."""
    inj = Injector(case)
    pol = Policies(inj)
    customer = f"C-{inj.rng.randint(1000, 9999)}"
    # Unfiltered retrieval ranks the bronze chunk first: draw a tier for which losing the filter matters.
    tiers = TIERS[:2] if case.fault == "json-repair-drop" else TIERS
    profiles = {customer: {"id": customer, "tier": inj.rng.choice(tiers), "region": inj.rng.choice(REGIONS)}}
    memory: dict[str, str] = {}
    bot = Assistant(inj, pol, {"KB_INDEX_VERSION": "v2"}, memory)
    product = inj.rng.choice(PRODUCTS)
    # The stale fact is planted in turn 1; every other fault in turn 2.
    inj.armed = case.fault == "stale-fact"
    first = record(
        f"{NAME}-turn1",
        inj,
        lambda run: bot.turn1(customer, profiles, product),
        truth=False,
        metadata={"turn": 1},
    )
    inj.armed = case.fault != "stale-fact"
    second = record(
        f"{NAME}-turn2",
        inj,
        lambda run: bot.turn2(customer, profiles),
        continues=first.run_id,
        metadata={"turn": 2},
    )
    return Result(second, (first,))
