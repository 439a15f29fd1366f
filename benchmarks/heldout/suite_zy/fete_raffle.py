"""Village fete raffle (OTLP, OpenInference spans): ledger retrieval, cash tin reconciliation, sold ranges memory,
draw plan model, draw, holder lookups, prize desk sub-agent, announcement model, publish."""

from __future__ import annotations

import json
import random
from pathlib import Path

from .common import Case, OtlpTrace, last_user
from .kit import active

AGENT, ROUTE, DOMAIN = "fete-raffle-draw", "otlp", "village fete raffle"
SHAPE = "lottery registration -> ledger retrieval -> cash tin per seller -> sold-ranges memory -> draw plan LLM -> draw -> holder lookup per ticket -> prize desk sub-agent (LLM + reserve tool) -> announcement LLM -> publish"

LEDGERS = {
    ("Little Brampton", "raffle"): [("Mrs Hale", "A", 1, 120), ("Vicar Ames", "A", 121, 200), ("Scout hut", "B", 1, 150), ("Post office", "B", 151, 220)],
    ("Little Brampton", "tombola"): [("Tombola stall", "T", 1, 300)],
    ("Upper Wick", "raffle"): [("Mr Pryce", "C", 1, 100), ("Church hall", "C", 101, 260), ("Pub", "D", 1, 90)],
    ("Upper Wick", "tombola"): [("Tombola stall", "U", 1, 180)],
    ("Oakley Green", "raffle"): [("WI stall", "E", 1, 140), ("School gate", "E", 141, 230)],
    ("Ashby Parva", "raffle"): [("Cricket club", "F", 1, 110), ("Shop", "F", 111, 180), ("Surgery", "G", 1, 60)],
    ("Fenby", "raffle"): [("Parish council", "H", 1, 95), ("Garden centre", "H", 96, 210)],
    ("Nether Stowe", "raffle"): [("Village hall", "K", 1, 175)],
}
PRIZES = {"Little Brampton": [("Hamper", 80), ("Garden voucher", 50), ("Cake", 15)],
          "Upper Wick": [("Meal for two", 60), ("Wine", 25), ("Jam set", 10)],
          "Oakley Green": [("Bike service", 45), ("Plant", 12)],
          "Ashby Parva": [("Hamper", 70), ("Cinema tickets", 30), ("Chocolates", 8)],
          "Fenby": [("Spa voucher", 90), ("Books", 20)],
          "Nether Stowe": [("Hamper", 65), ("Teapot", 18)]}
PRICE = 1.0

INPUTS = {
    "brampton": {"fete": "Little Brampton", "seed": 1906},
    "wick": {"fete": "Upper Wick", "seed": 2211},
    "r1": {"fete": "Oakley Green", "seed": 31},
    "r2": {"fete": "Ashby Parva", "seed": 77},
    "r3": {"fete": "Fenby", "seed": 405},
    "r4": {"fete": "Nether Stowe", "seed": 12},
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    Case("fete-1", "wrong_retrieval", "fetch_ticket_ledger", 1, "publish_winners", 1, "brampton",
         "The ledger search returns the tombola ledger instead of the raffle ledger."),
    Case("fete-2", "swallowed_error", "reconcile_cash_tin", 2, "publish_winners", 1, "wick",
         "A cash tin that fails to reconcile is logged away and counted as fully paid."),
    Case("fete-3", "bad_memory_write", "remember_sold_ranges", 1, "publish_winners", 1, "brampton",
         "The memory write keeps only book A's ranges, so book B tickets are missing from the pool drawn from."),
    Case("fete-4", "wrong_tool_args", "draw_plan", 1, "publish_winners", 1, "wick",
         "The draw plan model asks the draw tool for numbers with the seed and count swapped."),
    Case("fete-5", "hallucinated_value", "write_announcement", 1, "publish_winners", 1, "brampton",
         "The announcement model states a prize value that is in no prize record it read."),
]


def policy(request):
    p = last_user(request)
    d = json.loads(p.split("\n", 1)[1])
    if p.startswith("PLAN"):
        n = len(d["prizes"])
        args = {"count": n, "seed": d["seed"], "pool": d["pool_size"]}
        if active("fete-4"):
            args = {"count": d["seed"] % 7 + n + 1, "seed": n, "pool": d["pool_size"]}
        return json.dumps({"order": [x[0] for x in d["prizes"]], "draw": args})
    if p.startswith("MATCH"):
        return json.dumps([{"ticket": w["ticket"], "holder": w["holder"], "prize": pr[0]} for w, pr in zip(d["winners"], d["prizes"])])
    if p.startswith("ANNOUNCE"):
        lines = []
        for i, m in enumerate(d["matches"]):
            value = dict((a, b) for a, b in d["prizes"])[m["prize"]]
            if active("fete-5") and i == 0:
                value = 150
            lines.append(f"{m['ticket']} - {m['holder']} - {m['prize']} (worth £{value})")
        return "\n".join(lines)
    return "{}"


class PublishRefused(Exception):
    pass


def record(inp: dict, path: Path, base_url: str) -> None:
    fete, seed = inp["fete"], inp["seed"]
    t = OtlpTrace(AGENT)
    try:
        with t.span(AGENT, "AGENT", {"fete": fete, "seed": seed}, **{"agent.name": AGENT}) as root:
            with t.span("check_lottery_registration", "TOOL", {"society": f"{fete} Fete Committee"}, **{"tool.name": "check_lottery_registration"}) as sp:
                t.output(sp, {"society": f"{fete} Fete Committee", "registration": f"SL-{seed % 1000:03d}", "valid_until": "2027-12-31"})
            with t.span("fetch_ticket_ledger", "RETRIEVER", {"fete": fete, "ledger": "raffle"}) as sp:
                ledger = LEDGERS[(fete, "tombola" if active("fete-1") else "raffle")]
                rows = [{"seller": s, "book": b, "first": lo, "last": hi} for s, b, lo, hi in ledger]
                t.output(sp, rows)
            paid = {}
            for r in rows:
                sold = r["last"] - r["first"] + 1
                for attempt in (1, 2):
                    try:
                        with t.span("reconcile_cash_tin", "TOOL", {"seller": r["seller"], "tickets": sold, "attempt": attempt},
                                    **{"tool.name": "reconcile_cash_tin"}) as sp:
                            try:
                                if fete == "Upper Wick" and r["seller"] == "Church hall" and attempt == 1:
                                    raise TimeoutError("cash counting scale did not answer within 5 s")
                                status = {"seller": r["seller"], "counted": sold * PRICE, "paid_tickets": sold}
                            except TimeoutError:
                                if not active("fete-2"):
                                    raise
                                status = {"seller": r["seller"], "counted": 0.0, "paid_tickets": sold}
                            t.output(sp, status)
                        break
                    except TimeoutError:
                        continue
                paid[r["seller"]] = status
            with t.span("remember_sold_ranges", "CHAIN", rows) as sp:
                keep = [r for r in rows if r["book"] == rows[0]["book"]] if active("fete-3") else rows
                memory = {"ranges": [[r["book"], r["first"], r["last"]] for r in keep]}
                t.output(sp, memory)
            pool = [f"{b}{n:03d}" for b, lo, hi in memory["ranges"] for n in range(lo, hi + 1)]
            prizes = PRIZES[fete]
            plan = json.loads(t.llm("draw_plan", base_url, "You plan raffle draws.", "PLAN\n" + json.dumps({"prizes": prizes, "seed": seed, "pool_size": len(pool)})))
            with t.span("draw_numbers", "TOOL", plan["draw"], **{"tool.name": "draw_numbers"}) as sp:
                rng = random.Random(plan["draw"]["seed"])
                picks = sorted(rng.sample(range(len(pool)), plan["draw"]["count"]))
                tickets = [pool[i] for i in picks][: plan["draw"]["count"]]
                t.output(sp, {"tickets": tickets})
            winners = []
            for tk in tickets:
                with t.span("lookup_ticket_holder", "TOOL", {"ticket": tk}, **{"tool.name": "lookup_ticket_holder"}) as sp:
                    holder = {"ticket": tk, "holder": f"holder of {tk}", "phone_last4": str(sum(map(ord, tk)) * 13 % 10000).zfill(4)}
                    t.output(sp, holder)
                    winners.append(holder)
            with t.span("prize_desk", "AGENT", {"winners": len(winners)}, **{"agent.name": "prize_desk"}) as desk:
                matches = json.loads(t.llm("match_prizes", base_url, "You match winners to prizes in draw order.",
                                           "MATCH\n" + json.dumps({"winners": winners, "prizes": prizes}), agent="prize_desk"))
                for m in matches:
                    with t.span("reserve_prize", "TOOL", m, **{"tool.name": "reserve_prize", "agent.name": "prize_desk"}) as sp:
                        t.output(sp, {"prize": m["prize"], "reserved_for": m["ticket"]})
                t.output(desk, matches)
            text = t.llm("write_announcement", base_url, "You write the winners list for the fete tannoy.",
                         "ANNOUNCE\n" + json.dumps({"matches": matches, "prizes": prizes}))
            with t.span("publish_winners", "TOOL", {"fete": fete, "announcement": text}, **{"tool.name": "publish_winners"}) as sp:
                sold_all = {f"{b}{n:03d}" for s, b, lo, hi in LEDGERS[(fete, "raffle")] for n in range(lo, hi + 1)}
                for m in matches:
                    if m["ticket"] not in sold_all:
                        raise PublishRefused(f"parish noticeboard API 422: ticket {m['ticket']} is not in the {fete} raffle ledger")
                for s, st in paid.items():
                    if st["counted"] < st["paid_tickets"] * PRICE:
                        raise PublishRefused(f"parish noticeboard API 412: cash for {s} counted £{st['counted']:.2f} against {st['paid_tickets']} tickets sold at £{PRICE:.2f}")
                books = {b for _, b, _, _ in LEDGERS[(fete, "raffle")]}
                if set(tk[0] for tk in sold_all) != books or len(pool) != len(sold_all):
                    raise PublishRefused(f"parish noticeboard API 409: draw pool held {len(pool)} tickets, {fete} sold {len(sold_all)}")
                if len(winners) != len(prizes):
                    raise PublishRefused(f"parish noticeboard API 422: {len(winners)} winning tickets drawn for {len(prizes)} prizes")
                values = dict(prizes)
                for line in text.splitlines():
                    name = line.split(" - ")[2].split(" (")[0]
                    worth = int(line.rsplit("£", 1)[1].rstrip(")"))
                    if worth != values[name]:
                        raise PublishRefused(f"parish noticeboard API 422: '{line}' states £{worth}, prize register lists {name} at £{values[name]}")
                t.output(sp, {"published": True, "winners": len(matches)})
            t.output(root, text)
    except PublishRefused:
        pass
    t.write(path)
