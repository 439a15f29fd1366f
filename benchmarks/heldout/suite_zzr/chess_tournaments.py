"""A chess club's tournaments (route: otlp, OpenTelemetry SDK + OpenInference, OTLP/JSON file)."""

from __future__ import annotations

import json

from openai import OpenAI

import kit
from common import chat_policy, otel, span_io, task_prompt, write_otlp

NAME = "chess-club-tournaments"
ROUTE = "otlp"
DOMAIN = "chess club: tournaments"
SHAPE = "OTel spans: entry form, extract LLM, parse, per-player rating lookup loop with retry, section check, rules retrieval, pairing sub-agent (seed, pair tool, LLM board order), round plan LLM, fee collection, announcement LLM, notice, validator"

RATINGS = {"Amir Sadeghi": 1912, "Beth Collier": 1744, "Chen Wei": 1688, "Dara Flynn": 1795, "Elif Kaya": 1560, "Frank Osei": 1822,
           "Greta Lund": 1631, "Hugo Barr": 1702, "Ines Costa": 1599, "Jonas Weber": 2010, "Kofi Mensah": 1655, "Lara Novak": 1779, "Maya Rossi": 1612}
LAST_LIST = dict(RATINGS, **{"Dara Flynn": 1762, "Hugo Barr": 1785, "Frank Osei": 1790})
EVENTS = {
    "Spring Congress": {"rounds": 5, "time_control": "90+30", "fee": 28.0, "sections": {"Open": 0, "Major U1800": 1800}},
    "Summer Rapidplay": {"rounds": 7, "time_control": "15+10", "fee": 15.0, "sections": {"Open": 0, "Minor U1700": 1700}},
    "Autumn Weekender": {"rounds": 5, "time_control": "90+30", "fee": 30.0, "sections": {"Open": 0, "Major U1800": 1800}},
}
RULES = {"Spring Congress": "Standard play, 90 minutes + 30 s per move; 5 rounds; FIDE laws; default time 30 min.",
         "Spring Rapid": "Rapidplay, 15 minutes + 10 s per move; 7 rounds; default time 15 min.",
         "Summer Rapidplay": "Rapidplay, 15 minutes + 10 s per move; 7 rounds; default time 15 min.",
         "Autumn Weekender": "Standard play, 90 minutes + 30 s per move; 5 rounds; FIDE laws; default time 30 min."}

INPUTS = [
    {"event": "Spring Congress", "section": "Major U1800", "players": ["Beth Collier", "Chen Wei", "Dara Flynn", "Elif Kaya", "Greta Lund", "Hugo Barr"]},
    {"event": "Summer Rapidplay", "section": "Minor U1700", "players": ["Chen Wei", "Elif Kaya", "Greta Lund", "Ines Costa", "Kofi Mensah", "Maya Rossi"]},
    {"event": "Autumn Weekender", "section": "Open", "players": ["Amir Sadeghi", "Jonas Weber", "Frank Osei", "Lara Novak", "Beth Collier", "Dara Flynn"]},
    {"event": "Spring Congress", "section": "Open", "players": ["Jonas Weber", "Amir Sadeghi", "Frank Osei", "Hugo Barr", "Kofi Mensah", "Ines Costa"]},
    {"event": "Autumn Weekender", "section": "Major U1800", "players": ["Lara Novak", "Beth Collier", "Greta Lund", "Kofi Mensah", "Chen Wei", "Elif Kaya"]},
    {"event": "Summer Rapidplay", "section": "Open", "players": ["Frank Osei", "Amir Sadeghi", "Ines Costa", "Greta Lund", "Hugo Barr", "Jonas Weber"]},
]

C = "zzr_chess_"
CASES = [
    {"id": C + "01", "input": 0, "fault_kind": "stale_data", "root": ("fetch_rating", 7), "failure": ("validate_tournament", 1),
     "description": "The rating lookup for Hugo Barr answers from the March rating list (1785 instead of the April 1702), so he is seeded second instead of fourth."},
    {"id": C + "02", "input": 5, "fault_kind": "wrong_retrieval", "root": ("retrieve_rules", 1), "failure": ("validate_tournament", 1),
     "description": "The rules retrieval returns the Spring Rapid page for the Summer Rapidplay query, so the round plan and the notice rest on another event's rules."},
    {"id": C + "03", "input": 2, "fault_kind": "plan_error", "root": ("ChatCompletion", 3), "failure": ("validate_tournament", 1),
     "description": "The round planner plans four rounds over the weekend for a five-round congress, dropping the Sunday evening round."},
    {"id": C + "04", "input": 3, "fault_kind": "swallowed_error", "root": ("collect_fees", 1), "failure": ("validate_tournament", 1),
     "description": "The fee collection catches a declined card for one entrant and books the entry as paid with 0 GBP collected."},
    {"id": C + "05", "input": 4, "fault_kind": "subagent_wrong_entity", "root": ("pair_round", 1), "failure": ("validate_tournament", 1),
     "description": "The pairing sub-agent's pair tool is handed the Open section's entry list of the same event instead of the Major's, so round 1 pairs players not entered in the section."},
]


def brain(inp):
    def extract(p):
        return {"event": inp["event"], "section": inp["section"], "players": inp["players"]}

    def board_order(p):
        return {"boards": [{"board": i + 1, "white": w, "black": b} for i, (w, b) in enumerate(p["pairs"])]}

    def plan_rounds(p):
        n = p["rounds"]
        if kit.on(C + "03"):
            n -= 1
        days = ["Saturday", "Saturday", "Sunday", "Sunday", "Sunday", "Sunday", "Sunday"]
        return {"rounds": [{"round": i + 1, "day": days[i]} for i in range(n)]}

    def announce(p):
        return f"{p['event']} {p['section']}: {p['players']} players, {p['rounds']} rounds at {p['time_control']}. Round 1 pairings are posted."

    return chat_policy({"extract": extract, "board_order": board_order, "plan_rounds": plan_rounds, "announce": announce})


class CardDeclined(Exception):
    pass


def record(server, inp, path):
    server.use(brain(inp))
    provider, spans = otel()
    tracer = provider.get_tracer(NAME)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    event = EVENTS[inp["event"]]
    attempts = {"n": 0}

    def ask(task, payload):
        r = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": "You are the tournament controller's assistant. Answer in JSON when asked for data."},
            {"role": "user", "content": task_prompt(task, payload)}])
        return r.choices[0].message.content

    def step(name, kind, value, fn):
        with tracer.start_as_current_span(name) as sp:
            out = fn()
            span_io(sp, kind, value, out)
            return out

    try:
        with tracer.start_as_current_span(NAME) as root:
            span_io(root, "AGENT", {"event": inp["event"], "section": inp["section"]})
            form = step("receive_entries", "CHAIN", {"event": inp["event"]}, lambda: f"{inp['event']} / {inp['section']}: " + ", ".join(inp["players"]))
            raw = ask("extract", {"form": form})
            entry = step("parse_entries", "CHAIN", {"text": raw}, lambda: json.loads(raw))
            rated = []
            for i, name in enumerate(entry["players"]):
                def fetch(name=name, i=i):
                    if name == "Hugo Barr" and kit.on(C + "01"):
                        return {"player": name, "rating": LAST_LIST[name], "list": "2026-03"}
                    return {"player": name, "rating": RATINGS[name], "list": "2026-04"}

                if i == 2:
                    attempts["n"] += 1
                    try:
                        with tracer.start_as_current_span("fetch_rating") as sp:
                            span_io(sp, "TOOL", {"player": name})
                            raise ConnectionError("rating service timed out")
                    except ConnectionError:
                        pass
                rated.append(step("fetch_rating", "TOOL", {"player": name}, fetch))
            limit = event["sections"][entry["section"]]
            eligible = step("check_section", "CHAIN", {"section": entry["section"], "limit": limit},
                            lambda: {"section": entry["section"], "eligible": [r["player"] for r in rated if not limit or r["rating"] < limit]})

            def retrieve():
                key = inp["event"]
                if kit.on(C + "02"):
                    key = "Spring Rapid"
                return {"query": inp["event"], "document": key, "text": RULES[key]}

            rules = step("retrieve_rules", "RETRIEVER", {"query": f"{inp['event']} rules"}, retrieve)
            with tracer.start_as_current_span("pairing_engine") as sub:
                span_io(sub, "AGENT", {"section": entry["section"]})
                seeded = step("seed_players", "CHAIN", {"players": rated},
                              lambda: sorted(rated, key=lambda r: -r["rating"]))

                def pair():
                    names = [r["player"] for r in seeded]
                    if kit.on(C + "05"):
                        other = next(i for i in INPUTS if i["event"] == inp["event"] and i["section"] != inp["section"])
                        names = sorted(other["players"], key=lambda n: -RATINGS[n])
                    half = len(names) // 2
                    return [[names[i], names[i + half]] for i in range(half)]

                pairs = step("pair_round", "TOOL", {"section": entry["section"], "players": [r["player"] for r in seeded]}, pair)
                boards = json.loads(ask("board_order", {"pairs": pairs}))
                span_io(sub, "AGENT", None, boards)
            plan = json.loads(ask("plan_rounds", {"event": inp["event"], "rounds": event["rounds"], "rules": rules["text"]}))

            def collect():
                paid = []
                for r in rated:
                    try:
                        if kit.on(C + "04") and r["player"] == "Kofi Mensah":
                            raise CardDeclined("card declined")
                        paid.append({"player": r["player"], "amount": event["fee"]})
                    except CardDeclined:
                        paid.append({"player": r["player"], "amount": 0.0})
                return {"paid": paid, "total": sum(p["amount"] for p in paid)}

            fees = step("collect_fees", "TOOL", {"players": len(rated), "fee": event["fee"]}, collect)
            text = ask("announce", {"event": inp["event"], "section": entry["section"], "players": len(rated),
                                    "rounds": len(plan["rounds"]), "time_control": rules["text"].split(", ")[1].split(";")[0]})
            step("post_notice", "TOOL", {"board": "club website"}, lambda: {"posted": True, "chars": len(text)})

            def validate():
                not_eligible = [r["player"] for r in rated if r["player"] not in eligible["eligible"]]
                if not_eligible:
                    raise ValueError(f"{not_eligible} rated above the {entry['section']} limit")
                order = [r["rating"] for r in seeded]
                if order != sorted((RATINGS[p] for p in inp["players"]), reverse=True):
                    raise ValueError(f"seeding {order} does not follow the April rating list")
                paired = {p for b in boards["boards"] for p in (b["white"], b["black"])}
                if paired != set(inp["players"]):
                    raise ValueError(f"round 1 pairs {sorted(paired - set(inp['players']))}, not entered in {entry['section']}")
                if len(plan["rounds"]) != event["rounds"]:
                    raise ValueError(f"schedule has {len(plan['rounds'])} rounds, {inp['event']} is a {event['rounds']}-round event")
                if rules["document"] != inp["event"]:
                    raise ValueError(f"rules applied are those of {rules['document']}, not {inp['event']}")
                if abs(fees["total"] - event["fee"] * len(rated)) > 0.01:
                    raise ValueError(f"fees collected {fees['total']} GBP for {len(rated)} entries at {event['fee']} GBP")
                return {"status": "consistent"}

            step("validate_tournament", "CHAIN", {"event": inp["event"], "section": entry["section"]}, validate)
    except ValueError:
        pass
    finally:
        write_otlp(spans, path)
