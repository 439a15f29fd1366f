"""fare-refund-desk: a transit agency's fare-refund desk (otlp route).

OpenTelemetry spans with OpenInference attributes (the openai client instrumented by
openinference-instrumentation-openai), exported as OTLP JSON: the model opens the claim with
parallel tool calls (taps, card profile, service log), the fare class is remembered, the taps are
paired into journeys in a loop, the fare rules retrieved, a delay-checking sub-agent reads the
service log, the model plans the resolution, the refund is computed and the case closed.
"""
from __future__ import annotations

import json
import re

from openai import OpenAI
from opentelemetry.trace import Status, StatusCode  # noqa: F401

from common import Reply, fn_tool, last_user, oi_span, otlp_capture, otlp_tracer, system_text, tool_call, tool_results_chat

NAME = "fare-refund-desk"
ROUTE = "otlp"
DOMAIN = "public transit fare-refund desk"
SHAPE = "AGENT span: tool-choosing model -> 3 parallel tool spans -> memory write -> loop pairing taps -> fare-rule retriever -> delay-checker sub-agent (model) -> planning model -> refund computation -> case-closing tool"
SWITCH = None

FARES = {"adult": {1: 275, 2: 350, 3: 425}, "senior": {1: 135, 2: 175, 3: 210}}  # cents
CARDS = {"6044-1182": {"class": "adult", "history": ["adult"]},
         "6044-2291": {"class": "senior", "history": ["adult", "senior"]},
         "6044-3307": {"class": "adult", "history": ["adult"]},
         "6044-4415": {"class": "adult", "history": ["student", "adult"]},
         "6044-5520": {"class": "senior", "history": ["senior"]}}


def _trips(card, date, legs):
    taps, n = [], 0
    for i, (t_in, z_in, t_out, z_out, charged) in enumerate(legs):
        n += 1
        taps.append({"tap_id": f"T{card[-4:]}-{n:02d}", "time": f"{date}T{t_in}", "zone": z_in, "kind": "in"})
        n += 1
        taps.append({"tap_id": f"T{card[-4:]}-{n:02d}", "time": f"{date}T{t_out}", "zone": z_out, "kind": "out",
                     "charged": charged})
    return taps


INPUTS = [
    {"task": "fare claim 6044-1182 2026-11-20", "card": "6044-1182", "date": "2026-11-20", "route": "12X", "claim": "overcharge",
     "text": "Card 6044-1182 was charged 4.25 on 2026-11-20 on route 12X for a one-zone ride from Pier St."},
    {"task": "fare claim 6044-2291 2026-11-21", "card": "6044-2291", "date": "2026-11-21", "route": "7", "claim": "overcharge",
     "text": "My senior card 6044-2291 was charged the full fare on route 7 on 2026-11-21."},
    {"task": "fare claim 6044-3307 2026-11-19", "card": "6044-3307", "date": "2026-11-19", "route": "12X", "claim": "delay",
     "text": "Card 6044-3307: my 12X bus on 2026-11-19 in the evening was more than half an hour late."},
    {"task": "fare claim 6044-4415 2026-11-22", "card": "6044-4415", "date": "2026-11-22", "route": "31", "claim": "overcharge",
     "text": "Card 6044-4415 charged 3.50 for a one-zone trip on route 31 on 2026-11-22, and the bus was running late too."},
    {"task": "fare claim 6044-5520 2026-11-18", "card": "6044-5520", "date": "2026-11-18", "route": "12X", "claim": "delay",
     "text": "Senior card 6044-5520, route 12X on 2026-11-18 morning, the bus came 22 minutes late."},
]
TAPS = {
    "6044-1182": _trips("6044-1182", "2026-11-20", [("07:50", 1, "08:20", 2, 350), ("12:10", 2, "12:25", 2, 425),
                                                    ("17:40", 2, "18:15", 1, 350)]),
    "6044-2291": _trips("6044-2291", "2026-11-21", [("09:05", 1, "09:30", 1, 275), ("13:00", 1, "13:20", 1, 135)]),
    "6044-3307": _trips("6044-3307", "2026-11-19", [("08:00", 1, "08:40", 2, 350), ("18:05", 2, "19:10", 1, 350)]),
    "6044-4415": _trips("6044-4415", "2026-11-22", [("07:15", 3, "07:35", 3, 350), ("10:00", 3, "10:50", 1, 425),
                                                    ("14:20", 1, "14:40", 1, 275), ("19:00", 1, "19:45", 3, 425)]),
    "6044-5520": _trips("6044-5520", "2026-11-18", [("08:10", 1, "08:45", 1, 135), ("16:30", 1, "16:50", 1, 135)]),
}
JOURNEYS = {(c, t[i]["tap_id"], t[i + 1]["tap_id"]) for c, t in TAPS.items() for i in range(0, len(t), 2)}
SERVICE_LOG = {("12X", "2026-11-19"): [{"trip": "12X-1805", "from": "18:00", "to": "19:15", "delay_min": 38}],
               ("12X", "2026-11-18"): [{"trip": "12X-0805", "from": "08:05", "to": "08:50", "delay_min": 22}],
               ("12", "2026-11-19"): [{"trip": "12-0700", "from": "07:00", "to": "07:40", "delay_min": 4}],
               ("31", "2026-11-22"): [{"trip": "31-1900", "from": "19:00", "to": "19:50", "delay_min": 6}]}
TOOLS = [fn_tool("fetch_taps", "Card taps on a day.", {"card": {"type": "string"}, "date": {"type": "string"}}),
         fn_tool("card_profile", "Fare class of a card.", {"card": {"type": "string"}}),
         fn_tool("service_log", "Recorded delays of a route on a day.", {"route": {"type": "string"}, "date": {"type": "string"}})]


# ------------------------------------------------------------------ the model's side
def brain(request):
    system, user = system_text(request), last_user(request)
    if system.startswith("Open the claim"):
        card = re.search(r"\d{4}-\d{4}", user).group(0)
        date = re.search(r"\d{4}-\d\d-\d\d", user).group(0)
        route = re.search(r"route (\w+)|my (\w+) bus", user)
        route = route.group(1) or route.group(2)
        if SWITCH == "G2":
            route = route.rstrip("X")
        return Reply(tool_calls=(tool_call("fetch_taps", {"card": card, "date": date}),
                                 tool_call("card_profile", {"card": card}),
                                 tool_call("service_log", {"route": route, "date": date})))
    if system.startswith("Check the delays"):
        p = json.loads(user)
        worst = max((e["delay_min"] for e in p["log"]), default=0)
        return json.dumps({"delayed": worst > 15, "minutes": worst,
                           "trip": next((e["trip"] for e in p["log"] if e["delay_min"] == worst), None)})
    if system.startswith("Plan the resolution"):
        p = json.loads(user)
        resolution = "delay" if p["delay"]["delayed"] else "overcharge"
        if SWITCH == "G4" and "late" in p["text"]:
            resolution = "delay"
        return json.dumps({"resolution": resolution, "steps": ["compute_refund", "close_case"]})
    return "I can only handle fare claims."


# ------------------------------------------------------------------ the agent
def execute(inp, server, path):
    tracer = otlp_tracer("fare-refund-desk")
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    with otlp_capture(path):
        try:
            with oi_span(tracer, NAME, "AGENT", {"text": inp["text"]}, **{"metadata": json.dumps({"task": inp["task"]}),
                                                                        "agent.name": NAME}) as root:
                msgs = [{"role": "system", "content": "Open the claim: call the tools you need."},
                        {"role": "user", "content": inp["text"]}]
                ans = client.chat.completions.create(model=server.model, messages=msgs, tools=TOOLS)
                calls = ans.choices[0].message.tool_calls
                msgs.append(ans.choices[0].message.model_dump(exclude_none=True))
                results = {}
                for c in calls:
                    args = json.loads(c.function.arguments)
                    with oi_span(tracer, c.function.name, "TOOL", args, **{"tool.name": c.function.name,
                                                                         "tool.id": c.id}) as s:
                        s.output = results[c.function.name] = TOOL_FNS[c.function.name](**args)
                    msgs.append({"role": "tool", "tool_call_id": c.id, "content": json.dumps(s.output)})
                memory = {}
                with oi_span(tracer, "remember_fare_class", "CHAIN", results["card_profile"]) as s:
                    prof = results["card_profile"]
                    memory["fare_class"] = prof["history"][0] if SWITCH == "G5" else prof["class"]
                    s.output = dict(memory)
                taps = results["fetch_taps"]["taps"]
                trips = []
                for i in range(0, len(taps) - 1, 2):
                    with oi_span(tracer, "pair_trip", "CHAIN", {"tap_in": taps[i], "tap_out": taps[i + 1]}) as s:
                        a, b = taps[i], taps[i + 1]
                        s.output = {"tap_in": a["tap_id"], "tap_out": b["tap_id"], "from": a["time"][-5:],
                                    "to": b["time"][-5:], "zones": abs(b["zone"] - a["zone"]) + 1,
                                    "charged_cents": b.get("charged", 0)}
                        trips.append(s.output)
                with oi_span(tracer, "fare_rules", "RETRIEVER", {"fare_class": memory["fare_class"]}) as s:
                    docs = [{"fare_class": memory["fare_class"], "zones": z, "fare_cents": c}
                            for z, c in FARES[memory["fare_class"]].items()]
                    for k, d in enumerate(docs):
                        s.span.set_attribute(f"retrieval.documents.{k}.document.id", f"fare-{memory['fare_class']}-{d['zones']}")
                        s.span.set_attribute(f"retrieval.documents.{k}.document.content", json.dumps(d))
                    s.output = docs
                with oi_span(tracer, "delay_checker", "AGENT", {"route_log": results["service_log"]},
                             **{"agent.name": "delay_checker"}) as s:
                    rep = client.chat.completions.create(model=server.model, messages=[
                        {"role": "system", "content": "Check the delays: answer JSON delayed, minutes, trip."},
                        {"role": "user", "content": json.dumps({"log": results["service_log"]["entries"]})}])
                    s.output = delay = json.loads(rep.choices[0].message.content)
                rep = client.chat.completions.create(model=server.model, messages=[
                    {"role": "system", "content": "Plan the resolution: answer JSON resolution, steps."},
                    {"role": "user", "content": json.dumps({"text": inp["text"], "delay": delay, "trips": trips})}])
                plan = json.loads(rep.choices[0].message.content)
                with oi_span(tracer, "compute_refund", "CHAIN", {"plan": plan, "trips": trips, "fares": docs}) as s:
                    fare = {d["zones"]: d["fare_cents"] for d in docs}
                    scale = 1 if SWITCH == "G3" else 100
                    if plan["resolution"] == "delay":
                        hit = [t for t in trips if delay["trip"] and t["from"] <= delay["trip"][-4:-2] + ":" + delay["trip"][-2:] <= t["to"]
                               or delay["trip"] and abs(int(t["from"][:2]) - int(delay["trip"][-4:-2])) < 1]
                        amount = sum(t["charged_cents"] for t in hit[:1]) / scale
                    else:
                        amount = sum(max(0, t["charged_cents"] - fare[t["zones"]]) for t in trips) / scale
                    s.output = {"resolution": plan["resolution"], "amount": round(amount, 2)}
                with oi_span(tracer, "close_case", "TOOL", {"card": inp["card"], **s.output, "trips": trips},
                             **{"tool.name": "close_case"}) as c:
                    c.output = close_case(inp, s.output["resolution"], s.output["amount"], trips)
                root.output = c.output
        except ValueError:
            pass


def fetch_taps(card, date):
    rows = TAPS[card]
    start = 1 if SWITCH == "G1" else 0  # the taps API pages from 1
    return {"card": card, "date": date, "taps": rows[start:start + 50]}


def card_profile(card):
    return {"card": card, "class": CARDS[card]["class"], "history": CARDS[card]["history"]}


def service_log(route, date):
    return {"route": route, "date": date, "entries": SERVICE_LOG.get((route, date), [])}


TOOL_FNS = {"fetch_taps": fetch_taps, "card_profile": card_profile, "service_log": service_log}


def close_case(inp, resolution, amount, trips):
    card = inp["card"]
    for t in trips:
        if (card, t["tap_in"], t["tap_out"]) not in JOURNEYS:
            raise ValueError(f"case refused: taps {t['tap_in']} and {t['tap_out']} do not form a journey of card {card}")
    logged = [e for e in SERVICE_LOG.get((inp["route"], inp["date"]), []) if e["delay_min"] > 15]
    if resolution == "delay" and not logged:
        raise ValueError(f"case refused: delay refund asked, but route {inp['route']} shows no delay over 15 min on {inp['date']}")
    if resolution != "delay" and logged:
        raise ValueError(f"case refused: route {inp['route']} logged a {logged[0]['delay_min']} min delay on "
                         f"{inp['date']} ({logged[0]['trip']}); the claim needs a delay refund")
    charged = sum(t["charged_cents"] for t in trips) / 100
    if amount > charged:
        raise ValueError(f"case refused: refund {amount:.2f} exceeds the {charged:.2f} charged on {inp['date']}")
    if resolution == "overcharge":
        fare = FARES[CARDS[card]["class"]]
        due = sum(max(0, t["charged_cents"] - fare[t["zones"]]) for t in trips) / 100
        if abs(due - amount) > 0.001:
            raise ValueError(f"case refused: refund {amount:.2f} differs from the {due:.2f} due at the "
                             f"{CARDS[card]['class']} fare")
    return {"case": f"FR-{card}-{inp['date']}", "resolution": resolution, "refund": amount}


CASES = [
    {"id": "zc61-fare-1", "input": 3, "switch": "G1", "fault_kind": "off_by_one",
     "root": {"name": "fetch_taps", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "close_case", "occurrence": 1},
     "description": "The taps tool starts its page at index 1, dropping the day's first tap-in, so every later tap is paired with the next journey's tap."},
    {"id": "zc61-fare-2", "input": 2, "switch": "G2", "fault_kind": "wrong_tool_args",
     "root": {"name": "ChatCompletion", "occurrence": 1, "kind": "llm"},
     "failure": {"name": "close_case", "occurrence": 1},
     "description": "The claim-opening model calls service_log for route 12 instead of the express route 12X, so the 38 minute delay is never seen and the claim is treated as an overcharge."},
    {"id": "zc61-fare-3", "input": 0, "switch": "G3", "fault_kind": "unit_error",
     "root": {"name": "compute_refund", "occurrence": 1, "kind": "other"},
     "failure": {"name": "close_case", "occurrence": 1},
     "description": "The refund computation leaves the fare-rule amounts in cents, refunding 150.00 instead of 1.50."},
    {"id": "zc61-fare-4", "input": 3, "switch": "G4", "fault_kind": "plan_error",
     "root": {"name": "ChatCompletion", "occurrence": 3, "kind": "llm"},
     "failure": {"name": "close_case", "occurrence": 1},
     "description": "The planning model resolves an overcharge claim as a delay refund because the rider mentions the bus running late, though the delay checker found only 6 minutes."},
    {"id": "zc61-fare-5", "input": 1, "switch": "G5", "fault_kind": "bad_memory_write",
     "root": {"name": "remember_fare_class", "occurrence": 1, "kind": "other"},
     "failure": {"name": "close_case", "occurrence": 1},
     "description": "The fare-class memory stores the first entry of the card's class history (adult) instead of its current class (senior), so no overcharge is found."},
]
