"""Genealogy research desk (route: openai_agents).

The real OpenAI Agents SDK against the fake model server (Chat Completions): an intake agent opens the
client's case and hands off to the research lead; the lead asks a records clerk (an agent run as a
tool, with a birth-register search and an entry fetch) for the subject's birth entry, searches two
censuses in parallel for the household, then orders the certified extract from the registry, which
checks the order against the register.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import contextmanager

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from agents import set_tracing_disabled
from openai import AsyncOpenAI
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import FakeModelServer, Reply, tool_call

import kit

AGENT = "genealogy-research-desk"
ROUTE = "openai_agents"
DOMAIN = "genealogy research for certified extracts"
SHAPE = "intake (case tool) -> hand-off to research lead -> records clerk (agent as tool: register search, entry fetch) -> two census searches in parallel -> certificate order API"

DISTRICTS = {"Stornoway": ("088", "Uig"), "Portree": ("112", "Snizort"), "Kirkwall": ("021", "Stromness"),
             "Lerwick": ("004", "Tingwall"), "Wick": ("043", "Thurso"), "Oban": ("524", "Kilmore"),
             "Tobermory": ("547", "Salen"), "Dingwall": ("062", "Fodderty"), "Stonehaven": ("258", "Fetteresso")}
CLIENTS = {
    "CL-301": ("John", "Macleod", 1889, "Stornoway", "Murdo Macleod"),
    "CL-302": ("Catherine", "Nicolson", 1892, "Portree", "Alexander Nicolson"),
    "CL-303": ("William", "Rendall", 1885, "Kirkwall", "Thomas Rendall"),
    "CL-304": ("Agnes", "Halcrow", 1894, "Lerwick", "James Halcrow"),
    "CL-305": ("Donald", "Sutherland", 1887, "Wick", "George Sutherland"),
    "CL-306": ("Mary", "MacDougall", 1890, "Oban", "Duncan MacDougall"),
    "CL-307": ("Hector", "Maclean", 1886, "Tobermory", "Lachlan Maclean"),
    "CL-308": ("Isabella", "Munro", 1893, "Dingwall", "Roderick Munro"),
    "CL-309": ("Peter", "Macleod", 1888, "Stornoway", "Kenneth Macleod"),
}
FATHERS_ELSEWHERE = ["Angus", "Neil", "Malcolm", "John", "Hugh"]


def _entry(cid: str, decoy: bool = False) -> dict:
    fore, sur, year, district, father = CLIENTS[cid]
    code, other = DISTRICTS[district]
    n = int(cid[3:])
    if decoy:
        return {"entry_id": f"{year}/{code}/{n * 7 + 40:05d}", "name": f"{fore} {sur}", "year": year, "district": other,
                "father": f"{FATHERS_ELSEWHERE[n % 5]} {sur}"}
    return {"entry_id": f"{year}/{code}/{n * 7:05d}", "name": f"{fore} {sur}", "year": year, "district": district,
            "father": father}


def _inp(cid: str) -> dict:
    fore, sur, year, district, _ = CLIENTS[cid]
    return {"client_id": cid, "request": f"Certified birth extract for {fore} {sur}, born about {year} near {district}"}


REFS = [_inp("CL-302"), _inp("CL-304"), _inp("CL-306"), _inp("CL-308")]


# ---------------------------------------------------------------- the scripted model

def _results(messages: list[dict]) -> dict[str, list]:
    names = {}
    for m in messages:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
    out: dict[str, list] = {}
    for m in messages:
        if m.get("role") == "tool":
            text = m["content"] if isinstance(m["content"], str) else "".join(p.get("text", "") for p in m["content"])
            try:
                val = json.loads(text)
            except ValueError:
                val = text
            out.setdefault(names.get(m["tool_call_id"], "?"), []).append(val)
    return out


def brain(request):
    messages = request.body["messages"]
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    seen = _results(messages)
    if system.startswith("You are the intake desk"):
        req = json.loads(next(m["content"] for m in messages if m["role"] == "user"))
        if "open_case" not in seen:
            return Reply(tool_calls=(tool_call("open_case", {"client_id": req["client_id"]}),))
        return Reply(tool_calls=(tool_call("transfer_to_research_lead", {}),))
    if system.startswith("You are the records clerk"):
        ask = json.loads(messages[-1]["content"]) if messages[-1]["role"] == "user" else json.loads(
            next(m["content"] for m in messages if m["role"] == "user"))
        if "search_births" not in seen:
            return Reply(tool_calls=(tool_call("search_births", {
                "forename": ask["forename"], "surname": ask["surname"], "year_from": ask["born_about"] - 1,
                "year_to": ask["born_about"] + 1, "district": ask["district"]}),))
        if "fetch_entry" not in seen:
            hits = seen["search_births"][-1]["results"]
            pick = next((h for h in hits if h["district"] == ask["district"]), hits[0])
            if kit.active("gn-clerk-neighbour"):
                pick = next(h for h in hits if h["district"] != ask["district"])
            return Reply(tool_calls=(tool_call("fetch_entry", {"entry_id": pick["entry_id"]}),))
        e = seen["fetch_entry"][-1]
        entry_id = e["entry_id"]
        if kit.active("gn-clerk-transpose"):
            entry_id = entry_id[:-2] + entry_id[-1] + entry_id[-2]
        return json.dumps({"entry_id": entry_id, "name": e["name"], "year": e["year"], "district": e["district"],
                           "father": e["father"]})
    if system.startswith("You are the research lead"):
        case = seen["open_case"][-1]
        subj = case["subject"]
        if "records_clerk" not in seen:
            return Reply(tool_calls=(tool_call("records_clerk", {"input": json.dumps(subj)}),))
        if "census_search" not in seen:
            surname = subj["surname"]
            if kit.active("gn-census-spelling"):
                surname = surname.replace("Mac", "Mc").replace("Mcl", "McL")
            return Reply(tool_calls=tuple(tool_call("census_search", {"year": y, "surname": surname,
                                                                     "district": subj["district"]}) for y in (1891, 1901)))
        if "order_extract" not in seen:
            entry = seen["records_clerk"][-1]
            entry_id = entry["entry_id"]
            if kit.active("gn-notes-entry"):
                entry_id = case["notes"]["related_entry"]
            homes = seen["census_search"][0]["households"]
            household = next((h for h in homes if h["head"] == entry.get("father")), homes[0])
            return Reply(tool_calls=(tool_call("order_extract", {
                "case_id": case["case_id"], "entry_id": entry_id, "name": entry["name"],
                "father": household["head"]}),))
        o = seen["order_extract"][-1]
        return f"Ordered certified extract {o['order']} for {o['entry_id']}."
    raise ValueError("unknown agent")


# ---------------------------------------------------------------- tools

def _client_of(name: str, district: str | None = None) -> str | None:
    for cid, (fore, sur, _, d, _) in CLIENTS.items():
        if f"{fore} {sur}" == name and (district is None or d == district):
            return cid
    return None


def _register() -> dict:
    reg = {}
    for cid in CLIENTS:
        for decoy in (False, True):
            e = _entry(cid, decoy)
            reg[e["entry_id"]] = e
    return reg


@function_tool
def open_case(client_id: str) -> str:
    """Open the client's research case."""
    fore, sur, year, district, father = CLIENTS[client_id]
    n = int(client_id[3:])
    related = f"{year - 2}/{DISTRICTS[district][0]}/{n * 7 + 3:05d}"
    return json.dumps({"case_id": f"GR-{n:04d}", "subject": {"forename": fore, "surname": sur, "born_about": year,
                                                             "district": district},
                       "notes": {"related_entry": related, "note": f"sibling entry {related} ordered for a previous client"}})


@function_tool
def search_births(forename: str, surname: str, year_from: int, year_to: int, district: str) -> str:
    """Search the birth register (the district and its neighbours)."""
    reg = _register()
    if kit.active("gn-search-fuzzy"):
        district = "Stonehaven" if district.startswith("Sto") else district
        hits = [{"entry_id": f"{year_from + 1}/258/{k:05d}", "name": f"{forename} {surname}", "year": year_from + 1,
                 "district": "Stonehaven", "father": f"{['Robert', 'David'][k % 2]} {surname}"} for k in (311, 412)]
    else:
        hits = [e for e in reg.values() if e["name"] == f"{forename} {surname}" and year_from <= e["year"] <= year_to
                and e["district"] in (district, DISTRICTS[district][1])]
    hits = sorted(hits, key=lambda e: e["entry_id"])
    return json.dumps({"query": {"name": f"{forename} {surname}", "district": district},
                       "results": [{k: h[k] for k in ("entry_id", "name", "year", "district")} for h in hits]})


@function_tool
def fetch_entry(entry_id: str) -> str:
    """Fetch one register entry's transcription."""
    reg = _register()
    if entry_id in reg:
        return json.dumps(reg[entry_id])
    year, code, n = entry_id.split("/")
    return json.dumps({"entry_id": entry_id, "name": "(transcription pending)", "year": int(year), "district": "Stonehaven",
                       "father": ["Robert", "David"][int(n) % 2] + " (surname illegible)"})


@function_tool
def census_search(year: int, surname: str, district: str) -> str:
    """Search one census for households of a surname in a district."""
    heads = [CLIENTS[c][4] for c in CLIENTS if CLIENTS[c][1] == surname and CLIENTS[c][3] == district]
    if not heads:
        heads = [f"Norman {surname}"]
    return json.dumps({"year": year, "district": district,
                       "households": [{"head": h, "schedule": f"{year}-{district[:3].upper()}-{i + 14}"} for i, h in enumerate(heads)]})


@function_tool(failure_error_function=None)
def order_extract(case_id: str, entry_id: str, name: str, father: str) -> str:
    """Order a certified extract of a register entry."""
    reg = _register()
    if entry_id not in reg:
        raise RuntimeError(f"404 Not Found: register entry {entry_id} does not exist")
    e = reg[entry_id]
    if e["name"] != name:
        raise RuntimeError(f"422 Unprocessable Entity: entry {entry_id} is not for {name}")
    if e["father"] != father:
        raise RuntimeError(f"422 Unprocessable Entity: parent on the application does not match entry {entry_id}")
    return json.dumps({"order": f"EX-{case_id[3:]}-{entry_id[-3:]}", "entry_id": entry_id, "status": "ordered"})


def build(model) -> Agent:
    clerk = Agent(name="records_clerk", model=model, tools=[search_births, fetch_entry],
                  instructions="You are the records clerk. Find the subject's birth entry and report it as JSON.")
    lead = Agent(name="research_lead", model=model,
                 instructions="You are the research lead. Confirm the birth entry and the household, then order the extract.",
                 tools=[clerk.as_tool("records_clerk", "Find a birth entry in the register."), census_search, order_extract])
    return Agent(name="intake", model=model, tools=[open_case], handoffs=[lead],
                 instructions="You are the intake desk of a genealogy service. Open the case, then hand off.")


@contextmanager
def session():
    with FakeModelServer(brain, model="research-model") as server:
        yield server


async def _run(server, inp: dict) -> None:
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        front = build(OpenAIChatCompletionsModel(model="research-model", openai_client=client))
        await Runner.run(front, json.dumps(inp), run_config=RunConfig(workflow_name=AGENT))
    finally:
        await client.close()


def record(server, inp: dict, path) -> None:
    proc = TrajdebugProcessor(path=str(path), name=AGENT, task=inp["request"])
    set_tracing_disabled(False)
    set_trace_processors([proc])
    try:
        asyncio.run(_run(server, inp))
    except Exception:
        pass
    finally:
        set_trace_processors([])


CASES = [
    {"case": "w_genealogy_1", "fault": "gn-clerk-neighbour", "kind": "subagent_wrong_entity", "input": _inp("CL-301"),
     "root": "generation research-model", "marker": "1889/088/02147"},
    {"case": "w_genealogy_2", "fault": "gn-search-fuzzy", "kind": "wrong_retrieval", "input": _inp("CL-309"),
     "root": "search_births", "marker": "Stonehaven"},
    {"case": "w_genealogy_3", "fault": "gn-notes-entry", "kind": "context_pollution", "input": _inp("CL-303"),
     "root": "generation research-model", "marker": "1883/021/02124"},
    {"case": "w_genealogy_4", "fault": "gn-census-spelling", "kind": "wrong_tool_args", "input": _inp("CL-307"),
     "root": "generation research-model", "marker": "McLean"},
    {"case": "w_genealogy_5", "fault": "gn-clerk-transpose", "kind": "hallucinated_value", "input": _inp("CL-305"),
     "root": "generation research-model", "marker": "1887/043/02153"},
]
