"""Yacht charter broker (route: openai_agents).

The OpenAI Agents SDK against the fake model server: a broker agent reads the
enquiry, searches the fleet, then in one turn asks for the weather window and has
a berth-planner sub-agent (Agent.as_tool; parallel marina look-ups) reserve the
night berths; it hands off to a contracts agent that prices the charter, binds
the insurance and issues the contract, whose engine validates everything.
Recorded by TrajdebugProcessor.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import date, timedelta

import httpx
from agents import Agent, RunConfig, Runner, function_tool
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from benchmarks.heldout.suite_v import kit
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import FakeModelServer, Reply, tool_call

NAME = "yacht-charter-broker"
ROUTE = "openai_agents"
DOMAIN = "yacht charter"
SHAPE = "broker agent: enquiry, fleet search, parallel weather tool + berth-planner sub-agent as a tool (parallel marina look-ups); hand-off to a contracts agent: price, insurance, contract engine"

FLEET = {
    "Tern": {"loa": 15.8, "guests": 8, "base": "Dubrovnik", "rate": 1450},
    "Ostro": {"loa": 17.2, "guests": 10, "base": "Dubrovnik", "rate": 1900},
    "Halcyon": {"loa": 14.0, "guests": 6, "base": "Dubrovnik", "rate": 980},
    "Sea Lark": {"loa": 12.2, "guests": 6, "base": "Dubrovnik", "rate": 820},
    "Pelagia": {"loa": 11.9, "guests": 4, "base": "Dubrovnik", "rate": 610},
    "Corvina": {"loa": 16.4, "guests": 10, "base": "Split", "rate": 1700},
    "Mistral Bay": {"loa": 13.5, "guests": 8, "base": "Split", "rate": 1150},
    "Vela": {"loa": 12.8, "guests": 6, "base": "Split", "rate": 900},
}
WIND_KMH = {"Dubrovnik": 27, "Split": 24}


def enquiry(no: int, guests: int, base: str, start: str, nights: int, max_len: float, stops: list[str],
            history: str) -> dict:
    return {"enquiry": f"ENQ-{no}", "client": f"client-{no}", "guests": guests, "base": base, "start": start,
            "nights": nights, "max_length_m": max_len, "stops": stops, "history": history}


REFS = [
    enquiry(801, 6, "Split", "2027-05-22", 5, 14.0, ["Hvar", "Vis"], "first charter"),
    enquiry(802, 10, "Dubrovnik", "2027-06-26", 7, 18.0, ["Mljet", "Korcula", "Lastovo"], "2025: Dubrovnik, 9 guests, Ostro"),
    enquiry(803, 4, "Dubrovnik", "2027-07-03", 4, 12.5, ["Sipan", "Mljet"], "first charter"),
    enquiry(804, 8, "Split", "2027-09-11", 6, 17.0, ["Brac", "Hvar", "Vis"], "2026: Split, 8 guests, Mistral Bay"),
]

CASES = [
    {"fault": "yacht.berth_entity", "kind": "subagent_wrong_entity", "root": "generation yacht-desk-1",
     "marker": '"yacht": "Ostro"', "input": enquiry(811, 8, "Dubrovnik", "2027-06-12", 7, 17.5, ["Mljet", "Korcula", "Hvar"], "first charter")},
    {"fault": "yacht.price_end", "kind": "wrong_tool_args", "root": "generation yacht-desk-1",
     "marker": "2027-06-18", "input": enquiry(812, 6, "Dubrovnik", "2027-06-12", 7, 15.0, ["Sipan", "Mljet"], "first charter")},
    {"fault": "yacht.guest_filter", "kind": "tool_ignores_argument", "root": "search_fleet",
     "marker": "Pelagia", "input": enquiry(813, 8, "Dubrovnik", "2027-07-17", 6, 16.0, ["Korcula", "Lastovo"], "first charter")},
    {"fault": "yacht.history_region", "kind": "context_pollution", "root": "generation yacht-desk-1",
     "marker": "Split", "input": enquiry(814, 8, "Dubrovnik", "2027-08-07", 7, 16.0, ["Mljet", "Korcula"],
                                          "2026: Split, 8 guests, Mistral Bay")},
    {"fault": "yacht.wind_units", "kind": "unit_error", "root": "weather_window",
     "marker": None, "input": enquiry(815, 6, "Dubrovnik", "2027-08-21", 5, 14.5, ["Sipan", "Korcula"], "first charter")},
]


def _wind_kmh(region: str, start: str) -> int:
    return WIND_KMH[region] + (len(start) + int(start[-2:])) % 7


CASES[4]["marker"] = f"max wind {_wind_kmh('Dubrovnik', CASES[4]['input']['start'])} kn"


def _end(start: str, nights: int) -> str:
    return (date.fromisoformat(start) + timedelta(days=nights)).isoformat()


def _calls(messages: list[dict]) -> list[tuple[str, dict, str | None]]:
    results = {m.get("tool_call_id"): m.get("content") for m in messages if m.get("role") == "tool"}
    out = []
    for m in messages:
        for c in m.get("tool_calls") or []:
            out.append((c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"), results.get(c["id"])))
    return out


def _result(calls, name: str) -> str | None:
    for n, _, res in calls:
        if n == name:
            return res
    return None


def policy(request):
    messages = request.body["messages"]
    system = messages[0]["content"] if messages[0]["role"] in ("system", "developer") else ""
    calls = _calls(messages)
    user = next(m["content"] for m in messages if m["role"] == "user")
    if system.startswith("You plan night berths"):
        chosen = re.search(r"Yacht (.+?) \(", user).group(1)
        backup = re.search(r"backup (.+?) \(", user)
        yacht = chosen
        if kit.active("yacht.berth_entity") and backup:
            yacht = backup.group(1)
        loa = float(re.search(rf"{re.escape(yacht)} \(([\d.]+) m", user).group(1))
        nights = re.findall(r"(\w[\w ]*?) on (\d{4}-\d{2}-\d{2})", user.split("Nights:", 1)[1])
        done = [res for n, _, res in calls if n == "marina_availability"]
        if not done:
            return Reply(tool_calls=tuple(tool_call("marina_availability", {"marina": m.strip(), "night": d, "yacht": yacht,
                                                                            "length_m": loa}) for m, d in nights))
        return "Berths: " + "; ".join(done)
    enq_id = re.search(r"(ENQ-\d+)", user).group(1)
    enq = json.loads(_result(calls, "get_enquiry") or "{}")
    if system.startswith("You broker yacht charters"):
        if not enq:
            return Reply(tool_calls=(tool_call("get_enquiry", {"enquiry_id": enq_id}),))
        fleet = _result(calls, "search_fleet")
        if fleet is None:
            region = enq["base"]
            if kit.active("yacht.history_region"):
                region = re.match(r"\d{4}: (\w+)", enq["history"]).group(1)
            return Reply(tool_calls=(tool_call("search_fleet", {"region": region, "guests": enq["guests"],
                                                                "max_length_m": enq["max_length_m"]}),))
        boats = re.findall(r"- (.+?) \(([\d.]+) m", fleet)
        if _result(calls, "plan_berths") is None:
            end = _end(enq["start"], enq["nights"])
            d0 = date.fromisoformat(enq["start"])
            stops = enq["stops"]
            nights = ", ".join(f"{stops[i * len(stops) // enq['nights']]} on {(d0 + timedelta(days=i + 1)).isoformat()}"
                               for i in range(0, enq["nights"] - 1, 2))
            shortlist = f"Yacht {boats[0][0]} ({boats[0][1]} m) chosen"
            if len(boats) > 1:
                shortlist += f", backup {boats[1][0]} ({boats[1][1]} m)"
            return Reply(tool_calls=(
                tool_call("weather_window", {"region": enq["base"], "start": enq["start"], "end": end}),
                tool_call("plan_berths", {"input": f"{shortlist}. Nights: {nights}."}),
            ))
        return Reply(tool_calls=(tool_call("transfer_to_contracts_desk", {}),))
    if system.startswith("You issue charter contracts"):
        fleet = _result(calls, "search_fleet")
        yacht = re.findall(r"- (.+?) \(", fleet)[0]
        end = _end(enq["start"], enq["nights"])
        price = _result(calls, "price_charter")
        if price is None:
            pend = end
            if kit.active("yacht.price_end"):
                pend = _end(enq["start"], enq["nights"] - 1)
            return Reply(tool_calls=(tool_call("price_charter", {"yacht": yacht, "start": enq["start"], "end": pend}),))
        wind = float(re.search(r"max wind ([\d.]+) kn", _result(calls, "weather_window")).group(1))
        ins = _result(calls, "bind_insurance")
        if ins is None:
            return Reply(tool_calls=(tool_call("bind_insurance", {"yacht": yacht, "mode": "bareboat", "max_wind_kn": wind}),))
        con = _result(calls, "issue_contract")
        if con is None:
            return Reply(tool_calls=(tool_call("issue_contract", {
                "enquiry_id": enq_id, "yacht": yacht, "start": enq["start"], "end": end,
                "price_ref": re.search(r"(PR-\w+)", price).group(1), "berths": _result(calls, "plan_berths"),
                "guests": enq["guests"]}),))
        return f"Contract issued: {con}"
    return "I cannot help with that."


def make_agents(model, enq: dict, world: dict):
    @function_tool
    def get_enquiry(enquiry_id: str) -> str:
        """Read a charter enquiry and the client's history."""
        return json.dumps(enq)

    @function_tool
    def search_fleet(region: str, guests: int, max_length_m: float) -> str:
        """Yachts based in a region for a number of guests, up to a length, cheapest first."""
        hits = [(n, y) for n, y in FLEET.items() if y["base"] == region and y["loa"] <= max_length_m
                and (kit.active("yacht.guest_filter") or y["guests"] >= guests)]
        hits.sort(key=lambda t: t[1]["rate"])
        return "Available:\n" + "\n".join(f"- {n} ({y['loa']} m, {y['guests']} guests, base {y['base']}, {y['rate']} EUR/day)"
                                          for n, y in hits)

    @function_tool
    def weather_window(region: str, start: str, end: str) -> str:
        """Marine forecast for a region over the charter dates."""
        kmh = _wind_kmh(region, start)
        kn = kmh if kit.active("yacht.wind_units") else round(kmh / 1.852)
        return f"forecast {region} {start}..{end}: max wind {kn} kn, sea state 3, no gale warnings"

    @function_tool
    def marina_availability(marina: str, night: str, yacht: str, length_m: float) -> str:
        """Find and hold a night berth at a marina for a yacht."""
        berth = f"{marina[:2].upper()}-{int(length_m) + 3}"
        world.setdefault("berths", []).append({"marina": marina, "berth": berth, "yacht": yacht, "night": night})
        return f"{marina} {berth} held for {yacht} on {night} ({int(length_m) + 1} m berth)"

    @function_tool
    def price_charter(yacht: str, start: str, end: str) -> str:
        """Price a charter from the day rate."""
        days = (date.fromisoformat(end) - date.fromisoformat(start)).days
        ref = f"PR-{yacht[:3].upper()}{start[5:7]}{start[8:]}"
        world["price"] = {"ref": ref, "start": start, "end": end}
        return f"Price {ref}: {yacht} {start}..{end}, {days} days x {FLEET[yacht]['rate']} EUR = {days * FLEET[yacht]['rate']:,} EUR"

    @function_tool(failure_error_function=None)
    def bind_insurance(yacht: str, mode: str, max_wind_kn: float) -> str:
        """Bind the charter insurance for a yacht and sailing mode."""
        if mode == "bareboat" and max_wind_kn > 25:
            raise RuntimeError(f"insurer: bareboat cover excludes forecast winds above 25 kn (forecast {max_wind_kn:g} kn); "
                               "skippered cover required")
        return f"Policy INS-{yacht[:3].upper()}-{int(max_wind_kn)} bound, {mode}"

    @function_tool(failure_error_function=None)
    def issue_contract(enquiry_id: str, yacht: str, start: str, end: str, price_ref: str, berths: str, guests: int) -> str:
        """Issue the charter contract (the contract engine validates it)."""
        y = FLEET[yacht]
        if y["guests"] < guests:
            raise RuntimeError(f"contract engine: {yacht} is certified for {y['guests']} guests overnight; "
                               f"{guests} on {enquiry_id}")
        if y["base"] != enq["base"]:
            raise RuntimeError(f"contract engine: {yacht} is based in {y['base']}; the charter starts in {enq['base']} "
                               "and no delivery leg is booked")
        p = world.get("price", {})
        if p.get("end") != end or p.get("start") != start:
            raise RuntimeError(f"contract engine: price {price_ref} covers {p.get('start')} to {p.get('end')}; "
                               f"the charter runs {start} to {end}")
        for b in world.get("berths", []):
            if b["yacht"] != yacht:
                raise RuntimeError(f"contract engine: berth {b['berth']} at {b['marina']} on {b['night']} is held "
                                   f"for {b['yacht']}, the contract is for {yacht}")
        return f"Contract CH-{enquiry_id[4:]} for {yacht}, {start} to {end}"

    planner = Agent(name="berth_planner",
                    instructions="You plan night berths for a charter: hold one berth per night stop, then list them.",
                    model=model, tools=[marina_availability])
    contracts = Agent(name="contracts_desk",
                      instructions="You issue charter contracts: price, insurance, then the contract.",
                      model=model, tools=[price_charter, bind_insurance, issue_contract])
    broker = Agent(name="broker",
                   instructions="You broker yacht charters: read the enquiry, search the fleet, check the weather and plan berths, then hand off to contracts.",
                   model=model,
                   tools=[get_enquiry, search_fleet, weather_window,
                          planner.as_tool(tool_name="plan_berths", tool_description="Plan and hold the night berths.")],
                   handoffs=[contracts])
    return broker


class Harness:
    def __enter__(self):
        self.server = FakeModelServer(policy, model="yacht-desk-1").__enter__()
        return self

    def __exit__(self, *exc):
        set_trace_processors([])
        self.server.__exit__(*exc)

    def record(self, inp: dict, path) -> None:
        processor = TrajdebugProcessor(path=str(path), name=NAME)
        set_trace_processors([processor])

        async def go():
            client = AsyncOpenAI(base_url=self.server.base_url, api_key="not-needed", max_retries=0,
                                 http_client=httpx.AsyncClient(verify=False))  # plain http on 127.0.0.1
            model = OpenAIChatCompletionsModel(model="yacht-desk-1", openai_client=client)
            broker = make_agents(model, inp, {})
            try:
                await Runner.run(broker, f"New enquiry {inp['enquiry']}", max_turns=20,
                                 run_config=RunConfig(workflow_name=NAME,
                                                      trace_metadata={"task": f"charter enquiry {inp['enquiry']}"}))
            except Exception:
                pass
            finally:
                await client.close()

        asyncio.run(go())
        set_trace_processors([])
