"""Bell foundry orders: the recording SDK, a planner model, then one casting sub-agent per bell (a loop), memory tools."""

from __future__ import annotations

import json

from openai import OpenAI

import trajdebug

NAME = "whitechapel-bell-orders"
ROUTE = "sdk"
DOMAIN = "bell foundry orders"
SHAPE = "planner + loop of casting sub-agents (kind agent, 4 steps each) over 4-8 bells, memory read/write tools, model-written inscription, crane booking; 20-51 steps"
ON: set[str] = set()

NOTES = {
    "St Mary Aldbury": ["Tower captain prefers a light treble.", "Inscription approved: 'St Mary Aldbury, rung in hope, 2027'."],
    "Holy Trinity Ewell": ["Frame is oak, check bolt spacing.", "Inscription approved: 'Holy Trinity Ewell, laus deo'."],
    "St Peter Burford": ["Inscription approved: 'St Peter Burford, ring out the old'."],
    "All Saints Orford": ["Access via the north door only.", "Inscription approved: 'All Saints Orford, 1877-2027'."],
    "St John Hexham": ["Inscription approved: 'St John Hexham, in memoriam'."],
}
INPUTS = [
    {"order": "WB-3101", "parish": "St Mary Aldbury", "peal": ["F#4", "E4", "D4", "C#4", "B3", "A3"], "crane_kg": 4000},
    {"order": "WB-3102", "parish": "Holy Trinity Ewell", "peal": ["C5", "B4", "A4", "G4"], "crane_kg": 2000},
    {"order": "WB-3103", "parish": "St Peter Burford", "peal": ["D5", "C5", "B4", "A4", "G4", "F#4", "E4", "D4"], "crane_kg": 5000},
    {"order": "WB-3104", "parish": "All Saints Orford", "peal": ["G4", "F4", "E4", "D4", "C4"], "crane_kg": 4000},
    {"order": "WB-3105", "parish": "St John Hexham", "peal": ["E4", "D4", "C4", "B3", "A3", "G3"], "crane_kg": 6000},
]
# Weight grows as pitch falls: a simple table by note.
SPECS = {
    "D5": 180, "C5": 210, "B4": 240, "A4": 270, "G4": 310, "F#4": 340, "F4": 360, "E4": 390, "D4": 450,
    "C#4": 480, "C4": 520, "B3": 600, "A3": 690, "G3": 800,
}
CASES = [
    {"id": "bell-01", "input": 0, "switch": "a", "kind": "plan_error", "root": ("plan_order", 1, "llm"), "failure": ("close_order", 1),
     "description": "The planning model lays out five bells for a ring of six, leaving out the tenor, and the order is only found incomplete when it is closed."},
    {"id": "bell-02", "input": 3, "switch": "b", "kind": "wrong_retrieval", "root": ("spec_lookup", 3, "retrieval"), "failure": ("tuning_check", 3),
     "description": "The pattern search for the third bell (E4) returns the pattern of the neighbouring F4 bell, so the cast bell sounds a semitone high at tuning."},
    {"id": "bell-03", "input": 2, "switch": "c", "kind": "truncated_result", "root": ("list_furnace_slots", 1, "tool"), "failure": ("reserve_furnace", 7),
     "description": "The furnace schedule comes back with only its first page of six slots, so the seventh bell of an eight-bell ring finds no slot."},
    {"id": "bell-04", "input": 1, "switch": "d", "kind": "context_pollution", "root": ("recall_notes", 1, "tool"), "failure": ("approve_inscription", 1),
     "description": "The notes recalled for Holy Trinity Ewell also carry the last parish's approved inscription, and the model writes that parish's words on this order's bells."},
    {"id": "bell-05", "input": 4, "switch": "e", "kind": "subagent_wrong_entity", "root": ("cast_bell", 2, "agent"), "failure": ("book_crane", 1),
     "description": "The casting sub-agent for the second bell files its casting under the previous order's number, so the crane booking finds a casting that is not on this order."},
]

_client: OpenAI | None = None
_memory: dict[str, list[str]] = {}
_last = {"order": "WB-3100", "parish": "St Mary Aldbury"}


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    data = json.loads(msgs[-1]["content"])
    if system.startswith("Plan"):
        bells = [{"note": n, "position": i + 1} for i, n in enumerate(data["peal"])]
        if "a" in ON:
            bells = bells[:-1]
        return json.dumps({"bells": bells, "metal": "bell bronze 78/22"})
    approved = [n for n in data["notes"] if n.startswith("Inscription approved:")]
    text = approved[-1].split(": ", 1)[1].strip("'.")
    return json.dumps({"inscription": text, "bells": data["count"]})


def _chat(system: str, payload: dict) -> str:
    reply = _client.chat.completions.create(model="fake-model", messages=[
        {"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}])
    return reply.choices[0].message.content


@trajdebug.step(kind="input")
def receive_order(order: dict) -> dict:
    return dict(order)


@trajdebug.step(kind="tool")
def recall_notes(parish: str) -> list[str]:
    notes = list(NOTES[parish]) + _memory.get(parish, [])
    if "d" in ON:
        notes = notes + [n for n in NOTES[_last["parish"]] if n.startswith("Inscription")]
    return notes


@trajdebug.step(kind="llm")
def plan_order(order: dict) -> str:
    return _chat("Plan the castings for this ring of bells.", {"parish": order["parish"], "peal": order["peal"]})


@trajdebug.step(kind="parse")
def read_plan(text: str) -> list[dict]:
    return json.loads(text)["bells"]


@trajdebug.step(kind="tool")
def list_furnace_slots(week: str) -> list[dict]:
    slots = [{"slot": f"{week}-F{i + 1}", "furnace": 1 + i % 2} for i in range(9)]
    if "c" in ON:
        slots = slots[:6]
    return slots


@trajdebug.step(kind="retrieval")
def spec_lookup(note: str, position: int) -> dict:
    found = note
    if "b" in ON and position == 3:
        found = {"E4": "F4"}.get(note, note)
    return {"pattern": f"P-{found}", "note": found, "weight_kg": SPECS[found]}


@trajdebug.step(kind="other")
def alloy_mix(spec: dict) -> dict:
    w = spec["weight_kg"] * 1.08
    return {"copper_kg": round(w * 0.78, 1), "tin_kg": round(w * 0.22, 1)}


@trajdebug.step(kind="tool")
def reserve_furnace(slots: list[dict], taken: list[str], note: str) -> dict:
    free = [s for s in slots if s["slot"] not in taken]
    if not free:
        raise RuntimeError(f"no furnace slot left this week for the {note} bell ({len(taken)} booked)")
    taken.append(free[0]["slot"])
    return free[0]


@trajdebug.step(kind="tool")
def tuning_check(note: str, casting: dict) -> dict:
    if casting["note"] != note:
        raise ValueError(f"tuning: bell cast from {casting['pattern']} strikes {casting['note']}, ordered {note}")
    return {"note": note, "cents": 0}


@trajdebug.step(kind="agent")
def cast_bell(order_no: str, bell: dict, slots: list[dict], taken: list[str]) -> dict:
    ref = order_no
    if "e" in ON and bell["position"] == 2:
        ref = _last["order"]
    spec = spec_lookup(bell["note"], bell["position"])
    mix = alloy_mix(spec)
    slot = reserve_furnace(slots, taken, bell["note"])
    tuning_check(bell["note"], spec)
    return {"order": ref, "note": bell["note"], "weight_kg": spec["weight_kg"], "slot": slot["slot"], **mix}


@trajdebug.step(kind="llm")
def write_inscription(notes: list[str], count: int) -> str:
    return _chat("Write the inscription for the bells from the notes.", {"notes": notes, "count": count})


@trajdebug.step(kind="tool")
def approve_inscription(parish: str, text: str) -> dict:
    inscription = json.loads(text)["inscription"]
    if not inscription.startswith(parish):
        raise ValueError(f"parish {parish!r} did not approve the inscription {inscription!r}")
    return {"approved": inscription}


@trajdebug.step(kind="tool")
def save_memory(parish: str, note: str) -> int:
    _memory.setdefault(parish, []).append(note)
    return len(_memory[parish])


@trajdebug.step(kind="other")
def total_weight(castings: list[dict]) -> float:
    return round(sum(c["weight_kg"] for c in castings), 1)


@trajdebug.step(kind="tool")
def book_crane(order_no: str, castings: list[dict], crane_kg: int) -> dict:
    foreign = [c for c in castings if c["order"] != order_no]
    if foreign:
        raise LookupError(f"crane booking: casting {foreign[0]['note']} is filed under {foreign[0]['order']}, not {order_no}")
    heaviest = max(c["weight_kg"] for c in castings)
    if heaviest > crane_kg:
        raise ValueError(f"crane limit {crane_kg} kg below {heaviest} kg")
    return {"crane": "C-2", "lifts": len(castings)}


@trajdebug.step(kind="output")
def close_order(order: dict, castings: list[dict], weight: float, crane: dict) -> dict:
    cast = [c["note"] for c in castings]
    assert cast == order["peal"], f"ring for {order['parish']} incomplete: ordered {order['peal']}, cast {cast}"
    return {"order": order["order"], "bells": len(cast), "weight_kg": weight, "crane": crane["crane"]}


def record(inp: dict, path, ctx) -> None:
    global _client
    _client = OpenAI(base_url=ctx.server.base_url, api_key="not-needed", max_retries=0)
    _memory.clear()
    try:
        with trajdebug.run(NAME, task=f"{inp['order']} {inp['parish']}", path=str(path)):
            order = receive_order(inp)
            notes = recall_notes(order["parish"])
            bells = read_plan(plan_order(order))
            slots = list_furnace_slots("2027-W03")
            taken: list[str] = []
            castings = [cast_bell(order["order"], b, slots, taken) for b in bells]
            text = write_inscription(notes, len(castings))
            approve_inscription(order["parish"], text)
            save_memory(order["parish"], f"Cast {len(castings)} bells, order {order['order']}.")
            weight = total_weight(castings)
            crane = book_crane(order["order"], castings, order["crane_kg"])
            close_order(order, castings, weight, crane)
    except Exception:
        pass
