"""Winter ice-road haulage dispatch (openai client instrumented by OpenInference, own spans, OTLP/JSON).

An AGENT span around one haul: a model loop gathers the manifest, the ice profile and the road weather;
code CHAIN spans normalise the profile and compute the allowed gross load; a second model loop takes a
gate slot and writes the convoy plan; CHAIN spans parse and check the plan and write it to the dispatch
board; TOOL spans ask the road authority for the convoy permit, load the trucks, weigh them at the
checkpoint and dispatch the convoy.
"""

from __future__ import annotations

import json
import math
from typing import Any

from benchmarks.heldout.suite_o import kit


NAME = "ice-road-dispatch"
ROUTE = "otlp"
DOMAIN = "winter ice-road haulage"
SHAPE = "OTLP: AGENT root; model loop (manifest, ice profile, weather); CHAIN normalise + allowed load; model loop (gate slot, plan text); CHAIN parse, check, board write; TOOL permit; TOOL load per truck; TOOL checkpoint; TOOL dispatch"

TARE_T = 14.0
MAX_PAYLOAD_T = 32.0

ROADS = {
    "Tibbitt-Contwoyto": {
        "segments": [131, 128, 140, 126, 133, 137, 129, 135, 110, 124, 121, 130],
        "warm": ["2026-02-12"],
    },
    "Wapusk Crossing": {"segments": [104, 108, 101, 106, 103, 100, 105, 107, 102, 104, 106, 103], "warm": []},
    "Berens River": {
        "segments": [125, 127, 130, 124, 126, 129, 131, 128, 127, 106, 125, 126],
        "warm": ["2026-02-19"],
    },
    "Deline Winter Road": {
        "segments": [119, 122, 120, 118, 121, 123, 117, 120, 119, 122, 121, 118],
        "warm": ["2026-02-24"],
    },
}
BOARD = {"Gate Km0": {"previous": "05:30"}, "Gate Km0 North": {"previous": "06:10"}}

INPUTS = {
    "h41": {
        "haul": "H-2041",
        "road": "Tibbitt-Contwoyto",
        "date": "2026-02-10",
        "gate": "Gate Km0",
        "cargo_t": 90.0,
    },
    "h44": {
        "haul": "H-2044",
        "road": "Wapusk Crossing",
        "date": "2026-02-12",
        "gate": "Gate Km0 North",
        "cargo_t": 72.0,
    },
    "h47": {
        "haul": "H-2047",
        "road": "Berens River",
        "date": "2026-02-19",
        "gate": "Gate Km0",
        "cargo_t": 96.0,
    },
    "h52": {
        "haul": "H-2052",
        "road": "Deline Winter Road",
        "date": "2026-02-24",
        "gate": "Gate Km0 North",
        "cargo_t": 64.0,
    },
    "h55": {
        "haul": "H-2055",
        "road": "Berens River",
        "date": "2026-02-26",
        "gate": "Gate Km0",
        "cargo_t": 80.0,
    },
    "h58": {
        "haul": "H-2058",
        "road": "Tibbitt-Contwoyto",
        "date": "2026-02-28",
        "gate": "Gate Km0 North",
        "cargo_t": 110.0,
    },
}

FAULTS = [
    {
        "id": "ice.profile_units",
        "kind": "unit_error",
        "input": "h44",
        "root": "normalize_profile",
        "marker": "254.0",
        "note": "the normaliser converts centimetre readings as if they were inches",
    },
    {
        "id": "ice.profile_page",
        "kind": "truncated_result",
        "input": "h41",
        "root": "get_ice_profile",
        "marker": "1/2",
        "note": "the ice-profile service returns its first page of segments only",
    },
    {
        "id": "ice.weather_outage",
        "kind": "swallowed_error",
        "input": "h52",
        "root": "get_road_weather",
        "marker": "climatology",
        "note": "the weather tool swallows the forecast outage and answers with climatology",
    },
    {
        "id": "ice.plan_weight",
        "kind": "hallucinated_value",
        "input": "h55",
        "root": "ChatCompletion",
        "marker": "35.5",
        "note": "the planning model states a gross weight for one truck that no input holds",
    },
    {
        "id": "ice.board_slot",
        "kind": "bad_memory_write",
        "input": "h47",
        "root": "remember_convoy",
        "marker": "05:30",
        "note": "the board write keeps the gate's previous convoy slot instead of the slot just taken",
    },
]

_RUN: dict[str, Any] = {}


def task(inp: dict) -> str:
    return f"Dispatch haul {inp['haul']} ({inp['cargo_t']} t) over {inp['road']} on {inp['date']}"


def rating(h_cm: float, warm: bool) -> float:
    return round(0.0035 * h_cm**2 * (0.8 if warm else 1.0), 2)


# -- the outside world ---------------------------------------------------------------------------


def get_manifest(haul: str) -> dict:
    inp = _RUN["inp"]
    return {
        "haul": haul,
        "cargo_t": inp["cargo_t"],
        "commodity": "diesel and mine consumables",
        "trucks": [
            {"truck": f"T-{i}", "tare_t": TARE_T, "max_payload_t": MAX_PAYLOAD_T} for i in range(1, 7)
        ],
    }


def get_ice_profile(road: str) -> dict:
    segs = [{"segment": i + 1, "thickness": h} for i, h in enumerate(ROADS[road]["segments"])]
    if kit.active("ice.profile_page"):
        return {"road": road, "unit": "cm", "page": "1/2", "segments": segs[:6]}
    return {"road": road, "unit": "cm", "page": "1/1", "segments": segs}


def get_road_weather(road: str, date: str) -> dict:
    warm = date in ROADS[road]["warm"]
    if kit.active("ice.weather_outage"):
        try:
            raise ConnectionError("forecast service 503")
        except ConnectionError:
            return {"road": road, "date": date, "air_max_c": -24.0, "source": "climatology"}
    return {"road": road, "date": date, "air_max_c": -3.5 if warm else -21.0, "source": "forecast"}


def get_free_slot(gate: str, date: str) -> dict:
    return {"gate": gate, "date": date, "slot": "07:45" if gate == "Gate Km0" else "08:20"}


def request_convoy_permit(road: str, date: str, gate: str, slot: str, trucks: list) -> dict:
    if slot == BOARD[gate]["previous"]:
        raise RuntimeError(f"road authority: 409 {gate} slot {slot} on {date} is allocated to another convoy")
    warm = date in ROADS[road]["warm"]
    limit = rating(min(ROADS[road]["segments"]), warm)
    for t in trucks:
        if t["gross_t"] > limit:
            raise RuntimeError(
                f"road authority: 422 {t['truck']} at {t['gross_t']} t exceeds the {road} rating for {date}"
            )
    return {
        "permit": f"IRP-{date.replace('-', '')}-{len(trucks)}",
        "limit_t": limit,
        "trucks": [t["truck"] for t in trucks],
    }


def load_truck(truck: str, payload_t: float) -> dict:
    _RUN.setdefault("actual", {})[truck] = round(TARE_T + payload_t, 1)
    return {"truck": truck, "loaded_t": payload_t, "seal": f"S-{truck[2:]}{int(payload_t * 10)}"}


def checkpoint_weigh(permit: dict, declared: list) -> dict:
    for t in declared:
        actual = _RUN["actual"][t["truck"]]
        if abs(actual - t["gross_t"]) > 0.5:
            raise RuntimeError(
                f"Km 0 checkpoint: {t['truck']} weighed {actual} t, permit {permit['permit']} lists another gross weight"
            )
    return {"checked": len(declared), "status": "clear"}


def dispatch_convoy(permit: dict, slot: str) -> dict:
    return {"convoy": f"CV-{permit['permit'][-5:]}", "departs": slot}


GATHER = {
    "get_manifest": get_manifest,
    "get_ice_profile": get_ice_profile,
    "get_road_weather": get_road_weather,
}
GATHER_SCHEMAS = [
    kit.tool_schema("get_manifest", "The cargo manifest of a haul.", {"haul": "string"}),
    kit.tool_schema("get_ice_profile", "Ice thickness per segment of a road.", {"road": "string"}),
    kit.tool_schema(
        "get_road_weather", "Air temperature forecast on a road.", {"road": "string", "date": "string"}
    ),
]
PLAN_TOOLS = {"get_free_slot": get_free_slot}
PLAN_SCHEMAS = [
    kit.tool_schema(
        "get_free_slot", "The next free departure slot at a gate.", {"gate": "string", "date": "string"}
    )
]


def policy(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    c = kit.Convo(request)
    if c.system.startswith("You gather"):
        ask = json.loads(c.user)
        if not c.called("get_manifest"):
            return Reply(
                tool_calls=(
                    tool_call("get_manifest", {"haul": ask["haul"]}),
                    tool_call("get_ice_profile", {"road": ask["road"]}),
                )
            )
        if not c.called("get_road_weather"):
            return Reply(
                tool_calls=(tool_call("get_road_weather", {"road": ask["road"], "date": ask["date"]}),)
            )
        return "Manifest, ice profile and weather gathered."
    facts = json.loads(c.user)
    if not c.called("get_free_slot"):
        return Reply(tool_calls=(tool_call("get_free_slot", {"gate": facts["gate"], "date": facts["date"]}),))
    slot = c.result("get_free_slot")["slot"]
    per = min(facts["max_gross_t"] - facts["tare_t"], facts["max_payload_t"])
    n = math.ceil(facts["cargo_t"] / per)
    payload = round(facts["cargo_t"] / n, 1)
    trucks = [
        {"truck": f"T-{i}", "payload_t": payload, "gross_t": round(facts["tare_t"] + payload, 1)}
        for i in range(1, n + 1)
    ]
    if kit.active("ice.plan_weight"):
        trucks[1]["gross_t"] = 35.5
    return json.dumps({"slot": slot, "spacing_m": 500, "max_kmh": 25, "trucks": trucks})


def normalize_profile(profile: dict) -> dict:
    factor = 2.54 if profile["unit"] == "in" or kit.active("ice.profile_units") else 1.0
    values = [round(s["thickness"] * factor, 2) for s in profile["segments"]]
    return {"road": profile["road"], "min_cm": min(values), "segments": len(values)}


def compute_allowed_load(ice: dict, weather: dict) -> dict:
    warm = weather["air_max_c"] > -5.0
    return {"max_gross_t": rating(ice["min_cm"], warm), "thaw_reduction": warm}


def parse_plan(text: str) -> dict:
    return json.loads(text)


def check_plan_loads(plan: dict, allowed: dict) -> str:
    for t in plan["trucks"]:
        if t["gross_t"] > allowed["max_gross_t"]:
            raise RuntimeError(f"dispatch check: {t['truck']} gross {t['gross_t']} t over the computed limit")
    return "within limit"


def remember_convoy(haul: str, gate: str, plan: dict) -> dict:
    slot = BOARD[gate]["previous"] if kit.active("ice.board_slot") else plan["slot"]
    entry = {"haul": haul, "gate": gate, "slot": slot, "trucks": [t["truck"] for t in plan["trucks"]]}
    _RUN["board"] = entry
    return entry


def execute(client: Any, tracer: Any, inp: dict) -> None:
    _RUN.clear()
    _RUN["inp"] = inp
    with kit.oi_span(tracer, NAME, "AGENT", inp) as root:
        msgs = [
            {"role": "system", "content": "You gather what an ice-road dispatcher needs for one haul."},
            {"role": "user", "content": json.dumps({k: inp[k] for k in ("haul", "road", "date")})},
        ]
        kit.model_loop(client, tracer, msgs, GATHER, GATHER_SCHEMAS)
        res = {}
        for m in msgs:
            if m.get("role") == "tool":
                v = json.loads(m["content"])
                res["manifest" if "trucks" in v else "profile" if "segments" in v else "weather"] = v
        with kit.oi_span(tracer, "normalize_profile", "CHAIN", res["profile"]) as s:
            ice = kit.oi_output(s, normalize_profile(res["profile"]))
        with kit.oi_span(
            tracer, "compute_allowed_load", "CHAIN", {"ice": ice, "weather": res["weather"]}
        ) as s:
            allowed = kit.oi_output(s, compute_allowed_load(ice, res["weather"]))
        facts = {
            "gate": inp["gate"],
            "date": inp["date"],
            "cargo_t": res["manifest"]["cargo_t"],
            "tare_t": TARE_T,
            "max_payload_t": MAX_PAYLOAD_T,
            "max_gross_t": allowed["max_gross_t"],
        }
        plan_msgs = [
            {"role": "system", "content": "You plan ice-road convoys. Answer with the plan as JSON."},
            {"role": "user", "content": json.dumps(facts)},
        ]
        text = kit.model_loop(client, tracer, plan_msgs, PLAN_TOOLS, PLAN_SCHEMAS)
        with kit.oi_span(tracer, "parse_plan", "CHAIN", text) as s:
            plan = kit.oi_output(s, parse_plan(text))
        with kit.oi_span(tracer, "check_plan_loads", "CHAIN", {"plan": plan, "allowed": allowed}) as s:
            kit.oi_output(s, check_plan_loads(plan, allowed))
        with kit.oi_span(
            tracer, "remember_convoy", "CHAIN", {"haul": inp["haul"], "gate": inp["gate"], "plan": plan}
        ) as s:
            board = kit.oi_output(s, remember_convoy(inp["haul"], inp["gate"], plan))
        args = {
            "road": inp["road"],
            "date": inp["date"],
            "gate": inp["gate"],
            "slot": board["slot"],
            "trucks": [{"truck": t["truck"], "gross_t": t["gross_t"]} for t in plan["trucks"]],
        }
        with kit.oi_span(tracer, "request_convoy_permit", "TOOL", args) as s:
            permit = kit.oi_output(s, request_convoy_permit(**args))
        for t in plan["trucks"]:
            with kit.oi_span(
                tracer, "load_truck", "TOOL", {"truck": t["truck"], "payload_t": t["payload_t"]}
            ) as s:
                kit.oi_output(s, load_truck(t["truck"], t["payload_t"]))
        with kit.oi_span(
            tracer, "checkpoint_weigh", "TOOL", {"permit": permit, "declared": args["trucks"]}
        ) as s:
            kit.oi_output(s, checkpoint_weigh(permit, args["trucks"]))
        with kit.oi_span(tracer, "dispatch_convoy", "TOOL", {"permit": permit, "slot": board["slot"]}) as s:
            out = kit.oi_output(s, dispatch_convoy(permit, board["slot"]))
        kit.oi_output(root, out)
