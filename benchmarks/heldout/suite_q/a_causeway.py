"""Tidal-island causeway tours (route openai_agents): a front desk agent hands off to a tours desk or a
refunds desk; the tours desk consults a tide-oracle sub-agent (as_tool) and books seats."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.heldout.suite_q import kit
from benchmarks.heldout.suite_q.kit import Agent, Case


NAME = "causeway-tours"

BOOKINGS = {
    "CW-4471": {"name": "Hollis", "old": "2027-04-10", "new": "2027-04-12", "party": "2A+3C"},
    "CW-4502": {"name": "Mensah", "old": "2027-05-02", "new": "2027-05-03", "party": "4A+1C"},
    "CW-4519": {"name": "Lindqvist", "old": "2027-05-20", "new": "2027-05-24", "party": "2A+2C"},
    "CW-4533": {"name": "Okafor", "old": "2027-06-01", "new": "2027-06-02", "party": "3A+0C"},
    "CW-4548": {"name": "Brennan", "old": "2027-06-14", "new": "2027-06-16", "party": "1A+2C"},
    "CW-4560": {"name": "Duarte", "old": "2027-07-03", "new": "2027-07-05", "party": "2A+1C"},
    "CW-4577": {"name": "Tanaka", "old": "2027-07-19", "new": "2027-07-20", "party": "5A+2C"},
    "CW-4589": {"name": "Fischer", "old": "2027-08-08", "new": "2027-08-09", "party": "2A+4C"},
    "CW-4594": {"name": "Achebe", "old": "2027-08-21", "new": "2027-08-22", "party": "3A+3C"},
}
TIMES = ["08:00", "09:30", "11:00", "12:30", "14:00", "15:30", "17:00"]


def window(date: str, causeway: str = "Lindholm") -> tuple[str, str]:
    k = (int(date[-2:]) + (0 if causeway == "Lindholm" else 2)) % 4
    return [("11:00", "16:00"), ("08:00", "12:00"), ("12:30", "18:00"), ("09:30", "14:30")][k]


FRONT = "You are the front desk of Lindholm Causeway Tours. Read the booking and pass the guest to the right desk."
TOURS = "You are the tours desk. Move bookings to a new date on a departure inside the safe crossing window."
REFUNDS = "You are the refunds desk. Refund cancelled bookings."
ORACLE = "You are the tide oracle. Give the safe crossing window for the date you are asked about."

_MEMORY: dict = {}


class Blocked(RuntimeError):
    pass


Blocked.__module__ = "causeway.services"


def _calls(msgs):
    names, out = {}, []
    for m in msgs:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = (c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
        if m.get("role") == "tool":
            n, a = names.get(m["tool_call_id"], ("?", {}))
            out.append((n, a, m["content"]))
    return out


def _first_user(msgs) -> str:
    for m in msgs:
        if m.get("role") == "user":
            c = m["content"]
            return c if isinstance(c, str) else " ".join(p.get("text", "") for p in c)
    return ""


def policy(request):
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0].get("role") == "system" else ""
    done = _calls(msgs)
    names = [d[0] for d in done]
    user = _first_user(msgs)
    if system == ORACLE:
        if "tide_table" not in names:
            date = user.split(" on ")[1].split(" ")[0]
            causeway = user.split(" at ")[1].split(" causeway")[0]
            if kit.active("cw_entity"):
                causeway = "Holm Sound"  # the other causeway in the tide tables
            return Reply(tool_calls=(tool_call("tide_table", {"date": date, "causeway": causeway}),))
        return done[-1][2]
    ref = user.split("Booking ")[1].split(":")[0]
    if system == FRONT:
        if "lookup_booking" not in names:
            return Reply(tool_calls=(tool_call("lookup_booking", {"ref": ref}),))
        target = "transfer_to_refunds_desk" if kit.active("cw_route") else "transfer_to_tours_desk"
        return Reply(tool_calls=(tool_call(target, {}),))
    booking = json.loads(next(r for n, a, r in done if n == "lookup_booking"))
    if system == REFUNDS:
        if "lookup_payment" not in names:
            return Reply(tool_calls=(tool_call("lookup_payment", {"ref": ref}),))
        if "refund_policy" not in names:
            return Reply(tool_calls=(tool_call("refund_policy", {"days_before": 14}),))
        if "issue_refund" not in names:
            return Reply(tool_calls=(tool_call("issue_refund", {"ref": ref}),))
        return "Refund issued."
    if system == TOURS:
        new = user.split(" to ")[1].split(".")[0]
        if "consult_tide_oracle" not in names:
            return Reply(tool_calls=(tool_call("consult_tide_oracle", {
                "input": f"Safe crossing window on {new} at Lindholm causeway for booking {ref}"}),))
        if "list_departures" not in names:
            return Reply(tool_calls=(tool_call("list_departures", {"date": new}),))
        if "remember_party" not in names:
            return Reply(tool_calls=(tool_call("remember_party", {"ref": ref, "adults": booking["adults"],
                                                                  "children": booking["children"]}),))
        if "hold_seats" not in names:
            win = json.loads(next(r for n, a, r in done if n == "consult_tide_oracle"))
            deps = json.loads(next(r for n, a, r in done if n == "list_departures"))["departures"]
            inside = [d for d in deps if win["open"] <= d < win["close"]]
            dep = inside[0] if inside else deps[-1]
            return Reply(tool_calls=(tool_call("hold_seats", {
                "date": new, "departure": dep, "seats": booking["adults"] + booking["children"]}),))
        if "issue_tickets" not in names:
            return Reply(tool_calls=(tool_call("issue_tickets", {"ref": ref}),))
        return "Your crossing has been moved; tickets are on their way."
    return "ok"


def _build(model):
    from agents import Agent as SdkAgent
    from agents import function_tool

    @function_tool(failure_error_function=None)
    def lookup_booking(ref: str) -> str:
        """The booking record of a reference."""
        b = BOOKINGS[ref]
        a, c = b["party"].split("+")
        children = 0 if kit.active("cw_lossy") else int(c[:-1])  # the "+nC" part read as a suffix
        return json.dumps({"ref": ref, "name": b["name"], "date": b["old"], "adults": int(a[:-1]),
                           "children": children, "party_text": f"{int(a[:-1])} adults, {children} children"})

    @function_tool(failure_error_function=None)
    def tide_table(date: str, causeway: str) -> str:
        """Safe crossing window of a causeway on a date."""
        o, c = window(date, causeway)
        return json.dumps({"date": date, "causeway": causeway, "open": o, "close": c})

    @function_tool(failure_error_function=None)
    def list_departures(date: str) -> str:
        """Minibus departures across the causeway on a date."""
        times = TIMES[:2] if kit.active("cw_trunc") else TIMES
        return json.dumps({"date": date, "departures": times, "shown": f"{len(times)} departures"})

    @function_tool(failure_error_function=None)
    def remember_party(ref: str, adults: int, children: int) -> str:
        """Keep the party make-up for ticketing."""
        if kit.active("cw_memory"):
            adults, children = children, adults
        _MEMORY[ref] = {"adults": adults, "children": children}
        return json.dumps({"ref": ref, "stored": f"{adults} adults / {children} children"})

    @function_tool(failure_error_function=None)
    def hold_seats(date: str, departure: str, seats: int) -> str:
        """Hold seats on a departure."""
        o, c = window(date)
        if not (o <= departure < c):
            raise Blocked(f"Causeway control: departure {departure} on {date} not cleared for crossing")
        return json.dumps({"hold": f"H-{date[5:]}-{departure}", "seats": seats})

    @function_tool(failure_error_function=None)
    def issue_tickets(ref: str) -> str:
        """Issue the tickets of a moved booking."""
        b = BOOKINGS[ref]
        a, c = (int(x[:-1]) for x in b["party"].split("+"))
        m = _MEMORY[ref]
        if (m["adults"], m["children"]) != (a, c):
            raise Blocked(f"Ticketing: 409 manifest for {ref} does not match the fare classes requested")
        return json.dumps({"tickets": [f"{ref}-{i}" for i in range(1, a + c + 1)]})

    @function_tool(failure_error_function=None)
    def lookup_payment(ref: str) -> str:
        """The payment taken for a booking."""
        return json.dumps({"ref": ref, "paid_gbp": 24.0 * len(BOOKINGS[ref]["party"]), "method": "card"})

    @function_tool(failure_error_function=None)
    def refund_policy(days_before: int) -> str:
        """The refund share for a cancellation made some days before travel."""
        return json.dumps({"days_before": days_before, "refund_pct": 100 if days_before >= 7 else 50})

    @function_tool(failure_error_function=None)
    def issue_refund(ref: str) -> str:
        """Refund a cancelled booking."""
        raise Blocked(f"Payments: 409 booking {ref} has no cancellation on record, refund blocked")

    oracle = SdkAgent(name="tide_oracle", instructions=ORACLE, model=model, tools=[tide_table])
    tours = SdkAgent(name="tours_desk", instructions=TOURS, model=model, tools=[
        oracle.as_tool("consult_tide_oracle", "Ask the tide oracle for a safe crossing window."),
        list_departures, remember_party, hold_seats, issue_tickets])
    refunds = SdkAgent(name="refunds_desk", instructions=REFUNDS, model=model, tools=[lookup_payment, refund_policy, issue_refund])
    return SdkAgent(name="front_desk", instructions=FRONT, model=model, tools=[lookup_booking],
                    handoffs=[tours, refunds])


_SERVER = None


def agent(inp: dict, path: Path) -> None:
    global _SERVER
    from agents import OpenAIChatCompletionsModel, RunConfig, Runner
    from agents.exceptions import AgentsException
    from agents.tracing import set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor
    from trajdebug.testing import FakeModelServer

    if _SERVER is None:
        _SERVER = FakeModelServer(policy, model="gpt-4o-mini").start()
    _MEMORY.clear()
    client = AsyncOpenAI(base_url=_SERVER.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=_SERVER.model, openai_client=client)
    b = BOOKINGS[inp["ref"]]
    task = f"Booking {inp['ref']}: please move our crossing from {b['old']} to {b['new']}."
    set_trace_processors([TrajdebugProcessor(path=str(path), name=NAME, task=task)])
    try:
        Runner.run_sync(_build(model), task, max_turns=30, run_config=RunConfig(workflow_name=NAME))
    except (Blocked, AgentsException):
        pass
    finally:
        set_trace_processors([])


CASES = [
    Case("causeway_routing", NAME, "openai_agents", "wrong_routing", "cw_route", {"ref": "CW-4519"}, None,
         "transfer_to_refunds_desk"),
    Case("causeway_entity", NAME, "openai_agents", "subagent_wrong_entity", "cw_entity", {"ref": "CW-4502"},
         None, "Holm Sound"),
    Case("causeway_lossy", NAME, "openai_agents", "lossy_parsing", "cw_lossy", {"ref": "CW-4548"},
         "lookup_booking", "1 adults, 0 children"),
    Case("causeway_memory", NAME, "openai_agents", "bad_memory_write", "cw_memory", {"ref": "CW-4471"},
         "remember_party", "3 adults / 2 children"),
    Case("causeway_truncated", NAME, "openai_agents", "truncated_result", "cw_trunc", {"ref": "CW-4577"},
         "list_departures", "2 departures"),
]
REFS = [{"ref": "CW-4533"}, {"ref": "CW-4560"}, {"ref": "CW-4589"}, {"ref": "CW-4594"}]

AGENT = Agent(NAME, "openai_agents", "jsonl", agent, CASES, REFS)
