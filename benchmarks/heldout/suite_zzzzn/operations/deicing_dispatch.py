"""deicing-dispatch: an airport's de-icing coordination desk planning the de-icing/anti-icing of a departure
(remote pads or gate rigs), with holdover times checked before the aircraft is released.

Route: the OpenAI Agents SDK (`agents`, Chat Completions model) recorded by trajdebug's tracing processor
(`TrajdebugProcessor`), JSONL.
Shape: a triage agent with two parallel tool calls (flight, weather) that hands off to one of two coordinator
agents; a coordinator makes parallel calls (holdover table and taxi time; fluid estimate and truck stock, or the
gate rigs), books a pad or a rig, and calls the release check, which raises when the plan does not hold.
"""

from __future__ import annotations

import ast
import asyncio
import json
from typing import Any

from trajdebug.testing import FakeModelServer, Reply, tool_call

from ._kit import chat_messages, system_text, text_of, tool_results

NAME = "deicing-dispatch"
ROUTE = "openai_agents"
DOMAIN = "airport ground handling: aircraft de-icing/anti-icing dispatch and holdover checks"
SHAPE = "triage agent (parallel tool calls) -> hand-off -> coordinator agent (parallel tool calls, booking tool, release check tool)"

SWITCH: str | None = None


def _on(case: str) -> bool:
    return SWITCH == case


FLIGHTS = {
    "LH2040": {"flight": "LH2040", "date": "2025-01-14", "aircraft": "A320", "code": "C", "stand": "A14",
               "off_block": "06:35", "runway": "26R"},
    "LH714": {"flight": "LH714", "date": "2025-01-15", "aircraft": "A359", "code": "E", "stand": "H22",
              "off_block": "07:10", "runway": "26L"},
    "EW7341": {"flight": "EW7341", "date": "2025-01-16", "aircraft": "A321", "code": "C", "stand": "A08",
               "off_block": "06:50", "runway": "26R"},
    "QR58": {"flight": "QR58", "date": "2025-01-17", "aircraft": "B77W", "code": "E", "stand": "G28",
             "off_block": "07:40", "runway": "26L"},
    "UA107": {"flight": "UA107", "date": "2025-01-18", "aircraft": "B763", "code": "D", "stand": "H11",
              "off_block": "11:05", "runway": "08R"},
}

WEATHER = {  # the current observation per day
    "2025-01-14": {"observed_at": "06:20", "oat_c": -4, "precip": "light snow"},
    "2025-01-15": {"observed_at": "06:50", "oat_c": -1, "precip": "light freezing rain"},
    "2025-01-16": {"observed_at": "06:20", "oat_c": -3, "precip": "light snow"},
    "2025-01-17": {"observed_at": "07:20", "oat_c": -6, "precip": "moderate snow"},
    "2025-01-18": {"observed_at": "10:50", "oat_c": -2, "precip": "freezing fog"},
}
ATIS_CACHE = {"2025-01-15": {"observed_at": "04:50", "oat_c": -2, "precip": "light snow"}}


def _hot(precip: str, oat_c: float) -> int:
    """Type IV holdover (minutes, lower bound of the table's range) for a precipitation and an OAT band."""
    warm = oat_c > -3
    table = {"light snow": (50, 40), "moderate snow": (30, 25), "light freezing rain": (25, 15),
             "freezing fog": (70, 60)}
    return table[precip][0 if warm else 1]


FLUID = {"A320": (450, 300), "A321": (520, 340), "A359": (1400, 800), "B77W": (1800, 900), "B763": (1200, 650)}
TRUCKS = {
    "D-North": [("DT-1", 400), ("DT-2", 650), ("DT-3", 750), ("DT-4", 500), ("DT-5", 300), ("DT-6", 1100)],
    "D-South": [("DT-7", 700), ("DT-8", 900), ("DT-9", 450)],
}
RIGS = {"A": ["GR-A1", "GR-A2"]}
SPRAY_MIN = 10


def _min(hhmm: str) -> int:
    return int(hhmm[:2]) * 60 + int(hhmm[3:])


def _hhmm(m: int) -> str:
    return f"{m // 60:02d}:{m % 60:02d}"


def _pad(runway: str) -> str:
    return "D-North" if runway.startswith("26") else "D-South"


def _taxi(origin: str, runway: str) -> int:
    if origin.startswith("D-"):
        return 5
    return {"A": 9, "G": 11, "H": 12}[origin[0]]


INPUTS = [{"task": f"de-icing {f['flight']} {f['date']} off-block {f['off_block']}",
           "message": f"De-icing request for {f['flight']} on {f['date']}, off-block {f['off_block']}. "
                      f"Plan de-icing and anti-icing, book it and clear the holdover."} for f in FLIGHTS.values()]

CASES = [
    {"id": "deice_atis_cache", "input": 1, "switch": "atis_cache", "fault_kind": "stale_data",
     "root": {"name": "get_weather", "occurrence": 1}, "root_kind": "tool", "failure": "confirm_sequence",
     "description": "get_weather returned the 04:50 observation (light snow, -2 C) from the ATIS cache while "
                    "light freezing rain had set in, so LH714's holdover was planned at 50 min instead of 25."},
    {"id": "deice_oat_sign", "input": 2, "switch": "oat_sign", "fault_kind": "wrong_tool_args",
     "root": {"name": "generation fake-model", "match": "ROLE gate-coordinator", "nth": 0}, "root_kind": "llm",
     "failure": "confirm_sequence",
     "description": "The gate coordinator called holdover_time with oat_c 3 for EW7341 while the observation said "
                    "-3 C, and got 50 min instead of 40."},
    {"id": "deice_truck_list_cut", "input": 3, "switch": "truck_page", "fault_kind": "truncated_result",
     "root": {"name": "fluid_stock", "occurrence": 1}, "root_kind": "tool", "failure": "book_pad",
     "description": "fluid_stock listed only the first four trucks at D-North, so DT-6 with 1100 L of Type IV was "
                    "missing and QR58 was booked on DT-3 with 750 L."},
    {"id": "deice_widebody_to_gate", "input": 4, "switch": "route_gate", "fault_kind": "wrong_routing",
     "root": {"name": "generation fake-model", "occurrence": 2}, "root_kind": "llm", "failure": "book_gate_rig",
     "description": "The triage model handed UA107, a code D B763 on stand H11, to the gate de-icing coordinator "
                    "instead of the remote-pad coordinator."},
    {"id": "deice_start_time", "input": 0, "switch": "start_time", "fault_kind": "hallucinated_value",
     "root": {"name": "generation fake-model", "match": "ROLE gate-coordinator", "nth": 2}, "root_kind": "llm",
     "failure": "confirm_sequence",
     "description": "The gate coordinator booked LH2040's rig for a 05:40 start that nothing in its inputs gave, "
                    "43 min before the 06:23 the off-block time called for, so the holdover ran out before take-off."},
]


# ----------------------------------------------------------------------------------------------- tools

def _tools() -> dict[str, Any]:
    from agents import function_tool

    @function_tool
    def get_flight(flight: str) -> dict:
        """Departure details: aircraft, ICAO code letter, stand, off-block time, runway."""
        return dict(FLIGHTS[flight])

    @function_tool
    def get_weather(airport: str, date: str) -> dict:
        """The latest weather observation at the airport (outside air temperature, precipitation)."""
        obs = WEATHER[date]
        if _on("atis_cache") and date in ATIS_CACHE:
            obs = ATIS_CACHE[date]  # served from the ATIS cache, which had not refreshed
        return {"airport": airport, "date": date, **obs}

    @function_tool
    def holdover_time(fluid: str, oat_c: float, precip: str) -> dict:
        """Holdover time in minutes for a fluid, outside air temperature and precipitation (SAE table)."""
        return {"fluid": fluid, "oat_c": oat_c, "precip": precip, "hot_min": _hot(precip, oat_c)}

    @function_tool
    def taxi_time(origin: str, runway: str) -> dict:
        """Taxi minutes from a stand or de-icing pad to the runway holding point."""
        return {"origin": origin, "runway": runway, "taxi_min": _taxi(origin, runway)}

    @function_tool
    def fluid_estimate(aircraft: str) -> dict:
        """Litres of Type I (de-icing) and Type IV (anti-icing) fluid for an aircraft type."""
        type_i, type_iv = FLUID[aircraft]
        return {"aircraft": aircraft, "type_i_l": type_i, "type_iv_l": type_iv}

    @function_tool
    def fluid_stock(pad: str) -> dict:
        """De-icing trucks at a pad with the Type IV fluid on board."""
        trucks = [{"truck": t, "type_iv_l": l} for t, l in TRUCKS[pad]]
        if _on("truck_page"):
            trucks = trucks[:4]
        return {"pad": pad, "trucks": trucks}

    @function_tool
    def gate_rigs(stand: str) -> dict:
        """Gate de-icing rigs that serve a stand's apron."""
        return {"stand": stand, "rigs": RIGS.get(stand[0], RIGS["A"])}

    @function_tool(failure_error_function=None)
    def book_pad(flight: str, pad: str, truck: str, type_iv_l: int, start: str) -> dict:
        """Book a de-icing pad slot and a truck."""
        stock = dict(TRUCKS[pad]).get(truck)
        if stock is None:
            raise ValueError(f"truck {truck} is not at {pad}")
        if type_iv_l > stock:
            raise ValueError(f"{truck} holds {stock} L of TYPE IV; {type_iv_l} L requested for {flight}")
        return {"booking": f"PAD-{flight}-{start.replace(':', '')}", "pad": pad, "truck": truck, "start": start}

    @function_tool(failure_error_function=None)
    def book_gate_rig(flight: str, stand: str, rig: str, start: str) -> dict:
        """Book a gate de-icing rig at the aircraft's stand."""
        f = FLIGHTS[flight]
        if stand[0] != "A" or f["code"] != "C":
            raise ValueError(f"rig {rig} serves apron A stands for code C aircraft; {stand} ({f['aircraft']}, code "
                             f"{f['code']}) needs a remote pad")
        return {"booking": f"RIG-{flight}-{start.replace(':', '')}", "rig": rig, "stand": stand, "start": start}

    @function_tool(failure_error_function=None)
    def confirm_sequence(flight: str, start: str, hot_min: int, taxi_min: int) -> dict:
        """Release check: the quoted holdover against the table for the current observation, and the holdover
        against the planned take-off."""
        f = FLIGHTS[flight]
        obs = WEATHER[f["date"]]
        table = _hot(obs["precip"], obs["oat_c"])
        if hot_min > table:
            raise ValueError(f"{flight}: quoted holdover {hot_min} min exceeds the {table} min for TYPE IV in "
                             f"{obs['precip']} at {obs['oat_c']} C (observation {obs['observed_at']})")
        ends = _min(start) + SPRAY_MIN + hot_min
        takeoff = max(_min(f["off_block"]), _min(start) + SPRAY_MIN) + taxi_min
        if ends < takeoff:
            raise ValueError(f"{flight}: holdover ends {_hhmm(ends)}, before the planned take-off at {_hhmm(takeoff)}")
        return {"flight": flight, "released": True, "holdover_ends": _hhmm(ends), "takeoff": _hhmm(takeoff)}

    return {f.name: f for f in (get_flight, get_weather, holdover_time, taxi_time, fluid_estimate, fluid_stock,
                                gate_rigs, book_pad, book_gate_rig, confirm_sequence)}


def _agents(server: FakeModelServer, client: Any) -> Any:
    from agents import Agent, OpenAIChatCompletionsModel

    t = _tools()
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
    remote = Agent(name="remote_pad_coordinator", model=model,
                   instructions="ROLE remote-coordinator. Plan de-icing on a remote pad: holdover and taxi time, "
                                "fluid and trucks, book the pad, then run the release check.",
                   tools=[t[n] for n in ("holdover_time", "taxi_time", "fluid_estimate", "fluid_stock", "book_pad",
                                         "confirm_sequence")])
    gate = Agent(name="gate_deice_coordinator", model=model,
                 instructions="ROLE gate-coordinator. Plan de-icing at the stand with a gate rig: holdover and taxi "
                              "time, book the rig, then run the release check. Spraying starts 12 min before "
                              "off-block.",
                 tools=[t[n] for n in ("holdover_time", "taxi_time", "gate_rigs", "book_gate_rig",
                                       "confirm_sequence")])
    triage = Agent(name="deice_triage", model=model,
                   instructions="ROLE triage. Read the flight and the weather, then hand off: code C aircraft on "
                                "apron A stands to the gate coordinator, every other aircraft to the remote-pad "
                                "coordinator.",
                   tools=[t["get_flight"], t["get_weather"]], handoffs=[remote, gate])
    return triage


_state: dict[str, Any] = {}


def _loop() -> asyncio.AbstractEventLoop:
    """One event loop for every run of this agent, so its HTTP client is made once."""
    if "loop" not in _state:
        _state["loop"] = asyncio.new_event_loop()
    return _state["loop"]


def _client_for(server: FakeModelServer) -> Any:
    from openai import AsyncOpenAI

    if _state.get("url") != server.base_url:
        _state["url"] = server.base_url
        _state["client"] = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    return _state["client"]


def close() -> None:
    """Close the HTTP client and the event loop (the generator calls this after the agent's runs)."""
    if "loop" in _state:
        if "client" in _state:
            _state["loop"].run_until_complete(_state["client"].close())
        _state["loop"].close()
    _state.clear()


def record(inp: dict[str, Any], path: str, server: FakeModelServer) -> None:
    from agents import RunConfig, Runner
    from agents.tracing import set_trace_processors

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    async def main() -> None:
        await Runner.run(_agents(server, _client_for(server)), inp["message"],
                         run_config=RunConfig(workflow_name=NAME, trace_metadata={"task": inp["task"]}))

    processor = TrajdebugProcessor(path=path, name=NAME)
    set_trace_processors([processor])
    try:
        _loop().run_until_complete(main())
    except Exception:
        pass
    finally:
        set_trace_processors([])


# ----------------------------------------------------------------------------------------------- the model


def _obs(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return ast.literal_eval(text)


def brain(request: Any) -> Any:
    messages = chat_messages(request)
    role = system_text(messages)
    results = tool_results(messages)
    seen = {r["name"]: _obs(r["content"]) for r in results if r["name"] and not r["name"].startswith("transfer_to")}
    user = text_of(next(m for m in messages if m["role"] == "user"))
    flight_no = user.split("request for ")[1].split()[0]
    if role.startswith("ROLE triage"):
        if "get_flight" not in seen:
            date = user.split(" on ")[1].split(",")[0]
            return Reply(tool_calls=(tool_call("get_flight", {"flight": flight_no}),
                                     tool_call("get_weather", {"airport": "EDDM", "date": date})))
        f = seen["get_flight"]
        gate = f["code"] == "C" and f["stand"].startswith("A")
        if _on("route_gate") and f["aircraft"] == "B763":
            gate = True  # a 767 read as fitting the gate rigs
        return Reply(tool_calls=(tool_call("transfer_to_gate_deice_coordinator" if gate
                                           else "transfer_to_remote_pad_coordinator", {}),))
    f, w = seen["get_flight"], seen["get_weather"]
    remote = role.startswith("ROLE remote-coordinator")
    origin = _pad(f["runway"]) if remote else f["stand"]
    if "holdover_time" not in seen:
        oat = w["oat_c"]
        if _on("oat_sign") and not remote:
            oat = abs(oat)
        return Reply(tool_calls=(tool_call("holdover_time", {"fluid": "TYPE IV", "oat_c": oat, "precip": w["precip"]}),
                                 tool_call("taxi_time", {"origin": origin, "runway": f["runway"]})))
    hot, taxi = seen["holdover_time"]["hot_min"], seen["taxi_time"]["taxi_min"]
    if remote:
        start = _hhmm(_min(f["off_block"]) + 8)  # pushed back and taxied to the pad first
        if "fluid_stock" not in seen:
            return Reply(tool_calls=(tool_call("fluid_estimate", {"aircraft": f["aircraft"]}),
                                     tool_call("fluid_stock", {"pad": origin})))
        need = seen["fluid_estimate"]["type_iv_l"]
        trucks = seen["fluid_stock"]["trucks"]
        if "book_pad" not in seen:
            fit = [t for t in trucks if t["type_iv_l"] >= need] or sorted(trucks, key=lambda t: -t["type_iv_l"])
            fit.sort(key=lambda t: t["type_iv_l"] if t["type_iv_l"] >= need else -t["type_iv_l"])
            return Reply(tool_calls=(tool_call("book_pad", {"flight": f["flight"], "pad": origin,
                                                            "truck": fit[0]["truck"], "type_iv_l": need,
                                                            "start": start}),))
        booked = seen["book_pad"]
    else:
        start = _hhmm(_min(f["off_block"]) - 12)
        if "gate_rigs" not in seen:
            return Reply(tool_calls=(tool_call("gate_rigs", {"stand": f["stand"]}),))
        if "book_gate_rig" not in seen:
            if _on("start_time"):
                start = "05:40"
            return Reply(tool_calls=(tool_call("book_gate_rig", {"flight": f["flight"], "stand": f["stand"],
                                                                 "rig": seen["gate_rigs"]["rigs"][0],
                                                                 "start": start}),))
        booked = seen["book_gate_rig"]
    if "confirm_sequence" not in seen:
        return Reply(tool_calls=(tool_call("confirm_sequence", {"flight": f["flight"], "start": booked["start"],
                                                                "hot_min": hot, "taxi_min": taxi}),))
    c = seen["confirm_sequence"]
    return (f"{f['flight']} released: de-icing booked ({booked['booking']}), holdover {hot} min ends "
            f"{c['holdover_ends']}, take-off {c['takeoff']}.")
