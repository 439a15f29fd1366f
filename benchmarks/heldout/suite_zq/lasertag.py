"""Laser tag arena party bookings (OpenAI Agents SDK): look up the party, price it, find an arena slot,
have the vest technician (an agent used as a tool) ready a vest pack, confirm the booking."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import common
from .common import Case
from .kit import active

AGENT = "lasertag-bookings"
ROUTE = "openai_agents"
EXT = "jsonl"
DOMAIN = "laser tag arena"
SHAPE = ("front-desk agent loop: party lookup, price list, arena slots, quote, vest-technician agent as a "
         "tool (pack list + pack status), booking confirmation tool")

PARTIES = {
    "P-2291": {"host": "Dana Kerr", "date": "2026-02-21", "arena": "A", "package": "Birthday Blast",
               "guests": [f"guest {i}" for i in range(1, 17)]},
    "P-2307": {"host": "Omar Said", "date": "2026-02-28", "arena": "B", "package": "Team Night",
               "guests": [f"player {i}" for i in range(1, 13)]},
    "P-2315": {"host": "Lea Novak", "date": "2026-03-07", "arena": "A", "package": "Team Night",
               "guests": [f"player {i}" for i in range(1, 9)]},
    "P-2320": {"host": "Ravi Nair", "date": "2026-03-14", "arena": "B", "package": "Birthday Blast",
               "guests": [f"guest {i}" for i in range(1, 11)]},
    "P-2334": {"host": "June Park", "date": "2026-03-21", "arena": "A", "package": "Glow Marathon",
               "guests": [f"guest {i}" for i in range(1, 15)]},
    "P-2341": {"host": "Ben Ortiz", "date": "2026-03-28", "arena": "B", "package": "Team Night",
               "guests": [f"player {i}" for i in range(1, 7)]},
}
REFS = ["P-2315", "P-2320", "P-2334", "P-2341"]
PRICES = {"2026-01": {"Birthday Blast": 16.5, "Team Night": 14.0, "Glow Marathon": 21.0},
          "2025-09": {"Birthday Blast": 15.0, "Team Night": 12.5, "Glow Marathon": 19.0}}
HELD = {("A", "2026-02-21", "15:00"): "LT-7730", ("B", "2026-02-28", "18:00"): "LT-7741",
        ("A", "2026-03-21", "15:00"): "LT-7802"}
PACKS = {"A": [{"pack": "PK-A", "arena": "A", "ready": 20}, {"pack": "PK-B", "arena": "B", "ready": 14}],
         "B": [{"pack": "PK-B", "arena": "B", "ready": 14}, {"pack": "PK-A", "arena": "A", "ready": 20}]}

CASES = [
    Case("zq_lasertag_arena", "lasertag-arena", "wrong_tool_args", "P-2291", ("generation gpt-4o-mini", 3),
         ("confirm_booking", 1), "The front-desk model checks arena B's slots for a party booked in arena A, "
                                 "so it offers a slot that is held in arena A."),
    Case("zq_lasertag_deposit", "lasertag-deposit", "hallucinated_value", "P-2307",
         ("generation gpt-4o-mini", 9), ("confirm_booking", 1),
         "The model's confirmation call states a deposit no tool returned instead of the quote's deposit."),
    Case("zq_lasertag_pack", "lasertag-pack", "subagent_wrong_entity", "P-2291", ("generation gpt-4o-mini", 7),
         ("confirm_booking", 1), "The vest technician sub-agent readies arena B's pack for an arena A party, "
                                 "which has too few charged vests for the players."),
    Case("zq_lasertag_prices", "lasertag-prices", "stale_data", "P-2307", ("get_packages", 1),
         ("confirm_booking", 1), "The package tool answers from a cached, retired price list, and the "
                                 "booking system refuses the quote built on it."),
    Case("zq_lasertag_guests", "lasertag-guests", "truncated_result", "P-2291", ("lookup_party", 1),
         ("confirm_booking", 1), "The party lookup returns only the first page of ten guests, so the "
                                 "booking is made for fewer players than signed waivers."),
]


def policy(req: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    msgs = common.messages_of(req)
    system = common.system_of(msgs)
    user = next(common.text_of(m.get("content")) for m in msgs if m.get("role") == "user")
    calls = common.called_tools(msgs)
    results = common.tool_results(msgs)
    got = {name: json.loads(res) if res.startswith(("{", "[")) else res
           for (name, _), res in zip(calls, results)}
    if system.startswith("You are the vest technician"):
        arena = user.split("arena ")[1][0]
        players = int(user.split("Ready ")[1].split()[0])
        if "list_vest_packs" not in got:
            return Reply(tool_calls=(tool_call("list_vest_packs", {"arena": arena}),))
        if "pack_status" not in got:
            packs = got["list_vest_packs"]
            pick = next(p for p in packs if p["arena"] == arena)
            if active("lasertag-pack"):
                pick = next(p for p in packs if p["arena"] != arena)
            return Reply(tool_calls=(tool_call("pack_status", {"pack": pick["pack"]}),))
        st = got["pack_status"]
        return json.dumps({"pack": st["pack"], "ready": st["ready"], "players": players})
    if system.startswith("You are the front desk"):
        party_id = user.split("party ")[1].split()[0]
        if "lookup_party" not in got:
            return Reply(tool_calls=(tool_call("lookup_party", {"party_id": party_id}),))
        party = got["lookup_party"]
        players = len(party["guests"])
        if "get_packages" not in got:
            return Reply(tool_calls=(tool_call("get_packages", {"date": party["date"]}),))
        if "check_arena_slots" not in got:
            arena = "B" if active("lasertag-arena") else party["arena"]
            return Reply(tool_calls=(tool_call("check_arena_slots", {"arena": arena, "date": party["date"]}),))
        slot = next(s["time"] for s in got["check_arena_slots"]["slots"] if s["free"])
        if "quote_party" not in got:
            return Reply(tool_calls=(tool_call("quote_party", {"package": party["package"], "players": players,
                                                               "price_list": got["get_packages"]["list"]}),))
        if "vest_tech" not in got:
            return Reply(tool_calls=(tool_call("vest_tech", {"input": f"Ready {players} vests for arena "
                                                                      f"{party['arena']} on {party['date']}"}),))
        if "confirm_booking" not in got:
            quote = got["quote_party"]
            deposit = quote["deposit"]
            if active("lasertag-deposit"):
                deposit = round(quote["total"] * 0.25, 2)
            return Reply(tool_calls=(tool_call("confirm_booking", {
                "party_id": party_id, "arena": party["arena"], "date": party["date"], "slot": slot,
                "players": players, "quote_id": quote["quote_id"], "deposit": deposit,
                "vest_pack": got["vest_tech"]["pack"]}),))
        return f"Booked party {party_id}: {got['confirm_booking']['booking']}."
    return "no answer"


def _agents() -> Any:
    from agents import Agent, function_tool
    from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    model = OpenAIChatCompletionsModel(model=common.MODEL, openai_client=AsyncOpenAI(
        base_url=common.server().base_url, api_key="sk-test-local", max_retries=0))

    @function_tool
    def lookup_party(party_id: str) -> str:
        """The party booking request: host, date, arena, package and the guest list."""
        p = PARTIES[party_id]
        guests = p["guests"][:10] if active("lasertag-guests") else p["guests"]
        return json.dumps({"party_id": party_id, **{k: v for k, v in p.items() if k != "guests"},
                           "guests": guests})

    @function_tool
    def get_packages(date: str) -> str:
        """Package prices per player from the current price list."""
        name = "2025-09" if active("lasertag-prices") else "2026-01"
        return json.dumps({"list": name, "per_player": PRICES[name]})

    @function_tool
    def check_arena_slots(arena: str, date: str) -> str:
        """Free and held slots of one arena on one date."""
        slots = [{"time": t, "free": (arena, date, t) not in HELD} for t in ("15:00", "16:30", "18:00")]
        return json.dumps({"arena": arena, "date": date, "slots": slots})

    @function_tool
    def quote_party(package: str, players: int, price_list: str) -> str:
        """Quote a party: total and 30 percent deposit."""
        total = round(PRICES[price_list][package] * players, 2)
        return json.dumps({"quote_id": f"Q-{price_list[2:4]}{players:02d}{len(package)}", "price_list": price_list,
                           "total": total, "deposit": round(total * 0.3, 2)})

    @function_tool
    def list_vest_packs(arena: str) -> str:
        """Vest packs near an arena."""
        return json.dumps(PACKS[arena])

    @function_tool
    def pack_status(pack: str) -> str:
        """Charged and ready vests in a pack."""
        ready = {"PK-A": 20, "PK-B": 14}[pack]
        return json.dumps({"pack": pack, "ready": ready, "charging": 24 - ready})

    @function_tool(failure_error_function=None)
    def confirm_booking(party_id: str, arena: str, date: str, slot: str, players: int, quote_id: str,
                        deposit: float, vest_pack: str) -> str:
        """Confirm the booking with the arena's booking system."""
        p = PARTIES[party_id]
        if (arena, date, slot) in HELD:
            raise RuntimeError(f"HTTP 409 from bookings: {{\"error\": \"slot held\", \"arena\": \"{arena}\", "
                               f"\"slot\": \"{date} {slot}\", \"booking\": \"{HELD[(arena, date, slot)]}\"}}")
        if not quote_id.startswith("Q-26"):
            raise RuntimeError(f"HTTP 409 from bookings: {{\"error\": \"price list retired\", \"quote\": "
                               f"\"{quote_id}\", \"current_list\": \"2026-01\"}}")
        if players < len(p["guests"]):
            raise RuntimeError(f"HTTP 422 from bookings: {{\"error\": \"player count {players} is below the "
                               f"{len(p['guests'])} signed waivers\", \"party\": \"{party_id}\"}}")
        expected = round(round(PRICES["2026-01"][p["package"]] * players, 2) * 0.3, 2)
        if abs(deposit - expected) > 0.005:
            raise RuntimeError(f"HTTP 422 from bookings: {{\"error\": \"deposit {deposit:.2f} does not match "
                               f"quote {quote_id} deposit {expected:.2f}\"}}")
        ready = {"PK-A": 20, "PK-B": 14}[vest_pack]
        if ready < players:
            raise RuntimeError(f"HTTP 422 from bookings: {{\"error\": \"{players} players exceed ready vests in "
                               f"pack {vest_pack} ({ready})\"}}")
        return json.dumps({"booking": f"LT-{party_id[2:]}{slot[:2]}", "status": "confirmed"})

    vest = Agent(name="vest_technician", model=model,
                 instructions="You are the vest technician. Find the arena's vest pack and report its ready vests.",
                 tools=[list_vest_packs, pack_status])
    desk = Agent(name="front_desk", model=model,
                 instructions="You are the front desk of Photon Quarry laser tag. Book parties end to end.",
                 tools=[lookup_party, get_packages, check_arena_slots, quote_party,
                        vest.as_tool(tool_name="vest_tech", tool_description="Ask the vest technician to ready "
                                                                             "a vest pack."),
                        confirm_booking])
    return desk


def setup() -> None:
    common.server().use(policy)


def record(key: str, path: Path) -> None:
    from agents import RunConfig, Runner, set_trace_processors
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    processor = TrajdebugProcessor(path=str(path), name=AGENT)
    set_trace_processors([processor])
    desk = _agents()
    Runner.run_sync(desk, f"Book party {key} as requested by the host.",
                    run_config=RunConfig(workflow_name=AGENT, trace_metadata={"task": f"book party {key}"}),
                    max_turns=20)
