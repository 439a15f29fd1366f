"""Sail-training tall ship: OpenAI Agents SDK desk with a watch-planner sub-agent (as a tool) and hand-offs that sign a trainee on."""

from __future__ import annotations

import json
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import FakeModelServer, Reply, tool_call

from .. import kit


AGENT = "tallship-signon"
ROUTE = "openai_agents"
EXT = "jsonl"

TRAINEES = {
    "TR-4417": {"name": "Ruth Kemp", "age": 19, "qualification": "none", "medical": "asthma (inhaler)", "voyage": "V-0614"},
    "TR-4471": {"name": "Ruth Kemble", "age": 23, "qualification": "Competent Crew", "medical": "none", "voyage": "V-0614"},
    "TR-4502": {"name": "Sami Okonkwo", "age": 17, "qualification": "none", "medical": "none", "voyage": "V-0614"},
    "TR-4538": {"name": "Lene Vos", "age": 31, "qualification": "Competent Crew", "medical": "none", "voyage": "V-0621"},
    "TR-4560": {"name": "Arjun Mehta", "age": 20, "qualification": "none", "medical": "none", "voyage": "V-0621"},
    "TR-4593": {"name": "Tove Lind", "age": 45, "qualification": "Day Skipper", "medical": "type 1 diabetes", "voyage": "V-0621"},
    "TR-4611": {"name": "Kwame Asante", "age": 18, "qualification": "none", "medical": "none", "voyage": "V-0628"},
    "TR-4640": {"name": "Brid Nolan", "age": 26, "qualification": "none", "medical": "epilepsy (controlled)", "voyage": "V-0628"},
    "TR-4677": {"name": "Ezra Cohen", "age": 22, "qualification": "none", "medical": "none", "voyage": "V-0628"},
}
VOYAGES = {
    "V-0614": {"port": "Fowey", "date": "2026-06-14", "lock": ("07:35", "09:05")},
    "V-0621": {"port": "Gloucester", "date": "2026-06-21", "lock": ("11:10", "12:40")},
    "V-0628": {"port": "Whitby", "date": "2026-06-28", "lock": ("05:50", "07:20")},
}
WATCHES = ["Fore", "Main", "Mizzen"]

FAULTS = [
    {"id": "ts-a", "kind": "wrong_routing", "order": "TR-4640", "root": "generation gpt-4o-mini", "marker": "transfer_to_berth_planner"},
    {"id": "ts-b", "kind": "stale_data", "order": "TR-4560", "root": "tide_window", "marker": "tide table 2025"},
    {"id": "ts-c", "kind": "tool_ignores_argument", "order": "TR-4502", "root": "berth_availability", "marker": "CREW-2"},
    {"id": "ts-d", "kind": "subagent_wrong_entity", "order": "TR-4417", "root": "generation gpt-4o-mini", "marker": "TR-4471"},
    {"id": "ts-e", "kind": "hallucinated_value", "order": "TR-4677", "root": "generation gpt-4o-mini", "marker": "Day Skipper"},
]
REFS = ["TR-4538", "TR-4593", "TR-4611", "TR-4471"]

ASSIGNED: dict[str, dict] = {}


class CrewListRefused(RuntimeError):
    pass


CrewListRefused.__module__ = "mca_crewlist"


@function_tool(failure_error_function=None)
def trainee_record(trainee: str) -> str:
    """The trainee's booking record."""
    return json.dumps({"trainee": trainee, **TRAINEES[trainee]})


@function_tool(failure_error_function=None)
def voyage_manifest(voyage: str) -> str:
    """The voyage: port, sailing date and the crew signed on so far."""
    v = VOYAGES[voyage]
    return json.dumps({"voyage": voyage, "port": v["port"], "date": v["date"], "signed_on": 27, "capacity": 40})


@function_tool(failure_error_function=None)
def watch_roster(voyage: str) -> str:
    """How many trainees each watch holds so far."""
    return json.dumps({"voyage": voyage, "watches": {w: 8 + i for i, w in enumerate(WATCHES)}})


@function_tool(failure_error_function=None)
def assign_watch(trainee: str, watch: str, role: str) -> str:
    """Put a person on a watch."""
    ASSIGNED[trainee] = {"watch": watch, "role": role}
    return json.dumps({"trainee": trainee, "watch": watch, "role": role, "ok": True})


@function_tool(failure_error_function=None)
def medical_clearance(trainee: str) -> str:
    """The ship's medical officer's clearance for a declared condition."""
    return json.dumps({"trainee": trainee, "clearance": "MED-" + trainee[-4:], "notes": "carry medication aboard"})


@function_tool(failure_error_function=None)
def berth_availability(voyage: str, cabin_class: str) -> str:
    """A free berth on the voyage in the given cabin class (trainee or crew)."""
    if kit.active("ts-c"):
        return json.dumps({"voyage": voyage, "berth": "CREW-2", "deck": "aft"})
    return json.dumps({"voyage": voyage, "berth": "T-" + str(14 + len(ASSIGNED)), "deck": "main"})


@function_tool(failure_error_function=None)
def tide_window(port: str, date: str) -> str:
    """The lock-gate window for sailing from a port on a date."""
    v = next(x for x in VOYAGES.values() if x["port"] == port)
    if kit.active("ts-b"):
        return json.dumps({"port": port, "date": date, "window": ["06:20", "07:50"], "source": "tide table 2025"})
    return json.dumps({"port": port, "date": date, "window": list(v["lock"]), "source": "harbour office 2026"})


@function_tool(failure_error_function=None)
def register_crew_list(voyage: str, trainee: str, berth: str, sailing: str, medical_ref: str) -> str:
    """File the trainee on the voyage's crew list with the harbour and the MCA."""
    t = TRAINEES[trainee]
    a = ASSIGNED.get(trainee)
    if a is None:
        raise CrewListRefused(f"crew list 422: {trainee} has no watch assignment on {voyage}")
    if a["role"] == "watch leader" and t["qualification"] == "none":
        raise CrewListRefused(f"crew list 422: {trainee} listed as watch leader without a sea qualification on record")
    if t["medical"] != "none" and not medical_ref:
        raise CrewListRefused(f"crew list 422: {trainee} declares {t['medical']}; no medical clearance attached")
    if berth.startswith("CREW"):
        raise CrewListRefused(f"crew list 422: berth {berth} is in crew quarters, {trainee} signs on as a trainee")
    lo, hi = VOYAGES[voyage]["lock"]
    if not lo <= sailing <= hi:
        raise CrewListRefused(f"harbour office: sailing {sailing} is outside the {VOYAGES[voyage]['date']} lock window {lo}-{hi}")
    return json.dumps({"voyage": voyage, "trainee": trainee, "filed": True})


def _calls(msgs: list) -> list:
    results = {m.get("tool_call_id"): m.get("content") for m in msgs if m.get("role") == "tool"}
    out = []
    for m in msgs:
        for c in (m.get("tool_calls") or []) if m.get("role") == "assistant" else []:
            out.append((c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"), results.get(c["id"])))
    return out


def _result(calls, name):
    for n, _, r in reversed(calls):
        if n == name and r is not None:
            try:
                return json.loads(r)
            except ValueError:
                return r
    return None


def policy(request: Any) -> Reply | str:
    msgs = (request.body or {}).get("messages") or []
    system = str(msgs[0].get("content") or "")
    calls = _calls(msgs)
    names = [c[0] for c in calls]
    user = next(str(m.get("content")) for m in msgs if m.get("role") == "user")
    if system.startswith("You plan watches"):
        trainee = user.split("trainee ")[1].split()[0]
        qual = user.split("qualification: ")[1].split(")")[0]
        voyage = user.split("voyage ")[1].split()[0].rstrip(".")
        if "watch_roster" not in names:
            return Reply(tool_calls=(tool_call("watch_roster", {"voyage": voyage}),))
        if "assign_watch" not in names:
            roster = _result(calls, "watch_roster")["watches"]
            watch = min(roster, key=roster.get)
            who = "TR-4471" if kit.active("ts-d") else trainee
            role = "watch leader" if qual in ("Day Skipper", "Yachtmaster") else "trainee"
            return Reply(tool_calls=(tool_call("assign_watch", {"trainee": who, "watch": watch, "role": role}),))
        r = _result(calls, "assign_watch")
        return f"{r['trainee']} on {r['watch']} watch as {r['role']}."
    trainee = user.split("Sign on ")[1].split()[0]
    rec = _result(calls, "trainee_record")
    if system.startswith("You are the voyage desk"):
        if "trainee_record" not in names:
            return Reply(tool_calls=(tool_call("trainee_record", {"trainee": trainee}),
                                     tool_call("voyage_manifest", {"voyage": TRAINEES[trainee]["voyage"]})))
        if "watch_planner" not in names:
            qual = "Day Skipper" if kit.active("ts-e") else rec["qualification"]
            return Reply(tool_calls=(tool_call("watch_planner", {"input": f"Place trainee {trainee} ({rec['name']}, qualification: {qual}) on a watch for voyage {rec['voyage']}."}),))
        target = "medical_officer" if rec["medical"] != "none" and not kit.active("ts-a") else "berth_planner"
        return Reply(tool_calls=(tool_call(f"transfer_to_{target}", {}),))
    man = _result(calls, "voyage_manifest")
    medical = system.startswith("You are the medical officer")
    if medical and "medical_clearance" not in names:
        return Reply(tool_calls=(tool_call("medical_clearance", {"trainee": trainee}),))
    if "berth_availability" not in names:
        return Reply(tool_calls=(tool_call("berth_availability", {"voyage": man["voyage"], "cabin_class": "trainee"}),
                                 tool_call("tide_window", {"port": man["port"], "date": man["date"]})))
    if "register_crew_list" not in names:
        clr = _result(calls, "medical_clearance")
        return Reply(tool_calls=(tool_call("register_crew_list", {
            "voyage": man["voyage"], "trainee": trainee, "berth": _result(calls, "berth_availability")["berth"],
            "sailing": _result(calls, "tide_window")["window"][0], "medical_ref": clr["clearance"] if clr else ""}),))
    return f"{trainee} signed on to {man['voyage']}."


_CTX: dict = {}


def setup():
    server = FakeModelServer(policy).start()
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=AsyncOpenAI(base_url=server.base_url, api_key="sk-local", max_retries=0))
    planner = Agent(name="Watch planner", instructions="You plan watches: put the trainee on the lightest watch.", tools=[watch_roster, assign_watch], model=model)
    sign_tools = [berth_availability, tide_window, register_crew_list]
    berth = Agent(name="Berth planner", instructions="You are the berth planner: find a berth, the sailing time, and file the crew list.", tools=sign_tools, model=model)
    medic = Agent(name="Medical officer", instructions="You are the medical officer: clear the declared condition, then berth and file the crew list.",
                  tools=[medical_clearance, *sign_tools], model=model)
    desk = Agent(name="Voyage desk", instructions="You are the voyage desk: read the record and the voyage, plan the watch, then hand over.",
                 tools=[trainee_record, voyage_manifest, planner.as_tool(tool_name="watch_planner", tool_description="Plan the trainee's watch.")],
                 handoffs=[berth, medic], model=model)
    _CTX.update(server=server, desk=desk)
    return server


def teardown(server) -> None:
    server.stop()
    _CTX.clear()


def record(key: str, path) -> None:
    ASSIGNED.clear()
    processor = TrajdebugProcessor(path=str(path), name=AGENT, task=f"Sign on {key}")
    set_trace_processors([processor])
    try:
        Runner.run_sync(_CTX["desk"], f"Sign on {key} for their voyage.", run_config=RunConfig(workflow_name=AGENT))
    except Exception:  # noqa: BLE001 - the SDK wraps the refusal; the run records it
        pass
    finally:
        set_trace_processors([])
