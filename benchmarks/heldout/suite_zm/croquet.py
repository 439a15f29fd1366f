"""Croquet club tournament secretary (OpenTelemetry/OpenInference spans): entries and handicaps, model seeding,
round-by-round pairing loop with lawn bookings, lawn plan memory, notice drafting, draw publication."""
from __future__ import annotations

import json

from openai import OpenAI

from .common import Case, last_user_json, policy
from .kit import active
from .otel import Recorder

NAME, ROUTE, DOMAIN = "croquet-secretary", "otlp", "croquet club"
SHAPE = "AGENT span: fetch_entries (TOOL) -> member_handicaps (TOOL) -> seed_players (LLM) -> parse_seeding -> draw-maker AGENT (pair_round + book_lawn loop) -> check_entries -> club_archive (RETRIEVER) -> draft_notice (LLM) -> save_lawn_plan -> publish_draw (TOOL)"

PLAYERS = ["Abbott", "Baines", "Carrow", "Dunmore", "Ellery", "Fenwick", "Garside", "Hollis", "Ingram", "Jessop",
           "Kettle", "Lomax", "Merritt", "Norcott"]
HCP = {p: (i * 5) % 14 - 2 for i, p in enumerate(PLAYERS)}
INPUTS = {
    "A": {"event": "Summer Handicap", "date": "2027-06-12", "players": 10, "lawns": 3},
    "B": {"event": "Autumn Doubles Plate", "date": "2027-09-18", "players": 12, "lawns": 4},
    "R1": {"event": "Spring Opener", "date": "2027-04-10", "players": 8, "lawns": 2},
    "R2": {"event": "Members Cup", "date": "2027-07-03", "players": 14, "lawns": 4},
    "R3": {"event": "Veterans Day", "date": "2027-08-21", "players": 6, "lawns": 3},
    "R4": {"event": "Club Championship", "date": "2027-10-09", "players": 12, "lawns": 3},
}
REFS = ["R1", "R2", "R3", "R4"]

CASES = [
    Case("zm_croq_1", "stale_data", "B", ("member_handicaps", 1, "tool"), ("publish_draw", 1),
         "member_handicaps answers from last season's register, before the spring handicap changes", "croq.stale"),
    Case("zm_croq_2", "truncated_result", "A", ("fetch_entries", 1, "tool"), ("check_entries", 1),
         "fetch_entries returns the first eight entries only", "croq.trunc"),
    Case("zm_croq_3", "context_pollution", "A", ("club_archive", 1, "retrieval"), ("publish_draw", 1),
         "club_archive puts last year's notice into the drafting context and its date is carried into the notice", "croq.pollute"),
    Case("zm_croq_4", "bad_memory_write", "B", ("save_lawn_plan", 1, "other"), ("publish_draw", 1),
         "save_lawn_plan writes the plan of the first round in place of the full plan", "croq.memory"),
    Case("zm_croq_5", "off_by_one", "B", ("pair_round", 2, "other"), ("publish_draw", 1),
         "the second round's rotation shifts by the round index plus one and repeats a first-round pairing", "croq.obo"),
]


@policy("croq_seed")
def _seed(msgs):
    q = last_user_json(msgs)
    order = sorted(q["handicaps"], key=lambda p: (q["handicaps"][p], p))
    return json.dumps({"seeds": order})


@policy("croq_notice")
def _notice(msgs):
    q = last_user_json(msgs)
    date = q["archive"][0]["date"] if q["archive"] else q["date"]
    return json.dumps({"title": f"{q['event']} draw", "date": date, "rounds": q["rounds"]})


def _rounds(seeds, r, shift):
    """Circle-method round r: fix the first seed, rotate the rest."""
    rest = seeds[1:]
    k = (r + shift) % len(rest)
    rot = [seeds[0]] + rest[-k:] + rest[:-k] if k else list(seeds)
    half = len(rot) // 2
    return [[rot[i], rot[-1 - i]] for i in range(half)]


def record(key, out, base_url):
    client = OpenAI(base_url=base_url, api_key="local", max_retries=0)
    ev = INPUTS[key]
    rec = Recorder("croquet-club")
    memory: dict = {}
    try:
        with rec.span(NAME, "AGENT", input=ev, **{"agent.name": NAME}) as top:
            with rec.span("fetch_entries", "TOOL", input={"event": ev["event"]}, **{"tool.name": "fetch_entries"}) as s:
                names = PLAYERS[:ev["players"]]
                if active("croq.trunc"):
                    names = names[:8]
                s["out"] = {"entries": [{"player": n, "paid": True} for n in names]}
            entries = [e["player"] for e in s["out"]["entries"]]
            with rec.span("member_handicaps", "TOOL", input={"players": entries}, **{"tool.name": "member_handicaps"}) as s:
                h = {p: HCP[p] + (2 if active("croq.stale") and i % 3 == 0 else 0) for i, p in enumerate(entries)}
                s["out"] = {"handicaps": h, "register": "2026" if active("croq.stale") else "2027"}
            hcp = s["out"]["handicaps"]
            seeding = rec.llm(client, "seed_players", "club-sec-1", "croq_seed", "You seed croquet draws.",
                              {"event": ev["event"], "handicaps": hcp})
            with rec.span("parse_seeding", "CHAIN", input=seeding) as s:
                seeds = [p.strip() for p in seeding["seeds"]]
                s["out"] = {"seeds": seeds}
            rounds, lawn_plan = [], []
            with rec.span("draw-maker", "AGENT", input={"seeds": seeds, "lawns": ev["lawns"]}, **{"agent.name": "draw-maker"}) as dm:
                for r in range(3):
                    with rec.span("pair_round", "CHAIN", input={"round": r + 1, "seeds": seeds}) as s:
                        shift = 1 if active("croq.obo") and r == 1 else 0
                        pairs = _rounds(seeds, r, shift)
                        s["out"] = {"round": r + 1, "pairs": pairs}
                    rounds.append(pairs)
                    for i, p in enumerate(pairs):
                        with rec.span("book_lawn", "TOOL", input={"round": r + 1, "match": p, "lawn": i % ev["lawns"] + 1},
                                      **{"tool.name": "book_lawn"}) as s:
                            s["out"] = {"round": r + 1, "lawn": i % ev["lawns"] + 1, "match": p, "slot": f"R{r + 1}-{i // ev['lawns'] + 1}"}
                            lawn_plan.append(s["out"])
                dm["out"] = {"rounds": len(rounds), "bookings": len(lawn_plan)}
            with rec.span("check_entries", "CHAIN", input={"entries": entries}) as s:
                ledger = ev["players"]
                if len(entries) != ledger:
                    raise RuntimeError(f"entry check: {len(entries)} entries listed, fee ledger shows {ledger} paid entries for {ev['event']}")
                s["out"] = {"ok": True, "count": len(entries)}
            with rec.span("club_archive", "RETRIEVER", input={"query": f"{ev['event']} notice"}) as s:
                docs = [{"event": ev["event"], "date": ev["date"][:4].replace("2027", "2026") + ev["date"][4:], "text": "Draw notice"}] \
                    if active("croq.pollute") else []
                s["out"] = {"documents": docs}
            notice = rec.llm(client, "draft_notice", "club-sec-1", "croq_notice", "You write the club's draw notices.",
                             {"event": ev["event"], "date": ev["date"], "rounds": len(rounds), "archive": docs})
            with rec.span("save_lawn_plan", "CHAIN", input={"bookings": len(lawn_plan)}) as s:
                memory["lawn_plan"] = [b for b in lawn_plan if b["round"] == 1] if active("croq.memory") else list(lawn_plan)
                s["out"] = {"saved": "lawn_plan"}
            plan = memory["lawn_plan"]
            with rec.span("publish_draw", "TOOL", input={"notice": notice, "rounds": rounds, "lawn_plan": plan, "handicaps": hcp},
                          **{"tool.name": "publish_draw"}) as s:
                problems = []
                if notice["date"] != ev["date"]:
                    problems.append(f"notice date {notice['date']} differs from the fixture date {ev['date']}")
                seen = set()
                for rp in rounds:
                    for a, b in rp:
                        if frozenset((a, b)) in seen:
                            problems.append(f"{a} v {b} is drawn twice")
                        seen.add(frozenset((a, b)))
                if len(plan) != sum(len(x) for x in rounds):
                    problems.append(f"lawn plan covers {len(plan)} matches, draw has {sum(len(x) for x in rounds)}")
                off = [p for p in hcp if hcp[p] != HCP[p]]
                if off:
                    problems.append(f"handicap of {off[0]} is {HCP[off[0]]} in the register, draw uses {hcp[off[0]]}")
                if problems:
                    raise RuntimeError("club site rejected the draw (400): " + "; ".join(problems))
                s["out"] = {"published": f"/draws/{ev['date']}"}
            top["out"] = s["out"]
    except RuntimeError:
        pass
    rec.write(out)
