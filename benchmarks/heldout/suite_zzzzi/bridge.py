"""Duplicate bridge club: reads a session's traveller slips, scores and checks them, awards masterpoints and
submits the session to the national body (route: sdk)."""

from __future__ import annotations

import json
import re

import trajdebug

from _common import chat_step, fn_tool, system_of, tool_results

NAME = "bridge-club-scorer"
ROUTE = "sdk"
SWITCH = None

VUL = ["none", "NS", "EW", "both", "NS", "EW", "both", "none", "EW", "both", "none", "NS", "both", "none", "NS", "EW"]
TRICK = {"C": 20, "D": 20, "H": 30, "S": 30, "NT": 30}


def vulnerable(board: int, side: str) -> bool:
    v = VUL[(board - 1) % 16]
    return v == "both" or v == side


def score(board: int, level: int, strain: str, doubled: int, declarer: str, tricks: int) -> int:
    """NS score of one deal (doubled: 0, 1 doubled, 2 redoubled)."""
    side = "NS" if declarer in "NS" else "EW"
    vul = vulnerable(board, side)
    need = level + 6
    mult = (1, 2, 4)[doubled]
    if tricks >= need:
        base = (TRICK[strain] * level + (10 if strain == "NT" else 0)) * mult
        total = base + (50 * doubled)
        total += (500 if vul else 300) if base >= 100 else 50
        if level == 6:
            total += 750 if vul else 500
        if level == 7:
            total += 1500 if vul else 1000
        over = tricks - need
        total += over * (TRICK[strain] if not doubled else (200 if vul else 100) * doubled)
    else:
        down = need - tricks
        if not doubled:
            total = -down * (100 if vul else 50)
        else:
            per = [200, 300, 300] if vul else [100, 200, 200]
            total = -sum(per[min(i, 2)] if (vul or i < 3) else 300 for i in range(down)) * doubled
    return total if side == "NS" else -total


def _slip(board, ns, ew, contract, declarer, tricks):
    m = re.match(r"(\d)(NT|[CDHS])(X{0,2})$", contract)
    ns_score = score(board, int(m.group(1)), m.group(2), len(m.group(3)), declarer, tricks)
    return f"Bd {board} | NS {ns} v EW {ew} | {contract} by {declarer} | {tricks} tricks | NS {ns_score:+d}"


INPUTS = [
    {"task": "score Tuesday pairs, Ilkley BC, section A", "club": "Ilkley BC", "date": "2025-03-04", "section": "A",
     "tables": 4, "slips": [_slip(1, 1, 1, "4S", "N", 10), _slip(2, 2, 4, "3NT", "S", 9), _slip(5, 3, 2, "2HX", "E", 7),
                            _slip(7, 4, 3, "4H", "W", 11), _slip(9, 1, 3, "1NT", "N", 6), _slip(12, 2, 1, "5C", "S", 11)]},
    {"task": "score Thursday pairs, Otley BC, section A", "club": "Otley BC", "date": "2025-03-06", "section": "A",
     "tables": 5, "slips": [_slip(3, 1, 2, "3HX", "E", 8), _slip(4, 2, 5, "6S", "N", 12), _slip(8, 3, 1, "2D", "W", 8),
                            _slip(11, 4, 4, "3NT", "S", 8), _slip(14, 5, 3, "4S", "E", 10)]},
    {"task": "score Friday pairs, Harrogate BC, section B", "club": "Harrogate BC", "date": "2025-03-07",
     "section": "B", "tables": 3, "slips": [_slip(2, 1, 3, "2S", "N", 8), _slip(6, 2, 1, "3NT", "E", 10),
                                            _slip(13, 3, 2, "4HX", "S", 9), _slip(19, 1, 2, "1NT", "W", 7),
                                            _slip(26, 2, 3, "3C", "N", 9)]},
    {"task": "score Monday pairs, Ripon BC, section A", "club": "Ripon BC", "date": "2025-03-10", "section": "A",
     "tables": 4, "slips": [_slip(1, 2, 3, "3S", "S", 9), _slip(4, 3, 4, "4SX", "W", 10), _slip(6, 4, 1, "2NT", "N", 8),
                            _slip(10, 1, 2, "5DX", "E", 10), _slip(15, 2, 2, "4H", "N", 10)]},
    {"task": "score Wednesday pairs, Skipton BC, section A", "club": "Skipton BC", "date": "2025-03-12",
     "section": "A", "tables": 5, "slips": [_slip(2, 5, 1, "3NT", "N", 10), _slip(3, 4, 2, "4S", "E", 9),
                                            _slip(9, 3, 3, "2H", "S", 8), _slip(12, 2, 4, "6NT", "W", 12),
                                            _slip(16, 1, 5, "3DX", "N", 8)]},
]
MOVEMENTS = {"Ilkley BC": (7, 3), "Otley BC": (5, 4), "Harrogate BC": (9, 3), "Ripon BC": (7, 3), "Skipton BC": (5, 4)}
ROSTER_FIRST = ["A. Kaur", "B. Whitely", "C. Moss", "D. Pryce", "E. Lund", "F. Oakes", "G. Hale", "H. Ives",
                "I. Ross", "J. Tate"]

CASES = [
    {"id": "bridge_double_dropped", "input": 1, "switch": "drop_double", "fault_kind": "lossy_parsing",
     "root": ("parse_contract", 1, "parse"), "failure": ("check_scores", 1),
     "description": "the contract parser reads 3HX as 3H, dropping the double, so board 3 scores NS +100 "
                    "against the slip's +200 and the score check stops"},
    {"id": "bridge_pair_invented", "input": 0, "switch": "invent_pair", "fault_kind": "hallucinated_value",
     "root": ("extract_slip", 4, "llm"), "failure": ("check_movement", 1),
     "description": "reading board 7's slip, the model gives EW pair 7, a number the four-table session "
                    "does not have; the movement check rejects it"},
    {"id": "bridge_award_by_pairs", "input": 4, "switch": "award_by_pairs", "fault_kind": "wrong_tool_args",
     "root": ("plan_award", 1, "llm"), "failure": ("submit_to_national_body", 1),
     "description": "the award planner calls the masterpoint calculator with the 10 pairs as the table count "
                    "instead of 5 tables, and the national body refuses the award schedule"},
    {"id": "bridge_default_movement", "input": 2, "switch": "default_movement", "fault_kind": "swallowed_error",
     "root": ("load_movement", 1, "other"), "failure": ("check_movement", 1),
     "description": "the movement service times out and the loader quietly answers a generic 24-board "
                    "movement instead of reading the club's file, so board 26 is out of range later"},
    {"id": "bridge_history_kept", "input": 3, "switch": "keep_history", "fault_kind": "context_pollution",
     "root": ("update_conversation", 2, "state"), "failure": ("matchpoint_boards", 1),
     "description": "the extractor's conversation keeps the earlier slips instead of holding only the current "
                    "one, the model reads the first slip again and board 1 is scored twice"},
]

AWARD_TOOLS = [fn_tool("compute_masterpoints", "Masterpoint award schedule for a club session.",
                       {"tables": "integer", "rating": "string"})]


def brain(request):
    system = system_of(request)
    msgs = request.body.get("messages") or []
    if "traveller slips" in system:
        users = [m["content"] for m in msgs if m.get("role") == "user"]
        text = users[0]  # the model anchors on the first slip it is shown
        m = re.match(r"Slip: Bd (\d+) \| NS (\d+) v EW (\d+) \| (\S+) by ([NSEW]) \| (\d+) tricks \| NS ([+-]\d+)", text)
        board, ns, ew = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if SWITCH == "invent_pair" and board == 7:
            ew = 7
        return json.dumps({"board": board, "ns_pair": ns, "ew_pair": ew, "contract": m.group(4),
                           "declarer": m.group(5), "tricks": int(m.group(6)), "ns_score_written": int(m.group(7))})
    if "masterpoint" in system:
        done = tool_results(request)
        if done:
            sched = json.loads(done[-1])
            return f"Schedule ready: {sched['tables']} tables, top award {sched['overall'][0]}."
        req = json.loads(msgs[-1]["content"])
        tables = req["pairs"] if SWITCH == "award_by_pairs" else req["tables"]
        from trajdebug.testing import Reply, tool_call
        return Reply(tool_calls=(tool_call("compute_masterpoints", {"tables": tables, "rating": "club"}),))
    if "recap" in system:
        req = json.loads(msgs[-1]["content"])
        top = req["ranking"][0]
        return f"{req['club']} {req['date']}: {len(req['ranking'])} pairs; top {top['pair']} with {top['pct']}%."
    return "Noted."


@trajdebug.step(kind="input")
def receive_session(request: dict) -> dict:
    return {k: request[k] for k in ("club", "date", "section", "tables", "slips")}


@trajdebug.step(kind="retrieval")
def fetch_movement(club: str, section: str, tables: int) -> dict:
    if club == "Harrogate BC":
        raise TimeoutError("movement service did not answer within 5 s")
    rounds, per = MOVEMENTS[club]
    return {"type": "Mitchell", "tables": tables, "rounds": rounds, "boards_per_round": per, "boards": rounds * per}


@trajdebug.step(kind="tool")
def read_movement_file(club: str, section: str) -> dict:
    rounds, per = MOVEMENTS[club]
    return {"type": "Mitchell", "tables": 3, "rounds": rounds, "boards_per_round": per, "boards": rounds * per,
            "source": f"{club} scoring PC, section {section}"}


@trajdebug.step(kind="other")
def load_movement(club: str, section: str, tables: int) -> dict:
    try:
        return fetch_movement(club, section, tables)
    except TimeoutError:
        if SWITCH == "default_movement":
            return {"type": "Mitchell", "tables": tables, "rounds": 8, "boards_per_round": 3, "boards": 24}
        return read_movement_file(club, section)


@trajdebug.step(kind="state")
def update_conversation(slip: str) -> list:
    state = trajdebug.current_run().state
    turn = {"role": "user", "content": f"Slip: {slip}"}
    if SWITCH == "keep_history" and state.get("conversation"):
        state["conversation"] = state["conversation"] + [turn]
    else:
        state["conversation"] = [{"role": "system", "content": "You read bridge traveller slips into JSON."}, turn]
    return state["conversation"]


@trajdebug.step(kind="parse")
def parse_contract(extracted: dict) -> dict:
    m = re.match(r"(\d)(NT|[CDHS])(X{0,2})$", extracted["contract"])
    doubled = len(m.group(3))
    if SWITCH == "drop_double":
        doubled = 0
    return {"board": extracted["board"], "ns_pair": extracted["ns_pair"], "ew_pair": extracted["ew_pair"],
            "level": int(m.group(1)), "strain": m.group(2), "doubled": doubled,
            "declarer": extracted["declarer"], "tricks": extracted["tricks"],
            "ns_score_written": extracted["ns_score_written"]}


@trajdebug.step(kind="other")
def score_board(deal: dict) -> dict:
    ns = score(deal["board"], deal["level"], deal["strain"], deal["doubled"], deal["declarer"], deal["tricks"])
    return {**deal, "ns_score": ns}


@trajdebug.step(kind="condition")
def check_scores(results: list[dict]) -> str:
    for r in results:
        if r["ns_score"] != r["ns_score_written"]:
            raise ValueError(f"board {r['board']} NS {r['ns_pair']} v EW {r['ew_pair']}: computed NS "
                             f"{r['ns_score']:+d}, slip shows {r['ns_score_written']:+d}")
    return f"{len(results)} scores agree with the slips"


@trajdebug.step(kind="condition")
def check_movement(results: list[dict], movement: dict) -> str:
    for r in results:
        if not 1 <= r["board"] <= movement["boards"]:
            raise ValueError(f"board {r['board']} outside the {movement['boards']}-board movement")
        for side in ("ns_pair", "ew_pair"):
            if not 1 <= r[side] <= movement["tables"]:
                raise ValueError(f"{side[:2].upper()} pair {r[side]} outside the {movement['tables']}-table Mitchell")
    return "movement consistent"


@trajdebug.step(kind="other")
def matchpoint_boards(results: list[dict], tables: int) -> list[dict]:
    seen = set()
    for r in results:
        key = (r["board"], r["ns_pair"])
        if key in seen:
            raise ValueError(f"board {r['board']} has two results for NS pair {r['ns_pair']}")
        seen.add(key)
    pairs: dict[str, float] = {}
    for r in results:
        ns_pct = 50.0 + max(-50.0, min(50.0, r["ns_score"] / 20))
        pairs[f"NS{r['ns_pair']}"] = pairs.get(f"NS{r['ns_pair']}", 0) + ns_pct
        pairs[f"EW{r['ew_pair']}"] = pairs.get(f"EW{r['ew_pair']}", 0) + 100 - ns_pct
    return sorted(({"pair": p, "pct": round(v / len(results) * 2, 2)} for p, v in pairs.items()),
                  key=lambda x: -x["pct"])


@trajdebug.step(kind="tool")
def fetch_pair_names(club: str, section: str, pairs: list[str]) -> dict:
    return {p: f"{ROSTER_FIRST[i % 10]} & {ROSTER_FIRST[(i + 3) % 10]}" for i, p in enumerate(sorted(pairs))}


def compute_masterpoints(tables: int, rating: str) -> dict:
    top = round(0.12 * tables + 0.3, 2)
    return {"tables": tables, "rating": rating, "overall": [top, round(top * 0.7, 2), round(top * 0.5, 2)]}


@trajdebug.step(kind="state")
def record_results(ranking: list[dict], names: dict, schedule: dict) -> int:
    trajdebug.current_run().state["session_results"] = {
        "ranking": [{**r, "names": names.get(r["pair"], "")} for r in ranking], "schedule": schedule}
    return len(ranking)


@trajdebug.step(kind="tool")
def submit_to_national_body(club: str, date: str, tables: int, results: dict) -> dict:
    if results["schedule"]["tables"] != tables:
        raise ValueError(f"session {club} {date} ran {tables} tables; award schedule is for "
                         f"{results['schedule']['tables']} tables")
    return {"accepted": True, "reference": f"{club[:3].upper()}-{date}"}


def record(inp: dict, out: str, client, model: str) -> None:
    with trajdebug.run(NAME, task=inp["task"], path=out) as run:
        session = receive_session(inp)
        movement = load_movement(session["club"], session["section"], session["tables"])
        results = []
        for slip in session["slips"]:
            convo = update_conversation(slip)
            msg = chat_step(client, model, "extract_slip", convo)
            with trajdebug.step("read_slip_json", kind="parse", input=msg) as s:
                s.output = json.loads(msg["content"])
            deal = parse_contract(s.output)
            results.append(score_board(deal))
        check_scores(results)
        check_movement(results, movement)
        ranking = matchpoint_boards(results, session["tables"])
        names = fetch_pair_names(session["club"], session["section"], [r["pair"] for r in ranking])
        messages = [{"role": "system", "content": "You plan the masterpoint award with the calculator tool."},
                    {"role": "user", "content": json.dumps({"club": session["club"], "tables": session["tables"],
                                                            "pairs": 2 * session["tables"]})}]
        schedule = None
        for _ in range(3):
            msg = chat_step(client, model, "plan_award", messages, AWARD_TOOLS)
            if not msg.get("tool_calls"):
                break
            messages.append(msg)
            for call in msg["tool_calls"]:
                args = json.loads(call["function"]["arguments"])
                with trajdebug.step("compute_masterpoints", kind="tool", input=args,
                                    attributes={"tool_call_id": call["id"]}) as t:
                    t.output = schedule = compute_masterpoints(**args)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(schedule)})
        record_results(ranking, names, schedule)
        recap = chat_step(client, model, "write_recap", [
            {"role": "system", "content": "You write the club's session recap."},
            {"role": "user", "content": json.dumps({"club": session["club"], "date": session["date"],
                                                    "ranking": ranking})}])
        with trajdebug.step("read_results", kind="other") as s:
            s.output = run.state["session_results"]
        submit_to_national_body(session["club"], session["date"], session["tables"], s.output)
        with trajdebug.step("post_recap", kind="output", input=recap) as s:
            s.output = recap["content"]
