"""Harbour pilotage desk (openai_agents route): dispatcher hand-off, a registry sub-agent as a tool, tides, roster, booking."""

from __future__ import annotations

import json
from typing import Any

import nkit
from agents import Agent, function_tool

from trajdebug.testing import Reply, tool_call


NAME = "harbour-pilotage"
ROUTE = "openai_agents"
DOMAIN = "harbour pilotage booking"
SHAPE = "dispatcher hands off to an inbound or outbound desk; desk calls a registry sub-agent (as_tool), tide table, roster, then books"

VESSELS = {
    "Nordic Star": {"imo": "9412345", "loa_m": 229, "draft_m": 12.4},
    "Nordic Starling": {"imo": "9633012", "loa_m": 141, "draft_m": 8.1},
    "Cape Fulmar": {"imo": "9501120", "loa_m": 183, "draft_m": 10.6},
    "Aurora Bay": {"imo": "9388771", "loa_m": 199, "draft_m": 11.5},
    "Tern Trader": {"imo": "9720455", "loa_m": 118, "draft_m": 7.2},
    "Kittiwake": {"imo": "9287340", "loa_m": 162, "draft_m": 9.4},
    "Solent Ridge": {"imo": "9554218", "loa_m": 240, "draft_m": 12.6},
    "Moray Dawn": {"imo": "9469903", "loa_m": 176, "draft_m": 10.2},
}
TIDES = {
    "2026-10-03": [("HW", "05:40", 4.8), ("LW", "11:52", 1.2), ("HW", "18:05", 6.3), ("LW", "23:58", 1.0)],
    "2026-10-04": [("HW", "06:22", 5.6), ("LW", "12:31", 1.1), ("HW", "18:47", 6.0), ("LW", "00:40", 0.9)],
    "2026-10-05": [("HW", "07:05", 4.4), ("LW", "13:15", 1.3), ("HW", "19:30", 5.9)],
}
CHART_DATUM_DEPTH = 8.0
UKC = 1.0
ROSTER = {"2026-10-03": [("Capt. Ines Varga", 250), ("Capt. Tom Rudd", 190)],
          "2026-10-04": [("Capt. Ola Brenn", 260), ("Capt. Tom Rudd", 190)],
          "2026-10-05": [("Capt. Ines Varga", 250), ("Capt. Sam Otieno", 200)]}
INPUTS = {
    "v1": {"vessel": "Nordic Star", "date": "2026-10-03", "move": "inbound"},
    "v2": {"vessel": "Aurora Bay", "date": "2026-10-04", "move": "inbound"},
    "v3": {"vessel": "Solent Ridge", "date": "2026-10-04", "move": "inbound"},
    "r1": {"vessel": "Cape Fulmar", "date": "2026-10-03", "move": "inbound"},
    "r2": {"vessel": "Tern Trader", "date": "2026-10-05", "move": "inbound"},
    "r3": {"vessel": "Kittiwake", "date": "2026-10-04", "move": "inbound"},
    "r4": {"vessel": "Moray Dawn", "date": "2026-10-05", "move": "inbound"},
}
REFS = ["r1", "r2", "r3", "r4"]
FAULTS = [
    {"id": "hp-entity", "kind": "subagent_wrong_entity", "input": "v1", "root": "generation fake-model", "marker": "Nordic Starling"},
    {"id": "hp-route", "kind": "wrong_routing", "input": "v2", "root": "generation fake-model", "marker": "transfer_to_outbound_desk"},
    {"id": "hp-time", "kind": "hallucinated_value", "input": "v3", "root": "generation fake-model", "marker": "17:35"},
    {"id": "hp-tide", "kind": "truncated_result", "input": "v1", "root": "tide_table", "marker": "LW 11:52 1.2 m\""},
    {"id": "hp-roster", "kind": "swallowed_error", "input": "v3", "root": "pilot_roster", "marker": "\"Capt. Tom Rudd (max LOA 190 m)\""},
]
_TASK: dict[str, Any] = {}


@function_tool
def lookup_vessel(name: str) -> str:
    """Look a vessel up in the national registry by name."""
    v = VESSELS[name]
    return f"{name}: IMO {v['imo']}, LOA {v['loa_m']} m, max draft {v['draft_m']} m"


@function_tool
def tide_table(date: str) -> str:
    """Tide predictions for the harbour bar on a date."""
    rows = TIDES[date]
    if nkit.active("hp-tide"):
        rows = rows[:2]
    return "; ".join(f"{k} {t} {h} m" for k, t, h in rows)


@function_tool
def pilot_roster(date: str) -> str:
    """Pilots on duty on a date with their licence limits."""
    try:
        if nkit.active("hp-roster"):
            raise ConnectionError("roster service 503")
        rows = ROSTER[date]
    except ConnectionError:
        rows = [("Capt. Tom Rudd", 190)]
    return "; ".join(f"{n} (max LOA {m} m)" for n, m in rows)


@function_tool(failure_error_function=None)
def book_pilot(imo: str, date: str, boarding_time: str, pilot: str) -> str:
    """Book a pilot boarding for an inbound transit over the bar."""
    vessel = next(v for v in VESSELS.values() if v["imo"] == imo)
    real = _TASK["vessel"]
    if imo != VESSELS[real]["imo"]:
        raise RuntimeError(f"VTS booking rejected: IMO {imo} has no pre-arrival notice for {date}")
    tide = {t: h for k, t, h in TIDES[date] if k == "HW"}
    if boarding_time not in tide:
        raise RuntimeError(f"VTS booking rejected: {boarding_time} on {date} is not a tidal window for the bar")
    need = vessel["draft_m"] + UKC - CHART_DATUM_DEPTH
    if tide[boarding_time] < need:
        raise RuntimeError(f"VTS booking rejected: IMO {imo} at {vessel['draft_m']} m draft needs {need:.1f} m of tide, {boarding_time} gives {tide[boarding_time]} m")
    licence = dict(ROSTER[date]).get(pilot)
    if licence is None:
        raise RuntimeError(f"VTS booking rejected: {pilot} is not on duty {date}")
    if licence < vessel["loa_m"]:
        raise RuntimeError(f"VTS booking rejected: {pilot}'s licence covers {licence} m LOA, IMO {imo} is {vessel['loa_m']} m")
    return f"Booked {pilot} boarding {date} {boarding_time} for IMO {imo}, ref PB-{imo[-4:]}"


@function_tool(failure_error_function=None)
def book_departure(imo: str, date: str) -> str:
    """Book an outbound pilotage from a berth."""
    raise RuntimeError(f"Port system: IMO {imo} has no berth allocation on {date}, departure cannot be booked")


registry_clerk = Agent(name="registry_clerk", instructions="REGISTRY: find the vessel named in the request and report its particulars.", tools=[lookup_vessel])
desk_tools = [
    registry_clerk.as_tool(tool_name="vessel_registry", tool_description="Ask the registry clerk for a vessel's particulars."),
    tide_table,
    pilot_roster,
]
inbound_desk = Agent(name="inbound_desk", instructions="INBOUND: plan and book the inbound pilotage.", tools=[*desk_tools, book_pilot])
outbound_desk = Agent(name="outbound_desk", instructions="OUTBOUND: plan and book the outbound pilotage.", tools=[desk_tools[0], book_departure])
dispatcher = Agent(name="dispatcher", instructions="DISPATCH: hand the request to the right desk.", handoffs=[inbound_desk, outbound_desk])


def policy(request) -> Any:
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    user = next(m["content"] for m in msgs if m["role"] == "user")
    results = nkit.chat_tool_results(msgs)
    done = {n: (a, r) for n, a, r in results}
    if system.startswith("REGISTRY"):
        if "lookup_vessel" not in done:
            name = user.split("Particulars for ")[1].strip(".")
            if nkit.active("hp-entity"):
                name = name + "ling"
            return Reply(tool_calls=(tool_call("lookup_vessel", {"name": name}),))
        return done["lookup_vessel"][1]
    req = json.loads(user)
    if system.startswith("DISPATCH"):
        desk = "outbound_desk" if nkit.active("hp-route") else f"{req['move']}_desk"
        return Reply(tool_calls=(tool_call(f"transfer_to_{desk}", {}),))
    if "vessel_registry" not in done:
        return Reply(tool_calls=(tool_call("vessel_registry", {"input": f"Particulars for {req['vessel']}."}),))
    part = done["vessel_registry"][1]
    imo = part.split("IMO ")[1].split(",")[0]
    if system.startswith("OUTBOUND"):
        if "book_departure" not in done:
            return Reply(tool_calls=(tool_call("book_departure", {"imo": imo, "date": req["date"]}),))
        return "Departure booked."
    if "tide_table" not in done:
        return Reply(tool_calls=(tool_call("tide_table", {"date": req["date"]}),))
    if "pilot_roster" not in done:
        return Reply(tool_calls=(tool_call("pilot_roster", {"date": req["date"]}),))
    if "book_pilot" not in done:
        draft = float(part.split("max draft ")[1].split()[0])
        loa = float(part.split("LOA ")[1].split()[0])
        need = draft + UKC - CHART_DATUM_DEPTH
        hws = [(e.split()[1], float(e.split()[2])) for e in done["tide_table"][1].split("; ") if e.startswith("HW")]
        ok = [t for t, h in hws if h >= need]
        when = ok[0] if ok else max(hws, key=lambda x: x[1])[0]
        if nkit.active("hp-time"):
            when = "17:35"
        pilots = [(p.split(" (max LOA ")[0], float(p.split("max LOA ")[1].split()[0])) for p in done["pilot_roster"][1].split("; ")]
        fit = [p for p, m in pilots if m >= loa] or [pilots[0][0]]
        return Reply(tool_calls=(tool_call("book_pilot", {"imo": imo, "date": req["date"], "boarding_time": when, "pilot": fit[0]}),))
    return f"Pilotage booked: {done['book_pilot'][1]}"


def record(inp: dict, path) -> None:
    nkit.SERVER.use(policy)
    _TASK.clear()
    _TASK.update(inp)
    nkit.run_agents(dispatcher, json.dumps(inp), path, NAME, f"pilotage for {inp['vessel']} on {inp['date']}")
