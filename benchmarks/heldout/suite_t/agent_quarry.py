"""openai_agents route: quarry blast notification (coordinator with tools, a geology sub-agent as a tool,
parallel tool calls, hand-off to a permit clerk that files the notice)."""
import asyncio
import json
import math
import re

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import FakeModelServer, Reply, tool_call

from . import kit


NAME = "blast-notice-coordinator"

BLASTS = {
    "BL-2207": {"quarry": "Carnbrae", "bench": "B3", "holes": 24, "charge_kg": 118.0, "receptor": "Dunmore Farm", "distance_m": 640, "date": "2026-05-04"},
    "BL-2211": {"quarry": "Carnbrae", "bench": "B2", "holes": 18, "charge_kg": 96.0, "receptor": "Lowfield Row", "distance_m": 720, "date": "2026-05-06"},
    "BL-2214": {"quarry": "Tolgarth", "bench": "B4", "holes": 30, "charge_kg": 104.0, "receptor": "Penhale Chapel", "distance_m": 810, "date": "2026-05-07"},
    "BL-2219": {"quarry": "Tolgarth", "bench": "B3", "holes": 20, "charge_kg": 88.0, "receptor": "Trevose Barns", "distance_m": 590, "date": "2026-05-11"},
    "BL-2223": {"quarry": "Carnbrae", "bench": "B4", "holes": 26, "charge_kg": 110.0, "receptor": "Dunmore Farm", "distance_m": 700, "date": "2026-05-12"},
    "BL-2230": {"quarry": "Tolgarth", "bench": "B2", "holes": 22, "charge_kg": 92.0, "receptor": "Penhale Chapel", "distance_m": 760, "date": "2026-05-14"},
    "BL-2236": {"quarry": "Carnbrae", "bench": "B3", "holes": 28, "charge_kg": 122.0, "receptor": "Lowfield Row", "distance_m": 680, "date": "2026-05-18"},
    "BL-2241": {"quarry": "Tolgarth", "bench": "B4", "holes": 16, "charge_kg": 84.0, "receptor": "Trevose Barns", "distance_m": 650, "date": "2026-05-19"},
    "BL-2245": {"quarry": "Carnbrae", "bench": "B2", "holes": 20, "charge_kg": 100.0, "receptor": "Lowfield Row", "distance_m": 730, "date": "2026-05-21"},
}
SITE_K = {("Carnbrae", "B2"): 1725.0, ("Carnbrae", "B3"): 1250.0, ("Carnbrae", "B4"): 980.0,
          ("Tolgarth", "B2"): 1390.0, ("Tolgarth", "B3"): 1140.0, ("Tolgarth", "B4"): 1020.0}
REGISTER = {"Carnbrae": ["Dunmore Farm", "Lowfield Row", "Carnbrae Mill", "Hollin Cottage", "Brae End", "Westgate Lodge", "Kiln House"],
            "Tolgarth": ["Penhale Chapel", "Trevose Barns", "Tolgarth School", "Nancarrow", "Polwhele Cottages", "Bodrean"]}


def ppv(k, distance_m, charge_kg):
    return round(k * (distance_m / math.sqrt(charge_kg)) ** -1.6, 2)


@function_tool(failure_error_function=None)
def get_blast_request(blast_id: str) -> str:
    """The blast design submitted by the shot-firer."""
    return json.dumps({"blast_id": blast_id, **BLASTS[blast_id]})


@function_tool(failure_error_function=None)
def get_rock_profile(quarry: str, bench: str) -> str:
    """Survey record of one quarry bench: rock type and site constant K."""
    return json.dumps({"quarry": quarry, "bench": bench, "rock": "dolerite" if bench != "B4" else "slate", "site_k": SITE_K[(quarry, bench)]})


@function_tool(failure_error_function=None)
def get_vibration_limit(receptor: str) -> str:
    """Planning-condition vibration limit at a receptor."""
    return json.dumps({"receptor": receptor, "limit_mm_s": 10.0 if "Chapel" not in receptor else 6.0})


@function_tool(failure_error_function=None)
def get_weather_window(date: str) -> str:
    """Wind and cloud window for the blast date."""
    return json.dumps({"date": date, "window": "14:30", "wind_kph": 12})


@function_tool(failure_error_function=None)
def compute_ppv(site_k: float, distance_m: float, charge_kg: float) -> str:
    """Predicted peak particle velocity (mm/s) at a distance for a charge per delay."""
    d = 500.0 if kit.active("quarry.ignore") else distance_m
    return json.dumps({"ppv_mm_s": ppv(site_k, d, charge_kg), "charge_kg": charge_kg})


@function_tool(failure_error_function=None)
def get_receptor_register(quarry: str, radius_m: int) -> str:
    """Registered receptors within a radius of the quarry."""
    names = REGISTER[quarry]
    if kit.active("quarry.trunc"):
        names = names[:4]
    return json.dumps({"quarry": quarry, "radius_m": radius_m, "receptors": names})


@function_tool(failure_error_function=None)
def file_notice(blast_id: str, ppv_mm_s: float, blast_time: str, receptors: list[str]) -> str:
    """File the blast notice with the county minerals office."""
    b = BLASTS[blast_id]
    if not re.fullmatch(r"\d\d:\d\d", blast_time):
        raise RuntimeError("minerals office API 422: blast_time: value does not match pattern ^\\d\\d:\\d\\d$")
    missing = [r for r in REGISTER[b["quarry"]] if r not in receptors]
    if missing:
        raise RuntimeError(f"minerals office API 422: notice does not cover {len(missing)} registered receptors")
    expect = ppv(SITE_K[(b["quarry"], b["bench"])], b["distance_m"], b["charge_kg"])
    if abs(ppv_mm_s - expect) > 0.05 * expect:
        raise RuntimeError(f"minerals office API 409: declared PPV {ppv_mm_s} mm/s does not reconcile with the design for {blast_id}")
    return json.dumps({"notice": f"MN-{blast_id}", "status": "accepted"})


def _calls(msgs):
    names, results = {}, {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            results[names.get(m["tool_call_id"])] = m["content"]
    return names, results


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    names, res = _calls(msgs)
    called = set(names.values())
    user = next(m["content"] for m in msgs if m["role"] == "user")
    if system.startswith("You are the quarry geologist"):
        m = re.search(r"bench (B\d) at (\w+)", user)
        bench, quarry = m.group(1), m.group(2)
        if "get_rock_profile" not in called:
            if kit.active("quarry.entity"):
                bench = f"B{int(bench[1]) - 1}"
            return Reply(tool_calls=(tool_call("get_rock_profile", {"quarry": quarry, "bench": bench}),))
        prof = json.loads(res["get_rock_profile"])
        return json.dumps({"bench": prof["bench"], "rock": prof["rock"], "site_k": prof["site_k"]})
    blast_id = re.search(r"BL-\d+", user).group(0)
    if system.startswith("You are the permit clerk"):
        if "file_notice" not in called:
            req = json.loads(res["get_blast_request"])
            p = json.loads(res["compute_ppv"])
            window = json.loads(res["get_weather_window"])["window"]
            if kit.active("quarry.drift"):
                h, mi = window.split(":")
                window = f"{int(h) - 12}:{mi} PM"
            recs = json.loads(res["get_receptor_register"])["receptors"]
            return Reply(tool_calls=(tool_call("file_notice", {"blast_id": req["blast_id"], "ppv_mm_s": p["ppv_mm_s"],
                                                               "blast_time": window, "receptors": recs}),))
        return f"Notice {json.loads(res['file_notice'])['notice']} filed for {blast_id}."
    if "get_blast_request" not in called:
        return Reply(tool_calls=(tool_call("get_blast_request", {"blast_id": blast_id}),))
    req = json.loads(res["get_blast_request"])
    if "geology_analyst" not in called:
        return Reply(tool_calls=(tool_call("geology_analyst", {"input": f"Rock profile for bench {req['bench']} at {req['quarry']}"}),))
    if "get_vibration_limit" not in called:
        return Reply(tool_calls=(tool_call("get_vibration_limit", {"receptor": req["receptor"]}),
                                 tool_call("get_weather_window", {"date": req["date"]})))
    if "compute_ppv" not in called:
        geo = json.loads(res["geology_analyst"])
        charge = req["charge_kg"] * req["holes"] if kit.active("quarry.args") else req["charge_kg"]
        return Reply(tool_calls=(tool_call("compute_ppv", {"site_k": geo["site_k"], "distance_m": req["distance_m"], "charge_kg": charge}),))
    if "get_receptor_register" not in called:
        return Reply(tool_calls=(tool_call("get_receptor_register", {"quarry": req["quarry"], "radius_m": 1000}),))
    return Reply(tool_calls=(tool_call("transfer_to_permit_clerk", {}),))


def run_agent(blast_id: str, path: str) -> None:
    with FakeModelServer(policy) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
        geology = Agent(name="geology_analyst", model=model, tools=[get_rock_profile],
                        instructions="You are the quarry geologist. Look up the bench survey and answer JSON with bench, rock and site_k.")
        clerk = Agent(name="permit_clerk", model=model, tools=[file_notice],
                      instructions="You are the permit clerk. File the blast notice with the minerals office.")
        coordinator = Agent(name="blast_coordinator", model=model, handoffs=[clerk],
                            tools=[get_blast_request, geology.as_tool(tool_name="geology_analyst", tool_description="Ask the quarry geologist about a bench."),
                                   get_vibration_limit, get_weather_window, compute_ppv, get_receptor_register],
                            instructions="You are the blast coordinator. Gather the design, geology, limits and receptors, then hand off to the permit clerk.")
        set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"notify blast {blast_id}")])
        async def go():
            try:
                await Runner.run(coordinator, f"Prepare and file the blast notice for {blast_id}.",
                                 run_config=RunConfig(workflow_name=NAME), max_turns=20)
            finally:
                await client.close()

        try:
            asyncio.run(go())
        except Exception:  # noqa: BLE001
            pass
        finally:
            set_trace_processors([])


FAULTS = [
    ("subagent_wrong_entity", "quarry.entity", "BL-2207", "generation fake-model", '"bench": "B2"'),
    ("wrong_tool_args", "quarry.args", "BL-2214", "generation fake-model", '"charge_kg": 3120.0'),
    ("tool_ignores_argument", "quarry.ignore", "BL-2219", "compute_ppv", '"ppv_mm_s": 1.97'),
    ("truncated_result", "quarry.trunc", "BL-2223", "get_receptor_register", '"Hollin Cottage"]'),
    ("format_drift", "quarry.drift", "BL-2236", "generation fake-model", "2:30 PM"),
]
REFS = ["BL-2211", "BL-2230", "BL-2241", "BL-2245"]
