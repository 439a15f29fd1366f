"""openai_agents route: regatta entry desk (tools, a membership sub-agent as a tool, parallel tool calls,
hand-off to a keelboat or dinghy handicapper that files the entry with the race office)."""
import asyncio
import json
import re

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import FakeModelServer, Reply, tool_call

from . import kit


NAME = "regatta-entry-desk"

ENTRIES = {
    "EN-401": {"boat": "Kestrel", "sail_no": "GBR 4471", "class": "J/80", "member": "M-2518", "crew": ["Iona Reid", "Tom Hale", "Priya Das"]},
    "EN-402": {"boat": "Wren", "sail_no": "GBR 201", "class": "Laser", "member": "M-3307", "crew": ["Sam Kerr"]},
    "EN-403": {"boat": "Halcyon", "sail_no": "GBR 8812", "class": "Sigma 33", "member": "M-1164", "crew": ["Ann Moy", "Raj Patel", "Lee Chan", "Bo Lund"]},
    "EN-404": {"boat": "Puffin", "sail_no": "GBR 3390", "class": "RS200", "member": "M-4072", "crew": ["Ella Fox", "Dan Rowe"]},
    "EN-405": {"boat": "Corsair", "sail_no": "GBR 6120", "class": "J/80", "member": "M-2291", "crew": ["Mia Lowe", "Ned Shaw", "Kay Orr"]},
    "EN-406": {"boat": "Skua", "sail_no": "GBR 1458", "class": "Laser", "member": "M-3519", "crew": ["Joe Tait"]},
    "EN-407": {"boat": "Moonraker", "sail_no": "GBR 9034", "class": "Sigma 33", "member": "M-1836", "crew": ["Ruth Gale", "Abe Cole", "Liv Hart", "Cal Bray"]},
    "EN-408": {"boat": "Tern", "sail_no": "GBR 2760", "class": "RS200", "member": "M-4425", "crew": ["Zoe Park", "Ian Watt"]},
    "EN-409": {"boat": "Osprey", "sail_no": "GBR 7705", "class": "Sigma 33", "member": "M-1902", "crew": ["Eve Nash", "Hugh Penn", "Ola Berg"]},
}
MEMBERS = {"M-2518": "Iona Reid", "M-2581": "Alec Munro", "M-3307": "Sam Kerr", "M-1164": "Ann Moy", "M-1146": "Colin Tate",
           "M-4072": "Ella Fox", "M-2291": "Mia Lowe", "M-3519": "Joe Tait", "M-1836": "Ruth Gale", "M-4425": "Zoe Park",
           "M-1902": "Eve Nash", "M-1920": "Greta Moss"}
KEELBOATS = {"J/80": (8.0, 31.0, 45.0), "Sigma 33": (10.1, 46.0, 60.0)}
DINGHIES = {"Laser": (4.2, 7.1, 20.0), "RS200": (4.0, 11.6, 25.0)}


@function_tool(failure_error_function=None)
def get_entry(entry_id: str) -> str:
    """The entry form as submitted online."""
    e = ENTRIES[entry_id]
    return json.dumps({"entry_id": entry_id, "boat": e["boat"], "sail_no": e["sail_no"], "boat_class": e["class"],
                       "member_id": e["member"], "crew": e["crew"]})


@function_tool(failure_error_function=None)
def lookup_member(member_id: str) -> str:
    """Club membership register entry."""
    return json.dumps({"member_id": member_id, "name": MEMBERS[member_id], "status": "full", "paid_until": "2026-12-31"})


@function_tool(failure_error_function=None)
def get_crew_certificates(crew: list[str]) -> str:
    """Sea-survival certificates on file for the crew."""
    start = 1 if kit.active("reg.crew") else 0
    certs = [{"name": crew[i], "cert": f"SS-{1000 + len(crew[i]) * 37 + i}"} for i in range(start, len(crew))]
    return json.dumps({"checked": len(certs), "certificates": certs})


def _registry(sail_no):
    for e in ENTRIES.values():
        if e["sail_no"] == sail_no:
            length, area, _fee = {**KEELBOATS, **DINGHIES}[e["class"]]
            return {"sail_no": sail_no, "hull_length_m": length, "sail_area_m2": area}
    raise KeyError(sail_no)


@function_tool(failure_error_function=None)
def get_boat_measurement(sail_no: str) -> str:
    """Measurement record of a boat from the national registry."""
    try:
        if kit.active("reg.registry"):
            raise TimeoutError("registry read timed out")
        rec = _registry(sail_no)
    except (TimeoutError, KeyError):
        rec = {"sail_no": sail_no, "hull_length_m": 0.0, "sail_area_m2": 0.0}
    return json.dumps(rec)


@function_tool(failure_error_function=None)
def compute_rating(boat_class: str, hull_length_m: float, sail_area_m2: float, system: str) -> str:
    """Handicap rating (IRC TCC for keelboats, Portsmouth number for dinghies)."""
    if system == "IRC":
        value = round(0.1 * (sail_area_m2 ** 0.5) + 0.06 * hull_length_m, 3)
    else:
        value = round(1400 - 20 * hull_length_m - 8 * sail_area_m2)
    return json.dumps({"boat_class": boat_class, "system": system, "rating": value})


@function_tool(failure_error_function=None)
def get_entry_fee(boat_class: str) -> str:
    """Entry fee tariff for a class."""
    return json.dumps({"boat_class": boat_class, "fee": {**KEELBOATS, **DINGHIES}[boat_class][2]})


@function_tool(failure_error_function=None)
def file_entry(entry_id: str, owner_name: str, system: str, rating: float, certificates: int, entry_fee: float) -> str:
    """File the entry with the race office."""
    e = ENTRIES[entry_id]
    if owner_name != MEMBERS[e["member"]]:
        raise RuntimeError(f"race office 422: {entry_id} owner is not the registered club member for this entry")
    want = "IRC" if e["class"] in KEELBOATS else "PY"
    if system != want:
        raise RuntimeError(f"race office 422: {e['class']} fleet scored under {want}; certificate type {system} refused")
    if certificates != len(e["crew"]):
        raise RuntimeError(f"race office 422: {entry_id} crew list not fully covered by sea-survival certificates")
    _length, _area, fee = {**KEELBOATS, **DINGHIES}[e["class"]]
    if rating <= 0 or (system == "IRC" and rating < 0.5):
        raise RuntimeError(f"race office 422: rating {rating} outside the {e['class']} band")
    if abs(entry_fee - fee) > 0.001:
        raise RuntimeError(f"payments 402: amount {entry_fee:.2f} does not match the {e['class']} tariff")
    return json.dumps({"entry": entry_id, "status": "accepted", "start_group": e["class"]})


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
    if system.startswith("You are the membership secretary"):
        member = re.search(r"M-\d{4}", user).group(0)
        if "lookup_member" not in called:
            if kit.active("reg.member"):
                member = member[:4] + member[5] + member[4]
            return Reply(tool_calls=(tool_call("lookup_member", {"member_id": member}),))
        rec = json.loads(res["lookup_member"])
        return json.dumps({"member_id": rec["member_id"], "name": rec["name"], "in_good_standing": True})
    entry_id = re.search(r"EN-\d+", user).group(0)
    if "handicapper" in system.split(".")[0]:
        ent = json.loads(res["get_entry"])
        rig = json.loads(res["get_boat_measurement"])
        sysname = "IRC" if "keelboat" in system.split(".")[0] else "PY"
        if "compute_rating" not in called:
            return Reply(tool_calls=(tool_call("compute_rating", {"boat_class": ent["boat_class"], "hull_length_m": rig["hull_length_m"],
                                                                  "sail_area_m2": rig["sail_area_m2"], "system": sysname}),))
        if "get_entry_fee" not in called:
            return Reply(tool_calls=(tool_call("get_entry_fee", {"boat_class": ent["boat_class"]}),))
        if "file_entry" not in called:
            fee = json.loads(res["get_entry_fee"])["fee"]
            if kit.active("reg.fee"):
                fee = 38.5
            return Reply(tool_calls=(tool_call("file_entry", {
                "entry_id": entry_id, "owner_name": json.loads(res["membership_secretary"])["name"], "system": sysname,
                "rating": json.loads(res["compute_rating"])["rating"],
                "certificates": json.loads(res["get_crew_certificates"])["checked"], "entry_fee": fee}),))
        return f"Entry {entry_id} accepted."
    if "get_entry" not in called:
        return Reply(tool_calls=(tool_call("get_entry", {"entry_id": entry_id}),))
    ent = json.loads(res["get_entry"])
    if "membership_secretary" not in called:
        return Reply(tool_calls=(tool_call("membership_secretary", {"input": f"Confirm membership of {ent['member_id']} for {ent['boat']}"}),))
    if "get_crew_certificates" not in called:
        return Reply(tool_calls=(tool_call("get_crew_certificates", {"crew": ent["crew"]}),
                                 tool_call("get_boat_measurement", {"sail_no": ent["sail_no"]})))
    target = "keelboat" if ent["boat_class"] in KEELBOATS else "dinghy"
    if kit.active("reg.route") and ent["boat_class"] == "J/80":
        target = "dinghy"
    return Reply(tool_calls=(tool_call(f"transfer_to_{target}_handicapper", {}),))


def run_agent(entry_id: str, path: str) -> None:
    with FakeModelServer(policy) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
        secretary = Agent(name="membership_secretary", model=model, tools=[lookup_member],
                          instructions="You are the membership secretary. Look the member up and answer JSON.")
        tools = [compute_rating, get_entry_fee, file_entry]
        keel = Agent(name="keelboat_handicapper", model=model, tools=tools,
                     instructions="You are the keelboat handicapper. Rate the boat under IRC and file the entry.")
        dinghy = Agent(name="dinghy_handicapper", model=model, tools=tools,
                       instructions="You are the dinghy handicapper. Rate the boat on the Portsmouth Yardstick and file the entry.")
        desk = Agent(name="entry_desk", model=model, handoffs=[keel, dinghy],
                     tools=[get_entry, secretary.as_tool(tool_name="membership_secretary", tool_description="Ask the membership secretary."),
                            get_crew_certificates, get_boat_measurement],
                     instructions="You are the regatta entry desk. Check the entry, then pass it to the right handicapper.")
        set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"process regatta entry {entry_id}")])

        async def go():
            try:
                await Runner.run(desk, f"Process regatta entry {entry_id}.", run_config=RunConfig(workflow_name=NAME), max_turns=20)
            finally:
                await client.close()

        try:
            asyncio.run(go())
        except Exception:  # noqa: BLE001
            pass
        finally:
            set_trace_processors([])


FAULTS = [
    ("subagent_wrong_entity", "reg.member", "EN-401", "generation fake-model", '"member_id": "M-2581"'),
    ("wrong_routing", "reg.route", "EN-405", "generation fake-model", "transfer_to_dinghy_handicapper"),
    ("hallucinated_value", "reg.fee", "EN-403", "generation fake-model", '"entry_fee": 38.5'),
    ("swallowed_error", "reg.registry", "EN-407", "get_boat_measurement", '"hull_length_m": 0.0'),
    ("off_by_one", "reg.crew", "EN-409", "get_crew_certificates", '"checked": 2'),
]
REFS = ["EN-402", "EN-404", "EN-406", "EN-408"]
