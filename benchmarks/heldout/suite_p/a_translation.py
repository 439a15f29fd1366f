"""Translation bureau intake (openai_agents route): a triage agent reads the job, counts words in parallel,
asks a terminology sub-agent (as_tool) for the client glossary, checks translation memory, and hands off
to a language desk that assigns a translator, submits the quote and schedules delivery."""

from __future__ import annotations

import json

from agentkit import first_user, history, run_agent
from agents import Agent, ModelSettings, function_tool, handoff
from kit import Case, active

from trajdebug.testing import Reply, tool_call


AGENT = "translation-bureau-intake"
ROUTE = "openai_agents"
DOMAIN = "technical translation bureau"
SHAPE = "triage: job -> 3 parallel word counts -> terminology sub-agent (as_tool: client search + glossary) -> translation memory -> hand-off to one of 3 language desks: translator -> quote -> delivery"

CLIENTS = {"Norvik Medical": "GL-NMED-4", "Norvik Marine": "GL-NMAR-2", "Halden Rail": "GL-HRAIL-7", "Orsa Foods": "GL-ORSA-1"}
TRANSLATORS = {"de": ["J. Brandt", "U. Krause"], "fr": ["M. Dubois"], "ja": ["K. Abe", "H. Mori"]}
JOBS = {
    "TJ-201": {"client": "Norvik Medical", "pair": "en-de", "files": {"ifu.docx": 2140, "labels.xlsx": 380, "leaflet.idml": 910}, "due": "2026-12-18", "po_cap_eur": 700},
    "TJ-202": {"client": "Halden Rail", "pair": "en-fr", "files": {"manual.docx": 3200, "parts.xlsx": 640, "notice.docx": 300}, "due": "2026-12-21", "po_cap_eur": 400},
    "TJ-203": {"client": "Orsa Foods", "pair": "en-ja", "files": {"spec.docx": 1200, "pack.idml": 220, "faq.docx": 540}, "due": "2026-12-17", "po_cap_eur": 800},
    "TJ-204": {"client": "Norvik Marine", "pair": "en-de", "files": {"hull.docx": 1800, "tables.xlsx": 400, "cover.idml": 150}, "due": "2026-12-23", "po_cap_eur": 600},
    "TJ-205": {"client": "Halden Rail", "pair": "en-ja", "files": {"signal.docx": 900, "map.idml": 120, "notes.docx": 260}, "due": "2026-12-19", "po_cap_eur": 500},
    "TJ-206": {"client": "Orsa Foods", "pair": "en-fr", "files": {"menu.docx": 700, "pack.idml": 180, "claims.xlsx": 330}, "due": "2026-12-22", "po_cap_eur": 400},
}
RELATED = {"TJ-201": {"job": "TJ-188", "deadline": "2026-12-11", "translator": "K. Abe"}}
INPUTS = {k: k for k in JOBS}
REFS = ["TJ-203", "TJ-204", "TJ-205", "TJ-206"]
CASES = [
    Case("tr.route", "wrong_routing", "generation fake-model", "transfer_to_fr_desk", "TJ-201"),
    Case("tr.entity", "subagent_wrong_entity", "generation fake-model", "Norvik Marine", "TJ-201"),
    Case("tr.format", "format_drift", "generation fake-model", "18.12.2026", "TJ-201"),
    Case("tr.context", "context_pollution", "generation fake-model", "2026-12-11T17:00", "TJ-201"),
    Case("tr.memory", "swallowed_error", "tm_lookup", "segments_matched 0", "TJ-202"),
]
LEVERAGE = {"Norvik Medical": 0.42, "Halden Rail": 0.35, "Orsa Foods": 0.2, "Norvik Marine": 0.5}


@function_tool
def fetch_job(job_id: str) -> str:
    """The job ticket."""
    j = JOBS[job_id]
    return json.dumps({"job": job_id, "client": j["client"], "pair": j["pair"], "files": sorted(j["files"]), "due": j["due"],
                       "related": RELATED.get(job_id)})


@function_tool
def file_wordcount(job_id: str, file: str) -> str:
    """Word count of one source file."""
    return json.dumps({"file": file, "words": JOBS[job_id]["files"][file]})


@function_tool
def client_search(name: str) -> str:
    """Find clients whose name starts like the query."""
    stem = name.split()[0]
    return json.dumps({"matches": sorted(c for c in CLIENTS if c.startswith(stem))})


@function_tool
def glossary_lookup(client: str) -> str:
    """The client's approved glossary."""
    return json.dumps({"client": client, "glossary": CLIENTS[client], "terms": 100 + len(client) * 7})


@function_tool
def tm_lookup(client: str, words: int) -> str:
    """Translation-memory leverage for the client's previous jobs."""
    try:
        if client == "Halden Rail":
            raise TimeoutError("TM shard 3 did not answer")
        lev = LEVERAGE[client]
    except TimeoutError:
        lev = 0.0 if active("tr.memory") else LEVERAGE[client]  # else: read again from the replica
    return json.dumps({"client": client, "leverage": lev, "summary": f"segments_matched {round(words * lev / 12)}"})


@function_tool(failure_error_function=None)
def assign_translator(job_id: str, translator: str, glossary: str) -> str:
    """Assign a translator and grant the glossary."""
    j = JOBS[job_id]
    lang = j["pair"].split("-")[1]
    if translator not in TRANSLATORS[lang]:
        raise PermissionError(f"roster: {translator} holds no {j['pair'].upper()} accreditation")
    if CLIENTS[j["client"]] != glossary:
        raise PermissionError(f"terminology server: glossary {glossary} is not licensed for {job_id}")
    return json.dumps({"job": job_id, "translator": translator, "glossary": glossary})


@function_tool(failure_error_function=None)
def quote_submit(job_id: str, words: int, leverage: float) -> str:
    """Submit the quote to the client portal."""
    eur = round(words * (1 - leverage) * 0.11 + words * leverage * 0.03, 2)
    cap = JOBS[job_id]["po_cap_eur"]
    if eur > cap:
        raise ValueError(f"client portal: quote {eur} EUR for {job_id} is above the purchase order ({cap} EUR)")
    return json.dumps({"job": job_id, "quote_eur": eur})


@function_tool(failure_error_function=None)
def schedule_delivery(job_id: str, due: str) -> str:
    """Schedule delivery in the client portal."""
    import datetime

    try:
        when = datetime.datetime.fromisoformat(due)
    except ValueError:
        raise ValueError(f"client portal: due {due!r} is not an ISO 8601 date-time") from None
    if when.date().isoformat() != JOBS[job_id]["due"]:
        raise ValueError(f"client portal: {job_id} must be delivered on its PO date, not {when.date()}")
    return json.dumps({"job": job_id, "due": due, "status": "scheduled"})


def brain(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    res, _calls = history(msgs)
    if system.startswith("You are the terminology agent"):
        asked = next(m["content"] for m in msgs if m["role"] == "user")
        if "client_search" not in res:
            return Reply(tool_calls=(tool_call("client_search", {"name": asked}),))
        if "glossary_lookup" not in res:
            matches = res["client_search"][0]["matches"]
            pick = asked if asked in matches else matches[0]
            if active("tr.entity"):
                pick = next(m for m in matches if m != asked)
            return Reply(tool_calls=(tool_call("glossary_lookup", {"client": pick}),))
        g = res["glossary_lookup"][0]
        return json.dumps({"client": g["client"], "glossary": g["glossary"], "terms": g["terms"]})
    job_id = first_user(msgs)["job"]
    if system.startswith("You are the") and "desk" in system:
        lang = system.split("the ")[1].split(" desk")[0]
        job = res["fetch_job"][0]
        term = res["terminology"][0] if isinstance(res["terminology"][0], dict) else json.loads(res["terminology"][0])
        words = sum(r["words"] for r in res["file_wordcount"])
        if "assign_translator" not in res:
            return Reply(tool_calls=(tool_call("assign_translator", {"job_id": job_id, "translator": TRANSLATORS[lang][0], "glossary": term["glossary"]}),))
        if "quote_submit" not in res:
            return Reply(tool_calls=(tool_call("quote_submit", {"job_id": job_id, "words": words, "leverage": res["tm_lookup"][0]["leverage"]}),))
        if "schedule_delivery" not in res:
            due = f"{job['due']}T17:00"
            if active("tr.format"):
                due = f"{job['due'][8:]}.{job['due'][5:7]}.{job['due'][:4]} 17:00"
            if active("tr.context"):
                due = f"{job['related']['deadline']}T17:00"
            return Reply(tool_calls=(tool_call("schedule_delivery", {"job_id": job_id, "due": due}),))
        return f"{job_id} assigned, quoted and scheduled."
    if "fetch_job" not in res:
        return Reply(tool_calls=(tool_call("fetch_job", {"job_id": job_id}),))
    job = res["fetch_job"][0]
    if "file_wordcount" not in res:
        return Reply(tool_calls=tuple(tool_call("file_wordcount", {"job_id": job_id, "file": f}) for f in job["files"]))
    if "terminology" not in res:
        return Reply(tool_calls=(tool_call("terminology", {"input": job["client"]}),))
    if "tm_lookup" not in res:
        words = sum(r["words"] for r in res["file_wordcount"])
        return Reply(tool_calls=(tool_call("tm_lookup", {"client": job["client"], "words": words}),))
    lang = job["pair"].split("-")[1]
    if active("tr.route"):
        lang = "fr"
    return Reply(tool_calls=(tool_call(f"transfer_to_{lang}_desk", {}),))


def record(inp: str, path, server) -> None:
    server.use(brain)
    run_agent(build, server, json.dumps({"job": inp}), path, AGENT, f"take in translation job {inp}")


def build(model):
    desk_tools = [assign_translator, quote_submit, schedule_delivery]
    desks = [Agent(name=f"{lang}_desk", model=model, tools=desk_tools,
                   instructions=f"You are the {lang} desk: assign a translator, submit the quote, schedule delivery.")
             for lang in ("de", "fr", "ja")]
    terminology = Agent(name="terminology_agent", model=model, tools=[client_search, glossary_lookup],
                        instructions="You are the terminology agent: find the client and return its glossary as JSON.")
    return Agent(
        name="triage", model=model, model_settings=ModelSettings(parallel_tool_calls=True),
        handoffs=[handoff(d) for d in desks],
        instructions="You triage translation jobs: read the job, count words, get the glossary, check memory, hand off to the right desk.",
        tools=[fetch_job, file_wordcount,
               terminology.as_tool(tool_name="terminology", tool_description="The client's glossary."), tm_lookup])
