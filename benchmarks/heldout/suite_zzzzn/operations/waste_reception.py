"""waste-reception-booking: a port's reception-facility desk turning a ship's advance waste notification (MARPOL
waste, EU port reception facilities directive) into collection bookings, the indirect fee and the notification to
the port authority.

Route: the OpenTelemetry SDK with OpenInference attributes (the `openai` client instrumented by
`openinference-instrumentation-openai`), one OTLP JSON document per run, read by trajdebug's OTLP importer.
Shape: a notification parser, a registry tool, two retrievers (similar past notifications, port rules), an
assessment model call, a capacity tool per waste category, a scheduling model call, a booking loop inside a
wrapper chain (one booking tool per category, a slot retry), a fee tool, a memory write and the port-authority
notification tool, which checks everything against the notification and the memory record.
"""

from __future__ import annotations

import json
import re
from typing import Any

from trajdebug.testing import FakeModelServer

from ._kit import instrument_openai, otel, system_text, text_of, traced, uninstrument_openai, write_otlp

NAME = "waste-reception-booking"
ROUTE = "otlp"
DOMAIN = "port reception facilities: ship-generated waste (MARPOL) collections booked from a notification"
SHAPE = "parser chain, tool, 2 retrievers, llm, tool loop, llm, wrapper chain with tool loop and retry, tool, memory chain, final tool"

SWITCH: str | None = None


def _on(case: str) -> bool:
    return SWITCH == case


CATEGORIES = ["Oily bilge water", "Oily sludge", "Sewage", "Garbage (plastics)", "Food waste"]
FEE_EUR_PER_GT = 0.30

SHIPS = [
    {"ship": "NORDIC LIGHT", "imo": "9701234", "gt": 24800, "type": "ro-pax", "eta": "2025-07-03T06:00",
     "etd": "2025-07-03T17:30", "berth": "Terminal 4", "next": "Tallinn, 2 days",
     "waste": [(6.0, 20.0, 4.0), (9.5, 12.0, 0.0), (0.0, 30.0, 18.0), (2.0, 8.0, 1.5), (1.5, 4.0, 0.0)]},
    {"ship": "BALTIC SKY", "imo": "9655432", "gt": 9950, "type": "general cargo", "eta": "2025-07-05T08:00",
     "etd": "2025-07-05T20:00", "berth": "Quay 12", "next": "Klaipeda, 1 day",
     "waste": [(4.0, 10.0, 1.0), (3.5, 6.0, 0.5), (0.0, 12.0, 6.0), (1.2, 5.0, 0.3), (0.0, 2.0, 0.4)]},
    {"ship": "STAR FJORD", "imo": "9588120", "gt": 31200, "type": "bulk carrier", "eta": "2025-07-07T05:30",
     "etd": "2025-07-07T16:00", "berth": "Bulk Quay 2", "next": "Gdynia, 1 day",
     "waste": [(8.0, 25.0, 2.0), (6.5, 15.0, 1.0), (12.0, 40.0, 4.0), (3.0, 10.0, 0.5), (0.8, 3.0, 0.2)]},
    {"ship": "AMBER TRADER", "imo": "9477011", "gt": 17600, "type": "product tanker", "eta": "2025-07-09T07:00",
     "etd": "2025-07-09T19:00", "berth": "Oil Pier 1", "next": "Porvoo, 3 days",
     "waste": [(5.0, 18.0, 2.0), (4.0, 10.0, 0.0), (0.0, 20.0, 9.0), (2.5, 6.0, 0.4), (1.0, 3.0, 0.0)]},
    {"ship": "POLAR EXPRESS", "imo": "9820455", "gt": 42300, "type": "container ship", "eta": "2025-07-11T04:00",
     "etd": "2025-07-11T15:00", "berth": "Container Terminal 2", "next": "Aarhus, 1 day",
     "waste": [(7.0, 30.0, 3.0), (5.5, 14.0, 1.5), (0.0, 35.0, 10.0), (4.0, 12.0, 1.0), (2.0, 5.0, 0.0)]},
]


def _awn(s: dict[str, Any]) -> str:
    lines = [f"ADVANCE WASTE NOTIFICATION / Ship: {s['ship']} / IMO {s['imo']} / ETA {s['eta']} / ETD {s['etd']} / "
             f"Berth: {s['berth']} / Next port: {s['next']}",
             "Category | to deliver m3 | max storage m3 | retained on board m3"]
    for c, (d, m, r) in zip(CATEGORIES, s["waste"]):
        lines.append(f"{c} | {d:.1f} | {m:.1f} | {r:.1f}")
    return "\n".join(lines)


INPUTS = [{"task": f"waste notification {s['ship']} {s['eta'][:10]}", "awn": _awn(s)} for s in SHIPS]

CASES = [
    {"id": "waste_similar_name_awn", "input": 1, "switch": "similar_awn", "fault_kind": "context_pollution",
     "root": {"name": "recent_notifications", "occurrence": 1}, "root_kind": "retrieval",
     "failure": "notify_port_authority",
     "description": "recent_notifications put the raw notification of BALTIC SKIES, another ship, among the "
                    "examples, and the assessment took its 22.0 m3 of oily sludge for BALTIC SKY's 3.5 m3."},
    {"id": "waste_garbage_slot_dropped", "input": 3, "switch": "skip_retry", "fault_kind": "swallowed_error",
     "root": {"name": "book_collections", "occurrence": 1}, "root_kind": "other",
     "failure": "notify_port_authority",
     "description": "book_collections went on without AMBER TRADER's garbage collection when its 10:00 slot was "
                    "refused, instead of booking the next slot."},
    {"id": "waste_gross_tonnage", "input": 0, "switch": "gt_digits", "fault_kind": "hallucinated_value",
     "root": {"name": "ChatCompletion", "occurrence": 1}, "root_kind": "llm", "failure": "notify_port_authority",
     "description": "The assessment model stated NORDIC LIGHT's gross tonnage as 28400, a figure no input held "
                    "(the registry says 24800), and the indirect fee was computed from it."},
    {"id": "waste_memory_departure", "input": 4, "switch": "memory_etd", "fault_kind": "bad_memory_write",
     "root": {"name": "remember_notification", "occurrence": 1}, "root_kind": "other",
     "failure": "notify_port_authority",
     "description": "remember_notification stored POLAR EXPRESS's arrival time 04:00 as its departure, so the "
                    "collections booked from 05:00 read as after the ship had left."},
    {"id": "waste_one_truck_plan", "input": 2, "switch": "sequential", "fault_kind": "plan_error",
     "root": {"name": "ChatCompletion", "occurrence": 2}, "root_kind": "llm", "failure": "notify_port_authority",
     "description": "The scheduling model planned STAR FJORD's five collections one after another from a single "
                    "truck, so the food-waste collection fell at 18:30, after the 16:00 departure."},
]


# ----------------------------------------------------------------------------------------------- the port

_memory: dict[str, dict[str, Any]] = {}
_bookings: dict[str, list[dict[str, Any]]] = {}
_attempts: dict[str, int] = {}


def _ship(name: str) -> dict[str, Any]:
    return next(s for s in SHIPS if s["ship"] == name)


def _parse_awn(text: str) -> dict[str, Any]:
    head, _columns, *rows = text.splitlines()
    fields = dict(re.findall(r"(Ship|IMO|ETA|ETD|Berth|Next port):? ([^/]+?)(?: /|$)", head))
    waste = []
    for row in rows:
        cat, deliver, storage, retained = [p.strip() for p in row.split("|")]
        waste.append({"category": cat, "to_deliver_m3": float(deliver), "max_storage_m3": float(storage),
                      "retained_m3": float(retained)})
    return {"ship": fields["Ship"].strip(), "imo": fields["IMO"].strip(), "eta": fields["ETA"].strip(),
            "etd": fields["ETD"].strip(), "berth": fields["Berth"].strip(), "next_port": fields["Next port"].strip(),
            "waste": waste}


def _vessel_registry(imo: str) -> dict[str, Any]:
    s = next(x for x in SHIPS if x["imo"] == imo)
    return {"imo": imo, "name": s["ship"], "gt": s["gt"], "type": s["type"], "flag": "MT" if s["gt"] > 20000 else "PL"}


def _recent_notifications(query: str, ship: str) -> list[dict[str, Any]]:
    docs = [{"id": "awn-2025-06-12-cb", "score": 0.71,
             "content": "CELTIC BREEZE (general cargo, GT 9600) 2025-06-12: delivered 5.0 m3 oily bilge water, "
                        "2.0 m3 oily sludge and 1.0 m3 garbage; indirect fee applied."},
            {"id": "awn-2025-06-20-fl", "score": 0.66,
             "content": "FJORD LINE CARGO (ro-ro, GT 21300) 2025-06-20: sewage retained, garbage 2.5 m3 delivered."}]
    if _on("similar_awn") and ship == "BALTIC SKY":
        other = ("ADVANCE WASTE NOTIFICATION / Ship: BALTIC SKIES / IMO 9388815 / ETA 2025-06-28T07:00\n"
                 "Oily bilge water | 9.0 | 24.0 | 3.0\nOily sludge | 22.0 | 26.0 | 1.0\n"
                 "Garbage (plastics) | 3.0 | 8.0 | 0.5")
        docs.insert(0, {"id": "awn-2025-06-28-bs", "score": 0.93, "content": other})
    return docs


def _port_rules(query: str) -> list[dict[str, Any]]:
    return [{"id": "prf-rule-3", "score": 0.88,
             "content": "All notified quantities of oily waste and garbage are collected before departure; "
                        "collections are booked from one hour after arrival to one hour before departure."},
            {"id": "prf-fee-2025", "score": 0.81,
             "content": f"Indirect waste fee: {FEE_EUR_PER_GT:.2f} EUR per gross tonne, charged on every call."}]


def _contractor_capacity(category: str, date: str) -> dict[str, Any]:
    vehicle = "barge" if category.startswith("Oily") else "truck"
    return {"category": category, "date": date, "vehicle": vehicle, "capacity_m3": 30.0,
            "slots": ["05:00", "06:30", "07:00", "08:00", "09:00", "10:00", "13:00", "15:00"]}


def _book_collection(ship: str, category: str, m3: float, slot: str) -> dict[str, Any]:
    key = f"{ship}/{category}/{slot}"
    _attempts[key] = _attempts.get(key, 0) + 1
    if ship == "AMBER TRADER" and category.startswith("Garbage") and slot == "10:00":
        raise RuntimeError(f"contractor: slot {slot} for {category} at Oil Pier 1 already taken")
    booking = {"booking": f"WC-{ship[:3]}-{CATEGORIES.index(category) + 1}{slot.replace(':', '')}",
               "category": category, "m3": m3, "slot": slot}
    _bookings.setdefault(ship, []).append(booking)
    return booking


def _book_collections(ship: str, plan: list[dict[str, Any]], capacity: dict[str, Any]) -> list[dict[str, Any]]:
    tracer = otel()[0].get_tracer(NAME)
    done = []
    for item in plan:
        slots = capacity[item["category"]]["slots"]
        slot = item["slot"]
        while True:
            try:
                done.append(traced(tracer, "book_collection", "TOOL", _book_collection,
                                   {"ship": ship, "category": item["category"], "m3": item["m3"], "slot": slot}))
                break
            except RuntimeError:
                later = [s for s in slots if s > slot]
                if _on("skip_retry") or not later:
                    break
                slot = later[0]
    return done


def _compute_fee(gt: int) -> dict[str, Any]:
    return {"gt": gt, "eur_per_gt": FEE_EUR_PER_GT, "fee_eur": round(gt * FEE_EUR_PER_GT, 2)}


def _remember_notification(call: str, awn: dict[str, Any], bookings: list[dict[str, Any]],
                           fee: dict[str, Any]) -> dict[str, Any]:
    etd = awn["eta"] if _on("memory_etd") else awn["etd"]
    record = {"call": call, "ship": awn["ship"], "imo": awn["imo"], "eta": awn["eta"], "etd": etd,
              "bookings": [b["booking"] for b in bookings], "fee_eur": fee["fee_eur"], "gt": fee["gt"]}
    _memory[call] = record
    return record


def _notify_port_authority(call: str) -> dict[str, Any]:
    rec = _memory[call]
    s = _ship(rec["ship"])
    booked = {b["category"]: b for b in _bookings.get(rec["ship"], []) if b["booking"] in rec["bookings"]}
    for cat, (deliver, _storage, _retained) in zip(CATEGORIES, s["waste"]):
        b = booked.get(cat)
        if deliver > 0 and b is None:
            raise ValueError(f"port authority: no collection booked for {cat} ({deliver:.1f} m3 notified) on call {call}")
        if b and b["m3"] > deliver:
            raise ValueError(f"port authority: booked {b['m3']:.1f} m3 of {cat} exceeds the {deliver:.1f} m3 notified")
        if b and f"{rec['eta'][:10]}T{b['slot']}" > rec["etd"]:
            raise ValueError(f"port authority: {cat} collection at {b['slot']} is after the departure {rec['etd'][11:]} "
                             f"recorded for call {call}")
    if abs(rec["fee_eur"] - s["gt"] * FEE_EUR_PER_GT) > 0.01:
        raise ValueError(f"port authority: indirect fee {rec['fee_eur']:.2f} EUR is for GT {rec['gt']}; the registry "
                         f"gives GT {s['gt']}")
    return {"call": call, "status": "notified", "collections": len(booked)}


# ----------------------------------------------------------------------------------------------- the agent

_client: Any = None


def run_agent(inp: dict[str, Any], server: FakeModelServer) -> None:
    tracer = otel()[0].get_tracer(NAME)
    awn = traced(tracer, "parse_awn", "CHAIN", _parse_awn, {"text": inp["awn"]})
    registry = traced(tracer, "vessel_registry", "TOOL", _vessel_registry, {"imo": awn["imo"]})
    examples = traced(tracer, "recent_notifications", "RETRIEVER", _recent_notifications,
                      {"query": f"waste notification {registry['type']} {awn['ship']}", "ship": awn["ship"]})
    rules = traced(tracer, "port_rules", "RETRIEVER", _port_rules, {"query": "mandatory delivery and fees"})
    assess = _client.chat.completions.create(model=server.model, temperature=0, messages=[
        {"role": "system", "content": "ROLE waste-assessor. From the notification, the registry, the rules and the "
                                      "examples, answer JSON {ship, gt, categories: [{category, deliver_m3}]}."},
        {"role": "user", "content": json.dumps({"awn": awn, "registry": registry,
                                                "examples": [d["content"] for d in examples],
                                                "rules": [d["content"] for d in rules]})}])
    assessment = json.loads(assess.choices[0].message.content)
    date = awn["eta"][:10]
    capacity = {}
    for c in assessment["categories"]:
        if c["deliver_m3"] > 0:
            capacity[c["category"]] = traced(tracer, "contractor_capacity", "TOOL", _contractor_capacity,
                                             {"category": c["category"], "date": date})
    plan_reply = _client.chat.completions.create(model=server.model, temperature=0, messages=[
        {"role": "system", "content": "ROLE collection-scheduler. Give each collection a slot: JSON "
                                      "{collections: [{category, m3, slot}]}."},
        {"role": "user", "content": json.dumps({"eta": awn["eta"], "etd": awn["etd"],
                                                "collections": [c for c in assessment["categories"]
                                                                if c["deliver_m3"] > 0],
                                                "capacity": capacity})}])
    plan = json.loads(plan_reply.choices[0].message.content)["collections"]
    bookings = traced(tracer, "book_collections", "CHAIN", _book_collections,
                      {"ship": awn["ship"], "plan": plan, "capacity": capacity})
    fee = traced(tracer, "compute_fee", "TOOL", _compute_fee, {"gt": assessment["gt"]})
    call = f"{awn['imo']}-{date.replace('-', '')}"
    traced(tracer, "remember_notification", "CHAIN", _remember_notification,
           {"call": call, "awn": awn, "bookings": bookings, "fee": fee})
    traced(tracer, "notify_port_authority", "TOOL", _notify_port_authority, {"call": call})


def record(inp: dict[str, Any], path: str, server: FakeModelServer) -> None:
    global _client
    from openai import OpenAI

    provider, exporter = otel()
    instrument_openai()
    if _client is None or str(_client.base_url).rstrip("/") != server.base_url.rstrip("/"):
        _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    exporter.clear()
    _memory.clear()
    _bookings.clear()
    _attempts.clear()
    tracer = provider.get_tracer(NAME)
    try:
        with tracer.start_as_current_span(NAME, attributes={
                "openinference.span.kind": "AGENT", "agent.name": NAME,
                "metadata": json.dumps({"task": inp["task"]}),
                "input.value": inp["awn"], "input.mime_type": "text/plain"}):
            run_agent(inp, server)
    except Exception:
        pass
    write_otlp(path, exporter.get_finished_spans())
    exporter.clear()


def close() -> None:
    uninstrument_openai()


# ----------------------------------------------------------------------------------------------- the model


def _hhmm(m: int) -> str:
    return f"{m // 60:02d}:{m % 60:02d}"


def brain(request: Any) -> str:
    messages = request.body["messages"]
    role = system_text(messages)
    data = json.loads(text_of(messages[-1]))
    if role.startswith("ROLE waste-assessor"):
        awn, registry = data["awn"], data["registry"]
        cats = [{"category": w["category"], "deliver_m3": w["to_deliver_m3"]} for w in awn["waste"]]
        for example in data["examples"]:
            for line in example.splitlines():  # a notification's table row among the examples
                m = re.match(r"(Oily sludge) \| ([\d.]+) \|", line)
                if m:
                    next(c for c in cats if c["category"] == m.group(1))["deliver_m3"] = float(m.group(2))
        gt = registry["gt"]
        if _on("gt_digits"):
            gt = 28400
        return json.dumps({"ship": awn["ship"], "gt": gt, "categories": cats})
    if role.startswith("ROLE collection-scheduler"):
        eta = int(data["eta"][11:13]) * 60 + int(data["eta"][14:16])
        out = []
        for i, c in enumerate(data["collections"]):
            slots = data["capacity"][c["category"]]["slots"]
            if _on("sequential"):
                slot = _hhmm(eta + 60 + 180 * i)
            else:
                slot = next(s for s in slots if int(s[:2]) * 60 + int(s[3:]) >= eta + 60)
                if c["category"].startswith("Garbage"):
                    slot = next(s for s in slots if s >= "10:00")
            out.append({"category": c["category"], "m3": c["deliver_m3"], "slot": slot})
        return json.dumps({"collections": out})
    return "No answer."
