"""Marching band uniform fittings: OpenTelemetry spans with OpenInference conventions, written as OTLP/JSON."""
from __future__ import annotations

import json
import re

from openai import OpenAI

from . import otlpkit
from .kit import active

AGENT, ROUTE, EXT = "band-uniform-fittings", "otlp", "json"
DOMAIN = "marching band uniform fittings"
SHAPE = "request -> model extract -> roster -> per player: size chart retrieval + fitting ledger write -> model routes alterations -> tailor sub-agent -> stock -> model summary -> vendor delivery terms -> slots -> submit order"

INPUTS = {
    "northfield": "Fit uniforms for the brass section of Northfield High, parade on 2026-12-19.",
    "lakeside": "Fit uniforms for the percussion section of Lakeside Academy, parade on 2026-12-22.",
    "r1": "Fit uniforms for the woodwind section of Northfield High, parade on 2026-12-20.",
    "r2": "Fit uniforms for the colour guard section of Lakeside Academy, parade on 2026-12-21.",
    "r3": "Fit uniforms for the brass section of Ridgeway School, parade on 2026-12-23.",
    "r4": "Fit uniforms for the percussion section of Ridgeway School, parade on 2026-12-18.",
}
REFS = ["r1", "r2", "r3", "r4"]
CHART = [("S", 82, 90), ("M", 90, 98), ("L", 98, 106), ("XL", 106, 114)]
YOUTH = [("Y-M", 70, 78), ("Y-L", 78, 86), ("Y-XL", 86, 94)]


def roster(school: str, section: str) -> list[dict]:
    seed = sum(map(ord, school + section))
    rows = []
    for i in range(6):
        chest = 84 + (seed * (i + 3)) % 28
        rows.append({"player": f"B-{(seed % 90) + 100 + i}", "chest_cm": chest, "inseam_cm": 70 + (seed + 5 * i) % 14,
                     "hem": "short" if (seed + i) % 3 == 0 else "ok"})
    return rows


CASES = [
    ("zh-band-01", "wrong_routing", "northfield", ("route_alterations", 1, "llm"), "submit_uniform_order",
     "route_alterations sends the hem alterations to the outside vendor, whose turnaround ends after the parade."),
    ("zh-band-02", "wrong_retrieval", "northfield", ("size_chart_lookup", 3, "retrieval"), "submit_uniform_order",
     "size_chart_lookup returns the youth chart row for the third player, so the order carries a jacket size outside that player's chest range."),
    ("zh-band-03", "hallucinated_value", "lakeside", ("order_summary", 1, "llm"), "vendor_delivery_terms",
     "order_summary states a delivery date that no input holds, later than the parade."),
    ("zh-band-04", "bad_memory_write", "lakeside", ("record_fitting", 5, "other"), "submit_uniform_order",
     "record_fitting writes the previous player's jacket size into the fifth player's ledger entry."),
    ("zh-band-05", "off_by_one", "northfield", ("assign_slots", 1, "other"), "submit_uniform_order",
     "assign_slots starts counting at slot 1 instead of 0, so the last player's fitting falls outside the session."),
]


def policy(request):
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Extract"):
        m = re.search(r"the (.+?) section of (.+?), parade on ([\d-]+)", user)
        return json.dumps({"section": m.group(1), "school": m.group(2), "event": m.group(3)})
    if system.startswith("Route"):
        data = json.loads(user)
        route = {p["player"]: ("tailor" if p["hem"] == "short" else "none") for p in data["players"]}
        if active("zh-band-01"):
            route = {k: ("vendor" if v == "tailor" else v) for k, v in route.items()}
        return json.dumps(route)
    if system.startswith("Summarize"):
        data = json.loads(user)
        deliver = data["event"]
        if active("zh-band-03"):
            deliver = "2026-12-28"
        return json.dumps({"jackets": data["jackets"], "deliver_by": deliver, "note": "fittings complete"})
    return "{}"


def _kind(k):
    return {"openinference.span.kind": k}


def record(key: str, fault: str | None, out, server) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    tracer, spans, provider = otlpkit.tracer_for("band-uniform-service")
    text = INPUTS[key]

    def llm(name, system, user):
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        with tracer.start_as_current_span(name) as sp:
            r = client.chat.completions.create(model=server.model, messages=messages)
            answer = r.choices[0].message.content
            sp.set_attributes(otlpkit.llm_attrs(messages, answer, r.model))
        return answer

    def span(name, kind, inp):
        sp = tracer.start_as_current_span(name, attributes={**_kind(kind), "input.value": json.dumps(inp),
                                                            "input.mime_type": "application/json"})
        return sp

    def done(sp, output):
        sp.set_attribute("output.value", json.dumps(output))
        sp.set_attribute("output.mime_type", "application/json")

    try:
        with tracer.start_as_current_span(AGENT, attributes={**_kind("AGENT"), "input.value": text, "agent.name": AGENT}) as root:
            with span("read_request", "CHAIN", {"message": text}) as sp:
                done(sp, {"message": text, "channel": "band director portal"})
            req = json.loads(llm("extract_request", "Extract the fitting request as JSON.", text))
            with span("roster_lookup", "TOOL", {"school": req["school"], "section": req["section"]}) as sp:
                players = roster(req["school"], req["section"])
                done(sp, players)
            ledger, last = {}, None
            for n, p in enumerate(players, 1):
                with span("size_chart_lookup", "RETRIEVER", {"chest_cm": p["chest_cm"]}) as sp:
                    chart = YOUTH if (n == 3 and active("zh-band-02")) else CHART
                    row = min(chart, key=lambda r: 0 if r[1] <= p["chest_cm"] < r[2] else abs(r[1] - p["chest_cm"]))
                    doc = {"size": row[0], "chest_from": row[1], "chest_to": row[2]}
                    sp.set_attribute("retrieval.documents.0.document.content", json.dumps(doc))
                    done(sp, doc)
                with span("record_fitting", "CHAIN", {"player": p["player"], "size": doc["size"]}) as sp:
                    size = last if (n == 5 and active("zh-band-04")) else doc["size"]
                    ledger[p["player"]] = {"jacket": size, "inseam_cm": p["inseam_cm"]}
                    last = doc["size"]
                    done(sp, {"ledger_rows": len(ledger)})
            route = json.loads(llm("route_alterations", "Route each player's alterations: tailor, vendor or none.",
                                   json.dumps({"event": req["event"], "players": players})))
            with tracer.start_as_current_span("tailor_agent", attributes={**_kind("AGENT"), "input.value": json.dumps(route)}) as tsp:
                jobs = []
                for player, where in route.items():
                    if where == "none":
                        continue
                    with span("book_alteration", "TOOL", {"player": player, "provider": where}) as sp:
                        days = 3 if where == "tailor" else 21
                        job = {"player": player, "provider": where, "turnaround_days": days, "ready": f"2026-12-{4 + days:02d}"}
                        jobs.append(job)
                        done(sp, job)
                tsp.set_attribute("output.value", json.dumps(jobs))
            jackets: dict = {}
            for row in ledger.values():
                jackets[row["jacket"]] = jackets.get(row["jacket"], 0) + 1
            with span("stock_check", "TOOL", {"jackets": jackets}) as sp:
                done(sp, {"in_stock": {k: v + 4 for k, v in jackets.items()}})
            summary = json.loads(llm("order_summary", "Summarize the uniform order as JSON.",
                                     json.dumps({"event": req["event"], "jackets": jackets})))
            with span("vendor_delivery_terms", "TOOL", {"deliver_by": summary["deliver_by"], "jackets": summary["jackets"]}) as sp:
                if summary["deliver_by"] > req["event"]:
                    raise ValueError(f"400 Bad Request: {{\"error\": \"delivery_after_event\", \"deliver_by\": \"{summary['deliver_by']}\", \"event\": \"{req['event']}\"}}")
                done(sp, {"carrier": "uniform supplier van", "deliver_by": summary["deliver_by"]})
            with span("assign_slots", "CHAIN", {"players": [p["player"] for p in players], "session": "15:00-16:30"}) as sp:
                start = 1 if active("zh-band-05") else 0
                slots = {p["player"]: f"{15 + (i + start) * 15 // 60}:{(i + start) * 15 % 60:02d}" for i, p in enumerate(players)}
                done(sp, slots)
            with span("submit_uniform_order", "TOOL", {"summary": summary, "slots": slots}) as sp:
                problems = []
                for n, p in enumerate(players, 1):
                    size = ledger[p["player"]]["jacket"]
                    rng = next((r for r in CHART if r[0] == size), None)
                    if rng is None or not rng[1] <= p["chest_cm"] < rng[2] + 2:
                        problems.append(f"jacket {size} for {p['player']} (chest {p['chest_cm']} cm) is outside the size chart range")
                for job in jobs:
                    if job["ready"] > req["event"]:
                        problems.append(f"alteration for {job['player']} ready {job['ready']}, after the parade on {req['event']}")
                for player, slot in slots.items():
                    if slot >= "16:30":
                        problems.append(f"fitting slot {slot} for {player} is outside the 15:00-16:30 session")
                if problems:
                    raise ValueError("uniform order rejected: " + "; ".join(problems))
                done(sp, {"order": f"UO-{req['school'][:4].upper()}-{sum(jackets.values())}"})
            root.set_attribute("output.value", "uniform order submitted")
    except ValueError:
        pass
    otlpkit.write(spans, provider, out)
