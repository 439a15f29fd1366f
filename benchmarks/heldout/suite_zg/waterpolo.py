"""Water polo league fixture builder: OpenTelemetry spans with OpenInference conventions, exported as OTLP/JSON."""

from __future__ import annotations

import itertools
import json
from contextlib import contextmanager
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from .kit import active

AGENT = "polo-fixtures"
ROUTE = "otlp"
DOMAIN = "water polo league fixtures"
SHAPE = "load league -> rules (retriever) -> pool bookings per venue (tool) -> capacity check -> round-robin plan (LLM) -> parse plan -> venue check -> slot per fixture -> referee desk sub-agent (tool + LLM) -> publish"
EXT = "json"

RULES = [
    {"id": "REG-SEN-4.2", "division": "senior", "text": "Senior division: at least 2 rest days between a club's matches."},
    {"id": "REG-U18-4.2", "division": "u18", "text": "Under-18 division: at least 1 rest day between a club's matches."},
]
POOLS = {
    "Eastside Baths": ["03-02 19:00", "03-05 19:00", "03-08 18:00", "03-11 19:00", "03-14 18:00", "03-17 19:00", "03-20 19:00",
                       "03-23 19:00", "03-26 19:00", "03-29 18:00"],
    "Marina Pool": ["03-03 20:00", "03-06 20:00", "03-09 17:00", "03-12 20:00", "03-15 17:00", "03-18 20:00",
                    "03-21 17:00", "03-24 20:00", "03-27 17:00"],
    "Uni Aquatics": ["03-04 18:30", "03-07 18:30", "03-10 18:30", "03-13 18:30", "03-16 18:30", "03-19 18:30",
                    "03-22 18:30", "03-25 18:30", "03-28 18:30"],
}
REFEREES = [
    {"id": "R-03", "name": "D. Kovacs", "club": "Neptune WPC"}, {"id": "R-07", "name": "L. Brandt", "club": None},
    {"id": "R-12", "name": "S. Amiri", "club": "Orcas"}, {"id": "R-15", "name": "P. Novak", "club": None},
    {"id": "R-19", "name": "J. Lowe", "club": "Neptune Juniors"}, {"id": "R-21", "name": "M. Ruiz", "club": None},
]
LEAGUES = {
    "SEN-M": {"division": "senior", "teams": ["Neptune WPC", "Orcas", "Sharks", "Tritons"], "venues": list(POOLS)},
    "SEN-W": {"division": "senior", "teams": ["Orcas", "Sharks", "Marlins", "Neptune WPC", "Selkies"], "venues": list(POOLS)},
    "U18-A": {"division": "u18", "teams": ["Neptune Juniors", "Sharks", "Tritons"], "venues": ["Uni Aquatics", "Marina Pool"]},
    "U18-B": {"division": "u18", "teams": ["Orcas", "Marlins", "Selkies", "Sharks"], "venues": ["Eastside Baths", "Uni Aquatics"]},
    "SEN-B": {"division": "senior", "teams": ["Tritons", "Marlins", "Selkies"], "venues": ["Marina Pool", "Eastside Baths"]},
    "SEN-C": {"division": "senior", "teams": ["Sharks", "Selkies", "Tritons", "Marlins"], "venues": list(POOLS)},
}
INPUTS = {k: {"league": k, "season": "spring 2027"} for k in LEAGUES}
INPUTS["a"], INPUTS["b"] = INPUTS["SEN-M"], INPUTS["SEN-W"]
REFS = ["U18-A", "U18-B", "SEN-B", "SEN-C"]


def policy(request):
    msgs = request.body["messages"]
    task = msgs[0]["content"].split(":", 1)[0]
    data = json.loads(msgs[-1]["content"])
    if task == "ROUNDS":
        pairs = list(itertools.combinations(data["teams"], 2))
        if active("wp-3"):
            pairs = pairs[:-2] + [pairs[0]]
        venues = data["venues"]
        lines = [f"M{i + 1}: {a} v {b} @ {venues[i % len(venues)]}" for i, (a, b) in enumerate(pairs)]
        return "\n".join(lines)
    if task == "REFS":
        conflicts = {c["referee"] for c in data["conflicts"]}
        free = [r["id"] for r in data["referees"] if r["id"] not in conflicts]
        return json.dumps({"assignments": {f["match"]: free[i % len(free)] for i, f in enumerate(data["fixtures"])}})
    return "{}"


def record(server, inp: dict, out: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "polo-fixtures"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("polo-fixtures")
    client = OpenAI(base_url=server.base_url, api_key="local", max_retries=0)
    league = LEAGUES[inp["league"]]

    @contextmanager
    def span(name: str, kind: str, given):
        with tracer.start_as_current_span(name, attributes={"openinference.span.kind": kind, "input.value": json.dumps(given),
                                                            "input.mime_type": "application/json"}) as sp:
            box: dict = {}
            yield box
            if "out" in box:
                sp.set_attribute("output.value", json.dumps(box["out"]))
                sp.set_attribute("output.mime_type", "application/json")

    def llm(name: str, system: str, payload: dict) -> str:
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}]
        attrs = {"openinference.span.kind": "LLM", "llm.model_name": "fixtures-llm", "input.value": json.dumps({"messages": msgs}),
                 "input.mime_type": "application/json"}
        for i, m in enumerate(msgs):
            attrs[f"llm.input_messages.{i}.message.role"] = m["role"]
            attrs[f"llm.input_messages.{i}.message.content"] = m["content"]
        with tracer.start_as_current_span(name, attributes=attrs) as sp:
            text = client.chat.completions.create(model="fixtures-llm", messages=msgs).choices[0].message.content
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            sp.set_attribute("output.value", text)
        return text

    try:
        with tracer.start_as_current_span(AGENT, attributes={"openinference.span.kind": "AGENT", "agent.name": AGENT,
                                                              "input.value": json.dumps(inp)}):
            with span("load_league", "CHAIN", inp) as s:
                s["out"] = {"league": inp["league"], **league}
            with span("retrieve_rules", "RETRIEVER", {"query": f"rest days {league['division']} division"}) as r:
                division = "u18" if active("wp-2") else league["division"]
                r["out"] = {"documents": [d for d in RULES if d["division"] == division]}
            rest_days = int(r["out"]["documents"][0]["text"].split("at least ")[1].split()[0])
            slots = {}
            for venue in league["venues"]:
                with span("fetch_pool_bookings", "TOOL", {"venue": venue, "season": inp["season"]}) as b:
                    free = POOLS[venue]
                    if active("wp-4") and venue == league["venues"][-1]:
                        free = free[:2]
                    b["out"] = {"venue": venue, "free": free}
                slots[venue] = list(free)
            n_matches = len(league["teams"]) * (len(league["teams"]) - 1) // 2
            with span("check_capacity", "CHAIN", {"matches": n_matches, "slots": {v: len(f) for v, f in slots.items()}}) as cc:
                per_venue = -(-n_matches // len(league["venues"]))
                for v, f in slots.items():
                    if len(f) < per_venue:
                        raise ValueError(f"capacity check: {v} has {len(f)} free slots, the draw needs {per_venue}")
                cc["out"] = {"ok": True}
            plan_text = llm("plan_rounds", "ROUNDS: single round robin, one line per match with its venue",
                            {"teams": league["teams"], "venues": league["venues"], "rest_days": rest_days})
            with span("parse_plan", "CHAIN", {"text": plan_text}) as pp:
                fixtures = []
                for line in plan_text.splitlines():
                    match, rest = line.split(": ", 1)
                    teams, venue = rest.split(" @ ")
                    home, away = teams.split(" v ")
                    if active("wp-5") and " " in venue:
                        venue = venue.split()[0]
                    fixtures.append({"match": match, "home": home, "away": away, "venue": venue})
                pp["out"] = {"fixtures": fixtures}
            with span("check_venues", "CHAIN", {"fixtures": fixtures}) as cv:
                for f in fixtures:
                    if f["venue"] not in slots:
                        raise ValueError(f"venue check: {f['match']} {f['home']} v {f['away']} is set at unknown venue '{f['venue']}'")
                cv["out"] = {"ok": True}
            busy: dict = {}
            for f in fixtures:
                with span("assign_slot", "CHAIN", {**f, "rest_days": rest_days}) as a:
                    def fits(slot: str) -> bool:
                        day = int(slot[3:5])
                        return all(abs(day - d) > rest_days for t in (f["home"], f["away"]) for d in busy.get(t, []))
                    pool = slots[f["venue"]]
                    f["slot"] = pool.pop(next((i for i, sl in enumerate(pool) if fits(sl)), 0))
                    for t in (f["home"], f["away"]):
                        busy.setdefault(t, []).append(int(f["slot"][3:5]))
                    a["out"] = dict(f)
            with tracer.start_as_current_span("referee_desk", attributes={"openinference.span.kind": "AGENT",
                                                                          "agent.name": "referee_desk"}):
                with span("list_referees", "TOOL", {"division": league["division"]}) as lr:
                    lr["out"] = {"referees": REFEREES}
                clubs = sorted({t for f in fixtures for t in (f["home"], f["away"])})
                if active("wp-1"):
                    clubs = [c.replace("Neptune WPC", "Neptune Juniors") for c in clubs]
                with span("club_conflicts", "TOOL", {"clubs": clubs}) as cf:
                    cf["out"] = {"conflicts": [{"referee": r["id"], "club": r["club"]} for r in REFEREES if r["club"] in clubs]}
                refs = json.loads(llm("assign_referees", "REFS: one neutral referee per match",
                                      {"fixtures": [{"match": f["match"]} for f in fixtures], "referees": REFEREES,
                                       "conflicts": cf["out"]["conflicts"]}))
            draw = [{**f, "referee": refs["assignments"][f["match"]]} for f in fixtures]
            with span("publish_fixtures", "TOOL", {"league": inp["league"], "fixtures": draw}) as pub:
                need_rest = 2 if league["division"] == "senior" else 1
                played = {tuple(sorted((f["home"], f["away"]))) for f in draw}
                for a_, b_ in itertools.combinations(league["teams"], 2):
                    if tuple(sorted((a_, b_))) not in played:
                        raise ValueError(f"HTTP 422 from league portal: round robin is missing {a_} v {b_}")
                club_of = {r["id"]: r["club"] for r in REFEREES}
                for f in draw:
                    if club_of[f["referee"]] in (f["home"], f["away"]):
                        raise ValueError(f"HTTP 422 from league portal: referee {f['referee']} is affiliated with "
                                         f"{club_of[f['referee']]} ({f['match']})")
                days: dict = {}
                for f in draw:
                    for t in (f["home"], f["away"]):
                        days.setdefault(t, []).append(int(f["slot"][3:5]))
                for t, ds in days.items():
                    ds.sort()
                    for x, y in zip(ds, ds[1:]):
                        if y - x - 1 < need_rest:
                            raise ValueError(f"HTTP 422 from league portal: {t} plays on 03-{x:02d} and 03-{y:02d}; "
                                             f"{league['division']} rules need {need_rest} rest days")
                pub["out"] = {"league": inp["league"], "published": len(draw)}
    except ValueError:
        pass
    provider.shutdown()
    out.write_text(json.dumps(MessageToDict(encode_spans(exporter.get_finished_spans()))))


CASES_SPEC = [
    ("wp-1", "subagent_wrong_entity", "a", "club_conflicts", "Neptune Juniors", "publish_fixtures",
     "The referee desk checks conflicts for Neptune Juniors instead of Neptune WPC, so a Neptune WPC referee is assigned."),
    ("wp-2", "wrong_retrieval", "b", "retrieve_rules", "REG-U18-4.2", "publish_fixtures",
     "The rules search returns the under-18 rest-day rule for a senior league."),
    ("wp-3", "plan_error", "a", "plan_rounds", "M5: Neptune WPC v Orcas", "publish_fixtures",
     "The round-robin plan repeats the first pairing and leaves two pairings out."),
    ("wp-4", "truncated_result", "b", "fetch_pool_bookings", "Uni Aquatics", "check_capacity",
     "The pool booking lookup for the last venue answers only its first two free slots."),
    ("wp-5", "lossy_parsing", "a", "parse_plan", '"venue": "Eastside"', "check_venues",
     "The plan parser keeps only the first word of multi-word venue names."),
]
