"""Chimney sweep scheduler (route: otlp): the openai client instrumented by OpenInference, the agent's own
AGENT/CHAIN/TOOL/RETRIEVER spans, exported in memory and written as OTLP/JSON.  Per flue: guidance
retrieval, an assessment and a kit reservation; a retried calendar read, a planning model, booking,
a customer note from a second model call, and the landlord portal's compliance record."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from trajdebug.testing import FakeModelServer

from . import kit


NAME = "chimney-sweep-scheduler"
ROUTE = "otlp"
DOMAIN = "chimney sweeping"
SHAPE = "AGENT span; per-flue RETRIEVER + CHAIN + TOOL loop; calendar TOOL with a retry; two instrumented model calls; booking and compliance TOOLs"

GUIDANCE = {
    "wood stove": {"id": "GD-WS-03", "text": "Wood-burning stoves: sweep at least every 6 months in use; brush head matched to liner diameter.", "months": 6},
    "open fire": {"id": "GD-OF-02", "text": "Open fires burning wood or coal: sweep every 6 months; smokeless fuel every 12 months.", "months": 6},
    "oil boiler": {"id": "GD-OB-05", "text": "Oil-fired boilers: flue swept every 12 months with the service.", "months": 12},
    "gas fire": {"id": "GD-GF-07", "text": "Gas fires on a lined flue: inspect every 12 months, sweep when the inspection finds debris.", "months": 24},
}
PROPERTIES = {
    "12 Ashby Road": [("F1", "open fire", 200, "2026-03-10"), ("F2", "wood stove", 150, "2026-04-22"), ("F3", "oil boiler", 125, "2025-11-30")],
    "4 Greave Lane": [("F1", "wood stove", 150, "2026-05-02"), ("F2", "gas fire", 125, "2025-12-01")],
    "Croft End Farm": [("F1", "open fire", 225, "2026-02-14"), ("F2", "wood stove", 175, "2026-05-20"), ("F3", "wood stove", 150, "2026-03-03"), ("F4", "oil boiler", 125, "2025-10-10")],
    "The Old Forge": [("F1", "wood stove", 150, "2026-04-01"), ("F2", "open fire", 200, "2026-01-15")],
    "9 Cloth Hall Street": [("F1", "open fire", 200, "2026-05-05"), ("F2", "wood stove", 125, "2026-03-28"), ("F3", "open fire", 200, "2026-04-18")],
    "2 Dyers Row": [("F1", "wood stove", 150, "2026-05-11"), ("F2", "oil boiler", 125, "2025-12-20")],
    "Holme Cottage": [("F1", "open fire", 175, "2026-02-02"), ("F2", "wood stove", 150, "2026-04-09")],
    "21 Kiln Street": [("F1", "wood stove", 125, "2026-03-18"), ("F2", "open fire", 200, "2026-05-25"), ("F3", "gas fire", 125, "2025-09-09")],
    "Ladywell House": [("F1", "open fire", 225, "2026-04-30"), ("F2", "oil boiler", 150, "2025-11-11")],
}
ROSTER = ["SW-1", "SW-2", "SW-3"]
BRUSHES_IN = [4, 5, 6, 7, 8, 9, 10, 12]

INPUTS = {
    "c1": ("12 Ashby Road", "2026-12-07"),
    "c2": ("4 Greave Lane", "2026-12-08"),
    "c3": ("Croft End Farm", "2026-12-09"),
    "c4": ("The Old Forge", "2026-12-10"),
    "c5": ("9 Cloth Hall Street", "2026-12-11"),
    "r1": ("2 Dyers Row", "2026-12-14"),
    "r2": ("Holme Cottage", "2026-12-15"),
    "r3": ("21 Kiln Street", "2026-12-16"),
    "r4": ("Ladywell House", "2026-12-17"),
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = {
    "chimney_guidance": ("sweep.guidance", "wrong_retrieval", "c1", "retrieve_guidance"),
    "chimney_brush": ("sweep.brush", "unit_error", "c2", "assess_flue"),
    "chimney_calendar": ("sweep.calendar", "stale_data", "c3", "fetch_calendar"),
    "chimney_roster": ("sweep.roster", "hallucinated_value", "c4", "ChatCompletion"),
    "chimney_due": ("sweep.due", "off_by_one", "c5", "select_due_flues"),
}


class PortalError(RuntimeError):
    pass


PortalError.__module__ = "sweep_portal"


def _months_between(a: str, b: str) -> int:
    ya, ma, da = map(int, a.split("-"))
    yb, mb, db = map(int, b.split("-"))
    return (yb - ya) * 12 + (mb - ma) - (1 if db < da else 0)


def _slots(week_of: str, taken: set[str]) -> list[dict]:
    out = []
    for sweep in ROSTER:
        for hour in ("08:30", "11:00", "13:30"):
            sid = f"{week_of} {hour} {sweep}"
            if sid not in taken:
                out.append({"slot": f"{week_of} {hour}", "sweep": sweep})
    return out


def _taken(week_of: str) -> set[str]:
    return {f"{week_of} 08:30 SW-1", f"{week_of} 08:30 SW-2"}


# ---- the scripted model -----------------------------------------------------------------------------

def policy(request) -> Any:
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    facts = json.loads(msgs[-1]["content"])
    if system.startswith("You plan sweep visits"):
        slot = facts["slots"][0]
        sweep = slot["sweep"]
        if kit.active("sweep.roster"):
            sweep = "SW-6"
            kit.mark(sweep)
        minutes = 40 * len(facts["flues"]) + 20
        return json.dumps({"slot": slot["slot"], "sweep": sweep, "duration_min": minutes, "flues": facts["flues"]})
    if system.startswith("You write customer notes"):
        return f"Your sweep is booked for {facts['slot']} ({facts['duration_min']} minutes); please clear the hearth area."
    return "Sorry."


# ---- the agent ----------------------------------------------------------------------------------------

_ENV: dict = {}


def _env() -> dict:
    if not _ENV:
        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": NAME}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        server = FakeModelServer(policy, model="sweep-planner")
        server.start()
        client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        _ENV.update(exporter=exporter, provider=provider, tracer=provider.get_tracer(NAME), server=server, client=client)
    return _ENV


def _span(tracer, name: str, kind: str, value: Any):
    return tracer.start_as_current_span(name, attributes={"openinference.span.kind": kind, "input.value": json.dumps(value),
                                                         "input.mime_type": "application/json"})


def _out(span, value: Any) -> Any:
    span.set_attribute("output.value", json.dumps(value))
    span.set_attribute("output.mime_type", "application/json")
    return value


def run_agent(env: dict, address: str, week_of: str) -> None:
    tracer, client, model = env["tracer"], env["client"], env["server"].model
    with _span(tracer, NAME, "AGENT", {"request": f"sweep all flues at {address}, week of {week_of}"}) as root:
        with _span(tracer, "read_request", "CHAIN", {"text": f"Please sweep at {address} w/c {week_of}"}) as s:
            req = _out(s, {"property": address, "week_of": week_of})
        with _span(tracer, "lookup_property", "TOOL", {"property": req["property"]}) as s:
            flues = _out(s, {"flues": [{"flue": f, "appliance": a, "liner_mm": mm, "last_swept": d} for f, a, mm, d in PROPERTIES[address]]})["flues"]
        assessed = []
        for flue in flues:
            with tracer.start_as_current_span("retrieve_guidance", attributes={"openinference.span.kind": "RETRIEVER", "input.value": f"sweep interval for {flue['appliance']}"}) as s:
                doc = GUIDANCE[flue["appliance"]]
                if kit.active("sweep.guidance") and flue["appliance"] == "wood stove":
                    doc = GUIDANCE["gas fire"]  # nearest neighbour in the index
                    kit.mark(doc["id"])
                s.set_attribute("retrieval.documents.0.document.id", doc["id"])
                s.set_attribute("retrieval.documents.0.document.content", doc["text"])
                s.set_attribute("retrieval.documents.0.document.score", 0.83)
                _out(s, {"documents": [{"id": doc["id"], "text": doc["text"]}]})
            with _span(tracer, "assess_flue", "CHAIN", {"flue": flue, "guidance": doc["id"]}) as s:
                age = _months_between(flue["last_swept"], week_of)
                brush_in = round(flue["liner_mm"] / 25.4)
                if kit.active("sweep.brush") and flue["flue"] == "F1":
                    brush_in = round(flue["liner_mm"] / 2.54)  # liner read as centimetres per inch
                    kit.mark(f'"brush_in": {brush_in}')
                assessed.append(_out(s, {"flue": flue["flue"], "appliance": flue["appliance"], "months_since_sweep": age,
                                         "interval_months": doc["months"], "due": age >= doc["months"] - 1, "brush_in": brush_in}))
        with _span(tracer, "select_due_flues", "CHAIN", {"assessed": assessed}) as s:
            due = [a for a in assessed if a["due"]]
            if kit.active("sweep.due"):
                due = due[1:]
                kit.mark(f'"first_due": "{due[0]["flue"]}"')
            selected = _out(s, {"due": [a["flue"] for a in due], "first_due": due[0]["flue"] if due else None,
                                "brushes_in": sorted({a["brush_in"] for a in due})})
        calendar = None
        for attempt in (1, 2):
            try:
                with _span(tracer, "fetch_calendar", "TOOL", {"week_of": week_of, "attempt": attempt}) as s:
                    if attempt == 1:
                        raise TimeoutError("calendar service did not answer in 5 s")
                    as_of, taken = "2026-12-03", _taken(week_of)
                    if kit.active("sweep.calendar"):
                        as_of, taken = "2026-11-26", set()  # the cached copy from the previous Thursday
                        kit.mark(as_of)
                    calendar = _out(s, {"as_of": as_of, "slots": _slots(week_of, taken)})
                break
            except TimeoutError:
                continue
        with _span(tracer, "plan_visit", "CHAIN", {"due": selected["due"]}) as s:
            facts = {"flues": selected["due"], "slots": calendar["slots"][:4], "brushes_in": selected["brushes_in"]}
            reply = client.chat.completions.create(model=model, messages=[
                {"role": "system", "content": "You plan sweep visits. Answer with JSON."},
                {"role": "user", "content": json.dumps(facts)}])
            plan = _out(s, json.loads(reply.choices[0].message.content))
        with _span(tracer, "book_slot", "TOOL", {"slot": plan["slot"], "sweep": plan["sweep"], "property": address}) as s:
            if plan["sweep"] not in ROSTER:
                raise PortalError(f"calendar API 404: no sweep with id {plan['sweep']}")
            if f"{plan['slot']} {plan['sweep']}" in _taken(week_of):
                raise PortalError(f"calendar API 409: {plan['sweep']} already has a booking at {plan['slot']}")
            booking = _out(s, {"booking": f"BK-{plan['slot'][-5:].replace(':', '')}-{plan['sweep']}", "slot": plan["slot"]})
        with _span(tracer, "reserve_kit", "TOOL", {"brushes_in": selected["brushes_in"], "slot": booking["slot"]}) as s:
            missing = [b for b in selected["brushes_in"] if b not in BRUSHES_IN]
            if missing:
                raise PortalError(f"kit store: no {missing[0]} in brush head in stock (heads held: 4-12 in)")
            _out(s, {"reserved": selected["brushes_in"], "van": "V2"})
        note = client.chat.completions.create(model=model, messages=[
            {"role": "system", "content": "You write customer notes for booked sweeps."},
            {"role": "user", "content": json.dumps({"slot": plan["slot"], "duration_min": plan["duration_min"]})}])
        with _span(tracer, "send_note", "TOOL", {"property": address, "text": note.choices[0].message.content}) as s:
            _out(s, {"status": "sent"})
        with _span(tracer, "submit_compliance_record", "TOOL", {"property": address, "swept": plan["flues"], "booking": booking["booking"]}) as s:
            for a in assessed:
                if a["flue"] not in plan["flues"] and a["months_since_sweep"] >= GUIDANCE[a["appliance"]]["months"] - 1:
                    raise PortalError(f"landlord portal 422: {a['flue']} ({a['appliance']}) at {address} is overdue for sweeping and not on the visit")
            _out(s, {"record": f"CR-{booking['booking'][3:]}", "flues": len(plan["flues"])})
        _out(root, {"booking": booking["booking"], "flues": plan["flues"]})


def record(key: str, out: str) -> None:
    env = _env()
    env["exporter"].clear()
    OpenAIInstrumentor().instrument(tracer_provider=env["provider"])
    try:
        run_agent(env, *INPUTS[key])
    except PortalError:
        pass
    finally:
        OpenAIInstrumentor().uninstrument()
    spans = env["exporter"].get_finished_spans()
    with open(out, "w") as f:
        f.write(json.dumps(MessageToDict(encode_spans(spans))))
