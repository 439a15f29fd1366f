"""Swiss chess tournament pairing agent (OpenTelemetry + OpenInference spans, imported from OTLP/JSON)."""
from __future__ import annotations

import json
import re

from .kit import active
from .routes import read_op

NAME = "swiss-pairing-agent"
ROUTE = "otlp"
DOMAIN = "chess tournament pairings"
SHAPE = "round request -> standings -> withdrawals -> filter -> pairing LLM -> parse -> arbiter sub-agent (brief, head-to-head loop, repair) -> colours loop -> record (state) -> boards -> publish"
SYSTEM = "You are a FIDE arbiter's pairing assistant. Answer in JSON only."

# rounds 1-3 (1-based seats in the standings order): 1-5 2-7 3-4 6-8 | 1-6 2-5 3-8 4-7 | 1-7 2-8 3-5 4-6
_OPP = {1: [5, 6, 7], 2: [7, 5, 8], 3: [4, 8, 5], 4: [3, 7, 6], 5: [1, 2, 3], 6: [8, 1, 4], 7: [2, 4, 1], 8: [6, 3, 2]}
_COL = {1: "WBB", 2: "BWW", 3: "WBW", 4: "BWB", 5: "WBW", 6: "BWB", 7: "WBW", 8: "BWB"}
_SCORE = {1: 3.0, 2: 2.5, 3: 2.0, 4: 2.0, 5: 1.5, 6: 1.5, 7: 1.0, 8: 1.0}


def _event(event, rnd, names, ratings, withdrawn=None, seed=0):
    ids = {i: f"P{seed + i:02d}" for i in range(1, 9)}
    players = [{"id": ids[i], "name": names[i - 1], "score": _SCORE[i], "rating": ratings[i - 1], "colours": _COL[i],
                "opponents": [ids[o] for o in _OPP[i]]} for i in range(1, 9)]
    out = {"event": event, "round": rnd, "players": players, "withdrawn": []}
    if withdrawn:
        players.append({"id": f"P{seed + 9:02d}", "name": withdrawn, "score": 0.5, "rating": 1710, "colours": "WB",
                        "opponents": []})
        out["withdrawn"] = [f"P{seed + 9:02d}"]
    return out


INPUTS = {
    "northgate": _event("NORTHGATE-OPEN-2026", 4, ["Adams, Ruth", "Kaur, Simran", "Chen, Li", "Brown, Tom", "Novak, Eva",
                                                   "Silva, Joao", "Ibrahim, Musa", "Chen, Wei"],
                        [2210, 2180, 2120, 2090, 2040, 1990, 1950, 1900], withdrawn="Okafor, Ade"),
    "riverside": _event("RIVERSIDE-RAPID-2026", 4, ["Moreau, Anne", "O'Neill, Sean", "Patel, Dev", "Lind, Karin", "Rossi, Marco",
                                                    "Tanaka, Yui", "Walsh, Ciara", "Hughes, Owen"],
                        [2300, 2250, 2175, 2160, 2080, 2010, 1975, 1880], seed=20),
    "r1": _event("HARBOURSIDE-CUP-2026", 4, ["Berg, Nils", "Costa, Ana", "Dubois, Luc", "Evans, Gwen", "Fischer, Jan",
                                             "Garcia, Lola", "Holm, Ida", "Ito, Ken"],
                 [2050, 2020, 1985, 1960, 1940, 1900, 1875, 1850], withdrawn="Jones, Alf", seed=40),
    "r2": _event("CITY-LEAGUE-R4", 4, ["Kowal, Piotr", "Lopez, Rita", "Mills, Gary", "Nagy, Zsofi", "Owen, Beth",
                                       "Park, Min", "Quinn, Rory", "Reyes, Tess"],
                 [2400, 2350, 2290, 2240, 2200, 2150, 2100, 2050], seed=60),
    "r3": _event("SPRING-SWISS-2026", 4, ["Sato, Aki", "Torres, Luis", "Ueda, Rin", "Vega, Paz", "Weber, Uwe",
                                          "Xu, Ming", "Young, Amy", "Zorn, Felix"],
                 [1880, 1860, 1820, 1800, 1790, 1750, 1720, 1700], withdrawn="Abbott, Ray", seed=70),
    "r4": _event("COUNTY-CHAMPS-2026", 4, ["Baker, Liam", "Cole, Nina", "Drake, Sam", "Ellis, Jo", "Ford, Max",
                                           "Gray, Ivy", "Hale, Ben", "Irwin, Meg"],
                 [2120, 2100, 2070, 2030, 2000, 1960, 1930, 1890], seed=80),
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    dict(id="zb_chess_1", fault="ch1", kind="off_by_one", input="riverside", root=("compute_board_numbers", 1),
         failure=("publish_pairings", 1),
         description="Board numbers are counted from zero, so the published list has a board 0."),
    dict(id="zb_chess_2", fault="ch2", kind="wrong_tool_args", input="northgate", root=("fetch_withdrawals", 1),
         failure=("publish_pairings", 1),
         description="The withdrawals query asks for last year's event id, so a withdrawn player stays in the pairing pool."),
    dict(id="zb_chess_3", fault="ch3", kind="subagent_wrong_entity", input="northgate", root=("brief_arbiter", 1),
         failure=("publish_pairings", 1),
         description="The arbiter sub-agent is briefed with the other Chen's player id, so it checks the wrong head-to-head and misses a rematch."),
    dict(id="zb_chess_4", fault="ch4", kind="hallucinated_value", input="northgate", root=("assign_colours", 1),
         failure=("publish_pairings", 1),
         description="The colour model asserts a colour history the standings do not hold and gives the top seed a third black in a row."),
    dict(id="zb_chess_5", fault="ch5", kind="swallowed_error", input="riverside", root=("parse_pairings", 1),
         failure=("publish_pairings", 1),
         description="The pairing parser skips a line it cannot match (a name with an apostrophe) instead of falling back, leaving a pair unpublished."),
]


def task(inp: dict) -> str:
    return f"pair round {inp['round']} of {inp['event']}"


def _standings(event: str, after_round: int) -> dict:
    inp = next(v for v in INPUTS.values() if v["event"] == event)
    return {"event": event, "after_round": after_round, "players": inp["players"]}


def _withdrawals(event: str) -> dict:
    inp = next((v for v in INPUTS.values() if v["event"] == event), None)
    return {"event": event, "withdrawn": inp["withdrawn"] if inp else []}


def _active(players: list, withdrawn: list) -> list:
    return sorted([p for p in players if p["id"] not in withdrawn], key=lambda p: (-p["score"], -p["rating"]))


def _parse_pairings(text: str) -> list:
    strict = re.compile(r"^\d+\. [A-Za-z ,.-]+ \((P\d+)\) - [A-Za-z ,.-]+ \((P\d+)\)$")
    loose = re.compile(r"\((P\d+)\).*\((P\d+)\)")
    pairs = []
    for line in text.splitlines():
        try:
            m = strict.match(line)
            if not m:
                raise ValueError(f"unrecognised pairing line: {line}")
            pairs.append([m.group(1), m.group(2)])
        except ValueError:
            if active("ch5"):
                continue
            m = loose.search(line)
            if m:
                pairs.append([m.group(1), m.group(2)])
    return pairs


def _head_to_head(players: list):
    def look(white: str, black: str) -> dict:
        p = next(x for x in players if x["id"] == white)
        return {"players": [white, black], "previous_games": 1 if black in p["opponents"] else 0}
    return look


def _boards(pairs: list) -> list:
    start = 0 if active("ch1") else 1
    return [{"board": i, "white": w, "black": b} for i, (w, b) in enumerate(pairs, start=start)]


def _publish(event: str, rnd: int, boards: list, players: list, withdrawn: list, bye: str | None) -> dict:
    by_id = {p["id"]: p for p in players}
    nums = [b["board"] for b in boards]
    if nums != list(range(1, len(boards) + 1)):
        raise Rejected(f"400 Bad Request: board numbers must run 1..{len(boards)}, got {nums}")
    seen = [x for b in boards for x in (b["white"], b["black"])] + ([bye] if bye else [])
    for pid in seen:
        if pid in withdrawn:
            raise Rejected(f"409 Conflict: player {pid} ({by_id[pid]['name']}) withdrew before round {rnd} and cannot be "
                           "paired or given a bye")
    for p in players:
        if p["id"] not in withdrawn and p["id"] not in seen:
            raise Rejected(f"422 Unprocessable Entity: player {p['id']} ({p['name']}) has no pairing and no bye in round {rnd}")
    for b in boards:
        if b["black"] in by_id[b["white"]]["opponents"]:
            raise Rejected(f"422 Unprocessable Entity: board {b['board']} {by_id[b['white']]['name']} v "
                           f"{by_id[b['black']]['name']} is a rematch")
        for pid, c in ((b["white"], "W"), (b["black"], "B")):
            hist = by_id[pid]["colours"] + c
            if hist.endswith(c * 3):
                raise Rejected(f"422 Unprocessable Entity: {by_id[pid]['name']} would have "
                               f"{'white' if c == 'W' else 'black'} in three consecutive rounds")
    return {"status": 201, "published": f"{event}/round-{rnd}", "boards": len(boards)}


class PairingsRejected(Exception):
    pass


Rejected = PairingsRejected


def policy(request):
    op, p = read_op(request)
    if op == "propose_pairings":
        pl = p["players"]
        lines = [f"{i // 2 + 1}. {pl[i]['name']} ({pl[i]['id']}) - {pl[i + 1]['name']} ({pl[i + 1]['id']})"
                 for i in range(0, len(pl) - 1, 2)]
        return json.dumps({"pairings": "\n".join(lines), "bye": pl[-1]["id"] if len(pl) % 2 else None})
    if op == "brief_arbiter":
        names = {x["id"]: x["name"] for x in p["players"]}
        checks = [list(pair) for pair in p["pairs"]]
        if active("ch3"):
            alias = {}
            for a in names:
                for b in names:
                    if a != b and names[a].split(",")[0] == names[b].split(",")[0]:
                        alias.setdefault(a, b)
            first = next(a for a in sorted(alias) if any(a in c for c in checks))
            checks = [[alias[x] if x == first else x for x in c] for c in checks]
        return json.dumps({"task": "check head-to-head for each pair", "checks": checks})
    if op == "repair_pairing":
        pairs = [list(x) for x in p["pairs"]]
        i = p["index"]
        j = i + 1 if i + 1 < len(pairs) else i - 1
        pairs[i][1], pairs[j][1] = pairs[j][1], pairs[i][1]
        return json.dumps({"pairs": pairs, "note": f"swapped opponents of boards {i + 1} and {j + 1}"})
    if op == "assign_colours":
        a, b = p["a"], p["b"]
        ca, cb = a["colours"], b["colours"]
        if active("ch4") and a["colours"].endswith("BB"):
            ca = "WBWW"
        def due_white(c):
            return 1 if c.endswith("BB") else (-1 if c.endswith("WW") else 0)
        key_a = (due_white(ca), -ca.count("W"), a["rating"])
        key_b = (due_white(cb), -cb.count("W"), b["rating"])
        white, black = (a, b) if key_a >= key_b else (b, a)
        return json.dumps({"white": white["id"], "black": black["id"],
                           "history": {a["id"]: ca, b["id"]: cb}})
    raise ValueError(op)


def flow(h, inp: dict) -> dict:
    req = h.step("read_round_request", "input", lambda request: request, request={"event": inp["event"], "round": inp["round"]})
    st = h.tool("fetch_standings", {"event": req["event"], "after_round": req["round"] - 1}, _standings)
    event_for_query = req["event"].replace("2026", "2025") if active("ch2") else req["event"]
    wd = h.tool("fetch_withdrawals", {"event": event_for_query}, _withdrawals)
    pool = h.step("filter_active_players", "other", _active, players=st["players"], withdrawn=wd["withdrawn"])
    prop = h.llm("propose_pairings", {"round": req["round"], "players": pool}, SYSTEM)
    pairs = h.step("parse_pairings", "parse", _parse_pairings, text=prop["pairings"])
    with h.sub("arbiter_check", round=req["round"]) as box:
        brief = h.llm("brief_arbiter", {"pairs": pairs, "players": pool}, SYSTEM)
        look = _head_to_head(st["players"])
        for i, (a, b) in enumerate(brief["checks"]):
            res = h.tool("lookup_head_to_head", {"white": a, "black": b}, look)
            if res["previous_games"]:
                pairs = h.llm("repair_pairing", {"pairs": pairs, "index": i}, SYSTEM)["pairs"]
        box["result"] = pairs
    by_id = {x["id"]: x for x in st["players"]}
    coloured = []
    for a, b in pairs:
        c = h.llm("assign_colours", {"a": by_id[a], "b": by_id[b]}, SYSTEM)
        coloured.append([c["white"], c["black"]])
    h.remember("record_round_pairings", "round_pairings", lambda pairs, bye: {"pairs": pairs, "bye": bye},
               pairs=coloured, bye=prop["bye"])
    saved = h.recall("round_pairings")
    boards = h.step("compute_board_numbers", "other", _boards, pairs=saved["pairs"])
    return h.tool("publish_pairings", {"event": req["event"], "rnd": req["round"], "boards": boards,
                                       "players": st["players"], "withdrawn": inp["withdrawn"], "bye": saved["bye"]}, _publish)
