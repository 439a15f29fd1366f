"""Chess open: pairs the next round of a Swiss tournament (standings, withdrawals, pairing engine, colour
balance, pairing card) as a LangGraph StateGraph (route: langgraph)."""

from __future__ import annotations

import json
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from _common import system_of, tool_results
from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

NAME = "chess-swiss-pairer"
ROUTE = "langgraph"
SWITCH = None

NAMES = ["Okafor", "Lindqvist", "Haddad", "Petrescu", "Nakamura", "Oyelaran", "Brandt", "Castillo", "Moreau",
         "Sato", "Ferreira", "Kowalczyk", "Ahmadi", "Duarte"]


def _field(tid: str, n: int, rnd: int) -> list[dict]:
    seed = sum(map(ord, tid))
    players = []
    for i in range(n):
        pid = f"P{i + 1:02d}"
        players.append({"id": pid, "name": NAMES[(i + seed) % len(NAMES)], "rating": 2350 - 37 * i - seed % 13,
                        "score": 0.0, "colours": "", "opponents": []})
    # earlier rounds: fold pairing by rank, alternating colours
    for r in range(1, rnd):
        ranked = sorted(players, key=lambda p: (-p["score"], -p["rating"]))
        free = list(ranked)
        while free:
            a = free.pop(0)
            b = next(x for x in free if x["id"] not in a["opponents"])
            free.remove(b)
            a["opponents"].append(b["id"]), b["opponents"].append(a["id"])
            if (r + len(free)) % 2:
                a["colours"] += "W"; b["colours"] += "B"
            else:
                a["colours"] += "B"; b["colours"] += "W"
            if (sum(map(ord, a["id"] + b["id"])) + r) % 3 == 0:
                a["score"] += 0.5; b["score"] += 0.5
            elif a["rating"] >= b["rating"]:
                a["score"] += 1
            else:
                b["score"] += 1
    return players


INPUTS = [
    {"task": "pair round 4, Hastings Weekend Open", "tournament": "Hastings Weekend Open", "round": 4, "players": 12,
     "withdrawals": []},
    {"task": "pair round 3, Gibraltar Rapid Masters", "tournament": "Gibraltar Rapid Masters", "round": 3,
     "players": 10, "withdrawals": []},
    {"task": "pair round 5, Cappelle Spring Open", "tournament": "Cappelle Spring Open", "round": 5, "players": 12,
     "withdrawals": ["P07"]},
    {"task": "pair round 4, Reykjavik Chess Festival", "tournament": "Reykjavik Chess Festival", "round": 4,
     "players": 14, "withdrawals": []},
    {"task": "pair round 3, Biel Accentus Open", "tournament": "Biel Accentus Open", "round": 3, "players": 10,
     "withdrawals": []},
]
FIELDS = {i["tournament"]: _field(i["tournament"], i["players"], i["round"]) for i in INPUTS}

CASES = [
    {"id": "swiss_first_page", "input": 3, "switch": "first_page", "fault_kind": "truncated_result",
     "root": ("get_standings", 1, "tool"), "failure": ("check_pairings", 1),
     "description": "the standings service answers only its first page of 10 players out of 14, the model "
                    "pairs those ten and the pairing check counts 10 of 14 registered players"},
    {"id": "swiss_skip_balance", "input": 0, "switch": "skip_balance", "fault_kind": "wrong_routing",
     "root": ("choose_colour_path", 1, "other"), "failure": ("check_pairings", 1),
     "description": "the colour router sends the draft straight to the pairing card although players are due "
                    "a colour swap, and the check finds a third Black in a row"},
    {"id": "swiss_card_keys", "input": 1, "switch": "card_keys", "fault_kind": "format_drift",
     "root": ("card_model", 1, "llm"), "failure": ("check_pairings", 1),
     "description": "the model writes the pairing card with home/away keys instead of white/black; the JSON "
                    "parses and the pairing check finds no white player on board 1"},
    {"id": "swiss_engine_round_one", "input": 4, "switch": "engine_round_one", "fault_kind": "tool_ignores_argument",
     "root": ("pair_round", 1, "tool"), "failure": ("check_pairings", 1),
     "description": "the pairing engine ignores the round and the players' history it is given and pairs by "
                    "rating alone, so two players meet again and the check stops on the rematch"},
    {"id": "swiss_withdrawal_snapshot", "input": 2, "switch": "withdrawal_snapshot", "fault_kind": "stale_data",
     "root": ("withdrawal_search", 1, "retrieval"), "failure": ("notify_players", 1),
     "description": "the withdrawal search serves last night's index, which lacks the 08:10 withdrawal of "
                    "P07, so P07 is paired and the arbiter system refuses the notice"},
]


def _clash(hist: dict, white: str, black: str) -> int:
    """Players who would get the same colour a third time in a row."""
    return int(hist.get(white, "").endswith("WW")) + int(hist.get(black, "").endswith("BB"))


def _swap_helps(hist: dict, b: dict) -> bool:
    return b["black"] != "BYE" and _clash(hist, b["black"], b["white"]) < _clash(hist, b["white"], b["black"])


def _match(free: list[dict], respect_history: bool) -> list[tuple[dict, dict]] | None:
    if len(free) < 2:
        return []
    a, rest = free[0], free[1:]
    for b in rest:
        if respect_history and b["id"] in a["opponents"]:
            continue
        tail = _match([x for x in rest if x is not b], respect_history)
        if tail is not None:
            return [(a, b)] + tail
    return None


def _fold(players: list[dict], respect_history: bool) -> list[dict]:
    ranked = sorted(players, key=lambda p: (-p["score"], -p["rating"]))
    bye = ranked.pop() if len(ranked) % 2 else None
    pairs = _match(ranked, respect_history) or _match(ranked, False)
    boards = [{"board": i + 1, "white": a["id"], "black": b["id"]} for i, (a, b) in enumerate(pairs)]
    if bye:
        boards.append({"board": len(boards) + 1, "white": bye["id"], "black": "BYE"})
    return boards


@tool
def get_standings(tournament: str, round: int) -> str:
    """Standings after the previous round: id, name, rating, score, colour history, opponents."""
    rows = FIELDS[tournament]
    if SWITCH == "first_page":
        rows = rows[:10]
    return json.dumps({"tournament": tournament, "after_round": round - 1, "players": rows})


@tool
def pair_round(tournament: str, round: int, player_ids: list[str]) -> str:
    """Dutch-system pairing engine: pairs the given players for the round, avoiding rematches."""
    players = [p for p in FIELDS[tournament] if p["id"] in player_ids]
    history = SWITCH != "engine_round_one"
    return json.dumps({"round": round, "boards": _fold(players, respect_history=history)})


@tool
def notify_players(tournament: str, round: int, boards: list[dict]) -> str:
    """Send the pairing card to the arbiter system and the players."""
    gone = next(i for i in INPUTS if i["tournament"] == tournament)["withdrawals"]
    for b in boards:
        for pid in (b["white"], b["black"]):
            if pid in gone:
                raise RuntimeError(f"arbiter system: {pid} withdrew from {tournament} before round {round}; "
                                   f"pairing card refused")
    return json.dumps({"sent": len(boards), "round": round})


class WithdrawalSearch(BaseRetriever):
    """Searches the tournament office's notices for withdrawals."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        inp = next(i for i in INPUTS if i["tournament"] in query)
        docs = [Document(page_content=f"{inp['tournament']}: registration confirmed for {inp['players']} players.",
                         metadata={"posted": "2025-04-11 19:30", "kind": "registration"})]
        if SWITCH == "withdrawal_snapshot":
            return docs
        for pid in inp["withdrawals"]:
            docs.append(Document(page_content=f"{inp['tournament']}: {pid} withdraws before round {inp['round']} "
                                              f"(illness).", metadata={"posted": "2025-04-12 08:10",
                                                                       "kind": "withdrawal", "player": pid}))
        return docs


def brain(request):
    system = system_of(request)
    msgs = request.body.get("messages") or []
    if "pairing officer" in system:
        done = tool_results(request)
        if done:
            return "Draft pairing received."
        ctx = json.loads(msgs[-1]["content"])
        ids = [p["id"] for p in ctx["standings"]["players"] if p["id"] not in ctx["withdrawn"]]
        return Reply(tool_calls=(tool_call("pair_round", {"tournament": ctx["tournament"], "round": ctx["round"],
                                                          "player_ids": ids}),))
    if "pairing card" in system:
        ctx = json.loads(msgs[-1]["content"])
        names = ctx["names"]
        if SWITCH == "card_keys":
            rows = [{"board": b["board"], "home": b["white"], "away": b["black"],
                     "line": f"{names.get(b['white'], b['white'])} - {names.get(b['black'], 'bye')}"}
                    for b in ctx["boards"]]
        else:
            rows = [{"board": b["board"], "white": b["white"], "black": b["black"],
                     "line": f"{names.get(b['white'], b['white'])} - {names.get(b['black'], 'bye')}"}
                    for b in ctx["boards"]]
        return json.dumps({"round": ctx["round"], "boards": rows})
    return "Noted."


class S(TypedDict, total=False):
    tournament: str
    round: int
    registered: int
    standings: dict
    withdrawn: list
    draft: list
    boards: list
    card: dict
    sent: dict


def build(llm):
    pair_llm = llm.bind_tools([pair_round]).with_config(run_name="pairing_model")
    card_llm = llm.with_config(run_name="card_model")
    parser = JsonOutputParser().with_config(run_name="parse_card")
    search = WithdrawalSearch().with_config(run_name="withdrawal_search")

    def intake(state: S) -> dict:
        inp = next(i for i in INPUTS if i["tournament"] == state["tournament"])
        return {"registered": inp["players"]}

    def load_standings(state: S) -> dict:
        out = get_standings.invoke({"tournament": state["tournament"], "round": state["round"]})
        return {"standings": json.loads(out)}

    def load_withdrawals(state: S) -> dict:
        docs = search.invoke(f"withdrawals {state['tournament']} round {state['round']}")
        return {"withdrawn": [d.metadata["player"] for d in docs if d.metadata.get("kind") == "withdrawal"]}

    def draft_pairing(state: S) -> dict:
        messages = [SystemMessage("You are the pairing officer. Call the pairing engine for the eligible players."),
                    HumanMessage(json.dumps({"tournament": state["tournament"], "round": state["round"],
                                             "standings": state["standings"], "withdrawn": state["withdrawn"]}))]
        ai: AIMessage = pair_llm.invoke(messages)
        result = None
        for call in ai.tool_calls:
            tm: ToolMessage = pair_round.invoke({**call, "type": "tool_call"})
            result = json.loads(tm.content)
            messages += [ai, tm]
        pair_llm.invoke(messages)
        return {"draft": result["boards"]}

    def choose_colour_path(state: S) -> str:
        hist = {p["id"]: p["colours"] for p in FIELDS[state["tournament"]]}
        due = any(_swap_helps(hist, b) for b in state["draft"])
        if SWITCH == "skip_balance":
            due = False
        return "balance_colours" if due else "write_card"

    def balance_colours(state: S) -> dict:
        hist = {p["id"]: p["colours"] for p in FIELDS[state["tournament"]]}
        boards = []
        for b in state["draft"]:
            if _swap_helps(hist, b):
                b = {**b, "white": b["black"], "black": b["white"]}
            boards.append(b)
        return {"draft": boards}

    def write_card(state: S) -> dict:
        names = {p["id"]: p["name"] for p in FIELDS[state["tournament"]]}
        msg = card_llm.invoke([SystemMessage("Write the round's pairing card as JSON: round, boards."),
                               HumanMessage(json.dumps({"round": state["round"], "boards": state["draft"],
                                                        "names": names}))])
        return {"card": parser.invoke(msg)}

    def check_pairings(state: S) -> dict:
        hist = {p["id"]: p for p in FIELDS[state["tournament"]]}
        boards = state["card"]["boards"]
        seen = []
        for b in boards:
            if "white" not in b or "black" not in b:
                raise ValueError(f"board {b.get('board')}: no white/black player on the card ({sorted(b)})")
            seen += [b["white"], b["black"]]
            if b["black"] in hist[b["white"]]["opponents"]:
                raise ValueError(f"board {b['board']}: {b['white']} and {b['black']} already met")
            if _swap_helps({k: v["colours"] for k, v in hist.items()}, b):
                pid, col = (b["white"], "White") if hist[b["white"]]["colours"].endswith("WW") else (b["black"], "Black")
                raise ValueError(f"board {b['board']}: {pid} would get {col} a third time in a row")
        playing = len([p for p in seen if p != "BYE"])
        expected = state["registered"] - len(state["withdrawn"])
        if playing != expected:
            raise ValueError(f"pairing covers {playing} of {expected} players due to play round {state['round']}")
        return {"boards": boards}

    def send(state: S) -> dict:
        out = notify_players.invoke({"tournament": state["tournament"], "round": state["round"],
                                     "boards": state["boards"]})
        return {"sent": json.loads(out)}

    g = StateGraph(S)
    for name, fn in [("intake", intake), ("load_standings", load_standings), ("load_withdrawals", load_withdrawals),
                     ("draft_pairing", draft_pairing), ("balance_colours", balance_colours),
                     ("write_card", write_card), ("check_pairings", check_pairings), ("send", send)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "load_standings")
    g.add_edge("load_standings", "load_withdrawals")
    g.add_edge("load_withdrawals", "draft_pairing")
    g.add_conditional_edges("draft_pairing", choose_colour_path, ["balance_colours", "write_card"])
    g.add_edge("balance_colours", "write_card")
    g.add_edge("write_card", "check_pairings")
    g.add_edge("check_pairings", "send")
    g.add_edge("send", END)
    return g.compile()


_GRAPH: dict[str, Any] = {}


def record(inp: dict, out: str, client, model: str) -> None:
    base = str(client.base_url)
    if base not in _GRAPH:
        llm = ChatOpenAI(base_url=base, api_key="not-needed", model=model, max_retries=0)
        _GRAPH.clear()
        _GRAPH[base] = build(llm)
    tracer = TrajdebugTracer(path=out, name=NAME, task=inp["task"])
    _GRAPH[base].invoke({"tournament": inp["tournament"], "round": inp["round"]},
                        config={"callbacks": [tracer], "run_name": NAME})
