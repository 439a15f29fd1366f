"""Agent 7 (openai_agents route): voice-over casting and studio booking.

Shape: casting intake agent hands off to the audiobook or commercials desk (two desks, one hand-off each);
the desk searches talent, checks union clearance, reads the rate card, asks the script timer (a sub-agent
run as a tool) for the session length, prices the fee, holds the studio and books the session on the
agency's booking service.  Chat Completions model against the FakeModelServer; TrajdebugProcessor.
"""

from __future__ import annotations

import json
import math
from contextlib import contextmanager
from typing import Any, Iterator

from . import kit
from .common import Fault

AGENT = "voice_casting"
ROUTE = "openai_agents"
EXT = "jsonl"
RUN_NAME = "voice-casting"
DOMAIN = "Voice-over casting"
SHAPE = "intake hands off to one of two desks; 6 tools incl. a paginated talent search, union clearance, fee tool; script-timer sub-agent as_tool"

TALENT = [
    {"id": "V-101", "name": "Aled Rhys", "accent": "Welsh", "band": "C", "hourly_gbp": 210},
    {"id": "V-118", "name": "Maeve Quinn", "accent": "Irish", "band": "B", "hourly_gbp": 180},
    {"id": "V-124", "name": "Priya Nair", "accent": "RP", "band": "C", "hourly_gbp": 240},
    {"id": "V-139", "name": "Tom Ashdown", "accent": "RP", "band": "B", "hourly_gbp": 175},
    {"id": "V-152", "name": "Nia Owusu", "accent": "London", "band": "C", "hourly_gbp": 230},
    {"id": "V-167", "name": "Callum Reid", "accent": "Scottish", "band": "B", "hourly_gbp": 190},
    {"id": "V-183", "name": "Sofia Marsh", "accent": "RP", "band": "C", "hourly_gbp": 260},
    {"id": "V-195", "name": "Ewan Pryde", "accent": "Northern", "band": "C", "hourly_gbp": 150},
]
UNION_MIN = {"A": 120, "B": 170, "C": 205}


class BookingRefused(RuntimeError):
    pass


BookingRefused.__module__ = "castbook.client"

_run: dict[str, Any] = {}


def minutes_for(words: int) -> int:
    return int(math.ceil(words / 150 * 1.5 / 10) * 10)


def _tools():
    from agents import function_tool

    @function_tool
    def search_talent(accent: str, page_size: int = 10) -> str:
        """Search the talent roster by accent; returns matching voices."""
        found = [t for t in TALENT if accent in ("any", t["accent"])] or TALENT
        listed = found
        if kit.active("vc_truncated_result"):
            listed = found[:1]
        return json.dumps({"total_matches": len(found), "returned": len(listed), "results": listed})

    @function_tool
    def check_union_clearance(talent_id: str) -> str:
        """Union registry clearance and fee band of a voice (retries the registry once)."""
        band = next(t["band"] for t in TALENT if t["id"] == talent_id)
        first = {"status": 503, "error": "registry busy"}
        if first["status"] != 200:
            if kit.active("vc_swallowed_error"):
                return json.dumps({"talent": talent_id, "cleared": True, "band": "A"})
        return json.dumps({"talent": talent_id, "cleared": True, "band": band})

    @function_tool
    def get_rate_card(talent_id: str) -> str:
        """Agent's rate card for a voice."""
        t = next(t for t in TALENT if t["id"] == talent_id)
        return json.dumps({"talent": talent_id, "hourly_gbp": t["hourly_gbp"], "min_call_h": 1})

    @function_tool
    def price_session(hourly_gbp: float, band: str, minutes: int) -> str:
        """Price a session from the hourly rate, clamped to the union minimum of the band."""
        rate = max(hourly_gbp, UNION_MIN[band]) if band in UNION_MIN else hourly_gbp
        hours = minutes if kit.active("vc_unit_error") else minutes / 60
        return json.dumps({"band": band, "rate_gbp_h": rate, "hours": round(hours, 2), "fee_gbp": round(rate * hours, 2)})

    @function_tool
    def hold_studio(date: str, length: str) -> str:
        """Hold a studio booth; length as given by the script timer."""
        mins = int(float(length.split()[0]))
        _run["hold"] = mins
        return json.dumps({"hold": f"H-{kit.seed(date, mins) % 9000 + 1000}", "minutes": mins})

    @function_tool
    def estimate_session(words: int) -> str:
        """Studio minutes for a script of a given length, retakes included."""
        return json.dumps({"words": words, "minutes": minutes_for(words)})

    @function_tool(failure_error_function=None)
    def book_session(talent_id: str, session_type: str, date: str, minutes: int, fee_gbp: float) -> str:
        """Book the session on the agency's booking service."""
        po = _run["po"]
        if session_type != po["type"]:
            raise BookingRefused(f"castbook 422: {po['po']} is a {po['type']} order, {session_type} booking refused")
        if talent_id != po["talent"]:
            raise BookingRefused(f"castbook 422: {po['po']} names voice {po['talent']}, not {talent_id}")
        band = next(t["band"] for t in TALENT if t["id"] == talent_id)
        if fee_gbp < UNION_MIN[band] * minutes / 60 - 0.01:
            raise BookingRefused(f"castbook 422: fee {fee_gbp:.2f} GBP is under the union minimum for this voice")
        if fee_gbp > po["budget"]:
            raise BookingRefused(f"castbook 402: fee {fee_gbp:,.2f} GBP exceeds the approved budget on {po['po']}")
        if _run.get("hold", 0) < minutes:
            raise BookingRefused(f"castbook 409: studio hold of {_run.get('hold', 0)} min cannot take a {minutes} min session")
        return json.dumps({"booking": f"CB-{kit.seed(talent_id, date) % 90000 + 10000}", "status": "confirmed"})

    return search_talent, check_union_clearance, get_rate_card, price_session, hold_studio, estimate_session, book_session


def _results(msgs: list[dict]) -> dict[str, Any]:
    names = {tc["id"]: tc["function"]["name"] for m in msgs for tc in (m.get("tool_calls") or [])}
    out = {}
    for m in msgs:
        if m.get("role") == "tool":
            try:
                out[names.get(m.get("tool_call_id"))] = json.loads(m["content"])
            except (TypeError, ValueError):
                out[names.get(m.get("tool_call_id"))] = m["content"]
    return out


def _policy(request):
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    res = _results(msgs)
    users = [m["content"] for m in msgs if m["role"] == "user"]
    if system.startswith("You time scripts"):
        ask = json.loads(users[-1])
        if "estimate_session" not in res:
            return Reply(tool_calls=(tool_call("estimate_session", {"words": ask["words"]}),))
        m = res["estimate_session"]["minutes"]
        if kit.active("vc_format_drift"):
            return f"{m / 60:.1f} h"
        return f"{m} min"
    req = json.loads(users[0])
    if system.startswith("You are casting intake"):
        desk = {"audiobook": "audiobook_desk", "commercial": "commercials_desk"}[req["type"]]
        if kit.active("vc_wrong_routing"):
            desk = "commercials_desk"
        return Reply(text=f"Routing this {req['type']} job.", tool_calls=(tool_call(f"transfer_to_{desk}", {}),))
    session_type = "audiobook" if system.startswith("You are the audiobook desk") else "commercial"
    if "search_talent" not in res:
        return Reply(tool_calls=(tool_call("search_talent", {"accent": req["accent"], "page_size": 10}),))
    found = res["search_talent"]["results"]
    talent = next((t for t in found if t["id"] == req["voice"]), found[0])
    if "check_union_clearance" not in res:
        return Reply(tool_calls=(tool_call("check_union_clearance", {"talent_id": talent["id"]}),))
    if "get_rate_card" not in res:
        return Reply(tool_calls=(tool_call("get_rate_card", {"talent_id": talent["id"]}),))
    if "time_script" not in res:
        return Reply(tool_calls=(tool_call("time_script", {"input": json.dumps({"words": req["words"]})}),))
    length = res["time_script"] if isinstance(res["time_script"], str) else json.dumps(res["time_script"])
    minutes = minutes_for(req["words"])
    if "hold_studio" not in res:
        return Reply(tool_calls=(tool_call("hold_studio", {"date": req["date"], "length": length}),))
    if "price_session" not in res:
        return Reply(tool_calls=(tool_call("price_session", {"hourly_gbp": res["get_rate_card"]["hourly_gbp"],
                                                             "band": res["check_union_clearance"]["band"],
                                                             "minutes": minutes}),))
    if "book_session" not in res:
        return Reply(tool_calls=(tool_call("book_session", {"talent_id": talent["id"], "session_type": session_type,
                                                            "date": req["date"], "minutes": minutes,
                                                            "fee_gbp": res["price_session"]["fee_gbp"]}),))
    return f"Booked {talent['name']} ({res['book_session']['booking']})."


@contextmanager
def session() -> Iterator[None]:
    from trajdebug.testing import FakeModelServer

    with FakeModelServer(_policy, model="gpt-4o-mini") as server:
        _run["base_url"] = server.base_url
        _run["tools"] = _tools()
        try:
            yield
        finally:
            _run.clear()


def run_once(inp: dict, path: str) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, set_trace_processors, set_tracing_disabled
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    search, clearance, rates, price, hold, estimate, book = _run["tools"]
    client = AsyncOpenAI(base_url=_run["base_url"], api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    timer = Agent(name="script_timer", model=model, tools=[estimate],
                  instructions="You time scripts for voice sessions. Answer with the session length.")
    desk_tools = [search, clearance, rates, timer.as_tool(tool_name="time_script", tool_description="Time a script."),
                  hold, price, book]
    audiobook = Agent(name="audiobook_desk", model=model, tools=desk_tools,
                      instructions="You are the audiobook desk. Cast the narrator and book the studio session.")
    commercials = Agent(name="commercials_desk", model=model, tools=desk_tools,
                        instructions="You are the commercials desk. Cast the voice and book the spot session.")
    intake = Agent(name="casting_intake", model=model, handoffs=[audiobook, commercials],
                   instructions="You are casting intake. Route the job to the right desk.")
    _run["po"] = {"po": inp["po"], "type": inp["type"], "talent": inp["voice"], "budget": 4000}
    _run.pop("hold", None)
    set_tracing_disabled(False)
    set_trace_processors([TrajdebugProcessor(path=path, name=RUN_NAME)])
    try:
        Runner.run_sync(intake, json.dumps(inp), max_turns=20,
                        run_config=RunConfig(workflow_name=RUN_NAME, trace_metadata={"task": f"cast {inp['po']}"}))
    except Exception as exc:
        if "castbook" not in str(exc):
            raise
    set_trace_processors([])


def _req(po: str, typ: str, voice: str, accent: str, words: int, date: str) -> dict:
    return {"po": po, "type": typ, "voice": voice, "accent": accent, "words": words, "date": date}


_IN = {
    "drift": _req("PO-7731", "audiobook", "V-124", "RP", 31000, "2027-05-04"),
    "routing": _req("PO-7740", "audiobook", "V-167", "Scottish", 18000, "2027-05-06"),
    "trunc": _req("PO-7752", "commercial", "V-183", "RP", 120, "2027-05-07"),
    "swallow": _req("PO-7768", "audiobook", "V-195", "Northern", 26000, "2027-05-11"),
    "units": _req("PO-7791", "audiobook", "V-118", "Irish", 20000, "2027-05-14"),
}

FAULTS = [
    Fault("voicecasting_1", "vc_format_drift", "format_drift", "generation gpt-4o-mini",
          f"{minutes_for(31000) / 60:.1f} h", _IN["drift"]),
    Fault("voicecasting_2", "vc_wrong_routing", "wrong_routing", "generation gpt-4o-mini", "transfer_to_commercials_desk", _IN["routing"]),
    Fault("voicecasting_3", "vc_truncated_result", "truncated_result", "search_talent", '"returned": 1', _IN["trunc"]),
    Fault("voicecasting_4", "vc_swallowed_error", "swallowed_error", "check_union_clearance", '"band": "A"', _IN["swallow"]),
    Fault("voicecasting_5", "vc_unit_error", "unit_error", "price_session", f'"hours": {minutes_for(20000)},', _IN["units"]),
]

REFS = [_req("PO-7702", "commercial", "V-118", "Irish", 90, "2027-05-03"),
        _req("PO-7715", "audiobook", "V-101", "Welsh", 42000, "2027-05-05"),
        _req("PO-7779", "commercial", "V-139", "RP", 60, "2027-05-12"),
        _req("PO-7786", "audiobook", "V-183", "RP", 22000, "2027-05-13")]
