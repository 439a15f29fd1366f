"""Orrery maker's clockwork builds: a per-body gear-train loop traced with OpenTelemetry, exported as OTLP JSON.

Shape: read_commission -> the model lists the orbital periods (ChatCompletion) -> parse_periods ->
save_build_sheet (the workshop memory) -> for each body: target_ratio (reads the memory) -> gear_stock
(retriever over two-stage trains) -> reserve_gears (the supplier; a dropped connection is retried) ->
queue_lathe_job -> the model writes the assembly notes -> assemble_train (the bench assertions, raises).
"""

from __future__ import annotations

import bisect
import itertools
import json
import re

from openai import OpenAI

from otlp_support import Recorder

NAME = "orrery-clockwork"
ROUTE = "otlp"
DOMAIN = "orrery maker's clockwork builds"
SHAPE = "per-body loop, 22-36 spans: llm -> parser -> memory write -> (memory read -> retriever -> supplier tool, one retried -> lathe tool) per body -> llm notes -> final assertion step raises (or the supplier raises)"
SWITCH = None

EPHEMERIS = {"Mercury": 87.969, "Venus": 224.701, "Earth": 365.256, "Mars": 686.98, "Jupiter": 4332.59,
             "Saturn": 10759.22, "Uranus": 30688.5, "Neptune": 60182.0, "Moon": 27.3217}
TEETH = [12, 15, 16, 18, 20, 24, 27, 30, 32, 36, 40, 45, 48, 54, 60, 64, 72, 80, 90, 96, 108, 120, 144]
TRAINS = sorted({((b / a) * (d / c), a, b, c, d) for a, b, c, d in itertools.product(TEETH, repeat=4)})
RATIOS = [t[0] for t in TRAINS]

INPUTS = [
    {"client": "Royal Hythe Observatory", "planets": ["Mercury", "Venus", "Earth", "Mars"], "module_mm": 0.8},
    {"client": "Pemberton School of Navigation", "planets": ["Mercury", "Venus", "Earth", "Moon", "Mars", "Jupiter", "Saturn"],
     "module_mm": 0.6},
    {"client": "Casa Lisboa Clocks", "planets": ["Earth", "Moon", "Venus"], "module_mm": 0.5},
    {"client": "Brannock Collection", "planets": ["Mercury", "Venus", "Earth", "Moon", "Mars", "Jupiter",
                                                  "Saturn"], "module_mm": 1.0},
    {"client": "Studio Kessler", "planets": ["Venus", "Earth", "Mars", "Jupiter"], "module_mm": 0.7},
]

CASES = [
    {"id": "zzzg_orr_01", "input": 3, "switch": 1, "kind": "hallucinated_value",
     "root": ("ChatCompletion", 1), "failure": ("assemble_train", 1),
     "description": "The model gives Mars an orbital period of 586.98 days instead of 686.98, so the Mars "
                    "train is cut for a ratio 15 percent too fast."},
    {"id": "zzzg_orr_02", "input": 1, "switch": 2, "kind": "format_drift",
     "root": ("ChatCompletion", 1), "failure": ("assemble_train", 1),
     "description": "The model answers the periods of Jupiter and Saturn in years ('11.86 years') while the "
                    "rest are in days, and the parser takes 11.86 as days."},
    {"id": "zzzg_orr_03", "input": 0, "switch": 3, "kind": "bad_memory_write",
     "root": ("save_build_sheet", 1), "failure": ("assemble_train", 1),
     "description": "The build sheet written to the workshop memory pairs the bodies in alphabetical order "
                    "with the periods in solar order, so Earth is saved with Mercury's period."},
    {"id": "zzzg_orr_04", "input": 4, "switch": 4, "kind": "stale_data",
     "root": ("gear_stock", 4), "failure": ("reserve_gears", 5),
     "description": "The gear stock search reads last month's stock snapshot and offers the Jupiter train "
                    "whose wheels were sold since, which the supplier cannot reserve."},
    {"id": "zzzg_orr_05", "input": 2, "switch": 5, "kind": "tool_ignores_argument",
     "root": ("reserve_gears", 1), "failure": ("assemble_train", 1),
     "description": "The supplier's reservation ignores the 0.5 mm module it is given and reserves its "
                    "default 0.8 mm wheels for every train."},
]


def best_trains(ratio: float, k: int = 3, exclude=()) -> list:
    i = bisect.bisect_left(RATIOS, ratio)
    near = TRAINS[max(0, i - 6): i + 6]
    near = [t for t in near if f"T-{t[1]}-{t[2]}-{t[3]}-{t[4]}" not in exclude]
    near.sort(key=lambda t: (abs(t[0] - ratio), t[1:]))
    return [{"train": f"T-{a}-{b}-{c}-{d}", "ratio": round(r, 6), "wheels": [a, b, c, d]} for r, a, b, c, d in near[:k]]


SOLD = {best_trains(EPHEMERIS["Jupiter"] / EPHEMERIS["Earth"], 1)[0]["train"]}


class SupplierError(Exception):
    pass


# ---------------------------------------------------------------- model policy

def policy(request):
    messages = request.body["messages"]
    system, user = messages[0]["content"], messages[-1]["content"]
    if system.startswith("List the orbital periods"):
        bodies = json.loads(user)["bodies"]
        periods = {}
        for b in bodies:
            days = EPHEMERIS[b]
            if SWITCH == 1 and b == "Mars":
                days = 586.98
            periods[b] = days
            if SWITCH == 2 and b in ("Jupiter", "Saturn"):
                periods[b] = f"{days / 365.25:.2f} years"
        return json.dumps({"periods_days": periods})
    trains = json.loads(user)
    return "Assembly notes: " + "; ".join(f"{t['body']} on {t['train']}" for t in trains) + "."


# ---------------------------------------------------------------- steps

_MEMORY: dict = {}
_SUPPLIER = {"calls": 0}


def read_commission(client: str, planets: list, module_mm: float) -> dict:
    return {"client": client, "bodies": list(planets), "module_mm": module_mm}


def parse_periods(text: str) -> dict:
    raw = json.loads(text)["periods_days"]
    return {b: float(re.match(r"[\d.]+", str(v)).group(0)) for b, v in raw.items()}


def save_build_sheet(client: str, bodies: list, periods: dict, module_mm: float) -> dict:
    names = sorted(bodies) if SWITCH == 3 else list(bodies)
    sheet = {name: {"period_days": p, "module_mm": module_mm} for name, p in zip(names, periods.values())}
    _MEMORY[client] = sheet
    return {"saved": client, "entries": len(sheet)}


def target_ratio(client: str, body: str) -> dict:
    entry = _MEMORY[client][body]
    return {"body": body, "ratio": round(entry["period_days"] / EPHEMERIS["Earth"], 6), "module_mm": entry["module_mm"]}


def gear_stock(ratio: float, module_mm: float) -> list:
    return best_trains(ratio, 3, exclude=() if SWITCH == 4 else SOLD)


def reserve_gears(train: str, module_mm: float) -> dict:
    _SUPPLIER["calls"] += 1
    if _SUPPLIER["calls"] == 3:
        raise ConnectionError("supplier portal reset the connection")
    if train in SOLD:
        raise SupplierError(f"train {train} cannot be reserved: its wheels were sold")
    module = 0.8 if SWITCH == 5 else module_mm
    return {"train": train, "module_mm": module, "reservation": f"R-{train[2:]}-{module}"}


def queue_lathe_job(body: str, train: str, module_mm: float) -> dict:
    return {"body": body, "train": train, "arbor_mm": round(module_mm * 6, 2), "queued": True}


def assemble_train(client: str, module_mm: float, reserved: list) -> dict:
    for r in reserved:
        target = EPHEMERIS[r["body"]] / EPHEMERIS["Earth"]
        a, b, c, d = (int(x) for x in r["train"][2:].split("-"))
        got = (b / a) * (d / c)
        assert abs(got - target) / target < 0.01, (
            f"{r['body']} train {r['train']} turns at {got:.4f} of a year per orbit; the ephemeris needs {target:.4f}")
        assert r["module_mm"] == module_mm, (
            f"{r['body']} wheels are module {r['module_mm']} mm; the frame is cut for {module_mm} mm")
    return {"client": client, "bodies": len(reserved), "assembled": True}


def record(inp: dict, path: str, server) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _MEMORY.clear()
    _SUPPLIER["calls"] = 0
    with Recorder(NAME, path) as rec, rec.span(NAME, "AGENT", {"client": inp["client"]}, **{"agent.name": NAME}) as top:
        job = rec.call("read_commission", "CHAIN", read_commission, dict(inp))
        reply = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": "List the orbital periods in Earth days as JSON."},
            {"role": "user", "content": json.dumps({"bodies": job["bodies"]})},
        ])
        periods = rec.call("parse_periods", "CHAIN", parse_periods, {"text": reply.choices[0].message.content})
        rec.call("save_build_sheet", "TOOL", save_build_sheet, {"client": job["client"], "bodies": job["bodies"],
                                                                "periods": periods, "module_mm": job["module_mm"]})
        reserved = []
        for body in job["bodies"]:
            target = rec.call("target_ratio", "CHAIN", target_ratio, {"client": job["client"], "body": body})
            trains = rec.call("gear_stock", "RETRIEVER", gear_stock,
                              {"ratio": target["ratio"], "module_mm": target["module_mm"]})
            pick = trains[0]
            for attempt in (1, 2):
                try:
                    got = rec.call("reserve_gears", "TOOL", reserve_gears,
                                   {"train": pick["train"], "module_mm": target["module_mm"]})
                    break
                except ConnectionError:
                    if attempt == 2:
                        raise
            rec.call("queue_lathe_job", "TOOL", queue_lathe_job,
                     {"body": body, "train": got["train"], "module_mm": got["module_mm"]})
            reserved.append({"body": body, **got})
        client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": "Write the assembly notes for the bench."},
            {"role": "user", "content": json.dumps(reserved)},
        ])
        top["output"] = rec.call("assemble_train", "CHAIN", assemble_train,
                                 {"client": job["client"], "module_mm": job["module_mm"], "reserved": reserved})
