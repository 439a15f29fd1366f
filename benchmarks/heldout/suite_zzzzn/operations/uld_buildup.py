"""uld-buildup-planner: an air cargo terminal's build-up planner putting a flight's air waybills onto ULDs
(pallets and containers), weighing the built ULDs and sending the loading instruction to load control.

Route: the OpenTelemetry SDK with OpenInference attributes (tool, chain and guardrail spans of the agent's own,
the `openai` client instrumented by `openinference-instrumentation-openai`), exported as one OTLP JSON document
per run and read by trajdebug's OTLP importer.
Shape: booking and ULD-inventory tools, a loop over the AWBs (details tool, dimensions parser), a special-handling
compatibility tool (which calls a rules service inside it), a planning model call answering with parallel tool
calls (one assignment per AWB), a summary model call, a loop over the built ULDs (scale tool, contour guardrail)
and the loading-instruction tool.
"""

from __future__ import annotations

import json
import re
from typing import Any

from trajdebug.testing import FakeModelServer, Reply, tool_call

from ._kit import instrument_openai, otel, system_text, text_of, tool_results, traced, uninstrument_openai, write_otlp

NAME = "uld-buildup-planner"
ROUTE = "otlp"
DOMAIN = "air cargo terminal: air waybills built up on ULDs for a flight"
SHAPE = "2 tools, loop (tool, parser chain), tool with an inner service span, llm with parallel tool calls, llm, loop (scale tool, guardrail), tool"

SWITCH: str | None = None


def _on(case: str) -> bool:
    return SWITCH == case


FLIGHTS = {
    "LX14": {"date": "2025-06-02", "route": "ZRH-JFK", "aircraft": "B77W", "ulds": 3, "awbs": [
        ("724-40118273", 6, 2900.0, "120x100x110cm/4; 80x60x70cm/2", ["GEN"]),
        ("724-40118284", 3, 2400.0, "150x120x120cm/3", ["HEA"]),
        ("724-40118295", 12, 2100.0, "60x40x40cm/12", ["PER", "EAT"]),
        ("724-40118306", 5, 1800.0, "100x80x90cm/5", ["GEN"]),
        ("724-40118310", 2, 900.0, "120x80x100cm/2", ["VAL"])]},
    "LX40": {"date": "2025-06-03", "route": "ZRH-LAX", "aircraft": "B77W", "ulds": 4, "awbs": [
        ("724-40120011", 8, 3100.0, "120x100x120cm/8", ["GEN"]),
        ("724-40120022", 4, 2750.0, "120x100x110cm/2, 100x80x60cm/2", ["GEN"]),
        ("724-40120033", 10, 2300.0, "80x60x60cm/10", ["PIL"]),
        ("724-40120044", 6, 1950.0, "100x100x100cm/6", ["HEA"]),
        ("724-40120055", 3, 1200.0, "60x60x50cm/3", ["EAT"])]},
    "LX188": {"date": "2025-06-04", "route": "ZRH-PVG", "aircraft": "B77W", "ulds": 3, "awbs": [
        ("724-40122100", 4, 2600.0, "120x100x140cm/4", ["GEN"]),
        ("724-40122111", 9, 2200.0, "100x80x60cm/9", ["PIL"]),
        ("724-40122122", 5, 850.0, "100x60x50cm/5", ["GEN"]),
        ("724-40122133", 7, 1700.0, "80x80x80cm/7", ["ELI"])]},
    "LX92": {"date": "2025-06-05", "route": "ZRH-GRU", "aircraft": "B77W", "ulds": 3, "awbs": [
        ("724-40124205", 5, 1500.0, "120x100x100cm/5", ["GEN"]),
        ("724-40124216", 14, 1400.0, "60x40x50cm/14", ["EAT", "PER"]),
        ("724-40124220", 6, 900.0, "80x60x60cm/6", ["RPB"]),
        ("724-40124231", 2, 1100.0, "120x80x90cm/2", ["GEN"])]},
    "LX22": {"date": "2025-06-06", "route": "ZRH-EWR", "aircraft": "A333", "ulds": 3, "awbs": [
        ("724-40126302", 6, 2450.0, "120x100x110cm/6", ["GEN"]),
        ("724-40126313", 8, 2050.0, "100x80x80cm/8", ["PIL"]),
        ("724-40126324", 4, 1500.0, "120x80x100cm/4", ["HEA"]),
        ("724-40126335", 3, 700.0, "60x60x60cm/3", ["GEN"])]},
}
LB_AWB = "724-40122122"  # its shipper's FWB gives the weight in pounds
MAX_GROSS = 5035.0
TARE = 120.0
CONTOUR_CM = 163
INCOMPATIBLE = [("RPB", "EAT"), ("RPB", "PER"), ("ICE", "AVI")]

INPUTS = [{"task": f"build-up {f} {v['date']} {v['route']}", "flight": f} for f, v in FLIGHTS.items()]

CASES = [
    {"id": "uld_dims_second_group", "input": 1, "switch": "dims_first", "fault_kind": "lossy_parsing",
     "root": {"name": "parse_dimensions", "match": "724-40120022"}, "root_kind": "other",
     "failure": "send_loading_instruction",
     "description": "parse_dimensions kept only the first dimension group of 724-40120022 ('120x100x110cm/2, "
                    "100x80x60cm/2'), so 2 of its 4 pieces were planned onto the ULD."},
    {"id": "uld_inventory_range", "input": 0, "switch": "uld_range", "fault_kind": "off_by_one",
     "root": {"name": "available_ulds", "occurrence": 1}, "root_kind": "tool", "failure": "contour_check",
     "description": "available_ulds listed PMC pallets 1 and 2 of the 3 reserved for LX14, and the plan put the "
                    "last AWB on a pallet already near its limit."},
    {"id": "uld_weight_in_pounds", "input": 2, "switch": "fwb_pounds", "fault_kind": "unit_error",
     "root": {"name": "get_awb_details", "match": "724-40122122"}, "root_kind": "tool", "failure": "contour_check",
     "description": "get_awb_details returned 724-40122122's weight as 1874.0 kg, the pounds of the shipper's FWB, "
                    "instead of 850.0 kg."},
    {"id": "uld_shc_service_down", "input": 3, "switch": "shc_swallow", "fault_kind": "swallowed_error",
     "root": {"name": "shc_compatibility", "occurrence": 1}, "root_kind": "tool",
     "failure": "send_loading_instruction",
     "description": "shc_compatibility answered no conflicts when the rules service returned 503, so the RPB "
                    "shipment 724-40124220 was planned on the same ULD as the EAT/PER shipment 724-40124216."},
    {"id": "uld_assign_weight_slip", "input": 4, "switch": "assign_weight", "fault_kind": "wrong_tool_args",
     "root": {"name": "ChatCompletion", "occurrence": 1}, "root_kind": "llm", "failure": "contour_check",
     "description": "The planning model's assign_awb call for 724-40126324 carried 2050.0 kg, the weight of "
                    "724-40126313, instead of its own 1500.0 kg."},
]


# ----------------------------------------------------------------------------------------------- the terminal

_built: dict[str, list[dict[str, Any]]] = {}


def _fetch_flight_booking(flight: str, date: str) -> dict[str, Any]:
    f = FLIGHTS[flight]
    return {"flight": flight, "date": date, "route": f["route"], "aircraft": f["aircraft"],
            "awbs": [a[0] for a in f["awbs"]]}


def _available_ulds(flight: str) -> list[dict[str, Any]]:
    count = FLIGHTS[flight]["ulds"]
    first = 1 if _on("uld_range") else 0  # serials numbered from 1 in the inventory, ranges from 0 in the list
    return [{"uld": f"PMC {31240 + 7 * i} LX", "type": "PMC", "max_gross_kg": MAX_GROSS, "tare_kg": TARE,
             "contour_cm": CONTOUR_CM} for i in range(first, count)]


def _get_awb_details(awb: str) -> dict[str, Any]:
    for f in FLIGHTS.values():
        for a, pieces, kg, dims, shc in f["awbs"]:
            if a == awb:
                weight = kg
                if awb == LB_AWB and _on("fwb_pounds"):
                    weight = round(kg * 2.20462, 0)  # the FWB's pounds taken as they came
                return {"awb": awb, "pieces": pieces, "weight_kg": weight, "dims": dims, "shc": list(shc)}
    raise KeyError(awb)


def _parse_dimensions(awb: str, dims: str) -> dict[str, Any]:
    pattern = r"(\d+)x(\d+)x(\d+)cm/(\d+)"
    groups = [re.match(pattern, dims.strip()).groups()] if _on("dims_first") else re.findall(pattern, dims)
    pieces = [{"l": int(l), "w": int(w), "h": int(h), "count": int(n)} for l, w, h, n in groups]
    volume = sum(p["l"] * p["w"] * p["h"] * p["count"] for p in pieces) / 1e6
    return {"awb": awb, "pieces": sum(p["count"] for p in pieces), "volume_m3": round(volume, 2),
            "max_height_cm": max(p["h"] for p in pieces), "lines": pieces}


def _rules_service(codes: list[str]) -> list[list[str]]:
    raise ConnectionError("rules service returned HTTP 503 Service Unavailable")


def _shc_compatibility(flight: str, shc: dict[str, list[str]]) -> dict[str, Any]:
    tracer = otel()[0].get_tracer(NAME)
    codes = sorted({c for cs in shc.values() for c in cs})
    try:
        pairs = traced(tracer, "rules_service_lookup", "TOOL", _rules_service, {"codes": codes})
        source = "rules service"
    except ConnectionError:
        if _on("shc_swallow"):
            return {"flight": flight, "conflicts": [], "source": "rules service"}
        pairs, source = [list(p) for p in INCOMPATIBLE], "local IATA table"
    conflicts = []
    awbs = sorted(shc)
    for i, a in enumerate(awbs):
        for b in awbs[i + 1:]:
            if any((x in shc[a] and y in shc[b]) or (y in shc[a] and x in shc[b]) for x, y in pairs):
                conflicts.append([a, b])
    return {"flight": flight, "conflicts": conflicts, "source": source}


def _assign_awb(awb: str, uld: str, pieces: int, weight_kg: float) -> dict[str, Any]:
    _built.setdefault(uld, []).append({"awb": awb, "pieces": pieces, "weight_kg": weight_kg})
    return {"awb": awb, "uld": uld, "pieces": pieces, "status": "assigned"}


def _actual_kg(awb: str) -> float:
    return next(a[2] for f in FLIGHTS.values() for a in f["awbs"] if a[0] == awb)


def _weigh_uld(uld: str) -> dict[str, Any]:
    gross = TARE + sum(_actual_kg(x["awb"]) for x in _built.get(uld, []))  # the built pieces, whatever the plan said
    return {"uld": uld, "scale_gross_kg": round(gross, 1), "scale": "SC-04"}


def _contour_check(uld: str, planned_gross_kg: float, scale_gross_kg: float, max_gross_kg: float) -> dict[str, Any]:
    if scale_gross_kg > max_gross_kg:
        raise ValueError(f"{uld}: gross {scale_gross_kg:.1f} kg on the scale exceeds the {max_gross_kg:.0f} kg limit")
    if abs(scale_gross_kg - planned_gross_kg) > 0.03 * planned_gross_kg:
        raise ValueError(f"{uld}: scale gross {scale_gross_kg:.1f} kg differs from the planned {planned_gross_kg:.1f} "
                         f"kg by more than 3%")
    return {"uld": uld, "status": "within contour", "gross_kg": scale_gross_kg}


def _send_loading_instruction(flight: str, ulds: list[dict[str, Any]]) -> dict[str, Any]:
    f = FLIGHTS[flight]
    shc = {a[0]: a[4] for a in f["awbs"]}
    loaded: dict[str, int] = {}
    for u in ulds:
        on = [x["awb"] for x in u["awbs"]]
        for i, a in enumerate(on):
            for b in on[i + 1:]:
                for x, y in INCOMPATIBLE:
                    if (x in shc[a] and y in shc[b]) or (y in shc[a] and x in shc[b]):
                        raise ValueError(f"load control: {a} ({'/'.join(shc[a])}) and {b} ({'/'.join(shc[b])}) "
                                         f"must not share {u['uld']}")
        for x in u["awbs"]:
            loaded[x["awb"]] = loaded.get(x["awb"], 0) + x["pieces"]
    for a, pieces, *_ in f["awbs"]:
        if loaded.get(a, 0) != pieces:
            raise ValueError(f"load control: {a} has {pieces} pieces booked on {flight}, {loaded.get(a, 0)} on ULDs")
    return {"flight": flight, "lir": f"LIR-{flight}-{f['date'][8:]}", "ulds": len(ulds), "status": "sent"}


# ----------------------------------------------------------------------------------------------- the agent

_client: Any = None


def run_agent(inp: dict[str, Any], server: FakeModelServer) -> None:
    tracer = otel()[0].get_tracer(NAME)
    flight = inp["flight"]
    date = FLIGHTS[flight]["date"]
    booking = traced(tracer, "fetch_flight_booking", "TOOL", _fetch_flight_booking, {"flight": flight, "date": date})
    ulds = traced(tracer, "available_ulds", "TOOL", _available_ulds, {"flight": flight})
    details = []
    for awb in booking["awbs"]:
        d = traced(tracer, "get_awb_details", "TOOL", _get_awb_details, {"awb": awb})
        dims = traced(tracer, "parse_dimensions", "CHAIN", _parse_dimensions, {"awb": awb, "dims": d["dims"]})
        details.append({"awb": awb, "pieces": dims["pieces"], "weight_kg": d["weight_kg"],
                        "volume_m3": dims["volume_m3"], "max_height_cm": dims["max_height_cm"], "shc": d["shc"]})
    compat = traced(tracer, "shc_compatibility", "TOOL", _shc_compatibility,
                    {"flight": flight, "shc": {d["awb"]: d["shc"] for d in details}})
    tools = [{"type": "function", "function": {
        "name": "assign_awb", "description": "Assign an AWB's pieces to a ULD for build-up.",
        "parameters": {"type": "object", "properties": {"awb": {"type": "string"}, "uld": {"type": "string"},
                                                        "pieces": {"type": "integer"},
                                                        "weight_kg": {"type": "number"}},
                       "required": ["awb", "uld", "pieces", "weight_kg"]}}}]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "ROLE buildup-planner. Assign every AWB to a ULD with assign_awb: stay within "
                                      "each ULD's max gross (tare included) and contour, keep conflicting special "
                                      "handling codes apart, heaviest first."},
        {"role": "user", "content": json.dumps({"flight": flight, "ulds": ulds, "awbs": details,
                                                "conflicts": compat["conflicts"]})},
    ]
    reply = _client.chat.completions.create(model=server.model, messages=messages, tools=tools, temperature=0)
    msg = reply.choices[0].message
    messages.append(msg.model_dump(exclude_none=True))
    planned: dict[str, float] = {u["uld"]: TARE for u in ulds}
    for call in msg.tool_calls or []:
        args = json.loads(call.function.arguments)
        result = traced(tracer, "assign_awb", "TOOL", _assign_awb, args, **{"tool.id": call.id})
        planned[args["uld"]] = planned.get(args["uld"], TARE) + args["weight_kg"]
        messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    _client.chat.completions.create(model=server.model, messages=messages, tools=tools, temperature=0)
    built = []
    for u in ulds:
        if u["uld"] not in _built:
            continue
        scale = traced(tracer, "weigh_uld", "TOOL", _weigh_uld, {"uld": u["uld"]})
        traced(tracer, "contour_check", "GUARDRAIL", _contour_check,
               {"uld": u["uld"], "planned_gross_kg": round(planned[u["uld"]], 1),
                "scale_gross_kg": scale["scale_gross_kg"], "max_gross_kg": u["max_gross_kg"]})
        built.append({"uld": u["uld"], "awbs": list(_built[u["uld"]])})
    traced(tracer, "send_loading_instruction", "TOOL", _send_loading_instruction, {"flight": flight, "ulds": built})


def record(inp: dict[str, Any], path: str, server: FakeModelServer) -> None:
    global _client
    from openai import OpenAI

    provider, exporter = otel()
    instrument_openai()
    if _client is None or str(_client.base_url).rstrip("/") != server.base_url.rstrip("/"):
        _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    exporter.clear()
    _built.clear()
    tracer = provider.get_tracer(NAME)
    try:
        with tracer.start_as_current_span(NAME, attributes={
                "openinference.span.kind": "AGENT", "agent.name": NAME,
                "metadata": json.dumps({"task": inp["task"]}),
                "input.value": json.dumps({"flight": inp["flight"]}), "input.mime_type": "application/json"}):
            run_agent(inp, server)
    except Exception:
        pass
    write_otlp(path, exporter.get_finished_spans())
    exporter.clear()


def close() -> None:
    uninstrument_openai()


# ----------------------------------------------------------------------------------------------- the model


def brain(request: Any) -> Any:
    messages = request.body["messages"]
    if not system_text(messages).startswith("ROLE buildup-planner"):
        return "No answer."
    data = json.loads(text_of(messages[1]))
    done = tool_results(messages)
    if done:
        lines = [f"{json.loads(r['content'])['awb']} -> {json.loads(r['content'])['uld']}" for r in done]
        return "Build-up plan: " + "; ".join(lines) + "."
    conflicts = {frozenset(c) for c in data["conflicts"]}
    load = {u["uld"]: u["tare_kg"] for u in data["ulds"]}
    limit = {u["uld"]: u["max_gross_kg"] for u in data["ulds"]}
    on: dict[str, list[str]] = {u["uld"]: [] for u in data["ulds"]}
    calls = []
    awbs = sorted(data["awbs"], key=lambda a: -a["weight_kg"])
    for a in awbs:
        fits = [u for u in on if load[u] + a["weight_kg"] <= limit[u]
                and not any(frozenset({a["awb"], b}) in conflicts for b in on[u])]
        uld = fits[0] if fits else min(on, key=lambda u: load[u])
        on[uld].append(a["awb"])
        load[uld] += a["weight_kg"]
        calls.append({"awb": a["awb"], "uld": uld, "pieces": a["pieces"], "weight_kg": a["weight_kg"]})
    if _on("assign_weight"):
        by = {c["awb"]: c for c in calls}
        by["724-40126324"]["weight_kg"] = by["724-40126313"]["weight_kg"]
    return Reply(tool_calls=tuple(tool_call("assign_awb", c) for c in calls))
