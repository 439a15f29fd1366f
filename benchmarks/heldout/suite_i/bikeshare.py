"""Bike-share rebalancing (OpenInference on the `openai` client, exported as OTLP JSON): the model
queries every station of a zone in one turn (parallel tool calls), the agent computes imbalances and
has the model plan truck moves, parses the plan, dispatches each move to the operations API and
checks the zone's fill levels at the end."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from benchmarks.heldout.suite_i import _otlp
from benchmarks.heldout.suite_i._kit import Case, active, json_in, last_user, system_of
from openai import OpenAI

from trajdebug.testing import FakeModelServer, Reply, tool_call


NAME = "bike-rebalancer"
ROUTE = "otlp"

# The live state of each zone: station -> (docks, bikes now, 24-hour mean of bikes).
ZONES: dict[str, dict[str, tuple[int, int, int]]] = {
    "riverside": {"R-1": (20, 18, 11), "R-2": (20, 2, 9), "R-3": (24, 12, 12), "R-4": (20, 3, 14), "R-5": (20, 17, 10)},
    "harbour": {"H-1": (20, 4, 9), "H-2": (20, 16, 12), "H-3": (30, 15, 15), "H-4": (20, 19, 10),
                "H-5": (20, 1, 8), "H-6": (16, 8, 7)},
    "campus": {"C-1": (20, 10, 10), "C-2": (20, 3, 8), "C-3": (24, 20, 13), "C-4": (20, 10, 9), "C-5": (16, 8, 8)},
    "oldtown": {"O-1": (20, 10, 10), "O-2": (20, 16, 11), "O-3": (30, 27, 16), "O-4": (20, 4, 9),
                "O-5": (30, 3, 12), "O-6": (20, 10, 10)},
    "quayside": {"Q-1": (20, 17, 11), "Q-2": (24, 4, 10), "Q-3": (20, 10, 10), "Q-4": (20, 15, 12), "Q-5": (16, 2, 7)},
    "market": {"M-1": (20, 19, 12), "M-2": (20, 1, 7), "M-3": (20, 10, 10), "M-4": (24, 12, 12)},
    "station": {"T-1": (30, 6, 14), "T-2": (30, 24, 15), "T-3": (20, 10, 10), "T-4": (20, 17, 9), "T-5": (20, 3, 11)},
    "uptown": {"U-1": (20, 10, 10), "U-2": (20, 15, 12), "U-3": (20, 5, 8), "U-4": (16, 8, 8)},
    "docks": {"D-1": (24, 21, 12), "D-2": (24, 3, 11), "D-3": (20, 10, 10), "D-4": (20, 18, 10), "D-5": (20, 2, 9),
              "D-6": (20, 10, 10)},
}
INPUTS = {name: name for name in ZONES}
REFS = ("market", "station", "uptown", "docks")
# What the overnight log carried over: a move from the late shift, in a zone of its own.
OVERNIGHT = "MOVE C-9 -> C-2: 5 bikes (carry-over from the 22:10 shift)"

CASES = (
    Case("bikeshare-args", "bs_args", "wrong_tool_args", "riverside", "ChatCompletion", '"window": "24h"',
         "The model asks for R-4's 24-hour mean instead of its 15-minute status, so R-4 looks full and gets no bikes."),
    Case("bikeshare-cache", "bs_cache", "stale_data", "harbour", "get_station_status", '"as_of": "05:40"',
         "H-6's status is served from the 05:40 cache (15 bikes) while it holds 8, so the plan takes 6 bikes from it."),
    Case("bikeshare-notes", "bs_notes", "context_pollution", "campus", "build_plan_prompt", "C-9",
         "The planning prompt carries the late shift's move from C-9, a station outside the zone, which the model keeps."),
    Case("bikeshare-invent", "bs_invent", "hallucinated_value", "quayside", "ChatCompletion", "Q-4 -> Q-5: 12 bikes",
         "The planning model moves 12 bikes from Q-4, a count the imbalance table (5 spare) does not hold."),
    Case("bikeshare-parse", "bs_parse", "lossy_parsing", "oldtown", "parse_moves", '"bikes": 1, "from": "O-3"',
         "The move parser reads only the first digit of 12 bikes from O-3, so one bike is moved."),
)


class DispatchRejected(RuntimeError):
    """The operations API refused a truck move."""

    __module__ = "fleetops.api"


class BalanceCheckFailed(RuntimeError):
    """A station is outside its fill band after the moves."""

    __module__ = "fleetops.checks"


# -- the scripted model ----------------------------------------------------------------------------


def _plan(rows: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    give = {r["station"]: r["surplus"] for r in rows if r["surplus"] > 2}
    need = {r["station"]: -r["surplus"] for r in rows if r["surplus"] < -2}
    moves = []
    while give and need:
        src, dst = max(give, key=lambda s: (give[s], s)), max(need, key=lambda s: (need[s], s))
        n = min(give[src], need[dst])
        moves.append((src, dst, n))
        give[src] -= n
        need[dst] -= n
        give = {s: v for s, v in give.items() if v > 0}
        need = {s: v for s, v in need.items() if v > 0}
    return moves


def policy(request: Any) -> Reply | str:
    system, prompt = system_of(request), last_user(request)
    if system.startswith("You collect"):
        if request.body["messages"][-1]["role"] == "tool":
            return "Every station reported."
        data = json_in(prompt)
        calls = []
        for station in data["stations"]:
            window = "24h" if active("bs_args") and station == "R-4" else "15m"
            calls.append(tool_call("get_station_status", {"station": station, "window": window}))
        return Reply(tool_calls=tuple(calls))
    data = json_in(prompt)
    lines = [note for note in data["notes"] if note.startswith("MOVE")]
    moves = _plan(data["imbalances"])
    if active("bs_invent") and data["zone"] == "quayside":
        moves = [(a, b, 12 if a == "Q-4" else n) for a, b, n in moves]
    lines += [f"MOVE {a} -> {b}: {n} bikes" for a, b, n in moves]
    return "Truck plan:\n" + "\n".join(lines)


# -- the agent -------------------------------------------------------------------------------------

STATUS_TOOL = {"type": "function", "function": {
    "name": "get_station_status", "description": "Bikes and free docks at a station.",
    "parameters": {"type": "object", "properties": {"station": {"type": "string"}, "window": {"type": "string"}},
                   "required": ["station", "window"]}}}


def _station_status(zone: str, station: str, window: str) -> dict[str, Any]:
    with _otlp.span("get_station_status", "TOOL", {"station": station, "window": window}) as s:
        docks, now, mean = ZONES[zone][station]
        bikes, as_of = (mean, "24h mean") if window == "24h" else (now, "07:29")
        if active("bs_cache") and station == "H-6":
            bikes, as_of = 15, "05:40"
        s.output = {"station": station, "docks": docks, "bikes": bikes, "as_of": as_of}
    return s.output


def _collect(client: OpenAI, zone: str, stations: list[str]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You collect the live status of every station of a bike-share zone."},
        {"role": "user", "content": "Query each station: " + json.dumps({"zone": zone, "stations": stations})}]
    reply = client.chat.completions.create(model="rebalancer", messages=messages, tools=[STATUS_TOOL])
    message = reply.choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    statuses = []
    for call in message.tool_calls or ():
        status = _station_status(zone, **json.loads(call.function.arguments))
        statuses.append(status)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(status)})
    client.chat.completions.create(model="rebalancer", messages=messages, tools=[STATUS_TOOL])
    return statuses


def _imbalances(statuses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    with _otlp.span("compute_imbalances", "CHAIN", statuses) as s:
        s.output = [{"station": r["station"], "docks": r["docks"], "bikes": r["bikes"],
                     "surplus": r["bikes"] - r["docks"] // 2} for r in statuses]
    return s.output


def _prompt(zone: str, rows: list[dict[str, Any]]) -> str:
    with _otlp.span("build_plan_prompt", "CHAIN", {"zone": zone, "rows": len(rows)}) as s:
        notes = ["Keep two bikes at every station during the morning peak."]
        if active("bs_notes"):
            notes.append(OVERNIGHT)
        s.output = "Plan truck moves for this zone: " + json.dumps({"zone": zone, "imbalances": rows, "notes": notes})
    return s.output


def _parse(text: str) -> list[dict[str, Any]]:
    with _otlp.span("parse_moves", "CHAIN", text) as s:
        pattern = r"MOVE (\S+) -> (\S+): (\d)" if active("bs_parse") else r"MOVE (\S+) -> (\S+): (\d+)"
        s.output = [{"from": a, "to": b, "bikes": int(n)} for a, b, n in re.findall(pattern, text)]
    return s.output


def _dispatch(zone: str, live: dict[str, list[int]], move: dict[str, Any]) -> None:
    with _otlp.span("dispatch_move", "TOOL", move) as s:
        for station in (move["from"], move["to"]):
            if station not in live:
                raise DispatchRejected(f"station {station} is not in zone {zone}")
        src, dst = live[move["from"]], live[move["to"]]
        if src[1] - move["bikes"] < src[0] // 5:
            raise DispatchRejected(f"moving {move['bikes']} bikes would leave {move['from']} with "
                                   f"{src[1] - move['bikes']} of {src[0]} docks filled (minimum {src[0] // 5})")
        src[1] -= move["bikes"]
        dst[1] += move["bikes"]
        s.output = {"truck": "TRK-3", "moved": move["bikes"], "from": move["from"], "to": move["to"]}


def _verify(live: dict[str, list[int]]) -> None:
    with _otlp.span("verify_fill_levels", "CHAIN", {k: v[1] for k, v in live.items()}) as s:
        for station, (docks, bikes) in live.items():
            if not 0.25 <= bikes / docks <= 0.8:
                raise BalanceCheckFailed(f"{station} holds {bikes} of {docks} docks after the moves "
                                         f"({bikes / docks:.0%}), outside the 25-80% band")
        s.output = {"stations": len(live), "balanced": True}


def record(server: FakeModelServer, input_id: str, path: Path) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    zone = INPUTS[input_id]
    with _otlp.trace_to(path):
        try:
            with _otlp.span(NAME, "AGENT", {"zone": zone, "shift": "07:30"}) as root:
                with _otlp.span("load_zone", "TOOL", {"zone": zone}) as s:
                    s.output = {"zone": zone, "stations": sorted(ZONES[zone])}
                rows = _imbalances(_collect(client, zone, s.output["stations"]))
                reply = client.chat.completions.create(model="rebalancer", messages=[
                    {"role": "system", "content": "You plan bike-share truck moves, one MOVE line each."},
                    {"role": "user", "content": _prompt(zone, rows)}])
                live = {k: [v[0], v[1]] for k, v in ZONES[zone].items()}
                for move in _parse(reply.choices[0].message.content or ""):
                    _dispatch(zone, live, move)
                _verify(live)
                root.output = {k: v[1] for k, v in live.items()}
        except (DispatchRejected, BalanceCheckFailed):
            pass
