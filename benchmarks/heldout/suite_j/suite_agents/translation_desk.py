"""Translation agency (route: openai_agents): an incoming job is routed to a desk and assigned.

An intake agent reads the client profile, the source document and the job's e-mail thread (three
tool calls in one model turn) and hands off to the legal, medical or general desk; the desk agent
finds a linguist, creates the assignment and submits it to the production system, which checks it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..harness import (
    AgentSpec,
    Fault,
    active,
    extract_json,
    last_tool_json,
    messages,
    system_text,
    tool_results,
)
from ..routes import agents_model, agents_processor


NAME = "translation-job-router"

LINGUISTS = [
    ("LG-204", "en-US>de-DE", {"legal", "general"}), ("LG-311", "en-US>de-DE", {"medical", "general"}),
    ("LG-118", "en-US>fr-FR", {"legal", "general"}), ("LG-415", "en-US>fr-FR", {"medical"}),
    ("LG-502", "en-US>es-ES", {"general", "medical", "legal"}), ("LG-077", "en-US>ja-JP", {"general", "legal"}),
    ("LG-090", "en-US>it-IT", {"general"}), ("LG-612", "en-US>de-DE", {"general"}),
]
LANG_NAMES = {"de-DE": "German", "fr-FR": "French", "es-ES": "Spanish", "ja-JP": "Japanese", "it-IT": "Italian"}
STORE: dict[str, Any] = {"assignments": {}}


def job(jid: str, client: str, domain: str, target: str, segments: int, deadline: str) -> dict[str, Any]:
    return {"job": jid, "client": client, "domain": domain, "source": "en-US", "target": target,
            "segments": segments, "deadline": deadline}


INPUTS = [
    job("TJ-7101", "Halvorsen Pharma", "medical", "de-DE", 48, "2026-03-12"),
    job("TJ-7102", "Baird & Quist LLP", "legal", "fr-FR", 36, "2026-03-13"),
    job("TJ-7105", "Orchid Hotels", "general", "es-ES", 30, "2026-03-10"),
    job("TJ-7108", "Baird & Quist LLP", "legal", "de-DE", 52, "2026-03-16"),
    job("TJ-7110", "Nordlicht Medical", "medical", "fr-FR", 64, "2026-03-18"),
]
REFS = [
    job("TJ-7090", "Orchid Hotels", "general", "it-IT", 22, "2026-03-09"),
    job("TJ-7093", "Halvorsen Pharma", "medical", "es-ES", 40, "2026-03-11"),
    job("TJ-7096", "Kaito Robotics", "legal", "ja-JP", 28, "2026-03-14"),
    job("TJ-7099", "Orchid Hotels", "general", "de-DE", 18, "2026-03-08"),
]
BY_ID = {j["job"]: j for j in INPUTS + REFS}
OTHER_THREAD = {"from": "pm@baird-quist.example", "subject": "Re: Translation request",
                "body": "Please make the delivery date 2026-03-24 for the merger pack.", "job": "TJ-7062"}


class ProductionRejected(RuntimeError):
    pass


# -- tools -----------------------------------------------------------------------------------------


def get_client_profile(client: str) -> str:
    """The client's account: tier, domains, delivery format."""
    return json.dumps({"client": client, "tier": "key account", "delivery_format": "XLIFF 2.1"})


def fetch_document(job_id: str) -> str:
    """The job's source document, segmented."""
    j = BY_ID[job_id]
    n = j["segments"]
    page = 40 if active("tj-page") and n > 40 else n
    segs = [{"id": k + 1, "words": 12 + (k * 7) % 19} for k in range(page)]
    return json.dumps({"job": job_id, "segments_returned": page, "segments": segs})


def get_job_thread(job_id: str) -> str:
    """The e-mail thread of the job (the client's instructions)."""
    j = BY_ID[job_id]
    thread = [{"from": f"pm@{j['client'].split()[0].lower()}.example", "subject": "Translation request",
               "body": f"Please deliver by {j['deadline']}.", "job": job_id}]
    if active("tj-thread") and j["client"].startswith("Baird"):
        # threaded by subject line
        thread.append(OTHER_THREAD)
    return json.dumps({"job": job_id, "messages": thread})


def find_linguist(pair: str, specialty: str) -> str:
    """Linguists for a language pair and specialty."""
    found = [lid for lid, p, spec in LINGUISTS if p == pair and specialty in spec]
    return json.dumps({"pair": pair, "specialty": specialty, "linguists": found})


def create_assignment(job_id: str, linguist: str, target: str, segments: int, due: str, revision: bool) -> str:
    """Create the assignment in the production system."""
    aid = f"AS-{job_id[3:]}-{linguist[3:]}"
    STORE["assignments"][aid] = {"job": job_id, "linguist": linguist, "target": target, "segments": segments,
                                 "due": due, "revision": revision}
    return json.dumps({"assignment": aid, "status": "created"})


def submit_for_production(assignment: str) -> str:
    """Release the assignment to production; the production system checks it against the job."""
    a = STORE["assignments"][assignment]
    j = BY_ID[a["job"]]
    if a["target"] != j["target"]:
        raise ProductionRejected(f"production: target locale '{a['target']}' is not a BCP 47 tag for job {j['job']}")
    spec = next(s for lid, _, s in LINGUISTS if lid == a["linguist"])
    if j["domain"] != "general" and j["domain"] not in spec:
        raise ProductionRejected(f"production: {a['linguist']} holds no {j['domain']} qualification (ISO 17100) "
                                 f"for job {j['job']}")
    if j["domain"] == "legal" and not a["revision"]:
        raise ProductionRejected(f"production: legal job {j['job']} needs revision by a second linguist")
    if a["due"] > j["deadline"]:
        raise ProductionRejected(f"production: due date {a['due']} is after the client's deadline {j['deadline']}")
    if a["segments"] != j["segments"]:
        raise ProductionRejected(f"production: assignment covers {a['segments']} segments; the source has "
                                 f"{j['segments']}")
    return json.dumps({"assignment": assignment, "status": "in production"})


# -- the model -------------------------------------------------------------------------------------


def _job(request: Any) -> dict[str, Any]:
    first = next(m for m in messages(request) if m.get("role") == "user")
    return extract_json(str(first.get("content")))


def policy(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    system, done = system_text(request), [n for n, _ in tool_results(request)]
    j = _job(request)
    if system.startswith("You take in translation jobs"):
        if "fetch_document" not in done:
            return Reply(tool_calls=(tool_call("get_client_profile", {"client": j["client"]}),
                                     tool_call("fetch_document", {"job_id": j["job"]}),
                                     tool_call("get_job_thread", {"job_id": j["job"]})))
        desk = j["domain"]
        if active("tj-route") and desk == "medical":
            desk = "general"
        return Reply(tool_calls=(tool_call(f"transfer_to_{desk}_desk", {}),))
    desk = system.split()[2]
    pair = f"{j['source']}>{j['target']}"
    if "find_linguist" not in done:
        return Reply(tool_calls=(tool_call("find_linguist", {"pair": pair, "specialty": desk}),))
    if "create_assignment" not in done:
        linguist = last_tool_json(request, "find_linguist")["linguists"][0]
        doc = last_tool_json(request, "fetch_document")
        thread = last_tool_json(request, "get_job_thread")["messages"]
        due = re.findall(r"\d{4}-\d{2}-\d{2}", thread[-1]["body"])[-1]
        target = LANG_NAMES[j["target"]] if active("tj-locale") else j["target"]
        plan = {"job_id": j["job"], "linguist": linguist, "target": target, "segments": doc["segments_returned"],
                "due": due, "revision": desk == "legal" and not active("tj-plan")}
        return Reply(tool_calls=(tool_call("create_assignment", plan),))
    if "submit_for_production" not in done:
        aid = last_tool_json(request, "create_assignment")["assignment"]
        return Reply(tool_calls=(tool_call("submit_for_production", {"assignment": aid}),))
    return f"Job {j['job']} is in production."


_AGENTS: dict[str, Any] = {}


def agents_for(server: Any) -> Any:
    from agents import Agent, function_tool

    model = agents_model(server)
    if _AGENTS.get("model") is not model:
        def ft(fn: Any) -> Any:
            return function_tool(fn, failure_error_function=None)

        desks = [Agent(name=f"{d}_desk", model=model,
                       instructions=f"You staff {d} translation jobs: find a qualified linguist, create the "
                                    "assignment (with revision where the domain needs it), submit it.",
                       tools=[ft(find_linguist), ft(create_assignment), ft(submit_for_production)])
                 for d in ("legal", "medical", "general")]
        intake = Agent(name="intake_agent", model=model,
                       instructions="You take in translation jobs: read the client profile, the document and the "
                                    "job thread, then hand off to the desk for the job's domain.",
                       tools=[ft(get_client_profile), ft(fetch_document), ft(get_job_thread)], handoffs=desks)
        _AGENTS.update(model=model, intake=intake)
    return _AGENTS["intake"]


def run(server: Any, item: dict[str, Any], path: Path) -> None:
    from agents import RunConfig, Runner
    from agents.exceptions import AgentsException

    server.use(policy)
    STORE["assignments"].clear()
    intake = agents_for(server)
    agents_processor(path, NAME, f"route translation job {item['job']} for {item['client']}")
    try:
        Runner.run_sync(intake, "New job: " + json.dumps(item), run_config=RunConfig(workflow_name=NAME))
    except AgentsException:
        pass


SPEC = AgentSpec(
    name=NAME, route="openai_agents", domain="translation agency", inputs=INPUTS, ref_inputs=REFS, run=run,
    faults=[
        Fault("tj-route", "wrong_routing", 0, "generation gpt-4o-mini", "transfer_to_general_desk",
              "a medical job is handed to the general desk; its linguist has no medical qualification"),
        Fault("tj-plan", "plan_error", 1, "generation gpt-4o-mini", '"revision": false',
              "the legal desk plans the job without second-linguist revision"),
        Fault("tj-locale", "format_drift", 2, "generation gpt-4o-mini", '"target": "Spanish"',
              "the model writes the target language's name instead of its locale tag"),
        Fault("tj-thread", "context_pollution", 3, "get_job_thread", "TJ-7062",
              "another job's e-mail joins the thread by subject line; its delivery date is used"),
        Fault("tj-page", "truncated_result", 4, "fetch_document", '"segments_returned": 40',
              "the document comes back as its first page only; production counts the segments"),
    ],
)
