"""vegetation-clearance: a power distribution company's tree-cutting planner for overhead lines (OpenAI Agents SDK).

A LiDAR patrol of a feeder lists the spans where trees grow towards the conductors. The triage officer
reads the patrol, every span's details and the species' growth rates (parallel tool calls), writes each
span's plan into the run's memory, asks a consent officer (an agent run as a tool) to find the
landowner's consent for spans over private land, and hands off to the outage planner (a span inside the
minimum approach distance needs the line switched out) or to the live-line crew. That agent recalls the
plan from memory, books the outage or the crew, and creates the work package, which is validated.
"""


import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from ._common import Env, agents_run, chat_state

NAME = "vegetation-clearance"
ROUTE = "openai_agents"
DOMAIN = "power distribution vegetation management: LiDAR encroachments, consents, outages, live-line cutting"
SHAPE = ("OpenAI Agents SDK (Chat Completions model): triage agent with parallel tool calls, memory-writing tool, "
         "agent-as-tool consent officer with its own tools, handoff to one of two agents, booking and "
         "work-package tools")

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


REQUIRED_M = {11: 3.0, 33: 4.5}      # clearance to cut back to, before growth
MAD_M = {11: 0.8, 33: 1.2}           # minimum approach distance for live-line work
WAYLEAVE_M = 8.0

FEEDERS = {
    "F11-ASHWORTH": {"kv": 11, "patrol": "LP-2025-101", "spans": {
        "S-0411": {"clearance_m": 2.2, "species": "Fraxinus excelsior", "land": "verge"},
        "S-0412": {"clearance_m": 1.9, "species": "Acer pseudoplatanus", "land": "private", "parcel": "88/41",
                   "owner": "Hartley"},
        "S-0415": {"clearance_m": 2.6, "species": "Crataegus monogyna", "land": "verge"}}},
    "F33-BRAMLEY": {"kv": 33, "patrol": "LP-2025-102", "spans": {
        "S-2204": {"clearance_m": 2.8, "species": "Quercus robur", "land": "private", "parcel": "41/07",
                   "owner": "Ellis"},
        "S-2208": {"clearance_m": 0.9, "species": "Salix alba", "land": "verge"}}},
    "F11-CROFTON": {"kv": 11, "patrol": "LP-2025-103", "spans": {
        "S-1104": {"clearance_m": 1.7, "species": "Salix fragilis", "land": "verge"},
        "S-1107": {"clearance_m": 2.4, "species": "Fagus sylvatica", "land": "private", "parcel": "12/3",
                   "owner": "Crofton"}}},
    "F33-DENHOLM": {"kv": 33, "patrol": "LP-2025-104", "spans": {
        "S-3301": {"clearance_m": 3.1, "species": "Fraxinus excelsior", "land": "private", "parcel": "77/2",
                   "owner": "Denholm"},
        "S-3305": {"clearance_m": 2.7, "species": "Betula pendula", "land": "verge"}}},
    "F33-EDGEFIELD": {"kv": 33, "patrol": "LP-2025-105", "spans": {
        "S-0917": {"clearance_m": 1.0, "species": "Populus nigra", "land": "verge"},
        "S-0921": {"clearance_m": 2.5, "species": "Tilia cordata", "land": "private", "parcel": "19/6",
                   "owner": "Edgefield"}}},
}
# Growth table of the arboricultural survey, in cm a year.
GROWTH_CM = {"Fraxinus excelsior": 40, "Acer pseudoplatanus": 45, "Crataegus monogyna": 25, "Quercus robur": 30,
             "Salix alba": 70, "Salix fragilis": 60, "Fagus sylvatica": 30, "Betula pendula": 50,
             "Populus nigra": 50, "Tilia cordata": 35}
PARCELS = {
    "Hartley": [{"parcel": "88/14", "owner": "J. Hartley"}, {"parcel": "88/41", "owner": "Hartley & Sons"}],
    "Ellis": [{"parcel": "41/07", "owner": "Ellis Farm Partnership"}],
    "Crofton": [{"parcel": "12/3", "owner": "Crofton Estate"}],
    "Denholm": [{"parcel": "77/2", "owner": "Denholm Mill Ltd"}],
    "Edgefield": [{"parcel": "19/6", "owner": "Edgefield Hall Trust"}],
}
CONSENTS = {"88/14": ("C-5512", "2026-01-31"), "88/41": ("C-5530", "2026-03-31"), "41/07": ("C-6104", "2026-06-30"),
            "12/3": ("C-4471", "2026-02-28"), "77/2": ("C-7702", "2026-03-31"), "19/6": ("C-3319", "2026-05-15")}

INPUTS = [
    {"feeder": "F11-ASHWORTH", "window": "2025-11-03/2025-11-14"},
    {"feeder": "F33-BRAMLEY", "window": "2025-11-10/2025-11-21"},
    {"feeder": "F11-CROFTON", "window": "2025-11-17/2025-11-28"},
    {"feeder": "F33-DENHOLM", "window": "2025-11-24/2025-12-05"},
    {"feeder": "F33-EDGEFIELD", "window": "2025-12-01/2025-12-12"},
]

CASES = [
    {"id": "vegetation_consent_parcel", "input": 0, "switch": "first_parcel", "fault_kind": "subagent_wrong_entity",
     "root": ("consent_officer", 1), "failure": ("create_work_package", 1),
     "description": "the consent officer sub-agent takes the first Hartley parcel, 88/14, and returns its consent "
                    "C-5512, while span S-0412 crosses parcel 88/41 of Hartley & Sons; the work package is refused."},
    {"id": "vegetation_live_line_handoff", "input": 1, "switch": "mad_11kv", "fault_kind": "wrong_routing",
     "root": ("generation fake-model", 8), "failure": ("book_live_line_crew", 1),
     "description": "the triage model judges the 33 kV spans against the 11 kV approach distance of 0.8 m and hands "
                    "off to the live-line crew, whose booking refuses S-2208 at 0.9 m inside the 1.2 m distance."},
    {"id": "vegetation_growth_cm", "input": 2, "switch": "growth_cm", "fault_kind": "unit_error",
     "root": ("get_growth_rate", 1), "failure": ("create_work_package", 1),
     "description": "get_growth_rate returns the crack willow's 60 cm a year as 60 m a year, so S-1104 is planned "
                    "to be cut back to 123.0 m and the work package is refused beyond the 8 m wayleave."},
    {"id": "vegetation_consent_date", "input": 3, "switch": "uk_date", "fault_kind": "format_drift",
     "root": ("generation fake-model", 7), "failure": ("create_work_package", 1),
     "description": "the consent officer's answer writes the expiry of consent C-7702 as 31/03/2026 instead of "
                    "ISO 2026-03-31 as its tool gave it, the triage passes it on and the work package rejects it."},
    {"id": "vegetation_memory_int", "input": 4, "switch": "int_cut", "fault_kind": "bad_memory_write",
     "root": ("remember_span", 1), "failure": ("create_work_package", 1),
     "description": "remember_span stores S-0917's cut-back distance as a whole number, 5 m instead of 5.5 m, and "
                    "the outage planner builds the work package from that memory, which is refused."},
]


@dataclass
class Crew:
    """The run's context: the memory the agents share."""

    memory: dict[str, dict] = field(default_factory=dict)


# -- the model ----------------------------------------------------------------------------------------

def _reply(calls):
    from trajdebug.testing import Reply, tool_call

    return Reply(tool_calls=tuple(tool_call(n, a) for n, a in calls))


def _triage(users: list[str], tools: list[dict]) -> Any:
    job = json.loads(users[0])
    done = {t["name"] for t in tools}
    if "get_lidar_encroachments" not in done:
        return _reply([("get_lidar_encroachments", {"feeder": job["feeder"]})])
    patrol = next(t["output"] for t in tools if t["name"] == "get_lidar_encroachments")
    if "get_span_details" not in done:
        calls = [("get_span_details", {"span_id": s["span"]}) for s in patrol["spans"]]
        calls += [("get_growth_rate", {"species": sp}) for sp in sorted({s["species"] for s in patrol["spans"]})]
        return _reply(calls)
    details = {t["output"]["span"]: t["output"] for t in tools if t["name"] == "get_span_details"}
    growth = {t["output"]["species"]: t["output"]["growth_m_per_year"] for t in tools if t["name"] == "get_growth_rate"}
    kv = patrol["voltage_kv"]
    if "remember_span" not in done:
        calls = []
        for s in patrol["spans"]:
            cut = round(REQUIRED_M[kv] + 2 * growth[s["species"]], 2)
            calls.append(("remember_span", {"span_id": s["span"], "voltage_kv": kv, "clearance_m": s["clearance_m"],
                                            "cut_to_m": cut, "parcel": details[s["span"]].get("parcel")}))
        return _reply(calls)
    private = [d for d in details.values() if d["land"] == "private"]
    asked = [t for t in tools if t["name"] == "request_consent_check"]
    if len(asked) < len(private):
        d = private[len(asked)]
        return _reply([("request_consent_check", {"input": json.dumps(
            {"span": d["span"], "landowner": d["owner"], "parcel": d["parcel"]})})])
    mad = MAD_M[11] if _on("mad_11kv") else MAD_M[kv]
    inside = [s for s in patrol["spans"] if s["clearance_m"] < mad]
    return _reply([("transfer_to_outage_planner" if inside else "transfer_to_live_line_crew", {})])


def _consent(users: list[str], tools: list[dict]) -> Any:
    ask = json.loads(users[-1])
    done = [t for t in tools if t["name"] in ("find_landowner", "get_consent_record")]
    if not done:
        return _reply([("find_landowner", {"name": ask["landowner"]})])
    if len(done) == 1:
        parcels = done[0]["output"]["parcels"]
        if _on("first_parcel"):
            pick = parcels[0]
        else:
            pick = next(p for p in parcels if p["parcel"] == ask["parcel"])
        return _reply([("get_consent_record", {"parcel": pick["parcel"]})])
    rec = done[1]["output"]
    valid_to = rec["valid_to"]
    if _on("uk_date"):
        y, m, d = valid_to.split("-")
        valid_to = f"{d}/{m}/{y}"
    return json.dumps({"span": ask["span"], "parcel": rec["parcel"], "consent": rec["consent"],
                       "valid_to": valid_to, "conditions": rec["conditions"]})


def _consents_from(tools: list[dict]) -> list[dict]:
    return [json.loads(t["output"]) if isinstance(t["output"], str) else t["output"]
            for t in tools if t["name"] == "request_consent_check"]


def _finisher(users: list[str], tools: list[dict], booking_tool: str) -> Any:
    job = json.loads(users[0])
    done = {t["name"]: t for t in tools}
    if "recall_spans" not in done:
        return _reply([("recall_spans", {})])
    spans = done["recall_spans"]["output"]["spans"]
    if booking_tool not in done:
        args: dict[str, Any] = {"feeder": job["feeder"], "spans": [s["span"] for s in spans]}
        if booking_tool == "book_outage":
            args["date"] = job["window"][:10]
            args["hours"] = 6
        return _reply([(booking_tool, args)])
    booking = done[booking_tool]["output"]
    if "create_work_package" not in done:
        return _reply([("create_work_package", {
            "feeder": job["feeder"], "booking": booking["booking"],
            "spans": [{"span": s["span"], "cut_to_m": s["cut_to_m"]} for s in spans],
            "consents": [{"span": c["span"], "parcel": c["parcel"], "consent": c["consent"],
                          "valid_to": c["valid_to"]} for c in _consents_from(tools)]})])
    wp = done["create_work_package"]["output"]
    return f"Work package {wp['work_package']} created for {job['feeder']} ({len(spans)} spans)."


def brain(request: Any) -> Any:
    instructions, users, tools = chat_state(request)
    if instructions.startswith("You triage"):
        return _triage(users, tools)
    if instructions.startswith("You check landowner consent"):
        return _consent(users, tools)
    if instructions.startswith("You plan the outage"):
        return _finisher(users, tools, "book_outage")
    if instructions.startswith("You book the live-line"):
        return _finisher(users, tools, "book_live_line_crew")
    raise ValueError("unexpected prompt")


# -- the agents ---------------------------------------------------------------------------------------

def _build(env: Env):
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunContextWrapper, function_tool
    from openai import AsyncOpenAI
    from pydantic import BaseModel

    client = AsyncOpenAI(base_url=env.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=env.model, openai_client=client)
    parallel = ModelSettings(parallel_tool_calls=True)

    class SpanCut(BaseModel):
        span: str
        cut_to_m: float

    class ConsentRef(BaseModel):
        span: str
        parcel: str
        consent: str
        valid_to: str

    @function_tool
    def get_lidar_encroachments(feeder: str) -> dict:
        """Spans of a feeder where the LiDAR patrol found vegetation near the conductors."""
        f = FEEDERS[feeder]
        return {"feeder": feeder, "patrol": f["patrol"], "voltage_kv": f["kv"],
                "spans": [{"span": s, "clearance_m": d["clearance_m"], "species": d["species"]}
                          for s, d in f["spans"].items()]}

    @function_tool
    def get_span_details(span_id: str) -> dict:
        """Land and landowner of a span."""
        for f in FEEDERS.values():
            if span_id in f["spans"]:
                d = f["spans"][span_id]
                out = {"span": span_id, "land": d["land"]}
                if d["land"] == "private":
                    out.update({"parcel": d["parcel"], "owner": d["owner"]})
                return out
        raise KeyError(span_id)

    @function_tool
    def get_growth_rate(species: str) -> dict:
        """Yearly regrowth of a tree species, from the arboricultural survey."""
        cm = GROWTH_CM[species]
        rate = cm if _on("growth_cm") else cm / 100
        return {"species": species, "growth_m_per_year": rate}

    @function_tool
    def remember_span(ctx: RunContextWrapper[Crew], span_id: str, voltage_kv: int, clearance_m: float,
                      cut_to_m: float, parcel: str | None = None) -> dict:
        """Write a span's cutting plan into the crew memory the other agents read."""
        entry = {"span": span_id, "voltage_kv": voltage_kv, "clearance_m": clearance_m,
                 "cut_to_m": int(cut_to_m) if _on("int_cut") else cut_to_m, "parcel": parcel}
        ctx.context.memory[span_id] = entry
        return entry

    @function_tool
    def recall_spans(ctx: RunContextWrapper[Crew]) -> dict:
        """Every span plan in the crew memory."""
        return {"spans": [dict(v) for v in ctx.context.memory.values()]}

    @function_tool
    def find_landowner(name: str) -> dict:
        """Land registry parcels whose owner matches a name."""
        return {"name": name, "parcels": [dict(p) for p in PARCELS[name]]}

    @function_tool
    def get_consent_record(parcel: str) -> dict:
        """The tree-cutting consent on file for a parcel."""
        consent, valid_to = CONSENTS[parcel]
        return {"parcel": parcel, "consent": consent, "valid_to": valid_to,
                "conditions": "notify the landowner 48 h ahead; chip and leave on site"}

    @function_tool(failure_error_function=None)
    def book_outage(feeder: str, spans: list[str], date: str, hours: int) -> dict:
        """Book a planned outage of the feeder for the cutting."""
        return {"booking": f"PO-{feeder[4:7]}-{date[5:7]}{date[8:]}", "feeder": feeder, "date": date,
                "hours": hours, "spans": spans}

    @function_tool(failure_error_function=None)
    def book_live_line_crew(feeder: str, spans: list[str]) -> dict:
        """Book the live-line cutting crew (insulated tools, line stays in service)."""
        f = FEEDERS[feeder]
        for s in spans:
            c = f["spans"][s]["clearance_m"]
            if c < MAD_M[f["kv"]]:
                raise ValueError(f"span {s} clearance {c} m is inside the {MAD_M[f['kv']]} m minimum approach "
                                 f"distance at {f['kv']} kV: live-line cutting refused, book an outage")
        return {"booking": f"LL-{feeder[4:7]}-{len(spans)}", "feeder": feeder, "spans": spans}

    @function_tool(failure_error_function=None)
    def create_work_package(feeder: str, booking: str, spans: list[SpanCut], consents: list[ConsentRef]) -> dict:
        """Create the cutting work package in the work management system (validated on receipt)."""
        f = FEEDERS[feeder]
        spans = [x.model_dump() for x in spans]
        consents = [x.model_dump() for x in consents]
        for s in spans:
            d = f["spans"][s["span"]]
            need = REQUIRED_M[f["kv"]] + 2 * GROWTH_CM[d["species"]] / 100
            if s["cut_to_m"] > WAYLEAVE_M:
                raise ValueError(f"span {s['span']}: cut back to {s['cut_to_m']} m is beyond the {WAYLEAVE_M} m "
                                 f"wayleave")
            if s["cut_to_m"] < round(need, 2):
                raise ValueError(f"span {s['span']}: cut back to {s['cut_to_m']} m, the {f['kv']} kV line needs "
                                 f"{need:.1f} m ({REQUIRED_M[f['kv']]} m plus two years' regrowth)")
        by_span = {c["span"]: c for c in consents}
        for s, d in f["spans"].items():
            if d["land"] != "private":
                continue
            c = by_span.get(s)
            if c is None:
                raise ValueError(f"span {s} is over private land (parcel {d['parcel']}) and has no consent")
            if c["parcel"] != d["parcel"]:
                raise ValueError(f"consent {c['consent']} covers parcel {c['parcel']}; span {s} crosses parcel "
                                 f"{d['parcel']}")
            try:
                dt.date.fromisoformat(c["valid_to"])
            except ValueError:
                raise ValueError(f"consent {c['consent']}: valid_to {c['valid_to']!r} is not a date "
                                 f"(YYYY-MM-DD)") from None
        return {"work_package": f"WP-{feeder[4:]}-{len(spans)}", "booking": booking}

    consent_officer = Agent(name="consent_officer", model=model,
                            instructions="You check landowner consent for one span: find the landowner's parcel, "
                                         "read its consent record, answer JSON span, parcel, consent, valid_to, "
                                         "conditions.",
                            tools=[find_landowner, get_consent_record])
    outage_planner = Agent(name="outage_planner", model=model, model_settings=parallel,
                           instructions="You plan the outage for cutting near the conductors: recall the span "
                                        "plans, book the outage, create the work package.",
                           tools=[recall_spans, book_outage, create_work_package])
    live_line_crew = Agent(name="live_line_crew", model=model, model_settings=parallel,
                           instructions="You book the live-line cutting crew: recall the span plans, book the crew, "
                                        "create the work package.",
                           tools=[recall_spans, book_live_line_crew, create_work_package])
    triage = Agent(name="triage_officer", model=model, model_settings=parallel,
                   instructions="You triage a LiDAR vegetation patrol: read the patrol, every span and the species' "
                                "growth, remember each span's plan, check consents, then hand off.",
                   tools=[get_lidar_encroachments, get_span_details, get_growth_rate, remember_span,
                          consent_officer.as_tool("request_consent_check",
                                                  "Ask the consent officer about one span on private land.")],
                   handoffs=[outage_planner, live_line_crew])
    return triage, client


def run(inp: dict, path: str, env: Env) -> None:
    triage, client = _build(env)  # a fresh client per run: each run has its own event loop
    agents_run(triage, json.dumps(inp), path=path, name=NAME, context=Crew(), client=client,
               task=f"vegetation cutting {inp['feeder']} {inp['window']}")
