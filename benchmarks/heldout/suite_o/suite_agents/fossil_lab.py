"""Fossil-collection loan handling (OpenAI Agents SDK on the Responses API, recorded by TrajdebugProcessor).

A loans-desk agent hands off to the collections manager, who reads the request's correspondence, searches
the catalogue, looks up the specimen and the export permit in parallel, asks a conservator sub-agent
(as_tool, its own preparation-log tool) for a condition report, and creates the loan with the loans
office, whose refusal ends the run.
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.heldout.suite_o import kit

from trajdebug.testing import Reply, tool_call


NAME = "fossil-loans"
ROUTE = "openai_agents"
DOMAIN = "natural-history fossil loans"
SHAPE = "Agents SDK (Responses API): desk -> hand-off to collections manager; correspondence, catalogue search, parallel specimen + permit look-ups (the specimen look-up retried after a non-fatal tool error), conservator as_tool sub-agent with its own tool, loan creation that raises"

TODAY = "2026-03-02"

SPECIMENS = {
    "PV-4417": {
        "title": "Ichthyosaurus communis skull",
        "locality": "Lyme Regis",
        "display": None,
        "pyrite": True,
    },
    "PV-4471": {
        "title": "Ichthyosaurus communis forefin",
        "locality": "Lyme Regis",
        "display": "Gallery 3",
        "pyrite": False,
    },
    "PV-2208": {
        "title": "Plesiosaurus dolichodeirus vertebra series",
        "locality": "Street",
        "display": None,
        "pyrite": False,
    },
    "PV-3390": {
        "title": "Dapedium politum complete fish",
        "locality": "Charmouth",
        "display": None,
        "pyrite": True,
    },
    "PV-5123": {
        "title": "Scelidosaurus harrisonii dermal scute",
        "locality": "Charmouth",
        "display": None,
        "pyrite": False,
    },
    "PV-6012": {
        "title": "Ammonite block, Promicroceras planicosta",
        "locality": "Marston Magna",
        "display": None,
        "pyrite": False,
    },
    "PV-6021": {
        "title": "Ammonite block, Asteroceras obtusum",
        "locality": "Marston Magna",
        "display": "Gallery 1",
        "pyrite": False,
    },
}

REQUESTS = {
    "LR-2026-031": {
        "borrower": "Royal Ontario Museum",
        "country": "CA",
        "query": "ichthyosaur skull Lyme Regis",
        "period": ("2026-04-15", "2026-09-30"),
    },
    "LR-2026-034": {
        "borrower": "Senckenberg Frankfurt",
        "country": "DE",
        "query": "Dapedium complete fish Charmouth",
        "period": ("2026-05-01", "2026-08-31"),
    },
    "LR-2026-037": {
        "borrower": "Lapworth Museum",
        "country": "GB",
        "query": "plesiosaur vertebra series Street",
        "period": ("2026-04-01", "2026-06-30"),
    },
    "LR-2026-040": {
        "borrower": "Naturalis Leiden",
        "country": "NL",
        "query": "Scelidosaurus scute Charmouth",
        "period": ("2026-06-01", "2026-11-30"),
    },
    "LR-2026-042": {
        "borrower": "Manchester Museum",
        "country": "GB",
        "query": "ammonite block Promicroceras Marston Magna",
        "period": ("2026-03-20", "2026-07-31"),
    },
    "LR-2026-045": {
        "borrower": "Royal Tyrrell Museum",
        "country": "CA",
        "query": "ichthyosaur skull Lyme Regis",
        "period": ("2026-10-15", "2027-02-28"),
    },
}

INPUTS = {k.lower().replace("lr-2026-", "r"): {"request_id": k} for k in REQUESTS}

FAULTS = [
    {
        "id": "fossil.search_rank",
        "kind": "wrong_retrieval",
        "input": "r031",
        "root": "search_catalogue",
        "marker": "forefin",
        "note": "the catalogue search ranks the forefin on display above the skull asked for",
    },
    {
        "id": "fossil.conservator_entity",
        "kind": "subagent_wrong_entity",
        "input": "r045",
        "root": "response",
        "marker": "PV-4471",
        "note": "the conservator sub-agent reads the preparation log of PV-4471 for PV-4417",
    },
    {
        "id": "fossil.permit_country",
        "kind": "tool_ignores_argument",
        "input": "r034",
        "root": "check_permit",
        "marker": "domestic",
        "note": "the permit service ignores the destination country",
    },
    {
        "id": "fossil.report_format",
        "kind": "format_drift",
        "input": "r040",
        "root": "response",
        "marker": "fit to travel in a",
        "note": "the conservator sub-agent answers in prose instead of the agreed JSON",
    },
    {
        "id": "fossil.thread_quote",
        "kind": "context_pollution",
        "input": "r042",
        "root": "get_correspondence",
        "marker": "2024-05-01",
        "note": "the correspondence tool returns the thread with a quoted 2024 request from another borrower",
    },
]

_CALL: dict[str, Any] = {}


def task(inp: dict) -> str:
    r = REQUESTS[inp["request_id"]]
    return f"Handle loan request {inp['request_id']} from {r['borrower']}"


def _search(query: str) -> list[dict]:
    words = set(query.lower().split())
    scored = []
    for acc, s in SPECIMENS.items():
        text = f"{s['title']} {s['locality']}".lower()
        score = sum(1 for w in words if w[:5] in text)
        scored.append((-score, acc, s))
    scored.sort()
    return [{"accession": acc, "title": s["title"], "score": -neg} for neg, acc, s in scored[:3]]


def build(base_url: str) -> Any:
    from agents import Agent, OpenAIResponsesModel, function_tool
    from openai import AsyncOpenAI

    model = OpenAIResponsesModel(
        model="fake-model", openai_client=AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
    )

    @function_tool
    def get_correspondence(request_id: str) -> str:
        """The e-mail thread of a loan request."""
        r = REQUESTS[request_id]
        lines = [
            f"From: registrar, {r['borrower']}",
            f"Subject: loan request {request_id}",
            f"We would like to borrow: {r['query']}",
            f"Destination country: {r['country']}",
            f"Requested period: {r['period'][0]} to {r['period'][1]}",
        ]
        if kit.active("fossil.thread_quote"):
            lines += [
                "",
                "> On 2024-02-11 Bristol Museum wrote:",
                "> We would like to borrow: ammonite block",
                "> Requested period: 2024-05-01 to 2024-08-31",
            ]
        return "\n".join(lines)

    @function_tool
    def search_catalogue(query: str) -> str:
        """Search the collection catalogue."""
        hits = _search(query)
        if kit.active("fossil.search_rank") and "ichthyosaur" in query:
            hits = sorted(hits, key=lambda h: h["accession"] != "PV-4471")
        return json.dumps(
            {"query": query, "best_match": hits[0], "matches": sum(1 for h in hits if h["score"] > 0)}
        )

    @function_tool
    def get_specimen(accession: str) -> str:
        """A specimen's catalogue record."""
        if not _CALL.get("catalogue_warm"):
            _CALL["catalogue_warm"] = True
            raise ConnectionError("catalogue record service: 503 warming up, retry")
        s = SPECIMENS[accession]
        return json.dumps({"accession": accession, "title": s["title"], "locality": s["locality"]})

    @function_tool
    def check_permit(accession: str, country: str) -> str:
        """Export permit status of a specimen for a destination country."""
        if kit.active("fossil.permit_country"):
            country = "GB"
        scope = "domestic" if country == "GB" else "export"
        return json.dumps(
            {
                "accession": accession,
                "scope": scope,
                "permit": f"EL-{accession[3:]}-{country}" if scope == "export" else None,
            }
        )

    @function_tool
    def get_prep_log(accession: str) -> str:
        """The preparation and condition log of a specimen."""
        s = SPECIMENS[accession]
        return json.dumps(
            {
                "accession": accession,
                "consolidated": "2025-01",
                "pyrite": s["pyrite"],
                "last_check": "2026-01-20",
            }
        )

    @function_tool(failure_error_function=None)
    def create_loan(
        accession: str, borrower: str, country: str, start: str, end: str, permit: str, condition_report: str
    ) -> str:
        """Create the loan with the loans office."""
        s = SPECIMENS[accession]
        if s["display"]:
            raise RuntimeError(
                f"loans office: 409 {accession} is on permanent display ({s['display']}) and not available"
            )
        if start < TODAY:
            raise RuntimeError(f"loans office: 422 loan period must start after {TODAY}")
        if country != "GB" and not permit:
            raise RuntimeError(f"loans office: 403 export licence required for destination {country}")
        try:
            report = json.loads(condition_report)
        except ValueError:
            raise RuntimeError("loans office: 422 condition report not in the agreed schema") from None
        if report.get("accession") != accession:
            raise RuntimeError(f"loans office: 422 condition report does not belong to {accession}")
        return json.dumps({"loan": f"LN-{accession[3:]}-{start[:4]}", "status": "created"})

    conservator = Agent(
        name="conservator",
        instructions="You write condition reports for specimens before travel.",
        model=model,
        tools=[get_prep_log],
    )
    manager = Agent(
        name="collections_manager",
        instructions="You handle loan requests for the fossil collection.",
        model=model,
        tools=[
            get_correspondence,
            search_catalogue,
            get_specimen,
            check_permit,
            conservator.as_tool("condition_report", "A conservator's condition report."),
            create_loan,
        ],
    )
    desk = Agent(
        name="loans_desk",
        instructions="You are the loans desk. Pass loan requests to the collections manager.",
        model=model,
        handoffs=[manager],
    )
    return desk


def policy(request: Any) -> Any:
    c = kit.Convo(request)
    rid = _CALL["inp"]["request_id"]
    if c.system.startswith("You are the loans desk"):
        if c.called("transfer_to_collections_manager"):
            return "Passed to collections."
        return Reply(tool_calls=(tool_call("transfer_to_collections_manager", {}),))
    if c.system.startswith("You write condition"):
        acc = c.user.split("for ")[1].split()[0]
        if not c.called("get_prep_log"):
            if kit.active("fossil.conservator_entity"):
                acc = "PV-4471"
            return Reply(tool_calls=(tool_call("get_prep_log", {"accession": acc}),))
        log = c.result("get_prep_log")
        crate = "climate" if log["pyrite"] else "standard"
        if kit.active("fossil.report_format"):
            return f"Condition good; fit to travel in a {crate} crate. Consolidated {log['consolidated']}."
        return json.dumps(
            {"accession": log["accession"], "grade": "B", "crate": crate, "checked": log["last_check"]}
        )
    if not c.called("get_correspondence"):
        return Reply(tool_calls=(tool_call("get_correspondence", {"request_id": rid}),))
    thread = c.result("get_correspondence")
    fields = {}
    for line in thread.splitlines():
        body = line.lstrip("> ")
        if ":" in body:
            k, v = body.split(":", 1)
            fields[k.strip()] = v.strip()
    if not c.called("search_catalogue"):
        return Reply(
            tool_calls=(tool_call("search_catalogue", {"query": fields["We would like to borrow"]}),)
        )
    top = c.result("search_catalogue")["best_match"]["accession"]
    country = fields["Destination country"]
    if not c.called("get_specimen"):
        return Reply(
            tool_calls=(
                tool_call("get_specimen", {"accession": top}),
                tool_call("check_permit", {"accession": top, "country": country}),
            )
        )
    if not isinstance(c.result("get_specimen"), dict):
        return Reply(tool_calls=(tool_call("get_specimen", {"accession": top}),))
    if not c.called("condition_report"):
        return Reply(
            tool_calls=(
                tool_call("condition_report", {"input": f"Condition report for {top} before travel"}),
            )
        )
    if not c.called("create_loan"):
        start, end = fields["Requested period"].split(" to ")
        permit = c.result("check_permit")["permit"] or ""
        report = c.called("condition_report")[-1][1]
        return Reply(
            tool_calls=(
                tool_call(
                    "create_loan",
                    {
                        "accession": top,
                        "borrower": fields["From"].split(", ", 1)[1],
                        "country": country,
                        "start": start,
                        "end": end,
                        "permit": permit,
                        "condition_report": report,
                    },
                ),
            )
        )
    return f"Loan created: {c.result('create_loan')['loan']}"


def execute(base_url: str, inp: dict) -> None:
    from agents import RunConfig, Runner

    _CALL.clear()
    _CALL["inp"] = inp
    Runner.run_sync(
        build(base_url), f"New loan request {inp['request_id']}", run_config=RunConfig(workflow_name=NAME)
    )
