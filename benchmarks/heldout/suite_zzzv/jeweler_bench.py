"""Jeweler's repair bench: sdk route. A model-driven tool loop (the model picks the next bench tool
and its arguments as JSON), a stone-inspection sub-agent, a flaky supplier catalog retried once,
a bench-notes memory in run.state, then the model drafts the repair ticket, which is parsed and
filed (the filing desk checks the ticket's schema and its figures)."""
from __future__ import annotations

import json

from openai import OpenAI

import trajdebug

NAME = "repair-bench"
ROUTE = "sdk"
DOMAIN = "jeweler's repair bench"
SHAPE = "model-chosen tool loop (6 turns) + stone-inspection sub-agent (per stone) + retried supplier call + memory notes -> draft, parse, file; 19-27 steps"
SWITCHES = {"quote_in_silver": False, "inspector_first_piece": False, "catalog_timeout": False,
            "note_due_as_intake": False, "estimate_as_text": False}

PIECES = {
    "P-301": {"customer": "Aldous", "type": "ring", "metal": "18k gold", "stones": ["sapphire", "diamond", "diamond"]},
    "P-302": {"customer": "Aldous", "type": "brooch", "metal": "silver", "stones": ["garnet", "garnet", "garnet", "pearl", "pearl"]},
    "P-410": {"customer": "Brennan", "type": "pendant", "metal": "platinum", "stones": ["emerald"]},
    "P-522": {"customer": "Castell", "type": "bracelet", "metal": "14k gold", "stones": ["opal", "opal"]},
    "P-623": {"customer": "Dunmore", "type": "ring", "metal": "silver", "stones": ["amethyst"]},
    "P-731": {"customer": "Everly", "type": "earrings", "metal": "18k gold", "stones": ["ruby", "ruby", "diamond", "diamond"]},
}
PARTS = {"ring": ["claw tips", "shank section"], "brooch": ["pin stem", "catch"], "pendant": ["bail"],
         "bracelet": ["clasp", "safety chain"], "earrings": ["butterfly backs", "posts"]}
METAL_PRICE = {"18k gold": 58.0, "14k gold": 41.0, "platinum": 36.0, "silver": 1.1}

INPUTS = [
    {"task": "repair ticket, Aldous ring P-301, loose claws", "piece": "P-301", "complaint": "loose claws", "intake": "2026-11-02", "due": "2026-11-20"},
    {"task": "repair ticket, Brennan pendant P-410, bail worn", "piece": "P-410", "complaint": "bail worn through", "intake": "2026-11-03", "due": "2026-11-17"},
    {"task": "repair ticket, Castell bracelet P-522, clasp", "piece": "P-522", "complaint": "clasp will not close", "intake": "2026-11-04", "due": "2026-11-25"},
    {"task": "repair ticket, Dunmore ring P-623, shank crack", "piece": "P-623", "complaint": "shank cracked", "intake": "2026-11-05", "due": "2026-11-19"},
    {"task": "repair ticket, Everly earrings P-731, posts bent", "piece": "P-731", "complaint": "posts bent", "intake": "2026-11-06", "due": "2026-11-30"},
]
CASES = [
    {"id": "zv06", "input": 0, "switch": "quote_in_silver", "kind": "wrong_tool_args",
     "root": ("bench_assistant", 3, "llm"), "failure": ("file_repair_ticket", 1),
     "description": "The model asked the supplier for parts in silver for an 18k gold ring, so the parts were priced at silver rates."},
    {"id": "zv07", "input": 0, "switch": "inspector_first_piece", "kind": "subagent_wrong_entity",
     "root": ("stone_inspector", 1, "agent"), "failure": ("file_repair_ticket", 1),
     "description": "The stone inspector took the customer's latest piece on file (the brooch P-302) instead of the ring on the ticket, so it reported five stones for a three-stone ring."},
    {"id": "zv08", "input": 2, "switch": "catalog_timeout", "kind": "swallowed_error",
     "root": ("price_parts", 1, "tool"), "failure": ("file_repair_ticket", 1),
     "description": "The supplier catalog timed out and the parts pricing went on with an empty parts list at no cost, so the clasp job was ticketed without parts."},
    {"id": "zv09", "input": 3, "switch": "note_due_as_intake", "kind": "bad_memory_write",
     "root": ("bench_notes", 1, "state"), "failure": ("file_repair_ticket", 1),
     "description": "The bench notes stored the promised due date in the intake field, so the drafted ticket says the ring came in on the day it is due."},
    {"id": "zv10", "input": 4, "switch": "estimate_as_text", "kind": "format_drift",
     "root": ("bench_assistant", 6, "llm"), "failure": ("file_repair_ticket", 1),
     "description": "The model drafted the ticket with the estimate as a formatted text with a currency sign and a decimal comma instead of a number."},
]

SERVER = None
_client = None
_calls = {"catalog": 0}


def _chat(messages):
    global _client
    if _client is None or str(_client.base_url).rstrip("/") != SERVER.base_url:
        _client = OpenAI(base_url=SERVER.base_url, api_key="not-needed", max_retries=0)
    return _client.chat.completions.create(model="fake-model", messages=messages).choices[0].message.content


def policy(request):
    msgs = request.body["messages"]
    sys_text = msgs[0]["content"]
    ask = json.loads(msgs[-1]["content"])
    if sys_text.startswith("Grade"):
        stone = ask["stone"]
        return json.dumps({"stone": stone, "seat": "loose" if ask["wobble_mm"] > 0.2 else "firm"})
    notes = ask["notes"]
    ticket = ask["ticket"]
    if "piece" not in notes:
        return json.dumps({"tool": "lookup_piece", "args": {"piece_id": ticket["piece"]}})
    if "stones" not in notes:
        return json.dumps({"tool": "stone_inspector", "args": {"customer": notes["piece"]["customer"], "piece_id": ticket["piece"]}})
    if "parts" not in notes:
        metal = notes["piece"]["metal"]
        if SWITCHES["quote_in_silver"]:
            metal = "silver"
        return json.dumps({"tool": "price_parts", "args": {"piece_type": notes["piece"]["type"], "metal": metal}})
    if "labour" not in notes:
        loose = sum(1 for s in notes["stones"]["grades"] if s["seat"] == "loose")
        return json.dumps({"tool": "bench_time", "args": {"piece_type": notes["piece"]["type"], "reset_stones": loose}})
    if "memo" not in notes:
        return json.dumps({"tool": "bench_notes", "args": {"complaint": ticket["complaint"]}})
    memo = notes["memo"]
    total = round(notes["parts"]["cost"] + notes["labour"]["cost"], 2)
    estimate = total
    if SWITCHES["estimate_as_text"]:
        estimate = "€" + f"{total:.2f}".replace(".", ",")
    return json.dumps({"tool": "draft_ticket", "args": {
        "piece_id": notes["piece"]["piece_id"], "metal": notes["parts"]["metal"], "stones": notes["stones"]["count"],
        "parts": notes["parts"]["items"], "estimate": estimate, "intake": memo["intake"], "due": memo["due"],
        "work": memo["complaint"]}})


@trajdebug.step(kind="input")
def take_ticket(piece: str, complaint: str, intake: str, due: str) -> dict:
    return {"piece": piece, "complaint": complaint, "intake": intake, "due": due}


@trajdebug.step(kind="llm")
def bench_assistant(messages: list) -> dict:
    return json.loads(_chat(messages))


@trajdebug.step(kind="tool")
def lookup_piece(piece_id: str) -> dict:
    return {"piece_id": piece_id, **PIECES[piece_id]}


@trajdebug.step(kind="tool")
def loupe_stone(piece_id: str, position: int) -> dict:
    stone = PIECES[piece_id]["stones"][position]
    wobble = 0.3 if (position + len(piece_id)) % 2 == 0 else 0.1
    return {"stone": stone, "position": position, "wobble_mm": wobble}


@trajdebug.step(kind="llm")
def grade_stone(messages: list) -> dict:
    return json.loads(_chat(messages))


@trajdebug.step(kind="agent")
def stone_inspector(customer: str, piece_id: str) -> dict:
    if SWITCHES["inspector_first_piece"]:
        piece_id = [pid for pid, p in PIECES.items() if p["customer"] == customer][-1]
    grades = []
    for pos in range(len(PIECES[piece_id]["stones"])):
        seen = loupe_stone(piece_id, pos)
        grades.append(grade_stone([{"role": "system", "content": "Grade the stone's seat: firm or loose. JSON."},
                                   {"role": "user", "content": json.dumps(seen)}]))
    return {"piece_id": piece_id, "count": len(grades), "grades": grades}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def supplier_catalog(piece_type: str, metal: str) -> dict:
    _calls["catalog"] += 1
    if SWITCHES["catalog_timeout"]:
        raise TimeoutError("supplier catalog did not answer in 10 s")
    if _calls["catalog"] % 2 == 1:
        raise ConnectionError("supplier catalog connection reset")
    return {"items": [{"part": p, "grams": 0.8 + 0.3 * i} for i, p in enumerate(PARTS[piece_type])], "metal": metal}


@trajdebug.step(kind="tool")
def price_parts(piece_type: str, metal: str) -> dict:
    _calls["catalog"] = 0
    try:
        found = supplier_catalog(piece_type, metal)
    except TimeoutError:
        found = {"items": [], "metal": metal}
    cost = round(sum(i["grams"] * METAL_PRICE[metal] for i in found["items"]) + 12.0 * len(found["items"]), 2)
    return {"items": [i["part"] for i in found["items"]], "metal": metal, "cost": cost}


@trajdebug.step(kind="tool")
def bench_time(piece_type: str, reset_stones: int) -> dict:
    hours = 1.0 + 0.5 * reset_stones
    return {"hours": hours, "cost": round(hours * 65.0, 2)}


@trajdebug.step(kind="state")
def bench_notes(complaint: str) -> dict:
    run = trajdebug.current_run()
    ticket = run.state["ticket"]
    intake = ticket["due"] if SWITCHES["note_due_as_intake"] else ticket["intake"]
    memo = {"complaint": complaint, "intake": intake, "due": ticket["due"]}
    run.state["memo"] = memo
    return memo


@trajdebug.step(kind="state")
def open_ticket(ticket: dict) -> None:
    trajdebug.current_run().state["ticket"] = dict(ticket)


@trajdebug.step(kind="parse")
def parse_ticket(draft: dict) -> dict:
    return {k: draft[k] for k in ("piece_id", "metal", "stones", "parts", "estimate", "intake", "due", "work")}


@trajdebug.step(kind="tool")
def file_repair_ticket(ticket: dict) -> str:
    piece = PIECES[ticket["piece_id"]]
    if not isinstance(ticket["estimate"], (int, float)):
        raise TypeError(f"estimate must be a number, got {ticket['estimate']!r}")
    if ticket["metal"] != piece["metal"]:
        raise ValueError(f"parts quoted in {ticket['metal']} for a {piece['metal']} {piece['type']}")
    if ticket["stones"] != len(piece["stones"]):
        raise ValueError(f"ticket lists {ticket['stones']} stones, the {piece['type']} {ticket['piece_id']} has {len(piece['stones'])}")
    if not ticket["parts"]:
        raise ValueError(f"ticket for '{ticket['work']}' on {ticket['piece_id']} lists no parts")
    if ticket["due"] <= ticket["intake"]:
        raise ValueError(f"due {ticket['due']} is not after intake {ticket['intake']}")
    return f"filed {ticket['piece_id']} estimate {ticket['estimate']:.2f}"


def record(inp, path, server):
    global SERVER
    SERVER = server
    with trajdebug.run(NAME, task=inp["task"], path=path):
        ticket = take_ticket(inp["piece"], inp["complaint"], inp["intake"], inp["due"])
        open_ticket(ticket)
        notes: dict = {}
        keys = {"lookup_piece": "piece", "stone_inspector": "stones", "price_parts": "parts",
                "bench_time": "labour", "bench_notes": "memo"}
        tools = {"lookup_piece": lookup_piece, "stone_inspector": stone_inspector, "price_parts": price_parts,
                 "bench_time": bench_time, "bench_notes": bench_notes}
        for _turn in range(6):
            action = bench_assistant([
                {"role": "system", "content": "You run the repair bench. Pick the next tool as JSON {tool, args}."},
                {"role": "user", "content": json.dumps({"ticket": ticket, "notes": notes})}])
            if action["tool"] == "draft_ticket":
                break
            notes[keys[action["tool"]]] = tools[action["tool"]](**action["args"])
        draft = parse_ticket(action["args"])
        file_repair_ticket(draft)
