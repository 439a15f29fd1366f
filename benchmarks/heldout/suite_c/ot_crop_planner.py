"""crop_planner: season planning for a mixed arable farm (``openai`` client instrumented with
openinference-instrumentation-openai; the application's own AGENT / CHAIN / TOOL spans; OTLP JSON).

season_plan (AGENT): for each field, a plan_field CHAIN: field_registry -> to_hectares (CHAIN) ->
soil_report -> the model recommends a crop (JSON) -> parse_recommendation (CHAIN) -> water_requirement;
then irrigation_budget_check (the water authority's allocation); then the model orders seed with
place_seed_order (the co-op's order desk, which applies its agronomy rules to the order).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from fakellm import Reply, last_result, messages, text_of
from harness import FAULT, AgentSpec, Case
from oi_spans import chain_span, span, tool_span
from routes import install, openai_client, otel_tracer, otlp_run


ACRE_HA = 0.404686

FIELDS = {
    "F-1": {"name": "North Forty", "area": 16.2, "unit": "ha", "zone": "Z-A", "last_crop": "corn"},
    "F-2": {"name": "Creek Bottom", "area": 9.8, "unit": "ha", "zone": "Z-B", "last_crop": "soybeans"},
    "F-3": {"name": "Hilltop", "area": 12.0, "unit": "ha", "zone": "Z-A", "last_crop": "winter wheat"},
    "F-4": {"name": "Old Orchard", "area": 30.5, "unit": "ac", "zone": "Z-C", "last_crop": "oats"},
    "F-5": {"name": "Miller's Piece", "area": 22.0, "unit": "ac", "zone": "Z-B", "last_crop": "potatoes"},
    "F-6": {"name": "South Strip", "area": 7.5, "unit": "ha", "zone": "Z-C", "last_crop": "corn"},
    "F-7": {"name": "Bog Edge", "area": 11.3, "unit": "ha", "zone": "Z-A", "last_crop": "oats"},
    "F-8": {"name": "East Meadow", "area": 14.0, "unit": "ha", "zone": "Z-B", "last_crop": "alfalfa"},
    "F-9": {"name": "Pond Field", "area": 18.0, "unit": "ac", "zone": "Z-C", "last_crop": "winter wheat"},
    "F-10": {"name": "Peat Corner", "area": 6.4, "unit": "ha", "zone": "Z-B", "last_crop": "oats"},
    "F-11": {"name": "Long Acre", "area": 10.9, "unit": "ha", "zone": "Z-A", "last_crop": "winter wheat"},
    "F-12": {"name": "Chapel Field", "area": 13.5, "unit": "ha", "zone": "Z-C", "last_crop": "soybeans"},
}
SOIL = {
    "F-1": {"ph": 6.7, "drainage": "good", "sampled": 2025}, "F-2": {"ph": 6.3, "drainage": "good", "sampled": 2025},
    "F-3": {"ph": 6.1, "drainage": "good", "sampled": 2025}, "F-4": {"ph": 6.0, "drainage": "moderate", "sampled": 2025},
    "F-5": {"ph": 5.6, "drainage": "good", "sampled": 2025}, "F-6": {"ph": 5.9, "drainage": "moderate", "sampled": 2025},
    "F-7": {"ph": 5.4, "drainage": "good", "sampled": 2023}, "F-8": {"ph": 6.9, "drainage": "good", "sampled": 2025},
    "F-9": {"ph": 6.4, "drainage": "good", "sampled": 2025}, "F-10": {"ph": 5.4, "drainage": "good", "sampled": 2025},
    "F-11": {"ph": 6.9, "drainage": "good", "sampled": 2025}, "F-12": {"ph": 6.2, "drainage": "poor", "sampled": 2025},
}
ZONE_COMPOSITE = {"Z-A": {"ph": 6.8, "drainage": "good"}, "Z-B": {"ph": 6.2, "drainage": "good"}, "Z-C": {"ph": 5.9, "drainage": "moderate"}}

# preference order; (pH low, pH high, needs good drainage, water mm per season, seed kg/ha)
CROPS = {
    "alfalfa": (6.5, 7.5, True, 600, 18),
    "soybeans": (6.0, 7.0, False, 500, 75),
    "corn": (5.8, 7.0, False, 600, 20),
    "winter wheat": (5.8, 7.5, False, 400, 140),
    "potatoes": (5.0, 6.0, True, 550, 2200),
    "oats": (5.5, 7.0, False, 380, 110),
}


class WaterAllocationExceeded(Exception):
    """The plan needs more irrigation water than the farm's licence allows."""


class SeedOrderRejected(Exception):
    """The co-op's order desk refused the seed order."""


def hectares_of(field_id: str) -> float:
    f = FIELDS[field_id]
    return round(f["area"] * ACRE_HA, 2) if f["unit"] == "ac" else f["area"]


# -- tools and chains ------------------------------------------------------------------------------------


def field_registry(field_id: str) -> dict[str, Any]:
    FAULT.tick("field_registry")
    return {"field_id": field_id, **FIELDS[field_id]}


def to_hectares(area: dict[str, Any]) -> dict[str, Any]:
    FAULT.tick("to_hectares")
    if area["unit"] == "ha":
        return {"hectares": area["area"]}
    ha = round(area["area"] * ACRE_HA, 2)
    if FAULT.on("acres_divided_by_factor"):
        ha = round(area["area"] / ACRE_HA, 2)  # the factor is hectares-per-acre, applied as acres-per-hectare
        FAULT.fire_tool("to_hectares", ha, kind="parse")
    return {"hectares": ha}


def soil_report(field_id: str, zone: str) -> dict[str, Any]:
    FAULT.tick("soil_report")
    s = SOIL[field_id]
    if FAULT.on("old_samples_fall_back_to_zone") and s["sampled"] < 2025:
        comp = ZONE_COMPOSITE[zone]  # an out-of-date sample is replaced by the zone composite, whatever field was asked
        FAULT.fire_tool("soil_report", f'"ph": {comp["ph"]}')
        return {"field_id": field_id, "ph": comp["ph"], "drainage": comp["drainage"], "source": f"zone {zone}"}
    return {"field_id": field_id, "ph": s["ph"], "drainage": s["drainage"], "source": f"field sample {s['sampled']}"}


def parse_recommendation(text: str) -> dict[str, Any]:
    FAULT.tick("parse_recommendation")
    m = re.search(r"\{.*\}", text, flags=re.S)
    rec = json.loads(m.group(0))
    return {"field_id": rec["field_id"], "crop": rec["crop"].strip().lower()}


def water_requirement(crop: str, hectares: float) -> dict[str, Any]:
    FAULT.tick("water_requirement")
    return {"crop": crop, "hectares": hectares, "m3": round(CROPS[crop][3] * hectares * 10)}


def irrigation_budget_check(total_m3: float, licence_m3: float, licence: str) -> dict[str, Any]:
    FAULT.tick("irrigation_budget_check")
    if total_m3 > licence_m3:
        raise WaterAllocationExceeded(
            f"season plan draws {total_m3:,.0f} m³ against abstraction licence {licence} ({licence_m3:,.0f} m³); reduce irrigated area"
        )
    return {"within_licence": True, "headroom_m3": licence_m3 - total_m3}


def place_seed_order(lines: list[dict[str, Any]]) -> dict[str, Any]:
    FAULT.tick("place_seed_order")
    for ln in lines:
        fid, crop = ln["field_id"], ln["crop"]
        lo, hi, drain, _, rate = CROPS[crop]
        ph = SOIL[fid]["ph"]
        if not lo <= ph <= hi:
            raise SeedOrderRejected(f"agronomy rule AG-3: {crop} needs soil pH {lo}-{hi}; {fid} ({FIELDS[fid]['name']}) tests at {ph}")
        if drain and SOIL[fid]["drainage"] != "good":
            raise SeedOrderRejected(f"agronomy rule AG-5: {crop} is not sown on {SOIL[fid]['drainage']}ly drained land ({fid})")
        if crop == FIELDS[fid]["last_crop"]:
            raise SeedOrderRejected(f"rotation rule: {crop} cannot follow {crop} on {fid}")
        want = round(rate * hectares_of(fid), 1)
        if abs(ln["seed_kg"] - want) > 0.02 * want:
            raise SeedOrderRejected(f"{fid}: {ln['seed_kg']} kg of {crop} seed for a {hectares_of(fid)} ha field (expected about {want} kg)")
    return {"order_id": "CO-2026-" + "-".join(ln["field_id"][2:] for ln in lines), "status": "confirmed"}


ORDER_TOOL = [{"type": "function", "function": {
    "name": "place_seed_order", "description": "Order seed from the co-op for the season plan.",
    "parameters": {"type": "object", "properties": {"lines": {"type": "array", "items": {"type": "object", "properties": {
        "field_id": {"type": "string"}, "crop": {"type": "string"}, "hectares": {"type": "number"}, "seed_kg": {"type": "number"}}}}},
        "required": ["lines"]}}}]

PLANNER = ("You are the agronomist's planning assistant for Willow Creek Farm. For each field, recommend one crop that fits the "
           "soil pH and drainage and respects rotation (never the same crop as last season). Answer with JSON "
           '{"field_id": ..., "crop": ..., "why": ...}.')
BUYER = "You are the farm's seed buyer. Order seed for the season plan at the co-op's standard seeding rates."


# -- the scripted model -------------------------------------------------------------------------------------


def choose(ph: float, drainage: str, last: str) -> str:
    for crop, (lo, hi, needs_drainage, _, _) in CROPS.items():
        if crop != last and lo <= ph <= hi and (not needs_drainage or drainage == "good"):
            return crop
    return "oats"


def policy(body: dict[str, Any]) -> Reply:
    msgs = messages(body)
    if msgs[0]["content"].startswith("You are the farm's seed buyer"):
        plan = json.loads(re.search(r"Plan: (\[.*\])", text_of(msgs[1]), flags=re.S).group(1))
        if last_result(body, "place_seed_order") is not None:
            return Reply(content="Seed order confirmed with the co-op for all fields.")
        lines = [{"field_id": p["field_id"], "crop": p["crop"], "hectares": p["hectares"],
                  "seed_kg": round(CROPS[p["crop"]][4] * p["hectares"], 1)} for p in plan]
        return Reply(tool_calls=[("place_seed_order", {"lines": lines})])
    ask = text_of(msgs[-1])
    fid = re.search(r"Field (F-\d+)", ask).group(1)
    ph = float(re.search(r"pH ([\d.]+)", ask).group(1))
    drainage = re.search(r"drainage (\w+)", ask).group(1)
    last = re.search(r"last season: ([a-z ]+)", ask).group(1).strip()
    crop = choose(ph, drainage, last)
    earlier = [json.loads(text_of(m))["crop"] for m in msgs if m.get("role") == "assistant" and m.get("content")]
    if FAULT.on("repeats_previous_recommendation") and len(earlier) == 2 and earlier[-1] != crop:
        crop = earlier[-1]  # the previous field's answer, still in the conversation, is given again
        FAULT.fire_llm(f'"crop": "{crop}"')
    return Reply(content=json.dumps({"field_id": fid, "crop": crop, "why": f"pH {ph}, {drainage} drainage, after {last}"}))


# -- the agent -------------------------------------------------------------------------------------------


def plan_season(req: dict[str, Any]) -> str:
    tracer = otel_tracer("willowcreek.crop_planner")
    client = openai_client()
    with span(tracer, "season_plan", "AGENT", input=req, agent__name="crop_planner") as root:
        chat: list[dict[str, Any]] = [{"role": "system", "content": PLANNER}]
        plan = []
        for fid in req["fields"]:
            with span(tracer, "plan_field", "CHAIN", input={"field_id": fid}) as pf:
                reg = tool_span(tracer, "field_registry", {"field_id": fid}, field_registry)
                ha = chain_span(tracer, "to_hectares", {"area": reg["area"], "unit": reg["unit"]}, to_hectares)["hectares"]
                soil = tool_span(tracer, "soil_report", {"field_id": fid, "zone": reg["zone"]}, soil_report)
                chat.append({"role": "user", "content": f"Field {fid} ({reg['name']}), {ha} ha: soil pH {soil['ph']}, drainage "
                                                        f"{soil['drainage']}; last season: {reg['last_crop']}."})
                resp = client.chat.completions.create(model="gpt-4o", messages=chat, temperature=0,
                                                      response_format={"type": "json_object"})
                content = resp.choices[0].message.content
                chat.append({"role": "assistant", "content": content})
                rec = chain_span(tracer, "parse_recommendation", content, parse_recommendation)
                water = tool_span(tracer, "water_requirement", {"crop": rec["crop"], "hectares": ha}, water_requirement)
                plan.append({"field_id": fid, "crop": rec["crop"], "hectares": ha, "m3": water["m3"]})
                pf.output(plan[-1])
        tool_span(tracer, "irrigation_budget_check", {"total_m3": sum(p["m3"] for p in plan), "licence_m3": req["licence_m3"],
                                                      "licence": req["licence"]}, irrigation_budget_check)
        order_msgs: list[dict[str, Any]] = [{"role": "system", "content": BUYER},
                                            {"role": "user", "content": f"Plan: {json.dumps(plan)}"}]
        for _ in range(4):
            resp = client.chat.completions.create(model="gpt-4o-mini", messages=order_msgs, tools=ORDER_TOOL, temperature=0)
            msg = resp.choices[0].message
            if not msg.tool_calls:
                return root.output({"plan": plan, "summary": msg.content})
            order_msgs.append({"role": "assistant", "content": msg.content, "tool_calls": [tc.model_dump(exclude_none=True) for tc in msg.tool_calls]})
            for tc in msg.tool_calls:
                out = tool_span(tracer, "place_seed_order", json.loads(tc.function.arguments), place_seed_order, call_id=tc.id)
                order_msgs.append({"role": "tool", "tool_call_id": tc.id, "content": json.dumps(out)})
        raise RuntimeError("seed buyer did not finish")


def execute(inp: dict[str, Any], path: Path, key: str) -> str:
    install(policy)
    return otlp_run(lambda: plan_season(inp), path, key=key)


def plan(fields: list[str], licence_m3: int, licence: str) -> dict[str, Any]:
    return {"farm": "Willow Creek Farm", "season": "2026", "fields": fields, "licence_m3": licence_m3, "licence": licence}


SPEC = AgentSpec(
    name="crop_planner",
    route="otlp",
    domain="farm and crop planning",
    summary="openai + OpenInference: season_plan AGENT, per-field plan_field CHAIN (field_registry, to_hectares, soil_report, "
            "ChatCompletion, parse_recommendation, water_requirement), irrigation_budget_check, ChatCompletion -> place_seed_order",
    execute=execute,
    ext="json",
    passing=[
        plan(["F-1", "F-2", "F-3"], 260_000, "EA/2026/0117"),
        plan(["F-4", "F-6"], 150_000, "EA/2026/0117"),
        plan(["F-8", "F-9", "F-12"], 240_000, "EA/2026/0117"),
        plan(["F-5", "F-11"], 160_000, "EA/2026/0117"),
        plan(["F-2", "F-10", "F-12"], 200_000, "EA/2026/0117"),
    ],
    cases=[
        Case(
            slug="acres_converted_backwards",
            input=plan(["F-3", "F-9", "F-6"], 230_000, "EA/2026/0117"),
            fault="acres_divided_by_factor",
            fault_kind="unit_error",
            description="to_hectares divides Pond Field's 18 acres by the hectares-per-acre factor instead of multiplying "
                        "(44.48 ha instead of 7.28 ha). The field's water requirement is six times too large and the "
                        "season plan breaks the abstraction licence.",
            failure="irrigation_budget_check",
            path=["water_requirement", "irrigation_budget_check"],
        ),
        Case(
            slug="old_sample_replaced_by_zone",
            input=plan(["F-1", "F-7", "F-2"], 300_000, "EA/2026/0117"),
            fault="old_samples_fall_back_to_zone",
            fault_kind="tool_ignores_argument",
            description="soil_report answers Bog Edge (F-7, 2023 sample, pH 5.4) with the zone composite (pH 6.8), "
                        "ignoring the field asked for. The model recommends alfalfa, the plan passes the water check, "
                        "and the co-op refuses alfalfa seed for a pH 5.4 field.",
            failure="place_seed_order",
            path=["ChatCompletion", "parse_recommendation", "ChatCompletion", "place_seed_order"],
        ),
        Case(
            slug="previous_field_crop_repeated",
            input=plan(["F-6", "F-10", "F-11"], 230_000, "EA/2026/0117"),
            fault="repeats_previous_recommendation",
            fault_kind="context_pollution",
            description="The planning chat keeps every field's exchange; for Long Acre (pH 6.9) the model repeats the "
                        "previous field's answer (potatoes for Peat Corner). The plan goes through and the co-op refuses "
                        "potato seed for a pH 6.9 field.",
            failure="place_seed_order",
            path=["parse_recommendation", "ChatCompletion", "place_seed_order"],
        ),
    ],
)
